//! Request bodies (the caller's JSON with the endpoint's model and the stream flag),
//! and response bodies read under a size limit.

use bytes::Bytes;
use serde_json::Value;

use crate::error::Exceeded;

/// The bytes sent for `request` to an endpoint: `model` (when the endpoint sets one)
/// replaces the request's `model`, and a stream gets `"stream": true`. A request that
/// is not a JSON object is sent unchanged (the server will refuse it).
pub fn prepare(request: &Value, model: Option<&str>, stream: bool) -> Bytes {
    let Value::Object(fields) = request else {
        // A face that builds its own body hands the session `null`: no allocation.
        if request.is_null() {
            return Bytes::from_static(b"null");
        }
        return to_bytes(request);
    };
    let named = fields.get("model").and_then(Value::as_str);
    let streams = fields.get("stream") == Some(&Value::Bool(true));
    if goes_as_it_is(named, streams, model, stream) {
        return to_bytes(request);
    }
    let mut fields = fields.clone();
    if let Some(m) = model {
        fields.insert("model".to_owned(), Value::String(m.to_owned()));
    }
    if stream {
        fields.insert("stream".to_owned(), Value::Bool(true));
    }
    to_bytes(&Value::Object(fields))
}

/// Whether a request that names `named` (and asks for a stream when `streams`) goes
/// unchanged to an endpoint that sends `model` (when it names its own) and needs the
/// stream flag when `stream`.
pub(crate) fn goes_as_it_is(
    named: Option<&str>,
    streams: bool,
    model: Option<&str>,
    stream: bool,
) -> bool {
    model.is_none_or(|m| named == Some(m)) && (!stream || streams)
}

fn to_bytes(v: &Value) -> Bytes {
    // Serializing a `Value` cannot fail: its map keys are strings.
    Bytes::from(serde_json::to_vec(v).unwrap_or_default())
}

/// A body read under a size limit: a body that announces, or reaches, more than
/// `limit` bytes is refused at once, so no body holds more than `limit` bytes of
/// memory (the buffer never grows past it). A body that comes in one piece of
/// [`Bytes`] ([`LimitedBody::push_bytes`]) is kept as it came, not copied.
#[derive(Debug)]
pub struct LimitedBody {
    /// The body while it is the one piece pushed as [`Bytes`].
    whole: Bytes,
    /// The body once it is more than that: every piece copied in.
    joined: Vec<u8>,
    /// The announced length, trusted for the first allocation only up to 1 MiB.
    first: usize,
    limit: u64,
}

impl LimitedBody {
    /// An empty body of at most `limit` bytes whose head announced `declared` bytes
    /// (`Content-Length`); refused at once when that is over the limit.
    pub fn new(limit: u64, declared: Option<u64>) -> Result<LimitedBody, Exceeded> {
        if declared.is_some_and(|n| n > limit) {
            return Err(Exceeded::BodyTooLarge);
        }
        let first = declared.unwrap_or(0).min(1 << 20);
        Ok(LimitedBody {
            whole: Bytes::new(),
            joined: Vec::new(),
            first: usize::try_from(first).unwrap_or(0),
            limit,
        })
    }

    /// Appends `piece`, kept as it came when it is the body's first; refused (and not
    /// kept) when the body would outgrow the limit.
    pub fn push_bytes(&mut self, piece: Bytes) -> Result<(), Exceeded> {
        if !self.whole.is_empty() || !self.joined.is_empty() {
            return self.push(&piece);
        }
        if piece.len() as u64 > self.limit {
            return Err(Exceeded::BodyTooLarge);
        }
        self.whole = piece;
        Ok(())
    }

    /// Appends a copy of `piece`; refused (and not kept) when the body would outgrow
    /// the limit.
    pub fn push(&mut self, piece: &[u8]) -> Result<(), Exceeded> {
        let len = self.as_slice().len() as u64;
        let needed = len.saturating_add(piece.len() as u64);
        if needed > self.limit {
            return Err(Exceeded::BodyTooLarge);
        }
        if needed > self.joined.capacity() as u64 {
            let grown = match self.joined.capacity() {
                0 => self.first as u64,
                c => (c as u64).saturating_mul(2),
            };
            let target = grown.max(needed).min(self.limit);
            let extra = usize::try_from(target).unwrap_or(piece.len());
            self.joined
                .reserve_exact(extra.saturating_sub(self.joined.len()));
        }
        if !self.whole.is_empty() {
            self.joined
                .extend_from_slice(&std::mem::take(&mut self.whole));
        }
        self.joined.extend_from_slice(piece);
        Ok(())
    }

    /// The bytes so far.
    pub fn as_slice(&self) -> &[u8] {
        if self.joined.is_empty() {
            &self.whole
        } else {
            &self.joined
        }
    }

    /// The bytes read.
    pub fn into_bytes(self) -> Vec<u8> {
        if self.joined.is_empty() {
            self.whole.into()
        } else {
            self.joined
        }
    }

    /// The bytes read, shared: the one piece pushed as [`Bytes`] as it came.
    pub fn into_shared(self) -> Bytes {
        if self.joined.is_empty() {
            self.whole
        } else {
            Bytes::from(self.joined)
        }
    }
}

/// A rough token cost of a request for token rate limits: a quarter of the body's
/// bytes for the prompt, plus the completion budget it asks for (`max_tokens` or
/// `max_completion_tokens`).
pub fn estimate_tokens(request: &Value, body_len: usize) -> u64 {
    let completion = ["max_tokens", "max_completion_tokens"]
        .iter()
        .find_map(|k| request.get(k).and_then(Value::as_u64));
    estimate_from(body_len, completion)
}

