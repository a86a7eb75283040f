//! The batch's durable files: the output, the journal and the dead-letter file, how they
//! are reconciled on start and in which order they are written.
//!
//! # Write order (one commit per batch of finished lines)
//!
//! 1. **Output**: the lines are appended with one `write`, then `fsync`ed.
//! 2. **Dead letters**: the failed lines among them, appended, `fsync`ed.
//! 3. **Journal**: one `{"id","ok"}` line per finished line, appended, `fsync`ed.
//!
//! Each file only ever grows by whole buffers appended at its end, so after a crash
//! (SIGKILL, power loss after the `fsync`s) each file is a prefix of what was written:
//! at most its last line is torn (it lacks its `\n`). And because each step starts only
//! after the one before it was durable, the journal never names a line the output lacks,
//! and the dead-letter file never holds a failure the output lacks... except for a
//! torn tail, which is repaired first.
//!
//! # Reconciliation on start
//!
//! The output's complete lines are the source of truth. A line is known by its
//! [`Key`]: its id, or the line number of a bad input line that has none of its own.
//!
//!
//! - **Output**: a torn last line is cut off (the file is truncated to the end of its
//!   last complete line). Its id is not finished, so it runs again, with the same
//!   idempotency key (derived from the id), and a server that honours the key replays
//!   its stored answer instead of doing the work twice. A complete line that is not a
//!   result, or an id found twice, is an error: the file was not written by us alone.
//! - **Journal**: rebuilt from the output (written to a temporary file, `fsync`ed,
//!   renamed over the old one) unless it already names exactly the output's ids. A
//!   journal entry with no output line can only come from a damaged output; its id
//!   runs again, so the output still ends with every id exactly once.
//! - **Dead letters**: a torn tail, lines whose id is not a failure in the output, and
//!   repeated ids are dropped (by the same rewrite); failures the output holds but the
//!   file lacks (the run died between steps 1 and 2, or `--dead-letter` is new) are
//!   appended when their input line is read again.
//!
//! With the output on stdout (`--output -`) there is nothing to read back: the journal
//! alone (when given) says which ids are finished, and a crash between writing a line
//! to stdout and journaling it repeats that line on the next run.

use std::collections::{HashMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde::de::DeserializeOwned;

use super::record::{Encoded, ErrorInfo, Head, IdOnly, Key, journal_line};

/// Where the batch writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Paths {
    /// The output file; `None` for stdout.
    pub output: Option<PathBuf>,
    /// The journal, if any.
    pub journal: Option<PathBuf>,
    /// The dead-letter file, if any.
    pub dead_letter: Option<PathBuf>,
}

/// What earlier runs finished, and what the reconciliation did.
#[derive(Debug, Default)]
pub struct Resume {
    /// Finished ids, with whether they succeeded.
    pub finished: HashMap<String, bool>,
    /// Finished bad lines known by their number ([`Key::Line`]; all failed).
    pub finished_lines: HashSet<u64>,
    /// Failed ids the dead-letter file lacks, with their error (appended when their
    /// input line is read).
    pub dead_missing: HashMap<String, ErrorInfo>,
    /// Failed lines known by their number that the dead-letter file lacks.
    pub dead_missing_lines: HashMap<u64, ErrorInfo>,
    /// What was repaired, one sentence each, for stderr.
    pub notes: Vec<String>,
}

impl Resume {
    /// Records a finished line; `false` when its key was already recorded.
    fn insert(&mut self, key: Key, ok: bool) -> bool {
        match key {
            Key::Id(id) => self.finished.insert(id, ok).is_none(),
            Key::Line(n) => self.finished_lines.insert(n),
        }
    }

    /// Whether a finished line succeeded; `None` when it is not finished.
    pub fn ok_of(&self, key: &Key) -> Option<bool> {
        match key {
            Key::Id(id) => self.finished.get(id).copied(),
            Key::Line(n) => self.finished_lines.contains(n).then_some(false),
        }
    }

    /// How many lines are finished.
    pub fn len(&self) -> usize {
        self.finished.len() + self.finished_lines.len()
    }

