"""Files the skill was not granted, and what of the host a run sees.
argv[1] is a JSON object:

- `read`: name -> path to read (the head of a test's file is reported, so
  the test can look for its marker; system files report only a length);
- `write`: name -> path to create;
- `exists`: name -> path whose existence alone would leak something (a
  host process's /proc entry, a host interface in /sys, a file in the
  host's /tmp);
- `list`: name -> {`path`, `look_for`}: a folder to list, and the hex of
  the words that must be in no entry's name (nor, for /proc, in any
  process's command line). Hex, so that the words are not in this
  script's own command line;
- `system`: names of `read` entries whose contents are not reported.

Prints one JSON line."""

import errno
import json
import os
import sys

P = json.loads(sys.argv[1])
results = {"read": {}, "write": {}, "exists": {}, "list": {}}


def failure(error):
    return {"ok": False, "errno": errno.errorcode.get(error.errno, error.errno)}


for name, path in P.get("read", {}).items():
    try:
        with open(path, "rb") as file:
            data = file.read(4096)
        entry = {"ok": True, "bytes": len(data)}
        if name not in P.get("system", []):
            entry["head"] = data[:200].decode(errors="replace")
        results["read"][name] = entry
    except OSError as error:
        results["read"][name] = failure(error)

for name, path in P.get("write", {}).items():
    try:
        with open(path, "a") as file:
            file.write(f"written by the sandboxed script: {name}\n")
        results["write"][name] = {"ok": True}
    except OSError as error:
        results["write"][name] = failure(error)

for name, path in P.get("exists", {}).items():
    try:
        os.lstat(path)
        results["exists"][name] = {"ok": True, "visible": True}
    except OSError as error:
        results["exists"][name] = failure(error)

for name, listing in P.get("list", {}).items():
    path = listing["path"]
    words = [bytes.fromhex(word).decode() for word in listing.get("look_for", [])]
    try:
        entries = os.listdir(path)
        found = [entry for entry in entries if any(word in entry for word in words)]
        if path == "/proc":
            for entry in entries:
                if entry.isdigit():
                    try:
                        with open(f"/proc/{entry}/cmdline", "rb") as file:
                            line = file.read().decode(errors="replace")
                    except OSError:
                        continue
                    if any(word in line for word in words):
                        found.append(f"{entry}: {line}")
        results["list"][name] = {"ok": True, "entries": len(entries), "found": found}
    except OSError as error:
        results["list"][name] = failure(error)

print(json.dumps({"case": "files", "results": results}))
