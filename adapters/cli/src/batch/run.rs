//! The reader, the dispatcher and the writer of one batch.

use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde_json::Value;
use steadfast_reqwest::Client;
use tokio::sync::{Notify, Semaphore, mpsc};
use tokio::task::JoinSet;

use super::ledger::{Ledger, Turn};
use super::progress::{self, Counters, Reading};
use super::reader::{Msg, Next, Reader};
use super::record::{Encoded, Ending, ErrorInfo, Finished, Key, REFUSED, Served};
use super::status;
use super::store::{self, Files};
use super::summary::{Summary, Tally};
use super::{Options, RunError};
use crate::input::InputLine;

/// Runs a batch to its end (or to a signal). Returns the summary; the caller prints it.
pub fn run(opts: Options) -> Result<Summary, RunError> {
    let started = Instant::now();
    let input_name = opts.input.display().to_string();
    let input = File::open(&opts.input)
        .map_err(|e| RunError::Setup(format!("cannot read {input_name}: {e}")))?;
    let total = count_lines(&input)
        .map_err(|e| RunError::Setup(format!("cannot read {input_name}: {e}")))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| RunError::Setup(format!("cannot start the runtime: {e}")))?;
    let mut builder = Client::builder().policy(opts.policy.clone());
    // A shared store's connection and the client's key sync live on this runtime.
    let inside = runtime.enter();
    let mut ledger = None;
    if let Some(entry) = &opts.shared {
        let store = crate::shared::store(entry, &opts.policy.shared).map_err(RunError::Setup)?;
        if entry.ledger {
            let (claim_for, fail) = (entry.claim_for(), opts.policy.shared.fail);
            let owner = crate::shared::owner("batch");
            ledger = Some(Arc::new(Ledger::new(store.clone(), owner, claim_for, fail)));
        }
        builder = builder.shared_store(store);
    }
    for e in &opts.endpoints {
        builder = builder.endpoint(e.clone());
    }
    if let Some(seed) = opts.seed {
        builder = builder.seed_u64(seed);
    }
    if opts.canonical {
        builder = builder.canonical(true);
    }
    let client = builder
        .build()
        .map_err(|e| RunError::Setup(format!("cannot set up the client: {e}")))?;
    drop(inside);
    let (files, resume) = store::open(&opts.paths).map_err(|e| RunError::Setup(e.to_string()))?;

    let counters = Arc::new(Counters::default());
    counters.total.store(total, Ordering::Relaxed);
    let read_client = client.clone();
    let names = opts.names.clone();
    let (reporter, display) =
        progress::start(opts.progress, Arc::clone(&counters), move || Reading {
            metrics: read_client.metrics(),
            endpoints: status::read(&read_client, &names),
        });
    for note in &resume.notes {
        reporter.note(note);
    }

    let concurrency = opts.concurrency.max(1);
    // Room for what finishes while the writer waits out COMMIT_EVERY or an fsync.
    let (msg_tx, msg_rx) = mpsc::channel::<Msg>(concurrency.saturating_mul(4).max(1024));
    let keep_request = opts.paths.dead_letter.is_some();

    let writer = {
        let counters = Arc::clone(&counters);
        std::thread::Builder::new()
            .name("steadfast-writer".into())
            .spawn(move || write_all(files, msg_rx, &counters))
            .map_err(|e| RunError::Setup(format!("cannot start the writer: {e}")))?
    };
    // The reader runs on the dispatcher's thread (the runtime's `block_on` thread, not
    // a worker): reading a line is quick, and no line crosses a thread before it runs.
    let reader = Reader {
        name: input_name,
        input: BufReader::with_capacity(1 << 16, input),
        finished: resume.finished,
        finished_lines: resume.finished_lines,
        dead_missing: resume.dead_missing,
        dead_missing_lines: resume.dead_missing_lines,
        seen: Default::default(),
        reporter: reporter.clone(),
        counters: Arc::clone(&counters),
        keep_request,
        read: Default::default(),
        line_no: 0,
        buf: Vec::new(),
    };
    let (interrupted, read) = runtime.block_on(dispatch(
        client.clone(),
        reader,
        msg_tx,
        concurrency,
        keep_request,
        ledger,
    ));
    let written = writer.join();
    display.finish();
    drop(runtime);

    let read = match read {
        Ok(r) => r,
        Err(e) => {
            return Err(RunError::Io(format!(
                "cannot read {}: {e}",
                opts.input.display()
            )));
        }
    };
    let mut tally = match written {
        Ok(Ok(t)) => t,
        Ok(Err(e)) => return Err(RunError::Io(format!("cannot write the results: {e}"))),
        Err(_) => return Err(RunError::Io("the writer thread panicked".into())),
    };
    tally.no_id = read.no_id;
    tally.duplicates = read.duplicates;
    tally.skipped = read.skipped;
    tally.bad = read.bad + tally.reasons.get(REFUSED).copied().unwrap_or(0);
    let retry = &opts.policy.retry;
    Ok(Summary {
        tally,
        metrics: client.metrics(),
        wall: started.elapsed(),
        interrupted,
        endpoints: status::read(&client, &opts.names),
        max_hold: retry.hold.then_some(retry.max_hold),
        dead_letter: opts.paths.dead_letter.clone(),
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

/// Reads and runs the lines; returns whether a signal interrupted the run, and what
/// the reader counted (or why it could not read on).
async fn dispatch(
    client: Client,
    mut reader: Reader,
    msgs: mpsc::Sender<Msg>,
    concurrency: usize,
    keep_request: bool,
    ledger: Option<Arc<Ledger>>,
) -> (bool, io::Result<super::reader::Read>) {
    let slots = Arc::new(Semaphore::new(concurrency));
    let mut tasks = JoinSet::new();
    // A signal closes the slots (so the loop below stops at once) and says so; the
    // hot loop itself waits on nothing but a free slot.
    let stop = Arc::new(Notify::new());
    let watcher = {
        let (slots, stop) = (Arc::clone(&slots), Arc::clone(&stop));
        tokio::spawn(async move {
            crate::signal::shutdown().await;
            slots.close();
            stop.notify_one();
        })
    };
    let mut read_error = None;
    let mut interrupted = loop {
        // The slots close only on a signal.
        let Ok(permit) = Arc::clone(&slots).acquire_owned().await else {
            break true;
        };
        if msgs.is_closed() {
            // The writer stopped (it failed): nothing more can be recorded.
            break false;
        }
        let line = match next_line(&mut reader, &msgs).await {
            Ok(Some(line)) => line,
            Ok(None) => break false,
            Err(e) => {
                read_error = Some(e);
                break false;
            }
        };
        let client = client.clone();
        let tx = msgs.clone();
        let ledger = ledger.clone();
        tasks.spawn(async move {
            let (f, latency) = one_shared(&client, ledger.as_deref(), line, keep_request).await;
            let encoded = f.encode(keep_request);
            let _ = tx.send(Msg::Line(encoded, Some(latency))).await;
            drop(permit);
        });
        while tasks.try_join_next().is_some() {}
    };
    if !interrupted && !msgs.is_closed() {
        loop {
            tokio::select! {
                biased;
                () = stop.notified() => {
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
    watcher.abort();
    let read = match read_error {
        Some(e) => Err(e),
        None => Ok(reader.read),
    };
    (interrupted, read)
}

/// The next line to run; results of bad lines go to the writer on the way. `None` at
/// the end of the input or when the writer is gone.
async fn next_line(reader: &mut Reader, msgs: &mpsc::Sender<Msg>) -> io::Result<Option<InputLine>> {
    loop {
        match reader.next()? {
            Next::Line(line) => return Ok(Some(line)),
            Next::Msg(m) => {
                if msgs.send(m).await.is_err() {
                    return Ok(None);
                }
            }
            Next::End => return Ok(None),
        }
    }
}

/// One line through the shared ledger (when there is one) and the client.
async fn one_shared(
    client: &Client,
    ledger: Option<&Ledger>,
    line: InputLine,
    keep_request: bool,
) -> (Finished, Duration) {
    let Some(ledger) = ledger else {
        return one(client, line, keep_request).await;
    };
    let t0 = Instant::now();
    let (turn, mut claim) = ledger.turn(&line.id).await;
    if let Turn::Done(answer) = turn {
        let done = Finished {
            key: Key::Id(line.id),
            ending: Ending::Ok(answer, None),
            attempts: 0,
            request: None,
            bad: None,
        };
        return (done, t0.elapsed());
    }
    let id = line.id.clone();
    let (f, latency) = tokio::select! {
        ran = one(client, line, keep_request) => ran,
        never = ledger.hold(&mut claim) => match never {},
    };
    let answer = match &f.ending {
        Ending::Ok(body, _) => Some(body),
        Ending::Failed(_) => None,
    };
    ledger.finish(&id, answer).await;
    (f, latency)
}

/// One line through the client.
async fn one(client: &Client, line: InputLine, keep_request: bool) -> (Finished, Duration) {
    let request = Value::Object(line.request);
    let kept = keep_request.then(|| request.clone());
    let t0 = Instant::now();
    let result = client.chat_with(&line.id, request).await;
    let latency = t0.elapsed();
    let f = match result {
        Ok(reply) => {
            let served = reply.served_by().map(Served::of);
            Finished {
                key: Key::Id(line.id),
                ending: Ending::Ok(reply.body, served),
                attempts: reply.attempts,
                request: None,
                bad: None,
            }
        }
        Err(e) => Finished {
            key: Key::Id(line.id),
            ending: Ending::Failed(ErrorInfo::from_call(&e, |t| client.shared().redact(t))),
            attempts: e.attempts,
            request: kept,
            bad: None,
        },
    };
    (f, latency)
}

/// The shortest span between two commits of the writer.
const COMMIT_EVERY: Duration = Duration::from_millis(10);

/// The writer thread: commits batches of finished lines, then counts them.
fn write_all(
    mut files: Files,
    mut msgs: mpsc::Receiver<Msg>,
    counters: &Counters,
) -> io::Result<Tally> {
    const MAX_BATCH: usize = 4096;
    let mut tally = Tally::default();
    let mut batch: Vec<Encoded> = Vec::new();
    let mut latencies: Vec<Option<Duration>> = Vec::new();
    let mut extra: Vec<u8> = Vec::new();
    let mut last_commit: Option<Instant> = None;
    while let Some(first) = msgs.blocking_recv() {
        // Group commit: at most one per COMMIT_EVERY, so a fast batch pays a few
        // hundred fsyncs a second, not one per line. Lines wait in the channel
        // meanwhile; none is written, so none can be lost or torn.
        // The wait ends early when the run is over (every sender gone) or enough
        // lines are queued.
        if let Some(t) = last_commit {
            while t.elapsed() < COMMIT_EVERY && !msgs.is_closed() && msgs.len() < MAX_BATCH / 8 {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        let mut next = Some(first);
        while let Some(m) = next.take() {
            match m {
                Msg::Line(f, l) => {
                    batch.push(f);
                    latencies.push(l);
                }
                Msg::DeadOnly(b) => extra.extend_from_slice(&b),
            }
            if batch.len() < MAX_BATCH {
                next = msgs.try_recv().ok();
            }
        }
        files.commit(&batch, &extra)?;
        last_commit = Some(Instant::now());
        for (f, l) in batch.drain(..).zip(latencies.drain(..)) {
            tally.on_finished(&f, l);
            let c = if f.ok { &counters.ok } else { &counters.failed };
            c.fetch_add(1, Ordering::Relaxed);
        }
        extra.clear();
    }
    Ok(tally)
}
