//! Agent Skills: the `SKILL.md` format and its validation.
//!
//! A skill is a folder whose `SKILL.md` starts with YAML frontmatter between
//! `---` lines and continues with Markdown instructions:
//!
//! ```text
//! pdf-processing/
//!   SKILL.md          ---\nname: pdf-processing\ndescription: ...\n---\n# Instructions
//!   scripts/          programs the agent may run
//!   references/       documents the agent reads when needed
//!   assets/           templates, images, data
//! ```
//!
//! Reading goes in two steps that are kept apart: [`document::parse`] turns
//! bytes into a YAML tree that keeps positions and judges nothing, and
//! [`validate_skill`] checks that tree (and the folder around it) and yields
//! the typed [`Frontmatter`] plus [`Diagnostic`]s with stable codes.
//!
//! Around single skills: [`scope`] says which folders each agent host reads
//! and in which precedence, [`catalog`] reads the skills there as the host
//! would (shadowed and skipped ones marked), [`prompt`] renders what the
//! model is shown of them, and [`select`] picks the ones a request calls for.

mod ambiguous;
pub mod catalog;
pub mod control;
pub mod diagnostic;
pub mod document;
pub mod extensions;
mod lint;
pub mod model;
pub mod prompt;
pub mod protected;
mod readings;
pub mod scaffold;
pub mod scope;
pub mod select;
pub mod tools;
mod unambiguous;
mod validate;
mod yaml;

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

pub use crate::name::{MAX_NAME_LEN, SKILL_MD, SkillName, SkillNameError};
pub use diagnostic::{Code, Diagnostic, Location, Severity};
pub use document::{DocumentError, SkillDocument};
pub use unambiguous::unambiguous_text;

use crate::archive::walk::{self, EntryKind, Listing, WalkError};
use crate::archive::{self, PackError};

/// The largest skill the Claude API accepts, in bytes.
pub const CLAUDE_API_MAX_BYTES: u64 = 8 * 1024 * 1024;

/// An agent host whose extra rules validation applies (`validate --host`),
/// and whose folders `scopes`, `prompt` and `select` read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Host {
    /// Only the Agent Skills specification: what every agent reads.
    #[default]
    Portable,
    /// Skills uploaded through the Claude API: no XML tags in `name` or
    /// `description`, no `anthropic` or `claude` in `name`, at most 8 MiB,
    /// no network, no dependency installation.
    ClaudeApi,
    /// Claude Code: its own frontmatter keys are not reported as not portable.
    ClaudeCode,
    /// OpenAI Codex (CLI and IDE): scopes from the working folder up to the
    /// repository root, then `$CODEX_HOME/skills`.
    Codex,
    /// GitHub Copilot (VS Code and the coding agent).
    Copilot,
    /// An MCP client, through an adapter that serves the skill's tools.
    Mcp,
    /// OpenAI tool calling and Structured Outputs with `strict: true`.
    OpenAi,
}

impl Host {
    /// Every host, for `--help` and error messages.
    pub const ALL: &'static [(&'static str, Host)] = &[
        ("portable", Host::Portable),
        ("claude-api", Host::ClaudeApi),
        ("claude-code", Host::ClaudeCode),
        ("codex", Host::Codex),
        ("copilot", Host::Copilot),
        ("mcp", Host::Mcp),
        ("openai", Host::OpenAi),
    ];

    /// Returns the name used on the command line.
    pub fn as_str(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, host)| *host == self)
            .map(|(name, _)| *name)
            .expect("every host is listed")
    }
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Host {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .iter()
            .find(|(name, _)| *name == text)
            .map(|(_, host)| *host)
            .ok_or_else(|| {
                let names: Vec<_> = Self::ALL.iter().map(|(name, _)| *name).collect();
                format!(
                    "unknown host `{text}`; expected one of: {}",
                    names.join(", ")
                )
            })
    }
}

