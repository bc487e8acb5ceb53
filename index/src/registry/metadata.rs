//! Signed registry metadata (TUF-style; normative text in
//! `docs/index-format.md#signed-metadata`), so that a mirror or a CDN cannot
//! lie about what the registry published.
//!
//! ```text
//! 1.root.json 2.root.json ...   every root, signed by a threshold of the keys
//!                               of the root before it and of its own
//! root.json                     the newest root (a copy)
//! snapshot.json                 the sha256 of every index file, keys file and
//!                               file of the search index, through a tree of
//!                               nodes and bins (version 2) or listed (version 1);
//!                               signed by the index key
//! meta/<sha256>.json            the snapshot's nodes and bins, named by the
//!                               sha256 of their bytes: immutable
//! timestamp.json                the snapshot's version and sha256, a sequence
//!                               number and a short expiry; signed by the index key
//! ```
//!
//! Each file is `{"signed": {...}, "signatures": [{"keyid", "sig"}]}`. A
//! signature is plain Ed25519 by a minisign-format key over
//! [`SIGNING_CONTEXT`] followed by the canonical JSON of `signed` (object keys
//! sorted, no whitespace), so a file can be re-indented without breaking it.
//!
//! The root keys are kept offline: they sign only roots. The index key is
//! online (the server re-signs the snapshot and timestamp on every change)
//! and can sign nothing but those two. A client pins the first root it
//! trusts, walks `N+1.root.json` forward from it, and then checks
//! timestamp → snapshot → every file it reads, refusing rollbacks (a version
//! older than one it saw), freezes (an expired file) and mixed snapshots (a
//! file whose sha256 is not the snapshot's).

use std::collections::BTreeMap;

use jiff::Timestamp;
use serde::de::DeserializeOwned;

use crate::checksum::Checksum;
use crate::signing::{KeyId, PublicKey, SecretKey};

/// Where the newest root is.
pub const ROOT_PATH: &str = "root.json";
/// Where the snapshot is.
pub const SNAPSHOT_PATH: &str = "snapshot.json";
/// Where the timestamp is.
pub const TIMESTAMP_PATH: &str = "timestamp.json";
/// What precedes the canonical JSON in every signed message: a signature
/// of metadata can never pass for a signature of anything else.
pub const SIGNING_CONTEXT: &[u8] = b"skillpkg-metadata/1\n";

/// Returns the path of root version `version`.
pub fn root_path(version: u64) -> String {
    format!("{version}.root.json")
}

/// Returns true if and only if the snapshot lists the file at `path`: the
/// index files, the keys files and the search index (`search.json` and its
/// shards). The archives are covered by the index lines' sha256,
/// `config.json` is a mirror's own.
pub fn in_snapshot(path: &str) -> bool {
    path.starts_with("index/")
        || path.starts_with("keys/")
        || path == super::SEARCH_PATH
        || path
            .strip_prefix(super::SEARCH_SHARDS_DIR)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// A role: which keys may sign, and how many must.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Role {
    pub keyids: Vec<String>,
    pub threshold: u32,
}

/// The roles of a root.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Roles {
    /// Signs roots.
    pub root: Role,
    /// Signs the snapshot and the timestamp.
    pub index: Role,
}

/// Which role signs a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RoleName {
    Root,
    Index,
}

impl std::fmt::Display for RoleName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Root => "root",
            Self::Index => "index",
        })
    }
}

/// `N.root.json`: the keys of the registry.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Root {
    #[serde(rename = "type")]
    pub kind: String,
    pub version: u64,
    #[serde(with = "super::rfc3339_seconds")]
    pub expires: Timestamp,
    /// Every key of every role, by key id.
    pub keys: BTreeMap<String, PublicKey>,
    pub roles: Roles,
}

impl Root {
    /// A root listing `root_keys` (of which `threshold` must sign roots) and
    /// the one online `index_key`.
    pub fn new(
        version: u64,
        expires: Timestamp,
        root_keys: &[PublicKey],
        threshold: u32,
        index_key: &PublicKey,
    ) -> Self {
        let mut keys = BTreeMap::new();
        for key in root_keys.iter().chain([index_key]) {
            keys.insert(key.id().to_string(), key.clone());
        }
        let ids = |keys: &[PublicKey]| keys.iter().map(|key| key.id().to_string()).collect();
        Self {
            kind: "root".into(),
            version,
            expires: super::whole_seconds(expires),
            keys,
            roles: Roles {
                root: Role {
                    keyids: ids(root_keys),
                    threshold,
                },
                index: Role {
                    keyids: ids(std::slice::from_ref(index_key)),
                    threshold: 1,
                },
            },
        }
    }

