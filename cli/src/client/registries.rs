//! Named registries: which registries a command may read, where each one is
//! read from, which token it gets, and the one function that opens one.
//!
//! ```text
//! [registries.corp]                          in <config dir>/skillpkg/config.toml or skills.toml
//! index = "https://skills.corp.example/"     required: the registry itself (writes always go here)
//! mirror = "https://mirror.corp.example/"    optional: reads go here instead
//! fallback-to-origin = true                  optional: read `index` when the mirror cannot be reached
//! root-key = "RWQ..."                        optional: the registry's minisign public key
//! require-signatures = true                  optional: refuse unsigned skills from it
//! allowed-signers = ["ed25519:d75a98..."]    optional: choose only versions signed by these keys
//! token-command = "pass show skills/corp"    config.toml only: prints the token
//! ```
//!
//! A name is lowercase `[a-z0-9-]+`. URLs are `https://`, `http://`,
//! `file://` or a plain path, which in a file is relative to that file's
//! folder. A skills.toml entry replaces the user config's entry of the same
//! name; the user's `token-command` stays with it only when both name the
//! same `index`, so a cloned project cannot point a name at another server
//! and collect the token the user's command makes for it.
//!
//! The default registry is the first of `--registry`, `$SKILLPKG_REGISTRY`,
//! `[registry] url` in skills.toml and `registry` in config.toml, each a URL
//! or a configured name; without any, `[registries.default]`. A URL equal to
//! a configured registry's `index` or `mirror` is that registry; any other
//! URL is an unnamed registry called `default`. skills.lock records a skill's
//! registry by name (`registry:NAME`), never by URL.
//!
//! The token of registry NAME, read at URL, is the first of: `--token`
//! (the command's main registry, which is the default one),
//! `$SKILLPKG_REGISTRY_<NAME>_TOKEN`, `$SKILLPKG_TOKEN` (the default registry
//! only), the output of `token-command`, and the credentials file's entry
//! for URL (the index URL, or the mirror's when reading from the mirror). A
//! token is only ever sent to a registry that asks for one (see
//! [`Registry::open`]), and a `token-command` runs only then, at most once a
//! command.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::Context as _;
use skillpkg_index::signing::{PublicKey, SignerKey, SignerKeyError};

use crate::client::registry::TrustConfig;
use crate::client::registry::{Registry, RegistryError};
use crate::client::registry_url::{RegistryUrl, RegistryUrlError};
use crate::client::settings::{self, Environment};
use crate::client::token::{Token, TokenError};
use crate::env_vars;
use crate::error::UserError;

/// The name of the default registry when it has no other: an unnamed URL,
/// or `[registries.default]`.
pub const DEFAULT: &str = "default";

/// The keys of a `[registries.NAME]` table.
const KEYS: [&str; 7] = [
    "index",
    "mirror",
    "fallback-to-origin",
    "root-key",
    "require-signatures",
    "token-command",
    "allowed-signers",
];

/// The file a `[registries.NAME]` table is read from, which decides what
/// it may hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfigFile {
    /// The user config file: every key.
    User,
    /// A project's skills.toml: every key but `token-command`, since a
    /// project someone else wrote must not run commands on this machine.
    Manifest,
}

/// Where a registry's definition comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Definition {
    /// A `[registries.NAME]` table in this file.
    Table(PathBuf),
    /// A URL given as the default registry (`--registry URL` and the like)
    /// that is no configured registry's.
    Url,
}

/// A registry, as configured.
#[derive(Clone, Debug)]
pub struct RegistrySpec {
    /// Its logical name, which skills.lock records.
    pub name: String,
    /// The registry itself: where writes go, and reads without a mirror.
    pub index: RegistryUrl,
    /// Where reads go instead, if anywhere.
    pub mirror: Option<RegistryUrl>,
    /// With a mirror: read `index` when the mirror cannot be reached (a
    /// network error, or 5xx for its config.json). Otherwise the mirror's
    /// failure is the command's.
    pub fallback_to_origin: bool,
    /// The registry's minisign public key.
    pub root_key: Option<PublicKey>,
    /// Every skill from this registry must be signed: `allow-unsigned` is
    /// refused for it.
    pub require_signatures: bool,
    /// `allowed-signers`: resolution chooses only versions from this
    /// registry signed by one of these keys (docs/manifest.md, `[policy]`);
    /// `None` when any signer is allowed.
    pub allowed_signers: Option<Vec<SignerKey>>,
    /// A command (run with `sh -c`) whose trimmed standard output is the
    /// token. Only from the user config file.
    pub token_command: Option<String>,
    /// Where it is defined.
    pub definition: Definition,
}

