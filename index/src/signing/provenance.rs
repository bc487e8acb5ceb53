//! Provenance: where an archive was built from, as an in-toto Statement v1
//! with a SLSA provenance v1 predicate, in a DSSE envelope signed with the
//! publisher's key. Stored beside the archive as `<name>-<version>.intoto.jsonl`
//! (one envelope a line).

use ed25519_dalek::Signer as _;
use serde_json::json;

use super::keys::{PublicKey, SecretKey};
use super::{base64_decode, base64_encode};
use crate::checksum::Checksum;

/// The DSSE payload type of in-toto statements.
pub const PAYLOAD_TYPE: &str = "application/vnd.in-toto+json";
const STATEMENT_TYPE: &str = "https://in-toto.io/Statement/v1";
const PREDICATE_TYPE: &str = "https://slsa.dev/provenance/v1";
/// What a skillpkg publish is, as a SLSA build type.
pub const BUILD_TYPE: &str =
    "https://github.com/skillpkg/skillpkg/blob/main/docs/signatures.md#provenance";

/// What is known about where an archive came from.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct SourceInfo {
    /// The repository URL (`git+https://...`), when the skill is in one.
    pub repository: Option<String>,
    /// The commit the archive was built from.
    pub commit: Option<String>,
    /// Whether the work tree had changes that are not committed.
    pub dirty: bool,
    /// Who built it: a CI system's id, or `skillpkg/<version>` on a workstation.
    pub builder: String,
    /// The CI run's URL, when a CI system says so.
    pub ci_run: Option<String>,
}

/// A DSSE envelope.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Envelope {
    #[serde(rename = "payloadType")]
    pub payload_type: String,
    pub payload: String,
    pub signatures: Vec<EnvelopeSignature>,
}

/// One signature of a DSSE envelope.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct EnvelopeSignature {
    pub keyid: String,
    pub sig: String,
}

/// A verified provenance statement, summarised.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Provenance {
    /// The key that signed the envelope.
    pub key_id: String,
    pub source: SourceInfo,
}

/// Why a provenance envelope does not hold.
#[derive(Debug, thiserror::Error)]
pub enum ProvenanceError {
    #[error("the provenance is not a DSSE envelope of an in-toto statement: {0}")]
    Malformed(String),
    #[error("the provenance is signed by {found}, not by the archive's signer {expected}")]
    OtherKey { found: String, expected: String },
    #[error(
        "the provenance envelope's signature does not hold: it was changed after it was signed"
    )]
    Tampered,
    #[error(
        "the provenance describes an archive with digest sha256:{found}, not this archive ({expected})"
    )]
    WrongSubject { found: String, expected: Checksum },
}

/// Pre-authentication encoding (DSSE v1): what is actually signed.
fn pae(payload_type: &str, payload: &[u8]) -> Vec<u8> {
    let mut encoded = format!(
        "DSSEv1 {} {payload_type} {} ",
        payload_type.len(),
        payload.len()
    )
    .into_bytes();
    encoded.extend_from_slice(payload);
    encoded
}

/// Builds and signs the provenance of the archive `file_name` with digest
/// `sha256`, and returns the `.intoto.jsonl` text (one line).
pub fn sign_provenance(
    key: &SecretKey,
    file_name: &str,
    sha256: &Checksum,
    source: &SourceInfo,
) -> String {
    let mut external = serde_json::Map::new();
    if let Some(repository) = &source.repository {
        let mut source_json = json!({ "uri": repository });
        if let Some(commit) = &source.commit {
            source_json["digest"] = json!({ "gitCommit": commit });
        }
        external.insert("source".into(), source_json);
    }
    external.insert("dirty".into(), json!(source.dirty));
    let mut run_details = json!({ "builder": { "id": source.builder } });
    if let Some(run) = &source.ci_run {
        run_details["metadata"] = json!({ "invocationId": run });
    }
    let statement = json!({
        "_type": STATEMENT_TYPE,
        "subject": [{ "name": file_name, "digest": { "sha256": sha256.hex() } }],
        "predicateType": PREDICATE_TYPE,
        "predicate": {
            "buildDefinition": { "buildType": BUILD_TYPE, "externalParameters": external },
            "runDetails": run_details,
        },
    });
    let payload = serde_json::to_vec(&statement).expect("a statement serialises");
    let signature = key.signing.sign(&pae(PAYLOAD_TYPE, &payload));
    let envelope = Envelope {
        payload_type: PAYLOAD_TYPE.into(),
        payload: base64_encode(&payload),
        signatures: vec![EnvelopeSignature {
            keyid: key.id.to_string(),
            sig: base64_encode(&signature.to_bytes()),
        }],
    };
    let mut line = serde_json::to_string(&envelope).expect("an envelope serialises");
    line.push('\n');
    line
}

