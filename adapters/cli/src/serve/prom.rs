//! `GET /metrics`: Prometheus text. The OpenTelemetry GenAI client metrics where the
//! conventions name one (`gen_ai.client.operation.duration`,
//! `gen_ai.client.token.usage`, `gen_ai.client.operation.time_to_first_chunk`, as
//! Prometheus spells them), `steadfast_*` for what they lack: requests by status,
//! attempts, retries, give-ups by reason, breaker states and transitions, key states
//! and cooldowns, failovers, hedges, stream cuts, single-flight joins and replays.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use steadfast_core::breaker::BreakerState;
use steadfast_core::engine::Engine;
use steadfast_core::ids::{EndpointId, KeyId, Target};
use steadfast_core::pool::KeyState;
use steadfast_core::time::Timestamp;
use steadfast_http::{MetricsSnapshot, Shared};

/// The OpenTelemetry GenAI semantic conventions' bucket boundaries for durations (s).
const SECONDS: [f64; 14] = [
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
];
/// ... and for token counts.
const TOKENS: [f64; 14] = [
    1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0, 1048576.0, 4194304.0,
    16777216.0, 67108864.0,
];

/// A cumulative histogram with fixed bounds.
#[derive(Debug)]
struct Histogram {
    bounds: &'static [f64],
    counts: Vec<AtomicU64>,
    /// The sum, in millionths of the unit.
    sum_micros: AtomicU64,
    total: AtomicU64,
}

impl Histogram {
    fn new(bounds: &'static [f64]) -> Histogram {
        Histogram {
            bounds,
            counts: bounds.iter().map(|_| AtomicU64::new(0)).collect(),
            sum_micros: AtomicU64::new(0),
            total: AtomicU64::new(0),
        }
    }

    fn observe(&self, value: f64) {
        for (bound, count) in self.bounds.iter().zip(&self.counts) {
            if value <= *bound {
                count.fetch_add(1, Ordering::Relaxed);
            }
        }
        let micros = (value * 1e6).clamp(0.0, u64::MAX as f64) as u64;
        self.sum_micros.fetch_add(micros, Ordering::Relaxed);
        self.total.fetch_add(1, Ordering::Relaxed);
    }

    fn render(&self, out: &mut String, name: &str, labels: &str) {
        let sep = if labels.is_empty() { "" } else { "," };
        for (bound, count) in self.bounds.iter().zip(&self.counts) {
            let n = count.load(Ordering::Relaxed);
            let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"{bound}\"}} {n}");
        }
        let total = self.total.load(Ordering::Relaxed);
        let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"+Inf\"}} {total}");
        let sum = self.sum_micros.load(Ordering::Relaxed) as f64 / 1e6;
        let _ = writeln!(out, "{name}_sum{{{labels}}} {sum}");
        let _ = writeln!(out, "{name}_count{{{labels}}} {total}");
    }
}

/// What the gateway counts itself (the client counts the attempts).
#[derive(Debug)]
pub struct GatewayMetrics {
    requests: Mutex<BTreeMap<(&'static str, u16), u64>>,
    duration: Histogram,
    first_chunk: Histogram,
    input_tokens: Histogram,
    output_tokens: Histogram,
    stream_cuts: AtomicU64,
    joined: AtomicU64,
    replayed: AtomicU64,
}

impl Default for GatewayMetrics {
    fn default() -> GatewayMetrics {
        GatewayMetrics {
            requests: Mutex::new(BTreeMap::new()),
            duration: Histogram::new(&SECONDS),
            first_chunk: Histogram::new(&SECONDS),
            input_tokens: Histogram::new(&TOKENS),
            output_tokens: Histogram::new(&TOKENS),
            stream_cuts: AtomicU64::new(0),
            joined: AtomicU64::new(0),
            replayed: AtomicU64::new(0),
        }
    }
}

impl GatewayMetrics {
    /// A response of `status` to a request on `path`.
    pub fn on_response(&self, path: &'static str, status: u16) {
        let mut m = self.requests.lock().unwrap_or_else(|p| p.into_inner());
        *m.entry((path, status)).or_insert(0) += 1;
    }

    /// A chat operation took `took` (to its last byte).
    pub fn on_operation(&self, took: Duration) {
        self.duration.observe(took.as_secs_f64());
    }

    /// A stream's first event reached the client `after` the request arrived.
    pub fn on_first_chunk(&self, after: Duration) {
        self.first_chunk.observe(after.as_secs_f64());
    }

