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
//!   the secrets the skill declares, each only when the operator passed its
//!   name (`skillpkg mcp --pass-env NAME`); `HOME` and `TMPDIR` point at a
//!   private scratch folder that is removed after the run;
//! - the process (the run's launcher, when sandboxed) leads a process
//!   group of its own; when it exits, times out or is cancelled, the whole
//!   group is killed with `SIGKILL`. A sandboxed script is the init of its
//!   own PID namespace and dies with its launcher, and every process of
//!   the namespace with it, `setsid()` children included;
//! - stdout and stderr are read to the end but kept only up to
//!   [`Limits::output_cap`] each, so a flood neither blocks the script nor
//!   fills the server's memory;
//! - with a [`sandbox::Policy`], the run gets a sandbox of its own
//!   ([`super::jail`]): namespaces, a root holding only what it may see,
//!   the skill's sealed copy, limits, Landlock and seccomp, and a proxy
//!   to the hosts its skill lists.
//!
//! Nothing here waits without a bound: the timeout covers the script, and
//! output held open by an unsandboxed escaped process is given up shortly
//! after.

use std::collections::{BTreeMap, BTreeSet, HashMap};
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

use super::jail;
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
    // Programs other programs start, and start-up files they read.
    "SHELL",
    "EDITOR",
    "VISUAL",
    "PAGER",
    "BROWSER",
    "ZDOTDIR",
    "INPUTRC",
    "PHPRC",
    "TERMINFO",
    "TERMINFO_DIRS",
];

/// Name prefixes a caller's `env` may not use: the dynamic loader's and
/// glibc's (`LD_`, `GLIBC_TUNABLES`), bash's (`BASH_ENV`, `BASHOPTS`,
/// `BASH_FUNC_*`), and the interpreters' and tools' that load code or
/// options (`PYTHON*`, `NODE_*`, `NPM_*`, `PERL5*`, `RUBY*`, `GEM_*`,
/// `JAVA*`, `_JAVA*`, `GIT_*`), OpenSSL's, which loads providers and
/// engines from its configuration (`OPENSSL_CONF`, `OPENSSL_MODULES`),
/// Lua's (`LUA_INIT` runs code), and the XDG folders programs take their
/// configuration and plugins from.
pub const RESERVED_PREFIXES: &[&str] = &[
    "LD_", "DYLD_", "GLIBC_", "MALLOC_", "BASH", "PYTHON", "NODE_", "NPM_", "PERL5", "RUBY",
    "GEM_", "JAVA", "_JAVA", "GIT_", "OPENSSL_", "LUA_", "XDG_",
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
    /// The skill's sealed copy (`jail::seal`), shown at the skill's path
    /// in a sandboxed run; `None` shows the installed folder.
    pub sealed: Option<PathBuf>,
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
    #[error(
        "skill `{skill}` needs the secret `{name}`, and the server's environment does not set it"
    )]
    MissingSecret { name: String, skill: String },
    #[error(
        "skill `{skill}` needs the secret `{name}`, and the server does not pass `{name}` to skills"
    )]
    SecretNotPassed { name: String, skill: String },
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
            Self::MissingSecret { name, .. } => {
                Some(format!("set {name} in the environment `skillpkg mcp` starts in"))
            }
            Self::SecretNotPassed { name, .. } => Some(format!(
                "if the skill may have it, start the server with `skillpkg mcp --pass-env {name}`"
            )),
            Self::Unenforceable { .. } => Some(
                "runs need unprivileged user namespaces and Landlock (Linux 6.7 or later): allow user namespaces (sysctl user.max_user_namespaces, kernel.unprivileged_userns_clone, or the AppArmor profile that blocks them), or start the server with --unsandboxed for skills you trust".into(),
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

/// A script's environment as [`environment`] built it, and what the caller
/// should be told about it (an optional secret left out, and why).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct ScriptEnvironment {
    /// Every variable the script gets, secrets included.
    pub vars: BTreeMap<String, String>,
    /// Notes for the call's result.
    pub notes: Vec<String>,
}

