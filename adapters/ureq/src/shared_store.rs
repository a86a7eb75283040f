//! The blocking client's shared store: Redis on a one-thread Tokio runtime of its own,
//! asked from the calling thread.

use std::sync::Arc;

use steadfast_core::time::Timestamp;
use steadfast_http::{LeaseAnswer, LeaseAsk, SetupError, Shared};
use steadfast_redis::client::{ClientStore, SharesState};
use steadfast_redis::{RedisConfig, RedisStore};

use crate::Inner;

/// The runtime and the store on `config`.
pub(crate) fn start(
    config: RedisConfig,
    shared: &Shared,
) -> Result<
    (
        Arc<tokio::runtime::Runtime>,
        (tokio::runtime::Handle, ClientStore),
    ),
    SetupError,
> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("steadfast-redis")
        .enable_all()
        .build()
        .map_err(|e| SetupError::SharedStore(format!("cannot start its runtime: {e}")))?;
    let store = {
        let _inside = runtime.enter();
        RedisStore::new(config).map_err(|e| SetupError::SharedStore(e.to_string()))?
    };
    let handle = runtime.handle().clone();
    Ok((Arc::new(runtime), (handle, ClientStore::new(store, shared))))
}

/// Takes `ask` to the store from the calling thread; the answer and the instant it
/// came.
pub(crate) fn lease(c: &Inner, ask: &LeaseAsk) -> (LeaseAnswer, Timestamp) {
    let answer = match &c.store {
        Some((runtime, store)) => {
            let deadline = tokio::time::Instant::from_std(c.clock.instant(ask.expires));
            runtime.block_on(store.lease(*ask, || c.clock.timestamp(), deadline))
        }
        None => LeaseAnswer::Failed,
    };
    (answer, c.clock.timestamp())
}

impl SharesState for Inner {
    fn client_store(&self) -> Option<&ClientStore> {
        self.store.as_ref().map(|(_, s)| s)
    }

    fn shared(&self) -> &Shared {
        &self.shared
    }

    fn now(&self) -> Timestamp {
        self.clock.timestamp()
    }
}
