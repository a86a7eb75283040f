//! The accept loop (hyper 1, HTTP/1.1 with keep-alive) and the shutdown: stop
//! accepting, let in-flight requests finish within the grace period, then end the
//! calls still running with a clean error and let those answers go out.

use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::idle::Watch;
use super::{Ender, Gateway, handle};

/// How long the answers of calls ended at the grace period's end may take to go out.
const LAST_WORDS: Duration = Duration::from_secs(2);

/// Why the gateway cannot start.
#[derive(Debug)]
pub enum ServeError {
    /// No gateway key is configured and the address is not a loopback one.
    Unprotected(SocketAddr),
    /// The address cannot be bound.
    Bind(SocketAddr, std::io::Error),
}

impl fmt::Display for ServeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServeError::Unprotected(a) => write!(
                f,
                "--addr {a}: without a gateway key ([gateway] keys_env) the gateway binds \
                 only loopback addresses"
            ),
            ServeError::Bind(a, e) => write!(f, "cannot listen on {a}: {e}"),
        }
    }
}

impl std::error::Error for ServeError {}

/// A gateway serving on its address.
#[derive(Debug)]
pub struct Running {
    addr: SocketAddr,
    gateway: Arc<Gateway>,
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl Running {
    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Its base URL (`http://127.0.0.1:PORT`; the APIs are under `/v1`).
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The gateway (its client, counters and routes).
    pub fn gateway(&self) -> &Arc<Gateway> {
        &self.gateway
    }

    /// Stops accepting, drains, and resolves once every connection is done.
    pub async fn shutdown(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
    }
}

/// Binds `addr` and serves `gateway` there until [`Running::shutdown`].
pub async fn start(
    gateway: Gateway,
    ender: Ender,
    addr: SocketAddr,
) -> Result<Running, ServeError> {
    if !gateway.keys.required() && !addr.ip().is_loopback() {
        return Err(ServeError::Unprotected(addr));
    }
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|e| ServeError::Bind(addr, e))?;
    let addr = listener
        .local_addr()
        .map_err(|e| ServeError::Bind(addr, e))?;
    tokio::spawn(gateway.upstream.reaper());
    tokio::spawn(gateway.upstream.deadline_looks());
    let gateway = Arc::new(gateway);
    let (stop, stopped) = watch::channel(false);
    let task = tokio::spawn(serve(listener, Arc::clone(&gateway), ender, stopped));
    Ok(Running {
        addr,
        gateway,
        stop,
        task,
    })
}

async fn serve(
    listener: TcpListener,
    gateway: Arc<Gateway>,
    ender: Ender,
    mut stopped: watch::Receiver<bool>,
) {
    let graceful = GracefulShutdown::new();
    let mut http = http1::Builder::new();
    // No timer: hyper's header-read timeout (a timer a request) is left off, and the
    // watch closes connections that wait too long for a request instead.
    http.keep_alive(true);
    let watch = Arc::new(Watch::default());
    tokio::spawn(Watch::run(Arc::downgrade(&watch)));
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = stopped.wait_for(|s| *s) => break,
        };
        let Ok((tcp, _)) = accepted else {
            // Out of descriptors or a connection reset while queued: take the next.
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let _ = tcp.set_nodelay(true);
        let gw = Arc::clone(&gateway);
        let idle = watch.register();
        let requests = Arc::clone(&idle);
        let service = service_fn(move |req| handle::handle(Arc::clone(&gw), req, requests.enter()));
        let conn = graceful.watch(http.serve_connection(TokioIo::new(tcp), service));
        let ending = Arc::clone(&gateway.ending);
        tokio::spawn(async move {
            let _ = ending.serve(conn, &idle).await;
        });
    }
    drop(listener);
    let drained = graceful.shutdown();
    tokio::pin!(drained);
    tokio::select! {
        () = &mut drained => {}
        () = tokio::time::sleep(gateway.config.grace) => {
            ender.end();
            let _ = tokio::time::timeout(LAST_WORDS, &mut drained).await;
        }
    }
}
