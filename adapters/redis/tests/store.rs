//! Every store operation against a real `redis-server` on 127.0.0.1. Exact values
//! are derived from the server instants the scripts report, never from local time.

mod common;

use common::{Redis, ttls, unique_prefix};
use std::time::Duration;
use steadfast_redis::{Claim, Decision, Invalid, KeyShared, LimitKey, Rate, StoreError, TokenRate};

const MS: u64 = 1_000;

fn limit(name: &str) -> LimitKey {
    LimitKey::new(name).unwrap()
}

fn granted(d: Decision) -> (u32, u32) {
    match d {
        Decision::Granted { n, remaining, .. } => (n, remaining),
        other => panic!("expected a grant, got {other:?}"),
    }
}

fn waited(d: Decision) -> Duration {
    match d {
        Decision::NotBefore { wait, .. } => wait,
        other => panic!("expected a wait, got {other:?}"),
    }
}

#[tokio::test]
async fn requests_get_the_burst_then_a_wait_relative_to_the_server_clock() {
    let redis = Redis::shared();
    let store = redis.store(&unique_prefix("gcra"));
    let (l, rate) = (
        limit("openai:k0"),
        Rate {
            per_minute: 600,
            burst: 3,
        },
    );
    let first = store.reserve_requests(&l, rate, 1).await.unwrap();
    assert_eq!(granted(first), (1, 2));
    assert_eq!(
        granted(store.reserve_requests(&l, rate, 1).await.unwrap()),
        (1, 1)
    );
    assert_eq!(
        granted(store.reserve_requests(&l, rate, 1).await.unwrap()),
        (1, 0)
    );
    let denied = store.reserve_requests(&l, rate, 1).await.unwrap();
    // Three grants put the arrival time at first + 3T; a fourth fits at first + T.
    let elapsed = denied.server_us() - first.server_us();
    assert_eq!(waited(denied), Duration::from_micros(100 * MS - elapsed));
}

#[tokio::test]
async fn two_stores_as_two_replicas_share_one_limit() {
    let redis = Redis::shared();
    let prefix = unique_prefix("replicas");
    let (a, b) = (redis.store(&prefix), redis.store(&prefix));
    let (l, rate) = (
        limit("shared"),
        Rate {
            per_minute: 60,
            burst: 4,
        },
    );
    let mut grants = 0;
    for i in 0..10 {
        let store = if i % 2 == 0 { &a } else { &b };
        if let Decision::Granted { .. } = store.reserve_requests(&l, rate, 1).await.unwrap() {
            grants += 1;
        }
    }
    assert_eq!(grants, 4);
    let wait = waited(b.reserve_requests(&l, rate, 1).await.unwrap());
    assert!(
        wait > Duration::from_millis(900) && wait <= Duration::from_secs(1),
        "{wait:?}"
    );
}

#[tokio::test]
async fn a_lease_takes_a_quarter_of_what_is_left_and_can_be_given_back() {
    let redis = Redis::shared();
    let store = redis.store(&unique_prefix("lease"));
    let (l, rate) = (
        limit("lease"),
        Rate {
            per_minute: 600,
            burst: 20,
        },
    );
    let first = store.lease(&l, rate, 100).await.unwrap();
    assert_eq!(
        (first.requests, first.valid_for),
        (5, Duration::from_millis(500))
    );
    let second = store.lease(&l, rate, 100).await.unwrap();
    assert_eq!(second.requests, 3); // ⌊15 / 4⌋
    let back = store.release_lease(&l, rate, &second, 3).await.unwrap();
    assert_eq!(back.refunded, 3);
    assert_eq!(store.lease(&l, rate, 2).await.unwrap().requests, 2);
    let too_many = store.release_lease(&l, rate, &first, 6).await;
    assert_eq!(
        too_many,
        Err(StoreError::Invalid(Invalid::OutOfRange { field: "unused" }))
    );
}

#[tokio::test]
async fn an_empty_bucket_leases_nothing_and_says_when_one_is_free() {
    let redis = Redis::shared();
    let store = redis.store(&unique_prefix("lease0"));
    let (l, rate) = (
        limit("tiny"),
        Rate {
            per_minute: 60,
            burst: 1,
        },
    );
    let one = store.lease(&l, rate, 5).await.unwrap();
    assert_eq!(one.requests, 1);
    let none = store.lease(&l, rate, 5).await.unwrap();
    assert_eq!((none.requests, none.valid_for), (0, Duration::ZERO));
    let elapsed = none.server_us - one.server_us;
    assert_eq!(none.retry_in, Duration::from_micros(1_000 * MS - elapsed));
}

