//! One MCP connection's state (spec 001, "State Model"): the skills it has
//! loaded, in load order, and nothing else. Sessions share only the
//! read-only catalog, so two clients never see each other's skills.

use std::sync::Arc;

use serde_json::{Value, json};
use skillpkg_index::skill::prompt::{ActiveSkill, Prompt};

use super::catalog::{ReadError, ServedCatalog, ServedSkill};
use super::tool_call::{NameCollision, WireNames};
pub use super::wire::Mode;

/// How many skills a session may have loaded at once unless
/// `--max-active` says otherwise.
pub const DEFAULT_MAX_ACTIVE: usize = 8;

/// The most names one `skills_load` may give, duplicates included: more
/// than `--max-active` can ever load, and few enough to check at once.
pub const MAX_NAMES: usize = 256;

/// Why a session call is refused; the text is what the model reads.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("{0}")]
    UnknownSkill(String),
    #[error(
        "loading {requested} skills would make {total} active; at most {max} may be loaded at once: load fewer skills, or unload some with skills_unload first"
    )]
    TooMany {
        requested: usize,
        total: usize,
        max: usize,
    },
    #[error("no skill is loaded: call skills_load with the skill you need first")]
    NothingLoaded,
    #[error("skill `{skill}` is not loaded; loaded: {}", loaded.join(", "))]
    NotLoaded { skill: String, loaded: Vec<String> },
    #[error("skill `{skill}` changed on disk since the server read it ({}); it is not loaded: the server reads it again as soon as the changes settle, then load it again", files.join(", "))]
    ChangedOnDisk { skill: String, files: Vec<String> },
    #[error("{error}; {}", error.hint())]
    Read {
        #[from]
        error: ReadError,
    },
    #[error("give `names` (a list of skill names) or `all: true`")]
    NothingToUnload,
    #[error(
        "the tool `{}` of skill `{}` would be listed as `{}`, which {}; load the skills separately",
        .0.tool,
        .0.skill,
        .0.wire,
        match &.0.taken_by {
            Some(other) => format!("the tool `{}` of skill `{}` already has", other.tool, other.skill),
            None => "is one of the runtime's own tools".to_owned(),
        }
    )]
    ToolNameCollision(NameCollision),
}

/// The wire names of `skills`' tools, next to the runtime's own.
fn names_for<'a>(
    skills: impl Iterator<Item = &'a Arc<ServedSkill>>,
) -> Result<WireNames, NameCollision> {
    let mut names = WireNames::new();
    for tool in super::wire::RUNTIME_TOOLS {
        names.reserve(tool);
    }
    for skill in skills {
        names.add_skill(
            &skill.name,
            skill
                .frontmatter
                .extensions
                .tools
                .iter()
                .map(|tool| tool.name.as_str()),
        )?;
    }
    Ok(names)
}

/// A session's loaded skills, oldest first.
#[derive(Debug)]
pub struct Session {
    max_active: usize,
    active: Vec<Loaded>,
    /// The wire names of the loaded skills' tools.
    names: WireNames,
}

#[derive(Debug)]
struct Loaded {
    skill: Arc<ServedSkill>,
    /// The `SKILL.md` body as checked when loaded.
    body: String,
}

impl Session {
    pub fn new(max_active: usize) -> Self {
        Self {
            max_active,
            active: Vec::new(),
            names: names_for(std::iter::empty()).expect("no skill, no collision"),
        }
    }

    /// `skills_load`: resolves every name in `catalog` (the skills served
    /// now) first, so a bad name changes nothing; then replaces or extends
    /// the loaded set.
    pub fn load(
        &mut self,
        catalog: &ServedCatalog,
        names: &[String],
        mode: Mode,
    ) -> Result<(), SessionError> {
        if names.len() > MAX_NAMES {
            return Err(SessionError::TooMany {
                requested: names.len(),
                total: names.len(),
                max: self.max_active,
            });
        }
        let mut seen = std::collections::HashSet::new();
        let wanted: Vec<&String> = names.iter().filter(|name| seen.insert(*name)).collect();
        // In `add` mode a skill loaded as it is served now stays as it is;
        // one whose served version changed since it was loaded is loaded
        // anew, in place of the old.
        let stale: Vec<&str> = match mode {
            Mode::Replace => Vec::new(),
            Mode::Add => wanted
                .iter()
                .filter(|name| self.is_loaded(name) && !self.is_current(name, catalog))
                .map(|name| name.as_str())
                .collect(),
        };
        let kept = match mode {
            Mode::Replace => 0,
            Mode::Add => self.active.len() - stale.len(),
        };
        let new: Vec<&&String> = wanted
            .iter()
            .filter(|name| {
                mode == Mode::Replace || !self.is_loaded(name) || stale.contains(&name.as_str())
            })
            .collect();
        // Every name is resolved before the count is checked, so a typo is
        // reported as such, not as one skill too many.
        let mut found = Vec::with_capacity(new.len());
        for name in new {
            found.push(
                catalog
                    .get(name)
                    .map_err(SessionError::UnknownSkill)?
                    .clone(),
            );
        }
        let total = kept + found.len();
        if total > self.max_active {
            return Err(SessionError::TooMany {
                requested: found.len(),
                total,
                max: self.max_active,
            });
        }
        let mut loaded = Vec::with_capacity(found.len());
        for skill in found {
            let changed = skill.changed_since_start();
            if !changed.is_empty() {
                return Err(SessionError::ChangedOnDisk {
                    skill: skill.name.clone(),
                    files: changed,
                });
            }
            let body = skill.body()?;
            loaded.push(Loaded { skill, body });
        }
        let kept_skills = match mode {
            Mode::Replace => &self.active[..0],
            Mode::Add => &self.active[..],
        };
        let names = names_for(
            kept_skills
                .iter()
                .filter(|loaded| !stale.contains(&loaded.skill.name.as_str()))
                .map(|loaded| &loaded.skill)
                .chain(loaded.iter().map(|loaded| &loaded.skill)),
        )
        .map_err(SessionError::ToolNameCollision)?;
        match mode {
            Mode::Replace => self.active.clear(),
            Mode::Add => self
                .active
                .retain(|loaded| !stale.contains(&loaded.skill.name.as_str())),
        }
        self.active.extend(loaded);
        self.names = names;
        Ok(())
    }

