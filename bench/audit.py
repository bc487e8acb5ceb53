#!/usr/bin/env python3
"""Time `skillpkg audit` and measure what it catches, against cisco-ai-skill-scanner.

Usage: bench/audit.py [CORPUS_DIR] [--runs N] [--cisco-runs N] [--skip-cisco] [--skillpkg PATH]

Three sets of skills:

- the corpus (default ../shared/corpus beside the project): real skills,
  where every `high` finding is presumed a false positive until judged;
- tests/fixtures/audit/malicious: skills in the shapes of real attacks,
  whose expected.tsv names, per skill, the rules that must catch it and the
  lowest severity that counts;
- tests/fixtures/audit/benign: legitimate skills that look suspicious,
  whose expected.tsv names the highest verdict each may get.

skillpkg (the release build of this tree, or --skillpkg PATH) runs as one
`skillpkg audit DIR --json` process per set and round, wall time including
process start. cisco-ai-skill-scanner (PyPI, pinned below, installed into
target/bench-cisco on first use) runs `skill-scanner scan-all DIR
--recursive --format json` in its default static mode (no LLM, behavioural,
VirusTotal, AI Defense or OSV analyser: those need keys or the network), one
process per set and round too. Its CRITICAL and HIGH count as skillpkg's
high. The two alternate round by round after one untimed round of each.

Prints, for each tool: median and range of the times, the malicious skills
caught at their documented severity, the benign skills kept within theirs,
and every corpus skill with a high finding. Exits 1 when skillpkg misses a
target: the corpus audited in under 1 s, under 1% of its skills with a high
finding, every malicious row caught, every benign skill within its verdict.
"""

import argparse
import csv
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "audit"
CISCO_VENV = ROOT / "target" / "bench-cisco"
CISCO_VERSION = "2.3.2"
RANK = {"clean": 0, "info": 1, "low": 2, "medium": 3, "high": 4}
CISCO_RANK = {"SAFE": 0, "INFO": 1, "LOW": 2, "MEDIUM": 3, "HIGH": 4, "CRITICAL": 4}


def read_tsv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def cisco_scanner() -> Path | None:
    scanner = CISCO_VENV / "bin" / "skill-scanner"
    if not scanner.exists():
        subprocess.run([sys.executable, "-m", "venv", str(CISCO_VENV)], check=True)
        pip = CISCO_VENV / "bin" / "pip"
        install = subprocess.run([str(pip), "install", "-q", f"cisco-ai-skill-scanner=={CISCO_VERSION}"])
        if install.returncode != 0 or not scanner.exists():
            return None
    return scanner


