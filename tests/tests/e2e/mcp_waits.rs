//! Every wait of `skillpkg mcp` is bounded, and secrets come only from the
//! variables the operator passed (docs/runtime-tools.md, "Waits" and
//! "Secrets"): a client that declares roots and never answers `roots/list`
//! gets the project folder as the root within `--client-timeout`, and is
//! not waited for again until its roots change; `--timeout` bounds the
//! whole call, waiting for the client included; a skill's secret reaches
//! it only with `--pass-env`, and what its script prints of it, encoded
//! or not, is redacted.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ErrorData,
    Implementation,
};
use rmcp::service::{RequestContext, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, RoleClient, ServiceExt as _};
use serde_json::{Value, json};
use skillpkg_tests::TestContext;

/// A client that declares the `roots` capability and never answers
/// `roots/list`, like a client whose roots handler is stuck.
struct SilentRoots;

impl ClientHandler for SilentRoots {
    fn get_info(&self) -> ClientConfig {
        let capabilities: ClientCapabilities =
            serde_json::from_value(json!({"roots": {"listChanged": true}})).unwrap();
        ClientConfig::new(capabilities, Implementation::new("silent-roots", "1.0.0"))
    }

    #[allow(deprecated)] // Roots are deprecated by SEP-2577; clients still send them.
    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ListRootsResult, ErrorData> {
        std::future::pending().await
    }
}

type Client<H = SilentRoots> = RunningService<RoleClient, H>;

/// No call may take longer than this in these tests: the old server waited
/// for `roots/list` forever, and a test should fail, not hang.
const HANG: Duration = Duration::from_secs(20);

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

    fn dir(&self) -> PathBuf {
        self.sandbox.path().join("project")
    }

    fn skill(&self, name: &str, frontmatter: &str, files: &[(&str, &str)]) {
        self.sandbox.project_skill(name, frontmatter, files);
    }

    /// Starts `skillpkg mcp` with `extra` flags and `env` variables, and
    /// connects `client` to it.
    async fn connect<H: ClientHandler>(
        &self,
        client: H,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> Client<H> {
        let mut command = self.sandbox.mcp(extra);
        command.envs(env.iter().copied());
        let (transport, _) = TokioChildProcess::builder(tokio::process::Command::from(command))
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        client.serve(transport).await.unwrap()
    }
}

/// Calls `tool`, failing the test if the server has not answered within
/// [`HANG`]; returns the result and how long it took.
async fn timed_call<H: ClientHandler>(
    client: &Client<H>,
    tool: &str,
    arguments: Value,
) -> (CallToolResult, Duration) {
    let Value::Object(arguments) = arguments else {
        panic!("an object")
    };
    let started = Instant::now();
    let result = tokio::time::timeout(
        HANG,
        client.call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments)),
    )
    .await
    .unwrap_or_else(|_| panic!("{tool} was not answered within {HANG:?}"))
    .unwrap();
    (result, started.elapsed())
}

fn structured(result: &CallToolResult) -> Value {
    result
        .structured_content
        .clone()
        .expect("structured content")
}

