//! Shared support for the end-to-end tests: find the real binaries, run them
//! in a temporary home with a clean environment, and build skill folders.
//!
//! The binaries are the ones `cargo test --workspace` builds next to the test
//! executables (the `skillpkg` and `skillpkg-registry` packages each have an
//! integration test, which makes cargo build their binaries first).

use std::path::{Path, PathBuf};
use std::process::Command;

pub mod scripted;
pub mod static_registry;

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
/// PyPI): `$SKILLPKG_TEST_PYTHON`, else the virtual environment `.ci/run`
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
        "{} does not exist: run `.ci/run`, or create the environment with \
         `python3 -m venv .ci/venv && .ci/venv/bin/pip install mcp`, or set \
         {SKILLPKG_TEST_PYTHON} to a Python that has the `mcp` package",
        python.display()
    );
    python
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

/// A sandbox: a temporary folder that is the home, the working folder and
/// the place for test files of one test.
#[derive(Debug)]
pub struct Sandbox {
    dir: tempfile::TempDir,
}

impl Default for Sandbox {
    fn default() -> Self {
        Self::new()
    }
}

impl Sandbox {
    /// Creates an empty sandbox.
    pub fn new() -> Self {
        Self {
            dir: tempfile::tempdir().expect("temporary folder"),
        }
    }

    /// Returns the sandbox's root.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Returns a `skillpkg` command that runs in the sandbox with a clean
    /// environment (no colour, home in the sandbox).
    pub fn skillpkg(&self) -> Command {
        self.command(&binary("skillpkg"))
    }

    /// Returns a `skillpkg-registry` command set up like [`Self::skillpkg`].
    pub fn registry(&self) -> Command {
        self.command(&binary("skillpkg-registry"))
    }

    /// Returns `skillpkg mcp --project <sandbox>/project EXTRA...`, with
    /// its home, config and cache folders in the sandbox.
    pub fn mcp(&self, extra: &[&str]) -> Command {
        let mut command = self.skillpkg();
        command
            .arg("mcp")
            .arg("--project")
            .arg(self.path().join("project"))
            .args(extra)
            .env("HOME", self.path().join("home"))
            .env("SKILLPKG_CONFIG_DIR", self.path().join("config"))
            .env("SKILLPKG_CACHE_DIR", self.path().join("cache"));
        command
    }

    fn command(&self, program: &Path) -> Command {
        let mut command = Command::new(program);
        command
            .current_dir(self.path())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.path())
            .env("NO_COLOR", "1");
        command
    }

    /// Writes `contents` to `relative` under the sandbox, creating folders.
    pub fn write(&self, relative: &str, contents: impl AsRef<[u8]>) -> PathBuf {
        let path = self.path().join(relative);
        fs_err::create_dir_all(path.parent().expect("a file has a parent"))
            .expect("create folders");
        fs_err::write(&path, contents).expect("write file");
        path
    }

    /// Writes a skill folder `relative` whose SKILL.md has `name`,
    /// a description, the `extra` frontmatter lines and `body`.
    pub fn skill(&self, relative: &str, name: &str, extra: &str, body: &str) -> PathBuf {
        let text = format!(
            "---\nname: {name}\ndescription: Does {name} things. Use when testing.\n{extra}---\n{body}"
        );
        self.write(&format!("{relative}/SKILL.md"), text);
        self.path().join(relative)
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

/// A `skillpkg-registry serve` process on a free loopback port, stopped
/// (SIGKILL) when dropped.
#[derive(Debug)]
pub struct RegistryServer {
    child: std::process::Child,
    root: PathBuf,
    url: String,
}

impl RegistryServer {
    /// Starts a server on the data folder `root` with extra arguments.
    pub fn start(root: &Path, extra: &[&str]) -> Self {
        use std::io::BufRead as _;
        let mut child = Command::new(binary("skillpkg-registry"))
            .arg("serve")
            .arg("--root")
            .arg(root)
            .args(["--listen", "127.0.0.1:0"])
            .args(extra)
            .stdout(std::process::Stdio::piped())
            .stderr(
                fs_err::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(root.join("server.log"))
                    .expect("open server.log")
                    .into_parts()
                    .0,
            )
            .spawn()
            .expect("start skillpkg-registry");
        let stdout = child.stdout.take().expect("piped stdout");
        let mut line = String::new();
        std::io::BufReader::new(stdout)
            .read_line(&mut line)
            .expect("read the listening line");
        let url = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("unexpected first line from the server: {line:?}"))
            .to_owned();
        Self {
            child,
            root: root.to_owned(),
            url,
        }
    }

    /// Returns the base URL, `http://127.0.0.1:PORT`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Returns the address it listens on, `127.0.0.1:PORT`.
    pub fn address(&self) -> &str {
        self.url.trim_start_matches("http://")
    }

    /// Returns the server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Returns what the server (and earlier ones on the same folder) wrote
    /// to stderr.
    pub fn log(&self) -> String {
        fs_err::read_to_string(self.root.join("server.log")).unwrap_or_default()
    }

    /// Returns the served tree's folder.
    pub fn public(&self) -> PathBuf {
        self.root.join("public")
    }

    /// Kills the server at once, as a crash would.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for RegistryServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Creates a token for `user` in the registry data folder `root`.
pub fn create_token(root: &Path, user: &str) -> String {
    let output = Command::new(binary("skillpkg-registry"))
        .args(["token", "create", "--user", user, "--root"])
        .arg(root)
        .output()
        .expect("run skillpkg-registry token create");
    assert!(
        output.status.success(),
        "token create failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout)
        .expect("UTF-8")
        .trim()
        .to_owned()
}

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
        let nginx = ["/usr/sbin/nginx", "/usr/bin/nginx"]
            .into_iter()
            .map(Path::new)
            .find(|path| path.exists())
            .expect("nginx is not installed: `apt-get install nginx` (.ci/run does)");
        let prefix = tempfile::tempdir().expect("temporary folder");
        let port = free_port();
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
    types {{ application/json json; application/gzip tgz; application/x-ndjson jsonl; }}
    default_type "text/plain; charset=utf-8";
    server {{
        listen 127.0.0.1:{port};
        root {root};
        location ~ /\.(?!well-known/) {{ return 404; }}
        location /dl/ {{ add_header Cache-Control "public, max-age=31536000, immutable"; }}
        location / {{ add_header Cache-Control "public, max-age=60, must-revalidate"; }}
    }}
}}
"#,
            prefix = prefix.path().display(),
            root = root.display(),
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
    for _ in 0..200 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("nothing listens on port {port} after ten seconds");
}

