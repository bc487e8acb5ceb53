//! What each argument of `skillpkg add` names (docs/sources.md): a
//! registry's skill (`NAME[@REQ]`), the URL of a skillpkg registry, a
//! folder, a git repository, a site's discovery index or a tarball; and,
//! of a folder, repository or index holding several skills, those
//! `--skill`, `--all` or the user choose. Each skill is read and validated
//! here, before skills.toml changes; one of a collection that cannot be
//! taken is left out with the reason ([`Refusal`]).

use std::path::{Path, PathBuf};

use skillpkg_index::skill::{SKILL_MD, SkillName};

use super::collection::Refusal;
use super::folder;
use super::git;
use super::source::{self, Direct, GitSource};
use super::web;
use crate::client::registry::block_on;
use crate::error::UserError;
use crate::spec::SkillSpec;

/// What `add` hears while its arguments are read (this module never
/// prints): what it fetches, what a source leaves out, and one question.
pub trait Listener {
    /// Progress: `verb` (`Fetching`) and what.
    fn status(&self, verb: &str, message: &str);
    /// A warning, said in full.
    fn warning(&self, text: &str);
    /// Asks which of `items` (one line each; `names` are what the user may
    /// type for them) to take: their indexes, or `None` when there is no
    /// one to ask.
    fn choose(&self, items: &[String], names: &[&str]) -> anyhow::Result<Option<Vec<usize>>>;
}

/// How the arguments' skills are chosen: `--skill`, `--all`, `--offline`
/// and `--registry`.
#[derive(Clone, Copy, Debug)]
pub struct Choice<'a> {
    pub skill: &'a [SkillName],
    pub all: bool,
    pub offline: bool,
    /// `--registry`, when given.
    pub registry: Option<&'a str>,
    /// Folders are written as absolute paths, not relative to the
    /// project (the user's own skills.toml, `--global`, is in no project).
    pub absolute_paths: bool,
}

/// The skills `add`'s arguments name.
#[derive(Debug, Default)]
pub struct Arguments {
    /// The argument that is the URL of a skillpkg registry: `--skill`
    /// names its skills, added as with `--registry URL`.
    pub registry_url: Option<String>,
    /// Registry skills and their requirements (`*` when none was given).
    pub set: Vec<(SkillName, String)>,
    /// Skills from a folder, a repository, an index or a tarball.
    pub direct: Vec<(SkillName, Direct)>,
    /// Those of `direct` taken from a collection, which an install may
    /// leave out on their own.
    pub optional: Vec<SkillName>,
    /// Those of a collection that cannot be taken, and why.
    pub refused: Vec<Refusal>,
}

