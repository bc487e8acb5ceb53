//! minisign signatures, and the check every skill archive goes through.

use std::fmt;
use std::str::FromStr;

use blake2::{Blake2b512, Digest};
use ed25519_dalek::Signer as _;

use super::keys::{KeyId, PublicKey, SecretKey};
use super::signer::SignerKey;
use super::{ED, ED_PREHASHED, base64_decode, base64_encode};
use crate::checksum::Checksum;
use crate::skill::SkillName;

/// The version tag that starts every skillpkg trusted comment.
const COMMENT_TAG: &str = "skillpkg/1";

/// What a skillpkg signature vouches for: this archive's bytes are
/// `name@version`. Signed (in the trusted comment), so a signature cannot be
/// moved to another skill, version or archive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TrustedComment {
    pub name: SkillName,
    pub version: semver::Version,
    pub sha256: Checksum,
}

impl fmt::Display for TrustedComment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{COMMENT_TAG}\t{}@{}\t{}",
            self.name, self.version, self.sha256
        )
    }
}

impl FromStr for TrustedComment {
    type Err = SignatureError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = || SignatureError::ForeignComment(text.chars().take(120).collect());
        let mut fields = text.split('\t');
        if fields.next() != Some(COMMENT_TAG) {
            return Err(bad());
        }
        let (name, version) = fields
            .next()
            .and_then(|field| field.split_once('@'))
            .ok_or_else(bad)?;
        let sha256 = fields.next().ok_or_else(bad)?;
        if fields.next().is_some() {
            return Err(bad());
        }
        Ok(Self {
            name: name.parse().map_err(|_| bad())?,
            version: version.parse().map_err(|_| bad())?,
            sha256: sha256.parse().map_err(|_| bad())?,
        })
    }
}

/// A parsed `.minisig` file.
#[derive(Clone, PartialEq, Eq)]
pub struct Signature {
    untrusted_comment: String,
    prehashed: bool,
    key_id: KeyId,
    signature: [u8; 64],
    trusted_comment: String,
    global_signature: [u8; 64],
}

impl fmt::Debug for Signature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Signature(key {}, {:?})",
            self.key_id, self.trusted_comment
        )
    }
}

/// Why a signature does not hold. Callers add which skill and version.
#[derive(Debug, thiserror::Error)]
pub enum SignatureError {
    #[error("the signature file is not a minisign signature: {0}")]
    Malformed(&'static str),
    #[error(
        "the signature is in minisign's legacy format (`Ed`, not prehashed); skillpkg requires prehashed (`ED`) signatures: sign again with `skillpkg sign` or `minisign -S`"
    )]
    Legacy,
    #[error("the signature was made by key {found}, not by {expected}")]
    OtherKey { found: KeyId, expected: String },
    #[error(
        "the signature does not verify with the pinned signer {expected}: another key made it (the signature says key id {found}), or the archive or the signature was changed after signing"
    )]
    NotBySigner { found: KeyId, expected: SignerKey },
    #[error(
        "the signature does not match the archive: the archive was changed after it was signed, or the signature belongs to another file"
    )]
    Tampered,
    #[error("the trusted comment was changed after it was signed")]
    CommentTampered,
    #[error(
        "the trusted comment is not a skillpkg one (`skillpkg/1<TAB>name@version<TAB>sha256:...`): {0:?}"
    )]
    ForeignComment(String),
    #[error("the signature is for {signed}, not for {expected}")]
    WrongSubject { signed: String, expected: String },
}

impl Signature {
    /// Signs `data` (prehashed) with `trusted_comment`.
    pub fn sign(key: &SecretKey, data: &[u8], trusted_comment: &str) -> Self {
        let signature = key.signing.sign(&Blake2b512::digest(data)).to_bytes();
        let mut global = signature.to_vec();
        global.extend_from_slice(trusted_comment.as_bytes());
        Self {
            untrusted_comment: "signature from minisign secret key".into(),
            prehashed: true,
            key_id: key.id,
            signature,
            trusted_comment: trusted_comment.to_owned(),
            global_signature: key.signing.sign(&global).to_bytes(),
        }
    }

