//! The batch input: JSONL, one `{"id": "<string>", "request": {...}}` per line.
//!
//! [`parse_line`] is a pure function of the line's number and bytes, so a fuzz target
//! can call it directly. Other top-level fields are ignored (a dead-letter file, whose
//! lines carry an extra `"error"`, is valid input as it is).
//!
//! A dead letter of a bad line that had no id keeps that line as `"raw"` text
//! (`{"id":null,"request":null,"error":{...},"line":3,"raw":"..."}`): a line with no
//! `"id"` (or a `null` one) and a string `"raw"` is read as its `raw` text, so fixing
//! the text fixes the line. `raw` is unwrapped once, never again inside itself.

use core::fmt;

use serde_json::{Map, Value};

/// The longest id accepted, in bytes.
pub const MAX_ID_LEN: usize = 1024;

/// One good input line.
#[derive(Debug, Clone, PartialEq)]
pub struct InputLine {
    /// Its 1-based line number.
    pub line: u64,
    /// The caller's id of the request (unique within the file).
    pub id: String,
    /// The provider-native request body (a JSON object).
    pub request: Map<String, Value>,
}

/// Why a line is not a request.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LineErrorKind {
    /// Nothing but whitespace: skipped silently.
    Blank,
    /// Not UTF-8, or not JSON (the parser's message).
    NotJson(String),
    /// JSON, but not an object.
    NotObject,
    /// No `"id"` field.
    MissingId,
    /// `"id"` is not a non-empty string of at most [`MAX_ID_LEN`] bytes.
    BadId,
    /// No `"request"` field.
    MissingRequest,
    /// `"request"` is not an object.
    RequestNotObject,
}

/// A line that is not a request: its number, its id when it has a usable one, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineError {
    /// The 1-based line number.
    pub line: u64,
    /// The line's id, when it has a usable one (the line then gets an output line).
    pub id: Option<String>,
    /// What is wrong.
    pub kind: LineErrorKind,
}

impl LineError {
    /// Whether the line is blank (not an error worth reporting).
    pub fn is_blank(&self) -> bool {
        self.kind == LineErrorKind::Blank
    }
}

impl fmt::Display for LineErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LineErrorKind::Blank => f.write_str("blank line"),
            LineErrorKind::NotJson(m) => write!(f, "not JSON: {m}"),
            LineErrorKind::NotObject => f.write_str("not a JSON object"),
            LineErrorKind::MissingId => f.write_str("missing \"id\""),
            LineErrorKind::BadId => write!(
                f,
                "\"id\" must be a non-empty string of at most {MAX_ID_LEN} bytes"
            ),
            LineErrorKind::MissingRequest => f.write_str("missing \"request\""),
            LineErrorKind::RequestNotObject => f.write_str("\"request\" must be a JSON object"),
        }
    }
}

impl fmt::Display for LineError {
    /// `7: missing "id"`; the caller puts the file name in front.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.line, self.kind)
    }
}

impl std::error::Error for LineError {}

/// Parses one input line (without or with its `\n`; a `\r` before it and a UTF-8
/// byte-order mark are ignored).
pub fn parse_line(line_no: u64, bytes: &[u8]) -> Result<InputLine, LineError> {
    parse(line_no, bytes, true)
}

/// [`parse_line`]; `unwrap_raw` says whether a dead letter's `raw` is read in its place.
fn parse(line_no: u64, bytes: &[u8], unwrap_raw: bool) -> Result<InputLine, LineError> {
    let err = |id: Option<String>, kind| LineError {
        line: line_no,
        id,
        kind,
    };
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let bytes = bytes.trim_ascii();
    if bytes.is_empty() {
        return Err(err(None, LineErrorKind::Blank));
    }
    let value: Value = serde_json::from_slice(bytes)
        .map_err(|e| err(None, LineErrorKind::NotJson(json_message(&e))))?;
    let Value::Object(mut obj) = value else {
        return Err(err(None, LineErrorKind::NotObject));
    };
    let id = match obj.remove("id") {
        Some(Value::String(s)) if !s.is_empty() && s.len() <= MAX_ID_LEN => s,
        id @ (None | Some(Value::Null)) if unwrap_raw && obj.contains_key("raw") => {
            if let Some(Value::String(raw)) = obj.remove("raw") {
                return parse(line_no, raw.as_bytes(), false);
            }
            return Err(err(None, id_error(id.as_ref())));
        }
        id => return Err(err(None, id_error(id.as_ref()))),
    };
    match obj.remove("request") {
        None | Some(Value::Null) => Err(err(Some(id), LineErrorKind::MissingRequest)),
        Some(Value::Object(request)) => Ok(InputLine {
            line: line_no,
            id,
            request,
        }),
        Some(_) => Err(err(Some(id), LineErrorKind::RequestNotObject)),
    }
}

/// Why an `"id"` that is not a usable string is bad: absent, or of the wrong kind.
fn id_error(id: Option<&Value>) -> LineErrorKind {
    match id {
        None => LineErrorKind::MissingId,
        Some(_) => LineErrorKind::BadId,
    }
}

/// The text a bad line stands for, as its dead letter keeps it: a dead letter's own
/// `"raw"` (so that resubmitting one never nests it), else the line itself without its
/// line ending (bytes that are not UTF-8 replaced by U+FFFD).
pub fn raw_text(bytes: &[u8]) -> String {
    let line = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if let Ok(Value::Object(mut obj)) = serde_json::from_slice::<Value>(line) {
        if let Some(Value::String(raw)) = obj.remove("raw") {
            return raw;
        }
    }
    String::from_utf8_lossy(line).into_owned()
}

