//! `skillpkg outdated`: locked versions against what the registry has,
//! and git skills against where their branch and tags are now.

use serde_json::json;
use skillpkg_index::registry::latest;

use crate::args::OutdatedArgs;
use crate::client::registries::{OpenRegistries, Registries};
use crate::client::registry;
use crate::client::settings::Environment;
use crate::commands::install::project_root;
use crate::error::{ExitStatus, UserError};
use crate::printer::Printer;
use crate::project::source::{self, Direct};
use crate::project::{git, lockfile, manifest};

/// One skill that may be outdated: its locked version; the version its
/// requirement (or its git entry's `rev`) takes now, when newer; the
/// newest there is, when newer.
struct Row {
    name: String,
    current: String,
    wanted: Option<String>,
    latest: Option<String>,
    /// Whether `wanted` or `latest` is newer than `current`.
    outdated: bool,
}

pub fn run(args: &OutdatedArgs, printer: &Printer) -> anyhow::Result<ExitStatus> {
    let root = project_root()?;
    let manifest = manifest::read(&root)?;
    let lock = lockfile::read(&root)?.ok_or_else(|| {
        UserError::new("there is no skills.lock yet").with_hint("run `skillpkg install`")
    })?;
    let registries = Registries::load(
        Environment::from_process(),
        Some(&manifest.registry_config()),
        args.registry.registry.as_deref(),
    )?;
    let mut rows = registry::block_on(async {
        let mut opened = OpenRegistries::new(&registries);
        let mut rows = Vec::new();
        for entry in lock.skills.iter().filter(|entry| !entry.is_direct()) {
            let registry = opened.open(entry.require_registry()?).await?;
            let records = registry.index(&entry.name).await?;
            let wanted = manifest.skills.get(&entry.name).and_then(|requirement| {
                records
                    .iter()
                    .filter(|record| {
                        !record.yanked && requirement.requirement.matches(&record.vers)
                    })
                    .map(|record| record.vers.clone())
                    .max()
            });
            let newest = latest(&records).map(|record| record.vers.clone());
            let current = entry.version.semver();
            let newer = |version: &Option<semver::Version>| {
                version.as_ref().is_some_and(|version| version > current)
            };
            rows.push(Row {
                name: entry.name.to_string(),
                current: entry.version.to_string(),
                outdated: newer(&wanted) || newer(&newest),
                wanted: wanted.map(|version| version.to_string()),
                latest: newest.map(|version| version.to_string()),
            });
        }
        anyhow::Ok(rows)
    })??;
    // Skills from git: a moved branch, and a newer tag.
    for (name, source) in &manifest.direct {
        let (Direct::Git(git), Some(entry)) = (source, lock.get(name)) else {
            continue;
        };
        if !source.locked_by(entry) {
            continue;
        }
        let Some(locked_commit) = source::locked_commit(&entry.source) else {
            continue;
        };
        printer.status("Fetching", &git.url);
        let now = git::refs_now(git, &git.location(&root))?;
        // Moved, or a tag that reads as a higher version than the locked
        // one (or than none).
        let current_tag = lockfile::tag_version(&entry.version.to_string());
        let newer_tag = now
            .newest_tag
            .as_deref()
            .and_then(lockfile::tag_version)
            .is_some_and(|newest| current_tag.as_ref().is_none_or(|current| &newest > current));
        rows.push(Row {
            name: name.to_string(),
            current: entry.version.to_string(),
            outdated: now.commit != locked_commit || newer_tag,
            wanted: Some(now.label.to_string()),
            latest: now.newest_tag,
        });
    }
    let outdated: Vec<&Row> = rows.iter().filter(|row| row.outdated).collect();
    if args.json {
        printer.json(&outdated.iter().map(|row| json!({
            "name": row.name, "current": row.current, "wanted": row.wanted, "latest": row.latest,
        })).collect::<Vec<_>>());
        return Ok(ExitStatus::Success);
    }
    // Said, not silently counted as up to date: nothing compares them.
    let unchecked: Vec<String> = lock
        .skills
        .iter()
        .filter(|entry| entry.is_direct() && !entry.source.starts_with(lockfile::GIT_SOURCE_PREFIX))
        .map(|entry| entry.name.to_string())
        .collect();
    if !unchecked.is_empty() {
        printer.diagnostic(&format!(
            "note: not checked: {} (from folders or URLs; `skillpkg update NAME` takes what they hold now)",
            unchecked.join(", ")
        ));
    }
    if outdated.is_empty() {
        printer.result(if unchecked.is_empty() {
            "every skill is up to date"
        } else {
            "every skill from a registry or a git repository is up to date"
        });
        return Ok(ExitStatus::Success);
    }
    let show = |value: &Option<String>| value.clone().unwrap_or_else(|| "-".to_owned());
    printer.result(&format!(
        "{:<30} {:<12} {:<12} {}",
        "name", "current", "wanted", "latest"
    ));
    for row in outdated {
        printer.result(&format!(
            "{:<30} {:<12} {:<12} {}",
            row.name,
            row.current,
            show(&row.wanted),
            show(&row.latest)
        ));
    }
    Ok(ExitStatus::Success)
}
