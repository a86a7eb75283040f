//! Running `steadfast batch` as a user does: the real binary, real files, real TCP on
//! 127.0.0.1 against an in-test mock server (whose counters outlive the batch).
#![allow(dead_code, unused_imports)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use steadfast_core::idempotency::IdempotencyKey;

pub use steadfast_mock::{Fault, MockConfig, MockServer};

/// A policy for tests: the batch preset with short backoffs and a short breaker.
pub const FAST: &str = "[backoff]\nbase = \"20ms\"\ncap = \"200ms\"\n\
                        [breaker]\nopen_for = \"300ms\"\nopen_max = \"1s\"\n";

/// The environment variable tests put their key in.
pub const KEY_VAR: &str = "STEADFAST_TEST_KEY";

/// A scratch directory, removed at the end.
pub struct Tmp(pub PathBuf);

impl Tmp {
    pub fn new(name: &str) -> Tmp {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("batch-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        Tmp(dir)
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    pub fn p(&self, name: &str) -> String {
        self.path(name).display().to_string()
    }

    pub fn write(&self, name: &str, text: &str) -> String {
        std::fs::write(self.path(name), text).expect("write");
        self.p(name)
    }

    pub fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.path(name)).unwrap_or_default()
    }
}

impl Drop for Tmp {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// `n` OpenAI-style chat lines with ids `{prefix}-{i}`.
pub fn prompts(prefix: &str, n: usize) -> String {
    (1..=n)
        .map(|i| {
            format!(
                "{{\"id\":\"{prefix}-{i}\",\"request\":{{\"model\":\"m\",\"messages\":\
                 [{{\"role\":\"user\",\"content\":\"say {i}\"}}]}}}}\n"
            )
        })
        .collect()
}

/// What a finished process left.
pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn ok(self) -> Run {
        self.exits(0)
    }

    /// Asserts the exit status.
    pub fn exits(self, code: i32) -> Run {
        assert_eq!(
            self.code,
            Some(code),
            "exit {:?}\nstderr:\n{}",
            self.code,
            self.stderr
        );
        self
    }
}

/// The exit status of a batch whose input had lines that are not requests.
pub const EXIT_BAD_INPUT: i32 = 3;

fn from_output(out: Output) -> Run {
    Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The command, with a clean environment for keys.
pub fn command(args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_steadfast"));
    c.args(args)
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .stdin(Stdio::null());
    for (k, v) in env {
        c.env(k, v);
    }
    c
}

/// Runs `steadfast ARGS` to its end.
pub fn steadfast(args: &[&str], env: &[(&str, &str)]) -> Run {
    from_output(command(args, env).output().expect("the binary runs"))
}

/// Runs `steadfast batch` against `base` with the test key.
pub fn batch_at(base: &str, args: &[&str]) -> Run {
    let mut all = vec!["batch", "--base-url", base, "--api-key-env", KEY_VAR];
    all.extend_from_slice(args);
    steadfast(&all, &[(KEY_VAR, "sk-test-key")])
}

/// The output lines, by id (a bad line written with `"id": null` by `line N`); panics
/// on a repeated key or a line that is not JSON.
pub fn results(path: &Path) -> BTreeMap<String, Value> {
    let text = std::fs::read_to_string(path).expect("output exists");
    assert!(text.is_empty() || text.ends_with('\n'), "a torn last line");
    let mut out = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        let v: Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("{}:{}: {e}: {line}", path.display(), i + 1));
        let id = match v["id"].as_str() {
            Some(id) => id.to_owned(),
            None => {
                assert_eq!(v["error"]["class"], "bad_input", "no id: {line}");
                format!("line {}", v["line"].as_u64().expect("an id or a line"))
            }
        };
        assert!(out.insert(id.clone(), v).is_none(), "id {id} twice");
    }
    out
}

/// Asserts every id `{prefix}-1..=n` succeeded, and returns the results.
pub fn all_ok(path: &Path, prefix: &str, n: usize) -> BTreeMap<String, Value> {
    let r = results(path);
    assert_eq!(r.len(), n, "one line per id");
    for i in 1..=n {
        let id = format!("{prefix}-{i}");
        let line = r.get(&id).unwrap_or_else(|| panic!("{id} missing"));
        assert_eq!(line["ok"], true, "{line}");
        assert!(line["attempts"].as_u64().unwrap_or(0) >= 1, "{line}");
        assert!(line["response"].is_object(), "{line}");
    }
    r
}

