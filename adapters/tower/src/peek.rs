//! Responses whose head the core reads, and whose error body it peeks at while the
//! caller still gets it whole.

use std::future::Future;

use bytes::{Buf, Bytes};
use http::{Extensions, HeaderMap};
use http_body::Body;
use http_body_util::BodyExt;

use crate::outcome::{IntoOutcome, Observed};

/// A response the layer can read: its status and headers, and its body read into
/// memory when it is an error (the core classifies by the provider's error type).
///
/// Implemented for `http::Response<B>` with a body that can be rebuilt from bytes
/// (`Full<Bytes>`, `String`, `reqwest::Body`…) and, with the feature `reqwest`, for
/// `reqwest::Response`.
pub trait PeekBody: Sized + Send {
    /// The HTTP status.
    fn status_code(&self) -> u16;
    /// The response headers.
    fn header_map(&self) -> &HeaderMap;
    /// The response extensions (a [`GaveUpNote`](crate::GaveUpNote) goes there).
    fn extensions_mut(&mut self) -> &mut Extensions;
    /// Reads the body, up to `limit` bytes, and returns the response with that body
    /// and the bytes read. A body longer than `limit`, or that fails while read, is
    /// handed on as far as it was read.
    fn peek(self, limit: u64) -> impl Future<Output = (Self, Bytes)> + Send;
}

impl<B> PeekBody for http::Response<B>
where
    B: Body + From<Bytes> + Send + Unpin,
    B::Data: Send,
    B::Error: Send,
{
    fn status_code(&self) -> u16 {
        self.status().as_u16()
    }

    fn header_map(&self) -> &HeaderMap {
        self.headers()
    }

    fn extensions_mut(&mut self) -> &mut Extensions {
        http::Response::extensions_mut(self)
    }

    async fn peek(self, limit: u64) -> (Self, Bytes) {
        let (parts, mut body) = self.into_parts();
        let read = read_within(&mut body, limit).await;
        (
            http::Response::from_parts(parts, B::from(read.clone())),
            read,
        )
    }
}

/// The body's bytes, up to `limit` (a failure ends the reading).
async fn read_within<B>(body: &mut B, limit: u64) -> Bytes
where
    B: Body + Unpin,
{
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    let mut buf = Vec::new();
    while buf.len() < limit {
        let Some(Ok(frame)) = body.frame().await else {
            break;
        };
        let Ok(mut data) = frame.into_data() else {
            continue;
        };
        while data.has_remaining() && buf.len() < limit {
            let chunk = data.chunk();
            let n = chunk.len().min(limit.saturating_sub(buf.len()));
            buf.extend_from_slice(chunk.get(..n).unwrap_or_default());
            data.advance(n);
        }
    }
    Bytes::from(buf)
}

/// One attempt's response, its error body read (a 2xx is not read: its body is the
/// caller's).
#[derive(Debug)]
pub struct Peeked<R> {
    /// The response, its body whole.
    pub response: R,
    /// The error body read (empty for a 2xx).
    pub body: Bytes,
}

impl<R: PeekBody> Peeked<R> {
    /// Reads an error response's body within `limit`; a 2xx stays unread.
    pub async fn read(response: R, limit: u64) -> Peeked<R> {
        if steadfast_http::outcome::is_payload(response.status_code()) {
            return Peeked {
                response,
                body: Bytes::new(),
            };
        }
        let (response, body) = response.peek(limit).await;
        Peeked { response, body }
    }
}

/// One attempt of the layer or the middleware: its response, or the inner service's
/// error.
#[derive(Debug)]
pub(crate) struct Tried<R, E>(pub Result<Peeked<R>, E>);

impl<R, E> IntoOutcome for Tried<R, E>
where
    R: PeekBody,
    E: std::error::Error + 'static,
{
    type Value = R;
    type Error = E;

    fn observe(&self) -> Observed<'_> {
        match &self.0 {
            Ok(p) => Observed::Response {
                status: p.response.status_code(),
                headers: Some(p.response.header_map()),
                body: p.body.as_ref().into(),
            },
            Err(e) => Observed::Transport(crate::transport_of(e)),
        }
    }

    fn into_result(self) -> Result<R, E> {
        self.0.map(|p| p.response)
    }
}

#[cfg(test)]
mod tests {
    use http_body_util::{BodyExt, Full};

    use super::*;

    fn response(status: u16, body: &'static str) -> http::Response<Full<Bytes>> {
        let mut r = http::Response::new(Full::new(Bytes::from_static(body.as_bytes())));
        *r.status_mut() = http::StatusCode::from_u16(status).unwrap_or_default();
        r
    }

    async fn body_of(r: http::Response<Full<Bytes>>) -> Bytes {
        let collected = r.into_body().collect().await;
        collected.map(|c| c.to_bytes()).unwrap_or_default()
    }

    #[tokio::test]
    async fn an_error_body_is_read_and_handed_on_whole() {
        let body = r#"{"error":{"type":"rate_limit_error"}}"#;
        let p = Peeked::read(response(429, body), 1 << 20).await;
        assert_eq!(p.body, body.as_bytes());
        assert_eq!(body_of(p.response).await, body.as_bytes());
    }

    #[tokio::test]
    async fn a_success_is_not_read() {
        let p = Peeked::read(response(200, "data: {}\n\n"), 1 << 20).await;
        assert!(p.body.is_empty());
        assert_eq!(body_of(p.response).await, "data: {}\n\n".as_bytes());
    }

    #[tokio::test]
    async fn an_error_body_past_the_limit_is_cut_to_it() {
        let p = Peeked::read(response(500, "0123456789"), 4).await;
        assert_eq!(p.body, "0123".as_bytes());
        assert_eq!(body_of(p.response).await, "0123".as_bytes());
    }
}
