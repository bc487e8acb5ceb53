#!/usr/bin/env python3
"""Print the text of a PDF, or with --fields, its form fields as JSON."""

import json
import sys

from pypdf import PdfReader


def main(argv: list[str]) -> int:
    fields = "--fields" in argv
    paths = [arg for arg in argv if arg != "--fields"]
    if len(paths) != 1:
        print("usage: extract_text.py [--fields] FILE.pdf", file=sys.stderr)
        return 2
    reader = PdfReader(paths[0])
    if fields:
        print(json.dumps({name: str(field.get("/V", "")) for name, field in (reader.get_fields() or {}).items()}, indent=2))
    else:
        print("\f".join(page.extract_text() or "" for page in reader.pages))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
