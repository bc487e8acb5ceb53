//! The one path from a registry or the cache to a checked archive.
//!
//! [`fetch_verified`] reads an archive from the content-addressed cache or
//! downloads it (under the registry's size cap, hashed while it streams),
//! and hands it out only after:
//!
//! 1. its sha256 is the one expected (from skills.lock, or an index line);
//! 2. when a signer is pinned: the registry's signature verifies over the
//!    bytes (prehashed Ed25519) and its trusted comment names exactly this
//!    name, version and sha256. A signer pinned by its key (skills.lock)
//!    is the one key tried: the registry's keys file is not read at all,
//!    so nothing a registry serves can change who is trusted. A signer
//!    known only by id (an index line's, or a lock written before keys
//!    were pinned) is looked up in the skill's keys file (or the caller's
//!    keys, when it already holds them), every key with that id tried;
//!    the key that verified is handed out, for the caller to pin;
//! 3. the verified archive is put into the cache with its signature, so a
//!    later read is verified the same way, with no network.
//!
//! The result is a [`VerifiedArchive`], which only this module can build:
//! code that holds one knows every check above passed. Install, vendor,
//! mirror, `verify` and the runtime all come through here; nothing else
//! reads an archive from the network or the cache.

use semver::Version;
use skillpkg_index::archive::{self, Limits, UnpackError, UnpackedSkill};
use skillpkg_index::checksum::Checksum;
use skillpkg_index::registry::{IndexRecord, KeysFile, keys_path, provenance_path, signature_path};
use skillpkg_index::signing::{
    Provenance, PublicKey, SignerPin, verify_provenance, verify_skill, verify_skill_by,
};
use skillpkg_index::skill::SkillName;

use super::cache::{Cache, SignatureRecord};
use crate::client::registry::{Registry, RegistryError};
use crate::error::UserError;

/// What an archive must be.
#[derive(Clone, Debug)]
pub struct Expected<'a> {
    pub name: &'a SkillName,
    pub version: &'a Version,
    pub checksum: Checksum,
    /// The key that must have signed it (or, for an index line or a lock
    /// written before keys were pinned, its id); `None` for a version the
    /// caller accepts unsigned (its policy decided that already).
    pub signer: Option<SignerPin>,
    /// What pinned the checksum and signer, for messages: `skills.lock`,
    /// `its index line`.
    pub pinned_by: &'a str,
}

impl Expected<'_> {
    fn label(&self) -> String {
        format!("{}@{}", self.name, self.version)
    }
}

/// Where an archive may come from.
#[derive(Clone, Copy, Debug, Default)]
pub struct Source<'a> {
    /// The cache to read first and to fill; `None` bypasses it (a mirror
    /// copies archives it has no reason to keep twice).
    pub cache: Option<&'a Cache>,
    /// The registry to download from; `None` when only the cache may be
    /// used (`--offline`).
    pub registry: Option<&'a Registry>,
    /// The skill's keys when the caller already read them (a mirror reads
    /// each keys file once); `None` reads the keys file from the registry.
    pub keys: Option<&'a [PublicKey]>,
    /// Why there is no registry, for the message when one is needed.
    pub offline: bool,
}

/// An archive whose checksum, and signature when one was pinned, were
/// verified by [`fetch_verified`]. It cannot be built anywhere else.
#[derive(Debug)]
pub struct VerifiedArchive {
    name: SkillName,
    version: Version,
    checksum: Checksum,
    bytes: Vec<u8>,
    signature: Option<Signed>,
}

/// The signature an archive was verified with.
#[derive(Debug)]
struct Signed {
    text: String,
    key: PublicKey,
}

impl VerifiedArchive {
    /// An archive skillpkg packed itself from files it read (a skill from a
    /// folder or a git repository): there is no publisher's signature or
    /// checksum to check; the lock pins its tree hash, which the install
    /// checks when it unpacks it.
    pub fn packed_here(packed: archive::PackedSkill) -> Self {
        VerifiedArchive {
            name: packed.name,
            version: packed.version,
            checksum: Checksum::from_digest(packed.sha256),
            bytes: packed.tarball,
            signature: None,
        }
    }