    /// Whether no line is finished.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A file that cannot be used.
#[derive(Debug)]
pub struct StoreError {
    /// What went wrong, naming the file (and line).
    pub message: String,
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for StoreError {}

fn io_err(path: &Path, what: &str, e: &io::Error) -> StoreError {
    StoreError {
        message: format!("cannot {what} {}: {e}", path.display()),
    }
}

enum Sink {
    File(File),
    Stdout,
}

/// The open files, ready for appending.
pub struct Files {
    output: Sink,
    journal: Option<File>,
    dead: Option<File>,
    /// Reused between commits.
    buf: Vec<u8>,
}

impl std::fmt::Debug for Files {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Files").finish_non_exhaustive()
    }
}

/// The complete lines of a file, and where its last complete line ends.
struct Scan<T> {
    entries: Vec<T>,
    /// The end of the last complete line that parsed.
    good_len: u64,
    /// The file's length.
    len: u64,
    /// The first complete line that did not parse (1-based).
    bad_line: Option<u64>,
}

fn scan<T: DeserializeOwned>(file: &mut File) -> io::Result<Scan<T>> {
    file.seek(SeekFrom::Start(0))?;
    let len = file.metadata()?.len();
    let mut reader = BufReader::new(&mut *file);
    let mut s = Scan {
        entries: Vec::new(),
        good_len: 0,
        len,
        bad_line: None,
    };
    let mut buf = Vec::new();
    let mut line_no = 0u64;
    loop {
        buf.clear();
        let n = reader.read_until(b'\n', &mut buf)?;
        if n == 0 || buf.last() != Some(&b'\n') {
            break;
        }
        line_no += 1;
        match serde_json::from_slice::<T>(&buf) {
            Ok(v) => {
                s.entries.push(v);
                s.good_len += n as u64;
            }
            Err(_) => {
                s.bad_line = Some(line_no);
                break;
            }
        }
    }
    Ok(s)
}

fn open_rw(path: &Path) -> Result<File, StoreError> {
    OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .open(path)
        .map_err(|e| io_err(path, "open", &e))
}

/// Writes `bytes` to `path` atomically: a temporary file, `fsync`, rename, `fsync` of
/// the directory. Returns the file opened for appending.
fn replace(path: &Path, bytes: &[u8]) -> Result<File, StoreError> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let write = || -> io::Result<()> {
        let mut f = File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)?;
        sync_dir(path);
        Ok(())
    };
    write().map_err(|e| io_err(path, "rewrite", &e))?;
    open_rw(path)
}

