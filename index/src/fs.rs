//! The one atomic file write of skillpkg.
//!
//! Every file skillpkg replaces (skills.toml, skills.lock, the install
//! journal, credentials, keys, cached archives, a static tree's files, the
//! registry's state) is written to a temporary file in the same folder and
//! renamed over the target, so a reader sees the old file or the new one,
//! never a part, and a failure leaves no file behind. What differs between
//! callers is a choice, not a copy: the mode the file gets before any byte
//! is written, whether it is synced, whether an existing file may be
//! replaced, and its modification time.
//!
//! Renaming replaces a symlink at the target itself, never what it points
//! to.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// The prefix of every temporary file: never a served path, and removed by
/// those who clean a folder of leftovers.
pub const TEMP_PREFIX: &str = ".skillpkg-tmp-";

/// How durable a write must be.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Sync {
    /// Not synced: for files that are verified on every read (a cache
    /// entry), where a torn file after a power cut is simply fetched again.
    None,
    /// The file's bytes are on disk before it is renamed into place: after
    /// a power cut the file is the old one or the new one, never empty.
    #[default]
    File,
    /// As [`Sync::File`], and the folder too, so the rename itself is
    /// durable before the call returns (a journal that must exist before
    /// what it names changes).
    FileAndFolder,
}

/// How to write a file; [`WriteOptions::default`] is a synced, world
/// readable (0644) file that replaces any file there.
#[derive(Clone, Copy, Debug)]
pub struct WriteOptions {
    /// Unix permission bits, set before any byte is written (a secret is
    /// never readable by others, not even for a moment).
    pub mode: u32,
    pub sync: Sync,
    /// Fail with [`std::io::ErrorKind::AlreadyExists`] if `path` exists.
    pub no_clobber: bool,
    /// Create the parent folders if they are missing.
    pub create_parents: bool,
    /// The modification time the file gets.
    pub modified: Option<SystemTime>,
}

impl Default for WriteOptions {
    fn default() -> Self {
        Self {
            mode: 0o644,
            sync: Sync::File,
            no_clobber: false,
            create_parents: false,
            modified: None,
        }
    }
}

impl WriteOptions {
    /// A private (0600) file: credentials, secret keys.
    pub fn private() -> Self {
        Self {
            mode: 0o600,
            ..Self::default()
        }
    }

    /// Sets the durability.
    #[must_use]
    pub fn sync(mut self, sync: Sync) -> Self {
        self.sync = sync;
        self
    }

    /// Sets the permission bits.
    #[must_use]
    pub fn mode(mut self, mode: u32) -> Self {
        self.mode = mode;
        self
    }

    /// Creates missing parent folders.
    #[must_use]
    pub fn create_parents(mut self) -> Self {
        self.create_parents = true;
        self
    }

    /// Refuses to replace an existing file.
    #[must_use]
    pub fn no_clobber(mut self) -> Self {
        self.no_clobber = true;
        self
    }

    /// Sets the modification time.
    #[must_use]
    pub fn modified(mut self, modified: SystemTime) -> Self {
        self.modified = Some(modified);
        self
    }
}

/// A write that failed, with the file it was for.
#[derive(Debug, thiserror::Error)]
#[error("cannot write {}", path.display())]
pub struct WriteError {
    pub path: PathBuf,
    #[source]
    pub source: std::io::Error,
}

impl WriteError {
    /// The kind of the underlying error ([`std::io::ErrorKind::AlreadyExists`]
    /// for a [`WriteOptions::no_clobber`] write that found a file).
    pub fn kind(&self) -> std::io::ErrorKind {
        self.source.kind()
    }
}

impl From<WriteError> for std::io::Error {
    fn from(error: WriteError) -> Self {
        std::io::Error::new(error.source.kind(), error)
    }
}

/// Replaces `path` with `bytes` atomically, as [`WriteOptions::default`].
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    write_atomic_with(path, bytes, &WriteOptions::default())
}

