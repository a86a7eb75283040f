//! The virtual-time driver: calls arrive, queue for a concurrency slot, and run through
//! the real core [`Engine`] against the simulated [`Upstream`]. Time jumps from event to
//! event; events are ordered by `(instant, sequence number)`, so a run is a pure
//! function of the scenario, the policy and the seed.
//!
//! A run may have several replicas (see [`crate::replicas`]): engines of their own, each
//! with its own slots and queue, in front of the one upstream, with the modelled store
//! of their shared limits between them.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use steadfast_core::breaker::BreakerEvent;
use steadfast_core::engine::{Engine, EngineEvent};
use steadfast_core::ids::{AttemptId, EndpointId, Target};
use steadfast_core::outcome::Outcome;
use steadfast_core::policy::Policy;
use steadfast_core::pool::PoolEvent;
use steadfast_core::retry::{Attempt, Call, Decision, Finish};
use steadfast_core::rng::{self, unit_f64};
use steadfast_core::shared::{LeaseAnswer, LeaseAsk, SharedCounters};
use steadfast_core::time::Timestamp;

use steadfast_upstream::{RequestFacts, Ticket, Upstream, UpstreamConfig, WALL_START};

use crate::breakers::BreakerStore;
use crate::checks::{Checked, Checks, Violation};
use crate::replicas::{ReplicaRun, Replicas, Store, replica_seed};
use crate::reply::{Reply, seen};
use crate::scenario::{Arrival, Scenario};
use crate::{SimError, split_seed};

/// One request as the simulated server saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    /// When it was sent.
    pub at: Timestamp,
    /// The logical call (its arrival index).
    pub call: u32,
    /// The replica that sent it (0 in a run of one).
    pub replica: u16,
    /// The attempt number within the call (1 for the first).
    pub attempt: u32,
    /// Where it went.
    pub target: Target,
    /// What came of it.
    pub reply: Reply,
    /// When the answer reached the client (for a timeout: when the attempt timed out).
    pub answered: Timestamp,
    /// The wait a 429 asked for, exactly; the client must not send to the same key
    /// before `answered + hint`.
    pub hint: Option<core::time::Duration>,
}

/// One logical call, from arrival to finish.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallRecord {
    /// When it arrived (and, if every slot was taken, began to queue).
    pub arrived: Timestamp,
    /// When it got a concurrency slot and started.
    pub started: Timestamp,
    /// When it finished.
    pub finished: Timestamp,
    /// How.
    pub finish: Finish,
}

/// Everything a run produced; [`crate::Report`] summarises it.
#[derive(Debug, Clone)]
pub struct Run {
    /// The scenario run (with `--calls` applied).
    pub scenario: Scenario,
    /// The seed.
    pub seed: u64,
    /// The policy's call deadline, from a call's start (the ideal's too).
    pub deadline: Option<core::time::Duration>,
    /// Every upstream request, in sending order.
    pub requests: Vec<Request>,
    /// Every logical call, by arrival index.
    pub calls: Vec<CallRecord>,
    /// Breaker transitions, in order.
    pub breaker: Vec<(EndpointId, BreakerEvent)>,
    /// Key cooldowns, disables and enables, in order.
    pub keys: Vec<PoolEvent>,
    /// Invariant violations (only collected by [`crate::run_checked`]).
    pub violations: Vec<Violation>,
    /// Engine events lost because the ring overflowed (should be zero).
    pub dropped_events: u64,
    /// The replicas and their shared limits, in a run of [`crate::replicas::run_replicas`].
    pub replicas: Option<ReplicaRun>,
}

/// What a run counts as it goes: all that a run without its logs
/// ([`crate::run_tally`]) keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Tally {
    /// The virtual instant reached.
    pub now: Timestamp,
    /// Calls that arrived.
    pub arrived: u64,
    /// Calls finished.
    pub finished: u64,
    /// Calls finished with a success.
    pub succeeded: u64,
    /// Upstream requests sent.
    pub requests: u64,
    /// Breaker transitions.
    pub breaker_transitions: u64,
    /// Key cooldowns, disables and enables.
    pub key_events: u64,
    /// Calls waiting for a concurrency slot now.
    pub queued: usize,
    /// Engine events lost because the ring overflowed.
    pub dropped_events: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    Arrive(u32),
    Wake(u32),
    /// An answer reaches the call in a slot: (slot, call index, attempt number), so a
    /// cancelled attempt's answer, or one for a call gone from the slot, is ignored.
    Answer(u32, u32, u32),
    /// The server is done with a keyed attempt (its ticket's index).
    ServerDone(u32),
    /// A lease ask reaches the store (its index in the asks).
    StoreAsk(u32),
    /// The store's answer reaches its replica.
    StoreAnswer(u32),
    /// A replica syncs its shared breakers with the store.
    BreakerSync(u16),
}

