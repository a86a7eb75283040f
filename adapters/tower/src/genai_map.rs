//! genai: its error type for the executor. genai keeps the status, headers and body of
//! a failed HTTP call on its errors, and does not retry.

use genai::webc;
use steadfast_core::outcome::{Phase, Transport, TransportKind};

use crate::outcome::{IntoOutcome, Observed};
use crate::reqwest_map::observe_reqwest;

/// A genai call (`client.exec_chat(..).await`): any answer is a success.
impl<T> IntoOutcome for Result<T, genai::Error> {
    type Value = T;
    type Error = genai::Error;

    fn observe(&self) -> Observed<'_> {
        match self {
            Ok(_) => Observed::Success,
            Err(e) => observe(e),
        }
    }

    fn into_result(self) -> Self {
        self
    }
}

fn observe(e: &genai::Error) -> Observed<'_> {
    match e {
        genai::Error::HttpError {
            status,
            body,
            headers,
            ..
        } => Observed::Response {
            status: status.as_u16(),
            headers: Some(headers),
            body: body.as_bytes().into(),
        },
        genai::Error::WebAdapterCall { webc_error, .. }
        | genai::Error::WebModelCall { webc_error, .. } => observe_webc(webc_error),
        genai::Error::ChatResponseGeneration { .. } | genai::Error::StreamParse { .. } => {
            Observed::Malformed { status: 200 }
        }
        genai::Error::WebStream { .. } => {
            Observed::Transport(Transport::new(TransportKind::BodyCut, Phase::AfterSend))
        }
        _ => Observed::Invalid,
    }
}

fn observe_webc(e: &webc::Error) -> Observed<'_> {
    match e {
        webc::Error::ResponseFailedStatus {
            status,
            body,
            headers,
        } => Observed::Response {
            status: status.as_u16(),
            headers: Some(headers),
            body: body.as_bytes().into(),
        },
        webc::Error::ResponseFailedNotJson { .. }
        | webc::Error::ResponseFailedInvalidJson { .. } => Observed::Malformed { status: 200 },
        webc::Error::Reqwest(e) => observe_reqwest(e),
        _ => Observed::Invalid,
    }
}
