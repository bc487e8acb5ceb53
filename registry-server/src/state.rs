//! The registry's private state: tokens, owners and the audit trail, in a
//! database ([`crate::db`]), and the state folder `DIR/state/`, never
//! served:
//!
//! ```text
//! state/registry.db   the SQLite database, unless --database names another
//! state/index.key     the online key of the signed metadata, when it has one
//! state/.lock         held while a public `keys/<name>.json` is
//!                     read-modify-written, or the metadata signed
//! ```
//!
//! Tokens are random, shown once, and stored as their SHA-256 only; a
//! request's token is one indexed lookup, so a token created or revoked by
//! `skillpkg-registry token` counts from the next request on.
//!
//! A registry that kept its state in `tokens.json` and `owners.json` (before
//! the database) has them imported on first open, in one transaction; the
//! files are then renamed to `*.imported`, kept for reference.

use std::path::{Path, PathBuf};

use base64::Engine as _;
use fs4::fs_std::FileExt;
use skillpkg_index::checksum::Checksum;
use skillpkg_index::secret::Secret;

use crate::db::{Db, DbError, OwnersChange, TokenRecord};
use crate::text::{self, TextError};

/// The SQLite database in the state folder.
pub const DATABASE_FILE: &str = "registry.db";
const LEGACY_TOKENS_FILE: &str = "tokens.json";
const LEGACY_OWNERS_FILE: &str = "owners.json";
const LOCK_FILE: &str = ".lock";
/// Every token starts with this, so secret scanners can recognise one.
pub const TOKEN_PREFIX: &str = "skp_";

#[derive(Default, serde::Deserialize)]
struct LegacyTokens {
    tokens: Vec<TokenRecord>,
}

#[derive(Default, serde::Deserialize)]
struct LegacyOwners {
    owners: std::collections::BTreeMap<String, Vec<String>>,
}

/// Why the state could not be read or changed.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error("I/O error on {}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Db(#[from] DbError),
    #[error("{} is corrupt, so it cannot be imported into the database", path.display())]
    Corrupt {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("no token has the id `{0}`")]
    UnknownToken(String),
    #[error(
        "`{}` is not a valid user name: use 1 to 64 letters, digits, `-`, `_` or `.`",
        .0.escape_debug()
    )]
    InvalidUser(String),
}

/// The longest user name.
const MAX_USER_CHARS: usize = 64;

/// Returns an error if and only if `user` is not a valid user name.
pub fn check_user(user: &str) -> Result<(), StateError> {
    let valid = (1..=MAX_USER_CHARS).contains(&user.len())
        && user
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if valid {
        Ok(())
    } else {
        Err(StateError::InvalidUser(user.to_owned()))
    }
}

/// Where the state is kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// A registry's: the folder and its database are created if missing.
    Write,
    /// A read-only server's (a mirror): nothing is created or changed; a
    /// missing database has no tokens and no owners.
    ReadOnly,
}

/// The state: the database and the state folder.
#[derive(Clone, Debug)]
pub struct State {
    dir: PathBuf,
    db: Db,
}

