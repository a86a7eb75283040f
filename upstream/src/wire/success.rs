//! Success bodies: the JSON of a completion, or its server-sent events.

use core::time::Duration;

use serde_json::Value;
use steadfast_core::provider::Provider;

use super::call::{Call, tokens_in};
use super::tool::ToolCall;
use crate::dist::Dist;
use crate::draw::{alnum_id, rng};

mod anthropic;
mod openai;

/// A success the server owes a request, rendered to bytes only by a face that sends
/// it ([`Success::render`]); a stored success is replayed from the same plan, so the
/// replay is byte for byte the first answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Success {
    /// The request.
    pub call: Call,
    /// Seeds the message id and the pauses between events.
    pub seed: u64,
    /// `created` (Unix seconds).
    pub created: u64,
    /// Extra `x`s in the reply (a huge body).
    pub pad: usize,
    /// The pause before each event after the first.
    pub event_latency: Dist,
    /// The tool call the answer makes instead of text (see [`crate::wire::tool`]).
    pub tool: Option<ToolCall>,
    /// A stream broken by an error: this many events, then the provider's error event
    /// ([`crate::Fault::StreamError`]).
    pub error_after: Option<u32>,
}

/// A rendered success.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rendered {
    /// `application/json`.
    Json(Vec<u8>),
    /// `text/event-stream`: each event with the pause before it.
    Events(Vec<(Duration, Vec<u8>)>),
}

impl Rendered {
    /// The bytes as sent (events concatenated).
    pub fn bytes(&self) -> Vec<u8> {
        match self {
            Rendered::Json(b) => b.clone(),
            Rendered::Events(events) => events.iter().flat_map(|(_, e)| e.clone()).collect(),
        }
    }
}

/// What a body says, worked out once for both shapes.
struct Plan<'a> {
    call: &'a Call,
    id: String,
    model: &'a str,
    created: u64,
    seed: u64,
    /// The reply text: cut at a stop sequence or at `max_tokens`, then padded.
    text: String,
    tool: Option<&'a ToolCall>,
    /// Why generation ended.
    finish: Finish,
    input: u64,
    /// Output tokens: of the text (none when it is empty), or of the tool call's
    /// arguments.
    output: u64,
}

/// Why an answer ends, as both providers report it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Finish {
    /// The whole reply: OpenAI's `stop`, Anthropic's `end_turn`.
    End,
    /// Cut at `max_tokens`: OpenAI's `length`, Anthropic's `max_tokens`.
    Length,
    /// Cut before this stop sequence: OpenAI's `stop`, Anthropic's `stop_sequence` with
    /// the sequence in `stop_sequence`.
    Sequence(String),
    /// A tool call: OpenAI's `tool_calls`, Anthropic's `tool_use`.
    Tool,
}

/// The reply as generated: cut before the earliest stop sequence it contains, then at
/// `max_tokens` (a token being four characters, as [`tokens_in`] counts them), and why
/// it ended. Neither provider returns the stop sequence itself in the text.
fn generate(reply: &str, stop: &[String], max_tokens: Option<u64>) -> (String, Finish) {
    let earliest = stop
        .iter()
        .filter_map(|s| reply.find(s.as_str()).map(|at| (at, s)))
        .min_by_key(|(at, _)| *at);
    let (mut text, mut finish) = match earliest {
        Some((at, s)) => (
            reply.get(..at).unwrap_or_default().to_owned(),
            Finish::Sequence(s.clone()),
        ),
        None => (reply.to_owned(), Finish::End),
    };
    let limit = max_tokens.map(|m| usize::try_from(m.saturating_mul(4)).unwrap_or(usize::MAX));
    if let Some(limit) = limit.filter(|l| text.chars().count() > *l) {
        text = text.chars().take(limit).collect();
        finish = Finish::Length;
    }
    (text, finish)
}

