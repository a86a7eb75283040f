//! A started stream as an iterator of events.

use std::io::{self, Read};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread;
use std::time::Instant;

use steadfast_http::{Interruption, Next, Provider, SseEvent, TextEvent, TextFold, TextStep};

use crate::StreamError;
use crate::drive::Opened;

/// The events of a started stream: the first one (already received), then the rest
/// as they arrive (each `next` blocks until one does). After an `Err` (the stream was
/// interrupted; it carries the text so far) or the final event, it ends.
pub struct EventIter {
    opened: Option<Opened>,
    /// With a stall timeout: the body's pieces, read on their own thread, and the
    /// instant the next event is due by.
    pumped: Option<(Receiver<io::Result<Vec<u8>>>, Instant)>,
    buf: Vec<u8>,
    /// The API whose events it yields.
    shape: Provider,
}

impl std::fmt::Debug for EventIter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventIter").finish_non_exhaustive()
    }
}

impl EventIter {
    pub(crate) fn new(mut opened: Option<Opened>) -> EventIter {
        let shape = opened
            .as_ref()
            .map_or(Provider::OpenAi, |o| o.reader.handed_over());
        let pumped = opened.as_mut().and_then(pump);
        EventIter {
            opened,
            pumped,
            buf: vec![0u8; 8 * 1024],
            shape,
        }
    }

    /// The API whose events it yields: OpenAI's chunks for a canonical call, whoever
    /// answered it.
    pub fn shape(&self) -> Provider {
        self.shape
    }

    /// The stream read as text: each delta as it arrives, then the whole message
    /// ([`TextEvent::Done`]); an interruption ends it with the text so far.
    pub fn text(self) -> TextIter {
        TextIter {
            fold: TextFold::new(self.shape),
            events: self,
        }
    }

    /// Reads the whole stream and returns the events, stopping at the first error.
    pub fn collect_events(self) -> Result<Vec<SseEvent>, StreamError> {
        self.collect()
    }
}

/// What one read of the body gave.
enum Piece {
    /// `n` bytes, in the iterator's buffer.
    Bytes(usize),
    /// Bytes read on the pump's thread.
    Owned(Vec<u8>),
    /// The body ended.
    End,
    /// No event came within the stall timeout.
    Stalled,
    /// Reading failed.
    Failed(io::Error),
}

fn read_piece(body: &mut ureq::BodyReader<'static>, buf: &mut [u8]) -> Piece {
    match body.read(buf) {
        Ok(0) => Piece::End,
        Ok(n) => Piece::Bytes(n),
        Err(e) => Piece::Failed(e),
    }
}

/// The next piece from the pump's thread, waiting no later than `by`.
fn pumped_piece(rx: &Receiver<io::Result<Vec<u8>>>, by: Instant) -> Piece {
    match rx.recv_timeout(by.saturating_duration_since(Instant::now())) {
        Ok(Ok(bytes)) if bytes.is_empty() => Piece::End,
        Ok(Ok(bytes)) => Piece::Owned(bytes),
        Ok(Err(e)) => Piece::Failed(e),
        Err(RecvTimeoutError::Timeout) => Piece::Stalled,
        Err(RecvTimeoutError::Disconnected) => Piece::End,
    }
}

/// With a stall timeout, moves the body's reading to its own thread (a blocking read
/// cannot be given up on otherwise); the thread ends at the body's end, at a read
/// error, or once the iterator is gone (its next piece has nowhere to go). A read the
/// server never answers ends with the attempt's own timeout, which still bounds a
/// blocking stream as a whole.
fn pump(o: &mut Opened) -> Option<(Receiver<io::Result<Vec<u8>>>, Instant)> {
    let gap = o.stall?;
    let mut body = std::mem::replace(
        &mut o.body,
        ureq::Body::builder().data(Vec::new()).into_reader(),
    );
    let (tx, rx) = mpsc::sync_channel::<io::Result<Vec<u8>>>(16);
    let spawned = thread::Builder::new()
        .name("steadfast-stream-read".to_owned())
        .spawn(move || {
            let mut buf = vec![0u8; 8 * 1024];
            loop {
                let piece = match body.read(&mut buf) {
                    Ok(n) => Ok(buf.get(..n).unwrap_or_default().to_vec()),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => Err(e),
                };
                let last = !matches!(&piece, Ok(b) if !b.is_empty());
                if tx.send(piece).is_err() || last {
                    return;
                }
            }
        });
    // Without a thread the receiver is closed at once, and the stream ends as
    // unfinished: the body went with the thread that could not start.
    let _ = spawned;
    Some((rx, Instant::now() + gap))
}

/// A stream read as text (see [`EventIter::text`]).
#[derive(Debug)]
pub struct TextIter {
    events: EventIter,
    fold: TextFold,
}

impl Iterator for TextIter {
    type Item = Result<TextEvent, StreamError>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.fold.is_over() {
            match self.fold.step(self.events.next()) {
                TextStep::Yield(out) => return Some(out),
                TextStep::Skip => {}
                TextStep::End => return None,
            }
        }
        None
    }
}

impl Iterator for EventIter {
    type Item = Result<SseEvent, StreamError>;

    fn next(&mut self) -> Option<Self::Item> {
        let o = self.opened.as_mut()?;
        loop {
            let next = match o.reader.next_item() {
                Next::Read => {
                    let piece = match &self.pumped {
                        Some((rx, by)) => pumped_piece(rx, *by),
                        None => read_piece(&mut o.body, &mut self.buf),
                    };
                    match piece {
                        Piece::Bytes(n) => {
                            o.reader.push(self.buf.get(..n).unwrap_or_default());
                            continue;
                        }
                        Piece::Owned(bytes) => {
                            o.reader.push(&bytes);
                            continue;
                        }
                        Piece::End => o.reader.on_eof(),
                        Piece::Stalled => o.reader.on_error(Interruption::Stalled, None),
                        Piece::Failed(e) => {
                            let e = ureq::Error::from(e);
                            let cause = match e {
                                ureq::Error::Timeout(_) => Interruption::Timeout,
                                _ => Interruption::Cut,
                            };
                            o.reader.on_error(cause, Some(e))
                        }
                    }
                }
                next => next,
            };
            // Bytes that make no event (comments, filler) do not reset the stall.
            if let (Next::Item(Ok(_)), Some((_, by)), Some(gap)) =
                (&next, &mut self.pumped, o.stall)
            {
                *by = Instant::now() + gap;
            }
            return match next {
                Next::Item(item) => Some(item),
                Next::Read | Next::End => {
                    self.opened = None;
                    self.pumped = None;
                    None
                }
            };
        }
    }
}