    pub fn name(&self) -> &SkillName {
        &self.name
    }

    pub fn version(&self) -> &Version {
        &self.version
    }

    pub fn checksum(&self) -> &Checksum {
        &self.checksum
    }

    /// The archive's bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The `.minisig` text it was verified with, when it is signed.
    pub fn signature(&self) -> Option<&str> {
        self.signature.as_ref().map(|signed| signed.text.as_str())
    }

    /// The key that signed it, when it is signed.
    pub fn signer(&self) -> Option<&PublicKey> {
        self.signature.as_ref().map(|signed| &signed.key)
    }

    /// Unpacks it with the hardened unpacker into `destination` (which
    /// must not exist).
    pub fn unpack(&self, destination: &std::path::Path) -> Result<UnpackedSkill, UnpackError> {
        archive::unpack(self.bytes.as_slice(), destination, &Limits::default())
    }

    /// Unpacks it with the hardened unpacker into `dir`, an empty staging
    /// folder the caller made and renames into place.
    pub fn unpack_into_empty(&self, dir: &std::path::Path) -> Result<UnpackedSkill, UnpackError> {
        archive::unpack_into_empty(self.bytes.as_slice(), dir, &Limits::default())
    }
}

/// Returns the archive `expected` describes, from the cache (verified
/// again) or downloaded from the registry and verified, then cached.
pub async fn fetch_verified(
    source: Source<'_>,
    expected: &Expected<'_>,
) -> anyhow::Result<VerifiedArchive> {
    if let Some(cache) = source.cache
        && let Some(archive) = from_cache(cache, expected)
    {
        tracing::info!("{}: from the cache, checked", expected.label());
        return Ok(archive);
    }
    let label = expected.label();
    tracing::info!("{label}: not in the cache, downloading");
    let Some(registry) = source.registry else {
        let error = if source.offline {
            UserError::new(format!(
                "{label} is not in the cache, and --offline forbids downloading it"
            ))
            .with_hint("run once without --offline")
        } else {
            UserError::new(format!(
                "{label} is not in the cache, and its registry is not open"
            ))
            .with_hint("run the command again")
        };
        return Err(error.into());
    };
    let archive = download(registry, source.keys, expected).await?;
    if let Some(cache) = source.cache {
        let record = archive.signature.as_ref().map(|signed| SignatureRecord {
            signature: signed.text.clone(),
            key: signed.key.clone(),
        });
        cache.write(&archive.checksum, &archive.bytes, record.as_ref())?;
    }
    Ok(archive)
}

/// Returns the archive `expected` describes from the cache alone, verified
/// again (signature included), or `None` when the cache has no good copy.
pub fn cached(cache: &Cache, expected: &Expected<'_>) -> Option<VerifiedArchive> {
    from_cache(cache, expected)
}

/// Reads and re-verifies a cache entry; a damaged or incomplete one is
/// dropped (and fetched again by the caller).
fn from_cache(cache: &Cache, expected: &Expected<'_>) -> Option<VerifiedArchive> {
    let (bytes, record) = cache.read(&expected.checksum)?;
    let checked = (|| {
        if Checksum::of(&bytes) != expected.checksum {
            return None;
        }
        let signature = match expected.signer {
            None => None,
            Some(signer) => {
                let record = record?;
                let signed = check_signed(
                    &bytes,
                    record.signature,
                    std::slice::from_ref(&record.key),
                    expected,
                    &signer,
                )
                .ok()?;
                Some(signed)
            }
        };
        Some(signature)
    })();
    match checked {
        Some(signature) => Some(VerifiedArchive {
            name: expected.name.clone(),
            version: expected.version.clone(),
            checksum: expected.checksum,
            bytes,
            signature,
        }),
        None => {
            cache.forget(&expected.checksum);
            None
        }
    }
}