    fn role(&self, name: RoleName) -> &Role {
        match name {
            RoleName::Root => &self.roles.root,
            RoleName::Index => &self.roles.index,
        }
    }
}

/// `snapshot.json`: the sha256 of every file [`in_snapshot`] lists, in one
/// of two forms. Version 1 lists them (`files`), so its size, and the cost
/// of signing it, grow with the registry. Version 2 (`nodes`) is the root
/// of a tree: the paths are spread over 256 nodes by the first byte of the
/// sha256 of the path, each node over 16 bins by the high half of the
/// second byte, and each bin lists the sha256 of its paths' files. Nodes
/// and bins are files of their own, `meta/<sha256>.json`, named by the
/// sha256 of their bytes, so the snapshot that names a node's sha256 signs
/// everything below it, and a change rewrites one bin, one node and the
/// snapshot: a few KB whatever the registry's size.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Snapshot {
    #[serde(rename = "type")]
    pub kind: String,
    pub version: u64,
    #[serde(with = "super::rfc3339_seconds")]
    pub expires: Timestamp,
    /// Version 1: every file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files: Option<BTreeMap<String, Checksum>>,
    /// Version 2: the sha256 of each node that lists any file, by its
    /// two hex digits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<BTreeMap<String, Checksum>>,
}

/// Where the nodes and bins of snapshots of version 2 are.
pub const META_DIR: &str = "meta";

/// Returns the path of the node or bin whose bytes have the sha256 `sum`.
pub fn meta_path(sum: &Checksum) -> String {
    format!("{META_DIR}/{}.json", sum.hex())
}

/// A node of a snapshot of version 2 (`meta/<sha256>.json`): the sha256 of
/// each of its bins that lists any file, by its hex digit.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SnapshotNode {
    #[serde(rename = "type")]
    pub kind: String,
    pub bins: BTreeMap<String, Checksum>,
}

/// A bin of a snapshot of version 2 (`meta/<sha256>.json`): the sha256 of
/// each of its files, by path.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SnapshotBin {
    #[serde(rename = "type")]
    pub kind: String,
    pub files: BTreeMap<String, Checksum>,
}

/// Where a path is listed in a snapshot of version 2: its node (two hex
/// digits, the first byte of the sha256 of the path) and its bin in it
/// (one hex digit, the high half of the second byte).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Slot {
    pub node: String,
    pub bin: String,
}

/// Returns the slot of `path`.
pub fn slot(path: &str) -> Slot {
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(path.as_bytes());
    Slot {
        node: format!("{:02x}", digest[0]),
        bin: format!("{:x}", digest[1] >> 4),
    }
}

/// Parses a node or bin read at `file`, checking that its bytes have the
/// sha256 `sum` the level above names.
pub fn parse_meta<T: DeserializeOwned>(
    file: &str,
    sum: &Checksum,
    kind: &str,
    bytes: &[u8],
) -> Result<T, MetadataError> {
    let malformed = |reason: String| MetadataError::Malformed {
        file: file.to_owned(),
        reason,
    };
    if Checksum::of(bytes) != *sum {
        return Err(MetadataError::FileMismatch {
            file: file.to_owned(),
            snapshot: 0,
        });
    }
    let value: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|error| malformed(error.to_string()))?;
    let found = value.get("type").and_then(|value| value.as_str());
    if found != Some(kind) {
        return Err(malformed(format!(
            "its type is {found:?}, and {kind:?} was expected"
        )));
    }
    serde_json::from_value(value).map_err(|error| malformed(error.to_string()))
}

/// The nodes and bins of a snapshot of version 2, as files: built from
/// every file's sha256, or changed from an earlier tree.
#[derive(Debug, Default)]
pub struct MetaTree {
    /// The snapshot's `nodes`.
    pub nodes: BTreeMap<String, Checksum>,
    /// The nodes and bins to write (path, bytes): those the tree has and
    /// the earlier one did not. Write them before the snapshot.
    pub written: Vec<(String, Vec<u8>)>,
}

/// Changed files of one bin: a path and its new sha256 (`None`: gone).
type Changes<'a> = Vec<(&'a String, &'a Option<Checksum>)>;

fn render_meta<T: serde::Serialize>(value: &T) -> (Checksum, Vec<u8>) {
    let bytes = super::render_json(value);
    (Checksum::of(&bytes), bytes)
}

