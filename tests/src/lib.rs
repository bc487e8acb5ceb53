//! Shared support for the end-to-end tests: find the real binaries, run them
//! in a temporary home with a clean environment, and build skill folders.
//!
//! The binaries are the ones `cargo test --workspace` builds next to the test
//! executables (the `skillpkg` and `skillpkg-registry` packages each have an
//! integration test, which makes cargo build their binaries first).

use std::path::{Path, PathBuf};
use std::process::Command;

/// Returns the path of a workspace binary built by this `cargo test` run.
pub fn binary(name: &str) -> PathBuf {
    let test_exe = std::env::current_exe().expect("the test knows its own path");
    // target/<profile>/deps/<test>-<hash> -> target/<profile>/<name>
    let profile_dir = test_exe
        .parent()
        .and_then(Path::parent)
        .expect("test executables live in target/<profile>/deps");
    let path = profile_dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    assert!(
        path.exists(),
        "{} is missing: run the tests with `cargo test --workspace`, which builds it",
        path.display()
    );
    path
}

/// The finished run of a command.
#[derive(Debug)]
pub struct Output {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    /// Parses stdout as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|error| panic!("stdout is not JSON ({error}):\n{}", self.stdout))
    }
}

/// A sandbox: a temporary folder that is the home, the working folder and
/// the place for test files of one test.
#[derive(Debug)]
pub struct Sandbox {
    dir: tempfile::TempDir,
}

impl Default for Sandbox {
    fn default() -> Self {
        Self::new()
    }
}

impl Sandbox {
    /// Creates an empty sandbox.
    pub fn new() -> Self {
        Self {
            dir: tempfile::tempdir().expect("temporary folder"),
        }
    }

    /// Returns the sandbox's root.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Returns a `skillpkg` command that runs in the sandbox with a clean
    /// environment (no colour, home in the sandbox).
    pub fn skillpkg(&self) -> Command {
        self.command(&binary("skillpkg"))
    }

    /// Returns a `skillpkg-registry` command set up like [`Self::skillpkg`].
    pub fn registry(&self) -> Command {
        self.command(&binary("skillpkg-registry"))
    }

    fn command(&self, program: &Path) -> Command {
        let mut command = Command::new(program);
        command
            .current_dir(self.path())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.path())
            .env("NO_COLOR", "1");
        command
    }

    /// Writes `contents` to `relative` under the sandbox, creating folders.
    pub fn write(&self, relative: &str, contents: impl AsRef<[u8]>) -> PathBuf {
        let path = self.path().join(relative);
        fs_err::create_dir_all(path.parent().expect("a file has a parent"))
            .expect("create folders");
        fs_err::write(&path, contents).expect("write file");
        path
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
}

/// Runs `command` to completion.
pub fn run(command: &mut Command) -> Output {
    let output = command
        .output()
        .unwrap_or_else(|error| panic!("cannot run {command:?}: {error}"));
    Output {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// Sets or clears the exec bits of a file.
#[cfg(unix)]
pub fn set_executable(path: &Path, executable: bool) {
    use std::os::unix::fs::PermissionsExt;
    let mode = if executable { 0o755 } else { 0o644 };
    fs_err::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

/// Returns true if and only if the file has an exec bit.
#[cfg(unix)]
pub fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    fs_err::metadata(path).expect("stat").permissions().mode() & 0o111 != 0
}
