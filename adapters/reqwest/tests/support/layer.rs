//! A `tracing-subscriber` layer for the tests: every span (its name, parent and fields
//! as they are recorded) and every event (its name, span and fields), as text. Shared
//! by the reqwest and ureq telemetry suites.
#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::registry::LookupSpan;

/// A recorded span.
#[derive(Debug, Clone)]
pub struct SpanRec {
    pub name: &'static str,
    /// The index of its parent in [`Recorded::spans`].
    pub parent: Option<usize>,
    pub fields: BTreeMap<String, String>,
}

/// A recorded event.
#[derive(Debug, Clone)]
pub struct EventRec {
    pub name: &'static str,
    /// The index of the span it happened in.
    pub span: Option<usize>,
    pub fields: BTreeMap<String, String>,
}

/// Everything recorded.
#[derive(Debug, Default)]
pub struct Recorded {
    pub spans: Vec<SpanRec>,
    pub events: Vec<EventRec>,
    /// Live span ids (the registry reuses ids once a span closes).
    live: HashMap<u64, usize>,
}

impl Recorded {
    /// Every field value of every span and event.
    pub fn all_values(&self) -> Vec<String> {
        let spans = self.spans.iter().flat_map(|s| s.fields.values());
        let events = self.events.iter().flat_map(|e| e.fields.values());
        spans.chain(events).cloned().collect()
    }

    /// The spans named `chat` with `steadfast.attempt` unset (calls) or set (attempts).
    pub fn calls(&self) -> Vec<&SpanRec> {
        self.spans
            .iter()
            .filter(|s| s.name == "chat" && !s.fields.contains_key("steadfast.attempt"))
            .collect()
    }

    /// The attempt spans, in order.
    pub fn attempts(&self) -> Vec<&SpanRec> {
        self.spans
            .iter()
            .filter(|s| s.name == "chat" && s.fields.contains_key("steadfast.attempt"))
            .collect()
    }

    /// The events named `name`.
    pub fn events(&self, name: &str) -> Vec<&EventRec> {
        self.events.iter().filter(|e| e.name == name).collect()
    }
}

/// The layer: records into a shared [`Recorded`].
#[derive(Clone, Default)]
pub struct Rec(pub Arc<Mutex<Recorded>>);

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().to_owned(), value.to_string());
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name().to_owned(), value.to_string());
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.insert(field.name().to_owned(), value.to_string());
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Rec {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut fields = BTreeMap::new();
        attrs.record(&mut Fields(&mut fields));
        let mut r = self.0.lock().unwrap();
        let parent = ctx
            .span(id)
            .and_then(|s| s.parent())
            .and_then(|p| r.live.get(&p.id().into_u64()).copied());
        r.spans.push(SpanRec {
            name: attrs.metadata().name(),
            parent,
            fields,
        });
        let index = r.spans.len() - 1;
        r.live.insert(id.into_u64(), index);
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, _: Context<'_, S>) {
        let mut r = self.0.lock().unwrap();
        let Some(&i) = r.live.get(&id.into_u64()) else {
            return;
        };
        values.record(&mut Fields(&mut r.spans[i].fields));
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let mut fields = BTreeMap::new();
        event.record(&mut Fields(&mut fields));
        let mut r = self.0.lock().unwrap();
        let span = ctx
            .event_span(event)
            .and_then(|s| r.live.get(&s.id().into_u64()).copied());
        r.events.push(EventRec {
            name: event.metadata().name(),
            span,
            fields,
        });
    }

    fn on_close(&self, id: Id, _: Context<'_, S>) {
        self.0.lock().unwrap().live.remove(&id.into_u64());
    }
}

/// A subscriber recording into `rec`.
pub fn subscriber(rec: &Rec) -> impl Subscriber + Send + Sync {
    use tracing_subscriber::layer::SubscriberExt;
    tracing_subscriber::registry().with(rec.clone())
}
