//! A tiny blocking HTTP/1.1 client over `std::net::TcpStream`, enough to observe every
//! fault from the client side.
#![allow(dead_code)]

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

pub struct Client {
    pub stream: TcpStream,
    buf: Vec<u8>,
}

#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// The body arrived whole (false: the connection ended inside it).
    pub complete: bool,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&self.body)))
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

fn find(h: &[u8], n: &[u8]) -> Option<usize> {
    h.windows(n.len()).position(|w| w == n)
}

impl Client {
    pub fn connect(addr: SocketAddr) -> io::Result<Client> {
        let stream = TcpStream::connect(addr)?;
        stream.set_read_timeout(Some(Duration::from_secs(5)))?;
        stream.set_nodelay(true)?;
        Ok(Client {
            stream,
            buf: Vec::new(),
        })
    }

    pub fn set_timeout(&self, d: Duration) {
        self.stream.set_read_timeout(Some(d)).unwrap();
    }

    pub fn send(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> io::Result<()> {
        let mut out = format!("{method} {path} HTTP/1.1\r\nhost: localhost\r\n");
        for (n, v) in headers {
            out.push_str(&format!("{n}: {v}\r\n"));
        }
        if !body.is_empty() || method == "POST" {
            out.push_str(&format!("content-length: {}\r\n", body.len()));
        }
        out.push_str("\r\n");
        let mut bytes = out.into_bytes();
        bytes.extend_from_slice(body);
        self.stream.write_all(&bytes)
    }

    fn more(&mut self) -> io::Result<bool> {
        let mut tmp = [0u8; 16384];
        let n = self.stream.read(&mut tmp)?;
        self.buf.extend_from_slice(&tmp[..n]);
        Ok(n > 0)
    }

    /// Reads one response. Err when the head never arrives whole; `complete: false`
    /// when the body is cut.
    pub fn read(&mut self) -> io::Result<Resp> {
        let head_end = loop {
            if let Some(i) = find(&self.buf, b"\r\n\r\n") {
                break i;
            }
            if !self.more()? {
                return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "eof in head"));
            }
        };
        let head = String::from_utf8(self.buf[..head_end].to_vec()).unwrap();
        self.buf.drain(..head_end + 4);
        let mut lines = head.split("\r\n");
        let status_line = lines.next().unwrap();
        let status: u16 = status_line.split(' ').nth(1).unwrap().parse().unwrap();
        let headers: Vec<(String, String)> = lines
            .map(|l| {
                let (n, v) = l.split_once(':').unwrap();
                (n.to_ascii_lowercase(), v.trim().to_owned())
            })
            .collect();
        let get = |name: &str| {
            headers
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.clone())
        };
        if status == 100 {
            return self.read();
        }
        let mut body = Vec::new();
        let mut complete = true;
        if get("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
            'chunks: loop {
                let line_end = loop {
                    if let Some(i) = find(&self.buf, b"\r\n") {
                        break i;
                    }
                    if !self.more().unwrap_or(false) {
                        complete = false;
                        break 'chunks;
                    }
                };
                let size =
                    usize::from_str_radix(std::str::from_utf8(&self.buf[..line_end]).unwrap(), 16)
                        .unwrap();
                self.buf.drain(..line_end + 2);
                while self.buf.len() < size + 2 {
                    if !self.more().unwrap_or(false) {
                        body.extend_from_slice(&self.buf[..self.buf.len().min(size)]);
                        self.buf.clear();
                        complete = false;
                        break 'chunks;
                    }
                }
                body.extend_from_slice(&self.buf[..size]);
                self.buf.drain(..size + 2);
                if size == 0 {
                    break;
                }
            }
        } else if let Some(len) = get("content-length") {
            let len: usize = len.parse().unwrap();
            while self.buf.len() < len {
                if !self.more().unwrap_or(false) {
                    complete = false;
                    break;
                }
            }
            let take = self.buf.len().min(len);
            body = self.buf.drain(..take).collect();
        }
        Ok(Resp {
            status,
            headers,
            body,
            complete,
        })
    }

    pub fn request(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> io::Result<Resp> {
        self.send(method, path, headers, body)?;
        self.read()
    }

    /// An OpenAI chat completion with `text` as the user turn, keyed by `key`.
    pub fn chat(&mut self, key: &str, text: &str, stream: bool) -> io::Result<Resp> {
        let auth = format!("Bearer {key}");
        let headers = [("authorization", auth.as_str())];
        self.request(
            "POST",
            "/v1/chat/completions",
            &headers,
            chat_body(text, stream).as_bytes(),
        )
    }

    /// An Anthropic message with `text` as the user turn, keyed by `key`.
    pub fn messages(&mut self, key: &str, text: &str, stream: bool) -> io::Result<Resp> {
        let headers = [("x-api-key", key), ("anthropic-version", "2023-06-01")];
        self.request(
            "POST",
            "/v1/messages",
            &headers,
            messages_body(text, stream).as_bytes(),
        )
    }

    /// True when the server closed the connection (EOF or reset) and sent nothing more.
    pub fn is_closed(&mut self) -> bool {
        matches!(self.more(), Ok(false) | Err(_))
    }
}

