//! The launcher: the `skillpkg` binary started again (`/proc/self/exe`
//! with [`LAUNCHER_ARG`]) to build one run's sandbox and run the script in
//! it. It is single-threaded and runs nothing else, so it may do what a
//! multi-threaded server must not do after `fork`.
//!
//! 1. Ahead of the run: new user, mount, network, IPC, UTS, cgroup and PID
//!    namespaces; the user mapped to itself; loopback up. Then it writes
//!    `ready` on the status pipe (fd 3) and waits.
//! 2. The server sends the [`Spec`] on stdin (length, then JSON); whatever
//!    follows is the script's stdin.
//! 3. A fresh root on a tmpfs holds only what the spec binds, read-only
//!    unless granted; `pivot_root` leaves the host's tree behind.
//! 4. The script is forked as the PID namespace's init: when it ends, the
//!    kernel kills every process left in the namespace. Before `exec` it
//!    gets its own session, the limits, no capabilities, `no_new_privs`,
//!    the Landlock rules and the seccomp filters, in that order.
//! 5. The launcher writes `started`, waits, and ends the way the script
//!    ended (its exit code, or its signal).
//!
//! A failure before the script starts is one `error ...` line on the
//! status pipe and exit code 125.

use std::io::{PipeReader, PipeWriter};
use std::io::{Read as _, Write as _};
use std::mem::ManuallyDrop;
use std::os::fd::{AsFd as _, FromRawFd as _, OwnedFd};
use std::os::unix::process::{CommandExt as _, ExitStatusExt as _};
use std::path::Path;

use rustix::mount::{MountFlags, MountPropagationFlags, UnmountFlags};
use rustix::process::{Resource, Rlimit};
use rustix::thread::UnshareFlags;

use super::spec::{RunLimits, Spec};

/// `argv[1]` that makes `skillpkg` a launcher.
pub const LAUNCHER_ARG: &str = "__skillpkg-run-launcher";

/// The descriptor of the status pipe.
pub const STATUS_FD: i32 = 3;

/// Exit code of a launcher that could not start the script.
pub const SETUP_FAILED: i32 = 125;

/// The largest spec the launcher reads.
const MAX_SPEC: u32 = 64 << 20;

/// How a run ended.
enum Ended {
    Code(i32),
    Signal(i32),
}

