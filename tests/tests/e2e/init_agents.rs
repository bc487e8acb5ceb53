//! `init` with every agent of the table (docs/agents.md): `--agent ID`
//! writes the fewest folders those agents read, a bare `init` takes the
//! agents installed in the (temporary) home folder, and `add` installs into
//! the folders written, one copy with `--link`.

use std::path::PathBuf;

use skillpkg_tests::{ExampleProject, Output, TestContext, run};

const SKILL: &str = "pdf-processing";

/// A sandbox home with an empty project in it, using the example registry.
struct Home {
    sandbox: TestContext,
    project: PathBuf,
}

impl Home {
    fn new() -> Self {
        let sandbox = TestContext::new();
        let project = sandbox.path().join("project");
        fs_err::create_dir_all(&project).unwrap();
        Self { sandbox, project }
    }

    /// Makes `~/FOLDER`, as an installed agent leaves it.
    fn installed(&self, folder: &str) {
        fs_err::create_dir_all(self.sandbox.path().join(folder)).unwrap();
    }

    /// Runs skillpkg in the project, without a terminal.
    fn run(&self, args: &[&str]) -> Output {
        run(self
            .sandbox
            .skillpkg_command()
            .current_dir(&self.project)
            .args(args))
    }

    /// `init --registry <examples/registry> ARGS`.
    fn init(&self, args: &[&str]) -> Output {
        let registry = ExampleProject::registry();
        let mut all = vec!["init", "--registry", registry.to_str().unwrap()];
        all.extend(args);
        self.run(&all)
    }

    fn manifest(&self) -> String {
        fs_err::read_to_string(self.project.join("skills.toml")).unwrap()
    }

    /// What is at `<target>/pdf-processing`: `link:TEXT` or `folder`.
    fn entry(&self, target: &str) -> String {
        let path = self.project.join(target).join(SKILL);
        let metadata = fs_err::symlink_metadata(&path).unwrap();
        if metadata.file_type().is_symlink() {
            format!("link:{}", fs_err::read_link(&path).unwrap().display())
        } else {
            assert!(path.join("SKILL.md").is_file(), "{}", path.display());
            "folder".to_owned()
        }
    }
}

#[test]
fn init_with_cursor_windsurf_and_claude_code_writes_two_folders_and_link_keeps_one_copy() {
    let home = Home::new();
    let init = home.init(&["--agent", "cursor,windsurf,claude-code", "--link"]);
    assert_eq!(init.code, 0, "{init:?}");
    let manifest = home.manifest();
    assert!(
        manifest.contains("targets = [\"claude\", \".windsurf/skills\"]\nlink = true"),
        "{manifest}"
    );
    for line in [
        "Target claude: .claude/skills (read by claude-code and cursor)",
        "Target .windsurf/skills: .windsurf/skills (read by windsurf)",
        "Link one copy of each skill in claude, symlinks to it in .windsurf/skills",
    ] {
        assert!(init.stderr.contains(line), "{line}: {}", init.stderr);
    }
    // `--agent` is the answer: nothing is looked for.
    assert!(!init.stderr.contains("Detected"), "{}", init.stderr);

    let added = home.run(&["add", SKILL, "--allow-unsigned"]);
    assert_eq!(added.code, 0, "{added:?}");
    assert_eq!(home.entry(".claude/skills"), "folder");
    assert_eq!(
        home.entry(".windsurf/skills"),
        format!("link:../../.claude/skills/{SKILL}")
    );
    assert!(
        home.project
            .join(".windsurf/skills")
            .join(SKILL)
            .join("SKILL.md")
            .is_file(),
        "Windsurf reads the copy through the link"
    );
    let verify = home.run(&["verify"]);
    assert_eq!(verify.code, 0, "{verify:?}");
}

#[test]
fn init_without_a_terminal_takes_the_agents_installed_in_the_home_folder() {
    let home = Home::new();
    home.installed(".cursor");
    home.installed(".gemini");
    let init = home.init(&["--link"]);
    assert_eq!(init.code, 0, "{init:?}");
    let root = home.sandbox.path();
    for line in [
        format!(
            "Detected cursor ({} exists)",
            root.join(".cursor").display()
        ),
        format!(
            "Detected gemini-cli ({} exists)",
            root.join(".gemini").display()
        ),
        // Both read .agents/skills: one folder serves them.
        "Target agents: .agents/skills (read by cursor and gemini-cli)".to_owned(),
    ] {
        assert!(init.stderr.contains(&line), "{line}: {}", init.stderr);
    }
    assert_eq!(
        init.stderr.matches("Detected").count(),
        2,
        "{}",
        init.stderr
    );
    assert!(
        home.manifest().contains("targets = [\"agents\"]"),
        "{}",
        home.manifest()
    );

    let added = home.run(&["add", SKILL, "--allow-unsigned"]);
    assert_eq!(added.code, 0, "{added:?}");
    assert_eq!(home.entry(".agents/skills"), "folder");
    assert!(!home.project.join(".claude").exists());
    // A fresh clone: install puts the skill back where the agents read it.
    fs_err::remove_dir_all(home.project.join(".agents")).unwrap();
    let installed = home.run(&["install"]);
    assert_eq!(installed.code, 0, "{installed:?}");
    assert_eq!(home.entry(".agents/skills"), "folder");
}