/// Reads `add`'s arguments `texts` in the project at `root`.
pub fn read(
    texts: &[String],
    root: &Path,
    choice: &Choice<'_>,
    listener: &dyn Listener,
) -> anyhow::Result<Arguments> {
    // A URL that serves a skillpkg registry is used as one (`--registry`):
    // its skills come with their versions and signatures, not through its
    // discovery index.
    let registry_url = registry_argument(texts, choice, listener)?;
    let mut set = Vec::new();
    let mut direct: Vec<(SkillName, Direct)> = Vec::new();
    // Of a collection (several skills of one source), each skill that
    // cannot be taken is left out and reported; the others are added.
    let mut optional = Vec::new();
    let mut refused = Vec::new();
    for text in texts {
        if registry_url.as_ref() == Some(text) {
            for name in choice.skill {
                set.push((name.clone(), "*".to_owned()));
            }
            continue;
        }
        if let Some(found) = direct_skills(text, root, choice, listener)? {
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
    if (!choice.skill.is_empty() || choice.all) && direct.is_empty() && registry_url.is_none() {
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
    Ok(Arguments {
        registry_url,
        set,
        direct,
        optional,
        refused,
    })
}

/// Whether `text` is an http(s) URL.
fn is_web(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    lower.starts_with("https://") || lower.starts_with("http://")
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
pub fn none_taken(refused: &[Refusal]) -> anyhow::Error {
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
fn registry_argument(
    texts: &[String],
    choice: &Choice<'_>,
    listener: &dyn Listener,
) -> anyhow::Result<Option<String>> {
    let mut found = None;
    for text in texts {
        let lower = text.to_ascii_lowercase();
        // A discovery index named by its own URL is read as asked (with a
        // warning at install when it is a registry's).
        let index = lower.contains("/.well-known/") || lower.ends_with(".json");
        if !is_web(text) || index || choice.offline {
            continue;
        }
        // A site whose config.json cannot be read is not taken for a
        // registry; reading it as a site says what is wrong with it.
        let is_registry = block_on(web::is_registry(text))
            .ok()
            .and_then(Result::ok)
            .unwrap_or(false);
        if !is_registry {
            continue;
        }
        if found.is_some() || choice.registry.is_some() {
            return Err(UserError::new(format!(
                "`{text}` is a skillpkg registry, and another registry is given too"
            ))
            .with_hint("add from one registry at a time")
            .into());
        }
        if choice.all {
            return Err(UserError::new(format!(
                "`{text}` is a skillpkg registry: --all would add every skill it serves"
            ))
            .with_hint(format!(
                "name the skills: `skillpkg add {text} --skill NAME` (repeat for several), or `skillpkg search --registry {text} WORDS` to find them"
            ))
            .into());
        }
        if choice.skill.is_empty() {
            return Err(UserError::new(format!(
                "`{text}` is a skillpkg registry: which of its skills?"
            ))
            .with_hint(format!(
                "name them: `skillpkg add {text} --skill NAME`, or `skillpkg add NAME --registry {text}`"
            ))
            .into());
        }
        listener.status(
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
    choice: &Choice<'_>,
    listener: &dyn Listener,
) -> anyhow::Result<Option<Taken>> {
    if let Some(folder) = folder_argument(text) {
        return folder_skills(text, folder, root, choice, listener).map(Some);
    }
    let git = source::git_argument(text);
    if git.is_none() && !is_web(text) {
        return Ok(None);
    }
    if choice.offline {
        return Err(UserError::new(format!(
            "adding from `{text}` fetches it, and --offline forbids that"
        ))
        .into());
    }
    let Some(git) = git else {
        return web_skills(text, choice, listener).map(Some);
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
    git_skills(text, &git, root, choice, listener).map(Some)
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
fn folder_skills(
    text: &str,
    folder: &str,
    root: &Path,
    choice: &Choice<'_>,
    listener: &dyn Listener,
) -> anyhow::Result<Taken> {
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
        if !choice.skill.is_empty() {
            return Err(UserError::new(format!(
                "`{folder}` is a skill itself, so --skill has nothing to choose from"
            ))
            .with_hint("leave out --skill")
            .into());
        }
        vec![dir]
    } else {
        choose(
            folder,
            &dir,
            &folder::skills_below(&dir, 3),
            choice,
            listener,
        )?
    };
    take_each(
        &folders,
        |path| folder_label(path),
        |path| {
            let skill = folder::read_folder(path, &format!("`{text}`"))?;
            let written = written(path, &root, choice).ok_or_else(|| {
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

/// How skills.toml names `path`, a folder on this machine: relative to the
/// project's `root`, or as it is for the user's own skills.toml.
fn written(path: &Path, root: &Path, choice: &Choice<'_>) -> Option<String> {
    if choice.absolute_paths {
        path.to_str().map(str::to_owned)
    } else {
        folder::relative_path(path, root)
    }
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
    choice: &Choice<'_>,
    listener: &dyn Listener,
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
        if let Some(written) = written(&path, &root, choice) {
            git.url = written;
        }
        path.to_string_lossy().into_owned()
    } else {
        git.url.clone()
    };
    let git = &git;
    listener.status("Fetching", &location);
    let (commit, found) = git::list_skills(git, &location, choice.offline)?;
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
        if !choice.skill.is_empty() {
            return Err(UserError::new(format!(
                "`{text}` is a skill itself, so --skill has nothing to choose from"
            ))
            .with_hint("leave out --skill")
            .into());
        }
        vec![PathBuf::from(".")]
    } else {
        choose(text, Path::new("."), &relative, choice, listener)?
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
                choice.offline,
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
fn web_skills(text: &str, choice: &Choice<'_>, listener: &dyn Listener) -> anyhow::Result<Taken> {
    let url = web::parse_url(text)?;
    let origin = format!("`{text}`");
    if web::is_tarball(&url) {
        if !choice.skill.is_empty() || choice.all {
            return Err(UserError::new(format!(
                "`{text}` is a tarball of one skill, so --skill and --all have nothing to choose from"
            ))
            .into());
        }
        listener.status("Fetching", text);
        let (_, skill) = block_on(web::read_tarball(&url, None, &origin))??;
        return Ok(Taken {
            skills: vec![(skill.packed.name, Direct::Url(text.to_owned()))],
            refused: Vec::new(),
            several: false,
        });
    }
    listener.status("Fetching", &format!("the discovery index of {text}"));
    let index = block_on(web::read_index(text))??;
    for skipped in &index.skipped {
        listener.warning(&format!("{} leaves out {skipped}", index.url));
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
    let chosen = choose(text, Path::new(""), &names, choice, listener)?;
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
            let folder = block_on(web::read_index_skill(skill, None, &origin))??;
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
    choice: &Choice<'_>,
    listener: &dyn Listener,
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
    if choice.all {
        return Ok(found.iter().map(|relative| dir.join(relative)).collect());
    }
    if !choice.skill.is_empty() {
        let mut chosen = Vec::new();
        for name in choice.skill {
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
    if let Some(picked) = ask(found, &name_of, listener)? {
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
    listener: &dyn Listener,
) -> anyhow::Result<Option<Vec<&'a String>>> {
    let names: Vec<String> = found.iter().map(name_of).collect();
    let items: Vec<String> = found
        .iter()
        .zip(&names)
        .map(|(relative, name)| format!("{name} ({relative})"))
        .collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let Some(chosen) = listener.choose(&items, &names)? else {
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
