//! What spans and metrics say of an endpoint, an attempt and a call, in the
//! OpenTelemetry GenAI conventions' terms. Nothing here is secret: providers, host
//! names, ports, model names, status codes and failure kinds.

// Without `tracing` and `otel` the facts are gathered for nothing to read them.
#![cfg_attr(not(any(feature = "tracing", feature = "otel")), allow(dead_code))]

use std::borrow::Cow;

#[cfg(test)]
use serde_json::Value;
use steadfast_core::outcome::{BodyState, Outcome, TransportKind};
use steadfast_core::retry::GiveUpReason;

use crate::provider::Provider;
use crate::reply::AnswerFacts;

/// `gen_ai.operation.name`: steadfast makes chat calls only.
pub(crate) const OPERATION: &str = "chat";

/// An endpoint as its spans and metrics name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EndpointFacts {
    /// `gen_ai.provider.name`.
    pub provider: &'static str,
    /// `server.address`: the URL's host.
    pub address: Option<String>,
    /// `server.port`: the URL's port, or its scheme's.
    pub port: Option<u16>,
    /// The model the endpoint forces on every request, if it does.
    pub model: Option<String>,
}

impl EndpointFacts {
    /// The facts of an endpoint posting to `url`.
    pub(crate) fn new(provider: Provider, url: &str, model: Option<&str>) -> EndpointFacts {
        let uri = url.parse::<http::Uri>().ok();
        let address = uri.as_ref().and_then(http::Uri::host).map(|h| {
            // An IPv6 host is written in brackets in a URL, not in `server.address`.
            h.trim_start_matches('[').trim_end_matches(']').to_owned()
        });
        let port = uri.as_ref().and_then(|u| {
            u.port_u16().or(match u.scheme_str() {
                Some("https") => Some(443),
                Some("http") => Some(80),
                _ => None,
            })
        });
        EndpointFacts {
            provider: provider_name(provider),
            address,
            port,
            model: model.map(str::to_owned),
        }
    }
}

/// `gen_ai.provider.name`, as the conventions spell the provider.
pub(crate) fn provider_name(p: Provider) -> &'static str {
    match p {
        Provider::OpenAi => "openai",
        Provider::Anthropic => "anthropic",
    }
}

/// Why an attempt (or a call) failed, as `error.type`: the status code, the kind of
/// transport failure, or why the call gave up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ErrorType {
    /// A status that is not a success.
    Status(u16),
    /// A success status whose body was not the answer.
    Body(BodyState),
    /// A failure below HTTP.
    Transport(TransportKind),
    /// The attempt was given up by the caller.
    Cancelled,
    /// The call gave up (before any attempt failed, or with none).
    GaveUp(GiveUpReason),
}

impl ErrorType {
    /// The failure of `outcome`; `None` for a success.
    pub(crate) fn of(outcome: &Outcome) -> Option<ErrorType> {
        match outcome {
            Outcome::Response(r) if !(200..300).contains(&r.status) => {
                Some(ErrorType::Status(r.status))
            }
            Outcome::Response(r) if r.body != BodyState::Complete => Some(ErrorType::Body(r.body)),
            Outcome::Response(_) => None,
            Outcome::Transport(t) => Some(ErrorType::Transport(t.kind)),
            Outcome::Cancelled => Some(ErrorType::Cancelled),
        }
    }

    /// The value of `error.type`.
    pub(crate) fn label(&self) -> Cow<'static, str> {
        Cow::Borrowed(match self {
            ErrorType::Status(s) => return Cow::Owned(s.to_string()),
            ErrorType::Body(BodyState::Malformed) => "malformed_body",
            ErrorType::Body(BodyState::Truncated) => "truncated_body",
            ErrorType::Body(BodyState::TooLarge) => "body_too_large",
            ErrorType::Body(_) => "_OTHER",
            ErrorType::Transport(kind) => transport_name(*kind),
            ErrorType::Cancelled => "cancelled",
            ErrorType::GaveUp(reason) => reason.name(),
        })
    }
}

