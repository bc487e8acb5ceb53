//! The skills `skillpkg mcp` serves: the ones the chosen host would use from
//! the project (the same scopes and precedence as `skillpkg scopes`), each
//! read once at start into a manifest of its files with their SHA-256.
//!
//! The manifest is what the server promises: `skills/list` advertises it,
//! and every read afterwards (a resource, `skills_read`, the body injected
//! by `skills_load`) returns bytes only when they still hash to what it
//! says. A file changed, replaced or swapped for a symlink after start is
//! refused, never served, so what an agent reads is exactly what was
//! checked.
//!
//! A skill skillpkg installed (its name is in `skills.lock`, and it sits in
//! a folder of the project or one whose `.skillpkg.json` lists it) must
//! hash to the lock's tree. One that does not is not served unless the
//! server runs with `--allow-modified`; the refusal names the changed files
//! when the archive it came from is still in the cache to compare with.
//!
//! A skill whose `permissions.filesystem` grants reach agent or VCS
//! configuration, credentials or a skills folder ([`super::protected`]) is
//! not served either, unless the operator allowed each such grant with
//! `--allow-grant SKILL=GLOB`.

use std::collections::{BTreeMap, HashMap};
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, percent_decode_str, utf8_percent_encode};
use rmcp::model::{JsonObject, Skill, SkillFrontmatter, SkillResource, SkillResources};
use sha2::{Digest as _, Sha256};
use skillpkg_index::archive::walk::{self, EntryKind};
use skillpkg_index::archive::{FileDigest, tree_hash, tree_hash::hex};
use skillpkg_index::skill::catalog::{self, Catalog, SkillStatus};
use skillpkg_index::skill::scope::Environment;
use skillpkg_index::skill::{Frontmatter, Host, SKILL_MD, document, unambiguous_text};

use super::protected::{AllowedGrant, Protection};
use super::served_md::{self, ServedFile};
use super::vetting::{self, Decision};
use crate::project::lockfile::{self, LockedSkill, Lockfile};
use crate::project::targets::{STATE_FILE, TargetState};
use skillpkg_index::audit::Summary;

/// The most files a served skill may have; SEP-2640 lets hosts skip larger
/// skills, so serving them would only fail later.
pub const MAX_FILES: usize = 512;

/// The most bytes a served skill's files may add up to (SEP-2640's limit).
pub const MAX_SKILL_BYTES: u64 = 16 * 1024 * 1024;

/// URI scheme of skill files (SEP-2640).
pub const SCHEME: &str = "skill://";

/// Characters left as they are in a URI path segment: RFC 3986's
/// unreserved ones. Everything else is percent-encoded.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// What the server was asked to serve.
#[derive(Clone, Debug)]
pub struct Options {
    pub host: Host,
    /// The project folder: where the host would start.
    pub project: PathBuf,
    pub home: Option<PathBuf>,
    pub codex_home: Option<PathBuf>,
    /// Serve skills that differ from `skills.lock`.
    pub allow_modified: bool,
    /// Where downloaded archives are kept, to name a modified skill's
    /// changed files.
    pub cache: Option<crate::client::Cache>,
    /// `--allow-grant`: grants that may reach protected paths.
    pub allowed_grants: Vec<AllowedGrant>,
    /// `--allow-risk`: skills served although their files audit `high`.
    pub allow_risk: Vec<String>,
}

/// The skills served, read once at start.
#[derive(Debug)]
pub struct ServedCatalog {
    pub host: Host,
    pub project: PathBuf,
    /// In the host's precedence order.
    skills: Vec<Arc<ServedSkill>>,
    by_name: HashMap<String, usize>,
    /// Skills the host would use that are not served, by name, and why.
    refused: BTreeMap<String, String>,
    /// What the operator should know: skipped skills, unreadable scopes.
    pub notes: Vec<String>,
    /// What no grant may reach on this machine, and what the operator
    /// allowed: checked here at start, and at every run.
    pub protection: Protection,
    /// What the catalog was read from: every folder the host looks in for
    /// skills (there or not), the folders that linked skills the host loads
    /// point at, and the folder of `skills.lock`. A change under one may
    /// change the catalog.
    pub sources: Sources,
}

