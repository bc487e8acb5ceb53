//! `skillpkg add` and `skillpkg remove`: edit skills.toml, then install.

use crate::args::{AddArgs, RemoveArgs};
use crate::client::registries::Registries;
use crate::client::settings::Environment;
use crate::commands::install::{ManifestEdit, install_with, root_for};
use crate::error::{ExitStatus, UserError};
use crate::printer::Printer;
use crate::project::arguments::{self, Arguments, Choice, Listener};
use crate::project::collection::Collection;
use crate::project::global;
use crate::project::lockfile::{self, Lockfile};
use crate::project::manifest;
use crate::project::manifest::{RegistryChoice, SetSkill};
use std::path::Path;

pub fn run(args: &AddArgs, printer: &Printer) -> anyhow::Result<ExitStatus> {
    // `add --global` makes the user's own project on first use, and takes
    // it away again when nothing could be added.
    let global = args.install.global;
    let made = global && !global::root()?.join(manifest::MANIFEST).is_file();
    let root = root_for(global, true)?;
    let status = add_to(args, &root, printer);
    if made && !root.join(lockfile::LOCKFILE).exists() {
        fs_err::remove_file(root.join(manifest::MANIFEST))?;
    }
    status
}

fn add_to(args: &AddArgs, root: &Path, printer: &Printer) -> anyhow::Result<ExitStatus> {
    let Arguments {
        registry_url,
        set,
        direct,
        optional,
        refused,
    } = arguments::read(
        &args.skills,
        root,
        &Choice {
            skill: &args.skill,
            all: args.all,
            offline: args.install.offline,
            registry: args.install.registry.registry.as_deref(),
            absolute_paths: args.install.global,
        },
        &Heard(printer),
    )?;
    let registry_flag = registry_url
        .as_deref()
        .or(args.install.registry.registry.as_deref());
    // `--registry` of a configured registry is where the added skills come
    // from, recorded in their entries; the URL of a registry that is not
    // configured stays what it always was, the default registry.
    // A project that names no registry records the URL it was given, so
    // that a teammate's plain `install` gets the same skills.
    let mut record_registry = None;
    let (choice, install_registry) = match registry_flag {
        None => (RegistryChoice::Keep, None),
        Some(text) => {
            let manifest = manifest::read(root)?;
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
    for (name, source) in &direct {
        printer.status("Adding", &format!("{name} from {}", source.describe()));
    }
    if direct.is_empty() && set.is_empty() && !refused.is_empty() {
        return Err(arguments::none_taken(&refused));
    }
    let with_others = !set.is_empty() || direct.len() > optional.len();
    let collection = Collection::new(optional, refused, with_others);
    let taken = || {
        direct
            .iter()
            .filter(|(name, _)| !collection.is_left_out(name))
    };
    let pinned_requirements = std::cell::RefCell::new(Vec::new());
    let before_install = |text: &str| -> anyhow::Result<String> {
        let (mut text, _) = manifest::edit(text, &set, &[], &args.install.targets)?;
        for (name, source) in taken() {
            text = manifest::set_direct(&text, name, source)?;
        }
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
            collection: Some(&collection),
        },
        printer,
    )
    .inspect_err(|_| {
        // The install's error is said last; the skills refused before it
        // are not lost.
        for refusal in collection.refused() {
            printer.diagnostic(&refusal.to_string());
        }
    })?;
    if status != ExitStatus::Error {
        for pinned in pinned_requirements.borrow().iter() {
            printer.status("Added", &format!("{pinned} to {}", manifest::MANIFEST));
        }
        for (name, source) in taken() {
            printer.status(
                "Added",
                &format!(
                    "{name} from {} to {}",
                    source.describe(),
                    manifest::MANIFEST
                ),
            );
        }
    }
    Ok(status)
}

/// What reading the arguments says, said by the printer.
struct Heard<'a>(&'a Printer);

impl Listener for Heard<'_> {
    fn status(&self, verb: &str, message: &str) {
        self.0.status(verb, message);
    }

    fn warning(&self, text: &str) {
        self.0.diagnostic(&format!("warning: {text}"));
    }

    fn choose(&self, items: &[String], names: &[&str]) -> anyhow::Result<Option<Vec<usize>>> {
        crate::ask::choose(
            "It holds several skills:",
            items,
            names,
            "Which skills? (numbers or names separated by spaces, or `all`): ",
        )
    }
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
            collection: None,
        },
        printer,
    )
}
