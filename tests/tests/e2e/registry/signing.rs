//! Signed publishing: signatures checked against each skill's registered
//! keys, keys registered on first use and managed by owners and the admin,
//! provenance stored beside the archive, `--require-signatures`, and build
//! checking the same.

use skillpkg_index::checksum::Checksum;
use skillpkg_index::registry::KeysFile;
use skillpkg_index::signing::{
    SecretKey, Signature, SourceInfo, TrustedComment, sign_provenance, verify_provenance,
    verify_skill,
};

use super::{Fixture, Parts, assert_refused_with, assert_served_alike, detail};
use skillpkg_tests::tarball_described as tarball;

/// The trusted comment skillpkg signs: `name@version` and the sha256 of `bytes`.
fn comment(name: &str, version: &str, bytes: &[u8]) -> String {
    TrustedComment {
        name: name.parse().unwrap(),
        version: version.parse().unwrap(),
        sha256: Checksum::of(bytes),
    }
    .to_string()
}

/// The `.minisig` of `tarball` as `name@version`, by `key`.
fn sign(key: &SecretKey, name: &str, version: &str, tarball: &[u8]) -> Vec<u8> {
    Signature::sign(key, tarball, &comment(name, version, tarball))
        .to_file()
        .into_bytes()
}

/// The provenance of `name-version.tgz` with digest `sha256`, by `key`.
fn provenance(key: &SecretKey, name: &str, version: &str, sha256: &Checksum) -> Vec<u8> {
    let source = SourceInfo {
        repository: Some("git+https://github.com/acme/skills".into()),
        commit: Some("0123456789abcdef0123456789abcdef01234567".into()),
        dirty: false,
        builder: "https://github.com/actions/runner".into(),
        ci_run: None,
    };
    sign_provenance(key, &format!("{name}-{version}.tgz"), sha256, &source).into_bytes()
}

/// The parts of a publish signed by `key`, with its public key.
fn signed(key: &SecretKey, name: &str, version: &str, tarball: &[u8]) -> Parts {
    Parts {
        signature: Some(sign(key, name, version, tarball)),
        key: Some(key.public().to_base64()),
        provenance: None,
    }
}

/// A signature in minisign's legacy `Ed` form: Ed25519 over the raw file,
/// not over its BLAKE2b-512. `Signature` makes only prehashed ones, so this
/// is built by hand from the secret key's bytes.
fn legacy_signature(key: &SecretKey, tarball: &[u8], trusted_comment: &str) -> Vec<u8> {
    use base64::Engine as _;
    use ed25519_dalek::Signer as _;
    let base64 = base64::engine::general_purpose::STANDARD;
    let file = key.to_file(None).unwrap();
    let bytes = base64.decode(file.lines().nth(1).unwrap()).unwrap();
    // "Ed", kdf, "B2", salt (32), opslimit (8), memlimit (8), then, not
    // encrypted: key id (8), seed (32), public key (32), checksum (32).
    let key_id = &bytes[54..62];
    let seed: [u8; 32] = bytes[62..94].try_into().unwrap();
    let signing = ed25519_dalek::SigningKey::from_bytes(&seed);
    let signature = signing.sign(tarball).to_bytes();
    let mut first = b"Ed".to_vec();
    first.extend_from_slice(key_id);
    first.extend_from_slice(&signature);
    let mut global = signature.to_vec();
    global.extend_from_slice(trusted_comment.as_bytes());
    let text = format!(
        "untrusted comment: signature from minisign secret key\n{}\ntrusted comment: {trusted_comment}\n{}\n",
        base64.encode(first),
        base64.encode(signing.sign(&global).to_bytes())
    );
    let parsed: Signature = text.parse().unwrap();
    assert_eq!(
        parsed.key_id(),
        key.id(),
        "the legacy signature is well-formed"
    );
    text.into_bytes()
}

