//! The escape suite: scripts that attack the sandbox of `skillpkg mcp`
//! from inside a skill, driven through real MCP clients (rmcp, and the
//! official Python SDK through tests/escape/client.py), and checked from
//! OUTSIDE wherever possible: host listeners that must receive nothing,
//! files that must not appear, processes that must be dead. The attacks
//! are tests/escape/attacks/*.py; each prints one JSON line of what it
//! saw, which every failure message quotes. Four tests drive the server
//! through the Python SDK (secrets_a_skill_naming_*,
//! check_then_run_modules_*, seccomp_*, files_*), the others through rmcp.
//!
//! What each test expects of the engine: a filter that refuses a call
//! returns EPERM, EACCES or ENOSYS (or kills the probe with SIGSYS; each
//! seccomp probe runs in a child of its own); a run sees the host's
//! processes, interfaces, /tmp and /dev/shm not at all (ENOENT), not
//! merely unreadable; the roots keep their host paths inside the run
//! (arguments name them); a run inherits no descriptor beyond 0, 1, 2.
//! The whole file takes 17 to 31 s on 2 shared cores (the 4 GiB run is most
//! of it while it escapes).
//!
//! Against the code before the namespace engine (Landlock only; HEAD
//! c140c4b, Linux 6.18, the server running as root without
//! CAP_SYS_RESOURCE, 2026-11-27), 16 of the 20 tests fail; with the
//! engine (cli/src/runtime/jail/) all 20 pass. Before it:
//!
//! | test | today |
//! |---|---|
//! | network_* | ESCAPES: MPTCP (`socket(AF_INET, SOCK_STREAM, 262)`) and TCP Fast Open (`sendto(MSG_FASTOPEN)`, plain TCP too) connect to the host's 127.0.0.1 and [::1] listeners and deliver data (Landlock's TCP rules see neither); UDP and DNS-shaped datagrams (v4, v6, v4-mapped) arrive; raw sockets deliver to the host's UDP port and sniff its loopback, and so does AF_PACKET (root's CAP_NET_RAW); netlink lists eth0, ifb0, ifb1; path-named UNIX stream and datagram sockets in a temporary folder answer. Hold: plain TCP connect, TCP_FASTOPEN_CONNECT (EACCES), abstract UNIX sockets (EPERM, Landlock scope) |
//! | secrets_a_skill_naming_* | ESCAPES: the skills that name SERVER_ONLY_SECRET, required or optional, get the server's value (hex-encoded, so redaction misses it). Holds: /proc/<server>/environ and the parent's are unreadable |
//! | secrets_pass_env_* | FAILS: `--pass-env` does not exist yet, the server exits on it |
//! | check_then_run_a_script_swapped_* | ESCAPES: 20 to 34 of 200 runs ran the swapped bytes (the hash is checked, then bash opens the path) |
//! | check_then_run_modules_planted_* | ESCAPES: the planted scripts/json.py shadows the standard library's; the planted __pycache__/helper.cpython-311.pyc (stamped with helper.py's size and time) replaces the checked helper; both write their marker |
//! | processes_a_detached_child_* | ESCAPES: the setsid, double-forked child survives the exit and the timeout, writes its marker and sends to the host's UDP port |
//! | processes_a_fork_bomb_* | ESCAPES: all 500 processes start (1 to 2 s). Holds: the next run is normal, none of the bomb is left |
//! | seccomp_* | ESCAPES: ptrace(PTRACE_TRACEME), unshare(CLONE_NEWUSER), bpf (a map), keyctl, add_key, userfaultfd, io_uring_setup, perf_event_open succeed. Hold: ptrace attach to the server (EPERM, Landlock), mount (EPERM, Landlock), kexec_load and init_module (ENOSYS: this kernel has neither) |
//! | limits_allocating_4_gib_* | ESCAPES: 4 GiB allocated, every page backed (5 to 12 s here); the server survives |
//! | limits_file_size_and_open_files_* | ESCAPES: an 8 GiB (sparse) file is made. The 100,000 files hold only by accident: this host's hard limit is 20,000 and the server lacks CAP_SYS_RESOURCE |
//! | limits_a_cpu_spin_* | holds: killed at the timeout |
//! | files_* | ESCAPES by existence (lstat): the host's /tmp marker, /proc/<host process>, /proc/<server>, /sys/class/net/eth0. Hold: every read (~/.ssh, ~/.aws, skillpkg's config, .env, another skill, /etc/shadow), every write, every listing (EACCES) |
//! | extra_no_terminal_* | ESCAPES: descriptors the server inherited from its parent reach the script, which writes into the leaked pipe (here also fds 10 and 251 of the shell that ran cargo). Holds: TIOCSTI (no terminal can be opened; stdio are pipes) |
//! | extra_dev_shm_* | ESCAPES by existence: the host's /dev/shm file is seen. Hold: read, write, listing |
//! | extra_links_* | holds (EACCES, EXDEV) |
//! | extra_host_processes_* | ESCAPES: setpriority and prlimit change the server (nice 0 -> 19, core limit 0 -> 4096). Hold: kill and pidfd signals, process_vm_readv, pidfd_getfd (EPERM, Landlock scopes) |
//! | extra_system_v_ipc_* | ESCAPES: the host's segment is found by key and by id, read and overwritten; the host's queue gets messages by key and by id |
//! | extra_nothing_a_run_leaves_* | holds: /tmp and /dev/shm are not writable |
//! | extra_a_crash_dumps_* | holds: Landlock denies the kernel's core file in the project and in the skill (unsandboxed, both are written) |
//! | extra_client_env_* | ESCAPES: OPENSSL_CONF is accepted, and `import hashlib` loads the client's provider (a shared object in docs/) into the script. Holds: LD_PRELOAD is refused |

use std::io::Read as _;
use std::net::{TcpListener, UdpSocket};
use std::os::unix::net::{UnixDatagram, UnixListener};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt as _};
use serde_json::{Value, json};
use skillpkg_tests::{TestContext, mcp_python, processes_with, wait_until};

type Client = RunningService<RoleClient, ()>;

const NETWORK: &str = include_str!("../../escape/attacks/network.py");
const SECRETS: &str = include_str!("../../escape/attacks/secret_env.py");
const PROCESSES: &str = include_str!("../../escape/attacks/processes.py");
const SECCOMP: &str = include_str!("../../escape/attacks/seccomp.py");
const LIMITS: &str = include_str!("../../escape/attacks/limits.py");
const FILES: &str = include_str!("../../escape/attacks/files.py");
const LINKS: &str = include_str!("../../escape/attacks/links.py");
const SIGNALS: &str = include_str!("../../escape/attacks/signals.py");
const CORE: &str = include_str!("../../escape/attacks/core.py");
const TTY: &str = include_str!("../../escape/attacks/terminal.py");
const IPC: &str = include_str!("../../escape/attacks/ipc.py");

/// A skill that may write `output/` and read `docs/`, nothing else.
const GRANTS: &str = "permissions:\n  filesystem:\n    read: [\"docs/**\"]\n    write: [\"output/**\"]\n  network:\n    outbound: []\n";
/// A skill that declares no network and nothing else.
const NO_NETWORK: &str = "permissions:\n  network:\n    outbound: []\n";

/// The folder of the attack scripts and the Python driver.
fn escape_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("escape")
}

struct Project {
    sandbox: TestContext,
    /// In the command line of every process a test's attack starts, and in
    /// the names of what it plants on the host: unique to the test.
    token: String,
}

struct Server {
    client: Client,
    pid: u32,
}

impl Project {
    fn new() -> Self {
        let sandbox = TestContext::new();
        let name = sandbox.path().file_name().unwrap().to_string_lossy();
        let token = format!("skillpkg-escape-{}", name.trim_start_matches('.'));
        let project = Self { sandbox, token };
        fs_err::create_dir_all(project.dir()).unwrap();
        project
    }

    fn dir(&self) -> PathBuf {
        self.sandbox.path().join("project")
    }

