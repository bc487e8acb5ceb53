//! Checking an uploaded archive and turning it into its index line. The
//! server's publish and `skillpkg-registry build` both go through
//! [`verify_archive`], which is what makes their trees byte-identical.

use base64::Engine as _;
use jiff::Timestamp;
use skillpkg_index::archive::{self, Limits, UnpackError};
use skillpkg_index::checksum::Checksum;
use skillpkg_index::registry::{FORMAT_VERSION, IndexDependency, IndexRecord, whole_seconds};
use skillpkg_index::skill::{self, Diagnostic, Severity, SkillName, ValidateOptions};

/// Why an archive cannot be published.
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    #[error("the archive is {size} bytes; this registry accepts at most {limit}")]
    TooLarge { size: u64, limit: u64 },
    #[error("the archive was refused: {0}")]
    Unsafe(#[source] UnpackError),
    #[error("the skill is invalid: {}", summarise(.0))]
    Invalid(Vec<Diagnostic>),
    #[error("the archive holds the skill `{found}`, not `{requested}`")]
    NameMismatch { requested: String, found: String },
    #[error("the archive's SKILL.md declares version {found}, not {requested}")]
    VersionMismatch { requested: String, found: String },
    #[error("the signature is not a minisign signature: {0}")]
    BadSignature(String),
    #[error("cannot create a temporary folder to check the archive")]
    Io(#[source] std::io::Error),
}

fn summarise(diagnostics: &[Diagnostic]) -> String {
    diagnostics
        .iter()
        .filter(|diagnostic| diagnostic.severity == Severity::Error)
        .map(|diagnostic| match &diagnostic.location {
            Some(location) => format!(
                "{}:{}:{}: {} [{}]",
                diagnostic.file.display(),
                location.line,
                location.column,
                diagnostic.message,
                diagnostic.code
            ),
            None => format!(
                "{}: {} [{}]",
                diagnostic.file.display(),
                diagnostic.message,
                diagnostic.code
            ),
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Checks an archive uploaded as `name@version` and returns its index line.
///
/// The archive is unpacked with the hardened unpacker into a temporary
/// folder (removed on return) and validated; errors refuse it, warnings do
/// not. The caller checks ownership and that the version is new.
pub fn verify_archive(
    name: &SkillName,
    version: &semver::Version,
    tarball: &[u8],
    signature: Option<&[u8]>,
    max_skill_bytes: u64,
    published: Timestamp,
) -> Result<IndexRecord, PublishError> {
    if tarball.len() as u64 > max_skill_bytes {
        return Err(PublishError::TooLarge {
            size: tarball.len() as u64,
            limit: max_skill_bytes,
        });
    }
    let signer = signature.map(signer_key_id).transpose()?;
    let limits = Limits {
        max_unpacked_bytes: max_skill_bytes,
        max_packed_bytes: max_skill_bytes,
        ..Limits::default()
    };
    let temp = tempfile::tempdir().map_err(PublishError::Io)?;
    let target = temp.path().join(name.as_str());
    let unpacked = archive::unpack(tarball, &target, &limits).map_err(PublishError::Unsafe)?;

    // The folder is named after the request, so `name-mismatch` speaks of it.
    let report = skill::validate_skill(&target, &ValidateOptions::for_folder(&target));
    let Some(frontmatter) = report.frontmatter else {
        let found = report
            .diagnostics
            .iter()
            .find(|d| d.code == skill::Code::NameMismatch);
        if found.is_some() {
            let actual = skill::validate_skill(&target, &ValidateOptions::default());
            if let Some(frontmatter) = actual.frontmatter {
                return Err(PublishError::NameMismatch {
                    requested: name.to_string(),
                    found: frontmatter.name.to_string(),
                });
            }
        }
        return Err(PublishError::Invalid(report.diagnostics));
    };
    if let Some(declared) = &frontmatter.version {
        if declared != version {
            return Err(PublishError::VersionMismatch {
                requested: version.to_string(),
                found: declared.to_string(),
            });
        }
    }
    Ok(IndexRecord {
        v: FORMAT_VERSION,
        name: name.clone(),
        vers: version.clone(),
        cksum: Checksum::of(tarball),
        size: tarball.len() as u64,
        tree: unpacked.tree.to_string(),
        files: unpacked.files.len() as u64,
        deps: frontmatter
            .dependencies
            .into_iter()
            .map(|dependency| IndexDependency {
                name: dependency.name,
                req: dependency.requirement,
            })
            .collect(),
        description: frontmatter.description,
        yanked: false,
        yanked_reason: None,
        signer,
        published: whole_seconds(published),
    })
}

/// Returns the key id of a minisign signature file, as minisign prints it
/// (16 uppercase hex digits). Verifying the signature is the client's job.
pub fn signer_key_id(signature: &[u8]) -> Result<String, PublishError> {
    let text = std::str::from_utf8(signature)
        .map_err(|_| PublishError::BadSignature("it is not UTF-8".into()))?;
    let mut lines = text.lines();
    let comment = lines.next().unwrap_or("");
    if !comment.starts_with("untrusted comment:") {
        return Err(PublishError::BadSignature(
            "the first line is not an `untrusted comment:`".into(),
        ));
    }
    let encoded = lines.next().unwrap_or("").trim();
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .map_err(|_| PublishError::BadSignature("the second line is not base64".into()))?;
    if decoded.len() != 74 || !(decoded.starts_with(b"Ed") || decoded.starts_with(b"ED")) {
        return Err(PublishError::BadSignature(
            "the second line is not an Ed25519 signature".into(),
        ));
    }
    let key_id = u64::from_le_bytes(decoded[2..10].try_into().expect("eight bytes"));
    Ok(format!("{key_id:016X}"))
}
