//! OpenAI's Chat Completions (`POST /v1/chat/completions`): what it refuses, and how
//! it says so.
//!
//! The shapes of OpenAI's messages are those quoted in issue threads of API users:
//! `Invalid type for '{param}': expected {type}, but got {type} instead.` (code
//! `invalid_type`), `Missing required parameter: '{param}'.`
//! (`missing_required_parameter`), `Invalid value: '{v}'. Supported values are: …`
//! (`invalid_value`), `Invalid '{param}': integer below minimum value. Expected a value
//! >= {min}, but got {v} instead.` (`integer_below_min_value`, and its `_above_max_`
//! and `decimal_` siblings), `Invalid '{param}': empty array. …` (`empty_array`).

use serde_json::{Map, Value};

use super::kind::{Kind, openai_got};
use super::{Rejection, unknown_keys};

mod fields;
mod messages;
mod tools;

/// The top-level fields the API knows: `CompletionCreateParamsBase` with `stream`, in
/// openai-python's `types/chat/completion_create_params.py` (generated from OpenAI's
/// OpenAPI spec; the version of 2026-08-21).
pub(super) const KNOWN: &[&str] = &[
    "messages",
    "model",
    "audio",
    "frequency_penalty",
    "function_call",
    "functions",
    "logit_bias",
    "logprobs",
    "max_completion_tokens",
    "max_tokens",
    "metadata",
    "modalities",
    "moderation",
    "n",
    "parallel_tool_calls",
    "prediction",
    "presence_penalty",
    "prompt_cache_key",
    "prompt_cache_options",
    "prompt_cache_retention",
    "reasoning_effort",
    "response_format",
    "safety_identifier",
    "seed",
    "service_tier",
    "stop",
    "store",
    "stream",
    "stream_options",
    "temperature",
    "tool_choice",
    "tools",
    "top_logprobs",
    "top_p",
    "user",
    "verbosity",
    "web_search_options",
];

/// Checks a Chat Completions body. In order: `model` (a missing model beats an
/// unknown field, and so does a missing `messages`: the order of a conformance table
/// of answers measured against the API in 2026-08), unknown fields, `messages`, the
/// other fields, `tools` and `tool_choice`.
pub(super) fn check(body: &Map<String, Value>) -> Result<(), Rejection> {
    model(body)?;
    let Some(messages) = body.get("messages").filter(|m| !m.is_null()) else {
        return Err(missing("messages"));
    };
    unknown(body)?;
    messages::check(messages)?;
    fields::check(body)?;
    tools::check(body)
}

/// `model` is required: `you must provide a model parameter`, `param` and `code` null
/// (the body quoted in chain-ml/council#45, from a `curl` to api.openai.com without
/// `model`, and in spring-projects/spring-ai#4381).
fn model(body: &Map<String, Value>) -> Result<(), Rejection> {
    match body.get("model") {
        None | Some(Value::Null) => Err(Rejection::message("you must provide a model parameter")),
        Some(Value::String(m)) if m.is_empty() => {
            Err(Rejection::message("you must provide a model parameter"))
        }
        Some(v) => typed("model", v, Kind::Str),
    }
}

/// Unknown top-level fields: `Unrecognized request argument supplied: top_k`, `param`
/// and `code` null (bodies quoted in xlinx/sd-webui-decadetw-auto-prompt-llm#29 and
/// davidmigloz/langchain_dart#712); several are listed sorted after `Unrecognized
/// request arguments supplied:` (tbxark/ChatGPT-Telegram-Workers#5). Newer reasoning
/// models answer `Unknown parameter: 'x'.` instead; this is the chat models' answer.
fn unknown(body: &Map<String, Value>) -> Result<(), Rejection> {
    let extra = unknown_keys(body, KNOWN);
    match extra.as_slice() {
        [] => Ok(()),
        [one] => Err(Rejection::message(format!(
            "Unrecognized request argument supplied: {one}"
        ))),
        many => Err(Rejection::message(format!(
            "Unrecognized request arguments supplied: {}",
            many.join(", ")
        ))),
    }
}

/// `Missing required parameter: '{param}'.`, code `missing_required_parameter`
/// (SilasMarvin/lsp-ai#108 for `messages`, Leon-Sander/Local-Multimodal-AI-Chat#43 for
/// `messages[0].role`).
pub(super) fn missing(param: &str) -> Rejection {
    Rejection::at(
        format!("Missing required parameter: '{param}'."),
        param,
        "missing_required_parameter",
    )
}

/// `v` has the type `kind`, else `Invalid type for '{param}': expected {kind}, but got
/// {type} instead.`, code `invalid_type`.
pub(super) fn typed(param: &str, v: &Value, kind: Kind) -> Result<(), Rejection> {
    if kind.fits(v) {
        return Ok(());
    }
    Err(wrong_type(param, kind.openai(), v))
}

/// `Invalid type for '{param}': expected {expected}, but got {type} instead.`
pub(super) fn wrong_type(param: &str, expected: &str, v: &Value) -> Rejection {
    Rejection::at(
        format!(
            "Invalid type for '{param}': expected {expected}, but got {} instead.",
            openai_got(v)
        ),
        param,
        "invalid_type",
    )
}

/// `Invalid value: '{v}'. Supported values are: 'a', 'b', and 'c'.`, code
/// `invalid_value` (the list as OpenAI writes it: two values are joined by `and`).
pub(super) fn invalid_value(param: &str, value: &str, supported: &[&str]) -> Rejection {
    let quoted: Vec<String> = supported.iter().map(|s| format!("'{s}'")).collect();
    let list = match quoted.as_slice() {
        [] => String::new(),
        [one] => one.clone(),
        [a, b] => format!("{a} and {b}"),
        [rest @ .., last] => format!("{}, and {last}", rest.join(", ")),
    };
    Rejection::at(
        format!("Invalid value: '{value}'. Supported values are: {list}."),
        param,
        "invalid_value",
    )
}

/// `Invalid '{param}': empty array. Expected an array with minimum length 1, but got an
/// empty array instead.`, code `empty_array` (CopilotKit/CopilotKit#529).
pub(super) fn empty_array(param: &str) -> Rejection {
    Rejection::at(
        format!(
            "Invalid '{param}': empty array. Expected an array with minimum length 1, but got an empty array instead."
        ),
        param,
        "empty_array",
    )
}

/// `Invalid '{param}': array too long. Expected an array with maximum length {max}, but
/// got an array with length {n} instead.`, code `array_above_max_length` (as OpenAI
/// answers a `stop` of more than four strings).
pub(super) fn too_long(param: &str, max: usize, n: usize) -> Rejection {
    Rejection::at(
        format!(
            "Invalid '{param}': array too long. Expected an array with maximum length {max}, but got an array with length {n} instead."
        ),
        param,
        "array_above_max_length",
    )
}
