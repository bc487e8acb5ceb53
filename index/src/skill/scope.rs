//! The folders each agent host reads skills from, highest precedence first.
//!
//! A scope is a folder whose subfolders are skills
//! (`<scope>/<folder>/SKILL.md`). Hosts read several scopes and, when two
//! skills share a `name`, keep the one from the scope that comes first:
//!
//! ```text
//! claude-code  project  <cwd>/.claude/skills
//!              user     ~/.claude/skills
//!              plugin   <installPath>/skills of each plugin in ~/.claude/plugins/installed_plugins.json
//!
//! codex        cwd      <cwd>/.codex/skills, <cwd>/.agents/skills
//!              parent   the same two in each folder between the working folder and the repository root
//!              repo     <root>/.codex/skills, <root>/.agents/skills
//!              user     $CODEX_HOME/skills (default ~/.codex/skills), ~/.agents/skills
//!
//! copilot      project  <workspace>/.github/skills, <workspace>/.agents/skills, <workspace>/.claude/skills
//!              user     ~/.copilot/skills, ~/.agents/skills, ~/.claude/skills
//! ```
//!
//! The repository root is the nearest folder, from the working folder up,
//! that holds `.git` (a folder, or a file in worktrees and submodules).
//! Outside a repository Codex reads only the working folder and the user
//! scopes, and Copilot's workspace is the working folder. Where these lists
//! come from, and where the hosts' own documents disagree with them, is
//! written down in `docs/hosts.md`.
//!
//! Nothing here reads the process environment: the working folder, home and
//! `CODEX_HOME` come in an [`Environment`], so any layout can be tested.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::Host;

/// What decides where a host looks: given, never read from the process here.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Environment {
    /// The working folder the agent would start in. Made absolute (against
    /// the process's working folder) when it is relative.
    pub cwd: PathBuf,
    /// The user's home folder; without one, no user or plugin scopes.
    pub home: Option<PathBuf>,
    /// `CODEX_HOME`, when set (and not empty).
    pub codex_home: Option<PathBuf>,
}

impl Environment {
    /// Returns Codex's home folder: `CODEX_HOME`, else `~/.codex`.
    pub fn codex_home(&self) -> Option<PathBuf> {
        self.codex_home
            .clone()
            .or_else(|| self.home.as_ref().map(|home| home.join(".codex")))
    }

    fn absolute_cwd(&self) -> PathBuf {
        std::path::absolute(&self.cwd).unwrap_or_else(|_| self.cwd.clone())
    }
}

/// Which of a host's levels a scope belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ScopeKind {
    /// Claude Code's and Copilot's project (or workspace) folders.
    Project,
    /// Codex: the working folder.
    Cwd,
    /// Codex: a folder between the working folder and the repository root.
    Parent,
    /// Codex: the repository root.
    Repo,
    /// The user's own folders, for every project.
    User,
    /// Claude Code: an installed plugin's `skills` folder.
    Plugin,
    /// A folder named on the command line (`--skills DIR`), not a host's.
    Folder,
}

impl ScopeKind {
    /// Returns the name used in output.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Project => "project",
            Self::Cwd => "cwd",
            Self::Parent => "parent",
            Self::Repo => "repo",
            Self::User => "user",
            Self::Plugin => "plugin",
            Self::Folder => "folder",
        }
    }
}

/// One folder of skills a host reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scope {
    pub kind: ScopeKind,
    /// The folder whose subfolders are skills (absolute).
    pub dir: PathBuf,
    /// For a plugin scope, the plugin's id (`name@marketplace`).
    pub plugin: Option<String>,
}

impl Scope {
    fn new(kind: ScopeKind, dir: PathBuf) -> Self {
        Self {
            kind,
            dir,
            plugin: None,
        }
    }
}

/// A host's scopes, highest precedence first, and what could not be read
/// while finding them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HostScopes {
    pub scopes: Vec<Scope>,
    /// Problems worth telling the user (an unreadable plugin list), and
    /// folders left out because a higher scope is the same folder.
    pub notes: Vec<String>,
}

/// Why a host has no scopes.
#[derive(Debug, thiserror::Error)]
pub enum ScopeError {
    #[error("`{host}` is not an agent with skills folders; use claude-code, codex or copilot")]
    NotAnAgent { host: Host },
}

impl ScopeError {
    /// Advice on what to do instead.
    pub fn hint(&self) -> &'static str {
        "to read the skills of any folder, give it with --skills DIR"
    }
}

/// The hosts that read skills from folders, in the order `--host all` shows.
pub const AGENT_HOSTS: [Host; 3] = [Host::ClaudeCode, Host::Codex, Host::Copilot];

