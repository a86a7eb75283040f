//! Criterion benchmarks: every workload of `steadfast_bench`, one criterion group per
//! operation, steadfast and the peers in the same run.
//!
//! `cargo bench -p steadfast-bench`, then `cargo run -p steadfast-bench --release --bin
//! report` for the README table. A filter narrows the run as usual
//! (`cargo bench -p steadfast-bench -- breaker`).

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::Criterion;
use steadfast_bench::{Case, Visitor, Workload};

struct Bench<'c> {
    criterion: &'c mut Criterion,
}

impl Visitor for Bench<'_> {
    fn visit<W: Workload>(&mut self, case: Case, make: fn() -> W) {
        let mut group = self.criterion.benchmark_group(case.group);
        group.bench_function(case.name, |b| {
            // A fresh state per sample keeps every sample's state bounded and alike.
            b.iter_custom(|iters| {
                let mut w = make();
                let start = Instant::now();
                for _ in 0..iters {
                    black_box(black_box(&mut w).step());
                }
                start.elapsed()
            });
        });
        group.finish();
    }
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg").unwrap_or_default()
}

fn main() {
    let mut criterion = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(2))
        .sample_size(50)
        .configure_from_args();
    eprintln!("load average at start: {}", load().trim());
    steadfast_bench::visit_all(&mut Bench {
        criterion: &mut criterion,
    });
    eprintln!("load average at end: {}", load().trim());
    criterion.final_summary();
}
