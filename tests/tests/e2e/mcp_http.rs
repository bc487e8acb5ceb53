//! `skillpkg mcp --listen` at protocol 2026-07-28, driven by rmcp's own
//! streamable HTTP client with the stateless lifecycle (`server/discover`,
//! per-request `_meta`, no `Mcp-Session-Id`): sessions as handles
//! (SEP-2567), SEP-2640's directory reads, cursors and MIME types, and the
//! Origin rules. Expectations come from the MCP specification, SEP-2567 and
//! SEP-2640, and from the files written here.

use rmcp::RoleClient;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ErrorCode, GetPromptRequestParams,
    PaginatedRequestParams, ProtocolVersion, ReadResourceDirectoryRequestParams,
    ReadResourceRequestParams, ResourceContents,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt as _, RunningService, ServiceError};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use skillpkg_tests::{McpHttpServer, TestContext, run};

type Client = RunningService<RoleClient, ()>;

const WORD_COUNT: &str = r#"tools:
  - name: word-count
    description: Count the words of a text.
    input_schema:
      type: object
      additionalProperties: false
      properties:
        text: { type: string }
      required: [text]
    output_schema:
      type: object
      properties:
        count: { type: integer }
      required: [count]
    implementation:
      runtime: python
      entrypoint: scripts/count.py
"#;

/// pdf-processing (a reference, a script, a PNG and a file of no known
/// type) and text-tools (one tool), for Claude Code.
fn project() -> TestContext {
    let sandbox = TestContext::new();
    sandbox.project_skill(
        "pdf-processing",
        "",
        &[
            ("references/forms.md", "# Forms\nFill fields.\n"),
            (
                "scripts/extract.py",
                "import sys\nprint('pages', sys.argv[1:])\n",
            ),
            ("assets/logo.png", "\u{89}PNG\r\n\u{1a}\n\0\0\0\rIHDR"),
            ("assets/blob", "\0\u{1}\u{2}binary"),
        ],
    );
    sandbox.project_skill(
        "text-tools",
        WORD_COUNT,
        &[
            ("references/usage.md", "Count words.\n"),
            (
                "scripts/count.py",
                "import json, sys\nargs = json.load(sys.stdin)\nprint(json.dumps({'count': len(args['text'].split())}))\n",
            ),
        ],
    );
    sandbox
}

/// A client on the 2026-07-28 stateless lifecycle.
async fn connect(url: &str) -> Client {
    try_connect(url, None)
        .await
        .expect("server/discover succeeds")
}

/// A client on the 2026-07-28 stateless lifecycle that sends `token`.
async fn try_connect(
    url: &str,
    token: Option<&str>,
) -> Result<Client, rmcp::service::ClientInitializeError> {
    // reqwest 0.13 is built here with no TLS provider of its own, and
    // panics building a client without one, even for http://.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_owned());
    if let Some(token) = token {
        config = config.auth_header(token.to_owned());
    }
    ().serve_with_lifecycle(
        StreamableHttpClientTransport::from_config(config),
        ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        },
    )
    .await
}

async fn call(client: &Client, tool: &str, arguments: Value) -> CallToolResult {
    let Value::Object(arguments) = arguments else {
        panic!("arguments are an object")
    };
    client
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments))
        .await
        .unwrap_or_else(|error| panic!("{tool} gets a result: {error}"))
}

fn structured(result: &CallToolResult) -> &Value {
    result
        .structured_content
        .as_ref()
        .unwrap_or_else(|| panic!("structured content in {result:?}"))
}

fn error_code(result: &CallToolResult) -> &str {
    assert_eq!(result.is_error, Some(true), "{result:?}");
    structured(result)["error"]["code"]
        .as_str()
        .unwrap_or_else(|| panic!("an error envelope in {result:?}"))
}

fn first_text(result: &CallToolResult) -> String {
    result.content[0]
        .as_text()
        .unwrap_or_else(|| panic!("text in {result:?}"))
        .text
        .clone()
}

