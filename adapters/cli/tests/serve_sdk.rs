//! `steadfast serve` driven by the official Python SDKs — `openai` on
//! `/v1/chat/completions`, `anthropic` on `/v1/messages`, plain and streamed, their own
//! retries off (`max_retries=0`) — against the mock in each fault scenario, with the
//! outcome asserted from both sides: what the SDKs got (every call ok where the scenario
//! allows it; a stream is never duplicated, nor truncated and still accepted) and the
//! mock's counters (no request before its hint, the attempts of one call under one
//! `Idempotency-Key`, no work done twice). And SIGTERM with 100 requests in flight: each
//! completes or gets a clean HTTP error, and the gateway exits 0 within its grace.
//!
//! The SDKs come from the virtualenv `./scripts/pyenv` sets up (`target/pyenv`), or the
//! Python named by `STEADFAST_PYTHON`; the scripts they run are in `tests/sdk/`.

mod support;

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, ChildStderr, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::Value;
use steadfast_mock::Stats;
use steadfast_upstream::dist::Dist;
use support::{Fault, KillOnDrop, MockServer, Tmp, server};

/// The key clients present to the gateway, and the variable the gateway reads it from.
const GATEWAY_KEY: &str = "sk-gateway-0123456789";
const GATEWAY_KEY_VAR: &str = "STEADFAST_GATEWAY_KEY";
/// The key the gateway presents to the mock, and its variable.
const MOCK_KEY: &str = "sk-upstream-0123456789";
const MOCK_KEY_VAR: &str = "STEADFAST_MOCK_KEY";
/// The model each endpoint sends upstream; each is also a route of that name.
const OPENAI_MODEL: &str = "gpt-4o-mini";
const ANTHROPIC_MODEL: &str = "claude-3-5-haiku-latest";
/// The gateway's drain period after SIGTERM.
const GRACE: Duration = Duration::from_secs(10);

/// A policy for tests: the `standard` preset with room for the scenarios' faults
/// (more attempts), short backoffs and a short breaker, so the file runs in seconds.
const FAST: &str = "[retry]\nmax_attempts = 8\n\
                    [backoff]\nbase = \"20ms\"\ncap = \"200ms\"\n\
                    [breaker]\nopen_for = \"300ms\"\nopen_max = \"1s\"\n";

/// [`FAST`], holding while the breaker is open, with a deadline that outlasts the
/// outages the tests run (1.5 s).
const HOLD: &str = "[retry]\nmax_attempts = 12\ndeadline = \"60s\"\nhold = true\n\
                    max_hold = \"30s\"\n\
                    [backoff]\nbase = \"50ms\"\ncap = \"300ms\"\n\
                    [breaker]\nopen_for = \"300ms\"\nopen_max = \"1s\"\n";

/// The Python that has the SDKs: `STEADFAST_PYTHON`, else the virtualenv of
/// `./scripts/pyenv`. Missing, the test fails (it never skips).
fn python() -> PathBuf {
    let python = match std::env::var_os("STEADFAST_PYTHON") {
        Some(p) => PathBuf::from(p),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/pyenv/bin/python"),
    };
    assert!(
        python.exists(),
        "no Python with the official SDKs at {}: run ./scripts/pyenv (or set STEADFAST_PYTHON)",
        python.display()
    );
    python
}

fn script(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/sdk")
        .join(name)
}

/// A serve config in front of `mock`: one OpenAI and one Anthropic endpoint, each
/// with a route of its model's name, under `policy`.
fn serve_config(mock: &MockServer, policy: &str) -> String {
    let base = mock.base_url();
    format!(
        "{policy}\n\
         [gateway]\nkeys_env = [\"{GATEWAY_KEY_VAR}\"]\ngrace = \"{}s\"\n\n\
         [[endpoint]]\nname = \"openai\"\nprovider = \"openai\"\nbase_url = \"{base}\"\n\
         keys_env = [\"{MOCK_KEY_VAR}\"]\nmodel = \"{OPENAI_MODEL}\"\n\n\
         [[endpoint]]\nname = \"anthropic\"\nprovider = \"anthropic\"\nbase_url = \"{base}\"\n\
         keys_env = [\"{MOCK_KEY_VAR}\"]\nmodel = \"{ANTHROPIC_MODEL}\"\n\n\
         [[route]]\nmodel = \"{OPENAI_MODEL}\"\nendpoints = [\"openai\"]\n\n\
         [[route]]\nmodel = \"{ANTHROPIC_MODEL}\"\nendpoints = [\"anthropic\"]\n",
        GRACE.as_secs()
    )
}

