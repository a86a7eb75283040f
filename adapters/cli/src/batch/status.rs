//! What each endpoint is waiting for, as the progress line and the summary show it.
//!
//! A face: it reads the engine's state (the breaker, the first failure since the last
//! success) and decides nothing.

use std::fmt;
use std::time::Duration;

use steadfast_core::breaker::BreakerState;
use steadfast_core::duration::Human;
use steadfast_core::ids::EndpointId;
use steadfast_core::time::Timestamp;
use steadfast_reqwest::Client;

/// How long an endpoint must have been failing (with its breaker closed) before the
/// progress line names it.
const NOTEWORTHY: Duration = Duration::from_secs(1);

/// One endpoint's state at one instant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointStatus {
    /// Its name (from the config, else its provider's).
    pub name: String,
    /// How long since its first failure since its last success; `None` while it is
    /// not failing.
    pub failing_for: Option<Duration>,
    /// Its breaker.
    pub breaker: BreakerView,
}

/// A breaker as a person reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BreakerView {
    /// Calls flow.
    Closed,
    /// Calls are refused; the breaker lets probes through after `probe_in` (zero once
    /// that time has come and no call has asked yet).
    Open {
        /// The time until it may let probes through.
        probe_in: Duration,
    },
    /// Probes are testing the endpoint.
    HalfOpen,
}

impl EndpointStatus {
    /// The status from the engine's readings at `now`.
    pub fn new(
        name: &str,
        now: Timestamp,
        failing_since: Option<Timestamp>,
        state: BreakerState,
    ) -> EndpointStatus {
        let breaker = match state {
            BreakerState::Closed => BreakerView::Closed,
            BreakerState::Open { until } => BreakerView::Open {
                probe_in: until.saturating_duration_since(now),
            },
            BreakerState::HalfOpen => BreakerView::HalfOpen,
        };
        EndpointStatus {
            name: name.to_owned(),
            failing_for: failing_since.map(|s| now.saturating_duration_since(s)),
            breaker,
        }
    }

    /// Whether the endpoint has been failing for a while (not just one recent error of
    /// a flaky provider) or its breaker is not closed: something a held line may be
    /// waiting for.
    pub fn is_troubled(&self) -> bool {
        self.failing_for.is_some_and(|d| d >= NOTEWORTHY) || self.breaker != BreakerView::Closed
    }
}

/// Whole seconds, rounded down (`23s`, `1m5s`, `0s`).
fn secs(d: Duration) -> Human {
    Human(Duration::from_secs(d.as_secs()))
}

impl fmt::Display for EndpointStatus {
    /// `openai: failing for 23s, breaker open, next probe in 4s`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)?;
        f.write_str(":")?;
        let mut sep = " ";
        if let Some(d) = self.failing_for {
            write!(f, " failing for {}", secs(d))?;
            sep = ", ";
        }
        match self.breaker {
            BreakerView::Closed if self.failing_for.is_none() => write!(f, "{sep}ok"),
            BreakerView::Closed => Ok(()),
            BreakerView::Open { probe_in } if probe_in.is_zero() => {
                write!(f, "{sep}breaker open, next probe due")
            }
            BreakerView::Open { probe_in } => {
                // Rounded up: "in 0s" would read as "now".
                let up = Duration::from_secs(probe_in.as_secs() + 1);
                write!(f, "{sep}breaker open, next probe in {}", secs(up))
            }
            BreakerView::HalfOpen => write!(f, "{sep}breaker half-open, probing"),
        }
    }
}

/// Every endpoint of `client` now; `names` are theirs, by index.
pub fn read(client: &Client, names: &[String]) -> Vec<EndpointStatus> {
    let now = client.now();
    client.shared().with_engine(|engine| {
        names
            .iter()
            .enumerate()
            .filter_map(|(i, name)| {
                let id = EndpointId(u16::try_from(i).ok()?);
                let state = engine.breaker(id)?.state();
                Some(EndpointStatus::new(
                    name,
                    now,
                    engine.failing_since(id),
                    state,
                ))
            })
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> Timestamp {
        Timestamp::from_nanos(ms * 1_000_000)
    }

    #[test]
    fn says_what_an_endpoint_waits_for() {
        let open = BreakerState::Open { until: at(27_200) };
        let s = EndpointStatus::new("openai", at(23_500), Some(at(400)), open);
        assert_eq!(s.failing_for, Some(Duration::from_millis(23_100)));
        assert_eq!(
            s.breaker,
            BreakerView::Open {
                probe_in: Duration::from_millis(3_700)
            }
        );
        assert_eq!(
            s.to_string(),
            "openai: failing for 23s, breaker open, next probe in 4s"
        );
        assert!(s.is_troubled());
        let due = EndpointStatus::new("b", at(30_000), Some(at(0)), open);
        assert_eq!(
            due.to_string(),
            "b: failing for 30s, breaker open, next probe due"
        );
        let half = EndpointStatus::new("b", at(65_000), Some(at(0)), BreakerState::HalfOpen);
        assert_eq!(
            half.to_string(),
            "b: failing for 1m5s, breaker half-open, probing"
        );
        let failing = EndpointStatus::new("c", at(2_000), Some(at(1_000)), BreakerState::Closed);
        assert_eq!(failing.to_string(), "c: failing for 1s");
        let fine = EndpointStatus::new("d", at(2_000), None, BreakerState::Closed);
        assert_eq!(fine.to_string(), "d: ok");
        assert!(!fine.is_troubled());
    }
}
