#![allow(clippy::arithmetic_side_effects)]

use super::*;
use crate::hints::Hints;
use crate::outcome::{BodyState, Outcome, Phase, Response, Transport, TransportKind};
use alloc::vec;
use alloc::vec::Vec;
use proptest::prelude::*;
use proptest::test_runner::{Config as ProptestConfig, RngSeed};

fn failure(class: Class, scope: Scope, retryable: bool, after_send: bool) -> Verdict {
    Verdict::Failure(Failure {
        class,
        scope,
        retryable,
        after_send,
    })
}

fn status(s: u16) -> Verdict {
    ClassifyConfig::default().classify(&Outcome::Response(Response::new(s)))
}

fn with_body(s: u16, body: &str) -> Verdict {
    let r = Response::new(s).with_error(ErrorFacts::scan(body.as_bytes()));
    ClassifyConfig::default().classify(&r.into())
}

fn kind(body: &str) -> Option<ErrorKind> {
    ErrorFacts::scan(body.as_bytes()).kind
}

/// A config naming two other providers' codes.
fn with_codes() -> ClassifyConfig {
    let mut cfg = ClassifyConfig::default();
    let overloaded = Rule::new(Class::Unavailable, Scope::Endpoint, true);
    cfg.error_codes.set("model_overloaded", overloaded).unwrap();
    let exhausted = Rule::new(Class::QuotaExhausted, Scope::Key, true);
    cfg.error_codes.set("tokens_exhausted", exhausted).unwrap();
    cfg
}

fn classify_with(cfg: &ClassifyConfig, s: u16, body: &str) -> Verdict {
    let r = Response::new(s).with_error(ErrorFacts::scan(body.as_bytes()));
    cfg.classify(&r.into())
}

fn hinted(s: u16, should_retry: Option<bool>) -> Outcome {
    let hints = Hints {
        should_retry,
        ..Hints::default()
    };
    Response::new(s).with_hints(hints).into()
}

// ---- statuses -------------------------------------------------------------------

#[test]
fn named_statuses() {
    use Class as C;
    use Scope as S;
    let table = [
        (400, C::BadRequest, S::Request, false, false),
        (401, C::Unauthorized, S::Key, true, false),
        (402, C::PaymentRequired, S::Key, true, false),
        (403, C::Forbidden, S::Key, true, false),
        (404, C::NotFound, S::Request, false, false),
        (405, C::BadRequest, S::Request, false, false),
        (408, C::RequestTimeout, S::Endpoint, true, false),
        (409, C::Conflict, S::Endpoint, true, false),
        (410, C::BadRequest, S::Request, false, false),
        (413, C::PayloadTooLarge, S::Request, false, false),
        (418, C::BadRequest, S::Request, false, false),
        (422, C::Unprocessable, S::Request, false, false),
        (429, C::RateLimited, S::Throttle, true, false),
        (451, C::BadRequest, S::Request, false, false),
        (499, C::BadRequest, S::Request, false, false),
        (500, C::ServerError, S::Endpoint, true, true),
        (501, C::NotImplemented, S::Request, false, false),
        (502, C::BadGateway, S::Endpoint, true, true),
        (503, C::Unavailable, S::Endpoint, true, false),
        (504, C::GatewayTimeout, S::Endpoint, true, true),
        (505, C::NotImplemented, S::Request, false, false),
        (507, C::ServerError, S::Endpoint, true, true),
        (520, C::ServerError, S::Endpoint, true, true),
        (529, C::Overloaded, S::Endpoint, true, false),
        (599, C::ServerError, S::Endpoint, true, true),
        (0, C::UnexpectedStatus, S::Request, false, false),
        (99, C::UnexpectedStatus, S::Request, false, false),
        (100, C::UnexpectedStatus, S::Request, false, false),
        (101, C::UnexpectedStatus, S::Request, false, false),
        (199, C::UnexpectedStatus, S::Request, false, false),
        (300, C::UnexpectedStatus, S::Request, false, false),
        (301, C::UnexpectedStatus, S::Request, false, false),
        (304, C::UnexpectedStatus, S::Request, false, false),
        (399, C::UnexpectedStatus, S::Request, false, false),
        (600, C::UnexpectedStatus, S::Request, false, false),
        (999, C::UnexpectedStatus, S::Request, false, false),
        (u16::MAX, C::UnexpectedStatus, S::Request, false, false),
    ];
    for (s, class, scope, retryable, after_send) in table {
        assert_eq!(
            status(s),
            failure(class, scope, retryable, after_send),
            "status {s}"
        );
    }
}

#[test]
fn every_status_from_0_to_999() {
    let named = [
        401, 402, 403, 404, 408, 409, 413, 422, 429, 501, 502, 503, 504, 505, 529,
    ];
    for s in 0..=999u16 {
        let v = status(s);
        match s {
            200..=299 => assert_eq!(v, Verdict::Success, "{s}"),
            400..=499 if !named.contains(&s) => assert_eq!(
                v,
                failure(Class::BadRequest, Scope::Request, false, false),
                "{s}"
            ),
            500..=599 if !named.contains(&s) => assert_eq!(
                v,
                failure(Class::ServerError, Scope::Endpoint, true, true),
                "{s}"
            ),
            400..=599 => {
                let f = v.failure().unwrap();
                assert_ne!(f.class, Class::UnexpectedStatus, "{s}");
                assert_ne!(f.class, Class::BadRequest, "{s}");
                assert_ne!(f.class, Class::ServerError, "{s}");
            }
            _ => assert_eq!(
                v,
                failure(Class::UnexpectedStatus, Scope::Request, false, false),
                "{s}"
            ),
        }
    }
}

