//! A fixed-capacity FIFO for events: machines push, drivers drain with `poll_event`.
//! When a driver never drains, the oldest entries are dropped and counted, so memory
//! stays bounded whatever the caller does.

/// A ring of at most `N` entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ring<T: Copy, const N: usize> {
    slots: [Option<T>; N],
    head: usize,
    len: usize,
    dropped: u64,
}

impl<T: Copy, const N: usize> Default for Ring<T, N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Copy, const N: usize> Ring<T, N> {
    /// An empty ring.
    pub const fn new() -> Self {
        Ring {
            slots: [None; N],
            head: 0,
            len: 0,
            dropped: 0,
        }
    }

    /// Appends `item`, dropping the oldest entry when full.
    pub fn push(&mut self, item: T) {
        if N == 0 {
            self.dropped = self.dropped.saturating_add(1);
            return;
        }
        if self.len == N {
            self.pop();
            self.dropped = self.dropped.saturating_add(1);
        }
        let tail = self.head.wrapping_add(self.len).checked_rem(N).unwrap_or(0);
        if let Some(slot) = self.slots.get_mut(tail) {
            *slot = Some(item);
            self.len = self.len.saturating_add(1);
        }
    }

    /// Removes and returns the oldest entry.
    pub fn pop(&mut self) -> Option<T> {
        if self.len == 0 || N == 0 {
            return None;
        }
        let item = self.slots.get_mut(self.head).and_then(Option::take);
        self.head = self.head.wrapping_add(1).checked_rem(N).unwrap_or(0);
        self.len = self.len.saturating_sub(1);
        item
    }

    /// Entries waiting.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no entry waits.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Entries dropped because the ring was full.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }
}

#[cfg(test)]
mod tests {
    use super::Ring;

    #[test]
    fn fifo_and_drop_oldest() {
        let mut r: Ring<u32, 3> = Ring::new();
        assert_eq!(r.pop(), None);
        for i in 0..5 {
            r.push(i);
        }
        assert_eq!(r.dropped(), 2);
        assert_eq!(r.len(), 3);
        assert_eq!(
            (r.pop(), r.pop(), r.pop(), r.pop()),
            (Some(2), Some(3), Some(4), None)
        );
        r.push(9);
        assert_eq!(r.pop(), Some(9));
        assert!(r.is_empty());
    }
}