impl RegistrySpec {
    /// An unnamed registry: the default one, given by URL.
    fn unnamed(index: RegistryUrl) -> Self {
        Self {
            name: DEFAULT.to_owned(),
            index,
            mirror: None,
            fallback_to_origin: false,
            root_key: None,
            require_signatures: false,
            allowed_signers: None,
            token_command: None,
            definition: Definition::Url,
        }
    }

    /// Returns true if and only if it is a `[registries.NAME]` table.
    pub fn is_named(&self) -> bool {
        matches!(self.definition, Definition::Table(_))
    }

    /// Returns what `--registry` takes to name it: its name, or the URL of
    /// an unnamed registry.
    pub fn argument(&self) -> String {
        if self.is_named() {
            self.name.clone()
        } else {
            self.index.to_string()
        }
    }

    /// Names it, read at `url`, for messages: "registry `corp` (URL)", or
    /// the URL of an unnamed registry.
    pub fn describe_at(&self, url: &RegistryUrl) -> String {
        if self.is_named() {
            format!("registry `{}` ({url})", self.name)
        } else {
            url.to_string()
        }
    }
}

/// What a command does with a registry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Reads its tree: from the mirror, if it has one.
    Read,
    /// Reads only archives a lockfile pins, with their signatures and
    /// keys (`install --locked`): as [`Access::Read`], except that a local
    /// tree without signed metadata (a `skillpkg vendor` folder) is
    /// accepted even where `root-key` is pinned or metadata was seen
    /// before. The metadata vouches for the index; a locked install reads
    /// no index file, and every byte it installs is pinned by the lock.
    Locked,
    /// Calls its API (publish, yank, login): always at `index`, since a
    /// mirror has no API of its own.
    Write,
}

/// Returns true if and only if `text` is a registry name: lowercase ASCII
/// letters, digits and `-`, at least one.
pub fn is_valid_name(text: &str) -> bool {
    !text.is_empty()
        && text
            .bytes()
            .all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'-')
}

/// Parses a registry URL; a relative plain path is taken relative to `base`
/// (a file's folder) when there is one, else to the working folder.
fn parse_url(text: &str, base: Option<&Path>) -> Result<RegistryUrl, RegistryUrlError> {
    let text = text.trim();
    let is_relative_path = matches!(
        url::Url::parse(text),
        Err(url::ParseError::RelativeUrlWithoutBase)
    ) && Path::new(text).is_relative();
    match base {
        Some(base) if is_relative_path && !text.is_empty() => {
            base.join(text).to_string_lossy().parse()
        }
        _ => text.parse(),
    }
}