fn keys_file(fixture: &Fixture, name: &str) -> KeysFile {
    let bytes = fs_err::read(fixture.server.public().join(format!("keys/{name}.json"))).unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

fn key_ids(fixture: &Fixture, name: &str) -> Vec<String> {
    let list: serde_json::Value = fixture
        .client
        .get(format!(
            "{}/api/v1/skills/{name}/keys",
            fixture.server.url()
        ))
        .send()
        .unwrap()
        .json()
        .unwrap();
    list["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|key| key["id"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn a_signed_publish_registers_its_key_and_stores_signature_and_provenance() {
    let fixture = Fixture::new(&[]);
    let key = SecretKey::generate().unwrap();
    let bytes = tarball("pdf", "1.0.0", "x");
    let signature = sign(&key, "pdf", "1.0.0", &bytes);
    let provenance = provenance(&key, "pdf", "1.0.0", &Checksum::of(&bytes));
    let parts = Parts {
        signature: Some(signature.clone()),
        // A public key file works as well as its base64 line.
        key: Some(key.public().to_file()),
        provenance: Some(provenance.clone()),
    };
    let (status, body) =
        fixture.publish_with(Some(&fixture.alice), "pdf", "1.0.0", bytes.clone(), parts);
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["signer"], key.id().to_string());

    let keys = keys_file(&fixture, "pdf");
    assert_eq!(keys.v, 1);
    assert_eq!(keys.keys.len(), 1);
    assert_eq!(keys.keys[0].id, key.id().to_string());
    assert_eq!(keys.keys[0].key, key.public());
    assert_eq!(keys.keys[0].added, body["published"].as_str().unwrap());
    let public = fixture.server.public();
    assert_eq!(
        fs_err::read(public.join("dl/pdf/1.0.0/pdf-1.0.0.tgz.minisig")).unwrap(),
        signature
    );
    assert_eq!(
        fs_err::read(public.join("dl/pdf/1.0.0/pdf-1.0.0.intoto.jsonl")).unwrap(),
        provenance
    );

    // What a client gets over HTTP holds with the served key.
    let get = |path: &str| {
        fixture
            .client
            .get(format!("{}/{path}", fixture.server.url()))
            .send()
            .unwrap()
    };
    let served_keys = get("keys/pdf.json");
    assert_eq!(served_keys.headers()["content-type"], "application/json");
    assert_eq!(
        served_keys.headers()["cache-control"],
        "public, max-age=60, must-revalidate"
    );
    let served_keys: KeysFile = served_keys.json().unwrap();
    let served_signature = get("dl/pdf/1.0.0/pdf-1.0.0.tgz.minisig");
    assert_eq!(
        served_signature.headers()["cache-control"],
        "public, max-age=31536000, immutable"
    );
    let verified = verify_skill(
        &bytes,
        &served_signature.text().unwrap(),
        &served_keys.public_keys(),
        &"pdf".parse().unwrap(),
        &"1.0.0".parse().unwrap(),
    )
    .unwrap();
    assert_eq!(verified.key_id, key.id());
    let served_provenance = get("dl/pdf/1.0.0/pdf-1.0.0.intoto.jsonl");
    assert_eq!(
        served_provenance.headers()["content-type"],
        "application/x-ndjson"
    );
    assert_eq!(
        served_provenance.headers()["cache-control"],
        "public, max-age=31536000, immutable"
    );
    verify_provenance(
        &served_provenance.text().unwrap(),
        &key.public(),
        &Checksum::of(&bytes),
    )
    .unwrap();
    let listed: serde_json::Value = fixture
        .client
        .get(format!("{}/api/v1/skills/pdf/keys", fixture.server.url()))
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(
        listed,
        serde_json::json!({ "keys": serde_json::to_value(&keys.keys).unwrap() })
    );

    // Later versions are checked against the registered key; the key part
    // is not needed any more.
    let bytes = tarball("pdf", "1.1.0", "x");
    let parts = Parts {
        signature: Some(sign(&key, "pdf", "1.1.0", &bytes)),
        ..Parts::default()
    };
    let (status, body) = fixture.publish_with(Some(&fixture.alice), "pdf", "1.1.0", bytes, parts);
    assert_eq!(status, 201, "{body}");
    assert_eq!(keys_file(&fixture, "pdf"), keys, "the keys did not change");

    // A skill with keys takes only signed versions, even here, where the
    // registry does not require signatures.
    assert_refused_with(
        &fixture,
        Some(&fixture.alice),
        (
            "pdf",
            "1.2.0",
            tarball("pdf", "1.2.0", "x"),
            Parts::default(),
        ),
        400,
        &format!(
            "pdf@1.2.0 is not signed, but `pdf` has registered keys ({}): every version of it must be signed",
            key.id()
        ),
    );
}

#[test]
fn a_publish_by_an_unregistered_key_is_refused_until_an_owner_adds_it() {
    let fixture = Fixture::new(&[]);
    let bob = skillpkg_tests::create_token(fixture.root.path(), "bob");
    let first = SecretKey::generate().unwrap();
    let second = SecretKey::generate().unwrap();
    let bytes = tarball("pdf", "1.0.0", "x");
    let parts = signed(&first, "pdf", "1.0.0", &bytes);
    let (status, body) = fixture.publish_with(Some(&fixture.alice), "pdf", "1.0.0", bytes, parts);
    assert_eq!(status, 201, "{body}");

    // The key part does not register a second key: only the first signed
    // publish registers one.
    let bytes = tarball("pdf", "1.1.0", "x");
    let by_second = signed(&second, "pdf", "1.1.0", &bytes);
    assert_refused_with(
        &fixture,
        Some(&fixture.alice),
        ("pdf", "1.1.0", bytes.clone(), by_second.clone()),
        403,
        &format!(
            "pdf@1.1.0: the signature was made by key {}, which is not registered for `pdf` (registered: {}); an owner can add a key with `PUT /api/v1/skills/pdf/keys`",
            second.id(),
            first.id()
        ),
    );

    let add_second = serde_json::json!({ "add": [second.public().to_base64()] });
    let (status, _) = fixture.change_keys(&bob, "pdf", &add_second);
    assert_eq!(status, 403, "only owners change keys");
    let (status, text) = fixture.change_keys(
        &fixture.alice,
        "pdf",
        &serde_json::json!({ "add": ["RWQ"] }),
    );
    assert_eq!(status, 400);
    assert!(
        text.contains("`RWQ` is not a minisign public key"),
        "{text}"
    );
    let (status, text) = fixture.change_keys(
        &fixture.alice,
        "pdf",
        &serde_json::json!({ "remove": ["0123456789ABCDEF"] }),
    );
    assert_eq!(status, 400);
    assert!(
        text.contains("no key with the id 0123456789ABCDEF is registered for `pdf`"),
        "{text}"
    );
    let (status, text) = fixture.change_keys(&fixture.alice, "pdf", &add_second);
    assert_eq!(status, 200, "{text}");
    assert_eq!(
        key_ids(&fixture, "pdf"),
        [first.id().to_string(), second.id().to_string()]
    );
    let (status, body) =
        fixture.publish_with(Some(&fixture.alice), "pdf", "1.1.0", bytes, by_second);
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["signer"], second.id().to_string());

    // Rotation: with the new key in, the old one goes, and with it its
    // right to sign.
    let (status, text) = fixture.change_keys(
        &fixture.alice,
        "pdf",
        &serde_json::json!({ "remove": [first.id().to_string()] }),
    );
    assert_eq!(status, 200, "{text}");
    assert_eq!(key_ids(&fixture, "pdf"), [second.id().to_string()]);
    let bytes = tarball("pdf", "1.2.0", "x");
    assert_refused_with(
        &fixture,
        Some(&fixture.alice),
        (
            "pdf",
            "1.2.0",
            bytes.clone(),
            signed(&first, "pdf", "1.2.0", &bytes),
        ),
        403,
        &format!("signature was made by key {}", first.id()),
    );
    let before = fixture.snapshot();
    let (status, text) = fixture.change_keys(
        &fixture.alice,
        "pdf",
        &serde_json::json!({ "remove": [second.id().to_string()] }),
    );
    assert_eq!(status, 400);
    assert!(text.contains("`pdf` must keep at least one key"), "{text}");
    assert_eq!(fixture.snapshot(), before);
    let missing = fixture
        .client
        .get(format!("{}/api/v1/skills/nope/keys", fixture.server.url()))
        .send()
        .unwrap();
    assert_eq!(missing.status(), 404);
}

