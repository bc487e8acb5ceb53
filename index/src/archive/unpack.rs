//! The hardened unpacker: every archive that reaches a disk goes through here.
//!
//! The archive is an attacker's input. So:
//!
//! - the compressed input, the decompressed stream and the sum of file sizes
//!   each have a cap that is enforced while streaming, before the bytes that
//!   would exceed it are written (a gzip bomb stops at the cap);
//! - only regular files and directories are accepted (plus PAX and GNU
//!   long-name records, which the `tar` crate folds into the entry they
//!   describe); links, devices, FIFOs, sparse files, PAX global headers and
//!   entries of unknown types are refused, never skipped;
//! - an entry that another reader (GNU tar, Python's `tarfile`) would read
//!   differently is refused: see [`Ambiguity`] for each case;
//! - every path must pass [`check_portable_path`], which also refuses version
//!   control metadata (`.git` and its kin, in any spelling), no folder may be
//!   laid out as a Git repository, and no two entries may collide even on a
//!   case-insensitive, normalising file system;
//! - what packing never writes (`__pycache__`, `.skillignore`, `.DS_Store`)
//!   is refused, and `SKILL.md` must be a file at the root;
//! - a PAX `size` that disagrees with the header's size is refused, since two
//!   readers could then see two different archives;
//! - anything after the end of the gzip stream, or a stream cut short, is
//!   refused;
//! - everything is written into a fresh temporary folder beside the target,
//!   files opened with create-new, then the folder is renamed into place. On
//!   any error the temporary folder is removed and the target never appears.
//!
//! `tar::Archive::unpack` is never used: it follows its own, looser rules.
//! Callers verify the tarball's SHA-256 (and signature) before calling this.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::pack::SizeKind;
use super::walk;
use super::{
    FileDigest, Limits, PathProblem, TreeHash, check_portable_path, collision_key, human_bytes,
    tree_hash,
};
use crate::name::SKILL_MD;

/// Bytes of tar framing (headers, padding, end blocks, PAX records) allowed
/// in the decompressed stream on top of the file contents: generous for any
/// honest archive within the entry limit, small next to a gzip bomb.
const FRAMING_ALLOWANCE_PER_ENTRY: u64 = 4 * 512;
const FRAMING_ALLOWANCE: u64 = 1024 * 1024;

/// A file as unpacked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnpackedFile {
    /// The path relative to the target, `/`-separated.
    pub path: String,
    pub size: u64,
    pub executable: bool,
    pub sha256: [u8; 32],
}

/// What [`unpack`] wrote.
#[derive(Clone, Debug)]
pub struct UnpackedSkill {
    /// The files, sorted bytewise by path.
    pub files: Vec<UnpackedFile>,
    /// The (`h2:`) tree hash of the files.
    pub tree: TreeHash,
}

impl UnpackedSkill {
    /// The files' digests.
    pub fn digests(&self) -> Vec<FileDigest> {
        self.files
            .iter()
            .map(|file| FileDigest {
                path: file.path.clone(),
                sha256: file.sha256,
                executable: file.executable,
            })
            .collect()
    }

    /// Returns true if and only if the files hash to `expected`, an `h2:`
    /// or `h1:` tree hash.
    pub fn tree_is(&self, expected: &str) -> bool {
        super::tree_matches(&self.digests(), expected)
    }
}

