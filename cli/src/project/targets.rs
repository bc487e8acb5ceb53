//! Install targets: the agent folders skills go into (docs/manifest.md).
//!
//! Each target folder holds the installed skills, one folder each, and
//! `.skillpkg.json`, the record of what skillpkg installed there: a folder
//! not in that record is someone else's and is never touched without
//! `--force`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::UserError;

/// The record of a target folder.
pub const STATE_FILE: &str = ".skillpkg.json";

/// What skillpkg installed in a target folder.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TargetState {
    pub v: u32,
    /// Skill name -> what was installed.
    pub skills: BTreeMap<String, InstalledSkill>,
}

/// One installed skill.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct InstalledSkill {
    pub version: String,
    pub tree: String,
}

/// A resolved target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// As the manifest names it (`claude`, `./skills`).
    pub name: String,
    pub dir: PathBuf,
}

/// Resolves a target name to its folder, in the project at `root` or, with
/// `global`, in the user's home.
pub fn resolve(name: &str, root: &Path, global: bool) -> anyhow::Result<Target> {
    let home = || {
        dirs::home_dir()
            .ok_or_else(|| UserError::new("there is no home folder for a --global install"))
    };
    let dir = match (name, global) {
        ("claude", false) => root.join(".claude/skills"),
        ("claude", true) => home()?.join(".claude/skills"),
        ("codex", false) => root.join(".codex/skills"),
        ("codex", true) => {
            match std::env::var_os(crate::env_vars::CODEX_HOME).filter(|value| !value.is_empty()) {
                Some(codex_home) => PathBuf::from(codex_home).join("skills"),
                None => home()?.join(".codex/skills"),
            }
        }
        ("copilot", false) => root.join(".github/skills"),
        ("copilot", true) => {
            return Err(
                UserError::new("GitHub Copilot has no user-level skills folder")
                    .with_hint(
                        "install into the project (without --global), or use the `agents` target",
                    )
                    .into(),
            );
        }
        ("agents", false) => root.join(".agents/skills"),
        ("agents", true) => home()?.join(".agents/skills"),
        (path, _) if path.contains('/') || path.starts_with('.') => root.join(path),
        (other, _) => {
            return Err(UserError::new(format!("unknown target `{other}`"))
                .with_hint("use claude, codex, copilot, agents, or a path such as ./skills")
                .into());
        }
    };
    Ok(Target {
        name: name.to_owned(),
        dir,
    })
}

impl Target {
    /// Reads the target's record (empty when there is none).
    pub fn state(&self) -> anyhow::Result<TargetState> {
        let path = self.dir.join(STATE_FILE);
        match fs_err::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|error| {
                UserError::new(format!("{} is corrupt", path.display()))
                    .with_hint("delete it and run `skillpkg install --force` to take the folders over again")
                    .with_source(error)
                    .into()
            }),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(TargetState { v: 1, ..TargetState::default() }),
            Err(error) => Err(error.into()),
        }
    }

    /// Writes the target's record atomically.
    pub fn write_state(&self, state: &TargetState) -> anyhow::Result<()> {
        fs_err::create_dir_all(&self.dir)?;
        let mut text = serde_json::to_string_pretty(state).expect("a target state serialises");
        text.push('\n');
        super::manifest::write(&self.dir.join(STATE_FILE), &text)
    }
}
