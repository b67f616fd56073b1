//! Command-line pieces the example binaries share: the values their flags
//! take (each refusal says what to type instead), the clap value parsers
//! made of them ([`checked`], [`checked_os`]) and `agent-run`'s event log.
//!
//! ```
//! use agent_sandbox_examples::{EventsTo, header_template};
//! assert_eq!(EventsTo::parse("json:3").unwrap(), EventsTo::Descriptor(3));
//! let t = header_template("--broker-template", "header:x-api-key").unwrap();
//! assert_eq!(t.header_name(), "x-api-key");
//! assert_eq!(
//!     header_template("--broker-template", "basic").unwrap_err().to_string(),
//!     "--broker-template takes bearer, token, git-basic or header:NAME \
//!      (NAME a header name such as x-api-key, not a framing or routing header), not \"basic\"",
//! );
//! ```
//!
//! # Input safety
//!
//! Values are checked as given and never echoed longer than 200
//! characters. The file readers read whole files named on the command
//! line; they are meant for configuration files of a few kilobytes.

mod args;
mod events;
mod settings;

pub use args::{
    ArgError, Checked, CheckedOs, checked, checked_os, cidr, env_name, header_template, host,
    host_pattern, port, push_rule_file, push_rule_path, socket_addr, utf8_path,
};
pub use events::{EventLog, EventsTo, ViolationTally};
pub use settings::{MAX_SETTINGS_BYTES, read_settings, settings_args, srt_settings_args};
