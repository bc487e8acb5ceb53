//! Running a script or a tool entrypoint (docs/runtime-sandbox.md).
//!
//! One [`run`] is one process tree, from spawn to result, whatever the
//! script does:
//!
//! - the program comes from [`interpreter_for`] (`.py` python3, `.sh` bash,
//!   `.js`/`.mjs` node, else the file itself when it has a `#!` line and
//!   the exec bit); a `python3` or `node` found on `PATH` that is a wrapper
//!   script (pyenv, asdf) is replaced by the real interpreter it starts;
//! - the environment is built by [`environment`]: cleared, then the
//!   [`PASSED_THROUGH`] variables of the server, the caller's `env`, and
//!   the secrets the skill declares; `HOME` and `TMPDIR` point at a private
//!   scratch folder that is removed after the run;
//! - the script leads a process group of its own; when it exits, times out
//!   or is cancelled, the whole group is killed with `SIGKILL`, so
//!   background children die with it (a child that calls `setsid()` leaves
//!   the group and is not stopped: docs/runtime-sandbox.md);
//! - stdout and stderr are read to the end but kept only up to
//!   [`Limits::output_cap`] each, so a flood neither blocks the script nor
//!   fills the server's memory;
//! - with a [`sandbox::Policy`], the process is started from a thread
//!   confined by Landlock first ([`sandbox::restrict_thread`]).
//!
//! Nothing here waits without a bound: the timeout covers the script, and
//! output held open by an escaped process is given up shortly after.

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsString;
use std::io;
use std::os::unix::process::ExitStatusExt as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde::Serialize;
use skillpkg_index::skill::model::SecretRequirement;
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWriteExt as _};
use tokio_util::sync::CancellationToken;

use super::sandbox::{self, Network, Policy, RunGrants};

/// The server's environment variables a script inherits, when set: where
/// programs are found, language and time zone. Everything else is cleared.
pub const PASSED_THROUGH: &[&str] = &["PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ"];

/// Variables a caller's `env` may not set, because they belong to the
/// runtime (`PATH`, `HOME`, `TMPDIR`) or change what a shell, the dynamic
/// loader or an interpreter runs before (or instead of) the script: a
/// client could otherwise run code of its own with the skill's secrets
/// (`SHELLOPTS=xtrace` with `PS4='$(...)'` in any bash script). Every name
/// with one of the [`RESERVED_PREFIXES`] or ending in `_OPTIONS` is
/// refused too, and so is the name of a declared secret.
pub const RESERVED: &[&str] = &[
    "PATH",
    "HOME",
    "TMPDIR",
    "ENV",
    "IFS",
    "CDPATH",
    "GLOBIGNORE",
    "SHELLOPTS",
    "PS4",
    "PROMPT_COMMAND",
    "GCONV_PATH",
    "LOCPATH",
    "NLSPATH",
    "PERLLIB",
    "HOSTALIASES",
    "RESOLV_HOST_CONF",
];

/// Name prefixes a caller's `env` may not use: the dynamic loader's and
/// glibc's (`LD_`, `GLIBC_TUNABLES`), bash's (`BASH_ENV`, `BASHOPTS`,
/// `BASH_FUNC_*`), and the interpreters' and tools' that load code or
/// options (`PYTHON*`, `NODE_*`, `NPM_*`, `PERL5*`, `RUBY*`, `GEM_*`,
/// `JAVA*`, `_JAVA*`, `GIT_*`).
pub const RESERVED_PREFIXES: &[&str] = &[
    "LD_", "DYLD_", "GLIBC_", "MALLOC_", "BASH", "PYTHON", "NODE_", "NPM_", "PERL5", "RUBY",
    "GEM_", "JAVA", "_JAVA", "GIT_",
];

/// Whether a caller's `env` may not set `name` ([`RESERVED`],
/// [`RESERVED_PREFIXES`], `*_OPTIONS`).
pub fn is_reserved(name: &str) -> bool {
    RESERVED.contains(&name)
        || RESERVED_PREFIXES
            .iter()
            .any(|prefix| name.starts_with(prefix))
        || name.ends_with("_OPTIONS")
}

