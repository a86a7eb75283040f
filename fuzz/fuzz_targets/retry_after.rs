//! The `retry_after` target: see `steadfast_tests::fuzz::retry_after` for what it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| steadfast_tests::fuzz::retry_after(data));
