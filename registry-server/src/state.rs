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
//! files are private (0600), replaced atomically, and every change holds the
//! lock file, so the `token` commands and a running server can change state
//! at the same time.
//!
//! `tokens.json` is read on the first request that needs it and kept in
//! memory; every later request checks the file's size, modification time
//! and inode (one `stat`) and reads it again only when they changed, so a
//! token created or revoked by `skillpkg-registry token` counts from the
//! next request on. A file modified less than [`RACY_WINDOW`] before it was
//! read is read again until it settles: a change within the clock's
//! granularity that keeps the size would otherwise go unseen (git's "racy
//! git" problem). `owners.json` is read by the operations that need it,
//! which run off the async threads.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use base64::Engine as _;
use fs4::fs_std::FileExt;
use skillpkg_index::checksum::Checksum;
use skillpkg_index::fs::{WriteError, WriteOptions, write_atomic_with};
use skillpkg_index::secret::Secret;

const TOKENS_FILE: &str = "tokens.json";
const OWNERS_FILE: &str = "owners.json";
const LOCK_FILE: &str = ".lock";
/// Every token starts with this, so secret scanners can recognise one.
pub const TOKEN_PREFIX: &str = "skp_";

/// How long after its last change a file's size, modification time and
/// inode are trusted to tell every later change: modification times are
/// kept at the kernel clock's tick (a few milliseconds), some file systems'
/// at a second or two.
pub const RACY_WINDOW: Duration = Duration::from_secs(2);

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
    Write(#[from] WriteError),
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
    /// `tokens.json` as last read, shared by the clones.
    tokens: Arc<Mutex<Option<LoadedTokens>>>,
    /// [`RACY_WINDOW`], but in tests.
    racy_window: Duration,
}

/// What tells one version of a file from the next without reading it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stamp {
    len: u64,
    modified: Option<SystemTime>,
    /// The inode and the status change time: an atomic replacement is a
    /// new inode, and an edit in place moves the change time even when it
    /// keeps the size and sets the modification time back.
    inode: u64,
    changed: Option<SystemTime>,
}

impl Stamp {
    fn of(metadata: &std::fs::Metadata) -> Self {
        #[cfg(unix)]
        let (inode, changed) = {
            use std::os::unix::fs::MetadataExt as _;
            let changed = u64::try_from(metadata.ctime()).ok().map(|seconds| {
                let nanos = u32::try_from(metadata.ctime_nsec()).unwrap_or(0);
                SystemTime::UNIX_EPOCH + Duration::new(seconds, nanos)
            });
            (metadata.ino(), changed)
        };
        #[cfg(not(unix))]
        let (inode, changed) = (0, None);
        Self {
            len: metadata.len(),
            modified: metadata.modified().ok(),
            inode,
            changed,
        }
    }

    /// Returns true if and only if the file last changed at least
    /// `window` before `now`, so that any later change changes the stamp.
    fn settled(&self, now: SystemTime, window: Duration) -> bool {
        let last = self.modified.max(self.changed);
        last.and_then(|last| now.duration_since(last).ok())
            .is_some_and(|age| age >= window)
    }
}

