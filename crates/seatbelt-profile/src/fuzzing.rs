//! Entry points for the fuzz targets under `fuzz/`. Not a stable API.

#[cfg(feature = "evaluator")]
use crate::{DispatchProfileBuilder, Evaluator, read_profile};
#[cfg(feature = "evaluator")]
use sandbox_core::{FakeHost, Mode, Os, SandboxBindMount, SandboxSpec};

/// Builds a spec from `data` (chunks split at `0xFF`, dealt out to bind
/// mounts, protected paths, runner state dirs and exec grants), renders its
/// dispatch profile, reads the text back and compiles it. Inputs the
/// builder refuses are fine; a rendered profile that does not read back to
/// the same rules, or does not compile, is an `Err` describing why.
#[cfg(feature = "evaluator")]
pub fn render_read_back(data: &[u8]) -> Result<(), String> {
    let mut spec = SandboxSpec::new("fuzz", "fuzz");
    spec.mode = match data.first().map(|b| b % 4) {
        Some(1) => Mode::Review,
        Some(2) => Mode::Plan,
        Some(3) => Mode::Orchestrate,
        _ => Mode::Chat,
    };
    for (i, chunk) in data
        .get(1..)
        .unwrap_or_default()
        .split(|b| *b == 0xFF)
        .enumerate()
    {
        let s = String::from_utf8_lossy(chunk).into_owned();
        // Mostly absolute paths, so that inputs reach the renderer.
        let s = if s.starts_with('/') {
            s
        } else {
            format!("/{s}")
        };
        match i % 4 {
            0 => spec.bind_mounts.push(SandboxBindMount {
                host_path: s.clone(),
                guest_path: s,
                read_only: false,
            }),
            1 => spec.protected_paths.push(s),
            2 => spec.runner_state_dirs.push(s),
            _ => spec.exec_grant_roots.push(s),
        }
    }
    let mut host = FakeHost::new(Os::MacOs);
    host.symlink("/tmp", "/private/tmp")
        .symlink("/var", "/private/var");
    let mut b = DispatchProfileBuilder::new(&spec);
    b.home("/Users/fuzz")
        .http_proxy_port(8080)
        .socks_proxy_port(1080);
    let Ok(profile) = b.build(&host) else {
        return Ok(());
    };
    let Ok(rendered) = profile.render() else {
        return Ok(());
    };
    let back = read_profile(rendered.text(), &rendered.params_map())
        .map_err(|e| format!("rendered profile does not read back: {e}"))?;
    let want: Vec<_> = profile.rules().collect();
    let got: Vec<_> = back.rules().collect();
    if want != got {
        return Err("rules read back differ from the rules rendered".into());
    }
    Evaluator::new(&back).map_err(|e| format!("read-back profile does not compile: {e}"))?;
    Ok(())
}

/// Feeds untrusted text to the SBPL reader (with a few parameters) and to
/// the violation log parser, line by line. Only a panic is a finding.
pub fn untrusted_text(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    for line in text.lines() {
        let _ = crate::parse_violation_line(line);
    }
    #[cfg(feature = "evaluator")]
    {
        let mut params = std::collections::BTreeMap::new();
        params.insert("A".to_owned(), "/a".to_owned());
        params.insert("B".to_owned(), "/b\")(allow default)".to_owned());
        if let Ok(ev) = Evaluator::from_sbpl(&text, &params) {
            let _ = ev.decide(crate::Operation::FileReadData, crate::Target::Path("/a/x"));
        }
    }
}