    /// Returns the id of the key that made the signature.
    pub fn key_id(&self) -> KeyId {
        self.key_id
    }

    /// Returns the trusted comment, as signed.
    pub fn trusted_comment(&self) -> &str {
        &self.trusted_comment
    }

    /// Returns the `.minisig` file, as minisign writes it.
    pub fn to_file(&self) -> String {
        let mut first = if self.prehashed {
            ED_PREHASHED.to_vec()
        } else {
            ED.to_vec()
        };
        first.extend_from_slice(&self.key_id.0);
        first.extend_from_slice(&self.signature);
        format!(
            "untrusted comment: {}\n{}\ntrusted comment: {}\n{}\n",
            self.untrusted_comment,
            base64_encode(&first),
            self.trusted_comment,
            base64_encode(&self.global_signature)
        )
    }

    /// Checks that `key` signed `data` and the trusted comment. Only the
    /// prehashed form is accepted.
    pub fn verify(&self, data: &[u8], key: &PublicKey) -> Result<(), SignatureError> {
        if self.key_id != key.id {
            return Err(SignatureError::OtherKey {
                found: self.key_id,
                expected: key.id.to_string(),
            });
        }
        if !self.prehashed {
            return Err(SignatureError::Legacy);
        }
        let signature = ed25519_dalek::Signature::from_bytes(&self.signature);
        key.key
            .verify_strict(&Blake2b512::digest(data), &signature)
            .map_err(|_| SignatureError::Tampered)?;
        let mut global = self.signature.to_vec();
        global.extend_from_slice(self.trusted_comment.as_bytes());
        let global_signature = ed25519_dalek::Signature::from_bytes(&self.global_signature);
        key.key
            .verify_strict(&global, &global_signature)
            .map_err(|_| SignatureError::CommentTampered)
    }
}

impl FromStr for Signature {
    type Err = SignatureError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let mut lines = text.lines();
        let untrusted = lines
            .next()
            .and_then(|line| {
                line.strip_prefix("untrusted comment: ")
                    .or_else(|| line.strip_prefix("untrusted comment:"))
            })
            .ok_or(SignatureError::Malformed(
                "the first line is not an `untrusted comment:`",
            ))?;
        let first = lines
            .next()
            .and_then(base64_decode)
            .ok_or(SignatureError::Malformed("the second line is not base64"))?;
        if first.len() != 74 {
            return Err(SignatureError::Malformed(
                "the signature line has the wrong length",
            ));
        }
        let prehashed = match [first[0], first[1]] {
            tag if tag == ED_PREHASHED => true,
            tag if tag == ED => false,
            _ => {
                return Err(SignatureError::Malformed(
                    "the signature algorithm is neither `ED` nor `Ed`",
                ));
            }
        };
        let trusted = lines
            .next()
            .and_then(|line| line.strip_prefix("trusted comment: "))
            .ok_or(SignatureError::Malformed(
                "the third line is not a `trusted comment:`",
            ))?;
        let global = lines
            .next()
            .and_then(base64_decode)
            .filter(|bytes| bytes.len() == 64)
            .ok_or(SignatureError::Malformed(
                "the fourth line is not a base64 signature",
            ))?;
        Ok(Self {
            untrusted_comment: untrusted.to_owned(),
            prehashed,
            key_id: KeyId(first[2..10].try_into().expect("8 bytes")),
            signature: first[10..].try_into().expect("64 bytes"),
            trusted_comment: trusted.to_owned(),
            global_signature: global.try_into().expect("64 bytes"),
        })
    }
}

/// A signature that holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verified {
    /// The id of the key that signed it, as the signature names it.
    pub key_id: KeyId,
    /// The key that signed it: what trust is decided by.
    pub key: PublicKey,
    /// What it vouches for.
    pub comment: TrustedComment,
}