/// Faults a [`FaultyServer`] injects.
#[derive(Debug, Default)]
pub struct Faults {
    /// Answer this many requests with 500 before serving again.
    pub fail_next: usize,
    /// Cut every archive (`.tgz`) body short, in the middle.
    pub truncate_archives: bool,
    /// Requests served so far, by path.
    pub served: Vec<String>,
    /// The `Authorization` header of each request (None when absent).
    pub authorization: Vec<Option<String>>,
    /// Redirect every request but `config.json` to this base URL.
    pub redirect_to: Option<String>,
}

/// A minimal static file server on loopback, for fault injection through a
/// real socket: GET only, one request a connection. (The product's own
/// server and nginx serve the real tests; this one only misbehaves.)
#[derive(Debug)]
pub struct FaultyServer {
    url: String,
    faults: std::sync::Arc<std::sync::Mutex<Faults>>,
}

impl FaultyServer {
    /// Serves the files below `root`.
    pub fn serve(root: &Path) -> Self {
        use std::io::{BufRead as _, Write as _};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("address"));
        let faults = std::sync::Arc::new(std::sync::Mutex::new(Faults::default()));
        let (root, shared) = (root.to_owned(), faults.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut reader = std::io::BufReader::new(stream.try_clone().expect("clone"));
                let mut request_line = String::new();
                if reader.read_line(&mut request_line).is_err() {
                    continue;
                }
                let mut authorization = None;
                loop {
                    let mut header = String::new();
                    if reader.read_line(&mut header).map_or(true, |read| read == 0)
                        || header == "\r\n"
                    {
                        break;
                    }
                    if let Some((name, value)) = header.split_once(':')
                        && name.eq_ignore_ascii_case("authorization")
                    {
                        authorization = Some(value.trim().to_owned());
                    }
                }
                let path = request_line
                    .split_whitespace()
                    .nth(1)
                    .unwrap_or("/")
                    .trim_start_matches('/')
                    .to_owned();
                let mut faults = shared.lock().expect("faults");
                faults.served.push(path.clone());
                faults.authorization.push(authorization);
                let redirect = faults.redirect_to.clone().filter(|_| path != "config.json");
                let response: Vec<u8> = if let Some(base) = redirect {
                    format!("HTTP/1.1 302 Found\r\nLocation: {base}/{path}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").into_bytes()
                } else if faults.fail_next > 0 {
                    faults.fail_next -= 1;
                    b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_vec()
                } else {
                    match fs_err::read(root.join(&path)) {
                        Ok(body) => {
                            let sent = if faults.truncate_archives && path.ends_with(".tgz") { &body[..body.len() / 2] } else { &body[..] };
                            let mut response = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len()).into_bytes();
                            response.extend_from_slice(sent);
                            response
                        }
                        Err(_) => b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_vec(),
                    }
                };
                drop(faults);
                let _ = stream.write_all(&response);
                let _ = stream.shutdown(std::net::Shutdown::Both);
            }
        });
        Self { url, faults }
    }

    /// Returns the base URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Changes the faults.
    pub fn faults(&self) -> std::sync::MutexGuard<'_, Faults> {
        self.faults.lock().expect("faults")
    }
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
