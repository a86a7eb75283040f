//! The same behaviour as the layer, as a `reqwest_middleware::Middleware`.

use http::Extensions;
use reqwest_middleware::{Middleware, Next};
use reqwest13 as reqwest;

use crate::attempt::AttemptEdit;
use crate::drive;
use crate::layer::into_response;
use crate::peek::{Peeked, Tried};
use crate::{Client, IDEMPOTENCY_KEY};

/// A `reqwest_middleware::Middleware` that drives the core around the rest of the
/// chain: add it to a `ClientWithMiddleware` (rig takes one as its HTTP client).
///
/// Do not add `reqwest-retry`'s `RetryTransientMiddleware` beside it: stacked retries
/// multiply. Each attempt runs the rest of the chain with a copy of the request (a
/// request with a streaming body, which cannot be copied, is sent once) and a copy of
/// the extensions. After a give-up on an error response, that response comes back
/// with a [`GaveUpNote`](crate::GaveUpNote) in its extensions; a give-up with no
/// response is `reqwest_middleware::Error::Middleware` holding a
/// [`GaveUp`](crate::GaveUp).
#[derive(Debug, Clone)]
pub struct SteadfastMiddleware {
    client: Client,
}

impl SteadfastMiddleware {
    /// The middleware over `client`'s engine.
    pub fn new(client: &Client) -> SteadfastMiddleware {
        SteadfastMiddleware {
            client: client.clone(),
        }
    }
}

/// A copy of `request` for one attempt.
fn replay(request: &reqwest::Request, edit: &AttemptEdit) -> Option<reqwest::Request> {
    let mut r = request.try_clone()?;
    edit.apply_headers(r.headers_mut());
    if let Some(url) = edit.rebased(r.url().as_str()) {
        if let Ok(url) = reqwest::Url::parse(&url) {
            *r.url_mut() = url;
        }
    }
    Some(r)
}

#[async_trait::async_trait]
impl Middleware for SteadfastMiddleware {
    async fn handle(
        &self,
        request: reqwest::Request,
        extensions: &mut Extensions,
        next: Next<'_>,
    ) -> reqwest_middleware::Result<reqwest::Response> {
        let c = &self.client;
        let id = request.headers().get(IDEMPOTENCY_KEY);
        let id = id.and_then(|v| v.to_str().ok()).map(str::to_owned);
        let limit = c.shared().max_body();
        let mut once = Some(request);
        let mut template = None;
        let attempt = |edit: AttemptEdit| {
            // The first attempt sends the caller's request; it stays as the template
            // of the rest when it can be copied.
            let request = match once.take() {
                Some(mut first) => match replay(&first, &edit) {
                    Some(copy) => {
                        template = Some(first);
                        Some(copy)
                    }
                    None => {
                        edit.apply_headers(first.headers_mut());
                        Some(first)
                    }
                },
                None => template.as_ref().and_then(|t| replay(t, &edit)),
            };
            let (next, mut ext) = (next.clone(), extensions.clone());
            async move {
                let Some(request) = request else {
                    return Tried(Err(not_copyable()));
                };
                let response = next.run(request, &mut ext).await;
                match response {
                    Ok(r) => Tried(Ok(Peeked::read(r, limit).await)),
                    Err(e) => Tried(Err(e)),
                }
            }
        };
        let ended = drive::run(c, id.as_deref().map(str::as_bytes), attempt).await;
        into_response(ended).map_err(reqwest_middleware::Error::middleware)
    }
}

fn not_copyable() -> reqwest_middleware::Error {
    reqwest_middleware::Error::middleware(NotCopyable)
}

/// A request whose streaming body cannot be copied for another attempt.
#[derive(Debug)]
struct NotCopyable;

impl std::fmt::Display for NotCopyable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the request's streaming body cannot be sent again")
    }
}

impl std::error::Error for NotCopyable {}
