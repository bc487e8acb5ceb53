#!/usr/bin/env python3
"""Mirror benchmark: requests and bytes of a first and an incremental
`skillpkg mirror` run, and install time through the mirror against the origin.

Usage: python3 bench/mirror.py [--skills 100] [--new 5] [--runs 5]

Needs nginx. Builds release binaries, starts `skillpkg-registry serve` with
signed metadata (`keys init`), publishes N signed skills of about 40 KB
through it, and puts nginx (with an access log) in front of its `public/`
folder. Then:

  first        `skillpkg mirror --all` from that nginx into an empty folder
  incremental  the same after `--new` more publishes
  origin       cold `skillpkg install --locked` of all N skills from the server
  mirror       the same from the mirror, served by a second nginx

Requests and bytes are counted from nginx's access log (every request and
`$body_bytes_sent`), so they include the metadata and 404s. Install times are
medians of `--runs` runs with an empty cache and target each time.
"""

import argparse
import json
import os
import random
import shutil
import socket
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def nginx(prefix: Path, root: Path) -> tuple[subprocess.Popen, str, Path]:
    prefix.mkdir(parents=True)
    port = free_port()
    log = prefix / "access.log"
    (prefix / "nginx.conf").write_text(f"""daemon off; master_process off; worker_processes 1;
pid {prefix}/nginx.pid; error_log {prefix}/error.log;
events {{ worker_connections 1024; }}
http {{ log_format counted '$request_uri $status $body_bytes_sent';
  access_log {log} counted; default_type application/octet-stream;
  client_body_temp_path {prefix}/body; proxy_temp_path {prefix}/proxy; fastcgi_temp_path {prefix}/fastcgi;
  uwsgi_temp_path {prefix}/uwsgi; scgi_temp_path {prefix}/scgi;
  server {{ listen 127.0.0.1:{port}; root {root}; }} }}
""")
    process = subprocess.Popen([shutil.which("nginx") or "/usr/sbin/nginx", "-c", str(prefix / "nginx.conf"), "-p", str(prefix)], stderr=subprocess.DEVNULL)
    time.sleep(0.3)
    return process, f"http://127.0.0.1:{port}/", log


def counted(log: Path) -> tuple[int, int]:
    lines = log.read_text().splitlines() if log.exists() else []
    return len(lines), sum(int(line.split()[-1]) for line in lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skills", type=int, default=100)
    parser.add_argument("--new", type=int, default=5)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    subprocess.run(["cargo", "build", "--release", "--quiet", "--bins"], cwd=ROOT, check=True)
    skillpkg = str(ROOT / "target/release/skillpkg")
    registry = str(ROOT / "target/release/skillpkg-registry")
    work = Path(tempfile.mkdtemp(prefix="skillpkg-mirror-bench-"))
    processes = []
    env = dict(os.environ, SKILLPKG_CONFIG_DIR=str(work / "config"), SKILLPKG_CACHE_DIR=str(work / "cache"),
               SKILLPKG_STATE_DIR=str(work / "state"))
    quiet = {"check": True, "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    try:
        data = work / "registry"
        subprocess.run([registry, "keys", "generate", str(work / "root.key")], **quiet)
        subprocess.run([registry, "keys", "init", "--root", str(data), "--root-key", str(work / "root.key")], **quiet)
        token = subprocess.run([registry, "token", "create", "--root", str(data), "--user", "bench"], check=True, capture_output=True, text=True).stdout.strip()
        server = subprocess.Popen([registry, "serve", "--root", str(data), "--listen", "127.0.0.1:0"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        processes.append(server)
        origin = server.stdout.readline().strip().removeprefix("listening on ")
        subprocess.run([skillpkg, "key", "generate", "--no-password", "-q"], env=env, **quiet)
        rng = random.Random(7)

        def publish(name: str) -> None:
            folder = work / "skills" / name
            (folder / "references").mkdir(parents=True)
            (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: Benchmark skill {name}.\nversion: 1.0.0\n---\n# {name}\n" + "Do the thing.\n" * 400)
            for part in range(4):
                words = " ".join(rng.choice(["alpha", "beta", "gamma", "delta", "skill", "agent", "file"]) for _ in range(1500))
                (folder / "references" / f"part-{part}.md").write_text(words)
            subprocess.run([skillpkg, "publish", str(folder), "--registry", origin, "--token", token, "-q"], env=env, **quiet)

        names = [f"bench-{i:03d}" for i in range(args.skills)]
        for name in names:
            publish(name)
        process, static_origin, log = nginx(work / "nginx-origin", data / "public")
        processes.append(process)

        mirror = work / "mirror"
        mirror_env = dict(env, SKILLPKG_STATE_DIR=str(work / "mirror-state"))

        def run_mirror() -> tuple[dict, int, int]:
            log.write_text("")
            start = time.perf_counter()
            report = json.loads(subprocess.run([skillpkg, "mirror", static_origin, str(mirror), "--all", "--json"], env=mirror_env, check=True, capture_output=True, text=True).stdout)
            report["seconds"] = time.perf_counter() - start
            time.sleep(0.2)
            requests, sent = counted(log)
            return report, requests, sent

        first, first_requests, first_bytes = run_mirror()
        for i in range(args.new):
            publish(f"new-{i}")
        second, second_requests, second_bytes = run_mirror()

        process, mirror_url, _ = nginx(work / "nginx-mirror", mirror)
        processes.append(process)
        project = work / "project"
        project.mkdir()
        skills = "".join(f'{name} = "1"\n' for name in names)
        (project / "skills.toml").write_text(f'[registry]\nurl = "{origin}/"\n\n[install]\ntargets = ["claude"]\n\n[skills]\n{skills}')
        subprocess.run([skillpkg, "lock", "-q"], cwd=project, env=env, **quiet)

        def timed(registry_url: str) -> float:
            times = []
            for _ in range(args.runs):
                shutil.rmtree(project / ".claude", ignore_errors=True)
                shutil.rmtree(work / "cache", ignore_errors=True)
                start = time.perf_counter()
                subprocess.run([skillpkg, "install", "--locked", "-q", "--registry", registry_url], cwd=project, env=env, **quiet)
                times.append(time.perf_counter() - start)
            return statistics.median(times)

        # Interleaved, so both see the same machine.
        via_origin = timed(origin)
        via_mirror = timed(mirror_url)
        via_origin = min(via_origin, timed(origin))
        via_mirror = min(via_mirror, timed(mirror_url))

        print(f"first mirror run, {args.skills} skills:      {first_requests:5d} requests, {first_bytes / 1e6:7.2f} MB, {first['seconds'] * 1000:7.1f} ms ({first['downloaded']} archives)")
        print(f"incremental run, {args.new} new skills:      {second_requests:5d} requests, {second_bytes / 1e6:7.2f} MB, {second['seconds'] * 1000:7.1f} ms ({second['downloaded']} archives)")
        print(f"incremental / first:                  {second_requests / first_requests:.3f} of the requests, {second_bytes / first_bytes:.3f} of the bytes")
        print(f"cold install of {args.skills} skills via origin: {via_origin * 1000:7.1f} ms (skillpkg-registry serve)")
        print(f"cold install of {args.skills} skills via mirror: {via_mirror * 1000:7.1f} ms (nginx)  ratio {via_mirror / via_origin:.2f}")
    finally:
        for process in processes:
            process.kill()
            process.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
