//! The launcher: the `skillpkg` binary started again (`/proc/self/exe`
//! with [`LAUNCHER_ARG`]) to build one run's sandbox and run the script in
//! it. It is single-threaded and runs nothing else, so it may do what a
//! multi-threaded server must not do after `fork`.
//!
//! 1. Ahead of the run, before the server knows it: the run's pids cgroup
//!    (when the server made one); new user, mount, network, IPC, UTS,
//!    cgroup and PID namespaces; the user mapped to itself; loopback up;
//!    the part of the root that is the same for every run (a tmpfs with
//!    the system folders, the run's home and `/dev`); the system paths
//!    opened for Landlock. Where the kernel allows ([`super::host`]), it
//!    clones the host's mount tree and enters the root now (`pivot_root`,
//!    and the old root left behind), so that no run waits for that.
//!    Then it forks the PID namespace's init, which
//!    forks the script's process and reaps. The script's process sets up
//!    every wall that does not depend on the run (its own session, no
//!    descriptor past stderr at `exec`, an empty capability bounding set,
//!    `no_new_privs`, the large seccomp filter), makes the Landlock
//!    ruleset of the system paths for a run of the default kind, and
//!    waits for its run on stdin. The launcher gives the run's pipes up,
//!    writes `ready` on the status pipe (fd 3) and waits for the init.
//! 2. The server sends the [`Spec`] on stdin (length, then JSON); whatever
//!    follows is the script's stdin. The script's process reads it.
//! 3. The script's process adds the run's own binds to the root
//!    (read-only unless granted), out of the clone of the host's tree, and
//!    closes the clone (the launcher holds it until the run is over).
//!    Where the root was not entered ahead, it binds from the host's tree
//!    itself and `pivot_root`s into the root then, leaving the host's tree
//!    behind; the launcher and the init, idle in the same mount
//!    namespace, move with it, and the process that calls `pivot_root`
//!    cannot be left behind.
//! 4. It clears its capabilities, installs the filter that refuses the
//!    mount calls, starts the proxy's relay when the run lists hosts, sets
//!    the limits, enters the working folder, applies the Landlock rules,
//!    writes `started` and `exec`s the script.
//! 5. When the script ends, the init writes how (`exited CODE` or `signal
//!    NUMBER`) and ends, and the kernel kills every process left in the
//!    namespace; the launcher ends with the init. Should nobody be left
//!    to read the status pipe first (the server is gone), the launcher
//!    kills the init, and the run ends.
//!
//! A failure before the script starts is one `error ...` line on the
//! status pipe and exit code 125.

use std::io::PipeWriter;
use std::io::Write as _;
use std::mem::ManuallyDrop;
use std::os::fd::{AsFd as _, FromRawFd as _, OwnedFd};
use std::os::unix::process::ExitStatusExt as _;
use std::path::Path;

use rustix::mount::{MountFlags, MountPropagationFlags, UnmountFlags};
use rustix::process::{Resource, Rlimit};
use rustix::thread::UnshareFlags;

use super::filter::Filters;
use super::spec::{Bind, Link, RunLimits, Spec, read_framed};

/// `argv[1]` that makes `skillpkg` a launcher.
pub const LAUNCHER_ARG: &str = "__skillpkg-run-launcher";

/// The descriptor of the status pipe.
pub const STATUS_FD: i32 = 3;

/// Exit code of a launcher that could not start the script.
pub const SETUP_FAILED: i32 = 125;

/// How a run ended.
enum Ended {
    Code(i32),
    Signal(i32),
}

/// Runs the launcher started as a program (`skillpkg` with
/// [`LAUNCHER_ARG`]: the probe's, with no root built ahead and no cgroup;
/// runs' launchers come from the factory); never returns.
pub fn main() -> ! {
    serve(None, None)
}

/// Runs the launcher with its stdin, stdout, stderr and status pipe (fd 3)
/// in place; never returns.
pub fn serve(scratch: Option<&Path>, cgroup: Option<&Path>) -> ! {
    // SAFETY: fd 3 is this process's status pipe; nothing else owns it.
    let mut status = PipeWriter::from(unsafe { OwnedFd::from_raw_fd(STATUS_FD) });
    let _ = rustix::io::fcntl_setfd(status.as_fd(), rustix::io::FdFlags::CLOEXEC);
    let ended = launch(&mut status, scratch, cgroup).unwrap_or_else(|message| {
        let line = message.replace('\n', " ");
        let _ = say(&mut status, &format!("error {line}"));
        Ended::Code(SETUP_FAILED)
    });
    drop(status);
    match ended {
        Ended::Code(code) => std::process::exit(code),
        Ended::Signal(signal) => {
            // SAFETY: plain libc calls on this process, single-threaded.
            unsafe {
                libc::signal(signal, libc::SIG_DFL);
                let mut set = std::mem::zeroed::<libc::sigset_t>();
                libc::sigemptyset(&mut set);
                libc::sigaddset(&mut set, signal);
                libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
                libc::kill(libc::getpid(), signal);
            }
            std::process::exit(128 + signal)
        }
    }
}

