//! The `[shared]` table of `batch` and `serve` config files: where the Redis that
//! replicas share limits through is, beside the policy's own `shared` settings.
//!
//! ```toml
//! [shared]
//! redis = "redis://127.0.0.1:6379"   # makes every endpoint's `rpm` the shared total
//! prefix = "sf"                      # optional: keys' hash-tag prefix [default: sf]
//! call_timeout = "50ms"              # optional: the longest a Redis call waits
//! fail = "open"                      # the policy's: "open" (local limits) or "closed"
//! lease = 8                          # the policy's: the most requests one lease asks for
//! breaker = true                     # the policy's: share breakers' "open until" too
//! ledger = true                      # batch: each input id runs once between all workers
//! claim_for = "30s"                  # batch: a dead worker's lines are free after this
//! ```
//!
//! `redis`, `prefix`, `call_timeout`, `ledger` and `claim_for` are this table's own; every other field is
//! the policy's [`SharedConfig`] (so `steadfast sim` reads the same file).

use std::convert::Infallible;
use std::time::Duration;

use serde::Deserialize;
use steadfast_core::shared::claim::{Claim, ClaimAnswer, ClaimConfig, ClaimStep};
use steadfast_core::shared::{FailMode, SharedConfig};
use steadfast_core::time::Timestamp;
use steadfast_http::clock::Epoch;
use steadfast_redis::{RedisConfig, RedisStore};

/// The table's own fields.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SharedEntry {
    /// The Redis URL (`redis://host:port[/db]`; a password in it never appears in
    /// output).
    pub redis: String,
    /// The hash-tag prefix of every key.
    #[serde(default)]
    pub prefix: Option<String>,
    /// The longest one Redis call waits.
    #[serde(default, with = "opt_duration")]
    pub call_timeout: Option<Duration>,
    /// `batch`: run each input id once between every worker on this Redis (the
    /// shared idempotency ledger).
    #[serde(default)]
    pub ledger: bool,
    /// `batch` with `ledger`: how long a worker's claim on a running line lasts
    /// without renewal (a worker that dies leaves its lines after this).
    #[serde(default, with = "opt_duration")]
    pub claim_for: Option<Duration>,
}

/// The default of [`SharedEntry::claim_for`].
pub const CLAIM_FOR: Duration = Duration::from_secs(30);

impl SharedEntry {
    /// How long a claim lasts without renewal.
    pub fn claim_for(&self) -> Duration {
        self.claim_for.unwrap_or(CLAIM_FOR)
    }
}

impl std::fmt::Display for SharedEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The URL's host only: a password in it stays out of logs.
        let host = self.redis.rsplit('@').next().unwrap_or("");
        write!(f, "redis {host}")
    }
}

/// Splits a `[shared]` table into its own fields (`None` without `redis`: the
/// policy's settings alone, as a serialized policy holds them) and the policy's
/// [`SharedConfig`]; the error names the field.
pub fn split(table: toml::Value) -> Result<(Option<SharedEntry>, SharedConfig), String> {
    let toml::Value::Table(mut table) = table else {
        return Err("shared: expected a [shared] table".to_owned());
    };
    let mut own = toml::Table::new();
    for field in ["redis", "prefix", "call_timeout", "ledger", "claim_for"] {
        if let Some(v) = table.remove(field) {
            own.insert(field.to_owned(), v);
        }
    }
    let entry = match own.contains_key("redis") {
        true => Some(
            toml::Value::Table(own)
                .try_into::<SharedEntry>()
                .map_err(|e: toml::de::Error| format!("shared: {}", e.message()))?,
        ),
        false => match own.keys().next() {
            Some(field) => return Err(format!("shared.{field}: needs shared.redis")),
            None => None,
        },
    };
    let config: SharedConfig = toml::Value::Table(table)
        .try_into()
        .map_err(|e: toml::de::Error| format!("shared: {}", e.message()))?;
    config.validate().map_err(|e| e.to_string())?;
    Ok((entry, config))
}

/// A store on the table's Redis. Must run inside a Tokio runtime; it connects
/// lazily, so a Redis that is down now is a fallback, not a setup error.
pub fn store(entry: &SharedEntry, policy: &SharedConfig) -> Result<RedisStore, String> {
    let mut config = RedisConfig::default();
    config.url = entry.redis.clone();
    if let Some(p) = &entry.prefix {
        config.prefix = p.clone();
    }
    if let Some(t) = entry.call_timeout {
        config.call_timeout = t;
    }
    config.fail_mode = match policy.fail {
        FailMode::Open => steadfast_redis::FailMode::Open,
        FailMode::Closed => steadfast_redis::FailMode::Closed,
    };
    RedisStore::new(config).map_err(|e| match e.field() {
        // The store's `url` is this table's `redis`.
        "url" => format!(
            "shared.redis: {}",
            e.to_string().trim_start_matches("url: ")
        ),
        _ => format!("shared.{e}"),
    })
}

/// A name for this process no other has: `kind`, its process id and the instant it
/// started.
pub fn owner(kind: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{kind}-{}-{nanos}", std::process::id())
}

/// The ledger's name for `id`: its idempotency key (stable on every machine,
/// printable, never the id's own text).
pub fn ledger_name(id: &[u8]) -> String {
    let mut buf = [0u8; 36];
    steadfast_core::idempotency::IdempotencyKey::from_business_id(id)
        .as_str(&mut buf)
        .to_owned()
}

/// One process's claim on the ledger entry `name`: the core's [`Claim`] machine decides
/// when to ask, when to renew and what a Redis failure means; this only does the IO.
#[derive(Debug)]
pub struct EntryClaim {
    name: String,
    config: ClaimConfig,
    claim: Claim,
    epoch: Epoch,
    /// What another process stored, once the machine says the entry is done.
    stored: Vec<u8>,
}

