//! Registering `skillpkg mcp` with an agent: `skillpkg mcp install` and
//! `uninstall` (docs/runtime.md, "Setting it up in an agent").
//!
//! Each agent keeps its MCP servers in a file of its own, in a project
//! folder or the user's home:
//!
//! ```text
//! agent        project                   --global
//! claude-code  .mcp.json                 $CLAUDE_CONFIG_DIR/.claude.json or ~/.claude.json   mcpServers
//! codex        .codex/config.toml        $CODEX_HOME/config.toml or ~/.codex/config.toml     [mcp_servers.NAME]
//! copilot      .github/mcp.json          $COPILOT_HOME/mcp-config.json or ~/.copilot/...     mcpServers
//! vscode       .vscode/mcp.json          <user config dir>/Code/User/mcp.json                servers
//! cursor       .cursor/mcp.json          ~/.cursor/mcp.json                                  mcpServers
//! ```
//!
//! The work follows "decide, then do": [`plan`] reads the file and computes
//! its new bytes as plain data, [`Plan::apply`] writes them atomically (or
//! nothing, when they are the same). Everything in the file that is not
//! the one entry named is kept: other servers, unknown keys, key order,
//! and in TOML comments and layout too ([`toml`], [`json`]).

mod json;
mod toml;

use std::path::{Path, PathBuf};

use serde_json::json;

use crate::env_vars;

/// The largest configuration file read: Claude Code's `~/.claude.json`
/// grows with every project it has seen, to a few MB; a file past this is
/// not an MCP configuration anyone wrote by hand.
pub const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// The default name of the entry.
pub const DEFAULT_NAME: &str = "skillpkg";

/// An agent whose MCP configuration skillpkg can edit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Agent {
    ClaudeCode,
    Codex,
    Copilot,
    Vscode,
    Cursor,
}

impl Agent {
    /// The name on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ClaudeCode => "claude-code",
            Self::Codex => "codex",
            Self::Copilot => "copilot",
            Self::Vscode => "vscode",
            Self::Cursor => "cursor",
        }
    }

    /// The `--host` the server is started with: whose skill folders it
    /// serves. VS Code's agent is GitHub Copilot; Cursor reads Claude
    /// Code's folders, the server's default.
    fn host(self) -> Option<&'static str> {
        match self {
            Self::ClaudeCode | Self::Cursor => None,
            Self::Codex => Some("codex"),
            Self::Copilot | Self::Vscode => Some("copilot"),
        }
    }

    /// Whether the agent expands `${workspaceFolder}` in an entry's
    /// arguments (VS Code and Cursor do), so that the server is told its
    /// project whatever folder the agent starts it in.
    fn expands_workspace_folder(self) -> bool {
        matches!(self, Self::Vscode | Self::Cursor)
    }
}

impl std::str::FromStr for Agent {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Ok(match text {
            "claude-code" | "claude" => Self::ClaudeCode,
            "codex" => Self::Codex,
            "copilot" => Self::Copilot,
            "vscode" => Self::Vscode,
            "cursor" => Self::Cursor,
            _ => {
                return Err(format!(
                    "`{text}` is not an agent skillpkg can set up: claude-code, codex, copilot, vscode or cursor"
                ));
            }
        })
    }
}

/// The name of an entry: 1 to 64 ASCII letters, digits, `_` and `-`, the
/// names every one of the agents accepts (Codex refuses others), and safe
/// as a TOML bare key and a JSON key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerName(String);

impl std::str::FromStr for ServerName {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        if text.is_empty()
            || text.len() > 64
            || !text
                .bytes()
                .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-')
        {
            return Err(format!(
                "`{text}` is not a server name: use 1 to 64 letters, digits, `_` and `-`"
            ));
        }
        Ok(Self(text.to_owned()))
    }
}

