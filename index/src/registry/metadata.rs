//! Signed registry metadata (TUF-style; normative text in
//! `docs/index-format.md#signed-metadata`), so that a mirror or a CDN cannot
//! lie about what the registry published.
//!
//! ```text
//! 1.root.json 2.root.json ...   every root, signed by a threshold of the keys
//!                               of the root before it and of its own
//! root.json                     the newest root (a copy)
//! snapshot.json                 the sha256 of every index file, keys file and
//!                               file of the search index; signed by the index key
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

/// `snapshot.json`: the sha256 of every file [`in_snapshot`] lists.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Snapshot {
    #[serde(rename = "type")]
    pub kind: String,
    pub version: u64,
    #[serde(with = "super::rfc3339_seconds")]
    pub expires: Timestamp,
    pub files: BTreeMap<String, Checksum>,
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
    check_expiry(SNAPSHOT_PATH, snapshot.expires, now)?;
    Ok(snapshot)
}

impl Snapshot {
    /// Checks a file [`in_snapshot`] lists against the snapshot: `bytes` is
    /// `None` when the file is missing (a 404).
    pub fn check_file(&self, path: &str, bytes: Option<&[u8]>) -> Result<(), MetadataError> {
        match (self.files.get(path), bytes) {
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

/// The snapshot and timestamp that describe `files` (path → bytes of every
/// file [`in_snapshot`] lists), signed by `index_key`, with the versions
/// after `previous`.
pub fn sign_snapshot_and_timestamp(
    files: BTreeMap<String, Checksum>,
    previous: Seen,
    expires: Timestamp,
    index_key: &SecretKey,
) -> (Vec<u8>, Vec<u8>) {
    let expires = super::whole_seconds(expires);
    let snapshot = sign(
        &Snapshot {
            kind: "snapshot".into(),
            version: previous.snapshot + 1,
            expires,
            files,
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
        let (snapshot, timestamp) =
            sign_snapshot_and_timestamp(files.clone(), Seen::default(), in_days(1), &index);
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
        let (_, wrong) =
            sign_snapshot_and_timestamp(files.clone(), Seen::default(), in_days(1), &root_key);
        assert!(matches!(
            verify_timestamp(&root, &wrong, Seen::default(), now),
            Err(MetadataError::Signatures {
                role: RoleName::Index,
                ..
            })
        ));
        // A snapshot other than the one the timestamp names.
        let (other_snapshot, _) = sign_snapshot_and_timestamp(
            files,
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
}
