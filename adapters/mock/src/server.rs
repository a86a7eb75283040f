//! The server: a listener on 127.0.0.1, one task per connection, on its own thread or
//! on the caller's tokio runtime.

use crate::bodies::Body;
use crate::config::MockConfig;
use crate::engine::{Action, Delivery, Filler, Plan, Shared};
use crate::fault::Fault;
use crate::http::{Conn, Framing, LAST_CHUNK, ReadError, chunk, response_head};
use crate::stats::Stats;
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::task::JoinSet;

/// A running fault-injecting server on `127.0.0.1`.
///
/// Dropping it (or [`MockServer::shutdown`]) stops it: the listening port closes, so
/// later connections are refused, and open connections (hanging ones too) are closed.
///
/// ```no_run
/// use steadfast_mock::{MockConfig, MockServer, Scenario};
///
/// let server = MockServer::start(MockConfig::new(Scenario::Flaky).with_seed(7))?;
/// let url = format!("{}/v1/chat/completions", server.base_url());
/// // ... point a client at `url` ...
/// println!("{:?}", server.stats().by_status);
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct MockServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    stop: Option<oneshot::Sender<()>>,
    runner: Runner,
}

enum Runner {
    Thread(Option<std::thread::JoinHandle<()>>),
    Task(Option<tokio::task::JoinHandle<()>>),
}

impl std::fmt::Debug for MockServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MockServer")
            .field("addr", &self.addr)
            .field("scenario", &self.shared.config.scenario)
            .finish_non_exhaustive()
    }
}

fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, message)
}

impl MockServer {
    /// Binds `127.0.0.1:config.port` and serves on a background thread with its own
    /// tokio runtime, so clients without tokio (blocking ones) can use it. Returns once
    /// the port is listening. Fails on an invalid configuration
    /// ([`MockConfig::validate`]) or when the port cannot be bound.
    pub fn start(config: MockConfig) -> io::Result<MockServer> {
        config.validate().map_err(invalid)?;
        let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, config.port))?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let workers = match config.worker_threads {
            0 => std::thread::available_parallelism().map_or(2, |n| n.get().min(4)),
            n => n,
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(workers)
            .thread_name("steadfast-mock-worker")
            .enable_io()
            .enable_time()
            .build()?;
        let listener = {
            let _guard = runtime.enter();
            TcpListener::from_std(listener)?
        };
        let shared = Arc::new(Shared::new(config));
        let (stop, stopped) = oneshot::channel();
        let task_shared = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("steadfast-mock".to_owned())
            .spawn(move || {
                runtime.block_on(accept_loop(listener, task_shared, stopped));
                drop(runtime);
            })?;
        Ok(MockServer {
            addr,
            shared,
            stop: Some(stop),
            runner: Runner::Thread(Some(thread)),
        })
    }

    /// Binds `127.0.0.1:config.port` and serves on the current tokio runtime (a task
    /// per connection). [`MockServer::shutdown`] then only asks the server to stop; the
    /// port closes as soon as the runtime runs the accept task again.
    pub async fn start_on_current_runtime(config: MockConfig) -> io::Result<MockServer> {
        config.validate().map_err(invalid)?;
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, config.port)).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared::new(config));
        let (stop, stopped) = oneshot::channel();
        let task = tokio::spawn(accept_loop(listener, Arc::clone(&shared), stopped));
        Ok(MockServer {
            addr,
            shared,
            stop: Some(stop),
            runner: Runner::Task(Some(task)),
        })
    }

    /// The address the server listens on (always `127.0.0.1`).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT`, without a trailing slash.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The configuration the server runs with (its `script` is the initial one).
    pub fn config(&self) -> &MockConfig {
        &self.shared.config
    }

    /// A snapshot of the counters (the same as `GET /__stats`).
    pub fn stats(&self) -> Stats {
        self.shared.stats()
    }

    /// Appends faults to the script (the same as `POST /__faults`).
    pub fn push_faults(&self, faults: &[Fault]) {
        self.shared.push_faults(faults);
    }

    /// The whole-server outage switch: while on, every API request gets the outage
    /// answer (503 for OpenAI paths, 529 for Anthropic ones, or
    /// [`MockConfig::outage_status`]), before anything else (no script consumed, no
    /// replay).
    pub fn set_down(&self, down: bool) {
        self.shared.set_down(down);
    }

    /// Whether the outage switch is on.
    pub fn is_down(&self) -> bool {
        self.shared.is_down()
    }

    /// Clears the counters, the idempotency memory, the per-request attempt counts and
    /// the rate-limit buckets (the same as `POST /__reset`); the script, the outage
    /// switch and the outage clock stay.
    pub fn reset(&self) {
        self.shared.reset();
    }

    /// Stops the server. With [`MockServer::start`] this returns once the port is
    /// closed and every connection dropped. Idempotent.
    pub fn shutdown(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match &mut self.runner {
            Runner::Thread(handle) => {
                if let Some(handle) = handle.take() {
                    let _ = handle.join();
                }
            }
            Runner::Task(handle) => {
                // The stop signal lets the task drop its listener and connections;
                // nothing can wait for that here without blocking the runtime.
                drop(handle.take());
            }
        }
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        self.shutdown();
    }
}

