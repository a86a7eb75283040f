//! Small helpers: stable hashing, seeded draws, and the date and duration formats the
//! providers use in their headers.

use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// FNV-1a, 64 bits: stable across platforms and releases (unlike `DefaultHasher`).
pub(crate) fn fnv1a(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for &b in *part {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        // Separator so ("ab", "c") and ("a", "bc") differ.
        h ^= 0xff;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// SplitMix64 finaliser: spreads the bits of `x`.
pub(crate) fn splitmix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The generator for one request: a pure function of the server seed, the request's
/// identity and how many times that identity was seen before.
pub(crate) fn request_rng(seed: u64, identity: u64, seen_before: u64) -> ChaCha8Rng {
    let mixed = splitmix(seed) ^ identity.rotate_left(17) ^ splitmix(seen_before.wrapping_add(1));
    ChaCha8Rng::seed_from_u64(mixed)
}

/// A uniform draw in `[0, 1)`.
pub(crate) fn unit(rng: &mut ChaCha8Rng) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

/// A uniform draw in `0..n` (`n` > 0; 0 when `n` is 0).
pub(crate) fn below(rng: &mut ChaCha8Rng, n: u64) -> u64 {
    if n == 0 {
        0
    } else {
        ((u128::from(rng.next_u64()) * u128::from(n)) >> 64) as u64
    }
}

/// Letters and digits from a seed, for ids like `chatcmpl-…` and `msg_…`.
pub(crate) fn alnum_id(seed: u64, len: usize) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..len)
        .map(|_| {
            let i = below(&mut rng, ALPHABET.len() as u64) as usize;
            char::from(ALPHABET.get(i).copied().unwrap_or(b'x'))
        })
        .collect()
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

fn split_time(t: SystemTime) -> (i64, u32, u32, u64, u64, u64, u64) {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let (y, mo, d) = civil_from_days(days);
    // 1970-01-01 was a Thursday; 0 = Sunday.
    let weekday = (days + 4).rem_euclid(7) as u64;
    (y, mo, d, rem / 3600, rem % 3600 / 60, rem % 60, weekday)
}

/// An IMF-fixdate (RFC 9110), the form of the `Date` header:
/// `Sun, 06 Nov 1994 08:49:37 GMT`.
pub(crate) fn http_date(t: SystemTime) -> String {
    const DAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let (y, mo, d, h, mi, s, wd) = split_time(t);
    let day = DAYS.get(wd as usize).copied().unwrap_or("Thu");
    let month = MONTHS
        .get((mo as usize).saturating_sub(1))
        .copied()
        .unwrap_or("Jan");
    format!("{day}, {d:02} {month} {y:04} {h:02}:{mi:02}:{s:02} GMT")
}

/// RFC 3339 in UTC with whole seconds: `2024-05-01T12:00:03Z`.
pub(crate) fn rfc3339(t: SystemTime) -> String {
    let (y, mo, d, h, mi, s, _) = split_time(t);
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z")
}

/// A duration the way OpenAI's `x-ratelimit-reset-*` headers print it (Go's format,
/// to the millisecond): `20ms`, `1.5s`, `6m0s`, `1h2m3s`.
pub(crate) fn go_duration(d: Duration) -> String {
    let total_ms = d.as_millis();
    if total_ms == 0 {
        return "0s".to_owned();
    }
    if total_ms < 1000 {
        return format!("{total_ms}ms");
    }
    let secs = total_ms / 1000;
    let ms = total_ms % 1000;
    let h = secs / 3600;
    let m = secs % 3600 / 60;
    let s = secs % 60;
    let mut sec_part = s.to_string();
    if ms != 0 {
        let frac = format!("{ms:03}");
        sec_part.push('.');
        sec_part.push_str(frac.trim_end_matches('0'));
    }
    sec_part.push('s');
    if h > 0 {
        format!("{h}h{m}m{sec_part}")
    } else if m > 0 {
        format!("{m}m{sec_part}")
    } else {
        sec_part
    }
}

/// Whole seconds, rounded up (at least `min`).
pub(crate) fn ceil_secs(d: Duration, min: u64) -> u64 {
    let s = d.as_secs() + u64::from(d.subsec_nanos() > 0);
    s.max(min)
}

/// Milliseconds, rounded up.
pub(crate) fn ceil_millis(d: Duration) -> u128 {
    let ms = d.as_millis();
    if d.as_nanos() % 1_000_000 == 0 {
        ms
    } else {
        ms + 1
    }
}

/// `a / b` rounded up (`b` > 0).
pub(crate) fn ceil_div(a: u64, b: u64) -> u64 {
    a.div_ceil(b.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        let t = UNIX_EPOCH + Duration::from_secs(784_111_777);
        assert_eq!(http_date(t), "Sun, 06 Nov 1994 08:49:37 GMT");
        assert_eq!(rfc3339(t), "1994-11-06T08:49:37Z");
        let t = UNIX_EPOCH + Duration::from_secs(951_782_400); // 2000-02-29
        assert_eq!(rfc3339(t), "2000-02-29T00:00:00Z");
        assert_eq!(http_date(UNIX_EPOCH), "Thu, 01 Jan 1970 00:00:00 GMT");
    }

    #[test]
    fn go_durations() {
        assert_eq!(go_duration(Duration::from_millis(20)), "20ms");
        assert_eq!(go_duration(Duration::from_millis(1500)), "1.5s");
        assert_eq!(go_duration(Duration::from_secs(360)), "6m0s");
        assert_eq!(go_duration(Duration::from_millis(3_723_250)), "1h2m3.25s");
        assert_eq!(go_duration(Duration::ZERO), "0s");
        assert_eq!(go_duration(Duration::from_secs(2)), "2s");
    }

    #[test]
    fn rounding() {
        assert_eq!(ceil_secs(Duration::from_millis(1001), 1), 2);
        assert_eq!(ceil_secs(Duration::from_millis(0), 1), 1);
        assert_eq!(ceil_millis(Duration::from_micros(1500)), 2);
        assert_eq!(ceil_millis(Duration::from_millis(7)), 7);
    }

    #[test]
    fn draws_are_deterministic() {
        let mut a = request_rng(7, 99, 0);
        let mut b = request_rng(7, 99, 0);
        assert_eq!(a.next_u64(), b.next_u64());
        assert!(unit(&mut a) < 1.0);
        assert!(below(&mut a, 10) < 10);
        assert_eq!(alnum_id(5, 24), alnum_id(5, 24));
        assert_eq!(alnum_id(5, 24).len(), 24);
    }
}
