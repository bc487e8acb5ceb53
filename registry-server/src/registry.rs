//! The registry: the static tree, the private state, and the operations that
//! change them. The HTTP layer (`server`) is a thin shell over this.
//!
//! The database decides, the tree follows (docs/registry.md, "At scale"):
//! a publish claims its name@version in the database (one winner, whatever
//! the number of servers sharing it), writes the version's files, then
//! commits; every index file is rendered from the database's rows and
//! written again until what was written is of its newest revision, so
//! concurrent publishes on any number of servers all land, of the same
//! version exactly one wins, and no index line is lost. The checks that
//! take time (verifying the signature, unpacking, validating) run before
//! the claim; what they relied on that can change meanwhile (the skill's
//! keys) is checked again under the state lock.
//!
//! A publish writes, in this order: the key it registers (on a skill's first
//! signed publish), the signature, the provenance, the archive, then
//! (committed) the index file, the skill's plugin repository and the
//! search shard that lists the skill; a moment later, the marketplace and
//! the discovery index.

use std::path::PathBuf;
use std::time::Duration;

use skillpkg_index::archive::DEFAULT_MAX_BYTES;
use skillpkg_index::registry::tree::{StaticTree, TreeError, VersionFiles};
use skillpkg_index::registry::{
    AllRecords, CONFIG_PATH, DEFAULT_DL_TEMPLATE, DISCOVERY_PATH, DiscoveryEntry, DiscoveryIndex,
    FORMAT_VERSION, IndexRecord, KeysFile, RegistryConfig, SEARCH_VERSION, SearchEntry,
    SearchIndex, ShardCount, latest, parse_index_file, render_index_line, render_json,
};
use skillpkg_index::signing::PublicKey;
use skillpkg_index::skill::SkillName;

use crate::db::{BinRevisions, CatalogRow, Claim, Derived, IndexLines, NewEvent, now_ms};
use crate::downloads::{Downloads, DownloadsError};
use crate::keys::{self, KeyChangeError};
use crate::layout::DataFolder;
use crate::marketplace::{self, Listed, MarketplaceName, Plugin, git::ObjectId};
use crate::metadata::{DEFAULT_TIMESTAMP_LIFETIME, KeysError, Signer};
use crate::publish::{
    ConfusableName, Policy, PublishError, SignerKeys, Upload, check_new_name, verify_archive,
    without_build,
};
use crate::report::error_chain;
use crate::state::{OwnerChangeError, State, StateError};
use crate::storage::Storage;
use crate::text::TextError;
use crate::web;

/// How a registry is set up.
#[derive(Clone, Debug)]
pub struct Options {
    /// The URL clients reach the tree at, when one was given: the discovery
    /// index's URLs are under it, else relative to the index, so that a
    /// tree served by another host (nginx, a CDN) never points back here.
    pub public_url: Option<String>,
    /// The URL clients reach this server's API at, for `config.json`'s
    /// `api`: the public URL, else the address it listens on.
    pub api_url: Option<String>,
    pub max_skill_bytes: u64,
    /// Whether unsigned publishes are refused (`require-signatures` in
    /// `config.json`).
    pub require_signatures: bool,
    /// The audit severity at which a publish is refused (`None`: never).
    pub audit_refuse: Option<skillpkg_index::audit::Severity>,
    /// Whether reading the tree needs a token (`auth-required` in
    /// `config.json`): a private registry.
    pub auth_required: bool,
    /// How long a signed snapshot and timestamp are valid (when the data
    /// folder has an index key).
    pub timestamp_lifetime: jiff::SignedDuration,
    /// Serve the tree exactly as it is (a mirror): nothing is written at
    /// start, every change through the API is refused, and `auth-required`
    /// and the size limit come from the tree's `config.json`.
    pub read_only: bool,
    /// How many downloads make a skill popular enough that a new name one
    /// edit from its name is refused (`--confusable-min-downloads`).
    pub confusable_min_downloads: u64,
    /// How long a publish holds its version's claim before another may
    /// take it over (`--claim-lifetime`).
    pub claim_lifetime: Duration,
    /// The most skills a shard of the search index is meant to hold: a
    /// registry with more gets more shards (checked at start and every
    /// [`RECOVERY_PERIOD`]).
    pub skills_per_shard: usize,
    /// The plugin marketplace's name (`--marketplace-name`); `None`: named
    /// after the host of the public URL, else of the API URL.
    pub marketplace_name: Option<MarketplaceName>,
}

/// The default of [`Options::confusable_min_downloads`].
pub const DEFAULT_CONFUSABLE_MIN_DOWNLOADS: u64 = 100;

impl Default for Options {
    fn default() -> Self {
        Self {
            public_url: None,
            api_url: None,
            max_skill_bytes: DEFAULT_MAX_BYTES,
            require_signatures: false,
            audit_refuse: Some(skillpkg_index::audit::Severity::High),
            auth_required: false,
            timestamp_lifetime: DEFAULT_TIMESTAMP_LIFETIME,
            read_only: false,
            confusable_min_downloads: DEFAULT_CONFUSABLE_MIN_DOWNLOADS,
            claim_lifetime: CLAIM_LIFETIME,
            skills_per_shard: skillpkg_index::registry::SKILLS_PER_SHARD,
            marketplace_name: None,
        }
    }
}

/// A publish request, as sent: the multipart parts of `PUT /api/v1/skills`.
#[derive(Clone, Copy, Debug)]
pub struct PublishRequest<'a> {
    pub name: &'a str,
    pub version: &'a str,
    /// The `.tgz`.
    pub tarball: &'a [u8],
    /// The `.minisig`, for a signed publish.
    pub signature: Option<&'a [u8]>,
    /// The signer's public key (base64 line or key file), which a skill's
    /// first signed publish registers; ignored once the skill has keys.
    pub key: Option<&'a [u8]>,
    /// The `.intoto.jsonl`, signed by the same key as the archive.
    pub provenance: Option<&'a [u8]>,
}

