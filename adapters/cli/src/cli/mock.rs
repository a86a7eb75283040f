//! `steadfast mock`: the fault-injecting OpenAI/Anthropic-compatible server on its own.
//! Prints its base URL as the first line of stdout, then serves until SIGINT or SIGTERM.

use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use steadfast_mock::{Knobs, MockConfig, MockServer, ToolUse};

/// Arguments of `steadfast mock`.
#[derive(Debug, Args)]
#[command(after_help = AFTER_HELP)]
pub struct MockArgs {
    /// The scenario every request not claimed by the script gets: a built-in's name
    /// (the same as `steadfast sim`'s) or a scenario file.
    #[arg(long, value_name = "NAME|FILE", required_unless_present = "list")]
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
    /// The random faults scaled (their mix kept) to add up to this share of requests.
    #[arg(long, value_name = "0..1")]
    fault_rate: Option<f64>,
    /// Replaces the outage windows by one from the start lasting this long.
    #[arg(long, value_name = "DURATION", value_parser = super::duration)]
    outage_for: Option<Duration>,
    /// A requests-per-minute limit per API key.
    #[arg(long, value_name = "N")]
    rpm: Option<u64>,
    /// The requests a key's full bucket allows at once [default: the limit].
    #[arg(long, value_name = "N")]
    burst: Option<u64>,
    /// The wait random 429 answers ask for.
    #[arg(long, value_name = "DURATION", value_parser = super::duration)]
    retry_after: Option<Duration>,
    /// Success latencies from this (uniform, with --latency-max).
    #[arg(long, value_name = "DURATION", value_parser = super::duration)]
    latency_min: Option<Duration>,
    /// Success latencies up to this.
    #[arg(long, value_name = "DURATION", value_parser = super::duration)]
    latency_max: Option<Duration>,
    /// Runs the scenario's clock this many times as long (0.05: twenty times faster).
    #[arg(long, value_name = "FACTOR")]
    time_scale: Option<f64>,
    /// Apply the auth and quota key rules in every scenario.
    #[arg(long)]
    key_rules: bool,
    /// Answer a request that offers tools and leaves the choice to the model with a
    /// call of its first tool (unless its last turn is a tool's result), so a client can
    /// do a tool round trip.
    #[arg(long)]
    tool_calls: bool,
    /// Serve request bodies the real APIs would refuse (by default they get the
    /// provider's 400).
    #[arg(long)]
    lax: bool,
    /// Lists the scenarios and exits.
    #[arg(long)]
    list: bool,
}

const AFTER_HELP: &str = "\
Endpoints: POST /v1/chat/completions (OpenAI), POST /v1/messages (Anthropic), the same \
under /NAME for the scenario's endpoint NAME, \
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
    let scenario = super::scenario(name).map_err(|e| format!("--scenario: {e}"))?;
    if a.addr.ip() != Ipv4Addr::LOCALHOST {
        return Err(format!(
            "--addr {}: the mock listens on 127.0.0.1 only",
            a.addr
        ));
    }
    let mut c = MockConfig::new(scenario.clone());
    if let Some(path) = &a.script {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        c.apply_toml_str(&text)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        // The flag names the scenario; the file only tunes it.
        c.scenario = scenario;
    }
    c.port = a.addr.port();
    if let Some(s) = a.seed {
        c.seed = s;
    }
    // The flags override the file's knobs.
    c.knobs = c.knobs.overridden(&knobs(a));
    if a.lax {
        c.strict = false;
    }
    c.validate()?;
    Ok(c)
}

/// The knobs the flags set.
fn knobs(a: &MockArgs) -> Knobs {
    Knobs {
        fault_rate: a.fault_rate,
        outage_for: a.outage_for,
        rpm: a.rpm,
        rate_burst: a.burst,
        retry_after: a.retry_after,
        latency_min: a.latency_min,
        latency_max: a.latency_max,
        time_scale: a.time_scale,
        key_rules: a.key_rules,
        tool_use: a.tool_calls.then_some(ToolUse::Auto),
        ..Knobs::default()
    }
}

/// Runs the subcommand; returns the process exit code.
pub fn run(a: &MockArgs) -> u8 {
    if a.list {
        print!("{}", super::scenario_list());
        return 0;
    }
    let c = match config(a) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("steadfast: error: {e}");
            return 2;
        }
    };
    let (name, about) = (c.scenario.name.clone(), c.scenario.description.clone());
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
        "steadfast: mock `{name}` ({about}) at {}; stats at {}/__stats; Ctrl-C stops it",
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