/// `fsync`s the directory holding `path` so a rename or a new file survives a crash.
/// Best effort: some platforms cannot open a directory.
fn sync_dir(path: &Path) {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

#[derive(Deserialize)]
struct OutputHead {
    id: Option<String>,
    #[serde(default)]
    line: Option<u64>,
    ok: bool,
    #[serde(default)]
    error: Option<ErrorInfo>,
}

/// Opens the files and reconciles them (see the module docs).
pub fn open(paths: &Paths) -> Result<(Files, Resume), StoreError> {
    let mut resume = Resume::default();
    let mut failed_errors: HashMap<Key, ErrorInfo> = HashMap::new();
    let output = match &paths.output {
        None => Sink::Stdout,
        Some(path) => {
            let mut file = open_rw(path)?;
            let s: Scan<OutputHead> = scan(&mut file).map_err(|e| io_err(path, "read", &e))?;
            let keyless = s
                .entries
                .iter()
                .position(|h| h.id.is_none() && (h.line.is_none() || h.ok));
            let not_ours = s.bad_line.or(keyless.map(|i| i as u64 + 1));
            if let Some(line) = not_ours {
                return Err(StoreError {
                    message: format!(
                        "{}:{line}: not a result line; this file was not written by steadfast \
                         batch alone (move it away or pass another --output)",
                        path.display()
                    ),
                });
            }
            for (i, h) in s.entries.into_iter().enumerate() {
                let Some(key) = Key::of(h.id, h.line) else {
                    continue;
                };
                if !resume.insert(key.clone(), h.ok) {
                    return Err(StoreError {
                        message: format!(
                            "{}:{}: {key} appears twice; this file was not written by \
                             steadfast batch alone",
                            path.display(),
                            i + 1,
                        ),
                    });
                }
                if let (false, Some(e)) = (h.ok, h.error) {
                    failed_errors.insert(key, e);
                }
            }
            if s.good_len < s.len {
                file.set_len(s.good_len)
                    .and_then(|()| file.sync_all())
                    .map_err(|e| io_err(path, "repair", &e))?;
                resume.notes.push(format!(
                    "{}: cut a torn last line ({} bytes); its id runs again",
                    path.display(),
                    s.len - s.good_len
                ));
            }
            Sink::File(file)
        }
    };
    let journal = match &paths.journal {
        None => None,
        Some(path) => Some(reconcile_journal(
            path,
            paths.output.is_some(),
            &mut resume,
        )?),
    };
    let dead = match &paths.dead_letter {
        None => None,
        Some(path) => Some(reconcile_dead(path, &mut resume, failed_errors)?),
    };
    Ok((
        Files {
            output,
            journal,
            dead,
            buf: Vec::new(),
        },
        resume,
    ))
}

fn reconcile_journal(
    path: &Path,
    output_is_file: bool,
    resume: &mut Resume,
) -> Result<File, StoreError> {
    let mut file = open_rw(path)?;
    let s: Scan<Head> = scan(&mut file).map_err(|e| io_err(path, "read", &e))?;
    if !output_is_file {
        // The journal is the only record: trust its complete lines, cut the rest.
        for h in s.entries {
            let ok = h.ok;
            if let Some(key) = h.key() {
                resume.insert(key, ok);
            }
        }
        if s.good_len < s.len {
            file.set_len(s.good_len)
                .and_then(|()| file.sync_all())
                .map_err(|e| io_err(path, "repair", &e))?;
            resume.notes.push(format!(
                "{}: cut a torn or unreadable tail ({} bytes)",
                path.display(),
                s.len - s.good_len
            ));
        }
        return Ok(file);
    }
    let clean = s.good_len == s.len;
    let mut seen = HashSet::with_capacity(s.entries.len());
    let mut orphans = 0usize;
    let mut exact = clean;
    let had_entries = !s.entries.is_empty();
    for h in s.entries {
        let ok = h.ok;
        let Some(key) = h.key() else {
            exact = false;
            continue;
        };
        match resume.ok_of(&key) {
            Some(was) if was == ok && seen.insert(key) => {}
            Some(_) => exact = false,
            None => {
                exact = false;
                orphans += 1;
            }
        }
    }
    if exact && seen.len() == resume.len() {
        return Ok(file);
    }
    let buf = journal_of(resume);
    drop(file);
    let file = replace(path, &buf)?;
    if orphans > 0 {
        resume.notes.push(format!(
            "{}: {orphans} entries had no output line (the output was cut or replaced); \
             those ids run again",
            path.display()
        ));
    } else if had_entries || !clean {
        resume.notes.push(format!(
            "{}: rebuilt from the output ({} ids)",
            path.display(),
            resume.len()
        ));
    }
    Ok(file)
}

/// The journal naming exactly the finished lines: ids in order, then line numbers.
fn journal_of(resume: &Resume) -> Vec<u8> {
    let mut ids: Vec<(&String, &bool)> = resume.finished.iter().collect();
    ids.sort_unstable();
    let mut lines: Vec<u64> = resume.finished_lines.iter().copied().collect();
    lines.sort_unstable();
    let mut buf = Vec::with_capacity(resume.len() * 32);
    for (id, ok) in ids {
        journal_line(&mut buf, &Key::Id(id.clone()), *ok);
    }
    for n in lines {
        journal_line(&mut buf, &Key::Line(n), false);
    }
    buf
}

fn reconcile_dead(
    path: &Path,
    resume: &mut Resume,
    mut failed_errors: HashMap<Key, ErrorInfo>,
) -> Result<File, StoreError> {
    let mut file = open_rw(path)?;
    let s: Scan<IdOnly> = scan(&mut file).map_err(|e| io_err(path, "read", &e))?;
    let mut keep = Vec::with_capacity(s.entries.len());
    let mut have: HashSet<Key> = HashSet::new();
    for h in s.entries {
        let wanted = h
            .key()
            .filter(|k| resume.ok_of(k) == Some(false))
            .is_some_and(|k| have.insert(k));
        keep.push(wanted);
    }
    let dropped = keep.iter().filter(|k| !**k).count();
    failed_errors.retain(|key, _| !have.contains(key));
    for (key, e) in failed_errors {
        match key {
            Key::Id(id) => resume.dead_missing.insert(id, e),
            Key::Line(n) => resume.dead_missing_lines.insert(n, e),
        };
    }
    if dropped == 0 && s.good_len == s.len {
        return Ok(file);
    }
    // Copy the kept lines (their bytes as they are) into the replacement.
    file.seek(SeekFrom::Start(0))
        .map_err(|e| io_err(path, "read", &e))?;
    let mut reader = BufReader::new(&mut file);
    let mut out = Vec::new();
    let mut line = Vec::new();
    for k in &keep {
        line.clear();
        reader
            .read_until(b'\n', &mut line)
            .map_err(|e| io_err(path, "read", &e))?;
        if *k {
            out.extend_from_slice(&line);
        }
    }
    drop(reader);
    drop(file);
    let file = replace(path, &out)?;
    resume.notes.push(format!(
        "{}: dropped {dropped} lines with no failure in the output{}",
        path.display(),
        if s.good_len < s.len {
            " and a torn tail"
        } else {
            ""
        }
    ));
    Ok(file)
}

fn sync(file: &File) -> io::Result<()> {
    file.sync_data()
}

impl Files {
    /// Writes one batch in the documented order: output (durable), dead letters
    /// (durable), journal (durable). `extra_dead` holds dead-letter lines of failures
    /// finished by an earlier run.
    pub fn commit(&mut self, batch: &[Encoded], extra_dead: &[u8]) -> io::Result<()> {
        let buf = &mut self.buf;
        buf.clear();
        for f in batch {
            buf.extend_from_slice(&f.output);
        }
        match &mut self.output {
            Sink::File(file) => {
                file.write_all(buf)?;
                sync(file)?;
            }
            Sink::Stdout => {
                let mut s = io::stdout().lock();
                s.write_all(buf)?;
                s.flush()?;
            }
        }
        if let Some(dead) = &mut self.dead {
            buf.clear();
            buf.extend_from_slice(extra_dead);
            for f in batch {
                buf.extend_from_slice(&f.dead);
            }
            if !buf.is_empty() {
                dead.write_all(buf)?;
                sync(dead)?;
            }
        }
        if let Some(journal) = &mut self.journal {
            buf.clear();
            for f in batch {
                journal_line(buf, &f.key, f.ok);
            }
            journal.write_all(buf)?;
            sync(journal)?;
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;
