#!/usr/bin/env python3
"""count-words: count the words and characters of a text.

Reads one JSON object on stdin (the tool's `input_schema` in SKILL.md) and
writes one JSON object on stdout (its `output_schema`). On bad input it
writes an error object instead and exits with status 1.
"""

import json
import sys


def count_words(args):
    if not isinstance(args, dict) or not isinstance(args.get("text"), str):
        raise ValueError("the input must be an object with a string `text`")
    text = args["text"]
    return {"words": len(text.split()), "characters": len(text)}


def main():
    try:
        result = count_words(json.load(sys.stdin))
    except ValueError as error:
        failure = {"code": "INVALID_ARGUMENT", "message": str(error), "retriable": False}
        print(json.dumps({"status": "error", "error": failure}))
        return 1
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
