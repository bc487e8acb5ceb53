//! The `skillpkg-registry` binary.
#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "the binary's own output"
)]

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use clap::{Args, Parser, Subcommand};
use skillpkg_index::archive::DEFAULT_MAX_BYTES;
use skillpkg_index::registry::tree::StaticTree;
use skillpkg_index::skill::SkillName;
use skillpkg_registry::build::{BuildOptions, build};
use skillpkg_registry::db::{ADMIN, NewEvent};
use skillpkg_registry::downloads::FLUSH_PERIOD;
use skillpkg_registry::keys::describe_change;
use skillpkg_registry::keys::{
    change_keys, import_keys_files, parse_ids, parse_keys, register_key_ids,
};
use skillpkg_registry::layout::{DataFolder, Kind};
use skillpkg_registry::marketplace::MarketplaceName;
use skillpkg_registry::metadata;
use skillpkg_registry::registry::{
    CLAIM_LIFETIME, DEFAULT_CONFUSABLE_MIN_DOWNLOADS, Options, RECOVERY_PERIOD, Registry,
};
use skillpkg_registry::server::Limits;
use skillpkg_registry::state::{Access, State};
use skillpkg_registry::storage::Storage;

/// The skillpkg registry: serves a static skill index and accepts publishes.
///
/// A registry's data folder (--root) holds `public/`, the static tree that
/// is served (by this server, or by any static host), and `state/`, the
/// tokens and owners, which are never served. See docs/registry.md.
#[derive(Debug, Parser)]
#[command(name = "skillpkg-registry", version, max_term_width = 100)]
struct Cli {
    /// The database of tokens, owners and the audit trail:
    /// `postgres://USER@HOST/DB` (several servers may share one), or
    /// `sqlite://PATH`. Default: `state/registry.db` in the data folder.
    #[arg(
        long,
        global = true,
        value_name = "URL",
        env = "SKILLPKG_REGISTRY_DATABASE"
    )]
    database: Option<String>,
    /// Where the static tree lives: `s3://BUCKET[/PREFIX]`, an
    /// S3-compatible bucket configured by the usual AWS variables
    /// (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`, and
    /// `AWS_ENDPOINT_URL` with `AWS_ALLOW_HTTP=true` for a server of one's
    /// own), which its web endpoint or a CDN can serve as it is. Default:
    /// `public/` in the data folder, which keeps the state either way.
    #[arg(
        long,
        global = true,
        value_name = "URL",
        env = "SKILLPKG_REGISTRY_STORAGE"
    )]
    storage: Option<String>,
    #[command(subcommand)]
    command: Command,
}

/// Where a registry's state and tree are, besides its data folder.
#[derive(Clone, Copy, Debug)]
struct Places<'a> {
    database: Option<&'a str>,
    storage: Option<&'a str>,
}

