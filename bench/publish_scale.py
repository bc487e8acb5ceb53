"""Publish cost against registry size: the raw HTTP publish into an empty
registry and into a large one, the same run, taking turns.

Usage: python3 bench/publish_scale.py [--skills 20000] [--versions 5]
           [--runs 31] [--registry PATH] [--storage folder|s3|both]
           [--database postgres://... | --postgres] [--work-dir DIR]
           [--gap SECONDS] [--signed]

Builds the release binaries (unless --registry is given), then makes two
data folders: an empty one, and one whose tree holds --skills skills of
--versions versions each (index files written directly, each line a copy
of a real publish's line with its name, version and checksum changed; no
archives, which a publish never reads). Each gets a server on a loopback
port; the large one records the tree's versions in its database at its
first start, which is timed. With --database (a PostgreSQL server URL
whose user may create databases), each server gets a database of its own
there instead of SQLite; --postgres starts a PostgreSQL of the bench's own
for that (benchkit.py: as the tests start theirs).

--storage s3 keeps both trees in a Garage of the bench's own (started as
the tests start theirs, on loopback) instead of the data folders: the
servers get `--storage s3://skillpkg/empty` and `s3://skillpkg/large`, and
the large tree's index files are written to a folder and put into the
bucket under `large/` by an S3 client in benchkit.py (SigV4, 8 connections)
before the server's first start, which then records them from the bucket.
--storage both runs the folder pair and the bucket pair in the same run,
four servers taking turns.

--work-dir puts the data folders (and Garage's and PostgreSQL's) there
instead of the system's temporary folder: /dev/shm takes the disk's
fsyncs out of the figures (a publish fsyncs five files on a folder).

--gap waits that long before each round: with 2.5 s, each server's
background rewrite of the discovery index (a second after a publish; about
5 MB at 20,000 skills) is done before the next round, so the figures are
the publish path alone; without it, the rounds follow each other and the
rewrites compete with the publishes for the two cores, as they would under
a steady stream of publishes.

Then --runs rounds, each publishing to every server in turns (which goes
first alternates), over one keep-alive connection each: a new version of an
existing skill, and the first version of a new name (which the look-alike
check compares with every name). Reported: the median, min and max of each,
large / empty as the ratio of the medians and the median of the per-round
ratios, for each storage; and each server's CPU time over the rounds (from
/proc, three seconds after the last publish, so its background rewrites of
the discovery index count) per publish: a figure the load on the machine
moves less than the times.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

from benchkit import Garage, Postgres, Server, template_line, upload_tree, write_synthetic

ROOT = Path(__file__).resolve().parent.parent


def create_database(url: str, name: str) -> str:
    subprocess.run(["psql", url, "-qc", f"CREATE DATABASE {name}"], check=True)
    return url.rsplit("/", 1)[0] + "/" + name


def describe(label: str, times: list[float]) -> float:
    median = statistics.median(times)
    print(f"  {label:<28} {median * 1000:8.2f} ms   ({min(times) * 1000:.2f} - {max(times) * 1000:.2f})")
    return median


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skills", type=int, default=20000)
    parser.add_argument("--versions", type=int, default=5)
    parser.add_argument("--runs", type=int, default=31)
    parser.add_argument("--registry", type=Path)
    parser.add_argument("--storage", choices=("folder", "s3", "both"), default="folder")
    parser.add_argument("--database", help="a PostgreSQL URL whose user may create databases")
    parser.add_argument("--postgres", action="store_true", help="start a PostgreSQL of the bench's own")
    parser.add_argument("--work-dir", type=Path)
    parser.add_argument("--gap", type=float, default=0.0, help="seconds to wait between rounds")
    parser.add_argument("--signed", action="store_true",
                        help="signed metadata on every registry (`keys init` before the first start)")
    args = parser.parse_args()

    registry = args.registry
    if registry is None:
        subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "skillpkg-registry"], cwd=ROOT, check=True)
        registry = ROOT / "target/release/skillpkg-registry"
    work = Path(tempfile.mkdtemp(prefix="skillpkg-scale-", dir=args.work_dir))
    servers: dict[tuple[str, str], Server] = {}
    services = []
    try:
        template = template_line(registry, work)
        large = work / "large"
        started = time.perf_counter()
        write_synthetic(large / "public", template, args.skills, args.versions)
        print(f"wrote {args.skills} index files, {args.skills * args.versions} versions, "
              f"in {time.perf_counter() - started:.1f} s")

        storages = ["folder", "s3"] if args.storage == "both" else [args.storage]
        garage = None
        if "s3" in storages:
            garage = Garage(base=args.work_dir)
            services.append(garage)
            started = time.perf_counter()
            count = upload_tree(garage, large / "public", "large")
            print(f"put {count} index files into Garage in {time.perf_counter() - started:.1f} s")
        database_url = args.database
        if args.postgres:
            postgres = Postgres(base=args.work_dir)
            services.append(postgres)
            database_url = postgres.create_database("bench")

        root_key = work / "root.key"
        if args.signed:
            subprocess.run([registry, "keys", "generate", root_key], check=True, capture_output=True)

        def signed(data: Path, extra: list[str], env: dict[str, str] | None) -> None:
            if args.signed:
                data.mkdir(exist_ok=True)
                subprocess.run([registry, "keys", "init", "--root", data, "--root-key", root_key, *extra],
                               check=True, capture_output=True, env=dict(os.environ, **(env or {})))

        for storage in storages:
            for which in ("empty", "large"):
                database = None
                if database_url:
                    database = create_database(database_url, f"bench_{storage}_{which}_{uuid.uuid4().hex[:8]}")
                db_args = ["--database", database] if database else []
                if storage == "folder":
                    data = large if which == "large" else work / "empty"
                    signed(data, db_args, None)
                    server = Server(registry, data, database)
                else:
                    data = work / f"s3-{which}"
                    data.mkdir()
                    location = f"s3://{Garage.BUCKET}/{which}"
                    signed(data, [*db_args, "--storage", location], garage.env())
                    server = Server(registry, data, database, location, garage.env())
                servers[(storage, which)] = server
            print(f"start, {storage}: empty {servers[(storage, 'empty')].start_seconds:.2f} s, "
                  f"large {servers[(storage, 'large')].start_seconds:.2f} s "
                  f"(recording {args.skills * args.versions} versions in the database)")

        # The same skills exist in both, for the new-version publishes.
        for storage in storages:
            for r in range(args.runs + 1):
                servers[(storage, "empty")].publish(f"scale-{r:06d}", "1.0.0")
        keys = list(servers)
        times = {(key, kind): [] for key in keys for kind in ("version", "name")}
        cpu_before = {key: server.cpu_seconds() for key, server in servers.items()}
        for r in range(args.runs + 1):
            time.sleep(args.gap)
            # Each server goes first in turn, and the order reverses every round.
            order = keys[r % len(keys):] + keys[:r % len(keys)]
            if r % 2:
                order.reverse()
            for key in order:
                server = servers[key]
                version = server.publish(f"scale-{r:06d}", f"2.{r}.0")
                name = server.publish(f"fresh-{r:04d}-{uuid.uuid4().hex[:6]}", "1.0.0")
                if r > 0:  # the first round warms up
                    times[(key, "version")].append(version)
                    times[(key, "name")].append(name)
        time.sleep(3)  # the discovery index is written a moment after the last publish
        cpu = {key: (server.cpu_seconds() - cpu_before[key]) / (2 * (args.runs + 1)) for key, server in servers.items()}
        backend = "PostgreSQL" if database_url else "SQLite"
        for storage in storages:
            place = "folder storage" if storage == "folder" else "S3 storage (Garage)"
            metadata = ", signed metadata" if args.signed else ""
            print(f"raw HTTP publish, {place}, {backend}{metadata}, {args.runs} each:")
            for kind, label in (("version", "a new version"), ("name", "a new name")):
                empty = describe(f"{label}, empty registry", times[((storage, "empty"), kind)])
                large_median = describe(f"{label}, {args.skills * args.versions} versions",
                                        times[((storage, "large"), kind)])
                per_round = statistics.median(
                    b / a for a, b in zip(times[((storage, "empty"), kind)], times[((storage, "large"), kind)]))
                verdict = "met" if large_median / empty <= 1.5 else "missed"
                print(f"  {'ratio':<28} {large_median / empty:8.2f}x (per round {per_round:.2f}x; target 1.5x: {verdict})")
            empty_cpu, large_cpu = cpu[(storage, "empty")], cpu[(storage, "large")]
            print(f"  {'server CPU a publish':<28} {empty_cpu * 1000:8.2f} ms empty, {large_cpu * 1000:.2f} ms large "
                  f"({large_cpu / empty_cpu:.2f}x; background work included)")
    finally:
        for server in servers.values():
            server.stop()
        for service in services:
            service.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
