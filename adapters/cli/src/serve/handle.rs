//! One request: its route by method and path, the gateway key, and the response
//! counted by path and status.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use http::{Method, Request, Response, StatusCode};
use hyper::body::Incoming;
use serde_json::{Value, json};
use steadfast_http::chat::ApiErrorKind;
use steadfast_http::{ANTHROPIC_VERSION, Provider};

use super::chat::{self, Asked};
use super::idle::{self, Busy};
use super::reply::{Answer, Body};
use super::{Gateway, admin};

/// Serves `req`, its connection `busy` until the answer is done. The route is found,
/// and a chat request's headers read, before the future is made: hyper moves the
/// future into its connection's slot for every request, a write of its whole size
/// into memory that has gone cold since the connection's last request, so it holds
/// only what the answer needs. A chat call's future is boxed for the same reason: a
/// box mostly takes memory a finished request has just freed.
pub fn handle(
    gw: Arc<Gateway>,
    req: Request<Incoming>,
    busy: Busy,
) -> impl Future<Output = Result<Response<Body>, Infallible>> + Send {
    let path = known_path(req.uri().path());
    let routed = route(&gw, path, req);
    async move {
        let response = match routed {
            Routed::Now(response) => response,
            Routed::Chat(asked) => Box::pin(chat::serve(&gw, path, asked)).await,
            Routed::Later(later) => later.await,
        };
        gw.metrics.on_response(path, response.status().as_u16());
        Ok(idle::keep_busy(response, busy))
    }
}

/// Where a request went: its response at once, or what makes it.
enum Routed {
    Now(Response<Body>),
    /// A chat request, to serve.
    Chat(Asked),
    /// The admin API's future, boxed: rare, and large.
    Later(Pin<Box<dyn Future<Output = Response<Body>> + Send>>),
}

/// The path as counted (unknown paths are one label, so clients cannot grow the
/// metrics without bound).
fn known_path(path: &str) -> &'static str {
    match path {
        "/v1/chat/completions" => "/v1/chat/completions",
        "/v1/messages" => "/v1/messages",
        "/v1/models" => "/v1/models",
        "/healthz" => "/healthz",
        "/metrics" => "/metrics",
        p if p.starts_with(admin::PREFIX) => admin::PREFIX,
        _ => "other",
    }
}

/// The API a path belongs to, for the shape of its errors.
fn shape_of(path: &str, req: &Request<Incoming>) -> Provider {
    if path == "/v1/messages" || req.headers().contains_key(ANTHROPIC_VERSION) {
        Provider::Anthropic
    } else {
        Provider::OpenAi
    }
}

fn route(gw: &Arc<Gateway>, path: &'static str, req: Request<Incoming>) -> Routed {
    let shape = shape_of(path, &req);
    let method = req.method().clone();
    match (path, &method) {
        ("/healthz", &Method::GET) => {
            let ok = Answer::json(StatusCode::OK, &json!({"status": "ok"}));
            return Routed::Now(ok.to_response());
        }
        ("/metrics", &Method::GET) => {
            let text = gw.metrics.render(gw.client.shared(), gw.client.now());
            let answer = Answer {
                status: StatusCode::OK,
                content_type: "text/plain; version=0.0.4",
                headers: Vec::new(),
                body: text.into(),
            };
            return Routed::Now(answer.to_response());
        }
        _ => {}
    }
    let Some(caller) = gw.keys.check(req.headers()) else {
        let m = "Incorrect API key provided: the gateway takes its own keys \
                 (Authorization: Bearer KEY or x-api-key: KEY).";
        let refused = Answer::error(shape, ApiErrorKind::Authentication, m);
        return Routed::Now(refused.to_response());
    };
    Routed::Now(match (path, method) {
        ("/v1/chat/completions", Method::POST) | ("/v1/messages", Method::POST) => {
            let (parts, body) = req.into_parts();
            return Routed::Chat(Asked::new(shape, caller, &parts.headers, body));
        }
        ("/v1/models", Method::GET) => models(gw, shape).to_response(),
        (admin::PREFIX, _) => {
            let gw = Arc::clone(gw);
            return Routed::Later(Box::pin(async move { admin::handle(&gw, req).await }));
        }
        ("other", _) => {
            let m = format!("Unknown request URL: {}.", req.uri().path());
            Answer::error(shape, ApiErrorKind::NotFound, m).to_response()
        }
        (_, m) => {
            let text = format!("Method {m} is not allowed on {path}.");
            let mut a = Answer::error(shape, ApiErrorKind::InvalidRequest, text);
            a.status = StatusCode::METHOD_NOT_ALLOWED;
            a.to_response()
        }
    })
}

/// `GET /v1/models`: the model names clients may ask for, in the shape of the API
/// asking (Anthropic's when the request carries `anthropic-version`).
fn models(gw: &Gateway, shape: Provider) -> Answer {
    let names: Vec<&str> = gw.routes.models().collect();
    let body = match shape {
        Provider::OpenAi => {
            let data: Vec<Value> = names
                .iter()
                .map(|id| json!({"id": id, "object": "model", "created": 0, "owned_by": "steadfast"}))
                .collect();
            json!({"object": "list", "data": data})
        }
        Provider::Anthropic => {
            let data: Vec<Value> = names
                .iter()
                .map(|id| {
                    json!({"type": "model", "id": id, "display_name": id,
                           "created_at": "1970-01-01T00:00:00Z"})
                })
                .collect();
            json!({"data": data, "has_more": false,
                   "first_id": names.first(), "last_id": names.last()})
        }
    };
    Answer::json(StatusCode::OK, &body)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The size of the future `f` returns, without calling it.
    fn future_size<A, B, C, F: Future>(_f: impl Fn(A, B, C) -> F) -> usize {
        std::mem::size_of::<F>()
    }

    /// hyper moves a request's future into its connection's slot for every request:
    /// it holds the route's outcome and a box, not the call (3.7 KB when it did).
    #[test]
    fn a_request_s_future_stays_small() {
        let size = future_size(handle);
        assert!(size <= 512, "a request's future is {size} bytes");
    }

    /// A chat call's future is boxed for every request, and each request in flight
    /// holds one: the pool's send keeps its request once, and an exchange's step is
    /// not kept beside the exchange (2 992 bytes before, 2 720 after).
    #[test]
    fn a_chat_call_s_future_stays_small() {
        let size = future_size(chat::serve);
        assert!(size <= 2816, "a chat call's future is {size} bytes");
    }
}
