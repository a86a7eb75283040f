//! Steadfast's operations never allocate, and every workload does what its group says
//! (so the benchmarks measure the intended path, not a degenerate one).

use steadfast_bench::alloc_count::{self, AllocVisitor, Counting};
use steadfast_bench::{breaker, engine, limiter};

#[global_allocator]
static ALLOC: Counting = Counting;

fn run(keep: bool) -> AllocVisitor {
    assert!(
        alloc_count::active(),
        "the counting allocator must be installed"
    );
    let mut v = AllocVisitor::new(200, 2_000);
    v.keep_outputs = keep;
    steadfast_bench::visit_all(&mut v);
    v
}

#[test]
fn steadfast_operations_do_not_allocate() {
    let v = run(false);
    let steadfast: Vec<_> = v.rows.iter().filter(|r| r.case.is_steadfast()).collect();
    assert!(
        steadfast.len() >= 15,
        "only {} steadfast workloads",
        steadfast.len()
    );
    for row in steadfast {
        assert_eq!(
            row.total, 0,
            "{}/{} allocated {} times in {} steps",
            row.case.group, row.case.name, row.total, v.steps
        );
    }
}

#[test]
fn the_counter_sees_allocations() {
    let (v, counts) = alloc_count::count(|| vec![1u8; 100]);
    assert_eq!(counts.allocs, 1);
    assert_eq!(counts.net_bytes, 100);
    drop(v);
}

fn outputs(v: &AllocVisitor, group: &str, name: &str) -> Vec<u64> {
    let i = v
        .rows
        .iter()
        .position(|r| r.case.group == group && r.case.name == name)
        .unwrap_or_else(|| panic!("no workload {group}/{name}"));
    v.outputs[i].clone()
}

#[test]
fn workloads_stay_on_their_path() {
    let v = run(true);
    let s = steadfast_bench::STEADFAST;
    // Breakers stay closed: every call is permitted.
    for group in [breaker::SUCCESS.id, breaker::FAILURE.id] {
        assert!(outputs(&v, group, s).iter().all(|&o| o == 1), "{group}");
        assert!(
            outputs(&v, group, "failsafe_consecutive")
                .iter()
                .all(|&o| o == 1)
        );
        assert!(
            outputs(&v, group, "failsafe_success_rate")
                .iter()
                .all(|&o| o == 1)
        );
    }
    assert!(
        outputs(&v, breaker::SUCCESS.id, "recloser")
            .iter()
            .all(|&o| o == 1)
    );
    // Limiter: allowed is always Go (0), rejected never is.
    assert!(outputs(&v, limiter::ALLOWED.id, s).iter().all(|&o| o == 0));
    assert!(outputs(&v, limiter::CHECK.id, s).iter().all(|&o| o == 0));
    assert!(
        outputs(&v, limiter::ALLOWED.id, "governor")
            .iter()
            .all(|&o| o == 0)
    );
    assert!(outputs(&v, limiter::REJECTED.id, s).iter().all(|&o| o > 2));
    assert!(
        outputs(&v, limiter::REJECTED.id, "governor")
            .iter()
            .all(|&o| o == 1)
    );
    // The engine rounds never leave their script (Send, Wait / Send, Done).
    for group in [engine::ROUND.id, engine::RETRIED_CALL.id] {
        assert!(
            outputs(&v, group, s)
                .iter()
                .all(|&o| o != engine::UNEXPECTED),
            "{group} left its script"
        );
    }
    assert!(
        outputs(&v, engine::RETRIED_CALL.id, s)
            .iter()
            .all(|&o| o == 2)
    );
}