impl Success {
    /// The body: JSON, or SSE events for a stream.
    pub fn render(&self) -> Rendered {
        let p = self.plan();
        let c = &self.call;
        match (c.provider, c.stream) {
            (Provider::OpenAi, false) => Rendered::Json(to_vec(&openai::completion(&p))),
            (Provider::Anthropic, false) => Rendered::Json(to_vec(&anthropic::message(&p))),
            (Provider::OpenAi, true) => {
                self.paced(self.broken(openai::events(&p, self.pieces(&p))))
            }
            (Provider::Anthropic, true) => {
                self.paced(self.broken(anthropic::events(&p, self.pieces(&p))))
            }
        }
    }

    /// The events cut after [`Success::error_after`] of them and ended by the
    /// provider's error event: Anthropic's `event: error` with `{"type": "error",
    /// "error": {"type": "overloaded_error", "message": "Overloaded"}}` (the streaming
    /// guide's example of an error event), OpenAI's chunk of an `error` object (which
    /// openai-python's stream raises as an `APIError`).
    fn broken(&self, mut events: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
        let Some(n) = self.error_after else {
            return events;
        };
        events.truncate(usize::try_from(n).unwrap_or(usize::MAX));
        events.push(match self.call.provider {
            Provider::Anthropic => named_event(
                "error",
                &serde_json::json!({"type": "error",
                    "error": {"type": "overloaded_error", "message": "Overloaded"}}),
            ),
            Provider::OpenAi => data_event(&serde_json::json!({"error": {
                "message": "The server had an error while processing your request. Sorry about that!",
                "type": "server_error", "param": null, "code": null}})),
        });
        events
    }

    fn plan(&self) -> Plan<'_> {
        let c = &self.call;
        let (mut text, finish) = match &self.tool {
            Some(_) => (String::new(), Finish::Tool),
            None => generate(&c.reply, &c.stop, c.max_tokens),
        };
        if self.pad > 0 {
            text.push(' ');
            text.extend(core::iter::repeat_n('x', self.pad.saturating_sub(1)));
        }
        let tool = self.tool.as_ref();
        let output = match tool {
            Some(t) => tokens_in(t.arguments_text().chars().count()),
            None if text.is_empty() => 0,
            None => tokens_in(text.chars().count()),
        };
        let id = match c.provider {
            Provider::OpenAi => format!("chatcmpl-{}", alnum_id(self.seed, 29)),
            Provider::Anthropic => format!("msg_{}", alnum_id(self.seed, 24)),
        };
        Plan {
            call: c,
            id,
            model: &c.model,
            created: self.created,
            seed: self.seed,
            text,
            tool,
            finish,
            input: c.input_tokens,
            output,
        }
    }

    /// What the deltas carry: the text, or the tool call's arguments, in pieces.
    fn pieces(&self, p: &Plan) -> Vec<String> {
        match p.tool {
            Some(t) => pieces(&t.arguments_text()),
            None => pieces(&p.text),
        }
    }

    /// The events with their pauses: none before the first.
    fn paced(&self, events: Vec<Vec<u8>>) -> Rendered {
        let mut r = rng(self.seed ^ 0x5eed_e7e7);
        let paced = events
            .into_iter()
            .enumerate()
            .map(|(i, e)| {
                let pause = match i {
                    0 => Duration::ZERO,
                    _ => self.event_latency.sample(&mut r),
                };
                (pause, e)
            })
            .collect();
        Rendered::Events(paced)
    }
}

pub(crate) fn to_vec(v: &Value) -> Vec<u8> {
    serde_json::to_vec(v).unwrap_or_default()
}

/// Sets `key` of the object `v` (nothing when `v` is not an object).
fn put(v: &mut Value, key: &str, value: Value) {
    if let Some(map) = v.as_object_mut() {
        map.insert(key.to_owned(), value);
    }
}

fn data_event(v: &Value) -> Vec<u8> {
    let mut out = b"data: ".to_vec();
    out.extend_from_slice(&to_vec(v));
    out.extend_from_slice(b"\n\n");
    out
}

