//! Grants that cannot reach agent or VCS configuration
//! (docs/runtime-sandbox.md, the section of that name).
//!
//! A skill's `permissions.filesystem` globs become Landlock rules on
//! folders (in `super::sandbox`); a grant on `.claude/**` or `.git/hooks/**`
//! would let a script plant Claude Code hooks, a git hook, or another
//! skill, which run later, outside the sandbox. So before a grant becomes
//! a rule, the folder (or file) it would open is judged:
//!
//! - by the glob's text ([`skillpkg_index::skill::protected::glob_reaches`],
//!   the rule `skillpkg validate` warns with);
//! - on disk, after following links (a link `out -> .git` opens `.git`):
//!   whether it is, lies inside, or holds a protected name (searched
//!   beneath it, without following links), is or holds the home folder, or
//!   is, lies inside or holds a folder agents read skills from or skillpkg
//!   installs skills to.
//!
//! Names compare case-insensitively (`.GIT/hooks`). The checks run when
//! `skillpkg mcp` starts, against the project folder (a skill that fails is
//! not served), and again at every run against the client's roots, before
//! anything is created. An operator allows one exact pair with
//! `--allow-grant SKILL=GLOB` ([`AllowedGrant`]).

use std::fmt;
use std::path::{Component, Path, PathBuf};
use std::str::FromStr;

use skillpkg_index::skill::SkillName;
use skillpkg_index::skill::model::Permissions;
use skillpkg_index::skill::protected::{self as rules, Access, Rule};

use super::grant::{Denied, Reach, Refusal, parse_glob};

/// How many entries one check may look at beneath the folders one glob
/// grants, searching for protected names (as many as a read glob's
/// expansion may visit). A grant on a bigger folder is refused: it cannot
/// be shown to hold no `.git`.
pub const MAX_CHECKED: usize = 50_000;

/// How many links a path is followed through before it counts as a loop.
const MAX_LINKS: usize = 40;

/// `--allow-grant SKILL=GLOB`: the operator's permission for the skill
/// named `skill` to have the grant `glob` (exactly as the skill writes it,
/// in `read` or `write`) although it reaches a protected path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AllowedGrant {
    pub skill: SkillName,
    pub glob: String,
}

impl FromStr for AllowedGrant {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let (skill, glob) = text
            .split_once('=')
            .ok_or_else(|| format!("`{text}` is not SKILL=GLOB, like `notes=.claude/**`"))?;
        let skill = skill
            .parse::<SkillName>()
            .map_err(|error| format!("`{skill}` is not a skill name: {error}"))?;
        if glob.is_empty() {
            return Err(format!("`{text}` names no glob after `=`"));
        }
        Ok(Self {
            skill,
            glob: glob.to_owned(),
        })
    }
}

impl fmt::Display for AllowedGrant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}", self.skill, self.glob)
    }
}

/// What grants may not reach, beyond the names every project has: the
/// home folder and the folders skills are read from and installed to, as
/// this machine has them; and what the operator allowed.
#[derive(Clone, Debug, Default)]
pub struct Protection {
    /// The home folder, links followed.
    home: Option<PathBuf>,
    /// Folders agents read skills from (every agent's, not only the
    /// served host's), skillpkg's install targets and the served skills'
    /// own folders, links followed.
    skill_folders: Vec<PathBuf>,
    allowed: Vec<AllowedGrant>,
}

impl Protection {
    /// Protects `home` and `skill_folders` (resolved through links here,
    /// once) and allows the pairs in `allowed`.
    pub fn new(
        home: Option<&Path>,
        skill_folders: impl IntoIterator<Item = PathBuf>,
        allowed: Vec<AllowedGrant>,
    ) -> Self {
        let mut skill_folders: Vec<PathBuf> = skill_folders
            .into_iter()
            .filter(|folder| folder.is_absolute())
            .map(|folder| resolve(&folder))
            .collect();
        skill_folders.sort();
        skill_folders.dedup();
        Self {
            home: home.filter(|home| home.is_absolute()).map(resolve),
            skill_folders,
            allowed,
        }
    }

