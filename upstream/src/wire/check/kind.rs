//! JSON types as each provider names them in its errors.

use serde_json::Value;

/// The JSON types a field may be required to have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Str,
    Int,
    Number,
    Bool,
    Object,
    Array,
}

impl Kind {
    /// Whether `v` has this type (an integer is a number; `1.0` is not an integer).
    pub fn fits(self, v: &Value) -> bool {
        match self {
            Kind::Str => v.is_string(),
            Kind::Int => v.is_i64() || v.is_u64(),
            Kind::Number => v.is_number(),
            Kind::Bool => v.is_boolean(),
            Kind::Object => v.is_object(),
            Kind::Array => v.is_array(),
        }
    }

    /// How OpenAI names the expected type: `Invalid type for 'n': expected an
    /// integer, …`, `… expected a decimal, …` (Invalid type messages quoted in
    /// issue threads, e.g. `Invalid type for 'temperature': expected a decimal, but got
    /// a string instead.`).
    pub fn openai(self) -> &'static str {
        match self {
            Kind::Str => "a string",
            Kind::Int => "an integer",
            Kind::Number => "a decimal",
            Kind::Bool => "a boolean",
            Kind::Object => "an object",
            Kind::Array => "an array of objects",
        }
    }

    /// How Anthropic's validation names it: `temperature: Input should be a valid
    /// number`, `system: Input should be a valid list` (pydantic's wording, as the API
    /// answers).
    pub fn anthropic(self) -> &'static str {
        match self {
            Kind::Str => "Input should be a valid string",
            Kind::Int => "Input should be a valid integer",
            Kind::Number => "Input should be a valid number",
            Kind::Bool => "Input should be a valid boolean",
            Kind::Object => "Input should be a valid dictionary",
            Kind::Array => "Input should be a valid list",
        }
    }
}

/// How OpenAI names the type a value has: `… but got a string instead.`, `… got an
/// integer …`, `… got a decimal number …`, `… got null …`.
pub(super) fn openai_got(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_f64() => "a decimal number",
        Value::Number(_) => "an integer",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A JSON number as the providers echo it back (`2.5`, `3`, `-1`).
pub(super) fn number_text(v: &Value) -> String {
    v.to_string()
}
