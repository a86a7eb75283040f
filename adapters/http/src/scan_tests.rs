use std::fmt;

use proptest::prelude::*;
use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::Value;

use super::*;

/// A member as a session reads it: strings decoded, non-negative integers as
/// `as_u64` reads them, any other number alike, objects parsed, the rest alike.
fn read(value: &Value) -> Value {
    match value {
        Value::Number(n) => n.as_u64().map_or(Value::from("a number"), Value::from),
        Value::Array(_) | Value::Null => Value::Null,
        other => other.clone(),
    }
}

/// A member's value as the tests compare it.
fn seen(value: Scanned<'_>) -> Value {
    match value {
        Scanned::Str(s) => Value::String(s.decoded()),
        Scanned::Bool(b) => Value::Bool(b),
        Scanned::Number(_) => value.as_u64().map_or(Value::from("a number"), Value::from),
        Scanned::Object(o) => serde_json::from_slice(o).expect("an object the scan checked"),
        Scanned::Other => Value::Null,
    }
}

/// The scan's verdict on `text` and the members it read.
fn scanned(text: &[u8]) -> Option<(bool, Vec<(String, Value)>)> {
    let mut read = Vec::new();
    let object = members(text, |key, value| read.push((key.decoded(), seen(value))))?;
    Some((object, read))
}

/// A verdict, the top-level members, and the inner ones.
type Inner = Option<(bool, Vec<(String, Value)>, Vec<(String, Value)>)>;

/// What [`members_and_inner`] reads of `text` with `inner`, and what it should: the
/// verdict and members of [`members`], and the members of every top-level object
/// under `inner`, in order.
fn with_inner(text: &[u8], inner: &str) -> (Inner, Inner) {
    let (mut tops, mut inners, mut objects) = (Vec::new(), Vec::new(), Vec::new());
    let verdict = members_and_inner(text, inner, |member| match member {
        Member::Top(key, value) => {
            if let (true, Scanned::Object(o)) = (key.is(inner), value) {
                objects.extend(scanned(o).expect("an object the scan checked").1);
            }
            tops.push((key.decoded(), seen(value)));
        }
        Member::Inner(key, value) => inners.push((key.decoded(), seen(value))),
    });
    let got = verdict.map(|v| (v, tops, inners));
    let want = scanned(text).map(|(v, tops)| (v, tops, objects));
    (got, want)
}

/// `serde_json`'s verdict on `text` (`None`: it refuses it) and the members in order,
/// a key given twice seen twice.
fn expected(text: &[u8]) -> Option<(bool, Vec<(String, Value)>)> {
    let v: Value = serde_json::from_slice(text).ok()?;
    if !v.is_object() {
        return Some((false, Vec::new()));
    }
    let InOrder(entries) = serde_json::from_slice(text).expect("an object");
    Some((
        true,
        entries.iter().map(|(k, v)| (k.clone(), read(v))).collect(),
    ))
}

/// An object's members in order.
struct InOrder(Vec<(String, Value)>);

impl<'de> Deserialize<'de> for InOrder {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<InOrder, D::Error> {
        d.deserialize_map(InOrderVisitor)
    }
}

struct InOrderVisitor;

impl<'de> Visitor<'de> for InOrderVisitor {
    type Value = InOrder;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<InOrder, A::Error> {
        let mut entries = Vec::new();
        while let Some(entry) = map.next_entry::<String, Value>()? {
            entries.push(entry);
        }
        Ok(InOrder(entries))
    }
}

fn accepts(text: &[u8]) -> bool {
    members(text, |_, _| {}).is_some()
}

/// The scan reads `text` as `serde_json` does, with an inner key or without.
fn agrees(text: &[u8]) {
    let shown = String::from_utf8_lossy(text);
    assert_eq!(scanned(text), expected(text), "{shown:?}");
    let (got, want) = with_inner(text, "v");
    assert_eq!(got, want, "inner v: {shown:?}");
}