#[tokio::test]
async fn at_2026_07_28_a_session_is_a_handle_the_tools_take_back() {
    let sandbox = project();
    let audit = sandbox.path().join("audit.jsonl");
    let server = McpHttpServer::start(sandbox.mcp(&["--audit-log", audit.to_str().unwrap()]));
    let client = connect(&server.url).await;
    assert_eq!(
        client
            .peer_info()
            .expect("the server's discover result")
            .protocol_version,
        ProtocolVersion::V_2026_07_28,
        "the stateless lifecycle was negotiated"
    );

    // With no connection to hold a loaded set, tools/list shows every
    // served skill's tools, each asking for the session that loaded it.
    let tools = client.list_all_tools().await.unwrap();
    for runtime in [
        "skills_load",
        "skills_unload",
        "skills_read",
        "skills_run_script",
    ] {
        let tool = tools
            .iter()
            .find(|tool| tool.name == runtime)
            .unwrap_or_else(|| panic!("{runtime} is listed"));
        assert_eq!(
            tool.input_schema["properties"]["session"]["type"], "string",
            "{runtime} takes a session"
        );
    }
    let word_count = tools
        .iter()
        .find(|tool| tool.name == "text-tools__word-count")
        .expect("the skill's tool is listed");
    let required: Vec<&str> = word_count.input_schema["required"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(required, ["text", "session"]);
    assert!(
        word_count
            .description
            .as_deref()
            .is_some_and(|text| text.contains("skills_load")),
        "{word_count:?}"
    );

    // Without a handle nothing is loaded, and the model is told why.
    let unloaded = call(
        &client,
        "skills_read",
        json!({"path": "references/forms.md"}),
    )
    .await;
    assert_eq!(error_code(&unloaded), "FAILED_PRECONDITION");
    assert!(
        structured(&unloaded)["notes"][0]
            .as_str()
            .is_some_and(|note| note.contains("`session`")),
        "{unloaded:?}"
    );

    // A load mints a handle; the later requests name it.
    let loaded = call(&client, "skills_load", json!({"names": ["pdf-processing"]})).await;
    assert_eq!(loaded.is_error, Some(false), "{loaded:?}");
    let handle = structured(&loaded)["session"]
        .as_str()
        .expect("the receipt carries the handle")
        .to_owned();
    assert!(
        handle.len() == 37
            && handle.starts_with("sess_")
            && handle[5..].bytes().all(|byte| byte.is_ascii_hexdigit()),
        "{handle}"
    );
    let read = call(
        &client,
        "skills_read",
        json!({"path": "references/forms.md", "session": handle}),
    )
    .await;
    assert_eq!(first_text(&read), "# Forms\nFill fields.\n");

    // The tool of a skill this session has not loaded is refused, by name.
    let early = call(
        &client,
        "text-tools__word-count",
        json!({"text": "one two", "session": handle}),
    )
    .await;
    assert_eq!(error_code(&early), "FAILED_PRECONDITION");
    assert!(
        structured(&early)["error"]["message"]
            .as_str()
            .is_some_and(|message| message.contains("`text-tools`")),
        "{early:?}"
    );
    let without = call(
        &client,
        "text-tools__word-count",
        json!({"text": "one two"}),
    )
    .await;
    assert_eq!(error_code(&without), "FAILED_PRECONDITION");

    // Adding to the session keeps its handle; then the tool runs.
    let added = call(
        &client,
        "skills_load",
        json!({"names": ["text-tools"], "mode": "add", "session": handle}),
    )
    .await;
    assert_eq!(structured(&added)["session"], handle.as_str());
    let names: Vec<&str> = structured(&added)["active_skills"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|skill| skill["name"].as_str())
        .collect();
    assert_eq!(names, ["pdf-processing", "text-tools"]);
    let counted = call(
        &client,
        "text-tools__word-count",
        json!({"text": "one two three", "session": handle}),
    )
    .await;
    assert_eq!(counted.is_error, Some(false), "{counted:?}");
    assert_eq!(structured(&counted)["count"], 3);

    // The active_skills prompt takes the handle too.
    let prompt = client
        .get_prompt(
            GetPromptRequestParams::new("active_skills")
                .with_arguments(json!({"session": handle}).as_object().unwrap().clone()),
        )
        .await
        .unwrap();
    let text = serde_json::to_string(&prompt.messages).unwrap();
    assert!(
        text.contains("<skill name=\\\"pdf-processing\\\">")
            && text.contains("<skill name=\\\"text-tools\\\">"),
        "{text}"
    );

    // A handle the server never made, or not a string, changes nothing.
    let forged = call(
        &client,
        "skills_unload",
        json!({"all": true, "session": format!("sess_{}", "0".repeat(32))}),
    )
    .await;
    assert_eq!(error_code(&forged), "FAILED_PRECONDITION");
    let wrong = call(&client, "skills_unload", json!({"all": true, "session": 7})).await;
    assert_eq!(error_code(&wrong), "INVALID_ARGUMENT");
    let still = call(
        &client,
        "skills_read",
        json!({"skill": "text-tools", "path": "references/usage.md", "session": handle}),
    )
    .await;
    assert_eq!(first_text(&still), "Count words.\n");

    // Unloading through the handle empties that session.
    let unloaded = call(
        &client,
        "skills_unload",
        json!({"all": true, "session": handle}),
    )
    .await;
    assert_eq!(structured(&unloaded)["active_skills"], json!([]));
    let after = call(
        &client,
        "skills_read",
        json!({"path": "references/forms.md", "session": handle}),
    )
    .await;
    assert_eq!(error_code(&after), "FAILED_PRECONDITION");
    client.cancel().await.unwrap();

    // The audit log tells the session's calls apart without the handle
    // that would let a reader of the log use it.
    let log = fs_err::read_to_string(&audit).unwrap();
    assert!(!log.contains(&handle), "{log}");
    let short = format!("{}…", &handle[..13]);
    let lines: Vec<Value> = log
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let passed = lines
        .iter()
        .filter(|line| line["arguments"]["session"] == short.as_str())
        .count();
    assert_eq!(passed, 7, "the calls that passed the handle:\n{log}");
    // Those and the load that made it are one session in the log.
    let of_session = lines
        .iter()
        .filter(|line| line["session"] == short.as_str())
        .count();
    assert_eq!(of_session, 8, "{log}");
}

fn invalid_params(result: Result<impl std::fmt::Debug, ServiceError>) -> String {
    match result {
        Err(ServiceError::McpError(error)) => {
            assert_eq!(error.code, ErrorCode::INVALID_PARAMS, "{error:?}");
            error.message.into_owned()
        }
        other => panic!("expected -32602, got {other:?}"),
    }
}

#[tokio::test]
async fn sep_2640_directories_read_in_both_spellings_with_a_type_for_every_resource() {
    let sandbox = project();
    let server = McpHttpServer::start(sandbox.mcp(&[]));
    let client = connect(&server.url).await;

    let mut listings = Vec::new();
    for uri in ["skill://pdf-processing", "skill://pdf-processing/"] {
        let listing = client
            .read_resource_directory(ReadResourceDirectoryRequestParams::new(uri))
            .await
            .unwrap_or_else(|error| panic!("{uri}: {error}"));
        let mut children: Vec<(String, Option<String>)> = listing
            .resources
            .iter()
            .map(|resource| (resource.uri.clone(), resource.mime_type.clone()))
            .collect();
        children.sort();
        listings.push(children);
    }
    assert_eq!(listings[0], listings[1], "both spellings name the root");
    let expected: Vec<(String, Option<String>)> = [
        ("skill://pdf-processing/SKILL.md", "text/markdown"),
        ("skill://pdf-processing/assets", "inode/directory"),
        ("skill://pdf-processing/references", "inode/directory"),
        ("skill://pdf-processing/scripts", "inode/directory"),
    ]
    .into_iter()
    .map(|(uri, mime)| (uri.to_owned(), Some(mime.to_owned())))
    .collect();
    assert_eq!(listings[0], expected);

    let assets = client
        .read_resource_directory(ReadResourceDirectoryRequestParams::new(
            "skill://pdf-processing/assets",
        ))
        .await
        .unwrap();
    for resource in &assets.resources {
        let expected = if resource.uri.ends_with(".png") {
            "image/png"
        } else {
            "application/octet-stream"
        };
        assert_eq!(
            resource.mime_type.as_deref(),
            Some(expected),
            "{resource:?}"
        );
    }
    // A binary read carries its type as well.
    for (uri, mime) in [
        ("skill://pdf-processing/assets/logo.png", "image/png"),
        (
            "skill://pdf-processing/assets/blob",
            "application/octet-stream",
        ),
    ] {
        let read = client
            .read_resource(ReadResourceRequestParams::new(uri))
            .await
            .unwrap();
        match &read.contents[0] {
            ResourceContents::BlobResourceContents { mime_type, .. } => {
                assert_eq!(mime_type.as_deref(), Some(mime), "{uri}");
            }
            other => panic!("{uri} is binary: {other:?}"),
        }
    }

    // Every list fits in one page, so no cursor is valid.
    let cursor = || Some(PaginatedRequestParams::default().with_cursor(Some("page-2".into())));
    let message = invalid_params(client.list_skills(cursor()).await);
    assert!(message.contains("page-2"), "{message}");
    invalid_params(client.list_resources(cursor()).await);
    invalid_params(client.list_tools(cursor()).await);
    invalid_params(client.list_prompts(cursor()).await);
    invalid_params(
        client
            .read_resource_directory(
                ReadResourceDirectoryRequestParams::new("skill://pdf-processing")
                    .with_cursor("page-2"),
            )
            .await,
    );
    client.cancel().await.unwrap();
}

/// POSTs a `tools/list` with `origin` (if any) and returns the HTTP status.
fn status_with_origin(server: &McpHttpServer, origin: Option<&str>) -> u16 {
    let headers: Vec<(&str, &str)> = origin
        .map(|origin| ("Origin", origin))
        .into_iter()
        .collect();
    post_with(&server.url, &headers).0
}

#[test]
fn a_page_of_the_servers_own_address_may_call_it_and_no_other_unless_allowed() {
    let sandbox = project();
    let server = McpHttpServer::start(sandbox.mcp(&[
        "--allow-origin",
        "http://localhost:6274",
        "--allow-origin",
        "https://inspector.example:*",
    ]));
    let port = server.authority().rsplit(':').next().unwrap().to_owned();
    assert_eq!(
        status_with_origin(&server, None),
        200,
        "MCP clients send no Origin"
    );
    for own in [
        format!("http://{}", server.authority()),
        format!("http://localhost:{port}"),
    ] {
        assert_eq!(status_with_origin(&server, Some(&own)), 200, "{own}");
    }
    for allowed in [
        "http://localhost:6274",
        "https://inspector.example:8443",
        "https://inspector.example",
    ] {
        assert_eq!(status_with_origin(&server, Some(allowed)), 200, "{allowed}");
    }
    for refused in [
        "https://evil.example",
        "http://localhost:6275",
        // The server's port under another scheme, or another loopback name
        // it was not asked to answer to, is another origin.
        &format!("https://127.0.0.1:{port}"),
        "null",
    ] {
        assert_eq!(status_with_origin(&server, Some(refused)), 403, "{refused}");
    }
}

#[test]
fn allow_origin_takes_only_an_origin_and_only_with_listen() {
    let sandbox = project();
    for (arguments, message) in [
        (&["--allow-origin", "http://localhost:6274"][..], "--listen"),
        (
            &[
                "--listen",
                "127.0.0.1:0",
                "--allow-origin",
                "http://a.example/path",
            ][..],
            "has a path",
        ),
        (
            &["--listen", "127.0.0.1:0", "--allow-origin", "file:///etc"][..],
            "not an http or https origin",
        ),
        (
            &[
                "--listen",
                "127.0.0.1:0",
                "--allow-origin",
                "localhost:6274",
            ][..],
            "not an http or https origin",
        ),
    ] {
        let output = run(&mut sandbox.mcp(arguments));
        assert_eq!(output.code, 2, "{arguments:?}: {}", output.stderr);
        assert!(
            output.stderr.contains(message),
            "{arguments:?}: {}",
            output.stderr
        );
    }
}

/// POSTs a `tools/list` at 2026-07-28 with `headers` added; returns the
/// status and the `WWW-Authenticate` header.
fn post_with(url: &str, headers: &[(&str, &str)]) -> (u16, String) {
    let mut request = reqwest::blocking::Client::new()
        .post(url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/list")
        .body(
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}
            }}})
            .to_string(),
        );
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().unwrap();
    let challenge = response
        .headers()
        .get("www-authenticate")
        .map(|value| value.to_str().unwrap().to_owned())
        .unwrap_or_default();
    (response.status().as_u16(), challenge)
}

