#!/usr/bin/env python3
"""Benchmarks of `skillpkg mcp`, each against a baseline measured in the
same run (bench/README.md):

- `skills_load` of a 50 KB skill, round trip over stdio, against a `ping`
  round trip on the same connection (the protocol's floor);
- `skills/list` over 1,000 installed skills, against `ping`;
- `skills_run_script` of a no-op bash script, sandbox included, against
  spawning `bash script.sh` directly from this process, and against the
  same call to a server started with `--unsandboxed`;
- the server's memory (peak RSS) serving 1,000 skills, against the same
  server serving none;
- the server's start-up with 1,000 skills, sandboxed (it starts a run
  launcher to learn whether namespaces work), against `--unsandboxed`;
  watching the skills' folders against `--no-watch`;
- a change while serving 1,000 skills, from a file written to the
  client's `notifications/resources/list_changed` (the quiet wait of
  150 ms, then the whole catalog read and vetted again), against the
  start-up with the same skills (the first reading).

The client speaks JSON-RPC over the server's stdin and stdout directly,
with no SDK in between, so what is timed is the server and the pipe.

    python3 bench/mcp.py                       # builds --release first
    python3 bench/mcp.py --runs 301 --skillpkg target/release/skillpkg
    python3 bench/mcp.py --only run-script --pace 20   # calls 20 ms apart
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


class Server:
    """`skillpkg mcp` on pipes, initialized."""

    def __init__(self, skillpkg: str, project: Path, home: Path, extra: tuple[str, ...] = ()):
        self.process = subprocess.Popen(
            [skillpkg, "mcp", "--project", str(project), *extra],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={"PATH": os.environ["PATH"], "HOME": str(home)},
        )
        self.next_id = 0
        self.request("initialize", {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "bench", "version": "1"},
        })
        self.notify("notifications/initialized")

    def notify(self, method: str) -> None:
        self.process.stdin.write(json.dumps({"jsonrpc": "2.0", "method": method}).encode() + b"\n")
        self.process.stdin.flush()

    def request(self, method: str, params: dict | None = None) -> dict:
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            message["params"] = params
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()
        while True:
            reply = json.loads(self.process.stdout.readline())
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise SystemExit(f"{method}: {reply['error']}")
                return reply["result"]

    def call(self, tool: str, arguments: dict) -> dict:
        result = self.request("tools/call", {"name": tool, "arguments": arguments})
        if result.get("isError"):
            raise SystemExit(f"{tool}: {result}")
        return result

    def peak_rss_kib(self) -> int:
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        return int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM:")))

    def wait_for(self, method: str) -> None:
        while True:
            message = json.loads(self.process.stdout.readline())
            if message.get("method") == method:
                return

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=10)


def timed(action, runs: int) -> list[float]:
    action()  # warm up
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        times.append((time.perf_counter() - start) * 1000)
    return times


def interleaved(a, b, runs: int) -> tuple[list[float], list[float]]:
    """Times `a` and `b` alternately, so load on the machine falls on both."""
    times_a, times_b = interleaved_all([a, b], runs)
    return times_a, times_b


def interleaved_all(actions, runs: int, pause: float = 0.0) -> list[list[float]]:
    """Times each of `actions` in turn, the order reversed every other
    round, so load on the machine falls on all of them alike; `pause`
    seconds, untimed, after each."""
    for action in actions:
        action()
    times = [[] for _ in actions]
    for round_ in range(runs):
        order = list(range(len(actions)))
        if round_ % 2:
            order.reverse()
        for index in order:
            start = time.perf_counter()
            actions[index]()
            times[index].append((time.perf_counter() - start) * 1000)
            if pause:
                time.sleep(pause)
    return times


def row(label: str, times: list[float]) -> str:
    times = sorted(times)
    p95 = times[min(len(times) - 1, int(len(times) * 0.95))]
    return f"  {label:<44} median {statistics.median(times):8.3f} ms   p95 {p95:8.3f} ms   (n={len(times)})"


def skill(folder: Path, name: str, body: str, files: dict[str, str]) -> None:
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: Benchmark skill {name}. Use when measuring.\n---\n{body}")
    for path, text in files.items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(text)


def time_run_script(server: Server, bare: Server, project: Path, runs: int, pace_ms: float = 0.0) -> bool:
    """Times skills_run_script of a no-op script against bash, and against
    the same call to a server run with --unsandboxed (what the protocol
    and the server's own path cost, no sandbox); whether the ratio to bash
    misses 1.5x. With `pace_ms`, each call is followed by that many
    milliseconds, untimed, as an agent's calls are (the model writes
    between them): what a server does after answering is not charged to
    the next row."""
    script = project / ".claude/skills/big/scripts/noop.sh"
    bash, unsandboxed, run_script = interleaved_all([
        lambda: subprocess.run(["bash", str(script)], check=True),
        lambda: bare.call("skills_run_script", {"path": "scripts/noop.sh"}),
        lambda: server.call("skills_run_script", {"path": "scripts/noop.sh"}),
    ], runs, pace_ms / 1000)
    print("a no-op bash script" + (f", calls {pace_ms:g} ms apart" if pace_ms else ", calls back to back"))
    print(row("bash script.sh, spawned here (baseline)", bash))
    print(row("skills_run_script, --unsandboxed", unsandboxed))
    print(row("skills_run_script, sandboxed", run_script))
    ratio = statistics.median(run_script) / statistics.median(bash)
    print(f"  ratio {ratio:.2f}x bash; --unsandboxed {statistics.median(unsandboxed) / statistics.median(bash):.2f}x bash;"
          f" the sandbox's own share {statistics.median(run_script) / statistics.median(unsandboxed):.2f}x")
    return ratio > 1.5


def run_script_only(server: Server, bare: Server, project: Path, runs: int, pace_ms: float) -> int:
    missed = time_run_script(server, bare, project, runs, pace_ms)
    server.close()
    bare.close()
    if missed:
        print("MISSED: skills_run_script is not within 1.5x of spawning bash", file=sys.stderr)
    return 1 if missed else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--skillpkg", help="the binary (default: build and use target/release/skillpkg)")
    parser.add_argument("--runs", type=int, default=201)
    parser.add_argument("--only", choices=["run-script"], help="time only skills_run_script against bash")
    parser.add_argument("--pace", type=float, default=0.0, metavar="MS",
                        help="leave MS milliseconds, untimed, after each skills_run_script row's call"
                             " (as an agent's calls are spaced); default 0: back to back")
    args = parser.parse_args()
    skillpkg = args.skillpkg
    if skillpkg is None:
        subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "skillpkg"], cwd=ROOT, check=True)
        skillpkg = str(ROOT / "target/release/skillpkg")

    failures = []
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        home = scratch / "home"
        home.mkdir()

        # One project with a 50 KB skill and a no-op script.
        small = scratch / "small"
        paragraph = "Follow these steps carefully and check each result before going on.\n" * 6
        skill(small / ".claude/skills/big", "big", "# Big\n\n" + paragraph * 24, {
            f"references/part-{i}.md": paragraph * 20 for i in range(5)
        } | {"scripts/noop.sh": "exit 0\n"})
        size = sum(f.stat().st_size for f in (small / ".claude/skills/big").rglob("*") if f.is_file())

        # One with 1,000 skills of a SKILL.md and a reference each.
        many = scratch / "many"
        for i in range(1000):
            skill(many / f".claude/skills/skill-{i:04}", f"skill-{i:04}", "# Skill\n\n" + paragraph * 4, {
                "references/guide.md": paragraph * 8,
            })
        empty = scratch / "empty"
        empty.mkdir()

        print(f"skillpkg mcp ({skillpkg}), {args.runs} runs each")

        server = Server(skillpkg, small, home)
        if args.only == "run-script":
            server.call("skills_load", {"names": ["big"]})
            bare = Server(skillpkg, small, home, ("--unsandboxed",))
            bare.call("skills_load", {"names": ["big"]})
            return run_script_only(server, bare, small, args.runs, args.pace)
        ping, load = interleaved(
            lambda: server.request("ping"),
            lambda: server.call("skills_load", {"names": ["big"]}),
            args.runs,
        )
        print(f"skills_load of a {size / 1024:.0f} KB skill")
        print(row("ping (baseline)", ping))
        print(row("skills_load", load))
        print(f"  ratio {statistics.median(load) / statistics.median(ping):.1f}x ping")
        if statistics.median(load) >= 5.0:
            failures.append("skills_load median is not under 5 ms")

        bare = Server(skillpkg, small, home, ("--unsandboxed",))
        bare.call("skills_load", {"names": ["big"]})
        if time_run_script(server, bare, small, args.runs, args.pace):
            failures.append("skills_run_script is not within 1.5x of spawning bash")
        server.close()
        bare.close()

        idle = Server(skillpkg, empty, home)
        idle.request("tools/list")
        idle_rss = idle.peak_rss_kib()
        idle.close()

        started = time.perf_counter()
        server = Server(skillpkg, many, home)
        start_ms = (time.perf_counter() - started) * 1000
        ping, listing = interleaved(
            lambda: server.request("ping"),
            lambda: server.request("skills/list"),
            max(args.runs // 4, 21),
        )
        count = len(server.request("skills/list")["skills"])
        rss = server.peak_rss_kib()
        server.close()
        print(f"skills/list over {count} skills (server start with them: {start_ms:.0f} ms)")
        print(row("ping (baseline)", ping))
        print(row("skills/list", listing))
        if statistics.median(listing) >= 50.0:
            failures.append("skills/list median is not under 50 ms")
        print(f"peak RSS: {rss / 1024:.1f} MiB with {count} skills, {idle_rss / 1024:.1f} MiB with none")
        if rss >= 30 * 1024:
            failures.append("peak RSS with 1,000 skills is not under 30 MB")

        # Start-up with 1,000 skills, to the answer of `initialize`: with
        # the sandbox (which starts a launcher to learn whether namespaces
        # work, on a thread of its own) against --unsandboxed (none).
        def start(extra):
            def once():
                Server(skillpkg, many, home, extra).close()
            return once
        bare, walled = interleaved(start(("--unsandboxed",)), start(()), max(args.runs // 10, 11))
        print("server start with 1000 skills")
        print(row("--unsandboxed (baseline)", bare))
        print(row("sandboxed", walled))
        print(f"  ratio {statistics.median(walled) / statistics.median(bare):.2f}x")
        frozen, watching = interleaved(start(("--no-watch",)), start(()), max(args.runs // 10, 11))
        print(row("--no-watch (baseline)", frozen))
        print(row("watching", watching))
        print(f"  ratio {statistics.median(watching) / statistics.median(frozen):.2f}x")

        # A change while serving them: written, then told.
        server = Server(skillpkg, many, home)
        guide = many / ".claude/skills/skill-0000/references/guide.md"
        version = iter(range(1_000_000))

        def change():
            guide.write_text(paragraph * 8 + f"version {next(version)}\n")
            server.wait_for("notifications/resources/list_changed")

        told = timed(change, max(args.runs // 10, 11))
        server.close()
        print("a change while serving 1000 skills, written to told")
        print(row("start (baseline)", watching))
        print(row("change to list_changed", told))
        print(f"  ratio {statistics.median(told) / statistics.median(watching):.2f}x start (150 ms of it is the quiet wait)")

    for failure in failures:
        print(f"MISSED: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