/// Runs the launcher; never returns.
pub fn main() -> ! {
    // SAFETY: the server opened fd 3 for this process; nothing else owns it.
    let mut status = PipeWriter::from(unsafe { OwnedFd::from_raw_fd(STATUS_FD) });
    let _ = rustix::io::fcntl_setfd(status.as_fd(), rustix::io::FdFlags::CLOEXEC);
    let ended = launch(&mut status).unwrap_or_else(|message| {
        let line = message.replace('\n', " ");
        let _ = writeln!(status, "error {line}");
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

fn launch(status: &mut PipeWriter) -> Result<Ended, String> {
    enter_namespaces()?;
    writeln!(status, "ready").map_err(|error| format!("status pipe: {error}"))?;
    let mut spec = read_spec()?;
    let filters = super::filter::compile()?;
    build_root(&spec)?;

    // The way out to the listed hosts: a relay on the run's loopback to
    // the server's proxy. The listener is close-on-exec: the script never
    // holds it.
    let relay = match &spec.proxy {
        Some(socket) => {
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
            Some((listener, socket.clone()))
        }
        None => None,
    };
    let mut command = std::process::Command::new(&spec.program);
    command
        .args(&spec.args)
        .env_clear()
        .envs(spec.env.iter().map(|(key, value)| (key, value)))
        .current_dir(&spec.workdir);
    let limits = spec.limits;
    let landlock = spec.landlock.clone();
    // SAFETY: the launcher is single-threaded, so the child may allocate;
    // every step is a plain system call or the Landlock and seccomp setup.
    unsafe {
        command.pre_exec(move || {
            confine(limits, landlock.as_ref(), &filters).map_err(std::io::Error::other)
        });
    }
    let child = command
        .spawn()
        .map_err(|error| format!("cannot start {}: {error}", spec.program.display()))?;
    writeln!(status, "started").map_err(|error| format!("status pipe: {error}"))?;
    if let Some((listener, socket)) = relay {
        start_relay(&listener, &socket)?;
    }
    // Every child is reaped, not only the script: when the script (the
    // namespace's init) ends, the kernel kills the rest and waits until
    // each is reaped, and the relay is the launcher's child.
    let script = i32::try_from(child.id()).map_err(|_| "a process id out of range")?;
    loop {
        let mut status = 0;
        // SAFETY: waitpid with a valid pointer to a local.
        let pid = unsafe { libc::waitpid(-1, &mut status, libc::__WALL) };
        if pid < 0 {
            let error = std::io::Error::last_os_error();
            if error.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(format!("wait: {error}"));
        }
        if pid == script {
            let waited = std::process::ExitStatus::from_raw(status);
            return Ok(match (waited.code(), waited.signal()) {
                (Some(code), _) => Ended::Code(code),
                (None, Some(signal)) => Ended::Signal(signal),
                (None, None) => Ended::Code(SETUP_FAILED),
            });
        }
    }
}

/// Forks the relay: a process of the run's PID namespace (a launcher,
/// having unshared it, may not start threads of its own), killed with the
/// namespace when the script ends, or with the launcher.
fn start_relay(listener: &std::net::TcpListener, socket: &Path) -> Result<(), String> {
    // SAFETY: the launcher is single-threaded; the child only relays.
    match unsafe { libc::fork() } {
        -1 => Err(format!("proxy relay: {}", std::io::Error::last_os_error())),
        0 => {
            let _ = rustix::process::set_parent_process_death_signal(Some(
                rustix::process::Signal::KILL,
            ));
            relay_to(listener, socket);
            std::process::exit(0)
        }
        _ => Ok(()),
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

/// Reads the spec from stdin without reading past it: the rest is the
/// script's.
fn read_spec() -> Result<Spec, String> {
    // SAFETY: fd 0 stays open and owned by the process; not closed here.
    let mut stdin = ManuallyDrop::new(PipeReader::from(unsafe { OwnedFd::from_raw_fd(0) }));
    let mut length = [0; 4];
    stdin
        .read_exact(&mut length)
        .map_err(|error| format!("no run from the server: {error}"))?;
    let length = u32::from_be_bytes(length);
    if length > MAX_SPEC {
        return Err(format!("a run description of {length} bytes"));
    }
    let mut bytes = vec![0; length as usize];
    stdin
        .read_exact(&mut bytes)
        .map_err(|error| format!("a cut run description: {error}"))?;
    serde_json::from_slice(&bytes).map_err(|error| format!("a bad run description: {error}"))
}

/// Builds the new root and moves into it.
fn build_root(spec: &Spec) -> Result<(), String> {
    let failed = |what: &str, path: &Path, error: rustix::io::Errno| {
        format!("{what} {}: {error}", path.display())
    };
    rustix::mount::mount_change(
        "/",
        MountPropagationFlags::REC | MountPropagationFlags::PRIVATE,
    )
    .map_err(|error| failed("make private", Path::new("/"), error))?;
    let root = &spec.root;
    rustix::mount::mount(
        "tmpfs",
        root,
        "tmpfs",
        MountFlags::NOSUID | MountFlags::NODEV,
        c"mode=0755,size=4m",
    )
    .map_err(|error| failed("mount a tmpfs on", root, error))?;
    let inside = |path: &Path| root.join(path.strip_prefix("/").unwrap_or(path));

    for dir in &spec.dirs {
        make_dir(&inside(dir))?;
    }
    for link in &spec.links {
        let at = inside(&link.path);
        if let Some(parent) = at.parent() {
            make_dir(parent)?;
        }
        std::os::unix::fs::symlink(&link.to, &at)
            .map_err(|error| format!("link {}: {error}", link.path.display()))?;
    }
    for bind in &spec.binds {
        let target = inside(&bind.target);
        let is_dir = fs_err::metadata(&bind.source)
            .map_err(|error| format!("{}: {error}", bind.source.display()))?
            .is_dir();
        make_mount_point(&target, is_dir)?;
        bind_mount(&bind.source, &target, bind.writable)?;
    }
    if !spec.devices.is_empty() {
        let dev = inside(Path::new("/dev"));
        make_dir(&dev)?;
        rustix::mount::mount(
            "tmpfs",
            &dev,
            "tmpfs",
            MountFlags::NOSUID | MountFlags::NOEXEC,
            c"mode=0755,size=64k",
        )
        .map_err(|error| failed("mount a tmpfs on", &dev, error))?;
        for device in &spec.devices {
            let target = inside(device);
            make_mount_point(&target, false)?;
            rustix::mount::mount_bind(device, &target)
                .map_err(|error| failed("bind", device, error))?;
        }
        // Nothing more is made in `/dev`; the devices keep their own mounts.
        rustix::mount::mount_remount(
            &dev,
            MountFlags::RDONLY | MountFlags::NOSUID | MountFlags::NOEXEC,
            "mode=0755,size=64k",
        )
        .map_err(|error| failed("make read-only", &dev, error))?;
    }

    let old = root.join(".old-root");
    make_dir(&old)?;
    rustix::process::chdir(root).map_err(|error| failed("enter", root, error))?;
    rustix::process::pivot_root(".", ".old-root")
        .map_err(|error| failed("pivot to", root, error))?;
    rustix::mount::unmount("/.old-root", UnmountFlags::DETACH)
        .map_err(|error| failed("leave", Path::new("/.old-root"), error))?;
    let _ = fs_err::remove_dir("/.old-root");
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

/// Binds `source` on `target`, read-only unless `writable`, never with
/// set-user-id programs or devices. A read-only remount must keep the
/// flags the source's mount locks (`noexec`, `nosuid`, `nodev`), or a user
/// namespace may not change it.
///
/// The source is opened without following any link on its way and bound
/// through that descriptor: the server took each path after its links,
/// and a link put in its place since (by a run with a write grant, racing)
/// must not show the run what it leads to.
fn bind_mount(source: &Path, target: &Path, writable: bool) -> Result<(), String> {
    use rustix::fs::{Mode, OFlags, ResolveFlags};
    let opened = rustix::fs::openat2(
        rustix::fs::CWD,
        source,
        OFlags::PATH | OFlags::CLOEXEC,
        Mode::empty(),
        ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS,
    )
    .map_err(|error| match error {
        rustix::io::Errno::LOOP => format!(
            "{} is a link now; it was not when the run was planned",
            source.display()
        ),
        error => format!("open {}: {error}", source.display()),
    })?;
    let through = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&opened));
    rustix::mount::mount_bind_recursive(through.as_str(), target)
        .map_err(|error| format!("bind {}: {error}", source.display()))?;
    drop(opened);
    let mut flags = MountFlags::BIND | MountFlags::NOSUID | MountFlags::NODEV;
    if !writable {
        flags |= MountFlags::RDONLY;
    }
    if let Ok(stat) = rustix::fs::statvfs(source) {
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
    rustix::mount::mount_remount(target, flags, "")
        .map_err(|error| format!("remount {}: {error}", target.display()))
}

/// The script's side, between `fork` and `exec`.
fn confine(
    limits: RunLimits,
    landlock: Option<&super::spec::LandlockRules>,
    filters: &[seccompiler::BpfProgram],
) -> Result<(), String> {
    rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))
        .map_err(|error| format!("parent death signal: {error}"))?;
    rustix::process::setsid().map_err(|error| format!("setsid: {error}"))?;
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
    // Nothing the server inherited from whoever started it, nor anything
    // of the launcher's, reaches the script: every descriptor past stderr
    // closes at `exec` (close-on-exec, so the standard library's own
    // error pipe still works until then).
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
    drop_capabilities()?;
    rustix::thread::set_no_new_privs(true).map_err(|error| format!("no_new_privs: {error}"))?;
    if let Some(rules) = landlock {
        crate::runtime::sandbox::restrict_thread(&rules.policy, &rules.grants)?;
    }
    for filter in filters {
        seccompiler::apply_filter(filter).map_err(|error| format!("seccomp: {error}"))?;
    }
    Ok(())
}

/// Gives up every capability the user namespace gave, for good: the
/// bounding set is emptied, and root inside gains none at `exec`.
fn drop_capabilities() -> Result<(), String> {
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
    .map_err(|error| format!("securebits: {error}"))?;
    let none = rustix::thread::CapabilitySet::empty();
    rustix::thread::set_capabilities(
        None,
        rustix::thread::CapabilitySets {
            effective: none,
            permitted: none,
            inheritable: none,
        },
    )
    .map_err(|error| format!("capset: {error}"))?;
    Ok(())
}
