//! Redirects, as a hostile registry would use them to collect a token: the
//! real client against scripted loopback servers that record every request's
//! headers, so each test asserts which origins saw `Authorization`.
//!
//! Origins are scheme, host and port: `127.0.0.1:A`, `127.0.0.1:B` and
//! `localhost:A` are three. The rule under test (docs/registries.md#tokens):
//! a token goes only to the origin it was configured for, and never again
//! in a redirect chain once a hop has left that origin; API calls (publish,
//! yank, login) follow no redirect at all.

use std::collections::BTreeSet;
use std::path::PathBuf;

use skillpkg_tests::scripted::{
    PublishedTree, Request, ScriptedServer, redirect, respond, serve_file,
};
use skillpkg_tests::{Output, TestContext, run};

/// A sandbox with a published tree, and a project to install into.
struct World {
    sandbox: TestContext,
    tree: PublishedTree,
}

impl World {
    /// A tree whose `config.json` says `auth-required`, so that every read
    /// carries the token.
    fn private() -> Self {
        let sandbox = TestContext::new();
        let tree = PublishedTree::new(&sandbox, &["--auth-required"]);
        fs_err::create_dir_all(sandbox.path().join("project")).unwrap();
        Self { sandbox, tree }
    }

    fn root(&self) -> PathBuf {
        self.tree.root.clone()
    }

    /// Runs skillpkg in the project as a user whose token for the default
    /// registry is alice's.
    fn user(&self, args: &[&str]) -> Output {
        run(self
            .sandbox
            .skillpkg_command()
            .current_dir(self.sandbox.path().join("project"))
            .args(args)
            .env("SKILLPKG_CONFIG_DIR", self.sandbox.path().join("user"))
            .env("SKILLPKG_CACHE_DIR", self.sandbox.path().join("cache"))
            .env("SKILLPKG_STATE_DIR", self.sandbox.path().join("state"))
            .env("SKILLPKG_TEST_NO_RETRY_DELAY", "1")
            .env("SKILLPKG_TOKEN", &self.tree.token))
    }

    /// Every read path of the client against the registry at `registry`:
    /// `config.json`, the signed metadata, the index file, the archive, its
    /// signature and the skill's keys (`add`), `search.json` (`search`), and
    /// the archive again through `verify`. Each must succeed.
    fn read_everything(&self, registry: &str) {
        for args in [
            &["init", "--target", "claude", "--registry", registry][..],
            &["add", "pdf"],
            &["search", "pdf"],
            &["verify", "pdf@1.0.0"],
        ] {
            let output = self.user(args);
            assert_eq!(output.code, 0, "{args:?}: {output:?}");
            assert_no_token(&output, &self.tree.token);
        }
    }
}

fn assert_no_token(output: &Output, token: &str) {
    assert!(
        !output.stdout.contains(token) && !output.stderr.contains(token),
        "the token was printed: {output:?}"
    );
}

/// The paths (without the hop prefixes tests add) a server served.
fn files(requests: &[Request]) -> BTreeSet<String> {
    requests
        .iter()
        .map(|request| {
            request
                .path
                .rsplit("hop/")
                .next()
                .unwrap_or_default()
                .to_owned()
        })
        .collect()
}

/// Asserts that the client read every kind of file through `server`.
fn assert_read_everything(requests: &[Request]) {
    let files = files(requests);
    for expected in [
        "config.json",
        "1.root.json",
        "timestamp.json",
        "snapshot.json",
        "index/3/p/pdf",
        "dl/pdf/1.0.0/pdf-1.0.0.tgz",
        "dl/pdf/1.0.0/pdf-1.0.0.tgz.minisig",
        "search.json",
    ] {
        assert!(files.contains(expected), "{expected} not read: {files:?}");
    }
    assert!(
        files.iter().any(|file| file.starts_with("keys/")),
        "no keys file read: {files:?}"
    );
}

/// Asserts that no request of `requests` carried `Authorization`.
fn assert_never_authorized(requests: &[Request], whose: &str) {
    let authorized: Vec<&Request> = requests
        .iter()
        .filter(|request| request.authorization().is_some())
        .collect();
    assert!(
        authorized.is_empty(),
        "{whose} received the token: {authorized:#?}"
    );
}

