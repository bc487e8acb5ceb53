//! Who signed: a signer is its Ed25519 public key, never its key id.
//!
//! A minisign key id is 8 bytes that whoever makes the key chooses: anyone
//! can make a key that carries another publisher's id. So every decision
//! of trust (the pin in skills.lock, `allowed-signers`, the registry's
//! keys) compares the 32 bytes of the public key, written
//!
//! ```text
//! ed25519:<64 lowercase hex digits>      SignerKey
//! ```
//!
//! The id stays what it is in minisign's formats: a name to show and a hint
//! to find a key by. [`SignerPin`] also reads the bare 16-hex-digit ids that
//! locks written before keys were pinned hold, so that such a lock can be
//! read, verified by id one last time and upgraded.

use std::fmt;
use std::str::FromStr;

use ed25519_dalek::VerifyingKey;

use super::keys::{KeyError, KeyId, PublicKey};

/// What a signer key is written with.
pub const SIGNER_KEY_PREFIX: &str = "ed25519:";

/// A signer: the 32 bytes of an Ed25519 public key, always a valid point.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SignerKey([u8; 32]);

impl SignerKey {
    /// Returns the signer key of `key`.
    pub fn of(key: &PublicKey) -> Self {
        Self(key.key.to_bytes())
    }

    /// Returns the key's 32 bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// Returns the minisign public key made of this key and `id` (the id
    /// is only a name: a signature by this key verifies whatever id it
    /// carries).
    pub fn with_id(&self, id: KeyId) -> PublicKey {
        PublicKey {
            id,
            key: VerifyingKey::from_bytes(&self.0).expect("a signer key is a valid point"),
        }
    }

    /// Returns true if and only if `key` is this key, whatever its id.
    pub fn is(&self, key: &PublicKey) -> bool {
        self.0 == key.key.to_bytes()
    }
}

impl fmt::Display for SignerKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(SIGNER_KEY_PREFIX)?;
        for byte in self.0 {
            write!(f, "{byte:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for SignerKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SignerKey({self})")
    }
}

/// Why a text is not a signer key.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SignerKeyError {
    #[error(
        "`{0}` is a key id, which anyone can give their own key: write the signer's public key instead (`ed25519:...` as `skillpkg key show` prints it, or the key's `RW...` line)"
    )]
    KeyId(String),
    #[error(
        "`{0}` is not a signer key: write `ed25519:` and 64 hex digits, as `skillpkg key show` prints it, or a minisign public key (`RW...`)"
    )]
    Syntax(String),
    #[error("`{0}` is not a valid Ed25519 public key")]
    NotAPoint(String),
}

impl FromStr for SignerKey {
    type Err = SignerKeyError;

    /// Reads `ed25519:<64 hex digits>` (either case), or a minisign public
    /// key (its file or its `RW...` line), whose key it takes.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let shown = || text.chars().take(120).collect::<String>();
        if let Some(hex) = text.strip_prefix(SIGNER_KEY_PREFIX) {
            let bytes = decode_hex(hex).ok_or_else(|| SignerKeyError::Syntax(shown()))?;
            return match VerifyingKey::from_bytes(&bytes) {
                Ok(key) if !key.is_weak() => Ok(Self(bytes)),
                _ => Err(SignerKeyError::NotAPoint(shown())),
            };
        }
        if text.parse::<KeyId>().is_ok() {
            return Err(SignerKeyError::KeyId(shown()));
        }
        match text.parse::<PublicKey>() {
            Ok(key) if key.key.is_weak() => Err(SignerKeyError::NotAPoint(shown())),
            Ok(key) => Ok(Self::of(&key)),
            Err(KeyError::Malformed(why)) if why.contains("Ed25519 point") => {
                Err(SignerKeyError::NotAPoint(shown()))
            }
            Err(_) => Err(SignerKeyError::Syntax(shown())),
        }
    }
}

/// Reads exactly 64 hex digits.
fn decode_hex(text: &str) -> Option<[u8; 32]> {
    if text.len() != 64 || !text.bytes().all(|byte| byte.is_ascii_hexdigit()) {
        return None;
    }
    let mut bytes = [0_u8; 32];
    for (index, byte) in bytes.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&text[2 * index..2 * index + 2], 16).ok()?;
    }
    Some(bytes)
}

impl serde::Serialize for SignerKey {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for SignerKey {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

/// What a lock pins a skill's signer by: its key, or (in a lock written
/// before keys were pinned) the key id it had then.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub enum SignerPin {
    Key(SignerKey),
    /// A legacy pin: read, honoured one last time by id, and replaced by
    /// the key at the lock's next write.
    Id(KeyId),
}

impl SignerPin {
    /// Returns true if and only if `key` satisfies the pin: it is the
    /// pinned key, or (a legacy pin) it carries the pinned id.
    pub fn admits(&self, key: &PublicKey) -> bool {
        match self {
            SignerPin::Key(pinned) => pinned.is(key),
            SignerPin::Id(id) => *id == key.id(),
        }
    }

