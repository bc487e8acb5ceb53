#!/usr/bin/env bash
# count-words: count the words and characters of a text.
#
# Reads one JSON object on stdin (the tool's `input_schema` in SKILL.md) and
# writes one JSON object on stdout (its `output_schema`), with jq (named
# in the skill's `compatibility`). On bad input it writes an error
# object instead and exits with status 1.
set -euo pipefail

fail() {
  local code=$1 message=$2
  printf '{"status": "error", "error": {"code": "%s", "message": "%s", "retriable": false}}\n' \
    "$code" "$message"
  exit 1
}

command -v jq >/dev/null || fail UNAVAILABLE "jq is not installed"
input=$(cat)
jq -e 'type == "object" and (.text | type == "string")' <<<"$input" >/dev/null 2>&1 \
  || fail INVALID_ARGUMENT "the input must be an object with a string text"
jq -c '.text | {words: ([scan("\\S+")] | length), characters: length}' <<<"$input"