impl Places<'_> {
    /// The storage of the tree of `folder`.
    fn storage(&self, folder: &DataFolder) -> anyhow::Result<Storage> {
        match self.storage {
            Some(url) => Ok(Storage::from_url(url)?),
            None => Ok(Storage::Folder(folder.tree.clone())),
        }
    }
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the static tree and the publish API.
    ///
    /// Prints `listening on http://ADDR` on stdout once it accepts
    /// connections, and logs to stderr: a line a request (method, path,
    /// status, bytes, duration), filtered by `RUST_LOG` (default `info`).
    /// SIGINT or SIGTERM stops it: it drains the requests in flight and
    /// exits 0. It exits 1 when it cannot start (the address is taken, a bad
    /// option or `RUST_LOG`, a data folder it cannot open).
    Serve(ServeArgs),
    /// Write the static tree from a folder of `<name>-<version>.tgz` archives.
    ///
    /// Each archive (with its `.tgz.minisig` and `.intoto.jsonl`, if any) is
    /// checked as a publish would be; its modification time is its
    /// `published` time. Signatures are checked against the keys of
    /// --keys-from. The output folder must not exist or be empty; a failed
    /// build writes nothing.
    Build(BuildArgs),
    /// Create, list and revoke publish tokens.
    #[command(subcommand)]
    Token(TokenCommand),
    /// Add, list and remove the publisher keys of a skill.
    ///
    /// The keys are the skill's `keys/<name>.json` in the public tree: a
    /// signed publish must be signed by one of them. Safe while the server
    /// runs.
    #[command(subcommand)]
    Key(KeyCommand),
    /// Manage the registry's own keys: the offline root keys and the online
    /// index key of its signed metadata (root.json, snapshot.json,
    /// timestamp.json), which let clients detect a mirror or CDN that
    /// changes, rolls back or freezes the index.
    ///
    /// The root keys sign only roots: keep them offline, and pass them to
    /// these commands as files. The index key lives in `state/index.key`
    /// and re-signs the snapshot and timestamp after every change. See
    /// docs/registries.md.
    #[command(subcommand)]
    Keys(KeysCommand),
    /// Show the audit trail: who published, yanked, and changed owners,
    /// keys and tokens, and when; oldest first.
    ///
    /// Examples:
    ///   skillpkg-registry events --root /srv/skills
    ///   skillpkg-registry events --root /srv/skills --skill pdf --json
    Events {
        #[arg(long, value_name = "DIR")]
        root: PathBuf,
        /// Only the events of this skill.
        #[arg(long, value_name = "NAME")]
        skill: Option<SkillName>,
        /// At most this many, the newest.
        #[arg(long, value_name = "N", default_value_t = 100)]
        limit: u32,
        /// Print JSON: an array of {seq, at, actor, action, skill,
        /// version, detail}.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
enum KeysCommand {
    /// Write a new key pair: FILE (the secret key, 0600) and FILE.pub.
    Generate {
        /// Where to write the secret key; it must not exist.
        #[arg(value_name = "FILE")]
        out: PathBuf,
    },
    /// Start signed metadata: an index key in `state/`, root version 1
    /// listing the given root keys and signed by them, and a first snapshot
    /// and timestamp.
    Init {
        #[arg(long, value_name = "DIR")]
        root: PathBuf,
        /// A root secret key file; repeat for several.
        #[arg(long = "root-key", value_name = "FILE", required = true)]
        root_keys: Vec<PathBuf>,
        /// How many root keys must sign a new root.
        #[arg(long, default_value_t = 1)]
        threshold: u32,
        #[command(flatten)]
        lifetime: LifetimeArgs,
    },
    /// Replace the online index key (after a leak, say): a new key, and a
    /// new root listing it, signed by a threshold of the root keys.
    RotateIndex {
        #[arg(long, value_name = "DIR")]
        root: PathBuf,
        /// A current root secret key file; repeat up to the threshold.
        #[arg(long = "root-key", value_name = "FILE", required = true)]
        root_keys: Vec<PathBuf>,
        #[command(flatten)]
        lifetime: LifetimeArgs,
    },
    /// Replace the root keys: a new root listing the new keys, signed by a
    /// threshold of the current root keys and a threshold of the new ones.
    RotateRoot {
        #[arg(long, value_name = "DIR")]
        root: PathBuf,
        /// A secret key file that signs the new root: current root keys
        /// (up to the current threshold) and new ones; repeat.
        #[arg(long = "sign-with", value_name = "FILE", required = true)]
        signers: Vec<PathBuf>,
        /// A public key file (or `RW...` line) of the new root keys; repeat.
        #[arg(long = "new-root-key", value_name = "KEY", required = true)]
        new_root_keys: Vec<String>,
        /// How many of the new root keys must sign the root after this one.
        #[arg(long, default_value_t = 1)]
        threshold: u32,
    },
    /// Re-sign the snapshot and timestamp of a tree now. A server does this
    /// on its own; a tree served by a static host (a `build` output) needs
    /// it before its timestamp expires: run it from cron.
    Sign {
        /// A data folder (with `state/index.key`)...
        #[arg(long, value_name = "DIR", required_unless_present = "tree")]
        root: Option<PathBuf>,
        /// ...or a static tree, with --index-key.
        #[arg(
            long,
            value_name = "DIR",
            requires = "index_key",
            conflicts_with = "root"
        )]
        tree: Option<PathBuf>,
        /// The index secret key file, for --tree.
        #[arg(long, value_name = "FILE")]
        index_key: Option<PathBuf>,
        #[command(flatten)]
        lifetime: LifetimeArgs,
    },
}

#[derive(Debug, Args)]
struct LifetimeArgs {
    /// How long the signed snapshot and timestamp are valid (`24h`, `90m`,
    /// `30s`); clients refuse them after that, so a frozen mirror is caught.
    #[arg(long, value_name = "DURATION", default_value = "24h")]
    metadata_lifetime: jiff::SignedDuration,
}

