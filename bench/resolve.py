#!/usr/bin/env python3
"""Resolve benchmark: `skillpkg lock` of 100 skills with dependencies from the
real server, this build against a baseline, cold and warm.

Usage: python3 bench/resolve.py --baseline-skillpkg PATH [--skillpkg PATH]
           [--skills 100] [--runs 11] [--delay-ms 20] [--signed-metadata]

Builds the release binaries of this tree (unless --skillpkg is given),
starts `skillpkg-registry serve` on loopback with a fresh data folder
(`--signed-metadata`: with `keys init` first) and publishes --skills signed
skills in five levels of a fifth each: each skill depends on three of the
next level, and the project wants the first level, so a resolve reads every
index file, most of them found only through others.

Each binary under test (this tree's, or --skillpkg PATH, and the
--baseline-skillpkg PATH, such as the build of an older revision) gets a
project, cache and state folder of its own. Each run times, for each binary,
in turns (the binaries take turns going first):

  cold  `skillpkg lock` with no skills.lock and an empty cache and state
  warm  the same again with the cache (and state) the cold one left

once straight to the server, and once through a proxy in this script that
holds every request for --delay-ms before forwarding it (a registry that
far away; 0 skips it). Reported: the median, min and max of each, and
baseline / current as the ratio of the medians and the median of the
per-run ratios.
"""

import argparse
import http.client
import http.server
import os
import shutil
import socketserver
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LEVELS = 5


class DelayingProxy(socketserver.ThreadingMixIn, http.server.HTTPServer):
    """An HTTP/1.1 proxy (keep-alive, a thread a connection) that holds each
    request for `delay` seconds, then forwards it to `upstream`."""

    daemon_threads = True

    def __init__(self, upstream: str, delay: float):
        self.upstream = upstream.removeprefix("http://").rstrip("/")
        self.delay = delay
        super().__init__(("127.0.0.1", 0), ProxyHandler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/"


class ProxyHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
        time.sleep(self.server.delay)
        headers = {name: value for name, value in self.headers.items() if name.lower() in ("if-none-match", "authorization")}
        connection = http.client.HTTPConnection(self.server.upstream, timeout=30)
        try:
            connection.request("GET", self.path, headers=headers)
            answer = connection.getresponse()
            body = answer.read()
            self.send_response(answer.status)
            for name in ("ETag", "Content-Type", "Cache-Control"):
                if answer.getheader(name):
                    self.send_header(name, answer.getheader(name))
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        finally:
            connection.close()

    def log_message(self, *_args) -> None:
        pass


def quiet_run(command, **kwargs) -> subprocess.CompletedProcess:
    """Runs a command, exiting with its error output if it fails."""
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)
    if result.returncode != 0:
        sys.exit(f"{' '.join(map(str, command))} failed with status {result.returncode}:\n{result.stderr}")
    return result


