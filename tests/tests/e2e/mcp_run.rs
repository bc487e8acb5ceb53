//! Scripts and skill tools through `skillpkg mcp`, driven by rmcp's client:
//! the sandbox as an agent meets it (a script cannot read a secret file,
//! write outside its grant, reach a loopback port, or outlive its
//! timeout), `allowed-tools` gating, and spec 003's tool calls with their
//! error envelopes. Expectations come from spec 001, spec 003 and
//! docs/runtime.md.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt as _};
use serde_json::{Value, json};
use skillpkg_tests::{TestContext, processes_with, wait_until};

type Client = RunningService<RoleClient, ()>;

struct Project {
    sandbox: TestContext,
}

impl Project {
    fn new() -> Self {
        let project = Self {
            sandbox: TestContext::new(),
        };
        fs_err::create_dir_all(project.dir()).unwrap();
        project
    }

    /// A project inside `base`.
    fn in_folder(base: &Path) -> Self {
        let project = Self {
            sandbox: TestContext::new_in(base),
        };
        fs_err::create_dir_all(project.dir()).unwrap();
        project
    }

    fn dir(&self) -> PathBuf {
        self.sandbox.path().join("project")
    }

    /// A skill with `frontmatter` lines after name and description, and
    /// `files` (path, contents).
    fn skill(&self, name: &str, frontmatter: &str, files: &[(&str, &str)]) {
        self.sandbox.project_skill(name, frontmatter, files);
    }

    async fn connect(&self, extra: &[&str]) -> Client {
        let command = tokio::process::Command::from(self.sandbox.mcp(extra));
        let (transport, _) = TokioChildProcess::builder(command)
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        ().serve(transport).await.unwrap()
    }
}

/// Asserts that `marker`, which a process of a run writes after a sleep
/// that ends by `deadline` unless the process was killed, is still not
/// there a moment after the deadline. A run's processes live in a PID
/// namespace of their own, so their ids mean nothing outside: what they
/// fail to do is the proof.
fn assert_never_written(marker: &Path, deadline: Instant, what: &str) {
    let after = deadline + Duration::from_millis(700);
    std::thread::sleep(after.saturating_duration_since(Instant::now()));
    assert!(!marker.exists(), "{what}: {} was written", marker.display());
}

async fn call(client: &Client, tool: &str, arguments: Value) -> CallToolResult {
    let Value::Object(arguments) = arguments else {
        panic!("an object")
    };
    client
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments))
        .await
        .unwrap()
}

fn structured(result: &CallToolResult) -> Value {
    result
        .structured_content
        .clone()
        .expect("structured content")
}

/// Loads `skill` and runs its `script` with `args`.
async fn run_script(client: &Client, skill: &str, script: &str, args: &[&str]) -> Value {
    let loaded = call(client, "skills_load", json!({"names": [skill]})).await;
    assert_eq!(loaded.is_error, Some(false), "{loaded:?}");
    structured(
        &call(
            client,
            "skills_run_script",
            json!({"path": script, "args": args}),
        )
        .await,
    )
}

