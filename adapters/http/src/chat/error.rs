//! The translation's errors: each names the field it is about.

use core::fmt;
use std::error::Error;

use super::api_error::ApiError;

/// A body that cannot be translated. `field` is a path into the body being translated,
/// such as `messages[2].content[0].image_url.url` (empty for the body itself).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TranslateError {
    /// The field has the wrong JSON type or a value outside what its API accepts.
    Invalid {
        /// The field's path.
        field: String,
        /// What the field must be.
        expected: &'static str,
    },
    /// A field the API requires is absent.
    Missing {
        /// The field's path.
        field: String,
    },
    /// The field (or its value) has no equivalent in the other API.
    Untranslatable {
        /// The field's path.
        field: String,
        /// Why it has none.
        why: &'static str,
    },
    /// Two fields that say the same thing disagree.
    Conflict {
        /// The field's path.
        field: String,
        /// The field it disagrees with.
        other: &'static str,
    },
}

impl TranslateError {
    /// The path of the field the error is about.
    pub fn field(&self) -> &str {
        match self {
            TranslateError::Invalid { field, .. }
            | TranslateError::Missing { field }
            | TranslateError::Untranslatable { field, .. }
            | TranslateError::Conflict { field, .. } => field,
        }
    }

    /// The field as a JSON pointer (RFC 6901) into the body that was translated:
    /// `messages[2].content[0].type` is `/messages/2/content/0/type`, the body itself
    /// is `""`.
    ///
    /// ```
    /// use serde_json::json;
    /// use steadfast_http::chat::to_anthropic;
    ///
    /// let req = json!({"messages": [{"role": "user", "content": [{"type": "input_audio"}]}]});
    /// let e = to_anthropic(&req).unwrap_err();
    /// assert_eq!(e.pointer(), "/messages/0/content/0/type");
    /// assert_eq!(req.pointer(&e.pointer()), Some(&json!("input_audio")));
    ///
    /// let odd = json!({"messages": [], "a.b/c": 1});
    /// let e = to_anthropic(&odd).unwrap_err();
    /// assert_eq!(e.field(), r#"["a.b/c"]"#);
    /// assert_eq!(e.pointer(), "/a.b~1c");
    /// ```
    pub fn pointer(&self) -> String {
        let mut out = String::new();
        let mut rest = self.field();
        while !rest.is_empty() {
            let (token, after) = next_token(rest);
            if let Some(t) = token {
                out.push('/');
                out.push_str(&t.replace('~', "~0").replace('/', "~1"));
            }
            rest = after;
        }
        out
    }

    pub(crate) fn invalid(field: impl Into<String>, expected: &'static str) -> TranslateError {
        TranslateError::Invalid {
            field: field.into(),
            expected,
        }
    }

    pub(crate) fn missing(field: impl Into<String>) -> TranslateError {
        TranslateError::Missing {
            field: field.into(),
        }
    }

    pub(crate) fn untranslatable(field: impl Into<String>, why: &'static str) -> TranslateError {
        TranslateError::Untranslatable {
            field: field.into(),
            why,
        }
    }
}

/// The first segment of a field path and what follows it: `key`, `[3]` or
/// `["a.b"]` (a key written as a JSON string); `None` for a separating dot.
fn next_token(path: &str) -> (Option<String>, &str) {
    if let Some(rest) = path.strip_prefix('.') {
        return (None, rest);
    }
    if let Some(quoted) = path.strip_prefix('[').filter(|r| r.starts_with('"')) {
        let mut keys = serde_json::Deserializer::from_str(quoted).into_iter::<String>();
        if let Some(Ok(key)) = keys.next() {
            let after = &quoted[keys.byte_offset()..];
            return (Some(key), after.strip_prefix(']').unwrap_or(after));
        }
    }
    if let Some(inner) = path.strip_prefix('[') {
        let end = inner.find(']').unwrap_or(inner.len());
        let after = inner.get(end + 1..).unwrap_or("");
        return (Some(inner[..end].to_owned()), after);
    }
    let end = path.find(['.', '[']).unwrap_or(path.len());
    (Some(path[..end].to_owned()), &path[end..])
}

struct Name<'a>(&'a str);

impl fmt::Display for Name<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            f.write_str("the body")
        } else {
            write!(f, "`{}`", self.0)
        }
    }
}

impl fmt::Display for TranslateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TranslateError::Invalid { field, expected } => {
                write!(f, "{}: expected {expected}", Name(field))
            }
            TranslateError::Missing { field } => write!(f, "{} is required", Name(field)),
            TranslateError::Untranslatable { field, why } => {
                write!(f, "{} cannot be translated: {why}", Name(field))
            }
            TranslateError::Conflict { field, other } => {
                write!(f, "{} disagrees with `{other}`", Name(field))
            }
        }
    }
}

impl Error for TranslateError {}

/// Why a stream translator refused an event: the upstream sent an error event, or the
/// event cannot be translated.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum EventError {
    /// The stream carried the provider's error (Anthropic's `error` event, or an OpenAI
    /// chunk that is an error body).
    Upstream(Box<ApiError>),
    /// The event is malformed, out of order, or has no equivalent.
    Translate(TranslateError),
}

impl fmt::Display for EventError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EventError::Upstream(e) => write!(f, "the stream carried an error: {e}"),
            EventError::Translate(e) => write!(f, "untranslatable stream event: {e}"),
        }
    }
}

impl Error for EventError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            EventError::Upstream(e) => Some(e.as_ref()),
            EventError::Translate(e) => Some(e),
        }
    }
}

impl From<TranslateError> for EventError {
    fn from(e: TranslateError) -> EventError {
        EventError::Translate(e)
    }
}
