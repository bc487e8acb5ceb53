"""System V IPC of the host: a shared memory segment and a message queue
the test made, found by key and by id. argv[1] is a JSON object: `key`
(the segment's; the queue's is key + 1), `shmid`, `msqid`, `token` (what
is written into the segment and sent to the queue). Prints one JSON line;
the test asks the host's side what it got."""

import ctypes
import errno
import json
import sys

P = json.loads(sys.argv[1])
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
results = {}


def outcome(ret):
    if ret == -1 or ret is None or ret == ctypes.c_void_p(-1).value:
        err = ctypes.get_errno()
        return {"ok": False, "errno": errno.errorcode.get(err, err)}
    return None


def segment(name, shmid):
    failed = outcome(shmid)
    if failed:
        results[name] = failed
        return
    address = libc.shmat(shmid, None, 0)
    failed = outcome(address)
    if failed:
        results[name] = {"found": shmid, **failed}
        return
    seen = ctypes.string_at(address, 64).rstrip(b"\0").decode(errors="replace")
    written = f"PWNED-SHM-{P['token']}".encode()
    ctypes.memmove(address, written, len(written))
    libc.shmdt(ctypes.c_void_p(address))
    results[name] = {"ok": True, "seen": seen}


def queue(name, msqid):
    failed = outcome(msqid)
    if failed:
        results[name] = failed
        return
    text = f"PWNED-MSG-{P['token']} {name}".encode()
    message = ctypes.create_string_buffer(ctypes.c_long(1).value.to_bytes(8, "little") + text)
    failed = outcome(libc.msgsnd(msqid, message, len(text), 0o4000))
    results[name] = failed or {"ok": True}


segment("shm_by_key", libc.shmget(P["key"], 0, 0))
segment("shm_by_id", P["shmid"])
queue("msg_by_key", libc.msgget(P["key"] + 1, 0))
queue("msg_by_id", P["msqid"])
print(json.dumps({"case": "ipc", "results": results}))