def graph(skills: int) -> list[tuple[str, list[str]]]:
    """(name, dependencies), leaves first: five levels, each skill depending
    on three of the next level."""
    width = skills // LEVELS
    levels = [[f"r{level}-{index:03d}" for index in range(width)] for level in range(LEVELS)]
    result = []
    for level in reversed(range(LEVELS)):
        for index, name in enumerate(levels[level]):
            below = levels[level + 1] if level + 1 < LEVELS else []
            deps = sorted({below[(index + step) % width] for step in (0, 1, 7)}) if below else []
            result.append((name, deps))
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline-skillpkg", required=True, type=Path)
    parser.add_argument("--skillpkg", type=Path)
    parser.add_argument("--skills", type=int, default=100)
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--delay-ms", type=float, default=20.0)
    parser.add_argument("--signed-metadata", action="store_true")
    args = parser.parse_args()
    if args.skillpkg is None:
        subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "skillpkg", "-p", "skillpkg-registry"], cwd=ROOT, check=True)
    current = args.skillpkg or ROOT / "target/release/skillpkg"
    registry = ROOT / "target/release/skillpkg-registry"
    binaries = {"current": current.resolve(), "baseline": args.baseline_skillpkg.resolve()}
    work = Path(tempfile.mkdtemp(prefix="skillpkg-resolve-bench-"))
    processes = []
    try:
        data = work / "registry"
        publisher = dict(os.environ, SKILLPKG_CONFIG_DIR=str(work / "publisher"))
        if args.signed_metadata:
            quiet_run([registry, "keys", "generate", work / "root.key"])
            quiet_run([registry, "keys", "init", "--root", data, "--root-key", work / "root.key"])
        token = quiet_run([registry, "token", "create", "--root", data, "--user", "bench"]).stdout.strip()
        server = subprocess.Popen([registry, "serve", "--root", data, "--listen", "127.0.0.1:0"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        processes.append(server)
        origin = server.stdout.readline().strip().removeprefix("listening on ") + "/"
        quiet_run([current, "key", "generate", "--no-password", "-q"], env=publisher)
        skills = graph(args.skills)
        for name, deps in skills:
            folder = work / "skills" / name
            folder.mkdir(parents=True)
            depends = f"depends_on: [{', '.join(deps)}]\n" if deps else ""
            (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: Benchmark skill {name}.\nversion: 1.0.0\n{depends}---\n# {name}\n")
            quiet_run([current, "publish", folder, "--registry", origin, "--token", token, "-q"], env=publisher)
        wanted = [name for name, _ in skills if name.startswith("r0-")]

        proxy = None
        if args.delay_ms > 0:
            proxy = DelayingProxy(origin, args.delay_ms / 1000)
            threading.Thread(target=proxy.serve_forever, daemon=True).start()
        routes = {"loopback": origin}
        if proxy:
            routes[f"+{args.delay_ms:g} ms"] = proxy.url

        def resolve(binary: str, route: str, cold: bool) -> float:
            home = work / binary / route.replace(" ", "")
            project = home / "project"
            if not project.exists():
                project.mkdir(parents=True)
                manifest = "".join(f'"{name}" = "*"\n' for name in wanted)
                (project / "skills.toml").write_text(f'[registry]\nurl = "{routes[route]}"\n\n[install]\ntargets = ["agents"]\n\n[skills]\n{manifest}')
            (project / "skills.lock").unlink(missing_ok=True)
            if cold:
                shutil.rmtree(home / "cache", ignore_errors=True)
                shutil.rmtree(home / "state", ignore_errors=True)
            env = dict(os.environ, SKILLPKG_CONFIG_DIR=str(home / "config"), SKILLPKG_CACHE_DIR=str(home / "cache"), SKILLPKG_STATE_DIR=str(home / "state"))
            start = time.perf_counter()
            quiet_run([binaries[binary], "lock", "-q"], cwd=project, env=env)
            took = time.perf_counter() - start
            locked = (project / "skills.lock").read_text().count("[[skill]]")
            if locked != len(skills):
                sys.exit(f"{binary} locked {locked} skills, not {len(skills)}")
            return took

        times: dict[tuple[str, str, str], list[float]] = {}
        order = list(binaries)
        # One untimed round: the server's files in the page cache.
        for binary in order:
            for route in routes:
                resolve(binary, route, cold=True)
        for run in range(args.runs):
            for route in routes:
                for binary in order if run % 2 == 0 else list(reversed(order)):
                    for kind in ("cold", "warm"):
                        times.setdefault((route, kind, binary), []).append(resolve(binary, route, cold=kind == "cold"))

        print(f"`skillpkg lock` of {len(wanted)} skills reaching {len(skills)} index files, {args.runs} runs"
              f"{', signed metadata' if args.signed_metadata else ''}")
        print(f"{'':24} {'current (median, range)':>28} {'baseline (median, range)':>28} {'baseline/current':>22}")
        for route in routes:
            for kind in ("cold", "warm"):
                now, before = times[(route, kind, "current")], times[(route, kind, "baseline")]
                ratio = statistics.median(before) / statistics.median(now)
                per_run = statistics.median(b / n for b, n in zip(before, now))

                def shown(values: list[float]) -> str:
                    return f"{statistics.median(values) * 1000:8.1f} ms ({min(values) * 1000:.0f}-{max(values) * 1000:.0f})"

                print(f"{route + ', ' + kind:24} {shown(now):>28} {shown(before):>28} {ratio:9.2f}x (per run {per_run:.2f}x)")
    finally:
        for process in processes:
            process.kill()
            process.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
