//! The batch runner, `steadfast batch --mock`, in this process: the same argument
//! parsing and runner as the binary's, with a scenario file, a policy file, N lines at
//! a concurrency; its breaker transitions come from the client's tracing events, its
//! requests from the in-process mock's counters.

use std::collections::BTreeMap;

use clap::Parser;
use steadfast_cli::cli::batch::{BatchArgs, resolve};
use steadfast_core::policy::Policy;
use steadfast_reqwest::ApiKey;
use steadfast_upstream::Scenario;

use super::figures::Figures;
use super::transitions;
use crate::support::{Tmp, results};

#[derive(Parser)]
struct Command {
    #[command(flatten)]
    batch: BatchArgs,
}

/// Runs the load's `calls` lines (`line-1` …) at its concurrency against the
/// in-process mock running `scenario` with the upstream seed of `seed`.
pub fn run(tmp: &Tmp, scenario: &Scenario, policy: &Policy, seed: u64) -> Figures {
    transitions::capture();
    let _ = transitions::take(&[]);
    let load = &scenario.load;
    let body = super::client::request(load.tokens);
    let lines: String = (1..=load.calls)
        .map(|i| {
            format!(
                "{}\n",
                serde_json::json!({"id": format!("line-{i}"), "request": body})
            )
        })
        .collect();
    let input = tmp.write("in.jsonl", &lines);
    let out = tmp.p("out.jsonl");
    let _ = std::fs::remove_file(&out);
    let _ = std::fs::remove_file(format!("{out}.journal"));
    let world = tmp.write("scenario.toml", &scenario.to_toml());
    let settings = tmp.write(
        "mock.toml",
        &format!("seed = {}\n", steadfast_sim::upstream_seed(seed)),
    );
    let policy = tmp.write("policy.toml", &toml::to_string(policy).expect("TOML"));
    let concurrency = load.concurrency.to_string();
    let args = Command::parse_from([
        "batch",
        "--input",
        &input,
        "--output",
        &out,
        "--mock",
        &world,
        "--mock-config",
        &settings,
        "--config",
        &policy,
        "--concurrency",
        &concurrency,
        "--quiet",
    ]);
    let resolved = resolve(&args.batch, &|v| ApiKey::from_env(v)).expect("the flags resolve");
    let mock = resolved.mock;
    let summary = steadfast_cli::batch::run(resolved.options).expect("the batch runs");
    let requests = mock.as_ref().map_or(0, |m| m.stats().total_requests);
    drop(mock);
    let names: Vec<String> = scenario.endpoints.iter().map(|e| e.name.clone()).collect();
    let transitions = transitions::take(&names);
    let mut give_ups = BTreeMap::new();
    for line in results(&tmp.path("out.jsonl")).values() {
        if line["ok"] != true {
            let reason = line["error"]["reason"].as_str().unwrap_or("none");
            *give_ups.entry(reason.to_owned()).or_insert(0) += 1;
        }
    }
    Figures {
        calls: summary.tally.finished(),
        succeeded: summary.tally.ok,
        requests,
        opens: transitions.iter().filter(|t| t.ends_with(">open")).count() as u64,
        transitions: Some(transitions),
        give_ups,
    }
}
