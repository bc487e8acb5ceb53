"""Processes that try to outlive or overwhelm their run. argv[1] is a JSON
object with `mode` and `token` (in every process's command line, so the
test finds them in the host's /proc):

- `detach`: a double-forked child that calls setsid(), closes its output,
  sleeps `sleep` seconds, then writes `marker` and sends the token to the
  host's UDP port `udp`; the script then exits, or with `hang` sleeps
  until the timeout kills it;
- `bomb`: forks `count` children that sleep, and stops at the first
  refusal;
- `spin`: burns CPU until something stops it;
- `ok`: prints that it ran.

Prints one JSON line."""

import errno
import json
import os
import signal
import socket
import sys
import time

P = json.loads(sys.argv[1])


def report(**fields):
    print(json.dumps({"case": P["mode"], **fields}), flush=True)


def detach():
    read, write = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(read)
        os.setsid()
        if os.fork() != 0:
            os._exit(0)
        # The grandchild: another session, another process group, its
        # parent gone; nothing holds the run's output open.
        os.write(write, str(os.getpid()).encode())
        os.close(write)
        for fd in (0, 1, 2):
            os.close(fd)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        time.sleep(P["sleep"])
        try:
            with open(P["marker"], "w") as marker:
                marker.write(f"survived {os.getpid()}\n")
        except OSError:
            pass
        try:
            socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(P["token"].encode(), ("127.0.0.1", P["udp"]))
        except OSError:
            pass
        os._exit(0)
    os.close(write)
    os.waitpid(child, 0)
    grandchild = os.read(read, 32).decode()
    report(grandchild=grandchild, session=os.getsid(0), hang=P.get("hang", False))
    if P.get("hang"):
        time.sleep(60)


def bomb():
    created = 0
    failure = None
    started = time.monotonic()
    for _ in range(P["count"]):
        try:
            child = os.fork()
        except OSError as error:
            failure = errno.errorcode.get(error.errno, error.errno)
            break
        if child == 0:
            # Short, in case nothing kills it.
            time.sleep(5)
            os._exit(0)
        created += 1
    report(created=created, failure=failure, seconds=round(time.monotonic() - started, 3))


def spin():
    signal.signal(signal.SIGXCPU, signal.SIG_IGN)
    report(spinning=True)
    while True:
        pass


{"detach": detach, "bomb": bomb, "spin": spin, "ok": lambda: report(ran=True)}[P["mode"]]()
