//! Building and rendering the dispatch profile of the golden chat spec, and
//! reading it back into the evaluator: the per-launch cost on a host.

// A bench is a test harness: a bad fixture should stop it loudly, and
// criterion's macros generate undocumented items.
#![allow(
    clippy::unwrap_used,
    missing_docs,
    reason = "test and bench code: a failed unwrap is a failed run, and its items are not API"
)]

use criterion::{Criterion, black_box, criterion_group, criterion_main};
use sandbox_core::{FakeHost, Os, SandboxSpec};
use seatbelt_profile::{DispatchProfileBuilder, Evaluator, Operation, Target};

fn fixture() -> (SandboxSpec, FakeHost) {
    let spec: SandboxSpec =
        serde_json::from_str(include_str!("../testdata/golden/chat-protected.spec.json")).unwrap();
    let mut host = FakeHost::new(Os::MacOs);
    host.symlink("/tmp", "/private/tmp")
        .symlink("/var", "/private/var")
        .file("/private/var/folders/zz");
    (spec, host)
}

fn builder(spec: &SandboxSpec) -> DispatchProfileBuilder {
    let mut b = DispatchProfileBuilder::new(spec);
    b.home("/Users/dev")
        .http_proxy_port(8080)
        .socks_proxy_port(1080)
        .temp_dir("/var/folders/zz/T/agent-s1");
    b
}

fn render(c: &mut Criterion) {
    let (spec, host) = fixture();
    let b = builder(&spec);
    c.bench_function("dispatch_build_and_render", |bench| {
        bench.iter(|| b.build(black_box(&host)).unwrap().render().unwrap())
    });
    let rendered = b.build(&host).unwrap().render().unwrap();
    let params = rendered.params_map();
    c.bench_function("read_back_and_compile", |bench| {
        bench.iter(|| Evaluator::from_sbpl(black_box(rendered.text()), &params).unwrap())
    });
    let ev = Evaluator::from_sbpl(rendered.text(), &params).unwrap();
    c.bench_function("evaluator_decide_write", |bench| {
        bench.iter(|| {
            ev.decide(
                Operation::FileWriteData,
                Target::Path(black_box(
                    "/Users/dev/.agent/worktrees/s1/src/lib/deep/file.rs",
                )),
            )
        })
    });
}

criterion_group!(benches, render);
criterion_main!(benches);