/// [`post_with`] with `Authorization: <authorization>`.
fn post_authorized(url: &str, authorization: &str) -> (u16, String) {
    post_with(url, &[("Authorization", authorization)])
}

#[test]
fn with_a_token_file_only_bearers_of_its_token_get_in() {
    let sandbox = project();
    let token_file = sandbox.path().join("secrets/mcp-token");
    fs_err::create_dir_all(token_file.parent().unwrap()).unwrap();
    let mut command = sandbox.mcp(&[]);
    command.arg("--token-file").arg(&token_file);
    let server = McpHttpServer::start(command);
    let token = fs_err::read_to_string(&token_file)
        .unwrap()
        .trim()
        .to_owned();
    assert_eq!(token.len(), 43, "256 bits, base64url: {token}");
    {
        use std::os::unix::fs::MetadataExt as _;
        assert_eq!(fs_err::metadata(&token_file).unwrap().mode() & 0o777, 0o600);
    }
    // The token is shown once, when it is made.
    let stderr = server.stderr_with(&token);
    assert_eq!(stderr.matches(&token).count(), 1, "{stderr}");

    let metadata_url = format!(
        "http://{}/.well-known/oauth-protected-resource/mcp",
        server.authority()
    );
    let (status, challenge) = post_with(&server.url, &[]);
    assert_eq!(status, 401);
    assert_eq!(
        challenge,
        format!("Bearer resource_metadata=\"{metadata_url}\"")
    );
    for wrong in [
        format!("Bearer {}", &token[..42]),
        format!("Bearer {token}x"),
        format!("Basic {token}"),
        token.clone(),
    ] {
        let (status, challenge) = post_authorized(&server.url, &wrong);
        assert_eq!(status, 401, "{wrong}");
        assert!(
            challenge.ends_with("error=\"invalid_token\""),
            "{challenge}"
        );
    }
    assert_eq!(
        post_authorized(&server.url, &format!("Bearer {token}")).0,
        200
    );
    // A Host that would break out of the challenge's quoted URL (a quote,
    // a space, a comma) is not echoed: the bound address stands in.
    for hostile in ["evil\", error=\"x", "a b", "a,b=c", "x/../../y"] {
        let (status, challenge) = post_with(&server.url, &[("Host", hostile)]);
        assert_eq!(status, 401, "{hostile}");
        assert_eq!(
            challenge,
            format!("Bearer resource_metadata=\"{metadata_url}\""),
            "{hostile}"
        );
    }
    // (A plain name is echoed, which shows the Host above was sent: the
    // client named the server so, and the URL is only for it.)
    let (_, challenge) = post_with(&server.url, &[("Host", "other.example:1")]);
    assert!(
        challenge.contains("\"http://other.example:1/.well-known/"),
        "{challenge}"
    );

    // RFC 9728's metadata is public, and names this resource.
    let metadata: Value = reqwest::blocking::get(&metadata_url)
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(metadata["resource"], server.url.as_str());
    assert_eq!(metadata["bearer_methods_supported"], json!(["header"]));

    // rmcp's client: refused without the token, served with it. (Its own
    // runtime: the blocking requests above and below may not run in one.)
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        assert!(try_connect(&server.url, None).await.is_err());
        let client = try_connect(&server.url, Some(&token)).await.unwrap();
        let loaded = call(&client, "skills_load", json!({"names": ["pdf-processing"]})).await;
        assert_eq!(loaded.is_error, Some(false), "{loaded:?}");
        client.cancel().await.unwrap();
    });
    drop(runtime);

    // Started again, the server keeps the token and shows it no more.
    drop(server);
    let mut command = sandbox.mcp(&[]);
    command.arg("--token-file").arg(&token_file);
    let again = McpHttpServer::start(command);
    assert_eq!(fs_err::read_to_string(&token_file).unwrap().trim(), token);
    assert_eq!(
        post_authorized(&again.url, &format!("Bearer {token}")).0,
        200
    );
    let stderr = again.stop();
    assert!(
        stderr.contains("Serving") && !stderr.contains(&token),
        "{stderr}"
    );
}

