//! Typed canonical structs.
