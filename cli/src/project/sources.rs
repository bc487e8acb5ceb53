//! Skills that come from somewhere other than a registry (docs/sources.md):
//! a local folder (`{ path = "skills/pdf" }`) or a git repository (`{ git =
//! URL, rev = REV, path = PATH }`).
//!
//! Such a skill goes through the same gate as a registry's archive: its
//! folder is validated as `publish` would, packed by skillpkg's own packer
//! (which leaves out what a package leaves out and refuses what it
//! refuses: symlinks, unportable paths, more than 8 MiB), and the archive is
//! then unpacked, tree-hashed, audited and installed like any other. The
//! lock pins its files by their tree hash, not by an archive checksum: the
//! bytes of an archive skillpkg packs may change between its versions, the
//! files do not.

use std::path::{Component, Path, PathBuf};

use skillpkg_index::archive::{self, Limits, PackedSkill};
use skillpkg_index::skill::{self, SkillName, ValidateOptions};

use std::collections::BTreeMap;

use super::lockfile::{
    GIT_SOURCE_PREFIX, INDEX_SOURCE_PREFIX, LockedSkill, Lockfile, PATH_SOURCE_PREFIX,
    URL_SOURCE_PREFIX,
};
use super::manifest::Manifest;
use crate::error::UserError;

/// A manifest entry that names where a skill's files are, not a version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Direct {
    /// `{ path = "skills/pdf" }`: a folder, relative to the project's root
    /// (or absolute), read again at every install.
    Path(String),
    /// `{ git = URL, rev = REV, path = PATH }`.
    Git(GitSource),
    /// `{ index = URL }`: the skill of that name in the discovery index of
    /// a site (or at that URL).
    Index(String),
    /// `{ url = URL }`: a tarball of the skill's folder.
    Url(String),
}

/// A skill in a git repository.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GitSource {
    /// The repository: `https://`, `ssh://`, `git://` or `file://` URL, or
    /// a local path.
    pub url: String,
    /// A branch, a tag or a commit; the remote's default branch when
    /// absent.
    pub rev: Option<String>,
    /// The skill's folder inside the repository; its root when absent.
    pub path: Option<String>,
}

/// The keys of a skill's table that name where its files are.
pub const DIRECT_KEYS: [&str; 5] = ["path", "git", "rev", "index", "url"];

/// Returns true if and only if a `[skills]` table names where the skill's
/// files are rather than a version.
pub fn is_direct_table(has: &dyn Fn(&str) -> bool) -> bool {
    ["path", "git", "index", "url"].into_iter().any(has)
}

impl Direct {
    /// Reads a `[skills]` table that has `path` or `git`; `invalid` words
    /// the error for the entry.
    pub fn from_table(
        table: &toml::Table,
        invalid: &dyn Fn(String) -> anyhow::Error,
    ) -> anyhow::Result<Direct> {
        let string = |key: &str| -> anyhow::Result<Option<String>> {
            match table.get(key) {
                None => Ok(None),
                Some(toml::Value::String(text)) if !text.trim().is_empty() => {
                    Ok(Some(text.clone()))
                }
                Some(_) => Err(invalid(format!(
                    "has a `{key}` that is not a non-empty string"
                ))),
            }
        };
        if let Some(key) = table
            .keys()
            .find(|key| !DIRECT_KEYS.contains(&key.as_str()))
        {
            return Err(invalid(format!(
                "has `{key}`, which a skill from a folder, a git repository, a discovery index or a URL cannot have (their keys are `path`, `git` with `rev` and `path`, `index` and `url`)"
            )));
        }
        let kinds: Vec<&str> = ["git", "index", "url"]
            .into_iter()
            .filter(|key| table.contains_key(*key))
            .collect();
        if kinds.len() > 1 {
            return Err(invalid(format!(
                "has both `{}` and `{}`",
                kinds[0], kinds[1]
            )));
        }
        for key in ["index", "url"] {
            if let Some(url) = string(key)? {
                if let Some(other) = ["path", "rev"]
                    .into_iter()
                    .find(|other| table.contains_key(*other))
                {
                    return Err(invalid(format!("has `{other}` beside `{key}`")));
                }
                super::web::parse_url(&url)
                    .map_err(|error| invalid(format!("has `{key} = \"{url}\"`: {error}")))?;
                return Ok(if key == "index" {
                    Direct::Index(url)
                } else {
                    Direct::Url(url)
                });
            }
        }
        let path = string("path")?;
        if let Some(path) = &path {
            check_relative_path(path)
                .map_err(|why| invalid(format!("has `path = \"{path}\"`, {why}")))?;
        }
        match string("git")? {
            Some(url) => {
                check_git_url(&url)
                    .map_err(|why| invalid(format!("has `git = \"{url}\"`, {why}")))?;
                Ok(Direct::Git(GitSource {
                    url,
                    rev: string("rev")?,
                    path: path.map(|path| normalize(&path)),
                }))
            }
            None if table.contains_key("rev") => Err(invalid("has `rev` without `git`".into())),
            None => Ok(Direct::Path(
                path.expect("a direct entry has `path` or `git`"),
            )),
        }
    }