#[test]
fn reads_members_in_order_with_their_strings_decoded() {
    let text = br#" {"model":"gpt\u002d4o","mod\u0065l":"x\"y\\z\/\n","n":12,"f":1.5,
                     "neg":-3,"big":18446744073709551616,"ok":true,"u":{"a":[1,{"b":null}]},
                     "s":"\ud83d\ude00 caf\u00e9 \u00e9t\u00e9","l":[],"z":null} "#;
    let (object, seen) = scanned(text).expect("JSON");
    assert!(object);
    let keys: Vec<&str> = seen.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        keys,
        [
            "model", "model", "n", "f", "neg", "big", "ok", "u", "s", "l", "z"
        ]
    );
    assert_eq!(seen[0].1, "gpt-4o");
    assert_eq!(seen[1].1, "x\"y\\z/\n");
    assert_eq!(seen[2].1, 12);
    assert_eq!(seen[8].1, "\u{1F600} café été");
    agrees(text);
}

#[test]
fn agrees_with_serde_json_on_edge_cases() {
    let cases: &[&[u8]] = &[
        b"",
        b" ",
        b"{}",
        b"[]",
        b"{",
        b"}",
        b"{} {}",
        b"{},",
        b"null",
        b"nul",
        b"true",
        b"truex",
        b"\"s\"",
        b"\"s",
        b"0",
        b"-0",
        b"01",
        b"-",
        b"1.",
        b".5",
        b"1e",
        b"1e+",
        b"1E-2",
        b"1e400",
        b"-1e400",
        b"1e-400",
        b"1.5e308",
        b"2e308",
        b"+1",
        b"0x1",
        b"18446744073709551615",
        b"18446744073709551616",
        b"-9223372036854775809",
        b"{\"a\":1,}",
        b"{\"a\" 1}",
        b"{\"a\":}",
        b"{a:1}",
        b"{\"a\":1 \"b\":2}",
        b"[1,]",
        b"[,1]",
        b"[1 2]",
        b"{\"a\":[}",
        b"\"\\x\"",
        b"\"\\u12\"",
        b"\"\\u12G4\"",
        b"\"\\ud800\"",
        b"\"\\udc00\"",
        b"\"\\ud800\\u0041\"",
        b"\"\\ud800\\udc00\"",
        b"\"\\ud800\\\\udc00\"",
        b"\"a\tb\"",
        b"\"a\x7fb\"",
        b"\"\xff\"",
        b"\"\xc3\xa9\"",
        b"\xef\xbb\xbf{}",
        b"{\"\xc3\xa9\":1}",
        b" \t\n\r{} \t\n\r",
        b"\x0c{}",
        b"{\"a\":1}\x00",
        b"[\"\\/\\b\\f\\n\\r\\t\"]",
        b"{\"usage\":{\"total_tokens\":3},\"usage\":7}",
        b"[[[]]]",
        b"{\"a\":{\"b\":{}}}",
    ];
    for text in cases {
        agrees(text);
    }
}

#[test]
fn nests_as_deep_as_serde_json_allows_and_no_deeper() {
    for depth in [126, 127, 128, 200] {
        let arrays = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        agrees(arrays.as_bytes());
        let objects = format!("{}1{}", "{\"a\":".repeat(depth), "}".repeat(depth));
        agrees(objects.as_bytes());
        // The same depths with the inner object read in the same pass.
        let inner = format!("{}1{}", "{\"v\":".repeat(depth), "}".repeat(depth));
        agrees(inner.as_bytes());
        let (got, _) = with_inner(inner.as_bytes(), "v");
        assert_eq!(got.is_some(), depth <= 127, "{depth}");
    }
    assert!(members("[".repeat(127).as_bytes(), |_, _| {}).is_none());
    let deepest = format!("{}{}", "[".repeat(127), "]".repeat(127));
    assert_eq!(members(deepest.as_bytes(), |_, _| {}), Some(false));
}

