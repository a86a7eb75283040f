//! A steadfast client's side of Redis (feature `client`): leases of shared request and
//! token limits, the settling of token leases, and the sync of shared key states and
//! breakers, for any face that drives a [`steadfast_http::Session`]. The face gives
//! the clock: `now` reads the core's instant, and an ask's deadline is a Tokio
//! instant.

use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use steadfast_core::ids::EndpointId;
use steadfast_core::shared::StoreReply;
use steadfast_core::shared::breakers::SharedOpen;
use steadfast_core::time::Timestamp;
use steadfast_http::{
    KeyPublish, LeaseAnswer, LeaseAsk, LeaseKind, Shared, SharedKeyState, TokenSettle,
};

use crate::{Decision, LimitKey, Rate, RedisStore, TokenRate};

/// One endpoint's shared limits as Redis counts them.
#[derive(Debug, Clone)]
struct Limits {
    key: LimitKey,
    requests: Rate,
    tokens: Option<TokenRate>,
}

/// The store and, per endpoint (in engine order), its shared limits.
#[derive(Debug, Clone)]
pub struct ClientStore {
    store: RedisStore,
    limits: Arc<[Option<Limits>]>,
    /// Answers that came after their ask's deadline, for the next sync to report.
    late: Arc<Mutex<Vec<Late>>>,
}

/// A lease answer that came after its ask's deadline: the engine had put the
/// endpoint on its fallback, and a grant ends it (the store counted it).
#[derive(Debug, Clone, Copy)]
struct Late {
    ask: LeaseAsk,
    reply: StoreReply,
    asked: Timestamp,
}

/// The most late answers kept between two syncs; past it, the oldest is dropped.
const KEEP_LATE: usize = 16;

/// What a face holds that the background sync needs.
pub trait SharesState: Send + Sync + 'static {
    /// The store, when the client has one.
    fn client_store(&self) -> Option<&ClientStore>;
    /// The client's shared state.
    fn shared(&self) -> &Shared;
    /// The core's instant now, on the client's clock.
    fn now(&self) -> Timestamp;
}

impl ClientStore {
    /// The limits of `shared`'s endpoints, named after the endpoints (an endpoint
    /// whose name is no valid store id is never granted a lease: it runs on its
    /// fallback).
    pub fn new(store: RedisStore, shared: &Shared) -> ClientStore {
        let limits = (0..shared.endpoint_count())
            .map(|i| {
                let id = EndpointId(u16::try_from(i).unwrap_or(u16::MAX));
                let (name, limit) = shared.shared_limit(id)?;
                let tokens = shared
                    .shared_token_limit(id)
                    .map(|(per_minute, burst)| TokenRate {
                        per_minute: u32::try_from(per_minute).unwrap_or(u32::MAX),
                        burst: u32::try_from(burst).unwrap_or(u32::MAX),
                    });
                Some(Limits {
                    key: LimitKey::new(name).ok()?,
                    requests: Rate {
                        per_minute: limit.per_minute(),
                        burst: limit.burst,
                    },
                    tokens,
                })
            })
            .collect();
        ClientStore {
            store,
            limits,
            late: Arc::default(),
        }
    }

    /// Asks Redis for `ask`'s lease, waiting no longer than `deadline` (the ask's
    /// `expires`): past it the ask fails. The core turns the script's answer into the
    /// lease ([`StoreReply::lease_answer`]: the round trip comes off its validity).
    ///
    /// The Redis call itself runs on (bounded by the store's call timeout, on a task
    /// of the current Tokio runtime): an answer that comes after `deadline` is
    /// reported to the engine on the next [`ClientStore::sync`], and a grant then
    /// ends the fallback the failed ask began.
    pub async fn lease(
        &self,
        ask: LeaseAsk,
        now: impl Fn() -> Timestamp,
        deadline: tokio::time::Instant,
    ) -> LeaseAnswer {
        let asked = now();
        let (tx, rx) = tokio::sync::oneshot::channel();
        let this = self.clone();
        tokio::spawn(async move {
            let reply = this.reply(ask).await;
            // The receiver is gone once `deadline` passed: the answer is late.
            if let Err(reply) = tx.send(reply) {
                this.keep_late(Late { ask, reply, asked });
            }
        });
        match tokio::time::timeout_at(deadline, rx).await {
            Ok(Ok(reply)) => reply.lease_answer(asked, now()),
            _ => LeaseAnswer::Failed,
        }
    }

    fn keep_late(&self, late: Late) {
        let mut kept = self.late.lock().unwrap_or_else(PoisonError::into_inner);
        if kept.len() >= KEEP_LATE {
            kept.remove(0);
        }
        kept.push(late);
    }

    /// Reports the late answers kept since the last sync to `shared`'s engine.
    fn report_late(&self, shared: &Shared, now: &impl Fn() -> Timestamp) {
        let late = std::mem::take(&mut *self.late.lock().unwrap_or_else(PoisonError::into_inner));
        for l in late {
            let at = now();
            shared.on_lease(at, &l.ask, l.reply.lease_answer(l.asked, at));
        }
    }

