//! `skillpkg add` and `skillpkg remove`: edit skills.toml, then install.

use crate::args::{AddArgs, RemoveArgs};
use crate::commands::install::{install_project, project_root};
use crate::printer::Printer;
use crate::project::{lockfile, manifest};
use crate::spec::SkillSpec;
use crate::{ExitStatus, UserError};

pub fn run(args: &AddArgs, printer: &Printer) -> anyhow::Result<ExitStatus> {
    let root = project_root()?;
    let mut set = Vec::new();
    for text in &args.skills {
        let (name, requirement) = match text.split_once('@') {
            Some((name, requirement)) => {
                requirement.parse::<semver::VersionReq>().map_err(|error| {
                    UserError::new(format!("`{requirement}` is not a semver requirement"))
                        .with_hint("write NAME@^1.2, NAME@~1.2.3 or NAME@=1.0.0")
                        .with_source(error)
                })?;
                (name, requirement.to_owned())
            }
            None => (text.as_str(), "*".to_owned()),
        };
        let spec: SkillSpec = name.parse().map_err(|error| {
            UserError::new(format!("`{name}` is not a skill name")).with_source(error)
        })?;
        set.push((spec.name, requirement));
    }
    manifest::edit(&root, &set, &[], &args.install.targets)?;
    if args.install.allow_unsigned {
        // Recorded, so the next plain `install` accepts them too.
        let names: Vec<_> = set.iter().map(|(name, _)| name.clone()).collect();
        manifest::allow_unsigned(&root, &names)?;
    }
    for (name, requirement) in &set {
        printer.status("Adding", &format!("{name} {requirement}"));
    }
    let status = install_project(&args.install, None, printer)?;
    // A skill added without a requirement gets `^` its resolved version, as
    // cargo add does, so a later major version is not picked up silently.
    let lock = lockfile::read(&root)?.unwrap_or_default();
    let pinned: Vec<_> = set
        .iter()
        .filter(|(_, requirement)| requirement == "*")
        .filter_map(|(name, _)| {
            lock.get(name)
                .map(|entry| (name.clone(), format!("^{}", entry.version)))
        })
        .collect();
    if !pinned.is_empty() {
        manifest::edit(&root, &pinned, &[], &[])?;
    }
    Ok(status)
}

pub fn remove(args: &RemoveArgs, printer: &Printer) -> anyhow::Result<ExitStatus> {
    let root = project_root()?;
    let missing = manifest::edit(&root, &[], &args.names, &[])?;
    if let Some(name) = missing.first() {
        return Err(UserError::new(format!("`{name}` is not in skills.toml"))
            .with_hint("`skillpkg list` shows what is installed")
            .into());
    }
    install_project(&args.install, None, printer)
}
