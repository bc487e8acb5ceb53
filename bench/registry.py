#!/usr/bin/env python3
"""Registry benchmark: publishes per second, and static file reads per
second from skillpkg-registry against nginx serving the same tree.

Usage: python3 bench/registry.py [--skills 1000] [--seconds 10] [--runs 5]
           [--archive-kib 128] [--registry PATH] [--baseline [LABEL=]PATH ...] [--no-build]

Needs nginx and wrk (`apt-get install nginx wrk`). Builds release binaries
(unless --no-build), starts skillpkg-registry on a loopback port with a fresh
data folder, packs N small skills with `skillpkg pack` and publishes them one
after the other over one keep-alive connection (the figure is end to end:
upload, hardened unpack, validation, fsynced atomic writes, index and
aggregate rewrites), then publishes one more skill whose archive is about
--archive-kib KiB.

Then it measures reads with wrk (2 threads, 32 connections, --seconds each)
of two files: one index file, and the large skill's archive (.tgz, whose
full GETs the server counts as downloads). Each file is read from the server
and from nginx (one worker) serving the same `public/` folder, --runs times,
the sides taking turns going first, so load from other work falls on both.
--baseline PATH (or LABEL=PATH, repeatable) adds a side: another
skillpkg-registry binary (such as the build of an older revision) serving a
copy of the same data folder, in the same turns. It prints each side's
median and range, and the ratios of each server to nginx (and of this
tree's to each baseline): the ratio of the medians, and the median and
range of the per-run ratios.
"""

import argparse
import http.client
import json
import os
import random
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int) -> None:
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            return
        except OSError:
            time.sleep(0.05)
    sys.exit(f"nothing listens on {port}")


def multipart(fields: dict, tarball: bytes) -> tuple[bytes, str]:
    boundary = uuid.uuid4().hex
    body = b""
    for key, value in fields.items():
        body += f'--{boundary}\r\nContent-Disposition: form-data; name="{key}"\r\n\r\n{value}\r\n'.encode()
    body += f'--{boundary}\r\nContent-Disposition: form-data; name="tarball"; filename="x.tgz"\r\n\r\n'.encode()
    body += tarball + f"\r\n--{boundary}--\r\n".encode()
    return body, f"multipart/form-data; boundary={boundary}"


def wrk(url: str, seconds: int) -> float:
    out = subprocess.run(["wrk", "-t2", "-c32", f"-d{seconds}s", url], capture_output=True, text=True, check=True).stdout
    match = re.search(r"Requests/sec:\s+([\d.]+)", out)
    if not match:
        sys.exit(f"cannot read wrk's output:\n{out}")
    if "Non-2xx or 3xx responses" in out:
        sys.exit(f"wrk got errors from {url}:\n{out}")
    return float(match.group(1))


def pack(skillpkg: Path, folder: Path, out: Path) -> bytes:
    out.mkdir(exist_ok=True)
    result = json.loads(subprocess.run([skillpkg, "pack", folder, "--version", "1.0.0", "-o", out, "--json", "-q"],
                                       capture_output=True, text=True, check=True).stdout)
    return Path(result["path"]).read_bytes()


def large_skill(folder: Path, kib: int) -> None:
    """A skill whose archive is about `kib` KiB: references of prose-like
    text (random words), which gzip shrinks about as much as real text."""
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\nname: bench-large\ndescription: Benchmark skill with references.\n---\n"
                                     "# bench-large\n\nRead references/notes.md.\n")
    words = ["skill", "registry", "archive", "index", "version", "publish", "install", "client", "server",
             "folder", "request", "answer", "the", "a", "of", "to", "and", "is", "file", "tree", "read", "write",
             "cache", "token", "owner", "signature", "checksum", "download", "mirror", "bucket"]
    rng = random.Random(42)
    # Random words of this list compress to about a fifth.
    text = []
    size = 0
    while size < kib * 1024 * 5:
        line = " ".join(rng.choice(words) for _ in range(12)) + ".\n"
        text.append(line)
        size += len(line)
    (folder / "references").mkdir()
    (folder / "references/notes.md").write_text("# Notes\n\n" + "".join(text))