fn launch(
    status: &mut PipeWriter,
    scratch: Option<&Path>,
    cgroup: Option<&Path>,
) -> Result<Ended, String> {
    // The run's pids cgroup, made by the server: the launcher and every
    // process of the run are in it before the script's process is forked.
    if let Some(cgroup) = cgroup {
        let procs = cgroup.join("cgroup.procs");
        fs_err::write(&procs, std::process::id().to_string())
            .map_err(|error| format!("cannot join the run's cgroup: {error}"))?;
    }
    // Where the launcher's own stdio goes once the script's process holds
    // the run's: nowhere.
    let null = fs_err::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
        .map_err(|error| error.to_string())?;
    enter_namespaces()?;
    // Each is done once per process: by the factory, before it forked
    // this launcher, unless this one was started on its own.
    let filters = super::filter::compiled()?;
    crate::runtime::sandbox::warm_landlock();
    let made = scratch.map(prepare_root).transpose()?;
    // The launcher holds the host's tree cloned ahead until the run is
    // over: the last descriptor of such a tree to close takes its mounts
    // down, which makes the kernel wait as leaving a root does.
    let _host = made
        .as_ref()
        .and_then(|made| made.host.as_ref())
        .map(OwnedFd::try_clone)
        .transpose()
        .map_err(|error| format!("dup: {error}"))?;
    let init = fork_init(status, filters, made)?;
    // The run's pipes close when the script's processes are gone, not
    // when the launcher is; its stdin is the script's process's to read.
    for fd in [0, 1, 2] {
        // SAFETY: dup2 onto the standard descriptors of this process.
        unsafe { libc::dup2(std::os::fd::AsRawFd::as_raw_fd(&null), fd) };
    }
    drop(null);
    say(status, "ready")?;
    outlive_no_server(status, init)?;
    loop {
        let mut waited = 0;
        // SAFETY: waitpid with a valid pointer to a local.
        let pid = unsafe { libc::waitpid(init, &mut waited, libc::__WALL) };
        if pid < 0 {
            let error = std::io::Error::last_os_error();
            if error.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(format!("wait: {error}"));
        }
        // The init said how the script ended and exited with its code (a
        // signal as 128 + its number); an init killed (with the launcher,
        // or by the kernel) said nothing, so it is said here.
        let waited = std::process::ExitStatus::from_raw(waited);
        return Ok(match (waited.code(), waited.signal()) {
            (Some(code), _) => Ended::Code(code),
            (None, Some(signal)) => {
                let _ = say(status, &format!("signal {signal}"));
                Ended::Signal(signal)
            }
            (None, None) => Ended::Code(SETUP_FAILED),
        });
    }
}

/// Waits until the run's init ends, or until nobody can read the status
/// pipe: the server is gone, however it ended (a server killed with
/// `SIGKILL` closes its end too), or is done with this launcher. Then the
/// run goes with it: the init is killed, and every process of the run with
/// it. The launcher cannot use `PR_SET_PDEATHSIG` for that: its parent is
/// the factory, not the server, and a factory killed alone must not end
/// the runs it forked.
fn outlive_no_server(status: &PipeWriter, init: i32) -> Result<(), String> {
    use rustix::event::{PollFd, PollFlags};
    let pid = rustix::process::Pid::from_raw(init).ok_or("the init has no process id")?;
    let init_fd = rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty())
        .map_err(|error| format!("pidfd_open: {error}"))?;
    loop {
        // A pipe's writing end polls `POLLERR` once no reader is left.
        let mut fds = [
            PollFd::new(&init_fd, PollFlags::IN),
            PollFd::new(status, PollFlags::empty()),
        ];
        match rustix::event::poll(&mut fds, None) {
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => continue,
            Err(error) => return Err(format!("poll: {error}")),
        }
        if fds[0].revents().contains(PollFlags::IN) {
            return Ok(());
        }
        if fds[1].revents().intersects(PollFlags::ERR | PollFlags::HUP) {
            let _ = rustix::process::pidfd_send_signal(&init_fd, rustix::process::Signal::KILL);
            return Ok(());
        }
    }
}

/// Writes `line` on the status pipe in one `write`: the launcher, the
/// init and the script's process all write there, and a line written at
/// once (under `PIPE_BUF` bytes) is never cut by another's.
fn say(status: &mut PipeWriter, line: &str) -> Result<(), String> {
    let mut end = line.len().min(4000);
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    let line = format!("{}\n", &line[..end]);
    status
        .write_all(line.as_bytes())
        .map_err(|error| format!("status pipe: {error}"))
}

