//! A single-node Garage (<https://garagehq.deuxfleurs.fr>) of its own for
//! a test: an S3 API, a website endpoint that serves buckets over plain
//! HTTP, an access key and a bucket the key owns.
//!
//! Layout of the folder: `garage.toml` (the configuration: metadata in
//! `meta/` with LMDB, data in `data/`, one replica, everything on
//! 127.0.0.1), and `garage.log` (the server's output, kept across restarts).
//!
//! Garage starts with `server --single-node --default-bucket`, which
//! assigns the node its layout (zone `dc1`, the disk's capacity) and
//! creates the access key and bucket from `GARAGE_DEFAULT_*` variables: the
//! same as `garage layout assign` / `layout apply` / `key import` /
//! `bucket create` / `bucket allow --read --write --owner`, without a
//! round trip each. Website access and aliases are set through `garage
//! json-api` (the admin API over Garage's RPC), whose JSON answers, unlike
//! the CLI's tables, are meant to be read by programs.
//!
//! # The website endpoint
//!
//! Garage picks the bucket a website request reads from its `Host` header:
//! `<bucket>.localhost` (the configured `root_domain`), or a host that is
//! itself a bucket's global alias. The kit's bucket has the alias
//! `localhost`, so [`Garage::web_url`] (`http://localhost:PORT`) reaches it
//! from any client, the `skillpkg` binary included. Other buckets are at
//! `http://<bucket>.localhost:PORT`, a name the system resolver does not
//! know: send the request to [`Garage::web_address`] (reqwest:
//! `ClientBuilder::resolve("<bucket>.localhost", address)`), or to
//! `http://127.0.0.1:PORT` with the header `Host: <bucket>.localhost`.
//!
//! # What Garage does not do
//!
//! Garage 2.5 ignores `If-None-Match: *` and `If-Match` on PUT: the write
//! overwrites and answers 200 (`tests/tests/e2e/services.rs` checks it, so
//! an upgrade that changes it is noticed). Code that needs a write to
//! happen once must not rest on them.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

use super::Supervisor;

/// The variable that names the `garage` program, instead of the one on
/// the PATH or in `~/.cargo/bin`.
pub const SKILLPKG_TEST_GARAGE: &str = "SKILLPKG_TEST_GARAGE";

/// What to do when Garage is missing.
const INSTALL_HINT: &str = "install Garage with `cargo install garage --version 2.5.0 --locked \
     --no-default-features --features bundled-libs,lmdb` (.ci/run does; about 15 minutes \
     on 2 cores), \
     or set SKILLPKG_TEST_GARAGE to a `garage` program";

/// The region Garage's S3 API expects in signatures.
const REGION: &str = "garage";

/// The bucket the kit creates, and the key that owns it.
const BUCKET: &str = "skillpkg";

/// The suffix of website hosts: `<bucket>.localhost`.
const WEB_ROOT_DOMAIN: &str = "localhost";

/// How long a start may take on a loaded 2-core machine.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// A single-node Garage on free loopback ports with a temporary folder,
/// stopped (and its folder deleted) when dropped.
#[derive(Debug)]
pub struct Garage {
    program: PathBuf,
    root: PathBuf,
    rpc_port: u16,
    s3_port: u16,
    web_port: u16,
    access_key_id: String,
    secret_access_key: String,
    supervisor: Supervisor,
    buckets: AtomicU32,
}

