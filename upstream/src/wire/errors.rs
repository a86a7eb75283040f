//! Error bodies as the providers write them: OpenAI's
//! `{"error":{"message","type","param","code"}}`, Anthropic's
//! `{"type":"error","error":{"type","message"},"request_id"}`, and a gateway's HTML page.

use serde_json::json;
use steadfast_core::provider::Provider;

use super::success::to_vec;

/// An error body in the provider's shape. OpenAI puts the specific kind in `code` under
/// a broader `type`; Anthropic has only `type` (`code` is not written).
pub fn error_body(
    provider: Provider,
    etype: &str,
    code: Option<&str>,
    message: &str,
    request_id: &str,
) -> Vec<u8> {
    match provider {
        Provider::OpenAi => to_vec(&json!({
            "error": {"message": message, "type": etype, "param": null, "code": code}
        })),
        Provider::Anthropic => to_vec(&json!({
            "type": "error",
            "error": {"type": etype, "message": message},
            "request_id": request_id
        })),
    }
}

/// OpenAI's 400 `invalid_request_error` body naming the offending `param` and the
/// `code` (both `null` when none), as in
/// `{"error":{"message":"Missing required parameter: 'messages'.","type":"invalid_request_error","param":"messages","code":"missing_required_parameter"}}`
/// (quoted in SilasMarvin/lsp-ai#108).
pub fn invalid_body(message: &str, param: Option<&str>, code: Option<&str>) -> Vec<u8> {
    to_vec(&json!({
        "error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}
    }))
}

/// The `(type, code, message)` a provider sends with `status`.
pub fn status_error(
    provider: Provider,
    status: u16,
) -> (&'static str, Option<&'static str>, &'static str) {
    match provider {
        Provider::OpenAi => openai_status(status),
        Provider::Anthropic => anthropic_status(status),
    }
}

fn openai_status(status: u16) -> (&'static str, Option<&'static str>, &'static str) {
    const INVALID: &str = "invalid_request_error";
    match status {
        401 => (
            INVALID,
            Some("invalid_api_key"),
            "Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys.",
        ),
        403 => (
            INVALID,
            Some("unsupported_country_region_territory"),
            "Country, region, or territory not supported",
        ),
        404 => (
            INVALID,
            Some("model_not_found"),
            "The model does not exist or you do not have access to it.",
        ),
        408 => ("timeout", None, "Request timed out."),
        409 => (INVALID, Some("conflict"), "Conflict."),
        413 => (INVALID, Some("request_too_large"), "Request too large."),
        429 => (
            "requests",
            Some("rate_limit_exceeded"),
            "Rate limit reached for requests per min (RPM). Please try again later.",
        ),
        500 => (
            "server_error",
            None,
            "The server had an error while processing your request. Sorry about that!",
        ),
        502 => ("server_error", None, "Bad gateway."),
        503 => (
            "server_error",
            None,
            "The server is overloaded or not ready yet.",
        ),
        504 => ("server_error", None, "Gateway timeout."),
        s if s >= 500 => ("server_error", None, "The server is overloaded."),
        _ => (INVALID, None, "The request was rejected."),
    }
}

fn anthropic_status(status: u16) -> (&'static str, Option<&'static str>, &'static str) {
    match status {
        401 => ("authentication_error", None, "invalid x-api-key"),
        402 => (
            "billing_error",
            None,
            "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits.",
        ),
        403 => (
            "permission_error",
            None,
            "Your API key does not have permission to use the specified resource.",
        ),
        404 => (
            "not_found_error",
            None,
            "The requested resource could not be found.",
        ),
        413 => (
            "request_too_large",
            None,
            "Request exceeds the maximum allowed number of bytes.",
        ),
        429 => (
            "rate_limit_error",
            None,
            "Number of request tokens has exceeded your per-minute rate limit. Please try again later.",
        ),
        504 => ("timeout_error", None, "Request timeout."),
        529 => ("overloaded_error", None, "Overloaded"),
        s if s >= 500 => ("api_error", None, "Internal server error"),
        _ => ("invalid_request_error", None, "The request was rejected."),
    }
}

/// The realistic error body for a status.
pub fn status_body(provider: Provider, status: u16, request_id: &str) -> Vec<u8> {
    let (etype, code, message) = status_error(provider, status);
    error_body(provider, etype, code, message, request_id)
}

/// A gateway's HTML error page (what a load balancer in front of an API sends).
pub fn gateway_page(status: u16) -> Vec<u8> {
    let title = format!("{status} {}", reason(status));
    format!(
        "<html>\r\n<head><title>{title}</title></head>\r\n<body>\r\n<center><h1>{title}</h1></center>\r\n<hr><center>gateway</center>\r\n</body>\r\n</html>\r\n"
    )
    .into_bytes()
}

/// The reason phrase of a status.
pub fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        201 => "Created",
        204 => "No Content",
        400 => "Bad Request",
        401 => "Unauthorized",
        402 => "Payment Required",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        413 => "Payload Too Large",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        505 => "HTTP Version Not Supported",
        529 => "Overloaded",
        _ => "Unknown",
    }
}

/// `sk-**********7890`: a key as an error message shows it.
pub fn mask_key(key: &str) -> String {
    let chars: Vec<char> = key.chars().collect();
    let n = chars.len();
    if n <= 8 {
        return "*".repeat(n);
    }
    let head: String = chars.iter().take(3).collect();
    let tail: String = chars.iter().skip(n.saturating_sub(4)).collect();
    format!("{head}{}{tail}", "*".repeat(n.saturating_sub(7)))
}

#[cfg(test)]
#[allow(clippy::arithmetic_side_effects)]
mod tests {
    use super::*;
    use steadfast_core::classify::ErrorFacts;

    #[test]
    fn bodies_scan_as_the_core_reads_them() {
        let b = status_body(Provider::Anthropic, 529, "req_1");
        let v: serde_json::Value = serde_json::from_slice(&b).unwrap();
        assert_eq!(v["error"]["type"], "overloaded_error");
        assert_eq!(v["request_id"], "req_1");
        let b = error_body(
            Provider::OpenAi,
            "insufficient_quota",
            Some("insufficient_quota"),
            "m",
            "",
        );
        assert!(ErrorFacts::scan(&b).kind.is_some());
        assert!(
            String::from_utf8(gateway_page(502))
                .unwrap()
                .contains("502 Bad Gateway")
        );
        assert_eq!(mask_key("sk-bad-1234567890"), "sk-**********7890");
        assert_eq!(mask_key("short"), "*****");
    }
}