impl MetaTree {
    /// The tree of `files` (path to sha256).
    pub fn build(files: &BTreeMap<String, Checksum>) -> Self {
        let mut by_slot: BTreeMap<Slot, BTreeMap<String, Checksum>> = BTreeMap::new();
        for (path, sum) in files {
            by_slot
                .entry(slot(path))
                .or_default()
                .insert(path.clone(), *sum);
        }
        let mut tree = Self::default();
        let mut node_bins: BTreeMap<String, BTreeMap<String, Checksum>> = BTreeMap::new();
        for (slot, files) in by_slot {
            let (sum, bytes) = render_meta(&SnapshotBin {
                kind: "bin".into(),
                files,
            });
            tree.written.push((meta_path(&sum), bytes));
            node_bins
                .entry(slot.node)
                .or_default()
                .insert(slot.bin, sum);
        }
        for (node, bins) in node_bins {
            let (sum, bytes) = render_meta(&SnapshotNode {
                kind: "node".into(),
                bins,
            });
            tree.written.push((meta_path(&sum), bytes));
            tree.nodes.insert(node, sum);
        }
        tree
    }

    /// The tree `nodes` (an earlier snapshot's) with `changes` made: a
    /// path to its file's new sha256, or `None` for a file that is gone.
    /// `read` returns a node or bin of the earlier tree by its sha256
    /// (checked here). Only the bins and nodes on the changed paths are
    /// read and written again.
    pub fn update<E: From<MetadataError>>(
        nodes: &BTreeMap<String, Checksum>,
        changes: &BTreeMap<String, Option<Checksum>>,
        mut read: impl FnMut(&Checksum) -> Result<Vec<u8>, E>,
    ) -> Result<Self, E> {
        // The changes by node, then by bin.
        let mut by_node: BTreeMap<String, BTreeMap<String, Changes<'_>>> = BTreeMap::new();
        for (path, sum) in changes {
            let Slot { node, bin } = slot(path);
            by_node
                .entry(node)
                .or_default()
                .entry(bin)
                .or_default()
                .push((path, sum));
        }
        let mut tree = Self {
            nodes: nodes.clone(),
            written: Vec::new(),
        };
        for (node, bins) in by_node {
            let mut node_bins = match nodes.get(&node) {
                Some(sum) => {
                    let path = meta_path(sum);
                    parse_meta::<SnapshotNode>(&path, sum, "node", &read(sum)?)?.bins
                }
                None => BTreeMap::new(),
            };
            for (bin, changed) in bins {
                let mut files = match node_bins.get(&bin) {
                    Some(sum) => {
                        let path = meta_path(sum);
                        parse_meta::<SnapshotBin>(&path, sum, "bin", &read(sum)?)?.files
                    }
                    None => BTreeMap::new(),
                };
                for (path, sum) in changed {
                    match sum {
                        Some(sum) => files.insert(path.clone(), *sum),
                        None => files.remove(path),
                    };
                }
                if files.is_empty() {
                    node_bins.remove(&bin);
                    continue;
                }
                let (sum, bytes) = render_meta(&SnapshotBin {
                    kind: "bin".into(),
                    files,
                });
                tree.written.push((meta_path(&sum), bytes));
                node_bins.insert(bin, sum);
            }
            if node_bins.is_empty() {
                tree.nodes.remove(&node);
                continue;
            }
            let (sum, bytes) = render_meta(&SnapshotNode {
                kind: "node".into(),
                bins: node_bins,
            });
            tree.written.push((meta_path(&sum), bytes));
            tree.nodes.insert(node, sum);
        }
        Ok(tree)
    }
}

/// What the timestamp says of the snapshot.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SnapshotReference {
    pub version: u64,
    pub sha256: Checksum,
}

/// `timestamp.json`: the newest snapshot, re-signed often.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TimestampFile {
    #[serde(rename = "type")]
    pub kind: String,
    /// The sequence number: one more on every signing.
    pub version: u64,
    #[serde(with = "super::rfc3339_seconds")]
    pub expires: Timestamp,
    pub snapshot: SnapshotReference,
}

/// One signature of a metadata file.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct MetadataSignature {
    pub keyid: String,
    /// Base64 of the 64-byte Ed25519 signature.
    pub sig: String,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Envelope {
    signed: serde_json::Value,
    signatures: Vec<MetadataSignature>,
}