/// The folders a catalog was read from ([`ServedCatalog::sources`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sources {
    /// Folders a change anywhere under which may change the catalog: the
    /// scopes, and the folders linked skills point at.
    pub trees: Vec<PathBuf>,
    /// The folders to watch, each by itself: every scope, every skill
    /// folder found (served or not), and each folder that holds a file of a
    /// served skill. Bounded by what is served (at most 512 files a skill),
    /// not by what a skill folder holds besides.
    pub folders: Vec<PathBuf>,
    /// The project folder and the folder of `skills.toml`, for the lock
    /// and the manifest in them.
    pub project: Vec<PathBuf>,
}

/// One served skill.
#[derive(Debug)]
pub struct ServedSkill {
    pub name: String,
    /// The skill folder, as found (not resolved through symlinks).
    pub root: PathBuf,
    /// `<root>/SKILL.md`.
    pub location: PathBuf,
    pub frontmatter: Frontmatter,
    /// The frontmatter as written, as JSON.
    pub properties: JsonObject,
    /// `sha256:` of `SKILL.md` as served.
    pub digest: String,
    /// The `h2:` tree hash of the files.
    pub tree: String,
    /// The version `skills.lock` pins, when skillpkg installed the skill.
    pub locked: Option<crate::project::lockfile::LockedVersion>,
    /// The files that differ from the lock (served with `--allow-modified`).
    pub modified: Vec<String>,
    /// Symlinks and special files in the folder: never served or run, and
    /// never part of an installed skill (the packer refuses them).
    pub links: Vec<String>,
    /// The files, sorted by path.
    pub files: Vec<ServedFile>,
    /// `SKILL.md` as served, when it is rewritten ([`super::served_md`]).
    pub served_skill_md: Option<ServedFile>,
    /// The SEP-2640 entry.
    pub entry: Skill,
}

impl ServedSkill {
    /// Returns true if and only if the files hash to `expected`, an `h2:` or
    /// (in locks written before) `h1:` tree hash.
    pub fn tree_is(&self, expected: &str) -> bool {
        self.tree == expected
            || skillpkg_index::archive::tree_matches(&digests(&self.files), expected)
    }
}

impl ServedSkill {
    /// `file` as listed to clients (see [`served_md::listed`]).
    pub fn listed<'a>(&'a self, file: &'a ServedFile) -> &'a ServedFile {
        served_md::listed(file, self.served_skill_md.as_ref())
    }

    /// The bytes served for the file at `path`, read as `bytes` and
    /// checked against the manifest.
    pub(super) fn served(&self, path: &str, bytes: Vec<u8>) -> Vec<u8> {
        if path != SKILL_MD || self.served_skill_md.is_none() {
            return bytes;
        }
        match unambiguous_text(&bytes) {
            Some(text) => text.into_bytes(),
            None => bytes,
        }
    }
}

/// The digests of served files, as the tree hash takes them.
fn digests(files: &[ServedFile]) -> Vec<FileDigest> {
    files
        .iter()
        .map(|file| FileDigest {
            path: file.path.clone(),
            sha256: file.sha256,
            executable: file.executable,
        })
        .collect()
}

/// Why a file of a skill is not served.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("`{path}` is not a file of skill `{skill}`")]
    NotInSkill { skill: String, path: String },
    #[error("`{path}` of skill `{skill}` is {size} bytes; the limit is {limit}")]
    TooLarge {
        skill: String,
        path: String,
        size: u64,
        limit: u64,
    },
    #[error("`{path}` of skill `{skill}` changed since the server read it")]
    Changed { skill: String, path: String },
    #[error("cannot read `{path}` of skill `{skill}`")]
    Io {
        skill: String,
        path: String,
        #[source]
        source: std::io::Error,
    },
}

