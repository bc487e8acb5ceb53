//! `skillpkg mcp` driven by a second, independent client: the official
//! Python MCP SDK (the `mcp` package `.ci/run` installs), through
//! `tests/mcp_client/session.py`. The driver only records; every
//! expectation is here, written from spec 001 and SEP-2640.

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};
use skillpkg_tests::{McpHttpServer, TestContext, mcp_python};

struct Project {
    sandbox: TestContext,
}

impl Project {
    /// pdf-processing (with a reference and a script) and data-analysis.
    fn new() -> Self {
        let sandbox = TestContext::new();
        let project = Self { sandbox };
        project.write(
            ".claude/skills/pdf-processing/SKILL.md",
            "---\nname: pdf-processing\ndescription: Extract text and tables from PDF files.\nlicense: MIT\n---\n# PDF\n\nRead references/forms.md, then run scripts/extract.py.\n",
        );
        project.write(
            ".claude/skills/pdf-processing/references/forms.md",
            "# Forms\nFill fields.\n",
        );
        project.write(
            ".claude/skills/pdf-processing/scripts/extract.py",
            "import sys\nprint('pages', sys.argv[1:])\n",
        );
        project.write(
            ".claude/skills/data-analysis/SKILL.md",
            "---\nname: data-analysis\ndescription: Analyse tables of data.\n---\n# Data\n\nUse pandas.\n",
        );
        project
    }

    fn dir(&self) -> PathBuf {
        self.sandbox.path().join("project")
    }

    fn write(&self, relative: &str, contents: &str) -> PathBuf {
        self.sandbox.write(&format!("project/{relative}"), contents)
    }

    fn server(&self) -> Command {
        self.sandbox.mcp(&[])
    }

    /// Runs `flow` against the server on stdio and returns its log.
    fn flow(&self, flow: &str) -> Vec<Value> {
        flow_with(&self.server(), flow)
    }
}

/// Runs `flow` against `server` on stdio and returns its log.
fn flow_with(server: &Command, flow: &str) -> Vec<Value> {
    flow_with_args(server, flow, &[])
}

/// [`flow_with`], with `extra` arguments for the flow.
fn flow_with_args(server: &Command, flow: &str, extra: &[&str]) -> Vec<Value> {
    let mut driver = driver(flow);
    driver.args(extra).arg("--");
    skillpkg_tests::then_start(&mut driver, server);
    record(&mut driver)
}

fn driver(flow: &str) -> Command {
    let mut command = Command::new(mcp_python());
    command
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("mcp_client/session.py"))
        .arg(flow);
    command
}

fn record(driver: &mut Command) -> Vec<Value> {
    let output = driver
        .output()
        .unwrap_or_else(|error| panic!("cannot run {driver:?}: {error}"));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    serde_json::from_str(&stdout).unwrap_or_else(|error| panic!("{error}: {stdout}"))
}

fn entries<'a>(log: &'a [Value], request: &str) -> Vec<&'a Value> {
    log.iter()
        .filter(|entry| entry["request"] == request)
        .collect()
}

fn prompt_text(entry: &Value) -> &str {
    entry["result"]["messages"][0]["content"]["text"]
        .as_str()
        .unwrap()
}

