//! Knobs: overrides of a scenario's fields, each applied to every endpoint (the mock's
//! `--rpm`, `--outage-for`, … and its settings file).

use core::time::Duration;

use super::{BadKeyKind, Outage, OutageKind, Scenario, ServerLimits, ToolUse};
use crate::dist::Dist;

/// Overrides of the scenario's fields, each applied to every endpoint. None set: the
/// scenario as written.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Knobs {
    /// The random faults scaled (their mix kept) to add up to this, in `[0, 1]`; a
    /// scenario without random faults keeps none.
    pub fault_rate: Option<f64>,
    /// The outage windows replaced by one from the start lasting this long (503 for
    /// OpenAI requests, 529 for Anthropic ones, or `outage_status`).
    pub outage_for: Option<Duration>,
    /// The outage (as for `outage_for`) also covers the first this many requests.
    pub outage_requests: Option<u64>,
    /// The status of outage answers (every status window, and the outage switch).
    pub outage_status: Option<u16>,
    /// A requests-per-minute limit per key.
    pub rpm: Option<u64>,
    /// The requests a full bucket allows at once (at most the limit).
    pub rate_burst: Option<u64>,
    /// Success latencies uniform from this (with `latency_max`; alone: up to 800 ms).
    pub latency_min: Option<Duration>,
    /// Success latencies uniform up to this (with `latency_min`; alone: from 200 ms).
    pub latency_max: Option<Duration>,
    /// The wait random 429s ask for.
    pub retry_after: Option<Duration>,
    /// The events a cut stream delivers.
    pub stream_cut_after: Option<u32>,
    /// Keys whose text contains `bad` or `revoked` are revoked, and those containing
    /// `quota` out of quota, everywhere.
    pub key_rules: bool,
    /// The scenario's clock runs this many times as long (see
    /// [`Scenario::time_scaled`]), applied before the other knobs.
    pub time_scale: Option<f64>,
    /// When every endpoint answers with a tool call (see [`ToolUse`]).
    pub tool_use: Option<ToolUse>,
}

impl Knobs {
    /// These knobs with every knob `over` sets put over them (a command line's over a
    /// file's); `key_rules` is on when either has it.
    pub fn overridden(&self, over: &Knobs) -> Knobs {
        Knobs {
            fault_rate: over.fault_rate.or(self.fault_rate),
            outage_for: over.outage_for.or(self.outage_for),
            outage_requests: over.outage_requests.or(self.outage_requests),
            outage_status: over.outage_status.or(self.outage_status),
            rpm: over.rpm.or(self.rpm),
            rate_burst: over.rate_burst.or(self.rate_burst),
            latency_min: over.latency_min.or(self.latency_min),
            latency_max: over.latency_max.or(self.latency_max),
            retry_after: over.retry_after.or(self.retry_after),
            stream_cut_after: over.stream_cut_after.or(self.stream_cut_after),
            key_rules: over.key_rules || self.key_rules,
            time_scale: over.time_scale.or(self.time_scale),
            tool_use: over.tool_use.or(self.tool_use),
        }
    }

    /// Checks the values; the error names the knob.
    pub fn validate(&self) -> Result<(), String> {
        if let Some(r) = self.fault_rate.filter(|r| !(0.0..=1.0).contains(r)) {
            return Err(format!("fault_rate must be within 0..=1, not {r}"));
        }
        if self.rpm == Some(0) {
            return Err("rpm must be at least 1".to_owned());
        }
        if self.rate_burst == Some(0) {
            return Err("rate_burst must be at least 1".to_owned());
        }
        if let (Some(min), Some(max)) = (self.latency_min, self.latency_max) {
            if min > max {
                return Err("latency_min must not exceed latency_max".to_owned());
            }
        }
        if let Some(s) = self.outage_status.filter(|s| !(100..=599).contains(s)) {
            return Err(format!("outage_status {s} is not an HTTP status"));
        }
        if let Some(t) = self.time_scale.filter(|t| !(t.is_finite() && *t > 0.0)) {
            return Err(format!("time_scale must be positive, not {t}"));
        }
        Ok(())
    }