pub fn chat_body(text: &str, stream: bool) -> String {
    serde_json::json!({
        "model": "gpt-test",
        "stream": stream,
        "messages": [{"role": "user", "content": text}]
    })
    .to_string()
}

pub fn messages_body(text: &str, stream: bool) -> String {
    serde_json::json!({
        "model": "claude-test",
        "max_tokens": 64,
        "stream": stream,
        "messages": [{"role": "user", "content": text}]
    })
    .to_string()
}

/// `POST /v1/chat/completions` with a Bearer key and extra headers, on a new connection.
pub fn openai(addr: SocketAddr, key: &str, text: &str, extra: &[(&str, &str)]) -> io::Result<Resp> {
    let auth = format!("Bearer {key}");
    let mut headers = vec![
        ("authorization", auth.as_str()),
        ("content-type", "application/json"),
    ];
    headers.extend_from_slice(extra);
    Client::connect(addr)?.request(
        "POST",
        "/v1/chat/completions",
        &headers,
        chat_body(text, false).as_bytes(),
    )
}

/// `POST /v1/messages` with an `x-api-key`, on a new connection.
pub fn anthropic(
    addr: SocketAddr,
    key: &str,
    text: &str,
    extra: &[(&str, &str)],
) -> io::Result<Resp> {
    let mut headers = vec![
        ("x-api-key", key),
        ("anthropic-version", "2023-06-01"),
        ("content-type", "application/json"),
    ];
    headers.extend_from_slice(extra);
    Client::connect(addr)?.request(
        "POST",
        "/v1/messages",
        &headers,
        messages_body(text, false).as_bytes(),
    )
}

/// Parses OpenAI's Go-style durations (`20ms`, `1.5s`, `6m0s`, `1h2m3s`).
pub fn parse_go_duration(s: &str) -> Option<Duration> {
    let mut total = 0f64;
    let mut num = String::new();
    let mut chars = s.chars().peekable();
    let mut any = false;
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() || c == '.' {
            num.push(c);
            continue;
        }
        let v: f64 = num.parse().ok()?;
        num.clear();
        let unit = match c {
            'h' => 3600.0,
            'm' if chars.peek() == Some(&'s') => {
                chars.next();
                0.001
            }
            'm' => 60.0,
            's' => 1.0,
            _ => return None,
        };
        total += v * unit;
        any = true;
    }
    (any && num.is_empty()).then(|| Duration::from_secs_f64(total))
}

/// Checks an RFC 3339 UTC timestamp like `2024-05-01T12:00:03Z`.
pub fn looks_rfc3339(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 20
        && b[4] == b'-'
        && b[7] == b'-'
        && b[10] == b'T'
        && b[13] == b':'
        && b[16] == b':'
        && b[19] == b'Z'
        && s.chars()
            .enumerate()
            .all(|(i, c)| [4, 7, 10, 13, 16, 19].contains(&i) || c.is_ascii_digit())
}

/// The SSE events of a stream body: (event name, data) pairs.
pub fn sse_events(body: &[u8]) -> Vec<(Option<String>, String)> {
    let text = String::from_utf8_lossy(body);
    text.split("\n\n")
        .filter(|block| !block.trim().is_empty())
        .map(|block| {
            let mut event = None;
            let mut data = String::new();
            for line in block.lines() {
                if let Some(v) = line.strip_prefix("event: ") {
                    event = Some(v.to_owned());
                } else if let Some(v) = line.strip_prefix("data: ") {
                    data.push_str(v);
                }
            }
            (event, data)
        })
        .collect()
}
