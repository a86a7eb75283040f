//! The `duration` target: see `steadfast_tests::fuzz::duration` for what it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| steadfast_tests::fuzz::duration(data));