    /// The operator's allowances.
    pub fn allowed(&self) -> &[AllowedGrant] {
        &self.allowed
    }

    /// Returns true if and only if the operator allowed `skill` the grant
    /// `glob`, written exactly so.
    pub fn allows(&self, skill: &str, glob: &str) -> bool {
        self.allowed
            .iter()
            .any(|allowed| allowed.skill.as_str() == skill && allowed.glob == glob)
    }

    /// Refuses `glob` when its text names a protected path (the rule
    /// `skillpkg validate` warns with).
    pub fn check_text(&self, skill: &str, access: Access, glob: &str) -> Result<(), Denied> {
        let Some(hit) = rules::glob_reaches(glob, access) else {
            return Ok(());
        };
        let fixed = fixed_part(glob);
        let (granted, protected, reach) = if hit.contains {
            (
                "the whole root".to_owned(),
                ".git".to_owned(),
                Reach::Contains,
            )
        } else if hit.names == fixed {
            (fixed, hit.names, Reach::Is)
        } else if fixed.starts_with(&format!("{}/", hit.names)) {
            (fixed, hit.names, Reach::Inside)
        } else {
            (glob.to_owned(), hit.names, Reach::Inside)
        };
        Err(Denied::Protected(Box::new(Refusal {
            skill: skill.to_owned(),
            access,
            glob: glob.to_owned(),
            granted,
            protected,
            reach,
            rule: hit.rule,
        })))
    }

    /// Refuses the grant of `path` (links already followed, under `root`,
    /// which is canonical) that `glob` of `skill` would give, when `path`
    /// is, lies inside or holds a protected path. Looks beneath `path`
    /// (a folder) for protected names, spending `budget` entries.
    pub fn check_path(
        &self,
        skill: &str,
        access: Access,
        glob: &str,
        root: &Path,
        path: &Path,
        budget: &mut usize,
    ) -> Result<(), Denied> {
        let refuse = |protected: &Path, reach: Reach, rule: Rule| {
            Denied::Protected(Box::new(Refusal {
                skill: skill.to_owned(),
                access,
                glob: glob.to_owned(),
                granted: path.display().to_string(),
                protected: protected.display().to_string(),
                reach,
                rule,
            }))
        };
        // Protected names from the root down and, for a path in the home
        // folder, from the home folder down (a project in `~/.config`).
        for base in std::iter::once(root).chain(self.home.as_deref()) {
            let Some(names) = below(path, base) else {
                continue;
            };
            if let Some(hit) = rules::reaches_in(&names, access) {
                let mut protected = base.to_path_buf();
                protected.extend(&names[..hit.end]);
                let reach = if hit.end == names.len() {
                    Reach::Is
                } else {
                    Reach::Inside
                };
                return Err(refuse(&protected, reach, hit.rule));
            }
        }
        if let Some(home) = &self.home
            && Rule::Home.guards(access)
            && below(home, path).is_some()
        {
            let reach = if below(path, home).is_some() {
                Reach::Is
            } else {
                Reach::Contains
            };
            return Err(refuse(home, reach, Rule::Home));
        }
        if Rule::SkillFolder.guards(access) {
            for folder in &self.skill_folders {
                let reach = match (below(path, folder), below(folder, path)) {
                    (Some(_), Some(_)) => Reach::Is,
                    (Some(_), None) => Reach::Inside,
                    (None, Some(_)) => Reach::Contains,
                    (None, None) => continue,
                };
                return Err(refuse(folder, reach, Rule::SkillFolder));
            }
        }
        match find_beneath(path, access, budget) {
            Beneath::Clean => Ok(()),
            Beneath::Found(protected, rule) => Err(refuse(&protected, Reach::Contains, rule)),
            Beneath::TooMany => Err(Denied::Glob {
                access: access.as_str(),
                glob: glob.to_owned(),
                reason: format!(
                    "it grants {}, which holds more than {MAX_CHECKED} files and folders: too many to check that none is `.git`, `.claude` or another protected path",
                    path.display()
                ),
            }),
        }
    }

