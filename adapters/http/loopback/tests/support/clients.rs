//! The two adapters as harnesses: `steadfast-reqwest` (async, driven from a shared
//! multi-thread runtime) and `steadfast-ureq` (blocking).

use std::sync::OnceLock;

use futures_util::StreamExt;
use serde_json::Value;
use steadfast_http::{CallError, CallOptions, MetricsSnapshot, Reply, Shared};

use super::{Build, Harness, Streamed, Texts};

/// `$builder` (either client's: they share these settings through
/// `steadfast_http::shared_builder_settings!`) with everything `$build` sets.
macro_rules! configured {
    ($builder:expr, $build:expr) => {{
        let b: Build = $build;
        let mut builder = $builder.policy(b.policy).seed_u64(b.seed);
        if let Some(max) = b.max_body {
            builder = builder.max_body(max);
        }
        for e in b.endpoints {
            builder = builder.endpoint(e);
        }
        for f in b.fallbacks {
            builder = builder.fallback(f);
        }
        if let Some(n) = b.knobs.max_retries {
            builder = builder.max_retries(n);
        }
        if let Some(t) = b.knobs.timeout {
            builder = builder.timeout(t);
        }
        if let Some(d) = b.knobs.deadline {
            builder = builder.deadline(d);
        }
        if let Some(on) = b.knobs.canonical {
            builder = builder.canonical(on);
        }
        builder
    }};
}

/// The runtime the reqwest harness runs its calls on.
pub fn rt() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime")
    })
}

pub struct Reqwest;

impl Harness for Reqwest {
    type Client = steadfast_reqwest::Client;
    type Source = reqwest::Error;
    const NAME: &'static str = "reqwest";

    fn build(b: Build) -> Self::Client {
        let builder = configured!(steadfast_reqwest::Client::builder(), b);
        let _guard = rt().enter();
        builder.build().expect("client builds")
    }

    fn chat<R: serde::Serialize + Send>(
        c: &Self::Client,
        body: R,
    ) -> Result<Reply, CallError<reqwest::Error>> {
        rt().block_on(c.chat(body))
    }

    fn chat_with(
        c: &Self::Client,
        id: &str,
        body: Value,
    ) -> Result<Reply, CallError<reqwest::Error>> {
        rt().block_on(c.chat_with(id, body))
    }

    fn chat_opts(
        c: &Self::Client,
        body: Value,
        options: &CallOptions,
    ) -> Result<Reply, CallError<reqwest::Error>> {
        rt().block_on(c.chat_with_options(body, options))
    }

    fn stream(c: &Self::Client, body: Value) -> Streamed<reqwest::Error> {
        rt().block_on(async {
            let stream = c.stream(body).await?;
            Ok(stream.collect::<Vec<_>>().await)
        })
    }

    fn stream_text(c: &Self::Client, body: Value) -> Texts<reqwest::Error> {
        rt().block_on(async {
            let stream = c.stream(body).await?;
            Ok(stream.text().collect::<Vec<_>>().await)
        })
    }

    fn metrics(c: &Self::Client) -> MetricsSnapshot {
        c.metrics()
    }

    fn shared(c: &Self::Client) -> &Shared {
        c.shared()
    }
}

pub struct Ureq;

impl Harness for Ureq {
    type Client = steadfast_ureq::Client;
    type Source = ureq::Error;
    const NAME: &'static str = "ureq";

    fn build(b: Build) -> Self::Client {
        configured!(steadfast_ureq::Client::builder(), b)
            .build()
            .expect("client builds")
    }

    fn chat<R: serde::Serialize + Send>(
        c: &Self::Client,
        body: R,
    ) -> Result<Reply, CallError<ureq::Error>> {
        c.chat(body)
    }

    fn chat_with(c: &Self::Client, id: &str, body: Value) -> Result<Reply, CallError<ureq::Error>> {
        c.chat_with(id, body)
    }

    fn chat_opts(
        c: &Self::Client,
        body: Value,
        options: &CallOptions,
    ) -> Result<Reply, CallError<ureq::Error>> {
        c.chat_with_options(body, options)
    }

    fn stream(c: &Self::Client, body: Value) -> Streamed<ureq::Error> {
        Ok(c.stream(body)?.collect())
    }

    fn stream_text(c: &Self::Client, body: Value) -> Texts<ureq::Error> {
        Ok(c.stream(body)?.text().collect())
    }

    fn metrics(c: &Self::Client) -> MetricsSnapshot {
        c.metrics()
    }

    fn shared(c: &Self::Client) -> &Shared {
        c.shared()
    }
}
