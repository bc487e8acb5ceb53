//! A mirror served by `skillpkg-registry serve --root MIRROR`, as
//! docs/registries.md says: read-only, in place, and private when what it
//! mirrors is.

use std::path::Path;

use skillpkg_tests::{Output, RegistryServer, TestContext, create_token, run};

/// Publishes an unsigned `name@1.0.0` to `server` with `token`.
fn publish(sandbox: &TestContext, server: &RegistryServer, token: &str, name: &str) {
    let dir = sandbox.skill(
        &format!("skills/{name}"),
        name,
        "version: 1.0.0\n",
        &format!("# {name}\n"),
    );
    let output = run(sandbox
        .skillpkg_command()
        .args(["publish", dir.to_str().unwrap(), "--no-sign", "--registry"])
        .arg(server.url())
        .args(["--token", token]));
    assert_eq!(output.code, 0, "{output:?}");
}

/// Runs `skillpkg mirror SOURCE DEST --all` with `token`.
fn mirror(sandbox: &TestContext, source: &str, dest: &Path, token: Option<&str>) -> Output {
    let mut command = sandbox.skillpkg_command();
    command
        .args(["mirror", source])
        .arg(dest)
        .arg("--all")
        .env("SKILLPKG_CONFIG_DIR", sandbox.path().join("mirror-config"))
        .env("SKILLPKG_STATE_DIR", sandbox.path().join("mirror-state"));
    if let Some(token) = token {
        command.env("SKILLPKG_TOKEN", token);
    }
    run(&mut command)
}

/// The files of the mirror `dest`, less the log the test's servers write
/// there.
fn files_of(dest: &Path) -> std::collections::BTreeMap<std::path::PathBuf, Vec<u8>> {
    let mut files = skillpkg_tests::files_below(dest);
    files.remove(Path::new("server.log"));
    files
}

/// Asserts that the mirror `dest` holds exactly `before`, naming the
/// paths that differ.
fn assert_unchanged(dest: &Path, before: &std::collections::BTreeMap<std::path::PathBuf, Vec<u8>>) {
    let after = files_of(dest);
    let changed: Vec<_> = before
        .keys()
        .chain(after.keys())
        .filter(|path| before.get(*path) != after.get(*path))
        .collect();
    assert!(changed.is_empty(), "serving the mirror changed {changed:?}");
}

/// GETs `path` of `server`, with `token`: the status and the body.
fn get(server: &RegistryServer, path: &str, token: Option<&str>) -> (u16, Vec<u8>) {
    let mut request = reqwest::blocking::Client::new().get(format!("{}/{path}", server.url()));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().unwrap();
    (
        response.status().as_u16(),
        response.bytes().unwrap().to_vec(),
    )
}