/// Why metadata was refused. `file` is the path in the tree.
#[derive(Debug, thiserror::Error)]
pub enum MetadataError {
    #[error("{file} is not valid registry metadata: {reason}")]
    Malformed { file: String, reason: String },
    #[error(
        "{file} is signed by {valid} valid {role} key(s), and the {role} role needs {threshold}"
    )]
    Signatures {
        file: String,
        role: RoleName,
        valid: usize,
        threshold: u32,
    },
    #[error("{file} has version {found}, and version {expected} was expected")]
    WrongVersion {
        file: String,
        expected: u64,
        found: u64,
    },
    #[error("{file} is a rollback: it has version {found}, older than version {seen} seen before")]
    Rollback { file: String, seen: u64, found: u64 },
    #[error("{file} expired at {expires}: the registry's metadata is frozen or stale")]
    Expired { file: String, expires: Timestamp },
    #[error("the pinned root key {key} does not sign {file}")]
    NotPinned { file: String, key: KeyId },
    #[error("{file} is not the snapshot that timestamp.json names (version {version}, {sha256})")]
    SnapshotMismatch {
        file: String,
        version: u64,
        sha256: Checksum,
    },
    #[error("{file} differs from the registry's signed snapshot (version {snapshot})")]
    FileMismatch { file: String, snapshot: u64 },
    #[error("{file} is served but is not in the registry's signed snapshot (version {snapshot})")]
    NotInSnapshot { file: String, snapshot: u64 },
    #[error("{file} is in the registry's signed snapshot (version {snapshot}) but is missing")]
    Missing { file: String, snapshot: u64 },
}

/// Returns the canonical JSON of `value`: object keys sorted by their
/// UTF-8 bytes, no whitespace, strings and numbers as serde_json writes them.
pub fn canonical_json(value: &serde_json::Value) -> Vec<u8> {
    fn write(value: &serde_json::Value, out: &mut Vec<u8>) {
        match value {
            serde_json::Value::Object(map) => {
                let mut entries: Vec<_> = map.iter().collect();
                entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
                out.push(b'{');
                for (index, (key, value)) in entries.into_iter().enumerate() {
                    if index > 0 {
                        out.push(b',');
                    }
                    out.extend(serde_json::to_vec(key).expect("a string serialises"));
                    out.push(b':');
                    write(value, out);
                }
                out.push(b'}');
            }
            serde_json::Value::Array(items) => {
                out.push(b'[');
                for (index, item) in items.iter().enumerate() {
                    if index > 0 {
                        out.push(b',');
                    }
                    write(item, out);
                }
                out.push(b']');
            }
            scalar => out.extend(serde_json::to_vec(scalar).expect("a scalar serialises")),
        }
    }
    let mut out = Vec::new();
    write(value, &mut out);
    out
}

fn message(signed: &serde_json::Value) -> Vec<u8> {
    let mut message = SIGNING_CONTEXT.to_vec();
    message.extend(canonical_json(signed));
    message
}

/// Signs `signed` with every key of `keys` and returns the file's bytes.
pub fn sign<T: serde::Serialize>(signed: &T, keys: &[&SecretKey]) -> Vec<u8> {
    use base64::Engine as _;
    let value = serde_json::to_value(signed).expect("metadata serialises");
    let message = message(&value);
    let signatures = keys
        .iter()
        .map(|key| MetadataSignature {
            keyid: key.id().to_string(),
            sig: base64::engine::general_purpose::STANDARD.encode(key.sign_message(&message)),
        })
        .collect();
    let mut bytes = serde_json::to_vec_pretty(&Envelope {
        signed: value,
        signatures,
    })
    .expect("metadata serialises");
    bytes.push(b'\n');
    bytes
}

/// A metadata file read but not yet trusted.
#[derive(Debug)]
pub struct Unverified<T> {
    file: String,
    pub signed: T,
    message: Vec<u8>,
    signatures: Vec<MetadataSignature>,
}

/// Parses a metadata file of type `kind` without checking its signatures.
pub fn parse<T: DeserializeOwned>(
    file: &str,
    kind: &str,
    bytes: &[u8],
) -> Result<Unverified<T>, MetadataError> {
    let malformed = |reason: String| MetadataError::Malformed {
        file: file.to_owned(),
        reason,
    };
    let envelope: Envelope =
        serde_json::from_slice(bytes).map_err(|error| malformed(error.to_string()))?;
    let found = envelope.signed.get("type").and_then(|value| value.as_str());
    if found != Some(kind) {
        return Err(malformed(format!(
            "its type is {found:?}, and {kind:?} was expected"
        )));
    }
    let signed = serde_json::from_value(envelope.signed.clone())
        .map_err(|error| malformed(error.to_string()))?;
    Ok(Unverified {
        file: file.to_owned(),
        signed,
        message: message(&envelope.signed),
        signatures: envelope.signatures,
    })
}

