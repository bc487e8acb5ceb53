//! `minisign_keys` and `minisign_signature`: minisign public keys, secret key
//! files and `.minisig` signatures, as skillpkg reads them from users,
//! registries (`keys/<name>.json`) and archives' signature files.
//!
//! The scrypt that unlocks an encrypted secret key costs 1 GiB and about a
//! second with minisign's parameters, so the fuzzer reads encrypted keys
//! without a password (everything up to the key derivation) and derives a
//! key only when the file asks for a cheap one.

use std::sync::OnceLock;

use base64::Engine as _;
use skillpkg_index::signing::{
    self, KeyId, PublicKey, SecretKey, Signature, SignerKey, SignerPin, TrustedComment,
};
use skillpkg_index::skill::SkillName;

/// The seed of the fixed key that signed the seed inputs.
const FIXED_SEED: [u8; 32] = [0x5a; 32];
/// The fixed key's id.
const FIXED_ID: [u8; 8] = *b"skillfuz";
/// The archive bytes the seed signatures sign.
pub const SIGNED_DATA: &[u8] = b"fuzz archive\n";
/// The name and version the seed signatures' trusted comments name.
pub const SIGNED_SUBJECT: (&str, &str) = ("fuzz-skill", "1.0.0");
/// Encrypted keys whose scrypt parameters ask for more than this are read
/// without a password: libsodium's opslimit counts roughly salsa20/8 rounds,
/// so this is a millisecond or so.
const CHEAP_KDF_LIMIT: u64 = 1 << 16;

/// Returns the unencrypted secret key file of the fixed key, as
/// `minisign -G -W` writes one (key id, seed and public half, no checksum).
pub fn fixed_secret_key_file() -> String {
    let public = ed25519_dalek::SigningKey::from_bytes(&FIXED_SEED).verifying_key();
    let mut bytes = b"Ed\0\0B2".to_vec();
    bytes.extend_from_slice(&[0; 48]);
    bytes.extend_from_slice(&FIXED_ID);
    bytes.extend_from_slice(&FIXED_SEED);
    bytes.extend_from_slice(public.as_bytes());
    bytes.extend_from_slice(&[0; 32]);
    format!(
        "untrusted comment: minisign secret key\n{}\n",
        base64::engine::general_purpose::STANDARD.encode(bytes)
    )
}

/// Returns the fixed key, which signs the seeds.
pub fn fixed_key() -> &'static SecretKey {
    static KEY: OnceLock<SecretKey> = OnceLock::new();
    KEY.get_or_init(|| {
        SecretKey::from_file(&fixed_secret_key_file(), None).expect("the fixed key reads")
    })
}

/// Reads `text` as a signer key and as a signer pin; what reads must
/// write back as itself, in the one lowercase form skillpkg writes.
fn signers(text: &str) {
    if let Ok(signer) = text.parse::<SignerKey>() {
        let written = signer.to_string();
        assert!(written.starts_with(signing::SIGNER_KEY_PREFIX) && written.len() == 72);
        assert_eq!(written, written.to_lowercase());
        assert_eq!(written.parse::<SignerKey>().ok(), Some(signer));
        assert_eq!(
            written.parse::<SignerPin>().ok(),
            Some(SignerPin::Key(signer))
        );
    }
    if let Ok(pin) = text.parse::<SignerPin>() {
        let written = pin.to_string();
        assert_eq!(written.parse::<SignerPin>().ok(), Some(pin));
        match pin {
            SignerPin::Key(key) => assert_eq!(pin.key(), Some(&key)),
            SignerPin::Id(id) => {
                assert!(pin.key().is_none());
                assert_eq!(written, id.to_string());
            }
        }
    }
}

