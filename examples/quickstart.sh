#!/usr/bin/env bash
# The quick start, end to end on the example material in this repository:
#   1. validate the example skills and pack them into deterministic tarballs;
#   2. install an example skill (and its dependency) from the example registry
#      (a static tree, read from disk) into a scratch project, for Claude Code
#      and for agents reading .agents/skills, and show the lock;
#      (one copy, symlinked: --link), then add a skill from a folder of the
#      project and one from a git repository (pinned by commit);
#   3. serve that project's skills over MCP with `skillpkg mcp` and make one
#      tool call (skills_load), as an agent would;
#   4. run a registry server on a loopback port (requiring signatures), make a
#      signing key, publish the example skills to it with `skillpkg publish`
#      (signed), read them back over HTTP, and verify one: with skillpkg, and
#      with the stock minisign tool when it is installed;
#   5. open the registry's web page: the search, and a page a skill (on a
#      terminal, in the browser, until Enter; elsewhere, fetched and shown).
set -euo pipefail
cd "$(dirname "$0")/.."

repo=$PWD
# The first build takes several minutes on a small machine; cargo shows
# its progress.
cargo build --release --bins
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

export SKILLPKG_CONFIG_DIR="$work/config" SKILLPKG_CACHE_DIR="$work/cache"
mkdir "$work/project"
step "in a scratch project: skillpkg init --target claude --target agents --link --registry examples/registry"
(cd "$work/project" && "$skillpkg" init --target claude --target agents --link --registry "$repo/examples/registry")

step "skillpkg add csv-insights --allow-unsigned   (the example registry is unsigned)"
(cd "$work/project" && "$skillpkg" add csv-insights --allow-unsigned)

step "what is installed, and skills.lock"
(cd "$work/project" && "$skillpkg" list && find .claude -type f | sort && ls -l .agents/skills && cat skills.lock)

step "skillpkg add ./skills/meeting-notes   (a skill from a folder of the project)"
(cd "$work/project" && "$skillpkg" new meeting-notes --path skills \
    --description "Turns meeting transcripts into notes with decisions and actions. Use when the user shares a meeting transcript." > /dev/null \
  && "$skillpkg" add ./skills/meeting-notes)

step "skillpkg add git+file://.../skills.git#v1 --skill pdf-processing   (a skill from a git repository, pinned by commit)"
# A repository made here: the example skills, committed and tagged.
cp -r examples/skills "$work/skills.git"
git -C "$work/skills.git" init -q -b main
git -C "$work/skills.git" add -A
git -C "$work/skills.git" -c user.name=quickstart -c user.email=quickstart@example.com commit -q -m "example skills"
git -C "$work/skills.git" tag v1
(cd "$work/project" && "$skillpkg" add "git+file://$work/skills.git#v1" --skill pdf-processing \
  && grep -B2 -A3 '^source = "git+\|^source = "path:' skills.lock)

step "skillpkg mcp: an agent's tool call, skills_load csv-insights, over MCP on stdio"
# What an MCP client (Claude Code, Codex, VS Code) sends: initialize, then
# one tools/call. The reply is the receipt and the skill's instructions.
python3 - "$skillpkg" "$work/project" <<'PY'
import json, subprocess, sys
server = subprocess.Popen([sys.argv[1], "mcp", "--project", sys.argv[2]], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
def send(message):
    server.stdin.write(json.dumps(message) + "\n"); server.stdin.flush()
    return json.loads(server.stdout.readline()) if "id" in message else None
send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "quickstart", "version": "1"}}})
send({"jsonrpc": "2.0", "method": "notifications/initialized"})
request = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "skills_load", "arguments": {"names": ["csv-insights"]}}}
print("->", json.dumps(request))
reply = send(request)["result"]
print("<- receipt:", json.dumps(reply["structuredContent"], indent=2))
print("<- instructions:\n" + reply["content"][1]["text"])
server.stdin.close(); server.wait()
PY

step "skillpkg-registry serve, then skillpkg publish each example skill, signed"
token=$("$registry" token create --root "$work/registry" --user quickstart 2>/dev/null)
"$registry" serve --root "$work/registry" --listen 127.0.0.1:0 --require-signatures > "$work/server.out" 2> "$work/server.err" &
server=$!
for _ in $(seq 100); do [ -s "$work/server.out" ] && break; sleep 0.1; done
url=$(sed -n 's/^listening on //p' "$work/server.out")
echo "registry at $url"
"$skillpkg" key generate --no-password
"$skillpkg" login --registry "$url" --token "$token"
for skill in examples/skills/*/; do
  "$skillpkg" publish "$skill" --registry "$url"
done

step "skillpkg search pdf --registry $url"
"$skillpkg" search pdf --registry "$url"

step "a second project installs from the server: signatures checked, signer pinned"
mkdir "$work/project2"
(cd "$work/project2" && "$skillpkg" init --target claude --registry "$url" && "$skillpkg" add pdf-processing && grep -A7 'name = "pdf-processing"' skills.lock)

step "skillpkg verify pdf-processing@1.2.0 --registry $url"
"$skillpkg" verify pdf-processing@1.2.0 --registry "$url"
if command -v minisign > /dev/null; then
  step "minisign -H -Vm pdf-processing-1.2.0.tgz -p signing.key.pub"
  minisign -H -Vm "$work/registry/public/dl/pdf-processing/1.2.0/pdf-processing-1.2.0.tgz" -p "$work/config/skillpkg/signing.key.pub"
fi

step "the served tree"
(cd "$work/registry/public" && find . -type f | sort)

step "the registry's web page: $url/"
# Static HTML in the tree (docs/web.md): the home page searches in the
# browser; each skill has a page with its SKILL.md, versions, signer,
# provenance, audit verdict and files.
python3 - "$url" <<'PY'
import re, sys, urllib.request
for page in ["/", "/?q=pdf", "/skills/pdf-processing.html"]:
    with urllib.request.urlopen(sys.argv[1] + page) as response:
        html = response.read().decode()
    print(sys.argv[1] + page, "->", response.status, re.search("<title>(.*?)</title>", html).group(1))
PY
if [ -t 0 ] && [ -t 1 ]; then
  opener=$(command -v xdg-open || command -v open || true)
  if [ -n "$opener" ]; then
    "$opener" "$url/" >/dev/null 2>&1 || true
  fi
  read -r -p "Open $url/ in a browser; press Enter to stop the registry. " _
fi
