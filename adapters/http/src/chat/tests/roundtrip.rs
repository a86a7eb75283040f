//! The property: canonical → Anthropic → canonical keeps every translatable field.
//!
//! The two canonical requests are compared in a normal form that forgets only what the
//! canonical shape can say in two ways: `max_tokens` and `max_completion_tokens`, a
//! `stop` string and a one-element array, consecutive user messages and one user
//! message of their parts, a string and one text part, `developer` and `system`, a
//! function without `parameters` and one whose parameters are the empty object schema,
//! and the `stream_options` a translated stream adds.

use proptest::prelude::*;
use proptest::test_runner::{RngAlgorithm, RngSeed};
use serde_json::{Map, Value, json};

use crate::chat::{DEFAULT_MAX_TOKENS, from_anthropic_request, to_anthropic};

/// The fixed seed of the proptest RNG, printed so a run can be replayed.
const SEED: u64 = 0x0c4a_7c0f_fee5_eed5;

pub(super) fn config() -> ProptestConfig {
    println!("proptest seed {SEED:#x}");
    ProptestConfig {
        cases: 256,
        rng_algorithm: RngAlgorithm::ChaCha,
        rng_seed: RngSeed::Fixed(SEED),
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

fn text() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9 .,!?\n\"\\\\é]{1,12}"
}

fn user_content() -> impl Strategy<Value = Value> {
    let part = prop_oneof![
        3 => text().prop_map(|t| json!({"type": "text", "text": t})),
        1 => "[A-Za-z0-9+/]{4,12}".prop_map(|d| json!({"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{d}")}})),
        1 => "[a-z]{1,8}".prop_map(|p| json!({"type": "image_url", "image_url": {"url": format!("https://example.com/{p}.jpg")}})),
    ];
    prop_oneof![
        text().prop_map(Value::String),
        prop::collection::vec(part, 1..4).prop_map(Value::Array),
    ]
}

fn arguments() -> impl Strategy<Value = String> {
    prop::collection::btree_map(
        "[a-z]{1,5}",
        prop_oneof![
            text().prop_map(Value::String),
            any::<i32>().prop_map(Value::from),
            any::<bool>().prop_map(Value::from),
        ],
        0..3,
    )
    .prop_map(|m| Value::Object(m.into_iter().collect()).to_string())
}

/// One exchange: a user turn (sometimes two), then either an answer or tool calls and
/// their results.
fn exchange(round: usize) -> impl Strategy<Value = Vec<Value>> {
    let users = prop::collection::vec(user_content(), 1..3);
    let calls = prop::collection::vec(("[a-z_]{1,6}", arguments()), 0..3);
    let answer = prop::option::of(text());
    (users, calls, answer).prop_map(move |(users, calls, answer)| {
        let mut out: Vec<Value> = users
            .into_iter()
            .map(|c| json!({"role": "user", "content": c}))
            .collect();
        if calls.is_empty() {
            out.push(json!({"role": "assistant", "content": answer.unwrap_or_else(|| "ok".into())}));
            return out;
        }
        let ids: Vec<String> = (0..calls.len()).map(|i| format!("call_{round}_{i}")).collect();
        let tool_calls: Vec<Value> = calls
            .iter()
            .zip(&ids)
            .map(|((name, args), id)| json!({"id": id, "type": "function", "function": {"name": name, "arguments": args}}))
            .collect();
        out.push(json!({"role": "assistant", "content": answer, "tool_calls": tool_calls}));
        for (id, (name, _)) in ids.iter().zip(&calls) {
            out.push(json!({"role": "tool", "tool_call_id": id, "content": format!("result of {name}")}));
        }
        out
    })
}

fn messages() -> impl Strategy<Value = Vec<Value>> {
    let system = prop::collection::vec((prop::bool::ANY, text()), 0..3);
    let rounds = (1usize..4).prop_flat_map(|n| (0..n).map(exchange).collect::<Vec<_>>());
    let last = user_content();
    (system, rounds, last).prop_map(|(system, rounds, last)| {
        let mut out: Vec<Value> = system
            .into_iter()
            .map(|(dev, t)| json!({"role": if dev { "developer" } else { "system" }, "content": t}))
            .collect();
        out.extend(rounds.into_iter().flatten());
        out.push(json!({"role": "user", "content": last}));
        out
    })
}

