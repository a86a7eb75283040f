//! The `chat` target: see `steadfast_tests::fuzz::chat` for what it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| steadfast_tests::fuzz::chat(data));