/// Any JSON value, its strings from a mix of plain, escaped and non-ASCII characters.
fn json() -> impl Strategy<Value = Value> {
    let text = "[a-z\"\\\\/\\x00-\\x1fé€\u{1F600} ]{0,8}";
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<u64>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (-1e300f64..1e300).prop_map(Value::from),
        text.prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((text, inner), 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]

    /// Every JSON text, compact or pretty, is read as `serde_json` reads it.
    #[test]
    fn reads_every_json_text_as_serde_json_does(v in json(), pretty in any::<bool>()) {
        let text = if pretty {
            serde_json::to_vec_pretty(&v)
        } else {
            serde_json::to_vec(&v)
        };
        let text = text.expect("a value serializes");
        prop_assert!(accepts(&text));
        agrees(&text);
        let wrapped = serde_json::json!({"v": v, "w": {"v": 1}, "v ": v});
        agrees(&serde_json::to_vec(&wrapped).expect("a value serializes"));
    }

    /// The plain run of a string ends where a byte-by-byte look says it does.
    #[test]
    fn a_plain_run_ends_at_the_first_stop(
        bytes in prop::collection::vec(prop_oneof![1 => Just(b'"'), 1 => Just(b'\\'), 1 => 0x00..0x20u8, 12 => 0x20..0x80u8, 6 => 0x80..=0xffu8], 0..40),
        start in 0..40usize,
    ) {
        let start = start.min(bytes.len());
        let naive = bytes
            .iter()
            .skip(start)
            .position(|&b| STOPS[usize::from(b)])
            .map_or(bytes.len(), |i| start + i);
        prop_assert_eq!(plain_run(&bytes, start), naive);
    }

    /// A JSON text with a byte changed, dropped or added is accepted exactly when
    /// `serde_json` accepts it, and then read alike.
    #[test]
    fn a_damaged_text_is_refused_exactly_when_serde_json_refuses_it(
        v in json(),
        at in any::<prop::sample::Index>(),
        byte in prop_oneof![Just(b'"'), Just(b'\\'), Just(b','), Just(b'}'), Just(b'1'), Just(b'e'), Just(0xff), any::<u8>()],
        how in 0..3u8,
    ) {
        let mut text = serde_json::to_vec(&serde_json::json!({"model": "m", "v": v})).expect("serializes");
        let i = at.index(text.len());
        match how {
            0 => text[i] = byte,
            1 => { text.remove(i); }
            _ => text.insert(i, byte),
        }
        agrees(&text);
    }
}

/// A request body as a gateway receives one.
const REQUEST: &[u8] = br#"{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Hi"}]}"#;

/// An answer as an upstream sends one.
const ANSWER: &[u8] = br#"{"id":"chatcmpl-bench","object":"chat.completion","created":1764547200,"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"Hi","refusal":null},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}"#;

/// A number for each value the scan reports, so that none of them goes unread.
fn weight(value: Scanned<'_>) -> usize {
    match value {
        Scanned::Str(s) => s.text.len(),
        Scanned::Bool(b) => usize::from(b),
        Scanned::Number(n) | Scanned::Object(n) => n.len(),
        Scanned::Other => 1,
    }
}

/// One scan of the request, as `raw_request` makes it (apart for a profiler to count).
#[inline(never)]
fn scan_request(text: &[u8]) -> Option<bool> {
    let mut seen = 0usize;
    let verdict = members(text, |key, value| {
        seen = seen.wrapping_add(key.text.len() + weight(value));
    });
    std::hint::black_box(seen);
    verdict
}

/// One scan of the answer, as `peek` makes it (apart for a profiler to count).
#[inline(never)]
fn scan_answer(text: &[u8]) -> Option<bool> {
    let mut seen = 0usize;
    let verdict = members_and_inner(text, "usage", |member| {
        let (Member::Top(key, value) | Member::Inner(key, value)) = member;
        seen = seen.wrapping_add(key.text.len() + weight(value));
    });
    std::hint::black_box(seen);
    verdict
}

/// The cost of the two scans a gateway makes per request, for a profiler: run with
/// `valgrind --tool=callgrind <test binary> scan_cost_loop --ignored --exact` and read
/// the inclusive cost of `scan_request` and `scan_answer` per call.
#[test]
#[ignore = "a profiling loop, not a check"]
fn scan_cost_loop() {
    for _ in 0..10_000 {
        assert_eq!(scan_request(std::hint::black_box(REQUEST)), Some(true));
        assert_eq!(scan_answer(std::hint::black_box(ANSWER)), Some(true));
    }
}

