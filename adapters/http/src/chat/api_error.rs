//! Error bodies of both providers in one typed form, and rendered in either shape:
//! OpenAI's `{"error":{"message","type","param","code"}}` and Anthropic's
//! `{"type":"error","error":{"type","message"},"request_id"}`.

use core::fmt;
use std::error::Error;

use serde_json::{Value, json};

use crate::provider::Provider;

/// What an error is about, across both providers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ApiErrorKind {
    /// The request is malformed or cannot be served (400).
    InvalidRequest,
    /// The key is missing, wrong or revoked (401).
    Authentication,
    /// The key may not use the resource (403).
    Permission,
    /// The model or resource does not exist (404).
    NotFound,
    /// The request body is too large (413).
    RequestTooLarge,
    /// A rate limit was hit (429).
    RateLimit,
    /// The account's quota or credit is exhausted (OpenAI 429 `insufficient_quota`,
    /// Anthropic 402 `billing_error`).
    Billing,
    /// The provider failed (500).
    Server,
    /// The provider is overloaded (OpenAI 503, Anthropic 529).
    Overloaded,
    /// The provider timed out (504).
    Timeout,
    /// A type neither provider documents; the provider's own `type` is kept.
    Other,
}

impl ApiErrorKind {
    /// The kind of an error `type` of either provider (or an OpenAI-compatible one).
    pub fn from_type(error_type: &str) -> ApiErrorKind {
        use ApiErrorKind as K;
        match error_type {
            "invalid_request_error" => K::InvalidRequest,
            "authentication_error" => K::Authentication,
            "permission_error" => K::Permission,
            "not_found_error" => K::NotFound,
            "request_too_large" => K::RequestTooLarge,
            "rate_limit_error" | "requests" | "tokens" => K::RateLimit,
            "billing_error" | "insufficient_quota" => K::Billing,
            "api_error" | "server_error" => K::Server,
            "overloaded_error" => K::Overloaded,
            "timeout_error" => K::Timeout,
            _ => K::Other,
        }
    }

    /// The kind an OpenAI `code` names, if it names one.
    pub fn from_code(code: &str) -> Option<ApiErrorKind> {
        use ApiErrorKind as K;
        Some(match code {
            "invalid_api_key" => K::Authentication,
            "insufficient_quota" | "billing_hard_limit_reached" | "billing_not_active" => {
                K::Billing
            }
            "rate_limit_exceeded" => K::RateLimit,
            "model_not_found" => K::NotFound,
            "unsupported_country_region_territory" => K::Permission,
            "context_length_exceeded" => K::InvalidRequest,
            _ => return None,
        })
    }

    /// The kind an HTTP status stands for, when the body says nothing more precise.
    pub fn from_status(status: u16) -> ApiErrorKind {
        use ApiErrorKind as K;
        match status {
            400 | 422 => K::InvalidRequest,
            401 => K::Authentication,
            402 => K::Billing,
            403 => K::Permission,
            404 => K::NotFound,
            413 => K::RequestTooLarge,
            429 => K::RateLimit,
            503 | 529 => K::Overloaded,
            504 => K::Timeout,
            500..=599 => K::Server,
            _ => K::Other,
        }
    }

    /// Anthropic's `type` and status for this kind.
    fn anthropic(self) -> (&'static str, u16) {
        use ApiErrorKind as K;
        match self {
            K::InvalidRequest => ("invalid_request_error", 400),
            K::Authentication => ("authentication_error", 401),
            K::Permission => ("permission_error", 403),
            K::NotFound => ("not_found_error", 404),
            K::RequestTooLarge => ("request_too_large", 413),
            K::RateLimit => ("rate_limit_error", 429),
            K::Billing => ("billing_error", 402),
            K::Server | K::Other => ("api_error", 500),
            K::Overloaded => ("overloaded_error", 529),
            K::Timeout => ("timeout_error", 504),
        }
    }

    /// OpenAI's `type`, `code` and status for this kind.
    fn openai(self) -> (&'static str, Option<&'static str>, u16) {
        use ApiErrorKind as K;
        const INVALID: &str = "invalid_request_error";
        match self {
            K::InvalidRequest => (INVALID, None, 400),
            K::Authentication => (INVALID, Some("invalid_api_key"), 401),
            K::Permission => (INVALID, None, 403),
            K::NotFound => (INVALID, None, 404),
            K::RequestTooLarge => (INVALID, None, 413),
            K::RateLimit => ("requests", Some("rate_limit_exceeded"), 429),
            K::Billing => ("insufficient_quota", Some("insufficient_quota"), 429),
            K::Server | K::Other => ("server_error", None, 500),
            K::Overloaded => ("server_error", None, 503),
            K::Timeout => ("server_error", None, 504),
        }
    }
}

/// An error body of either provider. Rendering it in the shape it came in keeps its
/// `type` and `code`; rendering it in the other shape uses that provider's words for
/// its [`kind`](ApiError::kind).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// What the error is about.
    pub kind: ApiErrorKind,
    /// The human-readable message.
    pub message: String,
    /// The `type` as the provider wrote it.
    pub error_type: String,
    /// OpenAI's `code` (Anthropic has none).
    pub code: Option<String>,
    /// OpenAI's `param`: the request field at fault.
    pub param: Option<String>,
    /// Anthropic's `request_id`.
    pub request_id: Option<String>,
    /// The HTTP status it came with, when known.
    pub status: Option<u16>,
    /// Whose shape the body had.
    pub provider: Provider,
}

