//! `steadfast batch`: the flags, and how they and the config file become
//! [`crate::batch::Options`].

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use steadfast_http::{ApiKey, EndpointDef, Provider, ProviderExt};
use steadfast_mock::{MockConfig, MockServer};

use crate::batch::{self, Options, file, progress, store};

/// The key sent to the in-process mock when no `--api-key-env` is given (key `k > 0`
/// of a scenario's endpoint: this with `-k` appended).
pub const MOCK_KEY: &str = steadfast_mock::MOCK_KEY;

/// Arguments of `steadfast batch`.
#[derive(Debug, Args)]
#[command(after_help = AFTER_HELP)]
pub struct BatchArgs {
    /// The JSONL input: one {"id": "...", "request": {...}} per line.
    #[arg(long, value_name = "FILE")]
    pub input: PathBuf,
    /// The JSONL results, one line per input id; by default the input's path with
    /// `.out.jsonl` added; `-` for stdout.
    #[arg(
        long,
        value_name = "FILE",
        help = "The JSONL results, one line per input id [default: <input>.out.jsonl]; `-` for \
                stdout (then only a --journal makes reruns skip finished ids)"
    )]
    pub output: Option<PathBuf>,
    /// Failed lines with their request and error, ready to resubmit as input.
    #[arg(long, value_name = "FILE")]
    pub dead_letter: Option<PathBuf>,
    /// The record of finished ids; by default the output's path with `.journal` added
    /// (none with `--output -`).
    #[arg(
        long,
        value_name = "FILE",
        help = "The record of finished ids [default: <output>.journal; none with --output -]"
    )]
    pub journal: Option<PathBuf>,
    /// Runs the fault-injecting mock server in-process on 127.0.0.1 with this scenario
    /// (a built-in's name or a scenario file) and sends every request to it: one
    /// endpoint per scenario endpoint, with built-in fake keys; no network needed.
    #[arg(long, value_name = "SCENARIO", conflicts_with = "base_url")]
    pub mock: Option<String>,
    /// A mock settings/script file (as `steadfast mock --script`) for --mock.
    #[arg(long, value_name = "FILE", requires = "mock")]
    pub mock_config: Option<PathBuf>,
    /// The API root (with or without /v1); replaces the config file's endpoints.
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// The API shape of --base-url / --mock / the default endpoint [default: openai].
    #[arg(long, value_name = "openai|anthropic")]
    pub provider: Option<Provider>,
    /// An environment variable holding an API key; repeat it to rotate several keys
    /// [default: OPENAI_API_KEY or ANTHROPIC_API_KEY].
    #[arg(long, value_name = "VAR")]
    pub api_key_env: Vec<String>,
    /// Forces this model into every request (with --base-url / --mock / the default).
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
    /// Input lines are canonical — OpenAI Chat Completions bodies, translated for
    /// Anthropic endpoints — and so are the output's responses. The default when the
    /// endpoints speak more than one API; otherwise each line is its provider's own body.
    #[arg(long)]
    pub canonical: bool,
    /// Lines in flight at once.
    #[arg(long, value_name = "N", default_value_t = 32, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub concurrency: u32,
    /// Attempts per line, the first included.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_attempts: Option<u32>,
    /// The time one attempt may take, e.g. 2s, 500ms.
    #[arg(long, value_name = "DURATION", value_parser = super::duration)]
    pub timeout: Option<Duration>,
    /// The time one line may take, all its attempts and waits included.
    #[arg(long, value_name = "DURATION", value_parser = super::duration)]
    pub deadline: Option<Duration>,
    /// The longest server-requested wait honoured; a longer hint ends the line at once.
    #[arg(long, value_name = "DURATION", value_parser = super::duration)]
    pub max_retry_after: Option<Duration>,
    /// How long lines hold for an endpoint that keeps failing (breaker open, retry
    /// budget spent): once its first failure since its last success is this old, they
    /// fail fast [default: 30s].
    #[arg(long, value_name = "DURATION", value_parser = super::duration)]
    pub max_hold: Option<Duration>,
    /// Requests per minute per endpoint (the client-side limiter).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub rpm: Option<u32>,
    /// Tokens per minute per endpoint (estimated from each request).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub tpm: Option<u64>,
    /// The policy and endpoints (TOML; see below). Flags override it.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Seeds the client's jitter (and the --mock server's draws).
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// No progress display (notes and the summary still go to stderr).
    #[arg(long, short)]
    pub quiet: bool,
    /// The period of plain progress lines when stderr is not a terminal.
    #[arg(long, value_name = "DURATION", value_parser = super::duration, default_value = "5s")]
    pub progress_every: Duration,
}