/// Forks the PID namespace's init, which forks the process that becomes
/// the script, and returns the init's process id. Everything that does not
/// depend on the run is done now, while no run is known; the rest when the
/// spec comes ([`run_script`]).
///
/// The script is not the init itself: when the init ends, the kernel
/// kills every process left in the namespace and waits for each before
/// anyone learns that the init ended, which a run would otherwise wait
/// for before its answer. The init says how the script ended first
/// ([`report`]), then ends, and the namespace goes down after.
fn fork_init(status: &PipeWriter, filters: &Filters, made: Option<Made>) -> Result<i32, String> {
    // SAFETY: the launcher is single-threaded, so the child may allocate.
    match unsafe { libc::fork() } {
        -1 => Err(format!("fork: {}", std::io::Error::last_os_error())),
        0 => {
            let Ok(mut status) = status.try_clone() else {
                // SAFETY: ends the child without running the launcher's exit.
                unsafe { libc::_exit(SETUP_FAILED) }
            };
            // SAFETY: the init is single-threaded, as the launcher was.
            match unsafe { libc::fork() } {
                -1 => {
                    let error = std::io::Error::last_os_error();
                    let _ = say(&mut status, &format!("error fork: {error}"));
                    // SAFETY: ends the child without running the launcher's exit.
                    unsafe { libc::_exit(SETUP_FAILED) }
                }
                0 => {
                    let why = run_script(&mut status, filters, made);
                    // Only reached when the script could not start.
                    let _ = say(&mut status, &format!("error {}", why.replace('\n', " ")));
                    // SAFETY: ends the child without running the launcher's exit.
                    unsafe { libc::_exit(SETUP_FAILED) }
                }
                script => {
                    // The init holds nothing of the host's.
                    drop(made);
                    report(script, &mut status)
                }
            }
        }
        init => Ok(init),
    }
}

/// The init's part: it holds nothing of the run's but the status pipe,
/// reaps every process left to it, and once the script's process has
/// ended says how (`exited CODE` or `signal NUMBER`) and exits with its
/// code (a signal as 128 + its number). It dies with the launcher.
fn report(script: i32, status: &mut PipeWriter) -> ! {
    let _ = rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL));
    // The run's output closes when the script's processes are done with
    // it, not when the init is; the init reads nothing.
    for fd in [0, 1, 2] {
        // SAFETY: closes a standard descriptor of this process, which
        // nothing here uses again.
        unsafe { libc::close(fd) };
    }
    loop {
        let mut waited = 0;
        // SAFETY: waitpid with a valid pointer to a local.
        let pid = unsafe { libc::waitpid(-1, &mut waited, libc::__WALL) };
        if pid < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            // SAFETY: ends the init without running the launcher's exit.
            unsafe { libc::_exit(SETUP_FAILED) }
        }
        if pid != script {
            continue;
        }
        let waited = std::process::ExitStatus::from_raw(waited);
        let (line, code) = match (waited.code(), waited.signal()) {
            (Some(code), _) => (format!("exited {code}"), code),
            (None, Some(signal)) => (format!("signal {signal}"), 128 + signal),
            (None, None) => (format!("exited {SETUP_FAILED}"), SETUP_FAILED),
        };
        let _ = say(status, &line);
        // SAFETY: ends the init without running the launcher's exit.
        unsafe { libc::_exit(code) }
    }
}

/// The script's side: the walls that do not depend on the run first, then,
/// once the spec comes on stdin, the run's root, the rest of its walls and
/// `exec`. Returns only on failure.
fn run_script(status: &mut PipeWriter, filters: &Filters, made: Option<Made>) -> String {
    let confined = confine(&filters.ahead);
    // The Landlock rules of the system paths, for a run of the default
    // kind (no network, no subprocess); another kind makes its own.
    let ahead =
        crate::runtime::sandbox::RulesAhead::make(&crate::runtime::sandbox::Network::Deny, false);
    let _ = read_framed(&mut super::plan::sample());
    // The run, from the server, without reading past it: the rest is the
    // script's input.
    // SAFETY: fd 0 stays open and owned by the process; not closed here.
    let mut stdin = ManuallyDrop::new(std::io::PipeReader::from(unsafe {
        OwnedFd::from_raw_fd(0)
    }));
    let spec = match read_framed(&mut *stdin) {
        Ok(Some(spec)) => spec,
        // The server went away (or the probe ended) without a run:
        // nothing to say.
        // SAFETY: ends the child without running the launcher's exit.
        Ok(None) => unsafe { libc::_exit(SETUP_FAILED) },
        Err(why) => return why,
    };
    if let Err(why) = confined {
        return why;
    }
    match start_script(spec, made, &filters.at_run, ahead, status) {
        Ok(never) => match never {},
        Err(why) => why,
    }
}