/// Reads `data` as a public key (first byte even), a secret key file (odd),
/// a key id, a signer key (`ed25519:<hex>` or a minisign key, as
/// `allowed-signers` takes it) and a signer pin (as skills.lock holds it).
/// Checks that what reads writes back to the same key, and that a signer
/// key is the key's 32 bytes whatever id the key carries.
pub fn minisign_keys(data: &[u8]) {
    let Some((choice, rest)) = crate::selector(data) else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let _ = text.parse::<KeyId>();
    signers(text);
    if choice % 2 == 0 {
        if let Ok(key) = text.parse::<PublicKey>() {
            assert_eq!(key.to_file().parse::<PublicKey>().ok(), Some(key.clone()));
            assert_eq!(key.to_base64().parse::<PublicKey>().ok(), Some(key.clone()));
            assert_eq!(key.id().to_string().parse::<KeyId>().ok(), Some(key.id()));
            // A key's signer is its key, not its id: the same key under
            // another id is the same signer, and the id alone is none.
            if let Ok(signer) = text.parse::<SignerKey>() {
                assert_eq!(signer, SignerKey::of(&key));
                assert!(signer.is(&signer.with_id("0000000000000000".parse().expect("an id"))));
            }
            assert!(key.id().to_string().parse::<SignerKey>().is_err());
        }
        return;
    }
    let encrypted = SecretKey::is_encrypted(text);
    let password = (encrypted && kdf_is_cheap(text)).then_some("password");
    if let Ok(key) = SecretKey::from_file(text, password) {
        let written = key.to_file(None).expect("an unencrypted key writes");
        let read = SecretKey::from_file(&written, None).expect("a written key reads");
        assert_eq!(read.public(), key.public());
    }
    if matches!(
        SecretKey::from_file(text, None),
        Err(signing::KeyError::PasswordRequired)
    ) {
        assert!(encrypted, "a key that wants a password is encrypted");
    }
}

/// Returns true if and only if the encrypted key file `text` asks for scrypt
/// parameters below [`CHEAP_KDF_LIMIT`].
fn kdf_is_cheap(text: &str) -> bool {
    let line = text
        .lines()
        .map(str::trim)
        .find(|line| !line.is_empty() && !line.starts_with("untrusted comment:"))
        .unwrap_or("");
    let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(line) else {
        return false;
    };
    let Some(limits) = bytes.get(38..54) else {
        return false;
    };
    let opslimit = u64::from_le_bytes(limits[..8].try_into().expect("8 bytes"));
    let memlimit = u64::from_le_bytes(limits[8..].try_into().expect("8 bytes"));
    opslimit <= CHEAP_KDF_LIMIT && memlimit <= CHEAP_KDF_LIMIT
}

/// Reads `data` as a `.minisig` file and checks it against the fixed key and
/// [`SIGNED_DATA`], as an install checks an archive's signature. A signature
/// that reads writes a file that reads as the same key's, and that verifies
/// if and only if the original does. (Not the same bytes: a comment line
/// ending in a carriage return loses it when written and read again, and
/// skillpkg only ever writes the signatures it makes.)
pub fn minisign_signature(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(signature) = text.parse::<Signature>() {
        let _ = signature.trusted_comment().parse::<TrustedComment>();
        let written: Signature = signature
            .to_file()
            .parse()
            .expect("a written signature reads");
        assert_eq!(written.key_id(), signature.key_id());
        let key = fixed_key().public();
        let verifies = signature.verify(SIGNED_DATA, &key).is_ok();
        if !signature.trusted_comment().ends_with('\r') {
            assert_eq!(written.verify(SIGNED_DATA, &key).is_ok(), verifies);
        }
    }
    let name: SkillName = SIGNED_SUBJECT.0.parse().expect("a valid name");
    let version: semver::Version = SIGNED_SUBJECT.1.parse().expect("a valid version");
    let result = signing::verify_skill(SIGNED_DATA, text, &[fixed_key().public()], &name, &version);
    if let Ok(verified) = result {
        assert_eq!(verified.key_id, fixed_key().id());
        assert_eq!(verified.comment.name, name);
    }
}
