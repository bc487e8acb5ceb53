#!/usr/bin/env python3
"""Time `skillpkg audit` and measure what it catches, against cisco-ai-skill-scanner.

Usage: bench/audit.py [CORPUS_DIR] [--runs N] [--cisco-runs N] [--skip-cisco]
                      [--skillpkg PATH] [--collection NAME=DIR ...]

The sets of skills:

- the corpus (default ../shared/corpus beside the project): real skills,
  where every `high` finding is presumed a false positive until judged;
- tests/fixtures/audit/malicious: skills in the shapes of real attacks,
  whose expected.tsv names, per skill, the rules that must catch it and the
  lowest severity that counts;
- tests/fixtures/audit/evasive: plain skills each hiding one attack from a
  line-by-line reading, whose expected.tsv gives each one's class, the
  rules any of which would rightly catch it, and the lowest severity that
  counts;
- tests/fixtures/audit/benign: legitimate skills that look suspicious,
  whose expected.tsv names the highest verdict each may get;
- each `--collection NAME=DIR` (repeatable): a public collection of skills,
  such as a vendor's skills repository, where, as in the corpus, every
  `high` finding is presumed false until judged.

skillpkg (the release build of this tree, or --skillpkg PATH) runs as one
`skillpkg audit DIR --json` process per set and round, wall time including
process start. cisco-ai-skill-scanner (PyPI, pinned below, installed into
target/bench-cisco on first use) runs `skill-scanner scan-all DIR
--recursive --format json` in its default static mode (no LLM, behavioural,
VirusTotal, AI Defense or OSV analyser: those need keys or the network), one
process per set and round too. Its CRITICAL and HIGH count as skillpkg's
high, its MEDIUM as medium. The two alternate round by round after one
untimed round of each, whose findings are the ones reported. Each run is
timed twice: wall time, and the CPU time (user + system) of the process and
the children it waited for, from getrusage(RUSAGE_CHILDREN) before and
after; CPU per skill is a round's CPU time over the skills the tool
reported in that set.

Prints, per set and tool: median and range of the wall times, median CPU
time per skill and the ratios cisco / skillpkg of both; on the malicious
set the skills caught at their documented severity; on the evasive set the
skills with any finding at medium or above, by class (for skillpkg also
those caught by one of their documented rules at their severity); on the
benign set those with a high finding and, for skillpkg, those within their
verdict; on the corpus and each collection every skill with a high finding,
with rule and file:line. Exits 1 when skillpkg misses a target: the corpus
audited in under 1 s, under 1% of its skills with a high finding, every
malicious row caught, every benign skill within its verdict, at most 1 in
20 benign skills with a high finding, at least 85% of the evasive skills
with a finding at medium or above, and, when cisco ran, a CPU time per
corpus skill at least 100 times below cisco's.
"""

import argparse
import csv
import json
import resource
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
FIXED_SETS = ("corpus", "malicious", "evasive", "benign")
EVASIVE_TARGET = 0.85
CPU_TARGET = 100


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


