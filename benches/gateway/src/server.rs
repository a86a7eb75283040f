//! The accept loop that `upstream` and `forward` share: HTTP/1.1 with keep-alive,
//! `TCP_NODELAY`, on 127.0.0.1, its base URL printed as the first line of stdout.

use std::convert::Infallible;
use std::error::Error;
use std::future::Future;
use std::io::{self, Write};
use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use hyper::body::{Body, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

/// Binds `addr` (its host must be 127.0.0.1) and prints `http://ADDR` on stdout.
pub async fn bind(addr: SocketAddr) -> io::Result<TcpListener> {
    if addr.ip() != Ipv4Addr::LOCALHOST {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{addr}: only 127.0.0.1 is served"),
        ));
    }
    let listener = TcpListener::bind(addr).await?;
    let mut out = io::stdout().lock();
    writeln!(out, "http://{}", listener.local_addr()?)?;
    out.flush()?;
    Ok(listener)
}

/// Serves every connection `listener` accepts with `handler`, until the process ends.
pub async fn serve<H, F, B>(listener: TcpListener, handler: H) -> Infallible
where
    H: Fn(Request<Incoming>) -> F + Clone + Send + 'static,
    F: Future<Output = Result<Response<B>, Infallible>> + Send + 'static,
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn Error + Send + Sync>>,
{
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                // Out of descriptors, say: wait instead of spinning.
                eprintln!("accept: {e}");
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let handler = handler.clone();
        tokio::spawn(async move {
            let io = TokioIo::new(stream);
            let _ = http1::Builder::new()
                .serve_connection(io, service_fn(handler))
                .await;
        });
    }
}
