//! Bad input, bad arguments and configuration, failover between endpoints, long server
//! hints, dead letters and stdout output.

mod support;

use support::*;

/// A request body the real APIs accept.
const REQUEST: &str = r#"{"model":"m","messages":[{"role":"user","content":"hi"}]}"#;

/// The flags naming the input, the output and the dead-letter file.
fn files<'a>(input: &'a str, out: &'a str, dead: &'a str) -> [&'a str; 6] {
    ["--input", input, "--output", out, "--dead-letter", dead]
}

#[test]
fn bad_lines_are_named_and_good_lines_still_run() {
    let tmp = Tmp::new("badinput");
    let s = server("ok", 1, |_| {});
    let good = |id: &str| format!("{{\"id\":\"{id}\",\"request\":{REQUEST}}}\n");
    let mut text = String::new();
    text += &good("g-1"); // 1
    text += "{\"id\": \"broken\", \"request\": {\n"; // 2: not JSON
    text += "{\"request\":{}}\n"; // 3: no id
    text += &good("g-1"); // 4: repeated id
    text += "{\"id\":\"no-request\"}\n"; // 5
    text += "\n"; // 6: blank, ignored
    text += "{\"id\":\"str-request\",\"request\":\"hello\"}\n"; // 7
    text += "[1,2]\n"; // 8
    text += &good("g-2"); // 9
    let input = tmp.write("input.jsonl", &text);
    let dead = tmp.p("dead.jsonl");
    let out = tmp.p("out.jsonl");
    let args = files(&input, &out, &dead);
    // Good lines ran; the bad ones make the exit status say so.
    let run = batch_at(&s.base_url(), &args).exits(EXIT_BAD_INPUT);
    let e = &run.stderr;
    for needle in [
        "input.jsonl:2: not JSON",
        "input.jsonl:3: missing \"id\"",
        "input.jsonl:4: id \"g-1\" was used by an earlier line",
        "input.jsonl:5: missing \"request\"",
        "input.jsonl:7: \"request\" must be a JSON object",
        "input.jsonl:8: not a JSON object",
    ] {
        assert!(e.contains(needle), "no `{needle}` in:\n{e}");
    }
    // One output line per non-blank input line: by id, or by number when the line
    // has no id of its own (none readable, or line 1's).
    let r = results(&tmp.path("out.jsonl"));
    assert_eq!(r.len(), 8, "{r:?}");
    assert_eq!(r["g-1"]["ok"], true);
    assert_eq!(r["g-2"]["ok"], true);
    for (id, line) in [
        ("no-request", 5),
        ("str-request", 7),
        ("line 2", 2),
        ("line 3", 3),
        ("line 4", 4),
        ("line 8", 8),
    ] {
        let l = &r[id];
        assert_eq!(l["ok"], false);
        assert_eq!(l["error"]["class"], "bad_input");
        assert_eq!(l["error"]["scope"], "request");
        assert!(l["error"]["status"].is_null());
        assert_eq!(l["attempts"], 0);
        assert_eq!(l["line"], line, "{l}");
    }
    assert!(r["line 4"]["id"].is_null());
    assert!(
        r["line 4"]["error"]["message"].as_str().unwrap().ends_with(
            "input.jsonl:4: id \"g-1\" was used by an earlier line; this line is not run"
        )
    );
    assert!(
        r["no-request"]["error"]["message"]
            .as_str()
            .unwrap()
            .ends_with("input.jsonl:5: missing \"request\"")
    );
    // Dead letters keep what the line had, ready to fix and resubmit.
    let dl = tmp.read("dead.jsonl");
    assert_eq!(dl.lines().count(), 6, "{dl}");
    assert!(dl.contains("{\"id\":\"str-request\",\"request\":\"hello\",\"error\":{"));
    assert!(
        dl.contains("\"line\":2,\"raw\":\"{\\\"id\\\": \\\"broken\\\", \\\"request\\\": {\"}"),
        "the raw line is kept: {dl}"
    );
    assert_eq!(summary_figure(e, "bad lines without an id"), 3);
    assert_eq!(summary_figure(e, "repeated ids (skipped)"), 1);
    assert!(
        e.contains("6 input lines are not requests"),
        "the summary says why the exit status is 3:\n{e}"
    );
    // A rerun adds nothing and loses nothing (and still says the input has bad lines).
    let before = tmp.read("out.jsonl");
    batch_at(&s.base_url(), &args).exits(EXIT_BAD_INPUT);
    assert_eq!(tmp.read("out.jsonl"), before);
    assert_eq!(tmp.read("dead.jsonl"), dl);
    assert_eq!(s.stats().processed, 2);
}

