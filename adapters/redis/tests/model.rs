//! The scripts against the reference model: random interleavings of reservations,
//! leases, releases, token reservations and reconciliations from three clients (three
//! stores, as three processes) against one real `redis-server`. Each script reports
//! the server instant it decided at; the model replays every decision at exactly that
//! instant and must give the same answer. The server clock runs on its own (short
//! pauses between operations let buckets refill); nothing fakes it.

mod common;

use common::{Redis, store, ttls, unique_prefix};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, RngSeed, TestCaseError, TestRunner};
use std::cell::RefCell;
use std::time::Duration;
use steadfast_redis::model::{self, Bucket};
use steadfast_redis::rate::UNIT;
use steadfast_redis::{
    Decision, Lease, LimitKey, Rate, Reconciled, RedisStore, TokenRate, clamped_delta,
};

/// The fixed seed of the proptest RNG, printed so a run can be replayed.
const SEED: u64 = 0x5eed_0f5f_0001_ed15;

#[derive(Debug, Clone)]
enum Op {
    Requests {
        client: usize,
        n: u32,
    },
    Lease {
        client: usize,
        want: u32,
    },
    Release {
        client: usize,
        pick: usize,
        unused: u32,
    },
    Tokens {
        client: usize,
        estimate: u32,
    },
    Reconcile {
        client: usize,
        pick: usize,
        actual: u64,
    },
    Pause {
        micros: u64,
    },
}

#[derive(Debug, Clone)]
struct Case {
    rate: Rate,
    tokens: TokenRate,
    ops: Vec<Op>,
}

fn op() -> impl Strategy<Value = Op> {
    let client = 0..3usize;
    prop_oneof![
        3 => (client.clone(), 1..=4u32).prop_map(|(client, n)| Op::Requests { client, n }),
        2 => (client.clone(), 1..=12u32).prop_map(|(client, want)| Op::Lease { client, want }),
        1 => (client.clone(), any::<usize>(), 0..=12u32)
            .prop_map(|(client, pick, unused)| Op::Release { client, pick, unused }),
        3 => (client.clone(), 1..=600u32)
            .prop_map(|(client, estimate)| Op::Tokens { client, estimate }),
        2 => (client.clone(), any::<usize>(), 0..=1_500u64)
            .prop_map(|(client, pick, actual)| Op::Reconcile { client, pick, actual }),
        2 => (0..=3_000u64).prop_map(|micros| Op::Pause { micros }),
    ]
}

fn case() -> impl Strategy<Value = Case> {
    (
        6_000..=120_000u32,
        1..=10u32,
        60_000..=6_000_000u32,
        10..=1_000u32,
        proptest::collection::vec(op(), 1..=40),
    )
        .prop_map(|(rpm, burst, tpm, token_burst, ops)| Case {
            rate: Rate {
                per_minute: rpm,
                burst,
            },
            tokens: TokenRate {
                per_minute: tpm,
                burst: token_burst,
            },
            ops,
        })
}

/// What the model knows of one case's limit.
#[derive(Default)]
struct World {
    tat: Option<u64>,
    bucket: Option<Bucket>,
    leases: Vec<Lease>,
    reserved: Vec<u32>,
}

/// How often each kind of answer came up over the whole run.
#[derive(Default, Debug)]
struct Seen {
    granted: u32,
    denied: u32,
    leased: u32,
    lease_empty: u32,
    refunded: u32,
    tokens_granted: u32,
    tokens_denied: u32,
    debts: u32,
}

/// `TIME`, the GCRA key, the token bucket's fields, read in one pipeline.
type RawState = ((u64, u64), Option<u64>, (Option<i64>, Option<u64>));

struct Runner<'a> {
    clients: &'a [RedisStore],
    raw: redis::aio::MultiplexedConnection,
    prefix: &'a str,
    limit: LimitKey,
    case: &'a Case,
    world: World,
    seen: &'a RefCell<Seen>,
}

