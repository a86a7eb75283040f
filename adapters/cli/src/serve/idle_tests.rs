use std::convert::Infallible;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Waker};

use bytes::Bytes;
use http::Response;
use http_body_util::{BodyExt, Either, Full, StreamBody};

use super::*;

/// Looks `n` times; how many connections were asked to close in all.
fn looks(watch: &Watch, n: u32) -> usize {
    (0..n).map(|_| watch.look()).sum()
}

fn streamed() -> Response<reply::Body> {
    let frames = futures_util::stream::iter([Ok::<_, Infallible>(Frame::data(Bytes::from("x")))]);
    Response::new(Either::Right(UnsyncBoxBody::new(StreamBody::new(frames))))
}

fn whole() -> Response<reply::Body> {
    Response::new(Either::Left(Full::new(Bytes::from("{}"))))
}

#[test]
fn a_connection_without_a_request_is_closed_at_the_last_look_and_not_before() {
    let watch = Watch::default();
    let _idle = watch.register();
    assert_eq!(looks(&watch, IDLE_TICKS), 0);
    assert_eq!(watch.look(), 1);
}

#[test]
fn a_request_in_flight_keeps_its_connection_open_and_its_end_restarts_the_count() {
    let watch = Watch::default();
    let idle = watch.register();
    assert_eq!(looks(&watch, IDLE_TICKS), 0);
    let busy = idle.enter();
    assert_eq!(looks(&watch, 10 * IDLE_TICKS), 0);
    drop(busy);
    assert_eq!(looks(&watch, IDLE_TICKS), 0);
    assert_eq!(watch.look(), 1);
}

#[test]
fn a_whole_answer_frees_its_connection_at_once_and_a_stream_when_it_is_dropped() {
    let watch = Watch::default();
    let idle = watch.register();
    let answer = keep_busy(whole(), idle.enter());
    assert_eq!(idle.busy.load(Ordering::Acquire), 0);
    drop(answer);
    let stream = keep_busy(streamed(), idle.enter());
    assert_eq!(looks(&watch, 10 * IDLE_TICKS), 0);
    drop(stream);
    assert_eq!(idle.busy.load(Ordering::Acquire), 0);
    assert_eq!(looks(&watch, IDLE_TICKS + 1), 1);
}

#[tokio::test]
async fn a_kept_stream_sends_every_frame_of_its_body() {
    let watch = Watch::default();
    let idle = watch.register();
    let body = keep_busy(streamed(), idle.enter()).into_body();
    let got = body.collect().await.map(|c| c.to_bytes());
    assert_eq!(got.ok(), Some(Bytes::from("x")));
    assert_eq!(idle.busy.load(Ordering::Acquire), 0, "the body is dropped");
}

#[test]
fn a_connection_closes_only_when_asked_and_still_without_a_request() {
    let watch = Watch::default();
    let idle = watch.register();
    let mut cx = Context::from_waker(Waker::noop());
    let mut woken = pin!(idle.notified());
    arm(woken.as_mut(), &mut cx);
    assert!(!idle.closes(woken.as_mut(), &mut cx), "not asked yet");
    assert_eq!(looks(&watch, IDLE_TICKS + 1), 1);
    // A request came in after the watch looked: the connection stays, and is asked
    // again only after a whole idle timeout more.
    let busy = idle.enter();
    assert!(!idle.closes(woken.as_mut(), &mut cx));
    drop(busy);
    assert!(!idle.closes(woken.as_mut(), &mut cx), "the ask was dropped");
    assert_eq!(looks(&watch, IDLE_TICKS), 0);
    assert_eq!(watch.look(), 1);
    assert!(idle.closes(woken.as_mut(), &mut cx));
}

#[test]
fn the_watch_forgets_closed_connections() {
    let watch = Watch::default();
    let kept = watch.register();
    drop(watch.register());
    watch.look();
    assert_eq!(watch.lock().len(), 1);
    drop(kept);
    watch.look();
    assert!(watch.lock().is_empty());
}

#[tokio::test(start_paused = true)]
async fn the_watch_looks_once_a_tick_and_ends_with_its_server() {
    let watch = Arc::new(Watch::default());
    let idle = watch.register();
    let running = tokio::spawn(Watch::run(Arc::downgrade(&watch)));
    let mut woken = pin!(idle.notified());
    let started = tokio::time::Instant::now();
    woken.as_mut().await;
    let waited = started.elapsed();
    // The first look is a tick after the start; the one after the 30th is the 31st.
    assert_eq!(waited, TICK * (IDLE_TICKS + 1), "{waited:?}");
    drop(watch);
    tokio::time::sleep(TICK * 2).await;
    assert!(running.is_finished());
}
