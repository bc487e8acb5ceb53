//! The deterministic packer.

use std::path::{Path, PathBuf};

use flate2::{Compression, GzBuilder};
use sha2::{Digest, Sha256};

use std::io::Read as _;

use super::walk::{self, EntryKind, WalkEntry, WalkError};
use super::{
    FIXED_MTIME, FileDigest, Limits, PathProblem, TreeHash, check_portable_path, collision_key,
    tree_hash,
};
use crate::name::{SKILL_MD, SkillName};

/// The gzip compression level. Pinned with the backend (miniz_oxide, the
/// `rust_backend` feature of flate2): another level or backend would give
/// other bytes for the same content.
const GZIP_LEVEL: u32 = 6;

/// The gzip header's operating system byte: 255, "unknown", so the archive
/// does not say where it was made.
const GZIP_OS_UNKNOWN: u8 = 255;

/// How many of the largest files an over-size error lists.
const LARGEST_SHOWN: usize = 5;

/// A packed skill, ready to be written or uploaded.
#[derive(Clone, Debug)]
pub struct PackedSkill {
    pub name: SkillName,
    pub version: semver::Version,
    /// The `.tgz` bytes.
    pub tarball: Vec<u8>,
    /// The SHA-256 of `tarball`.
    pub sha256: [u8; 32],
    /// The tree hash of the files.
    pub tree: TreeHash,
    /// The files, sorted bytewise by path.
    pub files: Vec<FileDigest>,
    /// The number of directory entries.
    pub directories: usize,
    /// The sum of the file sizes.
    pub unpacked_bytes: u64,
}

impl PackedSkill {
    /// Returns true if and only if the files hash to `expected`, an `h2:`
    /// or `h1:` tree hash.
    pub fn tree_is(&self, expected: &str) -> bool {
        super::tree_matches(&self.files, expected)
    }

    /// Returns the conventional file name: `<name>-<version>.tgz`.
    pub fn file_name(&self) -> String {
        format!("{}-{}.tgz", self.name, self.version)
    }
}

/// Which size went over the limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SizeKind {
    /// The sum of the file sizes.
    Unpacked,
    /// The `.tgz`.
    Packed,
}

impl std::fmt::Display for SizeKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Unpacked => "unpacked",
            Self::Packed => "packed",
        })
    }
}

/// Why a folder cannot be packed.
#[derive(Debug, thiserror::Error)]
pub enum PackError {
    #[error(transparent)]
    Walk(#[from] WalkError),
    #[error("{}", match found {
        Some(found) => format!("the skill file is `{found}`; a package needs it named `SKILL.md`"),
        None => "`SKILL.md` is left out by a `.skillignore` pattern".to_owned(),
    })]
    SkillMdNotPacked {
        /// The differently cased skill file, when there is one.
        found: Option<String>,
    },
    #[error("`{path}` is a symlink; skills cannot contain symlinks")]
    Symlink { path: String },
    #[error("`{path}` is not a regular file or folder (a socket, FIFO or device)")]
    SpecialFile { path: String },
    #[error("`{path}` is not a portable path")]
    UnportablePath {
        path: String,
        #[source]
        problem: PathProblem,
    },
    #[error("`{path}` is version control metadata, which a package may not carry")]
    VersionControl {
        path: String,
        #[source]
        problem: PathProblem,
    },
    #[error(
        "{} is laid out as a Git repository (`HEAD` beside `objects`, `refs` or `commondir`), which git would read and act on",
        super::folder_label(folder)
    )]
    GitRepository { folder: String },
    #[error("`{path}` and `{other}` would be the same file on macOS and Windows")]
    PathCollision { path: String, other: String },
    #[error("the skill has {count} files and folders; the limit is {limit}")]
    TooManyEntries { count: usize, limit: usize },
    #[error(
        "the skill is {} {kind} ({size} bytes), {} over the {} limit",
        super::human_bytes(*size), super::human_bytes(size - limit), super::human_bytes(*limit)
    )]
    TooLarge {
        kind: SizeKind,
        size: u64,
        limit: u64,
        /// The largest files, largest first.
        largest: Vec<(String, u64)>,
    },
    #[error("cannot read {}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl PackError {
    /// Returns advice on what to do, when there is any. Every error with a
    /// hint is the author's to fix; the others come from the machine.
    pub fn hint(&self) -> Option<String> {
        match self {
            Self::SkillMdNotPacked { found: Some(found) } => {
                Some(format!("rename `{found}` to `SKILL.md`"))
            }
            Self::SkillMdNotPacked { found: None } => {
                Some("remove the pattern that matches `SKILL.md` from `.skillignore`".into())
            }
            Self::Symlink { .. } => Some(
                "replace the symlink with a copy of its target, or list it in `.skillignore`"
                    .into(),
            ),
            Self::SpecialFile { .. }
            | Self::UnportablePath { .. }
            | Self::VersionControl { .. }
            | Self::PathCollision { .. } => {
                Some("rename or remove it, or list it in `.skillignore`".into())
            }
            Self::GitRepository { .. } => Some(
                "rename `HEAD`, or list the folder in `.skillignore`: a skill cannot ship a repository"
                    .into(),
            ),
            Self::Walk(WalkError::NotUtf8 { .. }) => {
                Some("rename it: file names must be UTF-8".into())
            }
            Self::TooManyEntries { .. } => {
                Some("list generated or vendored files in `.skillignore`".into())
            }
            Self::TooLarge { largest, .. } => {
                let list: Vec<String> = largest
                    .iter()
                    .map(|(path, size)| format!("{path} ({})", super::human_bytes(*size)))
                    .collect();
                Some(format!(
                    "the largest files are: {}; list what the skill does not need in `.skillignore`",
                    list.join(", ")
                ))
            }
            Self::Walk(_) | Self::Io { .. } => None,
        }
    }
}

