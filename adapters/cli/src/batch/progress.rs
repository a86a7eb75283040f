//! Progress on stderr: a bar on a terminal, a plain line every few seconds otherwise.
//! Notes (bad input lines, repairs) go through the same [`Reporter`] so they do not
//! tear the bar. While an endpoint is failing, the line says what held lines wait for
//! (`openai: failing for 23s, breaker open, next probe in 4s`).

use std::io::IsTerminal;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use steadfast_reqwest::MetricsSnapshot;

use super::status::EndpointStatus;

/// How progress is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// A bar when stderr is a terminal, plain lines every `every` otherwise.
    Auto {
        /// The period of plain lines.
        every: Duration,
    },
    /// Nothing but notes and the summary.
    Quiet,
}

/// Live counts the writer updates as lines become durable.
#[derive(Debug, Default)]
pub struct Counters {
    /// Lines in the input (known after a first pass).
    pub total: AtomicU64,
    /// Lines finished by an earlier run.
    pub skipped: AtomicU64,
    /// Lines that succeeded in this run.
    pub ok: AtomicU64,
    /// Lines that failed in this run.
    pub failed: AtomicU64,
}

/// Prints notes on stderr without tearing the bar; at most `limit` of them.
#[derive(Debug, Clone)]
pub struct Reporter {
    bar: Option<ProgressBar>,
    printed: Arc<AtomicU64>,
    limit: u64,
}

impl Reporter {
    /// Prints one note (`steadfast: ` in front); past the limit, counts it silently.
    pub fn note(&self, message: &str) {
        let n = self.printed.fetch_add(1, Ordering::Relaxed);
        if n >= self.limit {
            return;
        }
        let line = if n + 1 == self.limit {
            format!("steadfast: {message}\nsteadfast: (further notes are counted, not printed)")
        } else {
            format!("steadfast: {message}")
        };
        match &self.bar {
            Some(bar) => bar.suspend(|| eprintln!("{line}")),
            None => eprintln!("{line}"),
        }
    }

    /// Prints a line that is never suppressed (the summary, errors).
    pub fn always(&self, text: &str) {
        match &self.bar {
            Some(bar) => bar.suspend(|| eprint!("{text}")),
            None => eprint!("{text}"),
        }
    }
}

/// The running display; [`Display::finish`] stops it.
pub struct Display {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
    bar: Option<ProgressBar>,
}

impl std::fmt::Debug for Display {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Display").finish_non_exhaustive()
    }
}

/// What the display reads from the client on each tick.
#[derive(Debug, Clone, Default)]
pub struct Reading {
    /// The client's counters.
    pub metrics: MetricsSnapshot,
    /// Every endpoint's state.
    pub endpoints: Vec<EndpointStatus>,
}

/// The reporter and the display for `mode`. `read` reads the client.
pub fn start(
    mode: Mode,
    counters: Arc<Counters>,
    read: impl Fn() -> Reading + Send + 'static,
) -> (Reporter, Display) {
    let (bar, every) = match mode {
        Mode::Quiet => (None, None),
        Mode::Auto { every } if !std::io::stderr().is_terminal() => (None, Some(every)),
        Mode::Auto { .. } => {
            let bar = ProgressBar::with_draw_target(
                Some(counters.total.load(Ordering::Relaxed)),
                ProgressDrawTarget::stderr(),
            );
            let style = ProgressStyle::with_template(
                "{spinner} {elapsed_precise} [{bar:30}] {pos}/{len} {msg}",
            )
            .map(|s| s.progress_chars("=> "))
            .unwrap_or_else(|_| ProgressStyle::default_bar());
            bar.set_style(style);
            (Some(bar), Some(Duration::from_millis(100)))
        }
    };
    let reporter = Reporter {
        bar: bar.clone(),
        printed: Arc::new(AtomicU64::new(0)),
        limit: 100,
    };
    let Some(every) = every else {
        let display = Display {
            stop: None,
            thread: None,
            bar: None,
        };
        return (reporter, display);
    };
    let (stop, stopped) = mpsc::channel::<()>();
    let tick_bar = bar.clone();
    let started = Instant::now();
    let thread = std::thread::Builder::new()
        .name("steadfast-progress".into())
        .spawn(move || {
            while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(every) {
                let line = status(&counters, &read(), started.elapsed());
                match &tick_bar {
                    Some(bar) => {
                        let c = &counters;
                        bar.set_length(c.total.load(Ordering::Relaxed));
                        bar.set_position(done(c));
                        bar.set_message(line.message);
                        bar.tick();
                    }
                    None => eprintln!(
                        "steadfast: {}/{} lines, {}",
                        line.done, line.total, line.message
                    ),
                }
            }
        })
        .ok();
    let display = Display {
        stop: Some(stop),
        thread,
        bar,
    };
    (reporter, display)
}

fn done(c: &Counters) -> u64 {
    c.skipped.load(Ordering::Relaxed)
        + c.ok.load(Ordering::Relaxed)
        + c.failed.load(Ordering::Relaxed)
}

struct Line {
    done: u64,
    total: u64,
    message: String,
}

fn status(c: &Counters, r: &Reading, elapsed: Duration) -> Line {
    let ok = c.ok.load(Ordering::Relaxed);
    let failed = c.failed.load(Ordering::Relaxed);
    let total = c.total.load(Ordering::Relaxed);
    let done = done(c);
    let rate = (ok + failed) as f64 / elapsed.as_secs_f64().max(1e-3);
    let left = total.saturating_sub(done);
    let eta = if rate > 0.0 {
        format!("{}s", (left as f64 / rate).ceil() as u64)
    } else {
        "?".to_owned()
    };
    let mut message = format!(
        "ok {ok}, failed {failed}, retries {}, {rate:.1}/s, ETA {eta}",
        r.metrics.retries
    );
    for e in r.endpoints.iter().filter(|e| e.is_troubled()) {
        message.push_str("; ");
        message.push_str(&e.to_string());
    }
    Line {
        done,
        total,
        message,
    }
}

impl Display {
    /// Stops the display and clears the bar.
    pub fn finish(mut self) {
        self.stop.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::status::BreakerView;

    #[test]
    fn the_line_names_what_held_lines_wait_for() {
        let c = Counters::default();
        c.total.store(60, Ordering::Relaxed);
        c.failed.store(3, Ordering::Relaxed);
        let endpoint = |name: &str, failing: Option<u64>| EndpointStatus {
            name: name.to_owned(),
            failing_for: failing.map(Duration::from_secs),
            breaker: BreakerView::Open {
                probe_in: Duration::from_millis(3_500),
            },
        };
        let mut healthy = endpoint("anthropic", None);
        healthy.breaker = BreakerView::Closed;
        let r = Reading {
            metrics: MetricsSnapshot::default(),
            endpoints: vec![endpoint("openai", Some(23)), healthy],
        };
        let line = status(&c, &r, Duration::from_secs(10));
        assert_eq!((line.done, line.total), (3, 60));
        assert_eq!(
            line.message,
            "ok 0, failed 3, retries 0, 0.3/s, ETA 190s; \
             openai: failing for 23s, breaker open, next probe in 4s"
        );
    }
}
