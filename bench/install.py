#!/usr/bin/env python3
"""Install benchmark: 200 skills from nginx, this build against a baseline and `cp -r`.

Cold and warm installs, each timed next to a `cp -r` of the same folders,
for this tree's build and, optionally, a baseline build in the same runs;
no-op installs; resolution against 10,000 skills; optionally the system
calls of one cold install.

Usage: python3 bench/install.py [--runs 10] [--baseline-skillpkg PATH]
           [--skillpkg PATH] [--strace] [--strace-dir DIR] [--json]

Needs nginx (and strace for --strace). Builds the release binaries of this
tree, packs and signs 200 skills of about 40 KB (five files each), builds
their registry with `skillpkg-registry build` and serves it with nginx on
loopback. Each binary under test (this tree's, or --skillpkg PATH, and the
--baseline-skillpkg PATH, such as the build of an older revision) gets a
project of its own wanting all 200 skills into one target, locked by that
binary, and cache, config and state folders of its own.

Each run times, for every binary, a cold install (empty cache and target:
download, verify, unpack) and then a warm one (cache filled, target empty),
and next to each install one `cp -r` of the 200 unpacked skill folders into
a fresh folder. The order rotates: the binaries take turns going first, and
the copy goes before its install in half the runs and after it in the
others, so load from other work falls on all alike. What a command wrote is
removed right after it, and the disk is synced before the next one, both
untimed, so no command pays for writing back what another left behind.

Reported: the median of each; its ratio to the median of the copies paired
with it, and the median of the per-run ratios; and current/baseline, the
ratio of the medians and the median and quartiles of the per-run ratios.
With the same binary as both, current/baseline shows the noise.

Also timed, interleaved between the binaries: a no-op install (everything
in place) and `skillpkg lock` resolving 100 skills against a file:// index
of 10,000 skills with dependencies (index files only).

--strace counts the system calls of one cold install of each binary:
mkdir/mkdirat and those failing with EEXIST, failed opens, failed stats.
"""

import argparse
import collections
import concurrent.futures
import functools
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
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SKILLS = 200


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(command, **kwargs) -> None:
    """Runs a command, exiting with its error output if it fails."""
    result = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, **kwargs)
    if result.returncode != 0:
        sys.exit(f"{' '.join(map(str, command))} failed with status {result.returncode}:\n{result.stderr}")


def nothing() -> None:
    pass


# Seconds spent around the timed commands, untimed: removing what they
# wrote (`before` and `after` them) and syncing the disk.
UNTIMED: collections.Counter = collections.Counter()


def timed(command, before=nothing, after=nothing, sync=False, **kwargs) -> float:
    """Times the command; `before` it and `after` it are not timed, nor is
    the sync of the disk right before it."""
    mark = time.perf_counter()
    before()
    if sync:
        synced = time.perf_counter()
        os.sync()
        UNTIMED["sync"] += time.perf_counter() - synced
    start = time.perf_counter()
    run(command, **kwargs)
    elapsed = time.perf_counter() - start
    after()
    UNTIMED["around"] += time.perf_counter() - mark - elapsed
    return elapsed


@dataclass
class Side:
    """One skillpkg binary under test, with its own project and cache, config
    and state folders."""

    label: str
    binary: str
    project: Path
    env: dict
    times: dict = field(default_factory=lambda: collections.defaultdict(list))

    @property
    def target(self) -> Path:
        return self.project / ".claude"

    @property
    def cache(self) -> Path:
        return Path(self.env["SKILLPKG_CACHE_DIR"])

    def empty_all(self) -> None:
        shutil.rmtree(self.target, ignore_errors=True)
        shutil.rmtree(self.cache, ignore_errors=True)

    def empty_target(self) -> None:
        shutil.rmtree(self.target, ignore_errors=True)

    def install(self) -> list:
        return [self.binary, "install", "-q"]


def folders(work: Path, label: str) -> dict:
    """An environment whose config, cache and state folders are in `work`."""
    return dict(os.environ, **{name: str(work / f"{kind}-{label}") for name, kind in (
        ("SKILLPKG_CONFIG_DIR", "config"), ("SKILLPKG_CACHE_DIR", "cache"), ("SKILLPKG_STATE_DIR", "state"))})