/// Why an archive was refused.
#[derive(Debug, thiserror::Error)]
pub enum UnpackError {
    #[error("{} already exists", path.display())]
    TargetExists { path: PathBuf },
    #[error("I/O error on {}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("the archive is corrupt or cut short")]
    Corrupt(#[source] io::Error),
    #[error("the archive continues after the end of its gzip stream")]
    TrailingData,
    #[error("the archive is over the {kind} size limit of {}", human_bytes(*limit))]
    TooLarge { kind: SizeKind, limit: u64 },
    #[error("the archive holds more than {limit} entries")]
    TooManyEntries { limit: usize },
    #[error("entry `{path}` is not valid UTF-8")]
    PathNotUtf8 { path: String },
    #[error("entry `{path}` has an unsafe path")]
    UnsafePath {
        path: String,
        #[source]
        problem: PathProblem,
    },
    #[error("entry `{path}` is a {kind}; only regular files and directories are allowed")]
    UnsupportedEntry { path: String, kind: &'static str },
    #[error(
        "entry `{path}` has the unknown type `{}`; only regular files and directories are allowed",
        typeflag.escape_default()
    )]
    UnknownEntryType { path: String, typeflag: char },
    #[error("entry `{path}` would be read differently by other tar readers")]
    Ambiguous {
        path: String,
        #[source]
        reason: Ambiguity,
    },
    #[error(
        "entry `{path}` appears twice (as `{previous}` before); on some file systems they are the same file"
    )]
    Duplicate { path: String, previous: String },
    #[error("entry `{path}` needs `{parent}` to be a directory, but it is a file")]
    ParentIsFile { path: String, parent: String },
    #[error(
        "{} is laid out as a Git repository (`HEAD` beside `objects`, `refs` or `commondir`), which git would read and act on",
        super::folder_label(folder)
    )]
    GitRepository { folder: String },
    #[error("entry `{path}` holds `{name}`, which is never packed: {reason}")]
    NeverPacked {
        path: String,
        name: String,
        reason: &'static str,
    },
    #[error("the archive has no `SKILL.md` file at its root{}", match found {
        Some(found) => format!(" (it has `{found}`)"),
        None => String::new(),
    })]
    NoSkillMd {
        /// What the archive has in its place: `skill.md`, or `SKILL.md/`.
        found: Option<String>,
    },
    #[error("entry `{path}` declares {pax} bytes in a PAX header but {header} in its tar header")]
    SizeMismatch { path: String, header: u64, pax: u64 },
}

/// Why other tar readers would read an entry differently from the `tar`
/// crate. Each was seen with GNU tar 1.34 or Python 3.11's `tarfile`
/// (`index/tests/tar_differentials.rs` runs them).
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum Ambiguity {
    #[error(
        "a PAX record is malformed: other readers stop at it, while the `tar` crate reads the records after it"
    )]
    MalformedPaxRecord,
    #[error(
        "its PAX header has a `{0}` record, which is not one skillpkg accepts: other readers may act on it"
    )]
    PaxKeyNotAllowed(String),
    #[error("the PAX record `{0}` appears twice, and readers disagree on which one counts")]
    PaxKeyRepeated(String),
    #[error("its PAX `size` record `{0}` is not a decimal number")]
    PaxSizeInvalid(String),
    #[error("its GNU long name and its PAX path differ, and readers disagree on which one counts")]
    LongNameDisagreesWithPaxPath,
    #[error("a file or directory carries a link target")]
    LinkTarget,
    #[error(
        "it is a directory, yet it declares {0} bytes of data, which other readers read as more entries"
    )]
    DirectoryData(u64),
    #[error(
        "its header is not ustar, yet its ustar prefix field is filled, which some readers put before the path"
    )]
    PrefixOutsideUstar,
}

/// The PAX records an entry may carry: its path and size (checked against
/// the header), and times and owners, which are ignored. Anything else
/// (`linkpath`, `GNU.sparse.*`, `hdrcharset`, xattrs, star's `SCHILY.*`)
/// could make another reader write something else.
const PAX_KEYS: &[&str] = &[
    "path", "size", "mtime", "atime", "ctime", "uid", "gid", "uname", "gname", "comment",
];

/// The ustar prefix field, which Python's `tarfile` reads in every header.
const USTAR_PREFIX: std::ops::Range<usize> = 345..500;

/// Refuses an entry that another tar reader would read differently.
fn check_unambiguous<R: Read>(
    entry: &mut tar::Entry<'_, R>,
    path_bytes: &[u8],
    is_dir: bool,
) -> Result<(), Ambiguity> {
    let header = entry.header();
    if header.as_ustar().is_none() && header.as_bytes()[USTAR_PREFIX].iter().any(|&b| b != 0) {
        return Err(Ambiguity::PrefixOutsideUstar);
    }
    if is_dir {
        let size = header.entry_size().unwrap_or(u64::MAX);
        if size != 0 {
            return Err(Ambiguity::DirectoryData(size));
        }
    }
    check_pax_records(entry, path_bytes)?;
    // After the PAX records, so that a `linkpath` record is named as such.
    if entry.link_name_bytes().is_some() {
        return Err(Ambiguity::LinkTarget);
    }
    Ok(())
}

