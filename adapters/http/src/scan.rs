//! A JSON text checked whole in one pass, without building it, for the members of its
//! top-level object: what a session reads of a request or an answer it passes on as
//! it came. It accepts exactly the texts `serde_json` parses into a `Value` (UTF-8,
//! strict grammar, no lone surrogate, no number beyond `f64`, at most 127 nested
//! arrays and objects), so a text it accepts can always be parsed later.

/// How deep arrays and objects may nest: `serde_json`'s limit.
const MAX_DEPTH: u32 = 127;

/// A string between its quotes, its escapes not decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RawStr<'a> {
    /// Valid UTF-8 (the scan checked it).
    text: &'a [u8],
    escaped: bool,
}

impl RawStr<'_> {
    /// Whether the string is `name`.
    pub(crate) fn is(&self, name: &str) -> bool {
        if self.escaped {
            self.decoded() == name
        } else {
            self.text == name.as_bytes()
        }
    }

    /// The string, its escapes decoded.
    pub(crate) fn decoded(&self) -> String {
        let text = String::from_utf8_lossy(self.text);
        if !self.escaped {
            return text.into_owned();
        }
        let mut out = String::with_capacity(text.len());
        let mut rest = &*text;
        while let Some(at) = rest.find('\\') {
            let (plain, escape) = rest.split_at(at);
            out.push_str(plain);
            rest = decode_escape(escape, &mut out);
        }
        out.push_str(rest);
        out
    }
}

/// Decodes the escape `text` starts with (the scan checked it) into `out`; returns
/// the text after it.
fn decode_escape<'a>(text: &'a str, out: &mut String) -> &'a str {
    let b = text.as_bytes();
    let c = match b.get(1) {
        Some(b'n') => '\n',
        Some(b't') => '\t',
        Some(b'r') => '\r',
        Some(b'b') => '\u{8}',
        Some(b'f') => '\u{c}',
        Some(b'u') => {
            let unit = |at: usize| {
                let hex = text.get(at..at.saturating_add(4))?;
                u32::from_str_radix(hex, 16).ok()
            };
            let first = unit(2).unwrap_or(0);
            // The scan let a lead surrogate through only with its trail after it.
            let (code, len) = match unit(8) {
                Some(second) if is_lead(first) => {
                    let pair = 0x10000 + ((first - 0xD800) << 10) + second.saturating_sub(0xDC00);
                    (pair, 12)
                }
                _ => (first, 6),
            };
            out.push(char::from_u32(code).unwrap_or(char::REPLACEMENT_CHARACTER));
            return text.get(len..).unwrap_or("");
        }
        Some(&other) => char::from(other),
        None => return "",
    };
    out.push(c);
    text.get(2..).unwrap_or("")
}

fn is_lead(unit: u32) -> bool {
    (0xD800..0xDC00).contains(&unit)
}

fn is_trail(unit: u32) -> bool {
    (0xDC00..0xE000).contains(&unit)
}

/// A value as a session reads one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scanned<'a> {
    /// A string.
    Str(RawStr<'a>),
    /// `true` or `false`.
    Bool(bool),
    /// A number, as written.
    Number(&'a [u8]),
    /// An object, as written (braces included).
    Object(&'a [u8]),
    /// An array or `null`.
    Other,
}

impl Scanned<'_> {
    /// The string, when it is one.
    pub(crate) fn into_string(self) -> Option<String> {
        match self {
            Scanned::Str(s) => Some(s.decoded()),
            _ => None,
        }
    }

    /// The number, when it is a non-negative integer that fits (as
    /// `serde_json::Value::as_u64` reads one).
    pub(crate) fn as_u64(self) -> Option<u64> {
        match self {
            Scanned::Number(digits) => digits.iter().try_fold(0u64, |n, &d| {
                let digit = d.checked_sub(b'0').filter(|d| *d <= 9)?;
                n.checked_mul(10)?.checked_add(u64::from(digit))
            }),
            _ => None,
        }
    }
}

/// Checks that `text` is one JSON value and calls `each` with every member of it, in
/// order, when it is an object. `Some(true)`: an object; `Some(false)`: another
/// value; `None`: not JSON.
pub(crate) fn members<'a>(
    text: &'a [u8],
    each: impl FnMut(RawStr<'a>, Scanned<'a>),
) -> Option<bool> {
    let mut scan = Scan { text, at: 0 };
    scan.skip_space();
    let object = scan.peek() == Some(b'{');
    if object {
        scan.object(0, each)?;
    } else {
        scan.value(0)?;
    }
    scan.skip_space();
    (scan.at == text.len()).then_some(object)
}

