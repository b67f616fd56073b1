//! Runs every behaviour table under `testdata/`: the smuggling table (each
//! case refused, whole and one byte at a time), the accepted requests with
//! their re-framed form, the rule tables and the injection cases.

use crate::support::{error_variant, load};
use cred_broker::{
    Classification, ClassifyInput, Credential, DecisionReason, Error, HeaderTemplate, Host, Lease,
    LeaseState, Limits, PHANTOM_BYTES, Request, RequestClass, RequestClassifier, RequestParser,
    Response, RestFallback, RuleEngine, RuleFile, Secret, Status, Target, Verdict, upstream_head,
};
use serde::Deserialize;
use std::path::Path;
use std::time::{Duration, SystemTime};

fn test_limits() -> Limits {
    Limits::builder()
        .max_head(512)
        .max_line(128)
        .max_headers(4)
        .max_body(64)
        .build()
        .unwrap()
}

/// Feeds `input` in slices of `step` bytes; returns every request and the
/// bytes left after the last one, or the first error.
fn parse_all(input: &[u8], limits: Limits, step: usize) -> Result<Vec<Request>, Error> {
    let mut parser = RequestParser::new(limits);
    let mut out = Vec::new();
    for slice in input.chunks(step) {
        let mut rest = slice;
        loop {
            match parser.feed(rest)? {
                Status::Incomplete => break,
                Status::Complete { request, consumed } => {
                    out.push(*request);
                    rest = &rest[consumed..];
                    if rest.is_empty() {
                        break;
                    }
                }
                _ => unreachable!(),
            }
        }
    }
    parser.finish()?;
    Ok(out)
}

#[test]
fn default_limits_and_refused_ones() {
    let l = Limits::default();
    assert_eq!(
        (l.max_head(), l.max_line(), l.max_headers(), l.max_body()),
        (64 * 1024, 8 * 1024, 100, 8 * 1024 * 1024)
    );
    assert_eq!(l.head().max_head(), 64 * 1024);
    assert_eq!(Limits::builder().build().unwrap(), l);
    for bad in [
        Limits::builder().max_head(8).build(),
        Limits::builder().max_head(1024).max_line(2048).build(),
        Limits::builder().max_headers(0).build(),
        Limits::builder().max_body(2 << 30).build(),
    ] {
        let e = bad.unwrap_err();
        assert_eq!(error_variant(&e), "InvalidConfig", "{e}");
        assert_eq!(e.response(), Response::NotARequest);
    }
}

#[derive(Deserialize)]
struct Smuggling {
    intent: String,
    rfc: String,
    error: String,
    input: String,
}

#[test]
fn smuggling_table_every_case_refused() {
    let cases = load::<Smuggling>("smuggling.toml");
    assert!(cases.len() >= 60, "the table lost cases");
    for c in cases {
        assert!(!c.rfc.is_empty(), "{}: no RFC rule", c.intent);
        for step in [c.input.len(), 1, 7] {
            match parse_all(c.input.as_bytes(), test_limits(), step) {
                Ok(reqs) => panic!("{} (step {step}): accepted {reqs:?}", c.intent),
                Err(e) => {
                    assert_eq!(
                        error_variant(&e),
                        c.error,
                        "{} (step {step}): {e}",
                        c.intent
                    );
                    assert_eq!(e.response(), Response::BadRequestAndClose, "{}", c.intent);
                    assert_eq!(e.response().status(), Some(400));
                }
            }
        }
    }
}

#[derive(Deserialize)]
struct Accepted {
    intent: String,
    input: String,
    method: String,
    path: String,
    query: Option<String>,
    #[serde(default)]
    body: String,
    #[serde(default)]
    trailers: usize,
    #[serde(default)]
    leftover: String,
    upstream: String,
}

