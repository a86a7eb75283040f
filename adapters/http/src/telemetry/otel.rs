//! The GenAI client metrics through the `opentelemetry` metrics API (the `otel`
//! feature): `gen_ai.client.operation.duration`, `gen_ai.client.token.usage` and, for
//! streams, `gen_ai.client.operation.time_to_first_chunk`, with the conventions'
//! attributes and advised bucket boundaries.

use opentelemetry::KeyValue;
use opentelemetry::metrics::{Histogram, Meter};

use super::End;
use super::facts::{EndpointFacts, OPERATION};

/// The advised boundaries of the two durations, in seconds.
pub const DURATION_BUCKETS: [f64; 14] = [
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
];

/// The advised boundaries of token counts.
pub const TOKEN_BUCKETS: [f64; 14] = [
    1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0, 1048576.0, 4194304.0,
    16777216.0, 67108864.0,
];

/// The instruments, made once per client on the caller's meter.
#[derive(Debug, Clone)]
pub(crate) struct Instruments {
    duration: Histogram<f64>,
    tokens: Histogram<u64>,
    first_chunk: Histogram<f64>,
}

impl Instruments {
    pub(crate) fn new(meter: &Meter) -> Instruments {
        Instruments {
            duration: meter
                .f64_histogram("gen_ai.client.operation.duration")
                .with_unit("s")
                .with_description("GenAI operation duration.")
                .with_boundaries(DURATION_BUCKETS.to_vec())
                .build(),
            tokens: meter
                .u64_histogram("gen_ai.client.token.usage")
                .with_unit("{token}")
                .with_description("Number of input and output tokens used.")
                .with_boundaries(TOKEN_BUCKETS.to_vec())
                .build(),
            first_chunk: meter
                .f64_histogram("gen_ai.client.operation.time_to_first_chunk")
                .with_unit("s")
                .with_description("Time to receive the first chunk in a streaming operation.")
                .with_boundaries(DURATION_BUCKETS.to_vec())
                .build(),
        }
    }

    /// Records a finished call whose last attempt went to `endpoint`, asking for
    /// `model`.
    pub(crate) fn record(&self, end: &End, endpoint: Option<&EndpointFacts>, model: Option<&str>) {
        let mut attrs = vec![KeyValue::new("gen_ai.operation.name", OPERATION)];
        if let Some(f) = endpoint {
            attrs.push(KeyValue::new("gen_ai.provider.name", f.provider));
            if let Some(a) = &f.address {
                attrs.push(KeyValue::new("server.address", a.clone()));
                if let Some(p) = f.port {
                    attrs.push(KeyValue::new("server.port", i64::from(p)));
                }
            }
        }
        if let Some(m) = model {
            attrs.push(KeyValue::new("gen_ai.request.model", m.to_owned()));
        }
        if let Some(m) = end.answer.as_ref().and_then(|a| a.model.clone()) {
            attrs.push(KeyValue::new("gen_ai.response.model", m));
        }
        let mut timed = attrs.clone();
        if let Some(e) = &end.error {
            timed.push(KeyValue::new("error.type", e.clone().into_owned()));
        }
        self.duration.record(end.duration.as_secs_f64(), &timed);
        if let Some(first) = end.first_chunk {
            self.first_chunk.record(first.as_secs_f64(), &timed);
        }
        let Some(answer) = &end.answer else {
            return;
        };
        for (kind, n) in [
            ("input", answer.input_tokens),
            ("output", answer.output_tokens),
        ] {
            if let Some(n) = n {
                let mut a = attrs.clone();
                a.push(KeyValue::new("gen_ai.token.type", kind));
                self.tokens.record(n, &a);
            }
        }
    }
}
