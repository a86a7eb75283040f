//! The simulator predicts HTTP: every built-in scenario runs in virtual time in
//! `steadfast-sim` and for real over loopback against `steadfast mock` on the same
//! scenario and seed — through the async client `steadfast-reqwest` (the scenario's own
//! open-loop arrivals, each call when the simulator's arrives) and through the batch
//! runner of `steadfast batch --mock` (its flags resolved and its runner run in this
//! process, as the binary does: N lines at concurrency C, which the simulator runs as a
//! closed loop) — and the two must agree: success within 1 percentage point, upstream
//! requests within 5 %, the same breaker transitions in the same order, each give-up
//! reason within 1 point. The side-by-side table is printed.
//!
//! Both sides run the same world faster: the scenario file time-scaled
//! (`Scenario::time_scaled`) and the policy with it (`time_scaled_policy`), so a
//! 90-second outage takes seconds. The policy is the default (the batch preset for the
//! batch) without jitter, so that instants do not depend on which side drew first; the
//! requests carry business ids, so that the upstream's draws (a function of the seed and
//! each request's identity) are the same on both sides.

mod support;

#[path = "agree/batch.rs"]
mod batch;
#[path = "agree/client.rs"]
mod client;
#[path = "agree/figures.rs"]
mod figures;
#[path = "agree/transitions.rs"]
mod transitions;

use std::time::{Duration, Instant};
use steadfast_core::policy::Policy;
use steadfast_sim::time_scaled_policy;

use steadfast_upstream::dist::Dist;
use steadfast_upstream::scenario::Arrival;
use steadfast_upstream::{Scenario, builtin};

use figures::{Figures, header};
use support::Tmp;

/// The seed of every run (printed with the table).
const SEED: u64 = 0x5eed;

/// How a scenario is run on both sides: for the client, its time scale and how many
/// of the scenario's own calls it makes; for the batch, its time scale, lines and
/// concurrency.
struct Plan {
    name: &'static str,
    /// The client holds while the breaker is open (see [`open_loop`]).
    hold: bool,
    scale: f64,
    calls: u64,
    batch_scale: f64,
    lines: u64,
    concurrency: u32,
}

const fn plan(
    name: &'static str,
    (scale, calls): (f64, u64),
    (batch_scale, lines, concurrency): (f64, u64, u32),
) -> Plan {
    Plan {
        name,
        hold: false,
        scale,
        calls,
        batch_scale,
        lines,
        concurrency,
    }
}

/// Sizes that keep each HTTP run near a second or two, and its request rate near a few
/// hundred a second (a loaded two-core machine keeps up), while the figures stay
/// robust. A closed loop's pace is the machine's (a batch line also waits for its
/// results to be durable), so a batch either ends long before the scenario's first
/// instant of trouble (brownout, provider-failover: half the lines the simulator could
/// finish by then) or runs on past all of it (outage: the breaker's whole cycle, which
/// follows the clock, not the pace); against a rate limit it runs one line at a time
/// (two lines racing for a token are won by the faster machine). The client's runs go
/// on past the last transition their breaker makes.
const PLANS: [Plan; 16] = [
    plan("ok", (0.02, 200), (0.02, 100, 16)),
    plan("steady", (0.04, 300), (0.04, 200, 16)),
    plan("slow", (0.04, 200), (0.04, 100, 16)),
    plan("flaky", (0.03, 250), (0.03, 200, 16)),
    plan("reset", (0.03, 250), (0.03, 200, 16)),
    plan("malformed", (0.03, 250), (0.03, 200, 16)),
    held(plan("hang", (0.02, 200), (0.01, 100, 16))),
    plan("stream-cut", (0.03, 250), (0.03, 200, 16)),
    held(plan("outage", (0.04, 1300), (0.03, 400, 8))),
    plan("brownout", (0.04, 1900), (0.04, 250, 16)),
    plan("provider-failover", (0.04, 2000), (0.05, 150, 16)),
    plan("ratelimit", (0.005, 200), (0.05, 80, 1)),
    plan("ratelimit-storm", (0.05, 750), (0.05, 400, 32)),
    plan("auth", (0.03, 200), (0.03, 100, 16)),
    plan("quota", (0.03, 200), (0.03, 100, 16)),
    plan("quota-exhausted-key", (0.03, 200), (0.03, 100, 16)),
];

/// The plan with the client holding while the breaker is open.
const fn held(p: Plan) -> Plan {
    Plan { hold: true, ..p }
}

/// One attempt's time on both sides, before scaling (the default's; the batch preset's
/// two minutes would make the hang scenario's run long).
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(60);

