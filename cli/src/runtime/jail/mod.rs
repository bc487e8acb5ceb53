//! One sandbox per run, walled by the kernel (docs/runtime-sandbox.md):
//! user, mount, PID, network, IPC, UTS and cgroup namespaces, a fresh root
//! that holds only what the run may see ([`plan`]), the skill's sealed
//! copy ([`seal`]), limits, no capabilities, Landlock, and a seccomp filter
//! ([`filter`]). A [`launcher`] process builds it: the server starts the
//! next one ahead, so a run pays for its mounts and its `exec`, not for
//! creating namespaces.
//!
//! Where the kernel refuses unprivileged user namespaces, [`probe`] says
//! why once, and every sandboxed run is refused with that reason: a run is
//! never started with fewer walls than it was promised.

pub mod filter;
pub mod launcher;
pub mod plan;
pub mod proxy;
pub mod seal;
pub mod spec;

use std::io::{self, BufRead as _, BufReader};
use std::os::fd::{AsRawFd as _, OwnedFd};
use std::os::unix::process::CommandExt as _;
use std::process::Stdio;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use tokio::io::AsyncWriteExt as _;

pub use launcher::LAUNCHER_ARG;
use spec::Spec;

/// How long a launcher may take to build a run's sandbox.
const SETUP_TIMEOUT: Duration = Duration::from_secs(10);

/// The binary started as the launcher: this one, unless a program that
/// embeds the runtime (a test harness) names `skillpkg` itself.
static LAUNCHER: OnceLock<std::path::PathBuf> = OnceLock::new();

/// Makes `path`, a `skillpkg` binary, the launcher: for programs other
/// than `skillpkg` that run scripts through [`crate::runtime::exec`].
pub fn use_launcher(path: &std::path::Path) {
    let _ = LAUNCHER.set(path.to_path_buf());
}

fn launcher_command() -> std::process::Command {
    let program = LAUNCHER
        .get()
        .map_or_else(|| std::path::PathBuf::from("/proc/self/exe"), Clone::clone);
    let mut command = std::process::Command::new(program);
    command.arg(LAUNCHER_ARG).env_clear();
    command
}

/// Whether runs can have namespaces here: `Err` holds why not, in a
/// sentence a user can act on. Asked once, by starting a launcher.
pub fn probe() -> Result<(), String> {
    static PROBED: OnceLock<Result<(), String>> = OnceLock::new();
    PROBED.get_or_init(probe_now).clone()
}

fn probe_now() -> Result<(), String> {
    let (read, write) = status_pipe().map_err(|error| error.to_string())?;
    let mut command = launcher_command();
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    with_status_fd(&mut command, &write);
    let mut child = command
        .spawn()
        .map_err(|error| format!("cannot start the run launcher: {error}"))?;
    drop(write);
    let mut line = String::new();
    let _ = BufReader::new(std::io::PipeReader::from(read)).read_line(&mut line);
    let _ = child.kill();
    let _ = child.wait();
    match line.trim_end().split_once(' ') {
        _ if line.trim_end() == "ready" => Ok(()),
        Some(("error", why)) => Err(why.to_owned()),
        _ => Err("the run launcher ended before it could say whether namespaces work".into()),
    }
}

fn status_pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).map_err(io::Error::from)
}

