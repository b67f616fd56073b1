//! What both microvm runtimes make first for a dispatch session: the
//! proxies served on two Unix sockets of the session's (the sandbox reaches
//! them at [`GUEST_HTTP_PORT`] and [`GUEST_SOCKS_PORT`] on its loopback,
//! through relays of the runtime's), the writable roots and the git
//! repositories in them, and the bubblewrap plan of the spec whose file
//! system the runtime shows. Dropped filename rules are logged here; rules
//! the runtime cannot enforce are refused with `why` it cannot.

use crate::backend::common::bridges::{BRIDGED, bind_private_socket};
use crate::backend::common::host_repos::{ReposAtLaunch, repos_in_writable_roots, writable_roots};
use crate::egress::Egress;
use crate::inner_bridge::{GUEST_HTTP_PORT, GUEST_SOCKS_PORT};
use crate::settings::Settings;
use crate::{Error, ErrorKind};
use bwrap_spec::{BridgePlan, BwrapBuilder, BwrapPlan, FilenameRules, NameGuardLauncher};
use sandbox_core::SandboxSpec;
use std::path::PathBuf;

/// The plan of a dispatch session and what came with it.
pub(crate) struct DispatchPlan {
    pub(crate) plan: BwrapPlan,
    /// Each proxy's loopback port inside and the host socket it is served on.
    pub(crate) proxies: Vec<(u16, PathBuf)>,
    pub(crate) writable: Vec<String>,
    pub(crate) repos: ReposAtLaunch,
}

/// Serves the proxies and builds the plan with `rules` (the name guard
/// `launcher` around what the runtime runs, when given).
pub(crate) fn dispatch_plan(
    settings: &Settings,
    spec: &SandboxSpec,
    egress: &Egress,
    rules: FilenameRules,
    launcher: Option<&NameGuardLauncher>,
    why: &'static str,
) -> Result<DispatchPlan, Error> {
    let mut bridges = BridgePlan::new(egress.dir())?;
    bridges
        .add("http", GUEST_HTTP_PORT)?
        .add("socks", GUEST_SOCKS_PORT)?;
    let uid = rustix::process::geteuid().as_raw();
    let mut proxies = Vec::new();
    for ((b, kind), port) in bridges
        .bridges()
        .iter()
        .zip(BRIDGED)
        .zip([GUEST_HTTP_PORT, GUEST_SOCKS_PORT])
    {
        let socket = bridges.host_socket(b);
        let listener = bind_private_socket(&socket)?;
        egress.service().serve_unix(kind, listener, uid);
        proxies.push((port, socket));
    }
    let writable = writable_roots(spec);
    let repos = repos_in_writable_roots(settings, &spec.session_id, &writable);
    let mut builder = BwrapBuilder::new(spec, &settings.home);
    builder.tool_owned_dirs(settings.tool_dirs.iter().cloned());
    if let Some(l) = launcher {
        builder.name_guard_launcher(l.clone());
    }
    builder
        .nested_repos(repos.repos.clone())
        .filename_rules(rules)
        .argv_delivery(bwrap_spec::ArgvDelivery::ArgsFd)
        .bridges(bridges.clone())
        .read_deny(settings.reads.deny.iter().cloned())
        .read_reopen(settings.reads.again.iter().cloned());
    for s in &settings.unix_sockets {
        builder.allow_unix_socket(s.clone());
    }
    let plan = builder
        .build(&*settings.host)
        .map_err(|e| filename_rules_refusal(e, why))?;
    if !plan.dropped_filename_globs().is_empty() {
        (settings.log)(&format!(
            "session {}: creation-time rules not enforced (opt-out): names {}",
            spec.session_id,
            plan.dropped_filename_globs()
                .iter()
                .filter(|r| !r.starts_with('/'))
                .cloned()
                .collect::<Vec<_>>()
                .join(" ")
        ));
    }
    Ok(DispatchPlan {
        plan,
        proxies,
        writable,
        repos,
    })
}

/// bwrap-spec's refusal of filename rules, in the microvm backend's words.
fn filename_rules_refusal(e: bwrap_spec::Error, why: &'static str) -> Error {
    match e.kind() {
        bwrap_spec::ErrorKind::FilenameRulesUnenforceable { globs, roots } => {
            ErrorKind::MicrovmFilenameRules {
                globs: globs.clone(),
                roots: roots.clone(),
                why,
            }
            .into()
        }
        _ => e.into(),
    }
}
