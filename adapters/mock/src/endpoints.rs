//! The scenario's endpoints as a client reaches them on the server.

use steadfast_core::provider::Provider;

use crate::server::MockServer;

/// The API key a client of the mock sends when it has none of its own; key `k > 0` of
/// an endpoint is this with `-k` appended.
pub const MOCK_KEY: &str = "sk-steadfast-mock-not-a-secret";

/// One endpoint of the scenario, served under `/{name}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MockEndpoint {
    /// The endpoint's name.
    pub name: String,
    /// Its API root: `http://127.0.0.1:PORT/{name}`.
    pub base_url: String,
    /// The wire format the scenario gives it.
    pub provider: Provider,
    /// Its priority (lower is preferred).
    pub priority: u8,
    /// One API key per key of the scenario's endpoint, in order ([`MOCK_KEY`],
    /// `MOCK_KEY-1`, …), each known to the server as that key.
    pub keys: Vec<String>,
}

impl MockServer {
    /// The scenario's endpoints, in order, as a client reaches them.
    pub fn endpoints(&self) -> Vec<MockEndpoint> {
        let base = self.base_url();
        self.scenario()
            .endpoints
            .iter()
            .map(|e| MockEndpoint {
                name: e.name.clone(),
                base_url: format!("{base}/{}", e.name),
                provider: e.api,
                priority: e.priority,
                keys: (0..e.keys)
                    .map(|k| match k {
                        0 => MOCK_KEY.to_owned(),
                        k => format!("{MOCK_KEY}-{k}"),
                    })
                    .collect(),
            })
            .collect()
    }
}
