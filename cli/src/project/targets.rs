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

use super::agents::Agent;
use crate::error::UserError;

/// How a record names a symlink among tree hashes (`OnDisk::identity` in [`super::plan`]).
pub const LINK_PREFIX: &str = "link:";

/// The identity of a symlink holding `text`.
pub fn link_identity(text: &str) -> String {
    format!("{LINK_PREFIX}{text}")
}

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

/// A resolved target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// As the manifest names it (`claude`, `./skills`).
    pub name: String,
    pub dir: PathBuf,
}

/// The named targets and their project folders, in the order `init` writes
/// them: Claude's folder first.
const NAMED_FOLDERS: [(&str, &str); 4] = [
    ("claude", ".claude/skills"),
    ("agents", ".agents/skills"),
    ("copilot", ".github/skills"),
    ("codex", ".codex/skills"),
];

/// Returns the target skills.toml names the project folder `folder` by:
/// its name when it is a named target's (`.claude/skills` is `claude`),
/// else the folder as a path target (`.windsurf/skills`, and `./skills`
/// for a bare `skills`, which would not read as a path).
pub fn target_for_folder(folder: &str) -> String {
    match NAMED_FOLDERS.iter().find(|(_, named)| *named == folder) {
        Some((name, _)) => (*name).to_owned(),
        None if folder.contains('/') || folder.starts_with('.') => folder.to_owned(),
        None => format!("./{folder}"),
    }
}

/// A target `init` picks for agents, and the agents that read it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentTarget {
    /// As skills.toml names it (see [`target_for_folder`]).
    pub target: String,
    /// The project folder.
    pub folder: &'static str,
    /// The ids of the agents (of those asked for) that read it.
    pub readers: Vec<&'static str>,
}

impl AgentTarget {
    /// `.claude/skills (read by claude-code and copilot)`.
    pub fn why(&self) -> String {
        let readers = match self.readers.as_slice() {
            [] => String::new(),
            [only] => (*only).to_owned(),
            [first @ .., last] => format!("{} and {last}", first.join(", ")),
        };
        format!("{} (read by {readers})", self.folder)
    }
}

/// Above this many folders to choose from, [`targets_for`] stops trying
/// every set of them (2^16 sets, each checked against every agent).
const MAX_SEARCHED_FOLDERS: usize = 16;

/// The fewest project folders that every agent of `agents` reads, each with
/// the agents that read it.
///
/// An agent that reads one folder only decides first; an agent that reads
/// one of those folders is served by it. For the rest, every set of their
/// folders is tried: the fewest folders win, then the set where the agents
/// read the folders they prefer (the first of theirs), then the one where
/// the fewest agents find a skill in two of their folders. The result is in
/// one order whatever the agents' order: the named targets (Claude's
/// folder first, the one `link = true` keeps the copy in), then the paths.
pub fn targets_for(agents: &[&'static Agent]) -> Vec<AgentTarget> {
    let mut agents: Vec<&'static Agent> = agents.to_vec();
    agents.sort_by_key(|agent| agent.id);
    agents.dedup_by_key(|agent| agent.id);
    let mut chosen: Vec<&'static str> = Vec::new();
    for agent in &agents {
        if let [only] = agent.project
            && !chosen.contains(only)
        {
            chosen.push(only);
        }
    }
    let unserved: Vec<&'static Agent> = agents
        .iter()
        .copied()
        .filter(|agent| !agent.project.iter().any(|folder| chosen.contains(folder)))
        .collect();
    let extra = cover(&agents, &chosen, &unserved);
    chosen.extend(extra);
    let rank = |folder: &&'static str| {
        let named = NAMED_FOLDERS
            .iter()
            .position(|(_, named)| named == folder)
            .unwrap_or(NAMED_FOLDERS.len());
        (named, *folder)
    };
    chosen.sort_by_key(rank);
    chosen
        .into_iter()
        .map(|folder| AgentTarget {
            target: target_for_folder(folder),
            folder,
            readers: agents
                .iter()
                .filter(|agent| agent.project.contains(&folder))
                .map(|agent| agent.id)
                .collect(),
        })
        .collect()
}

/// What a set of folders costs, compared in this order: how many folders,
/// the sum over the agents of the position (in their list) of the first
/// folder they read, and how many times an agent reads a second folder.
type Cost = (usize, usize, usize);

