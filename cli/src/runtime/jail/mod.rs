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

pub mod factory;
pub mod filter;
pub mod host;
pub mod launcher;
pub mod leftovers;
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
use leftovers::SCRATCH_PREFIX;
pub use leftovers::sweep_stale;
use spec::Spec;

/// The binary started as the launcher: this one, unless a program that
/// embeds the runtime (a test harness) names `skillpkg` itself.
static LAUNCHER: OnceLock<std::path::PathBuf> = OnceLock::new();

/// Makes `path`, a `skillpkg` binary, the launcher: for programs other
/// than `skillpkg` that run scripts through [`crate::runtime::exec`].
pub fn use_launcher(path: &std::path::Path) {
    let _ = LAUNCHER.set(path.to_path_buf());
}

fn launcher_command() -> std::process::Command {
    skillpkg_command(LAUNCHER_ARG)
}

/// The `skillpkg` binary with `role` (the launcher's or the factory's
/// hidden argument) and no environment.
fn skillpkg_command(role: &str) -> std::process::Command {
    let program = LAUNCHER
        .get()
        .map_or_else(|| std::path::PathBuf::from("/proc/self/exe"), Clone::clone);
    let mut command = std::process::Command::new(program);
    command.arg(role).env_clear();
    command
}

/// A run's scratch folder: its home (where the script writes), the mount
/// point of its root and its proxy's socket, private to the server's user
/// (mode 0700) whatever the umask.
pub fn private_scratch() -> io::Result<tempfile::TempDir> {
    use std::os::unix::fs::PermissionsExt as _;
    tempfile::Builder::new()
        .prefix(&format!("{SCRATCH_PREFIX}{}-", leftovers::owner_tag()))
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir()
}

/// The launcher factory, started at the first launcher ([`factory`]).
static FACTORY: Mutex<Option<factory::Factory>> = Mutex::new(None);

