//! `skillpkg verify`: check who signed an archive, and where it was built.
//!
//! Locally (`verify FILE.tgz --key KEY`) or from a registry
//! (`verify NAME@VERSION`), the order is the installer's: signature and
//! checksum first, over the bytes as they are; only then is anything unpacked.

use std::path::{Path, PathBuf};

use serde_json::json;
use skillpkg_index::checksum::Checksum;
use skillpkg_index::registry::provenance_path;
use skillpkg_index::signing::{
    Provenance, PublicKey, Signature, SignerKey, SignerPin, TrustedComment, verify_provenance,
};
use skillpkg_index::skill::SkillName;

use crate::args::VerifyArgs;
pub use crate::client::fetch::registry_provenance;
use crate::client::fetch::{check_signature, registry_keys};
use crate::client::registries::{Access, Registries, RegistrySpec};
use crate::client::registry;
use crate::client::{Expected, Source, fetch_verified};
use crate::commands::registries_here;
use crate::error::{ExitStatus, UserError};
use crate::printer::Printer;
use crate::spec::SkillSpec;
use crate::{signing_key, skill_archive};

/// What a verification established.
struct Outcome {
    name: SkillName,
    version: semver::Version,
    sha256: Checksum,
    key: PublicKey,
    provenance: Option<Provenance>,
}

pub fn run(args: &VerifyArgs, printer: &Printer) -> anyhow::Result<ExitStatus> {
    let Some(target) = &args.target else {
        return crate::commands::list::verify_installed(args.json, args.global, printer);
    };
    let local = Path::new(target);
    let outcome = if target.ends_with(".tgz") || local.is_file() {
        verify_local(args, local)?
    } else {
        let spec: SkillSpec = target.parse().map_err(|error| {
            UserError::new(format!(
                "`{target}` is neither an archive file nor NAME[@VERSION]"
            ))
            .with_source(error)
        })?;
        let registries = registries_here(args.registry.registry.as_deref())?;
        let registry = registries.default_registry()?;
        registry::block_on(verify_remote(&registries, registry, spec))??
    };
    report(&outcome, args.json, printer);
    Ok(ExitStatus::Success)
}

fn refused(
    name: &str,
    version: &str,
    error: impl std::error::Error + Send + Sync + 'static,
) -> anyhow::Error {
    UserError::new(format!("{name}@{version} failed verification"))
        .with_source(error)
        .into()
}

fn verify_local(args: &VerifyArgs, file: &Path) -> anyhow::Result<Outcome> {
    let tarball = fs_err::read(file).map_err(|error| {
        UserError::new(format!("cannot read {}", file.display())).with_source(error)
    })?;
    let signature_file = args
        .sig
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("{}.minisig", file.display())));
    let signature = fs_err::read_to_string(&signature_file).map_err(|error| {
        UserError::new(format!(
            "{} is not signed: cannot read {}",
            file.display(),
            signature_file.display()
        ))
        .with_hint("pass the signature with --sig FILE.minisig")
        .with_source(error)
    })?;
    let key = match &args.key {
        Some(key) => signing_key::public_key(key)?,
        None => {
            return Err(UserError::new(
                "verifying a local archive needs the publisher's public key",
            )
            .with_hint("pass --key with a public key file or its base64 line (RW...)")
            .into());
        }
    };
    // What the signature claims, checked against the bytes before anything
    // is unpacked.
    let claimed: TrustedComment = signature
        .parse::<Signature>()
        .and_then(|parsed| parsed.trusted_comment().parse())
        .map_err(|error| refused(&file.display().to_string(), "?", error))?;
    // The one signature check every archive goes through, here with the
    // key the user gave.
    // The one key given is the one tried, so its id names it: the
    // messages then tell another key's signature from changed bytes.
    let signer = SignerPin::Id(key.id());
    check_signature(
        &tarball,
        signature,
        std::slice::from_ref(&key),
        &Expected {
            name: &claimed.name,
            version: &claimed.version,
            checksum: Checksum::of(&tarball),
            signer: Some(signer),
            pinned_by: "--key",
        },
    )?;
    // Only now: does the archive hold the skill the signature names?
    let identity = skill_archive::identify(&tarball, file)?;
    let declared = identity
        .declared_version
        .as_ref()
        .unwrap_or(&claimed.version);
    if identity.name != claimed.name || declared != &claimed.version {
        return Err(UserError::new(format!(
            "{} holds {}@{}, but its signature is for {}@{}",
            file.display(),
            identity.name,
            declared,
            claimed.name,
            claimed.version
        ))
        .into());
    }
    let provenance_file = args.provenance.clone().unwrap_or_else(|| {
        file.with_file_name(format!("{}-{}.intoto.jsonl", claimed.name, claimed.version))
    });
    let provenance = match fs_err::read_to_string(&provenance_file) {
        Ok(text) => Some(
            verify_provenance(&text, &key, &claimed.sha256).map_err(|error| {
                refused(claimed.name.as_str(), &claimed.version.to_string(), error)
            })?,
        ),
        Err(_) if args.provenance.is_none() => None,
        Err(error) => {
            return Err(
                UserError::new(format!("cannot read {}", provenance_file.display()))
                    .with_source(error)
                    .into(),
            );
        }
    };
    Ok(Outcome {
        name: claimed.name,
        version: claimed.version,
        sha256: claimed.sha256,
        key,
        provenance,
    })
}

