//! What the client sees of an upstream [`Answer`]: the request log's [`Reply`] and the
//! core [`Outcome`], built from the answer's raw status, headers and body through the
//! core's own [`Response::from_http`], as a real adapter builds it from the wire.

use core::time::Duration;

use steadfast_core::outcome::{BodyState, Outcome, Phase, Response, Transport, TransportKind};
use steadfast_upstream::{Answer, Body, Delivery, Reply as Wire};

/// What the server did with one request, as the request log records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Reply {
    /// A 2xx with a good body.
    Ok,
    /// An HTTP status other than a good 2xx.
    Status(u16),
    /// A 200 whose body is malformed.
    Malformed,
    /// A 200 whose body stopped before its end.
    Cut,
    /// The connection was reset before a status line.
    Reset,
    /// The connection was refused.
    Refused,
    /// No answer before the attempt's deadline.
    Timeout,
}

/// The five outcome classes reports and pictures use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum OutcomeClass {
    /// Success.
    Ok,
    /// 429.
    Throttled,
    /// 5xx, including 529.
    ServerError,
    /// No answer in time.
    Timeout,
    /// Everything else: 4xx but 429, malformed or cut bodies, resets, refusals.
    Other,
}

impl OutcomeClass {
    /// Every class, in report order.
    pub const ALL: [OutcomeClass; 5] = [
        OutcomeClass::Ok,
        OutcomeClass::Throttled,
        OutcomeClass::ServerError,
        OutcomeClass::Timeout,
        OutcomeClass::Other,
    ];

    /// The class's name in reports.
    pub fn name(self) -> &'static str {
        match self {
            OutcomeClass::Ok => "ok",
            OutcomeClass::Throttled => "429",
            OutcomeClass::ServerError => "5xx/529",
            OutcomeClass::Timeout => "timeout",
            OutcomeClass::Other => "other",
        }
    }
}

impl Reply {
    /// The reply's class.
    pub fn class(self) -> OutcomeClass {
        match self {
            Reply::Ok => OutcomeClass::Ok,
            Reply::Status(429) => OutcomeClass::Throttled,
            Reply::Status(500..=599) => OutcomeClass::ServerError,
            Reply::Timeout => OutcomeClass::Timeout,
            _ => OutcomeClass::Other,
        }
    }
}

/// The client's view of an answer: the log's reply, when it arrives after the request
/// (`None`: never), and the outcome reported to the core.
pub(crate) fn seen(answer: &Answer, wall: u64) -> (Reply, Option<Duration>, Outcome) {
    let transport = |kind, phase| Outcome::Transport(Transport::new(kind, phase));
    let after = Some(answer.after);
    let h = match &answer.reply {
        Wire::Http(h) => h,
        Wire::Reset => {
            return (
                Reply::Reset,
                after,
                transport(TransportKind::Reset, Phase::AfterSend),
            );
        }
        Wire::Refused => {
            let o = transport(TransportKind::ConnectRefused, Phase::BeforeSend);
            return (Reply::Refused, after, o);
        }
        Wire::Hang => {
            return (
                Reply::Timeout,
                None,
                transport(TransportKind::Timeout, Phase::AfterSend),
            );
        }
    };
    let success = (200..300).contains(&h.status);
    if success && matches!(h.delivery, Delivery::Truncated | Delivery::Cut(_)) {
        return (
            Reply::Cut,
            after,
            transport(TransportKind::BodyCut, Phase::AfterSend),
        );
    }
    let body: &[u8] = match &h.body {
        Body::Bytes { bytes, .. } if !success => bytes,
        _ => b"",
    };
    let headers = h.headers.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes()));
    let response = Response::from_http(h.status, headers, body, wall);
    let broken = matches!(
        h.body,
        Body::Success {
            malformed: true,
            ..
        } | Body::Filler(_)
    );
    let (reply, state) = match (success, broken) {
        (false, _) => (Reply::Status(h.status), BodyState::Complete),
        (true, true) => (Reply::Malformed, BodyState::Malformed),
        (true, false) => (Reply::Ok, BodyState::Complete),
    };
    (reply, after, Outcome::Response(response.with_body(state)))
}