    /// `skills_unload`: removes `names` (those not loaded are ignored), or
    /// everything.
    pub fn unload(&mut self, names: Option<&[String]>, all: bool) -> Result<(), SessionError> {
        match (names, all) {
            (_, true) => self.active.clear(),
            (Some(names), false) => self
                .active
                .retain(|loaded| !names.contains(&loaded.skill.name)),
            (None, false) => return Err(SessionError::NothingToUnload),
        }
        self.names = names_for(self.active.iter().map(|loaded| &loaded.skill))
            .expect("fewer skills than before cannot collide");
        Ok(())
    }

    /// The wire names of the loaded skills' tools, in load order: cheap
    /// enough to compare before and after a call.
    pub fn tool_wire_names(&self) -> Vec<String> {
        self.active
            .iter()
            .flat_map(|loaded| {
                loaded
                    .skill
                    .frontmatter
                    .extensions
                    .tools
                    .iter()
                    .map(|tool| super::tool_call::wire_name(&loaded.skill.name, tool.name.as_str()))
            })
            .collect()
    }

    /// The loaded skills' tools as `tools/list` shows them, in load order.
    pub fn listed_tools(&self) -> Vec<rmcp::model::Tool> {
        self.active
            .iter()
            .flat_map(|loaded| {
                loaded
                    .skill
                    .frontmatter
                    .extensions
                    .tools
                    .iter()
                    .map(|tool| super::tool_call::listed_tool(&loaded.skill.name, tool))
            })
            .collect()
    }

    /// The loaded skill's tool a wire name calls.
    pub fn tool(
        &self,
        wire: &str,
    ) -> Option<(&Arc<ServedSkill>, &skillpkg_index::skill::model::Tool)> {
        let route = self.names.resolve(wire)?;
        let skill = &self
            .active
            .iter()
            .find(|loaded| loaded.skill.name == route.skill)?
            .skill;
        let tool = skill
            .frontmatter
            .extensions
            .tools
            .iter()
            .find(|tool| tool.name.as_str() == route.tool)?;
        Some((skill, tool))
    }

    /// The loaded skill `name`, or the most recently loaded one.
    pub fn resolve(&self, name: Option<&str>) -> Result<&Arc<ServedSkill>, SessionError> {
        let Some(last) = self.active.last() else {
            return Err(SessionError::NothingLoaded);
        };
        match name {
            None => Ok(&last.skill),
            Some(name) => self
                .active
                .iter()
                .find(|loaded| loaded.skill.name == name)
                .map(|loaded| &loaded.skill)
                .ok_or_else(|| SessionError::NotLoaded {
                    skill: name.to_owned(),
                    loaded: self.names(),
                }),
        }
    }

    fn is_loaded(&self, name: &str) -> bool {
        self.active.iter().any(|loaded| loaded.skill.name == name)
    }

    /// Returns true if and only if the skill `name` is loaded as `catalog`
    /// serves it now.
    fn is_current(&self, name: &str, catalog: &ServedCatalog) -> bool {
        let Ok(served) = catalog.get(name) else {
            return false;
        };
        self.active
            .iter()
            .any(|loaded| loaded.skill.name == name && loaded.skill.tree == served.tree)
    }

    /// The loaded skills' names, in load order.
    pub fn names(&self) -> Vec<String> {
        self.active
            .iter()
            .map(|loaded| loaded.skill.name.clone())
            .collect()
    }

    /// The loaded skills, in load order.
    pub fn skills(&self) -> impl Iterator<Item = &Arc<ServedSkill>> {
        self.active.iter().map(|loaded| &loaded.skill)
    }

    /// The receipt `skills_load` and `skills_unload` return (spec 001).
    pub fn receipt(&self) -> Value {
        json!({
            "active_skills": self.active.iter().map(|loaded| {
                let skill = &loaded.skill;
                let mut entry = json!({
                    "name": skill.name,
                    "location": skill.location,
                    "root_dir": skill.root,
                    "digest": skill.digest,
                    "properties": skill.properties,
                });
                if let Some(version) = &skill.locked {
                    entry["version"] = json!(version.to_string());
                }
                entry
            }).collect::<Vec<_>>()
        })
    }

    /// The `<active_skills>` block, in load order (later skills take
    /// precedence); empty when nothing is loaded.
    pub fn active_block(&self) -> String {
        let prompt = Prompt {
            available_skills: Vec::new(),
            active_skills: self
                .active
                .iter()
                .map(|loaded| ActiveSkill {
                    name: loaded.skill.name.clone(),
                    location: loaded.skill.location.clone(),
                    body: loaded.body.clone(),
                })
                .collect(),
        };
        prompt.active_xml()
    }
}
