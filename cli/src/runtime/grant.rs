//! Why a grant is refused: a skill's permission globs (their grammar,
//! which `skillpkg validate` checks too), script paths and working folders
//! ([`Denied`]), and grants that reach a protected path ([`Refusal`]).
//!
//! [`super::sandbox`] turns grants into rules and [`super::protected`]
//! judges what they reach; both refuse with these.

use std::borrow::Cow;
use std::fmt;
use std::io;
use std::path::PathBuf;

use skillpkg_index::skill::protected::{Access, Rule};

/// The characters that make a glob more than a literal path.
pub(crate) const WILDCARDS: [char; 6] = ['*', '?', '[', ']', '{', '}'];

/// Why a permission, a script path or a working folder is refused.
#[derive(Debug, thiserror::Error)]
pub enum Denied {
    #[error("`permissions.filesystem.{access}` pattern `{glob}` is refused: {reason}")]
    Glob {
        access: &'static str,
        glob: String,
        reason: String,
    },
    #[error("{path} is outside the roots the client granted")]
    OutsideRoots { path: PathBuf },
    #[error("no roots: the client granted none and there is no project folder")]
    NoRoots,
    #[error("`{path}` is refused: {reason}")]
    Path { path: String, reason: String },
    #[error("cannot read {path}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// The grant reaches agent or VCS configuration, credentials or
    /// another protected path ([`super::protected`]).
    #[error("{0}")]
    Protected(Box<Refusal>),
}

impl Denied {
    /// What the user (or the skill's author) can do about it.
    pub fn hint(&self) -> Option<Cow<'static, str>> {
        if let Self::Protected(refusal) = self {
            return Some(refusal.hint().into());
        }
        let hint = match self {
            Self::Glob {
                access: "write", ..
            } => Some(
                "write patterns need a fixed folder to grant, like `output/**`, inside the roots",
            ),
            Self::Glob { .. } => Some(
                "patterns match root-relative paths with `/`, like `docs/**/*.pdf`; declare a narrower one",
            ),
            Self::OutsideRoots { .. } => {
                Some("ask the client to add the folder to its MCP roots, or use one inside them")
            }
            Self::NoRoots => {
                Some("start `skillpkg mcp` with --project, or let the client send roots")
            }
            Self::Path { .. } => {
                Some("give a path relative to the skill folder, like `scripts/extract.py`")
            }
            Self::Io { .. } | Self::Protected(_) => None,
        };
        hint.map(Cow::Borrowed)
    }
}

/// How a grant meets a protected path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reach {
    /// The grant is the protected path.
    Is,
    /// The grant lies inside it.
    Inside,
    /// The grant holds it.
    Contains,
}

/// A grant refused because it reaches a protected path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub skill: String,
    pub access: Access,
    /// The glob, as the skill wrote it.
    pub glob: String,
    /// What the grant would open: a path, or the glob's text when it is
    /// judged from the text alone.
    pub granted: String,
    /// The protected path it reaches.
    pub protected: String,
    pub reach: Reach,
    pub rule: Rule,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            skill,
            access,
            glob,
            granted,
            protected,
            reach,
            rule,
        } = self;
        let opened = match access {
            Access::Read => "readable",
            Access::Write => "writable",
        };
        write!(
            f,
            "skill `{skill}` may not have `permissions.filesystem.{access}` pattern `{glob}`: "
        )?;
        match reach {
            Reach::Is => write!(f, "it would make `{protected}` {opened}")?,
            Reach::Inside => write!(
                f,
                "it would make `{granted}` {opened}, inside `{protected}`"
            )?,
            Reach::Contains => write!(
                f,
                "it would make `{granted}` {opened}, and with it `{protected}`"
            )?,
        }
        write!(f, ", {} (rule `{rule}`): {}", rule.what(), rule.why())
    }
}

impl Refusal {
    /// How an operator allows the grant, and what the skill's author can
    /// do instead.
    pub fn hint(&self) -> String {
        format!(
            "if you trust skill `{}` with this, start `skillpkg mcp --allow-grant {}`; a skill's author grants a folder of its own instead, like `output/**`",
            self.skill,
            shell_quote(&format!("{}={}", self.skill, self.glob))
        )
    }
}

/// `text` in single quotes for a POSIX shell, so a glob's `*` and spaces
/// reach skillpkg as they are.
fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// Checks a permission glob the way `skillpkg validate` does and splits it
/// into its fixed prefix (the folders before the first wildcard) and a
/// matcher for the rest; the matcher is `None` when the glob is a literal
/// path or `prefix/**`, which need no walk.
pub(crate) fn parse_glob(
    access: &'static str,
    glob: &str,
) -> Result<(PathBuf, Option<globset::GlobMatcher>), Denied> {
    let refuse = |reason: &str| Denied::Glob {
        access,
        glob: glob.to_owned(),
        reason: reason.to_owned(),
    };
    let trimmed = glob.trim_start_matches("./");
    if trimmed.is_empty() {
        return Err(refuse("it is empty"));
    }
    if trimmed.starts_with('!') {
        return Err(refuse("negation (`!`) only exists in other glob dialects"));
    }
    if trimmed.contains('\\') || trimmed.contains('\0') {
        return Err(refuse("it contains `\\` or NUL"));
    }
    if trimmed.starts_with('/') || trimmed.starts_with('~') {
        return Err(refuse("it is absolute; patterns are relative to the roots"));
    }
    if trimmed.split('/').any(|part| part == "..") {
        return Err(refuse("it climbs out of the roots with `..`"));
    }
    let is_wild = |part: &str| part.contains(WILDCARDS);
    let parts: Vec<&str> = trimmed.split('/').filter(|part| !part.is_empty()).collect();
    let fixed = parts.iter().take_while(|part| !is_wild(part)).count();
    let prefix: PathBuf = parts[..fixed].iter().filter(|part| **part != ".").collect();
    if fixed == parts.len() || (fixed + 1 == parts.len() && parts[fixed] == "**") {
        return Ok((prefix, None));
    }
    let matcher = globset::GlobBuilder::new(trimmed)
        .literal_separator(true)
        .build()
        .map_err(|error| refuse(&error.kind().to_string()))?
        .compile_matcher();
    Ok((prefix, Some(matcher)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grant_is_quoted_for_the_shell_in_the_hint() {
        assert_eq!(shell_quote("notes=it's/**"), r"'notes=it'\''s/**'");
    }
}