struct Active {
    call_index: u32,
    replica: u16,
    call: Call,
    started: Timestamp,
    /// The answers on their way (two while a hedge races its attempt).
    pending: Vec<(AttemptId, Outcome, Request)>,
}

/// The keys the simulated server remembers: far more than calls in flight (a call's
/// stored success must outlive its retries), few enough that a long run's memory stays
/// flat.
const UPSTREAM_KEYS: usize = 16_384;

/// How many events a run may take per call before it is declared stuck.
const EVENTS_PER_CALL: u64 = 100_000;

/// What the simulated client sends: per endpoint its path and key texts, and the body.
struct Wire {
    paths: Vec<String>,
    keys: Vec<Vec<String>>,
    body: Vec<u8>,
}

impl Wire {
    fn new(scenario: &Scenario) -> Wire {
        let paths = scenario
            .endpoints
            .iter()
            .map(|e| format!("/{}{}", e.name, e.api.path()))
            .collect();
        let keys = scenario
            .endpoints
            .iter()
            .map(|e| (0..e.keys).map(|k| key_text(e, k)).collect())
            .collect();
        Wire {
            paths,
            keys,
            body: body(&scenario.load),
        }
    }
}

/// The API key the simulated client sends as key `k` of `endpoint`.
pub(crate) fn key_text(endpoint: &crate::scenario::EndpointSpec, k: u16) -> String {
    format!("sk-{}-{k}", endpoint.name)
}

/// The body of every simulated request: one prompt token and the rest of the call's
/// tokens asked for as output.
pub(crate) fn body(load: &crate::scenario::Load) -> Vec<u8> {
    format!(
        r#"{{"model":"sim","max_tokens":{},"messages":[{{"role":"user","content":"x"}}]}}"#,
        load.tokens.saturating_sub(1)
    )
    .into_bytes()
}

/// One replica: an engine with its own slots and queue.
struct Replica {
    engine: Engine,
    queue: VecDeque<u32>,
    active: usize,
    checks: Option<Checks>,
}

/// A lease ask on its way to the store and back.
struct Asking {
    replica: u16,
    ask: LeaseAsk,
    answer: LeaseAnswer,
}

pub(crate) struct Driver {
    replicas: Vec<Replica>,
    store: Option<Store>,
    /// The shared breakers, when the replicas share them.
    breakers: Option<BreakerStore>,
    asks: Vec<Option<Asking>>,
    free_asks: Vec<u32>,
    upstream: Upstream,
    wire: Wire,
    /// Keyed attempts the server is still working on, by [`Ev::ServerDone`] index.
    tickets: Vec<Option<Ticket>>,
    free_tickets: Vec<u32>,
    arrivals: Arrivals,
    calls: u64,
    heap: BinaryHeap<Reverse<(Timestamp, u64, Ev)>>,
    seq: u64,
    slots: Vec<Option<Active>>,
    free: Vec<u32>,
    concurrency: usize,
    tokens: u64,
    /// Whether calls hedge (the policy's `[hedge]`).
    hedge: steadfast_core::hedge::HedgeConfig,
    load: crate::scenario::Load,
    /// Whether every request and call is kept in [`Run`] (else only counted).
    keep_log: bool,
    tally: Tally,
    run: Run,
}

impl Driver {
    pub(crate) fn new(
        scenario: &Scenario,
        policy: &Policy,
        seed: u64,
        checked: bool,
        keep_log: bool,
    ) -> Result<Driver, SimError> {
        Driver::with_replicas(
            scenario,
            policy,
            seed,
            checked,
            keep_log,
            &Replicas::default(),
        )
    }

