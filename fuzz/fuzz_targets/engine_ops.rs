//! The `engine_ops` target: see `steadfast_tests::fuzz::engine_ops` for what it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| steadfast_tests::fuzz::engine_ops(data));
