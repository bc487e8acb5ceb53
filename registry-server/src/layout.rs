//! Where a data folder (`--root DIR`) keeps its served tree and its private
//! state. Every command finds them here, so `token create --root DIR` puts
//! tokens where `serve --root DIR` reads them, whichever kind DIR is:
//!
//! ```text
//! DIR/public/  DIR/state/          a registry
//! DIR/public/.skillpkg-mirror.json a registry whose tree is a mirror (copied in)
//! DIR/.skillpkg-mirror.json        DIR is a mirror, as `skillpkg mirror SOURCE DIR`
//! DIR/.skillpkg-state/               wrote it; its state (tokens, for a mirror of
//!                                    a private registry) is inside it, in a
//!                                    folder whose name starts with `.`, which
//!                                    is never served
//! ```
//!
//! A mirror is served read-only: it is a copy, changed only by the next
//! `skillpkg mirror` run.

use std::path::{Path, PathBuf};

use skillpkg_index::registry::MIRROR_RECORD_PATH;

/// The served tree, below a registry's data folder.
pub const PUBLIC_DIR: &str = "public";
/// The private state, below a registry's data folder.
pub const STATE_DIR: &str = "state";
/// The private state, inside a mirror served in place.
pub const MIRROR_STATE_DIR: &str = ".skillpkg-state";

/// What a data folder is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A registry: `public/` and `state/`.
    Registry,
    /// A registry folder whose `public/` is a mirror.
    MirrorInPublic,
    /// A mirror, as `skillpkg mirror` writes it, served in place.
    Mirror,
}

/// A data folder's parts.
#[derive(Clone, Debug)]
pub struct DataFolder {
    /// The folder given as `--root`.
    pub root: PathBuf,
    /// The served tree.
    pub tree: PathBuf,
    /// The private state (tokens, owners, the index key).
    pub state: PathBuf,
    pub kind: Kind,
}

impl DataFolder {
    /// Finds the parts of the data folder `root` (which need not exist yet:
    /// then it is a new registry).
    pub fn locate(root: &Path) -> Self {
        let kind = if root.join(MIRROR_RECORD_PATH).is_file() {
            Kind::Mirror
        } else if root.join(PUBLIC_DIR).join(MIRROR_RECORD_PATH).is_file() {
            Kind::MirrorInPublic
        } else {
            Kind::Registry
        };
        let (tree, state) = match kind {
            Kind::Mirror => (root.to_owned(), root.join(MIRROR_STATE_DIR)),
            Kind::Registry | Kind::MirrorInPublic => (root.join(PUBLIC_DIR), root.join(STATE_DIR)),
        };
        Self {
            root: root.to_owned(),
            tree,
            state,
            kind,
        }
    }

    /// Returns true if and only if the tree is a mirror.
    pub fn is_mirror(&self) -> bool {
        self.kind != Kind::Registry
    }
}