#[test]
fn accepted_requests_and_their_upstream_form() {
    for c in load::<Accepted>("requests.toml") {
        for step in [c.input.len(), 1, 5] {
            let mut parser = RequestParser::new(Limits::default());
            let mut got = None;
            let mut left = Vec::new();
            for slice in c.input.as_bytes().chunks(step) {
                if got.is_some() {
                    left.extend_from_slice(slice);
                    continue;
                }
                match parser.feed(slice) {
                    Ok(Status::Incomplete) => {}
                    Ok(Status::Complete { request, consumed }) => {
                        left.extend_from_slice(&slice[consumed..]);
                        got = Some(request);
                    }
                    Ok(other) => panic!("{}: {other:?}", c.intent),
                    Err(e) => panic!("{} (step {step}): refused: {e}", c.intent),
                }
            }
            let req = got.unwrap_or_else(|| panic!("{} (step {step}): incomplete", c.intent));
            let head = req.head();
            assert_eq!(head.method(), c.method, "{}", c.intent);
            assert_eq!(head.path(), c.path, "{}", c.intent);
            assert_eq!(head.query(), c.query.as_deref(), "{}", c.intent);
            assert_eq!(req.body(), c.body.as_bytes(), "{}", c.intent);
            assert_eq!(req.trailers().len(), c.trailers, "{}", c.intent);
            assert_eq!(left, c.leftover.as_bytes(), "{} (step {step})", c.intent);
            assert_eq!(
                String::from_utf8_lossy(&req.reframe()),
                c.upstream,
                "{}",
                c.intent
            );
        }
    }
}

#[derive(Deserialize)]
struct RuleSet {
    format: String,
    text: String,
}

#[derive(Deserialize)]
struct RuleCase {
    intent: String,
    ruleset: String,
    request: String,
    host: String,
    /// The request's `Host` when it is not `host` (which must then parse).
    header: Option<String>,
    expect: String,
    by: String,
}

#[derive(Deserialize)]
struct LoadError {
    intent: String,
    format: String,
    error: String,
    text: String,
}

#[derive(Deserialize)]
struct RulesFile {
    ruleset: std::collections::BTreeMap<String, RuleSet>,
    case: Vec<RuleCase>,
    load_error: Vec<LoadError>,
}

fn engine_from(format: &str, text: &str) -> Result<RuleEngine, Error> {
    let file = match format {
        "toml" => RuleFile::from_toml(text)?,
        "json" => RuleFile::from_json(text)?,
        other => panic!("unknown format {other}"),
    };
    RuleEngine::builder().rules(file).build()
}

/// Parses `request_line` plus extra header lines, with `Host: host`.
fn head_of(request: &str, host: &str) -> Request {
    let text = format!("{request}\r\nHost: {host}\r\n\r\n");
    match RequestParser::new(Limits::default()).feed(text.as_bytes()) {
        Ok(Status::Complete { request, .. }) => *request,
        other => panic!("{request:?}: {other:?}"),
    }
}

#[test]
fn rule_table() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/rules.toml");
    let file: RulesFile = toml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert!(!file.case.is_empty() && !file.load_error.is_empty());
    for c in &file.case {
        let set = &file.ruleset[&c.ruleset];
        let engine = engine_from(&set.format, &set.text).unwrap();
        let req = head_of(&c.request, c.header.as_deref().unwrap_or(&c.host));
        let d = engine.decide(&ClassifyInput::with_body(req.head(), req.body()), &c.host);
        let verdict = match d.verdict() {
            Verdict::Allow => "allow",
            Verdict::Deny => "deny",
            _ => "other",
        };
        assert_eq!(verdict, c.expect, "{}: {d}", c.intent);
        let by = match d.reason() {
            DecisionReason::Rule { name } => name.clone(),
            DecisionReason::NoMatch => "no-match".into(),
            DecisionReason::Unclassified { .. } => "unclassified".into(),
            DecisionReason::AmbiguousPath(_) => "ambiguous-path".into(),
            other => format!("{other:?}"),
        };
        assert_eq!(by, c.by, "{}: {d}", c.intent);
        assert_eq!(
            d.rule().is_some(),
            matches!(d.reason(), DecisionReason::Rule { .. })
        );
    }
    for c in &file.load_error {
        match engine_from(&c.format, &c.text) {
            Ok(e) => panic!("{}: loaded {e:?}", c.intent),
            Err(e) => {
                assert_eq!(error_variant(&e), c.error, "{}: {e}", c.intent);
                assert_eq!(e.response(), Response::NotARequest);
            }
        }
    }
}

