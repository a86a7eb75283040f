//! ureq's errors as the core's transport failures: a plain translation.

use steadfast_core::outcome::{Phase, Transport, TransportKind};
use steadfast_http::outcome::{io_kind, phase_of};
use ureq::Timeout;

/// What failed, given whether a status line had arrived when it did.
pub fn transport(e: &ureq::Error, status_seen: bool) -> Transport {
    use TransportKind as K;
    let kind = match e {
        ureq::Error::Timeout(Timeout::Resolve) => K::Dns,
        ureq::Error::Timeout(Timeout::Connect) => K::ConnectTimeout,
        ureq::Error::Timeout(_) => K::Timeout,
        ureq::Error::HostNotFound => K::Dns,
        ureq::Error::ConnectionFailed => {
            return Transport::new(K::Other, Phase::BeforeSend);
        }
        ureq::Error::Io(io) => io_kind(io.kind(), status_seen),
        ureq::Error::Tls(_) | ureq::Error::Pem(_) | ureq::Error::Rustls(_) => K::Tls,
        ureq::Error::Http(_) | ureq::Error::BadUri(_) | ureq::Error::InvalidProxyUrl => {
            return Transport::new(K::Other, Phase::BeforeSend);
        }
        ureq::Error::Protocol(_) if status_seen => K::BodyCut,
        ureq::Error::Protocol(_) => K::Reset,
        _ => K::Other,
    };
    Transport::new(kind, phase_of(kind))
}
