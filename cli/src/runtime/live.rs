//! The catalog as it is now: what the server serves can change while it
//! runs ([`super::watch`] reads it again when the scopes or the lock
//! change). Every request takes the current [`View`] once and works on it,
//! so a request never sees half of one catalog and half of the next; a
//! change is announced to every connection that listens ([`Change`]).

use std::collections::BTreeSet;
use std::sync::{Arc, OnceLock, PoisonError, RwLock};

use skillpkg_index::skill::prompt::{AvailableSkill, Prompt as SkillsPrompt};
use tokio::sync::broadcast;

use super::catalog::ServedCatalog;
use super::tool_call::Redactor;

/// The base rule of spec 001's prompt contract, with the names the tools
/// have on the wire.
pub const LOADING_RULE: &str = "Skills are folders of instructions, references and scripts for particular tasks. Before you use a skill's instructions, files or scripts you MUST call the skills_load tool with its name: it returns the skill's SKILL.md instructions, which then apply until you unload the skill (skills loaded later take precedence when they conflict). Read a loaded skill's files with skills_read and run its scripts with skills_run_script.";

/// The server's instructions hold the whole `<available_skills>` block
/// only while it is this small; past it they point at the prompt.
const INSTRUCTIONS_CATALOG_LIMIT: usize = 32 * 1024;

/// How many changes a slow listener may fall behind before it is told
/// only that something changed (which is all a list-changed says anyway).
const BACKLOG: usize = 16;

/// One catalog and what is derived from it.
#[derive(Debug)]
pub struct View {
    pub catalog: Arc<ServedCatalog>,
    /// Every declared secret's value, to keep out of results and the log.
    pub redactor: Redactor,
    /// `initialize`'s instructions.
    pub instructions: String,
    /// The `<available_skills>` block.
    pub available: String,
    /// Every served skill's tools, each taking a `session`, as `tools/list`
    /// shows them to clients without a connection; built on first use.
    stateless_tools: OnceLock<Vec<rmcp::model::Tool>>,
}

impl View {
    pub fn new(catalog: Arc<ServedCatalog>, redactor: Redactor) -> Self {
        let available = SkillsPrompt {
            available_skills: catalog
                .skills()
                .iter()
                .map(|skill| AvailableSkill {
                    name: skill.name.clone(),
                    description: skill.frontmatter.description.clone(),
                    location: skill.location.clone(),
                })
                .collect(),
            active_skills: Vec::new(),
        }
        .available_xml();
        let instructions = if available.len() <= INSTRUCTIONS_CATALOG_LIMIT {
            format!("{LOADING_RULE}\n\n{available}")
        } else {
            format!(
                "{LOADING_RULE}\n\nThis server serves {} skills; the available_skills prompt lists them.",
                catalog.skills().len()
            )
        };
        Self {
            catalog,
            redactor,
            instructions,
            available,
            stateless_tools: OnceLock::new(),
        }
    }

    /// The tools a client without a session lists.
    pub fn stateless_tools(&self) -> &[rmcp::model::Tool] {
        self.stateless_tools
            .get_or_init(|| super::wire::stateless_tools(&self.catalog))
    }
}

/// What changed between two catalogs, by skill name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Change {
    pub added: BTreeSet<String>,
    pub removed: BTreeSet<String>,
    /// Served before and after, with other files, or other tools.
    pub changed: BTreeSet<String>,
    /// Whether a served skill's tools changed (added and removed skills'
    /// tools included): what `tools/list_changed` is for.
    pub tools: bool,
}

impl Change {
    /// The difference from `old` to `new`.
    pub fn between(old: &ServedCatalog, new: &ServedCatalog) -> Self {
        let mut change = Self::default();
        for skill in old.skills() {
            match new.get(&skill.name) {
                Err(_) => {
                    change.tools |= !skill.frontmatter.extensions.tools.is_empty();
                    change.removed.insert(skill.name.clone());
                }
                Ok(now) => {
                    if now.tree != skill.tree || now.root != skill.root {
                        change.changed.insert(skill.name.clone());
                        change.tools |= !skill.frontmatter.extensions.tools.is_empty()
                            || !now.frontmatter.extensions.tools.is_empty();
                    }
                }
            }
        }
        for skill in new.skills() {
            if old.get(&skill.name).is_err() {
                change.tools |= !skill.frontmatter.extensions.tools.is_empty();
                change.added.insert(skill.name.clone());
            }
        }
        change
    }

    /// Returns true if and only if a client would see no difference.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }

    /// One line for the operator: `added a, b; removed c`.
    pub fn describe(&self) -> String {
        [
            ("added", &self.added),
            ("changed", &self.changed),
            ("removed", &self.removed),
        ]
        .into_iter()
        .filter(|(_, names)| !names.is_empty())
        .map(|(what, names)| {
            format!(
                "{what} {}",
                names
                    .iter()
                    .map(String::as_str)
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
    }

    /// The skills whose `SKILL.md` URI now reads differently or not at all.
    pub fn touched(&self) -> impl Iterator<Item = &String> {
        self.changed.iter().chain(&self.removed).chain(&self.added)
    }
}

/// The current view, and the changes as they come.
#[derive(Debug)]
pub struct Live {
    current: RwLock<Arc<View>>,
    changes: broadcast::Sender<Arc<Change>>,
}

impl Live {
    pub fn new(view: View) -> Self {
        Self {
            current: RwLock::new(Arc::new(view)),
            changes: broadcast::channel(BACKLOG).0,
        }
    }

    /// The catalog as it is now.
    pub fn view(&self) -> Arc<View> {
        Arc::clone(&self.current.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// Serves `view` from now on, and tells every listener what changed;
    /// returns the change, or `None` when a client would see no difference
    /// (a refusal's reason may still have changed).
    pub fn replace(&self, view: View) -> Option<Arc<Change>> {
        let mut current = self.current.write().unwrap_or_else(PoisonError::into_inner);
        let change = Change::between(&current.catalog, &view.catalog);
        *current = Arc::new(view);
        drop(current);
        if change.is_empty() {
            return None;
        }
        let change = Arc::new(change);
        // No receiver is no error: nobody listens yet.
        let _ = self.changes.send(Arc::clone(&change));
        Some(change)
    }

    /// The changes from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Change>> {
        self.changes.subscribe()
    }
}
