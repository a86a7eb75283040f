//! The shared idempotency ledger of gateway replicas (`[shared] ledger = true`): a
//! request with an `Idempotency-Key` that one replica is serving is not served again
//! by another; the others wait for its answer and replay it, and a stored success is
//! replayed by every replica.
//!
//! This sits behind the local single flight ([`super::flight`]): only the request that
//! leads its key on this replica claims it in Redis. Its answer is stored (a success
//! worth replaying) or its claim given up, when the lead finishes.

use std::time::Duration;

use bytes::Bytes;
use http::{HeaderName, HeaderValue, StatusCode, header};
use serde::{Deserialize, Serialize};
use steadfast_core::shared::FailMode;
use steadfast_redis::RedisStore;

use super::flight::FlightKey;
use super::reply::{Answer, RETRY_AFTER_MS, X_ATTEMPTS, X_ENDPOINT, X_GIVE_UP};
use crate::shared::{claim_turn, ledger_name};

/// The content types a stored answer may have, as the gateway writes them.
const CONTENT_TYPES: [&str; 2] = ["application/json", super::stream::EVENT_STREAM];
/// The headers a stored answer may carry.
const HEADERS: [HeaderName; 5] = [
    header::RETRY_AFTER,
    RETRY_AFTER_MS,
    X_ATTEMPTS,
    X_ENDPOINT,
    X_GIVE_UP,
];

/// A replica's view of the ledger.
#[derive(Debug, Clone)]
pub struct SharedFlights {
    store: RedisStore,
    owner: String,
    claim_for: Duration,
    keep: Duration,
    fail: FailMode,
}

/// What the leading request of a key does.
#[derive(Debug)]
pub enum SharedTurn {
    /// Serve it: this replica holds the key.
    Run,
    /// Another replica answered it: send this again.
    Done(Answer),
}

/// An answer as the ledger stores it.
#[derive(Serialize, Deserialize)]
struct Stored {
    status: u16,
    content_type: String,
    headers: Vec<(String, String)>,
    body: String,
}

impl SharedFlights {
    /// The ledger on `store` for this replica; stored answers live `keep`.
    pub fn new(store: RedisStore, claim_for: Duration, keep: Duration, fail: FailMode) -> Self {
        SharedFlights {
            store,
            owner: crate::shared::owner("serve"),
            claim_for,
            keep,
            fail,
        }
    }

    /// The ledger's name for a key: the same on every replica, whatever it holds.
    fn name(key: &FlightKey) -> String {
        let scoped = format!("{:?}|{}|{}|{}", key.caller, key.path, key.stream, key.key);
        ledger_name(scoped.as_bytes())
    }

    /// Waits for this replica's turn on `key`: its claim, or another replica's answer
    /// (an entry it cannot read is served again).
    pub async fn turn(&self, key: &FlightKey) -> SharedTurn {
        let name = SharedFlights::name(key);
        let stored = claim_turn(&self.store, &name, &self.owner, self.claim_for, self.fail).await;
        match stored.as_deref().and_then(decode) {
            Some(answer) => SharedTurn::Done(answer),
            None => SharedTurn::Run,
        }
    }

    /// Records the lead's answer: stored for the others when `keep`, else (or when it
    /// cannot be stored) the claim is given up. Runs on its own task: the client has
    /// its answer already.
    pub fn finish(&self, key: &FlightKey, answer: &Answer, keep: bool) {
        let (ledger, name) = (self.clone(), SharedFlights::name(key));
        let stored = keep.then(|| encode(answer)).flatten();
        tokio::spawn(async move {
            let done = match stored {
                Some(bytes) => ledger
                    .store
                    .complete(&name, &ledger.owner, &bytes, ledger.keep)
                    .await
                    .unwrap_or(false),
                None => false,
            };
            if !done {
                let _ = ledger.store.release(&name, &ledger.owner).await;
            }
        });
    }

    /// Gives up the claim on `key` (its lead went away unanswered).
    pub fn release(&self, key: &FlightKey) {
        let (ledger, name) = (self.clone(), SharedFlights::name(key));
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _ = ledger.store.release(&name, &ledger.owner).await;
            });
        }
    }
}

fn encode(answer: &Answer) -> Option<Vec<u8>> {
    let stored = Stored {
        status: answer.status.as_u16(),
        content_type: answer.content_type.to_owned(),
        headers: answer
            .headers
            .iter()
            .filter_map(|(n, v)| Some((n.as_str().to_owned(), v.to_str().ok()?.to_owned())))
            .collect(),
        body: String::from_utf8(answer.body.to_vec()).ok()?,
    };
    serde_json::to_vec(&stored).ok()
}

fn decode(bytes: &[u8]) -> Option<Answer> {
    let stored: Stored = serde_json::from_slice(bytes).ok()?;
    let content_type = CONTENT_TYPES
        .into_iter()
        .find(|c| *c == stored.content_type)?;
    let headers = stored
        .headers
        .into_iter()
        .filter_map(|(n, v)| {
            let name = HEADERS.into_iter().find(|h| h.as_str() == n)?;
            Some((name, HeaderValue::from_str(&v).ok()?))
        })
        .collect();
    Some(Answer {
        status: StatusCode::from_u16(stored.status).ok()?,
        content_type,
        headers,
        body: Bytes::from(stored.body),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_answer_comes_back_as_it_was() {
        let answer = Answer::json(StatusCode::OK, &serde_json::json!({"id": "x"}))
            .with_header(X_ATTEMPTS, 2u32);
        let back = decode(&encode(&answer).expect("utf-8")).expect("decodes");
        assert_eq!(back.status, StatusCode::OK);
        assert_eq!(back.content_type, "application/json");
        assert_eq!(back.headers, answer.headers);
        assert_eq!(back.body, answer.body);
        assert!(
            decode(b"{\"status\":200,\"content_type\":\"text/html\",\"headers\":[],\"body\":\"\"}")
                .is_none()
        );
    }
}
