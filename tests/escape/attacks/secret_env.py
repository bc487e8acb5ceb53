"""What a script can learn of the server's environment. argv[1] is a JSON
object: `name` (the variable to look for), `pids` (processes whose
environment to read: the server's, and the parent's is added). Prints one
JSON line with every value hex-encoded, so that the server's redaction of
declared secrets hides nothing from the test: it looks for the secret's
hex in the whole output."""

import hashlib
import json
import os
import sys

P = json.loads(sys.argv[1])
value = os.environ.get(P["name"])
report = {
    "case": "secrets",
    "in_env": value is not None,
    "sha256": hashlib.sha256(value.encode()).hexdigest() if value else None,
    "env_hex": {name: text.encode().hex() for name, text in os.environ.items()},
    "environ": {},
}
pids = [str(pid) for pid in P.get("pids", [])] + [str(os.getppid())]
for pid in pids:
    path = f"/proc/{pid}/environ"
    try:
        with open(path, "rb") as file:
            report["environ"][path] = {"ok": True, "hex": file.read().hex()}
    except OSError as error:
        report["environ"][path] = {"ok": False, "error": error.strerror}
print(json.dumps(report))