impl<T> Unverified<T> {
    /// Returns the ids of the keys among `keyids` (of `root`'s key table)
    /// that made a valid signature, each counted once.
    fn valid_signers(&self, keys: &BTreeMap<String, PublicKey>, keyids: &[String]) -> Vec<String> {
        use base64::Engine as _;
        let mut valid: Vec<String> = Vec::new();
        for signature in &self.signatures {
            if valid.contains(&signature.keyid) || !keyids.contains(&signature.keyid) {
                continue;
            }
            let Some(key) = keys.get(&signature.keyid) else {
                continue;
            };
            let Some(bytes) = base64::engine::general_purpose::STANDARD
                .decode(&signature.sig)
                .ok()
                .and_then(|bytes| <[u8; 64]>::try_from(bytes).ok())
            else {
                continue;
            };
            if key.verify_message(&self.message, &bytes) {
                valid.push(signature.keyid.clone());
            }
        }
        valid
    }

    /// Checks that a threshold of `root`'s `role` keys signed the file.
    pub fn verify(self, root: &Root, role: RoleName) -> Result<T, MetadataError> {
        self.check(&root.keys, root.role(role), role)?;
        Ok(self.signed)
    }

    fn check(
        &self,
        keys: &BTreeMap<String, PublicKey>,
        role: &Role,
        name: RoleName,
    ) -> Result<Vec<String>, MetadataError> {
        let valid = self.valid_signers(keys, &role.keyids);
        if role.threshold == 0 || valid.len() < role.threshold as usize {
            return Err(MetadataError::Signatures {
                file: self.file.clone(),
                role: name,
                valid: valid.len(),
                threshold: role.threshold,
            });
        }
        Ok(valid)
    }
}

/// Checks the first root a client trusts: version 1, signed by a threshold
/// of its own root keys, and, when a key is pinned, by that key too.
pub fn verify_first_root(bytes: &[u8], pinned: Option<&PublicKey>) -> Result<Root, MetadataError> {
    let file = root_path(1);
    let unverified: Unverified<Root> = parse(&file, "root", bytes)?;
    if unverified.signed.version != 1 {
        return Err(MetadataError::WrongVersion {
            file,
            expected: 1,
            found: unverified.signed.version,
        });
    }
    let root = unverified.signed.clone();
    let valid = unverified.check(&root.keys, &root.roles.root, RoleName::Root)?;
    if let Some(pinned) = pinned {
        let id = pinned.id().to_string();
        if !valid.contains(&id) || root.keys.get(&id) != Some(pinned) {
            return Err(MetadataError::NotPinned {
                file,
                key: pinned.id(),
            });
        }
    }
    Ok(root)
}

/// Checks the root after `trusted`: the next version, signed by a threshold
/// of `trusted`'s root keys and by a threshold of its own.
pub fn verify_next_root(trusted: &Root, bytes: &[u8]) -> Result<Root, MetadataError> {
    let version = trusted.version + 1;
    let file = root_path(version);
    let unverified: Unverified<Root> = parse(&file, "root", bytes)?;
    if unverified.signed.version != version {
        return Err(MetadataError::WrongVersion {
            file,
            expected: version,
            found: unverified.signed.version,
        });
    }
    unverified.check(&trusted.keys, &trusted.roles.root, RoleName::Root)?;
    let next = unverified.signed.clone();
    unverified.check(&next.keys, &next.roles.root, RoleName::Root)?;
    Ok(next)
}

/// Fails with [`MetadataError::Expired`] if `expires` is not after `now`.
pub fn check_expiry(file: &str, expires: Timestamp, now: Timestamp) -> Result<(), MetadataError> {
    if expires <= now {
        return Err(MetadataError::Expired {
            file: file.to_owned(),
            expires,
        });
    }
    Ok(())
}

/// What a client saw last, to refuse rollbacks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Seen {
    pub timestamp: u64,
    pub snapshot: u64,
}