def make_skills(skillpkg: str, registry: str, work: Path, env: dict, rng: random.Random) -> tuple[Path, Path]:
    """Writes, packs and signs the skills; returns the unpacked folders and the registry tree."""
    run([skillpkg, "key", "generate", "--no-password", "-q"], env=env)
    key = json.loads(subprocess.run([skillpkg, "key", "show", "--json"], env=env, check=True, capture_output=True, text=True).stdout)
    archives, keys = work / "archives", work / "keys-tree" / "keys"
    archives.mkdir()
    keys.mkdir(parents=True)
    unpacked = work / "unpacked"
    for i in range(SKILLS):
        name = f"bench-{i:03d}"
        folder = unpacked / name
        (folder / "references").mkdir(parents=True)
        (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: Benchmark skill {i}.\nversion: 1.0.0\n---\n# {name}\n" + "Do the thing.\n" * 400)
        for part in range(4):
            words = " ".join(rng.choice(["alpha", "beta", "gamma", "delta", "skill", "agent", "file"]) for _ in range(1500))
            (folder / "references" / f"part-{part}.md").write_text(words)
        (keys / f"{name}.json").write_text(json.dumps({"v": 1, "keys": [{"id": key["key_id"], "key": key["public_key"], "added": "2026-11-22T00:00:00Z"}]}))

    def pack_and_sign(folder: Path) -> None:
        run([skillpkg, "pack", str(folder), "-o", str(archives), "-q"], env=env)
        run([skillpkg, "sign", str(archives / f"{folder.name}-1.0.0.tgz"), "-q"], env=env)

    with concurrent.futures.ThreadPoolExecutor(os.cpu_count()) as pool:
        list(pool.map(pack_and_sign, sorted(unpacked.iterdir())))
    tree = work / "tree"
    run([registry, "build", "--from", str(archives), "--out", str(tree), "--keys-from", str(work / "keys-tree")])
    return unpacked, tree


def start_nginx(work: Path, tree: Path) -> tuple[subprocess.Popen, int]:
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
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            return nginx, port
        except OSError:
            time.sleep(0.05)
    sys.exit("nginx did not start listening")


def make_index(folder: Path, rng: random.Random) -> Path:
    """A file:// registry of 10,000 skills with dependencies (index files only)."""
    big = folder / "big"
    from_tree = big / "index"
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
    return big


# One line of `strace -f -o FILE`: "PID name(args) = result [ERRNO (text)]",
# or a call split by another thread: "PID name(args <unfinished ...>" and
# later "PID <... name resumed>...) = result".
STRACE_CALL = re.compile(r"^\d+\s+(?:<\.\.\. (\w+) resumed>|(\w+)\()")
STRACE_RESULT = re.compile(r"= (-?\d+|0x[0-9a-f]+|\?)(?: (E[A-Z0-9]+))?")
MKDIRS = ("mkdir", "mkdirat")
STATS = ("statx", "newfstatat", "lstat", "stat", "fstatat64")


def count_syscalls(trace: Path) -> dict:
    calls: collections.Counter = collections.Counter()
    failures: collections.Counter = collections.Counter()
    for line in trace.read_text(errors="replace").splitlines():
        match = STRACE_CALL.match(line)
        if not match or line.endswith("<unfinished ...>"):
            continue
        name = match.group(1) or match.group(2)
        calls[name] += 1
        result = STRACE_RESULT.search(line, match.end())
        if result and result.group(2):
            failures[(name, result.group(2))] += 1

    def failed(names, errno=None) -> int:
        return sum(n for (name, err), n in failures.items() if name in names and (errno is None or err == errno))

    return {
        "total": sum(calls.values()),
        "mkdir": sum(calls[name] for name in MKDIRS),
        "mkdir_eexist": failed(MKDIRS, "EEXIST"),
        "openat": calls["openat"] + calls["open"],
        "openat_enoent": failed(("openat", "open"), "ENOENT"),
        "openat_failed": failed(("openat", "open")),
        "stat": sum(calls[name] for name in STATS),
        "stat_failed": failed(STATS),
        "by_call": dict(calls.most_common()),
        "failed_by_call": {f"{name} {errno}": n for (name, errno), n in failures.most_common()},
    }


def strace_cold_install(side: Side, folder: Path) -> dict:
    side.empty_all()
    trace = folder / f"strace-{side.label}.txt"
    run(["strace", "-f", "-qq", "-o", str(trace), *side.install()], cwd=side.project, env=side.env)
    return count_syscalls(trace)


def rotated(sides: list, index: int) -> list:
    """The binaries in the order of run `index`: each goes first in turn."""
    shift = index % len(sides)
    return sides[shift:] + sides[:shift]


def summary(times: list, copies: list) -> dict:
    median = statistics.median(times)
    copy = statistics.median(copies)
    return {
        "median_ms": median * 1000,
        "min_ms": min(times) * 1000,
        "max_ms": max(times) * 1000,
        "paired_cp_median_ms": copy * 1000,
        "ratio_to_cp": median / copy,
        "per_run_ratio_to_cp": statistics.median(t / c for t, c in zip(times, copies)),
        "times_ms": [t * 1000 for t in times],
        "paired_cp_ms": [c * 1000 for c in copies],
    }


def versus(current: list, baseline: list) -> dict:
    """current/baseline: the ratio of the medians, and the median and
    quartiles of the per-run ratios (their spread is the noise)."""
    per_run = [c / b for c, b in zip(current, baseline)]
    figures = {
        "ratio": statistics.median(current) / statistics.median(baseline),
        "per_run_ratio": statistics.median(per_run),
        "per_run_quartiles": statistics.quantiles(per_run, n=4, method="inclusive") if len(per_run) > 1 else per_run * 3,
    }
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, metavar="N", help="timed runs of each command (default 10)")
    parser.add_argument("--skillpkg", type=Path, metavar="PATH", help="the skillpkg binary to time (default: this tree's release build)")
    parser.add_argument("--baseline-skillpkg", type=Path, metavar="PATH", help="a second skillpkg binary, such as an older revision's, timed in the same runs")
    parser.add_argument("--strace", action="store_true", help="count the system calls of one cold install of each binary")
    parser.add_argument("--strace-dir", type=Path, metavar="DIR", help="with --strace: keep the traces in this folder")
    parser.add_argument("--work-dir", type=Path, metavar="DIR", help="where to make the skills, registry, projects and caches (default: the system's temporary folder)")
    parser.add_argument("--no-sync", action="store_true", help="do not sync the disk before each timed command")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    if args.strace_dir:
        args.strace = True
    if args.strace and not shutil.which("strace"):
        sys.exit("--strace needs strace (on Debian and Ubuntu: apt-get install strace)")
    if not shutil.which("nginx") and not Path("/usr/sbin/nginx").exists():
        sys.exit("this benchmark serves the registry with nginx: install it (apt-get install nginx)")

    run(["cargo", "build", "--release", "--quiet", "-p", "skillpkg", "-p", "skillpkg-registry"], cwd=ROOT)
    skillpkg = str(args.skillpkg.resolve()) if args.skillpkg else str(ROOT / "target/release/skillpkg")
    registry = str(ROOT / "target/release/skillpkg-registry")
    binaries = [("current", skillpkg)]
    if args.baseline_skillpkg:
        if not os.access(args.baseline_skillpkg, os.X_OK):
            sys.exit(f"--baseline-skillpkg {args.baseline_skillpkg} is not an executable file")
        binaries.append(("baseline", str(args.baseline_skillpkg.resolve())))
    sync = not args.no_sync
    started = time.perf_counter()
    work = Path(tempfile.mkdtemp(prefix="skillpkg-install-bench-", dir=args.work_dir))
    nginx = scratch = None
    try:
        rng = random.Random(7)
        env = folders(work, "publisher")
        unpacked, tree = make_skills(skillpkg, registry, work, env, rng)
        nginx, port = start_nginx(work, tree)

        wanted = "".join(f'bench-{i:03d} = "1"\n' for i in range(SKILLS))
        sides = []
        for label, binary in binaries:
            project = work / f"project-{label}"
            project.mkdir()
            (project / "skills.toml").write_text(f'[registry]\nurl = "http://127.0.0.1:{port}/"\n\n[install]\ntargets = ["claude"]\n\n[skills]\n{wanted}')
            side_env = folders(work, label)
            run([binary, "lock", "-q"], cwd=project, env=side_env)
            sides.append(Side(label, binary, project, side_env))

        copy_target = work / "copy"
        copy = ["cp", "-r", str(unpacked), str(copy_target)]

        def empty_copy() -> None:
            shutil.rmtree(copy_target, ignore_errors=True)

        def copied() -> float:
            return timed(copy, empty_copy, empty_copy, sync)

        # One untimed round: the binaries, the sources and the registry's
        # files into the page cache.
        copied()
        for side in sides:
            timed(side.install(), side.empty_all, side.empty_target, sync, cwd=side.project, env=side.env)

        setup_done = time.perf_counter()
        UNTIMED.clear()
        for index in range(args.runs):
            copy_first = (index // len(sides)) % 2 == 0
            for kind in ("cold", "warm"):
                for side in rotated(sides, index):
                    # What a command wrote is removed right after it, while
                    # most of it is still only in memory: on the development
                    # machine (ext4 with online discard) removing it once
                    # written back took several times as long.
                    before = side.empty_all if kind == "cold" else side.empty_target
                    if copy_first:
                        side.times[f"{kind}-cp"].append(copied())
                    side.times[kind].append(timed(side.install(), before, side.empty_target, sync, cwd=side.project, env=side.env))
                    if not copy_first:
                        side.times[f"{kind}-cp"].append(copied())
            print(f"run {index + 1} of {args.runs} done", file=sys.stderr)
        runs_done = time.perf_counter()
        runs_untimed = UNTIMED.copy()

        # No-op installs, everything in place.
        for side in sides:
            run(side.install(), cwd=side.project, env=side.env)
        for index in range(max(args.runs, 10) * 2):
            for side in rotated(sides, index):
                side.times["noop"].append(timed(side.install(), cwd=side.project, env=side.env))

        # Resolution reads the index through the page cache wherever it is,
        # so it goes to memory when there is a tmpfs: writing and removing
        # 10,000 files on a slow disk takes longer than all the resolves.
        scratch = Path(tempfile.mkdtemp(prefix="skillpkg-install-bench-", dir="/dev/shm" if os.access("/dev/shm", os.W_OK) else work))
        big = make_index(scratch, rng)
        manifest = "".join(f'r-{i:05d} = {{ version = "1", allow-unsigned = true }}\n' for i in range(9_900, 10_000))
        locked = {}
        for side in sides:
            folder = work / f"resolve-{side.label}"
            folder.mkdir()
            (folder / "skills.toml").write_text(f'[registry]\nurl = "{big}"\n\n[install]\ntargets = ["claude"]\n\n[skills]\n{manifest}')
        for index in range(args.runs):
            for side in rotated(sides, index):
                lock = work / f"resolve-{side.label}" / "skills.lock"
                side.times["resolve"].append(timed([side.binary, "lock", "-q", "--allow-unsigned"], functools.partial(lock.unlink, missing_ok=True), cwd=lock.parent, env=side.env))
                locked[side.label] = sum(1 for line in lock.read_text().splitlines() if line == "[[skill]]")
        traces = {}
        if args.strace:
            keep = args.strace_dir or work
            keep.mkdir(parents=True, exist_ok=True)
            traces = {side.label: strace_cold_install(side, keep) for side in sides}
        finished = time.perf_counter()
    finally:
        if nginx:
            nginx.kill()
            nginx.wait()
        shutil.rmtree(work, ignore_errors=True)
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)

    all_copies = [t for side in sides for kind in ("cold", "warm") for t in side.times[f"{kind}-cp"]]
    report = {
        "skills": SKILLS,
        "runs": args.runs,
        "synced": sync,
        "binaries": {side.label: side.binary for side in sides},
        "cp_median_ms": statistics.median(all_copies) * 1000,
        "cp_min_ms": min(all_copies) * 1000,
        "cp_max_ms": max(all_copies) * 1000,
        "seconds": {
            "setup": setup_done - started,
            "runs": runs_done - setup_done,
            "timed_in_runs": sum(sum(side.times[kind]) for side in sides for kind in ("cold", "warm", "cold-cp", "warm-cp")),
            "untimed_in_runs": runs_untimed["around"],
            "syncing_in_runs": runs_untimed["sync"],
            "total": finished - started,
        },
    }
    for kind in ("cold", "warm"):
        report[kind] = {side.label: summary(side.times[kind], side.times[f"{kind}-cp"]) for side in sides}
        if len(sides) == 2:
            report[kind]["current_over_baseline"] = versus(sides[0].times[kind], sides[1].times[kind])
    for kind in ("noop", "resolve"):
        report[kind] = {side.label: {"median_ms": statistics.median(side.times[kind]) * 1000, "runs": len(side.times[kind])} for side in sides}
        if len(sides) == 2:
            report[kind]["current_over_baseline"] = versus(sides[0].times[kind], sides[1].times[kind])
    report["resolve_locked"] = locked
    if traces:
        report["strace"] = traces

    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_report(report)