#[derive(Debug, Args)]
struct ServeArgs {
    /// The registry's data folder (created if missing), or a mirror written
    /// by `skillpkg mirror`, which is served read-only.
    #[arg(long, value_name = "DIR")]
    root: PathBuf,
    /// The address to listen on; port 0 picks a free port.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    listen: String,
    /// The URL clients use to reach this server, when it is not
    /// `http://ADDR` (behind a proxy, say): config.json's `api` is under
    /// it, and so are the discovery index's URLs, which are relative
    /// without it.
    #[arg(long, value_name = "URL")]
    public_url: Option<String>,
    /// The largest archive accepted, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_BYTES)]
    max_skill_bytes: u64,
    /// Refuse unsigned publishes (`require-signatures` in config.json).
    #[arg(long)]
    require_signatures: bool,
    /// Refuse publishes whose audit finds something at or above this
    /// severity (info, low, medium, high), or `never`. The verdict is
    /// recorded in the index line either way (docs/security.md).
    #[arg(long, value_name = "SEVERITY", default_value = "high")]
    audit_refuse: AuditThreshold,
    /// A private registry: every read of the tree needs a valid token
    /// (`auth-required` in config.json). Serve the tree with this server,
    /// not a static host, which could not check tokens.
    #[arg(long)]
    auth_required: bool,
    /// Serve the tree exactly as it is, with no API and nothing written:
    /// for a mirror written by `skillpkg mirror` (the default when --root,
    /// or its `public/`, is one). A read-only tree whose config.json says
    /// `auth-required` needs a token for every read, flag or not.
    #[arg(long)]
    read_only: bool,
    /// Refuse a new skill name one edit (a character inserted, removed,
    /// replaced, or two swapped) from the name of a skill with at least
    /// this many downloads, unless the publisher owns that skill. Names that
    /// look alike (`rn` and `m`, `0` and `o`, hyphens moved) are refused
    /// whatever the downloads. Only downloads this server sent count, not
    /// those of a CDN or static host in front of it.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_CONFUSABLE_MIN_DOWNLOADS)]
    confusable_min_downloads: u64,
    /// How long a publish holds the version it is publishing (`10m`, the
    /// default) before another publish of it may take it over and a
    /// server removes what it wrote: the publish died. Keep it far above
    /// the longest a publish's writes to the storage can take, and the
    /// same on every server of a registry.
    #[arg(long, value_name = "DURATION")]
    claim_lifetime: Option<jiff::SignedDuration>,
    /// The most skills a shard of the search index is meant to hold: a
    /// registry with more is split into 16 shards, then 256 (at start, and
    /// checked every minute). A publish rewrites one shard.
    #[arg(long, value_name = "N", default_value_t = skillpkg_index::registry::SKILLS_PER_SHARD,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    skills_per_shard: usize,
    /// The name of the registry's plugin marketplace, which users type
    /// after `@` (`claude plugin install pdf@NAME`); the default is the
    /// host of --public-url (else of the listening address) with `-` for
    /// its dots: `skills-example-com`.
    #[arg(long, value_name = "NAME")]
    marketplace_name: Option<MarketplaceName>,
    #[command(flatten)]
    limits: LimitArgs,
    /// With signed metadata (`skillpkg-registry keys init`): re-signed
    /// after every change, and when half of this has passed.
    #[command(flatten)]
    lifetime: LifetimeArgs,
}

/// What one client, or many, can make the server spend.
#[derive(Debug, Args)]
struct LimitArgs {
    /// How long a client has to send a request's headers (`10s`, the
    /// default), from the moment its connection is accepted or its previous
    /// response was sent; a connection that trickles them is closed.
    #[arg(long, value_name = "DURATION")]
    header_timeout: Option<jiff::SignedDuration>,
    /// How long a request body may take to arrive in full (`2m`, the
    /// default); a slower one is answered 408 and its connection closed.
    #[arg(long, value_name = "DURATION")]
    body_timeout: Option<jiff::SignedDuration>,
    /// How long a response may wait for the client to read it (`30s`, the
    /// default); a client that stops reading is disconnected.
    #[arg(long, value_name = "DURATION")]
    send_timeout: Option<jiff::SignedDuration>,
    /// The most connections served at once (512, the default); more wait
    /// until one closes.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    max_connections: Option<u32>,
    /// The most publishes received or checked at once (4, the default); one
    /// more waits for a slot with its body unread.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    max_concurrent_uploads: Option<u32>,
    /// How long a publish waits for an upload slot (`10s`, the default)
    /// before it is answered 503 with `Retry-After`.
    #[arg(long, value_name = "DURATION")]
    upload_wait: Option<jiff::SignedDuration>,
    /// The most git fetches answered at once (16, the default); one more
    /// waits a few seconds for a slot, then is answered 503 with
    /// `Retry-After`.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    max_concurrent_fetches: Option<u32>,
    /// How long a shutdown (SIGINT, SIGTERM) waits for the requests in
    /// flight to finish (`10s`, the default) before it drops them.
    #[arg(long, value_name = "DURATION")]
    drain_timeout: Option<jiff::SignedDuration>,
}

impl LimitArgs {
    fn limits(&self) -> anyhow::Result<Limits> {
        let defaults = Limits::default();
        let duration = |flag: &str, value: Option<jiff::SignedDuration>, default| {
            let Some(value) = value else {
                return Ok(default);
            };
            std::time::Duration::try_from(value)
                .ok()
                .filter(|duration| !duration.is_zero())
                .with_context(|| format!("--{flag} must be a positive duration, like `10s`"))
        };
        let count =
            |value: Option<u32>, default: usize| value.map_or(default, |value| value as usize);
        Ok(Limits {
            header_timeout: duration(
                "header-timeout",
                self.header_timeout,
                defaults.header_timeout,
            )?,
            body_timeout: duration("body-timeout", self.body_timeout, defaults.body_timeout)?,
            send_timeout: duration("send-timeout", self.send_timeout, defaults.send_timeout)?,
            max_connections: count(self.max_connections, defaults.max_connections),
            max_concurrent_uploads: count(
                self.max_concurrent_uploads,
                defaults.max_concurrent_uploads,
            ),
            upload_wait: duration("upload-wait", self.upload_wait, defaults.upload_wait)?,
            max_concurrent_fetches: count(
                self.max_concurrent_fetches,
                defaults.max_concurrent_fetches,
            ),
            drain_timeout: duration("drain-timeout", self.drain_timeout, defaults.drain_timeout)?,
        })
    }
}

