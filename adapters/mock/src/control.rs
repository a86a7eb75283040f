//! The `/__…` control endpoints: stats, faults, reset, the outage switch.

use serde_json::{Value, json};
use steadfast_upstream::{Body, Fault};

use crate::http::Request;
use crate::shared::Shared;

/// The control endpoint's status and JSON body.
pub(crate) fn answer(shared: &Shared, req: &Request) -> (u16, Body) {
    let ok = |v: Value| (200, json_body(&v));
    let bad = |status: u16, message: String| (status, json_body(&json!({ "error": message })));
    match (req.method.as_str(), req.path.as_str()) {
        ("GET", "/__stats") => ok(serde_json::to_value(shared.stats()).unwrap_or(Value::Null)),
        ("POST", "/__faults") => {
            let text = String::from_utf8_lossy(&req.body);
            match Fault::script_from_json(&text) {
                Ok(faults) => {
                    let remaining = shared.push_faults(&faults);
                    ok(json!({ "appended": faults.len(), "script_remaining": remaining }))
                }
                Err(e) => bad(400, e.to_string()),
            }
        }
        ("POST", "/__reset") => {
            shared.reset();
            ok(json!({ "reset": true }))
        }
        ("POST", "/__down") => {
            let down = match serde_json::from_slice::<Value>(&req.body) {
                Ok(Value::Bool(b)) => Some(b),
                Ok(v) => v.get("down").and_then(Value::as_bool),
                Err(_) => None,
            };
            match down {
                Some(d) => {
                    shared.set_down(d);
                    ok(json!({ "down": d }))
                }
                None => bad(400, "expected {\"down\": true|false}".to_owned()),
            }
        }
        (_, "/__stats" | "/__faults" | "/__reset" | "/__down") => {
            bad(405, format!("method {} not allowed", req.method))
        }
        _ => bad(404, format!("no control endpoint {}", req.path)),
    }
}

fn json_body(v: &Value) -> Body {
    Body::json(serde_json::to_vec(v).unwrap_or_default())
}
