//! The registry: the static tree, the private state, and the operations that
//! change them. The HTTP layer ([`crate::server`]) is a thin shell over this.
//!
//! Writes are serialised by one lock, so concurrent publishes of different
//! versions all land and of the same version exactly one wins. The checks
//! that take time (unpacking, validating) run before the lock is taken.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use skillpkg_index::archive::DEFAULT_MAX_BYTES;
use skillpkg_index::registry::tree::{StaticTree, TreeError};
use skillpkg_index::registry::{
    AllRecords, DEFAULT_DL_TEMPLATE, FORMAT_VERSION, IndexRecord, RegistryConfig,
};
use skillpkg_index::skill::SkillName;

use crate::publish::{PublishError, verify_archive};
use crate::state::{OwnerChangeError, State, StateError};

/// The served tree, below the data folder.
pub const PUBLIC_DIR: &str = "public";
/// The private state, below the data folder.
pub const STATE_DIR: &str = "state";

/// How a registry is set up.
#[derive(Clone, Debug)]
pub struct Options {
    /// The URL clients reach the tree at (for `config.json`'s `api` and the
    /// discovery index), when known.
    pub public_url: Option<String>,
    pub max_skill_bytes: u64,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            public_url: None,
            max_skill_bytes: DEFAULT_MAX_BYTES,
        }
    }
}

