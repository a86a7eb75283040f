//! The batch input: JSONL, one `{"id": "<string>", "request": {...}}` per line.
//!
//! [`parse_line`] is a pure function of the line's number and bytes, so a fuzz target
//! can call it directly. Other top-level fields are ignored (a dead-letter file, whose
//! lines carry an extra `"error"`, is valid input as it is).

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
        None => return Err(err(None, LineErrorKind::MissingId)),
        Some(Value::String(s)) if !s.is_empty() && s.len() <= MAX_ID_LEN => s,
        Some(_) => return Err(err(None, LineErrorKind::BadId)),
    };
    match obj.remove("request") {
        None => Err(err(Some(id), LineErrorKind::MissingRequest)),
        Some(Value::Object(request)) => Ok(InputLine {
            line: line_no,
            id,
            request,
        }),
        Some(_) => Err(err(Some(id), LineErrorKind::RequestNotObject)),
    }
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
    }
}