/// The run's root, the walls that depend on the run (no capability left,
/// no mount call, the limits, the working folder, Landlock from the rules
/// made `ahead`) and `exec`.
fn start_script(
    mut spec: Spec,
    made: Option<Made>,
    no_mounts: &seccompiler::BpfProgram,
    ahead: Option<crate::runtime::sandbox::RulesAhead>,
    status: &mut PipeWriter,
) -> Result<std::convert::Infallible, String> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt as _;
    build_root(&spec, made)?;
    // The process has built its root: it gives up every capability and
    // every mount call before anything of the run's executes.
    clear_capabilities()?;
    seccompiler::apply_filter(no_mounts).map_err(|error| format!("seccomp: {error}"))?;
    if let Some(socket) = spec.proxy.clone() {
        start_relay(&mut spec, &socket)?;
    }
    set_limits(spec.limits)?;
    rustix::process::chdir(&spec.workdir)
        .map_err(|error| format!("enter {}: {error}", spec.workdir.display()))?;
    if let Some(rules) = &spec.landlock {
        crate::runtime::sandbox::restrict_thread_from(ahead, &rules.policy, &rules.grants)?;
    }
    let c = |bytes: &[u8]| CString::new(bytes).map_err(|_| "a NUL byte in the command".to_owned());
    let program = c(spec.program.as_os_str().as_bytes())?;
    let mut argv = vec![program.clone()];
    for arg in &spec.args {
        argv.push(c(arg.as_bytes())?);
    }
    let envp = spec
        .env
        .iter()
        .map(|(key, value)| c(format!("{key}={value}").as_bytes()))
        .collect::<Result<Vec<_>, _>>()?;
    let mut argv_pointers: Vec<*const libc::c_char> = argv.iter().map(|arg| arg.as_ptr()).collect();
    argv_pointers.push(std::ptr::null());
    let mut envp_pointers: Vec<*const libc::c_char> = envp.iter().map(|var| var.as_ptr()).collect();
    envp_pointers.push(std::ptr::null());
    say(status, "started")?;
    // SAFETY: NUL-terminated strings and NULL-terminated arrays that live
    // until the call, which returns only on failure.
    unsafe {
        libc::execve(
            program.as_ptr(),
            argv_pointers.as_ptr(),
            envp_pointers.as_ptr(),
        )
    };
    Err(format!(
        "cannot start {}: {}",
        spec.program.display(),
        std::io::Error::last_os_error()
    ))
}

/// The way out to the listed hosts: a relay on the run's loopback to the
/// server's proxy at `socket`, and the proxy variables of `spec` pointing
/// at it. The relay is a process of the run's PID namespace forked twice,
/// so that the init, not the script, is its parent (a shell's `wait` does
/// not wait for it); it has the script's walls but for its limits and
/// Landlock, holds none of the run's pipes, and is killed with the
/// namespace when the script ends. The script never holds the listener.
fn start_relay(spec: &mut Spec, socket: &Path) -> Result<(), String> {
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0))
        .map_err(|error| format!("proxy relay: {error}"))?;
    let port = listener
        .local_addr()
        .map_err(|error| format!("proxy relay: {error}"))?
        .port();
    let url = format!("http://127.0.0.1:{port}");
    for name in [
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ] {
        spec.env.retain(|(key, _)| key != name);
        spec.env.push((name.to_owned(), url.clone()));
    }
    spec.env
        .retain(|(key, _)| key != "NO_PROXY" && key != "no_proxy");
    // SAFETY: this process is single-threaded; the children only fork,
    // close descriptors and relay.
    match unsafe { libc::fork() } {
        -1 => Err(format!("proxy relay: {}", std::io::Error::last_os_error())),
        0 => {
            // SAFETY: as above.
            if unsafe { libc::fork() } == 0 {
                for fd in [0, 1, 2] {
                    // SAFETY: closes a standard descriptor of this
                    // process, which the relay does not use.
                    unsafe { libc::close(fd) };
                }
                relay_to(&listener, socket);
            }
            // SAFETY: ends the child without running the launcher's exit.
            unsafe { libc::_exit(0) }
        }
        child => {
            drop(listener);
            let mut waited = 0;
            // SAFETY: waitpid with a valid pointer to a local.
            while unsafe { libc::waitpid(child, &mut waited, 0) } < 0
                && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted
            {
            }
            Ok(())
        }
    }
}

/// Relays each connection to `listener` to the proxy at `socket`.
fn relay_to(listener: &std::net::TcpListener, socket: &Path) {
    for stream in listener.incoming() {
        let Ok(inside) = stream else { continue };
        let socket = socket.to_path_buf();
        std::thread::spawn(move || {
            let Ok(outside) = std::os::unix::net::UnixStream::connect(&socket) else {
                return;
            };
            let (Ok(mut inside_reader), Ok(mut outside_writer)) =
                (inside.try_clone(), outside.try_clone())
            else {
                return;
            };
            let upward = std::thread::spawn(move || {
                let _ = std::io::copy(&mut inside_reader, &mut outside_writer);
                let _ = outside_writer.shutdown(std::net::Shutdown::Write);
            });
            let (mut outside_reader, mut inside_writer) = (outside, inside);
            let _ = std::io::copy(&mut outside_reader, &mut inside_writer);
            let _ = inside_writer.shutdown(std::net::Shutdown::Write);
            let _ = upward.join();
        });
    }
}

