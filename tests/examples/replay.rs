//! Replays files through a fuzz target's check function (on stable), timing each.
//!
//! `cargo run -p steadfast-tests --release --example replay -- TARGET FILE...`

use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((target, files)) = args.split_first() else {
        eprintln!("usage: replay TARGET FILE...");
        std::process::exit(2);
    };
    let Some(&(_, check)) = steadfast_tests::fuzz::TARGETS
        .iter()
        .find(|(n, _)| n == target)
    else {
        eprintln!("unknown target {target}");
        std::process::exit(2);
    };
    for file in files {
        let data = std::fs::read(file).expect("readable file");
        let start = Instant::now();
        check(&data);
        println!("{file}: ok in {:?}", start.elapsed());
    }
}