/// Why an operation failed, in the terms of the API.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}")]
    Forbidden(String),
    #[error("{0}")]
    TooLarge(String),
    /// The registry's audit refused the upload.
    #[error("{0}")]
    AuditRefused(String),
    /// A publisher key whose id is registered with another key.
    #[error("{0}")]
    KeyIdTaken(String),
    /// An owner to add who is not a user of the registry.
    #[error(
        "`{user}` is not a user of this registry, so it cannot own `{name}`: a user is a name the registry's admin created a token for (`skillpkg-registry token create --user {user}`)"
    )]
    UnknownUser { user: String, name: String },
    /// Text to store that holds a control character.
    #[error("{0}")]
    ControlCharacter(String),
    #[error("`{user}` does not own `{name}`; ask an owner ({owners}) to add you")]
    NotOwner {
        user: String,
        name: String,
        owners: String,
    },
    #[error("{0}")]
    NotFound(String),
    #[error("{name}@{version} is already published; versions are immutable, publish a new version")]
    Exists { name: String, version: String },
    /// Another publish of the same version is under way.
    #[error(
        "{name}@{version} is being published by another request right now; if that one fails, publish again in a moment"
    )]
    Busy { name: String, version: String },
    /// A version that differs from a published one only in build metadata
    /// (`1.0.0+build2` beside `1.0.0`): semver, like cargo, counts them as
    /// one version, which resolution could not tell apart.
    #[error(
        "{name}@{version} is the same version as the published {name}@{existing}: versions that differ only in build metadata (`+...`) are one version; publish a new version"
    )]
    SameVersion {
        name: String,
        version: String,
        existing: String,
    },
    /// The registry cannot be served as asked.
    #[error("{0}")]
    Setup(String),
    #[error(transparent)]
    Tree(#[from] TreeError),
    #[error(transparent)]
    State(#[from] StateError),
    #[error(transparent)]
    Metadata(#[from] KeysError),
    /// A new name too like an existing one.
    #[error(transparent)]
    Confusable(#[from] ConfusableName),
    #[error(transparent)]
    Downloads(#[from] DownloadsError),
}

impl From<PublishError> for RegistryError {
    fn from(error: PublishError) -> Self {
        match error {
            PublishError::TooLarge { .. } => Self::TooLarge(error.to_string()),
            PublishError::Io(source) => Self::Tree(TreeError::Io {
                path: PathBuf::from("(temporary folder)"),
                source,
            }),
            PublishError::UnregisteredKey { ref name, .. } => {
                let hint = add_key_hint(name);
                Self::Forbidden(format!("{error}; {hint}"))
            }
            PublishError::Audit { .. } => Self::AuditRefused(error.to_string()),
            PublishError::Text { .. } => Self::ControlCharacter(error_chain(&error)),
            PublishError::NoKey { .. } => Self::BadRequest(format!(
                "{error}: send the publisher's public key in the `key` part (`skillpkg publish` does); the first signed publish registers it"
            )),
            other => Self::BadRequest(error_chain(&other)),
        }
    }
}

impl From<KeyChangeError> for RegistryError {
    fn from(error: KeyChangeError) -> Self {
        match error {
            KeyChangeError::Tree(error) => Self::Tree(error),
            KeyChangeError::State(error) => Self::State(error),
            KeyChangeError::IdTaken { .. } => Self::KeyIdTaken(error.to_string()),
            other => Self::BadRequest(error_chain(&other)),
        }
    }
}

impl From<TextError> for RegistryError {
    fn from(error: TextError) -> Self {
        match error {
            TextError::Control { .. } => Self::ControlCharacter(error.to_string()),
            TextError::TooLong { .. } => Self::BadRequest(error.to_string()),
        }
    }
}

/// How a key gets added to `name`, for error messages.
fn add_key_hint(name: &str) -> String {
    format!(
        "an owner can add a key with `PUT /api/v1/skills/{name}/keys` and the body {{\"add\":[\"<public key>\"]}}, or the registry's admin with `skillpkg-registry key add --skill {name} --key <public key>`; then publish again"
    )
}

/// The longest yank reason kept: it is in the version's index line, which
/// every client that resolves the skill reads.
pub const MAX_YANK_REASON_CHARS: usize = 1000;

/// The default of [`Options::claim_lifetime`]: how long a claimed version
/// stays claimed by a publish that does not finish. A publish's writes are
/// bounded by the store's timeouts (well under a minute), so a claim this
/// old is of a publish that died.
pub const CLAIM_LIFETIME: Duration = Duration::from_secs(600);

/// How long the writer of the discovery index waits after a change for
/// more, before it writes: the most the discovery index lags a publish,
/// unless writing it took more than a tenth of that (a large registry),
/// when it waits ten times that long.
pub const DISCOVERY_DELAY: Duration = Duration::from_secs(1);

/// How long a server may sign for before another may take the signing
/// over ([`Registry::sign_metadata`]): far above a signing's time.
pub const SIGNING_LEASE: Duration = Duration::from_secs(120);

/// How often a server looks for claims that expired and index files left
/// unwritten ([`Registry::recover`]).
pub const RECOVERY_PERIOD: Duration = Duration::from_secs(60);

/// A registry: its tree (in a folder or a bucket) and its state.
#[derive(Debug)]
pub struct Registry {
    tree: StaticTree,
    /// Where the tree is.
    storage: Storage,
    state: State,
    config: RegistryConfig,
    options: Options,
    /// The index's revision the discovery index was last written at by
    /// this server; held while it is written, so that one server writes it
    /// one at a time, and not again for a revision it wrote.
    discovery_written: tokio::sync::Mutex<i64>,
    /// Wakes the writer of the discovery index after a change.
    discovery_wanted: tokio::sync::Notify,
    /// Re-signs the snapshot and timestamp after every change, when the
    /// registry has signed metadata.
    signer: Option<Signer>,
    /// This server's id as the holder of the signing lease.
    signer_id: String,
    /// How many times each skill's archives were served.
    downloads: Downloads,
    /// How the plugin marketplace is written; `None` when the registry
    /// knows no URL to name its repositories by (or writes nothing).
    marketplace: Option<marketplace::Settings>,
    /// The commit of each version in its skill's repository, as written
    /// or read here: a version's commit never changes, so this is never
    /// stale.
    commits: std::sync::Mutex<std::collections::HashMap<(SkillName, semver::Version), ObjectId>>,
    /// A lock a skill, held from reading its index lines to writing its
    /// plugin repository from them: two writes of one repository in this
    /// server never interleave, and a later one writes lines at least as
    /// new. (Servers sharing a bucket do not share these; each write
    /// repairs what an interleaving left, see
    /// [`marketplace::write_plugin`].)
    plugin_writes: std::sync::Mutex<std::collections::HashMap<SkillName, PluginLock>>,
}

/// The lock of one skill's plugin repository.
type PluginLock = std::sync::Arc<tokio::sync::Mutex<()>>;

/// Returns what `mutex` guards, even if a thread panicked while holding
/// it: the maps guarded here are caches a panic cannot leave half-changed.
fn locked<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Registry {
    /// Opens the registry of the data folder `folder` whose tree is in
    /// `storage` (its `public/`, or a bucket), recovering from a crash:
    /// what a publish that never committed left is removed, and an index
    /// file a server did not write after its commit is written. Returns
    /// the registry and what was removed.
    ///
    /// A tree that predates the database's versions (a registry of an
    /// earlier skillpkg) has its index files imported once.
    ///
    /// A read-only registry (a mirror) writes nothing, not even its state
    /// folder, and needs a token for every read when its `config.json` says
    /// `auth-required` whatever `options` say: a mirror of a private
    /// registry holds private skills.
    pub async fn open(
        folder: &DataFolder,
        storage: Storage,
        mut options: Options,
        state: State,
    ) -> Result<(Self, Vec<String>), RegistryError> {
        let tree = storage.tree();
        let (config, signer, downloads) = if options.read_only {
            // Served as it is: nothing is written, nothing is signed.
            let config = tokio::task::block_in_place(|| tree.read_config())?
                .unwrap_or_else(|| RegistryConfig::read_only(options.max_skill_bytes));
            if options.auth_required && !config.auth_required {
                return Err(RegistryError::Setup(format!(
                    "--auth-required, but {} says `\"auth-required\": false`: clients would not send their tokens. Serve it without --auth-required, or mirror a private registry",
                    tree.root().join(CONFIG_PATH).display()
                )));
            }
            options.auth_required = config.auth_required;
            options.max_skill_bytes = config.max_skill_bytes;
            (config, None, Downloads::off())
        } else {
            let config = RegistryConfig {
                v: FORMAT_VERSION,
                dl: DEFAULT_DL_TEMPLATE.into(),
                api: options
                    .api_url
                    .as_ref()
                    .map(|url| format!("{}/api/v1", url.trim_end_matches('/'))),
                auth_required: options.auth_required,
                max_skill_bytes: options.max_skill_bytes,
                require_signatures: options.require_signatures,
            };
            let downloads = Downloads::open(&folder.state, state.db()).await?;
            let signer = Signer::open(&folder.root, &tree, options.timestamp_lifetime)?;
            (config, signer, downloads)
        };
        let marketplace = options
            .public_url
            .as_deref()
            .or(options.api_url.as_deref())
            .filter(|_| !options.read_only)
            .map(|url| marketplace::Settings::new(url, options.marketplace_name.clone()));
        let registry = Self {
            tree,
            storage,
            state,
            config,
            options,
            marketplace,
            commits: Default::default(),
            plugin_writes: Default::default(),
            discovery_written: tokio::sync::Mutex::new(0),
            discovery_wanted: tokio::sync::Notify::new(),
            signer,
            signer_id: claim_id()?,
            downloads,
        };
        let mut removed = Vec::new();
        if !registry.options.read_only {
            registry.import_index_files().await?;
            keys::import_keys_files(registry.state.db(), &registry.tree).await?;
            keys::register_key_ids(registry.state.db()).await?;
            if registry
                .state
                .db()
                .fill_derived(DERIVED)
                .await
                .map_err(StateError::from)?
            {
                tracing::debug!(
                    "filled the catalog and the lookup keys from the recorded versions"
                );
            }
            removed = registry.recover(true).await?;
            let config = &registry.config;
            tokio::task::block_in_place(|| registry.tree.write_config(config))?;
            registry.write_discovery().await?;
            registry.write_pages().await?;
        }
        registry.sign_metadata(true).await?;
        Ok((registry, removed))
    }

    /// Writes the web pages' shell (the home page and the assets, which
    /// this server's version decides) and the page of every skill that has
    /// none yet (a tree written before the pages, or imported), or of every
    /// skill when the pages there were written by another version of them.
    async fn write_pages(&self) -> Result<(), RegistryError> {
        let stale = tokio::task::block_in_place(|| web::write_shell(&self.tree))?;
        let paged: std::collections::BTreeSet<String> = if stale {
            std::collections::BTreeSet::new()
        } else {
            tokio::task::block_in_place(|| self.tree.list("skills"))?
                .into_iter()
                .collect()
        };
        let all = self.all_records().await?;
        let limits = web::limits(self.config.max_skill_bytes);
        for (name, records) in &all {
            if !paged.contains(&web::page_path(name)) {
                tokio::task::block_in_place(|| {
                    web::write_skill(&self.tree, name, records, &limits)
                })?;
            }
        }
        Ok(())
    }

    /// Records the index files of a tree that predates the database's
    /// versions in it, once.
    async fn import_index_files(&self) -> Result<(), RegistryError> {
        let db = self.state.db();
        if db.has_versions().await.map_err(StateError::from)? {
            return Ok(());
        }
        let records = tokio::task::block_in_place(|| self.tree.read_all())?;
        if records.is_empty() {
            return Ok(());
        }
        let mut rows = Vec::new();
        for (name, versions) in &records {
            let mut versions: Vec<&IndexRecord> = versions.iter().collect();
            versions.sort_by_key(|record| record.published);
            for record in versions {
                rows.push((
                    name.to_string(),
                    without_build(&record.vers).to_string(),
                    record.vers.to_string(),
                    record.cksum.to_string(),
                    render_index_line(record),
                ));
            }
        }
        let from = self.tree.root().display().to_string();
        if db
            .import_versions(&rows, &from)
            .await
            .map_err(StateError::from)?
        {
            tracing::info!(
                "recorded the {} versions of {} skills of {from} in the database",
                rows.len(),
                records.len()
            );
        }
        Ok(())
    }

    /// Removes what publishes that never committed left, and writes the
    /// index files a server did not write after its commit. At start
    /// (`starting`) on a folder, every claim is of a publish that died
    /// with the last server (a folder has one server), and the folder is
    /// searched for archives no version lists; on a bucket, and later,
    /// claims older than the claim lifetime are. Returns what was removed.
    pub async fn recover(&self, starting: bool) -> Result<Vec<String>, RegistryError> {
        let db = self.state.db();
        let folder = starting && self.tree.folder().is_some();
        let before = if folder {
            i64::MAX
        } else {
            self.claims_expired_before()
        };
        let mut removed = Vec::new();
        for (skill, version, claim) in db.stale_claims(before).await.map_err(StateError::from)? {
            let (Ok(name), Ok(parsed)) = (
                skill.parse::<SkillName>(),
                version.parse::<semver::Version>(),
            ) else {
                continue;
            };
            tokio::task::block_in_place(|| self.tree.remove_version(&name, &parsed))?;
            db.release_claim(&skill, &without_build(&parsed).to_string(), &claim)
                .await
                .map_err(StateError::from)?;
            removed.push(format!("dl/{skill}/{version}"));
        }
        if folder {
            let published = self.all_records().await?;
            let found = tokio::task::block_in_place(|| self.tree.recover(&published))?;
            removed.extend(found);
            removed.sort();
            removed.dedup();
        }
        for skill in db.unrendered_keys().await.map_err(StateError::from)? {
            if let Ok(name) = skill.parse::<SkillName>() {
                keys::write_keys_file(db, &self.tree, &name).await?;
            }
        }
        for skill in db.unrendered().await.map_err(StateError::from)? {
            if let Ok(name) = skill.parse::<SkillName>() {
                tracing::info!(
                    "writing the index file of `{name}`, left unwritten by a server that stopped"
                );
                self.write_index(&name).await?;
            }
        }
        // The search index: more shards when the registry outgrew them,
        // and the shards a server did not write after its commit.
        let shards = self.search_shards(true).await?;
        let mut lagging: Vec<u32> = db
            .unrendered_bins()
            .await
            .map_err(StateError::from)?
            .into_iter()
            .map(|bin| shards.shard_of_bin(bin))
            .collect();
        lagging.dedup();
        for shard in lagging {
            self.write_shard(shards, shard, false).await?;
        }
        Ok(removed)
    }

    /// Claims made before this (milliseconds since 1970) have expired.
    fn claims_expired_before(&self) -> i64 {
        now_ms() - i64::try_from(self.options.claim_lifetime.as_millis()).unwrap_or(i64::MAX)
    }

    /// Every published version, from the database.
    async fn all_records(&self) -> Result<AllRecords, RegistryError> {
        let lines = self
            .state
            .db()
            .all_lines()
            .await
            .map_err(StateError::from)?;
        let mut all = AllRecords::new();
        let mut by_skill: std::collections::BTreeMap<String, String> = Default::default();
        for (skill, line) in lines {
            let text = by_skill.entry(skill).or_default();
            text.push_str(&line);
            text.push('\n');
        }
        for (skill, text) in by_skill {
            let Ok(name) = skill.parse::<SkillName>() else {
                continue;
            };
            let records = parse_index_file(&name, &text).map_err(TreeError::from)?;
            all.insert(name, records);
        }
        Ok(all)
    }

    /// Writes the index file of `name` from the database, again until what
    /// it wrote is of the newest revision: whatever order the writes of
    /// several servers land in, the last is of the newest revision.
    async fn write_index(&self, name: &SkillName) -> Result<(), RegistryError> {
        let db = self.state.db();
        loop {
            let _writing = self.plugin_lock(name).lock_owned().await;
            let IndexLines { revision, lines } = db
                .index_lines(name.as_str())
                .await
                .map_err(StateError::from)?;
            let records = parse_index_file(name, &lines.join("\n")).map_err(TreeError::from)?;
            tokio::task::block_in_place(|| {
                self.tree.write_index(name, &records)?;
                // The skill's web page, from the same lines.
                web::write_skill(
                    &self.tree,
                    name,
                    &records,
                    &web::limits(self.config.max_skill_bytes),
                )
            })?;
            // And its plugin repository.
            self.write_plugin(name, &records);
            if db
                .index_revision(name.as_str())
                .await
                .map_err(StateError::from)?
                == revision
            {
                db.mark_rendered(name.as_str(), revision)
                    .await
                    .map_err(StateError::from)?;
                return Ok(());
            }
        }
    }

    /// How many shards the search index has. Decides it when no server
    /// has yet, or, with `grow` (at start and in the periodic check, never
    /// in a publish), when the registry outgrew it (never fewer), and then
    /// when `search.json` does not say the decided count yet (a new count,
    /// or a server that stopped while writing it) writes every shard of
    /// it, then `search.json`. A publish meanwhile writes its shard at the
    /// decided count, which `search.json` names once every shard is there.
    async fn search_shards(&self, grow: bool) -> Result<ShardCount, RegistryError> {
        let db = self.state.db();
        let (mut decided, mut written) = db.search_shards().await.map_err(StateError::from)?;
        if !grow && let Some(decided) = ShardCount::new(decided) {
            return Ok(decided);
        }
        if decided == 0 || grow {
            let skills = db.catalog_size().await.map_err(StateError::from)?;
            let wanted = ShardCount::for_skills(skills, self.options.skills_per_shard);
            if wanted.get() > decided {
                db.decide_search_shards(decided, wanted.get())
                    .await
                    .map_err(StateError::from)?;
                // This server's count, or the one another decided first.
                (decided, written) = db.search_shards().await.map_err(StateError::from)?;
            }
        }
        let shards = ShardCount::new(decided).ok_or_else(|| {
            RegistryError::Setup(format!(
                "the database says the search index has {decided} shards, which is not 1, 16 or 256"
            ))
        })?;
        if written != decided {
            tracing::info!(
                shards = decided,
                "writing the search index in {decided} shards"
            );
            for shard in 0..shards.get() {
                self.write_shard(shards, shard, true).await?;
            }
            tokio::task::block_in_place(|| self.tree.write_search_root(shards))?;
            db.mark_search_shards_written(decided)
                .await
                .map_err(StateError::from)?;
            // The shards of the count before, which nothing names now (a
            // reader that read `search.json` just before finds them gone,
            // and lists those skills at its next read).
            if let Some(before) = ShardCount::new(written).filter(|before| *before != shards) {
                tokio::task::block_in_place(|| self.tree.remove_search_shards(before))?;
            }
        }
        Ok(shards)
    }

    /// Writes shard `shard` of the search index from the catalog rows of
    /// its bins, again until what was written is of their newest
    /// revisions; not at all (unless `always`) when it was written at
    /// them already (a burst of publishes in one shard is written once or
    /// twice, not once each).
    async fn write_shard(
        &self,
        shards: ShardCount,
        shard: u32,
        always: bool,
    ) -> Result<(), RegistryError> {
        let db = self.state.db();
        let bins = shards.bins(shard);
        let mut first = true;
        loop {
            let (revisions, rows): (BinRevisions, _) = db
                .search_shard(bins.clone())
                .await
                .map_err(StateError::from)?;
            if first && !always && revisions.lagging.is_empty() {
                return Ok(());
            }
            first = false;
            let mut skills = Vec::with_capacity(rows.len());
            for (row, downloads) in &rows {
                let (name, version, _) = catalog_entry(row)?;
                skills.push(SearchEntry {
                    name,
                    version,
                    description: row.description.clone(),
                    versions: usize::try_from(row.versions).unwrap_or(0),
                    downloads: *downloads,
                });
            }
            let bytes = render_json(&SearchIndex {
                v: SEARCH_VERSION,
                skills,
            });
            let path = shards.path(shard);
            tokio::task::block_in_place(|| self.tree.write_file(&path, &bytes))?;
            let now = db
                .search_bins(bins.clone())
                .await
                .map_err(StateError::from)?;
            if now.same(&revisions) {
                db.mark_bins_rendered(&revisions)
                    .await
                    .map_err(StateError::from)?;
                return Ok(());
            }
        }
    }

    /// Rewrites the discovery index from the database's catalog (a row a
    /// skill), again until what was written is of the index's newest
    /// revision; not at all when this server wrote it at that revision
    /// already (a burst of publishes is written once or twice, not once
    /// each).
    async fn write_discovery(&self) -> Result<(), RegistryError> {
        let mut written = self.discovery_written.lock().await;
        let db = self.state.db();
        let mut revision = db.index_counter().await.map_err(StateError::from)?;
        if *written >= revision && *written != 0 {
            return Ok(());
        }
        loop {
            let catalog = db.catalog().await.map_err(StateError::from)?;
            let mut skills = Vec::with_capacity(catalog.len());
            for row in &catalog {
                let (name, version, cksum) = catalog_entry(row)?;
                skills.push(DiscoveryEntry::of(
                    &name,
                    &version,
                    &row.description,
                    cksum,
                    &self.config,
                    self.options.public_url.as_deref(),
                ));
            }
            let bytes = render_json(&DiscoveryIndex::new(skills));
            self.write_marketplace(&catalog).await;
            let listed: Vec<web::Listed> = catalog
                .iter()
                .filter_map(|row| {
                    Some(web::Listed {
                        name: row.skill.parse().ok()?,
                        version: row.version.clone(),
                        description: row.description.clone(),
                    })
                })
                .collect();
            tokio::task::block_in_place(|| {
                self.tree.write_file(DISCOVERY_PATH, &bytes)?;
                // The web page listing every skill, from the same rows.
                web::write_list(&self.tree, &listed)
            })?;
            let now = db.index_counter().await.map_err(StateError::from)?;
            if now == revision {
                *written = revision;
                return Ok(());
            }
            revision = now;
        }
    }

    /// Writes the repository of `name` for its index lines `records`
    /// (docs/registry.md, "Claude Code plugin marketplace"), and returns
    /// it. A failure is logged, not returned: the change it follows is
    /// made, and the skill's next change, or the marketplace's next
    /// writing, writes the repository again. The caller holds the skill's
    /// [`Registry::plugin_lock`], taken before it read `records`.
    fn write_plugin(&self, name: &SkillName, records: &[IndexRecord]) -> Option<Plugin> {
        if self.options.read_only {
            return None;
        }
        let limits = web::limits(self.config.max_skill_bytes);
        let written = tokio::task::block_in_place(|| {
            marketplace::write_plugin(&self.tree, name, records, &limits)
        });
        match written {
            Ok(plugin) => {
                let mut commits = locked(&self.commits);
                for (version, commit) in &plugin.commits {
                    commits.insert((name.clone(), version.clone()), *commit);
                }
                Some(plugin)
            }
            Err(error) => {
                tracing::error!(
                    skill = %name,
                    error = error_chain(&error),
                    "cannot write the skill's plugin repository"
                );
                None
            }
        }
    }

    /// The lock of the plugin repository of `name`, to hold from reading
    /// its index lines to writing the repository.
    fn plugin_lock(&self, name: &SkillName) -> PluginLock {
        std::sync::Arc::clone(locked(&self.plugin_writes).entry(name.clone()).or_default())
    }

    /// The commit of `name@version` in the skill's repository: known here,
    /// else read from the repository's refs, else (a tree written before
    /// the marketplace, or a publish by another server whose repository is
    /// on its way) the repository written from the database's lines.
    async fn commit_of(
        &self,
        name: &SkillName,
        version: &semver::Version,
    ) -> Result<Option<ObjectId>, RegistryError> {
        let key = (name.clone(), version.clone());
        let known = locked(&self.commits).get(&key).copied();
        if known.is_some() {
            return Ok(known);
        }
        if let Some(commit) =
            tokio::task::block_in_place(|| marketplace::commit_of(&self.tree, name, version))?
        {
            locked(&self.commits).insert(key, commit);
            return Ok(Some(commit));
        }
        let _writing = self.plugin_lock(name).lock_owned().await;
        let IndexLines { lines, .. } = self
            .state
            .db()
            .index_lines(name.as_str())
            .await
            .map_err(StateError::from)?;
        let records = parse_index_file(name, &lines.join("\n")).map_err(TreeError::from)?;
        Ok(self
            .write_plugin(name, &records)
            .and_then(|plugin| plugin.commits.get(version).copied()))
    }

    /// Writes the plugin marketplace of the catalog's rows (a skill each,
    /// at its newest version that is not yanked). A skill whose commit
    /// cannot be had is left out, and a failure logged: the next change
    /// writes the marketplace again.
    async fn write_marketplace(&self, catalog: &[CatalogRow]) {
        let Some(settings) = &self.marketplace else {
            return;
        };
        let mut listed = Vec::with_capacity(catalog.len());
        for row in catalog {
            let Ok((name, version, _)) = catalog_entry(row) else {
                continue;
            };
            match self.commit_of(&name, &version).await {
                Ok(Some(commit)) => listed.push(Listed {
                    name,
                    version,
                    description: row.description.clone(),
                    commit,
                }),
                // Its repository could not be written: logged.
                Ok(None) => {}
                Err(error) => tracing::error!(
                    skill = %name,
                    error = error_chain(&error),
                    "cannot find the commit of the skill's newest version for the marketplace"
                ),
            }
        }
        let written = tokio::task::block_in_place(|| {
            marketplace::write_marketplace(&self.tree, settings, &listed)
        });
        if let Err(error) = written {
            tracing::error!(
                error = error_chain(&error),
                "cannot write the plugin marketplace"
            );
        }
    }

    /// Writes the discovery index after changes, for as long as the
    /// server runs: woken by each change, it waits [`DISCOVERY_DELAY`] for
    /// more (a burst is written once), then writes it from the catalog.
    /// The discovery index is one file listing every skill: writing it in
    /// each publish would make a publish's cost grow with the registry.
    pub async fn write_discovery_after_changes(self: std::sync::Arc<Self>) {
        let mut took = Duration::ZERO;
        loop {
            self.discovery_wanted.notified().await;
            // At least ten times the last write's time: however large the
            // registry, the rewrites take a tenth of the server's time at
            // most.
            tokio::time::sleep(DISCOVERY_DELAY.max(took * 10)).await;
            let started = std::time::Instant::now();
            if let Err(error) = self.write_discovery().await {
                tracing::error!(
                    error = error_chain(&error),
                    "cannot write the discovery index"
                );
            }
            took = started.elapsed();
        }
    }

    /// After a change of `name`'s index lines was committed: writes its
    /// index file, the download counts, the search shard that lists it and
    /// the signed metadata, and wakes the writer of the discovery index.
    async fn after_change(&self, name: &SkillName) -> Result<(), RegistryError> {
        self.write_index(name).await?;
        // The counts first, this server's, for the shard. The change is
        // made: counts that cannot be written now are written by the next
        // flush, and must not fail it.
        if let Err(error) = self.flush_downloads().await {
            tracing::error!(
                error = error_chain(&error),
                "cannot write the download counts"
            );
        }
        let shards = self.search_shards(false).await?;
        self.write_shard(shards, shards.shard_of(name.as_str()), false)
            .await?;
        self.discovery_wanted.notify_one();
        self.sign_metadata(false).await?;
        Ok(())
    }

    /// Re-signs the snapshot and timestamp, when the registry has signed
    /// metadata, hashing only the files written since the last signing
    /// (docs/registry.md, "At scale"). One server of those sharing the
    /// database signs at a time, the holder of the signing lease: a server
    /// that finds it held leaves its change to the holder, which looks
    /// for changes again when it is done, and signs them (group commit).
    /// Signs even when nothing changed with `always` (a timestamp about to
    /// expire). Returns the new timestamp version, if this server signed.
    pub async fn sign_metadata(&self, always: bool) -> Result<Option<u64>, RegistryError> {
        let Some(signer) = &self.signer else {
            return Ok(None);
        };
        let db = self.state.db();
        let mut signed = None;
        loop {
            let unsigned = db.unsigned().await.map_err(StateError::from)?;
            if unsigned.is_empty() && (signed.is_some() || !always) {
                return Ok(signed);
            }
            let now = now_ms();
            let lease = i64::try_from(SIGNING_LEASE.as_millis()).unwrap_or(i64::MAX);
            if !db
                .take_signing_lease(&self.signer_id, now, now.saturating_add(lease))
                .await
                .map_err(StateError::from)?
            {
                return Ok(signed);
            }
            let result = self.sign_unsigned(signer).await;
            let released = db.release_signing_lease(&self.signer_id).await;
            signed = Some(result?);
            released.map_err(StateError::from)?;
        }
    }

    /// Signs what was written since the last signing (under the state
    /// lock too, so a running server and the admin commands of its
    /// machine never sign at once), and notes it signed.
    async fn sign_unsigned(&self, signer: &Signer) -> Result<u64, RegistryError> {
        let db = self.state.db();
        // Read before the files are: what is written after is signed by
        // the next signing.
        let unsigned = db.unsigned().await.map_err(StateError::from)?;
        let mut paths = vec![skillpkg_index::registry::SEARCH_PATH.to_owned()];
        let names = |skills: &[(String, i64)]| -> Vec<SkillName> {
            skills
                .iter()
                .filter_map(|(skill, _)| skill.parse().ok())
                .collect()
        };
        paths.extend(
            names(&unsigned.index_files)
                .iter()
                .map(skillpkg_index::registry::index_file_path),
        );
        paths.extend(
            names(&unsigned.keys_files)
                .iter()
                .map(skillpkg_index::registry::keys_path),
        );
        if let Some(shards) = ShardCount::new(unsigned.shards_written) {
            for (bin, _) in &unsigned.bins {
                let bin = u8::try_from(*bin).unwrap_or(u8::MAX);
                paths.push(shards.path(shards.shard_of_bin(bin)));
            }
        }
        if let Some((written, signed)) = unsigned.shards {
            for count in [written, signed].into_iter().filter_map(ShardCount::new) {
                paths.extend(count.paths());
            }
        }
        paths.sort();
        paths.dedup();
        let version = tokio::task::block_in_place(|| {
            self.state.locked(|| {
                signer
                    .sign_changes(Some(&paths))
                    .map_err(RegistryError::from)
            })
        })?;
        db.mark_signed(&unsigned).await.map_err(StateError::from)?;
        Ok(version)
    }

    /// Counts a download of an archive of `name`.
    pub fn record_download(&self, name: &SkillName) {
        self.downloads.record(name);
    }

    /// Adds the downloads counted here to the database's totals, and
    /// reads everyone's back.
    pub async fn flush_downloads(&self) -> Result<(), RegistryError> {
        Ok(self.downloads.flush().await?)
    }

    /// Returns how long signed metadata is valid, when the registry has it.
    pub fn metadata_lifetime(&self) -> Option<jiff::SignedDuration> {
        self.signer.as_ref().map(Signer::lifetime)
    }

    /// Returns the static tree.
    pub fn tree(&self) -> &StaticTree {
        &self.tree
    }

    /// Returns where the tree is.
    pub fn storage(&self) -> &Storage {
        &self.storage
    }

    /// Returns the private state.
    pub fn state(&self) -> &State {
        &self.state
    }

    /// Returns true if and only if reading the tree needs a token.
    pub fn auth_required(&self) -> bool {
        self.options.auth_required
    }

    /// Returns true if and only if the registry is served as it is (a
    /// mirror), changing nothing.
    pub fn read_only(&self) -> bool {
        self.options.read_only
    }

    /// Returns the largest archive accepted.
    pub fn max_skill_bytes(&self) -> u64 {
        self.options.max_skill_bytes
    }

    /// Publishes a skill version for `user`.
    ///
    /// A signed publish must be signed by one of the skill's registered keys
    /// or, when it has none yet, by the key sent with it, which it then
    /// registers. Once a skill has keys every publish of it must be signed,
    /// whatever the registry's `require-signatures`: otherwise a stolen token
    /// would be enough to publish a version its owners never signed.
    ///
    /// Runs to its end once started: call it from a task of its own, not
    /// from a future that a client's disconnection may drop halfway. Its
    /// blocking parts (checking the archive, writing files) run in place
    /// of the async thread (`block_in_place`): it needs the multi-threaded
    /// runtime.
    pub async fn publish(
        &self,
        user: &str,
        request: &PublishRequest<'_>,
    ) -> Result<IndexRecord, RegistryError> {
        self.check_writable()?;
        let name: SkillName = request.name.parse().map_err(|error| {
            RegistryError::BadRequest(format!(
                "`{}` is not a valid skill name: {error}",
                request.name
            ))
        })?;
        let version: semver::Version = request.version.parse().map_err(|error| {
            RegistryError::BadRequest(format!(
                "`{}` is not a semantic version: {error}",
                request.version
            ))
        })?;
        self.check_owner(user, &name).await?;
        let sent_key = request.key.map(parse_sent_key).transpose()?;
        if sent_key.is_some() && request.signature.is_none() {
            return Err(RegistryError::BadRequest(format!(
                "{name}@{version}: the `key` part was sent without a `signature`"
            )));
        }
        let registered = keys::keys_of(self.state.db(), &name).await?.public_keys();
        let signer_keys = match &sent_key {
            _ if !registered.is_empty() => SignerKeys::Registered(&registered),
            Some(key) => SignerKeys::FirstUse(key),
            None => SignerKeys::Unknown,
        };
        let upload = Upload {
            name: &name,
            version: &version,
            tarball: request.tarball,
            signature: request.signature,
            provenance: request.provenance,
        };
        let policy = Policy {
            max_skill_bytes: self.options.max_skill_bytes,
            require_signatures: self.options.require_signatures,
            audit_refuse: self.options.audit_refuse,
        };
        let record = tokio::task::block_in_place(|| {
            verify_archive(&upload, signer_keys, &policy, jiff::Timestamp::now())
        })?;
        let signer: Option<&PublicKey> = record.signer.as_ref().map(|id| {
            registered
                .iter()
                .chain(&sent_key)
                .find(|key| &key.id().to_string() == id)
                .expect("the signer is one of the keys it was checked against")
        });

        let db = self.state.db();
        // A key registered by this publish must not carry an id another
        // key has: refused before anything is claimed (and again, in its
        // transaction, when it is registered).
        if registered.is_empty()
            && let Some(key) = signer
        {
            keys::check_id_free(db, key).await?;
        }
        // A new name: too like an existing one? (Two look-alikes published
        // at the same instant can both pass; the name itself has one owner.)
        if db
            .index_revision(name.as_str())
            .await
            .map_err(StateError::from)?
            == 0
        {
            self.check_new_name(user, &name).await?;
        }
        // Claimed in the database, so of two first publishes of a new
        // name by different users (on any number of servers) exactly one
        // gets it.
        if !db
            .claim(name.as_str(), user)
            .await
            .map_err(StateError::from)?
        {
            return Err(self.not_owner(user, &name).await);
        }
        let precedence = without_build(&version).to_string();
        let claim = claim_id()?;
        let expired_before = self.claims_expired_before();
        match db
            .claim_version(
                name.as_str(),
                &precedence,
                &version.to_string(),
                &record.cksum.to_string(),
                &claim,
                expired_before,
            )
            .await
            .map_err(StateError::from)?
        {
            Claim::Claimed => {}
            Claim::Published { version: existing } if existing == version.to_string() => {
                return Err(RegistryError::Exists {
                    name: name.to_string(),
                    version: version.to_string(),
                });
            }
            Claim::Published { version: existing } => {
                return Err(RegistryError::SameVersion {
                    name: name.to_string(),
                    version: version.to_string(),
                    existing,
                });
            }
            Claim::Busy => {
                return Err(RegistryError::Busy {
                    name: name.to_string(),
                    version: version.to_string(),
                });
            }
        }
        let files = VersionFiles {
            tarball: request.tarball,
            signature: request.signature,
            provenance: request.provenance,
        };
        // The claim is this publish's: until the commit, a failure undoes
        // what it wrote and gives the claim up.
        let written = match self
            .register_key(&name, &version, signer, record.published)
            .await
        {
            Ok(()) => tokio::task::block_in_place(|| {
                self.tree
                    .replace_version(&name, &version, &files, record.published)
                    .map_err(RegistryError::from)
            }),
            Err(error) => Err(error),
        };
        if let Err(error) = written {
            // Files left (the store failing still) are listed by no index
            // line, and the next publish of the version replaces them.
            let undone = tokio::task::block_in_place(|| self.tree.remove_version(&name, &version));
            if let Err(undo) = undone {
                tracing::error!(
                    error = error_chain(&undo),
                    "cannot remove the files of a failed publish of {name}@{version}"
                );
            }
            if let Err(release) = db.release_claim(name.as_str(), &precedence, &claim).await {
                tracing::error!(
                    error = error_chain(&release),
                    "cannot give up the claim of a failed publish of {name}@{version}"
                );
            }
            return Err(error);
        }
        let event = NewEvent {
            actor: user,
            action: "publish",
            skill: Some(name.as_str()),
            version: Some(&version.to_string()),
            detail: Some(match &record.signer {
                Some(signer) => format!("{}, signed by {signer}", record.cksum),
                None => format!("{}, unsigned", record.cksum),
            }),
        };
        // A failed commit leaves the files as they are: it may have landed
        // before the failure was seen. The claim is given up if it is
        // still one (the database back): a retry then publishes at once.
        let committed = match db
            .commit_version(
                name.as_str(),
                &precedence,
                &claim,
                &render_index_line(&record),
                &event,
                DERIVED,
            )
            .await
        {
            Ok(committed) => committed,
            Err(error) => {
                if db
                    .release_claim(name.as_str(), &precedence, &claim)
                    .await
                    .is_err()
                {
                    tracing::warn!(
                        "the claim of {name}@{version} stays until it expires: the database is unreachable"
                    );
                }
                return Err(StateError::from(error).into());
            }
        };
        if committed.is_none() {
            // Claimed too long ago: another publish took it over.
            return Err(RegistryError::Busy {
                name: name.to_string(),
                version: version.to_string(),
            });
        }
        self.after_change(&name).await?;
        Ok(record)
    }

    /// Registers `signer` as `name`'s key on its first signed publish, or
    /// checks it is one of the skill's keys, in one transaction of the
    /// database: an owner or the admin may have changed them since the
    /// signature was checked, or another first signed publish (on any
    /// server) may have registered its own.
    async fn register_key(
        &self,
        name: &SkillName,
        version: &semver::Version,
        signer: Option<&PublicKey>,
        published: jiff::Timestamp,
    ) -> Result<(), RegistryError> {
        keys::change_with(self.state.db(), &self.tree, name, |keys| match signer {
            None if keys.keys.is_empty() => Ok(()),
            None => Err(unsigned_with_keys(name, version, &keys.public_keys())),
            Some(key) if keys.keys.is_empty() => {
                keys.keys.push(keys::record(key, published));
                Ok(())
            }
            Some(key) if keys.contains(key) => Ok(()),
            Some(key) => Err(PublishError::UnregisteredKey {
                subject: format!("{name}@{version}"),
                name: name.to_string(),
                found: key.id(),
                registered: keys
                    .keys
                    .iter()
                    .map(|record| record.id.clone())
                    .collect::<Vec<_>>()
                    .join(", "),
            }
            .into()),
        })
        .await?;
        Ok(())
    }

    /// Appends `event` to the audit trail, after its change was made: a
    /// failure is logged, and does not undo the change.
    async fn record_event(&self, event: &NewEvent<'_>) {
        if let Err(error) = self.state.db().record(event).await {
            tracing::error!(
                error = error_chain(&error),
                action = event.action,
                "cannot record the change in the audit trail"
            );
        }
    }

    /// Yanks (or with `yanked == false`, unyanks) `name@version`.
    pub async fn set_yanked(
        &self,
        user: &str,
        name: &str,
        version: &str,
        yanked: bool,
        reason: Option<String>,
    ) -> Result<IndexRecord, RegistryError> {
        self.check_writable()?;
        let not_found =
            || RegistryError::NotFound(format!("{name}@{version} is not published here"));
        let name: SkillName = name.parse().map_err(|_| not_found())?;
        let version: semver::Version = version.parse().map_err(|_| not_found())?;
        self.check_owner(user, &name).await?;
        let reason = if yanked {
            reason.filter(|reason| !reason.trim().is_empty())
        } else {
            None
        };
        if let Some(reason) = &reason {
            crate::text::check_string("the yank reason", reason, MAX_YANK_REASON_CHARS)?;
        }
        let event = NewEvent {
            actor: user,
            action: if yanked { "yank" } else { "unyank" },
            skill: Some(name.as_str()),
            version: Some(&version.to_string()),
            detail: reason.clone(),
        };
        let changed = self
            .state
            .db()
            .change_line(
                name.as_str(),
                &version.to_string(),
                |line| {
                    let mut record: IndexRecord = serde_json::from_str(line)?;
                    record.yanked = yanked;
                    record.yanked_reason = reason;
                    Ok(render_index_line(&record))
                },
                &event,
                summarise,
            )
            .await
            .map_err(StateError::from)?;
        let Some((line, _)) = changed else {
            return Err(not_found());
        };
        let record = serde_json::from_str(&line).map_err(|error| {
            RegistryError::from(TreeError::Io {
                path: PathBuf::from(format!("the index line of {name}@{version}")),
                source: std::io::Error::new(std::io::ErrorKind::InvalidData, error),
            })
        })?;
        self.after_change(&name).await?;
        Ok(record)
    }

    /// Returns the owners of `name`.
    pub async fn owners(&self, name: &str) -> Result<Vec<String>, RegistryError> {
        let owners = self.owners_of(name).await?;
        if owners.is_empty() {
            return Err(RegistryError::NotFound(format!(
                "`{name}` has never been published here"
            )));
        }
        Ok(owners)
    }

    /// Adds and removes owners of `name`, for an owner.
    pub async fn change_owners(
        &self,
        user: &str,
        name: &str,
        add: &[String],
        remove: &[String],
    ) -> Result<Vec<String>, RegistryError> {
        self.check_writable()?;
        let skill: SkillName = name
            .parse()
            .map_err(|_| RegistryError::NotFound(format!("`{name}` is not a skill name")))?;
        let owners = self.owners(name).await?;
        if !owners.iter().any(|owner| owner == user) {
            return Err(self.not_owner(user, &skill).await);
        }
        self.state
            .change_owners(user, name, add, remove)
            .await
            .map_err(|error| match error {
                OwnerChangeError::State(StateError::InvalidUser(user)) => {
                    RegistryError::BadRequest(StateError::InvalidUser(user).to_string())
                }
                OwnerChangeError::State(error) => error.into(),
                OwnerChangeError::Text(error) => error.into(),
                OwnerChangeError::UnknownUser(user) => RegistryError::UnknownUser {
                    user,
                    name: name.to_owned(),
                },
                OwnerChangeError::LastOwner => RegistryError::BadRequest(error.to_string()),
            })
    }

    /// Returns the keys registered for `name` (none for a skill that was
    /// only ever published unsigned).
    pub async fn keys(&self, name: &str) -> Result<KeysFile, RegistryError> {
        let not_found =
            || RegistryError::NotFound(format!("`{name}` has never been published here"));
        let skill: SkillName = name.parse().map_err(|_| not_found())?;
        let keys = keys::keys_of(self.state.db(), &skill).await?;
        if keys.keys.is_empty() && self.owners_of(name).await?.is_empty() {
            return Err(not_found());
        }
        Ok(keys)
    }

    /// Adds keys to and removes keys (by id) from `name`, for an owner.
    pub async fn change_keys(
        &self,
        user: &str,
        name: &str,
        add: &[String],
        remove: &[String],
    ) -> Result<KeysFile, RegistryError> {
        self.check_writable()?;
        let skill: SkillName = name
            .parse()
            .map_err(|_| RegistryError::NotFound(format!("`{name}` is not a skill name")))?;
        let owners = self.owners(name).await?;
        if !owners.iter().any(|owner| owner == user) {
            return Err(self.not_owner(user, &skill).await);
        }
        let add = keys::parse_keys(add)?;
        let remove = keys::parse_ids(remove)?;
        let keys = keys::change_keys(
            self.state.db(),
            &self.tree,
            &skill,
            &add,
            &remove,
            jiff::Timestamp::now(),
        )
        .await?;
        self.sign_metadata(false).await?;
        self.record_event(&NewEvent {
            actor: user,
            action: "keys",
            skill: Some(name),
            version: None,
            detail: Some(keys::describe_change(&add, &remove)),
        })
        .await;
        Ok(keys)
    }

    /// Refuses `name` when it could be taken for a skill `user` does not
    /// own: [`check_new_name`], with this registry's download counts.
    async fn check_new_name(&self, user: &str, name: &SkillName) -> Result<(), RegistryError> {
        // The counts are read from the database: this server's go there
        // first. Counts that cannot be written are not worth failing for.
        if let Err(error) = self.flush_downloads().await {
            tracing::error!(
                error = error_chain(&error),
                "cannot write the download counts"
            );
        }
        // The names filed under one of its lookup keys: every name it
        // resembles, and a few more.
        let names: Vec<SkillName> = self
            .state
            .db()
            .names_under(&skillpkg_index::confusable::lookup_keys(name.as_str()))
            .await
            .map_err(StateError::from)?
            .into_iter()
            .filter_map(|other| other.parse().ok())
            .collect();
        // Only the few names that resemble `name` can refuse it: their
        // owners are read, and they alone are checked.
        let resembling: Vec<&SkillName> = names
            .iter()
            .filter(|other| {
                skillpkg_index::confusable::likeness(name.as_str(), other.as_str()).is_some()
            })
            .collect();
        let mut owned = std::collections::BTreeSet::new();
        let mut counts = std::collections::BTreeMap::new();
        for other in &resembling {
            let count = self
                .state
                .db()
                .download_count(other.as_str())
                .await
                .map_err(StateError::from)?;
            counts.insert(*other, count);
            if self
                .owners_of(other.as_str())
                .await?
                .iter()
                .any(|owner| owner == user)
            {
                owned.insert(*other);
            }
        }
        check_new_name(
            name,
            resembling
                .iter()
                .map(|other| (*other, counts.get(other).copied().unwrap_or(0))),
            &|other: &SkillName| owned.contains(other),
            self.options.confusable_min_downloads,
        )?;
        Ok(())
    }

    fn check_writable(&self) -> Result<(), RegistryError> {
        if self.options.read_only {
            return Err(RegistryError::Forbidden(
                "this server serves a read-only tree (a mirror); publish, yank and change owners or keys on the registry it mirrors".into(),
            ));
        }
        Ok(())
    }

    /// The owners of `name` in the database (none for a name never
    /// published).
    async fn owners_of(&self, name: &str) -> Result<Vec<String>, RegistryError> {
        Ok(self
            .state
            .db()
            .owners(name)
            .await
            .map_err(StateError::from)?)
    }

    async fn check_owner(&self, user: &str, name: &SkillName) -> Result<(), RegistryError> {
        let owners = self.owners_of(name.as_str()).await?;
        if owners.is_empty() || owners.iter().any(|owner| owner == user) {
            Ok(())
        } else {
            Err(self.not_owner(user, name).await)
        }
    }

    async fn not_owner(&self, user: &str, name: &SkillName) -> RegistryError {
        let owners = self
            .owners_of(name.as_str())
            .await
            .unwrap_or_default()
            .join(", ");
        RegistryError::NotOwner {
            user: user.to_owned(),
            name: name.to_string(),
            owners,
        }
    }
}

/// Parses the `key` part of a publish.
fn parse_sent_key(bytes: &[u8]) -> Result<PublicKey, RegistryError> {
    std::str::from_utf8(bytes)
        .map_err(|_| "it is not UTF-8 text".to_owned())
        .and_then(|text| text.parse().map_err(|error| format!("{error}")))
        .map_err(|error| {
            RegistryError::BadRequest(format!(
                "the `key` part is not a minisign public key: {error}"
            ))
        })
}

/// The refusal of an unsigned publish of a skill that has keys.
fn unsigned_with_keys(
    name: &SkillName,
    version: &semver::Version,
    keys: &[PublicKey],
) -> RegistryError {
    let ids = keys
        .iter()
        .map(|key| key.id().to_string())
        .collect::<Vec<_>>()
        .join(", ");
    RegistryError::BadRequest(format!(
        "{name}@{version} is not signed, but `{name}` has registered keys ({ids}): every version of it must be signed by one of them"
    ))
}

/// A random id: a publish's claim, a server's hold of the signing lease.
fn claim_id() -> Result<String, RegistryError> {
    let mut random = [0_u8; 16];
    getrandom::fill(&mut random)
        .map_err(|error| RegistryError::Setup(format!("no randomness for a claim: {error}")))?;
    Ok(random.iter().map(|byte| format!("{byte:02x}")).collect())
}

/// What the database derives from a skill's index lines, in the formats
/// of the tree.
const DERIVED: Derived = Derived {
    summarise,
    lookup_keys: skillpkg_index::confusable::lookup_keys,
};

/// What the catalog keeps of `skill`, from its index lines: the newest
/// version that is not yanked, as the search index and the discovery index
/// list it ([`crate::db::Summarise`]).
fn summarise(skill: &str, lines: &[String]) -> Result<Option<CatalogRow>, String> {
    let name: SkillName = skill
        .parse()
        .map_err(|error| format!("`{skill}` is not a skill name: {error}"))?;
    let records =
        parse_index_file(&name, &lines.join("\n")).map_err(|error| error_chain(&error))?;
    Ok(latest(&records).map(|newest| CatalogRow {
        skill: skill.to_owned(),
        version: newest.vers.to_string(),
        description: newest.description.clone(),
        cksum: newest.cksum.to_string(),
        versions: i64::try_from(records.len()).unwrap_or(i64::MAX),
    }))
}

/// The name, version and checksum of a catalog row, checked.
fn catalog_entry(
    row: &CatalogRow,
) -> Result<
    (
        SkillName,
        semver::Version,
        skillpkg_index::checksum::Checksum,
    ),
    RegistryError,
> {
    let bad = |what: &str| {
        RegistryError::from(TreeError::Io {
            path: PathBuf::from(format!("the catalog row of `{}`", row.skill)),
            source: std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("{what} is not valid"),
            ),
        })
    };
    let name = row.skill.parse().map_err(|_| bad("its name"))?;
    let version = row.version.parse().map_err(|_| bad("its version"))?;
    let cksum = row.cksum.parse().map_err(|_| bad("its checksum"))?;
    Ok((name, version, cksum))
}
