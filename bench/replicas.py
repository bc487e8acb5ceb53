#!/usr/bin/env python3
"""Replicas' throughput: publishes per second through two `skillpkg-registry
serve` processes sharing one PostgreSQL and one bucket, against one of them
alone, the same registry, the same run.

Usage: python3 bench/replicas.py [--skills 20000] [--versions 5]
           [--clients 8] [--publishes 25] [--rounds 7] [--pause 3]
           [--registry PATH] [--work-dir DIR]

Builds the release binaries (unless --registry is given), starts a Garage
and a PostgreSQL of the bench's own (benchkit.py: as the tests start
theirs, on loopback), writes a synthetic registry of --skills skills of
--versions versions each (index files, as publish_scale.py writes them)
and puts it into the bucket under `reg/`. Two servers, each with a data
folder of its own, serve it with `--database postgres://.../bench
--storage s3://skillpkg/reg`: the first records the 100,000 versions in
the database at its start (timed), the second finds them there.

--work-dir puts the data folders, Garage's and PostgreSQL's there instead
of the system's temporary folder (/dev/shm: no disk).

Each round has two phases, in turns (which goes first alternates):

  1 replica   --clients threads, each with a keep-alive connection to the
              first server, each publishing --publishes new names
  2 replicas  the same, the threads split between the two servers

Every publish is the raw HTTP publish of publish_scale.py (the first
version of a name no one has published; the bodies are made before the
phase starts). A phase's figure is its publishes divided by its wall time,
from the moment all threads start to the last answer. Between phases the
bench waits --pause seconds, so each server's background rewrite of the
discovery index (a second after a burst) falls between them. A first,
untimed round warms up.

Reported: the median, min and max publishes per second of each, the ratio
2 replicas / 1 replica of the medians and the median of the per-round
ratios, the median publish latency, and where the CPU went: the CPU
seconds per publish of each server, Garage, PostgreSQL (the postmaster and
its backends) and this client, their sum against the cores' capacity over
the phase ("busy"), and the whole machine's busy share from /proc/stat
("machine": above "busy" when other work shares the cores), and
PostgreSQL's counters per publish (pg_stat_database: transactions, rows
returned by scans and fetched by index, blocks).
"""

import argparse
import http.client
import os
import shutil
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from benchkit import Garage, Postgres, Server, cpu_seconds, multipart, template_line, upload_tree, write_synthetic

ROOT = Path(__file__).resolve().parent.parent


