//! `skillpkg add` and `skillpkg remove`: edit skills.toml, then install.

use crate::args::{AddArgs, RemoveArgs};
use crate::client::registries::Registries;
use crate::client::settings::Environment;
use crate::commands::install::{ManifestEdit, install_with, project_root};
use crate::error::{ExitStatus, UserError};
use crate::printer::Printer;
use crate::project::lockfile::Lockfile;
use crate::project::manifest;
use crate::project::manifest::{RegistryChoice, SetSkill};
use crate::spec::SkillSpec;

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
    // A project that names no registry records the URL it was given, so
    // that a teammate's plain `install` gets the same skills.
    let mut record_registry = None;
    let (choice, install_registry) = match args.install.registry.registry.as_deref() {
        None => (RegistryChoice::Keep, None),
        Some(text) => {
            let manifest = manifest::read(&root)?;
            let registries = Registries::load(
                Environment::from_process(),
                Some(&manifest.registry_config()),
                None,
            )?;
            let spec = registries.choose(text)?;
            if !spec.is_named() {
                let names_one = manifest.registry.is_some()
                    || manifest.registries.contains_key(registries.default_name());
                if !names_one {
                    record_registry = Some(text);
                }
                (RegistryChoice::Keep, Some(text))
            } else if spec.name == registries.default_name() {
                (RegistryChoice::Default, None)
            } else {
                (RegistryChoice::Named(spec.name), None)
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
    for skill in &set {
        // Without a requirement, the one written is known only once the
        // version is resolved: it is said then (`Added`).
        let requirement = match skill.requirement.as_str() {
            "*" => String::new(),
            requirement => format!(" {requirement}"),
        };
        match &skill.registry {
            RegistryChoice::Named(registry) => printer.status(
                "Adding",
                &format!("{}{requirement} from registry `{registry}`", skill.name),
            ),
            _ => printer.status("Adding", &format!("{}{requirement}", skill.name)),
        }
    }
    let pinned_requirements = std::cell::RefCell::new(Vec::new());
    let before_install = |text: &str| -> anyhow::Result<String> {
        let (mut text, _) = manifest::edit(text, &set, &[], &args.install.targets)?;
        if let Some(url) = record_registry {
            text = manifest::set_registry_url(&text, url)?;
        }
        if args.install.allow_unsigned {
            // Recorded, so the next plain `install` accepts them too.
            let names: Vec<_> = set.iter().map(|skill| skill.name.clone()).collect();
            return manifest::allow_unsigned(&text, &names);
        }
        Ok(text)
    };
    // A skill added without a requirement gets `^` its resolved version, as
    // cargo add does, so a later major version is not picked up silently.
    let after_install = |text: &str, lock: &Lockfile| -> anyhow::Result<String> {
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
        if pinned.is_empty() {
            return Ok(text.to_owned());
        }
        let text = manifest::edit(text, &pinned, &[], &[])?.0;
        *pinned_requirements.borrow_mut() = pinned
            .iter()
            .map(|skill| format!("{} {}", skill.name, skill.requirement))
            .collect();
        Ok(text)
    };
    // A name one typo from a popular skill's may be a squatter's.
    let lookalikes: Vec<_> = set.iter().map(|skill| skill.name.clone()).collect();
    let status = install_with(
        &args.install,
        install_registry,
        None,
        false,
        &ManifestEdit {
            before_install: Some(&before_install),
            after_install: Some(&after_install),
            lookalikes: &lookalikes,
        },
        printer,
    )?;
    if status == ExitStatus::Success {
        for pinned in pinned_requirements.borrow().iter() {
            printer.status("Added", &format!("{pinned} to {}", manifest::MANIFEST));
        }
    }
    Ok(status)
}

pub fn remove(args: &RemoveArgs, printer: &Printer) -> anyhow::Result<ExitStatus> {
    let before_install = |text: &str| -> anyhow::Result<String> {
        let (text, missing) = manifest::edit(text, &[], &args.names, &[])?;
        if let Some(name) = missing.first() {
            return Err(UserError::new(format!("`{name}` is not in skills.toml"))
                .with_hint("`skillpkg list` shows what is installed")
                .into());
        }
        Ok(text)
    };
    install_with(
        &args.install,
        args.install.registry.registry.as_deref(),
        None,
        false,
        &ManifestEdit {
            before_install: Some(&before_install),
            after_install: None,
            lookalikes: &[],
        },
        printer,
    )
}