const AFTER_HELP: &str = "\
Each input id gets exactly one output line, {\"id\",\"ok\":true,\"response\",\"attempts\"} or \
{\"id\",\"ok\":false,\"error\":{\"class\",\"scope\",\"status\",\"message\"},\"attempts\"}, even \
across crashes: rerun the same command to finish an interrupted batch. Every attempt of a \
line carries the Idempotency-Key derived from its id.

A line that is not a request gets an ok:false line with class bad_input and its \
\"line\" number; one with no id of its own (none readable, or an earlier line's) is \
written with \"id\": null and known by its line number. Its dead letter keeps the line as \
\"raw\"; as input, a dead letter without an id is read as its raw text.

The policy starts from the `batch` preset: lines hold while every breaker is open or \
the retry budget is spent, and wait out rate limits as told, within --deadline; they stop \
holding for an endpoint that has failed for --max-hold without a success, fail fast, and \
the summary names the endpoint (rerun with --input DEAD_LETTERS to run them again). A \
--config file may name another preset, change any policy section and list endpoints:

  preset = \"batch\"
  [retry]
  max_attempts = 6
  max_hold = \"30s\"
  [[endpoint]]
  name = \"primary\"
  priority = 0
  provider = \"openai\"
  base_url = \"https://api.openai.com\"
  keys_env = [\"OPENAI_KEY_1\", \"OPENAI_KEY_2\"]
  model = \"gpt-4o-mini\"
  rpm = 500
  [[endpoint]]
  priority = 1
  provider = \"anthropic\"
  base_url = \"https://api.anthropic.com\"
  keys_env = [\"ANTHROPIC_API_KEY\"]

Exit status: 0 when every line ended (ok or failed), 3 when every line ended but some \
input lines were not requests (bad_input), 2 for bad arguments or configuration, 1 when \
writing failed, 130 when interrupted (rerun to resume).";

/// What `resolve` produced: the options, and the mock server they point at.
pub struct Resolved {
    /// The batch's options.
    pub options: Options,
    /// The in-process mock (kept alive for the run).
    pub mock: Option<MockServer>,
}

impl std::fmt::Debug for Resolved {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Resolved")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

/// The default output path: `<input>.out.jsonl`.
pub fn default_output(input: &Path) -> PathBuf {
    let mut s = input.as_os_str().to_owned();
    s.push(".out.jsonl");
    PathBuf::from(s)
}

fn default_base(p: Provider) -> &'static str {
    match p {
        Provider::OpenAi => "https://api.openai.com",
        Provider::Anthropic => "https://api.anthropic.com",
    }
}

/// Turns the flags (and the config file) into options; starts the mock for --mock.
/// `env` reads an environment variable as a key.
pub fn resolve(a: &BatchArgs, env: &dyn Fn(&str) -> Option<ApiKey>) -> Result<Resolved, String> {
    let (mut policy, file_endpoints, shared) = match &a.config {
        Some(path) => {
            let f = file::load(path).map_err(|e| format!("{}: {e}", path.display()))?;
            (f.policy, f.endpoints, f.shared)
        }
        None => (file::default_policy(), Vec::new(), None),
    };
    if let Some(n) = a.max_attempts {
        policy.retry.max_attempts = n;
    }
    if let Some(d) = a.timeout {
        policy.retry.attempt_timeout = d;
    }
    if let Some(d) = a.deadline {
        policy.retry.deadline = Some(d);
    }
    if let Some(d) = a.max_retry_after {
        policy.retry.max_retry_after = d;
    }
    if let Some(d) = a.max_hold {
        policy.retry.max_hold = d;
    }
    if a.rpm.is_some() {
        policy.limiter.requests = a.rpm;
    }
    if a.tpm.is_some() {
        policy.limiter.tokens = a.tpm;
    }
    policy
        .validate()
        .map_err(|e| format!("invalid policy: {e}"))?;

    let flag_endpoint = a.mock.is_some() || a.base_url.is_some() || file_endpoints.is_empty();
    if !flag_endpoint && (a.provider.is_some() || !a.api_key_env.is_empty() || a.model.is_some()) {
        return Err(
            "--provider, --api-key-env and --model describe the --base-url or --mock \
                    endpoint; the config file's endpoints name their own (add --base-url, or \
                    edit the [[endpoint]] tables)"
                .into(),
        );
    }
    let provider = a.provider.unwrap_or_default();
    let mut mock = None;
    let endpoints = if flag_endpoint {
        let keys = |fallback: Option<&str>| -> Result<Vec<ApiKey>, String> {
            if a.api_key_env.is_empty() {
                return match fallback {
                    Some(k) => Ok(vec![ApiKey::new(k)]),
                    None => {
                        let var = provider.key_env();
                        env(var).map(|k| vec![k]).ok_or_else(|| {
                            format!("no API key: set {var}, or name variables with --api-key-env")
                        })
                    }
                };
            }
            a.api_key_env
                .iter()
                .map(|v| {
                    env(v).ok_or_else(|| {
                        format!("--api-key-env {v}: the environment variable is not set (or empty)")
                    })
                })
                .collect()
        };
        if let Some(name) = &a.mock {
            let server = start_mock(name, a.mock_config.as_deref(), a.seed)?;
            let defs = mock_endpoints(&server, a, keys)?;
            mock = Some(server);
            defs
        } else {
            let (base, keys) = match &a.base_url {
                Some(url) => (url.clone(), keys(None)?),
                None => (default_base(provider).to_owned(), keys(None)?),
            };
            let mut def = EndpointDef::new(base, provider, "").keys(keys);
            if let Some(m) = &a.model {
                def = def.model(m.clone());
            }
            vec![def]
        }
    } else {
        file_endpoints
            .iter()
            .enumerate()
            .map(|(i, e)| e.resolve(i + 1, &policy, env))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| {
                format!(
                    "{}: {e}",
                    a.config.as_deref().unwrap_or(Path::new("")).display()
                )
            })?
    };

    let output = match a.output.as_deref() {
        Some(p) if p == Path::new("-") => None,
        Some(p) => Some(p.to_owned()),
        None => Some(default_output(&a.input)),
    };
    let journal = match (&a.journal, &output) {
        (Some(j), _) => Some(j.clone()),
        (None, Some(o)) => {
            let mut s = o.as_os_str().to_owned();
            s.push(".journal");
            Some(PathBuf::from(s))
        }
        (None, None) => None,
    };
    let paths = store::Paths {
        output,
        journal,
        dead_letter: a.dead_letter.clone(),
    };
    check_distinct(&a.input, &paths)?;
    let progress = if a.quiet {
        progress::Mode::Quiet
    } else {
        progress::Mode::Auto {
            every: a.progress_every.max(Duration::from_millis(100)),
        }
    };
    Ok(Resolved {
        options: Options {
            input: a.input.clone(),
            paths,
            policy,
            names: steadfast_http::endpoint_names(&endpoints),
            endpoints,
            canonical: a.canonical,
            concurrency: a.concurrency as usize,
            seed: a.seed,
            progress,
            shared,
        },
        mock,
    })
}

/// The mock's endpoints as the batch's: each scenario endpoint under its path, speaking
/// its API (or `--provider`), with the mock's keys (or the `--api-key-env` ones).
fn mock_endpoints(
    server: &MockServer,
    a: &BatchArgs,
    keys: impl Fn(Option<&str>) -> Result<Vec<ApiKey>, String>,
) -> Result<Vec<EndpointDef>, String> {
    server
        .endpoints()
        .into_iter()
        .map(|e| {
            let provider = a.provider.unwrap_or(e.provider);
            let keys = match a.api_key_env.is_empty() {
                true => e.keys.iter().map(ApiKey::new).collect(),
                false => keys(None)?,
            };
            let mut def = EndpointDef::new(e.base_url, provider, "")
                .keys(keys)
                .priority(e.priority);
            if let Some(m) = &a.model {
                def = def.model(m.clone());
            }
            Ok(def)
        })
        .collect()
}

fn start_mock(name: &str, config: Option<&Path>, seed: Option<u64>) -> Result<MockServer, String> {
    let scenario = super::scenario(name).map_err(|e| format!("--mock: {e}"))?;
    let mut c = MockConfig::new(scenario.clone());
    if let Some(path) = config {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        c.apply_toml_str(&text)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        // The flag names the scenario; the file only tunes it.
        c.scenario = scenario;
    }
    if let Some(s) = seed {
        c.seed = s;
    }
    MockServer::start(c).map_err(|e| format!("cannot start the mock server: {e}"))
}

/// No two of the files may be the same (the output must never overwrite the input).
fn check_distinct(input: &Path, paths: &store::Paths) -> Result<(), String> {
    let named = [
        ("--input", Some(input)),
        ("--output", paths.output.as_deref()),
        ("--journal", paths.journal.as_deref()),
        ("--dead-letter", paths.dead_letter.as_deref()),
    ];
    let key = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_owned());
    for (i, (a, pa)) in named.iter().enumerate() {
        for (b, pb) in named.iter().skip(i + 1) {
            if let (Some(pa), Some(pb)) = (pa, pb) {
                if key(pa) == key(pb) {
                    return Err(format!("{a} and {b} name the same file ({})", pa.display()));
                }
            }
        }
    }
    Ok(())
}

