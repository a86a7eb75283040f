//! The input side of a batch: reads lines, skips what an earlier run finished, reports
//! bad lines and turns them into `bad_input` results.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::Value;

use super::progress::{Counters, Reporter};
use super::record::{Encoded, Ending, ErrorInfo, Finished, dead_letter_line};
use crate::input::{InputLine, parse_line};

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
    pub no_id: u64,
    pub duplicates: u64,
    pub skipped: u64,
}

pub(super) struct Reader {
    pub name: String,
    pub input: BufReader<File>,
    pub finished: HashMap<String, bool>,
    pub dead_missing: HashMap<String, ErrorInfo>,
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
        self.counters.skipped.fetch_add(1, Ordering::Relaxed);
    }

    fn line(&mut self, bytes: &[u8]) -> Option<Next> {
        let line_no = self.line_no;
        let parsed = parse_line(line_no, bytes);
        let id: &str = match &parsed {
            Ok(l) => &l.id,
            Err(e) if e.is_blank() => return None,
            Err(e) => match &e.id {
                Some(id) => id,
                None => {
                    self.reporter.note(&format!("{}:{e}", self.name));
                    self.read.no_id += 1;
                    self.skip();
                    return None;
                }
            },
        };
        if self.seen.contains(id) {
            self.reporter.note(&format!(
                "{}:{line_no}: id {id:?} was used by an earlier line; this line is skipped",
                self.name
            ));
            self.read.duplicates += 1;
            self.skip();
            return None;
        }
        self.seen.insert(id.to_owned());
        if self.finished.contains_key(id) {
            self.read.skipped += 1;
            self.skip();
            let e = self.dead_missing.remove(id)?;
            let request = match &parsed {
                Ok(l) => Some(Value::Object(l.request.clone())),
                Err(_) => raw_request(bytes),
            };
            let mut buf = Vec::new();
            dead_letter_line(&mut buf, id, request.as_ref(), &e);
            return Some(Next::Msg(Msg::DeadOnly(buf)));
        }
        match parsed {
            Ok(line) => Some(Next::Line(line)),
            Err(e) => {
                self.reporter.note(&format!("{}:{e}", self.name));
                let message = format!("{}:{e}", self.name);
                let f = Finished {
                    id: e.id.unwrap_or_default(),
                    ending: Ending::Failed(ErrorInfo::bad_input(message)),
                    attempts: 0,
                    request: if self.keep_request {
                        raw_request(bytes)
                    } else {
                        None
                    },
                };
                Some(Next::Msg(Msg::Line(f.encode(self.keep_request), None)))
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
