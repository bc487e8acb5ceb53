//! The merge logic, with odd and hostile files.

use std::path::{Path, PathBuf};

use super::*;

fn launch(agent: Agent) -> Launch {
    Launch::new(agent, "/opt/bin/skillpkg", None, None, &[])
}

fn install_json(old: &str, agent: Agent) -> Result<Edit, Problem> {
    let key = match agent {
        Agent::Vscode => "servers",
        _ => "mcpServers",
    };
    json::install(
        old,
        key,
        "skillpkg",
        &launch(agent).json_entry(agent),
        false,
    )
}

fn install_toml(old: &str) -> Result<Edit, Problem> {
    toml::install(old, "skillpkg", &launch(Agent::Codex), false)
}

#[test]
fn a_new_json_file_gets_the_entry_the_agent_itself_would_write() {
    let edit = install_json("", Agent::ClaudeCode).unwrap();
    assert_eq!(edit.action, Action::Added);
    assert_eq!(
        edit.text,
        "{\n  \"mcpServers\": {\n    \"skillpkg\": {\n      \"type\": \"stdio\",\n      \"command\": \"/opt/bin/skillpkg\",\n      \"args\": [\"mcp\"],\n      \"env\": {}\n    }\n  }\n}\n"
    );
    let vscode: serde_json::Value =
        serde_json::from_str(&install_json("", Agent::Vscode).unwrap().text).unwrap();
    assert_eq!(
        vscode["servers"]["skillpkg"]["args"],
        serde_json::json!([
            "mcp",
            "--host",
            "copilot",
            "--project",
            "${workspaceFolder}"
        ])
    );
    let copilot: serde_json::Value =
        serde_json::from_str(&install_json("", Agent::Copilot).unwrap().text).unwrap();
    assert_eq!(copilot["mcpServers"]["skillpkg"]["type"], "local");
    assert_eq!(
        copilot["mcpServers"]["skillpkg"]["tools"],
        serde_json::json!(["*"])
    );
}

#[test]
fn other_servers_unknown_keys_and_their_order_are_kept() {
    let old = r#"{
  "zeta": 1,
  "mcpServers": {
    "b-other": {"command": "npx", "args": ["-y", "x"], "custom": true},
    "a-other": {"url": "https://example.com/mcp"}
  },
  "alpha": {"nested": [1, 2, {"k": null}]}
}"#;
    let edit = install_json(old, Agent::ClaudeCode).unwrap();
    assert_in_order(
        &edit.text,
        &[
            "\"zeta\"",
            "\"mcpServers\"",
            "\"b-other\"",
            "\"a-other\"",
            "\"skillpkg\"",
            "\"alpha\"",
        ],
    );
    let value: serde_json::Value = serde_json::from_str(&edit.text).unwrap();
    assert_eq!(value["mcpServers"]["b-other"]["custom"], true);
    assert_eq!(value["alpha"]["nested"][2]["k"], serde_json::Value::Null);
    // The entry's keys are in the order Claude Code writes them.
    let entry = &edit.text[edit.text.find("\"skillpkg\"").unwrap()..];
    assert_in_order(entry, &["\"type\"", "\"command\"", "\"args\"", "\"env\""]);
    // No newline at the end before (Claude Code writes none): none after.
    assert!(!edit.text.ends_with('\n'));

    // Removing it again gives back the file as it was, byte for byte.
    let removed = json::uninstall(&edit.text, "mcpServers", "skillpkg").unwrap();
    assert_eq!(removed.action, Action::Removed);
    assert_eq!(removed.text, old);
}

/// Asserts that `parts` occur in `text` in this order.
fn assert_in_order(text: &str, parts: &[&str]) {
    let at: Vec<usize> = parts
        .iter()
        .map(|part| {
            text.find(part)
                .unwrap_or_else(|| panic!("{part} in {text}"))
        })
        .collect();
    assert!(at.is_sorted(), "{parts:?} in this order in {text}");
}

#[test]
fn removing_the_middle_server_keeps_the_order_of_the_rest() {
    let old = "{\"mcpServers\": {\"a\": {}, \"skillpkg\": {\"command\": \"skillpkg\", \"args\": [\"mcp\"]}, \"c\": {}, \"d\": {}}}\n";
    let edit = json::uninstall(old, "mcpServers", "skillpkg").unwrap();
    assert!(!edit.text.contains("skillpkg"), "{}", edit.text);
    assert_in_order(&edit.text, &["\"a\"", "\"c\"", "\"d\""]);
    let value: serde_json::Value = serde_json::from_str(&edit.text).unwrap();
    assert_eq!(value["mcpServers"].as_object().unwrap().len(), 3);
}