/// Writes `bytes` to `path` atomically, as `options` say.
pub fn write_atomic_with(
    path: &Path,
    bytes: &[u8],
    options: &WriteOptions,
) -> Result<(), WriteError> {
    let failed = |source| WriteError {
        path: path.to_owned(),
        source,
    };
    let parent = path
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if options.create_parents {
        fs_err::create_dir_all(parent).map_err(failed)?;
    }
    // Created 0600, so nothing is readable by others before its mode is set.
    let mut file = tempfile::Builder::new()
        .prefix(TEMP_PREFIX)
        .tempfile_in(parent)
        .map_err(failed)?;
    // tempfile creates the file 0600: only another mode needs a call.
    #[cfg(unix)]
    if options.mode != 0o600 {
        use std::os::unix::fs::PermissionsExt as _;
        file.as_file()
            .set_permissions(std::fs::Permissions::from_mode(options.mode))
            .map_err(failed)?;
    }
    file.write_all(bytes).map_err(failed)?;
    if let Some(modified) = options.modified {
        file.as_file().set_modified(modified).map_err(failed)?;
    }
    if options.sync != Sync::None {
        file.as_file().sync_all().map_err(failed)?;
    }
    if options.no_clobber {
        file.persist_noclobber(path)
            .map_err(|error| failed(error.error))?;
    } else {
        file.persist(path).map_err(|error| failed(error.error))?;
    }
    if options.sync == Sync::FileAndFolder {
        fs_err::File::open(parent)
            .and_then(|folder| folder.sync_all())
            .map_err(failed)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode_of(path: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt as _;
        fs_err::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn replaces_a_file_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.json");
        write_atomic(&path, b"one").unwrap();
        write_atomic(&path, b"two").unwrap();
        assert_eq!(fs_err::read(&path).unwrap(), b"two");
        assert_eq!(mode_of(&path), 0o644);
        let names: Vec<_> = fs_err::read_dir(dir.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert_eq!(names, ["a.json"]);
    }

    #[test]
    fn a_private_file_is_private_whatever_the_file_it_replaces() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("credentials.toml");
        fs_err::write(&path, "old").unwrap();
        fs_err::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
        write_atomic_with(&path, b"secret", &WriteOptions::private()).unwrap();
        assert_eq!(mode_of(&path), 0o600);
        assert_eq!(fs_err::read(&path).unwrap(), b"secret");
    }

    #[test]
    fn no_clobber_refuses_an_existing_file_and_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v1.tgz");
        fs_err::write(&path, "first").unwrap();
        let error =
            write_atomic_with(&path, b"second", &WriteOptions::default().no_clobber()).unwrap_err();
        assert_eq!(error.kind(), std::io::ErrorKind::AlreadyExists);
        assert!(error.to_string().contains("v1.tgz"), "{error}");
        assert_eq!(fs_err::read(&path).unwrap(), b"first");
        assert_eq!(fs_err::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_symlink_at_the_target_is_replaced_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside");
        fs_err::write(&outside, "keep").unwrap();
        let path = dir.path().join("link");
        std::os::unix::fs::symlink(&outside, &path).unwrap();
        write_atomic(&path, b"new").unwrap();
        assert_eq!(fs_err::read(&outside).unwrap(), b"keep");
        assert!(!fs_err::symlink_metadata(&path).unwrap().is_symlink());
        assert_eq!(fs_err::read(&path).unwrap(), b"new");
    }

    #[test]
    fn parents_are_created_only_when_asked_and_the_time_is_set() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/b/c.txt");
        let error = write_atomic(&path, b"x").unwrap_err();
        assert_eq!(error.kind(), std::io::ErrorKind::NotFound);
        let when = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000_000);
        let options = WriteOptions::default()
            .create_parents()
            .modified(when)
            .sync(Sync::FileAndFolder);
        write_atomic_with(&path, b"x", &options).unwrap();
        assert_eq!(fs_err::metadata(&path).unwrap().modified().unwrap(), when);
    }
}