impl State {
    /// Opens the state in `dir`, with the database at `database` (default:
    /// `dir/registry.db`), and imports the JSON state an older registry
    /// left there.
    pub async fn open(
        dir: &Path,
        database: Option<&str>,
        access: Access,
    ) -> Result<Self, StateError> {
        let io = |source| StateError::Io {
            path: dir.to_owned(),
            source,
        };
        let file = dir.join(DATABASE_FILE);
        if access == Access::Write {
            // The lock and the index key live here whichever the database.
            fs_err::create_dir_all(dir).map_err(io)?;
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                // Token hashes are not secrets, but nobody else needs them.
                fs_err::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(io)?;
            }
        }
        let db = match (access, database) {
            (_, Some(url)) => Db::open(url).await?,
            (Access::Write, None) => Db::open(&crate::db::sqlite_url(&file, false)).await?,
            (Access::ReadOnly, None) if file.is_file() => {
                Db::open(&crate::db::sqlite_url(&file, true)).await?
            }
            (Access::ReadOnly, None) => Db::in_memory().await?,
        };
        let state = Self {
            dir: dir.to_owned(),
            db,
        };
        state.import_legacy(access).await?;
        Ok(state)
    }

    /// The database.
    pub fn db(&self) -> &Db {
        &self.db
    }

    /// Imports `tokens.json` and `owners.json`, when they are there: into
    /// the database and then renamed, for a registry; into the (in-memory)
    /// database only, for a read-only server, which changes no file.
    async fn import_legacy(&self, access: Access) -> Result<(), StateError> {
        let tokens_path = self.dir.join(LEGACY_TOKENS_FILE);
        let owners_path = self.dir.join(LEGACY_OWNERS_FILE);
        let tokens: Option<LegacyTokens> = read_json(&tokens_path)?;
        let owners: Option<LegacyOwners> = read_json(&owners_path)?;
        if tokens.is_none() && owners.is_none() {
            return Ok(());
        }
        let tokens = tokens.unwrap_or_default().tokens;
        let owners: Vec<(String, Vec<String>)> =
            owners.unwrap_or_default().owners.into_iter().collect();
        let imported = self
            .db
            .import(&tokens, &owners, &self.dir.display().to_string())
            .await?;
        if access == Access::Write {
            for path in [tokens_path, owners_path] {
                if path.exists() {
                    let mut renamed = path.clone().into_os_string();
                    renamed.push(".imported");
                    fs_err::rename(&path, &renamed).map_err(|source| StateError::Io {
                        path: path.clone(),
                        source,
                    })?;
                }
            }
            if imported {
                tracing::info!(
                    tokens = tokens.len(),
                    skills = owners.len(),
                    "imported the tokens and owners of {} into the database",
                    self.dir.display()
                );
            }
        }
        Ok(())
    }

    /// Runs `change` while holding the state lock, which every change of
    /// the public keys files and every signing of the metadata holds. The
    /// lock is a file lock, so it also orders the admin commands against a
    /// running server; `change` must not take it again (a second lock of
    /// the file waits for the first, even in one process).
    pub fn locked<T, E: From<StateError>>(
        &self,
        change: impl FnOnce() -> Result<T, E>,
    ) -> Result<T, E> {
        let path = self.dir.join(LOCK_FILE);
        let io = |source| StateError::Io {
            path: path.clone(),
            source,
        };
        let file = fs_err::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(io)?;
        file.file().lock_exclusive().map_err(io)?;
        let result = change();
        let _ = FileExt::unlock(file.file());
        result
    }

    /// Creates a token for `user` and returns it with its record.
    pub async fn create_token(&self, user: &str) -> Result<(Secret, TokenRecord), StateError> {
        check_user(user)?;
        let mut random = [0_u8; 32];
        getrandom::fill(&mut random).map_err(|error| StateError::Io {
            path: self.dir.clone(),
            source: std::io::Error::other(error.to_string()),
        })?;
        let token = Secret::new(format!(
            "{TOKEN_PREFIX}{}",
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(random)
        ));
        let record = self
            .db
            .create_token(user, &Checksum::of(token.expose().as_bytes()))
            .await?;
        Ok((token, record))
    }

    /// Lists the tokens (their records, never the tokens).
    pub async fn list_tokens(&self) -> Result<Vec<TokenRecord>, StateError> {
        Ok(self.db.list_tokens().await?)
    }

    /// Revokes the token with `id`.
    pub async fn revoke_token(&self, id: &str) -> Result<TokenRecord, StateError> {
        self.db
            .revoke_token(id)
            .await?
            .ok_or_else(|| StateError::UnknownToken(id.to_owned()))
    }

    /// Returns the user a presented token belongs to, if it is valid.
    pub async fn authenticate(&self, presented: &Secret) -> Result<Option<String>, StateError> {
        Ok(self
            .db
            .user_of_token(&Checksum::of(presented.expose().as_bytes()))
            .await?)
    }

    /// Adds and removes owners of `name` for `actor`, keeping at least one;
    /// an owner to add must be a user of the registry (a name a token was
    /// created for).
    pub async fn change_owners(
        &self,
        actor: &str,
        name: &str,
        add: &[String],
        remove: &[String],
    ) -> Result<Vec<String>, OwnerChangeError> {
        for user in add {
            check_user(user)?;
        }
        // Not stored, but recorded in the audit trail's detail.
        for user in remove {
            text::check_string("an owner to remove", user, MAX_USER_CHARS)?;
        }
        match self
            .db
            .change_owners(actor, name, add, remove)
            .await
            .map_err(StateError::from)?
        {
            OwnersChange::Changed(owners) => Ok(owners),
            OwnersChange::LastOwner => Err(OwnerChangeError::LastOwner),
            OwnersChange::UnknownUser(user) => Err(OwnerChangeError::UnknownUser(user)),
        }
    }
}

