//! The second wall: a seccomp filter, compiled to BPF by `seccompiler`
//! (Firecracker's), that refuses what no skill script needs. The namespaces
//! are the first wall; this one stops a script from using the kernel's
//! rarely used and often exploited surfaces, and from undoing the first.
//!
//! Refused calls fail with `EPERM` (a script sees "Operation not
//! permitted"), except `clone3`, which fails with `ENOSYS` so that the C
//! library falls back to `clone`, whose flags the filter can read.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

/// System calls refused whatever their arguments.
const REFUSED: &[i64] = &[
    // Tracing other processes, reading or writing their memory.
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_kcmp,
    // Root changes (the mounts are refused by the filter made at the run:
    // [`MOUNTS`]).
    libc::SYS_chroot,
    // New namespaces, or entering others.
    libc::SYS_unshare,
    libc::SYS_setns,
    // Kernel surfaces a script never needs.
    libc::SYS_bpf,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_userfaultfd,
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
    libc::SYS_perf_event_open,
    libc::SYS_kexec_load,
    libc::SYS_kexec_file_load,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_reboot,
    libc::SYS_swapon,
    libc::SYS_swapoff,
    libc::SYS_acct,
    libc::SYS_quotactl,
    libc::SYS_syslog,
    libc::SYS_vhangup,
    libc::SYS_settimeofday,
    libc::SYS_clock_settime,
    libc::SYS_clock_adjtime,
    libc::SYS_adjtimex,
    libc::SYS_open_by_handle_at,
    libc::SYS_name_to_handle_at,
    libc::SYS_personality,
    libc::SYS_fanotify_init,
    libc::SYS_pidfd_getfd,
];

/// The mount calls, old and new API, and `pivot_root`: the script's
/// process builds the run's root with them once its run is known, so the
/// filter refusing them is installed then, after the root is built and
/// before anything of the run's executes ([`Filters::at_run`]).
const MOUNTS: &[i64] = &[
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_fsopen,
    libc::SYS_fsconfig,
    libc::SYS_fsmount,
    libc::SYS_fspick,
    libc::SYS_move_mount,
    libc::SYS_open_tree,
    libc::SYS_mount_setattr,
];

/// Namespace flags `clone` may not carry.
const NEW_NAMESPACES: &[u64] = &[
    libc::CLONE_NEWUSER as u64,
    libc::CLONE_NEWNS as u64,
    libc::CLONE_NEWNET as u64,
    libc::CLONE_NEWPID as u64,
    libc::CLONE_NEWIPC as u64,
    libc::CLONE_NEWUTS as u64,
    libc::CLONE_NEWCGROUP as u64,
    libc::CLONE_NEWTIME as u64,
];

/// The socket families a script may open: UNIX, IPv4, IPv6. Netlink,
/// packet, raw-capable families, Bluetooth, vsock, and every family added
/// later are refused.
const FAMILIES: &[u64] = &[
    libc::AF_UNIX as u64,
    libc::AF_INET as u64,
    libc::AF_INET6 as u64,
];

/// `IPPROTO_MPTCP`: TCP over several paths, which once slipped past
/// port rules that watched TCP alone.
const IPPROTO_MPTCP: u64 = 262;

/// Terminal `ioctl`s that push input into a terminal (`TIOCSTI`) or drive
/// the console (`TIOCLINUX`).
const TERMINAL_INJECTION: &[u64] = &[libc::TIOCSTI, libc::TIOCLINUX];

/// The compiled filters. Filters stack: a process runs every one it
/// installed, and none can be removed.
#[derive(Debug)]
pub struct Filters {
    /// Installed ahead, before the run is known, in this order: the
    /// `EPERM` one (everything but [`MOUNTS`]), then the `ENOSYS` one for
    /// `clone3`. Compiling the large one is most of a filter's cost to the
    /// kernel, and it is paid before the run.
    pub ahead: Vec<BpfProgram>,
    /// Installed once the run's root is built: [`MOUNTS`], refused with
    /// `EPERM`. Small, so cheap to install on the run's path.
    pub at_run: BpfProgram,
}

/// The filters, compiled once per process: the factory compiles them
/// before it forks any launcher ([`super::factory`]), and every launcher
/// it forks has them.
pub fn compiled() -> Result<&'static Filters, String> {
    static COMPILED: std::sync::OnceLock<Result<Filters, String>> = std::sync::OnceLock::new();
    COMPILED.get_or_init(compile).as_ref().map_err(Clone::clone)
}

