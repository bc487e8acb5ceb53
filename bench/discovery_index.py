"""Reading a large discovery index: `skillpkg add SITE --skill LAST` against
indexes of 5,000 to 100,000 entries, against the tree before the fix.

See bench/README.md, "discovery_index.py".
"""

import argparse
import hashlib
import http.server
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = "https://schemas.agentskills.io/discovery/0.2.0/schema.json"
LAST = "n99999"
SKILL_MD = f"---\nname: {LAST}\ndescription: The last skill. Use when measuring.\n---\n# last\n".encode()


def write_site(root: Path, entries: int) -> int:
    """Writes `<root>/<entries>/.well-known/agent-skills/index.json`: 0.2.0
    `skill-md` entries, the last one a real skill; returns its size."""
    folder = root / str(entries) / ".well-known/agent-skills"
    folder.mkdir(parents=True)
    (folder / f"{LAST}.md").write_bytes(SKILL_MD)
    skills = []
    for number in range(entries):
        name = LAST if number == entries - 1 else f"n{number:05d}"
        digest = hashlib.sha256(SKILL_MD if name == LAST else str(number).encode()).hexdigest()
        skills.append({"name": name, "type": "skill-md", "description": "A skill.", "url": f"{name}.md",
                       "digest": f"sha256:{digest}"})
    text = json.dumps({"$schema": SCHEMA, "skills": skills}, separators=(",", ":"))
    (folder / "index.json").write_text(text)
    return len(text)


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


def add(binary: Path, url: str, work: Path) -> tuple[float, float]:
    """`skillpkg add URL --skill LAST` in a fresh project and cache; returns
    the wall time (s) and the peak RSS (MiB)."""
    shutil.rmtree(work, ignore_errors=True)
    (work / "project").mkdir(parents=True)
    env = {"PATH": os.environ["PATH"], "HOME": str(work), "NO_COLOR": "1",
           "SKILLPKG_CONFIG_DIR": str(work / "config"), "SKILLPKG_CACHE_DIR": str(work / "cache"),
           "SKILLPKG_STATE_DIR": str(work / "state")}
    subprocess.run([binary, "init", "--target", "claude"], cwd=work / "project", env=env, check=True,
                   capture_output=True)
    # Through GNU time: a child's peak counts this process's memory (which
    # holds the indexes) until it execs.
    report = work / "time"
    started = time.perf_counter()
    result = subprocess.run(["/usr/bin/time", "-o", str(report), "-f", "%M", binary, "add", url, "--skill", LAST],
                            cwd=work / "project", env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    took = time.perf_counter() - started
    if result.returncode != 0:
        raise SystemExit(f"{binary} add {url} failed: {result.stderr.decode()[-500:]}")
    return took, int(report.read_text().split()[-1]) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--skillpkg", type=Path, help="the skillpkg to measure (default: this tree's release build)")
    parser.add_argument("--baseline", type=Path, default=ROOT / "target/bench-baseline/target/release/skillpkg")
    parser.add_argument("--sizes", default="5000,20000,40000,100000")
    parser.add_argument("--baseline-max", type=int, default=40000,
                        help="the largest index the baseline reads (100,000 took it minutes)")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    if args.skillpkg is None:
        subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "skillpkg", "--bin", "skillpkg"], cwd=ROOT,
                       check=True)
        args.skillpkg = ROOT / "target/release/skillpkg"
    sizes = [int(size) for size in args.sizes.split(",")]
    base = Path(tempfile.mkdtemp(prefix="skillpkg-bench-index-"))
    try:
        for size in sizes:
            print(f"index of {size} entries: {write_site(base / 'site', size) / 1e6:.1f} MB", flush=True)
        handler = lambda *a, **k: Quiet(*a, directory=str(base / "site"), **k)  # noqa: E731
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        sides = [("skillpkg", args.skillpkg.resolve())]
        if args.baseline and args.baseline.exists():
            sides.append(("baseline", args.baseline.resolve()))
        rows = []
        for size in sizes:
            url = f"http://127.0.0.1:{server.server_address[1]}/{size}/"
            for name, binary in sides:
                if name == "baseline" and size > args.baseline_max:
                    continue
                runs = [add(binary, url, base / "work") for _ in range(args.runs)]
                took = statistics.median(run[0] for run in runs)
                rss = max(run[1] for run in runs)
                rows.append((size, name, took, rss))
                print(f"  {size:>7} {name:9} {took:8.2f} s {rss:7.1f} MiB", flush=True)
        server.shutdown()
        print()
        print("| entries | side | median `add` (two reads of the index) | peak RSS |")
        print("|---|---|---|---|")
        for size, name, took, rss in rows:
            print(f"| {size:,} | {name} | {took:.2f} s | {rss:.1f} MiB |")
        # Target: under 2 s for 100,000 entries, the whole `add`.
        slow = [(size, took) for size, name, took, _ in rows if name == "skillpkg" and size <= 100_000 and took >= 2]
        if slow:
            raise SystemExit(f"missed the target (under 2 s): {slow}")
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
