//! The gateway's upstream transport for whole (not streamed) calls: its own [`Pool`]
//! of HTTP/1.1 connections (TLS by rustls with the webpki roots, as the reqwest client
//! sets it up), driving sessions of the gateway client's own [`Shared`] state — the
//! same engine, keys, limits, budgets and breakers, on the same clock.
//!
//! It is the reqwest client's driver loop on a lighter transport (reqwest parses every
//! request's URL again for its redirect policy, clones its headers and stacks tower
//! services; a gateway request pays for each). The loop holds no policy: the session
//! says what to send and when, and hears what came back. Calls that hedge or lease
//! shared limits, and every call when the environment names a proxy (which reqwest
//! honours and this client does not), stay on the reqwest client
//! ([`Upstream::handles`]).

use std::error::Error;
use std::fmt;
use std::future::{Future, poll_fn};
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use bytes::Bytes;
use futures_util::FutureExt;
use http::{Method, Request, Uri};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper_rustls::HttpsConnectorBuilder;
use hyper_util::client::legacy::connect::HttpConnector;
use steadfast_core::ids::EndpointId;
use steadfast_core::outcome::Transport;
use steadfast_core::time::Timestamp;
use steadfast_http::clock::Epoch;
use steadfast_http::outcome::{ClientErrorFacts, client_transport, find_io_error, is_payload};
use steadfast_http::{CallOptions, Outgoing, RawRequest, Reply, Session, Shared, Step};
use tokio::time::Instant;

use super::deadline::Deadlines;
use super::pool::{Lent, Pool, SendError};
use super::whole::{Unread, read_whole};

/// A call through [`Upstream`] that gave up; its source is the last attempt's error.
pub type UpstreamCallError = steadfast_http::CallError<UpstreamError>;

type S<'c> = Session<'c, UpstreamError>;

/// Why an exchange with an upstream failed below HTTP.
#[derive(Debug)]
#[non_exhaustive]
pub enum UpstreamError {
    /// The endpoint's URL is not one hyper can send to.
    Url(http::uri::InvalidUri),
    /// The endpoint's URL is not an absolute `http` or `https` one.
    NotHttp,
    /// The request could not be sent, or its response head not read.
    Send(SendError),
    /// The response body could not be read.
    Body(hyper::Error),
    /// The attempt's timeout passed.
    Timeout,
}

impl fmt::Display for UpstreamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UpstreamError::Url(e) => write!(f, "invalid endpoint URL: {e}"),
            UpstreamError::NotHttp => f.write_str("the endpoint URL is not an http(s) one"),
            UpstreamError::Send(e) => write!(f, "error sending request: {e}"),
            UpstreamError::Body(e) => write!(f, "error reading the response body: {e}"),
            UpstreamError::Timeout => f.write_str("operation timed out"),
        }
    }
}

impl Error for UpstreamError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            UpstreamError::Url(e) => Some(e),
            UpstreamError::Send(e) => Some(e),
            UpstreamError::Body(e) => Some(e),
            UpstreamError::NotHttp | UpstreamError::Timeout => None,
        }
    }
}

/// The endpoints' connections, and the gateway client's clock.
pub struct Upstream {
    pool: Pool,
    /// The exchanges' deadlines.
    deadlines: Arc<Deadlines>,
    epoch: Epoch,
    /// The environment names a proxy (see [`PROXY_VARIABLES`]).
    proxied: bool,
}

/// How long an idle connection is kept for reuse (as long as reqwest keeps one).
const IDLE_FOR: Duration = Duration::from_secs(90);

/// How often idle connections past [`IDLE_FOR`] are looked for and closed.
const REAP_EVERY: Duration = Duration::from_secs(30);

/// How many idle connections each endpoint keeps: enough for every connection a busy
/// gateway has open to it, few enough to bound the descriptors a burst leaves behind.
const MAX_IDLE: usize = 1024;

/// The variables reqwest reads its system proxy from.
const PROXY_VARIABLES: [&str; 6] = [
    "http_proxy",
    "HTTP_PROXY",
    "https_proxy",
    "HTTPS_PROXY",
    "all_proxy",
    "ALL_PROXY",
];

impl fmt::Debug for Upstream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Upstream")
            .field("pool", &self.pool)
            .finish_non_exhaustive()
    }
}

impl Upstream {
    /// The transport for `client`'s endpoints, connecting within the policy's
    /// connect timeout.
    pub fn new(client: &steadfast_reqwest::Client) -> Result<Upstream, String> {
        let shared = client.shared();
        let mut connector = HttpConnector::new();
        connector.enforce_http(false);
        connector.set_nodelay(true);
        connector.set_connect_timeout(Some(shared.policy().retry.connect_timeout));
        let https = HttpsConnectorBuilder::new()
            .with_provider_and_webpki_roots(rustls::crypto::ring::default_provider())
            .map_err(|e| format!("cannot set up TLS: {e}"))?
            .https_or_http()
            .enable_http1()
            .wrap_connector(connector);
        let urls = (0..shared.endpoint_count()).map(|i| {
            let id = EndpointId(u16::try_from(i).unwrap_or(u16::MAX));
            shared.endpoint_url(id).and_then(|u| Uri::try_from(u).ok())
        });
        let pool = Pool::new(https, urls, IDLE_FOR, MAX_IDLE);
        let proxied = PROXY_VARIABLES
            .iter()
            .any(|v| std::env::var_os(v).is_some_and(|p| !p.is_empty()));
        Ok(Upstream {
            pool,
            deadlines: Arc::new(Deadlines::new()),
            epoch: client.epoch(),
            proxied,
        })
    }

