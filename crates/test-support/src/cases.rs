//! The TOML case loader of the behaviour tables, and the replay of
//! committed fuzz regressions.

use serde::de::DeserializeOwned;
use std::path::Path;

/// The `[[case]]` entries of `testdata/<name>` under a crate's directory
/// (pass `env!("CARGO_MANIFEST_DIR")`). Panics, naming the file, when it
/// cannot be read or parsed, or has no cases: a table that loads nothing
/// must fail, not pass empty.
#[expect(
    clippy::panic,
    reason = "a test helper: a broken table is a failed test"
)]
pub fn load_cases<T: DeserializeOwned>(crate_dir: &str, name: &str) -> Vec<T> {
    #[derive(serde::Deserialize)]
    struct File<T> {
        case: Vec<T>,
    }
    let path = Path::new(crate_dir).join("testdata").join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let file: File<T> = toml::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert!(!file.case.is_empty(), "{name} has no cases");
    file.case
}

/// A fuzz entry point: the function a fuzz target calls with its input.
pub type FuzzEntry = fn(&[u8]);

/// Replays every file under `testdata/fuzz-regressions/<dir>/` of a crate
/// through its fuzz entry point, for each `(dir, run)`; returns how many
/// were replayed. A missing directory holds no regressions yet.
#[expect(
    clippy::panic,
    reason = "a test helper: an unreadable input is a failed test"
)]
pub fn replay_fuzz_regressions(crate_dir: &str, targets: &[(&str, FuzzEntry)]) -> usize {
    let root = Path::new(crate_dir).join("testdata/fuzz-regressions");
    let mut replayed = 0;
    for (dir, run) in targets {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
            continue;
        };
        for entry in entries {
            let path = entry
                .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
                .path();
            let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            run(&bytes);
            replayed += 1;
        }
    }
    replayed
}