/// The folders to add to `chosen` so that every agent of `unserved` reads
/// one, at the lowest cost (see [`targets_for`]) for all of `agents`.
fn cover(
    agents: &[&'static Agent],
    chosen: &[&'static str],
    unserved: &[&'static Agent],
) -> Vec<&'static str> {
    let mut candidates: Vec<&'static str> = unserved
        .iter()
        .flat_map(|agent| agent.project.iter().copied())
        .collect();
    candidates.sort_unstable();
    candidates.dedup();
    if candidates.len() > MAX_SEARCHED_FOLDERS {
        // Only a long list of agents that each read several folders gets
        // here: give each its preferred folder unless one already serves it.
        let mut extra: Vec<&'static str> = Vec::new();
        for agent in unserved {
            if !agent.project.iter().any(|folder| extra.contains(folder)) {
                extra.push(agent.project[0]);
            }
        }
        return extra;
    }
    let cost = |set: &[&'static str]| -> Cost {
        let mut preference = 0;
        let mut twice = 0;
        for agent in agents {
            let read: Vec<usize> = agent
                .project
                .iter()
                .enumerate()
                .filter(|(_, folder)| chosen.contains(folder) || set.contains(folder))
                .map(|(index, _)| index)
                .collect();
            preference += read.first().copied().unwrap_or(0);
            twice += read.len().saturating_sub(1);
        }
        (set.len(), preference, twice)
    };
    let mut best: Option<(Cost, Vec<&'static str>)> = None;
    for mask in 0_u32..(1 << candidates.len()) {
        let set: Vec<&'static str> = candidates
            .iter()
            .enumerate()
            .filter(|(index, _)| mask & (1 << index) != 0)
            .map(|(_, folder)| *folder)
            .collect();
        let serves_all = unserved
            .iter()
            .all(|agent| agent.project.iter().any(|folder| set.contains(folder)));
        if !serves_all {
            continue;
        }
        let cost = cost(&set);
        // Ties go to the first set found, so the result does not depend on
        // anything but the table.
        if best.as_ref().is_none_or(|(best, _)| cost < *best) {
            best = Some((cost, set));
        }
    }
    best.map(|(_, set)| set).unwrap_or_default()
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
            "a cloned skills.toml or a symlink in the repository can point a target anywhere; if you meant it, pass --allow-external-targets",
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

    fn agents(ids: &[&str]) -> Vec<&'static Agent> {
        ids.iter()
            .map(|id| super::super::agents::find(id).unwrap())
            .collect()
    }

    fn targets(ids: &[&str]) -> Vec<String> {
        targets_for(&agents(ids))
            .into_iter()
            .map(|target| target.target)
            .collect()
    }

    #[test]
    fn each_agent_reads_one_folder_of_the_fewest_targets() {
        assert_eq!(targets(&["claude-code"]), ["claude"]);
        assert_eq!(targets(&["codex"]), ["agents"]);
        assert_eq!(targets(&["copilot"]), ["copilot"]);
        assert_eq!(targets(&["claude-code", "copilot"]), ["claude"]);
        // Copilot reads .agents/skills too: one folder serves both.
        assert_eq!(targets(&["codex", "copilot"]), ["agents"]);
        assert_eq!(
            targets(&["copilot", "codex", "claude-code"]),
            ["claude", "agents"]
        );
        let why: Vec<String> = targets_for(&agents(&["claude-code", "copilot"]))
            .iter()
            .map(AgentTarget::why)
            .collect();
        assert_eq!(why, [".claude/skills (read by claude-code and copilot)"]);
    }

    #[test]
    fn any_folder_of_the_table_can_be_a_target_and_shared_ones_serve_several_agents() {
        // Cursor reads .claude/skills, which Claude Code needs anyway.
        let picked = targets_for(&agents(&["cursor", "windsurf", "claude-code"]));
        assert_eq!(
            picked,
            [
                AgentTarget {
                    target: "claude".to_owned(),
                    folder: ".claude/skills",
                    readers: vec!["claude-code", "cursor"],
                },
                AgentTarget {
                    target: ".windsurf/skills".to_owned(),
                    folder: ".windsurf/skills",
                    readers: vec!["windsurf"],
                },
            ]
        );
        // Neither reads one folder only: the one they share wins.
        assert_eq!(targets(&["gemini-cli", "cursor"]), ["agents"]);
        // Alone, each gets the folder it prefers.
        assert_eq!(targets(&["gemini-cli"]), [".gemini/skills"]);
        assert_eq!(targets(&["openclaw"]), ["./skills"]);
        assert_eq!(
            targets(&["trae", "trae-cn", "roo"]),
            [".roo/skills", ".trae/skills"]
        );
        let three = targets_for(&agents(&["cline", "warp", "zed"]));
        assert_eq!(
            three[0].why(),
            ".agents/skills (read by cline, warp and zed)"
        );
        // Every agent at once: each still reads one of the targets.
        let all: Vec<&'static Agent> = super::super::agents::AGENTS.iter().collect();
        let picked = targets_for(&all);
        for agent in &all {
            assert!(
                picked
                    .iter()
                    .any(|target| agent.project.contains(&target.folder)),
                "{} is served",
                agent.id
            );
        }
        let distinct: std::collections::BTreeSet<&str> =
            all.iter().map(|agent| agent.project[0]).collect();
        assert!(picked.len() <= distinct.len());
    }

    #[test]
    fn every_target_init_writes_resolves_to_its_folder_inside_the_project() {
        let root = tempfile::tempdir().unwrap();
        for agent in super::super::agents::AGENTS {
            for folder in agent.project {
                let target = resolve(&target_for_folder(folder), root.path(), false, false)
                    .unwrap_or_else(|error| panic!("{}: {folder}: {error}", agent.id));
                assert_eq!(target.dir, root.path().join(folder), "{}", agent.id);
            }
        }
    }
}