#[test]
fn the_catalog_is_served_to_the_python_client() {
    let project = Project::new();
    let log = project.flow("catalog");

    let init = &entries(&log, "initialize")[0]["result"];
    assert_eq!(init["serverInfo"]["name"], "skillpkg");
    assert_eq!(
        init["capabilities"]["extensions"]["io.modelcontextprotocol/skills"],
        json!({"directoryRead": true})
    );
    assert_eq!(init["capabilities"]["tools"]["listChanged"], true);

    let tools: Vec<&str> = entries(&log, "tools/list")[0]["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    for name in ["skills_load", "skills_unload", "skills_read"] {
        assert!(tools.contains(&name), "{tools:?}");
    }
    assert!(
        tools.iter().all(|name| !name.contains('.')),
        "no dots on the wire: {tools:?}"
    );

    let prompts: Vec<&str> = entries(&log, "prompts/list")[0]["result"]["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|prompt| prompt["name"].as_str().unwrap())
        .collect();
    assert_eq!(prompts, ["available_skills", "active_skills"]);

    let available = prompt_text(entries(&log, "prompts/get")[0]);
    assert!(
        available.starts_with("Skills are folders of instructions"),
        "{available}"
    );
    let pdf = project.dir().join(".claude/skills/pdf-processing");
    assert!(
        available.contains(&format!(
            "  <skill>\n    <name>pdf-processing</name>\n    <description>Extract text and tables from PDF files.</description>\n    <location>{}</location>\n  </skill>\n",
            pdf.join("SKILL.md").display()
        )),
        "{available}"
    );

    // skills/list: each skill's frontmatter as written, and every file with
    // the digest of its bytes; resources/read serves bytes with that digest.
    let listed = &entries(&log, "skills/list")[0]["result"]["skills"];
    let pdf_entry = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|skill| skill["uri"] == "skill://pdf-processing/SKILL.md")
        .expect("pdf-processing is listed");
    assert_eq!(
        pdf_entry["frontmatter"],
        json!({"name": "pdf-processing", "description": "Extract text and tables from PDF files.", "license": "MIT"})
    );
    let resources = pdf_entry["resources"].as_array().unwrap();
    assert_eq!(resources.len(), 3, "{resources:?}");
    for resource in resources {
        let uri = resource["uri"].as_str().unwrap();
        let path = uri.strip_prefix("skill://pdf-processing/").unwrap();
        let bytes = fs_err::read(pdf.join(path)).unwrap();
        assert_eq!(
            resource["digest"],
            format!("sha256:{:x}", Sha256::digest(&bytes))
        );
        assert_eq!(resource["size"], bytes.len());
        let read = entries(&log, "resources/read")
            .into_iter()
            .find(|entry| entry["uri"] == uri)
            .expect("every file was read");
        assert_eq!(
            read["result"]["contents"][0]["text"]
                .as_str()
                .unwrap()
                .as_bytes(),
            bytes.as_slice()
        );
    }
    for got in entries(&log, "skills/get") {
        let listed_entry = listed
            .as_array()
            .unwrap()
            .iter()
            .find(|skill| skill["uri"] == got["uri"])
            .unwrap();
        assert_eq!(&got["result"]["skill"], listed_entry);
    }
}

#[test]
fn skill_switching_replaces_the_instructions_in_force() {
    let project = Project::new();
    let log = project.flow("skill-switching");
    let calls = entries(&log, "tools/call");
    let prompts = entries(&log, "prompts/get");

    let first = &calls[0]["result"];
    assert_eq!(first["isError"], false);
    assert_eq!(
        first["structuredContent"]["active_skills"][0]["name"],
        "pdf-processing"
    );
    assert!(prompt_text(prompts[0]).contains("<skill name=\"pdf-processing\">"));

    // skills.load(names=["data-analysis"], mode="replace"): the state is
    // ["data-analysis"], and the next instructions carry only its body.
    let switched = &calls[1]["result"];
    let names: Vec<&str> = switched["structuredContent"]["active_skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|skill| skill["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["data-analysis"]);
    assert_eq!(
        prompt_text(prompts[1]),
        "<active_skills>\n  <skill name=\"data-analysis\">\n# Data\n\nUse pandas.\n  </skill>\n</active_skills>\n"
    );

    // The unloaded skill's files are no longer readable in this session.
    let stale = &calls[2]["result"];
    assert_eq!(stale["isError"], true);
    assert_eq!(
        stale["structuredContent"]["error"]["code"],
        "FAILED_PRECONDITION"
    );
}