/// Checks a skill archive against its signature, before anything unpacks it:
/// the signature must be one of `keys`' (prehashed), over these bytes, with a
/// trusted comment naming exactly `name@version` and these bytes' sha256.
///
/// Every key of `keys` that carries the signature's id is tried: an id is
/// only a hint, and a hostile keys file may list two keys under one id.
/// [`Verified::key`] is the key that verified.
pub fn verify_skill(
    tarball: &[u8],
    signature: &str,
    keys: &[PublicKey],
    name: &SkillName,
    version: &semver::Version,
) -> Result<Verified, SignatureError> {
    let signature: Signature = signature.parse()?;
    let mut candidates = keys
        .iter()
        .filter(|key| key.id == signature.key_id)
        .peekable();
    if candidates.peek().is_none() {
        return Err(SignatureError::OtherKey {
            found: signature.key_id,
            expected: keys
                .iter()
                .map(|key| key.id.to_string())
                .collect::<Vec<_>>()
                .join(" or "),
        });
    }
    let mut failure = None;
    for key in candidates {
        match signature.verify(tarball, key) {
            Ok(()) => return check_subject(&signature, tarball, key, name, version),
            Err(error) => {
                failure.get_or_insert(error);
            }
        }
    }
    Err(failure.expect("one key was tried"))
}

/// Checks a skill archive against its signature as [`verify_skill`] does,
/// with exactly one key: the pinned `signer`, whatever id the signature
/// carries (the id is a name; the key is the signer).
pub fn verify_skill_by(
    tarball: &[u8],
    signature: &str,
    signer: &SignerKey,
    name: &SkillName,
    version: &semver::Version,
) -> Result<Verified, SignatureError> {
    let signature: Signature = signature.parse()?;
    let key = signer.with_id(signature.key_id);
    signature
        .verify(tarball, &key)
        .map_err(|error| match error {
            // The only key tried is the pinned one: a signature that does not
            // verify with it was made by another key.
            SignatureError::Tampered => SignatureError::NotBySigner {
                found: signature.key_id,
                expected: *signer,
            },
            other => other,
        })?;
    check_subject(&signature, tarball, &key, name, version)
}

