//! Calendar arithmetic and the date formats servers write: HTTP-dates in the three
//! RFC 9110 forms and RFC 3339 instants.
//!
//! The parsers are in [`crate::hints`]; the formatters here write what they read, so
//! `parse(format(t)) == t` for every instant with a four-digit year. The civil-date
//! arithmetic (days ↔ year, month, day; proleptic Gregorian) lives only here.
//!
//! ```
//! use steadfast_core::date::{Asctime, ImfFixdate, Rfc3339, Rfc850};
//!
//! let t = 784_111_777; // RFC 9110's example instant
//! assert_eq!(ImfFixdate(t).to_string(), "Sun, 06 Nov 1994 08:49:37 GMT");
//! assert_eq!(Rfc850(t).to_string(), "Sunday, 06-Nov-94 08:49:37 GMT");
//! assert_eq!(Asctime(t).to_string(), "Sun Nov  6 08:49:37 1994");
//! assert_eq!(Rfc3339::utc(t).to_string(), "1994-11-06T08:49:37Z");
//! ```

use core::fmt;

/// Month names as HTTP-dates write them.
pub(crate) const MONTHS: [&[u8]; 12] = [
    b"Jan", b"Feb", b"Mar", b"Apr", b"May", b"Jun", b"Jul", b"Aug", b"Sep", b"Oct", b"Nov", b"Dec",
];
/// Weekday names, Monday first.
pub(crate) const DAYS: [&[u8]; 7] = [b"Mon", b"Tue", b"Wed", b"Thu", b"Fri", b"Sat", b"Sun"];
/// RFC 850's long weekday names, Monday first.
#[rustfmt::skip]
pub(crate) const LONG_DAYS: [&[u8]; 7] =
    [b"Monday", b"Tuesday", b"Wednesday", b"Thursday", b"Friday", b"Saturday", b"Sunday"];

/// Seconds from 0000-01-01 (proleptic Gregorian) to 1970-01-01.
pub(crate) const EPOCH_SECS: u64 = 62_167_219_200;

/// The last second with a four-digit year: 9999-12-31T23:59:59Z.
pub const LAST_4_DIGIT_YEAR: u64 = 253_402_300_799;

const DAYS_PER_400_YEARS: u64 = 146_097;
/// Days from 0000-03-01 to 1970-01-01: the era arithmetic below starts its years in
/// March, so that the leap day is the last day of a year.
const MARCH_0000_TO_EPOCH: u64 = 719_468;

/// A calendar date and time of day in UTC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Civil {
    /// The year (four digits until 9999).
    pub year: u64,
    /// The month, 1–12.
    pub month: u32,
    /// The day of the month, 1–31.
    pub day: u32,
    /// The weekday, 0 = Monday … 6 = Sunday.
    pub weekday: u32,
    /// Hours, 0–23.
    pub hour: u32,
    /// Minutes, 0–59.
    pub minute: u32,
    /// Seconds, 0–59.
    pub second: u32,
}

impl Civil {
    /// The UTC date and time of a Unix instant (seconds since 1970-01-01).
    pub fn from_unix(unix: u64) -> Civil {
        let days = unix / 86_400;
        let secs = unix % 86_400;
        // March-based years of 400-year eras, counted from 0000-03-01.
        let z = days.saturating_add(MARCH_0000_TO_EPOCH);
        let era = z / DAYS_PER_400_YEARS;
        let doe = z % DAYS_PER_400_YEARS;
        let yoe = doe
            .saturating_sub(doe / 1_460)
            .saturating_add(doe / 36_524)
            .saturating_sub(doe / 146_096)
            / 365;
        let doy = doe.saturating_sub(
            yoe.saturating_mul(365)
                .saturating_add(yoe / 4)
                .saturating_sub(yoe / 100),
        );
        let mp = doy.saturating_mul(5).saturating_add(2) / 153;
        let day = doy
            .saturating_sub(mp.saturating_mul(153).saturating_add(2) / 5)
            .saturating_add(1);
        let month = if mp < 10 {
            mp.saturating_add(3)
        } else {
            mp.saturating_sub(9)
        };
        let year = era
            .saturating_mul(400)
            .saturating_add(yoe)
            .saturating_add(u64::from(month <= 2));
        Civil {
            year,
            month: small(month),
            day: small(day),
            // 1970-01-01 was a Thursday.
            weekday: small(days.saturating_add(3) % 7),
            hour: small(secs / 3_600),
            minute: small(secs % 3_600 / 60),
            second: small(secs % 60),
        }
    }

