//! Server hints: how long the server asks us to wait, and what its rate-limit headers say.
//!
//! [`Hints::from_headers`] reads one response's headers; the standalone parsers below
//! (also the fuzz targets) read one value each. All of them are allocation-free, total
//! (any bytes in, `None` or a value out) and use checked arithmetic only.
//!
//! Rules shared by every value:
//! - Header names match ASCII case-insensitively; values are trimmed of spaces and tabs.
//! - Numbers are ASCII digits with an optional `.fraction`, a digit on at least one side
//!   of the point (`1.5`, `.5`, `5.`), as in [`crate::duration`].
//! - Garbage, signs, exponents, `NaN`, `inf`, empty or blank values are ignored (`None`).
//! - A valid but absurdly long wait — however many digits, and dates far ahead — is
//!   clamped to [`MAX_HINT`], not ignored, so the retry sequence sees a long hint and
//!   gives up with a typed reason (`HintTooLong`) instead of sleeping.
//! - Fractional waits are rounded *up* to the nanosecond: never earlier than asked.
//! - An instant in the past gives a zero wait. A zero wait (`retry-after: 0`, a past
//!   date) asks for nothing: [`Hints::wait_hint`] ignores it and the retry backs off as
//!   it would without a hint, so a server answering `0` cannot make a client spin.
//!
//! # What the waits mean
//!
//! `retry-after-ms` / `retry-after` is the wait before the next attempt. The rate-limit
//! headers describe a continuously refilled bucket (both providers replenish
//! continuously, and their limits are per minute): `limit` units per
//! [`SERVER_PERIOD`], `remaining` units left now, and `reset` the time until the bucket
//! is *full* again — not until the next request is allowed. One unit comes back every
//! [`RateWindow::unit_interval`], so a call needing `n` units more than `remaining`
//! waits `n` intervals ([`RateWindow::time_for`]); a `reset` alone is never a wait.
//! - When a header appears more than once, the first *valid* value wins.
//!
//! Dates: HTTP-dates in the three RFC 9110 forms (IMF-fixdate, RFC 850, asctime) and
//! RFC 3339 instants. Day and month names match case-insensitively; the weekday must be
//! a real weekday name (short, or long for RFC 850) but is not checked against the date.
//! Day-of-month is checked against the month and leap years; a leap second (`:60`) is
//! accepted. Instants before 1970 are rejected.

use crate::date::{DAYS, EPOCH_SECS, LONG_DAYS, MONTHS, civil_secs, year_of};
use crate::duration::{nanos_to_duration, scaled_nanos, split_number};
use core::time::Duration;

/// The longest wait a hint can carry (365 days); longer valid values are clamped to it.
pub const MAX_HINT: Duration = Duration::from_secs(365 * 86_400);

/// The period the providers' rate limits are stated in: requests and tokens per minute.
pub const SERVER_PERIOD: Duration = Duration::from_secs(60);

/// What the response headers tell about when to come back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Hints {
    /// The wait the server asked for (`retry-after-ms`, else `retry-after`), measured
    /// from the moment the response arrived.
    pub retry_after: Option<Duration>,
    /// `x-should-retry: true|false`.
    pub should_retry: Option<bool>,
    /// The request-count window (`x-ratelimit-*-requests`, `anthropic-ratelimit-requests-*`).
    pub requests: RateWindow,
    /// The token window (`x-ratelimit-*-tokens`; for Anthropic the most restrictive of
    /// `tokens`, `input-tokens` and `output-tokens`).
    pub tokens: RateWindow,
}

/// One rate-limit window as the server reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct RateWindow {
    /// The window's limit.
    pub limit: Option<u64>,
    /// What is left in the window.
    pub remaining: Option<u64>,
    /// How long until the window resets, from the moment the response arrived.
    pub reset: Option<Duration>,
}

impl RateWindow {
    /// A window the response said nothing about.
    pub const NONE: RateWindow = RateWindow {
        limit: None,
        remaining: None,
        reset: None,
    };