#[test]
fn installing_twice_changes_nothing_the_second_time() {
    let first = install_json("{}\n", Agent::Cursor).unwrap();
    let second = install_json(&first.text, Agent::Cursor).unwrap();
    assert_eq!(second.action, Action::Unchanged);
    assert_eq!(second.text, first.text);

    let first = install_toml("# mine\n").unwrap();
    let second = install_toml(&first.text).unwrap();
    assert_eq!(second.action, Action::Unchanged);
    assert_eq!(second.text, first.text);
}

#[test]
fn an_update_sets_the_launch_and_keeps_what_the_user_added() {
    let old = r#"{"mcpServers": {"skillpkg": {"command": "/old/skillpkg", "args": ["mcp", "--host", "codex"], "env": {"A": "1"}, "timeout": 5}}}"#;
    let edit = install_json(old, Agent::ClaudeCode).unwrap();
    assert_eq!(edit.action, Action::Updated);
    let value: serde_json::Value = serde_json::from_str(&edit.text).unwrap();
    let entry = &value["mcpServers"]["skillpkg"];
    assert_eq!(entry["command"], "/opt/bin/skillpkg");
    assert_eq!(entry["args"], serde_json::json!(["mcp"]));
    assert_eq!(entry["env"], serde_json::json!({"A": "1"}));
    assert_eq!(entry["timeout"], 5);

    let old = "[mcp_servers.skillpkg]\ncommand = \"skillpkg\" # from PATH\nargs = [\"mcp\"]\nstartup_timeout_sec = 20\n";
    let edit = install_toml(old).unwrap();
    assert_eq!(edit.action, Action::Updated);
    assert_eq!(
        edit.text,
        "[mcp_servers.skillpkg]\ncommand = \"/opt/bin/skillpkg\"\nargs = [\"mcp\", \"--host\", \"codex\"]\nstartup_timeout_sec = 20\n"
    );
}

#[test]
fn an_entry_of_that_name_that_is_not_ours_is_refused_unless_forced() {
    let old = r#"{"mcpServers": {"skillpkg": {"command": "npx", "args": ["-y", "evil"]}}}"#;
    let Err(Problem::NotOurs { name, command }) = install_json(old, Agent::ClaudeCode) else {
        panic!("a foreign entry is refused");
    };
    assert_eq!(
        (name.as_str(), command.as_str()),
        ("skillpkg", "npx -y evil")
    );
    let Err(Problem::NotOurs { .. }) = json::uninstall(old, "mcpServers", "skillpkg") else {
        panic!("uninstall leaves a foreign entry alone");
    };
    let forced = json::install(
        old,
        "mcpServers",
        "skillpkg",
        &launch(Agent::ClaudeCode).json_entry(Agent::ClaudeCode),
        true,
    )
    .unwrap();
    assert_eq!(forced.action, Action::Updated);
    assert!(!forced.text.contains("evil"));

    // `skillpkg` not followed by `mcp` is someone else's use of the name.
    let old = "[mcp_servers.skillpkg]\ncommand = \"skillpkg\"\nargs = [\"install\"]\n";
    assert!(matches!(install_toml(old), Err(Problem::NotOurs { .. })));
    assert!(matches!(
        toml::uninstall(old, "skillpkg"),
        Err(Problem::NotOurs { .. })
    ));
}

