//! The real async client, `steadfast-reqwest`, over loopback against the mock running
//! the scenario: each call arrives when the simulator's would, waits for one of the
//! load's concurrency slots in arrival order, and carries the same business id.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use steadfast_core::policy::Policy;
use steadfast_mock::{MockConfig, MockServer};
use steadfast_reqwest::{Client, EndpointDef};
use steadfast_upstream::Scenario;
use tokio::sync::{Mutex, Semaphore};

use super::figures::Figures;
use super::transitions;

/// The request every call sends: one prompt token and the rest of the load's tokens
/// asked for as output, as the simulator's client asks.
pub fn request(tokens: u64) -> serde_json::Value {
    serde_json::json!({
        "model": "m",
        "max_tokens": tokens.saturating_sub(1),
        "messages": [{"role": "user", "content": "x"}],
    })
}

/// Runs the scenario's load against the mock with `seed`; returns what happened.
pub fn run(scenario: &Scenario, policy: &Policy, seed: u64) -> Figures {
    transitions::capture();
    let _ = transitions::take(&[]);
    let config = MockConfig::new(scenario.clone()).with_seed(steadfast_sim::upstream_seed(seed));
    let server = MockServer::start(config).expect("the mock starts");
    let mut builder = Client::builder()
        .policy(policy.clone())
        .seed(steadfast_sim::engine_seed(seed));
    for e in server.endpoints() {
        let keys = e.keys.clone();
        builder = builder.endpoint(
            EndpointDef::new(e.base_url, e.provider, "")
                .keys(keys)
                .priority(e.priority),
        );
    }
    let client = builder.build().expect("the client builds");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let endings = runtime.block_on(drive(&client, scenario, seed));
    drop(runtime);
    let names: Vec<String> = scenario.endpoints.iter().map(|e| e.name.clone()).collect();
    let transitions = transitions::take(&names);
    let mut give_ups = BTreeMap::new();
    for reason in endings.iter().flatten() {
        *give_ups.entry(reason.clone()).or_insert(0) += 1;
    }
    let stats = server.stats();
    Figures {
        calls: endings.len() as u64,
        succeeded: endings.iter().filter(|e| e.is_none()).count() as u64,
        requests: stats.total_requests,
        opens: transitions.iter().filter(|t| t.ends_with(">open")).count() as u64,
        transitions: Some(transitions),
        give_ups,
    }
}

/// Every call, started at its arrival instant once a slot is free; per call its
/// give-up reason, or none for a success.
async fn drive(client: &Client, scenario: &Scenario, seed: u64) -> Vec<Option<String>> {
    let load = &scenario.load;
    let slots = Arc::new(Semaphore::new(load.concurrency as usize));
    let endings = Arc::new(Mutex::new(vec![None; load.calls as usize]));
    let start = tokio::time::Instant::now();
    let mut tasks = Vec::new();
    for (i, at) in steadfast_sim::arrival_instants(scenario, seed)
        .into_iter()
        .enumerate()
    {
        tokio::time::sleep_until(start + Duration::from_nanos(at.as_nanos())).await;
        let permit = Arc::clone(&slots).acquire_owned().await.expect("open");
        let (client, endings) = (client.clone(), Arc::clone(&endings));
        let id = load.id(i as u64).unwrap_or_else(|| format!("call-{i}"));
        let body = request(load.tokens);
        tasks.push(tokio::spawn(async move {
            let ending = match client.chat_with(&id, body).await {
                Ok(_) => None,
                Err(e) => Some(e.reason.name().to_owned()),
            };
            endings.lock().await[i] = ending;
            drop(permit);
        }));
    }
    for t in tasks {
        t.await.expect("a call task");
    }
    Arc::try_unwrap(endings).expect("all done").into_inner()
}
