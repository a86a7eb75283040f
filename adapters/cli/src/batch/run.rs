//! The reader, the dispatcher and the writer of one batch.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde_json::Value;
use steadfast_reqwest::Client;
use tokio::sync::{Semaphore, mpsc};
use tokio::task::JoinSet;

use super::progress::{self, Counters, Reporter};
use super::record::{Ending, ErrorInfo, Finished, dead_letter_line};
use super::store::{self, Files};
use super::summary::{Summary, Tally};
use super::{Options, RunError};
use crate::input::{InputLine, parse_line};

/// What the writer receives.
enum Msg {
    /// A finished line, with its latency when it ran.
    Line(Finished, Option<Duration>),
    /// A dead-letter line for a failure an earlier run finished.
    DeadOnly(Vec<u8>),
}

/// What the reader counted.
#[derive(Default)]
struct Read {
    no_id: u64,
    duplicates: u64,
    skipped: u64,
}

/// Runs a batch to its end (or to a signal). Returns the summary; the caller prints it.
pub fn run(opts: Options) -> Result<Summary, RunError> {
    let started = Instant::now();
    let input_name = opts.input.display().to_string();
    let input = File::open(&opts.input)
        .map_err(|e| RunError::Setup(format!("cannot read {input_name}: {e}")))?;
    let total = count_lines(&input)
        .map_err(|e| RunError::Setup(format!("cannot read {input_name}: {e}")))?;
    let mut builder = Client::builder().policy(opts.policy.clone());
    for e in &opts.endpoints {
        builder = builder.endpoint(e.clone());
    }
    if let Some(seed) = opts.seed {
        builder = builder.seed_u64(seed);
    }
    let client = builder
        .build()
        .map_err(|e| RunError::Setup(format!("cannot set up the client: {e}")))?;
    let (files, resume) = store::open(&opts.paths).map_err(|e| RunError::Setup(e.to_string()))?;

    let counters = Arc::new(Counters::default());
    counters.total.store(total, Ordering::Relaxed);
    let metrics_client = client.clone();
    let (reporter, display) = progress::start(opts.progress, Arc::clone(&counters), move || {
        metrics_client.metrics()
    });
    for note in &resume.notes {
        reporter.note(note);
    }

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| RunError::Setup(format!("cannot start the runtime: {e}")))?;
    let concurrency = opts.concurrency.max(1);
    let (work_tx, work_rx) = mpsc::channel::<InputLine>(concurrency);
    let (msg_tx, msg_rx) = mpsc::channel::<Msg>(concurrency.saturating_mul(4).max(64));
    let keep_request = opts.paths.dead_letter.is_some();

    let writer = {
        let counters = Arc::clone(&counters);
        std::thread::Builder::new()
            .name("steadfast-writer".into())
            .spawn(move || write_all(files, msg_rx, &counters))
            .map_err(|e| RunError::Setup(format!("cannot start the writer: {e}")))?
    };
    let reader = {
        let msg_tx = msg_tx.clone();
        let reporter = reporter.clone();
        let counters = Arc::clone(&counters);
        std::thread::Builder::new()
            .name("steadfast-reader".into())
            .spawn(move || {
                let mut r = Reader {
                    name: input_name,
                    finished: resume.finished,
                    dead_missing: resume.dead_missing,
                    seen: HashSet::new(),
                    work: work_tx,
                    msgs: msg_tx,
                    reporter,
                    counters,
                    keep_request,
                    read: Read::default(),
                };
                r.run(input).map(|()| r.read)
            })
            .map_err(|e| RunError::Setup(format!("cannot start the reader: {e}")))?
    };

    let interrupted = runtime.block_on(dispatch(
        client.clone(),
        work_rx,
        msg_tx,
        concurrency,
        keep_request,
    ));
    let read = reader.join();
    let written = writer.join();
    display.finish();
    drop(runtime);

    let read = match read {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => {
            return Err(RunError::Io(format!(
                "cannot read {}: {e}",
                opts.input.display()
            )));
        }
        Err(_) => return Err(RunError::Io("the reader thread panicked".into())),
    };
    let mut tally = match written {
        Ok(Ok(t)) => t,
        Ok(Err(e)) => return Err(RunError::Io(format!("cannot write the results: {e}"))),
        Err(_) => return Err(RunError::Io("the writer thread panicked".into())),
    };
    tally.no_id = read.no_id;
    tally.duplicates = read.duplicates;
    tally.skipped = read.skipped;
    Ok(Summary {
        tally,
        metrics: client.metrics(),
        wall: started.elapsed(),
        interrupted,
    })
}