fn named_event(name: &str, v: &Value) -> Vec<u8> {
    let mut out = format!("event: {name}\ndata: ").into_bytes();
    out.extend_from_slice(&to_vec(v));
    out.extend_from_slice(b"\n\n");
    out
}

/// The reply cut into at most 16 pieces at word boundaries.
fn pieces(reply: &str) -> Vec<String> {
    let words: Vec<&str> = reply.split_inclusive(' ').collect();
    if words.is_empty() {
        return vec![String::new()];
    }
    let per = words.len().div_ceil(16).max(1);
    words.chunks(per).map(|c| c.concat()).collect()
}

/// A body broken on purpose: JSON cut in half, or a stream whose first content event
/// carries cut JSON.
pub fn malformed(r: &Rendered) -> Rendered {
    match r {
        Rendered::Json(bytes) => Rendered::Json(half(bytes).to_vec()),
        Rendered::Events(events) => {
            let mut events = events.clone();
            let delta = events
                .iter()
                .position(|(_, e)| e.starts_with(b"event: content_block_delta"));
            let target = delta.unwrap_or_else(|| events.len().min(2).saturating_sub(1));
            if let Some((_, ev)) = events.get_mut(target) {
                cut_payload(ev);
            }
            Rendered::Events(events)
        }
    }
}

/// The first half of `bytes`.
pub fn half(bytes: &[u8]) -> &[u8] {
    bytes.get(..bytes.len() / 2).unwrap_or_default()
}

fn cut_payload(ev: &mut Vec<u8>) {
    let Some(start) = ev.windows(6).rposition(|w| w == b"data: ") else {
        return;
    };
    let payload_start = start.saturating_add(6);
    let payload_len = ev.len().saturating_sub(payload_start.saturating_add(2));
    ev.truncate(payload_start.saturating_add(payload_len / 2));
    ev.extend_from_slice(b"\n\n");
}

#[cfg(test)]
#[allow(clippy::arithmetic_side_effects)]
mod tests {
    use super::*;

    fn success(provider: Provider, body: &str) -> Success {
        Success {
            call: Call::parse(provider, body.as_bytes()).unwrap(),
            seed: 1,
            created: 2,
            pad: 0,
            event_latency: Dist::Fixed(Duration::from_millis(5)),
            tool: None,
            error_after: None,
        }
    }

    #[test]
    fn json_echoes_and_counts() {
        let s = success(
            Provider::OpenAi,
            r#"{"model":"gpt-x","messages":[{"role":"user","content":"hello there"}]}"#,
        );
        let Rendered::Json(bytes) = s.render() else {
            panic!()
        };
        let v: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(v["choices"][0]["message"]["content"], "hello there");
        assert_eq!(v["usage"]["total_tokens"], 6);
        assert_eq!(s.render(), s.render(), "a replay is the same bytes");
        let padded = Success {
            pad: 10_000,
            ..s.clone()
        }
        .render()
        .bytes()
        .len();
        assert!(padded >= s.render().bytes().len() + 10_000);
    }

    #[test]
    fn streams_are_paced_and_end_right() {
        let s = success(
            Provider::Anthropic,
            r#"{"model":"claude","stream":true,"messages":[{"role":"user","content":"a b c"}]}"#,
        );
        let Rendered::Events(events) = s.render() else {
            panic!()
        };
        assert_eq!(events[0].0, Duration::ZERO);
        assert!(
            events[1..]
                .iter()
                .all(|(p, _)| *p == Duration::from_millis(5))
        );
        let text = String::from_utf8(s.render().bytes()).unwrap();
        assert!(text.starts_with("event: message_start\n"));
        assert!(text.ends_with("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"));
        let s = success(
            Provider::OpenAi,
            r#"{"stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"x"}]}"#,
        );
        let Rendered::Events(events) = s.render() else {
            panic!()
        };
        assert_eq!(events.last().unwrap().1, b"data: [DONE]\n\n");
        let Rendered::Events(broken) = malformed(&s.render()) else {
            panic!()
        };
        assert_eq!(broken.len(), events.len());
        assert_ne!(broken[1], events[1]);
    }
}