#[derive(Debug, Args)]
struct BuildArgs {
    /// The folder to search for archives.
    #[arg(long, value_name = "DIR")]
    from: PathBuf,
    /// The folder to write the tree into.
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// The API URL for `config.json` (default: none, a read-only tree).
    #[arg(long, value_name = "URL")]
    api: Option<String>,
    /// The URL the tree will be served at, for absolute URLs in the
    /// discovery index (default: relative URLs).
    #[arg(long, value_name = "URL")]
    public_url: Option<String>,
    /// The largest archive accepted, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_BYTES)]
    max_skill_bytes: u64,
    /// Refuse unsigned archives (`require-signatures` in config.json).
    #[arg(long)]
    require_signatures: bool,
    /// Refuse archives whose audit finds something at or above this
    /// severity (info, low, medium, high), or `never`, as `serve` does.
    #[arg(long, value_name = "SEVERITY", default_value = "high")]
    audit_refuse: AuditThreshold,
    /// A tree (a server's `public/`, or an earlier build) whose
    /// `keys/<name>.json` files list the keys signatures are checked
    /// against; they are copied into the new tree. Without it, signed
    /// archives are refused.
    #[arg(long, value_name = "DIR")]
    keys_from: Option<PathBuf>,
    /// The name of the plugin marketplace (written when --public-url or
    /// --api gives the tree's URL); the default is the URL's host with `-`
    /// for its dots.
    #[arg(long, value_name = "NAME")]
    marketplace_name: Option<MarketplaceName>,
}

#[derive(Debug, Subcommand)]
enum TokenCommand {
    /// Create a token for a user and print it (once: only its hash is kept).
    Create {
        #[arg(long, value_name = "DIR")]
        root: PathBuf,
        /// The user the token acts as.
        #[arg(long)]
        user: String,
    },
    /// List the tokens: id, user, creation time.
    List {
        #[arg(long, value_name = "DIR")]
        root: PathBuf,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Revoke a token by id; it stops working at once.
    Revoke {
        #[arg(long, value_name = "DIR")]
        root: PathBuf,
        /// The token's id, as `token list` shows it.
        id: String,
    },
}

#[derive(Debug, Subcommand)]
enum KeyCommand {
    /// Register a public key for a skill (also before its first publish).
    Add {
        #[arg(long, value_name = "DIR")]
        root: PathBuf,
        /// The skill.
        #[arg(long, value_name = "NAME")]
        skill: SkillName,
        /// The public key: minisign's base64 line (`RW...`), or the path of
        /// a public key file.
        #[arg(long, value_name = "KEY")]
        key: String,
    },
    /// List a skill's keys: id, public key, when it was added.
    List {
        #[arg(long, value_name = "DIR")]
        root: PathBuf,
        /// The skill.
        #[arg(long, value_name = "NAME")]
        skill: SkillName,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Remove a key by id; the last key of a skill cannot be removed.
    Remove {
        #[arg(long, value_name = "DIR")]
        root: PathBuf,
        /// The skill.
        #[arg(long, value_name = "NAME")]
        skill: SkillName,
        /// The key's id, as `key list` shows it.
        id: String,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            for cause in error.chain().skip(1) {
                eprintln!("  Caused by: {cause}");
            }
            ExitCode::from(1)
        }
    }
}

/// `--audit-refuse`: a severity, or `never`.
#[derive(Clone, Copy, Debug)]
struct AuditThreshold(Option<skillpkg_index::audit::Severity>);

impl std::str::FromStr for AuditThreshold {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        if text == "never" {
            return Ok(Self(None));
        }
        text.parse()
            .map(|severity| Self(Some(severity)))
            .map_err(|error: String| format!("{error}, or never"))
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    let places = Places {
        database: cli.database.as_deref(),
        storage: cli.storage.as_deref(),
    };
    let database = places.database;
    match cli.command {
        Command::Serve(args) => serve(args, places),
        Command::Build(args) => {
            if let Some(url) = places.storage {
                anyhow::bail!(
                    "build writes a folder, not {url}: build into --out DIR, then copy DIR to the bucket (for example `aws s3 sync DIR {url}`)"
                );
            }
            let options = BuildOptions {
                api: args.api,
                public_url: args.public_url,
                max_skill_bytes: args.max_skill_bytes,
                require_signatures: args.require_signatures,
                audit_refuse: args.audit_refuse.0,
                keys_from: args.keys_from,
                marketplace_name: args.marketplace_name,
            };
            let report = build(&args.from, &args.out, &options)?;
            println!(
                "built {} with {} skills, {} versions",
                args.out.display(),
                report.skills,
                report.versions
            );
            Ok(())
        }
        Command::Token(command) => token(command, database),
        Command::Key(command) => key(command, places),
        Command::Keys(command) => keys(command, places),
        Command::Events {
            root,
            skill,
            limit,
            json,
        } => events(&root, database, skill.as_ref(), limit, json),
    }
}

/// The runtime of an admin command: a bucket's requests and the database's
/// queries run on it.
fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .context("cannot start the runtime")
}

