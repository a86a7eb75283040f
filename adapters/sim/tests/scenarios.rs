//! Asserted figures of whole built-in scenarios under the default policy. Seeds are
//! fixed and printed in every failure message.

use core::time::Duration;

use steadfast_core::policy::Policy;
use steadfast_core::time::Timestamp;
use steadfast_sim::Reply;
use steadfast_sim::{Report, Run, builtin, run};

fn scenario(name: &str) -> steadfast_sim::Scenario {
    builtin::scenario(name).unwrap_or_else(|| panic!("no built-in {name}"))
}

fn at(d: Duration) -> Timestamp {
    Timestamp::from_nanos(d.as_nanos() as u64)
}

/// Requests sent to endpoint 0 inside its first outage window.
fn requests_in_outage(r: &Run) -> usize {
    let o = r.scenario.endpoints[0].outages[0];
    r.requests
        .iter()
        .filter(|q| q.target.endpoint.0 == 0 && q.at >= at(o.start) && q.at < at(o.end))
        .count()
}

#[test]
fn outage_breaker_and_budget_cut_upstream_load_by_more_than_ten_times() {
    let seed = 1;
    let s = scenario("outage");
    let guarded = run(&s, &Policy::default(), seed).unwrap();
    let mut naked = Policy::default();
    naked.breaker.enabled = false;
    naked.budget.enabled = false;
    let unguarded = run(&s, &naked, seed).unwrap();
    let (g, u) = (requests_in_outage(&guarded), requests_in_outage(&unguarded));
    assert!(
        u > 1000,
        "seed {seed}: without guards {u} requests hit the outage"
    );
    assert!(
        g * 10 < u,
        "seed {seed}: {g} requests during the outage with breaker and budget, {u} without"
    );
    // The breaker opened during the outage and closed again after it.
    let report = Report::new(&guarded, "default");
    let t = &report.breaker_transitions;
    assert_eq!(t.first().map(|t| t.to), Some("open"), "seed {seed}: {t:?}");
    assert_eq!(t.last().map(|t| t.to), Some("closed"), "seed {seed}: {t:?}");
    assert!(t.first().unwrap().at_s >= 20.0 && t.last().unwrap().at_s >= 50.0);
}

#[test]
fn ratelimit_storm_never_sends_before_the_hint_and_succeeds() {
    let seed = 1;
    let s = scenario("ratelimit-storm");
    let r = run(&s, &Policy::default(), seed).unwrap();
    let throttled = r
        .requests
        .iter()
        .filter(|q| q.reply == Reply::Status(429))
        .count();
    assert!(
        throttled > 300,
        "seed {seed}: only {throttled} 429s: no storm"
    );
    // From the sim's own log: a 429 answered at `answered` with `hint` bars its key
    // until `answered + hint`; no request to that key may be sent in between.
    let mut log: Vec<_> = r.requests.iter().collect();
    log.sort_by_key(|q| q.at);
    let mut barred: Vec<(Timestamp, Timestamp, steadfast_core::ids::Target)> = r
        .requests
        .iter()
        .filter_map(|q| q.hint.map(|h| (q.answered, q.answered + h, q.target)))
        .collect();
    barred.sort();
    let mut checked = 0;
    for q in &log {
        for &(from, until, target) in barred.iter().take_while(|(from, _, _)| *from <= q.at) {
            assert!(
                !(target == q.target && q.at >= from && q.at < until),
                "seed {seed}: call {} sent to {} at {} though a 429 at {from} said not before {until}",
                q.call,
                q.target,
                q.at
            );
            checked += 1;
        }
    }
    assert!(checked > 0);
    let report = Report::new(&r, "default");
    assert!(
        report.success_rate >= 0.99,
        "seed {seed}: success {}",
        report.success_rate
    );
}

/// Calls arriving while the primary is down that succeed, and how many arrived.
fn failover_success(policy: &Policy, seed: u64) -> (Run, usize, usize) {
    let s = scenario("provider-failover");
    let r = run(&s, policy, seed).unwrap();
    let o = s.endpoints[0].outages[0];
    let during: Vec<_> = r
        .calls
        .iter()
        .filter(|c| c.arrived >= at(o.start) && c.arrived < at(o.end))
        .collect();
    let ok = during.iter().filter(|c| c.finish.is_success()).count();
    let n = during.len();
    (r, ok, n)
}

#[test]
fn provider_failover_keeps_calls_succeeding_while_the_primary_is_down() {
    let seed = 1;
    let (r, ok, n) = failover_success(&Policy::default(), seed);
    assert!(n > 500, "seed {seed}: {n} calls");
    assert!(
        ok * 1000 >= n * 999,
        "seed {seed}: {ok} of {n} calls succeeded while the primary was down"
    );
    // The secondary carried them.
    let secondary = r
        .requests
        .iter()
        .filter(|q| q.target.endpoint.0 == 1 && q.reply == Reply::Ok)
        .count();
    assert!(secondary >= ok * 9 / 10, "seed {seed}: {secondary}");
}

#[test]
fn quota_exhausted_key_gets_exactly_one_request() {
    let seed = 1;
    let s = scenario("quota-exhausted-key");
    let r = run(&s, &Policy::default(), seed).unwrap();
    let to_bad = r.requests.iter().filter(|q| q.target.key.0 == 1).count();
    assert_eq!(to_bad, 1, "seed {seed}");
    let report = Report::new(&r, "default");
    let bad = &report.keys[1];
    assert_eq!(
        bad.disabled.as_ref().map(|d| d.reason),
        Some("quota_exhausted")
    );
    assert_eq!(report.success_rate, 1.0, "seed {seed}");
}

#[test]
fn same_seed_same_report_and_different_seeds_differ() {
    let s = scenario("flaky");
    let json = |seed| {
        let r = run(&s, &Policy::default(), seed).unwrap();
        serde_json::to_string(&Report::new(&r, "default")).unwrap()
    };
    assert_eq!(json(7), json(7));
    assert_ne!(json(7), json(8));
    let text = |seed| {
        let r = run(&s, &Policy::default(), seed).unwrap();
        steadfast_sim::text::render(&Report::new(&r, "default"))
    };
    assert_eq!(text(7), text(7));
}

#[test]
fn a_tally_counts_what_the_logged_run_records() {
    use steadfast_core::retry::Finish;
    let seed = 3;
    let mut s = scenario("quota-exhausted-key");
    s.endpoints[0].outages = scenario("outage").endpoints[0].outages.clone();
    let r = run(&s, &Policy::default(), seed).unwrap();
    let mut marks = Vec::new();
    let t = steadfast_sim::run_tally(&s, &Policy::default(), seed, 100, |t| {
        marks.push(t.finished)
    })
    .unwrap();
    let successes = r
        .calls
        .iter()
        .filter(|c| matches!(c.finish, Finish::Success { .. }))
        .count() as u64;
    assert_eq!((t.arrived, t.finished), (1000, 1000), "seed {seed}");
    assert_eq!(t.requests, r.requests.len() as u64, "seed {seed}");
    assert_eq!(t.succeeded, successes, "seed {seed}");
    assert_eq!(t.breaker_transitions, r.breaker.len() as u64, "seed {seed}");
    assert_eq!(t.key_events, r.keys.len() as u64, "seed {seed}");
    assert!(
        t.breaker_transitions > 0 && t.key_events > 0,
        "seed {seed}: {t:?}"
    );
    assert_eq!(t.now, r.calls.iter().map(|c| c.finished).max().unwrap());
    assert_eq!(marks, (1..=10).map(|i| i * 100).collect::<Vec<_>>());
}