    /// A driver of `replicas` (validated by the caller); one local replica is the
    /// plain run and keeps no [`ReplicaRun`].
    pub(crate) fn with_replicas(
        scenario: &Scenario,
        policy: &Policy,
        seed: u64,
        checked: bool,
        keep_log: bool,
        replicas: &Replicas,
    ) -> Result<Driver, SimError> {
        let specs = replicas.specs(scenario);
        let each = replicas.policy(policy);
        let seeds: Vec<u64> = (0..replicas.count.max(1))
            .map(|r| replica_seed(seed, r))
            .collect();
        let engines = seeds
            .iter()
            .map(|&s| {
                let engine =
                    Engine::new(each.clone(), &specs, engine_seed(s)).map_err(SimError::Policy)?;
                Ok(Replica {
                    engine,
                    queue: VecDeque::new(),
                    active: 0,
                    checks: checked.then(|| Checks::new(scenario, &each)),
                })
            })
            .collect::<Result<Vec<_>, SimError>>()?;
        let store =
            Store::new(replicas, &each, scenario.endpoints.len()).map_err(SimError::Replicas)?;
        let arrivals = Arrivals::new(scenario, seed);
        let calls = if keep_log {
            usize::try_from(scenario.load.calls).unwrap_or(0)
        } else {
            0
        };
        let plain = *replicas == Replicas::default();
        let lease = if store.is_some() {
            each.shared.lease
        } else {
            0
        };
        let breakers = (replicas.share_breaker && replicas.count > 1)
            .then(|| BreakerStore::new(scenario.endpoints.len(), replicas.store_lag / 2));
        Ok(Driver {
            replicas: engines,
            store,
            breakers,
            asks: Vec::new(),
            free_asks: Vec::new(),
            upstream: Upstream::new(
                scenario.clone(),
                UpstreamConfig {
                    seed: crate::upstream_seed(seed),
                    max_keys: UPSTREAM_KEYS,
                    ..UpstreamConfig::default()
                },
            ),
            wire: Wire::new(scenario),
            tickets: Vec::new(),
            free_tickets: Vec::new(),
            arrivals,
            calls: scenario.load.calls,
            heap: BinaryHeap::new(),
            seq: 0,
            slots: Vec::new(),
            free: Vec::new(),
            concurrency: scenario.load.concurrency as usize,
            tokens: scenario.load.tokens,
            hedge: each.hedge,
            load: scenario.load.clone(),
            keep_log,
            tally: Tally::default(),
            run: Run {
                scenario: scenario.clone(),
                seed,
                deadline: policy.retry.deadline,
                requests: Vec::with_capacity(calls + calls / 2),
                calls: Vec::with_capacity(calls),
                breaker: Vec::new(),
                keys: Vec::new(),
                violations: Vec::new(),
                dropped_events: 0,
                replicas: (!plain).then(|| ReplicaRun {
                    replicas: *replicas,
                    lease,
                    seeds,
                    shared: Vec::new(),
                }),
            },
        })
    }

    /// The replica call `index` goes to.
    fn replica_of(&self, index: u32) -> u16 {
        let n = self.replicas.len().max(1) as u32;
        (index % n) as u16
    }

    fn start_call(&mut self, now: Timestamp, index: u32, replica: u16) -> Call {
        let id = self.load.id(u64::from(index));
        let business = id.as_deref().map(str::as_bytes);
        let engine = &mut self.replicas[usize::from(replica)].engine;
        let call = engine.start_call(now, business).with_tokens(self.tokens);
        if self.hedge.is_on() {
            call.with_hedge(&self.hedge)
        } else {
            call
        }
    }

    /// Keeps a keyed attempt's ticket until the server is done with it at `done`.
    fn hold(&mut self, ticket: Ticket, done: Timestamp) {
        let i = match self.free_tickets.pop() {
            Some(i) => {
                self.tickets[i as usize] = Some(ticket);
                i
            }
            None => {
                self.tickets.push(Some(ticket));
                (self.tickets.len() - 1) as u32
            }
        };
        self.push(done, Ev::ServerDone(i));
    }

    fn push(&mut self, at: Timestamp, ev: Ev) {
        self.seq += 1;
        self.heap.push(Reverse((at, self.seq, ev)));
    }

    pub(crate) fn run(mut self) -> Result<Run, SimError> {
        self.run_with(u64::MAX, &mut |_| {})?;
        Ok(self.run)
    }

