#!/usr/bin/env python3
"""`skillpkg publish` as a command against the raw HTTP publish it makes:
the same skill, the same server, the same run, taking turns.

Usage: python3 bench/publish_cli.py [--runs 31] [--kb 40] [--content words|docs] [--signed]
           [--strace] [--skillpkg PATH] [--registry PATH] [--work-dir DIR]

Builds the release binaries (unless --skillpkg is given), starts
`skillpkg-registry serve` on loopback with a fresh data folder (folder
storage, SQLite) and writes a skill of about --kb KB (a SKILL.md and four
reference files of words, as mirror.py's; --kb 0: a SKILL.md alone), with
no version in its frontmatter. --content docs fills them with prose
instead: Markdown cut from this repository's docs/ (seven words repeated
compress 10 to 1 and are deflate's slow case; prose compresses about 3 to
1). Each round, in turns (which goes first alternates):

  command   `skillpkg publish DIR --version V --registry URL --token T -q`:
            a process that validates and packs the folder, reads the
            registry's config.json, and uploads (without --signed:
            --no-sign)
  raw       one `PUT /api/v1/skills` of the archive `skillpkg pack` made
            of the same folder for that version (and, with --signed, the
            signature `skillpkg sign` made and the public key), over a new
            connection, as the command's upload is; packing and signing
            are done before the round, untimed

Each side publishes versions of a name of its own (a new version of an
existing skill every round). A first, untimed round warms up. Then, as a
breakdown of the command's extra time, interleaved with them in each round:
`skillpkg --version` (process start), `skillpkg validate DIR`, `skillpkg
pack DIR` (validates too) and `skillpkg publish --dry-run` (validates,
packs, reads config.json; no upload). With --strace, one more publish of
each kind under `strace -f -c` (system calls by count) and `perf stat`
(task clock, page faults) of the publish, and `perf stat -r 5` of each
part (task clock, user and system time, page faults), when those programs
are there.

--work-dir puts the data folder, the skill and the client's folders there
(/dev/shm: no disk; a publish fsyncs five files on a folder).

Reported: the median, min and max of each, and command / raw as the ratio
of the medians and the median of the per-round ratios.
"""

import argparse
import http.client
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from benchkit import Server, binaries



def run(command, **kwargs) -> subprocess.CompletedProcess:
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)
    if result.returncode != 0:
        sys.exit(f"{' '.join(map(str, command))} failed with status {result.returncode}:\n{result.stderr}")
    return result


def timed(command, **kwargs) -> float:
    started = time.perf_counter()
    run(command, **kwargs)
    return time.perf_counter() - started


