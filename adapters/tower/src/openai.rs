//! async-openai: its request factory under the layer, its error for the executor, and
//! the layer's give-up as its error.

use async_openai::error::OpenAIError;
use async_openai::middleware::HttpRequestFactory;
use reqwest13 as reqwest;
use steadfast_core::outcome::{Phase, Transport, TransportKind};

use crate::attempt::AttemptEdit;
use crate::error::GaveUp;
use crate::layer::Replay;
use crate::outcome::{IntoOutcome, Observed, error_body};
use crate::reqwest_map::observe_reqwest;

/// Each attempt's request is a fresh one from async-openai's own factory, with the
/// attempt's headers set on it (and its URL moved on failover).
impl Replay for HttpRequestFactory {
    fn replay(&self, edit: &AttemptEdit) -> Self {
        let factory = self.clone();
        let edit = edit.clone();
        HttpRequestFactory::new(move || {
            let (factory, edit) = (factory.clone(), edit.clone());
            async move {
                let mut request = factory.build().await?;
                edit.apply_headers(request.headers_mut());
                if let Some(url) = edit.rebased(request.url().as_str()) {
                    if let Ok(url) = reqwest::Url::parse(&url) {
                        *request.url_mut() = url;
                    }
                }
                Ok(request)
            }
        })
    }
}

/// The layer's give-up as async-openai's error: `OpenAIError::Boxed`, which
/// downcasts to [`GaveUp<OpenAIError>`] for the reason.
impl From<GaveUp<OpenAIError>> for OpenAIError {
    fn from(g: GaveUp<OpenAIError>) -> OpenAIError {
        OpenAIError::Boxed(Box::new(g))
    }
}

/// An async-openai call through the executor. Its API errors keep the status and the
/// error's type and code but not the headers: `Retry-After` is read only through the
/// layer, which is the better way to drive async-openai.
impl<T> IntoOutcome for Result<T, OpenAIError> {
    type Value = T;
    type Error = OpenAIError;

    fn observe(&self) -> Observed<'_> {
        let Err(e) = self else {
            return Observed::Success;
        };
        match e {
            OpenAIError::ApiError(a) => Observed::Response {
                status: a.status_code.as_u16(),
                headers: None,
                body: error_body(
                    a.api_error.r#type.as_deref(),
                    a.api_error.code.as_deref(),
                    &a.api_error.message,
                )
                .into(),
            },
            OpenAIError::Reqwest(e) => observe_reqwest(e),
            OpenAIError::JSONDeserialize(..) => Observed::Malformed { status: 200 },
            OpenAIError::StreamError(_) => {
                Observed::Transport(Transport::new(TransportKind::BodyCut, Phase::AfterSend))
            }
            OpenAIError::Boxed(b) => Observed::Transport(crate::transport_of(b.as_ref())),
            _ => Observed::Invalid,
        }
    }

    fn into_result(self) -> Self {
        self
    }
}
