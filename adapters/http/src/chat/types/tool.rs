//! Tools, tool choices and tool calls.

use serde::{Deserialize, Serialize};
use serde_json::Value;

fn function() -> String {
    "function".to_owned()
}

/// A tool the model may call: a function with a JSON Schema for its arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    /// `function` (the only kind the translation to Anthropic accepts).
    #[serde(rename = "type", default = "function")]
    pub kind: String,
    /// The function.
    pub function: FunctionDef,
}

impl Tool {
    /// A function tool.
    ///
    /// ```
    /// use serde_json::json;
    /// use steadfast_http::chat::types::Tool;
    /// let t = Tool::function("weather", "The weather in a city",
    ///     json!({"type": "object", "properties": {"city": {"type": "string"}}}));
    /// assert_eq!(serde_json::to_value(&t).unwrap()["function"]["name"], "weather");
    /// ```
    pub fn function(
        name: impl Into<String>,
        description: impl Into<String>,
        parameters: Value,
    ) -> Tool {
        Tool {
            kind: function(),
            function: FunctionDef {
                name: name.into(),
                description: Some(description.into()),
                parameters: Some(parameters),
                strict: None,
            },
        }
    }
}

/// A function tool's definition.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct FunctionDef {
    /// The function's name.
    pub name: String,
    /// What it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The JSON Schema of its arguments (none: no arguments).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters: Option<Value>,
    /// OpenAI's strict schema adherence (refused by the translation to Anthropic).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strict: Option<bool>,
}

/// Which tool the model may or must call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ToolChoice {
    /// `auto`, `none` or `required`.
    Mode(ToolChoiceMode),
    /// This function.
    Named(NamedFunction),
}

impl ToolChoice {
    /// The model must call the function `name`.
    ///
    /// ```
    /// use steadfast_http::chat::types::ToolChoice;
    /// assert_eq!(serde_json::to_value(ToolChoice::function("weather")).unwrap(),
    ///            serde_json::json!({"type": "function", "function": {"name": "weather"}}));
    /// assert_eq!(serde_json::to_value(ToolChoice::REQUIRED).unwrap(), "required");
    /// ```
    pub fn function(name: impl Into<String>) -> ToolChoice {
        ToolChoice::Named(NamedFunction {
            kind: function(),
            function: FunctionName { name: name.into() },
        })
    }

    /// The model decides.
    pub const AUTO: ToolChoice = ToolChoice::Mode(ToolChoiceMode::Auto);
    /// The model calls no tool.
    pub const NONE: ToolChoice = ToolChoice::Mode(ToolChoiceMode::None);
    /// The model calls at least one tool.
    pub const REQUIRED: ToolChoice = ToolChoice::Mode(ToolChoiceMode::Required);
}

/// A tool choice by mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolChoiceMode {
    /// The model decides.
    Auto,
    /// No tool.
    None,
    /// At least one tool.
    Required,
}

/// A tool choice naming a function.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NamedFunction {
    /// `function`.
    #[serde(rename = "type", default = "function")]
    pub kind: String,
    /// The function.
    pub function: FunctionName,
}

/// A function's name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FunctionName {
    /// The name.
    pub name: String,
}

/// A tool call of the model.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ToolCall {
    /// The call's id, which its result names.
    pub id: String,
    /// `function`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The function and its arguments.
    pub function: FunctionCall,
}

impl ToolCall {
    /// A call of the function `name` with `arguments` (serialised as a JSON string).
    ///
    /// ```
    /// use serde_json::json;
    /// use steadfast_http::chat::types::ToolCall;
    /// let call = ToolCall::new("call_1", "weather", &json!({"city": "Oslo"}));
    /// assert_eq!(call.arguments().unwrap(), json!({"city": "Oslo"}));
    /// ```
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: &Value) -> ToolCall {
        ToolCall {
            id: id.into(),
            kind: function(),
            function: FunctionCall {
                name: name.into(),
                arguments: arguments.to_string(),
            },
        }
    }

    /// The arguments parsed from their JSON string (the model may write invalid JSON).
    ///
    /// ```
    /// use steadfast_http::chat::types::ToolCall;
    /// let mut call = ToolCall::new("c", "f", &serde_json::json!({}));
    /// call.function.arguments = "{\"city\": \"Os".into();
    /// assert!(call.arguments().is_err());
    /// ```
    pub fn arguments(&self) -> Result<Value, serde_json::Error> {
        serde_json::from_str(&self.function.arguments)
    }
}

/// A called function.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct FunctionCall {
    /// The function's name.
    pub name: String,
    /// Its arguments, a JSON object in a string.
    pub arguments: String,
}