    /// Runs to the end, calling `on_progress` each time `every` more calls finished.
    pub(crate) fn run_tally(
        mut self,
        every: u64,
        on_progress: &mut dyn FnMut(&Tally),
    ) -> Result<Tally, SimError> {
        self.run_with(every, on_progress)?;
        Ok(self.tally)
    }

    fn run_with(
        &mut self,
        every: u64,
        on_progress: &mut dyn FnMut(&Tally),
    ) -> Result<(), SimError> {
        if let Some(first) = self.arrivals.next() {
            self.push(first, Ev::Arrive(0));
        }
        if self.breakers.is_some() {
            for r in 0..self.replicas.len() {
                self.next_sync(u16::try_from(r).unwrap_or(u16::MAX), Timestamp::ZERO);
            }
        }
        let limit = self.calls.saturating_mul(EVENTS_PER_CALL);
        let every = every.max(1);
        let mut events = 0u64;
        while let Some(Reverse((now, _, ev))) = self.heap.pop() {
            events += 1;
            if events > limit {
                return Err(SimError::Stuck { at: now });
            }
            self.tally.now = now;
            let finished = self.tally.finished;
            match ev {
                Ev::Arrive(i) => {
                    if let Some(t) = self.arrivals.next() {
                        self.push(t, Ev::Arrive(i.saturating_add(1)));
                    }
                    self.tally.arrived += 1;
                    if self.keep_log {
                        self.run.calls.push(placeholder_record(now));
                    }
                    let r = self.replica_of(i);
                    let replica = &mut self.replicas[usize::from(r)];
                    if replica.active < self.concurrency {
                        self.start(i, r, now);
                    } else {
                        replica.queue.push_back(i);
                    }
                }
                Ev::Wake(slot) => self.drive(slot, now),
                Ev::ServerDone(i) => {
                    let ticket = self.tickets.get_mut(i as usize).and_then(Option::take);
                    if let Some(t) = ticket {
                        self.upstream.finish(t);
                        self.free_tickets.push(i);
                    }
                }
                Ev::Answer(slot, call, attempt) => {
                    let Some(a) = self.slots.get_mut(slot as usize).and_then(Option::as_mut) else {
                        continue;
                    };
                    if a.call_index != call {
                        continue;
                    }
                    let Some(i) = a.pending.iter().position(|p| p.0 == AttemptId(attempt)) else {
                        continue;
                    };
                    {
                        let (id, outcome, request) = a.pending.swap_remove(i);
                        let _ = a.call.on_outcome(now, id, outcome);
                        let replica = &mut self.replicas[usize::from(a.replica)];
                        if let Some(c) = &mut replica.checks {
                            c.on_answer(&request);
                        }
                    }
                    self.drive(slot, now);
                }
                Ev::StoreAsk(i) => self.at_store(i, now),
                Ev::StoreAnswer(i) => self.answered(i, now),
                Ev::BreakerSync(r) => self.sync_breakers(r, now),
            }
            if self.tally.finished / every != finished / every {
                self.count_up();
                on_progress(&self.tally);
            }
        }
        self.count_up();
        if self.tally.arrived != self.calls || self.tally.finished != self.calls {
            let unfinished = self
                .run
                .calls
                .iter()
                .position(|c| c.finished == Timestamp::MAX);
            return Err(SimError::Unfinished {
                call: unfinished.map_or(self.tally.finished, |i| i as u64) as u32,
            });
        }
        for r in &mut self.replicas {
            if let Some(c) = r.checks.take() {
                self.run.violations.extend(c.into_violations());
            }
        }
        self.run.dropped_events = self.tally.dropped_events;
        if let Some(rr) = &mut self.run.replicas {
            rr.shared = self.replicas.iter().map(|r| counters(&r.engine)).collect();
        }
        Ok(())
    }

    /// The tally's queue and dropped-event counts, summed over the replicas.
    fn count_up(&mut self) {
        self.tally.queued = self.replicas.iter().map(|r| r.queue.len()).sum();
        self.tally.dropped_events = self
            .replicas
            .iter()
            .map(|r| r.engine.dropped_events())
            .sum();
    }