/// Why an operation failed, in the terms of the API.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}")]
    TooLarge(String),
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
    #[error(transparent)]
    Tree(#[from] TreeError),
    #[error(transparent)]
    State(#[from] StateError),
}

impl From<PublishError> for RegistryError {
    fn from(error: PublishError) -> Self {
        match error {
            PublishError::TooLarge { .. } => Self::TooLarge(error.to_string()),
            PublishError::Io(source) => Self::Tree(TreeError::Io {
                path: PathBuf::from("(temporary folder)"),
                source,
            }),
            other => Self::BadRequest(error_chain(&other)),
        }
    }
}

/// Joins an error and its causes: `a: b: c`.
pub fn error_chain(error: &dyn std::error::Error) -> String {
    std::iter::successors(Some(error), |error| error.source())
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(": ")
}

/// A registry on disk.
#[derive(Debug)]
pub struct Registry {
    tree: StaticTree,
    state: State,
    config: RegistryConfig,
    options: Options,
    records: Mutex<AllRecords>,
}

impl Registry {
    /// Opens the registry in the data folder `root`, recovering from a crash:
    /// temporary files and archives no index file lists are removed (they
    /// were never published). Returns the registry and what was removed.
    pub fn open(root: &Path, options: Options) -> Result<(Self, Vec<String>), RegistryError> {
        let tree = StaticTree::new(root.join(PUBLIC_DIR));
        let state = State::open(&root.join(STATE_DIR))?;
        let records = tree.read_all()?;
        let removed = tree.recover(&records)?;
        let config = RegistryConfig {
            v: FORMAT_VERSION,
            dl: DEFAULT_DL_TEMPLATE.into(),
            api: options
                .public_url
                .as_ref()
                .map(|url| format!("{}/api/v1", url.trim_end_matches('/'))),
            auth_required: false,
            max_skill_bytes: options.max_skill_bytes,
            require_signatures: false,
        };
        tree.write_config(&config)?;
        tree.write_aggregates(&records, &config, options.public_url.as_deref())?;
        Ok((
            Self {
                tree,
                state,
                config,
                options,
                records: Mutex::new(records),
            },
            removed,
        ))
    }

    /// Returns the static tree.
    pub fn tree(&self) -> &StaticTree {
        &self.tree
    }

    /// Returns the private state.
    pub fn state(&self) -> &State {
        &self.state
    }

    /// Returns the largest archive accepted.
    pub fn max_skill_bytes(&self) -> u64 {
        self.options.max_skill_bytes
    }

    /// Publishes `tarball` as `name@version` for `user`.
    pub fn publish(
        &self,
        user: &str,
        name: &str,
        version: &str,
        tarball: &[u8],
        signature: Option<&[u8]>,
    ) -> Result<IndexRecord, RegistryError> {
        let name: SkillName = name.parse().map_err(|error| {
            RegistryError::BadRequest(format!("`{name}` is not a valid skill name: {error}"))
        })?;
        let version: semver::Version = version.parse().map_err(|error| {
            RegistryError::BadRequest(format!("`{version}` is not a semantic version: {error}"))
        })?;
        self.check_owner(user, &name)?;
        let record = verify_archive(
            &name,
            &version,
            tarball,
            signature,
            self.options.max_skill_bytes,
            jiff::Timestamp::now(),
        )?;

        let mut records = self
            .records
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let versions = records.get(&name).map(Vec::as_slice).unwrap_or_default();
        if versions.iter().any(|existing| existing.vers == version)
            || self.tree.has_archive(&name, &version)
        {
            return Err(RegistryError::Exists {
                name: name.to_string(),
                version: version.to_string(),
            });
        }
        // Claimed under the lock, so of two first publishes of a new name by
        // different users exactly one gets it.
        if !self.state.claim(name.as_str(), user)? {
            return Err(self.not_owner(user, &name));
        }
        self.tree
            .write_archive(&name, &version, tarball, signature, record.published)?;
        let mut updated = versions.to_vec();
        updated.push(record.clone());
        self.tree.write_index(&name, &updated)?;
        records.insert(name, updated);
        self.tree
            .write_aggregates(&records, &self.config, self.options.public_url.as_deref())?;
        Ok(record)
    }

    /// Yanks (or with `yanked == false`, unyanks) `name@version`.
    pub fn set_yanked(
        &self,
        user: &str,
        name: &str,
        version: &str,
        yanked: bool,
        reason: Option<String>,
    ) -> Result<IndexRecord, RegistryError> {
        let not_found =
            || RegistryError::NotFound(format!("{name}@{version} is not published here"));
        let name: SkillName = name.parse().map_err(|_| not_found())?;
        let version: semver::Version = version.parse().map_err(|_| not_found())?;
        self.check_owner(user, &name)?;
        let mut records = self
            .records
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
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
        self.tree.write_index(&name, &updated)?;
        records.insert(name, updated);
        self.tree
            .write_aggregates(&records, &self.config, self.options.public_url.as_deref())?;
        Ok(record)
    }

    /// Returns the owners of `name`.
    pub fn owners(&self, name: &str) -> Result<Vec<String>, RegistryError> {
        let owners = self.state.owners(name)?;
        if owners.is_empty() {
            return Err(RegistryError::NotFound(format!(
                "`{name}` has never been published here"
            )));
        }
        Ok(owners)
    }

    /// Adds and removes owners of `name`, for an owner.
    pub fn change_owners(
        &self,
        user: &str,
        name: &str,
        add: &[String],
        remove: &[String],
    ) -> Result<Vec<String>, RegistryError> {
        let skill: SkillName = name
            .parse()
            .map_err(|_| RegistryError::NotFound(format!("`{name}` is not a skill name")))?;
        let owners = self.owners(name)?;
        if !owners.iter().any(|owner| owner == user) {
            return Err(self.not_owner(user, &skill));
        }
        self.state
            .change_owners(name, add, remove)
            .map_err(|error| match error {
                OwnerChangeError::State(StateError::InvalidUser(user)) => {
                    RegistryError::BadRequest(StateError::InvalidUser(user).to_string())
                }
                OwnerChangeError::State(error) => error.into(),
                OwnerChangeError::LastOwner => RegistryError::BadRequest(error.to_string()),
            })
    }

    fn check_owner(&self, user: &str, name: &SkillName) -> Result<(), RegistryError> {
        let owners = self.state.owners(name.as_str())?;
        if owners.is_empty() || owners.iter().any(|owner| owner == user) {
            Ok(())
        } else {
            Err(self.not_owner(user, name))
        }
    }

    fn not_owner(&self, user: &str, name: &SkillName) -> RegistryError {
        let owners = self
            .state
            .owners(name.as_str())
            .unwrap_or_default()
            .join(", ");
        RegistryError::NotOwner {
            user: user.to_owned(),
            name: name.to_string(),
            owners,
        }
    }
}
