//! Idempotency keys (one per logical call, the same on every attempt).
//!
//! STUB: the key type is written with the retry sequence; the store by the idempotency work.