/// Unshares every namespace and maps the user to itself.
fn enter_namespaces() -> Result<(), String> {
    let uid = rustix::process::getuid().as_raw();
    let gid = rustix::process::getgid().as_raw();
    let flags = UnshareFlags::NEWUSER
        | UnshareFlags::NEWNS
        | UnshareFlags::NEWNET
        | UnshareFlags::NEWIPC
        | UnshareFlags::NEWUTS
        | UnshareFlags::NEWCGROUP
        | UnshareFlags::NEWPID;
    // SAFETY: no FILES flag; the process is single-threaded.
    unsafe { rustix::thread::unshare_unsafe(flags) }.map_err(|error| {
        format!(
            "cannot create the run's namespaces (unshare: {error}): this kernel or container does not allow unprivileged user namespaces"
        )
    })?;
    write_proc("/proc/self/setgroups", "deny")?;
    write_proc("/proc/self/uid_map", &format!("{uid} {uid} 1"))?;
    write_proc("/proc/self/gid_map", &format!("{gid} {gid} 1"))?;
    let _ = rustix::system::sethostname(b"skillpkg");
    loopback_up()
}

fn write_proc(path: &str, contents: &str) -> Result<(), String> {
    fs_err::write(path, contents).map_err(|error| format!("cannot write {path}: {error}"))
}

/// Brings `lo` up in the new network namespace: the only interface there.
fn loopback_up() -> Result<(), String> {
    // SAFETY: a socket and an ioctl on a zeroed, NUL-terminated ifreq.
    unsafe {
        let socket = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if socket < 0 {
            return Err(format!(
                "loopback: socket: {}",
                std::io::Error::last_os_error()
            ));
        }
        let mut request = std::mem::zeroed::<libc::ifreq>();
        for (slot, byte) in request.ifr_name.iter_mut().zip(b"lo\0") {
            *slot = *byte as libc::c_char;
        }
        request.ifr_ifru.ifru_flags = (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
        let result = libc::ioctl(socket, libc::SIOCSIFFLAGS, &request);
        let error = std::io::Error::last_os_error();
        libc::close(socket);
        if result < 0 {
            return Err(format!("loopback: {error}"));
        }
    }
    Ok(())
}

/// What a launcher built of the root before its run was known.
struct Made {
    root: std::path::PathBuf,
    binds: Vec<Bind>,
    links: Vec<Link>,
    devices: Vec<std::path::PathBuf>,
    /// The host's tree, cloned before the launcher entered `root`: where
    /// the run's own folders are bound from ([`super::host`]). `None`
    /// when the root is entered at the run instead.
    host: Option<OwnedFd>,
}

/// Builds, while no run is known, the part of the root that is the same
/// for every run: a tmpfs at `scratch/root` holding the system folders
/// ([`super::plan::system`]), the run's home (`scratch/home`, writable)
/// and `/dev`.
fn prepare_root(scratch: &Path) -> Result<Made, String> {
    make_private()?;
    let root = scratch.join("root");
    mount_tmpfs(&root)?;
    let system = super::plan::system();
    for link in &system.links {
        make_link(&root, link)?;
    }
    let binds = super::plan::ordered(
        system
            .binds
            .iter()
            .cloned()
            .chain([super::plan::identity(&scratch.join("home"), true)])
            .collect(),
    );
    for bind in &binds {
        mount_bind(&root, bind, None)?;
    }
    make_dev(&root, &system.devices, None)?;
    // Entered now, while no run waits for the old root to be left.
    let host = if super::host::clones_bind() {
        let host = super::host::clone()
            .map_err(|error| format!("clone the host's mount tree: {error}"))?;
        enter(&root)?;
        Some(host)
    } else {
        None
    };
    Ok(Made {
        root,
        binds,
        links: system.links.clone(),
        devices: system.devices.clone(),
        host,
    })
}

/// Builds the new root and moves into it: what `made` holds already is
/// kept where the spec asks for it too, the rest is made now. A root
/// entered ahead is built where the process stands, from the host's tree
/// cloned before.
fn build_root(spec: &Spec, made: Option<Made>) -> Result<(), String> {
    let made = match made.filter(|made| made.root == spec.root) {
        Some(made) => made,
        None => {
            make_private()?;
            mount_tmpfs(&spec.root)?;
            Made {
                root: spec.root.clone(),
                binds: Vec::new(),
                links: Vec::new(),
                devices: Vec::new(),
                host: None,
            }
        }
    };
    let entered = made.host.is_some();
    let host = made.host.as_ref();
    let root = if entered {
        Path::new("/")
    } else {
        spec.root.as_path()
    };
    let (to_unmount, to_mount) = binds_to_make(&made.binds, &spec.binds);
    for bind in to_unmount {
        unmount(&inside(root, &bind.target))?;
    }
    for link in made.links.iter().filter(|link| !spec.links.contains(link)) {
        let at = inside(root, &link.path);
        fs_err::remove_file(&at).map_err(|error| format!("remove {}: {error}", at.display()))?;
    }
    if made.devices != spec.devices && !made.devices.is_empty() {
        unmount(&inside(root, Path::new("/dev")))?;
    }
    // The run's `/dev` first, so that it covers none of the run's own
    // folders: a project on a RAM disk (`/dev/shm/...`) is bound inside it.
    if made.devices != spec.devices && !spec.devices.is_empty() {
        make_dev(root, &spec.devices, host)?;
    }
    // That `/dev` is read-only: it is opened only while the mount points
    // of such folders are made in it (the binds are mounts of their own).
    let in_dev = |path: &Path| path.starts_with("/dev");
    let dev_opened = !spec.devices.is_empty()
        && (spec.dirs.iter().any(|dir| in_dev(dir))
            || to_mount.iter().any(|bind| in_dev(&bind.target)));
    if dev_opened {
        remount_dev(root, false)?;
    }
    for dir in &spec.dirs {
        make_dir(&inside(root, dir))?;
    }
    for link in spec.links.iter().filter(|link| !made.links.contains(link)) {
        make_link(root, link)?;
    }
    for bind in to_mount {
        mount_bind(root, bind, host)?;
    }
    if dev_opened {
        remount_dev(root, true)?;
    }
    // The launcher keeps its own descriptor of the clone, so closing this
    // one ends nothing, and no process the script's forks holds it.
    drop(made);
    if !entered {
        enter(root)?;
    }
    let failed = |what: &str, path: &Path, error: rustix::io::Errno| {
        format!("{what} {}: {error}", path.display())
    };
    // Nothing more is created in the root itself.
    rustix::mount::mount_remount(
        "/",
        MountFlags::BIND | MountFlags::RDONLY | MountFlags::NOSUID | MountFlags::NODEV,
        "",
    )
    .map_err(|error| failed("make read-only", Path::new("/"), error))?;
    rustix::process::chdir("/").map_err(|error| failed("enter", Path::new("/"), error))?;
    Ok(())
}

/// Moves into `root` and leaves the old root behind; the processes of
/// the mount namespace that stand in the old root (the launcher and the
/// init, for a root entered at the run) move too.
fn enter(root: &Path) -> Result<(), String> {
    let failed = |what: &str, path: &Path, error: rustix::io::Errno| {
        format!("{what} {}: {error}", path.display())
    };
    make_dir(&root.join(".old-root"))?;
    rustix::process::chdir(root).map_err(|error| failed("enter", root, error))?;
    rustix::process::pivot_root(".", ".old-root")
        .map_err(|error| failed("pivot to", root, error))?;
    rustix::mount::unmount("/.old-root", UnmountFlags::DETACH)
        .map_err(|error| failed("leave", Path::new("/.old-root"), error))?;
    let _ = fs_err::remove_dir("/.old-root");
    rustix::process::chdir("/").map_err(|error| failed("enter", Path::new("/"), error))
}

/// Of the binds `made` ahead, those the run's `wanted` binds (parents
/// first) do not hold, to unmount; and the binds to make now, in order.
/// A bind made ahead stays unless one made now covers it; then it is made
/// again on top.
fn binds_to_make<'a>(made: &'a [Bind], wanted: &'a [Bind]) -> (Vec<&'a Bind>, Vec<&'a Bind>) {
    let unmount = made.iter().filter(|bind| !wanted.contains(bind)).collect();
    let mut mount: Vec<&Bind> = Vec::new();
    for bind in wanted {
        let covered = mount.iter().any(|now| bind.target.starts_with(&now.target));
        if !made.contains(bind) || covered {
            mount.push(bind);
        }
    }
    (unmount, mount)
}

