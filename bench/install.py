#!/usr/bin/env python3
"""Install benchmark: cold, warm and no-op installs of 200 skills from nginx,
resolution against 10,000 skills, and `cp -r` of the same folders for scale.

Usage: python3 bench/install.py [--runs 5]

Needs nginx. Builds release binaries, packs and signs 200 skills of about
40 KB (five files each), builds their registry with `skillpkg-registry build`
and serves it with nginx on loopback, locks a project that wants all 200
(into one target), then times, as medians of N runs:

  cold    `skillpkg install`, empty cache and target (download, verify, install)
  warm    `skillpkg install`, cache filled, target empty
  no-op   `skillpkg install`, everything in place
  cp -r   copying the 200 unpacked skill folders (the baseline)
  resolve `skillpkg lock` against a file:// index of 10,000 skills with
          dependencies (index files only), for a manifest of 100 of them
"""

import argparse
import json
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def timed(command, runs, prepare=None, **kwargs) -> float:
    times = []
    for _ in range(runs):
        if prepare:
            prepare()
        start = time.perf_counter()
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, **kwargs)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    subprocess.run(["cargo", "build", "--release", "--quiet", "--bins"], cwd=ROOT, check=True)
    skillpkg = str(ROOT / "target/release/skillpkg")
    registry = str(ROOT / "target/release/skillpkg-registry")
    work = Path(tempfile.mkdtemp(prefix="skillpkg-install-bench-"))
    nginx = None
    env = dict(os.environ, SKILLPKG_CONFIG_DIR=str(work / "config"), SKILLPKG_CACHE_DIR=str(work / "cache"))
    try:
        subprocess.run([skillpkg, "key", "generate", "--no-password", "-q"], env=env, check=True, stdout=subprocess.DEVNULL)
        key = json.loads(subprocess.run([skillpkg, "key", "show", "--json"], env=env, check=True, capture_output=True, text=True).stdout)
        archives, keys = work / "archives", work / "keys-tree" / "keys"
        archives.mkdir()
        keys.mkdir(parents=True)
        rng = random.Random(7)
        unpacked = work / "unpacked"
        for i in range(200):
            name = f"bench-{i:03d}"
            folder = unpacked / name
            (folder / "references").mkdir(parents=True)
            (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: Benchmark skill {i}.\nversion: 1.0.0\n---\n# {name}\n" + "Do the thing.\n" * 400)
            for part in range(4):
                words = " ".join(rng.choice(["alpha", "beta", "gamma", "delta", "skill", "agent", "file"]) for _ in range(1500))
                (folder / "references" / f"part-{part}.md").write_text(words)
            subprocess.run([skillpkg, "pack", str(folder), "-o", str(archives), "-q"], env=env, check=True, stdout=subprocess.DEVNULL)
            subprocess.run([skillpkg, "sign", str(archives / f"{name}-1.0.0.tgz"), "-q"], env=env, check=True, stdout=subprocess.DEVNULL)
            (keys / f"{name}.json").write_text(json.dumps({"v": 1, "keys": [{"id": key["key_id"], "key": key["public_key"], "added": "2026-11-22T00:00:00Z"}]}))
        tree = work / "tree"
        subprocess.run([registry, "build", "--from", str(archives), "--out", str(tree), "--keys-from", str(work / "keys-tree")], check=True, stdout=subprocess.DEVNULL)

        port = free_port()
        prefix = work / "nginx"
        prefix.mkdir()
        (prefix / "nginx.conf").write_text(f"""daemon off; master_process off; worker_processes 1;
pid {prefix}/nginx.pid; error_log {prefix}/error.log;
events {{ worker_connections 1024; }}
http {{ access_log off; default_type application/octet-stream;
  client_body_temp_path {prefix}/body; proxy_temp_path {prefix}/proxy; fastcgi_temp_path {prefix}/fastcgi;
  uwsgi_temp_path {prefix}/uwsgi; scgi_temp_path {prefix}/scgi;
  server {{ listen 127.0.0.1:{port}; root {tree}; }} }}
""")
        nginx = subprocess.Popen([shutil.which("nginx") or "/usr/sbin/nginx", "-c", str(prefix / "nginx.conf"), "-p", str(prefix)], stderr=subprocess.DEVNULL)
        time.sleep(0.3)

        project = work / "project"
        project.mkdir()
        skills = "".join(f'bench-{i:03d} = "1"\n' for i in range(200))
        (project / "skills.toml").write_text(f'[registry]\nurl = "http://127.0.0.1:{port}/"\n\n[install]\ntargets = ["claude"]\n\n[skills]\n{skills}')
        subprocess.run([skillpkg, "lock", "-q"], cwd=project, env=env, check=True, stdout=subprocess.DEVNULL)
        target = project / ".claude"

        def empty_all():
            shutil.rmtree(target, ignore_errors=True)
            shutil.rmtree(work / "cache", ignore_errors=True)

        def empty_target():
            shutil.rmtree(target, ignore_errors=True)

        install = [skillpkg, "install", "-q"]
        cold = timed(install, args.runs, empty_all, cwd=project, env=env)
        warm = timed(install, args.runs, empty_target, cwd=project, env=env)
        noop = timed(install, max(args.runs, 10), None, cwd=project, env=env)
        copy_target = work / "copy"
        copy = timed(["cp", "-r", str(unpacked), str(copy_target)], args.runs, lambda: shutil.rmtree(copy_target, ignore_errors=True))

        # Resolution against 10,000 skills (index files only).
        big = work / "big"
        from_tree = big / "index"
        records = {}
        for i in range(10_000):
            name = f"r-{i:05d}"
            deps = [] if i < 100 else [{"name": f"r-{rng.randrange(0, i):05d}", "req": "^1"}]
            lines = []
            for minor in range(3):
                lines.append(json.dumps({"v": 1, "name": name, "vers": f"1.{minor}.0", "cksum": "sha256:" + "0" * 64, "size": 1, "tree": "h1:x", "files": 1,
                                         "deps": deps, "description": "x", "yanked": False, "signer": None, "published": "2026-11-22T00:00:00Z"}, separators=(",", ":")))
            path = from_tree / name[:2] / name[2:4] / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("\n".join(lines) + "\n")
        (big / "config.json").write_text(json.dumps({"v": 1, "dl": "dl/{name}/{version}/{name}-{version}.tgz", "api": None, "auth-required": False, "max-skill-bytes": 8388608}))
        resolve_project = work / "resolve"
        resolve_project.mkdir()
        wanted = "".join(f'r-{i:05d} = {{ version = "1", allow-unsigned = true }}\n' for i in range(9_900, 10_000))
        (resolve_project / "skills.toml").write_text(f'[registry]\nurl = "{big}"\n\n[install]\ntargets = ["claude"]\n\n[skills]\n{wanted}')
        resolve = timed([skillpkg, "lock", "-q", "--allow-unsigned"], args.runs, lambda: (resolve_project / "skills.lock").unlink(missing_ok=True), cwd=resolve_project, env=env)
        locked = sum(1 for line in (resolve_project / "skills.lock").read_text().splitlines() if line == "[[skill]]")

        print(f"cold install, 200 skills:  {cold * 1000:7.1f} ms  (target < 1000 ms)")
        print(f"warm install, 200 skills:  {warm * 1000:7.1f} ms  ({warm / copy:.2f}x cp -r; target within 2x)")
        print(f"no-op install:             {noop * 1000:7.1f} ms  (target < 20 ms)")
        print(f"cp -r of the 200 folders:  {copy * 1000:7.1f} ms  (baseline)")
        print(f"resolve 100 of 10,000:     {resolve * 1000:7.1f} ms  ({locked} skills locked)")
    finally:
        if nginx:
            nginx.kill()
            nginx.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