#[tokio::test]
async fn tokens_reserve_then_reconcile_refunds_and_an_overrun_is_waited_out() {
    let redis = Redis::shared();
    let store = redis.store(&unique_prefix("tokens"));
    // One token per millisecond, 1000 at once.
    let (l, rate) = (
        limit("tpm"),
        TokenRate {
            per_minute: 60_000,
            burst: 1_000,
        },
    );
    let first = store.reserve_tokens(&l, rate, 800).await.unwrap();
    assert_eq!(granted(first), (800, 200));
    let short = store.reserve_tokens(&l, rate, 500).await.unwrap();
    let elapsed = short.server_us() - first.server_us();
    assert_eq!(
        waited(short),
        Duration::from_micros((300 * MS).saturating_sub(elapsed))
    );
    let refund = store.reconcile_tokens(&l, rate, 800, 300).await.unwrap();
    assert_eq!(refund.difference, 500);
    assert!(refund.balance >= 700, "{refund:?}");
    assert_eq!(
        granted(store.reserve_tokens(&l, rate, 500).await.unwrap()).0,
        500
    );
    let overrun = store.reconcile_tokens(&l, rate, 500, 2_500).await.unwrap();
    assert_eq!(overrun.difference, -2_000);
    assert!(overrun.balance < 0, "{overrun:?}");
    let after = waited(store.reserve_tokens(&l, rate, 10).await.unwrap());
    assert!(after > Duration::from_secs(1), "{after:?}");
}

#[tokio::test]
async fn a_cooldown_only_extends_and_a_disable_ends_on_enable() {
    let redis = Redis::shared();
    let store = redis.store(&unique_prefix("keys"));
    let ten = Duration::from_secs(10);
    assert_eq!(store.cool_key("k-ab12", ten).await.unwrap(), ten);
    let kept = store
        .cool_key("k-ab12", Duration::from_secs(1))
        .await
        .unwrap();
    assert!(kept > Duration::from_secs(9) && kept <= ten, "{kept:?}");
    store
        .disable_key("k-cd34", Duration::from_secs(60))
        .await
        .unwrap();
    let states = store
        .key_states(&["k-ab12", "k-cd34", "k-none"])
        .await
        .unwrap();
    let cooling = states[0].cooling_for.unwrap();
    assert!(
        cooling > Duration::from_secs(9) && !states[0].disabled,
        "{states:?}"
    );
    assert_eq!(
        states[1],
        KeyShared {
            cooling_for: None,
            disabled: true
        }
    );
    assert_eq!(states[2], KeyShared::default());
    store.enable_key("k-cd34").await.unwrap();
    assert!(!store.key_states(&["k-cd34"]).await.unwrap()[0].disabled);
    assert_eq!(store.key_states(&[]).await.unwrap(), vec![]);
}

#[tokio::test]
async fn an_endpoint_stays_open_for_the_longest_time_any_replica_asked() {
    let redis = Redis::shared();
    let prefix = unique_prefix("open");
    let (a, b) = (redis.store(&prefix), redis.store(&prefix));
    assert_eq!(a.endpoint_open("openai").await.unwrap(), None);
    a.open_endpoint("openai", Duration::from_secs(5), Duration::from_secs(6))
        .await
        .unwrap();
    b.open_endpoint(
        "openai",
        Duration::from_millis(10),
        Duration::from_millis(10),
    )
    .await
    .unwrap();
    let open = b.endpoint_open("openai").await.unwrap().unwrap();
    assert!(
        open.left > Duration::from_secs(4) && open.left <= Duration::from_secs(5),
        "{open:?}"
    );
    assert_eq!(
        open.whole,
        Duration::from_secs(6),
        "the longer open's whole"
    );
}

#[tokio::test]
async fn the_ledger_lets_one_owner_work_and_replays_its_result() {
    let redis = Redis::shared();
    let prefix = unique_prefix("ledger");
    let (a, b) = (redis.store(&prefix), redis.store(&prefix));
    let ttl = Duration::from_secs(60);
    let result = [0u8, 159, 146, 150, b'o', b'k'];
    assert_eq!(
        a.claim("order-7", "worker-a", ttl).await.unwrap(),
        Claim::Won
    );
    assert_eq!(
        a.claim("order-7", "worker-a", ttl).await.unwrap(),
        Claim::Won
    );
    let held = b.claim("order-7", "worker-b", ttl).await.unwrap();
    assert_eq!(
        held,
        Claim::HeldBy {
            owner: "worker-a".into()
        }
    );
    assert!(!b.complete("order-7", "worker-b", b"no", ttl).await.unwrap());
    assert!(
        a.complete("order-7", "worker-a", &result, ttl)
            .await
            .unwrap()
    );
    let replay = b.claim("order-7", "worker-b", ttl).await.unwrap();
    assert_eq!(replay, Claim::Done(result.to_vec()));
    assert!(!a.release("order-7", "worker-a").await.unwrap());
}