/// What to check besides the base rules.
#[derive(Clone, Debug, Default)]
pub struct ValidateOptions {
    pub host: Host,
    /// Turns every warning into an error.
    pub strict: bool,
    /// Codes whose diagnostics are dropped (only warnings can be: an error
    /// code here is ignored, since an invalid skill must stay invalid).
    pub allow: Vec<Code>,
    /// The name the skill's folder has; `name` must equal it. `None` skips
    /// the check, for skills unpacked from an archive into a temporary folder.
    pub folder_name: Option<String>,
    /// Leaves `tools.json` unchecked: for the commands that rewrite it from
    /// `SKILL.md` (`tools sync`) or never read it (`tools export`).
    pub skip_tools_json: bool,
    /// Errors reported as warnings: the rules of the specification that
    /// agents load a skill despite, for an install, which takes what the
    /// agents take ([`AGENTS_TOLERATE`]). `strict` makes them errors again.
    pub tolerate: Vec<Code>,
}

/// The errors of the specification that agents load a skill despite, so
/// that an install warns of them rather than refusing the skill
/// (`validate --strict` and `publish` still refuse it; docs/hosts.md, "What
/// agents load", has each agent's behaviour and its source):
/// - `name-mismatch`: the installed copy's folder is named after `name`, so
///   it no longer applies once installed;
/// - `description-too-long`: Claude Code and Codex load the skill and cut
///   the description in their list of skills; GitHub Copilot CLI does not
///   load it.
pub const AGENTS_TOLERATE: &[Code] = &[Code::NameMismatch, Code::DescriptionTooLong];

/// What agents do with a skill that breaks the rule `code` of
/// [`AGENTS_TOLERATE`], for the warning an install prints.
pub fn agents_tolerate(code: Code) -> Option<&'static str> {
    Some(match code {
        Code::NameMismatch => "installed, it is in a folder named after `name`, as agents expect",
        Code::DescriptionTooLong => {
            "Claude Code loads it and cuts the description at 1,536 characters, Codex at 1,024; GitHub Copilot CLI does not load it"
        }
        _ => return None,
    })
}

impl ValidateOptions {
    /// Options for the skill in `dir`, whose folder name `name` must match.
    ///
    /// The folder name is the last component of `dir` as given, not of the
    /// folder it resolves to: a host that reads `.claude/skills/pdf`, a
    /// symlink to `../../vendor/pdf-v2`, knows the skill as `pdf`. Only `.`
    /// and `..` are resolved, lexically after making the path absolute (the
    /// working folder itself is the one the system reports).
    pub fn for_folder(dir: &Path) -> Self {
        Self {
            folder_name: folder_name(dir),
            ..Self::default()
        }
    }
}

/// Returns the name of the folder `dir` stands for; see [`ValidateOptions::for_folder`].
fn folder_name(dir: &Path) -> Option<String> {
    let name = match dir.file_name() {
        // `pdf`, `skills/pdf/` and `skills/pdf/.` all end in a name.
        Some(name) => name.to_owned(),
        // `.`, `..`, `pdf/..`, `/`: make it absolute and resolve the dots.
        None => {
            let absolute = std::path::absolute(dir).ok()?;
            let mut resolved = PathBuf::new();
            for component in absolute.components() {
                match component {
                    std::path::Component::ParentDir => {
                        resolved.pop();
                    }
                    std::path::Component::CurDir => {}
                    other => resolved.push(other),
                }
            }
            resolved.file_name()?.to_owned()
        }
    };
    name.into_string().ok()
}

/// The validated frontmatter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frontmatter {
    pub name: SkillName,
    pub description: String,
    pub license: Option<String>,
    pub compatibility: Option<String>,
    /// String-to-string metadata, in document order; non-string scalars are
    /// kept as their text, lists and maps are dropped (with a warning).
    pub metadata: Vec<(String, String)>,
    /// `allowed-tools`, split into single tools.
    pub allowed_tools: Vec<String>,
    /// `version`, else `metadata.version` when it is semver.
    pub version: Option<semver::Version>,
    /// `depends_on`.
    pub dependencies: Vec<Dependency>,
    /// The Universal Agent Skill extensions (`tools`, `when_to_use`, ...).
    pub extensions: model::Extensions,
}

