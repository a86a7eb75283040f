//! Allocation counting: a global allocator that counts, per thread, the allocations
//! and the net heap bytes of the code it wraps.
//!
//! The counts are meaningful only in a binary that installs [`Counting`] as its global
//! allocator (the `report` binary and the allocation test do):
//!
//! ```text
//! #[global_allocator]
//! static ALLOC: steadfast_bench::alloc_count::Counting = steadfast_bench::alloc_count::Counting;
//! ```
//!
//! Counters are thread-local, so tests running in parallel do not see each other.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::hint::black_box;

use crate::{Case, Visitor, Workload};

thread_local! {
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
    static BYTES: Cell<i64> = const { Cell::new(0) };
}

fn note(allocs: u64, bytes: i64) {
    // `try_with`: the counters may be gone while a thread shuts down; those
    // allocations are nobody's.
    let _ = ALLOCS.try_with(|a| a.set(a.get().wrapping_add(allocs)));
    let _ = BYTES.try_with(|b| b.set(b.get().wrapping_add(bytes)));
}

/// The system allocator, counting every allocation and reallocation of the current
/// thread.
#[derive(Debug, Clone, Copy, Default)]
pub struct Counting;

// SAFETY: every method forwards to `System` with the same arguments; the counting only
// touches const-initialised thread-locals, which never allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(1, layout.size() as i64);
        // SAFETY: forwarded unchanged.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(1, layout.size() as i64);
        // SAFETY: forwarded unchanged.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        note(0, -(layout.size() as i64));
        // SAFETY: forwarded unchanged.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(1, new_size as i64 - layout.size() as i64);
        // SAFETY: forwarded unchanged.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// What the counted code did to the heap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counts {
    /// Allocations and reallocations.
    pub allocs: u64,
    /// Bytes allocated minus bytes freed.
    pub net_bytes: i64,
}

fn snapshot() -> Counts {
    Counts {
        allocs: ALLOCS.try_with(Cell::get).unwrap_or(0),
        net_bytes: BYTES.try_with(Cell::get).unwrap_or(0),
    }
}

/// Runs `f` and returns its result with what it did to the current thread's heap.
pub fn count<R>(f: impl FnOnce() -> R) -> (R, Counts) {
    let before = snapshot();
    let r = f();
    let after = snapshot();
    (
        r,
        Counts {
            allocs: after.allocs.wrapping_sub(before.allocs),
            net_bytes: after.net_bytes.wrapping_sub(before.net_bytes),
        },
    )
}

/// Whether [`Counting`] is the global allocator of this binary.
pub fn active() -> bool {
    let (b, c) = count(|| black_box(Box::new(black_box(7u64))));
    drop(b);
    c.allocs == 1
}

/// The allocations of one workload.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AllocRow {
    /// The workload.
    pub case: Case,
    /// Allocations per criterion iteration, averaged over the measured steps.
    pub per_iteration: f64,
    /// Allocations during the measured steps, in all.
    pub total: u64,
}

/// Runs every workload it visits for `warm` unmeasured and then `steps` counted steps.
#[derive(Debug)]
pub struct AllocVisitor {
    /// Steps run before counting (first-use allocations of thread-locals and the like).
    pub warm: u64,
    /// Steps counted.
    pub steps: u64,
    /// One row per workload, in visiting order.
    pub rows: Vec<AllocRow>,
    /// Every step's result per workload (when kept), for sanity checks.
    pub outputs: Vec<Vec<u64>>,
    /// Whether to keep each step's result in [`AllocVisitor::outputs`].
    pub keep_outputs: bool,
}

impl AllocVisitor {
    /// A visitor with these step counts.
    pub fn new(warm: u64, steps: u64) -> AllocVisitor {
        AllocVisitor {
            warm,
            steps,
            rows: Vec::new(),
            outputs: Vec::new(),
            keep_outputs: false,
        }
    }
}

impl Visitor for AllocVisitor {
    fn visit<W: Workload>(&mut self, case: Case, make: fn() -> W) {
        let mut w = make();
        let mut outputs = Vec::new();
        if self.keep_outputs {
            outputs.reserve(usize::try_from(self.warm + self.steps).unwrap_or(0));
        }
        for _ in 0..self.warm {
            let out = black_box(black_box(&mut w).step());
            if self.keep_outputs {
                outputs.push(out);
            }
        }
        let steps = self.steps;
        let keep = self.keep_outputs;
        let ((), counts) = count(|| {
            for _ in 0..steps {
                let out = black_box(black_box(&mut w).step());
                if keep {
                    // Reserved above: pushing does not allocate.
                    outputs.push(out);
                }
            }
        });
        self.rows.push(AllocRow {
            case,
            per_iteration: counts.allocs as f64 / steps.max(1) as f64,
            total: counts.allocs,
        });
        self.outputs.push(outputs);
    }
}
