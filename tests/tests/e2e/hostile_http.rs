//! The client's HTTP surface against a registry that attacks it: endless or
//! oversized answers, compression bombs, stalls, malformed framing and
//! terminal escapes, each from a scripted loopback server. What must hold:
//! memory stays bounded (every file has a size cap), nothing hangs (reads
//! time out), and nothing the server writes reaches the terminal raw.

use std::io::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use skillpkg_tests::scripted::{
    PublishedTree, Request, ScriptedServer, redirect, respond, serve_file, stream_endlessly,
};
use skillpkg_tests::{Output, TestContext, run};

/// A `config.json` of a public, read-only registry.
const CONFIG: &str = r#"{"v":1,"dl":"dl/{name}/{version}/{name}-{version}.tgz","api":null,"auth-required":false,"max-skill-bytes":8388608}"#;

/// How long a stalling server holds the connection before it gives up:
/// much longer than the client is allowed to wait.
const STALL: Duration = Duration::from_secs(20);

/// The timeout the tests give the client (`SKILLPKG_HTTP_TIMEOUT`).
const CLIENT_TIMEOUT_SECONDS: &str = "1";

/// Runs skillpkg in `sandbox` with a short read timeout and no waits
/// between retries, and returns its output and how long it took.
fn skillpkg(sandbox: &TestContext, args: &[&str]) -> (Output, Duration) {
    let start = Instant::now();
    let output = run(sandbox
        .skillpkg_command()
        .args(args)
        .env("SKILLPKG_CONFIG_DIR", sandbox.path().join("config"))
        .env("SKILLPKG_CACHE_DIR", sandbox.path().join("cache"))
        .env("SKILLPKG_STATE_DIR", sandbox.path().join("state"))
        .env("SKILLPKG_HTTP_TIMEOUT", CLIENT_TIMEOUT_SECONDS)
        .env("SKILLPKG_TEST_NO_RETRY_DELAY", "1"));
    (output, start.elapsed())
}

