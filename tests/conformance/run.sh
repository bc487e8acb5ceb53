#!/usr/bin/env bash
# Conformance with the reference validator (skills-ref, `agentskills validate`).
#
# Usage: tests/conformance/run.sh CORPUS_DIR
#
# CORPUS_DIR holds skills in folders and an `expected.tsv` with the reference
# verdict for each (columns: collection, skill_path, skill_file,
# reference_verdict, reference_message). Runs `skillpkg validate --strict`
# (the binary named by $SKILLPKG, else `skillpkg` on PATH) on every listed
# skill, prints each disagreement with the codes that decided it, and ends with
# `agree N, disagree M`.
#
# The corpus holds only the SKILL.md of each skill, not its other files, so
# links from SKILL.md to them cannot be checked: `broken-link` and
# `link-outside-skill` are allowed here. Set CONFORMANCE_ALLOW="" to check them
# anyway. Deliberate differences are explained in docs/skill-format.md.
set -euo pipefail

corpus=${1:?usage: tests/conformance/run.sh CORPUS_DIR}
skillpkg=${SKILLPKG:-skillpkg}
allow=${CONFORMANCE_ALLOW-broken-link,link-outside-skill}
expected="$corpus/expected.tsv"
[ -f "$expected" ] || { echo "error: $expected not found" >&2; exit 2; }
command -v "$skillpkg" >/dev/null || { echo "error: $skillpkg not found; set SKILLPKG" >&2; exit 2; }

paths=()
while IFS=$'\t' read -r collection skill_path _; do
  paths+=("$corpus/$collection/$skill_path")
done < <(tail -n +2 "$expected")

flags=(--strict --json)
[ -n "$allow" ] && flags+=(--allow "$allow")
report=$(mktemp)
trap 'rm -f "$report"' EXIT
status=0
"$skillpkg" validate "${flags[@]}" "${paths[@]}" > "$report" || status=$?
if [ "$status" -gt 1 ]; then
  echo "error: skillpkg validate failed with status $status" >&2
  exit 2
fi

python3 - "$corpus" "$expected" "$report" <<'PY'
import csv, json, os, sys
corpus, expected_path, report_path = sys.argv[1:]
with open(report_path) as f:
    report = json.load(f)
ours = {os.path.normpath(skill["path"]): skill for skill in report["skills"]}
agree = disagree = 0
with open(expected_path, newline="") as f:
    for row in csv.DictReader(f, delimiter="\t"):
        path = os.path.normpath(os.path.join(corpus, row["collection"], row["skill_path"]))
        skill = ours.get(path)
        if skill is None:
            print(f"MISSING   {row['collection']}/{row['skill_path']}: no result from skillpkg")
            disagree += 1
            continue
        verdict = "pass" if skill["valid"] else "fail"
        if verdict == row["reference_verdict"]:
            agree += 1
            continue
        disagree += 1
        codes = sorted({d["code"] for d in skill["diagnostics"] if d["severity"] == "error"})
        print(f"DISAGREE  {row['collection']}/{row['skill_path']}: reference {row['reference_verdict']}, "
              f"skillpkg {verdict} [{', '.join(codes)}]; reference says: {row['reference_message'][:120]}")
print(f"agree {agree}, disagree {disagree}")
PY
