//! The gateway's connections to its endpoints: HTTP/1.1 connections (hyper's own
//! `client::conn`, TLS by rustls), kept idle per endpoint once an answer was read
//! whole, and lent out again, most recently used first.
//!
//! The endpoints are known when the gateway starts, so each has its list by index:
//! nothing is hashed or formatted per request (a general pool keys its lists by scheme
//! and authority and builds every request's `Host` header).
//!
//! A connection is lent for one exchange and given back only when its answer was read
//! to its end; one dropped before that (a timeout, a body error) closes with the
//! exchange, as hyper closes a connection whose request was cancelled. A connection the
//! server closed while it was idle is passed over, and a request it turned away before
//! writing a byte goes out on the next connection, so a stale connection never costs a
//! retry. An idle connection older than the pool keeps them is closed when a request
//! or a give-back comes across it, or by [`Pool::reaper`] when none comes: a burst's
//! connections do not stay open after it.

use std::collections::VecDeque;
use std::error::Error;
use std::fmt;
use std::future::{Future, poll_fn};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bytes::Bytes;
use http::header::HOST;
use http::uri::{PathAndQuery, Scheme};
use http::{HeaderValue, Request, Response, Uri};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::client::conn::http1::{self, SendRequest};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use tokio::time::Instant;
use tower_service::Service;

use super::ticks;

type Sender = SendRequest<Full<Bytes>>;

/// Why a request could not be sent, or its answer's head not read.
#[derive(Debug)]
#[non_exhaustive]
pub enum SendError {
    /// No connection to the endpoint could be made (refused, timed out, TLS).
    Connect(Box<dyn Error + Send + Sync>),
    /// The connection failed while the request was sent or its answer's head read.
    Exchange(hyper::Error),
}

impl fmt::Display for SendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SendError::Connect(e) => write!(f, "cannot connect: {e}"),
            SendError::Exchange(e) => write!(f, "{e}"),
        }
    }
}

impl Error for SendError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            SendError::Connect(e) => Some(&**e),
            SendError::Exchange(e) => Some(e),
        }
    }
}

/// Where one endpoint's requests go, and its idle connections.
struct Target {
    /// The endpoint's URL, which the connector dials.
    url: Uri,
    /// Its path and query: what the request line carries.
    path: Uri,
    /// Its `Host` header: the host, and the port when it is not the scheme's own.
    host: HeaderValue,
    /// Idle connections, the most recently given back last.
    idle: Mutex<VecDeque<Idle>>,
}

struct Idle {
    sender: Sender,
    since: Instant,
}

impl Target {
    /// The target for `url`; `None` when it is not an absolute `http`/`https` URL.
    fn new(url: Uri) -> Option<Target> {
        let scheme = url.scheme()?;
        let https = *scheme == Scheme::HTTPS;
        if !https && *scheme != Scheme::HTTP {
            return None;
        }
        let host = steadfast_http::host_header(&url)?;
        let path = url.path_and_query().map_or("/", PathAndQuery::as_str);
        let path = Uri::try_from(path).ok()?;
        Some(Target {
            url,
            path,
            host,
            idle: Mutex::new(VecDeque::new()),
        })
    }

    fn idle(&self) -> MutexGuard<'_, VecDeque<Idle>> {
        self.idle.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Closes the idle connections that are no longer [usable](Idle::usable) at `now`.
    fn close_stale(&self, now: Instant, idle_for: Duration) {
        self.idle().retain(|conn| conn.usable(now, idle_for));
    }

    /// The most recently given back connection that is still usable (older ones are
    /// dropped on the way).
    fn take(&self, idle_for: Duration) -> Option<Sender> {
        let now = Instant::now();
        let mut idle = self.idle();
        while let Some(conn) = idle.pop_back() {
            if conn.usable(now, idle_for) {
                return Some(conn.sender);
            }
        }
        None
    }
}

impl Idle {
    /// Whether the connection may still be lent at `now`: open, and idle no longer
    /// than `idle_for`.
    fn usable(&self, now: Instant, idle_for: Duration) -> bool {
        !self.sender.is_closed() && now.saturating_duration_since(self.since) <= idle_for
    }
}

/// The endpoints' connections.
pub struct Pool {
    connector: HttpsConnector<HttpConnector>,
    /// Each endpoint's target, in engine order (`None`: not an absolute HTTP URL).
    targets: Arc<[Option<Target>]>,
    /// How long a connection may stay idle and still be lent.
    idle_for: Duration,
    /// How many idle connections an endpoint keeps.
    max_idle: usize,
}