async fn download(
    registry: &Registry,
    keys: Option<&[PublicKey]>,
    expected: &Expected<'_>,
) -> anyhow::Result<VerifiedArchive> {
    use anyhow::Context as _;
    let label = expected.label();
    let url = registry
        .config()
        .archive_url(expected.name, expected.version);
    let (bytes, actual) = registry
        .download(&url)
        .await
        .with_context(|| format!("cannot download {label}"))?
        .ok_or_else(|| {
            UserError::new(format!(
                "{label}: the registry {} has no archive for it",
                registry.url()
            ))
        })?;
    if actual != expected.checksum {
        return Err(UserError::new(format!(
            "{label}: the archive from the registry {} is {actual}, but {} says {}: it was changed or cut short",
            registry.url(),
            expected.pinned_by,
            expected.checksum
        ))
        .with_hint("try again; if it persists, the registry or a proxy serves wrong bytes")
        .into());
    }
    let signature = match expected.signer {
        None => None,
        Some(signer) => {
            let text = registry
                .file(&signature_path(expected.name, expected.version))
                .await?
                .ok_or_else(|| {
                    UserError::new(format!(
                        "{label}: the registry serves no signature for it, but {} pins key {signer}",
                        expected.pinned_by
                    ))
                })?;
            let text = String::from_utf8_lossy(&text).into_owned();
            let read;
            let keys = match (keys, signer) {
                // A pinned key needs no keys file: it is the one key tried.
                (_, SignerPin::Key(_)) => &[][..],
                (Some(keys), SignerPin::Id(_)) => keys,
                (None, SignerPin::Id(_)) => {
                    read = registry_keys(registry, expected.name).await?;
                    read.as_slice()
                }
            };
            Some(check_signed(&bytes, text, keys, expected, &signer)?)
        }
    };
    Ok(VerifiedArchive {
        name: expected.name.clone(),
        version: expected.version.clone(),
        checksum: actual,
        bytes,
        signature,
    })
}

/// Reads the keys a registry lists for `name` (none when it serves no keys
/// file), through the one keys-file parser.
pub async fn registry_keys(
    registry: &Registry,
    name: &SkillName,
) -> anyhow::Result<Vec<PublicKey>> {
    match registry.file(&keys_path(name)).await? {
        Some(bytes) => Ok(KeysFile::parse(&bytes)
            .map_err(|error| {
                UserError::new(format!(
                    "the keys file of `{name}` in the registry {} is not valid",
                    registry.url()
                ))
                .with_source(error)
            })?
            .public_keys()),
        None => Ok(Vec::new()),
    }
}

/// Fetches and verifies the provenance of `record` from `registry`: `None`
/// when it has none, the reason when it does not verify. A registry that
/// cannot be read counts as having none: for showing (`info`, `verify`).
pub async fn registry_provenance(
    registry: &Registry,
    record: &IndexRecord,
) -> Option<Result<Provenance, String>> {
    check_provenance(registry, record).await.ok().flatten()
}

/// Fetches and verifies the provenance of `record` from `registry`:
/// `Ok(None)` when the registry has none (an unsigned version never has
/// any: provenance is signed by the archive's signer), `Ok(Some(Err))`
/// with the reason when it does not verify, and an error when the registry
/// cannot be read, which a decision must not take for "none".
pub async fn check_provenance(
    registry: &Registry,
    record: &IndexRecord,
) -> Result<Option<Result<Provenance, String>>, RegistryError> {
    let Some(text) = registry
        .file(&provenance_path(&record.name, &record.vers))
        .await?
    else {
        return Ok(None);
    };
    let Some(signer) = record.signer_id() else {
        return Ok(Some(Err("the version is not signed".to_owned())));
    };
    let keys = match registry_keys(registry, &record.name).await {
        Ok(keys) => keys,
        Err(_) => return Ok(Some(Err("the registry's key file is not valid".to_owned()))),
    };
    if keys.is_empty() {
        return Ok(Some(
            Err("the registry serves no publisher keys".to_owned()),
        ));
    }
    // Every key with the signer's id is tried: a keys file may list two.
    let text = String::from_utf8_lossy(&text);
    let mut failure = None;
    for key in keys.iter().filter(|key| key.id() == signer) {
        match verify_provenance(&text, key, &record.cksum) {
            Ok(provenance) => return Ok(Some(Ok(provenance))),
            Err(error) => {
                failure.get_or_insert(error.to_string());
            }
        }
    }
    Ok(Some(Err(failure.unwrap_or_else(|| {
        "the signer's key is not among the registry's keys".to_owned()
    }))))
}

