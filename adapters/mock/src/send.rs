//! Carrying out an answer on a connection: its delay, then its bytes as its delivery
//! says (whole, truncated, cut after some events, trickled, paced, filler), a reset or
//! a hang.

use std::time::Duration;

use steadfast_upstream::wire::success::{Rendered, half};
use steadfast_upstream::{Answer, Body, Delivery, Filler, Http, Reply};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use crate::http::{Conn, Framing, LAST_CHUNK, chunk, response_head};
use crate::shared::Shared;

/// How the response ends its connection.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Close {
    /// The request asked for `connection: close`.
    pub close: bool,
    /// An HTTP/1.0 request.
    pub http10: bool,
}

/// Resets the connection: RST instead of FIN.
pub(crate) fn reset(stream: &TcpStream) {
    let _ = stream.set_zero_linger();
}

/// Carries out an answer; false when the connection is finished.
pub(crate) async fn answer(conn: &mut Conn, shared: &Shared, a: Answer, c: Close) -> bool {
    let Answer {
        after,
        reply,
        ticket,
        ..
    } = a;
    if !after.is_zero() && reply != Reply::Hang {
        tokio::time::sleep(after).await;
    }
    // The key's outcome is recorded before any byte leaves (a hang's at once: no work
    // is in progress), so a client that retries at once sees it.
    if let Some(t) = ticket {
        shared.finish(t);
    }
    if let Reply::Hang = reply {
        conn.drain(None).await;
        return false;
    }
    match reply {
        Reply::Http(h) => http(conn, shared, h, c).await,
        Reply::Reset | Reply::Refused | Reply::Hang => {
            reset(&conn.stream);
            false
        }
    }
}

/// Sends an HTTP response; false when the connection is finished.
pub(crate) async fn http(conn: &mut Conn, shared: &Shared, h: Http, c: Close) -> bool {
    let Http {
        status,
        mut headers,
        body,
        delivery,
    } = h;
    let rendered = body.rendered();
    let (content_type, bytes) = match (body, rendered) {
        (_, Some(Rendered::Events(events))) => {
            return events_out(conn, status, headers, &events, delivery, c).await;
        }
        (Body::Filler(f), _) => return filler(conn, shared, status, headers, f, c).await,
        (_, Some(Rendered::Json(bytes))) => ("application/json".to_owned(), bytes),
        (
            Body::Bytes {
                content_type,
                bytes,
            },
            None,
        ) => (content_type, bytes),
        (Body::Success { .. }, None) => ("application/json".to_owned(), Vec::new()),
    };
    headers.insert(0, ("content-type".to_owned(), content_type));
    let announce_close = c.close && delivery != Delivery::Truncated;
    let framing = Framing::Length(bytes.len());
    let mut out = response_head(status, &headers, framing, announce_close, c.http10);
    let head_len = out.len();
    match delivery {
        Delivery::Truncated => {
            out.extend_from_slice(half(&bytes));
            send_and_close(conn, &out).await
        }
        Delivery::Trickle(rate) => {
            out.extend_from_slice(&bytes);
            trickle(conn, &out, head_len, rate).await
        }
        Delivery::Whole | Delivery::Cut(_) => {
            out.extend_from_slice(&bytes);
            finish(conn, &out, c.close).await
        }
    }
}