    /// How long the bucket takes to give one unit back, when the window tells: `None`
    /// without a `limit` (above zero).
    ///
    /// A bucket of `limit` per [`SERVER_PERIOD`] refills a unit every `period / limit`;
    /// a bucket of `limit` that is full `reset` after holding `remaining` refills one
    /// every `reset / (limit − remaining)`. The first is right when the provider
    /// enforces its per-minute limit over a shorter span (a smaller burst), the second
    /// when the limit's period is longer than a minute (a per-day limit); the slower of
    /// the two is taken, which is either one exactly when both models agree.
    pub fn unit_interval(&self) -> Option<Duration> {
        let limit = self.limit.filter(|l| *l > 0)?;
        let per_minute = div_ceil_duration(SERVER_PERIOD, limit);
        let missing = limit.saturating_sub(self.remaining.unwrap_or(0));
        let from_reset = match (self.reset, missing) {
            (Some(reset), 1..) => div_ceil_duration(reset, missing),
            _ => Duration::ZERO,
        };
        Some(per_minute.max(from_reset))
    }

    /// How long until `need` units are available, when the window tells: zero when
    /// `remaining` covers them, `None` when the window has no `remaining` or no
    /// [`unit_interval`](RateWindow::unit_interval). The fractional unit the server
    /// may hold beyond `remaining` is not counted, so the wait is never short.
    pub fn time_for(&self, need: u64) -> Option<Duration> {
        let remaining = self.remaining?;
        let missing = need.saturating_sub(remaining);
        if missing == 0 {
            return Some(Duration::ZERO);
        }
        let interval = self.unit_interval()?;
        Some(mul_duration(interval, missing).min(MAX_HINT))
    }
}

/// `d / n` rounded up to the nanosecond (`n ≥ 1`).
fn div_ceil_duration(d: Duration, n: u64) -> Duration {
    let nanos = d.as_nanos().div_ceil(u128::from(n.max(1)));
    nanos_to_duration(nanos).unwrap_or(Duration::MAX)
}

/// `d × n`, saturating.
fn mul_duration(d: Duration, n: u64) -> Duration {
    let nanos = d.as_nanos().saturating_mul(u128::from(n));
    nanos_to_duration(nanos).unwrap_or(Duration::MAX)
}

impl Hints {
    /// No hints at all: what a response without the headers, or no response, gives.
    pub const NONE: Hints = Hints {
        retry_after: None,
        should_retry: None,
        requests: RateWindow::NONE,
        tokens: RateWindow::NONE,
    };

    /// Parses the headers of one response. `wall_now_unix` (seconds since the Unix
    /// epoch) anchors HTTP-dates and RFC 3339 instants when there is no valid `Date`
    /// header; with one, they are measured from the response's own `Date`.
    ///
    /// Read: `retry-after-ms` (milliseconds, may be fractional; wins over
    /// `retry-after`), `retry-after` (see [`parse_retry_after`]), `x-should-retry`
    /// (`true`/`false`, any case), OpenAI `x-ratelimit-{limit,remaining,reset}-
    /// {requests,tokens}` (resets in the [`crate::duration`] grammar) and Anthropic
    /// `anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-
    /// {limit,remaining,reset}` (resets as RFC 3339 instants). When several windows
    /// describe the same quantity (Anthropic's three token windows, or OpenAI and
    /// Anthropic headers together) the most restrictive one is kept: the smallest
    /// `remaining`, ties broken by the longest `reset`; its `limit` and `reset` come
    /// with it. Two-digit RFC 850 years are resolved against `wall_now_unix`.
    pub fn from_headers<'h, I>(headers: I, wall_now_unix: u64) -> Hints
    where
        I: IntoIterator<Item = (&'h [u8], &'h [u8])>,
    {
        let mut raw = Raw::default();
        for (name, value) in headers {
            raw.take(name, value, wall_now_unix);
        }
        raw.resolve(wall_now_unix)
    }

    /// The wait before the next attempt of a call needing `tokens` tokens: the
    /// server's `retry_after` when it asked for one (a zero wait asks for nothing), else
    /// the time until the rate-limit windows have a request and `tokens` tokens for it
    /// ([`RateWindow::time_for`]; the longer of the two), else `None` (back off).
    pub fn wait_hint(&self, tokens: u64) -> Option<Duration> {
        if let Some(wait) = self.retry_after.filter(|w| !w.is_zero()) {
            return Some(wait);
        }
        let requests = self.requests.time_for(1);
        let tokens = self.tokens.time_for(tokens);
        requests.max(tokens).filter(|w| !w.is_zero())
    }
}

