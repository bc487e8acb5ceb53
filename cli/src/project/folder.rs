//! A skill in a folder: read, validated as `publish` validates, and packed
//! in memory, whether the folder is the project's own or one skillpkg
//! wrote from a repository, an index or a tarball; and the folders below
//! one that hold skills.

use std::path::{Component, Path, PathBuf};

use skillpkg_index::archive::{self, Limits, PackedSkill};
use skillpkg_index::skill::{self, SkillName, ValidateOptions};

use super::lockfile::LockedVersion;
use crate::error::UserError;

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
    /// Whether its SKILL.md gives a version (`metadata.version`).
    pub versioned: bool,
    /// What to lock and show as its version when it gives none and its
    /// source names one: a git tag, or the commit.
    pub label: Option<LockedVersion>,
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
        versioned: frontmatter.version.is_some(),
        label: None,
        packed,
        warnings,
        dependencies: frontmatter
            .dependencies
            .into_iter()
            .map(|dependency| dependency.name)
            .collect(),
    })
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

    #[test]
    fn paths_are_written_relative_to_the_project() {
        let rel = |path: &str, base: &str| relative_path(Path::new(path), Path::new(base));
        assert_eq!(rel("/p/skills/pdf", "/p").as_deref(), Some("skills/pdf"));
        assert_eq!(
            rel("/shared/pdf", "/p/q").as_deref(),
            Some("../../shared/pdf")
        );
        assert_eq!(rel("/p", "/p").as_deref(), Some("."));
    }
}
