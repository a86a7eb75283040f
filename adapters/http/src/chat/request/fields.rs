//! The canonical request's top-level fields that Anthropic has no equivalent for: each
//! passes only with the value that asks for nothing (its default), and any other value
//! is an error naming it. A field in neither this table nor the translated ones is an
//! error too.

use serde_json::Value;

use super::super::error::TranslateError;
use super::super::json::{Obj, at};

/// A field that passes only with a value that asks for nothing.
struct Harmless {
    field: &'static str,
    passes: fn(&Value) -> bool,
    why: &'static str,
}

fn is_one(v: &Value) -> bool {
    v.as_u64() == Some(1)
}

fn is_false(v: &Value) -> bool {
    v == &Value::Bool(false)
}

fn is_zero(v: &Value) -> bool {
    v.as_f64() == Some(0.0)
}

fn is_empty(v: &Value) -> bool {
    v.as_object().is_some_and(|o| o.is_empty())
}

fn is_text_format(v: &Value) -> bool {
    v.get("type").and_then(Value::as_str) == Some("text")
}

fn is_text_only(v: &Value) -> bool {
    v.as_array()
        .is_some_and(|m| m.iter().all(|x| x.as_str() == Some("text")))
}

fn is_default_tier(v: &Value) -> bool {
    matches!(v.as_str(), Some("auto" | "default"))
}

fn any(_: &Value) -> bool {
    true
}

const HARMLESS: &[Harmless] = &[
    Harmless {
        field: "n",
        passes: is_one,
        why: "Anthropic returns one choice",
    },
    Harmless {
        field: "logprobs",
        passes: is_false,
        why: "Anthropic returns no log probabilities",
    },
    Harmless {
        field: "top_logprobs",
        passes: is_zero,
        why: "Anthropic returns no log probabilities",
    },
    Harmless {
        field: "presence_penalty",
        passes: is_zero,
        why: "Anthropic has no presence penalty",
    },
    Harmless {
        field: "frequency_penalty",
        passes: is_zero,
        why: "Anthropic has no frequency penalty",
    },
    Harmless {
        field: "logit_bias",
        passes: is_empty,
        why: "Anthropic has no logit bias",
    },
    Harmless {
        field: "response_format",
        passes: is_text_format,
        why: "Anthropic Messages has no JSON mode or response schema",
    },
    Harmless {
        field: "modalities",
        passes: is_text_only,
        why: "Anthropic answers in text only",
    },
    Harmless {
        field: "store",
        passes: is_false,
        why: "Anthropic does not store completions",
    },
    Harmless {
        field: "service_tier",
        passes: is_default_tier,
        why: "Anthropic's service tiers are not OpenAI's",
    },
    // A cache routing hint: Anthropic caches by `cache_control` blocks, and no answer
    // depends on the hint.
    Harmless {
        field: "prompt_cache_key",
        passes: any,
        why: "",
    },
];

/// The fields the translation itself reads.
pub(crate) const TRANSLATED: &[&str] = &[
    "model",
    "messages",
    "max_tokens",
    "max_completion_tokens",
    "temperature",
    "top_p",
    "stream",
    "stream_options",
    "stop",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "user",
    "safety_identifier",
    "metadata",
];

/// Refuses the first field that is neither translated nor harmless as given.
pub(crate) fn check(req: &Obj) -> Result<(), TranslateError> {
    for (key, value) in req {
        if value.is_null() || TRANSLATED.contains(&key.as_str()) {
            continue;
        }
        let why = match HARMLESS.iter().find(|h| h.field == key) {
            Some(h) if (h.passes)(value) => continue,
            Some(h) => h.why,
            None => "Anthropic Messages has no equivalent",
        };
        return Err(TranslateError::untranslatable(at("", key), why));
    }
    Ok(())
}
