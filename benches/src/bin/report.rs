//! Prints the README table from the last `cargo bench -p steadfast-bench` run, the
//! allocation counts per operation (measured here, outside criterion) and the size of
//! every state object.
//!
//! `cargo run -p steadfast-bench --release --bin report [DIR...]`
//!
//! With no argument it reads criterion's default output directory. With several
//! directories (say, three runs with `CRITERION_HOME=target/criterion-N`), each
//! figure is the median of the runs' medians, which tames a noisy machine.

use std::path::PathBuf;
use std::process::ExitCode;

use steadfast_bench::alloc_count::{self, AllocVisitor, Counting};
use steadfast_bench::report;
use steadfast_bench::sizes::{self, SizeVisitor};

#[global_allocator]
static ALLOC: Counting = Counting;

struct Sizes(String);

impl SizeVisitor for Sizes {
    fn state<T>(&mut self, what: &'static str, lib: &'static str, make: fn() -> T) {
        let (value, counts) = alloc_count::count(make);
        let inline = std::mem::size_of::<T>();
        self.0.push_str(&format!(
            "| {what} | {lib} | {inline} | {} |\n",
            counts.net_bytes
        ));
        drop(value);
    }
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".to_owned());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    format!("{cpu}, {cores} cores; load average now: {}", load.trim())
}

fn main() -> ExitCode {
    if !alloc_count::active() {
        eprintln!("the counting allocator is not active");
        return ExitCode::FAILURE;
    }
    let mut allocs = AllocVisitor::new(1_000, 20_000);
    steadfast_bench::visit_all(&mut allocs);

    let mut dirs: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    if dirs.is_empty() {
        dirs.push(report::criterion_dir());
    }
    let rows = match report::rows(&dirs, &allocs.rows) {
        Ok(rows) => rows,
        Err(e) => {
            eprintln!("reading criterion's results: {e}");
            return ExitCode::FAILURE;
        }
    };
    if rows
        .iter()
        .all(|r| r.steadfast.as_ref().and_then(|m| m.median_ns).is_none())
    {
        eprintln!(
            "no results under {}: run `cargo bench -p steadfast-bench` first",
            dirs.iter()
                .map(|d| d.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }

    println!("Machine: {}; runs: {}\n", machine(), dirs.len());
    println!("{}", report::markdown_table(&rows));
    println!("Targets:\n");
    println!("{}", report::targets_table(&rows));
    println!("All implementations:\n");
    println!("{}", report::detail_table(&rows));
    let mut sizes = Sizes(String::from(
        "| state | implementation | size_of (bytes) | heap at construction (bytes) |\n|---|---|---:|---:|\n",
    ));
    sizes::visit(&mut sizes);
    println!("State sizes:\n");
    println!("{}", sizes.0);
    ExitCode::SUCCESS
}
