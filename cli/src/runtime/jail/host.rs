//! The host's tree, cloned before a launcher enters its run's root.
//!
//! Leaving the host's root behind (`umount` of the old root after
//! `pivot_root`) makes the kernel wait for a grace period on every
//! processor, a fifth of a millisecond or more on a small machine, and a
//! run waited for it before its script started. A launcher made by the
//! factory now enters its root ahead, while no run is known, after taking
//! a clone of the host's mount tree (`open_tree(OPEN_TREE_CLONE |
//! AT_RECURSIVE)`): a tree of mounts that belongs to no namespace, reached
//! only through its descriptor. The run's own folders are bound from that
//! clone when the run comes (`open_tree` of the folder in the clone, then
//! `move_mount` into the root), and the descriptor is closed before
//! anything of the run's executes. Linux lets a process clone mounts out
//! of such a tree only when it came from the process's own mount
//! namespace, since 6.15; where it cannot ([`clones_bind`]), a launcher
//! keeps the host's tree until its run and leaves it then, as before.
//!
//! The clone holds the mounts as they were when the launcher was made:
//! the server drops the launchers it made ahead once its mount table
//! changes (`super::Launcher::take`).

use std::os::fd::OwnedFd;
use std::path::Path;
use std::sync::OnceLock;

use rustix::fs::{Mode, OFlags, ResolveFlags};
use rustix::mount::{MoveMountFlags, OpenTreeFlags};

/// Whether this kernel binds folders out of a clone of the host's tree.
/// Asked once per process, by a child of its own in new user and mount
/// namespaces; the factory asks before it forks any launcher.
pub fn clones_bind() -> bool {
    static ANSWER: OnceLock<bool> = OnceLock::new();
    *ANSWER.get_or_init(ask)
}

fn ask() -> bool {
    // SAFETY: the child only makes system calls and `_exit`s; it touches
    // no lock a thread of the parent might hold.
    match unsafe { libc::fork() } {
        -1 => false,
        0 => {
            let works = in_new_namespaces().is_ok();
            // SAFETY: ends the child without running the parent's exit.
            unsafe { libc::_exit(if works { 0 } else { 1 }) }
        }
        child => {
            let mut status = 0;
            loop {
                // SAFETY: waitpid with a valid pointer to a local.
                let waited = unsafe { libc::waitpid(child, &mut status, 0) };
                if waited == child {
                    return libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
                }
                if waited < 0
                    && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted
                {
                    return false;
                }
            }
        }
    }
}

/// What a launcher does, in small: new user and mount namespaces, a
/// clone of the whole tree, and a folder cloned out of that clone.
fn in_new_namespaces() -> rustix::io::Result<()> {
    use rustix::thread::UnshareFlags;
    // SAFETY: no FILES flag; the child is single-threaded.
    unsafe { rustix::thread::unshare_unsafe(UnshareFlags::NEWUSER | UnshareFlags::NEWNS) }?;
    rustix::mount::mount_change(
        "/",
        rustix::mount::MountPropagationFlags::REC | rustix::mount::MountPropagationFlags::PRIVATE,
    )?;
    let host = clone()?;
    let folder = open(Some(&host), Path::new("/"))?;
    rustix::mount::open_tree(
        &folder,
        "",
        OpenTreeFlags::OPEN_TREE_CLONE
            | OpenTreeFlags::AT_RECURSIVE
            | OpenTreeFlags::AT_EMPTY_PATH
            | OpenTreeFlags::OPEN_TREE_CLOEXEC,
    )
    .map(drop)
}

/// A clone of the whole mount tree the process sees, with every mount
/// under it.
pub fn clone() -> rustix::io::Result<OwnedFd> {
    rustix::mount::open_tree(
        rustix::fs::CWD,
        "/",
        OpenTreeFlags::OPEN_TREE_CLONE
            | OpenTreeFlags::AT_RECURSIVE
            | OpenTreeFlags::OPEN_TREE_CLOEXEC,
    )
}

/// Opens `path` (absolute) in the tree at `root`, or in the process's
/// own view without one, following no link on the way: the server took
/// each path after its links, and a link put in its place since (by a
/// run with a write grant, racing) must not show the run what it leads
/// to.
pub fn open(root: Option<&OwnedFd>, path: &Path) -> rustix::io::Result<OwnedFd> {
    let no_links = ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
    let flags = OFlags::PATH | OFlags::CLOEXEC;
    let Some(root) = root else {
        return rustix::fs::openat2(rustix::fs::CWD, path, flags, Mode::empty(), no_links);
    };
    let relative = path.strip_prefix("/").unwrap_or(path);
    let relative = if relative.as_os_str().is_empty() {
        Path::new(".")
    } else {
        relative
    };
    rustix::fs::openat2(
        root,
        relative,
        flags,
        Mode::empty(),
        no_links | ResolveFlags::BENEATH,
    )
}

/// Binds what `opened` is, with the mounts under it, on `target`: out
/// of the host's tree cloned ahead (`cloned`), or through the process's
/// own view of it.
pub fn attach(opened: &OwnedFd, target: &Path, cloned: bool) -> rustix::io::Result<()> {
    if !cloned {
        let through = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(opened));
        return rustix::mount::mount_bind_recursive(through.as_str(), target);
    }
    let tree = rustix::mount::open_tree(
        opened,
        "",
        OpenTreeFlags::OPEN_TREE_CLONE
            | OpenTreeFlags::AT_RECURSIVE
            | OpenTreeFlags::AT_EMPTY_PATH
            | OpenTreeFlags::OPEN_TREE_CLOEXEC,
    )?;
    rustix::mount::move_mount(
        &tree,
        "",
        rustix::fs::CWD,
        target,
        MoveMountFlags::MOVE_MOUNT_F_EMPTY_PATH,
    )
}
