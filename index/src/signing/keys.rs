//! minisign public and secret keys.

use std::fmt;
use std::str::FromStr;

use blake2::digest::consts::U32;
use blake2::{Blake2b, Digest};
use ed25519_dalek::{SigningKey, VerifyingKey};

use super::{ED, base64_decode, base64_encode, payload_line};

/// minisign's scrypt parameters for new keys (libsodium's "sensitive"
/// limits): 1 GiB of memory, so guessing a password is expensive.
const OPSLIMIT: u64 = 33_554_432;
const MEMLIMIT: u64 = 1_073_741_824;
const KDF_SCRYPT: [u8; 2] = *b"Sc";
const KDF_NONE: [u8; 2] = [0, 0];
const CHECKSUM_BLAKE2: [u8; 2] = *b"B2";
const SECRET_KEY_LEN: usize = 158;
/// The most memory an encrypted key file may ask scrypt for: four times
/// what minisign's own keys use. The file's opslimit and memlimit are read
/// before anything vouches for them, and unbounded they can ask for more
/// memory than any machine has, which aborts the process.
const MAX_SCRYPT_BYTES: u128 = 4 * MEMLIMIT as u128;
/// The most work (N * r * p) an encrypted key file may ask of scrypt:
/// sixteen times what minisign's own keys need, about a minute.
const MAX_SCRYPT_WORK: u128 = 16 * (1 << 20) * 8;

/// A key id: 8 random bytes, shown as minisign shows them.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KeyId(pub(super) [u8; 8]);

impl fmt::Display for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016X}", u64::from_le_bytes(self.0))
    }
}

impl fmt::Debug for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "KeyId({self})")
    }
}

impl FromStr for KeyId {
    type Err = KeyError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        if text.len() != 16 {
            return Err(KeyError::Malformed("a key id is 16 hex digits"));
        }
        let value = u64::from_str_radix(text, 16)
            .map_err(|_| KeyError::Malformed("a key id is 16 hex digits"))?;
        Ok(Self(value.to_le_bytes()))
    }
}

/// Why a key could not be read.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("not a minisign key: {0}")]
    Malformed(&'static str),
    #[error("the secret key is protected by a password, and none was given")]
    PasswordRequired,
    #[error("the password is wrong, or the secret key is corrupt")]
    WrongPassword,
    #[error("the secret key uses an unsupported scheme (kdf {kdf:?}, checksum {checksum:?})")]
    Unsupported { kdf: [u8; 2], checksum: [u8; 2] },
    #[error("cannot derive the key from the password: {0}")]
    Kdf(String),
    #[error("cannot get random bytes from the operating system: {0}")]
    Random(String),
}

/// A public key.
#[derive(Clone, PartialEq, Eq)]
pub struct PublicKey {
    pub(super) id: KeyId,
    pub(super) key: VerifyingKey,
}

impl PublicKey {
    /// Returns the key id.
    pub fn id(&self) -> KeyId {
        self.id
    }

    /// Returns the base64 line (`RW...`), what `minisign -P` takes.
    pub fn to_base64(&self) -> String {
        let mut bytes = ED.to_vec();
        bytes.extend_from_slice(&self.id.0);
        bytes.extend_from_slice(self.key.as_bytes());
        base64_encode(&bytes)
    }

    /// Checks a plain (not prehashed) Ed25519 signature of `message`, as
    /// [`SecretKey::sign_message`] makes for registry metadata.
    pub fn verify_message(&self, message: &[u8], signature: &[u8; 64]) -> bool {
        self.key
            .verify_strict(message, &ed25519_dalek::Signature::from_bytes(signature))
            .is_ok()
    }

    /// Returns the public key file, as `minisign -G` writes it.
    pub fn to_file(&self) -> String {
        format!(
            "untrusted comment: minisign public key {}\n{}\n",
            self.id,
            self.to_base64()
        )
    }
}

impl fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PublicKey({})", self.id)
    }
}

impl FromStr for PublicKey {
    type Err = KeyError;