    /// Checks what `skill` declares, as `skillpkg mcp` starts, against the
    /// project folder `root` (canonical): each glob's text, and the folder
    /// each one opens as it is on disk now. Creates nothing. A glob that is
    /// invalid or leads out of the root is left to the run, which refuses
    /// it with its own reason.
    pub fn check_declared(
        &self,
        skill: &str,
        permissions: &Permissions,
        root: &Path,
    ) -> Result<(), Denied> {
        for (access, globs) in [
            (Access::Read, &permissions.filesystem.read),
            (Access::Write, &permissions.filesystem.write),
        ] {
            for glob in globs {
                if self.allows(skill, glob) {
                    continue;
                }
                self.check_text(skill, access, glob)?;
                let Ok((prefix, matcher)) = parse_glob(access.as_str(), glob) else {
                    continue;
                };
                // A read glob with wildcards opens only what it matches;
                // the run expands it and checks each match.
                if access == Access::Read && matcher.is_some() {
                    continue;
                }
                let path = resolve(&root.join(prefix));
                if path.starts_with(root) {
                    let mut budget = MAX_CHECKED;
                    self.check_path(skill, access, glob, root, &path, &mut budget)?;
                }
            }
        }
        Ok(())
    }
}

/// The names of a glob before its first wildcard, `/`-joined, without
/// `./` and doubled slashes: what a write grant opens.
fn fixed_part(glob: &str) -> String {
    glob.split('/')
        .filter(|part| !part.is_empty() && *part != ".")
        .take_while(|part| !part.contains(['*', '?', '[', ']', '{', '}']))
        .collect::<Vec<_>>()
        .join("/")
}

/// Returns the names of `path` below `base` when `path` is `base` or lies
/// inside it, comparing names case-insensitively (`None` otherwise).
fn below(path: &Path, base: &Path) -> Option<Vec<String>> {
    let names = |path: &Path| -> Vec<String> {
        path.components()
            .map(|component| component.as_os_str().to_string_lossy().into_owned())
            .collect()
    };
    let path = names(path);
    let base = names(base);
    let inside = path.len() >= base.len()
        && path
            .iter()
            .zip(&base)
            .all(|(a, b)| a.to_lowercase() == b.to_lowercase());
    inside.then(|| path[base.len()..].to_vec())
}

enum Beneath {
    Clean,
    Found(PathBuf, Rule),
    TooMany,
}

/// Looks beneath `folder` for a file or folder whose name is protected
/// against `access`, without following links (a link's target is judged
/// where it lies: Landlock grants follow the path, not the link).
fn find_beneath(folder: &Path, access: Access, budget: &mut usize) -> Beneath {
    let is_folder =
        fs_err::symlink_metadata(folder).is_ok_and(|metadata| metadata.file_type().is_dir());
    if !is_folder {
        return Beneath::Clean;
    }
    let mut stack = vec![folder.to_path_buf()];
    while let Some(current) = stack.pop() {
        let Ok(entries) = fs_err::read_dir(&current) else {
            continue;
        };
        for entry in entries.flatten() {
            if *budget == 0 {
                return Beneath::TooMany;
            }
            *budget -= 1;
            let name = entry.file_name();
            if let Some(rule) = rules::protected_name(&name.to_string_lossy(), access) {
                return Beneath::Found(entry.path(), rule);
            }
            if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
                stack.push(entry.path());
            }
        }
    }
    Beneath::Clean
}