/// Returns the entries of `dir` that a package of skill `name` holds: the
/// walk, less tarballs of this skill at its root (so packing from inside the
/// skill folder twice gives the same bytes).
pub fn package_entries(dir: &Path, name: &SkillName) -> Result<Vec<WalkEntry>, WalkError> {
    let mut entries = walk::walk(dir)?;
    leave_out_own_tarballs(&mut entries, name);
    Ok(entries)
}

/// Removes from the walk of a skill folder the tarballs of skill `name` at
/// its root, which [`package_entries`] leaves out.
pub fn leave_out_own_tarballs(entries: &mut Vec<WalkEntry>, name: &SkillName) {
    let prefix = format!("{name}-");
    entries.retain(|entry| {
        let own_tarball = matches!(entry.kind, EntryKind::File { .. })
            && !entry.path.contains('/')
            && entry.path.starts_with(&prefix)
            && entry.path.ends_with(".tgz");
        !own_tarball
    });
}

/// Returns every reason the entries cannot be packed within `limits`,
/// in the order of the entries; limits on counts and sizes come last.
pub fn check_entries(entries: &[WalkEntry], limits: &Limits) -> Vec<PackError> {
    let mut problems = Vec::new();
    if !entries.iter().any(|entry| entry.path == SKILL_MD) {
        let found = entries
            .iter()
            .find(|entry| !entry.path.contains('/') && entry.path.eq_ignore_ascii_case(SKILL_MD))
            .map(|entry| entry.path.clone());
        problems.push(PackError::SkillMdNotPacked { found });
    }
    let mut seen = std::collections::HashMap::new();
    let mut file_sizes = Vec::new();
    for entry in entries {
        match entry.kind {
            EntryKind::Symlink => problems.push(PackError::Symlink {
                path: entry.path.clone(),
            }),
            EntryKind::Special => problems.push(PackError::SpecialFile {
                path: entry.path.clone(),
            }),
            EntryKind::File { size, .. } => file_sizes.push((entry.path.clone(), size)),
            EntryKind::Directory => {}
        }
        match check_portable_path(&entry.path, limits) {
            Ok(()) => {}
            Err(PathProblem::VersionControl { component, .. })
                if !entry.path.ends_with(component.as_str()) =>
            {
                // Inside a folder already reported for itself.
            }
            Err(problem @ PathProblem::VersionControl { .. }) => {
                problems.push(PackError::VersionControl {
                    path: entry.path.clone(),
                    problem,
                });
            }
            Err(problem) => problems.push(PackError::UnportablePath {
                path: entry.path.clone(),
                problem,
            }),
        }
        if let Some(other) = seen.insert(collision_key(&entry.path), entry.path.clone()) {
            problems.push(PackError::PathCollision {
                path: entry.path.clone(),
                other,
            });
        }
    }
    if let Some(folder) =
        super::find_git_repository(entries.iter().map(|entry| entry.path.as_str()))
    {
        problems.push(PackError::GitRepository { folder });
    }
    if entries.len() > limits.max_entries {
        problems.push(PackError::TooManyEntries {
            count: entries.len(),
            limit: limits.max_entries,
        });
    }
    let unpacked_bytes: u64 = file_sizes.iter().map(|(_, size)| size).sum();
    if unpacked_bytes > limits.max_unpacked_bytes {
        problems.push(too_large(
            SizeKind::Unpacked,
            unpacked_bytes,
            limits.max_unpacked_bytes,
            file_sizes,
        ));
    }
    problems
}

