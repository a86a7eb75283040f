//! STUB: filled in by the health work.
