use super::*;
use crate::batch::record::{BadLine, Ending, Finished};

struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Dir {
        let d = std::env::temp_dir().join(format!("steadfast-store-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Dir(d)
    }

    fn paths(&self) -> Paths {
        Paths {
            output: Some(self.0.join("out.jsonl")),
            journal: Some(self.0.join("out.jsonl.journal")),
            dead_letter: Some(self.0.join("dead.jsonl")),
        }
    }

    fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.0.join(name)).unwrap_or_default()
    }

    fn write(&self, name: &str, text: &str) {
        std::fs::write(self.0.join(name), text).unwrap();
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn ok(id: &str) -> Encoded {
    Finished {
        key: Key::Id(id.into()),
        ending: Ending::Ok(serde_json::json!({"r": id}), None),
        attempts: 1,
        request: None,
        bad: None,
    }
    .encode(true)
}

fn failed(id: &str) -> Encoded {
    Finished {
        key: Key::Id(id.into()),
        ending: Ending::Failed(ErrorInfo::bad_input("boom".into())),
        attempts: 0,
        request: Some(serde_json::json!({"q": id})),
        bad: None,
    }
    .encode(true)
}

#[test]
fn a_fresh_start_then_a_rerun_sees_what_was_written() {
    let d = Dir::new("fresh");
    let (mut files, resume) = open(&d.paths()).unwrap();
    assert!(resume.finished.is_empty() && resume.notes.is_empty());
    files.commit(&[ok("a"), failed("b")], b"").unwrap();
    drop(files);
    let (_, resume) = open(&d.paths()).unwrap();
    assert_eq!(resume.finished.len(), 2);
    assert!(!resume.finished["b"]);
    assert!(resume.notes.is_empty(), "{:?}", resume.notes);
    assert!(resume.dead_missing.is_empty());
    assert_eq!(d.read("out.jsonl").lines().count(), 2);
    assert_eq!(d.read("out.jsonl.journal").lines().count(), 2);
    assert_eq!(d.read("dead.jsonl").lines().count(), 1);
}

#[test]
fn a_torn_output_line_is_cut_and_its_id_runs_again() {
    let d = Dir::new("torn");
    let (mut files, _) = open(&d.paths()).unwrap();
    files.commit(&[ok("a")], b"").unwrap();
    drop(files);
    let mut text = d.read("out.jsonl");
    text.push_str("{\"id\":\"b\",\"ok\":tr");
    d.write("out.jsonl", &text);
    let (mut files, resume) = open(&d.paths()).unwrap();
    assert_eq!(resume.finished.keys().collect::<Vec<_>>(), vec!["a"]);
    assert!(resume.notes[0].contains("torn"), "{:?}", resume.notes);
    files.commit(&[ok("b")], b"").unwrap();
    let out = d.read("out.jsonl");
    assert_eq!(out.lines().count(), 2);
    assert!(out.lines().all(|l| serde_json::from_str::<Head>(l).is_ok()));
}

#[test]
fn the_journal_is_rebuilt_from_the_output() {
    let d = Dir::new("journal");
    let (mut files, _) = open(&d.paths()).unwrap();
    files.commit(&[ok("a"), ok("b")], b"").unwrap();
    drop(files);
    // Died between the output and the journal: the journal lacks b, and is torn.
    d.write(
        "out.jsonl.journal",
        "{\"id\":\"a\",\"ok\":true}\n{\"id\":\"b\"",
    );
    let (_, resume) = open(&d.paths()).unwrap();
    assert_eq!(resume.finished.len(), 2);
    let j = d.read("out.jsonl.journal");
    assert_eq!(
        j,
        "{\"id\":\"a\",\"ok\":true}\n{\"id\":\"b\",\"ok\":true}\n"
    );
    // A journal naming an id the output lacks: the id runs again.
    d.write(
        "out.jsonl.journal",
        &format!("{j}{{\"id\":\"ghost\",\"ok\":true}}\n"),
    );
    let (_, resume) = open(&d.paths()).unwrap();
    assert!(!resume.finished.contains_key("ghost"));
    assert!(resume.notes.iter().any(|n| n.contains("no output line")));
    assert!(!d.read("out.jsonl.journal").contains("ghost"));
}

#[test]
fn dead_letters_follow_the_output() {
    let d = Dir::new("dead");
    let (mut files, _) = open(&d.paths()).unwrap();
    files.commit(&[failed("x"), failed("y")], b"").unwrap();
    drop(files);
    // y's dead letter was lost; a stray line for an id the output lacks, twice x, torn.
    let dl = d.read("dead.jsonl");
    let x = dl.lines().next().unwrap().to_owned();
    d.write(
        "dead.jsonl",
        &format!("{x}\n{{\"id\":\"zz\",\"request\":{{}}}}\n{x}\n{{\"id\":\"q"),
    );
    let (_, resume) = open(&d.paths()).unwrap();
    assert_eq!(d.read("dead.jsonl"), format!("{x}\n"));
    assert_eq!(resume.dead_missing.len(), 1);
    assert_eq!(resume.dead_missing["y"].class, "bad_input");
}

#[test]
fn a_foreign_output_file_is_refused() {
    let d = Dir::new("foreign");
    d.write("out.jsonl", "hello\n");
    let e = open(&d.paths()).unwrap_err();
    assert!(e.message.ends_with("out.jsonl:1: not a result line; this file was not written by steadfast batch alone (move it away or pass another --output)"), "{e}");
    d.write(
        "out.jsonl",
        "{\"id\":\"a\",\"ok\":true}\n{\"id\":\"a\",\"ok\":true}\n",
    );
    let e = open(&d.paths()).unwrap_err();
    assert!(e.message.contains(":2: id \"a\" appears twice"), "{e}");
}

#[test]
fn with_stdout_the_journal_is_the_record() {
    let d = Dir::new("stdout");
    let paths = Paths {
        output: None,
        journal: Some(d.0.join("j")),
        dead_letter: None,
    };
    d.write("j", "{\"id\":\"a\",\"ok\":true}\n{\"id\":\"b\",\"ok\":fa");
    let (_, resume) = open(&paths).unwrap();
    assert_eq!(resume.finished.len(), 1);
    assert_eq!(d.read("j"), "{\"id\":\"a\",\"ok\":true}\n");
}

fn keyless(line: u64) -> Encoded {
    Finished {
        key: Key::Line(line),
        ending: Ending::Failed(ErrorInfo::bad_input(format!("in:{line}: not JSON"))),
        attempts: 0,
        request: None,
        bad: Some(BadLine {
            line,
            raw: Some("{oops".into()),
        }),
    }
    .encode(true)
}

#[test]
fn bad_lines_without_an_id_are_known_by_their_number_across_reruns() {
    let d = Dir::new("keyless");
    let (mut files, _) = open(&d.paths()).unwrap();
    files
        .commit(&[ok("a"), keyless(2), keyless(4)], b"")
        .unwrap();
    drop(files);
    let (_, resume) = open(&d.paths()).unwrap();
    assert_eq!(resume.finished.len(), 1);
    assert_eq!(resume.finished_lines, HashSet::from([2, 4]));
    assert_eq!(resume.ok_of(&Key::Line(2)), Some(false));
    assert_eq!(resume.ok_of(&Key::Line(3)), None);
    assert!(resume.notes.is_empty(), "{:?}", resume.notes);
    assert!(resume.dead_missing_lines.is_empty());
    // The journal and the dead letters lost line 4: both are repaired from the output.
    let j = d.read("out.jsonl.journal");
    d.write("out.jsonl.journal", j.lines().next().unwrap());
    let dl = d.read("dead.jsonl");
    assert!(dl.contains("\"line\":2,\"raw\":\"{oops\""), "{dl}");
    d.write("dead.jsonl", &format!("{}\n", dl.lines().next().unwrap()));
    let (_, resume) = open(&d.paths()).unwrap();
    assert_eq!(d.read("out.jsonl.journal"), j);
    assert_eq!(
        resume.dead_missing_lines.keys().collect::<Vec<_>>(),
        vec![&4]
    );
    // An output line naming neither an id nor a line is not ours.
    d.write("out.jsonl", "{\"id\":null,\"ok\":false}\n");
    let e = open(&d.paths()).unwrap_err();
    assert!(e.message.contains("out.jsonl:1: not a result line"), "{e}");
    d.write(
        "out.jsonl",
        "{\"id\":null,\"line\":2,\"ok\":false}\n{\"id\":null,\"line\":2,\"ok\":false}\n",
    );
    let e = open(&d.paths()).unwrap_err();
    assert!(e.message.contains(":2: line 2 appears twice"), "{e}");
}

#[test]
fn with_stdout_the_journal_knows_bad_lines_by_their_number() {
    let d = Dir::new("stdout-keyless");
    let paths = Paths {
        output: None,
        journal: Some(d.0.join("j")),
        dead_letter: None,
    };
    let (mut files, _) = open(&paths).unwrap();
    files.commit(&[keyless(3)], b"").unwrap();
    drop(files);
    let (_, resume) = open(&paths).unwrap();
    assert_eq!(resume.finished_lines, HashSet::from([3]));
    assert_eq!(d.read("j"), "{\"id\":null,\"line\":3,\"ok\":false}\n");
}
