//! Table tests of the translation in both directions, and the round-trip property.

mod errors;
mod hostile;
mod request;
mod response;
mod reverse;
mod roundtrip;
mod stream;
mod types;

use serde_json::{Value, json};

/// A minimal canonical request with `extra`'s fields added (or replaced).
fn canonical(extra: Value) -> Value {
    let mut req = json!({"model": "m", "messages": [{"role": "user", "content": "Hi"}]});
    merge(&mut req, extra);
    req
}

/// A minimal Anthropic request with `extra`'s fields added (or replaced).
fn anthropic(extra: Value) -> Value {
    let mut req = json!({
        "model": "m",
        "max_tokens": 100,
        "messages": [{"role": "user", "content": "Hi"}]
    });
    merge(&mut req, extra);
    req
}

fn merge(into: &mut Value, extra: Value) {
    if let (Some(o), Value::Object(e)) = (into.as_object_mut(), extra) {
        o.extend(e);
    }
}
