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
use steadfast_core::idempotency::IdempotencyKey;
use steadfast_core::shared::FailMode;
use steadfast_redis::{Claim, RedisStore};

/// How long a stored success is kept for other workers.
const KEEP_DONE: Duration = Duration::from_secs(24 * 60 * 60);

/// A name for this worker no other has: its process id and the instant it started.
pub fn owner() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("batch-{}-{nanos}", std::process::id())
}

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

    /// The ledger's name for a line's id (its idempotency key: stable, printable).
    fn key(id: &str) -> String {
        let mut buf = [0u8; 36];
        IdempotencyKey::from_business_id(id.as_bytes())
            .as_str(&mut buf)
            .to_owned()
    }

    /// Waits for this worker's turn on `id`: its claim, or another worker's answer.
    pub async fn turn(&self, id: &str) -> Turn {
        let key = Ledger::key(id);
        loop {
            match self.store.claim(&key, &self.owner, self.claim_for).await {
                Ok(Claim::Won) => return Turn::Run,
                Ok(Claim::Done(stored)) => match serde_json::from_slice(&stored) {
                    Ok(answer) => return Turn::Done(answer),
                    // Not an answer this program stored: run the line.
                    Err(_) => return Turn::Run,
                },
                Ok(Claim::HeldBy { .. }) => {}
                Err(_) if self.fail == FailMode::Open => return Turn::Run,
                Err(_) => {}
            }
            tokio::time::sleep(self.claim_for / 4).await;
        }
    }

    /// Keeps this worker's claim on `id` alive until the future is dropped (it never
    /// ends by itself).
    pub async fn hold(&self, id: &str) -> Infallible {
        let key = Ledger::key(id);
        loop {
            tokio::time::sleep(self.claim_for / 3).await;
            let _ = self.store.claim(&key, &self.owner, self.claim_for).await;
        }
    }

    /// Records the line's end: a success is stored for the other workers, a failure
    /// gives the claim up.
    pub async fn finish(&self, id: &str, answer: Option<&Value>) {
        let key = Ledger::key(id);
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
