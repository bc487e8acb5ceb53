//! The content-addressed archive cache: `<cache>/archives/<sha256>.entry`,
//! one file per archive: a first line `skillpkg-cache-entry 1`, a second
//! line with the signature and the public key that verified it (JSON;
//! `null` for an unsigned archive), then the archive's bytes. An archive
//! read back from the cache is verified again, signature included, with no
//! network; one file per entry, so caching costs one file creation.
//!
//! Only `client::fetch` reads and writes entries: the cache hands out
//! bytes to nobody else, and what it hands out is re-verified there. Files
//! are written atomically but not synced: an entry is verified on every
//! read, so one torn by a power cut is simply fetched again.

use std::path::{Path, PathBuf};

use skillpkg_index::checksum::Checksum;
use skillpkg_index::fs::{Sync, WriteOptions, write_atomic_with};
use skillpkg_index::signing::PublicKey;

use crate::error::UserError;

/// The user's archive cache.
#[derive(Clone, Debug)]
pub struct Cache {
    root: PathBuf,
}

/// The user's cache folder, which holds `archives/` and the index files
/// (`super::index_cache`): `SKILLPKG_CACHE_DIR`, else `skillpkg` in the
/// platform's cache folder; `None` when there is neither.
pub fn user_cache_dir() -> Option<PathBuf> {
    std::env::var_os(crate::env_vars::SKILLPKG_CACHE_DIR)
        .filter(|value| !value.is_empty())
        .map(PathBuf::from)
        .or_else(|| dirs::cache_dir().map(|dir| dir.join("skillpkg")))
}

/// The first line of every entry.
const ENTRY_MAGIC: &[u8] = b"skillpkg-cache-entry 1\n";

/// What is stored with a signed archive.
#[derive(serde::Serialize, serde::Deserialize)]
pub(super) struct SignatureRecord {
    /// The `.minisig` text, as the registry served it.
    pub signature: String,
    /// The key that verified it, whose id the lock or index pinned.
    pub key: PublicKey,
}

impl Cache {
    /// The cache of this user: `SKILLPKG_CACHE_DIR`, else the platform's
    /// cache folder.
    pub fn open() -> anyhow::Result<Self> {
        user_cache_dir().map(Self::at).ok_or_else(|| {
            UserError::new("there is no user cache folder")
                .with_hint(format!("set {}", crate::env_vars::SKILLPKG_CACHE_DIR))
                .into()
        })
    }

    /// The cache at `root`.
    pub fn at(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// The cache's folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn entry(&self, checksum: &Checksum) -> PathBuf {
        self.root
            .join("archives")
            .join(format!("{}.entry", checksum.hex()))
    }

    /// Returns true if the cache holds an entry for `checksum`, so that no
    /// registry has to be opened for it. What it holds is still verified
    /// when read.
    pub fn has(&self, checksum: &Checksum) -> bool {
        self.entry(checksum).is_file()
    }

    /// The archive and signature record stored for `checksum`, unverified;
    /// `None` when there is none or it is not an entry.
    pub(super) fn read(&self, checksum: &Checksum) -> Option<(Vec<u8>, Option<SignatureRecord>)> {
        let mut bytes = fs_err::read(self.entry(checksum)).ok()?;
        let rest = bytes.strip_prefix(ENTRY_MAGIC)?;
        let end = rest.iter().position(|byte| *byte == b'\n')?;
        let record: Option<SignatureRecord> = serde_json::from_slice(&rest[..end]).ok()?;
        let start = ENTRY_MAGIC.len() + end + 1;
        bytes.drain(..start);
        Some((bytes, record))
    }

    /// Stores a file that comes with no signature (a tarball URL's, a
    /// discovery index's artifact), under its own checksum.
    pub fn store_unsigned(&self, checksum: &Checksum, bytes: &[u8]) -> anyhow::Result<()> {
        debug_assert_eq!(&Checksum::of(bytes), checksum);
        self.write(checksum, bytes, None)
    }

    /// The file stored for `checksum`, checked against it (a damaged
    /// entry is dropped); `None` when there is none.
    pub fn unsigned(&self, checksum: &Checksum) -> Option<Vec<u8>> {
        let (bytes, _) = self.read(checksum)?;
        if &Checksum::of(&bytes) != checksum {
            self.forget(checksum);
            return None;
        }
        Some(bytes)
    }

    /// Drops a damaged entry, so it is fetched again.
    pub(super) fn forget(&self, checksum: &Checksum) {
        let _ = fs_err::remove_file(self.entry(checksum));
    }

    /// Stores an entry: one file, so an entry is whole or absent.
    pub(super) fn write(
        &self,
        checksum: &Checksum,
        bytes: &[u8],
        signature: Option<&SignatureRecord>,
    ) -> anyhow::Result<()> {
        let header = serde_json::to_vec(&signature)?;
        let mut entry = Vec::with_capacity(ENTRY_MAGIC.len() + header.len() + 1 + bytes.len());
        entry.extend_from_slice(ENTRY_MAGIC);
        entry.extend_from_slice(&header);
        entry.push(b'\n');
        entry.extend_from_slice(bytes);
        // Private, like the rest of the cache; the folder is made once,
        // when a write finds it missing, not checked before every write.
        let path = self.entry(checksum);
        let options = WriteOptions::private().sync(Sync::None);
        match write_atomic_with(&path, &entry, &options) {
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                write_atomic_with(&path, &entry, &options.create_parents())?;
            }
            result => result?,
        }
        Ok(())
    }
}
