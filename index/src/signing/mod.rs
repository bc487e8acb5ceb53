//! Keys and signatures in minisign's formats, so the stock `minisign` tool
//! verifies every skillpkg signature and skillpkg verifies minisign's
//! (normative text in `docs/signatures.md`).
//!
//! ```text
//! public key   untrusted comment: minisign public key <KEY ID>
//!              base64("Ed" || key id (8, LE) || Ed25519 public key (32))
//! secret key   untrusted comment: minisign encrypted secret key
//!              base64("Ed" || kdf ("Sc" or 0 0) || "B2" || salt (32) || opslimit (8) || memlimit (8)
//!                     || [key id (8) || seed+pk (64) || BLAKE2b-256 checksum (32)] xor scrypt stream)
//! signature    untrusted comment: signature from minisign secret key
//!              base64("ED" || key id || Ed25519(BLAKE2b-512(file)))
//!              trusted comment: skillpkg/1<TAB>name@version<TAB>sha256:<hex>
//!              base64(Ed25519(signature || trusted comment))
//! ```
//!
//! Only prehashed (`ED`) signatures are accepted; minisign's legacy `Ed`
//! form, which signs the raw file, is refused. Verification uses
//! ed25519-dalek's `verify_strict`, which rejects malleable and small-order
//! forms.

mod keys;
mod provenance;
mod signature;
mod signer;

pub use keys::{KeyError, KeyId, PublicKey, SecretKey};
pub use provenance::{
    BUILD_TYPE, Envelope, EnvelopeSignature, PAYLOAD_TYPE, Provenance, ProvenanceError, SourceInfo,
    sign_provenance, verify_provenance,
};
pub use signature::{
    Signature, SignatureError, TrustedComment, Verified, verify_skill, verify_skill_by,
};
pub use signer::{SIGNER_KEY_PREFIX, SignerKey, SignerKeyError, SignerPin, SignerPinError};

/// The algorithm tag of keys and of legacy signatures.
const ED: [u8; 2] = *b"Ed";
/// The algorithm tag of prehashed signatures.
const ED_PREHASHED: [u8; 2] = *b"ED";

fn base64_encode(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn base64_decode(text: &str) -> Option<Vec<u8>> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .ok()
}

/// Returns the second line of a minisign file (the base64 payload), or the
/// text itself when it is a bare base64 line (`minisign -P KEY`).
fn payload_line(text: &str) -> &str {
    let mut lines = text.lines().map(str::trim).filter(|line| !line.is_empty());
    match lines.next() {
        Some(first) if first.starts_with("untrusted comment:") => lines.next().unwrap_or(""),
        Some(first) => first,
        None => "",
    }
}
