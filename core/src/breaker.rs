//! STUB: filled in by the breaker work.