#[tokio::test]
async fn only_the_owner_releases_and_a_dead_owner_s_claim_expires() {
    let redis = Redis::shared();
    let prefix = unique_prefix("release");
    let (a, b) = (redis.store(&prefix), redis.store(&prefix));
    let ttl = Duration::from_secs(60);
    assert_eq!(a.claim("id-1", "a", ttl).await.unwrap(), Claim::Won);
    assert!(!b.release("id-1", "b").await.unwrap());
    assert!(a.release("id-1", "a").await.unwrap());
    assert_eq!(b.claim("id-1", "b", ttl).await.unwrap(), Claim::Won);

    assert_eq!(
        a.claim("id-2", "a", Duration::from_millis(30))
            .await
            .unwrap(),
        Claim::Won
    );
    let mut took_over = false;
    for _ in 0..200 {
        if b.claim("id-2", "b", ttl).await.unwrap() == Claim::Won {
            took_over = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(took_over, "the dead owner's claim never expired");
    assert!(!a.complete("id-2", "a", b"late", ttl).await.unwrap());
}

#[tokio::test]
async fn bad_ids_and_ranges_are_refused_before_anything_is_sent() {
    let redis = Redis::shared();
    let store = redis.store(&unique_prefix("invalid"));
    let long = "x".repeat(129);
    assert!(matches!(
        store.cool_key(&long, Duration::from_secs(1)).await,
        Err(StoreError::Invalid(Invalid::TooLong { len: 129, .. }))
    ));
    assert!(matches!(
        store.claim("a{b}", "o", Duration::from_secs(1)).await,
        Err(StoreError::Invalid(Invalid::Byte { byte: b'{', .. }))
    ));
    let l = limit("l");
    let bad_burst = store
        .reserve_requests(
            &l,
            Rate {
                per_minute: 1,
                burst: 0,
            },
            1,
        )
        .await;
    assert!(matches!(
        bad_burst,
        Err(StoreError::Invalid(Invalid::OutOfRange { .. }))
    ));
    let too_many = store
        .reserve_requests(
            &l,
            Rate {
                per_minute: 1,
                burst: 2,
            },
            3,
        )
        .await;
    assert!(matches!(
        too_many,
        Err(StoreError::Invalid(Invalid::OutOfRange { field: "n" }))
    ));
    let forever = store.disable_key("k", Duration::ZERO).await;
    assert!(matches!(
        forever,
        Err(StoreError::Invalid(Invalid::OutOfRange { field: "ttl" }))
    ));
    let counts = store.counters();
    assert_eq!((counts.calls, counts.invalid), (0, 5));
}

#[tokio::test]
async fn every_key_written_has_a_ttl() {
    let redis = Redis::shared();
    let prefix = unique_prefix("ttl");
    let store = redis.store(&prefix);
    let l = limit("ttl");
    let rate = Rate {
        per_minute: 60,
        burst: 10,
    };
    let tokens = TokenRate {
        per_minute: 60,
        burst: 100,
    };
    store.reserve_requests(&l, rate, 2).await.unwrap();
    let lease = store.lease(&l, rate, 4).await.unwrap();
    store.release_lease(&l, rate, &lease, 1).await.unwrap();
    store.reserve_tokens(&l, tokens, 50).await.unwrap();
    store.reconcile_tokens(&l, tokens, 50, 70).await.unwrap();
    store.cool_key("k", Duration::from_secs(30)).await.unwrap();
    store
        .disable_key("k", Duration::from_secs(30))
        .await
        .unwrap();
    store
        .open_endpoint("e", Duration::from_secs(30), Duration::from_secs(30))
        .await
        .unwrap();
    store
        .claim("c1", "o", Duration::from_secs(30))
        .await
        .unwrap();
    store
        .claim("c2", "o", Duration::from_secs(30))
        .await
        .unwrap();
    store
        .complete("c2", "o", b"r", Duration::from_secs(30))
        .await
        .unwrap();
    let mut keys = ttls(&redis.url, &prefix).await;
    keys.sort();
    let names: Vec<&str> = keys.iter().map(|(k, _)| k.as_str()).collect();
    let ns = format!("{prefix}1");
    let expected = [
        format!("{{{ns}:e:e}}:open"),
        format!("{{{ns}:i:c1}}:claim"),
        format!("{{{ns}:i:c2}}:claim"),
        format!("{{{ns}:k:k}}:cool"),
        format!("{{{ns}:k:k}}:off"),
        format!("{{{ns}:l:ttl}}:req"),
        format!("{{{ns}:l:ttl}}:tok"),
    ];
    assert_eq!(
        names,
        expected.iter().map(String::as_str).collect::<Vec<_>>()
    );
    for (key, ttl) in &keys {
        assert!(*ttl > 0, "{key} has PTTL {ttl}");
    }
}

#[tokio::test]
async fn a_full_bucket_leaves_no_key_behind() {
    let redis = Redis::shared();
    let prefix = unique_prefix("full");
    let store = redis.store(&prefix);
    let (l, tokens) = (
        limit("refund"),
        TokenRate {
            per_minute: 60,
            burst: 100,
        },
    );
    store.reserve_tokens(&l, tokens, 40).await.unwrap();
    let all_back = store.reconcile_tokens(&l, tokens, 40, 0).await.unwrap();
    assert_eq!(all_back.balance, 100);
    assert_eq!(ttls(&redis.url, &prefix).await, vec![]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_callers_at_once_never_get_more_than_the_rate_allows_nor_less() {
    let redis = Redis::shared();
    let prefix = unique_prefix("crowd");
    let stores: Vec<_> = (0..4).map(|_| redis.store(&prefix)).collect();
    let rate = Rate {
        per_minute: 60_000,
        burst: 10,
    }; // T = 1 ms
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..16 {
        let store = stores[i % stores.len()].clone();
        tasks.spawn(async move {
            let l = limit("crowd");
            let mut answers = Vec::new();
            for _ in 0..40 {
                let via_lease = answers.len() % 3 == 0;
                let d = if via_lease {
                    let lease = store.lease(&l, rate, 3).await.unwrap();
                    (lease.server_us, lease.requests)
                } else {
                    let d = store.reserve_requests(&l, rate, 1).await.unwrap();
                    let n = if let Decision::Granted { n, .. } = d {
                        n
                    } else {
                        0
                    };
                    (d.server_us(), n)
                };
                answers.push(d);
            }
            answers
        });
    }
    let mut all = Vec::new();
    while let Some(done) = tasks.join_next().await {
        all.extend(done.unwrap());
    }
    let first = all.iter().map(|a| a.0).min().unwrap();
    let last = all.iter().map(|a| a.0).max().unwrap();
    let granted: u64 = all.iter().map(|a| u64::from(a.1)).sum();
    // A full bucket of 10, then one more per millisecond of server time.
    let allowed = 10 + (last - first) / MS + 1;
    assert!(granted <= allowed, "{granted} granted, {allowed} allowed");
    assert!(
        granted >= 10,
        "only {granted} granted from a full bucket of 10"
    );
}

#[tokio::test]
async fn a_redis_error_is_a_script_error_and_is_counted() {
    let redis = Redis::shared();
    let prefix = unique_prefix("wrongtype");
    let store = redis.store(&prefix);
    let mut raw = common::raw(&redis.url).await;
    let () = redis::cmd("HSET")
        .arg(format!("{{{prefix}1:l:x}}:req"))
        .arg("f")
        .arg("v")
        .query_async(&mut raw)
        .await
        .unwrap();
    let _: i64 = redis::cmd("PEXPIRE")
        .arg(format!("{{{prefix}1:l:x}}:req"))
        .arg(60_000)
        .query_async(&mut raw)
        .await
        .unwrap();
    let r = store
        .reserve_requests(
            &limit("x"),
            Rate {
                per_minute: 60,
                burst: 1,
            },
            1,
        )
        .await;
    let Err(StoreError::Script(e)) = r else {
        panic!("expected a script error, got {r:?}");
    };
    assert_eq!(e.op, "reserve_requests");
    assert!(
        e.code.contains("WRONGTYPE") || e.detail.contains("WRONGTYPE"),
        "{e:?}"
    );
    assert_eq!(store.counters().script_errors, 1);
}

#[test]
fn a_store_needs_a_tokio_runtime() {
    let r = steadfast_redis::RedisStore::new(steadfast_redis::RedisConfig::default());
    assert_eq!(r.err(), Some(steadfast_redis::ConfigError::Runtime));
}
