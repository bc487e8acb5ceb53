//! The skills a host would load: every skill folder in its scopes, read and
//! validated, with the ones it skips and the ones a higher scope shadows.
//!
//! ```text
//! Catalog
//!   scopes[]            one per folder the host reads, in precedence order
//!     skills[]          one per `<scope>/<folder>/SKILL.md`, sorted by folder name
//!       Active          loaded, and the first skill with its name
//!       Shadowed { by } loaded, but a skill of the same name came first
//!       Skipped { code }  not loaded: the file or its name or description is unusable
//! ```
//!
//! Only the first level counts: `<scope>/<folder>/SKILL.md`. A symlinked
//! folder is followed and counts under the link's name (so `name` must equal
//! the link's name); hidden entries (`.system`, `.git`) are not skills.
//!
//! A skill is skipped, as hosts skip it, when its `SKILL.md` cannot be read
//! or parsed or its `name` or `description` is missing or invalid (see
//! [`SKIPPING_CODES`]); the first such error says why. Other errors (a
//! symlink inside the skill, a bad tool schema) do not stop an agent from
//! loading the skill, so it is listed as loaded with its diagnostics, and its
//! extensions (`when_to_use`, `tools`) are not trusted and are left empty.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::scope::{self, Environment, Scope, ScopeError, ScopeKind};
use super::{
    Code, Diagnostic, Frontmatter, Host, SKILL_MD, Severity, SkillName, SkillReport,
    ValidateOptions, document, validate_skill,
};

/// The error codes that make a host skip a skill: no readable `SKILL.md`,
/// no frontmatter it can parse, or no valid `name` and `description`.
pub const SKIPPING_CODES: &[Code] = &[
    Code::SkillMdMissing,
    Code::NotUtf8,
    Code::FrontmatterMissing,
    Code::FrontmatterUnclosed,
    Code::YamlSyntax,
    Code::FrontmatterNotMapping,
    Code::FrontmatterTooLarge,
    Code::NameMissing,
    Code::NameInvalid,
    Code::NameMismatch,
    Code::DescriptionMissing,
    Code::DescriptionTooLong,
];

/// Every skill a host sees, scope by scope.
#[derive(Clone, Debug)]
pub struct Catalog {
    /// The host whose scopes these are; `None` for a folder given directly.
    pub host: Option<Host>,
    pub scopes: Vec<ScopeListing>,
    /// What could not be read while finding the scopes.
    pub notes: Vec<String>,
}

/// One scope and the skills in it.
#[derive(Clone, Debug)]
pub struct ScopeListing {
    pub scope: Scope,
    /// Whether the folder exists.
    pub present: bool,
    /// Why the folder could not be listed, when it exists but cannot be read.
    pub error: Option<String>,
    pub skills: Vec<FoundSkill>,
}

/// A skill folder in a scope.
#[derive(Clone, Debug)]
pub struct FoundSkill {
    /// The entry's name in the scope folder (the link's name for a symlink).
    pub folder: String,
    /// `<scope>/<folder>`, not resolved through symlinks.
    pub dir: PathBuf,
    /// `<scope>/<folder>/SKILL.md`, absolute: what an agent is told to read.
    pub location: PathBuf,
    /// Where the folder points, when it is a symlink.
    pub link: Option<PathBuf>,
    pub status: SkillStatus,
}

/// What the host makes of a skill folder.
#[derive(Clone, Debug)]
pub enum SkillStatus {
    /// Loaded, and the first skill with its name.
    Active(LoadedSkill),
    /// Loaded, but the skill at `by` (its `SKILL.md`) has the same name and
    /// a higher scope, so the host uses that one.
    Shadowed { skill: LoadedSkill, by: PathBuf },
    /// Not loaded; `code` is the first error that stops a host.
    Skipped { code: Code, message: String },
}

/// A skill a host loads.
#[derive(Clone, Debug)]
pub struct LoadedSkill {
    pub frontmatter: Frontmatter,
    /// Everything validation found, including errors that do not stop a host.
    pub diagnostics: Vec<Diagnostic>,
}

impl LoadedSkill {
    /// Returns the first error, when validation found one.
    pub fn first_error(&self) -> Option<&Diagnostic> {
        self.diagnostics
            .iter()
            .find(|d| d.severity == Severity::Error)
    }

    /// Returns the number of errors.
    pub fn errors(&self) -> usize {
        self.diagnostics
            .iter()
            .filter(|d| d.severity == Severity::Error)
            .count()
    }
}

impl FoundSkill {
    /// Returns the loaded skill, active or shadowed.
    pub fn loaded(&self) -> Option<&LoadedSkill> {
        match &self.status {
            SkillStatus::Active(skill) | SkillStatus::Shadowed { skill, .. } => Some(skill),
            SkillStatus::Skipped { .. } => None,
        }
    }

