//! Criterion benchmarks: every workload of `steadfast_bench`, one criterion group per
//! operation, steadfast and the peers in the same run.
//!
//! `cargo bench -p steadfast-bench`, then `cargo run -p steadfast-bench --release --bin
//! report` for the README table. A filter narrows the run as usual
//! (`cargo bench -p steadfast-bench -- breaker`).
//!
//! Times are the benchmark thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`) where the
//! platform has it, so that other processes competing for the cores do not inflate
//! them (a sample that waited for a core is not charged for the wait). Set
//! `STEADFAST_BENCH_CLOCK=wall` to measure wall-clock time instead.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::Criterion;
use steadfast_bench::{Case, Visitor, Workload};

/// What a sample's time is measured with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Clock {
    /// `Instant`.
    Wall,
    /// The thread's CPU time.
    ThreadCpu,
}

impl Clock {
    fn from_env() -> Clock {
        match std::env::var("STEADFAST_BENCH_CLOCK").as_deref() {
            Ok("wall") => Clock::Wall,
            _ if thread_cpu_time().is_some() => Clock::ThreadCpu,
            _ => Clock::Wall,
        }
    }

    /// Runs `f` and returns how long it took on this clock.
    #[inline(always)]
    fn time(self, f: impl FnOnce()) -> Duration {
        match self {
            Clock::Wall => {
                let start = Instant::now();
                f();
                start.elapsed()
            }
            Clock::ThreadCpu => {
                let start = thread_cpu_time().unwrap_or_default();
                f();
                thread_cpu_time().unwrap_or_default().saturating_sub(start)
            }
        }
    }
}

/// The CPU time this thread has used.
#[cfg(unix)]
fn thread_cpu_time() -> Option<Duration> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the call only writes to it.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return None;
    }
    Some(Duration::new(
        u64::try_from(ts.tv_sec).ok()?,
        u32::try_from(ts.tv_nsec).ok()?,
    ))
}

#[cfg(not(unix))]
fn thread_cpu_time() -> Option<Duration> {
    None
}

struct Bench<'c> {
    criterion: &'c mut Criterion,
    clock: Clock,
}

impl Visitor for Bench<'_> {
    fn visit<W: Workload>(&mut self, case: Case, make: fn() -> W) {
        let clock = self.clock;
        let mut group = self.criterion.benchmark_group(case.group);
        group.bench_function(case.name, |b| {
            // A fresh state per sample keeps every sample's state bounded and alike.
            b.iter_custom(|iters| {
                let mut w = make();
                clock.time(|| {
                    for _ in 0..iters {
                        black_box(black_box(&mut w).step());
                    }
                })
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
    let clock = Clock::from_env();
    eprintln!("clock: {clock:?}; load average at start: {}", load().trim());
    steadfast_bench::visit_all(&mut Bench {
        criterion: &mut criterion,
        clock,
    });
    eprintln!("load average at end: {}", load().trim());
    criterion.final_summary();
}
