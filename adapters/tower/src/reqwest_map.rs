//! reqwest 0.13: its errors as the core's transport failures, its results for the
//! executor, and its responses for the layer.

use bytes::Bytes;
use http::{Extensions, HeaderMap};
use reqwest13 as reqwest;
use steadfast_core::outcome::Transport;
use steadfast_http::outcome::{ClientErrorFacts, client_transport, find_io_error};

use crate::outcome::{IntoOutcome, Observed};
use crate::peek::PeekBody;

/// What failed in a reqwest error: connect-time failures happen before the request
/// leaves; a failure while reading a body comes after the status line.
pub fn transport_of_reqwest(e: &reqwest::Error) -> Transport {
    client_transport(ClientErrorFacts {
        connect: e.is_connect(),
        timeout: e.is_timeout(),
        builder: e.is_builder(),
        io: find_io_error(e).map(|io| io.kind()),
        status_seen: e.is_body() || e.is_decode(),
    })
}

/// A reqwest error as the executor reports it: with its status when
/// `error_for_status` made it (its headers are lost: prefer the response itself).
pub(crate) fn observe_reqwest(e: &reqwest::Error) -> Observed<'static> {
    match e.status() {
        Some(status) => Observed::Response {
            status: status.as_u16(),
            headers: None,
            body: (&[][..]).into(),
        },
        None => Observed::Transport(transport_of_reqwest(e)),
    }
}

/// A plain reqwest call (`client.post(url).send().await`): the response's status and
/// headers tell, its body stays unread.
impl IntoOutcome for Result<reqwest::Response, reqwest::Error> {
    type Value = reqwest::Response;
    type Error = reqwest::Error;

    fn observe(&self) -> Observed<'_> {
        match self {
            Ok(r) => Observed::Response {
                status: r.status().as_u16(),
                headers: Some(r.headers()),
                body: (&[][..]).into(),
            },
            Err(e) => observe_reqwest(e),
        }
    }

    fn into_result(self) -> Result<reqwest::Response, reqwest::Error> {
        self
    }
}

impl PeekBody for reqwest::Response {
    fn status_code(&self) -> u16 {
        self.status().as_u16()
    }

    fn header_map(&self) -> &HeaderMap {
        self.headers()
    }

    fn extensions_mut(&mut self) -> &mut Extensions {
        reqwest::Response::extensions_mut(self)
    }

    async fn peek(self, limit: u64) -> (Self, Bytes) {
        // Through `http::Response`, which keeps the URL, version and extensions.
        let r: http::Response<reqwest::Body> = self.into();
        let (r, read) = r.peek(limit).await;
        (reqwest::Response::from(r), read)
    }
}