impl Garage {
    /// Writes a configuration in a new temporary folder, starts Garage on
    /// it, and sets up the bucket `skillpkg`: owned by the kit's key,
    /// served by the website endpoint. Panics with what to install when
    /// Garage is missing or does not start.
    pub fn start() -> Self {
        let program = program();
        let root = super::kept_temporary_folder("skillpkg-garage-");
        let config = root.join("garage.toml");
        // The formats `garage key create` makes.
        let access_key_id = format!("GK{}", super::random_hex(12));
        let secret_access_key = super::random_hex(32);
        let mut server = Command::new(&program);
        without_garage_variables(&mut server)
            .arg("-c")
            .arg(&config)
            .args(["server", "--single-node", "--default-bucket"])
            .env("GARAGE_DEFAULT_ACCESS_KEY", &access_key_id)
            .env("GARAGE_DEFAULT_SECRET_KEY", &secret_access_key)
            .env("GARAGE_DEFAULT_BUCKET", BUCKET)
            // A log without terminal colour codes.
            .env("NO_COLOR", "1");
        // SIGKILL when the test process ends: no clean stop, which would
        // wait for the clients' idle connections (see `stop`), and nothing
        // to keep.
        let supervisor = Supervisor::new(
            "Garage",
            &server,
            &root.join("garage.log"),
            &root,
            "KILL",
            None,
        );
        let [rpc_port, s3_port, web_port] = distinct_free_ports();
        let mut garage = Self {
            program,
            root,
            rpc_port,
            s3_port,
            web_port,
            access_key_id,
            secret_access_key,
            supervisor,
            buckets: AtomicU32::new(0),
        };
        garage.write_config();
        garage.start_server();
        let id = garage.bucket_id(BUCKET);
        garage.enable_website(&id);
        garage.json_api(
            "AddBucketAlias",
            &json!({ "bucketId": id, "globalAlias": WEB_ROOT_DOMAIN }),
        );
        garage
    }

