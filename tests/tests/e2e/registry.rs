//! `skillpkg-registry` end to end: the real server on a loopback port, the
//! API over HTTP, the static tree on disk and through nginx.

use std::collections::BTreeMap;
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};

use reqwest::blocking::{Client, multipart};
use skillpkg_index::archive::{Limits, pack_dir};
use skillpkg_index::registry::{IndexRecord, parse_index_file};
use skillpkg_tests::{Nginx, RegistryServer, create_token, tarball_described};

// Signed publishing, in its own file to keep this one short.
mod signing;
// The static tree: ranges, Last-Modified, precompressed files, HEAD.
mod static_files;

/// A registry with a server and a token for `alice`.
struct Fixture {
    root: tempfile::TempDir,
    server: RegistryServer,
    alice: String,
    client: Client,
}

impl Fixture {
    fn new(extra: &[&str]) -> Self {
        let root = tempfile::tempdir().unwrap();
        let alice = create_token(root.path(), "alice");
        let server = RegistryServer::start(root.path(), extra);
        Self {
            root,
            server,
            alice,
            client: Client::new(),
        }
    }

    fn publish(
        &self,
        token: Option<&str>,
        name: &str,
        version: &str,
        tarball: Vec<u8>,
    ) -> (u16, serde_json::Value) {
        self.publish_with(token, name, version, tarball, Parts::default())
    }

    /// Publishes with the optional parts of a signed publish.
    fn publish_with(
        &self,
        token: Option<&str>,
        name: &str,
        version: &str,
        tarball: Vec<u8>,
        parts: Parts,
    ) -> (u16, serde_json::Value) {
        let mut form = multipart::Form::new()
            .text("name", name.to_owned())
            .text("version", version.to_owned())
            .part(
                "tarball",
                multipart::Part::bytes(tarball).file_name("skill.tgz"),
            );
        for (part, bytes) in [
            ("signature", parts.signature),
            ("key", parts.key.map(String::into_bytes)),
            ("provenance", parts.provenance),
        ] {
            if let Some(bytes) = bytes {
                form = form.part(part, multipart::Part::bytes(bytes));
            }
        }
        let mut request = self
            .client
            .put(format!("{}/api/v1/skills", self.server.url()))
            .multipart(form);
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let response = request.send().unwrap();
        let status = response.status().as_u16();
        (status, response.json().unwrap_or(serde_json::Value::Null))
    }

    /// Sends a JSON body to `/api/v1/skills/{name}/keys`.
    fn change_keys(&self, token: &str, name: &str, body: &serde_json::Value) -> (u16, String) {
        let response = self
            .client
            .put(format!("{}/api/v1/skills/{name}/keys", self.server.url()))
            .bearer_auth(token)
            .json(body)
            .send()
            .unwrap();
        let status = response.status().as_u16();
        (status, response.text().unwrap())
    }

    fn snapshot(&self) -> BTreeMap<PathBuf, Vec<u8>> {
        skillpkg_tests::served_files_below(&self.server.public())
    }
}

/// The optional parts of a publish, as sent.
#[derive(Clone, Debug, Default)]
struct Parts {
    signature: Option<Vec<u8>>,
    key: Option<String>,
    provenance: Option<Vec<u8>>,
}

