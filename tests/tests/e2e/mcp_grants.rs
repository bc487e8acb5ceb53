//! Grants that cannot reach agent or VCS configuration, through `skillpkg
//! mcp` driven by rmcp's client: a skill whose `permissions.filesystem.write`
//! reaches `.claude` or `.git` (by its text, or through a link made before
//! or after the server started) is refused with the rule named, and nothing
//! is written there; `--allow-grant SKILL=GLOB` lets exactly that grant
//! through; `skillpkg validate` warns about the same grants.
//! Expectations come from docs/runtime-sandbox.md ("Grants that cannot
//! reach agent or VCS configuration") and docs/skill-format.md.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt as _};
use serde_json::{Value, json};
use skillpkg_tests::TestContext;

type Client = RunningService<RoleClient, ()>;

/// A script that writes its first argument's file (relative to the working
/// folder, the project) and says whether it could.
const WRITE_SCRIPT: &str = r#"mkdir -p "$(dirname "$1")" 2>/dev/null
{ echo planted > "$1"; } 2>/dev/null && echo "wrote $1" || echo "denied $1"
"#;

struct Project {
    sandbox: TestContext,
}

impl Project {
    fn new() -> Self {
        let project = Self {
            sandbox: TestContext::new(),
        };
        fs_err::create_dir_all(project.dir()).unwrap();
        // A repository, with the folder git runs hooks from.
        fs_err::create_dir_all(project.dir().join(".git/hooks")).unwrap();
        fs_err::write(project.dir().join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        project
    }

    fn dir(&self) -> PathBuf {
        self.sandbox.path().join("project")
    }

    /// A Claude Code skill whose `write` grant is `glob`, with a script
    /// `scripts/write.sh` that writes where it is told.
    fn skill(&self, name: &str, glob: &str) {
        self.sandbox.write(
            &format!("project/.claude/skills/{name}/SKILL.md"),
            format!(
                "---\nname: {name}\ndescription: Test skill {name}.\npermissions:\n  filesystem:\n    write: [\"{glob}\"]\n---\n# {name}\n"
            ),
        );
        self.sandbox.write(
            &format!("project/.claude/skills/{name}/scripts/write.sh"),
            WRITE_SCRIPT,
        );
    }

    /// Starts `skillpkg mcp EXTRA...` with its stderr in `stderr.txt`.
    async fn connect(&self, extra: &[&str]) -> Client {
        let command = tokio::process::Command::from(self.sandbox.mcp(extra));
        let (stderr, _) = fs_err::File::create(self.stderr_path())
            .unwrap()
            .into_parts();
        let (transport, _) = TokioChildProcess::builder(command)
            .stderr(Stdio::from(stderr))
            .spawn()
            .unwrap();
        ().serve(transport).await.unwrap()
    }

    fn stderr_path(&self) -> PathBuf {
        self.sandbox.path().join("stderr.txt")
    }

    /// What the server printed on stderr (its start-up notes).
    fn stderr(&self) -> String {
        fs_err::read_to_string(self.stderr_path()).unwrap()
    }
}

/// Every path below `folder` with its contents (folders as `/`), sorted:
/// equal before and after means nothing was written there.
fn tree(folder: &Path) -> Vec<(String, Option<Vec<u8>>)> {
    let mut found = Vec::new();
    let mut stack = vec![folder.to_path_buf()];
    while let Some(current) = stack.pop() {
        for entry in fs_err::read_dir(&current).unwrap() {
            let path = entry.unwrap().path();
            let relative = path.strip_prefix(folder).unwrap().display().to_string();
            let metadata = fs_err::symlink_metadata(&path).unwrap();
            if metadata.is_dir() {
                found.push((format!("{relative}/"), None));
                stack.push(path);
            } else {
                found.push((relative, Some(fs_err::read(&path).unwrap_or_default())));
            }
        }
    }
    found.sort();
    found
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

/// The text a result carries: its content blocks and structured content.
fn text(result: &CallToolResult) -> String {
    let mut text = serde_json::to_string(&result.content).unwrap();
    if let Some(structured) = &result.structured_content {
        text.push_str(&structured.to_string());
    }
    text
}

/// Asserts that `skills_load` of `skill` fails naming the grant, the rule
/// and the flag that allows it.
async fn assert_not_served(client: &Client, skill: &str, glob: &str, rule: &str) {
    let loaded = call(client, "skills_load", json!({"names": [skill]})).await;
    assert_eq!(loaded.is_error, Some(true), "{loaded:?}");
    let message = text(&loaded);
    for part in [
        format!("skill `{skill}` is not served"),
        format!("`{glob}`"),
        format!("rule `{rule}`"),
        format!("--allow-grant '{skill}={glob}'"),
    ] {
        assert!(message.contains(&part), "{part} is not in {message}");
    }
}

#[tokio::test]
async fn a_write_grant_on_claude_is_refused_at_start_and_nothing_is_planted() {
    let project = Project::new();
    project.skill("planter", ".claude/**");
    project.skill("neighbour", "output/**");
    let claude_before = tree(&project.dir().join(".claude"));
    let client = project.connect(&[]).await;
    assert_not_served(&client, "planter", ".claude/**", "agent-config").await;
    let ran = call(
        &client,
        "skills_run_script",
        json!({"skill": "planter", "path": "scripts/write.sh", "args": [".claude/settings.json"]}),
    )
    .await;
    assert_eq!(ran.is_error, Some(true), "{ran:?}");
    // The operator read why at start.
    let stderr = project.stderr();
    assert!(
        stderr.contains("skill `planter` is not served") && stderr.contains("rule `agent-config`"),
        "{stderr}"
    );
    // A skill with a grant of its own is served beside it.
    let loaded = call(&client, "skills_load", json!({"names": ["neighbour"]})).await;
    assert_eq!(loaded.is_error, Some(false), "{loaded:?}");
    client.cancel().await.unwrap();
    assert!(!project.dir().join(".claude/settings.json").exists());
    assert_eq!(tree(&project.dir().join(".claude")), claude_before);
}

#[tokio::test]
async fn a_write_grant_on_git_hooks_is_refused_and_no_hook_is_written() {
    let project = Project::new();
    project.skill("hooker", ".git/hooks/**");
    // Case folds on macOS and some Linux file systems: `.GIT` is `.git`.
    project.skill("shouter", ".GIT/hooks/**");
    let git_before = tree(&project.dir().join(".git"));
    let client = project.connect(&[]).await;
    assert_not_served(&client, "hooker", ".git/hooks/**", "vcs").await;
    assert_not_served(&client, "shouter", ".GIT/hooks/**", "vcs").await;
    client.cancel().await.unwrap();
    assert_eq!(tree(&project.dir().join(".git")), git_before);
    assert!(!project.dir().join(".GIT").exists());
}

#[tokio::test]
async fn a_link_into_git_is_refused_whether_made_before_start_or_after() {
    let project = Project::new();
    project.skill("early", "early/**");
    project.skill("late", "late/**");
    std::os::unix::fs::symlink(".git/hooks", project.dir().join("early")).unwrap();
    let git_before = tree(&project.dir().join(".git"));
    let client = project.connect(&[]).await;
    assert_not_served(&client, "early", "early/**", "vcs").await;

    // Served at start, when `late` was nothing; linked into `.git` before
    // the run, which is refused before the script starts.
    let loaded = call(&client, "skills_load", json!({"names": ["late"]})).await;
    assert_eq!(loaded.is_error, Some(false), "{loaded:?}");
    std::os::unix::fs::symlink(".git/hooks", project.dir().join("late")).unwrap();
    let ran = call(
        &client,
        "skills_run_script",
        json!({"path": "scripts/write.sh", "args": ["late/pre-commit"]}),
    )
    .await;
    assert_eq!(ran.is_error, Some(true), "{ran:?}");
    let message = text(&ran);
    for part in ["`late/**`", "rule `vcs`", "--allow-grant 'late=late/**'"] {
        assert!(message.contains(part), "{part} is not in {message}");
    }
    assert!(!message.contains("wrote"), "{message}");
    client.cancel().await.unwrap();
    assert_eq!(tree(&project.dir().join(".git")), git_before);
    assert!(!project.dir().join(".git/hooks/pre-commit").exists());
}

#[tokio::test]
async fn a_write_grant_that_holds_a_repository_is_refused() {
    let project = Project::new();
    project.skill("vendorer", "vendor/**");
    fs_err::create_dir_all(project.dir().join("vendor/lib/.git/hooks")).unwrap();
    let client = project.connect(&[]).await;
    assert_not_served(&client, "vendorer", "vendor/**", "vcs").await;
    client.cancel().await.unwrap();
    assert!(
        fs_err::read_dir(project.dir().join("vendor/lib/.git/hooks"))
            .unwrap()
            .next()
            .is_none()
    );
}

#[tokio::test]
async fn allow_grant_lets_exactly_that_grant_through() {
    let project = Project::new();
    project.skill("planter", ".claude/**");
    project.skill("hooker", ".git/hooks/**");
    let client = project
        .connect(&[
            "--allow-grant",
            "planter=.claude/**",
            "--allow-grant",
            "hooker=./.git/hooks/**",
        ])
        .await;
    let loaded = call(&client, "skills_load", json!({"names": ["planter"]})).await;
    assert_eq!(loaded.is_error, Some(false), "{loaded:?}");
    let ran = call(
        &client,
        "skills_run_script",
        json!({"path": "scripts/write.sh", "args": [".claude/settings.local.json"]}),
    )
    .await;
    assert_eq!(ran.is_error, Some(false), "{ran:?}");
    assert_eq!(
        fs_err::read_to_string(project.dir().join(".claude/settings.local.json")).unwrap(),
        "planted\n"
    );
    // The allowance is for that pair only: another spelling of a glob is
    // another glob, and the operator is told it allows nothing.
    assert_not_served(&client, "hooker", ".git/hooks/**", "vcs").await;
    let stderr = project.stderr();
    assert!(
        stderr.contains("--allow-grant hooker=./.git/hooks/** allows nothing"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("planter=.claude/** allows nothing"),
        "{stderr}"
    );
    client.cancel().await.unwrap();
    assert!(!project.dir().join(".git/hooks/pre-commit").exists());
}

#[test]
fn a_malformed_allow_grant_is_a_usage_error() {
    let project = Project::new();
    let output = skillpkg_tests::run(&mut project.sandbox.mcp(&["--allow-grant", "Not A Skill"]));
    assert_eq!(output.code, 2, "{output:?}");
    assert!(output.stderr.contains("SKILL=GLOB"), "{}", output.stderr);
}

#[test]
fn validate_warns_about_the_same_grants() {
    let sandbox = TestContext::new();
    sandbox.skill(
        "planter",
        "planter",
        "permissions:\n  filesystem:\n    write: [\".claude/**\", \"output/**\"]\n    read: [\"config/.env\"]\n",
        "body\n",
    );
    // `permissions` is not a key of the base specification: that warning
    // is not this test's subject.
    let output = sandbox.skillpkg(["validate", "planter", "--allow", "non-portable-key"]);
    assert_eq!(output.code, 0, "warnings only: {output:?}");
    let stdout = &output.stdout;
    for part in [
        "warning[permission-protected-path]: `permissions.filesystem.write` pattern `.claude/**` reaches `.claude`",
        "(rule `agent-config`)",
        "warning[permission-protected-path]: `permissions.filesystem.read` pattern `config/.env` reaches `config/.env`",
        "(rule `credentials`)",
        "--allow-grant 'planter=.claude/**'",
    ] {
        assert!(stdout.contains(part), "{part} is not in:\n{stdout}");
    }
    assert!(!stdout.contains("`output/**` reaches"), "{stdout}");
    assert!(
        stdout.ends_with("1 valid, 0 invalid, 2 warnings\n"),
        "{stdout}"
    );
    let strict = sandbox.skillpkg([
        "validate",
        "planter",
        "--strict",
        "--allow",
        "non-portable-key",
    ]);
    assert_eq!(strict.code, 1, "{strict:?}");
}
