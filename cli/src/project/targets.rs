//! Install targets: the agent folders skills go into (docs/manifest.md).
//!
//! Each target folder holds the installed skills, one folder each, and
//! `.skillpkg.json`, the record of what skillpkg installed there: a folder
//! not in that record is someone else's and is never touched without
//! `--force`.
//!
//! A target folder may come from a cloned repository, record and all, so
//! neither is trusted: the record's keys parse as skill names (a name is
//! never a path: every skill folder is a direct child of its target), a
//! folder the record claims is skillpkg's only while its files still hash
//! to the tree the record says was installed, and a target that leads out
//! of the project (an absolute path, `..`, or a symlink on the way) needs
//! the user's say-so.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use skillpkg_index::skill::SkillName;

use crate::error::UserError;

/// The record of a target folder.
pub const STATE_FILE: &str = ".skillpkg.json";

/// What skillpkg installed in a target folder.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TargetState {
    pub v: u32,
    /// Skill name -> what was installed. Keys that are not skill names (a
    /// path such as `../../x`) make the whole record unreadable.
    pub skills: BTreeMap<SkillName, InstalledSkill>,
}

/// One installed skill.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct InstalledSkill {
    pub version: String,
    /// The tree hash (`h2:`, or `h1:` in records written before) of the
    /// folder as installed.
    pub tree: String,
    /// While an install replaces the folder: the tree hash of the folder
    /// being replaced (absent when there was none). A kill between the
    /// record and the swap leaves either tree in place, and both are
    /// recognised as skillpkg's own. Since the record of 2026-11.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replacing: Option<String>,
    /// A digest of the folder's listing and of every entry's size, inode,
    /// change and modification times, taken when its files were last
    /// hashed and found to be `tree`: while the listing still matches it,
    /// an install knows the folder is unchanged without reading its files.
    /// An edit changes the change time, which no one can set back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stamp: Option<String>,
    /// With `link = true`: the symlink's text, when skillpkg put the skill
    /// here as a link to the first target's copy (`../../.claude/skills/pdf`)
    /// rather than as a folder. `tree` is then the tree of the copy. Since
    /// the record of 2026-11.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<String>,
    /// A copy installed where a link was asked for and the file system
    /// refused it: in place as it is, so that every install does not copy
    /// and warn again (`install --force` tries the link again).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub copy_for_link: bool,
}

impl InstalledSkill {
    /// Returns true if and only if `disk` is the folder (or the symlink)
    /// this record says skillpkg installed, or was replacing.
    pub fn recognises(&self, disk: &super::plan::OnDisk) -> bool {
        let installed = match &self.link {
            Some(text) => disk.is(&super::plan::link_identity(text)),
            None => disk.tree_is(&self.tree),
        };
        installed
            || self
                .replacing
                .as_deref()
                .is_some_and(|replacing| disk.is(replacing))
    }
}

/// A resolved target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// As the manifest names it (`claude`, `./skills`).
    pub name: String,
    pub dir: PathBuf,
}

/// An agent tool, as `init --agent` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Agent {
    /// Claude Code: `.claude/skills`.
    #[value(name = "claude-code", alias = "claude")]
    ClaudeCode,
    /// Current Codex: `.agents/skills`, from the working folder up to the
    /// repository's root.
    Codex,
    /// GitHub Copilot: `.github/skills`, and `.claude/skills` too.
    #[value(alias = "github-copilot")]
    Copilot,
}

impl Agent {
    /// The name `--agent` takes.
    pub fn name(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "claude-code",
            Agent::Codex => "codex",
            Agent::Copilot => "copilot",
        }
    }

    /// The project folders the agent reads skills from today, as targets,
    /// the one it prefers first.
    fn reads(self) -> &'static [&'static str] {
        match self {
            Agent::ClaudeCode => &["claude"],
            Agent::Codex => &["agents"],
            Agent::Copilot => &["copilot", "claude"],
        }
    }
}

/// The fewest targets that every agent of `agents` reads, each with why:
/// an agent that reads a folder another agent needs anyway is served by
/// it, so that no agent finds the same skill in two of its folders.
pub fn targets_for(agents: &[Agent]) -> Vec<(String, String)> {
    let mut chosen: Vec<&'static str> = Vec::new();
    // The agents that read one folder only decide first.
    let mut ordered: Vec<Agent> = agents.to_vec();
    ordered.sort_by_key(|agent| agent.reads().len());
    ordered.dedup();
    for agent in &ordered {
        if !agent.reads().iter().any(|target| chosen.contains(target)) {
            chosen.push(agent.reads()[0]);
        }
    }
    // One order whatever the agents' order: Claude's folder first.
    let rank = |target: &&str| {
        ["claude", "agents", "copilot"]
            .iter()
            .position(|t| t == target)
    };
    chosen.sort_by_key(rank);
    let folder = |target: &str| match target {
        "claude" => ".claude/skills",
        "agents" => ".agents/skills",
        "copilot" => ".github/skills",
        _ => unreachable!("a named target"),
    };
    chosen
        .into_iter()
        .map(|target| {
            let readers: Vec<&str> = ordered
                .iter()
                .filter(|agent| agent.reads().contains(&target))
                .map(|agent| agent.name())
                .collect();
            (
                target.to_owned(),
                format!("{} (read by {})", folder(target), readers.join(" and ")),
            )
        })
        .collect()
}

