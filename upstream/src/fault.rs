//! Scripted faults: what the server does to one request, chosen by a test instead of
//! by the scenario.

use serde::{Deserialize, Serialize};
use std::fmt;

/// One scripted behaviour for one API request.
///
/// Scripted faults are consumed in arrival order, one per API request (requests to
/// the mock's `/__…` control endpoints and idempotent replays consume none), before the
/// scenario applies. With serde they are tagged by `kind` in `snake_case`, in JSON
/// (`{"kind":"status","status":429,"retry_after":"2"}`) as in the TOML script file
/// (see [`Fault::script_from_toml`]).
///
/// "Work done" faults ([`Fault::Reset`], [`Fault::Malformed`], [`Fault::TruncatedBody`],
/// [`Fault::StreamCut`]) model a response lost on the way back: the server did the
/// work, so a request carrying an `Idempotency-Key` is recorded as processed and its
/// success is stored (a retry with the same key gets the stored response replayed).
/// [`Fault::Status`], [`Fault::Hang`] and [`Fault::ResetBeforeRequest`] do no work.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Fault {
    /// A normal success.
    Ok,
    /// A success that calls a tool instead of answering with text: the tool `name`,
    /// else the one `tool_choice` names, else the first the request offers (OpenAI: a
    /// message with `tool_calls` and `finish_reason: "tool_calls"`; Anthropic: a
    /// `tool_use` block and `stop_reason: "tool_use"`). A request that offers no such
    /// tool, or whose `tool_choice` is `none`, gets a normal success.
    ToolCall {
        /// The tool to call.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
    },
    /// An HTTP status with an error body (a realistic one for the status and the
    /// provider of the path unless `body` is given).
    Status {
        /// The status code.
        status: u16,
        /// The raw `retry-after` header value, sent as is (it may be garbage on purpose).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        retry_after: Option<String>,
        /// The raw `retry-after-ms` header value, sent as is.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        retry_after_ms: Option<String>,
        /// The body to send instead of the realistic default.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        body: Option<String>,
        /// Extra headers (a `content-type` here replaces the default one).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        headers: Vec<(String, String)>,
    },
    /// Wait this long, then answer normally.
    Latency {
        /// The delay in milliseconds.
        ms: u64,
    },
    /// Read the request and never answer; the connection stays open until the client
    /// gives up (or the server shuts down).
    Hang,
    /// Read the request, then reset the connection (`SO_LINGER` 0, RST): a reset after
    /// the request was sent. Work done.
    Reset,
    /// Reset the connection before reading the request: when the fault is at the head
    /// of the script as a connection is accepted, the RST comes at once; when a request
    /// arrives on a kept-alive connection, the RST comes instead of any processing.
    ResetBeforeRequest,
    /// `200 OK` with a cut JSON body (or, for a stream, an event whose JSON is cut).
    /// Work done.
    Malformed,
    /// `Content-Length` of the full body, then half of it, then the connection closes.
    /// Work done.
    TruncatedBody,
    /// For a stream: send `after_events` SSE events, then close without ending the
    /// chunked body. For a non-stream request: like [`Fault::TruncatedBody`]. Work done.
    StreamCut {
        /// How many events reach the client.
        after_events: u32,
    },
    /// For a stream: send `after_events` SSE events, then the provider's error event
    /// and end the stream (Anthropic's `event: error` with an `overloaded_error`,
    /// OpenAI's `data: {"error": …}` chunk). For a non-stream request: the provider's
    /// overloaded status (529 for Anthropic, 503 for OpenAI). No work done.
    StreamError {
        /// How many events reach the client before the error.
        after_events: u32,
    },
    /// A normal success whose body is sent slowly, in small pieces.
    Trickle {
        /// The body rate.
        bytes_per_sec: u32,
    },
    /// A valid success whose message content is padded so the body has about this
    /// many bytes.
    HugeBody {
        /// The approximate body size.
        bytes: usize,
    },
    /// A normal success with an extra `x-mock-padding` header of this many bytes.
    HugeHeader {
        /// The length of the padding header's value.
        bytes: usize,
    },
    /// `200 OK` whose body is filler (`a`s) made as it is written, never held in
    /// memory: `piece` bytes every `every_ms` milliseconds (0: back to back), `bytes`
    /// in all or, without `bytes`, forever (until the client goes away). The head
    /// announces `content-length` when `bytes` is set and `chunked` is not; otherwise
    /// the body is chunked, and an endless one never gets its last chunk. With
    /// `after_first_event`, a stream request gets the first event of a normal stream
    /// before the filler. No work done; [`crate::Stats::filler_bytes`] counts the
    /// filler written.
    Filler {
        /// The filler's length; none: endless.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        bytes: Option<u64>,
        /// Bytes per write (default 64 KiB, at least 1).
        #[serde(default = "default_piece")]
        piece: u32,
        /// The pause before each write, in milliseconds.
        #[serde(default, skip_serializing_if = "is_zero")]
        every_ms: u64,
        /// Chunked even when `bytes` is set.
        #[serde(default, skip_serializing_if = "is_false")]
        chunked: bool,
        /// For a stream request: a well-formed first event, then the filler.
        #[serde(default, skip_serializing_if = "is_false")]
        after_first_event: bool,
    },
}

