//! The registry's private state: tokens and owners, in `DIR/state/`, never
//! served.
//!
//! ```text
//! state/tokens.json    {"tokens":[{"id":"t1","user":"alice","hash":"sha256:…","created":"…"}]}
//! state/owners.json    {"owners":{"pdf-processing":["alice","bob"]}}
//! state/.lock          held while either file, or a public `keys/<name>.json`,
//!                      is read-modify-written
//! ```
//!
//! Tokens are random, shown once, and stored as their SHA-256 only. Both
//! files are replaced atomically and every change holds the lock file, so the
//! `token` commands and a running server can change state at the same time.
//! The server reads the files on every request that needs them: a revoked
//! token stops working at once.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use fs4::fs_std::FileExt;
use skillpkg_index::checksum::Checksum;
use skillpkg_index::registry::tree::{TreeError, write_atomically};

const TOKENS_FILE: &str = "tokens.json";
const OWNERS_FILE: &str = "owners.json";
const LOCK_FILE: &str = ".lock";
/// Every token starts with this, so secret scanners can recognise one.
pub const TOKEN_PREFIX: &str = "skp_";

/// A token as handed to a user. Never printed by Debug.
pub struct Token(String);

impl Token {
    /// Returns the secret, to show once or to send.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(***)")
    }
}

/// A stored token: who it is for, never the token itself.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TokenRecord {
    pub id: String,
    pub user: String,
    pub hash: Checksum,
    pub created: String,
}

#[derive(Default, serde::Serialize, serde::Deserialize)]
struct TokensFile {
    tokens: Vec<TokenRecord>,
}

#[derive(Default, serde::Serialize, serde::Deserialize)]
struct OwnersFile {
    owners: BTreeMap<String, Vec<String>>,
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
    Write(#[from] TreeError),
    #[error("{} is corrupt", path.display())]
    Corrupt {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("no token has the id `{0}`")]
    UnknownToken(String),
    #[error("`{0}` is not a valid user name: use 1 to 64 letters, digits, `-`, `_` or `.`")]
    InvalidUser(String),
}

/// Returns an error if and only if `user` is not a valid user name.
pub fn check_user(user: &str) -> Result<(), StateError> {
    let valid = (1..=64).contains(&user.len())
        && user
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if valid {
        Ok(())
    } else {
        Err(StateError::InvalidUser(user.to_owned()))
    }
}

/// The state folder.
#[derive(Clone, Debug)]
pub struct State {
    dir: PathBuf,
}

impl State {
    /// Opens (and creates) the state folder.
    pub fn open(dir: &Path) -> Result<Self, StateError> {
        fs_err::create_dir_all(dir).map_err(|source| StateError::Io {
            path: dir.to_owned(),
            source,
        })?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            // Token hashes are not secrets, but nobody else needs them.
            fs_err::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(
                |source| StateError::Io {
                    path: dir.to_owned(),
                    source,
                },
            )?;
        }
        Ok(Self {
            dir: dir.to_owned(),
        })
    }

    /// The state folder `dir` as it is, created by nothing: for a server
    /// that writes nothing (a mirror), where a missing folder has no tokens
    /// and no owners.
    pub fn at(dir: &Path) -> Self {
        Self {
            dir: dir.to_owned(),
        }
    }

