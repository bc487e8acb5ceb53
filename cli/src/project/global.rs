//! The user's own skills, installed with `--global` (`-g`) from anywhere:
//! a project of their own, as `npm -g`, `uv tool` and `cargo install`
//! keep theirs (docs/manifest.md, "The user's own skills").
//!
//! Its skills.toml and skills.lock are in `$SKILLPKG_GLOBAL_DIR`, else
//! `skillpkg/global` in the platform's user data folder
//! (`$XDG_DATA_HOME` or `~/.local/share` on Linux). Its named targets are
//! the agents' user folders (`claude` is `~/.claude/skills`), and it is the
//! user's own file, so its targets may lead anywhere. A project's files
//! are never read or written by a `--global` command.

use std::path::PathBuf;

use super::manifest::{self, MANIFEST};
use crate::error::UserError;

/// The targets of a new global skills.toml: Claude Code's user folder and
/// `~/.agents/skills`, which Codex, GitHub Copilot and most other agents
/// read (docs/agents.md).
pub const DEFAULT_TARGETS: [&str; 2] = ["claude", "agents"];

/// The folder of the user's own skills.toml and skills.lock.
pub fn root() -> anyhow::Result<PathBuf> {
    std::env::var_os(crate::env_vars::SKILLPKG_GLOBAL_DIR)
        .filter(|value| !value.is_empty())
        .map(PathBuf::from)
        .or_else(|| dirs::data_dir().map(|dir| dir.join("skillpkg").join("global")))
        .ok_or_else(|| {
            UserError::new("there is no user data folder for --global skills")
                .with_hint(format!(
                    "set {} to the folder to keep them in",
                    crate::env_vars::SKILLPKG_GLOBAL_DIR
                ))
                .into()
        })
}

/// The user's own project: its folder, with a skills.toml (written with
/// [`DEFAULT_TARGETS`] when `create` and there is none yet).
pub fn open(create: bool) -> anyhow::Result<PathBuf> {
    let root = root()?;
    if root.join(MANIFEST).is_file() {
        return Ok(root);
    }
    if !create {
        return Err(UserError::new(format!(
            "no skills were added with --global yet (there is no {})",
            root.join(MANIFEST).display()
        ))
        .with_hint("add one with `skillpkg add --global NAME`")
        .into());
    }
    fs_err::create_dir_all(&root).map_err(|error| {
        UserError::new(format!(
            "cannot create the folder of the --global skills, {}",
            root.display()
        ))
        .with_hint(format!(
            "set {} to a folder you can write",
            crate::env_vars::SKILLPKG_GLOBAL_DIR
        ))
        .with_source(error)
    })?;
    let targets: Vec<String> = DEFAULT_TARGETS
        .iter()
        .map(|&name| name.to_owned())
        .collect();
    manifest::create(&root, None, &targets, false)?;
    Ok(root)
}
