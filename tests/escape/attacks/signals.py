"""Reaching processes outside the sandbox: signals (kill, a pidfd), the
calls that change another process without signalling it (priority,
resource limits), and those that take from it (its memory with
process_vm_readv, its descriptors with pidfd_getfd). argv[1] is a JSON
object: `server_pid`, `sleeper_pid` (a host process the test started).
Prints one JSON line; the test looks at the processes themselves, and
counts a memory read that failed only on the address (EFAULT) or a
descriptor taken as an escape."""

import ctypes
import errno
import json
import os
import resource
import signal
import sys

P = json.loads(sys.argv[1])
server = int(P["server_pid"])
sleeper = int(P["sleeper_pid"])
results = {}


def attempt(name, action):
    try:
        results[name] = {"ok": True, "detail": action()}
    except OSError as error:
        results[name] = {"ok": False, "errno": errno.errorcode.get(error.errno, error.errno)}


def pidfd_signal(pid, sig):
    fd = os.pidfd_open(pid)
    try:
        signal.pidfd_send_signal(fd, sig)
    finally:
        os.close(fd)


libc = ctypes.CDLL(None, use_errno=True)


class IoVec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("length", ctypes.c_size_t)]


def read_memory(pid):
    buffer = ctypes.create_string_buffer(16)
    local = IoVec(ctypes.cast(buffer, ctypes.c_void_p), 16)
    # An address no process maps: reaching it at all fails with EFAULT.
    remote = IoVec(ctypes.c_void_p(0x10), 16)
    ctypes.set_errno(0)
    got = libc.process_vm_readv(pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
    if got < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return got


def take_descriptor(pid):
    fd = os.pidfd_open(pid)
    try:
        ctypes.set_errno(0)
        taken = libc.syscall(438, fd, 0, 0)  # pidfd_getfd(pidfd, 0: its stdin)
        if taken < 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err))
        os.close(taken)
        return "took the server's stdin"
    finally:
        os.close(fd)


attempt("read_server_memory", lambda: read_memory(server))
attempt("take_server_stdin", lambda: take_descriptor(server))
attempt("kill_sleeper", lambda: os.kill(sleeper, signal.SIGKILL))
attempt("pidfd_kill_sleeper", lambda: pidfd_signal(sleeper, signal.SIGKILL))
attempt("renice_server", lambda: os.setpriority(os.PRIO_PROCESS, server, 19))
attempt("prlimit_server", lambda: resource.prlimit(server, resource.RLIMIT_CORE, (4096, resource.prlimit(server, resource.RLIMIT_CORE)[1])))
attempt("term_server", lambda: os.kill(server, signal.SIGTERM))
attempt("pidfd_term_server", lambda: pidfd_signal(server, signal.SIGTERM))
print(json.dumps({"case": "signals", "results": results}))
