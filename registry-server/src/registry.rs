//! The registry: the static tree, the private state, and the operations that
//! change them. The HTTP layer (`server`) is a thin shell over this.
//!
//! Writes are serialised by one lock, so concurrent publishes of different
//! versions all land and of the same version exactly one wins. The checks
//! that take time (verifying the signature, unpacking, validating) run
//! before the lock is taken; what they relied on that can change meanwhile
//! (the skill's keys) is checked again under it.
//!
//! A publish writes, in this order: the key it registers (on a skill's first
//! signed publish), the signature, the provenance, the archive, the index
//! file, then `search.json` and the discovery index.

use std::path::PathBuf;

use skillpkg_index::archive::DEFAULT_MAX_BYTES;
use skillpkg_index::registry::tree::{StaticTree, TreeError, VersionFiles};
use skillpkg_index::registry::{
    AllRecords, CONFIG_PATH, DEFAULT_DL_TEMPLATE, FORMAT_VERSION, IndexRecord, KeysFile,
    RegistryConfig,
};
use skillpkg_index::signing::PublicKey;
use skillpkg_index::skill::SkillName;

use crate::db::NewEvent;
use crate::downloads::{Downloads, DownloadsError};
use crate::keys::{self, KeyChangeError};
use crate::layout::DataFolder;
use crate::metadata::{DEFAULT_TIMESTAMP_LIFETIME, KeysError, Signer};
use crate::publish::{
    ConfusableName, Policy, PublishError, SignerKeys, Upload, check_new_name, verify_archive,
};
use crate::report::error_chain;
use crate::state::{OwnerChangeError, State, StateError};
use crate::storage::Storage;

/// How a registry is set up.
#[derive(Clone, Debug)]
pub struct Options {
    /// The URL clients reach the tree at (for `config.json`'s `api` and the
    /// discovery index), when known.
    pub public_url: Option<String>,
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
}

/// The default of [`Options::confusable_min_downloads`].
pub const DEFAULT_CONFUSABLE_MIN_DOWNLOADS: u64 = 100;

impl Default for Options {
    fn default() -> Self {
        Self {
            public_url: None,
            max_skill_bytes: DEFAULT_MAX_BYTES,
            require_signatures: false,
            audit_refuse: Some(skillpkg_index::audit::Severity::High),
            auth_required: false,
            timestamp_lifetime: DEFAULT_TIMESTAMP_LIFETIME,
            read_only: false,
            confusable_min_downloads: DEFAULT_CONFUSABLE_MIN_DOWNLOADS,
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
            other => Self::BadRequest(error_chain(&other)),
        }
    }
}

/// How a key gets added to `name`, for error messages.
fn add_key_hint(name: &str) -> String {
    format!(
        "an owner can add a key with `PUT /api/v1/skills/{name}/keys` and the body {{\"add\":[\"<public key>\"]}}, or the registry's admin with `skillpkg-registry key add --skill {name} --key <public key>`; then publish again"
    )
}

/// A registry: its tree (in a folder or a bucket) and its state.
#[derive(Debug)]
pub struct Registry {
    tree: StaticTree,
    /// Where the tree is.
    storage: Storage,
    state: State,
    config: RegistryConfig,
    options: Options,
    /// Every index file, as written; held across a change's writes, so
    /// that changes of the index are made one at a time.
    records: tokio::sync::Mutex<AllRecords>,
    /// Re-signs the snapshot and timestamp after every change, when the
    /// registry has signed metadata.
    signer: Option<Signer>,
    /// How many times each skill's archives were served.
    downloads: Downloads,
}

