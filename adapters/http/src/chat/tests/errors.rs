//! Error bodies of both providers in one typed form, rendered in either shape.

use serde_json::json;

use crate::chat::{ApiError, ApiErrorKind as K};
use crate::provider::Provider;

fn anthropic_body(error_type: &str) -> Vec<u8> {
    json!({"type": "error", "error": {"type": error_type, "message": "m"}, "request_id": "req_1"})
        .to_string()
        .into_bytes()
}

fn openai_body(error_type: &str, code: Option<&str>) -> Vec<u8> {
    json!({"error": {"message": "m", "type": error_type, "param": null, "code": code}})
        .to_string()
        .into_bytes()
}

#[test]
fn every_anthropic_error_type_has_its_kind_and_openai_rendering() {
    let cases = [
        (
            400,
            "invalid_request_error",
            K::InvalidRequest,
            "invalid_request_error",
            400,
        ),
        (
            401,
            "authentication_error",
            K::Authentication,
            "invalid_request_error",
            401,
        ),
        (402, "billing_error", K::Billing, "insufficient_quota", 429),
        (
            403,
            "permission_error",
            K::Permission,
            "invalid_request_error",
            403,
        ),
        (
            404,
            "not_found_error",
            K::NotFound,
            "invalid_request_error",
            404,
        ),
        (
            413,
            "request_too_large",
            K::RequestTooLarge,
            "invalid_request_error",
            413,
        ),
        (429, "rate_limit_error", K::RateLimit, "requests", 429),
        (500, "api_error", K::Server, "server_error", 500),
        (504, "timeout_error", K::Timeout, "server_error", 504),
        (529, "overloaded_error", K::Overloaded, "server_error", 503),
    ];
    for (status, error_type, kind, openai_type, openai_status) in cases {
        let e = ApiError::from_response(Provider::Anthropic, status, &anthropic_body(error_type));
        assert_eq!(e.kind, kind, "{error_type}");
        assert_eq!(e.provider, Provider::Anthropic);
        assert_eq!(e.status, Some(status));
        assert_eq!(e.request_id.as_deref(), Some("req_1"));
        assert_eq!(e.to_anthropic()["error"]["type"], error_type);
        assert_eq!(e.status_for(Provider::Anthropic), status);
        assert_eq!(e.to_openai()["error"]["type"], openai_type, "{error_type}");
        assert_eq!(e.to_openai()["error"]["message"], "m");
        assert_eq!(
            e.status_for(Provider::OpenAi),
            openai_status,
            "{error_type}"
        );
    }
}

#[test]
fn openai_errors_read_their_code_and_status() {
    let cases = [
        (
            400,
            "invalid_request_error",
            Some("context_length_exceeded"),
            K::InvalidRequest,
            "invalid_request_error",
        ),
        (
            401,
            "invalid_request_error",
            Some("invalid_api_key"),
            K::Authentication,
            "authentication_error",
        ),
        (
            401,
            "invalid_request_error",
            None,
            K::Authentication,
            "authentication_error",
        ),
        (
            404,
            "invalid_request_error",
            Some("model_not_found"),
            K::NotFound,
            "not_found_error",
        ),
        (
            429,
            "requests",
            Some("rate_limit_exceeded"),
            K::RateLimit,
            "rate_limit_error",
        ),
        (
            429,
            "insufficient_quota",
            Some("insufficient_quota"),
            K::Billing,
            "billing_error",
        ),
        (500, "server_error", None, K::Server, "api_error"),
        (503, "server_error", None, K::Overloaded, "overloaded_error"),
    ];
    for (status, error_type, code, kind, anthropic_type) in cases {
        let e = ApiError::from_response(Provider::OpenAi, status, &openai_body(error_type, code));
        assert_eq!(e.kind, kind, "{status} {error_type} {code:?}");
        assert_eq!(e.provider, Provider::OpenAi);
        assert_eq!(e.to_anthropic()["type"], "error");
        assert_eq!(
            e.to_anthropic()["error"]["type"],
            anthropic_type,
            "{status} {code:?}"
        );
        assert_eq!(e.to_openai()["error"]["code"], json!(code));
        assert_eq!(e.status_for(Provider::OpenAi), status);
    }
}

#[test]
fn a_body_of_neither_shape_takes_the_status_kind() {
    for (status, kind) in [
        (502, K::Server),
        (503, K::Overloaded),
        (429, K::RateLimit),
        (418, K::Other),
    ] {
        let e = ApiError::from_response(Provider::OpenAi, status, b"<html>Bad Gateway</html>");
        assert_eq!(e.kind, kind, "{status}");
        assert_eq!(e.status, Some(status));
        assert!(e.message.contains(&status.to_string()));
    }
}

#[test]
fn an_unknown_type_keeps_its_words_in_its_own_shape() {
    let body = json!({"error": {"message": "m", "type": "weird_error", "code": 1234}});
    let e = ApiError::from_response(Provider::OpenAi, 400, body.to_string().as_bytes());
    assert_eq!(e.kind, K::InvalidRequest);
    assert_eq!(e.code.as_deref(), Some("1234"));
    assert_eq!(e.to_openai()["error"]["type"], "weird_error");
    let made = ApiError::new(Provider::Anthropic, K::Overloaded, "busy");
    assert_eq!(
        made.to_anthropic(),
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "busy"}})
    );
    assert_eq!(made.status_for(Provider::Anthropic), 529);
    assert_eq!(made.to_string(), "overloaded_error (anthropic): busy");
}
