//! The search for nested repositories in a working directory of checkout
//! size (3,321 directories four deep, a file in each, a repository at the
//! root): a full search, a recording one, and a search since a record when
//! nothing changed (what the end of a run and the next launch in the same
//! directory cost).

// A bench is a test harness: a bad fixture should stop it loudly, and
// criterion's macros generate undocumented items.
#![allow(
    clippy::unwrap_used,
    missing_docs,
    reason = "test and bench code: a failed unwrap is a failed run, and its items are not API"
)]

use bwrap_spec::{
    record_git_repos_on_host, search_git_repos_on_host, search_git_repos_on_host_since,
};
use criterion::{Criterion, black_box, criterion_group, criterion_main};
use std::path::PathBuf;

/// The tree, removed on drop.
struct Tree(PathBuf);

impl Tree {
    fn new() -> Tree {
        let root = std::env::temp_dir().join(format!("bwrap-spec-bench-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for a in 0..20 {
            for b in 0..15 {
                for c in 0..10 {
                    let d = root.join(format!("d{a}/e{b}/f{c}"));
                    std::fs::create_dir_all(&d).unwrap();
                    std::fs::write(d.join("x.rs"), "").unwrap();
                }
            }
        }
        std::fs::create_dir_all(root.join(".git")).unwrap();
        // Older than the record's trust margin.
        std::thread::sleep(std::time::Duration::from_millis(2_100));
        Tree(root)
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn bench(c: &mut Criterion) {
    let tree = Tree::new();
    let roots = vec![tree.0.to_string_lossy().into_owned()];
    let (_, record) = record_git_repos_on_host(&roots);
    let mut g = c.benchmark_group("repo_search_3321_dirs");
    g.sample_size(20);
    g.bench_function("full", |b| {
        b.iter(|| search_git_repos_on_host(black_box(&roots)))
    });
    g.bench_function("record", |b| {
        b.iter(|| record_git_repos_on_host(black_box(&roots)))
    });
    g.bench_function("since_unchanged", |b| {
        b.iter(|| search_git_repos_on_host_since(black_box(&roots), &record))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