impl ReadError {
    /// What the caller can do about it.
    pub fn hint(&self) -> &'static str {
        match self {
            Self::NotInSkill { .. } => {
                "give a path relative to the skill folder, such as `references/guide.md`, of a file listed by skills/list; `..`, absolute paths and symlinks are never served"
            }
            Self::TooLarge { .. } => "read it with a script of the skill instead",
            Self::Changed { .. } | Self::Io { .. } => {
                "the skill's files changed on disk: the server reads the skill again as soon as the changes settle (unless it runs with --no-watch), so list or load it again; skillpkg install --force restores an installed skill"
            }
        }
    }
}

impl ServedCatalog {
    /// Reads every skill `options.host` would use from `options.project`.
    pub fn load(options: &Options) -> anyhow::Result<Self> {
        let env = Environment {
            cwd: options.project.clone(),
            home: options.home.clone(),
            codex_home: options.codex_home.clone(),
        };
        let found = catalog::discover(options.host, &env).map_err(|error| {
            let hint = error.hint();
            crate::error::UserError::new(error.to_string()).with_hint(hint)
        })?;
        let manifest_root = crate::project::manifest::find_root(&options.project);
        let lock = match &manifest_root {
            Some(root) => lockfile::read(root)?.map(|lock| (root.clone(), lock)),
            None => None,
        };
        let sources = Sources {
            trees: found
                .scopes
                .iter()
                .map(|listing| listing.scope.dir.clone())
                .chain(
                    found
                        .skills()
                        // Only skills the host loads: a link to `/` or
                        // the home folder is no skill, and is not watched.
                        .filter(|skill| skill.link.is_some() && skill.active().is_some())
                        .filter_map(|skill| fs_err::canonicalize(&skill.dir).ok()),
                )
                .collect(),
            folders: Vec::new(),
            project: std::iter::once(options.project.clone())
                .chain(manifest_root.clone())
                .collect(),
        };
        let protection = protection(&env, found_skill_folders(&found), manifest_root, options);
        let mut served = Self::build(&found, options, lock.as_ref(), protection);
        let mut sources = sources;
        let mut folders: std::collections::BTreeSet<PathBuf> =
            sources.trees.iter().cloned().collect();
        // Each skill folder found; a link only when the host loads what it
        // points at (a link to `/` is watched as the scope's entry, not
        // followed).
        for skill in found.skills() {
            match &skill.link {
                None => {
                    folders.insert(skill.dir.clone());
                }
                Some(_) if skill.active().is_some() => {
                    folders.extend(fs_err::canonicalize(&skill.dir).ok());
                }
                Some(_) => {}
            }
        }
        for skill in &served.skills {
            let root = fs_err::canonicalize(&skill.root).unwrap_or_else(|_| skill.root.clone());
            for file in &skill.files {
                if let Some((dir, _)) = file.path.rsplit_once('/') {
                    folders.insert(root.join(dir));
                }
            }
        }
        sources.folders = folders.into_iter().collect();
        served.sources = sources;
        Ok(served)
    }

