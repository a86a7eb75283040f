//! The upstream: one [`Server`] per scenario endpoint, the script, the outage switch,
//! server-side idempotency and the counters.

use std::collections::VecDeque;

use steadfast_core::date::ImfFixdate;
use steadfast_core::hints::Hints;
use steadfast_core::provider::Provider;
use steadfast_core::time::Timestamp;

use crate::answer::{Answer, Body, Delivery, Reply, Ticket};
use crate::draw::{alnum_id, fnv1a, request_rng, splitmix};
use crate::facts::RequestFacts;
use crate::fault::Fault;
use crate::idem::Seen;
use crate::scenario::Scenario;
use crate::server::{Ctx, Server, overloaded};
use crate::stats::{Stats, StatsState, bump};
use crate::verdict::{Fate, Verdict};
use crate::wire::call::{Call, json_object};
use crate::wire::check::check;
use crate::wire::errors::{error_body, status_body};
use crate::wire::headers::{Header, header};
use crate::wire::success::Success;
use crate::wire::tool::ToolCall;

/// How the upstream runs, beside its scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UpstreamConfig {
    /// The seed of every random draw. Default: 0.
    pub seed: u64,
    /// The most idempotency keys remembered (stored successes, counters, waits told)
    /// and request identities and keys tracked: past it the oldest stored successes
    /// are forgotten, new keys go uncounted in [`Stats::keys`], and the per-identity
    /// counts and rate-limit buckets start afresh. Default: 100 000.
    pub max_keys: usize,
    /// The status of outage-switch answers ([`Upstream::set_down`]); none: 503 for
    /// OpenAI, 529 for Anthropic. Default: none.
    pub down_status: Option<u16>,
    /// Whether request bodies are checked as the real APIs check them (see
    /// [`crate::wire::check`]): a body they would refuse gets their 400. Off, any JSON
    /// object is served; on, an endpoint can still turn the checks off for itself
    /// ([`crate::scenario::EndpointSpec::strict`]). Default: on.
    pub strict: bool,
}

impl Default for UpstreamConfig {
    fn default() -> UpstreamConfig {
        UpstreamConfig {
            seed: 0,
            max_keys: 100_000,
            down_status: None,
            strict: true,
        }
    }
}

/// A sans-IO LLM provider: requests in ([`Upstream::handle`]), answers out. No clock, no
/// IO: `now` is the time since the upstream's start, `wall` the Unix time in seconds
/// (for `Date` headers and Anthropic's resets).
pub struct Upstream {
    scenario: Scenario,
    config: UpstreamConfig,
    servers: Vec<Server>,
    script: VecDeque<Fault>,
    down: bool,
    stats: StatsState,
    next_request: u64,
}

/// A request past the provider's own checks.
struct Admitted<'a> {
    endpoint: usize,
    provider: Provider,
    api_key: &'a str,
    call: Call,
    request_id: String,
    headers: Vec<Header>,
}

impl Upstream {
    /// The upstream of a (validated) scenario.
    pub fn new(scenario: Scenario, config: UpstreamConfig) -> Upstream {
        let servers = scenario
            .endpoints
            .iter()
            .map(|e| Server::new(e.clone(), config.max_keys))
            .collect();
        Upstream {
            scenario,
            config,
            servers,
            script: VecDeque::new(),
            down: false,
            stats: StatsState::default(),
            next_request: 0,
        }
    }

    /// The scenario it runs.
    pub fn scenario(&self) -> &Scenario {
        &self.scenario
    }

    /// Its configuration.
    pub fn config(&self) -> &UpstreamConfig {
        &self.config
    }

    /// Appends faults to the script: each is consumed by one API request, in arrival
    /// order, before the scenario applies.
    pub fn push_faults(&mut self, faults: impl IntoIterator<Item = Fault>) {
        self.script.extend(faults);
    }

    /// The whole-upstream outage switch: while on, every API request gets the outage
    /// answer before anything else (no script consumed, no replay).
    pub fn set_down(&mut self, down: bool) {
        self.down = down;
    }

    /// Whether the outage switch is on.
    pub fn is_down(&self) -> bool {
        self.down
    }

