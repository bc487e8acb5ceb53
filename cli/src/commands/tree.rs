//! `skillpkg tree`: the dependency tree, from skills.lock.

use serde_json::json;
use skillpkg_index::skill::SkillName;

use crate::args::TreeArgs;
use crate::commands::install::project_root;
use crate::error::{ExitStatus, UserError};
use crate::printer::Printer;
use crate::project::lockfile::Lockfile;
use crate::project::{lockfile, manifest};

pub fn run(args: &TreeArgs, printer: &Printer) -> anyhow::Result<ExitStatus> {
    let root = project_root()?;
    let manifest = manifest::read(&root)?;
    let lock = lockfile::read(&root)?.ok_or_else(|| {
        UserError::new("there is no skills.lock yet").with_hint("run `skillpkg install`")
    })?;
    if args.json {
        let roots: Vec<_> = manifest
            .names()
            .into_iter()
            .map(|name| node(&lock, name, &mut Vec::new()))
            .collect();
        printer.json(&roots);
        return Ok(ExitStatus::Success);
    }
    let mut lines = Vec::new();
    for name in manifest.names() {
        draw(&lock, name, "", "", &mut Vec::new(), &mut lines);
    }
    printer.result(&lines.join("\n"));
    Ok(ExitStatus::Success)
}

fn node(lock: &Lockfile, name: &SkillName, path: &mut Vec<SkillName>) -> serde_json::Value {
    let Some(entry) = lock.get(name) else {
        return json!({ "name": name, "version": null });
    };
    let cycle = path.contains(name);
    path.push(name.clone());
    let dependencies: Vec<_> = if cycle {
        Vec::new()
    } else {
        entry
            .dependencies
            .iter()
            .map(|dependency| node(lock, dependency, path))
            .collect()
    };
    path.pop();
    json!({ "name": name, "version": entry.version.to_string(), "dependencies": dependencies })
}

fn draw(
    lock: &Lockfile,
    name: &SkillName,
    first: &str,
    rest: &str,
    path: &mut Vec<SkillName>,
    lines: &mut Vec<String>,
) {
    let version = lock.get(name).map_or_else(
        || "(not locked)".to_owned(),
        |entry| entry.version.to_string(),
    );
    let cycle = path.contains(name);
    lines.push(format!(
        "{first}{name} {version}{}",
        if cycle { " (cycle)" } else { "" }
    ));
    if cycle {
        return;
    }
    let Some(entry) = lock.get(name) else { return };
    path.push(name.clone());
    for (index, dependency) in entry.dependencies.iter().enumerate() {
        let last = index + 1 == entry.dependencies.len();
        let (branch, next) = if last {
            ("└── ", "    ")
        } else {
            ("├── ", "│   ")
        };
        draw(
            lock,
            dependency,
            &format!("{rest}{branch}"),
            &format!("{rest}{next}"),
            path,
            lines,
        );
    }
    path.pop();
}