/// `PATH` when the server has none.
const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// How long output is still read after the script's process group is
/// gone: only a process that left the group can hold it open longer.
const OUTPUT_GRACE: Duration = Duration::from_millis(250);

/// Bounds of one run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Wall-clock time before the process group is killed. Default 60 s.
    pub timeout: Duration,
    /// Bytes kept of stdout, and of stderr. Default 1 MiB each.
    pub output_cap: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(60),
            output_cap: 1024 * 1024,
        }
    }
}

/// One process to run.
#[derive(Clone, Debug)]
pub struct RunRequest {
    /// The interpreter and the script ([`interpreter_for`]); a bare first
    /// word is looked up in `env`'s `PATH`.
    pub program: Vec<OsString>,
    /// Arguments after the script.
    pub args: Vec<OsString>,
    /// The complete environment ([`environment`]); `HOME` and `TMPDIR` are
    /// added.
    pub env: BTreeMap<String, String>,
    /// The working folder ([`sandbox::workdir_in_roots`]).
    pub workdir: PathBuf,
    /// Bytes written to stdin, which is then closed; `None` is `/dev/null`.
    pub stdin: Option<Vec<u8>>,
    pub limits: Limits,
    /// `None` runs unsandboxed: only when the user said so.
    pub sandbox: Option<Policy>,
}

/// What happened, whatever happened.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RunOutcome {
    /// The exit code, when the script exited by itself.
    pub exit_code: Option<i32>,
    /// The signal that ended it (9 after a timeout or a cancellation).
    pub signal: Option<i32>,
    /// Stdout up to the cap, invalid UTF-8 replaced.
    pub stdout: String,
    pub stderr: String,
    pub stdout_truncated: bool,
    pub stderr_truncated: bool,
    pub timed_out: bool,
    pub cancelled: bool,
    pub duration: Duration,
    /// What the runtime granted differently from what the skill declared,
    /// and anything else the caller should pass on.
    pub notes: Vec<String>,
}

/// Why a run could not start.
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    #[error("{path} cannot be run: {reason}")]
    NotRunnable { path: PathBuf, reason: String },
    #[error("the interpreter `{name}` is not on PATH")]
    InterpreterNotFound { name: String },
    #[error("the environment variable `{name}` is refused: {reason}")]
    Environment { name: String, reason: String },
    #[error("the skill needs the secret `{name}`, and the server's environment does not set it")]
    MissingSecret { name: String },
    #[error("the sandbox cannot enforce this run: {what}")]
    Unenforceable { what: String },
    #[error("cannot confine the script")]
    Sandbox(String),
    #[error("cannot start {program}")]
    Spawn {
        program: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot create the run's scratch folder")]
    Scratch(#[source] io::Error),
}

impl ExecError {
    /// What the user can do about it.
    pub fn hint(&self) -> Option<String> {
        match self {
            Self::NotRunnable { .. } => Some(
                "name the script `.py`, `.sh`, `.js` or `.mjs`, or give it a `#!` line and the exec bit".into(),
            ),
            Self::InterpreterNotFound { name } => {
                Some(format!("install {name}, or start the server with it on PATH"))
            }
            Self::Environment { .. } => {
                Some("leave the variable out of `env`; the runtime sets it, or it is not allowed".into())
            }
            Self::MissingSecret { name } => {
                Some(format!("set {name} in the environment `skillpkg mcp` starts in"))
            }
            Self::Unenforceable { .. } => Some(
                "use Linux 6.7 or later with Landlock enabled, or start the server with --unsandboxed".into(),
            ),
            Self::Sandbox(reason) => Some(reason.clone()),
            Self::Spawn { .. } | Self::Scratch(_) => None,
        }
    }
}

/// Returns the interpreter of a script by its extension: `python3` for
/// `.py`, `bash` for `.sh`, `node` for `.js` and `.mjs` (matched exactly,
/// lowercase).
pub fn interpreter_by_extension(script: &Path) -> Option<&'static str> {
    match script.extension().and_then(|extension| extension.to_str()) {
        Some("py") => Some("python3"),
        Some("sh") => Some("bash"),
        Some("js" | "mjs") => Some("node"),
        _ => None,
    }
}

