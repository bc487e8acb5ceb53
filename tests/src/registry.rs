//! The real registry server for end-to-end tests: [`RegistryServer`], the
//! `skillpkg-registry serve` process on a free loopback port, and
//! [`TestRegistry`], a "registry world" built on it: a data folder, alice's
//! token, a publisher with a signing key, and helpers that publish signed
//! skills through the real `skillpkg publish`.
//!
//! Both stop their process when dropped (killed, then waited for, so no
//! server outlives its test and no zombie is left).

use std::io::BufRead as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::{Output, TestContext, binary, run};

/// A `skillpkg-registry serve` process on a free loopback port, stopped
/// (SIGKILL, then waited for) when dropped.
#[derive(Debug)]
pub struct RegistryServer {
    child: std::process::Child,
    root: PathBuf,
    url: String,
    address: String,
}

impl RegistryServer {
    /// Starts a server on the data folder `root` with extra arguments, and
    /// returns once it listens.
    pub fn start(root: &Path, extra: &[&str]) -> Self {
        Self::start_with_env(root, extra, &[])
    }

    /// [`RegistryServer::start`], with more environment variables (a
    /// bucket's `AWS_*`).
    pub fn start_with_env(root: &Path, extra: &[&str], env: &[(String, String)]) -> Self {
        fs_err::create_dir_all(root).expect("create the data folder");
        let log = fs_err::OpenOptions::new()
            .create(true)
            .append(true)
            .open(root.join("server.log"))
            .expect("open server.log");
        let mut child = Command::new(binary("skillpkg-registry"))
            .arg("serve")
            .arg("--root")
            .arg(root)
            .args(["--listen", "127.0.0.1:0"])
            .args(extra)
            .envs(env.iter().map(|(key, value)| (key, value)))
            .stdout(Stdio::piped())
            .stderr(log.into_parts().0)
            .spawn()
            .expect("start skillpkg-registry");
        let stdout = child.stdout.take().expect("piped stdout");
        let mut line = String::new();
        // The server prints this line once it listens: reading it is the wait.
        std::io::BufReader::new(stdout)
            .read_line(&mut line)
            .expect("read the listening line");
        let Some(url) = line.trim().strip_prefix("listening on ") else {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "unexpected first line from the server: {line:?}; its log:\n{}",
                fs_err::read_to_string(root.join("server.log")).unwrap_or_default()
            );
        };
        // The address it listens on, which the URL is not when it was
        // given a `--public-url`: its log says, before the line above.
        let log = fs_err::read_to_string(root.join("server.log")).unwrap_or_default();
        let address = log
            .lines()
            .rev()
            .find_map(|line| {
                let rest = line.split("listening address=").nth(1)?;
                rest.split_whitespace().next().map(str::to_owned)
            })
            .unwrap_or_else(|| url.trim_start_matches("http://").to_owned());
        Self {
            url: url.to_owned(),
            address,
            child,
            root: root.to_owned(),
        }
    }

    /// Returns the base URL, `http://127.0.0.1:PORT`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Returns the address it listens on, `127.0.0.1:PORT` (also when its
    /// URL is a `--public-url`).
    pub fn address(&self) -> &str {
        &self.address
    }

    /// Returns the server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Returns what the server (and earlier ones on the same folder) wrote
    /// to stderr.
    pub fn log(&self) -> String {
        fs_err::read_to_string(self.root.join("server.log")).unwrap_or_default()
    }

    /// Returns the served tree's folder.
    pub fn public(&self) -> PathBuf {
        self.root.join("public")
    }

    /// Kills the server at once, as a crash would.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for RegistryServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Publishes the minimal skill `name@version` ([`tarball`]) to `server`
/// through the API with `token`, unsigned: the status and the body; status
/// 0 and the error when no answer came (the server died).
pub fn publish_raw(
    server: &RegistryServer,
    token: &str,
    name: &str,
    version: &str,
) -> (u16, String) {
    use reqwest::blocking::{Client, multipart};
    let form = multipart::Form::new()
        .text("name", name.to_owned())
        .text("version", version.to_owned())
        .part(
            "tarball",
            multipart::Part::bytes(tarball(name, version)).file_name("x.tgz"),
        );
    let response = Client::new()
        .put(format!("{}/api/v1/skills", server.url()))
        .bearer_auth(token)
        .multipart(form)
        .send();
    match response {
        Ok(response) => (
            response.status().as_u16(),
            response.text().unwrap_or_default(),
        ),
        Err(error) => (0, error.to_string()),
    }
}

/// Creates a token for `user` in the registry data folder `root`.
pub fn create_token(root: &Path, user: &str) -> String {
    let output = run(Command::new(binary("skillpkg-registry"))
        .args(["token", "create", "--user", user, "--root"])
        .arg(root));
    assert_eq!(output.code, 0, "token create failed: {output:?}");
    output.stdout.trim().to_owned()
}

