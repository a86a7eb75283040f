//! A `tracing` subscriber for the tests: every event's level and fields (as text) go
//! to a closure. Shared by the crate's unit tests and its `tracing` test binary.

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

/// Hands each event's level and fields to its closure.
pub struct Recorder<F>(pub F);

struct Text<'a>(&'a mut String);

impl Visit for Text<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.push_str(&format!("{}={:?} ", field.name(), value));
    }
}

impl<F: Fn(Level, String) + Send + Sync + 'static> Subscriber for Recorder<F> {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut line = String::new();
        event.record(&mut Text(&mut line));
        (self.0)(*event.metadata().level(), line);
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}
