//! Hostile requests to `skillpkg-registry serve`, through real sockets on
//! loopback: path traversal in URLs and in API names, percent-encoding
//! tricks, other users' skills, oversized multipart parts, versions that
//! differ only in build metadata, and what a failing server tells a
//! stranger. Each test is named after the attack it holds off.

use std::io::{Read as _, Write as _};
use std::path::Path;

use reqwest::blocking::{Client, multipart};
use skillpkg_tests::{RegistryServer, create_token, files_below, tarball};

/// A registry with a server, and tokens for `alice` and `bob`.
struct Fixture {
    root: tempfile::TempDir,
    server: RegistryServer,
    alice: String,
    bob: String,
    client: Client,
}

impl Fixture {
    fn new(extra: &[&str]) -> Self {
        let root = tempfile::tempdir().unwrap();
        let alice = create_token(root.path(), "alice");
        let bob = create_token(root.path(), "bob");
        let server = RegistryServer::start(root.path(), extra);
        Self {
            root,
            server,
            alice,
            bob,
            client: Client::new(),
        }
    }

    /// Publishes `tarball` as `name@version`: the status and the body.
    fn publish(&self, token: &str, name: &str, version: &str, tarball: Vec<u8>) -> (u16, String) {
        let form = multipart::Form::new()
            .text("name", name.to_owned())
            .text("version", version.to_owned())
            .part(
                "tarball",
                multipart::Part::bytes(tarball).file_name("x.tgz"),
            );
        self.send(
            self.client
                .put(format!("{}/api/v1/skills", self.server.url()))
                .bearer_auth(token)
                .multipart(form),
        )
    }

    fn send(&self, request: reqwest::blocking::RequestBuilder) -> (u16, String) {
        let response = request.send().unwrap();
        (response.status().as_u16(), response.text().unwrap())
    }

    /// Every file of the data folder but the server's log.
    fn files(&self) -> std::collections::BTreeMap<std::path::PathBuf, Vec<u8>> {
        let mut files = files_below(self.root.path());
        files.remove(Path::new("server.log"));
        files
    }

    /// Sends a raw request (no client normalises the path) and returns the
    /// status line and the rest.
    fn raw(&self, request: &str) -> (String, String) {
        self.raw_bytes(request.as_bytes().to_vec())
    }

    /// Sends raw bytes, reading the answer while they are written (the
    /// server may answer and close before it has read them all).
    fn raw_bytes(&self, request: Vec<u8>) -> (String, String) {
        let mut stream = std::net::TcpStream::connect(self.server.address()).unwrap();
        stream
            .set_read_timeout(Some(std::time::Duration::from_secs(10)))
            .unwrap();
        let mut writer = stream.try_clone().unwrap();
        let sender = std::thread::spawn(move || {
            let _ = writer.write_all(&request);
        });
        let mut response = Vec::new();
        let _ = stream.read_to_end(&mut response);
        let _ = sender.join();
        let response = String::from_utf8_lossy(&response).into_owned();
        let (status, rest) = response.split_once("\r\n").unwrap_or((&response, ""));
        (status.to_owned(), rest.to_owned())
    }
}

