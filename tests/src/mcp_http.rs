//! `skillpkg mcp --listen` as a running server: started on a free loopback
//! port, its URL read from the line it prints when ready, stopped when
//! dropped.

use std::io::{BufRead as _, BufReader};
use std::process::{Child, Command, Stdio};

/// A `skillpkg mcp` serving streamable HTTP.
#[derive(Debug)]
pub struct McpHttpServer {
    child: Child,
    /// `http://127.0.0.1:<port>/mcp`.
    pub url: String,
    stderr: std::sync::Arc<std::sync::Mutex<String>>,
    drain: Option<std::thread::JoinHandle<()>>,
}

impl McpHttpServer {
    /// Starts `command` (a `skillpkg mcp` command, such as
    /// [`crate::TestContext::mcp`] gives) with `--listen 127.0.0.1:0` and
    /// waits until it listens. Panics with its stderr when it does not.
    pub fn start(command: Command) -> Self {
        Self::start_on(command, "127.0.0.1:0")
    }

    /// As [`Self::start`], listening on `address`.
    pub fn start_on(mut command: Command, address: &str) -> Self {
        let mut child = command
            .args(["--listen", address])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|error| panic!("cannot start {command:?}: {error}"));
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout is piped"))
            .read_line(&mut line)
            .expect("the server's stdout is readable");
        let Some(url) = line.trim().strip_prefix("listening on ") else {
            let _ = child.kill();
            let output = child.wait_with_output().expect("the server ends");
            panic!(
                "the server did not listen: {line:?}\n{}",
                String::from_utf8_lossy(&output.stderr)
            );
        };
        // Drained, so a chatty server never blocks on a full pipe, and kept
        // for the test to read.
        let stderr = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let mut pipe = child.stderr.take().expect("stderr is piped");
        let kept = stderr.clone();
        let drain = std::thread::spawn(move || {
            let mut text = String::new();
            let mut reader = BufReader::new(&mut pipe);
            while reader.read_line(&mut text).is_ok_and(|read| read > 0) {
                kept.lock().unwrap().push_str(&text);
                text.clear();
            }
        });
        Self {
            url: url.to_owned(),
            child,
            stderr,
            drain: Some(drain),
        }
    }

    /// What the server wrote to stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// What the server wrote to stderr, once it holds `needle` (or after
    /// 5 seconds): stderr is read by a thread of its own, behind stdout.
    pub fn stderr_with(&self, needle: &str) -> String {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        loop {
            let stderr = self.stderr();
            if stderr.contains(needle) || std::time::Instant::now() > deadline {
                return stderr;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    /// Stops the server and returns all it wrote to stderr.
    pub fn stop(mut self) -> String {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(drain) = self.drain.take() {
            let _ = drain.join();
        }
        self.stderr()
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.authority()
            .rsplit(':')
            .next()
            .and_then(|port| port.parse().ok())
            .expect("a port in the URL")
    }

    /// `127.0.0.1:<port>`.
    pub fn authority(&self) -> &str {
        self.url
            .trim_start_matches("http://")
            .trim_end_matches("/mcp")
    }
}

impl Drop for McpHttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