/// A skill to publish: `SKILL.md` with a name, a version, a description,
/// dependencies and a body, and more files.
#[derive(Clone, Debug)]
pub struct Skill {
    name: String,
    version: String,
    description: String,
    depends_on: Vec<String>,
    body: String,
    files: Vec<(String, String, bool)>,
}

impl Skill {
    /// `name@version`, described as `"{name} {version}."`, body
    /// `"# {name} {version}"`, no dependencies.
    pub fn new(name: &str, version: &str) -> Self {
        Self {
            name: name.to_owned(),
            version: version.to_owned(),
            description: format!("{name} {version}."),
            depends_on: Vec::new(),
            body: format!("# {name} {version}\n"),
            files: Vec::new(),
        }
    }

    /// Sets the description.
    pub fn description(mut self, description: &str) -> Self {
        description.clone_into(&mut self.description);
        self
    }

    /// Sets the skills it depends on (`depends_on`).
    pub fn depends_on(mut self, deps: &[&str]) -> Self {
        self.depends_on = deps.iter().map(|&dep| dep.to_owned()).collect();
        self
    }

    /// Sets the Markdown body.
    pub fn body(mut self, body: &str) -> Self {
        body.clone_into(&mut self.body);
        self
    }

    /// Adds a file (`relative` to the skill folder), executable or not.
    pub fn file(mut self, relative: &str, contents: &str, executable: bool) -> Self {
        self.files
            .push((relative.to_owned(), contents.to_owned(), executable));
        self
    }

    /// Writes the skill folder `dir` (a folder named after the skill).
    pub fn write(&self, dir: &Path) {
        let Self { name, version, .. } = self;
        let mut frontmatter = format!(
            "name: {name}\ndescription: {}\nversion: {version}\n",
            self.description
        );
        if !self.depends_on.is_empty() {
            let deps: Vec<String> = self
                .depends_on
                .iter()
                .map(|dep| format!("\"{dep}\""))
                .collect();
            frontmatter.push_str(&format!("depends_on: [{}]\n", deps.join(", ")));
        }
        write_file(
            &dir.join("SKILL.md"),
            &format!("---\n{frontmatter}---\n{}", self.body),
        );
        for (relative, contents, executable) in &self.files {
            let path = dir.join(relative);
            write_file(&path, contents);
            crate::set_executable(&path, *executable);
        }
    }
}

fn write_file(path: &Path, contents: &str) {
    fs_err::create_dir_all(path.parent().expect("a file has a parent")).expect("create folders");
    fs_err::write(path, contents).expect("write file");
}

/// How to start a [`TestRegistry`].
#[derive(Debug)]
pub struct TestRegistryBuilder<'a> {
    ctx: &'a TestContext,
    data: String,
    flags: Vec<String>,
    env: Vec<(String, String)>,
    signed_metadata: bool,
}

impl TestRegistryBuilder<'_> {
    /// The data folder, relative to the home (default `registry`).
    pub fn data(mut self, relative: &str) -> Self {
        relative.clone_into(&mut self.data);
        self
    }

    /// Extra flags of `skillpkg-registry serve`.
    pub fn flags(mut self, flags: &[&str]) -> Self {
        self.flags = flags.iter().map(|&flag| flag.to_owned()).collect();
        self
    }

    /// Environment variables of the server and of the admin commands run
    /// on its data folder (a bucket's `AWS_*`, `SKILLPKG_REGISTRY_STORAGE`).
    pub fn env(mut self, env: &[(String, String)]) -> Self {
        self.env.extend_from_slice(env);
        self
    }

    /// Signs the registry's metadata: a root key (generated into
    /// `offline/root.key` in the home) and `keys init` before serving.
    pub fn signed_metadata(mut self) -> Self {
        self.signed_metadata = true;
        self
    }

    /// Starts the server, creates alice's token and gives the publisher a
    /// signing key (unless it has one: publishers are shared between the
    /// registries of one home).
    pub fn start(self) -> TestRegistry {
        let ctx = self.ctx;
        let data = ctx.path().join(&self.data);
        if self.signed_metadata {
            let root_key = ctx.path().join("offline/root.key");
            if !root_key.exists() {
                let generated = run(ctx.registry().args(["keys", "generate"]).arg(&root_key));
                assert_eq!(generated.code, 0, "{generated:?}");
            }
            let init = run(ctx
                .registry()
                .args(["keys", "init", "--root"])
                .arg(&data)
                .arg("--root-key")
                .arg(&root_key)
                .envs(self.env.iter().map(|(key, value)| (key, value))));
            assert_eq!(init.code, 0, "{init:?}");
        }
        let token = create_token(&data, "alice");
        let flags: Vec<&str> = self.flags.iter().map(String::as_str).collect();
        let server = RegistryServer::start_with_env(&data, &flags, &self.env);
        let registry = TestRegistry {
            home: ctx.path().to_owned(),
            publisher: ctx.path().join("publisher"),
            skills: ctx.path().join("skills").join(&self.data),
            server,
            data,
            token,
        };
        if !registry.publisher.join("skillpkg/signing.key").exists() {
            let key = registry.publisher(&["key", "generate", "--no-password"]);
            assert_eq!(key.code, 0, "{key:?}");
        }
        registry
    }
}