/// What the turn on an entry came to.
#[derive(Debug, PartialEq, Eq)]
pub enum EntryTurn {
    /// Run it (this process holds the claim, or Redis failed and the claim fails
    /// open); [`EntryClaim::hold`] renews it.
    Run,
    /// Another process finished it and stored this.
    Done(Vec<u8>),
}

impl EntryClaim {
    /// A claim on `name` under `config`, wanted from now.
    pub fn new(name: String, config: ClaimConfig) -> EntryClaim {
        let epoch = Epoch::new(tokio::time::Instant::now().into_std());
        EntryClaim {
            claim: Claim::new(Timestamp::ZERO, &config),
            name,
            config,
            epoch,
            stored: Vec::new(),
        }
    }

    fn now(&self) -> Timestamp {
        self.epoch.timestamp(tokio::time::Instant::now().into_std())
    }

    /// Waits for `owner`'s turn (see [`EntryTurn`]).
    pub async fn turn(&mut self, store: &RedisStore, owner: &str) -> EntryTurn {
        loop {
            match self.claim.poll_claim(self.now()) {
                ClaimStep::Ask | ClaimStep::Renew => self.ask(store, owner).await,
                ClaimStep::Run { .. } => return EntryTurn::Run,
                ClaimStep::Done => return EntryTurn::Done(std::mem::take(&mut self.stored)),
                // Never: the ledgers' claims set no `give_up_after`.
                ClaimStep::GaveUp => return EntryTurn::Run,
                ClaimStep::Wait(at) => self.sleep_until(at).await,
            }
        }
    }

    /// Keeps `owner`'s claim alive until the future is dropped (it never ends by
    /// itself).
    pub async fn hold(&mut self, store: &RedisStore, owner: &str) -> Infallible {
        loop {
            match self.claim.poll_claim(self.now()) {
                ClaimStep::Ask | ClaimStep::Renew => self.ask(store, owner).await,
                ClaimStep::Wait(at) => self.sleep_until(at).await,
                // Before its turn, or over: nothing to renew, ever.
                _ => std::future::pending::<()>().await,
            }
        }
    }

    /// One claim call; its answer goes to the machine.
    async fn ask(&mut self, store: &RedisStore, owner: &str) {
        let answer = match store.claim(&self.name, owner, self.config.claim_for).await {
            Ok(steadfast_redis::Claim::Won) => ClaimAnswer::Won,
            Ok(steadfast_redis::Claim::HeldBy { .. }) => ClaimAnswer::Held,
            Ok(steadfast_redis::Claim::Done(stored)) => {
                self.stored = stored;
                ClaimAnswer::Done
            }
            Err(_) => ClaimAnswer::Failed,
        };
        self.claim.handle_claim(self.now(), answer);
    }

    async fn sleep_until(&self, at: Timestamp) {
        let at = tokio::time::Instant::from_std(self.epoch.instant(at));
        tokio::time::sleep_until(at).await;
    }
}

/// Waits for `owner`'s turn on the ledger entry `name` (see [`EntryClaim::turn`]):
/// `None` once it may run it, or what another process stored when it finished.
pub async fn claim_turn(
    store: &RedisStore,
    name: &str,
    owner: &str,
    claim_for: Duration,
    fail: FailMode,
) -> Option<Vec<u8>> {
    let mut claim = EntryClaim::new(name.to_owned(), ClaimConfig::new(claim_for, fail));
    match claim.turn(store, owner).await {
        EntryTurn::Run => None,
        EntryTurn::Done(stored) => Some(stored),
    }
}

mod opt_duration {
    use serde::{Deserialize, Deserializer};
    use std::time::Duration;

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        let text = String::deserialize(d)?;
        steadfast_core::duration::parse(text.as_bytes())
            .map(Some)
            .ok_or_else(|| serde::de::Error::custom(format!("not a duration: {text:?}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> toml::Value {
        toml::from_str::<toml::Table>(text)
            .map(toml::Value::Table)
            .expect("toml")
    }

    #[test]
    fn the_table_splits_into_the_store_and_the_policy() {
        let (entry, config) = split(table(
            "redis = \"redis://:pw@127.0.0.1:6379\"\ncall_timeout = \"20ms\"\nfail = \"closed\"\nlease = 4\n",
        ))
        .expect("a good table");
        let entry = entry.expect("a store");
        assert_eq!(entry.redis, "redis://:pw@127.0.0.1:6379");
        assert_eq!(entry.call_timeout, Some(Duration::from_millis(20)));
        assert_eq!(config.fail, FailMode::Closed);
        assert_eq!(config.lease, 4);
        assert!(!config.breaker, "breakers are not shared unless asked");
        assert!(!entry.to_string().contains("pw"), "{entry}");
        let (_, config) = split(table("redis = \"redis://x\"\nbreaker = true\n")).expect("good");
        assert!(config.breaker);
    }

    #[test]
    fn errors_name_the_field() {
        let e = split(table("redis = \"redis://x\"\nleese = 4\n")).expect_err("unknown field");
        assert!(e.contains("leese"), "{e}");
        let e = split(table("ledger = true\n")).expect_err("no url");
        assert!(e.contains("shared.ledger: needs shared.redis"), "{e}");
        // A serialized policy's table: its settings, no store.
        let (entry, config) = split(table("lease = 4\n")).expect("the policy's settings");
        assert_eq!((entry, config.lease), (None, 4));
        let e = split(table("redis = \"redis://x\"\nlease = 0\n")).expect_err("zero lease");
        assert!(e.contains("shared.lease"), "{e}");
        let e = split(table("redis = \"redis://x\"\ncall_timeout = \"soon\"\n")).expect_err("bad");
        assert!(e.contains("soon"), "{e}");
    }
}
