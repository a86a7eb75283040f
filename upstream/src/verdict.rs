//! A request's fate, decided by the script or the scenario before it becomes bytes.

use core::time::Duration;

use steadfast_core::provider::Provider;

use crate::answer::{Body, Delivery, Filler};
use crate::wire::errors::status_body;
use crate::wire::headers::Header;

/// What happens to a request.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Fate {
    /// The work is done and a success goes out (possibly broken on the way).
    Done {
        delivery: Delivery,
        malformed: bool,
        pad: usize,
    },
    /// The work is done and the connection resets before the answer.
    Lost,
    /// No work: an error answer.
    Error { status: u16, body: Body },
    /// No work: never answered.
    Hang,
    /// No work: reset before a status line.
    Reset,
    /// No work: the connection is refused.
    Refused,
    /// No work: filler.
    Filler(Filler),
    /// No work: a stream that starts as a success does, then after this many events
    /// ends with the provider's error event.
    StreamError(u32),
}

/// A fate with when it comes and what it says.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Verdict {
    pub fate: Fate,
    pub after: Duration,
    pub headers: Vec<Header>,
    /// The exact wait a 429 asks for.
    pub retry_after: Option<Duration>,
    /// The stats label of the fault applied.
    pub label: Option<&'static str>,
}

impl Verdict {
    /// A plain success after `after`.
    pub fn ok(after: Duration) -> Verdict {
        Verdict::of(Fate::Done {
            delivery: Delivery::Whole,
            malformed: false,
            pad: 0,
        })
        .after(after)
    }

    /// This fate at once, unlabelled.
    pub fn of(fate: Fate) -> Verdict {
        Verdict {
            fate,
            after: Duration::ZERO,
            headers: Vec::new(),
            retry_after: None,
            label: None,
        }
    }

    /// An error with a raw body.
    pub fn error(status: u16, body: Vec<u8>) -> Verdict {
        Verdict::of(Fate::Error {
            status,
            body: Body::json(body),
        })
    }

    /// An error with the provider's body for the status.
    pub fn status(provider: Provider, status: u16, request_id: &str) -> Verdict {
        Verdict::error(status, status_body(provider, status, request_id))
    }

    #[must_use]
    pub fn after(mut self, after: Duration) -> Verdict {
        self.after = after;
        self
    }

    #[must_use]
    pub fn label(mut self, label: &'static str) -> Verdict {
        self.label = Some(label);
        self
    }

    /// Whether the request got through whole (its identity's failures start afresh).
    pub fn is_clean_success(&self) -> bool {
        matches!(
            self.fate,
            Fate::Done {
                delivery: Delivery::Whole | Delivery::Trickle(_),
                malformed: false,
                ..
            }
        )
    }
}
