//! The `error_body` target: see `steadfast_tests::fuzz::error_body` for what it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| steadfast_tests::fuzz::error_body(data));
