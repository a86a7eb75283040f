//! The `batch_jsonl` target: the batch runner's input-line reader on arbitrary bytes.
//! Every line either parses into an id within bounds and a request object, or is
//! rejected with an error that names its line; nothing panics.
#![no_main]

use steadfast_cli::input::{MAX_ID_LEN, parse_line};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    for (i, line) in data.split(|b| *b == b'\n').enumerate() {
        let no = i as u64 + 1;
        match parse_line(no, line) {
            Ok(l) => {
                assert_eq!(l.line, no);
                assert!(!l.id.is_empty() && l.id.len() <= MAX_ID_LEN, "id {:?}", l.id);
            }
            Err(e) => {
                assert_eq!(e.line, no);
                assert!(e.to_string().starts_with(&format!("{no}: ")), "{e}");
            }
        }
    }
});