#[test]
fn bad_signatures_and_provenance_are_refused_and_write_nothing() {
    let fixture = Fixture::new(&[]);
    let token = Some(fixture.alice.as_str());
    let key = SecretKey::generate().unwrap();
    let other = SecretKey::generate().unwrap();
    let bytes = tarball("pdf", "1.0.0", "x");
    let parts = signed(&key, "pdf", "1.0.0", &bytes);
    let (status, body) = fixture.publish_with(token, "pdf", "1.0.0", bytes, parts);
    assert_eq!(status, 201, "{body}");

    let bytes = tarball("pdf", "1.1.0", "x");
    let good = String::from_utf8(sign(&key, "pdf", "1.1.0", &bytes)).unwrap();
    let with_signature = |signature: Vec<u8>| Parts {
        signature: Some(signature),
        key: Some(key.public().to_base64()),
        provenance: None,
    };
    let signed_as = |name: &str, version: &str, subject: &[u8]| {
        with_signature(
            Signature::sign(&key, &bytes, &comment(name, version, subject))
                .to_file()
                .into_bytes(),
        )
    };
    let other_archive = format!("({})", Checksum::of(b"other bytes"));
    let cases: Vec<(&str, Vec<u8>, Parts, &str)> = vec![
        (
            "a tampered archive",
            tarball("pdf", "1.1.0", "changed"),
            with_signature(good.clone().into_bytes()),
            "pdf@1.1.0: the signature does not match the archive",
        ),
        (
            "a comment naming another skill",
            bytes.clone(),
            signed_as("csv", "1.1.0", &bytes),
            "pdf@1.1.0: the signature is for csv@1.1.0",
        ),
        (
            "a comment naming another version",
            bytes.clone(),
            signed_as("pdf", "1.0.0", &bytes),
            "pdf@1.1.0: the signature is for pdf@1.0.0",
        ),
        (
            "a comment naming another archive",
            bytes.clone(),
            signed_as("pdf", "1.1.0", b"other bytes"),
            &other_archive,
        ),
        (
            "a tampered comment",
            bytes.clone(),
            with_signature(good.replace("\tpdf@1.1.0\t", "\tpdf@1.1.1\t").into_bytes()),
            "pdf@1.1.0: the trusted comment was changed after it was signed",
        ),
        (
            "minisign's own comment",
            bytes.clone(),
            with_signature(
                Signature::sign(&key, &bytes, "timestamp:1\tfile:pdf-1.1.0.tgz\thashed")
                    .to_file()
                    .into_bytes(),
            ),
            "pdf@1.1.0: the trusted comment is not a skillpkg one",
        ),
        (
            "a legacy signature",
            bytes.clone(),
            with_signature(legacy_signature(
                &key,
                &bytes,
                &comment("pdf", "1.1.0", &bytes),
            )),
            "pdf@1.1.0: the signature is in minisign's legacy format",
        ),
        (
            "a truncated signature",
            bytes.clone(),
            with_signature(good.as_bytes()[..good.len() / 2].to_vec()),
            "pdf@1.1.0: the signature file is not a minisign signature",
        ),
        (
            "a garbage signature",
            bytes.clone(),
            with_signature(b"garbage".to_vec()),
            "pdf@1.1.0: the signature file is not a minisign signature",
        ),
        (
            "a signature that is not text",
            bytes.clone(),
            with_signature(vec![0xff, 0xfe, 0]),
            "pdf@1.1.0: the signature file is not a minisign signature: it is not UTF-8 text",
        ),
        (
            "provenance without a signature",
            bytes.clone(),
            Parts {
                provenance: Some(provenance(&key, "pdf", "1.1.0", &Checksum::of(&bytes))),
                ..Parts::default()
            },
            "pdf@1.1.0: provenance was sent without a signature",
        ),
        (
            "provenance of another archive",
            bytes.clone(),
            Parts {
                provenance: Some(provenance(&key, "pdf", "1.1.0", &Checksum::of(b"other"))),
                ..with_signature(good.clone().into_bytes())
            },
            "pdf@1.1.0: the provenance describes an archive with digest sha256:",
        ),
        (
            "provenance by another key",
            bytes.clone(),
            Parts {
                provenance: Some(provenance(&other, "pdf", "1.1.0", &Checksum::of(&bytes))),
                ..with_signature(good.clone().into_bytes())
            },
            "pdf@1.1.0: the provenance is signed by",
        ),
        (
            "a key without a signature",
            bytes.clone(),
            Parts {
                key: Some(key.public().to_base64()),
                ..Parts::default()
            },
            "pdf@1.1.0: the `key` part was sent without a `signature`",
        ),
    ];
    for (case, tarball, parts, needle) in cases {
        let before = fixture.snapshot();
        let (status, body) = fixture.publish_with(token, "pdf", "1.1.0", tarball, parts);
        assert_eq!(status, 400, "{case}: {body}");
        assert!(
            detail(&body).contains(needle),
            "{case}: `{needle}` not in `{}`",
            detail(&body)
        );
        assert_eq!(fixture.snapshot(), before, "{case} wrote something");
    }
    assert_refused_with(
        &fixture,
        token,
        (
            "pdf",
            "1.1.0",
            bytes.clone(),
            signed(&other, "pdf", "1.1.0", &bytes),
        ),
        403,
        &format!("the signature was made by key {}", other.id()),
    );

    // The first signed publish of a name: the key part must come, be a key,
    // and be the signer's.
    let bytes = tarball("csv", "1.0.0", "x");
    let by_other = sign(&other, "csv", "1.0.0", &bytes);
    for (parts, needle) in [
        (
            Parts {
                signature: Some(by_other.clone()),
                ..Parts::default()
            },
            "csv@1.0.0 is signed, but no public key is registered for `csv` to check it with: send the publisher's public key in the `key` part".to_owned(),
        ),
        (
            Parts {
                signature: Some(by_other.clone()),
                key: Some("RWQnot-a-key".into()),
                provenance: None,
            },
            "the `key` part is not a minisign public key".to_owned(),
        ),
        (
            Parts {
                signature: Some(by_other),
                key: Some(key.public().to_base64()),
                provenance: None,
            },
            format!(
                "csv@1.0.0: the signature was made by key {}, not by {}",
                other.id(),
                key.id()
            ),
        ),
    ] {
        assert_refused_with(
            &fixture,
            token,
            ("csv", "1.0.0", bytes.clone(), parts),
            400,
            &needle,
        );
    }
    assert!(
        !fixture.server.public().join("keys/csv.json").exists(),
        "no key was registered"
    );
}

