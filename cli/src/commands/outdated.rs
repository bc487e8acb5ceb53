//! `skillpkg outdated`: locked versions against what the registry has.

use serde_json::json;
use skillpkg_index::registry::latest;

use crate::args::OutdatedArgs;
use crate::client::registries::{OpenRegistries, Registries};
use crate::client::registry;
use crate::client::settings::Environment;
use crate::commands::install::project_root;
use crate::error::{ExitStatus, UserError};
use crate::printer::Printer;
use crate::project::{lockfile, manifest};

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
    let rows = registry::block_on(async {
        let mut opened = OpenRegistries::new(&registries);
        let mut rows = Vec::new();
        // Skills from folders and repositories have no versions to compare.
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
            rows.push((
                entry.name.to_string(),
                entry.version.clone(),
                wanted,
                newest,
            ));
        }
        anyhow::Ok(rows)
    })??;
    let outdated: Vec<_> = rows
        .iter()
        .filter(|(_, current, wanted, newest)| {
            wanted.as_ref().is_some_and(|w| w > current)
                || newest.as_ref().is_some_and(|n| n > current)
        })
        .collect();
    if args.json {
        printer.json(&outdated.iter().map(|(name, current, wanted, newest)| json!({
            "name": name, "current": current.to_string(), "wanted": wanted.as_ref().map(ToString::to_string), "latest": newest.as_ref().map(ToString::to_string),
        })).collect::<Vec<_>>());
        return Ok(ExitStatus::Success);
    }
    // Said, not silently counted as up to date: nothing compares them.
    let direct: Vec<String> = lock
        .skills
        .iter()
        .filter(|entry| entry.is_direct())
        .map(|entry| entry.name.to_string())
        .collect();
    if !direct.is_empty() {
        printer.diagnostic(&format!(
            "note: not checked: {} (from folders, git repositories or URLs; `skillpkg update NAME` takes what they hold now)",
            direct.join(", ")
        ));
    }
    if outdated.is_empty() {
        printer.result(if direct.is_empty() {
            "every skill is up to date"
        } else {
            "every skill from a registry is up to date"
        });
        return Ok(ExitStatus::Success);
    }
    let show = |version: &Option<semver::Version>| {
        version
            .as_ref()
            .map_or_else(|| "-".to_owned(), ToString::to_string)
    };
    printer.result(&format!(
        "{:<30} {:<12} {:<12} {}",
        "name", "current", "wanted", "latest"
    ));
    for (name, current, wanted, newest) in outdated {
        printer.result(&format!(
            "{name:<30} {:<12} {:<12} {}",
            current.to_string(),
            show(wanted),
            show(newest)
        ));
    }
    Ok(ExitStatus::Success)
}
