//! # skillpkg-index
//!
//! The formats that both sides of skillpkg speak, with no I/O policy of their
//! own: the client (`skillpkg`) and the registry (`skillpkg-registry`) depend
//! on this crate and never on each other.
//!
//! - [`skill`]: `SKILL.md` parsing (raw YAML with positions), the typed
//!   frontmatter model, and validation with stable diagnostic codes.
//! - [`archive`]: the deterministic `.tgz` packer, the hardened unpacker that
//!   every archive from the network goes through, and the `h1:` tree hash.
//! - [`registry`]: the static index a registry is (`docs/index-format.md`).
//! - [`signing`]: minisign-compatible keys and signatures, provenance.
//! - [`checksum`]: `sha256:` checksums; [`name`]: the skill name;
//!   [`confusable`]: names that look or type alike.
//! - [`fs`]: the one atomic file write; [`secret`]: the one type for a
//!   value that is never shown.
//!
//! This crate never prints; callers render [`skill::Diagnostic`]s and errors.

pub mod archive;
pub mod audit;
pub mod checksum;
pub mod confusable;
pub mod fs;
pub mod name;
pub mod registry;
pub mod secret;
pub mod signing;
pub mod skill;
