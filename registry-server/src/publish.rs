//! Checking an uploaded archive and turning it into its index line. The
//! server's publish and `skillpkg-registry build` both go through
//! [`verify_archive`], which is what makes their trees byte-identical.
//!
//! A signed upload is checked before the archive is unpacked: the signature
//! against the skill's keys (`verify_skill`: prehashed, over these bytes,
//! with a trusted comment naming exactly `name@version` and their sha256),
//! then the provenance, if any, against the key that made the signature.
//! Which keys count is the caller's business ([`SignerKeys`]): the server
//! reads `keys/<name>.json`, `build` reads them from `--keys-from`.
//!
//! The first publish of a new name also goes through [`check_new_name`]:
//! a name that looks like an existing one, or is one typing slip from a
//! popular one, is refused (`skillpkg_index::confusable`).

use jiff::Timestamp;
use skillpkg_index::archive::{self, Limits, UnpackError};
use skillpkg_index::audit::{self, AuditOptions, Finding};
use skillpkg_index::checksum::Checksum;
use skillpkg_index::confusable::{self, Likeness};
use skillpkg_index::registry::{FORMAT_VERSION, IndexDependency, IndexRecord, whole_seconds};
use skillpkg_index::signing::{
    KeyId, ProvenanceError, PublicKey, SignatureError, verify_provenance, verify_skill,
};
use skillpkg_index::skill::{self, Diagnostic, Severity, SkillName, ValidateOptions};

use crate::text::{self, TextError};

/// Returns `version` without its build metadata: its identity in
/// precedence, under which `1.0.0+build2` and `1.0.0` are one version (as
/// semver and cargo count them), which a registry publishes once.
pub fn without_build(version: &semver::Version) -> semver::Version {
    semver::Version {
        build: semver::BuildMetadata::EMPTY,
        ..version.clone()
    }
}

/// The largest signature or provenance file accepted. A minisign signature
/// is a few hundred bytes and a provenance envelope a few KiB; the bound
/// keeps a publisher from storing anything else beside the archive.
pub const MAX_ATTACHMENT_BYTES: usize = 64 * 1024;

/// An upload: the archive and what vouches for it, as sent.
#[derive(Clone, Copy, Debug)]
pub struct Upload<'a> {
    pub name: &'a SkillName,
    pub version: &'a semver::Version,
    /// The `.tgz`.
    pub tarball: &'a [u8],
    /// The `.minisig` file, when the upload is signed.
    pub signature: Option<&'a [u8]>,
    /// The `.intoto.jsonl` file, when provenance was sent.
    pub provenance: Option<&'a [u8]>,
}

/// The keys a signature may be made by.
#[derive(Clone, Copy, Debug)]
pub enum SignerKeys<'a> {
    /// The keys registered for the skill: a signature by any other key is
    /// refused as [`PublishError::UnregisteredKey`].
    Registered(&'a [PublicKey]),
    /// No key is registered yet: the publisher's own key, which the caller
    /// registers when the signature holds (trust on first use).
    FirstUse(&'a PublicKey),
    /// No key is registered and none came with the upload.
    Unknown,
}

/// What a registry demands of every upload.
#[derive(Clone, Copy, Debug)]
pub struct Policy {
    /// The largest archive, and the largest sum of its file sizes.
    pub max_skill_bytes: u64,
    /// Whether unsigned uploads are refused.
    pub require_signatures: bool,
    /// The audit severity at which an upload is refused; `None` records
    /// the audit's verdict and refuses nothing.
    pub audit_refuse: Option<audit::Severity>,
}

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
    #[error(
        "{subject} is not signed, and this registry requires signatures: create a key with `skillpkg key generate`, then publish again (`skillpkg publish` signs with it)"
    )]
    Unsigned { subject: String },
    /// The signature does not hold; the cause says why.
    #[error("{subject}")]
    Signature {
        subject: String,
        #[source]
        source: SignatureError,
    },
    #[error(
        "{subject}: the signature was made by key {found}, which is not registered for `{name}` (registered: {registered})"
    )]
    UnregisteredKey {
        subject: String,
        name: String,
        found: KeyId,
        registered: String,
    },
    #[error("{subject} is signed, but no public key is registered for `{name}` to check it with")]
    NoKey { subject: String, name: String },
    /// The provenance does not hold; the cause says why.
    #[error("{subject}")]
    Provenance {
        subject: String,
        #[source]
        source: ProvenanceError,
    },
    #[error(
        "{subject}: provenance was sent without a signature; it must be signed by the key that signs the archive"
    )]
    UnsignedProvenance { subject: String },
    #[error("{subject}: the {what} is {size} bytes; this registry accepts at most {limit}")]
    AttachmentTooLarge {
        subject: String,
        what: &'static str,
        size: usize,
        limit: usize,
    },
    /// The signature or provenance holds a control character: they are
    /// stored and served as sent.
    #[error("{subject}")]
    Text {
        subject: String,
        #[source]
        source: TextError,
    },
    #[error("cannot create a temporary folder to check the archive")]
    Io(#[source] std::io::Error),
    #[error(
        "{subject} was refused by the registry's audit, which refuses {threshold} findings: {}; fix them, or publish to a registry that accepts them (docs/security.md lists the rules)",
        summarise_findings(.findings)
    )]
    Audit {
        subject: String,
        threshold: audit::Severity,
        findings: Vec<Finding>,
    },
    #[error("cannot audit the unpacked archive")]
    AuditFailed(#[source] audit::AuditError),
}

