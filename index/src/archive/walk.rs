//! Walking a skill folder: which files belong to the skill.
//!
//! Always left out: version control metadata as its tools write it (`.git`,
//! `.gitmodules`, `.hg`, `.svn` and the others in [`super::vcs`]),
//! `__pycache__/`, `.DS_Store` and the `.skillignore` files themselves, in
//! any spelling (an archive that holds one of these is refused). A `.skillignore` in the skill folder (or
//! in any folder below it) holds gitignore-style patterns of more files to
//! leave out, read with the `ignore` crate that ripgrep uses. Nothing outside
//! the skill folder (a parent's `.gitignore`, a global excludes file) applies,
//! so a skill packs the same wherever it is checked out.

use std::path::{Path, PathBuf};
use std::sync::LazyLock;

/// The name of the per-skill ignore file.
pub const IGNORE_FILE: &str = ".skillignore";

/// Names that are never part of a skill, wherever they appear and however
/// they are spelled, besides version control metadata; each with why an
/// archive that holds one is refused.
const ALWAYS_EXCLUDED: &[(&str, &str)] = &[
    (
        "__pycache__",
        "Python runs an unchecked-hash `.pyc` from it without reading the source beside it",
    ),
    (".DS_Store", "it is a Finder file"),
    (
        IGNORE_FILE,
        "it would hide files from the checks made when the skill is validated",
    ),
];

/// Returns why `component` is never packed, if it is one of the names
/// packing always leaves out, in any spelling (`__PYCACHE__` too).
pub(crate) fn never_packed(component: &str) -> Option<&'static str> {
    let key = super::collision_key(component);
    ALWAYS_EXCLUDED_KEYS
        .iter()
        .find(|(name, _)| *name == key)
        .map(|(_, reason)| *reason)
}

/// [`ALWAYS_EXCLUDED`] under [`super::collision_key`], folded once, since
/// every entry of every walk is compared with them.
static ALWAYS_EXCLUDED_KEYS: LazyLock<Vec<(String, &'static str)>> = LazyLock::new(|| {
    ALWAYS_EXCLUDED
        .iter()
        .map(|(name, reason)| (super::collision_key(name), *reason))
        .collect()
});

/// What an entry of the skill folder is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryKind {
    File {
        size: u64,
        executable: bool,
    },
    Directory,
    /// Symlinks are never followed; the packer refuses them.
    Symlink,
    /// A socket, FIFO or device; the packer refuses these too.
    Special,
}

/// One entry of a skill folder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WalkEntry {
    /// The path relative to the skill folder, `/`-separated.
    pub path: String,
    pub kind: EntryKind,
}

/// Why a folder could not be walked.
#[derive(Debug, thiserror::Error)]
pub enum WalkError {
    #[error("cannot read {}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the file name {} is not valid UTF-8", path.display())]
    NotUtf8 { path: PathBuf },
    #[error("cannot walk {}: {message}", root.display())]
    Walk { root: PathBuf, message: String },
}

/// Lists the entries of the skill folder `root`, sorted bytewise by path,
/// leaving out what a package leaves out.
pub fn walk(root: &Path) -> Result<Vec<WalkEntry>, WalkError> {
    walk_with(root, true)
}

/// Lists every entry below `root`, leaving out nothing: for checking an
/// installed folder, where any extra file is a change.
pub fn walk_all(root: &Path) -> Result<Vec<WalkEntry>, WalkError> {
    walk_with(root, false)
}

fn walk_with(root: &Path, exclude: bool) -> Result<Vec<WalkEntry>, WalkError> {
    let mut builder = ignore::WalkBuilder::new(root);
    builder
        .standard_filters(false)
        .parents(false)
        .follow_links(false);
    if exclude {
        builder
            .add_custom_ignore_filename(IGNORE_FILE)
            .filter_entry(|entry| {
                let name = entry.file_name().to_str().unwrap_or("");
                never_packed(name).is_none()
                    && !super::vcs::METADATA_NAMES
                        .iter()
                        .any(|(metadata, _)| *metadata == name)
            });
    }
    let mut entries = Vec::new();
    for result in builder.build() {
        let entry = result.map_err(|error| WalkError::Walk {
            root: root.to_owned(),
            message: error.to_string(),
        })?;
        if entry.depth() == 0 {
            continue;
        }
        let relative = entry
            .path()
            .strip_prefix(root)
            .expect("walk stays under its root");
        let path = relative
            .to_str()
            .ok_or_else(|| WalkError::NotUtf8 {
                path: entry.path().to_owned(),
            })?
            .replace(std::path::MAIN_SEPARATOR, "/");
        // The type comes with the folder listing; only files need a stat,
        // for their size and mode.
        let file_type = match entry.file_type() {
            Some(file_type) => file_type,
            None => stat(entry.path())?.file_type(),
        };
        let kind = if file_type.is_symlink() {
            EntryKind::Symlink
        } else if file_type.is_dir() {
            EntryKind::Directory
        } else if file_type.is_file() {
            let metadata = stat(entry.path())?;
            EntryKind::File {
                size: metadata.len(),
                executable: is_executable(&metadata),
            }
        } else {
            EntryKind::Special
        };
        entries.push(WalkEntry { path, kind });
    }
    entries.sort_by(|a, b| a.path.as_bytes().cmp(b.path.as_bytes()));
    Ok(entries)
}

/// Returns the metadata of `path` itself, not of what it links to.
fn stat(path: &Path) -> Result<std::fs::Metadata, WalkError> {
    fs_err::symlink_metadata(path).map_err(|source| WalkError::Io {
        path: path.to_owned(),
        source,
    })
}

#[cfg(unix)]
fn is_executable(metadata: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    metadata.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn is_executable(_metadata: &std::fs::Metadata) -> bool {
    false
}
