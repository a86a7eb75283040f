//! The shared idempotency ledger of `[shared] ledger = true`: batch workers on any
//! machine given the same input run each id once between them.
//!
//! Before a line runs, its id is claimed in Redis for `claim_for` (renewed while the
//! line runs). A line another worker holds waits and asks again, so a worker that
//! dies leaves its lines to the others once their claims lapse. A finished success is
//! stored; a worker that finds an id done writes the stored answer instead of
//! running it again. A failure gives the claim up, for whichever worker tries next.
//! While Redis cannot be reached, the policy's `shared.fail` decides: `open` runs the
//! line anyway (the provider's idempotency key still guards it), `closed` waits.

use std::convert::Infallible;
use std::time::Duration;

use serde_json::Value;
use steadfast_core::shared::FailMode;
use steadfast_core::shared::claim::ClaimConfig;
use steadfast_redis::RedisStore;

use crate::shared::{EntryClaim, EntryTurn, ledger_name};

/// How long a stored success is kept for other workers.
const KEEP_DONE: Duration = Duration::from_secs(24 * 60 * 60);

/// A worker's view of the ledger.
#[derive(Debug, Clone)]
pub struct Ledger {
    store: RedisStore,
    owner: String,
    claim_for: Duration,
    fail: FailMode,
}

/// What a worker does with a line.
#[derive(Debug)]
pub enum Turn {
    /// Run it: this worker holds its claim.
    Run,
    /// Another worker finished it: its stored answer.
    Done(Value),
}

impl Ledger {
    /// A ledger on `store` for this worker (`owner` is unique to it).
    pub fn new(store: RedisStore, owner: String, claim_for: Duration, fail: FailMode) -> Ledger {
        Ledger {
            store,
            owner,
            claim_for,
            fail,
        }
    }

    /// Waits for this worker's turn on `id`: its claim, or another worker's answer
    /// (an entry this program did not store runs the line). The claim comes back
    /// with a turn to run, for [`Ledger::hold`].
    pub async fn turn(&self, id: &str) -> (Turn, EntryClaim) {
        let config = ClaimConfig::new(self.claim_for, self.fail);
        let mut claim = EntryClaim::new(ledger_name(id.as_bytes()), config);
        let turn = match claim.turn(&self.store, &self.owner).await {
            EntryTurn::Run => Turn::Run,
            EntryTurn::Done(bytes) => match serde_json::from_slice(&bytes) {
                Ok(answer) => Turn::Done(answer),
                Err(_) => Turn::Run,
            },
        };
        (turn, claim)
    }

    /// Keeps this worker's `claim` alive until the future is dropped (it never ends
    /// by itself).
    pub async fn hold(&self, claim: &mut EntryClaim) -> Infallible {
        claim.hold(&self.store, &self.owner).await
    }

    /// Records the line's end: a success is stored for the other workers, a failure
    /// gives the claim up.
    pub async fn finish(&self, id: &str, answer: Option<&Value>) {
        let key = ledger_name(id.as_bytes());
        let stored = answer.and_then(|a| serde_json::to_vec(a).ok());
        let _ = match stored {
            Some(bytes) => self
                .store
                .complete(&key, &self.owner, &bytes, KEEP_DONE)
                .await
                .map(|_| ()),
            None => self.store.release(&key, &self.owner).await.map(|_| ()),
        };
    }
}
