//! The launcher factory: one process per server, the `skillpkg` binary
//! started once more (`/proc/self/exe` with [`FACTORY_ARG`]), that forks
//! each run's launcher. A launcher made by `exec` pays for loading a large
//! binary (the loader's relocations, page faults, and the teardown of the
//! last one's memory: about 3 ms of processor a run); a `fork` of this
//! small, single-threaded process pays for none of it.
//!
//! The server sends a request on a `SOCK_SEQPACKET` socket (the factory's
//! fd 3): the launcher's scratch folder and cgroup, with four descriptors
//! (the launcher's stdin, stdout, stderr and status pipe). The factory
//! forks; the child makes them its fds 0 to 3, a process group of its own,
//! and becomes the launcher ([`super::launcher::serve`]). The factory
//! answers `ok` with a pidfd of the launcher, or `error ...`. It ends when
//! the server closes the socket.

use std::ffi::OsStr;
use std::io::{IoSlice, IoSliceMut};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd as _, AsRawFd as _, FromRawFd as _, OwnedFd};
use std::os::unix::ffi::OsStrExt as _;
use std::path::Path;

use rustix::net::{
    RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags,
};

/// `argv[1]` that makes `skillpkg` a launcher factory.
pub const FACTORY_ARG: &str = "__skillpkg-run-factory";

/// The descriptor of the factory's socket.
pub const SOCKET_FD: i32 = 3;

/// The largest request or answer.
const MAX_MESSAGE: usize = 16 << 10;

/// Runs the factory; never returns.
pub fn main() -> ! {
    // SAFETY: the server gave this process fd 3; nothing else owns it.
    let socket = unsafe { OwnedFd::from_raw_fd(SOCKET_FD) };
    let _ = rustix::io::fcntl_setfd(socket.as_fd(), rustix::io::FdFlags::CLOEXEC);
    // What every launcher needs and no run changes, made once here rather
    // than in each launcher: the system part of the root's plan, the
    // seccomp filters, whether launchers may enter their root ahead
    // (`host`), the sample run each reads ahead, the kernel's Landlock
    // ABI and the system paths
    // opened for its rules (close-on-exec; no script holds them).
    super::plan::system();
    let _ = super::filter::compiled();
    super::host::clones_bind();
    super::plan::sample();
    crate::runtime::sandbox::warm_landlock();
    loop {
        reap();
        let mut bytes = [0u8; MAX_MESSAGE];
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(4))];
        let mut control = RecvAncillaryBuffer::new(&mut space);
        let received = rustix::net::recvmsg(
            &socket,
            &mut [IoSliceMut::new(&mut bytes)],
            &mut control,
            RecvFlags::CMSG_CLOEXEC,
        );
        let length = match received {
            Ok(received) if received.bytes > 0 => received.bytes,
            Err(rustix::io::Errno::INTR) => continue,
            // The server is gone: so is the factory.
            _ => std::process::exit(0),
        };
        let mut fds = Vec::new();
        for message in control.drain() {
            if let RecvAncillaryMessage::ScmRights(received) = message {
                fds.extend(received);
            }
        }
        let answer = match make_launcher(&bytes[..length], fds) {
            Ok(pidfd) => answer(&socket, b"ok", Some(&pidfd)),
            Err(why) => answer(&socket, format!("error {why}").as_bytes(), None),
        };
        if answer.is_err() {
            std::process::exit(0);
        }
    }
}

/// Reaps the launchers that ended (the server follows them by pidfd).
fn reap() {
    loop {
        let mut status = 0;
        // SAFETY: waitpid with a valid pointer to a local.
        let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        if pid <= 0 {
            return;
        }
    }
}

fn answer(socket: &OwnedFd, text: &[u8], fd: Option<&OwnedFd>) -> rustix::io::Result<usize> {
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    let fds;
    if let Some(fd) = fd {
        fds = [fd.as_fd()];
        control.push(SendAncillaryMessage::ScmRights(&fds));
    }
    rustix::net::sendmsg(
        socket,
        &[IoSlice::new(text)],
        &mut control,
        SendFlags::NOSIGNAL,
    )
}