/// Checks `timestamp.json`: signed by the index role, not older than
/// `seen`, not expired.
pub fn verify_timestamp(
    root: &Root,
    bytes: &[u8],
    seen: Seen,
    now: Timestamp,
) -> Result<TimestampFile, MetadataError> {
    let timestamp: TimestampFile =
        parse(TIMESTAMP_PATH, "timestamp", bytes)?.verify(root, RoleName::Index)?;
    if timestamp.version < seen.timestamp {
        return Err(MetadataError::Rollback {
            file: TIMESTAMP_PATH.into(),
            seen: seen.timestamp,
            found: timestamp.version,
        });
    }
    if timestamp.snapshot.version < seen.snapshot {
        return Err(MetadataError::Rollback {
            file: TIMESTAMP_PATH.into(),
            seen: seen.snapshot,
            found: timestamp.snapshot.version,
        });
    }
    check_expiry(TIMESTAMP_PATH, timestamp.expires, now)?;
    Ok(timestamp)
}

/// Checks `snapshot.json`: the very file the timestamp names, signed by the
/// index role, not expired.
pub fn verify_snapshot(
    root: &Root,
    timestamp: &TimestampFile,
    bytes: &[u8],
    now: Timestamp,
) -> Result<Snapshot, MetadataError> {
    let mismatch = || MetadataError::SnapshotMismatch {
        file: SNAPSHOT_PATH.into(),
        version: timestamp.snapshot.version,
        sha256: timestamp.snapshot.sha256,
    };
    if Checksum::of(bytes) != timestamp.snapshot.sha256 {
        return Err(mismatch());
    }
    let snapshot: Snapshot =
        parse(SNAPSHOT_PATH, "snapshot", bytes)?.verify(root, RoleName::Index)?;
    if snapshot.version != timestamp.snapshot.version {
        return Err(mismatch());
    }
    if snapshot.files.is_some() == snapshot.nodes.is_some() {
        return Err(MetadataError::Malformed {
            file: SNAPSHOT_PATH.into(),
            reason: "it must have exactly one of `files` (version 1) and `nodes` (version 2)"
                .into(),
        });
    }
    check_expiry(SNAPSHOT_PATH, snapshot.expires, now)?;
    Ok(snapshot)
}

impl Snapshot {
    /// Checks a file [`in_snapshot`] lists against a snapshot of version 1:
    /// `bytes` is `None` when the file is missing (a 404). A snapshot of
    /// version 2 names the file's sha256 through its nodes and bins: find
    /// it ([`slot`]), then [`Self::check_expected`].
    pub fn check_file(&self, path: &str, bytes: Option<&[u8]>) -> Result<(), MetadataError> {
        let expected = self.files.as_ref().and_then(|files| files.get(path));
        self.check_expected(path, expected, bytes)
    }

    /// Checks a file against `expected`, the sha256 the snapshot names for
    /// it (`None`: it names none); `bytes` is `None` when the file is
    /// missing.
    pub fn check_expected(
        &self,
        path: &str,
        expected: Option<&Checksum>,
        bytes: Option<&[u8]>,
    ) -> Result<(), MetadataError> {
        match (expected, bytes) {
            (Some(expected), Some(bytes)) if Checksum::of(bytes) == *expected => Ok(()),
            (Some(_), Some(_)) => Err(MetadataError::FileMismatch {
                file: path.to_owned(),
                snapshot: self.version,
            }),
            (None, None) => Ok(()),
            (None, Some(_)) => Err(MetadataError::NotInSnapshot {
                file: path.to_owned(),
                snapshot: self.version,
            }),
            (Some(_), None) => Err(MetadataError::Missing {
                file: path.to_owned(),
                snapshot: self.version,
            }),
        }
    }
}

/// What a snapshot lists: every file (version 1), or the nodes of a
/// [`MetaTree`] (version 2).
#[derive(Clone, Debug)]
pub enum Listing {
    Files(BTreeMap<String, Checksum>),
    Nodes(BTreeMap<String, Checksum>),
}

