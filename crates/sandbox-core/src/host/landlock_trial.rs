//! Whether the running kernel enforces every Landlock rule the Landlock
//! mechanism needs: a ruleset handling them all is created with the
//! `landlock` crate's hard requirement (an unsupported right is an error,
//! not a silent best effort), then dropped. Nothing is restricted.

/// `Ok` when a ruleset of [`crate::LANDLOCK_MIN_ABI`]'s file, network and
/// scope rights can be created; `Err` says why not.
#[cfg(target_os = "linux")]
pub(crate) fn try_ruleset() -> Result<(), String> {
    use landlock::{
        ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr, Scope,
    };
    let abi = ABI::V6;
    let made = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(abi))
        .and_then(|r| r.handle_access(AccessNet::from_all(abi)))
        .and_then(|r| r.scope(Scope::from_all(abi)))
        .and_then(|r| r.create());
    match made {
        Ok(_) => Ok(()),
        Err(e) => Err(format!(
            "Landlock ABI {} or later is needed (file, TCP and scope rules): {e}",
            crate::LANDLOCK_MIN_ABI
        )),
    }
}

/// Off Linux there is no Landlock.
#[cfg(not(target_os = "linux"))]
pub(crate) fn try_ruleset() -> Result<(), String> {
    Err("Landlock is a Linux security module".to_owned())
}