/// Kills the server when the test ends, however it ends.
struct Running(std::process::Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn over_streamable_http_each_session_keeps_its_own_skills() {
    let project = Project::new();
    let mut child = project
        .server()
        .args(["--listen", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let _server = Running(child);
    let url = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("{line}"))
        .to_owned();
    assert!(
        url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"),
        "{url}"
    );

    let log = record(driver("http").args(["--url", &url]));
    let init = &entries(&log, "initialize")[0]["result"];
    // The Python SDK's HTTP client starts with initialize, so it gets the
    // newest version that has one, and the connection is the session
    // (tests/e2e/mcp_http.rs drives the stateless 2026-07-28 lifecycle).
    assert_eq!(init["protocolVersion"], "2025-11-25");
    let calls = entries(&log, "tools/call");
    assert_eq!(calls[0]["result"]["isError"], false, "{}", calls[0]);
    assert_eq!(
        calls[1]["result"]["content"][0]["text"], "# Forms\nFill fields.\n",
        "the load holds across requests of one session"
    );
    assert_eq!(
        calls[2]["result"]["structuredContent"]["error"]["code"], "FAILED_PRECONDITION",
        "the other session has loaded nothing"
    );

    // A request naming another host (DNS rebinding) is refused.
    let port = url
        .trim_start_matches("http://127.0.0.1:")
        .trim_end_matches("/mcp");
    let response = reqwest::blocking::Client::new()
        .post(&url)
        .header("Host", format!("attacker.example:{port}"))
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .body(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#)
        .send()
        .unwrap();
    assert_eq!(response.status().as_u16(), 403, "{:?}", response.text());

    // So is one a web page sends straight to 127.0.0.1 (it carries an Origin).
    let response = reqwest::blocking::Client::new()
        .post(&url)
        .header("Origin", "https://evil.example")
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .body(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#)
        .send()
        .unwrap();
    assert_eq!(response.status().as_u16(), 403, "{:?}", response.text());
}

#[test]
fn listening_anywhere_but_loopback_is_refused() {
    let project = Project::new();
    let output = skillpkg_tests::run(project.server().args(["--listen", "0.0.0.0:0"]));
    assert_eq!(output.code, 1, "{output:?}");
    // What comes before the error (the sandbox's limits) depends on the
    // kernel's Landlock; the refusal does not.
    let stderr = project.sandbox.redact(&output.stderr);
    let refusal = &stderr[stderr.find("error:").expect("an error")..];
    insta::assert_snapshot!(refusal, @"
    error: 0.0.0.0:0 is not a loopback address, and no --token-file is given
    hint: skillpkg mcp runs a skill's scripts for whoever connects: listen on 127.0.0.1 or [::1], or add --token-file FILE so that only bearers of its token get in
    ");
}

#[test]
fn the_python_client_gets_in_with_the_token_and_its_calls_stay_in_order() {
    let project = text_tools_project();
    let token_file = project.sandbox.path().join("token");
    let mut command = project.server();
    command.arg("--token-file").arg(&token_file);
    let server = McpHttpServer::start(command);
    let token = fs_err::read_to_string(&token_file).unwrap();
    let log =
        record(driver("http-pipelined").args(["--url", &server.url, "--token", token.trim()]));
    assert_every_round_applied_in_order(&log);
}

#[test]
fn choose_activate_use_runs_as_spec_001_describes() {
    let project = Project::new();
    let log = project.flow("choose-activate-use");
    let calls = entries(&log, "tools/call");
    let prompts = entries(&log, "prompts/get");

    // 1. The model sees the available skills, with the loading rule.
    let available = prompt_text(prompts[0]);
    assert!(
        available.contains("MUST call the skills_load tool"),
        "{available}"
    );
    assert!(
        available.contains("<name>pdf-processing</name>"),
        "{available}"
    );

    // 2.-3. It loads the skill; the receipt names it, with its digest.
    let skill_md =
        fs_err::read(project.dir().join(".claude/skills/pdf-processing/SKILL.md")).unwrap();
    let receipt = &calls[0]["result"]["structuredContent"]["active_skills"][0];
    assert_eq!(receipt["name"], "pdf-processing");
    assert_eq!(
        receipt["digest"],
        format!("sha256:{:x}", Sha256::digest(&skill_md))
    );

    // 4. The next call's instructions carry the body.
    assert_eq!(
        prompt_text(prompts[1]),
        "<active_skills>\n  <skill name=\"pdf-processing\">\n# PDF\n\nRead references/forms.md, then run scripts/extract.py.\n  </skill>\n</active_skills>\n"
    );

    // 5. It reads a reference and runs a script of the skill.
    assert_eq!(
        calls[1]["result"]["content"][0]["text"],
        "# Forms\nFill fields.\n"
    );
    let ran = &calls[2]["result"];
    assert_eq!(ran["isError"], false, "{ran}");
    assert_eq!(
        ran["structuredContent"],
        json!({
            "path": "scripts/extract.py",
            "exit_code": 0,
            "stdout": "pages ['--pages', '2']\n",
            "stderr": "",
        })
    );
}

#[test]
fn a_tool_runs_only_when_the_user_approves_it_through_elicitation() {
    let project = Project::new();
    project.write(
        ".claude/skills/cleanup/SKILL.md",
        "---\nname: cleanup\ndescription: Delete generated output.\ntools:\n  - name: delete-output\n    description: Delete generated output files.\n    confirmation:\n      level: destructive_writes\n      prompt: \"This will delete files under output/**.\"\n    input_schema:\n      type: object\n      additionalProperties: false\n      properties:\n        dry_run: { type: boolean }\n      required: [dry_run]\n    implementation:\n      runtime: bash\n      entrypoint: scripts/delete.sh\n---\n# Cleanup\n",
    );
    project.write(
        ".claude/skills/cleanup/scripts/delete.sh",
        "read -r line\necho \"{\\\"deleted\\\": 2, \\\"request\\\": $line}\"\n",
    );
    let audit = project.sandbox.path().join("audit.jsonl");
    let mut server = project.server();
    server.arg("--audit-log").arg(&audit);
    let log = flow_with(&server, "confirm");

    let asked = entries(&log, "elicitation/create");
    assert_eq!(asked.len(), 2, "asked before each call");
    let message = asked[0]["params"]["message"].as_str().unwrap();
    assert!(message.contains("`delete-output`"), "{message}");
    assert!(
        message.contains("This will delete files under output/**."),
        "{message}"
    );

    let calls = entries(&log, "tools/call");
    assert_eq!(calls[0]["result"]["isError"], false, "{}", calls[0]);
    assert_eq!(
        calls[0]["result"]["structuredContent"],
        json!({"deleted": 2, "request": {"dry_run": false}})
    );
    assert_eq!(calls[1]["result"]["isError"], true);
    assert_eq!(
        calls[1]["result"]["structuredContent"]["error"]["code"],
        "APPROVAL_DENIED"
    );

    let lines: Vec<Value> = fs_err::read_to_string(&audit)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let states: Vec<&str> = lines
        .iter()
        .filter(|line| line["tool"] == "cleanup__delete-output")
        .map(|line| line["approval_state"].as_str().unwrap())
        .collect();
    assert_eq!(states, ["APPROVED", "DENIED"]);
}

/// A project whose `text-tools` skill has a tool and a reference.
fn text_tools_project() -> Project {
    let project = Project::new();
    project.write(
        ".claude/skills/text-tools/SKILL.md",
        "---\nname: text-tools\ndescription: Count words. Use when testing.\ntools:\n  - name: word-count\n    description: Count the words of a text.\n    input_schema:\n      type: object\n      additionalProperties: false\n      properties:\n        text: { type: string }\n      required: [text]\n    implementation:\n      runtime: python\n      entrypoint: scripts/count.py\n---\n# Text\n",
    );
    project.write(
        ".claude/skills/text-tools/scripts/count.py",
        "import json, sys\nargs = json.load(sys.stdin)\nprint(json.dumps({'count': len(args['text'].split())}))\n",
    );
    project.write(
        ".claude/skills/text-tools/references/usage.md",
        "Count words.\n",
    );
    project
}

/// Asserts that in every round of the `pipelined` flow the calls sent with
/// the load, without waiting for it, found the skill loaded.
fn assert_every_round_applied_in_order(log: &[Value]) {
    let rounds = entries(log, "round");
    assert_eq!(rounds.len(), 100);
    let failed: Vec<&&Value> = rounds
        .iter()
        .filter(|round| {
            let [load, tool, read] = &round["results"].as_array().unwrap()[..] else {
                panic!("three results: {round}")
            };
            !(load["isError"] == false
                && tool["structuredContent"]["count"] == 2
                && read["content"][0]["text"] == "Count words.\n")
        })
        .collect();
    assert!(
        failed.is_empty(),
        "{} of 100 rounds saw a call before the load it followed, first: {}",
        failed.len(),
        failed[0]
    );
}

#[test]
fn calls_sent_right_after_a_load_find_it_loaded_on_stdio() {
    let project = text_tools_project();
    assert_every_round_applied_in_order(&project.flow("pipelined"));
}

#[test]
fn calls_sent_right_after_a_load_find_it_loaded_over_http() {
    let project = text_tools_project();
    let server = McpHttpServer::start(project.server());
    let log = record(driver("http-pipelined").args(["--url", &server.url]));
    assert_every_round_applied_in_order(&log);
}

#[test]
fn at_2026_07_28_the_python_client_answers_roots_and_confirmations_asked_in_the_result() {
    let project = Project::new();
    project.write(
        ".claude/skills/cleanup/SKILL.md",
        "---\nname: cleanup\ndescription: Delete generated output.\ntools:\n  - name: delete-output\n    description: Delete generated output files.\n    confirmation:\n      level: destructive_writes\n      prompt: \"This will delete files under output/**.\"\n    input_schema:\n      type: object\n      additionalProperties: false\n      properties:\n        dry_run: { type: boolean }\n      required: [dry_run]\n    implementation:\n      runtime: bash\n      entrypoint: scripts/delete.sh\n---\n# Cleanup\n",
    );
    project.write(
        ".claude/skills/cleanup/scripts/delete.sh",
        "read -r line\necho \"{\\\"deleted\\\": 2, \\\"request\\\": $line}\"\n",
    );
    project.write(
        ".claude/skills/where/SKILL.md",
        "---\nname: where\ndescription: Say where a script runs.\n---\n# Where\n",
    );
    project.write(".claude/skills/where/scripts/pwd.sh", "pwd\n");
    // The client's root: outside the project, so only roots let a script
    // work there.
    let root = project.sandbox.path().join("client-root");
    fs_err::create_dir_all(&root).unwrap();
    let server = McpHttpServer::start(project.server());
    let log =
        record(driver("modern").args(["--url", &server.url, "--root", root.to_str().unwrap()]));

    let connected = entries(&log, "connect");
    assert_eq!(connected[0]["protocolVersion"], "2026-07-28");
    let calls = entries(&log, "tools/call");
    let handle = calls[0]["result"]["structuredContent"]["session"]
        .as_str()
        .unwrap_or_else(|| panic!("a session handle: {}", calls[0]));
    assert!(handle.starts_with("sess_"), "{handle}");
    // The script ran in the client's root, which the client gave when the
    // server asked in the result.
    assert_eq!(calls[1]["result"]["isError"], false, "{}", calls[1]);
    assert_eq!(
        calls[1]["result"]["structuredContent"]["stdout"]
            .as_str()
            .unwrap()
            .trim(),
        root.to_str().unwrap()
    );
    assert!(
        !entries(&log, "roots/list").is_empty(),
        "the client was asked for its roots"
    );
    // Approved, the tool ran; declined, it did not.
    let asked = entries(&log, "elicitation/create");
    assert_eq!(asked.len(), 2, "asked before each call: {log:?}");
    assert!(
        asked[0]["params"]["message"]
            .as_str()
            .unwrap()
            .contains("This will delete files under output/**."),
        "{}",
        asked[0]
    );
    assert_eq!(
        calls[2]["result"]["structuredContent"],
        json!({"deleted": 2, "request": {"dry_run": false}}),
        "{}",
        calls[2]
    );
    assert_eq!(
        calls[3]["result"]["structuredContent"]["error"]["code"], "APPROVAL_DENIED",
        "{}",
        calls[3]
    );
    server.stop();
}

#[test]
fn a_skill_written_while_serving_reaches_the_python_client() {
    let project = Project::new();
    let notes = project.dir().join(".claude/skills/notes");
    let log = flow_with_args(
        &project.server(),
        "live",
        &["--skill", notes.to_str().unwrap()],
    );
    let uris = |entry: &Value| -> Vec<String> {
        entry["result"]["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|resource| resource["uri"].as_str().unwrap().to_owned())
            .collect()
    };
    let lists = entries(&log, "resources/list");
    assert!(!uris(lists[0]).contains(&"skill://notes/SKILL.md".to_owned()));
    assert_eq!(
        entries(&log, "notifications/resources/list_changed").len(),
        1,
        "{log:?}"
    );
    assert!(
        uris(lists[1]).contains(&"skill://notes/SKILL.md".to_owned()),
        "{}",
        lists[1]
    );
    let loaded = entries(&log, "tools/call");
    assert_eq!(loaded[0]["result"]["isError"], false, "{}", loaded[0]);
    assert!(
        loaded[0]["result"]["content"][1]["text"]
            .as_str()
            .unwrap()
            .contains("Written later."),
        "{}",
        loaded[0]
    );
}