#[test]
fn beyond_loopback_the_server_listens_only_with_a_token() {
    let sandbox = project();
    let output = run(&mut sandbox.mcp(&["--listen", "0.0.0.0:0"]));
    assert_eq!(output.code, 1, "{}", output.stderr);
    assert!(output.stderr.contains("--token-file"), "{}", output.stderr);

    let token_file = sandbox.path().join("token");
    let mut command = sandbox.mcp(&[]);
    command.arg("--token-file").arg(&token_file);
    let server = McpHttpServer::start_on(command, "0.0.0.0:0");
    let token = fs_err::read_to_string(&token_file)
        .unwrap()
        .trim()
        .to_owned();
    let url = format!("http://127.0.0.1:{}/mcp", server.port());
    assert_eq!(post_with(&url, &[]).0, 401);
    // The names clients use on the network are not known to the server:
    // any Host is served to a bearer of the token, none without it.
    let bearer = format!("Bearer {token}");
    assert_eq!(
        post_with(
            &url,
            &[
                ("Authorization", &bearer),
                ("Host", "skills.internal.example:8750")
            ]
        )
        .0,
        200
    );
    assert_eq!(
        post_with(&url, &[("Host", "skills.internal.example:8750")]).0,
        401
    );
}

#[test]
fn a_token_file_others_can_read_or_too_short_is_refused() {
    let sandbox = project();
    let token_file = sandbox.write("token", "0123456789abcdefghijklmnopqrstuvwxyz\n");
    {
        use std::os::unix::fs::PermissionsExt as _;
        fs_err::set_permissions(&token_file, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    let mut command = sandbox.mcp(&["--listen", "127.0.0.1:0"]);
    command.arg("--token-file").arg(&token_file);
    let output = run(&mut command);
    assert_eq!(output.code, 1, "{}", output.stderr);
    assert!(
        output.stderr.contains("can be read by other users"),
        "{}",
        output.stderr
    );
    assert!(output.stderr.contains("chmod 600"), "{}", output.stderr);
    let output = run(&mut sandbox.mcp(&["--token-file", "x"]));
    assert_eq!(
        output.code, 2,
        "--token-file needs --listen: {}",
        output.stderr
    );
}

#[test]
fn a_session_a_client_deletes_is_answered_as_clients_expect_and_is_gone() {
    let sandbox = project();
    let server = McpHttpServer::start(sandbox.mcp(&[]));
    let client = reqwest::blocking::Client::new();
    let initialized = client
        .post(&server.url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .body(
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"}
            }})
            .to_string(),
        )
        .send()
        .unwrap();
    let session = initialized.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let deleted = client
        .delete(&server.url)
        .header("Mcp-Session-Id", &session)
        .header("MCP-Protocol-Version", "2025-11-25")
        .send()
        .unwrap();
    // 200 or 204 is what the Python SDK takes for a completed termination.
    assert_eq!(deleted.status().as_u16(), 204);
    let after = client
        .post(&server.url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("Mcp-Session-Id", &session)
        .header("MCP-Protocol-Version", "2025-11-25")
        .body(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string())
        .send()
        .unwrap();
    assert_eq!(after.status().as_u16(), 404, "the session is gone");
}

/// A client that answers confirmations from a list, and keeps what it was
/// asked: rmcp drives 2026-07-28's rounds through it.
#[derive(Clone, Default)]
struct Approver {
    answers: std::sync::Arc<std::sync::Mutex<Vec<bool>>>,
    asked: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl rmcp::ClientHandler for Approver {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        let mut config = rmcp::model::ClientConfig::default();
        config.capabilities.elicitation = Some(rmcp::model::ElicitationCapability::new());
        config
    }

    async fn create_elicitation(
        &self,
        request: rmcp::model::ElicitRequestParams,
        _context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::model::ErrorData> {
        if let rmcp::model::ElicitRequestParams::FormElicitationParams { message, .. } = request {
            self.asked.lock().unwrap().push(message);
        }
        let approve = self.answers.lock().unwrap().remove(0);
        Ok(if approve {
            rmcp::model::ElicitResult::new(rmcp::model::ElicitationAction::Accept)
                .with_content(json!({"approve": true}))
        } else {
            rmcp::model::ElicitResult::new(rmcp::model::ElicitationAction::Decline)
        })
    }
}

#[tokio::test]
async fn at_2026_07_28_a_confirmation_goes_back_in_the_result_and_its_answer_runs_the_tool_once() {
    let sandbox = TestContext::new();
    sandbox.project_skill(
        "cleanup",
        "tools:\n  - name: delete-output\n    description: Delete generated output files.\n    confirmation:\n      level: destructive_writes\n      prompt: \"This will delete files under output/**.\"\n    input_schema:\n      type: object\n      additionalProperties: false\n      properties:\n        dry_run: { type: boolean }\n      required: [dry_run]\n    implementation:\n      runtime: bash\n      entrypoint: scripts/delete.sh\n",
        &[(
            "scripts/delete.sh",
            "read -r line\necho \"{\\\"deleted\\\": 2, \\\"request\\\": $line}\"\n",
        )],
    );
    let audit = sandbox.path().join("audit.jsonl");
    let server = McpHttpServer::start(sandbox.mcp(&["--audit-log", audit.to_str().unwrap()]));
    let _ = rustls::crypto::ring::default_provider().install_default();
    let approver = Approver::default();
    approver.answers.lock().unwrap().extend([true, false]);
    let client = approver
        .clone()
        .serve_with_lifecycle(
            StreamableHttpClientTransport::from_uri(server.url.clone()),
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .unwrap();
    let loaded = call_with(&client, "skills_load", json!({"names": ["cleanup"]})).await;
    let handle = loaded.structured_content.unwrap()["session"]
        .as_str()
        .unwrap()
        .to_owned();

    // rmcp gets an InputRequiredResult, asks, and calls again with the
    // answer and the state: approved, the tool runs.
    let approved = call_with(
        &client,
        "cleanup__delete-output",
        json!({"dry_run": false, "session": handle}),
    )
    .await;
    assert_eq!(approved.is_error, Some(false), "{approved:?}");
    assert_eq!(
        approved.structured_content.unwrap(),
        json!({"deleted": 2, "request": {"dry_run": false}})
    );
    // Declined, it does not.
    let declined = call_with(
        &client,
        "cleanup__delete-output",
        json!({"dry_run": false, "session": handle}),
    )
    .await;
    assert_eq!(
        declined.structured_content.unwrap()["error"]["code"],
        "APPROVAL_DENIED"
    );
    let asked = approver.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 2, "asked before each call");
    assert!(
        asked[0].contains("This will delete files under output/**."),
        "{asked:?}"
    );

    // By hand: the first round answers with the question and a state...
    let Value::Object(arguments) = json!({"dry_run": false, "session": handle}) else {
        unreachable!()
    };
    let first = client
        .peer()
        .call_tool_once(
            CallToolRequestParams::new("cleanup__delete-output").with_arguments(arguments.clone()),
        )
        .await
        .unwrap();
    let rmcp::model::CallToolResponse::InputRequired(asked) = first else {
        panic!("a question, not a run: {first:?}")
    };
    let state = asked.request_state.unwrap();
    let yes = rmcp::model::InputResponses::from([(
        "confirm".to_owned(),
        json!({"action": "accept", "content": {"approve": true}}),
    )]);
    // ...which approves no other arguments...
    let Value::Object(other) = json!({"dry_run": true, "session": handle}) else {
        unreachable!()
    };
    let moved = client
        .peer()
        .call_tool_once(
            CallToolRequestParams::new("cleanup__delete-output")
                .with_arguments(other)
                .with_input_responses(yes.clone())
                .with_request_state(state.clone()),
        )
        .await
        .unwrap();
    let rmcp::model::CallToolResponse::Complete(moved) = moved else {
        panic!("{moved:?}")
    };
    assert_eq!(error_code(&moved), "INVALID_ARGUMENT");
    // ...runs its own call once...
    let answer = || {
        CallToolRequestParams::new("cleanup__delete-output")
            .with_arguments(arguments.clone())
            .with_input_responses(yes.clone())
            .with_request_state(state.clone())
    };
    let ran = client.peer().call_tool_once(answer()).await.unwrap();
    let rmcp::model::CallToolResponse::Complete(ran) = ran else {
        panic!("{ran:?}")
    };
    assert_eq!(ran.is_error, Some(false), "{ran:?}");
    // ...and not twice.
    let replayed = client.peer().call_tool_once(answer()).await.unwrap();
    let rmcp::model::CallToolResponse::Complete(replayed) = replayed else {
        panic!("{replayed:?}")
    };
    assert_eq!(error_code(&replayed), "INVALID_ARGUMENT");
    client.cancel().await.unwrap();

    // The log: each question pending, then each decision; the tool ran
    // exactly twice (the approved call and the answered one).
    let lines: Vec<Value> = fs_err::read_to_string(&audit)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .filter(|line: &Value| line["tool"] == "cleanup__delete-output")
        .collect();
    let outcomes: Vec<(&str, &str)> = lines
        .iter()
        .map(|line| {
            (
                line["outcome"].as_str().unwrap(),
                line["approval_state"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        outcomes,
        [
            ("input_required", "PENDING"),
            ("ok", "APPROVED"),
            ("input_required", "PENDING"),
            ("error", "DENIED"),
            ("input_required", "PENDING"),
            ("error", "PENDING"),
            ("ok", "APPROVED"),
            ("error", "PENDING"),
        ]
    );
}

async fn call_with<S: rmcp::service::Service<RoleClient>>(
    client: &RunningService<RoleClient, S>,
    tool: &str,
    arguments: Value,
) -> CallToolResult {
    let Value::Object(arguments) = arguments else {
        panic!("arguments are an object")
    };
    client
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments))
        .await
        .unwrap_or_else(|error| panic!("{tool} gets a result: {error}"))
}

/// A client that declares roots and answers `roots/list` with `root`,
/// counting the times it is asked (2026-07-28: in a call's round).
#[derive(Clone)]
struct Rooted {
    root: std::path::PathBuf,
    asked: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

#[allow(deprecated)] // Roots, deprecated by SEP-2577, are still what bounds a script.
impl rmcp::ClientHandler for Rooted {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        let mut config = rmcp::model::ClientConfig::default();
        config.capabilities.roots = Some(rmcp::model::RootsCapabilities::default());
        config
    }

    async fn list_roots(
        &self,
        _context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ListRootsResult, rmcp::model::ErrorData> {
        self.asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(rmcp::model::ListRootsResult::new(vec![
            rmcp::model::Root::new(url::Url::from_file_path(&self.root).unwrap().to_string()),
        ]))
    }
}

#[tokio::test]
async fn at_2026_07_28_the_clients_roots_are_asked_in_the_result_and_bound_the_script() {
    let sandbox = TestContext::new();
    sandbox.project_skill("where", "", &[("scripts/pwd.sh", "pwd\n")]);
    let elsewhere = sandbox.path().join("elsewhere");
    fs_err::create_dir_all(&elsewhere).unwrap();
    let server = McpHttpServer::start(sandbox.mcp(&[]));
    let _ = rustls::crypto::ring::default_provider().install_default();
    let discover = || ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    let rooted = Rooted {
        root: elsewhere.clone(),
        asked: std::sync::Arc::default(),
    };
    let client = rooted
        .clone()
        .serve_with_lifecycle(
            StreamableHttpClientTransport::from_uri(server.url.clone()),
            discover(),
        )
        .await
        .unwrap();
    let loaded = call_with(&client, "skills_load", json!({"names": ["where"]})).await;
    let handle = loaded.structured_content.unwrap()["session"]
        .as_str()
        .unwrap()
        .to_owned();
    let run = json!({
        "session": handle,
        "path": "scripts/pwd.sh",
        "workdir": elsewhere.to_str().unwrap(),
    });
    // The client's root, outside the project, is where the script may
    // work: rmcp answers the round's roots/list and calls again.
    let ran = call_with(&client, "skills_run_script", run.clone()).await;
    assert_eq!(ran.is_error, Some(false), "{ran:?}");
    assert_eq!(
        ran.structured_content.unwrap()["stdout"]
            .as_str()
            .unwrap()
            .trim(),
        elsewhere.to_str().unwrap()
    );
    assert_eq!(
        rooted.asked.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "asked once, in the call's round"
    );

    // By hand: the round asks for roots alone, and comes back bound to
    // its call.
    let Value::Object(arguments) = run.clone() else {
        unreachable!()
    };
    let first = client
        .peer()
        .call_tool_once(
            CallToolRequestParams::new("skills_run_script").with_arguments(arguments.clone()),
        )
        .await
        .unwrap();
    let rmcp::model::CallToolResponse::InputRequired(asked) = first else {
        panic!("a question, not a run: {first:?}")
    };
    let requests = asked.input_requests.unwrap();
    assert_eq!(
        requests.keys().map(String::as_str).collect::<Vec<_>>(),
        ["roots"]
    );
    assert_eq!(
        serde_json::to_value(&requests["roots"]).unwrap()["method"],
        "roots/list"
    );
    // Roots that do not hold the folder: the script may not work there.
    let root = url::Url::from_file_path(sandbox.path().join("project"))
        .unwrap()
        .to_string();
    let answered = client
        .peer()
        .call_tool_once(
            CallToolRequestParams::new("skills_run_script")
                .with_arguments(arguments)
                .with_input_responses(rmcp::model::InputResponses::from([(
                    "roots".to_owned(),
                    json!({"roots": [{"uri": root}]}),
                )]))
                .with_request_state(asked.request_state.unwrap()),
        )
        .await
        .unwrap();
    let rmcp::model::CallToolResponse::Complete(answered) = answered else {
        panic!("{answered:?}")
    };
    assert_eq!(error_code(&answered), "PERMISSION_DENIED", "{answered:?}");
    client.cancel().await.unwrap();

    // A client that declares no roots is not asked: the project folder is
    // the root, and the folder outside it is refused.
    let plain = ()
        .serve_with_lifecycle(
            StreamableHttpClientTransport::from_uri(server.url.clone()),
            discover(),
        )
        .await
        .unwrap();
    let loaded = call_with(&plain, "skills_load", json!({"names": ["where"]})).await;
    let handle = loaded.structured_content.unwrap()["session"]
        .as_str()
        .unwrap()
        .to_owned();
    let refused = call_with(
        &plain,
        "skills_run_script",
        json!({"session": handle, "path": "scripts/pwd.sh", "workdir": elsewhere.to_str().unwrap()}),
    )
    .await;
    assert_eq!(error_code(&refused), "PERMISSION_DENIED", "{refused:?}");
    plain.cancel().await.unwrap();
}
