#!/usr/bin/env python3
"""Time `skillpkg validate` on a corpus of skills against the reference validator.

Usage: bench/validate_corpus.py CORPUS_DIR [--runs N] [--target RATIO] [--skillpkg PATH]

CORPUS_DIR has an `expected.tsv` listing the skills (as ../shared/corpus
does). Measures, in the same run on the same machine, interleaved:

- skillpkg: one `skillpkg validate --strict --json` process over every listed
  skill (the release build of this tree, or --skillpkg PATH, such as the
  build of an older revision), wall time including process start;
- reference: the reference validator (PyPI `skills-ref` 0.1.1, whose command
  is `agentskills validate DIR`, installed into target/bench-venv on first
  use), imported ONCE into one long-lived Python process that calls its
  `validate` function on every skill per round, so neither its interpreter
  start-up nor its imports are counted against it.

The two alternate round by round (skillpkg first in even rounds, the
reference first in odd ones), so load from other work on a shared machine
falls on both alike. One untimed round of each warms the page cache and
Python's lazy imports. Prints the median of N rounds of each, their ratio,
and the median of the per-round ratios; exits 1 if the ratio of the medians
is below --target.
"""

import argparse
import csv
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / "target" / "bench-venv"
REFERENCE_VERSION = "0.1.1"

# The reference side: import once, then one timed round over every skill per
# line read on stdin, answering with the seconds it took.
REFERENCE = """
import sys, time
from pathlib import Path
from skills_ref import validate
dirs = [Path(line) for line in sys.argv[1:]]
for _ in sys.stdin:
    start = time.perf_counter()
    for d in dirs:
        validate(d)
    print(time.perf_counter() - start, flush=True)
"""


def skill_dirs(corpus: Path) -> list[str]:
    with open(corpus / "expected.tsv", newline="") as f:
        return [str(corpus / row["collection"] / row["skill_path"]) for row in csv.DictReader(f, delimiter="\t")]


def reference_python() -> Path | None:
    python = VENV / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    check = subprocess.run([str(python), "-c", "import skills_ref"], capture_output=True)
    if check.returncode != 0:
        install = subprocess.run([str(python), "-m", "pip", "install", "-q", f"skills-ref=={REFERENCE_VERSION}"])
        if install.returncode != 0:
            return None
    return python


class Reference:
    """The reference validator in one Python process, timed a round at a time."""

    def __init__(self, python: Path, dirs: list[str]):
        self.process = subprocess.Popen(
            [str(python), "-c", REFERENCE, *dirs], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )

    def round(self) -> float:
        assert self.process.stdin and self.process.stdout
        self.process.stdin.write("\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            sys.exit("the reference process ended early")
        return float(line)

    def close(self) -> None:
        if self.process.stdin:
            self.process.stdin.close()
        self.process.wait()


def time_skillpkg(binary: Path, dirs: list[str]) -> float:
    start = time.perf_counter()
    result = subprocess.run([str(binary), "validate", "--strict", "--json", *dirs], stdout=subprocess.DEVNULL)
    elapsed = time.perf_counter() - start
    if result.returncode not in (0, 1):
        sys.exit(f"skillpkg validate failed with status {result.returncode}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--runs", type=int, default=21, help="timed rounds of each (default 21)")
    parser.add_argument("--target", type=float, default=20.0, help="the speed-up to reach (default 20)")
    parser.add_argument("--skillpkg", type=Path, help="the skillpkg binary to time (default: build this tree)")
    args = parser.parse_args()

    if args.skillpkg is None:
        subprocess.run(["cargo", "build", "--release", "--quiet", "--bin", "skillpkg"], cwd=ROOT, check=True)
        binary = ROOT / "target" / "release" / "skillpkg"
    else:
        binary = args.skillpkg.resolve()
    dirs = skill_dirs(args.corpus.resolve())
    python = reference_python()
    if python is None:
        sys.exit(f"skills-ref {REFERENCE_VERSION} could not be installed: nothing to compare with")

    reference = Reference(python, dirs)
    try:
        time_skillpkg(binary, dirs)
        reference.round()
        ours, theirs = [], []
        for index in range(args.runs):
            if index % 2 == 0:
                ours.append(time_skillpkg(binary, dirs))
                theirs.append(reference.round())
            else:
                theirs.append(reference.round())
                ours.append(time_skillpkg(binary, dirs))
    finally:
        reference.close()

    ours_median = statistics.median(ours)
    theirs_median = statistics.median(theirs)
    speedup = theirs_median / ours_median
    per_round = statistics.median(t / o for o, t in zip(ours, theirs))
    print(f"skills:     {len(dirs)}")
    print(
        f"skillpkg:   {ours_median * 1000:8.1f} ms  median of {args.runs}"
        f" (min {min(ours) * 1000:.1f}, max {max(ours) * 1000:.1f}); one process, start-up included"
    )
    print(
        f"reference:  {theirs_median * 1000:8.1f} ms  median of {args.runs}"
        f" (min {min(theirs) * 1000:.1f}, max {max(theirs) * 1000:.1f});"
        f" skills-ref {REFERENCE_VERSION} in one process, imported once"
    )
    print(f"speed-up:   {speedup:.1f}x (ratio of the medians); per-round median {per_round:.1f}x")
    met = speedup >= args.target
    print(f"target:     {args.target:g}x: {'met' if met else 'MISSED'}")
    if not met:
        sys.exit(1)


if __name__ == "__main__":
    main()