fn fails(args: &[&str], env: &[(&str, &str)], needle: &str) {
    let run = steadfast(args, env);
    assert_eq!(run.code, Some(2), "exit code for {args:?}\n{}", run.stderr);
    assert!(
        run.stderr.contains(needle),
        "no `{needle}` in:\n{}",
        run.stderr
    );
    assert!(run.stdout.is_empty());
}

#[test]
fn bad_arguments_and_configuration_exit_2_naming_the_problem() {
    let tmp = Tmp::new("badargs");
    let input = tmp.write("in.jsonl", &prompts("x", 2));
    let i = input.as_str();
    fails(
        &["batch", "--input", i, "--provider", "azure"],
        &[],
        "azure",
    );
    fails(&["batch", "--input", i], &[], "OPENAI_API_KEY");
    fails(
        &[
            "batch",
            "--input",
            i,
            "--provider",
            "anthropic",
            "--base-url",
            "http://127.0.0.1:9",
        ],
        &[],
        "ANTHROPIC_API_KEY",
    );
    fails(
        &[
            "batch",
            "--input",
            i,
            "--base-url",
            "http://127.0.0.1:9",
            "--api-key-env",
            "NOPE_VAR",
        ],
        &[],
        "--api-key-env NOPE_VAR: the environment variable is not set",
    );
    let missing = tmp.p("missing.toml");
    fails(
        &["batch", "--input", i, "--mock", "ok", "--config", &missing],
        &[],
        "missing.toml",
    );
    let bad = tmp.write("bad.toml", "[retry]\nmax_atempts = 3\n");
    fails(
        &["batch", "--input", i, "--mock", "ok", "--config", &bad],
        &[],
        "max_atempts",
    );
    let ep = tmp.write(
        "ep.toml",
        "[[endpoint]]\nbase_url = \"http://127.0.0.1:9\"\nkeys_env = [\"UNSET_VAR_1\"]\n",
    );
    fails(
        &["batch", "--input", i, "--config", &ep],
        &[],
        "endpoint 1: keys_env: environment variable UNSET_VAR_1 is not set",
    );
    let ep2 = tmp.write(
        "ep2.toml",
        "[[endpoint]]\nbase_url = \"http://x\"\nprovider = \"azure\"\nkeys_env = [\"A\"]\n",
    );
    fails(
        &["batch", "--input", i, "--config", &ep2],
        &[],
        "endpoint 1: unknown variant `azure`",
    );
    fails(
        &["batch", "--input", i, "--mock", "nosuch"],
        &[],
        "unknown scenario `nosuch`",
    );
    fails(
        &["batch", "--input", &tmp.p("none.jsonl"), "--mock", "ok"],
        &[],
        "none.jsonl",
    );
    fails(
        &["batch", "--input", i, "--mock", "ok", "--timeout", "soon"],
        &[],
        "not a duration",
    );
    fails(
        &["batch", "--input", i, "--mock", "ok", "--output", i],
        &[],
        "name the same file",
    );
}

#[test]
fn with_the_first_endpoint_down_every_line_succeeds_on_the_second() {
    let tmp = Tmp::new("failover");
    // Endpoint 1: nothing listens on this port.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_port = closed.local_addr().unwrap().port();
    drop(closed);
    // Endpoint 2: in an outage that never ends.
    let down = server("ok", 1, |_| {});
    down.set_down(true);
    let good = server("ok", 2, |_| {});
    let config = format!(
        "{FAST}\
         [[endpoint]]\npriority = 0\nbase_url = \"http://127.0.0.1:{dead_port}\"\nkeys_env = [\"K1\"]\n\
         [[endpoint]]\npriority = 1\nbase_url = \"{}/v1\"\nkeys_env = [\"K1\"]\n\
         [[endpoint]]\npriority = 2\nbase_url = \"{}/v1/\"\nkeys_env = [\"K2\"]\n",
        down.base_url(),
        good.base_url()
    );
    let config = tmp.write("two.toml", &config);
    let input = tmp.write("in.jsonl", &prompts("f", 30));
    let out = tmp.p("out.jsonl");
    let run = steadfast(
        &[
            "batch", "--input", &input, "--output", &out, "--config", &config, "--seed", "3",
        ],
        &[("K1", "sk-one"), ("K2", "sk-two")],
    )
    .ok();
    all_ok(&tmp.path("out.jsonl"), "f", 30);
    assert_eq!(good.stats().processed, 30);
    assert!(
        down.stats().total_requests > 0,
        "the outage endpoint was tried"
    );
    assert!(
        summary_figure(&run.stderr, "failovers") > 0,
        "{}",
        run.stderr
    );
    at_most_once(&good, "f", 30);
}