async fn verify_remote(
    registries: &Registries,
    source: &RegistrySpec,
    spec: SkillSpec,
) -> anyhow::Result<Outcome> {
    let registry = registries.open(source, Access::Read).await?;
    let records = registry.index(&spec.name).await?;
    let record = match &spec.version {
        Some(version) => records
            .iter()
            .find(|record| &record.vers == version)
            .ok_or_else(|| {
                UserError::new(format!(
                    "{}@{version} is not published in {}",
                    spec.name,
                    registry.url()
                ))
            })?,
        None => skillpkg_index::registry::latest(&records)
            .unwrap_or_else(|| records.last().expect("an index has a version")),
    };
    let (name, version) = (record.name.clone(), record.vers.clone());
    let label = format!("{name}@{version}");
    let Some(signer) = record.signer_id() else {
        let why = if registry.config().require_signatures {
            format!(
                "{label} is not signed, and {} requires signatures: the registry should never have served it",
                registry.url()
            )
        } else {
            format!("{label} is not signed: there is no publisher to verify")
        };
        return Err(UserError::new(why).into());
    };
    let keys = registry_keys(&registry, &name).await?;
    if keys.is_empty() {
        return Err(UserError::new(format!(
            "{label}: the registry does not serve its publisher keys"
        ))
        .into());
    }
    // Always from the registry, never the cache: this checks what the
    // registry serves now.
    let archive = fetch_verified(
        Source {
            cache: None,
            registry: Some(&registry),
            keys: Some(&keys),
            offline: false,
        },
        &Expected {
            name: &name,
            version: &version,
            checksum: record.cksum,
            signer: Some(SignerPin::Id(signer)),
            pinned_by: "the index",
        },
    )
    .await?;
    let key = archive
        .signer()
        .expect("an archive verified against a signer has its key")
        .clone();
    let provenance = match registry.file(&provenance_path(&name, &version)).await? {
        Some(bytes) => {
            match verify_provenance(&String::from_utf8_lossy(&bytes), &key, &record.cksum) {
                Ok(provenance) => Some(provenance),
                Err(error) => return Err(refused(name.as_str(), &version.to_string(), error)),
            }
        }
        None => None,
    };
    Ok(Outcome {
        name,
        version,
        sha256: record.cksum,
        key,
        provenance,
    })
}

fn report(outcome: &Outcome, json: bool, printer: &Printer) {
    if json {
        printer.json(&json!({
            "name": outcome.name,
            "version": outcome.version.to_string(),
            "sha256": outcome.sha256,
            "signer": outcome.key.id().to_string(),
            "signer_key": SignerKey::of(&outcome.key).to_string(),
            "public_key": outcome.key.to_base64(),
            "provenance": outcome.provenance,
        }));
        return;
    }
    printer.status("Verified", &format!("{}@{}", outcome.name, outcome.version));
    let mut lines = vec![
        format!(
            "signed by:  {} (key id {}, minisign {})",
            SignerKey::of(&outcome.key),
            outcome.key.id(),
            outcome.key.to_base64()
        ),
        format!("sha256:     {}", outcome.sha256),
    ];
    match &outcome.provenance {
        Some(provenance) => lines.extend(provenance_lines(provenance)),
        None => lines.push("provenance: none".into()),
    }
    printer.result(&lines.join("\n"));
}

/// Describes a provenance statement in a few lines (also for `info`).
pub fn provenance_lines(provenance: &Provenance) -> Vec<String> {
    // The statement is the publisher's text, served by the registry.
    use crate::render::one_line;
    let source = &provenance.source;
    let mut lines = vec![format!(
        "source:     {}{}{}",
        source
            .repository
            .as_deref()
            .map_or_else(|| "(no repository)".to_owned(), one_line),
        source
            .commit
            .as_deref()
            .map(|commit| format!(" @ {}", one_line(commit)))
            .unwrap_or_default(),
        if source.dirty {
            " (with changes that were not committed)"
        } else {
            ""
        }
    )];
    lines.push(format!("built by:   {}", one_line(&source.builder)));
    if let Some(run) = &source.ci_run {
        lines.push(format!("CI run:     {}", one_line(run)));
    }
    lines
}
