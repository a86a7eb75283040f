//! What the server saw: counts by status, fault, path and idempotency key.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

/// A snapshot of the upstream's counters ([`crate::Upstream::stats`]; the mock serves
/// it as JSON from `GET /__stats`). Only API requests (`/v1/…`) are counted, not the
/// mock's `/__…` control endpoints; `connections` and `filler_bytes` are the socket's,
/// counted by the mock.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stats {
    /// API requests received (including replays, conflicts and faulted ones).
    pub total_requests: u64,
    /// Connections accepted.
    pub connections: u64,
    /// Requests whose work was done (a success generated; see [`crate::Fault`] for the
    /// "work done" faults whose response is then lost).
    pub processed: u64,
    /// Requests answered with a stored response (`idempotent-replayed: true`).
    pub replayed: u64,
    /// Requests that came back before the wait their idempotency key was told (by a
    /// `retry-after-ms` / `retry-after` in seconds on an earlier answer) had passed:
    /// a client that honours server hints keeps this at 0.
    #[serde(default)]
    pub early: u64,
    /// Responses by status code (resets and hangs have none).
    pub by_status: BTreeMap<u16, u64>,
    /// Faults applied, by name: the scripted [`crate::Fault::kind_name`]s (`ok`,
    /// `status`, `latency`, `hang`, `reset`, `reset_before_request`, `malformed`,
    /// `truncated_body`, `stream_cut`, `trickle`, `huge_body`, `huge_header`, `filler`), the
    /// scenarios' own (`status` for random 5xx and overloaded answers, `rate_limit` for
    /// every 429 rate limit, `outage` (also the outage switch), `auth` for revoked keys,
    /// `quota` for exhausted ones, `reset`, `malformed`, `truncated_body`, `hang`,
    /// `stream_cut`), and the request errors
    /// (`missing_auth`, `bad_request`, `not_found`, `conflict`, `head_too_large`,
    /// `body_too_large`). Plain scenario successes and replays are not faults.
    pub by_fault: BTreeMap<String, u64>,
    /// API requests by path (unknown paths count as `other`).
    pub by_path: BTreeMap<String, u64>,
    /// Per `Idempotency-Key`: what happened to the requests carrying it.
    pub keys: BTreeMap<String, KeyStats>,
    /// Requests whose key was not counted because [`crate::UpstreamConfig::max_keys`]
    /// keys were already.
    pub keys_untracked: u64,
    /// Scripted faults not consumed yet.
    pub script_remaining: usize,
    /// Whether the outage switch ([`crate::Upstream::set_down`]) is on.
    pub down: bool,
    /// Filler bytes ([`crate::Fault::Filler`]) written to clients: an upper bound on
    /// what they read of such bodies.
    #[serde(default)]
    pub filler_bytes: u64,
}

impl Stats {
    /// Responses with this status.
    pub fn status(&self, status: u16) -> u64 {
        self.by_status.get(&status).copied().unwrap_or(0)
    }

    /// Times this fault was applied.
    pub fn fault(&self, name: &str) -> u64 {
        self.by_fault.get(name).copied().unwrap_or(0)
    }

    /// The counters of one idempotency key.
    pub fn key(&self, key: &str) -> Option<&KeyStats> {
        self.keys.get(key)
    }
}

/// What happened to the requests carrying one `Idempotency-Key`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyStats {
    /// Requests that carried the key.
    pub attempts: u64,
    /// Times its work was done (a correct client with a correct server: at most 1).
    pub processed: u64,
    /// Times a stored response was replayed.
    pub replayed: u64,
    /// Times it was refused with 409 because an earlier attempt was in progress.
    pub conflicts: u64,
    /// Requests that came before the wait an earlier answer to this key asked for
    /// (see [`Stats::early`]).
    #[serde(default)]
    pub early: u64,
}

/// Adds one.
pub(crate) fn bump(n: &mut u64) {
    *n = n.saturating_add(1);
}

/// The counters as the upstream keeps them.
#[derive(Default)]
pub(crate) struct StatsState {
    pub total_requests: u64,
    pub processed: u64,
    pub replayed: u64,
    pub early: u64,
    pub by_status: HashMap<u16, u64>,
    pub by_fault: HashMap<&'static str, u64>,
    pub by_path: HashMap<&'static str, u64>,
    pub keys: HashMap<String, KeyStats>,
    pub keys_untracked: u64,
}

impl StatsState {
    pub fn status(&mut self, status: u16) {
        bump(self.by_status.entry(status).or_default());
    }

    pub fn fault(&mut self, name: &'static str) {
        bump(self.by_fault.entry(name).or_default());
    }

    pub fn path(&mut self, path: &'static str) {
        bump(self.by_path.entry(path).or_default());
    }

    /// The counters of a key, created unless `max_keys` are counted already.
    pub fn key(&mut self, key: &str, max_keys: usize) -> Option<&mut KeyStats> {
        if !self.keys.contains_key(key) {
            if self.keys.len() >= max_keys {
                bump(&mut self.keys_untracked);
                return None;
            }
            self.keys.insert(key.to_owned(), KeyStats::default());
        }
        self.keys.get_mut(key)
    }

    /// Applies `f` to a key's counters (when it is counted).
    pub fn on_key(&mut self, key: Option<&str>, max_keys: usize, f: impl FnOnce(&mut KeyStats)) {
        if let Some(k) = key.and_then(|k| self.key(k, max_keys)) {
            f(k);
        }
    }

    pub fn snapshot(&self, script_remaining: usize, down: bool) -> Stats {
        let named =
            |m: &HashMap<&'static str, u64>| m.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect();
        Stats {
            total_requests: self.total_requests,
            connections: 0,
            processed: self.processed,
            replayed: self.replayed,
            early: self.early,
            by_status: self.by_status.iter().map(|(k, v)| (*k, *v)).collect(),
            by_fault: named(&self.by_fault),
            by_path: named(&self.by_path),
            keys: self.keys.iter().map(|(k, v)| (k.clone(), *v)).collect(),
            keys_untracked: self.keys_untracked,
            script_remaining,
            down,
            filler_bytes: 0,
        }
    }
}