/// The idempotency key `steadfast batch` sends for `id`.
pub fn key_of(id: &str) -> String {
    let mut buf = [0u8; 36];
    IdempotencyKey::from_business_id(id.as_bytes())
        .as_str(&mut buf)
        .to_owned()
}

/// Asserts the server did each line's work at most once, and every line's requests
/// carried its own key.
pub fn at_most_once(server: &MockServer, prefix: &str, n: usize) {
    let stats = server.stats();
    for i in 1..=n {
        let key = key_of(&format!("{prefix}-{i}"));
        let k = stats
            .key(&key)
            .unwrap_or_else(|| panic!("no request carried {prefix}-{i}'s key"));
        assert!(
            k.processed <= 1,
            "{prefix}-{i} processed {} times",
            k.processed
        );
    }
    assert_eq!(stats.keys.len(), n, "one key per line, no other");
}

/// A mock server with this scenario, seed and tweaks.
pub fn server(scenario: &str, seed: u64, tweak: impl FnOnce(&mut MockConfig)) -> MockServer {
    println!("mock scenario {scenario}, seed {seed}");
    let mut c = MockConfig::builtin(scenario)
        .expect("a built-in scenario")
        .with_seed(seed);
    tweak(&mut c);
    MockServer::start(c).expect("mock starts")
}

/// The figure after `label` in the summary on stderr.
pub fn summary_figure(stderr: &str, label: &str) -> u64 {
    let line = stderr
        .lines()
        .find(|l| l.trim_start().starts_with(label))
        .unwrap_or_else(|| panic!("no `{label}` in the summary:\n{stderr}"));
    line.trim_start()[label.len()..]
        .split_whitespace()
        .next()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no figure in {line:?}"))
}

/// A child process killed when the test ends, however it ends.
pub struct KillOnDrop(pub std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs `steadfast ARGS` to its end, killing it (and failing) if it is still running
/// after `guard`, which only stops a hang: no test asserts how long a run takes.
pub fn steadfast_guarded(args: &[&str], env: &[(&str, &str)], guard: Duration) -> Run {
    let mut child = KillOnDrop(
        command(args, env)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the binary runs"),
    );
    let drain = |r: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            if let Some(mut r) = r {
                let _ = r.read_to_string(&mut text);
            }
            text
        })
    };
    let out = drain(child.0.stdout.take().map(|s| Box::new(s) as _));
    let err = drain(child.0.stderr.take().map(|s| Box::new(s) as _));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.0.try_wait().expect("wait") {
            break status;
        }
        assert!(
            started.elapsed() < guard,
            "still running after {guard:?}: {args:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    Run {
        code: status.code(),
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    }
}

/// A `steadfast mock` process on 127.0.0.1, killed (by its pid) when dropped.
pub struct MockProcess {
    /// Its base URL, from the first line it printed.
    pub base: String,
    _child: KillOnDrop,
}

impl MockProcess {
    /// Starts `steadfast mock ARGS` and waits for its URL.
    pub fn start(args: &[&str]) -> MockProcess {
        let mut all = vec!["mock"];
        all.extend_from_slice(args);
        println!("steadfast {}", all.join(" "));
        let mut child = KillOnDrop(
            command(&all, &[])
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .expect("spawn the mock"),
        );
        let mut first = String::new();
        BufReader::new(child.0.stdout.take().expect("stdout"))
            .read_line(&mut first)
            .expect("the mock's first line");
        let base = first.trim().to_owned();
        assert!(base.starts_with("http://127.0.0.1:"), "{first:?}");
        MockProcess {
            base,
            _child: child,
        }
    }

    /// Its `GET /__stats`.
    pub fn stats(&self) -> Value {
        get_stats(&self.base)
    }
}

/// `GET /__stats` of the mock at `base`, as JSON.
pub fn get_stats(base: &str) -> Value {
    let addr = base.trim_start_matches("http://");
    let mut s = TcpStream::connect(addr).expect("connect");
    write!(
        s,
        "GET /__stats HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).expect("read");
    let (head, body) = text.split_once("\r\n\r\n").expect("a response");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    serde_json::from_str(body).expect("stats JSON")
}

/// A figure of the mock's stats (`total_requests`, ...), 0 when absent.
pub fn stat(stats: &Value, name: &str) -> u64 {
    stats[name].as_u64().unwrap_or(0)
}