def run_skillpkg(binary: Path, folder: Path) -> tuple[float, dict[str, dict]]:
    """One audit of `folder`: seconds, and per skill (its path relative to
    the folder) the rank of its verdict and its findings."""
    start = time.perf_counter()
    result = subprocess.run([str(binary), "audit", str(folder), "--json"], capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if result.returncode not in (0, 1):
        sys.exit(f"skillpkg audit {folder} failed with status {result.returncode}:\n{result.stderr}")
    skills = {}
    for skill in json.loads(result.stdout)["skills"]:
        key = str(Path(skill["path"]).resolve().relative_to(folder))
        skills[key] = {
            "rank": RANK[skill["verdict"]],
            "findings": [
                (f["rule"], RANK[f["severity"]], f"{f['file']}:{f.get('line', '?')}")
                for f in skill["findings"]
            ],
        }
    return elapsed, skills


def run_cisco(scanner: Path, folder: Path) -> tuple[float, dict[str, dict]]:
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "report.json"
        start = time.perf_counter()
        result = subprocess.run(
            [str(scanner), "scan-all", str(folder), "--recursive", "--format", "json", "--compact", "-o", str(report)],
            capture_output=True,
            text=True,
        )
        elapsed = time.perf_counter() - start
        if not report.exists():
            sys.exit(f"skill-scanner on {folder} wrote no report (status {result.returncode}):\n{result.stderr[-2000:]}")
        results = json.loads(report.read_text())["results"]
    skills = {}
    for skill in results:
        key = str(Path(skill["skill_path"]).resolve().relative_to(folder))
        findings = [
            (f["rule_id"], CISCO_RANK.get(f["severity"], 0), f"{f.get('file_path')}:{f.get('line_number')}")
            for f in skill["findings"]
        ]
        skills[key] = {"rank": max((rank for _, rank, _ in findings), default=0), "findings": findings}
    return elapsed, skills


def malicious_caught(skills: dict[str, dict], by_rule: bool) -> tuple[int, int, list[str]]:
    """Rows of the malicious expected.tsv met: by the named rule at its
    severity (skillpkg), or, for a tool with other rule names, by the skill
    reaching the severity. Returns skills caught, skills, and the misses."""
    rows = read_tsv(FIXTURES / "malicious" / "expected.tsv")
    missed = []
    names = []
    for row in rows:
        name, floor = row["skill"], RANK[row["min_severity"]]
        if name not in names:
            names.append(name)
        skill = skills.get(name)
        if skill is None:
            hit = False
        elif by_rule:
            hit = any(rule == row["rule"] and rank >= floor for rule, rank, _ in skill["findings"])
        else:
            hit = skill["rank"] >= floor
        if not hit:
            missed.append(f"{name} ({row['rule']} >= {row['min_severity']})")
    missed_skills = {miss.split(" ")[0] for miss in missed}
    return len(names) - len(missed_skills), len(names), missed


def benign_within(skills: dict[str, dict]) -> tuple[int, int, list[str]]:
    rows = read_tsv(FIXTURES / "benign" / "expected.tsv")
    over = []
    for row in rows:
        skill = skills.get(row["skill"])
        if skill is None or skill["rank"] > RANK[row["max_severity"]]:
            got = "not scanned" if skill is None else next(k for k, v in RANK.items() if v == skill["rank"])
            over.append(f"{row['skill']} ({got} > {row['max_severity']})")
    return len(rows) - len(over), len(rows), over


def highs(skills: dict[str, dict]) -> list[str]:
    return sorted(
        f"{name}: {rule} at {place}"
        for name, skill in skills.items()
        for rule, rank, place in skill["findings"]
        if rank >= RANK["high"]
    )


def describe(label: str, times: list[float]) -> str:
    return (
        f"{label:<34}{statistics.median(times) * 1000:10.1f} ms  median of {len(times)}"
        f" (min {min(times) * 1000:.1f}, max {max(times) * 1000:.1f})"
    )


def report(tool: str, times: dict[str, list[float]], results: dict[str, dict], by_rule: bool) -> list[str]:
    """Prints one tool's figures; returns its corpus highs."""
    print(f"\n{tool}")
    for name, series in times.items():
        print("  " + describe(name, series))
    caught, total, missed = malicious_caught(results["malicious"], by_rule)
    how = "by the documented rule at its severity" if by_rule else "at the documented severity"
    print(f"  malicious caught {how}: {caught}/{total}")
    for miss in missed:
        print(f"    missed {miss}")
    flagged = sum(1 for skill in results["malicious"].values() if skill["rank"] >= RANK["high"])
    print(f"  malicious skills with a high finding: {flagged}/{len(results['malicious'])}")
    benign_high = sorted(name for name, skill in results["benign"].items() if skill["rank"] >= RANK["high"])
    print(f"  benign skills with a high finding: {len(benign_high)}/{len(results['benign'])}")
    for name in benign_high:
        print(f"    {name}")
    if by_rule:
        kept, total, over = benign_within(results["benign"])
        print(f"  benign within their documented verdict: {kept}/{total}")
        for item in over:
            print(f"    over {item}")
    corpus = results["corpus"]
    corpus_highs = highs(corpus)
    skills_high = len({line.split(":")[0] for line in corpus_highs})
    share = 100 * skills_high / max(len(corpus), 1)
    print(f"  corpus skills with a high finding: {skills_high}/{len(corpus)} ({share:.1f}%)")
    for line in corpus_highs:
        print(f"    {line}")
    return corpus_highs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path, nargs="?", default=ROOT.parent / "shared" / "corpus")
    parser.add_argument("--runs", type=int, default=21, help="timed rounds of skillpkg (default 21)")
    parser.add_argument("--cisco-runs", type=int, default=3, help="timed rounds of skill-scanner (default 3)")
    parser.add_argument("--skip-cisco", action="store_true", help="measure skillpkg alone")
    parser.add_argument("--skillpkg", type=Path, help="the skillpkg binary to time (default: build this tree)")
    args = parser.parse_args()

    if args.skillpkg is None:
        subprocess.run(["cargo", "build", "--release", "--quiet", "--bin", "skillpkg"], cwd=ROOT, check=True)
        binary = ROOT / "target" / "release" / "skillpkg"
    else:
        binary = args.skillpkg.resolve()
    sets = {
        "corpus": args.corpus.resolve(),
        "malicious": FIXTURES / "malicious",
        "benign": FIXTURES / "benign",
    }
    scanner = None
    if not args.skip_cisco:
        scanner = cisco_scanner()
        if scanner is None:
            sys.exit(f"cisco-ai-skill-scanner {CISCO_VERSION} could not be installed: use --skip-cisco")

    ours = {name: [] for name in sets}
    theirs = {name: [] for name in sets}
    our_results, their_results = {}, {}
    for name, folder in sets.items():
        _, our_results[name] = run_skillpkg(binary, folder)
        if scanner:
            _, their_results[name] = run_cisco(scanner, folder)
    rounds = max(args.runs, args.cisco_runs if scanner else 0)
    for index in range(rounds):
        for name, folder in sets.items():
            if name == "benign":
                continue
            steps = []
            if index < args.runs:
                steps.append(lambda: ours[name].append(run_skillpkg(binary, folder)[0]))
            if scanner and index < args.cisco_runs:
                steps.append(lambda: theirs[name].append(run_cisco(scanner, folder)[0]))
            for step in steps if index % 2 == 0 else reversed(steps):
                step()

    print(f"skills: corpus {len(our_results['corpus'])}, malicious {len(our_results['malicious'])},"
          f" benign {len(our_results['benign'])}")
    our_highs = report(
        "skillpkg audit --json (one process a set, start-up included)",
        {"corpus": ours["corpus"], "malicious": ours["malicious"]},
        our_results,
        by_rule=True,
    )
    if scanner:
        report(
            f"cisco-ai-skill-scanner {CISCO_VERSION} scan-all --recursive (static analysers)",
            {"corpus": theirs["corpus"], "malicious": theirs["malicious"]},
            their_results,
            by_rule=False,
        )
        ratio = statistics.median(theirs["corpus"]) / statistics.median(ours["corpus"])
        print(f"\ncorpus time: skillpkg {ratio:.0f}x faster (ratio of the medians)")

    failures = []
    if statistics.median(ours["corpus"]) >= 1.0:
        failures.append("the corpus took 1 s or more")
    if len({line.split(":")[0] for line in our_highs}) >= 0.01 * len(our_results["corpus"]):
        failures.append("1% or more of the corpus has a high finding")
    if malicious_caught(our_results["malicious"], True)[2]:
        failures.append("a malicious skill was missed")
    if benign_within(our_results["benign"])[2]:
        failures.append("a benign skill went over its verdict")
    print("\ntargets: " + ("met" if not failures else "MISSED: " + "; ".join(failures)))
    if failures:
        sys.exit(1)


if __name__ == "__main__":
    main()
