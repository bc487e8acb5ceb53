//! The end-to-end tests: the real `skillpkg` and `skillpkg-registry`
//! binaries, driven through the kit in `tests/src`. One module a subject.
//!
//! They are one test binary rather than one per file: each binary links the
//! kit and its dependencies again, and linking dominated building the tests.
//! Run one subject with `cargo test --workspace --test e2e -- install::`.
//! `tests/tests/fuzz.rs` stays a binary of its own: it builds and runs the
//! fuzz targets with cargo-fuzz, for minutes, and is run on its own as
//! `--test fuzz`.

mod agents;
mod audit;
mod audit_doors;
mod audit_sets;
mod audit_unscanned;
mod bench;
mod client_server;
mod client_static;
mod collections;
mod completions;
mod config;
mod disk_full;
mod examples;
mod git_versions;
mod global;
mod host_profiles;
mod hostile_http;
mod hostile_project;
mod hostile_registry;
mod index_fetch;
mod init_agents;
mod install;
mod install_crash;
mod install_link;
mod install_plan;
mod interop;
mod marketplace;
mod mcp;
mod mcp_agents;
mod mcp_audit;
mod mcp_conformance;
mod mcp_escape;
mod mcp_grants;
mod mcp_http;
mod mcp_live;
mod mcp_python;
mod mcp_run;
mod mcp_waits;
mod messages;
mod mirror;
mod mirror_serve;
mod new;
mod pack;
mod redirects;
mod registries;
mod registry;
mod registry_state;
mod registry_trust;
mod replicas;
mod search_shards;
mod server_dos;
mod server_hostile;
mod server_ops;
mod services;
mod signer_keys;
mod signing;
mod source_policy;
mod sources;
mod sources_git_hostile;
mod sources_web;
mod spec_examples;
mod storage;
mod tools;
mod trust_policy;
mod validate;
mod web;
