//! The lines the batch writes: results (output), journal entries and dead letters.
//!
//! ```text
//! output:      {"id":"a","ok":true,"response":{...},"attempts":1,
//!                "served_by":{"endpoint":"openai","provider":"openai","model":"..."}}
//!              {"id":"b","ok":false,"error":{"class":"rate_limited","scope":"throttle",
//!                "status":429,"message":"...","reason":"hint_too_long"},"attempts":1}
//!              {"id":"c","line":5,"ok":false,"error":{"class":"bad_input",...},"attempts":0}
//!              {"id":null,"line":3,"ok":false,"error":{"class":"bad_input",...},"attempts":0}
//! journal:     {"id":"a","ok":true}
//!              {"id":null,"line":3,"ok":false}
//! dead letter: {"id":"b","request":{...},"error":{...}}
//!              {"id":null,"request":null,"error":{...},"line":3,"raw":"<the line>"}
//! ```
//!
//! Every non-blank input line gets exactly one output line, known by its [`Key`]: its
//! id, or, for a bad line with no id of its own (none could be read, or an earlier
//! line already used it), `"id": null` and its line number.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use steadfast_core::classify::{Class, Scope};
use steadfast_core::retry::GiveUpReason;
use steadfast_reqwest::CallError;

/// The class of a line that is not a request.
pub const BAD_INPUT: &str = "bad_input";
/// The reason of a line the client refused to send as given (a `bad_input` line).
pub const REFUSED: &str = "refused";

/// Why a line failed, as written in the output and the dead-letter file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorInfo {
    /// The class of the last failure (`rate_limited`, `unauthorized`, `timeout`, ...),
    /// `bad_input` for a line that is not a request, or the give-up reason when no
    /// attempt was made (`breaker_open`, `no_usable_key`, ...).
    pub class: String,
    /// `request`, `key`, `endpoint` or `throttle`.
    pub scope: String,
    /// The HTTP status of the last attempt, when it got one.
    pub status: Option<u16>,
    /// What happened, for a person (never a key).
    pub message: String,
    /// Why the call gave up (`retries_exhausted`, `hint_too_long`, ...); absent for
    /// bad input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The endpoint the last attempt went to, by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
}

/// Who answered a line, as the output names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Served {
    /// The endpoint's name.
    pub endpoint: String,
    /// `openai` or `anthropic`.
    pub provider: &'static str,
    /// The model that answered, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

impl Served {
    /// The output's form of a reply's [`ServedBy`](steadfast_reqwest::ServedBy).
    pub fn of(by: &steadfast_reqwest::ServedBy) -> Served {
        Served {
            endpoint: by.endpoint.clone(),
            provider: by.provider.name(),
            model: by.model.clone(),
        }
    }
}

impl ErrorInfo {
    /// A line that is not a request.
    pub fn bad_input(message: String) -> ErrorInfo {
        ErrorInfo {
            class: BAD_INPUT.to_owned(),
            scope: "request".to_owned(),
            status: None,
            message,
            reason: None,
            endpoint: None,
        }
    }

    /// A call that gave up; `redact` removes every configured key from text.
    pub fn from_call(e: &CallError, redact: impl Fn(&str) -> String) -> ErrorInfo {
        if let Some(refused) = &e.request {
            // A request the client cannot send as given (a canonical line Anthropic
            // cannot express): the line is bad, naming the field.
            let mut info = ErrorInfo::bad_input(redact(&refused.to_string()));
            info.reason = Some(REFUSED.to_owned());
            return info;
        }
        let reason = e.reason.name();
        let (class, scope) = match (e.class, e.scope) {
            (Some(c), Some(s)) => (class_name(c), scope_name(s)),
            _ => (reason.to_owned(), scope_of_reason(&e.reason).to_owned()),
        };
        let mut message = reason_text(&e.reason);
        let detail = e
            .message
            .clone()
            .or_else(|| e.source.as_ref().map(|s| error_chain(s)));
        if let Some(d) = detail {
            message.push_str(": ");
            message.push_str(&d);
        }
        ErrorInfo {
            class,
            scope,
            status: e.status,
            message: redact(&message),
            reason: Some(reason.to_owned()),
            endpoint: e.endpoint.as_deref().map(str::to_owned),
        }
    }
}

