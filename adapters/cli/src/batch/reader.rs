//! The input side of a batch: reads lines, skips what an earlier run finished, reports
//! bad lines and turns them into `bad_input` results.
//!
//! Every non-blank line that is not a request gets a result: one whose id no earlier
//! line used is known by that id; one with no readable id, or with an id an earlier
//! line used, by its line number (`"id": null, "line": N`), so that the output still
//! holds exactly one line per input line and a rerun recognises it.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::Value;

use super::progress::{Counters, Reporter};
use super::record::{BadLine, Encoded, Ending, ErrorInfo, Finished, Key, dead_letter_line};
use crate::input::{InputLine, LineError, parse_line, raw_request, raw_text};

/// What the writer receives.
pub(super) enum Msg {
    /// A finished line, with its latency when it ran.
    Line(Encoded, Option<Duration>),
    /// A dead-letter line for a failure an earlier run finished.
    DeadOnly(Vec<u8>),
}

/// What the reader hands on next.
pub(super) enum Next {
    /// A line to run.
    Line(InputLine),
    /// Something for the writer (a bad line's result, a missing dead letter).
    Msg(Msg),
    /// The input is over.
    End,
}

/// What the reader counted.
#[derive(Debug, Default)]
pub(super) struct Read {
    /// Bad lines with no readable id.
    pub no_id: u64,
    /// Lines whose id an earlier line used.
    pub duplicates: u64,
    /// Lines an earlier run finished.
    pub skipped: u64,
    /// Lines that are not requests (bad or repeated), this run's and earlier runs'.
    pub bad: u64,
}

pub(super) struct Reader {
    pub name: String,
    pub input: BufReader<File>,
    pub finished: HashMap<String, bool>,
    pub finished_lines: HashSet<u64>,
    pub dead_missing: HashMap<String, ErrorInfo>,
    pub dead_missing_lines: HashMap<u64, ErrorInfo>,
    pub seen: HashSet<String>,
    pub reporter: Reporter,
    pub counters: Arc<Counters>,
    pub keep_request: bool,
    pub read: Read,
    pub line_no: u64,
    pub buf: Vec<u8>,
}

impl Reader {
    /// Reads until there is something to hand on.
    pub fn next(&mut self) -> io::Result<Next> {
        loop {
            self.buf.clear();
            if self.input.read_until(b'\n', &mut self.buf)? == 0 {
                return Ok(Next::End);
            }
            self.line_no += 1;
            let bytes = std::mem::take(&mut self.buf);
            let next = self.line(&bytes);
            self.buf = bytes;
            if let Some(next) = next {
                return Ok(next);
            }
        }
    }

    fn skip(&mut self) {
        self.read.skipped += 1;
        self.counters.skipped.fetch_add(1, Ordering::Relaxed);
    }

    fn line(&mut self, bytes: &[u8]) -> Option<Next> {
        let line_no = self.line_no;
        let parsed = parse_line(line_no, bytes);
        let id = match &parsed {
            Ok(l) => Some(l.id.as_str()),
            Err(e) if e.is_blank() => return None,
            Err(e) => e.id.as_deref(),
        };
        let problem = match (id, &parsed) {
            (Some(id), _) if self.seen.contains(id) => {
                self.read.duplicates += 1;
                format!(
                    "{}:{line_no}: id {id:?} was used by an earlier line; this line is not run",
                    self.name
                )
            }
            (Some(id), _) => {
                self.seen.insert(id.to_owned());
                return self.keyed(parsed, bytes);
            }
            (None, Err(e)) => {
                self.read.no_id += 1;
                format!("{}:{e}", self.name)
            }
            // A good line always has an id.
            (None, Ok(_)) => return None,
        };
        self.read.bad += 1;
        if self.finished_lines.contains(&line_no) {
            self.skip();
            let e = self.dead_missing_lines.remove(&line_no)?;
            return Some(self.bad_dead_letter(&Key::Line(line_no), bytes, &e));
        }
        Some(self.bad(Key::Line(line_no), problem, bytes))
    }

    /// A line with an id no earlier line used: run it, or write it as bad input, unless
    /// an earlier run finished it.
    fn keyed(&mut self, parsed: Result<InputLine, LineError>, bytes: &[u8]) -> Option<Next> {
        self.read.bad += u64::from(parsed.is_err());
        let id = match &parsed {
            Ok(l) => &l.id,
            Err(e) => e.id.as_ref()?,
        };
        if self.finished.contains_key(id) {
            self.skip();
            let e = self.dead_missing.remove(id)?;
            let key = Key::Id(id.clone());
            return Some(match &parsed {
                Ok(l) => {
                    let mut buf = Vec::new();
                    let request = Value::Object(l.request.clone());
                    dead_letter_line(&mut buf, &key, Some(&request), &e, None);
                    Next::Msg(Msg::DeadOnly(buf))
                }
                Err(_) => self.bad_dead_letter(&key, bytes, &e),
            });
        }
        match parsed {
            Ok(line) => Some(Next::Line(line)),
            Err(e) => {
                let key = Key::Id(e.id.clone().unwrap_or_default());
                let message = format!("{}:{e}", self.name);
                Some(self.bad(key, message, bytes))
            }
        }
    }

    /// The result of a line that is not a request, for the writer; named on stderr.
    fn bad(&self, key: Key, message: String, bytes: &[u8]) -> Next {
        self.reporter.note(&message);
        let keep = self.keep_request;
        let f = Finished {
            key,
            ending: Ending::Failed(ErrorInfo::bad_input(message)),
            attempts: 0,
            request: if keep { raw_request(bytes) } else { None },
            bad: Some(BadLine {
                line: self.line_no,
                raw: keep.then(|| raw_text(bytes)),
            }),
        };
        Next::Msg(Msg::Line(f.encode(keep), None))
    }

    /// The dead letter of a bad line an earlier run wrote, which the file lacks.
    fn bad_dead_letter(&self, key: &Key, bytes: &[u8], e: &ErrorInfo) -> Next {
        let input = BadLine {
            line: self.line_no,
            raw: Some(raw_text(bytes)),
        };
        let mut buf = Vec::new();
        dead_letter_line(&mut buf, key, raw_request(bytes).as_ref(), e, Some(&input));
        Next::Msg(Msg::DeadOnly(buf))
    }
}