    fn build(
        found: &Catalog,
        options: &Options,
        lock: Option<&(PathBuf, Lockfile)>,
        protection: Protection,
    ) -> Self {
        let project = fs_err::canonicalize(&options.project).unwrap_or(options.project.clone());
        let mut served = Self {
            host: options.host,
            project: options.project.clone(),
            skills: Vec::new(),
            by_name: HashMap::new(),
            refused: BTreeMap::new(),
            notes: found.notes.clone(),
            protection,
            sources: Sources::default(),
        };
        let mut records: HashMap<PathBuf, Option<TargetState>> = HashMap::new();
        // The audit skills.lock records for each served skill's files.
        let mut recorded: Vec<Option<Summary>> = Vec::new();
        for listing in &found.scopes {
            for skill in &listing.skills {
                let loaded = match &skill.status {
                    SkillStatus::Active(loaded) => loaded,
                    // The host does not load it either: say so, since the
                    // operator may expect it.
                    SkillStatus::Skipped { code, message } => {
                        served.notes.push(format!(
                            "{} is not a skill {} loads, so it is not served: {message} [{code}]",
                            skill.dir.display(),
                            options.host.as_str()
                        ));
                        continue;
                    }
                    SkillStatus::Shadowed { .. } => continue,
                };
                if let Some(first) = loaded.first_error() {
                    // Hosts load such a skill by its name and description
                    // alone, and so does the server.
                    served.notes.push(format!(
                        "skill `{}` has {} validation error(s) (first: {}), so only its name, description and files are served: not its tools, permissions or other keys; run `skillpkg validate {}`",
                        loaded.frontmatter.name,
                        loaded.errors(),
                        first.message,
                        skill.dir.display()
                    ));
                }
                let name = loaded.frontmatter.name.to_string();
                let locked = lock.and_then(|(root, lock)| {
                    let entry = lock.get(&loaded.frontmatter.name)?;
                    let record = records
                        .entry(listing.scope.dir.clone())
                        .or_insert_with(|| read_record(&listing.scope.dir));
                    let recorded = record
                        .as_ref()
                        .is_some_and(|state| state.skills.contains_key(&loaded.frontmatter.name));
                    (recorded || listing.scope.dir.starts_with(root)).then_some(entry)
                });
                match read_skill(&skill.dir, &skill.location, &loaded.frontmatter) {
                    Ok(mut read) => {
                        let mut verdict = None;
                        if let Some(entry) = locked {
                            read.locked = Some(entry.version.clone());
                            // An archive never holds a link, so one in an
                            // installed skill was put there since.
                            if !read.tree_is(&entry.tree) || !read.links.is_empty() {
                                read.modified = changed_files(&read, entry, options.cache.as_ref());
                                read.modified.extend(
                                    read.links.iter().map(|link| format!("{link} (link added)")),
                                );
                                if !options.allow_modified {
                                    served.refused.insert(
                                        name.clone(),
                                        format!(
                                            "skill `{name}` differs from skills.lock ({}); run `skillpkg install --force` to restore it, or start `skillpkg mcp --allow-modified` to serve it as it is",
                                            describe_changes(&read.modified)
                                        ),
                                    );
                                    continue;
                                }
                                served.notes.push(format!(
                                    "serving skill `{name}` although it differs from skills.lock ({})",
                                    describe_changes(&read.modified)
                                ));
                            } else {
                                verdict = entry.audit.clone();
                            }
                        }
                        if let Some(permissions) = &read.frontmatter.extensions.permissions
                            && let Err(error) =
                                served
                                    .protection
                                    .check_declared(&name, permissions, &project)
                        {
                            let hint = error.hint().unwrap_or_default();
                            served.refused.insert(
                                name.clone(),
                                format!("skill `{name}` is not served: {error}; {hint}"),
                            );
                            continue;
                        }
                        served.skills.push(Arc::new(read));
                        recorded.push(verdict);
                    }
                    Err(reason) => {
                        served.refused.insert(
                            name.clone(),
                            format!("skill `{name}` is not served: {reason}"),
                        );
                    }
                }
            }
        }
        served.vet(&recorded, options);
        for reason in served.refused.values() {
            served.notes.push(reason.clone());
        }
        // An allowance that matches nothing is a typo, and the grant it was
        // meant for is still refused: say so rather than let it pass.
        for allowed in served.protection.allowed() {
            let declared = found
                .scopes
                .iter()
                .flat_map(|listing| &listing.skills)
                .filter_map(|skill| skill.active())
                .filter(|loaded| loaded.frontmatter.name == allowed.skill)
                .filter_map(|loaded| loaded.frontmatter.extensions.permissions.as_ref())
                .any(|permissions| {
                    let filesystem = &permissions.filesystem;
                    filesystem.read.contains(&allowed.glob)
                        || filesystem.write.contains(&allowed.glob)
                });
            if !declared {
                served.notes.push(format!(
                    "--allow-grant {allowed} allows nothing: no skill `{}` found here declares the grant `{}` (the glob must be written exactly as in its SKILL.md)",
                    allowed.skill, allowed.glob
                ));
            }
        }
        served
    }

