//! The net-vocab behaviour tables (`testdata/*.toml`), the UTS #46
//! conformance run, the properties and the fuzz regressions.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test and bench code: a failed unwrap is a failed run"
)]

mod differences;
mod idna_conformance;
mod properties;
mod tables;

/// The variant name of an enum value (`InvalidHost { .. }` -> `InvalidHost`).
fn variant<T: std::fmt::Debug>(v: &T) -> String {
    let s = format!("{v:?}");
    s.split([' ', '(', '{']).next().unwrap().to_owned()
}

/// The `[[case]]` entries of `testdata/<name>`.
fn load<T: serde::de::DeserializeOwned>(name: &str) -> Vec<T> {
    test_support::cases::load(test_support::testdata_dir!(), name)
}