/// Returns the command that runs `script`: `python3` for `.py`, `bash` for
/// `.sh`, `node` for `.js` and `.mjs` (extensions are matched exactly,
/// lowercase), followed by the script; for any other name, the script
/// itself when it starts with `#!` and has an exec bit. Anything else is
/// refused.
pub fn interpreter_for(script: &Path) -> Result<Vec<OsString>, ExecError> {
    use std::os::unix::fs::PermissionsExt as _;
    if let Some(interpreter) = interpreter_by_extension(script) {
        return Ok(vec![interpreter.into(), script.into()]);
    }
    let executable = fs_err::metadata(script)
        .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0);
    let refuse = |reason: &str| ExecError::NotRunnable {
        path: script.to_path_buf(),
        reason: reason.to_owned(),
    };
    let shebang = sandbox::shebang(script);
    if let Some((interpreter, _)) = &shebang
        && !interpreter.is_absolute()
    {
        return Err(refuse("its `#!` interpreter is not an absolute path"));
    }
    match (shebang.is_some(), executable) {
        (true, true) => Ok(vec![script.into()]),
        (true, false) => Err(refuse("it has a `#!` line but no exec bit")),
        (false, _) => Err(refuse(
            "its extension is not .py, .sh, .js or .mjs and it has no `#!` line",
        )),
    }
}

/// Returns the server's environment, leaving out names or values that are
/// not UTF-8.
pub fn server_environment() -> BTreeMap<String, String> {
    std::env::vars_os()
        .filter_map(|(name, value)| Some((name.into_string().ok()?, value.into_string().ok()?)))
        .collect()
}

/// Builds a script's whole environment: the [`PASSED_THROUGH`] variables
/// of `server` (`PATH` defaults to `/usr/local/bin:/usr/bin:/bin`), then
/// `given` (the caller's `env`: names `[A-Za-z_][A-Za-z0-9_]*`, none of
/// [`is_reserved`] name, no secret's name, no NUL in values), then each
/// declared secret from `server`. A required secret the server lacks is an
/// error; an optional one is left out.
pub fn environment(
    server: &BTreeMap<String, String>,
    given: &BTreeMap<String, String>,
    secrets: &[SecretRequirement],
) -> Result<BTreeMap<String, String>, ExecError> {
    let mut env: BTreeMap<String, String> = PASSED_THROUGH
        .iter()
        .filter_map(|name| Some((name.to_string(), server.get(*name)?.clone())))
        .filter(|(_, value)| !value.is_empty())
        .collect();
    env.entry("PATH".into())
        .or_insert_with(|| DEFAULT_PATH.into());
    for (name, value) in given {
        let refuse = |reason: &str| ExecError::Environment {
            name: name.clone(),
            reason: reason.to_owned(),
        };
        if !skillpkg_index::skill::extensions::is_env_var_name(name) {
            return Err(refuse(
                "names are letters, digits and `_`, not starting with a digit",
            ));
        }
        if is_reserved(name) {
            return Err(refuse(
                "the runtime sets it, or it makes the interpreter load other code",
            ));
        }
        if secrets.iter().any(|secret| &secret.name == name) {
            return Err(refuse(
                "it is a secret the skill declares; secrets come from the server's environment",
            ));
        }
        if value.contains('\0') {
            return Err(refuse("its value contains NUL"));
        }
        env.insert(name.clone(), value.clone());
    }
    for secret in secrets {
        match server.get(&secret.name).filter(|value| !value.is_empty()) {
            Some(value) => {
                env.insert(secret.name.clone(), value.clone());
            }
            None if secret.optional => {}
            None => {
                return Err(ExecError::MissingSecret {
                    name: secret.name.clone(),
                });
            }
        }
    }
    Ok(env)
}