    /// Audits the skills to serve (in a worker, each from files checked
    /// against the hashes it serves) and keeps those [`vetting`] lets
    /// through.
    fn vet(&mut self, recorded: &[Option<Summary>], options: &Options) {
        let cache = options.cache.as_ref().map(|cache| cache.root());
        let subjects: Vec<vetting::Subject<'_>> = self
            .skills
            .iter()
            .zip(recorded)
            .map(|(skill, recorded)| vetting::Subject {
                name: &skill.name,
                root: &skill.root,
                tree: &skill.tree,
                recorded: recorded.as_ref(),
                allowed: options.allow_risk.contains(&skill.name),
            })
            .collect();
        let jobs = self
            .skills
            .iter()
            .map(|skill| vetting::Job {
                root: skill.root.clone(),
                files: skill
                    .files
                    .iter()
                    .map(|file| vetting::JobFile {
                        path: file.path.clone(),
                        size: file.size,
                        executable: file.executable,
                        sha256: hex(&file.sha256),
                    })
                    .collect(),
            })
            .collect();
        let decisions = vetting::decide_all(&subjects, jobs, cache);
        drop(subjects);
        let skills = std::mem::take(&mut self.skills);
        for (skill, decision) in skills.into_iter().zip(decisions) {
            match decision {
                Decision::Serve => {}
                Decision::Accepted(note) => self.notes.push(note),
                Decision::Refused(reason) => {
                    self.refused.insert(skill.name.clone(), reason);
                    continue;
                }
            }
            self.by_name.insert(skill.name.clone(), self.skills.len());
            self.skills.push(skill);
        }
        for name in &options.allow_risk {
            if !self.by_name.contains_key(name) && !self.refused.contains_key(name) {
                self.notes.push(format!(
                    "--allow-risk {name} allows nothing: no skill `{name}` is served here"
                ));
            }
        }
    }

    /// A catalog that serves nothing, for tests of what holds sessions.
    #[cfg(test)]
    pub fn empty() -> Self {
        Self {
            host: crate::commands::scopes::DEFAULT_HOST,
            project: PathBuf::new(),
            skills: Vec::new(),
            by_name: HashMap::new(),
            refused: BTreeMap::new(),
            notes: Vec::new(),
            protection: Protection::default(),
            sources: Sources::default(),
        }
    }

    /// The served skills, in precedence order.
    pub fn skills(&self) -> &[Arc<ServedSkill>] {
        &self.skills
    }

    /// Returns the skill named `name`, or why there is none.
    pub fn get(&self, name: &str) -> Result<&Arc<ServedSkill>, String> {
        if let Some(index) = self.by_name.get(name) {
            return Ok(&self.skills[*index]);
        }
        if let Some(reason) = self.refused.get(name) {
            return Err(reason.clone());
        }
        let names: Vec<&str> = self
            .skills
            .iter()
            .map(|skill| skill.name.as_str())
            .collect();
        let close = skillpkg_index::name::closest(name, names.iter().copied());
        Err(if names.is_empty() {
            format!("there is no skill named `{name}`: this server serves no skills")
        } else if close.is_empty() {
            format!(
                "there is no skill named `{name}`; the skills are listed in the available_skills prompt and by skills/list"
            )
        } else {
            format!(
                "there is no skill named `{name}`; did you mean {}?",
                close.join(", ")
            )
        })
    }