/// The targets that name an agent's folders (the others are paths).
const NAMED: [&str; 4] = ["claude", "codex", "copilot", "agents"];

/// Resolves a target name to its folder, in the project at `root` or, with
/// `global`, in the user's home. A project target that leads out of the
/// project is refused unless `outside_allowed` (see [`check_inside`]).
pub fn resolve(
    name: &str,
    root: &Path,
    global: bool,
    outside_allowed: bool,
) -> anyhow::Result<Target> {
    let target = resolve_unchecked(name, root, global)?;
    // `--global` sends the named targets to the user's folders; a path
    // target stays a path in the project, checked like any other.
    let user_folder = global && NAMED.contains(&name);
    if !user_folder && !outside_allowed {
        check_inside(&target, root)?;
    }
    Ok(target)
}

/// Refuses a target folder that is not inside the project at `root`: a
/// path target that is absolute or climbs with `..`, or any target reached
/// through a symlink that leaves the project (a cloned `.claude -> ~/.claude`
/// would otherwise install into the user's own folder, silently).
pub fn check_inside(target: &Target, root: &Path) -> anyhow::Result<()> {
    let outside = |why: String| -> anyhow::Error {
        UserError::new(format!(
            "the install target `{}` is outside the project: {why}",
            target.name
        ))
        .with_hint(
            "a cloned skills.toml or a symlink in the repository can point a target anywhere; if you meant it, pass --allow-external-targets (or --global for the user-level folders)",
        )
        .into()
    };
    let Ok(relative) = target.dir.strip_prefix(root) else {
        return Err(outside(format!(
            "{} is not below {}",
            target.dir.display(),
            root.display()
        )));
    };
    if relative
        .components()
        .any(|component| !matches!(component, Component::Normal(_) | Component::CurDir))
    {
        return Err(outside(format!(
            "`{}` climbs out with `..`",
            relative.display()
        )));
    }
    // Every part of the path that exists, resolved through symlinks, must
    // stay inside the project.
    let canonical_root = fs_err::canonicalize(root)?;
    let mut walked = root.to_path_buf();
    for component in relative.components() {
        walked.push(component);
        match fs_err::symlink_metadata(&walked) {
            Ok(metadata) if metadata.file_type().is_symlink() => {
                let resolved = fs_err::canonicalize(&walked).unwrap_or_default();
                if !resolved.starts_with(&canonical_root) {
                    return Err(outside(format!(
                        "{} is a symlink to {}",
                        walked.display(),
                        fs_err::read_link(&walked).unwrap_or_default().display()
                    )));
                }
            }
            Ok(_) => {}
            Err(_) => break,
        }
    }
    Ok(())
}

fn resolve_unchecked(name: &str, root: &Path, global: bool) -> anyhow::Result<Target> {
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
        ("copilot", true) => home()?.join(".copilot/skills"),
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
                UserError::new(format!("{} is corrupt or was not written by skillpkg", path.display()))
                    .with_hint("check where it came from (a repository should not commit it), delete it, and run `skillpkg install --force` to take the folders over again")
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_agent_reads_one_folder_of_the_fewest_targets() {
        let targets = |agents: &[Agent]| -> Vec<String> {
            targets_for(agents)
                .into_iter()
                .map(|(target, _)| target)
                .collect()
        };
        assert_eq!(targets(&[Agent::ClaudeCode]), ["claude"]);
        assert_eq!(targets(&[Agent::Codex]), ["agents"]);
        assert_eq!(targets(&[Agent::Copilot]), ["copilot"]);
        assert_eq!(targets(&[Agent::ClaudeCode, Agent::Copilot]), ["claude"]);
        assert_eq!(
            targets(&[Agent::Codex, Agent::Copilot]),
            ["agents", "copilot"]
        );
        assert_eq!(
            targets(&[Agent::Copilot, Agent::Codex, Agent::ClaudeCode]),
            ["claude", "agents"]
        );
        let why = targets_for(&[Agent::ClaudeCode, Agent::Copilot]);
        assert_eq!(why[0].1, ".claude/skills (read by claude-code and copilot)");
    }
}