    fn skill_dir(&self, name: &str) -> PathBuf {
        self.dir().join(".claude/skills").join(name)
    }

    /// A skill with `frontmatter` lines after name and description, and
    /// `files` (path, contents).
    fn skill(&self, name: &str, frontmatter: &str, files: &[(&str, &str)]) {
        self.sandbox.project_skill(name, frontmatter, files);
    }

    fn server(&self, extra: &[&str]) -> Command {
        self.sandbox.mcp(extra)
    }

    async fn connect(&self, extra: &[&str]) -> Server {
        self.connect_command(self.server(extra)).await
    }

    async fn connect_command(&self, command: Command) -> Server {
        let shown = format!("{command:?}");
        let (transport, _) = TokioChildProcess::builder(tokio::process::Command::from(command))
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let pid = transport.id().expect("the server runs");
        let client = ().serve(transport).await.unwrap_or_else(|error| {
            panic!("the server did not start or did not answer ({error}): {shown}")
        });
        Server { client, pid }
    }

    /// Runs the Python SDK driver against `server` through `steps`, and
    /// returns its log: `server_pid`, `cache_tag`, `results`.
    fn python_session(&self, server: &Command, steps: &Value) -> Value {
        let mut driver = in_front(server, "client.py", &[&steps.to_string()]);
        let output = driver
            .output()
            .unwrap_or_else(|error| panic!("cannot run {driver:?}: {error}"));
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{stdout}\n{stderr}");
        serde_json::from_str(&stdout).unwrap_or_else(|error| panic!("{error}: {stdout}"))
    }
}