    /// Reads a public key file or its bare base64 line.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bytes = base64_decode(payload_line(text))
            .ok_or(KeyError::Malformed("the key is not base64"))?;
        if bytes.len() != 42 || bytes[..2] != ED {
            return Err(KeyError::Malformed(
                "a public key is 42 bytes starting with `Ed`",
            ));
        }
        let key: [u8; 32] = bytes[10..].try_into().expect("32 bytes");
        Ok(Self {
            id: KeyId(bytes[2..10].try_into().expect("8 bytes")),
            key: VerifyingKey::from_bytes(&key)
                .map_err(|_| KeyError::Malformed("the public key is not a valid Ed25519 point"))?,
        })
    }
}

impl serde::Serialize for PublicKey {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.to_base64())
    }
}

impl<'de> serde::Deserialize<'de> for PublicKey {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

/// A secret key. Its Debug form never shows the key.
pub struct SecretKey {
    pub(super) id: KeyId,
    pub(super) signing: SigningKey,
}

impl fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SecretKey({}, ***)", self.id)
    }
}

fn random<const N: usize>() -> Result<[u8; N], KeyError> {
    let mut bytes = [0_u8; N];
    getrandom::fill(&mut bytes).map_err(|error| KeyError::Random(error.to_string()))?;
    Ok(bytes)
}

/// libsodium's `pickparams`: the scrypt cost that minisign's opslimit and
/// memlimit stand for.
fn scrypt_params(opslimit: u64, memlimit: u64) -> (u8, u32, u32) {
    let opslimit = opslimit.max(32_768);
    let r: u64 = 8;
    let log_n_for = |max_n: u64| {
        (1..63)
            .find(|log_n| (1_u64 << log_n) > max_n / 2)
            .unwrap_or(63)
    };
    if opslimit < memlimit / 32 {
        (log_n_for(opslimit / (r * 4)) as u8, r as u32, 1)
    } else {
        let log_n = log_n_for(memlimit / (r * 128));
        let max_rp = ((opslimit / 4) / (1_u64 << log_n)).min(0x3fff_ffff);
        (log_n as u8, r as u32, (max_rp / r) as u32)
    }
}

fn key_stream(
    password: &str,
    salt: &[u8],
    opslimit: u64,
    memlimit: u64,
) -> Result<[u8; 104], KeyError> {
    let (log_n, r, p) = scrypt_params(opslimit, memlimit);
    // scrypt holds N blocks of 128 * r bytes, and p more before it starts.
    let (n, r_wide, p_wide) = (1_u128 << log_n, u128::from(r), u128::from(p));
    if 128 * r_wide * (n + p_wide) > MAX_SCRYPT_BYTES || n * r_wide * p_wide > MAX_SCRYPT_WORK {
        return Err(KeyError::Kdf(format!(
            "the key asks for scrypt with N = 2^{log_n}, r = {r}, p = {p} (opslimit {opslimit}, memlimit {memlimit}), more than any minisign key needs"
        )));
    }
    // `len` matters only to password-hash strings; the output slice sets
    // the length of the stream.
    let params =
        scrypt::Params::new(log_n, r, p, 64).map_err(|error| KeyError::Kdf(error.to_string()))?;
    let mut stream = [0_u8; 104];
    scrypt::scrypt(password.as_bytes(), salt, &params, &mut stream)
        .map_err(|error| KeyError::Kdf(error.to_string()))?;
    Ok(stream)
}

fn checksum(id: &KeyId, keypair: &[u8; 64]) -> [u8; 32] {
    let mut hasher = Blake2b::<U32>::new();
    hasher.update(ED);
    hasher.update(id.0);
    hasher.update(keypair);
    hasher.finalize().into()
}

impl SecretKey {
    /// Generates a new key pair.
    pub fn generate() -> Result<Self, KeyError> {
        Ok(Self {
            id: KeyId(random()?),
            signing: SigningKey::from_bytes(&random()?),
        })
    }

    /// Returns the key id.
    pub fn id(&self) -> KeyId {
        self.id
    }

    /// Returns the same key carrying another id. Anyone who makes a key
    /// chooses its id (minisign writes whatever 8 bytes the key file
    /// holds), which is why trust is never decided by an id: this makes
    /// the keys that prove it.
    pub fn with_id(self, id: KeyId) -> Self {
        Self { id, ..self }
    }