/// Runs `work` with the state of the data folder `root` open, on a runtime
/// of its own (entered, so a tree in a bucket can be used), and closes the
/// database after.
fn with_state<T>(
    root: &std::path::Path,
    state_dir: &std::path::Path,
    database: Option<&str>,
    work: impl FnOnce(&tokio::runtime::Runtime, &State) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    let runtime = runtime()?;
    let _entered = runtime.enter();
    let state = runtime
        .block_on(State::open(state_dir, database, Access::Write))
        .with_context(|| format!("cannot open the state of {}", root.display()))?;
    let result = work(&runtime, &state);
    runtime.block_on(state.db().close());
    result
}

fn events(
    root: &std::path::Path,
    database: Option<&str>,
    skill: Option<&SkillName>,
    limit: u32,
    json: bool,
) -> anyhow::Result<()> {
    let folder = DataFolder::locate(root);
    let events = with_state(root, &folder.state, database, |runtime, state| {
        Ok(runtime.block_on(
            state
                .db()
                .events(skill.map(SkillName::as_str), i64::from(limit)),
        )?)
    })?;
    if json {
        println!("{}", serde_json::to_string_pretty(&events)?);
        return Ok(());
    }
    if events.is_empty() {
        eprintln!("no events yet");
    }
    for event in events {
        let subject = match (&event.skill, &event.version) {
            (Some(skill), Some(version)) => format!("{skill}@{version}"),
            (Some(skill), None) => skill.clone(),
            _ => "-".to_owned(),
        };
        println!(
            "{}\t{}\t{}\t{}\t{}",
            event.at,
            event.actor,
            event.action,
            subject,
            event.detail.unwrap_or_default()
        );
    }
    Ok(())
}