/// Returns the folders `host` reads skills from in `env`, highest
/// precedence first. A folder that would appear twice (the working folder is
/// the home folder) is kept once, at its higher place.
pub fn scopes(host: Host, env: &Environment) -> Result<HostScopes, ScopeError> {
    let cwd = env.absolute_cwd();
    let mut notes = Vec::new();
    let list = match host {
        Host::ClaudeCode => claude_code(&cwd, env, &mut notes),
        Host::Codex => codex(&cwd, env),
        Host::Copilot => copilot(&cwd, env),
        host => return Err(ScopeError::NotAnAgent { host }),
    };
    let mut scopes: Vec<Scope> = Vec::with_capacity(list.len());
    for scope in list {
        let same = scopes
            .iter()
            .find(|kept| same_folder(&kept.dir, &scope.dir));
        match same {
            Some(kept) => notes.push(format!(
                "{} ({}) is the same folder as the {} scope {}; it is listed once",
                scope.dir.display(),
                scope.kind.as_str(),
                kept.kind.as_str(),
                kept.dir.display()
            )),
            None => scopes.push(scope),
        }
    }
    Ok(HostScopes { scopes, notes })
}

/// Returns the nearest folder, `dir` or above, that holds `.git`.
pub fn repository_root(dir: &Path) -> Option<PathBuf> {
    dir.ancestors()
        .find(|folder| fs_err::symlink_metadata(folder.join(".git")).is_ok())
        .map(Path::to_path_buf)
}

