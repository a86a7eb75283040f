//! The tower layer: every request through the core, each attempt through the inner
//! service.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use tower_layer::Layer;
use tower_service::Service;

use crate::attempt::AttemptEdit;
use crate::drive::{self, Ended};
use crate::error::{GaveUp, GaveUpNote};
use crate::peek::{PeekBody, Peeked, Tried};
use crate::{Client, IDEMPOTENCY_KEY};

/// A request the layer can send again: a fresh copy per attempt, with the attempt's
/// headers (and URL, on failover).
///
/// Implemented for `http::Request<B>` with a `Clone` body (`Bytes`, `String`,
/// `Full<Bytes>`…) and, with the feature `async-openai`, for async-openai's
/// `HttpRequestFactory` (rebuilt by its own factory for each attempt).
pub trait Replay: Sized {
    /// The request for one attempt.
    fn replay(&self, edit: &AttemptEdit) -> Self;

    /// The `Idempotency-Key` the caller set, if any: every attempt keeps it, and the
    /// call's idempotency key is derived from it.
    fn idempotency_key(&self) -> Option<String> {
        None
    }
}

impl<B: Clone> Replay for http::Request<B> {
    fn replay(&self, edit: &AttemptEdit) -> Self {
        let mut r = http::Request::new(self.body().clone());
        *r.method_mut() = self.method().clone();
        *r.version_mut() = self.version();
        *r.headers_mut() = self.headers().clone();
        *r.extensions_mut() = self.extensions().clone();
        let moved = edit.moves().then(|| edit.rebased(&self.uri().to_string()));
        *r.uri_mut() = moved
            .flatten()
            .and_then(|u| u.parse().ok())
            .unwrap_or_else(|| self.uri().clone());
        edit.apply_headers(r.headers_mut());
        r
    }

    fn idempotency_key(&self) -> Option<String> {
        let v = self.headers().get(IDEMPOTENCY_KEY)?;
        v.to_str().ok().map(str::to_owned)
    }
}

/// A `tower::Layer` that drives the core around the inner service. Build it from a
/// [`Client`] (its engine, endpoints and keys are shared by every service it makes).
///
/// The inner service's own retries must be off (see the crate's documentation).
#[derive(Debug, Clone)]
pub struct SteadfastLayer {
    client: Client,
}

impl SteadfastLayer {
    /// A layer over `client`'s engine.
    pub fn new(client: &Client) -> SteadfastLayer {
        SteadfastLayer {
            client: client.clone(),
        }
    }
}

impl<S> Layer<S> for SteadfastLayer {
    type Service = SteadfastService<S>;

    fn layer(&self, inner: S) -> SteadfastService<S> {
        SteadfastService {
            inner,
            client: self.client.clone(),
        }
    }
}

/// The layer's service: each call one logical call of the core, each attempt a call
/// of a clone of the inner service.
///
/// Its response is the successful attempt's, handed on at its head (a stream's body
/// is the caller's); after a give-up on an error response, that response, with a
/// [`GaveUpNote`] in its extensions, so that the inner client reports it as it always
/// does. A give-up with no response to hand back is a [`GaveUp`], its source the inner
/// service's last error.
#[derive(Debug, Clone)]
pub struct SteadfastService<S> {
    inner: S,
    client: Client,
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

impl<S, Req> Service<Req> for SteadfastService<S>
where
    Req: Replay + Send + 'static,
    S: Service<Req> + Clone + Send + 'static,
    S::Future: Send,
    S::Response: PeekBody + 'static,
    S::Error: std::error::Error + Send + 'static,
{
    type Response = S::Response;
    type Error = GaveUp<S::Error>;
    type Future = BoxFuture<Result<S::Response, GaveUp<S::Error>>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        // Each attempt waits for its own clone of the inner service to be ready.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Req) -> Self::Future {
        let client = self.client.clone();
        let inner = self.inner.clone();
        Box::pin(async move { serve(client, inner, request).await })
    }
}

async fn serve<S, Req>(
    client: Client,
    inner: S,
    request: Req,
) -> Result<S::Response, GaveUp<S::Error>>
where
    Req: Replay + Send + 'static,
    S: Service<Req> + Clone + Send + 'static,
    S::Future: Send,
    S::Response: PeekBody + 'static,
    S::Error: std::error::Error + Send + 'static,
{
    let id = request.idempotency_key();
    let limit = client.shared().max_body();
    let attempt = move |edit: AttemptEdit| {
        let request = request.replay(&edit);
        let mut svc = inner.clone();
        async move {
            let tried = async {
                std::future::poll_fn(|cx| svc.poll_ready(cx)).await?;
                let response = svc.call(request).await?;
                Ok(Peeked::read(response, limit).await)
            };
            Tried(tried.await)
        }
    };
    let ended = drive::run(&client, id.as_deref().map(str::as_bytes), attempt).await;
    into_response(ended)
}

/// The response to hand on: the success, or the last error response of a call that
/// gave up; a [`GaveUp`] when there is none.
pub(crate) fn into_response<R: PeekBody, E>(ended: Ended<Tried<R, E>>) -> Result<R, GaveUp<E>>
where
    E: std::error::Error + 'static,
{
    let Err(mut error) = ended.started else {
        return ended.into_result().map_err(GaveUp::new);
    };
    match ended.last.map(|t| t.0) {
        Some(Ok(mut p)) => {
            p.response.extensions_mut().insert(GaveUpNote::of(&error));
            Ok(p.response)
        }
        Some(Err(e)) => {
            error.source = Some(e);
            Err(GaveUp::new(error))
        }
        None => Err(GaveUp::new(error)),
    }
}
