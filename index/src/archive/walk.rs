//! Walking a skill folder: which files belong to the skill.
//!
//! Always left out: version control metadata as its tools write it (`.git`,
//! `.gitmodules`, `.hg`, `.svn` and the others in [`super::vcs`]),
//! `__pycache__/`, `.DS_Store` and the `.skillignore` files themselves, in
//! any spelling (an archive that holds one of these is refused). A
//! `.skillignore` in the skill folder (or in any folder below it) holds
//! gitignore-style patterns of more files to leave out, matched with the
//! `ignore` crate that ripgrep uses, as its walker does: the patterns of the
//! deepest `.skillignore` that says anything about a path decide (so `!keep`
//! below re-includes what a pattern above left out), and a folder left out
//! is not entered. Lines that are not valid patterns are skipped, as git
//! does. Nothing outside the skill folder (a parent's `.gitignore`, a global
//! excludes file) applies, so a skill packs the same wherever it is checked
//! out.
//!
//! The walk is a loop over the folders' listings, not the `ignore` crate's
//! walker: that one stats the root several times and looks for an ignore
//! file in each folder whether or not the listing has one, which was most of
//! the system calls of validating a skill. Symlinks are listed, never
//! followed, and a `.skillignore` is read only when it is a regular file (a
//! link could point at a device or a FIFO that never ends).

use std::ffi::{OsStr, OsString};
use std::fs::FileType;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::LazyLock;

use ignore::gitignore::{Gitignore, GitignoreBuilder};

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
}

/// The names and types of the entries of one folder, as the system lists
/// them (the type comes with the listing, without a stat).
#[derive(Debug)]
pub struct Listing {
    entries: Vec<(OsString, FileType)>,
}

impl Listing {
    /// Lists the folder `dir`.
    pub fn read(dir: &Path) -> std::io::Result<Self> {
        let mut entries = Vec::new();
        for entry in fs_err::read_dir(dir)? {
            let entry = entry?;
            entries.push((entry.file_name(), entry.file_type()?));
        }
        Ok(Self { entries })
    }

    /// Returns each entry's name and type, in the order listed.
    pub fn entries(&self) -> impl Iterator<Item = (&OsStr, FileType)> {
        self.entries
            .iter()
            .map(|(name, file_type)| (name.as_os_str(), *file_type))
    }
}

/// Lists the entries of the skill folder `root`, sorted bytewise by path,
/// leaving out what a package leaves out.
pub fn walk(root: &Path) -> Result<Vec<WalkEntry>, WalkError> {
    walk_with(root, listing_of(root)?, true)
}

/// Like [`walk`], for a `root` already listed: the listing that found its
/// SKILL.md serves the walk too.
pub fn walk_listed(root: &Path, listing: Listing) -> Result<Vec<WalkEntry>, WalkError> {
    walk_with(root, listing, true)
}

/// Lists every entry below `root`, leaving out nothing: for checking an
/// installed folder, where any extra file is a change.
pub fn walk_all(root: &Path) -> Result<Vec<WalkEntry>, WalkError> {
    walk_with(root, listing_of(root)?, false)
}

fn listing_of(dir: &Path) -> Result<Listing, WalkError> {
    Listing::read(dir).map_err(|source| WalkError::Io {
        path: dir.to_owned(),
        source,
    })
}

/// The `.skillignore` patterns in force in a folder: its own, then those of
/// the folders above it, nearest first.
struct Patterns {
    own: Gitignore,
    above: Option<Rc<Patterns>>,
}

impl Patterns {
    /// Returns true if and only if the nearest `.skillignore` that matches
    /// `path` leaves it out (a `!pattern` match keeps it).
    fn leave_out(patterns: Option<&Rc<Self>>, path: &Path, is_dir: bool) -> bool {
        let mut next = patterns;
        while let Some(patterns) = next {
            let found = patterns.own.matched(path, is_dir);
            if found.is_ignore() {
                return true;
            }
            if found.is_whitelist() {
                return false;
            }
            next = patterns.above.as_ref();
        }
        false
    }
}

/// Reads the `.skillignore` of `dir` into a matcher for the paths below it;
/// unreadable files and invalid lines add no pattern.
fn read_patterns(dir: &Path) -> Option<Gitignore> {
    let mut builder = GitignoreBuilder::new(dir);
    // A partly invalid file still gives its valid patterns: the builder
    // keeps them and reports the rest, which git skips as well.
    let _skipped = builder.add(dir.join(IGNORE_FILE));
    builder.build().ok().filter(|matcher| !matcher.is_empty())
}

