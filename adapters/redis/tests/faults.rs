//! Redis faults: a killed server, a server that is not there yet, a server that does
//! not answer. Each call must come back with an error (never hang: a generous outer
//! guard catches a hang), and the store must work again once Redis is back.

mod common;

use common::Server;
use std::future::Future;
use std::time::Duration;
use steadfast_redis::{
    Decision, FailMode, Fallback, LimitKey, Rate, RedisConfig, RedisStore, StoreError,
};

/// Far above any timeout under test: a call still pending then has hung.
const GUARD: Duration = Duration::from_secs(10);

const RATE: Rate = Rate {
    per_minute: 60_000,
    burst: 1_000,
};

fn fast_store(port: u16) -> RedisStore {
    let mut config = RedisConfig::default();
    config.url = format!("redis://127.0.0.1:{port}");
    config.prefix = "faults".to_string();
    config.call_timeout = Duration::from_millis(50);
    config.connect_timeout = Duration::from_millis(50);
    config.reconnect_min = Duration::from_millis(5);
    config.reconnect_max = Duration::from_millis(100);
    config.limits.insert("strict".to_string(), FailMode::Closed);
    RedisStore::new(config).unwrap()
}

async fn guarded<T>(call: impl Future<Output = T>) -> T {
    tokio::time::timeout(GUARD, call)
        .await
        .expect("a store call hung past every timeout")
}

async fn reserve(store: &RedisStore) -> Result<Decision, StoreError> {
    let l = LimitKey::new("lenient").unwrap();
    guarded(store.reserve_requests(&l, RATE, 1)).await
}

fn is_fault(r: &Result<Decision, StoreError>) -> bool {
    matches!(
        r,
        Err(StoreError::Unavailable { .. } | StoreError::Timeout { .. })
    )
}

/// Calls until one succeeds, at most `tries` times, 20 ms apart.
async fn until_ok(store: &RedisStore, tries: u32) -> bool {
    for _ in 0..tries {
        if reserve(store).await.is_ok() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

#[tokio::test]
async fn a_killed_server_gives_errors_not_hangs_and_a_new_one_is_reconnected_to() {
    let server = Server::start();
    let store = fast_store(server.port);
    assert!(reserve(&store).await.is_ok());
    let port = server.kill();
    for _ in 0..5 {
        let r = reserve(&store).await;
        assert!(is_fault(&r), "{r:?}");
    }
    let _back = Server::start_on(port);
    assert!(until_ok(&store, 250).await, "never reconnected");
    let counts = store.counters();
    assert!(counts.unavailable + counts.timeouts >= 5, "{counts:?}");
}

#[tokio::test]
async fn a_store_made_before_redis_starts_fails_fast_then_connects() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let store = fast_store(port);
    let r = reserve(&store).await;
    assert!(is_fault(&r), "{r:?}");
    let _server = Server::start_on(port);
    assert!(until_ok(&store, 250).await, "never connected");
}

#[tokio::test]
async fn a_server_that_does_not_answer_times_out_at_the_call_timeout() {
    let server = Server::start();
    let store = fast_store(server.port);
    assert!(reserve(&store).await.is_ok());
    let mut raw = common::raw(&server.url()).await;
    let () = redis::cmd("CLIENT")
        .arg("PAUSE")
        .arg(1_000)
        .query_async(&mut raw)
        .await
        .unwrap();
    let r = reserve(&store).await;
    assert_eq!(
        r,
        Err(StoreError::Timeout {
            after: Duration::from_millis(50)
        })
    );
    assert!(
        until_ok(&store, 250).await,
        "never answered after the pause"
    );
}

#[tokio::test]
async fn each_limit_s_fail_mode_decides_fallback_or_refusal_and_is_counted() {
    let server = Server::start();
    let store = fast_store(server.port);
    drop(server);
    let Err(err) = reserve(&store).await else {
        panic!("a call to a killed server succeeded");
    };
    let lenient = LimitKey::new("lenient").unwrap();
    let strict = LimitKey::new("strict").unwrap();
    assert_eq!(store.on_error(&lenient, &err), Fallback::Local);
    assert_eq!(store.on_error(&strict, &err), Fallback::Refuse);
    assert_eq!(store.on_error(&lenient, &err), Fallback::Local);
    let counts = store.counters();
    assert_eq!((counts.fallbacks, counts.refusals), (2, 1));
}
