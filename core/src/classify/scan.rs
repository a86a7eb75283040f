use super::ErrorKind;

/// The raw (still escaped) string values found in the `"error"` object.
#[derive(Default)]
pub(super) struct Found<'a> {
    pub(super) ty: Option<&'a [u8]>,
    pub(super) code: Option<&'a [u8]>,
    pub(super) message: Option<&'a [u8]>,
}

pub(super) fn error_members(body: &[u8]) -> Found<'_> {
    let mut found = Found::default();
    let mut lx = Lexer {
        bytes: body,
        pos: 0,
    };
    if lx.bytes.starts_with(b"\xEF\xBB\xBF") {
        lx.pos = 3;
    }
    // Some gateways wrap the error object in an array: look at its first element.
    if lx.eat(b'[') {
        lx.skip_ws();
    }
    let _ = lx.object(|lx, key| {
        if !eq_unescaped(key, b"error") {
            lx.skip_value()?;
            return Some(false);
        }
        let _ = lx.object(|lx, key| {
            let slot = if eq_unescaped(key, b"type") {
                &mut found.ty
            } else if eq_unescaped(key, b"code") {
                &mut found.code
            } else if eq_unescaped(key, b"message") {
                &mut found.message
            } else {
                lx.skip_value()?;
                return Some(false);
            };
            if lx.peek() == Some(b'"') {
                let s = lx.string()?;
                slot.get_or_insert(s);
            } else {
                lx.skip_value()?;
            }
            Some(false)
        });
        // Whatever the `"error"` member was, nothing after it matters.
        Some(true)
    });
    found
}

pub(super) fn kind_named(raw: &[u8]) -> Option<ErrorKind> {
    ErrorKind::ALL
        .into_iter()
        .find(|k| eq_unescaped(raw, k.name().as_bytes()))
}

/// Phrases (ASCII, any case) that mean the prompt exceeds the context window.
const TOO_LONG: [&[u8]; 5] = [
    b"prompt is too long",
    b"maximum context length",
    b"context_length_exceeded",
    b"exceed context limit",
    b"exceeds the context window",
];

/// Searches the raw message; escapes are not decoded (the phrases contain none).
pub(super) fn says_context_too_long(message: &[u8]) -> bool {
    TOO_LONG.iter().any(|needle| {
        !needle.is_empty()
            && message
                .windows(needle.len())
                .any(|w| w.eq_ignore_ascii_case(needle))
    })
}

/// Compares a raw JSON string body with `target`, decoding escapes on the fly.
fn eq_unescaped(raw: &[u8], target: &[u8]) -> bool {
    let mut target = target.iter().copied();
    for b in Unescape(raw.iter()) {
        match b {
            Some(c) if target.next() == Some(c) => {}
            _ => return false,
        }
    }
    target.next().is_none()
}

/// The hash ([`super::codes`]) of a raw JSON string body, escapes decoded; `None`
/// when an escape is malformed (or a `\u` escape is not a single byte).
pub(super) fn hash_unescaped(raw: &[u8]) -> Option<u64> {
    let mut bad = false;
    let bytes = Unescape(raw.iter()).map_while(|b| {
        bad |= b.is_none();
        b
    });
    let h = super::codes::hash(bytes);
    (!bad).then_some(h)
}

/// The bytes of a raw JSON string body with its escapes decoded: `None` for a
/// malformed escape (and nothing after it).
struct Unescape<'a>(core::slice::Iter<'a, u8>);

impl Iterator for Unescape<'_> {
    type Item = Option<u8>;

    fn next(&mut self) -> Option<Option<u8>> {
        let b = *self.0.next()?;
        if b != b'\\' {
            return Some(Some(b));
        }
        Some(match self.0.next() {
            Some(b'"') => Some(b'"'),
            Some(b'\\') => Some(b'\\'),
            Some(b'/') => Some(b'/'),
            Some(b'b') => Some(0x08),
            Some(b'f') => Some(0x0c),
            Some(b'n') => Some(b'\n'),
            Some(b'r') => Some(b'\r'),
            Some(b't') => Some(b'\t'),
            Some(b'u') => self.unicode(),
            _ => None,
        })
    }
}

impl Unescape<'_> {
    /// The four hex digits after `\\u`, as one byte (every name compared against is
    /// ASCII); `None` when they are not four hex digits or not an ASCII character.
    fn unicode(&mut self) -> Option<u8> {
        let mut v: u32 = 0;
        for _ in 0..4 {
            let d = self.0.next().and_then(|h| char::from(*h).to_digit(16))?;
            v = v.wrapping_mul(16).wrapping_add(d);
        }
        u8::try_from(v).ok().filter(u8::is_ascii)
    }
}

struct Lexer<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Lexer<'a> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn bump(&mut self) {
        self.pos = self.pos.saturating_add(1);
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.bump();
        }
    }

    fn eat(&mut self, b: u8) -> bool {
        self.skip_ws();
        let hit = self.peek() == Some(b);
        if hit {
            self.bump();
        }
        hit
    }

    /// The raw content of the string at the cursor; `None` if there is none or it
    /// is not closed.
    fn string(&mut self) -> Option<&'a [u8]> {
        if self.peek() != Some(b'"') {
            return None;
        }
        self.bump();
        let start = self.pos;
        loop {
            let rest = self.bytes.get(self.pos..)?;
            let n = rest.iter().position(|&b| b == b'"' || b == b'\\')?;
            self.pos = self.pos.saturating_add(n);
            if self.peek()? == b'"' {
                let s = self.bytes.get(start..self.pos)?;
                self.bump();
                return Some(s);
            }
            // A backslash: skip it and the byte it escapes.
            self.pos = self.pos.saturating_add(2);
        }
    }

    /// Skips one value of any kind; nesting is tracked by a counter, not recursion,
    /// so deep input cannot exhaust the stack.
    fn skip_value(&mut self) -> Option<()> {
        self.skip_ws();
        match self.peek()? {
            b'"' => self.string().map(|_| ()),
            b'{' | b'[' => {
                let mut depth: usize = 0;
                loop {
                    match self.peek()? {
                        b'"' => {
                            self.string()?;
                            continue;
                        }
                        b'{' | b'[' => depth = depth.saturating_add(1),
                        b'}' | b']' => {
                            depth = depth.saturating_sub(1);
                            if depth == 0 {
                                self.bump();
                                return Some(());
                            }
                        }
                        _ => {}
                    }
                    self.bump();
                }
            }
            _ => {
                let start = self.pos;
                while let Some(b) = self.peek() {
                    if matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r') {
                        break;
                    }
                    self.bump();
                }
                (self.pos > start).then_some(())
            }
        }
    }

    /// Walks the object at the cursor: `on_member` gets each key with the cursor
    /// before the value, must consume the value, and returns `Some(true)` to stop.
    /// `None` when the input ends early or is not an object.
    fn object(
        &mut self,
        mut on_member: impl FnMut(&mut Self, &'a [u8]) -> Option<bool>,
    ) -> Option<()> {
        if !self.eat(b'{') {
            return None;
        }
        if self.eat(b'}') {
            return Some(());
        }
        loop {
            self.skip_ws();
            let key = self.string()?;
            if !self.eat(b':') {
                return None;
            }
            self.skip_ws();
            if on_member(self, key)? {
                return Some(());
            }
            if self.eat(b',') {
                continue;
            }
            return self.eat(b'}').then_some(());
        }
    }
}
