//! A loopback HTTP/1.1 server whose every answer the test writes, and which
//! records every request it receives (method, path and headers), so that a
//! test can play a hostile or broken registry and then assert exactly what
//! the client sent where: which origins saw `Authorization`, how many
//! requests a redirect loop cost, whether a stalled answer was given up on.
//!
//! Each connection is served on its own thread, one request per connection
//! (every answer says `Connection: close`), so one stalled answer never holds
//! up another. The helpers below write the common answers; a test that needs
//! a malformed one writes raw bytes to the stream itself.

use std::io::{BufRead as _, Read as _, Write as _};
use std::net::TcpStream;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// One request as the server received it.
#[derive(Clone, Debug)]
pub struct Request {
    /// `GET`, `PUT`, ...
    pub method: String,
    /// The request target without its leading `/`, query included.
    pub path: String,
    /// Every header, names lowercased, in the order sent.
    pub headers: Vec<(String, String)>,
}

impl Request {
    /// Returns the value of the header `name` (lowercase), if sent.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(sent, _)| sent == name)
            .map(|(_, value)| value.as_str())
    }

    /// Returns the `Authorization` header, if sent.
    pub fn authorization(&self) -> Option<&str> {
        self.header("authorization")
    }

    /// Returns the `Host` header: which origin the client meant.
    pub fn host(&self) -> &str {
        self.header("host").unwrap_or_default()
    }
}

type Answer = dyn Fn(&Request, &mut TcpStream) + Send + Sync;

/// A scripted server on `127.0.0.1:0`. Dropping it closes its port: the
/// accepting thread is stopped and joined. An answer still being written
/// (a deliberate stall) finishes on its own thread.
pub struct ScriptedServer {
    port: u16,
    requests: Arc<Mutex<Vec<Request>>>,
    stopping: Arc<AtomicBool>,
    acceptor: Option<std::thread::JoinHandle<()>>,
}

impl std::fmt::Debug for ScriptedServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ScriptedServer({})", self.url())
    }
}

impl ScriptedServer {
    /// Starts a server that answers each request with `answer`, which writes
    /// the whole answer to the stream (the connection is closed after it).
    pub fn start(answer: impl Fn(&Request, &mut TcpStream) + Send + Sync + 'static) -> Self {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("address").port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let stopping = Arc::new(AtomicBool::new(false));
        let answer: Arc<Answer> = Arc::new(answer);
        let (recorded, stop) = (requests.clone(), stopping.clone());
        let acceptor = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stop.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(mut stream) = stream else { continue };
                let (answer, recorded) = (answer.clone(), recorded.clone());
                std::thread::spawn(move || {
                    let Some(request) = read_request(&mut stream) else {
                        return;
                    };
                    recorded.lock().expect("requests").push(request.clone());
                    answer(&request, &mut stream);
                    let _ = stream.flush();
                    let _ = stream.shutdown(std::net::Shutdown::Both);
                });
            }
        });
        Self {
            port,
            requests,
            stopping,
            acceptor: Some(acceptor),
        }
    }

    /// Returns the base URL, `http://127.0.0.1:PORT` (no trailing `/`).
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Returns the port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Returns every request received so far, in order.
    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().expect("requests").clone()
    }
}

impl Drop for ScriptedServer {
    fn drop(&mut self) {
        self.stopping.store(true, Ordering::SeqCst);
        // The acceptor is blocked in accept(): one last connection wakes it
        // to see the flag, and it returns, closing the listener.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
    }
}

/// Faults a [`FaultyServer`] injects.
#[derive(Debug, Default)]
pub struct Faults {
    /// Answer this many requests with 500 before serving again.
    pub fail_next: usize,
    /// Cut every archive (`.tgz`) body short, in the middle.
    pub truncate_archives: bool,
    /// Requests served so far, by path.
    pub served: Vec<String>,
    /// The `Authorization` header of each request (None when absent).
    pub authorization: Vec<Option<String>>,
    /// Redirect every request but `config.json` to this base URL.
    pub redirect_to: Option<String>,
}

/// A static file server in front of a registry's tree (for instance
/// [`crate::TestRegistry::public`]) that misbehaves on demand: the faults
/// are injected through a real socket, into what the real client reads.
/// Stops when dropped.
#[derive(Debug)]
pub struct FaultyServer {
    // Held for its Drop: the server stops with this value.
    _server: ScriptedServer,
    url: String,
    faults: Arc<Mutex<Faults>>,
}

impl FaultyServer {
    /// Serves the files below `root`.
    pub fn serve(root: &Path) -> Self {
        let faults = Arc::new(Mutex::new(Faults::default()));
        let (root, shared) = (root.to_owned(), faults.clone());
        let server = ScriptedServer::start(move |request, stream| {
            let path = request.path.as_str();
            let mut faults = shared.lock().expect("faults");
            faults.served.push(path.to_owned());
            faults
                .authorization
                .push(request.authorization().map(str::to_owned));
            if let Some(base) = faults.redirect_to.clone().filter(|_| path != "config.json") {
                drop(faults);
                return redirect(stream, "302 Found", &format!("{base}/{path}"));
            }
            if faults.fail_next > 0 {
                faults.fail_next -= 1;
                drop(faults);
                return respond(stream, "500 Internal Server Error", &[], b"");
            }
            let truncate = faults.truncate_archives && path.ends_with(".tgz");
            drop(faults);
            match fs_err::read(root.join(path)) {
                Ok(body) if truncate => {
                    // The whole length announced, half the bytes sent.
                    let head = format!(
                        "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: {}\r\n\r\n",
                        body.len()
                    );
                    let _ = stream.write_all(head.as_bytes());
                    let _ = stream.write_all(&body[..body.len() / 2]);
                }
                Ok(body) => respond(stream, "200 OK", &[], &body),
                Err(_) => respond(stream, "404 Not Found", &[], b""),
            }
        });
        Self {
            url: server.url(),
            _server: server,
            faults,
        }
    }

