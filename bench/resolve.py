#!/usr/bin/env python3
"""Resolve benchmark: `skillpkg lock` of 100 skills with dependencies from the
real server, this build against a baseline, cold and warm; or from a large
registry against a small one.

Usage: python3 bench/resolve.py --baseline-skillpkg PATH [--skillpkg PATH] [--registry PATH]
           [--skills 100] [--runs 11] [--delay-ms 20] [--signed-metadata]
       python3 bench/resolve.py --large-skills 20000 [--large-versions 5]
           [--baseline-skillpkg PATH] [...]

Builds the release binaries of this tree (unless --skillpkg is given),
starts `skillpkg-registry serve` on loopback with a fresh data folder
(`--signed-metadata`: with `keys init` first) and publishes --skills signed
skills in five levels of a fifth each: each skill depends on three of the
next level, and the project wants the first level, so a resolve reads every
index file, most of them found only through others.

Each binary under test (this tree's, or --skillpkg PATH, and the
--baseline-skillpkg PATH, such as the build of an older revision) gets a
project, cache and state folder of its own. With --large-skills N, a second
server's registry also holds N synthetic skills of --large-versions
versions each (index files written before its first start, as
publish_scale.py writes them, each line a copy of a real one), and the
same 100 skills published to it the same way: the "large" side is this
tree's binary resolving from it, against "current" resolving from the
small one. Each run times, for each side, in turns (the sides take turns
going first):

  cold  `skillpkg lock` with no skills.lock and an empty cache and state
  warm  the same again with the cache (and state) the cold one left

once straight to the server, and once through a proxy in this script that
holds every request for --delay-ms before forwarding it (a registry that
far away; 0 skips it). Reported: the median, min and max of each, and
each side / current as the ratio of the medians and the median of the
per-run ratios (baseline / current: how much faster this tree is; large /
current: what the registry's size costs).
"""

import argparse
import http.client
import http.server
import json
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

