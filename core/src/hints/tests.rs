#![allow(clippy::arithmetic_side_effects)]

use super::*;
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use proptest::prelude::*;

/// 2024-01-01T00:00:00Z, a Monday.
const NOW: u64 = 1_704_067_200;
/// 1994-11-06T08:49:37Z, RFC 9110's example date.
const RFC_EXAMPLE: u64 = 784_111_777;

const fn s(n: u64) -> Duration {
    Duration::from_secs(n)
}

const fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn ra(d: Duration) -> Hints {
    Hints {
        retry_after: Some(d),
        ..Hints::default()
    }
}

fn should(b: bool) -> Hints {
    Hints {
        should_retry: Some(b),
        ..Hints::default()
    }
}

fn win(limit: Option<u64>, remaining: Option<u64>, reset: Option<Duration>) -> RateWindow {
    RateWindow {
        limit,
        remaining,
        reset,
    }
}

fn requests(w: RateWindow) -> Hints {
    Hints {
        requests: w,
        ..Hints::default()
    }
}

fn tokens(w: RateWindow) -> Hints {
    Hints {
        tokens: w,
        ..Hints::default()
    }
}

fn hints(now: u64, headers: &[(&str, &str)]) -> Hints {
    Hints::from_headers(
        headers.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes())),
        now,
    )
}