/// `path` of the run, in the root being built at `root`.
fn inside(root: &Path, path: &Path) -> std::path::PathBuf {
    root.join(path.strip_prefix("/").unwrap_or(path))
}

/// Mounts made from here on stay in the launcher's mount namespace.
fn make_private() -> Result<(), String> {
    rustix::mount::mount_change(
        "/",
        MountPropagationFlags::REC | MountPropagationFlags::PRIVATE,
    )
    .map_err(|error| format!("make private /: {error}"))
}

fn mount_tmpfs(root: &Path) -> Result<(), String> {
    rustix::mount::mount(
        "tmpfs",
        root,
        "tmpfs",
        MountFlags::NOSUID | MountFlags::NODEV,
        c"mode=0755,size=4m",
    )
    .map_err(|error| format!("mount a tmpfs on {}: {error}", root.display()))
}

fn unmount(target: &Path) -> Result<(), String> {
    rustix::mount::unmount(target, UnmountFlags::DETACH)
        .map_err(|error| format!("unmount {}: {error}", target.display()))
}

fn make_link(root: &Path, link: &Link) -> Result<(), String> {
    let at = inside(root, &link.path);
    if let Some(parent) = at.parent() {
        make_dir(parent)?;
    }
    std::os::unix::fs::symlink(&link.to, &at)
        .map_err(|error| format!("link {}: {error}", link.path.display()))
}

fn mount_bind(root: &Path, bind: &Bind, host: Option<&OwnedFd>) -> Result<(), String> {
    bind_mount(
        &bind.source,
        &inside(root, &bind.target),
        bind.writable,
        host,
    )
}