from benchkit import index_path, write_synthetic

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
    parser.add_argument("--baseline-skillpkg", type=Path)
    parser.add_argument("--skillpkg", type=Path)
    parser.add_argument("--registry", type=Path, help="the skillpkg-registry to serve with (default: this tree's)")
    parser.add_argument("--skills", type=int, default=100)
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--delay-ms", type=float, default=20.0)
    parser.add_argument("--signed-metadata", action="store_true")
    parser.add_argument("--large-skills", type=int, default=0)
    parser.add_argument("--large-versions", type=int, default=5)
    args = parser.parse_args()
    if not args.baseline_skillpkg and not args.large_skills:
        parser.error("give --baseline-skillpkg, --large-skills, or both")
    if args.skillpkg is None:
        subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "skillpkg", "-p", "skillpkg-registry"], cwd=ROOT, check=True)
    current = args.skillpkg or ROOT / "target/release/skillpkg"
    registry = (args.registry or ROOT / "target/release/skillpkg-registry").resolve()
    binaries = {"current": current.resolve()}
    if args.baseline_skillpkg:
        binaries["baseline"] = args.baseline_skillpkg.resolve()
    work = Path(tempfile.mkdtemp(prefix="skillpkg-resolve-bench-"))
    processes = []
    try:
        publisher = dict(os.environ, SKILLPKG_CONFIG_DIR=str(work / "publisher"))
        quiet_run([current, "key", "generate", "--no-password", "-q"], env=publisher)
        skills = graph(args.skills)

        def start_server(data: Path) -> str:
            """Starts a server on `data`, publishes the graph's skills to it,
            and returns its URL."""
            if args.signed_metadata:
                if not (work / "root.key").exists():
                    quiet_run([registry, "keys", "generate", work / "root.key"])
                quiet_run([registry, "keys", "init", "--root", data, "--root-key", work / "root.key"])
            token = quiet_run([registry, "token", "create", "--root", data, "--user", "bench"]).stdout.strip()
            started = time.perf_counter()
            server = subprocess.Popen([registry, "serve", "--root", data, "--listen", "127.0.0.1:0"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            processes.append(server)
            origin = server.stdout.readline().strip().removeprefix("listening on ") + "/"
            start_seconds = time.perf_counter() - started
            started = time.perf_counter()
            for name, deps in skills:
                folder = work / "skills" / name
                if not folder.exists():
                    folder.mkdir(parents=True)
                    depends = f"depends_on: [{', '.join(deps)}]\n" if deps else ""
                    (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: Benchmark skill {name}.\nversion: 1.0.0\n{depends}---\n# {name}\n")
                quiet_run([current, "publish", folder, "--registry", origin, "--token", token, "-q"], env=publisher)
            print(f"{data.name}: started in {start_seconds:.2f} s, {len(skills)} publishes in {time.perf_counter() - started:.1f} s")
            return origin

        origins = {"small": start_server(work / "registry")}
        if args.large_skills:
            leaf = skills[0][0]
            template = json.loads((work / "registry/public" / index_path(leaf)).read_text().splitlines()[0])
            large = work / "large"
            started = time.perf_counter()
            write_synthetic(large / "public", template, args.large_skills, args.large_versions)
            print(f"large: wrote {args.large_skills} index files, {args.large_skills * args.large_versions} versions, "
                  f"in {time.perf_counter() - started:.1f} s")
            origins["large"] = start_server(large)
        wanted = [name for name, _ in skills if name.startswith("r0-")]
        # Each side: a binary and the registry it resolves from.
        sides = {binary: (path, "small") for binary, path in binaries.items()}
        if args.large_skills:
            sides["large"] = (binaries["current"], "large")

        proxies = {}
        if args.delay_ms > 0:
            for which, origin in origins.items():
                proxies[which] = DelayingProxy(origin, args.delay_ms / 1000)
                threading.Thread(target=proxies[which].serve_forever, daemon=True).start()
        routes = ["loopback"] + ([f"+{args.delay_ms:g} ms"] if proxies else [])

        def resolve(side: str, route: str, cold: bool) -> float:
            binary, which = sides[side]
            url = origins[which] if route == "loopback" else proxies[which].url
            home = work / "clients" / side / route.replace(" ", "")
            project = home / "project"
            if not project.exists():
                project.mkdir(parents=True)
                manifest = "".join(f'"{name}" = "*"\n' for name in wanted)
                (project / "skills.toml").write_text(f'[registry]\nurl = "{url}"\n\n[install]\ntargets = ["agents"]\n\n[skills]\n{manifest}')
            (project / "skills.lock").unlink(missing_ok=True)
            if cold:
                shutil.rmtree(home / "cache", ignore_errors=True)
                shutil.rmtree(home / "state", ignore_errors=True)
            env = dict(os.environ, SKILLPKG_CONFIG_DIR=str(home / "config"), SKILLPKG_CACHE_DIR=str(home / "cache"), SKILLPKG_STATE_DIR=str(home / "state"))
            start = time.perf_counter()
            quiet_run([binary, "lock", "-q"], cwd=project, env=env)
            took = time.perf_counter() - start
            locked = (project / "skills.lock").read_text().count("[[skill]]")
            if locked != len(skills):
                sys.exit(f"{side} locked {locked} skills, not {len(skills)}")
            return took

        times: dict[tuple[str, str, str], list[float]] = {}
        order = list(sides)
        # One untimed round: the server's files in the page cache.
        for side in order:
            for route in routes:
                resolve(side, route, cold=True)
        for run in range(args.runs):
            for route in routes:
                for side in order if run % 2 == 0 else list(reversed(order)):
                    for kind in ("cold", "warm"):
                        times.setdefault((route, kind, side), []).append(resolve(side, route, cold=kind == "cold"))

        print(f"`skillpkg lock` of {len(wanted)} skills reaching {len(skills)} index files, {args.runs} runs"
              f"{', signed metadata' if args.signed_metadata else ''}"
              + (f"; large: the registry also holds {args.large_skills} skills, "
                 f"{args.large_skills * args.large_versions} versions" if args.large_skills else ""))

        def shown(values: list[float]) -> str:
            return f"{statistics.median(values) * 1000:8.1f} ms ({min(values) * 1000:.0f}-{max(values) * 1000:.0f})"

        others = [side for side in order if side != "current"]
        print(f"{'':24} {'current (median, range)':>28} " + " ".join(f"{side + ' (median, range)':>28} {side + '/current':>26}" for side in others))
        for route in routes:
            for kind in ("cold", "warm"):
                now = times[(route, kind, "current")]
                line = f"{route + ', ' + kind:24} {shown(now):>28}"
                for side in others:
                    values = times[(route, kind, side)]
                    ratio = statistics.median(values) / statistics.median(now)
                    per_run = statistics.median(b / n for b, n in zip(values, now))
                    line += f" {shown(values):>28} {ratio:9.2f}x (per run {per_run:.2f}x)"
                print(line)
        if args.large_skills:
            cold = statistics.median(times[("loopback", "cold", "large")]) * 1000
            print(f"target: a cold resolve from the large registry over loopback under 150 ms: "
                  f"{cold:.1f} ms, {'met' if cold < 150 else 'missed'}")
    finally:
        for process in processes:
            process.kill()
            process.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