/// A folder the walk has still to list.
struct Folder {
    path: PathBuf,
    /// The path relative to the root, `/`-separated (`""` for the root).
    relative: String,
    /// The patterns in force in the folder that holds it.
    above: Option<Rc<Patterns>>,
    /// Its listing, when already read.
    listing: Option<Listing>,
}

fn walk_with(root: &Path, listing: Listing, exclude: bool) -> Result<Vec<WalkEntry>, WalkError> {
    let mut entries = Vec::new();
    // A loop over the folders still to list, not recursion, so that a deep
    // tree cannot exhaust the stack.
    let mut pending = vec![Folder {
        path: root.to_owned(),
        relative: String::new(),
        above: None,
        listing: Some(listing),
    }];
    while let Some(Folder {
        path: dir,
        relative: relative_dir,
        above,
        listing,
    }) = pending.pop()
    {
        let listing = match listing {
            Some(listing) => listing,
            None => listing_of(&dir)?,
        };
        let has_ignore_file = exclude
            && listing
                .entries()
                .any(|(name, file_type)| name == OsStr::new(IGNORE_FILE) && file_type.is_file());
        let patterns = match has_ignore_file.then(|| read_patterns(&dir)).flatten() {
            Some(own) => Some(Rc::new(Patterns { own, above })),
            None => above,
        };
        for (name, file_type) in listing.entries() {
            let path = dir.join(name);
            let is_dir = file_type.is_dir();
            if exclude {
                let text = name.to_str().unwrap_or("");
                let always_excluded = never_packed(text).is_some()
                    || super::vcs::METADATA_NAMES
                        .iter()
                        .any(|(metadata, _)| *metadata == text);
                if always_excluded || Patterns::leave_out(patterns.as_ref(), &path, is_dir) {
                    continue;
                }
            }
            let Some(name) = name.to_str() else {
                return Err(WalkError::NotUtf8 { path });
            };
            let relative = if relative_dir.is_empty() {
                name.to_owned()
            } else {
                format!("{relative_dir}/{name}")
            };
            let kind = if file_type.is_symlink() {
                EntryKind::Symlink
            } else if is_dir {
                EntryKind::Directory
            } else if file_type.is_file() {
                // Only files need a stat, for their size and mode.
                let metadata = stat(&path)?;
                EntryKind::File {
                    size: metadata.len(),
                    executable: is_executable(&metadata),
                }
            } else {
                EntryKind::Special
            };
            if is_dir {
                pending.push(Folder {
                    path,
                    relative: relative.clone(),
                    above: patterns.clone(),
                    listing: None,
                });
            }
            entries.push(WalkEntry {
                path: relative,
                kind,
            });
        }
    }
    entries.sort_by(|a, b| a.path.as_bytes().cmp(b.path.as_bytes()));
    Ok(entries)
}

