"""Drive `skillpkg mcp` with the official Python MCP client (the `mcp`
package) through the steps of one escape test, and print what happened as
one JSON document.

    python3 client.py STEPS -- SERVER-COMMAND...

STEPS is a JSON list, run in order after `initialize`:

- `{"call": TOOL, "arguments": {...}}` calls a tool; every string
  `{server_pid}` in the arguments becomes the server's process id;
- `{"write": PATH, "text": TEXT}` writes a file (an attacker outside the
  sandbox planting something while the server runs);
- `{"plant_pyc": SOURCE, "evil": TEXT}` writes the bytecode of TEXT where
  Python caches SOURCE's, stamped with SOURCE's size and modification time,
  so an interpreter that trusts the cache runs TEXT instead of SOURCE.

The output is `{"server_pid": N, "cache_tag": ..., "results": [...]}`, one
result (the dumped `CallToolResult`) per call. Like session.py, the driver
asserts nothing: every expectation is in mcp_escape.rs.
"""

import asyncio
import importlib.util
import json
import os
import py_compile
import sys
import tempfile
from typing import Any

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client


def server_pid() -> int:
    """The child of this process: the server stdio_client started."""
    me = os.getpid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == me:
            return int(entry)
    return 0


def substitute(value: Any, pid: int) -> Any:
    if isinstance(value, str):
        return value.replace("{server_pid}", str(pid))
    if isinstance(value, list):
        return [substitute(item, pid) for item in value]
    if isinstance(value, dict):
        return {key: substitute(item, pid) for key, item in value.items()}
    return value


def plant_pyc(source: str, evil: str) -> None:
    original = os.stat(source)
    size = original.st_size
    body = evil.encode()
    if len(body) > size:
        raise SystemExit(f"the planted source must not be longer than {source}")
    body += b"#" * (size - len(body))
    with tempfile.TemporaryDirectory() as folder:
        stand_in = os.path.join(folder, os.path.basename(source))
        with open(stand_in, "wb") as file:
            file.write(body)
        os.utime(stand_in, ns=(original.st_atime_ns, original.st_mtime_ns))
        target = importlib.util.cache_from_source(source)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        py_compile.compile(
            stand_in,
            cfile=target,
            dfile=source,
            doraise=True,
            invalidation_mode=py_compile.PycInvalidationMode.TIMESTAMP,
        )


async def main() -> None:
    steps = json.loads(sys.argv[1])
    command = sys.argv[sys.argv.index("--") + 1 :]
    server = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
    results: list[Any] = []
    pid = 0
    async with stdio_client(server) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            pid = server_pid()
            for step in steps:
                if "call" in step:
                    result = await session.call_tool(step["call"], substitute(step.get("arguments", {}), pid))
                    results.append(result.model_dump(by_alias=True, mode="json", exclude_none=True))
                elif "write" in step:
                    os.makedirs(os.path.dirname(step["write"]), exist_ok=True)
                    with open(step["write"], "w") as file:
                        file.write(step["text"])
                elif "plant_pyc" in step:
                    plant_pyc(step["plant_pyc"], step["evil"])
                else:
                    raise SystemExit(f"unknown step {step}")
    json.dump({"server_pid": pid, "cache_tag": sys.implementation.cache_tag, "results": results}, sys.stdout)
    sys.stdout.write("\n")


asyncio.run(asyncio.wait_for(main(), 60))