/// A classifier plugged in before the REST fallback.
struct GraphqlPath;

impl RequestClassifier for GraphqlPath {
    fn name(&self) -> &str {
        "graphql-path"
    }
    fn classify(&self, input: &ClassifyInput<'_>) -> Classification {
        if input.head.path() != "/graphql" {
            return Classification::NotMine;
        }
        match input.body {
            Some(b) if b.starts_with(b"query") => {
                Classification::Class(RequestClass::new("graphql-query").unwrap())
            }
            _ => Classification::Refused {
                reason: "not a query".into(),
            },
        }
    }
}

#[test]
fn pluggable_classifiers_come_first() {
    let rules = RuleFile::from_toml(
        "[[rule]]\nname = \"q\"\ndecision = \"allow\"\nhosts = [\"api.example.com\"]\nclasses = [\"graphql-query\"]\n",
    )
    .unwrap();
    let mut b = RuleEngine::builder();
    b.rules(rules).classifier(std::sync::Arc::new(GraphqlPath));
    let engine = b.build().unwrap();
    let host = "api.example.com";
    let q = head_of("POST /graphql HTTP/1.1", host);
    let d = engine.decide(&ClassifyInput::with_body(q.head(), b"query { x }"), host);
    assert_eq!((d.verdict(), d.rule()), (Verdict::Allow, Some("q")));
    assert_eq!(d.class().map(|c| c.as_str()), Some("graphql-query"));
    let d = engine.decide(&ClassifyInput::with_body(q.head(), b"mutation { x }"), host);
    assert!(
        matches!(d.reason(), DecisionReason::Unclassified { .. }),
        "{d}"
    );
    // A REST read falls through to the REST classifier, and no rule names it.
    let get = head_of("GET /x HTTP/1.1", host);
    let d = engine.decide_head(get.head(), host);
    assert_eq!(d.reason(), &DecisionReason::NoMatch);
    // Without the fallback nothing classifies it.
    let mut b = RuleEngine::builder();
    b.rest_fallback(RestFallback::Disabled);
    let d = b.build().unwrap().decide_head(get.head(), host);
    assert!(
        matches!(d.reason(), DecisionReason::Unclassified { .. }),
        "{d}"
    );
}

const SECRET: &str = "s3cr3t-VALUE";
const SECRET_BASIC: &str = "eC1hY2Nlc3MtdG9rZW46czNjcjN0LVZBTFVF";

#[derive(Deserialize)]
struct InjectCase {
    intent: String,
    request: String,
    target: String,
    template: String,
    #[serde(default)]
    hosts: Vec<String>,
    #[serde(default)]
    lease: Option<String>,
    upstream: Option<String>,
    error: Option<String>,
}

fn credential(name: &str, template: &str, hosts: &[String]) -> Credential {
    let template = match template {
        "bearer" => HeaderTemplate::Bearer,
        "token" => HeaderTemplate::Token,
        "git-basic" => HeaderTemplate::git_basic(),
        other => match other.strip_prefix("header:") {
            Some(name) => HeaderTemplate::Header { name: name.into() },
            None => panic!("unknown template {other}"),
        },
    };
    let mut b = Credential::builder(name);
    b.secret(Secret::new(SECRET.as_bytes().to_vec()).unwrap())
        .template(template);
    if hosts.is_empty() {
        b.host("api.example.com").host("github.example.com");
    }
    for h in hosts {
        b.host(h);
    }
    b.build().unwrap()
}

