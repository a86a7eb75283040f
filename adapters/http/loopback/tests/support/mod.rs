//! What the loopback suites of both adapters share: the harness trait each adapter
//! implements, test policies, a recording TCP tap, and the scenarios themselves
//! (generic over the harness), instantiated per adapter by `scenarios!`.
#![allow(dead_code)]

pub mod canonical;
pub mod capture;
pub mod clients;
pub mod hostile;
pub mod liveness;
pub mod scenarios;
pub mod streams;
pub mod tap;
pub mod typed;

use std::fmt::Debug;
use std::time::Duration;

use serde_json::{Value, json};
use steadfast_core::policy::Policy;
use steadfast_http::{
    CallError, CallOptions, EndpointDef, Fallback, MetricsSnapshot, Provider, Reply, Shared,
    SseEvent, StreamError, TextEvent,
};
use steadfast_mock::{Fault, MockConfig, MockServer};

/// The seed every client in the suites uses (printed on failure through the test name).
pub const SEED: u64 = 0x5eed_fa57;

/// What a test gives a harness to build a client.
pub struct Build {
    pub policy: Policy,
    pub endpoints: Vec<EndpointDef>,
    pub fallbacks: Vec<Fallback>,
    /// Clients of one test that share a server need different seeds, or they draw
    /// the same idempotency keys (and the server replays the other's answers).
    pub seed: u64,
    /// The client's body limit, when not the default.
    pub max_body: Option<u64>,
    /// The builder's `max_retries`, `timeout`, `deadline` and `canonical`, when set.
    pub knobs: Knobs,
}

/// The builder settings laid over the policy.
#[derive(Default)]
pub struct Knobs {
    pub max_retries: Option<u32>,
    pub timeout: Option<Duration>,
    pub deadline: Option<Duration>,
    pub canonical: Option<bool>,
}

impl Build {
    pub fn new(endpoint: EndpointDef) -> Build {
        Build {
            policy: fast_policy(),
            endpoints: vec![endpoint],
            fallbacks: Vec::new(),
            seed: SEED,
            max_body: None,
            knobs: Knobs::default(),
        }
    }

    pub fn max_body(mut self, bytes: u64) -> Build {
        self.max_body = Some(bytes);
        self
    }

    pub fn seed(mut self, seed: u64) -> Build {
        self.seed = seed;
        self
    }

    pub fn endpoint(mut self, e: EndpointDef) -> Build {
        self.endpoints.push(e);
        self
    }

    pub fn fallback(mut self, f: Fallback) -> Build {
        self.fallbacks.push(f);
        self
    }

    pub fn policy(mut self, f: impl FnOnce(&mut Policy)) -> Build {
        f(&mut self.policy);
        self
    }
}

/// The result of a stream: the call's error, or the items the stream yielded.
pub type Streamed<E> = Result<Vec<Result<SseEvent, StreamError<E>>>, CallError<E>>;
/// The result of a stream read as text.
pub type Texts<E> = Result<Vec<Result<TextEvent, StreamError<E>>>, CallError<E>>;

/// One adapter, driven blocking from a test thread.
pub trait Harness: 'static {
    type Client: Debug;
    type Source: std::error::Error + Debug + 'static;
    const NAME: &'static str;

    fn build(b: Build) -> Self::Client;
    fn chat<R: serde::Serialize + Send>(
        c: &Self::Client,
        body: R,
    ) -> Result<Reply, CallError<Self::Source>>;
    fn chat_with(c: &Self::Client, id: &str, body: Value)
    -> Result<Reply, CallError<Self::Source>>;
    fn chat_opts(
        c: &Self::Client,
        body: Value,
        options: &CallOptions,
    ) -> Result<Reply, CallError<Self::Source>>;
    fn stream(c: &Self::Client, body: Value) -> Streamed<Self::Source>;
    fn stream_text(c: &Self::Client, body: Value) -> Texts<Self::Source>;
    fn metrics(c: &Self::Client) -> MetricsSnapshot;
    fn shared(c: &Self::Client) -> &Shared;
}

/// Short timeouts and waits so the suites stay fast; the retry budget as configured by
/// default (its floor covers a fresh client's retries, however close they fall).
pub fn fast_policy() -> Policy {
    let mut p = Policy::default();
    p.retry.max_attempts = 4;
    p.retry.deadline = Some(Duration::from_secs(8));
    p.retry.attempt_timeout = Duration::from_millis(400);
    p.retry.connect_timeout = Duration::from_millis(300);
    p.retry.max_retry_after = Duration::from_secs(4);
    p.backoff.base = Duration::from_millis(5);
    p.backoff.cap = Duration::from_millis(20);
    p
}