/// The signature check every signed archive goes through (also a local
/// file `skillpkg verify` is given with `--key`): the signature verifies
/// over `bytes` with one of `keys`, its trusted comment names exactly the
/// expected name, version and sha256, and the key is the expected signer.
/// Returns the key that signed.
pub fn check_signature(
    bytes: &[u8],
    text: String,
    keys: &[PublicKey],
    expected: &Expected<'_>,
) -> anyhow::Result<PublicKey> {
    let signer = expected
        .signer
        .expect("a signature is checked against an expected signer");
    Ok(check_signed(bytes, text, keys, expected, &signer)?.key)
}

/// Verifies `text` over `bytes` as made by `signer`: with exactly the
/// pinned key, or, for a pin by id, with the keys of `keys` that carry it.
fn check_signed(
    bytes: &[u8],
    text: String,
    keys: &[PublicKey],
    expected: &Expected<'_>,
    signer: &SignerPin,
) -> anyhow::Result<Signed> {
    let label = expected.label();
    let failed = |error| UserError::new(format!("{label} failed verification")).with_source(error);
    let verified = match signer {
        SignerPin::Key(key) => {
            verify_skill_by(bytes, &text, key, expected.name, expected.version).map_err(failed)?
        }
        SignerPin::Id(id) => {
            let verified = verify_skill(bytes, &text, keys, expected.name, expected.version)
                .map_err(failed)?;
            if verified.key_id != *id {
                return Err(UserError::new(format!(
                    "{label} is signed by key {}, but {} pins key {id}",
                    verified.key_id, expected.pinned_by
                ))
                .into());
            }
            verified
        }
    };
    Ok(Signed {
        text,
        key: verified.key,
    })
}

#[cfg(test)]
mod tests {
    use skillpkg_index::signing::{SecretKey, Signature, SignerKey, TrustedComment};

    use super::*;

    const NAME: &str = "pdf";

    struct Entry {
        name: SkillName,
        version: Version,
        bytes: Vec<u8>,
        checksum: Checksum,
    }

    fn entry(bytes: &[u8]) -> Entry {
        Entry {
            name: NAME.parse().unwrap(),
            version: "1.0.0".parse().unwrap(),
            bytes: bytes.to_vec(),
            checksum: Checksum::of(bytes),
        }
    }

    fn signed(key: &SecretKey, entry: &Entry) -> SignatureRecord {
        let comment = TrustedComment {
            name: entry.name.clone(),
            version: entry.version.clone(),
            sha256: entry.checksum,
        };
        SignatureRecord {
            signature: Signature::sign(key, &entry.bytes, &comment.to_string()).to_file(),
            key: key.public(),
        }
    }