/// Parses a `Retry-After` value: integer or fractional seconds (`120`, `1.5`), or an
/// HTTP-date measured from `now_unix` (a past date gives zero). Two-digit RFC 850
/// years are resolved against `now_unix`. Clamped to [`MAX_HINT`].
pub fn parse_retry_after(value: &[u8], now_unix: u64) -> Option<Duration> {
    match retry_after(value, now_unix)? {
        RetryAt::Delay(d) => Some(d),
        RetryAt::At(at) => Some(until((at, 0), now_unix)),
    }
}

/// Parses a `retry-after-ms` value: integer or fractional milliseconds, rounded up to
/// the nanosecond and clamped to [`MAX_HINT`].
pub fn parse_retry_after_ms(value: &[u8]) -> Option<Duration> {
    decimal(trim(value), 1_000_000)
}

/// Parses an HTTP-date (RFC 9110 §5.6.7, all three forms) into Unix seconds.
///
/// Two-digit RFC 850 years take the fixed POSIX pivot (`70`–`99` → 19xx, `00`–`69` →
/// 20xx); [`parse_http_date_at`] applies RFC 9110's 50-year rule instead.
pub fn parse_http_date(value: &[u8]) -> Option<u64> {
    http_date(value, None)
}

/// Parses an HTTP-date like [`parse_http_date`], resolving a two-digit RFC 850 year
/// as RFC 9110 asks: the year with those digits within 50 years of `now_unix`'s year
/// (one more than 50 years ahead is taken a century earlier).
pub fn parse_http_date_at(value: &[u8], now_unix: u64) -> Option<u64> {
    http_date(value, Some(now_unix))
}

/// Parses an RFC 3339 instant (`2024-01-01T00:00:30Z`, `2024-01-01T02:00:30.25+02:00`)
/// into Unix seconds and nanoseconds. `T` may be `t` or a space; a fraction longer than
/// nine digits is rounded up. Instants before 1970 are rejected.
pub fn parse_rfc3339(value: &[u8]) -> Option<(u64, u32)> {
    let mut c = Cur(trim(value));
    let (y, mo, d) = (c.num(4)?, c.eat(b"-")?.num(2)?, c.eat(b"-")?.num(2)?);
    if !matches!(c.byte()?, b'T' | b't' | b' ') {
        return None;
    }
    let local = civil_secs(y, mo, d, c.time()?)?;
    let (mut nanos, mut round_up) = (0u32, false);
    if c.eat(b".").is_some() {
        let digits = c.take_while(u8::is_ascii_digit);
        if digits.is_empty() {
            return None;
        }
        for i in 0..9 {
            let digit = digits.get(i).map_or(0, |b| b.wrapping_sub(b'0'));
            nanos = nanos.saturating_mul(10).saturating_add(u32::from(digit));
        }
        round_up = digits.iter().skip(9).any(|&b| b != b'0');
    }
    let utc = match c.byte()? {
        b'Z' | b'z' => local,
        sign @ (b'+' | b'-') => {
            let (h, m) = (c.num(2)?, c.eat(b":")?.num(2)?);
            if h > 23 || m > 59 {
                return None;
            }
            let offset = u64::from(h)
                .saturating_mul(3600)
                .saturating_add(u64::from(m).saturating_mul(60));
            if sign == b'+' {
                local.checked_sub(offset)?
            } else {
                local.checked_add(offset)?
            }
        }
        _ => return None,
    };
    c.end()?;
    let mut secs = utc.checked_sub(EPOCH_SECS)?;
    if round_up {
        nanos = nanos.saturating_add(1);
        if nanos == 1_000_000_000 {
            (secs, nanos) = (secs.checked_add(1)?, 0);
        }
    }
    Some((secs, nanos))
}

/// Parses a count (`x-ratelimit-remaining-tokens: 149984`): ASCII digits only, fitting
/// a `u64`.
pub fn parse_count(value: &[u8]) -> Option<u64> {
    digits_u64(trim(value)).filter(|_| !trim(value).is_empty())
}

/// A `retry-after` value before it is resolved against an anchor.
#[derive(Clone, Copy)]
enum RetryAt {
    Delay(Duration),
    At(u64),
}

fn retry_after(value: &[u8], now_unix: u64) -> Option<RetryAt> {
    let value = trim(value);
    match value.first()? {
        b'0'..=b'9' | b'.' => decimal(value, 1_000_000_000).map(RetryAt::Delay),
        _ => parse_http_date_at(value, now_unix).map(RetryAt::At),
    }
}