    /// The entry as skills.toml writes it.
    pub fn to_toml(&self) -> toml_edit::InlineTable {
        let mut table = toml_edit::InlineTable::new();
        match self {
            Direct::Path(path) => {
                table.insert("path", path.as_str().into());
            }
            Direct::Index(url) => {
                table.insert("index", url.as_str().into());
            }
            Direct::Url(url) => {
                table.insert("url", url.as_str().into());
            }
            Direct::Git(git) => {
                table.insert("git", git.url.as_str().into());
                if let Some(rev) = &git.rev {
                    table.insert("rev", rev.as_str().into());
                }
                if let Some(path) = &git.path {
                    table.insert("path", path.as_str().into());
                }
            }
        }
        table
    }

    /// The `source` of the lock entry, without a git source's commit.
    fn source_stem(&self) -> String {
        match self {
            Direct::Path(path) => format!("{PATH_SOURCE_PREFIX}{}", normalize(path)),
            Direct::Index(url) => format!("{INDEX_SOURCE_PREFIX}{url}"),
            Direct::Url(url) => format!("{URL_SOURCE_PREFIX}{url}"),
            Direct::Git(git) => {
                let mut query = Vec::new();
                if let Some(rev) = &git.rev {
                    query.push(format!("rev={}", escape(rev)));
                }
                if let Some(path) = &git.path {
                    query.push(format!("path={}", escape(path)));
                }
                let separator = if query.is_empty() { "" } else { "?" };
                format!(
                    "{GIT_SOURCE_PREFIX}{}{separator}{}",
                    git.url,
                    query.join("&")
                )
            }
        }
    }

    /// The `source` of the lock entry of this skill; `commit` is what a git
    /// source was resolved to.
    pub fn lock_source(&self, commit: Option<&str>) -> String {
        match commit {
            Some(commit) => format!("{}#{commit}", self.source_stem()),
            None => self.source_stem(),
        }
    }

    /// Returns true if and only if `entry` was locked from this very entry
    /// (for a git source: the same URL, `rev` and `path`, at any commit).
    pub fn locked_by(&self, entry: &LockedSkill) -> bool {
        match self {
            Direct::Path(_) | Direct::Index(_) | Direct::Url(_) => {
                entry.source == self.source_stem()
            }
            Direct::Git(_) => entry
                .source
                .rsplit_once('#')
                .is_some_and(|(stem, _)| stem == self.source_stem()),
        }
    }

    /// Says where the skill comes from, for messages: `./skills/pdf`,
    /// `https://host/repo.git (v1.2.0)`.
    pub fn describe(&self) -> String {
        match self {
            Direct::Path(path) => format!("folder {path}"),
            Direct::Index(url) => format!("discovery index {url}"),
            Direct::Url(url) => format!("tarball {url}"),
            Direct::Git(git) => {
                let mut text = format!("git repository {}", git.url);
                if let Some(path) = &git.path {
                    text.push_str(&format!(", folder {path}"));
                }
                if let Some(rev) = &git.rev {
                    text.push_str(&format!(", at {rev}"));
                }
                text
            }
        }
    }
}

/// Escapes what would make a value of a `source`'s query ambiguous (`%`,
/// `&`, `=`, `#`, `?`, whitespace), keeping `/` readable.
fn escape(value: &str) -> String {
    let mut escaped = String::with_capacity(value.len());
    for character in value.chars() {
        match character {
            '%' | '&' | '=' | '#' | '?' | '+' => {
                escaped.push_str(&format!("%{:02X}", u32::from(character)));
            }
            character if character.is_whitespace() || character.is_control() => {
                let mut bytes = [0; 4];
                for byte in character.encode_utf8(&mut bytes).bytes() {
                    escaped.push_str(&format!("%{byte:02X}"));
                }
            }
            character => escaped.push(character),
        }
    }
    escaped
}

impl GitSource {
    /// Where the repository is for a project at `root`: the URL as it is,
    /// or a local path resolved against the project's root (never against
    /// the folder a command runs in), so that one entry means one
    /// repository wherever it is read from, and is cached as that one.
    pub fn location(&self, root: &Path) -> String {
        if !is_local_path(&self.url) {
            return self.url.clone();
        }
        let path = root.join(&self.url);
        std::fs::canonicalize(&path)
            .unwrap_or(path)
            .to_string_lossy()
            .into_owned()
    }
}

/// Returns true if and only if a git `url` is a local path: no scheme, and
/// not scp-like (`user@host:path`, where a `:` comes before any `/`).
pub fn is_local_path(url: &str) -> bool {
    if url.contains("://") {
        return false;
    }
    match (url.find(':'), url.find('/')) {
        (Some(colon), Some(slash)) => colon > slash,
        (Some(_), None) => false,
        _ => true,
    }
}

