//! One keep-alive HTTP/1.1 connection of the load generator to a target, re-opened
//! after a transport error.

use std::error::Error;
use std::fmt;
use std::net::SocketAddr;

use bytes::Bytes;
use http::header::{HOST, HeaderName, HeaderValue};
use http::{Method, Request, StatusCode, Uri};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::{self, SendRequest};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

/// Where and what to send: one request, sent again and again.
#[derive(Debug, Clone)]
pub struct Target {
    /// The address connected to.
    pub addr: SocketAddr,
    /// The `Host` header (the base URL's authority).
    pub authority: HeaderValue,
    /// The request path (the base URL's path followed by the request's).
    pub path: Uri,
    /// The headers sent besides `Host`.
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// The request body.
    pub body: Bytes,
}

/// Why a target cannot be built from its description.
#[derive(Debug)]
pub struct BadTarget(String);

impl fmt::Display for BadTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Error for BadTarget {}

impl Target {
    /// `base` is `http://127.0.0.1:PORT[/prefix]`; `headers` are `Name: value`.
    pub fn new(
        base: &str,
        path: &str,
        headers: &[String],
        body: &str,
    ) -> Result<Target, BadTarget> {
        let bad = |what: String| BadTarget(what);
        let uri: Uri = base.parse().map_err(|e| bad(format!("{base}: {e}")))?;
        let authority = uri
            .authority()
            .ok_or_else(|| bad(format!("{base}: no host:port")))?;
        let addr: SocketAddr = authority
            .as_str()
            .parse()
            .map_err(|e| bad(format!("{base}: the host must be an IP:port ({e})")))?;
        let prefix = uri.path().trim_end_matches('/');
        let path = format!("{prefix}{path}")
            .parse()
            .map_err(|e| bad(format!("{path}: {e}")))?;
        let headers = headers
            .iter()
            .map(|h| header(h).ok_or_else(|| bad(format!("{h}: not a `Name: value` header"))))
            .collect::<Result<_, _>>()?;
        Ok(Target {
            addr,
            authority: HeaderValue::from_str(authority.as_str())
                .map_err(|e| bad(format!("{base}: {e}")))?,
            path,
            headers,
            body: Bytes::copy_from_slice(body.as_bytes()),
        })
    }

    /// This target with `extra` headers too.
    pub fn with_headers(&self, extra: &[String]) -> Result<Target, BadTarget> {
        let mut t = self.clone();
        for h in extra {
            let h =
                header(h).ok_or_else(|| BadTarget(format!("{h}: not a `Name: value` header")))?;
            t.headers.push(h);
        }
        Ok(t)
    }

    fn request(&self) -> Request<Full<Bytes>> {
        let mut req = Request::new(Full::new(self.body.clone()));
        *req.method_mut() = Method::POST;
        *req.uri_mut() = self.path.clone();
        let h = req.headers_mut();
        h.insert(HOST, self.authority.clone());
        for (name, value) in &self.headers {
            h.append(name.clone(), value.clone());
        }
        req
    }
}

fn header(h: &str) -> Option<(HeaderName, HeaderValue)> {
    let (name, value) = h.split_once(':')?;
    let name = HeaderName::from_bytes(name.trim().as_bytes()).ok()?;
    let value = HeaderValue::from_str(value.trim()).ok()?;
    Some((name, value))
}

/// What one request came to.
#[derive(Debug)]
pub enum Sent {
    /// An answer, its body read whole.
    Answer(StatusCode),
    /// The connection failed (it is re-opened on the next send).
    Failed(hyper::Error),
}

/// A connection to a [`Target`], opened on the first send.
pub struct Connection {
    target: Target,
    sender: Option<SendRequest<Full<Bytes>>>,
}

impl Connection {
    /// A connection to `target` (not opened yet).
    pub fn new(target: Target) -> Connection {
        Connection {
            target,
            sender: None,
        }
    }

    /// Opens the connection now, so the first send does not pay for it.
    pub async fn open(&mut self) -> std::io::Result<()> {
        if self.sender.is_none() {
            self.sender = Some(handshake(self.target.addr).await?);
        }
        Ok(())
    }

    /// Sends the target's request and reads the answer whole.
    pub async fn send(&mut self) -> std::io::Result<Sent> {
        self.open().await?;
        let Some(sender) = self.sender.as_mut() else {
            return Err(std::io::Error::other("no connection"));
        };
        let sent = exchange(sender, self.target.request()).await;
        if matches!(sent, Sent::Failed(_)) {
            self.sender = None;
        }
        Ok(sent)
    }
}

async fn exchange(sender: &mut SendRequest<Full<Bytes>>, req: Request<Full<Bytes>>) -> Sent {
    if let Err(e) = sender.ready().await {
        return Sent::Failed(e);
    }
    let answer = match sender.send_request(req).await {
        Ok(a) => a,
        Err(e) => return Sent::Failed(e),
    };
    let status = answer.status();
    match answer.into_body().collect().await {
        Ok(_) => Sent::Answer(status),
        Err(e) => Sent::Failed(e),
    }
}

async fn handshake(addr: SocketAddr) -> std::io::Result<SendRequest<Full<Bytes>>> {
    let stream = TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    let (sender, conn) = http1::handshake(TokioIo::new(stream))
        .await
        .map_err(std::io::Error::other)?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(sender)
}