/// Runs the injection table; returns every string a host program could
/// see (Debug, Display, errors, re-framed bytes), and the wire heads.
fn run_injection_table() -> (Vec<String>, Vec<String>) {
    let mut seen = Vec::new();
    let mut wire = Vec::new();
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
    for c in load::<InjectCase>("inject.toml") {
        let cred = credential("gh", &c.template, &c.hosts);
        let other = credential("other", "bearer", &[]);
        let mut lb = Lease::builder("session-1", &cred);
        match c.lease.as_deref() {
            None | Some("active") => {}
            Some("revoked") => {}
            Some("expired") => {
                lb.expires_at(now - Duration::from_secs(1));
            }
            Some("other-credential") => lb = Lease::builder("session-1", &other),
            Some(x) => panic!("{}: lease {x}", c.intent),
        }
        let lease = lb.build().unwrap();
        if c.lease.as_deref() == Some("revoked") {
            lease.revoke();
        }
        let phantom = lease.phantom().to_string();
        let input = c.request.replace("{phantom}", &phantom);
        let req = match RequestParser::new(Limits::default()).feed(input.as_bytes()) {
            Ok(Status::Complete { request, .. }) => *request,
            other => panic!("{}: {other:?}", c.intent),
        };
        let target = Target::parse_authority(&c.target).unwrap();
        let got = upstream_head(&req, &target, &lease, &cred, now);
        seen.extend([
            format!("{cred:?}"),
            format!("{lease:?}"),
            format!("{req:?}"),
            String::from_utf8_lossy(&req.reframe()).into_owned(),
            format!("{got:?}"),
        ]);
        match (&c.upstream, &c.error, got) {
            (Some(want), None, Ok(head)) => {
                let want = want
                    .replace("{secret}", SECRET)
                    .replace("{basic}", SECRET_BASIC)
                    .replace("{phantom}", &phantom);
                let text = String::from_utf8_lossy(head.as_bytes()).into_owned();
                assert_eq!(text, want, "{}", c.intent);
                let auth = text.lines().filter(|l| {
                    let name = l.split(':').next().unwrap_or("").to_ascii_lowercase();
                    name == "authorization"
                        || name == cred.template().header_name().to_ascii_lowercase()
                });
                assert_eq!(
                    auth.count(),
                    1,
                    "{}: exactly one credential header",
                    c.intent
                );
                let fields = text.split_once("\r\n").unwrap().1;
                assert!(
                    !fields.contains(&phantom),
                    "{}: phantom in a header",
                    c.intent
                );
                wire.push(text);
            }
            (None, Some(want), Err(e)) => {
                assert_eq!(error_variant(&e), *want, "{}: {e}", c.intent);
                assert_eq!(e.response(), Response::Forbidden, "{}", c.intent);
                seen.push(e.to_string());
            }
            (_, _, got) => panic!("{}: got {got:?}", c.intent),
        }
    }
    (seen, wire)
}

#[test]
fn injection_table() {
    let (_, wire) = run_injection_table();
    assert!(!wire.is_empty());
}

#[test]
fn the_secret_never_leaks() {
    let (mut seen, wire) = run_injection_table();
    // Values refused at construction are not echoed.
    for bad in ["has space s3cr3t-VALUE", "s3cr3t-VALUE\n"] {
        let e = Secret::new(bad.as_bytes().to_vec()).unwrap_err();
        seen.extend([e.to_string(), format!("{e:?}")]);
    }
    let secret = Secret::from_string(SECRET.to_owned()).unwrap();
    seen.extend([format!("{secret:?}"), format!("{secret}")]);
    let mut b = Credential::builder("gh");
    b.secret(secret.clone()).host("api.example.com");
    seen.push(format!("{b:?}"));
    // A refused credential build and a refused decision say nothing either.
    b.template(HeaderTemplate::Header {
        name: "Host".into(),
    });
    let e = b.build().unwrap_err();
    seen.extend([e.to_string(), format!("{e:?}")]);
    for s in &seen {
        assert!(!s.contains(SECRET), "secret in {s:?}");
        assert!(!s.contains(SECRET_BASIC), "encoded secret in {s:?}");
    }
    // The wire heads, and only they, carry it, once each.
    for w in &wire {
        let n = w.matches(SECRET).count() + w.matches(SECRET_BASIC).count();
        assert_eq!(n, 1, "{w}");
    }
}

