//! Which files are programs, by their names, folders and modes: what the
//! script rules read, and what the audit must read whole or report.
//!
//! A file is a program when something runs it: a shell or an interpreter
//! by its extension (`.sh`, `.py`, `.ps1`), a tool by its name (`make`
//! reads `Makefile`, `npm` runs the `scripts` of `package.json`, direnv
//! sources `.envrc`, Python's `site` runs the `import` lines of a `.pth`
//! file, Docker the `RUN` lines of a `Dockerfile`, GitHub the `run:`
//! blocks of a workflow), git by its folder (`hooks/`), the kernel by its
//! executable bit (a file without `#!` runs as a shell script), or by the
//! `#!` line it starts with ([`super::decode::Reading::has_shebang`]).

use super::text::FileKind;
use crate::skill::SKILL_MD;

/// Extensions of programs, lower case.
const SCRIPT_EXTENSIONS: &[&str] = &[
    "py",
    "pyw",
    "pth",
    "sh",
    "bash",
    "zsh",
    "ksh",
    "csh",
    "tcsh",
    "fish",
    "command",
    "js",
    "mjs",
    "cjs",
    "jsx",
    "ts",
    "mts",
    "cts",
    "tsx",
    "coffee",
    "rb",
    "rake",
    "gemspec",
    "pl",
    "pm",
    "php",
    "lua",
    "r",
    "tcl",
    "awk",
    "swift",
    "kt",
    "kts",
    "scala",
    "groovy",
    "gradle",
    "jl",
    "ex",
    "exs",
    "clj",
    "dart",
    "el",
    "vim",
    "nu",
    "ps1",
    "psm1",
    "psd1",
    "bat",
    "cmd",
    "vbs",
    "vbe",
    "jse",
    "wsf",
    "wsh",
    "hta",
    "ahk",
    "au3",
    "applescript",
    "scpt",
    "go",
    "rs",
    "java",
    "cs",
    "mk",
    "mak",
    "just",
    "cmake",
    "bzl",
    "dockerfile",
    "containerfile",
    "gitconfig",
    // A database shell runs a file's dot-commands (`.shell`, `.once |sh`)
    // and meta-commands (`\!`, `\o |sh`) as well as its queries.
    "sql",
];

/// Names of files that tools run, lower case.
const SCRIPT_NAMES: &[&str] = &[
    // Build and task runners.
    "makefile",
    "gnumakefile",
    "bsdmakefile",
    "justfile",
    ".justfile",
    "taskfile.yml",
    "taskfile.yaml",
    "taskfile.dist.yml",
    "taskfile.dist.yaml",
    "rakefile",
    "cmakelists.txt",
    "meson.build",
    "build.bazel",
    "workspace",
    "workspace.bazel",
    "jenkinsfile",
    "procfile",
    // Package manifests whose scripts run at install or on request.
    "package.json",
    "deno.json",
    "deno.jsonc",
    "composer.json",
    "pyproject.toml",
    "tox.ini",
    "gemfile",
    "vagrantfile",
    "brewfile",
    // Containers.
    "dockerfile",
    "containerfile",
    // Shells' start-up files and direnv.
    ".envrc",
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".zlogout",
    ".kshrc",
    ".cshrc",
    ".tcshrc",
    ".login",
    // CI and hook managers.
    ".gitlab-ci.yml",
    ".travis.yml",
    "azure-pipelines.yml",
    "bitbucket-pipelines.yml",
    ".drone.yml",
    "action.yml",
    "action.yaml",
    ".pre-commit-config.yaml",
    ".pre-commit-hooks.yaml",
    "lefthook.yml",
    "lefthook.yaml",
    ".lefthook.yml",
    // Configuration that makes a tool run a command or code: git
    // (`core.fsmonitor`, `core.sshCommand`, `!` aliases, filters), npm
    // and yarn (`node-options`, `script-shell`, `yarnPath`), bun's
    // preloads, pylint's `init-hook`, debuggers', database shells' and
    // REPLs' start-up files, ssh's `ProxyCommand`, curl's and wget's
    // defaults, Mercurial's hooks.
    ".gitconfig",
    "gitconfig",
    ".npmrc",
    ".yarnrc",
    ".yarnrc.yml",
    "bunfig.toml",
    ".bunfig.toml",
    ".pylintrc",
    "pylintrc",
    ".pdbrc",
    ".pythonrc",
    ".pythonrc.py",
    ".irbrc",
    ".pryrc",
    ".gdbinit",
    ".lldbinit",
    ".psqlrc",
    ".sqliterc",
    ".tmux.conf",
    ".screenrc",
    ".curlrc",
    ".wgetrc",
    ".hgrc",
    "ssh_config",
    // Editors and agents that run what these name when a folder opens.
    ".mcp.json",
    "devcontainer.json",
    ".devcontainer.json",
];

