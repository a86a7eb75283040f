//! What every connection shares: the upstream behind a lock, the clock, and the
//! socket's own counters.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use steadfast_upstream::{Answer, Fault, RequestFacts, Stats, Ticket, Upstream};

use crate::clock::Clock;
use crate::config::MockConfig;
use crate::http::Request;

/// The server's shared state.
pub(crate) struct Shared {
    pub config: MockConfig,
    pub clock: Clock,
    upstream: Mutex<Upstream>,
    connections: AtomicU64,
    filler_sent: AtomicU64,
}

impl Shared {
    pub(crate) fn new(config: MockConfig) -> Shared {
        let mut upstream = Upstream::new(config.effective_scenario(), config.upstream());
        upstream.push_faults(config.script.iter().cloned());
        Shared {
            config,
            clock: Clock::start(),
            upstream: Mutex::new(upstream),
            connections: AtomicU64::new(0),
            filler_sent: AtomicU64::new(0),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Upstream> {
        self.upstream.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Answers an API request, at the instant it was read.
    pub(crate) fn handle(&self, req: &Request) -> Answer {
        let bearer = req.header("authorization").and_then(|v| {
            let (scheme, rest) = v.split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| rest.trim())
        });
        let facts = RequestFacts {
            method: &req.method,
            path: &req.path,
            bearer,
            x_api_key: req.header("x-api-key"),
            anthropic_version: req.header("anthropic-version"),
            idempotency_key: req.header("idempotency-key"),
            body: &req.body,
        };
        let (now, wall) = self.clock.request();
        self.lock().handle(now, wall, &facts)
    }

    pub(crate) fn finish(&self, ticket: Ticket) {
        self.lock().finish(ticket);
    }

    /// A connection was accepted: counts it, and says whether a scripted
    /// `reset_before_request` claims it.
    pub(crate) fn on_accept(&self) -> bool {
        self.connections.fetch_add(1, Ordering::Relaxed);
        self.lock().on_accept()
    }

    /// A request that could not be read: counts the answer.
    pub(crate) fn on_unreadable(&self, status: u16, label: &'static str) {
        self.lock().on_unreadable(status, label);
    }

    /// Counts filler bytes written.
    pub(crate) fn on_filler(&self, n: u64) {
        self.filler_sent.fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn stats(&self) -> Stats {
        let mut stats = self.lock().stats();
        stats.connections = self.connections.load(Ordering::Relaxed);
        stats.filler_bytes = self.filler_sent.load(Ordering::Relaxed);
        stats
    }

    pub(crate) fn push_faults(&self, faults: &[Fault]) -> usize {
        let mut up = self.lock();
        up.push_faults(faults.iter().cloned());
        up.stats().script_remaining
    }

    pub(crate) fn set_down(&self, down: bool) {
        self.lock().set_down(down);
    }

    pub(crate) fn is_down(&self) -> bool {
        self.lock().is_down()
    }

    /// Clears the counters and the upstream's memory (not the script, the switch, the
    /// clock).
    pub(crate) fn reset(&self) {
        self.lock().reset();
        self.connections.store(0, Ordering::Relaxed);
        self.filler_sent.store(0, Ordering::Relaxed);
    }

    /// The `date` header for answers the mock writes itself.
    pub(crate) fn date(&self) -> (String, String) {
        let date = steadfast_core::date::ImfFixdate(self.clock.wall()).to_string();
        ("date".to_owned(), date)
    }
}
