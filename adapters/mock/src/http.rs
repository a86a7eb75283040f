//! A minimal HTTP/1.1 server side: request heads and bodies in, response bytes out.
//! Hand-written so the faults control every byte on the wire.

use std::io;
use std::time::Duration;

use steadfast_upstream::wire::errors::reason;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The largest request head accepted (431 past it).
pub(crate) const MAX_HEAD: usize = 64 * 1024;
/// The largest request body accepted (413 past it).
pub(crate) const MAX_BODY: usize = 16 * 1024 * 1024;
const MAX_CHUNK_LINE: usize = 4096;

/// One parsed request.
#[derive(Debug)]
pub(crate) struct Request {
    pub method: String,
    /// The path without its query string.
    pub path: String,
    /// Header names in lower case, values trimmed, in arrival order.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Whether the connection stays open after the answer.
    pub keep_alive: bool,
    /// HTTP/1.0 request.
    pub http10: bool,
}

impl Request {
    /// The first value of a header (name in lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Why no request could be read.
#[derive(Debug)]
pub(crate) enum ReadError {
    /// The peer closed the connection between requests.
    Closed,
    /// The connection failed.
    Io,
    HeadTooLarge,
    BodyTooLarge,
    Bad(&'static str),
}

impl From<io::Error> for ReadError {
    fn from(_: io::Error) -> ReadError {
        ReadError::Io
    }
}

/// A connection with its read buffer.
pub(crate) struct Conn {
    pub stream: TcpStream,
    buf: Vec<u8>,
}

impl Conn {
    pub fn new(stream: TcpStream) -> Conn {
        Conn {
            stream,
            buf: Vec::with_capacity(8192),
        }
    }

    /// Reads more bytes into the buffer; `Ok(false)` at end of stream.
    async fn fill(&mut self) -> io::Result<bool> {
        if self.buf.capacity() - self.buf.len() < 4096 {
            self.buf.reserve(8192);
        }
        let n = self.stream.read_buf(&mut self.buf).await?;
        Ok(n > 0)
    }

    /// Reads until the buffer holds `n` bytes.
    async fn fill_to(&mut self, n: usize) -> Result<(), ReadError> {
        while self.buf.len() < n {
            if !self.fill().await? {
                return Err(ReadError::Bad("connection closed inside the body"));
            }
        }
        Ok(())
    }

    /// Takes one CRLF-terminated line (without the CRLF) from the buffer.
    async fn read_line(&mut self) -> Result<Vec<u8>, ReadError> {
        let mut searched = 0;
        loop {
            if let Some(i) = find(&self.buf[searched..], b"\r\n") {
                let end = searched + i;
                let line = self.buf[..end].to_vec();
                self.buf.drain(..end + 2);
                return Ok(line);
            }
            searched = self.buf.len().saturating_sub(1);
            if self.buf.len() > MAX_CHUNK_LINE {
                return Err(ReadError::Bad("chunk line too long"));
            }
            if !self.fill().await? {
                return Err(ReadError::Bad("connection closed inside the body"));
            }
        }
    }

    /// Reads one request (head and body). Sends `100 Continue` when asked.
    pub async fn read_request(&mut self) -> Result<Request, ReadError> {
        let mut searched = 0;
        let head_end = loop {
            if let Some(i) = find(&self.buf[searched..], b"\r\n\r\n") {
                break searched + i;
            }
            if self.buf.len() > MAX_HEAD {
                return Err(ReadError::HeadTooLarge);
            }
            searched = self.buf.len().saturating_sub(3);
            if !self.fill().await? {
                return Err(if self.buf.iter().all(u8::is_ascii_whitespace) {
                    ReadError::Closed
                } else {
                    ReadError::Bad("connection closed inside the request head")
                });
            }
        };
        if head_end + 4 > MAX_HEAD {
            return Err(ReadError::HeadTooLarge);
        }
        let head: Vec<u8> = self.buf.drain(..head_end + 4).collect();
        let mut req = parse_head(&head[..head_end])?;

        let chunked = req
            .header("transfer-encoding")
            .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
        let length = if chunked {
            None
        } else {
            content_length(&req.headers)?
        };
        if let Some(len) = length {
            if len > MAX_BODY {
                return Err(ReadError::BodyTooLarge);
            }
        }
        let expects_continue = req
            .header("expect")
            .is_some_and(|v| v.eq_ignore_ascii_case("100-continue"));
        let body_pending = chunked || length.is_some_and(|n| n > self.buf.len());
        if expects_continue && body_pending && !req.http10 {
            self.stream
                .write_all(b"HTTP/1.1 100 Continue\r\n\r\n")
                .await?;
        }
        req.body = if chunked {
            self.read_chunked().await?
        } else if let Some(len) = length {
            self.fill_to(len).await?;
            self.buf.drain(..len).collect()
        } else {
            Vec::new()
        };
        Ok(req)
    }

    async fn read_chunked(&mut self) -> Result<Vec<u8>, ReadError> {
        let mut body = Vec::new();
        loop {
            let line = self.read_line().await?;
            let text = std::str::from_utf8(&line).map_err(|_| ReadError::Bad("bad chunk size"))?;
            let size_text = text.split(';').next().unwrap_or("").trim();
            let size = usize::from_str_radix(size_text, 16)
                .map_err(|_| ReadError::Bad("bad chunk size"))?;
            if size == 0 {
                // Trailers, up to the empty line.
                loop {
                    if self.read_line().await?.is_empty() {
                        return Ok(body);
                    }
                }
            }
            if body.len().saturating_add(size) > MAX_BODY {
                return Err(ReadError::BodyTooLarge);
            }
            self.fill_to(size + 2).await?;
            body.extend_from_slice(&self.buf[..size]);
            if &self.buf[size..size + 2] != b"\r\n" {
                return Err(ReadError::Bad("chunk not followed by CRLF"));
            }
            self.buf.drain(..size + 2);
        }
    }