    /// A task for the runtime that closes idle connections kept past their time
    /// (see [`Pool::reaper`]); it ends with this transport.
    pub fn reaper(&self) -> impl Future<Output = ()> + Send + 'static {
        self.pool.reaper(REAP_EVERY)
    }

    /// A task for the runtime: the looks that pass the exchanges' deadlines (see
    /// [`Deadlines`]); it ends once the transport is dropped.
    pub fn deadline_looks(&self) -> impl Future<Output = ()> + Send + 'static {
        Deadlines::run(Arc::downgrade(&self.deadlines))
    }

    /// Whether calls on `shared` can go through this transport: not when they hedge
    /// (two exchanges at once) or lease shared limits (the reqwest client holds the
    /// store), nor when the environment names a proxy.
    pub fn handles(&self, shared: &Shared) -> bool {
        !self.proxied && !shared.policy().hedge.is_on() && !shared.shares_limits()
    }

    fn timestamp(&self, at: Instant) -> Timestamp {
        self.epoch.timestamp(at.into_std())
    }

    /// One whole call of `request` on `shared` (see [`Upstream::handles`]), with its
    /// fallbacks; and the answer's body as the upstream sent it, when the reply is
    /// that body untranslated (in `options.shape`, from the last attempt, not a
    /// fallback's), so that it can be passed on as it came. The session passes such
    /// bodies through ([`Session::passing_through`]): it reads them only for their
    /// `model` and `usage`, and the reply's body is then `null`
    /// ([`Reply::is_passed_through`]).
    pub async fn chat(
        &self,
        shared: &Shared,
        request: &RawRequest,
        options: &CallOptions,
    ) -> Result<(Reply, Option<Bytes>), UpstreamCallError> {
        let start = Instant::now();
        // Boxed: the session is near 1 KB, and the call's future moves before it runs.
        let mut s: Box<S<'_>> = Box::new(Session::with_options(
            shared,
            self.timestamp(start),
            request,
            false,
            options,
        ));
        s.passing_through();
        let span = s.call_span();
        // Pinned where it is made, here and below: a future awaited as a temporary is
        // kept twice in its caller's state.
        let drive = pin!(self.drive(&mut s, options, start));
        span.instrument(drive).await
    }

    /// Runs the session `s` to its end: sends its attempts, sleeps its waits. `at`:
    /// the instant the session was last told of (the clock is read when something
    /// happened, not again for each step that follows at once).
    async fn drive(
        &self,
        s: &mut S<'_>,
        options: &CallOptions,
        mut at: Instant,
    ) -> Result<(Reply, Option<Bytes>), UpstreamCallError> {
        let mut last = None;
        'steps: loop {
            let span;
            // The exchange's future is made in the slot it is polled in, and the step it
            // came from ends here: held across the await, it would be kept in this
            // future's state beside the exchange that holds its request.
            let exchange = pin!(match s.poll(self.timestamp(at)) {
                Step::Send(out) => {
                    span = s.attempt_span();
                    self.exchange(s, out, at)
                }
                Step::Sleep(until) => {
                    let until = Instant::from_std(self.epoch.instant(until));
                    tokio::time::sleep_until(until).await;
                    at = Instant::now();
                    continue 'steps;
                }
                // No store here (see `handles`): the endpoint runs on its fallback.
                Step::Lease(ask) => {
                    s.on_lease(
                        self.timestamp(at),
                        &ask,
                        steadfast_http::LeaseAnswer::Failed,
                    );
                    continue 'steps;
                }
                Step::Done => {
                    let reply = s.take_reply()?;
                    let untranslated = reply.is_passed_through()
                        || reply.degraded.is_none()
                            && reply
                                .served_by
                                .as_ref()
                                .is_some_and(|by| Some(by.provider) == options.shape);
                    return Ok((reply, last.filter(|_| untranslated)));
                }
            });
            (last, at) = span.instrument(exchange).await;
        }
    }

    /// Sends `out` (handed over at `sent`) and reads its answer whole, all within the
    /// attempt's timeout, and reports what came of it; returns the body of a 2xx
    /// answer, and the instant of the report.
    async fn exchange(
        &self,
        s: &mut S<'_>,
        out: Outgoing<'_>,
        sent: Instant,
    ) -> (Option<Bytes>, Instant) {
        let max = s.max_body();
        // One deadline for the whole exchange, set once: the send and every frame race it.
        let timeout = out.attempt.timeout;
        let mut deadline = pin!(self.deadlines.at(sent + timeout, timeout));
        // A block, not an async fn of its own: one more layer would hold `out` twice.
        let fetched = 'fetch: {
            let (resp, lent) = match within(&mut deadline, pin!(self.send(out))).await {
                Ok(Ok(sent)) => sent,
                Ok(Err(e)) => break 'fetch Fetched::Unsent(e),
                Err(_) => break 'fetch Fetched::Unsent(UpstreamError::Timeout),
            };
            let (head, body) = resp.into_parts();
            let status = head.status.as_u16();
            let e = match within(&mut deadline, pin!(read_whole(body, max))).await {
                Ok(Ok(whole)) => {
                    lent.give_back();
                    break 'fetch Fetched::Whole(status, head.headers, whole);
                }
                Ok(Err(Unread::TooLarge)) => break 'fetch Fetched::TooLarge(status, head.headers),
                Ok(Err(Unread::Broken(e))) => UpstreamError::Body(e),
                Err(_) => UpstreamError::Timeout,
            };
            Fetched::Broken(status, head.headers, e)
        };
        let at = Instant::now();
        (self.report(s, at, fetched), at)
    }

    /// Tells the session at `at` what came of its exchange; the body of a 2xx answer.
    fn report(&self, s: &mut S<'_>, at: Instant, fetched: Fetched) -> Option<Bytes> {
        let now = self.epoch.now(at.into_std());
        match fetched {
            Fetched::Unsent(e) if head_too_large(&e) => s.on_head_too_large(now, Some(e)),
            Fetched::Unsent(e) => s.on_transport(now, transport(&e, false), Some(e)),
            Fetched::Whole(status, headers, whole) => {
                s.on_response(now, status, &headers, &whole);
                return is_payload(status).then_some(whole);
            }
            Fetched::TooLarge(status, headers) => s.on_body_too_large(now, status, &headers),
            Fetched::Broken(status, headers, e) => {
                s.on_body_error(now, status, &headers, transport(&e, true), e);
            }
        }
        None
    }

    /// Sends `out` on an endpoint's connection. Not an `async fn`: the pool's future
    /// is awaited in the exchange's, where one more async layer would hold it twice.
    fn send(&self, out: Outgoing<'_>) -> impl Future<Output = Sent<'_>> {
        let mut req = Request::new(Full::new(out.body));
        *req.method_mut() = Method::POST;
        *req.headers_mut() = out.headers;
        let endpoint = usize::from(out.attempt.target.endpoint.0);
        let url = out.url;
        self.pool.send(endpoint, req).map(move |sent| match sent {
            Some(sent) => sent.map_err(UpstreamError::Send),
            None => {
                Err(Uri::try_from(url).map_or_else(UpstreamError::Url, |_| UpstreamError::NotHttp))
            }
        })
    }
}