/// The give-up reason for a person; a hint is shown to the millisecond (the core
/// measures what is left of it, `29.999997s` for a `Retry-After: 30` just received).
fn reason_text(r: &GiveUpReason) -> String {
    match r {
        GiveUpReason::HintTooLong { hint } => {
            let ms = hint.as_nanos().div_ceil(1_000_000);
            let rounded = core::time::Duration::from_millis(u64::try_from(ms).unwrap_or(u64::MAX));
            format!(
                "server asked to wait {}, longer than the policy's max_retry_after",
                steadfast_core::duration::Human(rounded)
            )
        }
        other => other.to_string(),
    }
}

/// An error and its sources, `: `-separated.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(inner) = cur {
        let t = inner.to_string();
        if !s.contains(&t) {
            s.push_str(": ");
            s.push_str(&t);
        }
        cur = inner.source();
    }
    s
}

fn serde_name<T: Serialize>(v: T) -> String {
    match serde_json::to_value(v) {
        Ok(Value::String(s)) => s,
        _ => "unknown".to_owned(),
    }
}

/// The class's name in snake case (`rate_limited`).
pub fn class_name(c: Class) -> String {
    serde_name(c)
}

/// The scope's name (`request`, `key`, `endpoint`, `throttle`).
pub fn scope_name(s: Scope) -> String {
    serde_name(s)
}

/// The scope reported for a call that gave up before any attempt: what stood in its way.
fn scope_of_reason(r: &GiveUpReason) -> &'static str {
    match r {
        GiveUpReason::NoUsableKey => "key",
        GiveUpReason::RateLimited { .. } | GiveUpReason::HintTooLong { .. } => "throttle",
        GiveUpReason::NotRetryable | GiveUpReason::Cancelled => "request",
        _ => "endpoint",
    }
}

/// What a result is known by in the output, the journal and the dead-letter file.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Key {
    /// The line's id: every request, and every bad line whose id no earlier line used.
    Id(String),
    /// The line number of a bad line with no id of its own (none could be read, or an
    /// earlier line used it), written `"id": null, "line": N`.
    Line(u64),
}

impl Key {
    /// The key a result line names: its id, else its line number; `None` for neither.
    pub fn of(id: Option<String>, line: Option<u64>) -> Option<Key> {
        match (id, line) {
            (Some(id), _) => Some(Key::Id(id)),
            (None, Some(n)) => Some(Key::Line(n)),
            (None, None) => None,
        }
    }

    /// The id, when the key is one.
    pub fn id(&self) -> Option<&str> {
        match self {
            Key::Id(id) => Some(id),
            Key::Line(_) => None,
        }
    }

    /// The line number, when the key is one.
    pub fn line(&self) -> Option<u64> {
        match self {
            Key::Id(_) => None,
            Key::Line(n) => Some(*n),
        }
    }
}

impl std::fmt::Display for Key {
    /// `id "a"` or `line 3`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Key::Id(id) => write!(f, "id {id:?}"),
            Key::Line(n) => write!(f, "line {n}"),
        }
    }
}

/// A bad input line as its results keep it: its number (in the output and the dead
/// letter) and its text (in the dead letter, so that it can be fixed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadLine {
    /// The 1-based line number.
    pub line: u64,
    /// The line's text (see [`crate::input::raw_text`]); kept only for dead letters.
    pub raw: Option<String>,
}

/// How one line ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Ending {
    /// The response body, and who answered (none for a fallback's fixed answer).
    Ok(Value, Option<Served>),
    /// Why it failed.
    Failed(ErrorInfo),
}

/// One finished line.
#[derive(Debug, Clone, PartialEq)]
pub struct Finished {
    /// What the line is known by.
    pub key: Key,
    /// Its ending.
    pub ending: Ending,
    /// Attempts made (0 for bad input).
    pub attempts: u32,
    /// The original request, kept for the dead-letter file when the line failed.
    pub request: Option<Value>,
    /// The input line, when it was not a request.
    pub bad: Option<BadLine>,
}

#[derive(Serialize)]
struct OutLine<'a> {
    id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    line: Option<u64>,
    ok: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    response: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a ErrorInfo>,
    attempts: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    served_by: Option<&'a Served>,
}

#[derive(Serialize)]
struct DeadLine<'a> {
    id: Option<&'a str>,
    request: &'a Value,
    error: &'a ErrorInfo,
    #[serde(skip_serializing_if = "Option::is_none")]
    line: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    raw: Option<&'a str>,
}

