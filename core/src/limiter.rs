//! STUB: filled in by the limiter work.