/// A registry that serves [`CONFIG`] and an empty `search.json`, and
/// answers `path` with `answer`; it counts the bytes `answer` got out.
fn registry_answering(
    path: &'static str,
    answer: impl Fn(&mut std::net::TcpStream) -> u64 + Send + Sync + 'static,
) -> (ScriptedServer, Arc<AtomicU64>) {
    let sent = Arc::new(AtomicU64::new(0));
    let counted = sent.clone();
    let server = ScriptedServer::start(move |request, stream| {
        if request.path == path {
            counted.fetch_add(answer(stream), Ordering::SeqCst);
        } else if request.path == "config.json" {
            respond(stream, "200 OK", &[], CONFIG.as_bytes());
        } else if request.path == "search.json" {
            respond(stream, "200 OK", &[], br#"{"v":1,"skills":[]}"#);
        } else {
            respond(stream, "404 Not Found", &[], b"");
        }
    });
    (server, sent)
}

fn assert_failed_with(output: &Output, needle: &str) {
    assert_eq!(output.code, 3, "{output:?}");
    assert!(
        output.stderr.contains(needle),
        "`{needle}` not in:\n{}",
        output.stderr
    );
}

const MIB: u64 = 1024 * 1024;

#[test]
fn an_endless_config_json_is_cut_off_at_one_mebibyte() {
    let sandbox = TestContext::new();
    let (server, sent) = registry_answering("config.json", |stream| {
        stream_endlessly(stream, 64 * MIB, b' ')
    });
    let (output, _) = skillpkg(&sandbox, &["search", "pdf", "--registry", &server.url()]);
    assert_eq!(output.code, 3, "{output:?}");
    insta::assert_snapshot!(sandbox.redact(&output.stderr), @"
    error: http://127.0.0.1:[PORT]/config.json is larger than the 1048576 bytes skillpkg reads for such a file; the download was stopped
    hint: the registry (or something between it and you) is broken or hostile; nothing it sent was used
    ");
    let sent = sent.load(Ordering::SeqCst);
    assert!(sent < 32 * MIB, "the client read {sent} bytes of it");
}

#[test]
fn an_endless_root_json_is_cut_off_at_one_mebibyte() {
    let sandbox = TestContext::new();
    let (server, sent) = registry_answering("1.root.json", |stream| {
        stream_endlessly(stream, 64 * MIB, b'{')
    });
    let (output, _) = skillpkg(&sandbox, &["search", "pdf", "--registry", &server.url()]);
    assert_eq!(output.code, 3, "{output:?}");
    insta::assert_snapshot!(sandbox.redact(&output.stderr), @"
    error: http://127.0.0.1:[PORT]/1.root.json is larger than the 1048576 bytes skillpkg reads for such a file; the download was stopped
    hint: the registry (or something between it and you) is broken or hostile; nothing it sent was used
    ");
    assert!(sent.load(Ordering::SeqCst) < 32 * MIB);
}

#[test]
fn an_endless_index_file_is_cut_off_at_64_mebibytes() {
    let sandbox = TestContext::new();
    let (server, sent) = registry_answering("index/3/p/pdf", |stream| {
        stream_endlessly(stream, 160 * MIB, b'\n')
    });
    let (output, _) = skillpkg(&sandbox, &["info", "pdf", "--registry", &server.url()]);
    assert_eq!(output.code, 3, "{output:?}");
    insta::assert_snapshot!(sandbox.redact(&output.stderr), @"
    error: http://127.0.0.1:[PORT]/index/3/p/pdf is larger than the 67108864 bytes skillpkg reads for such a file; the download was stopped
    hint: the registry (or something between it and you) is broken or hostile; nothing it sent was used
    ");
    let sent = sent.load(Ordering::SeqCst);
    assert!(sent < 128 * MIB, "the client read {sent} bytes of it");
}

/// Declares `length` bytes, then sends none until it gives up.
fn declare_and_stall(stream: &mut std::net::TcpStream, length: u64) -> u64 {
    let head = format!("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: {length}\r\n\r\n");
    let _ = stream.write_all(head.as_bytes());
    std::thread::sleep(STALL);
    0
}

#[test]
fn a_content_length_past_the_cap_is_refused_before_any_of_the_body() {
    let sandbox = TestContext::new();
    let (server, _) =
        registry_answering("config.json", |stream| declare_and_stall(stream, 1 << 40));
    let (output, took) = skillpkg(&sandbox, &["search", "pdf", "--registry", &server.url()]);
    assert_eq!(output.code, 3, "{output:?}");
    insta::assert_snapshot!(sandbox.redact(&output.stderr), @"
    error: http://127.0.0.1:[PORT]/config.json is larger than the 1048576 bytes skillpkg reads for such a file; the download was stopped
    hint: the registry (or something between it and you) is broken or hostile; nothing it sent was used
    ");
    assert!(took < Duration::from_secs(5), "took {took:?}");
}

#[test]
fn an_archive_is_capped_by_the_client_whatever_max_skill_bytes_the_registry_claims() {
    let sandbox = TestContext::new();
    let tree = PublishedTree::new(&sandbox, &[]);
    let config = tree.config_with(&[("max-skill-bytes", 1_000_000_000_000_000_u64.into())]);
    let root = tree.root;
    let server = ScriptedServer::start(move |request, stream| {
        if request.path == "config.json" {
            respond(stream, "200 OK", &[], config.as_bytes());
        } else if request.path.ends_with(".tgz") {
            declare_and_stall(stream, 1 << 40);
        } else {
            serve_file(stream, &root, &request.path);
        }
    });
    fs_err::create_dir_all(sandbox.path().join("project")).unwrap();
    let in_project = |args: &[&str]| {
        let start = Instant::now();
        let output = run(sandbox
            .skillpkg_command()
            .current_dir(sandbox.path().join("project"))
            .args(args)
            .env("SKILLPKG_CONFIG_DIR", sandbox.path().join("config"))
            .env("SKILLPKG_CACHE_DIR", sandbox.path().join("cache"))
            .env("SKILLPKG_STATE_DIR", sandbox.path().join("state"))
            .env("SKILLPKG_HTTP_TIMEOUT", CLIENT_TIMEOUT_SECONDS)
            .env("SKILLPKG_TEST_NO_RETRY_DELAY", "1"));
        (output, start.elapsed())
    };
    let (init, _) = in_project(&["init", "--target", "claude", "--registry", &server.url()]);
    assert_eq!(init.code, 0, "{init:?}");
    let (output, took) = in_project(&["add", "pdf"]);
    assert_eq!(output.code, 3, "{output:?}");
    insta::assert_snapshot!(sandbox.redact(&output.stderr), @"
          Adding pdf
    error: cannot download pdf@1.0.0
      Caused by: http://127.0.0.1:[PORT]/dl/pdf/1.0.0/pdf-1.0.0.tgz is larger than the 268435456 bytes skillpkg reads for such a file; the download was stopped
    hint: the registry (or something between it and you) is broken or hostile; nothing it sent was used
    ");
    assert!(took < Duration::from_secs(5), "took {took:?}");
}

#[test]
fn a_server_that_never_answers_is_given_up_on() {
    let sandbox = TestContext::new();
    let (server, _) = registry_answering("config.json", |_| {
        std::thread::sleep(STALL);
        0
    });
    let (output, took) = skillpkg(&sandbox, &["search", "pdf", "--registry", &server.url()]);
    assert_eq!(output.code, 3, "{output:?}");
    insta::assert_snapshot!(sandbox.redact(&output.stderr), @"
    error: http://127.0.0.1:[PORT]/config.json did not answer in time; the request was given up
      Caused by: error sending request
      Caused by: operation timed out
    hint: the registry is stalled or overloaded; SKILLPKG_HTTP_TIMEOUT sets how many seconds to wait for its next bytes (now 1)
    ");
    // Four tries of one second each, not four of twenty.
    assert!(took < Duration::from_secs(12), "took {took:?}");
    let tries = server
        .requests()
        .iter()
        .filter(|request| request.path == "config.json")
        .count();
    assert_eq!(tries, 4, "a stall is retried like any network failure");
}

/// `publish` reads the registry's config.json while it validates and packs:
/// a skill that cannot be packed is reported as soon as that is known, not
/// after the tries at a registry that does not answer (four of a second
/// each here), and nothing is uploaded.
#[test]
fn publish_reports_a_bad_skill_without_waiting_for_a_stalled_registry() {
    let sandbox = TestContext::new();
    let (server, _) = registry_answering("config.json", |_| {
        std::thread::sleep(STALL);
        0
    });
    let skill = sandbox.skill("pdf", "pdf", "", "# PDF\n");
    let skill = skill.to_str().unwrap();
    let url = server.url();
    let publish = |version: &[&str]| {
        let mut args = vec!["publish", skill];
        args.extend(version);
        args.extend(["--registry", &url, "--token", "t", "--no-sign"]);
        skillpkg(&sandbox, &args)
    };
    let (output, took) = publish(&[]);
    assert_eq!(output.code, 1, "{output:?}");
    insta::assert_snapshot!(sandbox.redact(&output.stderr), @r#"
    error: cannot pack `[HOME]/pdf`: the skill has no version
    hint: add `version: "1.0.0"` under `metadata:` in the frontmatter, or pass `--version 1.0.0`
    "#);
    assert!(took < Duration::from_secs(3), "took {took:?}");
    assert!(
        server
            .requests()
            .iter()
            .all(|request| request.path == "config.json"),
        "only config.json was asked for: {:?}",
        server.requests()
    );

    // A good skill waits for the registry, and says it did not answer.
    let (output, took) = publish(&["--version", "1.0.0"]);
    assert_eq!(output.code, 3, "{output:?}");
    insta::assert_snapshot!(sandbox.redact(&output.stderr), @"
    error: http://127.0.0.1:[PORT]/config.json did not answer in time; the request was given up
      Caused by: error sending request
      Caused by: operation timed out
    hint: the registry is stalled or overloaded; SKILLPKG_HTTP_TIMEOUT sets how many seconds to wait for its next bytes (now 1)
    ");
    assert!(
        took >= Duration::from_secs(3),
        "four tries of a second each: {took:?}"
    );
}

#[test]
fn a_server_that_stalls_in_the_middle_of_a_body_is_given_up_on() {
    let sandbox = TestContext::new();
    let (server, _) = registry_answering("search.json", |stream| {
        let head = "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 100\r\n\r\n{\"v\":1,";
        let _ = stream.write_all(head.as_bytes());
        std::thread::sleep(STALL);
        0
    });
    let (output, took) = skillpkg(&sandbox, &["search", "pdf", "--registry", &server.url()]);
    assert_eq!(output.code, 3, "{output:?}");
    // Each cause once: the body's error is wrapped twice in the same words.
    insta::assert_snapshot!(sandbox.redact(&output.stderr), @"
    error: http://127.0.0.1:[PORT]/search.json did not answer in time; the request was given up
      Caused by: error decoding response body
      Caused by: request or response body error
      Caused by: operation timed out
    hint: the registry is stalled or overloaded; SKILLPKG_HTTP_TIMEOUT sets how many seconds to wait for its next bytes (now 1)
    ");
    assert!(took < Duration::from_secs(12), "took {took:?}");
}

#[test]
fn a_bad_timeout_setting_is_refused_naming_the_variable() {
    let sandbox = TestContext::new();
    let (server, _) = registry_answering("none", |_| 0);
    let output = run(sandbox
        .skillpkg_command()
        .args(["search", "pdf", "--registry", &server.url()])
        .env("SKILLPKG_HTTP_TIMEOUT", "soon"));
    assert_eq!(output.code, 1, "{output:?}");
    insta::assert_snapshot!(sandbox.redact(&output.stderr), @"
    error: SKILLPKG_HTTP_TIMEOUT is `soon`, not a whole number of seconds above 0
    hint: set SKILLPKG_HTTP_TIMEOUT to how many seconds to wait for a registry's next bytes (the default is 30), or unset it
    ");
}

#[test]
fn a_gzip_bomb_is_never_inflated() {
    use flate2::write::GzEncoder;
    let sandbox = TestContext::new();
    // 1 GiB of spaces, about 1 MiB compressed.
    let mut encoder = GzEncoder::new(Vec::new(), flate2::Compression::best());
    let spaces = vec![b' '; MIB as usize];
    for _ in 0..1024 {
        encoder.write_all(&spaces).unwrap();
    }
    let bomb = encoder.finish().unwrap();
    assert!(bomb.len() < 2 * MIB as usize);
    let (server, _) = registry_answering("config.json", move |stream| {
        respond(
            stream,
            "200 OK",
            &[
                ("Content-Encoding", "gzip"),
                ("Content-Type", "application/json"),
            ],
            &bomb,
        );
        0
    });
    let (output, took) = skillpkg(&sandbox, &["search", "pdf", "--registry", &server.url()]);
    // Read as the (compressed) bytes it is, and refused as not JSON.
    assert_eq!(output.code, 3, "{output:?}");
    insta::assert_snapshot!(sandbox.redact(&output.stderr), @"
    error: http://127.0.0.1:[PORT]/config.json is not a valid registry config.json
      Caused by: expected value at line 1 column 1
    ");
    assert!(took < Duration::from_secs(10), "took {took:?}");
    let asked: Vec<Request> = server.requests();
    assert!(
        asked.iter().all(|request| request
            .header("accept-encoding")
            .is_none_or(|codings| codings == "identity")),
        "the client asked for compression: {asked:#?}"
    );
}

#[test]
fn malformed_content_lengths_fail_cleanly_and_quickly() {
    for head in [
        "Content-Length: many\r\n",
        "Content-Length: -1\r\n",
        "Content-Length: 5\r\nContent-Length: 7\r\n",
        "Content-Length: 5, 7\r\n",
        "Content-Length: 18446744073709551616\r\n",
        // Promises more than it sends, then closes.
        "Content-Length: 1000\r\n",
    ] {
        let sandbox = TestContext::new();
        let (server, _) = registry_answering("config.json", move |stream| {
            let answer = format!("HTTP/1.1 200 OK\r\nConnection: close\r\n{head}\r\n{CONFIG}");
            let _ = stream.write_all(answer.as_bytes());
            0
        });
        let (output, took) = skillpkg(&sandbox, &["search", "pdf", "--registry", &server.url()]);
        assert_failed_with(
            &output,
            &format!("cannot reach {}/config.json", server.url()),
        );
        assert!(took < Duration::from_secs(10), "{head:?} took {took:?}");
    }
}

/// Asserts that stderr has none of the sequences a hostile server sent.
fn assert_no_escapes(output: &Output) {
    for sequence in ["\u{1b}]0;", "\u{7}", "\u{1b}[2J", "\u{9b}", "\r"] {
        assert!(
            !output.stderr.contains(sequence) && !output.stdout.contains(sequence),
            "{sequence:?} reached the terminal: {output:?}"
        );
    }
}

#[test]
fn terminal_escapes_from_a_registry_never_reach_the_terminal() {
    let sandbox = TestContext::new();
    // In a JSON string the parser's error message quotes, in a header, and
    // in an index line.
    let escapes = r"\u001b]0;owned\u0007\u001b[2J\u009b2J\r";
    let config = format!(r#"{{"v":"{escapes}"}}"#);
    let (server, _) = registry_answering("config.json", move |stream| {
        respond(stream, "200 OK", &[], config.as_bytes());
        0
    });
    let (output, _) = skillpkg(
        &sandbox,
        &[
            "--color",
            "always",
            "search",
            "pdf",
            "--registry",
            &server.url(),
        ],
    );
    assert_eq!(output.code, 3, "{output:?}");
    // skillpkg's own colours are the only escapes: shown as `<ESC>` here.
    let said = sandbox.redact(&output.stderr).replace('\u{1b}', "<ESC>");
    insta::assert_snapshot!(said, @r#"
    <ESC>[1m<ESC>[31merror<ESC>[0m: http://127.0.0.1:[PORT]/config.json is not a valid registry config.json
      Caused by: invalid type: string "\u{1b}]0;owned\u{7}\u{1b}[2J\u{9b}2J\r", expected u32 at line 1 column 46
    "#);
    assert_no_escapes(&output);

    // `Location: /search.json<U+009B>2J`, the 8-bit form of ESC [, again
    // and again: the loop error names the URL.
    let server = ScriptedServer::start(|request, stream| {
        if request.path.starts_with("search.json") {
            redirect(stream, "302 Found", "/search.json\u{9b}2J");
        } else if request.path == "config.json" {
            respond(stream, "200 OK", &[], CONFIG.as_bytes());
        } else {
            respond(stream, "404 Not Found", &[], b"");
        }
    });
    let (output, _) = skillpkg(
        &sandbox,
        &[
            "--color",
            "always",
            "search",
            "pdf",
            "--registry",
            &server.url(),
        ],
    );
    assert_eq!(output.code, 3, "{output:?}");
    assert_no_escapes(&output);

    let line =
        format!(r#"{{"v":1,"name":"pdf","vers":"{escapes}","cksum":"sha256:00","deps":[]}}"#);
    let (server, _) = registry_answering("index/3/p/pdf", move |stream| {
        respond(stream, "200 OK", &[], line.as_bytes());
        0
    });
    let (output, _) = skillpkg(
        &sandbox,
        &[
            "--color",
            "always",
            "info",
            "pdf",
            "--registry",
            &server.url(),
        ],
    );
    assert_eq!(output.code, 3, "{output:?}");
    assert_no_escapes(&output);
}

#[test]
fn terminal_escapes_in_an_index_line_never_reach_the_terminal_through_an_error() {
    let sandbox = TestContext::new();
    let tree = PublishedTree::new(&sandbox, &[]);
    // The index line's `signer` is a string from the registry that an error
    // quotes when it is not a key id. Served without
    // signed metadata (a registry never seen before may have none), so
    // the changed index file is not refused before it is read.
    let index = fs_err::read_to_string(tree.root.join("index/3/p/pdf")).unwrap();
    let mut line: serde_json::Value = serde_json::from_str(index.trim()).unwrap();
    line["signer"] = "\u{1b}]0;owned\u{7}\u{1b}[2J\u{9b}2J\r".into();
    let index = format!("{line}\n");
    let root = tree.root;
    let server = ScriptedServer::start(move |request, stream| {
        if request.path == "index/3/p/pdf" {
            respond(stream, "200 OK", &[], index.as_bytes());
        } else if request.path.ends_with("root.json") {
            respond(stream, "404 Not Found", &[], b"");
        } else {
            serve_file(stream, &root, &request.path);
        }
    });
    let (output, _) = skillpkg(
        &sandbox,
        &[
            "--color",
            "always",
            "verify",
            "pdf@1.0.0",
            "--registry",
            &server.url(),
        ],
    );
    // An index line whose `signer` is no key id is refused as it is read:
    // the registry is broken (exit 3), and the error quotes it escaped.
    assert_eq!(output.code, 3, "{output:?}");
    // skillpkg's own colours are the only escapes: shown as `<ESC>` here.
    let said = sandbox
        .redact_ids(&output.stderr)
        .replace('\u{1b}', "<ESC>");
    assert!(
        said.starts_with("<ESC>[1m<ESC>[31merror<ESC>[0m: the index file at ")
            && said.contains(
                r#"Caused by: line 1 of the index file of `pdf` names signer "\u{1b}]0;owned\u{7}\u{1b}[2J\u{9b}2J\r", which is not a key id (16 hex digits)"#
            ),
        "{said}"
    );
    assert_no_escapes(&output);
}

#[test]
fn a_registry_that_re_signs_between_the_timestamp_and_the_snapshot_is_read_again() {
    let sandbox = TestContext::new();
    let tree = PublishedTree::new(&sandbox, &[]);
    let before = (
        fs_err::read(tree.root.join("timestamp.json")).unwrap(),
        fs_err::read(tree.root.join("snapshot.json")).unwrap(),
    );
    // A server re-signs on its own when half the metadata's lifetime has
    // passed: a client can read the timestamp of one signing and the
    // snapshot of the next.
    let signed = run(sandbox
        .registry()
        .args(["keys", "sign", "--root"])
        .arg(sandbox.path().join("registry")));
    assert_eq!(signed.code, 0, "{signed:?}");
    assert_ne!(
        fs_err::read(tree.root.join("snapshot.json")).unwrap(),
        before.1
    );
    let root = tree.root;
    let first_timestamp = std::sync::atomic::AtomicBool::new(true);
    let server = ScriptedServer::start(move |request, stream| {
        if request.path == "timestamp.json" && first_timestamp.swap(false, Ordering::SeqCst) {
            respond(stream, "200 OK", &[], &before.0);
        } else {
            serve_file(stream, &root, &request.path);
        }
    });
    let (output, _) = skillpkg(&sandbox, &["info", "pdf", "--registry", &server.url()]);
    assert_eq!(output.code, 0, "{output:?}");
    let timestamps = server
        .requests()
        .iter()
        .filter(|request| request.path == "timestamp.json")
        .count();
    assert_eq!(timestamps, 2, "read once more, and only once");
}

#[test]
fn a_busy_server_is_retried_after_the_wait_it_asks_for_and_one_asking_too_long_is_reported() {
    // 429 with `Retry-After: 1` twice, then the file: the client waits about
    // a second each time (the delays are real here), and succeeds.
    let asked = Arc::new(AtomicU64::new(0));
    let counter = asked.clone();
    let server = ScriptedServer::start(move |request, stream| match request.path.as_str() {
        "config.json" if counter.fetch_add(1, Ordering::SeqCst) < 2 => respond(
            stream,
            "429 Too Many Requests",
            &[("Retry-After", "1")],
            b"slow down",
        ),
        "config.json" => respond(stream, "200 OK", &[], CONFIG.as_bytes()),
        "search.json" => respond(stream, "200 OK", &[], br#"{"v":1,"skills":[]}"#),
        _ => respond(stream, "404 Not Found", &[], b""),
    });
    let sandbox = TestContext::new();
    let start = Instant::now();
    let output = run(sandbox
        .skillpkg_command()
        .args(["-v", "search", "pdf", "--registry", &server.url()])
        .env("SKILLPKG_CONFIG_DIR", sandbox.path().join("config"))
        .env("SKILLPKG_CACHE_DIR", sandbox.path().join("cache"))
        .env("SKILLPKG_STATE_DIR", sandbox.path().join("state")));
    let took = start.elapsed();
    assert_eq!(output.code, 0, "{output:?}");
    assert_eq!(
        asked.load(Ordering::SeqCst),
        3,
        "two refusals, then the file"
    );
    assert!(
        took >= Duration::from_secs(2),
        "it waited as asked: {took:?}"
    );
    assert!(took < Duration::from_secs(15), "{took:?}");
    assert!(
        output.stderr.contains("retrying in 1s:")
            && output.stderr.contains("(it asks to retry after 1 s)"),
        "{}",
        output.stderr
    );

    // A server that asks for an hour is not waited for.
    let (busy, _) = registry_answering("search.json", |stream| {
        respond(
            stream,
            "503 Service Unavailable",
            &[("Retry-After", "3600")],
            b"",
        );
        0
    });
    let start = Instant::now();
    let output = run(sandbox
        .skillpkg_command()
        .args(["search", "pdf", "--registry", &busy.url()])
        .env("SKILLPKG_CONFIG_DIR", sandbox.path().join("config"))
        .env("SKILLPKG_CACHE_DIR", sandbox.path().join("cache2"))
        .env("SKILLPKG_STATE_DIR", sandbox.path().join("state")));
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "{:?}",
        start.elapsed()
    );
    assert_failed_with(&output, "answered HTTP 503 (it asks to retry after 3600 s)");
}