impl Registry {
    /// Opens the registry of the data folder `folder` whose tree is in
    /// `storage` (its `public/`, or a bucket), recovering from a crash:
    /// temporary files and archives no index file lists are removed (they
    /// were never published). Returns the registry and what was removed.
    ///
    /// A read-only registry (a mirror) writes nothing, not even its state
    /// folder, and needs a token for every read when its `config.json` says
    /// `auth-required` whatever `options` say: a mirror of a private
    /// registry holds private skills.
    pub fn open(
        folder: &DataFolder,
        storage: Storage,
        mut options: Options,
        state: State,
    ) -> Result<(Self, Vec<String>), RegistryError> {
        let tree = storage.tree();
        let records = tree.read_all()?;
        let (state, config, removed, signer, downloads) = if options.read_only {
            // Served as it is: nothing is written, nothing is signed.
            let config = tree
                .read_config()?
                .unwrap_or_else(|| RegistryConfig::read_only(options.max_skill_bytes));
            if options.auth_required && !config.auth_required {
                return Err(RegistryError::Setup(format!(
                    "--auth-required, but {} says `\"auth-required\": false`: clients would not send their tokens. Serve it without --auth-required, or mirror a private registry",
                    tree.root().join(CONFIG_PATH).display()
                )));
            }
            options.auth_required = config.auth_required;
            options.max_skill_bytes = config.max_skill_bytes;
            (state, config, Vec::new(), None, Downloads::off())
        } else {
            let removed = tree.recover(&records)?;
            let config = RegistryConfig {
                v: FORMAT_VERSION,
                dl: DEFAULT_DL_TEMPLATE.into(),
                api: options
                    .public_url
                    .as_ref()
                    .map(|url| format!("{}/api/v1", url.trim_end_matches('/'))),
                auth_required: options.auth_required,
                max_skill_bytes: options.max_skill_bytes,
                require_signatures: options.require_signatures,
            };
            tree.write_config(&config)?;
            let downloads = Downloads::open(&folder.state)?;
            tree.write_aggregates_counted(
                &records,
                &config,
                options.public_url.as_deref(),
                &downloads.counts(),
            )?;
            let signer = Signer::open(&folder.root, &tree, options.timestamp_lifetime)?;
            (state, config, removed, signer, downloads)
        };
        let registry = Self {
            tree,
            storage,
            state,
            config,
            options,
            records: tokio::sync::Mutex::new(records),
            signer,
            downloads,
        };
        registry.sign_metadata()?;
        Ok((registry, removed))
    }

    /// Replaces the index file of `name` with `versions`, then
    /// `search.json` and the discovery index, and, after letting go of the
    /// records, re-signs the metadata: every change of the index ends here.
    fn replace_index(
        &self,
        mut records: tokio::sync::MutexGuard<'_, AllRecords>,
        name: SkillName,
        versions: Vec<IndexRecord>,
    ) -> Result<(), RegistryError> {
        tokio::task::block_in_place(|| {
            self.tree.write_index(&name, &versions)?;
            records.insert(name, versions);
            self.tree.write_aggregates_counted(
                &records,
                &self.config,
                self.options.public_url.as_deref(),
                &self.downloads.counts(),
            )
        })?;
        drop(records);
        // The change is made: counts that cannot be written now are
        // written by the next flush, and must not fail it.
        if let Err(error) = self.flush_downloads() {
            tracing::error!(
                error = error_chain(&error),
                "cannot write the download counts"
            );
        }
        tokio::task::block_in_place(|| self.sign_metadata())?;
        Ok(())
    }

    /// Re-signs the snapshot and timestamp (under the state lock, so a
    /// running server and the admin commands never sign at once), when the
    /// registry has signed metadata. Returns the new timestamp version.
    pub fn sign_metadata(&self) -> Result<Option<u64>, RegistryError> {
        let Some(signer) = &self.signer else {
            return Ok(None);
        };
        self.state
            .locked(|| signer.sign().map(Some).map_err(RegistryError::from))
    }

    /// Counts a download of an archive of `name`.
    pub fn record_download(&self, name: &SkillName) {
        self.downloads.record(name);
    }

