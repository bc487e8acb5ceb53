//! `skillpkg add` and `skillpkg remove`: edit skills.toml, then install.

use crate::args::{AddArgs, RemoveArgs};
use crate::client::registries::Registries;
use crate::client::registry;
use crate::client::settings::Environment;
use crate::commands::install::{ManifestEdit, install_with, project_root};
use crate::error::{ExitStatus, UserError};
use crate::printer::Printer;
use crate::project::collection::{Collection, Refusal};
use crate::project::folder;
use crate::project::lockfile::Lockfile;
use crate::project::manifest;
use crate::project::manifest::{RegistryChoice, SetSkill};
use crate::project::source::{self, Direct, GitSource};
use crate::project::{git, web};
use crate::spec::SkillSpec;
use skillpkg_index::skill::{SKILL_MD, SkillName};
use std::path::{Path, PathBuf};

pub fn run(args: &AddArgs, printer: &Printer) -> anyhow::Result<ExitStatus> {
    let root = project_root()?;
    // A URL that serves a skillpkg registry is used as one (`--registry`):
    // its skills come with their versions and signatures, not through its
    // discovery index.
    let registry_url = registry_argument(args, printer)?;
    let registry_flag = registry_url
        .as_deref()
        .or(args.install.registry.registry.as_deref());
    let mut set = Vec::new();
    let mut direct: Vec<(SkillName, Direct)> = Vec::new();
    // Of a collection (several skills of one source), each skill that
    // cannot be taken is left out and reported; the others are added.
    let mut optional = Vec::new();
    let mut refused = Vec::new();
    for text in &args.skills {
        if registry_url.as_ref() == Some(text) {
            for name in &args.skill {
                set.push((name.clone(), "*".to_owned()));
            }
            continue;
        }
        if let Some(found) = direct_skills(text, &root, args, printer)? {
            let mut refused_here = found.refused;
            for (name, source) in found.skills {
                if let Some((_, first)) = direct.iter().find(|(other, _)| other == &name) {
                    if !found.several {
                        return Err(UserError::new(format!("`{name}` is given twice")).into());
                    }
                    // Agents would load one of the two: the first is kept.
                    refused_here.push(Refusal {
                        skill: name.to_string(),
                        reason: format!(
                            "{} has another skill named `{name}`, from {}",
                            source.describe(),
                            first.describe()
                        ),
                        fix: Some(format!(
                            "two skills of one name cannot be installed side by side; the one from {} was added",
                            first.describe()
                        )),
                    });
                    continue;
                }
                if found.several {
                    optional.push(name.clone());
                }
                direct.push((name, source));
            }
            refused.extend(refused_here);
            continue;
        }
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
    if (!args.skill.is_empty() || args.all) && direct.is_empty() && registry_url.is_none() {
        return Err(UserError::new("--skill and --all choose among the skills of a folder or a git repository")
            .with_hint("give the folder or the repository too: `skillpkg add ./skills --skill pdf`; a skill from a registry is added by its name alone")
            .into());
    }
    if let Some((name, _)) = direct
        .iter()
        .find(|(name, _)| set.iter().any(|(other, _)| other == name))
    {
        return Err(UserError::new(format!(
            "`{name}` is given both as a registry skill and from a folder"
        ))
        .into());
    }
    // `--registry` of a configured registry is where the added skills come
    // from, recorded in their entries; the URL of a registry that is not
    // configured stays what it always was, the default registry.
    // A project that names no registry records the URL it was given, so
    // that a teammate's plain `install` gets the same skills.
    let mut record_registry = None;
    let (choice, install_registry) = match registry_flag {
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
    for (name, source) in &direct {
        printer.status("Adding", &format!("{name} from {}", source.describe()));
    }
    if direct.is_empty() && set.is_empty() && !refused.is_empty() {
        return Err(none_taken(&refused));
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

/// The skills one argument of `add` takes from a folder, a repository or
/// an index.
struct Taken {
    skills: Vec<(SkillName, Direct)>,
    /// Those of several chosen that cannot be taken, and why.
    refused: Vec<Refusal>,
    /// Several were chosen: each may be refused on its own.
    several: bool,
}

/// Takes each of `chosen` with `take`: when there are several, one that
/// cannot be taken (a problem with the skill itself, named by `label`) is
/// refused and the others are taken; a single one fails as it is.
fn take_each<T>(
    chosen: &[T],
    label: impl Fn(&T) -> String,
    mut take: impl FnMut(&T) -> anyhow::Result<(SkillName, Direct)>,
) -> anyhow::Result<Taken> {
    let several = chosen.len() > 1;
    let mut taken = Taken {
        skills: Vec::new(),
        refused: Vec::new(),
        several,
    };
    for item in chosen {
        match take(item) {
            Ok(skill) => taken.skills.push(skill),
            Err(error) if several => match Refusal::of(&label(item), &error) {
                Some(refusal) => taken.refused.push(refusal),
                None => return Err(error),
            },
            Err(error) => return Err(error),
        }
    }
    Ok(taken)
}

/// The error when none of the skills given could be taken.
fn none_taken(refused: &[Refusal]) -> anyhow::Error {
    let reasons: Vec<String> = refused
        .iter()
        .map(|refusal| format!("{}: {}", refusal.skill, refusal.reason))
        .collect();
    UserError::new(format!(
        "no skill given can be added: {}",
        reasons.join("; ")
    ))
    .with_hint(
        refused
            .iter()
            .find_map(|refusal| refusal.fix.clone())
            .unwrap_or_else(|| "nothing was changed".to_owned()),
    )
    .into()
}

/// The argument of `add` that is the URL of a skillpkg registry, when one
/// is: its skills are those `--skill` names, added from it as with
/// `--registry URL`.
fn registry_argument(args: &AddArgs, printer: &Printer) -> anyhow::Result<Option<String>> {
    let mut found = None;
    for text in &args.skills {
        let lower = text.to_ascii_lowercase();
        let web = lower.starts_with("https://") || lower.starts_with("http://");
        // A discovery index named by its own URL is read as asked (with a
        // warning at install when it is a registry's).
        let index = lower.contains("/.well-known/") || lower.ends_with(".json");
        if !web || index || args.install.offline {
            continue;
        }
        // A site whose config.json cannot be read is not taken for a
        // registry; reading it as a site says what is wrong with it.
        let is_registry = registry::block_on(web::is_registry(text))
            .ok()
            .and_then(Result::ok)
            .unwrap_or(false);
        if !is_registry {
            continue;
        }
        if found.is_some() || args.install.registry.registry.is_some() {
            return Err(UserError::new(format!(
                "`{text}` is a skillpkg registry, and another registry is given too"
            ))
            .with_hint("add from one registry at a time")
            .into());
        }
        if args.all {
            return Err(UserError::new(format!(
                "`{text}` is a skillpkg registry: --all would add every skill it serves"
            ))
            .with_hint(format!(
                "name the skills: `skillpkg add {text} --skill NAME` (repeat for several), or `skillpkg search --registry {text} WORDS` to find them"
            ))
            .into());
        }
        if args.skill.is_empty() {
            return Err(UserError::new(format!(
                "`{text}` is a skillpkg registry: which of its skills?"
            ))
            .with_hint(format!(
                "name them: `skillpkg add {text} --skill NAME`, or `skillpkg add NAME --registry {text}`"
            ))
            .into());
        }
        printer.status(
            "Reading",
            &format!("{text} as a skillpkg registry (it serves config.json), with its signatures"),
        );
        found = Some(text.clone());
    }
    Ok(found)
}

/// The skills an argument of `add` names when it is not a registry's skill
/// name: a folder, a git repository, or a URL (a discovery index or a
/// tarball); `None` for a registry's `NAME[@REQ]`.
fn direct_skills(
    text: &str,
    root: &Path,
    args: &AddArgs,
    printer: &Printer,
) -> anyhow::Result<Option<Taken>> {
    if let Some(folder) = folder_argument(text) {
        return folder_skills(text, folder, root, args).map(Some);
    }
    let lower = text.to_ascii_lowercase();
    let git = source::git_argument(text);
    let web = lower.starts_with("https://") || lower.starts_with("http://");
    if git.is_none() && !web {
        return Ok(None);
    }
    if args.install.offline {
        return Err(UserError::new(format!(
            "adding from `{text}` fetches it, and --offline forbids that"
        ))
        .into());
    }
    let Some(git) = git else {
        return web_skills(text, args, printer).map(Some);
    };
    source::check_git_url(&git.url).map_err(|why| {
        UserError::new(format!(
            "`{text}` names a git repository `{}`, {why}",
            git.url
        ))
    })?;
    if !text.contains(':') && Path::new(text).exists() {
        return Err(UserError::new(format!(
            "`{text}` is both a folder here and the GitHub repository `{}`",
            git.url
        ))
        .with_hint(format!(
            "write `./{text}` for the folder, or `github:{text}` for the repository"
        ))
        .into());
    }
    git_skills(text, &git, root, args, printer).map(Some)
}

/// The folder an argument of `add` names, when it names one: `path:DIR`, or
/// a path that starts with `./`, `../` or `/` (a skill name never does).
fn folder_argument(text: &str) -> Option<&str> {
    if let Some(path) = text.strip_prefix("path:") {
        return Some(path);
    }
    let is_path = text == "."
        || text == ".."
        || ["./", "../", "/", ".\\", "..\\"]
            .iter()
            .any(|prefix| text.starts_with(prefix))
        || std::path::Path::new(text).is_absolute();
    is_path.then_some(text)
}

/// The skills `add` takes from the folder `folder` (the argument `text`):
/// the folder itself when it holds a SKILL.md, else those of its
/// subfolders that --skill names, or all with --all, or the only one, or
/// those the user picks on a terminal. Each is validated now, so that a
/// bad skill is refused before skills.toml changes; each is written
/// relative to the project's root.
fn folder_skills(text: &str, folder: &str, root: &Path, args: &AddArgs) -> anyhow::Result<Taken> {
    if folder.is_empty() {
        return Err(UserError::new("`path:` names no folder")
            .with_hint("write the folder after it: `path:skills/pdf`, or `path:.` for this one")
            .into());
    }
    let dir = std::env::current_dir()?.join(folder);
    let dir = match std::fs::canonicalize(&dir) {
        Ok(dir) => dir,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            let hint = if text.contains('@') {
                "a skill from a folder has no version requirement: give the folder alone"
            } else {
                "give the folder that holds the skill's SKILL.md"
            };
            return Err(UserError::new(format!("`{folder}` does not exist"))
                .with_hint(hint)
                .into());
        }
        Err(error) => {
            return Err(UserError::new(format!("cannot read `{folder}`"))
                .with_source(error)
                .into());
        }
    };
    let root = fs_err::canonicalize(root)?;
    let folders: Vec<PathBuf> = if dir.join(SKILL_MD).is_file() {
        if !args.skill.is_empty() {
            return Err(UserError::new(format!(
                "`{folder}` is a skill itself, so --skill has nothing to choose from"
            ))
            .with_hint("leave out --skill")
            .into());
        }
        vec![dir]
    } else {
        choose(folder, &dir, &folder::skills_below(&dir, 3), args)?
    };
    take_each(
        &folders,
        |path| folder_label(path),
        |path| {
            let skill = folder::read_folder(path, &format!("`{text}`"))?;
            let written = folder::relative_path(path, &root).ok_or_else(|| {
                UserError::new(format!(
                    "`{}` cannot be written relative to the project at {}",
                    path.display(),
                    root.display()
                ))
            })?;
            Ok((skill.packed.name, Direct::Path(written)))
        },
    )
}

/// A skill's folder named for a message: its last part.
fn folder_label(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |name| name.to_string_lossy().into_owned(),
    )
}

/// The skills `add` takes from the git repository `git` (the argument
/// `text`): fetched, its revision resolved, and the skills at its path (or
/// below) chosen as for a folder. Each is read and validated now.
fn git_skills(
    text: &str,
    git: &GitSource,
    root: &Path,
    args: &AddArgs,
    printer: &Printer,
) -> anyhow::Result<Taken> {
    // A repository on this machine is named as typed, relative to this
    // folder, and written relative to the project's root, which is what
    // an install reads it against.
    let mut git = git.clone();
    let location = if source::is_local_path(&git.url) {
        let path =
            fs_err::canonicalize(std::env::current_dir()?.join(&git.url)).map_err(|error| {
                UserError::new(format!(
                    "`{}` is not a git repository on this machine",
                    git.url
                ))
                .with_source(error)
            })?;
        let root = fs_err::canonicalize(root)?;
        if let Some(relative) = folder::relative_path(&path, &root) {
            git.url = relative;
        }
        path.to_string_lossy().into_owned()
    } else {
        git.url.clone()
    };
    let git = &git;
    printer.status("Fetching", &location);
    let (commit, found) = git::list_skills(git, &location, args.install.offline)?;
    let base = git.path.clone().unwrap_or_else(|| ".".to_owned());
    let relative: Vec<String> = found
        .iter()
        .map(|path| match base.as_str() {
            "." => path.clone(),
            base if path == base => ".".to_owned(),
            base => path
                .strip_prefix(&format!("{base}/"))
                .unwrap_or(path)
                .to_owned(),
        })
        .collect();
    let folders = if relative.iter().any(|path| path == ".") {
        if !args.skill.is_empty() {
            return Err(UserError::new(format!(
                "`{text}` is a skill itself, so --skill has nothing to choose from"
            ))
            .with_hint("leave out --skill")
            .into());
        }
        vec![PathBuf::from(".")]
    } else {
        choose(text, Path::new("."), &relative, args)?
    };
    take_each(
        &folders,
        |folder| folder_label(folder),
        |folder| {
            let relative = folder.to_string_lossy().replace('\\', "/");
            let relative = relative.trim_start_matches("./");
            let path = match (base.as_str(), relative) {
                (".", ".") | (".", "") => None,
                (".", relative) => Some(relative.to_owned()),
                (base, "." | "") => Some(base.to_owned()),
                (base, relative) => Some(format!("{base}/{relative}")),
            };
            let source = GitSource {
                path,
                ..git.clone()
            };
            let (_, skill) = git::read_skill(
                &source,
                &location,
                Some(&commit),
                args.install.offline,
                &format!("`{text}`"),
            )?;
            Ok((skill.packed.name, Direct::Git(source)))
        },
    )
}

/// The skills `add` takes from a URL: a tarball (its path ends in `.tgz`
/// or `.tar.gz`), else a site's discovery index (or the index's own URL),
/// among whose skills --skill, --all or the user chooses. Each is fetched,
/// checked against its digest and validated now.
fn web_skills(text: &str, args: &AddArgs, printer: &Printer) -> anyhow::Result<Taken> {
    let url = web::parse_url(text)?;
    let origin = format!("`{text}`");
    if web::is_tarball(&url) {
        if !args.skill.is_empty() || args.all {
            return Err(UserError::new(format!(
                "`{text}` is a tarball of one skill, so --skill and --all have nothing to choose from"
            ))
            .into());
        }
        printer.status("Fetching", text);
        let (_, skill) = registry::block_on(web::read_tarball(&url, None, &origin))??;
        return Ok(Taken {
            skills: vec![(skill.packed.name, Direct::Url(text.to_owned()))],
            refused: Vec::new(),
            several: false,
        });
    }
    printer.status("Fetching", &format!("the discovery index of {text}"));
    let index = registry::block_on(web::read_index(text))??;
    for skipped in &index.skipped {
        printer.diagnostic(&format!("warning: {} leaves out {skipped}", index.url));
    }
    let names: Vec<String> = index
        .skills
        .iter()
        .map(|skill| skill.name.to_string())
        .collect();
    if names.is_empty() {
        return Err(UserError::new(format!(
            "the discovery index at {} lists no skill skillpkg can install",
            index.url
        ))
        .with_hint("its entries are left out for the reasons above")
        .into());
    }
    let chosen = choose(text, Path::new(""), &names, args)?;
    take_each(
        &chosen,
        |name| folder_label(name),
        |name| {
            let name = name.to_string_lossy();
            let skill = index
                .skills
                .iter()
                .find(|skill| skill.name.as_str() == name)
                .expect("a chosen skill is listed");
            let folder = registry::block_on(web::read_index_skill(skill, None, &origin))??;
            if folder.packed.name != skill.name {
                return Err(UserError::new(format!(
                    "{origin}: the index lists `{}`, but its SKILL.md names the skill `{}`",
                    skill.name, folder.packed.name
                ))
                .with_hint("the site's index and files disagree; nothing was installed")
                .into());
            }
            Ok((skill.name.clone(), Direct::Index(text.to_owned())))
        },
    )
}

/// Chooses among the skills `found` below `dir` (paths relative to it).
fn choose(
    folder: &str,
    dir: &Path,
    found: &[String],
    args: &AddArgs,
) -> anyhow::Result<Vec<PathBuf>> {
    let name_of = |relative: &String| relative.rsplit('/').next().unwrap_or(relative).to_owned();
    if found.is_empty() {
        return Err(UserError::new(format!(
            "`{folder}` holds no skill: it has no SKILL.md, nor any folder below it that has one"
        ))
        .with_hint("a skill is a folder with a SKILL.md; give that folder")
        .into());
    }
    let listed = || {
        found
            .iter()
            .map(|relative| match name_of(relative) {
                name if &name == relative => name,
                name => format!("{name} ({relative})"),
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    if args.all {
        return Ok(found.iter().map(|relative| dir.join(relative)).collect());
    }
    if !args.skill.is_empty() {
        let mut chosen = Vec::new();
        for name in &args.skill {
            let Some(relative) = found
                .iter()
                .find(|relative| name_of(relative) == name.as_str())
            else {
                return Err(UserError::new(format!("`{folder}` has no skill `{name}`"))
                    .with_hint(format!("it has {}", listed()))
                    .into());
            };
            chosen.push(dir.join(relative));
        }
        return Ok(chosen);
    }
    if let [only] = found {
        return Ok(vec![dir.join(only)]);
    }
    if let Some(picked) = ask(found, &name_of)? {
        return Ok(picked
            .into_iter()
            .map(|relative| dir.join(relative))
            .collect());
    }
    Err(UserError::new(format!(
        "`{folder}` holds {} skills: {}",
        found.len(),
        listed()
    ))
    .with_hint("choose with --skill NAME (repeat for several), or take them all with --all")
    .into())
}

/// On a terminal, asks which of `found` to add; `None` when there is no
/// terminal to ask on.
fn ask<'a>(
    found: &'a [String],
    name_of: &dyn Fn(&String) -> String,
) -> anyhow::Result<Option<Vec<&'a String>>> {
    let names: Vec<String> = found.iter().map(name_of).collect();
    let items: Vec<String> = found
        .iter()
        .zip(&names)
        .map(|(relative, name)| format!("{name} ({relative})"))
        .collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let Some(chosen) = crate::ask::choose(
        "It holds several skills:",
        &items,
        &names,
        "Which skills? (numbers or names separated by spaces, or `all`): ",
    )?
    else {
        return Ok(None);
    };
    if chosen.is_empty() {
        return Err(UserError::new("no skill chosen")
            .with_hint("nothing was added")
            .into());
    }
    Ok(Some(
        chosen.into_iter().map(|index| &found[index]).collect(),
    ))
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