fn same_folder(a: &Path, b: &Path) -> bool {
    if a == b {
        return true;
    }
    // Only folders that exist can be the same under different names.
    match (fs_err::canonicalize(a), fs_err::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// Claude Code: the project over the user over plugins, as spec 000
/// ("Directory Precedence") orders them.
fn claude_code(cwd: &Path, env: &Environment, notes: &mut Vec<String>) -> Vec<Scope> {
    let mut scopes = vec![Scope::new(ScopeKind::Project, cwd.join(".claude/skills"))];
    if let Some(home) = &env.home {
        scopes.push(Scope::new(ScopeKind::User, home.join(".claude/skills")));
        scopes.extend(claude_plugins(cwd, home, notes));
    }
    scopes
}

/// Codex: from the working folder up to the repository root, then the user.
fn codex(cwd: &Path, env: &Environment) -> Vec<Scope> {
    let root = repository_root(cwd);
    let levels: Vec<&Path> = match &root {
        // `ancestors` ends at the root, which is an ancestor of `cwd`.
        Some(root) => cwd
            .ancestors()
            .take_while(|dir| dir.starts_with(root))
            .collect(),
        None => vec![cwd],
    };
    let mut scopes = Vec::new();
    for dir in levels {
        let kind = if Some(dir) == root.as_deref() {
            ScopeKind::Repo
        } else if dir == cwd {
            ScopeKind::Cwd
        } else {
            ScopeKind::Parent
        };
        // `.codex/skills` is the folder spec 003 names; `.agents/skills` is
        // the one current Codex documents. Both are read at every level.
        scopes.push(Scope::new(kind, dir.join(".codex/skills")));
        scopes.push(Scope::new(kind, dir.join(".agents/skills")));
    }
    if let Some(codex_home) = env.codex_home() {
        scopes.push(Scope::new(ScopeKind::User, codex_home.join("skills")));
    }
    if let Some(home) = &env.home {
        scopes.push(Scope::new(ScopeKind::User, home.join(".agents/skills")));
    }
    scopes
}

/// Copilot in VS Code: the workspace's folders, then the user's, in the
/// order of VS Code's `DEFAULT_SKILL_SOURCE_FOLDERS`.
fn copilot(cwd: &Path, env: &Environment) -> Vec<Scope> {
    let workspace = repository_root(cwd).unwrap_or_else(|| cwd.to_owned());
    let mut scopes = vec![
        Scope::new(ScopeKind::Project, workspace.join(".github/skills")),
        Scope::new(ScopeKind::Project, workspace.join(".agents/skills")),
        Scope::new(ScopeKind::Project, workspace.join(".claude/skills")),
    ];
    if let Some(home) = &env.home {
        for folder in [".copilot/skills", ".agents/skills", ".claude/skills"] {
            scopes.push(Scope::new(ScopeKind::User, home.join(folder)));
        }
    }
    scopes
}

/// `~/.claude/plugins/installed_plugins.json`, as far as it is read here:
/// unknown fields are ignored, so newer versions of the file still read.
#[derive(Deserialize)]
struct InstalledPlugins {
    #[serde(default)]
    plugins: std::collections::BTreeMap<String, Vec<InstalledPlugin>>,
}

#[derive(Deserialize)]
struct InstalledPlugin {
    #[serde(rename = "installPath")]
    install_path: Option<PathBuf>,
}

/// The `enabledPlugins` map of a Claude Code settings file.
#[derive(Deserialize)]
struct Settings {
    #[serde(default, rename = "enabledPlugins")]
    enabled_plugins: std::collections::BTreeMap<String, serde_json::Value>,
}

/// The `skills` folders of the plugins Claude Code has installed, in the
/// order of their ids. A plugin that a settings file turns off
/// (`"enabledPlugins": {"id": false}`; the project's files over the user's)
/// is left out.
fn claude_plugins(cwd: &Path, home: &Path, notes: &mut Vec<String>) -> Vec<Scope> {
    let list = home.join(".claude/plugins/installed_plugins.json");
    let installed: InstalledPlugins = match fs_err::read(&list) {
        Ok(bytes) => match serde_json::from_slice(&bytes) {
            Ok(installed) => installed,
            Err(error) => {
                notes.push(format!(
                    "{} is not the plugin list Claude Code writes ({error}); plugin skills are not listed",
                    list.display()
                ));
                return Vec::new();
            }
        },
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
        Err(error) => {
            notes.push(format!("{error}; plugin skills are not listed"));
            return Vec::new();
        }
    };
    // Later files override earlier ones, as Claude Code layers settings.
    let settings_files = [
        home.join(".claude/settings.json"),
        cwd.join(".claude/settings.json"),
        cwd.join(".claude/settings.local.json"),
    ];
    let mut enabled = std::collections::BTreeMap::new();
    for file in &settings_files {
        let Ok(bytes) = fs_err::read(file) else {
            continue;
        };
        match serde_json::from_slice::<Settings>(&bytes) {
            Ok(settings) => {
                for (id, value) in settings.enabled_plugins {
                    enabled.insert(id, value != serde_json::Value::Bool(false));
                }
            }
            Err(error) => notes.push(format!(
                "{} is not valid settings JSON ({error}); its enabledPlugins are ignored",
                file.display()
            )),
        }
    }
    let mut scopes = Vec::new();
    for (id, entries) in installed.plugins {
        if enabled.get(&id) == Some(&false) {
            continue;
        }
        for entry in entries {
            // Only an absolute path means the same thing wherever skillpkg
            // runs; anything else in the file is not a place to read.
            let Some(path) = entry.install_path.filter(|path| path.is_absolute()) else {
                notes.push(format!(
                    "the plugin `{id}` in {} has no absolute installPath; its skills are not listed",
                    list.display()
                ));
                continue;
            };
            scopes.push(Scope {
                kind: ScopeKind::Plugin,
                dir: path.join("skills"),
                plugin: Some(id.clone()),
            });
        }
    }
    scopes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(cwd: &Path, home: &Path) -> Environment {
        Environment {
            cwd: cwd.to_owned(),
            home: Some(home.to_owned()),
            codex_home: None,
        }
    }

    fn dirs(scopes: &HostScopes, base: &Path) -> Vec<(ScopeKind, String)> {
        scopes
            .scopes
            .iter()
            .map(|scope| {
                let relative = scope.dir.strip_prefix(base).unwrap_or(&scope.dir);
                (scope.kind, relative.display().to_string())
            })
            .collect()
    }

    #[test]
    fn codex_reads_every_level_from_the_working_folder_up_to_the_repository_root() {
        let base = tempfile::tempdir().unwrap();
        let root = base.path().join("work/repo");
        fs_err::create_dir_all(root.join(".git")).unwrap();
        fs_err::create_dir_all(root.join("a/b")).unwrap();
        let scopes = scopes(
            Host::Codex,
            &env(&root.join("a/b"), &base.path().join("home")),
        )
        .unwrap();
        use ScopeKind::*;
        assert_eq!(
            dirs(&scopes, base.path()),
            vec![
                (Cwd, "work/repo/a/b/.codex/skills".into()),
                (Cwd, "work/repo/a/b/.agents/skills".into()),
                (Parent, "work/repo/a/.codex/skills".into()),
                (Parent, "work/repo/a/.agents/skills".into()),
                (Repo, "work/repo/.codex/skills".into()),
                (Repo, "work/repo/.agents/skills".into()),
                (User, "home/.codex/skills".into()),
                (User, "home/.agents/skills".into()),
            ]
        );
    }

    #[test]
    fn codex_outside_a_repository_reads_only_the_working_folder_and_the_user() {
        let base = tempfile::tempdir().unwrap();
        let cwd = base.path().join("loose/dir");
        fs_err::create_dir_all(&cwd).unwrap();
        let environment = Environment {
            codex_home: Some(base.path().join("codex-home")),
            ..env(&cwd, &base.path().join("home"))
        };
        let scopes = scopes(Host::Codex, &environment).unwrap();
        use ScopeKind::*;
        assert_eq!(
            dirs(&scopes, base.path()),
            vec![
                (Cwd, "loose/dir/.codex/skills".into()),
                (Cwd, "loose/dir/.agents/skills".into()),
                (User, "codex-home/skills".into()),
                (User, "home/.agents/skills".into()),
            ]
        );
    }

    #[test]
    fn a_git_file_marks_a_repository_root_like_a_git_folder() {
        let base = tempfile::tempdir().unwrap();
        fs_err::create_dir_all(base.path().join("wt/sub")).unwrap();
        fs_err::write(base.path().join("wt/.git"), "gitdir: /elsewhere\n").unwrap();
        assert_eq!(
            repository_root(&base.path().join("wt/sub")),
            Some(base.path().join("wt"))
        );
    }

    #[test]
    fn copilot_reads_the_workspace_root_not_the_working_folder() {
        let base = tempfile::tempdir().unwrap();
        let root = base.path().join("repo");
        fs_err::create_dir_all(root.join(".git")).unwrap();
        fs_err::create_dir_all(root.join("src")).unwrap();
        let scopes = scopes(
            Host::Copilot,
            &env(&root.join("src"), &base.path().join("home")),
        )
        .unwrap();
        use ScopeKind::*;
        assert_eq!(
            dirs(&scopes, base.path()),
            vec![
                (Project, "repo/.github/skills".into()),
                (Project, "repo/.agents/skills".into()),
                (Project, "repo/.claude/skills".into()),
                (User, "home/.copilot/skills".into()),
                (User, "home/.agents/skills".into()),
                (User, "home/.claude/skills".into()),
            ]
        );
    }

    #[test]
    fn claude_code_puts_the_project_over_the_user_over_enabled_plugins() {
        let base = tempfile::tempdir().unwrap();
        let home = base.path().join("home");
        let project = base.path().join("project");
        fs_err::create_dir_all(home.join(".claude/plugins")).unwrap();
        fs_err::create_dir_all(project.join(".claude")).unwrap();
        let installed = serde_json::json!({
            "version": 2,
            "plugins": {
                "kept@market": [{"scope": "user", "installPath": base.path().join("cache/kept"), "version": "1.0.0"}],
                "off@market": [{"installPath": base.path().join("cache/off")}],
                "relative@market": [{"installPath": "cache/relative"}],
            }
        });
        fs_err::write(
            home.join(".claude/plugins/installed_plugins.json"),
            installed.to_string(),
        )
        .unwrap();
        fs_err::write(
            home.join(".claude/settings.json"),
            r#"{"enabledPlugins": {"off@market": true}}"#,
        )
        .unwrap();
        // The project's settings override the user's.
        fs_err::write(
            project.join(".claude/settings.json"),
            r#"{"enabledPlugins": {"off@market": false}}"#,
        )
        .unwrap();
        let scopes = scopes(Host::ClaudeCode, &env(&project, &home)).unwrap();
        use ScopeKind::*;
        assert_eq!(
            dirs(&scopes, base.path()),
            vec![
                (Project, "project/.claude/skills".into()),
                (User, "home/.claude/skills".into()),
                (Plugin, "cache/kept/skills".into()),
            ]
        );
        assert_eq!(scopes.scopes[2].plugin.as_deref(), Some("kept@market"));
        assert!(
            scopes
                .notes
                .iter()
                .any(|note| note.contains("relative@market")),
            "{:?}",
            scopes.notes
        );
    }

    #[test]
    fn a_corrupt_plugin_list_is_a_note_not_an_error() {
        let base = tempfile::tempdir().unwrap();
        let home = base.path().join("home");
        fs_err::create_dir_all(home.join(".claude/plugins")).unwrap();
        fs_err::write(
            home.join(".claude/plugins/installed_plugins.json"),
            "{not json",
        )
        .unwrap();
        let scopes = scopes(Host::ClaudeCode, &env(base.path(), &home)).unwrap();
        assert_eq!(scopes.scopes.len(), 2);
        assert!(
            scopes.notes[0].contains("not the plugin list"),
            "{:?}",
            scopes.notes
        );
    }

    #[test]
    fn the_home_folder_as_working_folder_lists_its_skills_once_as_the_project() {
        let home = tempfile::tempdir().unwrap();
        fs_err::create_dir_all(home.path().join(".claude/skills")).unwrap();
        let scopes = scopes(Host::ClaudeCode, &env(home.path(), home.path())).unwrap();
        assert_eq!(scopes.scopes.len(), 1);
        assert_eq!(scopes.scopes[0].kind, ScopeKind::Project);
        assert!(
            scopes.notes[0].contains("same folder"),
            "{:?}",
            scopes.notes
        );
    }

    #[test]
    fn hosts_without_folders_are_refused() {
        let error = scopes(Host::ClaudeApi, &Environment::default()).unwrap_err();
        assert!(error.to_string().contains("claude-api"), "{error}");
    }
}