/// Returns where the absolute `path` leads once links are followed: its
/// deepest part that exists, made canonical, with the rest appended. A
/// link whose target does not exist (yet) is followed by its text, so
/// `out -> .git/new` leads into `.git` before anything creates `new`.
pub fn resolve(path: &Path) -> PathBuf {
    let mut current = lexical(path);
    for _ in 0..MAX_LINKS {
        let mut existing = current.as_path();
        let mut rest = Vec::new();
        while fs_err::symlink_metadata(existing).is_err() {
            match (existing.parent(), existing.file_name()) {
                (Some(parent), Some(name)) => {
                    rest.push(name.to_owned());
                    existing = parent;
                }
                _ => return current,
            }
        }
        let append = |mut base: PathBuf| {
            base.extend(rest.iter().rev());
            base
        };
        if let Ok(real) = fs_err::canonicalize(existing) {
            return append(real);
        }
        // A dangling link (or one in a loop): follow its text from its
        // folder, which exists.
        let (Ok(target), Some(parent)) = (fs_err::read_link(existing), existing.parent()) else {
            return current;
        };
        let parent = fs_err::canonicalize(parent).unwrap_or_else(|_| parent.to_path_buf());
        current = append(lexical(&parent.join(target)));
    }
    current
}

/// `path` with `.` left out and `..` taking the name before it away,
/// without looking at the disk.
fn lexical(path: &Path) -> PathBuf {
    let mut clean = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                clean.pop();
            }
            other => clean.push(other),
        }
    }
    clean
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A project folder, a home folder beside it, and a protection of the
    /// two with `allowed`.
    struct Fixture {
        _dir: tempfile::TempDir,
        root: PathBuf,
        home: PathBuf,
    }

    impl Fixture {
        fn new() -> Self {
            let dir = tempfile::tempdir().unwrap();
            let base = fs_err::canonicalize(dir.path()).unwrap();
            let root = base.join("project");
            let home = base.join("home");
            fs_err::create_dir_all(&root).unwrap();
            fs_err::create_dir_all(&home).unwrap();
            Self {
                _dir: dir,
                root,
                home,
            }
        }

        fn protection(&self, skill_folders: &[&str]) -> Protection {
            Protection::new(
                Some(&self.home),
                skill_folders.iter().map(|folder| self.root.join(folder)),
                Vec::new(),
            )
        }

        fn mkdir(&self, relative: &str) -> PathBuf {
            let path = self.root.join(relative);
            fs_err::create_dir_all(&path).unwrap();
            path
        }

        /// The refusal of a write grant on `relative` (links followed).
        fn write(&self, protection: &Protection, relative: &str) -> Option<Refusal> {
            let path = resolve(&self.root.join(relative));
            let mut budget = MAX_CHECKED;
            match protection.check_path(
                "evil",
                Access::Write,
                &format!("{relative}/**"),
                &self.root,
                &path,
                &mut budget,
            ) {
                Ok(()) => None,
                Err(Denied::Protected(refusal)) => Some(*refusal),
                Err(other) => panic!("{other}"),
            }
        }
    }

    #[test]
    fn a_grant_is_refused_for_each_kind_of_protected_path() {
        let fixture = Fixture::new();
        let protection = fixture.protection(&[]);
        for (relative, rule) in [
            (".git/hooks", Rule::Vcs),
            (".gitmodules", Rule::Vcs),
            (".claude", Rule::AgentConfig),
            (".codex/skills", Rule::AgentConfig),
            (".agents", Rule::AgentConfig),
            (".github/workflows", Rule::AgentConfig),
            (".vscode", Rule::AgentConfig),
            (".cursor", Rule::AgentConfig),
            (".idea", Rule::AgentConfig),
            (".mcp.json", Rule::AgentConfig),
            ("skills.toml", Rule::SkillpkgState),
            ("skills.lock", Rule::SkillpkgState),
            (".skillpkg", Rule::SkillpkgState),
            (".bashrc", Rule::ShellStartup),
            (".zshenv", Rule::ShellStartup),
            (".envrc", Rule::ShellStartup),
            (".config/fish", Rule::ShellStartup),
            (".config", Rule::UserConfig),
            (".ssh", Rule::Credentials),
            (".aws", Rule::Credentials),
            (".env", Rule::Credentials),
        ] {
            let refusal = fixture
                .write(&protection, relative)
                .unwrap_or_else(|| panic!("{relative} was granted"));
            assert_eq!(refusal.rule, rule, "{relative}");
            assert!(
                refusal
                    .to_string()
                    .contains(&format!("(rule `{}`)", rule.id())),
                "{refusal}"
            );
        }
        assert_eq!(fixture.write(&protection, "output"), None);
        assert_eq!(fixture.write(&protection, "src/gitstuff"), None);
    }

    #[test]
    fn names_compare_without_case_and_the_message_names_everything() {
        let fixture = Fixture::new();
        let refusal = fixture
            .write(&fixture.protection(&[]), ".GIT/Hooks")
            .unwrap();
        assert_eq!(refusal.rule, Rule::Vcs);
        assert_eq!(refusal.reach, Reach::Inside);
        assert_eq!(
            refusal.protected,
            fixture.root.join(".GIT").display().to_string()
        );
        let message = refusal.to_string();
        for part in ["skill `evil`", "`.GIT/Hooks/**`", "rule `vcs`", "writable"] {
            assert!(message.contains(part), "{part} is not in: {message}");
        }
        assert!(
            refusal
                .hint()
                .contains("--allow-grant 'evil=.GIT/Hooks/**'"),
            "{}",
            refusal.hint()
        );
    }

    #[test]
    fn a_link_into_git_is_judged_where_it_leads() {
        let fixture = Fixture::new();
        fixture.mkdir(".git/hooks");
        std::os::unix::fs::symlink(".git/hooks", fixture.root.join("out")).unwrap();
        let refusal = fixture.write(&fixture.protection(&[]), "out").unwrap();
        assert_eq!(refusal.rule, Rule::Vcs);
        // Through a link, to a folder that does not exist yet, and below it.
        std::os::unix::fs::symlink(".git/not-yet", fixture.root.join("dangling")).unwrap();
        let refusal = fixture
            .write(&fixture.protection(&[]), "dangling/sub")
            .unwrap();
        assert_eq!(refusal.rule, Rule::Vcs);
        assert!(refusal.granted.contains(".git"), "{refusal:?}");
    }

    #[test]
    fn a_grant_that_holds_git_or_a_skill_folder_or_the_home_is_refused() {
        let fixture = Fixture::new();
        fixture.mkdir("vendor/lib/.git");
        let refusal = fixture.write(&fixture.protection(&[]), "vendor").unwrap();
        assert_eq!((refusal.rule, refusal.reach), (Rule::Vcs, Reach::Contains));
        assert!(
            refusal.protected.ends_with("vendor/lib/.git"),
            "{refusal:?}"
        );

        fixture.mkdir("plugins/skills");
        let protection = fixture.protection(&["plugins/skills"]);
        let refusal = fixture.write(&protection, "plugins").unwrap();
        assert_eq!(
            (refusal.rule, refusal.reach),
            (Rule::SkillFolder, Reach::Contains)
        );
        let refusal = fixture.write(&protection, "plugins/skills/other").unwrap();
        assert_eq!(
            (refusal.rule, refusal.reach),
            (Rule::SkillFolder, Reach::Inside)
        );

        // A root that holds the home folder.
        let base = fixture.root.parent().unwrap().to_path_buf();
        let protection = Protection::new(Some(&fixture.home), [], Vec::new());
        let mut budget = MAX_CHECKED;
        let error = protection
            .check_path(
                "evil",
                Access::Read,
                "home/**",
                &base,
                &fixture.home,
                &mut budget,
            )
            .unwrap_err();
        assert!(
            matches!(&error, Denied::Protected(refusal) if refusal.rule == Rule::Home),
            "{error}"
        );
        let error = protection
            .check_path("evil", Access::Write, "**", &base, &base, &mut budget)
            .unwrap_err();
        assert!(
            matches!(&error, Denied::Protected(refusal) if refusal.rule == Rule::Home && refusal.reach == Reach::Contains),
            "{error}"
        );
    }

    #[test]
    fn reads_are_refused_only_on_credentials() {
        let fixture = Fixture::new();
        fixture.mkdir(".git");
        fixture.mkdir("docs");
        let protection = fixture.protection(&[]);
        let read = |relative: &str| {
            let mut budget = MAX_CHECKED;
            protection.check_path(
                "evil",
                Access::Read,
                relative,
                &fixture.root,
                &fixture.root.join(relative),
                &mut budget,
            )
        };
        assert!(read(".git").is_ok());
        assert!(read("docs").is_ok());
        fs_err::write(fixture.root.join("docs/.env.local"), "TOKEN=x\n").unwrap();
        let error = read("docs").unwrap_err();
        assert!(error.to_string().contains("rule `credentials`"), "{error}");
    }

    #[test]
    fn a_folder_too_big_to_check_is_refused() {
        let fixture = Fixture::new();
        let folder = fixture.mkdir("data");
        for index in 0..5 {
            fs_err::write(folder.join(format!("{index}.txt")), "").unwrap();
        }
        let mut budget = 3;
        let error = fixture
            .protection(&[])
            .check_path(
                "evil",
                Access::Write,
                "data/**",
                &fixture.root,
                &folder,
                &mut budget,
            )
            .unwrap_err();
        assert!(error.to_string().contains("too many to check"), "{error}");
    }

    #[test]
    fn the_operator_allows_exactly_one_pair() {
        let allowed: AllowedGrant = "notes=.claude/**".parse().unwrap();
        let protection = Protection::new(None, [], vec![allowed]);
        assert!(protection.allows("notes", ".claude/**"));
        assert!(!protection.allows("notes", "./.claude/**"));
        assert!(!protection.allows("other", ".claude/**"));
        assert!(!protection.allows("notes", ".claude/skills/**"));

        let permissions: Permissions = serde_json::from_value(serde_json::json!({
            "filesystem": {"write": [".claude/**"]}
        }))
        .unwrap();
        let fixture = Fixture::new();
        assert!(
            protection
                .check_declared("notes", &permissions, &fixture.root)
                .is_ok()
        );
        let error = protection
            .check_declared("other", &permissions, &fixture.root)
            .unwrap_err();
        assert!(error.to_string().contains("rule `agent-config`"), "{error}");

        assert!(
            error
                .hint()
                .unwrap()
                .contains(r"--allow-grant 'other=.claude/**'"),
            "{:?}",
            error.hint()
        );
        for bad in ["notes", "Notes=x", "notes=", "=x"] {
            assert!(bad.parse::<AllowedGrant>().is_err(), "{bad}");
        }
    }

    #[test]
    fn declared_grants_are_judged_by_their_text_too() {
        let fixture = Fixture::new();
        let protection = fixture.protection(&[]);
        let declared = |access: &str, glob: &str| {
            let permissions: Permissions =
                serde_json::from_value(serde_json::json!({ "filesystem": { access: [glob] } }))
                    .unwrap();
            protection.check_declared("evil", &permissions, &fixture.root)
        };
        // Nothing of these exists: the text is enough.
        assert!(declared("write", "out/*/.git/**").is_err());
        assert!(declared("write", "*.md").is_err());
        assert!(declared("read", "**/*.pem").is_err());
        assert!(declared("write", "output/**").is_ok());
        assert!(declared("read", "**/*.pdf").is_ok());
        assert!(declared("read", ".git/**").is_ok());
    }

    #[test]
    fn resolve_follows_links_through_missing_parts() {
        let fixture = Fixture::new();
        fixture.mkdir("real");
        std::os::unix::fs::symlink("real", fixture.root.join("link")).unwrap();
        assert_eq!(
            resolve(&fixture.root.join("link/a/b")),
            fixture.root.join("real/a/b")
        );
        assert_eq!(
            resolve(&fixture.root.join("./x/../real")),
            fixture.root.join("real")
        );
    }
}
