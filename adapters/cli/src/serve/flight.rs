//! Requests that carry the same `Idempotency-Key`: while one runs, the others wait for
//! its answer (single flight) and get the same bytes; a success is kept for
//! `replay_for` and replayed to a later request with that key. Keys are scoped by the
//! caller's gateway key and the path, so two clients never see each other's answers.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

use super::ledger::SharedFlights;
use super::reply::Answer;

/// Whose request, where, with which key.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FlightKey {
    /// The caller's gateway key index (`None`: no authentication).
    pub caller: Option<usize>,
    /// The request's path.
    pub path: &'static str,
    /// Whether it asked for a stream (a whole answer is never sent for a stream).
    pub stream: bool,
    /// The client's `Idempotency-Key`.
    pub key: String,
}

type Slot = watch::Receiver<Option<Arc<Answer>>>;

#[derive(Debug, Default)]
struct State {
    running: HashMap<FlightKey, Slot>,
    stored: HashMap<FlightKey, Arc<Answer>>,
    /// When each stored answer expires, oldest first.
    expiry: VecDeque<(Instant, FlightKey)>,
}

/// The flights in progress and the stored answers.
#[derive(Debug)]
pub struct Flights {
    state: Mutex<State>,
    replay_for: Duration,
    max_stored: usize,
    /// The ledger shared with other replicas, if any.
    shared: Option<SharedFlights>,
}

/// What a request with an idempotency key does.
#[derive(Debug)]
pub enum Join {
    /// It runs the call, and must hand its answer to [`Lead::finish`].
    Lead(Lead),
    /// Another request with the key is running: wait for its answer with
    /// [`Flights::wait`].
    Follow(Slot),
    /// A stored answer to send again.
    Replay(Arc<Answer>),
}

/// The running request of a key. Dropped without finishing (its client went away),
/// it lets the next waiting request run instead.
#[derive(Debug)]
pub struct Lead {
    flights: Arc<Flights>,
    key: FlightKey,
    tx: watch::Sender<Option<Arc<Answer>>>,
    /// It holds the key's claim in the shared ledger, not yet finished.
    claimed: bool,
}

impl Flights {
    /// Stored answers kept `replay_for`, at most `max_stored` of them.
    pub fn new(replay_for: Duration, max_stored: usize) -> Flights {
        Flights {
            state: Mutex::new(State::default()),
            replay_for,
            max_stored,
            shared: None,
        }
    }

    /// The same flights, their leads also claiming their keys in `shared`.
    #[must_use]
    pub fn with_shared(mut self, shared: Option<SharedFlights>) -> Flights {
        self.shared = shared;
        self
    }

    /// The ledger shared with other replicas, if any.
    pub fn shared(&self) -> Option<&SharedFlights> {
        self.shared.as_ref()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Joins the flight of `key`.
    pub fn join(self: &Arc<Self>, key: FlightKey) -> Join {
        let now = Instant::now();
        let mut s = self.lock();
        s.expire(now);
        if let Some(done) = s.stored.get(&key) {
            return Join::Replay(Arc::clone(done));
        }
        if let Some(rx) = s.running.get(&key) {
            return Join::Follow(rx.clone());
        }
        let (tx, rx) = watch::channel(None);
        s.running.insert(key.clone(), rx);
        Join::Lead(Lead {
            flights: Arc::clone(self),
            key,
            tx,
            claimed: false,
        })
    }

    /// The answer of the running request followed, or `None` when it went away
    /// without one (then join again).
    pub async fn wait(mut slot: Slot) -> Option<Arc<Answer>> {
        let got = slot.wait_for(Option::is_some).await.ok()?;
        got.clone()
    }

    /// How many answers are stored.
    pub fn stored(&self) -> usize {
        self.lock().stored.len()
    }
}

impl State {
    fn expire(&mut self, now: Instant) {
        while let Some((at, _)) = self.expiry.front() {
            if *at > now {
                break;
            }
            if let Some((_, key)) = self.expiry.pop_front() {
                self.stored.remove(&key);
            }
        }
    }
}

impl Lead {
    /// Hands `answer` to the waiting requests; stores it for replay when `keep` (a
    /// success).
    pub fn finish(mut self, answer: Answer, keep: bool) {
        if let Some(shared) = self.flights.shared.as_ref() {
            shared.finish(&self.key, &answer, keep);
        }
        self.claimed = false;
        self.hand_over(answer, keep);
    }

    /// Hands another replica's `answer` (from the shared ledger) to the waiting
    /// requests, and keeps it for replay.
    pub fn finish_replayed(mut self, answer: Answer) {
        self.claimed = false;
        self.hand_over(answer, true);
    }