/// Refuses PAX records other readers would act on differently.
fn check_pax_records<R: Read>(
    entry: &mut tar::Entry<'_, R>,
    path_bytes: &[u8],
) -> Result<(), Ambiguity> {
    let Ok(Some(records)) = entry.pax_extensions() else {
        return Ok(());
    };
    let mut seen: Vec<&str> = Vec::new();
    for record in records {
        let record = record.map_err(|_| Ambiguity::MalformedPaxRecord)?;
        let key = String::from_utf8_lossy(record.key_bytes());
        let Some(key) = PAX_KEYS.iter().copied().find(|known| *known == key) else {
            return Err(Ambiguity::PaxKeyNotAllowed(key.into_owned()));
        };
        if seen.contains(&key) {
            return Err(Ambiguity::PaxKeyRepeated(key.to_owned()));
        }
        seen.push(key);
        let value = record.value_bytes();
        match key {
            "size" if value.is_empty() || !value.iter().all(u8::is_ascii_digit) => {
                return Err(Ambiguity::PaxSizeInvalid(
                    String::from_utf8_lossy(value).into_owned(),
                ));
            }
            // The `tar` crate takes a GNU long name over the PAX path; GNU
            // tar and Python may take the PAX path.
            "path" if value != path_bytes => {
                return Err(Ambiguity::LongNameDisagreesWithPaxPath);
            }
            _ => {}
        }
    }
    Ok(())
}

/// A reader that fails once more than `limit` bytes have passed through it.
struct CappedReader<R> {
    inner: R,
    remaining: u64,
    kind: SizeKind,
    limit: u64,
}

/// The marker carried inside the `io::Error` a [`CappedReader`] returns, so
/// the cap can be told apart from a corrupt stream after `tar` wrapped it.
#[derive(Debug)]
struct CapExceeded(SizeKind, u64);

impl std::fmt::Display for CapExceeded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "over the {} size limit", self.0)
    }
}

impl std::error::Error for CapExceeded {}

impl<R: Read> Read for CappedReader<R> {
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        // Ask for one byte more than allowed, so that reaching the cap exactly
        // is fine and passing it is seen.
        let wanted = buffer
            .len()
            .min(usize::try_from(self.remaining.saturating_add(1)).unwrap_or(usize::MAX));
        let read = self.inner.read(&mut buffer[..wanted])?;
        if read as u64 > self.remaining {
            return Err(io::Error::other(CapExceeded(self.kind, self.limit)));
        }
        self.remaining -= read as u64;
        Ok(read)
    }
}

fn stream_error(error: io::Error) -> UnpackError {
    let cap = error
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<CapExceeded>())
        .map(|CapExceeded(kind, limit)| (*kind, *limit));
    match cap {
        Some((kind, limit)) => UnpackError::TooLarge { kind, limit },
        None => UnpackError::Corrupt(error),
    }
}

/// What the archive has put at a collision key so far.
struct Seen {
    path: String,
    is_dir: bool,
    explicit: bool,
}

/// Unpacks the `.tgz` read from `tarball` into the new folder `target`, which
/// must not exist yet (its parent must).
pub fn unpack(
    tarball: impl Read,
    target: &Path,
    limits: &Limits,
) -> Result<UnpackedSkill, UnpackError> {
    if target.symlink_metadata().is_ok() {
        return Err(UnpackError::TargetExists {
            path: target.to_owned(),
        });
    }
    let parent = target
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let staging = tempfile::Builder::new()
        .prefix(".skillpkg-unpack-")
        .tempdir_in(parent)
        .map_err(|source| UnpackError::Io {
            path: parent.to_owned(),
            source,
        })?;

    let unpacked = unpack_into(tarball, staging.path(), limits)?;

    let staging = staging.keep();
    if let Err(source) = rename_no_replace(&staging, target) {
        let _ = fs_err::remove_dir_all(&staging);
        return Err(if target.symlink_metadata().is_ok() {
            UnpackError::TargetExists {
                path: target.to_owned(),
            }
        } else {
            UnpackError::Io {
                path: target.to_owned(),
                source,
            }
        });
    }
    Ok(unpacked)
}

