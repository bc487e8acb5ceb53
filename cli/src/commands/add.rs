//! `skillpkg add` and `skillpkg remove`: edit skills.toml, then install.

use crate::args::{AddArgs, RemoveArgs};
use crate::commands::install::{install_project, install_with, project_root};
use crate::printer::Printer;
use crate::project::manifest::{RegistryChoice, SetSkill};
use crate::project::{lockfile, manifest};
use crate::registries::Registries;
use crate::settings::Environment;
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
    // `--registry` of a configured registry is where the added skills come
    // from, recorded in their entries; the URL of a registry that is not
    // configured stays what it always was, the default registry.
    let (choice, install_registry) = match args.install.registry.registry.as_deref() {
        None => (RegistryChoice::Keep, None),
        Some(text) => {
            let manifest = manifest::read(&root)?;
            let registries = Registries::load(Environment::from_process(), Some(&manifest), None)?;
            let spec = registries.choose(text)?;
            if spec.name == registries.default_name() {
                (RegistryChoice::Default, None)
            } else if spec.is_named() {
                (RegistryChoice::Named(spec.name), None)
            } else {
                (RegistryChoice::Keep, Some(text))
            }
        }
    };
    let set: Vec<SetSkill> = set
        .into_iter()
        .map(|(name, requirement)| SetSkill {
            name,
            requirement,
            registry: choice.clone(),
        })
        .collect();
    // Kept, so that an install that fails takes the added skills back out:
    // a refused archive must leave the project as it was.
    let manifest_path = root.join(manifest::MANIFEST);
    let manifest_before = fs_err::read_to_string(&manifest_path)?;
    manifest::edit(&root, &set, &[], &args.install.targets)?;
    if args.install.allow_unsigned {
        // Recorded, so the next plain `install` accepts them too.
        let names: Vec<_> = set.iter().map(|skill| skill.name.clone()).collect();
        manifest::allow_unsigned(&root, &names)?;
    }
    for skill in &set {
        match &skill.registry {
            RegistryChoice::Named(registry) => printer.status(
                "Adding",
                &format!(
                    "{} {} from registry `{registry}`",
                    skill.name, skill.requirement
                ),
            ),
            _ => printer.status("Adding", &format!("{} {}", skill.name, skill.requirement)),
        }
    }
    let status = match install_with(&args.install, install_registry, None, false, printer) {
        Ok(status) => status,
        Err(error) => {
            manifest::write(&manifest_path, &manifest_before)?;
            return Err(error);
        }
    };
    // A skill added without a requirement gets `^` its resolved version, as
    // cargo add does, so a later major version is not picked up silently.
    let lock = lockfile::read(&root)?.unwrap_or_default();
    let pinned: Vec<SetSkill> = set
        .iter()
        .filter(|skill| skill.requirement == "*")
        .filter_map(|skill| {
            lock.get(&skill.name).map(|entry| SetSkill {
                name: skill.name.clone(),
                requirement: format!("^{}", entry.version),
                registry: RegistryChoice::Keep,
            })
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