fn default_piece() -> u32 {
    64 * 1024
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl Fault {
    /// The `kind` tag of this fault, as used in scripts and in [`crate::Stats::by_fault`].
    pub fn kind_name(&self) -> &'static str {
        match self {
            Fault::Ok => "ok",
            Fault::ToolCall { .. } => "tool_call",
            Fault::Status { .. } => "status",
            Fault::Latency { .. } => "latency",
            Fault::Hang => "hang",
            Fault::Reset => "reset",
            Fault::ResetBeforeRequest => "reset_before_request",
            Fault::Malformed => "malformed",
            Fault::TruncatedBody => "truncated_body",
            Fault::StreamCut { .. } => "stream_cut",
            Fault::StreamError { .. } => "stream_error",
            Fault::Trickle { .. } => "trickle",
            Fault::HugeBody { .. } => "huge_body",
            Fault::HugeHeader { .. } => "huge_header",
            Fault::Filler { .. } => "filler",
        }
    }

    /// A [`Fault::Filler`] of `bytes` (none: endless), sent back to back in 64 KiB
    /// pieces, chunked when endless.
    pub fn filler(bytes: Option<u64>) -> Fault {
        Fault::Filler {
            bytes,
            piece: default_piece(),
            every_ms: 0,
            chunked: false,
            after_first_event: false,
        }
    }

    /// A status fault with no headers and the default body.
    pub fn status(status: u16) -> Fault {
        Fault::Status {
            status,
            retry_after: None,
            retry_after_ms: None,
            body: None,
            headers: Vec::new(),
        }
    }

    /// A status fault with a raw `retry-after` value.
    pub fn status_retry_after(status: u16, retry_after: &str) -> Fault {
        Fault::Status {
            status,
            retry_after: Some(retry_after.to_owned()),
            retry_after_ms: None,
            body: None,
            headers: Vec::new(),
        }
    }

    /// Parses the `[[fault]]` entries of a TOML script (other top-level keys are
    /// rejected; the mock's configuration file reads them beside its settings).
    ///
    /// ```toml
    /// [[fault]]
    /// kind = "status"
    /// status = 429
    /// retry_after = "2"        # raw header value, optional
    /// retry_after_ms = "1500"  # raw header value, optional
    /// body = "..."             # optional, default: realistic for the status
    /// headers = [["x-should-retry", "true"]]
    /// repeat = 3               # optional: this entry 3 times in a row
    ///
    /// [[fault]]
    /// kind = "latency"
    /// ms = 250
    ///
    /// [[fault]]
    /// kind = "reset"           # also: ok, hang, reset_before_request, malformed,
    ///                          # truncated_body
    ///
    /// [[fault]]
    /// kind = "tool_call"       # a tool call instead of text
    /// name = "get_weather"     # optional: the tool
    ///
    /// [[fault]]
    /// kind = "stream_cut"
    /// after_events = 2         # also: stream_error (after_events),
    ///                          # trickle (bytes_per_sec), huge_body (bytes),
    ///                          # huge_header (bytes), filler (bytes, piece,
    ///                          # every_ms, chunked, after_first_event)
    /// ```
    ///
    /// An error names the 1-based position of the bad entry.
    pub fn script_from_toml(text: &str) -> Result<Vec<Fault>, ScriptError> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct File {
            #[serde(default)]
            fault: Vec<toml::Table>,
        }
        let file: File = toml::from_str(text).map_err(|e| ScriptError::whole(e.to_string()))?;
        faults_from_toml_tables(file.fault)
    }

    /// Parses a JSON array of faults (the body of `POST /__faults`); entries may carry
    /// `"repeat": N` like in the TOML script. An error names the 1-based entry.
    pub fn script_from_json(text: &str) -> Result<Vec<Fault>, ScriptError> {
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| ScriptError::whole(e.to_string()))?;
        let serde_json::Value::Array(items) = value else {
            return Err(ScriptError::whole(
                "expected a JSON array of faults".to_owned(),
            ));
        };
        let mut out = Vec::new();
        for (i, item) in items.into_iter().enumerate() {
            let entry = i.saturating_add(1);
            let serde_json::Value::Object(mut map) = item else {
                return Err(ScriptError::entry(entry, "expected an object".to_owned()));
            };
            let repeat = match map.remove("repeat") {
                None => 1,
                Some(v) => v.as_u64().filter(|n| *n <= MAX_REPEAT).ok_or_else(|| {
                    ScriptError::entry(entry, format!("repeat must be 0..={MAX_REPEAT}"))
                })?,
            };
            let keys: Vec<String> = map.keys().cloned().collect();
            let fault: Fault = serde_json::from_value(serde_json::Value::Object(map))
                .map_err(|e| ScriptError::entry(entry, e.to_string()))?;
            check_unit_fields(&fault, keys.iter()).map_err(|m| ScriptError::entry(entry, m))?;
            push_repeated(&mut out, fault, repeat);
        }
        Ok(out)
    }
}