/// Name prefixes of files that tools run: `Makefile.am`, `Dockerfile.dev`.
const SCRIPT_NAME_PREFIXES: &[&str] = &["makefile.", "dockerfile.", "containerfile."];

/// Folders whose files run: skills' `scripts/`, git hooks and hook managers.
const SCRIPT_FOLDERS: &[&str] = &["scripts", "hooks", ".githooks", ".husky"];

/// Paths (ends of paths, lower case) of files that editors and agents run
/// from when a folder opens.
const SCRIPT_PATHS: &[&str] = &[
    ".vscode/tasks.json",
    ".vscode/mcp.json",
    ".cursor/mcp.json",
    ".claude/settings.json",
    ".claude/settings.local.json",
    ".ssh/config",
    ".git/config",
];

/// Extensions of documents an agent reads.
const DOCUMENT_EXTENSIONS: &[&str] = &["md", "markdown", "mdx", "txt", "rst", "adoc", "org"];

/// What a file is by its path and mode, before its text is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Named {
    /// What the file is by its name and folder.
    pub kind: FileKind,
    /// True if and only if the file is a program too: a `SKILL.md` or a
    /// document with an executable bit. It is read by the script rules
    /// and by those of its kind, so that no mode or `#!` line takes a
    /// document out of the rules about instructions.
    pub runs: bool,
    /// True if and only if the audit must read the file whole as text,
    /// and report it when it cannot: programs, `SKILL.md`, and documents
    /// by their extension. Other files (data, and binary assets in any
    /// folder, `references/` too) are noted when binary.
    pub must_read: bool,
}

impl Named {
    /// Returns the kinds whose rules read the file, given whether its
    /// text starts with `#!`: the script rules first, so that where the
    /// two judge a line differently the script's severity is the one
    /// kept.
    pub(crate) fn kinds(self, shebang: bool) -> Vec<FileKind> {
        let runs = self.runs || shebang;
        match self.kind {
            FileKind::Script => vec![FileKind::Script],
            // The script rules include what other text is read for.
            FileKind::Other if runs => vec![FileKind::Script],
            kind if runs => vec![FileKind::Script, kind],
            kind => vec![kind],
        }
    }
}

/// Suffixes of templates and examples of a file (`envrc.template`,
/// `.gitconfig.example`, `bashrc.tmpl`).
const TEMPLATE_SUFFIXES: &[&str] = &[
    ".template",
    ".tmpl",
    ".tpl",
    ".example",
    ".sample",
    ".dist",
    ".j2",
    ".jinja",
    ".in",
];

/// True when `file_name` (lower case) is a template or an example of a
/// file that tools run, with or without its leading dot: what a skill
/// copies into place as `.envrc` or `.gitconfig` runs as one.
fn template_of_a_script(file_name: &str) -> bool {
    let Some(stem) = TEMPLATE_SUFFIXES
        .iter()
        .find_map(|suffix| file_name.strip_suffix(suffix))
        .or_else(|| (!file_name.starts_with('.')).then_some(file_name))
    else {
        return false;
    };
    // Without its dot only where the name says what it is (`envrc`,
    // `bash_profile`), not a word such as `profile` or `login`.
    let telling = stem.ends_with("rc")
        || matches!(
            stem,
            "gitconfig"
                | "bash_profile"
                | "bash_login"
                | "bash_logout"
                | "zprofile"
                | "zshenv"
                | "tmux.conf"
        );
    SCRIPT_NAMES.contains(&stem)
        || telling && !stem.starts_with('.') && SCRIPT_NAMES.contains(&format!(".{stem}").as_str())
}

