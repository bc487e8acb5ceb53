"""Shared parts of the registry benchmarks (stdlib only): a Garage and a
PostgreSQL of the bench's own, an S3 client to put objects into Garage, the
raw HTTP publish, and the synthetic registry.

Not a benchmark itself; `publish_scale.py`, `replicas.py`, `resolve.py`,
`mirror.py` and `publish_cli.py` import it.

Garage and PostgreSQL are started as the tests start them
(tests/src/services/garage.rs, postgres.rs): each in a temporary folder of
its own (below `base`, default the system's temporary folder), on free
loopback ports. Garage runs `server --single-node
--default-bucket` (the layout, an access key and the bucket `skillpkg`
from `GARAGE_DEFAULT_*`, LMDB metadata, one replica); PostgreSQL is
`initdb` with trust authentication for the user `skillpkg`, `fsync=off`,
`full_page_writes=off`, `shared_buffers=16MB`, and runs as the `postgres`
user when the bench runs as root (it refuses to run as root). Both are
stopped and their folders deleted by `stop()`.
"""

import datetime
import hashlib
import hmac
import http.client
import io
import json
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.parse
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def binaries(skillpkg: Path | None, registry: Path | None) -> tuple[Path, Path]:
    """The `skillpkg` and `skillpkg-registry` under test: those given, else
    this tree's release build, built first when either is not given."""
    if skillpkg is None or registry is None:
        subprocess.run(["cargo", "build", "--release", "--quiet", "--bins"], cwd=ROOT, check=True)
    return ((skillpkg or ROOT / "target/release/skillpkg").resolve(),
            (registry or ROOT / "target/release/skillpkg-registry").resolve())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(seconds: float, ready, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not ready():
        if time.monotonic() > deadline:
            sys.exit(f"{what} did not start within {seconds:.0f} s")
        time.sleep(0.05)


def accepts(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of a process (its exited, waited-for
    children included), from /proc; 0 for a process that has gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1].split()
    except OSError:
        return 0.0
    ticks = os.sysconf("SC_CLK_TCK")
    return sum(int(value) for value in fields[11:15]) / ticks


def children(pid: int) -> list[int]:
    """The process ids whose parent is `pid`."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(") ", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


class Garage:
    """A single-node Garage 2.5 (`garage` on the PATH) on free loopback
    ports, with the bucket `skillpkg` owned by a fresh access key."""

    REGION = "garage"
    BUCKET = "skillpkg"

    def __init__(self, program: str | None = None, base: Path | None = None):
        self.program = program or shutil.which("garage") or str(Path.home() / ".cargo/bin/garage")
        if not Path(self.program).exists():
            sys.exit("no `garage` program: cargo install garage --version 2.5.0 --locked "
                     "--no-default-features --features bundled-libs,lmdb")
        self.root = Path(tempfile.mkdtemp(prefix="skillpkg-bench-garage-", dir=base))
        self.access_key_id = "GK" + secrets.token_hex(12)
        self.secret_access_key = secrets.token_hex(32)
        ports = set()
        while len(ports) < 3:
            ports.add(free_port())
        self.rpc_port, self.s3_port, self.web_port = sorted(ports)
        config = self.root / "garage.toml"
        # As the tests' kit writes it; a larger LMDB map, for 100,000 objects.
        config.write_text(f'''metadata_dir = "{self.root}/meta"
data_dir = "{self.root}/data"
db_engine = "lmdb"
lmdb_map_size = "8G"
replication_factor = 1
disable_scrub = true
rpc_bind_addr = "127.0.0.1:{self.rpc_port}"
rpc_public_addr = "127.0.0.1:{self.rpc_port}"
rpc_secret = "{secrets.token_hex(32)}"

[s3_api]
api_bind_addr = "127.0.0.1:{self.s3_port}"
s3_region = "{self.REGION}"

[s3_web]
bind_addr = "127.0.0.1:{self.web_port}"
root_domain = ".localhost"
''')
        env = {key: value for key, value in os.environ.items()
               if key not in ("GARAGE_CONFIG_FILE", "GARAGE_RPC_HOST", "GARAGE_RPC_SECRET", "GARAGE_RPC_SECRET_FILE")}
        env.update(GARAGE_DEFAULT_ACCESS_KEY=self.access_key_id, GARAGE_DEFAULT_SECRET_KEY=self.secret_access_key,
                   GARAGE_DEFAULT_BUCKET=self.BUCKET, NO_COLOR="1")
        self.log = open(self.root / "garage.log", "ab")
        self.process = subprocess.Popen([self.program, "-c", str(config), "server", "--single-node", "--default-bucket"],
                                        env=env, stdout=self.log, stderr=self.log, stdin=subprocess.DEVNULL)
        wait_until(60, lambda: self.process.poll() is not None
                   or all(accepts(port) for port in (self.rpc_port, self.s3_port, self.web_port)), "Garage")
        if self.process.poll() is not None:
            sys.exit(f"Garage exited: {(self.root / 'garage.log').read_text()[-3000:]}")

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.s3_port}"

    def env(self) -> dict[str, str]:
        """The environment that points `skillpkg-registry --storage s3://...`
        at this Garage."""
        return {"AWS_ENDPOINT_URL": self.endpoint, "AWS_REGION": self.REGION,
                "AWS_ACCESS_KEY_ID": self.access_key_id, "AWS_SECRET_ACCESS_KEY": self.secret_access_key,
                "AWS_ALLOW_HTTP": "true"}

    def client(self) -> "S3":
        return S3(self.s3_port, self.REGION, self.access_key_id, self.secret_access_key)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self.log.close()
        shutil.rmtree(self.root, ignore_errors=True)


class S3:
    """Path-style S3 requests signed with AWS Signature Version 4, over one
    keep-alive connection (one client a thread)."""

    def __init__(self, port: int, region: str, access_key_id: str, secret_access_key: str):
        self.port, self.region = port, region
        self.access_key_id, self.secret_access_key = access_key_id, secret_access_key
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

    def request(self, method: str, bucket: str, key: str = "", body: bytes = b"",
                query: dict[str, str] | None = None) -> tuple[int, bytes]:
        now = datetime.datetime.now(datetime.timezone.utc)
        stamp, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
        payload = hashlib.sha256(body).hexdigest()
        path = "/" + bucket + ("/" + urllib.parse.quote(key, safe="/~") if key else "")
        canonical_query = "&".join(f"{urllib.parse.quote(k, safe='~')}={urllib.parse.quote(v, safe='~')}"
                                   for k, v in sorted((query or {}).items()))
        host = f"127.0.0.1:{self.port}"
        headers = f"host:{host}\nx-amz-content-sha256:{payload}\nx-amz-date:{stamp}\n"
        signed = "host;x-amz-content-sha256;x-amz-date"
        canonical = f"{method}\n{path}\n{canonical_query}\n{headers}\n{signed}\n{payload}"
        scope = f"{day}/{self.region}/s3/aws4_request"
        to_sign = f"AWS4-HMAC-SHA256\n{stamp}\n{scope}\n{hashlib.sha256(canonical.encode()).hexdigest()}"
        key_bytes = ("AWS4" + self.secret_access_key).encode()
        for part in (day, self.region, "s3", "aws4_request"):
            key_bytes = hmac.new(key_bytes, part.encode(), hashlib.sha256).digest()
        signature = hmac.new(key_bytes, to_sign.encode(), hashlib.sha256).hexdigest()
        self.connection.request(method, path + ("?" + canonical_query if canonical_query else ""), body, {
            "Host": host, "x-amz-date": stamp, "x-amz-content-sha256": payload,
            "Authorization": f"AWS4-HMAC-SHA256 Credential={self.access_key_id}/{scope}, "
                             f"SignedHeaders={signed}, Signature={signature}"})
        response = self.connection.getresponse()
        return response.status, response.read()

    def put(self, bucket: str, key: str, body: bytes) -> None:
        status, text = self.request("PUT", bucket, key, body)
        if status != 200:
            sys.exit(f"S3 PUT {bucket}/{key}: {status} {text[:300]!r}")

    def count(self, bucket: str, prefix: str) -> int:
        """The number of objects under `prefix` (ListObjectsV2, paged)."""
        total, token = 0, None
        while True:
            query = {"list-type": "2", "prefix": prefix, "max-keys": "1000"}
            if token:
                query["continuation-token"] = token
            status, text = self.request("GET", bucket, query=query)
            if status != 200:
                sys.exit(f"S3 list {bucket}/{prefix}: {status} {text[:300]!r}")
            total += text.count(b"<Key>")
            marker = text.split(b"<NextContinuationToken>")
            if len(marker) < 2:
                return total
            token = marker[1].split(b"<")[0].decode()


def upload_tree(garage: Garage, folder: Path, prefix: str, threads: int = 8) -> int:
    """Puts every file below `folder` into Garage's bucket under `prefix`,
    `threads` connections at once; returns the number of files."""
    from concurrent.futures import ThreadPoolExecutor
    import threading

    files = [path for path in folder.rglob("*") if path.is_file()]
    local = threading.local()

    def put(path: Path) -> None:
        if not hasattr(local, "client"):
            local.client = garage.client()
        local.client.put(Garage.BUCKET, f"{prefix}/{path.relative_to(folder).as_posix()}", path.read_bytes())

    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(put, files, chunksize=64))
    return len(files)


class Postgres:
    """A PostgreSQL server (Debian's, the newest /usr/lib/postgresql/*/bin)
    on a free loopback port, trusting the user `skillpkg`."""

    USER = "skillpkg"

    def __init__(self, base: Path | None = None):
        versions = sorted((int(p.name), p / "bin") for p in Path("/usr/lib/postgresql").glob("*")
                          if p.name.isdigit() and (p / "bin/initdb").exists())
        if not versions:
            sys.exit("no PostgreSQL: apt-get install postgresql")
        self.bin = versions[-1][1]
        self.root = Path(tempfile.mkdtemp(prefix="skillpkg-bench-postgres-", dir=base))
        self.run_as = {}
        if os.geteuid() == 0:
            user = pwd.getpwnam("postgres")
            os.chown(self.root, user.pw_uid, user.pw_gid)
            self.run_as = {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}
        self.port = free_port()
        subprocess.run([self.bin / "initdb", "--pgdata", self.root / "data", "--username", self.USER, "--auth=trust",
                        "--encoding=UTF8", "--locale=C", "--no-sync"], cwd=self.root, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, **self.run_as)
        self.log = self.root / "postgres.log"
        with open(os.open(self.log, os.O_WRONLY | os.O_CREAT, 0o666), "wb") as log:
            if self.run_as:
                os.chown(self.log, self.run_as["user"], self.run_as["group"])
            self.process = subprocess.Popen(
                [self.bin / "postgres", "-D", self.root / "data", "-p", str(self.port),
                 "-c", "listen_addresses=127.0.0.1", "-c", f"unix_socket_directories={self.root}",
                 "-c", "fsync=off", "-c", "full_page_writes=off", "-c", "shared_buffers=16MB"],
                cwd=self.root, stdout=log, stderr=log, stdin=subprocess.DEVNULL, **self.run_as)
        wait_until(60, lambda: self.process.poll() is not None or subprocess.run(
            [self.bin / "pg_isready", "--quiet", "--host", "127.0.0.1", "--port", str(self.port),
             "--username", self.USER, "--dbname", "postgres"]).returncode == 0, "PostgreSQL")
        if self.process.poll() is not None:
            sys.exit(f"PostgreSQL exited: {self.log.read_text()[-3000:]}")

    def create_database(self, name: str) -> str:
        subprocess.run([self.bin / "createdb", "--host", "127.0.0.1", "--port", str(self.port),
                        "--username", self.USER, name], check=True)
        return f"postgres://{self.USER}@127.0.0.1:{self.port}/{name}"

    STATS = ("xact_commit", "xact_rollback", "tup_returned", "tup_fetched", "tup_inserted", "tup_updated",
             "tup_deleted", "blks_hit", "blks_read")

    def stats(self, database: str) -> dict[str, int]:
        """The counters of pg_stat_database for `database` (flushed by the
        backends about once a second)."""
        text = subprocess.run(["psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", self.USER, "-d", database,
                               "-Atc", f"SELECT {', '.join(self.STATS)} FROM pg_stat_database "
                               f"WHERE datname = '{database}'"],
                              capture_output=True, text=True, check=True).stdout.strip()
        return dict(zip(self.STATS, map(int, text.split("|"))))

    def cpu_seconds(self) -> float:
        """CPU time of the postmaster and every backend alive now (a
        backend that has exited is counted in the postmaster's children
        time)."""
        return cpu_seconds(self.process.pid) + sum(cpu_seconds(pid) for pid in children(self.process.pid))

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(3)  # SIGQUIT: immediate shutdown
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.root, ignore_errors=True)


# The raw HTTP publish and the synthetic registry.

def index_path(name: str) -> str:
    if len(name) <= 2:
        return f"index/{len(name)}/{name}"
    if len(name) == 3:
        return f"index/3/{name[0]}/{name}"
    return f"index/{name[0:2]}/{name[2:4]}/{name}"


def tarball(name: str, version: str = "", padding: int = 0) -> bytes:
    """A minimal skill archive: `SKILL.md` at its root, as `skillpkg pack`
    lays it out (`padding` lines more of body)."""
    text = (f"---\nname: {name}\ndescription: Benchmark skill {name}. Use when measuring.\n"
            f"{'version: ' + version + chr(10) if version else ''}---\n# {name}\n\nDo the step.\n"
            + "Do the next step.\n" * padding).encode()
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz", format=tarfile.PAX_FORMAT) as archive:
        info = tarfile.TarInfo("SKILL.md")
        info.size = len(text)
        info.mode = 0o644
        info.mtime = 0
        archive.addfile(info, io.BytesIO(text))
    return out.getvalue()


def multipart(name: str, version: str, archive: bytes | None = None) -> tuple[bytes, str]:
    boundary = uuid.uuid4().hex
    body = b""
    for key, value in (("name", name), ("version", version)):
        body += f'--{boundary}\r\nContent-Disposition: form-data; name="{key}"\r\n\r\n{value}\r\n'.encode()
    body += f'--{boundary}\r\nContent-Disposition: form-data; name="tarball"; filename="x.tgz"\r\n\r\n'.encode()
    body += (archive if archive is not None else tarball(name)) + f"\r\n--{boundary}--\r\n".encode()
    return body, f"multipart/form-data; boundary={boundary}"


class Server:
    """`skillpkg-registry serve` on a free loopback port, with a token."""

    def __init__(self, registry: Path, data: Path, database: str | None = None, storage: str | None = None,
                 env: dict[str, str] | None = None, extra: list[str] | None = None):
        self.extra = (["--database", database] if database else []) + (["--storage", storage] if storage else [])
        self.env = dict(os.environ, **(env or {}))
        self.token = subprocess.run(
            [registry, "token", "create", "--root", data, "--user", "bench", *self.extra],
            capture_output=True, text=True, check=True, env=self.env).stdout.strip()
        self.stderr = open(data / "serve.log", "ab") if data.exists() else subprocess.DEVNULL
        started = time.perf_counter()
        self.process = subprocess.Popen(
            [registry, "serve", "--root", data, "--listen", "127.0.0.1:0", *self.extra, *(extra or [])],
            stdout=subprocess.PIPE, stderr=self.stderr, text=True, env=self.env)
        line = self.process.stdout.readline().strip()
        self.start_seconds = time.perf_counter() - started
        if not line.startswith("listening on "):
            sys.exit(f"the server did not start: {line!r}; see {data / 'serve.log'}")
        self.url = line.removeprefix("listening on ")
        host, port = self.url.removeprefix("http://").split(":")
        self.host, self.port = host, int(port)
        self.connection = http.client.HTTPConnection(host, self.port)

    def publish(self, name: str, version: str, body: tuple[bytes, str] | None = None,
                connection: http.client.HTTPConnection | None = None) -> float:
        body, content_type = body or multipart(name, version)
        connection = connection or self.connection
        started = time.perf_counter()
        connection.request("PUT", "/api/v1/skills", body, {
            "Authorization": f"Bearer {self.token}", "Content-Type": content_type})
        response = connection.getresponse()
        text = response.read()
        took = time.perf_counter() - started
        if response.status != 201:
            sys.exit(f"publish of {name}@{version} failed: {response.status} {text[:300]!r}")
        return took

    def cpu_seconds(self) -> float:
        return cpu_seconds(self.process.pid)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        if self.stderr is not subprocess.DEVNULL:
            self.stderr.close()


def template_line(registry: Path, work: Path) -> dict:
    """A real index line to copy: one publish into a scratch registry."""
    scratch = Server(registry, work / "scratch")
    scratch.publish("template", "1.0.0")
    scratch.stop()
    line = json.loads((work / "scratch/public" / index_path("template")).read_text().splitlines()[0])
    shutil.rmtree(work / "scratch", ignore_errors=True)
    return line


def write_synthetic(tree: Path, template: dict, skills: int, versions: int, prefix: str = "scale",
                    archives: bool = False) -> None:
    """Writes the index files of `skills` skills of `versions` versions each
    into `tree` (a registry's public/), each line a copy of `template` with
    its name, version and checksum changed; with `archives`, a real archive
    of each version too, at its `dl/` path, whose sha256 the line carries."""
    for i in range(skills):
        name = f"{prefix}-{i:06d}"
        lines = []
        for v in range(versions):
            version = f"1.{v}.0"
            if archives:
                data = tarball(name, version)
                path = tree / "dl" / name / version / f"{name}-{version}.tgz"
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(data)
                cksum = hashlib.sha256(data).hexdigest()
            else:
                cksum = hashlib.sha256(f"{name}@{v}".encode()).hexdigest()
            record = dict(template, name=name, vers=version, cksum="sha256:" + cksum)
            lines.append(json.dumps(record, separators=(",", ":")))
        path = tree / index_path(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines) + "\n")
