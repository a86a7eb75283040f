//! `steadfast mock`: the fault-injecting OpenAI/Anthropic-compatible server on its own.
//! Prints its base URL as the first line of stdout, then serves until SIGINT or SIGTERM.

use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use steadfast_mock::{MockConfig, MockServer, Scenario};

/// Arguments of `steadfast mock`.
#[derive(Debug, Args)]
#[command(after_help = AFTER_HELP)]
pub struct MockArgs {
    /// The scenario every request not claimed by the script gets.
    #[arg(long, value_name = "NAME", required_unless_present = "list")]
    scenario: Option<String>,
    /// Where to listen; the host must be 127.0.0.1 (port 0 picks a free one).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:0")]
    addr: SocketAddr,
    /// The seed of every random draw.
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// A TOML file of settings and [[fault]] entries (see below).
    #[arg(long, value_name = "FILE")]
    script: Option<PathBuf>,
    /// flaky/reset/malformed/hang/stream-cut: the failure rate of a first attempt.
    #[arg(long, value_name = "0..1")]
    fault_rate: Option<f64>,
    /// outage: how long the outage lasts after the start.
    #[arg(long, value_name = "DURATION", value_parser = super::duration)]
    outage_for: Option<Duration>,
    /// ratelimit: requests per minute per API key.
    #[arg(long, value_name = "N")]
    rpm: Option<u32>,
    /// ratelimit: requests allowed at once per API key [default: rpm].
    #[arg(long, value_name = "N")]
    burst: Option<u32>,
    /// flaky: the wait its 429 answers ask for.
    #[arg(long, value_name = "DURATION", value_parser = super::duration)]
    retry_after: Option<Duration>,
    /// slow: the shortest latency.
    #[arg(long, value_name = "DURATION", value_parser = super::duration)]
    latency_min: Option<Duration>,
    /// slow: the longest latency.
    #[arg(long, value_name = "DURATION", value_parser = super::duration)]
    latency_max: Option<Duration>,
    /// Apply the auth and quota key rules in every scenario.
    #[arg(long)]
    key_rules: bool,
    /// Lists the scenarios and exits.
    #[arg(long)]
    list: bool,
}

const AFTER_HELP: &str = "\
Endpoints: POST /v1/chat/completions (OpenAI), POST /v1/messages (Anthropic), \
GET /__stats (counts by status and fault, and per Idempotency-Key processed/replayed), \
POST /__faults (a JSON array of faults to append), POST /__reset, POST /__down \
({\"down\": true|false}).

A --script file:
  scenario = \"flaky\"
  seed = 7
  fault_rate = 0.3
  [[fault]]
  kind = \"status\"
  status = 429
  retry_after = \"30\"
  repeat = 2

The flags override the file.";

/// The server configuration the flags describe.
pub fn config(a: &MockArgs) -> Result<MockConfig, String> {
    let Some(name) = &a.scenario else {
        return Err("--scenario is required".into());
    };
    let scenario = Scenario::from_name(name).ok_or_else(|| {
        format!(
            "--scenario: unknown scenario `{name}` (one of: {})",
            Scenario::names().join(", ")
        )
    })?;
    if a.addr.ip() != Ipv4Addr::LOCALHOST {
        return Err(format!(
            "--addr {}: the mock listens on 127.0.0.1 only",
            a.addr
        ));
    }
    let mut c = MockConfig::new(scenario);
    if let Some(path) = &a.script {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        c.apply_toml_str(&text)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        c.scenario = scenario;
    }
    c.port = a.addr.port();
    if let Some(s) = a.seed {
        c.seed = s;
    }
    if let Some(v) = a.fault_rate {
        c.fault_rate = v;
    }
    if let Some(v) = a.outage_for {
        c.outage_for = v;
    }
    if let Some(v) = a.rpm {
        c.rpm = v;
    }
    if a.burst.is_some() {
        c.rate_burst = a.burst;
    }
    if let Some(v) = a.retry_after {
        c.retry_after = v;
    }
    if let Some(v) = a.latency_min {
        c.latency_min = v;
    }
    if let Some(v) = a.latency_max {
        c.latency_max = v;
    }
    c.key_rules |= a.key_rules;
    c.validate()?;
    Ok(c)
}

/// Runs the subcommand; returns the process exit code.
pub fn run(a: &MockArgs) -> u8 {
    if a.list {
        for s in Scenario::all() {
            println!("{:<12} {}", s.name(), s.description());
        }
        return 0;
    }
    let c = match config(a) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("steadfast: error: {e}");
            return 2;
        }
    };
    let scenario = c.scenario;
    let mut server = match MockServer::start(c) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("steadfast: error: cannot start the mock server: {e}");
            return 1;
        }
    };
    {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{}", server.base_url());
        let _ = out.flush();
    }
    eprintln!(
        "steadfast: mock `{scenario}` ({}) at {}; stats at {}/__stats; Ctrl-C stops it",
        scenario.description(),
        server.base_url(),
        server.base_url()
    );
    let waited = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map(|rt| rt.block_on(crate::signal::shutdown()));
    if let Err(e) = waited {
        eprintln!("steadfast: error: cannot wait for signals: {e}");
    }
    server.shutdown();
    let s = server.stats();
    eprintln!(
        "steadfast: mock stopped after {} requests ({} processed, {} replayed)",
        s.total_requests, s.processed, s.replayed
    );
    0
}