impl fmt::Debug for Pool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pool")
            .field("endpoints", &self.targets.len())
            .field("idle_for", &self.idle_for)
            .field("max_idle", &self.max_idle)
            .finish_non_exhaustive()
    }
}

/// A connection lent for one exchange: [`Lent::give_back`] once its answer was read
/// whole; dropped, it closes.
pub struct Lent<'p> {
    pool: &'p Pool,
    target: &'p Target,
    sender: Sender,
}

impl Lent<'_> {
    /// Keeps the connection for the endpoint's next request (its answer was read to
    /// the end). The oldest idle connection goes when it has been idle too long, so
    /// that an endpoint's list does not keep connections no request will take.
    pub fn give_back(self) {
        if self.sender.is_closed() {
            return;
        }
        let now = Instant::now();
        let mut idle = self.target.idle();
        let stale = idle
            .front()
            .is_some_and(|oldest| now.saturating_duration_since(oldest.since) > self.pool.idle_for);
        if stale {
            idle.pop_front();
        }
        if idle.len() < self.pool.max_idle {
            idle.push_back(Idle {
                sender: self.sender,
                since: now,
            });
        }
    }
}

impl Pool {
    /// A pool for the endpoints at `urls` (in engine order), dialling through
    /// `connector`; a connection idle longer than `idle_for` is not lent again, and an
    /// endpoint keeps at most `max_idle` idle ones.
    pub fn new(
        connector: HttpsConnector<HttpConnector>,
        urls: impl IntoIterator<Item = Option<Uri>>,
        idle_for: Duration,
        max_idle: usize,
    ) -> Pool {
        Pool {
            connector,
            targets: urls
                .into_iter()
                .map(|url| url.and_then(Target::new))
                .collect(),
            idle_for,
            max_idle,
        }
    }

