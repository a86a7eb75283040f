//! Four `steadfast batch` processes and two `steadfast serve` replicas behind one key
//! limited to 600 requests a minute with a burst of 20, sharing the limit through a
//! real `redis-server` on 127.0.0.1 (`[shared]`): every line ok, 429s at most 10% of
//! requests. The same four batches without `[shared]` for contrast. Elapsed times are
//! printed beside the ideal, never asserted.

mod support;

use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use steadfast_redis::testing::{Redis, unique_prefix};
use support::*;

const WORKERS: usize = 4;
const LINES: usize = 30;
const RPM: u64 = 600;
const BURST: u64 = 20;
/// Longer than any of these runs takes unless something hangs.
const GUARD: Duration = Duration::from_secs(120);

/// One key, `RPM` a minute, `BURST` at once, quick answers.
fn bucket() -> MockServer {
    server("ok", 8, |c| {
        c.knobs.rpm = Some(RPM);
        c.knobs.rate_burst = Some(BURST);
        c.knobs.latency_min = Some(Duration::from_millis(2));
        c.knobs.latency_max = Some(Duration::from_millis(10));
    })
}

/// A config with the key's limit as the endpoint's `rpm` (burst `BURST`), shared
/// through `redis` when given.
fn config(tmp: &Tmp, base: &str, redis: Option<(&str, &str)>) -> String {
    let shared = redis.map_or(String::new(), |(url, prefix)| {
        format!("[shared]\nredis = \"{url}\"\nprefix = \"{prefix}\"\n\n")
    });
    let text = format!(
        "[limiter]\nburst = {burst}\n\n{shared}[[endpoint]]\nname = \"key-1\"\nbase_url = \"{base}\"\n\
         keys_env = [\"{KEY_VAR}\"]\nrpm = {RPM}\n",
        burst = BURST as f64 / RPM as f64,
    );
    tmp.write("config.toml", &text)
}

/// Starts worker `w` on its own `LINES` lines.
fn worker(tmp: &Tmp, config: &str, w: usize) -> Child {
    let input = tmp.write(&format!("in{w}.jsonl"), &prompts(&format!("w{w}"), LINES));
    let out = tmp.p(&format!("out{w}.jsonl"));
    let seed = (w + 1).to_string();
    let args = [
        "batch", "--config", config, "--input", &input, "--output", &out, "--quiet", "--seed",
        &seed,
    ];
    command(&args, &[(KEY_VAR, steadfast_mock::MOCK_KEY)])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the batch starts")
}

