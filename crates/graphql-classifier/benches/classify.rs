//! Classification speed against apollo-parser and cynic-parser parsing the
//! same bytes: the kitchen-sink document and a 1 MiB generated query.

use std::hint::black_box;

use criterion::{Criterion, Throughput};
use graphql_classifier::Classifier;

const KITCHEN_SINK: &str = include_str!("../testdata/corpus/cynic-parser/kitchen-sink.graphql");

/// A query of about `target` bytes: nested selections, arguments, strings,
/// block strings, comments, variables, fragments.
fn generated(target: usize) -> String {
    let mut doc = String::from(
        "# generated\nquery Big($first: Int = 10, $after: String, $filter: Filter = {a: [1, 2]}) {\n",
    );
    let mut i = 0usize;
    while doc.len() < target {
        doc.push_str(&format!(
            "  f{i}: repository(owner: \"owner-{i}\", name: \"name\", first: $first) @include(if: true) {{\n\
             \x20   id name description # comment {{ not a bracket }}\n\
             \x20   issues(first: 20, after: $after, labels: [\"bug\", \"help wanted\"], orderBy: {{field: CREATED_AT, direction: DESC}}) {{\n\
             \x20     nodes {{ number title body(format: \"\"\"text \"quoted\" \\\"\"\" done\"\"\") author {{ login ...UserBits }} }}\n\
             \x20     pageInfo {{ hasNextPage endCursor }}\n\
             \x20   }}\n\
             \x20   stars: stargazerCount weight: score(factor: -1.5e3)\n\
             \x20 }}\n"
        ));
        i += 1;
    }
    doc.push_str("}\nfragment UserBits on User { id login avatarUrl(size: 64) }\n");
    doc
}

fn bench_one(c: &mut Criterion, group: &str, doc: &str, name: &str) {
    let classifier = match Classifier::builder()
        .max_document_bytes(4 << 20)
        .max_tokens(4_000_000)
        .build()
    {
        Ok(c) => c,
        Err(e) => {
            eprintln!("cannot build the classifier: {e}");
            return;
        }
    };
    // Every parser must accept the input, or the comparison means nothing.
    if let Err(e) = classifier.operations(doc) {
        eprintln!("{group}: refused: {e}");
        return;
    }
    let apollo_errors = apollo_parser::Parser::new(doc)
        .token_limit(usize::MAX)
        .parse()
        .errors()
        .len();
    let cynic_ok = cynic_parser::parse_executable_document(doc).is_ok();
    if apollo_errors != 0 || !cynic_ok {
        eprintln!("{group}: apollo errors {apollo_errors}, cynic ok {cynic_ok}");
        return;
    }
    let mut g = c.benchmark_group(group);
    g.throughput(Throughput::Bytes(doc.len() as u64));
    g.bench_function("graphql-classifier", |b| {
        b.iter(|| {
            classifier
                .classify_document(black_box(doc), Some(name))
                .is_ok()
        });
    });
    g.bench_function("graphql-classifier-operations", |b| {
        b.iter(|| classifier.operations(black_box(doc)).map(|o| o.len()).ok());
    });
    g.bench_function("apollo-parser", |b| {
        b.iter(|| {
            let tree = apollo_parser::Parser::new(black_box(doc))
                .token_limit(usize::MAX)
                .parse();
            tree.errors().len()
        });
    });
    g.bench_function("cynic-parser", |b| {
        b.iter(|| cynic_parser::parse_executable_document(black_box(doc)).is_ok());
    });
    g.finish();
}

fn benches(c: &mut Criterion) {
    bench_one(c, "kitchen-sink", KITCHEN_SINK, "queryName");
    bench_one(c, "generated-1MiB", &generated(1 << 20), "Big");
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    benches(&mut c);
    c.final_summary();
}
