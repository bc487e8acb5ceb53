"""Fetching hostile git repositories: memory and time while skillpkg
refuses them, against the tree before the fetch guard and `git clone`.

See bench/README.md, "git_fetch.py".
"""

import argparse
import hashlib
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MIB = 1 << 20
GIB = 1 << 30

SKILL_MD = b"---\nname: hostile\ndescription: Holds more than it says. Use when measuring.\n---\n# hostile\n"


# Packs (gitformat-pack(5)), written as a hostile server would send them.

def entry_header(kind: int, size: int) -> bytes:
    """A pack entry's type and inflated size."""
    out = [(kind << 4) | (size & 0xF)]
    size >>= 4
    while size:
        out[-1] |= 0x80
        out.append(size & 0x7F)
        size >>= 7
    return bytes(out)


def base_distance(distance: int) -> bytes:
    """An offset delta's distance back to its base."""
    out = [distance & 0x7F]
    distance >>= 7
    while distance:
        distance -= 1
        out.insert(0, 0x80 | (distance & 0x7F))
        distance >>= 7
    return bytes(out)


def delta_size(value: int) -> bytes:
    """A size in a delta's header: 7 bits a byte, low bits first."""
    out = []
    while True:
        byte, value = value & 0x7F, value >> 7
        if not value:
            out.append(byte)
            return bytes(out)
        out.append(byte | 0x80)