/// The `"request"` of a bad line as it is, from the line [`parse_line`] reads (a dead
/// letter's `raw` for one without an id); `None` when that is not a JSON object.
pub fn raw_request(bytes: &[u8]) -> Option<Value> {
    let Ok(Value::Object(mut obj)) = serde_json::from_slice::<Value>(bytes.trim_ascii()) else {
        return None;
    };
    if matches!(obj.get("id"), None | Some(Value::Null)) {
        if let Some(Value::String(raw)) = obj.get("raw") {
            return match serde_json::from_str::<Value>(raw.trim()) {
                Ok(Value::Object(mut inner)) => inner.remove("request"),
                _ => None,
            };
        }
    }
    obj.remove("request")
}

/// serde_json's message without its "at line 1 column N" tail when the line is 1
/// (every input line is parsed alone), keeping the column.
fn json_message(e: &serde_json::Error) -> String {
    let text = e.to_string();
    match text.rsplit_once(" at line 1 column ") {
        Some((head, col)) => format!("{head} at column {col}"),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(line: &str) -> LineErrorKind {
        parse_line(3, line.as_bytes()).unwrap_err().kind
    }

    #[test]
    fn a_good_line() {
        let l = parse_line(
            7,
            b"\xEF\xBB\xBF{\"id\":\"a-1\",\"request\":{\"messages\":[]},\"error\":{}}\r\n",
        )
        .unwrap();
        assert_eq!(l.line, 7);
        assert_eq!(l.id, "a-1");
        assert_eq!(l.request.len(), 1);
    }

    #[test]
    fn bad_lines_say_why_and_keep_the_id() {
        assert_eq!(kind("  \t"), LineErrorKind::Blank);
        assert!(matches!(kind("{\"id\":"), LineErrorKind::NotJson(m) if m.contains("column")));
        assert!(matches!(kind("\u{0}"), LineErrorKind::NotJson(_)));
        assert_eq!(kind("[1]"), LineErrorKind::NotObject);
        assert_eq!(kind("{\"request\":{}}"), LineErrorKind::MissingId);
        assert_eq!(kind("{\"id\":7,\"request\":{}}"), LineErrorKind::BadId);
        assert_eq!(kind("{\"id\":\"\",\"request\":{}}"), LineErrorKind::BadId);
        let long = format!(
            "{{\"id\":\"{}\",\"request\":{{}}}}",
            "x".repeat(MAX_ID_LEN + 1)
        );
        assert_eq!(kind(&long), LineErrorKind::BadId);
        let e = parse_line(9, b"{\"id\":\"q\"}").unwrap_err();
        assert_eq!(e.id.as_deref(), Some("q"));
        assert_eq!(e.to_string(), "9: missing \"request\"");
        let e = parse_line(2, b"{\"id\":\"q\",\"request\":\"hi\"}").unwrap_err();
        assert_eq!(e.kind, LineErrorKind::RequestNotObject);
        assert_eq!(e.id.as_deref(), Some("q"));
        assert_eq!(
            parse_line(4, b"{}").unwrap_err().to_string(),
            "4: missing \"id\""
        );
        assert!(parse_line(1, b"\xff\xfe").is_err());
        let e = parse_line(6, b"{\"id\":\"n\",\"request\":null}").unwrap_err();
        assert_eq!(e.kind, LineErrorKind::MissingRequest);
        assert_eq!(kind("{\"id\":null,\"request\":{}}"), LineErrorKind::BadId);
    }

    #[test]
    fn a_dead_letter_without_an_id_is_read_as_its_raw_line() {
        let fixed = b"{\"id\":null,\"request\":null,\"error\":{},\"line\":3,\
                      \"raw\":\"{\\\"id\\\":\\\"r\\\",\\\"request\\\":{}}\"}";
        let l = parse_line(1, fixed).unwrap();
        assert_eq!((l.line, l.id.as_str()), (1, "r"));
        let broken = b"{\"error\":{},\"raw\":\"{\\\"id\\\": \\\"b\\\", \"}";
        let e = parse_line(2, broken).unwrap_err();
        assert!(matches!(e.kind, LineErrorKind::NotJson(_)), "{e}");
        assert_eq!(raw_text(broken), "{\"id\": \"b\", ");
        // Once only: a raw that is itself a dead letter is not unwrapped again.
        let nested = b"{\"raw\":\"{\\\"raw\\\":\\\"{}\\\"}\"}";
        assert_eq!(
            parse_line(4, nested).unwrap_err().kind,
            LineErrorKind::MissingId
        );
        // A line with an id keeps its own request; its raw is only a record.
        let keyed = b"{\"id\":\"k\",\"request\":{},\"raw\":\"junk\"}";
        assert_eq!(parse_line(5, keyed).unwrap().id, "k");
        assert_eq!(raw_text(b"not json\r\n"), "not json");
        assert_eq!(raw_text(keyed), "junk");
        assert_eq!(raw_text(b"{\"id\":\"k\"}"), "{\"id\":\"k\"}");
        assert_eq!(raw_request(keyed), Some(Value::Object(Map::new())));
        assert_eq!(raw_request(fixed), Some(Value::Object(Map::new())));
        assert_eq!(raw_request(broken), None);
        assert_eq!(
            raw_request(b"{\"request\":\"hi\"}"),
            Some(Value::from("hi"))
        );
        assert_eq!(
            parse_line(7, b"{\"id\":null,\"raw\":7}").unwrap_err().kind,
            LineErrorKind::BadId
        );
    }
}
