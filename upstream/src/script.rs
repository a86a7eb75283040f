//! A scripted [`Fault`] as a verdict.

use core::time::Duration;

use steadfast_core::provider::Provider;

use crate::answer::{Body, Delivery, Filler};
use crate::fault::Fault;
use crate::server::overloaded;
use crate::verdict::{Fate, Verdict};
use crate::wire::headers::header;
use crate::wire::success::{Rendered, Success};

/// What `fault` does to a request whose success would be `success`.
pub(crate) fn verdict(fault: Fault, provider: Provider, success: &Success, id: &str) -> Verdict {
    let label = fault.kind_name();
    let done = |delivery, malformed, pad| {
        Verdict::of(Fate::Done {
            delivery,
            malformed,
            pad,
        })
    };
    let v = match fault {
        Fault::Ok | Fault::ResetBeforeRequest | Fault::ToolCall { .. } => {
            Verdict::ok(Duration::ZERO)
        }
        Fault::Status {
            status: 200,
            body: None,
            headers,
            ..
        } => {
            let mut v = Verdict::ok(Duration::ZERO);
            v.headers = headers;
            v
        }
        Fault::Status {
            status,
            retry_after,
            retry_after_ms,
            body,
            headers,
        } => scripted_status(
            provider,
            id,
            status,
            (retry_after, retry_after_ms),
            body,
            headers,
        ),
        Fault::Latency { ms } => Verdict::ok(Duration::from_millis(ms)),
        Fault::Hang => Verdict::of(Fate::Hang),
        Fault::Reset => Verdict::of(Fate::Lost),
        Fault::Malformed => done(Delivery::Whole, true, 0),
        Fault::TruncatedBody => done(Delivery::Truncated, false, 0),
        Fault::StreamCut { after_events } => {
            let delivery = match success.call.stream {
                true => Delivery::Cut(after_events),
                false => Delivery::Truncated,
            };
            done(delivery, false, 0)
        }
        Fault::StreamError { after_events } => match success.call.stream {
            true => Verdict::of(Fate::StreamError(after_events)),
            false => Verdict::status(provider, overloaded(provider), id),
        },
        Fault::Trickle { bytes_per_sec } => done(Delivery::Trickle(bytes_per_sec.max(1)), false, 0),
        Fault::HugeBody { bytes } => {
            let plain = success.render().bytes().len();
            done(Delivery::Whole, false, bytes.saturating_sub(plain))
        }
        Fault::HugeHeader { bytes } => {
            let mut v = Verdict::ok(Duration::ZERO);
            v.headers.push(header("x-mock-padding", "a".repeat(bytes)));
            v
        }
        Fault::Filler {
            bytes,
            piece,
            every_ms,
            chunked,
            after_first_event,
        } => {
            let first = match success.render() {
                Rendered::Events(events) if after_first_event => {
                    events.into_iter().next().map(|(_, e)| e)
                }
                _ => None,
            };
            Verdict::of(Fate::Filler(Filler {
                bytes,
                piece: usize::try_from(piece.max(1)).unwrap_or(1),
                every: Duration::from_millis(every_ms),
                chunked: chunked || bytes.is_none(),
                first,
                stream: success.call.stream,
            }))
        }
    };
    v.label(label)
}

fn scripted_status(
    provider: Provider,
    id: &str,
    status: u16,
    (retry_after, retry_after_ms): (Option<String>, Option<String>),
    body: Option<String>,
    headers: Vec<(String, String)>,
) -> Verdict {
    let mut v = match body {
        Some(text) => Verdict::error(status, text.into_bytes()),
        None => Verdict::status(provider, status, id),
    };
    v.headers
        .extend(retry_after.map(|r| header("retry-after", r)));
    v.headers
        .extend(retry_after_ms.map(|r| header("retry-after-ms", r)));
    let content_type = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-type"))
        .map(|(_, t)| t.clone());
    v.headers.extend(
        headers
            .into_iter()
            .filter(|(n, _)| !n.eq_ignore_ascii_case("content-type")),
    );
    if let (
        Some(ct),
        Fate::Error {
            body: Body::Bytes { content_type, .. },
            ..
        },
    ) = (content_type, &mut v.fate)
    {
        *content_type = ct;
    }
    v
}