async fn events_out(
    conn: &mut Conn,
    status: u16,
    mut headers: Vec<(String, String)>,
    events: &[(Duration, Vec<u8>)],
    delivery: Delivery,
    c: Close,
) -> bool {
    headers.insert(
        0,
        ("content-type".to_owned(), "text/event-stream".to_owned()),
    );
    headers.insert(1, ("cache-control".to_owned(), "no-cache".to_owned()));
    let cut = matches!(delivery, Delivery::Cut(_) | Delivery::Truncated);
    let mut out = response_head(
        status,
        &headers,
        Framing::Chunked,
        c.close && !cut,
        c.http10,
    );
    let head_len = out.len();
    match delivery {
        Delivery::Cut(n) => {
            for (_, ev) in events.iter().take(usize::try_from(n).unwrap_or(usize::MAX)) {
                chunk(ev, &mut out);
            }
            send_and_close(conn, &out).await
        }
        Delivery::Truncated => {
            let mut body = Vec::new();
            for (_, ev) in events {
                chunk(ev, &mut body);
            }
            out.extend_from_slice(half(&body));
            send_and_close(conn, &out).await
        }
        Delivery::Trickle(rate) => {
            for (_, ev) in events {
                chunk(ev, &mut out);
            }
            out.extend_from_slice(LAST_CHUNK);
            trickle(conn, &out, head_len, rate).await
        }
        Delivery::Whole if events.iter().all(|(pause, _)| pause.is_zero()) => {
            for (_, ev) in events {
                chunk(ev, &mut out);
            }
            out.extend_from_slice(LAST_CHUNK);
            finish(conn, &out, c.close).await
        }
        Delivery::Whole => paced(conn, out, events, c.close).await,
    }
}

/// The head, then each event after its pause, then the last chunk.
async fn paced(
    conn: &mut Conn,
    head: Vec<u8>,
    events: &[(Duration, Vec<u8>)],
    close: bool,
) -> bool {
    if conn.stream.write_all(&head).await.is_err() {
        return false;
    }
    for (pause, ev) in events {
        if !pause.is_zero() {
            tokio::time::sleep(*pause).await;
        }
        let mut out = Vec::with_capacity(ev.len().saturating_add(16));
        chunk(ev, &mut out);
        if conn.stream.write_all(&out).await.is_err() {
            return false;
        }
    }
    finish(conn, LAST_CHUNK, close).await
}

/// Sends the last bytes of a response; false when the connection is finished.
async fn finish(conn: &mut Conn, bytes: &[u8], close: bool) -> bool {
    if conn.stream.write_all(bytes).await.is_err() {
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
    let step = (rate / 100).max(1);
    let pause = Duration::from_nanos(1_000_000_000 * step / rate);
    for piece in body.chunks(usize::try_from(step).unwrap_or(1)) {
        tokio::time::sleep(pause).await;
        if conn.stream.write_all(piece).await.is_err() {
            return false;
        }
    }
    true
}

/// Writes a filler body (see `Fault::Filler`); false when the connection is finished.
async fn filler(
    conn: &mut Conn,
    shared: &Shared,
    status: u16,
    mut headers: Vec<(String, String)>,
    f: Filler,
    c: Close,
) -> bool {
    let content_type = if f.stream {
        "text/event-stream"
    } else {
        "application/json"
    };
    headers.insert(0, ("content-type".to_owned(), content_type.to_owned()));
    let first = f.first.unwrap_or_default();
    let framing = match f.bytes {
        Some(n) if !f.chunked => Framing::Length(
            usize::try_from(n)
                .unwrap_or(usize::MAX)
                .saturating_add(first.len()),
        ),
        _ => Framing::Chunked,
    };
    let mut out = response_head(status, &headers, framing, c.close, c.http10);
    if f.chunked {
        chunk(&first, &mut out);
    } else {
        out.extend_from_slice(&first);
    }
    if conn.stream.write_all(&out).await.is_err() {
        return false;
    }
    let data = vec![b'a'; f.piece];
    let mut left = f.bytes.unwrap_or(u64::MAX);
    while left > 0 {
        if !f.every.is_zero() {
            tokio::time::sleep(f.every).await;
        }
        let n = usize::try_from(left).unwrap_or(usize::MAX).min(f.piece);
        let piece = data.get(..n).unwrap_or_default();
        let mut framed = Vec::new();
        let bytes = if f.chunked {
            chunk(piece, &mut framed);
            &framed
        } else {
            piece
        };
        if conn.stream.write_all(bytes).await.is_err() {
            return false;
        }
        shared.on_filler(n as u64);
        left -= n as u64;
    }
    if f.chunked && conn.stream.write_all(LAST_CHUNK).await.is_err() {
        return false;
    }
    if c.close {
        let _ = conn.stream.shutdown().await;
        return false;
    }
    true
}
