//! `steadfast serve`: the gateway. Prints its base URL as the first line of stdout,
//! serves until SIGINT or SIGTERM, then drains.

use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;

use clap::Args;
use steadfast_http::ApiKey;

use crate::serve::config::{self, ServeFile};
use crate::serve::ledger::SharedFlights;
use crate::serve::{Gateway, Parts};

/// Arguments of `steadfast serve`.
#[derive(Debug, Args)]
#[command(after_help = AFTER_HELP)]
pub struct ServeArgs {
    /// The endpoints, routes, gateway keys and policy (TOML; see below).
    #[arg(long, value_name = "FILE")]
    pub config: PathBuf,
    /// Where to listen (port 0 picks a free one). A non-loopback address needs a
    /// gateway key.
    #[arg(long, value_name = "ADDR", default_value_t = SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))]
    pub addr: SocketAddr,
    /// Seeds the client's jitter and idempotency keys.
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
}

const AFTER_HELP: &str = "\
Endpoints: POST /v1/chat/completions (OpenAI Chat Completions, any provider behind it), \
POST /v1/messages (Anthropic Messages), both with \"stream\": true; GET /v1/models; \
GET /healthz; GET /metrics (Prometheus); GET /admin/endpoints and \
POST /admin/endpoints/NAME/... (operators). Point an SDK's base URL at it \
(OpenAI: <base>/v1, Anthropic: <base>) with its own retries off (max_retries=0).

The --config file is `steadfast batch`'s (policy sections and [[endpoint]] tables, on the \
`standard` preset unless it names another) plus:

  [gateway]
  keys_env = [\"STEADFAST_GATEWAY_KEY\"]   # the keys clients send; none: loopback only
  grace = \"10s\"                          # SIGTERM: in-flight requests finish within it
  [[route]]
  model = \"gpt-4o-mini\"                  # what clients ask for
  endpoints = [\"openai\", \"claude\"]       # where it may go, in priority order

A model with no route goes to the endpoints configured with that `model`, else to those \
with none (which pass the client's model through); otherwise it is a 404.

Exit status: 0 after a clean shutdown, 2 for bad arguments or configuration, 1 when the \
address cannot be bound.";

/// Builds the gateway's parts from the file; `env` reads a key variable. With a
/// `[shared]` table it must run inside a Tokio runtime (the store's connection).
pub fn parts(
    file: ServeFile,
    seed: Option<u64>,
    env: &dyn Fn(&str) -> Option<ApiKey>,
) -> Result<Parts, String> {
    if file.endpoints.is_empty() {
        return Err("no [[endpoint]] table: the gateway needs an endpoint".into());
    }
    let endpoints = file
        .endpoints
        .iter()
        .enumerate()
        .map(|(i, e)| e.resolve(i + 1, &file.policy, env))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    let keys = file
        .gateway
        .keys_env
        .iter()
        .map(|v| {
            env(v).ok_or_else(|| {
                format!("gateway.keys_env: environment variable {v} is not set (or empty)")
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    // The gateway's pool sends the attempts' headers as they are: Host and
    // Content-Length are in them.
    let mut builder = steadfast_reqwest::Client::builder()
        .policy(file.policy.clone())
        .canonical(true)
        .complete_headers(true);
    for e in &endpoints {
        builder = builder.endpoint(e.clone());
    }
    if let Some(seed) = seed {
        builder = builder.seed_u64(seed);
    }
    let mut shared_flights = None;
    if let Some(entry) = &file.shared {
        let store = crate::shared::store(entry, &file.policy.shared)?;
        if entry.ledger {
            // A stored success lives as long as the gateway replays one locally (at
            // least a minute, so that replicas behind a balancer replay it too).
            let keep = file
                .gateway
                .replay_for
                .max(std::time::Duration::from_secs(60));
            let fail = file.policy.shared.fail;
            shared_flights = Some(SharedFlights::new(
                store.clone(),
                entry.claim_for(),
                keep,
                fail,
            ));
        }
        builder = builder.shared_store(store);
    }
    let client = builder
        .build()
        .map_err(|e| format!("cannot set up the client: {e}"))?;
    Ok(Parts {
        client,
        endpoints,
        routes: file.routes,
        keys,
        config: file.gateway,
        shared_flights,
    })
}

/// Runs the subcommand; returns the process exit code.
pub fn run(a: &ServeArgs) -> u8 {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("steadfast: error: cannot start the runtime: {e}");
            return 1;
        }
    };
    // A shared store's connection lives on the runtime.
    let inside = runtime.enter();
    let setup = config::load(&a.config)
        .map_err(|e| format!("{}: {e}", a.config.display()))
        .and_then(|f| parts(f, a.seed, &|v| ApiKey::from_env(v)))
        .map_err(|e| format!("{}: {e}", a.config.display()));
    let parts = match setup {
        Ok(p) => p,
        Err(e) => {
            eprintln!("steadfast: error: {e}");
            return 2;
        }
    };
    drop(inside);
    runtime.block_on(serve(parts, a.addr))
}

async fn serve(parts: Parts, addr: SocketAddr) -> u8 {
    let (gateway, ender) = match Gateway::new(parts) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("steadfast: error: {e}");
            return 2;
        }
    };
    let running = match crate::serve::start(gateway, ender, addr).await {
        Ok(r) => r,
        Err(e) => {
            eprintln!("steadfast: error: {e}");
            return match e {
                crate::serve::ServeError::Unprotected(_) => 2,
                crate::serve::ServeError::Bind(..) => 1,
            };
        }
    };
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{}", running.base_url());
    let _ = out.flush();
    drop(out);
    crate::signal::shutdown().await;
    eprintln!("steadfast: shutting down: draining in-flight requests");
    running.shutdown().await;
    0
}
