//! Paths a skill's `permissions.filesystem` grant must not reach: version
//! control metadata, agent and editor configuration, the folders agents
//! read skills from, skillpkg's own project files, shell start-up files,
//! credentials, the user's configuration folder and the home folder
//! (docs/runtime-sandbox.md, "Grants that cannot reach agent or VCS
//! configuration").
//!
//! A file written there runs, or is trusted, later and elsewhere: git runs
//! `.git/hooks/*` at the next commit, Claude Code runs the hooks of
//! `.claude/settings.json`, a shell runs `.bashrc`, an agent loads whatever
//! lies in its skills folder. A sandbox that lets a skill write there has
//! let it out. Reading is refused for the files that hold credentials only.
//!
//! Everything here judges names, never the disk: [`protected_name`] says
//! whether a file or folder called `name` is protected, [`reaches_in`]
//! whether a path (as its components) is one or lies inside one, and
//! [`glob_reaches`] whether a glob's text names one (what `skillpkg
//! validate` warns about, as `permission-protected-path`). Names compare
//! case-insensitively, since macOS and some Linux file systems fold case
//! (`.GIT/hooks` is `.git/hooks` there). What a grant reaches on disk
//! (after links, a folder that holds `.git`, the home folder, the skills
//! folders of this machine) is the runtime's part.

use std::fmt;

/// The access a grant gives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Access {
    /// `permissions.filesystem.read`.
    Read,
    /// `permissions.filesystem.write`.
    Write,
}

impl Access {
    /// Returns the key of the list in `permissions.filesystem`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Write => "write",
        }
    }
}

impl fmt::Display for Access {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A family of protected paths: the rule a refusal or a warning names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Rule {
    /// `.git` (a folder, or a file in worktrees), `.gitmodules`, ...
    Vcs,
    /// `.claude`, `.codex`, `.agents`, `.github`, `.vscode`, ...
    AgentConfig,
    /// A folder an agent reads skills from, or a skillpkg install target:
    /// known only on disk (the runtime's part), except where another rule
    /// already covers it (`.claude/skills`).
    SkillFolder,
    /// `skills.toml`, `skills.lock`, `.skillpkg`, `.skillpkg.json`.
    SkillpkgState,
    /// `.bashrc`, `.profile`, `.zshrc`, `.envrc`, `.config/fish`, ...
    ShellStartup,
    /// `.env`, `.npmrc`, `*.pem`, `id_rsa*`, `.ssh`, `.aws`, ...
    Credentials,
    /// `.config`: the user's configuration folder.
    UserConfig,
    /// The home folder itself: known only on disk.
    Home,
}

impl Rule {
    /// Every rule, in documentation order.
    pub const ALL: [Rule; 8] = [
        Rule::Vcs,
        Rule::AgentConfig,
        Rule::SkillFolder,
        Rule::SkillpkgState,
        Rule::ShellStartup,
        Rule::Credentials,
        Rule::UserConfig,
        Rule::Home,
    ];

    /// Returns the rule's stable id, as messages and the documentation
    /// name it.
    pub fn id(self) -> &'static str {
        match self {
            Self::Vcs => "vcs",
            Self::AgentConfig => "agent-config",
            Self::SkillFolder => "skill-folder",
            Self::SkillpkgState => "skillpkg-state",
            Self::ShellStartup => "shell-startup",
            Self::Credentials => "credentials",
            Self::UserConfig => "user-config",
            Self::Home => "home",
        }
    }