/// Unpacks the `.tgz` read from `tarball` into `dir`, an empty folder the
/// caller made for this (a staging folder it renames into place once every
/// check passed): the same checks as [`unpack`], without a second staging
/// folder inside the caller's. On an error `dir` holds a part of the
/// archive, and the caller removes it.
pub fn unpack_into_empty(
    tarball: impl Read,
    dir: &Path,
    limits: &Limits,
) -> Result<UnpackedSkill, UnpackError> {
    let io_error = |source| UnpackError::Io {
        path: dir.to_owned(),
        source,
    };
    if fs_err::read_dir(dir).map_err(io_error)?.next().is_some() {
        return Err(UnpackError::TargetExists {
            path: dir.to_owned(),
        });
    }
    unpack_into(tarball, dir, limits)
}

fn unpack_into(
    tarball: impl Read,
    root: &Path,
    limits: &Limits,
) -> Result<UnpackedSkill, UnpackError> {
    let compressed = BufReader::new(CappedReader {
        inner: tarball,
        remaining: limits.max_packed_bytes,
        kind: SizeKind::Packed,
        limit: limits.max_packed_bytes,
    });
    // Saturating: a registry may configure limits near u64::MAX.
    let stream_cap = limits
        .max_unpacked_bytes
        .saturating_add(FRAMING_ALLOWANCE)
        .saturating_add(FRAMING_ALLOWANCE_PER_ENTRY.saturating_mul(limits.max_entries as u64));
    let decompressed = CappedReader {
        inner: flate2::bufread::GzDecoder::new(compressed),
        remaining: stream_cap,
        kind: SizeKind::Unpacked,
        limit: limits.max_unpacked_bytes,
    };
    let mut archive = tar::Archive::new(decompressed);
    let mut seen: HashMap<String, Seen> = HashMap::new();
    // The folders made so far (the root exists): each is made once, with
    // no `mkdir` that fails because it exists and no `stat` to check.
    let mut made: HashSet<PathBuf> = HashSet::from([root.to_owned()]);
    let mut files = Vec::new();
    let mut entry_count = 0_usize;
    let mut total_bytes = 0_u64;
    let mut buffer = vec![0_u8; 64 * 1024];

    for entry in archive.entries().map_err(stream_error)? {
        let mut entry = entry.map_err(stream_error)?;
        let raw_path = entry.path_bytes().into_owned();
        let path = String::from_utf8(raw_path).map_err(|error| UnpackError::PathNotUtf8 {
            path: String::from_utf8_lossy(error.as_bytes()).into_owned(),
        })?;
        let entry_type = entry.header().entry_type();
        let is_dir = match entry_type {
            tar::EntryType::Regular => false,
            tar::EntryType::Directory => true,
            other => {
                return Err(match entry_kind_name(other) {
                    Some(kind) => UnpackError::UnsupportedEntry { path, kind },
                    None => UnpackError::UnknownEntryType {
                        path,
                        typeflag: char::from(other.as_byte()),
                    },
                });
            }
        };
        if let Err(reason) = check_unambiguous(&mut entry, path.as_bytes(), is_dir) {
            return Err(UnpackError::Ambiguous { path, reason });
        }
        // `tar -C dir .` writes `./` before every path; it means nothing.
        let mut clean = path.as_str();
        while let Some(rest) = clean.strip_prefix("./") {
            clean = rest;
        }
        let clean = if is_dir {
            clean.trim_end_matches('/')
        } else {
            clean
        };
        if is_dir && (clean.is_empty() || clean == ".") {
            continue;
        }
        check_portable_path(clean, limits).map_err(|problem| UnpackError::UnsafePath {
            path: path.clone(),
            problem,
        })?;
        if let Some((name, reason)) = clean
            .split('/')
            .find_map(|name| walk::never_packed(name).map(|reason| (name, reason)))
        {
            return Err(UnpackError::NeverPacked {
                name: name.to_owned(),
                path,
                reason,
            });
        }
        let clean = clean.to_owned();

        entry_count += 1;
        if entry_count > limits.max_entries {
            return Err(UnpackError::TooManyEntries {
                limit: limits.max_entries,
            });
        }
        record(&mut seen, &clean, is_dir)?;

        let header_size = entry.header().entry_size().map_err(UnpackError::Corrupt)?;
        let size = entry.size();
        if header_size != size {
            return Err(UnpackError::SizeMismatch {
                path: clean,
                header: header_size,
                pax: size,
            });
        }
        let destination = root.join(&clean);
        if is_dir {
            make_folders(&mut made, &destination)?;
            continue;
        }
        total_bytes = total_bytes.saturating_add(size);
        if total_bytes > limits.max_unpacked_bytes {
            return Err(UnpackError::TooLarge {
                kind: SizeKind::Unpacked,
                limit: limits.max_unpacked_bytes,
            });
        }
        let executable = entry.header().mode().map_err(UnpackError::Corrupt)? & 0o111 != 0;
        if let Some(parent) = destination.parent() {
            make_folders(&mut made, parent)?;
        }
        let sha256 = write_file(&mut entry, &destination, executable, &mut buffer)?;
        files.push(UnpackedFile {
            path: clean,
            size,
            executable,
            sha256,
        });
    }

    // The tar end marker may be followed by zero padding (GNU tar pads to
    // 10 KiB records) and then must come the end of the gzip stream, checked
    // with its CRC; nothing may follow that.
    let mut decompressed = archive.into_inner();
    let mut rest = [0_u8; 8192];
    loop {
        let read = decompressed.read(&mut rest).map_err(stream_error)?;
        if read == 0 {
            break;
        }
        if rest[..read].iter().any(|&byte| byte != 0) {
            return Err(UnpackError::TrailingData);
        }
    }
    let mut compressed = decompressed.inner.into_inner();
    if !compressed.fill_buf().map_err(stream_error)?.is_empty() {
        return Err(UnpackError::TrailingData);
    }

    if let Some(folder) = super::find_git_repository(seen.values().map(|seen| seen.path.as_str())) {
        return Err(UnpackError::GitRepository { folder });
    }
    match seen.get(&collision_key(SKILL_MD)) {
        Some(found) if found.path == SKILL_MD && !found.is_dir => {}
        found => {
            return Err(UnpackError::NoSkillMd {
                found: found.map(|found| {
                    let slash = if found.is_dir { "/" } else { "" };
                    format!("{}{slash}", found.path)
                }),
            });
        }
    }

    files.sort_by(|a, b| a.path.as_bytes().cmp(b.path.as_bytes()));
    let digests: Vec<FileDigest> = files
        .iter()
        .map(|file| FileDigest {
            path: file.path.clone(),
            sha256: file.sha256,
            executable: file.executable,
        })
        .collect();
    Ok(UnpackedSkill {
        tree: tree_hash(&digests),
        files,
    })
}