    /// Writes `replica`'s breaker opens to the store and reads every breaker back,
    /// then syncs again a `shared.key_sync` later while calls remain.
    fn sync_breakers(&mut self, replica: u16, now: Timestamp) {
        let (Some(store), Some(r)) = (
            &mut self.breakers,
            self.replicas.get_mut(usize::from(replica)),
        ) else {
            return;
        };
        while let Some(p) = r.engine.poll_breaker_publish() {
            store.write(now, p);
        }
        for e in 0..r.engine.pool().endpoint_count() {
            let open = store.open(now, usize::from(e));
            r.engine.handle_shared_breaker(now, EndpointId(e), open);
        }
        drain_events(&mut r.engine, &mut self.run, &mut self.tally, self.keep_log);
        self.next_sync(replica, now);
    }

    fn next_sync(&mut self, replica: u16, now: Timestamp) {
        if self.tally.finished >= self.calls {
            return;
        }
        let Some(r) = self.replicas.get(usize::from(replica)) else {
            return;
        };
        let every = r.engine.policy().shared.key_sync;
        self.push(now.saturating_add(every), Ev::BreakerSync(replica));
    }

    /// Sends the leases `replica`'s engine wants at `now` on their way to the store.
    fn ask_store(&mut self, replica: u16, now: Timestamp) {
        let Some(store) = &self.store else { return };
        let there = store.there();
        while let Some(ask) = self.replicas[usize::from(replica)]
            .engine
            .poll_lease_ask(now)
        {
            let asking = Some(Asking {
                replica,
                ask,
                answer: LeaseAnswer::Failed,
            });
            let i = match self.free_asks.pop() {
                Some(i) => {
                    self.asks[i as usize] = asking;
                    i
                }
                None => {
                    self.asks.push(asking);
                    (self.asks.len() - 1) as u32
                }
            };
            self.push(now.saturating_add(there), Ev::StoreAsk(i));
        }
    }

    /// Ask `i` reaches the store at `now`: decided there, answered after the lag.
    fn at_store(&mut self, i: u32, now: Timestamp) {
        let (Some(store), Some(Some(a))) = (&mut self.store, self.asks.get_mut(i as usize)) else {
            return;
        };
        a.answer = store.lease(now, a.ask.endpoint, a.ask.want);
        let back = store.back();
        self.push(now.saturating_add(back), Ev::StoreAnswer(i));
    }

    /// Ask `i`'s answer reaches its replica at `now`.
    fn answered(&mut self, i: u32, now: Timestamp) {
        let Some(a) = self.asks.get_mut(i as usize).and_then(Option::take) else {
            return;
        };
        self.free_asks.push(i);
        let engine = &mut self.replicas[usize::from(a.replica)].engine;
        engine.handle_lease(now, &a.ask, a.answer);
        drain_events(engine, &mut self.run, &mut self.tally, self.keep_log);
        self.ask_store(a.replica, now);
    }

    fn start(&mut self, call_index: u32, replica: u16, now: Timestamp) {
        self.replicas[usize::from(replica)].active += 1;
        let call = self.start_call(now, call_index, replica);
        let active = Active {
            call_index,
            replica,
            call,
            started: now,
            pending: Vec::new(),
        };
        let slot = match self.free.pop() {
            Some(s) => {
                self.slots[s as usize] = Some(active);
                s
            }
            None => {
                self.slots.push(Some(active));
                (self.slots.len() - 1) as u32
            }
        };
        self.drive(slot, now);
    }

