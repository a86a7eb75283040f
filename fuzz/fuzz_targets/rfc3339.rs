//! The `rfc3339` target: see `steadfast_tests::fuzz::rfc3339` for what it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| steadfast_tests::fuzz::rfc3339(data));
