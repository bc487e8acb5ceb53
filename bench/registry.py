#!/usr/bin/env python3
"""Registry benchmark: publishes per second, and static index reads per
second from skillpkg-registry against nginx serving the same tree.

Usage: python3 bench/registry.py [--skills 1000] [--seconds 10]

Needs nginx and wrk (`apt-get install nginx wrk`). Builds release binaries,
starts skillpkg-registry on a loopback port with a fresh data folder, packs
N small skills with `skillpkg pack`, publishes them one after the other over
one keep-alive connection (the figure is end to end: upload, hardened unpack,
validation, fsynced atomic writes, index and aggregate rewrites), then runs
wrk against one index file on skillpkg-registry and on nginx serving the same
`public/` folder, and prints both rates and their ratio.
"""

import argparse
import http.client
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


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
    return float(match.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skills", type=int, default=1000)
    parser.add_argument("--seconds", type=int, default=10)
    args = parser.parse_args()
    for tool in ("wrk", "nginx"):
        if not shutil.which(tool) and not Path(f"/usr/sbin/{tool}").exists():
            sys.exit(f"{tool} is not installed: apt-get install {tool}")

    subprocess.run(["cargo", "build", "--release", "--quiet", "--bins"], cwd=ROOT, check=True)
    skillpkg = ROOT / "target/release/skillpkg"
    registry = ROOT / "target/release/skillpkg-registry"
    work = Path(tempfile.mkdtemp(prefix="skillpkg-bench-"))
    server = nginx = None
    try:
        data = work / "data"
        token = subprocess.run([registry, "token", "create", "--root", data, "--user", "bench"],
                               capture_output=True, text=True, check=True).stdout.strip()
        server = subprocess.Popen([registry, "serve", "--root", data, "--listen", "127.0.0.1:0"],
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        url = server.stdout.readline().strip().removeprefix("listening on ")
        host, port = url.removeprefix("http://").split(":")

        tarballs = []
        for i in range(args.skills):
            name = f"bench-skill-{i:04d}"
            folder = work / "skills" / name
            folder.mkdir(parents=True)
            (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: Benchmark skill {i}.\n---\n# {name}\n\nDo step {i}.\n")
            out = work / "tarballs"
            out.mkdir(exist_ok=True)
            result = json.loads(subprocess.run([skillpkg, "pack", folder, "--version", "1.0.0", "-o", out, "--json", "-q"],
                                               capture_output=True, text=True, check=True).stdout)
            tarballs.append((name, Path(result["path"]).read_bytes()))

        connection = http.client.HTTPConnection(host, int(port))
        start = time.perf_counter()
        for name, tarball in tarballs:
            body, content_type = multipart({"name": name, "version": "1.0.0"}, tarball)
            connection.request("PUT", "/api/v1/skills", body, {"Authorization": f"Bearer {token}", "Content-Type": content_type})
            response = connection.getresponse()
            response.read()
            if response.status != 201:
                sys.exit(f"publish of {name} failed with {response.status}")
        elapsed = time.perf_counter() - start
        print(f"publishes:      {args.skills} in {elapsed:.2f} s = {args.skills / elapsed:.1f} publishes/s (sequential, one connection)")

        nginx_port = free_port()
        prefix = work / "nginx"
        prefix.mkdir()
        (prefix / "nginx.conf").write_text(f"""daemon off; master_process off; worker_processes 1;
pid {prefix}/nginx.pid; error_log {prefix}/error.log;
events {{ worker_connections 1024; }}
http {{ access_log off; default_type "text/plain; charset=utf-8";
  client_body_temp_path {prefix}/body; proxy_temp_path {prefix}/proxy; fastcgi_temp_path {prefix}/fastcgi;
  uwsgi_temp_path {prefix}/uwsgi; scgi_temp_path {prefix}/scgi;
  server {{ listen 127.0.0.1:{nginx_port}; root {data}/public;
    location / {{ add_header Cache-Control "public, max-age=60, must-revalidate"; }} }} }}
""")
        nginx_binary = shutil.which("nginx") or "/usr/sbin/nginx"
        nginx = subprocess.Popen([nginx_binary, "-c", prefix / "nginx.conf", "-p", prefix], stderr=subprocess.DEVNULL)
        wait_port(nginx_port)
        path = "/index/be/nc/bench-skill-0500" if args.skills > 500 else "/index/be/nc/bench-skill-0000"
        ours = wrk(f"{url}{path}", args.seconds)
        theirs = wrk(f"http://127.0.0.1:{nginx_port}{path}", args.seconds)
        print(f"reads (server): {ours:.0f} requests/s  (wrk -t2 -c32, one index file)")
        print(f"reads (nginx):  {theirs:.0f} requests/s  (same tree, one worker)")
        print(f"ratio:          skillpkg-registry serves {ours / theirs:.2f}x nginx's rate")
    finally:
        for process in (server, nginx):
            if process:
                process.kill()
                process.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