    /// A task for the runtime: every `every`, it closes the idle connections older than
    /// the pool keeps them (or closed by the server) on every endpoint. It ends once
    /// the pool is dropped.
    pub fn reaper(&self, every: Duration) -> impl Future<Output = ()> + Send + 'static {
        let targets = Arc::downgrade(&self.targets);
        let idle_for = self.idle_for;
        ticks::every(every, Instant::now() + every, targets, move |targets| {
            let now = Instant::now();
            for target in targets.iter().flatten() {
                target.close_stale(now, idle_for);
            }
        })
    }

    /// Sends `request` (its URI is replaced by the endpoint's path; a `Host` header is
    /// added when it has none) to `endpoint`, on an idle connection when there is one,
    /// and returns the answer with its connection. `None`: the endpoint has no
    /// absolute `http`/`https` URL.
    ///
    /// Not an `async fn`: its arguments would be kept twice in its future, once as
    /// given and once as moved into its body; an `async` block keeps the request once.
    pub fn send(
        &self,
        endpoint: usize,
        mut request: Request<Full<Bytes>>,
    ) -> impl Future<Output = Option<Result<(Response<Incoming>, Lent<'_>), SendError>>> {
        let target = self.targets.get(endpoint).and_then(Option::as_ref);
        if let Some(target) = target {
            *request.uri_mut() = target.path.clone();
            request
                .headers_mut()
                .entry(HOST)
                .or_insert_with(|| target.host.clone());
        }
        async move {
            let target = target?;
            while let Some(mut sender) = target.take(self.idle_for) {
                if sender.ready().await.is_err() {
                    continue;
                }
                match sender.try_send_request(request).await {
                    Ok(answer) => return Some(Ok((answer, self.lend(target, sender)))),
                    Err(mut refused) => match refused.take_message() {
                        // Closed before a byte of the request was written: the next one.
                        Some(back) => request = back,
                        None => return Some(Err(SendError::Exchange(refused.into_error()))),
                    },
                }
            }
            // Boxed: connecting (TLS included) is a large future, and it is the rare
            // path; inline, every exchange's future would carry its size.
            Some(Box::pin(self.send_on_new(target, request)).await)
        }
    }

    async fn send_on_new<'p>(
        &'p self,
        target: &'p Target,
        request: Request<Full<Bytes>>,
    ) -> Result<(Response<Incoming>, Lent<'p>), SendError> {
        let mut connector = self.connector.clone();
        poll_fn(|cx| connector.poll_ready(cx))
            .await
            .map_err(SendError::Connect)?;
        let io = connector
            .call(target.url.clone())
            .await
            .map_err(SendError::Connect)?;
        let (mut sender, connection) = http1::Builder::new()
            .handshake(io)
            .await
            .map_err(SendError::Exchange)?;
        tokio::spawn(async move {
            // Its end (the server closed it, or its last sender went) is seen by the
            // sender: `is_closed`, or the error of the exchange it was in.
            let _ = connection.await;
        });
        match sender.try_send_request(request).await {
            Ok(answer) => Ok((answer, self.lend(target, sender))),
            Err(refused) => Err(SendError::Exchange(refused.into_error())),
        }
    }

    fn lend<'p>(&'p self, target: &'p Target, sender: Sender) -> Lent<'p> {
        Lent {
            pool: self,
            target,
            sender,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use http::Method;
    use http_body_util::BodyExt;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};
    use tokio::sync::{Mutex as AsyncMutex, Notify};

    use super::*;

    /// What the test server saw and does: the connections it accepted, each request's
    /// head, and (when set) a signal that closes every connection once it is idle.
    #[derive(Default)]
    struct Seen {
        accepted: AtomicUsize,
        closed: AtomicUsize,
        heads: AsyncMutex<Vec<String>>,
        close: Notify,
    }

    /// A keep-alive HTTP/1.1 server on 127.0.0.1 that answers every request `ok` and
    /// closes a connection when `seen.close` is notified while the connection waits.
    async fn server() -> (Uri, Arc<Seen>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Seen::default());
        let s = Arc::clone(&seen);
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                s.accepted.fetch_add(1, Ordering::SeqCst);
                let s = Arc::clone(&s);
                tokio::spawn(async move {
                    connection(tcp, &s).await;
                    s.closed.fetch_add(1, Ordering::SeqCst);
                });
            }
        });
        let url = format!("http://{addr}/v1/chat/completions")
            .parse()
            .unwrap();
        (url, seen)
    }

    /// Serves one connection until the client or `seen.close` ends it.
    async fn connection(mut tcp: TcpStream, seen: &Seen) {
        let mut buf = Vec::new();
        loop {
            let mut chunk = [0u8; 1024];
            let n = tokio::select! {
                n = tcp.read(&mut chunk) => n.unwrap_or(0),
                () = seen.close.notified() => 0,
            };
            if n == 0 {
                return;
            }
            buf.extend_from_slice(&chunk[..n]);
            let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
                continue;
            };
            let head = String::from_utf8_lossy(&buf[..end]).into_owned();
            let length: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length: "))
                .map_or(0, |v| v.parse().unwrap());
            if buf.len() < end + 4 + length {
                continue;
            }
            buf.drain(..end + 4 + length);
            seen.heads.lock().await.push(head);
            let answer = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";
            if tcp.write_all(answer).await.is_err() {
                return;
            }
        }
    }

    fn pool(url: Uri, idle_for: Duration) -> Pool {
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_provider_and_webpki_roots(rustls::crypto::ring::default_provider())
            .unwrap()
            .https_or_http()
            .enable_http1()
            .wrap_connector(http);
        Pool::new(connector, [Some(url)], idle_for, 4)
    }

    fn request() -> Request<Full<Bytes>> {
        let mut r = Request::new(Full::new(Bytes::from_static(b"{}")));
        *r.method_mut() = Method::POST;
        r
    }

    /// Sends one request, reads its answer whole and gives the connection back.
    async fn exchange(pool: &Pool) -> Bytes {
        let (answer, lent) = pool.send(0, request()).await.unwrap().unwrap();
        let body = answer.into_body().collect().await.unwrap().to_bytes();
        lent.give_back();
        body
    }

    /// Waits (sleeping a millisecond at a time, 5000 at most) until `done`; panics
    /// naming `what` when it never is.
    async fn wait_until(what: &str, done: impl Fn() -> bool) {
        for _ in 0..5000 {
            if done() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        panic!("never happened: {what}");
    }

    /// Waits until every idle connection of endpoint 0 has seen its server close it.
    async fn until_idle_closed(pool: &Pool) {
        let target = pool.targets[0].as_ref().unwrap();
        let closed = || target.idle().iter().all(|c| c.sender.is_closed());
        wait_until("the server's close reached the idle connection", closed).await;
    }

    #[tokio::test]
    async fn an_answer_read_whole_gives_its_connection_to_the_next_request() {
        let (url, seen) = server().await;
        let pool = pool(url, Duration::from_secs(90));
        for _ in 0..3 {
            assert_eq!(exchange(&pool).await, "ok");
        }
        assert_eq!(seen.accepted.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn a_request_goes_to_the_endpoint_path_with_its_host() {
        let (url, seen) = server().await;
        let host = url.authority().unwrap().to_string();
        let pool = pool(url, Duration::from_secs(90));
        exchange(&pool).await;
        let heads = seen.heads.lock().await;
        let head = heads[0].to_ascii_lowercase();
        assert!(
            head.starts_with("post /v1/chat/completions http/1.1\r\n"),
            "{head}"
        );
        assert!(head.contains(&format!("\r\nhost: {host}")), "{head}");
    }

    #[tokio::test]
    async fn a_connection_lent_and_not_given_back_is_not_lent_again() {
        let (url, seen) = server().await;
        let pool = pool(url, Duration::from_secs(90));
        let (answer, lent) = pool.send(0, request()).await.unwrap().unwrap();
        drop((answer, lent));
        assert_eq!(exchange(&pool).await, "ok");
        assert_eq!(seen.accepted.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn a_connection_the_server_closed_while_idle_is_passed_over() {
        let (url, seen) = server().await;
        let pool = pool(url, Duration::from_secs(90));
        exchange(&pool).await;
        seen.close.notify_waiters();
        until_idle_closed(&pool).await;
        assert_eq!(exchange(&pool).await, "ok");
        assert_eq!(seen.accepted.load(Ordering::SeqCst), 2);
    }

    /// Waits (in paused time, while the runtime runs the connections) until the
    /// server has seen `n` connections end.
    async fn until_closed(seen: &Seen, n: usize) {
        let closed = || seen.closed.load(Ordering::SeqCst) >= n;
        wait_until(&format!("the server saw {n} connections end"), closed).await;
    }

    #[tokio::test(start_paused = true)]
    async fn the_reaper_closes_a_connection_idle_too_long_and_keeps_one_that_is_not() {
        let (url, seen) = server().await;
        let pool = pool(url, Duration::from_secs(90));
        tokio::spawn(pool.reaper(Duration::from_secs(30)));
        exchange(&pool).await;
        // Ticks at 30, 60 and 90 s see it idle for the allowance at most: kept.
        tokio::time::advance(Duration::from_secs(90)).await;
        tokio::task::yield_now().await;
        assert_eq!(pool.targets[0].as_ref().unwrap().idle().len(), 1);
        assert_eq!(seen.closed.load(Ordering::SeqCst), 0);
        // The tick at 120 s finds it idle for longer, with no request to notice.
        tokio::time::advance(Duration::from_secs(30)).await;
        until_closed(&seen, 1).await;
        assert!(pool.targets[0].as_ref().unwrap().idle().is_empty());
        assert_eq!(exchange(&pool).await, "ok");
        assert_eq!(seen.accepted.load(Ordering::SeqCst), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn the_reaper_ends_with_its_pool() {
        let (url, _seen) = server().await;
        let pool = pool(url, Duration::from_secs(90));
        let reaper = tokio::spawn(pool.reaper(Duration::from_secs(30)));
        drop(pool);
        tokio::time::advance(Duration::from_secs(30)).await;
        reaper.await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn a_connection_idle_longer_than_allowed_is_not_lent() {
        let (url, seen) = server().await;
        let pool = pool(url, Duration::from_secs(90));
        exchange(&pool).await;
        tokio::time::advance(Duration::from_secs(91)).await;
        exchange(&pool).await;
        assert_eq!(seen.accepted.load(Ordering::SeqCst), 2);
        // Idle for the whole allowance (not longer): lent again.
        tokio::time::advance(Duration::from_secs(90)).await;
        exchange(&pool).await;
        assert_eq!(seen.accepted.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn an_endpoint_that_refuses_connections_is_a_connect_error() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        drop(listener);
        let pool = pool(
            format!("http://{addr}/v1/messages").parse().unwrap(),
            Duration::ZERO,
        );
        let sent = pool.send(0, request()).await.unwrap();
        assert!(
            matches!(sent, Err(SendError::Connect(_))),
            "{:?}",
            sent.err()
        );
    }

    #[tokio::test]
    async fn an_endpoint_without_an_http_url_has_no_target() {
        let url: Uri = "ftp://127.0.0.1/x".parse().unwrap();
        let pool = pool(url, Duration::ZERO);
        assert!(pool.send(0, request()).await.is_none());
        assert!(pool.send(1, request()).await.is_none());
    }
}