const MAX_REPEAT: u64 = 1_000_000;

/// serde accepts stray fields next to the tag of a unit variant; scripts must not.
fn check_unit_fields<'a>(
    fault: &Fault,
    mut keys: impl Iterator<Item = &'a String>,
) -> Result<(), String> {
    let unit = matches!(
        fault,
        Fault::Ok
            | Fault::Hang
            | Fault::Reset
            | Fault::ResetBeforeRequest
            | Fault::Malformed
            | Fault::TruncatedBody
    );
    match keys.find(|k| k.as_str() != "kind") {
        Some(extra) if unit => Err(format!(
            "unknown field `{extra}`: kind `{}` takes no fields",
            fault.kind_name()
        )),
        _ => Ok(()),
    }
}

fn push_repeated(out: &mut Vec<Fault>, fault: Fault, repeat: u64) {
    for _ in 0..repeat {
        out.push(fault.clone());
    }
}

/// The faults of parsed `[[fault]]` tables (see [`Fault::script_from_toml`]), each with
/// an optional `repeat`; an error names the 1-based entry.
pub fn faults_from_toml_tables(tables: Vec<toml::Table>) -> Result<Vec<Fault>, ScriptError> {
    let mut out = Vec::new();
    for (i, mut table) in tables.into_iter().enumerate() {
        let entry = i.saturating_add(1);
        let repeat = match table.remove("repeat") {
            None => 1,
            Some(toml::Value::Integer(n)) if (0..=MAX_REPEAT as i64).contains(&n) => n as u64,
            Some(_) => {
                return Err(ScriptError::entry(
                    entry,
                    format!("repeat must be an integer 0..={MAX_REPEAT}"),
                ));
            }
        };
        let keys: Vec<String> = table.keys().cloned().collect();
        let fault: Fault = toml::Value::Table(table)
            .try_into()
            .map_err(|e: toml::de::Error| ScriptError::entry(entry, e.message().to_owned()))?;
        check_unit_fields(&fault, keys.iter()).map_err(|m| ScriptError::entry(entry, m))?;
        push_repeated(&mut out, fault, repeat);
    }
    Ok(out)
}

/// A script or configuration file that could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptError {
    /// The 1-based position of the bad `[[fault]]` entry (or JSON array element), when
    /// the error is in one.
    pub entry: Option<usize>,
    /// What is wrong.
    pub message: String,
}

impl ScriptError {
    /// An error in the whole file.
    pub fn whole(message: String) -> ScriptError {
        ScriptError {
            entry: None,
            message,
        }
    }