impl std::fmt::Debug for ScriptEnvironment {
    // The values include secrets: show only the names.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptEnvironment")
            .field("names", &self.vars.keys().collect::<Vec<_>>())
            .field("notes", &self.notes)
            .finish()
    }
}

/// Builds a script's whole environment: the [`PASSED_THROUGH`] variables
/// of `server` (`PATH` defaults to `/usr/local/bin:/usr/bin:/bin`), then
/// `given` (the caller's `env`: names `[A-Za-z_][A-Za-z0-9_]*`, none of
/// [`is_reserved`] name, no secret's name, no NUL in values), then each
/// secret `skill` declares, from `server`, when and only when its name is
/// in `pass_env` (the operator's `--pass-env`): a skill naming a variable is
/// never enough to read it.
///
/// A required secret that is not passed is [`ExecError::SecretNotPassed`];
/// one that is passed but not set is [`ExecError::MissingSecret`]. An
/// optional secret that is not passed is left out with a note; one that is
/// passed but not set is left out.
pub fn environment(
    server: &BTreeMap<String, String>,
    given: &BTreeMap<String, String>,
    skill: &str,
    secrets: &[SecretRequirement],
    pass_env: &BTreeSet<String>,
) -> Result<ScriptEnvironment, ExecError> {
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
    let mut notes = Vec::new();
    for secret in secrets {
        // Whether the operator passed the name is decided before whether
        // the server has it, so a refusal says nothing about variables the
        // operator did not choose to share.
        if !pass_env.contains(&secret.name) {
            if secret.optional {
                notes.push(format!(
                    "the optional secret `{}` of skill `{skill}` was left out: the server does not pass it to skills (skillpkg mcp --pass-env {})",
                    secret.name, secret.name
                ));
                continue;
            }
            return Err(ExecError::SecretNotPassed {
                name: secret.name.clone(),
                skill: skill.to_owned(),
            });
        }
        match server.get(&secret.name).filter(|value| !value.is_empty()) {
            Some(value) => {
                env.insert(secret.name.clone(), value.clone());
            }
            None if secret.optional => {}
            None => {
                return Err(ExecError::MissingSecret {
                    name: secret.name.clone(),
                    skill: skill.to_owned(),
                });
            }
        }
    }
    Ok(ScriptEnvironment { vars: env, notes })
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
        sealed,
    } = request;
    let Some((first, rest)) = program.split_first() else {
        return Err(ExecError::NotRunnable {
            path: PathBuf::new(),
            reason: "the command is empty".into(),
        });
    };
    let path_var = env.get("PATH").map(String::as_str);
    let executable = resolve_program(first, path_var).await?;
    // A sandboxed run's launcher has made its namespaces and most of its
    // root already; its scratch folder is the run's.
    let launcher = match &sandbox {
        Some(policy) => {
            check_support(policy)?;
            Some(jail::Launcher::take().map_err(ExecError::Sandbox)?)
        }
        None => None,
    };
    // The run's private folder: `home` is the script's HOME and TMPDIR
    // (writable).
    let own_scratch = match launcher {
        Some(_) => None,
        None => Some(jail::private_scratch().map_err(ExecError::Scratch)?),
    };
    let home = match (&launcher, &own_scratch) {
        (Some(launcher), _) => launcher.home(),
        (None, Some(scratch)) => {
            let home = scratch.path().join("home");
            fs_err::create_dir(&home).map_err(ExecError::Scratch)?;
            home
        }
        (None, None) => unreachable!("a run has a launcher or a scratch folder"),
    };

    let mut notes = Vec::new();
    let mut stdin = stdin;
    // `proxy` is held until the run is over.
    let mut proxy = None;
    let mut running = match (sandbox, launcher) {
        (Some(policy), Some(launcher)) => {
            notes.extend(policy.notes.iter().cloned());
            let grants = grants_for(&executable, path_var, &home, &policy.skill_root);
            if policy.network != Network::Deny {
                let socket = launcher.scratch().join("proxy.sock");
                let allow = jail::proxy::Allow::parse(&policy.outbound);
                proxy = Some(jail::proxy::Proxy::start(&socket, allow).map_err(|error| {
                    ExecError::Sandbox(format!("cannot start the run's proxy: {error}"))
                })?);
            }
            let mut env: Vec<(String, String)> = env.into_iter().collect();
            for name in ["HOME", "TMPDIR"] {
                env.push((name.to_owned(), home.to_string_lossy().into_owned()));
            }
            let spec = jail::plan::spec(jail::plan::Run {
                program: &executable,
                args: rest.iter().chain(&args).cloned().collect(),
                env,
                workdir: &workdir,
                root: launcher.root(),
                policy: &policy,
                grants: &grants,
                sealed: sealed.as_deref(),
                limits: jail::spec::RunLimits {
                    cpu_seconds: limits.timeout.as_secs() + 1,
                    ..jail::spec::RunLimits::default()
                },
                proxy: proxy.as_ref().map(jail::proxy::Proxy::path),
            });
            let (process, run) = launcher
                .start(&spec, stdin.take())
                .map_err(ExecError::Sandbox)?;
            Running::Jailed(process, run)
        }
        _ => {
            let mut command = tokio::process::Command::new(&executable);
            command
                .args(rest)
                .args(&args)
                .env_clear()
                .envs(&env)
                .env("HOME", &home)
                .env("TMPDIR", &home)
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
            Running::Plain(spawn(command, None, executable.clone()).await?)
        }
    };
    let stop_reading = CancellationToken::new();
    let (stdout, stderr, mut group) = match &mut running {
        Running::Plain(child) => {
            if let (Some(bytes), Some(mut pipe)) = (stdin, child.stdin.take()) {
                // A script that does not read its input closes the pipe
                // early; that is its business, not an error.
                tokio::spawn(async move {
                    let _ = pipe.write_all(&bytes).await;
                });
            }
            (
                child.stdout.take().map(|pipe| Box::new(pipe) as Output),
                child.stderr.take().map(|pipe| Box::new(pipe) as Output),
                ProcessGroup(child.id().and_then(|pid| i32::try_from(pid).ok())),
            )
        }
        Running::Jailed(process, _) => (
            process.stdout.take().map(|pipe| Box::new(pipe) as Output),
            process.stderr.take().map(|pipe| Box::new(pipe) as Output),
            ProcessGroup(None),
        ),
    };
    let read = |pipe| tokio::spawn(read_capped(pipe, limits.output_cap, stop_reading.clone()));
    let (stdout, stderr) = (stdout.map(read), stderr.map(read));

    let mut timed_out = false;
    let mut cancelled = false;
    let mut status = None;
    let mut refused = None;
    tokio::select! {
        ended = ended(&mut running, group.0) => match ended {
            Ok(ended) => status = ended,
            Err(why) => refused = Some(why),
        },
        () = tokio::time::sleep(limits.timeout) => timed_out = true,
        () = cancel.cancelled() => cancelled = true,
    }
    match running {
        // The launcher said how the script ended: the run's namespaces go
        // down, and the launcher ends, in the background.
        Running::Jailed(process, run) => {
            if status.is_none() {
                // Timed out, cancelled, or the launcher died: killing it
                // ends the script and every process of the run.
                process.kill();
                if timed_out || cancelled {
                    let killed = rustix::process::Signal::KILL.as_raw();
                    status = Some(std::process::ExitStatus::from_raw(killed));
                } else if refused.is_none() {
                    notes.push(
                        "the run's launcher ended without saying how the script ended".into(),
                    );
                }
            }
            run.finish(process);
        }
        Running::Plain(mut child) => {
            // The leader is not reaped yet, so its process group id cannot
            // have been reused: killing the group here reaches only the
            // script's processes, and takes its background children with
            // it.
            group.kill();
            // Once the leader is reaped its id is free again: no second kill.
            group.0 = None;
            status = child.wait().await.ok();
        }
    }
    if let Some(why) = refused {
        // The launcher could not start the script: no run happened.
        return Err(ExecError::Sandbox(why));
    }
    if let Some(proxy) = proxy.take() {
        for target in proxy.refused() {
            notes.push(format!(
                "the run tried to reach {target}, which the skill's permissions.network.outbound does not list; the proxy refused it"
            ));
        }
    }

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
    // The run's folder goes in the background: its answer does not wait
    // for the disk (a task that never starts still drops it).
    if let Some(scratch) = own_scratch {
        tokio::task::spawn_blocking(move || drop(scratch));
    }

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