/// Runs the subcommand; returns the process exit code.
pub fn run(a: &BatchArgs) -> u8 {
    let resolved = match resolve(a, &|v| ApiKey::from_env(v)) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("steadfast: error: {e}");
            return batch::exit::SETUP;
        }
    };
    if let Some(m) = &resolved.mock {
        eprintln!(
            "steadfast: mock server ({}) at {}",
            m.config().scenario.name,
            m.base_url()
        );
    }
    let result = batch::run(resolved.options);
    drop(resolved.mock);
    match result {
        Ok(mut summary) => {
            eprint!("{}", summary.render());
            if summary.interrupted {
                eprintln!("steadfast: interrupted; rerun the same command to finish the batch");
            }
            summary.exit_code()
        }
        Err(e) => {
            eprintln!("steadfast: error: {e}");
            e.exit_code()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Wrap {
        #[command(flatten)]
        a: BatchArgs,
    }

    fn args(v: &[&str]) -> BatchArgs {
        Wrap::parse_from(std::iter::once("batch").chain(v.iter().copied())).a
    }

    fn env(v: &str) -> Option<ApiKey> {
        v.starts_with("SET_")
            .then(|| ApiKey::new(format!("sk-{v}")))
    }

    #[test]
    fn flags_override_the_batch_policy_and_name_the_files() {
        let a = args(&[
            "--input",
            "in.jsonl",
            "--base-url",
            "http://h/v1",
            "--api-key-env",
            "SET_A",
            "--api-key-env",
            "SET_B",
            "--max-attempts",
            "3",
            "--timeout",
            "2s",
            "--deadline",
            "1m",
            "--max-retry-after",
            "500ms",
            "--max-hold",
            "7s",
            "--rpm",
            "60",
            "--tpm",
            "1000",
            "--model",
            "m",
        ]);
        let r = resolve(&a, &env).unwrap();
        let p = &r.options.policy;
        assert_eq!(p.retry.max_attempts, 3);
        assert_eq!(p.retry.attempt_timeout, Duration::from_secs(2));
        assert_eq!(p.retry.deadline, Some(Duration::from_secs(60)));
        assert_eq!(p.retry.max_retry_after, Duration::from_millis(500));
        assert_eq!(p.retry.max_hold, Duration::from_secs(7));
        assert_eq!(r.options.names, ["openai"]);
        assert_eq!(
            (p.limiter.requests, p.limiter.tokens),
            (Some(60), Some(1000))
        );
        assert!(p.retry.hold, "the batch preset underneath");
        let e = &r.options.endpoints[0];
        assert_eq!((e.keys.len(), e.model.as_deref()), (2, Some("m")));
        assert_eq!(e.url(), "http://h/v1/chat/completions");
        let paths = &r.options.paths;
        assert_eq!(
            paths.output.as_deref(),
            Some(Path::new("in.jsonl.out.jsonl"))
        );
        assert_eq!(
            paths.journal.as_deref(),
            Some(Path::new("in.jsonl.out.jsonl.journal"))
        );
        assert_eq!(r.options.concurrency, 32);
        assert!(!format!("{r:?}").contains("sk-SET"), "keys never print");
    }

    #[test]
    fn stdout_output_has_no_default_journal_and_defaults_need_a_key() {
        let a = args(&[
            "--input",
            "x",
            "--output",
            "-",
            "--base-url",
            "http://h",
            "--api-key-env",
            "SET_A",
        ]);
        let r = resolve(&a, &env).unwrap();
        assert_eq!(r.options.paths.output, None);
        assert_eq!(r.options.paths.journal, None);
        let e = resolve(&args(&["--input", "x"]), &env).unwrap_err();
        assert!(e.contains("OPENAI_API_KEY"), "{e}");
        let e = resolve(&args(&["--input", "x", "--provider", "anthropic"]), &env).unwrap_err();
        assert!(e.contains("ANTHROPIC_API_KEY"), "{e}");
        let ok = |v: &str| Some(ApiKey::new(format!("k-{v}")));
        let r = resolve(&args(&["--input", "x", "--provider", "anthropic"]), &ok).unwrap();
        assert_eq!(
            r.options.endpoints[0].url(),
            "https://api.anthropic.com/v1/messages"
        );
    }
}
