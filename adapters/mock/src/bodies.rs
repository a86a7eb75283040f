//! What the providers' bodies look like: successes (JSON and SSE streams) and errors.

use crate::util::{alnum_id, ceil_div};
use serde_json::{Value, json};

/// Which API a path belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Provider {
    /// `POST /v1/chat/completions`.
    OpenAi,
    /// `POST /v1/messages`.
    Anthropic,
}

/// A response body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Body {
    /// A body sent whole with a `content-length`.
    Full {
        content_type: String,
        bytes: Vec<u8>,
    },
    /// Server-sent events, one chunk each, `text/event-stream`.
    Events(Vec<Vec<u8>>),
}

impl Body {
    pub fn json(bytes: Vec<u8>) -> Body {
        Body::Full {
            content_type: "application/json".to_owned(),
            bytes,
        }
    }

    /// The body bytes as sent (events concatenated).
    pub fn bytes(&self) -> Vec<u8> {
        match self {
            Body::Full { bytes, .. } => bytes.clone(),
            Body::Events(events) => events.concat(),
        }
    }
}

/// What a request asks for, read from its JSON body.
#[derive(Debug, Clone)]
pub(crate) struct Call {
    pub provider: Provider,
    pub model: String,
    pub stream: bool,
    pub include_usage: bool,
    /// The reply: an echo of the last user message.
    pub reply: String,
    pub prompt_tokens: u64,
}

const MAX_ECHO: usize = 64 * 1024;
const NO_USER_MESSAGE: &str = "Hello from steadfast-mock.";

fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn truncate(mut s: String, max: usize) -> String {
    if s.len() > max {
        let mut cut = max;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
    }
    s
}

impl Call {
    /// Reads a request body; the error is a message for a 400.
    pub fn parse(provider: Provider, body: &[u8]) -> Result<Call, String> {
        let value: Value = serde_json::from_slice(body).map_err(|e| match provider {
            Provider::OpenAi => format!(
                "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.) ({e})"
            ),
            Provider::Anthropic => format!("There was an error parsing the body: {e}"),
        })?;
        if !value.is_object() {
            return Err("The request body must be a JSON object.".to_owned());
        }
        let model = value
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or("mock-model")
            .to_owned();
        let stream = value
            .get("stream")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let include_usage = value
            .pointer("/stream_options/include_usage")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let mut prompt_chars = value
            .get("system")
            .map_or(0, |s| text_of(s).chars().count());
        let mut last_user = None;
        if let Some(messages) = value.get("messages").and_then(Value::as_array) {
            for m in messages {
                let text = m.get("content").map(text_of).unwrap_or_default();
                prompt_chars += text.chars().count();
                if m.get("role").and_then(Value::as_str) == Some("user") {
                    last_user = Some(text);
                }
            }
        }
        let reply = match last_user {
            Some(t) if !t.is_empty() => truncate(t, MAX_ECHO),
            _ => NO_USER_MESSAGE.to_owned(),
        };
        Ok(Call {
            provider,
            model,
            stream,
            include_usage,
            reply,
            prompt_tokens: ceil_div(prompt_chars as u64, 4).max(1),
        })
    }

    fn completion_tokens(&self, reply: &str) -> u64 {
        ceil_div(reply.chars().count() as u64, 4).max(1)
    }

    fn message_id(&self, id_seed: u64) -> String {
        match self.provider {
            Provider::OpenAi => format!("chatcmpl-{}", alnum_id(id_seed, 29)),
            Provider::Anthropic => format!("msg_{}", alnum_id(id_seed, 24)),
        }
    }

