//! `sha256:<hex>` checksums, the form every index line and lockfile uses.

use std::fmt;
use std::str::FromStr;

use sha2::{Digest, Sha256};

/// A SHA-256 digest, written `sha256:` and 64 lowercase hex digits.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Checksum([u8; 32]);

impl Checksum {
    /// Returns the checksum of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        Self(Sha256::digest(bytes).into())
    }

    /// Wraps a digest computed elsewhere.
    pub fn from_digest(digest: [u8; 32]) -> Self {
        Self(digest)
    }

    /// Returns the raw digest.
    pub fn digest(&self) -> &[u8; 32] {
        &self.0
    }

    /// Returns the 64 hex digits, without the `sha256:` prefix.
    pub fn hex(&self) -> String {
        crate::archive::tree_hash::hex(&self.0)
    }
}

/// Why a string is not a checksum.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a checksum: expected `sha256:` and 64 lowercase hex digits")]
pub struct ChecksumError(String);

impl FromStr for Checksum {
    type Err = ChecksumError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let error = || ChecksumError(text.chars().take(80).collect());
        let hex = text.strip_prefix("sha256:").ok_or_else(error)?;
        if hex.len() != 64
            || !hex
                .bytes()
                .all(|byte| matches!(byte, b'0'..=b'9' | b'a'..=b'f'))
        {
            return Err(error());
        }
        let mut digest = [0_u8; 32];
        for (index, byte) in digest.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&hex[2 * index..2 * index + 2], 16).map_err(|_| error())?;
        }
        Ok(Self(digest))
    }
}

impl fmt::Display for Checksum {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sha256:{}", self.hex())
    }
}

impl fmt::Debug for Checksum {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl serde::Serialize for Checksum {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Checksum {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_matches_sha256sum() {
        // `printf abc | sha256sum`
        let expected = "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        assert_eq!(Checksum::of(b"abc").to_string(), expected);
        assert_eq!(expected.parse::<Checksum>().unwrap(), Checksum::of(b"abc"));
    }

    #[test]
    fn refuses_other_forms() {
        for text in [
            "",
            "sha256:",
            "md5:00",
            "sha256:ABC",
            &format!("sha256:{}", "0".repeat(63)),
            &format!("sha256:{}", "G".repeat(64)),
        ] {
            assert!(text.parse::<Checksum>().is_err(), "{text}");
        }
    }
}
