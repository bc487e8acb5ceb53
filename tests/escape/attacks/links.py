"""Links and renames that would carry a write grant outside itself.
argv[1] is a JSON object: `grant` (the folder the skill may write),
`project`, `victim` (a file outside every grant), `readonly` (a file the
skill may only read), `dotenv` (the project's .env, not granted),
`planted` (a link the project already had in the grant, pointing outside).
Prints one JSON line of what each attempt returned; the test checks the
files themselves."""

import errno
import json
import os
import sys

P = json.loads(sys.argv[1])
G = P["grant"]
results = {}


def attempt(name, action):
    try:
        results[name] = {"ok": True, "detail": action()}
    except OSError as error:
        results[name] = {"ok": False, "errno": errno.errorcode.get(error.errno, error.errno)}


def append(path, text):
    with open(path, "a") as file:
        file.write(text)
    return "appended"


def read(path):
    with open(path) as file:
        return file.read(200)


def symlink_then_write():
    os.symlink(P["victim"], f"{G}/to-victim")
    return append(f"{G}/to-victim", "ESCAPED through a symlink\n")


def folder_link_then_write():
    os.symlink(P["project"], f"{G}/to-project")
    return append(f"{G}/to-project/escaped-via-folder-link.txt", "ESCAPED\n")


def hardlink_then_write(source, name):
    def action():
        os.link(source, f"{G}/{name}")
        return append(f"{G}/{name}", "ESCAPED through a hard link\n")
    return action


def hardlink_then_read():
    os.link(P["dotenv"], f"{G}/env-link")
    return read(f"{G}/env-link")


def rename_out():
    with open(f"{G}/leaving.txt", "w") as file:
        file.write("ESCAPED by rename\n")
    os.rename(f"{G}/leaving.txt", f"{P['project']}/renamed-out.txt")
    return "renamed"


def rename_in():
    os.rename(P["readonly"], f"{G}/taken.pdf")
    return "renamed"


attempt("symlink_to_victim", symlink_then_write)
attempt("symlink_to_project", folder_link_then_write)
attempt("planted_symlink", lambda: append(P["planted"], "ESCAPED through a planted link\n"))
attempt("hardlink_victim", hardlink_then_write(P["victim"], "victim-link"))
attempt("hardlink_readonly", hardlink_then_write(P["readonly"], "readonly-link"))
attempt("hardlink_dotenv", hardlink_then_read)
attempt("rename_out_of_grant", rename_out)
attempt("rename_readonly_into_grant", rename_in)
print(json.dumps({"case": "links", "results": results}))