#[test]
fn init_json_lists_the_agents_detected_and_who_reads_each_target() {
    let home = Home::new();
    home.installed(".codeium/windsurf");
    home.installed("claude-config");
    let init = run(home
        .sandbox
        .skillpkg_command()
        .current_dir(&home.project)
        .args(["init", "--json"])
        // Claude Code's folder is where CLAUDE_CONFIG_DIR says.
        .env(
            "CLAUDE_CONFIG_DIR",
            home.sandbox.path().join("claude-config"),
        ));
    assert_eq!(init.code, 0, "{init:?}");
    let document = init.json();
    let root = home.sandbox.path();
    assert_eq!(
        document["detected"],
        serde_json::json!([
            { "agent": "claude-code", "name": "Claude Code", "found": root.join("claude-config") },
            { "agent": "windsurf", "name": "Windsurf", "found": root.join(".codeium/windsurf") },
        ])
    );
    assert_eq!(
        document["agents"],
        serde_json::json!(["claude-code", "windsurf"])
    );
    assert_eq!(
        document["targets"],
        serde_json::json!([
            {
                "target": "claude",
                "folder": ".claude/skills",
                "agents": ["claude-code"],
                "why": ".claude/skills (read by claude-code)",
            },
            {
                "target": ".windsurf/skills",
                "folder": ".windsurf/skills",
                "agents": ["windsurf"],
                "why": ".windsurf/skills (read by windsurf)",
            },
        ])
    );
}

#[test]
fn init_with_nothing_installed_writes_the_claude_target() {
    let home = Home::new();
    let init = home.init(&[]);
    assert_eq!(init.code, 0, "{init:?}");
    assert!(!init.stderr.contains("Detected"), "{}", init.stderr);
    assert!(
        home.manifest().contains("targets = [\"claude\"]"),
        "{}",
        home.manifest()
    );
}

#[test]
fn an_unknown_agent_is_refused_with_the_ids_close_to_it() {
    let home = Home::new();
    let init = home.init(&["--agent", "claude-code,curser"]);
    assert_eq!(init.code, 2, "a usage error: {init:?}");
    assert!(
        init.stderr
            .contains("no agent has the id `curser`; close ids: cursor"),
        "{}",
        init.stderr
    );
    assert!(init.stderr.contains("docs/agents.md"), "{}", init.stderr);
    assert!(!home.project.join("skills.toml").exists());
    // The names `--agent` took before the table still work.
    let aliases = home.init(&["--agent", "claude,github-copilot"]);
    assert_eq!(aliases.code, 0, "{aliases:?}");
    assert!(
        home.manifest().contains("targets = [\"claude\"]"),
        "{}",
        home.manifest()
    );
}

#[test]
fn on_a_terminal_init_offers_the_agents_detected_and_enter_takes_them() {
    let home = Home::new();
    home.installed(".cursor");
    home.installed(".gemini");
    let root = home.sandbox.path();
    // Variables of the test's own environment must not find other agents.
    let unset = root.join("unset");
    let (success, transcript) = skillpkg_tests::on_terminal(
        &skillpkg_tests::binary("skillpkg"),
        &["init"],
        &home.project,
        &[
            ("HOME", root),
            ("XDG_CONFIG_HOME", &unset),
            ("CLAUDE_CONFIG_DIR", &unset),
            ("CODEX_HOME", &unset),
            ("COPILOT_HOME", &unset),
        ],
        "Which agent tools does this project use?",
        "",
    );
    assert!(success, "{transcript}");
    for offered in [
        "1) cursor (Cursor, detected)",
        "2) gemini-cli (Gemini CLI, detected)",
        "3) claude-code (Claude Code)",
        "Enter for cursor gemini-cli",
    ] {
        assert!(transcript.contains(offered), "{offered}: {transcript}");
    }
    assert!(
        home.manifest().contains("targets = [\"agents\"]"),
        "{}",
        home.manifest()
    );
}
