//! `skillpkg publish`: validate and pack a skill like `pack`, then upload it.

use serde_json::json;
use skillpkg_index::archive::{PackedSkill, human_bytes, tree_hash::hex};
use skillpkg_index::checksum::Checksum;

use crate::args::PublishArgs;
use crate::client::registries::{Access, Registries, RegistrySpec};
use crate::client::registry::{self, Action, Attachments};
use crate::client::registry_url::{RegistryUrl, redacted};
use crate::client::settings::Environment;
use crate::client::token::Token;
use crate::commands::pack::{Packed, validate_and_pack};
use crate::commands::registries_here;
use crate::error::ExitStatus;
use crate::printer::Printer;
use crate::{provenance, signing_key};
use skillpkg_index::signing::{SecretKey, Signature, TrustedComment, sign_provenance};

pub fn run(args: &PublishArgs, printer: &Printer) -> anyhow::Result<ExitStatus> {
    let environment = Environment::from_process();
    let registries = registries_here(args.registry.registry.as_deref())?
        .with_token_flag(args.token.token.clone());
    let spec = registries.default_registry()?;
    // Settings first: a missing token is reported before any work is done.
    let token = if args.dry_run {
        registries.token(spec, &spec.index)?
    } else {
        Some(registries.require_token(spec)?)
    };
    // The key before the work too: a password prompt comes first.
    let key = if args.no_sign {
        None
    } else if args.dry_run {
        signing_key::load(args.key.as_deref(), &environment, printer)?
    } else {
        Some(signing_key::require(args.key.as_deref(), &environment, printer).map_err(|error| {
            error.context("publish signs every version: give it a key, or pass --no-sign to publish unsigned")
        })?)
    };
    let Packed { skill: packed, .. } =
        validate_and_pack(&args.path, args.version.as_ref(), args.json, printer)?;
    let attachments = attachments(args, key.as_ref(), &packed)?;
    registry::block_on(upload(
        args,
        &registries,
        spec,
        token,
        &packed,
        attachments,
        printer,
    ))?
}

/// Signs the archive (and its provenance) with `key`.
fn attachments(
    args: &PublishArgs,
    key: Option<&SecretKey>,
    packed: &PackedSkill,
) -> anyhow::Result<Attachments> {
    let Some(key) = key else {
        return Ok(Attachments::default());
    };
    let sha256 = Checksum::from_digest(packed.sha256);
    let comment = TrustedComment {
        name: packed.name.clone(),
        version: packed.version.clone(),
        sha256,
    };
    let signature = Signature::sign(key, &packed.tarball, &comment.to_string()).to_file();
    let provenance = if args.provenance {
        let source = provenance::gather(&args.path, args.allow_dirty)?;
        Some(sign_provenance(key, &packed.file_name(), &sha256, &source))
    } else {
        None
    };
    Ok(Attachments {
        signature: Some(signature),
        key: Some(key.public().to_base64()),
        provenance,
    })
}

async fn upload(
    args: &PublishArgs,
    registries: &Registries,
    spec: &RegistrySpec,
    token: Option<Token>,
    packed: &PackedSkill,
    attachments: Attachments,
    printer: &Printer,
) -> anyhow::Result<ExitStatus> {
    let registry = registries.open(spec, Access::Write).await?;
    let api = registry.api(Action::Publish)?;
    let url = redacted(&api.publish_url());
    // Without --dry-run, `run` made sure there is a token.
    let Some(token) = token.filter(|_| !args.dry_run) else {
        if args.json {
            printer.json(&dry_run_json(packed, registry.url(), &url));
        } else {
            printer.result(&dry_run_text(packed, &url));
            printer.status(
                "Dry run",
                &format!(
                    "{} {} was not uploaded to {}",
                    packed.name,
                    packed.version,
                    registry.url()
                ),
            );
        }
        return Ok(ExitStatus::Success);
    };
    let published = api
        .publish(
            &token,
            &packed.name,
            &packed.version,
            packed.tarball.clone(),
            attachments,
        )
        .await?;
    printer.status(
        "Published",
        &format!("{} {} to {}", packed.name, packed.version, registry.url()),
    );
    let checksum = Checksum::from_digest(packed.sha256);
    if published.record.cksum != checksum {
        printer.diagnostic(&format!(
            "warning: the registry recorded the checksum {}, but the uploaded tarball's is {checksum}",
            published.record.cksum
        ));
    }
    if args.json {
        printer.json_text(&published.line);
    } else {
        printer.result(&format!("checksum: {}", published.record.cksum));
    }
    Ok(ExitStatus::Success)
}

fn dry_run_text(packed: &PackedSkill, api_url: &str) -> String {
    let size = packed.tarball.len() as u64;
    [
        format!("name:     {}", packed.name),
        format!("version:  {}", packed.version),
        format!("files:    {}", packed.files.len()),
        format!("size:     {} ({size} bytes)", human_bytes(size)),
        format!("sha256:   sha256:{}", hex(&packed.sha256)),
        format!("tree:     {}", packed.tree),
        format!("upload:   PUT {api_url}"),
    ]
    .join("\n")
}

fn dry_run_json(packed: &PackedSkill, registry: &RegistryUrl, api_url: &str) -> serde_json::Value {
    json!({
        "dry_run": true,
        "name": packed.name,
        "version": packed.version.to_string(),
        "files": packed.files.len(),
        "size": packed.tarball.len(),
        "sha256": format!("sha256:{}", hex(&packed.sha256)),
        "tree": packed.tree.as_str(),
        "registry": registry.to_string(),
        "upload": api_url,
    })
}
