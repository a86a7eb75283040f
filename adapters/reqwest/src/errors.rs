//! reqwest's errors as the core's transport failures: a plain translation.

use steadfast_core::outcome::Transport;
use steadfast_http::outcome::{ClientErrorFacts, client_transport, find_io_error};

/// What failed, given whether a status line had arrived when it did.
pub(crate) fn transport(e: &reqwest::Error, status_seen: bool) -> Transport {
    client_transport(ClientErrorFacts {
        connect: e.is_connect(),
        timeout: e.is_timeout(),
        builder: e.is_builder(),
        io: find_io_error(e).map(|io| io.kind()),
        status_seen,
    })
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