    fn read<T: serde::de::DeserializeOwned + Default>(&self, file: &str) -> Result<T, StateError> {
        let path = self.dir.join(file);
        match fs_err::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map_err(|source| StateError::Corrupt { path, source }),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(T::default()),
            Err(source) => Err(StateError::Io { path, source }),
        }
    }

    fn write<T: serde::Serialize>(&self, file: &str, value: &T) -> Result<(), StateError> {
        let mut bytes = serde_json::to_vec_pretty(value).expect("state serialises");
        bytes.push(b'\n');
        Ok(write_atomically(&self.dir.join(file), &bytes)?)
    }

    /// Runs `change` while holding the state lock, which every change of the
    /// state files and of the public keys files holds. The lock is a file
    /// lock, so it also orders the admin commands against a running server;
    /// `change` must not take it again (a second lock of the file waits for
    /// the first, even in one process).
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
    pub fn create_token(&self, user: &str) -> Result<(Token, TokenRecord), StateError> {
        check_user(user)?;
        let mut random = [0_u8; 32];
        getrandom::fill(&mut random).map_err(|error| StateError::Io {
            path: self.dir.clone(),
            source: std::io::Error::other(error.to_string()),
        })?;
        let token = Token(format!(
            "{TOKEN_PREFIX}{}",
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(random)
        ));
        self.locked(|| {
            let mut file: TokensFile = self.read(TOKENS_FILE)?;
            let next = file
                .tokens
                .iter()
                .filter_map(|t| t.id.strip_prefix('t')?.parse::<u64>().ok())
                .max()
                .unwrap_or(0)
                + 1;
            let record = TokenRecord {
                id: format!("t{next}"),
                user: user.to_owned(),
                hash: Checksum::of(token.expose().as_bytes()),
                created: jiff::Timestamp::now()
                    .strftime("%Y-%m-%dT%H:%M:%SZ")
                    .to_string(),
            };
            file.tokens.push(record.clone());
            self.write(TOKENS_FILE, &file)?;
            Ok((token, record))
        })
    }

    /// Lists the tokens (their records, never the tokens).
    pub fn list_tokens(&self) -> Result<Vec<TokenRecord>, StateError> {
        Ok(self.read::<TokensFile>(TOKENS_FILE)?.tokens)
    }

    /// Revokes the token with `id`.
    pub fn revoke_token(&self, id: &str) -> Result<TokenRecord, StateError> {
        self.locked(|| {
            let mut file: TokensFile = self.read(TOKENS_FILE)?;
            let index = file
                .tokens
                .iter()
                .position(|t| t.id == id)
                .ok_or_else(|| StateError::UnknownToken(id.to_owned()))?;
            let record = file.tokens.remove(index);
            self.write(TOKENS_FILE, &file)?;
            Ok(record)
        })
    }

    /// Returns the user a presented token belongs to, if it is valid.
    pub fn authenticate(&self, presented: &str) -> Result<Option<String>, StateError> {
        let hash = Checksum::of(presented.as_bytes());
        let file: TokensFile = self.read(TOKENS_FILE)?;
        Ok(file
            .tokens
            .into_iter()
            .find(|t| t.hash == hash)
            .map(|t| t.user))
    }

    /// Returns the owners of a skill name (empty if never published).
    pub fn owners(&self, name: &str) -> Result<Vec<String>, StateError> {
        Ok(self
            .read::<OwnersFile>(OWNERS_FILE)?
            .owners
            .remove(name)
            .unwrap_or_default())
    }

    /// Makes `user` the owner of `name` if it has none yet, and returns
    /// whether `user` owns it now.
    pub fn claim(&self, name: &str, user: &str) -> Result<bool, StateError> {
        self.locked(|| {
            let mut file: OwnersFile = self.read(OWNERS_FILE)?;
            let owners = file.owners.entry(name.to_owned()).or_default();
            if owners.is_empty() {
                owners.push(user.to_owned());
                self.write(OWNERS_FILE, &file)?;
                return Ok(true);
            }
            Ok(owners.iter().any(|owner| owner == user))
        })
    }

    /// Adds and removes owners of `name`, keeping at least one.
    pub fn change_owners(
        &self,
        name: &str,
        add: &[String],
        remove: &[String],
    ) -> Result<Vec<String>, OwnerChangeError> {
        for user in add {
            check_user(user)?;
        }
        self.locked(|| -> Result<_, StateError> {
            let mut file: OwnersFile = self.read(OWNERS_FILE)?;
            let owners = file.owners.entry(name.to_owned()).or_default();
            for user in add {
                if !owners.contains(user) {
                    owners.push(user.clone());
                }
            }
            owners.retain(|owner| !remove.contains(owner));
            if owners.is_empty() {
                return Ok(Err(OwnerChangeError::LastOwner));
            }
            let result = owners.clone();
            self.write(OWNERS_FILE, &file)?;
            Ok(Ok(result))
        })?
    }
}

/// Why owners could not be changed.
#[derive(Debug, thiserror::Error)]
pub enum OwnerChangeError {
    #[error(transparent)]
    State(#[from] StateError),
    #[error("a skill must keep at least one owner")]
    LastOwner,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_stored_hashed_and_revocable() {
        let temp = tempfile::tempdir().unwrap();
        let state = State::open(temp.path()).unwrap();
        let (token, record) = state.create_token("alice").unwrap();
        assert!(token.expose().starts_with(TOKEN_PREFIX));
        assert_eq!(format!("{token:?}"), "Token(***)");
        let stored = fs_err::read_to_string(temp.path().join(TOKENS_FILE)).unwrap();
        assert!(!stored.contains(token.expose()), "only the hash is stored");
        assert_eq!(
            state.authenticate(token.expose()).unwrap().as_deref(),
            Some("alice")
        );
        assert_eq!(state.authenticate("skp_wrong").unwrap(), None);
        state.revoke_token(&record.id).unwrap();
        assert_eq!(state.authenticate(token.expose()).unwrap(), None);
        assert!(matches!(
            state.revoke_token(&record.id),
            Err(StateError::UnknownToken(_))
        ));
    }

    #[test]
    fn the_first_publisher_owns_a_name_and_owners_keep_one() {
        let temp = tempfile::tempdir().unwrap();
        let state = State::open(temp.path()).unwrap();
        assert!(state.claim("pdf", "alice").unwrap());
        assert!(!state.claim("pdf", "bob").unwrap());
        state.change_owners("pdf", &["bob".into()], &[]).unwrap();
        assert!(state.claim("pdf", "bob").unwrap());
        assert!(matches!(
            state.change_owners("pdf", &[], &["alice".into(), "bob".into()]),
            Err(OwnerChangeError::LastOwner)
        ));
        assert_eq!(state.owners("pdf").unwrap(), ["alice", "bob"]);
        assert!(matches!(
            state.create_token("../x"),
            Err(StateError::InvalidUser(_))
        ));
    }
}