/// Runs `request` to its end: exit, timeout or cancellation through
/// `cancel` (rmcp's `RequestContext::ct`). Errors only when the process
/// cannot start; everything after that is in the [`RunOutcome`].
pub async fn run(request: RunRequest, cancel: CancellationToken) -> Result<RunOutcome, ExecError> {
    let started = Instant::now();
    let RunRequest {
        program,
        args,
        env,
        workdir,
        stdin,
        limits,
        sandbox,
    } = request;
    let Some((first, rest)) = program.split_first() else {
        return Err(ExecError::NotRunnable {
            path: PathBuf::new(),
            reason: "the command is empty".into(),
        });
    };
    let path_var = env.get("PATH").map(String::as_str);
    let executable = resolve_program(first, path_var).await?;
    let scratch = tempfile::Builder::new()
        .prefix("skillpkg-run-")
        .tempdir()
        .map_err(ExecError::Scratch)?;

    let mut command = tokio::process::Command::new(&executable);
    command
        .args(rest)
        .args(&args)
        .env_clear()
        .envs(&env)
        .env("HOME", scratch.path())
        .env("TMPDIR", scratch.path())
        .current_dir(&workdir)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);

    let mut notes = Vec::new();
    let confinement = match sandbox {
        None => None,
        Some(policy) => {
            check_support(&policy)?;
            notes.extend(policy.notes.iter().cloned());
            let grants = grants_for(&executable, path_var, scratch.path(), &policy.skill_root);
            Some((policy, grants))
        }
    };
    let mut child = spawn(command, confinement, executable.clone()).await?;
    let mut group = ProcessGroup(child.id().and_then(|pid| i32::try_from(pid).ok()));

    if let (Some(bytes), Some(mut pipe)) = (stdin, child.stdin.take()) {
        // A script that does not read its input closes the pipe early;
        // that is its business, not an error.
        tokio::spawn(async move {
            let _ = pipe.write_all(&bytes).await;
        });
    }
    let stop_reading = CancellationToken::new();
    let stdout = child
        .stdout
        .take()
        .map(|pipe| tokio::spawn(read_capped(pipe, limits.output_cap, stop_reading.clone())));
    let stderr = child
        .stderr
        .take()
        .map(|pipe| tokio::spawn(read_capped(pipe, limits.output_cap, stop_reading.clone())));

    let mut timed_out = false;
    let mut cancelled = false;
    tokio::select! {
        () = exited(&mut child, group.0) => {}
        () = tokio::time::sleep(limits.timeout) => timed_out = true,
        () = cancel.cancelled() => cancelled = true,
    }
    // The leader is not reaped yet, so its process group id cannot have
    // been reused: killing the group here reaches only the script's
    // processes, and takes its background children with it.
    group.kill();
    // Once the leader is reaped its id is free again: no second kill.
    group.0 = None;
    let status = child.wait().await.ok();

    let gathered = async {
        let stdout = match stdout {
            Some(task) => task.await.unwrap_or_default(),
            None => Capture::default(),
        };
        let stderr = match stderr {
            Some(task) => task.await.unwrap_or_default(),
            None => Capture::default(),
        };
        (stdout, stderr)
    };
    tokio::pin!(gathered);
    let (stdout, stderr) = tokio::select! {
        both = &mut gathered => both,
        () = tokio::time::sleep(OUTPUT_GRACE) => {
            notes.push("a process that left the script's process group kept its output open; it was not stopped".into());
            stop_reading.cancel();
            gathered.await
        }
    };
    drop(scratch);

    Ok(RunOutcome {
        exit_code: status.and_then(|status| status.code()),
        signal: status.and_then(|status| status.signal()),
        stdout: String::from_utf8_lossy(&stdout.bytes).into_owned(),
        stderr: String::from_utf8_lossy(&stderr.bytes).into_owned(),
        stdout_truncated: stdout.truncated,
        stderr_truncated: stderr.truncated,
        timed_out,
        cancelled,
        duration: started.elapsed(),
        notes,
    })
}

/// Refuses a policy the kernel cannot enforce.
fn check_support(policy: &Policy) -> Result<(), ExecError> {
    let support = sandbox::probe();
    if !support.filesystem {
        return Err(ExecError::Unenforceable {
            what: "Landlock is not available on this kernel".into(),
        });
    }
    if policy.network != Network::Any && !support.network {
        return Err(ExecError::Unenforceable {
            what: format!(
                "the skill may not use the network, and this kernel's Landlock (ABI {}) cannot deny TCP",
                support.abi
            ),
        });
    }
    Ok(())
}