impl Frontmatter {
    /// Returns a frontmatter with only `name` and `description`, for a skill
    /// read without the rest of its keys (see [`catalog`]).
    pub fn new(name: SkillName, description: String) -> Self {
        Self {
            name,
            description,
            license: None,
            compatibility: None,
            metadata: Vec::new(),
            allowed_tools: Vec::new(),
            version: None,
            dependencies: Vec::new(),
            extensions: model::Extensions::default(),
        }
    }
}

/// A dependency on another skill: `name` or `name@requirement`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dependency {
    pub name: SkillName,
    /// `*` when the dependency names no requirement.
    pub requirement: semver::VersionReq,
}

/// Why a dependency string is invalid.
#[derive(Debug, thiserror::Error)]
pub enum DependencyError {
    #[error(transparent)]
    Name(#[from] SkillNameError),
    #[error("the version requirement is invalid: {0}")]
    Requirement(#[from] semver::Error),
}

impl FromStr for Dependency {
    type Err = DependencyError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let (name, requirement) = match text.split_once('@') {
            Some((name, requirement)) => (name, requirement.parse()?),
            None => (text, semver::VersionReq::STAR),
        };
        Ok(Self {
            name: name.trim().parse()?,
            requirement,
        })
    }
}

impl fmt::Display for Dependency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.requirement == semver::VersionReq::STAR {
            write!(f, "{}", self.name)
        } else {
            write!(f, "{}@{}", self.name, self.requirement)
        }
    }
}

/// The outcome of validating one skill folder.
#[derive(Clone, Debug)]
pub struct SkillReport {
    /// The skill folder, as given.
    pub path: PathBuf,
    /// The typed frontmatter, present if and only if there is no error.
    pub frontmatter: Option<Frontmatter>,
    pub diagnostics: Vec<Diagnostic>,
}

impl SkillReport {
    /// Returns true if and only if no diagnostic is an error.
    pub fn is_valid(&self) -> bool {
        self.errors() == 0
    }

    /// Returns the number of errors.
    pub fn errors(&self) -> usize {
        self.count(Severity::Error)
    }

    /// Returns the number of warnings.
    pub fn warnings(&self) -> usize {
        self.count(Severity::Warning)
    }

    fn count(&self, severity: Severity) -> usize {
        self.diagnostics
            .iter()
            .filter(|d| d.severity == severity)
            .count()
    }
}

/// Finds the skill file in `dir`: `SKILL.md`, or a differently cased
/// `skill.md` (returned with `true` so the caller can warn).
pub fn find_skill_md(dir: &Path) -> std::io::Result<Option<(String, bool)>> {
    Ok(skill_md_in(&Listing::read(dir)?))
}

/// Finds the skill file in the listing of a skill folder; see [`find_skill_md`].
fn skill_md_in(listing: &Listing) -> Option<(String, bool)> {
    let mut other_case = None;
    for (name, file_type) in listing.entries() {
        let Some(name) = name.to_str() else {
            continue;
        };
        if name == SKILL_MD {
            return Some((name.to_owned(), false));
        }
        if name.eq_ignore_ascii_case(SKILL_MD) && file_type.is_file() {
            other_case = Some(name.to_owned());
        }
    }
    other_case.map(|name| (name, true))
}

/// Validates the skill in the folder `dir`.
pub fn validate_skill(dir: &Path, options: &ValidateOptions) -> SkillReport {
    let mut diagnostics = Vec::new();
    let frontmatter = check_skill(dir, options, &mut diagnostics);
    diagnostics.retain(|d| !(d.severity == Severity::Warning && options.allow.contains(&d.code)));
    if options.strict {
        for diagnostic in &mut diagnostics {
            diagnostic.severity = Severity::Error;
        }
    }
    let has_errors = diagnostics.iter().any(|d| d.severity == Severity::Error);
    SkillReport {
        path: dir.to_owned(),
        frontmatter: frontmatter.filter(|_| !has_errors),
        diagnostics,
    }
}