/// The tokens of `tokens.json` as read, by hash.
#[derive(Debug)]
struct LoadedTokens {
    /// The file's stamp before it was read; `None`: there was no file.
    stamp: Option<Stamp>,
    /// Whether the stamp alone tells a later change ([`Stamp::settled`]).
    settled: bool,
    users: BTreeMap<Checksum, String>,
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
        Ok(Self::at(dir))
    }

    /// The state folder `dir` as it is, created by nothing: for a server
    /// that writes nothing (a mirror), where a missing folder has no tokens
    /// and no owners.
    pub fn at(dir: &Path) -> Self {
        Self {
            dir: dir.to_owned(),
            tokens: Arc::default(),
            racy_window: RACY_WINDOW,
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
        let options = WriteOptions::private().create_parents();
        Ok(write_atomic_with(&self.dir.join(file), &bytes, &options)?)
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
    pub fn create_token(&self, user: &str) -> Result<(Secret, TokenRecord), StateError> {
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

    /// Returns the user a presented token belongs to, if it is valid,
    /// reading `tokens.json` only when it changed since it was last read.
    /// Blocking: a stat, and sometimes a read.
    pub fn authenticate(&self, presented: &Secret) -> Result<Option<String>, StateError> {
        let hash = Checksum::of(presented.expose().as_bytes());
        let stamp = self.tokens_stamp()?;
        if let Some(user) = self.cached_user(stamp, &hash) {
            return Ok(user);
        }
        // Stamped before it is read: a change in between is a new stamp at
        // the next request, never a change that goes unseen.
        let file: TokensFile = self.read(TOKENS_FILE)?;
        let users: BTreeMap<Checksum, String> = file
            .tokens
            .into_iter()
            .map(|record| (record.hash, record.user))
            .collect();
        let user = users.get(&hash).cloned();
        let settled = stamp.is_none_or(|stamp| stamp.settled(SystemTime::now(), self.racy_window));
        *self.lock_tokens() = Some(LoadedTokens {
            stamp,
            settled,
            users,
        });
        Ok(user)
    }

    /// Returns the user of a presented token from the tokens in memory,
    /// when `tokens.json` has not changed since they were read; `None` when
    /// it must be read again (or cannot be checked), which
    /// [`State::authenticate`] does. Costs a stat, never a read, so it may
    /// run on an async thread.
    pub fn authenticate_cached(&self, presented: &Secret) -> Option<Option<String>> {
        let stamp = self.tokens_stamp().ok()?;
        self.cached_user(stamp, &Checksum::of(presented.expose().as_bytes()))
    }

    /// The stamp of `tokens.json` now; `None` when there is none.
    fn tokens_stamp(&self) -> Result<Option<Stamp>, StateError> {
        let path = self.dir.join(TOKENS_FILE);
        match fs_err::metadata(&path) {
            Ok(metadata) => Ok(Some(Stamp::of(&metadata))),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(StateError::Io { path, source }),
        }
    }

    /// The user of `hash` from the tokens in memory, if they were read from
    /// the file `stamp` describes and that stamp can be trusted.
    fn cached_user(&self, stamp: Option<Stamp>, hash: &Checksum) -> Option<Option<String>> {
        let loaded = self.lock_tokens();
        let loaded = loaded.as_ref()?;
        (loaded.settled && loaded.stamp == stamp).then(|| loaded.users.get(hash).cloned())
    }

    fn lock_tokens(&self) -> std::sync::MutexGuard<'_, Option<LoadedTokens>> {
        // The cache is replaced whole: a panic elsewhere leaves it usable.
        self.tokens
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
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
        assert_eq!(format!("{token:?}"), "****");
        let stored = fs_err::read_to_string(temp.path().join(TOKENS_FILE)).unwrap();
        assert!(!stored.contains(token.expose()), "only the hash is stored");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = fs_err::metadata(temp.path().join(TOKENS_FILE))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600, "tokens.json is private");
        }
        assert_eq!(
            state.authenticate(&token).unwrap().as_deref(),
            Some("alice")
        );
        assert_eq!(
            state.authenticate(&Secret::from("skp_wrong")).unwrap(),
            None
        );
        state.revoke_token(&record.id).unwrap();
        assert_eq!(state.authenticate(&token).unwrap(), None);
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

    #[test]
    fn tokens_are_read_once_and_again_only_when_the_file_changes() {
        let temp = tempfile::tempdir().unwrap();
        // The server's view, and the `token` command's, as two processes.
        // The server trusts a stamp at once, as it does once a file is
        // older than the racy window.
        let server = State {
            racy_window: Duration::ZERO,
            ..State::open(temp.path()).unwrap()
        };
        let admin = State::open(temp.path()).unwrap();
        let (alice, _) = admin.create_token("alice").unwrap();
        assert_eq!(server.authenticate_cached(&alice), None, "nothing read yet");
        assert_eq!(
            server.authenticate(&alice).unwrap().as_deref(),
            Some("alice")
        );
        assert_eq!(
            server.authenticate_cached(&alice),
            Some(Some("alice".to_owned())),
            "answered from memory while the file is unchanged"
        );
        assert_eq!(
            server.authenticate_cached(&Secret::from("skp_x")),
            Some(None)
        );

        // A token created or revoked now counts at the next request: the
        // file was replaced, a new inode, whatever its size and times.
        let (bob, record) = admin.create_token("bob").unwrap();
        assert_eq!(server.authenticate_cached(&bob), None);
        assert_eq!(server.authenticate(&bob).unwrap().as_deref(), Some("bob"));
        admin.revoke_token(&record.id).unwrap();
        assert_eq!(server.authenticate_cached(&bob), None);
        assert_eq!(server.authenticate(&bob).unwrap(), None, "revoked at once");

        // A broken file is an error, never the tokens read before it.
        fs_err::write(temp.path().join(TOKENS_FILE), "{ not json").unwrap();
        assert!(matches!(
            server.authenticate(&alice),
            Err(StateError::Corrupt { .. })
        ));
    }

    #[test]
    fn a_file_changed_within_the_racy_window_is_read_at_every_request() {
        let temp = tempfile::tempdir().unwrap();
        let state = State::open(temp.path()).unwrap();
        let (alice, _) = state.create_token("alice").unwrap();
        let path = temp.path().join(TOKENS_FILE);
        assert_eq!(
            state.authenticate(&alice).unwrap().as_deref(),
            Some("alice")
        );
        // Just written: an edit in place within the clock's granularity
        // that keeps the size could leave the stamp as it is.
        assert_eq!(state.authenticate_cached(&alice), None);
        let text = fs_err::read_to_string(&path).unwrap();
        let renamed = text.replace("\"alice\"", "\"carol\"");
        assert_eq!(renamed.len(), text.len());
        fs_err::write(&path, renamed).unwrap();
        assert_eq!(
            state.authenticate(&alice).unwrap().as_deref(),
            Some("carol")
        );

        // Settled once both of its times are older than the window.
        let now = SystemTime::now();
        let stamp = Stamp::of(&fs_err::metadata(&path).unwrap());
        assert!(!stamp.settled(now, RACY_WINDOW));
        assert!(stamp.settled(now + RACY_WINDOW, RACY_WINDOW));
        let old = Stamp {
            changed: Some(now - RACY_WINDOW * 2),
            modified: Some(now - RACY_WINDOW * 2),
            ..stamp
        };
        assert!(old.settled(now, RACY_WINDOW));
        let touched_back = Stamp {
            changed: Some(now),
            ..old
        };
        assert!(
            !touched_back.settled(now, RACY_WINDOW),
            "the change time counts"
        );
    }
}
