//! The real client against the real server, and the same tree through
//! nginx and `file://`: what a user of a registry sees.

use skillpkg_tests::{
    Nginx, Output, RegistryServer, Skill, TestContext, TestRegistry, create_token, run,
};

/// A registry server whose publisher, alice, is also the user of the
/// client in these tests (one config folder, one signing key).
struct World {
    registry: TestRegistry,
    sandbox: TestContext,
}

impl World {
    fn new() -> Self {
        let sandbox = TestContext::new();
        let registry = TestRegistry::start(&sandbox);
        Self { registry, sandbox }
    }

    fn skillpkg(&self, args: &[&str]) -> Output {
        self.registry.publisher(args)
    }

    fn publish(&self, name: &str, version: &str, description: &str) -> Output {
        let skill = Skill::new(name, version)
            .description(description)
            .body(&format!("# {name}\n"));
        self.registry.try_publish(&skill)
    }
}

#[test]
fn login_then_publish_then_read_back_through_the_api_and_the_tree() {
    let world = World::new();
    let url = world.registry.url();
    let login = world.skillpkg(&[
        "login",
        "--registry",
        url,
        "--token",
        world.registry.token(),
    ]);
    assert_eq!(login.code, 0, "{login:?}");
    insta::assert_snapshot!(world.sandbox.redact(&login.stderr), @"   Logged in to http://127.0.0.1:[PORT]/ as alice");
    let credentials = world
        .registry
        .publisher_config()
        .join("skillpkg/credentials.toml");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        fs_err::metadata(&credentials).unwrap().permissions().mode() & 0o777,
        0o600
    );

    world.sandbox.write("pdf-processing/SKILL.md", "---\nname: pdf-processing\ndescription: Reads PDFs.\nmetadata:\n  version: \"1.2.0\"\n---\n# PDF\n");
    let published = world.skillpkg(&["publish", "pdf-processing", "--registry", url, "--json"]);
    assert_eq!(
        published.code, 0,
        "the token comes from the credentials file: {published:?}"
    );
    let line = published.json();
    assert_eq!(line["vers"], "1.2.0");

    let packed = world.skillpkg(&["pack", "pdf-processing", "--json", "-o", "again.tgz"]);
    assert_eq!(
        line["cksum"],
        packed.json()["sha256"],
        "the registry stores the bytes pack makes"
    );
    let stored =
        fs_err::read_to_string(world.registry.public().join("index/pd/f-/pdf-processing")).unwrap();
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(stored.trim()).unwrap(),
        line
    );

    let info = world.skillpkg(&["info", "pdf-processing", "--registry", url, "--json"]);
    assert_eq!(info.code, 0, "{info:?}");
    assert_eq!(info.json()["record"]["cksum"], line["cksum"]);
}