/// The interpreter's installation (the folder above its `bin/`, after
/// links) is readable when the runtime chose the interpreter from `PATH`;
/// the interpreter chain stays executable; the scratch folder is writable.
///
/// A program a skill names itself, in the `#!` line of a script run
/// directly, gets no folder around it, only the files of its chain: the
/// skill chooses that path, and the folder above `/root/.cargo/bin/cargo`
/// holds credentials. Every path is taken after links, never as written, so
/// a link shipped in the skill cannot turn a grant into `/`.
fn grants_for(
    executable: &Path,
    path_var: Option<&str>,
    scratch: &Path,
    skill_root: &Path,
) -> RunGrants {
    let real = |path: &Path| fs_err::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let mut execute: Vec<PathBuf> = sandbox::executables_for(executable, path_var)
        .iter()
        .map(|file| real(file))
        .collect();
    execute.sort();
    execute.dedup();
    let mut read = Vec::new();
    let chosen_by_runtime = !real(executable).starts_with(real(skill_root));
    if chosen_by_runtime {
        let installed = real(executable);
        if let Some(prefix) = installed
            .parent()
            .and_then(Path::parent)
            .filter(|prefix| prefix.parent().is_some())
        {
            read.push(prefix.to_path_buf());
        }
    }
    RunGrants {
        read,
        execute,
        write: vec![scratch.to_path_buf()],
    }
}

/// Starts `command` from a fresh thread, confined first when a policy is
/// given: the process inherits the thread's Landlock domain, the server
/// keeps none, and the thread ends right after. Unconfined runs take the
/// same way, so both cost the same and neither blocks a runtime thread
/// while the process starts.
async fn spawn(
    mut command: tokio::process::Command,
    confinement: Option<(Policy, RunGrants)>,
    program: PathBuf,
) -> Result<tokio::process::Child, ExecError> {
    let runtime = tokio::runtime::Handle::current();
    let (sender, receiver) = tokio::sync::oneshot::channel();
    let job: Job = Box::new(move || {
        let confined = match &confinement {
            Some((policy, grants)) => sandbox::restrict_thread(policy, grants),
            None => Ok(()),
        };
        let result = confined.map_err(ExecError::Sandbox).and_then(|()| {
            let _runtime = runtime.enter();
            command.spawn().map_err(|source| ExecError::Spawn {
                program: program.clone(),
                source,
            })
        });
        let _ = sender.send(result);
    });
    if let Err(error) = on_fresh_thread(job) {
        return Err(ExecError::Sandbox(format!(
            "cannot start the thread that confines it: {error}"
        )));
    }
    receiver
        .await
        .unwrap_or_else(|_| Err(ExecError::Sandbox("the confining thread died".into())))
}

type Job = Box<dyn FnOnce() + Send>;

/// Runs `job` on a thread that has never run anything else and ends after
/// it. One such thread is started ahead and waits: on a busy machine the
/// scheduler runs a woken thread at once but makes a new one wait its turn,
/// which would add milliseconds to every run. Spares are started from the
/// caller's (unconfined) thread, never from a confined one.
fn on_fresh_thread(job: Job) -> io::Result<()> {
    static SPARE: Mutex<Option<std::sync::mpsc::Sender<Job>>> = Mutex::new(None);
    let spare = SPARE.lock().ok().and_then(|mut spare| spare.take());
    let unsent = match spare {
        Some(sender) => sender.send(job).err().map(|error| error.0),
        None => Some(job),
    };
    let start = |job: Option<Job>| {
        let (sender, receiver) = std::sync::mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("skillpkg-sandbox".into())
            .spawn(move || {
                if let Some(job) = job.or_else(|| receiver.recv().ok()) {
                    job();
                }
            })
            .map(|_| sender)
    };
    if let Some(job) = unsent {
        start(Some(job))?;
    }
    // The next run's thread. Without one, that run starts its own.
    if let (Ok(sender), Ok(mut spare)) = (start(None), SPARE.lock()) {
        *spare = Some(sender);
    }
    Ok(())
}

