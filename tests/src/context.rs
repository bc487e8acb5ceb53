//! The one place an end-to-end test runs `skillpkg` from: a temporary
//! folder that is the home, the working folder and the place for the test's
//! files, and a command whose environment holds nothing of the host's.
//!
//! The environment is cleared (no `SKILLPKG_*`, `XDG_*` or colour settings
//! of the machine that runs the tests leak in) and the config, cache and
//! state folders are named explicitly, inside the home, where the platform
//! defaults would put them: a test that wants another folder sets the
//! variable again on the command.
//!
//! Output that is checked as a whole goes through [`TestContext::redact`]
//! before `insta` compares it: the parts that differ from run to run (the
//! temporary folder, loopback ports, measured durations, clock times, key
//! ids of freshly generated keys) become placeholders, so a snapshot says
//! exactly what a user reads and still holds on every machine.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::LazyLock;

use regex::Regex;

use crate::{Output, binary, run};

/// A temporary home for one test, removed when dropped.
#[derive(Debug)]
pub struct TestContext {
    dir: tempfile::TempDir,
}

impl Default for TestContext {
    fn default() -> Self {
        Self::new()
    }
}

impl TestContext {
    /// Creates an empty home.
    pub fn new() -> Self {
        Self {
            dir: tempfile::tempdir().expect("temporary folder"),
        }
    }

    /// Creates an empty home inside `base` (a RAM disk, another file
    /// system).
    pub fn new_in(base: &Path) -> Self {
        Self {
            dir: tempfile::tempdir_in(base).expect("temporary folder"),
        }
    }

    /// Returns the home: the working folder of every command.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Runs `skillpkg ARGS` in the home and returns what it did.
    pub fn skillpkg<I, S>(&self, args: I) -> Output
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        run(self.skillpkg_command().args(args))
    }

    /// Returns a `skillpkg` command that runs in the home with a clean
    /// environment, for a test that sets more (a folder, a variable, stdin).
    pub fn skillpkg_command(&self) -> Command {
        self.command(&binary("skillpkg"))
    }

    /// Runs `skillpkg ARGS` in the folder `project` as the sandbox's user:
    /// the user configuration in `<home>/user`, the cache in `<cache>`,
    /// and no delay between retries.
    pub fn user_in(&self, project: &Path, cache: &Path, args: &[&str]) -> Output {
        run(self
            .skillpkg_command()
            .current_dir(project)
            .args(args)
            .env("SKILLPKG_CONFIG_DIR", self.path().join("user"))
            .env("SKILLPKG_CACHE_DIR", cache)
            .env("SKILLPKG_TEST_NO_RETRY_DELAY", "1"))
    }

    /// Returns a `skillpkg-registry` command set up like
    /// [`Self::skillpkg_command`].
    pub fn registry(&self) -> Command {
        self.command(&binary("skillpkg-registry"))
    }

    /// Returns `skillpkg mcp --project <home>/project EXTRA...`, with its
    /// config and cache folders in the home.
    pub fn mcp(&self, extra: &[&str]) -> Command {
        let mut command = self.skillpkg_command();
        command
            .arg("mcp")
            .arg("--project")
            .arg(self.path().join("project"))
            .args(extra)
            .env("HOME", self.path().join("home"))
            .env("SKILLPKG_CONFIG_DIR", self.path().join("config"))
            .env("SKILLPKG_CACHE_DIR", self.path().join("cache"));
        command
    }

    fn command(&self, program: &Path) -> Command {
        command_in(self.path(), program)
    }

    /// Writes `contents` to `relative` under the home, creating folders.
    pub fn write(&self, relative: &str, contents: impl AsRef<[u8]>) -> PathBuf {
        let path = self.path().join(relative);
        fs_err::create_dir_all(path.parent().expect("a file has a parent"))
            .expect("create folders");
        fs_err::write(&path, contents).expect("write file");
        path
    }

    /// Writes the skill `name` into `project/.claude/skills/` (as
    /// [`Self::skill`], with the heading `# name` as its body) and its
    /// `files` (path in the skill, contents) beside it.
    pub fn project_skill(&self, name: &str, extra: &str, files: &[(&str, &str)]) -> PathBuf {
        let folder = format!("project/.claude/skills/{name}");
        self.skill(&folder, name, extra, &format!("# {name}\n"));
        for (path, contents) in files {
            self.write(&format!("{folder}/{path}"), contents);
        }
        self.path().join(folder)
    }

    /// Writes a skill folder `relative` whose SKILL.md has `name`,
    /// a description, the `extra` frontmatter lines and `body`.
    pub fn skill(&self, relative: &str, name: &str, extra: &str, body: &str) -> PathBuf {
        let text = format!(
            "---\nname: {name}\ndescription: Does {name} things. Use when testing.\n{extra}---\n{body}"
        );
        self.write(&format!("{relative}/SKILL.md"), text);
        self.path().join(relative)
    }

    /// Returns `text` with what differs from run to run replaced, for a
    /// snapshot: this home as `[HOME]`, the repository as `[REPO]`, any
    /// other temporary folder as `[TEMP]`, the random part of skillpkg's
    /// temporary names as `[RANDOM]`, loopback ports as `[PORT]`, measured
    /// durations and clock times as `[TIME]`.
    pub fn redact(&self, text: &str) -> String {
        apply(&TIMES, &self.redact_paths(text))
    }

    /// [`Self::redact`], and also the ids of signing keys (16 hexadecimal
    /// digits) as `[KEYID]` and SHA-256 digests as `[SHA256]`: for output
    /// that names keys generated by the test or digests of what they sign.
    pub fn redact_ids(&self, text: &str) -> String {
        apply(&IDS, &self.redact(text))
    }

    /// Only the home, temporary folders, ports and measured durations, for
    /// output whose clock times are fixed by the test and worth checking.
    pub fn redact_paths(&self, text: &str) -> String {
        let mut text = text.to_owned();
        let home = self.path();
        let canonical = home.canonicalize().unwrap_or_else(|_| home.to_owned());
        for path in [canonical.as_path(), home] {
            text = text.replace(&path.display().to_string(), "[HOME]");
        }
        apply(&PATHS, &text)
    }
}

