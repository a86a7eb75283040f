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
    #[inline]
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
    mut each: impl FnMut(RawStr<'a>, Scanned<'a>),
) -> Option<bool> {
    read(text, |scan, key| {
        let value = scan.value(1)?;
        each(key, value);
        Some(())
    })
}

/// A member [`members_and_inner`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Member<'a> {
    /// A member of the top-level object.
    Top(RawStr<'a>, Scanned<'a>),
    /// A member of the object under the inner key, before that object's own `Top`.
    Inner(RawStr<'a>, Scanned<'a>),
}

/// As [`members`]; and when a top-level member named `inner` is an object, its own
/// members come first, as [`Member::Inner`], read in the same pass (not read again
/// from the object's text).
pub(crate) fn members_and_inner<'a>(
    text: &'a [u8],
    inner: &str,
    mut each: impl FnMut(Member<'a>),
) -> Option<bool> {
    read(text, |scan, key| {
        let value = if key.is(inner) && scan.token()? == b'{' {
            scan.object(1, |scan, key| {
                let value = scan.value(2)?;
                each(Member::Inner(key, value));
                Some(())
            })?
        } else {
            scan.value(1)?
        };
        each(Member::Top(key, value));
        Some(())
    })
}

/// Checks that `text` is one JSON value; when it is an object, `member` reads each
/// member's value (the scan after its key and colon).
fn read<'a>(
    text: &'a [u8],
    member: impl FnMut(&mut Scan<'a>, RawStr<'a>) -> Option<()>,
) -> Option<bool> {
    let mut scan = Scan { text, at: 0 };
    let object = scan.token()? == b'{';
    if object {
        scan.object(0, member)?;
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
    /// The next byte that is not space (left in place); `None` at the end.
    #[inline(always)]
    fn token(&mut self) -> Option<u8> {
        match self.text.get(self.at) {
            Some(&b) if b > b' ' => Some(b),
            _ => {
                self.skip_space();
                self.text.get(self.at).copied()
            }
        }
    }

    fn skip_space(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.text.get(self.at) {
            self.at += 1;
        }
    }

    /// An object inside `outer` arrays and objects (at its `{`); `member` reads each
    /// member's value.
    fn object(
        &mut self,
        outer: u32,
        mut member: impl FnMut(&mut Scan<'a>, RawStr<'a>) -> Option<()>,
    ) -> Option<Scanned<'a>> {
        if outer >= MAX_DEPTH {
            return None;
        }
        let start = self.at;
        self.at += 1;
        if self.token()? == b'}' {
            self.at += 1;
        } else {
            loop {
                let key = self.key()?;
                member(self, key)?;
                if !self.after_item(b'}')? {
                    break;
                }
            }
        }
        Some(Scanned::Object(self.text.get(start..self.at)?))
    }

    /// A member's key and the colon after it (at the space before the key).
    #[inline(always)]
    fn key(&mut self) -> Option<RawStr<'a>> {
        if self.token()? != b'"' {
            return None;
        }
        let key = self.string()?;
        if self.token()? != b':' {
            return None;
        }
        self.at += 1;
        Some(key)
    }

    /// One value inside `outer` arrays and objects (at the space before it).
    fn value(&mut self, outer: u32) -> Option<Scanned<'a>> {
        let first = self.token()?;
        let start = self.at;
        match first {
            b'{' => {
                self.container(outer)?;
                Some(Scanned::Object(self.text.get(start..self.at)?))
            }
            b'[' => {
                self.container(outer)?;
                Some(Scanned::Other)
            }
            _ => self.scalar(first),
        }
    }

    /// A value that is not an array or an object (at `first`, its first byte).
    #[inline(always)]
    fn scalar(&mut self, first: u8) -> Option<Scanned<'a>> {
        Some(match first {
            b'"' => Scanned::Str(self.string()?),
            b't' => self.literal(b"true", Scanned::Bool(true))?,
            b'f' => self.literal(b"false", Scanned::Bool(false))?,
            b'n' => self.literal(b"null", Scanned::Other)?,
            b'-' | b'0'..=b'9' => Scanned::Number(self.number()?),
            _ => return None,
        })
    }

    fn literal(&mut self, word: &[u8], value: Scanned<'a>) -> Option<Scanned<'a>> {
        let rest = self.text.get(self.at..)?;
        rest.starts_with(word).then(|| {
            self.at += word.len();
            value
        })
    }

    /// An array or an object inside `outer` others (at its opening byte), checked
    /// whole in one loop: `objects` holds, a bit a level, which of the containers
    /// open inside it are objects.
    fn container(&mut self, outer: u32) -> Option<()> {
        let room = MAX_DEPTH.checked_sub(outer)?;
        let mut depth = 0u32;
        let mut objects = 0u128;
        let mut first = self.token()?;
        loop {
            if let b'{' | b'[' = first {
                if depth >= room {
                    return None;
                }
                depth += 1;
                let object = first == b'{';
                objects = objects << 1 | u128::from(object);
                self.at += 1;
                let close = if object { b'}' } else { b']' };
                if self.token()? != close {
                    if object {
                        self.key()?;
                    }
                    first = self.token()?;
                    continue;
                }
                self.at += 1;
                depth -= 1;
                objects >>= 1;
            } else {
                self.scalar(first)?;
            }
            // After an item: close what ends here, up to the next item.
            loop {
                if depth == 0 {
                    return Some(());
                }
                let object = objects & 1 == 1;
                if self.after_item(if object { b'}' } else { b']' })? {
                    if object {
                        self.key()?;
                    }
                    break;
                }
                depth -= 1;
                objects >>= 1;
            }
            first = self.token()?;
        }
    }

    /// Takes what follows an item: a comma (`Some(true)`: another item follows) or
    /// `close` (`Some(false)`); `None` for anything else.
    #[inline(always)]
    fn after_item(&mut self, close: u8) -> Option<bool> {
        let next = self.token()?;
        if next != b',' && next != close {
            return None;
        }
        self.at += 1;
        Some(next == b',')
    }

    /// A string (at its opening quote).
    #[inline(always)]
    fn string(&mut self) -> Option<RawStr<'a>> {
        let start = self.at + 1;
        let mut at = start;
        let mut escaped = false;
        let mut ascii = true;
        loop {
            at = plain_run(self.text, at);
            match *self.text.get(at)? {
                b'"' => break,
                b'\\' => {
                    escaped = true;
                    at = escape(self.text, at)?;
                }
                0x80.. => {
                    ascii = false;
                    at += 1;
                }
                _ => return None,
            }
        }
        let text = self.text.get(start..at)?;
        if !ascii {
            std::str::from_utf8(text).ok()?;
        }
        self.at = at + 1;
        Some(RawStr { text, escaped })
    }

    /// A number (at its first character): JSON's grammar, and a value `f64` holds.
    fn number(&mut self) -> Option<&'a [u8]> {
        let start = self.at;
        let mut at = start;
        if self.text.get(at) == Some(&b'-') {
            at += 1;
        }
        match self.text.get(at)? {
            b'0' => at += 1,
            b'1'..=b'9' => at = digits(self.text, at),
            _ => return None,
        }
        if self.text.get(at) == Some(&b'.') {
            at = some_digits(self.text, at + 1)?;
        }
        let mut exponent = false;
        if let Some(b'e' | b'E') = self.text.get(at) {
            at += 1;
            if let Some(b'+' | b'-') = self.text.get(at) {
                at += 1;
            }
            at = some_digits(self.text, at)?;
            exponent = true;
        }
        let text = self.text.get(start..at)?;
        // A number beyond `f64` is refused. Without an exponent only one of over 300
        // digits can be.
        if exponent || text.len() > 300 {
            let written = std::str::from_utf8(text).ok()?;
            written.parse::<f64>().ok().filter(|f| f.is_finite())?;
        }
        self.at = at;
        Some(text)
    }
}