/// Reads the `registries` table of `file`: one [`RegistrySpec`] per
/// `[registries.NAME]`, refusing unknown keys and, in a manifest,
/// `token-command`.
pub fn parse_tables(
    value: &toml::Value,
    file: &Path,
    kind: ConfigFile,
) -> anyhow::Result<BTreeMap<String, RegistrySpec>> {
    let toml::Value::Table(tables) = value else {
        return Err(
            UserError::new(format!("`registries` in {} is not a table", file.display()))
                .with_hint(
                    "write one `[registries.NAME]` table per registry, with its `index = \"URL\"`",
                )
                .into(),
        );
    };
    let base = file.parent().unwrap_or(Path::new("."));
    let mut specs = BTreeMap::new();
    for (name, table) in tables {
        let invalid = |problem: String| -> anyhow::Error {
            UserError::new(format!(
                "`[registries.{name}]` in {} {problem}",
                file.display()
            ))
            .with_hint(format!(
                "its keys are {}; see docs/manifest.md",
                KEYS.map(|key| format!("`{key}`")).join(", ")
            ))
            .into()
        };
        if !is_valid_name(name) {
            return Err(invalid(
                "has a name that is not a registry name: use lowercase letters, digits and `-`"
                    .into(),
            ));
        }
        let toml::Value::Table(table) = table else {
            return Err(invalid("is not a table".into()));
        };
        if let Some(key) = table.keys().find(|key| !KEYS.contains(&key.as_str())) {
            return Err(invalid(format!("has an unknown key `{key}`")));
        }
        let string = |key: &str| match table.get(key) {
            None => Ok(None),
            Some(toml::Value::String(text)) => Ok(Some(text.as_str())),
            Some(_) => Err(invalid(format!("has a `{key}` that is not a string"))),
        };
        let boolean = |key: &str| match table.get(key) {
            None => Ok(false),
            Some(toml::Value::Boolean(value)) => Ok(*value),
            Some(_) => Err(invalid(format!("has a `{key}` that is not true or false"))),
        };
        let url = |key: &str| -> anyhow::Result<Option<RegistryUrl>> {
            string(key)?
                .map(|text| {
                    parse_url(text, Some(base)).map_err(|error| {
                        UserError::new(format!(
                            "the `{key}` of `[registries.{name}]` in {} is not a registry URL",
                            file.display()
                        ))
                        .with_hint("give the https://, http:// or file:// URL (or the path) of the folder that holds the registry's config.json")
                        .with_source(error)
                        .into()
                    })
                })
                .transpose()
        };
        let index = url("index")?.ok_or_else(|| invalid("has no `index`".into()))?;
        let root_key = string("root-key")?
            .map(|text| {
                text.parse::<PublicKey>().map_err(|error| {
                    UserError::new(format!(
                        "the `root-key` of `[registries.{name}]` in {} is not a minisign public key",
                        file.display()
                    ))
                    .with_hint("give the key's base64 line, which starts with `RW`")
                    .with_source(error)
                })
            })
            .transpose()?;
        let allowed_signers = match table.get("allowed-signers") {
            None => None,
            Some(toml::Value::Array(items)) if !items.is_empty() => Some(
                items
                    .iter()
                    .map(|item| {
                        let Some(text) = item.as_str() else {
                            return Err(invalid(format!(
                                "has `allowed-signers` entry {item}, which is not a string"
                            )));
                        };
                        text.parse::<SignerKey>().map_err(|error| {
                            let key_id = matches!(error, SignerKeyError::KeyId(_));
                            UserError::new(format!(
                                "`[registries.{name}]` in {} has an `allowed-signers` entry that is not a signer's key: {error}",
                                file.display()
                            ))
                            .with_hint(if key_id {
                                "a key id is 8 bytes its maker chooses, so another key can carry it; run `skillpkg key show` with the publisher's key (or ask them for it) and list the `ed25519:...` it prints"
                            } else {
                                "list each key as `skillpkg key show` prints it (`ed25519:` and 64 hex digits), or as its minisign `RW...` line"
                            })
                            .into()
                        })
                    })
                    .collect::<anyhow::Result<Vec<_>>>()?,
            ),
            Some(_) => {
                return Err(invalid(
                    "has an `allowed-signers` that is not a list of signer keys: write `allowed-signers = [\"ed25519:...\"]` with the keys `skillpkg key show` prints, or leave the key out to allow any signer".into(),
                ));
            }
        };
        let token_command = string("token-command")?.map(str::to_owned);
        if token_command.is_some() && kind == ConfigFile::Manifest {
            return Err(UserError::new(format!(
                "`[registries.{name}]` in {} has a `token-command`, which skills.toml may not have",
                file.display()
            ))
            .with_hint(format!(
                "a project's manifest must not run commands on your machine: move `token-command` to `[registries.{name}]` in your user config.toml (with the same `index`), or set {}",
                env_vars::registry_token(name)
            ))
            .into());
        }
        if token_command
            .as_deref()
            .is_some_and(|command| command.trim().is_empty())
        {
            return Err(invalid("has an empty `token-command`".into()));
        }
        specs.insert(
            name.clone(),
            RegistrySpec {
                name: name.clone(),
                index,
                mirror: url("mirror")?,
                fallback_to_origin: boolean("fallback-to-origin")?,
                root_key,
                require_signatures: boolean("require-signatures")?,
                allowed_signers,
                token_command,
                definition: Definition::Table(file.to_owned()),
            },
        );
    }
    Ok(specs)
}

