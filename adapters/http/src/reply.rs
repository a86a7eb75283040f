//! A successful call's result and what the SDKs let one read of it: the text, the
//! token usage, who served it, and the body as one's own type.

use serde::de::DeserializeOwned;
use serde_json::Value;
use steadfast_core::ids::Target;

use crate::fallback::Degraded;
use crate::provider::Provider;

/// A successful call's result.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Reply {
    /// The response body: a `chat.completion` for a canonical call (whichever provider
    /// answered), else the answering provider's own body.
    pub body: Value,
    /// Attempts made in all (a fallback endpoint's included).
    pub attempts: u32,
    /// Where the answering attempt went: endpoints are numbered in registration order,
    /// fallback endpoints after the primary ones. `None` for a stored or template reply.
    pub target: Option<Target>,
    /// Set when a fallback produced the reply.
    pub degraded: Option<Degraded>,
    /// The endpoint that answered, by name, provider and model. `None` for a stored
    /// or template reply.
    pub served_by: Option<ServedBy>,
    /// Whether the body was read whole, or passed on as it came.
    kept: Kept,
}

/// How a reply holds its answer.
#[derive(Debug, Clone, PartialEq)]
enum Kept {
    /// As [`Reply::body`].
    Whole,
    /// Only as its facts (see [`crate::Session::passing_through`]): the face sends the
    /// bytes it read.
    Passed(AnswerFacts),
}

/// Who answered a call.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServedBy {
    /// The endpoint's name ([`EndpointDef::name`](crate::EndpointDef::name), else its
    /// provider's name, numbered when shared: `openai#2`).
    pub endpoint: String,
    /// The API it speaks.
    pub provider: Provider,
    /// The model the response names, else the one the endpoint forces.
    pub model: Option<String>,
}

/// Tokens a reply reports, in either provider's terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct TokenUsage {
    /// Prompt tokens (`prompt_tokens`, `input_tokens`).
    pub input_tokens: u64,
    /// Generated tokens (`completion_tokens`, `output_tokens`).
    pub output_tokens: u64,
    /// Their sum (`total_tokens`, or computed).
    pub total_tokens: u64,
}

impl Reply {
    /// A reply of `body` after `attempts`, not degraded.
    pub fn new(body: Value, attempts: u32) -> Reply {
        Reply {
            body,
            attempts,
            target: None,
            degraded: None,
            served_by: None,
            kept: Kept::Whole,
        }
    }

    /// The reply of an answer the session read whole (`Answered::Whole`) or only for
    /// its facts, served by `served_by`.
    pub(crate) fn answered(
        answer: Answered,
        attempts: u32,
        served_by: impl FnOnce(Option<&str>) -> Option<ServedBy>,
    ) -> Reply {
        let (body, kept, served_by) = match answer {
            Answered::Whole(body) => {
                let by = served_by(body.get("model").and_then(Value::as_str));
                (body, Kept::Whole, by)
            }
            Answered::Passed(facts) => {
                let by = served_by(facts.model.as_deref());
                (Value::Null, Kept::Passed(facts), by)
            }
        };
        Reply {
            served_by,
            kept,
            ..Reply::new(body, attempts)
        }
    }

    /// Whether the answer was passed on as it came (see
    /// [`Session::passing_through`](crate::Session::passing_through)): its
    /// [`body`](Reply::body) is then `null`, and the face holds the bytes; the
    /// [`usage`](Reply::usage) and [`served_by`](Reply::served_by) are still read from
    /// them.
    pub fn is_passed_through(&self) -> bool {
        matches!(self.kept, Kept::Passed(_))
    }

    /// What the reply tells of its answer.
    pub(crate) fn facts(&self) -> AnswerFacts {
        match &self.kept {
            Kept::Whole => AnswerFacts::of(&self.body),
            Kept::Passed(facts) => facts.clone(),
        }
    }

    /// Whether a fallback produced the reply.
    pub fn is_degraded(&self) -> bool {
        self.degraded.is_some()
    }

    /// The generated text: the first choice's `message.content` (a `chat.completion`),
    /// or the `text` blocks of an Anthropic message, joined. `None` when the reply has
    /// no text (a tool call alone, a template without it).
    ///
    /// ```
    /// use steadfast_http::Reply;
    /// let openai = serde_json::json!({"choices": [{"message": {"role": "assistant", "content": "Hi"}}]});
    /// assert_eq!(Reply::new(openai, 1).text().as_deref(), Some("Hi"));
    /// let anthropic = serde_json::json!({"content": [{"type": "text", "text": "Hi"}, {"type": "text", "text": "!"}]});
    /// assert_eq!(Reply::new(anthropic, 1).text().as_deref(), Some("Hi!"));
    /// ```
    pub fn text(&self) -> Option<String> {
        text_of(&self.body)
    }

    /// The token usage the body reports, in either provider's terms.
    ///
    /// ```
    /// use steadfast_http::Reply;
    /// let body = serde_json::json!({"usage": {"input_tokens": 12, "output_tokens": 3}});
    /// let usage = Reply::new(body, 1).usage().unwrap();
    /// assert_eq!((usage.input_tokens, usage.output_tokens, usage.total_tokens), (12, 3, 15));
    /// ```
    pub fn usage(&self) -> Option<TokenUsage> {
        match &self.kept {
            Kept::Whole => usage_of(&self.body),
            Kept::Passed(facts) => facts.usage,
        }
    }

