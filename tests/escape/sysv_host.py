"""The host's side of the System V IPC test: a shared memory segment
holding MARKER and an empty message queue, made with KEY and KEY + 1.

    python3 sysv_host.py KEY MARKER

Prints `{"shmid": N, "msqid": N}` once they exist, then waits for a line
on stdin; then prints what changed meanwhile (`shm`: the segment's first
bytes; `received`: every message the queue got) and removes both.
"""

import ctypes
import json
import sys

IPC_CREAT, IPC_EXCL, IPC_RMID, IPC_NOWAIT = 0o1000, 0o2000, 0, 0o4000
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
libc.msgrcv.restype = ctypes.c_ssize_t

key = int(sys.argv[1])
marker = sys.argv[2].encode()
shmid = libc.shmget(key, 4096, IPC_CREAT | IPC_EXCL | 0o600)
msqid = libc.msgget(key + 1, IPC_CREAT | IPC_EXCL | 0o600)
if shmid < 0 or msqid < 0:
    raise SystemExit(f"cannot create the segment or the queue: errno {ctypes.get_errno()}")
address = libc.shmat(shmid, None, 0)
ctypes.memmove(address, marker, len(marker))
try:
    print(json.dumps({"shmid": shmid, "msqid": msqid}), flush=True)
    sys.stdin.readline()
    received = []
    buffer = ctypes.create_string_buffer(8 + 256)
    while (size := libc.msgrcv(msqid, buffer, 256, 0, IPC_NOWAIT)) >= 0:
        received.append(buffer.raw[8 : 8 + size].decode(errors="replace"))
    shm = ctypes.string_at(address, 64).rstrip(b"\0").decode(errors="replace")
    print(json.dumps({"shm": shm, "received": received}), flush=True)
finally:
    libc.shmdt(ctypes.c_void_p(address))
    libc.shmctl(shmid, IPC_RMID, None)
    libc.msgctl(msqid, IPC_RMID, None)
