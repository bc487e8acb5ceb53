//! A project: `skills.toml`, `skills.lock`, and the agent folders skills
//! are installed into.

pub mod agents;
pub mod arguments;
pub mod collection;
pub mod commit;
pub mod folder;
pub mod git;
pub mod global;
mod indexes;
pub mod install;
pub mod lockfile;
pub mod manifest;
pub mod plan;
pub mod policy;
pub mod resolve;
pub mod signers;
pub mod source;
pub mod source_policy;
pub mod sources;
pub mod targets;
pub mod web;