/// A server that serves `root`, after sending each request for
/// `hop/<path>` on to `/<path>` of itself (one more redirect, within its
/// own origin).
fn tree_behind_one_more_hop(root: PathBuf) -> ScriptedServer {
    ScriptedServer::start(
        move |request, stream| match request.path.strip_prefix("hop/") {
            Some(path) => redirect(stream, "302 Found", &format!("/{path}")),
            None => serve_file(stream, &root, &request.path),
        },
    )
}

/// The registry the user configured: `config.json` answers 401 without a
/// token (so the client sends it, as it would to a private registry) and
/// every request with one, and every other file, is redirected to
/// `elsewhere/hop/<path>`.
fn registry_redirecting_to(elsewhere: String) -> ScriptedServer {
    ScriptedServer::start(move |request, stream| {
        if request.path == "config.json" && request.authorization().is_none() {
            respond(stream, "401 Unauthorized", &[], b"");
        } else {
            redirect(
                stream,
                "302 Found",
                &format!("{elsewhere}/hop/{}", request.path),
            );
        }
    })
}

#[test]
fn token_never_reaches_another_origin_after_two_redirects() {
    let world = World::private();
    // 127.0.0.1:A -> 127.0.0.1:B/hop/<path> -> 127.0.0.1:B/<path>: the
    // second hop stays within B, which is where a client that checks only
    // the last two URLs puts the token back.
    let elsewhere = tree_behind_one_more_hop(world.root());
    let registry = registry_redirecting_to(elsewhere.url());
    world.read_everything(&registry.url());
    let received = elsewhere.requests();
    assert_read_everything(&received);
    assert_never_authorized(&received, "another port of the same host");
    // The registry itself got the token on every request but the first
    // (anonymous) read of config.json: the rule is not "never send it".
    let bearer = format!("Bearer {}", world.tree.token);
    let with_token: Vec<Request> = registry
        .requests()
        .into_iter()
        .filter(|request| request.path != "config.json" || request.authorization().is_some())
        .collect();
    assert!(with_token.len() >= 8, "{with_token:#?}");
    assert!(
        with_token
            .iter()
            .all(|request| request.authorization() == Some(bearer.as_str())),
        "{with_token:#?}"
    );
}

#[test]
fn token_never_reaches_localhost_when_it_was_given_for_127_0_0_1() {
    let world = World::private();
    // Same host and port, other name: another origin.
    let server = tree_behind_one_more_hop(world.root());
    let port = server.port();
    let registry = registry_redirecting_to(format!("http://localhost:{port}"));
    world.read_everything(&registry.url());
    let received = server.requests();
    assert_read_everything(&received);
    assert!(
        received
            .iter()
            .all(|request| request.host() == format!("localhost:{port}")),
        "{received:#?}"
    );
    assert_never_authorized(&received, "localhost");
}

#[test]
fn token_never_reaches_another_origin_in_a_chain_of_five_that_keeps_coming_back() {
    let world = World::private();
    // A -> B/1 -> A/2 -> B/3 -> A/4 -> B/<path>: five hops, every other one
    // back to the registry's own origin.
    let root = world.root();
    let registry_url = std::sync::Arc::new(std::sync::OnceLock::<String>::new());
    let back = registry_url.clone();
    let elsewhere = ScriptedServer::start(move |request, stream| {
        let base = back.get().expect("the registry started");
        match request.path.split_once('/') {
            Some(("1", path)) => redirect(stream, "302 Found", &format!("{base}/2/{path}")),
            Some(("3", path)) => redirect(
                stream,
                "307 Temporary Redirect",
                &format!("{base}/4/{path}"),
            ),
            _ => serve_file(stream, &root, &request.path),
        }
    });
    let there = elsewhere.url();
    let registry =
        ScriptedServer::start(move |request, stream| match request.path.split_once('/') {
            Some(("2", path)) => redirect(
                stream,
                "301 Moved Permanently",
                &format!("{there}/3/{path}"),
            ),
            Some(("4", path)) => {
                redirect(stream, "308 Permanent Redirect", &format!("{there}/{path}"));
            }
            _ if request.path == "config.json" && request.authorization().is_none() => {
                respond(stream, "401 Unauthorized", &[], b"");
            }
            _ => redirect(stream, "302 Found", &format!("{there}/1/{}", request.path)),
        });
    registry_url.set(registry.url()).unwrap();
    world.read_everything(&registry.url());
    assert_never_authorized(&elsewhere.requests(), "the other origin");
    // Back at the registry's origin, mid-chain, the token stays off: those
    // hops were chosen by a server it was never given to.
    let returns: Vec<Request> = registry
        .requests()
        .into_iter()
        .filter(|request| request.path.starts_with("2/") || request.path.starts_with("4/"))
        .collect();
    assert!(!returns.is_empty());
    assert_never_authorized(&returns, "the registry, on a hop back from another origin");
    let files: BTreeSet<String> = elsewhere
        .requests()
        .iter()
        .filter(|request| !request.path.starts_with("1/") && !request.path.starts_with("3/"))
        .map(|request| request.path.clone())
        .collect();
    assert!(files.contains("dl/pdf/1.0.0/pdf-1.0.0.tgz"), "{files:?}");
}