/// Where the escape at `at` (its backslash) ends, when it is one JSON allows: a
/// `\u` lead surrogate only with its `\u` trail.
fn escape(text: &[u8], at: usize) -> Option<usize> {
    let at = at + 1;
    match text.get(at)? {
        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => Some(at + 1),
        b'u' => {
            let first = unit(text, at)?;
            let after = at + 5;
            if is_lead(first) {
                if text.get(after..)?.first_chunk() != Some(b"\\u") {
                    return None;
                }
                unit(text, after + 1).filter(|u| is_trail(*u))?;
                Some(after + 6)
            } else if is_trail(first) {
                None
            } else {
                Some(after)
            }
        }
        _ => None,
    }
}

/// The four hex digits after the `u` at `at`.
fn unit(text: &[u8], at: usize) -> Option<u32> {
    let hex: &[u8; 4] = text.get(at + 1..)?.first_chunk()?;
    hex.iter().try_fold(0u32, |n, &h| {
        let digit = char::from(h).to_digit(16)?;
        Some(n << 4 | digit)
    })
}

/// Where the digits from `at` end.
fn digits(text: &[u8], mut at: usize) -> usize {
    while text.get(at).is_some_and(u8::is_ascii_digit) {
        at += 1;
    }
    at
}

/// Where the digits from `at` end, when there is at least one.
fn some_digits(text: &[u8], at: usize) -> Option<usize> {
    let end = digits(text, at);
    (end > at).then_some(end)
}

/// Where the plain run of a string that goes on at `at` ends: at the first of
/// [`STOPS`] (or the end), eight bytes at a time.
fn plain_run(bytes: &[u8], mut at: usize) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // A byte's high bit is set where the byte is below `n` (for n <= 0x80); a flag
    // may also be set above a true one, never below, so the lowest flag is exact.
    let below = |x: u64, n: u8| x.wrapping_sub(ONES * u64::from(n)) & !x & HIGH;
    while let Some(eight) = bytes.get(at..).and_then(<[u8]>::first_chunk::<8>) {
        let x = u64::from_le_bytes(*eight);
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

#[cfg(test)]
#[path = "scan_tests.rs"]
mod tests;