fn serve(args: ServeArgs, places: Places<'_>) -> anyhow::Result<()> {
    let database = places.database.map(str::to_owned);
    let limits = args.limits.limits()?;
    init_logging()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the runtime")?;
    runtime.block_on(async move {
        // Before anything else, so a signal at any point of the start is a
        // clean stop, never the default action's death by signal.
        let shutdown = Shutdown::listen().context("cannot handle SIGINT and SIGTERM")?;
        let listener = tokio::net::TcpListener::bind(&args.listen)
            .await
            .with_context(|| format!("cannot listen on {}", args.listen))?;
        let address = listener
            .local_addr()
            .context("cannot read the listening address")?;
        let api_url = args
            .public_url
            .clone()
            .unwrap_or_else(|| format!("http://{address}"));
        let folder = DataFolder::locate(&args.root);
        let storage = places.storage(&folder)?;
        let options = Options {
            public_url: args.public_url,
            api_url: Some(api_url.clone()),
            max_skill_bytes: args.max_skill_bytes,
            require_signatures: args.require_signatures,
            audit_refuse: args.audit_refuse.0,
            auth_required: args.auth_required,
            timestamp_lifetime: args.lifetime.metadata_lifetime,
            read_only: args.read_only || folder.is_mirror(),
            confusable_min_downloads: args.confusable_min_downloads,
            claim_lifetime: match args.claim_lifetime {
                Some(lifetime) if lifetime.is_positive() => {
                    std::time::Duration::try_from(lifetime).context("bad --claim-lifetime")?
                }
                Some(_) => anyhow::bail!("--claim-lifetime must be longer than 0"),
                None => CLAIM_LIFETIME,
            },
            skills_per_shard: args.skills_per_shard,
            marketplace_name: args.marketplace_name,
        };
        let access = if options.read_only {
            Access::ReadOnly
        } else {
            Access::Write
        };
        let state = State::open(&folder.state, database.as_deref(), access)
            .await
            .with_context(|| format!("cannot open the state of {}", args.root.display()))?;
        // Blocking, and before any request: nothing waits on these threads.
        let tree = storage.describe();
        let (registry, removed) = Registry::open(&folder, storage, options, state)
            .await
            .with_context(|| format!("cannot open the registry in {}", args.root.display()))?;
        if folder.is_mirror() {
            tracing::info!(
                "serving the mirror {tree} read-only{}",
                if registry.auth_required() {
                    ", every read with a token"
                } else {
                    ""
                }
            );
        }
        for path in removed {
            tracing::warn!("recovered: removed {path}, left by an interrupted publish");
        }
        if registry.auth_required() && registry.state().list_tokens().await?.is_empty() {
            tracing::warn!(
                "this registry needs a token for every read, and has none: create one with `skillpkg-registry token create --root {} --user NAME`",
                args.root.display()
            );
        }
        let registry = Arc::new(registry);
        if let Some(lifetime) = registry.metadata_lifetime() {
            let period = (lifetime / 2).max(jiff::SignedDuration::from_secs(1));
            let period = std::time::Duration::try_from(period).context("bad lifetime")?;
            let registry = Arc::clone(&registry);
            tokio::spawn(async move {
                let mut interval = tokio::time::interval(period);
                interval.tick().await;
                loop {
                    interval.tick().await;
                    if let Err(error) = registry.sign_metadata(true).await {
                        tracing::error!(
                            error = skillpkg_registry::report::error_chain(&error),
                            "cannot re-sign the timestamp"
                        );
                    }
                }
            });
        }
        {
            let registry = Arc::clone(&registry);
            tokio::spawn(async move {
                let mut interval = tokio::time::interval(FLUSH_PERIOD);
                interval.tick().await;
                loop {
                    interval.tick().await;
                    flush_downloads(&registry).await;
                }
            });
        }
        if !registry.read_only() {
            tokio::spawn(Arc::clone(&registry).write_discovery_after_changes());
        }
        if !registry.read_only() {
            // What a publish on any server left: claims it never
            // committed, index files it never wrote.
            let registry = Arc::clone(&registry);
            tokio::spawn(async move {
                let mut interval = tokio::time::interval(RECOVERY_PERIOD);
                interval.tick().await;
                loop {
                    interval.tick().await;
                    match registry.recover(false).await {
                        Ok(removed) => {
                            for path in removed {
                                tracing::warn!(
                                    "recovered: removed {path}, left by an interrupted publish"
                                );
                            }
                        }
                        Err(error) => tracing::error!(
                            error = skillpkg_registry::report::error_chain(&error),
                            "cannot recover from interrupted publishes"
                        ),
                    }
                }
            });
        }
        tracing::info!(%address, url = %api_url, "listening");
        println!("listening on {api_url}");
        let _ = std::io::stdout().flush();
        let app = skillpkg_registry::server::router(Arc::clone(&registry), limits);
        skillpkg_registry::server::serve(listener, app, limits, shutdown.wait()).await;
        flush_downloads(&registry).await;
        tracing::info!("stopped");
        Ok(())
    })
}

/// Adds the download counts to the database, logging a failure: counts
/// are worth keeping, not worth stopping the server for.
async fn flush_downloads(registry: &Registry) {
    if let Err(error) = registry.flush_downloads().await {
        tracing::error!(
            error = skillpkg_registry::report::error_chain(&error),
            "cannot write the download counts"
        );
    }
}

/// The variable that filters the log, with `tracing`'s directives
/// (`info`, `warn,skillpkg_registry::access=info`, ...).
const LOG_FILTER_VAR: &str = "RUST_LOG";

/// The filter when [`LOG_FILTER_VAR`] is unset or empty: a line a request,
/// start and stop, warnings and errors.
const DEFAULT_LOG_FILTER: &str = "info";

/// Logs to stderr, filtered by `RUST_LOG`: a line a request (method, path,
/// status, bytes, duration, and the cause of a server failure, which the
/// answer leaves out), and the server's own start, stop and warnings. A
/// `RUST_LOG` that does not parse is a bad option: the server does not
/// start.
fn init_logging() -> anyhow::Result<()> {
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    let directives = std::env::var(LOG_FILTER_VAR)
        .ok()
        .filter(|value| !value.trim().is_empty())
        .unwrap_or_else(|| DEFAULT_LOG_FILTER.to_owned());
    let filter = tracing_subscriber::EnvFilter::builder()
        .parse(&directives)
        .with_context(|| format!("{LOG_FILTER_VAR}=`{directives}` is not a log filter; try `info` or `warn,skillpkg_registry::access=info`"))?;
    tracing_subscriber::registry()
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .with_ansi(false),
        )
        .with(filter)
        .try_init()
        .context("cannot start the log")?;
    Ok(())
}

/// SIGINT and SIGTERM, listened for from the moment they are set up.
struct Shutdown {
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
    #[cfg(unix)]
    terminate: tokio::signal::unix::Signal,
}

