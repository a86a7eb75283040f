//! The `ratelimit_headers` target: see `steadfast_tests::fuzz::ratelimit_headers` for what it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| steadfast_tests::fuzz::ratelimit_headers(data));