/// The findings a refused upload is told about, one clause each.
fn summarise_findings(findings: &[Finding]) -> String {
    findings
        .iter()
        .map(|finding| {
            let place = match (finding.line, finding.column) {
                (Some(line), Some(column)) => format!("{}:{line}:{column}", finding.file),
                _ => finding.file.clone(),
            };
            format!(
                "{place}: {} [{} {}]",
                finding.message, finding.severity, finding.rule
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
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

/// Checks an archive uploaded as `name@version` and returns its index line,
/// whose `signer` is the id of the key that verifiably signed it.
///
/// The signature and provenance are checked first, then the archive is
/// unpacked with the hardened unpacker into a temporary folder (removed on
/// return) and validated; errors refuse it, warnings do not. The caller
/// checks ownership and that the version is new, and registers the key of
/// [`SignerKeys::FirstUse`].
pub fn verify_archive(
    upload: &Upload<'_>,
    keys: SignerKeys<'_>,
    policy: &Policy,
    published: Timestamp,
) -> Result<IndexRecord, PublishError> {
    let Upload {
        name,
        version,
        tarball,
        ..
    } = *upload;
    let max_skill_bytes = policy.max_skill_bytes;
    if tarball.len() as u64 > max_skill_bytes {
        return Err(PublishError::TooLarge {
            size: tarball.len() as u64,
            limit: max_skill_bytes,
        });
    }
    let signer = verify_signing(upload, keys, policy)?;
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
    if let Some(declared) = &frontmatter.version
        && declared != version
    {
        return Err(PublishError::VersionMismatch {
            requested: version.to_string(),
            found: declared.to_string(),
        });
    }
    // The same audit as `skillpkg audit` and the client's at install: the
    // verdict is recorded in the index line, covered by signed metadata.
    let audited = audit::audit_folder(&target, &AuditOptions::default())
        .map_err(PublishError::AuditFailed)?;
    if let Some(threshold) = policy.audit_refuse
        && audited.verdict().reaches(threshold)
    {
        return Err(PublishError::Audit {
            subject: format!("{name}@{version}"),
            threshold,
            findings: audited
                .findings
                .into_iter()
                .filter(|finding| finding.severity >= threshold)
                .collect(),
        });
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
        audit: Some(audited.summary()),
    })
}

/// Checks the signature and provenance of an upload, and returns the id of
/// the key that signed it (`None` for an unsigned upload).
fn verify_signing(
    upload: &Upload<'_>,
    keys: SignerKeys<'_>,
    policy: &Policy,
) -> Result<Option<String>, PublishError> {
    let subject = || format!("{}@{}", upload.name, upload.version);
    let Some(signature) = upload.signature else {
        if upload.provenance.is_some() {
            return Err(PublishError::UnsignedProvenance { subject: subject() });
        }
        if policy.require_signatures {
            return Err(PublishError::Unsigned { subject: subject() });
        }
        return Ok(None);
    };
    for (what, bytes) in [
        ("signature", Some(signature)),
        ("provenance", upload.provenance),
    ] {
        let size = bytes.map_or(0, <[u8]>::len);
        if size > MAX_ATTACHMENT_BYTES {
            return Err(PublishError::AttachmentTooLarge {
                subject: subject(),
                what,
                size,
                limit: MAX_ATTACHMENT_BYTES,
            });
        }
    }
    let bad_signature = |source| PublishError::Signature {
        subject: subject(),
        source,
    };
    let text = std::str::from_utf8(signature)
        .map_err(|_| bad_signature(SignatureError::Malformed("it is not UTF-8 text")))?;
    // Stored byte for byte: its untrusted comment is the client's to fill.
    text::check_lines("the signature", text).map_err(|source| PublishError::Text {
        subject: subject(),
        source,
    })?;
    let (candidates, registered) = match keys {
        SignerKeys::Registered(keys) if !keys.is_empty() => (keys, true),
        SignerKeys::FirstUse(key) => (std::slice::from_ref(key), false),
        SignerKeys::Registered(_) | SignerKeys::Unknown => {
            // A malformed signature is reported as such, not as a missing key.
            text.parse::<skillpkg_index::signing::Signature>()
                .map_err(bad_signature)?;
            return Err(PublishError::NoKey {
                subject: subject(),
                name: upload.name.to_string(),
            });
        }
    };
    let verified = verify_skill(
        upload.tarball,
        text,
        candidates,
        upload.name,
        upload.version,
    )
    .map_err(|error| match error {
        SignatureError::OtherKey { found, expected } if registered => {
            PublishError::UnregisteredKey {
                subject: subject(),
                name: upload.name.to_string(),
                found,
                registered: expected,
            }
        }
        other => bad_signature(other),
    })?;
    if let Some(provenance) = upload.provenance {
        let key = candidates
            .iter()
            .find(|key| key.id() == verified.key_id)
            .expect("verify_skill returns the id of one of the keys");
        let bad_provenance = |source| PublishError::Provenance {
            subject: subject(),
            source,
        };
        let text = std::str::from_utf8(provenance).map_err(|_| {
            bad_provenance(ProvenanceError::Malformed("it is not UTF-8 text".into()))
        })?;
        text::check_json_lines("the provenance", text).map_err(|source| PublishError::Text {
            subject: subject(),
            source,
        })?;
        verify_provenance(text, key, &verified.comment.sha256).map_err(bad_provenance)?;
    }
    Ok(Some(verified.key_id.to_string()))
}

/// A new name too like one the registry already has: it looks the same to
/// a reader, or it is one typing slip from a popular skill's name.
#[derive(Debug, thiserror::Error)]
#[error(
    "`{name}` {} `{existing}`, {}: a new skill under a name that close could be taken for it. Choose another name; an owner of `{existing}` may publish it",
    likeness.phrase(),
    describe_existing(*likeness, *downloads)
)]
pub struct ConfusableName {
    /// The name asked for.
    pub name: String,
    /// The skill it could be taken for.
    pub existing: String,
    pub likeness: Likeness,
    /// How many downloads `existing` has.
    pub downloads: u64,
}

fn describe_existing(likeness: Likeness, downloads: u64) -> String {
    match likeness {
        Likeness::LooksAlike => {
            "once look-alike characters (`rn` and `m`, `1` and `l`, `0` and `o`) and hyphens are set aside"
                .to_owned()
        }
        Likeness::LooksSimilar => {
            "once look-alike letters (`i` and `l`, `q` and `g`, `vv` and `w`, `cl` and `d`) are read as one and hyphens set aside, to one letter at most"
                .to_owned()
        }
        Likeness::OneEdit => format!("a skill downloaded {downloads} times from this registry"),
    }
}

/// Refuses `name`, the first publish of a new name, when it looks like (or
/// looks similar to) a name of `existing` (each with its download count),
/// or is one edit from one with at least `min_downloads` downloads. Names `owned` by the
/// publisher are exempt: an owner may publish variants of their own name.
/// A look-alike is reported before a one-edit name, and of each the first
/// in `existing`'s order.
pub fn check_new_name<'a>(
    name: &SkillName,
    existing: impl IntoIterator<Item = (&'a SkillName, u64)>,
    owned: &dyn Fn(&SkillName) -> bool,
    min_downloads: u64,
) -> Result<(), ConfusableName> {
    let mut one_edit = None;
    for (other, downloads) in existing {
        let Some(likeness) = confusable::likeness(name.as_str(), other.as_str()) else {
            continue;
        };
        let refused = ConfusableName {
            name: name.to_string(),
            existing: other.to_string(),
            likeness,
            downloads,
        };
        match likeness {
            Likeness::LooksAlike | Likeness::LooksSimilar if !owned(other) => {
                return Err(refused);
            }
            Likeness::OneEdit
                if one_edit.is_none() && downloads >= min_downloads && !owned(other) =>
            {
                one_edit = Some(refused);
            }
            _ => {}
        }
    }
    one_edit.map_or(Ok(()), Err)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[(&str, u64)]) -> Vec<(SkillName, u64)> {
        list.iter()
            .map(|(name, downloads)| (name.parse().unwrap(), *downloads))
            .collect()
    }

    fn check(name: &str, existing: &[(SkillName, u64)], owned: &[&str]) -> Result<(), String> {
        let owned: Vec<SkillName> = owned.iter().map(|name| name.parse().unwrap()).collect();
        check_new_name(
            &name.parse().unwrap(),
            existing.iter().map(|(name, downloads)| (name, *downloads)),
            &|other| owned.contains(other),
            100,
        )
        .map_err(|refused| refused.to_string())
    }

    #[test]
    fn a_look_alike_is_refused_whatever_the_popularity_and_a_typo_only_of_a_popular_name() {
        let existing = names(&[
            ("modern-css", 0),
            ("pdf-processing", 100),
            ("csv-tools", 99),
        ]);
        let error = check("rnodern-css", &existing, &[]).unwrap_err();
        assert!(
            error.starts_with("`rnodern-css` looks like `modern-css`"),
            "{error}"
        );
        let error = check("pdf-procesing", &existing, &[]).unwrap_err();
        assert!(
            error.starts_with(
                "`pdf-procesing` is one edit from `pdf-processing`, a skill downloaded 100 times"
            ),
            "{error}"
        );
        assert!(error.contains("Choose another name"), "{error}");
        // 99 downloads is under the threshold of 100.
        assert_eq!(check("csv-tool", &existing, &[]), Ok(()));
        assert_eq!(check("json-tools", &existing, &[]), Ok(()));
    }

    #[test]
    fn a_name_that_looks_similar_is_refused_whatever_the_popularity() {
        let existing = names(&[("pdf-processing", 0), ("docx-wild", 0), ("csv-tools", 0)]);
        for (name, like) in [
            ("pdf-processlng", "pdf-processing"),
            ("pdf-processinq", "pdf-processing"),
            ("pdf-proceslng", "pdf-processing"),
            ("docx-vvild", "docx-wild"),
        ] {
            let error = check(name, &existing, &[]).unwrap_err();
            assert!(
                error.starts_with(&format!(
                    "`{name}` looks like `{like}`, once look-alike letters (`i` and `l`, `q` and `g`, `vv` and `w`, `cl` and `d`) are read as one"
                )),
                "{error}"
            );
        }
        // Names of their own, and typos of names nobody downloads.
        for name in [
            "pdf-tools",
            "pdf-procesing",
            "docx-mild",
            "csv-tool",
            "csv-insights",
            "json-tools",
        ] {
            assert_eq!(check(name, &existing, &[]), Ok(()), "{name}");
        }
        assert_eq!(
            check("pdf-processlng", &existing, &["pdf-processing"]),
            Ok(()),
            "its owner may"
        );
    }

    #[test]
    fn the_owner_of_the_existing_name_is_exempt() {
        let existing = names(&[("pdf-processing", 1000)]);
        assert_eq!(
            check("pdf-processing2", &existing, &["pdf-processing"]),
            Ok(())
        );
        assert_eq!(
            check("pdfprocessing", &existing, &["pdf-processing"]),
            Ok(())
        );
        assert!(check("pdfprocessing", &existing, &["other"]).is_err());
    }
}
