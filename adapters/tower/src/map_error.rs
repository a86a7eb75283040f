//! Any client's error as the core's transport failure, by what its source chain holds.

use std::error::Error;

use steadfast_core::outcome::{Phase, Transport, TransportKind};
use steadfast_http::outcome::{find_io_error, io_kind, phase_of};

/// What failed, read from an error's source chain: a reqwest error (feature
/// `reqwest`) by its own mapping, an I/O error by its kind; anything else is a
/// failure that may have come after the request was sent (so it is retried only
/// because the call carries an idempotency key).
pub fn transport_of(e: &(dyn Error + 'static)) -> Transport {
    #[cfg(feature = "reqwest-middleware")]
    if let Some(reqwest_middleware::Error::Reqwest(r)) = e.downcast_ref() {
        // Its `source` skips the reqwest error it wraps.
        return crate::reqwest_map::transport_of_reqwest(r);
    }
    #[cfg(feature = "reqwest")]
    {
        let mut cur: Option<&(dyn Error + 'static)> = Some(e);
        while let Some(err) = cur {
            if let Some(r) = err.downcast_ref::<reqwest13::Error>() {
                return crate::reqwest_map::transport_of_reqwest(r);
            }
            cur = err.source();
        }
    }
    let Some(io) = find_io_error(e) else {
        return Transport::new(TransportKind::Other, Phase::AfterSend);
    };
    let kind = io_kind(io.kind(), false);
    Transport::new(kind, phase_of(kind))
}
