"""Resource exhaustion. argv[1] is a JSON object with `mode`:

- `memory`: allocates `mib` MiB in 64 MiB pieces, every page backed;
- `fsize`: makes `path` 8 GiB long (sparse: one byte written at the end,
  then ftruncate), after raising RLIMIT_FSIZE as far as it can;
- `nofile`: raises RLIMIT_NOFILE as far as it can, then opens `count`
  descriptors.

Prints one JSON line of what it got (`memory` prints one when it starts
too); a run killed on the way prints no more, and the test reads the
signal."""

import errno
import json
import mmap
import os
import resource
import sys

P = json.loads(sys.argv[1])


def name(error):
    return errno.errorcode.get(error.errno, error.errno)


def raise_limit(which, wanted):
    before = resource.getrlimit(which)
    try:
        resource.setrlimit(which, (wanted, wanted))
        raised = True
    except (OSError, ValueError):
        try:
            resource.setrlimit(which, (before[1], before[1]))
        except (OSError, ValueError):
            pass
        raised = False
    return {"before": before, "raised": raised, "now": resource.getrlimit(which)}


def memory():
    print(json.dumps({"case": "memory", "started": True}), flush=True)
    pieces = []
    failure = None
    try:
        while len(pieces) * 64 < P["mib"]:
            # MAP_POPULATE: the kernel backs every page at once, which is
            # what touching them would do, only faster.
            pieces.append(mmap.mmap(-1, 64 << 20, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | mmap.MAP_POPULATE))
    except MemoryError:
        failure = "MemoryError"
    except OSError as error:
        failure = name(error)
    print(json.dumps({"case": "memory", "allocated_mib": len(pieces) * 64, "failure": failure}), flush=True)


def fsize():
    limit = raise_limit(resource.RLIMIT_FSIZE, resource.RLIM_INFINITY)
    results = {}
    fd = os.open(P["path"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.lseek(fd, (8 << 30) - 1, os.SEEK_SET)
        results["write_at_8_gib"] = f"wrote {os.write(fd, b'x')}"
    except OSError as error:
        results["write_at_8_gib"] = name(error)
    try:
        os.ftruncate(fd, 8 << 30)
        results["ftruncate_8_gib"] = "ok"
    except OSError as error:
        results["ftruncate_8_gib"] = name(error)
    size = os.fstat(fd).st_size
    os.close(fd)
    print(json.dumps({"case": "fsize", "limit": limit, "results": results, "size": size}), flush=True)


def nofile():
    limit = raise_limit(resource.RLIMIT_NOFILE, 2 * P["count"])
    opened = []
    failure = None
    try:
        target = os.open("/dev/null", os.O_WRONLY)
        opened.append(target)
        how = "open"
    except OSError:
        target = 2
        how = "dup"
    try:
        while len(opened) < P["count"]:
            opened.append(os.open("/dev/null", os.O_WRONLY) if how == "open" else os.dup(target))
    except OSError as error:
        failure = name(error)
    count = len(opened)
    for fd in opened:
        os.close(fd)
    print(json.dumps({"case": "nofile", "limit": limit, "how": how, "opened": count, "failure": failure}), flush=True)


{"memory": memory, "fsize": fsize, "nofile": nofile}[P["mode"]]()
