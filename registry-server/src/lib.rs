//! # skillpkg-registry
//!
//! The registry side of skillpkg: it accepts publishes, yanks, owner and
//! key changes, and writes the static index of `docs/index-format.md`, which it
//! serves itself or leaves to any static host.
//!
//! ```text
//! DIR/public/    the static tree (skillpkg_index::registry), served at /
//! DIR/state/     tokens (hashed), owners and download counts: private, never served
//! ```
//!
//! (or a mirror written by `skillpkg mirror`, served in place: [`layout`]).
//!
//! - [`registry`]: the operations, under one write lock.
//! - [`publish`]: checking an uploaded archive (and its signature and
//!   provenance) into its index line.
//! - [`keys`]: the publisher keys of each skill, `keys/<name>.json`.
//! - [`server`]: the HTTP layer (axum): static files and `/api/v1`.
//! - [`build`]: the same tree from a folder of archives, with no server.
//! - [`state`]: tokens and owners.
//! - [`downloads`]: how often each skill's archives were served.
//! - [`layout`]: where a data folder keeps its tree and its state.
//! - [`marketplace`]: the tree as a Claude Code and Codex plugin
//!   marketplace: a git repository a skill, and `marketplace.json`.
//! - [`metadata`]: the registry's keys and its signed metadata.
//! - [`report`]: an error and its causes, told in one line.
//! - [`text`]: the rule for text stored from a client: no control
//!   characters.
//! - [`web`]: the registry's web pages, static HTML in the tree.

pub mod build;
pub mod db;
pub mod downloads;
pub mod keys;
pub mod layout;
pub mod marketplace;
pub mod metadata;
pub mod publish;
pub mod registry;
pub mod report;
pub mod server;
pub mod state;
pub mod storage;
pub mod text;
pub mod web;