/// (wall clock, headers in order, expected hints).
type Case = (u64, &'static [(&'static str, &'static str)], Hints);

#[test]
fn header_table() {
    let none = Hints::default();
    let cases: Vec<Case> = vec![
        // retry-after, seconds.
        (NOW, &[("retry-after", "120")], ra(s(120))),
        (NOW, &[("retry-after", "0")], ra(Duration::ZERO)),
        (NOW, &[("retry-after", "1.5")], ra(ms(1500))),
        (
            NOW,
            &[("retry-after", "0.0000000001")],
            ra(Duration::from_nanos(1)),
        ),
        (NOW, &[("retry-after", " 7 ")], ra(s(7))),
        (NOW, &[("retry-after", "\t3\t")], ra(s(3))),
        (NOW, &[("retry-after", "007")], ra(s(7))),
        (NOW, &[("retry-after", "99999999")], ra(MAX_HINT)),
        (
            NOW,
            &[("retry-after", "18446744073709551615")],
            ra(MAX_HINT),
        ),
        (
            NOW,
            &[("retry-after", "18446744073709551616")],
            ra(MAX_HINT),
        ),
        (NOW, &[("retry-after", "abc")], none),
        (NOW, &[("retry-after", "-5")], none),
        (NOW, &[("retry-after", "+5")], none),
        (NOW, &[("retry-after", "1e309")], none),
        (NOW, &[("retry-after", "NaN")], none),
        (NOW, &[("retry-after", "inf")], none),
        (NOW, &[("retry-after", "")], none),
        (NOW, &[("retry-after", "  \t ")], none),
        (NOW, &[("retry-after", "5s")], none),
        (NOW, &[("retry-after", "5, 10")], none),
        (NOW, &[("retry-after", "1.")], ra(s(1))),
        (NOW, &[("retry-after", ".")], none),
        // retry-after, HTTP-date in the three forms.
        (
            NOW,
            &[("retry-after", "Mon, 01 Jan 2024 00:00:30 GMT")],
            ra(s(30)),
        ),
        (
            NOW,
            &[("retry-after", "Monday, 01-Jan-24 00:01:00 GMT")],
            ra(s(60)),
        ),
        (
            NOW,
            &[("retry-after", "Mon Jan  1 00:02:00 2024")],
            ra(s(120)),
        ),
        (
            NOW,
            &[("retry-after", "Mon Jan 01 00:02:00 2024")],
            ra(s(120)),
        ),
        (
            NOW,
            &[("retry-after", "mon, 01 JAN 2024 00:00:30 gmt")],
            ra(s(30)),
        ),
        (
            NOW,
            &[("retry-after", "Tue, 02 Jan 2024 00:00:00 GMT")],
            ra(s(86_400)),
        ),
        (
            NOW,
            &[("retry-after", "Thu, 29 Feb 2024 00:00:00 GMT")],
            ra(s(59 * 86_400)),
        ),
        (
            NOW,
            &[("retry-after", "Sun, 06 Nov 1994 08:49:37 GMT")],
            ra(Duration::ZERO),
        ),
        (
            NOW,
            &[("retry-after", "Sunday, 06-Nov-94 08:49:37 GMT")],
            ra(Duration::ZERO),
        ),
        (
            NOW,
            &[("retry-after", "Sun Nov  6 08:49:37 1994")],
            ra(Duration::ZERO),
        ),
        (
            NOW,
            &[("retry-after", "Fri, 01 Jan 2027 00:00:00 GMT")],
            ra(MAX_HINT),
        ),
        // Two-digit years: within 50 years of now, else a century earlier.
        (
            NOW,
            &[("retry-after", "Thursday, 01-Jan-70 00:00:00 GMT")],
            ra(MAX_HINT),
        ),
        (
            NOW,
            &[("retry-after", "Saturday, 01-Jan-77 00:00:00 GMT")],
            ra(Duration::ZERO),
        ),
        // Invalid dates.
        (
            NOW,
            &[("retry-after", "Thu, 30 Feb 2024 00:00:00 GMT")],
            none,
        ),
        (
            NOW,
            &[("retry-after", "Wed, 29 Feb 2023 00:00:00 GMT")],
            none,
        ),
        (
            NOW,
            &[("retry-after", "Mon, 01 Jan 2024 24:00:00 GMT")],
            none,
        ),
        (
            NOW,
            &[("retry-after", "Mon, 01 Jan 2024 00:60:00 GMT")],
            none,
        ),
        (
            NOW,
            &[("retry-after", "Mon, 01 Jan 2024 00:00:30 UTC")],
            none,
        ),
        (
            NOW,
            &[("retry-after", "Mon, 01 Jan 2024 00:00:30 GMT x")],
            none,
        ),
        (
            NOW,
            &[("retry-after", "Mon, 1 Jan 2024 00:00:30 GMT")],
            none,
        ),
        (
            NOW,
            &[("retry-after", "Monday, 01 Jan 2024 00:00:30 GMT")],
            none,
        ),
        (NOW, &[("retry-after", "Mon, 01-Jan-24 00:00:30 GMT")], none),
        (NOW, &[("retry-after", "Mon Jan 1 00:02:00 2024")], none),
        (
            NOW,
            &[("retry-after", "Xyz, 01 Jan 2024 00:00:30 GMT")],
            none,
        ),
        (
            NOW,
            &[("retry-after", "Mon, 01 Foo 2024 00:00:30 GMT")],
            none,
        ),
        (
            NOW,
            &[("retry-after", "Thu, 01 Jan 1970 00:00:00 GMT")],
            ra(Duration::ZERO),
        ),
        (
            NOW,
            &[("retry-after", "Wed, 31 Dec 1969 23:59:59 GMT")],
            none,
        ),
        // Dates anchored on the response's own Date header, whatever the order.
        (
            NOW + 1000,
            &[
                ("date", "Mon, 01 Jan 2024 00:00:00 GMT"),
                ("retry-after", "Mon, 01 Jan 2024 00:00:45 GMT"),
            ],
            ra(s(45)),
        ),
        (
            NOW - 1000,
            &[
                ("Retry-After", "Mon, 01 Jan 2024 00:00:45 GMT"),
                ("DATE", "Mon Jan  1 00:00:00 2024"),
            ],
            ra(s(45)),
        ),
        (
            NOW + 10,
            &[
                ("date", "yesterday"),
                ("retry-after", "Mon, 01 Jan 2024 00:00:45 GMT"),
            ],
            ra(s(35)),
        ),
        (
            NOW + 10,
            &[
                ("date", "Mon, 01 Jan 2024 00:00:00 GMT"),
                ("retry-after", "45"),
            ],
            ra(s(45)),
        ),
        // The first valid Date of several is the anchor.
        (
            NOW + 10,
            &[
                ("date", "yesterday"),
                ("date", "Mon, 01 Jan 2024 00:00:05 GMT"),
                ("date", "Mon, 01 Jan 2024 00:00:10 GMT"),
                ("retry-after", "Mon, 01 Jan 2024 00:00:45 GMT"),
            ],
            ra(s(40)),
        ),
        (
            NOW + 10,
            &[
                ("date", "Mon, 01 Jan 2024 00:00:05 GMT"),
                ("retry-after", "Mon, 01 Jan 2024 00:00:45 GMT"),
                ("date", "Mon, 01 Jan 2024 00:00:10 GMT"),
                ("date", "yesterday"),
            ],
            ra(s(40)),
        ),
        // retry-after-ms, and its precedence.
        (NOW, &[("retry-after-ms", "1500")], ra(ms(1500))),
        (
            NOW,
            &[("retry-after-ms", "1.5")],
            ra(Duration::from_micros(1500)),
        ),
        (
            NOW,
            &[("retry-after-ms", "0.0000001")],
            ra(Duration::from_nanos(1)),
        ),
        (NOW, &[("retry-after-ms", "0")], ra(Duration::ZERO)),
        (
            NOW,
            &[("retry-after-ms", "18446744073709551615")],
            ra(MAX_HINT),
        ),
        (
            NOW,
            &[("retry-after-ms", "18446744073709551616")],
            ra(MAX_HINT),
        ),
        (NOW, &[("retry-after-ms", "-1")], none),
        (
            NOW,
            &[("retry-after-ms", "Mon, 01 Jan 2024 00:00:30 GMT")],
            none,
        ),
        (
            NOW,
            &[("retry-after", "10"), ("retry-after-ms", "250")],
            ra(ms(250)),
        ),
        (
            NOW,
            &[("Retry-After-Ms", "250"), ("retry-after", "10")],
            ra(ms(250)),
        ),
        (
            NOW,
            &[("retry-after-ms", "abc"), ("retry-after", "10")],
            ra(s(10)),
        ),
        // Duplicates: the first valid value wins.
        (
            NOW,
            &[("retry-after", "5"), ("retry-after", "10")],
            ra(s(5)),
        ),
        (
            NOW,
            &[("retry-after", "abc"), ("retry-after", "10")],
            ra(s(10)),
        ),
        (
            NOW,
            &[("retry-after-ms", ""), ("retry-after-ms", "7")],
            ra(ms(7)),
        ),
        // x-should-retry.
        (NOW, &[("x-should-retry", "true")], should(true)),
        (NOW, &[("X-Should-Retry", "FALSE")], should(false)),
        (NOW, &[("x-should-retry", " true\t")], should(true)),
        (NOW, &[("x-should-retry", "yes")], none),
        (NOW, &[("x-should-retry", "1")], none),
        (
            NOW,
            &[("x-should-retry", "maybe"), ("x-should-retry", "false")],
            should(false),
        ),
        // OpenAI x-ratelimit-*.
        (
            NOW,
            &[
                ("x-ratelimit-limit-requests", "500"),
                ("x-ratelimit-remaining-requests", "499"),
                ("x-ratelimit-reset-requests", "120ms"),
            ],
            requests(win(Some(500), Some(499), Some(ms(120)))),
        ),
        (
            NOW,
            &[
                ("X-RateLimit-Limit-Tokens", "30000"),
                ("X-RATELIMIT-REMAINING-TOKENS", "29900"),
                ("x-ratelimit-reset-tokens", "6m0s"),
            ],
            tokens(win(Some(30_000), Some(29_900), Some(s(360)))),
        ),
        (
            NOW,
            &[("x-ratelimit-reset-tokens", "1.5s")],
            tokens(win(None, None, Some(ms(1500)))),
        ),
        (
            NOW,
            &[("x-ratelimit-reset-requests", "20ms")],
            requests(win(None, None, Some(ms(20)))),
        ),
        (
            NOW,
            &[("x-ratelimit-reset-requests", "1h2m3.5s")],
            requests(win(None, None, Some(Duration::new(3723, 500_000_000)))),
        ),
        (
            NOW,
            &[("x-ratelimit-reset-requests", "0s")],
            requests(win(None, None, Some(Duration::ZERO))),
        ),
        (
            NOW,
            &[("x-ratelimit-reset-requests", "9999h")],
            requests(win(None, None, Some(MAX_HINT))),
        ),
        (NOW, &[("x-ratelimit-reset-requests", "100")], none),
        (NOW, &[("x-ratelimit-reset-requests", "soon")], none),
        (NOW, &[("x-ratelimit-remaining-requests", "-1")], none),
        (NOW, &[("x-ratelimit-remaining-requests", "1.5")], none),
        (NOW, &[("x-ratelimit-remaining-requests", "")], none),
        (
            NOW,
            &[("x-ratelimit-remaining-requests", "18446744073709551616")],
            none,
        ),
        (
            NOW,
            &[
                ("x-ratelimit-remaining-requests", "x"),
                ("x-ratelimit-remaining-requests", "3"),
                ("x-ratelimit-remaining-requests", "4"),
            ],
            requests(win(None, Some(3), None)),
        ),
        (
            NOW,
            &[
                ("x-ratelimit-remaining-widgets", "3"),
                ("x-ratelimit-remaining", "3"),
            ],
            none,
        ),
        // Anthropic anthropic-ratelimit-*.
        (
            NOW,
            &[
                ("anthropic-ratelimit-requests-limit", "50"),
                ("anthropic-ratelimit-requests-remaining", "0"),
                ("anthropic-ratelimit-requests-reset", "2024-01-01T00:00:30Z"),
            ],
            requests(win(Some(50), Some(0), Some(s(30)))),
        ),
        (
            NOW,
            &[(
                "anthropic-ratelimit-requests-reset",
                "2024-01-01T00:00:30.5Z",
            )],
            requests(win(None, None, Some(ms(30_500)))),
        ),
        (
            NOW,
            &[(
                "Anthropic-RateLimit-Requests-Reset",
                "2024-01-01T02:00:30+02:00",
            )],
            requests(win(None, None, Some(s(30)))),
        ),
        (
            NOW,
            &[(
                "anthropic-ratelimit-requests-reset",
                "2023-12-31T19:00:30.000000001-05:00",
            )],
            requests(win(None, None, Some(Duration::new(30, 1)))),
        ),
        (
            NOW,
            &[("anthropic-ratelimit-requests-reset", "2023-12-31T23:59:00Z")],
            requests(win(None, None, Some(Duration::ZERO))),
        ),
        (
            NOW + 20,
            &[
                ("anthropic-ratelimit-requests-reset", "2024-01-01T00:00:30Z"),
                ("date", "Mon, 01 Jan 2024 00:00:00 GMT"),
            ],
            requests(win(None, None, Some(s(30)))),
        ),
        (NOW, &[("anthropic-ratelimit-requests-reset", "30s")], none),
        (
            NOW,
            &[("anthropic-ratelimit-requests-reset", "2024-01-01 00:00:30")],
            none,
        ),
        (
            NOW,
            &[("anthropic-ratelimit-requests-reset", "2024-13-01T00:00:30Z")],
            none,
        ),
        (
            NOW,
            &[
                ("anthropic-ratelimit-tokens-remaining", "5"),
                ("anthropic-ratelimit-tokens-foo", "1"),
            ],
            tokens(win(None, Some(5), None)),
        ),
        // The most restrictive token window wins, with its own limit and reset.
        (
            NOW,
            &[
                ("anthropic-ratelimit-tokens-limit", "100000"),
                ("anthropic-ratelimit-tokens-remaining", "1000"),
                ("anthropic-ratelimit-tokens-reset", "2024-01-01T00:01:00Z"),
                ("anthropic-ratelimit-input-tokens-limit", "80000"),
                ("anthropic-ratelimit-input-tokens-remaining", "10"),
                (
                    "anthropic-ratelimit-input-tokens-reset",
                    "2024-01-01T00:00:30Z",
                ),
                ("anthropic-ratelimit-output-tokens-limit", "20000"),
                ("anthropic-ratelimit-output-tokens-remaining", "500"),
                (
                    "anthropic-ratelimit-output-tokens-reset",
                    "2024-01-01T00:00:05Z",
                ),
            ],
            tokens(win(Some(80_000), Some(10), Some(s(30)))),
        ),
        (
            NOW,
            &[
                ("anthropic-ratelimit-input-tokens-remaining", "0"),
                (
                    "anthropic-ratelimit-input-tokens-reset",
                    "2024-01-01T00:00:10Z",
                ),
                ("anthropic-ratelimit-output-tokens-remaining", "0"),
                (
                    "anthropic-ratelimit-output-tokens-reset",
                    "2024-01-01T00:00:40Z",
                ),
            ],
            tokens(win(None, Some(0), Some(s(40)))),
        ),
        // Anthropic's 429: retry-after next to its windows.
        (
            NOW,
            &[
                ("retry-after", "17"),
                ("anthropic-ratelimit-requests-remaining", "0"),
                ("anthropic-ratelimit-requests-reset", "2024-01-01T00:00:17Z"),
            ],
            Hints {
                retry_after: Some(s(17)),
                requests: win(None, Some(0), Some(s(17))),
                ..Hints::default()
            },
        ),
        // Unrelated headers change nothing.
        (
            NOW,
            &[
                ("content-type", "application/json"),
                ("retry-after-s", "3"),
                ("retry", "3"),
            ],
            none,
        ),
        (NOW, &[], none),
    ];
    assert!(cases.len() >= 50, "{} cases", cases.len());
    for (now, headers, want) in cases {
        assert_eq!(hints(now, headers), want, "{headers:?} at {now}");
    }
}

#[test]
fn wait_hint_is_retry_after_else_the_time_for_the_next_unit_never_a_reset() {
    let hints = |requests, tokens| Hints {
        requests,
        tokens,
        ..Hints::default()
    };
    // 600 per minute enforced with a burst of 20: drained, full 2 s later; the next
    // request is a tenth of a second away, not 2 s and not 2 s / 600.
    let burst = win(Some(600), Some(0), Some(s(2)));
    assert_eq!(burst.unit_interval(), Some(ms(100)));
    assert_eq!(hints(burst, RateWindow::NONE).wait_hint(0), Some(ms(100)));
    // 60 per minute, drained: one a second (the reset is the time to full, 59.558 s).
    let minute = win(Some(60), Some(0), Some(Duration::from_millis(59_558)));
    assert_eq!(hints(minute, RateWindow::NONE).wait_hint(0), Some(s(1)));
    // A per-day limit, drained, full in a day: its reset, not a minute, sets the pace.
    let daily = win(Some(1_440), Some(0), Some(s(86_400)));
    assert_eq!(daily.unit_interval(), Some(s(60)));
    // Tokens: 40 000 per minute, 100 left, a call of 500 waits for 400 more.
    let tokens = win(Some(40_000), Some(100), Some(s(10)));
    assert_eq!(
        hints(RateWindow::NONE, tokens).wait_hint(500),
        Some(ms(600))
    );
    assert_eq!(hints(RateWindow::NONE, tokens).wait_hint(100), None);
    // The longer of the two windows.
    assert_eq!(hints(burst, tokens).wait_hint(500), Some(ms(600)));
    // The server's own wait wins; a zero one asks for nothing and the windows tell.
    let told = |wait| Hints {
        retry_after: Some(wait),
        ..hints(minute, RateWindow::NONE)
    };
    assert_eq!(told(ms(559)).wait_hint(0), Some(ms(559)));
    assert_eq!(told(Duration::ZERO).wait_hint(0), Some(s(1)));
    let zero = Hints {
        retry_after: Some(Duration::ZERO),
        ..Hints::default()
    };
    assert_eq!(zero.wait_hint(0), None);
    // A window with room, or one without a limit, gives no wait: a reset alone is a
    // time to full, never a wait.
    let open = win(Some(10), Some(3), Some(s(99)));
    assert_eq!(hints(open, open).wait_hint(1), None);
    assert_eq!(
        hints(win(None, Some(0), Some(s(5))), RateWindow::NONE).wait_hint(0),
        None
    );
    assert_eq!(Hints::default().wait_hint(0), None);
}

#[test]
fn http_date_forms_agree() {
    for form in [
        "Sun, 06 Nov 1994 08:49:37 GMT",
        "Sunday, 06-Nov-94 08:49:37 GMT",
        "Sun Nov  6 08:49:37 1994",
        "  Sun, 06 Nov 1994 08:49:37 GMT\t",
    ] {
        assert_eq!(
            parse_http_date(form.as_bytes()),
            Some(RFC_EXAMPLE),
            "{form}"
        );
        assert_eq!(
            parse_http_date_at(form.as_bytes(), NOW),
            Some(RFC_EXAMPLE),
            "{form}"
        );
    }
    assert_eq!(parse_http_date(b"Thu, 01 Jan 1970 00:00:00 GMT"), Some(0));
    assert_eq!(
        parse_http_date(b"Fri, 31 Dec 9999 23:59:59 GMT"),
        Some(253_402_300_799)
    );
    // Leap years: 2000 is one, 1900 and 2100 are not.
    assert_eq!(
        parse_http_date(b"Tue, 29 Feb 2000 00:00:00 GMT"),
        Some(951_782_400)
    );
    assert_eq!(parse_http_date(b"Mon, 29 Feb 2100 00:00:00 GMT"), None);
    assert_eq!(
        parse_http_date(b"Sun, 31 Dec 2000 23:59:60 GMT"),
        Some(978_307_200)
    );
    // The POSIX pivot without an anchor, RFC 9110's 50-year window with one.
    assert_eq!(
        parse_http_date(b"Monday, 01-Jan-69 00:00:00 GMT"),
        Some(3_124_224_000)
    );
    assert_eq!(parse_http_date(b"Monday, 01-Jan-70 00:00:00 GMT"), Some(0));
    let y2080 = parse_http_date(b"Mon, 01 Jan 2080 00:00:00 GMT").unwrap();
    assert_eq!(
        parse_http_date_at(b"Monday, 01-Jan-80 00:00:00 GMT", NOW),
        Some(315_532_800)
    );
    assert_eq!(
        parse_http_date_at(b"Monday, 01-Jan-80 00:00:00 GMT", y2080),
        Some(y2080)
    );
    // In 2090 the window is 2041..=2140: `30` is 2130, `41` is 2041.
    let y2090 = parse_http_date(b"Sun, 01 Jan 2090 00:00:00 GMT").unwrap();
    assert_eq!(
        parse_http_date_at(b"Thursday, 01-Jan-30 00:00:00 GMT", y2090),
        parse_http_date(b"Sun, 01 Jan 2130 00:00:00 GMT")
    );
    assert_eq!(
        parse_http_date_at(b"Thursday, 01-Jan-41 00:00:00 GMT", y2090),
        parse_http_date(b"Tue, 01 Jan 2041 00:00:00 GMT")
    );
    for bad in [
        "",
        "GMT",
        "Sun, 06 Nov 1994",
        "Sun, 06 Nov 1994 08:49:37 GMT GMT",
        "Sun,06 Nov 1994 08:49:37 GMT",
    ] {
        assert_eq!(parse_http_date(bad.as_bytes()), None, "{bad}");
    }
}

#[test]
fn rfc3339_instants() {
    let cases: &[(&str, Option<(u64, u32)>)] = &[
        ("2024-01-01T00:00:30Z", Some((NOW + 30, 0))),
        ("2024-01-01t00:00:30z", Some((NOW + 30, 0))),
        ("2024-01-01 00:00:30Z", Some((NOW + 30, 0))),
        ("2024-01-01T00:00:30.5Z", Some((NOW + 30, 500_000_000))),
        (
            "2024-01-01T00:00:30.123456789Z",
            Some((NOW + 30, 123_456_789)),
        ),
        (
            "2024-01-01T00:00:30.1234567891Z",
            Some((NOW + 30, 123_456_790)),
        ),
        ("2024-01-01T00:00:30.9999999991Z", Some((NOW + 31, 0))),
        (
            "2024-01-01T00:00:30.1234567890000Z",
            Some((NOW + 30, 123_456_789)),
        ),
        ("2024-01-01T05:30:30+05:30", Some((NOW + 30, 0))),
        ("2023-12-31T16:00:30-08:00", Some((NOW + 30, 0))),
        ("2024-01-01T00:00:30-00:00", Some((NOW + 30, 0))),
        ("2023-12-31T23:59:60Z", Some((NOW, 0))),
        ("1970-01-01T00:00:00Z", Some((0, 0))),
        ("1969-12-31T23:00:00-01:00", Some((0, 0))),
        ("1969-12-31T23:59:59Z", None),
        ("1970-01-01T00:30:00+01:00", None),
        ("2024-02-30T00:00:00Z", None),
        ("2024-00-01T00:00:00Z", None),
        ("2024-01-01T00:00:30", None),
        ("2024-01-01T00:00:30.Z", None),
        ("2024-01-01T00:00:30+24:00", None),
        ("2024-01-01T00:00:30+0200", None),
        ("2024-01-01T00:00Z", None),
        ("2024-1-01T00:00:30Z", None),
        ("2024-01-01T00:00:30Zjunk", None),
        ("+2024-01-01T00:00:30Z", None),
        ("", None),
    ];
    for &(text, want) in cases {
        assert_eq!(parse_rfc3339(text.as_bytes()), want, "{text}");
    }
}

#[test]
fn counts() {
    assert_eq!(parse_count(b"0"), Some(0));
    assert_eq!(parse_count(b" 149984\t"), Some(149_984));
    assert_eq!(parse_count(b"18446744073709551615"), Some(u64::MAX));
    for bad in [
        "",
        " ",
        "18446744073709551616",
        "-1",
        "+1",
        "1.0",
        "1e3",
        "0x10",
        "1 2",
    ] {
        assert_eq!(parse_count(bad.as_bytes()), None, "{bad}");
    }
}

/// (year, month, day, weekday 0 = Monday) of a day count since 1970-01-01, by walking
/// the calendar: slow, simple, and independent of the parser's arithmetic.
fn civil(mut days: u64) -> (u64, usize, u64, usize) {
    let weekday = ((days + 3) % 7) as usize;
    let leap = |y: u64| y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
    let mut year = 1970;
    loop {
        let len = if leap(year) { 366 } else { 365 };
        if days < len {
            break;
        }
        days -= len;
        year += 1;
    }
    let lens = [
        31,
        if leap(year) { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    let mut month = 0;
    while days >= lens[month] {
        days -= lens[month];
        month += 1;
    }
    (year, month, days + 1, weekday)
}

fn name(words: &[&'static [u8]], i: usize) -> &'static str {
    core::str::from_utf8(words[i]).unwrap()
}

fn http_forms(unix: u64) -> [String; 3] {
    let (y, mo, d, wd) = civil(unix / 86_400);
    let (h, mi, sec) = (unix % 86_400 / 3600, unix % 3600 / 60, unix % 60);
    let (day, long, month) = (name(&DAYS, wd), name(&LONG_DAYS, wd), name(&MONTHS, mo));
    [
        format!("{day}, {d:02} {month} {y:04} {h:02}:{mi:02}:{sec:02} GMT"),
        format!(
            "{long}, {d:02}-{month}-{:02} {h:02}:{mi:02}:{sec:02} GMT",
            y % 100
        ),
        format!("{day} {month} {d:>2} {h:02}:{mi:02}:{sec:02} {y:04}"),
    ]
}

const Y9999_END: u64 = 253_402_300_799;

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    #[test]
    fn parsers_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..64), now in any::<u64>()) {
        let _ = parse_retry_after(&bytes, now);
        let _ = parse_retry_after_ms(&bytes);
        let _ = parse_http_date(&bytes);
        let _ = parse_http_date_at(&bytes, now);
        let _ = parse_rfc3339(&bytes);
        let _ = parse_count(&bytes);
    }

    #[test]
    fn date_like_inputs_never_panic(text in "[ ,:.+TZ0-9a-zA-Z-]{0,40}", now in any::<u64>()) {
        let _ = parse_retry_after(text.as_bytes(), now);
        let _ = parse_http_date(text.as_bytes());
        let _ = parse_rfc3339(text.as_bytes());
    }

    #[test]
    fn from_headers_never_panics(
        headers in proptest::collection::vec(
            (
                prop_oneof![
                    Just(String::from("retry-after")),
                    Just(String::from("retry-after-ms")),
                    Just(String::from("date")),
                    Just(String::from("x-should-retry")),
                    "x-ratelimit-(limit|remaining|reset)-(requests|tokens|x)",
                    "anthropic-ratelimit-(requests|tokens|input-tokens|output-tokens|-)-(limit|remaining|reset|)",
                    ".{0,24}",
                ],
                prop_oneof![".{0,32}", "[0-9. :,TZa-zA-Z+-]{0,32}"],
            ),
            0..12,
        ),
        now in any::<u64>(),
    ) {
        let h = Hints::from_headers(headers.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes())), now);
        for d in [h.retry_after, h.requests.reset, h.tokens.reset, h.wait_hint(0)].into_iter().flatten() {
            prop_assert!(d <= MAX_HINT);
        }
    }

    /// A fractional wait is rounded up: never below what was asked, at most 1ns above.
    #[test]
    fn fractional_retry_after_rounds_up(int in 0u64..10_000_000, frac in "[0-9]{1,30}") {
        let nanos_from = |digits: usize| {
            let padded: String = frac.chars().chain(core::iter::repeat('0')).take(digits).collect();
            let floor = padded.parse::<u128>().unwrap();
            let exact = frac.len() <= digits || frac[digits..].bytes().all(|b| b == b'0');
            floor + u128::from(!exact)
        };
        let got = parse_retry_after(format!("{int}.{frac}").as_bytes(), NOW).unwrap();
        let want = u128::from(int) * 1_000_000_000 + nanos_from(9);
        prop_assert_eq!(got.as_nanos(), want.min(MAX_HINT.as_nanos()));
        let got = parse_retry_after_ms(format!("{int}.{frac}").as_bytes()).unwrap();
        let want = u128::from(int) * 1_000_000 + nanos_from(6);
        prop_assert_eq!(got.as_nanos(), want.min(MAX_HINT.as_nanos()));
    }

    #[test]
    fn http_dates_round_trip(unix in 0..=Y9999_END) {
        let [imf, rfc850, asctime] = http_forms(unix);
        prop_assert_eq!(parse_http_date(imf.as_bytes()), Some(unix), "{}", imf);
        prop_assert_eq!(parse_http_date(asctime.as_bytes()), Some(unix), "{}", asctime);
        // A two-digit year resolves to the real one when "now" is that instant.
        prop_assert_eq!(parse_http_date_at(rfc850.as_bytes(), unix), Some(unix), "{}", rfc850);
        let wait = parse_retry_after(imf.as_bytes(), NOW).unwrap();
        prop_assert_eq!(wait, s(unix.saturating_sub(NOW)).min(MAX_HINT));
    }

    #[test]
    fn rfc3339_round_trips(unix in 86_400..=(Y9999_END - 86_400), nanos in 0u32..1_000_000_000, offset_min in -1439i64..=1439) {
        let local = (unix as i64 + offset_min * 60) as u64;
        let (y, mo, d, _) = civil(local / 86_400);
        let (h, mi, sec) = (local % 86_400 / 3600, local % 3600 / 60, local % 60);
        let sign = if offset_min < 0 { '-' } else { '+' };
        let (oh, om) = (offset_min.abs() / 60, offset_min.abs() % 60);
        let text = format!("{y:04}-{:02}-{d:02}T{h:02}:{mi:02}:{sec:02}.{nanos:09}{sign}{oh:02}:{om:02}", mo + 1);
        prop_assert_eq!(parse_rfc3339(text.as_bytes()), Some((unix, nanos)), "{}", text);
    }
}