/// Returns the commit a git `source` of skills.lock pins.
pub fn locked_commit(source: &str) -> Option<&str> {
    source
        .strip_prefix(GIT_SOURCE_PREFIX)?
        .rsplit_once('#')
        .map(|(_, commit)| commit)
}

/// `skills/pdf/`, `./skills\pdf` -> `skills/pdf`.
fn normalize(path: &str) -> String {
    let slashed = path.replace('\\', "/");
    let parts: Vec<&str> = slashed
        .split('/')
        .enumerate()
        .filter(|(index, part)| !(part.is_empty() && *index > 0) && *part != ".")
        .map(|(_, part)| part)
        .collect();
    if parts.is_empty() {
        ".".to_owned()
    } else {
        parts.join("/")
    }
}

/// A folder path in skills.toml: not empty and free of NUL. It may lead out
/// of the project (a skill shared by two projects beside each other): the
/// folder is only read, and what it holds must still be a valid skill.
fn check_relative_path(path: &str) -> Result<(), String> {
    if path.contains('\0') {
        return Err("which holds a NUL character".into());
    }
    Ok(())
}

/// A repository URL from skills.toml, which may come from a cloned
/// repository: an `https`, `http`, `ssh`, `git` or `file` URL, an scp-like
/// `user@host:path` or a local path, with nothing that a transport could
/// read as an option (a part starting with `-`, as in `ssh://-oProxyCommand=...`)
/// or a command (`ext::`).
pub fn check_git_url(url: &str) -> Result<(), String> {
    if url
        .chars()
        .any(|character| character.is_whitespace() || character.is_control())
    {
        return Err("which holds whitespace or control characters".into());
    }
    if let Some((scheme, _)) = url.split_once("://") {
        if !matches!(scheme, "https" | "http" | "ssh" | "git" | "file") {
            return Err(format!(
                "whose scheme `{scheme}` is not https, http, ssh, git or file"
            ));
        }
    } else if url.contains("::") {
        return Err("which names a transport helper (`::`), which skillpkg does not run".into());
    }
    // Percent-decoded too: `%2D` is a `-` to a transport that decodes.
    let decoded = url.replace("%2D", "-").replace("%2d", "-");
    if decoded
        .split(['/', '@', ':', '[', ']'])
        .any(|part| part.starts_with('-'))
    {
        return Err(
            "in which a part starts with `-`, which a transport could read as an option".into(),
        );
    }
    if url::Url::parse(url).is_ok_and(|parsed| parsed.password().is_some()) {
        return Err(
            "which holds a password, which would be written to skills.toml and skills.lock".into(),
        );
    }
    Ok(())
}

/// The folder of a `path` source of the project at `root`.
pub fn folder_of(root: &Path, path: &str) -> PathBuf {
    root.join(path)
}

/// Returns `path` relative to `base` (both absolute and normalised), with
/// `/` separators: how `add ./skills/pdf`, typed anywhere in the project,
/// is written in skills.toml.
pub fn relative_path(path: &Path, base: &Path) -> Option<String> {
    let path: Vec<Component<'_>> = path.components().collect();
    let base: Vec<Component<'_>> = base.components().collect();
    if path.first() != base.first() {
        return None;
    }
    let common = path.iter().zip(&base).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<String> = vec!["..".to_owned(); base.len() - common];
    for component in &path[common..] {
        parts.push(component.as_os_str().to_str()?.to_owned());
    }
    Some(if parts.is_empty() {
        ".".to_owned()
    } else {
        parts.join("/")
    })
}

/// A skill read from a folder: validated and packed.
#[derive(Debug)]
pub struct FolderSkill {
    pub packed: PackedSkill,
    /// Skills its frontmatter says it depends on (installed only for
    /// skills from a registry, for now).
    pub dependencies: Vec<SkillName>,
    /// The rules of the specification it breaks that agents load it
    /// despite ([`skill::AGENTS_TOLERATE`]), each with what agents do.
    pub warnings: Vec<String>,
}

/// Reads the skill in `dir`, a folder of the user's: validated as `publish`
/// validates (an invalid skill is refused, its errors named), then packed
/// in memory. `origin` says where the folder came from, for messages.
pub fn read_folder(dir: &Path, origin: &str) -> anyhow::Result<FolderSkill> {
    read_skill_folder(dir, origin, true)
}

/// [`read_folder`] for a folder skillpkg wrote from a repository, an
/// index or a tarball: messages name the source, not the temporary
/// folder, and hints speak of the source's files.
pub fn read_fetched(dir: &Path, origin: &str) -> anyhow::Result<FolderSkill> {
    read_skill_folder(dir, origin, false)
}

