//! Nothing here: see `tests/`.