def timed(command: list[str]) -> tuple[float, float, subprocess.CompletedProcess]:
    """Runs `command`: wall seconds, CPU seconds (user + system, its own and
    its waited-for children's), and the finished process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, result


def run_skillpkg(binary: Path, folder: Path) -> tuple[float, float, dict[str, dict]]:
    """One audit of `folder`: wall and CPU seconds, and per skill (its path
    relative to the folder) the rank of its verdict and its findings."""
    wall, cpu, result = timed([str(binary), "audit", str(folder), "--json"])
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
    return wall, cpu, skills


def run_cisco(scanner: Path, folder: Path) -> tuple[float, float, dict[str, dict]]:
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "report.json"
        wall, cpu, result = timed(
            [str(scanner), "scan-all", str(folder), "--recursive", "--format", "json", "--compact", "-o", str(report)]
        )
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
    return wall, cpu, skills


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


def evasive_caught(skills: dict[str, dict], by_rule: bool) -> dict[str, list[str]]:
    """The evasive skills caught, by class, then under the key `missed` the
    ones that were not: caught is any finding at medium or above, or with
    `by_rule`, a finding of one of the skill's documented rules at its
    documented severity or above."""
    caught: dict[str, list[str]] = {"missed": []}
    for row in read_tsv(FIXTURES / "evasive" / "expected.tsv"):
        caught.setdefault(row["class"], [])
        skill = skills.get(row["skill"])
        if skill is None:
            hit = False
        elif by_rule:
            rules, floor = set(row["rules"].split(",")), RANK[row["min_severity"]]
            hit = any(rule in rules and rank >= floor for rule, rank, _ in skill["findings"])
        else:
            hit = skill["rank"] >= RANK["medium"]
        if hit:
            caught[row["class"]].append(row["skill"])
        else:
            caught["missed"].append(f"{row['skill']} ({row['class']}: {row['rules']} >= {row['min_severity']})")
    return caught


def benign_within(skills: dict[str, dict]) -> tuple[int, int, list[str]]:
    rows = read_tsv(FIXTURES / "benign" / "expected.tsv")
    over = []
    for row in rows:
        skill = skills.get(row["skill"])
        if skill is None or skill["rank"] > RANK[row["max_severity"]]:
            got = "not scanned" if skill is None else next(k for k, v in RANK.items() if v == skill["rank"])
            over.append(f"{row['skill']} ({got} > {row['max_severity']})")
    return len(rows) - len(over), len(rows), over


def at_least(skills: dict[str, dict], floor: str) -> list[str]:
    return sorted(name for name, skill in skills.items() if skill["rank"] >= RANK[floor])


def highs(skills: dict[str, dict]) -> list[str]:
    return sorted(
        f"{name}: {rule} at {place}"
        for name, skill in skills.items()
        for rule, rank, place in skill["findings"]
        if rank >= RANK["high"]
    )


class Tool:
    """One tool's findings (from the untimed round) and timed runs, per set."""

    def __init__(self, label: str, run, by_rule: bool):
        self.label, self.run, self.by_rule = label, run, by_rule
        self.results: dict[str, dict[str, dict]] = {}
        self.runs: dict[str, list[tuple[float, float]]] = {}

    def wall(self, name: str) -> float:
        return statistics.median(wall for wall, _ in self.runs[name])

    def cpu_per_skill(self, name: str) -> float:
        return statistics.median(cpu for _, cpu in self.runs[name]) / max(len(self.results[name]), 1)

    def wall_text(self, name: str) -> str:
        walls = [wall * 1000 for wall, _ in self.runs[name]]
        return f"{statistics.median(walls):,.1f} ms ({min(walls):,.1f} - {max(walls):,.1f})"

    def cpu_text(self, name: str) -> str:
        per_skill = [cpu * 1000 / max(len(self.results[name]), 1) for _, cpu in self.runs[name]]
        return f"{statistics.median(per_skill):,.2f} ms ({min(per_skill):,.2f} - {max(per_skill):,.2f})"


def row(label: str, *cells: str) -> None:
    print(f"  {label:<52}" + "".join(f"{cell:<36}" for cell in cells).rstrip())


def fraction(part: int, whole: int) -> str:
    return f"{part}/{whole} ({100 * part / max(whole, 1):.1f}%)"