/// Reads the JSON file `path`, `None` when there is none.
fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Option<T>, StateError> {
    match fs_err::read(path) {
        Ok(bytes) => {
            serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|source| StateError::Corrupt {
                    path: path.to_owned(),
                    source,
                })
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(StateError::Io {
            path: path.to_owned(),
            source,
        }),
    }
}

/// Why owners could not be changed.
#[derive(Debug, thiserror::Error)]
pub enum OwnerChangeError {
    #[error(transparent)]
    State(#[from] StateError),
    #[error("a skill must keep at least one owner")]
    LastOwner,
    /// An owner to add who is not a user: no token was ever created for
    /// the name.
    #[error("`{0}` is not a user of this registry")]
    UnknownUser(String),
    #[error(transparent)]
    Text(#[from] TextError),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn tokens_are_stored_hashed_and_revocable() {
        let temp = tempfile::tempdir().unwrap();
        let state = State::open(temp.path(), None, Access::Write).await.unwrap();
        let (token, record) = state.create_token("alice").await.unwrap();
        assert!(token.expose().starts_with(TOKEN_PREFIX));
        assert_eq!(format!("{token:?}"), "****");
        let stored = fs_err::read(temp.path().join(DATABASE_FILE)).unwrap();
        assert!(
            !stored
                .windows(token.expose().len())
                .any(|window| window == token.expose().as_bytes()),
            "only the hash is stored"
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = fs_err::metadata(temp.path()).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o700, "the state folder is private");
        }
        assert_eq!(
            state.authenticate(&token).await.unwrap().as_deref(),
            Some("alice")
        );
        assert_eq!(
            state
                .authenticate(&Secret::from("skp_wrong"))
                .await
                .unwrap(),
            None
        );
        state.revoke_token(&record.id).await.unwrap();
        assert_eq!(state.authenticate(&token).await.unwrap(), None);
        assert!(matches!(
            state.revoke_token(&record.id).await,
            Err(StateError::UnknownToken(_))
        ));
        assert!(matches!(
            state.create_token("../x").await,
            Err(StateError::InvalidUser(_))
        ));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn json_state_is_imported_once_and_the_files_renamed() {
        let temp = tempfile::tempdir().unwrap();
        let hash = Checksum::of(b"skp_legacy");
        fs_err::write(
            temp.path().join(LEGACY_TOKENS_FILE),
            format!(
                r#"{{"tokens":[{{"id":"t3","user":"alice","hash":"{hash}","created":"2026-01-01T00:00:00Z"}}]}}"#
            ),
        )
        .unwrap();
        fs_err::write(
            temp.path().join(LEGACY_OWNERS_FILE),
            r#"{"owners":{"pdf":["bob","alice"]}}"#,
        )
        .unwrap();
        // A read-only server imports into memory and changes no file.
        let read_only = State::open(temp.path(), None, Access::ReadOnly)
            .await
            .unwrap();
        assert_eq!(
            read_only
                .db()
                .user_of_token(&hash)
                .await
                .unwrap()
                .as_deref(),
            Some("alice")
        );
        assert!(temp.path().join(LEGACY_TOKENS_FILE).exists());
        assert!(!temp.path().join(DATABASE_FILE).exists());

        let state = State::open(temp.path(), None, Access::Write).await.unwrap();
        assert_eq!(
            state.db().user_of_token(&hash).await.unwrap().as_deref(),
            Some("alice")
        );
        assert_eq!(state.db().owners("pdf").await.unwrap(), ["bob", "alice"]);
        assert!(!temp.path().join(LEGACY_TOKENS_FILE).exists());
        assert!(temp.path().join("tokens.json.imported").exists());
        let (_, next) = state.create_token("carol").await.unwrap();
        assert_eq!(next.id, "t4", "ids go on from the imported ones");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn a_corrupt_json_state_is_refused_and_kept() {
        let temp = tempfile::tempdir().unwrap();
        fs_err::write(temp.path().join(LEGACY_TOKENS_FILE), "{").unwrap();
        let error = State::open(temp.path(), None, Access::Write)
            .await
            .unwrap_err();
        assert!(matches!(error, StateError::Corrupt { .. }), "{error:?}");
        assert!(temp.path().join(LEGACY_TOKENS_FILE).exists());
    }
}
