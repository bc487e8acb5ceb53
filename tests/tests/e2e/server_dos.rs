//! Denial of service against `skillpkg-registry serve`: what a client, or a
//! crowd of them, can make the server spend, through real sockets on
//! loopback. Each test is named after the attack it holds off.

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use skillpkg_tests::{RegistryServer, create_token, wait_until};

const BOUNDARY: &str = "skillpkg-dos-boundary";

/// A server on a fresh data folder with a token for `alice`.
struct Fixture {
    _root: tempfile::TempDir,
    server: RegistryServer,
    alice: String,
}

impl Fixture {
    fn new(extra: &[&str]) -> Self {
        let root = tempfile::tempdir().unwrap();
        let alice = create_token(root.path(), "alice");
        let server = RegistryServer::start(root.path(), extra);
        Self {
            _root: root,
            server,
            alice,
        }
    }

    fn connect(&self) -> TcpStream {
        let stream = TcpStream::connect(self.server.address()).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        stream
    }
}

/// The head of an upload of a multipart body of `length` bytes.
fn upload_head(token: Option<&str>, length: usize) -> String {
    let authorization = token
        .map(|token| format!("Authorization: Bearer {token}\r\n"))
        .unwrap_or_default();
    format!(
        "PUT /api/v1/skills HTTP/1.1\r\nHost: test\r\n{authorization}Content-Type: multipart/form-data; boundary={BOUNDARY}\r\nContent-Length: {length}\r\n\r\n"
    )
}

/// A multipart upload body whose tarball part is `payload`.
fn upload_body(payload: &[u8]) -> Vec<u8> {
    let mut body = format!(
        "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\npdf\r\n--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"version\"\r\n\r\n1.0.0\r\n--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"tarball\"; filename=\"x.tgz\"\r\n\r\n"
    )
    .into_bytes();
    body.extend_from_slice(payload);
    body.extend_from_slice(format!("\r\n--{BOUNDARY}--\r\n").as_bytes());
    body
}

/// Reads a response head (up to the blank line), or what came before the
/// connection closed.
fn read_head(stream: &mut TcpStream) -> String {
    let mut head = Vec::new();
    let mut byte = [0; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => break,
        }
    }
    String::from_utf8_lossy(&head).into_owned()
}

/// Reads a whole response whose body has a Content-Length.
fn read_response(stream: &mut TcpStream) -> (String, String) {
    let head = read_head(stream);
    let length: usize = head
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse().ok())?
        })
        .unwrap_or(0);
    let mut body = vec![0; length];
    stream.read_exact(&mut body).unwrap();
    (head, String::from_utf8_lossy(&body).into_owned())
}

/// Returns how long it takes the server to close `stream`, up to `limit`
/// (None: still open then), reading and discarding whatever it sends.
fn time_to_close(stream: &mut TcpStream, limit: Duration) -> Option<Duration> {
    let start = Instant::now();
    stream
        .set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let mut buffer = [0; 4096];
    while start.elapsed() < limit {
        match stream.read(&mut buffer) {
            Ok(0) => return Some(start.elapsed()),
            Ok(_) => {}
            Err(error)
                if matches!(
                    error.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return Some(start.elapsed()),
        }
    }
    None
}

/// How many bytes sent on `stream` the server has not read yet: the receive
/// queue of the server's end, from `/proc/net/tcp` (None when not found).
fn unread_by_server(stream: &TcpStream) -> Option<u64> {
    let client = stream.local_addr().ok()?.port();
    let server = stream.peer_addr().ok()?.port();
    let port = |address: &str| u16::from_str_radix(address.rsplit(':').next()?, 16).ok();
    let table = fs_err::read_to_string("/proc/net/tcp").ok()?;
    table.lines().skip(1).find_map(|line| {
        // sl, local address, remote address, state, tx_queue:rx_queue, ...
        let fields: Vec<&str> = line.split_whitespace().collect();
        if port(fields.get(1)?)? != server || port(fields.get(2)?)? != client {
            return None;
        }
        u64::from_str_radix(fields.get(4)?.split(':').nth(1)?, 16).ok()
    })
}

/// The server's peak resident memory so far, in MiB (VmHWM).
fn peak_memory_mib(server: &RegistryServer) -> f64 {
    let status = fs_err::read_to_string(format!("/proc/{}/status", server.pid())).unwrap();
    let kib: f64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|value| value.split_whitespace().next()?.parse().ok())
        .expect("VmHWM in /proc/PID/status");
    kib / 1024.0
}