/// [`estimate_tokens`] from the body's length and its completion cap.
pub(crate) fn estimate_from(body_len: usize, completion: Option<u64>) -> u64 {
    let prompt = (body_len as u64).div_ceil(4);
    prompt.saturating_add(completion.unwrap_or(0))
}

/// Tokens a success body reports: `usage.total_tokens` (OpenAI) or
/// `usage.input_tokens + usage.output_tokens` (Anthropic).
pub fn tokens_used(body: &Value) -> Option<u64> {
    crate::reply::usage_of(body).map(|u| u.total_tokens)
}

/// The message of an error body (`error.message`, a string `error`, or a top-level
/// `message`), cut to 500 characters. `None` for a body that is not such JSON.
pub fn error_message(body: &[u8]) -> Option<String> {
    let v: Value = serde_json::from_slice(body).ok()?;
    let text = v
        .pointer("/error/message")
        .or_else(|| v.get("error").filter(|e| e.is_string()))
        .or_else(|| v.get("message"))
        .and_then(Value::as_str)?;
    Some(text.chars().take(500).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(b: &Bytes) -> Value {
        serde_json::from_slice(b).unwrap()
    }

    #[test]
    fn prepare_sets_model_and_stream() {
        let req = json!({"model": "a", "messages": []});
        assert_eq!(parse(&prepare(&req, None, false)), req);
        assert_eq!(parse(&prepare(&req, Some("b"), false))["model"], "b");
        let s = parse(&prepare(&req, None, true));
        assert_eq!(s["stream"], true);
        assert_eq!(s["model"], "a");
        let s = parse(&prepare(&json!({"stream": false}), Some("m"), true));
        assert_eq!(s, json!({"stream": true, "model": "m"}));
        assert_eq!(parse(&prepare(&json!([1]), Some("m"), true)), json!([1]));
    }

    #[test]
    fn limited_bodies() {
        let over = Err(Exceeded::BodyTooLarge);
        assert_eq!(LimitedBody::new(10, Some(11)).map(|_| ()), over);
        let mut b = LimitedBody::new(10, Some(10)).unwrap();
        b.push(b"12345").unwrap();
        b.push(b"6789").unwrap();
        assert_eq!(b.push(b"ab"), over);
        b.push(b"0").unwrap();
        assert_eq!(b.push(b"x"), over);
        assert_eq!(b.as_slice(), b"1234567890");
        assert!(b.joined.capacity() <= 10, "never grows past the limit");
        let mut b = LimitedBody::new(1000, None).unwrap();
        for _ in 0..100 {
            b.push(b"0123456789").unwrap();
        }
        assert_eq!(b.joined.capacity(), 1000);
        assert_eq!(b.into_bytes().len(), 1000);
        let mut b = LimitedBody::new(u64::MAX, Some(u64::MAX)).unwrap();
        b.push(b"x").unwrap();
    }

    #[test]
    fn a_body_of_one_shared_piece_is_kept_as_it_came() {
        let piece = Bytes::from(b"{\"id\":1}".to_vec());
        let mut b = LimitedBody::new(100, Some(8)).unwrap();
        b.push_bytes(piece.clone()).unwrap();
        assert_eq!(b.as_slice(), b"{\"id\":1}");
        let shared = b.into_shared();
        assert_eq!(shared.as_ptr(), piece.as_ptr(), "not copied");
        let mut b = LimitedBody::new(100, None).unwrap();
        b.push_bytes(piece.clone()).unwrap();
        assert_eq!(b.into_bytes(), piece.to_vec());
    }

    #[test]
    fn shared_pieces_after_the_first_are_joined_under_the_limit() {
        let over = Err(Exceeded::BodyTooLarge);
        let mut b = LimitedBody::new(10, None).unwrap();
        assert_eq!(b.push_bytes(Bytes::from_static(b"12345678901")), over);
        b.push_bytes(Bytes::from_static(b"123")).unwrap();
        b.push_bytes(Bytes::from_static(b"4567")).unwrap();
        b.push(b"89").unwrap();
        assert_eq!(b.push_bytes(Bytes::from_static(b"01")), over);
        b.push_bytes(Bytes::from_static(b"0")).unwrap();
        assert_eq!(b.as_slice(), b"1234567890");
        assert!(b.joined.capacity() <= 10, "never grows past the limit");
        assert_eq!(&b.into_shared()[..], b"1234567890");
        let mut b = LimitedBody::new(10, None).unwrap();
        b.push_bytes(Bytes::new()).unwrap();
        b.push_bytes(Bytes::from_static(b"ab")).unwrap();
        assert_eq!(b.as_slice(), b"ab");
    }

    #[test]
    fn usage_from_both_providers() {
        assert_eq!(tokens_used(&json!({"usage": {"total_tokens": 7}})), Some(7));
        assert_eq!(
            tokens_used(&json!({"usage": {"input_tokens": 3, "output_tokens": 4}})),
            Some(7)
        );
        assert_eq!(tokens_used(&json!({"usage": {}})), None);
        assert_eq!(tokens_used(&json!({})), None);
        assert_eq!(estimate_tokens(&json!({"max_tokens": 10}), 8), 12);
    }

    #[test]
    fn error_messages() {
        let m = error_message(br#"{"error":{"message":"slow down","type":"x"}}"#);
        assert_eq!(m.as_deref(), Some("slow down"));
        let m = error_message(
            br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        );
        assert_eq!(m.as_deref(), Some("Overloaded"));
        assert_eq!(error_message(b"<html>502</html>"), None);
        assert_eq!(
            error_message(br#"{"error":"nope"}"#).as_deref(),
            Some("nope")
        );
    }
}