    /// Returns the base URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Changes the faults.
    pub fn faults(&self) -> std::sync::MutexGuard<'_, Faults> {
        self.faults.lock().expect("faults")
    }
}

/// Reads one request: the request line, the headers and (so that closing the
/// connection never resets it before the client read the answer) the body.
fn read_request(stream: &mut TcpStream) -> Option<Request> {
    let mut reader = std::io::BufReader::new(stream.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut words = line.split_whitespace();
    let method = words.next()?.to_owned();
    let path = words.next()?.trim_start_matches('/').to_owned();
    let mut headers = Vec::new();
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).ok()? == 0 || header == "\r\n" {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
        }
    }
    let request = Request {
        method,
        path,
        headers,
    };
    if let Some(length) = request
        .header("content-length")
        .and_then(|length| length.parse::<u64>().ok())
    {
        std::io::copy(&mut (&mut reader).take(length), &mut std::io::sink()).ok()?;
    } else if request
        .header("transfer-encoding")
        .is_some_and(|coding| coding.contains("chunked"))
    {
        // Up to the last chunk, `0` on a line of its own.
        let mut chunk = String::new();
        while reader.read_line(&mut chunk).ok()? > 0 && chunk != "0\r\n" {
            chunk.clear();
        }
    }
    Some(request)
}

/// Writes a complete answer with a `Content-Length`.
pub fn respond(stream: &mut TcpStream, status: &str, headers: &[(&str, &str)], body: &[u8]) {
    let mut head = format!("HTTP/1.1 {status}\r\nConnection: close\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(body);
}

/// Redirects with `status` (`302 Found`, `307 Temporary Redirect`, ...) to
/// `location`, written as given.
pub fn redirect(stream: &mut TcpStream, status: &str, location: &str) {
    respond(stream, status, &[("Location", location)], b"");
}

/// Serves the file `path` below `root` (200), or a 404.
pub fn serve_file(stream: &mut TcpStream, root: &Path, path: &str) {
    let path = path.split('?').next().unwrap_or_default();
    if path.split('/').any(|part| part == "..") {
        return respond(stream, "400 Bad Request", &[], b"");
    }
    match fs_err::read(root.join(path)) {
        Ok(body) => respond(stream, "200 OK", &[], &body),
        Err(_) => respond(stream, "404 Not Found", &[], b""),
    }
}

/// Sends `total` bytes of `filler` as a chunked body after a 200, as fast
/// as the client reads; returns how many bytes the client took before it
/// hung up (all of them when it never did).
pub fn stream_endlessly(stream: &mut TcpStream, total: u64, filler: u8) -> u64 {
    let head = "HTTP/1.1 200 OK\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n";
    if stream.write_all(head.as_bytes()).is_err() {
        return 0;
    }
    let chunk = vec![filler; 64 * 1024];
    let mut sent = 0;
    while sent < total {
        let mut framed = format!("{:x}\r\n", chunk.len()).into_bytes();
        framed.extend_from_slice(&chunk);
        framed.extend_from_slice(b"\r\n");
        if stream.write_all(&framed).is_err() {
            return sent;
        }
        sent += chunk.len() as u64;
    }
    let _ = stream.write_all(b"0\r\n\r\n");
    sent
}

/// The public tree of a real registry that has one signed skill, `pdf`
/// 1.0.0 (archive, signature, the skill's keys file, signed metadata: a
/// root, a timestamp and a snapshot),
/// for scripted servers to serve, and a token that registry issued.
#[derive(Debug)]
pub struct PublishedTree {
    /// The tree: what `skillpkg-registry serve` serves at `/`.
    pub root: std::path::PathBuf,
    /// alice's token.
    pub token: String,
}

impl PublishedTree {
    /// Publishes `pdf` 1.0.0, signed, to a real server started with
    /// `server_flags` in `ctx`, then stops the server.
    pub fn new(ctx: &crate::TestContext, server_flags: &[&str]) -> Self {
        let registry = crate::TestRegistry::builder(ctx)
            .flags(server_flags)
            .signed_metadata()
            .start();
        let skill = ctx.skill(
            "skills/pdf",
            "pdf",
            "version: 1.0.0\n",
            "# pdf\n\nFills in forms.\n",
        );
        let published = registry.publish_dir(&skill);
        assert_eq!(published.code, 0, "{published:?}");
        Self {
            root: registry.public(),
            token: registry.token().to_owned(),
        }
    }

    /// Returns the tree's `config.json` with `changes` (top-level keys)
    /// applied, as served text.
    pub fn config_with(&self, changes: &[(&str, serde_json::Value)]) -> String {
        let text = fs_err::read_to_string(self.root.join("config.json")).expect("config.json");
        let mut config: serde_json::Value = serde_json::from_str(&text).expect("JSON");
        for (key, value) in changes {
            config[*key] = value.clone();
        }
        config.to_string()
    }
}
