//! A new skill from a template, as `skillpkg new` writes it.
//!
//! ```text
//! NAME/
//!   SKILL.md                  name, description, metadata.version "0.1.0", a body to fill in
//!   scripts/count-words.EXT   with a tool: the example tool's script (py, mjs or sh)
//! ```
//!
//! With a tool, the frontmatter follows the Universal Agent Skill spec
//! (spec 003): one tool whose input and output schemas allow no other
//! property and require every one (OpenAI's strict mode), its
//! `implementation` (runtime and entrypoint), least-privilege `permissions`
//! (no files, no network) and a `safety` block. The script is executable,
//! starts with a `#!` line, reads one JSON object on stdin and writes one
//! on stdout.
//!
//! The files are decided first, as plain data ([`plan`]); [`create`] writes
//! them into a temporary folder beside the target, validates that folder
//! as a skill, and renames it into place, so the skill appears whole or not
//! at all, and never over an existing folder.

use std::path::{Path, PathBuf};

use super::model::Runtime;
use super::{Diagnostic, Severity, SkillName, ValidateOptions};

/// What to scaffold.
#[derive(Clone, Debug)]
pub struct ScaffoldOptions {
    pub name: SkillName,
    /// The `description`; a placeholder that says what to write when `None`.
    pub description: Option<String>,
    /// The runtime of an example tool, or `None` for a skill without tools.
    pub tool: Option<Runtime>,
}

/// One file of a new skill.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScaffoldFile {
    /// The path relative to the skill folder, `/`-separated.
    pub path: String,
    pub contents: String,
    pub executable: bool,
}

/// Why a skill could not be created.
#[derive(Debug, thiserror::Error)]
pub enum ScaffoldError {
    #[error("{} already exists", path.display())]
    TargetExists { path: PathBuf },
    #[error("cannot write {}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The skill the options give is not valid (a `description` that is too
    /// long or holds control characters): its errors, nothing written.
    #[error("the new skill would not be valid: {}", .errors.first().map_or("", |error| error.message.as_str()))]
    Invalid { errors: Vec<Diagnostic> },
}

/// The name of the example tool, and of its script.
const TOOL: &str = "count-words";

const SKILL_MD: &str = include_str!("templates/SKILL.md");
const SKILL_MD_WITH_TOOL: &str = include_str!("templates/SKILL-tools.md");
const PYTHON_SCRIPT: &str = include_str!("templates/count-words.py");
const NODE_SCRIPT: &str = include_str!("templates/count-words.mjs");
const BASH_SCRIPT: &str = include_str!("templates/count-words.sh");

/// Returns the files of the new skill.
pub fn plan(options: &ScaffoldOptions) -> Vec<ScaffoldFile> {
    let name = options.name.as_str();
    let description = options.description.clone().unwrap_or_else(|| {
        format!(
            "Replace this with what {name} does and when to use it: agents read this line to decide whether to load the skill."
        )
    });
    // A JSON string is a YAML double-quoted scalar: whatever the text holds
    // (`: `, `#`, quotes, a leading `-`), it stays one string.
    let description = serde_json::Value::from(description).to_string();
    let Some(runtime) = options.tool else {
        let skill_md = SKILL_MD
            .replace("{{name}}", name)
            .replace("{{description}}", &description);
        return vec![file("SKILL.md", skill_md, false)];
    };
    let (extension, script, allow_subprocess, compatibility) = match runtime {
        Runtime::Python => ("py", PYTHON_SCRIPT, "false", ""),
        Runtime::Node => ("mjs", NODE_SCRIPT, "false", ""),
        // The script runs jq, as a process of its own. jq is a requirement
        // of the environment, which `compatibility` states, not a package
        // for the host to install (`implementation.dependencies`): hosts
        // such as the Claude API install nothing.
        Runtime::Bash => (
            "sh",
            BASH_SCRIPT,
            "true",
            "compatibility: Needs jq on PATH (the count-words tool parses its JSON input with it).\n",
        ),
    };
    let entrypoint = format!("scripts/{TOOL}.{extension}");
    let skill_md = SKILL_MD_WITH_TOOL
        .replace("{{name}}", name)
        .replace("{{description}}", &description)
        .replace("{{runtime}}", runtime.as_str())
        .replace("{{entrypoint}}", &entrypoint)
        .replace("{{allow_subprocess}}", allow_subprocess)
        .replace("{{compatibility}}", compatibility);
    vec![
        file("SKILL.md", skill_md, false),
        file(&entrypoint, script.to_owned(), true),
    ]
}

fn file(path: &str, contents: String, executable: bool) -> ScaffoldFile {
    ScaffoldFile {
        path: path.to_owned(),
        contents,
        executable,
    }
}