/// What the start-up reconciliation reads back from an output or journal line.
#[derive(Debug, Deserialize)]
pub struct Head {
    /// The line's id (`null` for a bad line known by its number).
    pub id: Option<String>,
    /// The input line number (bad lines only).
    #[serde(default)]
    pub line: Option<u64>,
    /// Whether it succeeded.
    pub ok: bool,
}

impl Head {
    /// What the line is known by; `None` when it names neither an id nor a line.
    pub fn key(self) -> Option<Key> {
        Key::of(self.id, self.line)
    }
}

/// What the start-up reconciliation reads back from a dead-letter line.
#[derive(Debug, Deserialize)]
pub struct IdOnly {
    /// The line's id (`null` for a bad line known by its number).
    pub id: Option<String>,
    /// The input line number (bad lines only).
    #[serde(default)]
    pub line: Option<u64>,
}

impl IdOnly {
    /// What the line is known by; `None` when it names neither an id nor a line.
    pub fn key(self) -> Option<Key> {
        Key::of(self.id, self.line)
    }
}

fn push_json<T: Serialize>(buf: &mut Vec<u8>, v: &T) {
    // Serialising these shapes into memory cannot fail (string keys, finite numbers).
    if serde_json::to_writer(&mut *buf, v).is_ok() {
        buf.push(b'\n');
    }
}

impl Finished {
    /// Whether the line succeeded.
    pub fn ok(&self) -> bool {
        matches!(self.ending, Ending::Ok(..))
    }

    /// The error, when it failed.
    pub fn error(&self) -> Option<&ErrorInfo> {
        match &self.ending {
            Ending::Failed(e) => Some(e),
            Ending::Ok(..) => None,
        }
    }

    /// Appends its output line to `buf`.
    pub fn write_output(&self, buf: &mut Vec<u8>) {
        let (response, error, served_by) = match &self.ending {
            Ending::Ok(v, by) => (Some(v), None, by.as_ref()),
            Ending::Failed(e) => (None, Some(e), None),
        };
        push_json(
            buf,
            &OutLine {
                id: self.key.id(),
                line: self.bad.as_ref().map(|b| b.line),
                ok: response.is_some(),
                response,
                error,
                attempts: self.attempts,
                served_by,
            },
        );
    }

    /// Appends its journal line to `buf`.
    pub fn write_journal(&self, buf: &mut Vec<u8>) {
        journal_line(buf, &self.key, self.ok());
    }

    /// Appends its dead-letter line to `buf` when it failed (`null` request when the
    /// line had none).
    pub fn write_dead_letter(&self, buf: &mut Vec<u8>) {
        if let Ending::Failed(e) = &self.ending {
            dead_letter_line(buf, &self.key, self.request.as_ref(), e, self.bad.as_ref());
        }
    }
}

/// A finished line, serialised where it finished (on the runtime's workers), ready for
/// the writer: it only concatenates bytes, and no response crosses a thread as a tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Encoded {
    /// What the line is known by.
    pub key: Key,
    /// Whether it succeeded.
    pub ok: bool,
    /// Attempts made.
    pub attempts: u32,
    /// Class and scope, when it failed.
    pub failure: Option<(String, String)>,
    /// Why the call gave up, when it ran and failed (`breaker_open`, ...).
    pub reason: Option<String>,
    /// Its output line.
    pub output: Vec<u8>,
    /// Its dead-letter line (empty unless it failed and dead letters are kept).
    pub dead: Vec<u8>,
}

impl Finished {
    /// Serialises the line; `dead_letters` says whether a failure's dead-letter line
    /// is wanted.
    pub fn encode(self, dead_letters: bool) -> Encoded {
        let mut output = Vec::with_capacity(256);
        self.write_output(&mut output);
        let mut dead = Vec::new();
        if dead_letters {
            self.write_dead_letter(&mut dead);
        }
        let failure = self.error().map(|e| (e.class.clone(), e.scope.clone()));
        let reason = self.error().and_then(|e| e.reason.clone());
        Encoded {
            ok: failure.is_none(),
            reason,
            key: self.key,
            attempts: self.attempts,
            failure,
            output,
            dead,
        }
    }
}

/// Appends a journal line.
pub fn journal_line(buf: &mut Vec<u8>, key: &Key, ok: bool) {
    #[derive(Serialize)]
    struct J<'a> {
        id: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        line: Option<u64>,
        ok: bool,
    }
    push_json(
        buf,
        &J {
            id: key.id(),
            line: key.line(),
            ok,
        },
    );
}

