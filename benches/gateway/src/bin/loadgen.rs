//! The load generator of the gateway benchmark.
//!
//! - `loadgen latency --url GW [--direct UP] ...`: sequential requests over one
//!   keep-alive connection each, a gateway's interleaved with direct ones (so both see
//!   the same machine at the same moments); prints one summary line per target.
//! - `loadgen throughput --url GW --concurrency N ...`: N connections, each sending its
//!   next request as soon as the last one's answer is read, for a fixed time after a
//!   warm-up; prints requests/s and the error count.
//!
//! Every line printed on stdout is `name key=value ...`. Only 2xx answers count as
//! successes; any other status and any transport failure count as errors (the first few
//! are told on stderr).

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use clap::{Args, Parser, Subcommand};
use steadfast_gateway_bench::client::{Connection, Sent, Target};
use steadfast_gateway_bench::percentiles::{Summary, summarise};

/// The load generator of the gateway benchmark.
#[derive(Debug, Parser)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Worker threads (1: a current-thread runtime).
    #[arg(long, global = true, default_value_t = 1)]
    threads: usize,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Sequential latency, optionally interleaved with direct requests.
    Latency(LatencyArgs),
    /// Throughput at a fixed concurrency.
    Throughput(ThroughputArgs),
}

/// The request every mode sends.
#[derive(Debug, Args)]
struct RequestArgs {
    /// The base URL measured (`http://127.0.0.1:PORT[/prefix]`).
    #[arg(long)]
    url: String,
    /// The request path after the base URL's.
    #[arg(long, default_value = "/v1/chat/completions")]
    path: String,
    /// A `Name: value` header of every request (repeatable).
    #[arg(long = "header")]
    headers: Vec<String>,
    /// A header of the requests to --url only, not the direct ones (repeatable).
    #[arg(long = "url-header")]
    url_headers: Vec<String>,
    /// The JSON body (POST).
    #[arg(long)]
    body: String,
}

#[derive(Debug, Args)]
struct LatencyArgs {
    #[command(flatten)]
    request: RequestArgs,
    /// The upstream's base URL, requested directly between the --url requests.
    #[arg(long)]
    direct: Option<String>,
    /// Requests not recorded first (each target).
    #[arg(long, default_value_t = 200)]
    warmup: usize,
    /// Requests recorded (each target).
    #[arg(long, default_value_t = 2000)]
    requests: usize,
}

#[derive(Debug, Args)]
struct ThroughputArgs {
    #[command(flatten)]
    request: RequestArgs,
    /// Connections, each with one request in flight.
    #[arg(long)]
    concurrency: usize,
    /// Seconds of load not counted first.
    #[arg(long, default_value_t = 2.0)]
    warmup_seconds: f64,
    /// Seconds of load counted.
    #[arg(long, default_value_t = 10.0)]
    seconds: f64,
}

/// Errors told on stderr before the rest are only counted.
const ERRORS_TOLD: u64 = 3;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let rt = match steadfast_gateway_bench::runtime(cli.threads) {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("loadgen: cannot start a runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let done = match cli.command {
        Command::Latency(a) => rt.block_on(latency(a)),
        Command::Throughput(a) => rt.block_on(throughput(a)),
    };
    match done {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("loadgen: {e}");
            ExitCode::FAILURE
        }
    }
}

type Failure = Box<dyn std::error::Error>;

/// The base target (shared headers) and the measured one (with --url-header too).
fn targets(r: &RequestArgs, base: &str) -> Result<(Target, Target), Failure> {
    let shared = Target::new(base, &r.path, &r.headers, &r.body)?;
    let measured =
        Target::new(&r.url, &r.path, &r.headers, &r.body)?.with_headers(&r.url_headers)?;
    Ok((shared, measured))
}

/// The latencies of one target's sequential requests, and its errors.
struct Series {
    name: &'static str,
    connection: Connection,
    latencies: Vec<Duration>,
    errors: u64,
}

impl Series {
    fn new(name: &'static str, target: Target, capacity: usize) -> Series {
        Series {
            name,
            connection: Connection::new(target),
            latencies: Vec::with_capacity(capacity),
            errors: 0,
        }
    }

    async fn send(&mut self, record: bool) {
        let started = Instant::now();
        let ok = succeeded(self.connection.send().await, self.errors, self.name);
        let took = started.elapsed();
        if !ok {
            self.errors += 1;
        } else if record {
            self.latencies.push(took);
        }
    }