/// What sending a request came to: its answer and connection, or why not.
type Sent<'p> = Result<(hyper::Response<Incoming>, Lent<'p>), UpstreamError>;

/// What came of one exchange, before the session is told.
enum Fetched {
    /// The request was not sent, or no answer's head came.
    Unsent(UpstreamError),
    /// A whole answer: its status, headers and body.
    Whole(u16, http::HeaderMap, Bytes),
    /// An answer whose body was larger than the session reads.
    TooLarge(u16, http::HeaderMap),
    /// An answer whose body broke off (or did not end in time).
    Broken(u16, http::HeaderMap, UpstreamError),
}

/// `work`'s output, unless `deadline` passes first (`Err`). `work` is taken pinned
/// where it is (`pin!`), not moved into this future.
fn within<'d, D: Future<Output = ()>, F: Future + Unpin + 'd>(
    deadline: &'d mut Pin<&mut D>,
    mut work: F,
) -> impl Future<Output = Result<F::Output, Elapsed>> + 'd {
    poll_fn(move |cx| match Pin::new(&mut work).poll(cx) {
        Poll::Ready(out) => Poll::Ready(Ok(out)),
        Poll::Pending => deadline.as_mut().poll(cx).map(|()| Err(Elapsed)),
    })
}

/// The deadline of an exchange passed.
struct Elapsed;

/// What failed, given whether a status line had arrived when it did.
fn transport(e: &UpstreamError, status_seen: bool) -> Transport {
    let io = find_io_error(e).map(std::io::Error::kind);
    let connect = matches!(e, UpstreamError::Send(SendError::Connect(_)));
    client_transport(ClientErrorFacts {
        connect,
        timeout: matches!(e, UpstreamError::Timeout) || io == Some(std::io::ErrorKind::TimedOut),
        builder: matches!(e, UpstreamError::Url(_) | UpstreamError::NotHttp),
        io,
        status_seen,
    })
}

/// hyper's message for a response head over its limits (`Parse::TooLarge`).
const HEAD_TOO_LARGE: &str = "message head is too large";

/// Whether the response's status line and headers were larger than hyper accepts.
fn head_too_large(e: &UpstreamError) -> bool {
    let mut cur: Option<&(dyn Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if let Some(h) = err.downcast_ref::<hyper::Error>() {
            return h.is_parse() && h.to_string().starts_with(HEAD_TOO_LARGE);
        }
        cur = err.source();
    }
    false
}