impl ServerName {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Default for ServerName {
    fn default() -> Self {
        Self(DEFAULT_NAME.to_owned())
    }
}

impl std::fmt::Display for ServerName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Where the configuration goes: a project's folder, or the user's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scope {
    /// The project at this (absolute) folder.
    Project(PathBuf),
    /// The user's configuration, for every project.
    Global,
}

/// The folders the global files are found from, read once from the
/// process so that the rest is pure.
#[derive(Clone, Debug, Default)]
pub struct Homes {
    pub home: Option<PathBuf>,
    /// `$CLAUDE_CONFIG_DIR`: Claude Code's folder instead of `~/.claude`,
    /// with `.claude.json` in it.
    pub claude_config_dir: Option<PathBuf>,
    /// `$CODEX_HOME`, instead of `~/.codex`.
    pub codex_home: Option<PathBuf>,
    /// `$COPILOT_HOME`, instead of `~/.copilot`.
    pub copilot_home: Option<PathBuf>,
    /// The platform's user configuration folder (`$XDG_CONFIG_HOME` or
    /// `~/.config` on Linux), where VS Code keeps its profile.
    pub config_dir: Option<PathBuf>,
}

impl Homes {
    /// Reads the folders from the process's environment.
    pub fn from_process() -> Self {
        let variable = |name: &str| {
            std::env::var_os(name)
                .filter(|value| !value.is_empty())
                .map(PathBuf::from)
        };
        Self {
            home: dirs::home_dir(),
            claude_config_dir: variable(env_vars::CLAUDE_CONFIG_DIR),
            codex_home: variable(env_vars::CODEX_HOME),
            copilot_home: variable(env_vars::COPILOT_HOME),
            config_dir: dirs::config_dir(),
        }
    }
}

/// The format of a configuration file and where its servers are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// A JSON object whose member `servers_key` holds the servers.
    Json { servers_key: &'static str },
    /// Codex's TOML, servers under `[mcp_servers]`.
    Toml,
}

/// Returns the file `agent` reads its MCP servers from in `scope`, and
/// its format.
pub fn location(agent: Agent, scope: &Scope, homes: &Homes) -> Result<(PathBuf, Format), Error> {
    let home = || homes.home.clone().ok_or(Error::NoHome);
    let path = match (agent, scope) {
        (Agent::ClaudeCode, Scope::Project(project)) => project.join(".mcp.json"),
        (Agent::ClaudeCode, Scope::Global) => match &homes.claude_config_dir {
            Some(dir) => dir.join(".claude.json"),
            None => home()?.join(".claude.json"),
        },
        (Agent::Codex, Scope::Project(project)) => project.join(".codex/config.toml"),
        (Agent::Codex, Scope::Global) => match &homes.codex_home {
            Some(dir) => dir.join("config.toml"),
            None => home()?.join(".codex/config.toml"),
        },
        // `.mcp.json` is Claude Code's; Copilot reads `.github/mcp.json` too.
        (Agent::Copilot, Scope::Project(project)) => project.join(".github/mcp.json"),
        (Agent::Copilot, Scope::Global) => match &homes.copilot_home {
            Some(dir) => dir.join("mcp-config.json"),
            None => home()?.join(".copilot/mcp-config.json"),
        },
        (Agent::Vscode, Scope::Project(project)) => project.join(".vscode/mcp.json"),
        (Agent::Vscode, Scope::Global) => homes
            .config_dir
            .clone()
            .ok_or(Error::NoHome)?
            .join("Code/User/mcp.json"),
        (Agent::Cursor, Scope::Project(project)) => project.join(".cursor/mcp.json"),
        (Agent::Cursor, Scope::Global) => home()?.join(".cursor/mcp.json"),
    };
    let format = match agent {
        Agent::Codex => Format::Toml,
        Agent::Vscode => Format::Json {
            servers_key: "servers",
        },
        Agent::ClaudeCode | Agent::Copilot | Agent::Cursor => Format::Json {
            servers_key: "mcpServers",
        },
    };
    Ok((path, format))
}

/// What the agent is to start: the program and its arguments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Launch {
    pub command: String,
    pub args: Vec<String>,
}

