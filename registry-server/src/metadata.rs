//! The registry's side of signed metadata (docs/registries.md#keys): the
//! keys, the roots, and re-signing the snapshot and timestamp.
//!
//! ```text
//! <data dir>/state/index.key      the online index key (secret, 0600)
//! <tree>/N.root.json              every root; root.json is the newest
//! <tree>/snapshot.json, timestamp.json
//! ```
//!
//! The tree is the data folder's `public/`, or the bucket of `--storage`.
//!
//! The root keys never live in the data folder: `keys init` and the
//! rotations take them as files, which an operator keeps offline.

use std::path::{Path, PathBuf};

use jiff::{SignedDuration, Timestamp};
use skillpkg_index::fs::{WriteError, WriteOptions, write_atomic_with};
use std::collections::BTreeMap;

use skillpkg_index::checksum::Checksum;
use skillpkg_index::registry::metadata::{
    self, Listing, MetaTree, MetadataError, ROOT_PATH, Root, Seen, Snapshot, TIMESTAMP_PATH,
    TimestampFile, root_path,
};
use skillpkg_index::registry::tree::{StaticTree, TreeError};
use skillpkg_index::signing::{KeyError, PublicKey, SecretKey};

use crate::layout::STATE_DIR;

/// The online index key, in the state folder.
pub const INDEX_KEY_FILE: &str = "index.key";
/// How long a root is valid by default: a year.
pub const DEFAULT_ROOT_LIFETIME: SignedDuration = SignedDuration::from_hours(24 * 365);
/// How long a snapshot and timestamp are valid by default: a day. A server
/// re-signs them when half of that has passed.
pub const DEFAULT_TIMESTAMP_LIFETIME: SignedDuration = SignedDuration::from_hours(24);