/// No answer comes sooner than this over a loaded loopback: a scaled fixed or uniform
/// latency below it is raised to it on both sides (else the machine's own speed, not
/// the scenario, would pace the HTTP side).
const FLOOR: Duration = Duration::from_millis(10);

/// The scaled scenario with its short latencies raised to [`FLOOR`].
fn scaled(name: &str, scale: f64) -> Scenario {
    let mut s = builtin::scenario(name)
        .expect("a built-in")
        .time_scaled(scale);
    for e in &mut s.endpoints {
        for d in [&mut e.latency, &mut e.error_latency] {
            *d = match *d {
                Dist::Fixed(x) => Dist::Fixed(x.max(FLOOR)),
                Dist::Uniform { min, max } => Dist::Uniform {
                    min: min.max(FLOOR),
                    max: max.max(FLOOR),
                },
                other => other,
            };
        }
    }
    s
}

/// The scenario and policy the client side runs, scaled.
fn open_loop(p: &Plan) -> (Scenario, Policy) {
    let mut s = scaled(p.name, p.scale);
    s.load.calls = s.load.calls.min(p.calls);
    s.load.ids = Some("call".to_owned());
    let mut policy = Policy::default().without_jitter();
    // The budget's floor spaces retries 1/min_per_sec apart: time-scaled, a few
    // milliseconds, which a loaded loopback cannot keep apart; its figures are the
    // simulator's own tests'.
    policy.budget.enabled = false;
    policy.retry.attempt_timeout = ATTEMPT_TIMEOUT;
    // Where the breaker opens, a call that gives up at once on an open breaker ends
    // by the instant it arrived: a few milliseconds of a loaded machine move the
    // breaker's instants, and tens of calls change sides. Holding, they wait it out,
    // and what the comparison sees follows the scenario's clock, not the machine's.
    policy.retry.hold = p.hold;
    (s, time_scaled_policy(&policy, p.scale))
}

/// The scenario and policy the batch side runs, scaled, as a closed loop.
fn closed_loop(p: &Plan) -> (Scenario, Policy) {
    let mut s = scaled(p.name, p.batch_scale);
    s.load.arrival = Arrival::Closed;
    s.load.calls = p.lines;
    s.load.concurrency = p.concurrency;
    s.load.ids = Some("line".to_owned());
    let mut batch = steadfast_cli::batch::file::default_policy().without_jitter();
    batch.retry.attempt_timeout = ATTEMPT_TIMEOUT;
    (s, time_scaled_policy(&batch, p.batch_scale))
}

fn simulate(scenario: &Scenario, policy: &Policy) -> Figures {
    let run = steadfast_sim::run(scenario, policy, SEED).expect("the simulation runs");
    figures::of_sim(&run)
}

/// A real run of one side that agrees with the prediction, or its disagreements.
/// A real run sees the machine's own hiccups (a probe of a half-open breaker that a
/// stall delayed into another instant): a side that disagrees runs once more, and only
/// two disagreements in a row fail.
fn agree(predicted: &Figures, run: impl Fn() -> Figures) -> (Figures, Vec<String>) {
    let first = run();
    let broken = predicted.disagreements(&first);
    if broken.is_empty() {
        return (first, broken);
    }
    println!("disagreed once, running again: {}", broken.join("; "));
    let second = run();
    let broken = predicted.disagreements(&second);
    (second, broken)
}

#[test]
fn sim_agrees_with_http() {
    let tmp = Tmp::new("agree");
    let mut table = vec![header()];
    let mut broken = Vec::new();
    for p in &PLANS {
        let started = Instant::now();
        let (scenario, policy) = open_loop(p);
        let predicted = simulate(&scenario, &policy);
        let (seen, client_broken) = agree(&predicted, || client::run(&scenario, &policy, SEED));
        let (lines, batch_policy) = closed_loop(p);
        let batch_predicted = simulate(&lines, &batch_policy);
        let (batch_seen, batch_broken) = agree(&batch_predicted, || {
            batch::run(&tmp, &lines, &batch_policy, SEED)
        });
        println!("{}: {:?}", p.name, started.elapsed());
        table.push(predicted.row(p.name, "sim"));
        table.push(seen.row(&format!("  x{}", p.scale), "reqwest"));
        table.push(batch_predicted.row("", "sim C"));
        table.push(batch_seen.row(&format!("  x{}", p.batch_scale), "batch"));
        for d in client_broken {
            broken.push(format!("{} reqwest x{}: {d}", p.name, p.scale));
        }
        for d in batch_broken {
            broken.push(format!("{} batch x{}: {d}", p.name, p.batch_scale));
        }
    }
    println!("seed {SEED:#x}\n{}", table.join("\n"));
    assert!(broken.is_empty(), "seed {SEED:#x}:\n{}", broken.join("\n"));
}