/// Creates the skill folder `target` (which must not exist; its parent is
/// created if needed) with the files of [`plan`], and returns them.
pub fn create(
    target: &Path,
    options: &ScaffoldOptions,
) -> Result<Vec<ScaffoldFile>, ScaffoldError> {
    if target.symlink_metadata().is_ok() {
        return Err(ScaffoldError::TargetExists {
            path: target.to_owned(),
        });
    }
    let files = plan(options);
    let parent = target
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let io_error = |path: &Path| {
        let path = path.to_owned();
        move |source| ScaffoldError::Io { path, source }
    };
    fs_err::create_dir_all(parent).map_err(io_error(parent))?;
    // Beside the target, so the rename stays on one file system.
    let staging = tempfile::Builder::new()
        .prefix(".skillpkg-new-")
        .tempdir_in(parent)
        .map_err(io_error(parent))?;
    for file in &files {
        let path = staging.path().join(&file.path);
        if let Some(folder) = path.parent() {
            fs_err::create_dir_all(folder).map_err(io_error(folder))?;
        }
        fs_err::write(&path, &file.contents).map_err(io_error(&path))?;
        if file.executable {
            set_executable(&path).map_err(io_error(&path))?;
        }
    }
    // The templates are valid; what the options add may not be.
    let report = super::validate_skill(
        staging.path(),
        &ValidateOptions {
            folder_name: Some(options.name.to_string()),
            ..ValidateOptions::default()
        },
    );
    let errors: Vec<Diagnostic> = report
        .diagnostics
        .into_iter()
        .filter(|diagnostic| diagnostic.severity == Severity::Error)
        .collect();
    if !errors.is_empty() {
        return Err(ScaffoldError::Invalid { errors });
    }
    let staging = staging.keep();
    if let Err(source) = crate::archive::rename_no_replace(&staging, target) {
        let _ = fs_err::remove_dir_all(&staging);
        return Err(if target.symlink_metadata().is_ok() {
            ScaffoldError::TargetExists {
                path: target.to_owned(),
            }
        } else {
            ScaffoldError::Io {
                path: target.to_owned(),
                source,
            }
        });
    }
    Ok(files)
}

#[cfg(unix)]
fn set_executable(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    fs_err::set_permissions(path, std::fs::Permissions::from_mode(0o755))
}

#[cfg(not(unix))]
fn set_executable(_path: &Path) -> std::io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(tool: Option<Runtime>) -> ScaffoldOptions {
        ScaffoldOptions {
            name: "pdf-tools".parse().unwrap(),
            description: None,
            tool,
        }
    }

    #[test]
    fn a_plain_skill_is_one_skill_md() {
        let files = plan(&options(None));
        assert_eq!(files.len(), 1);
        let skill_md = &files[0].contents;
        assert!(skill_md.starts_with("---\nname: pdf-tools\ndescription: \"Replace this"));
        assert!(skill_md.contains("metadata:\n  version: \"0.1.0\"\n---\n"));
        assert!(!skill_md.contains("{{"), "{skill_md}");
    }

    #[test]
    fn each_runtime_gets_its_script_as_entrypoint() {
        for (runtime, entrypoint, first_line) in [
            (
                Runtime::Python,
                "scripts/count-words.py",
                "#!/usr/bin/env python3",
            ),
            (
                Runtime::Node,
                "scripts/count-words.mjs",
                "#!/usr/bin/env node",
            ),
            (
                Runtime::Bash,
                "scripts/count-words.sh",
                "#!/usr/bin/env bash",
            ),
        ] {
            let files = plan(&options(Some(runtime)));
            let paths: Vec<&str> = files.iter().map(|file| file.path.as_str()).collect();
            assert_eq!(paths, ["SKILL.md", entrypoint]);
            let skill_md = &files[0].contents;
            assert!(
                skill_md.contains(&format!(
                    "runtime: {runtime}\n      entrypoint: {entrypoint}\n"
                )),
                "{skill_md}"
            );
            assert!(!skill_md.contains("{{"), "{skill_md}");
            assert!(files[1].executable);
            assert_eq!(files[1].contents.lines().next(), Some(first_line));
        }
    }

    #[test]
    fn a_description_stays_one_string_whatever_it_holds() {
        let text = "Fill forms: \"quoted\", # not a comment, - not a list";
        let files = plan(&ScaffoldOptions {
            description: Some(text.to_owned()),
            ..options(None)
        });
        let document = super::super::document::parse(files[0].contents.as_bytes()).unwrap();
        let (_, value) = document.get("description").unwrap();
        assert_eq!(value.value.as_str(), Some(text));
    }
}