    /// Returns the pinned key, or `None` for a legacy pin by id.
    pub fn key(&self) -> Option<&SignerKey> {
        match self {
            SignerPin::Key(key) => Some(key),
            SignerPin::Id(_) => None,
        }
    }
}

impl fmt::Display for SignerPin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SignerPin::Key(key) => key.fmt(f),
            SignerPin::Id(id) => id.fmt(f),
        }
    }
}

impl fmt::Debug for SignerPin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SignerPin({self})")
    }
}

/// Why a text is not a signer pin.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error(
    "`{0}` is not a signer: skillpkg writes `ed25519:` and 64 hex digits (older versions wrote a 16-hex-digit key id)"
)]
pub struct SignerPinError(String);

impl FromStr for SignerPin {
    type Err = SignerPinError;

    /// Reads `ed25519:<64 hex digits>` or a legacy 16-hex-digit key id.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        if let Ok(id) = text.parse::<KeyId>() {
            return Ok(SignerPin::Id(id));
        }
        if !text.starts_with(SIGNER_KEY_PREFIX) {
            return Err(SignerPinError(text.chars().take(120).collect()));
        }
        text.parse::<SignerKey>()
            .map(SignerPin::Key)
            .map_err(|_| SignerPinError(text.chars().take(120).collect()))
    }
}

impl serde::Serialize for SignerPin {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for SignerPin {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signing::SecretKey;

    #[test]
    fn a_signer_key_round_trips_and_names_the_key_not_the_id() {
        let key = SecretKey::generate().unwrap().public();
        let signer = SignerKey::of(&key);
        let text = signer.to_string();
        assert!(
            text.starts_with("ed25519:") && text.len() == 8 + 64,
            "{text}"
        );
        assert_eq!(text.parse::<SignerKey>().unwrap(), signer);
        assert_eq!(
            text.to_uppercase()
                .replace("ED25519:", "ed25519:")
                .parse::<SignerKey>()
                .unwrap(),
            signer
        );
        // The minisign line and file name the same signer.
        assert_eq!(key.to_base64().parse::<SignerKey>().unwrap(), signer);
        assert_eq!(key.to_file().parse::<SignerKey>().unwrap(), signer);
        assert!(signer.is(&key));
        // The same key under another id is the same signer.
        let renamed = signer.with_id("0000000000000001".parse().unwrap());
        assert!(signer.is(&renamed));
        assert_eq!(renamed.id().to_string(), "0000000000000001");
    }

    #[test]
    fn a_key_that_carries_anothers_id_is_another_signer() {
        let first = SecretKey::generate().unwrap().public();
        let forged = SignerKey::of(&SecretKey::generate().unwrap().public()).with_id(first.id());
        assert_eq!(forged.id(), first.id());
        let pin = SignerPin::Key(SignerKey::of(&first));
        assert!(pin.admits(&first));
        assert!(!pin.admits(&forged));
        // Only a legacy pin by id cannot tell them apart.
        assert!(SignerPin::Id(first.id()).admits(&forged));
    }

    #[test]
    fn ids_and_garbage_are_not_signer_keys() {
        assert!(matches!(
            "A448895874B90297".parse::<SignerKey>(),
            Err(SignerKeyError::KeyId(_))
        ));
        for bad in [
            "",
            "ed25519:",
            "ed25519:00",
            "ed25519:zz00000000000000000000000000000000000000000000000000000000000000",
            "ed25519:é000000000000000000000000000000000000000000000000000000000000000",
            "ed25519:+0000000000000000000000000000000000000000000000000000000000000000",
            "ed25519:+000000000000000000000000000000000000000000000000000000000000000",
            // The identity point: small order, so any signature "verifies".
            "ed25519:0100000000000000000000000000000000000000000000000000000000000000",
            "ed25519:0000000000000000000000000000000000000000000000000000000000000000 ",
            "ed448:0000000000000000000000000000000000000000000000000000000000000000",
            "sha256:0000000000000000000000000000000000000000000000000000000000000000",
        ] {
            assert!(bad.parse::<SignerKey>().is_err(), "{bad:?}");
            assert!(bad.parse::<SignerPin>().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_pin_reads_keys_and_legacy_ids() {
        let key = SecretKey::generate().unwrap().public();
        let text = SignerKey::of(&key).to_string();
        assert_eq!(
            text.parse::<SignerPin>().unwrap(),
            SignerPin::Key(SignerKey::of(&key))
        );
        assert_eq!(
            "A448895874B90297".parse::<SignerPin>().unwrap().to_string(),
            "A448895874B90297"
        );
        // A lock never holds a minisign line: a pin is one of two forms.
        assert!(key.to_base64().parse::<SignerPin>().is_err());
    }
}