#[test]
fn revoke_reaches_every_holder_of_the_lease() {
    let cred = credential("gh", "bearer", &[]);
    let lease = Lease::builder("s", &cred).build().unwrap();
    let on_connection = lease.clone();
    let req = match RequestParser::new(Limits::default())
        .feed(b"GET / HTTP/1.1\r\nHost: api.example.com\r\n\r\n")
    {
        Ok(Status::Complete { request, .. }) => *request,
        other => panic!("{other:?}"),
    };
    let target = Target::parse_authority("api.example.com:443").unwrap();
    let now = SystemTime::now();
    assert!(upstream_head(&req, &target, &on_connection, &cred, now).is_ok());
    lease.revoke();
    let e = upstream_head(&req, &target, &on_connection, &cred, now).unwrap_err();
    assert_eq!(e.response().status(), Some(403));
    assert_eq!(on_connection.state(now), LeaseState::Revoked);
    // Two leases never share a phantom token.
    let other = Lease::builder("s", &cred).build().unwrap();
    assert_ne!(other.phantom(), lease.phantom());
    assert_eq!(
        lease.phantom().as_str().len(),
        "phantom_".len() + 2 * PHANTOM_BYTES
    );
}

#[test]
fn credential_hosts_are_host_patterns_without_a_port() {
    let build = |host: &str| {
        Credential::builder("gh")
            .secret(Secret::new(SECRET.as_bytes().to_vec()).unwrap())
            .host(host)
            .build()
    };
    // A port is refused: which ports reach a host is the proxy's choice.
    for bad in [
        "api.example.com:443",
        "[fd00::1]:443",
        "*.*.example.com",
        "-a.example.com",
    ] {
        let e = build(bad).unwrap_err();
        assert_eq!(error_variant(&e), "InvalidHostPattern", "{bad}: {e}");
        assert_eq!(e.response(), Response::NotARequest);
    }
    // Names are canonical as net-vocab makes them: a Unicode entry is its
    // A-label, an address in any spelling is that address.
    let cred = build("Bücher.example").unwrap();
    let host = |h: &str| Host::parse_wire(h).unwrap();
    assert!(cred.allows_host(&host("xn--bcher-kva.example")));
    assert!(!cred.allows_host(&host("bucher.example")));
    let cred = build("169.254.169.254").unwrap();
    assert!(cred.allows_host(&host("0xa9fea9fe")));
    assert!(cred.allows_host(&host("::ffff:169.254.169.254")));
}

mod session_ca {
    use super::*;
    use cred_broker::{Leaf, SessionCa};
    use std::sync::{Arc, OnceLock};
    use x509_parser::prelude::*;