/// Forks the launcher of `request` (`scratch`, NUL, `cgroup` or nothing)
/// with `fds` as its stdin, stdout, stderr and status pipe.
fn make_launcher(request: &[u8], fds: Vec<OwnedFd>) -> Result<OwnedFd, String> {
    let [stdin, stdout, stderr, status]: [OwnedFd; 4] = fds
        .try_into()
        .map_err(|_| "a request without its four descriptors".to_owned())?;
    let mut parts = request.split(|byte| *byte == 0);
    let scratch = Path::new(OsStr::from_bytes(parts.next().unwrap_or_default()));
    let cgroup = parts
        .next()
        .filter(|cgroup| !cgroup.is_empty())
        .map(|cgroup| Path::new(OsStr::from_bytes(cgroup)).to_path_buf());
    if !scratch.is_absolute() {
        return Err("a request without its scratch folder".into());
    }
    let scratch = scratch.to_path_buf();
    // SAFETY: the factory is single-threaded, so the child may allocate.
    match unsafe { libc::fork() } {
        -1 => Err(format!("fork: {}", std::io::Error::last_os_error())),
        0 => {
            // The socket is fd 3, which the status pipe replaces.
            for (fd, at) in [(&stdin, 0), (&stdout, 1), (&stderr, 2), (&status, 3)] {
                // SAFETY: dup2 onto this process's own descriptors; the
                // received ones are above 3, the socket's is replaced.
                if unsafe { libc::dup2(fd.as_raw_fd(), at) } < 0 {
                    // SAFETY: ends the child without the factory's exit.
                    unsafe { libc::_exit(super::launcher::SETUP_FAILED) }
                }
            }
            drop((stdin, stdout, stderr, status));
            // SAFETY: a process group of its own, as the server kills it.
            unsafe { libc::setpgid(0, 0) };
            super::launcher::serve(Some(&scratch), cgroup.as_deref())
        }
        pid => {
            // Not reaped before this: the pid is still the launcher's.
            let pid = rustix::process::Pid::from_raw(pid).ok_or("fork gave no process id")?;
            rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty())
                .map_err(|error| format!("pidfd_open: {error}"))
        }
    }
}

/// The server's side: a factory started once, and asked for launchers.
pub struct Factory {
    socket: OwnedFd,
    process: std::process::Child,
}

impl std::fmt::Debug for Factory {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Factory")
            .field("pid", &self.process.id())
            .finish_non_exhaustive()
    }
}

impl Factory {
    /// Starts the factory: `command` is the `skillpkg` binary with
    /// [`FACTORY_ARG`].
    pub fn start(mut command: std::process::Command) -> std::io::Result<Self> {
        use rustix::net::{AddressFamily, SocketFlags, SocketType};
        let (ours, theirs) = rustix::net::socketpair(
            AddressFamily::UNIX,
            SocketType::SEQPACKET,
            SocketFlags::CLOEXEC,
            None,
        )?;
        command
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        super::with_fd_3(&mut command, &theirs);
        let process = command.spawn()?;
        drop(theirs);
        Ok(Self {
            socket: ours,
            process,
        })
    }

    /// Asks for a launcher with `scratch` and `cgroup`, and `fds` (its
    /// stdin, stdout, stderr and status pipe); returns its pidfd.
    pub fn make(
        &self,
        scratch: &Path,
        cgroup: Option<&Path>,
        fds: [&OwnedFd; 4],
    ) -> std::io::Result<OwnedFd> {
        let mut request = scratch.as_os_str().as_bytes().to_vec();
        request.push(0);
        if let Some(cgroup) = cgroup {
            request.extend(cgroup.as_os_str().as_bytes());
        }
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(4))];
        let mut control = SendAncillaryBuffer::new(&mut space);
        let borrowed = fds.map(|fd| fd.as_fd());
        control.push(SendAncillaryMessage::ScmRights(&borrowed));
        rustix::net::sendmsg(
            &self.socket,
            &[IoSlice::new(&request)],
            &mut control,
            SendFlags::NOSIGNAL,
        )?;
        let mut bytes = [0u8; MAX_MESSAGE];
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
        let mut control = RecvAncillaryBuffer::new(&mut space);
        let received = rustix::net::recvmsg(
            &self.socket,
            &mut [IoSliceMut::new(&mut bytes)],
            &mut control,
            RecvFlags::CMSG_CLOEXEC,
        )?;
        let mut pidfd = None;
        for message in control.drain() {
            if let RecvAncillaryMessage::ScmRights(mut received) = message {
                pidfd = pidfd.or(received.next());
            }
        }
        let text = String::from_utf8_lossy(&bytes[..received.bytes]);
        match (text.as_ref(), pidfd) {
            ("ok", Some(pidfd)) => Ok(pidfd),
            (_, _) if received.bytes == 0 => Err(std::io::Error::new(
                std::io::ErrorKind::BrokenPipe,
                "the launcher factory ended",
            )),
            (text, _) => Err(std::io::Error::other(format!(
                "the launcher factory: {}",
                text.strip_prefix("error ").unwrap_or(text)
            ))),
        }
    }
}

impl Drop for Factory {
    fn drop(&mut self) {
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}
