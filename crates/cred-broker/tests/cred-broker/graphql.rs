//! curl through connect-proxy and the broker to a local HTTPS GraphQL
//! origin: a query is allowed and reaches the origin; a mutation and the
//! ambiguous documents (duplicate operation names, an anonymous operation
//! beside a named one) are refused with a GraphQL-shaped error body and
//! never reach it.

use crate::support::proxy_pair;
use test_support::tls_origin::{Message, Origin, Reply, TestPki};

use cred_broker::{
    Broker, Credential, GraphqlClassifier, HeaderTemplate, Lease, RuleEngine, RuleFile, Secret,
    SessionCa, UpstreamRoots,
};
use std::sync::Arc;

const SECRET: &str = "real-graphql-secret-90ac1";
const HOST: &str = "api.test";
const ANSWER: &str = r#"{"data":{"viewer":{"login":"octo"}}}"#;

/// Read-only: GraphQL queries only.
const RULES: &str = r#"
[[rule]]
name = "graphql-read"
decision = "allow"
hosts = ["api.test"]
classes = ["graphql-query"]
"#;

/// A local HTTPS origin that answers every request with [`ANSWER`] and
/// records each request (head and body).
async fn origin() -> (Origin, Vec<u8>) {
    let pki = TestPki::new(&[HOST]);
    let origin = Origin::start(&pki, |_| async {
        Reply::new(format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{ANSWER}",
            ANSWER.len()
        ))
    })
    .await;
    (origin, pki.ca_der)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graphql_through_proxy_and_broker() {
    let (origin, origin_ca) = origin().await;
    let port = origin.addr().port();
    let ca = Arc::new(SessionCa::builder("s-gql").build().unwrap());
    let engine = RuleEngine::builder()
        .classifier(Arc::new(GraphqlClassifier::new()))
        .rules(RuleFile::from_toml(RULES).unwrap())
        .build()
        .unwrap();
    let cred = Credential::builder("code-host")
        .secret(Secret::new(SECRET.as_bytes().to_vec()).unwrap())
        .host(HOST)
        .template(HeaderTemplate::Bearer)
        .build()
        .unwrap();
    let lease = Lease::builder("s-gql", &cred).build().unwrap();
    let broker = Arc::new(
        Broker::builder(ca.clone(), engine)
            .extra_root_der(&origin_ca)
            .upstream_roots(UpstreamRoots::ExtraOnly)
            .grant(cred, lease.clone())
            .build()
            .unwrap(),
    );
    let mut violations = broker.subscribe_violations();
    let pair = proxy_pair(broker.clone(), HOST).await;
    let dir = tempfile::tempdir().unwrap();
    let ca_pem = dir.path().join("ca.pem");
    std::fs::write(&ca_pem, ca.ca_cert_pem()).unwrap();
    let phantom = lease.phantom().to_string();
    let url = format!("https://{HOST}:{port}/graphql");
    let post = |body: &str| {
        let mut cmd = tokio::process::Command::new("curl");
        cmd.args(["-sS", "--max-time", "15", "-x"])
            .arg(format!("http://{}", pair.http_addr()))
            .arg("--cacert")
            .arg(&ca_pem)
            .args(["-w", "\\n%{http_code} %{content_type}\\n"])
            .arg("-H")
            .arg(format!("Authorization: Bearer {phantom}"))
            .args(["-H", "Content-Type: application/json", "--data-binary"])
            .arg(body)
            .arg(&url);
        cmd
    };

    let query = r#"{"query":"query Viewer { viewer { login } }"}"#;
    let out = match post(query).output().await {
        Ok(out) => out,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            test_support::tool("curl", "apt-get install curl");
            return;
        }
        Err(e) => panic!("curl: {e}"),
    };
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{stdout}");
    assert_eq!(stdout, format!("{ANSWER}\n200 application/json\n"));
    let requests: Vec<String> = origin.seen().iter().map(Message::text).collect();
    assert_eq!(requests.len(), 1);
    assert!(requests[0].ends_with(query), "{}", requests[0]);
    assert!(requests[0].contains(&format!("Authorization: Bearer {SECRET}\r\n")));
    assert!(!requests[0].contains(&phantom));

    // Refused: a mutation, duplicate operation names, an anonymous
    // operation beside a named one. Each is 403 with a GraphQL error body.
    let refused = [
        (
            "mutation",
            r#"{"query":"mutation Star { addStar(input: {starrableId: \"x\"}) { clientMutationId } }"}"#,
            "denied: no rule matches",
        ),
        (
            "duplicate names",
            r#"{"query":"query A { viewer { login } } query A { viewer { id } }","operationName":"A"}"#,
            "denied: the request cannot be classified: graphql:",
        ),
        (
            "anonymous beside named",
            r#"{"query":"{ viewer { login } } query B { viewer { id } }","operationName":"B"}"#,
            "denied: the request cannot be classified: graphql:",
        ),
    ];
    let mut outputs = vec![stdout];
    for (name, body, why) in refused {
        let out = post(body).output().await.unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let (json, tail) = stdout
            .rsplit_once('\n')
            .map_or(("", ""), |(a, _)| a.rsplit_once('\n').unwrap_or((a, "")));
        assert_eq!(tail, "403 application/json", "{name}: {stdout}");
        let v: serde_json::Value = serde_json::from_str(json).unwrap();
        let message = v["errors"][0]["message"].as_str().unwrap();
        assert!(message.starts_with("cred-broker: "), "{name}: {message}");
        assert!(message.contains(why), "{name}: {message}");
        assert_eq!(origin.seen().len(), 1, "{name} reached the origin");
        outputs.push(stdout);
    }
    let mut count = 0;
    while let Ok(v) = violations.try_recv() {
        outputs.push(format!("{v:?}"));
        count += 1;
    }
    assert_eq!(count, 3);
    for t in &outputs {
        assert!(!t.contains(SECRET), "the secret leaked into: {t}");
    }
    pair.shutdown().await;
}
