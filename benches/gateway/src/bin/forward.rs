//! A plain forwarding proxy, the floor of the gateway benchmark: each request's method,
//! path, headers (less the hop-by-hop ones) and body go to the upstream over a pooled
//! keep-alive client, and its answer streams back as it comes. No parsing, no policy.
//!
//! `forward --upstream http://127.0.0.1:PORT [--addr 127.0.0.1:0] [--threads N]` prints
//! its base URL as the first line of stdout and serves until killed.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;

use bytes::Bytes;
use clap::Parser;
use http::header::{self, HeaderMap};
use http::uri::{PathAndQuery, Scheme};
use http::{Request, Response, StatusCode, Uri};
use http_body_util::{Either, Full};
use hyper::body::Incoming;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

/// The plain forwarder of the gateway benchmark.
#[derive(Debug, Parser)]
struct Args {
    /// The upstream's base URL (`http://127.0.0.1:PORT`).
    #[arg(long)]
    upstream: Uri,
    /// Where to listen (127.0.0.1 only; port 0 picks a free one).
    #[arg(long, default_value = "127.0.0.1:0")]
    addr: SocketAddr,
    /// Worker threads of its (multi-thread) runtime.
    #[arg(long, default_value_t = 1)]
    threads: usize,
}

/// The answer the client gets: the upstream's streamed, or a 502 of ours.
type Answer = Response<Either<Incoming, Full<Bytes>>>;

/// The upstream, and the pool of connections to it.
struct Forwarder {
    client: Client<HttpConnector, Incoming>,
    upstream: Uri,
}

/// Headers that describe one hop, not the message (RFC 9110 §7.6.1).
const HOP_BY_HOP: [header::HeaderName; 6] = [
    header::CONNECTION,
    header::PROXY_AUTHENTICATE,
    header::PROXY_AUTHORIZATION,
    header::TE,
    header::TRAILER,
    header::TRANSFER_ENCODING,
];

fn strip_hop_by_hop(h: &mut HeaderMap) {
    for name in &HOP_BY_HOP {
        h.remove(name);
    }
    h.remove(header::UPGRADE);
    h.remove("keep-alive");
}

impl Forwarder {
    fn new(upstream: Uri) -> Forwarder {
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        let client = Client::builder(TokioExecutor::new()).build(connector);
        Forwarder { client, upstream }
    }

    /// The upstream URI of a request for `path`: the base URL's path, then the request's.
    fn upstream_uri(&self, path: Option<&PathAndQuery>) -> Result<Uri, http::Error> {
        let prefix = self.upstream.path().trim_end_matches('/');
        let rest = path.map_or("/", PathAndQuery::as_str);
        let mut parts = self.upstream.clone().into_parts();
        parts.scheme = Some(Scheme::HTTP);
        parts.path_and_query = Some(format!("{prefix}{rest}").parse()?);
        Ok(Uri::from_parts(parts)?)
    }

    async fn forward(&self, req: Request<Incoming>) -> Answer {
        let (mut head, body) = req.into_parts();
        head.uri = match self.upstream_uri(head.uri.path_and_query()) {
            Ok(uri) => uri,
            Err(e) => return bad_gateway(&e.to_string()),
        };
        strip_hop_by_hop(&mut head.headers);
        // The client sets the upstream's own Host.
        head.headers.remove(header::HOST);
        match self.client.request(Request::from_parts(head, body)).await {
            Ok(answer) => {
                let (mut head, body) = answer.into_parts();
                strip_hop_by_hop(&mut head.headers);
                Response::from_parts(head, Either::Left(body))
            }
            Err(e) => bad_gateway(&e.to_string()),
        }
    }
}

fn bad_gateway(why: &str) -> Answer {
    let mut res = Response::new(Either::Right(Full::new(Bytes::from(why.to_owned()))));
    *res.status_mut() = StatusCode::BAD_GATEWAY;
    res
}

fn main() -> ExitCode {
    let args = Args::parse();
    if args.upstream.scheme() != Some(&Scheme::HTTP) || args.upstream.authority().is_none() {
        eprintln!(
            "forward: --upstream {}: not an http://HOST:PORT URL",
            args.upstream
        );
        return ExitCode::FAILURE;
    }
    let rt = match steadfast_gateway_bench::multi_thread_runtime(args.threads) {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("forward: cannot start a runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let forwarder = Arc::new(Forwarder::new(args.upstream));
    rt.block_on(async {
        let listener = match steadfast_gateway_bench::server::bind(args.addr).await {
            Ok(l) => l,
            Err(e) => {
                eprintln!("forward: cannot listen on {}: {e}", args.addr);
                return ExitCode::FAILURE;
            }
        };
        let handler = move |req| {
            let forwarder = Arc::clone(&forwarder);
            async move { Ok::<_, Infallible>(forwarder.forward(req).await) }
        };
        match steadfast_gateway_bench::server::serve(listener, handler).await {}
    })
}
