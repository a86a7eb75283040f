//! Runs many pseudo-random scenarios and prints which invariants break, how often, and
//! the smallest failing scenario of each (by operation count), plus coverage counts.
//!
//! `cargo run -p steadfast-tests --example explore -- [runs] [seed]`

use std::collections::BTreeMap;

use steadfast_core::retry::Finish;
use steadfast_tests::harness::{Checks, Harness, Invariant};
use steadfast_tests::ops::Scenario;

/// xorshift64*: enough to make bytes for a scenario.
fn bytes(state: &mut u64, len: usize) -> Vec<u8> {
    (0..len)
        .map(|_| {
            *state ^= *state >> 12;
            *state ^= *state << 25;
            *state ^= *state >> 27;
            (state.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 56) as u8
        })
        .collect()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let runs: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(2000);
    let mut state: u64 = args
        .get(2)
        .and_then(|a| a.parse().ok())
        .unwrap_or(0x9e37_79b9_7f4a_7c15);
    println!("runs {runs}, seed {state:#x}");
    let mut skip: Vec<Invariant> = Vec::new();
    let mut broken: BTreeMap<String, (usize, String)> = BTreeMap::new();
    let mut smallest: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    let mut finishes: BTreeMap<String, usize> = BTreeMap::new();
    let mut trips = 0u64;
    let mut sends = 0u64;
    for _ in 0..runs {
        let len = (bytes(&mut state, 2)[0] as usize) * 12;
        let data = bytes(&mut state, len);
        let scenario = Scenario::from_bytes(&data);
        match Harness::run(&scenario, Checks { skip: skip.clone() }) {
            Ok(h) => {
                for f in h.finishes().into_iter().flatten() {
                    let name = match f {
                        Finish::Success { .. } => "Success".to_owned(),
                        Finish::GaveUp(g) => g.reason.name().to_owned(),
                    };
                    *finishes.entry(name).or_default() += 1;
                }
                sends += u64::from(h.attempts_sent());
                let n = h.engine().pool().endpoint_count();
                for e in 0..n {
                    trips += h
                        .engine()
                        .breaker(steadfast_core::ids::EndpointId(e))
                        .map_or(0, |b| b.trips());
                }
            }
            Err(v) => {
                // Sub-kinds: the failure scope the broken check was about, when named.
                let scope = v
                    .detail
                    .split("scope: ")
                    .nth(1)
                    .and_then(|r| r.split(',').next())
                    .map_or(String::new(), |s| format!("/{s}"));
                let key = format!("{:?}{scope}", v.invariant);
                let shortest = shrink(&data, v.invariant, &skip);
                let best = smallest
                    .entry(key.clone())
                    .or_insert_with(|| shortest.clone());
                if shortest.len() < best.len() {
                    *best = shortest;
                }
                let text = format!(
                    "{v}\nsetup: {:?}\nops ({}): {:#?}",
                    scenario.setup,
                    v.step,
                    &scenario.ops[..v.step.min(scenario.ops.len())]
                );
                let e = broken.entry(key).or_insert((0, text.clone()));
                e.0 += 1;
                if v.step < e.1.matches('\n').count() {
                    e.1 = text;
                }
                if !skip.contains(&v.invariant) && std::env::var_os("EXPLORE_ALL").is_some() {
                    skip.push(v.invariant);
                }
            }
        }
    }
    println!("finishes: {finishes:?}");
    println!("sends {sends}, breaker trips {trips}");
    for (k, (n, text)) in &broken {
        println!("=== {k}: {n}\n{text}\n");
    }
    if let Some(dir) = std::env::var_os("EXPLORE_SAVE") {
        for (k, bytes) in &smallest {
            let path = std::path::Path::new(&dir).join(k.replace('/', "-"));
            std::fs::write(&path, bytes).expect("writable");
            println!("saved {} ({} bytes)", path.display(), bytes.len());
        }
    }
}

/// Still breaks `invariant` (with the other skipped ones skipped)?
fn breaks(data: &[u8], invariant: Invariant, skip: &[Invariant]) -> bool {
    let skip = skip.iter().copied().filter(|i| *i != invariant).collect();
    matches!(Harness::run(&Scenario::from_bytes(data), Checks { skip }), Err(v) if v.invariant == invariant)
}

/// Greedy shrinking: drop chunks of bytes, then zero bytes, while it still breaks.
fn shrink(data: &[u8], invariant: Invariant, skip: &[Invariant]) -> Vec<u8> {
    let mut best = data.to_vec();
    let mut chunk = best.len() / 2;
    while chunk > 0 {
        let mut i = 0;
        while i < best.len() {
            let mut next = best.clone();
            next.drain(i..(i + chunk).min(best.len()));
            if breaks(&next, invariant, skip) {
                best = next;
            } else {
                i += chunk;
            }
        }
        chunk /= 2;
    }
    for i in 0..best.len() {
        if best[i] != 0 {
            let mut next = best.clone();
            next[i] = 0;
            if breaks(&next, invariant, skip) {
                best = next;
            }
        }
    }
    best
}