/// One window's values as read, resets not yet resolved against the anchor.
#[derive(Clone, Copy, Default)]
struct RawWindow {
    limit: Option<u64>,
    remaining: Option<u64>,
    reset_in: Option<Duration>,
    reset_at: Option<(u64, u32)>,
}

impl RawWindow {
    /// Whether any of its headers was read.
    fn is_set(&self) -> bool {
        self.limit.is_some()
            || self.remaining.is_some()
            || self.reset_in.is_some()
            || self.reset_at.is_some()
    }
}

/// The window kinds of `x-ratelimit-{field}-{kind}` (windows 0 and 1) and of
/// `anthropic-ratelimit-{kind}-{field}` (windows 2 to 5).
const OPENAI_KINDS: [&[u8]; 2] = [b"requests", b"tokens"];
const ANTHROPIC_KINDS: [&[u8]; 4] = [b"requests", b"tokens", b"input-tokens", b"output-tokens"];

/// The first valid value of each header, gathered in one pass over the headers.
#[derive(Default)]
struct Raw<'h> {
    retry_after_ms: Option<Duration>,
    retry_after: Option<RetryAt>,
    date: DateSlot<'h>,
    should_retry: Option<bool>,
    windows: [RawWindow; 6],
}

/// The first valid `Date`, parsed only when a hint is measured from it (most responses
/// carry one and need none).
#[derive(Default, Clone, Copy)]
enum DateSlot<'h> {
    #[default]
    None,
    /// The first `Date` seen, not parsed yet.
    Unread(&'h [u8]),
    /// The first valid one, parsed.
    Read(u64),
}

impl<'h> DateSlot<'h> {
    /// Another `Date` header: the first one stands if it is valid.
    fn take(&mut self, value: &'h [u8], now: u64) {
        *self = match *self {
            DateSlot::None => DateSlot::Unread(value),
            DateSlot::Unread(first) => match parse_http_date_at(first, now) {
                Some(at) => DateSlot::Read(at),
                None => DateSlot::Unread(value),
            },
            read @ DateSlot::Read(_) => read,
        };
    }

    fn resolve(self, now: u64) -> Option<u64> {
        match self {
            DateSlot::None => None,
            DateSlot::Unread(value) => parse_http_date_at(value, now),
            DateSlot::Read(at) => Some(at),
        }
    }
}

impl<'h> Raw<'h> {
    fn take(&mut self, name: &[u8], value: &'h [u8], now: u64) {
        if name.eq_ignore_ascii_case(b"retry-after-ms") {
            first(&mut self.retry_after_ms, || parse_retry_after_ms(value));
        } else if name.eq_ignore_ascii_case(b"retry-after") {
            first(&mut self.retry_after, || retry_after(value, now));
        } else if name.eq_ignore_ascii_case(b"date") {
            self.date.take(value, now);
        } else if name.eq_ignore_ascii_case(b"x-should-retry") {
            let parse = || match_ci(trim(value), &[b"false", b"true"]).map(|i| i == 1);
            first(&mut self.should_retry, parse);
        } else if let Some(rest) = strip_ci(name, b"x-ratelimit-") {
            let at = rest.iter().position(|&b| b == b'-');
            if let Some((field, kind)) = at.and_then(|at| split_at_skip(rest, at)) {
                let window = match_ci(kind, &OPENAI_KINDS);
                self.field(window, field, value, false);
            }
        } else if let Some(rest) = strip_ci(name, b"anthropic-ratelimit-") {
            let at = rest.iter().rposition(|&b| b == b'-');
            if let Some((kind, field)) = at.and_then(|at| split_at_skip(rest, at)) {
                let window = match_ci(kind, &ANTHROPIC_KINDS).map(|i| i.saturating_add(2));
                self.field(window, field, value, true);
            }
        }
    }

    fn field(&mut self, window: Option<usize>, field: &[u8], value: &[u8], rfc3339: bool) {
        let Some(w) = window.and_then(|i| self.windows.get_mut(i)) else {
            return;
        };
        match match_ci(field, &[b"limit", b"remaining", b"reset"]) {
            Some(0) => first(&mut w.limit, || parse_count(value)),
            Some(1) => first(&mut w.remaining, || parse_count(value)),
            Some(2) if rfc3339 => first(&mut w.reset_at, || parse_rfc3339(value)),
            Some(2) => first(&mut w.reset_in, || {
                crate::duration::parse(trim(value)).map(|d| d.min(MAX_HINT))
            }),
            _ => {}
        }
    }

