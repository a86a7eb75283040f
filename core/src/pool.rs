//! STUB: filled in by the pool work.
