//! The real backing services of the registry at scale, for its tests:
//! [`Postgres`] (Debian's `postgresql` package) and [`Garage`], an
//! S3-compatible object store. Each runs on free loopback ports with a
//! temporary folder of its own, and each test either starts its own server
//! (`start()`: it may stop, crash and restart it) or uses the one shared by
//! the whole test binary (`shared()`: a fresh database or bucket per test,
//! and no way to stop it, since the borrow is shared).
//!
//! A missing program fails the test with the command that installs it; it
//! never skips it. `scripts/test` installs both (docs/contributing.md, "Test
//! services", has the figures).
//!
//! # Processes
//!
//! Each server and its folder belong to a supervisor, a few lines of `sh`
//! started with the folder and living until the folder is deleted. It
//! starts and stops the server on orders read from its standard input, a
//! pipe from the test process. When that pipe closes, because the owner
//! was dropped or because the test process ended in any way (a panic, an
//! abort, a SIGKILL from a timeout, which closes the pipe too), the
//! supervisor stops the server and deletes the folder. So no server and no
//! folder outlives the test run, not even the shared ones, which live in
//! statics and are never dropped.

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Duration;

mod garage;
mod postgres;

pub use garage::{Garage, SKILLPKG_TEST_GARAGE};
pub use postgres::{Postgres, SKILLPKG_TEST_PG_BIN};

/// The supervisor: `sh -c SUPERVISOR sh LOG FOLDER SIGNAL PROGRAM ARGS...`.
/// Orders, one a line: `start` starts the server (output appended to LOG)
/// and answers its process id; `stop SIGNAL` sends it SIGNAL, waits until
/// it has exited and answers `stopped`. At the end of its input it stops a
/// running server with the third argument's signal and deletes FOLDER.
const SUPERVISOR: &str = r#"
log=$1 folder=$2 last_signal=$3
shift 3
# An answer to a test process that has gone fails, and must not end the
# supervisor before it has cleaned up.
trap '' PIPE
server=
while read -r order signal; do
    case $order in
    start)
        "$@" >>"$log" 2>&1 </dev/null &
        server=$!
        echo "$server"
        ;;
    stop)
        kill -s "$signal" "$server" 2>/dev/null
        wait "$server"
        server=
        echo stopped
        ;;
    esac
done
if [ -n "$server" ]; then
    kill -s "$last_signal" "$server" 2>/dev/null
    wait "$server"
fi
# A program the test process ran in the folder (initdb) may outlive it, and
# write for a moment more.
for attempt in 1 2 3 4 5 6 7 8 9 10; do
    rm -rf -- "$folder" 2>/dev/null
    [ -e "$folder" ] || break
    sleep 1
done
"#;

/// How long a server gets to stop on a signal before it is killed.
const STOP_TIMEOUT: Duration = Duration::from_secs(30);

/// A user and group to run a server as, instead of the test's own.
#[derive(Clone, Copy, Debug)]
struct RunAs {
    uid: u32,
    gid: u32,
}

impl RunAs {
    fn apply(self, command: &mut Command) -> &mut Command {
        use std::os::unix::process::CommandExt as _;
        command.uid(self.uid).gid(self.gid)
    }
}

/// A server's folder and, while it runs, the server, under a supervisor.
#[derive(Debug)]
struct Supervisor {
    name: &'static str,
    shell: Child,
    /// Closing it makes the supervisor stop the server and delete the
    /// folder; `None` once closed.
    orders: Option<ChildStdin>,
    answers: BufReader<ChildStdout>,
    /// The running server's process id.
    server: Option<u32>,
}

impl Supervisor {
    /// Starts a supervisor for `folder` and the server `command` (a
    /// program, its arguments, environment and working folder), which it
    /// runs with its output appended to `log`; the supervisor and the
    /// server run as `user` if given, who must be able to write `log` and
    /// delete `folder`. `last_signal` stops the server when the test
    /// process ends without a word. The server is not started yet.
    fn new(
        name: &'static str,
        command: &Command,
        log: &Path,
        folder: &Path,
        last_signal: &str,
        user: Option<RunAs>,
    ) -> Self {
        let mut shell = Command::new("sh");
        shell
            .arg("-c")
            .arg(SUPERVISOR)
            .arg("sh")
            .arg(log)
            .arg(folder)
            .arg(last_signal)
            .arg(command.get_program())
            .args(command.get_args())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        for (key, value) in command.get_envs() {
            match value {
                Some(value) => shell.env(key, value),
                None => shell.env_remove(key),
            };
        }
        if let Some(dir) = command.get_current_dir() {
            shell.current_dir(dir);
        }
        if let Some(user) = user {
            user.apply(&mut shell);
        }
        let mut shell = shell.spawn().unwrap_or_else(|error| {
            panic!("cannot start the supervisor of {name} (`sh`): {error}")
        });
        let orders = shell.stdin.take();
        let answers = BufReader::new(shell.stdout.take().expect("a piped stdout"));
        Self {
            name,
            shell,
            orders,
            answers,
            server: None,
        }
    }