    fn resolve(&self, wall_now_unix: u64) -> Hints {
        let dated = matches!(self.retry_after, Some(RetryAt::At(_)))
            || self.windows.iter().any(|w| w.reset_at.is_some());
        let date = dated.then(|| self.date.resolve(wall_now_unix)).flatten();
        let anchor = date.unwrap_or(wall_now_unix);
        let window = |i: usize| {
            let raw = self.windows.get(i).copied().unwrap_or_default();
            RateWindow {
                limit: raw.limit,
                remaining: raw.remaining,
                reset: raw.reset_in.or(raw.reset_at.map(|at| until(at, anchor))),
            }
        };
        let retry_after = self.retry_after_ms.or(match self.retry_after {
            Some(RetryAt::Delay(d)) => Some(d),
            Some(RetryAt::At(at)) => Some(until((at, 0), anchor)),
            None => None,
        });
        // Most answers carry no rate-limit header at all.
        let (requests, tokens) = if self.windows.iter().any(RawWindow::is_set) {
            (
                tightest(&[window(0), window(2)]),
                tightest(&[window(1), window(3), window(4), window(5)]),
            )
        } else {
            (RateWindow::default(), RateWindow::default())
        };
        Hints {
            retry_after,
            should_retry: self.should_retry,
            requests,
            tokens,
        }
    }
}

/// The most restrictive non-empty window: smallest `remaining`, then longest `reset`;
/// a window with a `remaining` beats one without.
fn tightest(windows: &[RateWindow]) -> RateWindow {
    let mut best: Option<RateWindow> = None;
    for &w in windows.iter().filter(|w| **w != RateWindow::default()) {
        let tighter = best.is_none_or(|b| match (w.remaining, b.remaining) {
            (Some(x), Some(y)) => x < y || (x == y && w.reset > b.reset),
            (Some(_), None) => true,
            _ => false,
        });
        if tighter {
            best = Some(w);
        }
    }
    best.unwrap_or_default()
}

/// Sets `slot` from `parse` unless an earlier valid value is there.
fn first<T>(slot: &mut Option<T>, parse: impl FnOnce() -> Option<T>) {
    if slot.is_none() {
        *slot = parse();
    }
}

/// The wait from `anchor` (Unix seconds) to `at` (Unix seconds, nanos), zero if past,
/// clamped to [`MAX_HINT`].
fn until(at: (u64, u32), anchor: u64) -> Duration {
    let (secs, nanos) = at;
    match secs.checked_sub(anchor) {
        Some(ahead) => Duration::new(ahead, nanos).min(MAX_HINT),
        None => Duration::ZERO,
    }
}

/// A whole decimal value (`120`, `1.5`) in units of `unit_nanos`, rounded up and
/// clamped to [`MAX_HINT`], however many digits it has.
fn decimal(value: &[u8], unit_nanos: u64) -> Option<Duration> {
    let (int, frac, rest) = split_number(value)?;
    if !rest.is_empty() {
        return None;
    }
    // Too large for the arithmetic is still a valid, absurdly long wait.
    let nanos = scaled_nanos(int, frac, unit_nanos).unwrap_or(u128::MAX);
    nanos_to_duration(nanos.min(MAX_HINT.as_nanos()))
}

/// ASCII digits as a `u64`; zero for no digits, `None` on anything else or overflow.
fn digits_u64(s: &[u8]) -> Option<u64> {
    s.iter().try_fold(0u64, |acc, &b| {
        if !b.is_ascii_digit() {
            return None;
        }
        acc.checked_mul(10)?
            .checked_add(u64::from(b.wrapping_sub(b'0')))
    })
}

fn trim(mut value: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = value {
        value = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = value {
        value = rest;
    }
    value
}

fn strip_ci<'a>(s: &'a [u8], prefix: &[u8]) -> Option<&'a [u8]> {
    let (head, rest) = s.split_at_checked(prefix.len())?;
    head.eq_ignore_ascii_case(prefix).then_some(rest)
}

/// `s` split around the byte at `at`, which is dropped.
fn split_at_skip(s: &[u8], at: usize) -> Option<(&[u8], &[u8])> {
    Some((s.get(..at)?, s.get(at.saturating_add(1)..)?))
}