    /// Returns the skill if and only if the host uses it.
    pub fn active(&self) -> Option<&LoadedSkill> {
        match &self.status {
            SkillStatus::Active(skill) => Some(skill),
            _ => None,
        }
    }
}

/// Reads every skill `host` would load in `env`.
pub fn discover(host: Host, env: &Environment) -> Result<Catalog, ScopeError> {
    let found = scope::scopes(host, env)?;
    Ok(read(Some(host), host, found.scopes, found.notes))
}

/// Reads the skills in `dir` (its subfolders) as a single scope, validated
/// with `host`'s rules.
pub fn from_folder(dir: &Path, host: Host) -> Catalog {
    let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.to_owned());
    let scope = Scope {
        kind: ScopeKind::Folder,
        dir,
        plugin: None,
    };
    read(None, host, vec![scope], Vec::new())
}

impl Catalog {
    /// Returns every skill the host uses, in precedence order.
    pub fn active(&self) -> impl Iterator<Item = (&FoundSkill, &LoadedSkill)> {
        self.skills()
            .filter_map(|skill| skill.active().map(|loaded| (skill, loaded)))
    }

    /// Returns every skill folder, in precedence order.
    pub fn skills(&self) -> impl Iterator<Item = &FoundSkill> {
        self.scopes.iter().flat_map(|listing| listing.skills.iter())
    }

    /// Returns the loaded skills (active or shadowed) named `name` in any
    /// scope, other than the one in the folder `except` (compared after
    /// resolving symlinks): the skills a skill in `except` collides with.
    pub fn others_named<'a>(
        &'a self,
        name: &'a str,
        except: &Path,
    ) -> impl Iterator<Item = &'a FoundSkill> + 'a {
        let except = fs_err::canonicalize(except).unwrap_or_else(|_| except.to_owned());
        self.skills().filter(move |skill| {
            let same_name = skill
                .loaded()
                .is_some_and(|loaded| loaded.frontmatter.name.as_str() == name);
            let resolved = fs_err::canonicalize(&skill.dir).unwrap_or_else(|_| skill.dir.clone());
            same_name && resolved != except
        })
    }
}

impl Catalog {
    /// Adds a `host-name-collision` warning to `report` for every other
    /// skill in this catalog with the same name: hosts that read several
    /// scopes (Codex) let one shadow the other, which is easy to do by
    /// accident. `options` decides, as for every warning, whether it is
    /// dropped (`allow`) or an error (`strict`).
    pub fn check_collisions(&self, report: &mut SkillReport, options: &ValidateOptions) {
        if options.allow.contains(&Code::HostNameCollision) {
            return;
        }
        let Some(name) = report.frontmatter.as_ref().map(|f| f.name.to_string()) else {
            return;
        };
        let host = self.host.map_or("the host", Host::as_str);
        for other in self.others_named(&name, &report.path) {
            let mut diagnostic = Diagnostic::new(
                Code::HostNameCollision,
                SKILL_MD,
                format!(
                    "`{name}` is also the name of the skill at {}; {host} loads only the one in the higher scope",
                    other.location.display()
                ),
            )
            .with_hint("rename one of them, or keep both if the override is intended (`--allow host-name-collision`)");
            if options.strict {
                diagnostic.severity = Severity::Error;
                report.frontmatter = None;
            }
            report.diagnostics.push(diagnostic);
        }
    }
}

fn read(host: Option<Host>, rules: Host, scopes: Vec<Scope>, notes: Vec<String>) -> Catalog {
    // The first loaded skill with a name wins; its SKILL.md, by name.
    let mut winners: HashMap<String, PathBuf> = HashMap::new();
    let mut listings = Vec::with_capacity(scopes.len());
    for scope in scopes {
        let mut listing = list_scope(scope, rules);
        listing.skills = std::mem::take(&mut listing.skills)
            .into_iter()
            .map(|skill| shadow(skill, &mut winners))
            .collect();
        listings.push(listing);
    }
    Catalog {
        host,
        scopes: listings,
        notes,
    }
}

/// Marks `skill` shadowed when a loaded skill of its name came first, else
/// makes it the one that wins its name.
fn shadow(mut skill: FoundSkill, winners: &mut HashMap<String, PathBuf>) -> FoundSkill {
    skill.status = match skill.status {
        SkillStatus::Active(loaded) => {
            let name = loaded.frontmatter.name.to_string();
            match winners.get(&name) {
                Some(by) => SkillStatus::Shadowed {
                    skill: loaded,
                    by: by.clone(),
                },
                None => {
                    winners.insert(name, skill.location.clone());
                    SkillStatus::Active(loaded)
                }
            }
        }
        other => other,
    };
    skill
}

