//! Every agent known to read skills from a folder: where it reads them in a
//! project and for the user, and how to tell that it is installed on this
//! machine (docs/agents.md prints the same table, with its sources).
//!
//! `init --agent ID` takes the ids below; `init` alone looks for the agents
//! installed here ([`detect`]) and offers them. Most entries come from the
//! table `vercel-labs/skills` keeps for its own installer ([`VERCEL`]);
//! Claude Code, Codex, GitHub Copilot, Cursor, Gemini CLI, OpenCode,
//! Windsurf and Goose were checked against their own documentation or
//! binaries, which add folders vercel's table leaves out (it has one folder
//! per scope). Agents move their folders between releases: this is a
//! snapshot, and each entry names where its facts come from.
//!
//! Layout of an entry:
//!
//! - `project`: folders relative to the project root, the one the agent
//!   prefers first. Many agents share `.agents/skills`; one skill installed
//!   there is seen by all of them.
//! - `user`: folders outside any project ([`Place`]): under the home
//!   folder, under `$XDG_CONFIG_HOME` (else `~/.config`), or under a folder
//!   an environment variable can move (`$CODEX_HOME`, default `~/.codex`).
//! - `detect`: the agent counts as installed when any of these exists: a
//!   folder it keeps under the home folder (no `PATH` lookups), or a marker
//!   in the project (`.continue`, `.replit`). The home folder is `$HOME`,
//!   so that a test can point it at a temporary folder.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use crate::env_vars;

use self::Place::{Config, Home, Project, Var, VarOrHome};

/// vercel's table: `vercel-labs/skills`, `src/agents.ts`, at commit
/// `007a533297755fc506d18c15e5667b997e4387eb`.
pub const VERCEL: &str = "vercel-labs/skills@007a533 src/agents.ts";
/// The strings of the Claude Code 2.1.197 binary (its user folder is
/// `$CLAUDE_CONFIG_DIR`, else `~/.claude`; it reads no `.agents/skills`).
const CLAUDE_CODE_BINARY: &str = "claude 2.1.197 (binary)";
/// A run of Codex 0.171.0's `skills/list`, with its home in a temporary
/// folder.
const CODEX_RUN: &str = "codex 0.171.0 (skills/list)";
/// The loader of Codex's skills, `skill_roots_from_layer_stack_inner` and
/// `repo_agents_skill_roots`.
const CODEX_SOURCE: &str = "openai/codex@033d1d0 codex-rs/core-skills/src/loader.rs";
/// `copilot skill --help` and a run of `copilot skill list` (1.0.102).
const COPILOT_RUN: &str = "copilot 1.0.102 (skill --help, skill list)";

/// A folder outside the project (or, for detection, a path in it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// `~/PATH`.
    Home(&'static str),
    /// `$XDG_CONFIG_HOME/PATH`, or `~/.config/PATH` when the variable is
    /// unset, on every platform (as vercel's `xdg-basedir` does).
    Config(&'static str),
    /// `$VAR/PATH` when the variable is set, else `~/DEFAULT/PATH` (`PATH`
    /// empty: the folder itself).
    VarOrHome {
        var: &'static str,
        default: &'static str,
        path: &'static str,
    },
    /// `$VAR/PATH`, only when the variable is set.
    Var {
        var: &'static str,
        path: &'static str,
    },
    /// `PATH` in the project: for detection only.
    Project(&'static str),
}

impl Place {
    /// The variable that moves this place, if any.
    fn variable(self) -> Option<&'static str> {
        match self {
            VarOrHome { var, .. } | Var { var, .. } => Some(var),
            Home(_) | Project(_) => None,
            Config(_) => Some(env_vars::XDG_CONFIG_HOME),
        }
    }

    /// Returns the path this place stands for in `environment`, with the
    /// project at `root`, or `None` when it needs a home folder or a
    /// variable that there is not.
    pub fn resolve(self, environment: &Environment, root: &Path) -> Option<PathBuf> {
        let home = |relative: &str| environment.home.as_ref().map(|home| join(home, relative));
        match self {
            Home(path) => home(path),
            Config(path) => match environment.variable(env_vars::XDG_CONFIG_HOME) {
                Some(config) => Some(join(config, path)),
                None => home(".config").map(|config| join(&config, path)),
            },
            VarOrHome { var, default, path } => match environment.variable(var) {
                Some(folder) => Some(join(folder, path)),
                None => home(default).map(|folder| join(&folder, path)),
            },
            Var { var, path } => environment.variable(var).map(|folder| join(folder, path)),
            Project(path) => Some(root.join(path)),
        }
    }
}

/// `base/relative`, or `base` itself for an empty `relative`.
fn join(base: &Path, relative: &str) -> PathBuf {
    if relative.is_empty() {
        base.to_path_buf()
    } else {
        base.join(relative)
    }
}

impl fmt::Display for Place {
    /// As docs/agents.md writes it: `~/.cursor`, `$XDG_CONFIG_HOME/amp`,
    /// `${CODEX_HOME:-~/.codex}/skills`, `./.replit`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let tail = |path: &str| {
            if path.is_empty() {
                String::new()
            } else {
                format!("/{path}")
            }
        };
        match *self {
            Home(path) => write!(f, "~/{path}"),
            Config(path) => write!(f, "$XDG_CONFIG_HOME/{path}"),
            VarOrHome { var, default, path } => write!(f, "${{{var}:-~/{default}}}{}", tail(path)),
            Var { var, path } => write!(f, "${var}{}", tail(path)),
            Project(path) => write!(f, "./{path}"),
        }
    }
}