    /// The tokens an answer reports.
    pub fn on_usage(&self, input: u64, output: u64) {
        self.input_tokens.observe(input as f64);
        self.output_tokens.observe(output as f64);
    }

    /// A stream failed after its first byte reached the client (passed on as an
    /// error event).
    pub fn on_stream_cut(&self) {
        self.stream_cuts.fetch_add(1, Ordering::Relaxed);
    }

    /// A request waited for a running one with its idempotency key.
    pub fn on_joined(&self) {
        self.joined.fetch_add(1, Ordering::Relaxed);
    }

    /// A stored success was sent again.
    pub fn on_replayed(&self) {
        self.replayed.fetch_add(1, Ordering::Relaxed);
    }

    /// The Prometheus text of everything: these counters, the client's and the
    /// engine's state at `now`.
    pub fn render(&self, shared: &Shared, now: Timestamp) -> String {
        let mut out = String::with_capacity(8 * 1024);
        self.render_own(&mut out);
        render_client(&mut out, &shared.metrics());
        render_endpoints(&mut out, shared, now);
        out
    }

    fn render_own(&self, out: &mut String) {
        header(
            out,
            "steadfast_gateway_requests_total",
            "counter",
            "Gateway responses by path and status.",
        );
        let requests = self
            .requests
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        for ((path, status), n) in requests {
            let _ = writeln!(
                out,
                "steadfast_gateway_requests_total{{path=\"{path}\",status=\"{status}\"}} {n}"
            );
        }
        const CHAT: &str = "gen_ai_operation_name=\"chat\"";
        const TOKENS: &str = "gen_ai_client_token_usage";
        let histograms = [
            (
                "gen_ai_client_operation_duration_seconds",
                "GenAI operation duration.",
                vec![(&self.duration, CHAT)],
            ),
            (
                "gen_ai_client_operation_time_to_first_chunk_seconds",
                "Time to the first chunk of a streamed answer.",
                vec![(&self.first_chunk, CHAT)],
            ),
            (
                TOKENS,
                "Tokens used, by type.",
                vec![
                    (
                        &self.input_tokens,
                        "gen_ai_operation_name=\"chat\",gen_ai_token_type=\"input\"",
                    ),
                    (
                        &self.output_tokens,
                        "gen_ai_operation_name=\"chat\",gen_ai_token_type=\"output\"",
                    ),
                ],
            ),
        ];
        for (name, help, series) in histograms {
            header(out, name, "histogram", help);
            for (h, labels) in series {
                h.render(out, name, labels);
            }
        }
        for (name, help, value) in [
            (
                "steadfast_gateway_stream_cuts_total",
                "Streams that failed after their first byte reached the client.",
                &self.stream_cuts,
            ),
            (
                "steadfast_gateway_single_flight_joined_total",
                "Requests that waited for a running request with their idempotency key.",
                &self.joined,
            ),
            (
                "steadfast_gateway_replays_total",
                "Stored successes sent again to their idempotency key.",
                &self.replayed,
            ),
        ] {
            counter(out, name, help, value.load(Ordering::Relaxed));
        }
    }
}

fn header(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

fn counter(out: &mut String, name: &str, help: &str, value: u64) {
    header(out, name, "counter", help);
    let _ = writeln!(out, "{name} {value}");
}

fn render_client(out: &mut String, m: &MetricsSnapshot) {
    counter(
        out,
        "steadfast_attempts_total",
        "Upstream attempts sent.",
        m.attempts,
    );
    counter(
        out,
        "steadfast_retries_total",
        "Upstream attempts after the first of a call.",
        m.retries,
    );
    counter(
        out,
        "steadfast_successes_total",
        "Calls that succeeded.",
        m.successes,
    );
    counter(
        out,
        "steadfast_failovers_total",
        "Attempts sent to another endpoint than the last.",
        m.failovers,
    );
    counter(
        out,
        "steadfast_hedges_total",
        "Hedges sent: upstream attempts beside one of the same call still running.",
        m.hedges,
    );
    counter(
        out,
        "steadfast_hedges_cancelled_total",
        "Upstream attempts dropped unanswered because another of their call answered first.",
        m.hedges_cancelled,
    );
    counter(
        out,
        "steadfast_key_cooldowns_total",
        "Keys cooled after a throttle.",
        m.keys_cooled,
    );
    counter(
        out,
        "steadfast_keys_disabled_total",
        "Keys disabled (revoked, out of quota, by an operator).",
        m.keys_disabled,
    );
    counter(
        out,
        "steadfast_shared_fallbacks_total",
        "Times a shared limit's store failed and its endpoint went on its fallback.",
        m.shared_fallbacks,
    );
    counter(
        out,
        "steadfast_shared_resumed_total",
        "Times a shared limit's store answered again after a failure.",
        m.shared_resumed,
    );
    counter(
        out,
        "steadfast_stream_interruptions_total",
        "Upstream streams cut after their first event.",
        m.stream_interruptions,
    );
    header(
        out,
        "steadfast_breaker_transitions_total",
        "counter",
        "Breaker transitions, by the state entered.",
    );
    for (to, n) in [
        ("open", m.breaker_opened),
        ("half_open", m.breaker_half_opened),
        ("closed", m.breaker_closed),
    ] {
        let _ = writeln!(
            out,
            "steadfast_breaker_transitions_total{{to=\"{to}\"}} {n}"
        );
    }
    let g = &m.give_ups;
    header(
        out,
        "steadfast_give_ups_total",
        "counter",
        "Calls given up, by reason.",
    );
    for (reason, n) in [
        ("not_retryable", g.not_retryable),
        ("unsafe_to_retry", g.unsafe_to_retry),
        ("retries_exhausted", g.retries_exhausted),
        ("deadline_exceeded", g.deadline_exceeded),
        ("hint_too_long", g.hint_too_long),
        ("budget_exhausted", g.budget_exhausted),
        ("breaker_open", g.breaker_open),
        ("no_usable_key", g.no_usable_key),
        ("rate_limited", g.rate_limited),
        ("cancelled", g.cancelled),
        ("other", g.other),
    ] {
        let _ = writeln!(out, "steadfast_give_ups_total{{reason=\"{reason}\"}} {n}");
    }
}

/// Each endpoint's breaker state and its keys by state.
fn render_endpoints(out: &mut String, shared: &Shared, now: Timestamp) {
    let rows = shared.with_engine(|e| endpoint_rows(e, now));
    header(
        out,
        "steadfast_breaker_state",
        "gauge",
        "Breaker state per endpoint: 0 closed, 1 half-open, 2 open.",
    );
    for (i, row) in rows.iter().enumerate() {
        let name = endpoint_label(shared, i);
        let _ = writeln!(
            out,
            "steadfast_breaker_state{{endpoint=\"{name}\"}} {}",
            row.breaker
        );
    }
    header(
        out,
        "steadfast_keys",
        "gauge",
        "Keys per endpoint, by state.",
    );
    for (i, row) in rows.iter().enumerate() {
        let name = endpoint_label(shared, i);
        for (state, n) in [
            ("usable", row.usable),
            ("cooling", row.cooling),
            ("disabled", row.disabled),
        ] {
            let _ = writeln!(
                out,
                "steadfast_keys{{endpoint=\"{name}\",state=\"{state}\"}} {n}"
            );
        }
    }
}

fn endpoint_label(shared: &Shared, i: usize) -> String {
    let id = EndpointId(u16::try_from(i).unwrap_or(u16::MAX));
    let name = shared.endpoint_name(id).unwrap_or("");
    name.replace(['\\', '"', '\n'], "_")
}

struct Row {
    breaker: u8,
    usable: u32,
    cooling: u32,
    disabled: u32,
}

fn endpoint_rows(engine: &Engine, now: Timestamp) -> Vec<Row> {
    let pool = engine.pool();
    (0..pool.endpoint_count())
        .map(|e| {
            let endpoint = EndpointId(e);
            let breaker = match engine.breaker(endpoint).map(|b| b.state()) {
                Some(BreakerState::HalfOpen) => 1,
                Some(BreakerState::Open { .. }) => 2,
                _ => 0,
            };
            let mut row = Row {
                breaker,
                usable: 0,
                cooling: 0,
                disabled: 0,
            };
            for k in 0..pool.key_count(endpoint) {
                match pool.key_state(
                    now,
                    Target {
                        endpoint,
                        key: KeyId(k),
                    },
                ) {
                    Some(KeyState::Usable) => row.usable += 1,
                    Some(KeyState::Cooling { .. }) => row.cooling += 1,
                    Some(KeyState::Disabled { .. }) => row.disabled += 1,
                    None => {}
                }
            }
            row
        })
        .collect()
}
