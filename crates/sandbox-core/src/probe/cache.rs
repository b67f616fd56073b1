//! Computing the probe once and reusing it: a cache for any host, and the
//! real host's probe under a time limit.

use super::{MicrovmProbe, Platform, ProbeReport, unavailable};
use crate::host::HostView;
use std::sync::OnceLock;

/// A probe result computed once and reused.
///
/// ```
/// use sandbox_core::{FakeHost, Os, ProbeCache};
/// let cache = ProbeCache::new();
/// let host = FakeHost::new(Os::Windows);
/// let first = cache.get_or_probe(&host) as *const _;
/// let second = cache.get_or_probe(&host) as *const _;
/// assert_eq!(first, second);
/// ```
#[derive(Debug, Default)]
pub struct ProbeCache {
    cell: OnceLock<ProbeReport>,
}

impl ProbeCache {
    /// An empty cache.
    pub const fn new() -> ProbeCache {
        ProbeCache {
            cell: OnceLock::new(),
        }
    }

    /// The cached report, probing `host` the first time only.
    pub fn get_or_probe<H: HostView + ?Sized>(&self, host: &H) -> &ProbeReport {
        self.cell.get_or_init(|| ProbeReport::probe(host))
    }
}

/// How long the real host's probe may take in all.
pub const AMBIENT_PROBE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// The real host's probe, computed at the first call and reused by every
/// later one in this process. It reads ambient authority (PATH and the file
/// system), as its name says. The whole probe runs on a helper thread
/// bounded by [`AMBIENT_PROBE_TIMEOUT`]; a probe that does not finish in
/// time reports no native sandbox (fail closed, never a hang).
pub fn probe_ambient() -> &'static ProbeReport {
    static CACHE: OnceLock<ProbeReport> = OnceLock::new();
    CACHE.get_or_init(|| {
        crate::host::run_with_timeout(AMBIENT_PROBE_TIMEOUT, || {
            ProbeReport::probe(&crate::AmbientHost::from_ambient_untimed())
        })
        .unwrap_or_else(timed_out_report)
    })
}

fn timed_out_report() -> ProbeReport {
    ProbeReport {
        platform: Platform::Other,
        native: unavailable(format!(
            "the host probe did not finish within {} s; no sandbox is offered",
            AMBIENT_PROBE_TIMEOUT.as_secs()
        )),
        microvm: MicrovmProbe {
            available: false,
            runtime: None,
            kind: None,
            version: None,
            note: None,
            reason: Some("the host probe timed out".into()),
        },
    }
}
