//! Behaviour tables: TOML files of `[[case]]` entries under a crate's
//! `testdata/`, read by its test binary; and the replay of committed fuzz
//! regressions (`testdata/fuzz-regressions/`).

use serde::de::DeserializeOwned;
use std::fmt::Debug;
use std::path::{Path, PathBuf};

/// The `testdata/` folder of the crate being tested (`CARGO_MANIFEST_DIR`
/// of the test binary, as `env!` sees it there).
///
/// ```
/// let dir = test_support::testdata_dir!();
/// assert!(dir.ends_with("testdata"));
/// ```
#[macro_export]
macro_rules! testdata_dir {
    () => {
        ::std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata")
    };
}

/// Reads the `[[case]]` entries of `dir/name`. Panics with the file's
/// name when it does not load or has no case, so a broken or empty table
/// fails its test instead of passing it empty.
///
/// ```
/// #[derive(serde::Deserialize)]
/// struct Case {
///     intent: String,
///     input: u32,
/// }
/// let dir = std::env::temp_dir().join(format!("cases-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// std::fs::write(dir.join("t.toml"), "[[case]]\nintent = \"one\"\ninput = 1\n").unwrap();
/// let cases: Vec<Case> = test_support::cases::load(&dir, "t.toml");
/// assert_eq!((cases[0].intent.as_str(), cases[0].input), ("one", 1));
/// std::fs::remove_dir_all(&dir).unwrap();
/// ```
#[allow(
    clippy::panic,
    reason = "a table that does not load must fail the test that reads it"
)]
pub fn load<T: DeserializeOwned>(dir: impl AsRef<Path>, name: &str) -> Vec<T> {
    #[derive(serde::Deserialize)]
    struct File<T> {
        case: Vec<T>,
    }
    let path: PathBuf = dir.as_ref().join(name);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => panic!("{}: {e}", path.display()),
    };
    let file: File<T> = match toml::from_str(&text) {
        Ok(f) => f,
        Err(e) => panic!("{name}: {e}"),
    };
    assert!(!file.case.is_empty(), "{name} has no cases");
    file.case
}

/// The name of an enum value's variant, from its `Debug` form: what
/// tables write to name an error kind or a verdict.
///
/// ```
/// #[derive(Debug)]
/// enum E {
///     Unit,
///     Tuple(u8),
///     Named { at: usize },
/// }
/// use test_support::cases::variant;
/// assert_eq!(variant(&E::Unit), "Unit");
/// assert_eq!(variant(&E::Tuple(1)), "Tuple");
/// assert_eq!(variant(&E::Named { at: 3 }), "Named");
/// ```
pub fn variant<T: Debug>(v: &T) -> String {
    let s = format!("{v:?}");
    s.split([' ', '(', '{'])
        .next()
        .unwrap_or_default()
        .to_owned()
}

/// A fuzz entry point: the function a fuzz target calls with its input.
pub type FuzzEntry = fn(&[u8]);

/// Replays every file under `testdata/fuzz-regressions/<dir>/` of a crate
/// through its fuzz entry point, for each `(dir, run)`; returns how many
/// were replayed. A missing directory holds no regressions yet.
#[allow(
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
