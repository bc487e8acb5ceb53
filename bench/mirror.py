#!/usr/bin/env python3
"""Mirror benchmark: requests and bytes of a first and an incremental
`skillpkg mirror` run, and install time through the mirror against the origin.

Usage: python3 bench/mirror.py [--skills 100] [--new 5] [--runs 5]
           [--large-skills 20000] [--large-versions 5] [--work-dir DIR]
           [--skillpkg PATH --registry PATH]

Needs nginx. Builds release binaries (unless --skillpkg and --registry are
given), starts `skillpkg-registry serve` with
signed metadata (`keys init`), publishes N signed skills of about 40 KB
through it, and puts nginx (with an access log) in front of its `public/`
folder. Then:

  first        `skillpkg mirror --all` from that nginx into an empty folder
  incremental  the same after `--new` more publishes
  again        the same once more, with nothing new
  origin       cold `skillpkg install --locked` of all N skills from the server
  mirror       the same from the mirror, served by a second nginx

Requests and bytes are counted from nginx's access log (every request and
`$body_bytes_sent`), so they include the metadata and 404s; they are also
broken down by kind of file and status. Install times are medians of
`--runs` runs with an empty cache and target each time (--runs 0 skips
them).

With --large-skills N, the registry also holds N synthetic skills of
--large-versions versions each before the server's first start (index
files as publish_scale.py writes them, each line a copy of a real unsigned
one, and a real archive of each version, whose sha256 the line carries),
and the --new publishes are new versions (signed, `skillpkg publish`, four
at a time) of the first --new of those skills. The origin's tree is
hashed before and after them: the files they added or changed, by kind,
are what an incremental run needs to fetch, and are printed beside what it
did fetch. --work-dir puts everything (trees, mirror) there: /dev/shm
spares the disk the 100,000 archives.
"""

import argparse
import collections
import hashlib
import json
import os
import random
import shutil
import socket
import statistics
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from benchkit import binaries, template_line, write_synthetic



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


def kind(path: str) -> str:
    """The kind of a tree's file, by its path."""
    path = path.split("?")[0].lstrip("/")
    if path.startswith("index/"):
        return "index files"
    if path.startswith("dl/"):
        for suffix, label in ((".tgz", "archives"), (".minisig", "signatures"), (".intoto.jsonl", "provenance")):
            if path.endswith(suffix):
                return label
        return "dl/ other"
    if path.startswith("keys/"):
        return "keys files"
    if path.startswith("search"):
        return "search index"
    if path.startswith("meta/"):
        return "meta nodes"
    if path.split("/")[-1] in ("root.json", "snapshot.json", "timestamp.json") or path.endswith(".root.json"):
        return "snapshot etc."
    if path.startswith(".well-known/"):
        return "discovery index"
    return path


def reachable_meta(tree: Path) -> set[str]:
    """The Merkle nodes and bins (`meta/<sha256>.json`) that the tree's
    snapshot reaches."""
    snapshot = tree / "snapshot.json"
    if not snapshot.exists():
        return set()
    found = set()
    pending = list(json.loads(snapshot.read_text())["signed"].get("nodes", {}).values())
    while pending:
        path = f"meta/{pending.pop().removeprefix('sha256:')}.json"
        if path in found:
            continue
        found.add(path)
        node = json.loads((tree / path).read_text())
        if node.get("type") == "node":
            pending.extend(node.get("bins", {}).values())
    return found


def by_kind(log: Path) -> dict[str, collections.Counter]:
    """Requests of the access log by kind of file and status, and bytes."""
    result: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for line in log.read_text().splitlines():
        uri, status, sent = line.split()
        result[kind(uri)][status] += 1
        result[kind(uri)]["bytes"] += int(sent)
    return result