fn read_skill_folder(dir: &Path, origin: &str, local: bool) -> anyhow::Result<FolderSkill> {
    if !local && !dir.join(skill::SKILL_MD).is_file() {
        return Err(UserError::new(format!("{origin}: the skill's folder has no SKILL.md"))
            .with_hint("give the folder of the skill, the one that holds SKILL.md; nothing was installed")
            .into());
    }
    let metadata = match fs_err::metadata(dir) {
        Ok(metadata) => metadata,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Err(
                UserError::new(format!("{origin}: `{}` does not exist", dir.display()))
                    .with_hint("give the folder that holds the skill's SKILL.md")
                    .into(),
            );
        }
        Err(error) => return Err(error.into()),
    };
    if !metadata.is_dir() {
        return Err(
            UserError::new(format!("{origin}: `{}` is not a folder", dir.display()))
                .with_hint("give the folder that holds the skill's SKILL.md")
                .into(),
        );
    }
    if !dir.join(skill::SKILL_MD).is_file() {
        let mut hint = "a skill is a folder with a SKILL.md".to_owned();
        let inside = skills_below(dir, 2);
        if !inside.is_empty() {
            hint = format!(
                "it holds skills in {}: give one of those folders",
                inside.join(", ")
            );
        }
        return Err(
            UserError::new(format!("{origin}: `{}` has no SKILL.md", dir.display()))
                .with_hint(hint)
                .into(),
        );
    }
    // What agents load, an install takes: the rules they do not enforce
    // are warnings here, and stay errors for `validate` and `publish`.
    let options = ValidateOptions {
        tolerate: skill::AGENTS_TOLERATE.to_vec(),
        ..ValidateOptions::for_folder(dir)
    };
    let report = skill::validate_skill(dir, &options);
    let Some(frontmatter) = report.frontmatter.clone().filter(|_| report.is_valid()) else {
        let errors: Vec<String> = report
            .diagnostics
            .iter()
            .filter(|diagnostic| diagnostic.severity == skill::Severity::Error)
            .take(5)
            .map(|diagnostic| match &diagnostic.location {
                Some(location) => format!(
                    "{}:{}: {}",
                    diagnostic.file.display(),
                    location.line,
                    diagnostic.message
                ),
                None => format!("{}: {}", diagnostic.file.display(), diagnostic.message),
            })
            .collect();
        return Err(UserError::new(format!(
            "{origin}: not a valid skill: {}",
            errors.join("; ")
        ))
        .with_hint(if local {
            format!(
                "nothing was installed; `skillpkg validate {}` lists every problem",
                dir.display()
            )
        } else {
            "nothing was installed; the publisher of the skill can list every problem with `skillpkg validate`".to_owned()
        })
        .into());
    };
    let version = frontmatter
        .version
        .clone()
        .unwrap_or_else(|| semver::Version::new(0, 0, 0));
    let packed = archive::pack_dir(dir, frontmatter.name.clone(), version, &Limits::default())
        .map_err(|error| {
            let hint = error.hint().filter(|_| local);
            let error = if local {
                UserError::new(format!(
                    "{origin}: cannot take the skill in `{}`",
                    dir.display()
                ))
            } else {
                UserError::new(format!("{origin}: cannot take the skill")).with_hint(
                    "nothing was installed; the skill's files are beyond what a package may hold",
                )
            }
            .with_source(error);
            match hint {
                Some(hint) => error.with_hint(hint),
                None => error,
            }
        })?;
    let warnings = report
        .diagnostics
        .iter()
        .filter_map(|diagnostic| {
            let agents = skill::agents_tolerate(diagnostic.code)?;
            Some(format!(
                "{origin}: {} ({}): {agents}; `skillpkg validate` and `publish` refuse it",
                diagnostic.message,
                diagnostic.code.as_str()
            ))
        })
        .collect();
    Ok(FolderSkill {
        packed,
        warnings,
        dependencies: frontmatter
            .dependencies
            .into_iter()
            .map(|dependency| dependency.name)
            .collect(),
    })
}

/// The skills of the manifest that come from a folder or a repository, as
/// they stand now.
#[derive(Debug, Default)]
pub struct DirectLock {
    /// Their lock entries.
    pub entries: Vec<LockedSkill>,
    /// The archives packed from their files, by name.
    pub packed: BTreeMap<SkillName, PackedSkill>,
    pub warnings: Vec<String>,
}

impl DirectLock {
    /// Returns the locked entry of `name` when the lock has it from the
    /// same source with the same files.
    pub fn satisfied_by(&self, lock: &Lockfile) -> bool {
        self.entries.iter().all(|entry| {
            lock.get(&entry.name)
                .is_some_and(|locked| locked.source == entry.source && locked.tree == entry.tree)
        })
    }

    /// The first skill whose files changed since `lock` pinned them from the
    /// same source.
    pub fn changed_since<'a>(&'a self, lock: &Lockfile) -> Option<&'a LockedSkill> {
        self.entries.iter().find(|entry| {
            lock.get(&entry.name)
                .is_some_and(|locked| locked.source == entry.source && locked.tree != entry.tree)
        })
    }
}