#[test]
fn a_registry_that_requires_signatures_refuses_unsigned_publishes() {
    let fixture = Fixture::new(&["--require-signatures"]);
    let config: serde_json::Value = fixture
        .client
        .get(format!("{}/config.json", fixture.server.url()))
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(config["require-signatures"], true);
    assert_refused_with(
        &fixture,
        Some(&fixture.alice),
        (
            "pdf",
            "1.0.0",
            tarball("pdf", "1.0.0", "x"),
            Parts::default(),
        ),
        400,
        "pdf@1.0.0 is not signed, and this registry requires signatures: create a key with `skillpkg key generate`, then publish again",
    );
    let key = SecretKey::generate().unwrap();
    let bytes = tarball("pdf", "1.0.0", "x");
    let parts = signed(&key, "pdf", "1.0.0", &bytes);
    let (status, body) = fixture.publish_with(Some(&fixture.alice), "pdf", "1.0.0", bytes, parts);
    assert_eq!(status, 201, "{body}");
}

/// Runs `skillpkg-registry key ...` on the fixture's data folder.
fn key_command(fixture: &Fixture, args: &[&str]) -> skillpkg_tests::Output {
    skillpkg_tests::run(
        std::process::Command::new(skillpkg_tests::binary("skillpkg-registry"))
            .arg("key")
            .args(args)
            .arg("--root")
            .arg(fixture.root.path()),
    )
}

