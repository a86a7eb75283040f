//! A request as its bytes came (a gateway's client sent them): read once for what the
//! policy needs of it, sent as it is to every endpoint that takes it unchanged, and
//! parsed whole only for one that does not (another model name, the stream flag to
//! set, a translation to the other API).

use std::fmt;
use std::sync::OnceLock;

use bytes::Bytes;
use serde_json::Value;

use crate::body;
use crate::scan::{self, RawStr, Scanned};

/// A chat request's JSON body and what was read of it: its `model`, whether it asks
/// for a stream, and the completion's token cap. A key given twice counts as its
/// last value, as when the body is parsed into a [`Value`].
#[derive(Debug)]
pub struct RawRequest {
    bytes: Bytes,
    model: Option<String>,
    stream: bool,
    max_tokens: Option<u64>,
    parsed: OnceLock<Value>,
}

/// Why a body is not a request.
#[derive(Debug)]
pub enum RawRequestError {
    /// It is not JSON.
    Json(serde_json::Error),
    /// It is JSON, but not an object.
    NotAnObject,
}

impl fmt::Display for RawRequestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RawRequestError::Json(e) => write!(f, "the body is not JSON ({e})"),
            RawRequestError::NotAnObject => f.write_str("the body must be a JSON object"),
        }
    }
}

impl std::error::Error for RawRequestError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RawRequestError::Json(e) => Some(e),
            RawRequestError::NotAnObject => None,
        }
    }
}

impl RawRequest {
    /// Reads `bytes` (the whole JSON text is checked, only the keys the policy needs
    /// are kept).
    pub fn parse(bytes: Bytes) -> Result<RawRequest, RawRequestError> {
        let mut head = Head::default();
        let parsed = OnceLock::new();
        match scan::members(&bytes, |key, value| head.read(key, value)) {
            Some(true) => {}
            Some(false) => return Err(RawRequestError::NotAnObject),
            None => {
                // What the scan refuses `serde_json` refuses too; were it not so, the
                // parsed value says.
                let v: Value = serde_json::from_slice(&bytes).map_err(RawRequestError::Json)?;
                head = Head::of(&v).ok_or(RawRequestError::NotAnObject)?;
                let _ = parsed.set(v);
            }
        }
        Ok(RawRequest {
            model: head.model,
            stream: head.stream,
            max_tokens: head.max_tokens.or(head.max_completion_tokens),
            bytes,
            parsed,
        })
    }

    /// The `model` it names, when that is a string.
    pub fn model(&self) -> Option<&str> {
        self.model.as_deref()
    }

    /// Whether it asks for a stream (`"stream": true`).
    pub fn is_stream(&self) -> bool {
        self.stream
    }

    /// The body as it came.
    pub fn bytes(&self) -> &Bytes {
        &self.bytes
    }

    /// The request parsed whole (once, when first asked for).
    pub fn value(&self) -> &Value {
        // `parse` checked the JSON: this parse cannot fail.
        self.parsed
            .get_or_init(|| serde_json::from_slice(&self.bytes).unwrap_or(Value::Null))
    }

    /// The body for an endpoint that sends `model` (when it names its own) and needs
    /// the stream flag when `stream`: the bytes as they came when they already say so.
    pub(crate) fn body_for(&self, model: Option<&str>, stream: bool) -> Bytes {
        self.as_it_is(model, stream)
            .unwrap_or_else(|| body::prepare(self.value(), model, stream))
    }

    /// Its bytes as they came, when they are the body for an endpoint that sends
    /// `model` (nothing to prepare).
    fn as_it_is(&self, model: Option<&str>, stream: bool) -> Option<Bytes> {
        body::goes_as_it_is(self.model(), self.stream, model, stream).then(|| self.bytes.clone())
    }

    /// The tokens a call of it may use, estimated from its length as it came (see
    /// [`body::estimate_tokens`]).
    pub(crate) fn estimate_tokens(&self) -> u64 {
        body::estimate_from(self.bytes.len(), self.max_tokens)
    }
}

/// The request a session sends: a parsed [`Value`], or a [`RawRequest`] sent as its
/// bytes came where it can be.
#[derive(Debug, Clone, Copy)]
pub enum RequestRef<'c> {
    /// A parsed request (`null` for a face that builds its own bodies).
    Value(&'c Value),
    /// A request as its bytes came.
    Raw(&'c RawRequest),
}

impl<'c> From<&'c Value> for RequestRef<'c> {
    fn from(v: &'c Value) -> RequestRef<'c> {
        RequestRef::Value(v)
    }
}

impl<'c> From<&'c RawRequest> for RequestRef<'c> {
    fn from(r: &'c RawRequest) -> RequestRef<'c> {
        RequestRef::Raw(r)
    }
}

impl<'c> RequestRef<'c> {
    /// The request parsed (a raw one parsed once, when first asked for).
    pub fn value(self) -> &'c Value {
        match self {
            RequestRef::Value(v) => v,
            RequestRef::Raw(r) => r.value(),
        }
    }

    /// The `model` it names.
    pub fn model(self) -> Option<&'c str> {
        match self {
            RequestRef::Value(v) => v.get("model").and_then(Value::as_str),
            RequestRef::Raw(r) => r.model(),
        }
    }

    /// The bytes as they came, when they are the body for an endpoint that sends
    /// `model` (nothing to prepare).
    pub(crate) fn as_it_is(self, model: Option<&str>, stream: bool) -> Option<Bytes> {
        match self {
            RequestRef::Raw(r) => r.as_it_is(model, stream),
            RequestRef::Value(_) => None,
        }
    }

    /// The body for an endpoint that sends `model` (see [`body::prepare`]).
    pub(crate) fn body_for(self, model: Option<&str>, stream: bool) -> Bytes {
        match self {
            RequestRef::Value(v) => body::prepare(v, model, stream),
            RequestRef::Raw(r) => r.body_for(model, stream),
        }
    }

    /// The tokens a call of it may use (see [`body::estimate_tokens`]).
    pub(crate) fn estimate_tokens(self, stream: bool) -> u64 {
        match self {
            RequestRef::Value(v) => body::estimate_tokens(v, body::prepare(v, None, stream).len()),
            RequestRef::Raw(r) => r.estimate_tokens(),
        }
    }
}

