//! `POST /v1/chat/completions` and `POST /v1/messages`: read the request, find its
//! route, join its idempotency key's flight, and run it through the client — whole, or
//! as a stream whose first byte goes out only once the first event is in hand. The
//! request stays in the client's API's shape: the session translates it for the
//! endpoints of the other API, and their answers back.

use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Response, StatusCode, header};
use hyper::body::Incoming;
use steadfast_http::chat::ApiErrorKind;
use steadfast_http::{CallOptions, Provider, RawRequest, RawRequestError, Reply};
use tokio::time::Instant;

use super::Gateway;
use super::auth::Caller;
use super::flight::{FlightKey, Flights, Join, Lead};
use super::ledger::SharedTurn;
use super::reply::{Answer, Body, GaveUp, X_ATTEMPTS, X_ENDPOINT, X_REPLAYED, attempts_value};
use super::stream;
use super::whole::{Unread, read_whole};

/// The header OpenAI's SDKs send with their own timeout, in seconds.
const SDK_TIMEOUT: HeaderName = HeaderName::from_static("x-stainless-timeout");
/// The client's idempotency key.
const IDEMPOTENCY_KEY: HeaderName = HeaderName::from_static("idempotency-key");

/// A chat request, read and routed.
pub struct Chat {
    /// The API the client speaks (its request, answer and errors).
    pub shape: Provider,
    /// The request as it came, in the client's API's shape (translated by the
    /// client's session for endpoints of the other API).
    pub request: RawRequest,
    /// Whether the client asked for a stream.
    pub stream: bool,
    /// The call's options: its route, idempotency key and deadline.
    pub options: CallOptions,
    /// When the request arrived.
    pub arrived: Instant,
}

/// A chat request let in, its body not read yet: the API it speaks, who sent it, and
/// what its headers ask.
pub struct Asked {
    /// The API the client speaks.
    pub shape: Provider,
    /// Who sent it.
    pub caller: Caller,
    /// The client's `Idempotency-Key`.
    pub idempotency_key: Option<String>,
    /// The timeout the client's SDK gave the request (`x-stainless-timeout`).
    pub timeout: Option<Duration>,
    /// The request's body.
    pub body: Incoming,
    /// When the request arrived.
    pub arrived: Instant,
}

impl Asked {
    /// A request of `shape` from `caller`, with `headers` and `body`, arrived now.
    pub fn new(shape: Provider, caller: Caller, headers: &HeaderMap, body: Incoming) -> Asked {
        Asked {
            shape,
            caller,
            idempotency_key: header_text(headers, &IDEMPOTENCY_KEY),
            timeout: header_text(headers, &SDK_TIMEOUT).and_then(seconds),
            body,
            arrived: Instant::now(),
        }
    }
}

/// Serves one chat request on `path`.
pub async fn serve(gw: &Arc<Gateway>, path: &'static str, asked: Asked) -> Response<Body> {
    let caller = asked.caller;
    let chat = match read(gw, asked).await {
        Ok(chat) => chat,
        Err(refusal) => return refusal,
    };
    let Some(key) = chat.options.idempotency_key.clone() else {
        return pin!(run(gw, &chat, None)).await;
    };
    let flight = FlightKey {
        caller: match caller {
            Caller::Anyone => None,
            Caller::Key(i) => Some(i),
        },
        path,
        stream: chat.stream,
        key,
    };
    loop {
        match gw.flights.join(flight.clone()) {
            Join::Lead(mut lead) => {
                if let Some(shared) = gw.flights.shared() {
                    match Box::pin(shared.turn(&flight)).await {
                        SharedTurn::Run => lead.claimed(),
                        SharedTurn::Done(answer) => {
                            gw.metrics.on_replayed();
                            let response = replayed(&answer, "shared");
                            lead.finish_replayed(answer);
                            return response;
                        }
                    }
                }
                return pin!(run(gw, &chat, Some(lead))).await;
            }
            Join::Replay(done) => {
                gw.metrics.on_replayed();
                return replayed(&done, "stored");
            }
            Join::Follow(slot) => {
                gw.metrics.on_joined();
                if let Some(done) = Flights::wait(slot).await {
                    return replayed(&done, "joined");
                }
            }
        }
    }
}

/// An answer sent again: `how` says whether it was stored or shared in flight.
fn replayed(answer: &Answer, how: &'static str) -> Response<Body> {
    let mut r = answer.to_response();
    r.headers_mut()
        .insert(X_REPLAYED, HeaderValue::from_static(how));
    r
}