async fn accept_loop(
    listener: TcpListener,
    shared: Arc<Shared>,
    mut stopped: oneshot::Receiver<()>,
) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            _ = &mut stopped => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    connections.spawn(serve(Arc::clone(&shared), stream));
                }
                // Out of descriptors and the like: let connections finish.
                Err(_) => tokio::time::sleep(Duration::from_millis(5)).await,
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
    drop(listener);
    connections.shutdown().await;
}

/// Resets the connection: RST instead of FIN.
fn reset(stream: &TcpStream) {
    let _ = stream.set_zero_linger();
}

async fn serve(shared: Arc<Shared>, stream: TcpStream) {
    let _ = stream.set_nodelay(true);
    if shared.on_accept() {
        reset(&stream);
        return;
    }
    let mut conn = Conn::new(stream);
    loop {
        let req = match conn.read_request().await {
            Ok(req) => req,
            Err(ReadError::Closed | ReadError::Io) => return,
            Err(ReadError::HeadTooLarge) => {
                shared.on_read_error(431, "head_too_large");
                refuse(&mut conn, 431, "Request header fields too large.").await;
                return;
            }
            Err(ReadError::BodyTooLarge) => {
                shared.on_read_error(413, "body_too_large");
                refuse(&mut conn, 413, "Request body too large.").await;
                return;
            }
            Err(ReadError::Bad(why)) => {
                shared.on_read_error(400, "bad_request");
                refuse(&mut conn, 400, why).await;
                return;
            }
        };
        let close = !req.keep_alive;
        let plan = shared.handle(&req);
        if !execute(&mut conn, plan, close, req.http10).await || close {
            return;
        }
    }
}

/// Answers an unreadable request and closes the connection gracefully, reading what
/// the client still sends for a moment so the answer is not lost to a reset.
async fn refuse(conn: &mut Conn, status: u16, message: &str) {
    let body = serde_json::to_vec(&serde_json::json!({
        "error": {"message": message, "type": "invalid_request_error", "param": null, "code": null}
    }))
    .unwrap_or_default();
    let headers = vec![("content-type".to_owned(), "application/json".to_owned())];
    let mut out = response_head(status, &headers, Framing::Length(body.len()), true, false);
    out.extend_from_slice(&body);
    if conn.stream.write_all(&out).await.is_ok() {
        let _ = conn.stream.shutdown().await;
        conn.drain(Some(Duration::from_secs(1))).await;
    }
}

/// Carries out a plan; false when the connection is finished.
async fn execute(conn: &mut Conn, plan: Plan, close: bool, http10: bool) -> bool {
    let Plan {
        delay,
        completion,
        action,
    } = plan;
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    // The key's outcome is recorded before any byte leaves, so a client that retries
    // at once sees it.
    drop(completion);
    let (status, mut headers, body, delivery) = match action {
        Action::Reset => {
            reset(&conn.stream);
            return false;
        }
        Action::Hang => {
            conn.drain(None).await;
            return false;
        }
        Action::Filler(f) => return filler(conn, f, close, http10).await,
        Action::Send {
            status,
            headers,
            body,
            delivery,
        } => (status, headers, body, delivery),
    };
    let mut out;
    match &body {
        Body::Full {
            content_type,
            bytes,
        } => {
            headers.insert(0, ("content-type".to_owned(), content_type.clone()));
            let announce_close = close && delivery != Delivery::Truncated;
            out = response_head(
                status,
                &headers,
                Framing::Length(bytes.len()),
                announce_close,
                http10,
            );
            let head_len = out.len();
            match delivery {
                Delivery::Truncated => {
                    out.extend_from_slice(bytes.get(..bytes.len() / 2).unwrap_or_default());
                    return send_and_close(conn, &out).await;
                }
                Delivery::Trickle(rate) => {
                    out.extend_from_slice(bytes);
                    return trickle(conn, &out, head_len, rate).await;
                }
                Delivery::Normal | Delivery::Cut(_) => out.extend_from_slice(bytes),
            }
        }
        Body::Events(events) => {
            headers.insert(
                0,
                ("content-type".to_owned(), "text/event-stream".to_owned()),
            );
            headers.insert(1, ("cache-control".to_owned(), "no-cache".to_owned()));
            let cut = matches!(delivery, Delivery::Cut(_) | Delivery::Truncated);
            out = response_head(status, &headers, Framing::Chunked, close && !cut, http10);
            let head_len = out.len();
            match delivery {
                Delivery::Cut(n) => {
                    for ev in events.iter().take(n as usize) {
                        chunk(ev, &mut out);
                    }
                    return send_and_close(conn, &out).await;
                }
                Delivery::Truncated => {
                    let mut body = Vec::new();
                    for ev in events {
                        chunk(ev, &mut body);
                    }
                    out.extend_from_slice(body.get(..body.len() / 2).unwrap_or_default());
                    return send_and_close(conn, &out).await;
                }
                Delivery::Normal | Delivery::Trickle(_) => {
                    for ev in events {
                        chunk(ev, &mut out);
                    }
                    out.extend_from_slice(LAST_CHUNK);
                    if let Delivery::Trickle(rate) = delivery {
                        return trickle(conn, &out, head_len, rate).await;
                    }
                }
            }
        }
    }
    if conn.stream.write_all(&out).await.is_err() {
        return false;
    }
    if close {
        let _ = conn.stream.shutdown().await;
        return false;
    }
    true
}

