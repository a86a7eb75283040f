//! The operators' API, behind the gateway key:
//!
//! - `GET /admin/endpoints`: each endpoint's breaker (mode, state, next probe), limiter,
//!   grants in flight and keys (usable, cooling for how long, disabled and why, what
//!   the server said of its limits);
//! - `POST /admin/endpoints/{name}/open`: forces its breaker open (no call goes there);
//! - `POST /admin/endpoints/{name}/reset`: back to automatic, closed, failures forgotten;
//! - `POST /admin/endpoints/{name}/mode` with `{"mode": "auto" | "forced_open" |
//!   "disabled" | "metrics_only"}`;
//! - `POST /admin/endpoints/{name}/keys/{index}/disable` and `.../enable`.
//!
//! Keys are known by their index, never by their secret.

use std::sync::Arc;

use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use serde_json::{Value, json};
use steadfast_core::breaker::BreakerMode;
use steadfast_core::engine::Engine;
use steadfast_core::error::UsageError;
use steadfast_core::ids::{EndpointId, KeyId, Target};
use steadfast_core::time::Timestamp;
use steadfast_http::chat::ApiErrorKind;
use steadfast_http::{Provider, Shared};

use super::Gateway;
use super::reply::{Answer, Body};

/// Where the admin API lives.
pub const PREFIX: &str = "/admin/";

/// The largest admin request body read.
const MAX_BODY: usize = 4096;

/// Serves one admin request.
pub async fn handle(gw: &Arc<Gateway>, req: Request<Incoming>) -> Response<Body> {
    let path = req.uri().path().trim_end_matches('/').to_owned();
    let method = req.method().clone();
    let body = match Limited::new(req.into_body(), MAX_BODY).collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => return refuse(&format!("the request body could not be read: {e}")).to_response(),
    };
    let parts: Vec<&str> = path.split('/').skip(2).collect();
    answer(gw, &method, &parts, &body).to_response()
}

fn answer(gw: &Gateway, method: &Method, parts: &[&str], body: &[u8]) -> Answer {
    let shared = gw.client.shared();
    let now = gw.client.now();
    match (method, parts) {
        (&Method::GET, ["endpoints"]) => {
            let view = shared.with_engine(|e| endpoints_view(shared, e, now));
            Answer::json(StatusCode::OK, &json!({ "endpoints": view }))
        }
        (&Method::POST, ["endpoints", name, action]) => {
            let Some(endpoint) = endpoint(shared, name) else {
                return not_found(&format!("no endpoint named `{name}`"));
            };
            let done = match *action {
                "open" => shared
                    .with_engine(|e| e.set_breaker_mode(now, endpoint, BreakerMode::ForcedOpen)),
                "reset" => shared.with_engine(|e| {
                    e.set_breaker_mode(now, endpoint, BreakerMode::Auto)?;
                    e.reset_breaker(now, endpoint)
                }),
                "mode" => match serde_json::from_slice::<ModeBody>(body) {
                    Ok(m) => shared.with_engine(|e| e.set_breaker_mode(now, endpoint, m.mode)),
                    Err(e) => {
                        return refuse(&format!(
                            "mode: {e} (one of auto, forced_open, disabled, metrics_only)"
                        ));
                    }
                },
                _ => {
                    return not_found(&format!(
                        "no endpoint action `{action}` (open, reset, mode)"
                    ));
                }
            };
            done_answer(done)
        }
        (&Method::POST, ["endpoints", name, "keys", key, action]) => {
            let Some(target) = target(shared, name, key) else {
                return not_found(&format!("no key {key} on an endpoint named `{name}`"));
            };
            let done = match *action {
                "enable" => shared.with_engine(|e| e.enable_key(now, target)),
                "disable" => shared.with_engine(|e| e.disable_key(now, target)),
                _ => return not_found(&format!("no key action `{action}` (enable, disable)")),
            };
            done_answer(done)
        }
        _ => not_found(
            "no such admin request (GET /admin/endpoints; POST /admin/endpoints/NAME/open|reset|mode; POST /admin/endpoints/NAME/keys/INDEX/enable|disable)",
        ),
    }
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ModeBody {
    mode: BreakerMode,
}

fn done_answer(done: Result<(), UsageError>) -> Answer {
    match done {
        Ok(()) => Answer::json(StatusCode::OK, &json!({"ok": true})),
        Err(e) => refuse(&e.to_string()),
    }
}

fn refuse(m: &str) -> Answer {
    Answer::error(Provider::OpenAi, ApiErrorKind::InvalidRequest, m)
}

fn not_found(m: &str) -> Answer {
    Answer::error(Provider::OpenAi, ApiErrorKind::NotFound, m)
}

/// The endpoint named `name`.
fn endpoint(shared: &Shared, name: &str) -> Option<EndpointId> {
    let count = shared.with_engine(|e| e.pool().endpoint_count());
    (0..count)
        .map(EndpointId)
        .find(|e| shared.endpoint_name(*e) == Some(name))
}

/// The endpoint named `name` and its key at index `key`.
fn target(shared: &Shared, name: &str, key: &str) -> Option<Target> {
    let endpoint = endpoint(shared, name)?;
    let key = KeyId(key.parse().ok()?);
    let keys = shared.with_engine(|e| e.pool().key_count(endpoint));
    (key.0 < keys).then_some(Target { endpoint, key })
}

fn endpoints_view(shared: &Shared, engine: &Engine, now: Timestamp) -> Vec<Value> {
    engine
        .status(now)
        .into_iter()
        .map(|status| {
            let e = status.endpoint;
            json!({
                "name": shared.endpoint_name(e),
                "provider": shared.provider(e).name(),
                "status": status,
            })
        })
        .collect()
}
