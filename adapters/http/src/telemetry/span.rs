//! The `tracing` spans of a call and of its attempts (with the `tracing` feature; a
//! no-op otherwise). Both are named `chat` (a `tracing` span name is fixed where it is
//! written) and carry the conventions' name, `chat {gen_ai.request.model}`, in the
//! `otel.name` field that `tracing-opentelemetry` exports as the span's name, with
//! `otel.kind = "client"` and, on failure, `otel.status_code = "error"`.

// Without `tracing` and `otel` the facts are gathered for nothing to read them.
#![cfg_attr(not(any(feature = "tracing", feature = "otel")), allow(dead_code))]

use steadfast_core::ids::{AttemptId, Target};

use super::End;
use super::facts::{Answer, EndpointFacts, ErrorType};

/// A span the faces run their work in: the call's (around the whole driver loop) or an
/// attempt's (around its exchange). Without the `tracing` feature it is nothing.
#[derive(Debug, Clone)]
pub struct SpanHandle {
    #[cfg(feature = "tracing")]
    span: tracing::Span,
}

/// A span entered on this thread until dropped (see [`SpanHandle::entered`]).
#[derive(Debug)]
#[must_use = "the span is left when this is dropped"]
pub struct EnteredSpan {
    #[cfg(feature = "tracing")]
    _entered: tracing::span::EnteredSpan,
}

impl SpanHandle {
    fn none() -> SpanHandle {
        SpanHandle {
            #[cfg(feature = "tracing")]
            span: tracing::Span::none(),
        }
    }

    /// `fut`, run inside the span: each poll enters it and leaves it before returning,
    /// so no span is held across an `.await` of anything else.
    pub fn instrument<F: Future>(&self, fut: F) -> impl Future<Output = F::Output> {
        #[cfg(feature = "tracing")]
        {
            tracing::Instrument::instrument(fut, self.span.clone())
        }
        #[cfg(not(feature = "tracing"))]
        {
            fut
        }
    }

    /// Enters the span on this thread until the guard is dropped (for a blocking face).
    pub fn entered(self) -> EnteredSpan {
        EnteredSpan {
            #[cfg(feature = "tracing")]
            _entered: self.span.entered(),
        }
    }
}

/// A call's span and its in-flight attempts' (two while a hedge races its attempt),
/// the latest last.
#[derive(Debug)]
pub(crate) struct Spans {
    call: SpanHandle,
    attempts: Vec<(AttemptId, SpanHandle)>,
}

/// What an attempt's span starts with.
pub(crate) struct AttemptStart<'a> {
    pub id: AttemptId,
    /// Whether it is a hedge beside an attempt still running.
    pub hedge: bool,
    pub facts: Option<&'a EndpointFacts>,
    pub model: Option<&'a str>,
    /// The attempt's ordinal in the call (fallback calls included), from 1.
    pub n: u32,
    pub target: Target,
    pub endpoint: Option<&'a str>,
}

#[cfg(feature = "tracing")]
fn otel_name(model: Option<&str>) -> String {
    match model {
        Some(m) => format!("{} {m}", super::facts::OPERATION),
        None => super::facts::OPERATION.to_owned(),
    }
}

impl Spans {
    /// The span of a call (a stream when `stream`) of a request naming `model`;
    /// `prompt` is the request's messages as JSON when the client records them.
    pub(crate) fn call(model: Option<&str>, stream: bool, prompt: Option<Prompt>) -> Spans {
        #[cfg(feature = "tracing")]
        {
            use tracing::field::Empty;
            let span = tracing::info_span!(
                target: "steadfast",
                "chat",
                otel.name = otel_name(model),
                otel.kind = "client",
                otel.status_code = Empty,
                gen_ai.operation.name = super::facts::OPERATION,
                gen_ai.provider.name = Empty,
                gen_ai.request.model = model,
                gen_ai.response.model = Empty,
                gen_ai.usage.input_tokens = Empty,
                gen_ai.usage.output_tokens = Empty,
                gen_ai.input.messages = Empty,
                gen_ai.system_instructions = Empty,
                server.address = Empty,
                server.port = Empty,
                http.response.status_code = Empty,
                error.type = Empty,
                steadfast.stream = stream,
                steadfast.attempts = Empty,
                steadfast.endpoint = Empty,
                steadfast.give_up.reason = Empty,
                steadfast.fallback = Empty,
            );
            if let Some(p) = prompt {
                span.record("gen_ai.input.messages", p.messages);
                span.record("gen_ai.system_instructions", p.system);
            }
            Spans {
                call: SpanHandle { span },
                attempts: Vec::new(),
            }
        }
        #[cfg(not(feature = "tracing"))]
        {
            let _ = (model, stream, prompt);
            Spans {
                call: SpanHandle::none(),
                attempts: Vec::new(),
            }
        }
    }

    /// Spans that record nothing.
    pub(crate) fn idle() -> Spans {
        Spans {
            call: SpanHandle::none(),
            attempts: Vec::new(),
        }
    }

