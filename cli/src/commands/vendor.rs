//! `skillpkg vendor DIR`: everything skills.lock needs, as a static tree
//! that installs with no network (`--registry DIR`).
//!
//! Each archive is fetched (or read from the cache) and checked against the
//! lock's sha256 and pinned signer before it is written, exactly as an
//! install would; the tree is built in a temporary folder beside DIR and
//! renamed into place, so a failure leaves nothing.

use std::path::Path;

use anyhow::Context as _;
use serde_json::json;
use skillpkg_index::registry::tree::StaticTree;
use skillpkg_index::registry::{KeysFile, RegistryConfig, keys_path, provenance_path};

use crate::args::VendorArgs;
use crate::client::registries::{OpenRegistries, Registries};
use crate::client::registry;
use crate::client::settings::Environment;
use crate::client::{Cache, Expected, Source, fetch_verified};
use crate::commands::install::project_root;
use crate::error::{ExitStatus, UserError};
use crate::printer::Printer;
use crate::project::{lockfile, manifest};

pub fn run(args: &VendorArgs, printer: &Printer) -> anyhow::Result<ExitStatus> {
    let root = project_root()?;
    let manifest = manifest::read(&root)?;
    let lock = lockfile::read(&root)?.ok_or_else(|| {
        UserError::new("there is no skills.lock to vendor")
            .with_hint("run `skillpkg install` first")
    })?;
    let registries = Registries::load(
        Environment::from_process(),
        Some(&manifest.registry_config()),
        args.registry.registry.as_deref(),
    )?;
    let out = &args.dir;
    if out.exists() && fs_err::read_dir(out)?.next().is_some() {
        return Err(
            UserError::new(format!("{} already exists and is not empty", out.display()))
                .with_hint("give a new folder")
                .into(),
        );
    }
    let parent = out
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    fs_err::create_dir_all(parent)?;
    let staging = tempfile::Builder::new()
        .prefix(".skillpkg-vendor-")
        .tempdir_in(parent)
        .context("cannot create a temporary folder")?;
    let tree = StaticTree::new(staging.path());
    let cache = Cache::open()?;
    let mut skipped = Vec::new();
    registry::block_on(async {
        let mut opened = OpenRegistries::new(&registries);
        if lock.skills.is_empty() {
            opened.open(registries.default_name()).await?;
        }
        for entry in &lock.skills {
            if entry.is_direct() {
                // A vendored tree is a registry's: a skill from a folder
                // or a repository has no index line or signature to copy.
                skipped.push(format!("{} ({})", entry.name, entry.source));
                continue;
            }
            let registry = opened.open(entry.require_registry()?).await?;
            let records = registry.index(&entry.name).await?;
            let record = records
                .iter()
                .find(|record| entry.version == record.vers)
                .ok_or_else(|| {
                    UserError::new(format!(
                        "{}@{} is locked but not in the registry's index",
                        entry.name, entry.version
                    ))
                })?;
            let archive = fetch_verified(
                Source {
                    cache: Some(&cache),
                    registry: Some(registry),
                    keys: None,
                    offline: false,
                },
                &Expected {
                    name: &entry.name,
                    version: entry.version.semver(),
                    checksum: entry.require_checksum()?,
                    signer: entry.signer,
                    pinned_by: "skills.lock",
                },
            )
            .await?;
            tree.write_archive(
                &entry.name,
                entry.version.semver(),
                archive.bytes(),
                archive.signature().map(str::as_bytes),
                record.published,
            )?;
            if let Some(provenance) = registry
                .file(&provenance_path(&entry.name, entry.version.semver()))
                .await?
            {
                tree.write_file(
                    &provenance_path(&entry.name, entry.version.semver()),
                    &provenance,
                )?;
            }
            if let Some(keys) = registry.file(&keys_path(&entry.name)).await? {
                let keys = KeysFile::parse(&keys).map_err(|error| {
                    UserError::new(format!(
                        "{}: the registry's key file is not valid",
                        entry.name
                    ))
                    .with_source(error)
                })?;
                tree.write_keys(&entry.name, &keys)?;
            }
            // Only the locked version: the vendored tree resolves to the lock.
            tree.write_index(&entry.name, std::slice::from_ref(record))?;
        }
        // One tree for the skills of every registry the lock names: it
        // requires signatures only if they all do, and allows the largest
        // archive any of them does.
        let config = RegistryConfig {
            require_signatures: opened
                .all()
                .all(|registry| registry.config().require_signatures),
            ..RegistryConfig::read_only(
                opened
                    .all()
                    .map(|registry| registry.config().max_skill_bytes)
                    .max()
                    .unwrap_or_default(),
            )
        };
        tree.write_config(&config)?;
        anyhow::Ok(())
    })??;
    if out.exists() {
        fs_err::remove_dir(out)?;
    }
    fs_err::rename(staging.keep(), out)?;
    let vendored = lock.skills.len() - skipped.len();
    if args.json {
        printer.json(&json!({ "dir": out, "skills": vendored, "skipped": skipped }));
    } else {
        printer.status(
            "Vendored",
            &format!("{vendored} skills into {}", out.display()),
        );
        for skipped in &skipped {
            printer.diagnostic(&format!(
                "note: left out {skipped}: it comes from a folder or a repository, not a registry, and installs from there"
            ));
        }
        printer.result(&format!(
            "install from it with: skillpkg install --locked --registry {}",
            out.display()
        ));
        // skills.lock names registries, not URLs: pointing each one at the
        // vendored tree leaves the lock as it is.
        let mut others: Vec<&str> = lock
            .skills
            .iter()
            .filter_map(|entry| entry.registry())
            .filter(|name| *name != registries.default_name())
            .collect();
        others.sort_unstable();
        others.dedup();
        for name in others {
            printer.result(&format!(
                "and set `index = \"{}\"` in `[registries.{name}]`",
                out.display()
            ));
        }
    }
    Ok(ExitStatus::Success)
}
