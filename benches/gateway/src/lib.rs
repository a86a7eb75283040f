//! The gateway benchmark's own tools (`benches/gateway/run.sh` drives them):
//!
//! - `upstream`: a fixed-answer HTTP/1.1 server, the cheapest possible upstream;
//! - `forward`: a plain forwarding proxy (hyper server, pooled hyper client), the floor
//!   every gateway is compared with;
//! - `loadgen`: sequential latency (a gateway's requests interleaved with direct ones)
//!   and throughput at a fixed concurrency over keep-alive connections.
//!
//! They listen on and talk to 127.0.0.1 only.

pub mod client;
pub mod percentiles;
pub mod server;

use std::io;

/// A tokio runtime with this many worker threads: one means a current-thread runtime
/// (no cross-thread wake-ups), more a multi-thread one. For the load generator and the
/// fixed-answer upstream.
pub fn runtime(threads: usize) -> io::Result<tokio::runtime::Runtime> {
    if threads <= 1 {
        return tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build();
    }
    multi_thread_runtime(threads)
}

/// A multi-thread tokio runtime with this many worker threads (at least one): the kind a
/// `#[tokio::main]` gateway runs on, so the floor pays what a gateway pays.
pub fn multi_thread_runtime(threads: usize) -> io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads.max(1))
        .enable_all()
        .build()
}
