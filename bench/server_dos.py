#!/usr/bin/env python3
"""Server denial-of-service benchmark: the peak memory of skillpkg-registry
under a flood of unauthenticated uploads, and how long slowloris connections
stay open, against a baseline revision built in the same run.

Usage: python3 bench/server_dos.py [--uploads 200] [--upload-mib 8]
                                   [--slowloris 800] [--slowloris-seconds 60]
                                   [--baseline 86e94ed] [--no-baseline]

Builds a release skillpkg-registry from this tree, and one from the baseline
revision (`git archive` into target/bench-baseline/REV, with its own target
folder), then measures each on loopback with a fresh data folder and its
default options:

1. Upload flood: N threads each connect and send `PUT /api/v1/skills` with a
   made-up bearer token and the Content-Length of an M MiB multipart upload,
   then write the body in 64 KiB pieces while reading the answer. Reported:
   the statuses, how many answers came before the client had sent the whole
   body, and the server's peak resident memory (VmHWM in /proc/PID/status,
   read after the flood; the server starts fresh, so it is the flood's peak).
2. Slowloris: K connections each send a request line and then one header
   byte a second, never finishing the headers. Reported: how many the
   server closed within S seconds, the median and largest time from connect
   to close, and how many never connected (past the server's connection
   limit, connects wait in the kernel's accept queue and then for its SYN
   retries).

Loopback only; every loop is bounded in count and time.
"""

import argparse
import os
import selectors
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BOUNDARY = "skillpkg-bench-boundary"
CHUNK = 64 * 1024


def build_current() -> Path:
    subprocess.run(
        ["cargo", "build", "--release", "--quiet", "-p", "skillpkg-registry", "--bin", "skillpkg-registry"],
        cwd=ROOT,
        check=True,
    )
    return ROOT / "target/release/skillpkg-registry"


def build_baseline(revision: str) -> Path:
    """Builds skillpkg-registry at `revision` in its own folder."""
    commit = subprocess.run(
        ["git", "rev-parse", "--verify", f"{revision}^{{commit}}"],
        cwd=ROOT, check=True, capture_output=True, text=True,
    ).stdout.strip()
    base = ROOT / "target/bench-baseline" / commit[:12]
    source = base / "src"
    if not (source / "Cargo.toml").exists():
        source.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "archive", commit], cwd=ROOT, check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(source)], input=archive, check=True)
    subprocess.run(
        ["cargo", "build", "--release", "--quiet", "-p", "skillpkg-registry", "--bin", "skillpkg-registry",
         "--target-dir", str(base / "target")],
        cwd=source,
        check=True,
    )
    return base / "target/release/skillpkg-registry"


class Server:
    """A `skillpkg-registry serve` on a free loopback port and a fresh data folder."""

    def __init__(self, binary: Path):
        self.root = Path(tempfile.mkdtemp(prefix="skillpkg-dos-"))
        self.log = open(self.root / "server.log", "wb")
        self.process = subprocess.Popen(
            [str(binary), "serve", "--root", str(self.root / "data"), "--listen", "127.0.0.1:0"],
            stdout=subprocess.PIPE,
            stderr=self.log,
        )
        line = self.process.stdout.readline().decode().strip()
        if not line.startswith("listening on http://"):
            sys.exit(f"unexpected first line from the server: {line!r}")
        host, port = line.removeprefix("listening on http://").rsplit(":", 1)
        self.address = (host, int(port))

    def memory(self) -> dict:
        fields = {}
        with open(f"/proc/{self.process.pid}/status") as status:
            for line in status:
                key, _, value = line.partition(":")
                if key in ("VmRSS", "VmHWM"):
                    fields[key] = int(value.split()[0]) / 1024  # kB -> MiB
        return fields

    def stop(self) -> None:
        self.process.kill()
        self.process.wait()
        self.log.close()
        shutil.rmtree(self.root, ignore_errors=True)


def upload(address, body_size: int, result: dict, start: threading.Barrier) -> None:
    head = (
        "PUT /api/v1/skills HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer skp_made-up-token\r\n"
        f"Content-Type: multipart/form-data; boundary={BOUNDARY}\r\nContent-Length: {body_size}\r\n\r\n"
    ).encode()
    preamble = (
        f"--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\nflood\r\n"
        f"--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"version\"\r\n\r\n1.0.0\r\n"
        f"--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"tarball\"; filename=\"x.tgz\"\r\n\r\n"
    ).encode()
    epilogue = f"\r\n--{BOUNDARY}--\r\n".encode()
    payload = body_size - len(preamble) - len(epilogue)
    answer = bytearray()
    done_sending = threading.Event()
    answered_early = [False]

    def read(sock):
        try:
            while True:
                data = sock.recv(65536)
                if not data:
                    break
                if not answer and not done_sending.is_set():
                    answered_early[0] = True
                answer.extend(data)
                if b"\r\n\r\n" in answer:
                    break
        except OSError:
            pass

    start.wait()
    try:
        sock = socket.create_connection(address, timeout=120)
    except OSError as error:
        result["status"] = f"connect: {error.__class__.__name__}"
        return
    reader = threading.Thread(target=read, args=(sock,))
    reader.start()
    try:
        sock.sendall(head + preamble)
        piece = b"x" * CHUNK
        sent = 0
        while sent < payload:
            size = min(CHUNK, payload - sent)
            sock.sendall(piece[:size])
            sent += size
        sock.sendall(epilogue)
    except OSError:
        pass
    done_sending.set()
    reader.join(120)
    sock.close()
    line = bytes(answer).split(b"\r\n", 1)[0].decode(errors="replace")
    result["status"] = line.split(" ", 2)[1] if line.startswith("HTTP/1.1 ") else "no answer"
    result["early"] = answered_early[0]