def write_skill(folder: Path, name: str, kb: int, content: str = "words") -> None:
    rng = random.Random(7)
    (folder / "references").mkdir(parents=True)
    if content == "docs":
        # Prose as skills hold it: Markdown cut from this repository's docs.
        docs = "".join(path.read_text() for path in sorted((Path(__file__).parent.parent / "docs").glob("*.md")))
        body = docs[: 4 * 1024] if kb else docs[:56]
        text = docs[len(body):]
    else:
        body = "Do the thing.\n" * (400 if kb else 4)
        text = ""
    (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: Benchmark skill {name}. Use when measuring.\n---\n# {name}\n" + body)
    parts = 4 if kb else 0
    share = int((kb * 1024 - len(body)) / parts) if parts else 0
    for part in range(parts):
        if content == "docs":
            (folder / "references" / f"part-{part}.md").write_text(text[part * share:(part + 1) * share])
            continue
        words = []
        size = 0
        while size < share:
            word = rng.choice(["alpha", "beta", "gamma", "delta", "skill", "agent", "file"])
            words.append(word)
            size += len(word) + 1
        (folder / "references" / f"part-{part}.md").write_text(" ".join(words))
    if not parts:
        (folder / "references").rmdir()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=31)
    parser.add_argument("--kb", type=int, default=40)
    parser.add_argument("--content", choices=["words", "docs"], default="words")
    parser.add_argument("--signed", action="store_true")
    parser.add_argument("--strace", action="store_true")
    parser.add_argument("--skillpkg", type=Path)
    parser.add_argument("--registry", type=Path)
    parser.add_argument("--work-dir", type=Path)
    args = parser.parse_args()
    skillpkg_path, registry = binaries(args.skillpkg, args.registry)
    skillpkg = str(skillpkg_path)
    work = Path(tempfile.mkdtemp(prefix="skillpkg-publish-cli-", dir=args.work_dir))
    server = None
    try:
        data = work / "registry"
        data.mkdir()
        server = Server(registry, data)
        origin = server.url + "/"
        env = dict(os.environ, SKILLPKG_CONFIG_DIR=str(work / "config"), SKILLPKG_CACHE_DIR=str(work / "cache"),
                   SKILLPKG_STATE_DIR=str(work / "state"))
        sign = []
        key_text = None
        if args.signed:
            run([skillpkg, "key", "generate", "--no-password", "-q"], env=env)
            key_text = next((work / "config").rglob("*.pub")).read_bytes()
        else:
            sign = ["--no-sign"]
        suffix = uuid.uuid4().hex[:6]
        names = {"command": f"bench-cli-{suffix}", "raw": f"bench-raw-{suffix}"}
        folders = {}
        for side, name in names.items():
            folders[side] = work / "skills" / name
            write_skill(folders[side], name, args.kb, args.content)
        archives = work / "archives"
        archives.mkdir()

        def prepare_raw(version: str) -> tuple[bytes, str]:
            """The body of the raw publish of `version`: packed (and
            signed) ahead."""
            archive = archives / f"{names['raw']}-{version}.tgz"
            run([skillpkg, "pack", folders["raw"], "--version", version, "--output", archive, "-q"], env=env)
            parts = [("name", None, names["raw"].encode()), ("version", None, version.encode()),
                     ("tarball", "x.tgz", archive.read_bytes())]
            if args.signed:
                run([skillpkg, "sign", archive, "-q"], env=env)
                parts += [("signature", "x.minisig", Path(f"{archive}.minisig").read_bytes()),
                          ("key", "key.pub", key_text)]
            boundary = uuid.uuid4().hex
            body = b""
            for key, filename, value in parts:
                disposition = f'form-data; name="{key}"' + (f'; filename="{filename}"' if filename else "")
                body += f"--{boundary}\r\nContent-Disposition: {disposition}\r\n\r\n".encode() + value + b"\r\n"
            body += f"--{boundary}--\r\n".encode()
            return body, f"multipart/form-data; boundary={boundary}"

        def command(version: str) -> float:
            return timed([skillpkg, "publish", folders["command"], "--version", version, "--registry", origin,
                          "--token", server.token, "-q", *sign], env=env)

        def raw(body: tuple[bytes, str]) -> float:
            connection = http.client.HTTPConnection(server.host, server.port)
            took = server.publish(names["raw"], "", body, connection)
            connection.close()
            return took

        parts_of = {
            "process start (--version)": [skillpkg, "--version"],
            "validate": [skillpkg, "validate", folders["command"], "-q"],
            "pack": [skillpkg, "pack", folders["command"], "--version", "9.9.9", "--output", work / "scratch.tgz", "-q"],
            "publish --dry-run": [skillpkg, "publish", folders["command"], "--version", "9.9.9", "--registry", origin,
                                  "--dry-run", "-q", *sign],
        }
        times: dict[str, list[float]] = {}
        for r in range(args.runs + 1):
            version = f"1.{r}.0"
            body = prepare_raw(version)
            sides = [("command", lambda: command(version)), ("raw", lambda: raw(body))]
            if r % 2:
                sides.reverse()
            round_times = {side: do() for side, do in sides}
            for label, argv in parts_of.items():
                round_times[label] = timed(argv, env=env)
            if r > 0:  # the first round warms up
                for label, took in round_times.items():
                    times.setdefault(label, []).append(took)

        size = len(prepare_raw("99.0.0")[0])
        kind = "signed" if args.signed else "unsigned (--no-sign)"
        print(f"publish of a {args.kb} KB skill of {args.content} ({size / 1024:.1f} KB request body), {kind}, "
              f"folder storage, SQLite, {args.runs} rounds:")

        def show(label: str) -> float:
            values = times[label]
            median = statistics.median(values)
            print(f"  {label:<28} {median * 1000:8.2f} ms   ({min(values) * 1000:.2f} - {max(values) * 1000:.2f})")
            return median

        command_median = show("command")
        raw_median = show("raw")
        per_round = statistics.median(c / r for c, r in zip(times["command"], times["raw"]))
        ratio = command_median / raw_median
        print(f"  {'command / raw':<28} {ratio:8.2f}x (per round {per_round:.2f}x; "
              f"target 2x: {'met' if ratio <= 2 else 'missed'})")
        print("the command's parts, each a process of its own, the same rounds:")
        for label in parts_of:
            show(label)

        if args.strace:
            for tool, prefix in (("strace", ["strace", "-f", "-c", "-o", str(work / "strace.txt")]),
                                 ("perf", ["perf", "stat", "-x,", "-o", str(work / "perf.txt"),
                                           "-e", "task-clock,page-faults,context-switches"])):
                if not shutil.which(tool):
                    print(f"{tool}: not installed")
                    continue
                version = f"5.{int(tool == 'perf')}.0"
                result = subprocess.run([*prefix, skillpkg, "publish", folders["command"], "--version", version,
                                         "--registry", origin, "--token", server.token, "-q", *sign],
                                        env=env, capture_output=True, text=True)
                if result.returncode != 0:
                    sys.exit(f"{tool} of `skillpkg publish` failed: {result.stderr}")
                output = (work / f"{tool}.txt").read_text()
                if tool == "strace":
                    lines = [line for line in output.splitlines() if line.strip() and not line.startswith(("-", "%"))]
                    total = next((line for line in lines if line.split()[-1] == "total"), "")
                    rows = sorted((line.split() for line in lines if line.split()[-1] != "total"),
                                  key=lambda row: -int(row[3]))
                    print(f"strace -f -c of one `skillpkg publish`: {total.split()[3] if total else '?'} calls; "
                          + ", ".join(f"{row[-1]} {row[3]}" for row in rows[:8]))
                else:
                    stats = {line.split(",")[2]: line.split(",")[0] for line in output.splitlines()
                             if line.count(",") >= 3 and not line.startswith("#")}
                    print("perf stat of one `skillpkg publish`: " + ", ".join(f"{key} {value}" for key, value in stats.items()))
                    # The parts, five runs each: CPU and page faults.
                    for label, argv in parts_of.items():
                        result = subprocess.run(["perf", "stat", "-x,", "-r", "5", "-o", str(work / "part.txt"),
                                                 "-e", "task-clock,page-faults,user_time,system_time", *argv],
                                                env=env, capture_output=True, text=True)
                        stats = {line.split(",")[2]: line.split(",")[0] for line in (work / "part.txt").read_text().splitlines()
                                 if line.count(",") >= 3 and not line.startswith("#")}

                        def ms(key: str) -> str:
                            value = stats.get(key, "")
                            return f"{int(value) / 1e6:.1f}" if value.isdigit() else "?"

                        print(f"  perf stat -r 5, {label}: task-clock {stats.get('task-clock', '?')} ms "
                              f"(user {ms('user_time')}, system {ms('system_time')}), page faults {stats.get('page-faults', '?')}")
    finally:
        if server:
            server.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
