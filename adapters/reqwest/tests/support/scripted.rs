//! The mock that answers a script of faults first and then as the `ok` scenario does.

use steadfast_mock::{Fault, MockConfig, MockServer};

/// The mock with `seed` (printed), answering `script` first.
pub fn mock(seed: u64, script: Vec<Fault>) -> MockServer {
    eprintln!("seed {seed:#x}");
    let config = MockConfig::builtin("ok")
        .expect("built-in")
        .with_seed(seed)
        .with_script(script);
    MockServer::start(config).expect("the mock starts")
}
