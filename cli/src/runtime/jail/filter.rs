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
    // Mounts, old and new API, and root changes.
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_chroot,
    libc::SYS_fsopen,
    libc::SYS_fsconfig,
    libc::SYS_fsmount,
    libc::SYS_fspick,
    libc::SYS_move_mount,
    libc::SYS_open_tree,
    libc::SYS_mount_setattr,
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

/// The filters, in the order to install them: the `EPERM` one, then the
/// `ENOSYS` one for `clone3`.
pub fn compile() -> Result<Vec<BpfProgram>, String> {
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
    [eperm, enosys]
        .into_iter()
        .map(|filter| BpfProgram::try_from(filter).map_err(|error| error.to_string()))
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_filters_compile_for_this_machine() {
        let filters = super::compile().unwrap();
        assert_eq!(filters.len(), 2);
        assert!(filters.iter().all(|filter| !filter.is_empty()));
    }
}