/// Records `path` and its parents, refusing duplicates and a file used as a folder.
fn record(seen: &mut HashMap<String, Seen>, path: &str, is_dir: bool) -> Result<(), UnpackError> {
    let mut parent_end = 0;
    while let Some(offset) = path[parent_end..].find('/') {
        let parent = &path[..parent_end + offset];
        match seen.entry(collision_key(parent)) {
            Entry::Occupied(existing) if !existing.get().is_dir => {
                return Err(UnpackError::ParentIsFile {
                    path: path.to_owned(),
                    parent: existing.get().path.clone(),
                });
            }
            // `a/x` then `A/y`: one folder on macOS and Windows, two on Linux.
            Entry::Occupied(existing) if existing.get().path != parent => {
                return Err(UnpackError::Duplicate {
                    path: parent.to_owned(),
                    previous: existing.get().path.clone(),
                });
            }
            Entry::Occupied(_) => {}
            Entry::Vacant(slot) => {
                slot.insert(Seen {
                    path: parent.to_owned(),
                    is_dir: true,
                    explicit: false,
                });
            }
        }
        parent_end += offset + 1;
    }
    match seen.entry(collision_key(path)) {
        // A folder may be named after its contents created it, once.
        Entry::Occupied(mut existing)
            if is_dir
                && existing.get().is_dir
                && !existing.get().explicit
                && existing.get().path == path =>
        {
            existing.get_mut().explicit = true;
            Ok(())
        }
        Entry::Occupied(existing) => Err(UnpackError::Duplicate {
            path: path.to_owned(),
            previous: existing.get().path.clone(),
        }),
        Entry::Vacant(slot) => {
            slot.insert(Seen {
                path: path.to_owned(),
                is_dir,
                explicit: true,
            });
            Ok(())
        }
    }
}

