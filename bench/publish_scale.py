#!/usr/bin/env python3
"""Publish cost against registry size: the raw HTTP publish into an empty
registry and into a large one, the same run, taking turns.

Usage: python3 bench/publish_scale.py [--skills 20000] [--versions 5]
           [--runs 31] [--registry PATH] [--database postgres://...]

Builds the release binaries (unless --registry is given), then makes two
data folders: an empty one, and one whose tree holds --skills skills of
--versions versions each (index files written directly, each line a copy
of a real publish's line with its name, version and checksum changed; no
archives, which a publish never reads). Each gets a server on a loopback
port; the large one records the tree's versions in its database at its
first start, which is timed. With --database (a PostgreSQL server URL
whose user may create databases), each server gets a database of its own
there instead of SQLite.

Then --runs rounds, each publishing to both servers in turns (which goes
first alternates), over one keep-alive connection each: a new version of an
existing skill, and the first version of a new name (which the look-alike
check compares with every name). Reported: the median, min and max of each,
and large / empty as the ratio of the medians.
"""

import argparse
import hashlib
import http.client
import io
import json
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def index_path(name: str) -> str:
    if len(name) <= 2:
        return f"index/{len(name)}/{name}"
    if len(name) == 3:
        return f"index/3/{name[0]}/{name}"
    return f"index/{name[0:2]}/{name[2:4]}/{name}"


def tarball(name: str) -> bytes:
    """A minimal skill archive: `SKILL.md` at its root, as `skillpkg pack`
    lays it out."""
    text = f"---\nname: {name}\ndescription: Benchmark skill {name}. Use when measuring.\n---\n# {name}\n\nDo the step.\n".encode()
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz", format=tarfile.PAX_FORMAT) as archive:
        info = tarfile.TarInfo("SKILL.md")
        info.size = len(text)
        info.mode = 0o644
        info.mtime = 0
        archive.addfile(info, io.BytesIO(text))
    return out.getvalue()


def multipart(name: str, version: str) -> tuple[bytes, str]:
    boundary = uuid.uuid4().hex
    body = b""
    for key, value in (("name", name), ("version", version)):
        body += f'--{boundary}\r\nContent-Disposition: form-data; name="{key}"\r\n\r\n{value}\r\n'.encode()
    body += f'--{boundary}\r\nContent-Disposition: form-data; name="tarball"; filename="x.tgz"\r\n\r\n'.encode()
    body += tarball(name) + f"\r\n--{boundary}--\r\n".encode()
    return body, f"multipart/form-data; boundary={boundary}"


class Server:
    def __init__(self, registry: Path, data: Path, database: str | None):
        self.extra = ["--database", database] if database else []
        self.token = subprocess.run(
            [registry, "token", "create", "--root", data, "--user", "bench", *self.extra],
            capture_output=True, text=True, check=True).stdout.strip()
        started = time.perf_counter()
        self.process = subprocess.Popen(
            [registry, "serve", "--root", data, "--listen", "127.0.0.1:0", *self.extra],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        line = self.process.stdout.readline().strip()
        self.start_seconds = time.perf_counter() - started
        url = line.removeprefix("listening on ")
        host, port = url.removeprefix("http://").split(":")
        self.connection = http.client.HTTPConnection(host, int(port))

    def publish(self, name: str, version: str) -> float:
        body, content_type = multipart(name, version)
        started = time.perf_counter()
        self.connection.request("PUT", "/api/v1/skills", body, {
            "Authorization": f"Bearer {self.token}", "Content-Type": content_type})
        response = self.connection.getresponse()
        text = response.read()
        took = time.perf_counter() - started
        if response.status != 201:
            sys.exit(f"publish of {name}@{version} failed: {response.status} {text[:300]!r}")
        return took

    def stop(self) -> None:
        self.process.kill()
        self.process.wait()


def create_database(url: str, name: str) -> str:
    subprocess.run(["psql", url, "-qc", f"CREATE DATABASE {name}"], check=True)
    return url.rsplit("/", 1)[0] + "/" + name


def describe(label: str, times: list[float]) -> float:
    median = statistics.median(times)
    print(f"  {label:<28} {median * 1000:8.2f} ms   ({min(times) * 1000:.2f} - {max(times) * 1000:.2f})")
    return median


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skills", type=int, default=20000)
    parser.add_argument("--versions", type=int, default=5)
    parser.add_argument("--runs", type=int, default=31)
    parser.add_argument("--registry", type=Path)
    parser.add_argument("--database", help="a PostgreSQL URL whose user may create databases")
    args = parser.parse_args()

    registry = args.registry
    if registry is None:
        subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "skillpkg-registry"], cwd=ROOT, check=True)
        registry = ROOT / "target/release/skillpkg-registry"
    work = Path(tempfile.mkdtemp(prefix="skillpkg-scale-"))
    servers = []
    try:
        # A real line to copy: one publish into a scratch registry.
        scratch = Server(registry, work / "scratch", None)
        scratch.publish("template", "1.0.0")
        scratch.stop()
        template = json.loads((work / "scratch/public" / index_path("template")).read_text().splitlines()[0])

        large = work / "large"
        started = time.perf_counter()
        for i in range(args.skills):
            name = f"scale-{i:06d}"
            lines = []
            for v in range(args.versions):
                record = dict(template, name=name, vers=f"1.{v}.0",
                              cksum="sha256:" + hashlib.sha256(f"{name}@{v}".encode()).hexdigest())
                lines.append(json.dumps(record, separators=(",", ":")))
            path = large / "public" / index_path(name)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("\n".join(lines) + "\n")
        print(f"wrote {args.skills} index files, {args.skills * args.versions} versions, "
              f"in {time.perf_counter() - started:.1f} s")

        databases = [None, None]
        if args.database:
            suffix = uuid.uuid4().hex[:8]
            databases = [create_database(args.database, f"bench_empty_{suffix}"),
                         create_database(args.database, f"bench_large_{suffix}")]
        empty_server = Server(registry, work / "empty", databases[0])
        servers.append(empty_server)
        large_server = Server(registry, large, databases[1])
        servers.append(large_server)
        print(f"start: empty {empty_server.start_seconds:.2f} s, large {large_server.start_seconds:.2f} s "
              f"(recording {args.skills * args.versions} versions in the database)")

        # The same skills exist in both, for the new-version publishes.
        for server in (empty_server,):
            for r in range(args.runs + 1):
                server.publish(f"scale-{r:06d}", "1.0.0")
        times = {(which, kind): [] for which in ("empty", "large") for kind in ("version", "name")}
        for r in range(args.runs + 1):
            order = [("empty", empty_server), ("large", large_server)]
            if r % 2:
                order.reverse()
            for which, server in order:
                version = server.publish(f"scale-{r:06d}", f"2.{r}.0")
                name = server.publish(f"fresh-{r:04d}-{uuid.uuid4().hex[:6]}", "1.0.0")
                if r > 0:  # the first round warms up
                    times[(which, "version")].append(version)
                    times[(which, "name")].append(name)
        backend = "PostgreSQL" if args.database else "SQLite"
        print(f"raw HTTP publish, folder storage, {backend}, {args.runs} each:")
        for kind, label in (("version", "a new version"), ("name", "a new name")):
            empty = describe(f"{label}, empty registry", times[("empty", kind)])
            large_median = describe(f"{label}, {args.skills * args.versions} versions", times[("large", kind)])
            print(f"  {'ratio':<28} {large_median / empty:8.2f}x")
    finally:
        for server in servers:
            server.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