#[test]
fn unauthenticated_upload_is_refused_before_its_body_is_read() {
    let fixture = Fixture::new(&[]);
    let length = upload_body(&vec![b'x'; 8 << 20]).len();
    for (token, detail) in [
        (None, "needs a token"),
        (Some("skp_made-up"), "unknown or was revoked"),
    ] {
        // Only the head is sent: the answer must come without the body.
        let mut stream = fixture.connect();
        stream
            .write_all(upload_head(token, length).as_bytes())
            .unwrap();
        let started = Instant::now();
        let (head, body) = read_response(&mut stream);
        assert!(head.starts_with("HTTP/1.1 401"), "{head}");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "the answer waited for a body that never came"
        );
        assert!(
            head.to_ascii_lowercase().contains("connection: close"),
            "{head}"
        );
        assert!(body.contains("\"code\":\"unauthorized\""), "{body}");
        assert!(body.contains(detail), "{body}");
    }
}

#[test]
fn unauthenticated_upload_flood_keeps_the_server_memory_bounded() {
    let fixture = Fixture::new(&[]);
    let before = peak_memory_mib(&fixture.server);
    let body = upload_body(&vec![b'x'; 8 << 20]);
    let head = upload_head(Some("skp_made-up"), body.len());
    let request = std::sync::Arc::new([head.as_bytes(), &body].concat());
    // 60 uploads of 8 MiB at once: the old server buffered each whole before
    // its 401, 480 MiB in all.
    let statuses: Vec<String> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..60)
            .map(|_| {
                let (fixture, request) = (&fixture, &request);
                scope.spawn(move || {
                    let mut stream = fixture.connect();
                    let mut writer = stream.try_clone().unwrap();
                    let request = std::sync::Arc::clone(request);
                    let sender = std::thread::spawn(move || {
                        let _ = writer.write_all(&request);
                    });
                    let head = read_head(&mut stream);
                    let _ = stream.shutdown(std::net::Shutdown::Both);
                    let _ = sender.join();
                    head.lines().next().unwrap_or_default().to_owned()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(
        statuses
            .iter()
            .all(|status| status.starts_with("HTTP/1.1 401")),
        "{statuses:?}"
    );
    let after = peak_memory_mib(&fixture.server);
    assert!(
        after - before < 40.0,
        "the server's peak memory grew from {before:.1} to {after:.1} MiB"
    );
}

#[test]
fn a_slowloris_connection_is_closed_at_the_header_timeout() {
    let fixture = Fixture::new(&["--header-timeout", "1s"]);
    // Headers trickled a byte every 200 ms, never finished.
    let mut stream = fixture.connect();
    stream
        .write_all(b"GET /config.json HTTP/1.1\r\nHost: test\r\n")
        .unwrap();
    let started = Instant::now();
    let mut writer = stream.try_clone().unwrap();
    let trickle = std::thread::spawn(move || {
        for _ in 0..50 {
            if writer.write_all(b"X").is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    });
    let closed = time_to_close(&mut stream, Duration::from_secs(10))
        .map(|_| started.elapsed())
        .expect("the trickling connection is still open after 10 s");
    assert!(
        closed >= Duration::from_millis(800) && closed < Duration::from_secs(3),
        "closed after {closed:?}, the header timeout is 1 s"
    );
    trickle.join().unwrap();

    // A connection that sends nothing at all goes the same way.
    let mut idle = fixture.connect();
    let closed = time_to_close(&mut idle, Duration::from_secs(10))
        .expect("the idle connection is still open after 10 s");
    assert!(closed < Duration::from_secs(3), "closed after {closed:?}");

    // And the server still serves.
    let mut stream = fixture.connect();
    stream
        .write_all(b"GET /config.json HTTP/1.1\r\nHost: test\r\n\r\n")
        .unwrap();
    assert!(read_head(&mut stream).starts_with("HTTP/1.1 200"));
}

#[test]
fn a_trickling_body_is_cut_off_at_the_body_timeout() {
    let fixture = Fixture::new(&["--body-timeout", "1s"]);
    let body = upload_body(&vec![b'x'; 100_000]);
    let mut stream = fixture.connect();
    stream
        .write_all(upload_head(Some(&fixture.alice), body.len()).as_bytes())
        .unwrap();
    let started = Instant::now();
    let mut writer = stream.try_clone().unwrap();
    let trickle = std::thread::spawn(move || {
        for piece in body.chunks(100).take(50) {
            if writer.write_all(piece).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    });
    let head = read_head(&mut stream);
    let answered = started.elapsed();
    assert!(head.starts_with("HTTP/1.1 408"), "{head}");
    assert!(
        answered >= Duration::from_millis(800) && answered < Duration::from_secs(3),
        "answered after {answered:?}, the body timeout is 1 s"
    );
    assert!(
        time_to_close(&mut stream, Duration::from_secs(5)).is_some(),
        "the connection stays open after the 408"
    );
    trickle.join().unwrap();

    // The same holds for the JSON endpoints.
    let mut stream = fixture.connect();
    stream
        .write_all(
            format!(
                "PUT /api/v1/skills/pdf/owners HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{{\"add\":",
                fixture.alice
            )
            .as_bytes(),
        )
        .unwrap();
    let (head, body) = read_response(&mut stream);
    assert!(head.starts_with("HTTP/1.1 408"), "{head}");
    assert!(body.contains("\"code\":\"timeout\""), "{body}");
}

#[test]
fn uploads_past_the_concurrency_cap_wait_unread_then_get_503_with_retry_after() {
    let fixture = Fixture::new(&["--max-concurrent-uploads", "1", "--upload-wait", "1s"]);
    let body = upload_body(&vec![b'x'; 1 << 20]);
    let head = upload_head(Some(&fixture.alice), body.len());
    // The first upload sends its head and a little of its body, and holds
    // the one slot.
    let mut holder = fixture.connect();
    // One write, so that the server reads head and start of body at once.
    holder
        .write_all(&[head.as_bytes(), &body[..1000]].concat())
        .unwrap();
    assert!(
        wait_until(Duration::from_secs(10), || unread_by_server(&holder)
            == Some(0)),
        "the server has not read the first upload's head after 10 s"
    );

    // The next one waits for the slot, then is turned away.
    let mut second = fixture.connect();
    second.write_all(head.as_bytes()).unwrap();
    let started = Instant::now();
    let (answer, text) = read_response(&mut second);
    let waited = started.elapsed();
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    assert!(
        waited >= Duration::from_millis(800) && waited < Duration::from_secs(4),
        "answered after {waited:?}, the upload wait is 1 s"
    );
    let retry_after = answer
        .lines()
        .find_map(|line| line.strip_prefix("retry-after: "))
        .unwrap_or_else(|| panic!("no Retry-After in {answer}"));
    assert!(retry_after.parse::<u64>().unwrap() > 0, "{retry_after}");
    assert!(text.contains("\"code\":\"busy\""), "{text}");

    // One that is waiting when the slot comes free (here: the first
    // client gives up) goes through.
    let mut third = fixture.connect();
    third.write_all(head.as_bytes()).unwrap();
    assert!(
        wait_until(Duration::from_secs(10), || unread_by_server(&third)
            == Some(0)),
        "the server has not read the third upload's head after 10 s"
    );
    drop(holder);
    third.write_all(&body).unwrap();
    let (answer, text) = read_response(&mut third);
    // Not refused for room: the archive is checked, and is not one.
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    assert!(text.contains("\"code\":\"bad-request\""), "{text}");
}

#[test]
fn request_heads_over_16_kib_are_refused_with_431() {
    let fixture = Fixture::new(&[]);
    // One header of 64 KiB: hyper's own limit (400 KiB a connection) would
    // let 512 connections hold 200 MiB of headers.
    let mut stream = fixture.connect();
    let mut writer = stream.try_clone().unwrap();
    let sender = std::thread::spawn(move || {
        let _ = writer.write_all(b"GET /config.json HTTP/1.1\r\nHost: test\r\nX-Filler: ");
        let _ = writer.write_all(&vec![b'a'; 64 * 1024]);
        let _ = writer.write_all(b"\r\n\r\n");
    });
    let head = read_head(&mut stream);
    assert!(head.starts_with("HTTP/1.1 431"), "{head}");
    let _ = sender.join();

    // More than 64 headers.
    let mut stream = fixture.connect();
    let mut request = String::from("GET /config.json HTTP/1.1\r\nHost: test\r\n");
    for index in 0..80 {
        request.push_str(&format!("X-Header-{index}: x\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).unwrap();
    let head = read_head(&mut stream);
    assert!(head.starts_with("HTTP/1.1 431"), "{head}");
}

#[test]
fn oversized_json_bodies_are_refused_before_they_are_read() {
    let fixture = Fixture::new(&[]);
    for path in [
        "PUT /api/v1/skills/pdf/owners",
        "PUT /api/v1/skills/pdf/keys",
        "DELETE /api/v1/skills/pdf/1.0.0/yank",
    ] {
        // A declared 10 MiB: refused from the head alone.
        let mut stream = fixture.connect();
        stream
            .write_all(
                format!(
                    "{path} HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                    fixture.alice,
                    10 << 20
                )
                .as_bytes(),
            )
            .unwrap();
        let (head, body) = read_response(&mut stream);
        assert!(head.starts_with("HTTP/1.1 413"), "{path}: {head}");
        assert!(body.contains("\"code\":\"too-large\""), "{body}");

        // Without a token, the body is not read either.
        let mut stream = fixture.connect();
        stream
            .write_all(
                format!(
                    "{path} HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                    10 << 20
                )
                .as_bytes(),
            )
            .unwrap();
        let (head, _) = read_response(&mut stream);
        assert!(head.starts_with("HTTP/1.1 401"), "{path}: {head}");
    }

    // A chunked body that grows past the limit is cut off while it streams.
    let mut stream = fixture.connect();
    let mut writer = stream.try_clone().unwrap();
    let alice = fixture.alice;
    let sender = std::thread::spawn(move || {
        let _ = writer.write_all(
            format!(
                "PUT /api/v1/skills/pdf/owners HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer {alice}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
            )
            .as_bytes(),
        );
        let chunk = vec![b' '; 16 * 1024];
        for _ in 0..640 {
            let mut framed = format!("{:x}\r\n", chunk.len()).into_bytes();
            framed.extend_from_slice(&chunk);
            framed.extend_from_slice(b"\r\n");
            if writer.write_all(&framed).is_err() {
                return;
            }
        }
    });
    let head = read_head(&mut stream);
    assert!(head.starts_with("HTTP/1.1 413"), "{head}");
    drop(stream);
    let _ = sender.join();
}

#[test]
fn a_client_that_stops_reading_is_disconnected_at_the_send_timeout() {
    let root = tempfile::tempdir().unwrap();
    let server = RegistryServer::start(
        root.path(),
        &["--send-timeout", "1s", "--max-connections", "1"],
    );
    // A large file of the tree: more than the socket buffers hold.
    let size = 32 << 20;
    fs_err::write(server.public().join("large.json"), vec![b' '; size]).unwrap();
    let mut stalled = TcpStream::connect(server.address()).unwrap();
    stalled
        .write_all(b"GET /large.json HTTP/1.1\r\nHost: test\r\n\r\n")
        .unwrap();
    // It reads nothing, and holds the only connection slot until the send
    // timeout frees it: then the next client is served. The slot is taken
    // once the answer has started to arrive.
    stalled
        .set_read_timeout(Some(Duration::from_millis(50)))
        .unwrap();
    assert!(
        wait_until(Duration::from_secs(10), || {
            stalled.peek(&mut [0; 1]).is_ok_and(|read| read > 0)
        }),
        "the server has not started answering after 10 s"
    );
    let mut next = TcpStream::connect(server.address()).unwrap();
    next.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let started = Instant::now();
    next.write_all(b"GET /config.json HTTP/1.1\r\nHost: test\r\n\r\n")
        .unwrap();
    let head = read_head(&mut next);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(500) && waited < Duration::from_secs(4),
        "the next client waited {waited:?}, the send timeout is 1 s"
    );
    // What the stalled client can still read is cut short.
    let mut received = Vec::new();
    stalled
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let _ = stalled.read_to_end(&mut received);
    assert!(
        received.len() < size,
        "the whole file arrived: {} bytes",
        received.len()
    );
}

#[test]
fn a_large_publish_with_a_bad_token_is_told_why_not_cut_off() {
    // The server answers 401 from the head and closes without reading the
    // body: the skillpkg client, which reads while it sends, prints the
    // answer rather than a broken connection.
    let sandbox = skillpkg_tests::TestContext::new();
    let data = sandbox.path().join("registry");
    fs_err::create_dir_all(&data).unwrap();
    let server = RegistryServer::start(&data, &[]);
    // 7 MiB of text that compresses to about 5 MiB: more than the socket
    // buffers take, so the answer comes while the client is still sending.
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let noise: String = (0..7 << 20)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            char::from(ALPHABET[(state >> 58) as usize])
        })
        .collect();
    let dir = sandbox.skill("skills/big", "big", "version: 1.0.0\n", "# big\n");
    fs_err::write(dir.join("data.txt"), noise).unwrap();
    // Three times: whether the reset would beat the answer is a race.
    for _ in 0..3 {
        let output = skillpkg_tests::run(
            sandbox
                .skillpkg_command()
                .args(["publish", dir.to_str().unwrap(), "--no-sign", "--registry"])
                .arg(server.url())
                .args(["--token", "skp_made-up"]),
        );
        assert_eq!(output.code, 1, "{output:?}");
        // The same every time round.
        insta::allow_duplicates! {
            insta::assert_snapshot!(sandbox.redact(&output.stderr), @"
            note: 1 recommendation (non-portable-key 1); -v or `skillpkg validate [HOME]/skills/big` lists them
            error: the registry refused the publish: the token is not valid: it is unknown or was revoked
            hint: the token is missing, unknown or revoked: run `skillpkg login --registry http://127.0.0.1:[PORT]/` with a valid one, or check --token and SKILLPKG_TOKEN
            ");
        }
    }
}

#[test]
fn connections_past_the_cap_wait_in_the_kernel_queue_not_in_the_server() {
    let fixture = Fixture::new(&["--max-connections", "4", "--header-timeout", "500ms"]);
    let open_files = || {
        fs_err::read_dir(format!("/proc/{}/fd", fixture.server.pid()))
            .unwrap()
            .count()
    };
    let before = open_files();
    // Twenty connections that send nothing: the server takes four of them.
    let idle: Vec<TcpStream> = (0..20).map(|_| fixture.connect()).collect();
    // Once it holds its four, a server that took more would have taken
    // them in the same breath.
    let _ = wait_until(Duration::from_secs(2), || open_files() >= before + 4);
    let during = open_files();
    assert!(
        during <= before + 4,
        "{before} open files before, {during} with 20 idle connections"
    );
    // The header timeout frees the slots in turn, and an honest client is
    // served once the queue ahead of it has timed out.
    let mut honest = fixture.connect();
    honest
        .write_all(b"GET /config.json HTTP/1.1\r\nHost: test\r\n\r\n")
        .unwrap();
    let started = Instant::now();
    let head = read_head(&mut honest);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "served after {:?}",
        started.elapsed()
    );
    drop(idle);
}