/// A setting that chooses the default registry.
struct Selection<'text> {
    /// Its value: a URL, a path or a name.
    text: &'text str,
    /// The folder a relative path is relative to (the file's), or `None`
    /// for the working folder.
    base: Option<PathBuf>,
    /// Where it was set, for messages (`SKILLPKG_REGISTRY`).
    described: String,
}

/// Where a token was found.
enum Lookup {
    /// A token, and where it came from (for messages; never the token).
    Found(Token, String),
    /// The registry's `token-command` is next: run it only if needed.
    Command(String),
    /// Nowhere.
    NotFound,
}

/// Every registry a command may use: the user's and the project's
/// `[registries.NAME]` tables, and the default registry.
#[derive(Debug)]
pub struct Registries {
    specs: BTreeMap<String, RegistrySpec>,
    default_name: String,
    environment: Environment,
    /// `--token`, for the main (default) registry.
    token_flag: Option<Token>,
    /// Whether the command has a `--token` flag (for hints).
    accepts_token_flag: bool,
    /// The tokens `token-command`s printed, by registry name, so that each
    /// runs at most once.
    command_tokens: Mutex<BTreeMap<String, Token>>,
}

/// What a project's skills.toml says about registries, as the project
/// layer read it (this layer never reads skills.toml itself).
#[derive(Clone, Debug, Default)]
pub struct ProjectRegistries {
    /// skills.toml's path; relative registry paths are relative to its
    /// folder.
    pub file: PathBuf,
    /// `[registry] url`: a URL, a path or a registry name, unparsed.
    pub default: Option<String>,
    /// `[registries.NAME]` tables.
    pub specs: BTreeMap<String, RegistrySpec>,
}

impl Registries {
    /// Reads the user config's registries and the project's (if there is a
    /// project), and chooses the default registry from `flag` (the value of
    /// `--registry`), the environment, the manifest and the user config.
    pub fn load(
        environment: Environment,
        project: Option<&ProjectRegistries>,
        flag: Option<&str>,
    ) -> anyhow::Result<Self> {
        let user = settings::user_config(&environment)?;
        let mut specs = match (&user.registries, &user.path) {
            (Some(tables), Some(path)) => parse_tables(tables, path, ConfigFile::User)?,
            _ => BTreeMap::new(),
        };
        if let Some(project) = project {
            for (name, spec) in &project.specs {
                let mut spec = spec.clone();
                if let Some(user_spec) = specs.get(name).filter(|user| user.index == spec.index) {
                    spec.token_command.clone_from(&user_spec.token_command);
                }
                specs.insert(name.clone(), spec);
            }
        }
        let variable = environment.registry.clone();
        let selection = if let Some(text) = flag {
            Some(Selection {
                text,
                base: None,
                described: "--registry".into(),
            })
        } else if let Some(text) = &variable {
            Some(Selection {
                text,
                base: None,
                described: env_vars::SKILLPKG_REGISTRY.into(),
            })
        } else if let Some((project, text)) =
            project.and_then(|project| Some((project, project.default.as_deref()?)))
        {
            Some(Selection {
                text,
                base: project.file.parent().map(Path::to_owned),
                described: format!("`[registry] url` in {}", project.file.display()),
            })
        } else if let (Some(text), Some(path)) = (&user.registry, &user.path) {
            Some(Selection {
                text,
                base: path.parent().map(Path::to_owned),
                described: format!("`registry` in {}", path.display()),
            })
        } else {
            None
        };
        let mut registries = Self {
            specs,
            default_name: DEFAULT.to_owned(),
            environment,
            token_flag: None,
            accepts_token_flag: false,
            command_tokens: Mutex::default(),
        };
        if let Some(selection) = selection {
            let spec = registries.select(&selection)?;
            registries.default_name.clone_from(&spec.name);
            registries.specs.insert(spec.name.clone(), spec);
        }
        Ok(registries)
    }

