//! Runs one workload many times, for a profiler: instruction counts under callgrind
//! are repeatable where timings are not.
//!
//! ```text
//! cargo build -p steadfast-bench --release --example profile
//! valgrind --tool=callgrind --collect-atstart=no --toggle-collect='*measured*' \
//!     target/release/examples/profile breaker_success steadfast 100000
//! callgrind_annotate --inclusive=yes callgrind.out.<pid>
//! ```
//!
//! With no arguments it lists the workloads. Instructions per operation are the
//! collected total divided by the steps (and by the group's operations per iteration).

use std::hint::black_box;
use std::process::ExitCode;

use steadfast_bench::{Case, Visitor, Workload};

struct Run {
    group: String,
    name: String,
    steps: u64,
    found: bool,
}

#[inline(never)]
fn measured<W: Workload>(w: &mut W, steps: u64) {
    for _ in 0..steps {
        black_box(black_box(&mut *w).step());
    }
}

impl Visitor for Run {
    fn visit<W: Workload>(&mut self, case: Case, make: fn() -> W) {
        if self.group.is_empty() {
            println!("{} {}", case.group, case.name);
            return;
        }
        if case.group != self.group || case.name != self.name {
            return;
        }
        self.found = true;
        let mut w = make();
        // Warm up (first-use initialisation), outside the collected function.
        for _ in 0..1_000 {
            black_box(w.step());
        }
        measured(&mut w, self.steps);
    }
}

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let mut run = Run {
        group: args.next().unwrap_or_default(),
        name: args.next().unwrap_or_default(),
        steps: args.next().and_then(|s| s.parse().ok()).unwrap_or(100_000),
        found: false,
    };
    steadfast_bench::visit_all(&mut run);
    if !run.group.is_empty() && !run.found {
        eprintln!("no workload {} {}", run.group, run.name);
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
