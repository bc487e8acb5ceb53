//! A PostgreSQL server of its own for a test: `initdb` into a temporary
//! folder, `postgres` on a free loopback port, trust authentication for the
//! user `skillpkg`, and a database `skillpkg`.
//!
//! Layout of the folder: `data/` (the cluster), `postgres.log` (the
//! server's output, kept across restarts) and the server's Unix socket.
//! PostgreSQL refuses to run as root, so under root (CI) the folder belongs
//! to the `postgres` user that Debian's package creates, and `initdb` and
//! the server run as that user.
//!
//! Flushing to disk is switched off (`fsync`, `full_page_writes`): the
//! tests stop and crash the server, never the machine, and the kernel keeps
//! what PostgreSQL wrote either way. `synchronous_commit` stays on: with
//! it off, a commit returns before its write-ahead log is written, and a
//! crash loses it, which is what crash tests look for.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use super::{RunAs, Supervisor};

/// The variable that names the folder of PostgreSQL's programs (`initdb`,
/// `postgres`, `pg_isready`, `createdb`), instead of the newest
/// `/usr/lib/postgresql/<version>/bin`.
pub const SKILLPKG_TEST_PG_BIN: &str = "SKILLPKG_TEST_PG_BIN";

/// The user the server trusts, and the database it starts with.
const USER: &str = "skillpkg";

/// What to do when PostgreSQL is missing.
const INSTALL_HINT: &str = "install PostgreSQL with `apt-get install postgresql` (.ci/run does), \
     or set SKILLPKG_TEST_PG_BIN to the folder that has `initdb` and `postgres`";

/// How long `initdb` plus a start may take on a loaded 2-core machine.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// A PostgreSQL server on a free loopback port with a temporary folder,
/// stopped (and its folder deleted) when dropped.
#[derive(Debug)]
pub struct Postgres {
    bin: PathBuf,
    root: PathBuf,
    port: u16,
    run_as: Option<RunAs>,
    supervisor: Supervisor,
    databases: AtomicU32,
}

impl Postgres {
    /// Creates a cluster in a new temporary folder, starts PostgreSQL on it
    /// and creates the database `skillpkg`. Takes about a second, most of
    /// it `initdb`. Panics with what to install when PostgreSQL is missing
    /// or does not start.
    pub fn start() -> Self {
        let bin = bin_dir();
        let run_as = super::running_as_root().then(|| {
            super::system_user(
                "postgres",
                "PostgreSQL refuses to run as root, and runs as `postgres` under root; \
                 `apt-get install postgresql` creates that user",
            )
        });
        let root = super::kept_temporary_folder("skillpkg-postgres-");
        if let Some(user) = run_as {
            // The server runs as that user, and its supervisor deletes the
            // folder: it must own the folder.
            std::os::unix::fs::chown(&root, Some(user.uid), Some(user.gid))
                .unwrap_or_else(|error| panic!("chown {}: {error}", root.display()));
        }
        let port = crate::free_port();
        let mut server = Command::new(bin.join("postgres"));
        server
            .arg("-D")
            .arg(root.join("data"))
            .args(["-p", &port.to_string()])
            .args(["-c", "listen_addresses=127.0.0.1"])
            .arg("-c")
            .arg(format!("unix_socket_directories={}", root.display()))
            .args(["-c", "fsync=off"])
            .args(["-c", "full_page_writes=off"])
            // Several servers run at once during a test run.
            .args(["-c", "shared_buffers=16MB"])
            // The test's working folder may be closed to the server's user.
            .current_dir(&root);
        let supervisor = Supervisor::new(
            "PostgreSQL",
            &server,
            &root.join("postgres.log"),
            &root,
            // Immediate shutdown: the server stops its own processes.
            "QUIT",
            run_as,
        );
        let mut postgres = Self {
            bin,
            root,
            port,
            run_as,
            supervisor,
            databases: AtomicU32::new(0),
        };
        postgres.init_cluster();
        postgres.start_server();
        postgres.create_database(USER);
        postgres
    }