    /// Adds the command's `--token` (for its main registry, the default
    /// one); its hints then mention `--token`.
    #[must_use]
    pub fn with_token_flag(mut self, token: Option<Token>) -> Self {
        self.token_flag = token;
        self.accepts_token_flag = true;
        self
    }

    /// Returns the name of the default registry (`default` when none is
    /// configured).
    /// Returns every configured registry, by name.
    pub fn specs(&self) -> impl Iterator<Item = &RegistrySpec> {
        self.specs.values()
    }

    pub fn default_name(&self) -> &str {
        &self.default_name
    }

    /// Returns the default registry, or an error that lists the ways to
    /// configure one.
    pub fn default_registry(&self) -> anyhow::Result<&RegistrySpec> {
        self.get(&self.default_name)
    }

    /// Returns the registry named `name`, if it is configured.
    pub fn find(&self, name: &str) -> Option<&RegistrySpec> {
        self.specs.get(name)
    }

    /// Returns the registry named `name`, or an error that lists the
    /// configured ones and says how to add it.
    pub fn get(&self, name: &str) -> anyhow::Result<&RegistrySpec> {
        if let Some(spec) = self.specs.get(name) {
            return Ok(spec);
        }
        if name == self.default_name {
            return Err(UserError::new("no registry is configured")
                .with_hint(format!(
                    "pass `--registry URL`, set {}=URL, or add `registry = \"URL\"` to {} or `[registry] url = \"URL\"` to skills.toml; the name of a `[registries.NAME]` table works in place of each URL, and `[registries.default]` is the default",
                    env_vars::SKILLPKG_REGISTRY,
                    self.environment.describe_config_file()
                ))
                .into());
        }
        Err(self.unknown_name(name, None))
    }

    /// Returns the registry `text` names, as `--registry` would take it: a
    /// configured name, a URL of a configured registry (its `index` or
    /// `mirror`), or another URL (an unnamed registry).
    pub fn choose(&self, text: &str) -> anyhow::Result<RegistrySpec> {
        self.select(&Selection {
            text,
            base: None,
            described: "--registry".into(),
        })
    }

    fn select(&self, selection: &Selection<'_>) -> anyhow::Result<RegistrySpec> {
        let text = selection.text.trim();
        if let Some(spec) = self.specs.get(text) {
            return Ok(spec.clone());
        }
        // A bare word is a name, unless a folder of that name is there: a
        // vendored tree (`--registry vendor`) keeps working.
        let path = match &selection.base {
            Some(base) => base.join(text),
            None => PathBuf::from(text),
        };
        if is_valid_name(text) && !path.exists() {
            return Err(self.unknown_name(text, Some(&selection.described)));
        }
        let url = parse_url(text, selection.base.as_deref()).map_err(|error| {
            UserError::new(format!("{} is not a registry URL", selection.described))
                .with_hint("set it to the https://, http:// or file:// URL of the folder that holds the registry's config.json, or to the name of a registry configured under `[registries.NAME]`")
                .with_source(error)
        })?;
        let configured = self
            .specs
            .values()
            .filter(|spec| spec.is_named())
            .find(|spec| spec.index == url || spec.mirror.as_ref() == Some(&url));
        Ok(configured
            .cloned()
            .unwrap_or_else(|| RegistrySpec::unnamed(url)))
    }

    fn unknown_name(&self, name: &str, named_by: Option<&str>) -> anyhow::Error {
        let configured: Vec<String> = self
            .specs
            .values()
            .filter(|spec| spec.is_named())
            .map(|spec| format!("`{}`", spec.name))
            .collect();
        let known = if configured.is_empty() {
            "no registry is configured under `[registries.NAME]`".to_owned()
        } else {
            format!("the configured registries are {}", configured.join(", "))
        };
        let message = match named_by {
            Some(setting) => {
                format!("{setting} names the registry `{name}`, which is not configured")
            }
            None => format!("no registry named `{name}` is configured"),
        };
        UserError::new(message)
            .with_hint(format!(
                "{known}; define it with a `[registries.{name}]` table and its `index = \"URL\"` in skills.toml or {}",
                self.environment.describe_config_file()
            ))
            .into()
    }