fn detail(body: &serde_json::Value) -> String {
    body["errors"][0]["detail"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn index_of(fixture: &Fixture, path: &str, name: &str) -> Vec<IndexRecord> {
    let text = fs_err::read_to_string(fixture.server.public().join(path)).unwrap();
    parse_index_file(&name.parse().unwrap(), &text).unwrap()
}

#[test]
fn a_publish_lands_in_the_api_answer_and_the_static_tree() {
    let fixture = Fixture::new(&[]);
    let bytes = tarball_described("pdf-processing", "1.2.0", "Reads PDFs.");
    let (status, body) = fixture.publish(
        Some(&fixture.alice),
        "pdf-processing",
        "1.2.0",
        bytes.clone(),
    );
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["vers"], "1.2.0");
    let records = index_of(&fixture, "index/pd/f-/pdf-processing", "pdf-processing");
    assert_eq!(records.len(), 1);
    assert_eq!(
        records[0].cksum,
        skillpkg_index::checksum::Checksum::of(&bytes)
    );
    assert_eq!(
        serde_json::to_value(&records[0]).unwrap(),
        body,
        "the API answers with the index line"
    );
    let stored = fs_err::read(
        fixture
            .server
            .public()
            .join("dl/pdf-processing/1.2.0/pdf-processing-1.2.0.tgz"),
    )
    .unwrap();
    assert_eq!(stored, bytes, "the archive is stored as uploaded");

    // The same through HTTP.
    let url = fixture.server.url();
    let downloaded = fixture
        .client
        .get(format!(
            "{url}/dl/pdf-processing/1.2.0/pdf-processing-1.2.0.tgz"
        ))
        .send()
        .unwrap();
    assert_eq!(
        downloaded.headers()["cache-control"],
        "public, max-age=31536000, immutable"
    );
    assert_eq!(downloaded.headers()["content-type"], "application/gzip");
    assert_eq!(downloaded.bytes().unwrap().to_vec(), bytes);
    let search = skillpkg_tests::search_entries(|path| {
        fixture
            .client
            .get(format!("{url}/{path}"))
            .send()
            .unwrap()
            .text()
            .unwrap()
    });
    assert_eq!(search[0]["name"], "pdf-processing");
    // The discovery index is written a moment after the publish (it lists
    // every skill: docs/registry.md, "At scale").
    let discovery = || -> serde_json::Value {
        fixture
            .client
            .get(format!("{url}/.well-known/agent-skills/index.json"))
            .send()
            .unwrap()
            .json()
            .unwrap()
    };
    assert!(
        skillpkg_tests::wait_until(std::time::Duration::from_secs(10), || {
            discovery()["skills"][0]["digest"] == body["cksum"]
        }),
        "the discovery index lists the version: {}",
        discovery()
    );
    let discovery = discovery();
    assert_eq!(
        discovery["$schema"], "https://schemas.agentskills.io/discovery/0.2.0/schema.json",
        "the 0.2.0 shape, which installers read only when it says so"
    );
    assert_eq!(discovery["skills"][0]["type"], "archive");
    assert_eq!(discovery["skills"][0]["digest"], body["cksum"]);
    // Without --public-url, relative to the index: a copy of the tree on
    // another host does not point back at this server.
    assert_eq!(
        discovery["skills"][0]["url"],
        "../../dl/pdf-processing/1.2.0/pdf-processing-1.2.0.tgz"
    );
    let config: serde_json::Value = fixture
        .client
        .get(format!("{url}/config.json"))
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(config["api"], format!("{url}/api/v1"));
}

#[test]
fn static_files_have_etags_cache_headers_and_404s() {
    let fixture = Fixture::new(&[]);
    fixture.publish(
        Some(&fixture.alice),
        "pdf",
        "1.0.0",
        tarball_described("pdf", "1.0.0", "x"),
    );
    let url = format!("{}/index/3/p/pdf", fixture.server.url());
    let first = fixture.client.get(&url).send().unwrap();
    assert_eq!(first.status(), 200);
    assert_eq!(
        first.headers()["cache-control"],
        "public, max-age=60, must-revalidate"
    );
    let etag = first.headers()["etag"].to_str().unwrap().to_owned();
    let again = fixture
        .client
        .get(&url)
        .header("If-None-Match", &etag)
        .send()
        .unwrap();
    assert_eq!(again.status(), 304);
    assert_eq!(again.bytes().unwrap().len(), 0);
    let other = fixture
        .client
        .get(&url)
        .header("If-None-Match", "\"other\"")
        .send()
        .unwrap();
    assert_eq!(other.status(), 200);
    for missing in [
        "/index/3/n/nop",
        "/state/tokens.json",
        "/../state/tokens.json",
        "/index/",
        "/.skillpkg-tmp-x",
        "/dl/",
    ] {
        let response = fixture
            .client
            .get(format!("{}{missing}", fixture.server.url()))
            .send()
            .unwrap();
        assert_eq!(response.status(), 404, "{missing}");
    }
    let head = fixture.client.head(&url).send().unwrap();
    assert_eq!(head.status(), 200);
}

/// Asserts a publish is refused with `status` and a detail containing
/// `needle`, and that nothing in the tree changed.
fn assert_refused(
    fixture: &Fixture,
    token: Option<&str>,
    name: &str,
    version: &str,
    bytes: Vec<u8>,
    status: u16,
    needle: &str,
) {
    assert_refused_with(
        fixture,
        token,
        (name, version, bytes, Parts::default()),
        status,
        needle,
    );
}

/// [`assert_refused`] for a publish with optional parts.
fn assert_refused_with(
    fixture: &Fixture,
    token: Option<&str>,
    (name, version, bytes, parts): (&str, &str, Vec<u8>, Parts),
    status: u16,
    needle: &str,
) {
    let before = fixture.snapshot();
    let (got, body) = fixture.publish_with(token, name, version, bytes, parts);
    assert_eq!(got, status, "{body}");
    assert!(
        detail(&body).contains(needle),
        "`{needle}` not in `{}`",
        detail(&body)
    );
    assert_eq!(
        fixture.snapshot(),
        before,
        "a refused publish writes nothing"
    );
}

#[test]
fn publishes_without_a_valid_token_are_refused() {
    let fixture = Fixture::new(&[]);
    let bytes = tarball_described("pdf", "1.0.0", "x");
    assert_refused(
        &fixture,
        None,
        "pdf",
        "1.0.0",
        bytes.clone(),
        401,
        "needs a token",
    );
    assert_refused(
        &fixture,
        Some("skp_made-up"),
        "pdf",
        "1.0.0",
        bytes.clone(),
        401,
        "unknown or was revoked",
    );

    let root = fixture.root.path();
    let bob = create_token(root, "bob");
    let list = std::process::Command::new(skillpkg_tests::binary("skillpkg-registry"))
        .args(["token", "list", "--json", "--root"])
        .arg(root)
        .output()
        .unwrap();
    let tokens: serde_json::Value = serde_json::from_slice(&list.stdout).unwrap();
    assert!(
        !String::from_utf8_lossy(&list.stdout).contains(&bob),
        "tokens are never listed"
    );
    let bob_id = tokens
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["user"] == "bob")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let revoke = std::process::Command::new(skillpkg_tests::binary("skillpkg-registry"))
        .args(["token", "revoke", &bob_id, "--root"])
        .arg(root)
        .status()
        .unwrap();
    assert!(revoke.success());
    assert_refused(
        &fixture,
        Some(&bob),
        "pdf",
        "1.0.0",
        bytes,
        401,
        "unknown or was revoked",
    );
}

