//! The server: a listener on 127.0.0.1, one task per connection, on its own thread or
//! on the caller's tokio runtime.

use crate::config::MockConfig;
use crate::http::{Conn, Framing, ReadError, response_head};
use crate::send::{self, Close};
use crate::shared::Shared;
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;
use steadfast_upstream::{Delivery, Fault, Http, Stats};
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
/// use steadfast_mock::{MockConfig, MockServer};
///
/// let server = MockServer::start(MockConfig::builtin("flaky")?.with_seed(7))?;
/// let url = format!("{}/v1/chat/completions", server.base_url());
/// // ... point a client at `url` ...
/// println!("{:?}", server.stats().by_status);
/// # Ok::<(), Box<dyn std::error::Error>>(())
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
            .field("scenario", &self.shared.config.scenario.name)
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

    /// The scenario the server runs (its configuration's, knobs applied).
    pub fn scenario(&self) -> steadfast_upstream::Scenario {
        self.shared.config.effective_scenario()
    }

    /// The whole-server outage switch: while on, every API request gets the outage
    /// answer (503 for OpenAI paths, 529 for Anthropic ones, or the `outage_status`
    /// knob), before anything else (no script consumed, no replay).
    pub fn set_down(&self, down: bool) {
        self.shared.set_down(down);
    }

    /// Whether the outage switch is on.
    pub fn is_down(&self) -> bool {
        self.shared.is_down()
    }

    /// Clears the counters, the idempotency memory, the per-request attempt counts and
    /// the rate-limit buckets (the same as `POST /__reset`); the script, the outage
    /// switch and the clock stay.
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

async fn serve(shared: Arc<Shared>, stream: TcpStream) {
    let _ = stream.set_nodelay(true);
    if shared.on_accept() {
        send::reset(&stream);
        return;
    }
    let mut conn = Conn::new(stream);
    loop {
        let req = match conn.read_request().await {
            Ok(req) => req,
            Err(ReadError::Closed | ReadError::Io) => return,
            Err(e) => {
                let (status, label, message) = match e {
                    ReadError::HeadTooLarge => {
                        (431, "head_too_large", "Request header fields too large.")
                    }
                    ReadError::BodyTooLarge => (413, "body_too_large", "Request body too large."),
                    ReadError::Bad(why) => (400, "bad_request", why),
                    ReadError::Closed | ReadError::Io => return,
                };
                shared.on_unreadable(status, label);
                refuse(&mut conn, &shared, status, message).await;
                return;
            }
        };
        let c = Close {
            close: !req.keep_alive,
            http10: req.http10,
        };
        let open = if req.path.starts_with("/__") {
            let (status, body) = crate::control::answer(&shared, &req);
            let http = Http {
                status,
                headers: vec![shared.date()],
                body,
                delivery: Delivery::Whole,
            };
            send::http(&mut conn, &shared, http, c).await
        } else {
            let answer = shared.handle(&req);
            send::answer(&mut conn, &shared, answer, c).await
        };
        if !open || c.close {
            return;
        }
    }
}

/// Answers an unreadable request and closes the connection gracefully, reading what
/// the client still sends for a moment so the answer is not lost to a reset.
async fn refuse(conn: &mut Conn, shared: &Shared, status: u16, message: &str) {
    let body = serde_json::to_vec(&serde_json::json!({
        "error": {"message": message, "type": "invalid_request_error", "param": null, "code": null}
    }))
    .unwrap_or_default();
    let headers = vec![
        shared.date(),
        ("content-type".to_owned(), "application/json".to_owned()),
    ];
    let mut out = response_head(status, &headers, Framing::Length(body.len()), true, false);
    out.extend_from_slice(&body);
    if conn.stream.write_all(&out).await.is_ok() {
        let _ = conn.stream.shutdown().await;
        conn.drain(Some(Duration::from_secs(1))).await;
    }
}