impl Launch {
    /// The launch of `skillpkg mcp` for `agent`: `program`, then `mcp`,
    /// `--host` (`host`, else the agent's own when its skill folders are
    /// not the default ones), `--project` (the folder given, or
    /// `${workspaceFolder}` for agents that expand it), then `serve_args`
    /// as they are.
    pub fn new(
        agent: Agent,
        program: &str,
        host: Option<&str>,
        project: Option<&Path>,
        serve_args: &[String],
    ) -> Self {
        let mut args = vec!["mcp".to_owned()];
        if let Some(host) = host.or(agent.host()) {
            args.extend(["--host".to_owned(), host.to_owned()]);
        }
        match project {
            Some(project) => {
                args.extend(["--project".to_owned(), project.display().to_string()]);
            }
            None if agent.expands_workspace_folder() => {
                args.extend(["--project".to_owned(), "${workspaceFolder}".to_owned()]);
            }
            None => {}
        }
        args.extend(serve_args.iter().cloned());
        Self {
            command: program.to_owned(),
            args,
        }
    }

    /// The entry as the agent's own CLI writes it (`claude mcp add`,
    /// `copilot mcp add`), for the JSON formats.
    fn json_entry(&self, agent: Agent) -> serde_json::Value {
        match agent {
            Agent::ClaudeCode => json!({
                "type": "stdio", "command": self.command, "args": self.args, "env": {},
            }),
            Agent::Copilot => json!({
                "type": "local", "command": self.command, "args": self.args, "tools": ["*"],
            }),
            Agent::Vscode | Agent::Cursor | Agent::Codex => json!({
                "type": "stdio", "command": self.command, "args": self.args,
            }),
        }
    }
}

/// Returns true if and only if an entry's command and arguments are
/// skillpkg's server: a program named `skillpkg` (wherever it is) whose
/// first argument is `mcp`. Such an entry is this command's to replace
/// or remove; any other is the user's.
fn is_ours(command: Option<&str>, first_arg: Option<&str>) -> bool {
    let Some(command) = command else {
        return false;
    };
    let program = Path::new(command)
        .file_name()
        .and_then(|name| name.to_str())
        .unwrap_or_default();
    matches!(program, "skillpkg" | "skillpkg.exe") && first_arg == Some("mcp")
}

/// What a run does to the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Action {
    Added,
    Updated,
    Unchanged,
    Removed,
    /// Uninstall found no entry of that name.
    Absent,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Added => "added",
            Self::Updated => "updated",
            Self::Unchanged => "unchanged",
            Self::Removed => "removed",
            Self::Absent => "absent",
        }
    }
}

/// What to do to one file, computed before anything is written.
#[derive(Debug)]
pub struct Plan {
    /// The file as named (where the agent reads it).
    pub path: PathBuf,
    /// The file written: `path`, or where its symlink points.
    pub target: PathBuf,
    pub action: Action,
    /// The file's bytes now (empty when it does not exist).
    pub old: String,
    /// The file's bytes after; equal to `old` when nothing changes.
    pub new: String,
    /// The permission bits of the file now, kept by the write.
    mode: Option<u32>,
    /// Whether the file is the user's own (global): new ones are made 0600,
    /// as the agents make theirs; a project's are 0644.
    private: bool,
}

impl Plan {
    /// Returns true if and only if the file's bytes change.
    pub fn changes(&self) -> bool {
        self.old != self.new
    }

    /// Writes the new bytes atomically (a temporary file in the same
    /// folder, renamed over it), with the file's permission bits, making
    /// the folders above it if they are missing. Writes nothing when
    /// nothing changes.
    pub fn apply(&self) -> Result<(), Error> {
        if !self.changes() {
            return Ok(());
        }
        let mode = self
            .mode
            .unwrap_or(if self.private { 0o600 } else { 0o644 });
        let options = skillpkg_index::fs::WriteOptions::default()
            .mode(mode)
            .create_parents();
        skillpkg_index::fs::write_atomic_with(&self.target, self.new.as_bytes(), &options)
            .map_err(Error::Write)
    }