/// A fresh, read-only `/dev` holding `devices`, bound from the host (its
/// tree cloned as `host`, when there is one).
fn make_dev(
    root: &Path,
    devices: &[std::path::PathBuf],
    host: Option<&OwnedFd>,
) -> Result<(), String> {
    let failed = |what: &str, path: &Path, error: rustix::io::Errno| {
        format!("{what} {}: {error}", path.display())
    };
    let dev = inside(root, Path::new("/dev"));
    make_dir(&dev)?;
    rustix::mount::mount(
        "tmpfs",
        &dev,
        "tmpfs",
        MountFlags::NOSUID | MountFlags::NOEXEC,
        c"mode=0755,size=64k",
    )
    .map_err(|error| failed("mount a tmpfs on", &dev, error))?;
    for device in devices {
        let target = inside(root, device);
        make_mount_point(&target, false)?;
        super::host::open(host, device)
            .and_then(|opened| super::host::attach(&opened, &target, host.is_some()))
            .map_err(|error| failed("bind", device, error))?;
    }
    // Nothing more is made in `/dev`; the devices keep their own mounts.
    remount_dev(root, true)
}

/// Makes the run's `/dev` (a tmpfs) read-only, or writable again.
fn remount_dev(root: &Path, read_only: bool) -> Result<(), String> {
    let dev = inside(root, Path::new("/dev"));
    let mut flags = MountFlags::NOSUID | MountFlags::NOEXEC;
    if read_only {
        flags |= MountFlags::RDONLY;
    }
    rustix::mount::mount_remount(&dev, flags, "mode=0755,size=64k").map_err(|error| {
        let what = if read_only { "make read-only" } else { "open" };
        format!("{what} {}: {error}", dev.display())
    })
}

fn make_dir(path: &Path) -> Result<(), String> {
    fs_err::create_dir_all(path).map_err(|error| format!("make {}: {error}", path.display()))
}

/// Makes an empty folder or file at `target` to mount on, unless
/// something is there already (a folder bound earlier holds it).
fn make_mount_point(target: &Path, is_dir: bool) -> Result<(), String> {
    if fs_err::symlink_metadata(target).is_ok() {
        return Ok(());
    }
    if is_dir {
        return make_dir(target);
    }
    if let Some(parent) = target.parent() {
        make_dir(parent)?;
    }
    fs_err::File::create(target)
        .map(drop)
        .map_err(|error| format!("make {}: {error}", target.display()))
}

/// Binds `source` on `target` (made first, as a folder or a file like
/// the source), read-only unless `writable`, never with set-user-id
/// programs or devices. A read-only remount must keep the flags the
/// source's mount locks (`noexec`, `nosuid`, `nodev`), or a user namespace
/// may not change it.
///
/// The source is opened without following any link on its way (in the
/// host's tree cloned as `host`, when there is one), and looked at and
/// bound through that descriptor ([`super::host::open`]).
fn bind_mount(
    source: &Path,
    target: &Path,
    writable: bool,
    host: Option<&OwnedFd>,
) -> Result<(), String> {
    let opened = super::host::open(host, source).map_err(|error| match error {
        rustix::io::Errno::LOOP => format!(
            "{} is a link now; it was not when the run was planned",
            source.display()
        ),
        error => format!("open {}: {error}", source.display()),
    })?;
    let is_dir = rustix::fs::fstat(&opened)
        .map(|stat| rustix::fs::FileType::from_raw_mode(stat.st_mode).is_dir())
        .map_err(|error| format!("{}: {error}", source.display()))?;
    make_mount_point(target, is_dir)?;
    super::host::attach(&opened, target, host.is_some())
        .map_err(|error| format!("bind {}: {error}", source.display()))?;
    let mut flags = MountFlags::BIND | MountFlags::NOSUID | MountFlags::NODEV;
    if !writable {
        flags |= MountFlags::RDONLY;
    }
    if let Ok(stat) = rustix::fs::fstatvfs(&opened) {
        let locked = stat.f_flag;
        if locked.contains(rustix::fs::StatVfsMountFlags::NOEXEC) {
            flags |= MountFlags::NOEXEC;
        }
        if locked.contains(rustix::fs::StatVfsMountFlags::NOATIME) {
            flags |= MountFlags::NOATIME;
        }
        if locked.contains(rustix::fs::StatVfsMountFlags::NODIRATIME) {
            flags |= MountFlags::NODIRATIME;
        }
        if locked.contains(rustix::fs::StatVfsMountFlags::RELATIME) {
            flags |= MountFlags::RELATIME;
        }
        if writable && locked.contains(rustix::fs::StatVfsMountFlags::RDONLY) {
            flags |= MountFlags::RDONLY;
        }
    }
    drop(opened);
    rustix::mount::mount_remount(target, flags, "")
        .map_err(|error| format!("remount {}: {error}", target.display()))
}

