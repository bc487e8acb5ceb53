//! Skill archives: the deterministic `.tgz` a skill is published as, the
//! hardened routine that unpacks one, and the `h1:` tree hash.
//!
//! Layout (normative text in `docs/archive-format.md`):
//!
//! ```text
//! pdf-processing-1.2.0.tgz     gzip (no name, mtime 0, OS 255, level 6, miniz_oxide)
//!   SKILL.md                   entries relative to the skill root, sorted bytewise
//!   references/                directories: mode 0755
//!   references/api.md          files: mode 0644, or 0755 when executable
//!   scripts/extract.py         uid/gid 0, empty owner names, mtime 1980-01-01
//! ```
//!
//! The same folder always packs to the same bytes, wherever it is and whoever
//! packs it, so a checksum identifies content. Unpacking trusts nothing in the
//! archive: see [`unpack`].

pub mod pack;
mod path;
pub mod tree_hash;
pub mod unpack;
mod vcs;
pub mod walk;

pub use pack::{
    PackError, PackedSkill, check_entries, leave_out_own_tarballs, pack_dir, package_entries,
};
pub use path::{PathProblem, check_portable_path, collision_key};
pub use tree_hash::{FileDigest, TreeHash, tree_hash, tree_hash_h1, tree_matches};
pub(crate) use unpack::rename_no_replace;
pub use unpack::{Ambiguity, UnpackError, UnpackedFile, UnpackedSkill, unpack, unpack_into_empty};
pub use vcs::find_git_repository;

/// The limits a skill archive must stay within.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The sum of the sizes of all files.
    pub max_unpacked_bytes: u64,
    /// The size of the `.tgz` itself.
    pub max_packed_bytes: u64,
    /// Files and directories together.
    pub max_entries: usize,
    /// Path components, so `a/b/c` has depth 3.
    pub max_depth: usize,
    /// Bytes of a path, `/` separators included.
    pub max_path_bytes: usize,
}

/// 8 MiB: large enough for real skills with assets, small enough that a
/// registry can hold every version forever.
pub const DEFAULT_MAX_BYTES: u64 = 8 * 1024 * 1024;

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_unpacked_bytes: DEFAULT_MAX_BYTES,
            max_packed_bytes: DEFAULT_MAX_BYTES,
            max_entries: 10_000,
            max_depth: 16,
            max_path_bytes: 255,
        }
    }
}

/// The modification time of every entry: 1980-01-01T00:00:00Z, the earliest
/// time every archive format (zip included) can represent, so tools that
/// re-pack the content never have to invent one.
pub const FIXED_MTIME: u64 = 315_532_800;

/// Names a folder of a skill for messages: `` `assets/evil` ``, or "the
/// skill's root folder" for `""`.
pub(crate) fn folder_label(folder: &str) -> String {
    if folder.is_empty() {
        "the skill's root folder".to_owned()
    } else {
        format!("`{folder}`")
    }
}

/// Renders a byte count for messages: `8.0 MiB (8388608 bytes)`.
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: &[&str] = &["B", "KiB", "MiB", "GiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}
