//! The k8s-spec behaviour tables (`testdata/*.toml`), the invariants every
//! rendered run meets (also over generated specs), and the schema checks:
//! every object into its typed form, the agent-sandbox objects against the
//! published CRD schemas.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code: a failed unwrap is a failed run"
)]

mod crd;
mod invariants;
mod props;
mod schema;
mod tables;