    /// Clears the counters, the idempotency memory, the per-identity counts and the
    /// rate-limit buckets; the script, the outage switch and the clock stay.
    pub fn reset(&mut self) {
        let max = self.config.max_keys;
        for s in &mut self.servers {
            *s = Server::new(s.spec.clone(), max);
        }
        self.stats = StatsState::default();
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> Stats {
        self.stats.snapshot(self.script.len(), self.down)
    }

    /// A connection was accepted: whether a scripted `reset_before_request` at the head
    /// of the script claims it (it is consumed).
    pub fn on_accept(&mut self) -> bool {
        if !matches!(self.script.front(), Some(Fault::ResetBeforeRequest)) {
            return false;
        }
        self.script.pop_front();
        self.stats.fault("reset_before_request");
        true
    }

    /// A request that could not be read was answered with `status`.
    pub fn on_unreadable(&mut self, status: u16, label: &'static str) {
        self.stats.status(status);
        self.stats.fault(label);
    }

    /// Ends an `Idempotency-Key` attempt (see [`Answer::ticket`]).
    pub fn finish(&mut self, ticket: Ticket) {
        if let Some(s) = self.servers.get_mut(ticket.endpoint) {
            s.idem.finish(ticket.key, ticket.store);
        }
    }

    /// Answers one request arriving at `now` (wall clock `wall`, Unix seconds).
    pub fn handle(&mut self, now: Timestamp, wall: u64, facts: &RequestFacts) -> Answer {
        let a = match self.admit(wall, facts) {
            Ok(a) => a,
            Err(answer) => return *answer,
        };
        if let Some(answer) = self.keyed(now, &a, facts.key()) {
            return answer;
        }
        if matches!(self.script.front(), Some(Fault::ResetBeforeRequest)) {
            self.script.pop_front();
            self.stats.fault("reset_before_request");
            return plain(Reply::Reset);
        }
        self.process(now, wall, facts, a)
    }

    /// Routing, method, the outage switch, credentials and the body.
    fn admit<'f>(
        &mut self,
        wall: u64,
        facts: &RequestFacts<'f>,
    ) -> Result<Admitted<'f>, Box<Answer>> {
        bump(&mut self.stats.total_requests);
        let date = header("date", ImfFixdate(wall).to_string());
        let Some((endpoint, provider)) = self.scenario.route(facts.path) else {
            self.stats.path("other");
            let message = format!("Invalid URL ({} {})", facts.method, facts.path);
            let body = error_body(
                Provider::OpenAi,
                "invalid_request_error",
                None,
                &message,
                "",
            );
            return Err(Box::new(self.refuse(vec![date], 404, "not_found", body)));
        };
        self.stats.path(provider.path());
        let request_id = self.request_id();
        let id_header = match provider {
            Provider::OpenAi => "x-request-id",
            Provider::Anthropic => "request-id",
        };
        let headers = vec![date, header(id_header, request_id.as_str())];
        let refuse = |up: &mut Upstream, status, label, message: &str, etype| {
            let body = error_body(provider, etype, None, message, &request_id);
            Err(Box::new(up.refuse(headers.clone(), status, label, body)))
        };
        const INVALID: &str = "invalid_request_error";
        if facts.method != "POST" {
            let message = format!("Method {} not allowed on {}", facts.method, facts.path);
            return refuse(self, 405, "bad_request", &message, INVALID);
        }
        if self.down {
            let status = self.config.down_status.unwrap_or(overloaded(provider));
            let body = status_body(provider, status, &request_id);
            return Err(Box::new(self.refuse(headers, status, "outage", body)));
        }
        let Some(api_key) = facts.api_key(provider) else {
            let (message, etype) = match provider {
                Provider::OpenAi => (
                    "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
                    INVALID,
                ),
                Provider::Anthropic => ("x-api-key header is required", "authentication_error"),
            };
            return refuse(self, 401, "missing_auth", message, etype);
        };
        if provider == Provider::Anthropic && facts.anthropic_version.is_none() {
            let message = "anthropic-version: header is required";
            return refuse(self, 400, "bad_request", message, INVALID);
        }
        let body = match json_object(provider, facts.body) {
            Ok(body) => body,
            Err(message) => return refuse(self, 400, "bad_request", &message, INVALID),
        };
        let strict =
            self.config.strict && self.servers.get(endpoint).is_some_and(|s| s.spec.strict);
        if strict {
            if let Err(r) = check(provider, &body) {
                let mut headers = headers;
                if provider == Provider::Anthropic {
                    headers.push(header("x-should-retry", "false"));
                }
                let body = r.body(provider, &request_id);
                return Err(Box::new(self.refuse(headers, 400, "invalid_request", body)));
            }
        }
        let call = Call::of(provider, &body);
        Ok(Admitted {
            endpoint,
            provider,
            api_key,
            call,
            request_id,
            headers,
        })
    }

    fn refuse(
        &mut self,
        headers: Vec<Header>,
        status: u16,
        label: &'static str,
        body: Vec<u8>,
    ) -> Answer {
        self.on_unreadable(status, label);
        http(status, headers, Body::json(body))
    }

    fn request_id(&mut self) -> String {
        let n = self.next_request;
        bump(&mut self.next_request);
        let id = alnum_id(splitmix(self.config.seed ^ splitmix(n)), 24);
        format!("req_{id}")
    }

    /// Server-side idempotency: a stored success is replayed, a key in progress gets
    /// 409 (unless the endpoint does not refuse them: then it is processed).
    fn keyed(&mut self, now: Timestamp, a: &Admitted, key: Option<&str>) -> Option<Answer> {
        let key = key?;
        let max = self.config.max_keys;
        let server = self.servers.get_mut(a.endpoint)?;
        let early = server.idem.early(key, now);
        self.stats.on_key(Some(key), max, |k| {
            bump(&mut k.attempts);
            if early {
                bump(&mut k.early);
            }
        });
        if early {
            bump(&mut self.stats.early);
        }
        let answer = match server.idem.seen(key) {
            Seen::New => return None,
            Seen::InProgress if !server.spec.conflicts => return None,
            Seen::Done(stored) => {
                let body = Body::Success {
                    success: Box::new(stored.clone()),
                    malformed: false,
                };
                let mut headers = a.headers.clone();
                headers.push(header("idempotent-replayed", "true"));
                bump(&mut self.stats.replayed);
                self.stats.status(200);
                self.stats.on_key(Some(key), max, |k| bump(&mut k.replayed));
                http(200, headers, body)
            }
            Seen::InProgress => {
                self.stats
                    .on_key(Some(key), max, |k| bump(&mut k.conflicts));
                let body = error_body(
                    a.provider,
                    "invalid_request_error",
                    Some("idempotency_key_in_use"),
                    "A request with the same Idempotency-Key is still in progress; retry later.",
                    &a.request_id,
                );
                self.refuse(a.headers.clone(), 409, "conflict", body)
            }
        };
        Some(answer)
    }

    /// The script or the scenario decides; the verdict becomes the answer.
    fn process(&mut self, now: Timestamp, wall: u64, facts: &RequestFacts, a: Admitted) -> Answer {
        let key = facts.key();
        let identity = match key {
            Some(k) => fnv1a(&[b"key", k.as_bytes()]),
            None => fnv1a(&[b"body", facts.path.as_bytes(), facts.body]),
        };
        let seed = self.config.seed ^ splitmix(u64::try_from(a.endpoint).unwrap_or(0));
        let Some(server) = self.servers.get_mut(a.endpoint) else {
            return plain(Reply::Hang);
        };
        if let Some(k) = key {
            server.idem.begin(k);
        }
        let (seen, failures) = server.see(identity);
        let mut rng = request_rng(seed, identity, seen);
        let fault = self.script.pop_front();
        let success_seed = splitmix(identity ^ splitmix(seen));
        let success = Success {
            call: a.call.clone(),
            seed: success_seed,
            created: wall,
            pad: 0,
            event_latency: server.spec.event_latency,
            tool: ToolCall::plan(&a.call, server.spec.tool_use, fault.as_ref(), success_seed),
            error_after: None,
        };
        let verdict = match fault {
            Some(fault) => crate::script::verdict(fault, a.provider, &success, &a.request_id),
            None => {
                let c = Ctx {
                    now,
                    wall,
                    provider: a.provider,
                    api_key: a.api_key,
                    call: &a.call,
                    request_id: &a.request_id,
                };
                server.scenario(&c, &mut rng, failures)
            }
        };
        server.seen_end(identity, verdict.is_clean_success(), failures);
        let ticket = key.map(|k| Ticket {
            endpoint: a.endpoint,
            key: k.to_owned(),
            store: None,
        });
        self.answer(now, wall, key, verdict, success, a.headers, ticket)
    }

    #[allow(clippy::too_many_arguments)]
    fn answer(
        &mut self,
        now: Timestamp,
        wall: u64,
        key: Option<&str>,
        v: Verdict,
        mut success: Success,
        mut headers: Vec<Header>,
        mut ticket: Option<Ticket>,
    ) -> Answer {
        if let Some(label) = v.label {
            self.stats.fault(label);
        }
        headers.extend(v.headers);
        let reply = match v.fate {
            Fate::Done {
                delivery,
                malformed,
                pad,
            } => {
                success.pad = pad;
                self.processed(key, &mut ticket, &success);
                self.stats.status(200);
                let body = Body::Success {
                    success: Box::new(success),
                    malformed,
                };
                Reply::Http(crate::answer::Http {
                    status: 200,
                    headers,
                    body,
                    delivery,
                })
            }
            Fate::Lost => {
                self.processed(key, &mut ticket, &success);
                Reply::Reset
            }
            Fate::Error { status, body } => {
                self.stats.status(status);
                let wait = v.retry_after.or_else(|| told_wait(&headers, wall));
                if let (Some(k), Some(w), Some(t)) = (key, wait, &ticket) {
                    if let Some(s) = self.servers.get_mut(t.endpoint) {
                        s.idem.hinted(k, now.saturating_add(w));
                    }
                }
                Reply::Http(crate::answer::Http {
                    status,
                    headers,
                    body,
                    delivery: Delivery::Whole,
                })
            }
            Fate::StreamError(after_events) => {
                self.stats.status(200);
                success.error_after = Some(after_events);
                Reply::Http(crate::answer::Http {
                    status: 200,
                    headers,
                    body: Body::Success {
                        success: Box::new(success),
                        malformed: false,
                    },
                    delivery: Delivery::Whole,
                })
            }
            Fate::Filler(f) => {
                self.stats.status(200);
                let body = Body::Filler(f);
                Reply::Http(crate::answer::Http {
                    status: 200,
                    headers,
                    body,
                    delivery: Delivery::Whole,
                })
            }
            Fate::Hang => Reply::Hang,
            Fate::Reset => Reply::Reset,
            Fate::Refused => Reply::Refused,
        };
        Answer {
            after: v.after,
            reply,
            retry_after: v.retry_after,
            ticket,
        }
    }

    /// The work was done: counted, and stored for the key's replays.
    fn processed(&mut self, key: Option<&str>, ticket: &mut Option<Ticket>, success: &Success) {
        bump(&mut self.stats.processed);
        self.stats
            .on_key(key, self.config.max_keys, |k| bump(&mut k.processed));
        if let Some(t) = ticket {
            t.store = Some(success.clone());
        }
    }
}

/// The wait an error's headers tell (`retry-after-ms`, else `retry-after`), read by the
/// core's parser.
fn told_wait(headers: &[Header], wall: u64) -> Option<core::time::Duration> {
    let pairs = headers.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes()));
    Hints::from_headers(pairs, wall).retry_after
}

fn plain(reply: Reply) -> Answer {
    Answer {
        after: core::time::Duration::ZERO,
        reply,
        retry_after: None,
        ticket: None,
    }
}

fn http(status: u16, headers: Vec<Header>, body: Body) -> Answer {
    plain(Reply::Http(crate::answer::Http {
        status,
        headers,
        body,
        delivery: Delivery::Whole,
    }))
}
