//! `steadfast serve`: an OpenAI- and Anthropic-compatible gateway on loopback that runs
//! every request through one steadfast client — key rotation, pacing from the
//! providers' rate-limit headers, retry budgets, breakers, failover with translation,
//! idempotency, and streams that commit at their first byte.
//!
//! The server loop holds no policy: it reads a request, asks the [`routes`] where it
//! may go, and hands it to the client's session (the same one the library's users
//! call); the answer goes back in the shape of the API the client called.

pub mod admin;
pub mod auth;
pub mod chat;
pub mod config;
pub mod deadline;
pub mod ending;
pub mod flight;
pub mod handle;
pub mod idle;
pub mod ledger;
pub mod pool;
pub mod prom;
pub mod reply;
pub mod routes;
pub mod server;
pub mod stream;
pub mod ticks;
pub mod upstream;
pub mod whole;

use std::sync::Arc;

use http::HeaderValue;
use steadfast_http::{ApiKey, EndpointDef, Reply};

use self::auth::GatewayKeys;
use self::config::GatewayConfig;
use self::ending::Ending;
use self::flight::Flights;
use self::prom::GatewayMetrics;
use self::routes::Routes;
use self::upstream::Upstream;

pub use self::server::{Running, ServeError, start};

/// Everything a request handler needs.
#[derive(Debug)]
pub struct Gateway {
    /// The one client every request goes through (so every request shares its keys,
    /// limits, budgets and breakers).
    pub client: steadfast_reqwest::Client,
    /// The transport of whole calls on the client's engine (see [`Upstream::handles`]).
    pub upstream: Upstream,
    /// Where each model may go.
    pub routes: Routes,
    /// The keys clients authenticate with.
    pub keys: GatewayKeys,
    /// Requests sharing an idempotency key, and stored successes.
    pub flights: Arc<Flights>,
    /// The gateway's own counters.
    pub metrics: GatewayMetrics,
    /// The `[gateway]` table.
    pub config: GatewayConfig,
    /// Each endpoint's name as a header value, in the client's order.
    endpoint_names: Vec<HeaderValue>,
    /// Over when the shutdown's grace period is: in-flight calls end with a clean
    /// error instead of being cut.
    pub ending: Arc<Ending>,
}

/// Ends the in-flight calls of a [`Gateway`] once its grace period is over.
#[derive(Debug)]
pub struct Ender(Arc<Ending>);

impl Ender {
    /// Ends them now.
    pub fn end(&self) {
        self.0.end();
    }
}

/// What a gateway is built from.
#[derive(Debug)]
pub struct Parts {
    /// The client, built with every endpoint (canonical shape).
    pub client: steadfast_reqwest::Client,
    /// The endpoints, in the client's order (for routing by name and model).
    pub endpoints: Vec<EndpointDef>,
    /// The routes of the file.
    pub routes: Vec<config::RouteEntry>,
    /// The accepted client keys.
    pub keys: Vec<ApiKey>,
    /// The `[gateway]` table.
    pub config: GatewayConfig,
    /// The idempotency ledger shared with other replicas (`[shared] ledger = true`).
    pub shared_flights: Option<ledger::SharedFlights>,
}

impl Gateway {
    /// The gateway of `parts`, and what ends its in-flight calls.
    pub fn new(parts: Parts) -> Result<(Gateway, Ender), String> {
        let names = steadfast_http::endpoint_names(&parts.endpoints);
        let routable: Vec<routes::Routable<'_>> = names
            .iter()
            .zip(&parts.endpoints)
            .map(|(name, e)| routes::Routable {
                name,
                model: e.model.as_deref(),
            })
            .collect();
        let routes = Routes::new(&routable, &parts.routes)?;
        let endpoint_names = names
            .iter()
            .map(|n| HeaderValue::from_str(n).unwrap_or(HeaderValue::from_static("")))
            .collect();
        let ending = Arc::new(Ending::default());
        let c = &parts.config;
        let upstream = Upstream::new(&parts.client)?;
        let gateway = Gateway {
            upstream,
            client: parts.client,
            routes,
            keys: GatewayKeys::new(parts.keys),
            flights: Arc::new(
                Flights::new(c.replay_for, c.replay_entries).with_shared(parts.shared_flights),
            ),
            metrics: GatewayMetrics::default(),
            config: parts.config,
            endpoint_names,
            ending: Arc::clone(&ending),
        };
        Ok((gateway, Ender(ending)))
    }

    /// The name of the endpoint that served a reply, as a header value.
    pub fn endpoint_name(&self, reply: &Reply) -> Option<HeaderValue> {
        let by = reply.served_by()?;
        let kept = reply
            .target
            .and_then(|t| self.endpoint_names.get(usize::from(t.endpoint.0)))
            .filter(|v| v.as_bytes() == by.endpoint.as_bytes());
        kept.cloned()
            .or_else(|| HeaderValue::from_str(&by.endpoint).ok())
    }
}