/// Non-blank lines, for the progress bar.
fn count_lines(file: &File) -> io::Result<u64> {
    let mut reader = BufReader::with_capacity(1 << 16, file);
    let mut n = 0u64;
    let mut line = Vec::new();
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line)? == 0 {
            break;
        }
        if !line.trim_ascii().is_empty() {
            n += 1;
        }
    }
    let mut f = file;
    io::Seek::seek(&mut f, io::SeekFrom::Start(0))?;
    Ok(n)
}

struct Reader {
    name: String,
    finished: HashMap<String, bool>,
    dead_missing: HashMap<String, ErrorInfo>,
    seen: HashSet<String>,
    work: mpsc::Sender<InputLine>,
    msgs: mpsc::Sender<Msg>,
    reporter: Reporter,
    counters: Arc<Counters>,
    keep_request: bool,
    read: Read,
}

impl Reader {
    fn run(&mut self, input: File) -> io::Result<()> {
        let mut reader = BufReader::with_capacity(1 << 16, input);
        let mut buf = Vec::new();
        let mut line_no = 0u64;
        loop {
            buf.clear();
            if reader.read_until(b'\n', &mut buf)? == 0 {
                return Ok(());
            }
            line_no += 1;
            if !self.line(line_no, &buf) {
                // The dispatcher or the writer stopped: nothing more will be taken.
                return Ok(());
            }
        }
    }

    fn skip(&mut self) {
        self.counters.skipped.fetch_add(1, Ordering::Relaxed);
    }

    /// Handles one line; false when nobody takes work any more.
    fn line(&mut self, line_no: u64, bytes: &[u8]) -> bool {
        let parsed = parse_line(line_no, bytes);
        let id = match &parsed {
            Ok(l) => l.id.clone(),
            Err(e) if e.is_blank() => return true,
            Err(e) => match &e.id {
                Some(id) => id.clone(),
                None => {
                    self.reporter.note(&format!("{}:{e}", self.name));
                    self.read.no_id += 1;
                    self.skip();
                    return true;
                }
            },
        };
        if !self.seen.insert(id.clone()) {
            self.reporter.note(&format!(
                "{}:{line_no}: id {id:?} was used by an earlier line; this line is skipped",
                self.name
            ));
            self.read.duplicates += 1;
            self.skip();
            return true;
        }
        if self.finished.contains_key(&id) {
            self.read.skipped += 1;
            self.skip();
            if let Some(e) = self.dead_missing.remove(&id) {
                let request = match &parsed {
                    Ok(l) => Some(Value::Object(l.request.clone())),
                    Err(_) => raw_request(bytes),
                };
                let mut buf = Vec::new();
                dead_letter_line(&mut buf, &id, request.as_ref(), &e);
                return self.msgs.blocking_send(Msg::DeadOnly(buf)).is_ok();
            }
            return true;
        }
        match parsed {
            Ok(line) => self.work.blocking_send(line).is_ok(),
            Err(e) => {
                self.reporter.note(&format!("{}:{e}", self.name));
                let f = Finished {
                    id,
                    ending: Ending::Failed(ErrorInfo::bad_input(format!("{}:{e}", self.name))),
                    attempts: 0,
                    request: if self.keep_request {
                        raw_request(bytes)
                    } else {
                        None
                    },
                };
                self.msgs.blocking_send(Msg::Line(f, None)).is_ok()
            }
        }
    }
}

