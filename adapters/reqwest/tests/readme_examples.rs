//! The README's Rust examples are the example programs of this crate, verbatim: they
//! compile with the crate (`cargo test` builds examples), so the README cannot drift.

const README: &str = include_str!("../../../README.md");

fn shown(name: &str, source: &str) {
    let block = format!("```rust\n{source}```");
    assert!(
        README.contains(&block),
        "README.md must show examples/{name}.rs as it is (copy the file into its ```rust block)"
    );
}

#[test]
fn the_readme_shows_the_examples_as_they_are() {
    shown("failover", include_str!("../examples/failover.rs"));
    shown("stream_text", include_str!("../examples/stream_text.rs"));
    shown("fallbacks", include_str!("../examples/fallbacks.rs"));
    shown("concurrent", include_str!("../examples/concurrent.rs"));
}