/// The home folder and the variables the table reads, taken from the
/// process once so that everything else is pure.
#[derive(Clone, Debug, Default)]
pub struct Environment {
    home: Option<PathBuf>,
    variables: BTreeMap<&'static str, PathBuf>,
}

impl Environment {
    /// `home` and the variables given (an empty value counts as unset).
    pub fn new(
        home: Option<PathBuf>,
        variables: impl IntoIterator<Item = (&'static str, PathBuf)>,
    ) -> Self {
        Self {
            home,
            variables: variables
                .into_iter()
                .filter(|(_, value)| !value.as_os_str().is_empty())
                .collect(),
        }
    }

    /// Reads `$HOME` (else the platform's home folder) and every variable
    /// an entry of the table names.
    pub fn from_process() -> Self {
        let home = std::env::var_os(env_vars::HOME)
            .filter(|home| !home.is_empty())
            .map(PathBuf::from)
            .or_else(dirs::home_dir);
        let names: std::collections::BTreeSet<&'static str> = AGENTS
            .iter()
            .flat_map(|agent| agent.user.iter().chain(agent.detect))
            .filter_map(|place| place.variable())
            .collect();
        let variables = names
            .into_iter()
            .filter_map(|name| std::env::var_os(name).map(|value| (name, PathBuf::from(value))));
        Self::new(home, variables)
    }

    fn variable(&self, name: &str) -> Option<&Path> {
        self.variables.get(name).map(PathBuf::as_path)
    }
}

/// An agent that reads skills from folders.
#[derive(Debug)]
pub struct Agent {
    /// What `init --agent` takes: kebab-case, unique (vercel's id, except
    /// `copilot`, skillpkg's name before this table).
    pub id: &'static str,
    /// The agent's own name.
    pub name: &'static str,
    /// Other ids `--agent` accepts for it.
    pub aliases: &'static [&'static str],
    /// The folders it reads skills from in a project, relative to the
    /// project's root, the one it prefers first.
    pub project: &'static [&'static str],
    /// The folders it reads skills from for the user, in every project
    /// (none for an agent that has none).
    pub user: &'static [Place],
    /// It counts as installed when any of these exists.
    pub detect: &'static [Place],
    /// Where the facts come from: [`VERCEL`], a page, or a run of the agent.
    pub sources: &'static [&'static str],
    /// The agent's own page on skills.
    pub docs: Option<&'static str>,
    /// What the columns above cannot say.
    pub note: Option<&'static str>,
}

/// The fields most entries share: no alias, no page, no note, and vercel's
/// table as the source.
const FROM_VERCEL: Agent = Agent {
    id: "",
    name: "",
    aliases: &[],
    project: &[],
    user: &[],
    detect: &[],
    sources: &[VERCEL],
    docs: None,
    note: None,
};

/// Returns the agent whose id or alias is `id`.
pub fn find(id: &str) -> Option<&'static Agent> {
    AGENTS
        .iter()
        .find(|agent| agent.id == id || agent.aliases.contains(&id))
}

/// Returns the agent whose id or alias is `id`, or says that there is none
/// and which ids are close to it.
pub fn parse(id: &str) -> Result<&'static Agent, String> {
    find(id).ok_or_else(|| {
        let known = AGENTS
            .iter()
            .flat_map(|agent| std::iter::once(agent.id).chain(agent.aliases.iter().copied()));
        let close = skillpkg_index::name::closest(id, known);
        let ids = if close.is_empty() {
            String::new()
        } else {
            format!("; close ids: {}", close.join(", "))
        };
        format!(
            "no agent has the id `{id}`{ids} (every id, {} in all, is listed in docs/agents.md)",
            AGENTS.len()
        )
    })
}

/// An agent found installed, and the path that says so.
#[derive(Clone, Debug)]
pub struct Detection {
    /// The agent.
    pub agent: &'static Agent,
    /// The first of its `detect` paths that exists.
    pub found: PathBuf,
}

/// Returns the agents installed in `environment`, in the table's order,
/// each with the first of its `detect` paths that exists (project markers
/// are looked for in `root`).
pub fn detect(environment: &Environment, root: &Path) -> Vec<Detection> {
    AGENTS
        .iter()
        .filter_map(|agent| {
            let found = agent
                .detect
                .iter()
                .filter_map(|place| place.resolve(environment, root))
                // A path that cannot be read counts as absent: detection
                // only offers agents, it decides nothing.
                .find(|path| fs_err::metadata(path).is_ok())?;
            Some(Detection { agent, found })
        })
        .collect()
}