impl Shutdown {
    fn listen() -> std::io::Result<Self> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Ok(Self {
                interrupt: signal(SignalKind::interrupt())?,
                terminate: signal(SignalKind::terminate())?,
            })
        }
        #[cfg(not(unix))]
        Ok(Self {})
    }

    /// Completes at the first of the signals.
    async fn wait(mut self) {
        #[cfg(unix)]
        {
            let signal = tokio::select! {
                _ = self.interrupt.recv() => "SIGINT",
                _ = self.terminate.recv() => "SIGTERM",
            };
            tracing::info!(signal, "stopping");
        }
        #[cfg(not(unix))]
        {
            let _ = &mut self;
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

/// Returns the data folder `root` of a registry, refusing a mirror: its
/// publisher keys and signed metadata are the registry's it mirrors.
fn registry_folder(root: &std::path::Path) -> anyhow::Result<DataFolder> {
    let folder = DataFolder::locate(root);
    if folder.kind != Kind::Registry {
        anyhow::bail!(
            "{} is a mirror: its keys and signed metadata are those of the registry it mirrors; change them there, and mirror again",
            root.display()
        );
    }
    Ok(folder)
}

fn token(command: TokenCommand, database: Option<&str>) -> anyhow::Result<()> {
    // A mirror of a private registry has tokens too: its own, where
    // `serve --root` looks for them.
    let state_dir = |root: &PathBuf| DataFolder::locate(root).state;
    match command {
        TokenCommand::Create { root, user } => {
            let (token, record) =
                with_state(&root, &state_dir(&root), database, |runtime, state| {
                    Ok(runtime.block_on(state.create_token(&user))?)
                })?;
            eprintln!(
                "created token {} for {}; it is shown only this once:",
                record.id, record.user
            );
            println!("{}", token.expose());
        }
        TokenCommand::List { root, json } => {
            let tokens = with_state(&root, &state_dir(&root), database, |runtime, state| {
                Ok(runtime.block_on(state.list_tokens())?)
            })?;
            if json {
                let list: Vec<_> = tokens
                    .iter()
                    .map(
                        |t| serde_json::json!({ "id": t.id, "user": t.user, "created": t.created }),
                    )
                    .collect();
                println!("{}", serde_json::to_string_pretty(&list)?);
            } else {
                for token in tokens {
                    println!("{}\t{}\t{}", token.id, token.user, token.created);
                }
            }
        }
        TokenCommand::Revoke { root, id } => {
            let record = with_state(&root, &state_dir(&root), database, |runtime, state| {
                Ok(runtime.block_on(state.revoke_token(&id))?)
            })?;
            eprintln!("revoked token {} of {}", record.id, record.user);
        }
    }
    Ok(())
}

fn key(command: KeyCommand, places: Places<'_>) -> anyhow::Result<()> {
    /// Changes the keys of `skill` as the admin, re-signs the metadata and
    /// records the change in the audit trail.
    fn change(
        root: &std::path::Path,
        places: Places<'_>,
        skill: &SkillName,
        add: &[skillpkg_index::signing::PublicKey],
        remove: &[skillpkg_index::signing::KeyId],
    ) -> anyhow::Result<()> {
        let folder = registry_folder(root)?;
        let tree = places.storage(&folder)?.tree();
        with_state(root, &folder.state, places.database, |runtime, state| {
            runtime.block_on(async {
                import_keys_files(state.db(), &tree).await?;
                register_key_ids(state.db()).await?;
                change_keys(
                    state.db(),
                    &tree,
                    skill,
                    add,
                    remove,
                    jiff::Timestamp::now(),
                )
                .await
            })?;
            sign_metadata(root, &tree, state)?;
            runtime.block_on(state.db().record(&NewEvent {
                actor: ADMIN,
                action: "keys",
                skill: Some(skill.as_str()),
                version: None,
                detail: Some(describe_change(add, remove)),
            }))?;
            Ok(())
        })
    }
    match command {
        KeyCommand::Add { root, skill, key } => {
            let key = parse_keys(&read_key_texts(vec![key])?)?.remove(0);
            change(&root, places, &skill, std::slice::from_ref(&key), &[])
                .with_context(|| format!("cannot add the key to `{skill}`"))?;
            eprintln!("`{skill}` accepts signatures by key {} now", key.id());
        }
        KeyCommand::List { root, skill, json } => {
            let tree = places.storage(&registry_folder(&root)?)?.tree();
            let runtime = runtime()?;
            let _entered = runtime.enter();
            let keys = tree.read_keys(&skill)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&keys.keys)?);
            } else if keys.keys.is_empty() {
                eprintln!("`{skill}` has no keys: its first signed publish registers one");
            } else {
                for record in keys.keys {
                    println!(
                        "{}\t{}\t{}",
                        record.id,
                        record.key.to_base64(),
                        record.added
                    );
                }
            }
        }
        KeyCommand::Remove { root, skill, id } => {
            let id = parse_ids(&[id])?.remove(0);
            change(&root, places, &skill, &[], &[id])
                .with_context(|| format!("cannot remove the key from `{skill}`"))?;
            eprintln!("removed key {id} from `{skill}`");
        }
    }
    Ok(())
}