#[test]
fn success_and_malformed_bodies() {
    let cfg = ClassifyConfig::default();
    for s in [200, 201, 204, 299] {
        let ok = Response::new(s);
        assert_eq!(cfg.classify(&ok.into()), Verdict::Success);
        for body in [BodyState::Malformed, BodyState::Truncated] {
            assert_eq!(
                cfg.classify(&ok.with_body(body).into()),
                failure(Class::MalformedBody, Scope::Endpoint, true, true)
            );
        }
    }
    // An error body on a 2xx is ignored; a body state on an error status is too.
    let ok = Response::new(200).with_error(ErrorFacts {
        kind: Some(ErrorKind::ApiError),
        ..ErrorFacts::default()
    });
    assert_eq!(cfg.classify(&ok.into()), Verdict::Success);
    let cut_500 = Response::new(500).with_body(BodyState::Truncated);
    assert_eq!(
        cfg.classify(&cut_500.into()),
        failure(Class::ServerError, Scope::Endpoint, true, true)
    );
}

// ---- error bodies ---------------------------------------------------------------

const OPENAI_RATE: &str = r#"{"error":{"message":"Rate limit reached for gpt-4o in organization org-abc on tokens per min (TPM): Limit 30000, Used 29000, Requested 1500. Please try again in 1.2s. Visit https://platform.openai.com/account/rate-limits to learn more.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}"#;
const OPENAI_QUOTA: &str = r#"{
    "error": {
        "message": "You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.",
        "type": "insufficient_quota",
        "param": null,
        "code": "insufficient_quota"
    }
}
"#;
const OPENAI_CONTEXT: &str = r#"{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;
const OPENAI_KEY: &str = r#"{"error":{"message":"Incorrect API key provided: sk-abc*****xyz. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}"#;
const OPENAI_HARD_LIMIT: &str = r#"{"error":{"message":"Billing hard limit has been reached","type":"invalid_request_error","param":null,"code":"billing_hard_limit_reached"}}"#;
const OPENAI_NOT_ACTIVE: &str = r#"{"error":{"message":"Your account is not active, please check your billing details on our website.","type":"billing_not_active","param":null,"code":null}}"#;
const OPENAI_SERVER: &str = r#"{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}"#;
const OPENAI_MODEL: &str = r#"{"error":{"message":"The model `gpt-9` does not exist or you do not have access to it.","type":"invalid_request_error","param":null,"code":"model_not_found"}}"#;
const OPENAI_INVALID: &str = r#"{"error":{"message":"Invalid value for 'temperature': expected a number.","type":"invalid_request_error","param":"temperature","code":null}}"#;
const ANTHROPIC_OVERLOADED: &str = r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_011"}"#;
const ANTHROPIC_RATE: &str = r#"{"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed the rate limit for your organization of 50,000 input tokens per minute."}}"#;
const ANTHROPIC_AUTH: &str =
    r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#;
const ANTHROPIC_PERMISSION: &str = r#"{"type":"error","error":{"type":"permission_error","message":"Your API key does not have permission to use the specified resource."}}"#;
const ANTHROPIC_TOO_LONG: &str = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 215000 tokens > 200000 maximum"},"request_id":"req_012"}"#;
const ANTHROPIC_INVALID: &str = r#"{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: Field required"}}"#;
const ANTHROPIC_TOO_LARGE: &str = r#"{"type":"error","error":{"type":"request_too_large","message":"Request exceeds the maximum allowed number of bytes."}}"#;
const ANTHROPIC_NOT_FOUND: &str =
    r#"{"type":"error","error":{"type":"not_found_error","message":"model: claude-9"}}"#;
const ANTHROPIC_API: &str =
    r#"{"type":"error","error":{"type":"api_error","message":"Internal server error"}}"#;
const ANTHROPIC_BILLING: &str = r#"{"type":"error","error":{"type":"billing_error","message":"Your credit balance is too low to access the Anthropic API."}}"#;

