//! A whole answer read only for what a session needs of it when the face passes the
//! bytes on as they came (see [`crate::Session::passing_through`]): whether it is JSON,
//! and its `model` and `usage` counts. Every other value is checked as JSON and
//! skipped, not built, so the answer is neither parsed into a `serde_json::Value` nor
//! dropped as one. The readers here also serve [`crate::RawRequest`].

use std::fmt;

use serde::Deserializer;
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};

use crate::reply::{AnswerFacts, Counts};

/// The body's facts: its `model` (a string) and its `usage` counts (empty when the
/// body is not an object, or has neither); `None` when the body is not JSON.
pub(crate) fn peek(body: &[u8]) -> Option<AnswerFacts> {
    let facts = read_whole(body, ObjectOrNone(Peek)).ok()?;
    Some(facts.unwrap_or_default())
}

/// Reads all of `text` as one JSON value with `seed`.
pub(crate) fn read_whole<'de, S: DeserializeSeed<'de>>(
    text: &'de [u8],
    seed: S,
) -> Result<S::Value, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_slice(text);
    let value = seed.deserialize(&mut de)?;
    de.end()?;
    Ok(value)
}

/// The top-level keys a session reads of a passed-through answer.
const KEPT: [&str; 2] = ["model", "usage"];

/// An answer's `model` (a string) and `usage` (its counts). A key given twice counts
/// as its last value, as in a parsed [`serde_json::Value`].
struct Peek;

impl<'de> ObjectReader<'de> for Peek {
    type Out = AnswerFacts;

    fn read<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Out, A::Error> {
        let mut model = None;
        let mut counts = None;
        each_named(&mut map, &KEPT, |name, map| {
            match name {
                "model" => model = map.next_value_seed(ScalarSeed)?.into_string(),
                _ => counts = map.next_value_seed(ObjectOrNone(Usage))?,
            }
            Ok(())
        })?;
        Ok(AnswerFacts {
            model,
            usage: counts.and_then(Counts::usage),
        })
    }
}

/// A `usage` object's counts (non-negative integers).
struct Usage;

impl<'de> ObjectReader<'de> for Usage {
    type Out = Counts;

    fn read<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Out, A::Error> {
        let mut counts = Counts::default();
        each_named(&mut map, &Counts::NAMES, |name, map| {
            counts.set(name, map.next_value_seed(ScalarSeed)?.as_u64());
            Ok(())
        })?;
        Ok(counts)
    }
}

/// Calls `each` for every key of `map` that is one of `names`, with `map` at that
/// key's value (which `each` reads); the values of other keys are checked and skipped.
pub(crate) fn each_named<'de, A: MapAccess<'de>>(
    map: &mut A,
    names: &'static [&'static str],
    mut each: impl FnMut(&'static str, &mut A) -> Result<(), A::Error>,
) -> Result<(), A::Error> {
    while let Some(key) = map.next_key_seed(KeyIn(names))? {
        match key {
            Some(name) => each(name, map)?,
            None => {
                map.next_value::<IgnoredAny>()?;
            }
        }
    }
    Ok(())
}

/// What an [`ObjectOrNone`] reads of an object.
pub(crate) trait ObjectReader<'de> {
    /// What it reads.
    type Out;
    /// Reads the object's entries.
    fn read<A: MapAccess<'de>>(self, map: A) -> Result<Self::Out, A::Error>;
}

/// Any JSON value: an object read by the reader, anything else `None` (checked and
/// skipped).
pub(crate) struct ObjectOrNone<R>(pub R);

impl<'de, R: ObjectReader<'de>> DeserializeSeed<'de> for ObjectOrNone<R> {
    type Value = Option<R::Out>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, R: ObjectReader<'de>> Visitor<'de> for ObjectOrNone<R> {
    type Value = Option<R::Out>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        self.0.read(map).map(Some)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
}

/// A value as far as the policy reads one: a string, a boolean, a non-negative
/// integer, or something else (checked and skipped, not built).
pub(crate) enum Scalar {
    Str(String),
    Bool(bool),
    U64(u64),
    Other,
}

