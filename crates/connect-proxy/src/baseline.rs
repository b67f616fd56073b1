//! The curated host sets: the baseline allow sets, the GitHub set and the
//! fixed denylist. Each is a documented constant so a host program can show
//! users exactly what a session may reach.

/// LLM provider API endpoints, allowed by the baseline.
pub const BASELINE_LLM_PROVIDERS: &[&str] = &[
    "api.anthropic.com",
    "api.openai.com",
    "generativelanguage.googleapis.com",
    "aiplatform.googleapis.com",
    "*.aiplatform.googleapis.com",
    "bedrock.*.amazonaws.com",
    "bedrock-runtime.*.amazonaws.com",
    "api.mistral.ai",
    "api.groq.com",
    "openrouter.ai",
];

/// Git hosting services other than GitHub, allowed by the baseline.
pub const BASELINE_GIT_HOSTING: &[&str] = &["gitlab.com", "bitbucket.org", "codeberg.org"];

/// Package registries allowed by the baseline.
///
/// Deliberately empty in this crate: registry hosts differ per ecosystem and
/// per organisation (mirrors, private registries), so the host program adds
/// the ones its users need with [`crate::AllowListBuilder::allow`] or the
/// spec's `egress_allowlist`.
pub const BASELINE_PACKAGE_REGISTRIES: &[&str] = &[];

/// GitHub's web, API, git and content hosts, allowed by the baseline.
pub const GITHUB: &[&str] = &[
    "github.com",
    "api.github.com",
    "codeload.github.com",
    "uploads.github.com",
    "*.githubusercontent.com",
];

/// Hosts and addresses no allowlist can open: cloud metadata endpoints and
/// telemetry sinks. Matched before every allow entry, and checked against
/// resolved addresses too.
pub const DENYLIST: &[&str] = &[
    // Cloud instance metadata (AWS, GCP, Azure, OpenStack, Oracle, DigitalOcean).
    "169.254.169.254",
    "[fd00:ec2::254]",
    "169.254.170.2",
    "100.100.100.200",
    "metadata.google.internal",
    "metadata.goog",
    "metadata.azure.com",
    "instance-data",
    "instance-data.ec2.internal",
    // Telemetry sinks.
    "statsig.anthropic.com",
    "*.statsig.com",
    "*.ingest.sentry.io",
    "*.datadoghq.com",
    "api.segment.io",
];