#[test]
fn realistic_bodies_scan_to_their_kind() {
    use ErrorKind as K;
    let table = [
        (OPENAI_RATE, K::RateLimitExceeded),
        (OPENAI_QUOTA, K::InsufficientQuota),
        (OPENAI_CONTEXT, K::ContextLengthExceeded),
        (OPENAI_KEY, K::InvalidApiKey),
        (OPENAI_HARD_LIMIT, K::BillingHardLimitReached),
        (OPENAI_NOT_ACTIVE, K::BillingNotActive),
        (OPENAI_SERVER, K::ServerError),
        (OPENAI_MODEL, K::ModelNotFound),
        (OPENAI_INVALID, K::InvalidRequestError),
        (ANTHROPIC_OVERLOADED, K::OverloadedError),
        (ANTHROPIC_RATE, K::RateLimitError),
        (ANTHROPIC_AUTH, K::AuthenticationError),
        (ANTHROPIC_PERMISSION, K::PermissionError),
        (ANTHROPIC_TOO_LONG, K::ContextLengthExceeded),
        (ANTHROPIC_INVALID, K::InvalidRequestError),
        (ANTHROPIC_TOO_LARGE, K::RequestTooLarge),
        (ANTHROPIC_NOT_FOUND, K::NotFoundError),
        (ANTHROPIC_API, K::ApiError),
        (ANTHROPIC_BILLING, K::BillingError),
    ];
    for (body, expected) in table {
        assert_eq!(kind(body), Some(expected), "{body}");
    }
    // Every kind is recognised by its own name, as type and as code.
    for k in ErrorKind::ALL {
        let as_type = alloc::format!(r#"{{"error":{{"type":"{}"}}}}"#, k.name());
        let as_code = alloc::format!(r#"{{"error":{{"code":"{}","type":null}}}}"#, k.name());
        assert_eq!(kind(&as_type), Some(k));
        assert_eq!(kind(&as_code), Some(k));
    }
}

#[test]
fn bodies_refine_the_status() {
    use Class as C;
    use Scope as S;
    let table = [
        (429, OPENAI_RATE, C::RateLimited, S::Throttle, true),
        (429, OPENAI_QUOTA, C::QuotaExhausted, S::Key, true),
        (400, OPENAI_CONTEXT, C::ContextTooLong, S::Request, false),
        (401, OPENAI_KEY, C::Unauthorized, S::Key, true),
        (400, OPENAI_HARD_LIMIT, C::QuotaExhausted, S::Key, true),
        (429, OPENAI_NOT_ACTIVE, C::QuotaExhausted, S::Key, true),
        (500, OPENAI_SERVER, C::ServerError, S::Endpoint, true),
        (404, OPENAI_MODEL, C::NotFound, S::Request, false),
        (400, OPENAI_INVALID, C::BadRequest, S::Request, false),
        (422, OPENAI_INVALID, C::Unprocessable, S::Request, false),
        (529, ANTHROPIC_OVERLOADED, C::Overloaded, S::Endpoint, true),
        (500, ANTHROPIC_OVERLOADED, C::Overloaded, S::Endpoint, true),
        (429, ANTHROPIC_RATE, C::RateLimited, S::Throttle, true),
        (401, ANTHROPIC_AUTH, C::Unauthorized, S::Key, true),
        (403, ANTHROPIC_PERMISSION, C::Forbidden, S::Key, true),
        (
            400,
            ANTHROPIC_TOO_LONG,
            C::ContextTooLong,
            S::Request,
            false,
        ),
        (400, ANTHROPIC_INVALID, C::BadRequest, S::Request, false),
        (
            413,
            ANTHROPIC_TOO_LARGE,
            C::PayloadTooLarge,
            S::Request,
            false,
        ),
        (404, ANTHROPIC_NOT_FOUND, C::NotFound, S::Request, false),
        (500, ANTHROPIC_API, C::ServerError, S::Endpoint, true),
        (400, ANTHROPIC_BILLING, C::QuotaExhausted, S::Key, true),
        (
            503,
            "<html>503 Service Unavailable</html>",
            C::Unavailable,
            S::Endpoint,
            true,
        ),
    ];
    for (s, body, class, scope, retryable) in table {
        let f = with_body(s, body).failure().unwrap();
        assert_eq!(
            (f.class, f.scope, f.retryable),
            (class, scope, retryable),
            "{s} {body}"
        );
    }
}

#[test]
fn bodies_do_not_refine_non_error_statuses() {
    assert_eq!(
        with_body(302, ANTHROPIC_OVERLOADED),
        failure(Class::UnexpectedStatus, Scope::Request, false, false)
    );
    assert_eq!(
        with_body(600, OPENAI_QUOTA),
        failure(Class::UnexpectedStatus, Scope::Request, false, false)
    );
}

#[test]
fn top_level_type_is_not_the_error_type() {
    assert_eq!(kind(r#"{"type":"error"}"#), None);
    assert_eq!(kind(r#"{"type":"overloaded_error","message":"x"}"#), None);
    assert_eq!(
        kind(r#"{"type":"rate_limit_error","error":{"type":"api_error"}}"#),
        Some(ErrorKind::ApiError)
    );
}

#[test]
fn code_wins_over_type() {
    use ErrorKind as K;
    let table = [
        (
            r#"{"error":{"type":"insufficient_quota","code":"rate_limit_exceeded"}}"#,
            K::RateLimitExceeded,
        ),
        (
            r#"{"error":{"code":"rate_limit_exceeded","type":"insufficient_quota"}}"#,
            K::RateLimitExceeded,
        ),
        (
            r#"{"error":{"type":"invalid_request_error","code":"model_not_found"}}"#,
            K::ModelNotFound,
        ),
        (
            r#"{"error":{"type":"server_error","code":"something_new"}}"#,
            K::ServerError,
        ),
        (
            r#"{"error":{"type":"something_new","code":"invalid_api_key"}}"#,
            K::InvalidApiKey,
        ),
        (
            r#"{"error":{"type":"server_error","code":500}}"#,
            K::ServerError,
        ),
        (
            r#"{"error":{"type":"server_error","code":{"x":"api_error"}}}"#,
            K::ServerError,
        ),
        (
            r#"{"error":{"type":"api_error","type":"overloaded_error"}}"#,
            K::ApiError,
        ),
    ];
    for (body, expected) in table {
        assert_eq!(kind(body), Some(expected), "{body}");
    }
    assert_eq!(kind(r#"{"error":{"type":"new","code":"newer"}}"#), None);
    assert_eq!(kind(r#"{"error":{"type":"Rate_Limit_Error"}}"#), None);
}

#[test]
fn other_providers_codes_are_classified_as_configured() {
    let cfg = with_codes();
    let overloaded = failure(Class::Unavailable, Scope::Endpoint, true, false);
    // A 400 would be a request error; the named type says the model is overloaded.
    let body = r#"{"error":{"type":"model_overloaded","message":"try later"}}"#;
    assert_eq!(with_body(400, body), status(400));
    assert_eq!(classify_with(&cfg, 400, body), overloaded);
    // Escapes are decoded before the comparison.
    let escaped = r#"{"error":{"type":"model\u005foverloaded"}}"#;
    assert_eq!(classify_with(&cfg, 400, escaped), overloaded);
    // A named code wins over a recognised type; a recognised code over a named type.
    let body = r#"{"error":{"type":"invalid_request_error","code":"tokens_exhausted"}}"#;
    let exhausted = failure(Class::QuotaExhausted, Scope::Key, true, false);
    assert_eq!(classify_with(&cfg, 400, body), exhausted);
    let body = r#"{"error":{"type":"model_overloaded","code":"insufficient_quota"}}"#;
    assert_eq!(
        classify_with(&cfg, 429, body),
        with_body(429, r#"{"error":{"code":"insufficient_quota"}}"#)
    );
    // Names nobody configured, or near misses, leave the status rule.
    for body in [
        r#"{"error":{"type":"model_overloade"}}"#,
        r#"{"error":{"type":"model_overloaded_"}}"#,
        r#"{"error":{"type":"model\u00"}}"#,
    ] {
        assert_eq!(classify_with(&cfg, 400, body), status(400), "{body}");
    }
}

#[test]
fn the_code_table_is_bounded_and_names_its_field() {
    let mut cfg = ClassifyConfig::default();
    let rule = Rule::new(Class::Unavailable, Scope::Endpoint, true);
    for i in 0..MAX_ERROR_CODES {
        cfg.error_codes
            .set(&alloc::format!("code_{i}"), rule)
            .unwrap();
    }
    // Setting a named code again replaces its rule.
    let other = Rule::new(Class::BadRequest, Scope::Request, false);
    cfg.error_codes.set("code_3", other).unwrap();
    assert_eq!(cfg.error_codes.get("code_3"), Some(other));
    let err = cfg.error_codes.set("one_too_many", rule).unwrap_err();
    assert_eq!(err.field(), "classify.error_code");
    let long = "x".repeat(MAX_CODE_LEN + 1);
    assert!(
        ClassifyConfig::default()
            .error_codes
            .set(&long, rule)
            .is_err()
    );
    assert!(ClassifyConfig::default().error_codes.set("", rule).is_err());
}

#[test]
fn context_too_long_messages() {
    use ErrorKind as K;
    let table = [
        (
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"Prompt is too long"}}"#,
            Some(K::ContextLengthExceeded),
        ),
        (
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"input length and `max_tokens` exceed context limit: 197202 + 21333 > 200000, decrease input length or `max_tokens` and try again"}}"#,
            Some(K::ContextLengthExceeded),
        ),
        (
            r#"{"error":{"message":"This model's maximum context length is 4096 tokens.","type":"BadRequestError","param":null,"code":400}}"#,
            Some(K::ContextLengthExceeded),
        ),
        (
            r#"{"error":{"message":"prompt is too long","type":"rate_limit_error"}}"#,
            Some(K::RateLimitError),
        ),
        (
            r#"{"error":{"message":"prompt is too short","type":"invalid_request_error"}}"#,
            Some(K::InvalidRequestError),
        ),
        (r#"{"error":{"message":"nothing to see"}}"#, None),
    ];
    for (body, expected) in table {
        assert_eq!(kind(body), expected, "{body}");
    }
}

#[test]
fn garbage_yields_no_kind() {
    let bodies: [&[u8]; 22] = [
        b"",
        b" ",
        b"not json",
        b"<html><body>502 Bad Gateway</body></html>",
        b"null",
        b"42",
        b"\"error\"",
        b"[]",
        b"{}",
        b"{",
        b"}",
        b"{\"error\"",
        b"{\"error\":",
        b"{\"error\":{",
        b"{\"error\":\"rate_limit_error\"}",
        b"{\"error\":[\"rate_limit_error\"]}",
        b"{\"error\":null}",
        b"{error:{type:rate_limit_error}}",
        b"{\"a\":,\"error\":{\"type\":\"api_error\"}}",
        b"{\"a\" 1,\"error\":{\"type\":\"api_error\"}}",
        b"\xff\xfe{\"error\":{\"type\":\"api_error\"}}",
        b"{\"error\":{\"type\":\"api_\\",
    ];
    for body in bodies {
        assert_eq!(ErrorFacts::scan(body).kind, None, "{body:?}");
    }
}

#[test]
fn truncated_bodies_keep_what_was_read() {
    use ErrorKind as K;
    assert_eq!(
        kind(r#"{"type":"error","error":{"type":"overloaded_error","message":"Overl"#),
        Some(K::OverloadedError)
    );
    assert_eq!(
        kind(r#"{"type":"error","error":{"type":"overloaded_err"#),
        None
    );
    assert_eq!(
        kind(r#"{"error":{"message":"You exceeded","type":"insufficient_quota","param":null,"co"#),
        Some(K::InsufficientQuota)
    );
    // Every prefix of a real body is safe and gives either nothing or the full answer.
    for end in 0..=OPENAI_QUOTA.len() {
        let k = ErrorFacts::scan(&OPENAI_QUOTA.as_bytes()[..end]).kind;
        assert!(k.is_none() || k == Some(K::InsufficientQuota), "{end}");
    }
}

#[test]
fn escapes_nesting_and_whitespace() {
    use ErrorKind as K;
    let table = [
        (
            r#"{"error":{"message":"a \"quoted\" } ] { [ \\\" \\ text","type":"rate_limit_error"}}"#,
            K::RateLimitError,
        ),
        (
            r#"{"error":{"type":"rate\u005flimit_error"}}"#,
            K::RateLimitError,
        ),
        (
            r#"{"error":{"type":"rate\u005Flimit\u005ferror"}}"#,
            K::RateLimitError,
        ),
        (r#"{"\u0065rror":{"\u0074ype":"api_error"}}"#, K::ApiError),
        (
            r#"{"meta":{"error":{"type":"rate_limit_error"}},"error":{"type":"api_error"}}"#,
            K::ApiError,
        ),
        (
            r#"{"error":{"details":{"type":"rate_limit_error","code":"x"},"type":"api_error"}}"#,
            K::ApiError,
        ),
        (
            r#"{"x":[1,[2,{"error":{"type":"api_error"}}],"]}"],"y":-1.5e3,"z":true,"error":{"code":"invalid_api_key"}}"#,
            K::InvalidApiKey,
        ),
        ("\u{feff}{\"error\":{\"type\":\"api_error\"}}", K::ApiError),
        (
            "[{\"error\":{\"code\":\"rate_limit_exceeded\"}}]",
            K::RateLimitExceeded,
        ),
        (
            " \n\t{ \"error\" :\t{ \"code\" : \"insufficient_quota\" , \"type\" :\r\n null } }\r\n",
            K::InsufficientQuota,
        ),
        (
            "{\"error\":{\"type\":\"api_error\"}} trailing garbage",
            K::ApiError,
        ),
    ];
    for (body, expected) in table {
        assert_eq!(kind(body), Some(expected), "{body}");
    }
    assert_eq!(kind(r#"{"error":{"type":"rate\u0000limit_error"}}"#), None);
    assert_eq!(kind(r#"{"error":{"type":"rate\u00e9limit_error"}}"#), None);
    assert_eq!(kind(r#"{"error":{"type":"rate\u00"}}"#), None);
    assert_eq!(kind(r#"{"error":{"type":"api_error\n"}}"#), None);
}

#[test]
fn huge_and_deep_bodies() {
    let pad = "x".repeat(100 * 1024);
    // The error member lies past the scan limit.
    let late = alloc::format!(r#"{{"pad":"{pad}","error":{{"type":"api_error"}}}}"#);
    assert_eq!(kind(&late), None);
    // Within the limit it is found.
    let near = "x".repeat(SCAN_LIMIT - 100);
    let inside = alloc::format!(r#"{{"pad":"{near}","error":{{"type":"api_error"}}}}"#);
    assert_eq!(kind(&inside), Some(ErrorKind::ApiError));
    // A huge message after the type does not matter.
    let long = alloc::format!(r#"{{"error":{{"type":"api_error","message":"{pad}"}}}}"#);
    assert_eq!(kind(&long), Some(ErrorKind::ApiError));
    // Nesting deeper than any stack: skipped iteratively.
    let open = "[".repeat(20_000);
    let close = "]".repeat(20_000);
    let deep = alloc::format!(r#"{{"a":{open}{close},"error":{{"type":"api_error"}}}}"#);
    assert_eq!(kind(&deep), Some(ErrorKind::ApiError));
    let unclosed = alloc::format!(r#"{{"a":{}"#, "[{".repeat(200_000));
    assert_eq!(kind(&unclosed), None);
}

// ---- x-should-retry, transport, cancellation ---------------------------------------

#[test]
fn should_retry_overrides_retryable_only() {
    let cfg = ClassifyConfig::default();
    assert_eq!(
        cfg.classify(&hinted(400, Some(true))),
        failure(Class::BadRequest, Scope::Request, true, false)
    );
    assert_eq!(
        cfg.classify(&hinted(503, Some(false))),
        failure(Class::Unavailable, Scope::Endpoint, false, false)
    );
    assert_eq!(
        cfg.classify(&hinted(429, Some(false))),
        failure(Class::RateLimited, Scope::Throttle, false, false)
    );
    assert_eq!(
        cfg.classify(&hinted(503, None)),
        failure(Class::Unavailable, Scope::Endpoint, true, false)
    );
    assert_eq!(cfg.classify(&hinted(200, Some(false))), Verdict::Success);
    let Outcome::Response(r) = hinted(200, Some(false)) else {
        unreachable!()
    };
    assert_eq!(
        cfg.classify(&r.with_body(BodyState::Malformed).into()),
        failure(Class::MalformedBody, Scope::Endpoint, false, true)
    );
    assert_eq!(
        cfg.classify(&hinted(302, Some(true))),
        failure(Class::UnexpectedStatus, Scope::Request, true, false)
    );

    let deaf = ClassifyConfig {
        honor_should_retry: false,
        ..ClassifyConfig::default()
    };
    assert_eq!(
        deaf.classify(&hinted(400, Some(true))),
        failure(Class::BadRequest, Scope::Request, false, false)
    );
    assert_eq!(
        deaf.classify(&hinted(503, Some(false))),
        failure(Class::Unavailable, Scope::Endpoint, true, false)
    );
}

#[test]
fn transport_kinds_by_phase() {
    let cfg = ClassifyConfig::default();
    let classes = [
        (TransportKind::Dns, Class::Connect),
        (TransportKind::ConnectRefused, Class::Connect),
        (TransportKind::ConnectTimeout, Class::Connect),
        (TransportKind::Tls, Class::Connect),
        (TransportKind::Timeout, Class::Timeout),
        (TransportKind::Reset, Class::Reset),
        (TransportKind::BodyCut, Class::BodyCut),
        (TransportKind::Other, Class::TransportOther),
    ];
    assert_eq!(classes.len(), TRANSPORT_KINDS.len());
    for (k, class) in classes {
        for (phase, after_send) in [(Phase::BeforeSend, false), (Phase::AfterSend, true)] {
            assert_eq!(
                cfg.classify(&Transport::new(k, phase).into()),
                failure(class, Scope::Endpoint, true, after_send),
                "{k:?} {phase:?}"
            );
        }
    }
}

#[test]
fn cancelled_is_final() {
    assert_eq!(
        ClassifyConfig::default().classify(&Outcome::Cancelled),
        failure(Class::Cancelled, Scope::Request, false, true)
    );
}

// ---- overrides ---------------------------------------------------------------------

#[test]
fn overrides_by_method() {
    let mut cfg = ClassifyConfig::default();
    let lenient = Rule::new(Class::NotFound, Scope::Endpoint, true);
    cfg.set_status(404, lenient).unwrap();
    assert_eq!(cfg.status_rule(404), Some(lenient));
    assert_eq!(
        cfg.classify(&Response::new(404).into()),
        failure(Class::NotFound, Scope::Endpoint, true, false)
    );
    for bad in [0, 200, 399, 600, u16::MAX] {
        let err = cfg.set_status(bad, lenient).unwrap_err();
        assert_eq!(err.field(), "classify.status");
        assert_eq!(cfg.status_rule(bad), None);
    }
    cfg.set_status(599, lenient).unwrap();
    cfg.set_status(400, lenient).unwrap();

    // Without its own rule, insufficient_quota falls back to the 429 rule.
    cfg.set_error_kind(ErrorKind::InsufficientQuota, None);
    let quota = Response::new(429).with_error(ErrorFacts::scan(OPENAI_QUOTA.as_bytes()));
    assert_eq!(
        cfg.classify(&quota.into()),
        failure(Class::RateLimited, Scope::Throttle, true, false)
    );
    let retry_invalid = Rule::new(Class::BadRequest, Scope::Endpoint, true);
    cfg.set_error_kind(ErrorKind::InvalidRequestError, Some(retry_invalid));
    assert_eq!(
        cfg.error_kind_rule(ErrorKind::InvalidRequestError),
        Some(retry_invalid)
    );
    assert_eq!(
        cfg.classify(
            &Response::new(422)
                .with_error(ErrorFacts::scan(OPENAI_INVALID.as_bytes()))
                .into()
        ),
        failure(Class::BadRequest, Scope::Endpoint, true, false)
    );

    let no_tls = Rule::new(Class::Connect, Scope::Request, false);
    cfg.set_transport(TransportKind::Tls, no_tls);
    assert_eq!(cfg.transport_rule(TransportKind::Tls), no_tls);
    assert_eq!(
        cfg.classify(&Transport::new(TransportKind::Tls, Phase::BeforeSend).into()),
        failure(Class::Connect, Scope::Request, false, false)
    );
    assert_eq!(
        cfg.transport_rule(TransportKind::Dns),
        ClassifyConfig::default_transport_rule(TransportKind::Dns)
    );

    cfg.malformed_body = Rule::new(Class::MalformedBody, Scope::Request, false);
    cfg.unexpected_status = Rule::new(Class::UnexpectedStatus, Scope::Endpoint, true);
    assert_eq!(
        cfg.classify(&Response::new(200).with_body(BodyState::Truncated).into()),
        failure(Class::MalformedBody, Scope::Request, false, true)
    );
    assert_eq!(
        cfg.classify(&Response::new(307).into()),
        failure(Class::UnexpectedStatus, Scope::Endpoint, true, false)
    );
    assert_eq!(cfg.validate(), Ok(()));
}

#[test]
fn default_tables_match_the_default_functions() {
    let cfg = ClassifyConfig::default();
    for s in STATUS_MIN..=STATUS_MAX {
        assert_eq!(
            cfg.status_rule(s),
            Some(ClassifyConfig::default_status_rule(s))
        );
    }
    for k in ErrorKind::ALL {
        assert_eq!(
            cfg.error_kind_rule(k),
            ClassifyConfig::default_error_kind_rule(k)
        );
        assert_eq!(
            ClassifyConfig::default_error_kind_rule(k).is_none(),
            k == ErrorKind::InvalidRequestError
        );
    }
    for (i, k) in ErrorKind::ALL.into_iter().enumerate() {
        assert_eq!(k as usize, i);
    }
    for (i, k) in TRANSPORT_KINDS.into_iter().enumerate() {
        assert_eq!(transport_index(k), i);
    }
    assert_eq!(cfg.validate(), Ok(()));
}

// ---- properties ----------------------------------------------------------------------

fn config(seed: u64) -> ProptestConfig {
    ProptestConfig {
        rng_seed: RngSeed::Fixed(seed),
        ..ProptestConfig::default()
    }
}

fn json_ish() -> impl Strategy<Value = Vec<u8>> {
    let atoms = prop::sample::select(vec![
        "{",
        "}",
        "[",
        "]",
        ":",
        ",",
        "\"",
        "\\",
        "\\u00",
        "\\\"",
        " ",
        "\n",
        "null",
        "1",
        "\"error\"",
        "\"type\"",
        "\"code\"",
        "\"message\"",
        "\"api_error\"",
        "\"invalid_request_error\"",
        "\"prompt is too long\"",
        "\u{e9}",
        "\u{feff}",
    ]);
    prop::collection::vec(atoms, 0..64).prop_map(|parts| parts.concat().into_bytes())
}

fn any_body_state() -> impl Strategy<Value = BodyState> {
    prop_oneof![
        Just(BodyState::Complete),
        Just(BodyState::Malformed),
        Just(BodyState::Truncated)
    ]
}

fn any_transport() -> impl Strategy<Value = Transport> {
    (
        prop::sample::select(TRANSPORT_KINDS.to_vec()),
        prop_oneof![Just(Phase::BeforeSend), Just(Phase::AfterSend)],
    )
        .prop_map(|(k, p)| Transport::new(k, p))
}

fn any_response() -> impl Strategy<Value = Response> {
    (
        prop_oneof![0u16..1000, any::<u16>(), 400u16..600],
        prop_oneof![json_ish(), prop::collection::vec(any::<u8>(), 0..256)],
        prop::option::of(any::<bool>()),
        any_body_state(),
    )
        .prop_map(|(status, body, should_retry, state)| {
            let hints = Hints {
                should_retry,
                ..Hints::default()
            };
            Response::new(status)
                .with_error(ErrorFacts::scan(&body))
                .with_hints(hints)
                .with_body(state)
        })
}

fn any_outcome() -> impl Strategy<Value = Outcome> {
    prop_oneof![
        any_response().prop_map(Outcome::Response),
        any_transport().prop_map(Outcome::Transport),
        Just(Outcome::Cancelled),
    ]
}

proptest! {
    #![proptest_config(config(0x5EED_C1A5))]

    #[test]
    fn scan_never_panics(body in prop::collection::vec(any::<u8>(), 0..2048)) {
        let _ = ErrorFacts::scan(&body);
    }

    #[test]
    fn scan_never_panics_on_json_ish(body in json_ish()) {
        let _ = ErrorFacts::scan(&body);
    }

    #[test]
    fn prefixes_of_real_bodies_never_lie(end in 0usize..400, which in 0usize..4) {
        let (body, full) = [
            (OPENAI_QUOTA, ErrorKind::InsufficientQuota),
            (OPENAI_CONTEXT, ErrorKind::ContextLengthExceeded),
            (ANTHROPIC_OVERLOADED, ErrorKind::OverloadedError),
            (ANTHROPIC_BILLING, ErrorKind::BillingError),
        ][which];
        let end = end.min(body.len());
        let k = ErrorFacts::scan(&body.as_bytes()[..end]).kind;
        // A context-length body may read as a plain invalid-request error before its code.
        let partial = Some(ErrorKind::InvalidRequestError);
        prop_assert!(k.is_none() || k == Some(full) || (full == ErrorKind::ContextLengthExceeded && k == partial));
    }

    #[test]
    fn classify_never_panics(o in any_outcome(), honor in any::<bool>()) {
        let cfg = ClassifyConfig {
            honor_should_retry: honor,
            ..ClassifyConfig::default()
        };
        let _ = cfg.classify(&o);
    }

    #[test]
    fn request_scope_is_never_retryable_by_default(o in any_outcome()) {
        let hinted_true = matches!(o, Outcome::Response(r) if r.hints.should_retry == Some(true));
        if let Verdict::Failure(f) = ClassifyConfig::default().classify(&o) {
            if f.scope == Scope::Request && !hinted_true {
                prop_assert!(!f.retryable, "{o:?} -> {f:?}");
            }
        }
    }

    #[test]
    fn transport_before_send_is_retryable_by_default(t in any_transport()) {
        let f = ClassifyConfig::default().classify(&t.into()).failure().unwrap();
        prop_assert_eq!(f.after_send, t.phase == Phase::AfterSend);
        if t.phase == Phase::BeforeSend {
            prop_assert!(f.retryable);
        }
    }

    #[test]
    fn success_only_for_whole_2xx(r in any_response()) {
        let success = ClassifyConfig::default().classify(&r.into()) == Verdict::Success;
        prop_assert_eq!(success, (200..300).contains(&r.status) && r.body == BodyState::Complete);
    }
}

// ---- serde ---------------------------------------------------------------------------

#[cfg(feature = "serde")]
mod serde_tests {
    use super::*;
    use alloc::string::ToString;

    #[test]
    fn error_codes_round_trip_and_need_a_whole_rule() {
        let cfg: ClassifyConfig = toml::from_str(
            "[error_code]\nmodel_overloaded = { class = \"unavailable\", scope = \"endpoint\", retryable = true }\ntokens_exhausted = { class = \"quota_exhausted\", scope = \"key\", retryable = true }\n",
        )
        .unwrap();
        assert_eq!(cfg, with_codes());
        let text = toml::to_string(&cfg).unwrap();
        assert_eq!(toml::from_str::<ClassifyConfig>(&text).unwrap(), cfg);
        let json = serde_json::to_string(&cfg).unwrap();
        assert_eq!(serde_json::from_str::<ClassifyConfig>(&json).unwrap(), cfg);
        let missing = toml::from_str::<ClassifyConfig>(
            "[error_code]\nx = { class = \"unavailable\", scope = \"endpoint\" }\n",
        );
        assert!(missing.unwrap_err().to_string().contains("retryable"));
    }

    #[test]
    fn default_serializes_to_nothing() {
        let cfg = ClassifyConfig::default();
        assert_eq!(serde_json::to_string(&cfg).unwrap(), "{}");
        assert_eq!(toml::to_string(&cfg).unwrap(), "");
        let back: ClassifyConfig = toml::from_str("").unwrap();
        assert_eq!(back, cfg);
        let back: ClassifyConfig = serde_json::from_str("{}").unwrap();
        assert_eq!(back, cfg);
    }

    fn modified() -> ClassifyConfig {
        let mut cfg = ClassifyConfig {
            honor_should_retry: false,
            malformed_body: Rule::new(Class::MalformedBody, Scope::Endpoint, false),
            ..ClassifyConfig::default()
        };
        cfg.set_status(404, Rule::new(Class::NotFound, Scope::Endpoint, true))
            .unwrap();
        cfg.set_status(520, Rule::new(Class::Unavailable, Scope::Endpoint, true))
            .unwrap();
        cfg.set_error_kind(
            ErrorKind::InsufficientQuota,
            Some(Rule::new(Class::QuotaExhausted, Scope::Key, false)),
        );
        cfg.set_error_kind(ErrorKind::ModelNotFound, None);
        cfg.set_transport(
            TransportKind::Tls,
            Rule::new(Class::Connect, Scope::Endpoint, false),
        );
        cfg
    }

    #[test]
    fn only_differences_are_written() {
        let json = serde_json::to_string(&modified()).unwrap();
        assert_eq!(
            json,
            concat!(
                r#"{"honor_should_retry":false,"#,
                r#""malformed_body":{"class":"malformed_body","scope":"endpoint","retryable":false},"#,
                r#""status":{"404":{"class":"not_found","scope":"endpoint","retryable":true},"#,
                r#""520":{"class":"unavailable","scope":"endpoint","retryable":true}},"#,
                r#""error_kind":{"insufficient_quota":{"class":"quota_exhausted","scope":"key","retryable":false},"#,
                r#""model_not_found":"status"},"#,
                r#""transport":{"tls":{"class":"connect","scope":"endpoint","retryable":false}}}"#,
            )
        );
        let back: ClassifyConfig = serde_json::from_str(&json).unwrap();
        assert_eq!(back, modified());
    }

    #[test]
    fn toml_snapshot() {
        let mut cfg = ClassifyConfig {
            honor_should_retry: false,
            ..ClassifyConfig::default()
        };
        cfg.set_status(404, Rule::new(Class::NotFound, Scope::Endpoint, true))
            .unwrap();
        cfg.set_error_kind(ErrorKind::ModelNotFound, None);
        assert_eq!(
            toml::to_string(&cfg).unwrap(),
            concat!(
                "honor_should_retry = false\n\n",
                "[status.404]\nclass = \"not_found\"\nscope = \"endpoint\"\nretryable = true\n\n",
                "[error_kind]\nmodel_not_found = \"status\"\n",
            )
        );
    }

    #[test]
    fn toml_round_trip() {
        let text = toml::to_string(&modified()).unwrap();
        let back: ClassifyConfig = toml::from_str(&text).unwrap();
        assert_eq!(back, modified(), "{text}");
    }

    #[test]
    fn toml_overrides_apply_over_defaults() {
        let cfg: ClassifyConfig = toml::from_str(
            r#"
            honor_should_retry = false
            status = { "404" = { class = "not_found", scope = "endpoint", retryable = true }, "409" = { retryable = false } }
            error_kind = { insufficient_quota = { scope = "throttle" }, invalid_request_error = { class = "bad_request", scope = "request", retryable = true }, model_not_found = "status" }
            transport = { reset = { retryable = false } }
            unexpected_status = { class = "unexpected_status", scope = "endpoint", retryable = true }
            "#,
        )
        .unwrap();
        assert!(!cfg.honor_should_retry);
        assert_eq!(
            cfg.status_rule(404),
            Some(Rule::new(Class::NotFound, Scope::Endpoint, true))
        );
        assert_eq!(
            cfg.status_rule(409),
            Some(Rule::new(Class::Conflict, Scope::Endpoint, false))
        );
        assert_eq!(
            cfg.status_rule(408),
            Some(ClassifyConfig::default_status_rule(408))
        );
        assert_eq!(
            cfg.error_kind_rule(ErrorKind::InsufficientQuota),
            Some(Rule::new(Class::QuotaExhausted, Scope::Throttle, true))
        );
        assert_eq!(
            cfg.error_kind_rule(ErrorKind::InvalidRequestError),
            Some(Rule::new(Class::BadRequest, Scope::Request, true))
        );
        assert_eq!(cfg.error_kind_rule(ErrorKind::ModelNotFound), None);
        assert_eq!(
            cfg.transport_rule(TransportKind::Reset),
            Rule::new(Class::Reset, Scope::Endpoint, false)
        );
        assert_eq!(
            cfg.unexpected_status,
            Rule::new(Class::UnexpectedStatus, Scope::Endpoint, true)
        );
        assert_eq!(cfg.malformed_body, ClassifyConfig::default().malformed_body);
    }

    #[test]
    fn table_syntax_and_integer_keys() {
        let cfg: ClassifyConfig = toml::from_str(
            "[status.503]\nretryable = false\n\n[transport.dns]\nscope = \"request\"\n",
        )
        .unwrap();
        assert_eq!(
            cfg.status_rule(503),
            Some(Rule::new(Class::Unavailable, Scope::Endpoint, false))
        );
        assert_eq!(cfg.transport_rule(TransportKind::Dns).scope, Scope::Request);
        let rule: Rule =
            serde_json::from_str(r#"{"class":"timeout","scope":"endpoint","retryable":true}"#)
                .unwrap();
        assert_eq!(rule, Rule::new(Class::Timeout, Scope::Endpoint, true));
    }

    fn toml_error(text: &str) -> alloc::string::String {
        toml::from_str::<ClassifyConfig>(text)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn bad_input_is_rejected_by_name() {
        let e = toml_error(r#"status = { "600" = { retryable = true } }"#);
        assert!(e.contains("\"600\"") && e.contains("400 to 599"), "{e}");
        let e = toml_error(r#"status = { "399" = { retryable = true } }"#);
        assert!(e.contains("\"399\""), "{e}");
        let e = toml_error(r#"status = { "abc" = { retryable = true } }"#);
        assert!(e.contains("\"abc\""), "{e}");
        let e = toml_error(r#"status = { "4040" = { retryable = true } }"#);
        assert!(e.contains("\"4040\""), "{e}");
        let e = toml_error("honour_should_retry = true");
        assert!(e.contains("honour_should_retry"), "{e}");
        let e = toml_error(r#"status = { "404" = { retry = true } }"#);
        assert!(e.contains("retry"), "{e}");
        let e = toml_error(r#"status = { "404" = { class = "nope" } }"#);
        assert!(e.contains("nope"), "{e}");
        let e = toml_error(r#"error_kind = { not_a_kind = { retryable = true } }"#);
        assert!(e.contains("not_a_kind"), "{e}");
        let e = toml_error(r#"error_kind = { api_error = "keep" }"#);
        assert!(e.contains("keep"), "{e}");
        // invalid_request_error has no rule of its own to fill the gaps from.
        let e = toml_error(r#"error_kind = { invalid_request_error = { retryable = true } }"#);
        assert!(e.contains("class"), "{e}");
        let e = toml_error(r#"transport = { carrier_pigeon = { retryable = true } }"#);
        assert!(e.contains("carrier_pigeon"), "{e}");

        let e = serde_json::from_str::<ClassifyConfig>(
            r#"{"honor_should_retry":true,"honor_should_retry":false}"#,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("duplicate field"), "{e}");
        let e = serde_json::from_str::<Rule>(r#"{"class":"timeout","scope":"endpoint"}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("retryable"), "{e}");
    }
}

#[test]
fn an_oversized_success_body_is_not_retried_by_default() {
    let c = ClassifyConfig::default();
    let o = Outcome::Response(Response::new(200).with_body(BodyState::TooLarge));
    let Verdict::Failure(f) = c.classify(&o) else {
        panic!("an oversized body is not a success");
    };
    assert_eq!(
        (f.class, f.scope, f.retryable, f.after_send),
        (Class::ResponseTooLarge, Scope::Request, false, true)
    );
}