/// A `steadfast serve` process, killed (by its pid) when dropped.
struct Gateway {
    base: String,
    child: KillOnDrop,
    stderr: PathBuf,
}

impl Gateway {
    /// Writes `config`, starts the gateway on it and waits for its URL.
    fn start(tmp: &Tmp, config: &str) -> Gateway {
        let path = tmp.write("serve.toml", config);
        let stderr = tmp.path("serve.stderr");
        let mut child = KillOnDrop(
            support::command(
                &["serve", "--config", &path],
                &[(GATEWAY_KEY_VAR, GATEWAY_KEY), (MOCK_KEY_VAR, MOCK_KEY)],
            )
            .stdout(Stdio::piped())
            .stderr(File::create(&stderr).expect("stderr file"))
            .spawn()
            .expect("spawn steadfast serve"),
        );
        let mut out = BufReader::new(child.0.stdout.take().expect("stdout"));
        let mut first = String::new();
        out.read_line(&mut first).expect("serve's first line");
        // Keep reading, so the gateway never writes into a closed pipe.
        std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
        let base = first.trim().to_owned();
        let gateway = Gateway {
            base,
            child,
            stderr,
        };
        assert!(
            gateway.base.starts_with("http://127.0.0.1:"),
            "serve printed {first:?}; stderr:\n{}",
            gateway.stderr_text()
        );
        println!("steadfast serve at {}", gateway.base);
        gateway
    }

    /// The responses to chat requests the gateway has begun (its
    /// `steadfast_gateway_requests_total` on the two chat paths), from `GET /metrics`.
    fn chat_responses(&self) -> u64 {
        let addr = self.base.trim_start_matches("http://");
        let mut s = TcpStream::connect(addr).expect("connect to the gateway");
        // HTTP/1.0: the body ends with the connection, never chunked.
        write!(s, "GET /metrics HTTP/1.0\r\nhost: {addr}\r\n\r\n").expect("write");
        let mut text = String::new();
        s.read_to_string(&mut text).expect("read /metrics");
        text.lines()
            .filter(|l| {
                l.starts_with("steadfast_gateway_requests_total{")
                    && (l.contains("/v1/chat/completions") || l.contains("/v1/messages"))
            })
            .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
            .sum()
    }

