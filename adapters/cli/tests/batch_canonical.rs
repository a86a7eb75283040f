//! `steadfast batch` across providers: canonical lines (OpenAI Chat Completions
//! bodies) fail over from a down OpenAI endpoint to the strict Anthropic mock, and
//! every output line has one shape and names who served it.

mod support;

use serde_json::Value;
use support::*;

/// A config of a down OpenAI endpoint and an Anthropic one after it.
fn two_providers(
    tmp: &Tmp,
    down: &steadfast_mock::MockServer,
    up: &steadfast_mock::MockServer,
) -> String {
    let config = format!(
        "{FAST}\
         [[endpoint]]\nname = \"openai-primary\"\npriority = 0\nbase_url = \"{}\"\nkeys_env = [\"K1\"]\n\
         [[endpoint]]\nname = \"claude\"\npriority = 1\nprovider = \"anthropic\"\nmodel = \"claude-test\"\n\
         base_url = \"{}\"\nkeys_env = [\"K2\"]\n",
        down.base_url(),
        up.base_url()
    );
    tmp.write("two.toml", &config)
}

#[test]
fn with_openai_down_every_canonical_line_is_served_by_anthropic_in_one_shape() {
    let tmp = Tmp::new("canonical");
    let down = server("ok", 1, |_| {});
    down.set_down(true);
    let up = server("ok", 2, |_| {});
    let config = two_providers(&tmp, &down, &up);
    // OpenAI bodies with a system message and `stop`, without `max_tokens`: what the
    // Anthropic API refuses unless translated.
    let lines: String = (1..=20)
        .map(|i| {
            format!(
                "{{\"id\":\"c-{i}\",\"request\":{{\"model\":\"gpt-test\",\"stop\":[\"\\n\\n\"],\"messages\":[\
                 {{\"role\":\"system\",\"content\":\"Be brief.\"}},\
                 {{\"role\":\"user\",\"content\":\"say {i}\"}}]}}}}\n"
            )
        })
        .collect();
    let input = tmp.write("in.jsonl", &lines);
    let out = tmp.p("out.jsonl");
    let run = steadfast(
        &[
            "batch", "--input", &input, "--output", &out, "--config", &config, "--seed", "5",
        ],
        &[("K1", "sk-one"), ("K2", "sk-two")],
    )
    .ok();
    let results = all_ok(&tmp.path("out.jsonl"), "c", 20);
    for (id, line) in &results {
        let r = &line["response"];
        assert_eq!(r["object"], "chat.completion", "{id}: {line}");
        let n = id.trim_start_matches("c-");
        assert_eq!(
            r["choices"][0]["message"]["content"],
            format!("say {n}"),
            "{line}"
        );
        assert_eq!(line["served_by"]["endpoint"], "claude", "{line}");
        assert_eq!(line["served_by"]["provider"], "anthropic");
        assert_eq!(line["served_by"]["model"], "claude-test");
    }
    let s = up.stats();
    assert_eq!((s.processed, s.status(400)), (20, 0), "{s:?}");
    assert!(
        down.stats().total_requests > 0,
        "the OpenAI endpoint was tried"
    );
    assert!(run.stderr.contains("openai-primary"), "{}", run.stderr);
    at_most_once(&up, "c", 20);
}

#[test]
fn a_canonical_line_anthropic_cannot_express_is_bad_input_naming_the_field() {
    let tmp = Tmp::new("untranslatable");
    let down = server("ok", 1, |_| {});
    let up = server("ok", 2, |_| {});
    let config = two_providers(&tmp, &down, &up);
    let input = tmp.write(
        "in.jsonl",
        "{\"id\":\"good\",\"request\":{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}}\n\
         {\"id\":\"bad\",\"request\":{\"model\":\"m\",\"seed\":7,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}}\n",
    );
    let (out, dead) = (tmp.p("out.jsonl"), tmp.p("dead.jsonl"));
    let args = [
        "batch",
        "--input",
        &input,
        "--output",
        &out,
        "--config",
        &config,
        "--dead-letter",
        &dead,
    ];
    steadfast(&args, &[("K1", "sk-one"), ("K2", "sk-two")]).exits(3);
    let r = results(&tmp.path("out.jsonl"));
    assert_eq!(r["good"]["ok"], true, "{}", r["good"]);
    let bad = &r["bad"];
    assert_eq!(bad["ok"], false);
    assert_eq!(bad["error"]["class"], "bad_input", "{bad}");
    let message = bad["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("seed"), "{bad}");
    assert_eq!(bad["attempts"], 0);
    let dead = tmp.read("dead.jsonl");
    assert!(dead.contains("\"bad\""), "the line is kept: {dead}");
    let sent = |s: &steadfast_mock::MockServer| s.stats().total_requests;
    assert_eq!(sent(&down) + sent(&up), 1, "only the good line was sent");
}

#[test]
fn a_single_provider_batch_keeps_its_native_bodies() {
    let tmp = Tmp::new("native");
    let s = server("ok", 3, |_| {});
    let input = tmp.write(
        "in.jsonl",
        "{\"id\":\"n-1\",\"request\":{\"model\":\"m\",\"max_tokens\":32,\"messages\":[{\"role\":\"user\",\"content\":\"bonjour\"}]}}\n",
    );
    let out = tmp.p("out.jsonl");
    batch_at(
        &s.base_url(),
        &[
            "--provider",
            "anthropic",
            "--input",
            &input,
            "--output",
            &out,
        ],
    )
    .ok();
    let r = all_ok(&tmp.path("out.jsonl"), "n", 1);
    let line: &Value = &r["n-1"];
    assert_eq!(
        line["response"]["type"], "message",
        "an Anthropic body: {line}"
    );
    assert_eq!(line["served_by"]["provider"], "anthropic");
}