    /// The success body: JSON, or SSE events for a stream. `pad` adds that many bytes
    /// of `x` to the reply.
    pub fn success(&self, id_seed: u64, created: u64, pad: usize) -> Body {
        let mut reply = self.reply.clone();
        if pad > 0 {
            reply.push(' ');
            reply.extend(std::iter::repeat_n('x', pad.saturating_sub(1)));
        }
        let id = self.message_id(id_seed);
        let out_tokens = self.completion_tokens(&reply);
        match (self.provider, self.stream) {
            (Provider::OpenAi, false) => Body::json(to_vec(&json!({
                "id": id,
                "object": "chat.completion",
                "created": created,
                "model": self.model,
                "choices": [{
                    "index": 0,
                    "message": {"role": "assistant", "content": reply, "refusal": null},
                    "logprobs": null,
                    "finish_reason": "stop"
                }],
                "usage": {
                    "prompt_tokens": self.prompt_tokens,
                    "completion_tokens": out_tokens,
                    "total_tokens": self.prompt_tokens + out_tokens
                },
                "system_fingerprint": "fp_steadfast_mock"
            }))),
            (Provider::Anthropic, false) => Body::json(to_vec(&json!({
                "id": id,
                "type": "message",
                "role": "assistant",
                "model": self.model,
                "content": [{"type": "text", "text": reply}],
                "stop_reason": "end_turn",
                "stop_sequence": null,
                "usage": {"input_tokens": self.prompt_tokens, "output_tokens": out_tokens}
            }))),
            (Provider::OpenAi, true) => {
                let chunk = |delta: Value, finish: Value| {
                    json!({
                        "id": id,
                        "object": "chat.completion.chunk",
                        "created": created,
                        "model": self.model,
                        "system_fingerprint": "fp_steadfast_mock",
                        "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]
                    })
                };
                let mut events = vec![data_event(&chunk(
                    json!({"role": "assistant", "content": "", "refusal": null}),
                    Value::Null,
                ))];
                for piece in pieces(&reply) {
                    events.push(data_event(&chunk(json!({"content": piece}), Value::Null)));
                }
                events.push(data_event(&chunk(json!({}), json!("stop"))));
                if self.include_usage {
                    events.push(data_event(&json!({
                        "id": id,
                        "object": "chat.completion.chunk",
                        "created": created,
                        "model": self.model,
                        "choices": [],
                        "usage": {
                            "prompt_tokens": self.prompt_tokens,
                            "completion_tokens": out_tokens,
                            "total_tokens": self.prompt_tokens + out_tokens
                        }
                    })));
                }
                events.push(b"data: [DONE]\n\n".to_vec());
                Body::Events(events)
            }
            (Provider::Anthropic, true) => {
                let mut events = vec![named_event(
                    "message_start",
                    &json!({"type": "message_start", "message": {
                        "id": id, "type": "message", "role": "assistant", "model": self.model,
                        "content": [], "stop_reason": null, "stop_sequence": null,
                        "usage": {"input_tokens": self.prompt_tokens, "output_tokens": 1}
                    }}),
                )];
                events.push(named_event(
                    "content_block_start",
                    &json!({"type": "content_block_start", "index": 0,
                            "content_block": {"type": "text", "text": ""}}),
                ));
                for piece in pieces(&reply) {
                    events.push(named_event(
                        "content_block_delta",
                        &json!({"type": "content_block_delta", "index": 0,
                                "delta": {"type": "text_delta", "text": piece}}),
                    ));
                }
                events.push(named_event(
                    "content_block_stop",
                    &json!({"type": "content_block_stop", "index": 0}),
                ));
                events.push(named_event(
                    "message_delta",
                    &json!({"type": "message_delta",
                            "delta": {"stop_reason": "end_turn", "stop_sequence": null},
                            "usage": {"output_tokens": out_tokens}}),
                ));
                events.push(named_event(
                    "message_stop",
                    &json!({"type": "message_stop"}),
                ));
                Body::Events(events)
            }
        }
    }
}

fn to_vec(v: &Value) -> Vec<u8> {
    serde_json::to_vec(v).unwrap_or_default()
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
    let per = ceil_div(words.len() as u64, 16).max(1) as usize;
    words.chunks(per).map(|c| c.concat()).collect()
}

/// A body broken on purpose: JSON cut in half, or a stream whose first content event
/// carries cut JSON.
pub(crate) fn malformed(body: &Body) -> Body {
    match body {
        Body::Full {
            content_type,
            bytes,
        } => Body::Full {
            content_type: content_type.clone(),
            bytes: bytes.get(..bytes.len() / 2).unwrap_or_default().to_vec(),
        },
        Body::Events(events) => {
            let mut events = events.clone();
            let target = events.len().min(2).saturating_sub(1);
            if let Some(ev) = events.get_mut(target) {
                if let Some(start) = ev.windows(6).rposition(|w| w == b"data: ") {
                    let payload_start = start + 6;
                    let payload_len = ev.len().saturating_sub(payload_start + 2);
                    ev.truncate(payload_start + payload_len / 2);
                    ev.extend_from_slice(b"\n\n");
                }
            }
            Body::Events(events)
        }
    }
}

/// An error body in the provider's shape.
pub(crate) fn error_body(
    provider: Provider,
    etype: &str,
    code: Option<&str>,
    message: &str,
    request_id: &str,
) -> Body {
    Body::json(match provider {
        Provider::OpenAi => to_vec(&json!({
            "error": {"message": message, "type": etype, "param": null, "code": code}
        })),
        Provider::Anthropic => to_vec(&json!({
            "type": "error",
            "error": {"type": etype, "message": message},
            "request_id": request_id
        })),
    })
}

