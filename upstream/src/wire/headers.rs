//! Response headers as the providers write them: `retry-after`, `retry-after-ms`, and
//! OpenAI's `x-ratelimit-*` / Anthropic's `anthropic-ratelimit-*`.

use core::time::Duration;

use steadfast_core::date::Rfc3339;
use steadfast_core::provider::Provider;

/// A response header: a lower-case name and its value.
pub type Header = (String, String);

/// A header.
pub fn header(name: &str, value: impl Into<String>) -> Header {
    (name.to_owned(), value.into())
}

/// Whole seconds, rounded up.
pub fn ceil_secs(d: Duration) -> u64 {
    d.as_secs().saturating_add(u64::from(d.subsec_nanos() > 0))
}

/// Milliseconds, rounded up.
pub fn ceil_millis(d: Duration) -> u128 {
    d.as_nanos().div_ceil(1_000_000)
}

/// A span the way OpenAI's `x-ratelimit-reset-*` headers print it (Go's format, cut to
/// the millisecond): `20ms`, `1.5s`, `59.558s`, `6m0s`, `1h2m3s`, `0s`.
pub fn openai_duration(d: Duration) -> String {
    let total_ms = d.as_millis();
    if total_ms < 1000 {
        return match total_ms {
            0 => "0s".to_owned(),
            ms => format!("{ms}ms"),
        };
    }
    let (secs, ms) = (total_ms / 1000, total_ms % 1000);
    let (h, m, s) = (secs / 3600, secs % 3600 / 60, secs % 60);
    let mut sec_part = s.to_string();
    if ms != 0 {
        sec_part.push('.');
        sec_part.push_str(format!("{ms:03}").trim_end_matches('0'));
    }
    sec_part.push('s');
    match (h, m) {
        (0, 0) => sec_part,
        (0, m) => format!("{m}m{sec_part}"),
        (h, m) => format!("{h}h{m}m{sec_part}"),
    }
}

/// `retry-after` (whole seconds, rounded up, at least 1) and, for OpenAI,
/// `retry-after-ms` (exact, rounded up to the millisecond).
pub fn retry_after(provider: Provider, wait: Duration, out: &mut Vec<Header>) {
    out.push(header("retry-after", ceil_secs(wait).max(1).to_string()));
    if provider == Provider::OpenAi {
        out.push(header("retry-after-ms", ceil_millis(wait).to_string()));
    }
}

/// Which quantity a rate-limit window counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Window {
    /// Requests.
    Requests,
    /// Tokens (input and output).
    Tokens,
    /// Input tokens (Anthropic only).
    InputTokens,
    /// Output tokens (Anthropic only).
    OutputTokens,
}

impl Window {
    /// What one request of `call` takes from this window's bucket.
    pub fn cost(self, call: &super::call::Call) -> u64 {
        match self {
            Window::Requests => 1,
            Window::Tokens => call.tokens(),
            Window::InputTokens => call.input_tokens,
            Window::OutputTokens => call.output_tokens,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Window::Requests => "requests",
            Window::Tokens => "tokens",
            Window::InputTokens => "input-tokens",
            Window::OutputTokens => "output-tokens",
        }
    }
}

/// What a rate-limit window reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowState {
    /// The limit per minute.
    pub limit: u64,
    /// What is left now, rounded down.
    pub remaining: u64,
    /// How long until the bucket is full again.
    pub until_full: Duration,
}

/// One window's three headers. OpenAI: `x-ratelimit-{limit,remaining,reset}-{kind}`
/// with the reset as a span; Anthropic: `anthropic-ratelimit-{kind}-{limit,remaining,
/// reset}` with the reset as the RFC 3339 instant of full replenishment, rounded up to
/// the second (`wall` is now in Unix seconds). OpenAI has no input/output windows.
pub fn rate_limit(
    provider: Provider,
    window: Window,
    state: WindowState,
    wall: u64,
    out: &mut Vec<Header>,
) {
    let kind = window.name();
    match provider {
        Provider::OpenAi => {
            if matches!(window, Window::InputTokens | Window::OutputTokens) {
                return;
            }
            out.push((format!("x-ratelimit-limit-{kind}"), state.limit.to_string()));
            out.push((
                format!("x-ratelimit-remaining-{kind}"),
                state.remaining.to_string(),
            ));
            out.push((
                format!("x-ratelimit-reset-{kind}"),
                openai_duration(state.until_full),
            ));
        }
        Provider::Anthropic => {
            let at = wall.saturating_add(ceil_secs(state.until_full));
            out.push((
                format!("anthropic-ratelimit-{kind}-limit"),
                state.limit.to_string(),
            ));
            out.push((
                format!("anthropic-ratelimit-{kind}-remaining"),
                state.remaining.to_string(),
            ));
            out.push((
                format!("anthropic-ratelimit-{kind}-reset"),
                Rfc3339::utc(at).to_string(),
            ));
        }
    }
}

#[cfg(test)]
#[allow(clippy::arithmetic_side_effects)]
mod tests {
    use super::*;

    #[test]
    fn openai_durations() {
        let ms = Duration::from_millis;
        assert_eq!(openai_duration(ms(20)), "20ms");
        assert_eq!(openai_duration(ms(1500)), "1.5s");
        assert_eq!(openai_duration(ms(59_558)), "59.558s");
        assert_eq!(openai_duration(Duration::from_secs(360)), "6m0s");
        assert_eq!(openai_duration(ms(3_723_250)), "1h2m3.25s");
        assert_eq!(openai_duration(Duration::ZERO), "0s");
        assert_eq!(openai_duration(Duration::from_secs(1)), "1s");
        for d in [ms(20), ms(1500), ms(59_558), Duration::from_secs(360)] {
            let text = openai_duration(d);
            assert_eq!(steadfast_core::duration::parse(text.as_bytes()), Some(d));
        }
    }

    #[test]
    fn retry_after_rounds_up() {
        let mut h = Vec::new();
        retry_after(Provider::OpenAi, Duration::from_micros(558_500), &mut h);
        assert_eq!(
            h,
            [header("retry-after", "1"), header("retry-after-ms", "559")]
        );
        let mut h = Vec::new();
        retry_after(Provider::Anthropic, Duration::from_millis(1001), &mut h);
        assert_eq!(h, [header("retry-after", "2")]);
    }
}