#[test]
fn a_retry_after_past_the_maximum_ends_the_line_at_once() {
    let tmp = Tmp::new("maxhint");
    let s = server("ok", 1, |c| {
        c.script = vec![Fault::status_retry_after(429, "30")];
    });
    let input = tmp.write("in.jsonl", &prompts("h", 1));
    let out = tmp.p("out.jsonl");
    batch_at(
        &s.base_url(),
        &[
            "--input",
            &input,
            "--output",
            &out,
            "--max-retry-after",
            "1s",
        ],
    )
    .ok();
    let r = results(&tmp.path("out.jsonl"));
    let l = &r["h-1"];
    assert_eq!(l["ok"], false, "{l}");
    assert_eq!(l["attempts"], 1);
    assert_eq!(l["error"]["status"], 429);
    assert_eq!(l["error"]["scope"], "throttle");
    assert_eq!(l["error"]["reason"], "hint_too_long");
    let msg = l["error"]["message"].as_str().unwrap();
    // What is left of the 30 s when the line gives up: under 30 s by however long
    // the machine took between the answer and the next decision.
    let waited = msg
        .strip_prefix("server asked to wait ")
        .and_then(|rest| rest.split(',').next())
        .and_then(|d| steadfast_core::duration::parse(d.as_bytes()))
        .unwrap_or_else(|| panic!("a wait in {msg}"));
    assert!(
        waited > std::time::Duration::from_secs(29) && waited <= std::time::Duration::from_secs(30),
        "{msg}"
    );
    assert_eq!(s.stats().total_requests, 1);
}

#[test]
fn dead_letters_resubmit_as_input() {
    let tmp = Tmp::new("deadletter");
    let s = server("auth", 1, |_| {});
    let input = tmp.write("in.jsonl", &prompts("d", 12));
    let (out, dead) = (tmp.p("out.jsonl"), tmp.p("dead.jsonl"));
    let base = s.base_url();
    let common = ["batch", "--base-url", base.as_str(), "--api-key-env", "K"];
    let mut first = common.to_vec();
    first.extend_from_slice(&["--input", &input, "--output", &out, "--dead-letter", &dead]);
    steadfast(&first, &[("K", "sk-revoked-1")]).ok();
    let r = results(&tmp.path("out.jsonl"));
    assert!(
        r.values()
            .all(|l| l["ok"] == false && l["error"]["scope"] == "key")
    );
    assert_eq!(tmp.read("dead.jsonl").lines().count(), 12);
    // The dead-letter file is an input as it is; with a good key every line succeeds.
    let out2 = tmp.p("out2.jsonl");
    let mut second = common.to_vec();
    second.extend_from_slice(&["--input", &dead, "--output", &out2]);
    steadfast(&second, &[("K", "sk-fine-2")]).ok();
    all_ok(&tmp.path("out2.jsonl"), "d", 12);
}

#[test]
fn output_to_stdout_with_a_journal_resumes_too() {
    let tmp = Tmp::new("stdout");
    let s = server("ok", 1, |_| {});
    let input = tmp.write("in.jsonl", &prompts("o", 8));
    let journal = tmp.p("j");
    let args = [
        "--input",
        input.as_str(),
        "--output",
        "-",
        "--journal",
        &journal,
        "-q",
    ];
    let run = batch_at(&s.base_url(), &args).ok();
    let lines: Vec<serde_json::Value> = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON on stdout"))
        .collect();
    assert_eq!(lines.len(), 8);
    assert!(lines.iter().all(|l| l["ok"] == true));
    assert!(!tmp.path("in.jsonl.out.jsonl").exists());
    let again = batch_at(&s.base_url(), &args).ok();
    assert!(again.stdout.is_empty());
    assert_eq!(s.stats().total_requests, 8);
}