fn code(body: &str) -> String {
    let body: serde_json::Value = serde_json::from_str(body).unwrap_or_default();
    body["errors"][0]["code"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn a_server_failure_tells_the_client_a_stable_code_and_only_the_log_its_paths() {
    let fixture = Fixture::new(&[]);
    // The database is overwritten with bytes that are not SQLite's.
    let database = fixture.root.path().join("state/registry.db");
    let size = fs_err::metadata(&database).unwrap().len();
    fs_err::write(&database, vec![b'x'; usize::try_from(size).unwrap()]).unwrap();
    let root = fixture.root.path().to_str().unwrap().to_owned();
    // Strangers (a made-up token) and users alike.
    for token in ["skp_made-up", fixture.alice.as_str()] {
        for request in [
            fixture
                .client
                .get(format!("{}/api/v1/me", fixture.server.url())),
            fixture.client.delete(format!(
                "{}/api/v1/skills/pdf/1.0.0/yank",
                fixture.server.url()
            )),
        ] {
            let (status, body) = fixture.send(request.bearer_auth(token));
            assert_eq!(status, 500, "{body}");
            assert_eq!(code(&body), "internal", "{body}");
            for secret in [root.as_str(), "registry.db", "state", "not a database"] {
                assert!(!body.contains(secret), "`{secret}` in the answer: {body}");
            }
        }
    }
    let log = fixture.server.log();
    assert!(
        log.contains(&format!("database error on {}", database.display()))
            && log.contains("not a database"),
        "the cause is in the server's log:\n{log}"
    );
}

#[test]
fn a_version_differing_only_in_build_metadata_cannot_be_published_beside_it() {
    let fixture = Fixture::new(&[]);
    let (status, body) = fixture.publish(&fixture.alice, "pdf", "1.0.0", tarball("pdf", "1.0.0"));
    assert_eq!(status, 201, "{body}");
    let before = fixture.files();
    for version in ["1.0.0+build2", "1.0.0+1"] {
        let (status, body) =
            fixture.publish(&fixture.alice, "pdf", version, tarball("pdf", version));
        assert_eq!(status, 409, "{version}: {body}");
        assert_eq!(code(&body), "exists", "{body}");
        assert!(
            body.contains(&format!(
                "pdf@{version} is the same version as the published pdf@1.0.0"
            )),
            "{body}"
        );
    }
    assert_eq!(fixture.files(), before, "a refused publish writes nothing");
    // A pre-release is another version.
    let (status, body) = fixture.publish(
        &fixture.alice,
        "pdf",
        "1.0.0-rc.1+build2",
        tarball("pdf", "1.0.0-rc.1+build2"),
    );
    assert_eq!(status, 201, "{body}");
}

#[test]
fn build_refuses_two_archives_that_differ_only_in_build_metadata() {
    let from = tempfile::tempdir().unwrap();
    fs_err::write(from.path().join("pdf-1.0.0.tgz"), tarball("pdf", "1.0.0")).unwrap();
    fs_err::write(
        from.path().join("pdf-1.0.0+build2.tgz"),
        tarball("pdf", "1.0.0+build2"),
    )
    .unwrap();
    let out = tempfile::tempdir().unwrap();
    let tree = out.path().join("tree");
    let output = std::process::Command::new(skillpkg_tests::binary("skillpkg-registry"))
        .arg("build")
        .arg("--from")
        .arg(from.path())
        .arg("--out")
        .arg(&tree)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    insta::assert_snapshot!(skillpkg_tests::redact(&stderr), @"error: pdf@1.0.0 ([TEMP]/pdf-1.0.0.tgz) is the same version as pdf@1.0.0+build2 ([TEMP]/pdf-1.0.0+build2.tgz): versions that differ only in build metadata (`+...`) are one version; keep one of them");
    assert!(!tree.exists(), "a failed build writes nothing");
}

#[test]
fn path_traversal_in_urls_reaches_no_file_outside_the_tree() {
    let fixture = Fixture::new(&[]);
    let (status, body) = fixture.publish(&fixture.alice, "pdf", "1.0.0", tarball("pdf", "1.0.0"));
    assert_eq!(status, 201, "{body}");
    fs_err::write(fixture.root.path().join("secret.txt"), "the secret").unwrap();
    for path in [
        "/../state/tokens.json",
        "/../secret.txt",
        "/dl/../../state/tokens.json",
        "/%2e%2e/state/tokens.json",
        "/%2E%2E/secret.txt",
        "/..%2fstate%2ftokens.json",
        "/%2e%2e%2fsecret.txt",
        "/index/%2e%2e/%2e%2e/%2e%2e/secret.txt",
        "/.well-known/../../secret.txt",
        "/.well-known/%2e%2e/%2e%2e/secret.txt",
        "//secret.txt",
        "/dl/pdf/1.0.0/..%5c..%5c..%5csecret.txt",
        "/.skillpkg-tmp-x",
        "/index/3/p/pdf%00.json",
    ] {
        let (status, rest) = fixture.raw(&format!(
            "GET {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n"
        ));
        assert!(
            status.starts_with("HTTP/1.1 404") || status.starts_with("HTTP/1.1 400"),
            "{path}: {status}"
        );
        assert!(
            !rest.contains("the secret") && !rest.contains("sha256:"),
            "{path}: {rest}"
        );
    }
    // The same file through an honest path is served: the checks above
    // refuse the trick, not the file.
    let (status, _) =
        fixture.raw("GET /index/3/p/pdf HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n");
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
}

#[test]
fn path_traversal_in_api_names_writes_nothing_and_reads_nothing() {
    let fixture = Fixture::new(&[]);
    let before = fixture.files();
    for name in [
        "../evil",
        "..",
        "a/../../b",
        "/etc/passwd",
        "PDF",
        "pdf\u{0}",
    ] {
        let (status, body) =
            fixture.publish(&fixture.alice, name, "1.0.0", tarball("pdf", "1.0.0"));
        assert_eq!(status, 400, "{name:?}: {body}");
    }
    for version in ["../../1.0.0", "1.0.0/../../x"] {
        let (status, body) =
            fixture.publish(&fixture.alice, "pdf", version, tarball("pdf", "1.0.0"));
        assert_eq!(status, 400, "{version:?}: {body}");
    }
    assert_eq!(fixture.files(), before, "nothing written anywhere");
    // Sent raw: clients resolve `%2e%2e` before sending.
    let body = r#"{"add":["mallory"]}"#;
    for path in [
        "/api/v1/skills/..%2F..%2Fstate/owners",
        "/api/v1/skills/%2e%2e/owners",
        "/api/v1/skills/%2e%2e%2f%2e%2e%2fstate/keys",
        "/api/v1/skills/..%2fstate%2ftokens.json/keys",
    ] {
        let (status, rest) = fixture.raw(&format!(
            "GET {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n"
        ));
        assert!(
            status.starts_with("HTTP/1.1 404"),
            "{path}: {status} {rest}"
        );
        let (status, rest) = fixture.raw(&format!(
            "PUT {path} HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            fixture.alice,
            body.len()
        ));
        assert!(
            status.starts_with("HTTP/1.1 404"),
            "{path}: {status} {rest}"
        );
    }
    let (status, rest) = fixture.raw(&format!(
        "DELETE /api/v1/skills/pdf/..%2F..%2Fx/yank HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer {}\r\nConnection: close\r\n\r\n",
        fixture.alice
    ));
    assert!(status.starts_with("HTTP/1.1 404"), "{status} {rest}");
    assert_eq!(fixture.files(), before, "nothing written anywhere");
}

#[test]
fn another_users_skill_cannot_be_changed_by_a_non_owner() {
    let fixture = Fixture::new(&[]);
    let (status, body) = fixture.publish(&fixture.alice, "pdf", "1.0.0", tarball("pdf", "1.0.0"));
    assert_eq!(status, 201, "{body}");
    let before = fixture.files();
    let url = fixture.server.url();
    let client = &fixture.client;
    let attempts = [
        client
            .put(format!("{url}/api/v1/skills/pdf/owners"))
            .json(&serde_json::json!({ "add": ["bob"] })),
        client
            .put(format!("{url}/api/v1/skills/pdf/owners"))
            .json(&serde_json::json!({ "remove": ["alice"] })),
        client
            .put(format!("{url}/api/v1/skills/pdf/keys"))
            .json(&serde_json::json!({ "add": ["RWQf6LRCGA9i53mlYecO4IzT51TGPpvWucNSCh1CBM0QTaLn73Y7GFO3"] })),
        client.delete(format!("{url}/api/v1/skills/pdf/1.0.0/yank")),
        client.put(format!("{url}/api/v1/skills/pdf/1.0.0/unyank")),
    ];
    for attempt in attempts {
        let unauthenticated = attempt.try_clone().unwrap();
        let (status, body) = fixture.send(attempt.bearer_auth(&fixture.bob));
        assert_eq!(status, 403, "{body}");
        assert_eq!(code(&body), "not-owner", "{body}");
        let (status, body) = fixture.send(unauthenticated);
        assert_eq!(status, 401, "{body}");
    }
    let (status, body) = fixture.publish(&fixture.bob, "pdf", "2.0.0", tarball("pdf", "2.0.0"));
    assert_eq!(status, 403, "{body}");
    assert_eq!(fixture.files(), before, "nothing changed");
}

#[test]
fn a_private_registry_tells_strangers_nothing_through_the_api() {
    let fixture = Fixture::new(&["--auth-required"]);
    let (status, body) = fixture.publish(&fixture.alice, "pdf", "1.0.0", tarball("pdf", "1.0.0"));
    assert_eq!(status, 201, "{body}");
    let url = fixture.server.url();
    for path in ["owners", "keys"] {
        let (status, body) = fixture.send(
            fixture
                .client
                .get(format!("{url}/api/v1/skills/pdf/{path}")),
        );
        assert_eq!(status, 401, "{path}: {body}");
        assert!(!body.contains("alice"), "{body}");
        let (status, body) = fixture.send(
            fixture
                .client
                .get(format!("{url}/api/v1/skills/pdf/{path}"))
                .bearer_auth(&fixture.bob),
        );
        assert_eq!(status, 200, "{path}: {body}");
    }
}

#[test]
fn oversized_or_repeated_multipart_parts_are_refused_as_they_stream() {
    let fixture = Fixture::new(&[]);
    let before = fixture.files();
    let url = fixture.server.url();
    let publish = |form: multipart::Form| {
        fixture.send(
            fixture
                .client
                .put(format!("{url}/api/v1/skills"))
                .bearer_auth(&fixture.alice)
                .multipart(form),
        )
    };
    let form = || {
        multipart::Form::new()
            .text("version", "1.0.0")
            .part("tarball", multipart::Part::bytes(tarball("pdf", "1.0.0")))
    };
    // A part far over its limit is refused while it streams, before the
    // client has sent it: sent raw, reading while writing, as the skillpkg
    // client does (reqwest's blocking client gives up on an answer that
    // comes before its body is sent).
    let boundary = "hostile-boundary";
    let mut upload =
        format!("--{boundary}\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\n")
            .into_bytes();
    upload.extend_from_slice(&vec![b'p'; 4 << 20]);
    upload.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    let mut request = format!(
        "PUT /api/v1/skills HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer {}\r\nContent-Type: multipart/form-data; boundary={boundary}\r\nContent-Length: {}\r\n\r\n",
        fixture.alice,
        upload.len()
    )
    .into_bytes();
    request.extend_from_slice(&upload);
    let (status, rest) = fixture.raw_bytes(request);
    assert!(status.starts_with("HTTP/1.1 413"), "{status}");
    assert!(rest.contains("the `name` part is over its limit"), "{rest}");
    let (status, body) = publish(
        form()
            .text("name", "pdf")
            .part("signature", multipart::Part::bytes(vec![b'x'; 65 * 1024])),
    );
    assert_eq!(status, 413, "{body}");
    assert!(
        body.contains("the `signature` part is over its limit"),
        "{body}"
    );
    let (status, body) = publish(
        form()
            .text("name", "pdf")
            .part("tarball", multipart::Part::bytes(tarball("pdf", "1.0.0"))),
    );
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("the `tarball` part is sent twice"), "{body}");
    let (status, body) = publish(form().text("name", "pdf").text("name", "csv"));
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("the `name` part is sent twice"), "{body}");
    assert_eq!(fixture.files(), before, "nothing written");
}

#[test]
fn a_refused_archive_names_no_path_of_the_server() {
    let fixture = Fixture::new(&[]);
    // No description: the validator's diagnostic names the file.
    let mut tar = tar::Builder::new(Vec::new());
    let text = b"---\nname: pdf\n---\nbody\n";
    let mut header = tar::Header::new_gnu();
    header.set_size(text.len() as u64);
    header.set_mode(0o644);
    header.set_cksum();
    tar.append_data(&mut header, "SKILL.md", &text[..]).unwrap();
    let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gzip.write_all(&tar.into_inner().unwrap()).unwrap();
    let (status, body) = fixture.publish(&fixture.alice, "pdf", "1.0.0", gzip.finish().unwrap());
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("SKILL.md"), "{body}");
    let temp_dir = std::env::temp_dir();
    let temp_dir = temp_dir.to_str().unwrap().trim_end_matches('/');
    assert!(
        !body.contains(temp_dir) && !body.contains(".tmp"),
        "a server path in the answer: {body}"
    );
}