    /// Returns the skill whose files `uri` is under, with the file's path:
    /// `""` for the skill's root, written `skill://<name>` (as SEP-2640
    /// writes directory URIs) or `skill://<name>/`.
    pub fn resolve_uri(&self, uri: &str) -> Option<(&Arc<ServedSkill>, String)> {
        let (name, path) = split_uri(uri)?;
        let skill = &self.skills[*self.by_name.get(&name)?];
        Some((skill, path))
    }
}

impl ServedSkill {
    /// The URI of a file of this skill.
    pub fn uri(&self, path: &str) -> String {
        file_uri(&self.name, path)
    }

    /// Returns the file at `path`, if the skill has one there.
    pub fn file(&self, path: &str) -> Option<&ServedFile> {
        self.files
            .binary_search_by(|file| file.path.as_str().cmp(path))
            .ok()
            .map(|index| &self.files[index])
    }

    /// Reads the file at `path` (relative to the skill folder), refusing
    /// anything over `limit` bytes and bytes that no longer hash to the
    /// manifest.
    pub fn read(&self, path: &str, limit: u64) -> Result<Vec<u8>, ReadError> {
        let file = self.file(path).ok_or_else(|| ReadError::NotInSkill {
            skill: self.name.clone(),
            path: path.to_owned(),
        })?;
        if file.size > limit {
            return Err(ReadError::TooLarge {
                skill: self.name.clone(),
                path: path.to_owned(),
                size: file.size,
                limit,
            });
        }
        let full = self.root.join(&file.path);
        let io = |source| ReadError::Io {
            skill: self.name.clone(),
            path: path.to_owned(),
            source,
        };
        let changed = || ReadError::Changed {
            skill: self.name.clone(),
            path: path.to_owned(),
        };
        if !fs_err::symlink_metadata(&full).map_err(io)?.is_file() {
            return Err(changed());
        }
        let mut bytes = Vec::with_capacity(file.size as usize);
        fs_err::File::open(&full)
            .map_err(io)?
            .take(file.size + 1)
            .read_to_end(&mut bytes)
            .map_err(io)?;
        if bytes.len() as u64 != file.size || Sha256::digest(&bytes).as_slice() != file.sha256 {
            return Err(changed());
        }
        Ok(self.served(path, bytes))
    }

    /// Returns the files whose bytes on disk no longer match the manifest.
    pub fn changed_since_start(&self) -> Vec<String> {
        self.files
            .iter()
            .filter(|file| self.read(&file.path, u64::MAX).is_err())
            .map(|file| file.path.clone())
            .collect()
    }

    /// The `SKILL.md` body, checked against the manifest.
    pub fn body(&self) -> Result<String, ReadError> {
        let bytes = self.read("SKILL.md", MAX_SKILL_BYTES)?;
        let parsed = document::parse(&bytes).map_err(|_| ReadError::Changed {
            skill: self.name.clone(),
            path: "SKILL.md".to_owned(),
        })?;
        Ok(parsed.body)
    }
}

/// A path a client gave, as the catalog names files: `/`-separated, with
/// `./` and `\` read as a model would mean them, and nothing that climbs
/// out or starts at the root.
pub fn normalise(path: &str) -> Option<String> {
    let path = path.replace('\\', "/");
    if path.starts_with('/') {
        return None;
    }
    let mut parts = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => return None,
            part => parts.push(part),
        }
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

/// The skill name and the file path a `skill://` URI names, decoded; the
/// path is `""` for the skill's root.
pub fn split_uri(uri: &str) -> Option<(String, String)> {
    let rest = uri.strip_prefix(SCHEME)?;
    if rest.contains(['?', '#']) {
        return None;
    }
    let (name, path) = rest.split_once('/').unwrap_or((rest, ""));
    let name = percent_decode_str(name).decode_utf8().ok()?;
    let path = percent_decode_str(path).decode_utf8().ok()?;
    Some((name.into_owned(), path.into_owned()))
}