#[test]
fn fixed_dead_letters_of_bad_lines_run_and_unfixed_ones_stay_bad() {
    let tmp = Tmp::new("fixbad");
    let s = server("ok", 1, |_| {});
    let text = "{\"id\":\"a\",\"request\":{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}}\n\
                {\"id\":\"b\",\"request\":{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}\n\
                {\"request\":{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}}\n\
                {\"id\":\"c\"}\n";
    let input = tmp.write("in.jsonl", text);
    let (out, dead) = (tmp.p("out.jsonl"), tmp.p("dead.jsonl"));
    let args = files(&input, &out, &dead);
    batch_at(&s.base_url(), &args).exits(EXIT_BAD_INPUT);
    let dl = tmp.read("dead.jsonl");
    assert_eq!(dl.lines().count(), 3, "{dl}");
    // The user fixes line 2 (its raw text) and line 3 (gives it an id); line 4 stays.
    let fixed: String = dl
        .lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            match v["line"].as_u64() {
                Some(2) => {
                    v["raw"] = "{\"id\":\"b\",\"request\":{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}}".into();
                }
                Some(3) => {
                    v["id"] = "d".into();
                }
                _ => {}
            }
            format!("{v}\n")
        })
        .collect();
    let fixed = tmp.write("fixed.jsonl", &fixed);
    let out2 = tmp.p("out2.jsonl");
    let again = ["--input", fixed.as_str(), "--output", &out2];
    batch_at(&s.base_url(), &again).exits(EXIT_BAD_INPUT);
    let r = results(&tmp.path("out2.jsonl"));
    assert_eq!(r.len(), 3, "{r:?}");
    assert_eq!(r["b"]["ok"], true);
    assert_eq!(r["d"]["ok"], true);
    assert_eq!(r["c"]["error"]["class"], "bad_input");
    assert_eq!(s.stats().processed, 3);
    // Once every line is fixed, the exit status is 0 again.
    let last = tmp.write(
        "last.jsonl",
        "{\"id\":\"c\",\"request\":{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}}\n",
    );
    let out3 = tmp.p("out3.jsonl");
    batch_at(&s.base_url(), &["--input", &last, "--output", &out3]).ok();
}

#[test]
fn a_dead_letter_file_added_on_a_rerun_gets_the_bad_lines_too() {
    let tmp = Tmp::new("latedead");
    let s = server("ok", 1, |_| {});
    let input = tmp.write("in.jsonl", "not json\n{\"id\":\"k\",\"request\":7}\n");
    let out = tmp.p("out.jsonl");
    batch_at(&s.base_url(), &["--input", &input, "--output", &out]).exits(EXIT_BAD_INPUT);
    let before = tmp.read("out.jsonl");
    let dead = tmp.p("dead.jsonl");
    let args = files(&input, &out, &dead);
    let run = batch_at(&s.base_url(), &args).exits(EXIT_BAD_INPUT);
    assert_eq!(tmp.read("out.jsonl"), before, "nothing is written twice");
    assert_eq!(summary_figure(&run.stderr, "done by an earlier run"), 2);
    let dl: Vec<serde_json::Value> = tmp
        .read("dead.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(dl.len(), 2, "{dl:?}");
    assert!(dl[0]["id"].is_null());
    assert_eq!(
        (dl[0]["line"].as_u64(), dl[0]["raw"].as_str()),
        (Some(1), Some("not json"))
    );
    assert_eq!(
        (dl[1]["id"].as_str(), dl[1]["line"].as_u64()),
        (Some("k"), Some(2))
    );
    assert_eq!(dl[1]["request"], 7);
    // A third run finds both dead letters in place and adds none.
    batch_at(&s.base_url(), &args).exits(EXIT_BAD_INPUT);
    assert_eq!(tmp.read("dead.jsonl").lines().count(), 2);
    assert_eq!(s.stats().total_requests, 0);
}
