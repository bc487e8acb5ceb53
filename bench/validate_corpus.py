#!/usr/bin/env python3
"""Time `skillpkg validate` on a corpus of skills against the reference validator.

Usage: bench/validate_corpus.py CORPUS_DIR [--runs N]

CORPUS_DIR has an `expected.tsv` listing the skills (as ../shared/corpus
does). Measures, in the same run on the same machine:

- skillpkg: one `skillpkg validate --strict --json` process over every listed
  skill (release build), wall time including process start;
- baseline: the reference validator (PyPI `skills-ref` 0.1.1, installed into
  target/bench-venv on first use) called in-process on every skill, so its
  interpreter start-up is NOT counted against it.

Prints the median of N runs of each and their ratio.
"""

import argparse
import csv
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / "target" / "bench-venv"


def skill_dirs(corpus: Path) -> list[str]:
    with open(corpus / "expected.tsv", newline="") as f:
        return [str(corpus / row["collection"] / row["skill_path"]) for row in csv.DictReader(f, delimiter="\t")]


def time_skillpkg(binary: Path, dirs: list[str], runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        result = subprocess.run([str(binary), "validate", "--strict", "--json", *dirs], stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
        if result.returncode not in (0, 1):
            sys.exit(f"skillpkg validate failed with status {result.returncode}")
    return times


REFERENCE = """
import sys, time
from pathlib import Path
from skills_ref import validate
dirs = [Path(line) for line in sys.stdin.read().splitlines()]
for _ in range(int(sys.argv[1])):
    start = time.perf_counter()
    for d in dirs:
        validate(d)
    print(time.perf_counter() - start)
"""


def time_reference(dirs: list[str], runs: int) -> list[float] | None:
    python = VENV / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        install = subprocess.run([str(python), "-m", "pip", "install", "-q", "skills-ref==0.1.1"])
        if install.returncode != 0:
            return None
    result = subprocess.run(
        [str(python), "-c", REFERENCE, str(runs)], input="\n".join(dirs), capture_output=True, text=True, check=True
    )
    return [float(line) for line in result.stdout.split()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()

    subprocess.run(["cargo", "build", "--release", "--quiet", "--bin", "skillpkg"], cwd=ROOT, check=True)
    binary = ROOT / "target" / "release" / "skillpkg"
    dirs = skill_dirs(args.corpus.resolve())

    time_skillpkg(binary, dirs, 1)  # warm the page cache
    ours = statistics.median(time_skillpkg(binary, dirs, args.runs))
    print(f"skills:     {len(dirs)}")
    print(f"skillpkg:   {ours * 1000:8.1f} ms  (median of {args.runs}, one process, start-up included)")
    reference = time_reference(dirs, args.runs)
    if reference is None:
        print("reference:  not measured (skills-ref could not be installed)")
        return
    theirs = statistics.median(reference)
    print(f"reference:  {theirs * 1000:8.1f} ms  (skills-ref 0.1.1 in-process, start-up excluded)")
    print(f"ratio:      skillpkg takes {ours / theirs:.3f}x the reference's time ({theirs / ours:.1f}x faster)")


if __name__ == "__main__":
    main()
