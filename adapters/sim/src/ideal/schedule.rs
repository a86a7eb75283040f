//! The greedy schedule: calls in arrival order take a concurrency slot (first come,
//! first served, like the simulator's queue), then the endpoint and key that answer
//! soonest — sending at once, or later when a bucket is empty or a full outage is on,
//! whichever finishes first — and hold the slot for their mean service time.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use core::time::Duration;

use steadfast_core::time::Timestamp;
use steadfast_upstream::Scenario;
use steadfast_upstream::scenario::Outage;

use super::lanes::Lane;
use super::service::{Service, service};

/// What the perfect client does with one call.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Plan {
    /// When it arrived.
    pub arrived: Timestamp,
    /// When its first request that can succeed is sent, and where (endpoint, key);
    /// none when it is given up.
    pub sent: Option<(Timestamp, usize, usize)>,
    /// Seconds from its arrival to its first request that can succeed (queueing, waits
    /// for room, the failed first requests of an endpoint), or to its giving up.
    pub waited: f64,
    /// When it ends: sent plus its mean service time, or when it is given up.
    pub finished: Timestamp,
    /// The probability that it is answered within its deadline.
    pub served: f64,
    /// The expected requests it sends.
    pub requests: f64,
    /// Its service (an index into [`Schedule::services`]); none when never sent.
    pub service: Option<usize>,
}

/// Every call's plan and the services they use.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Schedule {
    /// By arrival index.
    pub plans: Vec<Plan>,
    /// The services of the regimes met.
    pub services: Vec<Service>,
}

/// Where and when a call is sent.
struct Choice {
    endpoint: usize,
    key: usize,
    at: Timestamp,
    service: usize,
    finish: Timestamp,
}

struct Scheduler<'a> {
    lanes: Vec<Lane<'a>>,
    /// `(endpoint, covering outage windows)` of each service.
    regimes: Vec<(usize, Vec<usize>)>,
    services: Vec<Service>,
}

/// The schedule of `arrivals` (sorted) on `scenario`, each call given up that cannot
/// be sent within `deadline` of its start.
pub(crate) fn schedule(
    scenario: &Scenario,
    arrivals: &[Timestamp],
    deadline: Option<Duration>,
) -> Schedule {
    let lanes = scenario
        .endpoints
        .iter()
        .map(|e| Lane::new(e, &scenario.load))
        .collect();
    let mut s = Scheduler {
        lanes,
        regimes: Vec::new(),
        services: Vec::new(),
    };
    let slots = (scenario.load.concurrency as usize).clamp(1, arrivals.len().max(1));
    let mut free: BinaryHeap<Reverse<Timestamp>> =
        (0..slots).map(|_| Reverse(Timestamp::ZERO)).collect();
    let mut plans = Vec::with_capacity(arrivals.len());
    for &arrived in arrivals {
        let slot = free.pop().map_or(Timestamp::ZERO, |Reverse(t)| t);
        let plan = s.plan(arrived, arrived.max(slot), deadline);
        free.push(Reverse(plan.finished));
        plans.push(plan);
    }
    Schedule {
        plans,
        services: s.services,
    }
}

impl Scheduler<'_> {
    fn plan(&mut self, arrived: Timestamp, start: Timestamp, deadline: Option<Duration>) -> Plan {
        let given_up = Plan {
            arrived,
            sent: None,
            waited: secs_between(arrived, start),
            finished: start,
            served: 0.0,
            requests: 0.0,
            service: None,
        };
        let Some(c) = self.choose(start) else {
            return given_up;
        };
        let limit = deadline.map(|d| start.saturating_add(d));
        let (Some(lane), Some(service)) =
            (self.lanes.get_mut(c.endpoint), self.services.get(c.service))
        else {
            return given_up;
        };
        let (head_requests, head_secs) = lane.head.unwrap_or((0.0, 0.0));
        let served = match limit {
            None => service.time.served(),
            Some(l) => service.time.within(secs_between(c.at, l) - head_secs),
        };
        // A call that cannot be answered in time is not sent at all.
        if served <= 0.0 {
            return given_up;
        }
        lane.head = None;
        lane.take(c.key, c.at, service.units);
        Plan {
            arrived,
            sent: Some((c.at, c.endpoint, c.key)),
            waited: secs_between(arrived, c.at) + head_secs,
            finished: c.finish,
            served,
            requests: service.requests + head_requests,
            service: Some(c.service),
        }
    }

    /// The endpoint and key that finish a call started at `from` soonest (ties: the
    /// pool's priority, then the scenario's order).
    fn choose(&mut self, from: Timestamp) -> Option<Choice> {
        let mut best: Option<(Choice, u8)> = None;
        for e in 0..self.lanes.len() {
            let Some(lane) = self.lanes.get(e) else {
                continue;
            };
            let (priority, unlimited, head) = (
                lane.spec.priority,
                lane.unlimited(),
                lane.head.map_or(0.0, |h| h.1),
            );
            for key in 0..lane.keys() {
                let Some(at) = self.lanes.get(e).and_then(|l| l.earliest(key, from)) else {
                    continue;
                };
                let service = self.service_at(e, at);
                let mean = self.services.get(service).map_or(0.0, |s| s.time.mean());
                let finish = at.saturating_add(Duration::from_secs_f64(mean + head));
                let better = best
                    .as_ref()
                    .is_none_or(|(b, p)| (finish, priority) < (b.finish, *p));
                if better {
                    let choice = Choice {
                        endpoint: e,
                        key,
                        at,
                        service,
                        finish,
                    };
                    best = Some((choice, priority));
                }
                if unlimited {
                    break;
                }
            }
        }
        best.map(|(c, _)| c)
    }

    /// The service of a call sent to endpoint `e` at `at`.
    fn service_at(&mut self, e: usize, at: Timestamp) -> usize {
        let Some(lane) = self.lanes.get(e) else {
            return 0;
        };
        let covering = lane.covering(at);
        let known = self
            .regimes
            .iter()
            .position(|(x, c)| *x == e && *c == covering);
        if let Some(i) = known {
            return i;
        }
        let outages: Vec<&Outage> = covering
            .iter()
            .filter_map(|&i| lane.spec.outages.get(i))
            .collect();
        self.services.push(service(lane.spec, &outages));
        self.regimes.push((e, covering));
        self.services.len() - 1
    }
}

/// Seconds from `a` to `b` (negative when `b` is earlier).
pub(crate) fn secs_between(a: Timestamp, b: Timestamp) -> f64 {
    (b.as_nanos() as f64 - a.as_nanos() as f64) / 1e9
}