    fn expected(entry: &Entry, signer: Option<SignerPin>) -> Expected<'_> {
        Expected {
            name: &entry.name,
            version: &entry.version,
            checksum: entry.checksum,
            signer,
            pinned_by: "skills.lock",
        }
    }

    #[test]
    fn a_cached_signed_archive_is_verified_again_signature_included() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::at(dir.path());
        let key = SecretKey::generate().unwrap();
        let entry = entry(b"an archive");
        let record = signed(&key, &entry);
        cache
            .write(&entry.checksum, &entry.bytes, Some(&record))
            .unwrap();
        let signer = SignerPin::Key(SignerKey::of(&key.public()));
        assert!(cache.has(&entry.checksum));

        let archive = cached(&cache, &expected(&entry, Some(signer))).expect("a good entry");
        assert_eq!(archive.bytes(), entry.bytes);
        assert_eq!(archive.signer(), Some(&key.public()));
        assert_eq!(archive.signature(), Some(record.signature.as_str()));

        // Pinned to another key: the entry is not handed out, and dropped.
        let other = SignerPin::Key(SignerKey::of(&SecretKey::generate().unwrap().public()));
        assert!(cached(&cache, &expected(&entry, Some(other))).is_none());
        assert!(!cache.has(&entry.checksum));
    }

    #[test]
    fn a_cached_archive_signed_by_a_key_under_the_pinned_keys_id_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::at(dir.path());
        let publisher = SecretKey::generate().unwrap();
        let entry = entry(b"an archive");
        // The attacker's key carries the publisher's id.
        let forged_key = forged_id(&publisher);
        let forged = signed(&forged_key, &entry);
        cache
            .write(&entry.checksum, &entry.bytes, Some(&forged))
            .unwrap();
        // A legacy pin by id cannot tell the two apart...
        let by_id = SignerPin::Id(publisher.id());
        assert!(cached(&cache, &expected(&entry, Some(by_id))).is_some());
        // ...a pin by key can.
        let by_key = SignerPin::Key(SignerKey::of(&publisher.public()));
        assert!(cached(&cache, &expected(&entry, Some(by_key))).is_none());
    }

    /// Returns a new key that carries `of`'s key id.
    fn forged_id(of: &SecretKey) -> SecretKey {
        SecretKey::generate().unwrap().with_id(of.id())
    }

    #[test]
    fn a_swapped_signature_record_or_changed_bytes_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::at(dir.path());
        let publisher = SecretKey::generate().unwrap();
        let attacker = SecretKey::generate().unwrap();
        let entry = entry(b"an archive");
        let signer = SignerPin::Key(SignerKey::of(&publisher.public()));

        // The attacker's own valid signature over the same bytes, with the
        // attacker's key: the pinned id does not match.
        let forged = signed(&attacker, &entry);
        cache
            .write(&entry.checksum, &entry.bytes, Some(&forged))
            .unwrap();
        assert!(cached(&cache, &expected(&entry, Some(signer))).is_none());

        // The publisher's signature with the attacker's key put beside it:
        // a pin by id checks the signature with the key beside it, which
        // fails; a pin by key never reads the key beside it.
        let mut mixed = signed(&publisher, &entry);
        mixed.key = attacker.public();
        cache
            .write(&entry.checksum, &entry.bytes, Some(&mixed))
            .unwrap();
        let by_id = SignerPin::Id(publisher.id());
        assert!(cached(&cache, &expected(&entry, Some(by_id))).is_none());
        cache
            .write(&entry.checksum, &entry.bytes, Some(&mixed))
            .unwrap();
        let archive =
            cached(&cache, &expected(&entry, Some(signer))).expect("the publisher's signature");
        assert_eq!(
            archive.signer().map(SignerKey::of),
            Some(SignerKey::of(&publisher.public()))
        );

        // Bytes that no longer hash to their name.
        let good = signed(&publisher, &entry);
        cache
            .write(&entry.checksum, b"other bytes", Some(&good))
            .unwrap();
        assert!(cached(&cache, &expected(&entry, Some(signer))).is_none());
        assert!(cached(&cache, &expected(&entry, None)).is_none());

        // A signed entry with no signature record is not good enough.
        cache.write(&entry.checksum, &entry.bytes, None).unwrap();
        assert!(cached(&cache, &expected(&entry, Some(signer))).is_none());
        // Unsigned (the caller's policy allows it): the checksum is enough.
        cache.write(&entry.checksum, &entry.bytes, None).unwrap();
        let archive = cached(&cache, &expected(&entry, None)).expect("an unsigned entry");
        assert!(archive.signer().is_none());
    }

    #[tokio::test]
    async fn with_no_registry_and_no_cache_entry_the_error_says_why() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::at(dir.path());
        let entry = entry(b"an archive");
        let source = Source {
            cache: Some(&cache),
            offline: true,
            ..Source::default()
        };
        let error = fetch_verified(source, &expected(&entry, None))
            .await
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "pdf@1.0.0 is not in the cache, and --offline forbids downloading it"
        );
    }
}