    fn report(mut self) {
        let errors = self.errors;
        match summarise(&mut self.latencies) {
            Some(s) => println!("{} {} errors={errors}", self.name, line(&s)),
            None => println!("{} count=0 errors={errors}", self.name),
        }
    }
}

fn line(s: &Summary) -> String {
    format!(
        "count={} p50_us={:.1} p99_us={:.1} mean_us={:.1} max_us={:.1}",
        s.count, s.p50_us, s.p99_us, s.mean_us, s.max_us
    )
}

async fn latency(a: LatencyArgs) -> Result<(), Failure> {
    let direct_base = a.direct.as_deref().unwrap_or(&a.request.url);
    let (direct, measured) = targets(&a.request, direct_base)?;
    let mut series = vec![Series::new("url", measured, a.requests)];
    if a.direct.is_some() {
        series.push(Series::new("direct", direct, a.requests));
    }
    for s in &mut series {
        s.connection.open().await?;
    }
    for i in 0..a.warmup + a.requests {
        // Alternate which goes first, so neither always follows the other.
        if i % 2 == 1 {
            series.reverse();
        }
        for s in &mut series {
            s.send(i >= a.warmup).await;
        }
        if i % 2 == 1 {
            series.reverse();
        }
    }
    for s in series {
        s.report();
    }
    Ok(())
}

/// Whether `sent` is a 2xx answer; tells the first errors of `name` on stderr.
fn succeeded(sent: std::io::Result<Sent>, errors_so_far: u64, name: &str) -> bool {
    let why = match sent {
        Ok(Sent::Answer(status)) if status.is_success() => return true,
        Ok(Sent::Answer(status)) => format!("status {status}"),
        Ok(Sent::Failed(e)) => format!("transport: {e}"),
        Err(e) => format!("connect: {e}"),
    };
    if errors_so_far < ERRORS_TOLD {
        eprintln!("loadgen: {name}: {why}");
    }
    false
}

/// The counters the connections of a throughput run share.
#[derive(Default)]
struct Counters {
    measuring: AtomicBool,
    stop: AtomicBool,
    ok: AtomicU64,
    errors: AtomicU64,
    /// Successes over the whole run (warm-up and closing too), to share out the CPU
    /// time the gateway spent over the run.
    all_ok: AtomicU64,
    told: AtomicU64,
}

async fn throughput(a: ThroughputArgs) -> Result<(), Failure> {
    let (_, target) = targets(&a.request, &a.request.url)?;
    let counters = Arc::new(Counters::default());
    let mut tasks = Vec::with_capacity(a.concurrency);
    for _ in 0..a.concurrency {
        let mut connection = Connection::new(target.clone());
        connection.open().await?;
        tasks.push(tokio::spawn(keep_sending(
            connection,
            Arc::clone(&counters),
        )));
    }
    tokio::time::sleep(Duration::from_secs_f64(a.warmup_seconds)).await;
    counters.measuring.store(true, Ordering::SeqCst);
    let started = Instant::now();
    tokio::time::sleep(Duration::from_secs_f64(a.seconds)).await;
    counters.measuring.store(false, Ordering::SeqCst);
    let window = started.elapsed().as_secs_f64();
    counters.stop.store(true, Ordering::SeqCst);
    for t in tasks {
        let _ = t.await;
    }
    let ok = counters.ok.load(Ordering::SeqCst);
    let errors = counters.errors.load(Ordering::SeqCst);
    let all_ok = counters.all_ok.load(Ordering::SeqCst);
    println!(
        "throughput concurrency={} seconds={window:.2} ok={ok} errors={errors} rps={:.0} all_ok={all_ok}",
        a.concurrency,
        ok as f64 / window
    );
    Ok(())
}

async fn keep_sending(mut connection: Connection, counters: Arc<Counters>) {
    while !counters.stop.load(Ordering::Relaxed) {
        let sent = connection.send().await;
        let connect_failed = sent.is_err();
        let told = counters.told.load(Ordering::Relaxed);
        let ok = succeeded(sent, told, "url");
        if !ok {
            counters.told.fetch_add(1, Ordering::Relaxed);
        }
        if ok {
            counters.all_ok.fetch_add(1, Ordering::Relaxed);
        }
        if counters.measuring.load(Ordering::Relaxed) {
            let counter = if ok { &counters.ok } else { &counters.errors };
            counter.fetch_add(1, Ordering::Relaxed);
        }
        if connect_failed {
            // A refused connection answers at once: do not spin on it.
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
}