#[test]
fn hostile_json_shapes_are_refused_with_what_is_wrong() {
    for (old, expected) in [
        ("[1, 2]", "the top level is an array"),
        ("\"text\"", "the top level is a string"),
        ("null", "the top level is null"),
        (r#"{"mcpServers": []}"#, "`mcpServers` is an array"),
        (r#"{"mcpServers": "x"}"#, "`mcpServers` is a string"),
    ] {
        let Err(Problem::Shape(message)) = install_json(old, Agent::ClaudeCode) else {
            panic!("{old} is refused");
        };
        assert!(message.contains(expected), "{old}: {message}");
    }
    let Err(Problem::Malformed(message)) =
        install_json("{\n  \"a\": 1,\n  \"mcpServers\": {\n", Agent::Cursor)
    else {
        panic!("a truncated file is refused");
    };
    assert!(message.contains("line 3"), "{message}");
    let Err(Problem::Malformed(message)) = install_json("\u{feff}{}", Agent::Cursor) else {
        panic!("a byte order mark is refused");
    };
    assert!(message.contains("line 1"), "{message}");
}

#[test]
fn duplicate_keys_are_refused_at_their_line() {
    let old = "{\n  \"mcpServers\": {\n    \"skillpkg\": {\"command\": \"npx\"},\n    \"skillpkg\": {\"command\": \"skillpkg\", \"args\": [\"mcp\"]}\n  }\n}\n";
    let Err(Problem::Malformed(message)) = install_json(old, Agent::ClaudeCode) else {
        panic!("a key given twice is refused");
    };
    assert!(message.contains("`skillpkg` is given twice"), "{message}");
    assert!(message.contains("line 4"), "{message}");
    assert!(matches!(
        install_json("{\"a\": 1, \"a\": 2}", Agent::ClaudeCode),
        Err(Problem::Malformed(_))
    ));
}

#[test]
fn jsonc_comments_and_trailing_commas_are_kept() {
    for (old, kept, same_after_uninstall) in [
        (
            "{\n  // my servers\n  \"servers\": {}\n}\n",
            "// my servers",
            false,
        ),
        (
            "{\n  \"servers\": {\n    \"other\": {\"command\": \"x\"} // mine\n  } /* later */\n}\n",
            "/* later */",
            true,
        ),
        (
            "{\n  \"servers\": {\n    \"other\": {},\n  },\n}\n",
            "\"other\": {},",
            true,
        ),
    ] {
        let edit =
            install_json(old, Agent::Vscode).unwrap_or_else(|error| panic!("{old}: {error:?}"));
        assert!(edit.text.contains(kept), "{}", edit.text);
        let value = jsonc_parser::parse_to_serde_value::<serde_json::Value>(
            &edit.text,
            &jsonc_parser::ParseOptions::default(),
        )
        .unwrap();
        assert_eq!(
            value["servers"]["skillpkg"]["type"], "stdio",
            "{}",
            edit.text
        );
        let removed = json::uninstall(&edit.text, "servers", "skillpkg").unwrap();
        assert!(removed.text.contains(kept), "{}", removed.text);
        if same_after_uninstall {
            // An object on lines of its own comes back as it was; an empty
            // one stays opened up.
            assert_eq!(removed.text, old, "uninstall gives back the file");
        }
    }
    // Looser than JSONC is refused: an agent's parser would refuse it too.
    for old in [
        "{'servers': {}}",
        "{servers: {}}",
        "{\"servers\": {\"a\": 0x10}}",
    ] {
        assert!(
            matches!(install_json(old, Agent::Vscode), Err(Problem::Malformed(_))),
            "{old}"
        );
    }
}

#[test]
fn uninstall_of_an_absent_entry_changes_no_byte() {
    for old in ["", "{}", "{\n    \"mcpServers\" : { \"other\" : {} }\n}"] {
        let edit = json::uninstall(old, "mcpServers", "skillpkg").unwrap();
        assert_eq!(edit.action, Action::Absent);
        assert_eq!(edit.text, old);
    }
    let old = "# nothing here\nmodel = \"o3\"\n";
    let edit = toml::uninstall(old, "skillpkg").unwrap();
    assert_eq!((edit.action, edit.text.as_str()), (Action::Absent, old));
}

#[test]
fn toml_install_then_uninstall_gives_back_the_file_byte_for_byte() {
    for old in [
        "",
        "# only a comment, no newline",
        "# settings\nmodel = \"o3\"   # aligned\n\n[mcp_servers.other]\ncommand = \"/bin/echo\"  # why\nargs = [ 'hi' ]\n\n# the end\n",
        "[mcp_servers]\nother = { command = \"x\" }\n",
        "mcp_servers.other.command = \"x\"\n[profile]\na = 1\n",
    ] {
        let installed = install_toml(old).unwrap();
        assert_eq!(installed.action, Action::Added, "{old}");
        let parsed: toml_edit::DocumentMut = installed.text.parse().unwrap();
        assert_eq!(
            parsed["mcp_servers"]["skillpkg"]["command"].as_str(),
            Some("/opt/bin/skillpkg"),
            "{}",
            installed.text
        );
        let removed = toml::uninstall(&installed.text, "skillpkg").unwrap();
        assert_eq!(removed.action, Action::Removed);
        assert_eq!(removed.text, old, "after {}", installed.text);
    }
}

#[test]
fn hostile_toml_is_refused_with_its_line() {
    let Err(Problem::Malformed(message)) = install_toml("a = 1\nb = \n") else {
        panic!("bad TOML is refused");
    };
    assert!(message.contains("line 2"), "{message}");
    let Err(Problem::Malformed(_)) = install_toml("[mcp_servers.x]\na=1\n[mcp_servers.x]\nb=2\n")
    else {
        panic!("a table given twice is refused");
    };
    let Err(Problem::Shape(message)) = install_toml("mcp_servers = 3\n") else {
        panic!("servers that are not a table are refused");
    };
    assert!(message.contains("`mcp_servers` is integer"), "{message}");
    assert!(matches!(
        install_toml("mcp_servers = [1]\n"),
        Err(Problem::Shape(_))
    ));
}

#[test]
fn names_are_what_every_agent_accepts() {
    for good in ["skillpkg", "skills_2", "A-b"] {
        assert!(good.parse::<ServerName>().is_ok(), "{good}");
    }
    for bad in ["", "a.b", "a b", "a\"b", "ü", "a/b", &"x".repeat(65)] {
        assert!(bad.parse::<ServerName>().is_err(), "{bad}");
    }
}

#[test]
fn ours_is_a_skillpkg_program_run_as_mcp() {
    assert!(is_ours(Some("skillpkg"), Some("mcp")));
    assert!(is_ours(Some("/home/u/.cargo/bin/skillpkg"), Some("mcp")));
    assert!(!is_ours(Some("/bin/skillpkg-evil"), Some("mcp")));
    assert!(!is_ours(Some("skillpkg"), Some("serve")));
    assert!(!is_ours(Some("skillpkg"), None));
    assert!(!is_ours(None, Some("mcp")));
}

fn homes(root: &Path) -> Homes {
    Homes {
        home: Some(root.join("home")),
        config_dir: Some(root.join("home/.config")),
        ..Homes::default()
    }
}

fn install_change() -> Change {
    Change::Install {
        launch: launch(Agent::Cursor),
        force: false,
    }
}

#[test]
fn the_files_are_where_each_agent_reads_them() {
    let root = PathBuf::from("/r");
    let project = Scope::Project(root.join("p"));
    let mut homes = homes(&root);
    let at = |agent, scope: &Scope, homes: &Homes| location(agent, scope, homes).unwrap().0;
    assert_eq!(
        at(Agent::ClaudeCode, &project, &homes),
        root.join("p/.mcp.json")
    );
    assert_eq!(
        at(Agent::ClaudeCode, &Scope::Global, &homes),
        root.join("home/.claude.json")
    );
    assert_eq!(
        at(Agent::Codex, &project, &homes),
        root.join("p/.codex/config.toml")
    );
    assert_eq!(
        at(Agent::Codex, &Scope::Global, &homes),
        root.join("home/.codex/config.toml")
    );
    assert_eq!(
        at(Agent::Copilot, &project, &homes),
        root.join("p/.github/mcp.json")
    );
    assert_eq!(
        at(Agent::Copilot, &Scope::Global, &homes),
        root.join("home/.copilot/mcp-config.json")
    );
    assert_eq!(
        at(Agent::Vscode, &project, &homes),
        root.join("p/.vscode/mcp.json")
    );
    assert_eq!(
        at(Agent::Vscode, &Scope::Global, &homes),
        root.join("home/.config/Code/User/mcp.json")
    );
    assert_eq!(
        at(Agent::Cursor, &Scope::Global, &homes),
        root.join("home/.cursor/mcp.json")
    );
    homes.codex_home = Some(root.join("ch"));
    homes.copilot_home = Some(root.join("cp"));
    homes.claude_config_dir = Some(root.join("cc"));
    assert_eq!(
        at(Agent::Codex, &Scope::Global, &homes),
        root.join("ch/config.toml")
    );
    assert_eq!(
        at(Agent::Copilot, &Scope::Global, &homes),
        root.join("cp/mcp-config.json")
    );
    assert_eq!(
        at(Agent::ClaudeCode, &Scope::Global, &homes),
        root.join("cc/.claude.json")
    );
}

#[test]
fn a_project_file_that_is_a_symlink_is_refused_and_its_target_untouched() {
    let temp = tempfile::tempdir().unwrap();
    let project = temp.path().join("p");
    fs_err::create_dir_all(project.join(".cursor")).unwrap();
    let outside = temp.path().join("authorized_keys");
    fs_err::write(&outside, "ssh-ed25519 AAAA me\n").unwrap();
    std::os::unix::fs::symlink(&outside, project.join(".cursor/mcp.json")).unwrap();
    let scope = Scope::Project(project.clone());
    let error = plan(
        Agent::Cursor,
        &scope,
        &homes(temp.path()),
        &ServerName::default(),
        &install_change(),
    )
    .unwrap_err();
    assert!(matches!(error, Error::Symlink { .. }), "{error}");
    assert_eq!(
        fs_err::read_to_string(&outside).unwrap(),
        "ssh-ed25519 AAAA me\n"
    );

    // A folder above the file that leads out of the project is refused too.
    let elsewhere = temp.path().join("elsewhere");
    fs_err::create_dir_all(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, project.join(".vscode")).unwrap();
    let error = plan(
        Agent::Vscode,
        &scope,
        &homes(temp.path()),
        &ServerName::default(),
        &install_change(),
    )
    .unwrap_err();
    assert!(matches!(error, Error::Symlink { .. }), "{error}");
    assert!(!elsewhere.join("mcp.json").exists());
}

#[test]
fn a_global_file_that_is_a_symlink_is_followed_and_the_link_kept() {
    let temp = tempfile::tempdir().unwrap();
    let dotfiles = temp.path().join("dotfiles");
    fs_err::create_dir_all(&dotfiles).unwrap();
    fs_err::create_dir_all(temp.path().join("home/.cursor")).unwrap();
    fs_err::write(dotfiles.join("mcp.json"), "{\"mcpServers\": {}}\n").unwrap();
    let link = temp.path().join("home/.cursor/mcp.json");
    std::os::unix::fs::symlink(dotfiles.join("mcp.json"), &link).unwrap();
    let plan = plan(
        Agent::Cursor,
        &Scope::Global,
        &homes(temp.path()),
        &ServerName::default(),
        &install_change(),
    )
    .unwrap();
    plan.apply().unwrap();
    assert!(
        fs_err::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert!(
        fs_err::read_to_string(dotfiles.join("mcp.json"))
            .unwrap()
            .contains("skillpkg")
    );
}

#[test]
fn the_write_keeps_the_file_mode_and_a_new_global_file_is_private() {
    use std::os::unix::fs::PermissionsExt as _;
    let temp = tempfile::tempdir().unwrap();
    let project = temp.path().join("p");
    fs_err::create_dir_all(&project).unwrap();
    fs_err::write(project.join(".mcp.json"), "{}").unwrap();
    fs_err::set_permissions(
        project.join(".mcp.json"),
        std::fs::Permissions::from_mode(0o640),
    )
    .unwrap();
    let scope = Scope::Project(project.clone());
    plan(
        Agent::ClaudeCode,
        &scope,
        &homes(temp.path()),
        &ServerName::default(),
        &install_change(),
    )
    .unwrap()
    .apply()
    .unwrap();
    let mode = |path: &Path| fs_err::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&project.join(".mcp.json")), 0o640);

    plan(
        Agent::Codex,
        &Scope::Global,
        &homes(temp.path()),
        &ServerName::default(),
        &install_change(),
    )
    .unwrap()
    .apply()
    .unwrap();
    assert_eq!(mode(&temp.path().join("home/.codex/config.toml")), 0o600);
}

#[test]
fn a_file_too_large_to_be_a_configuration_is_refused_unread() {
    let temp = tempfile::tempdir().unwrap();
    let project = temp.path().join("p");
    fs_err::create_dir_all(&project).unwrap();
    let file = fs_err::File::create(project.join(".mcp.json")).unwrap();
    file.set_len(MAX_FILE_BYTES + 1).unwrap();
    let error = plan(
        Agent::ClaudeCode,
        &Scope::Project(project),
        &homes(temp.path()),
        &ServerName::default(),
        &install_change(),
    )
    .unwrap_err();
    assert!(matches!(error, Error::TooLarge { .. }), "{error}");
}