fn transport_name(kind: TransportKind) -> &'static str {
    match kind {
        TransportKind::Dns => "dns",
        TransportKind::ConnectRefused => "connect_refused",
        TransportKind::ConnectTimeout => "connect_timeout",
        TransportKind::Tls => "tls",
        TransportKind::Timeout => "timeout",
        TransportKind::Reset => "reset",
        TransportKind::BodyCut => "body_cut",
        TransportKind::Other => "_OTHER",
    }
}

/// What an answer body says: the model that answered and the tokens it counted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Answer {
    /// `gen_ai.response.model`.
    pub model: Option<String>,
    /// `gen_ai.usage.input_tokens`.
    pub input_tokens: Option<u64>,
    /// `gen_ai.usage.output_tokens`.
    pub output_tokens: Option<u64>,
}

impl Answer {
    /// The facts of a body of either provider.
    #[cfg(test)]
    pub(crate) fn of(body: &Value) -> Answer {
        Answer::from(AnswerFacts::of(body))
    }
}

impl From<AnswerFacts> for Answer {
    fn from(facts: AnswerFacts) -> Answer {
        Answer {
            model: facts.model,
            input_tokens: facts.usage.map(|u| u.input_tokens),
            output_tokens: facts.usage.map(|u| u.output_tokens),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use steadfast_core::outcome::{Phase, Response, Transport};

    #[test]
    fn endpoint_addresses_and_ports() {
        let f = EndpointFacts::new(
            Provider::Anthropic,
            "https://api.anthropic.com/v1/messages",
            None,
        );
        assert_eq!(
            (f.provider, f.address.as_deref(), f.port),
            ("anthropic", Some("api.anthropic.com"), Some(443))
        );
        let f = EndpointFacts::new(
            Provider::OpenAi,
            "http://127.0.0.1:8080/v1/chat/completions",
            Some("m"),
        );
        assert_eq!(
            (f.address.as_deref(), f.port, f.model.as_deref()),
            (Some("127.0.0.1"), Some(8080), Some("m"))
        );
        let f = EndpointFacts::new(Provider::OpenAi, "http://[::1]:9/v1", None);
        assert_eq!((f.address.as_deref(), f.port), (Some("::1"), Some(9)));
        let f = EndpointFacts::new(Provider::OpenAi, "http://[::1", None);
        assert_eq!((f.address, f.port), (None, None));
    }

    #[test]
    fn error_types() {
        let label = |o: Outcome| ErrorType::of(&o).map(|e| e.label().into_owned());
        assert_eq!(label(Outcome::Response(Response::new(200))), None);
        assert_eq!(
            label(Outcome::Response(Response::new(503))).as_deref(),
            Some("503")
        );
        let bad = Response::new(200).with_body(BodyState::Malformed);
        assert_eq!(
            label(Outcome::Response(bad)).as_deref(),
            Some("malformed_body")
        );
        let t = Transport::new(TransportKind::Timeout, Phase::AfterSend);
        assert_eq!(label(Outcome::Transport(t)).as_deref(), Some("timeout"));
        assert_eq!(
            ErrorType::GaveUp(GiveUpReason::BudgetExhausted).label(),
            "budget_exhausted"
        );
    }

    #[test]
    fn answers_of_both_providers() {
        let openai = serde_json::json!({"model": "gpt-4o-mini-2024", "usage": {"prompt_tokens": 9, "completion_tokens": 3}});
        let a = Answer::of(&openai);
        assert_eq!(
            (a.model.as_deref(), a.input_tokens, a.output_tokens),
            (Some("gpt-4o-mini-2024"), Some(9), Some(3))
        );
        let none = Answer::of(&serde_json::json!({}));
        assert_eq!(none, Answer::default());
    }
}