#[test]
fn token_follows_redirects_within_its_own_origin() {
    let world = World::private();
    // A -> A/1 -> A/2 -> A/<path>, all 127.0.0.1:A.
    let root = world.root();
    let registry =
        ScriptedServer::start(move |request, stream| match request.path.split_once('/') {
            Some(("1", path)) => redirect(stream, "302 Found", &format!("/2/{path}")),
            Some(("2", path)) => serve_file(stream, &root, path),
            _ if request.path == "config.json" && request.authorization().is_none() => {
                respond(stream, "401 Unauthorized", &[], b"");
            }
            _ => redirect(stream, "302 Found", &format!("/1/{}", request.path)),
        });
    world.read_everything(&registry.url());
    let bearer = format!("Bearer {}", world.tree.token);
    let requests = registry.requests();
    let served: Vec<&Request> = requests
        .iter()
        .filter(|request| request.path.starts_with("2/"))
        .collect();
    assert!(served.len() >= 8, "{requests:#?}");
    assert!(
        served
            .iter()
            .all(|request| request.authorization() == Some(bearer.as_str())),
        "a private registry that redirects within itself still gets its token: {served:#?}"
    );
}

/// A registry with an API at `api/v1/` whose every answer is a redirect to
/// `elsewhere`, which redirects once more to itself and then answers as a
/// registry would (so a client that follows gets a plausible success).
fn api_redirecting_to_another_origin(world: &World) -> (ScriptedServer, ScriptedServer) {
    let elsewhere =
        ScriptedServer::start(|request, stream| match request.path.strip_prefix("hop/") {
            Some(path) => redirect(stream, "307 Temporary Redirect", &format!("/{path}")),
            None if request.path.ends_with("me") => {
                respond(stream, "200 OK", &[], br#"{"user":"mallory"}"#);
            }
            None => respond(stream, "500 Internal Server Error", &[], b""),
        });
    let root = world.root();
    let config = world
        .tree
        .config_with(&[("api", "api/v1".into()), ("auth-required", false.into())]);
    let there = elsewhere.url();
    let registry = ScriptedServer::start(move |request, stream| {
        if request.path == "config.json" {
            respond(stream, "200 OK", &[], config.as_bytes());
        } else if request.path.starts_with("api/") {
            redirect(
                stream,
                "307 Temporary Redirect",
                &format!("{there}/hop/{}", request.path),
            );
        } else {
            serve_file(stream, &root, &request.path);
        }
    });
    (registry, elsewhere)
}

#[test]
fn login_publish_and_yank_follow_no_redirect_so_no_token_leaves_the_api() {
    let world = World::private();
    let (registry, elsewhere) = api_redirecting_to_another_origin(&world);
    let url = registry.url();
    let token = world.tree.token.clone();
    let skill = world
        .sandbox
        .skill("skills/pdf", "pdf", "version: 1.0.1\n", "# pdf\n");
    let mut said = Vec::new();
    for args in [
        &["login", "--registry", &url, "--token", &token][..],
        &["yank", "pdf@1.0.0", "--registry", &url, "--token", &token],
        &[
            "yank",
            "pdf@1.0.0",
            "--undo",
            "--registry",
            &url,
            "--token",
            &token,
        ],
        &[
            "publish",
            skill.to_str().unwrap(),
            "--no-sign",
            "--registry",
            &url,
            "--token",
            &token,
        ],
    ] {
        let output = world.user(args);
        assert_eq!(output.code, 3, "{args:?}: {output:?}");
        let stderr = output.stderr.replace(&elsewhere.url(), "[ELSEWHERE]");
        said.push(world.sandbox.redact(&stderr));
        assert_no_token(&output, &token);
    }
    insta::assert_snapshot!(said.join("---\n"), @"
    error: http://127.0.0.1:[PORT]/api/v1/me answered the login with a redirect to [ELSEWHERE]/hop/api/v1/me, which skillpkg does not follow for API calls: neither the request nor its token went there
    hint: if the API moved, the registry's config.json must name its new URL in `api`
    ---
    error: http://127.0.0.1:[PORT]/api/v1/skills/pdf/1.0.0/yank answered the yank with a redirect to [ELSEWHERE]/hop/api/v1/skills/pdf/1.0.0/yank, which skillpkg does not follow for API calls: neither the request nor its token went there
    hint: if the API moved, the registry's config.json must name its new URL in `api`
    ---
    error: http://127.0.0.1:[PORT]/api/v1/skills/pdf/1.0.0/unyank answered the unyank with a redirect to [ELSEWHERE]/hop/api/v1/skills/pdf/1.0.0/unyank, which skillpkg does not follow for API calls: neither the request nor its token went there
    hint: if the API moved, the registry's config.json must name its new URL in `api`
    ---
    note: 1 recommendation (non-portable-key 1); -v or `skillpkg validate [HOME]/skills/pdf` lists them
    error: http://127.0.0.1:[PORT]/api/v1/skills answered the publish with a redirect to [ELSEWHERE]/hop/api/v1/skills, which skillpkg does not follow for API calls: neither the request nor its token went there
    hint: if the API moved, the registry's config.json must name its new URL in `api`
    ");
    assert_never_authorized(&elsewhere.requests(), "the origin the API redirected to");
    assert!(
        elsewhere.requests().is_empty(),
        "an API call was sent on to where it was redirected: {:#?}",
        elsewhere.requests()
    );
    assert!(
        !world
            .sandbox
            .path()
            .join("user/skillpkg/credentials.toml")
            .exists(),
        "a login that did not complete stored the token"
    );
}

/// A registry serving `root` whose `search.json` answers with `answer`.
fn search_json_answers(
    root: PathBuf,
    answer: impl Fn(&Request, &mut std::net::TcpStream) + Send + Sync + 'static,
) -> ScriptedServer {
    ScriptedServer::start(move |request, stream| {
        if request.path.starts_with("search.json") {
            answer(request, stream);
        } else {
            serve_file(stream, &root, &request.path);
        }
    })
}

fn search(world: &World, registry: &str) -> Output {
    world.user(&["search", "pdf", "--registry", registry])
}

#[test]
fn a_redirect_loop_stops_at_once_with_a_clear_error() {
    let world = World::private();
    let registry = search_json_answers(world.root(), |_, stream| {
        redirect(stream, "302 Found", "/search.json");
    });
    let output = search(&world, &registry.url());
    assert_eq!(output.code, 3, "{output:?}");
    insta::assert_snapshot!(world.sandbox.redact(&output.stderr), @"
    error: http://127.0.0.1:[PORT]/search.json redirected in a loop, back to http://127.0.0.1:[PORT]/search.json
    hint: the registry (or something between it and you) is broken or hostile; nothing it sent was used
    ");
    let tries = registry
        .requests()
        .iter()
        .filter(|request| request.path == "search.json")
        .count();
    assert_eq!(tries, 1, "a loop is not worth a retry");
}

#[test]
fn a_redirect_chain_of_more_than_ten_hops_stops_with_a_clear_error() {
    let world = World::private();
    let registry = search_json_answers(world.root(), |request, stream| {
        let hops: u32 = request
            .path
            .split_once("?hop=")
            .and_then(|(_, hops)| hops.parse().ok())
            .unwrap_or(0);
        redirect(
            stream,
            "302 Found",
            &format!("/search.json?hop={}", hops + 1),
        );
    });
    let output = search(&world, &registry.url());
    assert_eq!(output.code, 3, "{output:?}");
    insta::assert_snapshot!(world.sandbox.redact(&output.stderr), @"
    error: http://127.0.0.1:[PORT]/search.json redirected more than 10 times; the redirects were stopped
    hint: the registry (or something between it and you) is broken or hostile; nothing it sent was used
    ");
    let requests = registry
        .requests()
        .iter()
        .filter(|request| request.path.starts_with("search.json"))
        .count();
    assert_eq!(requests, 11, "the first request and ten redirects, once");
}

#[test]
fn a_redirect_to_a_file_url_or_another_scheme_is_refused() {
    let world = World::private();
    let secret = world.sandbox.write("secret.json", r#"{"v":1,"skills":[]}"#);
    let mut said = Vec::new();
    for location in [
        url::Url::from_file_path(&secret).unwrap().to_string(),
        "ftp://127.0.0.1/search.json".to_owned(),
        "data:application/json,{}".to_owned(),
    ] {
        let registry = search_json_answers(world.root(), move |_, stream| {
            redirect(stream, "302 Found", &location);
        });
        let output = search(&world, &registry.url());
        assert_eq!(output.code, 3, "{output:?}");
        said.push(world.sandbox.redact(&output.stderr));
    }
    insta::assert_snapshot!(said.join("---\n"), @"
    error: http://127.0.0.1:[PORT]/search.json redirected to file://[HOME]/secret.json, which was refused: skillpkg follows redirects to http:// and https:// only
    hint: the registry (or something between it and you) is broken or hostile; nothing it sent was used
    ---
    error: http://127.0.0.1:[PORT]/search.json redirected to ftp://127.0.0.1/search.json, which was refused: skillpkg follows redirects to http:// and https:// only
    hint: the registry (or something between it and you) is broken or hostile; nothing it sent was used
    ---
    error: http://127.0.0.1:[PORT]/search.json redirected to data:application/json,{}, which was refused: skillpkg follows redirects to http:// and https:// only
    hint: the registry (or something between it and you) is broken or hostile; nothing it sent was used
    ");
}

#[test]
fn the_token_is_never_printed_even_when_a_redirect_echoes_it() {
    let world = World::private();
    let token = world.tree.token.clone();
    // A hostile registry that has the token puts it in the Location, as
    // user information and in the query, where an error message (and a CI
    // log) would show it.
    let mut said = Vec::new();
    for location in [
        format!("ftp://alice:{token}@127.0.0.1/search.json?token={token}"),
        format!("/search.json?token={token}"),
        format!("https://{token}@127.0.0.1:1/search.json"),
    ] {
        let registry = search_json_answers(world.root(), move |request, stream| {
            if request.path == "search.json" {
                redirect(stream, "302 Found", &location);
            } else {
                redirect(stream, "302 Found", &format!("/{}", request.path));
            }
        });
        let output = search(&world, &registry.url());
        assert_ne!(output.code, 0, "{output:?}");
        said.push(world.sandbox.redact(&output.stderr));
        assert_no_token(&output, &token);
    }
    insta::assert_snapshot!(said.join("---\n"), @"
    error: http://127.0.0.1:[PORT]/search.json redirected to ftp://****@127.0.0.1/search.json?token=****, which was refused: skillpkg follows redirects to http:// and https:// only
    hint: the registry (or something between it and you) is broken or hostile; nothing it sent was used
    ---
    error: http://127.0.0.1:[PORT]/search.json redirected in a loop, back to http://127.0.0.1:[PORT]/search.json?token=****
    hint: the registry (or something between it and you) is broken or hostile; nothing it sent was used
    ---
    error: cannot reach https://****@127.0.0.1:1/search.json (where http://127.0.0.1:[PORT]/search.json redirected)
      Caused by: error sending request
      Caused by: client error (Connect)
      Caused by: tcp connect error
      Caused by: Connection refused (os error 111)
    hint: check the registry URL and your network, and that the registry is running
    ");
    // The registry URL itself with the token as its password.
    let registry = search_json_answers(world.root(), |_, stream| {
        redirect(stream, "302 Found", "/search.json");
    });
    let with_password = registry
        .url()
        .replace("http://", &format!("http://alice:{token}@"));
    let output = search(&world, &with_password);
    assert_eq!(output.code, 3, "{output:?}");
    insta::assert_snapshot!(world.sandbox.redact(&output.stderr), @"
    error: http://****@127.0.0.1:[PORT]/search.json redirected in a loop, back to http://****@127.0.0.1:[PORT]/search.json
    hint: the registry (or something between it and you) is broken or hostile; nothing it sent was used
    ");
    assert_no_token(&output, &token);
}

#[test]
fn a_registry_cannot_point_the_client_at_local_files() {
    let world = World::private();
    let secret = world.sandbox.write("secret.tgz", b"not for the registry");
    // An http registry whose `dl` names a file of the user's disk, or a
    // file URL of another host.
    let mut said = Vec::new();
    for dl in [
        url::Url::from_file_path(&secret).unwrap().to_string(),
        "file://elsewhere.example/dl/{name}-{version}.tgz".to_owned(),
    ] {
        let root = world.root();
        let config = world.tree.config_with(&[("dl", dl.clone().into())]);
        let registry = ScriptedServer::start(move |request, stream| {
            if request.path == "config.json" {
                respond(stream, "200 OK", &[], config.as_bytes());
            } else {
                serve_file(stream, &root, &request.path);
            }
        });
        fs_err::remove_dir_all(world.sandbox.path().join("project")).unwrap();
        fs_err::create_dir_all(world.sandbox.path().join("project")).unwrap();
        let init = world.user(&["init", "--target", "claude", "--registry", &registry.url()]);
        assert_eq!(init.code, 0, "{init:?}");
        let output = world.user(&["add", "pdf"]);
        assert_eq!(output.code, 3, "{output:?}");
        said.push(world.sandbox.redact(&output.stderr));
        let verify = world.user(&["verify", "pdf@1.0.0", "--registry", &registry.url()]);
        assert_eq!(verify.code, 3, "{verify:?}");
        said.push(world.sandbox.redact(&verify.stderr));
    }
    insta::assert_snapshot!(said.join("---\n"), @"
          Adding pdf
    error: cannot download pdf@1.0.0
      Caused by: registry http://127.0.0.1:[PORT]/ points at file://[HOME]/secret.tgz, which was refused: an http:// or https:// registry may only name http:// or https:// URLs
    hint: the registry (or something between it and you) is broken or hostile; nothing it sent was used
    ---
    error: cannot download pdf@1.0.0
      Caused by: registry http://127.0.0.1:[PORT]/ points at file://[HOME]/secret.tgz, which was refused: an http:// or https:// registry may only name http:// or https:// URLs
    hint: the registry (or something between it and you) is broken or hostile; nothing it sent was used
    ---
          Adding pdf
    error: cannot download pdf@1.0.0
      Caused by: registry http://127.0.0.1:[PORT]/ points at file://elsewhere.example/dl/pdf-1.0.0.tgz, which was refused: an http:// or https:// registry may only name http:// or https:// URLs
    hint: the registry (or something between it and you) is broken or hostile; nothing it sent was used
    ---
    error: cannot download pdf@1.0.0
      Caused by: registry http://127.0.0.1:[PORT]/ points at file://elsewhere.example/dl/pdf-1.0.0.tgz, which was refused: an http:// or https:// registry may only name http:// or https:// URLs
    hint: the registry (or something between it and you) is broken or hostile; nothing it sent was used
    ");
}

#[test]
fn a_401_from_another_origin_blames_the_redirect_not_the_token() {
    let world = World::private();
    // The private registry sends its files to another origin, which wants a
    // token and never gets one.
    let elsewhere = ScriptedServer::start(|_, stream| {
        respond(stream, "401 Unauthorized", &[], b"");
    });
    let root = world.root();
    let there = elsewhere.url();
    let registry = ScriptedServer::start(move |request, stream| {
        if request.path == "config.json" {
            serve_file(stream, &root, &request.path);
        } else {
            redirect(stream, "302 Found", &format!("{there}/{}", request.path));
        }
    });
    let output = search(&world, &registry.url());
    assert_eq!(output.code, 1, "{output:?}");
    let stderr = output.stderr.replace(&elsewhere.url(), "[ELSEWHERE]");
    insta::assert_snapshot!(world.sandbox.redact(&stderr), @"
    error: http://127.0.0.1:[PORT]/search.json redirected to [ELSEWHERE]/search.json, another origin, which answered HTTP 401: a token is never sent to another origin than its registry's
    hint: if the registry moved to [ELSEWHERE]/search.json, use that URL as the registry and give its token for it
    ");
    assert!(
        !output.stderr.contains("refused the token"),
        "the token was never sent, so it was not refused: {}",
        output.stderr
    );
    assert_never_authorized(&elsewhere.requests(), "the other origin");
}
