//! Over generated specs and profiles: every rendered run meets the
//! invariants (restricted standard, nothing of the secret set mounted, no
//! host namespace, the agent reaching only its egress pod), the mode's
//! read-only rule holds, every object has its typed (and CRD) shape, and
//! what is refused is refused for a stated reason.

use crate::invariants;
use k8s_spec::{
    ClusterProfile, ErrorKind, FilenameRules, KernelBoundary, Placement, Runtime, VolumeSource,
    Workload, render,
};
use proptest::prelude::*;
use sandbox_core::{Mode, SandboxBindMount, SandboxSpec};

/// Absolute paths from a small alphabet, so that mounts nest and collide,
/// with names from the secret set and the pod's own places among them.
fn path() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![
            Just("a".to_owned()),
            Just("b".to_owned()),
            Just("work".to_owned()),
            Just(".ssh".to_owned()),
            Just(".config".to_owned()),
            Just("gh".to_owned()),
            Just("home".to_owned()),
            Just("agent".to_owned()),
            Just("tmp".to_owned()),
            Just("usr".to_owned()),
            Just("local".to_owned()),
            Just("x y,\"$(Z)".to_owned()),
        ],
        1..4,
    )
    .prop_map(|segs| format!("/{}", segs.join("/")))
}

fn session() -> impl Strategy<Value = String> {
    "[a-z0-9]([a-z0-9-]{0,20}[a-z0-9])?"
}

#[derive(Debug, Clone)]
struct Case {
    spec: SandboxSpec,
    runtime: u8,
    opt_out_rules: bool,
    placement: u8,
    host_paths: Vec<bool>,
}

fn case() -> impl Strategy<Value = Case> {
    (
        session(),
        proptest::sample::select(Mode::ALL.to_vec()),
        proptest::collection::vec((path(), path(), any::<bool>()), 0..4),
        proptest::collection::vec(path(), 0..2),
        proptest::collection::vec(path(), 0..3),
        any::<bool>(),
        proptest::collection::vec("[a-z*]{1,8}\\.(com|org)", 0..3),
        (0u8..3, any::<bool>(), 0u8..3),
        proptest::collection::vec(any::<bool>(), 6),
    )
        .prop_map(
            |(
                id,
                mode,
                mounts,
                state,
                protected,
                net,
                allow,
                (runtime, opt_out_rules, placement),
                host_paths,
            )| {
                let mut spec = SandboxSpec::new(id, "w");
                spec.mode = mode;
                spec.network_enabled = net;
                spec.egress_allowlist = allow;
                for (host, guest, ro) in mounts {
                    spec.bind_mounts.push(SandboxBindMount {
                        host_path: host,
                        guest_path: guest,
                        read_only: ro,
                    });
                }
                spec.runner_state_dirs = state;
                spec.protected_paths = protected;
                Case {
                    spec,
                    runtime,
                    opt_out_rules,
                    placement,
                    host_paths,
                }
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn every_rendered_run_keeps_the_single_host_meaning(c in case()) {
        let mut p = ClusterProfile::builder();
        p.runtime(match c.runtime {
            0 => Runtime::Gvisor,
            1 => Runtime::Kata,
            _ => Runtime::ClusterDefault,
        })
        .kernel_boundary(KernelBoundary::OptOutSharedHostKernel)
        .placement(match c.placement {
            0 => Placement::Pod,
            1 => Placement::Sandbox,
            _ => Placement::SandboxTemplate,
        });
        if c.opt_out_rules {
            p.filename_rules(FilenameRules::OptOutUnenforced);
        }
        let hosts: Vec<&String> = c
            .spec
            .bind_mounts
            .iter()
            .map(|m| &m.host_path)
            .chain(&c.spec.runner_state_dirs)
            .collect();
        let mut host_path = false;
        for (i, h) in hosts.iter().enumerate() {
            if c.host_paths[i % c.host_paths.len()] {
                host_path = true;
                p.volume(h.as_str(), VolumeSource::OptOutHostPath { path: (*h).clone() });
            } else {
                p.volume(h.as_str(), VolumeSource::PersistentVolumeClaim { claim: format!("c{i}") });
            }
        }
        let profile = match p.build() {
            Ok(p) => p,
            // A node directory in the secret set, by name.
            Err(e) => {
                prop_assert!(matches!(e.kind(), ErrorKind::SecretPath { .. } | ErrorKind::InvalidValue { .. }), "{e}");
                return Ok(());
            }
        };
        let objects = match render(&c.spec, &profile, &Workload::new(["agent"], "s")) {
            Ok(o) => o,
            Err(e) => {
                let writable = c.spec.mount_accesses().any(|(_, a)| a == sandbox_core::Access::ReadWrite)
                    || !c.spec.runner_state_dirs.is_empty();
                match e.kind() {
                    ErrorKind::FilenameRulesUnenforceable { .. } => {
                        prop_assert!(c.runtime == 0 && !c.opt_out_rules && writable, "{e}");
                    }
                    ErrorKind::ReservedPath { .. } | ErrorKind::InvalidValue { .. } => {}
                    _ => prop_assert!(false, "unexpected refusal: {e}"),
                }
                return Ok(());
            }
        };
        invariants::check_all(&objects, host_path).map_err(TestCaseError::fail)?;
        crate::schema::check(&objects);
        let pod = invariants::agent_pod(&objects);
        let mounts = pod["containers"][0]["volumeMounts"].as_array().unwrap();
        // The mode's rule: outside chat, only runner state directories are
        // writable; in every mode the protected paths are not.
        let writable: Vec<&str> = mounts
            .iter()
            .filter(|m| m["readOnly"] == false)
            .map(|m| m["mountPath"].as_str().unwrap())
            .collect();
        if c.spec.mode != Mode::Chat {
            for w in &writable {
                prop_assert!(c.spec.runner_state_dirs.iter().any(|d| d == w), "{} writable in {}", w, c.spec.mode);
            }
        }
        // A writable mount under gVisor renders only with the opt-out; under
        // the others the guard runs.
        let guarded = pod["containers"][0]["command"][0] == "/usr/local/bin/name-guard-exec";
        if !writable.is_empty() && !c.opt_out_rules {
            prop_assert!(guarded);
        }
        if writable.is_empty() {
            prop_assert!(!guarded);
        }
        // Every bind mount has a volume and a mount.
        prop_assert_eq!(
            mounts.iter().filter(|m| m["subPath"].is_null()).count(),
            2 + c.spec.bind_mounts.len() + c.spec.runner_state_dirs.len()
        );
    }
}