#[test]
fn the_server_words_reach_the_user_unchanged() {
    let world = World::new();
    assert_eq!(world.publish("pdf", "1.0.0", "Reads PDFs.").code, 0);
    let again = world.publish("pdf", "1.0.0", "Reads PDFs.");
    assert_eq!(again.code, 1, "{again:?}");
    insta::assert_snapshot!(world.sandbox.redact(&again.stderr), @"
    note: 1 recommendation (non-portable-key 1); -v or `skillpkg validate [HOME]/skills/registry/pdf-1.0.0/pdf` lists them
    error: the registry refused the publish: pdf@1.0.0 is already published; versions are immutable, publish a new version
    hint: published versions are immutable, even when yanked: raise `version` in SKILL.md and publish again
    ");

    let bob = create_token(world.registry.data(), "bob");
    world.sandbox.write(
        "skills/bob/pdf/SKILL.md",
        "---\nname: pdf\ndescription: Mine now.\nversion: 2.0.0\n---\nbody\n",
    );
    let path = world.sandbox.path().join("skills/bob/pdf");
    let foreign = world.skillpkg(&[
        "publish",
        path.to_str().unwrap(),
        "--registry",
        world.registry.url(),
        "--token",
        &bob,
    ]);
    assert_eq!(foreign.code, 1, "{foreign:?}");
    insta::assert_snapshot!(world.sandbox.redact(&foreign.stderr), @"
    note: 1 recommendation (non-portable-key 1); -v or `skillpkg validate [HOME]/skills/bob/pdf` lists them
    error: the registry refused the publish: `bob` does not own `pdf`; ask an owner (alice) to add you
    hint: only the skill's owners may do this; ask an owner to add you
    ");
    let bogus = world.skillpkg(&[
        "publish",
        path.to_str().unwrap(),
        "--registry",
        world.registry.url(),
        "--token",
        "skp_bogus",
    ]);
    assert_eq!(bogus.code, 1, "{bogus:?}");
    insta::assert_snapshot!(world.sandbox.redact(&bogus.stderr), @"
    note: 1 recommendation (non-portable-key 1); -v or `skillpkg validate [HOME]/skills/bob/pdf` lists them
    error: the registry refused the publish: the token is not valid: it is unknown or was revoked
    hint: the token is missing, unknown or revoked: run `skillpkg login --registry http://127.0.0.1:[PORT]/` with a valid one, or check --token and SKILLPKG_TOKEN
    ");
    assert!(
        !bogus.stderr.contains("skp_bogus"),
        "the token is never printed"
    );
}

#[test]
fn yank_and_undo_with_the_client() {
    let world = World::new();
    let url = world.registry.url();
    assert_eq!(world.publish("pdf", "1.0.0", "Reads PDFs.").code, 0);
    assert_eq!(world.publish("pdf", "1.1.0", "Reads PDFs better.").code, 0);
    let yank = world.skillpkg(&[
        "yank",
        "pdf@1.1.0",
        "--reason",
        "corrupts output",
        "--registry",
        url,
        "--token",
        world.registry.token(),
    ]);
    assert_eq!(yank.code, 0, "{yank:?}");
    let info = world.skillpkg(&["info", "pdf", "--registry", url, "--json"]);
    assert_eq!(
        info.json()["record"]["vers"],
        "1.0.0",
        "the latest version that is not yanked"
    );
    let human = world.skillpkg(&["info", "pdf", "--registry", url]);
    insta::assert_snapshot!(world.sandbox.redact_ids(&human.stdout), @"
    pdf 1.0.0
    Reads PDFs.

    size:       145 B (145 bytes)
    checksum:   sha256:[SHA256]
    tree:       h2:+Ab35/dxgUANwl4X11APXBHkn9EqbpIfRb89M1F91CA=
    files:      1
    depends on: none
    signer:     [KEYID]
    published:  [TIME]
    provenance: none

    versions:
      1.1.0  (yanked: corrupts output)
      1.0.0
    ");
    let undo = world.skillpkg(&[
        "yank",
        "pdf@1.1.0",
        "--undo",
        "--registry",
        url,
        "--token",
        world.registry.token(),
    ]);
    assert_eq!(undo.code, 0, "{undo:?}");
    assert_eq!(
        world
            .skillpkg(&["info", "pdf", "--registry", url, "--json"])
            .json()["record"]["vers"],
        "1.1.0"
    );
}

#[test]
fn search_and_info_answer_the_same_from_the_server_nginx_and_file() {
    let world = World::new();
    for (name, version, description) in [
        ("pdf", "1.0.0", "Read PDF files."),
        (
            "pdf-processing",
            "1.0.0",
            "Extract text and tables from PDF files.",
        ),
        (
            "pdf-processing",
            "1.1.0",
            "Extract text and tables from PDF files, fast.",
        ),
        (
            "commit-messages",
            "0.3.0",
            "Write commit messages, also for PDF changelogs.",
        ),
    ] {
        let output = world.publish(name, version, description);
        assert_eq!(output.code, 0, "{output:?}");
    }
    let yank = world.skillpkg(&[
        "yank",
        "pdf-processing@1.1.0",
        "--reason",
        "slow",
        "--registry",
        world.registry.url(),
        "--token",
        world.registry.token(),
    ]);
    assert_eq!(yank.code, 0, "{yank:?}");

    let nginx = Nginx::serve(&world.registry.public());
    let file = format!("file://{}/", world.registry.public().display());
    let registries = [
        format!("{}/", world.registry.url()),
        format!("{}/", nginx.url()),
        file,
    ];
    let answers: Vec<Vec<String>> = registries
        .iter()
        .map(|registry| {
            [
                vec!["search", "pdf"],
                vec!["search", "pdf", "--json"],
                vec!["info", "pdf-processing"],
                vec!["info", "pdf-processing@1.1.0", "--json"],
                vec!["info", "nothing-here"],
            ]
            .iter()
            .map(|args| {
                let mut args = args.clone();
                args.extend(["--registry", registry.as_str()]);
                let output = world.skillpkg(&args);
                format!("{}\n{}\n{}", output.code, output.stdout, output.stderr)
                    .replace(registry.as_str(), "<REGISTRY>")
            })
            .collect()
        })
        .collect();
    assert!(
        answers[0][0].contains("pdf-processing"),
        "{}",
        answers[0][0]
    );
    assert!(
        answers[0][4].starts_with('1'),
        "an unknown skill is an error: {}",
        answers[0][4]
    );
    assert_eq!(answers[0], answers[1], "server and nginx");
    assert_eq!(answers[0], answers[2], "server and file://");
}

fn git(dir: &std::path::Path, args: &[&str]) {
    let status = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "user.name=Test",
            "-c",
            "user.email=test@example.com",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

#[test]
fn provenance_names_the_commit_and_a_dirty_tree_is_refused() {
    let world = World::new();
    let url = world.registry.url();
    let repo = world.sandbox.path().join("repo");
    world.sandbox.write(
        "repo/pdf/SKILL.md",
        "---\nname: pdf\ndescription: Reads PDFs.\nversion: 1.0.0\n---\nbody\n",
    );
    git(&repo, &["init", "-q"]);
    git(
        &repo,
        &[
            "remote",
            "add",
            "origin",
            "https://example.com/acme/skills.git",
        ],
    );
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "pdf"]);
    let skill = repo.join("pdf");
    let skill = skill.to_str().unwrap();

    world.sandbox.write("repo/pdf/notes.md", "not committed");
    let dirty = world.skillpkg(&[
        "publish",
        skill,
        "--provenance",
        "--registry",
        url,
        "--token",
        world.registry.token(),
    ]);
    assert_eq!(dirty.code, 1, "{dirty:?}");
    insta::assert_snapshot!(world.sandbox.redact(&dirty.stderr), @"
    note: 1 recommendation (non-portable-key 1); -v or `skillpkg validate [HOME]/repo/pdf` lists them
    error: [HOME]/repo/pdf has changes that are not committed
    hint: commit them so the provenance names what was published, or pass --allow-dirty (the provenance then says the tree was dirty)
    ");
    fs_err::remove_file(repo.join("pdf/notes.md")).unwrap();

    let published = world.skillpkg(&[
        "publish",
        skill,
        "--provenance",
        "--registry",
        url,
        "--token",
        world.registry.token(),
    ]);
    assert_eq!(published.code, 0, "{published:?}");
    let head = std::process::Command::new("git")
        .arg("-C")
        .arg(&repo)
        .args(["rev-parse", "HEAD"])
        .output()
        .unwrap();
    let head = String::from_utf8(head.stdout).unwrap().trim().to_owned();

    let verified = world.skillpkg(&["verify", "pdf@1.0.0", "--registry", url, "--json"]);
    assert_eq!(verified.code, 0, "{verified:?}");
    let provenance = &verified.json()["provenance"]["source"];
    assert_eq!(
        provenance["repository"],
        "git+https://example.com/acme/skills.git"
    );
    assert_eq!(provenance["commit"], head);
    assert_eq!(provenance["dirty"], false);
    let info = world.skillpkg(&["info", "pdf", "--registry", url]);
    let said = world
        .sandbox
        .redact_ids(&info.stdout)
        .replace(&head, "[HEAD]");
    insta::assert_snapshot!(said, @"
    pdf 1.0.0
    Reads PDFs.

    size:       146 B (146 bytes)
    checksum:   sha256:[SHA256]
    tree:       h2:BX5zJf8WVS9eqtWSU3h5/AgaU0rVIOR+NzkwN8MLgAw=
    files:      1
    depends on: none
    signer:     [KEYID]
    published:  [TIME]
    source:     git+https://example.com/acme/skills.git @ [HEAD]
    built by:   skillpkg/0.1.0 (local)

    versions:
      1.0.0
    ");
    let stored = world
        .registry
        .public()
        .join("dl/pdf/1.0.0/pdf-1.0.0.intoto.jsonl");
    assert!(stored.is_file());
}

#[test]
fn a_private_registry_refuses_anonymous_reads_and_works_with_a_token() {
    let sandbox = TestContext::new();
    let data = sandbox.path().join("registry");
    let token = create_token(&data, "alice");
    let server = RegistryServer::start(&data, &["--auth-required"]);
    let client = |args: &[&str], token: Option<&str>| {
        let mut command = sandbox.skillpkg_command();
        command
            .args(args)
            .env("SKILLPKG_CONFIG_DIR", sandbox.path().join("config"));
        if let Some(token) = token {
            command.env("SKILLPKG_TOKEN", token);
        }
        run(&mut command)
    };
    let anonymous = client(&["search", "pdf", "--registry", server.url()], None);
    assert_eq!(anonymous.code, 1, "{anonymous:?}");
    insta::assert_snapshot!(sandbox.redact(&anonymous.stderr), @"
    error: http://127.0.0.1:[PORT]/ needs a token, and none is configured
      Caused by: http://127.0.0.1:[PORT]/config.json answered HTTP 401
    hint: run `skillpkg login --registry http://127.0.0.1:[PORT]/`, or set SKILLPKG_TOKEN
    ");
    let with_token = client(&["search", "pdf", "--registry", server.url()], Some(&token));
    assert_eq!(with_token.code, 0, "{with_token:?}");
    assert!(
        !with_token.stdout.contains(&token) && !with_token.stderr.contains(&token),
        "the token is never printed"
    );
    let raw = reqwest::blocking::get(format!("{}/index/3/p/pdf", server.url())).unwrap();
    assert_eq!(raw.status(), 401, "every file of the tree needs the token");
}

#[test]
fn a_token_never_follows_a_redirect_to_another_origin() {
    let sandbox = TestContext::new();
    let tree = sandbox.path().join("tree");
    sandbox.write("tree/config.json", r#"{"v":1,"dl":"dl/{name}/{version}/{name}-{version}.tgz","api":null,"auth-required":true,"max-skill-bytes":8388608}"#);
    sandbox.write("tree/search.json", r#"{"v":1,"skills":[]}"#);
    let elsewhere = skillpkg_tests::FaultyServer::serve(&tree);
    let origin = skillpkg_tests::FaultyServer::serve(&tree);
    origin.faults().redirect_to = Some(elsewhere.url().to_owned());
    let output = run(sandbox
        .skillpkg_command()
        .args(["search", "pdf", "--registry", origin.url()])
        .env("SKILLPKG_CONFIG_DIR", sandbox.path().join("config"))
        .env("SKILLPKG_TOKEN", "skp_secret-token"));
    assert_eq!(output.code, 0, "{output:?}");
    // config.json is read before the client knows the registry is private;
    // from then on every request to the origin carries the token (search.json,
    // then 1.root.json, the look for signed metadata).
    let sent_to_origin = origin.faults().authorization.clone();
    assert_eq!(sent_to_origin.len(), 3, "{sent_to_origin:?}");
    assert_eq!(sent_to_origin[0], None, "{sent_to_origin:?}");
    assert!(
        sent_to_origin[1..]
            .iter()
            .all(|sent| sent.as_deref() == Some("Bearer skp_secret-token")),
        "{sent_to_origin:?}"
    );
    let sent_elsewhere = elsewhere.faults();
    assert_eq!(
        sent_elsewhere.served,
        ["search.json", "1.root.json"],
        "the redirects were followed"
    );
    assert_eq!(
        sent_elsewhere.authorization,
        [None, None],
        "no token crossed to another origin"
    );
}

#[test]
fn a_token_typed_on_a_terminal_is_never_echoed() {
    let world = World::new();
    let config = world.sandbox.path().join("typed-config");
    let token = world.registry.token().to_owned();
    let (success, transcript) = skillpkg_tests::on_terminal(
        &skillpkg_tests::binary("skillpkg"),
        &["login", "--registry", world.registry.url()],
        world.sandbox.path(),
        &[
            ("SKILLPKG_CONFIG_DIR", &config),
            ("HOME", world.sandbox.path()),
        ],
        "Paste your token",
        &token,
    );
    assert!(success, "{transcript}");
    assert!(transcript.contains("Logged in to"), "{transcript}");
    assert!(
        !transcript.contains(&token),
        "the token was echoed: {transcript}"
    );
    let credentials = fs_err::read_to_string(config.join("skillpkg/credentials.toml")).unwrap();
    assert!(credentials.contains(&token), "{credentials}");
}