    /// Returns the public half.
    pub fn public(&self) -> PublicKey {
        PublicKey {
            id: self.id,
            key: self.signing.verifying_key(),
        }
    }

    /// Signs `message` itself with Ed25519 (no prehash, no trusted comment):
    /// the signatures of registry metadata, whose messages are short.
    pub fn sign_message(&self, message: &[u8]) -> [u8; 64] {
        use ed25519_dalek::Signer as _;
        self.signing.sign(message).to_bytes()
    }

    /// Returns true if and only if the secret key file `text` is encrypted.
    pub fn is_encrypted(text: &str) -> bool {
        base64_decode(payload_line(text))
            .is_some_and(|bytes| bytes.len() == SECRET_KEY_LEN && bytes[2..4] == KDF_SCRYPT)
    }

    /// Reads a secret key file, decrypting it with `password` when it is
    /// encrypted.
    pub fn from_file(text: &str, password: Option<&str>) -> Result<Self, KeyError> {
        let bytes = base64_decode(payload_line(text))
            .ok_or(KeyError::Malformed("the key is not base64"))?;
        if bytes.len() != SECRET_KEY_LEN || bytes[..2] != ED {
            return Err(KeyError::Malformed(
                "a secret key is 158 bytes starting with `Ed`",
            ));
        }
        let kdf: [u8; 2] = bytes[2..4].try_into().expect("2 bytes");
        let checksum_algorithm: [u8; 2] = bytes[4..6].try_into().expect("2 bytes");
        if checksum_algorithm != CHECKSUM_BLAKE2 || (kdf != KDF_SCRYPT && kdf != KDF_NONE) {
            return Err(KeyError::Unsupported {
                kdf,
                checksum: checksum_algorithm,
            });
        }
        let mut sealed: [u8; 104] = bytes[54..].try_into().expect("104 bytes");
        if kdf == KDF_SCRYPT {
            let password = password.ok_or(KeyError::PasswordRequired)?;
            let opslimit = u64::from_le_bytes(bytes[38..46].try_into().expect("8 bytes"));
            let memlimit = u64::from_le_bytes(bytes[46..54].try_into().expect("8 bytes"));
            let stream = key_stream(password, &bytes[6..38], opslimit, memlimit)?;
            for (byte, mask) in sealed.iter_mut().zip(stream) {
                *byte ^= mask;
            }
        }
        let id = KeyId(sealed[..8].try_into().expect("8 bytes"));
        let keypair: [u8; 64] = sealed[8..72].try_into().expect("64 bytes");
        let stored: [u8; 32] = sealed[72..].try_into().expect("32 bytes");
        // minisign leaves the checksum of an unencrypted key at zero.
        let checks = stored == checksum(&id, &keypair) || (kdf == KDF_NONE && stored == [0; 32]);
        if !checks {
            return Err(if kdf == KDF_SCRYPT {
                KeyError::WrongPassword
            } else {
                KeyError::Malformed("the checksum does not match")
            });
        }
        let seed: [u8; 32] = keypair[..32].try_into().expect("32 bytes");
        let signing = SigningKey::from_bytes(&seed);
        if signing.verifying_key().as_bytes() != &keypair[32..] {
            return Err(KeyError::Malformed(
                "the public half does not match the secret half",
            ));
        }
        Ok(Self { id, signing })
    }

