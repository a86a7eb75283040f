//! `config`: TOML text → `Policy` → validation → an engine that runs.

use steadfast_core::engine::EndpointSpec;
use steadfast_core::policy::Policy;

use crate::harness::{Checks, Harness};
use crate::ops::{Answer, Body, Header, HttpAnswer, NewCall, Op, Status, Step};
use steadfast_core::outcome::{BodyState, Phase, TransportKind};

/// Section names a validation error may name.
const SECTIONS: [&str; 9] = [
    "retry.",
    "backoff.",
    "budget.",
    "classify.",
    "breaker.",
    "limiter.",
    "health.",
    "sla.",
    "idempotency.",
];

/// `config`: the bytes as a TOML policy file.
///
/// - Any text gives `Ok` or a parse error, never a panic.
/// - A parsed policy validates, or fails with a `ConfigError` naming a field of one of
///   the sections, and its message names that field too.
/// - A valid policy serializes and parses back to the same text, builds an engine,
///   and runs a short fixed script of calls (throttles, overloads, timeouts, a bad
///   key, successes) through the harness with every invariant checked.
pub fn config(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let policy = match toml::from_str::<Policy>(text) {
        Ok(p) => p,
        Err(e) => {
            assert!(!e.to_string().is_empty());
            return;
        }
    };
    if let Err(e) = policy.validate() {
        let field = e.field();
        assert!(
            SECTIONS.iter().any(|s| field.starts_with(s)),
            "unnamed field {field:?} in {e}"
        );
        assert!(e.to_string().contains(field), "{e}");
        return;
    }
    let written = toml::to_string(&policy).expect("a valid policy serializes");
    let back: Policy = toml::from_str(&written)
        .unwrap_or_else(|e| panic!("a serialized policy does not parse back: {e}\n{written}"));
    let again = toml::to_string(&back).expect("serializes");
    assert_eq!(written, again, "the round trip changed the policy");
    back.validate()
        .unwrap_or_else(|e| panic!("a valid policy is invalid after a round trip: {e}\n{written}"));

    let endpoints = [EndpointSpec::new(0, 2), EndpointSpec::new(1, 1)];
    let mut h = Harness::new(policy, &endpoints, 7)
        .unwrap_or_else(|e| panic!("a valid policy builds no engine: {e}"))
        .with_checks(Checks::default());
    if let Err(v) = h.apply_all(&script()) {
        panic!("{v}\npolicy:\n{written}");
    }
}

fn http(status: u16, headers: Vec<Header>) -> Answer {
    Answer::Http(HttpAnswer {
        status: Status(status),
        headers,
        body: Body::Empty,
        body_state: BodyState::Complete,
        tokens_used: Some(900),
    })
}

fn answer(call: u8, answer: Answer) -> Op {
    Op::Answer { call, answer }
}

/// A short day in the life of an engine.
fn script() -> Vec<Op> {
    let call = Op::NewCall(NewCall {
        tokens: 1000,
        business_id: None,
        rules: None,
    });
    let mut ops = vec![call.clone(), call.clone(), call];
    ops.push(answer(
        0,
        http(
            429,
            vec![
                Header::RetryAfterSecs(2),
                Header::OpenAiRemaining {
                    tokens: false,
                    n: 0,
                },
            ],
        ),
    ));
    ops.push(answer(0, http(529, vec![])));
    ops.push(answer(0, http(401, vec![])));
    ops.push(Op::Advance(Step::Millis(1500)));
    ops.push(answer(
        0,
        Answer::Transport {
            kind: TransportKind::Reset,
            phase: Phase::AfterSend,
        },
    ));
    for _ in 0..6 {
        ops.push(Op::Sleep);
        ops.push(answer(0, http(503, vec![Header::RetryAfterMs(250)])));
        ops.push(answer(
            1,
            http(200, vec![Header::AnthropicRemaining { kind: 1, n: 10 }]),
        ));
    }
    ops.push(Op::EnableKey {
        endpoint: 0,
        key: 0,
    });
    ops.push(Op::Advance(Step::Minutes(30)));
    ops.push(Op::PollDue);
    ops
}