/// Re-signs the snapshot and timestamp of `tree`, the tree of the data
/// folder `root`, after an admin command changed it, when it has signed
/// metadata.
fn sign_metadata(root: &std::path::Path, tree: &StaticTree, state: &State) -> anyhow::Result<()> {
    state.locked(|| {
        metadata::sign_data_folder(root, tree, metadata::DEFAULT_TIMESTAMP_LIFETIME)
            .map_err(anyhow::Error::from)
    })?;
    Ok(())
}

fn read_keys(paths: &[PathBuf]) -> anyhow::Result<Vec<skillpkg_index::signing::SecretKey>> {
    paths
        .iter()
        .map(|path| metadata::read_secret_key(path).map_err(anyhow::Error::from))
        .collect()
}

/// Runs `work` on the tree of the registry `root` under its state lock.
fn under_lock<T>(
    root: &std::path::Path,
    places: Places<'_>,
    work: impl FnOnce(&StaticTree) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    let folder = registry_folder(root)?;
    let tree = places.storage(&folder)?.tree();
    with_state(root, &folder.state, places.database, |_, state| {
        state.locked(|| work(&tree))
    })
}

fn keys(command: KeysCommand, places: Places<'_>) -> anyhow::Result<()> {
    match command {
        KeysCommand::Generate { out } => {
            let public = metadata::generate_key(&out)?;
            eprintln!(
                "wrote the secret key {} and the public key {}.pub (id {})",
                out.display(),
                out.display(),
                public.id()
            );
            println!("{}", public.to_base64());
        }
        KeysCommand::Init {
            root,
            root_keys,
            threshold,
            lifetime,
        } => {
            let keys = read_keys(&root_keys)?;
            let first = under_lock(&root, places, |tree| {
                metadata::init(&root, tree, &keys, threshold, lifetime.metadata_lifetime)
                    .map_err(anyhow::Error::from)
            })?;
            eprintln!(
                "signed metadata started: root version 1 with {} root key(s) (threshold {}), index key {}",
                first.roles.root.keyids.len(),
                first.roles.root.threshold,
                first.roles.index.keyids.join(", ")
            );
            eprintln!(
                "clients can pin a root key with `root-key = \"<RW... line>\"` in their registry's config"
            );
        }
        KeysCommand::RotateIndex {
            root,
            root_keys,
            lifetime,
        } => {
            let keys = read_keys(&root_keys)?;
            let next = under_lock(&root, places, |tree| {
                metadata::rotate_index_key(&root, tree, &keys, lifetime.metadata_lifetime)
                    .map_err(anyhow::Error::from)
            })?;
            eprintln!(
                "root version {} lists the new index key {}; a running server signs with it from now on",
                next.version,
                next.roles.index.keyids.join(", ")
            );
        }
        KeysCommand::RotateRoot {
            root,
            signers,
            new_root_keys,
            threshold,
        } => {
            let signers = read_keys(&signers)?;
            let new_keys = parse_keys(&read_key_texts(new_root_keys)?)?;
            let rotation = metadata::Rotation {
                index_key: None,
                root_keys: Some((new_keys, threshold)),
            };
            let next = under_lock(&root, places, |tree| {
                metadata::rotate(tree, &rotation, &signers).map_err(anyhow::Error::from)
            })?;
            eprintln!(
                "root version {} lists the root keys {} (threshold {})",
                next.version,
                next.roles.root.keyids.join(", "),
                next.roles.root.threshold
            );
        }
        KeysCommand::Sign {
            root,
            tree,
            index_key,
            lifetime,
        } => {
            let lifetime = lifetime.metadata_lifetime;
            let version = match (root, tree, index_key) {
                (_, Some(tree), Some(key)) => metadata::Signer::for_tree(
                    StaticTree::new(tree),
                    metadata::read_secret_key(&key)?,
                    lifetime,
                )
                .sign()?,
                (Some(root), _, _) => under_lock(&root, places, |tree| {
                    let signer =
                        metadata::Signer::open(&root, tree, lifetime)?.ok_or_else(|| {
                            anyhow::anyhow!(
                                "{} has no index key; run `skillpkg-registry keys init` first",
                                root.display()
                            )
                        })?;
                    signer.sign().map_err(anyhow::Error::from)
                })?,
                _ => unreachable!("clap requires --root or --tree with --index-key"),
            };
            eprintln!("signed timestamp version {version}");
        }
    }
    Ok(())
}

/// Reads each argument as a key file when it names one, else as a key line.
fn read_key_texts(texts: Vec<String>) -> anyhow::Result<Vec<String>> {
    texts
        .into_iter()
        .map(|text| {
            if text.parse::<skillpkg_index::signing::PublicKey>().is_ok() {
                return Ok(text);
            }
            match fs_err::read_to_string(&text) {
                Ok(file) => Ok(file),
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(text),
                Err(error) => Err(error.into()),
            }
        })
        .collect()
}