    /// Returns the server that every test of this test binary shares,
    /// started on first use. It cannot be stopped (the borrow is shared):
    /// give each test its own database with [`Postgres::fresh_database`].
    /// Its supervisor stops it and deletes its folder when the test binary
    /// exits.
    pub fn shared() -> &'static Self {
        static SHARED: OnceLock<Postgres> = OnceLock::new();
        SHARED.get_or_init(Self::start)
    }

    /// Returns the URL of the database `skillpkg`:
    /// `postgres://skillpkg@127.0.0.1:PORT/skillpkg`.
    pub fn url(&self) -> String {
        self.url_of(USER)
    }

    /// Returns the URL of the database `name` on this server.
    pub fn url_of(&self, name: &str) -> String {
        format!("postgres://{USER}@127.0.0.1:{}/{name}", self.port)
    }

    /// Returns the port the server listens on, on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Creates the database `name` (lowercase letters, digits and `_`,
    /// starting with a letter, 3 to 63 characters) and returns its URL.
    /// Panics if it exists. About 0.1 to 0.3 s.
    pub fn create_database(&self, name: &str) -> String {
        assert!(
            super::is_plain_name(name, '_'),
            "{name:?} is not a database name the kit creates: use lowercase letters, \
             digits and `_`, starting with a letter, 3 to 63 characters"
        );
        let output = crate::run(
            Command::new(self.bin.join("createdb"))
                .args(["--host", "127.0.0.1", "--port"])
                .arg(self.port.to_string())
                .args(["--username", USER, name]),
        );
        assert_eq!(
            output.code,
            0,
            "createdb {name} failed: {}\nserver log:\n{}",
            output.stderr,
            self.log()
        );
        self.url_of(name)
    }

    /// Creates a database with a name unique on this server
    /// (`test_<n>`) and returns its URL: how tests share one server.
    pub fn fresh_database(&self) -> String {
        let number = self.databases.fetch_add(1, Ordering::Relaxed);
        self.create_database(&format!("test_{number}"))
    }

    /// Returns the server's log, across restarts.
    pub fn log(&self) -> String {
        fs_err::read_to_string(self.log_path()).unwrap_or_default()
    }

    /// Returns the cluster's data folder.
    pub fn data_dir(&self) -> PathBuf {
        self.root.join("data")
    }

    /// Returns true if and only if the server process runs.
    pub fn is_running(&self) -> bool {
        self.supervisor.server_is_running()
    }

    /// Stops the server cleanly (fast shutdown, SIGINT: open connections
    /// are closed) and waits until it has exited; the data stays.
    pub fn stop(&mut self) {
        self.supervisor.stop("INT");
    }

    /// Stops the server as a crash would (immediate shutdown, SIGQUIT: no
    /// checkpoint; the next start recovers from the write-ahead log) and
    /// waits until it has exited.
    pub fn kill(&mut self) {
        self.supervisor.stop("QUIT");
    }

    /// Starts the stopped (or crashed) server again on the same folder
    /// and port, and returns once it accepts connections.
    pub fn start_again(&mut self) {
        assert!(!self.is_running(), "PostgreSQL is already running");
        self.start_server();
    }

    /// Stops the server cleanly and starts it again.
    pub fn restart(&mut self) {
        self.stop();
        self.start_again();
    }

    fn log_path(&self) -> PathBuf {
        self.root.join("postgres.log")
    }

    fn init_cluster(&self) {
        let mut initdb = Command::new(self.bin.join("initdb"));
        // The test's working folder may be closed to the server's user.
        initdb.current_dir(&self.root);
        if let Some(user) = self.run_as {
            user.apply(&mut initdb);
        }
        let output = crate::run(
            initdb
                .arg("--pgdata")
                .arg(self.data_dir())
                .args(["--username", USER, "--auth=trust"])
                .args(["--encoding=UTF8", "--locale=C", "--no-sync"]),
        );
        assert_eq!(
            output.code,
            0,
            "initdb failed in {} (as {}): {}{}\nhint: the server's user must be able to \
             reach the temporary folder (see TMPDIR); {INSTALL_HINT}",
            self.root.display(),
            if self.run_as.is_some() {
                "the `postgres` user"
            } else {
                "this user"
            },
            output.stdout,
            output.stderr,
        );
    }

    fn start_server(&mut self) {
        self.supervisor.start();
        let ready = crate::wait_until(START_TIMEOUT, || {
            if !self.supervisor.server_is_running() {
                return true;
            }
            // pg_isready, unlike a TCP connection, tells a server that
            // accepts connections from one that is still starting up.
            std::thread::sleep(Duration::from_millis(20));
            crate::run(
                Command::new(self.bin.join("pg_isready"))
                    .args(["--quiet", "--host", "127.0.0.1", "--port"])
                    .arg(self.port.to_string())
                    .args(["--username", USER, "--dbname", "postgres"]),
            )
            .code
                == 0
        });
        if !ready || !self.supervisor.server_is_running() {
            self.supervisor.stop("KILL");
            panic!(
                "PostgreSQL did not start on 127.0.0.1:{} within {START_TIMEOUT:?}; its log:\n{}\nhint: {INSTALL_HINT}",
                self.port,
                super::log_tail(&self.log_path()),
            );
        }
    }
}

/// Returns the folder of PostgreSQL's programs: `$SKILLPKG_TEST_PG_BIN`,
/// else the newest `/usr/lib/postgresql/<version>/bin` (Debian's layout),
/// else the folder of `initdb` on the PATH.
fn bin_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os(SKILLPKG_TEST_PG_BIN).filter(|dir| !dir.is_empty()) {
        let dir = PathBuf::from(dir);
        assert!(
            dir.join("initdb").exists() && dir.join("postgres").exists(),
            "{SKILLPKG_TEST_PG_BIN}={} has no `initdb` and `postgres`: {INSTALL_HINT}",
            dir.display()
        );
        return dir;
    }
    let newest = fs_err::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let version: u32 = entry.file_name().to_str()?.parse().ok()?;
            let bin = entry.path().join("bin");
            bin.join("initdb").exists().then_some((version, bin))
        })
        .max_by_key(|(version, _)| *version);
    if let Some((_, bin)) = newest {
        return bin;
    }
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .find(|dir| dir.join("initdb").exists() && dir.join("postgres").exists())
        .unwrap_or_else(|| {
            panic!(
                "PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb): {INSTALL_HINT}"
            )
        })
}
