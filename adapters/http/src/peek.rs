//! A whole answer read only for what a session needs of it when the face passes the
//! bytes on as they came (see [`crate::Session::passing_through`]): whether it is JSON,
//! and its `model` and `usage` counts. The text is checked whole by
//! [`crate::scan`], not built into a `serde_json::Value`.

use serde_json::Value;

use crate::reply::{AnswerFacts, Counts};
use crate::scan::{self, Member, Scanned};

/// The body's facts: its `model` (a string) and its `usage` counts (none when the body
/// is not an object, or has neither); `None` when the body is not JSON. A key given
/// twice counts as its last value, as in a parsed `Value`.
pub(crate) fn peek(body: &[u8]) -> Option<AnswerFacts> {
    let mut model = None;
    let mut usage = None;
    let mut counts = Counts::default();
    let json = scan::members_and_inner(body, "usage", |member| match member {
        Member::Inner(key, value) => {
            if let Some(name) = Counts::NAMES.iter().find(|n| key.is(n)) {
                counts.set(name, value.as_u64());
            }
        }
        Member::Top(key, value) if key.is("model") => model = value.into_string(),
        Member::Top(key, value) if key.is("usage") => {
            // Only an object's members come as inner ones; `take` leaves none for a
            // later `usage` that is not an object.
            usage = matches!(value, Scanned::Object(_)).then(|| std::mem::take(&mut counts));
        }
        Member::Top(..) => {}
    });
    if json.is_none() {
        // What the scan refuses `serde_json` refuses too; were it not so, the parsed
        // value says.
        let parsed: Value = serde_json::from_slice(body).ok()?;
        return Some(AnswerFacts::of(&parsed));
    }
    Some(AnswerFacts {
        model,
        usage: usage.and_then(Counts::usage),
    })
}

#[cfg(test)]
mod tests {
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
