//! `steadfast sim`: run a policy (or two) against a scenario in virtual time.

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use steadfast_core::policy::Policy;
use steadfast_sim::replicas::{MAX_REPLICAS, ReplicaError};
use steadfast_sim::{
    Replicas, Report, Scenario, Sharing, SimError, builtin, compare, modes, svg, text,
};

use crate::config::load_policy;

/// Arguments of `steadfast sim`.
#[derive(Debug, Args)]
#[command(
    after_help = "Built-in scenarios (--list): the same as `steadfast mock`'s. Each figure is \
                  shown beside the ideal (what a perfect client, knowing the upstream, would \
                  need within the policy's deadline) and the ratio to it. Same arguments, same \
                  output, byte for byte.\n\n\
                  Replicas (--replicas N): N processes of one client, each with its own engine, \
                  seed and concurrency, split the scenario's calls (call i to replica i mod N) \
                  and send to the same upstream. The endpoints' request limit is the policy's \
                  [limiter] requests and burst: --sharing local applies it per replica, shared \
                  asks a store for every request, leased spends leases of up to [shared] lease \
                  requests; without --sharing all three run side by side. The store is the \
                  model of steadfast-redis's scripts, --store-lag away; with [shared] breaker = \
                  true in the policy the replicas share their breakers' \"open until\" through it \
                  too. Issue #17's case (four \
                  replicas of 30 calls, one key of 600 requests a minute, 20 at once) is \
                  adapters/sim/scenarios/shared-limit.toml with shared-limit.policy.toml."
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
    /// Runs N replicas of the client against the one upstream (1: the plain run).
    #[arg(long, value_name = "N", default_value_t = 1, conflicts_with = "vs",
          value_parser = clap::value_parser!(u16).range(1..=i64::from(MAX_REPLICAS)))]
    replicas: u16,
    /// Whose request limit the replicas admit on; all three side by side when absent.
    #[arg(long, value_name = "MODE", conflicts_with = "vs")]
    sharing: Option<SharingArg>,
    /// The store's round trip for shared limits: an ask reaches it after half, the
    /// answer returns after the other half [default: 2ms].
    #[arg(long, value_name = "DURATION", value_parser = super::duration, conflicts_with = "vs")]
    store_lag: Option<std::time::Duration>,
}

/// `--sharing`'s values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum SharingArg {
    /// Each replica has only its own limiter: the configured rate applies per replica.
    Local,
    /// Every admission asks the store for one request.
    Shared,
    /// Admissions spend leases of up to `[shared] lease` requests.
    Leased,
}

impl From<SharingArg> for Sharing {
    fn from(s: SharingArg) -> Sharing {
        match s {
            SharingArg::Local => Sharing::Local,
            SharingArg::Shared => Sharing::Shared,
            SharingArg::Leased => Sharing::Leased,
        }
    }
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
    if args.replicas > 1 || args.sharing.is_some() || args.store_lag.is_some() {
        return replicated(args, &scenario, &a, &a_name);
    }
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

/// Runs the replicas in one sharing mode (its full report) or in all three (side by
/// side).
fn replicated(
    args: &SimArgs,
    scenario: &Scenario,
    policy: &Policy,
    label: &str,
) -> Result<(), String> {
    let lag = args.store_lag.unwrap_or(Replicas::default().store_lag);
    let modes: Vec<Sharing> = match args.sharing {
        Some(s) => vec![s.into()],
        None => Sharing::ALL.to_vec(),
    };
    let mut runs = Vec::with_capacity(modes.len());
    for sharing in modes {
        let mut replicas = Replicas::new(args.replicas, sharing).with_store_lag(lag);
        if policy.shared.breaker {
            replicas = replicas.with_shared_breaker();
        }
        let run = steadfast_sim::run_replicas(scenario, policy, args.seed, &replicas).map_err(
            |e| match e {
                SimError::Replicas(ReplicaError::NoRequestLimit) => format!(
                    "--sharing {}: {e}; set [limiter] requests in the --config policy, \
                     or run --sharing local",
                    sharing.name()
                ),
                e => format!("--sharing {}: {e}", sharing.name()),
            },
        )?;
        let report = Report::new(&run, label);
        runs.push((run, report));
    }
    if let Some(path) = &args.svg {
        let labelled: Vec<Report> = runs
            .iter()
            .map(|(_, r)| {
                let mut r = r.clone();
                if let Some(s) = &r.replicas {
                    r.policy = format!("{label} {}", s.sharing);
                }
                r
            })
            .collect();
        let pairs: Vec<_> = runs.iter().map(|(run, _)| run).zip(&labelled).collect();
        write(path, &svg::render(&pairs))?;
    }
    let reports: Vec<Report> = runs.into_iter().map(|(_, r)| r).collect();
    let out = match (reports.as_slice(), args.json) {
        ([one], true) => json(one)?,
        ([one], false) => text::render(one),
        (all, true) => json(&modes::Modes::new(all))?,
        (all, false) => modes::render(all),
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