/// Locks every skill of the manifest that comes from a folder or a git
/// repository. A folder is validated and packed now (it is read again at
/// every install: its files are the truth, and the lock follows them). A
/// git source keeps its locked commit while its entry (URL, `rev`, `path`)
/// is unchanged and it is not being updated (`update`: the names to
/// update, all when empty); else its `rev` is resolved again, and the
/// skill read at that commit.
pub async fn lock_direct(
    root: &Path,
    manifest: &Manifest,
    old: Option<&Lockfile>,
    update: Option<&[SkillName]>,
    offline: bool,
    locked: bool,
    targets: &[super::targets::Target],
) -> anyhow::Result<DirectLock> {
    let mut lock = DirectLock::default();
    for (name, source) in &manifest.direct {
        let origin = format!("`{name}` in skills.toml");
        let updating = update.is_some_and(|names| names.is_empty() || names.contains(name));
        tracing::debug!(skill = %name, source = %source.describe(), "reading");
        if let Direct::Path(path) = source {
            let dir = folder_of(root, path);
            check_apart_from_targets(&dir, targets, &origin, path)?;
            let folder = read_folder(&dir, &origin)?;
            lock.add(name, source.lock_source(None), None, folder, old)?;
            continue;
        }
        // A source fetched from elsewhere keeps what the lock pins while
        // its entry is unchanged; it is read only when a target needs its
        // files.
        if let Some(entry) = old
            .and_then(|lock| lock.get(name))
            .filter(|entry| source.locked_by(entry) && !updating)
        {
            lock.entries.push(entry.clone());
            continue;
        }
        if locked {
            // Not locked as skills.toml asks: the lock does not satisfy the
            // manifest, which --locked refuses (without fetching anything).
            continue;
        }
        if offline {
            return Err(UserError::new(format!(
                "{origin} comes from the {}, which must be fetched to lock it, and --offline forbids that",
                source.describe()
            ))
            .with_hint("run without --offline once")
            .into());
        }
        let (lock_source, checksum, folder) = fetch(root, source, name, None, &origin).await?;
        lock.add(name, lock_source, checksum, folder, old)?;
    }
    Ok(lock)
}

/// Refuses a skill folder that is inside an install target (installing it
/// would replace the very folder it is read from) or that holds one (each
/// install would pack the copies it made before).
fn check_apart_from_targets(
    dir: &Path,
    targets: &[super::targets::Target],
    origin: &str,
    path: &str,
) -> anyhow::Result<()> {
    let resolve = |path: &Path| -> PathBuf {
        // A target may not exist yet: its nearest existing ancestor,
        // resolved, and the rest as written.
        let mut existing = path;
        let mut rest = Vec::new();
        while !existing.exists() {
            let Some(parent) = existing.parent() else {
                break;
            };
            rest.push(existing.file_name().unwrap_or_default().to_owned());
            existing = parent;
        }
        let mut resolved = std::fs::canonicalize(existing).unwrap_or_else(|_| existing.to_owned());
        resolved.extend(rest.iter().rev());
        resolved
    };
    let folder = resolve(dir);
    for target in targets {
        let target_dir = resolve(&target.dir);
        let relation = if folder.starts_with(&target_dir) {
            "is inside"
        } else if target_dir.starts_with(&folder) {
            "holds"
        } else {
            continue;
        };
        return Err(UserError::new(format!(
            "{origin} is taken from folder {path}, which {relation} the install target `{}` ({})",
            target.name,
            target.dir.display()
        ))
        .with_hint("keep the skill's own folder apart from the agent folders skillpkg installs into, such as skills/NAME")
        .into());
    }
    Ok(())
}

/// Fetches the skill `name` that `source` (not a folder) names: at the
/// commit, digest or checksum `pinned` says (from skills.lock), else as
/// the source stands now. Returns the `source` to lock, the checksum to
/// lock (of a tarball or an index's artifact) and the skill.
pub async fn fetch(
    root: &Path,
    source: &Direct,
    name: &SkillName,
    pinned: Option<&LockedSkill>,
    origin: &str,
) -> anyhow::Result<(
    String,
    Option<skillpkg_index::checksum::Checksum>,
    FolderSkill,
)> {
    match source {
        Direct::Path(path) => Err(anyhow::anyhow!("the folder {path} is not fetched")),
        Direct::Git(git) => {
            let commit = pinned.and_then(|entry| locked_commit(&entry.source));
            let location = git.location(root);
            let (commit, folder) = super::git::read_skill(git, &location, commit, false, origin)?;
            Ok((source.lock_source(Some(&commit)), None, folder))
        }
        Direct::Index(site) => {
            let index = super::web::read_index(site).await?;
            let Some(skill) = index.skills.iter().find(|skill| &skill.name == name) else {
                let why = index
                    .skipped
                    .iter()
                    .find(|why| why.starts_with(&format!("`{name}`")))
                    .map(|why| format!(" (its entry is not valid: {why})"))
                    .unwrap_or_default();
                return Err(UserError::new(format!(
                    "{origin}: the discovery index at {} lists no skill `{name}`{why}",
                    index.url
                ))
                .with_hint(format!("it lists {}", listed(&index)))
                .into());
            };
            let locked = pinned.and_then(|entry| entry.checksum);
            let mut folder = super::web::read_index_skill(skill, locked, origin).await?;
            // Read through the discovery index, a registry's skill has no
            // signature and no version: never silently.
            if super::web::is_registry(site).await.unwrap_or(false) {
                folder.warnings.push(format!(
                    "{origin} is read through the discovery index of {site}, which is a skillpkg registry: its signature and version are not checked; `skillpkg add {site} --skill {name}` installs it as a registry skill"
                ));
            }
            Ok((source.lock_source(None), skill.artifact.digest(), folder))
        }
        Direct::Url(url) => {
            let url = super::web::parse_url(url)?;
            let locked = pinned.and_then(|entry| entry.checksum);
            let (checksum, folder) = super::web::read_tarball(&url, locked, origin).await?;
            Ok((source.lock_source(None), Some(checksum), folder))
        }
    }
}

