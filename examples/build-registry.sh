#!/usr/bin/env bash
# Rebuilds examples/registry/, the static registry of the example skills that
# the quick start reads. Deterministic: every version's publish time is fixed
# (skillpkg-registry build takes it from the archive's modification time), so
# running this again gives the same bytes; a test checks the checked-in tree
# is what this script makes.
#
# Usage: examples/build-registry.sh [OUT_DIR]   (default: examples/registry)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-examples/registry}
published="2026-11-22T00:00:00Z"

cargo build --quiet --bins
bin=target/debug
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/archives"
for skill in examples/skills/*/; do
  "$bin/skillpkg" pack --quiet --json "$skill" -o "$work/archives/" > /dev/null
done
touch -d "$published" "$work"/archives/*.tgz
rm -rf "$out"
"$bin/skillpkg-registry" build --from "$work/archives" --out "$out"