def tree_hashes(tree: Path) -> dict[str, str]:
    return {path.relative_to(tree).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in tree.rglob("*") if path.is_file() and ".skillpkg-tmp" not in path.name}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skills", type=int, default=100)
    parser.add_argument("--new", type=int, default=5)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--large-skills", type=int, default=0)
    parser.add_argument("--large-versions", type=int, default=5)
    parser.add_argument("--work-dir", type=Path)
    parser.add_argument("--skillpkg", type=Path)
    parser.add_argument("--registry", type=Path)
    args = parser.parse_args()
    skillpkg_path, registry_path = binaries(args.skillpkg, args.registry)
    skillpkg, registry = str(skillpkg_path), str(registry_path)
    work = Path(tempfile.mkdtemp(prefix="skillpkg-mirror-bench-", dir=args.work_dir))
    processes = []
    env = dict(os.environ, SKILLPKG_CONFIG_DIR=str(work / "config"), SKILLPKG_CACHE_DIR=str(work / "cache"),
               SKILLPKG_STATE_DIR=str(work / "state"))
    quiet = {"check": True, "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    try:
        data = work / "registry"
        if args.large_skills:
            template = template_line(Path(registry), work)
            started = time.perf_counter()
            write_synthetic(data / "public", template, args.large_skills, args.large_versions, archives=True)
            print(f"wrote {args.large_skills} index files and {args.large_skills * args.large_versions} archives "
                  f"in {time.perf_counter() - started:.1f} s")
        subprocess.run([registry, "keys", "generate", str(work / "root.key")], **quiet)
        subprocess.run([registry, "keys", "init", "--root", str(data), "--root-key", str(work / "root.key")], **quiet)
        token = subprocess.run([registry, "token", "create", "--root", str(data), "--user", "bench"], check=True, capture_output=True, text=True).stdout.strip()
        started = time.perf_counter()
        server = subprocess.Popen([registry, "serve", "--root", str(data), "--listen", "127.0.0.1:0"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        processes.append(server)
        origin = server.stdout.readline().strip().removeprefix("listening on ")
        print(f"server started in {time.perf_counter() - started:.1f} s")
        subprocess.run([skillpkg, "key", "generate", "--no-password", "-q"], env=env, **quiet)
        rng = random.Random(7)

        def publish(name: str, version: str = "1.0.0") -> None:
            folder = work / "skills" / f"{name}-{version}" / name
            (folder / "references").mkdir(parents=True)
            (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: Benchmark skill {name}.\nversion: {version}\n---\n# {name}\n" + "Do the thing.\n" * 400)
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
        first_kinds = by_kind(log)
        before = tree_hashes(data / "public")
        meta_before = reachable_meta(data / "public")
        started = time.perf_counter()
        if args.large_skills:
            with ThreadPoolExecutor(4) as pool:
                list(pool.map(lambda i: publish(f"scale-{i:06d}", "2.0.0"), range(args.new)))
        else:
            for i in range(args.new):
                publish(f"new-{i}")
        print(f"{args.new} publishes in {time.perf_counter() - started:.1f} s")
        time.sleep(2)  # the discovery index is written a moment after the last publish
        after = tree_hashes(data / "public")
        changed = collections.Counter(kind(path) for path, digest in after.items() if before.get(path) != digest)
        removed = collections.Counter(kind(path) for path in before if path not in after)
        meta_needed = len(reachable_meta(data / "public") - meta_before)
        second, second_requests, second_bytes = run_mirror()
        second_kinds = by_kind(log)
        third, third_requests, third_bytes = run_mirror()
        third_kinds = by_kind(log)

        total_skills = args.skills + args.large_skills
        new_kind = "new versions" if args.large_skills else "new skills"
        print(f"first mirror run, {total_skills} skills:      {first_requests:5d} requests, {first_bytes / 1e6:7.2f} MB, {first['seconds'] * 1000:7.1f} ms ({first['downloaded']} archives)")
        print(f"incremental run, {args.new} {new_kind}:      {second_requests:5d} requests, {second_bytes / 1e6:7.2f} MB, {second['seconds'] * 1000:7.1f} ms ({second['downloaded']} archives)")
        print(f"files the {args.new} publishes added or changed in the origin's tree, and what the incremental run fetched:")
        print(f"  {'':<18} {'changed':>8} {'requests':>9} {'200':>6} {'304':>6} {'404':>6} {'bytes':>11}")
        for label in sorted(set(changed) | set(second_kinds), key=lambda k: -second_kinds[k]["bytes"]):
            got = second_kinds.get(label, collections.Counter())
            requests = sum(value for key, value in got.items() if key != "bytes")
            print(f"  {label:<18} {changed[label]:>8} {requests:>9} {got['200']:>6} {got['304']:>6} {got['404']:>6} {got['bytes']:>11,}")
        print(f"  {'total':<18} {sum(changed.values()):>8} {second_requests:>9} {'':>6} {'':>6} {'':>6} {second_bytes:>11,}"
              + (f"  (removed: {dict(removed)})" if removed else ""))
        print(f"  of the {changed['meta nodes']} meta nodes written, {meta_needed} are reached from the last snapshot "
              f"and were not from the first run's: what a mirror needs")
        where = ", ".join(f"{label} {sum(v for k, v in counter.items() if k != 'bytes')} "
                          f"({'/'.join(f'{v} {k}' for k, v in counter.items() if k != 'bytes')}, {counter['bytes']:,} bytes)"
                          for label, counter in sorted(third_kinds.items(), key=lambda item: -item[1]["bytes"]))
        print(f"a run with nothing new after it: {third_requests} requests, {third_bytes / 1e6:.2f} MB, "
              f"{third['seconds'] * 1000:.1f} ms ({where})")
        first_404 = sum(counter["404"] for counter in first_kinds.values())
        if first_404:
            where = ", ".join(f"{label} {counter['404']}" for label, counter in first_kinds.items() if counter["404"])
            print(f"first run 404s: {first_404} ({where})")

        if args.runs == 0:
            return
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