    /// Returns the secret key file, as minisign writes it: encrypted with
    /// `password`, or, with `None`, unencrypted as `minisign -G -W` does.
    pub fn to_file(&self, password: Option<&str>) -> Result<String, KeyError> {
        let mut keypair = [0_u8; 64];
        keypair[..32].copy_from_slice(&self.signing.to_bytes());
        keypair[32..].copy_from_slice(self.signing.verifying_key().as_bytes());
        let mut sealed = [0_u8; 104];
        sealed[..8].copy_from_slice(&self.id.0);
        sealed[8..72].copy_from_slice(&keypair);
        let mut bytes = ED.to_vec();
        match password {
            Some(password) => {
                sealed[72..].copy_from_slice(&checksum(&self.id, &keypair));
                let salt: [u8; 32] = random()?;
                let stream = key_stream(password, &salt, OPSLIMIT, MEMLIMIT)?;
                for (byte, mask) in sealed.iter_mut().zip(stream) {
                    *byte ^= mask;
                }
                bytes.extend_from_slice(&KDF_SCRYPT);
                bytes.extend_from_slice(&CHECKSUM_BLAKE2);
                bytes.extend_from_slice(&salt);
                bytes.extend_from_slice(&OPSLIMIT.to_le_bytes());
                bytes.extend_from_slice(&MEMLIMIT.to_le_bytes());
            }
            None => {
                bytes.extend_from_slice(&KDF_NONE);
                bytes.extend_from_slice(&CHECKSUM_BLAKE2);
                bytes.extend_from_slice(&[0; 48]);
            }
        }
        bytes.extend_from_slice(&sealed);
        Ok(format!(
            "untrusted comment: minisign encrypted secret key\n{}\n",
            base64_encode(&bytes)
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scrypt_parameters_match_libsodium() {
        // minisign's defaults: N = 2^20, r = 8, p = 1.
        assert_eq!(scrypt_params(OPSLIMIT, MEMLIMIT), (20, 8, 1));
        assert_eq!(scrypt_params(524_288, 16_777_216), (14, 8, 1));
    }

    #[test]
    fn unencrypted_keys_round_trip_and_parse_minisign_w_keys() {
        let key = SecretKey::generate().unwrap();
        let text = key.to_file(None).unwrap();
        assert!(!SecretKey::is_encrypted(&text));
        let read = SecretKey::from_file(&text, None).unwrap();
        assert_eq!(read.public(), key.public());
        assert_eq!(format!("{read:?}"), format!("SecretKey({}, ***)", key.id()));
        let public: PublicKey = key.public().to_file().parse().unwrap();
        assert_eq!(public, key.public());
        let bare: PublicKey = key.public().to_base64().parse().unwrap();
        assert_eq!(bare.id().to_string().parse::<KeyId>().unwrap(), key.id());
    }

    /// Returns `key`'s file marked as scrypt-encrypted with these limits.
    fn with_scrypt_limits(key: &SecretKey, opslimit: u64, memlimit: u64) -> String {
        let text = key.to_file(None).unwrap();
        let mut bytes = base64_decode(payload_line(&text)).unwrap();
        bytes[2..4].copy_from_slice(&KDF_SCRYPT);
        bytes[38..46].copy_from_slice(&opslimit.to_le_bytes());
        bytes[46..54].copy_from_slice(&memlimit.to_le_bytes());
        format!("untrusted comment: x\n{}\n", base64_encode(&bytes))
    }

    #[test]
    fn a_key_file_asking_scrypt_for_unbounded_memory_or_work_is_refused_before_deriving() {
        let key = SecretKey::generate().unwrap();
        for (opslimit, memlimit) in [
            // 2^62 bytes for scrypt's table: an allocation failure aborts.
            (u64::MAX, 1 << 62),
            // A tiny table, but p = 2^26 blocks of 1 KiB, 64 GiB, up front.
            (u64::from(u32::MAX), 0),
            // 64 GiB of table.
            (u64::MAX, 64 << 30),
        ] {
            let text = with_scrypt_limits(&key, opslimit, memlimit);
            assert!(
                matches!(
                    SecretKey::from_file(&text, Some("password")),
                    Err(KeyError::Kdf(_))
                ),
                "opslimit {opslimit}, memlimit {memlimit}"
            );
        }
    }

    #[test]
    fn a_corrupt_key_is_refused() {
        assert!(matches!(
            "RWQ".parse::<PublicKey>(),
            Err(KeyError::Malformed(_))
        ));
        let key = SecretKey::generate().unwrap().to_file(None).unwrap();
        let mut bytes = base64_decode(payload_line(&key)).unwrap();
        bytes[100] ^= 1;
        let corrupt = format!("untrusted comment: x\n{}\n", base64_encode(&bytes));
        assert!(SecretKey::from_file(&corrupt, None).is_err());
    }
}