/// Resolves the first word of the command: a path stays as it is; a name
/// is looked up in `PATH`; a `python3`, `python` or `node` found there
/// that is a script (a version manager's shim) is replaced by the real
/// interpreter it runs, asked once and remembered.
async fn resolve_program(first: &OsString, path_var: Option<&str>) -> Result<PathBuf, ExecError> {
    let name = first.to_string_lossy();
    if name.contains('/') {
        return Ok(PathBuf::from(first));
    }
    let found =
        sandbox::find_in_path(&name, path_var).ok_or_else(|| ExecError::InterpreterNotFound {
            name: name.clone().into_owned(),
        })?;
    let question: &[&str] = match name.as_ref() {
        "python3" | "python" => &["-c", "import sys; sys.stdout.write(sys.executable)"],
        "node" => &["-e", "process.stdout.write(process.execPath)"],
        _ => return Ok(found),
    };
    if sandbox::shebang(&found).is_none() {
        return Ok(found);
    }
    static REAL: OnceLock<Mutex<HashMap<PathBuf, PathBuf>>> = OnceLock::new();
    let cache = REAL.get_or_init(Mutex::default);
    if let Some(real) = cache.lock().ok().and_then(|map| map.get(&found).cloned()) {
        return Ok(real);
    }
    let asked = tokio::process::Command::new(&found)
        .args(question)
        .env_clear()
        .env("PATH", path_var.unwrap_or(DEFAULT_PATH))
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .output();
    let real = match tokio::time::timeout(Duration::from_secs(10), asked).await {
        Ok(Ok(output)) if output.status.success() => {
            PathBuf::from(String::from_utf8_lossy(&output.stdout).trim())
        }
        _ => return Ok(found),
    };
    if !real.is_absolute() || !real.is_file() {
        return Ok(found);
    }
    if let Ok(mut map) = cache.lock() {
        map.insert(found, real.clone());
    }
    Ok(real)
}

/// Resolves when the process exits, without reaping it (`waitid` with
/// `WNOWAIT`, checked at each `SIGCHLD`), so its process group id stays
/// reserved for the kill that follows. Should that fail, it waits and
/// reaps the usual way.
async fn exited(child: &mut tokio::process::Child, pid: Option<i32>) {
    use rustix::process::{Pid, WaitId, WaitIdOptions, waitid};
    use tokio::signal::unix::{SignalKind, signal};
    let options = WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT;
    // Listening before the first look loses no signal in between.
    if let (Some(pid), Ok(mut sigchld)) = (pid.and_then(Pid::from_raw), signal(SignalKind::child()))
    {
        loop {
            match waitid(WaitId::Pid(pid), options) {
                Ok(Some(_)) => return,
                Ok(None) => {}
                Err(rustix::io::Errno::INTR) => continue,
                Err(_) => break,
            }
            if sigchld.recv().await.is_none() {
                break;
            }
        }
    }
    let _ = child.wait().await;
}

/// The script's process group, killed when dropped (the run's future
/// cancelled by its caller) unless the run killed it already.
struct ProcessGroup(Option<i32>);

impl ProcessGroup {
    fn kill(&self) {
        if let Some(pid) = self.0.and_then(rustix::process::Pid::from_raw) {
            // ESRCH (the group is gone) is the expected case after a
            // clean exit.
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.kill();
    }
}

#[derive(Debug, Default)]
struct Capture {
    bytes: Vec<u8>,
    truncated: bool,
}

/// Reads `pipe` to its end (or until `stop`), keeping the first `cap`
/// bytes: the rest is read and dropped, so the writer never blocks on a
/// full pipe.
async fn read_capped(
    mut pipe: impl AsyncRead + Unpin,
    cap: usize,
    stop: CancellationToken,
) -> Capture {
    let mut capture = Capture::default();
    let mut buffer = vec![0_u8; 64 * 1024];
    loop {
        let read = tokio::select! {
            read = pipe.read(&mut buffer) => read,
            () = stop.cancelled() => break,
        };
        let Ok(read) = read else { break };
        if read == 0 {
            break;
        }
        let room = cap.saturating_sub(capture.bytes.len());
        if read > room {
            capture.truncated = true;
        }
        capture.bytes.extend_from_slice(&buffer[..read.min(room)]);
    }
    capture
}