/// The skills an index lists, for messages.
pub fn listed(index: &super::web::Index) -> String {
    if index.skills.is_empty() {
        return "no valid entry".to_owned();
    }
    index
        .skills
        .iter()
        .map(|skill| skill.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

impl DirectLock {
    /// Adds the skill `name` read from `source`, checking it is the skill
    /// the entry names.
    fn add(
        &mut self,
        name: &SkillName,
        source: String,
        checksum: Option<skillpkg_index::checksum::Checksum>,
        folder: FolderSkill,
        old: Option<&Lockfile>,
    ) -> anyhow::Result<()> {
        let origin = format!("`{name}` in skills.toml");
        if &folder.packed.name != name {
            return Err(UserError::new(format!(
                "{origin} is taken from {}, which holds the skill `{}`",
                describe_source(&source),
                folder.packed.name
            ))
            .with_hint(format!(
                "name the entry `{}`, or point it at the folder of `{name}`",
                folder.packed.name
            ))
            .into());
        }
        if !folder.dependencies.is_empty() {
            let names: Vec<&str> = folder.dependencies.iter().map(SkillName::as_str).collect();
            self.warnings.push(format!(
                "`{name}` depends on {}, which skillpkg installs only for skills from a registry: add them to skills.toml",
                names.join(", ")
            ));
        }
        self.warnings.extend(folder.warnings);
        let packed = folder.packed;
        // The lock's own tree hash while the files still match it (an
        // `h1:` one too: the lock does not change for the hash's version).
        let same = old
            .and_then(|lock| lock.get(name))
            .filter(|locked| locked.source == source && packed.tree_is(&locked.tree));
        let tree = same.map_or_else(|| packed.tree.to_string(), |locked| locked.tree.clone());
        let audit = same.and_then(|locked| locked.audit.clone());
        self.entries.push(LockedSkill {
            name: name.clone(),
            version: packed.version.clone(),
            source,
            checksum,
            tree,
            signer: None,
            provenance: None,
            dependencies: Vec::new(),
            audit,
        });
        self.packed.insert(name.clone(), packed);
        Ok(())
    }
}

/// A lock `source`, said for messages: `path:skills/pdf` as `folder
/// skills/pdf`; others as they are.
fn describe_source(source: &str) -> String {
    match source.strip_prefix(PATH_SOURCE_PREFIX) {
        Some(path) => format!("folder {path}"),
        None => source.to_owned(),
    }
}

/// The `name` a folder's SKILL.md gives, when it gives a valid one.
fn skill_name_of(dir: &Path) -> Option<SkillName> {
    let bytes = fs_err::read(dir.join(skill::SKILL_MD)).ok()?;
    let document = skill::document::parse(&bytes).ok()?;
    document.get("name")?.1.value.as_str()?.parse().ok()
}

/// Renames `dir`, a folder skillpkg wrote from a repository or a tarball,
/// after the skill its SKILL.md names (a skill's folder bears its name;
/// the repository's or the tarball's may differ), in the same parent;
/// leaves it as it is when its SKILL.md names none.
pub fn named_after_its_skill(dir: PathBuf) -> anyhow::Result<PathBuf> {
    let Some(name) = skill_name_of(&dir) else {
        return Ok(dir);
    };
    let named = dir.with_file_name(name.as_str());
    fs_err::rename(&dir, &named)?;
    Ok(named)
}

/// Reads a git source as `add` is given it: `git+URL[#REV]`,
/// `github:OWNER/REPO[/PATH][@REV]`, `OWNER/REPO[/PATH][@REV]` (GitHub),
/// a `https://github.com/OWNER/REPO[/tree/REV/PATH]` page, or any URL whose
/// path ends in `.git` (`#REV` for the revision). `None` when `text` is not
/// one of these.
pub fn git_argument(text: &str) -> Option<GitSource> {
    if let Some(rest) = text.strip_prefix("git+") {
        let (url, rev) = split_rev(rest, '#');
        return Some(GitSource {
            url: url.to_owned(),
            rev,
            path: None,
        });
    }
    if let Some(rest) = text.strip_prefix("github:") {
        return github(rest);
    }
    let lower = text.to_ascii_lowercase();
    let is_web = lower.starts_with("https://") || lower.starts_with("http://");
    // A tarball is a tarball wherever it is, GitHub's release and archive
    // downloads included.
    if is_web && url::Url::parse(text).is_ok_and(|url| super::web::is_tarball(&url)) {
        return None;
    }
    if let Some(rest) = ["https://github.com/", "http://github.com/"]
        .iter()
        .find(|prefix| lower.starts_with(*prefix))
        .map(|prefix| &text[prefix.len()..])
    {
        let rest = rest.trim_end_matches('/');
        let parts: Vec<&str> = rest.split('/').collect();
        if parts.len() >= 4 && matches!(parts[2], "tree" | "blob") {
            // A page: /OWNER/REPO/tree/REV/PATH, or a file's page
            // /OWNER/REPO/blob/REV/PATH/SKILL.md (a REV with `/` is read as
            // its first part; write `github:OWNER/REPO/PATH@REV` for it).
            let mut path: Vec<&str> = parts[4..].to_vec();
            if path.last().is_some_and(|last| *last == skill::SKILL_MD) {
                path.pop();
            }
            let path = path.join("/");
            return Some(GitSource {
                url: github_url(parts[0], parts[1]),
                rev: Some(parts[3].to_owned()),
                path: (!path.is_empty()).then_some(path),
            });
        }
        let (rest, rev) = split_rev(rest, '#');
        return github(rest).map(|source| GitSource {
            rev: rev.or(source.rev),
            ..source
        });
    }
    if let Some((scheme, _)) = text.split_once("://") {
        let (url, rev) = split_rev(text, '#');
        let is_git = matches!(scheme.to_ascii_lowercase().as_str(), "git" | "ssh" | "file")
            || url.trim_end_matches('/').ends_with(".git");
        return is_git.then(|| GitSource {
            url: url.to_owned(),
            rev,
            path: None,
        });
    }
    // scp-like: `git@github.com:acme/skills.git[#REV]`.
    if let Some((user_host, _)) = text.split_once(':')
        && user_host.contains('@')
        && !user_host.contains('/')
    {
        let (url, rev) = split_rev(text, '#');
        return Some(GitSource {
            url: url.to_owned(),
            rev,
            path: None,
        });
    }
    if text.contains('/') && !text.starts_with(['.', '/', '~']) && !text.contains(':') {
        return github(text);
    }
    None
}

/// `OWNER/REPO[/PATH][@REV]`.
fn github(text: &str) -> Option<GitSource> {
    let (text, rev) = split_rev(text, '@');
    let mut parts = text.trim_matches('/').splitn(3, '/');
    let owner = parts.next().filter(|part| is_github_name(part))?;
    let repo = parts.next().filter(|part| is_github_name(part))?;
    let path = parts.next().map(normalize).filter(|path| path != ".");
    Some(GitSource {
        url: github_url(owner, repo),
        rev,
        path,
    })
}

fn github_url(owner: &str, repo: &str) -> String {
    let repo = repo.strip_suffix(".git").unwrap_or(repo);
    format!("https://github.com/{owner}/{repo}.git")
}

fn is_github_name(text: &str) -> bool {
    !text.is_empty()
        && text
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.'))
        && text != "."
        && text != ".."
}

/// `text` split at the last `separator` into what is before it and a
/// non-empty revision after it.
fn split_rev(text: &str, separator: char) -> (&str, Option<String>) {
    match text.rsplit_once(separator) {
        Some((before, rev)) if !rev.is_empty() => (before, Some(rev.to_owned())),
        Some((before, _)) => (before, None),
        None => (text, None),
    }
}

/// The folders with a SKILL.md at most `depth` levels below `dir`, sorted,
/// relative to it.
pub fn skills_below(dir: &Path, depth: usize) -> Vec<String> {
    let mut found = Vec::new();
    let mut pending = vec![(dir.to_owned(), 0)];
    while let Some((folder, level)) = pending.pop() {
        let Ok(entries) = fs_err::read_dir(&folder) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let name = entry.file_name();
            if !kind.is_dir() || name.to_string_lossy().starts_with('.') {
                continue;
            }
            let path = entry.path();
            // A skill's own folders are searched too: collections nest
            // skills inside skills.
            if path.join(skill::SKILL_MD).is_file()
                && let Some(relative) = relative_path(&path, dir)
            {
                found.push(relative);
            }
            if level + 1 < depth {
                pending.push((path, level + 1));
            }
        }
    }
    found.sort();
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[allow(clippy::needless_pass_by_value)] // the shape `from_table` takes
    fn invalid(problem: String) -> anyhow::Error {
        anyhow::anyhow!("the entry {problem}")
    }

    fn table(text: &str) -> toml::Table {
        text.parse().unwrap()
    }

    #[test]
    fn entries_read_and_lock_sources_round_trip() {
        let path = Direct::from_table(&table("path = \"./skills/pdf/\""), &invalid).unwrap();
        assert_eq!(path, Direct::Path("./skills/pdf/".into()));
        assert_eq!(path.lock_source(None), "path:skills/pdf");

        let git = Direct::from_table(
            &table("git = \"https://example.com/a.git\"\nrev = \"v1&2\"\npath = \"review/\""),
            &invalid,
        )
        .unwrap();
        let source = git.lock_source(Some("0123abcd"));
        assert_eq!(
            source,
            "git+https://example.com/a.git?rev=v1%262&path=review#0123abcd"
        );
        assert_eq!(locked_commit(&source), Some("0123abcd"));
        let entry = LockedSkill {
            name: "review".parse().unwrap(),
            version: semver::Version::new(0, 0, 0),
            source,
            checksum: None,
            tree: "h1:x".into(),
            signer: None,
            provenance: None,
            dependencies: Vec::new(),
            audit: None,
        };
        assert!(git.locked_by(&entry));
        let Direct::Git(mut other) = git else {
            unreachable!()
        };
        other.rev = Some("v2".into());
        assert!(!Direct::Git(other).locked_by(&entry));
        assert!(!path.locked_by(&entry));
    }

    #[test]
    fn bad_entries_are_named() {
        let error = |text: &str| {
            Direct::from_table(&table(text), &invalid)
                .unwrap_err()
                .to_string()
        };
        assert!(error("path = \"x\"\nversion = \"1\"").contains("`version`"));
        assert!(error("path = \"x\"\nrev = \"main\"").contains("`rev` without `git`"));
        assert!(error("path = \"\"").contains("not a non-empty string"));
        assert!(error("git = 3").contains("`git`"));
        assert!(error("git = \"ssh://-oProxyCommand=touch%20x/r\"").contains("starts with `-`"));
        assert!(error("git = \"ext::sh -c touch% /tmp/x\"").contains("whitespace"));
        assert!(error("git = \"ext::sh\"").contains("transport helper"));
        assert!(error("git = \"gopher://x/r\"").contains("scheme `gopher`"));
        assert!(check_git_url("git@github.com:acme/skills.git").is_ok());
        assert!(check_git_url("ssh://%2DoProxyCommand=id@host/r").is_err());
        assert!(check_git_url("[-oProxyCommand=id]:x.git").is_err());
        assert!(check_git_url("https://alice:secret@host/r.git").is_err());
        assert!(check_git_url("../sibling/repo").is_ok());
    }

    #[test]
    fn git_arguments_of_every_form_are_read_and_others_are_left_alone() {
        let read = |text: &str| git_argument(text).map(|git| (git.url, git.rev, git.path));
        let some = |url: &str, rev: Option<&str>, path: Option<&str>| {
            Some((
                url.to_owned(),
                rev.map(str::to_owned),
                path.map(str::to_owned),
            ))
        };
        let acme = "https://github.com/acme/skills.git";
        assert_eq!(read("acme/skills"), some(acme, None, None));
        assert_eq!(
            read("acme/skills/review@v1.2.0"),
            some(acme, Some("v1.2.0"), Some("review"))
        );
        assert_eq!(
            read("github:acme/skills/a/b/@main"),
            some(acme, Some("main"), Some("a/b"))
        );
        assert_eq!(
            read("https://github.com/acme/skills"),
            some(acme, None, None)
        );
        assert_eq!(
            read("https://github.com/acme/skills.git#v2"),
            some(acme, Some("v2"), None)
        );
        assert_eq!(
            read("https://github.com/acme/skills/tree/main/skills/pdf"),
            some(acme, Some("main"), Some("skills/pdf"))
        );
        assert_eq!(
            read("git+https://git.example.com/x/skills#abc123"),
            some("https://git.example.com/x/skills", Some("abc123"), None)
        );
        assert_eq!(
            read("git://127.0.0.1:9418/skills.git"),
            some("git://127.0.0.1:9418/skills.git", None, None)
        );
        assert_eq!(
            read("file:///srv/skills"),
            some("file:///srv/skills", None, None)
        );
        for other in [
            "pdf",
            "pdf@^1",
            "./skills/x",
            "/abs/x",
            "path:x",
            "https://skills.example.com/",
            "https://example.com/x.tgz",
            "../a/b",
            "a/..",
            "c:/x",
        ] {
            assert_eq!(read(other), None, "{other}");
        }
    }

    #[test]
    fn paths_are_written_relative_to_the_project() {
        let rel = |path: &str, base: &str| relative_path(Path::new(path), Path::new(base));
        assert_eq!(rel("/p/skills/pdf", "/p").as_deref(), Some("skills/pdf"));
        assert_eq!(
            rel("/shared/pdf", "/p/q").as_deref(),
            Some("../../shared/pdf")
        );
        assert_eq!(rel("/p", "/p").as_deref(), Some("."));
        assert_eq!(normalize("./a//b/./c/"), "a/b/c");
        assert_eq!(normalize("/abs/x"), "/abs/x");
    }
}