/// Compiles the filters for this machine's architecture.
pub fn compile() -> Result<Filters, String> {
    let arch = TargetArch::try_from(std::env::consts::ARCH)
        .map_err(|error| format!("no seccomp filter for this architecture: {error}"))?;
    let condition = |arg: u8, op: SeccompCmpOp, value: u64| {
        SeccompCondition::new(arg, SeccompCmpArgLen::Qword, op, value)
            .map_err(|error| error.to_string())
    };
    let rule = |conditions: Vec<SeccompCondition>| {
        SeccompRule::new(conditions).map_err(|error| error.to_string())
    };

    let mut refused: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for call in REFUSED {
        refused.insert(*call, Vec::new());
    }
    let mut clone = Vec::new();
    for flag in NEW_NAMESPACES {
        clone.push(rule(vec![condition(
            0,
            SeccompCmpOp::MaskedEq(*flag),
            *flag,
        )?])?);
    }
    refused.insert(libc::SYS_clone, clone);
    let mut socket = vec![rule(
        FAMILIES
            .iter()
            .map(|family| condition(0, SeccompCmpOp::Ne, *family))
            .collect::<Result<_, _>>()?,
    )?];
    socket.push(rule(vec![condition(2, SeccompCmpOp::Eq, IPPROTO_MPTCP)?])?);
    refused.insert(libc::SYS_socket, socket);
    refused.insert(
        libc::SYS_socketpair,
        vec![rule(vec![condition(
            0,
            SeccompCmpOp::Ne,
            libc::AF_UNIX as u64,
        )?])?],
    );
    refused.insert(
        libc::SYS_ioctl,
        TERMINAL_INJECTION
            .iter()
            .map(|request| {
                rule(vec![condition(
                    1,
                    SeccompCmpOp::MaskedEq(0xffff_ffff),
                    *request,
                )?])
            })
            .collect::<Result<_, _>>()?,
    );

    let eperm = SeccompFilter::new(
        refused,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(|error| error.to_string())?;
    let enosys = SeccompFilter::new(
        BTreeMap::from([(libc::SYS_clone3, Vec::new())]),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS as u32),
        arch,
    )
    .map_err(|error| error.to_string())?;
    let mounts = SeccompFilter::new(
        MOUNTS.iter().map(|call| (*call, Vec::new())).collect(),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(|error| error.to_string())?;
    let program = |filter: SeccompFilter| BpfProgram::try_from(filter).map_err(|e| e.to_string());
    Ok(Filters {
        ahead: vec![program(eperm)?, program(enosys)?],
        at_run: program(mounts)?,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_filters_compile_for_this_machine() {
        let filters = super::compile().unwrap();
        assert_eq!(filters.ahead.len(), 2);
        assert!(filters.ahead.iter().all(|filter| !filter.is_empty()));
        assert!(!filters.at_run.is_empty());
        // The filter made at the run is the small one.
        assert!(filters.at_run.len() < filters.ahead[0].len() / 2);
    }

    /// Mounts a tmpfs on `target` in a forked child that enters a user and
    /// mount namespace of its own (so it may mount) and installs `filters`
    /// first: 0 when it mounted, else the `errno` (200 and up when the
    /// child could not get that far).
    fn mount_after(filters: &[&seccompiler::BpfProgram], target: &std::ffi::CStr) -> i32 {
        // SAFETY: the child makes system calls only (no allocation, no
        // lock) and ends with `_exit`.
        match unsafe { libc::fork() } {
            0 => unsafe {
                if libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS) != 0 {
                    libc::_exit(200)
                }
                for filter in filters {
                    if seccompiler::apply_filter(filter).is_err() {
                        libc::_exit(201)
                    }
                }
                let mounted = libc::mount(
                    c"none".as_ptr(),
                    target.as_ptr(),
                    c"tmpfs".as_ptr(),
                    0,
                    std::ptr::null(),
                );
                libc::_exit(if mounted == 0 {
                    0
                } else {
                    *libc::__errno_location()
                })
            },
            -1 => panic!("fork: {}", std::io::Error::last_os_error()),
            child => {
                let mut waited = 0;
                // SAFETY: waitpid with a valid pointer to a local.
                assert_eq!(unsafe { libc::waitpid(child, &mut waited, 0) }, child);
                assert!(libc::WIFEXITED(waited), "the child ended with {waited}");
                libc::WEXITSTATUS(waited)
            }
        }
    }

    #[test]
    fn the_filters_made_ahead_let_the_root_be_built_and_the_one_made_at_the_run_refuses_mounts() {
        use std::os::unix::ffi::OsStrExt as _;
        let folder = tempfile::tempdir().unwrap();
        let target = std::ffi::CString::new(folder.path().as_os_str().as_bytes()).unwrap();
        let filters = super::compile().unwrap();
        let ahead: Vec<_> = filters.ahead.iter().collect();
        // Without any filter the child may mount: else the rest proves
        // nothing.
        assert_eq!(mount_after(&[], &target), 0);
        assert_eq!(mount_after(&ahead, &target), 0);
        let all: Vec<_> = ahead.iter().copied().chain([&filters.at_run]).collect();
        assert_eq!(mount_after(&all, &target), libc::EPERM);
        assert_eq!(mount_after(&[&filters.at_run], &target), libc::EPERM);
    }

    #[test]
    fn every_mount_call_is_refused_by_exactly_one_filter() {
        for call in super::MOUNTS {
            assert!(!super::REFUSED.contains(call), "{call} is in both");
        }
        assert!(super::REFUSED.contains(&libc::SYS_chroot));
    }
}
