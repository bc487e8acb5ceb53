"""The system calls a seccomp filter must refuse, made raw through ctypes
(x86_64 numbers), each in a forked child so that a filter that kills the
caller (SIGSYS) ends only that probe. Every call is harmless when it
succeeds: arguments are invalid where success would change the machine
(kexec_load, init_module), and what succeeds is undone (a mount is
unmounted, an attached tracee detached, descriptors closed).

argv[1] is a JSON object: `server_pid`, a process outside the sandbox to
attach to (the mount point is in the run's TMPDIR). Prints
one JSON line: for each call, `ret` and `errno`, or `signal` when the
probe was killed."""

import ctypes
import errno
import json
import os
import struct
import sys

P = json.loads(sys.argv[1])
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long

SYS = {
    "ptrace": 101,
    "mount": 165,
    "umount2": 166,
    "kexec_load": 246,
    "add_key": 248,
    "keyctl": 250,
    "unshare": 272,
    "perf_event_open": 298,
    "init_module": 175,
    "bpf": 321,
    "userfaultfd": 323,
    "io_uring_setup": 425,
}
PTRACE_TRACEME, PTRACE_ATTACH, PTRACE_DETACH = 0, 16, 17
CLONE_NEWUSER = 0x10000000


def raw(name, *args):
    ctypes.set_errno(0)
    ret = libc.syscall(ctypes.c_long(SYS[name]), *args)
    return ret, ctypes.get_errno()


def close_if_fd(result):
    ret, _ = result
    if ret >= 0:
        os.close(ret)
    return result


def traceme():
    return raw("ptrace", ctypes.c_long(PTRACE_TRACEME), ctypes.c_long(0), None, None)


def attach(pid):
    def probe():
        result = raw("ptrace", ctypes.c_long(PTRACE_ATTACH), ctypes.c_long(pid), None, None)
        if result[0] == 0:
            os.waitpid(pid, 0x40000000)  # __WALL: wait for the stop
            raw("ptrace", ctypes.c_long(PTRACE_DETACH), ctypes.c_long(pid), None, None)
        return result
    return probe


def mount():
    target = os.path.join(os.environ.get("TMPDIR", "/tmp"), "mnt")
    os.makedirs(target, exist_ok=True)
    result = raw("mount", b"none", target.encode(), b"tmpfs", ctypes.c_ulong(0), None)
    if result[0] == 0:
        raw("umount2", target.encode(), ctypes.c_int(0))
    return result


def unshare_user():
    return raw("unshare", ctypes.c_int(CLONE_NEWUSER))


def bpf():
    # BPF_MAP_CREATE of a one-entry array map.
    attr = ctypes.create_string_buffer(struct.pack("=IIII", 2, 4, 4, 1) + b"\x00" * 112)
    return close_if_fd(raw("bpf", ctypes.c_int(0), attr, ctypes.c_uint(len(attr))))


def keyctl():
    # KEYCTL_JOIN_SESSION_KEYRING with no name: a new anonymous keyring.
    return raw("keyctl", ctypes.c_int(1), None)


def add_key():
    # KEY_SPEC_PROCESS_KEYRING: the probe's own keyring.
    return raw("add_key", b"user", b"skillpkg-escape", b"x", ctypes.c_size_t(1), ctypes.c_int(-2))


def userfaultfd():
    return close_if_fd(raw("userfaultfd", ctypes.c_int(os.O_CLOEXEC)))


def io_uring_setup():
    params = ctypes.create_string_buffer(120)
    return close_if_fd(raw("io_uring_setup", ctypes.c_uint(1), params))


def perf_event_open():
    # PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, of this process.
    attr = ctypes.create_string_buffer(struct.pack("=IIQ", 1, 128, 0) + b"\x00" * 112)
    return close_if_fd(raw("perf_event_open", attr, ctypes.c_int(0), ctypes.c_int(-1), ctypes.c_int(-1), ctypes.c_ulong(8)))


def kexec_load():
    # More segments than the kernel takes and an architecture that is none:
    # refused as invalid (EINVAL) by a kernel that lets the call through.
    return raw("kexec_load", ctypes.c_ulong(0), ctypes.c_ulong(1000), None, ctypes.c_ulong(0xFFFF0000))


def init_module():
    # An empty image: refused as not a module (ENOEXEC) past the checks.
    return raw("init_module", None, ctypes.c_ulong(0), b"")


def in_child(probe):
    read, write = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(read)
        try:
            ret, err = probe()
            os.write(write, json.dumps({"ret": ret, "errno": errno.errorcode.get(err, err) if ret < 0 else None}).encode())
        except Exception as error:  # noqa: BLE001 - a report, whatever happened
            os.write(write, json.dumps({"error": repr(error)}).encode())
        os._exit(0)
    os.close(write)
    data = b""
    while chunk := os.read(read, 4096):
        data += chunk
    os.close(read)
    _, status = os.waitpid(child, 0)
    if os.WIFSIGNALED(status):
        return {"signal": os.WTERMSIG(status)}
    return json.loads(data or b'{"error": "no report"}')


probes = {
    "ptrace_traceme": traceme,
    "ptrace_attach_server": attach(int(P["server_pid"])),
    "mount": mount,
    "unshare_newuser": unshare_user,
    "bpf": bpf,
    "keyctl": keyctl,
    "add_key": add_key,
    "userfaultfd": userfaultfd,
    "io_uring_setup": io_uring_setup,
    "perf_event_open": perf_event_open,
    "kexec_load": kexec_load,
    "init_module": init_module,
}
if os.getppid() > 1 and os.getppid() != int(P["server_pid"]):
    probes["ptrace_attach_parent"] = attach(os.getppid())
print(json.dumps({"case": "seccomp", "results": {name: in_child(probe) for name, probe in probes.items()}}))