/// Sends these bytes, then closes the connection (FIN) in the middle of the response.
async fn send_and_close(conn: &mut Conn, bytes: &[u8]) -> bool {
    if conn.stream.write_all(bytes).await.is_ok() {
        let _ = conn.stream.flush().await;
        let _ = conn.stream.shutdown().await;
    }
    false
}

/// Sends the head at once and the rest at `rate` bytes per second (one byte at a time
/// at low rates, small pieces every 10 ms at high ones).
async fn trickle(conn: &mut Conn, out: &[u8], head_len: usize, rate: u32) -> bool {
    let (head, body) = out.split_at(head_len.min(out.len()));
    if conn.stream.write_all(head).await.is_err() {
        return false;
    }
    let rate = u64::from(rate.max(1));
    let step = (rate / 100).max(1) as usize;
    let pause = Duration::from_nanos(1_000_000_000 * step as u64 / rate);
    for piece in body.chunks(step) {
        tokio::time::sleep(pause).await;
        if conn.stream.write_all(piece).await.is_err() {
            return false;
        }
    }
    true
}

/// Writes a filler body (see [`Fault::Filler`]); false when the connection is finished.
async fn filler(conn: &mut Conn, f: Filler, close: bool, http10: bool) -> bool {
    let Filler {
        mut headers,
        content_type,
        first,
        bytes,
        piece,
        every,
        chunked,
        shared,
    } = f;
    headers.insert(0, ("content-type".to_owned(), content_type.to_owned()));
    let first = first.unwrap_or_default();
    let framing = match bytes {
        Some(n) if !chunked => Framing::Length(
            usize::try_from(n)
                .unwrap_or(usize::MAX)
                .saturating_add(first.len()),
        ),
        _ => Framing::Chunked,
    };
    let mut out = response_head(200, &headers, framing, close, http10);
    if chunked {
        chunk(&first, &mut out);
    } else {
        out.extend_from_slice(&first);
    }
    if conn.stream.write_all(&out).await.is_err() {
        return false;
    }
    let data = vec![b'a'; piece];
    let mut frame = Vec::with_capacity(piece + 16);
    chunk(&data, &mut frame);
    let mut left = bytes.unwrap_or(u64::MAX);
    while left > 0 {
        if !every.is_zero() {
            tokio::time::sleep(every).await;
        }
        let n = usize::try_from(left).unwrap_or(usize::MAX).min(piece);
        let written = match (chunked, n == piece) {
            (true, true) => conn.stream.write_all(&frame).await,
            (true, false) => {
                let mut last = Vec::with_capacity(n + 16);
                chunk(data.get(..n).unwrap_or_default(), &mut last);
                conn.stream.write_all(&last).await
            }
            (false, _) => {
                conn.stream
                    .write_all(data.get(..n).unwrap_or_default())
                    .await
            }
        };
        if written.is_err() {
            return false;
        }
        shared.on_filler(n as u64);
        left -= n as u64;
    }
    if chunked && conn.stream.write_all(LAST_CHUNK).await.is_err() {
        return false;
    }
    if close {
        let _ = conn.stream.shutdown().await;
        return false;
    }
    true
}