impl Runner<'_> {
    async fn apply(&mut self, op: &Op) -> Result<(), TestCaseError> {
        match *op {
            Op::Requests { client, n } => self.requests(client, n).await,
            Op::Lease { client, want } => self.lease(client, want).await,
            Op::Release {
                client,
                pick,
                unused,
            } => self.release(client, pick, unused).await,
            Op::Tokens { client, estimate } => self.tokens(client, estimate).await,
            Op::Reconcile {
                client,
                pick,
                actual,
            } => self.reconcile(client, pick, actual).await,
            Op::Pause { micros } => {
                tokio::time::sleep(Duration::from_micros(micros)).await;
                Ok(())
            }
        }?;
        self.check_state().await
    }

    /// The state in Redis is the model's, to the microsecond and the unit. A key may
    /// be gone only when the model's state is a full bucket by then (1 ms of slack:
    /// keys expire at millisecond resolution).
    async fn check_state(&mut self) -> Result<(), TestCaseError> {
        let name = format!("{{{}1:l:{}}}", self.prefix, self.limit.as_str());
        let ((secs, micros), tat, (level, last)): RawState = redis::pipe()
            .cmd("TIME")
            .cmd("GET")
            .arg(format!("{name}:req"))
            .cmd("HMGET")
            .arg(format!("{name}:tok"))
            .arg("l")
            .arg("t")
            .query_async(&mut self.raw)
            .await
            .unwrap();
        let soon = secs * 1_000_000 + micros + 1_000;
        match tat {
            Some(tat) => prop_assert_eq!(Some(tat), self.world.tat),
            None => prop_assert!(self.world.tat.is_none_or(|t| t <= soon), "req gone early"),
        }
        let p = self.case.tokens.params().unwrap();
        match (level, last) {
            (Some(level), Some(last_us)) => {
                prop_assert_eq!(Some(Bucket { level, last_us }), self.world.bucket)
            }
            _ => prop_assert_eq!(
                model::refill(self.world.bucket, soon, p),
                p.cap,
                "tok gone early"
            ),
        }
        Ok(())
    }

    async fn requests(&mut self, client: usize, n: u32) -> Result<(), TestCaseError> {
        let rate = self.case.rate;
        let n = 1 + (n - 1) % rate.burst;
        let got = self.clients[client]
            .reserve_requests(&self.limit, rate, n)
            .await
            .unwrap();
        let now = got.server_us();
        let want = model::gcra_reserve(self.world.tat, now, rate.params().unwrap(), n.into());
        let expected = if want.granted > 0 {
            self.world.tat = Some(want.tat_us);
            self.seen.borrow_mut().granted += 1;
            Decision::Granted {
                n,
                remaining: want.remaining as u32,
                server_us: now,
            }
        } else {
            self.seen.borrow_mut().denied += 1;
            Decision::NotBefore {
                wait: Duration::from_micros(want.wait_us),
                server_us: now,
            }
        };
        prop_assert_eq!(got, expected);
        Ok(())
    }

    async fn lease(&mut self, client: usize, want: u32) -> Result<(), TestCaseError> {
        let rate = self.case.rate;
        let got = self.clients[client]
            .lease(&self.limit, rate, want)
            .await
            .unwrap();
        let now = got.server_us;
        let m = model::lease(self.world.tat, now, rate.params().unwrap(), want.into());
        let valid = Duration::from_micros(m.expires_us.saturating_sub(now));
        let expected = (m.granted, valid, Duration::from_micros(m.wait_us));
        prop_assert_eq!(
            (u64::from(got.requests), got.valid_for, got.retry_in),
            expected
        );
        if m.granted > 0 {
            self.world.tat = Some(m.tat_us);
            self.world.leases.push(got);
            self.seen.borrow_mut().leased += 1;
        } else {
            self.seen.borrow_mut().lease_empty += 1;
        }
        Ok(())
    }

    async fn release(
        &mut self,
        client: usize,
        pick: usize,
        unused: u32,
    ) -> Result<(), TestCaseError> {
        if self.world.leases.is_empty() {
            return Ok(());
        }
        let lease = self.world.leases.remove(pick % self.world.leases.len());
        let unused = unused % (lease.requests + 1);
        let rate = self.case.rate;
        let got = self.clients[client]
            .release_lease(&self.limit, rate, &lease, unused)
            .await
            .unwrap();
        let expires = lease.server_us + lease.valid_for.as_micros() as u64;
        let p = rate.params().unwrap();
        let m = model::release(self.world.tat, got.server_us, p, unused.into(), expires);
        prop_assert_eq!(u64::from(got.refunded), m.refunded);
        if m.refunded > 0 {
            self.world.tat = Some(m.tat_us);
            self.seen.borrow_mut().refunded += 1;
        }
        Ok(())
    }

    async fn tokens(&mut self, client: usize, estimate: u32) -> Result<(), TestCaseError> {
        let rate = self.case.tokens;
        let estimate = 1 + (estimate - 1) % rate.burst;
        let got = self.clients[client]
            .reserve_tokens(&self.limit, rate, estimate)
            .await
            .unwrap();
        let now = got.server_us();
        let p = rate.params().unwrap();
        let m = model::reserve_tokens(self.world.bucket, now, p, i64::from(estimate) * UNIT);
        let expected = if m.granted {
            self.world.bucket = Some(Bucket {
                level: m.level,
                last_us: now,
            });
            self.world.reserved.push(estimate);
            self.seen.borrow_mut().tokens_granted += 1;
            let remaining = m.level.div_euclid(UNIT) as u32;
            Decision::Granted {
                n: estimate,
                remaining,
                server_us: now,
            }
        } else {
            self.seen.borrow_mut().tokens_denied += 1;
            Decision::NotBefore {
                wait: Duration::from_micros(m.wait_us),
                server_us: now,
            }
        };
        prop_assert_eq!(got, expected);
        Ok(())
    }

    async fn reconcile(
        &mut self,
        client: usize,
        pick: usize,
        actual: u64,
    ) -> Result<(), TestCaseError> {
        if self.world.reserved.is_empty() {
            return Ok(());
        }
        let reserved = self.world.reserved.remove(pick % self.world.reserved.len());
        let rate = self.case.tokens;
        let got = self.clients[client]
            .reconcile_tokens(&self.limit, rate, reserved, actual)
            .await
            .unwrap();
        let now = got.server_us;
        let difference = i64::from(reserved) - actual as i64;
        let delta = clamped_delta(difference, rate.burst);
        let level = model::reconcile_tokens(self.world.bucket, now, rate.params().unwrap(), delta);
        self.world.bucket = Some(Bucket {
            level,
            last_us: now,
        });
        if level < 0 {
            self.seen.borrow_mut().debts += 1;
        }
        let expected = Reconciled {
            difference,
            balance: level.div_euclid(UNIT),
            server_us: now,
        };
        prop_assert_eq!(got, expected);
        Ok(())
    }
}