    /// Returns the server that every test of this test binary shares,
    /// started on first use. It cannot be stopped (the borrow is shared):
    /// give each test its own bucket with [`Garage::fresh_bucket`]. Its
    /// supervisor stops it and deletes its folder when the test binary
    /// exits.
    pub fn shared() -> &'static Self {
        static SHARED: OnceLock<Garage> = OnceLock::new();
        SHARED.get_or_init(Self::start)
    }

    /// Returns the S3 API's URL, `http://127.0.0.1:PORT`, for path-style
    /// requests (`/<bucket>/<key>`).
    pub fn s3_endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.s3_port)
    }

    /// Returns the environment that points `skillpkg-registry --storage
    /// s3://...` (any `object_store` user) at this server with the kit's
    /// key: `AWS_ENDPOINT_URL`, `AWS_REGION`, the key and
    /// `AWS_ALLOW_HTTP`.
    pub fn s3_env(&self) -> Vec<(String, String)> {
        [
            ("AWS_ENDPOINT_URL", self.s3_endpoint()),
            ("AWS_REGION", REGION.to_owned()),
            ("AWS_ACCESS_KEY_ID", self.access_key_id.clone()),
            ("AWS_SECRET_ACCESS_KEY", self.secret_access_key.clone()),
            ("AWS_ALLOW_HTTP", "true".to_owned()),
        ]
        .into_iter()
        .map(|(key, value)| (key.to_owned(), value))
        .collect()
    }

    /// Returns the region to sign S3 requests for, `garage`.
    pub fn region(&self) -> &str {
        REGION
    }

    /// Returns the access key's id, which owns every bucket the kit creates.
    pub fn access_key_id(&self) -> &str {
        &self.access_key_id
    }

    /// Returns the access key's secret.
    pub fn secret_access_key(&self) -> &str {
        &self.secret_access_key
    }

    /// Returns the name of the kit's bucket, `skillpkg`.
    pub fn bucket(&self) -> &str {
        BUCKET
    }

    /// Returns the website URL of the kit's bucket, `http://localhost:PORT`:
    /// `GET <url>/<key>` reads an object without credentials.
    pub fn web_url(&self) -> String {
        format!("http://localhost:{}", self.web_port)
    }

    /// Returns the website URL of `bucket`, `http://<bucket>.localhost:PORT`,
    /// which only a client told that the host is at [`Garage::web_address`]
    /// reaches (see the module documentation).
    pub fn web_url_of(&self, bucket: &str) -> String {
        format!("http://{}:{}", self.web_host_of(bucket), self.web_port)
    }

    /// Returns the `Host` header that makes the website endpoint serve
    /// `bucket`, `<bucket>.localhost`.
    pub fn web_host_of(&self, bucket: &str) -> String {
        format!("{bucket}.{WEB_ROOT_DOMAIN}")
    }

    /// Returns the website endpoint's address, `127.0.0.1:PORT`.
    pub fn web_address(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.web_port))
    }

    /// Creates the bucket `name` (lowercase letters, digits and `-`,
    /// starting with a letter, 3 to 63 characters), gives the kit's key
    /// read, write and owner rights on it and serves it on the website
    /// endpoint. Panics if it exists.
    pub fn create_bucket(&self, name: &str) {
        assert!(
            super::is_plain_name(name, '-'),
            "{name:?} is not a bucket name the kit creates: use lowercase letters, \
             digits and `-`, starting with a letter, 3 to 63 characters"
        );
        let bucket = self.json_api("CreateBucket", &json!({ "globalAlias": name }));
        let id = bucket["id"]
            .as_str()
            .unwrap_or_else(|| panic!("CreateBucket answered no id: {bucket}"))
            .to_owned();
        self.json_api(
            "AllowBucketKey",
            &json!({
                "bucketId": id,
                "accessKeyId": self.access_key_id,
                "permissions": { "read": true, "write": true, "owner": true },
            }),
        );
        self.enable_website(&id);
    }

    /// Creates a bucket with a name unique on this server (`test-<n>`), as
    /// [`Garage::create_bucket`] does, and returns its name: how tests
    /// share one server.
    pub fn fresh_bucket(&self) -> String {
        let name = format!("test-{}", self.buckets.fetch_add(1, Ordering::Relaxed));
        self.create_bucket(&name);
        name
    }

    /// Returns the server's log, across restarts.
    pub fn log(&self) -> String {
        fs_err::read_to_string(self.log_path()).unwrap_or_default()
    }

    /// Returns true if and only if the server process runs.
    pub fn is_running(&self) -> bool {
        self.supervisor.server_is_running()
    }

    /// Stops the server cleanly (SIGINT) and waits until it has exited; the
    /// data stays. Garage then finishes the requests in flight, but also
    /// waits up to 10 seconds for clients to close their idle keep-alive
    /// connections: with an S3 client alive (an object_store client, a
    /// registry server), this takes the full 10 seconds. Use
    /// [`Garage::kill`] where a clean stop is not the point.
    pub fn stop(&mut self) {
        self.supervisor.stop("INT");
    }

    /// Kills the server (SIGKILL), as a crash or a lost machine would, and
    /// waits until it has exited; the data stays, and what Garage
    /// acknowledged is still there when it starts again (it writes before
    /// it answers; only a lost machine loses what the kernel had not yet
    /// written to disk).
    pub fn kill(&mut self) {
        self.supervisor.stop("KILL");
    }

    /// Starts the stopped (or crashed) server again on the same folder and
    /// ports, and returns once its APIs accept connections.
    pub fn start_again(&mut self) {
        assert!(!self.is_running(), "Garage is already running");
        self.start_server();
    }

    /// Stops the server cleanly and starts it again (see [`Garage::stop`]
    /// for how long the stop takes).
    pub fn restart(&mut self) {
        self.stop();
        self.start_again();
    }

    fn log_path(&self) -> PathBuf {
        self.root.join("garage.log")
    }

    fn config_path(&self) -> PathBuf {
        self.root.join("garage.toml")
    }

    fn write_config(&self) {
        let path = |name: &str| Value::String(self.root.join(name).display().to_string());
        let address = |port: u16| Value::String(format!("127.0.0.1:{port}"));
        let config = json!({
            "metadata_dir": path("meta"),
            "data_dir": path("data"),
            // LMDB is the engine the build in .ci/run has (the smallest one).
            "db_engine": "lmdb",
            "lmdb_map_size": "1G",
            "replication_factor": 1,
            // Nothing to check in a folder that lives for one test.
            "disable_scrub": true,
            "rpc_bind_addr": address(self.rpc_port),
            "rpc_public_addr": address(self.rpc_port),
            "rpc_secret": super::random_hex(32),
            "s3_api": {
                "api_bind_addr": address(self.s3_port),
                "s3_region": REGION,
            },
            "s3_web": {
                "bind_addr": address(self.web_port),
                "root_domain": format!(".{WEB_ROOT_DOMAIN}"),
            },
        });
        let text = toml::to_string(&config).expect("the configuration is TOML");
        fs_err::write(self.config_path(), text).expect("write garage.toml");
    }

    fn start_server(&mut self) {
        self.supervisor.start();
        // Garage sets up the layout, key and bucket before it opens its
        // APIs: once they accept connections, it serves.
        let ports = [self.rpc_port, self.s3_port, self.web_port];
        let ready = crate::wait_until(START_TIMEOUT, || {
            !self.supervisor.server_is_running()
                || ports
                    .iter()
                    .all(|port| std::net::TcpStream::connect(("127.0.0.1", *port)).is_ok())
        });
        if !ready || !self.supervisor.server_is_running() {
            self.supervisor.stop("KILL");
            panic!(
                "Garage did not start (S3 API on 127.0.0.1:{}) within {START_TIMEOUT:?}; its log:\n{}\nhint: {INSTALL_HINT}",
                self.s3_port,
                super::log_tail(&self.log_path()),
            );
        }
    }

    /// Calls an endpoint of Garage's admin API through `garage json-api`,
    /// and returns its JSON answer.
    fn json_api(&self, endpoint: &str, payload: &Value) -> Value {
        // The command waits for ever for a server that has gone: coreutils'
        // `timeout` ends it, even when the test process has gone too.
        let mut cli = Command::new("timeout");
        cli.args(["--kill-after=5", "60"])
            .arg(&self.program)
            .arg("-c")
            .arg(self.config_path())
            .args(["json-api", endpoint])
            .arg(payload.to_string());
        let output = crate::run(without_garage_variables(&mut cli));
        assert_eq!(
            output.code, 0,
            "garage json-api {endpoint} {payload} failed: {}",
            output.stderr
        );
        serde_json::from_str(&output.stdout).unwrap_or_else(|error| {
            panic!(
                "garage json-api {endpoint} printed no JSON ({error}): {}",
                output.stdout
            )
        })
    }

    fn bucket_id(&self, alias: &str) -> String {
        let bucket = self.json_api("GetBucketInfo", &json!({ "globalAlias": alias }));
        bucket["id"]
            .as_str()
            .unwrap_or_else(|| panic!("GetBucketInfo answered no id: {bucket}"))
            .to_owned()
    }

    fn enable_website(&self, id: &str) {
        self.json_api(
            "UpdateBucket",
            &json!({
                "id": id,
                "body": { "websiteAccess": { "enabled": true, "indexDocument": "index.html" } },
            }),
        );
    }
}