def zlib_of_zeros(size: int) -> list[bytes]:
    """A zlib stream of `size` zero bytes, about 1 KB a MiB as git writes
    them: one MiB compressed with a full flush (which ends on a byte and
    forgets the window), repeated, then the rest and the Adler-32."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    chunk = compressor.compress(b"\0" * MIB) + compressor.flush(zlib.Z_FULL_FLUSH)
    parts = [b"\x78\xda"] + [chunk] * (size // MIB)
    tail = compressor.compress(b"\0" * (size % MIB)) + compressor.flush(zlib.Z_FINISH)
    adler = ((size % 65521) << 16) | 1
    return parts + [tail, adler.to_bytes(4, "big")]


def blob_id_of_zeros(size: int) -> str:
    digest = hashlib.sha1(b"blob %d\0" % size)
    zeros = b"\0" * (16 * MIB)
    left = size
    while left:
        step = min(left, len(zeros))
        digest.update(zeros[:step] if step < len(zeros) else zeros)
        left -= step
    return digest.hexdigest()


def write_pack(path: Path, entries: list[list[bytes]]) -> int:
    """Writes a pack of `entries` (each a list of byte strings: its header
    and data) with its SHA-1 trailer; returns its size."""
    digest = hashlib.sha1()
    with open(path, "wb") as out:
        def put(data: bytes) -> None:
            digest.update(data)
            out.write(data)
        put(b"PACK" + (2).to_bytes(4, "big") + len(entries).to_bytes(4, "big"))
        for entry in entries:
            for part in entry:
                put(part)
        out.write(digest.digest())
    return path.stat().st_size


def raw_entry(kind: int, data: bytes) -> list[bytes]:
    return [entry_header(kind, len(data)), zlib.compress(data)]


# Repositories: a small one whose commit names a huge file, and a pack that
# carries it, served in its place by `uploadpack.packObjectsHook`.

def git(repo: Path, *args: str, stdin: bytes | None = None) -> str:
    env = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", HOME=str(repo), GIT_AUTHOR_NAME="Bench",
               GIT_AUTHOR_EMAIL="bench@example.com", GIT_COMMITTER_NAME="Bench",
               GIT_COMMITTER_EMAIL="bench@example.com", GIT_AUTHOR_DATE="2026-01-01T00:00:00Z",
               GIT_COMMITTER_DATE="2026-01-01T00:00:00Z")
    result = subprocess.run(["git", *args], cwd=repo, input=stdin, capture_output=True, env=env)
    if result.returncode != 0:
        sys.exit(f"git {' '.join(args)}: {result.stderr.decode()}")
    return result.stdout.decode().strip()


def tree_entry(mode: str, name: str, object_id: str) -> bytes:
    return f"{mode} {name}\0".encode() + bytes.fromhex(object_id)


def hostile_repository(base: Path, name: str, huge: int, as_delta: bool, zeros_id: str) -> Path:
    """A bare repository whose one commit holds SKILL.md and `zeros.bin`, a
    file of `huge` zeros it does not have, and `hostile.pack`: the commit,
    its tree, SKILL.md and the zeros, as a blob or as a delta of 64 KiB of
    zeros whose result is the file."""
    repo = base / f"{name}.git"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "--bare", "-b", "main")
    skill_md = git(repo, "hash-object", "-w", "--stdin", stdin=SKILL_MD)
    tree_bytes = tree_entry("100644", "SKILL.md", skill_md) + tree_entry("100644", "zeros.bin", zeros_id)
    tree = git(repo, "hash-object", "-t", "tree", "--literally", "-w", "--stdin", stdin=tree_bytes)
    commit = git(repo, "commit-tree", tree, "-m", name)
    git(repo, "update-ref", "refs/heads/main", commit)
    commit_bytes = subprocess.run(["git", "cat-file", "commit", commit], cwd=repo, capture_output=True,
                                  check=True).stdout
    entries = [raw_entry(1, commit_bytes), raw_entry(2, tree_bytes), raw_entry(3, SKILL_MD)]
    if as_delta:
        base_blob = b"\0" * 65536
        # Copy 64 KiB from offset 0 (0x80 alone: no offset or size bytes,
        # and a size of 0 means 0x10000), as many times as it takes.
        delta = delta_size(len(base_blob)) + delta_size(huge) + b"\x80" * (huge // 65536)
        entries.append(raw_entry(3, base_blob))
        base_length = len(entries[-1][0]) + len(entries[-1][1])
        entries.append([entry_header(6, len(delta)), base_distance(base_length), zlib.compress(delta)])
    else:
        entries.append([entry_header(3, huge), *zlib_of_zeros(huge)])
    write_pack(repo / "hostile.pack", entries)
    return repo


def legit_repository(base: Path, name: str, skills: int, commits: int, assets: bool = False) -> Path:
    """A repository of `skills` skills (a SKILL.md and a 20 KB reference
    each) edited over `commits` commits: what a fetch usually carries. With
    `assets`, each skill also holds 100 KB of random bytes, replaced every
    20 commits: a pack of about 30 MiB that deltas do not shrink."""
    repo = base / name
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    words = [f"word{i}" for i in range(5000)]
    for round_ in range(commits):
        for index in range(skills):
            folder = repo / "skills" / f"skill-{index:03d}"
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "SKILL.md").write_text(
                f"---\nname: skill-{index:03d}\ndescription: Skill {index}, round {round_}. Use when measuring.\n---\n"
                f"# skill {index}\n\nStep {round_}.\n")
            if round_ % 5 == index % 5:
                text = " ".join(words[(index * 7 + round_ * 13 + k) % len(words)] for k in range(3000))
                (folder / "reference.md").write_text(text + "\n")
            if assets and round_ % 20 == 0:
                (folder / "asset.bin").write_bytes(os.urandom(100_000))
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", f"round {round_}")
    bare = base / f"{name}.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(repo), str(bare)], check=True, capture_output=True)
    git(bare, "repack", "-adq")
    return bare


HOOK = """#!/bin/sh
# uploadpack.packObjectsHook: run as `HOOK git pack-objects ARGS` in the
# repository. A repository with a hostile.pack sends it, whatever was asked.
if [ -f hostile.pack ]; then cat >/dev/null; exec cat hostile.pack; fi
exec "$@"
"""


class Daemon:
    """`git daemon` on a free loopback port, with the hook as its global
    configuration."""

    def __init__(self, base: Path, config: Path):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        exec_path = subprocess.run(["git", "--exec-path"], capture_output=True, text=True, check=True).stdout.strip()
        env = dict(os.environ, GIT_CONFIG_GLOBAL=str(config), GIT_CONFIG_NOSYSTEM="1")
        self.process = subprocess.Popen(
            [f"{exec_path}/git-daemon", "--reuseaddr", "--export-all", "--listen=127.0.0.1", f"--port={self.port}",
             f"--base-path={base}", str(base)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    sys.exit("git daemon did not start")
                time.sleep(0.05)

    def url(self, name: str) -> str:
        return f"git://127.0.0.1:{self.port}/{name}"

    def stop(self) -> None:
        self.process.kill()
        self.process.wait()


def measure(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, int, str]:
    """Runs `command` under GNU time; returns its wall time (s), peak RSS
    (MiB: its own, or that of a child it waited for if larger), exit code
    and stderr's end. Through `time` rather than from this process's
    wait4: a child's peak counts the memory of the process that forked it
    until it execs, and this one holds the packs."""
    report = cwd / ".time"
    started = time.perf_counter()
    result = subprocess.run(["/usr/bin/time", "-o", str(report), "-f", "%M", *command], cwd=cwd, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    took = time.perf_counter() - started
    lines = report.read_text().split()
    return took, int(lines[-1]) / 1024, result.returncode, result.stderr.decode(errors="replace").strip()[-400:]


def skillpkg_add(binary: Path, url: str, work: Path, *extra: str) -> tuple[float, float, int, str]:
    """`skillpkg add git+URL EXTRA` in a fresh project with a fresh cache."""
    shutil.rmtree(work, ignore_errors=True)
    (work / "project").mkdir(parents=True)
    env = {"PATH": os.environ["PATH"], "HOME": str(work), "NO_COLOR": "1",
           "SKILLPKG_CONFIG_DIR": str(work / "config"), "SKILLPKG_CACHE_DIR": str(work / "cache"),
           "SKILLPKG_STATE_DIR": str(work / "state")}
    subprocess.run([binary, "init", "--target", "claude"], cwd=work / "project", env=env, check=True,
                   capture_output=True)
    return measure([str(binary), "add", f"git+{url}", *extra], work / "project", env)


def git_clone(url: str, work: Path) -> tuple[float, float, int, str]:
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    env = dict(os.environ, HOME=str(work), GIT_CONFIG_NOSYSTEM="1")
    return measure(["git", "clone", "-q", "--bare", url, str(work / "clone.git")], work, env)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--skillpkg", type=Path, help="the skillpkg to measure (default: this tree's release build)")
    parser.add_argument("--baseline", type=Path, default=ROOT / "target/bench-baseline/target/release/skillpkg",
                        help="the skillpkg before the guard (default: target/bench-baseline/...)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--baseline-8g", action="store_true",
                        help="also run the baseline on the 8 GiB blob (it needs about 9 GiB of memory)")
    parser.add_argument("--cases", default="blob-1g,blob-8g,delta-1g,legit,legit-large")
    args = parser.parse_args()
    if args.skillpkg is None:
        subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "skillpkg", "--bin", "skillpkg"], cwd=ROOT,
                       check=True)
        args.skillpkg = ROOT / "target/release/skillpkg"
    sides = [("skillpkg", args.skillpkg.resolve())]
    if args.baseline and args.baseline.exists():
        sides.append(("baseline", args.baseline.resolve()))
    else:
        print(f"no baseline at {args.baseline}: build the tree before the guard there (bench/README.md)")
    cases = args.cases.split(",")

    base = Path(tempfile.mkdtemp(prefix="skillpkg-bench-git-"))
    try:
        served = base / "served"
        served.mkdir()
        hook = base / "pack-hook.sh"
        hook.write_text(HOOK)
        hook.chmod(0o755)
        config = base / "gitconfig"
        config.write_text(f"[uploadpack]\n\tpackObjectsHook = {hook}\n")
        print("writing the repositories ...", flush=True)
        ids = {}
        for case in cases:
            if case.startswith("legit"):
                repo = legit_repository(served, case, 50, 120, assets=case == "legit-large")
                print(f"  {case}: 50 skills, 120 commits, pack {sum(p.stat().st_size for p in repo.glob('objects/pack/*.pack')) / MIB:.1f} MiB")
                continue
            kind, size = case.split("-")
            huge = int(size.removesuffix("g")) * GIB
            if huge not in ids:
                ids[huge] = blob_id_of_zeros(huge)
            repo = hostile_repository(served, case, huge, kind == "delta", ids[huge])
            print(f"  {case}: {huge / GIB:.0f} GiB of zeros as a {'delta' if kind == 'delta' else 'blob'}, "
                  f"pack {(repo / 'hostile.pack').stat().st_size / MIB:.2f} MiB", flush=True)
        daemon = Daemon(served, config)
        try:
            results = {}
            for case in cases:
                url = daemon.url(f"{case}.git")
                extra = ["--skill", "skill-000"] if case.startswith("legit") else []
                runners = [(name, lambda binary=binary: skillpkg_add(binary, url, base / "work", *extra))
                           for name, binary in sides
                           if not (name == "baseline" and case == "blob-8g" and not args.baseline_8g)]
                runners.append(("git clone", lambda: git_clone(url, base / "work")))
                for round_ in range(args.runs):
                    # Sides take turns going first.
                    order = runners[round_ % len(runners):] + runners[:round_ % len(runners)]
                    for name, run in order:
                        took, rss, code, stderr = run()
                        results.setdefault((case, name), []).append((took, rss, code, stderr))
                        print(f"  {case:9} {name:9} {took:7.2f} s {rss:8.1f} MiB exit {code}", flush=True)
        finally:
            daemon.stop()
        print()
        print("| case | side | median time | peak RSS (max) | exit | says |")
        print("|---|---|---|---|---|---|")
        for (case, name), runs in results.items():
            time_median = statistics.median(run[0] for run in runs)
            rss = max(run[1] for run in runs)
            last = runs[-1]
            says = last[3].splitlines()[-2:] if last[3] else []
            says = " / ".join(line.strip()[:110] for line in says if line.strip())
            print(f"| {case} | {name} | {time_median:.2f} s | {rss:.1f} MiB | {last[2]} | {says} |")
        # Targets: each hostile repository refused (exit 1) with skillpkg
        # under 64 MiB at its peak and in under 2 s, every run.
        missed = [f"{case}: {took:.2f} s, {rss:.1f} MiB, exit {code}"
                  for (case, name), runs in results.items() if name == "skillpkg" and not case.startswith("legit")
                  for took, rss, code, _ in runs if took >= 2 or rss >= 64 or code != 1]
        if missed:
            print("missed the target (refused, under 64 MiB, under 2 s):", *missed, sep="\n  ")
            sys.exit(1)
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
