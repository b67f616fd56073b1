//! `.git` and `commondir` pointer files (written by a sandboxed run, read
//! at the next launch): never panic, the `.git` file always comes first.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sandbox_core::{FakeHost, Os, linked_git_dir_entries};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let (dotgit, commondir) = text.split_once('\u{1}').unwrap_or((&text, ""));
    let mut h = FakeHost::new(Os::Linux);
    h.dir("/w/main/.git/worktrees/wt")
        .contents("/w/wt/.git", dotgit.to_string())
        .contents("/w/main/.git/worktrees/wt/commondir", commondir.to_string());
    let out = linked_git_dir_entries("/w/wt", &h);
    assert_eq!(out.first().map(String::as_str), Some("/w/wt/.git"));
    assert!(out.len() <= 4);
});