/// Bytes that end the plain run of a string: the quote, the backslash, the control
/// characters JSON forbids in one, and the bytes of non-ASCII characters (checked
/// as UTF-8 with the string).
const STOPS: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = i < 0x20 || i >= 0x80;
        i += 1;
    }
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t
};

struct Scan<'a> {
    text: &'a [u8],
    at: usize,
}

impl<'a> Scan<'a> {
    fn peek(&self) -> Option<u8> {
        self.text.get(self.at).copied()
    }

    fn skip_space(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.at += 1;
        }
    }

    /// Takes `byte`, after any space.
    fn expect(&mut self, byte: u8) -> Option<()> {
        self.skip_space();
        (self.peek() == Some(byte)).then(|| self.at += 1)
    }

    /// The text from `start` to here.
    fn since(&self, start: usize) -> Option<&'a [u8]> {
        self.text.get(start..self.at)
    }

    /// One value at nesting `depth` (the containers around it).
    fn value(&mut self, depth: u32) -> Option<Scanned<'a>> {
        self.skip_space();
        let start = self.at;
        Some(match self.peek()? {
            b'"' => Scanned::Str(self.string()?),
            b'{' => {
                self.object(depth, |_, _| {})?;
                Scanned::Object(self.since(start)?)
            }
            b'[' => {
                self.array(depth)?;
                Scanned::Other
            }
            b't' => self.literal("true", Scanned::Bool(true))?,
            b'f' => self.literal("false", Scanned::Bool(false))?,
            b'n' => self.literal("null", Scanned::Other)?,
            b'-' | b'0'..=b'9' => Scanned::Number(self.number()?),
            _ => return None,
        })
    }

    fn literal(&mut self, word: &str, value: Scanned<'a>) -> Option<Scanned<'a>> {
        let end = self.at.checked_add(word.len())?;
        (self.text.get(self.at..end)? == word.as_bytes()).then(|| {
            self.at = end;
            value
        })
    }

    /// An object (at its `{`), calling `each` with its members.
    fn object(&mut self, depth: u32, mut each: impl FnMut(RawStr<'a>, Scanned<'a>)) -> Option<()> {
        let depth = enter(depth)?;
        let mut more = self.opened(b'}');
        while more {
            self.skip_space();
            if self.peek() != Some(b'"') {
                return None;
            }
            let key = self.string()?;
            self.expect(b':')?;
            let value = self.value(depth)?;
            each(key, value);
            more = self.after_item(b'}')?;
        }
        Some(())
    }

    /// An array (at its `[`).
    fn array(&mut self, depth: u32) -> Option<()> {
        let depth = enter(depth)?;
        let mut more = self.opened(b']');
        while more {
            self.value(depth)?;
            more = self.after_item(b']')?;
        }
        Some(())
    }

    /// Takes a container's opening byte; whether an item follows (false: it closed at
    /// once with `close`, taken).
    fn opened(&mut self, close: u8) -> bool {
        self.at += 1;
        self.skip_space();
        let empty = self.peek() == Some(close);
        if empty {
            self.at += 1;
        }
        !empty
    }

    /// Takes what follows an item: a comma (`Some(true)`: another item follows) or
    /// `close` (`Some(false)`); `None` for anything else.
    fn after_item(&mut self, close: u8) -> Option<bool> {
        self.skip_space();
        let next = self.peek()?;
        if next != b',' && next != close {
            return None;
        }
        self.at += 1;
        Some(next == b',')
    }

    /// A string (at its opening quote).
    #[inline]
    fn string(&mut self) -> Option<RawStr<'a>> {
        self.at += 1;
        let start = self.at;
        let mut escaped = false;
        let mut ascii = true;
        loop {
            self.at = plain_run(self.text, self.at);
            match self.peek()? {
                b'"' => {
                    let text = self.since(start)?;
                    self.at += 1;
                    if !ascii {
                        std::str::from_utf8(text).ok()?;
                    }
                    return Some(RawStr { text, escaped });
                }
                b'\\' => {
                    escaped = true;
                    self.escape()?;
                }
                0x80.. => {
                    ascii = false;
                    self.at += 1;
                }
                _ => return None,
            }
        }
    }

    /// An escape (at its backslash).
    fn escape(&mut self) -> Option<()> {
        self.at += 1;
        match self.peek()? {
            b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => self.at += 1,
            b'u' => {
                let unit = self.unit()?;
                if is_lead(unit) {
                    let next = self.text.get(self.at..self.at.checked_add(2)?)?;
                    if next != b"\\u" {
                        return None;
                    }
                    self.at += 1;
                    if !is_trail(self.unit()?) {
                        return None;
                    }
                } else if is_trail(unit) {
                    return None;
                }
            }
            _ => return None,
        }
        Some(())
    }

    /// The four hex digits after a `u` (at the `u`).
    fn unit(&mut self) -> Option<u32> {
        let start = self.at.checked_add(1)?;
        let end = start.checked_add(4)?;
        let hex = self.text.get(start..end)?;
        let unit = hex.iter().try_fold(0u32, |n, &h| {
            let digit = char::from(h).to_digit(16)?;
            Some(n << 4 | digit)
        })?;
        self.at = end;
        Some(unit)
    }

    /// A number (at its first character): JSON's grammar, and a value `f64` holds.
    fn number(&mut self) -> Option<&'a [u8]> {
        let start = self.at;
        if self.peek() == Some(b'-') {
            self.at += 1;
        }
        match self.peek()? {
            b'0' => self.at += 1,
            b'1'..=b'9' => self.digits(),
            _ => return None,
        }
        if self.peek() == Some(b'.') {
            self.at += 1;
            self.some_digits()?;
        }
        let mut exponent = false;
        if let Some(b'e' | b'E') = self.peek() {
            self.at += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.at += 1;
            }
            self.some_digits()?;
            exponent = true;
        }
        let text = self.since(start)?;
        // A number beyond `f64` is refused. Without an exponent only one of over 300
        // digits can be.
        if exponent || text.len() > 300 {
            let written = std::str::from_utf8(text).ok()?;
            written.parse::<f64>().ok().filter(|f| f.is_finite())?;
        }
        Some(text)
    }

    fn digits(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.at += 1;
        }
    }

    /// At least one digit.
    fn some_digits(&mut self) -> Option<()> {
        let start = self.at;
        self.digits();
        (self.at > start).then_some(())
    }
}