def report_set(name: str, kind: str, tools: list[Tool]) -> None:
    """Prints one set's figures, the tools side by side, then the lists."""
    ours = tools[0]
    print(f"\n{name}" + ("" if kind == name else f" ({kind})"))
    row("", *[tool.label for tool in tools])
    row("skills audited", *[str(len(tool.results[name])) for tool in tools])
    row(f"wall, median of rounds (range)", *[tool.wall_text(name) for tool in tools])
    row("CPU per skill, median (range)", *[tool.cpu_text(name) for tool in tools])
    if len(tools) > 1:
        theirs = tools[1]
        print(f"  cisco / skillpkg: wall {theirs.wall(name) / ours.wall(name):.1f}x,"
              f" CPU per skill {theirs.cpu_per_skill(name) / ours.cpu_per_skill(name):.1f}x")
    results = [tool.results[name] for tool in tools]
    if kind == "malicious":
        caught = [malicious_caught(skills, tool.by_rule) for tool, skills in zip(tools, results)]
        row("caught at the documented severity", *[f"{c}/{t}" for c, t, _ in caught])
        row("with a finding at medium or above", *[fraction(len(at_least(s, "medium")), len(s)) for s in results])
        row("with a high finding", *[fraction(len(at_least(s, "high")), len(s)) for s in results])
        for tool, (_, _, missed) in zip(tools, caught):
            for miss in missed:
                print(f"    {tool.label.split()[0]} missed {miss}")
    elif kind == "evasive":
        total = len(read_tsv(FIXTURES / "evasive" / "expected.tsv"))
        medium = [evasive_caught(skills, by_rule=False) for skills in results]
        by_rule = evasive_caught(results[0], by_rule=True)
        row("caught at medium or above", *[fraction(total - len(c["missed"]), total) for c in medium])
        row("caught by a documented rule at its severity", fraction(total - len(by_rule["missed"]), total))
        classes = [line["class"] for line in read_tsv(FIXTURES / "evasive" / "expected.tsv")]
        for cls in dict.fromkeys(classes):
            count = classes.count(cls)
            row(f"  {cls}, medium or above (by rule)",
                f"{len(medium[0][cls])}/{count} ({len(by_rule[cls])}/{count})",
                *[f"{len(c[cls])}/{count}" for c in medium[1:]])
        for miss in medium[0]["missed"]:
            print(f"    skillpkg nothing at medium: {miss}")
        for miss in by_rule["missed"]:
            print(f"    skillpkg not by a documented rule: {miss}")
    elif kind == "benign":
        row("with a high finding", *[fraction(len(at_least(s, "high")), len(s)) for s in results])
        kept, total, over = benign_within(results[0])
        row("within the documented verdict", f"{kept}/{total}")
        for miss in over:
            print(f"    skillpkg over {miss}")
    if kind in ("corpus", "collection", "benign"):
        if kind != "benign":
            row("skills with a high finding", *[fraction(len(at_least(s, "high")), len(s)) for s in results])
        for tool, skills in zip(tools, results):
            for line in highs(skills):
                print(f"    {tool.label.split()[0]} high: {line}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path, nargs="?", default=ROOT.parent / "shared" / "corpus")
    parser.add_argument("--runs", type=int, default=21, help="timed rounds of skillpkg (default 21)")
    parser.add_argument("--cisco-runs", type=int, default=3, help="timed rounds of skill-scanner (default 3)")
    parser.add_argument("--skip-cisco", action="store_true", help="measure skillpkg alone")
    parser.add_argument("--skillpkg", type=Path, help="the skillpkg binary to time (default: build this tree)")
    parser.add_argument("--collection", action="append", default=[], metavar="NAME=DIR",
                        help="a public collection of skills to audit too (repeatable)")
    args = parser.parse_args()

    sets = {
        "corpus": args.corpus.resolve(),
        "malicious": FIXTURES / "malicious",
        "evasive": FIXTURES / "evasive",
        "benign": FIXTURES / "benign",
    }
    kinds = {name: name for name in sets}
    for item in args.collection:
        name, sep, folder = item.partition("=")
        if not sep or not name or not folder or name in sets:
            sys.exit(f"--collection {item}: expected NAME=DIR, NAME none of {', '.join(sets)} and given once")
        if not Path(folder).is_dir():
            sys.exit(f"--collection {item}: {folder} is not a folder")
        sets[name], kinds[name] = Path(folder).resolve(), "collection"

    if args.skillpkg is None:
        subprocess.run(["cargo", "build", "--release", "--quiet", "--bin", "skillpkg"], cwd=ROOT, check=True)
        binary = ROOT / "target" / "release" / "skillpkg"
    else:
        binary = args.skillpkg.resolve()

    tools = [Tool("skillpkg", lambda folder: run_skillpkg(binary, folder), by_rule=True)]
    rounds = {"skillpkg": args.runs}
    if not args.skip_cisco:
        scanner = cisco_scanner()
        if scanner is None:
            sys.exit(f"cisco-ai-skill-scanner {CISCO_VERSION} could not be installed: use --skip-cisco")
        tools.append(Tool(f"cisco {CISCO_VERSION} (static)", lambda folder: run_cisco(scanner, folder), by_rule=False))
        rounds[tools[1].label] = args.cisco_runs

    for tool in tools:
        for name, folder in sets.items():
            _, _, tool.results[name] = tool.run(folder)
            tool.runs[name] = []
    for index in range(max(rounds.values())):
        for name, folder in sets.items():
            steps = [tool for tool in tools if index < rounds[tool.label]]
            for tool in steps if index % 2 == 0 else reversed(steps):
                wall, cpu, _ = tool.run(folder)
                tool.runs[name].append((wall, cpu))
        print(f"round {index + 1} of {max(rounds.values())} done", file=sys.stderr)

    print(f"skillpkg: {binary}; rounds: " + ", ".join(f"{label} {n}" for label, n in rounds.items()))
    for name in sets:
        report_set(name, kinds[name], tools)

    ours = tools[0]
    failures = []
    if ours.wall("corpus") >= 1.0:
        failures.append("the corpus took 1 s or more")
    if len(at_least(ours.results["corpus"], "high")) >= 0.01 * len(ours.results["corpus"]):
        failures.append("1% or more of the corpus has a high finding")
    if malicious_caught(ours.results["malicious"], True)[2]:
        failures.append("a malicious skill was missed")
    if benign_within(ours.results["benign"])[2]:
        failures.append("a benign skill went over its verdict")
    if 20 * len(at_least(ours.results["benign"], "high")) > len(read_tsv(FIXTURES / "benign" / "expected.tsv")):
        failures.append("more than 1 in 20 benign skills has a high finding")
    evasive_total = len(read_tsv(FIXTURES / "evasive" / "expected.tsv"))
    evasive_missed = len(evasive_caught(ours.results["evasive"], by_rule=False)["missed"])
    if evasive_total - evasive_missed < EVASIVE_TARGET * evasive_total:
        failures.append(f"under {EVASIVE_TARGET:.0%} of the evasive set caught at medium or above")
    if len(tools) > 1:
        ratio = tools[1].cpu_per_skill("corpus") / ours.cpu_per_skill("corpus")
        if ratio < CPU_TARGET:
            failures.append(f"CPU per corpus skill {ratio:.1f}x below cisco's, under {CPU_TARGET}x")
    print("\ntargets: " + ("met" if not failures else "MISSED: " + "; ".join(failures)))
    if failures:
        sys.exit(1)


if __name__ == "__main__":
    main()