/// Returns what the file at `path` (relative, `/`-separated) is by its
/// name, folder and executable bit.
pub(crate) fn by_name(path: &str, executable: bool) -> Named {
    let lowered = path.to_ascii_lowercase();
    let (folders, file_name) = lowered.rsplit_once('/').unwrap_or(("", &lowered));
    let extension = file_name
        .rsplit_once('.')
        .map(|(_, extension)| extension)
        .filter(|_| !file_name.starts_with('.') || file_name.matches('.').count() > 1);
    let has = |list: &[&str]| extension.is_some_and(|extension| list.contains(&extension));
    let is_document = has(DOCUMENT_EXTENSIONS);
    if path.eq_ignore_ascii_case(SKILL_MD) {
        return Named {
            kind: FileKind::SkillMd,
            runs: executable,
            must_read: true,
        };
    }
    let in_script_folder = folders
        .split('/')
        .any(|folder| SCRIPT_FOLDERS.contains(&folder));
    let in_workflows = (folders == ".github/workflows" || folders.ends_with("/.github/workflows"))
        && (has(&["yml", "yaml"]));
    let script = has(SCRIPT_EXTENSIONS)
        || SCRIPT_NAMES.contains(&file_name)
        || template_of_a_script(file_name)
        || SCRIPT_NAME_PREFIXES
            .iter()
            .any(|prefix| file_name.starts_with(prefix))
        || SCRIPT_PATHS
            .iter()
            .any(|end| lowered == *end || lowered.ends_with(&format!("/{end}")))
        || in_workflows
        // The kernel runs an executable file without `#!` as a shell
        // script. A document in `scripts/` (a README) stays a document.
        || executable && !is_document
        || in_script_folder && !is_document;
    let (kind, must_read) = if script {
        (FileKind::Script, true)
    } else if is_document {
        (FileKind::Document, true)
    } else if lowered.starts_with("references/") {
        (FileKind::Document, false)
    } else {
        (FileKind::Other, false)
    };
    Named {
        kind,
        runs: executable,
        must_read: must_read || executable,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(path: &str) -> FileKind {
        by_name(path, false).kind
    }

    #[test]
    fn files_that_tools_run_are_programs() {
        for path in [
            "Makefile",
            "build/GNUmakefile",
            "rules.mk",
            "justfile",
            "Taskfile.yml",
            "package.json",
            ".envrc",
            "site/evil.pth",
            "Dockerfile",
            "docker/Dockerfile.dev",
            "setup.py",
            "hooks/pre-commit",
            ".husky/pre-push",
            "hooks/hooks.json",
            ".github/workflows/ci.yml",
            ".vscode/tasks.json",
            "CMakeLists.txt",
            "scripts/data.json",
            "assets/run.PS1",
            "config/conventions.gitconfig",
            "templates/.gitconfig",
            ".npmrc",
            "presets/.pylintrc",
            "assets/ssh_config",
            "dotfiles/.ssh/config",
            "assets/.tmux.conf",
            "assets/envrc.template",
            "templates/bashrc",
            "templates/.gitconfig.example",
            "Makefile.in",
        ] {
            assert_eq!(kind(path), FileKind::Script, "{path}");
        }
    }

    #[test]
    fn documents_data_and_assets_are_not() {
        assert_eq!(kind("SKILL.md"), FileKind::SkillMd);
        assert_eq!(kind("references/guide.md"), FileKind::Document);
        assert_eq!(kind("scripts/README.md"), FileKind::Document);
        assert_eq!(kind("hooks/README.md"), FileKind::Document);
        assert_eq!(kind("assets/logo.png"), FileKind::Other);
        assert_eq!(kind("assets/config.yaml"), FileKind::Other);
        assert_eq!(kind(".github/ISSUE_TEMPLATE/bug.yml"), FileKind::Other);
        assert_eq!(kind(".env"), FileKind::Other);
        assert_eq!(kind("assets/profile"), FileKind::Other);
        assert_eq!(kind("assets/login.template"), FileKind::Other);
        assert_eq!(kind("assets/config.example"), FileKind::Other);
        assert!(!by_name("references/manual.pdf", false).must_read);
        assert!(by_name("references/manual.md", false).must_read);
    }

    #[test]
    fn an_executable_bit_or_a_shebang_makes_a_program_and_keeps_a_document_a_document() {
        assert_eq!(
            by_name("assets/logo.png", true).kinds(false),
            [FileKind::Script]
        );
        assert_eq!(by_name("tool", true).kinds(false), [FileKind::Script]);
        assert_eq!(
            by_name("references/notes.md", true).kinds(false),
            [FileKind::Script, FileKind::Document]
        );
        assert_eq!(
            by_name("references/notes.md", false).kinds(true),
            [FileKind::Script, FileKind::Document]
        );
        assert_eq!(
            by_name("references/notes.md", false).kinds(false),
            [FileKind::Document]
        );
        assert_eq!(
            by_name("assets/data.cfg", false).kinds(true),
            [FileKind::Script]
        );
        assert!(by_name("references/manual.pdf", true).must_read);
    }
}