    /// An error in the 1-based entry `entry`.
    pub fn entry(entry: usize, message: String) -> ScriptError {
        ScriptError {
            entry: Some(entry),
            message,
        }
    }
}

impl fmt::Display for ScriptError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.entry {
            Some(n) => write!(f, "fault entry {n}: {}", self.message.trim_end()),
            None => write!(f, "{}", self.message.trim_end()),
        }
    }
}

impl std::error::Error for ScriptError {}

#[cfg(test)]
#[allow(clippy::arithmetic_side_effects)]
mod tests {
    use super::*;

    #[test]
    fn toml_script() {
        let text = r#"
            [[fault]]
            kind = "status"
            status = 429
            retry_after = "2"
            repeat = 2

            [[fault]]
            kind = "latency"
            ms = 5

            [[fault]]
            kind = "reset"

            [[fault]]
            kind = "status"
            status = 503
            headers = [["x-should-retry", "true"]]
        "#;
        let faults = Fault::script_from_toml(text).unwrap();
        assert_eq!(faults.len(), 5);
        assert_eq!(faults[0], Fault::status_retry_after(429, "2"));
        assert_eq!(faults[1], faults[0]);
        assert_eq!(faults[2], Fault::Latency { ms: 5 });
        assert_eq!(faults[3], Fault::Reset);
        match &faults[4] {
            Fault::Status { headers, .. } => {
                assert_eq!(headers, &[("x-should-retry".to_owned(), "true".to_owned())]);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn toml_errors_name_the_entry() {
        let text = "[[fault]]\nkind = \"ok\"\n[[fault]]\nkind = \"sttaus\"\n";
        let err = Fault::script_from_toml(text).unwrap_err();
        assert_eq!(err.entry, Some(2));
        assert!(err.to_string().starts_with("fault entry 2:"), "{err}");

        let text = "[[fault]]\nkind = \"status\"\n";
        let err = Fault::script_from_toml(text).unwrap_err();
        assert_eq!(err.entry, Some(1));
        assert!(err.message.contains("status"), "{err}");

        let text = "[[fault]]\nkind = \"latency\"\nms = 1\nbogus = 2\n";
        assert_eq!(Fault::script_from_toml(text).unwrap_err().entry, Some(1));

        let text = "[[fault]]\nkind = \"hang\"\nms = 3\n";
        let err = Fault::script_from_toml(text).unwrap_err();
        assert_eq!(err.entry, Some(1));
        assert!(err.message.contains("`ms`"), "{err}");
        let err = Fault::script_from_json(r#"[{"kind":"ok"},{"kind":"ok","x":1}]"#).unwrap_err();
        assert_eq!(err.entry, Some(2));

        let f = Fault::script_from_toml("[[fault]]\nkind = \"filler\"\nevery_ms = 5\n").unwrap();
        assert_eq!(
            f,
            vec![Fault::Filler {
                bytes: None,
                piece: 65_536,
                every_ms: 5,
                chunked: false,
                after_first_event: false,
            }]
        );

        let err = Fault::script_from_toml("nonsense = 1").unwrap_err();
        assert_eq!(err.entry, None);
    }

    #[test]
    fn json_round_trip() {
        let faults = vec![
            Fault::Ok,
            Fault::status(500),
            Fault::StreamCut { after_events: 2 },
            Fault::ResetBeforeRequest,
            Fault::filler(None),
            Fault::Filler {
                bytes: Some(10),
                piece: 1,
                every_ms: 60_000,
                chunked: true,
                after_first_event: true,
            },
        ];
        let text = serde_json::to_string(&faults).unwrap();
        assert!(text.contains(r#"{"kind":"ok"}"#), "{text}");
        assert_eq!(Fault::script_from_json(&text).unwrap(), faults);
        let repeated = Fault::script_from_json(r#"[{"kind":"hang","repeat":3}]"#).unwrap();
        assert_eq!(repeated, vec![Fault::Hang, Fault::Hang, Fault::Hang]);
        assert_eq!(
            Fault::script_from_json(r#"[{"kind":"ok"},{"kind":"nope"}]"#)
                .unwrap_err()
                .entry,
            Some(2)
        );
    }
}