fn text(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_owned)
}

impl ApiError {
    /// An error of `kind` in `provider`'s words.
    pub fn new(provider: Provider, kind: ApiErrorKind, message: impl Into<String>) -> ApiError {
        let error_type = match provider {
            Provider::OpenAi => kind.openai().0,
            Provider::Anthropic => kind.anthropic().0,
        };
        ApiError {
            kind,
            message: message.into(),
            error_type: error_type.to_owned(),
            code: match provider {
                Provider::OpenAi => kind.openai().1.map(str::to_owned),
                Provider::Anthropic => None,
            },
            param: None,
            request_id: None,
            status: None,
            provider,
        }
    }

    /// Reads an error body of either shape; `None` when `body` is neither.
    ///
    /// ```
    /// use serde_json::json;
    /// use steadfast_http::chat::{ApiError, ApiErrorKind};
    ///
    /// let body = json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}});
    /// let e = ApiError::from_body(&body).unwrap();
    /// assert_eq!(e.kind, ApiErrorKind::Overloaded);
    /// assert_eq!(e.to_openai()["error"]["type"], "server_error");
    /// assert_eq!(e.status_for(steadfast_http::Provider::OpenAi), 503);
    /// ```
    pub fn from_body(body: &Value) -> Option<ApiError> {
        let inner = body.get("error")?;
        let message = text(inner, "message")?;
        let error_type = text(inner, "type").unwrap_or_default();
        let anthropic = body.get("type").and_then(Value::as_str) == Some("error");
        let code = match inner.get("code") {
            Some(Value::String(s)) => Some(s.clone()),
            Some(Value::Number(n)) => Some(n.to_string()),
            _ => None,
        };
        let kind = code
            .as_deref()
            .and_then(ApiErrorKind::from_code)
            .unwrap_or_else(|| ApiErrorKind::from_type(&error_type));
        Some(ApiError {
            kind,
            message,
            error_type,
            code,
            param: text(inner, "param"),
            request_id: text(body, "request_id"),
            status: None,
            provider: if anthropic {
                Provider::Anthropic
            } else {
                Provider::OpenAi
            },
        })
    }

    /// The error of an HTTP response: its body read as [`from_body`](Self::from_body),
    /// the status refining a generic type (OpenAI's `invalid_request_error` for a 401,
    /// `server_error` for a 503); a body of neither shape gives the status's kind.
    pub fn from_response(provider: Provider, status: u16, body: &[u8]) -> ApiError {
        let parsed = serde_json::from_slice::<Value>(body)
            .ok()
            .and_then(|v| ApiError::from_body(&v));
        let Some(mut e) = parsed else {
            let mut e = ApiError::new(provider, ApiErrorKind::from_status(status), reason(status));
            e.status = Some(status);
            return e;
        };
        let by_status = ApiErrorKind::from_status(status);
        let generic = matches!(e.kind, ApiErrorKind::InvalidRequest | ApiErrorKind::Server)
            && e.code
                .as_deref()
                .and_then(ApiErrorKind::from_code)
                .is_none();
        if e.kind == ApiErrorKind::Other || (generic && by_status != ApiErrorKind::Other) {
            e.kind = by_status;
        }
        e.status = Some(status);
        e
    }

    /// The body in OpenAI's shape.
    pub fn to_openai(&self) -> Value {
        let (etype, code) = match self.provider {
            Provider::OpenAi => (self.error_type.as_str(), self.code.as_deref()),
            Provider::Anthropic if self.kind == ApiErrorKind::Other => {
                (self.error_type.as_str(), None)
            }
            Provider::Anthropic => {
                let (t, c, _) = self.kind.openai();
                (t, c)
            }
        };
        json!({"error": {"message": self.message, "type": etype, "param": self.param, "code": code}})
    }

    /// The body in Anthropic's shape (also the data of its stream `error` event).
    pub fn to_anthropic(&self) -> Value {
        let etype = match self.provider {
            Provider::Anthropic => self.error_type.as_str(),
            Provider::OpenAi => self.kind.anthropic().0,
        };
        let mut body = json!({"type": "error", "error": {"type": etype, "message": self.message}});
        if let (Some(id), Some(o)) = (&self.request_id, body.as_object_mut()) {
            o.insert("request_id".into(), id.clone().into());
        }
        body
    }

    /// The status `provider` answers this error with: the status it came with when it
    /// came in that provider's shape, else that provider's status for the kind.
    pub fn status_for(&self, provider: Provider) -> u16 {
        if let (Some(s), true) = (self.status, self.provider == provider) {
            return s;
        }
        match provider {
            Provider::OpenAi => self.kind.openai().2,
            Provider::Anthropic => self.kind.anthropic().1,
        }
    }
}

fn reason(status: u16) -> String {
    format!("HTTP status {status}")
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({}): {}",
            self.error_type, self.provider, self.message
        )
    }
}

impl Error for ApiError {}
