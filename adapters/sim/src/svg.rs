//! The timeline picture: per endpoint, upstream requests per second as stacked bars
//! coloured by outcome class, outage windows shaded behind them, the breaker's state as
//! a band beneath; give-ups in a lane of their own; axes, a title and a legend. Several
//! runs (a comparison) are stacked as panels on one time axis.

use std::fmt::Write;

use steadfast_core::breaker::StateKind;

use crate::reply::OutcomeClass;
use crate::report::Report;
use crate::{Run, report};

const WIDTH: f64 = 1000.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 160.0;
const LANE: f64 = 120.0;
const BAND: f64 = 12.0;
const GIVE_UPS: f64 = 50.0;
const GAP: f64 = 30.0;

/// Outcome colours, in [`OutcomeClass::ALL`] order.
const CLASS_COLOURS: [&str; 5] = ["#43a047", "#ffb300", "#e53935", "#8e24aa", "#9e9e9e"];
const GIVE_UP_COLOUR: &str = "#212121";
const OUTAGE_COLOUR: &str = "#eceff1";

fn state_colour(s: StateKind) -> &'static str {
    match s {
        StateKind::Closed => "#c8e6c9",
        StateKind::Open => "#e53935",
        StateKind::HalfOpen => "#ffca28",
    }
}

/// A minimal SVG writer: elements appended to a string, text escaped.
#[derive(Debug, Default)]
pub struct Svg {
    body: String,
}

impl Svg {
    /// A filled rectangle.
    pub fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, fill: &str) {
        let _ = writeln!(
            self.body,
            r#"<rect x="{x:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="{fill}"/>"#,
            w.max(0.0),
            h.max(0.0)
        );
    }

    /// A line.
    pub fn line(&mut self, x1: f64, y1: f64, x2: f64, y2: f64, stroke: &str) {
        let _ = writeln!(
            self.body,
            r#"<line x1="{x1:.1}" y1="{y1:.1}" x2="{x2:.1}" y2="{y2:.1}" stroke="{stroke}" stroke-width="1"/>"#
        );
    }

    /// Text; `anchor` is `start`, `middle` or `end`.
    pub fn text(&mut self, x: f64, y: f64, size: f64, anchor: &str, weight: &str, s: &str) {
        let _ = writeln!(
            self.body,
            r#"<text x="{x:.1}" y="{y:.1}" font-size="{size}" text-anchor="{anchor}" font-weight="{weight}">{}</text>"#,
            escape(s)
        );
    }

    /// Text turned a quarter left, centred on `(x, y)`.
    pub fn vtext(&mut self, x: f64, y: f64, size: f64, s: &str) {
        let _ = writeln!(
            self.body,
            r#"<text x="{x:.1}" y="{y:.1}" font-size="{size}" text-anchor="middle" transform="rotate(-90 {x:.1} {y:.1})">{}</text>"#,
            escape(s)
        );
    }

    /// The document, `height` pixels tall.
    pub fn finish(self, height: f64) -> String {
        format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{height:.0}\" \
             viewBox=\"0 0 {WIDTH} {height:.0}\" font-family=\"Helvetica, Arial, sans-serif\">\n\
             <rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n{}</svg>\n",
            self.body
        )
    }
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A tick step of 1, 2 or 5 × a power of ten giving at most `ticks` steps up to `max`.
fn nice_step(max: f64, ticks: f64) -> f64 {
    let raw = (max / ticks).max(1e-9);
    let p = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * p)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * p)
}