/// The snapshot and timestamp that describe `listing` (the sha256 of every
/// file [`in_snapshot`] lists), signed by `index_key`, with the versions
/// after `previous`.
pub fn sign_snapshot_and_timestamp(
    listing: Listing,
    previous: Seen,
    expires: Timestamp,
    index_key: &SecretKey,
) -> (Vec<u8>, Vec<u8>) {
    let expires = super::whole_seconds(expires);
    let (files, nodes) = match listing {
        Listing::Files(files) => (Some(files), None),
        Listing::Nodes(nodes) => (None, Some(nodes)),
    };
    let snapshot = sign(
        &Snapshot {
            kind: "snapshot".into(),
            version: previous.snapshot + 1,
            expires,
            files,
            nodes,
        },
        &[index_key],
    );
    let timestamp = sign(
        &TimestampFile {
            kind: "timestamp".into(),
            version: previous.timestamp + 1,
            expires,
            snapshot: SnapshotReference {
                version: previous.snapshot + 1,
                sha256: Checksum::of(&snapshot),
            },
        },
        &[index_key],
    );
    (snapshot, timestamp)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> SecretKey {
        SecretKey::generate().unwrap()
    }

    fn in_days(days: i64) -> Timestamp {
        Timestamp::now() + jiff::SignedDuration::from_hours(24 * days)
    }

    fn root(version: u64, root_keys: &[&SecretKey], threshold: u32, index: &SecretKey) -> Root {
        let public: Vec<_> = root_keys.iter().map(|key| key.public()).collect();
        Root::new(version, in_days(365), &public, threshold, &index.public())
    }

    #[test]
    fn canonical_json_sorts_keys_and_drops_whitespace() {
        let value: serde_json::Value =
            serde_json::from_str(r#"{ "b": [1, {"z": "é\n", "a": null}], "a": true }"#).unwrap();
        assert_eq!(
            String::from_utf8(canonical_json(&value)).unwrap(),
            r#"{"a":true,"b":[1,{"a":null,"z":"é\n"}]}"#
        );
    }

    #[test]
    fn a_root_chain_needs_thresholds_of_old_and_new_keys() {
        let (a, b, c, index) = (key(), key(), key(), key());
        let first = sign(&root(1, &[&a, &b], 2, &index), &[&a, &b]);
        let pinned = a.public();
        let trusted = verify_first_root(&first, Some(&pinned)).unwrap();
        assert_eq!(trusted.version, 1);
        // Pinning a key that is not a root key of version 1 fails.
        assert!(matches!(
            verify_first_root(&first, Some(&c.public())),
            Err(MetadataError::NotPinned { .. })
        ));
        // One of two: too few.
        let lone = sign(&root(1, &[&a, &b], 2, &index), &[&a]);
        assert!(matches!(
            verify_first_root(&lone, None),
            Err(MetadataError::Signatures {
                valid: 1,
                threshold: 2,
                ..
            })
        ));

        // Rotating b out for c: needs 2 of {a, b} and 2 of {a, c}.
        let next = root(2, &[&a, &c], 2, &index);
        let good = sign(&next, &[&a, &b, &c]);
        assert_eq!(verify_next_root(&trusted, &good).unwrap(), next);
        let old_only = sign(&next, &[&a, &b]);
        let error = verify_next_root(&trusted, &old_only).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("2.root.json is signed by 1 valid root key(s)"),
            "{error}"
        );
        let new_only = sign(&next, &[&a, &c]);
        assert!(verify_next_root(&trusted, &new_only).is_err());
        // Skipping a version is refused.
        let skipped = sign(&root(3, &[&a, &b], 2, &index), &[&a, &b]);
        assert!(matches!(
            verify_next_root(&trusted, &skipped),
            Err(MetadataError::WrongVersion {
                expected: 2,
                found: 3,
                ..
            })
        ));
        // A signature counted twice is counted once.
        let mut doubled: serde_json::Value = serde_json::from_slice(&old_only).unwrap();
        let first_signature = doubled["signatures"][0].clone();
        doubled["signatures"]
            .as_array_mut()
            .unwrap()
            .push(first_signature);
        let doubled = serde_json::to_vec(&doubled).unwrap();
        assert!(verify_next_root(&trusted, &doubled).is_err());
    }

    #[test]
    fn timestamp_and_snapshot_refuse_rollback_freeze_and_mixing() {
        let (root_key, index) = (key(), key());
        let root = root(1, &[&root_key], 1, &index);
        let mut files = BTreeMap::new();
        files.insert("index/1/a".to_owned(), Checksum::of(b"line\n"));
        let (snapshot, timestamp) = sign_snapshot_and_timestamp(
            Listing::Files(files.clone()),
            Seen::default(),
            in_days(1),
            &index,
        );
        let now = Timestamp::now();
        let checked = verify_timestamp(&root, &timestamp, Seen::default(), now).unwrap();
        assert_eq!(checked.version, 1);
        let verified = verify_snapshot(&root, &checked, &snapshot, now).unwrap();
        verified.check_file("index/1/a", Some(b"line\n")).unwrap();
        assert!(matches!(
            verified.check_file("index/1/a", Some(b"other\n")),
            Err(MetadataError::FileMismatch { .. })
        ));
        assert!(matches!(
            verified.check_file("index/1/b", Some(b"x")),
            Err(MetadataError::NotInSnapshot { .. })
        ));
        assert!(matches!(
            verified.check_file("index/1/a", None),
            Err(MetadataError::Missing { .. })
        ));
        verified.check_file("index/1/c", None).unwrap();

        // Rollback: seen a newer sequence number.
        let seen = Seen {
            timestamp: 2,
            snapshot: 1,
        };
        assert!(matches!(
            verify_timestamp(&root, &timestamp, seen, now),
            Err(MetadataError::Rollback {
                seen: 2,
                found: 1,
                ..
            })
        ));
        // Freeze: past its expiry.
        let later = in_days(2);
        assert!(matches!(
            verify_timestamp(&root, &timestamp, Seen::default(), later),
            Err(MetadataError::Expired { .. })
        ));
        // Signed by a root key instead of the index key.
        let (_, wrong) = sign_snapshot_and_timestamp(
            Listing::Files(files.clone()),
            Seen::default(),
            in_days(1),
            &root_key,
        );
        assert!(matches!(
            verify_timestamp(&root, &wrong, Seen::default(), now),
            Err(MetadataError::Signatures {
                role: RoleName::Index,
                ..
            })
        ));
        // A snapshot other than the one the timestamp names.
        let (other_snapshot, _) = sign_snapshot_and_timestamp(
            Listing::Files(files),
            Seen {
                timestamp: 1,
                snapshot: 1,
            },
            in_days(1),
            &index,
        );
        assert!(matches!(
            verify_snapshot(&root, &checked, &other_snapshot, now),
            Err(MetadataError::SnapshotMismatch { .. })
        ));
        // Re-indenting keeps the signature valid; editing breaks it.
        let value: serde_json::Value = serde_json::from_slice(&timestamp).unwrap();
        let compact = serde_json::to_vec(&value).unwrap();
        verify_timestamp(&root, &compact, Seen::default(), now).unwrap();
        let edited = String::from_utf8(compact)
            .unwrap()
            .replace("\"version\":1", "\"version\":9");
        assert!(verify_timestamp(&root, edited.as_bytes(), Seen::default(), now).is_err());
    }

    #[test]
    fn a_meta_tree_changed_in_place_is_the_tree_built_from_scratch() {
        let sum = |text: &str| Checksum::of(text.as_bytes());
        let mut files: BTreeMap<String, Checksum> = (0..300)
            .map(|index| {
                (
                    format!("index/sk/il/skill-{index}"),
                    sum(&index.to_string()),
                )
            })
            .collect();
        files.insert("search.json".into(), sum("search"));
        let built = MetaTree::build(&files);
        let store: BTreeMap<String, Vec<u8>> = built.written.iter().cloned().collect();
        // 301 paths over 256 nodes: about 177 nodes are expected.
        assert!(built.nodes.len() > 150, "{}", built.nodes.len());
        // Changed, added and removed files.
        let mut changes: BTreeMap<String, Option<Checksum>> = BTreeMap::new();
        changes.insert("index/sk/il/skill-7".into(), Some(sum("seven, again")));
        changes.insert("index/ne/w-/new-skill".into(), Some(sum("new")));
        changes.insert("index/sk/il/skill-8".into(), None);
        let mut reads = 0;
        let updated = MetaTree::update(&built.nodes, &changes, |sum| {
            reads += 1;
            store
                .get(&meta_path(sum))
                .cloned()
                .ok_or(MetadataError::Missing {
                    file: meta_path(sum),
                    snapshot: 0,
                })
        })
        .unwrap();
        assert!(
            reads <= 6,
            "only the changed paths' nodes and bins: {reads}"
        );
        assert!(updated.written.len() <= 6, "{}", updated.written.len());
        for (path, change) in &changes {
            match change {
                Some(new) => files.insert(path.clone(), *new),
                None => files.remove(path),
            };
        }
        assert_eq!(updated.nodes, MetaTree::build(&files).nodes);
        // A node or bin is named by its sha256: a changed one is refused.
        let (path, bytes) = &built.written[0];
        let named: Checksum = format!(
            "sha256:{}",
            &path["meta/".len()..path.len() - ".json".len()]
        )
        .parse()
        .unwrap();
        assert!(parse_meta::<SnapshotBin>(path, &named, "bin", bytes).is_ok());
        let mut changed = bytes.clone();
        changed[10] ^= 1;
        assert!(matches!(
            parse_meta::<SnapshotBin>(path, &named, "bin", &changed),
            Err(MetadataError::FileMismatch { .. })
        ));
    }
}