#[test]
fn agrees_with_serde_json_on_spacing_numbers_and_strings() {
    let cases: &[&[u8]] = &[
        b"{ }",
        b"[ ]",
        b"{\"a\" : 1 , \"b\" :\"x\" ,\"c\": [ 1 , 2 ] }",
        b"{\"a\":{ },\"b\":[ ],\"c\":{\"d\" : { } } }",
        b"[{\"a\":1} , {\"b\" :2}]",
        b"[ {\"a\":1 ,}]",
        b"[{\"a\" 1}]",
        b"[{\"a\":1 \"b\":2}]",
        b"[{\"a\":1,,\"b\":2}]",
        b"[{,}]",
        b"[{1:2}]",
        b"[1 , 2 ,]",
        b"[\"\\u00e9\\ud83d\\ude00\",\"\\ud83d\",\"\\ude00\",\"\\ud83d\\u0041\"]",
        b"[{\"\\u0061\":1,\"caf\xc3\xa9\":2,\"\\ud800\":3}]",
        b"[\"\xc3\"]",
        b"[\"\xe2\x82\"]",
        b"[\"\xed\xa0\x80\"]",
        b"[\"\xf4\x90\x80\x80\"]",
        b"[-0,0.5e-3,1e400,-1e400,1e-400,01,-01,1.,.5,1e+,-,2.5E+3,0e0,-0.0]",
        b"[-0]",
        b"[0.5e-3]",
        b"[1e400]",
        b"[01]",
        b"[1.]",
        b"[-]",
        b"[tru]",
        b"[nulll]",
        b"[falsey]",
        b"{\"n\":123456789012345678901234567890}",
        b"{\"n\":-0,\"m\":0.5e-3,\"o\":1E2}",
    ];
    for text in cases {
        agrees(text);
    }
}

#[test]
fn reads_strings_of_every_length_with_any_stop_anywhere() {
    for len in 0..40 {
        for at in 0..=len {
            for stop in [
                "\\n",
                "\\u00e9",
                "é",
                "\\\"",
                "\t",
                "\"",
                "\\ud83d\\ude00",
                "\\ud83d",
            ] {
                let mut s = "x".repeat(len);
                s.insert_str(at, stop);
                for text in [
                    format!("{{\"{s}\":\"{s}\",\"k\":[\"{s}\",{{\"{s}\":1}}]}}"),
                    format!("[\"{s}\"]"),
                ] {
                    agrees(text.as_bytes());
                }
            }
        }
    }
}

#[test]
fn nests_across_the_levels_one_loop_holds() {
    let open = |depth: usize| -> String {
        (0..depth)
            .map(|i| if i % 2 == 0 { "[" } else { "{\"a\":" })
            .collect()
    };
    let close = |depth: usize| -> String {
        (0..depth)
            .rev()
            .map(|i| if i % 2 == 0 { ",1]" } else { "}" })
            .collect()
    };
    for depth in (58..68).chain(120..130) {
        let mixed = format!("{}0{}", open(depth), close(depth));
        agrees(mixed.as_bytes());
        let inside = format!("{{\"v\":{{\"w\":{mixed}}},\"x\":[{mixed},2]}}");
        agrees(inside.as_bytes());
        let wide = format!("[{mixed},{mixed},[[]],{{}}]");
        agrees(wide.as_bytes());
    }
}

/// `serde_json`'s verdict on `text`: whether it parses into a value.
fn serde_accepts(text: &[u8]) -> bool {
    serde_json::from_slice::<Value>(text).is_ok()
}

#[test]
fn every_prefix_and_byte_change_of_the_samples_gets_serde_json_s_verdict() {
    for sample in [REQUEST, ANSWER] {
        for end in 0..=sample.len() {
            agrees(&sample[..end]);
        }
        let mut text = sample.to_vec();
        for at in 0..text.len() {
            let was = text[at];
            for byte in 0..=u8::MAX {
                text[at] = byte;
                let inner = members_and_inner(&text, "usage", |_| {}).is_some();
                assert_eq!(accepts(&text), serde_accepts(&text), "{at} {byte}");
                assert_eq!(inner, serde_accepts(&text), "usage: {at} {byte}");
            }
            text[at] = was;
        }
    }
}

#[test]
fn eight_bytes_are_flagged_exactly_where_they_stop_a_plain_run() {
    for fill in [b'a', b'"', 0x00, 0x7f, 0x80, 0xff, b'\\', b' '] {
        for at in 0..8 {
            for byte in 0..=u8::MAX {
                let mut eight = [fill; 8];
                eight[at] = byte;
                let flags = stops_in(eight);
                for (i, &b) in eight.iter().enumerate() {
                    let flagged = flags >> (i * 8 + 7) & 1 == 1;
                    assert_eq!(flagged, STOPS[usize::from(b)], "{eight:?} at {i}");
                }
                assert_eq!(flags & !0x8080_8080_8080_8080, 0);
            }
        }
    }
}