    fn month_name(&self) -> &'static str {
        name(&MONTHS, self.month.saturating_sub(1))
    }

    fn day_name(&self) -> &'static str {
        name(&DAYS, self.weekday)
    }
}

/// A value below 2^32 (every field of [`Civil`] but the year).
fn small(v: u64) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}

fn name(table: &[&'static [u8]], index: u32) -> &'static str {
    let bytes = usize::try_from(index)
        .ok()
        .and_then(|i| table.get(i))
        .copied()
        .unwrap_or(b"?");
    core::str::from_utf8(bytes).unwrap_or("?")
}

/// Seconds from 0000-01-01 to the given date plus `time` seconds; `None` when the
/// month or day does not exist.
pub(crate) fn civil_secs(y: u32, mo: u32, d: u32, time: u32) -> Option<u64> {
    const BEFORE: [u32; 12] = [0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334];
    let leap = y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
    let month_len = match mo {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    };
    if d == 0 || d > month_len {
        return None;
    }
    let y = u64::from(y);
    // Leap years in [0, y): multiples of 4, minus those of 100, plus those of 400.
    let leaps = (y.saturating_add(3) / 4)
        .saturating_sub(y.saturating_add(99) / 100)
        .saturating_add(y.saturating_add(399) / 400);
    let days = y
        .saturating_mul(365)
        .saturating_add(leaps)
        .saturating_add(u64::from(
            *BEFORE.get(usize::try_from(mo.checked_sub(1)?).ok()?)?,
        ))
        .saturating_add(u64::from(leap && mo > 2))
        .saturating_add(u64::from(d.saturating_sub(1)));
    Some(days.saturating_mul(86_400).saturating_add(u64::from(time)))
}

/// The calendar year of a Unix instant, capped at 9999.
pub(crate) fn year_of(unix: u64) -> u32 {
    let year = Civil::from_unix(unix.min(LAST_4_DIGIT_YEAR)).year;
    u32::try_from(year).unwrap_or(9999)
}

/// `Sun, 06 Nov 1994 08:49:37 GMT`: the IMF-fixdate of RFC 9110, the form servers
/// send (`Date`, `Retry-After`). The argument is Unix seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImfFixdate(pub u64);

impl fmt::Display for ImfFixdate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = Civil::from_unix(self.0);
        write!(
            f,
            "{}, {:02} {} {:04} {:02}:{:02}:{:02} GMT",
            c.day_name(),
            c.day,
            c.month_name(),
            c.year,
            c.hour,
            c.minute,
            c.second
        )
    }
}

/// `Sunday, 06-Nov-94 08:49:37 GMT`: the obsolete RFC 850 form, with a two-digit year.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rfc850(pub u64);

impl fmt::Display for Rfc850 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = Civil::from_unix(self.0);
        write!(
            f,
            "{}, {:02}-{}-{:02} {:02}:{:02}:{:02} GMT",
            name(&LONG_DAYS, c.weekday),
            c.day,
            c.month_name(),
            c.year % 100,
            c.hour,
            c.minute,
            c.second
        )
    }
}

/// `Sun Nov  6 08:49:37 1994`: the obsolete asctime form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Asctime(pub u64);

impl fmt::Display for Asctime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = Civil::from_unix(self.0);
        write!(
            f,
            "{} {} {:>2} {:02}:{:02}:{:02} {:04}",
            c.day_name(),
            c.month_name(),
            c.day,
            c.hour,
            c.minute,
            c.second,
            c.year
        )
    }
}

/// An RFC 3339 instant (`2026-01-01T00:00:03Z`, `1994-11-06T10:49:37.250+02:00`):
/// Anthropic's rate-limit resets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rfc3339 {
    /// Unix seconds.
    pub unix: u64,
    /// Nanoseconds within the second (below 10^9).
    pub nanos: u32,
    /// Fraction digits written, 0–9 (more are written as 9); the fraction is cut, not
    /// rounded.
    pub digits: u8,
    /// The UTC offset the instant is written at, in minutes (−1439..=1439; 0 is `Z`).
    pub offset_minutes: i16,
}