/// What was read of an object's keys.
#[derive(Default)]
struct Head {
    model: Option<String>,
    stream: bool,
    max_tokens: Option<u64>,
    max_completion_tokens: Option<u64>,
}

impl Head {
    /// Reads one member of the request object.
    fn read(&mut self, key: RawStr<'_>, value: Scanned<'_>) {
        if key.is("model") {
            self.model = value.into_string();
        } else if key.is("stream") {
            self.stream = value == Scanned::Bool(true);
        } else if key.is("max_tokens") {
            self.max_tokens = value.as_u64();
        } else if key.is("max_completion_tokens") {
            self.max_completion_tokens = value.as_u64();
        }
    }

    /// The head of a parsed request; `None` when it is not an object.
    fn of(v: &Value) -> Option<Head> {
        let o = v.as_object()?;
        let n = |k: &str| o.get(k).and_then(Value::as_u64);
        Some(Head {
            model: o.get("model").and_then(Value::as_str).map(str::to_owned),
            stream: o.get("stream") == Some(&Value::Bool(true)),
            max_tokens: n("max_tokens"),
            max_completion_tokens: n("max_completion_tokens"),
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn raw(text: &str) -> RawRequest {
        let r = RawRequest::parse(Bytes::copy_from_slice(text.as_bytes()));
        r.unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn reads_what_the_parsed_value_says() {
        let cases = [
            r#"{"model":"m","messages":[{"role":"user","content":"Hi \"x\""}]}"#,
            r#"{"model":"a","stream":true,"model":"b","max_tokens":7}"#,
            r#"{"stream":true,"stream":false,"max_completion_tokens":3,"model":1}"#,
            r#"{"model":"","stream":"true","max_tokens":-1,"max_completion_tokens":2}"#,
            r#"{"max_tokens":1.5,"model":{"name":"m"},"stream":[true]}"#,
            r#" { } "#,
        ];
        for text in cases {
            let r = raw(text);
            let v: Value = serde_json::from_str(text).unwrap_or_default();
            assert_eq!(r.model(), v.get("model").and_then(Value::as_str), "{text}");
            assert_eq!(
                r.is_stream(),
                v.get("stream") == Some(&json!(true)),
                "{text}"
            );
            let len = r.bytes().len();
            assert_eq!(
                r.estimate_tokens(),
                body::estimate_tokens(&v, len),
                "{text}"
            );
            assert_eq!(r.value(), &v, "{text}");
        }
    }

    #[test]
    fn refuses_what_is_not_a_json_object() {
        for text in ["[1]", "\"m\"", "null", "3"] {
            let r = RawRequest::parse(Bytes::copy_from_slice(text.as_bytes()));
            assert!(matches!(r, Err(RawRequestError::NotAnObject)), "{text}");
        }
        for text in ["", "{\"model\": }", "{} x", "{\"a\": [1,}", "<html>"] {
            let r = RawRequest::parse(Bytes::copy_from_slice(text.as_bytes()));
            assert!(matches!(r, Err(RawRequestError::Json(_))), "{text}");
            assert!(serde_json::from_str::<Value>(text).is_err(), "{text}");
        }
    }

    #[test]
    fn is_sent_as_it_came_unless_an_endpoint_changes_it() {
        let text = r#"{"model":"m", "messages":[]}"#;
        let r = raw(text);
        assert_eq!(r.body_for(None, false), text.as_bytes());
        assert_eq!(r.body_for(Some("m"), false), text.as_bytes());
        let renamed: Value =
            serde_json::from_slice(&r.body_for(Some("n"), false)).unwrap_or_default();
        assert_eq!(renamed, json!({"model": "n", "messages": []}));
        let streamed: Value = serde_json::from_slice(&r.body_for(None, true)).unwrap_or_default();
        assert_eq!(
            streamed,
            json!({"model": "m", "messages": [], "stream": true})
        );
        let s = raw(r#"{"model":"m","stream":true}"#);
        assert_eq!(s.body_for(Some("m"), true), s.bytes());
    }
}
