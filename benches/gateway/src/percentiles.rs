//! Nearest-rank percentiles of recorded latencies.

use std::time::Duration;

/// The summary of one series of latencies.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    /// How many latencies.
    pub count: usize,
    /// The median, in microseconds.
    pub p50_us: f64,
    /// The 99th percentile, in microseconds.
    pub p99_us: f64,
    /// The mean, in microseconds.
    pub mean_us: f64,
    /// The largest, in microseconds.
    pub max_us: f64,
}

/// Summarises `latencies` (sorted in place); `None` when there are none.
pub fn summarise(latencies: &mut [Duration]) -> Option<Summary> {
    latencies.sort_unstable();
    let max = *latencies.last()?;
    let total: Duration = latencies.iter().sum();
    let count = latencies.len();
    Some(Summary {
        count,
        p50_us: micros(nearest_rank(latencies, 50)?),
        p99_us: micros(nearest_rank(latencies, 99)?),
        mean_us: micros(total) / count as f64,
        max_us: micros(max),
    })
}

/// The value at percentile `p` (0–100) of the sorted `sorted`: the smallest value with
/// at least p % of the values at or below it.
pub fn nearest_rank(sorted: &[Duration], p: usize) -> Option<Duration> {
    let rank = (p * sorted.len()).div_ceil(100).max(1);
    sorted.get(rank - 1).copied()
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

#[cfg(test)]
mod tests {
    use super::*;

    fn us(v: &[u64]) -> Vec<Duration> {
        v.iter().map(|&u| Duration::from_micros(u)).collect()
    }

    #[test]
    fn nearest_rank_of_a_hundred_values_is_the_value_of_that_rank() {
        let sorted = us(&(1..=100).collect::<Vec<_>>());
        assert_eq!(nearest_rank(&sorted, 50), Some(Duration::from_micros(50)));
        assert_eq!(nearest_rank(&sorted, 99), Some(Duration::from_micros(99)));
    }

    #[test]
    fn p99_leaves_out_the_slowest_one_percent_and_no_more() {
        let mut v = us(&[10; 99]);
        v.push(Duration::from_micros(1000));
        let s = summarise(&mut v).unwrap();
        assert_eq!((s.p50_us, s.p99_us, s.max_us), (10.0, 10.0, 1000.0));
        v.push(Duration::from_micros(1000));
        let s = summarise(&mut v).unwrap();
        assert_eq!(s.p99_us, 1000.0);
    }

    #[test]
    fn no_latencies_have_no_summary() {
        assert_eq!(summarise(&mut []), None);
    }
}