impl Scalar {
    /// The string, when it is one.
    pub(crate) fn into_string(self) -> Option<String> {
        match self {
            Scalar::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The integer, when it is a non-negative one ([`serde_json::Value::as_u64`]).
    pub(crate) fn as_u64(&self) -> Option<u64> {
        match self {
            Scalar::U64(n) => Some(*n),
            _ => None,
        }
    }
}

/// Reads a [`Scalar`].
pub(crate) struct ScalarSeed;

impl<'de> DeserializeSeed<'de> for ScalarSeed {
    type Value = Scalar;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Scalar, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ScalarSeed {
    type Value = Scalar;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Scalar, E> {
        Ok(Scalar::Str(s.to_owned()))
    }

    fn visit_bool<E: de::Error>(self, b: bool) -> Result<Scalar, E> {
        Ok(Scalar::Bool(b))
    }

    fn visit_u64<E: de::Error>(self, n: u64) -> Result<Scalar, E> {
        Ok(Scalar::U64(n))
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Scalar, E> {
        Ok(Scalar::Other)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Scalar, E> {
        Ok(Scalar::Other)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Scalar, E> {
        Ok(Scalar::Other)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Scalar, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Scalar::Other)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Scalar, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Scalar::Other)
    }
}

/// Reads an object key as the one of these names it is (`None`: another key), without
/// keeping its text.
struct KeyIn(&'static [&'static str]);

impl<'de> DeserializeSeed<'de> for KeyIn {
    type Value = Option<&'static str>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl Visitor<'_> for KeyIn {
    type Value = Option<&'static str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object key")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<Self::Value, E> {
        Ok(self.0.iter().copied().find(|k| *k == key))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;
    use crate::reply::TokenUsage;

    fn facts(model: Option<&str>, usage: Option<(u64, u64, u64)>) -> Option<AnswerFacts> {
        Some(AnswerFacts {
            model: model.map(str::to_owned),
            usage: usage.map(|(i, o, t)| TokenUsage {
                input_tokens: i,
                output_tokens: o,
                total_tokens: t,
            }),
        })
    }

    #[test]
    fn keeps_model_and_usage_and_tells_json_from_not() {
        let body = br#"{"id":"x","model":"m","choices":[{"message":{"content":"Hi \"you\""}}],
                        "usage":{"prompt_tokens":5,"completion_tokens":2},"model":"m2"}"#;
        assert_eq!(peek(body), facts(Some("m2"), Some((5, 2, 7))));
        assert_eq!(peek(b"[1, {\"model\": 1}]"), facts(None, None));
        let odd = br#"{"model":1,"usage":{"total_tokens":3,"prompt_tokens":-1,
                        "prompt_tokens_details":{"cached_tokens":1}},"x":{"model":"y"}}"#;
        assert_eq!(peek(odd), facts(None, Some((0, 0, 3))));
        let last = br#"{"model":"a","usage":{"total_tokens":3},"model":null,"usage":7}"#;
        assert_eq!(peek(last), facts(None, None));
        let recount = br#"{"usage":{"input_tokens":4,"input_tokens":"x","output_tokens":1}}"#;
        assert_eq!(peek(recount), facts(None, Some((0, 1, 1))));
        assert_eq!(peek(b" \"text\" "), facts(None, None));
        assert_eq!(peek(b"null"), facts(None, None));
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

    #[test]
    fn reads_what_a_parsed_value_gives() {
        let bodies = [
            &br#"{"model":"gpt","usage":{"prompt_tokens":9,"completion_tokens":3,"total_tokens":12}}"#[..],
            br#"{"model":"claude","usage":{"input_tokens":7,"output_tokens":2},"usage":{"output_tokens":5}}"#,
            br#"{"usage":{"total_tokens":1.5,"prompt_tokens":2}}"#,
            br#"{"usage":[],"model":["m"]}"#,
            br#"{}"#,
        ];
        for body in bodies {
            let parsed: Value = serde_json::from_slice(body).expect("JSON");
            assert_eq!(
                peek(body),
                Some(AnswerFacts::of(&parsed)),
                "{}",
                String::from_utf8_lossy(body)
            );
        }
    }
}