fn tools() -> impl Strategy<Value = Vec<Value>> {
    let tool = ("[a-z_]{1,8}", prop::option::of(text()), prop::bool::ANY).prop_map(|(name, description, params)| {
        let mut f = Map::new();
        f.insert("name".into(), name.into());
        if let Some(d) = description {
            f.insert("description".into(), d.into());
        }
        if params {
            f.insert("parameters".into(), json!({"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}));
        }
        json!({"type": "function", "function": f})
    });
    prop::collection::vec(tool, 0..3)
}

pub(super) fn request() -> impl Strategy<Value = Value> {
    let sampling = (
        prop::option::of((0u32..=10).prop_map(|t| f64::from(t) / 10.0)),
        prop::option::of((0u32..=20).prop_map(|p| f64::from(p) / 20.0)),
        prop::option::of((1u64..100_000, prop::bool::ANY)),
    );
    let stop = prop::option::of(prop_oneof![
        text().prop_map(Value::String),
        prop::collection::vec(text(), 1..5).prop_map(|s| json!(s)),
    ]);
    let choice = prop::option::of(prop_oneof![
        Just(json!("auto")),
        Just(json!("none")),
        Just(json!("required")),
        "[a-z]{1,5}".prop_map(|n| json!({"type": "function", "function": {"name": n}})),
    ]);
    let misc = (
        prop::option::of(prop::bool::ANY),
        prop::option::of("[a-z0-9-]{1,10}"),
        prop::option::of(Just(false)),
    );
    (messages(), tools(), choice, sampling, stop, misc).prop_map(
        |(messages, tools, choice, (temperature, top_p, limit), stop, (stream, user, parallel))| {
            let mut r = Map::new();
            r.insert("model".into(), "claude-test".into());
            r.insert("messages".into(), Value::Array(messages));
            let mut put = |k: &str, v: Option<Value>| {
                if let Some(v) = v {
                    r.insert(k.into(), v);
                }
            };
            put("tools", (!tools.is_empty()).then_some(Value::Array(tools)));
            put("tool_choice", choice);
            put("temperature", temperature.map(Value::from));
            put("top_p", top_p.map(Value::from));
            let key = |legacy: bool| {
                if legacy {
                    "max_tokens"
                } else {
                    "max_completion_tokens"
                }
            };
            if let Some((n, legacy)) = limit {
                put(key(legacy), Some(n.into()));
            }
            put("stop", stop);
            put("stream", stream.map(Value::from));
            if stream == Some(true) {
                put("stream_options", Some(json!({"include_usage": true})));
            }
            put("user", user.map(Value::from));
            put("parallel_tool_calls", parallel.map(Value::from));
            Value::Object(r)
        },
    )
}

/// A user message's content as a list of parts.
fn parts(content: &Value) -> Vec<Value> {
    match content {
        Value::String(s) => vec![json!({"type": "text", "text": s})],
        Value::Array(a) => a.clone(),
        _ => Vec::new(),
    }
}

/// The texts of a system or assistant content.
fn texts(content: &Value) -> Vec<Value> {
    parts(content)
        .iter()
        .filter_map(|p| p.get("text").cloned())
        .filter(|t| t != "")
        .collect()
}

fn normal_messages(messages: &[Value]) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for m in messages {
        let role = m["role"].as_str().unwrap_or("");
        let n = match role {
            "system" | "developer" => json!({"role": "system", "texts": texts(&m["content"])}),
            "user" => json!({"role": "user", "parts": parts(&m["content"])}),
            "assistant" => {
                let calls: Vec<Value> = m["tool_calls"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|c| {
                        let args = c["function"]["arguments"].as_str().unwrap_or("");
                        let args: Value = serde_json::from_str(args).unwrap_or(Value::Null);
                        json!({"id": c["id"], "name": c["function"]["name"], "arguments": args})
                    })
                    .collect();
                json!({"role": "assistant", "texts": texts(&m["content"]), "calls": calls})
            }
            _ => json!({"role": role, "id": m["tool_call_id"], "content": m["content"]}),
        };
        match (out.last_mut(), &n["parts"]) {
            (Some(prev), Value::Array(more)) if prev["role"] == "user" => {
                if let Some(p) = prev["parts"].as_array_mut() {
                    p.extend(more.iter().cloned());
                }
            }
            _ => out.push(n),
        }
    }
    // Each system text is its own message after the round trip.
    out.into_iter()
        .flat_map(|m| match m["role"].as_str() {
            Some("system") => m["texts"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|t| json!({"role": "system", "texts": [t]}))
                .collect(),
            _ => vec![m],
        })
        .collect()
}

fn normal(req: &Value) -> Value {
    let mut r = req.as_object().cloned().unwrap_or_default();
    let limit = r
        .remove("max_completion_tokens")
        .or_else(|| r.remove("max_tokens"))
        .unwrap_or(json!(DEFAULT_MAX_TOKENS));
    r.remove("max_tokens");
    r.insert("limit".into(), limit);
    if let Some(Value::String(s)) = r.get("stop").cloned() {
        r.insert("stop".into(), json!([s]));
    }
    r.remove("stream_options");
    let has_tools = r.contains_key("tools");
    let none = r.get("tool_choice") == Some(&json!("none"));
    if !has_tools || none {
        r.remove("parallel_tool_calls");
    }
    if has_tools && !none && r.get("parallel_tool_calls") == Some(&json!(false)) {
        r.entry("tool_choice").or_insert(json!("auto"));
    }
    if let Some(Value::Array(tools)) = r.get_mut("tools") {
        for t in tools {
            if let Some(f) = t.get_mut("function").and_then(Value::as_object_mut) {
                f.entry("parameters")
                    .or_insert(json!({"type": "object", "properties": {}}));
            }
        }
    }
    let messages = r
        .get("messages")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    r.insert("messages".into(), Value::Array(normal_messages(&messages)));
    Value::Object(r)
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn canonical_to_anthropic_and_back_keeps_every_translatable_field(req in request()) {
        let there = to_anthropic(&req).map_err(|e| TestCaseError::fail(format!("to Anthropic: {e}")))?;
        let back = from_anthropic_request(&there).map_err(|e| TestCaseError::fail(format!("back: {e}\n{there}")))?;
        prop_assert_eq!(normal(&back), normal(&req), "through {}", there);
    }
}
