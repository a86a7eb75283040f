//! The operators' API, behind the gateway key:
//!
//! - `GET /admin/endpoints`: each endpoint's breaker, limiter and key states;
//! - `POST /admin/endpoints/{name}/keys/{index}/enable`: re-enables a disabled key.

use std::sync::Arc;

use http::{Method, Request, Response, StatusCode};
use hyper::body::Incoming;
use serde_json::{Value, json};
use steadfast_core::breaker::BreakerState;
use steadfast_core::engine::Engine;
use steadfast_core::ids::{EndpointId, KeyId, Target};
use steadfast_core::pool::KeyState;
use steadfast_core::time::Timestamp;
use steadfast_http::Provider;
use steadfast_http::chat::ApiErrorKind;

use super::Gateway;
use super::reply::{Answer, Body};

/// Where the admin API lives.
pub const PREFIX: &str = "/admin/";

/// Serves one admin request.
pub async fn handle(gw: &Arc<Gateway>, req: Request<Incoming>) -> Response<Body> {
    let path = req.uri().path().trim_end_matches('/').to_owned();
    let parts: Vec<&str> = path.split('/').skip(2).collect();
    answer(gw, req.method(), &parts).to_response()
}

fn answer(gw: &Gateway, method: &Method, parts: &[&str]) -> Answer {
    let shared = gw.client.shared();
    let now = gw.client.now();
    match (method, parts) {
        (&Method::GET, ["endpoints"]) => {
            let view = shared.with_engine(|e| endpoints_view(gw, e, now));
            Answer::json(StatusCode::OK, &json!({ "endpoints": view }))
        }
        (&Method::POST, ["endpoints", name, "keys", key, action]) => {
            let Some(target) = target(gw, name, key) else {
                return not_found(&format!("no key {key} on an endpoint named `{name}`"));
            };
            let done = match *action {
                "enable" => shared.with_engine(|e| e.enable_key(now, target)),
                _ => return not_found(&format!("no key action `{action}` (enable)")),
            };
            match done {
                Ok(()) => Answer::json(StatusCode::OK, &json!({"ok": true})),
                Err(e) => Answer::error(
                    Provider::OpenAi,
                    ApiErrorKind::InvalidRequest,
                    e.to_string(),
                ),
            }
        }
        _ => not_found("no such admin request (GET /admin/endpoints)"),
    }
}

fn not_found(m: &str) -> Answer {
    Answer::error(Provider::OpenAi, ApiErrorKind::NotFound, m)
}

/// The endpoint named `name` and its key at index `key`.
fn target(gw: &Gateway, name: &str, key: &str) -> Option<Target> {
    let shared = gw.client.shared();
    let count = shared.with_engine(|e| e.pool().endpoint_count());
    let endpoint = (0..count)
        .map(EndpointId)
        .find(|e| shared.endpoint_name(*e) == Some(name))?;
    let key = KeyId(key.parse().ok()?);
    let keys = shared.with_engine(|e| e.pool().key_count(endpoint));
    (key.0 < keys).then_some(Target { endpoint, key })
}

/// Seconds from `now` to `at` (0 when past).
fn secs_until(now: Timestamp, at: Timestamp) -> f64 {
    at.saturating_duration_since(now).as_secs_f64()
}

fn endpoints_view(gw: &Gateway, engine: &Engine, now: Timestamp) -> Vec<Value> {
    let shared = gw.client.shared();
    let pool = engine.pool();
    (0..pool.endpoint_count())
        .map(EndpointId)
        .map(|endpoint| {
            let breaker = match engine.breaker(endpoint).map(|b| b.state()) {
                Some(BreakerState::Open { until }) => {
                    json!({"state": "open", "probe_in_s": secs_until(now, until)})
                }
                Some(BreakerState::HalfOpen) => json!({"state": "half_open"}),
                _ => json!({"state": "closed"}),
            };
            let keys: Vec<Value> = (0..pool.key_count(endpoint))
                .map(|k| key_view(engine, now, Target { endpoint, key: KeyId(k) }))
                .collect();
            json!({
                "name": shared.endpoint_name(endpoint),
                "provider": shared.provider(endpoint).name(),
                "breaker": breaker,
                "failing_for_s": engine.failing_since(endpoint).map(|t| now.saturating_duration_since(t).as_secs_f64()),
                "in_flight": engine.outstanding_on(endpoint),
                "keys": keys,
            })
        })
        .collect()
}

fn key_view(engine: &Engine, now: Timestamp, target: Target) -> Value {
    let state = match engine.pool().key_state(now, target) {
        Some(KeyState::Cooling { until }) => {
            json!({"state": "cooling", "usable_in_s": secs_until(now, until)})
        }
        Some(KeyState::Disabled { reason }) => {
            json!({"state": "disabled", "reason": format!("{reason:?}")})
        }
        _ => json!({"state": "usable"}),
    };
    let server = engine.server_limits(target).map(|s| format!("{s:?}"));
    json!({"index": target.key.0, "state": state, "server_limits": server})
}