fn list_scope(scope: Scope, rules: Host) -> ScopeListing {
    let mut listing = ScopeListing {
        present: false,
        error: None,
        skills: Vec::new(),
        scope,
    };
    let entries = match fs_err::read_dir(&listing.scope.dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return listing,
        Err(error) => {
            listing.present = true;
            listing.error = Some(error.to_string());
            return listing;
        }
    };
    listing.present = true;
    let mut names = Vec::new();
    for entry in entries {
        match entry {
            // A name that is not UTF-8 cannot equal a skill's `name`.
            Ok(entry) => {
                if let Ok(name) = entry.file_name().into_string() {
                    names.push(name);
                }
            }
            Err(error) => {
                listing.error = Some(error.to_string());
                break;
            }
        }
    }
    names.sort();
    for name in names {
        if let Some(skill) = read_entry(&listing.scope.dir, name, rules) {
            listing.skills.push(skill);
        }
    }
    listing
}

/// Reads one entry of a scope folder; `None` when it is not a skill at all
/// (a file, a hidden entry, a folder without a skill file).
fn read_entry(scope_dir: &Path, folder: String, rules: Host) -> Option<FoundSkill> {
    if folder.starts_with('.') {
        return None;
    }
    let dir = scope_dir.join(&folder);
    let location = dir.join(SKILL_MD);
    let metadata = fs_err::symlink_metadata(&dir).ok()?;
    let link = metadata
        .file_type()
        .is_symlink()
        .then(|| fs_err::read_link(&dir).ok())
        .flatten();
    let skipped = |code, message: String| {
        Some(FoundSkill {
            folder: folder.clone(),
            dir: dir.clone(),
            location: location.clone(),
            link: link.clone(),
            status: SkillStatus::Skipped { code, message },
        })
    };
    if link.is_some() {
        // A loop or a dangling link: the entry meant to be a skill, and the
        // user should hear why it is not one.
        match fs_err::metadata(&dir) {
            Ok(target) if target.is_dir() => {}
            Ok(_) => return None,
            Err(error) => {
                return skipped(
                    Code::UnreadableFile,
                    format!("the symlink cannot be followed: {error}"),
                );
            }
        }
    } else if !metadata.is_dir() {
        return None;
    }
    match super::find_skill_md(&dir) {
        Ok(None) => return None,
        Ok(Some((file, true))) => {
            return skipped(
                Code::SkillMdCase,
                format!("the skill file is named `{file}`; agents read only `{SKILL_MD}`"),
            );
        }
        Ok(Some((_, false))) => {}
        Err(error) => {
            return skipped(
                Code::UnreadableFile,
                format!("the folder cannot be read: {error}"),
            );
        }
    }
    // Not `ValidateOptions::for_folder`, which resolves symlinks: a linked
    // folder is loaded under the link's name, so that is the name to match.
    let options = ValidateOptions {
        host: rules,
        folder_name: Some(folder.clone()),
        ..ValidateOptions::default()
    };
    let report = validate_skill(&dir, &options);
    let status = match report.frontmatter {
        Some(frontmatter) => SkillStatus::Active(LoadedSkill {
            frontmatter,
            diagnostics: report.diagnostics,
        }),
        None => {
            let first = report
                .diagnostics
                .iter()
                .find(|d| d.severity == Severity::Error && SKIPPING_CODES.contains(&d.code));
            match (first, base_fields(&location)) {
                (None, Some(frontmatter)) => SkillStatus::Active(LoadedSkill {
                    frontmatter,
                    diagnostics: report.diagnostics,
                }),
                (Some(first), _) => SkillStatus::Skipped {
                    code: first.code,
                    message: first.message.clone(),
                },
                (None, None) => {
                    let first = report
                        .diagnostics
                        .iter()
                        .find(|d| d.severity == Severity::Error);
                    SkillStatus::Skipped {
                        code: first.map_or(Code::SkillMdMissing, |d| d.code),
                        message: first.map(|d| d.message.clone()).unwrap_or_default(),
                    }
                }
            }
        }
    };
    Some(FoundSkill {
        folder,
        dir,
        location,
        link,
        status,
    })
}

/// Reads just `name` and `description`, for a skill whose other errors do
/// not stop a host from loading it.
fn base_fields(location: &Path) -> Option<Frontmatter> {
    let bytes = fs_err::read(location).ok()?;
    let document = document::parse(&bytes).ok()?;
    let name: SkillName = document.get("name")?.1.value.as_str()?.parse().ok()?;
    let description = document.get("description")?.1.value.as_str()?.to_owned();
    Some(Frontmatter::new(name, description))
}

#[cfg(test)]
mod tests;