    /// Returns the token for `spec` read at `url` (its index, or its
    /// mirror), running its `token-command` if that is where it is; `None`
    /// when there is none.
    pub fn token(&self, spec: &RegistrySpec, url: &RegistryUrl) -> anyhow::Result<Option<Token>> {
        Ok(self.token_with_origin(spec, url)?.map(|(token, _)| token))
    }

    /// Returns the token for writing to `spec` (at its index), or an error
    /// that names the registry and says how to provide one.
    pub fn require_token(&self, spec: &RegistrySpec) -> anyhow::Result<Token> {
        self.token(spec, &spec.index)?.ok_or_else(|| {
            UserError::new(format!("no token for {}", spec.describe_at(&spec.index)))
                .with_hint(self.token_hint(spec))
                .into()
        })
    }

    fn token_with_origin(
        &self,
        spec: &RegistrySpec,
        url: &RegistryUrl,
    ) -> anyhow::Result<Option<(Token, String)>> {
        Ok(match self.lookup(spec, url)? {
            Lookup::Found(token, origin) => Some((token, origin)),
            Lookup::Command(command) => Some((
                self.command_token(spec, &command)?,
                format!("the `token-command` of `[registries.{}]`", spec.name),
            )),
            Lookup::NotFound => None,
        })
    }

    /// Finds the token of `spec` at `url` without running anything.
    fn lookup(&self, spec: &RegistrySpec, url: &RegistryUrl) -> anyhow::Result<Lookup> {
        let main = spec.name == self.default_name;
        if let Some(token) = self.token_flag.as_ref().filter(|_| main) {
            return Ok(Lookup::Found(token.clone(), "--token".into()));
        }
        let variable = env_vars::registry_token(&spec.name);
        if let Some(text) = self.environment.registry_tokens.get(&variable) {
            return Ok(Lookup::Found(
                parse_variable(text.expose(), &variable)?,
                format!("${variable}"),
            ));
        }
        if let Some(text) = self.environment.token.as_ref().filter(|_| main) {
            let variable = env_vars::SKILLPKG_TOKEN;
            return Ok(Lookup::Found(
                parse_variable(text.expose(), variable)?,
                format!("${variable}"),
            ));
        }
        if let Some(command) = &spec.token_command {
            return Ok(Lookup::Command(command.clone()));
        }
        let Some(credentials) = self.environment.credentials() else {
            return Ok(Lookup::NotFound);
        };
        Ok(match credentials.token(url)? {
            Some(token) => Lookup::Found(
                token,
                format!("the credentials file {}", credentials.path().display()),
            ),
            None => Lookup::NotFound,
        })
    }

    /// Returns what `spec`'s `token-command` prints, running it at most
    /// once a command.
    fn command_token(&self, spec: &RegistrySpec, command: &str) -> anyhow::Result<Token> {
        let mut tokens = self
            .command_tokens
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(token) = tokens.get(&spec.name) {
            return Ok(token.clone());
        }
        let token = run_token_command(&spec.name, command, &self.environment)?;
        tokens.insert(spec.name.clone(), token.clone());
        Ok(token)
    }

    /// Says every way to give `spec` a token.
    fn token_hint(&self, spec: &RegistrySpec) -> String {
        let main = spec.name == self.default_name;
        let mut ways = vec![format!(
            "run `skillpkg login --registry {}`",
            spec.argument()
        )];
        if self.accepts_token_flag && main {
            ways.push("pass `--token TOKEN`".into());
        }
        if spec.is_named() {
            ways.push(format!("set {}", env_vars::registry_token(&spec.name)));
        }
        if main {
            ways.push(format!("set {}", env_vars::SKILLPKG_TOKEN));
        }
        if spec.is_named() {
            ways.push(format!(
                "add a `token-command` to `[registries.{}]` in {}",
                spec.name,
                self.environment.describe_config_file()
            ));
        }
        let last = ways.pop().expect("there is always a way");
        if ways.is_empty() {
            last
        } else {
            format!("{}, or {last}", ways.join(", "))
        }
    }