def machine_cpu() -> tuple[float, float]:
    """The machine's busy and total CPU seconds since boot, /proc/stat."""
    fields = [int(value) for value in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    ticks = os.sysconf("SC_CLK_TCK")
    idle = fields[3] + fields[4]
    return (sum(fields) - idle) / ticks, sum(fields) / ticks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skills", type=int, default=20000)
    parser.add_argument("--versions", type=int, default=5)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--publishes", type=int, default=25, help="publishes per client per phase")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--pause", type=float, default=3.0)
    parser.add_argument("--registry", type=Path)
    parser.add_argument("--work-dir", type=Path)
    args = parser.parse_args()

    registry = args.registry
    if registry is None:
        subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "skillpkg-registry"], cwd=ROOT, check=True)
        registry = ROOT / "target/release/skillpkg-registry"
    work = Path(tempfile.mkdtemp(prefix="skillpkg-replicas-", dir=args.work_dir))
    services = []
    servers: list[Server] = []
    try:
        template = template_line(registry, work)
        tree = work / "tree"
        write_synthetic(tree, template, args.skills, args.versions)
        garage = Garage(base=args.work_dir)
        services.append(garage)
        started = time.perf_counter()
        count = upload_tree(garage, tree, "reg")
        print(f"put {count} index files ({args.skills * args.versions} versions) into Garage "
              f"in {time.perf_counter() - started:.1f} s")
        postgres = Postgres(base=args.work_dir)
        services.append(postgres)
        database = postgres.create_database("bench")
        for name in ("a", "b"):
            data = work / name
            data.mkdir()
            servers.append(Server(registry, data, database, f"s3://{Garage.BUCKET}/reg", garage.env()))
        print(f"start: first server {servers[0].start_seconds:.2f} s (recording the versions), "
              f"second {servers[1].start_seconds:.2f} s")

        configs = {"1 replica": [servers[0]], "2 replicas": servers}
        components = {"server 1": servers[0].cpu_seconds, "server 2": servers[1].cpu_seconds,
                      "Garage": lambda: cpu_seconds(garage.process.pid),
                      "PostgreSQL": postgres.cpu_seconds,
                      "client": lambda: sum(os.times()[:2])}

        def phase(label: str, tag: str) -> dict:
            targets = configs[label]
            bodies = [[(name, multipart(name, "1.0.0")) for name in
                       (f"rep-{tag}-c{client}-{i:03d}" for i in range(args.publishes))]
                      for client in range(args.clients)]
            latencies: list[float] = []
            lock = threading.Lock()
            barrier = threading.Barrier(args.clients + 1)

            def client(index: int) -> None:
                server = targets[index % len(targets)]
                connection = http.client.HTTPConnection(server.host, server.port, timeout=120)
                barrier.wait()
                mine = [server.publish(name, "1.0.0", body, connection) for name, body in bodies[index]]
                connection.close()
                with lock:
                    latencies.extend(mine)

            stats_before = postgres.stats("bench")
            threads = [threading.Thread(target=client, args=(i,)) for i in range(args.clients)]
            for thread in threads:
                thread.start()
            cpu_before = {key: read() for key, read in components.items()}
            machine_before = machine_cpu()
            barrier.wait()
            started = time.perf_counter()
            for thread in threads:
                thread.join()
            wall = time.perf_counter() - started
            cpu = {key: read() - cpu_before[key] for key, read in components.items()}
            machine = [after - before for after, before in zip(machine_cpu(), machine_before)]
            time.sleep(args.pause)
            total = args.clients * args.publishes
            stats = {key: (value - stats_before[key]) / total for key, value in postgres.stats("bench").items()}
            return {"rate": total / wall, "wall": wall, "p50": statistics.median(latencies),
                    "cpu": {key: value / total for key, value in cpu.items()},
                    "busy": sum(cpu.values()) / (wall * os.cpu_count()), "machine": machine[0] / machine[1],
                    "stats": stats}

        results: dict[str, list[dict]] = {label: [] for label in configs}
        labels = list(configs)
        for r in range(args.rounds + 1):
            order = labels if r % 2 == 0 else labels[::-1]
            for label in order:
                result = phase(label, f"{r:02d}{label[0]}")
                if r > 0:  # the first round warms up
                    results[label].append(result)

        total = args.clients * args.publishes
        print(f"new names published by {args.clients} clients ({total} a phase), "
              f"{args.skills * args.versions} versions in the registry, S3 storage (Garage), "
              f"PostgreSQL, {args.rounds} rounds:")
        for label in labels:
            rates = [result["rate"] for result in results[label]]
            p50 = statistics.median(result["p50"] for result in results[label])
            print(f"  {label:<11} {statistics.median(rates):7.1f} publishes/s ({min(rates):.1f} - {max(rates):.1f}), "
                  f"publish p50 {p50 * 1000:.1f} ms")
        one = [result["rate"] for result in results["1 replica"]]
        two = [result["rate"] for result in results["2 replicas"]]
        ratio = statistics.median(two) / statistics.median(one)
        print(f"  {'ratio':<11} {ratio:7.2f}x (per round {statistics.median(b / a for a, b in zip(one, two)):.2f}x; "
              f"target 1.6x: {'met' if ratio >= 1.6 else 'missed'})")
        print("CPU seconds per publish (median of the rounds), and the CPU busy of both cores:")
        print(f"  {'':<11} " + " ".join(f"{key:>11}" for key in components) + f" {'total':>9} {'busy':>6} {'machine':>8}")
        for label in labels:
            cpu = {key: statistics.median(result["cpu"][key] for result in results[label]) for key in components}
            busy = statistics.median(result["busy"] for result in results[label])
            machine = statistics.median(result["machine"] for result in results[label])
            print(f"  {label:<11} " + " ".join(f"{cpu[key] * 1000:8.1f} ms" for key in components)
                  + f" {sum(cpu.values()) * 1000:6.1f} ms {busy * 100:5.0f}% {machine * 100:7.0f}%")
        print("PostgreSQL's counters per publish (pg_stat_database, median of the rounds; the pause's "
              "background work included):")
        for label in labels:
            stats = {key: statistics.median(result["stats"][key] for result in results[label]) for key in Postgres.STATS}
            print(f"  {label:<11} " + ", ".join(f"{key} {value:.1f}" for key, value in stats.items()))
    finally:
        for server in servers:
            server.stop()
        for service in services:
            service.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