/// Where the plain run of a string that goes on at `at` ends: at the first of
/// [`STOPS`] (or the end), eight bytes at a time.
fn plain_run(bytes: &[u8], mut at: usize) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // A byte's high bit is set where the byte is below `n` (for n <= 0x80); a flag
    // may also be set above a true one, never below, so the lowest flag is exact.
    let below = |x: u64, n: u8| x.wrapping_sub(ONES * u64::from(n)) & !x & HIGH;
    while let Some(chunk) = at.checked_add(8).and_then(|end| bytes.get(at..end)) {
        let Ok(eight) = <[u8; 8]>::try_from(chunk) else {
            break;
        };
        let x = u64::from_le_bytes(eight);
        let stops =
            below(x, 0x20) | below(x ^ (ONES * 0x22), 1) | below(x ^ (ONES * 0x5c), 1) | x & HIGH;
        if stops != 0 {
            return at + (stops.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    while bytes.get(at).is_some_and(|&b| !STOPS[usize::from(b)]) {
        at += 1;
    }
    at
}

/// The depth inside one more container, when that is allowed.
fn enter(depth: u32) -> Option<u32> {
    (depth < MAX_DEPTH).then_some(depth + 1)
}

#[cfg(test)]
#[path = "scan_tests.rs"]
mod tests;
