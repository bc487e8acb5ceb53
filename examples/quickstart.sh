#!/usr/bin/env bash
# The quick start, end to end on the example material in this repository:
#   1. validate the example skills and pack them into deterministic tarballs;
#   2. search and inspect the example registry (a static tree, read from disk);
#   3. run a registry server on a loopback port (requiring signatures), make a
#      signing key, publish the example skills to it with `skillpkg publish`
#      (signed), read them back over HTTP, and verify one: with skillpkg, and
#      with the stock minisign tool when it is installed.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --release --quiet --bins
skillpkg=$PWD/target/release/skillpkg
registry=$PWD/target/release/skillpkg-registry
work=$(mktemp -d)
server=
cleanup() {
  [ -n "$server" ] && kill "$server" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "skillpkg validate examples/skills"
"$skillpkg" validate examples/skills

step "skillpkg pack examples/skills/pdf-processing"
"$skillpkg" pack examples/skills/pdf-processing -o "$work/"

step "packing every example twice gives byte-identical tarballs"
mkdir "$work/a" "$work/b"
for skill in examples/skills/*/; do
  "$skillpkg" pack --quiet --json "$skill" -o "$work/a/" > /dev/null
  "$skillpkg" pack --quiet --json "$skill" -o "$work/b/" > /dev/null
done
for tarball in "$work"/a/*.tgz; do
  cmp "$tarball" "$work/b/$(basename "$tarball")" && echo "identical: $(basename "$tarball")"
done

step "skillpkg search pdf --registry examples/registry"
"$skillpkg" search pdf --registry examples/registry

step "skillpkg info csv-insights --registry examples/registry"
"$skillpkg" info csv-insights --registry examples/registry

step "skillpkg-registry serve, then skillpkg publish each example skill, signed"
token=$("$registry" token create --root "$work/registry" --user quickstart 2>/dev/null)
"$registry" serve --root "$work/registry" --listen 127.0.0.1:0 --require-signatures > "$work/server.out" 2> "$work/server.err" &
server=$!
for _ in $(seq 100); do [ -s "$work/server.out" ] && break; sleep 0.1; done
url=$(sed -n 's/^listening on //p' "$work/server.out")
echo "registry at $url"
export SKILLPKG_CONFIG_DIR="$work/config"
"$skillpkg" key generate --no-password
"$skillpkg" login --registry "$url" --token "$token"
for skill in examples/skills/*/; do
  "$skillpkg" publish "$skill" --registry "$url"
done

step "skillpkg search pdf --registry $url"
"$skillpkg" search pdf --registry "$url"

step "skillpkg verify pdf-processing@1.2.0 --registry $url"
"$skillpkg" verify pdf-processing@1.2.0 --registry "$url"
if command -v minisign > /dev/null; then
  step "minisign -H -Vm pdf-processing-1.2.0.tgz -p signing.key.pub"
  minisign -H -Vm "$work/registry/public/dl/pdf-processing/1.2.0/pdf-processing-1.2.0.tgz" -p "$work/config/skillpkg/signing.key.pub"
fi

step "the served tree"
(cd "$work/registry/public" && find . -type f | sort)