/// Why keys or metadata could not be written.
#[derive(Debug, thiserror::Error)]
pub enum KeysError {
    #[error(transparent)]
    Tree(#[from] TreeError),
    #[error("cannot read the key {}", path.display())]
    ReadKey {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    WriteKey(#[from] WriteError),
    #[error("{} is not a usable key", path.display())]
    BadKey {
        path: PathBuf,
        #[source]
        source: KeyError,
    },
    #[error("{} already has signed metadata (root version {version}); rotate its keys instead", tree.display())]
    AlreadyInitialised { tree: PathBuf, version: u64 },
    #[error("{} has no signed metadata yet; run `skillpkg-registry keys init` first", tree.display())]
    NotInitialised { tree: PathBuf },
    #[error("the new root would not verify, so nothing was written")]
    Refused(#[source] MetadataError),
    #[error("the current root is not valid")]
    BadRoot(#[source] MetadataError),
    #[error("the threshold must be between 1 and the number of root keys ({keys})")]
    Threshold { keys: usize },
}

/// Reads a secret key file (unencrypted, or encrypted with
/// `SKILLPKG_KEY_PASSWORD`).
pub fn read_secret_key(path: &Path) -> Result<SecretKey, KeysError> {
    let text = fs_err::read_to_string(path).map_err(|source| KeysError::ReadKey {
        path: path.to_owned(),
        source,
    })?;
    let password = std::env::var("SKILLPKG_KEY_PASSWORD").ok();
    SecretKey::from_file(&text, password.as_deref()).map_err(|source| KeysError::BadKey {
        path: path.to_owned(),
        source,
    })
}

/// Writes a new key pair: `path` (the secret key, 0600, unencrypted) and
/// `path.pub`. Refuses to replace an existing file.
pub fn generate_key(path: &Path) -> Result<PublicKey, KeysError> {
    let key = SecretKey::generate().map_err(|source| KeysError::BadKey {
        path: path.to_owned(),
        source,
    })?;
    let text = key.to_file(None).map_err(|source| KeysError::BadKey {
        path: path.to_owned(),
        source,
    })?;
    write_new_private(path, text.as_bytes())?;
    let public = key.public();
    write_new_private(&public_path(path), public.to_file().as_bytes())?;
    Ok(public)
}

fn public_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".pub");
    PathBuf::from(name)
}

/// Creates `path` (and its folder) with `bytes`, readable by its owner only
/// from the first byte, refusing to replace a file there: a key is never
/// overwritten by another.
fn write_new_private(path: &Path, bytes: &[u8]) -> Result<(), KeysError> {
    let options = WriteOptions::private().no_clobber().create_parents();
    Ok(write_atomic_with(path, bytes, &options)?)
}

/// The metadata signer of a served tree: its index key and how long what it
/// signs is valid.
#[derive(Debug)]
pub struct Signer {
    tree: StaticTree,
    key: IndexKey,
    lifetime: SignedDuration,
}

/// Where the index key comes from.
#[derive(Debug)]
enum IndexKey {
    /// A data folder's `state/index.key`, read again at every signing, so a
    /// running server signs with a rotated key at once.
    File(PathBuf),
    Key(Box<SecretKey>),
}

impl Signer {
    /// The signer of `tree`, the tree of the data folder `root`, or `None`
    /// when the data folder has no index key (a registry without signed
    /// metadata).
    pub fn open(
        root: &Path,
        tree: &StaticTree,
        lifetime: SignedDuration,
    ) -> Result<Option<Self>, KeysError> {
        let path = root.join(STATE_DIR).join(INDEX_KEY_FILE);
        if !path.exists() {
            return Ok(None);
        }
        // Read once now, so a broken key fails at start-up.
        read_secret_key(&path)?;
        Ok(Some(Self {
            tree: tree.clone(),
            key: IndexKey::File(path),
            lifetime,
        }))
    }

    /// A signer of any static tree (a `build` output) with `key`.
    pub fn for_tree(tree: StaticTree, key: SecretKey, lifetime: SignedDuration) -> Self {
        Self {
            tree,
            key: IndexKey::Key(Box::new(key)),
            lifetime,
        }
    }

    /// How long what it signs is valid.
    pub fn lifetime(&self) -> SignedDuration {
        self.lifetime
    }

    /// Writes a new snapshot of the tree as it is now and a timestamp naming
    /// it, each one version on from the current ones, hashing every file
    /// the snapshot lists. The caller serialises calls (the state lock).
    pub fn sign(&self) -> Result<u64, KeysError> {
        self.sign_changes(None)
    }

    /// [`Self::sign`], hashing only the files at `changed` (those written
    /// since the last signing; a file that is gone leaves the snapshot)
    /// when the current snapshot is a tree of nodes (version 2); every
    /// file otherwise, or with `None`. Writes the new nodes and bins, then
    /// the snapshot, then the timestamp.
    pub fn sign_changes(&self, changed: Option<&[String]>) -> Result<u64, KeysError> {
        let read;
        let key = match &self.key {
            IndexKey::File(path) => {
                read = read_secret_key(path)?;
                &read
            }
            IndexKey::Key(key) => key,
        };
        let previous = self.seen()?;
        let nodes = match changed {
            Some(changed) => self.current_nodes()?.and_then(|nodes| {
                match self.update_nodes(&nodes, changed) {
                    Ok(tree) => Some(tree),
                    // A node or bin missing or changed in the tree: it is
                    // made again from every file.
                    Err(error) => {
                        tracing::warn!(
                            error = %error,
                            "the signed snapshot's tree is not intact; hashing every file again"
                        );
                        None
                    }
                }
            }),
            None => None,
        };
        let tree = match nodes {
            Some(tree) => tree,
            None => MetaTree::build(&self.tree.snapshot_files()?),
        };
        for (path, bytes) in &tree.written {
            self.tree.write_file(path, bytes)?;
        }
        let expires = Timestamp::now() + self.lifetime;
        let (snapshot, timestamp) = metadata::sign_snapshot_and_timestamp(
            Listing::Nodes(tree.nodes),
            previous,
            expires,
            key,
        );
        // The snapshot first: a reader that gets the new timestamp finds
        // its snapshot in place.
        self.tree.write_file(metadata::SNAPSHOT_PATH, &snapshot)?;
        self.tree.write_file(TIMESTAMP_PATH, &timestamp)?;
        Ok(previous.timestamp + 1)
    }

    /// The nodes of the current snapshot, when it is a tree (version 2).
    fn current_nodes(&self) -> Result<Option<BTreeMap<String, Checksum>>, KeysError> {
        let Some(bytes) = self.tree.read_file(metadata::SNAPSHOT_PATH)? else {
            return Ok(None);
        };
        Ok(
            metadata::parse::<Snapshot>(metadata::SNAPSHOT_PATH, "snapshot", &bytes)
                .ok()
                .and_then(|snapshot| snapshot.signed.nodes),
        )
    }

    /// The tree `nodes` with the files at `changed` hashed again.
    fn update_nodes(
        &self,
        nodes: &BTreeMap<String, Checksum>,
        changed: &[String],
    ) -> Result<MetaTree, MetadataError> {
        let unreadable = |path: &str, error: &dyn std::fmt::Display| MetadataError::Malformed {
            file: path.to_owned(),
            reason: format!("it cannot be read: {error}"),
        };
        let mut changes = BTreeMap::new();
        for path in changed {
            let bytes = self
                .tree
                .read_file(path)
                .map_err(|error| unreadable(path, &error))?;
            changes.insert(path.clone(), bytes.map(|bytes| Checksum::of(&bytes)));
        }
        MetaTree::update(nodes, &changes, |sum| {
            let path = metadata::meta_path(sum);
            self.tree
                .read_file(&path)
                .map_err(|error| unreadable(&path, &error))?
                .ok_or(MetadataError::Missing {
                    file: path,
                    snapshot: 0,
                })
        })
    }

    /// The versions of the current timestamp and snapshot.
    fn seen(&self) -> Result<Seen, KeysError> {
        let Some(bytes) = self.tree.read_file(TIMESTAMP_PATH)? else {
            return Ok(Seen::default());
        };
        let timestamp: TimestampFile = metadata::parse(TIMESTAMP_PATH, "timestamp", &bytes)
            .map_err(KeysError::BadRoot)?
            .signed;
        Ok(Seen {
            timestamp: timestamp.version,
            snapshot: timestamp.snapshot.version,
        })
    }
}

/// Re-signs the snapshot and timestamp of `tree`, the tree of the data
/// folder `root`, now, when the folder has an index key; returns the new
/// timestamp version. The caller holds the state lock.
pub fn sign_data_folder(
    root: &Path,
    tree: &StaticTree,
    lifetime: SignedDuration,
) -> Result<Option<u64>, KeysError> {
    Signer::open(root, tree, lifetime)?
        .map(|signer| signer.sign())
        .transpose()
}

/// Reads the newest root of `tree`, checked against its own keys.
pub fn current_root(tree: &StaticTree) -> Result<Option<Root>, KeysError> {
    let Some(bytes) = tree.read_file(ROOT_PATH)? else {
        return Ok(None);
    };
    let unverified: metadata::Unverified<Root> =
        metadata::parse(ROOT_PATH, "root", &bytes).map_err(KeysError::BadRoot)?;
    let root = unverified.signed.clone();
    unverified
        .verify(&root, metadata::RoleName::Root)
        .map_err(KeysError::BadRoot)
        .map(Some)
}

/// Starts signed metadata for `tree`, the tree of the data folder `root`:
/// a new index key in the state folder, root version 1 listing `root_keys` (of which
/// `threshold` must sign a new root), signed by all of them, and a first
/// snapshot and timestamp.
pub fn init(
    root: &Path,
    tree: &StaticTree,
    root_keys: &[SecretKey],
    threshold: u32,
    lifetime: SignedDuration,
) -> Result<Root, KeysError> {
    if let Some(existing) = current_root(tree)? {
        return Err(KeysError::AlreadyInitialised {
            tree: tree.root().to_owned(),
            version: existing.version,
        });
    }
    check_threshold(threshold, root_keys.len())?;
    let index_path = root.join(STATE_DIR).join(INDEX_KEY_FILE);
    let index = if index_path.exists() {
        read_secret_key(&index_path)?.public()
    } else {
        generate_key(&index_path)?
    };
    let public: Vec<PublicKey> = root_keys.iter().map(SecretKey::public).collect();
    let first = Root::new(
        1,
        Timestamp::now() + DEFAULT_ROOT_LIFETIME,
        &public,
        threshold,
        &index,
    );
    let signers: Vec<&SecretKey> = root_keys.iter().collect();
    let bytes = metadata::sign(&first, &signers);
    metadata::verify_first_root(&bytes, None).map_err(KeysError::Refused)?;
    tree.write_file(&root_path(1), &bytes)?;
    tree.write_file(ROOT_PATH, &bytes)?;
    sign_data_folder(root, tree, lifetime)?;
    Ok(first)
}

fn check_threshold(threshold: u32, keys: usize) -> Result<(), KeysError> {
    if threshold == 0 || threshold as usize > keys {
        return Err(KeysError::Threshold { keys });
    }
    Ok(())
}

/// What a new root changes.
#[derive(Debug, Default)]
pub struct Rotation {
    /// A new index key (its public half), replacing the current one.
    pub index_key: Option<PublicKey>,
    /// New root keys and threshold, replacing the current ones.
    pub root_keys: Option<(Vec<PublicKey>, u32)>,
}

/// Writes the next root of `tree` with `rotation` applied, signed by
/// `signers` (which must include a threshold of the current root keys and a
/// threshold of the new ones: the root is checked as a client would before
/// it is written, so too few signatures write nothing).
pub fn rotate(
    tree: &StaticTree,
    rotation: &Rotation,
    signers: &[SecretKey],
) -> Result<Root, KeysError> {
    let current = current_root(tree)?.ok_or_else(|| KeysError::NotInitialised {
        tree: tree.root().to_owned(),
    })?;
    let root_keys: Vec<PublicKey> = match &rotation.root_keys {
        Some((keys, threshold)) => {
            check_threshold(*threshold, keys.len())?;
            keys.clone()
        }
        None => role_keys(&current, &current.roles.root.keyids),
    };
    let threshold = rotation
        .root_keys
        .as_ref()
        .map_or(current.roles.root.threshold, |(_, threshold)| *threshold);
    let index = match &rotation.index_key {
        Some(key) => key.clone(),
        None => role_keys(&current, &current.roles.index.keyids)
            .into_iter()
            .next()
            .ok_or_else(|| {
                KeysError::BadRoot(MetadataError::Malformed {
                    file: ROOT_PATH.into(),
                    reason: "it has no index key".into(),
                })
            })?,
    };
    let next = Root::new(
        current.version + 1,
        Timestamp::now() + DEFAULT_ROOT_LIFETIME,
        &root_keys,
        threshold,
        &index,
    );
    let signers: Vec<&SecretKey> = signers.iter().collect();
    let bytes = metadata::sign(&next, &signers);
    metadata::verify_next_root(&current, &bytes).map_err(KeysError::Refused)?;
    tree.write_file(&root_path(next.version), &bytes)?;
    tree.write_file(ROOT_PATH, &bytes)?;
    Ok(next)
}

fn role_keys(root: &Root, ids: &[String]) -> Vec<PublicKey> {
    ids.iter()
        .filter_map(|id| root.keys.get(id).cloned())
        .collect()
}

/// Replaces the data folder's index key with a new one, and writes the
/// root that lists it (signed by `root_keys`) and a snapshot and timestamp
/// signed by it. The old key is kept beside it as `index.key.old`.
pub fn rotate_index_key(
    root: &Path,
    tree: &StaticTree,
    root_keys: &[SecretKey],
    lifetime: SignedDuration,
) -> Result<Root, KeysError> {
    let state = root.join(STATE_DIR);
    let staged = state.join(format!("{INDEX_KEY_FILE}.new"));
    let _ = fs_err::remove_file(&staged);
    let _ = fs_err::remove_file(public_path(&staged));
    let public = generate_key(&staged)?;
    let rotation = Rotation {
        index_key: Some(public),
        root_keys: None,
    };
    let next = match rotate(tree, &rotation, root_keys) {
        Ok(next) => next,
        Err(error) => {
            let _ = fs_err::remove_file(&staged);
            let _ = fs_err::remove_file(public_path(&staged));
            return Err(error);
        }
    };
    let current = state.join(INDEX_KEY_FILE);
    let io = |source| KeysError::ReadKey {
        path: current.clone(),
        source,
    };
    fs_err::rename(&current, state.join(format!("{INDEX_KEY_FILE}.old"))).map_err(io)?;
    fs_err::rename(&staged, &current).map_err(io)?;
    fs_err::rename(public_path(&staged), public_path(&current)).map_err(io)?;
    sign_data_folder(root, tree, lifetime)?;
    Ok(next)
}
