//! The skill runtime behind `skillpkg mcp` (docs/runtime.md): an MCP server
//! over the skills a host sees from a project, with sessions (spec 001),
//! the skills' own tools (spec 003), MCP's Skills Extension (SEP-2640),
//! sandboxed scripts and an audit log.
//!
//! It depends on [`crate::project`] (the lock, the install targets) and on
//! `skillpkg_index::skill` (the skill model), never the other way round.

pub mod access;
pub mod arrival;
pub mod audit;
pub mod catalog;
pub mod exec;
pub mod grant;
pub mod handles;
pub mod input;
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
pub mod jail;
pub mod live;
pub mod peer;
pub mod protected;
pub mod resources;
pub mod run;
pub mod sandbox;
pub mod served_md;
pub mod server;
pub mod session;
pub mod setup;
pub mod tool_call;
pub mod vetting;
pub mod watch;
pub mod wire;