/// Reads the file at `path`, which the walk found to be `size` bytes, and
/// at most `limit` bytes of it. Sizing the buffer from the walk spares the
/// stat and the seek that [`std::fs::read`] makes to size it; the limit
/// keeps a file that grew since the walk from being read whole.
pub(crate) fn read_file(path: &Path, size: u64, limit: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read as _;
    let file = fs_err::File::open(path)?;
    let capacity = usize::try_from(size.min(limit)).unwrap_or(usize::MAX);
    // One byte more than the size, so that the read which finds the end of
    // the file needs no larger buffer.
    let mut bytes = Vec::with_capacity(capacity.saturating_add(1));
    file.take(limit).read_to_end(&mut bytes)?;
    Ok(bytes)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The walk as the `ignore` crate's walker makes it, which this module
    /// used before: the walk above must list exactly what it listed.
    fn walk_with_ignore_walker(root: &Path) -> Vec<WalkEntry> {
        let mut builder = ignore::WalkBuilder::new(root);
        builder
            .standard_filters(false)
            .parents(false)
            .follow_links(false)
            .add_custom_ignore_filename(IGNORE_FILE)
            .filter_entry(|entry| {
                let name = entry.file_name().to_str().unwrap_or("");
                never_packed(name).is_none()
                    && !super::super::vcs::METADATA_NAMES
                        .iter()
                        .any(|(metadata, _)| *metadata == name)
            });
        let mut entries: Vec<WalkEntry> = builder
            .build()
            .map(|result| result.expect("a readable tree"))
            .filter(|entry| entry.depth() > 0)
            .map(|entry| {
                let path = entry
                    .path()
                    .strip_prefix(root)
                    .unwrap()
                    .to_str()
                    .unwrap()
                    .to_owned();
                let metadata = fs_err::symlink_metadata(entry.path()).unwrap();
                let kind = if metadata.file_type().is_symlink() {
                    EntryKind::Symlink
                } else if metadata.is_dir() {
                    EntryKind::Directory
                } else {
                    EntryKind::File {
                        size: metadata.len(),
                        executable: is_executable(&metadata),
                    }
                };
                WalkEntry { path, kind }
            })
            .collect();
        entries.sort_by(|a, b| a.path.as_bytes().cmp(b.path.as_bytes()));
        entries
    }

    /// Writes `files` (path, content) under a new temporary folder.
    fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (path, content) in files {
            let path = dir.path().join(path);
            fs_err::create_dir_all(path.parent().unwrap()).unwrap();
            fs_err::write(path, content).unwrap();
        }
        dir
    }

    fn paths(entries: &[WalkEntry]) -> Vec<&str> {
        entries.iter().map(|entry| entry.path.as_str()).collect()
    }

    #[test]
    fn skillignore_patterns_apply_as_the_ignore_walker_applies_them() {
        let trees: &[&[(&str, &str)]] = &[
            &[
                (".skillignore", "*.log\nbuild/\n!keep.log\n/anchored.txt\n"),
                ("SKILL.md", "x"),
                ("a.log", ""),
                ("keep.log", ""),
                ("build/x", ""),
                ("sub/build/y", ""),
                ("sub/anchored.txt", ""),
                ("anchored.txt", ""),
                ("sub/b.log", ""),
            ],
            // A nearer `.skillignore` decides first, `!` re-includes.
            &[
                (".skillignore", "*.log\n"),
                ("sub/.skillignore", "!b.log\n*.md\n"),
                ("d.md", ""),
                ("sub/b.log", ""),
                ("sub/c.md", ""),
                ("sub/deeper/e.log", ""),
                ("sub/deeper/f.md", ""),
            ],
            // A folder left out is not entered, whatever is said below it.
            &[
                (".skillignore", "data/\n!data/keep.txt\n"),
                ("data/keep.txt", ""),
                ("data/.skillignore", "!keep.txt\n"),
                ("other/keep.txt", ""),
            ],
            // An invalid line is skipped; the others still apply.
            &[(".skillignore", "[\n*.tmp\n"), ("a.tmp", ""), ("a.txt", "")],
            // Always left out, in the spellings the walk leaves out.
            &[
                ("__pycache__/x.pyc", ""),
                ("sub/__PYCACHE__/y.pyc", ""),
                (".DS_Store", ""),
                (".git/config", ""),
                (".gitmodules", ""),
                (".hg/hgrc", ""),
                (".GIT/config", ""),
                (".skillignore/x", ""),
                ("kept.txt", ""),
            ],
        ];
        for files in trees {
            let dir = tree(files);
            let expected = walk_with_ignore_walker(dir.path());
            assert_eq!(walk(dir.path()).unwrap(), expected, "{files:?}");
        }
    }

    #[test]
    fn the_walk_leaves_out_what_it_should() {
        let dir = tree(&[
            (".skillignore", "*.log\n"),
            ("sub/.skillignore", "!b.log\n"),
            ("a.log", ""),
            ("sub/b.log", ""),
            ("__pycache__/x.pyc", ""),
            (".git/config", ""),
            ("SKILL.md", "x"),
        ]);
        assert_eq!(
            paths(&walk(dir.path()).unwrap()),
            ["SKILL.md", "sub", "sub/b.log"]
        );
        let everything = walk_all(dir.path()).unwrap();
        assert_eq!(everything.len(), 10, "{:?}", paths(&everything));
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_are_listed_not_followed() {
        let dir = tree(&[("real/file.txt", "x"), ("SKILL.md", "x")]);
        std::os::unix::fs::symlink("real", dir.path().join("link")).unwrap();
        std::os::unix::fs::symlink("/etc", dir.path().join("etc")).unwrap();
        let entries = walk(dir.path()).unwrap();
        assert_eq!(entries, walk_with_ignore_walker(dir.path()));
        assert_eq!(
            paths(&entries),
            ["SKILL.md", "etc", "link", "real", "real/file.txt"]
        );
        assert_eq!(entries[1].kind, EntryKind::Symlink);
    }
}