/// `python3 tests/escape/SCRIPT ARGS -- SERVER...`, in the server's folder
/// with the server's environment: a Python program that starts the server
/// itself.
fn in_front(server: &Command, script: &str, args: &[&dyn AsRef<std::ffi::OsStr>]) -> Command {
    let mut command = Command::new(mcp_python());
    command
        .arg(escape_dir().join(script))
        .args(args.iter().map(|arg| arg.as_ref()))
        .arg("--");
    skillpkg_tests::then_start(&mut command, server);
    command
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

async fn load(client: &Client, skills: &[&str]) {
    let loaded = call(client, "skills_load", json!({"names": skills})).await;
    assert_eq!(loaded.is_error, Some(false), "{loaded:?}");
}

/// Runs `script` of `skill` (loaded) with one argument, `parameters` as
/// JSON, and returns the structured result.
async fn run(client: &Client, skill: &str, script: &str, parameters: &Value) -> Value {
    structured(
        &call(
            client,
            "skills_run_script",
            json!({"skill": skill, "path": script, "args": [parameters.to_string()]}),
        )
        .await,
    )
}

/// The JSON line an attack printed (its last), or null when it printed
/// none (killed on the way, or refused before it ran).
fn report(ran: &Value) -> Value {
    ran["stdout"]
        .as_str()
        .unwrap_or_default()
        .lines()
        .rev()
        .find_map(|line| serde_json::from_str::<Value>(line).ok())
        .unwrap_or(Value::Null)
}

/// Fails with every escape found, and the attack's own report.
fn assert_contained(escapes: &[String], ran: &Value) {
    assert!(
        escapes.is_empty(),
        "escaped:\n  {}\n{}",
        escapes.join("\n  "),
        readable(ran)
    );
}

/// A run (or runs) for a failure message, its report parsed.
fn readable(ran: &Value) -> String {
    if let Value::Array(runs) = ran {
        return runs.iter().map(readable).collect::<Vec<_>>().join("\n");
    }
    let mut shown = ran.clone();
    let seen = report(ran);
    if !seen.is_null() && shown.get("stdout").is_some() {
        shown["stdout"] = seen;
    }
    format!("the run: {shown:#}")
}

/// Whether no process holds `token` within `deadline`.
fn all_dead(token: &str, deadline: Duration) -> Result<(), Vec<String>> {
    if wait_until(deadline, || processes_with(token).is_empty()) {
        Ok(())
    } else {
        Err(processes_with(token))
    }
}

/// Whatever arrived at `socket` so far.
fn datagrams(socket: &UdpSocket) -> Vec<String> {
    socket.set_nonblocking(true).unwrap();
    let mut buffer = [0_u8; 2048];
    let mut got = Vec::new();
    while let Ok(read) = socket.recv(&mut buffer) {
        got.push(String::from_utf8_lossy(&buffer[..read]).into_owned());
    }
    got
}

/// The connections waiting at `listener`, with what each sent.
fn connections(listener: &TcpListener) -> Vec<String> {
    listener.set_nonblocking(true).unwrap();
    let mut got = Vec::new();
    while let Ok((mut stream, peer)) = listener.accept() {
        stream.set_nonblocking(false).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        let mut bytes = Vec::new();
        let _ = stream.read_to_end(&mut bytes);
        got.push(format!(
            "from {peer}: {:?}",
            String::from_utf8_lossy(&bytes)
        ));
    }
    got
}

/// Listeners on the host: TCP and UDP on 127.0.0.1 and [::1] (when the
/// host has IPv6), a path-named UNIX stream and datagram socket in a
/// temporary folder outside every root, and an abstract UNIX socket.
struct HostListeners {
    tcp4: TcpListener,
    tcp6: Option<TcpListener>,
    udp4: UdpSocket,
    udp6: Option<UdpSocket>,
    unix_stream: UnixListener,
    unix_dgram: UnixDatagram,
    abstract_stream: UnixListener,
    abstract_name: String,
    folder: tempfile::TempDir,
}

impl HostListeners {
    fn new(token: &str) -> Self {
        use std::os::linux::net::SocketAddrExt as _;
        let folder = tempfile::tempdir().unwrap();
        let abstract_name = format!("{token}-abstract");
        let address = std::os::unix::net::SocketAddr::from_abstract_name(&abstract_name).unwrap();
        Self {
            tcp4: TcpListener::bind("127.0.0.1:0").unwrap(),
            tcp6: TcpListener::bind("[::1]:0").ok(),
            udp4: UdpSocket::bind("127.0.0.1:0").unwrap(),
            udp6: UdpSocket::bind("[::1]:0").ok(),
            unix_stream: UnixListener::bind(folder.path().join("stream.sock")).unwrap(),
            unix_dgram: UnixDatagram::bind(folder.path().join("dgram.sock")).unwrap(),
            abstract_stream: UnixListener::bind_addr(&address).unwrap(),
            abstract_name,
            folder,
        }
    }

    fn parameters(&self, token: &str) -> Value {
        let port = |address: std::io::Result<std::net::SocketAddr>| address.unwrap().port();
        json!({
            "token": token,
            "tcp4": port(self.tcp4.local_addr()),
            "tcp6": self.tcp6.as_ref().map(|listener| port(listener.local_addr())),
            "udp4": port(self.udp4.local_addr()),
            "udp6": self.udp6.as_ref().map(|socket| port(socket.local_addr())),
            "unix_stream": self.folder.path().join("stream.sock"),
            "unix_dgram": self.folder.path().join("dgram.sock"),
            "abstract": self.abstract_name,
        })
    }

    /// Everything that reached any listener, by listener.
    fn received(&self) -> Vec<String> {
        let mut got = Vec::new();
        let mut note = |name: &str, items: Vec<String>| {
            got.extend(items.into_iter().map(|item| format!("{name}: {item}")));
        };
        note("tcp 127.0.0.1", connections(&self.tcp4));
        if let Some(listener) = &self.tcp6 {
            note("tcp [::1]", connections(listener));
        }
        note("udp 127.0.0.1", datagrams(&self.udp4));
        if let Some(socket) = &self.udp6 {
            note("udp [::1]", datagrams(socket));
        }
        for (name, listener) in [
            ("unix stream", &self.unix_stream),
            ("abstract unix", &self.abstract_stream),
        ] {
            listener.set_nonblocking(true).unwrap();
            while let Ok((mut stream, _)) = listener.accept() {
                stream.set_nonblocking(false).unwrap();
                stream
                    .set_read_timeout(Some(Duration::from_millis(200)))
                    .unwrap();
                let mut bytes = Vec::new();
                let _ = stream.read_to_end(&mut bytes);
                note(
                    name,
                    vec![format!("connection: {:?}", String::from_utf8_lossy(&bytes))],
                );
            }
        }
        self.unix_dgram.set_nonblocking(true).unwrap();
        let mut buffer = [0_u8; 2048];
        while let Ok(read) = self.unix_dgram.recv(&mut buffer) {
            note(
                "unix datagram",
                vec![String::from_utf8_lossy(&buffer[..read]).into_owned()],
            );
        }
        got
    }
}

/// Datagrams the host sends itself on loopback while an attack runs, which
/// a socket that sniffs the host's traffic would see.
struct Beacon {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Beacon {
    fn start(payload: String) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let receiver = UdpSocket::bind("127.0.0.1:0").unwrap();
            let sender = UdpSocket::bind("127.0.0.1:0").unwrap();
            let target = receiver.local_addr().unwrap();
            receiver.set_nonblocking(true).unwrap();
            let mut buffer = [0_u8; 256];
            while !flag.load(Ordering::Relaxed) {
                let _ = sender.send_to(payload.as_bytes(), target);
                while receiver.recv(&mut buffer).is_ok() {}
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        Self {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Beacon {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A host process (`sleep`) with `name` as its command line, killed when
/// dropped.
struct Sleeper(std::process::Child);

impl Sleeper {
    fn start(name: &str) -> Self {
        Self(
            Command::new("sleep")
                .arg0(name)
                .arg("30")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        )
    }

    fn pid(&self) -> u32 {
        self.0.id()
    }

    fn alive(&mut self) -> bool {
        self.0.try_wait().unwrap().is_none()
    }
}

impl Drop for Sleeper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Files the test puts outside its temporary folder (in the host's /tmp,
/// /dev/shm), or that an escape could leave there: removed when dropped.
struct HostFiles(Vec<PathBuf>);

impl Drop for HostFiles {
    fn drop(&mut self) {
        for path in &self.0 {
            let _ = fs_err::remove_file(path);
        }
    }
}

/// The network interfaces of the host other than loopback.
fn host_interfaces() -> Vec<String> {
    fs_err::read_dir("/sys/class/net")
        .map(|entries| {
            entries
                .flatten()
                .map(|entry| entry.file_name().to_string_lossy().into_owned())
                .filter(|name| name != "lo")
                .collect()
        })
        .unwrap_or_default()
}

fn hex(text: &str) -> String {
    text.bytes().map(|byte| format!("{byte:02x}")).collect()
}

// 1. Network, with `outbound: []`.

/// Every way out to the host: TCP (plain, MPTCP, TCP Fast Open, with and
/// without the SYN carrying data, v4, v6, v4-mapped), UDP (sendto, a
/// connected socket, sendmsg) and DNS-shaped datagrams, raw IP and
/// AF_PACKET (sending, and sniffing the host's loopback while the host
/// sends itself a beacon), netlink (the host's interfaces), and UNIX
/// sockets: path-named (stream, datagram) in a temporary folder outside
/// every root, and abstract. No host listener receives anything.
#[tokio::test]
async fn network_a_skill_without_outbound_reaches_no_host_listener() {
    let project = Project::new();
    let listeners = HostListeners::new(&project.token);
    project.skill("net", NO_NETWORK, &[("scripts/network.py", NETWORK)]);
    let server = project.connect(&["--timeout", "20"]).await;
    load(&server.client, &["net"]).await;
    let beacon_text = format!("{}-beacon", project.token);
    let mut parameters = listeners.parameters(&project.token);
    parameters["beacon"] = json!(beacon_text);
    let beacon = Beacon::start(beacon_text);
    let ran = run(&server.client, "net", "scripts/network.py", &parameters).await;
    drop(beacon);
    let results = &report(&ran)["results"];

    let mut escapes: Vec<String> = listeners.received();
    let interfaces = host_interfaces();
    for attempt in ["netlink_route", "if_nameindex"] {
        if let Some(names) = results[attempt]["detail"].as_array() {
            for name in names {
                if interfaces.iter().any(|host| name == host) {
                    escapes.push(format!("{attempt} sees the host's interface {name}"));
                }
            }
        }
    }
    for attempt in ["raw_sniff", "af_packet"] {
        let detail = results[attempt]["detail"].as_str().unwrap_or_default();
        if detail.contains("saw the host's beacon") {
            escapes.push(format!("{attempt} sniffs the host's loopback: {detail}"));
        }
    }
    assert!(results.is_object(), "the attack reported nothing: {ran:#}");
    assert_contained(&escapes, &ran);
    server.client.cancel().await.unwrap();
}

// 2. Secrets.

const SECRET: &str = "SERVER_ONLY_SECRET";

/// Skills that name the secret as required, as optional, or not at all.
fn secret_skills(project: &Project) {
    let declare = |optional: bool| {
        format!(
            "secrets:\n  required:\n    - name: {SECRET}\n      usage: env\n      optional: {optional}\n"
        )
    };
    project.skill(
        "wants",
        &declare(false),
        &[("scripts/secret_env.py", SECRETS)],
    );
    project.skill(
        "optional",
        &declare(true),
        &[("scripts/secret_env.py", SECRETS)],
    );
    project.skill("plain", "", &[("scripts/secret_env.py", SECRETS)]);
}

/// What of the secret one run shows: a leak is its value or its hex
/// anywhere in the result, `in_env`, or any readable environ of another
/// process.
fn secret_leaks(skill: &str, result: &Value, value: &str) -> Vec<String> {
    let mut leaks = Vec::new();
    let text = result.to_string();
    if text.contains(value) || text.contains(&hex(value)) {
        leaks.push(format!("{skill}: the value is in the result"));
    }
    let seen = report(&result["structuredContent"]);
    if seen["in_env"] == true {
        leaks.push(format!("{skill}: the script's environment has {SECRET}"));
    }
    if let Some(reads) = seen["environ"].as_object() {
        for (path, read) in reads {
            if read["ok"] == true {
                leaks.push(format!("{skill}: {path} is readable"));
            }
        }
    }
    leaks
}

/// Python SDK client. Without `--pass-env`, the server's environment is the
/// operator's, not the skills': a skill that names a variable of it gets
/// nothing, and no script reads the server's (or its parent's) environ.
#[test]
fn secrets_a_skill_naming_a_server_variable_gets_nothing_unless_the_operator_passes_it() {
    let project = Project::new();
    secret_skills(&project);
    let value = format!("sk-server-only-{}", project.token);
    let mut server = project.server(&["--timeout", "20"]);
    server.env(SECRET, &value);
    let parameters = json!({"name": SECRET, "pids": ["{server_pid}"]}).to_string();
    let mut steps = Vec::new();
    for skill in ["wants", "optional", "plain"] {
        steps.push(json!({"call": "skills_load", "arguments": {"names": [skill]}}));
        steps.push(json!({"call": "skills_run_script", "arguments": {
            "skill": skill, "path": "scripts/secret_env.py", "args": [parameters]}}));
    }
    let log = project.python_session(&server, &json!(steps));
    let results = log["results"].as_array().unwrap();
    let mut leaks = Vec::new();
    for (index, skill) in ["wants", "optional", "plain"].iter().enumerate() {
        let result = &results[2 * index + 1];
        leaks.extend(secret_leaks(skill, result, &value));
    }
    // The one that runs without any declaration runs, and sees nothing.
    let plain = &results[5];
    assert_eq!(plain["structuredContent"]["exit_code"], 0, "{plain:#}");
    let runs: Vec<Value> = [1, 3, 5]
        .iter()
        .map(|index| results[*index]["structuredContent"].clone())
        .collect();
    assert!(
        leaks.is_empty(),
        "leaked:\n  {}\n{}",
        leaks.join("\n  "),
        readable(&json!(runs))
    );
}

/// With `--pass-env SERVER_ONLY_SECRET`, the skill that declares it gets
/// exactly its value; one that does not declare it still gets nothing.
#[tokio::test]
async fn secrets_pass_env_gives_the_value_to_the_declaring_skill_only() {
    let project = Project::new();
    secret_skills(&project);
    let value = format!("sk-server-only-{}", project.token);
    let mut command = project.server(&["--pass-env", SECRET]);
    command.env(SECRET, &value);
    let server = project.connect_command(command).await;
    load(&server.client, &["wants", "plain"]).await;
    let parameters = json!({"name": SECRET, "pids": [server.pid]});
    let wants = run(
        &server.client,
        "wants",
        "scripts/secret_env.py",
        &parameters,
    )
    .await;
    let seen = report(&wants);
    let digest = {
        use sha2::Digest as _;
        format!("{:x}", sha2::Sha256::digest(value.as_bytes()))
    };
    assert_eq!(seen["in_env"], true, "{wants:#}");
    assert_eq!(seen["sha256"], digest, "{wants:#}");
    let plain = run(
        &server.client,
        "plain",
        "scripts/secret_env.py",
        &parameters,
    )
    .await;
    let leaks = secret_leaks("plain", &json!({"structuredContent": plain}), &value);
    assert!(leaks.is_empty(), "{leaks:?}\n{plain:#}");
    server.client.cancel().await.unwrap();
}

// 3. Check, then run.

/// A script swapped (a different file renamed over it) while it is run
/// again and again never runs as swapped: what runs is what was checked.
#[tokio::test]
async fn check_then_run_a_script_swapped_during_runs_never_runs_the_swapped_bytes() {
    let project = Project::new();
    let original = "echo original\n";
    let swapped = "echo SWAPPED\necho swapped >> output/swapped\n";
    project.skill("swap", GRANTS, &[("scripts/run.sh", original)]);
    let server = project.connect(&["--timeout", "10"]).await;
    load(&server.client, &["swap"]).await;

    let script = project.skill_dir("swap").join("scripts/run.sh");
    let staging = project.sandbox.path().join("staging");
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let stop = stop.clone();
        let script = script.clone();
        std::thread::spawn(move || {
            let mut flips = 0_u32;
            while !stop.load(Ordering::Relaxed) {
                for text in [swapped, original] {
                    fs_err::write(&staging, text).unwrap();
                    fs_err::rename(&staging, &script).unwrap();
                    flips += 1;
                    std::thread::sleep(Duration::from_micros(300));
                }
            }
            flips
        })
    };
    let mut ran_original = 0;
    let mut escapes = Vec::new();
    for _ in 0..200 {
        let ran = structured(
            &call(
                &server.client,
                "skills_run_script",
                json!({"skill": "swap", "path": "scripts/run.sh"}),
            )
            .await,
        );
        let stdout = ran["stdout"].as_str().unwrap_or_default();
        if stdout.contains("SWAPPED") {
            escapes.push(ran.to_string());
        } else if stdout == "original\n" {
            ran_original += 1;
        }
    }
    stop.store(true, Ordering::Relaxed);
    let flips = swapper.join().unwrap();
    fs_err::write(&script, original).unwrap();
    let marker = project.dir().join("output/swapped");
    assert!(
        escapes.is_empty() && !marker.exists(),
        "{} of 200 runs ran the swapped script ({flips} swaps); first: {}",
        escapes.len(),
        escapes.first().cloned().unwrap_or_default()
    );
    assert!(ran_original > 0, "no run ran at all ({flips} swaps)");
    server.client.cancel().await.unwrap();
}

/// Python SDK client. Files planted in the skill's `scripts/` after the
/// server started are not there for a run: a checked `run.py` that does
/// `import json` gets the standard library's, and a checked helper is not
/// replaced by bytecode planted in `__pycache__` with the helper's size
/// and time.
#[test]
fn check_then_run_modules_planted_after_start_are_never_imported() {
    let project = Project::new();
    let run_py = "import json, sys\nimport helper\nprint(json.dumps({\"case\": \"import\", \"json_file\": json.__file__, \"json_planted\": getattr(json, \"PLANTED\", False), \"helper\": helper.WHO, \"path0\": sys.path[0], \"cache_tag\": sys.implementation.cache_tag}))\n";
    let helper = format!(
        "\"\"\"The checked helper. {}\"\"\"\nWHO = \"checked helper\"\n",
        "Padding that leaves room for what an attacker plants. ".repeat(6)
    );
    project.skill(
        "importer",
        GRANTS,
        &[("scripts/run.py", run_py), ("scripts/helper.py", &helper)],
    );
    let scripts = project.skill_dir("importer").join("scripts");
    let planted_json = "import os\nPLANTED = True\nprint(\"PLANTED-JSON-RAN\")\ntry:\n    open(os.path.join(os.getcwd(), \"output\", \"planted-json\"), \"w\").write(\"ran\")\nexcept OSError:\n    pass\ndef dumps(value):\n    return repr(value)\n";
    let planted_pyc = "import os\nWHO = \"PLANTED-PYC\"\ntry:\n    open(os.path.join(os.getcwd(), \"output\", \"planted-pyc\"), \"w\").write(\"ran\")\nexcept OSError:\n    pass\n";
    let steps = json!([
        {"call": "skills_load", "arguments": {"names": ["importer"]}},
        {"write": scripts.join("json.py"), "text": planted_json},
        {"plant_pyc": scripts.join("helper.py"), "evil": planted_pyc},
        {"call": "skills_run_script", "arguments": {"skill": "importer", "path": "scripts/run.py"}},
    ]);
    let log = project.python_session(&project.server(&["--timeout", "20"]), &steps);
    let ran = &log["results"][1]["structuredContent"];
    let stdout = ran["stdout"].as_str().unwrap_or_default();
    let seen = report(ran);
    let mut escapes = Vec::new();
    if stdout.contains("PLANTED-JSON-RAN") || seen["json_planted"] == true {
        escapes.push("the planted scripts/json.py was imported".to_owned());
    }
    if stdout.contains("PLANTED-PYC") {
        escapes.push("the planted __pycache__/helper.*.pyc ran".to_owned());
    }
    for marker in ["planted-json", "planted-pyc"] {
        if project.dir().join("output").join(marker).exists() {
            escapes.push(format!("output/{marker} was written"));
        }
    }
    assert_contained(&escapes, ran);
    assert_eq!(seen["helper"], "checked helper", "{ran:#}");
    assert_eq!(
        seen["cache_tag"], log["cache_tag"],
        "the skill's python3 is not the driver's: the planted bytecode tested nothing"
    );
}

// 4. Processes.

/// A child that leaves its process group and session (setsid, double
/// fork) is dead when the call returns, whether the script exited or was
/// killed at the timeout: it never writes its marker, never reaches the
/// host, and no process of it is left.
#[tokio::test]
async fn processes_a_detached_child_dies_with_its_run_at_exit_and_at_the_timeout() {
    let project = Project::new();
    let listener = UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    project.skill("detach", GRANTS, &[("scripts/processes.py", PROCESSES)]);
    let server = project.connect(&["--timeout", "2"]).await;
    load(&server.client, &["detach"]).await;
    let output = project.dir().join("output");
    let mut escapes = Vec::new();
    let mut runs = Vec::new();
    let mut deadline = Instant::now();
    // Each child sleeps past the moment its call returns: 0.1 s after an
    // exit, 2 s (the timeout) after a hang.
    for (hang, sleep) in [(false, 1.5), (true, 3.0)] {
        let token = format!(
            "{}-{}",
            project.token,
            if hang { "timeout" } else { "exit" }
        );
        let marker = output.join(format!("{token}.marker"));
        let started = Instant::now();
        let ran = run(
            &server.client,
            "detach",
            "scripts/processes.py",
            &json!({"mode": "detach", "token": token, "sleep": sleep, "hang": hang,
                    "marker": marker, "udp": port}),
        )
        .await;
        assert!(
            report(&ran)["grandchild"].is_string(),
            "the attack did not start: {ran:#}"
        );
        assert_eq!(ran["timed_out"] == true, hang, "{ran:#}");
        if let Err(alive) = all_dead(&token, Duration::from_secs(1)) {
            escapes.push(format!(
                "after the {} the child is alive: {alive:?}",
                if hang { "timeout" } else { "exit" }
            ));
        }
        deadline = deadline.max(started + Duration::from_secs_f64(sleep + 0.7));
        runs.push((marker, ran));
    }
    // Past the children's sleep: had either lived, it would have written.
    std::thread::sleep(deadline.saturating_duration_since(Instant::now()));
    for (marker, _) in &runs {
        if marker.exists() {
            escapes.push(format!("{} was written", marker.display()));
        }
    }
    for datagram in datagrams(&listener) {
        escapes.push(format!("the host's UDP port got {datagram:?}"));
    }
    assert_contained(
        &escapes,
        &json!(runs.iter().map(|(_, ran)| ran).collect::<Vec<_>>()),
    );
    server.client.cancel().await.unwrap();
}

/// A fork bomb of 500 processes is stopped short by a process limit, and
/// the next call runs at once and normally, with nothing of the bomb left.
#[tokio::test]
async fn processes_a_fork_bomb_is_limited_and_the_next_run_is_normal() {
    let project = Project::new();
    project.skill("bomb", NO_NETWORK, &[("scripts/processes.py", PROCESSES)]);
    let server = project.connect(&["--timeout", "20"]).await;
    load(&server.client, &["bomb"]).await;
    let ran = run(
        &server.client,
        "bomb",
        "scripts/processes.py",
        &json!({"mode": "bomb", "token": project.token, "count": 500}),
    )
    .await;
    let seen = report(&ran);
    assert!(
        seen["created"].is_number(),
        "the attack did not start: {ran:#}"
    );
    let mut escapes = Vec::new();
    if seen["created"] == 500 {
        escapes.push(format!(
            "all 500 processes were created in {} s",
            seen["seconds"]
        ));
    }
    let started = Instant::now();
    let next = run(
        &server.client,
        "bomb",
        "scripts/processes.py",
        &json!({"mode": "ok", "token": "next-run"}),
    )
    .await;
    let took = started.elapsed();
    assert_eq!(next["exit_code"], 0, "{next:#}");
    assert_eq!(report(&next)["ran"], true, "{next:#}");
    assert!(took < Duration::from_secs(3), "the next run took {took:?}");
    if let Err(alive) = all_dead(&project.token, Duration::from_secs(3)) {
        escapes.push(format!("{} of the bomb's processes live on", alive.len()));
    }
    assert_contained(&escapes, &ran);
    server.client.cancel().await.unwrap();
}

// 5. seccomp, the second wall.

/// What a blocked call returns: the filter's errno (EPERM, or ENOSYS for
/// calls the filter pretends do not exist), EACCES from a capability or
/// LSM check, or a probe killed by the filter (SIGSYS). ENOSPC is what
/// unshare(CLONE_NEWUSER) returns when no user namespace may be created.
fn blocked(name: &str, result: &Value) -> bool {
    if result["signal"].is_number() {
        return true;
    }
    let errno = result["errno"].as_str().unwrap_or_default();
    result["ret"] == -1
        && (["EPERM", "EACCES", "ENOSYS"].contains(&errno)
            || (name == "unshare_newuser" && errno == "ENOSPC"))
}

/// Python SDK client. Calls no script needs are refused before they do
/// anything, each made raw (ctypes `syscall`) in a probe of its own.
#[test]
fn seccomp_refuses_the_calls_a_script_never_needs() {
    let project = Project::new();
    project.skill("sys", NO_NETWORK, &[("scripts/seccomp.py", SECCOMP)]);
    let steps = json!([
        {"call": "skills_load", "arguments": {"names": ["sys"]}},
        {"call": "skills_run_script", "arguments": {"skill": "sys", "path": "scripts/seccomp.py",
            "args": [json!({"server_pid": "{server_pid}"}).to_string()]}},
    ]);
    let log = project.python_session(&project.server(&["--timeout", "20"]), &steps);
    let ran = &log["results"][1]["structuredContent"];
    let results = report(ran)["results"].clone();
    let probes = results.as_object().expect("the probes reported");
    for name in [
        "ptrace_traceme",
        "ptrace_attach_server",
        "mount",
        "unshare_newuser",
        "bpf",
        "keyctl",
        "add_key",
        "userfaultfd",
        "io_uring_setup",
        "perf_event_open",
        "kexec_load",
        "init_module",
    ] {
        assert!(probes.contains_key(name), "{name} was not probed: {ran:#}");
    }
    let escapes: Vec<String> = probes
        .iter()
        .filter(|(name, result)| !blocked(name, result))
        .map(|(name, result)| format!("{name}: {result}"))
        .collect();
    assert_contained(&escapes, ran);
}

// 6. Limits.

/// Allocating (and touching) 4 GiB is stopped by a memory limit, and the
/// server lives on and serves the next run.
#[tokio::test]
async fn limits_allocating_4_gib_is_stopped_and_the_server_survives() {
    let project = Project::new();
    project.skill(
        "hog",
        NO_NETWORK,
        &[
            ("scripts/limits.py", LIMITS),
            ("scripts/processes.py", PROCESSES),
        ],
    );
    let server = project.connect(&["--timeout", "30"]).await;
    load(&server.client, &["hog"]).await;
    let ran = run(
        &server.client,
        "hog",
        "scripts/limits.py",
        &json!({"mode": "memory", "mib": 4096}),
    )
    .await;
    let seen = report(&ran);
    assert_eq!(seen["case"], "memory", "the attack did not start: {ran:#}");
    let mut escapes = Vec::new();
    if seen["allocated_mib"] == 4096 {
        escapes.push("4 GiB were allocated, every page backed".to_owned());
    }
    let next = run(
        &server.client,
        "hog",
        "scripts/processes.py",
        &json!({"mode": "ok", "token": "after-the-hog"}),
    )
    .await;
    assert_eq!(
        report(&next)["ran"],
        true,
        "the server still runs: {next:#}"
    );
    assert_contained(&escapes, &ran);
    server.client.cancel().await.unwrap();
}

/// A file cannot grow past the file size limit (an 8 GiB sparse file is
/// refused), and a script cannot hold 100,000 open files, even after it
/// raises its own limits.
#[tokio::test]
async fn limits_file_size_and_open_files_are_bounded() {
    let project = Project::new();
    project.skill("hog", GRANTS, &[("scripts/limits.py", LIMITS)]);
    let server = project.connect(&["--timeout", "20"]).await;
    load(&server.client, &["hog"]).await;
    let big = project.dir().join("output/big");
    let fsize = run(
        &server.client,
        "hog",
        "scripts/limits.py",
        &json!({"mode": "fsize", "path": big}),
    )
    .await;
    let nofile = run(
        &server.client,
        "hog",
        "scripts/limits.py",
        &json!({"mode": "nofile", "count": 100_000}),
    )
    .await;
    let mut escapes = Vec::new();
    let size = fs_err::metadata(&big).map_or(0, |meta| meta.len());
    if size >= 8 << 30 {
        escapes.push(format!("output/big is {size} bytes long"));
    }
    if report(&nofile)["opened"] == 100_000 {
        escapes.push("100,000 files were open at once".to_owned());
    }
    assert!(
        !report(&fsize).is_null() || !fsize["signal"].is_null(),
        "{fsize:#}"
    );
    assert!(!report(&nofile).is_null(), "{nofile:#}");
    assert_contained(&escapes, &json!([fsize, nofile]));
    server.client.cancel().await.unwrap();
}

/// A script that spins (and ignores SIGXCPU) is ended, with nothing of it
/// left, soon after the timeout.
#[tokio::test]
async fn limits_a_cpu_spin_is_ended() {
    let project = Project::new();
    project.skill("spin", NO_NETWORK, &[("scripts/processes.py", PROCESSES)]);
    let server = project.connect(&["--timeout", "1"]).await;
    load(&server.client, &["spin"]).await;
    let started = Instant::now();
    let ran = run(
        &server.client,
        "spin",
        "scripts/processes.py",
        &json!({"mode": "spin", "token": project.token}),
    )
    .await;
    let took = started.elapsed();
    assert_eq!(report(&ran)["spinning"], true, "{ran:#}");
    let mut escapes = Vec::new();
    if took > Duration::from_secs(5) {
        escapes.push(format!("the call took {took:?}"));
    }
    if ran["timed_out"] != true && ran["signal"].is_null() {
        escapes.push("the run was neither timed out nor signalled".to_owned());
    }
    if let Err(alive) = all_dead(&project.token, Duration::from_secs(1)) {
        escapes.push(format!("still spinning: {alive:?}"));
    }
    assert_contained(&escapes, &ran);
    server.client.cancel().await.unwrap();
}

// 7. Files.

/// Python SDK client. A script reads only what its skill was granted and
/// writes only into its grant; the host's /proc, /sys and /tmp show it
/// nothing: not a host process, not a host interface, not a file the test
/// put in /tmp.
#[test]
fn files_a_script_sees_and_touches_nothing_of_the_host_beyond_its_grants() {
    let project = Project::new();
    let token = &project.token;
    let home = project.sandbox.path().join("home");
    let write = |relative: &str, text: &str| project.sandbox.write(relative, text);
    let ssh = write("home/.ssh/id_ed25519", &format!("SSH-KEY-{token}\n"));
    let aws = write("home/.aws/credentials", &format!("AWS-KEY-{token}\n"));
    let config = write(
        "config/credentials.toml",
        &format!("REGISTRY-TOKEN-{token}\n"),
    );
    let dotenv = write("project/.env", &format!("DOTENV-{token}\n"));
    let granted = write("project/docs/report.pdf", &format!("GRANTED-{token}\n"));
    project.skill(
        "other",
        "",
        &[("references/secret.md", &format!("OTHER-SKILL-{token}\n"))],
    );
    project.skill("files", GRANTS, &[("scripts/files.py", FILES)]);
    let host_marker = PathBuf::from(format!("/tmp/{token}-marker"));
    fs_err::write(&host_marker, format!("HOST-TMP-{token}\n")).unwrap();
    let host_written = PathBuf::from(format!("/tmp/{token}-written"));
    let _host_files = HostFiles(vec![host_marker.clone(), host_written.clone()]);
    let sleeper_name = format!("{token}-sleeper");
    let sleeper = Sleeper::start(&sleeper_name);
    let own_script = project.skill_dir("files").join("scripts/files.py");
    let other_script = project.skill_dir("other").join("scripts/planted.sh");
    let real_home = std::env::var("HOME").unwrap_or_else(|_| "/root".into());

    let mut exists = json!({
        "host_tmp_marker": host_marker,
        "host_process": format!("/proc/{}", sleeper.pid()),
        "server_process": "/proc/{server_pid}",
    });
    for interface in host_interfaces() {
        exists[format!("sys_{interface}")] = json!(format!("/sys/class/net/{interface}"));
    }
    let parameters = json!({
        "read": {
            "ssh_key": ssh, "aws": aws, "server_config": config, "dotenv": dotenv,
            "other_skill": project.skill_dir("other").join("references/secret.md"),
            "host_tmp_marker": host_marker, "shadow": "/etc/shadow", "granted": granted,
        },
        "system": ["shadow"],
        "write": {
            "project_root": project.dir().join("notes.txt"),
            "climbing": project.dir().join("output/../climbed.txt"),
            "host_tmp": host_written,
            "bashrc": home.join(".bashrc"),
            "own_script": own_script,
            "other_skill": other_script,
            "granted": project.dir().join("output/ok.txt"),
        },
        "exists": exists,
        "list": {
            "proc": {"path": "/proc", "look_for": [hex(&sleeper_name)]},
            "tmp": {"path": "/tmp", "look_for": [hex(&format!("{token}-marker"))]},
            "sys_net": {"path": "/sys/class/net",
                        "look_for": host_interfaces().iter().map(|name| hex(name)).collect::<Vec<_>>()},
            "real_home": {"path": real_home},
        },
    });
    let steps = json!([
        {"call": "skills_load", "arguments": {"names": ["files"]}},
        {"call": "skills_run_script", "arguments": {"skill": "files", "path": "scripts/files.py",
            "args": [parameters.to_string()]}},
    ]);
    let log = project.python_session(&project.server(&["--timeout", "20"]), &steps);
    let ran = &log["results"][1]["structuredContent"];
    let results = report(ran)["results"].clone();
    assert!(results.is_object(), "the attack reported nothing: {ran:#}");

    let mut escapes = Vec::new();
    let stdout = ran["stdout"].as_str().unwrap_or_default();
    for marker in [
        "SSH-KEY-",
        "AWS-KEY-",
        "REGISTRY-TOKEN-",
        "DOTENV-",
        "OTHER-SKILL-",
        "HOST-TMP-",
    ] {
        if stdout.contains(&format!("{marker}{token}")) {
            escapes.push(format!("{marker}: read"));
        }
    }
    for (name, read) in results["read"].as_object().unwrap() {
        if name != "granted" && read["ok"] == true {
            escapes.push(format!("read {name}: {read}"));
        }
    }
    for (name, path) in [
        ("project_root", project.dir().join("notes.txt")),
        ("climbing", project.dir().join("climbed.txt")),
        ("host_tmp", host_written),
        ("bashrc", home.join(".bashrc")),
        ("other_skill", other_script),
    ] {
        if path.exists() {
            escapes.push(format!("wrote {name}: {}", path.display()));
        }
    }
    if fs_err::read_to_string(&own_script).unwrap() != FILES {
        escapes.push("the script rewrote itself in the skill".to_owned());
    }
    for (name, seen) in results["exists"].as_object().unwrap() {
        if seen["ok"] == true {
            escapes.push(format!("sees {name}"));
        }
    }
    for (name, listing) in results["list"].as_object().unwrap() {
        let found = listing["found"].as_array().map_or(0, Vec::len);
        let shows_home = name == "real_home" && listing["entries"].as_u64().unwrap_or(0) > 0;
        if found > 0 || shows_home {
            escapes.push(format!("lists {name}: {listing}"));
        }
    }
    // What was granted works: the suite tests walls, not a broken run.
    assert_eq!(results["read"]["granted"]["ok"], true, "{ran:#}");
    assert_eq!(results["write"]["granted"]["ok"], true, "{ran:#}");
    assert!(project.dir().join("output/ok.txt").exists());
    assert_contained(&escapes, ran);
    drop(sleeper);
}

// 8. What the list above does not name.

/// The server started the way an agent host started from a terminal may
/// start it (tests/escape/tty_wrapper.py): its session's controlling
/// terminal and its stderr are a terminal, and its parent leaked it a
/// descriptor (the write end of a pipe, fd 100). A script finds no
/// terminal to push input into with TIOCSTI, and inherits no descriptor
/// beyond 0, 1 and 2: nothing it writes reaches the terminal or the pipe.
#[tokio::test]
async fn extra_no_terminal_to_inject_into_and_no_inherited_descriptor() {
    let project = Project::new();
    project.skill("tty", NO_NETWORK, &[("scripts/terminal.py", TTY)]);
    let log = project.sandbox.path().join("terminal.log");
    let wrapped = in_front(&project.server(&[]), "tty_wrapper.py", &[&log]);
    let server = project.connect_command(wrapped).await;
    load(&server.client, &["tty"]).await;
    // No newline: were it injected into a real shell, it would not run.
    let injected = format!("PWNED-TTY-{}", project.token);
    let leaked = format!("PWNED-FD-{}", project.token);
    let ran = run(
        &server.client,
        "tty",
        "scripts/terminal.py",
        &json!({"inject": injected, "leaked_fd": 100, "leak": leaked}),
    )
    .await;
    let results = report(&ran)["results"].clone();
    assert!(results.is_object(), "{ran:#}");
    // The wrapper copies the terminal and the pipe to the log every 50 ms.
    std::thread::sleep(Duration::from_millis(300));
    let mut escapes = Vec::new();
    let seen = fs_err::read_to_string(&log).unwrap_or_default();
    for (what, text) in [("the terminal", &injected), ("the leaked pipe", &leaked)] {
        if seen.contains(text.as_str()) {
            escapes.push(format!("{what} got {text:?}"));
        }
    }
    for (name, attempt) in results["terminals"].as_object().unwrap() {
        if attempt["ok"] == true {
            escapes.push(format!("TIOCSTI through {name}"));
        }
    }
    for inherited in results["inherited"].as_array().unwrap() {
        escapes.push(format!("inherited descriptor {inherited}"));
    }
    assert_contained(&escapes, &ran);
    server.client.cancel().await.unwrap();
}

/// /dev/shm is not the host's: a script neither sees nor reads a segment
/// the host made, and what it makes there never appears on the host.
#[tokio::test]
async fn extra_dev_shm_is_not_shared_with_the_host() {
    let project = Project::new();
    let token = &project.token;
    let host = PathBuf::from(format!("/dev/shm/{token}-host"));
    let written = PathBuf::from(format!("/dev/shm/{token}-written"));
    fs_err::write(&host, format!("HOST-SHM-{token}\n")).unwrap();
    let _host_files = HostFiles(vec![host.clone(), written.clone()]);
    project.skill("shm", NO_NETWORK, &[("scripts/files.py", FILES)]);
    let server = project.connect(&[]).await;
    load(&server.client, &["shm"]).await;
    let ran = run(
        &server.client,
        "shm",
        "scripts/files.py",
        &json!({"read": {"host_segment": host}, "write": {"new_segment": written},
                "exists": {"host_segment": host},
                "list": {"dev_shm": {"path": "/dev/shm", "look_for": [hex(&format!("{token}-host"))]}}}),
    )
    .await;
    let results = report(&ran)["results"].clone();
    assert!(results.is_object(), "{ran:#}");
    let mut escapes = Vec::new();
    if results["read"]["host_segment"]["ok"] == true {
        escapes.push("read the host's segment".to_owned());
    }
    if results["exists"]["host_segment"]["ok"] == true {
        escapes.push("sees the host's segment".to_owned());
    }
    if results["list"]["dev_shm"]["found"]
        .as_array()
        .is_some_and(|found| !found.is_empty())
    {
        escapes.push("lists the host's segment".to_owned());
    }
    if written.exists() {
        escapes.push("its segment appeared on the host".to_owned());
    }
    assert_contained(&escapes, &ran);
    server.client.cancel().await.unwrap();
}

/// Links and renames carry no write outside the grant: a symlink made in
/// the grant, one the project already had there, a hard link to a file
/// outside or to one the skill may only read, a rename out of the grant
/// or into it.
#[tokio::test]
async fn extra_links_and_renames_carry_no_write_outside_the_grant() {
    let project = Project::new();
    let victim_text = "the victim, outside every grant\n";
    let victim = project.sandbox.write("outside/victim.txt", victim_text);
    let readonly = project
        .sandbox
        .write("project/docs/report.pdf", "%PDF read-only\n");
    let dotenv = project.sandbox.write("project/.env", "DOTENV=value\n");
    let planted_target = project.sandbox.path().join("outside/planted-target.txt");
    fs_err::create_dir_all(project.dir().join("output")).unwrap();
    let planted = project.dir().join("output/planted");
    std::os::unix::fs::symlink(&planted_target, &planted).unwrap();
    project.skill("links", GRANTS, &[("scripts/links.py", LINKS)]);
    let server = project.connect(&[]).await;
    load(&server.client, &["links"]).await;
    let grant = project.dir().join("output");
    let ran = run(
        &server.client,
        "links",
        "scripts/links.py",
        &json!({"grant": grant, "project": project.dir(), "victim": victim,
                "readonly": readonly, "dotenv": dotenv, "planted": planted}),
    )
    .await;
    assert!(report(&ran)["results"].is_object(), "{ran:#}");
    let mut escapes = Vec::new();
    let unchanged = [
        (&victim, victim_text),
        (&readonly, "%PDF read-only\n"),
        (&dotenv, "DOTENV=value\n"),
    ];
    for (path, text) in unchanged {
        match fs_err::read_to_string(path) {
            Ok(now) if now == text => {}
            Ok(now) => escapes.push(format!("{} now reads {now:?}", path.display())),
            Err(error) => escapes.push(format!("{} is gone: {error}", path.display())),
        }
    }
    for path in [
        planted_target.clone(),
        project.dir().join("escaped-via-folder-link.txt"),
        project.dir().join("renamed-out.txt"),
    ] {
        if path.exists() {
            escapes.push(format!("{} was written", path.display()));
        }
    }
    let env_link = grant.join("env-link");
    if env_link.exists() {
        escapes.push("the project's .env is linked into the grant".to_owned());
    }
    assert_contained(&escapes, &ran);
    server.client.cancel().await.unwrap();
}

/// A script cannot signal a host process (the server, a process the test
/// started), by kill or by pidfd, nor change one without a signal (its
/// priority with setpriority, its limits with prlimit), nor take from one
/// (its memory with process_vm_readv, its stdin with pidfd_getfd).
#[tokio::test]
async fn extra_host_processes_cannot_be_signalled_or_changed() {
    let project = Project::new();
    let mut sleeper = Sleeper::start(&format!("{}-sleeper", project.token));
    project.skill("signals", NO_NETWORK, &[("scripts/signals.py", SIGNALS)]);
    let server = project.connect(&[]).await;
    load(&server.client, &["signals"]).await;
    let stat = |pid: u32| -> (String, String) {
        let stat = fs_err::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        let nice = stat
            .rsplit_once(')')
            .unwrap()
            .1
            .split_whitespace()
            .nth(16)
            .unwrap()
            .to_owned();
        let limits = fs_err::read_to_string(format!("/proc/{pid}/limits")).unwrap();
        let core = limits
            .lines()
            .find(|line| line.starts_with("Max core file size"))
            .unwrap()
            .to_owned();
        (nice, core)
    };
    let before = stat(server.pid);
    let ran = run(
        &server.client,
        "signals",
        "scripts/signals.py",
        &json!({"server_pid": server.pid, "sleeper_pid": sleeper.pid()}),
    )
    .await;
    assert!(report(&ran)["results"].is_object(), "{ran:#}");
    let results = report(&ran)["results"].clone();
    let mut escapes = Vec::new();
    if results["read_server_memory"]["ok"] == true
        || results["read_server_memory"]["errno"] == "EFAULT"
    {
        escapes.push(format!(
            "process_vm_readv reached the server: {}",
            results["read_server_memory"]
        ));
    }
    if results["take_server_stdin"]["ok"] == true {
        escapes.push("pidfd_getfd took the server's stdin".to_owned());
    }
    std::thread::sleep(Duration::from_millis(100));
    if !sleeper.alive() {
        escapes.push("the host's sleeper was killed".to_owned());
    }
    let after = stat(server.pid);
    if after.0 != before.0 {
        escapes.push(format!(
            "the server's nice went {} -> {}",
            before.0, after.0
        ));
    }
    if after.1 != before.1 {
        escapes.push(format!(
            "the server's limits went {:?} -> {:?}",
            before.1, after.1
        ));
    }
    let answered = tokio::time::timeout(
        Duration::from_secs(5),
        server.client.call_tool(
            CallToolRequestParams::new("skills_unload")
                .with_arguments(json!({"all": true}).as_object().unwrap().clone()),
        ),
    )
    .await;
    if !matches!(answered, Ok(Ok(_))) {
        escapes.push(format!("the server no longer answers: {answered:?}"));
    }
    assert_contained(&escapes, &ran);
    server.client.cancel().await.unwrap();
}

/// System V IPC is not the host's: a script neither finds (by key or by
/// id) nor changes a shared memory segment the host made, nor sends to
/// its message queue.
#[tokio::test]
async fn extra_system_v_ipc_is_not_shared_with_the_host() {
    use std::io::{BufRead as _, Write as _};
    let project = Project::new();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    let key = 0x1000_0000 | ((std::process::id() << 12) ^ nanos) & 0x0fff_fffe;
    let marker = format!("HOST-SHM-{}", project.token);
    let mut host = Command::new(mcp_python())
        .arg(escape_dir().join("sysv_host.py"))
        .arg(key.to_string())
        .arg(&marker)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(host.stdout.take().unwrap()).lines();
    let made: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    project.skill("ipc", NO_NETWORK, &[("scripts/ipc.py", IPC)]);
    let server = project.connect(&[]).await;
    load(&server.client, &["ipc"]).await;
    let ran = run(
        &server.client,
        "ipc",
        "scripts/ipc.py",
        &json!({"key": key, "shmid": made["shmid"], "msqid": made["msqid"], "token": project.token}),
    )
    .await;
    writeln!(host.stdin.as_mut().unwrap()).unwrap();
    let after: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    host.wait().unwrap();
    let results = report(&ran)["results"].clone();
    assert!(results.is_object(), "{ran:#}");
    let mut escapes = Vec::new();
    if after["shm"] != marker.as_str() {
        escapes.push(format!("the host's segment now holds {}", after["shm"]));
    }
    for message in after["received"].as_array().unwrap() {
        escapes.push(format!("the host's queue got {message}"));
    }
    for (name, attempt) in results.as_object().unwrap() {
        if attempt["ok"] == true || attempt["seen"].is_string() {
            escapes.push(format!("{name}: {attempt}"));
        }
    }
    assert_contained(&escapes, &ran);
    server.client.cancel().await.unwrap();
}

/// Nothing a run leaves in /tmp or /dev/shm is there for the next run,
/// of another skill: runs cannot pass each other files (a module to
/// import, a socket) outside their grants.
#[tokio::test]
async fn extra_nothing_a_run_leaves_outside_its_grants_reaches_the_next_run() {
    let project = Project::new();
    let token = &project.token;
    let tmp = PathBuf::from(format!("/tmp/{token}-persist"));
    let shm = PathBuf::from(format!("/dev/shm/{token}-persist"));
    let _host_files = HostFiles(vec![tmp.clone(), shm.clone()]);
    project.skill("first", NO_NETWORK, &[("scripts/files.py", FILES)]);
    project.skill("second", NO_NETWORK, &[("scripts/files.py", FILES)]);
    let server = project.connect(&[]).await;
    load(&server.client, &["first", "second"]).await;
    let first = run(
        &server.client,
        "first",
        "scripts/files.py",
        &json!({"write": {"tmp": tmp, "dev_shm": shm}}),
    )
    .await;
    let second = run(
        &server.client,
        "second",
        "scripts/files.py",
        &json!({"read": {"tmp": tmp, "dev_shm": shm}, "exists": {"tmp": tmp, "dev_shm": shm}}),
    )
    .await;
    let results = report(&second)["results"].clone();
    assert!(results.is_object(), "{second:#}");
    let mut escapes = Vec::new();
    for kind in ["read", "exists"] {
        for (name, attempt) in results[kind].as_object().unwrap() {
            if attempt["ok"] == true {
                escapes.push(format!(
                    "the second run can {kind} what the first left in {name}"
                ));
            }
        }
    }
    for path in [&tmp, &shm] {
        if path.exists() {
            escapes.push(format!("{} is on the host", path.display()));
        }
    }
    assert_contained(&escapes, &json!([first, second]));
    server.client.cancel().await.unwrap();
}

/// A crash dumps no core file where the skill may not write: not in the
/// working folder (the project), not in the skill's own folder.
#[tokio::test]
async fn extra_a_crash_dumps_no_core_outside_the_grants() {
    let project = Project::new();
    project.skill("crash", GRANTS, &[("scripts/core.py", CORE)]);
    let server = project.connect(&[]).await;
    load(&server.client, &["crash"]).await;
    let ran = run(&server.client, "crash", "scripts/core.py", &json!({})).await;
    assert!(!report(&ran).is_null(), "{ran:#}");
    let mut cores = Vec::new();
    let mut pending = vec![project.sandbox.path().to_path_buf()];
    let grant = project.dir().join("output");
    while let Some(folder) = pending.pop() {
        for entry in fs_err::read_dir(&folder).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() && !path.is_symlink() {
                pending.push(path);
            } else if entry.file_name().to_string_lossy().starts_with("core")
                && !path.starts_with(&grant)
                && path.extension().is_none_or(|extension| extension != "py")
            {
                cores.push(path.display().to_string());
            }
        }
    }
    assert_contained(&cores, &ran);
    server.client.cancel().await.unwrap();
}

/// A client's `env` makes the interpreter load no code of its own:
/// LD_PRELOAD is refused, and so must be OPENSSL_CONF, whose providers
/// OpenSSL loads as shared objects in any Python script that imports
/// hashlib or ssl.
#[tokio::test]
async fn extra_client_env_cannot_make_the_interpreter_load_code() {
    let project = Project::new();
    let docs = project.dir().join("docs");
    fs_err::create_dir_all(&docs).unwrap();
    let source = docs.join("evil.c");
    fs_err::write(
        &source,
        "#include <stdio.h>\n__attribute__((constructor)) static void run(void) {\n    FILE *f = fopen(\"output/injected\", \"w\");\n    if (f) { fputs(\"injected\\n\", f); fclose(f); }\n    puts(\"CODE-INJECTED\"); fflush(stdout);\n}\n",
    )
    .unwrap();
    let library = docs.join("evil.so");
    let compiled = Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&library)
        .arg(&source)
        .status()
        .expect("cc, which links Rust, builds the planted library");
    assert!(compiled.success());
    let config = docs.join("openssl.cnf");
    fs_err::write(
        &config,
        format!(
            "openssl_conf = init\n[init]\nproviders = providers\n[providers]\nevil = evil\ndefault = default\n[evil]\nmodule = {}\nactivate = 1\n[default]\nactivate = 1\n",
            library.display()
        ),
    )
    .unwrap();
    project.skill(
        "hash",
        GRANTS,
        &[(
            "scripts/hash.py",
            "import hashlib, json\nprint(json.dumps({\"case\": \"env\", \"sha256\": hashlib.sha256(b\"x\").hexdigest()}))\n",
        )],
    );
    let server = project.connect(&[]).await;
    load(&server.client, &["hash"]).await;
    let mut escapes = Vec::new();
    let mut runs = Vec::new();
    for (name, value) in [
        ("LD_PRELOAD", library.display().to_string()),
        ("OPENSSL_CONF", config.display().to_string()),
    ] {
        let ran = structured(
            &call(
                &server.client,
                "skills_run_script",
                json!({"skill": "hash", "path": "scripts/hash.py", "env": {name: value}}),
            )
            .await,
        );
        if ran["stdout"]
            .as_str()
            .is_some_and(|stdout| stdout.contains("CODE-INJECTED"))
        {
            escapes.push(format!("{name} ran the client's code"));
        }
        runs.push(ran);
    }
    if project.dir().join("output/injected").exists() {
        escapes.push("output/injected was written by the client's code".to_owned());
    }
    assert_contained(&escapes, &json!(runs));
    server.client.cancel().await.unwrap();
}