/// Asks the factory for a launcher, starting the factory when there is
/// none, or again when it ended.
fn from_factory(
    scratch: &std::path::Path,
    cgroup: Option<&std::path::Path>,
    fds: [&OwnedFd; 4],
) -> io::Result<OwnedFd> {
    let mut factory = FACTORY
        .lock()
        .map_err(|_| io::Error::other("the launcher factory's lock"))?;
    for _ in 0..2 {
        if factory.is_none() {
            *factory = Some(factory::Factory::start(skillpkg_command(
                factory::FACTORY_ARG,
            ))?);
        }
        let Some(running) = factory.as_ref() else {
            continue;
        };
        match running.make(scratch, cgroup, fds) {
            Ok(pidfd) => return Ok(pidfd),
            // A factory that ended (killed, or its socket broke) is
            // started again once.
            Err(error)
                if matches!(
                    error.kind(),
                    io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset
                ) =>
            {
                *factory = None;
            }
            Err(error) => return Err(error),
        }
    }
    Err(io::Error::other("the launcher factory ended twice"))
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
    with_fd_3(&mut command, &write);
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
pub(super) fn with_fd_3(command: &mut std::process::Command, write: &OwnedFd) {
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

/// A launcher that has made its namespaces and the part of its root that
/// is the same for every run, and waits for a run, in its run's pids
/// cgroup when there is one. Its scratch folder holds `root` (where the
/// new root is built) and `home` (the run's `HOME` and `TMPDIR`).
#[derive(Debug)]
pub struct Launcher {
    process: Process,
    status: tokio::net::unix::pipe::Receiver,
    cgroup: Option<Cgroup>,
    scratch: tempfile::TempDir,
    /// [`mount_changes`] when the launcher was asked for.
    mounts: u64,
}

/// The server's mount table, watched ([`mount_changes`]).
struct MountWatch {
    mounts: Option<OwnedFd>,
    changes: u64,
}

static MOUNTS: Mutex<MountWatch> = Mutex::new(MountWatch {
    mounts: None,
    changes: 0,
});

/// How many times the server's mount table has changed, as far as it has
/// looked. A launcher holds the host's tree as it was when it was made
/// ([`host`]): one made before a change is not used for a run, which
/// would see a folder mounted since as the folder it covers, or one
/// unmounted since as it was. The kernel marks `/proc/self/mounts` on
/// each change, and a `poll` that sees the mark clears it.
fn mount_changes() -> u64 {
    use rustix::event::{PollFd, PollFlags, Timespec};
    let Ok(mut watch) = MOUNTS.lock() else {
        return u64::MAX;
    };
    let Some(mounts) = &watch.mounts else {
        // The first look: changes are counted from now.
        watch.mounts = fs_err::File::open("/proc/self/mounts")
            .ok()
            .map(OwnedFd::from);
        return watch.changes;
    };
    let mut fds = [PollFd::new(mounts, PollFlags::PRI)];
    let now = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    if rustix::event::poll(&mut fds, Some(&now)).is_ok()
        && fds[0].revents().intersects(PollFlags::PRI | PollFlags::ERR)
    {
        watch.changes += 1;
    }
    watch.changes
}

/// Launchers made ahead, ready for a run.
static SPARES: Mutex<Vec<Launcher>> = Mutex::new(Vec::new());

/// How many launchers are being made for [`SPARES`].
static MAKING: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// How many launchers a server keeps ready: two, so that a run that
/// follows another at once still finds one ready while the next is made.
const SPARES_KEPT: usize = 2;

/// Whether launchers are made ahead ([`keep_spares`]).
static KEEP_SPARES: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Makes runs' launchers ahead, once a run's answer is written rather
/// than while one runs or answers: making one costs a few milliseconds of
/// processor, which a run on a machine of two cores would otherwise wait
/// for. Only for a program
/// with one tokio runtime for its whole life (the server): the launchers'
/// pipes belong to the runtime that made them.
pub fn keep_spares() {
    KEEP_SPARES.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Whether a run ended since the spares were last made: they are made
/// once its answer is on its way ([`answered`]).
static SPARES_OWED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Says that the server has written an answer to a client: the launchers
/// owed since a run ended are made now, not while the run's answer is
/// still being written (on two cores, making one takes the processor the
/// answer needs). A run that comes before they are ready takes the other
/// spare, or makes its own.
pub fn answered() {
    if SPARES_OWED.swap(false, std::sync::atomic::Ordering::Relaxed) {
        Launcher::make_spares();
    }
}

/// Whether the server has stopped ([`clean_up`]): no launcher is made or
/// kept after that.
static CLOSED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Ends the launchers made ahead, and removes their scratch folders and
/// cgroups: for a server that stops. A launcher still being made is ended
/// and removed as soon as it is ready, never kept (the runtime waits for
/// it before the process ends).
pub fn clean_up() {
    CLOSED.store(true, std::sync::atomic::Ordering::SeqCst);
    let spares = SPARES
        .lock()
        .map(|mut spares| std::mem::take(&mut *spares))
        .unwrap_or_default();
    drop(spares);
    let kept = KEPT
        .lock()
        .map(|mut kept| std::mem::take(&mut *kept))
        .unwrap_or_default();
    drop(kept);
}

/// Scratch folders and cgroups of runs that are over, made new for later
/// launchers ([`Kept::keep`]). Making a launcher's three folders and
/// removing them after its run was most of what a server did per run,
/// measured (docs/runtime-sandbox.md, "Cost"): on ext4 each `mkdir`
/// searches past the inodes freed lately, and each removal may wait for
/// the disk to discard a block.
#[derive(Debug, Default)]
struct Kept {
    scratches: Vec<tempfile::TempDir>,
    cgroups: Vec<Cgroup>,
}

/// What [`Kept`] holds. Never more than a server's spares and the runs
/// that can end while they are made.
static KEPT: Mutex<Kept> = Mutex::new(Kept {
    scratches: Vec::new(),
    cgroups: Vec::new(),
});

/// How many of each [`KEPT`] holds at most.
const KEPT_AT_MOST: usize = SPARES_KEPT + 2;

impl Kept {
    /// A kept scratch folder and a kept cgroup, each when there is one.
    fn take() -> (Option<tempfile::TempDir>, Option<Cgroup>) {
        KEPT.lock().map_or((None, None), |mut kept| {
            (kept.scratches.pop(), kept.cgroups.pop())
        })
    }

    /// Once a run's launcher has ended, so that no process of the run is
    /// left: its scratch folder, with a new empty `home`, and its cgroup,
    /// when empty, are kept for a later launcher. What cannot be made as
    /// new, or is not wanted, is removed.
    fn keep(scratch: tempfile::TempDir, cgroup: Option<Cgroup>) {
        let scratch = renewed(scratch);
        let cgroup = cgroup.filter(Cgroup::is_empty);
        // Dropped after the lock, which removes them.
        let mut unwanted = (None, None);
        match KEPT.lock() {
            // `clean_up` sets CLOSED before it empties KEPT under this
            // lock: what comes after is removed here.
            Ok(mut kept) if !CLOSED.load(std::sync::atomic::Ordering::SeqCst) => {
                match scratch {
                    Some(scratch) if kept.scratches.len() < KEPT_AT_MOST => {
                        kept.scratches.push(scratch);
                    }
                    other => unwanted.0 = other,
                }
                match cgroup {
                    Some(cgroup) if kept.cgroups.len() < KEPT_AT_MOST => kept.cgroups.push(cgroup),
                    other => unwanted.1 = other,
                }
            }
            _ => unwanted = (scratch, cgroup),
        }
        drop(unwanted);
    }
}

/// `scratch` as a new launcher's: an empty `home` made anew (the run's
/// files go, and so does whatever it set on the folder itself: its mode,
/// its extended attributes, so that nothing passes from one run to the
/// next), nothing but `home` and `root`, and `root` empty (it was the new
/// root's mount point only inside the launcher's mount namespace). `None`
/// (and `scratch` removed) when it cannot be made so.
fn renewed(scratch: tempfile::TempDir) -> Option<tempfile::TempDir> {
    let path = scratch.path();
    let home = path.join("home");
    let made_anew = fs_err::remove_dir_all(&home).and_then(|()| fs_err::create_dir(&home));
    // Anything else (the run's proxy socket) goes; links are removed, not
    // followed.
    let others_gone = fs_err::read_dir(path).is_ok_and(|entries| {
        entries.flatten().all(|entry| {
            let name = entry.file_name();
            name == "home"
                || name == "root"
                || entry.file_type().is_ok_and(|kind| !kind.is_dir())
                    && fs_err::remove_file(entry.path()).is_ok()
        })
    });
    let root = path.join("root");
    let root_empty = fs_err::symlink_metadata(&root).is_ok_and(|meta| meta.is_dir())
        && fs_err::read_dir(&root).is_ok_and(|mut entries| entries.next().is_none());
    (made_anew.is_ok() && others_gone && root_empty).then_some(scratch)
}

impl Launcher {
    /// The launcher for the next run: one made ahead, or a new one.
    pub fn take() -> Result<Self, String> {
        let mounts = mount_changes();
        let (spare, stale) = SPARES.lock().map_or((None, Vec::new()), |mut spares| {
            let stale = spares.extract_if(.., |spare| spare.mounts != mounts);
            let stale: Vec<Launcher> = stale.collect();
            (spares.pop(), stale)
        });
        // Ended, and their folders removed, off this thread.
        if !stale.is_empty() {
            tokio::task::spawn_blocking(move || drop(stale));
        }
        match spare {
            Some(launcher) => Ok(launcher),
            None => {
                // The first run, or runs faster than launchers are made:
                // this one waits for its own, and the spares are made.
                Self::make_spares();
                Self::start_new().map_err(|error| format!("cannot start the run launcher: {error}"))
            }
        }
    }

    /// Makes launchers in the background until [`SPARES_KEPT`] are ready
    /// or being made, when the program keeps spares.
    fn make_spares() {
        use std::sync::atomic::Ordering;
        if !KEEP_SPARES.load(Ordering::Relaxed) || CLOSED.load(Ordering::SeqCst) {
            return;
        }
        let ready = SPARES.lock().map_or(SPARES_KEPT, |spares| spares.len());
        let making = MAKING.load(Ordering::Relaxed);
        for _ in ready + making..SPARES_KEPT {
            MAKING.fetch_add(1, Ordering::Relaxed);
            tokio::task::spawn_blocking(|| {
                if let Ok(next) = Self::start_new() {
                    // Kept only while the server serves: `clean_up` sets
                    // CLOSED before it takes the spares under this lock,
                    // so a launcher is either taken by it or ended here.
                    let unwanted = match SPARES.lock() {
                        Ok(mut spares)
                            if !CLOSED.load(Ordering::SeqCst) && spares.len() < SPARES_KEPT =>
                        {
                            spares.push(next);
                            None
                        }
                        _ => Some(next),
                    };
                    drop(unwanted);
                }
                MAKING.fetch_sub(1, Ordering::Relaxed);
            });
        }
    }

    /// Starts a launcher; called on a thread of the tokio runtime that
    /// will read its pipes.
    fn start_new() -> io::Result<Self> {
        let mounts = mount_changes();
        let (kept_scratch, kept_cgroup) = Kept::take();
        let scratch = match kept_scratch {
            Some(scratch) => scratch,
            None => {
                let scratch = private_scratch()?;
                for dir in ["home", "root"] {
                    fs_err::create_dir(scratch.path().join(dir))?;
                }
                scratch
            }
        };
        // The launcher joins the run's pids cgroup first thing, before it
        // forks the script's process.
        let cgroup = kept_cgroup.or_else(Cgroup::make);
        let pipe = || rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC);
        let (stdin_read, stdin_write) = pipe()?;
        let (stdout_read, stdout_write) = pipe()?;
        let (stderr_read, stderr_write) = pipe()?;
        let (status_read, status_write) = pipe()?;
        let pidfd = from_factory(
            scratch.path(),
            cgroup.as_ref().map(Cgroup::path),
            [&stdin_read, &stdout_write, &stderr_write, &status_write],
        )?;
        drop((stdin_read, stdout_write, stderr_write, status_write));
        use tokio::net::unix::pipe::{Receiver, Sender};
        Ok(Self {
            process: Process {
                pidfd,
                stdin: Some(Sender::from_owned_fd(stdin_write)?),
                stdout: Some(Receiver::from_owned_fd(stdout_read)?),
                stderr: Some(Receiver::from_owned_fd(stderr_read)?),
            },
            status: Receiver::from_owned_fd(status_read)?,
            cgroup,
            scratch,
            mounts,
        })
    }

    /// The run's private folder, made new for a later run once this one
    /// is over ([`Kept`]).
    pub fn scratch(&self) -> &std::path::Path {
        self.scratch.path()
    }

    /// The run's `HOME` and `TMPDIR`, writable.
    pub fn home(&self) -> std::path::PathBuf {
        self.scratch.path().join("home")
    }

    /// Where the run's new root is built: [`Spec::root`].
    pub fn root(&self) -> std::path::PathBuf {
        self.scratch.path().join("root")
    }

    /// Starts the run `spec` and writes `stdin` after the spec. The
    /// launcher's stdout and stderr are the script's; [`Run::ended`] says
    /// how the run went.
    pub fn start(self, spec: &Spec, stdin: Option<Vec<u8>>) -> Result<(Process, Run), String> {
        let Self {
            mut process,
            status,
            cgroup,
            scratch,
            ..
        } = self;
        let mut bytes = spec::framed(spec)?;
        if let Some(stdin) = stdin {
            bytes.extend(stdin);
        }
        let Some(mut pipe) = process.stdin.take() else {
            return Err("the run launcher has no stdin".into());
        };
        // A launcher that failed early closed its stdin: its status says
        // why. A script that does not read its input closes the pipe
        // early; that is its business, not an error. The spec fits in the
        // empty pipe, so it is written now, not by a task another thread
        // would have to wake up for; only input beyond the pipe's room
        // waits for the script to read it.
        let written = match pipe.try_write(&bytes) {
            Ok(written) => written,
            Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => 0,
            Err(_) => bytes.len(),
        };
        if written < bytes.len() {
            tokio::spawn(async move {
                let _ = pipe.write_all(&bytes[written..]).await;
            });
        }
        Ok((
            process,
            Run {
                status: tokio::io::BufReader::new(status),
                started: false,
                cgroup,
                scratch,
            },
        ))
    }
}

/// A run handed to its launcher.
#[derive(Debug)]
pub struct Run {
    status: tokio::io::BufReader<tokio::net::unix::pipe::Receiver>,
    /// Whether the launcher said `started`.
    started: bool,
    cgroup: Option<Cgroup>,
    scratch: tempfile::TempDir,
}

impl Run {
    /// How the script ended, as the launcher saw it when it reaped the
    /// script: before the launcher and the run's namespaces are gone, which
    /// takes the kernel a while. `Ok(None)` when the launcher died without
    /// saying (killed at a timeout, or by anything else); `Err` when the
    /// script could not be started, and why.
    pub async fn ended(&mut self) -> Result<Option<std::process::ExitStatus>, String> {
        use std::os::unix::process::ExitStatusExt as _;
        use tokio::io::AsyncBufReadExt as _;
        let mut line = String::new();
        loop {
            line.clear();
            match self.status.read_line(&mut line).await {
                Ok(0) | Err(_) if self.started => return Ok(None),
                Ok(0) | Err(_) => {
                    return Err("the run launcher ended before the script started".into());
                }
                Ok(_) => {}
            }
            let line = line.trim_end();
            if line == "started" {
                self.started = true;
                continue;
            }
            let Some((what, rest)) = line.split_once(' ') else {
                continue;
            };
            match (what, rest.parse::<i32>()) {
                ("error", _) => return Err(rest.to_owned()),
                ("exited", Ok(code)) => {
                    return Ok(Some(std::process::ExitStatus::from_raw((code & 0xff) << 8)));
                }
                ("signal", Ok(signal)) => {
                    return Ok(Some(std::process::ExitStatus::from_raw(signal & 0x7f)));
                }
                _ => {}
            }
        }
    }

    /// Reaps the launcher, then renews the run's scratch folder and keeps
    /// it and the cgroup for a later launcher ([`Kept::keep`]), in the
    /// background: the run's result does not wait for the kernel to take
    /// its namespaces down.
    /// The next runs' launchers are made once the run's answer is written
    /// ([`answered`]).
    pub fn finish(self, launcher: Process) {
        let Self {
            cgroup, scratch, ..
        } = self;
        SPARES_OWED.store(true, std::sync::atomic::Ordering::Relaxed);
        tokio::spawn(async move {
            launcher.ended().await;
            let _ = tokio::task::spawn_blocking(move || Kept::keep(scratch, cgroup)).await;
        });
    }
}

/// A run's launcher, made by the factory: not the server's child, so it is
/// followed and killed through its pidfd, which can never name another
/// process. Killed when dropped.
#[derive(Debug)]
pub struct Process {
    pidfd: OwnedFd,
    /// Where the spec, then the script's input, go.
    pub stdin: Option<tokio::net::unix::pipe::Sender>,
    /// The script's output.
    pub stdout: Option<tokio::net::unix::pipe::Receiver>,
    pub stderr: Option<tokio::net::unix::pipe::Receiver>,
}

impl Process {
    /// Kills the launcher, and with it the script and every process of
    /// the run.
    pub fn kill(&self) {
        let _ = rustix::process::pidfd_send_signal(&self.pidfd, rustix::process::Signal::KILL);
    }

    /// Resolves when the launcher has ended (its pidfd becomes readable).
    pub async fn ended(&self) {
        let Ok(fd) = self.pidfd.try_clone() else {
            return;
        };
        // SAFETY: the registration owns the descriptor (an `OwnedFd`),
        // which stays open as long as it is registered.
        let watched = unsafe {
            tokio::io::unix::AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE)
        };
        if let Ok(watched) = watched {
            let _ = watched.readable().await;
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.kill();
    }
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
            leftovers::owner_tag(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        fs_err::create_dir(&path).ok()?;
        let limits = spec::RunLimits::default();
        // The launcher and its proxy relay's threads count too.
        fs_err::write(path.join("pids.max"), (limits.processes + 8).to_string()).ok()?;
        Some(Self(path))
    }

    pub fn path(&self) -> &std::path::Path {
        &self.0
    }

    /// Whether no process is left in the group.
    fn is_empty(&self) -> bool {
        fs_err::read_to_string(self.0.join("cgroup.procs"))
            .is_ok_and(|procs| procs.trim().is_empty())
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

#[cfg(test)]
mod tests {
    use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};

    use super::renewed;

    /// A scratch folder as a launcher has it: `home` and `root`.
    fn scratch() -> tempfile::TempDir {
        let scratch = tempfile::tempdir().unwrap();
        for dir in ["home", "root"] {
            fs_err::create_dir(scratch.path().join(dir)).unwrap();
        }
        scratch
    }

    #[test]
    fn a_renewed_scratch_has_a_new_empty_home_and_nothing_else() {
        let outside = tempfile::tempdir().unwrap();
        let kept = outside.path().join("kept");
        fs_err::write(&kept, "not the run's").unwrap();
        let scratch = scratch();
        let home = scratch.path().join("home");
        // What a run can set on the folder itself.
        fs_err::set_permissions(&home, std::fs::Permissions::from_mode(0o777)).unwrap();
        let xattr = rustix::fs::setxattr(
            &home,
            "user.left",
            b"by a run",
            rustix::fs::XattrFlags::empty(),
        );
        fs_err::create_dir_all(home.join(".cache/deep")).unwrap();
        fs_err::write(home.join(".cache/deep/file"), "left").unwrap();
        // A link out of the home is removed, never followed.
        std::os::unix::fs::symlink(outside.path(), home.join("out")).unwrap();
        fs_err::write(scratch.path().join("proxy.sock"), "").unwrap();

        let renewed = renewed(scratch).expect("renewed");
        let home = renewed.path().join("home");
        assert_eq!(fs_err::read_dir(&home).unwrap().count(), 0);
        assert_ne!(fs_err::metadata(&home).unwrap().mode() & 0o777, 0o777);
        if xattr.is_ok() {
            let mut value = [0_u8; 16];
            assert!(rustix::fs::getxattr(&home, "user.left", &mut value).is_err());
        }
        let mut names: Vec<_> = fs_err::read_dir(renewed.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        names.sort();
        assert_eq!(names, ["home", "root"]);
        assert_eq!(fs_err::read_to_string(&kept).unwrap(), "not the run's");
    }

    #[test]
    fn a_scratch_whose_root_is_not_an_empty_folder_is_not_used_again() {
        let holding = scratch();
        fs_err::write(holding.path().join("root/file"), "").unwrap();
        let path = holding.path().to_path_buf();
        assert!(renewed(holding).is_none());
        assert!(!path.exists(), "a scratch folder not used again is removed");

        let linked = scratch();
        fs_err::remove_dir(linked.path().join("root")).unwrap();
        std::os::unix::fs::symlink("/", linked.path().join("root")).unwrap();
        assert!(renewed(linked).is_none());
    }
}
