//! `skillpkg list`, and `skillpkg verify` without a target: the installed
//! skills per target, checked against skills.lock.

use serde_json::json;

use crate::args::ListArgs;
use crate::commands::install::{project_targets, root_for};
use crate::error::{ExitStatus, UserError};
use crate::printer::Printer;
use crate::project::install;
use crate::project::plan::{OnDisk, folder_matches, read_folder};
use crate::project::{global, lockfile, manifest};

/// One installed skill and what its files say.
struct Row {
    target: String,
    name: String,
    version: String,
    locked: Option<String>,
    matches: bool,
    /// The symlink's text, for a skill installed as a link.
    link: Option<String>,
}

fn rows(global: bool) -> anyhow::Result<Vec<Row>> {
    // No skills added with --global yet: none installed.
    if global && !global::root()?.join(manifest::MANIFEST).is_file() {
        return Ok(Vec::new());
    }
    let root = root_for(global, false)?;
    let manifest = manifest::read(&root)?;
    let lock = lockfile::read(&root)?.unwrap_or_default();
    let mut rows = Vec::new();
    let targets = project_targets(&manifest, &[], &root, global, true)?;
    let links = install::link_paths(&targets, manifest.link)?;
    for (target, link_to) in targets.iter().zip(links) {
        let state = target.state()?;
        for (name, installed) in &state.skills {
            let locked = lock.get(name);
            let dir = target.dir.join(name.as_str());
            // A skill installed as a symlink is as locked while the link
            // holds the text skillpkg writes for this layout (not merely
            // what the record, a project file, says) and the copy it leads
            // to has the locked files.
            let expected = link_to.as_ref().map(|dir| format!("{dir}/{name}"));
            let matches = match (locked, &installed.link) {
                (None, _) => false,
                (Some(entry), None) => folder_matches(&dir, &entry.tree)?,
                (Some(entry), Some(link)) => {
                    expected.as_ref() == Some(link)
                        && read_folder(&dir)? == OnDisk::Link(link.clone())
                        && folder_matches(&target.dir.join(link), &entry.tree)?
                }
            };
            rows.push(Row {
                target: target.name.clone(),
                name: name.to_string(),
                version: installed.version.clone(),
                locked: locked.map(|entry| entry.version.to_string()),
                matches,
                link: installed.link.clone(),
            });
        }
    }
    Ok(rows)
}

pub fn run(args: &ListArgs, printer: &Printer) -> anyhow::Result<ExitStatus> {
    let rows = rows(args.global)?;
    if args.json {
        printer.json(&rows.iter().map(|row| json!({
            "target": row.target, "name": row.name, "version": row.version, "locked": row.locked, "matches_lock": row.matches, "link": row.link,
        })).collect::<Vec<_>>());
        return Ok(ExitStatus::Success);
    }
    for row in &rows {
        let state = if row.matches && row.link.is_some() {
            "ok (link)"
        } else if row.matches {
            "ok"
        } else if row.locked.is_none() {
            "not in skills.lock"
        } else {
            "CHANGED: files differ from skills.lock"
        };
        printer.result(&format!(
            "{:<10} {:<30} {:<10} {state}",
            row.target, row.name, row.version
        ));
    }
    printer.result(&format!("{} installed", rows.len()));
    Ok(ExitStatus::Success)
}

/// `skillpkg verify` with no target.
pub fn verify_installed(json: bool, global: bool, printer: &Printer) -> anyhow::Result<ExitStatus> {
    let rows = rows(global)?;
    let missing = missing(global)?;
    let changed: Vec<&Row> = rows.iter().filter(|row| !row.matches).collect();
    if json {
        printer.json(&json!({
            "verified": rows.len() - changed.len(),
            "changed": changed.iter().map(|row| json!({"target": row.target, "name": row.name})).collect::<Vec<_>>(),
            "missing": missing.iter().map(|(target, name)| json!({"target": target, "name": name})).collect::<Vec<_>>(),
        }));
    } else {
        for row in &changed {
            printer.result(&format!(
                "{} in {}: the files differ from skills.lock (edited or tampered with)",
                row.name, row.target
            ));
        }
        for (target, name) in &missing {
            printer.result(&format!(
                "{name} in {target}: missing (skills.lock has it, the folder does not)"
            ));
        }
        let mut summary = format!(
            "{} verified, {} changed",
            rows.len() - changed.len(),
            changed.len()
        );
        if !missing.is_empty() {
            summary.push_str(&format!(", {} missing", missing.len()));
        }
        printer.result(&summary);
    }
    if changed.is_empty() && missing.is_empty() {
        return Ok(ExitStatus::Success);
    }
    let what = match (changed.len(), missing.len()) {
        (0, missing) => format!("{missing} locked skill(s) are not installed"),
        (changed, 0) => format!("{changed} installed skill(s) differ from skills.lock"),
        (changed, missing) => format!(
            "{changed} installed skill(s) differ from skills.lock and {missing} locked skill(s) are not installed"
        ),
    };
    Err(UserError::new(what)
        .with_hint("run `skillpkg install`: it installs what is missing and restores what changed, from skills.lock")
        .into())
}

/// The locked skills some target of the project has no folder for, as
/// (target, name): a fresh clone, or a target folder deleted.
fn missing(global: bool) -> anyhow::Result<Vec<(String, String)>> {
    if global && !global::root()?.join(manifest::MANIFEST).is_file() {
        return Ok(Vec::new());
    }
    let root = root_for(global, false)?;
    let manifest = manifest::read(&root)?;
    let lock = lockfile::read(&root)?.unwrap_or_default();
    let mut missing = Vec::new();
    for target in project_targets(&manifest, &[], &root, global, true)? {
        for locked in &lock.skills {
            let dir = target.dir.join(locked.name.as_str());
            // A link counts as there (whether it holds is the rows' check).
            if fs_err::symlink_metadata(&dir).is_err() {
                missing.push((target.name.clone(), locked.name.to_string()));
            }
        }
    }
    Ok(missing)
}
