//! One attempt as the caller's client sends it.

use std::sync::Arc;
use std::time::Duration;

use http::HeaderMap;
use http::header::AUTHORIZATION;
use steadfast_http::{IDEMPOTENCY_KEY, Outgoing, X_API_KEY};

/// What one attempt must carry: the headers of the key the core chose and the call's
/// idempotency key, where it goes, and how long it may take.
///
/// `Debug` shows no secret: the authentication headers are marked sensitive.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Attempt {
    /// 1 for the first attempt of the call, 2 for its first retry, ...
    pub number: u32,
    /// Content type, the chosen key's authentication (marked sensitive), the API
    /// version and `Idempotency-Key`: set them on the request, replacing the client's.
    pub headers: HeaderMap,
    /// The chosen endpoint's base URL, as configured.
    pub base_url: String,
    /// The chosen endpoint's chat URL (`…/v1/chat/completions`, `…/v1/messages`).
    pub url: String,
    /// The chosen endpoint's name.
    pub endpoint: String,
    /// The attempt must end within this span (the executor enforces it on tokio's
    /// clock; a blocking closure sets it as its client's timeout).
    pub timeout: Duration,
    /// The call's idempotency key (also in `headers`), the same on every attempt.
    pub idempotency_key: String,
}

impl Attempt {
    /// The attempt the session prepared, its headers moved (not copied) into it.
    pub(crate) fn new(out: Outgoing<'_>, number: u32, base_url: &str, endpoint: &str) -> Attempt {
        let mut buf = [0u8; 36];
        Attempt {
            number,
            timeout: out.timeout(),
            idempotency_key: out.attempt.idempotency_key.as_str(&mut buf).to_owned(),
            url: out.url.to_owned(),
            headers: out.headers,
            base_url: base_url.to_owned(),
            endpoint: endpoint.to_owned(),
        }
    }

    /// Sets this attempt's headers on `headers`: the chosen key's authentication
    /// replaces the client's own (of either provider), the rest is overwritten.
    pub fn apply_headers(&self, headers: &mut HeaderMap) {
        set_headers(&self.headers, headers);
    }

    /// The chosen key itself, for a client that builds its own authentication header
    /// from a key (genai's auth resolver). Keep it out of logs.
    pub fn api_key(&self) -> Option<&str> {
        if let Some(v) = self.headers.get(X_API_KEY) {
            return v.to_str().ok();
        }
        let v = self.headers.get(AUTHORIZATION)?.to_str().ok()?;
        v.strip_prefix("Bearer ")
    }

    /// The value of the `Idempotency-Key` header.
    pub fn idempotency_header(&self) -> Option<&http::HeaderValue> {
        self.headers.get(IDEMPOTENCY_KEY)
    }
}

/// How a request is changed for one attempt: the attempt's headers, and its URL moved
/// to the chosen endpoint when the client has several. Cheap to clone (one shared
/// allocation), `'static`, for requests rebuilt later (async-openai's request factory).
#[derive(Debug, Clone)]
pub struct AttemptEdit {
    inner: Arc<Edit>,
}

#[derive(Debug)]
struct Edit {
    headers: HeaderMap,
    /// The client and the chosen endpoint's base URL, when a request may have to move
    /// between the client's endpoints.
    rebase: Option<(crate::Client, String)>,
}

impl AttemptEdit {
    /// The edit of `attempt`, for a request made for one of `client`'s endpoints.
    pub fn new(attempt: &Attempt, client: &crate::Client) -> AttemptEdit {
        let rebase = client.fails_over();
        let rebase = rebase.then(|| (client.clone(), attempt.base_url.clone()));
        AttemptEdit::of(attempt.headers.clone(), rebase)
    }

    /// The edit of the attempt the session prepared, its headers moved into it.
    pub(crate) fn from_outgoing(out: Outgoing<'_>, client: &crate::Client) -> AttemptEdit {
        let rebase = client.fails_over().then(|| {
            let base = client.base_url(usize::from(out.attempt.target.endpoint.0));
            (client.clone(), base.to_owned())
        });
        AttemptEdit::of(out.headers, rebase)
    }

    fn of(headers: HeaderMap, rebase: Option<(crate::Client, String)>) -> AttemptEdit {
        AttemptEdit {
            inner: Arc::new(Edit { headers, rebase }),
        }
    }

    /// Sets the attempt's headers (see [`Attempt::apply_headers`]).
    pub fn apply_headers(&self, headers: &mut HeaderMap) {
        set_headers(&self.inner.headers, headers);
    }

    /// Whether [`AttemptEdit::rebased`] may move a URL (the client has several
    /// endpoints).
    pub(crate) fn moves(&self) -> bool {
        self.inner.rebase.is_some()
    }

    /// `url` moved to the chosen endpoint, when it was made for another one of the
    /// client's endpoints; `None` when it stays.
    pub fn rebased(&self, url: &str) -> Option<String> {
        let (client, to) = self.inner.rebase.as_ref()?;
        let from = client.base_url(client.endpoint_of(url)?);
        if from.trim_end_matches('/') == to.trim_end_matches('/') {
            return None;
        }
        rebase(url, from, to)
    }
}

/// Sets `attempt`'s headers on `headers`, the authentication of either provider
/// removed first.
fn set_headers(attempt: &HeaderMap, headers: &mut HeaderMap) {
    headers.remove(AUTHORIZATION);
    headers.remove(X_API_KEY);
    for (name, value) in attempt {
        headers.insert(name, value.clone());
    }
}

/// `url` moved from the endpoint at `from` to the one at `to` (both base URLs, with or
/// without a trailing `/`); `None` when `url` is not under `from`.
pub(crate) fn rebase(url: &str, from: &str, to: &str) -> Option<String> {
    let from = from.trim_end_matches('/');
    let rest = url.strip_prefix(from)?;
    if !(rest.is_empty() || rest.starts_with('/') || rest.starts_with('?')) {
        return None;
    }
    Some(format!("{}{rest}", to.trim_end_matches('/')))
}

#[cfg(test)]
mod tests {
    use super::rebase;

    #[test]
    fn rebase_moves_the_path_to_the_other_endpoint() {
        let url = "http://127.0.0.1:1/v1/chat/completions?x=1";
        assert_eq!(
            rebase(url, "http://127.0.0.1:1/", "http://127.0.0.1:2").as_deref(),
            Some("http://127.0.0.1:2/v1/chat/completions?x=1")
        );
        assert_eq!(rebase(url, "http://127.0.0.1:11", "http://h"), None);
        assert_eq!(rebase(url, "http://other", "http://h"), None);
    }
}
