//! `ratelimit_headers`: `Hints::from_headers` over arbitrary header lists.

use arbitrary::{Result, Unstructured};
use steadfast_core::hints::{Hints, MAX_HINT};
use steadfast_core::outcome::Response;

/// Header names the parser knows, and a few it must ignore.
const NAMES: [&str; 30] = [
    "retry-after",
    "retry-after-ms",
    "date",
    "x-should-retry",
    "x-ratelimit-limit-requests",
    "x-ratelimit-limit-tokens",
    "x-ratelimit-remaining-requests",
    "x-ratelimit-remaining-tokens",
    "x-ratelimit-reset-requests",
    "x-ratelimit-reset-tokens",
    "anthropic-ratelimit-requests-limit",
    "anthropic-ratelimit-requests-remaining",
    "anthropic-ratelimit-requests-reset",
    "anthropic-ratelimit-tokens-limit",
    "anthropic-ratelimit-tokens-remaining",
    "anthropic-ratelimit-tokens-reset",
    "anthropic-ratelimit-input-tokens-limit",
    "anthropic-ratelimit-input-tokens-remaining",
    "anthropic-ratelimit-input-tokens-reset",
    "anthropic-ratelimit-output-tokens-limit",
    "anthropic-ratelimit-output-tokens-remaining",
    "anthropic-ratelimit-output-tokens-reset",
    "x-ratelimit-reset",
    "x-ratelimit-",
    "anthropic-ratelimit-",
    "anthropic-ratelimit-requests",
    "x-ratelimit-remaining-requests-extra",
    "content-type",
    "retry-after-seconds",
    "x-request-id",
];

/// Values of the shapes servers send, to mix with arbitrary bytes.
const VALUES: [&str; 16] = [
    "0",
    "1",
    "59",
    "1.5",
    "120000",
    "6m0s",
    "20ms",
    "1h2m3.5s",
    "true",
    "FALSE",
    "2026-01-01T00:00:30Z",
    "2026-01-01T02:00:30.25+02:00",
    "Thu, 01 Jan 2026 00:00:10 GMT",
    "Thursday, 01-Jan-26 00:00:10 GMT",
    "Thu Jan  1 00:00:10 2026",
    "-1",
];

fn header(u: &mut Unstructured<'_>) -> Result<(Vec<u8>, Vec<u8>)> {
    let name = if u.ratio(7, 8)? {
        let mut n = u.choose(&NAMES)?.as_bytes().to_vec();
        if u.ratio(1, 4)? {
            for b in &mut n {
                if u.arbitrary()? {
                    b.make_ascii_uppercase();
                }
            }
        }
        n
    } else {
        let len = u.int_in_range(0..=40)?;
        u.bytes(len)?.to_vec()
    };
    let value = if u.ratio(1, 2)? {
        u.choose(&VALUES)?.as_bytes().to_vec()
    } else {
        let len = u.int_in_range(0..=40)?;
        u.bytes(len)?.to_vec()
    };
    Ok((name, value))
}

fn hints(headers: &[(Vec<u8>, Vec<u8>)], now: u64) -> Hints {
    Hints::from_headers(
        headers.iter().map(|(n, v)| (n.as_slice(), v.as_slice())),
        now,
    )
}

/// `ratelimit_headers`: a wall clock and a header list (known names, sometimes in
/// mixed case, or arbitrary bytes; realistic values or arbitrary bytes).
///
/// - Every wait (`retry_after`, each window's `reset`, `wait_hint`) is at most
///   [`MAX_HINT`].
/// - Header names match case-insensitively: the same list in upper case parses alike.
/// - Values are trimmed: spaces and tabs around every value change nothing.
/// - Headers with other names change nothing wherever they are inserted.
/// - `Response::from_http` carries exactly these hints.
pub fn ratelimit_headers(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Ok(now) = (if u.ratio(3, 4).unwrap_or(true) {
        u.int_in_range(0..=4_102_444_800u64)
    } else {
        u.arbitrary::<u64>().map(super::sane_wall_clock)
    }) else {
        return;
    };
    let mut list = Vec::new();
    while list.len() < 24 && !u.is_empty() {
        match header(&mut u) {
            Ok(h) => list.push(h),
            Err(_) => break,
        }
    }
    let h = hints(&list, now);
    let waits = [
        h.retry_after,
        h.requests.reset,
        h.tokens.reset,
        h.wait_hint(0),
    ];
    for w in waits.into_iter().flatten() {
        assert!(w <= MAX_HINT, "{w:?} from {list:?}");
    }

    let upper: Vec<_> = list
        .iter()
        .map(|(n, v)| (n.to_ascii_uppercase(), v.clone()))
        .collect();
    assert_eq!(hints(&upper, now), h, "upper-cased names: {list:?}");

    let padded: Vec<_> = list
        .iter()
        .map(|(n, v)| (n.clone(), [b" \t", v.as_slice(), b"\t "].concat()))
        .collect();
    assert_eq!(hints(&padded, now), h, "padded values: {list:?}");

    let mut noisy = Vec::new();
    for (i, pair) in list.iter().enumerate() {
        noisy.push((format!("x-noise-{i}").into_bytes(), b"0".to_vec()));
        noisy.push(pair.clone());
    }
    noisy.push((b"x-ratelimit-noise".to_vec(), b"0".to_vec()));
    assert_eq!(hints(&noisy, now), h, "with unrelated headers: {list:?}");

    let response = Response::from_http(
        429,
        list.iter().map(|(n, v)| (n.as_slice(), v.as_slice())),
        b"",
        now,
    );
    assert_eq!(response.hints, h);
}