/// Checks that the verified `signature`'s trusted comment names exactly
/// `name@version` and `tarball`'s sha256.
fn check_subject(
    signature: &Signature,
    tarball: &[u8],
    key: &PublicKey,
    name: &SkillName,
    version: &semver::Version,
) -> Result<Verified, SignatureError> {
    let comment: TrustedComment = signature.trusted_comment.parse()?;
    let actual = Checksum::of(tarball);
    if &comment.name != name || &comment.version != version || comment.sha256 != actual {
        return Err(SignatureError::WrongSubject {
            signed: format!("{}@{} ({})", comment.name, comment.version, comment.sha256),
            expected: format!("{name}@{version} ({actual})"),
        });
    }
    Ok(Verified {
        key_id: signature.key_id,
        key: key.clone(),
        comment,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn comment_for(name: &str, version: &str, data: &[u8]) -> String {
        TrustedComment {
            name: name.parse().unwrap(),
            version: version.parse().unwrap(),
            sha256: Checksum::of(data),
        }
        .to_string()
    }

    #[test]
    fn a_signature_round_trips_and_verifies() {
        let key = SecretKey::generate().unwrap();
        let data = b"archive bytes";
        let signature = Signature::sign(&key, data, &comment_for("pdf", "1.0.0", data));
        let text = signature.to_file();
        assert!(
            text.starts_with("untrusted comment: signature from minisign secret key\nRU"),
            "{text}"
        );
        let parsed: Signature = text.parse().unwrap();
        assert_eq!(parsed, signature);
        let verified = verify_skill(
            data,
            &text,
            &[key.public()],
            &"pdf".parse().unwrap(),
            &"1.0.0".parse().unwrap(),
        )
        .unwrap();
        assert_eq!(verified.key_id, key.id());
    }

    #[test]
    fn a_key_under_another_keys_id_is_told_apart_by_its_key() {
        let first = SecretKey::generate().unwrap();
        let other = SecretKey::generate().unwrap();
        // The attacker's key, carrying the first publisher's id.
        let forged = other.with_id(first.id());
        let data = b"archive bytes";
        let name: SkillName = "pdf".parse().unwrap();
        let version: semver::Version = "1.0.0".parse().unwrap();
        let by_forged =
            Signature::sign(&forged, data, &comment_for("pdf", "1.0.0", data)).to_file();
        // Both keys under one id: the one that verifies is the one returned.
        let verified = verify_skill(
            data,
            &by_forged,
            &[first.public(), forged.public()],
            &name,
            &version,
        )
        .unwrap();
        assert_eq!(verified.key, forged.public());
        assert_eq!(verified.key_id, first.id());
        // Pinned by key, the forged signature is refused whatever its id.
        let pinned = SignerKey::of(&first.public());
        assert!(matches!(
            verify_skill_by(data, &by_forged, &pinned, &name, &version),
            Err(SignatureError::NotBySigner { .. })
        ));
        let by_first = Signature::sign(&first, data, &comment_for("pdf", "1.0.0", data)).to_file();
        let verified = verify_skill_by(data, &by_first, &pinned, &name, &version).unwrap();
        assert!(pinned.is(&verified.key));
        assert!(matches!(
            verify_skill_by(b"other bytes", &by_first, &pinned, &name, &version),
            Err(SignatureError::NotBySigner { .. })
        ));
    }

    #[test]
    fn every_way_of_lying_is_caught() {
        let key = SecretKey::generate().unwrap();
        let other = SecretKey::generate().unwrap();
        let data = b"archive bytes";
        let name: SkillName = "pdf".parse().unwrap();
        let version: semver::Version = "1.0.0".parse().unwrap();
        let good = Signature::sign(&key, data, &comment_for("pdf", "1.0.0", data)).to_file();
        let check =
            |data: &[u8], text: &str| verify_skill(data, text, &[key.public()], &name, &version);

        assert!(matches!(
            check(b"archive bytez", &good),
            Err(SignatureError::Tampered)
        ));
        let by_other = Signature::sign(&other, data, &comment_for("pdf", "1.0.0", data)).to_file();
        assert!(matches!(
            check(data, &by_other),
            Err(SignatureError::OtherKey { .. })
        ));
        for (name, version, bytes) in [
            ("csv", "1.0.0", &data[..]),
            ("pdf", "1.0.1", &data[..]),
            ("pdf", "1.0.0", &b"other"[..]),
        ] {
            let moved = Signature::sign(&key, data, &comment_for(name, version, bytes)).to_file();
            assert!(
                matches!(
                    check(data, &moved),
                    Err(SignatureError::WrongSubject { .. })
                ),
                "{name} {version}"
            );
        }
        let tampered = good.replace("skillpkg/1\tpdf@1.0.0", "skillpkg/1\tpdf@9.0.0");
        assert!(matches!(
            check(data, &tampered),
            Err(SignatureError::CommentTampered)
        ));
        let mut legacy = Signature::sign(&key, data, &comment_for("pdf", "1.0.0", data));
        legacy.prehashed = false;
        assert!(matches!(
            check(data, &legacy.to_file()),
            Err(SignatureError::Legacy)
        ));
        assert!(matches!(
            check(data, &good[..good.len() / 2]),
            Err(SignatureError::Malformed(_))
        ));
        assert!(matches!(
            check(data, "garbage"),
            Err(SignatureError::Malformed(_))
        ));
        let foreign = Signature::sign(&key, data, "timestamp:1\tfile:x").to_file();
        assert!(matches!(
            check(data, &foreign),
            Err(SignatureError::ForeignComment(_))
        ));
    }
}