    /// `scenario` with the knobs applied.
    pub fn applied(&self, scenario: &Scenario) -> Scenario {
        let mut s = match self.time_scale {
            Some(f) => scenario.time_scaled(f),
            None => scenario.clone(),
        };
        let latency = self.latency();
        for e in &mut s.endpoints {
            if let Some(rate) = self.fault_rate {
                let total = e.faults.total();
                if total > 0.0 {
                    e.faults.scale(rate / total);
                }
            }
            if let Some(wait) = self.retry_after {
                e.faults.retry_after = Some(Dist::Fixed(wait));
            }
            if let Some(n) = self.stream_cut_after {
                e.faults.stream_cut_after = n;
            }
            if let Some(l) = latency {
                e.latency = l;
            }
            self.outages(&mut e.outages);
            self.limits(&mut e.limits);
            if self.key_rules {
                e.bad_key_names = vec![BadKeyKind::Revoked, BadKeyKind::QuotaExhausted];
            }
            if let Some(t) = self.tool_use {
                e.tool_use = t;
            }
        }
        s
    }

    fn latency(&self) -> Option<Dist> {
        let (min, max) = match (self.latency_min, self.latency_max) {
            (None, None) => return None,
            (Some(min), Some(max)) => (min, max),
            (Some(min), None) => (min, min.max(Duration::from_millis(800))),
            (None, Some(max)) => (max.min(Duration::from_millis(200)), max),
        };
        Some(Dist::Uniform { min, max })
    }

    fn outages(&self, outages: &mut Vec<Outage>) {
        if self.outage_for.is_some() || self.outage_requests.is_some() {
            let end = self.outage_for.unwrap_or(Duration::ZERO);
            let mut o = Outage::status(Duration::ZERO, end);
            o.first_requests = self.outage_requests.unwrap_or(0);
            *outages = vec![o];
        }
        if let Some(status) = self.outage_status {
            for o in outages.iter_mut().filter(|o| o.kind == OutageKind::Status) {
                o.status = Some(status);
            }
        }
    }

    fn limits(&self, limits: &mut Option<ServerLimits>) {
        if let Some(rpm) = self.rpm {
            let l = limits.get_or_insert_with(ServerLimits::default);
            l.requests_per_minute = Some(rpm);
            l.request_burst = l.request_burst.map(|b| b.min(rpm));
        }
        if let (Some(burst), Some(l)) = (self.rate_burst, limits.as_mut()) {
            if let Some(limit) = l.requests_per_minute {
                l.request_burst = Some(burst.min(limit));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtin;

    #[test]
    fn knobs_override_every_endpoint() {
        let flaky = builtin::scenario("flaky").unwrap();
        let k = Knobs {
            fault_rate: Some(1.0),
            retry_after: Some(Duration::from_millis(150)),
            latency_max: Some(Duration::from_millis(100)),
            key_rules: true,
            ..Knobs::default()
        };
        let s = k.applied(&flaky);
        let e = &s.endpoints[0];
        assert!((e.faults.total() - 1.0).abs() < 1e-9);
        assert_eq!(e.faults.decay, 0.5);
        assert_eq!(
            e.faults.retry_after,
            Some(Dist::Fixed(Duration::from_millis(150)))
        );
        assert_eq!(
            e.latency,
            Dist::Uniform {
                min: Duration::from_millis(100),
                max: Duration::from_millis(100)
            }
        );
        assert_eq!(e.bad_key_names.len(), 2);
        s.validate().unwrap();
        let ok = Knobs {
            fault_rate: Some(0.5),
            ..Knobs::default()
        }
        .applied(&Scenario::healthy());
        assert_eq!(ok.endpoints[0].faults.total(), 0.0);
        let out = Knobs {
            outage_for: Some(Duration::ZERO),
            outage_requests: Some(2),
            outage_status: Some(502),
            ..Knobs::default()
        }
        .applied(&builtin::scenario("outage").unwrap());
        assert_eq!(out.endpoints[0].outages.len(), 1);
        assert_eq!(out.endpoints[0].outages[0].status, Some(502));
        out.validate().unwrap();
        let rl = Knobs {
            rpm: Some(1200),
            rate_burst: Some(4),
            ..Knobs::default()
        }
        .applied(&builtin::scenario("ratelimit").unwrap());
        let l = rl.endpoints[0].limits.unwrap();
        assert_eq!(
            (l.requests_per_minute, l.request_burst),
            (Some(1200), Some(4))
        );
        assert!(
            Knobs {
                fault_rate: Some(2.0),
                ..Knobs::default()
            }
            .validate()
            .is_err()
        );
    }
}
