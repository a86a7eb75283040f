//! `steadfast sim`: run a policy (or two) against a scenario in virtual time.

use std::path::{Path, PathBuf};

use clap::Args;
use steadfast_core::policy::Policy;
use steadfast_sim::{Report, Scenario, builtin, compare, svg, text};

use crate::config::load_policy;

/// Arguments of `steadfast sim`.
#[derive(Debug, Args)]
#[command(
    after_help = "Built-in scenarios (--list): the same as `steadfast mock`'s. Each figure is \
                  shown beside the ideal (what a perfect client, knowing the upstream, would \
                  need within the policy's deadline) and the ratio to it. Same arguments, same \
                  output, byte for byte."
)]
pub struct SimArgs {
    /// A built-in scenario's name, or a scenario TOML file.
    #[arg(long, value_name = "NAME|FILE", required_unless_present_any = ["print_scenario", "list"])]
    scenario: Option<String>,
    /// The policy (the core `Policy` in TOML, optionally `preset = "NAME"` on top);
    /// the defaults when absent.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// A second policy to compare with the first, on the same scenario and seed.
    #[arg(long, value_name = "FILE")]
    vs: Option<PathBuf>,
    /// The seed of every random draw.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Overrides the scenario's number of calls.
    #[arg(long, value_name = "N")]
    calls: Option<u64>,
    /// Runs the scenario's clock this many times as long (0.05: twenty times faster).
    #[arg(long, value_name = "FACTOR")]
    time_scale: Option<f64>,
    /// Prints the report as JSON instead of text.
    #[arg(long)]
    json: bool,
    /// Also writes a timeline picture to FILE.
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
    /// Prints a built-in scenario's TOML (to copy and edit) and exits.
    #[arg(long, value_name = "NAME", conflicts_with_all = ["scenario", "list"])]
    print_scenario: Option<String>,
    /// Lists the built-in scenarios and exits.
    #[arg(long)]
    list: bool,
}

/// Runs the subcommand.
pub fn run(args: &SimArgs) -> Result<(), String> {
    if args.list {
        print!("{}", super::scenario_list());
        return Ok(());
    }
    if let Some(name) = &args.print_scenario {
        let text = builtin::text(name).ok_or_else(|| super::unknown_builtin(name))?;
        print!("{text}");
        return Ok(());
    }
    let Some(which) = &args.scenario else {
        return Err("--scenario is required".into());
    };
    let mut scenario = super::scenario(which)?;
    if let Some(f) = args.time_scale {
        scenario = scenario.time_scaled(f);
    }
    if let Some(calls) = args.calls {
        scenario.load.calls = calls;
        scenario
            .validate()
            .map_err(|e| format!("--calls {calls}: {e}"))?;
    }
    let (a_name, a) = policy(args.config.as_deref())?;
    let first = simulate(&scenario, &a, args.seed, &a_name)?;
    let Some(vs) = &args.vs else {
        if let Some(path) = &args.svg {
            write(path, &svg::render(&[(&first.0, &first.1)]))?;
        }
        let out = if args.json {
            json(&first.1)?
        } else {
            text::render(&first.1)
        };
        print!("{out}");
        return Ok(());
    };
    let (b_name, b) = policy(Some(vs))?;
    let b_name = if b_name == a_name {
        format!("{b_name} (vs)")
    } else {
        b_name
    };
    let second = simulate(&scenario, &b, args.seed, &b_name)?;
    if let Some(path) = &args.svg {
        write(
            path,
            &svg::render(&[(&first.0, &first.1), (&second.0, &second.1)]),
        )?;
    }
    let out = if args.json {
        json(&compare::Comparison::new(&first.1, &second.1))?
    } else {
        compare::render(&first.1, &second.1)
    };
    print!("{out}");
    Ok(())
}

/// The policy in `path` and its label, or the defaults.
fn policy(path: Option<&Path>) -> Result<(String, Policy), String> {
    let Some(path) = path else {
        return Ok(("default".into(), Policy::default()));
    };
    let policy = load_policy(path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok((super::file_stem(path), policy))
}

fn simulate(
    scenario: &Scenario,
    policy: &Policy,
    seed: u64,
    label: &str,
) -> Result<(steadfast_sim::Run, Report), String> {
    let run = steadfast_sim::run(scenario, policy, seed).map_err(|e| e.to_string())?;
    let report = Report::new(&run, label);
    Ok((run, report))
}

fn json<T: serde::Serialize>(value: &T) -> Result<String, String> {
    let mut s = serde_json::to_string_pretty(value).map_err(|e| e.to_string())?;
    s.push('\n');
    Ok(s)
}

fn write(path: &Path, content: &str) -> Result<(), String> {
    std::fs::write(path, content).map_err(|e| format!("cannot write {}: {e}", path.display()))
}