/// The checkout the tests run from, shown as `[REPO]` (fixtures live there).
static REPOSITORY: LazyLock<String> = LazyLock::new(|| {
    let tests = Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = tests.parent().expect("tests/ is in the repository");
    root.canonicalize()
        .unwrap_or_else(|_| root.to_owned())
        .display()
        .to_string()
});

/// [`TestContext::redact`] for the output of a command run outside any
/// test home (a `skillpkg-registry` admin command on a data folder of its
/// own): temporary folders become `[TEMP]`.
pub fn redact(text: &str) -> String {
    apply(&TIMES, &apply(&PATHS, text))
}

type Filters = LazyLock<Vec<(Regex, &'static str)>>;

fn apply(filters: &Filters, text: &str) -> String {
    let mut text = text.to_owned();
    for (pattern, replacement) in filters.iter() {
        text = pattern.replace_all(&text, *replacement).into_owned();
    }
    text
}

fn compile(filters: Vec<(String, &'static str)>) -> Vec<(Regex, &'static str)> {
    filters
        .into_iter()
        .map(|(pattern, replacement)| (Regex::new(&pattern).expect("a valid filter"), replacement))
        .collect()
}

/// What [`TestContext::redact_paths`] replaces after the home, in order.
static PATHS: Filters = LazyLock::new(|| {
    let temp = regex::escape(&std::env::temp_dir().display().to_string());
    let temp = temp.trim_end_matches('/');
    compile(vec![
        (regex::escape(&REPOSITORY), "[REPO]"),
        // tempfile's folders: `.tmp` and six random characters.
        (format!(r"{temp}/\.tmp[0-9A-Za-z]{{6}}"), "[TEMP]"),
        // skillpkg's own temporary names: a random suffix of six.
        (
            r"(\.skillpkg-[a-z0-9-]*-)[0-9A-Za-z]{6}\b".to_owned(),
            "$1[RANDOM]",
        ),
        (
            r"(127\.0\.0\.1|localhost|\[::1\]):\d{2,5}".to_owned(),
            "$1:[PORT]",
        ),
        // Measured durations have a fraction; configured ones do not.
        (r"\b\d+\.\d+ ?(ns|µs|us|ms|s)\b".to_owned(), "[TIME]"),
    ])
});

/// What [`TestContext::redact`] adds: clock times (RFC 3339).
static TIMES: Filters = LazyLock::new(|| {
    compile(vec![(
        r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:?\d{2})?".to_owned(),
        "[TIME]",
    )])
});

/// What [`TestContext::redact_ids`] adds.
static IDS: Filters = LazyLock::new(|| {
    compile(vec![
        (r"\b[0-9a-f]{64}\b".to_owned(), "[SHA256]"),
        (r"\b[0-9A-F]{16}\b".to_owned(), "[KEYID]"),
    ])
});

/// Returns `program` to run in `home` with a clean environment: no colour,
/// and the config, cache and state folders below the home.
pub(crate) fn command_in(home: &Path, program: &Path) -> Command {
    let mut command = Command::new(program);
    command
        .current_dir(home)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("NO_COLOR", "1")
        // The platform defaults below the home, named so that nothing
        // depends on how the platform derives them.
        .env("SKILLPKG_CONFIG_DIR", home.join(".config"))
        .env("SKILLPKG_CACHE_DIR", home.join(".cache/skillpkg"))
        .env("SKILLPKG_STATE_DIR", home.join(".local/state/skillpkg"));
    command
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redact_replaces_only_what_differs_from_run_to_run() {
        let ctx = TestContext::new();
        let other = tempfile::tempdir().unwrap();
        let text = format!(
            "installed into {home}/project/.claude/skills from http://127.0.0.1:40123/ \
             and {other}/x in 0.52s at 2026-11-23T19:25:03Z; timeout 30s; pdf@1.0.0",
            home = ctx.path().display(),
            other = other.path().display(),
        );
        assert_eq!(
            ctx.redact(&text),
            "installed into [HOME]/project/.claude/skills from http://127.0.0.1:[PORT]/ \
             and [TEMP]/x in [TIME] at [TIME]; timeout 30s; pdf@1.0.0"
        );
        let key = "key 0123456789ABCDEF signed sha256:".to_owned() + &"ab".repeat(32);
        assert_eq!(ctx.redact_ids(&key), "key [KEYID] signed sha256:[SHA256]");
        assert_eq!(ctx.redact(&key), key, "ids stay unless asked for");
        let fixed = "published:  2026-11-22T10:00:00Z";
        assert_eq!(ctx.redact_paths(fixed), fixed);
    }
}

/// A project in its own sandbox, initialised to install from the example
/// registry checked in under `examples/registry` (whose skills are not
/// signed, so installs pass `--allow-unsigned`).
#[derive(Debug)]
pub struct ExampleProject {
    pub sandbox: TestContext,
    /// The project folder, `<sandbox>/project`.
    pub root: PathBuf,
}

impl ExampleProject {
    /// Runs `skillpkg init --registry <examples/registry> INIT...` in a new
    /// project, which must succeed.
    pub fn new(init: &[&str]) -> Self {
        let sandbox = TestContext::new();
        let root = sandbox.path().join("project");
        fs_err::create_dir_all(&root).unwrap();
        let project = Self { sandbox, root };
        let registry = Self::registry();
        let mut args = vec!["init", "--registry", registry.to_str().unwrap()];
        args.extend(init);
        let output = project.run(&args);
        assert_eq!(output.code, 0, "{output:?}");
        project
    }

    /// The example registry's folder.
    pub fn registry() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("the tests crate is in the workspace")
            .join("examples/registry")
    }

    /// Runs `skillpkg ARGS` in the project.
    pub fn run(&self, args: &[&str]) -> Output {
        run(self
            .sandbox
            .skillpkg_command()
            .current_dir(&self.root)
            .args(args))
    }

    /// skills.toml's text.
    pub fn manifest(&self) -> String {
        fs_err::read_to_string(self.root.join("skills.toml")).unwrap()
    }
}
