//! The bounds of every git parser in this crate.

/// Bounds for the push parsers, the spool and the pack walk. Every field
/// has a safe default; change one with a setter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GitLimits {
    pub(crate) max_commands: usize,
    pub(crate) max_shallow: usize,
    pub(crate) max_push_options: usize,
    pub(crate) max_command_section: usize,
    pub(crate) max_inflated_body: u64,
    pub(crate) spool_memory: usize,
    pub(crate) max_pack: u64,
    pub(crate) max_objects: u32,
    pub(crate) max_object_size: u64,
    pub(crate) max_commit_size: usize,
    pub(crate) max_walk: usize,
    pub(crate) max_delta_depth: usize,
}

impl Default for GitLimits {
    fn default() -> GitLimits {
        GitLimits {
            max_commands: 1000,
            max_shallow: 1000,
            max_push_options: 100,
            max_command_section: 4 << 20,
            max_inflated_body: 512 << 20,
            spool_memory: 8 << 20,
            max_pack: 512 << 20,
            max_objects: 1_000_000,
            max_object_size: 64 << 20,
            max_commit_size: 1 << 20,
            max_walk: 100_000,
            max_delta_depth: 64,
        }
    }
}

macro_rules! setter {
    ($name:ident, $ty:ty, $doc:literal) => {
        #[doc = $doc]
        pub fn $name(mut self, v: $ty) -> GitLimits {
            self.$name = v;
            self
        }
    };
}

impl GitLimits {
    /// The bound set by [`GitLimits::max_inflated_body`]: how many bytes a
    /// whole push body may have once decoded (a reader of the HTTP body
    /// that streams it into a [`PushBody`](crate::PushBody) bounds it so).
    pub fn inflated_body_limit(&self) -> u64 {
        self.max_inflated_body
    }

    setter!(max_commands, usize, "Ref updates per push (default 1000).");
    setter!(
        max_shallow,
        usize,
        "`shallow` lines per push (default 1000)."
    );
    setter!(
        max_push_options,
        usize,
        "Push options per push (default 100)."
    );
    setter!(
        max_command_section,
        usize,
        "Bytes of the command list and push options before the pack (default 4 MiB)."
    );
    setter!(
        max_inflated_body,
        u64,
        "Bytes a gzip request body may inflate to (default 512 MiB)."
    );
    setter!(
        spool_memory,
        usize,
        "Pack bytes kept in memory before the spool moves to a private temporary file (default 8 MiB)."
    );
    setter!(
        max_pack,
        u64,
        "Hard cap on a pushed pack's size (default 512 MiB)."
    );
    setter!(max_objects, u32, "Objects in one pack (default 1 000 000).");
    setter!(
        max_object_size,
        u64,
        "Inflated size of one object or delta (default 64 MiB)."
    );
    setter!(
        max_commit_size,
        usize,
        "Inflated size of one commit object (default 1 MiB)."
    );
    setter!(
        max_walk,
        usize,
        "Commits visited by one fast-forward proof (default 100 000)."
    );
    setter!(
        max_delta_depth,
        usize,
        "Length of a delta chain resolved to reach a commit (default 64)."
    );
}
