//! What a guarded run ended with, and what its supervisor did.

/// Counters of what the supervisor did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Notifications answered.
    pub handled: u64,
    /// Calls refused because a rule matched.
    pub denied: u64,
    /// Denial report lines dropped because the report descriptor did not
    /// accept them without blocking (or failed).
    pub reports_dropped: u64,
}

/// What the guarded command did, and what the supervisor did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// The exit code to report: the command's, or `128 + N` when a signal
    /// `N` ended it.
    pub exit_code: i32,
    /// The supervisor's counters.
    pub stats: Stats,
}
