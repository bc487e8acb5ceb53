//! `skillpkg publish`: validate and pack a skill like `pack`, then upload it.

use serde_json::json;
use skillpkg_index::archive::{PackedSkill, human_bytes, tree_hash::hex};
use skillpkg_index::checksum::Checksum;

use crate::args::PublishArgs;
use crate::client::registries::{Access, Registries, RegistrySpec};
use crate::client::registry::{self, Action, Attachments, Registry};
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
    // The registry's config.json is read while the skill is validated and
    // packed on another thread: the two wait on different things.
    let (packed_sender, packing) = tokio::sync::oneshot::channel();
    std::thread::scope(|scope| {
        scope.spawn(move || {
            let packed = validate_and_pack(&args.path, args.version.as_ref(), args.json, printer);
            // The receiver is gone only if the upload side failed already.
            let _ = packed_sender.send(packed);
        });
        registry::block_on(async {
            let (packed, registry) = packed_and_opened(&registries, spec, packing).await?;
            let attachments = attachments(args, key.as_ref(), &packed)?;
            upload(args, &registry, token, &packed, attachments, printer).await
        })?
    })
}

/// Waits for the packed skill and the opened registry. A skill that cannot
/// be packed is reported as soon as that is known, even while the registry
/// is still being reached; a skill's error comes before a registry's.
async fn packed_and_opened(
    registries: &Registries,
    spec: &RegistrySpec,
    mut packing: tokio::sync::oneshot::Receiver<anyhow::Result<Packed>>,
) -> anyhow::Result<(PackedSkill, Registry)> {
    let packed = |received: Result<anyhow::Result<Packed>, _>| -> anyhow::Result<PackedSkill> {
        let Packed { skill, .. } =
            received.map_err(|_| anyhow::anyhow!("packing the skill stopped"))??;
        Ok(skill)
    };
    let opening = registries.open(spec, Access::Write);
    tokio::pin!(opening);
    tokio::select! {
        received = &mut packing => {
            let packed = packed(received)?;
            Ok((packed, opening.await?))
        }
        opened = &mut opening => {
            let packed = packed(packing.await)?;
            Ok((packed, opened?))
        }
    }
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
    registry: &Registry,
    token: Option<Token>,
    packed: &PackedSkill,
    attachments: Attachments,
    printer: &Printer,
) -> anyhow::Result<ExitStatus> {
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
        format!("checksum: sha256:{}", hex(&packed.sha256)),
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