fn check_skill(
    dir: &Path,
    options: &ValidateOptions,
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<Frontmatter> {
    // The folder is listed once: for its skill file, then for the walk.
    let listing = match Listing::read(dir) {
        Ok(listing) => listing,
        Err(error) => {
            diagnostics.push(Diagnostic::new(
                Code::SkillMdMissing,
                SKILL_MD,
                format!("cannot read {}: {error}", dir.display()),
            ));
            return None;
        }
    };
    let file_name = match skill_md_in(&listing) {
        Some((file_name, other_case)) => {
            if other_case {
                diagnostics.push(
                    Diagnostic::new(Code::SkillMdCase, &file_name, format!("the skill file is named `{file_name}`, not `{SKILL_MD}`"))
                        .with_hint(format!("rename it to `{SKILL_MD}`: agents on case-sensitive file systems will not find it")),
                );
            }
            file_name
        }
        None => {
            diagnostics.push(
                Diagnostic::new(
                    Code::SkillMdMissing,
                    SKILL_MD,
                    format!("{} has no `{SKILL_MD}`", dir.display()),
                )
                .with_hint("a skill is a folder with a SKILL.md file; check the path"),
            );
            return None;
        }
    };
    // Only a folder that lists a `tools.json` needs it checked: no extra
    // look-up for the skills that have none.
    let has_tools_json = listing.entries().any(|(name, _)| name == tools::TOOLS_JSON);
    // Walked before SKILL.md is read, so that the read knows its size; its
    // problems are reported after those of SKILL.md, where they belong.
    let walked = walk::walk_listed(dir, listing);
    let size = walked.as_ref().ok().and_then(|entries| {
        entries
            .iter()
            .find(|entry| entry.path == file_name)
            .and_then(|entry| match entry.kind {
                EntryKind::File { size, .. } => Some(size),
                _ => None,
            })
    });
    let file = PathBuf::from(&file_name);
    let path = dir.join(&file_name);
    let read = match size {
        Some(size) => walk::read_file(&path, size, u64::MAX),
        None => fs_err::read(&path),
    };
    let bytes = match read {
        Ok(bytes) => bytes,
        Err(error) => {
            diagnostics.push(Diagnostic::new(
                Code::SkillMdMissing,
                &file,
                error.to_string(),
            ));
            return None;
        }
    };
    let document = match document::parse(&bytes) {
        Ok(document) => document,
        Err(error) => {
            diagnostics.push(document_diagnostic(&error, &file, &bytes));
            // A lone CR is often why the YAML does not parse: say so.
            if let Ok(text) = std::str::from_utf8(&bytes) {
                control::check_lone_carriage_returns(
                    document::find_lone_carriage_returns(text),
                    &document::normalize_line_ends(text),
                    &file,
                    diagnostics,
                );
            }
            return None;
        }
    };
    let frontmatter = validate::check_frontmatter(&document, &file, options, diagnostics);
    if has_tools_json && !options.skip_tools_json {
        let tools = frontmatter.as_ref().map(|f| f.extensions.tools.as_slice());
        tools::tools_json::check(dir, tools, diagnostics);
    }
    let entries = walked.map(|mut entries| {
        if let Some(frontmatter) = &frontmatter {
            archive::leave_out_own_tarballs(&mut entries, &frontmatter.name);
        }
        entries
    });
    let entries = match entries {
        Ok(entries) => Some(entries),
        Err(error) => {
            diagnostics.push(package_diagnostic(&PackError::Walk(error), dir));
            None
        }
    };
    lint::check_body(&document, dir, entries.as_deref(), &file, diagnostics);
    lint::scan_secrets(&document.text, &file, diagnostics);
    if let Some(entries) = &entries {
        lint::check_files(dir, entries, &file, diagnostics);
        for problem in archive::check_entries(entries, &archive::Limits::default()) {
            // A differently cased SKILL.md already has its own warning.
            if !matches!(problem, PackError::SkillMdNotPacked { found: Some(_) }) {
                diagnostics.push(package_diagnostic(&problem, dir));
            }
        }
        if let Some(frontmatter) = &frontmatter {
            let files: std::collections::HashSet<&str> = entries
                .iter()
                .filter(|entry| matches!(entry.kind, EntryKind::File { .. }))
                .map(|entry| entry.path.as_str())
                .collect();
            extensions::check_entrypoints(
                &mut extensions::Report {
                    document: &document,
                    file: &file,
                    diagnostics,
                },
                &frontmatter.extensions,
                &|path| files.contains(path),
            );
        }
        if options.host == Host::ClaudeApi {
            let total: u64 = entries
                .iter()
                .map(|entry| match entry.kind {
                    EntryKind::File { size, .. } => size,
                    _ => 0,
                })
                .sum();
            if total > CLAUDE_API_MAX_BYTES {
                diagnostics.push(Diagnostic::new(
                    Code::HostSizeLimit,
                    &file,
                    format!("the skill's files add up to {total} bytes; the Claude API accepts at most {CLAUDE_API_MAX_BYTES}"),
                ));
            }
        }
    }
    frontmatter
}

/// Turns a reason the skill cannot be packed into a diagnostic, so that
/// `validate` reports what `pack` would refuse.
fn package_diagnostic(problem: &PackError, dir: &Path) -> Diagnostic {
    let (code, file) = match problem {
        PackError::SkillMdNotPacked { .. } => (Code::SkillMdIgnored, SKILL_MD.to_owned()),
        PackError::Symlink { path } => (Code::Symlink, path.clone()),
        PackError::SpecialFile { path } => (Code::SpecialFile, path.clone()),
        PackError::UnportablePath { path, .. } => (Code::UnportablePath, path.clone()),
        PackError::VersionControl { path, .. } => (Code::VcsMetadata, path.clone()),
        PackError::GitRepository { folder } => (Code::VcsMetadata, folder.clone()),
        PackError::PathCollision { path, .. } => (Code::PathCollision, path.clone()),
        PackError::TooManyEntries { .. } => (Code::TooManyFiles, String::new()),
        PackError::TooLarge { .. } => (Code::TooLarge, String::new()),
        PackError::Walk(WalkError::NotUtf8 { path }) => (
            Code::UnportablePath,
            path.strip_prefix(dir)
                .unwrap_or(path)
                .to_string_lossy()
                .into_owned(),
        ),
        PackError::Walk(_) | PackError::Io { .. } => (Code::UnreadableFile, String::new()),
    };
    let message = std::iter::successors(Some(problem as &dyn std::error::Error), |error| {
        error.source()
    })
    .map(ToString::to_string)
    .collect::<Vec<_>>()
    .join(": ");
    let diagnostic = Diagnostic::new(code, file, message);
    match problem.hint() {
        Some(hint) => diagnostic.with_hint(hint),
        None => diagnostic,
    }
}

fn document_diagnostic(error: &DocumentError, file: &Path, bytes: &[u8]) -> Diagnostic {
    let text = String::from_utf8_lossy(bytes);
    let top = Location {
        line: 1,
        column: 1,
        end_column: 2,
    };
    match error {
        DocumentError::NotUtf8 { .. } => Diagnostic::new(Code::NotUtf8, file, error.to_string())
            .with_hint("save the file as UTF-8"),
        DocumentError::FrontmatterMissing { later_fence } => {
            let diagnostic =
                Diagnostic::new(Code::FrontmatterMissing, file, error.to_string()).at(top, &text);
            match later_fence {
                Some(line) => diagnostic.with_hint(format!(
                    "there is text before the `---` on line {line}: the file must begin with `---`"
                )),
                None => diagnostic.with_hint(
                    "begin the file with `---`, then `name:` and `description:`, then `---`",
                ),
            }
        }
        DocumentError::FrontmatterUnclosed => {
            Diagnostic::new(Code::FrontmatterUnclosed, file, error.to_string())
                .at(top, &text)
                .with_hint("add a line `---` after the last frontmatter key")
        }
        DocumentError::YamlSyntax { location, message } => {
            let hint = if message.contains("duplicate") {
                "a key may appear only once: remove or rename one of them"
            } else if message.contains("tab") {
                "indent with spaces: YAML does not allow tabs for indentation"
            } else if message.contains("second YAML document") {
                "remove the `---` line inside the frontmatter, or quote the value it is part of"
            } else {
                "quote values that contain `: ` or start with a special character such as `[`, `{`, `*` or `&`"
            };
            Diagnostic::new(Code::YamlSyntax, file, error.to_string())
                .at(*location, &document::normalize_line_ends(&text))
                .with_hint(hint)
        }
        DocumentError::NotMapping { location, .. } => {
            Diagnostic::new(Code::FrontmatterNotMapping, file, error.to_string())
                .at(*location, &document::normalize_line_ends(&text))
        }
        DocumentError::TooLarge { .. } => {
            Diagnostic::new(Code::FrontmatterTooLarge, file, error.to_string())
                .at(top, &text)
                .with_hint("keep the frontmatter to the fields agents read; move long text into the body or `references/`")
        }
        DocumentError::TooDeep { location } | DocumentError::AliasesTooLarge { location } => {
            Diagnostic::new(Code::FrontmatterTooLarge, file, error.to_string())
                .at(*location, &document::normalize_line_ends(&text))
                .with_hint("write the values out plainly: a frontmatter needs neither deep nesting nor large aliased values")
        }
    }
}

/// Returns true if and only if the symlink `link` in `dir` leads to a
/// folder that is neither `dir` nor one of its ancestors (which would
/// search them again, inside themselves) nor already searched through
/// another link; records the folder in `linked`.
fn follow_link(dir: &Path, link: &Path, linked: &mut std::collections::HashSet<PathBuf>) -> bool {
    let Ok(target) = fs_err::canonicalize(link) else {
        return false;
    };
    let is_ancestor = fs_err::canonicalize(dir).is_ok_and(|dir| dir.starts_with(&target));
    target.is_dir() && !is_ancestor && linked.insert(target)
}

/// Finds every skill at or below `path`: `path` itself when it holds a
/// skill file, else each folder below it that does (skills nested in skills
/// included). `.git` and `node_modules` are not searched; other hidden
/// folders are, since that is where agents keep skills (`.claude/skills`).
///
/// A symlink to a folder is searched too, under the link's path, since
/// agents follow it (`.claude/skills/pdf -> ../../vendor/pdf-v2` is the
/// skill `pdf`); each folder a symlink leads to is searched once, so a link
/// to an ancestor cannot make the search endless.
pub fn discover_skills(path: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    let mut pending = vec![path.to_owned()];
    let mut linked = std::collections::HashSet::new();
    while let Some(dir) = pending.pop() {
        let mut children = Vec::new();
        let mut is_skill = false;
        for entry in fs_err::read_dir(&dir)? {
            let entry = entry?;
            let file_type = entry.file_type()?;
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let is_linked_folder =
                file_type.is_symlink() && follow_link(&dir, &entry.path(), &mut linked);
            if file_type.is_dir() || is_linked_folder {
                if name != ".git" && name != "node_modules" {
                    children.push(entry.path());
                }
            } else if name.eq_ignore_ascii_case(SKILL_MD) {
                is_skill = true;
            }
        }
        if is_skill {
            found.push(dir);
        }
        pending.extend(children);
    }
    found.sort();
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_folder_name_is_the_last_component_as_given() {
        let name = |path: &str| folder_name(Path::new(path));
        assert_eq!(name("pdf").as_deref(), Some("pdf"));
        assert_eq!(name(".claude/skills/pdf/").as_deref(), Some("pdf"));
        assert_eq!(name("skills/pdf/.").as_deref(), Some("pdf"));
        assert_eq!(name("skills/pdf/scripts/..").as_deref(), Some("pdf"));
        assert_eq!(name("/").as_deref(), None);
        let working = std::env::current_dir().unwrap();
        let expected = working.file_name().and_then(|name| name.to_str());
        assert_eq!(name(".").as_deref(), expected);
    }
}