#[test]
fn the_admin_manages_keys_while_the_server_runs() {
    let fixture = Fixture::new(&[]);
    let pinned = SecretKey::generate().unwrap();
    let other = SecretKey::generate().unwrap();
    // Registered before the first publish, so that publish cannot register
    // another key on first use.
    let added = key_command(
        &fixture,
        &[
            "add",
            "--skill",
            "pdf",
            "--key",
            &pinned.public().to_base64(),
        ],
    );
    assert_eq!(added.code, 0, "{}", added.stderr);
    let said = skillpkg_tests::redact(&added.stderr).replace(&pinned.id().to_string(), "[PINNED]");
    insta::assert_snapshot!(said, @"`pdf` accepts signatures by key [PINNED] now");
    let bytes = tarball("pdf", "1.0.0", "x");
    assert_refused_with(
        &fixture,
        Some(&fixture.alice),
        (
            "pdf",
            "1.0.0",
            bytes.clone(),
            signed(&other, "pdf", "1.0.0", &bytes),
        ),
        403,
        "not registered for `pdf`",
    );
    let parts = signed(&pinned, "pdf", "1.0.0", &bytes);
    let (status, body) = fixture.publish_with(Some(&fixture.alice), "pdf", "1.0.0", bytes, parts);
    assert_eq!(status, 201, "{body}");

    // A public key file by its path works too.
    let file = fixture.root.path().join("other.pub");
    fs_err::write(&file, other.public().to_file()).unwrap();
    let added = key_command(
        &fixture,
        &["add", "--skill", "pdf", "--key", file.to_str().unwrap()],
    );
    assert_eq!(added.code, 0, "{}", added.stderr);
    let list = key_command(&fixture, &["list", "--skill", "pdf"]);
    assert_eq!(list.code, 0, "{}", list.stderr);
    let lines: Vec<&str> = list.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{}", list.stdout);
    assert!(
        lines[1].starts_with(&format!("{}\t{}\t", other.id(), other.public().to_base64())),
        "{}",
        list.stdout
    );
    let json = key_command(&fixture, &["list", "--skill", "pdf", "--json"]).json();
    assert_eq!(json[0]["id"], pinned.id().to_string());

    let removed = key_command(
        &fixture,
        &["remove", "--skill", "pdf", &pinned.id().to_string()],
    );
    assert_eq!(removed.code, 0, "{}", removed.stderr);
    assert_eq!(key_ids(&fixture, "pdf"), [other.id().to_string()]);
    let last = key_command(
        &fixture,
        &["remove", "--skill", "pdf", &other.id().to_string()],
    );
    assert_eq!(last.code, 1);
    insta::assert_snapshot!(skillpkg_tests::redact(&last.stderr), @"
    error: cannot remove the key from `pdf`
      Caused by: `pdf` must keep at least one key, or its next publish could register any key: add the new key first, then remove the old one
    ");
    let bad = key_command(&fixture, &["add", "--skill", "pdf", "--key", "RWQnope"]);
    assert_eq!(bad.code, 1);
    insta::assert_snapshot!(skillpkg_tests::redact(&bad.stderr), @"
    error: `RWQnope` is not a minisign public key
      Caused by: not a minisign key: the key is not base64
    ");
}

/// Runs `skillpkg-registry build` with `args`.
fn build(args: &[&std::ffi::OsStr]) -> skillpkg_tests::Output {
    skillpkg_tests::run(
        std::process::Command::new(skillpkg_tests::binary("skillpkg-registry"))
            .arg("build")
            .args(args),
    )
}

#[test]
fn build_reproduces_a_signed_tree_byte_for_byte() {
    let fixture = Fixture::new(&["--require-signatures"]);
    let key = SecretKey::generate().unwrap();
    let second = SecretKey::generate().unwrap();
    for (name, version, with_provenance) in [
        ("pdf", "1.0.0", true),
        ("pdf", "1.1.0", false),
        ("csv-tools", "0.1.0", true),
    ] {
        let bytes = tarball(name, version, "x");
        let mut parts = signed(&key, name, version, &bytes);
        if with_provenance {
            parts.provenance = Some(provenance(&key, name, version, &Checksum::of(&bytes)));
        }
        let (status, body) =
            fixture.publish_with(Some(&fixture.alice), name, version, bytes, parts);
        assert_eq!(status, 201, "{body}");
    }
    let add = serde_json::json!({ "add": [second.public().to_base64()] });
    assert_eq!(fixture.change_keys(&fixture.alice, "pdf", &add).0, 200);
    let bytes = tarball("pdf", "2.0.0", "x");
    let parts = signed(&second, "pdf", "2.0.0", &bytes);
    let (status, body) = fixture.publish_with(Some(&fixture.alice), "pdf", "2.0.0", bytes, parts);
    assert_eq!(status, 201, "{body}");

    let out = tempfile::tempdir().unwrap();
    let tree = out.path().join("tree");
    let public = fixture.server.public();
    let api = format!("{}/api/v1", fixture.server.url());
    let output = build(&[
        "--from".as_ref(),
        public.join("dl").as_os_str(),
        "--keys-from".as_ref(),
        public.as_os_str(),
        "--out".as_ref(),
        tree.as_os_str(),
        "--require-signatures".as_ref(),
        "--api".as_ref(),
        api.as_ref(),
    ]);
    assert_eq!(output.code, 0, "{}", output.stderr);
    let built = skillpkg_tests::files_below(&tree);
    super::wait_for_discovery(&fixture, &built);
    let served = fixture.snapshot();
    assert_eq!(
        built.keys().collect::<Vec<_>>(),
        served.keys().collect::<Vec<_>>()
    );
    for (path, bytes) in &served {
        assert_eq!(&built[path], bytes, "{} differs", path.display());
    }
    assert!(built.contains_key(std::path::Path::new("keys/pdf.json")));
    assert!(built.contains_key(std::path::Path::new("dl/pdf/1.0.0/pdf-1.0.0.intoto.jsonl")));
}

#[test]
fn build_checks_signatures_against_the_keys_it_is_given() {
    let fixture = Fixture::new(&[]);
    let key = SecretKey::generate().unwrap();
    let bytes = tarball("pdf", "1.0.0", "x");
    let parts = signed(&key, "pdf", "1.0.0", &bytes);
    let (status, body) = fixture.publish_with(Some(&fixture.alice), "pdf", "1.0.0", bytes, parts);
    assert_eq!(status, 201, "{body}");
    let public = fixture.server.public();

    let attempt = |from: &std::path::Path, extra: &[&str]| {
        let out = tempfile::tempdir().unwrap();
        let tree = out.path().join("tree");
        let mut args: Vec<&std::ffi::OsStr> = vec![
            "--from".as_ref(),
            from.as_os_str(),
            "--out".as_ref(),
            tree.as_os_str(),
        ];
        args.extend(extra.iter().map(std::ffi::OsStr::new));
        let output = build(&args);
        let written = fs_err::read_dir(out.path()).unwrap().count();
        (output, written)
    };
    let keys_from = public.to_str().unwrap();

    // Without keys, a signature cannot be checked.
    let (output, written) = attempt(&public.join("dl"), &[]);
    assert_eq!(output.code, 1);
    insta::assert_snapshot!(skillpkg_tests::redact(&output.stderr), @"error: [TEMP]/public/dl/pdf/1.0.0/pdf-1.0.0.tgz is signed, but no key for `pdf` was given to check it with: pass --keys-from a tree whose keys/pdf.json lists the signer's key");
    assert_eq!(written, 0, "a failed build writes nothing");

    // A signature that does not hold.
    let copy = tempfile::tempdir().unwrap();
    let archive = copy.path().join("pdf-1.0.0.tgz");
    fs_err::copy(public.join("dl/pdf/1.0.0/pdf-1.0.0.tgz"), &archive).unwrap();
    let other = SecretKey::generate().unwrap();
    let bytes = fs_err::read(&archive).unwrap();
    fs_err::write(
        copy.path().join("pdf-1.0.0.tgz.minisig"),
        sign(&other, "pdf", "1.0.0", &bytes),
    )
    .unwrap();
    let (output, written) = attempt(copy.path(), &["--keys-from", keys_from]);
    assert_eq!(output.code, 1);
    // The cause is printed twice (in the error line and as its cause), so
    // this stays a check of the sentence rather than a snapshot.
    assert!(
        output.stderr.contains(&format!(
            "pdf-1.0.0.tgz cannot be published: pdf@1.0.0: the signature was made by key {}, which is not registered for `pdf`",
            other.id()
        )),
        "{}",
        output.stderr
    );
    assert_eq!(written, 0);

    // An unsigned archive, where signatures are required.
    fs_err::remove_file(copy.path().join("pdf-1.0.0.tgz.minisig")).unwrap();
    let (output, written) = attempt(
        copy.path(),
        &["--keys-from", keys_from, "--require-signatures"],
    );
    assert_eq!(output.code, 1);
    assert!(
        output
            .stderr
            .contains("pdf@1.0.0 is not signed, and this registry requires signatures"),
        "{}",
        output.stderr
    );
    assert_eq!(written, 0);
}

#[test]
fn of_concurrent_first_signed_publishes_one_key_wins() {
    let fixture = Fixture::new(&[]);
    let keys: Vec<SecretKey> = (0..8).map(|_| SecretKey::generate().unwrap()).collect();
    let answers: Vec<(u16, serde_json::Value)> = std::thread::scope(|scope| {
        let handles: Vec<_> = keys
            .iter()
            .enumerate()
            .map(|(minor, key)| {
                let fixture = &fixture;
                scope.spawn(move || {
                    let version = format!("1.{minor}.0");
                    let bytes = tarball("pdf", &version, "x");
                    let parts = signed(key, "pdf", &version, &bytes);
                    fixture.publish_with(Some(&fixture.alice), "pdf", &version, bytes, parts)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| handle.join().unwrap())
            .collect()
    });
    let registered = key_ids(&fixture, "pdf");
    assert_eq!(registered.len(), 1, "{answers:?}");
    for (status, body) in &answers {
        match status {
            201 => assert_eq!(body["signer"], registered[0], "{body}"),
            403 => assert!(detail(body).contains("not registered for `pdf`"), "{body}"),
            _ => panic!("{status}: {body}"),
        }
    }
    assert!(answers.iter().any(|(status, _)| *status == 201));
}

#[test]
fn nginx_serves_keys_signatures_and_provenance_like_the_server() {
    let fixture = Fixture::new(&[]);
    let key = SecretKey::generate().unwrap();
    let bytes = tarball("pdf", "1.0.0", "x");
    let mut parts = signed(&key, "pdf", "1.0.0", &bytes);
    parts.provenance = Some(provenance(&key, "pdf", "1.0.0", &Checksum::of(&bytes)));
    let (status, body) = fixture.publish_with(Some(&fixture.alice), "pdf", "1.0.0", bytes, parts);
    assert_eq!(status, 201, "{body}");
    let nginx = skillpkg_tests::Nginx::serve(&fixture.server.public());
    assert_served_alike(
        &fixture,
        &nginx,
        &[
            "keys/pdf.json",
            "dl/pdf/1.0.0/pdf-1.0.0.tgz.minisig",
            "dl/pdf/1.0.0/pdf-1.0.0.intoto.jsonl",
        ],
    );
}