/// Every agent, sorted by id.
pub static AGENTS: &[Agent] = &[
    Agent {
        id: "adal",
        name: "AdaL",
        project: &[".adal/skills"],
        user: &[Home(".adal/skills")],
        detect: &[Home(".adal")],
        ..FROM_VERCEL
    },
    Agent {
        id: "aider-desk",
        name: "AiderDesk",
        project: &[".aider-desk/skills"],
        user: &[Home(".aider-desk/skills")],
        detect: &[Home(".aider-desk")],
        ..FROM_VERCEL
    },
    Agent {
        id: "amp",
        name: "Amp",
        project: &[".agents/skills"],
        user: &[Config("agents/skills")],
        detect: &[Config("amp")],
        docs: Some("https://ampcode.com/manual#agent-skills"),
        ..FROM_VERCEL
    },
    Agent {
        id: "antigravity",
        name: "Antigravity",
        project: &[".agents/skills"],
        user: &[Home(".gemini/antigravity/skills")],
        detect: &[Home(".gemini/antigravity")],
        docs: Some("https://antigravity.google/docs/skills"),
        ..FROM_VERCEL
    },
    Agent {
        id: "antigravity-cli",
        name: "Antigravity CLI",
        project: &[".agents/skills"],
        user: &[Home(".gemini/antigravity-cli/skills")],
        detect: &[Home(".gemini/antigravity-cli")],
        ..FROM_VERCEL
    },
    Agent {
        id: "astrbot",
        name: "AstrBot",
        project: &["data/skills"],
        user: &[Home(".astrbot/data/skills")],
        detect: &[Home(".astrbot")],
        note: Some(
            "The project folder is the generic `data/skills`; vercel also counts `./data/skills` as a sign of AstrBot, skillpkg does not.",
        ),
        ..FROM_VERCEL
    },
    Agent {
        id: "augment",
        name: "Augment",
        project: &[".augment/skills"],
        user: &[Home(".augment/skills")],
        detect: &[Home(".augment")],
        ..FROM_VERCEL
    },
    Agent {
        id: "autohand-code",
        name: "Autohand Code CLI",
        project: &[".autohand/skills"],
        user: &[VarOrHome {
            var: env_vars::AUTOHAND_HOME,
            default: ".autohand",
            path: "skills",
        }],
        detect: &[VarOrHome {
            var: env_vars::AUTOHAND_HOME,
            default: ".autohand",
            path: "",
        }],
        ..FROM_VERCEL
    },
    Agent {
        id: "bob",
        name: "IBM Bob",
        project: &[".bob/skills"],
        user: &[Home(".bob/skills")],
        detect: &[Home(".bob")],
        ..FROM_VERCEL
    },
    Agent {
        id: "claude-code",
        name: "Claude Code",
        aliases: &["claude"],
        project: &[".claude/skills"],
        user: &[VarOrHome {
            var: env_vars::CLAUDE_CONFIG_DIR,
            default: ".claude",
            path: "skills",
        }],
        detect: &[VarOrHome {
            var: env_vars::CLAUDE_CONFIG_DIR,
            default: ".claude",
            path: "",
        }],
        sources: &[CLAUDE_CODE_BINARY, VERCEL],
        docs: Some("https://code.claude.com/docs/en/skills"),
        ..FROM_VERCEL
    },
    Agent {
        id: "cline",
        name: "Cline",
        project: &[".agents/skills"],
        user: &[Home(".agents/skills")],
        detect: &[Home(".cline")],
        docs: Some("https://docs.cline.bot/features/skills"),
        ..FROM_VERCEL
    },
    Agent {
        id: "codearts-agent",
        name: "CodeArts Agent",
        project: &[".codeartsdoer/skills"],
        user: &[Home(".codeartsdoer/skills")],
        detect: &[Home(".codeartsdoer")],
        ..FROM_VERCEL
    },
    Agent {
        id: "codebuddy",
        name: "CodeBuddy",
        project: &[".codebuddy/skills"],
        user: &[Home(".codebuddy/skills")],
        detect: &[Project(".codebuddy"), Home(".codebuddy")],
        docs: Some("https://www.codebuddy.ai/docs/ide/Features/Skills"),
        ..FROM_VERCEL
    },
    Agent {
        id: "codemaker",
        name: "Codemaker",
        project: &[".codemaker/skills"],
        user: &[Home(".codemaker/skills")],
        detect: &[Home(".codemaker")],
        ..FROM_VERCEL
    },
    Agent {
        id: "codestudio",
        name: "Code Studio",
        project: &[".codestudio/skills"],
        user: &[Home(".codestudio/skills")],
        detect: &[Home(".codestudio")],
        ..FROM_VERCEL
    },
    Agent {
        id: "codewhale",
        name: "CodeWhale",
        project: &[".codewhale/skills"],
        user: &[VarOrHome {
            var: env_vars::CODEWHALE_HOME,
            default: ".codewhale",
            path: "skills",
        }],
        detect: &[VarOrHome {
            var: env_vars::CODEWHALE_HOME,
            default: ".codewhale",
            path: "",
        }],
        ..FROM_VERCEL
    },
    Agent {
        id: "codex",
        name: "Codex",
        project: &[".agents/skills", ".codex/skills"],
        user: &[
            Home(".agents/skills"),
            VarOrHome {
                var: env_vars::CODEX_HOME,
                default: ".codex",
                path: "skills",
            },
        ],
        detect: &[VarOrHome {
            var: env_vars::CODEX_HOME,
            default: ".codex",
            path: "",
        }],
        sources: &[CODEX_RUN, CODEX_SOURCE, VERCEL],
        docs: Some("https://developers.openai.com/codex/skills"),
        note: Some(
            "`$CODEX_HOME/skills` is deprecated (Codex reads it for backward compatibility). Codex also reads its own `$CODEX_HOME/skills/.system` and `/etc/codex/skills`; vercel also counts `/etc/codex` as a sign of Codex, skillpkg looks only in the home folder and the project.",
        ),
        ..FROM_VERCEL
    },
    Agent {
        id: "command-code",
        name: "Command Code",
        project: &[".commandcode/skills"],
        user: &[Home(".commandcode/skills")],
        detect: &[Home(".commandcode")],
        docs: Some("https://commandcode.ai/docs/skills"),
        ..FROM_VERCEL
    },
    Agent {
        id: "continue",
        name: "Continue",
        project: &[".continue/skills"],
        user: &[Home(".continue/skills")],
        detect: &[Project(".continue"), Home(".continue")],
        ..FROM_VERCEL
    },
    Agent {
        id: "copilot",
        name: "GitHub Copilot",
        aliases: &["github-copilot"],
        project: &[".github/skills", ".agents/skills", ".claude/skills"],
        user: &[
            VarOrHome {
                var: env_vars::COPILOT_HOME,
                default: ".copilot",
                path: "skills",
            },
            Home(".agents/skills"),
        ],
        detect: &[VarOrHome {
            var: env_vars::COPILOT_HOME,
            default: ".copilot",
            path: "",
        }],
        sources: &[
            COPILOT_RUN,
            "https://docs.github.com/en/copilot/how-tos/copilot-cli/customize-copilot/create-skills",
            VERCEL,
        ],
        docs: Some("https://docs.github.com/en/copilot/concepts/agents/about-agent-skills"),
        note: Some(
            "The documentation also lists `~/.claude/skills`; 1.0.102 did not read it. `COPILOT_SKILLS_DIRS` adds folders.",
        ),
    },
    Agent {
        id: "cortex",
        name: "Cortex Code",
        project: &[".cortex/skills"],
        user: &[Home(".snowflake/cortex/skills")],
        detect: &[Home(".snowflake/cortex")],
        ..FROM_VERCEL
    },
    Agent {
        id: "crush",
        name: "Crush",
        project: &[".crush/skills"],
        user: &[Home(".config/crush/skills")],
        detect: &[Home(".config/crush")],
        docs: Some("https://github.com/charmbracelet/crush?tab=readme-ov-file#agent-skills"),
        ..FROM_VERCEL
    },
    Agent {
        id: "cursor",
        name: "Cursor",
        project: &[
            ".agents/skills",
            ".cursor/skills",
            ".claude/skills",
            ".codex/skills",
        ],
        user: &[
            Home(".agents/skills"),
            Home(".cursor/skills"),
            Home(".claude/skills"),
            Home(".codex/skills"),
        ],
        detect: &[Home(".cursor")],
        sources: &["https://cursor.com/docs/skills", VERCEL],
        docs: Some("https://cursor.com/docs/skills"),
        ..FROM_VERCEL
    },
    Agent {
        id: "deepagents",
        name: "Deep Agents",
        project: &[".agents/skills"],
        user: &[Home(".deepagents/agent/skills")],
        detect: &[Home(".deepagents")],
        ..FROM_VERCEL
    },
    Agent {
        id: "devin",
        name: "Devin for Terminal",
        project: &[".devin/skills"],
        user: &[Config("devin/skills")],
        detect: &[Config("devin")],
        ..FROM_VERCEL
    },
    Agent {
        id: "dexto",
        name: "Dexto",
        project: &[".agents/skills"],
        user: &[Home(".agents/skills")],
        detect: &[Home(".dexto")],
        ..FROM_VERCEL
    },
    Agent {
        id: "droid",
        name: "Droid",
        project: &[".agents/skills"],
        user: &[Home(".factory/skills"), Home(".agents/skills")],
        detect: &[Home(".factory")],
        docs: Some("https://docs.factory.ai/cli/configuration/skills"),
        ..FROM_VERCEL
    },
    Agent {
        id: "eve",
        name: "Eve",
        project: &["agent/skills"],
        user: &[],
        detect: &[],
        note: Some(
            "Not detected: vercel looks for `./agent` and an `eve` dependency in `./package.json`. Subagents read `agent/subagents/<name>/skills`.",
        ),
        ..FROM_VERCEL
    },
    Agent {
        id: "firebender",
        name: "Firebender",
        project: &[".agents/skills"],
        user: &[Home(".firebender/skills")],
        detect: &[Home(".firebender")],
        docs: Some("https://docs.firebender.com/multi-agent/skills"),
        ..FROM_VERCEL
    },
    Agent {
        id: "forgecode",
        name: "ForgeCode",
        project: &[".forge/skills"],
        user: &[Home(".forge/skills")],
        detect: &[Home(".forge")],
        ..FROM_VERCEL
    },
    Agent {
        id: "fx",
        name: "fx",
        project: &[".fx/skills"],
        user: &[Home(".fx/skills")],
        detect: &[Home(".fx")],
        ..FROM_VERCEL
    },
    Agent {
        id: "gemini-cli",
        name: "Gemini CLI",
        project: &[".gemini/skills", ".agents/skills"],
        user: &[Home(".gemini/skills"), Home(".agents/skills")],
        detect: &[Home(".gemini")],
        sources: &["https://geminicli.com/docs/cli/using-agent-skills/", VERCEL],
        docs: Some("https://geminicli.com/docs/cli/skills/"),
        ..FROM_VERCEL
    },
    Agent {
        id: "goose",
        name: "Goose",
        project: &[".goose/skills", ".agents/skills", ".claude/skills"],
        user: &[
            Config("goose/skills"),
            Config("agents/skills"),
            Home(".claude/skills"),
        ],
        detect: &[Config("goose")],
        sources: &[
            "https://block.github.io/goose/docs/guides/context-engineering/using-skills",
            "https://block.github.io/goose/docs/mcp/skills-mcp",
            VERCEL,
        ],
        docs: Some("https://block.github.io/goose/docs/guides/context-engineering/using-skills"),
        ..FROM_VERCEL
    },
    Agent {
        id: "grok",
        name: "Grok Build",
        project: &[".grok/skills"],
        user: &[VarOrHome {
            var: env_vars::GROK_HOME,
            default: ".grok",
            path: "skills",
        }],
        detect: &[VarOrHome {
            var: env_vars::GROK_HOME,
            default: ".grok",
            path: "",
        }],
        ..FROM_VERCEL
    },
    Agent {
        id: "hermes-agent",
        name: "Hermes Agent",
        project: &[".hermes/skills"],
        user: &[VarOrHome {
            var: env_vars::HERMES_HOME,
            default: ".hermes",
            path: "skills",
        }],
        detect: &[VarOrHome {
            var: env_vars::HERMES_HOME,
            default: ".hermes",
            path: "",
        }],
        ..FROM_VERCEL
    },
    Agent {
        id: "iflow-cli",
        name: "iFlow CLI",
        project: &[".iflow/skills"],
        user: &[Home(".iflow/skills")],
        detect: &[Home(".iflow")],
        docs: Some("https://platform.iflow.cn/en/cli/examples/skill"),
        ..FROM_VERCEL
    },
    Agent {
        id: "inference-sh",
        name: "inference.sh",
        project: &[".inferencesh/skills"],
        user: &[Home(".inferencesh/skills")],
        detect: &[Home(".inferencesh")],
        ..FROM_VERCEL
    },
    Agent {
        id: "jazz",
        name: "Jazz",
        project: &[".jazz/skills"],
        user: &[Home(".jazz/skills")],
        detect: &[Home(".jazz"), Project(".jazz")],
        ..FROM_VERCEL
    },
    Agent {
        id: "junie",
        name: "Junie",
        project: &[".junie/skills"],
        user: &[Home(".junie/skills")],
        detect: &[Home(".junie")],
        ..FROM_VERCEL
    },
    Agent {
        id: "kilo",
        name: "Kilo Code",
        project: &[".agents/skills"],
        user: &[Home(".kilo/skills")],
        detect: &[Home(".kilo"), Home(".kilocode")],
        ..FROM_VERCEL
    },
    Agent {
        id: "kimchi",
        name: "Kimchi",
        project: &[".kimchi/skills"],
        user: &[Home(".config/kimchi/harness/skills")],
        detect: &[Home(".config/kimchi")],
        ..FROM_VERCEL
    },
    Agent {
        id: "kimi-code-cli",
        name: "Kimi Code CLI",
        project: &[".agents/skills"],
        user: &[Home(".agents/skills")],
        detect: &[Home(".kimi-code"), Home(".kimi")],
        docs: Some("https://moonshotai.github.io/kimi-code/en/customization/skills"),
        ..FROM_VERCEL
    },
    Agent {
        id: "kiro-cli",
        name: "Kiro CLI",
        project: &[".kiro/skills"],
        user: &[Home(".kiro/skills")],
        detect: &[Home(".kiro")],
        docs: Some(
            "https://kiro.dev/docs/cli/custom-agents/configuration-reference/#skill-resources",
        ),
        note: Some("A custom Kiro agent needs `resources: skill://.kiro/skills/**/SKILL.md`."),
        ..FROM_VERCEL
    },
    Agent {
        id: "kode",
        name: "Kode",
        project: &[".kode/skills"],
        user: &[Home(".kode/skills")],
        detect: &[Home(".kode")],
        docs: Some("https://github.com/shareAI-lab/kode/blob/main/docs/skills.md"),
        ..FROM_VERCEL
    },
    Agent {
        id: "lingma",
        name: "Lingma",
        project: &[".lingma/skills"],
        user: &[Home(".lingma/skills")],
        detect: &[Home(".lingma")],
        ..FROM_VERCEL
    },
    Agent {
        id: "loaf",
        name: "Loaf",
        project: &[".agents/skills"],
        user: &[Home(".agents/skills")],
        detect: &[Home(".loaf")],
        ..FROM_VERCEL
    },
    Agent {
        id: "mcpjam",
        name: "MCPJam",
        project: &[".mcpjam/skills"],
        user: &[Home(".mcpjam/skills")],
        detect: &[Home(".mcpjam")],
        ..FROM_VERCEL
    },
    Agent {
        id: "minimax-code",
        name: "MiniMax Code",
        project: &[".minimax/skills"],
        user: &[Home(".minimax/skills")],
        detect: &[Home(".minimax")],
        note: Some(
            "vercel also checks `/Applications/MiniMax Code.app`; skillpkg looks only in the home folder and the project.",
        ),
        ..FROM_VERCEL
    },
    Agent {
        id: "mistral-vibe",
        name: "Mistral Vibe",
        project: &[".vibe/skills"],
        user: &[VarOrHome {
            var: env_vars::VIBE_HOME,
            default: ".vibe",
            path: "skills",
        }],
        detect: &[VarOrHome {
            var: env_vars::VIBE_HOME,
            default: ".vibe",
            path: "",
        }],
        ..FROM_VERCEL
    },
    Agent {
        id: "moxby",
        name: "Moxby",
        project: &[".moxby/skills"],
        user: &[Home(".moxby/skills")],
        detect: &[Home(".moxby")],
        ..FROM_VERCEL
    },
    Agent {
        id: "mux",
        name: "Mux",
        project: &[".mux/skills"],
        user: &[Home(".mux/skills")],
        detect: &[Home(".mux")],
        ..FROM_VERCEL
    },
    Agent {
        id: "neovate",
        name: "Neovate",
        project: &[".neovate/skills"],
        user: &[Home(".neovate/skills")],
        detect: &[Home(".neovate")],
        ..FROM_VERCEL
    },
    Agent {
        id: "ona",
        name: "Ona",
        project: &[".ona/skills"],
        user: &[Home(".ona/skills")],
        detect: &[Home(".ona")],
        ..FROM_VERCEL
    },
    Agent {
        id: "openclaw",
        name: "OpenClaw",
        project: &["skills"],
        user: &[
            Home(".openclaw/skills"),
            Home(".clawdbot/skills"),
            Home(".moltbot/skills"),
        ],
        detect: &[Home(".openclaw"), Home(".clawdbot"), Home(".moltbot")],
        docs: Some("https://docs.openclaw.ai/tools/skills"),
        note: Some(
            "The project folder is a bare `skills/` (written `./skills` in skills.toml). The user folder is the first of the three whose parent exists, else `~/.openclaw/skills`.",
        ),
        ..FROM_VERCEL
    },
    Agent {
        id: "opencode",
        name: "OpenCode",
        project: &[".opencode/skills", ".claude/skills", ".agents/skills"],
        user: &[
            Config("opencode/skills"),
            Home(".claude/skills"),
            Home(".agents/skills"),
        ],
        detect: &[Config("opencode")],
        sources: &["https://opencode.ai/docs/skills", VERCEL],
        docs: Some("https://opencode.ai/docs/skills"),
        ..FROM_VERCEL
    },
    Agent {
        id: "openhands",
        name: "OpenHands",
        project: &[".openhands/skills"],
        user: &[Home(".openhands/skills")],
        detect: &[Home(".openhands")],
        docs: Some("https://docs.openhands.ai/modules/usage/how-to/using-skills"),
        ..FROM_VERCEL
    },
    Agent {
        id: "pi",
        name: "Pi",
        project: &[".pi/skills"],
        user: &[Home(".pi/agent/skills")],
        detect: &[Home(".pi/agent")],
        docs: Some(
            "https://github.com/badlogic/pi-mono/blob/main/packages/coding-agent/docs/skills.md",
        ),
        ..FROM_VERCEL
    },
    Agent {
        id: "pochi",
        name: "Pochi",
        project: &[".pochi/skills"],
        user: &[Home(".pochi/skills")],
        detect: &[Home(".pochi")],
        ..FROM_VERCEL
    },
    Agent {
        id: "posit-assistant",
        name: "Posit Assistant",
        project: &[".posit/assistant/skills"],
        user: &[Home(".posit/assistant/skills")],
        detect: &[Home(".posit/assistant"), Home(".positai")],
        docs: Some("https://assistant.posit.co/docs/features/skills/"),
        ..FROM_VERCEL
    },
    Agent {
        id: "promptscript",
        name: "PromptScript",
        project: &[".agents/skills"],
        user: &[],
        detect: &[Project(".promptscript"), Project("promptscript.yaml")],
        note: Some("Project folder only."),
        ..FROM_VERCEL
    },
    Agent {
        id: "qoder",
        name: "Qoder",
        project: &[".qoder/skills"],
        user: &[Home(".qoder/skills")],
        detect: &[Home(".qoder")],
        docs: Some("https://docs.qoder.com/cli/Skills"),
        ..FROM_VERCEL
    },
    Agent {
        id: "qoder-cn",
        name: "Qoder CN",
        project: &[".qoder/skills"],
        user: &[Home(".qoder-cn/skills")],
        detect: &[Home(".qoder-cn")],
        ..FROM_VERCEL
    },
    Agent {
        id: "qwen-code",
        name: "Qwen Code",
        project: &[".qwen/skills"],
        user: &[Home(".qwen/skills")],
        detect: &[Home(".qwen")],
        docs: Some("https://qwenlm.github.io/qwen-code-docs/en/users/features/skills/"),
        ..FROM_VERCEL
    },
    Agent {
        id: "reasonix",
        name: "Reasonix",
        project: &[".reasonix/skills"],
        user: &[Home(".reasonix/skills")],
        detect: &[Home(".reasonix")],
        ..FROM_VERCEL
    },
    Agent {
        id: "replit",
        name: "Replit",
        project: &[".agents/skills"],
        user: &[Config("agents/skills")],
        detect: &[Project(".replit")],
        docs: Some("https://docs.replit.com/replitai/skills"),
        note: Some("Detected only in a project with `.replit`."),
        ..FROM_VERCEL
    },
    Agent {
        id: "roo",
        name: "Roo Code",
        project: &[".roo/skills"],
        user: &[Home(".roo/skills")],
        detect: &[Home(".roo")],
        docs: Some("https://docs.roocode.com/features/skills"),
        ..FROM_VERCEL
    },
    Agent {
        id: "rovodev",
        name: "Rovo Dev",
        project: &[".rovodev/skills"],
        user: &[Home(".rovodev/skills")],
        detect: &[Home(".rovodev")],
        ..FROM_VERCEL
    },
    Agent {
        id: "sarvam-code",
        name: "Sarvam Code",
        project: &[".agents/skills"],
        user: &[Home(".agents/skills")],
        detect: &[VarOrHome {
            var: env_vars::SARVAM_HOME,
            default: ".sarvam",
            path: "",
        }],
        ..FROM_VERCEL
    },
    Agent {
        id: "tabnine-cli",
        name: "Tabnine CLI",
        project: &[".tabnine/agent/skills"],
        user: &[Home(".tabnine/agent/skills")],
        detect: &[Home(".tabnine")],
        ..FROM_VERCEL
    },
    Agent {
        id: "terramind",
        name: "Terramind",
        project: &[".terramind/skills"],
        user: &[Home(".terramind/skills")],
        detect: &[Home(".terramind")],
        ..FROM_VERCEL
    },
    Agent {
        id: "tinycloud",
        name: "Tinycloud",
        project: &[".tinycloud/skills"],
        user: &[Home(".tinycloud/skills")],
        detect: &[Home(".tinycloud")],
        ..FROM_VERCEL
    },
    Agent {
        id: "trae",
        name: "Trae",
        project: &[".trae/skills"],
        user: &[Home(".trae/skills")],
        detect: &[Home(".trae")],
        docs: Some("https://docs.trae.ai/ide/skills"),
        ..FROM_VERCEL
    },
    Agent {
        id: "trae-cn",
        name: "Trae CN",
        project: &[".trae/skills"],
        user: &[Home(".trae-cn/skills")],
        detect: &[Home(".trae-cn")],
        ..FROM_VERCEL
    },
    Agent {
        id: "warp",
        name: "Warp",
        project: &[".agents/skills"],
        user: &[Home(".agents/skills")],
        detect: &[Home(".warp")],
        ..FROM_VERCEL
    },
    Agent {
        id: "windsurf",
        name: "Windsurf",
        project: &[".windsurf/skills"],
        user: &[Home(".codeium/windsurf/skills")],
        detect: &[Home(".codeium/windsurf")],
        sources: &[
            "https://docs.windsurf.com/windsurf/cascade/skills.md",
            VERCEL,
        ],
        docs: Some("https://docs.windsurf.com/windsurf/cascade/skills"),
        ..FROM_VERCEL
    },
    Agent {
        id: "zcode",
        name: "ZCode",
        project: &[".zcode/skills"],
        user: &[Home(".zcode/skills")],
        detect: &[Home(".zcode")],
        note: Some(
            "vercel also checks `/Applications/ZCode.app`; skillpkg looks only in the home folder and the project.",
        ),
        ..FROM_VERCEL
    },
    Agent {
        id: "zed",
        name: "Zed",
        project: &[".agents/skills"],
        user: &[Home(".agents/skills")],
        detect: &[
            Config("zed"),
            Var {
                var: env_vars::APPDATA,
                path: "Zed",
            },
            Var {
                var: env_vars::FLATPAK_XDG_CONFIG_HOME,
                path: "zed",
            },
        ],
        ..FROM_VERCEL
    },
    Agent {
        id: "zencoder",
        name: "Zencoder",
        project: &[".zencoder/skills"],
        user: &[Home(".zencoder/skills")],
        detect: &[Home(".zencoder")],
        ..FROM_VERCEL
    },
    Agent {
        id: "zenflow",
        name: "Zenflow",
        project: &[".zencoder/skills"],
        user: &[Home(".zencoder/skills")],
        detect: &[Home(".zencoder")],
        note: Some("Same folders and same detection as Zencoder."),
        ..FROM_VERCEL
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    /// The relative paths `place` is made of.
    fn relative_paths(place: Place) -> Vec<&'static str> {
        match place {
            Home(path) | Config(path) | Var { path, .. } | Project(path) => vec![path],
            VarOrHome { default, path, .. } => vec![default, path],
        }
    }

    /// Returns true if and only if `path` is relative, plain (`/`-separated
    /// names, no `.` or `..`) and not empty.
    fn plain_relative(path: &str) -> bool {
        !path.is_empty()
            && path
                .split('/')
                .all(|part| !part.is_empty() && part != "." && part != ".." && !part.contains('\\'))
    }

    #[test]
    fn the_table_has_at_least_40_agents_each_with_plain_folders_and_a_source() {
        assert!(AGENTS.len() >= 40, "{} agents", AGENTS.len());
        let mut ids = std::collections::BTreeSet::new();
        for agent in AGENTS {
            for id in std::iter::once(agent.id).chain(agent.aliases.iter().copied()) {
                assert!(
                    id.split('-').all(|word| !word.is_empty()
                        && word
                            .bytes()
                            .all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit())),
                    "`{id}` is not kebab-case"
                );
                assert!(ids.insert(id), "`{id}` is there twice");
            }
            assert!(!agent.name.is_empty(), "{}", agent.id);
            assert!(!agent.sources.is_empty(), "{} has no source", agent.id);
            assert!(
                !agent.project.is_empty(),
                "{} has no project folder",
                agent.id
            );
            for folder in agent.project {
                assert!(plain_relative(folder), "{}: `{folder}`", agent.id);
            }
            for place in agent.user.iter().chain(agent.detect) {
                for (index, path) in relative_paths(*place).into_iter().enumerate() {
                    // A variable's folder itself is `path: ""`.
                    let empty_tail = index == 1 && path.is_empty();
                    assert!(
                        empty_tail || plain_relative(path),
                        "{}: `{place}`",
                        agent.id
                    );
                }
            }
            assert!(
                agent.user.iter().all(|place| !matches!(place, Project(_))),
                "{}: a user folder in the project",
                agent.id
            );
        }
        let sorted: Vec<&str> = AGENTS.iter().map(|agent| agent.id).collect();
        let mut expected = sorted.clone();
        expected.sort_unstable();
        assert_eq!(sorted, expected, "the table is sorted by id");
    }

    #[test]
    fn claude_code_codex_and_copilot_read_the_folders_their_binaries_read() {
        let folders = |id: &str| {
            let agent = find(id).unwrap();
            let user: Vec<String> = agent.user.iter().map(ToString::to_string).collect();
            let detect: Vec<String> = agent.detect.iter().map(ToString::to_string).collect();
            (agent.project.to_vec(), user, detect)
        };
        assert_eq!(
            folders("claude-code"),
            (
                vec![".claude/skills"],
                vec!["${CLAUDE_CONFIG_DIR:-~/.claude}/skills".to_owned()],
                vec!["${CLAUDE_CONFIG_DIR:-~/.claude}".to_owned()],
            )
        );
        assert_eq!(
            folders("codex"),
            (
                vec![".agents/skills", ".codex/skills"],
                vec![
                    "~/.agents/skills".to_owned(),
                    "${CODEX_HOME:-~/.codex}/skills".to_owned()
                ],
                vec!["${CODEX_HOME:-~/.codex}".to_owned()],
            )
        );
        assert_eq!(
            folders("copilot"),
            (
                vec![".github/skills", ".agents/skills", ".claude/skills"],
                vec![
                    "${COPILOT_HOME:-~/.copilot}/skills".to_owned(),
                    "~/.agents/skills".to_owned()
                ],
                vec!["${COPILOT_HOME:-~/.copilot}".to_owned()],
            )
        );
        // The names `init --agent` took before the table.
        assert_eq!(find("claude").unwrap().id, "claude-code");
        assert_eq!(find("github-copilot").unwrap().id, "copilot");
    }

    #[test]
    fn places_follow_their_variables_and_fall_back_to_the_home_folder() {
        let root = Path::new("/work/repo");
        let bare = Environment::new(Some(PathBuf::from("/home/me")), []);
        let moved = Environment::new(
            Some(PathBuf::from("/home/me")),
            [
                (env_vars::CODEX_HOME, PathBuf::from("/opt/codex")),
                (env_vars::XDG_CONFIG_HOME, PathBuf::from("/cfg")),
                (env_vars::CLAUDE_CONFIG_DIR, PathBuf::new()),
            ],
        );
        let codex = VarOrHome {
            var: env_vars::CODEX_HOME,
            default: ".codex",
            path: "skills",
        };
        assert_eq!(
            codex.resolve(&bare, root),
            Some(PathBuf::from("/home/me/.codex/skills"))
        );
        assert_eq!(
            codex.resolve(&moved, root),
            Some(PathBuf::from("/opt/codex/skills"))
        );
        let claude = find("claude-code").unwrap().detect[0];
        assert_eq!(
            claude.resolve(&moved, root),
            Some(PathBuf::from("/home/me/.claude")),
            "an empty variable counts as unset"
        );
        assert_eq!(
            Config("goose/skills").resolve(&bare, root),
            Some(PathBuf::from("/home/me/.config/goose/skills"))
        );
        assert_eq!(
            Config("goose/skills").resolve(&moved, root),
            Some(PathBuf::from("/cfg/goose/skills"))
        );
        let appdata = Var {
            var: env_vars::APPDATA,
            path: "Zed",
        };
        assert_eq!(appdata.resolve(&bare, root), None);
        assert_eq!(
            Project(".replit").resolve(&bare, root),
            Some(PathBuf::from("/work/repo/.replit"))
        );
        assert_eq!(Home(".cursor").resolve(&Environment::default(), root), None);
    }

    #[test]
    fn detect_names_each_installed_agent_and_the_folder_that_shows_it() {
        let home = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        for folder in [".cursor", ".gemini", ".config/opencode"] {
            fs_err::create_dir_all(home.path().join(folder)).unwrap();
        }
        fs_err::write(project.path().join(".replit"), "").unwrap();
        let environment = Environment::new(Some(home.path().to_path_buf()), []);
        let found: Vec<(&str, PathBuf)> = detect(&environment, project.path())
            .into_iter()
            .map(|detection| (detection.agent.id, detection.found))
            .collect();
        assert_eq!(
            found,
            [
                ("cursor", home.path().join(".cursor")),
                ("gemini-cli", home.path().join(".gemini")),
                ("opencode", home.path().join(".config/opencode")),
                ("replit", project.path().join(".replit")),
            ]
        );
        let elsewhere = Environment::new(
            Some(home.path().to_path_buf()),
            [(env_vars::XDG_CONFIG_HOME, project.path().to_path_buf())],
        );
        assert!(
            detect(&elsewhere, home.path())
                .iter()
                .all(|detection| detection.agent.id != "opencode"),
            "$XDG_CONFIG_HOME replaces ~/.config"
        );
    }

    #[test]
    fn an_unknown_id_is_refused_with_the_ids_close_to_it() {
        let message = parse("curser").unwrap_err();
        assert!(
            message.contains("no agent has the id `curser`"),
            "{message}"
        );
        assert!(message.contains("close ids: cursor"), "{message}");
        assert!(parse("gemini").unwrap_err().contains("gemini-cli"));
        assert!(!parse("zzzzzz").unwrap_err().contains("close ids"));
        assert_eq!(parse("windsurf").unwrap().name, "Windsurf");
    }

    /// The table as docs/agents.md shows it.
    fn markdown() -> String {
        let code = |items: &mut dyn Iterator<Item = String>| {
            let items: Vec<String> = items.map(|item| format!("`{item}`")).collect();
            if items.is_empty() {
                "—".to_owned()
            } else {
                items.join(", ")
            }
        };
        let mut text = String::from(
            "| id | agent | project folders | user folders | installed if any exists | sources |\n|---|---|---|---|---|---|\n",
        );
        for agent in AGENTS {
            let mut id = format!("`{}`", agent.id);
            for alias in agent.aliases {
                id.push_str(&format!(" (`{alias}`)"));
            }
            let name = match agent.docs {
                Some(url) => format!("[{}]({url})", agent.name),
                None => agent.name.to_owned(),
            };
            let sources: Vec<String> = agent
                .sources
                .iter()
                .map(|source| match *source {
                    VERCEL => "vercel".to_owned(),
                    url if url.starts_with("https://") => format!("[docs]({url})"),
                    other => other.to_owned(),
                })
                .collect();
            text.push_str(&format!(
                "| {id} | {name} | {} | {} | {} | {} |\n",
                code(&mut agent.project.iter().map(ToString::to_string)),
                code(&mut agent.user.iter().map(ToString::to_string)),
                code(&mut agent.detect.iter().map(ToString::to_string)),
                sources.join("; "),
            ));
        }
        text.push('\n');
        for agent in AGENTS {
            if let Some(note) = agent.note {
                text.push_str(&format!("- `{}`: {note}\n", agent.id));
            }
        }
        text
    }

    #[test]
    fn docs_agents_md_shows_this_table() {
        let docs = include_str!("../../../docs/agents.md");
        let table = markdown();
        assert!(
            docs.contains(&table),
            "docs/agents.md does not show the table of cli/src/project/agents.rs; put this in it:\n\n{table}"
        );
    }
}