/// Renames `from` to `to`, failing if `to` exists, even if it appeared after
/// the check at the start: a plain rename would replace an empty folder.
#[cfg(target_os = "linux")]
pub(crate) fn rename_no_replace(from: &Path, to: &Path) -> io::Result<()> {
    use rustix::fs::{CWD, RenameFlags, renameat_with};
    renameat_with(CWD, from, CWD, to, RenameFlags::NOREPLACE).map_err(io::Error::from)
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn rename_no_replace(from: &Path, to: &Path) -> io::Result<()> {
    if to.symlink_metadata().is_ok() {
        return Err(io::Error::from(io::ErrorKind::AlreadyExists));
    }
    fs_err::rename(from, to)
}

/// Makes `dir` and every parent of it below the root that is not made yet.
/// The archive's own order does not matter: a file may come before the
/// entry of its folder, or with none.
fn make_folders(made: &mut HashSet<PathBuf>, dir: &Path) -> Result<(), UnpackError> {
    if made.contains(dir) {
        return Ok(());
    }
    if let Some(parent) = dir.parent() {
        make_folders(made, parent)?;
    }
    match fs_err::create_dir(dir) {
        Ok(()) => {}
        // A folder the archive lists after one of its files made it.
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists && dir.is_dir() => {}
        Err(source) => {
            return Err(UnpackError::Io {
                path: dir.to_owned(),
                source,
            });
        }
    }
    made.insert(dir.to_owned());
    Ok(())
}

fn write_file(
    entry: &mut impl Read,
    destination: &Path,
    executable: bool,
    buffer: &mut [u8],
) -> Result<[u8; 32], UnpackError> {
    let io_error = |source| UnpackError::Io {
        path: destination.to_owned(),
        source,
    };
    let mut file = fs_err::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(destination)
        .map_err(io_error)?;
    let mut hasher = Sha256::new();
    loop {
        let read = entry.read(buffer).map_err(stream_error)?;
        if read == 0 {
            break;
        }
        hasher.update(&buffer[..read]);
        file.write_all(&buffer[..read]).map_err(io_error)?;
    }
    set_mode(&file, executable).map_err(io_error)?;
    Ok(hasher.finalize().into())
}

/// Sets 0755 or 0644: setuid, setgid, sticky and group/world write bits from
/// the archive are dropped, never applied.
#[cfg(unix)]
fn set_mode(file: &fs_err::File, executable: bool) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mode = if executable { 0o755 } else { 0o644 };
    // On the open file (fchmod): no second path lookup.
    file.set_permissions(std::fs::Permissions::from_mode(mode))
}

#[cfg(not(unix))]
fn set_mode(_file: &fs_err::File, _executable: bool) -> io::Result<()> {
    Ok(())
}

/// Names the entry types tar defines, or returns `None` for an unknown one.
fn entry_kind_name(entry_type: tar::EntryType) -> Option<&'static str> {
    Some(match entry_type {
        tar::EntryType::Symlink => "symlink",
        tar::EntryType::Link => "hard link",
        tar::EntryType::Char => "character device",
        tar::EntryType::Block => "block device",
        tar::EntryType::Fifo => "FIFO",
        tar::EntryType::GNUSparse => "GNU sparse file",
        tar::EntryType::Continuous => "contiguous file",
        // GNU tar and Python apply its records to every later entry.
        tar::EntryType::XGlobalHeader => "PAX global header",
        // These are folded into the next entry, except in a pre-POSIX
        // header, where the `tar` crate does not (and GNU tar does).
        tar::EntryType::XHeader => "PAX extended header",
        tar::EntryType::GNULongName => "GNU long name record",
        tar::EntryType::GNULongLink => "GNU long link record",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_final_rename_never_replaces_a_folder_that_appeared_meanwhile() {
        let temp = tempfile::tempdir().unwrap();
        let staging = temp.path().join("staging");
        let target = temp.path().join("target");
        fs_err::create_dir(&staging).unwrap();
        fs_err::create_dir(&target).unwrap();
        let error = rename_no_replace(&staging, &target).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::AlreadyExists);
        assert!(staging.is_dir(), "nothing moved");
        fs_err::remove_dir(&target).unwrap();
        rename_no_replace(&staging, &target).unwrap();
        assert!(target.is_dir() && !staging.exists());
    }
}
