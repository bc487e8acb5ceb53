"""The terminal the server may have been started from, and any descriptor
the run inherited beyond stdin, stdout and stderr. argv[1] is a JSON
object: `inject` (the text pushed into each terminal found with TIOCSTI),
`leaked_fd` and `leak` (the descriptor the server's own parent leaked to
it, and what to write there). Prints one JSON line; the test reads the
terminal and the leaked pipe."""

import errno
import fcntl
import json
import os
import stat
import sys
import termios

P = json.loads(sys.argv[1])
results = {"inherited": [], "terminals": {}}
for fd in range(3, 1024):
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        continue
    results["inherited"].append({"fd": fd, "tty": os.isatty(fd), "kind": stat.S_IFMT(mode)})


def inject(fd):
    for char in P["inject"]:
        fcntl.ioctl(fd, termios.TIOCSTI, char.encode())
    return "injected"


try:
    os.write(P["leaked_fd"], P["leak"].encode())
    results["leaked_fd"] = {"ok": True}
except OSError as error:
    results["leaked_fd"] = {"ok": False, "errno": errno.errorcode.get(error.errno, error.errno)}

candidates = [("stdin", 0), ("stdout", 1), ("stderr", 2)] + [(f"fd{entry['fd']}", entry["fd"]) for entry in results["inherited"]]
for name, fd in candidates:
    try:
        results["terminals"][name] = {"ok": True, "detail": inject(fd)}
    except OSError as error:
        results["terminals"][name] = {"ok": False, "errno": errno.errorcode.get(error.errno, error.errno)}
paths = ["/dev/tty"]
try:
    paths += [f"/dev/pts/{entry}" for entry in os.listdir("/dev/pts") if entry.isdigit()]
except OSError as error:
    results["terminals"]["/dev/pts"] = {"ok": False, "errno": errno.errorcode.get(error.errno, error.errno)}
for path in paths:
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOCTTY)
    except OSError as error:
        results["terminals"][path] = {"ok": False, "errno": errno.errorcode.get(error.errno, error.errno)}
        continue
    try:
        results["terminals"][path] = {"ok": True, "detail": inject(fd)}
    except OSError as error:
        results["terminals"][path] = {"ok": False, "opened": True, "errno": errno.errorcode.get(error.errno, error.errno)}
    finally:
        os.close(fd)
print(json.dumps({"case": "tty", "results": results}))