    /// The call's span.
    pub(crate) fn call_span(&self) -> SpanHandle {
        self.call.clone()
    }

    /// The latest attempt's span (none before the first).
    pub(crate) fn attempt_span(&self) -> SpanHandle {
        self.attempts
            .last()
            .map_or_else(SpanHandle::none, |(_, s)| s.clone())
    }

    /// Takes attempt `id`'s span out of those in flight.
    fn take(&mut self, id: AttemptId) -> Option<SpanHandle> {
        let i = self.attempts.iter().position(|(a, _)| *a == id)?;
        Some(self.attempts.remove(i).1)
    }

    /// Opens the span of an attempt, a child of the call's; the call's span names
    /// where the latest attempt went.
    pub(crate) fn attempt(&mut self, a: &AttemptStart<'_>) {
        #[cfg(feature = "tracing")]
        {
            use tracing::field::Empty;
            let (provider, address, port) = match a.facts {
                Some(f) => (Some(f.provider), f.address.as_deref(), f.port),
                None => (None, None, None),
            };
            let span = tracing::info_span!(
                target: "steadfast",
                parent: &self.call.span,
                "chat",
                otel.name = otel_name(a.model),
                otel.kind = "client",
                otel.status_code = Empty,
                gen_ai.operation.name = super::facts::OPERATION,
                gen_ai.provider.name = provider,
                gen_ai.request.model = a.model,
                gen_ai.response.model = Empty,
                gen_ai.usage.input_tokens = Empty,
                gen_ai.usage.output_tokens = Empty,
                server.address = address,
                server.port = port,
                http.response.status_code = Empty,
                http.request.resend_count = Empty,
                error.type = Empty,
                steadfast.attempt = a.n,
                steadfast.endpoint = a.endpoint,
                steadfast.key = a.target.key.0,
                steadfast.hedge = a.hedge,
                steadfast.cancelled = Empty,
            );
            if a.n > 1 {
                span.record("http.request.resend_count", a.n.saturating_sub(1));
            }
            self.attempts.push((a.id, SpanHandle { span }));
            let call = &self.call.span;
            if call.is_disabled() {
                return;
            }
            call.record("otel.name", otel_name(a.model));
            call.record("gen_ai.request.model", a.model);
            call.record("gen_ai.provider.name", provider);
            call.record("server.address", address);
            call.record("server.port", port);
            call.record("steadfast.endpoint", a.endpoint);
        }
        #[cfg(not(feature = "tracing"))]
        let _ = a;
    }

    /// Records that attempt `id` lost a hedge's race (it was dropped unanswered) and
    /// closes its span (once the face's handle is dropped too).
    pub(crate) fn cancelled(&mut self, id: AttemptId) {
        let attempt = self.take(id);
        #[cfg(feature = "tracing")]
        if let Some(a) = attempt {
            a.span.record("steadfast.cancelled", true);
        }
        #[cfg(not(feature = "tracing"))]
        let _ = attempt;
    }

    /// Records how attempt `id` ended and closes its span (once the face's handle is
    /// dropped too).
    pub(crate) fn outcome(
        &mut self,
        id: AttemptId,
        status: Option<u16>,
        error: Option<&ErrorType>,
        answer: Option<&Answer>,
    ) {
        let Some(attempt) = self.take(id) else {
            return;
        };
        #[cfg(feature = "tracing")]
        {
            let s = &attempt.span;
            s.record("http.response.status_code", status);
            if let Some(e) = error {
                s.record("error.type", e.label().as_ref());
                s.record("otel.status_code", "error");
            }
            if let Some(a) = answer {
                record_answer(s, a);
            }
            self.call.span.record("http.response.status_code", status);
        }
        #[cfg(not(feature = "tracing"))]
        let _ = (attempt, status, error, answer);
    }

    /// Records how the call ended.
    pub(crate) fn end(&mut self, end: &End) {
        // An attempt the core timed out before its report closes with the call.
        self.attempts.clear();
        #[cfg(feature = "tracing")]
        {
            let s = &self.call.span;
            s.record("steadfast.attempts", end.attempts);
            if let Some(e) = &end.error {
                s.record("error.type", e.as_ref());
                s.record("otel.status_code", "error");
            }
            s.record("steadfast.give_up.reason", end.reason);
            s.record("steadfast.fallback", end.fallback);
            if let Some(a) = &end.answer {
                record_answer(s, a);
            }
        }
        #[cfg(not(feature = "tracing"))]
        let _ = end;
    }
}

#[cfg(feature = "tracing")]
fn record_answer(s: &tracing::Span, a: &Answer) {
    s.record("gen_ai.response.model", a.model.as_deref());
    s.record("gen_ai.usage.input_tokens", a.input_tokens);
    s.record("gen_ai.usage.output_tokens", a.output_tokens);
}

/// A request's prompt as the opted-in `gen_ai.input.messages` and
/// `gen_ai.system_instructions` attributes (JSON).
pub(crate) struct Prompt {
    pub messages: Option<String>,
    pub system: Option<String>,
}