/// Makes `write` the child's fd 3.
fn with_status_fd(command: &mut std::process::Command, write: &OwnedFd) {
    let raw = write.as_raw_fd();
    // SAFETY: dup2 and fcntl are async-signal-safe.
    unsafe {
        command.pre_exec(move || {
            if raw == launcher::STATUS_FD {
                let flags = libc::fcntl(raw, libc::F_GETFD);
                if flags < 0 || libc::fcntl(raw, libc::F_SETFD, flags & !libc::FD_CLOEXEC) < 0 {
                    return Err(io::Error::last_os_error());
                }
            } else if libc::dup2(raw, launcher::STATUS_FD) < 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// A launcher that has made its namespaces and waits for a run, in its
/// run's pids cgroup when there is one.
struct Waiting {
    child: tokio::process::Child,
    status: std::io::PipeReader,
    cgroup: Option<Cgroup>,
}

static SPARE: Mutex<Option<Waiting>> = Mutex::new(None);

/// Whether the next run's launcher is started ahead ([`keep_a_spare`]).
static KEEP_A_SPARE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Starts each run's launcher ahead, while the run before it runs. Only
/// for a program with one tokio runtime for its whole life (the server):
/// the spare's pipes belong to the runtime that started it.
pub fn keep_a_spare() {
    KEEP_A_SPARE.store(true, std::sync::atomic::Ordering::Relaxed);
}

fn start_launcher() -> io::Result<Waiting> {
    let (read, write) = status_pipe()?;
    let mut command = launcher_command();
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    with_status_fd(&mut command, &write);
    let mut command = tokio::process::Command::from(command);
    command.kill_on_drop(true);
    let child = command.spawn()?;
    drop(write);
    // Joining a cgroup (v1) waits for the kernel's RCU grace period, about
    // 10 ms: done here, ahead of the run, for the launcher and everything
    // it will start.
    let cgroup = Cgroup::make().and_then(|cgroup| {
        let pid = child.id()?;
        cgroup.join(pid).ok()?;
        Some(cgroup)
    });
    Ok(Waiting {
        child,
        status: std::io::PipeReader::from(read),
        cgroup,
    })
}

/// Starts the run `spec` in a launcher (the one waiting, or a new one),
/// writes `stdin` after the spec, and returns the launcher once the
/// script has started: its stdout and stderr are the script's, and it
/// ends as the script ends. Starts the next run's launcher.
pub async fn start(
    spec: &Spec,
    stdin: Option<Vec<u8>>,
) -> Result<(tokio::process::Child, Option<Cgroup>), String> {
    let spare = SPARE.lock().ok().and_then(|mut spare| spare.take());
    let waiting = match spare {
        Some(waiting) => waiting,
        None => {
            start_launcher().map_err(|error| format!("cannot start the run launcher: {error}"))?
        }
    };
    // The next run's launcher makes its namespaces while this one runs.
    let ahead = KEEP_A_SPARE.load(std::sync::atomic::Ordering::Relaxed);
    ahead.then(|| {
        tokio::task::spawn_blocking(|| {
            let runtime = tokio::runtime::Handle::current();
            let _entered = runtime.enter();
            if let Ok(next) = start_launcher()
                && let Ok(mut spare) = SPARE.lock()
                && spare.is_none()
            {
                *spare = Some(next);
            }
        })
    });
    let Waiting {
        mut child,
        status,
        cgroup,
    } = waiting;
    let mut bytes = serde_json::to_vec(spec).map_err(|error| error.to_string())?;
    let length = u32::try_from(bytes.len()).map_err(|_| "the run is too large to describe")?;
    bytes.splice(0..0, length.to_be_bytes());
    let Some(mut pipe) = child.stdin.take() else {
        return Err("the run launcher has no stdin".into());
    };
    let sent = async {
        pipe.write_all(&bytes).await?;
        pipe.flush().await
    };
    // A launcher that failed early closed its stdin: its status says why.
    let sent = sent.await;
    let statuses = tokio::task::spawn_blocking(move || {
        let mut lines = Vec::new();
        let mut reader = BufReader::new(status);
        loop {
            let mut line = String::new();
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    let line = line.trim_end().to_owned();
                    let last = line == "started" || line.starts_with("error ");
                    lines.push(line);
                    if last {
                        break;
                    }
                }
            }
        }
        lines
    });
    let lines = match tokio::time::timeout(SETUP_TIMEOUT, statuses).await {
        Ok(Ok(lines)) => lines,
        Ok(Err(error)) => return Err(format!("the run launcher: {error}")),
        Err(_) => {
            return Err(format!(
                "the run's sandbox was not ready after {} s",
                SETUP_TIMEOUT.as_secs()
            ));
        }
    };
    if let Some(error) = lines.iter().find_map(|line| line.strip_prefix("error ")) {
        return Err(error.to_owned());
    }
    if lines.last().map(String::as_str) != Some("started") {
        return Err(match sent {
            Err(error) => format!("the run launcher ended early ({error})"),
            Ok(()) => "the run launcher ended before the script started".into(),
        });
    }
    if let Some(stdin) = stdin {
        // A script that does not read its input closes the pipe early;
        // that is its business, not an error.
        tokio::spawn(async move {
            let _ = pipe.write_all(&stdin).await;
        });
    } else {
        drop(pipe);
    }
    Ok((child, cgroup))
}

/// A pids cgroup for one run, removed when dropped. Made only where the
/// server may (root, with cgroup v1's `pids` hierarchy, or cgroup v2 where
/// the root cgroup can give its children the `pids` controller): there
/// `RLIMIT_NPROC` does not bind, since the kernel exempts a real user id
/// of root from it.
#[derive(Debug)]
pub struct Cgroup(std::path::PathBuf);

impl Cgroup {
    pub fn make() -> Option<Self> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        if !rustix::process::getuid().is_root() {
            return None;
        }
        // cgroup v1's `pids` hierarchy, else v2's, where the `pids`
        // controller can be given to the children of the root cgroup.
        let v1 = std::path::Path::new("/sys/fs/cgroup/pids");
        let v2 = std::path::Path::new("/sys/fs/cgroup");
        let base = if v1.join("cgroup.procs").exists() {
            v1
        } else if fs_err::read_to_string(v2.join("cgroup.controllers"))
            .is_ok_and(|controllers| controllers.split_whitespace().any(|name| name == "pids"))
        {
            let control = v2.join("cgroup.subtree_control");
            let enabled = fs_err::read_to_string(&control)
                .is_ok_and(|enabled| enabled.split_whitespace().any(|name| name == "pids"));
            if !enabled && fs_err::write(&control, "+pids").is_err() {
                return None;
            }
            v2
        } else {
            return None;
        };
        let path = base.join(format!(
            "skillpkg-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        fs_err::create_dir(&path).ok()?;
        let limits = spec::RunLimits::default();
        // The launcher and its proxy relay's threads count too.
        fs_err::write(path.join("pids.max"), (limits.processes + 8).to_string()).ok()?;
        Some(Self(path))
    }

    /// Moves process `pid` into the group.
    fn join(&self, pid: u32) -> io::Result<()> {
        fs_err::write(self.0.join("cgroup.procs"), pid.to_string())
    }

    pub fn path(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        // The run's processes are gone once the launcher is reaped; the
        // kernel may take a moment to let go of the group.
        for _ in 0..50 {
            if fs_err::remove_dir(&self.0).is_ok() || !self.0.exists() {
                return;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        tracing::warn!(cgroup = %self.0.display(), "a run's cgroup could not be removed");
    }
}