/// Waits for every worker; panics if one is still running after `GUARD`.
fn wait_all(mut children: Vec<Child>) {
    let started = Instant::now();
    while !children.is_empty() {
        children.retain_mut(|c| match c.try_wait().expect("wait") {
            Some(status) => {
                assert!(status.success(), "a worker failed: {status}");
                false
            }
            None => true,
        });
        if started.elapsed() > GUARD {
            for c in &mut children {
                let _ = c.kill();
            }
            panic!("a worker still runs after {GUARD:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs the four workers at once; returns (lines ok, requests, 429s, seconds).
fn four_batches(tmp: &Tmp, redis: Option<(&str, &str)>) -> (usize, u64, u64, f64) {
    let server = bucket();
    let config = config(tmp, &server.base_url(), redis);
    let started = Instant::now();
    let children = (0..WORKERS).map(|w| worker(tmp, &config, w)).collect();
    wait_all(children);
    let took = started.elapsed().as_secs_f64();
    let ok = (0..WORKERS)
        .map(|w| {
            let r = results(&tmp.path(&format!("out{w}.jsonl")));
            assert_eq!(r.len(), LINES, "one line per id");
            r.values().filter(|l| l["ok"] == true).count()
        })
        .sum();
    let stats = server.stats();
    (ok, stats.total_requests, stats.status(429), took)
}

/// The ideal: the burst at once, then the rest at the key's rate.
fn ideal_secs(requests: u64) -> f64 {
    requests.saturating_sub(BURST) as f64 * 60.0 / RPM as f64
}

#[test]
fn four_batch_processes_share_one_key_limit() {
    let redis = Redis::shared();
    let prefix = unique_prefix("batch4");
    let tmp = Tmp::new("shared4");
    let (ok, requests, throttled, took) = four_batches(&tmp, Some((&redis.url, &prefix)));
    let ideal = ideal_secs((WORKERS * LINES) as u64);
    println!(
        "shared: {requests} requests, {throttled} 429s, {took:.2} s ({:.3}x the ideal {ideal:.1} s)",
        took / ideal
    );
    assert_eq!(ok, WORKERS * LINES, "every line ok");
    assert!(
        throttled * 10 <= requests,
        "429s at most 10% of requests: {throttled} of {requests}"
    );
    // The contrast may lose lines: each worker spends its burst on the same key.
    let tmp = Tmp::new("local4");
    let (alone_ok, alone, alone_throttled, alone_took) = four_batches(&tmp, None);
    println!(
        "local limits only: {alone_ok} lines ok, {alone} requests, {alone_throttled} 429s, {alone_took:.2} s"
    );
    assert!(
        alone_throttled > throttled,
        "without sharing the four bursts meet more 429s ({alone_throttled} vs {throttled})"
    );
}

/// A `steadfast serve` replica in front of `mock`, sharing through `redis` (each
/// replica has its own client and its own connection to Redis, as a process would).
async fn replica(
    mock: &MockServer,
    redis: (&str, &str),
    seed: u64,
) -> steadfast_cli::serve::Running {
    replica_with(mock, redis, seed, "").await
}

/// [`replica`] with more `[shared]` settings.
async fn replica_with(
    mock: &MockServer,
    redis: (&str, &str),
    seed: u64,
    shared: &str,
) -> steadfast_cli::serve::Running {
    use steadfast_cli::serve::{Gateway, config};
    let (url, prefix) = redis;
    let text = format!(
        "[limiter]\nburst = {burst}\n[retry]\nmax_attempts = 8\n\n\
         [shared]\nredis = \"{url}\"\nprefix = \"{prefix}\"\n{shared}\n\
         [[endpoint]]\nname = \"key-1\"\nbase_url = \"{base}\"\nkeys_env = [\"{KEY_VAR}\"]\n\
         model = \"gpt-4o-mini\"\nrpm = {RPM}\n",
        burst = BURST as f64 / RPM as f64,
        base = mock.base_url(),
    );
    let file = config::from_toml(&text).expect("the config parses");
    let env =
        |v: &str| (v == KEY_VAR).then(|| steadfast_http::ApiKey::new(steadfast_mock::MOCK_KEY));
    let parts = steadfast_cli::cli::serve::parts(file, Some(seed), &env).expect("the parts build");
    let (gw, ender) = Gateway::new(parts).expect("the gateway builds");
    steadfast_cli::serve::start(gw, ender, "127.0.0.1:0".parse().expect("an address"))
        .await
        .expect("the gateway starts")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_serve_replicas_pace_their_clients_together() {
    let redis = Redis::shared();
    let prefix = unique_prefix("serve2");
    let mock = bucket();
    let replicas = [
        replica(&mock, (&redis.url, &prefix), 1).await,
        replica(&mock, (&redis.url, &prefix), 2).await,
    ];
    let http = reqwest::Client::new();
    let body = serde_json::json!({"model": "gpt-4o-mini",
        "messages": [{"role": "user", "content": "Say hello"}]});
    let started = Instant::now();
    let calls = (0..WORKERS * LINES).map(|i| {
        let url = format!("{}/v1/chat/completions", replicas[i % 2].base_url());
        let req = http.post(url).json(&body);
        async move { req.send().await.map(|r| r.status().as_u16()).unwrap_or(0) }
    });
    let statuses = futures_util::future::join_all(calls).await;
    let took = started.elapsed().as_secs_f64();
    let stats = mock.stats();
    let (requests, throttled) = (stats.total_requests, stats.status(429));
    let ideal = ideal_secs((WORKERS * LINES) as u64);
    let mut fell = 0;
    for r in &replicas {
        let metrics = http.get(format!("{}/metrics", r.base_url())).send().await;
        let text = metrics.expect("metrics").text().await.expect("a body");
        fell += counter(&text, "steadfast_shared_fallbacks_total");
    }
    println!(
        "two replicas: {requests} upstream requests, {throttled} 429s, {fell} fallbacks to local limits, \
         {took:.2} s ({:.3}x the ideal {ideal:.1} s)",
        took / ideal
    );
    let failed = statuses.iter().filter(|s| **s != 200).count();
    assert_eq!(failed, 0, "every request succeeds: {statuses:?}");
    assert!(
        throttled * 10 <= requests,
        "429s at most 10% of requests: {throttled} of {requests}"
    );
    assert_eq!(stats.early, 0, "no request before its hint");
    for r in replicas {
        r.shutdown().await;
    }
}

/// The value of the counter `name` in a Prometheus text page (0 when absent).
fn counter(page: &str, name: &str) -> u64 {
    let line = page
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '));
    line.and_then(|v| v.trim().parse().ok()).unwrap_or(0)
}

/// Lines in `path` (0 when it does not exist yet).
fn lines_in(path: &std::path::Path) -> usize {
    std::fs::read_to_string(path).map_or(0, |t| t.lines().count())
}

#[test]
fn two_workers_on_one_ledger_run_each_id_once_across_a_kill() {
    const N: usize = 40;
    let redis = Redis::shared();
    let prefix = unique_prefix("ledger");
    let tmp = Tmp::new("ledger");
    // Slow answers, so that the killed worker has lines in flight.
    let mock = server("ok", 9, |c| {
        c.knobs.latency_min = Some(Duration::from_millis(100));
        c.knobs.latency_max = Some(Duration::from_millis(200));
    });
    let config = tmp.write(
        "config.toml",
        &format!(
            "[shared]\nredis = \"{url}\"\nprefix = \"{prefix}\"\nledger = true\nclaim_for = \"1s\"\n\n\
             [[endpoint]]\nbase_url = \"{base}\"\nkeys_env = [\"{KEY_VAR}\"]\n",
            url = redis.url,
            base = mock.base_url(),
        ),
    );
    let input = tmp.write("in.jsonl", &prompts("l", N));
    let start = |name: &str, seed: &str| {
        let out = tmp.p(name);
        let args = [
            "batch",
            "--config",
            &config,
            "--input",
            &input,
            "--output",
            &out,
            "--quiet",
            "--concurrency",
            "4",
            "--seed",
            seed,
        ];
        command(&args, &[(KEY_VAR, steadfast_mock::MOCK_KEY)])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("the batch starts")
    };
    let mut a = start("a.jsonl", "1");
    let b = start("b.jsonl", "2");
    // Once the first worker has written a few lines, SIGKILL it.
    let started = Instant::now();
    while lines_in(&tmp.path("a.jsonl")) < 3 && started.elapsed() < GUARD {
        std::thread::sleep(Duration::from_millis(10));
    }
    a.kill().expect("SIGKILL the first worker");
    let _ = a.wait();
    let written_by_a = lines_in(&tmp.path("a.jsonl"));
    wait_all(vec![b]);
    // The survivor finished every id: those it ran, and the stored answers of those
    // the killed one finished (written with 0 attempts: it made none).
    let r = results(&tmp.path("b.jsonl"));
    assert_eq!(r.len(), N, "one line per id");
    assert!(
        r.values()
            .all(|l| l["ok"] == true && l["response"].is_object()),
        "{r:?}"
    );
    let replayed = r.values().filter(|l| l["attempts"] == 0).count();
    let stats = mock.stats();
    for i in 1..=N {
        let key = key_of(&format!("l-{i}"));
        let k = stats
            .key(&key)
            .unwrap_or_else(|| panic!("l-{i} never reached the server"));
        assert_eq!(k.processed, 1, "l-{i} processed {} times", k.processed);
    }
    assert_eq!(stats.keys.len(), N, "one key per id, no other");
    println!(
        "ledger: the killed worker wrote {written_by_a} lines, the survivor took {replayed} answers from the ledger; \
         {} requests for {N} ids ({} replayed by the server)",
        stats.total_requests, stats.replayed
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_serve_replicas_answer_one_idempotency_key_once() {
    let redis = Redis::shared();
    let prefix = unique_prefix("serveledger");
    // Slow answers, so that the second replica's request comes while the first runs.
    let mock = server("ok", 10, |c| {
        c.knobs.latency_min = Some(Duration::from_millis(300));
        c.knobs.latency_max = Some(Duration::from_millis(300));
    });
    let shared = "ledger = true\nclaim_for = \"2s\"\n";
    let replicas = [
        replica_with(&mock, (&redis.url, &prefix), 3, shared).await,
        replica_with(&mock, (&redis.url, &prefix), 4, shared).await,
    ];
    let http = reqwest::Client::new();
    let body = serde_json::json!({"model": "gpt-4o-mini",
        "messages": [{"role": "user", "content": "Say hello"}]});
    let send = |r: &steadfast_cli::serve::Running| {
        http.post(format!("{}/v1/chat/completions", r.base_url()))
            .header("idempotency-key", "order-7")
            .json(&body)
            .send()
    };
    let (first, second) = tokio::join!(send(&replicas[0]), async {
        tokio::time::sleep(Duration::from_millis(50)).await;
        send(&replicas[1]).await
    });
    let (first, second) = (first.expect("answers"), second.expect("answers"));
    let replayed = second
        .headers()
        .get("x-steadfast-replayed")
        .map(|v| v.to_str().unwrap_or("").to_owned());
    assert_eq!(
        (first.status().as_u16(), second.status().as_u16()),
        (200, 200)
    );
    let (a, b) = (
        first.text().await.expect("body"),
        second.text().await.expect("body"),
    );
    assert_eq!(a, b, "the same answer from both replicas");
    assert_eq!(
        replayed.as_deref(),
        Some("shared"),
        "the second replica replayed it"
    );
    // A later request on either replica is a replay too.
    let again = send(&replicas[1]).await.expect("answers");
    assert_eq!(again.text().await.expect("body"), a);
    assert_eq!(
        mock.stats().total_requests,
        1,
        "one upstream request for the key"
    );
    for r in replicas {
        r.shutdown().await;
    }
}