def nginx_config(prefix: Path, port: int, public: Path) -> str:
    # The configuration of docs/registry.md ("Serving the tree with nginx"),
    # nginx's defaults otherwise (sendfile off, no open_file_cache).
    return f"""daemon off; master_process off; worker_processes 1;
pid {prefix}/nginx.pid; error_log {prefix}/error.log;
events {{ worker_connections 1024; }}
http {{ access_log off;
  types {{ application/json json; application/gzip tgz; application/x-ndjson jsonl; }}
  default_type "text/plain; charset=utf-8";
  client_body_temp_path {prefix}/body; proxy_temp_path {prefix}/proxy; fastcgi_temp_path {prefix}/fastcgi;
  uwsgi_temp_path {prefix}/uwsgi; scgi_temp_path {prefix}/scgi;
  server {{ listen 127.0.0.1:{port}; root {public};
    location ~ /\\.(?!well-known/) {{ return 404; }}
    location /dl/ {{ add_header Cache-Control "public, max-age=31536000, immutable"; }}
    location / {{ add_header Cache-Control "public, max-age=60, must-revalidate"; }} }} }}
"""


def start_server(registry: Path, data: Path) -> tuple[subprocess.Popen, str]:
    server = subprocess.Popen([registry, "serve", "--root", data, "--listen", "127.0.0.1:0"],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    url = server.stdout.readline().strip().removeprefix("listening on ")
    if not url.startswith("http://"):
        sys.exit(f"{registry} did not start")
    return server, url


def shown(values: list[float]) -> str:
    return f"{statistics.median(values):,.0f} requests/s ({min(values):,.0f} - {max(values):,.0f})"


def ratio(ours: list[float], theirs: list[float]) -> str:
    per_run = [a / b for a, b in zip(ours, theirs)]
    return (f"{statistics.median(ours) / statistics.median(theirs):.2f}x "
            f"(per run: median {statistics.median(per_run):.2f}x, {min(per_run):.2f} - {max(per_run):.2f}x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skills", type=int, default=1000)
    parser.add_argument("--seconds", type=int, default=10, help="length of one wrk run")
    parser.add_argument("--runs", type=int, default=5, help="wrk runs of each file on each side")
    parser.add_argument("--archive-kib", type=int, default=128, help="about the size of the archive read")
    parser.add_argument("--registry", type=Path, help="the skillpkg-registry to measure (default: this tree's release build)")
    parser.add_argument("--skillpkg", type=Path, help="the skillpkg that packs (default: this tree's release build)")
    parser.add_argument("--baseline", action="append", default=[], metavar="[LABEL=]PATH",
                        help="another skillpkg-registry to measure in the same runs (repeatable)")
    parser.add_argument("--no-build", action="store_true", help="do not run cargo build")
    args = parser.parse_args()
    for tool in ("wrk", "nginx"):
        if not shutil.which(tool) and not Path(f"/usr/sbin/{tool}").exists():
            sys.exit(f"{tool} is not installed: apt-get install {tool}")

    if not args.no_build:
        subprocess.run(["cargo", "build", "--release", "--quiet", "--bins"], cwd=ROOT, check=True)
    skillpkg = (args.skillpkg or TARGET / "release/skillpkg").resolve()
    registry = (args.registry or TARGET / "release/skillpkg-registry").resolve()
    work = Path(tempfile.mkdtemp(prefix="skillpkg-bench-"))
    processes = []
    try:
        data = work / "data"
        token = subprocess.run([registry, "token", "create", "--root", data, "--user", "bench"],
                               capture_output=True, text=True, check=True).stdout.strip()
        server, url = start_server(registry, data)
        processes.append(server)
        host, port = url.removeprefix("http://").split(":")

        tarballs = []
        for i in range(args.skills):
            name = f"bench-skill-{i:04d}"
            folder = work / "skills" / name
            folder.mkdir(parents=True)
            (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: Benchmark skill {i}.\n---\n# {name}\n\nDo step {i}.\n")
            tarballs.append((name, pack(skillpkg, folder, work / "tarballs")))

        connection = http.client.HTTPConnection(host, int(port))

        def publish(name: str, tarball: bytes) -> None:
            body, content_type = multipart({"name": name, "version": "1.0.0"}, tarball)
            connection.request("PUT", "/api/v1/skills", body, {"Authorization": f"Bearer {token}", "Content-Type": content_type})
            response = connection.getresponse()
            answer = response.read()
            if response.status != 201:
                sys.exit(f"publish of {name} failed with {response.status}: {answer.decode(errors='replace')}")

        start = time.perf_counter()
        for name, tarball in tarballs:
            publish(name, tarball)
        elapsed = time.perf_counter() - start
        print(f"publishes: {args.skills} in {elapsed:.2f} s = {args.skills / elapsed:.1f} publishes/s (sequential, one connection)")

        large = work / "skills/bench-large"
        large_skill(large, args.archive_kib)
        publish("bench-large", pack(skillpkg, large, work / "tarballs"))
        index = "/index/be/nc/bench-skill-0500" if args.skills > 500 else "/index/be/nc/bench-skill-0000"
        archive = "/dl/bench-large/1.0.0/bench-large-1.0.0.tgz"
        # The discovery index is rewritten a moment after a publish.
        time.sleep(2)

        nginx_port = free_port()
        prefix = work / "nginx"
        prefix.mkdir()
        (prefix / "nginx.conf").write_text(nginx_config(prefix, nginx_port, data / "public"))
        nginx_binary = shutil.which("nginx") or "/usr/sbin/nginx"
        processes.append(subprocess.Popen([nginx_binary, "-c", prefix / "nginx.conf", "-p", prefix], stderr=subprocess.DEVNULL))
        wait_port(nginx_port)
        sides = {"server": url, "nginx": f"http://127.0.0.1:{nginx_port}"}
        baselines = []
        for number, given in enumerate(args.baseline):
            label, _, path = given.rpartition("=")
            label = label or ("baseline" if len(args.baseline) == 1 else f"baseline{number + 1}")
            if label in sides:
                sys.exit(f"two sides are called {label}")
            # A copy of the data folder, modification times kept: the same
            # files, and no two servers writing one folder.
            copy = work / f"baseline-{number}"
            shutil.copytree(data, copy, copy_function=shutil.copy2)
            baseline, baseline_url = start_server(Path(path).resolve(), copy)
            processes.append(baseline)
            sides[label] = baseline_url
            baselines.append(label)
        sizes = {}
        for path in (index, archive):
            with open(data / "public" / path.lstrip("/"), "rb") as file:
                sizes[path] = len(file.read())

        rates = {path: {side: [] for side in sides} for path in (index, archive)}
        names = list(sides)
        for run in range(args.runs):
            for path in (index, archive):
                # Each side goes first in turn.
                order = names[run % len(names):] + names[:run % len(names)]
                for side in order:
                    rates[path][side].append(wrk(f"{sides[side]}{path}", args.seconds))
            print(f"run {run + 1} of {args.runs} done", file=sys.stderr)

        print(f"reads: wrk -t2 -c32, {args.runs} runs of {args.seconds} s a file and side, sides in turns; nginx: one worker")
        for path, label in ((index, "index file"), (archive, "archive")):
            print(f"{label} {path} ({sizes[path]:,} bytes)")
            width = max(len(side) for side in sides) + 2
            for side in sides:
                print(f"  {side + ':':{width}} {shown(rates[path][side])}")
            for side in ["server", *baselines]:
                print(f"  {side} / nginx: {ratio(rates[path][side], rates[path]['nginx'])}")
            for label in baselines:
                print(f"  server / {label}: {ratio(rates[path]['server'], rates[path][label])}")
    finally:
        for process in processes:
            process.kill()
            process.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