    /// A unified diff from the file now to the file after.
    pub fn diff(&self) -> String {
        let name = self.path.display().to_string();
        similar::TextDiff::configure()
            .timeout(std::time::Duration::from_secs(2))
            .diff_lines(&self.old, &self.new)
            .unified_diff()
            .header(&name, &name)
            .to_string()
    }
}

/// What to do: add (or update) the entry, or remove it.
#[derive(Clone, Debug)]
pub enum Change {
    Install {
        launch: Launch,
        /// Replace an entry of this name that is not skillpkg's.
        force: bool,
    },
    Uninstall,
}

/// Reads `agent`'s file for `scope` and computes what `change` makes of
/// it. Reads only; an error leaves everything as it was.
pub fn plan(
    agent: Agent,
    scope: &Scope,
    homes: &Homes,
    name: &ServerName,
    change: &Change,
) -> Result<Plan, Error> {
    let (path, format) = location(agent, scope, homes)?;
    let existing = read(&path, scope)?;
    let (target, old, mode) = match existing {
        Some(existing) => (existing.target, existing.text, Some(existing.mode)),
        None => (path.clone(), String::new(), None),
    };
    let edit = match (format, change) {
        (Format::Json { servers_key }, Change::Install { launch, force }) => json::install(
            &old,
            servers_key,
            name.as_str(),
            &launch.json_entry(agent),
            *force,
        ),
        (Format::Json { servers_key }, Change::Uninstall) => {
            json::uninstall(&old, servers_key, name.as_str())
        }
        (Format::Toml, Change::Install { launch, force }) => {
            toml::install(&old, name.as_str(), launch, *force)
        }
        (Format::Toml, Change::Uninstall) => toml::uninstall(&old, name.as_str()),
    }
    .map_err(|problem| problem.at(&path))?;
    Ok(Plan {
        path,
        target,
        action: edit.action,
        old,
        new: edit.text,
        mode,
        private: *scope == Scope::Global,
    })
}

/// The result of editing a file's text.
#[derive(Debug)]
struct Edit {
    action: Action,
    text: String,
}

/// Why an edit was refused, before the file's path is known.
#[derive(Debug)]
enum Problem {
    /// The file is not what its format says; the message names the line.
    Malformed(String),
    /// The file parses but is not shaped as the agent's configuration.
    Shape(String),
    /// An entry of that name that skillpkg did not write.
    NotOurs { name: String, command: String },
}

impl Problem {
    fn at(self, path: &Path) -> Error {
        let path = path.to_owned();
        match self {
            Self::Malformed(message) => Error::Malformed { path, message },
            Self::Shape(message) => Error::Shape { path, message },
            Self::NotOurs { name, command } => Error::NotOurs {
                path,
                name,
                command,
            },
        }
    }
}

/// An existing configuration file.
struct Existing {
    target: PathBuf,
    text: String,
    mode: u32,
}

