//! Checking a registry's signed metadata (docs/registries.md#signed-metadata)
//! before trusting any index file it serves.
//!
//! ```text
//! <state dir>/skillpkg/registries/<id>.json   {"root": <the newest trusted root>,
//!                                              "seen": {"timestamp": N, "snapshot": M}}
//! ```
//!
//! `<state dir>` is `$SKILLPKG_STATE_DIR`, else the platform's user state
//! folder (`~/.local/state` on Linux). `<id>` is the registry's logical
//! name, so a registry and its mirrors share what was seen, and a mirror
//! that serves an older timestamp than the origin did is a rollback.
//!
//! The first root is pinned from the configured `root-key` or, without one,
//! on first use; roots then only move forward, each signed by a threshold
//! of the keys before it and of its own. The sequence numbers are stored
//! only once the whole chain (root, timestamp, snapshot) has passed.

use std::path::{Path, PathBuf};

use jiff::Timestamp;
use skillpkg_index::fs::WriteOptions;
use skillpkg_index::registry::metadata::{
    self, MetadataError, Root, SNAPSHOT_PATH, Seen, Snapshot, TIMESTAMP_PATH, root_path,
};
use skillpkg_index::signing::PublicKey;

/// How a registry's metadata is trusted.
#[derive(Clone, Debug, Default)]
pub struct TrustConfig {
    /// The registry's logical id (its name), under which what was seen is
    /// kept; `None` keeps it under the URL.
    pub id: Option<String>,
    /// The pinned root key (`root-key`): the registry must have signed
    /// metadata, and its first root must be signed by this key.
    pub root_key: Option<PublicKey>,
    /// Only archives a lockfile pins are read: a local tree without signed
    /// metadata is accepted (`registries::Access::Locked`).
    pub pinned_by_lock: bool,
}

/// What was trusted last time, kept in the user state.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct TrustState {
    pub root: Root,
    pub seen: Seen,
}

/// The state folder: `SKILLPKG_STATE_DIR`, else the platform's.
pub fn state_dir() -> Option<PathBuf> {
    std::env::var_os(crate::env_vars::SKILLPKG_STATE_DIR)
        .filter(|value| !value.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            dirs::state_dir()
                .or_else(dirs::data_local_dir)
                .map(|dir| dir.join("skillpkg"))
        })
}

/// Returns the file that keeps the trust state of the registry `id`.
pub fn state_file(dir: &Path, id: &str) -> PathBuf {
    // Ids are names (`[a-z0-9-]`) or URLs: anything else becomes `_`, and a
    // short hash keeps two URLs that differ only there apart.
    let safe: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(80)
        .collect();
    let digest = skillpkg_index::checksum::Checksum::of(id.as_bytes()).hex();
    dir.join("registries")
        .join(format!("{safe}-{}.json", &digest[..12]))
}

/// Reads the trust state; `None` when the registry was never trusted.
pub fn read_state(path: &Path) -> anyhow::Result<Option<TrustState>> {
    match fs_err::read(path) {
        Ok(bytes) => Ok(Some(serde_json::from_slice(&bytes).map_err(|error| {
            crate::error::UserError::new(format!("the trust state {} is not valid", path.display()))
                .with_hint("delete it to trust the registry's current root again on first use")
                .with_source(error)
        })?)),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(error.into()),
    }
}

/// Writes the trust state atomically.
pub fn write_state(path: &Path, state: &TrustState) -> anyhow::Result<()> {
    let bytes = serde_json::to_vec_pretty(state).expect("the trust state serialises");
    skillpkg_index::fs::write_atomic_with(path, &bytes, &WriteOptions::default().create_parents())?;
    Ok(())
}

/// Fetches a file of the registry: `None` for a 404.
pub(crate) trait Fetch {
    async fn get(&self, path: &str) -> Result<Option<Vec<u8>>, super::RegistryError>;
}

/// Why the chain failed: a registry error, or metadata that does not hold.
#[derive(Debug)]
pub enum ChainError {
    Fetch(super::RegistryError),
    Metadata(MetadataError),
    /// `root-key` is configured, or the registry was trusted before, and
    /// it serves no signed metadata.
    Unsigned {
        pinned: bool,
    },
}

impl From<super::RegistryError> for ChainError {
    fn from(error: super::RegistryError) -> Self {
        Self::Fetch(error)
    }
}

impl From<MetadataError> for ChainError {
    fn from(error: MetadataError) -> Self {
        Self::Metadata(error)
    }
}

/// Checks root → timestamp → snapshot against `previous` (what was trusted
/// before) and returns the new state and the snapshot, or `None` for a
/// registry without signed metadata that nothing requires to have it.
pub(crate) async fn check_chain(
    fetch: &impl Fetch,
    pinned: Option<&PublicKey>,
    previous: Option<TrustState>,
    now: Timestamp,
) -> Result<Option<(TrustState, Snapshot)>, ChainError> {
    let (mut root, seen) = match previous {
        Some(state) => (state.root, state.seen),
        None => {
            let Some(bytes) = fetch.get(&root_path(1)).await? else {
                if pinned.is_some() {
                    return Err(ChainError::Unsigned { pinned: true });
                }
                return Ok(None);
            };
            (
                metadata::verify_first_root(&bytes, pinned)?,
                Seen::default(),
            )
        }
    };
    while let Some(bytes) = fetch.get(&root_path(root.version + 1)).await? {
        root = metadata::verify_next_root(&root, &bytes)?;
    }
    metadata::check_expiry(&root_path(root.version), root.expires, now)?;
    let Some(bytes) = fetch.get(TIMESTAMP_PATH).await? else {
        return Err(ChainError::Unsigned { pinned: false });
    };
    let timestamp = metadata::verify_timestamp(&root, &bytes, seen, now)?;
    let Some(bytes) = fetch.get(SNAPSHOT_PATH).await? else {
        return Err(ChainError::Unsigned { pinned: false });
    };
    let snapshot = metadata::verify_snapshot(&root, &timestamp, &bytes, now)?;
    let seen = Seen {
        timestamp: timestamp.version,
        snapshot: snapshot.version,
    };
    Ok(Some((TrustState { root, seen }, snapshot)))
}