/// Returns three loopback ports that were free a moment ago, all different.
fn distinct_free_ports() -> [u16; 3] {
    loop {
        let ports = [crate::free_port(), crate::free_port(), crate::free_port()];
        if ports[0] != ports[1] && ports[1] != ports[2] && ports[0] != ports[2] {
            return ports;
        }
    }
}

/// Removes the variables that would point `garage` at another server or
/// configuration.
fn without_garage_variables(command: &mut Command) -> &mut Command {
    for name in [
        "GARAGE_CONFIG_FILE",
        "GARAGE_RPC_HOST",
        "GARAGE_RPC_SECRET",
        "GARAGE_RPC_SECRET_FILE",
    ] {
        command.env_remove(name);
    }
    command
}

/// Returns the `garage` program: `$SKILLPKG_TEST_GARAGE`, else `garage` on
/// the PATH, else `~/.cargo/bin/garage` (where `cargo install` puts it).
fn program() -> PathBuf {
    if let Some(program) = std::env::var_os(SKILLPKG_TEST_GARAGE).filter(|value| !value.is_empty())
    {
        let program = PathBuf::from(program);
        assert!(
            program.exists(),
            "{SKILLPKG_TEST_GARAGE}={} does not exist: {INSTALL_HINT}",
            program.display()
        );
        return program;
    }
    let on_path = std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join("garage"))
        .find(|path| path.is_file());
    let in_cargo_home = || {
        std::env::var_os("CARGO_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".cargo")))
            .map(|home| home.join("bin/garage"))
            .filter(|path| path.is_file())
    };
    on_path.or_else(in_cargo_home).unwrap_or_else(|| {
        panic!(
            "Garage is not installed (no `garage` on the PATH nor in ~/.cargo/bin): {INSTALL_HINT}"
        )
    })
}