/// The URI of the file `path` of the skill `name`: each segment
/// percent-encoded.
pub fn file_uri(name: &str, path: &str) -> String {
    let mut uri = format!("{SCHEME}{}", utf8_percent_encode(name, SEGMENT));
    for segment in path.split('/') {
        uri.push('/');
        uri.extend(utf8_percent_encode(segment, SEGMENT));
    }
    uri
}

/// The folders of the skills `found` lists, links followed: a skill may
/// be a link to a folder elsewhere.
fn found_skill_folders(found: &Catalog) -> Vec<PathBuf> {
    found
        .scopes
        .iter()
        .flat_map(|listing| &listing.skills)
        .filter_map(|skill| fs_err::canonicalize(&skill.dir).ok())
        .collect()
}

/// What grants may not reach here: the home folder, every folder any agent
/// reads skills from (not only the served host's: a skill planted for
/// another agent is planted all the same), skillpkg's install targets, the
/// folders of the skills found, and `--allow-grant`.
fn protection(
    env: &Environment,
    skill_folders: Vec<PathBuf>,
    manifest_root: Option<PathBuf>,
    options: &Options,
) -> Protection {
    let mut folders = skill_folders;
    for host in skillpkg_index::skill::scope::AGENT_HOSTS {
        if let Ok(scopes) = skillpkg_index::skill::scope::scopes(host, env) {
            folders.extend(scopes.scopes.into_iter().map(|scope| scope.dir));
        }
    }
    if let Some(root) = manifest_root
        && let Ok(manifest) = crate::project::manifest::read(&root)
    {
        for name in &manifest.targets {
            if let Ok(target) = crate::project::targets::resolve(name, &root, false, true) {
                folders.push(std::path::absolute(&target.dir).unwrap_or(target.dir));
            }
        }
    }
    Protection::new(
        options.home.as_deref(),
        folders,
        options.allowed_grants.clone(),
    )
}

