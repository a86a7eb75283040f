//! Every committed fuzz input (seed corpora and regressions) replayed through its
//! target's check function on stable: the corpora double as a regression suite.

use std::path::Path;

use steadfast_tests::fuzz::TARGETS;

fn files(dir: &Path) -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<_> = entries.map(|e| e.unwrap().path()).collect();
    files.sort();
    files
}

#[test]
fn every_committed_input_passes_its_target() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz");
    let mut replayed = 0;
    for (target, check) in TARGETS {
        let seeds = files(&root.join("corpus").join(target));
        assert!(!seeds.is_empty(), "no seed corpus for {target}");
        for file in seeds
            .iter()
            .chain(&files(&root.join("regressions").join(target)))
        {
            let data = std::fs::read(file).unwrap();
            let outcome = std::panic::catch_unwind(|| check(&data));
            assert!(outcome.is_ok(), "{} fails {target}", file.display());
            replayed += 1;
        }
    }
    println!("replayed {replayed} inputs");
    assert!(replayed >= 40);
}
