//! `error_body`: the allocation-free error-body scan, checked against serde_json.

use core::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use steadfast_core::classify::{
    Class, ClassifyConfig, ErrorFacts, ErrorKind, MAX_CODE_LEN, Rule, SCAN_LIMIT, Scope, Verdict,
};
use steadfast_core::outcome::{BodyState, Outcome, Response};

/// Phrases that mean "the prompt exceeds the context window", as documented by
/// `ErrorFacts::scan` (ASCII, any case).
const TOO_LONG: [&str; 5] = [
    "prompt is too long",
    "maximum context length",
    "context_length_exceeded",
    "exceed context limit",
    "exceeds the context window",
];

/// `error_body`: the first two bytes are a status, the rest a response body.
///
/// - Scanning and classifying never panic.
/// - A 2xx is not scanned; a complete 2xx is a success.
/// - For 400..=599 the class is the body kind's rule when it has one, else the
///   status rule.
/// - Differential: for a body serde_json accepts (no duplicate keys, within the scan
///   limit), the kind equals the one read from the parsed JSON: the top-level object
///   (or the first element of a top-level array), its `"error"` object, `code` before
///   `type`, and the context-too-long phrases in `message`.
pub fn error_body(data: &[u8]) {
    let status = data
        .get(..2)
        .map_or(0, |b| u16::from_le_bytes([b[0], b[1]]));
    let body = data.get(2..).unwrap_or(&[]);
    let facts = ErrorFacts::scan(body);
    let response = Response::from_http(status, core::iter::empty(), body, 0);
    let rules = ClassifyConfig::default();
    let verdict = rules.classify(&Outcome::Response(response));
    if (200..300).contains(&status) {
        assert_eq!(response.error, ErrorFacts::default());
        assert_eq!(response.body, BodyState::Complete);
        assert_eq!(verdict, Verdict::Success);
    }
    if (400..=599).contains(&status) {
        assert_eq!(response.error, facts);
        let rule = facts
            .kind
            .and_then(|k| rules.error_kind_rule(k))
            .or_else(|| rules.status_rule(status))
            .unwrap();
        let Verdict::Failure(f) = verdict else {
            panic!("an error status succeeded: {status}");
        };
        assert_eq!(
            (f.class, f.scope, f.retryable),
            (rule.class, rule.scope, rule.retryable)
        );
    }
    if body.len() > SCAN_LIMIT {
        return;
    }
    let Ok(Strict(json)) = serde_json::from_slice::<Strict>(body) else {
        return;
    };
    if (400..=599).contains(&status) {
        check_named_code(&json, status, body);
    }
    let Some(expected) = expected_kind(&json, body.contains(&b'\\')) else {
        return;
    };
    assert_eq!(facts.kind, expected, "{}", String::from_utf8_lossy(body));
}

/// A body's `error.code`, named in the config (another provider's code), decides its
/// class: an ASCII code of 1 to `MAX_CODE_LEN` bytes, however it was escaped.
fn check_named_code(json: &Value, status: u16, body: &[u8]) {
    let root = match json {
        Value::Array(items) => items.first(),
        other => Some(other),
    };
    let code = root
        .and_then(|r| r.get("error"))
        .and_then(|e| e.get("code"))
        .and_then(Value::as_str)
        .filter(|c| c.is_ascii() && !c.is_empty() && c.len() <= MAX_CODE_LEN);
    let Some(code) = code else { return };
    let mut rules = ClassifyConfig::default();
    let named = Rule::new(Class::Overloaded, Scope::Endpoint, true);
    if rules.error_codes.set(code, named).is_err() {
        return;
    }
    let response = Response::from_http(status, core::iter::empty(), body, 0);
    let Verdict::Failure(f) = rules.classify(&Outcome::Response(response)) else {
        panic!("an error status succeeded: {status}");
    };
    assert_eq!(
        (f.class, f.scope),
        (Class::Overloaded, Scope::Endpoint),
        "code {code:?} in {}",
        String::from_utf8_lossy(body)
    );
}

/// The kind the JSON says; `None` when it cannot be told without the raw text (an
/// escaped message decides it).
fn expected_kind(json: &Value, escapes: bool) -> Option<Option<ErrorKind>> {
    let root = match json {
        Value::Array(items) => items.first(),
        other => Some(other),
    };
    let Some(Value::Object(top)) = root else {
        return Some(None);
    };
    let Some(Value::Object(error)) = top.get("error") else {
        return Some(None);
    };
    let text = |k: &str| error.get(k).and_then(Value::as_str);
    let named = |s: &str| ErrorKind::ALL.into_iter().find(|k| k.name() == s);
    let kind = text("code")
        .and_then(named)
        .or_else(|| text("type").and_then(named));
    if !matches!(kind, None | Some(ErrorKind::InvalidRequestError)) {
        return Some(kind);
    }
    let Some(message) = text("message") else {
        return Some(kind);
    };
    if escapes {
        return None;
    }
    let lower = message.to_ascii_lowercase();
    if TOO_LONG.iter().any(|p| lower.contains(p)) {
        Some(Some(ErrorKind::ContextLengthExceeded))
    } else {
        Some(kind)
    }
}

/// A JSON value that refuses duplicate object keys (which serde_json's `Value` would
/// resolve differently from a streaming scan).
struct Strict(Value);

impl<'de> Deserialize<'de> for Strict {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Strict, D::Error> {
        d.deserialize_any(StrictVisitor)
    }
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Strict;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("JSON without duplicate keys")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Strict, E> {
        Ok(Strict(Value::Bool(v)))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Strict, E> {
        Ok(Strict(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Strict, E> {
        Ok(Strict(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Strict, E> {
        Ok(Strict(v.into()))
    }

    fn visit_str<E>(self, v: &str) -> Result<Strict, E> {
        Ok(Strict(Value::String(v.to_owned())))
    }

    fn visit_unit<E>(self) -> Result<Strict, E> {
        Ok(Strict(Value::Null))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Strict, A::Error> {
        let mut items = Vec::new();
        while let Some(Strict(v)) = seq.next_element()? {
            items.push(v);
        }
        Ok(Strict(Value::Array(items)))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Strict, A::Error> {
        let mut members = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if members.contains_key(&key) {
                return Err(de::Error::custom("duplicate key"));
            }
            let Strict(v) = map.next_value()?;
            members.insert(key, v);
        }
        Ok(Strict(Value::Object(members)))
    }
}