    /// Writes the download counts, if they changed since last written.
    pub fn flush_downloads(&self) -> Result<(), RegistryError> {
        Ok(self.downloads.flush()?)
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
        let registered = self.tree.read_keys(&name)?.public_keys();
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

        let records = self.records.lock().await;
        let versions = records.get(&name).map(Vec::as_slice).unwrap_or_default();
        if versions.iter().any(|existing| existing.vers == version)
            || tokio::task::block_in_place(|| self.tree.has_archive(&name, &version))?
        {
            return Err(RegistryError::Exists {
                name: name.to_string(),
                version: version.to_string(),
            });
        }
        if let Some(existing) = versions
            .iter()
            .find(|existing| same_version(&existing.vers, &version))
        {
            return Err(RegistryError::SameVersion {
                name: name.to_string(),
                version: version.to_string(),
                existing: existing.vers.to_string(),
            });
        }
        // A new name, under the lock, so two look-alikes published at once
        // cannot both pass.
        if versions.is_empty() {
            self.check_new_name(user, &name, &records).await?;
        }
        // Claimed under the lock, and in the database, so of two first
        // publishes of a new name by different users (on any number of
        // servers) exactly one gets it.
        if !self
            .state
            .db()
            .claim(name.as_str(), user)
            .await
            .map_err(StateError::from)?
        {
            return Err(self.not_owner(user, &name).await);
        }
        // The keys again, under the state lock: an owner or the admin may
        // have changed them since, or another first signed publish may have
        // registered its own.
        tokio::task::block_in_place(|| {
            self.state.locked(|| -> Result<(), RegistryError> {
                let mut keys = self.tree.read_keys(&name)?;
                match signer {
                    None if keys.keys.is_empty() => Ok(()),
                    None => Err(unsigned_with_keys(&name, &version, &keys.public_keys())),
                    Some(key) if keys.keys.is_empty() => {
                        keys.keys.push(keys::record(key, record.published));
                        Ok(self.tree.write_keys(&name, &keys)?)
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
                }
            })
        })?;
        let files = VersionFiles {
            tarball: request.tarball,
            signature: request.signature,
            provenance: request.provenance,
        };
        tokio::task::block_in_place(|| {
            self.tree
                .write_version(&name, &version, &files, record.published)
        })?;
        let mut updated = versions.to_vec();
        updated.push(record.clone());
        self.replace_index(records, name.clone(), updated)?;
        self.record_event(&NewEvent {
            actor: user,
            action: "publish",
            skill: Some(name.as_str()),
            version: Some(&version.to_string()),
            detail: Some(match &record.signer {
                Some(signer) => format!("{}, signed by {signer}", record.cksum),
                None => format!("{}, unsigned", record.cksum),
            }),
        })
        .await;
        Ok(record)
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
        let records = self.records.lock().await;
        let mut updated = records.get(&name).cloned().unwrap_or_default();
        let record = updated
            .iter_mut()
            .find(|record| record.vers == version)
            .ok_or_else(not_found)?;
        record.yanked = yanked;
        record.yanked_reason = if yanked {
            reason.filter(|reason| !reason.trim().is_empty())
        } else {
            None
        };
        let record = record.clone();
        self.replace_index(records, name.clone(), updated)?;
        self.record_event(&NewEvent {
            actor: user,
            action: if yanked { "yank" } else { "unyank" },
            skill: Some(name.as_str()),
            version: Some(&version.to_string()),
            detail: record.yanked_reason.clone(),
        })
        .await;
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
                OwnerChangeError::LastOwner => RegistryError::BadRequest(error.to_string()),
            })
    }

    /// Returns the keys registered for `name` (none for a skill that was
    /// only ever published unsigned).
    pub async fn keys(&self, name: &str) -> Result<KeysFile, RegistryError> {
        let not_found =
            || RegistryError::NotFound(format!("`{name}` has never been published here"));
        let skill: SkillName = name.parse().map_err(|_| not_found())?;
        let keys = self.tree.read_keys(&skill)?;
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
        let keys = tokio::task::block_in_place(|| {
            let keys = keys::change_keys(
                &self.tree,
                &self.state,
                &skill,
                &add,
                &remove,
                jiff::Timestamp::now(),
            )?;
            self.sign_metadata()?;
            Ok::<_, RegistryError>(keys)
        })?;
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
    async fn check_new_name(
        &self,
        user: &str,
        name: &SkillName,
        records: &AllRecords,
    ) -> Result<(), RegistryError> {
        let counts = self.downloads.counts();
        // Only the few names that resemble `name` can refuse it: their
        // owners are read, and they alone are checked.
        let resembling: Vec<&SkillName> = records
            .keys()
            .filter(|other| {
                skillpkg_index::confusable::likeness(name.as_str(), other.as_str()).is_some()
            })
            .collect();
        let mut owned = std::collections::BTreeSet::new();
        for other in &resembling {
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
                .map(|other| (*other, counts.get(*other).copied().unwrap_or(0))),
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

/// Returns true if and only if `a` and `b` are one version: equal but for
/// their build metadata, which semver ignores in precedence.
pub fn same_version(a: &semver::Version, b: &semver::Version) -> bool {
    a.cmp_precedence(b) == std::cmp::Ordering::Equal
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