#[test]
fn only_owners_publish_and_owners_can_add_owners() {
    let fixture = Fixture::new(&[]);
    let bob = create_token(fixture.root.path(), "bob");
    let (status, _) = fixture.publish(
        Some(&fixture.alice),
        "pdf",
        "1.0.0",
        tarball_described("pdf", "1.0.0", "x"),
    );
    assert_eq!(status, 201);
    assert_refused(
        &fixture,
        Some(&bob),
        "pdf",
        "1.1.0",
        tarball_described("pdf", "1.1.0", "x"),
        403,
        "`bob` does not own `pdf`; ask an owner (alice)",
    );

    let owners_url = format!("{}/api/v1/skills/pdf/owners", fixture.server.url());
    let denied = fixture
        .client
        .put(&owners_url)
        .bearer_auth(&bob)
        .body(r#"{"add":["bob"]}"#)
        .send()
        .unwrap();
    assert_eq!(denied.status(), 403);
    let added = fixture
        .client
        .put(&owners_url)
        .bearer_auth(&fixture.alice)
        .body(r#"{"add":["bob"]}"#)
        .send()
        .unwrap();
    assert_eq!(added.status(), 200);
    let owners: serde_json::Value = fixture
        .client
        .get(&owners_url)
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(owners["users"], serde_json::json!(["alice", "bob"]));
    let (status, body) = fixture.publish(
        Some(&bob),
        "pdf",
        "1.1.0",
        tarball_described("pdf", "1.1.0", "x"),
    );
    assert_eq!(status, 201, "{body}");
    let last = fixture
        .client
        .put(&owners_url)
        .bearer_auth(&bob)
        .body(r#"{"remove":["alice","bob"]}"#)
        .send()
        .unwrap();
    assert_eq!(last.status(), 400);
}

#[test]
fn bad_archives_and_mismatches_are_refused_and_write_nothing() {
    let fixture = Fixture::new(&[]);
    let token = Some(fixture.alice.as_str());
    assert_refused(
        &fixture,
        token,
        "pdf",
        "1.0.0",
        b"not a tarball".to_vec(),
        400,
        "corrupt",
    );
    assert_refused(
        &fixture,
        token,
        "pdf",
        "1.0.0",
        raw_tgz(&[("../evil", b"x")]),
        400,
        "unsafe path",
    );
    assert_refused(
        &fixture,
        token,
        "pdf",
        "1.0.0",
        raw_tgz(&[("SKILL.md", b"no frontmatter")]),
        400,
        "frontmatter-missing",
    );
    assert_refused(
        &fixture,
        token,
        "pdf",
        "1.0.0",
        tarball_described("other", "1.0.0", "x"),
        400,
        "holds the skill `other`, not `pdf`",
    );
    let declared = {
        let temp = tempfile::tempdir().unwrap();
        let dir = temp.path().join("pdf");
        fs_err::create_dir_all(&dir).unwrap();
        fs_err::write(
            dir.join("SKILL.md"),
            "---\nname: pdf\ndescription: x\nversion: 2.0.0\n---\nbody\n",
        )
        .unwrap();
        pack_dir(
            &dir,
            "pdf".parse().unwrap(),
            "2.0.0".parse().unwrap(),
            &Limits::default(),
        )
        .unwrap()
        .tarball
    };
    assert_refused(
        &fixture,
        token,
        "pdf",
        "1.0.0",
        declared,
        400,
        "declares version 2.0.0, not 1.0.0",
    );
    assert_refused(
        &fixture,
        token,
        "../etc",
        "1.0.0",
        tarball_described("pdf", "1.0.0", "x"),
        400,
        "is not a valid skill name",
    );
    assert_refused(
        &fixture,
        token,
        "pdf",
        "latest",
        tarball_described("pdf", "1.0.0", "x"),
        400,
        "is not a semantic version",
    );
    let (status, _) = fixture.publish(
        token,
        "pdf",
        "1.0.0",
        tarball_described("pdf", "1.0.0", "x"),
    );
    assert_eq!(status, 201);
    assert_refused(
        &fixture,
        token,
        "pdf",
        "1.0.0",
        tarball_described("pdf", "1.0.0", "changed"),
        409,
        "already published",
    );
}

/// A gzipped tar of raw entries (the tar crate's builder refuses `..`).
fn raw_tgz(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let mut tar = Vec::new();
    for (path, data) in entries {
        let mut header = [0_u8; 512];
        header[..path.len()].copy_from_slice(path.as_bytes());
        header[100..107].copy_from_slice(b"0000644");
        header[108..115].copy_from_slice(b"0000000");
        header[116..123].copy_from_slice(b"0000000");
        header[124..135].copy_from_slice(format!("{:011o}", data.len()).as_bytes());
        header[136..147].copy_from_slice(b"00000000000");
        header[156] = b'0';
        header[257..263].copy_from_slice(b"ustar\0");
        header[263..265].copy_from_slice(b"00");
        header[148..156].copy_from_slice(b"        ");
        let sum: u32 = header.iter().map(|&b| u32::from(b)).sum();
        header[148..155].copy_from_slice(format!("{sum:06o}\0").as_bytes());
        tar.extend_from_slice(&header);
        tar.extend_from_slice(data);
        tar.resize(tar.len().next_multiple_of(512), 0);
    }
    tar.extend_from_slice(&[0; 1024]);
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(&tar).unwrap();
    encoder.finish().unwrap()
}

#[test]
fn a_description_cannot_inject_an_index_line() {
    let fixture = Fixture::new(&[]);
    // A CR and a raw U+2028 would be refused before they reached the index
    // (`control-character`, `ambiguous-yaml`); line feeds and quotes pass.
    let evil = "Looks fine.\n{\"v\":1,\"name\":\"pdf\",\"vers\":\"9.9.9\",\"yanked\":false}\n\"},{\"x\":\"";
    let (status, body) = fixture.publish(
        Some(&fixture.alice),
        "pdf",
        "1.0.0",
        tarball_described("pdf", "1.0.0", evil),
    );
    assert_eq!(status, 201, "{body}");
    let text = fs_err::read_to_string(fixture.server.public().join("index/3/p/pdf")).unwrap();
    assert_eq!(text.lines().count(), 1, "one version, one line:\n{text}");
    let records = index_of(&fixture, "index/3/p/pdf", "pdf");
    assert_eq!(records[0].description, evil);
    assert_eq!(records[0].vers.to_string(), "1.0.0");
}

#[test]
fn the_size_limit_holds_for_honest_and_lying_uploads() {
    // A small limit keeps the test light; the mechanism is the same at 8 MiB.
    let limit = 64 * 1024;
    let fixture = Fixture::new(&["--max-skill-bytes", &limit.to_string()]);
    let big = vec![b'x'; limit * 3];
    let before = fixture.snapshot();

    // An honest Content-Length over the limit: refused before the body is
    // read, so only the headers are sent and the answer comes anyway.
    let body = multipart_body(&big);
    let headers = format!(
        "PUT /api/v1/skills HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer {}\r\nContent-Type: multipart/form-data; boundary={BOUNDARY}\r\nContent-Length: {}\r\n\r\n",
        fixture.alice,
        body.len()
    );
    let response = raw_request(&fixture, headers.as_bytes());
    assert!(response.starts_with("HTTP/1.1 413"), "{response}");
    assert!(
        response.contains("this registry accepts archives of at most 65536 bytes"),
        "{response}"
    );

    // No Content-Length at all (chunked): refused while streaming.
    let response = raw_request(&fixture, &chunked_upload(&fixture.alice, &big));
    assert!(response.starts_with("HTTP/1.1 413"), "{response}");

    // A Content-Length that claims less than is sent: only the declared bytes
    // are read, which are not a complete upload.
    let response = raw_request(&fixture, &lying_upload(&fixture.alice, &big, 1000));
    assert!(response.starts_with("HTTP/1.1 400"), "{response}");

    // An archive just over the limit inside an upload under the slack.
    let (status, body) = fixture.publish(Some(&fixture.alice), "pdf", "1.0.0", vec![0; limit + 1]);
    assert_eq!(status, 413, "{body}");
    assert_eq!(fixture.snapshot(), before, "nothing was written");
}

const BOUNDARY: &str = "skillpkg-test-boundary";

fn multipart_body(payload: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    for (name, value) in [("name", "pdf"), ("version", "1.0.0")] {
        body.extend_from_slice(
            format!(
                "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"
            )
            .as_bytes(),
        );
    }
    body.extend_from_slice(
        format!("--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"tarball\"; filename=\"x.tgz\"\r\n\r\n").as_bytes(),
    );
    body.extend_from_slice(payload);
    body.extend_from_slice(format!("\r\n--{BOUNDARY}--\r\n").as_bytes());
    body
}

fn chunked_upload(token: &str, payload: &[u8]) -> Vec<u8> {
    let body = multipart_body(payload);
    let mut request = format!(
        "PUT /api/v1/skills HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer {token}\r\nContent-Type: multipart/form-data; boundary={BOUNDARY}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    )
    .into_bytes();
    for chunk in body.chunks(16 * 1024) {
        request.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
        request.extend_from_slice(chunk);
        request.extend_from_slice(b"\r\n");
    }
    request.extend_from_slice(b"0\r\n\r\n");
    request
}

fn lying_upload(token: &str, payload: &[u8], claimed: usize) -> Vec<u8> {
    let body = multipart_body(payload);
    let mut request = format!(
        "PUT /api/v1/skills HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer {token}\r\nContent-Type: multipart/form-data; boundary={BOUNDARY}\r\nContent-Length: {claimed}\r\nConnection: close\r\n\r\n"
    )
    .into_bytes();
    request.extend_from_slice(&body);
    request
}

/// Sends raw bytes and returns what the server answered. Writing and reading
/// run at once: the server may answer and close before it has read
/// everything, which is the point.
fn raw_request(fixture: &Fixture, request: &[u8]) -> String {
    let address = fixture
        .server
        .url()
        .trim_start_matches("http://")
        .to_owned();
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    let mut writer = stream.try_clone().unwrap();
    let request = request.to_vec();
    let sender = std::thread::spawn(move || {
        let _ = writer.write_all(&request);
    });
    let mut response = Vec::new();
    // Bytes read before a reset are kept in `response`.
    let _ = stream.read_to_end(&mut response);
    let _ = sender.join();
    String::from_utf8_lossy(&response).into_owned()
}

#[test]
fn twenty_concurrent_versions_all_land_and_one_version_wins_once() {
    let fixture = Fixture::new(&[]);
    let statuses: Vec<u16> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..20)
            .map(|minor| {
                let fixture = &fixture;
                scope.spawn(move || {
                    let version = format!("1.{minor}.0");
                    fixture
                        .publish(
                            Some(&fixture.alice),
                            "pdf",
                            &version,
                            tarball_described("pdf", &version, "x"),
                        )
                        .0
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| handle.join().unwrap())
            .collect()
    });
    assert_eq!(statuses, vec![201; 20]);
    let records = index_of(&fixture, "index/3/p/pdf", "pdf");
    let versions: Vec<String> = records
        .iter()
        .map(|record| record.vers.to_string())
        .collect();
    let expected: Vec<String> = (0..20).map(|minor| format!("1.{minor}.0")).collect();
    assert_eq!(versions, expected, "every version, once, sorted");

    let statuses: Vec<u16> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..10)
            .map(|attempt| {
                let fixture = &fixture;
                scope.spawn(move || {
                    fixture
                        .publish(
                            Some(&fixture.alice),
                            "pdf",
                            "2.0.0",
                            tarball_described("pdf", "2.0.0", &format!("attempt {attempt}")),
                        )
                        .0
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| handle.join().unwrap())
            .collect()
    });
    assert_eq!(
        statuses.iter().filter(|&&status| status == 201).count(),
        1,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|&&status| status == 409).count(),
        9,
        "{statuses:?}"
    );
    assert_eq!(index_of(&fixture, "index/3/p/pdf", "pdf").len(), 21);
}

#[test]
fn yank_and_unyank_change_only_the_yanked_fields() {
    let fixture = Fixture::new(&[]);
    fixture.publish(
        Some(&fixture.alice),
        "pdf",
        "1.0.0",
        tarball_described("pdf", "1.0.0", "x"),
    );
    let before = index_of(&fixture, "index/3/p/pdf", "pdf").remove(0);
    let url = format!("{}/api/v1/skills/pdf/1.0.0", fixture.server.url());
    let response = fixture
        .client
        .delete(format!("{url}/yank"))
        .bearer_auth(&fixture.alice)
        .body(r#"{"reason":"leaks a path"}"#)
        .send()
        .unwrap();
    assert_eq!(response.status(), 200);
    let yanked = index_of(&fixture, "index/3/p/pdf", "pdf").remove(0);
    assert!(yanked.yanked);
    assert_eq!(yanked.yanked_reason.as_deref(), Some("leaks a path"));
    assert_eq!(
        IndexRecord {
            yanked: false,
            yanked_reason: None,
            ..yanked
        },
        before
    );
    let search = skillpkg_tests::search_entries(|path| {
        fs_err::read_to_string(fixture.server.public().join(path)).unwrap()
    });
    assert_eq!(
        search,
        Vec::<serde_json::Value>::new(),
        "a yanked version is not offered"
    );

    let response = fixture
        .client
        .put(format!("{url}/unyank"))
        .bearer_auth(&fixture.alice)
        .send()
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(index_of(&fixture, "index/3/p/pdf", "pdf").remove(0), before);
    let missing = fixture
        .client
        .delete(format!(
            "{}/api/v1/skills/pdf/9.9.9/yank",
            fixture.server.url()
        ))
        .bearer_auth(&fixture.alice)
        .send()
        .unwrap();
    assert_eq!(missing.status(), 404);
    let (status, _) = fixture.publish(
        Some(&fixture.alice),
        "pdf",
        "1.0.0",
        tarball_described("pdf", "1.0.0", "x"),
    );
    assert_eq!(status, 409, "a yanked version is still never republished");
}

#[test]
fn build_writes_the_tree_the_server_wrote_byte_for_byte() {
    let fixture = Fixture::new(&[]);
    for (name, version) in [
        ("pdf", "1.0.0"),
        ("pdf", "1.1.0"),
        ("csv-tools", "0.1.0"),
        ("a", "2.0.0-beta.1"),
    ] {
        let (status, body) = fixture.publish(
            Some(&fixture.alice),
            name,
            version,
            tarball_described(name, version, &format!("{name} {version}")),
        );
        assert_eq!(status, 201, "{body}");
    }
    let out = tempfile::tempdir().unwrap();
    let tree = out.path().join("tree");
    let url = fixture.server.url();
    let output = std::process::Command::new(skillpkg_tests::binary("skillpkg-registry"))
        .arg("build")
        .arg("--from")
        .arg(fixture.server.public().join("dl"))
        .arg("--out")
        .arg(&tree)
        // The server was given no public URL: its discovery index's URLs
        // are relative, and so are the build's without one.
        .args(["--api", &format!("{url}/api/v1")])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        format!("built {} with 3 skills, 4 versions", tree.display())
    );
    let built = skillpkg_tests::files_below(&tree);
    wait_for_discovery(&fixture, &built);
    let served = fixture.snapshot();
    assert_eq!(
        built.keys().collect::<Vec<_>>(),
        served.keys().collect::<Vec<_>>()
    );
    for (path, bytes) in &served {
        assert_eq!(&built[path], bytes, "{} differs", path.display());
    }
}

/// Waits until the files the server writes a moment after a publish (its
/// discovery index, then its list page; docs/registry.md, "At scale") are
/// the ones in `built`.
fn wait_for_discovery(fixture: &Fixture, built: &BTreeMap<PathBuf, Vec<u8>>) {
    // The discovery index and the list page are written a moment after a
    // change, in that order: wait for both, not the first alone.
    let background = [
        Path::new(".well-known/agent-skills/index.json"),
        Path::new("skills.html"),
    ];
    let public = fixture.server.public();
    assert!(
        skillpkg_tests::wait_until(std::time::Duration::from_secs(10), || {
            background
                .iter()
                .all(|path| fs_err::read(public.join(path)).ok().as_ref() == built.get(*path))
        }),
        "the discovery index and the list page never became the built ones"
    );
}

#[test]
fn a_failed_build_writes_nothing() {
    let from = tempfile::tempdir().unwrap();
    fs_err::write(
        from.path().join("pdf-1.0.0.tgz"),
        tarball_described("pdf", "1.0.0", "x"),
    )
    .unwrap();
    fs_err::write(
        from.path().join("bad-1.0.0.tgz"),
        raw_tgz(&[("../evil", b"x")]),
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
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    insta::assert_snapshot!(skillpkg_tests::redact(&stderr), @"
    error: [TEMP]/bad-1.0.0.tgz cannot be published: the archive was refused: entry `../evil` has an unsafe path: the path contains an empty, `.` or `..` component
      Caused by: the archive was refused: entry `../evil` has an unsafe path
      Caused by: entry `../evil` has an unsafe path
      Caused by: the path contains an empty, `.` or `..` component
    ");
    assert_eq!(
        fs_err::read_dir(out.path()).unwrap().count(),
        0,
        "no tree and no staging folder"
    );
}

#[test]
fn nginx_serves_the_same_tree_with_the_same_answers() {
    let fixture = Fixture::new(&[]);
    for version in ["1.0.0", "1.1.0"] {
        fixture.publish(
            Some(&fixture.alice),
            "pdf-processing",
            version,
            tarball_described("pdf-processing", version, "Reads PDFs."),
        );
    }
    // The discovery index is written a moment after the publishes.
    let discovery = fixture
        .server
        .public()
        .join(".well-known/agent-skills/index.json");
    assert!(skillpkg_tests::wait_until(
        std::time::Duration::from_secs(10),
        || fs_err::read_to_string(&discovery).is_ok_and(|text| text.contains("1.1.0"))
    ));
    let nginx = Nginx::serve(&fixture.server.public());
    assert_served_alike(
        &fixture,
        &nginx,
        &[
            "config.json",
            "search.json",
            "search/all.json",
            ".well-known/agent-skills/index.json",
            "index/pd/f-/pdf-processing",
            "dl/pdf-processing/1.1.0/pdf-processing-1.1.0.tgz",
        ],
    );
    let hidden = fixture
        .client
        .get(format!("{}/dl/.skillpkg-tmp-x", nginx.url()))
        .send()
        .unwrap();
    assert_eq!(hidden.status(), 404);
}

/// Packs a skill with an incompressible asset, so a publish takes long
/// enough to be interrupted.
fn heavy_tarball_described(name: &str, version: &str, seed: u64) -> Vec<u8> {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join(name);
    fs_err::create_dir_all(dir.join("assets")).unwrap();
    fs_err::write(
        dir.join("SKILL.md"),
        format!("---\nname: {name}\ndescription: Heavy.\n---\nbody\n"),
    )
    .unwrap();
    let mut state = seed | 1;
    let noise: Vec<u8> = (0..512 * 1024)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect();
    fs_err::write(dir.join("assets/noise.bin"), noise).unwrap();
    pack_dir(
        &dir,
        name.parse().unwrap(),
        version.parse().unwrap(),
        &Limits::default(),
    )
    .unwrap()
    .tarball
}

/// Kill -9 the server while publishes are in flight, restart it, and check
/// the tree: every archive has its index line and the reverse, every archive
/// matches its checksum, and no temporary file is left.
#[test]
fn a_server_killed_during_publishes_restarts_consistent() {
    let root = tempfile::tempdir().unwrap();
    let token = create_token(root.path(), "alice");
    let tarballs: Vec<Vec<u8>> = (0..6)
        .map(|seed| heavy_tarball_described("heavy", "1.0.0", seed))
        .collect();
    let mut server = RegistryServer::start(root.path(), &[]);
    // A kill landed between an archive and its index line when a start
    // (the log holds every start's) removed an archive whose version was
    // never committed, or wrote an index file a commit was not followed by.
    let landed = |log: &str| {
        log.matches("recovered: removed").count() + log.matches("left unwritten").count()
    };
    let mut recovered = 0;
    // Six rounds at least; more (up to 20) until a kill has landed, which
    // timing on a loaded machine may take a few more tries to hit.
    for round in 0..20_u64 {
        if round >= 6 && recovered > 0 {
            break;
        }
        let url = server.url().to_owned();
        std::thread::scope(|scope| {
            for writer in 0..6_u64 {
                let (url, token, tarballs) = (&url, &token, &tarballs);
                scope.spawn(move || {
                    let client = Client::new();
                    for attempt in 0..50_u64 {
                        let version = format!("{round}.{writer}.{attempt}");
                        let form = multipart::Form::new()
                            .text("name", "heavy")
                            .text("version", version)
                            // The archive's SKILL.md has no version, so any version fits it.
                            .part(
                                "tarball",
                                multipart::Part::bytes(tarballs[writer as usize].clone())
                                    .file_name("x.tgz"),
                            );
                        if client
                            .put(format!("{url}/api/v1/skills"))
                            .bearer_auth(token)
                            .multipart(form)
                            .send()
                            .is_err()
                        {
                            return; // the server is gone
                        }
                    }
                });
            }
            // The first rounds kill at a time chosen in advance; the
            // others at a moment an archive is in place whose version the
            // index file does not list yet (the window this test is
            // about), found by watching the folder, or after 3 s.
            let started = std::time::Instant::now();
            let fixed = std::time::Duration::from_millis(100 + 80 * (round % 6));
            let public = root.path().join("public");
            loop {
                let waited = started.elapsed();
                if (round < 2 && waited >= fixed)
                    || (round >= 2 && archive_without_line(&public))
                    || waited >= std::time::Duration::from_secs(3)
                {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            server.kill();
        });
        server = RegistryServer::start(root.path(), &[]);
        check_consistent(&server.public());
        recovered = landed(&server.log());
    }
    let published = fs_err::read_to_string(server.public().join("index/he/av/heavy"))
        .unwrap()
        .lines()
        .count();
    assert!(published > 0, "some publishes completed before the kills");
    assert!(
        recovered > 0,
        "no kill landed between an archive and its index line; the test proved nothing:\n{}",
        server.log()
    );
}

/// Whether the tree at `public` has an archive of `heavy` whose version
/// its index file does not list (yet), once it lists one.
fn archive_without_line(public: &Path) -> bool {
    let listed = fs_err::read_to_string(public.join("index/he/av/heavy")).unwrap_or_default();
    if listed.is_empty() {
        return false;
    }
    let Ok(versions) = fs_err::read_dir(public.join("dl/heavy")) else {
        return false;
    };
    versions.flatten().any(|entry| {
        let version = entry.file_name().to_string_lossy().into_owned();
        entry.path().join(format!("heavy-{version}.tgz")).is_file()
            && !listed.contains(&format!("\"vers\":\"{version}\""))
    })
}

fn check_consistent(public: &Path) {
    let records = match fs_err::read_to_string(public.join("index/he/av/heavy")) {
        Ok(text) => parse_index_file(&"heavy".parse().unwrap(), &text)
            .expect("the index file is well-formed"),
        Err(_) => Vec::new(),
    };
    let mut listed: Vec<String> = records
        .iter()
        .map(|record| record.vers.to_string())
        .collect();
    listed.sort();
    let mut stored: Vec<String> = match fs_err::read_dir(public.join("dl/heavy")) {
        Ok(entries) => entries
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect(),
        Err(_) => Vec::new(),
    };
    stored.sort();
    assert_eq!(stored, listed, "archives on disk and index lines agree");
    for record in &records {
        let archive = public.join(format!("dl/heavy/{0}/heavy-{0}.tgz", record.vers));
        let bytes = fs_err::read(&archive).expect("every indexed archive exists");
        assert_eq!(
            skillpkg_index::checksum::Checksum::of(&bytes),
            record.cksum,
            "no partial archive is visible"
        );
    }
    let leftovers: Vec<PathBuf> = skillpkg_tests::files_below(public)
        .into_keys()
        .filter(|path| path.to_string_lossy().contains(".skillpkg-tmp-"))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
}

/// Asserts that the server and nginx answer each path with 200, the same
/// cache header and the same bytes.
fn assert_served_alike(fixture: &Fixture, nginx: &Nginx, paths: &[&str]) {
    for path in paths {
        let ours = fixture
            .client
            .get(format!("{}/{path}", fixture.server.url()))
            .send()
            .unwrap();
        let theirs = fixture
            .client
            .get(format!("{}/{path}", nginx.url()))
            .send()
            .unwrap();
        assert_eq!(
            (ours.status(), theirs.status()),
            (reqwest::StatusCode::OK, reqwest::StatusCode::OK),
            "{path}"
        );
        assert_eq!(
            ours.headers()["cache-control"],
            theirs.headers()["cache-control"],
            "{path}"
        );
        assert_eq!(ours.bytes().unwrap(), theirs.bytes().unwrap(), "{path}");
    }
}