/// The walls every run gets, raised in the script's process before its
/// run is known: it dies with the launcher, has a session of its own and
/// no descriptor past stderr at `exec`, an empty capability bounding set
/// and secure bits that grant none at `exec`, `no_new_privs`, and the
/// seccomp filters `ahead` (all but the one refusing the mount calls,
/// which the process needs to build the run's root). Its capabilities in
/// the run's user namespace it keeps until the root is built
/// ([`clear_capabilities`]).
fn confine(ahead: &[seccompiler::BpfProgram]) -> Result<(), String> {
    rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))
        .map_err(|error| format!("parent death signal: {error}"))?;
    // (Should the launcher have ended before that, the server, which
    // follows it, closes the run's stdin, and the process ends without a
    // run.)
    rustix::process::chdir("/").map_err(|error| format!("enter /: {error}"))?;
    rustix::process::setsid().map_err(|error| format!("setsid: {error}"))?;
    // Nothing the server inherited from whoever started it, nor anything
    // of the launcher's, reaches the script: every descriptor past stderr
    // closes at `exec`.
    // SAFETY: close_range with integer arguments.
    let closed = unsafe {
        libc::syscall(
            libc::SYS_close_range,
            3u32,
            u32::MAX,
            libc::CLOSE_RANGE_CLOEXEC,
        )
    };
    if closed < 0 {
        return Err(format!("close_range: {}", std::io::Error::last_os_error()));
    }
    bound_capabilities()?;
    rustix::thread::set_no_new_privs(true).map_err(|error| format!("no_new_privs: {error}"))?;
    for filter in ahead {
        seccompiler::apply_filter(filter).map_err(|error| format!("seccomp: {error}"))?;
    }
    Ok(())
}

/// The run's resource limits, each a hard limit.
fn set_limits(limits: RunLimits) -> Result<(), String> {
    for (resource, value) in [
        (Resource::Nproc, limits.processes),
        (Resource::Data, limits.memory),
        (Resource::Cpu, limits.cpu_seconds),
        (Resource::Fsize, limits.file_size),
        (Resource::Nofile, limits.open_files),
        (Resource::Core, 0),
    ] {
        rustix::process::setrlimit(
            resource,
            Rlimit {
                current: Some(value),
                maximum: Some(value),
            },
        )
        .map_err(|error| format!("setrlimit {resource:?}: {error}"))?;
    }
    Ok(())
}

/// Empties the capability bounding set and locks the secure bits so
/// that no `exec` grants a capability (root inside gains none), while the
/// process keeps the capabilities it has until [`clear_capabilities`].
fn bound_capabilities() -> Result<(), String> {
    for capability in 0..=63 {
        // SAFETY: prctl with integer arguments.
        let result = unsafe { libc::prctl(libc::PR_CAPBSET_DROP, capability, 0, 0, 0) };
        if result < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINVAL) {
            break;
        }
    }
    use rustix::thread::CapabilitiesSecureBits as Bits;
    rustix::thread::set_capabilities_secure_bits(
        Bits::NO_ROOT
            | Bits::NO_ROOT_LOCKED
            | Bits::NO_SETUID_FIXUP
            | Bits::NO_SETUID_FIXUP_LOCKED
            | Bits::NO_CAP_AMBIENT_RAISE
            | Bits::NO_CAP_AMBIENT_RAISE_LOCKED,
    )
    .map_err(|error| format!("securebits: {error}"))
}

/// Gives up every capability the user namespace gave, for good: with the
/// bounding set empty ([`bound_capabilities`]), none can come back.
fn clear_capabilities() -> Result<(), String> {
    let none = rustix::thread::CapabilitySet::empty();
    rustix::thread::set_capabilities(
        None,
        rustix::thread::CapabilitySets {
            effective: none,
            permitted: none,
            inheritable: none,
        },
    )
    .map_err(|error| format!("capset: {error}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bind(target: &str, writable: bool) -> Bind {
        super::super::plan::identity(Path::new(target), writable)
    }

    #[test]
    fn only_what_was_not_made_ahead_is_bound_and_what_covers_a_made_bind_binds_it_again() {
        let made = vec![
            bind("/etc/hosts", false),
            bind("/usr", false),
            bind("/tmp/run/home", true),
        ];
        // The usual run: the system part and the home were made ahead.
        let wanted = vec![
            bind("/usr", false),
            bind("/etc/hosts", false),
            bind("/p", false),
            bind("/tmp/run/home", true),
        ];
        let (unmount, mount) = binds_to_make(&made, &wanted);
        assert!(unmount.is_empty());
        assert_eq!(mount, vec![&bind("/p", false)]);

        // A grant over a folder holding a made bind is bound now, and the
        // made bind again on top of it; a made bind the run does not list
        // goes.
        let wanted = vec![
            bind("/tmp", true),
            bind("/usr", false),
            bind("/tmp/run/home", true),
        ];
        let (unmount, mount) = binds_to_make(&made, &wanted);
        assert_eq!(unmount, vec![&bind("/etc/hosts", false)]);
        assert_eq!(
            mount,
            vec![&bind("/tmp", true), &bind("/tmp/run/home", true)]
        );
    }
}
