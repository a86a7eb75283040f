//! What a server really sends, written out: HTTP-dates in the three RFC 9110 forms,
//! RFC 3339 instants, and OpenAI / Anthropic error bodies.
//!
//! The harness builds responses from these texts and passes them through
//! `Response::from_http`, as an adapter would, so the parsers run on every answer.
//! The fuzz targets use the same formatters as oracles (format → parse → the same
//! instant). Everything here is written from the RFCs, independently of the core.

use steadfast_core::classify::ErrorKind;

/// A civil date: year, month (1–12), day (1–31).
pub type Civil = (i64, u32, u32);

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];
const DAYS: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
const LONG_DAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

/// The civil date of a day count since 1970-01-01 (proleptic Gregorian), by the
/// era / day-of-era method.
pub fn civil_from_days(days: i64) -> Civil {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097); // [0, 146096]
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365; // [0, 399]
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // [0, 365]
    let mp = (5 * doy + 2) / 153; // [0, 11], March first
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month as u32, day as u32)
}

/// The parts of a Unix instant: civil date, weekday (0 = Monday), hour, minute, second.
fn parts(unix: u64) -> (Civil, usize, u64, u64, u64) {
    let days = (unix / 86_400) as i64;
    let secs = unix % 86_400;
    // 1970-01-01 was a Thursday.
    let weekday = (days + 3).rem_euclid(7) as usize;
    (
        civil_from_days(days),
        weekday,
        secs / 3_600,
        secs % 3_600 / 60,
        secs % 60,
    )
}

/// `Sun, 06 Nov 1994 08:49:37 GMT` (IMF-fixdate, the form servers send).
pub fn imf_fixdate(unix: u64) -> String {
    let ((y, mo, d), wd, h, mi, s) = parts(unix);
    format!(
        "{}, {d:02} {} {y:04} {h:02}:{mi:02}:{s:02} GMT",
        DAYS[wd],
        MONTHS[mo as usize - 1]
    )
}

/// `Sunday, 06-Nov-94 08:49:37 GMT` (obsolete RFC 850 form, two-digit year).
pub fn rfc850(unix: u64) -> String {
    let ((y, mo, d), wd, h, mi, s) = parts(unix);
    format!(
        "{}, {d:02}-{}-{:02} {h:02}:{mi:02}:{s:02} GMT",
        LONG_DAYS[wd],
        MONTHS[mo as usize - 1],
        y.rem_euclid(100)
    )
}

/// `Sun Nov  6 08:49:37 1994` (obsolete asctime form).
pub fn asctime(unix: u64) -> String {
    let ((y, mo, d), wd, h, mi, s) = parts(unix);
    format!(
        "{} {} {d:>2} {h:02}:{mi:02}:{s:02} {y:04}",
        DAYS[wd],
        MONTHS[mo as usize - 1]
    )
}

/// An RFC 3339 instant with `digits` fraction digits (0–12; past 9 the extra digits
/// are `extra`, a digit) written at a UTC offset of `offset_min` minutes
/// (−1439..=1439; 0 is written `Z`).
pub fn rfc3339(unix: u64, nanos: u32, digits: usize, extra: u8, offset_min: i32) -> String {
    let local = unix as i64 + i64::from(offset_min) * 60;
    let days = local.div_euclid(86_400);
    let secs = local.rem_euclid(86_400);
    let (y, mo, d) = civil_from_days(days);
    let (h, mi, s) = (secs / 3_600, secs % 3_600 / 60, secs % 60);
    let mut out = format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}");
    if digits > 0 {
        let nine = format!("{nanos:09}");
        out.push('.');
        out.push_str(&nine[..digits.min(9)]);
        for _ in 9..digits {
            out.push(char::from(b'0' + extra % 10));
        }
    }
    if offset_min == 0 {
        out.push('Z');
    } else {
        let sign = if offset_min > 0 { '+' } else { '-' };
        let m = offset_min.unsigned_abs();
        out.push_str(&format!("{sign}{:02}:{:02}", m / 60, m % 60));
    }
    out
}

/// Which provider's error shape a body takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    /// `{"error":{"message":…,"type":…,"param":null,"code":…}}`
    OpenAi,
    /// `{"type":"error","error":{"type":…,"message":…}}`
    Anthropic,
}

/// A realistic error body for `kind`. OpenAI puts the specific kind in `code` under a
/// broader `type`; Anthropic has only `type`.
pub fn error_body(provider: Provider, kind: ErrorKind, message: &str) -> String {
    let name = kind.name();
    match provider {
        Provider::OpenAi => {
            let ty = match kind {
                ErrorKind::RateLimitExceeded => "requests",
                ErrorKind::InsufficientQuota => "insufficient_quota",
                ErrorKind::ServerError => "server_error",
                _ => "invalid_request_error",
            };
            format!(
                "{{\n  \"error\": {{\n    \"message\": \"{message}\",\n    \"type\": \"{ty}\",\n    \"param\": null,\n    \"code\": \"{name}\"\n  }}\n}}\n"
            )
        }
        Provider::Anthropic => format!(
            "{{\"type\":\"error\",\"error\":{{\"type\":\"{name}\",\"message\":\"{message}\"}},\"request_id\":\"req_011CSHoEeqs5C35K2UUqR7Fy\"}}"
        ),
    }
}

/// Messages servers send, some of which say the context is too long.
pub const MESSAGES: [&str; 6] = [
    "Overloaded",
    "Rate limit reached for gpt-4o in organization org-x on requests per min (RPM): Limit 500, Used 500, Requested 1. Please try again in 120ms.",
    "This model's maximum context length is 128000 tokens. However, your messages resulted in 130412 tokens.",
    "prompt is too long: 215000 tokens > 200000 maximum",
    "You exceeded your current quota, please check your plan and billing details.",
    "Incorrect API key provided: sk-****abcd.",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_instants_format_as_the_rfcs_show() {
        // RFC 9110's example instant.
        let t = 784_111_777;
        assert_eq!(imf_fixdate(t), "Sun, 06 Nov 1994 08:49:37 GMT");
        assert_eq!(rfc850(t), "Sunday, 06-Nov-94 08:49:37 GMT");
        assert_eq!(asctime(t), "Sun Nov  6 08:49:37 1994");
        assert_eq!(rfc3339(t, 0, 0, 0, 0), "1994-11-06T08:49:37Z");
        assert_eq!(
            rfc3339(t, 250_000_000, 3, 0, 120),
            "1994-11-06T10:49:37.250+02:00"
        );
        assert_eq!(
            rfc3339(t, 1, 11, 7, -90),
            "1994-11-06T07:19:37.00000000177-01:30"
        );
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
    }
}