fn read_record(dir: &Path) -> Option<TargetState> {
    let bytes = fs_err::read(dir.join(STATE_FILE)).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Reads a skill's files into its manifest.
fn read_skill(
    dir: &Path,
    location: &Path,
    frontmatter: &Frontmatter,
) -> Result<ServedSkill, String> {
    let name = frontmatter.name.to_string();
    let entries = walk::walk_all(dir).map_err(|error| error.to_string())?;
    let mut files = Vec::new();
    let mut links = Vec::new();
    let mut total = 0u64;
    for entry in entries {
        match entry.kind {
            EntryKind::File { size, executable } => {
                total += size;
                if files.len() >= MAX_FILES || total > MAX_SKILL_BYTES {
                    return Err(format!(
                        "it has more than {MAX_FILES} files or {} MiB, which MCP hosts need not load",
                        MAX_SKILL_BYTES / 1024 / 1024
                    ));
                }
                let bytes =
                    fs_err::read(dir.join(&entry.path)).map_err(|error| error.to_string())?;
                files.push(ServedFile {
                    path: entry.path,
                    size: bytes.len() as u64,
                    sha256: Sha256::digest(&bytes).into(),
                    executable,
                });
            }
            // Symlinks and special files are never served: what a link
            // points at is not part of the skill.
            EntryKind::Symlink | EntryKind::Special => links.push(entry.path),
            EntryKind::Directory => {}
        }
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    let skill_md = files
        .iter()
        .find(|file| file.path == "SKILL.md")
        .ok_or("its SKILL.md is not a regular file")?;
    let text = fs_err::read(location).map_err(|error| error.to_string())?;
    let served_skill_md = served_md::rewritten(&text, skill_md);
    let digest = format!(
        "sha256:{}",
        hex(&served_md::listed(skill_md, served_skill_md.as_ref()).sha256)
    );
    let properties = document::parse(&text)
        .map_err(|error| error.to_string())?
        .frontmatter_json();
    let tree = tree_hash(&digests(&files)).to_string();
    let entry = Skill::new(
        file_uri(&name, "SKILL.md"),
        sep_frontmatter(&properties, frontmatter),
        SkillResources::Files(
            files
                .iter()
                .map(|file| {
                    let file = served_md::listed(file, served_skill_md.as_ref());
                    SkillResource::new(
                        file_uri(&name, &file.path),
                        format!("sha256:{}", hex(&file.sha256)),
                        file.size,
                    )
                })
                .collect(),
        ),
    );
    Ok(ServedSkill {
        name,
        root: dir.to_owned(),
        location: location.to_owned(),
        frontmatter: frontmatter.clone(),
        properties,
        digest,
        tree,
        locked: None,
        modified: Vec::new(),
        links,
        files,
        served_skill_md,
        entry,
    })
}

/// The frontmatter as SEP-2640 carries it: `name` and `description` as
/// strings, every other key as written.
fn sep_frontmatter(properties: &JsonObject, frontmatter: &Frontmatter) -> SkillFrontmatter {
    let mut sep =
        SkillFrontmatter::new(frontmatter.name.as_str(), frontmatter.description.as_str());
    for (key, value) in properties {
        if key != "name" && key != "description" {
            sep = sep.with_field(key.clone(), value.clone());
        }
    }
    sep
}

/// Names the files of `skill` that differ from the archive the lock pins,
/// when that archive is in the cache (checked against the lock's checksum).
fn changed_files(
    skill: &ServedSkill,
    locked: &LockedSkill,
    cache: Option<&crate::client::Cache>,
) -> Vec<String> {
    let (Some(cache), Some(checksum)) = (cache, locked.checksum) else {
        return Vec::new();
    };
    let expected = crate::client::Expected {
        name: &locked.name,
        version: locked.version.semver(),
        checksum,
        signer: locked.signer,
        pinned_by: "skills.lock",
    };
    let Some(archive) = crate::client::fetch::cached(cache, &expected) else {
        return Vec::new();
    };
    let Ok(scratch) = tempfile::tempdir() else {
        return Vec::new();
    };
    let Ok(unpacked) = archive.unpack(&scratch.path().join("skill")) else {
        return Vec::new();
    };
    let locked_files: HashMap<&str, &[u8; 32]> = unpacked
        .files
        .iter()
        .map(|file| (file.path.as_str(), &file.sha256))
        .collect();
    let mut changed = Vec::new();
    for file in &skill.files {
        match locked_files.get(file.path.as_str()) {
            Some(sha256) if **sha256 == file.sha256 => {}
            Some(_) => changed.push(format!("{} (changed)", file.path)),
            None => changed.push(format!("{} (added)", file.path)),
        }
    }
    for path in locked_files.keys() {
        if skill.file(path).is_none() {
            changed.push(format!("{path} (removed)"));
        }
    }
    changed.sort();
    changed
}

fn describe_changes(changed: &[String]) -> String {
    const SHOWN: usize = 10;
    match changed.len() {
        0 => "its files no longer hash to the locked tree".to_owned(),
        n if n <= SHOWN => format!("files: {}", changed.join(", ")),
        n => format!(
            "files: {}, and {} more",
            changed[..SHOWN].join(", "),
            n - SHOWN
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_encode_each_segment() {
        assert_eq!(file_uri("pdf", "SKILL.md"), "skill://pdf/SKILL.md");
        assert_eq!(
            file_uri("pdf", "references/a b/ü.md"),
            "skill://pdf/references/a%20b/%C3%BC.md"
        );
        // A `/` or `?` inside a name stays inside its segment.
        assert_eq!(file_uri("pdf", "a?b#c"), "skill://pdf/a%3Fb%23c");
    }
}
