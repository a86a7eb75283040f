//! reqwest's errors as the core's transport failures: a plain translation.

use steadfast_core::outcome::{Phase, Transport, TransportKind};
use steadfast_http::outcome::{find_io_error, io_kind, phase_of};

/// What failed, given whether a status line had arrived when it did.
pub(crate) fn transport(e: &reqwest::Error, status_seen: bool) -> Transport {
    let io = find_io_error(e).map(|io| io.kind());
    if e.is_connect() {
        let kind = if e.is_timeout() {
            TransportKind::ConnectTimeout
        } else {
            match io.map(|k| io_kind(k, false)) {
                Some(TransportKind::ConnectRefused) => TransportKind::ConnectRefused,
                _ => TransportKind::Other,
            }
        };
        // Nothing was sent before the connection existed.
        return Transport::new(kind, Phase::BeforeSend);
    }
    if e.is_builder() {
        return Transport::new(TransportKind::Other, Phase::BeforeSend);
    }
    let kind = if e.is_timeout() {
        TransportKind::Timeout
    } else if let Some(k) = io {
        io_kind(k, status_seen)
    } else if status_seen {
        TransportKind::BodyCut
    } else {
        // hyper's "connection closed before message completed" carries no I/O error.
        TransportKind::Reset
    };
    Transport::new(kind, phase_of(kind))
}

/// hyper's message for a response head over its limits (`Parse::TooLarge`).
const HEAD_TOO_LARGE: &str = "message head is too large";

/// Whether the response's status line and headers were larger than hyper accepts
/// (its buffer, about 400 KiB, or 100 headers).
pub(crate) fn head_too_large(e: &reqwest::Error) -> bool {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if let Some(h) = err.downcast_ref::<hyper::Error>() {
            // `is_parse_too_large` exists only with hyper's `server` feature; without
            // it, the kind shows in the parse error's message alone.
            return h.is_parse() && h.to_string().starts_with(HEAD_TOO_LARGE);
        }
        cur = err.source();
    }
    false
}