/// Packs the skill folder `dir` as `name` at `version`.
///
/// The caller validates the skill first; this function checks only what
/// makes an archive unsafe, unportable or too large.
pub fn pack_dir(
    dir: &Path,
    name: SkillName,
    version: semver::Version,
    limits: &Limits,
) -> Result<PackedSkill, PackError> {
    let entries = package_entries(dir, &name)?;
    if let Some(problem) = check_entries(&entries, limits).into_iter().next() {
        return Err(problem);
    }
    let file_sizes = || {
        entries
            .iter()
            .filter_map(|entry| match entry.kind {
                EntryKind::File { size, .. } => Some((entry.path.clone(), size)),
                _ => None,
            })
            .collect::<Vec<_>>()
    };

    let encoder = GzBuilder::new()
        .mtime(0)
        .operating_system(GZIP_OS_UNKNOWN)
        .write(Vec::new(), Compression::new(GZIP_LEVEL));
    let mut builder = tar::Builder::new(encoder);
    let mut files = Vec::new();
    let mut directories = 0;
    let mut unpacked_bytes = 0;
    let io_error = |path: &str| {
        let path = dir.join(path);
        move |source| PackError::Io { path, source }
    };
    for entry in &entries {
        let mut header = tar::Header::new_ustar();
        header.set_uid(0);
        header.set_gid(0);
        header.set_mtime(FIXED_MTIME);
        match entry.kind {
            EntryKind::Directory => {
                directories += 1;
                header.set_entry_type(tar::EntryType::Directory);
                header.set_mode(0o755);
                header.set_size(0);
                builder
                    .append_data(&mut header, format!("{}/", entry.path), std::io::empty())
                    .map_err(io_error(&entry.path))?;
            }
            EntryKind::File { executable, .. } => {
                // Read the bytes once, so the hash and the archive hold the
                // same content even if the file changes meanwhile; and read
                // no more than the limit allows, even if it grew.
                let mut contents = Vec::new();
                let remaining = limits.max_unpacked_bytes.saturating_sub(unpacked_bytes);
                fs_err::File::open(dir.join(&entry.path))
                    .and_then(|file| {
                        file.take(remaining.saturating_add(1))
                            .read_to_end(&mut contents)
                    })
                    .map_err(io_error(&entry.path))?;
                unpacked_bytes += contents.len() as u64;
                if unpacked_bytes > limits.max_unpacked_bytes {
                    return Err(too_large(
                        SizeKind::Unpacked,
                        unpacked_bytes,
                        limits.max_unpacked_bytes,
                        file_sizes(),
                    ));
                }
                header.set_entry_type(tar::EntryType::Regular);
                header.set_mode(if executable { 0o755 } else { 0o644 });
                header.set_size(contents.len() as u64);
                builder
                    .append_data(&mut header, &entry.path, contents.as_slice())
                    .map_err(io_error(&entry.path))?;
                files.push(FileDigest {
                    path: entry.path.clone(),
                    sha256: Sha256::digest(&contents).into(),
                    executable,
                });
            }
            EntryKind::Symlink | EntryKind::Special => unreachable!("refused by check_entries"),
        }
    }
    let tarball = builder
        .into_inner()
        .and_then(flate2::write::GzEncoder::finish)
        .map_err(io_error(""))?;
    if tarball.len() as u64 > limits.max_packed_bytes {
        return Err(too_large(
            SizeKind::Packed,
            tarball.len() as u64,
            limits.max_packed_bytes,
            file_sizes(),
        ));
    }
    Ok(PackedSkill {
        name,
        version,
        sha256: Sha256::digest(&tarball).into(),
        tree: tree_hash(&files),
        tarball,
        files,
        directories,
        unpacked_bytes,
    })
}

fn too_large(
    kind: SizeKind,
    size: u64,
    limit: u64,
    mut file_sizes: Vec<(String, u64)>,
) -> PackError {
    file_sizes.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    file_sizes.truncate(LARGEST_SHOWN);
    PackError::TooLarge {
        kind,
        size,
        limit,
        largest: file_sizes,
    }
}