    fn stderr_text(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// Sends SIGTERM and waits for the exit, failing if the gateway is still running
    /// well past its grace (a hang guard: no figure of its drain time is asserted).
    fn terminate(mut self) -> (ExitStatus, String) {
        let pid = self.child.0.id().to_string();
        let sent = Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("kill");
        assert!(sent.success(), "kill -TERM {pid}");
        let guard = GRACE + Duration::from_secs(10);
        let started = Instant::now();
        let status = loop {
            if let Some(status) = self.child.0.try_wait().expect("wait") {
                break status;
            }
            assert!(
                started.elapsed() < guard,
                "serve still running {guard:?} after SIGTERM (grace {GRACE:?}); stderr:\n{}",
                self.stderr_text()
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        (status, self.stderr_text())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sdk {
    OpenAi,
    Anthropic,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Plain,
    Stream,
    /// Plain and streamed calls at once, from one process (the SDK imported once).
    Both,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Plain => "plain",
            Mode::Stream => "stream",
            Mode::Both => "both",
        }
    }
}

/// One run of an SDK script: `count` calls of each of its modes.
#[derive(Debug, Clone)]
struct Calls {
    sdk: Sdk,
    mode: Mode,
    /// The model asked for (a route: the other provider's model makes the gateway
    /// translate).
    model: &'static str,
    count: usize,
    concurrency: usize,
    /// Starts every prompt, and the `Idempotency-Key`s when `keys`.
    prefix: String,
    /// Whether the client sends `Idempotency-Key: PREFIX-I` (else the gateway derives
    /// one per request).
    keys: bool,
    /// The key the client presents.
    key: &'static str,
    /// Whether the script holds its calls until told to go ([`Running::go`]).
    held: bool,
}

/// What one call saw (see tests/sdk/common.py).
#[derive(Debug, Clone, Deserialize)]
struct CallRecord {
    i: u64,
    prompt: String,
    ok: bool,
    text: String,
    ended: bool,
    error: Option<Value>,
}

impl CallRecord {
    fn error_kind(&self) -> &str {
        self.error
            .as_ref()
            .and_then(|e| e["kind"].as_str())
            .unwrap_or("")
    }
}

/// A script's summary line (one per mode).
#[derive(Debug, Clone, Deserialize)]
struct Summary {
    mode: String,
    prefix: String,
    ok: usize,
    errors: BTreeMap<String, u64>,
    calls: Vec<CallRecord>,
}

impl Calls {
    fn new(sdk: Sdk, mode: Mode, count: usize, prefix: &str) -> Calls {
        Calls {
            sdk,
            mode,
            model: match sdk {
                Sdk::OpenAi => OPENAI_MODEL,
                Sdk::Anthropic => ANTHROPIC_MODEL,
            },
            count,
            concurrency: 4,
            prefix: prefix.to_owned(),
            keys: sdk == Sdk::OpenAi,
            key: GATEWAY_KEY,
            held: false,
        }
    }

    fn model(mut self, model: &'static str) -> Calls {
        self.model = model;
        self
    }

    fn concurrency(mut self, n: usize) -> Calls {
        self.concurrency = n;
        self
    }

    fn key(mut self, key: &'static str) -> Calls {
        self.key = key;
        self
    }

    /// The calls of one mode of these (as the script split them).
    fn one_mode(&self, summary: &Summary) -> Calls {
        let mode = match summary.mode.as_str() {
            "plain" => Mode::Plain,
            "stream" => Mode::Stream,
            other => panic!("{self:?}: a summary of mode {other:?}"),
        };
        Calls {
            mode,
            prefix: summary.prefix.clone(),
            ..self.clone()
        }
    }

    /// The `Idempotency-Key` the client sends with call `i`, if any.
    fn idempotency_key(&self, i: usize) -> Option<String> {
        self.keys.then(|| format!("{}-{i}", self.prefix))
    }

    /// Starts the script against `base`.
    fn spawn(&self, base: &str) -> Running {
        let file = match self.sdk {
            Sdk::OpenAi => "openai_calls.py",
            Sdk::Anthropic => "anthropic_calls.py",
        };
        let mut c = Command::new(python());
        c.arg(script(file))
            .args(["--base-url", base, "--key", self.key, "--model", self.model])
            .args(["--count", &self.count.to_string()])
            .args(["--concurrency", &self.concurrency.to_string()])
            .args(["--prefix", &self.prefix, "--timeout", "30"])
            .args(["--mode", self.mode.name()])
            .env_remove("OPENAI_API_KEY")
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("OPENAI_BASE_URL")
            .env_remove("ANTHROPIC_BASE_URL")
            .stdin(if self.held {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if self.keys {
            c.arg("--idempotency-keys");
        }
        if self.held {
            c.arg("--go-on-stdin");
        }
        let child = c.spawn().expect("run the SDK script");
        Running {
            calls: self.clone(),
            child: KillOnDrop(child),
            stderr: None,
        }
    }

    /// Starts the script against `base`, holding its calls until [`Running::go`].
    fn spawn_held(&self, base: &str) -> Running {
        let mut c = self.clone();
        c.held = true;
        c.spawn(base)
    }
}

/// A script running; [`Running::finish`] reads its summary.
struct Running {
    calls: Calls,
    child: KillOnDrop,
    /// Its stderr, once [`Running::ready`] has read up to `ready`.
    stderr: Option<BufReader<ChildStderr>>,
}

impl Running {
    /// Waits until the held script is set up (the SDK imported, its client built).
    fn ready(&mut self) {
        let stderr = self.child.0.stderr.take().expect("stderr");
        let mut stderr = BufReader::new(stderr);
        let mut line = String::new();
        while line.trim() != "ready" {
            line.clear();
            let n = stderr.read_line(&mut line).expect("read stderr");
            assert!(n > 0, "{:?} ended before it was ready", self.calls);
        }
        self.stderr = Some(stderr);
    }

    /// Lets the held script start its calls.
    fn go(&mut self) {
        let stdin = self.child.0.stdin.as_mut().expect("stdin");
        stdin.write_all(b"go\n").expect("write stdin");
        stdin.flush().expect("flush stdin");
    }

    /// One summary per mode, each with the calls it describes.
    fn finish(mut self) -> Vec<(Calls, Summary)> {
        let child: &mut Child = &mut self.child.0;
        let mut out = String::new();
        let mut err = String::new();
        let mut stderr: Box<dyn Read + Send> = match self.stderr.take() {
            Some(read) => Box::new(read),
            None => Box::new(child.stderr.take().expect("stderr")),
        };
        let errs = std::thread::spawn(move || {
            let _ = stderr.read_to_string(&mut err);
            err
        });
        child
            .stdout
            .take()
            .expect("stdout")
            .read_to_string(&mut out)
            .expect("read the summary");
        let status = child.wait().expect("wait");
        let err = errs.join().unwrap_or_default();
        assert!(status.success(), "{:?}: {status}\n{err}", self.calls);
        let summaries: Vec<(Calls, Summary)> = out
            .lines()
            .map(|line| {
                let summary: Summary = serde_json::from_str(line)
                    .unwrap_or_else(|e| panic!("{:?}: summary {e}: {line:?}\n{err}", self.calls));
                (self.calls.one_mode(&summary), summary)
            })
            .collect();
        let modes = if self.calls.mode == Mode::Both { 2 } else { 1 };
        assert_eq!(summaries.len(), modes, "{:?}: {out}\n{err}", self.calls);
        for (calls, summary) in &summaries {
            assert_eq!(summary.calls.len(), calls.count, "{calls:?}");
            println!(
                "{:?} {:?} model {} x{}: ok {}, errors {:?}",
                calls.sdk, calls.mode, calls.model, calls.count, summary.ok, summary.errors
            );
        }
        summaries
    }
}

/// Runs every batch of calls at once against the gateway.
fn run_all(gateway: &Gateway, runs: &[Calls]) -> Vec<(Calls, Summary)> {
    let running: Vec<Running> = runs.iter().map(|r| r.spawn(&gateway.base)).collect();
    running.into_iter().flat_map(Running::finish).collect()
}

/// Every call succeeded, with the whole reply (the mock echoes the last user turn)
/// and a proper end.
fn assert_all_ok(calls: &Calls, s: &Summary, gateway: &Gateway) {
    for c in &s.calls {
        assert!(
            c.ok && c.ended && c.text == c.prompt,
            "{:?} call {} failed or came back wrong: {c:?}\ngateway stderr:\n{}",
            calls,
            c.i,
            gateway.stderr_text()
        );
    }
}

/// No call delivered duplicated content, and none was accepted truncated: an
/// accepted call has the whole reply and a proper end; a refused one (the SDK raised)
/// got at most a prefix of the reply.
fn assert_whole_or_refused(calls: &Calls, s: &Summary) {
    for c in &s.calls {
        if c.ok {
            assert!(
                c.ended && c.text == c.prompt,
                "{calls:?} call {}: accepted but not whole (ended {}): {:?} for {:?}",
                c.i,
                c.ended,
                c.text,
                c.prompt
            );
        } else {
            assert!(
                c.prompt.starts_with(&c.text),
                "{calls:?} call {}: refused after content that is not the reply's start: \
                 {:?} for {:?}",
                c.i,
                c.text,
                c.prompt
            );
        }
    }
}

/// The mock's side: no request before its hint; the client's keys went upstream as
/// the keys derived from them; one key per call (so every attempt of a call carried
/// the call's one key, the client's or the gateway's own); no call's work done twice.
fn assert_upstream(stats: &Stats, results: &[(Calls, Summary)]) {
    assert_eq!(stats.early, 0, "a request came back before its Retry-After");
    assert_eq!(stats.keys_untracked, 0);
    let calls: usize = results.iter().map(|(r, _)| r.count).sum();
    assert_eq!(
        stats.keys.len(),
        calls,
        "one Idempotency-Key per call upstream: {:?}",
        stats.keys.keys().collect::<Vec<_>>()
    );
    let attempts: u64 = stats.keys.values().map(|k| k.attempts).sum();
    assert_eq!(
        attempts, stats.total_requests,
        "every upstream request carried its call's key"
    );
    for (key, k) in &stats.keys {
        assert!(
            k.processed <= 1,
            "{key}'s work was done {} times",
            k.processed
        );
    }
    // A client's key becomes the upstream key of every attempt: the key derived from
    // it, the same on every replica (README, `steadfast serve`, Idempotency).
    for (run, _) in results {
        for key in (1..=run.count).filter_map(|i| run.idempotency_key(i)) {
            let upstream = support::key_of(&key);
            assert!(
                stats.key(&upstream).is_some(),
                "no upstream request carried {upstream}, the key of the client's {key:?} \
                 (sent as is: {})",
                stats.key(&key).is_some()
            );
        }
    }
}

/// Plain and streamed calls of both SDKs, each to its own provider.
fn both_sdks(scenario: &str, count: usize) -> Vec<Calls> {
    vec![
        Calls::new(Sdk::OpenAi, Mode::Both, count, &format!("{scenario}-oa")),
        Calls::new(Sdk::Anthropic, Mode::Both, count, &format!("{scenario}-an")),
    ]
}

/// The scenario through the gateway: every plain call ok; streams all ok, or (where
/// the scenario breaks streams after their first event has reached the client, past
/// the commit point) whole or refused.
fn through_gateway(
    mock: &MockServer,
    policy: &str,
    runs: &[Calls],
    streams_may_break: bool,
) -> (Stats, Vec<(Calls, Summary)>) {
    let tmp = Tmp::new(&format!("serve-sdk-{}", runs[0].prefix));
    let gateway = Gateway::start(&tmp, &serve_config(mock, policy));
    let results = run_all(&gateway, runs);
    for (calls, summary) in &results {
        assert_whole_or_refused(calls, summary);
        if calls.mode == Mode::Plain || !streams_may_break {
            assert_all_ok(calls, summary, &gateway);
        }
    }
    let stats = mock.stats();
    println!(
        "mock: {} requests for {} keys, early {}, {:?}, {:?}",
        stats.total_requests,
        stats.keys.len(),
        stats.early,
        stats.by_status,
        stats.by_fault
    );
    assert_upstream(&stats, &results);
    (stats, results)
}

/// The streamed calls the SDKs refused (they raised).
fn refused_streams(results: &[(Calls, Summary)]) -> u64 {
    let refused = results
        .iter()
        .filter(|(calls, _)| calls.mode == Mode::Stream)
        .flat_map(|(_, s)| &s.calls)
        .filter(|c| !c.ok)
        .count();
    u64::try_from(refused).unwrap_or(u64::MAX)
}

#[test]
fn flaky_every_call_ok_through_both_sdks_and_translated() {
    let s = server("flaky", 11, |c| {
        c.knobs.retry_after = Some(Duration::from_millis(150));
    });
    let mut runs = both_sdks("flaky", 15);
    // Each SDK to the other provider: the gateway translates both ways.
    runs.push(Calls::new(Sdk::OpenAi, Mode::Both, 10, "flaky-oa-x").model(ANTHROPIC_MODEL));
    runs.push(Calls::new(Sdk::Anthropic, Mode::Both, 10, "flaky-an-x").model(OPENAI_MODEL));
    let (stats, _) = through_gateway(&s, FAST, &runs, false);
    assert!(
        stats.fault("rate_limit") + stats.fault("status") + stats.fault("reset") > 0,
        "the scenario failed nothing: {stats:?}"
    );
    assert!(stats.total_requests > stats.keys.len() as u64, "no retry");
}

#[test]
fn outage_every_call_waits_it_out() {
    let s = server("outage", 3, |c| {
        c.knobs.outage_for = Some(Duration::from_millis(1500));
    });
    let (stats, _) = through_gateway(&s, HOLD, &both_sdks("outage", 10), false);
    assert!(
        stats.status(503) + stats.status(529) > 0,
        "no call met the outage: {stats:?}"
    );
}

#[test]
fn ratelimit_every_call_ok_and_none_before_its_hint() {
    let s = server("ratelimit", 5, |c| {
        c.knobs.rpm = Some(1200);
        c.knobs.rate_burst = Some(4);
    });
    // The gateway learns the bucket from its first answer and may pace every call past
    // it; the first answer is a 429, so the limit is met however the calls are timed.
    s.push_faults(&[Fault::Status {
        status: 429,
        retry_after: None,
        retry_after_ms: Some("200".into()),
        body: None,
        headers: Vec::new(),
    }]);
    let (stats, _) = through_gateway(&s, FAST, &both_sdks("ratelimit", 12), false);
    assert!(stats.status(429) > 0, "the limit was never hit: {stats:?}");
}

#[test]
fn malformed_plain_calls_ok_streams_whole_or_refused() {
    let s = server("malformed", 10, |_| {});
    let (stats, results) = through_gateway(&s, FAST, &both_sdks("malformed", 15), true);
    assert!(stats.fault("malformed") > 0, "nothing malformed: {stats:?}");
    // A stream is refused only for a fault upstream, past the commit point.
    assert!(refused_streams(&results) <= stats.fault("malformed"));
}

#[test]
fn stream_cut_plain_calls_ok_streams_whole_or_refused() {
    let s = server("stream-cut", 4, |_| {});
    let (stats, results) = through_gateway(&s, FAST, &both_sdks("cut", 15), true);
    assert!(stats.fault("stream_cut") > 0, "nothing cut: {stats:?}");
    // A stream is refused only for a cut upstream, past the commit point.
    assert!(refused_streams(&results) <= stats.fault("stream_cut"));
}

#[test]
fn a_wrong_gateway_key_gets_401_and_an_unknown_model_404_in_each_sdk_shape() {
    let s = server("ok", 1, |_| {});
    let tmp = Tmp::new("serve-sdk-auth");
    let gateway = Gateway::start(&tmp, &serve_config(&s, FAST));
    let runs = [
        Calls::new(Sdk::OpenAi, Mode::Plain, 2, "auth-0").key("sk-wrong-key"),
        Calls::new(Sdk::Anthropic, Mode::Stream, 2, "auth-1").key("sk-wrong-key"),
        Calls::new(Sdk::OpenAi, Mode::Stream, 2, "auth-2").model("no-such-model"),
        Calls::new(Sdk::Anthropic, Mode::Plain, 2, "auth-3").model("no-such-model"),
    ];
    let results = run_all(&gateway, &runs);
    let expected = [
        "AuthenticationError 401",
        "AuthenticationError 401",
        "NotFoundError 404",
        "NotFoundError 404",
    ];
    for ((calls, summary), kind) in results.iter().zip(expected) {
        for c in &summary.calls {
            assert_eq!(c.error_kind(), kind, "{calls:?}: {c:?}");
        }
    }
    assert_eq!(s.stats().total_requests, 0, "a refused call went upstream");
}

#[test]
fn sigterm_with_100_requests_in_flight_each_completes_or_fails_cleanly() {
    let s = server("slow", 21, |c| {
        for e in &mut c.scenario.endpoints {
            // Every request in flight for two seconds or more, and streams paced, so
            // the signal finds answers pending (and streams mid-body); the slowest
            // call ends well within the grace.
            e.latency = Dist::Uniform {
                min: Duration::from_millis(2000),
                max: Duration::from_millis(4000),
            };
            e.event_latency = Dist::Fixed(Duration::from_millis(80));
        }
    });
    let tmp = Tmp::new("serve-sdk-sigterm");
    let gateway = Gateway::start(&tmp, &serve_config(&s, FAST));
    let runs: Vec<Calls> = both_sdks("term", 25)
        .into_iter()
        .map(|c| c.concurrency(25))
        .collect();
    // Both SDKs set up first, then every call at once.
    let mut running: Vec<Running> = runs.iter().map(|r| r.spawn_held(&gateway.base)).collect();
    running.iter_mut().for_each(Running::ready);
    running.iter_mut().for_each(Running::go);
    // Every request upstream, and the first answers on their way: the signal comes
    // while some streams are mid-body and the rest wait for their answer.
    let started = Instant::now();
    let mut begun = 0;
    while s.stats().total_requests < 100 || begun < 10 {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the 100 requests never got going: {begun} answers begun, mock {:?}",
            s.stats()
        );
        std::thread::sleep(Duration::from_millis(10));
        begun = gateway.chat_responses();
    }
    println!("at SIGTERM: {begun} of 100 responses begun");
    assert!(
        begun < 100,
        "every response had begun: too late to test a drain"
    );
    let (status, stderr) = gateway.terminate();
    assert_eq!(
        status.code(),
        Some(0),
        "serve after SIGTERM: {status}\n{stderr}"
    );
    let results: Vec<(Calls, Summary)> = running.into_iter().flat_map(Running::finish).collect();
    for (calls, summary) in &results {
        assert_whole_or_refused(calls, summary);
        for c in &summary.calls {
            // A clean error is an HTTP status the SDK read whole, before any content.
            let clean = c.ok || (c.error_kind().contains(' ') && c.text.is_empty());
            assert!(clean, "{calls:?} call {}: not clean: {c:?}\n{stderr}", c.i);
        }
    }
    let stats = s.stats();
    assert_eq!(stats.total_requests, 100, "{stats:?}");
    assert_upstream(&stats, &results);
}