    /// One CA for the tests that do not need their own (key generation is
    /// the slow part).
    fn shared() -> &'static SessionCa {
        static CA: OnceLock<SessionCa> = OnceLock::new();
        CA.get_or_init(|| SessionCa::builder("shared").build().unwrap())
    }

    fn sans(leaf: &Leaf) -> Vec<String> {
        let (_, cert) = X509Certificate::from_der(leaf.der()).unwrap();
        let ext = cert.subject_alternative_name().unwrap().unwrap();
        ext.value
            .general_names
            .iter()
            .map(|n| match n {
                GeneralName::DNSName(d) => format!("dns:{d}"),
                GeneralName::IPAddress(b) => {
                    let ip: std::net::IpAddr = match b.len() {
                        4 => <[u8; 4]>::try_from(*b).unwrap().into(),
                        16 => <[u8; 16]>::try_from(*b).unwrap().into(),
                        _ => panic!("bad IP SAN"),
                    };
                    format!("ip:{ip}")
                }
                other => format!("{other:?}"),
            })
            .collect()
    }

    #[derive(Deserialize)]
    struct LeafHost {
        intent: String,
        host: String,
        san: Option<String>,
        error: Option<String>,
    }

    #[test]
    fn leaf_host_table() {
        let now = SystemTime::now();
        for c in load::<LeafHost>("leaf_hosts.toml") {
            match (&c.san, &c.error, shared().leaf(&c.host, now)) {
                (Some(want), None, Ok(leaf)) => {
                    assert_eq!(sans(&leaf), vec![want.clone()], "{}", c.intent)
                }
                (None, Some(want), Err(e)) => {
                    assert_eq!(error_variant(&e), *want, "{}: {e}", c.intent)
                }
                (_, _, got) => panic!("{}: got {got:?}", c.intent),
            }
        }
    }

    #[test]
    fn ca_and_leaf_certificates_are_well_formed() {
        let now = SystemTime::now();
        let ca = SessionCa::builder("s-1")
            .leaf_lifetime(Duration::from_secs(600))
            .build()
            .unwrap();
        let (_, ca_cert) = X509Certificate::from_der(ca.ca_cert_der()).unwrap();
        let bc = ca_cert.basic_constraints().unwrap().unwrap().value;
        assert!(bc.ca);
        assert_eq!(bc.path_len_constraint, Some(0));
        assert!(ca_cert.key_usage().unwrap().unwrap().value.key_cert_sign());
        assert!(ca_cert.subject().to_string().contains("s-1"));
        assert!(ca.ca_cert_pem().starts_with("-----BEGIN CERTIFICATE-----"));
        ca_cert.verify_signature(None).unwrap();

        let leaf = ca.leaf("api.example.com", now).unwrap();
        let (_, cert) = X509Certificate::from_der(leaf.der()).unwrap();
        // Signed by the CA, named after it, pointing at its key.
        cert.verify_signature(Some(ca_cert.public_key())).unwrap();
        assert_eq!(cert.issuer(), ca_cert.subject());
        let ski = ca_cert.get_extension_unique(&oid_registry::OID_X509_EXT_SUBJECT_KEY_IDENTIFIER);
        let ski = match ski.unwrap().unwrap().parsed_extension() {
            ParsedExtension::SubjectKeyIdentifier(k) => k.0.to_vec(),
            other => panic!("{other:?}"),
        };
        let aki = cert
            .get_extension_unique(&oid_registry::OID_X509_EXT_AUTHORITY_KEY_IDENTIFIER)
            .unwrap()
            .unwrap();
        match aki.parsed_extension() {
            ParsedExtension::AuthorityKeyIdentifier(a) => {
                assert_eq!(a.key_identifier.as_ref().unwrap().0, ski.as_slice())
            }
            other => panic!("{other:?}"),
        }
        // An end entity for server auth, with a short life.
        let bc = cert.basic_constraints().unwrap().map(|b| b.value.ca);
        assert_ne!(bc, Some(true));
        assert!(
            cert.extended_key_usage()
                .unwrap()
                .unwrap()
                .value
                .server_auth
        );
        let life = cert.validity().not_after.timestamp() - cert.validity().not_before.timestamp();
        assert_eq!(life, 600 + 300, "leaf life plus the clock-skew margin");
        // One leaf key for every host; it is an ECDSA P-256 key.
        let other = ca.leaf("192.0.2.1", now).unwrap();
        let (_, other_cert) = X509Certificate::from_der(other.der()).unwrap();
        assert_eq!(other_cert.public_key().raw, cert.public_key().raw);
        assert_ne!(other_cert.serial, cert.serial);
        assert_eq!(
            cert.public_key()
                .algorithm
                .parameters
                .as_ref()
                .and_then(|p| p.as_oid().ok()),
            Some(oid_registry::OID_EC_P256)
        );
        assert!(!ca.leaf_key_pkcs8_der().is_empty());
    }

    #[test]
    fn leaves_are_cached_least_recently_used_and_renewed() {
        let t0 = SystemTime::now();
        let ca = SessionCa::builder("s-2")
            .cache_capacity(2)
            .leaf_lifetime(Duration::from_secs(3600))
            .build()
            .unwrap();
        let a = ca.leaf("a.example.com", t0).unwrap();
        let b = ca.leaf("b.example.com", t0).unwrap();
        assert!(Arc::ptr_eq(&a, &ca.leaf("a.example.com", t0).unwrap()));
        // `a` was used last, so `c` evicts `b`.
        ca.leaf("c.example.com", t0).unwrap();
        assert_eq!(ca.cached_leaves(), 2);
        assert!(Arc::ptr_eq(&a, &ca.leaf("a.example.com", t0).unwrap()));
        assert!(!Arc::ptr_eq(&b, &ca.leaf("b.example.com", t0).unwrap()));
        // Past half its life a leaf is minted again.
        let later = t0 + Duration::from_secs(1801);
        let renewed = ca.leaf("a.example.com", later).unwrap();
        assert!(!Arc::ptr_eq(&a, &renewed));
        assert!(renewed.not_after() > a.not_after());
    }

    #[test]
    fn leaves_never_outlive_the_ca_and_settings_are_checked() {
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(2_000_000_000);
        let ca = SessionCa::builder("s-3")
            .now(t0)
            .ca_lifetime(Duration::from_secs(3600))
            .leaf_lifetime(Duration::from_secs(3600))
            .build()
            .unwrap();
        let leaf = ca
            .leaf("a.example.com", t0 + Duration::from_secs(1800))
            .unwrap();
        assert_eq!(leaf.not_after(), t0 + Duration::from_secs(3600));
        let e = ca
            .leaf("b.example.com", t0 + Duration::from_secs(3600))
            .unwrap_err();
        assert_eq!(error_variant(&e), "Certificate");
        for (ca_life, leaf_life, cache) in [(30, 30, 1), (3600, 7200, 1), (3600, 600, 0)] {
            let e = SessionCa::builder("s")
                .ca_lifetime(Duration::from_secs(ca_life))
                .leaf_lifetime(Duration::from_secs(leaf_life))
                .cache_capacity(cache)
                .build()
                .unwrap_err();
            assert_eq!(error_variant(&e), "InvalidConfig");
        }
        assert!(SessionCa::builder("").build().is_err());
        assert!(!format!("{ca:?}").contains("PRIVATE"));
    }
}