/// Refuses a run the kernel cannot wall in: every sandboxed run needs
/// namespaces of its own (`jail::probe`) and Landlock. Landlock's TCP
/// rules are not needed: every run has a network namespace of its own.
fn check_support(_policy: &Policy) -> Result<(), ExecError> {
    jail::probe().map_err(|what| ExecError::Unenforceable { what })?;
    if !sandbox::probe().filesystem {
        return Err(ExecError::Unenforceable {
            what: "Landlock is not available on this kernel".into(),
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
/// a link shipped in the skill cannot turn a grant into `/`; `skill_root`
/// is the policy's, taken after links already.
fn grants_for(
    executable: &Path,
    path_var: Option<&str>,
    scratch: &Path,
    skill_root: &Path,
) -> RunGrants {
    let real = |path: &Path| fs_err::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    // The loaders are taken after their links once per process.
    let loaders = sandbox::elf_loaders();
    let mut execute: Vec<PathBuf> = sandbox::executables_for(executable, path_var)
        .iter()
        .map(|file| {
            if loaders.contains(file) {
                file.clone()
            } else {
                real(file)
            }
        })
        .collect();
    execute.sort();
    execute.dedup();
    let mut read = Vec::new();
    let installed = real(executable);
    let chosen_by_runtime = !installed.starts_with(skill_root);
    if chosen_by_runtime
        && let Some(prefix) = installed
            .parent()
            .and_then(Path::parent)
            .filter(|prefix| prefix.parent().is_some())
    {
        read.push(prefix.to_path_buf());
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

/// A started run: a process of the server's, or a sandboxed run's
/// launcher.
enum Running {
    Plain(tokio::process::Child),
    Jailed(jail::Process, jail::Run),
}

/// A run's output pipe.
type Output = Box<dyn tokio::io::AsyncRead + Unpin + Send>;

/// How a run ended: a sandboxed one as its launcher says (an error when
/// it could not start the script); any other when the process exits (see
/// [`exited`]), `None` then, as it is not reaped yet.
async fn ended(
    running: &mut Running,
    pid: Option<i32>,
) -> Result<Option<std::process::ExitStatus>, String> {
    match running {
        Running::Jailed(_, run) => run.ended().await,
        Running::Plain(child) => {
            exited(child, pid).await;
            Ok(None)
        }
    }
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

#[cfg(test)]
mod environment_tests {
    use std::collections::{BTreeMap, BTreeSet};

    use serde_json::json;
    use skillpkg_index::skill::model::SecretRequirement;

    use super::{ExecError, environment};

    fn secrets(value: serde_json::Value) -> Vec<SecretRequirement> {
        serde_json::from_value(value).unwrap()
    }

    fn server() -> BTreeMap<String, String> {
        BTreeMap::from([
            ("PATH".to_owned(), "/usr/bin".to_owned()),
            (
                "AWS_SECRET_ACCESS_KEY".to_owned(),
                "aws-server-key".to_owned(),
            ),
            ("OCR_API_KEY".to_owned(), "ocr-key-value".to_owned()),
        ])
    }

    fn passed(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|name| (*name).to_owned()).collect()
    }

    #[test]
    fn a_secret_the_operator_did_not_pass_is_refused_naming_it_the_skill_and_the_flag() {
        let declared = secrets(json!([{"name": "AWS_SECRET_ACCESS_KEY", "usage": "env"}]));
        let refused = environment(
            &server(),
            &BTreeMap::new(),
            "s3-sync",
            &declared,
            &passed(&[]),
        )
        .unwrap_err();
        assert!(
            matches!(&refused, ExecError::SecretNotPassed { name, skill } if name == "AWS_SECRET_ACCESS_KEY" && skill == "s3-sync"),
            "{refused:?}"
        );
        let message = refused.to_string();
        assert!(message.contains("`AWS_SECRET_ACCESS_KEY`"), "{message}");
        assert!(message.contains("skill `s3-sync`"), "{message}");
        assert!(
            refused
                .hint()
                .unwrap()
                .contains("--pass-env AWS_SECRET_ACCESS_KEY"),
            "{refused:?}"
        );
        // Passing another name does not help.
        let other = environment(
            &server(),
            &BTreeMap::new(),
            "s3-sync",
            &declared,
            &passed(&["OCR_API_KEY"]),
        );
        assert!(matches!(other, Err(ExecError::SecretNotPassed { .. })));
    }

    #[test]
    fn a_passed_secret_reaches_the_skill_and_nothing_else_does() {
        let declared = secrets(json!([{"name": "OCR_API_KEY", "usage": "env"}]));
        let built = environment(
            &server(),
            &BTreeMap::new(),
            "ocr",
            &declared,
            &passed(&["OCR_API_KEY", "AWS_SECRET_ACCESS_KEY"]),
        )
        .unwrap();
        assert_eq!(
            built.vars.keys().collect::<Vec<_>>(),
            ["OCR_API_KEY", "PATH"],
            "a passed name the skill does not declare stays out"
        );
        assert_eq!(built.vars["OCR_API_KEY"], "ocr-key-value");
        assert!(built.notes.is_empty());
        // The values never show in Debug.
        assert!(!format!("{built:?}").contains("ocr-key-value"));
    }

    #[test]
    fn a_passed_required_secret_the_server_lacks_is_missing() {
        let declared = secrets(json!([{"name": "NOT_SET_ANYWHERE", "usage": "env"}]));
        let missing = environment(
            &server(),
            &BTreeMap::new(),
            "tool",
            &declared,
            &passed(&["NOT_SET_ANYWHERE"]),
        );
        assert!(
            matches!(missing, Err(ExecError::MissingSecret { name, skill }) if name == "NOT_SET_ANYWHERE" && skill == "tool")
        );
    }

    #[test]
    fn an_optional_secret_not_passed_is_left_out_with_a_note() {
        let declared = secrets(json!([
            {"name": "AWS_SECRET_ACCESS_KEY", "usage": "env", "optional": true},
            {"name": "UNSET_OPTIONAL", "usage": "env", "optional": true}
        ]));
        let built = environment(
            &server(),
            &BTreeMap::new(),
            "s3-sync",
            &declared,
            &passed(&["UNSET_OPTIONAL"]),
        )
        .unwrap();
        assert!(!built.vars.contains_key("AWS_SECRET_ACCESS_KEY"));
        assert!(!built.vars.contains_key("UNSET_OPTIONAL"));
        assert_eq!(built.notes.len(), 1, "{:?}", built.notes);
        assert!(
            built.notes[0].contains("`AWS_SECRET_ACCESS_KEY`")
                && built.notes[0].contains("--pass-env AWS_SECRET_ACCESS_KEY"),
            "{:?}",
            built.notes
        );
    }
}
