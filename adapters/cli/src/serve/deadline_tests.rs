use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::task::Wake;

use super::*;

/// A waker that records being woken.
#[derive(Default)]
struct Woken(AtomicBool);

impl Wake for Woken {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Ordering::Release);
    }
}

fn poll(deadline: Pin<&mut Either<Deadline<'_>, Sleep>>, woken: &Arc<Woken>) -> Poll<()> {
    let waker = Waker::from(Arc::clone(woken));
    deadline.poll(&mut Context::from_waker(&waker))
}

#[test]
fn a_deadline_passes_at_the_first_look_at_or_after_it_and_not_before() {
    let deadlines = Deadlines::new();
    // 12.5 ticks ahead: the 13th look is the first at or after it.
    let at = deadlines.origin + TICK * 25 / 2;
    let mut deadline = pin!(deadlines.at(at, TICK * 25 / 2));
    assert!(matches!(*deadline, Either::Left(_)));
    let woken = Arc::new(Woken::default());
    for look in 1..13 {
        assert!(poll(deadline.as_mut(), &woken).is_pending(), "look {look}");
        deadlines.look();
    }
    assert!(!woken.0.load(Ordering::Acquire));
    deadlines.look();
    assert!(woken.0.load(Ordering::Acquire), "the 13th look wakes it");
    assert!(poll(deadline.as_mut(), &woken).is_ready());
}

#[test]
fn a_short_span_gets_a_timer_of_its_own() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let _entered = runtime.enter();
    let deadlines = Deadlines::new();
    let short = COARSE_FROM - Duration::from_millis(1);
    assert!(matches!(
        deadlines.at(Instant::now() + short, short),
        Either::Right(_)
    ));
    assert!(matches!(
        deadlines.at(Instant::now() + COARSE_FROM, COARSE_FROM),
        Either::Left(_)
    ));
}

#[test]
fn a_dropped_deadline_gives_its_slot_back_to_the_next() {
    let deadlines = Deadlines::new();
    let woken = Arc::new(Woken::default());
    let span = COARSE_FROM * 2;
    let at = deadlines.origin + span;
    let mut first = Box::pin(deadlines.at(at, span));
    let mut second = Box::pin(deadlines.at(at, span));
    assert!(poll(first.as_mut(), &woken).is_pending());
    assert!(poll(second.as_mut(), &woken).is_pending());
    assert_eq!(deadlines.lock().slots.len(), 2);
    drop(first);
    assert_eq!(deadlines.lock().free, [0]);
    let mut third = Box::pin(deadlines.at(at, span));
    assert!(poll(third.as_mut(), &woken).is_pending());
    assert_eq!(
        deadlines.lock().slots.len(),
        2,
        "the freed slot is taken again"
    );
    assert!(deadlines.lock().free.is_empty());
    drop((second, third));
    assert!(deadlines.lock().slots.iter().all(Option::is_none));
}

#[test]
fn a_deadline_already_looked_past_is_ready_without_waiting() {
    let deadlines = Deadlines::new();
    for _ in 0..20 {
        deadlines.look();
    }
    let span = COARSE_FROM;
    let mut deadline = pin!(deadlines.at(deadlines.origin + span, span));
    assert!(poll(deadline.as_mut(), &Arc::new(Woken::default())).is_ready());
    assert!(deadlines.lock().slots.is_empty(), "it never took a slot");
}

#[tokio::test(start_paused = true)]
async fn the_looks_pass_a_deadline_within_a_tick_after_it_and_end_with_their_owner() {
    let deadlines = Arc::new(Deadlines::new());
    let looks = tokio::spawn(Deadlines::run(Arc::downgrade(&deadlines)));
    let span = TICK * 25 / 2;
    let started = Instant::now();
    deadlines.at(started + span, span).await;
    let waited = started.elapsed();
    assert!(waited >= span && waited <= span + TICK, "{waited:?}");
    drop(deadlines);
    tokio::time::sleep(TICK * 2).await;
    assert!(looks.is_finished());
}