    /// Opens `spec`: reads its `config.json`, from the mirror when there is
    /// one and `access` is [`Access::Read`] (falling back to the index when
    /// the mirror cannot be reached and `fallback-to-origin` says so), else
    /// from the index. Every command that reads or writes a registry opens
    /// it here.
    pub async fn open(&self, spec: &RegistrySpec, access: Access) -> anyhow::Result<Registry> {
        // A named registry and its mirror share one record of what was seen
        // of its signed metadata, so a mirror older than the origin is a
        // rollback; an unnamed one is known by its URL.
        let trust = TrustConfig {
            id: spec.is_named().then(|| spec.name.clone()),
            root_key: spec.root_key.clone(),
            pinned_by_lock: access == Access::Locked,
        };
        let registry = self.open_either(spec, access).await?.with_trust(trust);
        // Index files are revalidated from the user's cache when it has a
        // folder; without one they are simply read each time.
        Ok(match crate::client::cache::user_cache_dir() {
            Some(root) => registry.with_index_cache(&root),
            None => registry,
        })
    }

    /// Opens the mirror or the index of `spec`, as [`Self::open`] says.
    async fn open_either(&self, spec: &RegistrySpec, access: Access) -> anyhow::Result<Registry> {
        let mirror = spec.mirror.as_ref().filter(|_| access != Access::Write);
        let Some(mirror) = mirror else {
            let opened = self.open_at(spec, &spec.index).await;
            return if spec.is_named() {
                opened.with_context(|| format!("cannot read registry `{}`", spec.name))
            } else {
                // An unnamed registry's errors already name its URL.
                opened
            };
        };
        match self.open_at(spec, mirror).await {
            Ok(registry) => Ok(registry),
            Err(error) if spec.fallback_to_origin && is_unreachable(&error) => {
                self.open_at(spec, &spec.index).await.with_context(|| {
                    format!(
                        "cannot read registry `{}`: its mirror {mirror} cannot be reached, and its index cannot be read either",
                        spec.name
                    )
                })
            }
            Err(error) => Err(error.context(format!(
                "cannot read registry `{}` from its mirror {mirror}{}",
                spec.name,
                if spec.fallback_to_origin {
                    ""
                } else {
                    " (`fallback-to-origin` is off)"
                }
            ))),
        }
    }

    /// Opens `spec` at `url` (its index or its mirror) with the right
    /// token.
    async fn open_at(&self, spec: &RegistrySpec, url: &RegistryUrl) -> anyhow::Result<Registry> {
        let refused = |origin: String| {
            move |error: anyhow::Error| -> anyhow::Error {
                if !is_unauthorized(&error) {
                    return error;
                }
                UserError::new(format!(
                    "{} refused the token from {origin}",
                    spec.describe_at(url)
                ))
                .with_hint(format!(
                    "the token is unknown, revoked or for another registry: {}",
                    self.token_hint(spec)
                ))
                .with_source(error)
                .into()
            }
        };
        match self.lookup(spec, url)? {
            // `Registry::open` sends the token only to a registry that asks
            // for it, so a public one never sees it.
            Lookup::Found(token, origin) => Registry::open(url.clone(), Some(token))
                .await
                .map_err(refused(origin)),
            Lookup::NotFound => {
                let opened = Registry::open(url.clone(), None).await;
                match opened {
                    Ok(registry) if registry.config().auth_required => {
                        Err(self.no_token(spec, url, None))
                    }
                    Err(error) if is_unauthorized(&error) => {
                        Err(self.no_token(spec, url, Some(error)))
                    }
                    other => other,
                }
            }
            // Without a token first: the command runs only for a registry
            // that asks for a token.
            Lookup::Command(_) => {
                let anonymous = Registry::open(url.clone(), None).await;
                let asked = match &anonymous {
                    Ok(registry) => registry.config().auth_required,
                    Err(error) => is_unauthorized(error),
                };
                if !asked {
                    return anonymous;
                }
                let (token, origin) = self
                    .token_with_origin(spec, url)?
                    .expect("a token-command gives a token or an error");
                Registry::open(url.clone(), Some(token))
                    .await
                    .map_err(refused(origin))
            }
        }
    }

    fn no_token(
        &self,
        spec: &RegistrySpec,
        url: &RegistryUrl,
        cause: Option<anyhow::Error>,
    ) -> anyhow::Error {
        let error = UserError::new(format!(
            "{} needs a token, and none is configured",
            spec.describe_at(url)
        ))
        .with_hint(self.token_hint(spec));
        match cause {
            Some(cause) => error.with_source(cause).into(),
            None => error.into(),
        }
    }
}

