//! Running `skillpkg-registry serve` as an operator sees it, through the
//! real binary on a loopback port: its log (a line a request, no query
//! string, no token), its typed error answers (a stable `code`, a
//! `message`, and a server fault's cause in the log only), how it stops
//! (SIGINT and SIGTERM drain the requests in flight and exit 0; a failure
//! to start exits 1), its header and body timeouts, and tokens that change
//! while it runs. No test sleeps for a fixed time: each waits for what it
//! expects, up to a deadline.

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use reqwest::blocking::{Client, multipart};
use skillpkg_tests::{binary, create_token, run, tarball};

/// How long a test waits for what it expects before it fails.
const DEADLINE: Duration = Duration::from_secs(15);

/// Waits until `check` returns something, up to [`DEADLINE`].
fn wait_for<T>(what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(found) = check() {
            return found;
        }
        assert!(start.elapsed() < DEADLINE, "waited {DEADLINE:?} for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A `skillpkg-registry serve` on `127.0.0.1:0`, its stderr in a file of
/// its own (the data folder may be the thing a test breaks); killed when
/// dropped, unless it already exited.
struct Server {
    child: Child,
    url: String,
    log: PathBuf,
    _logs: tempfile::TempDir,
}

impl Server {
    fn start(root: &Path, extra: &[&str]) -> Self {
        Self::start_with_env(root, extra, &[])
    }

    fn start_with_env(root: &Path, extra: &[&str], env: &[(&str, &str)]) -> Self {
        use std::io::BufRead as _;
        let logs = tempfile::tempdir().unwrap();
        let log = logs.path().join("server.log");
        let mut child = Command::new(binary("skillpkg-registry"))
            .arg("serve")
            .arg("--root")
            .arg(root)
            .args(["--listen", "127.0.0.1:0"])
            .args(extra)
            .env_remove("RUST_LOG")
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(fs_err::File::create(&log).unwrap().into_parts().0)
            .spawn()
            .expect("start skillpkg-registry");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let url = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| {
                panic!(
                    "unexpected first line {line:?}; log:\n{}",
                    fs_err::read_to_string(&log).unwrap_or_default()
                )
            })
            .to_owned();
        Self {
            child,
            url,
            log,
            _logs: logs,
        }
    }

    fn url(&self) -> &str {
        &self.url
    }

    fn address(&self) -> &str {
        self.url.trim_start_matches("http://")
    }

    fn log(&self) -> String {
        fs_err::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits until the log has a line for which `check` is true, and
    /// returns that line.
    fn wait_for_line(&self, what: &str, check: impl Fn(&str) -> bool) -> String {
        wait_for(what, || {
            self.log().lines().find(|l| check(l)).map(str::to_owned)
        })
    }

    /// Waits for the access line of `method path` answered `status`.
    fn request_line(&self, method: &str, path: &str, status: u16) -> String {
        let (method, path) = (format!("method={method} "), format!("path={path} "));
        let status = format!("status={status} ");
        self.wait_for_line(&format!("the log line of {method}{path}{status}"), |line| {
            line.contains("skillpkg_registry::access")
                && line.contains(&method)
                && line.contains(&path)
                && line.contains(&status)
        })
    }

    /// Sends `signal` (`INT`, `TERM`) with kill(1).
    fn signal(&self, signal: &str) {
        let sent = Command::new("kill")
            .args(["-s", signal, &self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(sent.success(), "kill -s {signal} failed");
    }

    /// Waits for the server to exit.
    fn exit(&mut self) -> ExitStatus {
        wait_for("the server to exit", || self.child.try_wait().unwrap())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A registry data folder with tokens for `alice` and `bob`.
struct Registry {
    root: tempfile::TempDir,
    alice: String,
    bob: String,
}

impl Registry {
    fn new() -> Self {
        let root = tempfile::tempdir().unwrap();
        let alice = create_token(root.path(), "alice");
        let bob = create_token(root.path(), "bob");
        Self { root, alice, bob }
    }

    fn path(&self) -> &Path {
        self.root.path()
    }
}

fn publish(client: &Client, server: &Server, token: &str, name: &str) -> Answer {
    let form = multipart::Form::new()
        .text("name", name.to_owned())
        .text("version", "1.0.0")
        .part(
            "tarball",
            multipart::Part::bytes(tarball(name, "1.0.0")).file_name("x.tgz"),
        );
    Answer::of(
        client
            .put(format!("{}/api/v1/skills", server.url()))
            .bearer_auth(token)
            .multipart(form),
    )
}

/// A response, read whole.
#[derive(Debug)]
struct Answer {
    status: u16,
    content_type: String,
    body: String,
}

impl Answer {
    fn of(request: reqwest::blocking::RequestBuilder) -> Self {
        let response = request.send().unwrap();
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .map(|value| value.to_str().unwrap().to_owned())
            .unwrap_or_default();
        Self {
            status: response.status().as_u16(),
            content_type,
            body: response.text().unwrap(),
        }
    }

    fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|error| panic!("{error}: {self:?}"))
    }

    /// Asserts the answer is a typed error of `status` and `code`, with a
    /// message that clients (which print `errors[].detail`) also get.
    fn assert_error(&self, status: u16, code: &str) -> serde_json::Value {
        assert_eq!(self.status, status, "{self:?}");
        assert_eq!(self.content_type, "application/json", "{self:?}");
        let body = self.json();
        assert_eq!(body["code"], code, "{body}");
        let message = body["message"].as_str().unwrap_or_default();
        assert!(!message.is_empty(), "no message: {body}");
        assert_eq!(body["errors"][0]["detail"], message, "{body}");
        body
    }
}

/// Sends `head` on a new connection and reads until the server closes it
/// or `limit` passes: what came back, and when the connection closed.
fn exchange(address: &str, head: &str, limit: Duration) -> (String, Option<Duration>) {
    let mut stream = TcpStream::connect(address).unwrap();
    stream.write_all(head.as_bytes()).unwrap();
    let start = Instant::now();
    stream
        .set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let mut received = Vec::new();
    let mut buffer = [0; 4096];
    while start.elapsed() < limit {
        match stream.read(&mut buffer) {
            Ok(0) => {
                return (
                    String::from_utf8_lossy(&received).into_owned(),
                    Some(start.elapsed()),
                );
            }
            Ok(read) => received.extend_from_slice(&buffer[..read]),
            Err(error)
                if matches!(
                    error.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => {
                return (
                    String::from_utf8_lossy(&received).into_owned(),
                    Some(start.elapsed()),
                );
            }
        }
    }
    (String::from_utf8_lossy(&received).into_owned(), None)
}

#[test]
fn every_request_is_one_log_line_without_its_query_string_or_token() {
    let registry = Registry::new();
    let server = Server::start(registry.path(), &[]);
    let client = Client::new();
    let config = client
        .get(format!(
            "{}/config.json?token=skp_in-the-query",
            server.url()
        ))
        .bearer_auth(&registry.alice)
        .send()
        .unwrap();
    assert_eq!(config.status(), 200);
    let config_bytes = config.bytes().unwrap().len();
    let me = Answer::of(
        client
            .get(format!("{}/api/v1/me", server.url()))
            .bearer_auth(&registry.alice),
    );
    assert_eq!(me.json()["user"], "alice", "{me:?}");
    let missing = Answer::of(client.get(format!("{}/no/such/file?x=1", server.url())));
    assert_eq!(missing.status, 404);

    let line = server.request_line("GET", "/config.json", 200);
    assert!(line.contains(" INFO "), "{line}");
    assert!(line.contains(&format!(" bytes={config_bytes} ")), "{line}");
    let duration = line
        .split_once("duration_ms=")
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .and_then(|value| value.parse::<f64>().ok())
        .unwrap_or_else(|| panic!("no duration: {line}"));
    assert!((0.0..15_000.0).contains(&duration), "{line}");
    let line = server.request_line("GET", "/api/v1/me", 200);
    assert!(
        line.contains(&format!(" bytes={} ", me.body.len())),
        "{line}"
    );
    let line = server.request_line("GET", "/no/such/file", 404);
    assert!(
        line.contains(&format!(" bytes={} ", missing.body.len())),
        "{line}"
    );

    let log = server.log();
    let access: Vec<&str> = log
        .lines()
        .filter(|line| line.contains("skillpkg_registry::access"))
        .collect();
    assert_eq!(access.len(), 3, "one line a request:\n{log}");
    for secret in [
        registry.alice.as_str(),
        "skp_in-the-query",
        "token=",
        "x=1",
        "Bearer",
    ] {
        assert!(!log.contains(secret), "`{secret}` in the log:\n{log}");
    }
    // The start names the address the server listens on.
    let listening = server.wait_for_line("the start line", |l| l.contains("listening"));
    assert!(
        listening.contains(&format!("address={}", server.address())),
        "{listening}"
    );
}

#[test]
fn the_log_filter_comes_from_rust_log() {
    let registry = Registry::new();
    let mut server = Server::start_with_env(
        registry.path(),
        &[],
        &[("RUST_LOG", "warn,skillpkg_registry::access=error")],
    );
    let client = Client::new();
    Answer::of(client.get(format!("{}/config.json", server.url())));
    // A request after it, whose line would come after the first's.
    let me = Answer::of(client.get(format!("{}/api/v1/me", server.url())));
    assert_eq!(me.status, 401);
    // Nothing at INFO is written, up to a clean stop.
    server.signal("TERM");
    assert!(server.exit().success());
    let log = server.log();
    assert!(!log.contains("skillpkg_registry::access"), "{log}");
    assert!(!log.contains(" INFO "), "{log}");

    let bad = Command::new(binary("skillpkg-registry"))
        .args(["serve", "--listen", "127.0.0.1:0", "--root"])
        .arg(registry.path())
        .env("RUST_LOG", "skillpkg_registry=loud")
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(stderr.contains("RUST_LOG"), "{stderr}");
    assert!(bad.stdout.is_empty(), "it never listened");
}

#[test]
fn every_error_answer_is_json_with_a_stable_code_and_a_message() {
    let registry = Registry::new();
    let server = Server::start(registry.path(), &[]);
    let client = Client::new();
    let url = server.url();
    assert_eq!(
        publish(&client, &server, &registry.alice, "pdf").status,
        201
    );

    publish(&client, &server, &registry.alice, "pdf").assert_error(409, "conflict");
    let body = Answer::of(
        client
            .delete(format!("{url}/api/v1/skills/pdf/1.0.0/yank"))
            .bearer_auth(&registry.bob),
    )
    .assert_error(403, "forbidden");
    // The finer reason of 0.1 is still there for scripts that match it.
    assert_eq!(body["errors"][0]["code"], "not-owner");
    Answer::of(client.get(format!("{url}/api/v1/me"))).assert_error(401, "unauthorized");
    Answer::of(
        client
            .get(format!("{url}/api/v1/me"))
            .bearer_auth("skp_made-up"),
    )
    .assert_error(401, "unauthorized");
    Answer::of(client.get(format!("{url}/api/v1/skills/nothing/owners")))
        .assert_error(404, "not_found");
    Answer::of(client.get(format!("{url}/index/no/such"))).assert_error(404, "not_found");
    Answer::of(
        client
            .put(format!("{url}/api/v1/skills/pdf/owners"))
            .bearer_auth(&registry.alice)
            .body("{ not json"),
    )
    .assert_error(400, "bad_request");
    Answer::of(
        client
            .put(format!("{url}/api/v1/skills/pdf/owners"))
            .bearer_auth(&registry.alice)
            .body(vec![b' '; 100 * 1024]),
    )
    .assert_error(413, "payload_too_large");
    // Routes and methods the router itself refuses are typed too.
    Answer::of(client.post(format!("{url}/api/v1/me"))).assert_error(405, "method_not_allowed");
    Answer::of(client.post(format!("{url}/config.json"))).assert_error(405, "method_not_allowed");
}

#[test]
fn a_server_fault_answers_internal_with_no_path_and_logs_the_cause() {
    let registry = Registry::new();
    let server = Server::start(registry.path(), &[]);
    let client = Client::new();
    let root = registry.path().to_str().unwrap().to_owned();

    // The database cannot be read: its file is overwritten with bytes that
    // are not SQLite's. Reading and publishing both fail on it.
    let database = registry.path().join("state/registry.db");
    let intact = fs_err::read(&database).unwrap();
    fs_err::write(&database, vec![b'x'; intact.len()]).unwrap();
    let read = Answer::of(client.get(format!("{}/api/v1/skills/pdf/owners", server.url())));
    let published = publish(&client, &server, &registry.alice, "pdf");
    for answer in [&read, &published] {
        answer.assert_error(500, "internal");
        for secret in [root.as_str(), "registry.db", "state", "not a database"] {
            assert!(!answer.body.contains(secret), "`{secret}` in {answer:?}");
        }
    }
    let line = server.request_line("GET", "/api/v1/skills/pdf/owners", 500);
    assert!(line.contains("ERROR"), "{line}");
    assert!(line.contains(&database.display().to_string()), "{line}");
    assert!(line.contains("not a database"), "SQLite's error: {line}");

    // The tree cannot be written: `dl` is a file where a folder must be.
    fs_err::write(&database, &intact).unwrap();
    let dl = registry.path().join("public/dl");
    let _ = fs_err::remove_dir_all(&dl);
    fs_err::write(&dl, "in the way").unwrap();
    let published = publish(&client, &server, &registry.alice, "pdf");
    published.assert_error(500, "internal");
    for secret in [root.as_str(), "dl/", "os error", "Not a directory"] {
        assert!(
            !published.body.contains(secret),
            "`{secret}`: {published:?}"
        );
    }
    let lines: Vec<String> = wait_for("two failed publishes in the log", || {
        let lines: Vec<String> = server
            .log()
            .lines()
            .filter(|l| l.contains("path=/api/v1/skills ") && l.contains("status=500"))
            .map(str::to_owned)
            .collect();
        (lines.len() == 2).then_some(lines)
    });
    assert!(
        lines[1].contains("Not a directory") && lines[1].contains(&root),
        "{}",
        lines[1]
    );
    // Nothing was published: the server answers as before for the rest.
    fs_err::remove_file(&dl).unwrap();
    assert_eq!(
        publish(&client, &server, &registry.alice, "pdf").status,
        201
    );
}

#[test]
fn sigint_and_sigterm_stop_the_server_with_exit_0() {
    let registry = Registry::new();
    for (signal, name) in [("INT", "SIGINT"), ("TERM", "SIGTERM")] {
        let mut server = Server::start(registry.path(), &[]);
        let config = Answer::of(Client::new().get(format!("{}/config.json", server.url())));
        assert_eq!(config.status, 200);
        server.signal(signal);
        let status = server.exit();
        assert_eq!(
            status.code(),
            Some(0),
            "{name}: {status:?}\n{}",
            server.log()
        );
        let log = server.log();
        assert!(log.contains(&format!("signal=\"{name}\"")), "{log}");
        assert!(log.contains("stopped"), "{log}");
    }
    // At once after it printed its address, too: the handlers are set up
    // before it listens.
    let mut server = Server::start(registry.path(), &[]);
    server.signal("TERM");
    assert_eq!(server.exit().code(), Some(0));
}

/// Sends the head of an owners change with `Expect: 100-continue` and
/// waits for the `100 Continue`: then the request is in a handler, reading
/// its body. Returns the connection and the body still to send.
fn request_in_flight(server: &Server, token: &str) -> (TcpStream, &'static [u8]) {
    const BODY: &[u8] = br#"{"add":["carol"]}"#;
    let mut stream = TcpStream::connect(server.address()).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let head = format!(
        "PUT /api/v1/skills/pdf/owners HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nExpect: 100-continue\r\n\r\n",
        BODY.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    let mut interim = [0; 25];
    stream.read_exact(&mut interim).unwrap();
    assert_eq!(&interim, b"HTTP/1.1 100 Continue\r\n\r\n");
    (stream, BODY)
}

#[test]
fn a_stopping_server_answers_the_requests_in_flight_and_takes_no_new_ones() {
    let registry = Registry::new();
    // The request in flight makes carol an owner: only users can be.
    create_token(registry.path(), "carol");
    let mut server = Server::start(registry.path(), &[]);
    let client = Client::new();
    assert_eq!(
        publish(&client, &server, &registry.alice, "pdf").status,
        201
    );
    let (mut stream, body) = request_in_flight(&server, &registry.alice);

    server.signal("TERM");
    server.wait_for_line("the drain to start", |l| l.contains("shutting down"));
    assert!(
        TcpStream::connect(server.address()).is_err(),
        "a stopping server takes no new connection"
    );
    assert!(
        server.child.try_wait().unwrap().is_none(),
        "it waits for the request in flight"
    );
    stream.write_all(body).unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains(r#""users":["alice","carol"]"#), "{answer}");
    assert_eq!(server.exit().code(), Some(0), "{}", server.log());
    let events = run(Command::new(binary("skillpkg-registry"))
        .args(["events", "--json", "--skill", "pdf", "--root"])
        .arg(registry.path()));
    let events = events.json();
    let change = events
        .as_array()
        .unwrap()
        .iter()
        .find(|event| event["action"] == "owners")
        .expect("the change is in the audit trail");
    assert_eq!(change["actor"], "alice");
    assert_eq!(
        change["detail"], "added carol",
        "the change was made: {events}"
    );
}

#[test]
fn a_request_that_outlasts_the_drain_timeout_is_dropped_and_the_stop_is_still_clean() {
    let registry = Registry::new();
    let mut server = Server::start(registry.path(), &["--drain-timeout", "1s"]);
    let (mut stream, _) = request_in_flight(&server, &registry.alice);
    let started = Instant::now();
    server.signal("TERM");
    let status = server.exit();
    let took = started.elapsed();
    assert_eq!(status.code(), Some(0), "{}", server.log());
    assert!(
        took >= Duration::from_millis(800) && took < Duration::from_secs(5),
        "stopped after {took:?}, the drain timeout is 1 s"
    );
    assert!(server.log().contains("still in flight"), "{}", server.log());
    let mut rest = Vec::new();
    let _ = stream.read_to_end(&mut rest);
    assert!(rest.is_empty(), "no answer to a dropped request");
}

#[test]
fn a_server_that_cannot_start_exits_1_and_says_why() {
    let registry = Registry::new();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = taken.local_addr().unwrap().to_string();
    let cases: [(&[&str], &str); 3] = [
        (&["--listen", &address], "cannot listen on"),
        (
            &["--listen", "127.0.0.1:0", "--header-timeout", "0s"],
            "--header-timeout must be a positive",
        ),
        (
            &["--listen", "127.0.0.1:0", "--drain-timeout=-5s"],
            "--drain-timeout must be a positive",
        ),
    ];
    for (args, expected) in cases {
        let output = Command::new(binary("skillpkg-registry"))
            .arg("serve")
            .arg("--root")
            .arg(registry.path())
            .args(args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
}

#[test]
fn a_trickled_header_or_body_is_cut_off_at_its_timeout() {
    let registry = Registry::new();
    let server = Server::start(
        registry.path(),
        &["--header-timeout", "1s", "--body-timeout", "1s"],
    );
    // A head that never ends.
    let (answer, closed) = exchange(
        server.address(),
        "GET /config.json HTTP/1.1\r\nHost: test\r\nX-Slow: a",
        Duration::from_secs(10),
    );
    let closed = closed.expect("the connection with a partial head is still open after 10 s");
    assert!(
        closed >= Duration::from_millis(800) && closed < Duration::from_secs(4),
        "closed after {closed:?}, the header timeout is 1 s; {answer:?}"
    );
    // A body that never ends: half of what its Content-Length says.
    let head = format!(
        "DELETE /api/v1/skills/pdf/1.0.0/yank HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nContent-Length: 40\r\n\r\n{{\"reason\":",
        registry.alice
    );
    let (answer, closed) = exchange(server.address(), &head, Duration::from_secs(10));
    let closed = closed.expect("the connection with a partial body is still open after 10 s");
    assert!(
        closed >= Duration::from_millis(800) && closed < Duration::from_secs(4),
        "closed after {closed:?}, the body timeout is 1 s; {answer:?}"
    );
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    let body: serde_json::Value =
        serde_json::from_str(answer.split_once("\r\n\r\n").unwrap().1).unwrap();
    assert_eq!(body["code"], "request_timeout", "{body}");
    server.request_line("DELETE", "/api/v1/skills/pdf/1.0.0/yank", 408);
    // And the server still serves.
    let config = Answer::of(Client::new().get(format!("{}/config.json", server.url())));
    assert_eq!(config.status, 200);
}

#[test]
fn a_token_created_or_revoked_while_serving_counts_at_the_next_request() {
    let registry = Registry::new();
    let server = Server::start(registry.path(), &[]);
    let client = Client::new();
    let me = |token: &str| {
        Answer::of(
            client
                .get(format!("{}/api/v1/me", server.url()))
                .bearer_auth(token),
        )
    };
    assert_eq!(me(&registry.alice).status, 200);
    let carol = create_token(registry.path(), "carol");
    assert_eq!(me(&carol).json()["user"], "carol");
    let list = Command::new(binary("skillpkg-registry"))
        .args(["token", "list", "--json", "--root"])
        .arg(registry.path())
        .output()
        .unwrap();
    let tokens: serde_json::Value = serde_json::from_slice(&list.stdout).unwrap();
    let id = tokens
        .as_array()
        .unwrap()
        .iter()
        .find(|token| token["user"] == "carol")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let revoke = Command::new(binary("skillpkg-registry"))
        .args(["token", "revoke", &id, "--root"])
        .arg(registry.path())
        .output()
        .unwrap();
    assert!(revoke.status.success());
    me(&carol).assert_error(401, "unauthorized");
    assert_eq!(me(&registry.bob).json()["user"], "bob");
}