    /// Notes that the lead holds its key's claim in the shared ledger.
    pub fn claimed(&mut self) {
        self.claimed = true;
    }

    fn hand_over(&self, answer: Answer, keep: bool) {
        let answer = Arc::new(answer);
        let f = &self.flights;
        {
            let mut s = f.lock();
            s.running.remove(&self.key);
            if keep && !f.replay_for.is_zero() && f.max_stored > 0 {
                while s.stored.len() >= f.max_stored {
                    let Some((_, old)) = s.expiry.pop_front() else {
                        break;
                    };
                    s.stored.remove(&old);
                }
                s.expiry
                    .push_back((Instant::now() + f.replay_for, self.key.clone()));
                s.stored.insert(self.key.clone(), Arc::clone(&answer));
            }
        }
        let _ = self.tx.send(Some(answer));
    }
}

impl Drop for Lead {
    fn drop(&mut self) {
        // A lead that goes away unfinished gives its shared claim up at once.
        if let (true, Some(shared)) = (self.claimed, self.flights.shared.as_ref()) {
            shared.release(&self.key);
        }
        // Finished or not, the key no longer runs; a follower of an unfinished lead sees
        // its channel close and joins again.
        let mut s = self.flights.lock();
        if s.running
            .get(&self.key)
            .is_some_and(|rx| rx.same_channel(&self.tx.subscribe()))
        {
            s.running.remove(&self.key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(k: &str) -> FlightKey {
        FlightKey {
            caller: Some(0),
            path: "/v1/chat/completions",
            stream: false,
            key: k.into(),
        }
    }

    fn answer(body: &'static str) -> Answer {
        Answer {
            status: http::StatusCode::OK,
            content_type: "application/json",
            headers: Vec::new(),
            body: bytes::Bytes::from_static(body.as_bytes()),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn followers_get_the_leaders_answer_and_a_success_is_replayed_until_it_expires() {
        let flights = Arc::new(Flights::new(Duration::from_secs(60), 10));
        let Join::Lead(lead) = flights.join(key("a")) else {
            panic!("first leads")
        };
        let Join::Follow(slot) = flights.join(key("a")) else {
            panic!("second follows")
        };
        let other = flights.join(key("b"));
        assert!(
            matches!(other, Join::Lead(_)),
            "another key runs on its own"
        );
        let waiter = tokio::spawn(Flights::wait(slot));
        lead.finish(answer("{\"x\":1}"), true);
        let got = waiter.await.unwrap().unwrap();
        assert_eq!(got.body, "{\"x\":1}");
        let Join::Replay(again) = flights.join(key("a")) else {
            panic!("stored")
        };
        assert_eq!(again.body, got.body);
        let mut elsewhere = key("a");
        elsewhere.caller = Some(1);
        assert!(
            matches!(flights.join(elsewhere), Join::Lead(_)),
            "scoped by caller"
        );
        tokio::time::advance(Duration::from_secs(61)).await;
        assert!(matches!(flights.join(key("a")), Join::Lead(_)), "expired");
    }

    #[tokio::test(start_paused = true)]
    async fn a_failure_is_shared_but_not_stored_and_a_vanished_lead_hands_over() {
        let flights = Arc::new(Flights::new(Duration::from_secs(60), 10));
        let Join::Lead(lead) = flights.join(key("a")) else {
            panic!()
        };
        let Join::Follow(slot) = flights.join(key("a")) else {
            panic!()
        };
        let mut failed = answer("{\"error\":{}}");
        failed.status = http::StatusCode::SERVICE_UNAVAILABLE;
        lead.finish(failed, false);
        assert_eq!(Flights::wait(slot).await.unwrap().status.as_u16(), 503);
        let Join::Lead(lead) = flights.join(key("a")) else {
            panic!("not stored")
        };
        let Join::Follow(slot) = flights.join(key("a")) else {
            panic!()
        };
        drop(lead);
        assert_eq!(Flights::wait(slot).await, None, "the follower joins again");
        assert!(matches!(flights.join(key("a")), Join::Lead(_)));
    }

    #[tokio::test(start_paused = true)]
    async fn the_store_keeps_at_most_its_size() {
        let flights = Arc::new(Flights::new(Duration::from_secs(60), 2));
        for k in ["a", "b", "c"] {
            let Join::Lead(lead) = flights.join(key(k)) else {
                panic!()
            };
            lead.finish(answer("{}"), true);
        }
        assert_eq!(flights.stored(), 2);
        assert!(
            matches!(flights.join(key("a")), Join::Lead(_)),
            "the oldest went"
        );
        assert!(matches!(flights.join(key("c")), Join::Replay(_)));
    }
}