    /// Returns what the rule protects, as a noun phrase.
    pub fn what(self) -> &'static str {
        match self {
            Self::Vcs => "version control metadata",
            Self::AgentConfig => "agent or editor configuration",
            Self::SkillFolder => "a folder agents read skills from",
            Self::SkillpkgState => "skillpkg's project state",
            Self::ShellStartup => "a shell start-up file",
            Self::Credentials => "where credentials are kept",
            Self::UserConfig => "the user's configuration folder",
            Self::Home => "the home folder",
        }
    }

    /// Returns why a grant there is refused: what would run, or leak.
    pub fn why(self) -> &'static str {
        match self {
            Self::Vcs => {
                "git runs its hooks and obeys its configuration (`core.hooksPath`, `core.fsmonitor`, aliases) at the next command, and attributes and submodules change what is checked out and what a review shows"
            }
            Self::AgentConfig => {
                "agents and editors run the hooks, MCP servers and tasks it names, and follow the instructions in it, without asking"
            }
            Self::SkillFolder => {
                "a skill written or rewritten there is loaded by the next agent session with the trust of an installed one"
            }
            Self::SkillpkgState => {
                "`skills.toml`, `skills.lock` and the install records decide which skills are installed and trusted"
            }
            Self::ShellStartup => {
                "the shell runs it at the next login or terminal (direnv runs `.envrc` on `cd`)"
            }
            Self::Credentials => {
                "keys, tokens and passwords read there leave with the script's output, and written there they are replaced"
            }
            Self::UserConfig => {
                "programs read their settings there at start (git, gh, fish, editors), and many settings run commands"
            }
            Self::Home => {
                "a grant on it covers every credential, start-up file and agent configuration of the user"
            }
        }
    }

    /// Returns true if and only if the rule refuses grants of `access`:
    /// every rule refuses writes; reads are refused only where credentials
    /// are (and on the home folder, which holds them).
    pub fn guards(self, access: Access) -> bool {
        match access {
            Access::Write => true,
            Access::Read => matches!(self, Self::Credentials | Self::Home),
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

/// One protected name. `pattern` is lowercase; a leading `*` matches any
/// non-empty start (`*.pem`), a trailing `*` any end (`id_rsa*`, and
/// `.env.*`, which needs something after the dot); a `/` joins names that
/// must follow each other (`.config/fish`).
struct Entry {
    pattern: &'static str,
    rule: Rule,
    /// Whether a wildcard in a glob's component counts as naming it
    /// (`.*` names `.git`). Off for ordinary-looking names (`*.md` is not
    /// meant to name `CLAUDE.md`, nor `*.toml` `skills.toml`); the runtime
    /// still refuses a grant that reaches such a file on disk.
    wildcards: bool,
}

const fn entry(pattern: &'static str, rule: Rule) -> Entry {
    Entry {
        pattern,
        rule,
        wildcards: true,
    }
}

const fn literal(pattern: &'static str, rule: Rule) -> Entry {
    Entry {
        pattern,
        rule,
        wildcards: false,
    }
}

/// The protected names, at any depth: a folder that is a root for one MCP
/// client is a subfolder for another, agents read nested configuration
/// (`CLAUDE.md` and `.claude/skills` in subfolders), and a nested `.git`
/// (a submodule, a vendored repository) runs its hooks too. Entries of
/// several names come before the entry of their first name, so the more
/// precise rule is the one named.
const ENTRIES: &[Entry] = &[
    entry(".git", Rule::Vcs),
    entry(".gitmodules", Rule::Vcs),
    entry(".gitattributes", Rule::Vcs),
    entry(".gitconfig", Rule::Vcs),
    entry(".hg", Rule::Vcs),
    entry(".hgrc", Rule::Vcs),
    entry(".svn", Rule::Vcs),
    entry(".jj", Rule::Vcs),
    entry(".claude", Rule::AgentConfig),
    entry(".claude.json", Rule::AgentConfig),
    entry(".codex", Rule::AgentConfig),
    entry(".agents", Rule::AgentConfig),
    entry(".github", Rule::AgentConfig),
    entry(".copilot", Rule::AgentConfig),
    entry(".vscode", Rule::AgentConfig),
    entry(".cursor", Rule::AgentConfig),
    entry(".cursorrules", Rule::AgentConfig),
    entry(".idea", Rule::AgentConfig),
    entry(".gemini", Rule::AgentConfig),
    entry(".windsurf", Rule::AgentConfig),
    entry(".zed", Rule::AgentConfig),
    entry(".mcp.json", Rule::AgentConfig),
    literal("claude.md", Rule::AgentConfig),
    literal("claude.local.md", Rule::AgentConfig),
    literal("agents.md", Rule::AgentConfig),
    literal("gemini.md", Rule::AgentConfig),
    literal("skills.toml", Rule::SkillpkgState),
    literal("skills.lock", Rule::SkillpkgState),
    entry(".skillpkg", Rule::SkillpkgState),
    entry(".skillpkg.json", Rule::SkillpkgState),
    entry(".bashrc", Rule::ShellStartup),
    entry(".bash_profile", Rule::ShellStartup),
    entry(".bash_login", Rule::ShellStartup),
    entry(".bash_logout", Rule::ShellStartup),
    entry(".profile", Rule::ShellStartup),
    entry(".zshrc", Rule::ShellStartup),
    entry(".zprofile", Rule::ShellStartup),
    entry(".zshenv", Rule::ShellStartup),
    entry(".zlogin", Rule::ShellStartup),
    entry(".zlogout", Rule::ShellStartup),
    entry(".cshrc", Rule::ShellStartup),
    entry(".tcshrc", Rule::ShellStartup),
    entry(".kshrc", Rule::ShellStartup),
    entry(".envrc", Rule::ShellStartup),
    literal(".config/fish", Rule::ShellStartup),
    entry(".config", Rule::UserConfig),
    entry(".env", Rule::Credentials),
    entry(".env.*", Rule::Credentials),
    entry(".netrc", Rule::Credentials),
    entry("_netrc", Rule::Credentials),
    entry(".npmrc", Rule::Credentials),
    entry(".pypirc", Rule::Credentials),
    entry(".git-credentials", Rule::Credentials),
    entry(".pgpass", Rule::Credentials),
    entry(".vault-token", Rule::Credentials),
    entry(".ssh", Rule::Credentials),
    entry(".aws", Rule::Credentials),
    entry(".gnupg", Rule::Credentials),
    entry(".kube", Rule::Credentials),
    entry(".docker", Rule::Credentials),
    entry(".azure", Rule::Credentials),
    entry("*.pem", Rule::Credentials),
    entry("*.key", Rule::Credentials),
    entry("*.p12", Rule::Credentials),
    entry("*.pfx", Rule::Credentials),
    entry("id_rsa*", Rule::Credentials),
    entry("id_dsa*", Rule::Credentials),
    entry("id_ecdsa*", Rule::Credentials),
    entry("id_ed25519*", Rule::Credentials),
];

/// Names that match a credentials pattern but, by convention, hold only
/// placeholders, committed for others to copy.
const NOT_SECRET: &[&str] = &[".env.example", ".env.sample", ".env.template"];

/// Returns true if and only if `name` (lowercase) matches one name of a
/// pattern.
fn name_matches(pattern: &str, name: &str) -> bool {
    if let Some(suffix) = pattern.strip_prefix('*') {
        name.len() > suffix.len() && name.ends_with(suffix)
    } else if let Some(prefix) = pattern.strip_suffix('*') {
        name.starts_with(prefix) && (name.len() > prefix.len() || !prefix.ends_with('.'))
    } else {
        name == pattern
    }
}

/// Returns true if and only if `name` (lowercase) is one `pattern` of
/// `rule` protects.
fn protects(pattern: &str, rule: Rule, name: &str) -> bool {
    name_matches(pattern, name) && !(rule == Rule::Credentials && NOT_SECRET.contains(&name))
}

/// Returns the rule that protects a file or folder called `name` against
/// grants of `access`, if one does. Only single-name entries count, which
/// is enough to find protected paths inside a folder: the first name of
/// every entry of several names is protected on its own.
pub fn protected_name(name: &str, access: Access) -> Option<Rule> {
    let name = name.to_lowercase();
    ENTRIES
        .iter()
        .filter(|entry| entry.rule.guards(access) && !entry.pattern.contains('/'))
        .find(|entry| protects(entry.pattern, entry.rule, &name))
        .map(|entry| entry.rule)
}

/// A protected path that a path or a glob names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hit {
    pub rule: Rule,
    /// How many leading components make the protected path: the path is it
    /// when this is all of them, and lies inside it otherwise.
    pub end: usize,
}

/// Returns the leftmost protected path among `components` (a path's names,
/// from a root or the home folder) that guards `access`: the path is that
/// protected path or lies inside it.
pub fn reaches_in<S: AsRef<str>>(components: &[S], access: Access) -> Option<Hit> {
    let lowered: Vec<String> = components
        .iter()
        .map(|component| component.as_ref().to_lowercase())
        .collect();
    for start in 0..lowered.len() {
        for entry in ENTRIES.iter().filter(|entry| entry.rule.guards(access)) {
            let names: Vec<&str> = entry.pattern.split('/').collect();
            let Some(candidates) = lowered.get(start..start + names.len()) else {
                continue;
            };
            let matches = names
                .iter()
                .zip(candidates)
                .all(|(pattern, name)| protects(pattern, entry.rule, name));
            if matches {
                return Some(Hit {
                    rule: entry.rule,
                    end: start + names.len(),
                });
            }
        }
    }
    None
}

/// What a glob's text reaches that its access must not.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GlobHit {
    pub rule: Rule,
    /// The part of the glob, as written (without `./`), that names the
    /// protected path: `.git` of `.git/hooks/**`, `**/*.pem`; `.` when the
    /// glob is a write grant of the whole root.
    pub names: String,
    /// True when the grant would hold the protected path rather than be or
    /// lie inside it (a write grant of the whole root holds `.git`).
    pub contains: bool,
}