fn fmt_num(v: f64) -> String {
    if (v - v.round()).abs() < 1e-9 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// Shared scales of all panels.
struct Scale {
    end_s: f64,
    plot_w: f64,
    /// Per endpoint: the y maximum in requests per second.
    lane_max: Vec<f64>,
    give_up_max: f64,
}

impl Scale {
    fn x(&self, t: f64) -> f64 {
        LEFT + (t / self.end_s).clamp(0.0, 1.0) * self.plot_w
    }
}

/// Renders one panel per run, stacked, on one time axis.
pub fn render(runs: &[(&Run, &Report)]) -> String {
    let Some((_, first)) = runs.first() else {
        return Svg::default().finish(10.0);
    };
    let lanes = first.timeline.endpoints.len();
    let mut scale = Scale {
        end_s: 1.0,
        plot_w: WIDTH - LEFT - RIGHT,
        lane_max: vec![1.0; lanes],
        give_up_max: 1.0,
    };
    for (_, r) in runs {
        let tl = &r.timeline;
        scale.end_s = scale.end_s.max(tl.give_ups.len() as f64 * tl.bucket_s);
        for (i, lane) in tl.endpoints.iter().enumerate() {
            let top = lane
                .buckets
                .iter()
                .map(|b| b.iter().sum::<u64>())
                .max()
                .unwrap_or(0);
            if let Some(m) = scale.lane_max.get_mut(i) {
                *m = m.max(top as f64 / tl.bucket_s);
            }
        }
        let g = tl.give_ups.iter().copied().max().unwrap_or(0) as f64 / tl.bucket_s;
        scale.give_up_max = scale.give_up_max.max(g);
    }
    for m in scale.lane_max.iter_mut().chain([&mut scale.give_up_max]) {
        let step = nice_step(*m, 4.0);
        *m = (*m / step).ceil() * step;
    }
    let mut svg = Svg::default();
    let title = if runs.len() == 1 {
        format!(
            "steadfast sim \u{2014} scenario {} \u{b7} policy {} \u{b7} seed {}",
            first.scenario, first.policy, first.seed
        )
    } else {
        let names: Vec<&str> = runs.iter().map(|(_, r)| r.policy.as_str()).collect();
        format!(
            "steadfast sim \u{2014} scenario {} \u{b7} policies {} \u{b7} seed {}",
            first.scenario,
            names.join(" vs "),
            first.seed
        )
    };
    svg.text(LEFT, 28.0, 18.0, "start", "bold", &title);
    legend(&mut svg);
    let mut y = 50.0;
    for (run, r) in runs {
        y = panel(&mut svg, &scale, run, r, y, runs.len() > 1);
    }
    axis(&mut svg, &scale, y);
    svg.finish(y + 45.0)
}

fn legend(svg: &mut Svg) {
    let x = WIDTH - RIGHT + 18.0;
    let mut y = 60.0;
    svg.text(x, y, 12.0, "start", "bold", "requests");
    for (c, colour) in OutcomeClass::ALL.iter().zip(CLASS_COLOURS) {
        y += 17.0;
        svg.rect(x, y - 10.0, 12.0, 12.0, colour);
        svg.text(x + 18.0, y, 12.0, "start", "normal", c.name());
    }
    y += 17.0;
    svg.rect(x, y - 10.0, 12.0, 12.0, OUTAGE_COLOUR);
    svg.text(x + 18.0, y, 12.0, "start", "normal", "outage window");
    y += 28.0;
    svg.text(x, y, 12.0, "start", "bold", "breaker");
    for s in [StateKind::Closed, StateKind::HalfOpen, StateKind::Open] {
        y += 17.0;
        svg.rect(x, y - 10.0, 12.0, 12.0, state_colour(s));
        svg.text(
            x + 18.0,
            y,
            12.0,
            "start",
            "normal",
            &report::state_name(s).replace('_', "-"),
        );
    }
    y += 28.0;
    svg.rect(x, y - 10.0, 12.0, 12.0, GIVE_UP_COLOUR);
    svg.text(x + 18.0, y, 12.0, "start", "normal", "give-ups");
}

/// One run: a subtitle, a lane per endpoint, the give-ups lane. Returns the next y.
fn panel(svg: &mut Svg, s: &Scale, run: &Run, r: &Report, mut y: f64, named: bool) -> f64 {
    y += 22.0;
    let head = format!(
        "{}{} calls \u{b7} {:.2}% succeeded \u{b7} {} upstream requests ({:.2} per call) \u{b7} p99 {:.2} s",
        if named {
            format!("policy {}: ", r.policy)
        } else {
            String::new()
        },
        r.calls,
        r.success_rate * 100.0,
        r.upstream_requests,
        r.amplification,
        r.latency_ms.p99 / 1000.0
    );
    svg.text(
        LEFT,
        y,
        13.0,
        "start",
        if named { "bold" } else { "normal" },
        &head,
    );
    y += 14.0;
    let tl = &r.timeline;
    let bw = s.plot_w * tl.bucket_s / s.end_s;
    for (i, lane) in tl.endpoints.iter().enumerate() {
        let top = y;
        let bottom = y + LANE;
        let max = s.lane_max.get(i).copied().unwrap_or(1.0);
        if let Some(spec) = run.scenario.endpoints.get(i) {
            for o in &spec.outages {
                let (x0, x1) = (s.x(o.start.as_secs_f64()), s.x(o.end.as_secs_f64()));
                svg.rect(x0, top, x1 - x0, LANE, OUTAGE_COLOUR);
            }
            // One label per window; windows with the same span share it.
            let mut spans: Vec<(core::time::Duration, core::time::Duration, Vec<String>)> =
                Vec::new();
            for o in &spec.outages {
                match spans
                    .iter_mut()
                    .find(|(a, b, _)| (*a, *b) == (o.start, o.end))
                {
                    Some((_, _, labels)) => labels.push(outage_label(o)),
                    None => spans.push((o.start, o.end, vec![outage_label(o)])),
                }
            }
            for (from, to, labels) in spans {
                let x = (s.x(from.as_secs_f64()) + s.x(to.as_secs_f64())) / 2.0;
                let label = format!("outage: {}", labels.join(" + "));
                svg.text(x, top + 14.0, 11.0, "middle", "normal", &label);
            }
        }
        y_axis(svg, top, bottom, max, "req/s");
        for (b, counts) in lane.buckets.iter().enumerate() {
            let x = s.x(b as f64 * tl.bucket_s);
            let mut base = bottom;
            for (n, colour) in counts.iter().zip(CLASS_COLOURS) {
                let h = *n as f64 / tl.bucket_s / max * LANE;
                svg.rect(x + 0.5, base - h, (bw - 1.0).max(0.5), h, colour);
                base -= h;
            }
        }
        svg.line(LEFT, bottom, LEFT + s.plot_w, bottom, "#616161");
        svg.text(LEFT + 6.0, top + 14.0, 12.0, "start", "bold", &lane.name);
        breaker_band(svg, s, run, i, bottom + 4.0);
        y = bottom + 4.0 + BAND + 16.0;
    }
    let (top, bottom) = (y, y + GIVE_UPS);
    y_axis(svg, top, bottom, s.give_up_max, "calls/s");
    for (b, n) in tl.give_ups.iter().enumerate() {
        let h = *n as f64 / tl.bucket_s / s.give_up_max * GIVE_UPS;
        svg.rect(
            s.x(b as f64 * tl.bucket_s) + 0.5,
            bottom - h,
            (bw - 1.0).max(0.5),
            h,
            GIVE_UP_COLOUR,
        );
    }
    svg.line(LEFT, bottom, LEFT + s.plot_w, bottom, "#616161");
    let gave_up: u64 = tl.give_ups.iter().sum();
    svg.text(
        LEFT + 6.0,
        top + 12.0,
        12.0,
        "start",
        "bold",
        &format!("give-ups ({gave_up})"),
    );
    bottom + GAP
}

fn outage_label(o: &crate::scenario::Outage) -> String {
    use crate::scenario::OutageKind;
    let what = match o.kind {
        OutageKind::Status => o
            .status
            .map_or_else(|| "overloaded".to_owned(), |s| s.to_string()),
        OutageKind::Timeout => "no answer".into(),
        OutageKind::Reset => "resets".into(),
        OutageKind::Refused => "refused".into(),
        OutageKind::Slow => "slow".into(),
    };
    if o.rate >= 1.0 {
        what
    } else {
        format!("{:.0}% {what}", o.rate * 100.0)
    }
}

fn y_axis(svg: &mut Svg, top: f64, bottom: f64, max: f64, unit: &str) {
    svg.line(LEFT, top, LEFT, bottom, "#616161");
    let step = nice_step(max, 4.0);
    let mut v = 0.0;
    while v <= max + 1e-9 {
        let y = bottom - v / max * (bottom - top);
        svg.line(LEFT - 4.0, y, LEFT, y, "#616161");
        if v > 0.0 {
            svg.line(LEFT, y, WIDTH - RIGHT, y, "#e0e0e0");
        }
        svg.text(LEFT - 7.0, y + 4.0, 11.0, "end", "normal", &fmt_num(v));
        v += step;
    }
    svg.vtext(LEFT - 42.0, (top + bottom) / 2.0, 11.0, unit);
}

fn breaker_band(svg: &mut Svg, s: &Scale, run: &Run, endpoint: usize, y: f64) {
    let mut state = StateKind::Closed;
    let mut since = 0.0;
    let mut segments = Vec::new();
    for (_, ev) in run
        .breaker
        .iter()
        .filter(|(e, _)| usize::from(e.0) == endpoint)
    {
        let at = ev.at.as_nanos() as f64 / 1e9;
        segments.push((since, at, state));
        state = ev.to;
        since = at;
    }
    segments.push((since, s.end_s, state));
    // Half-open spells often last milliseconds: drawn last and at least 2 px wide.
    segments.sort_by_key(|(_, _, st)| *st == StateKind::HalfOpen);
    for (from, to, st) in segments {
        let (x0, x1) = (s.x(from), s.x(to));
        let w = if st == StateKind::HalfOpen {
            (x1 - x0).max(2.0)
        } else {
            x1 - x0
        };
        svg.rect(x0, y, w, BAND, state_colour(st));
    }
    svg.text(LEFT - 7.0, y + BAND - 2.0, 10.0, "end", "normal", "breaker");
}

fn axis(svg: &mut Svg, s: &Scale, y: f64) {
    let y = y - GAP + 6.0;
    let step = nice_step(s.end_s, 10.0);
    let mut t = 0.0;
    while t <= s.end_s + 1e-9 {
        let x = s.x(t);
        svg.line(x, y - 4.0, x, y + 2.0, "#616161");
        svg.text(x, y + 15.0, 11.0, "middle", "normal", &fmt_num(t));
        t += step;
    }
    svg.text(
        LEFT + s.plot_w / 2.0,
        y + 32.0,
        12.0,
        "middle",
        "normal",
        "time since start (s)",
    );
}