#[test]
fn every_script_answer_matches_the_model_at_the_server_s_instant() {
    println!("proptest seed {SEED:#x}");
    let redis = Redis::shared();
    let prefix = unique_prefix("model");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let clients: Vec<RedisStore> =
        rt.block_on(async { (0..3).map(|_| store(&redis.url, &prefix)).collect() });
    let config = Config {
        cases: 64,
        rng_algorithm: RngAlgorithm::ChaCha,
        rng_seed: RngSeed::Fixed(SEED),
        failure_persistence: None,
        max_shrink_iters: 200,
        ..Config::default()
    };
    let seen = RefCell::new(Seen::default());
    let next_limit = std::cell::Cell::new(0u32);
    let mut runner = TestRunner::new(config);
    let result = runner.run(&case(), |case| {
        next_limit.set(next_limit.get() + 1);
        let raw = rt.block_on(common::raw(&redis.url));
        let mut run = Runner {
            clients: &clients,
            raw,
            prefix: &prefix,
            limit: LimitKey::new(format!("case{}", next_limit.get())).unwrap(),
            case: &case,
            world: World::default(),
            seen: &seen,
        };
        rt.block_on(async {
            for op in &case.ops {
                run.apply(op).await?;
            }
            Ok(())
        })
    });
    if let Err(e) = result {
        panic!("seed {SEED:#x}: {e}");
    }
    let seen = seen.into_inner();
    println!("{seen:?}");
    let every_kind = [
        seen.granted,
        seen.denied,
        seen.leased,
        seen.lease_empty,
        seen.refunded,
        seen.tokens_granted,
        seen.tokens_denied,
        seen.debts,
    ];
    assert!(
        every_kind.iter().all(|n| *n > 0),
        "some answer never came up: {seen:?}"
    );
    let keys = rt.block_on(ttls(&redis.url, &prefix));
    for (key, ttl) in keys {
        // -1 is a key without a TTL; 0 is one about to expire, -2 one gone since KEYS.
        assert_ne!(ttl, -1, "{key} has no TTL");
    }
}