/// Appends a dead-letter line; a bad input line's adds its number and text.
pub fn dead_letter_line(
    buf: &mut Vec<u8>,
    key: &Key,
    request: Option<&Value>,
    e: &ErrorInfo,
    bad: Option<&BadLine>,
) {
    let null = Value::Null;
    push_json(
        buf,
        &DeadLine {
            id: key.id(),
            request: request.unwrap_or(&null),
            error: e,
            line: bad.map(|b| b.line),
            raw: bad.and_then(|b| b.raw.as_deref()),
        },
    );
}

/// A request map as a JSON value.
pub fn request_value(m: Map<String, Value>) -> Value {
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_have_the_documented_shape() {
        let ok = Finished {
            key: Key::Id("a".into()),
            ending: Ending::Ok(
                serde_json::json!({"x": 1}),
                Some(Served {
                    endpoint: "claude".into(),
                    provider: "anthropic",
                    model: Some("m".into()),
                }),
            ),
            attempts: 2,
            request: None,
            bad: None,
        };
        let mut buf = Vec::new();
        ok.write_output(&mut buf);
        assert_eq!(
            String::from_utf8(buf).unwrap(),
            "{\"id\":\"a\",\"ok\":true,\"response\":{\"x\":1},\"attempts\":2,\
             \"served_by\":{\"endpoint\":\"claude\",\"provider\":\"anthropic\",\"model\":\"m\"}}\n"
        );
        let bad = Finished {
            key: Key::Id("b".into()),
            ending: Ending::Failed(ErrorInfo::bad_input("7: missing \"request\"".into())),
            attempts: 0,
            request: None,
            bad: None,
        };
        let mut buf = Vec::new();
        bad.write_output(&mut buf);
        bad.write_journal(&mut buf);
        bad.write_dead_letter(&mut buf);
        let text = String::from_utf8(buf).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "{\"id\":\"b\",\"ok\":false,\"error\":{\"class\":\"bad_input\",\"scope\":\"request\",\
             \"status\":null,\"message\":\"7: missing \\\"request\\\"\"},\"attempts\":0}"
        );
        assert_eq!(lines[1], "{\"id\":\"b\",\"ok\":false}");
        assert!(lines[2].starts_with("{\"id\":\"b\",\"request\":null,\"error\":{"));
        let head: Head = serde_json::from_str(lines[0]).unwrap();
        assert!(!head.ok);
        assert_eq!(head.key(), Some(Key::Id("b".into())));
    }

    #[test]
    fn a_bad_line_without_an_id_is_known_by_its_number_everywhere() {
        let bad = Finished {
            key: Key::Line(3),
            ending: Ending::Failed(ErrorInfo::bad_input("in:3: not JSON".into())),
            attempts: 0,
            request: None,
            bad: Some(BadLine {
                line: 3,
                raw: Some("{\"id\": ".into()),
            }),
        };
        let e = bad.encode(true);
        assert_eq!(
            String::from_utf8(e.output).unwrap(),
            "{\"id\":null,\"line\":3,\"ok\":false,\"error\":{\"class\":\"bad_input\",\
             \"scope\":\"request\",\"status\":null,\"message\":\"in:3: not JSON\"},\"attempts\":0}\n"
        );
        assert_eq!(
            String::from_utf8(e.dead).unwrap(),
            "{\"id\":null,\"request\":null,\"error\":{\"class\":\"bad_input\",\
             \"scope\":\"request\",\"status\":null,\"message\":\"in:3: not JSON\"},\
             \"line\":3,\"raw\":\"{\\\"id\\\": \"}\n"
        );
        let mut j = Vec::new();
        journal_line(&mut j, &e.key, e.ok);
        assert_eq!(j, b"{\"id\":null,\"line\":3,\"ok\":false}\n");
        let head: Head = serde_json::from_slice(&j).unwrap();
        assert_eq!(head.key(), Some(Key::Line(3)));
        let none: Head = serde_json::from_str("{\"id\":null,\"ok\":true}").unwrap();
        assert_eq!(none.key(), None);
        assert_eq!(Key::Line(3).to_string(), "line 3");
    }

    #[test]
    fn names_are_snake_case() {
        assert_eq!(class_name(Class::RateLimited), "rate_limited");
        assert_eq!(scope_name(Scope::Throttle), "throttle");
        assert_eq!(
            GiveUpReason::HintTooLong {
                hint: core::time::Duration::from_secs(30)
            }
            .name(),
            "hint_too_long"
        );
    }
}
