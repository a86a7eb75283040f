//! Decisions per second through one `redis-server` on loopback: `reserve_requests`
//! and `lease`, one at a time and 16 in flight at once (one multiplexed connection,
//! as one process would run them). The server is started here and killed by its pid
//! when the bench ends.
#![allow(missing_docs)] // criterion_group! generates an undocumented public function

#[path = "../tests/common/mod.rs"]
mod common;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::time::Duration;
use steadfast_redis::{LimitKey, Rate, RedisConfig, RedisStore};
use tokio::task::JoinSet;

/// Generous enough that the bucket never empties: every decision is a grant (a
/// denial costs the same script run).
const RATE: Rate = Rate {
    per_minute: 60_000_000,
    burst: 1_000_000,
};

const IN_FLIGHT: usize = 16;

fn store(url: &str) -> RedisStore {
    let mut config = RedisConfig::default();
    config.url = url.to_string();
    config.prefix = "bench".to_string();
    config.call_timeout = Duration::from_secs(1);
    RedisStore::new(config).unwrap()
}

fn decisions(c: &mut Criterion) {
    let server = common::Server::start();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let store = rt.block_on(async { store(&server.url()) });
    let limit = LimitKey::new("bench").unwrap();
    rt.block_on(store.ping()).unwrap();

    let mut group = c.benchmark_group("redis");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));

    group.throughput(Throughput::Elements(1));
    group.bench_function("reserve_requests/sequential", |b| {
        b.to_async(&rt)
            .iter(|| async { store.reserve_requests(&limit, RATE, 1).await.unwrap() })
    });
    group.bench_function("lease/sequential", |b| {
        b.to_async(&rt)
            .iter(|| async { store.lease(&limit, RATE, 4).await.unwrap() })
    });

    group.throughput(Throughput::Elements(IN_FLIGHT as u64));
    group.bench_function("reserve_requests/16_concurrent", |b| {
        b.to_async(&rt).iter(|| {
            concurrently(&store, &limit, |s, l| async move {
                s.reserve_requests(&l, RATE, 1).await.map(|_| ())
            })
        })
    });
    group.bench_function("lease/16_concurrent", |b| {
        b.to_async(&rt).iter(|| {
            concurrently(&store, &limit, |s, l| async move {
                s.lease(&l, RATE, 4).await.map(|_| ())
            })
        })
    });
    group.finish();
    drop(server);
}

/// Runs [`IN_FLIGHT`] calls at once on clones of one store and waits for all.
async fn concurrently<F, Fut>(store: &RedisStore, limit: &LimitKey, call: F)
where
    F: Fn(RedisStore, LimitKey) -> Fut,
    Fut: Future<Output = Result<(), steadfast_redis::StoreError>> + Send + 'static,
{
    let mut set = JoinSet::new();
    for _ in 0..IN_FLIGHT {
        set.spawn(call(store.clone(), limit.clone()));
    }
    while let Some(done) = set.join_next().await {
        done.unwrap().unwrap();
    }
}

criterion_group!(benches, decisions);
criterion_main!(benches);