/// The `"request"` of a line that is JSON but not a valid request, as it is.
fn raw_request(bytes: &[u8]) -> Option<Value> {
    match serde_json::from_slice::<Value>(bytes.trim_ascii()) {
        Ok(Value::Object(mut m)) => m.remove("request"),
        _ => None,
    }
}

/// Runs the lines; true when a signal interrupted the run.
async fn dispatch(
    client: Client,
    mut work: mpsc::Receiver<InputLine>,
    msgs: mpsc::Sender<Msg>,
    concurrency: usize,
    keep_request: bool,
) -> bool {
    let slots = Arc::new(Semaphore::new(concurrency));
    let mut tasks = JoinSet::new();
    let signal = crate::signal::shutdown();
    tokio::pin!(signal);
    let mut interrupted = loop {
        let permit = tokio::select! {
            biased;
            () = &mut signal => break true,
            () = msgs.closed() => break false,
            p = Arc::clone(&slots).acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => break false,
            },
        };
        let line = tokio::select! {
            biased;
            () = &mut signal => break true,
            l = work.recv() => match l {
                Some(l) => l,
                None => break false,
            },
        };
        let client = client.clone();
        let tx = msgs.clone();
        tasks.spawn(async move {
            let (f, latency) = one(&client, line, keep_request).await;
            let _ = tx.send(Msg::Line(f, Some(latency))).await;
            drop(permit);
        });
        while tasks.try_join_next().is_some() {}
    };
    // Whatever the reader still offers is left for the next run.
    drop(work);
    if !interrupted && !msgs.is_closed() {
        loop {
            tokio::select! {
                biased;
                () = &mut signal => {
                    interrupted = true;
                    break;
                }
                next = tasks.join_next() => if next.is_none() { break },
            }
        }
    }
    // Lines still running are dropped: their calls are cancelled, nothing of them is
    // written, and the next run runs them again with the same idempotency keys.
    tasks.shutdown().await;
    interrupted
}

/// One line through the client.
async fn one(client: &Client, line: InputLine, keep_request: bool) -> (Finished, Duration) {
    let request = Value::Object(line.request);
    let kept = keep_request.then(|| request.clone());
    let t0 = Instant::now();
    let result = client.chat_with(&line.id, request).await;
    let latency = t0.elapsed();
    let f = match result {
        Ok(reply) => Finished {
            id: line.id,
            ending: Ending::Ok(reply.body),
            attempts: reply.attempts,
            request: None,
        },
        Err(e) => Finished {
            id: line.id,
            ending: Ending::Failed(ErrorInfo::from_call(&e, |t| client.shared().redact(t))),
            attempts: e.attempts,
            request: kept,
        },
    };
    (f, latency)
}

/// The writer thread: commits batches of finished lines, then counts them.
fn write_all(
    mut files: Files,
    mut msgs: mpsc::Receiver<Msg>,
    counters: &Counters,
) -> io::Result<Tally> {
    const MAX_BATCH: usize = 4096;
    let mut tally = Tally::default();
    let mut lines: Vec<(Finished, Option<Duration>)> = Vec::new();
    let mut extra: Vec<u8> = Vec::new();
    let mut finished: Vec<Finished> = Vec::new();
    while let Some(first) = msgs.blocking_recv() {
        let mut next = Some(first);
        while let Some(m) = next.take() {
            match m {
                Msg::Line(f, l) => lines.push((f, l)),
                Msg::DeadOnly(b) => extra.extend_from_slice(&b),
            }
            if lines.len() < MAX_BATCH {
                next = msgs.try_recv().ok();
            }
        }
        let latencies: Vec<Option<Duration>> = lines.iter().map(|(_, l)| *l).collect();
        finished.extend(lines.drain(..).map(|(f, _)| f));
        files.commit(&finished, &extra)?;
        for (f, l) in finished.drain(..).zip(latencies) {
            tally.on_finished(&f, l);
            let c = if f.ok() {
                &counters.ok
            } else {
                &counters.failed
            };
            c.fetch_add(1, Ordering::Relaxed);
        }
        extra.clear();
    }
    Ok(tally)
}