/// Reads, checks and routes the request; a refusal is the response to send.
async fn read(gw: &Gateway, asked: Asked) -> Result<Chat, Response<Body>> {
    let shape = asked.shape;
    let limit = gw.config.max_request_body;
    let bytes = match read_whole(asked.body, limit).await {
        Ok(bytes) => bytes,
        Err(Unread::TooLarge) => {
            let m = format!("the request body is over {limit} bytes");
            return Err(refuse(shape, ApiErrorKind::RequestTooLarge, m));
        }
        Err(Unread::Broken(e)) => {
            let m = format!("the request body could not be read: {e}");
            return Err(refuse(shape, ApiErrorKind::InvalidRequest, m));
        }
    };
    let invalid = |m: String| refuse(shape, ApiErrorKind::InvalidRequest, m);
    let request = RawRequest::parse(bytes).map_err(|e| match e {
        RawRequestError::Json(e) => invalid(format!(
            "We could not parse the JSON body of your request ({e})."
        )),
        RawRequestError::NotAnObject => invalid("the request body must be a JSON object".into()),
    })?;
    let model = match request.model() {
        Some(m) if !m.is_empty() => m,
        _ => return Err(invalid("model: a model name is required".into())),
    };
    let Some(route) = gw.routes.resolve(model) else {
        let m = format!("The model `{model}` does not exist or you do not have access to it.");
        return Err(refuse(shape, ApiErrorKind::NotFound, m));
    };
    let mut options = CallOptions::new().only_endpoints(route).shape(shape);
    if let Some(key) = asked.idempotency_key {
        options = options.idempotency_key(key);
    }
    if let Some(timeout) = asked.timeout {
        options = options.deadline(timeout);
    }
    Ok(Chat {
        shape,
        stream: request.is_stream(),
        request,
        options,
        arrived: asked.arrived,
    })
}

fn refuse(shape: Provider, kind: ApiErrorKind, message: String) -> Response<Body> {
    Answer::error(shape, kind, message).to_response()
}

fn header_text(headers: &HeaderMap, name: &HeaderName) -> Option<String> {
    let v = headers.get(name)?.to_str().ok()?.trim();
    (!v.is_empty() && v.len() <= 255).then(|| v.to_owned())
}

/// A positive number of seconds, at most a day.
fn seconds(text: String) -> Option<Duration> {
    let s: f64 = text.parse().ok()?;
    (s.is_finite() && s > 0.0).then(|| Duration::from_secs_f64(s.min(86_400.0)))
}

/// Runs the call; `lead` receives its answer for the requests waiting on its key.
// `chat` by reference: the caller keeps it, and this future does not hold a copy.
async fn run(gw: &Arc<Gateway>, chat: &Chat, lead: Option<Lead>) -> Response<Body> {
    // The stream's and the reqwest client's calls are boxed: their futures are large
    // and, inline, every whole call's future would carry their size.
    if chat.stream {
        return Box::pin(stream::run(gw, chat, lead)).await;
    }
    let (answer, keep) = if gw.upstream.handles(gw.client.shared()) {
        let shared = gw.client.shared();
        // Pinned where it is made: a future awaited as a temporary is kept twice in
        // its caller's state.
        let call = pin!(gw.upstream.chat(shared, &chat.request, &chat.options));
        let result = gw.ending.unless(call).await;
        answered(gw, chat.shape, result)
    } else {
        let call = gw
            .client
            .chat_with_options(chat.request.value(), &chat.options);
        let result = gw.ending.unless(Box::pin(call)).await;
        let result = result.map(|r| r.map(|reply| (reply, None)));
        answered(gw, chat.shape, result)
    };
    gw.metrics.on_operation(chat.arrived.elapsed());
    let response = answer.to_response();
    if let Some(lead) = lead {
        lead.finish(answer, keep);
    }
    response
}

/// A whole call's result: its reply, with the upstream's bytes when they can be passed
/// on as they came (see [`super::upstream::Upstream::chat`]).
type Whole<E> = Result<(Reply, Option<Bytes>), steadfast_http::CallError<E>>;

/// The answer of a whole call (`None`: cut short by the shutdown), and whether to keep
/// it for replay.
fn answered<E>(gw: &Gateway, shape: Provider, result: Option<Whole<E>>) -> (Answer, bool) {
    match result {
        None => (ending_answer(shape), false),
        Some(Ok((reply, raw))) => success(gw, &reply, raw),
        Some(Err(e)) => (GaveUp::of(shape, &e, gw.client.now()).answer(shape), false),
    }
}

/// The answer to a request cut short by the gateway's shutdown.
pub fn ending_answer(shape: Provider) -> Answer {
    let m = "the gateway is shutting down; send the request again";
    let one = HeaderValue::from_static("1");
    Answer::error(shape, ApiErrorKind::Overloaded, m).with_header(header::RETRY_AFTER, one)
}

/// A whole answer in the client's shape, with the attempts and the endpoint it took;
/// and whether to keep it for replay (a real success, not a fallback's). `raw`: the
/// reply's body as the upstream sent it (in the client's shape), sent as it came
/// instead of written again from the reply.
fn success(gw: &Gateway, reply: &Reply, raw: Option<Bytes>) -> (Answer, bool) {
    if let Some(u) = reply.usage() {
        gw.metrics.on_usage(u.input_tokens, u.output_tokens);
    }
    let answer = match raw {
        Some(body) => Answer {
            status: StatusCode::OK,
            content_type: "application/json",
            headers: Vec::with_capacity(2),
            body,
        },
        None => Answer::json(StatusCode::OK, &reply.body),
    };
    let mut answer = answer.with_header(X_ATTEMPTS, attempts_value(reply.attempts));
    if let Some(name) = gw.endpoint_name(reply) {
        answer = answer.with_header(X_ENDPOINT, name);
    }
    (answer, reply.degraded.is_none())
}