/// The realistic error body for a status.
pub(crate) fn status_body(provider: Provider, status: u16, request_id: &str) -> Body {
    let (etype, code, message): (&str, Option<&str>, &str) = match provider {
        Provider::OpenAi => match status {
            401 => (
                "invalid_request_error",
                Some("invalid_api_key"),
                "Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys.",
            ),
            403 => (
                "invalid_request_error",
                Some("unsupported_country_region_territory"),
                "Country, region, or territory not supported",
            ),
            404 => (
                "invalid_request_error",
                Some("model_not_found"),
                "The model does not exist or you do not have access to it.",
            ),
            408 => ("timeout", None, "Request timed out."),
            409 => ("invalid_request_error", Some("conflict"), "Conflict."),
            413 => (
                "invalid_request_error",
                Some("request_too_large"),
                "Request too large.",
            ),
            429 => (
                "requests",
                Some("rate_limit_exceeded"),
                "Rate limit reached for requests per min (RPM). Please try again later.",
            ),
            500 => (
                "server_error",
                None,
                "The server had an error while processing your request. Sorry about that!",
            ),
            502 => ("server_error", None, "Bad gateway."),
            503 => (
                "server_error",
                None,
                "The server is overloaded or not ready yet.",
            ),
            504 => ("server_error", None, "Gateway timeout."),
            s if s >= 500 => ("server_error", None, "The server is overloaded."),
            _ => ("invalid_request_error", None, "The request was rejected."),
        },
        Provider::Anthropic => match status {
            401 => ("authentication_error", None, "invalid x-api-key"),
            402 => (
                "billing_error",
                None,
                "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits.",
            ),
            403 => (
                "permission_error",
                None,
                "Your API key does not have permission to use the specified resource.",
            ),
            404 => (
                "not_found_error",
                None,
                "The requested resource could not be found.",
            ),
            413 => (
                "request_too_large",
                None,
                "Request exceeds the maximum allowed number of bytes.",
            ),
            429 => (
                "rate_limit_error",
                None,
                "Number of request tokens has exceeded your per-minute rate limit. Please try again later.",
            ),
            504 => ("timeout_error", None, "Request timeout."),
            529 => ("overloaded_error", None, "Overloaded"),
            s if s >= 500 => ("api_error", None, "Internal server error"),
            _ => ("invalid_request_error", None, "The request was rejected."),
        },
    };
    error_body(provider, etype, code, message, request_id)
}

/// A gateway's HTML error page (what a load balancer in front of an API sends).
pub(crate) fn gateway_page(status: u16) -> Body {
    let title = format!("{status} {}", crate::http::reason(status));
    Body::Full {
        content_type: "text/html".to_owned(),
        bytes: format!(
            "<html>\r\n<head><title>{title}</title></head>\r\n<body>\r\n<center><h1>{title}</h1></center>\r\n<hr><center>gateway</center>\r\n</body>\r\n</html>\r\n"
        )
        .into_bytes(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(provider: Provider, body: &str) -> Call {
        Call::parse(provider, body.as_bytes()).unwrap()
    }

    #[test]
    fn echo_and_tokens() {
        let c = call(
            Provider::OpenAi,
            r#"{"model":"gpt-x","messages":[{"role":"system","content":"be brief"},{"role":"user","content":[{"type":"text","text":"hello there"}]}]}"#,
        );
        assert_eq!(c.reply, "hello there");
        assert_eq!(c.model, "gpt-x");
        assert_eq!(c.prompt_tokens, 5);
        let Body::Full { bytes, .. } = c.success(1, 2, 0) else {
            panic!()
        };
        let v: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(v["choices"][0]["message"]["content"], "hello there");
        assert_eq!(v["usage"]["total_tokens"], 8);
        assert!(Call::parse(Provider::OpenAi, b"{nope").is_err());
        assert!(Call::parse(Provider::OpenAi, b"[1]").is_err());
    }

    #[test]
    fn streams() {
        let c = call(
            Provider::Anthropic,
            r#"{"model":"claude","stream":true,"messages":[{"role":"user","content":"a b c"}]}"#,
        );
        let Body::Events(events) = c.success(1, 2, 0) else {
            panic!()
        };
        let text = String::from_utf8(events.concat()).unwrap();
        assert!(text.starts_with("event: message_start\n"));
        assert!(text.ends_with("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"));
        let c = call(
            Provider::OpenAi,
            r#"{"stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"x"}]}"#,
        );
        let Body::Events(events) = c.success(1, 2, 0) else {
            panic!()
        };
        assert_eq!(events.last().unwrap(), b"data: [DONE]\n\n");
        assert!(
            String::from_utf8(events[events.len() - 2].clone())
                .unwrap()
                .contains("usage")
        );
        let broken = malformed(&Body::Events(events.clone()));
        let Body::Events(b) = broken else { panic!() };
        assert_eq!(b.len(), events.len());
        assert_ne!(b[1], events[1]);
    }

    #[test]
    fn padding() {
        let c = call(Provider::OpenAi, r#"{"messages":[]}"#);
        let plain = c.success(1, 2, 0).bytes().len();
        let padded = c.success(1, 2, 10_000).bytes().len();
        assert!(padded >= plain + 10_000, "{plain} {padded}");
    }
}