/// Reads the file at `path`, if there is one. In a project a symlink is
/// refused: the repository decides where it points, and a clone must not
/// be able to make `install` rewrite a file outside it. In the user's
/// home a symlink is followed (dotfile managers link these files), and
/// the file it points to is the one rewritten, in its own folder.
fn read(path: &Path, scope: &Scope) -> Result<Option<Existing>, Error> {
    use std::io::Read as _;

    let target = match fs_err::symlink_metadata(path) {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            if let Scope::Project(project) = scope {
                check_inside(path, project)?;
            }
            return Ok(None);
        }
        Err(error) => return Err(Error::Read(error)),
        Ok(metadata) if metadata.file_type().is_symlink() => match scope {
            Scope::Project(_) => {
                let points_to = fs_err::read_link(path).map_err(Error::Read)?;
                return Err(Error::Symlink {
                    path: path.to_owned(),
                    points_to,
                });
            }
            Scope::Global => fs_err::canonicalize(path).map_err(Error::Read)?,
        },
        Ok(_) => {
            if let Scope::Project(project) = scope {
                check_inside(path, project)?;
            }
            path.to_owned()
        }
    };
    let file = fs_err::File::open(&target).map_err(Error::Read)?;
    let metadata = file.metadata().map_err(Error::Read)?;
    if !metadata.is_file() {
        return Err(Error::Shape {
            path: path.to_owned(),
            message: "it is not a regular file".to_owned(),
        });
    }
    if metadata.len() > MAX_FILE_BYTES {
        return Err(Error::TooLarge {
            path: path.to_owned(),
            size: metadata.len(),
        });
    }
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(Error::Read)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(Error::TooLarge {
            path: path.to_owned(),
            size: bytes.len() as u64,
        });
    }
    let text = String::from_utf8(bytes).map_err(|error| Error::Malformed {
        path: path.to_owned(),
        message: format!(
            "it is not UTF-8 (byte {})",
            error.utf8_error().valid_up_to()
        ),
    })?;
    #[cfg(unix)]
    let mode = {
        use std::os::unix::fs::PermissionsExt as _;
        metadata.permissions().mode() & 0o7777
    };
    #[cfg(not(unix))]
    let mode = 0o644;
    Ok(Some(Existing { target, text, mode }))
}

/// Refuses a project file whose folders lead outside the project (a
/// `.vscode` that is a symlink to somewhere else).
fn check_inside(path: &Path, project: &Path) -> Result<(), Error> {
    let Ok(project) = fs_err::canonicalize(project) else {
        return Ok(());
    };
    // The deepest folder above the file that exists.
    let mut folder = path.parent();
    while let Some(dir) = folder {
        if let Ok(real) = fs_err::canonicalize(dir) {
            if real.starts_with(&project) {
                return Ok(());
            }
            return Err(Error::Symlink {
                path: dir.to_owned(),
                points_to: real,
            });
        }
        folder = dir.parent();
    }
    Ok(())
}

/// Why a configuration could not be edited. Every variant names the file.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("no home folder: set HOME")]
    NoHome,
    #[error("{}: {message}", path.display())]
    Malformed { path: PathBuf, message: String },
    #[error("{} is not an MCP configuration skillpkg can edit: {message}", path.display())]
    Shape { path: PathBuf, message: String },
    #[error("{} already has a server `{name}` that is not skillpkg's (it runs `{command}`)", path.display())]
    NotOurs {
        path: PathBuf,
        name: String,
        command: String,
    },
    #[error("{} is a symlink to {}", path.display(), points_to.display())]
    Symlink { path: PathBuf, points_to: PathBuf },
    #[error("{} is {size} bytes, more than an MCP configuration can be ({MAX_FILE_BYTES})", path.display())]
    TooLarge { path: PathBuf, size: u64 },
    #[error(transparent)]
    Read(std::io::Error),
    #[error(transparent)]
    Write(skillpkg_index::fs::WriteError),
}

impl Error {
    /// Returns true if and only if the user can fix it (everything but a
    /// failed read or write).
    pub fn is_user_error(&self) -> bool {
        !matches!(self, Self::Read(_) | Self::Write(_))
    }

    /// What to do about it.
    pub fn hint(&self) -> Option<String> {
        Some(match self {
            Self::NoHome => "set HOME, or install into a project without --global".to_owned(),
            Self::Malformed { .. } | Self::Shape { .. } => {
                "fix the file (or move it away) and run this again; nothing was changed".to_owned()
            }
            Self::NotOurs { name, .. } => format!(
                "pick another name with --name, or replace that server with --force; nothing was changed (`{name}` is kept)"
            ),
            Self::Symlink { .. } => "a project's configuration is never written through a symlink, which could lead outside the project: replace the symlink by a file, or edit the file it points to by hand; nothing was changed".to_owned(),
            Self::TooLarge { .. } => "nothing was changed".to_owned(),
            Self::Read(_) | Self::Write(_) => return None,
        })
    }
}

#[cfg(test)]
mod tests;
