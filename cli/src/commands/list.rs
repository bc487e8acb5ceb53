//! `skillpkg list`, and `skillpkg verify` without a target: the installed
//! skills per target, checked against skills.lock.

use serde_json::json;
use skillpkg_index::archive::walk::{self, EntryKind};
use skillpkg_index::archive::{FileDigest, tree_hash};
use skillpkg_index::checksum::Checksum;

use crate::args::ListArgs;
use crate::commands::install::{project_root, project_targets};
use crate::printer::Printer;
use crate::project::{lockfile, manifest};
use crate::{ExitStatus, UserError};

/// One installed skill and what its files say.
struct Row {
    target: String,
    name: String,
    version: String,
    locked: Option<String>,
    matches: bool,
}

fn rows(global: bool) -> anyhow::Result<Vec<Row>> {
    let root = project_root()?;
    let manifest = manifest::read(&root)?;
    let lock = lockfile::read(&root)?.unwrap_or_default();
    let mut rows = Vec::new();
    for target in project_targets(&manifest, &[], &root, global)? {
        let state = target.state()?;
        for (name, installed) in &state.skills {
            let locked = lock.skills.iter().find(|entry| entry.name.as_str() == name);
            let tree = installed_tree(&target.dir.join(name))?;
            rows.push(Row {
                target: target.name.clone(),
                name: name.clone(),
                version: installed.version.clone(),
                locked: locked.map(|entry| entry.version.to_string()),
                matches: locked.is_some_and(|entry| Some(&entry.tree) == tree.as_ref()),
            });
        }
    }
    Ok(rows)
}

/// Recomputes the tree hash of an installed folder; `None` when it is gone.
fn installed_tree(dir: &std::path::Path) -> anyhow::Result<Option<String>> {
    if !dir.is_dir() {
        return Ok(None);
    }
    // Every file, as installed: nothing is ignored here.
    let mut files = Vec::new();
    for entry in walk::walk_all(dir)? {
        if let EntryKind::File { .. } = entry.kind {
            let bytes = fs_err::read(dir.join(&entry.path))?;
            files.push(FileDigest {
                path: entry.path,
                sha256: *Checksum::of(&bytes).digest(),
            });
        }
    }
    Ok(Some(tree_hash(&files).to_string()))
}

pub fn run(args: &ListArgs, printer: &Printer) -> anyhow::Result<ExitStatus> {
    let rows = rows(args.global)?;
    if args.json {
        printer.json(&rows.iter().map(|row| json!({
            "target": row.target, "name": row.name, "version": row.version, "locked": row.locked, "matches_lock": row.matches,
        })).collect::<Vec<_>>());
        return Ok(ExitStatus::Success);
    }
    for row in &rows {
        let state = if row.matches {
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
pub fn verify_installed(json: bool, printer: &Printer) -> anyhow::Result<ExitStatus> {
    let rows = rows(false)?;
    let changed: Vec<&Row> = rows.iter().filter(|row| !row.matches).collect();
    if json {
        printer.json(&json!({
            "verified": rows.len() - changed.len(),
            "changed": changed.iter().map(|row| json!({"target": row.target, "name": row.name})).collect::<Vec<_>>(),
        }));
    } else {
        for row in &changed {
            printer.result(&format!(
                "{} in {}: the files differ from skills.lock (edited or tampered with)",
                row.name, row.target
            ));
        }
        printer.result(&format!(
            "{} verified, {} changed",
            rows.len() - changed.len(),
            changed.len()
        ));
    }
    if changed.is_empty() {
        Ok(ExitStatus::Success)
    } else {
        Err(UserError::new(format!(
            "{} installed skill(s) differ from skills.lock",
            changed.len()
        ))
        .with_hint("run `skillpkg install --force` to restore them")
        .into())
    }
}
