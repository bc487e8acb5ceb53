#!/usr/bin/env bash
# The quick start: build skillpkg, validate the example skills, pack each into
# a deterministic tarball under target/quickstart/, and show that packing
# again gives the same bytes.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --release --quiet --bin skillpkg
skillpkg=target/release/skillpkg
out=target/quickstart
rm -rf "$out" && mkdir -p "$out"

echo "== skillpkg validate examples/skills"
"$skillpkg" validate examples/skills

for skill in examples/skills/*/; do
  echo
  echo "== skillpkg pack $skill -o $out/"
  "$skillpkg" pack "$skill" -o "$out/"
done

echo
echo "== packing again gives byte-identical tarballs"
again=$(mktemp -d)
trap 'rm -rf "$again"' EXIT
for skill in examples/skills/*/; do
  "$skillpkg" pack --quiet --json "$skill" -o "$again/" > /dev/null
done
for tarball in "$out"/*.tgz; do
  cmp "$tarball" "$again/$(basename "$tarball")"
  echo "identical: $(basename "$tarball")"
done