    /// Polls the call in `slot` until it sends, waits or finishes; a finished call's
    /// slot goes to the next queued call, which is driven in turn.
    fn drive(&mut self, mut slot: u32, now: Timestamp) {
        loop {
            let Some(a) = self.slots.get_mut(slot as usize).and_then(Option::as_mut) else {
                return;
            };
            let replica = &mut self.replicas[usize::from(a.replica)];
            let decision = match &mut replica.checks {
                Some(c) => {
                    let mut gate = Checked::new(&mut replica.engine, c, a.call_index);
                    a.call.poll_decision(now, &mut gate)
                }
                None => a.call.poll_decision(now, &mut replica.engine),
            };
            drain_events(
                &mut replica.engine,
                &mut self.run,
                &mut self.tally,
                self.keep_log,
            );
            let r = a.replica;
            if self.store.is_some() {
                self.ask_store(r, now);
            }
            let Some(a) = self.slots.get_mut(slot as usize).and_then(Option::as_mut) else {
                return;
            };
            // The loser of a hedge's race: its answer, when it comes, is dropped.
            while let Some(id) = a.call.poll_cancel() {
                a.pending.retain(|p| p.0 != id);
            }
            let replica = &mut self.replicas[usize::from(r)];
            match decision {
                Decision::Send(attempt) => {
                    if let Some(c) = &mut replica.checks {
                        c.on_send(now, a.call_index, &attempt, a.call.deadline());
                    }
                    let asked = ask(&mut self.upstream, &self.wire, now, &attempt);
                    let (reply, outcome, hint) = (asked.reply, asked.outcome, asked.hint);
                    let arrives = asked
                        .after
                        .map(|d| now.saturating_add(d))
                        .filter(|&t| t < attempt.deadline);
                    let request = Request {
                        at: now,
                        call: a.call_index,
                        replica: r,
                        attempt: attempt.id.0,
                        target: attempt.target,
                        reply: if arrives.is_some() {
                            reply
                        } else {
                            Reply::Timeout
                        },
                        answered: arrives.unwrap_or(attempt.deadline),
                        hint: arrives.and(hint),
                    };
                    self.tally.requests += 1;
                    if self.keep_log {
                        self.run.requests.push(request);
                    }
                    if arrives.is_some() {
                        a.pending.push((attempt.id, outcome, request));
                    }
                    let call = a.call_index;
                    // The server is done with an answer as it starts, before the client
                    // sees it (with a hang, at once: no work is in progress).
                    if let Some(ticket) = asked.ticket {
                        self.hold(ticket, now.saturating_add(asked.server_done));
                    }
                    match arrives {
                        Some(t) => self.push(t, Ev::Answer(slot, call, attempt.id.0)),
                        None => self.push(attempt.deadline, Ev::Wake(slot)),
                    }
                    // A hedged call may want a wake-up before the answer (its hedge's
                    // instant): it is polled on. An unhedged one only waits for it.
                    if !self.hedge.is_on() {
                        return;
                    }
                }
                Decision::Wait(until) => {
                    self.push(until.max(now), Ev::Wake(slot));
                    return;
                }
                Decision::Done(finish) => {
                    let index = a.call_index as usize;
                    let started = a.started;
                    self.slots[slot as usize] = None;
                    self.free.push(slot);
                    replica.active -= 1;
                    self.tally.finished += 1;
                    if matches!(finish, Finish::Success { .. }) {
                        self.tally.succeeded += 1;
                    }
                    if let Some(rec) = self.run.calls.get_mut(index) {
                        rec.started = started;
                        rec.finished = now;
                        rec.finish = finish;
                    }
                    let Some(next) = replica.queue.pop_front() else {
                        return;
                    };
                    replica.active += 1;
                    let call = self.start_call(now, next, r);
                    // The freed slot is reused at once.
                    let s = self.free.pop().unwrap_or(slot);
                    self.slots[s as usize] = Some(Active {
                        call_index: next,
                        replica: r,
                        call,
                        started: now,
                        pending: Vec::new(),
                    });
                    slot = s;
                }
            }
        }
    }
}

/// What one request got, as the client sees it.
struct Asked {
    reply: Reply,
    after: Option<core::time::Duration>,
    outcome: Outcome,
    hint: Option<core::time::Duration>,
    ticket: Option<Ticket>,
    /// When the server is done with a keyed attempt, after the request.
    server_done: core::time::Duration,
}