#[test]
fn a_mirror_of_a_private_registry_stays_private_and_is_served_read_only_in_place() {
    let sandbox = TestContext::new();
    let data = sandbox.path().join("registry");
    let alice = create_token(&data, "alice");
    let origin = RegistryServer::start(&data, &["--auth-required"]);
    publish(&sandbox, &origin, &alice, "pdf");

    let dest = sandbox.path().join("mirror");
    let mirrored = mirror(&sandbox, origin.url(), &dest, Some(&alice));
    assert_eq!(mirrored.code, 0, "{mirrored:?}");
    let config: serde_json::Value =
        serde_json::from_slice(&fs_err::read(dest.join("config.json")).unwrap()).unwrap();
    assert_eq!(
        config["auth-required"], true,
        "the mirror's config keeps the source's auth-required: {config}"
    );
    insta::assert_snapshot!(sandbox.redact(&mirrored.stderr), @"
    warning: http://127.0.0.1:[PORT]/ is a private registry (auth-required), so [HOME]/mirror holds private skills: serve it only with `skillpkg-registry serve --root [HOME]/mirror --read-only --auth-required` and tokens of its own (`skillpkg-registry token create --root [HOME]/mirror --user NAME`), never with a static host, which cannot check tokens
        Mirrored 1 skills, 1 versions (1 new) from http://127.0.0.1:[PORT]/ into [HOME]/mirror
    ");

    // The mirror's own tokens live where `serve --root` reads them, in a
    // folder never served.
    let ci = create_token(&dest, "ci");
    let before = files_of(&dest);

    // The command the warning gives, and the bare one: both serve the
    // mirror in place, read-only, every read with a token.
    for flags in [&["--read-only", "--auth-required"][..], &[]] {
        let mirror_server = RegistryServer::start(&dest, flags);
        let (status, _) = get(&mirror_server, "config.json", None);
        assert_eq!(status, 401, "{flags:?}: anonymous reads are refused");
        let (status, _) = get(&mirror_server, "index/3/p/pdf", Some(&alice));
        assert_eq!(
            status, 401,
            "{flags:?}: the origin's tokens are not the mirror's"
        );
        let (status, body) = get(&mirror_server, "index/3/p/pdf", Some(&ci));
        assert_eq!(status, 200, "{flags:?}");
        assert_eq!(body, fs_err::read(dest.join("index/3/p/pdf")).unwrap());
        for hidden in [
            ".skillpkg-state/registry.db",
            ".skillpkg-mirror.json",
            "state/registry.db",
        ] {
            let (status, _) = get(&mirror_server, hidden, Some(&ci));
            assert_eq!(status, 404, "{flags:?}: {hidden} is never served");
        }
        let yank = reqwest::blocking::Client::new()
            .delete(format!(
                "{}/api/v1/skills/pdf/1.0.0/yank",
                mirror_server.url()
            ))
            .bearer_auth(&ci)
            .send()
            .unwrap();
        assert_eq!(yank.status(), 403, "{flags:?}: a mirror takes no changes");

        // A client installs through it with the mirror's token.
        let search = run(sandbox
            .skillpkg_command()
            .args(["search", "pdf", "--registry", mirror_server.url()])
            .env("SKILLPKG_CONFIG_DIR", sandbox.path().join("user-config"))
            .env("SKILLPKG_TOKEN", &ci));
        assert_eq!(search.code, 0, "{search:?}");
        // The same every time round.
        insta::allow_duplicates! {
            insta::assert_snapshot!(sandbox.redact(&search.stdout), @"
            pdf  1.0.0  Does pdf things. Use when testing.
            1 skill matching `pdf` in http://127.0.0.1:[PORT]/
            ");
        }
    }
    // Nothing written into it: no public/, no state/.
    assert_unchanged(&dest, &before);
}

#[test]
fn a_public_mirror_is_served_read_only_in_place_and_refuses_auth_required() {
    let sandbox = TestContext::new();
    let data = sandbox.path().join("registry");
    let alice = create_token(&data, "alice");
    let origin = RegistryServer::start(&data, &[]);
    publish(&sandbox, &origin, &alice, "csv");
    let dest = sandbox.path().join("mirror");
    let mirrored = mirror(&sandbox, origin.url(), &dest, None);
    assert_eq!(mirrored.code, 0, "{mirrored:?}");
    assert!(
        !mirrored.stderr.contains("private"),
        "no warning for a public registry: {}",
        mirrored.stderr
    );
    let before = files_of(&dest);

    let mirror_server = RegistryServer::start(&dest, &[]);
    let (status, body) = get(&mirror_server, "index/3/c/csv", None);
    assert_eq!(status, 200);
    assert_eq!(body, fs_err::read(dest.join("index/3/c/csv")).unwrap());
    drop(mirror_server);
    assert_unchanged(&dest, &before);

    // Asked to make a public mirror private, the server says why not:
    // clients read `auth-required` from config.json and would send no token.
    let refused = run(sandbox
        .registry()
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--auth-required",
            "--root",
        ])
        .arg(&dest));
    assert_eq!(refused.code, 1, "{refused:?}");
    insta::assert_snapshot!(sandbox.redact(&refused.stderr), @r#"
    error: cannot open the registry in [HOME]/mirror
      Caused by: --auth-required, but [HOME]/mirror/config.json says `"auth-required": false`: clients would not send their tokens. Serve it without --auth-required, or mirror a private registry
    "#);
    assert_unchanged(&dest, &before);
}
