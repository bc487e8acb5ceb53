//! `skillpkg new` end to end: the skills it writes validate on every host,
//! and their scripts do what the tool's schemas say.

use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};

use skillpkg_tests::{Output, TestContext, run};

/// The hosts whose rules a skill with a tool must pass.
const HOSTS: &[&str] = &[
    "claude-api",
    "claude-code",
    "codex",
    "copilot",
    "mcp",
    "openai",
];

/// The Universal keys a skill with a tool holds. Until a host's profile
/// says it reads them, every host reports them as not portable
/// (`non-portable-key`, a warning that --strict turns into an error); the
/// scaffold keeps them, since they are what makes the tool a tool.
const EXTENSION_KEYS: &[&str] = &["permissions", "safety", "tools"];

/// The (code, message) of each diagnostic of the only skill in `output`.
fn diagnostics(output: &Output) -> Vec<(String, String)> {
    output.json()["skills"][0]["diagnostics"]
        .as_array()
        .expect("diagnostics")
        .iter()
        .map(|d| {
            (
                d["code"].as_str().unwrap_or_default().to_owned(),
                d["message"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

/// Runs the script at `path` with `input` on stdin.
fn run_script(path: &Path, input: &str) -> Output {
    let mut child = Command::new(path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|error| panic!("cannot run {}: {error}", path.display()));
    child
        .stdin
        .take()
        .expect("piped stdin")
        .write_all(input.as_bytes())
        .expect("write stdin");
    let output = child.wait_with_output().expect("wait for the script");
    Output {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

#[test]
fn a_new_skill_passes_strict_validation() {
    let sandbox = TestContext::new();
    let output = sandbox.skillpkg(["new", "pdf-forms"]);
    assert_eq!(output.code, 0, "{output:?}");
    insta::assert_snapshot!(sandbox.redact(&output.stderr), @"
    Created pdf-forms (SKILL.md)
       Next fill in pdf-forms/SKILL.md, then run `skillpkg validate pdf-forms`
    ");
    let skill_md = fs_err::read_to_string(sandbox.path().join("pdf-forms/SKILL.md")).unwrap();
    assert!(
        skill_md.starts_with("---\nname: pdf-forms\ndescription: "),
        "{skill_md}"
    );
    assert!(
        skill_md.contains("metadata:\n  version: \"0.1.0\"\n"),
        "{skill_md}"
    );

    let output = run(sandbox
        .skillpkg_command()
        .args(["validate", "--strict", "pdf-forms"]));
    assert_eq!(output.code, 0, "{output:?}");
    assert_eq!(output.stdout, "1 valid, 0 invalid, 0 warnings\n");
}

#[test]
fn a_new_skill_with_a_tool_passes_strict_validation_on_every_host() {
    for runtime in ["python", "node", "bash"] {
        let sandbox = TestContext::new();
        let output = run(sandbox.skillpkg_command().args([
            "new",
            "word-tools",
            "--tools",
            "--runtime",
            runtime,
            "--description",
            "Count words in a text. Use when a user asks how long a text is.",
        ]));
        assert_eq!(output.code, 0, "{runtime}: {output:?}");
        for host in HOSTS {
            let output = run(sandbox.skillpkg_command().args([
                "validate",
                "--strict",
                "--json",
                "--host",
                host,
                "word-tools",
            ]));
            let found = diagnostics(&output);
            let not_portable: Vec<String> = EXTENSION_KEYS
                .iter()
                .map(|key| {
                    format!(
                        "`{key}` is a key of the Universal Agent Skill extensions, not of the Agent Skills specification"
                    )
                })
                .collect();
            let others: Vec<&(String, String)> = found
                .iter()
                .filter(|(code, message)| {
                    !(code == "non-portable-key" && not_portable.contains(message))
                })
                .collect();
            assert!(others.is_empty(), "{runtime} on {host}: {others:#?}");
            // With those keys allowed, nothing at all is reported.
            let output = run(sandbox.skillpkg_command().args([
                "validate",
                "--strict",
                "--json",
                "--allow",
                "non-portable-key",
                "--host",
                host,
                "word-tools",
            ]));
            assert_eq!(output.code, 0, "{runtime} on {host}: {output:?}");
            assert_eq!(diagnostics(&output), [], "{runtime} on {host}");
        }
    }
}

#[test]
fn each_runtimes_script_reads_json_and_writes_json() {
    // CI installs node and jq (.ci/run): a missing one fails here, loudly.
    for (runtime, script) in [
        ("python", "count-words.py"),
        ("node", "count-words.mjs"),
        ("bash", "count-words.sh"),
    ] {
        let sandbox = TestContext::new();
        let output = run(sandbox.skillpkg_command().args([
            "new",
            "counter",
            "--tools",
            "--runtime",
            runtime,
        ]));
        assert_eq!(output.code, 0, "{runtime}: {output:?}");
        let path = sandbox.path().join("counter/scripts").join(script);
        assert!(skillpkg_tests::is_executable(&path), "{runtime}");

        let output = run_script(&path, r#"{"text": "Grüße aus  Köln\n"}"#);
        assert_eq!(output.code, 0, "{runtime}: {output:?}");
        let answer: serde_json::Value = serde_json::from_str(&output.stdout)
            .unwrap_or_else(|error| panic!("{runtime}: not JSON ({error}): {output:?}"));
        assert_eq!(
            answer,
            serde_json::json!({ "words": 3, "characters": 16 }),
            "{runtime}"
        );

        let output = run_script(&path, r#"{"text": 42}"#);
        assert_eq!(output.code, 1, "{runtime}: {output:?}");
        let answer: serde_json::Value = serde_json::from_str(&output.stdout)
            .unwrap_or_else(|error| panic!("{runtime}: not JSON ({error}): {output:?}"));
        assert_eq!(answer["status"], "error", "{runtime}: {answer}");
        assert_eq!(answer["error"]["code"], "INVALID_ARGUMENT", "{runtime}");
    }
}

#[test]
fn an_invalid_name_is_refused_with_the_name_it_meant() {
    let sandbox = TestContext::new();
    let output = sandbox.skillpkg(["new", "PDF Forms"]);
    assert_eq!(output.code, 1, "{output:?}");
    insta::assert_snapshot!(sandbox.redact(&output.stderr), @"
    error: `PDF Forms` is not a valid skill name
      Caused by: the name contains 'P' at position 1; only lowercase letters a-z, digits and `-` are allowed
    hint: use `pdf-forms`: lowercase letters, digits and single `-` inside
    ");
    let left: Vec<_> = fs_err::read_dir(sandbox.path()).unwrap().collect();
    assert!(left.is_empty(), "nothing is written: {left:?}");
}

#[test]
fn an_existing_folder_is_refused_and_left_alone() {
    let sandbox = TestContext::new();
    sandbox.write("skills/pdf-forms/notes.txt", "mine\n");
    let output =
        run(sandbox
            .skillpkg_command()
            .args(["new", "pdf-forms", "--tools", "--path", "skills"]));
    assert_eq!(output.code, 1, "{output:?}");
    insta::assert_snapshot!(sandbox.redact(&output.stderr), @"
    error: `skills/pdf-forms` already exists
    hint: choose another name or --path; nothing was written
    ");
    let names: Vec<String> = fs_err::read_dir(sandbox.path().join("skills"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["pdf-forms"], "no temporary folder is left behind");
    let names: Vec<String> = fs_err::read_dir(sandbox.path().join("skills/pdf-forms"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["notes.txt"]);
}

#[test]
fn a_description_that_would_make_the_skill_invalid_writes_nothing() {
    let sandbox = TestContext::new();
    let output = run(sandbox.skillpkg_command().args([
        "new",
        "pdf-forms",
        "--description",
        &"x".repeat(1025),
    ]));
    assert_eq!(output.code, 1, "{output:?}");
    insta::assert_snapshot!(sandbox.redact(&output.stderr), @"
    error: the skill would not be valid: `description` is 1025 characters long; the limit is 1024
    hint: move the details into the body, which is read only when the skill is used; nothing was written
    ");
    let left: Vec<_> = fs_err::read_dir(sandbox.path()).unwrap().collect();
    assert!(left.is_empty(), "nothing is written: {left:?}");
}

#[test]
fn the_description_is_kept_as_given() {
    let sandbox = TestContext::new();
    let text = "Fill forms: \"quoted\" # kept - all of it";
    let output = run(sandbox.skillpkg_command().args([
        "new",
        "pdf-forms",
        "--path",
        ".claude/skills",
        "--description",
        text,
    ]));
    assert_eq!(output.code, 0, "{output:?}");
    let dir = sandbox.path().join(".claude/skills/pdf-forms");
    let report = skillpkg_index::skill::validate_skill(
        &dir,
        &skillpkg_index::skill::ValidateOptions::for_folder(&dir),
    );
    let frontmatter = report.frontmatter.expect("a valid skill");
    assert_eq!(frontmatter.description, text);
    assert_eq!(
        frontmatter.version.map(|version| version.to_string()),
        Some("0.1.0".to_owned())
    );
}