def upload_flood(binary: Path, uploads: int, upload_mib: int) -> dict:
    server = Server(binary)
    try:
        body_size = upload_mib * 1024 * 1024
        results = [dict() for _ in range(uploads)]
        barrier = threading.Barrier(uploads)
        threads = [
            threading.Thread(target=upload, args=(server.address, body_size, results[i], barrier))
            for i in range(uploads)
        ]
        started = time.monotonic()
        peak_rss = 0.0
        for thread in threads:
            thread.start()
        while any(thread.is_alive() for thread in threads):
            peak_rss = max(peak_rss, server.memory().get("VmRSS", 0))
            time.sleep(0.05)
        elapsed = time.monotonic() - started
        memory = server.memory()
        statuses: dict = {}
        for result in results:
            statuses[result.get("status")] = statuses.get(result.get("status"), 0) + 1
        return {
            "peak_mib": max(memory["VmHWM"], peak_rss),
            "statuses": statuses,
            "early": sum(1 for result in results if result.get("early")),
            "seconds": elapsed,
        }
    finally:
        server.stop()


def slowloris(binary: Path, connections: int, seconds: int) -> dict:
    """Opens `connections` at once (non-blocking connects: past the server's
    connection limit and the kernel's accept queue, a connect waits for the
    kernel's SYN retries), sends each a request line once it connects, then a
    header byte a second; records how long each stays open once connected."""
    server = Server(binary)
    selector = selectors.DefaultSelector()
    try:
        connecting = set()
        for _ in range(connections):
            sock = socket.socket()
            sock.setblocking(False)
            sock.connect_ex(server.address)
            connecting.add(sock)
            selector.register(sock, selectors.EVENT_WRITE)
        opened = {}
        closed_after = []
        deadline = time.monotonic() + seconds
        next_trickle = time.monotonic() + 1

        def close(sock):
            closed_after.append(time.monotonic() - opened.pop(sock))
            selector.unregister(sock)
            sock.close()

        while (opened or connecting) and time.monotonic() < deadline:
            for key, _ in selector.select(timeout=0.1):
                sock = key.fileobj
                if sock in connecting:
                    connecting.discard(sock)
                    if sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):
                        selector.unregister(sock)
                        sock.close()
                        continue
                    opened[sock] = time.monotonic()
                    selector.modify(sock, selectors.EVENT_READ)
                    try:
                        sock.send(b"GET /config.json HTTP/1.1\r\nHost: bench\r\n")
                    except OSError:
                        close(sock)
                    continue
                try:
                    data = sock.recv(4096)
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    data = b""
                # Any answer (a 408, say) is followed by the close; count the close.
                if not data:
                    close(sock)
            if time.monotonic() >= next_trickle:
                next_trickle += 1
                for sock in list(opened):
                    try:
                        sock.send(b"X")
                    except (BlockingIOError, InterruptedError):
                        pass
                    except OSError:
                        close(sock)
        still_open, never_connected = len(opened), len(connecting)
        for sock in list(opened) + list(connecting):
            sock.close()
        return {
            "closed": len(closed_after),
            "open_after": still_open,
            "never_connected": never_connected,
            "median_close": statistics.median(closed_after) if closed_after else None,
            "max_close": max(closed_after) if closed_after else None,
        }
    finally:
        selector.close()
        server.stop()


def describe(label: str, flood: dict, loris: dict, uploads: int, upload_mib: int, connections: int, seconds: int) -> None:
    print(f"== {label}")
    print(
        f"  upload flood, {uploads} x {upload_mib} MiB unauthenticated: peak RSS {flood['peak_mib']:.1f} MiB, "
        f"statuses {flood['statuses']}, {flood['early']} answered before the body was sent, {flood['seconds']:.1f} s"
    )
    if loris["closed"]:
        print(
            f"  slowloris, {connections} connections: {loris['closed']} closed within {seconds} s "
            f"(median {loris['median_close']:.1f} s, last {loris['max_close']:.1f} s after connecting), "
            f"{loris['open_after']} still open, {loris['never_connected']} not connected"
        )
    else:
        print(
            f"  slowloris, {connections} connections: none closed within {seconds} s, "
            f"{loris['open_after']} still open, {loris['never_connected']} not connected"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--uploads", type=int, default=200)
    parser.add_argument("--upload-mib", type=int, default=8)
    parser.add_argument("--slowloris", type=int, default=800)
    parser.add_argument("--slowloris-seconds", type=int, default=60)
    parser.add_argument("--baseline", default="86e94ed", help="the revision to compare with")
    parser.add_argument("--no-baseline", action="store_true")
    args = parser.parse_args()
    if not Path("/proc/self/status").exists():
        sys.exit("this benchmark reads /proc/PID/status: run it on Linux")

    binaries = [("this tree", build_current())]
    if not args.no_baseline:
        binaries.append((f"baseline {args.baseline}", build_baseline(args.baseline)))
    for label, binary in binaries:
        flood = upload_flood(binary, args.uploads, args.upload_mib)
        loris = slowloris(binary, args.slowloris, args.slowloris_seconds)
        describe(label, flood, loris, args.uploads, args.upload_mib, args.slowloris, args.slowloris_seconds)
        sys.stdout.flush()


if __name__ == "__main__":
    main()