/// Parses a token from the environment variable `variable`.
fn parse_variable(text: &str, variable: &str) -> anyhow::Result<Token> {
    text.parse().map_err(|error: TokenError| {
        UserError::new(format!("{variable} is not a valid token"))
            .with_hint("set it to the token the registry gave you, or unset it")
            .with_source(error)
            .into()
    })
}

/// Runs a `token-command` with `sh -c`: its trimmed standard output is the
/// token. Its standard error and input are the user's, so it can ask for a
/// password. Errors name the registry and the command, never the output.
fn run_token_command(
    registry: &str,
    command: &str,
    environment: &Environment,
) -> anyhow::Result<Token> {
    let failed = |problem: String| {
        UserError::new(format!(
            "the token-command of registry `{registry}` (`{command}`) {problem}"
        ))
        .with_hint(format!(
            "run it yourself to see what is wrong: it must print the token, and exit 0; it is set in `[registries.{registry}]` of {}",
            environment.describe_config_file()
        ))
    };
    let output = std::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .stdin(std::process::Stdio::inherit())
        .stderr(std::process::Stdio::inherit())
        .stdout(std::process::Stdio::piped())
        .output()
        .map_err(|error| failed("cannot be run".into()).with_source(error))?;
    if !output.status.success() {
        return Err(failed(format!("failed ({})", output.status)).into());
    }
    let text = String::from_utf8(output.stdout)
        .map_err(|_| failed("printed something that is not UTF-8 text".into()))?;
    text.parse().map_err(|error: TokenError| {
        let problem = match error {
            TokenError::Empty => "printed nothing".to_owned(),
            other => format!("printed something that is not a token: {other}"),
        };
        failed(problem).into()
    })
}

/// Returns true if and only if `error` is a registry asking for a token
/// (401) or refusing one (403) when reading `config.json`.
fn is_unauthorized(error: &anyhow::Error) -> bool {
    matches!(
        error.downcast_ref::<RegistryError>(),
        Some(RegistryError::Status {
            status: 401 | 403,
            ..
        })
    )
}

/// Returns true if and only if `error` says a registry cannot be reached:
/// a network error, a timeout, or a 5xx answer.
fn is_unreachable(error: &anyhow::Error) -> bool {
    match error.downcast_ref::<RegistryError>() {
        Some(RegistryError::Network { .. } | RegistryError::Timeout { .. }) => true,
        Some(RegistryError::Status { status, .. }) => *status >= 500 || *status == 429,
        _ => false,
    }
}

/// The registries a command has opened, each opened (and its token found)
/// at most once.
#[derive(Debug)]
pub struct OpenRegistries<'registries> {
    registries: &'registries Registries,
    access: Access,
    open: BTreeMap<String, Registry>,
}

impl<'registries> OpenRegistries<'registries> {
    /// None open yet.
    pub fn new(registries: &'registries Registries) -> Self {
        Self {
            registries,
            access: Access::Read,
            open: BTreeMap::new(),
        }
    }

    /// None open yet; each opens with [`Access::Locked`].
    pub fn locked(registries: &'registries Registries) -> Self {
        Self {
            access: Access::Locked,
            ..Self::new(registries)
        }
    }

    /// Returns the registries these are opened from.
    pub fn registries(&self) -> &'registries Registries {
        self.registries
    }

    /// Returns the registry named `name` for reading, opening it first if
    /// it is not open yet.
    pub async fn open(&mut self, name: &str) -> anyhow::Result<&Registry> {
        if !self.open.contains_key(name) {
            let spec = self.registries.get(name)?;
            let registry = self.registries.open(spec, self.access).await?;
            self.open.insert(name.to_owned(), registry);
        }
        Ok(&self.open[name])
    }

    /// Returns the registry named `name` if it is open.
    pub fn get(&self, name: &str) -> Option<&Registry> {
        self.open.get(name)
    }

    /// Returns every open registry.
    pub fn all(&self) -> impl Iterator<Item = &Registry> {
        self.open.values()
    }
}

#[cfg(test)]
mod tests;
