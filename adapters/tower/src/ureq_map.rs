//! ureq 3: its results for the blocking executor.

use steadfast_core::outcome::{Phase, Transport, TransportKind};

use crate::outcome::{IntoOutcome, Observed};

/// A ureq call. Turn `http_status_as_error` off on the agent so that error responses
/// come back whole, with their `Retry-After` and rate-limit headers; with it on, a
/// status arrives without them.
impl IntoOutcome for Result<http::Response<ureq::Body>, ureq::Error> {
    type Value = http::Response<ureq::Body>;
    type Error = ureq::Error;

    fn observe(&self) -> Observed<'_> {
        match self {
            Ok(r) => Observed::Response {
                status: r.status().as_u16(),
                headers: Some(r.headers()),
                body: (&[][..]).into(),
            },
            Err(ureq::Error::StatusCode(status)) => Observed::Response {
                status: *status,
                headers: None,
                body: (&[][..]).into(),
            },
            Err(ureq::Error::BodyExceedsLimit(_)) => Observed::Malformed { status: 200 },
            Err(e) => Observed::Transport(transport(e)),
        }
    }

    fn into_result(self) -> Self {
        self
    }
}

fn transport(e: &ureq::Error) -> Transport {
    match e {
        ureq::Error::BodyStalled => Transport::new(TransportKind::Timeout, Phase::AfterSend),
        e => steadfast_ureq::transport_of(e, false),
    }
}
