//! A body read whole under a size limit: a client's request, or an endpoint's answer.

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::{Body as _, Incoming};
use steadfast_http::body::LimitedBody;

/// Why a body was not read whole.
#[derive(Debug)]
pub enum Unread {
    /// It announced, or reached, more than the limit.
    TooLarge,
    /// The connection failed while it was read.
    Broken(hyper::Error),
}

/// `body` whole, at most `limit` bytes (refused before a byte is read when its head
/// announces more); a body that came in one piece is kept as it came, not copied.
pub async fn read_whole(mut body: Incoming, limit: u64) -> Result<Bytes, Unread> {
    let mut whole =
        LimitedBody::new(limit, body.size_hint().exact()).map_err(|_| Unread::TooLarge)?;
    while let Some(frame) = body.frame().await {
        if let Ok(piece) = frame.map_err(Unread::Broken)?.into_data() {
            whole.push_bytes(piece).map_err(|_| Unread::TooLarge)?;
        }
    }
    Ok(whole.into_shared())
}
