//! A fixed-answer upstream: every request's body is read whole and answered at once
//! with the same OpenAI chat completion, so that the upstream's own cost is as small as
//! an HTTP/1.1 server's can be.
//!
//! `upstream [--addr 127.0.0.1:0] [--threads N]` prints its base URL as the first line
//! of stdout and serves until killed.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::process::ExitCode;

use bytes::Bytes;
use clap::Parser;
use http::header::CONTENT_TYPE;
use http::{HeaderValue, Request, Response};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;

/// The fixed-answer upstream of the gateway benchmark.
#[derive(Debug, Parser)]
struct Args {
    /// Where to listen (127.0.0.1 only; port 0 picks a free one).
    #[arg(long, default_value = "127.0.0.1:0")]
    addr: SocketAddr,
    /// Worker threads (1: a current-thread runtime).
    #[arg(long, default_value_t = 1)]
    threads: usize,
}

/// The one answer: an OpenAI chat completion of `gpt-4o-mini` saying "Hi".
const ANSWER: &str = concat!(
    r#"{"id":"chatcmpl-bench","object":"chat.completion","created":1764547200,"#,
    r#""model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","#,
    r#""content":"Hi","refusal":null},"logprobs":null,"finish_reason":"stop"}],"#,
    r#""usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}"#
);

async fn answer(req: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    // Read the request whole, as any real upstream would before answering.
    let _ = req.into_body().collect().await;
    let mut res = Response::new(Full::new(Bytes::from_static(ANSWER.as_bytes())));
    res.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    Ok(res)
}

fn main() -> ExitCode {
    let args = Args::parse();
    let rt = match steadfast_gateway_bench::runtime(args.threads) {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("upstream: cannot start a runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    rt.block_on(async {
        match steadfast_gateway_bench::server::bind(args.addr).await {
            Ok(listener) => match steadfast_gateway_bench::server::serve(listener, answer).await {},
            Err(e) => {
                eprintln!("upstream: cannot listen on {}: {e}", args.addr);
                ExitCode::FAILURE
            }
        }
    })
}
