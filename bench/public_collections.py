"""Public collections: how many of each one's skills `skillpkg add --all`
installs, and how long it takes against `git clone` of the same repository.

See bench/README.md, "public_collections.py".

    python3 bench/public_collections.py CLONE... [--runs 5] [--skillpkg PATH]

Each CLONE is a git working copy of a collection (for example of
anthropics/skills); its HEAD is what is installed, over `git+file://`, into
a new project targeting `.claude/skills` and `.agents/skills`.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def skill_folders(clone: Path) -> int:
    """The folders of the clone that hold a SKILL.md (what a reader of the
    repository would call its skills)."""
    listed = subprocess.run(
        ["git", "-C", str(clone), "ls-files"], check=True, capture_output=True, text=True
    ).stdout.splitlines()
    return sum(1 for path in listed if path == "SKILL.md" or path.endswith("/SKILL.md"))


def add_all(skillpkg: Path, clone: Path, work: Path) -> tuple[float, dict, int]:
    """Runs `skillpkg add git+file://CLONE --all --json` in a new project;
    returns the seconds, the JSON report and the exit status."""
    project = work / "project"
    shutil.rmtree(project, ignore_errors=True)
    project.mkdir(parents=True)
    env = dict(os.environ, SKILLPKG_CACHE_DIR=str(work / "cache"), SKILLPKG_CONFIG_DIR=str(work / "config"))
    shutil.rmtree(work / "cache", ignore_errors=True)
    subprocess.run([skillpkg, "init", "-q", "--target", "claude", "--target", "agents"],
                   cwd=project, env=env, check=True, capture_output=True)
    start = time.perf_counter()
    done = subprocess.run([skillpkg, "add", f"git+file://{clone}", "--all", "--json"],
                          cwd=project, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    try:
        report = json.loads(done.stdout)
    except json.JSONDecodeError:
        sys.exit(f"{clone}: no JSON report (status {done.returncode}):\n{done.stderr[-2000:]}")
    return seconds, report, done.returncode


def clone_time(clone: Path, work: Path) -> float:
    """Seconds for `git clone --no-local` of the repository (the baseline)."""
    target = work / "baseline"
    shutil.rmtree(target, ignore_errors=True)
    start = time.perf_counter()
    subprocess.run(["git", "clone", "-q", "--no-local", str(clone), str(target)], check=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("clones", nargs="+", type=Path)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--skillpkg", type=Path, default=ROOT / "target/release/skillpkg")
    args = parser.parse_args()
    print("| collection | skills | installed | left out | warnings | add --all (median) | git clone (median) | ratio |")
    print("|---|---|---|---|---|---|---|---|")
    for clone in args.clones:
        clone = clone.resolve()
        total = skill_folders(clone)
        with tempfile.TemporaryDirectory() as work:
            work = Path(work)
            ours, theirs, report = [], [], None
            for _ in range(args.runs):
                seconds, report, _status = add_all(args.skillpkg, clone, work)
                ours.append(seconds)
                theirs.append(clone_time(clone, work))
        installed = {entry["name"] for entry in report["installed"]}
        warnings = [w for w in report["warnings"] if "description-too-long" in w or "name-mismatch" in w]
        ours_median, theirs_median = statistics.median(ours), statistics.median(theirs)
        print(f"| {clone.name} | {total} | {len(installed)} | {len(report['refused'])} | {len(warnings)} "
              f"| {ours_median * 1000:.0f} ms | {theirs_median * 1000:.0f} ms | {ours_median / theirs_median:.1f}x |")
        for refusal in report["refused"]:
            print(f"    left out {refusal['skill']}: {refusal['reason'][:160]}")


if __name__ == "__main__":
    main()