/// The index of the first of `words` equal to `s`, ASCII case-insensitively.
fn match_ci(s: &[u8], words: &[&[u8]]) -> Option<usize> {
    words.iter().position(|w| s.eq_ignore_ascii_case(w))
}

fn http_date(value: &[u8], now: Option<u64>) -> Option<u64> {
    let mut c = Cur(trim(value));
    let day = c.take_while(|b| b.is_ascii_alphabetic());
    let (y, mo, d, time);
    if match_ci(day, &DAYS).is_some() && c.eat(b", ").is_some() {
        // IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT
        d = c.num(2)?;
        mo = c.eat(b" ")?.month()?;
        y = c.eat(b" ")?.num(4)?;
        time = c.eat(b" ")?.time()?;
        c.eat(b" GMT")?;
    } else if match_ci(day, &LONG_DAYS).is_some() && c.eat(b", ").is_some() {
        // RFC 850: Sunday, 06-Nov-94 08:49:37 GMT
        d = c.num(2)?;
        mo = c.eat(b"-")?.month()?;
        y = two_digit_year(c.eat(b"-")?.num(2)?, now);
        time = c.eat(b" ")?.time()?;
        c.eat(b" GMT")?;
    } else if match_ci(day, &DAYS).is_some() && c.eat(b" ").is_some() {
        // asctime: Sun Nov  6 08:49:37 1994
        mo = c.month()?;
        d = match c.eat(b" ")?.eat(b" ") {
            Some(c) => c.num(1)?,
            None => c.num(2)?,
        };
        time = c.eat(b" ")?.time()?;
        y = c.eat(b" ")?.num(4)?;
    } else {
        return None;
    }
    c.end()?;
    civil_secs(y, mo, d, time)?.checked_sub(EPOCH_SECS)
}

/// RFC 9110 §5.6.7: the year ending in `yy` within (now − 50, now + 50] years; without
/// `now`, the POSIX pivot.
fn two_digit_year(yy: u32, now: Option<u64>) -> u32 {
    let Some(now) = now else {
        let century: u32 = if yy >= 70 { 1900 } else { 2000 };
        return century.saturating_add(yy);
    };
    let current = year_of(now);
    let year = (current / 100).saturating_mul(100).saturating_add(yy);
    if year > current.saturating_add(50) {
        year.saturating_sub(100)
    } else if year.saturating_add(50) <= current {
        year.saturating_add(100)
    } else {
        year
    }
}

/// A cursor over the bytes of a date.
struct Cur<'a>(&'a [u8]);

impl<'a> Cur<'a> {
    fn byte(&mut self) -> Option<u8> {
        let (&b, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(b)
    }

    /// Consumes `s` (ASCII case-insensitively) and returns the cursor, or `None`.
    fn eat(&mut self, s: &[u8]) -> Option<&mut Self> {
        self.0 = strip_ci(self.0, s)?;
        Some(self)
    }

    fn take_while(&mut self, f: impl Fn(&u8) -> bool) -> &'a [u8] {
        let n = self.0.iter().take_while(|b| f(b)).count();
        let (head, rest) = self.0.split_at_checked(n).unwrap_or((self.0, &[]));
        self.0 = rest;
        head
    }

    /// Exactly `n` ASCII digits.
    fn num(&mut self, n: usize) -> Option<u32> {
        let (head, rest) = self.0.split_at_checked(n)?;
        let v = u32::try_from(digits_u64(head)?).ok()?;
        self.0 = rest;
        Some(v)
    }

    fn month(&mut self) -> Option<u32> {
        let (head, rest) = self.0.split_at_checked(3)?;
        self.0 = rest;
        u32::try_from(match_ci(head, &MONTHS)?.saturating_add(1)).ok()
    }

    /// `HH:MM:SS` as seconds of the day (a leap second `:60` allowed).
    fn time(&mut self) -> Option<u32> {
        let h = self.num(2)?;
        let (m, s) = (self.eat(b":")?.num(2)?, self.eat(b":")?.num(2)?);
        let secs = h.saturating_mul(3600).saturating_add(m.saturating_mul(60));
        (h <= 23 && m <= 59 && s <= 60).then_some(secs.saturating_add(s))
    }

    fn end(&self) -> Option<()> {
        self.0.is_empty().then_some(())
    }
}

#[cfg(test)]
mod tests;