/// A real registry server with a publisher: alice, who holds a token and a
/// signing key (config folder `<home>/publisher`), publishes signed skills
/// to it. Stopped when dropped.
#[derive(Debug)]
pub struct TestRegistry {
    home: PathBuf,
    server: RegistryServer,
    data: PathBuf,
    token: String,
    publisher: PathBuf,
    skills: PathBuf,
}

impl TestRegistry {
    /// Starts a registry in `ctx`'s home with the defaults: data folder
    /// `registry`, no extra flags, unsigned metadata.
    pub fn start(ctx: &TestContext) -> Self {
        Self::builder(ctx).start()
    }

    /// Returns a builder for a registry in `ctx`'s home.
    pub fn builder(ctx: &TestContext) -> TestRegistryBuilder<'_> {
        TestRegistryBuilder {
            ctx,
            data: "registry".to_owned(),
            flags: Vec::new(),
            env: Vec::new(),
            signed_metadata: false,
        }
    }

    /// Returns the base URL, `http://127.0.0.1:PORT`.
    pub fn url(&self) -> &str {
        self.server.url()
    }

    /// Returns the server process.
    pub fn server(&self) -> &RegistryServer {
        &self.server
    }

    /// Returns the server process, to kill it.
    pub fn server_mut(&mut self) -> &mut RegistryServer {
        &mut self.server
    }

    /// Puts `server` (started again on the same data folder) in place of
    /// the registry's server, stopping the old one.
    pub fn replace_server(&mut self, server: RegistryServer) {
        self.server = server;
    }

    /// Returns the data folder.
    pub fn data(&self) -> &Path {
        &self.data
    }

    /// Returns the served tree's folder.
    pub fn public(&self) -> PathBuf {
        self.server.public()
    }

    /// Returns alice's token.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// Returns the publisher's config folder (`SKILLPKG_CONFIG_DIR`).
    pub fn publisher_config(&self) -> &Path {
        &self.publisher
    }

    /// Runs `skillpkg ARGS` as the publisher.
    pub fn publisher(&self, args: &[&str]) -> Output {
        run(crate::context::command_in(&self.home, &binary("skillpkg"))
            .args(args)
            .env("SKILLPKG_CONFIG_DIR", &self.publisher))
    }

    /// Publishes the folder `dir` with alice's token, signed with the
    /// publisher's key, and returns what `publish` did.
    pub fn publish_dir(&self, dir: &Path) -> Output {
        let dir = dir.to_str().expect("a UTF-8 path");
        self.publisher(&[
            "publish",
            dir,
            "--registry",
            self.url(),
            "--token",
            &self.token,
        ])
    }

    /// Writes `skill` to `<home>/skills/<data>/<name>-<version>/<name>` and
    /// publishes it; returns what `publish` did.
    pub fn try_publish(&self, skill: &Skill) -> Output {
        let dir = self
            .skills
            .join(format!("{}-{}", skill.name, skill.version))
            .join(&skill.name);
        skill.write(&dir);
        self.publish_dir(&dir)
    }

    /// [`Self::try_publish`], which must succeed.
    pub fn publish(&self, skill: &Skill) {
        let output = self.try_publish(skill);
        assert_eq!(output.code, 0, "publishing {}: {output:?}", skill.name);
    }
}

/// Packs a minimal skill `name` at `version` (a SKILL.md whose description
/// is `Does NAME things.`) into an archive, as `skillpkg pack` would.
pub fn tarball(name: &str, version: &str) -> Vec<u8> {
    tarball_described(name, version, &format!("Does {name} things."))
}

/// [`tarball`], with `description`.
pub fn tarball_described(name: &str, version: &str, description: &str) -> Vec<u8> {
    let temp = tempfile::tempdir().expect("a temporary folder");
    let dir = temp.path().join(name);
    fs_err::create_dir_all(&dir).expect("create the skill folder");
    let description = serde_json::to_string(description).expect("a string serialises");
    fs_err::write(
        dir.join("SKILL.md"),
        format!("---\nname: {name}\ndescription: {description}\n---\n# {name}\n"),
    )
    .expect("write SKILL.md");
    skillpkg_index::archive::pack_dir(
        &dir,
        name.parse().expect("a valid name"),
        version.parse().expect("a valid version"),
        &skillpkg_index::archive::Limits::default(),
    )
    .expect("the skill packs")
    .tarball
}