    /// What Redis answers to `ask` (each Redis call bounded by the store's call
    /// timeout).
    async fn reply(&self, ask: LeaseAsk) -> StoreReply {
        let Some(Some(limits)) = self.limits.get(usize::from(ask.endpoint.0)) else {
            return StoreReply::Failed;
        };
        match (ask.kind, limits.tokens) {
            (LeaseKind::Requests, _) => {
                match self
                    .store
                    .lease(&limits.key, limits.requests, ask.want)
                    .await
                {
                    Ok(l) => StoreReply::Requests {
                        granted: l.requests,
                        valid_for: l.valid_for,
                        retry_in: l.retry_in,
                    },
                    _ => StoreReply::Failed,
                }
            }
            (LeaseKind::Tokens, Some(rate)) => {
                match self.store.reserve_tokens(&limits.key, rate, ask.want).await {
                    Ok(Decision::Granted { n, .. }) => StoreReply::Tokens {
                        granted: n,
                        per_minute: rate.per_minute,
                    },
                    Ok(Decision::NotBefore { wait, .. }) => StoreReply::TokensNotBefore { wait },
                    Err(_) => StoreReply::Failed,
                }
            }
            (LeaseKind::Tokens, None) => StoreReply::Failed,
        }
    }

    /// Reports the lease answers that came after their deadline, settles ended token
    /// leases, then writes what the client learned of its keys
    /// and breakers and reads back the state of every shared breaker (one `GET` and
    /// `PTTL` each) and every key (one pipeline per endpoint). A failed
    /// Redis call skips its part: the next round tries again (a settle is lost: the
    /// bucket keeps the charge, the conservative side).
    pub async fn sync(&self, shared: &Shared, now: impl Fn() -> Timestamp) {
        self.report_late(shared, &now);
        for settle in shared.take_token_settles() {
            self.settle(settle).await;
        }
        let disable_for = shared.policy().shared.disable_for;
        for publish in shared.take_key_publishes() {
            let target = publish.target();
            let Some(id) = shared.shared_key_id(target.endpoint, target.key.0) else {
                continue;
            };
            let _ = match publish {
                KeyPublish::Cool { for_, .. } => self.store.cool_key(&id, for_).await.map(|_| ()),
                KeyPublish::Disable { .. } => self.store.disable_key(&id, disable_for).await,
                KeyPublish::Enable { .. } => self.store.enable_key(&id).await,
            };
        }
        self.sync_breakers(shared, &now).await;
        for e in 0..shared.endpoint_count() {
            let endpoint = EndpointId(u16::try_from(e).unwrap_or(u16::MAX));
            let ids: Vec<String> = (0..u16::MAX)
                .map_while(|k| shared.shared_key_id(endpoint, k))
                .collect();
            let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
            let Ok(states) = self.store.key_states(&refs).await else {
                continue;
            };
            let states: Vec<SharedKeyState> = states
                .into_iter()
                .map(|s| SharedKeyState {
                    cooling_for: s.cooling_for,
                    disabled: s.disabled,
                })
                .collect();
            shared.on_shared_keys(now(), endpoint, &states);
        }
    }

    /// Writes the breakers that opened here (each open until its next probe) and
    /// reads back every shared breaker's open time. A failed call skips its part, as
    /// for keys: the breakers run on their own decisions meanwhile.
    async fn sync_breakers(&self, shared: &Shared, now: &impl Fn() -> Timestamp) {
        for publish in shared.take_breaker_publishes() {
            let Some(id) = shared.shared_breaker_id(publish.endpoint) else {
                continue;
            };
            let open_for = publish.open_for(now());
            if !open_for.is_zero() {
                let _ = self
                    .store
                    .open_endpoint(id, open_for, publish.whole())
                    .await;
            }
        }
        for e in 0..shared.endpoint_count() {
            let endpoint = EndpointId(u16::try_from(e).unwrap_or(u16::MAX));
            let Some(id) = shared.shared_breaker_id(endpoint) else {
                continue;
            };
            if let Ok(open) = self.store.endpoint_open(id).await {
                let open = open.map(|o| SharedOpen {
                    left: o.left,
                    whole: o.whole,
                });
                shared.on_shared_breaker(now(), endpoint, open);
            }
        }
    }

    /// Gives back a token lease's unspent tokens, or charges its overrun.
    async fn settle(&self, settle: TokenSettle) {
        let limits = self.limits.get(usize::from(settle.endpoint.0));
        let Some(Some(Limits {
            key,
            tokens: Some(rate),
            ..
        })) = limits
        else {
            return;
        };
        let reserved = u32::try_from(settle.reserved)
            .unwrap_or(u32::MAX)
            .min(rate.burst);
        let _ = self
            .store
            .reconcile_tokens(key, *rate, reserved, settle.spent)
            .await;
    }
}

/// Starts the sync of a client with a store (token settles, key states) on
/// `runtime`, every `shared.key_sync`. It ends when the client is dropped.
pub fn spawn_sync<T: SharesState>(runtime: &tokio::runtime::Handle, client: &Arc<T>) {
    if client.client_store().is_none() {
        return;
    }
    let every = client.shared().policy().shared.key_sync;
    let weak = Arc::downgrade(client);
    runtime.spawn(sync_loop(weak, every));
}

async fn sync_loop<T: SharesState>(weak: Weak<T>, every: Duration) {
    loop {
        tokio::time::sleep(every).await;
        let Some(client) = weak.upgrade() else {
            return;
        };
        if let Some(store) = client.client_store() {
            store.sync(client.shared(), || client.now()).await;
        }
    }
}
