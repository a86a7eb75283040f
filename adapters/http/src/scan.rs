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
            // Byte by byte: names are short, and a call of `memcmp` costs more.
            let name = name.as_bytes();
            self.text.len() == name.len() && self.text.iter().zip(name).all(|(a, b)| a == b)
        }
    }

    /// The string, its escapes decoded.
    pub(crate) fn decoded(&self) -> String {
        // Checked first: the check alone is cheaper than the lossy conversion's, and
        // the scan has already let only well-formed text through.
        let text = match std::str::from_utf8(self.text) {
            Ok(text) => std::borrow::Cow::Borrowed(text),
            Err(_) => String::from_utf8_lossy(self.text),
        };
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
    read(text, move |at, key| {
        let (end, value) = value_at(text, at, 1)?;
        each(key, value);
        Some(end)
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
    read(text, move |at, key| {
        let (at, first) = token_at(text, at);
        let (end, value) = if first == b'{' && key.is(inner) {
            let end = object_end(text, at, 1, |at, key| {
                let (end, value) = value_at(text, at, 2)?;
                each(Member::Inner(key, value));
                Some(end)
            })?;
            (end, Scanned::Object(text.get(at..end)?))
        } else {
            value_at(text, at, 1)?
        };
        each(Member::Top(key, value));
        Some(end)
    })
}

/// Checks that `text` is one JSON value; when it is an object, `member` reads each
/// member's value from where it is given (after the key's colon) and says where
/// the value ends.
#[inline(always)]
fn read<'a>(
    text: &'a [u8],
    member: impl FnMut(usize, RawStr<'a>) -> Option<usize>,
) -> Option<bool> {
    let (at, first) = token_at(text, 0);
    let object = first == b'{';
    let end = if object {
        object_end(text, at, 0, member)?
    } else {
        value_at(text, at, 0)?.0
    };
    (after_space(text, end) == text.len()).then_some(object)
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

/// Where the object at `at` (its `{`), inside `outer` arrays and objects, ends;
/// `member` reads each member's value from where it is given (after the key's
/// colon) and says where the value ends.
#[inline(always)]
fn object_end<'a>(
    text: &'a [u8],
    at: usize,
    outer: u32,
    mut member: impl FnMut(usize, RawStr<'a>) -> Option<usize>,
) -> Option<usize> {
    if outer >= MAX_DEPTH {
        return None;
    }
    let (mut at, next) = token_at(text, at + 1);
    if next == b'}' {
        return Some(at + 1);
    }
    loop {
        let (after, key) = key_at(text, at)?;
        let next;
        (at, next) = token_at(text, member(after, key)?);
        at += 1;
        match next {
            b',' => {}
            b'}' => return Some(at),
            _ => return None,
        }
    }
}

/// A member's key from `at` (the space before it), and where its colon ends.
#[inline(always)]
fn key_at(text: &[u8], at: usize) -> Option<(usize, RawStr<'_>)> {
    let (at, first) = token_at(text, at);
    if first != b'"' {
        return None;
    }
    let (end, key) = string_at(text, at)?;
    let (colon, next) = token_at(text, end);
    (next == b':').then_some((colon + 1, key))
}

/// One value from `at` (the space before it) inside `outer` arrays and objects, and
/// where it ends.
#[inline(always)]
fn value_at(text: &[u8], at: usize, outer: u32) -> Option<(usize, Scanned<'_>)> {
    let (start, first) = token_at(text, at);
    let (end, value) = match first {
        b'"' => {
            let (end, s) = string_at(text, start)?;
            return Some((end, Scanned::Str(s)));
        }
        b'{' => {
            let end = container_end(text, start, outer)?;
            (end, Scanned::Object(text.get(start..end)?))
        }
        b'[' => (container_end(text, start, outer)?, Scanned::Other),
        b'-' | b'0'..=b'9' => {
            let end = number_end(text, start)?;
            (end, Scanned::Number(text.get(start..end)?))
        }
        b't' => (literal_end(text, start, b"true")?, Scanned::Bool(true)),
        b'f' => (literal_end(text, start, b"false")?, Scanned::Bool(false)),
        b'n' => (literal_end(text, start, b"null")?, Scanned::Other),
        _ => return None,
    };
    Some((end, value))
}

/// The string with its opening quote at `at`, and where it ends (after its
/// closing quote).
#[inline(always)]
fn string_at(text: &[u8], at: usize) -> Option<(usize, RawStr<'_>)> {
    let (end, escaped) = closing_quote(text, at)?;
    let text = text.get(at + 1..end)?;
    Some((end + 1, RawStr { text, escaped }))
}

/// The byte at `at`, or 0 past the end: no JSON text has a 0 byte where a token
/// may stand, so the end needs no case of its own.
#[inline(always)]
fn byte_at(text: &[u8], at: usize) -> u8 {
    text.get(at).copied().unwrap_or(0)
}

/// The first byte from `at` that is not space, and where it is (0 at the end).
#[inline(always)]
fn token_at(text: &[u8], at: usize) -> (usize, u8) {
    let b = byte_at(text, at);
    if b > b' ' {
        return (at, b);
    }
    let at = after_space(text, at);
    (at, byte_at(text, at))
}

/// Where the space from `at` ends.
fn after_space(text: &[u8], mut at: usize) -> usize {
    while let Some(b' ' | b'\t' | b'\n' | b'\r') = text.get(at) {
        at += 1;
    }
    at
}

/// The closing byte of an object (`object`) or an array.
#[inline(always)]
fn close_of(object: bool) -> u8 {
    if object { b'}' } else { b']' }
}

/// Where the array or object at `at`, inside `outer` others, ends; checked whole
/// in one loop. `levels` holds a bit a level open inside it (set for an object)
/// under a leading 1; one too deep for it is checked by a call of its own.
#[inline(never)]
fn container_end(text: &[u8], mut at: usize, outer: u32) -> Option<usize> {
    /// How many levels `levels` holds.
    const HELD: u32 = 62;
    let room = MAX_DEPTH.checked_sub(outer)?;
    let mut levels = 1u64;
    let mut first = byte_at(text, at);
    loop {
        match first {
            b'"' => at = closing_quote(text, at)?.0 + 1,
            b'{' | b'[' => {
                let depth = 63 - levels.leading_zeros();
                if depth >= room {
                    return None;
                }
                if depth == HELD {
                    at = container_end(text, at, outer + HELD)?;
                } else {
                    let object = first == b'{';
                    levels = levels << 1 | u64::from(object);
                    let next;
                    (at, next) = token_at(text, at + 1);
                    if next != close_of(object) {
                        if object {
                            at = after_key(text, at)?;
                        }
                        (at, first) = token_at(text, at);
                        continue;
                    }
                    at += 1;
                    levels >>= 1;
                }
            }
            b'-' | b'0'..=b'9' => at = number_end(text, at)?,
            b't' => at = literal_end(text, at, b"true")?,
            b'f' => at = literal_end(text, at, b"false")?,
            b'n' => at = literal_end(text, at, b"null")?,
            _ => return None,
        }
        // After an item: close what ends here, up to the next item.
        loop {
            if levels == 1 {
                return Some(at);
            }
            let object = levels & 1 == 1;
            let next;
            (at, next) = token_at(text, at);
            at += 1;
            if next == b',' {
                if object {
                    at = after_key(text, at)?;
                }
                break;
            }
            if next != close_of(object) {
                return None;
            }
            levels >>= 1;
        }
        (at, first) = token_at(text, at);
    }
}

/// Where a member's key from `at` (the space before it) and its colon end.
#[inline(always)]
fn after_key(text: &[u8], at: usize) -> Option<usize> {
    let (at, first) = token_at(text, at);
    if first != b'"' {
        return None;
    }
    let (end, _) = closing_quote(text, at)?;
    let (colon, next) = token_at(text, end + 1);
    (next == b':').then_some(colon + 1)
}

/// Where `word` (at `at`) ends, when it is there.
#[inline(always)]
fn literal_end<const N: usize>(text: &[u8], at: usize, word: &[u8; N]) -> Option<usize> {
    let rest = text.get(at..)?;
    (rest.first_chunk::<N>() == Some(word)).then_some(at + N)
}

/// Where the string with its opening quote at `at` has its closing quote, and
/// whether it has escapes.
#[inline(always)]
fn closing_quote(text: &[u8], at: usize) -> Option<(usize, bool)> {
    let start = at + 1;
    // Most strings are plain and end within sixteen bytes: two looks, no loop.
    for from in [start, start + 8] {
        let Some(eight) = eight_at(text, from) else {
            return string_end(text, from);
        };
        let stops = stops_in(*eight);
        if stops != 0 {
            let at = from + first_flagged(stops);
            if text.get(at) == Some(&b'"') {
                return Some((at, false));
            }
            return string_end(text, at);
        }
    }
    string_end(text, start + 16)
}

/// Where the string that goes on at `at` has its closing quote, and whether it
/// has escapes (from `at` on).
#[cold]
#[inline(never)]
fn string_end(text: &[u8], mut at: usize) -> Option<(usize, bool)> {
    let start = at;
    let mut escaped = false;
    let mut ascii = true;
    loop {
        at = plain_run(text, at);
        match *text.get(at)? {
            b'"' => break,
            b'\\' => {
                escaped = true;
                at = escape(text, at)?;
            }
            0x80.. => {
                ascii = false;
                at += 1;
            }
            _ => return None,
        }
    }
    // What came before `start` was plain ASCII: UTF-8 is checked from there alone.
    if !ascii {
        std::str::from_utf8(text.get(start..at)?).ok()?;
    }
    Some((at, escaped))
}

/// Where the number from `start` ends, when JSON's grammar allows it and `f64`
/// holds it.
#[inline(always)]
fn number_end(text: &[u8], start: usize) -> Option<usize> {
    let mut at = start + usize::from(byte_at(text, start) == b'-');
    match byte_at(text, at) {
        b'0' => at += 1,
        b'1'..=b'9' => at = digits(text, at + 1),
        _ => return None,
    }
    // Without a fraction or an exponent only one of over 300 digits can be beyond
    // `f64`.
    if matches!(byte_at(text, at), b'.' | b'e' | b'E') || at - start > 300 {
        return fraction_end(text, start, at);
    }
    Some(at)
}

/// [`number_end`] past the integer part, which ends at `at`.
#[cold]
#[inline(never)]
fn fraction_end(text: &[u8], start: usize, mut at: usize) -> Option<usize> {
    if text.get(at) == Some(&b'.') {
        at = some_digits(text, at + 1)?;
    }
    let mut exponent = false;
    if let Some(b'e' | b'E') = text.get(at) {
        at += 1;
        if let Some(b'+' | b'-') = text.get(at) {
            at += 1;
        }
        at = some_digits(text, at)?;
        exponent = true;
    }
    let written = text.get(start..at)?;
    if exponent || written.len() > 300 {
        let written = std::str::from_utf8(written).ok()?;
        written.parse::<f64>().ok().filter(|f| f.is_finite())?;
    }
    Some(at)
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

/// Where the digits from `at` end, eight bytes at a time.
#[inline(always)]
fn digits(text: &[u8], mut at: usize) -> usize {
    while let Some(eight) = eight_at(text, at) {
        if let Some(i) = eight.iter().position(|b| !b.is_ascii_digit()) {
            return at + i;
        }
        at += 8;
    }
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
#[inline(always)]
fn plain_run(bytes: &[u8], mut at: usize) -> usize {
    while let Some(eight) = eight_at(bytes, at) {
        if let Some(i) = eight.iter().position(|&b| STOPS[usize::from(b)]) {
            return at + i;
        }
        at += 8;
    }
    while bytes.get(at).is_some_and(|&b| !STOPS[usize::from(b)]) {
        at += 1;
    }
    at
}

/// The high bit of each of `eight` set when the byte is one of [`STOPS`].
#[inline(always)]
fn stops_in(eight: [u8; 8]) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const LOW: u64 = ONES * 0x7f;
    let x = u64::from_le_bytes(eight);
    let low = x & LOW;
    // Each sum stays within its byte (no carry reaches the next), so every flag is
    // exact: set when the low seven bits differ from a quote's, from a backslash's,
    // and are at least 0x20.
    let not_quote = (low ^ (ONES * 0x22)) + LOW;
    let not_backslash = (low ^ (ONES * 0x5c)) + LOW;
    let not_control = low + ONES * 0x60;
    !(not_quote & not_backslash & not_control & !x) & !LOW
}

/// The index of the first byte `flags` flags (its high bit set).
#[inline(always)]
fn first_flagged(flags: u64) -> usize {
    (flags.trailing_zeros() / 8) as usize
}

/// The eight bytes from `at`, when there are as many.
#[inline(always)]
fn eight_at(bytes: &[u8], at: usize) -> Option<&[u8; 8]> {
    bytes.get(at..)?.first_chunk()
}

#[cfg(test)]
#[path = "scan_tests.rs"]
mod tests;
