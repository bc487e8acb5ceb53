//! The content-addressed archive cache: `<cache>/archives/<sha256>.tgz`,
//! and beside a signed archive `<sha256>.sig.json` (its signature and the
//! public key that verified it), so an archive read back from the cache is
//! verified again, signature included, with no network.
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

/// What is stored beside a signed archive.
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
        std::env::var_os(crate::env_vars::SKILLPKG_CACHE_DIR)
            .filter(|value| !value.is_empty())
            .map(PathBuf::from)
            .or_else(|| dirs::cache_dir().map(|dir| dir.join("skillpkg")))
            .map(Self::at)
            .ok_or_else(|| {
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

    fn archive(&self, checksum: &Checksum) -> PathBuf {
        self.root
            .join("archives")
            .join(format!("{}.tgz", checksum.hex()))
    }

    fn signature(&self, checksum: &Checksum) -> PathBuf {
        self.root
            .join("archives")
            .join(format!("{}.sig.json", checksum.hex()))
    }

    /// Returns true if the cache holds what an archive with `checksum`
    /// needs (its signature too, when `signed`), so that no registry has
    /// to be opened for it. What it holds is still verified when read.
    pub fn has(&self, checksum: &Checksum, signed: bool) -> bool {
        self.archive(checksum).is_file() && (!signed || self.signature(checksum).is_file())
    }

    /// The bytes stored for `checksum`, unverified.
    pub(super) fn read(&self, checksum: &Checksum) -> Option<Vec<u8>> {
        fs_err::read(self.archive(checksum)).ok()
    }

    /// The signature record stored for `checksum`, unverified.
    pub(super) fn read_signature(&self, checksum: &Checksum) -> Option<SignatureRecord> {
        let bytes = fs_err::read(self.signature(checksum)).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// Drops a damaged entry, so it is fetched again.
    pub(super) fn forget(&self, checksum: &Checksum) {
        let _ = fs_err::remove_file(self.archive(checksum));
        let _ = fs_err::remove_file(self.signature(checksum));
    }

    /// Stores an entry: the signature record first, the archive last, so a
    /// visible archive of a signed skill has its record.
    pub(super) fn write(
        &self,
        checksum: &Checksum,
        bytes: &[u8],
        signature: Option<&SignatureRecord>,
    ) -> anyhow::Result<()> {
        // The folder is made once, when a write finds it missing, not
        // checked before every write.
        let write = |path: &Path, bytes: &[u8]| -> anyhow::Result<()> {
            let options = WriteOptions::default().sync(Sync::None);
            match write_atomic_with(path, bytes, &options) {
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                    write_atomic_with(path, bytes, &options.create_parents())?;
                }
                result => result?,
            }
            Ok(())
        };
        if let Some(record) = signature {
            write(&self.signature(checksum), &serde_json::to_vec(record)?)?;
        }
        write(&self.archive(checksum), bytes)
    }
}