def print_report(report: dict) -> None:
    labels = list(report["binaries"])
    runs = report["runs"]
    print(f"{report['skills']} skills, {runs} runs, each install next to a `cp -r` of the same folders"
          f"{'' if report['synced'] else ' (no sync between commands)'}")
    for label, binary in report["binaries"].items():
        print(f"  {label}: {binary}")
    print(f"\ncp -r of the {report['skills']} folders: median {report['cp_median_ms']:.1f} ms of {runs * 2 * len(labels)}"
          f" (min {report['cp_min_ms']:.1f}, max {report['cp_max_ms']:.1f})")
    print(f"\n{'':<16}{'median':>10}{'min':>10}{'max':>10}{'paired cp':>11}{'x cp -r':>9}{'per-run':>9}")
    for kind in ("cold", "warm"):
        for label in labels:
            s = report[kind][label]
            print(f"{kind + ', ' + label:<16}{s['median_ms']:>7.1f} ms{s['min_ms']:>7.1f} ms{s['max_ms']:>7.1f} ms"
                  f"{s['paired_cp_median_ms']:>8.1f} ms{s['ratio_to_cp']:>8.2f}x{s['per_run_ratio_to_cp']:>8.2f}x")
    print("  (x cp -r: median install / median of its paired copies; per-run: median of install/copy in each run)")
    print("  targets: cold under 1,000 ms; warm within 2x cp -r")
    for kind, what in (("noop", "no-op install"), ("resolve", "resolve 100 of 10,000")):
        figures = ", ".join(f"{label} {report[kind][label]['median_ms']:.1f} ms" for label in report["binaries"])
        runs_of = report[kind][labels[0]]["runs"]
        extra = "  (target under 20 ms)" if kind == "noop" else f"  ({report['resolve_locked'][labels[0]]} skills locked)"
        print(f"\n{what}: {figures}, medians of {runs_of}{extra}")
    if len(labels) == 2:
        print("\ncurrent / baseline:")
        for kind in ("cold", "warm", "noop", "resolve"):
            v = report[kind]["current_over_baseline"]
            low, _, high = v["per_run_quartiles"]
            print(f"  {kind:<8} {v['ratio']:.3f}x ratio of medians; per-run ratios: median {v['per_run_ratio']:.3f}x, quartiles {low:.3f}x - {high:.3f}x")
    if "strace" in report:
        print("\nsystem calls of one cold install (strace -f):")
        for label, t in report["strace"].items():
            print(f"  {label}: {t['total']} calls; mkdir/mkdirat {t['mkdir']} ({t['mkdir_eexist']} EEXIST);"
                  f" openat {t['openat']} ({t['openat_enoent']} ENOENT, {t['openat_failed']} failed in all);"
                  f" stats {t['stat']} ({t['stat_failed']} failed)")
            top = ", ".join(f"{name} {n}" for name, n in list(t["by_call"].items())[:10])
            print(f"    most made: {top}")
            print(f"    failed: {', '.join(f'{k} {n}' for k, n in t['failed_by_call'].items())}")
    s = report["seconds"]
    print(f"\ntook {s['total']:.0f} s: setup {s['setup']:.0f} s, the runs {s['runs']:.0f} s (timed {s['timed_in_runs']:.0f} s;"
          f" removing what they wrote and syncing between them {s['untimed_in_runs']:.0f} s, of which syncing {s['syncing_in_runs']:.0f} s)")


if __name__ == "__main__":
    main()