    /// Reads and discards until the peer closes (or `limit` passes); used to hang and
    /// to let an error answer reach a client that is still sending.
    pub async fn drain(&mut self, limit: Option<Duration>) {
        let mut scratch = vec![0u8; 16 * 1024];
        let discard = async {
            loop {
                match self.stream.read(&mut scratch).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
            }
        };
        match limit {
            Some(d) => {
                let _ = tokio::time::timeout(d, discard).await;
            }
            None => discard.await,
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn is_token(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

fn parse_head(head: &[u8]) -> Result<Request, ReadError> {
    let text =
        std::str::from_utf8(head).map_err(|_| ReadError::Bad("request head is not UTF-8"))?;
    let mut lines = text.split("\r\n");
    let request_line = lines.next().unwrap_or("");
    let mut parts = request_line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(ReadError::Bad("malformed request line"));
    };
    if method.is_empty() || !method.bytes().all(is_token) || target.is_empty() {
        return Err(ReadError::Bad("malformed request line"));
    }
    let http10 = match version {
        "HTTP/1.1" => false,
        "HTTP/1.0" => true,
        _ => return Err(ReadError::Bad("unsupported HTTP version")),
    };
    let mut headers = Vec::new();
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            return Err(ReadError::Bad("malformed header line"));
        };
        if name.is_empty() || !name.bytes().all(is_token) {
            return Err(ReadError::Bad("malformed header name"));
        }
        headers.push((name.to_ascii_lowercase(), value.trim().to_owned()));
    }
    let connection = headers
        .iter()
        .filter(|(n, _)| n == "connection")
        .map(|(_, v)| v.to_ascii_lowercase())
        .collect::<Vec<_>>()
        .join(",");
    let has = |token: &str| connection.split(',').any(|t| t.trim() == token);
    let keep_alive = if http10 {
        has("keep-alive")
    } else {
        !has("close")
    };
    let path = target.split('?').next().unwrap_or(target).to_owned();
    Ok(Request {
        method: method.to_owned(),
        path,
        headers,
        body: Vec::new(),
        keep_alive,
        http10,
    })
}

fn content_length(headers: &[(String, String)]) -> Result<Option<usize>, ReadError> {
    let mut found: Option<usize> = None;
    for (_, v) in headers.iter().filter(|(n, _)| n == "content-length") {
        let v = v.trim();
        if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
            return Err(ReadError::Bad("bad content-length"));
        }
        // Absurd lengths are too large, not malformed.
        let n = v.parse::<usize>().unwrap_or(usize::MAX);
        if found.is_some_and(|f| f != n) {
            return Err(ReadError::Bad("conflicting content-length"));
        }
        found = Some(n);
    }
    Ok(found)
}

/// How the length of a response body is told.
pub(crate) enum Framing {
    /// `content-length: n`.
    Length(usize),
    /// `transfer-encoding: chunked`.
    Chunked,
}

/// The status line and headers of a response, with `server`, the framing header and
/// `connection` added. Header values are sent as given.
pub(crate) fn response_head(
    status: u16,
    headers: &[(String, String)],
    framing: Framing,
    close: bool,
    http10: bool,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(256 + headers.len() * 48);
    out.extend_from_slice(format!("HTTP/1.1 {status} {}\r\n", reason(status)).as_bytes());
    let mut put = |name: &str, value: &str| {
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    };
    put("server", "steadfast-mock");
    for (name, value) in headers {
        put(name, value);
    }
    match framing {
        Framing::Length(n) => put("content-length", &n.to_string()),
        Framing::Chunked => put("transfer-encoding", "chunked"),
    }
    if close {
        put("connection", "close");
    } else if http10 {
        put("connection", "keep-alive");
    }
    out.extend_from_slice(b"\r\n");
    out
}

/// One chunk of a chunked body.
pub(crate) fn chunk(data: &[u8], out: &mut Vec<u8>) {
    if data.is_empty() {
        return;
    }
    out.extend_from_slice(format!("{:x}\r\n", data.len()).as_bytes());
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
}

/// The end of a chunked body.
pub(crate) const LAST_CHUNK: &[u8] = b"0\r\n\r\n";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads() {
        let r = parse_head(
            b"POST /v1/messages?x=1 HTTP/1.1\r\nHost: a\r\nX-Api-Key:  k \r\nConnection: Close",
        )
        .unwrap();
        assert_eq!(r.method, "POST");
        assert_eq!(r.path, "/v1/messages");
        assert_eq!(r.header("x-api-key"), Some("k"));
        assert!(!r.keep_alive);
        let r = parse_head(b"GET / HTTP/1.0\r\nConnection: keep-alive").unwrap();
        assert!(r.keep_alive && r.http10);
        assert!(parse_head(b"GET / HTTP/2\r\n").is_err());
        assert!(parse_head(b"GET /\r\n").is_err());
        assert!(parse_head(b"GET / HTTP/1.1\r\nbad header\r\n").is_err());
        assert!(parse_head(b"GET / HTTP/1.1\r\nbad name: x").is_err());
    }

    #[test]
    fn lengths() {
        let h = |v: &str| vec![("content-length".to_owned(), v.to_owned())];
        assert_eq!(content_length(&h("12")).unwrap(), Some(12));
        assert!(content_length(&h("-1")).is_err());
        assert_eq!(
            content_length(&h("99999999999999999999999")).unwrap(),
            Some(usize::MAX)
        );
        assert_eq!(content_length(&[]).unwrap(), None);
    }
}