fn notes(result: &Value) -> String {
    result["notes"]
        .as_array()
        .map(|notes| {
            notes
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

async fn load<H: ClientHandler>(client: &Client<H>, skill: &str) {
    let (loaded, _) = timed_call(client, "skills_load", json!({"names": [skill]})).await;
    assert_eq!(loaded.is_error, Some(false), "{loaded:?}");
}

#[tokio::test]
async fn a_client_that_never_answers_roots_list_gets_the_project_folder_as_root_and_a_note() {
    let project = Project::new();
    project.skill("where", "", &[("scripts/pwd.sh", "pwd\n")]);
    let client = project
        .connect(SilentRoots, &["--client-timeout", "1"], &[])
        .await;
    load(&client, "where").await;

    let (ran, took) = timed_call(
        &client,
        "skills_run_script",
        json!({"path": "scripts/pwd.sh"}),
    )
    .await;
    let ran = structured(&ran);
    assert_eq!(ran["exit_code"], 0, "{ran}");
    assert_eq!(
        PathBuf::from(ran["stdout"].as_str().unwrap().trim_end())
            .canonicalize()
            .unwrap(),
        project.dir().canonicalize().unwrap(),
        "the project folder is the root, and the working folder"
    );
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_secs(4),
        "waited --client-timeout (1 s), not more: {took:?}"
    );
    let first = notes(&ran);
    assert!(
        first.contains("did not answer roots/list within 1 s")
            && first.contains(&project.dir().display().to_string()),
        "{ran}"
    );

    // The session remembers: the next call does not wait again.
    let (again, took) = timed_call(
        &client,
        "skills_run_script",
        json!({"path": "scripts/pwd.sh"}),
    )
    .await;
    let again = structured(&again);
    assert_eq!(again["exit_code"], 0, "{again}");
    assert!(took < Duration::from_millis(900), "{took:?}");
    assert!(notes(&again).contains("earlier in this session"), "{again}");

    // Until the client says its roots changed: then it is asked again.
    client.peer().notify_roots_list_changed().await.unwrap();
    // rmcp handles a notification and a request that follows it in tasks of
    // their own: give the notification its moment.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (asked, took) = timed_call(
        &client,
        "skills_run_script",
        json!({"path": "scripts/pwd.sh"}),
    )
    .await;
    let asked = structured(&asked);
    assert!(took >= Duration::from_millis(900), "{took:?}");
    assert!(
        notes(&asked).contains("did not answer roots/list within 1 s"),
        "{asked}"
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn the_timeout_bounds_the_whole_call_even_when_the_client_is_silent() {
    let project = Project::new();
    project.skill(
        "slow",
        "",
        &[("scripts/sleep.py", "import time\ntime.sleep(30)\n")],
    );
    let audit = project.sandbox.path().join("audit.jsonl");
    // The client timeout (5 s by default) is longer than the call's.
    let client = project
        .connect(
            SilentRoots,
            &["--timeout", "2", "--audit-log", audit.to_str().unwrap()],
            &[],
        )
        .await;
    load(&client, "slow").await;
    let (result, took) = timed_call(
        &client,
        "skills_run_script",
        json!({"path": "scripts/sleep.py"}),
    )
    .await;
    assert!(took < Duration::from_millis(3500), "{took:?}");
    let envelope = structured(&result);
    assert_eq!(result.is_error, Some(true), "{envelope}");
    assert_eq!(envelope["error"]["code"], "TIMEOUT", "{envelope}");
    assert_eq!(envelope["error"]["retriable"], true, "{envelope}");
    assert!(
        envelope["error"]["message"]
            .as_str()
            .unwrap()
            .contains("roots/list"),
        "{envelope}"
    );
    client.cancel().await.unwrap();
    let line: Value = fs_err::read_to_string(&audit)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .find(|line| line["tool"] == "skills_run_script")
        .expect("the call has its audit line");
    assert_eq!(line["error_code"], "TIMEOUT", "{line}");
    assert!(line["duration_ms"].as_u64().unwrap() < 3500, "{line}");
}

#[tokio::test]
async fn waiting_for_the_client_counts_against_the_scripts_time() {
    let project = Project::new();
    project.skill(
        "slow",
        "",
        &[("scripts/sleep.py", "import time\ntime.sleep(30)\n")],
    );
    // 2 s for roots/list, then what is left of 4 s for the script: 4 s in
    // all, where a timeout for the script alone would make it 6 s.
    let client = project
        .connect(
            SilentRoots,
            &["--timeout", "4", "--client-timeout", "2"],
            &[],
        )
        .await;
    load(&client, "slow").await;
    let (result, took) = timed_call(
        &client,
        "skills_run_script",
        json!({"path": "scripts/sleep.py"}),
    )
    .await;
    let ran = structured(&result);
    assert_eq!(ran["timed_out"], true, "{ran}");
    assert!(notes(&ran).contains("roots/list"), "{ran}");
    assert!(
        took >= Duration::from_millis(3900) && took < Duration::from_millis(5200),
        "{took:?}"
    );
    client.cancel().await.unwrap();
}

const SECRET: &str = "s3cr3t/value+from-the-server";

const PRINT_SECRET: &str = r#"import base64, os, urllib.parse
value = os.environ["SERVER_ONLY_SECRET"]
print("plain", value)
print("reversed", value[::-1])
print("base64", base64.b64encode(value.encode()).decode())
print("hex", value.encode().hex())
print("url", urllib.parse.quote(value, safe=""))
print("length", len(value))
print("optional", os.environ.get("OPTIONAL_SERVER_SECRET", "absent"))
"#;

#[tokio::test]
async fn a_skill_gets_a_secret_only_when_the_operator_passes_it_and_its_encodings_are_redacted() {
    let project = Project::new();
    project.skill(
        "leaky",
        "secrets:\n  required:\n    - name: SERVER_ONLY_SECRET\n      usage: env\n    - name: OPTIONAL_SERVER_SECRET\n      usage: env\n      optional: true\n",
        &[("scripts/print.py", PRINT_SECRET)],
    );
    let env = [
        ("SERVER_ONLY_SECRET", SECRET),
        ("OPTIONAL_SERVER_SECRET", "optional-server-value"),
    ];

    // Declaring the name is not enough. (A client without roots: nothing
    // here waits for the client.)
    let client = project.connect((), &[], &env).await;
    load(&client, "leaky").await;
    let (refused, _) = timed_call(
        &client,
        "skills_run_script",
        json!({"path": "scripts/print.py"}),
    )
    .await;
    let refused = structured(&refused);
    assert_eq!(refused["error"]["code"], "PERMISSION_DENIED", "{refused}");
    let message = refused["error"]["message"].as_str().unwrap();
    for expected in [
        "`SERVER_ONLY_SECRET`",
        "skill `leaky`",
        "--pass-env SERVER_ONLY_SECRET",
    ] {
        assert!(message.contains(expected), "{expected}: {refused}");
    }
    assert!(!refused.to_string().contains(SECRET), "{refused}");
    client.cancel().await.unwrap();

    // Passed by the operator, it reaches the script, and whatever the
    // script prints of it is redacted; the optional secret that was not
    // passed stays out, with a note.
    let client = project
        .connect((), &["--pass-env", "SERVER_ONLY_SECRET"], &env)
        .await;
    load(&client, "leaky").await;
    let (ran, _) = timed_call(
        &client,
        "skills_run_script",
        json!({"path": "scripts/print.py"}),
    )
    .await;
    let ran = structured(&ran);
    assert_eq!(ran["exit_code"], 0, "{ran}");
    let stdout = ran["stdout"].as_str().unwrap();
    for form in ["plain", "reversed", "base64", "hex", "url"] {
        assert!(
            stdout
                .lines()
                .any(|line| line.starts_with(&format!("{form} [REDACTED:SERVER_ONLY_SECRET]"))),
            "{form}: {stdout}"
        );
    }
    assert!(
        stdout.contains(&format!("length {}\n", SECRET.len())),
        "{stdout}"
    );
    assert!(stdout.contains("optional absent\n"), "{stdout}");
    assert!(!stdout.contains("optional-server-value"), "{stdout}");
    assert!(
        notes(&ran).contains("--pass-env OPTIONAL_SERVER_SECRET"),
        "{ran}"
    );
    client.cancel().await.unwrap();
}
