//! The replicas' section of a report: how they shared the limit, and what it cost.

use serde::Serialize;
use steadfast_core::ids::Target;
use steadfast_core::time::Timestamp;

use super::round;
use crate::driver::{Request, Run};
use crate::reply::OutcomeClass;

/// What the replicas of a run did with their request limit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReplicaReport {
    /// Replicas (engines).
    pub replicas: u16,
    /// Whose limit they admitted on: `local`, `shared` or `leased`.
    pub sharing: &'static str,
    /// The most requests a lease asked for (0 when local).
    pub lease: u32,
    /// The store's round trip, in milliseconds.
    pub store_lag_ms: f64,
    /// 429s from the upstream, every replica's.
    pub throttled: u64,
    /// Requests sent to a key while a 429 the upstream had already answered (to any
    /// replica) said not yet.
    pub early_requests: u64,
    /// Lease asks sent to the store.
    pub store_asks: u64,
    /// The share of admissions (requests sent) decided without asking the store:
    /// `1 − asks / admissions`, at least 0.
    pub local_share: f64,
    /// Requests the store leased.
    pub leased: u64,
    /// Leased requests never spent: they expired (or the run ended first), counted by
    /// the store all the same.
    pub expired: u64,
    /// Asks that failed or timed out (the fallback then applied).
    pub store_failures: u64,
    /// Admissions made on the fallback (fail open: the local limits alone) while the
    /// store could not be reached.
    pub fallback_admissions: u64,
    /// Per replica.
    pub per_replica: Vec<ReplicaLine>,
}

/// One replica's share of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReplicaLine {
    /// Its seed.
    pub seed: u64,
    /// Calls it made.
    pub calls: u64,
    /// Calls that succeeded.
    pub succeeded: u64,
    /// Requests it sent.
    pub requests: u64,
    /// 429s it got.
    pub throttled: u64,
    /// Lease asks it sent.
    pub store_asks: u64,
}

impl ReplicaReport {
    /// The section of `run`, when it ran replicas.
    pub fn new(run: &Run) -> Option<ReplicaReport> {
        let rr = run.replicas.as_ref()?;
        let n = rr.seeds.len().max(1);
        let mut per_replica: Vec<ReplicaLine> = rr
            .seeds
            .iter()
            .enumerate()
            .map(|(i, &seed)| ReplicaLine {
                seed,
                calls: 0,
                succeeded: 0,
                requests: 0,
                throttled: 0,
                store_asks: rr.shared.get(i).map_or(0, |c| c.asks),
            })
            .collect();
        for (i, c) in run.calls.iter().enumerate() {
            if let Some(line) = per_replica.get_mut(i % n) {
                line.calls += 1;
                line.succeeded += u64::from(c.finish.is_success());
            }
        }
        for r in &run.requests {
            if let Some(line) = per_replica.get_mut(usize::from(r.replica)) {
                line.requests += 1;
                line.throttled += u64::from(r.reply.class() == OutcomeClass::Throttled);
            }
        }
        let asks: u64 = rr.shared.iter().map(|c| c.asks).sum();
        let leased: u64 = rr.shared.iter().map(|c| c.leased).sum();
        let spent: u64 = rr.shared.iter().map(|c| c.spent).sum();
        let admissions = run.requests.len() as u64;
        let local_share = if admissions == 0 {
            1.0
        } else {
            round((1.0 - asks as f64 / admissions as f64).max(0.0), 4)
        };
        Some(ReplicaReport {
            replicas: u16::try_from(rr.seeds.len()).unwrap_or(u16::MAX),
            sharing: rr.replicas.sharing.name(),
            lease: rr.lease,
            store_lag_ms: round(rr.replicas.store_lag.as_secs_f64() * 1e3, 3),
            throttled: per_replica.iter().map(|l| l.throttled).sum(),
            early_requests: early_requests(&run.requests),
            store_asks: asks,
            local_share,
            leased,
            expired: leased.saturating_sub(spent),
            store_failures: rr.shared.iter().map(|c| c.failures).sum(),
            fallback_admissions: rr.shared.iter().map(|c| c.fallback_admissions).sum(),
            per_replica,
        })
    }
}

/// Requests (in sending order) sent to a key at an instant some earlier 429 on it,
/// already answered, had hinted not yet: `answered ≤ at < answered + hint`.
pub fn early_requests(requests: &[Request]) -> u64 {
    let mut hints: Vec<(Timestamp, Target, Timestamp)> = requests
        .iter()
        .filter_map(|r| Some((r.answered, r.target, r.answered.saturating_add(r.hint?))))
        .collect();
    hints.sort_by_key(|h| h.0);
    let mut until: Vec<(Target, Timestamp)> = Vec::new();
    let mut next = hints.iter().peekable();
    let mut early = 0;
    for r in requests {
        while let Some(&&(_, target, end)) = next.peek().filter(|h| h.0 <= r.at) {
            match until.iter_mut().find(|(t, _)| *t == target) {
                Some((_, u)) => *u = (*u).max(end),
                None => until.push((target, end)),
            }
            next.next();
        }
        if until.iter().any(|(t, u)| *t == r.target && r.at < *u) {
            early += 1;
        }
    }
    early
}
