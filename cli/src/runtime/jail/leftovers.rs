//! What a server leaves on disk and in the cgroup tree, and how what a
//! killed server left is found and removed: every scratch folder, sealed
//! copy and pids cgroup names its server's PID namespace and process id
//! ([`owner_tag`]), and [`sweep_stale`] removes those of servers that no
//! longer run.

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::sync::OnceLock;

/// How a run's scratch folder is named in `TMPDIR`: this prefix, the
/// server's [`owner_tag`], `-`, and a random part.
pub(super) const SCRATCH_PREFIX: &str = "skillpkg-run-";

/// How the folder of a server's sealed copies is named, the same way.
pub(super) const SEALED_PREFIX: &str = "skillpkg-sealed-";

/// This process's PID namespace, as the kernel numbers it (the inode of
/// `/proc/self/ns/pid`): a process id means something only within it.
fn pid_namespace() -> Option<u64> {
    use std::os::unix::fs::MetadataExt as _;
    static NAMESPACE: OnceLock<Option<u64>> = OnceLock::new();
    *NAMESPACE.get_or_init(|| {
        fs_err::metadata("/proc/self/ns/pid")
            .ok()
            .map(|metadata| metadata.ino())
    })
}

/// What the names of a server's folders and cgroups carry to say whose
/// they are: its PID namespace (0 when unknown) and its process id.
pub fn owner_tag() -> String {
    format!("{}-{}", pid_namespace().unwrap_or(0), std::process::id())
}

/// Removes what servers that no longer run left behind: a server killed
/// (`SIGKILL`, a crash, the machine's OOM killer) cannot remove its runs'
/// scratch folders, its sealed copies or its runs' pids cgroups. Each of
/// them names the server's PID namespace and process id ([`owner_tag`]);
/// those of this namespace whose process id is no longer in use, and (for
/// folders) owned by this user, are removed. A process id in use, by a
/// server or anything else, keeps its own, and so does every name of
/// another namespace (a container sharing `TMPDIR`): its ids mean nothing
/// here.
pub fn sweep_stale() {
    use std::os::unix::fs::MetadataExt as _;
    let Some(namespace) = pid_namespace() else {
        return;
    };
    let me = rustix::process::getuid().as_raw();
    if let Ok(entries) = fs_err::read_dir(std::env::temp_dir()) {
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(pid) = name
                .to_str()
                .and_then(|name| owner(name, &[SCRATCH_PREFIX, SEALED_PREFIX], namespace))
            else {
                continue;
            };
            // Not followed: a link named like one is left alone.
            let Ok(metadata) = entry.metadata() else {
                continue;
            };
            if !metadata.is_dir() || metadata.uid() != me || alive(pid) {
                continue;
            }
            let path = entry.path();
            let _ = make_writable(&path);
            let _ = fs_err::remove_dir_all(&path);
        }
    }
    for base in ["/sys/fs/cgroup/pids", "/sys/fs/cgroup"] {
        let Ok(entries) = fs_err::read_dir(base) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(pid) = name
                .to_str()
                .and_then(|name| owner(name, &["skillpkg-"], namespace))
            else {
                continue;
            };
            if !alive(pid) {
                // Refused while a process is still in it.
                let _ = fs_err::remove_dir(entry.path());
            }
        }
    }
}

/// The process id in `name` when it is a server's of PID namespace
/// `namespace`: a prefix, the namespace, `-`, the id, `-`, and the rest.
fn owner(name: &str, prefixes: &[&str], namespace: u64) -> Option<i32> {
    let number = |text: &str| {
        (!text.is_empty() && text.bytes().all(|byte| byte.is_ascii_digit())).then_some(())?;
        text.parse::<u64>().ok()
    };
    let rest = prefixes
        .iter()
        .find_map(|prefix| name.strip_prefix(prefix))?;
    let (theirs, rest) = rest.split_once('-')?;
    let (pid, tail) = rest.split_once('-')?;
    if tail.is_empty() || number(theirs)? != namespace {
        return None;
    }
    i32::try_from(number(pid)?).ok().filter(|pid| *pid > 0)
}

/// Whether a process with this id exists (signal 0 reaches it, or it
/// exists and belongs to someone else).
fn alive(pid: i32) -> bool {
    // SAFETY: kill with signal 0 sends nothing; it only checks.
    let reached = unsafe { libc::kill(pid, 0) };
    reached == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

/// Gives the owner write access below `dir` again, so it can be removed.
pub fn make_writable(dir: &Path) -> std::io::Result<()> {
    for entry in fs_err::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        let kind = entry.file_type()?;
        if kind.is_dir() {
            fs_err::set_permissions(&path, std::fs::Permissions::from_mode(0o700))?;
            make_writable(&path)?;
        } else if kind.is_file() {
            fs_err::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::owner;

    #[test]
    fn only_names_made_by_a_server_of_this_namespace_name_their_owner() {
        let ours = ["skillpkg-run-", "skillpkg-sealed-"];
        let namespace = 4_026_531_836;
        assert_eq!(
            owner("skillpkg-run-4026531836-4242-aB3x9z", &ours, namespace),
            Some(4242)
        );
        assert_eq!(
            owner("skillpkg-sealed-4026531836-7-q", &ours, namespace),
            Some(7)
        );
        assert_eq!(
            owner("skillpkg-4026531836-4242-0", &["skillpkg-"], namespace),
            Some(4242)
        );
        // Another namespace's ids mean nothing here; the folders of the
        // earlier naming, without a process id, and anything else are
        // never taken for ours.
        for name in [
            "skillpkg-run-4026532000-4242-aB3x9z",
            "skillpkg-run-4242-aB3x9z",
            "skillpkg-run-aB3x9z",
            "skillpkg-run-4026531836--x",
            "skillpkg-run-4026531836-12-",
            "skillpkg-run-4026531836-0-x",
            "skillpkg-run-4026531836-+12-x",
            "skillpkg-run-4026531836-99999999999-x",
            "other-run-4026531836-12-x",
        ] {
            assert_eq!(owner(name, &ours, namespace), None, "{name}");
        }
        assert_eq!(
            super::owner_tag(),
            format!("{}-{}", super::pid_namespace().unwrap(), std::process::id())
        );
    }

    #[test]
    fn a_process_that_runs_is_alive_and_one_reaped_is_not() {
        assert!(super::alive(i32::try_from(std::process::id()).unwrap()));
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = i32::try_from(child.id()).unwrap();
        child.wait().unwrap();
        assert!(!super::alive(pid));
    }
}
