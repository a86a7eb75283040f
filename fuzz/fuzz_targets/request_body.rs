//! The `request_body` target: see `steadfast_tests::fuzz::request_body` for what it
//! checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| steadfast_tests::fuzz::request_body(data));
