//! A whole answer read only for what a session needs of it when the face passes the
//! bytes on as they came (see [`crate::Session::passing_through`]): whether it is JSON,
//! and its `model` and `usage`. Every other value is checked as JSON and skipped, not
//! built, so the answer is neither parsed into a [`Value`] nor dropped as one.

use std::fmt;

use serde::Deserializer;
use serde::de::{self, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// The body's `model` and `usage`, as a JSON object holding only those (empty when
/// the body is not an object, or has neither); `None` when the body is not JSON.
pub(crate) fn peek(body: &[u8]) -> Option<Value> {
    let mut de = serde_json::Deserializer::from_slice(body);
    let peeked = de.deserialize_any(Peek).ok()?;
    de.end().ok()?;
    Some(Value::Object(peeked))
}

/// Any JSON value: an object yields its `model` and `usage`, anything else nothing.
struct Peek;

impl<'de> Visitor<'de> for Peek {
    type Value = Map<String, Value>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut kept = Map::new();
        while let Some(key) = map.next_key::<KeyOf>()? {
            match key {
                KeyOf::Kept(name) => {
                    let value: Value = map.next_value()?;
                    kept.insert(name.to_owned(), value);
                }
                KeyOf::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(kept)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Map::new())
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(Map::new())
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(Map::new())
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(Map::new())
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(Map::new())
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(Map::new())
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Map::new())
    }
}

/// A key of the top-level object: one of those kept, or another.
enum KeyOf {
    Kept(&'static str),
    Other,
}

/// The top-level keys a session reads of a passed-through answer.
const KEPT: [&str; 2] = ["model", "usage"];

impl<'de> de::Deserialize<'de> for KeyOf {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<KeyOf, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = KeyOf;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object key")
            }

            fn visit_str<E: de::Error>(self, key: &str) -> Result<KeyOf, E> {
                Ok(KEPT
                    .into_iter()
                    .find(|k| *k == key)
                    .map_or(KeyOf::Other, KeyOf::Kept))
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn keeps_model_and_usage_and_tells_json_from_not() {
        let body = br#"{"id":"x","model":"m","choices":[{"message":{"content":"Hi \"you\""}}],
                        "usage":{"prompt_tokens":5,"completion_tokens":2},"model":"m2"}"#;
        assert_eq!(
            peek(body),
            Some(json!({"model": "m2", "usage": {"prompt_tokens": 5, "completion_tokens": 2}}))
        );
        assert_eq!(peek(b"[1, {\"model\": 1}]"), Some(json!({})));
        assert_eq!(peek(b" \"text\" "), Some(json!({})));
        assert_eq!(peek(b"null"), Some(json!({})));
        for bad in [
            &b"{\"model\": }"[..],
            b"{} x",
            b"",
            b"{\"a\": [1,}",
            b"<html>",
        ] {
            assert_eq!(peek(bad), None, "{}", String::from_utf8_lossy(bad));
            assert!(serde_json::from_slice::<Value>(bad).is_err());
        }
    }
}
