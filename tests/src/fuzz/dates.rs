//! `retry_after`, `duration` and `rfc3339`: the value parsers, checked against the
//! core's formatters (format → parse → the same value) and simple closed forms.

use core::time::Duration;

use arbitrary::Unstructured;
use steadfast_core::duration::{self, Human};
use steadfast_core::hints::{
    MAX_HINT, parse_http_date, parse_http_date_at, parse_retry_after, parse_retry_after_ms,
    parse_rfc3339,
};

use super::{sane_wall_clock, split_u64, trim};
use steadfast_core::date::{Asctime, ImfFixdate, LAST_4_DIGIT_YEAR, Rfc3339};

/// `retry_after`: the first 8 bytes are the wall clock (reduced to four-digit years,
/// see [`sane_wall_clock`]), the rest a header value.
///
/// - Results never exceed [`MAX_HINT`].
/// - Plain digits mean seconds (`retry-after`) and milliseconds (`retry-after-ms`).
/// - `parse_http_date` and `parse_http_date_at` differ only for RFC 850's two-digit
///   years.
/// - A parsed instant written back as IMF-fixdate and asctime parses to itself.
/// - A date `retry-after` is the span from the wall clock to the date (zero if past).
pub fn retry_after(data: &[u8]) {
    let (now, value) = split_u64(data);
    let now = sane_wall_clock(now);
    let ra = parse_retry_after(value, now);
    let ms = parse_retry_after_ms(value);
    for d in [ra, ms].into_iter().flatten() {
        assert!(d <= MAX_HINT, "{d:?} above MAX_HINT for {value:?}");
    }
    let t = trim(value);
    if !t.is_empty() && t.len() <= 12 && t.iter().all(u8::is_ascii_digit) {
        let n: u64 = std::str::from_utf8(t).unwrap().parse().unwrap();
        assert_eq!(ra, Some(Duration::from_secs(n).min(MAX_HINT)), "{value:?}");
        assert_eq!(
            ms,
            Some(Duration::from_millis(n).min(MAX_HINT)),
            "{value:?}"
        );
    }
    let fixed = parse_http_date(value);
    let at = parse_http_date_at(value, now);
    if fixed != at {
        // A two-digit year may resolve to another century (even one before 1970,
        // which is rejected); only RFC 850 dates have those.
        assert!(
            t.contains(&b'-'),
            "only RFC 850 dates resolve years: {value:?}"
        );
    }
    for unix in [fixed, at].into_iter().flatten() {
        if unix <= LAST_4_DIGIT_YEAR {
            let imf = ImfFixdate(unix).to_string();
            assert_eq!(parse_http_date(imf.as_bytes()), Some(unix), "{imf}");
            let asc = Asctime(unix).to_string();
            assert_eq!(parse_http_date(asc.as_bytes()), Some(unix), "{asc}");
        }
    }
    if let Some(unix) = at
        && !matches!(t.first(), Some(b'0'..=b'9' | b'.'))
    {
        let want = Duration::from_secs(unix.saturating_sub(now)).min(MAX_HINT);
        assert_eq!(ra, Some(want), "{value:?} at {now}");
    }
}

/// `duration`: the human-duration grammar.
///
/// - A parsed value written by [`Human`] parses back to itself, and `Human` is
///   canonical (writing it again gives the same text).
/// - Any `Duration` (from the first 12 bytes) survives `Human` → `parse`.
/// - Surrounding whitespace does not matter.
/// - Two valid texts glued together add up (checked addition).
pub fn duration(data: &[u8]) {
    let (secs, rest) = split_u64(data);
    let nanos = rest.get(..4).map_or(0, |b| {
        u32::from_le_bytes([b[0], b[1], b[2], b[3]]) % 1_000_000_000
    });
    let d = Duration::new(secs, nanos);
    let text = Human(d).to_string();
    assert_eq!(duration::parse(text.as_bytes()), Some(d), "{text}");

    let Some(parsed) = duration::parse(data) else {
        return;
    };
    let text = Human(parsed).to_string();
    assert_eq!(
        duration::parse(text.as_bytes()),
        Some(parsed),
        "{data:?} → {text}"
    );
    let padded = [b" \t".as_slice(), data, b"\t "].concat();
    assert_eq!(duration::parse(&padded), Some(parsed), "{padded:?}");
    let split = usize::from(data.first().copied().unwrap_or(0)) % data.len().max(1);
    let (a, b) = data.split_at(split);
    let plain = |s: &[u8]| !s.is_empty() && !s.iter().any(u8::is_ascii_whitespace) && s != b"0";
    if plain(a)
        && plain(b)
        && let (Some(x), Some(y)) = (duration::parse(a), duration::parse(b))
    {
        assert_eq!(Some(parsed), x.checked_add(y), "{a:?} + {b:?}");
    }
}

/// `rfc3339`: arbitrary texts, and instants written out in every way the grammar
/// allows (fraction digits 0–12, any offset).
///
/// - A parsed instant has nanos below 10^9 and is not before 1970; written back in UTC
///   with nine digits it parses to itself.
/// - A generated text parses to the instant it was written from, its fraction
///   truncated to the digits written and rounded up for digits past the ninth.
pub fn rfc3339(data: &[u8]) {
    if let Some((secs, nanos)) = parse_rfc3339(data) {
        assert!(nanos < 1_000_000_000, "{data:?}");
        if secs <= LAST_4_DIGIT_YEAR {
            let text = written(secs, nanos, 9, 0, 0);
            assert_eq!(
                parse_rfc3339(text.as_bytes()),
                Some((secs, nanos)),
                "{text}"
            );
        }
    }
    let mut u = Unstructured::new(data);
    let mut draw = || -> arbitrary::Result<(u64, u32, usize, u8, i32)> {
        Ok((
            u.int_in_range(86_400..=LAST_4_DIGIT_YEAR - 86_400)?,
            u.int_in_range(0..=999_999_999)?,
            u.int_in_range(0..=12)?,
            u.int_in_range(0..=9)?,
            u.int_in_range(-1439..=1439)?,
        ))
    };
    let Ok((secs, nanos, digits, extra, offset)) = draw() else {
        return;
    };
    let text = written(secs, nanos, digits, extra, offset);
    let kept = digits.min(9) as u32;
    let mut want = (secs, nanos - nanos % 10u32.pow(9 - kept));
    if digits > 9 && extra != 0 {
        want.1 += 1;
        if want.1 == 1_000_000_000 {
            want = (want.0 + 1, 0);
        }
    }
    assert_eq!(parse_rfc3339(text.as_bytes()), Some(want), "{text}");
}

/// An RFC 3339 instant with `digits` fraction digits (0–12; past 9 the extra digits are
/// `extra`, a digit, which the parser must round up) at a UTC offset of `offset_min`
/// minutes: the core's formatter, with the digits past the ninth spliced in.
fn written(unix: u64, nanos: u32, digits: usize, extra: u8, offset_min: i32) -> String {
    let text = Rfc3339 {
        unix,
        nanos,
        digits: digits.min(9) as u8,
        offset_minutes: offset_min as i16,
    }
    .to_string();
    if digits <= 9 {
        return text;
    }
    // The offset starts at the last `Z`, `+` or `-` (the date's `-`s come before).
    let at = text.rfind(['Z', '+', '-']).unwrap_or(text.len());
    let more: String = (9..digits).map(|_| char::from(b'0' + extra % 10)).collect();
    format!("{}{more}{}", &text[..at], &text[at..])
}
