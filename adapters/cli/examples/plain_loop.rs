//! The benchmark's baseline: what `steadfast batch` does, minus steadfast. Reads the
//! same JSONL input, POSTs every request with plain reqwest at a fixed concurrency,
//! writes one `{"id","ok","response","attempts"}` line per id. No retries, no
//! journal, no fsync.
//!
//! ```text
//! cargo run --release -p steadfast-cli --example plain_loop -- BASE_URL INPUT OUTPUT [CONCURRENCY]
//! ```

use std::io::{BufRead, BufReader, BufWriter, Write};
use std::time::Instant;

use futures_util::StreamExt;
use serde_json::Value;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [base, input, output, rest @ ..] = args.as_slice() else {
        return Err("usage: plain_loop BASE_URL INPUT OUTPUT [CONCURRENCY]".into());
    };
    let concurrency: usize = rest.first().map_or(Ok(64), |c| c.parse())?;
    let url = format!("{}/v1/chat/completions", base.trim_end_matches('/'));
    let key = std::env::var("OPENAI_API_KEY").unwrap_or_else(|_| "sk-plain-loop".into());
    let auth = format!("Bearer {key}");
    let http = reqwest::Client::new();

    let started = Instant::now();
    let reader = BufReader::new(std::fs::File::open(input)?);
    let lines = reader
        .lines()
        .map_while(Result::ok)
        .filter(|l| !l.trim().is_empty());
    let mut results = futures_util::stream::iter(lines)
        .map(|line| {
            let (http, url, auth) = (http.clone(), url.clone(), auth.clone());
            // Spawned, so the requests spread over the runtime's worker threads.
            tokio::spawn(async move {
                let v: Value = serde_json::from_str(&line).ok()?;
                let id = v["id"].as_str()?.to_owned();
                let body = serde_json::to_vec(&v["request"]).ok()?;
                let resp = http
                    .post(&url)
                    .header("authorization", &auth)
                    .header("content-type", "application/json")
                    .header("idempotency-key", &id)
                    .body(body)
                    .send()
                    .await;
                let line = match resp {
                    Ok(r) if r.status().is_success() => {
                        let response: Value = r.json().await.unwrap_or(Value::Null);
                        serde_json::json!({"id": id, "ok": true, "response": response, "attempts": 1})
                    }
                    Ok(r) => serde_json::json!({"id": id, "ok": false,
                        "error": {"status": r.status().as_u16()}, "attempts": 1}),
                    Err(e) => serde_json::json!({"id": id, "ok": false,
                        "error": {"message": e.to_string()}, "attempts": 1}),
                };
                Some(line)
            })
        })
        .buffer_unordered(concurrency);
    let mut out = BufWriter::new(std::fs::File::create(output)?);
    let mut n = 0u64;
    while let Some(item) = results.next().await {
        if let Ok(Some(line)) = item {
            serde_json::to_writer(&mut out, &line)?;
            out.write_all(b"\n")?;
            n += 1;
        }
    }
    out.flush()?;
    let secs = started.elapsed().as_secs_f64();
    eprintln!(
        "plain_loop: {n} requests in {secs:.3}s ({:.0} requests/s)",
        n as f64 / secs
    );
    Ok(())
}