    /// Sends an order and returns the answer line.
    fn order(&mut self, order: &str) -> String {
        let name = self.name;
        let orders = self.orders.as_mut().expect("the supervisor takes orders");
        writeln!(orders, "{order}")
            .and_then(|()| orders.flush())
            .unwrap_or_else(|error| panic!("the supervisor of {name} is gone: {error}"));
        let mut answer = String::new();
        self.answers
            .read_line(&mut answer)
            .unwrap_or_else(|error| panic!("no answer from the supervisor of {name}: {error}"));
        answer.trim().to_owned()
    }

    /// Starts the server.
    fn start(&mut self) {
        if self.server.is_some() {
            assert!(
                !self.server_is_running(),
                "{} is already running",
                self.name
            );
            // It exited on its own: reap it first.
            self.stop("KILL");
        }
        let answer = self.order("start");
        let pid = answer.parse().unwrap_or_else(|_| {
            panic!(
                "{} did not start: its supervisor answered {answer:?}",
                self.name
            )
        });
        self.server = Some(pid);
    }

    /// Returns true if and only if the server has been started and has not
    /// exited.
    fn server_is_running(&self) -> bool {
        // The supervisor reaps the server only once told to stop, so until
        // then an exited server stays a zombie: state Z in /proc.
        self.server.is_some_and(|pid| {
            fs_err::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|stat| {
                    let state = stat.rsplit_once(") ")?.1.chars().next()?;
                    Some(!matches!(state, 'Z' | 'X' | 'x'))
                })
                .unwrap_or(false)
        })
    }

    /// Stops the server with `signal` (a name such as `INT`) and waits
    /// until it has exited; SIGKILL if it has not within [`STOP_TIMEOUT`].
    /// Does nothing if it is not running.
    fn stop(&mut self, signal: &str) {
        let Some(pid) = self.server else {
            return;
        };
        let orders = self.orders.as_mut().expect("the supervisor takes orders");
        // A failed write means the supervisor is gone, and the server too.
        let _ = writeln!(orders, "stop {signal}").and_then(|()| orders.flush());
        if !crate::wait_until(STOP_TIMEOUT, || !self.server_is_running()) {
            // The shell's own `kill`: Debian's minimal images lack procps.
            let _ = Command::new("sh")
                .args(["-c", "kill -s KILL \"$1\"", "sh", &pid.to_string()])
                .status();
        }
        let mut answer = String::new();
        let _ = self.answers.read_line(&mut answer);
        self.server = None;
    }
}

impl Drop for Supervisor {
    fn drop(&mut self) {
        // The end of the orders: the supervisor stops the server if it
        // runs (the owners stop it first, with their own signal) and
        // deletes the folder.
        drop(self.orders.take());
        let _ = self.shell.wait();
    }
}

/// Returns true if and only if this process runs as root.
fn running_as_root() -> bool {
    use std::os::unix::fs::MetadataExt as _;
    // /proc/self belongs to the process's effective user.
    fs_err::metadata("/proc/self").is_ok_and(|metadata| metadata.uid() == 0)
}

/// Returns the user and group ids of the system user `name`.
fn system_user(name: &str, hint: &str) -> RunAs {
    let id = |flag: &str| -> u32 {
        let output = crate::run(Command::new("id").arg(flag).arg(name));
        assert_eq!(
            output.code,
            0,
            "there is no `{name}` user to run the server as ({}): {hint}",
            output.stderr.trim()
        );
        output
            .stdout
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("`id {flag} {name}` printed {:?}", output.stdout))
    };
    RunAs {
        uid: id("-u"),
        gid: id("-g"),
    }
}

/// Creates a temporary folder that outlives its handle: its server's
/// supervisor deletes it.
fn kept_temporary_folder(prefix: &str) -> PathBuf {
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir()
        .expect("create a temporary folder")
        .keep()
}

/// Returns the last lines of a server's log, for a failure message.
fn log_tail(log: &Path) -> String {
    let text = fs_err::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(40)..].join("\n")
}

/// Returns `bytes` random bytes, hex-encoded.
fn random_hex(bytes: usize) -> String {
    use std::io::Read as _;
    let mut buffer = vec![0; bytes];
    fs_err::File::open("/dev/urandom")
        .and_then(|mut file| file.read_exact(&mut buffer))
        .expect("read /dev/urandom");
    buffer.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// Returns true if and only if `name` is a plain lowercase identifier of at
/// most 63 characters: a database name that needs no quoting, or a
/// bucket name S3 accepts.
fn is_plain_name(name: &str, extra: char) -> bool {
    (3..=63).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == extra)
        && !name.ends_with(extra)
}

#[cfg(test)]
mod tests {
    #[test]
    fn names_that_would_need_quoting_are_refused() {
        assert!(super::is_plain_name("test_12", '_'));
        assert!(super::is_plain_name("bucket-1", '-'));
        for name in [
            "",
            "ab",
            "Test",
            "1abc",
            "a-b",
            "abc_",
            "a\"b",
            "a.b",
            &"a".repeat(64),
        ] {
            assert!(!super::is_plain_name(name, '_'), "{name:?}");
        }
    }
}