#[cfg(feature = "graphql")]
mod graphql {
    use crate::support::{load, request};
    use cred_broker::{Classification, ClassifyInput, RequestClassifier, Verdict};
    use cred_broker::{GraphqlClassifier, RuleEngine, RuleFile, graphql_error_body};
    use serde::Deserialize;
    use std::sync::Arc;

    #[derive(Deserialize)]
    struct Case {
        intent: String,
        #[serde(default = "post")]
        method: String,
        target: String,
        body: String,
        #[serde(default)]
        headers: String,
        verdict: String,
    }

    fn post() -> String {
        "POST".to_owned()
    }

    #[test]
    fn graphql_table() {
        let classifier = GraphqlClassifier::new();
        for case in load::<Case>("graphql.toml") {
            let unread = case.body == "-";
            let body = if unread { "" } else { case.body.as_str() };
            let req = request(&case.method, &case.target, &case.headers, body.as_bytes());
            let input = if unread {
                ClassifyInput::head(req.head())
            } else {
                ClassifyInput::with_body(req.head(), req.body())
            };
            let got = match classifier.classify(&input) {
                Classification::Class(c) => c.as_str().to_owned(),
                Classification::Refused { .. } => "refused".to_owned(),
                Classification::NotMine => "not-mine".to_owned(),
                other => panic!("{other:?}"),
            };
            assert_eq!(got, case.verdict, "{}", case.intent);
        }
    }

    #[test]
    fn read_only_rule_allows_queries_only() {
        let rules = RuleFile::from_toml(
            r#"
            [[rule]]
            name = "graphql-read"
            decision = "allow"
            hosts = ["api.example.com"]
            classes = ["graphql-query"]
        "#,
        )
        .unwrap();
        let engine = RuleEngine::builder()
            .rules(rules)
            .classifier(Arc::new(GraphqlClassifier::new()))
            .build()
            .unwrap();
        let decide = |body: &str| {
            let req = request("POST", "/graphql", "", body.as_bytes());
            engine
                .decide(
                    &ClassifyInput::with_body(req.head(), req.body()),
                    "api.example.com",
                )
                .verdict()
        };
        assert_eq!(
            decide(r#"{"query":"{ viewer { login } }"}"#),
            Verdict::Allow
        );
        assert_eq!(decide(r#"{"query":"mutation { b }"}"#), Verdict::Deny);
        assert_eq!(
            decide(r#"{"query":"query A { a } query A { b }"}"#),
            Verdict::Deny
        );
        let body: serde_json::Value =
            serde_json::from_str(&graphql_error_body("mutations are \"refused\"")).unwrap();
        assert_eq!(
            body,
            serde_json::json!({"errors": [{"message": "mutations are \"refused\""}]})
        );
    }
}