impl Rfc3339 {
    /// Whole seconds in UTC: `2026-01-01T00:00:03Z`.
    pub fn utc(unix: u64) -> Rfc3339 {
        Rfc3339 {
            unix,
            nanos: 0,
            digits: 0,
            offset_minutes: 0,
        }
    }
}

impl fmt::Display for Rfc3339 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let offset = i64::from(self.offset_minutes.clamp(-1439, 1439));
        let shift = offset.unsigned_abs().saturating_mul(60);
        let local = if offset < 0 {
            self.unix.saturating_sub(shift)
        } else {
            self.unix.saturating_add(shift)
        };
        let c = Civil::from_unix(local);
        write!(
            f,
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
            c.year, c.month, c.day, c.hour, c.minute, c.second
        )?;
        let digits = u32::from(self.digits.min(9));
        if digits > 0 {
            let scale = 10u32.saturating_pow(9u32.saturating_sub(digits));
            let cut = self.nanos.min(999_999_999).checked_div(scale).unwrap_or(0);
            write!(f, ".{cut:0width$}", width = digits as usize)?;
        }
        if offset == 0 {
            return f.write_str("Z");
        }
        let sign = if offset > 0 { '+' } else { '-' };
        let m = offset.unsigned_abs();
        write!(f, "{sign}{:02}:{:02}", m / 60, m % 60)
    }
}

#[cfg(test)]
#[allow(clippy::arithmetic_side_effects)]
mod tests {
    use super::*;
    use crate::hints::{parse_http_date, parse_rfc3339};
    use alloc::string::ToString;

    #[test]
    fn known_instants_format_as_the_rfcs_show() {
        let t = 784_111_777;
        assert_eq!(ImfFixdate(t).to_string(), "Sun, 06 Nov 1994 08:49:37 GMT");
        assert_eq!(Rfc850(t).to_string(), "Sunday, 06-Nov-94 08:49:37 GMT");
        assert_eq!(Asctime(t).to_string(), "Sun Nov  6 08:49:37 1994");
        assert_eq!(Rfc3339::utc(t).to_string(), "1994-11-06T08:49:37Z");
        let at = |nanos, digits, offset_minutes| Rfc3339 {
            unix: t,
            nanos,
            digits,
            offset_minutes,
        };
        assert_eq!(
            at(250_000_000, 3, 120).to_string(),
            "1994-11-06T10:49:37.250+02:00"
        );
        assert_eq!(
            at(1, 9, -90).to_string(),
            "1994-11-06T07:19:37.000000001-01:30"
        );
        assert_eq!(ImfFixdate(0).to_string(), "Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(
            Rfc3339::utc(951_782_400).to_string(),
            "2000-02-29T00:00:00Z"
        );
        assert_eq!(
            Rfc3339::utc(1_767_225_600).to_string(),
            "2026-01-01T00:00:00Z"
        );
    }

    #[test]
    fn civil_dates_match_the_parsers_arithmetic() {
        for unix in [
            0,
            59,
            86_399,
            86_400,
            951_782_400,
            4_107_542_399,
            LAST_4_DIGIT_YEAR,
        ] {
            let c = Civil::from_unix(unix);
            let time = c.hour * 3600 + c.minute * 60 + c.second;
            let y = u32::try_from(c.year).unwrap();
            assert_eq!(civil_secs(y, c.month, c.day, time), Some(unix + EPOCH_SECS));
            assert_eq!(year_of(unix), y);
        }
        assert_eq!(Civil::from_unix(LAST_4_DIGIT_YEAR).year, 9999);
        assert_eq!(Civil::from_unix(LAST_4_DIGIT_YEAR + 1).year, 10_000);
    }

    #[test]
    fn every_form_parses_back() {
        let mut t = 0u64;
        while t < LAST_4_DIGIT_YEAR {
            for text in [ImfFixdate(t).to_string(), Asctime(t).to_string()] {
                assert_eq!(parse_http_date(text.as_bytes()), Some(t), "{text}");
            }
            let text = Rfc3339::utc(t).to_string();
            assert_eq!(parse_rfc3339(text.as_bytes()), Some((t, 0)), "{text}");
            t += 7_777_777;
        }
    }
}