impl GlobHit {
    /// One sentence for `skillpkg validate` and the runtime's refusals
    /// alike: what the pattern names, the rule, and why.
    pub fn describe(&self, access: Access, glob: &str) -> String {
        let rule = self.rule;
        if self.contains {
            format!(
                "`permissions.filesystem.{access}` pattern `{glob}` has no fixed folder, so it grants the whole root and with it `.git`, `.claude` and `skills.toml`; {} is protected (rule `{rule}`): {}",
                rule.what(),
                rule.why()
            )
        } else {
            format!(
                "`permissions.filesystem.{access}` pattern `{glob}` reaches `{}`, {} (rule `{rule}`): {}",
                self.names,
                rule.what(),
                rule.why()
            )
        }
    }
}

/// The characters that make a glob component more than a literal name.
const WILDCARDS: [char; 6] = ['*', '?', '[', ']', '{', '}'];

/// Returns what `glob` (a `permissions.filesystem` pattern, as written)
/// reaches that a grant of `access` must not, judged from its text alone:
/// a name that is protected (`.claude/**`, `src/.git/hooks/*`,
/// `**/.env`), a wildcard name that matches a protected one (`.*`,
/// `**/*.pem`, `.GI?`; names made only of `*` and `?` are left to
/// `permission-overbroad`), or, for a write, no fixed folder at all, which
/// grants the whole root. Returns `None` for a glob that breaks the glob
/// rules (`..`, absolute): `permission-glob-invalid` covers it.
pub fn glob_reaches(glob: &str, access: Access) -> Option<GlobHit> {
    if glob.starts_with('/') || glob.contains('\\') {
        return None;
    }
    // `./` and doubled slashes name nothing.
    let components: Vec<&str> = glob
        .split('/')
        .filter(|part| !part.is_empty() && *part != ".")
        .collect();
    if components.contains(&"..") {
        return None;
    }
    let is_wild = |part: &str| part.contains(WILDCARDS);
    let literal_end = components.iter().take_while(|part| !is_wild(part)).count();
    // The literal names first, as paths on disk are judged; then each
    // wildcard name against the protected names it could match.
    let literal_hit = (0..components.len()).find_map(|start| {
        let run_end = components[start..]
            .iter()
            .position(|part| is_wild(part))
            .map_or(components.len(), |offset| start + offset);
        reaches_in(&components[start..run_end], access).map(|hit| (start, hit))
    });
    if let Some((start, hit)) = literal_hit {
        return Some(GlobHit {
            rule: hit.rule,
            names: components[..start + hit.end].join("/"),
            contains: false,
        });
    }
    for (index, part) in components.iter().enumerate() {
        if !is_wild(part) || part.chars().all(|c| matches!(c, '*' | '?')) {
            continue;
        }
        let Ok(matcher) = globset::GlobBuilder::new(part)
            .case_insensitive(true)
            .literal_separator(true)
            .build()
            .map(|glob| glob.compile_matcher())
        else {
            return None;
        };
        let found = ENTRIES
            .iter()
            .filter(|entry| {
                entry.wildcards && entry.rule.guards(access) && !entry.pattern.contains('/')
            })
            .find(|entry| matcher.is_match(entry.pattern.replace('*', "x")));
        if let Some(entry) = found {
            return Some(GlobHit {
                rule: entry.rule,
                names: components[..=index].join("/"),
                contains: false,
            });
        }
    }
    if access == Access::Write && literal_end == 0 {
        return Some(GlobHit {
            rule: Rule::Vcs,
            names: ".".into(),
            contains: true,
        });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reached(glob: &str, access: Access) -> Option<(Rule, String)> {
        glob_reaches(glob, access).map(|hit| (hit.rule, hit.names))
    }

    #[test]
    fn each_rule_has_an_id_a_noun_and_a_reason() {
        let mut ids: Vec<&str> = Rule::ALL.iter().map(|rule| rule.id()).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), Rule::ALL.len());
        for rule in Rule::ALL {
            assert!(!rule.what().is_empty() && !rule.why().is_empty(), "{rule}");
            assert!(rule.guards(Access::Write), "{rule}");
        }
        assert!(Rule::Credentials.guards(Access::Read));
        assert!(!Rule::Vcs.guards(Access::Read));
    }

    #[test]
    fn every_kind_of_protected_name_is_found_at_any_depth_in_any_case() {
        let cases = [
            (".git/hooks/pre-commit", Rule::Vcs, 1),
            ("vendor/lib/.git/config", Rule::Vcs, 3),
            (".GIT/hooks", Rule::Vcs, 1),
            (".gitmodules", Rule::Vcs, 1),
            (".gitattributes", Rule::Vcs, 1),
            (".claude/settings.json", Rule::AgentConfig, 1),
            (".Claude/skills/other/SKILL.md", Rule::AgentConfig, 1),
            (".codex/config.toml", Rule::AgentConfig, 1),
            (".agents/skills", Rule::AgentConfig, 1),
            (".github/workflows/ci.yml", Rule::AgentConfig, 1),
            (".vscode/tasks.json", Rule::AgentConfig, 1),
            (".cursor/mcp.json", Rule::AgentConfig, 1),
            (".idea/workspace.xml", Rule::AgentConfig, 1),
            (".mcp.json", Rule::AgentConfig, 1),
            ("docs/CLAUDE.md", Rule::AgentConfig, 2),
            ("skills.toml", Rule::SkillpkgState, 1),
            ("Skills.Lock", Rule::SkillpkgState, 1),
            (".skillpkg/state", Rule::SkillpkgState, 1),
            (".bashrc", Rule::ShellStartup, 1),
            (".zshenv", Rule::ShellStartup, 1),
            (".envrc", Rule::ShellStartup, 1),
            (".config/fish/config.fish", Rule::ShellStartup, 2),
            (".config/gh/hosts.yml", Rule::UserConfig, 1),
            (".ssh/authorized_keys", Rule::Credentials, 1),
            (".aws/credentials", Rule::Credentials, 1),
            (".env", Rule::Credentials, 1),
            ("app/.env.production", Rule::Credentials, 2),
            ("certs/server.PEM", Rule::Credentials, 2),
            ("tls.key", Rule::Credentials, 1),
            ("keys/id_rsa", Rule::Credentials, 2),
            ("keys/id_ed25519.pub", Rule::Credentials, 2),
            (".npmrc", Rule::Credentials, 1),
            (".pypirc", Rule::Credentials, 1),
            (".netrc", Rule::Credentials, 1),
            (".git-credentials", Rule::Credentials, 1),
        ];
        for (path, rule, end) in cases {
            let components: Vec<&str> = path.split('/').collect();
            assert_eq!(
                reaches_in(&components, Access::Write),
                Some(Hit { rule, end }),
                "{path}"
            );
        }
        for path in [
            "output/report.md",
            "src/git/mod.rs",
            "docs/.gitignore",
            ".env.example",
            "keys.txt",
            ".envy",
            "config/app.toml",
        ] {
            let components: Vec<&str> = path.split('/').collect();
            assert_eq!(reaches_in(&components, Access::Write), None, "{path}");
        }
    }

    #[test]
    fn reads_are_refused_only_where_credentials_are() {
        assert_eq!(reaches_in(&[".git", "config"], Access::Read), None);
        assert_eq!(
            reaches_in(&[".claude", "settings.json"], Access::Read),
            None
        );
        assert_eq!(
            reaches_in(&["app", ".env"], Access::Read),
            Some(Hit {
                rule: Rule::Credentials,
                end: 2
            })
        );
        assert_eq!(
            protected_name("ID_RSA", Access::Read),
            Some(Rule::Credentials)
        );
        assert_eq!(protected_name(".git", Access::Read), None);
        assert_eq!(protected_name(".git", Access::Write), Some(Rule::Vcs));
    }

    #[test]
    fn the_first_name_of_every_entry_of_several_names_is_protected_alone() {
        // Finding protected paths inside a folder looks at one name at a
        // time; that finds `.config/fish` only because `.config` is found.
        for entry in ENTRIES.iter().filter(|entry| entry.pattern.contains('/')) {
            let first = entry.pattern.split('/').next().unwrap();
            for access in [Access::Read, Access::Write] {
                if entry.rule.guards(access) {
                    assert!(protected_name(first, access).is_some(), "{}", entry.pattern);
                }
            }
        }
    }

    #[test]
    fn globs_that_name_protected_paths_are_found_from_their_text() {
        let write = |glob| reached(glob, Access::Write);
        assert_eq!(
            write(".claude/**"),
            Some((Rule::AgentConfig, ".claude".into()))
        );
        assert_eq!(write("./.git/hooks/**"), Some((Rule::Vcs, ".git".into())));
        assert_eq!(write(".//.GIT/hooks/*"), Some((Rule::Vcs, ".GIT".into())));
        assert_eq!(
            write("sub/.git/hooks/*"),
            Some((Rule::Vcs, "sub/.git".into()))
        );
        assert_eq!(
            write("out/*/.git/**"),
            Some((Rule::Vcs, "out/*/.git".into()))
        );
        assert_eq!(write(".*"), Some((Rule::Vcs, ".*".into())));
        assert_eq!(write("out/.gi?/**"), Some((Rule::Vcs, "out/.gi?".into())));
        assert_eq!(
            write("skills.lock"),
            Some((Rule::SkillpkgState, "skills.lock".into()))
        );
        assert_eq!(
            write(".config/fish/**"),
            Some((Rule::ShellStartup, ".config/fish".into()))
        );
        // No fixed folder: the whole root, `.git` with it.
        let whole = glob_reaches("*.md", Access::Write).unwrap();
        assert!(whole.contains, "{whole:?}");
        assert_eq!(write("output/**"), None);
        assert_eq!(write("docs/*.md"), None);
        assert_eq!(write("config/*.toml"), None);
        assert_eq!(write("../.git/**"), None);

        let read = |glob| reached(glob, Access::Read);
        assert_eq!(
            read("**/*.pem"),
            Some((Rule::Credentials, "**/*.pem".into()))
        );
        assert_eq!(read(".env"), Some((Rule::Credentials, ".env".into())));
        assert_eq!(
            read("config/.env.*"),
            Some((Rule::Credentials, "config/.env.*".into()))
        );
        assert_eq!(read(".ssh/*"), Some((Rule::Credentials, ".ssh".into())));
        assert_eq!(read(".git/**"), None);
        assert_eq!(read("**/*.pdf"), None);
        assert_eq!(read("**"), None);
    }
}