pub fn mock(scenario: &str) -> MockServer {
    let c = MockConfig::builtin(scenario).expect("a built-in scenario");
    MockServer::start(c.with_seed(SEED)).expect("mock server starts")
}

pub fn mock_with(f: impl FnOnce(&mut MockConfig)) -> MockServer {
    let mut c = MockConfig::default().with_seed(SEED);
    f(&mut c);
    MockServer::start(c).expect("mock server starts")
}

pub fn openai(server: &MockServer) -> EndpointDef {
    EndpointDef::new(server.base_url(), Provider::OpenAi, "sk-test-key-one")
}

pub fn anthropic(server: &MockServer) -> EndpointDef {
    EndpointDef::new(
        server.base_url(),
        Provider::Anthropic,
        "sk-ant-test-key-one",
    )
}

/// A chat request whose reply (the mock echoes the last user message) is `text`.
pub fn ask(text: &str) -> Value {
    json!({"model": "caller-model", "max_tokens": 64, "messages": [{"role": "user", "content": text}]})
}

/// The reply text of a success body of either provider.
pub fn reply_text(body: &Value) -> String {
    body.pointer("/choices/0/message/content")
        .or_else(|| body.pointer("/content/0/text"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// A port on 127.0.0.1 that nothing listens on.
pub fn dead_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = l.local_addr().expect("addr").port();
    drop(l);
    port
}

/// `status` with a raw `retry-after-ms`.
pub fn status_retry_after_ms(status: u16, ms: &str) -> Fault {
    Fault::Status {
        status,
        retry_after: None,
        retry_after_ms: Some(ms.to_owned()),
        body: None,
        headers: Vec::new(),
    }
}

/// `status` with this body.
pub fn status_body(status: u16, body: &str) -> Fault {
    Fault::Status {
        status,
        retry_after: None,
        retry_after_ms: None,
        body: Some(body.to_owned()),
        headers: Vec::new(),
    }
}

/// Instantiates each named scenario of `support::$module` as a `#[test]` for harness
/// `$h`.
#[macro_export]
macro_rules! scenarios {
    ($h:ty, $module:ident; $($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                eprintln!("adapter {}, seed {:#x}", <$h as support::Harness>::NAME, support::SEED);
                support::$module::$name::<$h>();
            }
        )*
    };
}

/// Every scenario of every list, for one harness.
#[macro_export]
macro_rules! all_scenarios {
    ($h:ty) => {
        scenarios!($h, scenarios;
            success_openai,
            success_anthropic,
            business_id_sets_the_idempotency_key,
            request_errors_are_not_retried,
            key_errors_disable_the_key_and_rotate,
            insufficient_quota_rotates_keys,
            retryable_statuses_are_retried_with_the_same_key,
            retry_after_seconds_is_honoured,
            retry_after_http_date_is_honoured,
            retry_after_ms_is_honoured,
            hang_is_retried_with_the_same_idempotency_key,
            connection_refused_is_retried_then_given_up,
            failover_to_a_second_server_while_the_first_is_down,
            open_breaker_fails_fast_without_reaching_the_server,
            template_fallback_marks_the_reply_degraded,
            stored_fallback_returns_the_last_result_degraded,
            endpoint_fallback_answers_from_another_server,
            no_panic_on_any_fault,
            no_panic_in_any_scenario,
            keys_never_appear_in_debug_or_errors,
        );
        scenarios!($h, streams;
            stream_succeeds_with_every_event,
            stream_cut_before_the_first_event_is_retried,
            stream_hang_before_the_first_event_is_retried,
            stream_cut_after_the_first_event_is_interrupted,
            stream_error_status_is_retried,
            no_panic_on_any_fault_while_streaming,
        );
        scenarios!($h, typed;
            replies_tell_text_usage_and_who_served_them,
            call_options_change_one_call_only,
            call_options_add_headers_and_the_idempotency_key,
            builder_knobs_apply_to_every_call,
            a_failover_is_counted_as_one_not_as_a_retry,
            typed_requests_and_responses_of_steadfasts_own,
        );
        scenarios!($h, canonical;
            a_canonical_call_fails_over_to_the_strict_anthropic_mock,
            sent_natively_the_same_call_is_refused_by_the_strict_mock,
            a_canonical_stream_fails_over_with_text_deltas_in_order,
            a_tool_call_round_trip_through_anthropic,
            an_untranslatable_field_is_refused_before_any_attempt,
        );
        scenarios!($h, liveness;
            a_burst_is_paced_instead_of_failing,
            a_drained_window_is_retried_at_the_hint_not_at_the_reset,
            alternating_hints_are_waited_exactly,
            a_fresh_client_always_gets_its_attempts,
        );
    };
}