#[tokio::test]
async fn a_script_reads_and_writes_only_what_its_skill_declares() {
    let project = Project::new();
    let key = project.sandbox.write(
        "home/.ssh/id_ed25519",
        "-----BEGIN OPENSSH PRIVATE KEY-----\n",
    );
    project
        .sandbox
        .write("project/docs/report.pdf", "%PDF-1.7 report\n");
    project.skill(
        "reader",
        "permissions:\n  filesystem:\n    read: [\"docs/**\"]\n    write: [\"output/**\"]\n",
        &[(
            "scripts/touch.sh",
            r#"{ read -r first < "$1"; } 2>/dev/null && echo "read $1" || echo "denied read $1"
{ echo x > "$2"; } 2>/dev/null && echo "wrote $2" || echo "denied write $2"
"#,
        )],
    );
    let client = project.connect(&[]).await;
    let granted = run_script(
        &client,
        "reader",
        "scripts/touch.sh",
        &[
            project.dir().join("docs/report.pdf").to_str().unwrap(),
            project.dir().join("output/out.txt").to_str().unwrap(),
        ],
    )
    .await;
    assert_eq!(granted["exit_code"], 0, "{granted}");
    let stdout = granted["stdout"].as_str().unwrap();
    assert!(stdout.contains("read "), "{stdout}");
    assert!(!stdout.contains("denied"), "{stdout}");
    assert_eq!(
        fs_err::read_to_string(project.dir().join("output/out.txt")).unwrap(),
        "x\n"
    );

    let refused = structured(
        &call(
            &client,
            "skills_run_script",
            json!({"path": "scripts/touch.sh", "args": [key.to_str().unwrap(), project.dir().join("notes.txt").to_str().unwrap()]}),
        )
        .await,
    );
    let stdout = refused["stdout"].as_str().unwrap();
    assert!(
        stdout.contains(&format!("denied read {}", key.display())),
        "{stdout}"
    );
    assert!(stdout.contains("denied write"), "{stdout}");
    assert!(!project.dir().join("notes.txt").exists());
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_script_cannot_reach_a_loopback_port_it_was_not_granted() {
    let project = Project::new();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    project.skill(
        "net",
        "",
        &[(
            "scripts/connect.py",
            "import socket, sys\ntry:\n    socket.create_connection(('127.0.0.1', int(sys.argv[1])), timeout=2)\n    print('connected')\nexcept OSError as error:\n    print('refused', error.errno)\n",
        )],
    );
    let client = project.connect(&[]).await;
    let ran = run_script(&client, "net", "scripts/connect.py", &[&port.to_string()]).await;
    assert!(
        ran["stdout"].as_str().unwrap().starts_with("refused"),
        "{ran}"
    );
    assert!(
        listener.accept().is_err(),
        "no connection reached the listener"
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_script_is_killed_at_its_timeout_children_included_and_the_server_keeps_serving() {
    let project = Project::new();
    let marker = project.sandbox.path().join("project/output/late");
    project.skill(
        "slow",
        "permissions:\n  filesystem:\n    write: [\"output/**\"]\n  processes:\n    allow_subprocess: true\n",
        &[(
            "scripts/hang.sh",
            &format!(
                "(sleep 3; echo late > {}) &\nsleep 30\n",
                marker.display()
            ),
        )],
    );
    let client = project.connect(&["--timeout", "1"]).await;
    let started = Instant::now();
    let ran = run_script(&client, "slow", "scripts/hang.sh", &[]).await;
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(ran["timed_out"], true, "{ran}");
    assert_eq!(ran["exit_code"], Value::Null, "{ran}");
    // The server still answers.
    let read = call(&client, "skills_read", json!({"path": "SKILL.md"})).await;
    assert_eq!(read.is_error, Some(false));
    assert_never_written(
        &marker,
        started + Duration::from_secs(3),
        "the background child dies with the run",
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_flood_is_capped_and_flagged() {
    let project = Project::new();
    project.skill(
        "flood",
        "",
        &[(
            "scripts/flood.py",
            "import sys\nfor _ in range(5000):\n    sys.stdout.write('x' * 1000)\n",
        )],
    );
    let client = project.connect(&[]).await;
    let ran = run_script(&client, "flood", "scripts/flood.py", &[]).await;
    assert_eq!(ran["stdout_truncated"], true, "{}", ran["exit_code"]);
    assert_eq!(ran["stdout"].as_str().unwrap().len(), 1024 * 1024);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_script_runs_no_other_program_unless_its_skill_allows_subprocesses() {
    let project = Project::new();
    let script = (
        "scripts/ls.sh",
        "/usr/bin/env true && echo ran || echo refused\n",
    );
    project.skill("plain", "", &[script]);
    project.skill(
        "spawner",
        "permissions:\n  processes:\n    allow_subprocess: true\n",
        &[script],
    );
    let client = project.connect(&[]).await;
    let plain = run_script(&client, "plain", "scripts/ls.sh", &[]).await;
    assert_eq!(plain["stdout"], "refused\n", "{plain}");
    assert!(
        plain["stderr"]
            .as_str()
            .unwrap()
            .contains("Permission denied"),
        "{plain}"
    );
    let spawner = run_script(&client, "spawner", "scripts/ls.sh", &[]).await;
    assert_eq!(spawner["stdout"], "ran\n", "{spawner}");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn allowed_tools_gate_scripts_and_only_scripts_run() {
    let project = Project::new();
    project.skill(
        "read-only",
        "allowed-tools: Read Grep\n",
        &[
            ("scripts/run.sh", "echo ran\n"),
            ("references/run.sh", "echo ran\n"),
        ],
    );
    project.skill(
        "git-only",
        "allowed-tools: Bash(scripts/git-*:*)\n",
        &[
            ("scripts/git-log.sh", "echo log\n"),
            ("scripts/other.sh", "echo other\n"),
        ],
    );
    let audit = project.sandbox.path().join("audit.jsonl");
    let client = project
        .connect(&["--audit-log", audit.to_str().unwrap()])
        .await;
    call(
        &client,
        "skills_load",
        json!({"names": ["read-only", "git-only"]}),
    )
    .await;
    let refused = structured(
        &call(
            &client,
            "skills_run_script",
            json!({"skill": "read-only", "path": "scripts/run.sh"}),
        )
        .await,
    );
    assert_eq!(refused["error"]["code"], "PERMISSION_DENIED", "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("does not allow running scripts: its allowed-tools are Read, Grep"),
        "{refused}"
    );
    let allowed = structured(
        &call(
            &client,
            "skills_run_script",
            json!({"skill": "git-only", "path": "scripts/git-log.sh"}),
        )
        .await,
    );
    assert_eq!(allowed["stdout"], "log\n", "{allowed}");
    let other = structured(
        &call(
            &client,
            "skills_run_script",
            json!({"skill": "git-only", "path": "scripts/other.sh"}),
        )
        .await,
    );
    assert_eq!(other["error"]["code"], "PERMISSION_DENIED", "{other}");

    for path in [
        "references/run.sh",
        "../read-only/scripts/run.sh",
        "/bin/sh",
        "scripts/missing.sh",
    ] {
        let outside = structured(
            &call(
                &client,
                "skills_run_script",
                json!({"skill": "git-only", "path": path}),
            )
            .await,
        );
        assert!(
            ["PERMISSION_DENIED"].contains(&outside["error"]["code"].as_str().unwrap()),
            "{path}: {outside}"
        );
    }
    client.cancel().await.unwrap();

    // Each refusal is in the audit log as a denial; a run that went ahead
    // has none.
    let lines: Vec<Value> = fs_err::read_to_string(&audit)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|line| line["tool"] == "skills_run_script")
        .collect();
    assert_eq!(lines.len(), 7);
    assert!(
        lines[0]["denials"][0]
            .as_str()
            .unwrap()
            .contains("does not allow running scripts"),
        "{}",
        lines[0]
    );
    assert_eq!(lines[1]["denials"], json!([]), "{}", lines[1]);
    assert_eq!(lines[1]["exit_code"], 0);
}

const TOOL_SKILL: &str = r#"tools:
  - name: word-count
    description: Count the words of a text.
    input_schema:
      type: object
      additionalProperties: false
      properties:
        text: { type: string }
        mode: { type: string, enum: [words, lines] }
      required: [text]
    output_schema:
      type: object
      additionalProperties: false
      properties:
        count: { type: integer }
      required: [count]
    implementation:
      runtime: python
      entrypoint: scripts/count.py
  - name: broken
    description: Prints what its output schema forbids.
    input_schema: { type: object, additionalProperties: false }
    output_schema:
      type: object
      properties:
        count: { type: integer }
      required: [count]
    implementation:
      runtime: bash
      entrypoint: scripts/broken.sh
"#;

#[tokio::test]
async fn a_skills_tools_are_listed_after_a_load_and_called_as_spec_003_says() {
    let project = Project::new();
    project.skill(
        "text-tools",
        TOOL_SKILL,
        &[
            (
                "scripts/count.py",
                "import json, sys\nargs = json.load(sys.stdin)\nprint(json.dumps({'count': len(args['text'].split())}))\n",
            ),
            ("scripts/broken.sh", "read line\necho '{\"count\": \"many\"}'\n"),
        ],
    );
    let client = project.connect(&[]).await;
    let names = |tools: Vec<rmcp::model::Tool>| -> Vec<String> {
        tools
            .into_iter()
            .map(|tool| tool.name.into_owned())
            .collect()
    };
    let before = names(client.list_all_tools().await.unwrap());
    assert!(
        !before.iter().any(|name| name.starts_with("text-tools__")),
        "{before:?}"
    );
    call(&client, "skills_load", json!({"names": ["text-tools"]})).await;
    let tools = client.list_all_tools().await.unwrap();
    let count = tools
        .iter()
        .find(|tool| tool.name == "text-tools__word-count")
        .expect("listed under <skill>__<tool>");
    assert_eq!(count.input_schema["required"], json!(["text"]));
    assert!(count.output_schema.is_some());

    let counted = call(
        &client,
        "text-tools__word-count",
        json!({"text": "one two three"}),
    )
    .await;
    assert_eq!(counted.is_error, Some(false), "{counted:?}");
    assert_eq!(structured(&counted), json!({"count": 3}));

    let invalid = structured(
        &call(
            &client,
            "text-tools__word-count",
            json!({"text": 3, "extra": 1}),
        )
        .await,
    );
    assert_eq!(invalid["status"], "error");
    assert_eq!(invalid["error"]["code"], "INVALID_ARGUMENT", "{invalid}");
    assert_eq!(invalid["error"]["retriable"], false);

    let broken = structured(&call(&client, "text-tools__broken", json!({})).await);
    assert_eq!(broken["error"]["code"], "OUTPUT_INVALID", "{broken}");

    call(&client, "skills_unload", json!({"all": true})).await;
    let after = names(client.list_all_tools().await.unwrap());
    assert_eq!(after, before);
    let gone = client
        .call_tool(CallToolRequestParams::new("text-tools__word-count"))
        .await;
    assert!(
        gone.is_err(),
        "an unloaded skill's tool is not there: {gone:?}"
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_call_sent_with_the_load_it_needs_finds_the_skill_loaded_every_time() {
    let project = Project::new();
    project.skill(
        "text-tools",
        TOOL_SKILL,
        &[
            (
                "scripts/count.py",
                "import json, sys\nargs = json.load(sys.stdin)\nprint(json.dumps({'count': len(args['text'].split())}))\n",
            ),
            ("scripts/broken.sh", "read line\necho '{}'\n"),
            ("references/usage.md", "Count words.\n"),
        ],
    );
    let client = project.connect(&[]).await;
    let mut out_of_order = Vec::new();
    for round in 0..100 {
        call(&client, "skills_unload", json!({"all": true})).await;
        // Sent in this order, none waiting for another's reply.
        let (load, tool, read) = tokio::join!(
            call(&client, "skills_load", json!({"names": ["text-tools"]})),
            client.call_tool(
                CallToolRequestParams::new("text-tools__word-count")
                    .with_arguments(json!({"text": "one two"}).as_object().unwrap().clone())
            ),
            call(
                &client,
                "skills_read",
                json!({"skill": "text-tools", "path": "references/usage.md"})
            ),
        );
        assert_eq!(load.is_error, Some(false), "{load:?}");
        let counted = tool.as_ref().is_ok_and(|tool| {
            tool.structured_content
                .as_ref()
                .is_some_and(|out| out["count"] == 2)
        });
        if !counted || read.is_error != Some(false) {
            out_of_order.push((round, format!("{tool:?} {read:?}")));
        }
    }
    assert!(
        out_of_order.is_empty(),
        "rounds that saw a call before its load: {out_of_order:?}"
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_tool_that_needs_confirmation_is_denied_when_the_client_cannot_ask() {
    let project = Project::new();
    project.skill(
        "cleanup",
        r#"tools:
  - name: delete-output
    description: Delete generated output files.
    confirmation:
      level: destructive_writes
      prompt: "This will delete files under output/**."
    input_schema:
      type: object
      additionalProperties: false
      properties:
        dry_run: { type: boolean }
      required: [dry_run]
    implementation:
      runtime: bash
      entrypoint: scripts/delete.sh
"#,
        &[("scripts/delete.sh", "read line\necho '{\"deleted\": 0}'\n")],
    );
    let client = project.connect(&[]).await;
    call(&client, "skills_load", json!({"names": ["cleanup"]})).await;
    let denied =
        structured(&call(&client, "cleanup__delete-output", json!({"dry_run": false})).await);
    assert_eq!(denied["error"]["code"], "APPROVAL_DENIED", "{denied}");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_call_the_client_cancels_stops_its_script_and_is_audited() {
    use rmcp::model::{CallToolRequest, ClientRequest};
    use rmcp::service::PeerRequestOptions;

    let project = Project::new();
    let marker = project.sandbox.path().join("project/output/survived");
    project.skill(
        "slow",
        "permissions:\n  filesystem:\n    write: [\"output/**\"]\n  processes:\n    allow_subprocess: true\n",
        &[(
            "scripts/wait.sh",
            &format!("sleep 3\necho done > {}\n", marker.display()),
        )],
    );
    let audit = project.sandbox.path().join("audit.jsonl");
    let client = project
        .connect(&["--audit-log", audit.to_str().unwrap()])
        .await;
    call(&client, "skills_load", json!({"names": ["slow"]})).await;
    let Value::Object(arguments) = json!({"path": "scripts/wait.sh"}) else {
        unreachable!()
    };
    let mut options = PeerRequestOptions::default();
    // The client gives up after 500 ms and sends notifications/cancelled.
    options.timeout = Some(Duration::from_millis(500));
    let sent = Instant::now();
    let handle = client
        .peer()
        .send_cancellable_request(
            ClientRequest::CallToolRequest(CallToolRequest::new(
                CallToolRequestParams::new("skills_run_script").with_arguments(arguments),
            )),
            options,
        )
        .await
        .unwrap();
    assert!(
        handle.await_response().await.is_err(),
        "timed out client-side"
    );
    // The server stops the script: the next call is answered at once, and
    // the script never gets to write its marker.
    let started = Instant::now();
    let read = call(&client, "skills_read", json!({"path": "SKILL.md"})).await;
    assert_eq!(read.is_error, Some(false));
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_never_written(
        &marker,
        sent + Duration::from_secs(3),
        "the cancelled script is killed",
    );
    client.cancel().await.unwrap();

    let text = fs_err::read_to_string(&audit).unwrap();
    let line: Value = text
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .find(|line| line["tool"] == "skills_run_script")
        .expect("the cancelled call has its audit line");
    assert_eq!(line["outcome"], "error", "{line}");
    assert!(line["duration_ms"].as_u64().unwrap() < 2500, "{line}");
}

#[tokio::test]
async fn a_skills_own_shebang_and_links_grant_nothing_beyond_its_permissions() {
    let project = Project::new();
    let secret = project
        .sandbox
        .write("elsewhere/secret.txt", "top secret\n");
    let skill = project.dir().join(".claude/skills/esc");
    project.skill("esc", "", &[]);
    std::os::unix::fs::symlink("/", skill.join("L")).unwrap();
    let probe = format!(
        "{{ read -r line < {}; }} 2>/dev/null && echo LEAKED || echo denied\n",
        secret.display()
    );
    // Through the skill's link to `/`, absolute and relative.
    let absolute = project.sandbox.write(
        "project/.claude/skills/esc/scripts/absolute",
        format!("#!{}/L/bin/bash\n{probe}", skill.display()),
    );
    let relative = project.sandbox.write(
        "project/.claude/skills/esc/scripts/relative",
        format!("#!.claude/skills/esc/L/bin/bash\n{probe}"),
    );
    skillpkg_tests::set_executable(&absolute, true);
    skillpkg_tests::set_executable(&relative, true);
    let client = project.connect(&[]).await;
    // The skill's link is not part of its sealed copy: the interpreter it
    // names does not exist in the run, or, where it does, reads nothing.
    let ran = run_script(&client, "esc", "scripts/absolute", &[]).await;
    assert!(!ran.to_string().contains("LEAKED"), "{ran}");
    assert!(
        ran["stdout"] == "denied\n"
            || ran["error"]["message"]
                .as_str()
                .is_some_and(|message| message.contains("cannot start")),
        "{ran}"
    );
    let refused = structured(
        &call(
            &client,
            "skills_run_script",
            json!({"path": "scripts/relative"}),
        )
        .await,
    );
    assert_eq!(refused["error"]["code"], "INVALID_ARGUMENT", "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not an absolute path"),
        "{refused}"
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_client_cannot_set_variables_that_make_the_interpreter_run_its_code() {
    let project = Project::new();
    project.skill("hi", "", &[("scripts/hi.sh", "echo hi\n")]);
    let client = project.connect(&[]).await;
    call(&client, "skills_load", json!({"names": ["hi"]})).await;
    for name in [
        "SHELLOPTS",
        "PS4",
        "BASHOPTS",
        "BASH_FUNC_echo%%",
        "PYTHONUSERBASE",
        "NODE_PATH",
        "PERL5OPT",
        "GLIBC_TUNABLES",
        "JAVA_TOOL_OPTIONS",
        "LD_PRELOAD",
    ] {
        let refused = structured(
            &call(
                &client,
                "skills_run_script",
                json!({"path": "scripts/hi.sh", "env": {name: "x"}}),
            )
            .await,
        );
        assert_eq!(
            refused["error"]["code"], "INVALID_ARGUMENT",
            "{name}: {refused}"
        );
    }
    let fine = structured(
        &call(
            &client,
            "skills_run_script",
            json!({"path": "scripts/hi.sh", "env": {"MODE": "fast"}}),
        )
        .await,
    );
    assert_eq!(fine["stdout"], "hi\n", "{fine}");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn only_files_the_skill_had_at_start_run_never_through_a_link() {
    let project = Project::new();
    project.skill("ok", "", &[("scripts/run.sh", "echo checked\n")]);
    project.sandbox.write("outside/evil.sh", "echo evil\n");
    project.skill("linked", "", &[]);
    std::os::unix::fs::symlink(
        project.sandbox.path().join("outside"),
        project.dir().join(".claude/skills/linked/scripts"),
    )
    .unwrap();
    let client = project.connect(&["--unsandboxed"]).await;
    // A script written after the server read the skill.
    project
        .sandbox
        .write("project/.claude/skills/ok/scripts/added.sh", "echo added\n");
    call(&client, "skills_load", json!({"names": ["ok", "linked"]})).await;
    for (skill, path) in [("ok", "scripts/added.sh"), ("linked", "scripts/evil.sh")] {
        let refused = structured(
            &call(
                &client,
                "skills_run_script",
                json!({"skill": skill, "path": path}),
            )
            .await,
        );
        assert_eq!(
            refused["error"]["code"], "PERMISSION_DENIED",
            "{path}: {refused}"
        );
    }
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_load_of_thousands_of_names_is_refused_at_once() {
    let project = Project::new();
    project.skill("one", "", &[]);
    let client = project.connect(&[]).await;
    let names: Vec<String> = (0..60_000).map(|i| format!("skill-{i}")).collect();
    let started = Instant::now();
    let refused = structured(&call(&client, "skills_load", json!({"names": names})).await);
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(refused["error"]["code"], "INVALID_ARGUMENT", "{refused}");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_bash_pattern_with_arguments_allows_that_script_and_no_longer_name() {
    let project = Project::new();
    project.skill(
        "narrow",
        "allowed-tools: Bash(scripts/log.sh:*)\n",
        &[
            ("scripts/log.sh", "echo log \"$@\"\n"),
            ("scripts/log.sh.py", "print('other')\n"),
        ],
    );
    let client = project.connect(&[]).await;
    let ran = run_script(&client, "narrow", "scripts/log.sh", &["--all"]).await;
    assert_eq!(ran["stdout"], "log --all\n", "{ran}");
    let refused = structured(
        &call(
            &client,
            "skills_run_script",
            json!({"path": "scripts/log.sh.py"}),
        )
        .await,
    );
    assert_eq!(refused["error"]["code"], "PERMISSION_DENIED", "{refused}");
    client.cancel().await.unwrap();
}

/// A project on a RAM disk under `/dev` (`/dev/shm`) runs its scripts:
/// its folder is bound inside the run's own `/dev`, which stays read-only
/// for the script.
#[tokio::test]
async fn a_project_on_a_ram_disk_under_dev_runs_its_scripts() {
    let project = Project::in_folder(Path::new("/dev/shm"));
    project.skill(
        "ram",
        "",
        &[(
            "scripts/here.sh",
            "echo \"in $PWD\"\n{ : > /dev/made; } 2>/dev/null && echo made || echo refused\n",
        )],
    );
    let client = project.connect(&[]).await;
    let ran = run_script(&client, "ram", "scripts/here.sh", &[]).await;
    assert_eq!(ran["exit_code"], 0, "{ran}");
    let stdout = ran["stdout"].as_str().unwrap();
    let real = fs_err::canonicalize(project.dir()).unwrap();
    assert!(
        stdout.contains(&format!("in {}", real.display())),
        "{stdout}"
    );
    assert!(stdout.contains("refused"), "{stdout}");
    client.cancel().await.unwrap();
}

/// Runs' scratch folders are used again (making them anew was most of a
/// server's own work per run), each time with a new home: nothing a run
/// left in its `HOME`, in a folder of it or on the folder itself is there
/// for a later run.
#[tokio::test]
async fn a_home_used_again_holds_nothing_of_the_runs_before() {
    let project = Project::new();
    project.skill(
        "home",
        "permissions:\n  processes:\n    allow_subprocess: true\n",
        &[(
            "scripts/home.sh",
            r#"printf '%s|%s|%s' "$HOME" "$(stat -c %a "$HOME")" "$(ls -A "$HOME" | tr '\n' ' ')"
echo left > "$HOME/left"
mkdir -p "$HOME/.cache/deep" && echo left > "$HOME/.cache/deep/file"
chmod 0777 "$HOME"
"#,
        )],
    );
    let client = project.connect(&[]).await;
    let mut homes = Vec::new();
    for _ in 0..8 {
        let ran = run_script(&client, "home", "scripts/home.sh", &[]).await;
        assert_eq!(ran["exit_code"], 0, "{ran}");
        let seen = ran["stdout"].as_str().unwrap().to_owned();
        let [home, mode, entries] = seen.splitn(3, '|').collect::<Vec<_>>()[..] else {
            panic!("{ran}")
        };
        assert_eq!(
            entries.trim(),
            "",
            "a run saw what a run before it left: {seen}"
        );
        assert_ne!(
            mode, "777",
            "a run got the home a run before it changed: {seen}"
        );
        homes.push(home.to_owned());
        // The run's folder is made new once its launcher has ended.
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
    let mut distinct = homes.clone();
    distinct.sort();
    distinct.dedup();
    assert!(
        distinct.len() < homes.len(),
        "no scratch folder was used again, so this test proves nothing: {homes:?}"
    );
    client.cancel().await.unwrap();
}

/// A one-line HTTP server on the host's loopback that answers every
/// request with `body` and counts the requests it got.
fn http_server(body: &'static str) -> (u16, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::io::{Read as _, Write as _};
    use std::sync::atomic::{AtomicUsize, Ordering};
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let hits = std::sync::Arc::new(AtomicUsize::new(0));
    let counted = std::sync::Arc::clone(&hits);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            counted.fetch_add(1, Ordering::SeqCst);
            let mut head = [0; 4096];
            let _ = stream.read(&mut head);
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (port, hits)
}

/// Says whether the script's process has a child (without waiting for it).
const CHILDREN: &str = r#"import os
try:
    os.waitpid(-1, os.WNOHANG)
    print("a child")
except ChildProcessError:
    print("no child")
"#;

#[tokio::test]
async fn a_run_reaches_the_hosts_its_skill_lists_through_the_proxy_and_nothing_else() {
    let (allowed, allowed_hits) = http_server("allowed");
    let (other, other_hits) = http_server("other");
    let project = Project::new();
    let script = format!(
        r#"import json, os, socket, urllib.request, urllib.error, http.client
seen = {{}}
def get(port):
    try:
        return urllib.request.urlopen(f"http://127.0.0.1:{{port}}/x", timeout=5).read().decode()
    except urllib.error.HTTPError as error:
        return f"{{error.code}} {{error.read().decode().strip()}}"
    except Exception as error:
        return f"error {{type(error).__name__}}"
seen["proxied"] = get({allowed})
seen["unlisted"] = get({other})
tunnel = http.client.HTTPConnection(*os.environ["HTTPS_PROXY"][7:].split(":"), timeout=5)
tunnel.set_tunnel("127.0.0.1", {allowed})
try:
    tunnel.request("GET", "/t")
    seen["tunnel"] = tunnel.getresponse().read().decode()
except Exception as error:
    seen["tunnel"] = f"error {{error}}"
direct = socket.socket()
direct.settimeout(2)
try:
    direct.connect(("127.0.0.1", {allowed}))
    seen["direct"] = "connected"
except OSError as error:
    seen["direct"] = f"refused {{error.errno}}"
try:
    socket.getaddrinfo("example.com", 443)
    seen["dns"] = "resolved"
except OSError:
    seen["dns"] = "failed"
print(json.dumps(seen))
"#
    );
    project.skill(
        "api",
        &format!("permissions:\n  network:\n    outbound: [\"127.0.0.1:{allowed}\"]\n"),
        &[
            ("scripts/call.py", &script),
            ("scripts/children.py", CHILDREN),
        ],
    );
    let client = project.connect(&[]).await;
    call(&client, "skills_load", json!({"names": ["api"]})).await;
    // The relay to the proxy is no child of the script's (a script that
    // waits for its children would wait for it forever), and it holds none
    // of the run's output.
    let children = run_script(&client, "api", "scripts/children.py", &[]).await;
    assert_eq!(children["stdout"], "no child\n", "{children}");
    assert!(
        !children["notes"].to_string().contains("output open"),
        "{children}"
    );
    let ran = run_script(&client, "api", "scripts/call.py", &[]).await;
    let seen: Value = serde_json::from_str(ran["stdout"].as_str().unwrap_or("{}"))
        .unwrap_or_else(|_| panic!("{ran}"));
    assert_eq!(seen["proxied"], "allowed", "{ran}");
    assert_eq!(seen["tunnel"], "allowed", "{ran}");
    assert!(
        seen["unlisted"]
            .as_str()
            .is_some_and(|text| text.starts_with("403") && text.contains("outbound")),
        "{ran}"
    );
    // Only loopback exists in the run: the host's listener is not there.
    assert!(
        seen["direct"].as_str().unwrap().starts_with("refused"),
        "{ran}"
    );
    assert_eq!(seen["dns"], "failed", "{ran}");
    assert_eq!(
        allowed_hits.load(std::sync::atomic::Ordering::SeqCst),
        2,
        "one plain request and one tunnel"
    );
    assert_eq!(other_hits.load(std::sync::atomic::Ordering::SeqCst), 0);
    assert!(
        ran["notes"]
            .as_array()
            .is_some_and(|notes| notes.iter().any(|note| note
                .as_str()
                .is_some_and(|note| note.contains(&format!("127.0.0.1:{other}"))))),
        "{ran}"
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn without_user_namespaces_runs_are_refused_with_the_reason_and_instructions_still_serve() {
    let project = Project::new();
    let marker = project.dir().join("ran");
    project.skill(
        "hi",
        "",
        &[(
            "scripts/hi.sh",
            &format!("echo ran > {}\n", marker.display()),
        )],
    );
    // A user namespace of the test's own whose limit of nested user
    // namespaces is 0: the kernel refuses the run's, as a container or a
    // distribution that forbids them does.
    let server = project.sandbox.mcp(&[]);
    let mut command = std::process::Command::new("unshare");
    command
        .args(["--user", "--map-root-user", "sh", "-c"])
        .arg("echo 0 > /proc/sys/user/max_user_namespaces && exec \"$@\"")
        .arg("sh");
    skillpkg_tests::then_start(&mut command, &server);
    let (transport, _) = TokioChildProcess::builder(tokio::process::Command::from(command))
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let client = ().serve(transport).await.unwrap();
    call(&client, "skills_load", json!({"names": ["hi"]})).await;
    let read = call(&client, "skills_read", json!({"path": "SKILL.md"})).await;
    assert_eq!(read.is_error, Some(false), "{read:?}");
    let refused = structured(
        &call(
            &client,
            "skills_run_script",
            json!({"path": "scripts/hi.sh"}),
        )
        .await,
    );
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("user namespaces"), "{refused}");
    assert!(!marker.exists(), "the script ran unconfined");
    client.cancel().await.unwrap();
}

/// Where the kernel cannot bind folders out of a clone of the host's tree
/// (before Linux 6.15; here `open_tree` refused with `ENOSYS`, inherited
/// by the server and all it starts), a launcher keeps the host's tree
/// until its run and leaves it then, and runs see the same. With the
/// clone (the control), a launcher made ahead stands in its run's root
/// already, which has no `/proc`; without, it stands in the host's.
#[tokio::test]
async fn without_binds_from_a_clone_of_the_host_a_run_enters_its_root_when_it_comes() {
    let project = Project::new();
    project
        .sandbox
        .write("project/docs/notes.txt", "the notes\n");
    let outside = project.sandbox.write("elsewhere/secret.txt", "secret\n");
    project.skill(
        "notes",
        "permissions:\n  filesystem:\n    read: [\"docs/**\"]\n    write: [\"output/**\"]\n",
        &[(
            "scripts/notes.sh",
            "read -r notes < docs/notes.txt\necho \"$notes\"\necho kept > output/kept.txt\ntest -e \"$1\" && echo \"sees $1\"\ntest -e /proc/self && echo proc\nexit 0\n",
        )],
    );
    for refused in [false, true] {
        let mut command = tokio::process::Command::from(project.sandbox.mcp(&[]));
        if refused {
            let filter: seccompiler::BpfProgram = seccompiler::SeccompFilter::new(
                [(libc::SYS_open_tree, Vec::new())].into_iter().collect(),
                seccompiler::SeccompAction::Allow,
                seccompiler::SeccompAction::Errno(libc::ENOSYS as u32),
                std::env::consts::ARCH.try_into().unwrap(),
            )
            .unwrap()
            .try_into()
            .unwrap();
            // SAFETY: between fork and exec the child only installs the
            // filter compiled before the fork (a prctl and a seccomp call).
            #[allow(unsafe_code)]
            unsafe {
                command.pre_exec(move || {
                    seccompiler::apply_filter(&filter).map_err(std::io::Error::other)
                });
            }
        }
        let (transport, _) = TokioChildProcess::builder(command)
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let server = transport.id().unwrap();
        let client = ().serve(transport).await.unwrap();
        let _ = fs_err::remove_file(project.dir().join("output/kept.txt"));
        let ran = run_script(
            &client,
            "notes",
            "scripts/notes.sh",
            &[outside.to_str().unwrap()],
        )
        .await;
        assert_eq!(ran["exit_code"], 0, "{ran}");
        assert_eq!(ran["stdout"], "the notes\n", "refused {refused}: {ran}");
        assert_eq!(
            fs_err::read_to_string(project.dir().join("output/kept.txt")).unwrap(),
            "kept\n"
        );
        // The launchers made after the answer, ready for the next run.
        let mut roots = Vec::new();
        assert!(
            wait_until(Duration::from_secs(10), || {
                roots = launchers_of(server)
                    .iter()
                    .map(|pid| Path::new(&format!("/proc/{pid}/root/proc")).exists())
                    .collect();
                roots.len() >= 2
            }),
            "no launcher made ahead"
        );
        // Refused, the spares stand in the host's root (the launcher of
        // the run just over, in its run's root, may still be ending).
        let in_host = roots.iter().filter(|host| **host).count();
        assert!(
            if refused { in_host > 0 } else { in_host == 0 },
            "refused {refused}: launchers in the host's root: {roots:?}"
        );
        client.cancel().await.unwrap();
    }
}

/// A launcher made ahead holds the mount tree as it was then: once the
/// server's mount table changes, the launchers made before are not used.
/// The server runs in a mount namespace of the test's own, and a tmpfs is
/// mounted there on a folder of the project after the spares were made:
/// a run sees what the tmpfs holds, not the empty folder it covers.
#[tokio::test]
async fn a_folder_mounted_after_the_launchers_were_made_is_seen_by_the_next_run() {
    let project = Project::new();
    let covered = project.dir().join("docs/mounted");
    fs_err::create_dir_all(&covered).unwrap();
    project.skill(
        "look",
        "permissions:\n  filesystem:\n    read: [\"docs/**\"]\n",
        &[(
            "scripts/look.sh",
            "read -r seen < docs/mounted/file 2>/dev/null && echo \"$seen\" || echo nothing\n",
        )],
    );
    let server = project.sandbox.mcp(&[]);
    let mut command = std::process::Command::new("unshare");
    command.args([
        "--user",
        "--map-root-user",
        "--mount",
        "--propagation",
        "private",
    ]);
    skillpkg_tests::then_start(&mut command, &server);
    let (transport, _) = TokioChildProcess::builder(tokio::process::Command::from(command))
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = transport.id().unwrap();
    let client = ().serve(transport).await.unwrap();
    let before = run_script(&client, "look", "scripts/look.sh", &[]).await;
    assert_eq!(before["stdout"], "nothing\n", "{before}");
    assert!(
        wait_until(Duration::from_secs(10), || launchers_of(pid).len() >= 2),
        "no launcher made ahead"
    );
    let mounted = std::process::Command::new("nsenter")
        .args([
            "--target",
            &pid.to_string(),
            "--user",
            "--mount",
            "--preserve-credentials",
        ])
        .args([
            "sh",
            "-c",
            "mount -t tmpfs none \"$1\" && echo mounted > \"$1/file\"",
            "sh",
        ])
        .arg(&covered)
        .status()
        .unwrap();
    assert!(mounted.success(), "nsenter/mount: {mounted}");
    assert!(
        !covered.join("file").exists(),
        "the tmpfs is not the server's alone"
    );
    let after = structured(
        &call(
            &client,
            "skills_run_script",
            json!({"path": "scripts/look.sh"}),
        )
        .await,
    );
    assert_eq!(after["stdout"], "mounted\n", "{after}");
    client.cancel().await.unwrap();
}

/// The runs' launchers of the server `server`: the children of its
/// launcher factory.
fn launchers_of(server: u32) -> Vec<u32> {
    let parent = |pid: &str| -> Option<u32> {
        let stat = fs_err::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        stat.rsplit_once(')')?
            .1
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()
    };
    let pids: Vec<String> = fs_err::read_dir("/proc")
        .unwrap()
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.bytes().all(|byte| byte.is_ascii_digit()))
        .collect();
    let factories: Vec<u32> = pids
        .iter()
        .filter(|pid| parent(pid) == Some(server))
        .filter_map(|pid| pid.parse().ok())
        .collect();
    pids.iter()
        .filter(|pid| parent(pid).is_some_and(|parent| factories.contains(&parent)))
        .filter_map(|pid| pid.parse().ok())
        .collect()
}

/// `skillpkg mcp` on pipes, spoken to line by line: the test decides
/// when the client hangs up, or kills the server.
struct RawServer {
    process: std::process::Child,
    input: Option<std::process::ChildStdin>,
    output: std::io::BufReader<std::process::ChildStdout>,
}

impl RawServer {
    /// Starts a server of `project` with `TMPDIR` at `temporary`,
    /// initialized and with `quick` loaded.
    fn start(project: &Project, temporary: &Path) -> Self {
        let mut process = project
            .sandbox
            .mcp(&["--no-watch"])
            .env("TMPDIR", temporary)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let input = process.stdin.take();
        let output = std::io::BufReader::new(process.stdout.take().unwrap());
        let mut server = Self {
            process,
            input,
            output,
        };
        server.ask(
            Some(1),
            "initialize",
            &json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
        );
        server.ask(None, "notifications/initialized", &json!({}));
        server.ask(
            Some(2),
            "tools/call",
            &json!({"name": "skills_load", "arguments": {"names": ["quick"]}}),
        );
        server
    }

    /// Sends a request (with an id: waits for its answer, which must be a
    /// success) or a notification (without).
    fn ask(&mut self, id: Option<u64>, method: &str, params: &Value) {
        use std::io::{BufRead as _, Write as _};
        let mut request = json!({"jsonrpc": "2.0", "method": method, "params": params});
        let input = self.input.as_mut().expect("the client has not hung up");
        let Some(id) = id else {
            writeln!(input, "{request}").unwrap();
            return;
        };
        request["id"] = json!(id);
        writeln!(input, "{request}").unwrap();
        loop {
            let mut line = String::new();
            assert_ne!(
                self.output.read_line(&mut line).unwrap(),
                0,
                "the server ended"
            );
            let reply: Value = serde_json::from_str(&line).unwrap();
            if reply["id"] == id {
                assert!(reply.get("error").is_none(), "{reply}");
                assert_ne!(reply["result"]["isError"], true, "{reply}");
                return;
            }
        }
    }

    /// Runs `scripts/noop.sh` as request `id`.
    fn run(&mut self, id: u64) {
        self.ask(
            Some(id),
            "tools/call",
            &json!({"name": "skills_run_script", "arguments": {"path": "scripts/noop.sh"}}),
        );
    }
}

/// The names in `folder` that start with `prefix`.
fn named(folder: &Path, prefix: &str) -> Vec<String> {
    fs_err::read_dir(folder)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with(prefix))
        .collect()
}

/// How the names of the folders and cgroups of the server `pid` (of this
/// test's PID namespace) begin after their prefix.
fn owner_tag(pid: u32) -> String {
    use std::os::unix::fs::MetadataExt as _;
    let namespace = fs_err::metadata("/proc/self/ns/pid").unwrap().ino();
    format!("{namespace}-{pid}-")
}

/// Where a server run as root makes its runs' pids cgroups (cgroup v1's
/// `pids`), when it does.
fn run_cgroups() -> Option<&'static Path> {
    let cgroups = Path::new("/sys/fs/cgroup/pids");
    let root = std::os::unix::fs::MetadataExt::uid(&fs_err::metadata("/proc/self").unwrap()) == 0;
    (root && cgroups.join("cgroup.procs").exists()).then_some(cgroups)
}

/// A project with the skill `quick` (a no-op script), and a folder for
/// its servers' `TMPDIR`.
fn quick_project() -> (Project, PathBuf) {
    let project = Project::new();
    project.skill("quick", "", &[("scripts/noop.sh", "exit 0\n")]);
    let temporary = project.sandbox.path().join("tmp");
    fs_err::create_dir_all(&temporary).unwrap();
    (project, temporary)
}

/// A server killed (`SIGKILL`: no chance to stop anything) while a script
/// runs takes the run with it: the launcher sees that nobody can read the
/// run's status pipe any more and kills the run's init, and every process
/// of the run dies with the init. Without that the script spins on until
/// its CPU limit, a minute later.
#[test]
fn a_run_dies_with_a_server_killed_while_it_runs() {
    use std::io::Write as _;
    let (project, temporary) = quick_project();
    project.skill(
        "quick",
        "",
        &[
            ("scripts/noop.sh", "exit 0\n"),
            ("scripts/spin.sh", "while :; do :; done\n"),
        ],
    );
    let token = format!("spin-{}", std::process::id());
    let mut server = RawServer::start(&project, &temporary);
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "skills_run_script", "arguments": {"path": "scripts/spin.sh", "args": [token]}}});
    writeln!(server.input.as_mut().unwrap(), "{call}").unwrap();
    assert!(
        wait_until(Duration::from_secs(10), || !processes_with(&token)
            .is_empty()),
        "the script never ran, so this test proves nothing"
    );
    server.process.kill().unwrap();
    server.process.wait().unwrap();
    assert!(
        wait_until(Duration::from_secs(5), || processes_with(&token).is_empty()),
        "the run outlived its server: {:?}",
        processes_with(&token)
    );
}

/// A server whose client hangs up at once after its last answer, as a
/// benchmark or a one-shot agent does: the launchers it makes for the next
/// runs (right after each answer) are ended and removed with it, and so
/// are their scratch folders, the sealed copies and, where the server
/// makes them, the runs' pids cgroups.
#[test]
fn a_server_that_stops_right_after_an_answer_leaves_nothing_behind() {
    let (project, temporary) = quick_project();
    for _ in 0..6 {
        let mut server = RawServer::start(&project, &temporary);
        let pid = server.process.id();
        for id in 3..6 {
            server.run(id);
        }
        // Hang up the moment the last answer is read.
        drop(server.input.take());
        let status = server.process.wait().unwrap();
        assert!(status.success(), "{status}");
        let left = named(&temporary, "");
        assert!(left.is_empty(), "left in TMPDIR: {left:?}");
        if let Some(cgroups) = run_cgroups() {
            let left = named(cgroups, &format!("skillpkg-{}", owner_tag(pid)));
            assert!(left.is_empty(), "cgroups left: {left:?}");
        }
    }
}

/// A server killed with `SIGKILL` cannot clean up: its runs' scratch
/// folders, its sealed copies and its pids cgroups stay. The next server
/// removes them, and only them: what belongs to a process that still
/// runs is kept.
#[test]
fn what_a_killed_server_left_behind_the_next_server_removes() {
    let (project, temporary) = quick_project();
    let mut killed = RawServer::start(&project, &temporary);
    let dead = killed.process.id();
    killed.run(3);
    // The launchers made after the answer, with their scratch folders.
    std::thread::sleep(Duration::from_millis(300));
    killed.process.kill().unwrap();
    killed.process.wait().unwrap();
    // Its launchers end once they see its pipes close: a cgroup is
    // removable when no process is left in it.
    if let Some(cgroups) = run_cgroups() {
        let deadline = Instant::now() + Duration::from_secs(10);
        let busy = || {
            named(cgroups, &format!("skillpkg-{}", owner_tag(dead)))
                .iter()
                .any(|name| {
                    fs_err::read_to_string(cgroups.join(name).join("cgroup.procs"))
                        .is_ok_and(|procs| !procs.trim().is_empty())
                })
        };
        while busy() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let run = format!("skillpkg-run-{}", owner_tag(dead));
    let sealed = format!("skillpkg-sealed-{}", owner_tag(dead));
    let left = named(&temporary, "");
    assert!(
        left.iter().any(|name| name.starts_with(&run))
            && left.iter().any(|name| name.starts_with(&sealed)),
        "a killed server left no folder to remove, so this test proves nothing: {left:?}"
    );
    // A folder named for a process that runs (this test) is not stale,
    // nor one of another PID namespace, whose ids mean nothing here.
    let alive = temporary.join(format!(
        "skillpkg-run-{}kept",
        owner_tag(std::process::id())
    ));
    let elsewhere = temporary.join(format!("skillpkg-run-1-{dead}-kept"));
    for folder in [&alive, &elsewhere] {
        fs_err::create_dir(folder).unwrap();
    }
    // A link named like the killed server's folder is not followed: what
    // it leads to is nobody's leftover.
    let outside = project.sandbox.path().join("outside");
    fs_err::create_dir_all(&outside).unwrap();
    fs_err::write(outside.join("precious"), "kept").unwrap();
    let link_name = format!("{run}link");
    std::os::unix::fs::symlink(&outside, temporary.join(&link_name)).unwrap();

    let mut next = RawServer::start(&project, &temporary);
    next.run(3);
    let deadline = Instant::now() + Duration::from_secs(10);
    let stale = |left: &[String]| {
        left.iter()
            .filter(|name| name.starts_with(&run) || name.starts_with(&sealed))
            .filter(|name| **name != link_name)
            .cloned()
            .collect::<Vec<_>>()
    };
    while !stale(&named(&temporary, "")).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let left = named(&temporary, "");
    assert!(
        stale(&left).is_empty(),
        "the killed server's folders stayed: {left:?}"
    );
    assert!(alive.is_dir(), "a folder of a live process was removed");
    assert!(
        elsewhere.is_dir(),
        "a folder of another PID namespace was removed"
    );
    assert_eq!(
        fs_err::read_to_string(outside.join("precious")).unwrap(),
        "kept",
        "the sweep followed a link named like a leftover"
    );
    assert!(
        fs_err::symlink_metadata(temporary.join(&link_name))
            .unwrap()
            .is_symlink()
    );
    if let Some(cgroups) = run_cgroups() {
        let prefix = format!("skillpkg-{}", owner_tag(dead));
        while !named(cgroups, &prefix).is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        let left = named(cgroups, &prefix);
        assert!(
            left.is_empty(),
            "the killed server's cgroups stayed: {left:?}"
        );
    }
    drop(next.input.take());
    assert!(next.process.wait().unwrap().success());
}
