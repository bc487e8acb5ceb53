"""Start a command the way an agent host started from a terminal might:
in a session whose controlling terminal is a pseudo-terminal, with stderr
on that terminal and stdin and stdout passed through (the MCP transport),
and with a descriptor the host forgot to close: the write end of a pipe,
at fd 100. Everything that appears on the terminal (what is echoed, and
what is queued as input) or in the pipe is appended to LOG, which the
test reads after the command ends.

    python3 tty_wrapper.py LOG -- COMMAND...
"""

import fcntl
import os
import select
import sys
import termios
import time

LEAKED_FD = 100

log_path = sys.argv[1]
command = sys.argv[sys.argv.index("--") + 1 :]
master, slave = os.openpty()
leak_read, leak_write = os.pipe()
child = os.fork()
if child == 0:
    os.setsid()
    fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
    os.dup2(slave, 2)
    os.dup2(leak_write, LEAKED_FD)  # dup2 makes it inheritable
    for fd in (slave, master, leak_read, leak_write):
        os.close(fd)
    os.execvp(command[0], command)
os.close(leak_write)
# Only the command holds the transport: its end is the client's EOF.
null = os.open(os.devnull, os.O_RDWR)
os.dup2(null, 0)
os.dup2(null, 1)
for fd in (master, slave, leak_read):
    os.set_blocking(fd, False)
with open(log_path, "ab", buffering=0) as log:
    done = False
    while True:
        readable, _, _ = select.select([master, slave, leak_read], [], [], 0.05)
        for fd in readable:
            try:
                data = os.read(fd, 65536)
            except OSError:
                continue
            log.write(data)
        if done:
            break
        finished, _ = os.waitpid(child, os.WNOHANG)
        if finished:
            # One more pass for what is still queued.
            done = True
            time.sleep(0.05)