/// Sends `attempt` to the upstream as a steadfast client would.
fn ask(up: &mut Upstream, wire: &Wire, now: Timestamp, attempt: &Attempt) -> Asked {
    let (e, k) = (
        usize::from(attempt.target.endpoint.0),
        usize::from(attempt.target.key.0),
    );
    let (Some(path), Some(key)) = (
        wire.paths.get(e),
        wire.keys.get(e).and_then(|keys| keys.get(k)),
    ) else {
        return Asked {
            reply: Reply::Timeout,
            after: None,
            outcome: Outcome::Transport(steadfast_core::outcome::Transport::new(
                steadfast_core::outcome::TransportKind::Timeout,
                steadfast_core::outcome::Phase::AfterSend,
            )),
            hint: None,
            ticket: None,
            server_done: core::time::Duration::ZERO,
        };
    };
    let provider = up
        .scenario()
        .endpoints
        .get(e)
        .map(|s| s.api)
        .unwrap_or_default();
    let mut buf = [0u8; 36];
    let id = attempt.idempotency_key.as_str(&mut buf);
    let facts = RequestFacts::client(provider, path, key, Some(id), &wire.body);
    let wall = WALL_START + now.as_nanos() / 1_000_000_000;
    let mut answer = up.handle(now, wall, &facts);
    let (reply, after, outcome) = seen(&answer, wall);
    let server_done = match answer.reply {
        steadfast_upstream::Reply::Hang => core::time::Duration::ZERO,
        _ => answer.after,
    };
    Asked {
        reply,
        after,
        outcome,
        hint: answer.retry_after,
        ticket: answer.ticket.take(),
        server_done,
    }
}

fn drain_events(engine: &mut Engine, run: &mut Run, tally: &mut Tally, keep_log: bool) {
    while let Some(e) = engine.poll_event() {
        match e {
            EngineEvent::Breaker { endpoint, event } => {
                tally.breaker_transitions += 1;
                if keep_log {
                    run.breaker.push((endpoint, event));
                }
            }
            EngineEvent::Key(k) => {
                tally.key_events += 1;
                if keep_log {
                    run.keys.push(k);
                }
            }
            _ => {}
        }
    }
}

/// An engine's shared-limit counters, summed over its endpoints.
fn counters(engine: &Engine) -> SharedCounters {
    let mut sum = SharedCounters::default();
    for e in 0..engine.pool().endpoint_count() {
        let Some(c) = engine.shared_counters(EndpointId(e)) else {
            continue;
        };
        sum.asks += c.asks;
        sum.leased += c.leased;
        sum.spent += c.spent;
        sum.expired += c.expired;
        sum.empty += c.empty;
        sum.failures += c.failures;
        sum.fallback_admissions += c.fallback_admissions;
    }
    sum
}

fn placeholder_record(arrived: Timestamp) -> CallRecord {
    CallRecord {
        arrived,
        started: Timestamp::MAX,
        finished: Timestamp::MAX,
        finish: Finish::GaveUp(steadfast_core::retry::GiveUp {
            reason: steadfast_core::retry::GiveUpReason::Cancelled,
            attempts: 0,
            last_failure: None,
            last_status: None,
        }),
    }
}

/// The engine's 32-byte seed in a run with `seed`.
pub fn engine_seed(seed: u64) -> [u8; 32] {
    let mut bytes = [0u8; 32];
    for (i, chunk) in bytes.chunks_mut(8).enumerate() {
        chunk.copy_from_slice(&split_seed(seed, i as u64).to_le_bytes());
    }
    bytes
}

/// When each of the scenario's calls arrives in a run with `seed` (from the start).
pub fn arrival_instants(scenario: &Scenario, seed: u64) -> Vec<Timestamp> {
    Arrivals::new(scenario, seed).collect()
}

/// The arrival instants of the calls, drawn one at a time (so a run holds none ahead).
struct Arrivals {
    rng: rng::CoreRng,
    kind: Arrival,
    gap: f64,
    t: f64,
    next: u64,
    calls: u64,
}

impl Arrivals {
    fn new(scenario: &Scenario, seed: u64) -> Arrivals {
        let load = &scenario.load;
        Arrivals {
            rng: rng::from_u64(split_seed(seed, 50)),
            kind: load.arrival,
            gap: 1e9 / load.rate,
            t: 0.0,
            next: 0,
            calls: load.calls,
        }
    }
}

impl Iterator for Arrivals {
    type Item = Timestamp;

    fn next(&mut self) -> Option<Timestamp> {
        if self.next >= self.calls {
            return None;
        }
        let i = self.next;
        self.next += 1;
        let at = match self.kind {
            Arrival::Closed => 0.0,
            Arrival::Fixed => i as f64 * self.gap,
            Arrival::Poisson => {
                let now = self.t;
                self.t += -(1.0 - unit_f64(&mut self.rng)).ln() * self.gap;
                now
            }
        };
        Some(Timestamp::from_nanos(at as u64))
    }
}