    /// Who answered: the endpoint's name, its provider and the model.
    ///
    /// ```
    /// use steadfast_http::Reply;
    /// // A template fallback's reply names no endpoint.
    /// assert!(Reply::new(serde_json::json!({}), 0).served_by().is_none());
    /// ```
    pub fn served_by(&self) -> Option<&ServedBy> {
        self.served_by.as_ref()
    }

    /// The body as `T` (async-openai's response types, or one's own).
    ///
    /// ```
    /// use steadfast_http::Reply;
    /// #[derive(serde::Deserialize)]
    /// struct Completion { id: String }
    /// let reply = Reply::new(serde_json::json!({"id": "chatcmpl-1", "object": "chat.completion"}), 1);
    /// assert_eq!(reply.json::<Completion>().unwrap().id, "chatcmpl-1");
    /// ```
    pub fn json<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        T::deserialize(&self.body)
    }
}

/// The text of a `chat.completion` or an Anthropic message.
pub(crate) fn text_of(body: &Value) -> Option<String> {
    if let Some(content) = body.pointer("/choices/0/message/content") {
        return match content {
            Value::String(s) => Some(s.clone()),
            Value::Array(parts) => joined(parts),
            _ => None,
        };
    }
    joined(body.get("content")?.as_array()?)
}

/// The `text` of every text block or part, joined; `None` when there is none.
fn joined(parts: &[Value]) -> Option<String> {
    let mut texts = parts
        .iter()
        .filter(|p| p.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|p| p.get("text").and_then(Value::as_str))
        .peekable();
    texts.peek()?;
    Some(texts.collect())
}

/// The usage of a body of either provider; `None` when it reports no count at all.
pub(crate) fn usage_of(body: &Value) -> Option<TokenUsage> {
    Counts::of(body.get("usage")?).usage()
}

/// A successful attempt's answer as a session keeps it until the reply.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Answered {
    /// Read whole (and translated, when the call is).
    Whole(Value),
    /// Passed on as it came: read only for its facts.
    Passed(AnswerFacts),
}

impl Answered {
    /// What it tells of itself.
    pub(crate) fn facts(&self) -> AnswerFacts {
        match self {
            Answered::Whole(body) => AnswerFacts::of(body),
            Answered::Passed(facts) => facts.clone(),
        }
    }

    /// Its body as a value (`null` for one passed on as it came).
    pub(crate) fn into_value(self) -> Value {
        match self {
            Answered::Whole(body) => body,
            Answered::Passed(_) => Value::Null,
        }
    }
}

/// What an answer tells of itself: the model it names and the tokens it used.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct AnswerFacts {
    /// Its `model`, when that is a string.
    pub model: Option<String>,
    /// Its usage.
    pub usage: Option<TokenUsage>,
}

impl AnswerFacts {
    /// The facts of a body of either provider.
    pub(crate) fn of(body: &Value) -> AnswerFacts {
        AnswerFacts {
            model: body.get("model").and_then(Value::as_str).map(str::to_owned),
            usage: usage_of(body),
        }
    }
}

/// The counts of a `usage` object, in either provider's names: each a non-negative
/// integer, else unknown.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    prompt: Option<u64>,
    input: Option<u64>,
    completion: Option<u64>,
    output: Option<u64>,
    total: Option<u64>,
}

impl Counts {
    /// The names of the counts read.
    pub(crate) const NAMES: [&'static str; 5] = [
        "prompt_tokens",
        "input_tokens",
        "completion_tokens",
        "output_tokens",
        "total_tokens",
    ];

    /// The counts of a `usage` value (none when it is not an object).
    fn of(usage: &Value) -> Counts {
        let mut counts = Counts::default();
        for name in Counts::NAMES {
            counts.set(name, usage.get(name).and_then(Value::as_u64));
        }
        counts
    }

    /// Sets the count `name` (one of [`Counts::NAMES`]) to `n`.
    pub(crate) fn set(&mut self, name: &str, n: Option<u64>) {
        let slot = match name {
            "prompt_tokens" => &mut self.prompt,
            "input_tokens" => &mut self.input,
            "completion_tokens" => &mut self.completion,
            "output_tokens" => &mut self.output,
            "total_tokens" => &mut self.total,
            _ => return,
        };
        *slot = n;
    }

    /// The usage they give; `None` when there is no count at all.
    pub(crate) fn usage(self) -> Option<TokenUsage> {
        let input = self.prompt.or(self.input);
        let output = self.completion.or(self.output);
        if input.is_none() && output.is_none() && self.total.is_none() {
            return None;
        }
        let (input, output) = (input.unwrap_or(0), output.unwrap_or(0));
        Some(TokenUsage {
            input_tokens: input,
            output_tokens: output,
            total_tokens: self.total.unwrap_or(input.saturating_add(output)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_of_both_shapes_and_none_without_text() {
        let parts = json!({"choices": [{"message": {"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}}]});
        assert_eq!(text_of(&parts).as_deref(), Some("ab"));
        let tool_only = json!({"choices": [{"message": {"content": null, "tool_calls": []}}]});
        assert_eq!(text_of(&tool_only), None);
        let tool_use =
            json!({"content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}]});
        assert_eq!(text_of(&tool_use), None);
        assert_eq!(text_of(&json!({"x": 1})), None);
    }

    #[test]
    fn usage_of_both_shapes() {
        let u = usage_of(
            &json!({"usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 9}}),
        );
        assert_eq!(
            u,
            Some(TokenUsage {
                input_tokens: 5,
                output_tokens: 2,
                total_tokens: 9
            })
        );
        assert_eq!(usage_of(&json!({"usage": {}})), None);
        assert_eq!(usage_of(&json!({})), None);
    }
}