/// Verifies a `.intoto.jsonl` (its first envelope) against `key` and the
/// archive's `sha256`, and returns what it says.
pub fn verify_provenance(
    text: &str,
    key: &PublicKey,
    sha256: &Checksum,
) -> Result<Provenance, ProvenanceError> {
    let malformed = |what: &str| ProvenanceError::Malformed(what.to_owned());
    let line = text
        .lines()
        .find(|line| !line.trim().is_empty())
        .ok_or_else(|| malformed("it is empty"))?;
    let envelope: Envelope = serde_json::from_str(line)
        .map_err(|error| ProvenanceError::Malformed(error.to_string()))?;
    if envelope.payload_type != PAYLOAD_TYPE {
        return Err(malformed(
            "the payload type is not application/vnd.in-toto+json",
        ));
    }
    let payload =
        base64_decode(&envelope.payload).ok_or_else(|| malformed("the payload is not base64"))?;
    let signature = envelope
        .signatures
        .iter()
        .find(|signature| signature.keyid == key.id().to_string())
        .ok_or_else(|| ProvenanceError::OtherKey {
            found: envelope
                .signatures
                .iter()
                .map(|s| s.keyid.clone())
                .collect::<Vec<_>>()
                .join(", "),
            expected: key.id().to_string(),
        })?;
    let bytes: [u8; 64] = base64_decode(&signature.sig)
        .and_then(|bytes| bytes.try_into().ok())
        .ok_or_else(|| malformed("the envelope signature is not 64 bytes of base64"))?;
    key.key
        .verify_strict(
            &pae(&envelope.payload_type, &payload),
            &ed25519_dalek::Signature::from_bytes(&bytes),
        )
        .map_err(|_| ProvenanceError::Tampered)?;
    let statement: serde_json::Value = serde_json::from_slice(&payload)
        .map_err(|error| ProvenanceError::Malformed(error.to_string()))?;
    if statement["_type"] != STATEMENT_TYPE || statement["predicateType"] != PREDICATE_TYPE {
        return Err(malformed(
            "it is not an in-toto v1 statement of SLSA provenance v1",
        ));
    }
    let digest = statement["subject"][0]["digest"]["sha256"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    if digest != sha256.hex() {
        return Err(ProvenanceError::WrongSubject {
            found: digest,
            expected: *sha256,
        });
    }
    let predicate = &statement["predicate"];
    let external = &predicate["buildDefinition"]["externalParameters"];
    let text = |value: &serde_json::Value| value.as_str().map(str::to_owned);
    Ok(Provenance {
        key_id: signature.keyid.clone(),
        source: SourceInfo {
            repository: text(&external["source"]["uri"]),
            commit: text(&external["source"]["digest"]["gitCommit"]),
            dirty: external["dirty"].as_bool().unwrap_or(true),
            builder: text(&predicate["runDetails"]["builder"]["id"]).unwrap_or_default(),
            ci_run: text(&predicate["runDetails"]["metadata"]["invocationId"]),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source() -> SourceInfo {
        SourceInfo {
            repository: Some("git+https://github.com/acme/skills".into()),
            commit: Some("0123456789abcdef0123456789abcdef01234567".into()),
            dirty: false,
            builder: "https://github.com/actions/runner".into(),
            ci_run: Some("https://github.com/acme/skills/actions/runs/1/attempts/1".into()),
        }
    }

    #[test]
    fn provenance_round_trips_and_binds_the_archive() {
        let key = SecretKey::generate().unwrap();
        let sha256 = Checksum::of(b"archive");
        let line = sign_provenance(&key, "pdf-1.0.0.tgz", &sha256, &source());
        assert_eq!(line.lines().count(), 1);
        let provenance = verify_provenance(&line, &key.public(), &sha256).unwrap();
        assert_eq!(provenance.source, source());
        assert!(matches!(
            verify_provenance(&line, &key.public(), &Checksum::of(b"other")),
            Err(ProvenanceError::WrongSubject { .. })
        ));
        let other = SecretKey::generate().unwrap();
        assert!(matches!(
            verify_provenance(&line, &other.public(), &sha256),
            Err(ProvenanceError::OtherKey { .. })
        ));
        let mut envelope: Envelope = serde_json::from_str(line.trim()).unwrap();
        let mut statement: serde_json::Value =
            serde_json::from_slice(&base64_decode(&envelope.payload).unwrap()).unwrap();
        statement["predicate"]["buildDefinition"]["externalParameters"]["dirty"] = json!(true);
        envelope.payload = base64_encode(&serde_json::to_vec(&statement).unwrap());
        let forged = serde_json::to_string(&envelope).unwrap();
        assert!(matches!(
            verify_provenance(&forged, &key.public(), &sha256),
            Err(ProvenanceError::Tampered)
        ));
    }
}
