//! The client's breaker transitions, read from its `tracing` events (one per core
//! event): a subscriber of our own keeps those of the `steadfast` target.

use std::sync::{Mutex, OnceLock};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// One transition: when (the core's instant, as it prints), where, from, to.
#[derive(Debug, Clone, Default)]
struct Seen {
    at: String,
    endpoint: String,
    from: String,
    to: String,
    breaker: bool,
}

impl Visit for Seen {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let text = format!("{value:?}");
        match field.name() {
            "at" => self.at = text,
            "endpoint" => self.endpoint = text,
            "from" => self.from = text,
            "to" => self.to = text,
            "message" => self.breaker = text == "steadfast.breaker.transition",
            _ => {}
        }
    }
}

struct Capture;

fn log() -> &'static Mutex<Vec<Seen>> {
    static LOG: OnceLock<Mutex<Vec<Seen>>> = OnceLock::new();
    LOG.get_or_init(|| Mutex::new(Vec::new()))
}

impl Subscriber for Capture {
    fn enabled(&self, m: &Metadata<'_>) -> bool {
        m.target() == "steadfast"
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, e: &Event<'_>) {
        let mut seen = Seen::default();
        e.record(&mut seen);
        if seen.breaker {
            log().lock().unwrap_or_else(|p| p.into_inner()).push(seen);
        }
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

/// Starts capturing (once per process).
pub fn capture() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        let _ = tracing::subscriber::set_global_default(Capture);
    });
}

/// The transitions captured since the last call, in the core's order of instants,
/// named `endpoint:from>to` with the endpoints' names.
pub fn take(names: &[String]) -> Vec<String> {
    let mut seen = std::mem::take(&mut *log().lock().unwrap_or_else(|p| p.into_inner()));
    let instant = |s: &Seen| s.at.trim_end_matches('s').parse::<f64>().unwrap_or(0.0);
    seen.sort_by(|a, b| instant(a).total_cmp(&instant(b)));
    seen.iter()
        .map(|s| {
            let index: usize = s
                .endpoint
                .trim_start_matches("endpoint#")
                .parse()
                .unwrap_or(0);
            let name = names.get(index).map_or("?", String::as_str);
            format!(
                "{name}:{}>{}",
                super::figures::norm(&s.from),
                super::figures::norm(&s.to)
            )
        })
        .collect()
}
