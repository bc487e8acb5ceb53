//! Git repositories as sources of skills, read with `gix` (no `git` binary
//! needed).
//!
//! Each repository is kept as a bare clone in the cache
//! (`<cache>/git/<digest of the URL>`), fetched again when a revision must
//! be resolved or a commit is missing, under a file lock so two skillpkg
//! processes do not fetch into it at once. Its branches are fetched as
//! `refs/remotes/origin/*`, its tags as `refs/tags/*` and its default branch
//! as `refs/remotes/origin/HEAD`.
//!
//! A repository is hostile input like an archive. What a server sends
//! passes through `guard.rs`, which parses the pack as it streams in and
//! stops the fetch, before gix inflates anything, at an object larger than
//! a skill may be or a pack larger than a fetch may be, so that memory and
//! time stay bounded whatever the repository holds. A skill's folder is
//! then read from the commit's tree objects, never checked out (`tree.rs`).

#[cfg(feature = "git")]
use std::path::{Path, PathBuf};
#[cfg(feature = "git")]
use std::sync::atomic::AtomicBool;

#[cfg(feature = "git")]
use fs4::fs_std::FileExt as _;
#[cfg(feature = "git")]
use skillpkg_index::archive::Limits;

#[cfg(feature = "git")]
use super::folder::{FolderSkill, read_fetched};
use super::lockfile::LockedVersion;
#[cfg(feature = "git")]
use super::source::GitSource;
#[cfg(feature = "git")]
use crate::error::UserError;

#[cfg(feature = "git")]
mod guard;
#[cfg(feature = "git")]
mod tree;

/// Without the `git` feature (the fuzz targets build without it), every
/// git source is refused.
#[cfg(not(feature = "git"))]
mod without_git {
    use super::super::folder::FolderSkill;
    use super::super::source::GitSource;
    use crate::error::UserError;

    fn refused(source: &GitSource) -> anyhow::Error {
        UserError::new(format!(
            "`{}` is a git repository, and this skillpkg was built without git support",
            source.url
        ))
        .with_hint("build skillpkg with its default features")
        .into()
    }

    pub fn read_skill(
        source: &GitSource,
        _location: &str,
        _commit: Option<&str>,
        _offline: bool,
        _origin: &str,
    ) -> anyhow::Result<(String, FolderSkill)> {
        Err(refused(source))
    }

    pub fn list_skills(
        source: &GitSource,
        _location: &str,
        _offline: bool,
    ) -> anyhow::Result<(String, Vec<String>)> {
        Err(refused(source))
    }

    pub fn refs_now(source: &GitSource, _location: &str) -> anyhow::Result<super::RefsNow> {
        Err(refused(source))
    }
}
#[cfg(not(feature = "git"))]
pub use without_git::{list_skills, read_skill, refs_now};

/// Where a git source's revision and tags stand now, for `outdated`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RefsNow {
    /// The commit the entry's `rev` (or the default branch) names now.
    pub commit: String,
    /// That commit as a version: its tag, or `git:` and the short commit.
    pub label: LockedVersion,
    /// The repository's highest tag that reads as a version (`v1.3.0`).
    pub newest_tag: Option<String>,
}

/// A repository could not be fetched: the network, the URL or the
/// server. Exits with status 3, like a registry that cannot be reached.
#[derive(Debug, thiserror::Error)]
#[error("cannot fetch the git repository `{url}`")]
pub struct FetchError {
    pub url: String,
    #[source]
    pub source: Box<dyn std::error::Error + Send + Sync>,
}

#[cfg(feature = "git")]
/// A bare clone in the cache, locked while it is used.
pub struct Repository {
    repo: gix::Repository,
    url: String,
    _lock: fs_err::File,
}

#[cfg(feature = "git")]
impl std::fmt::Debug for Repository {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Repository")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

#[cfg(feature = "git")]
/// The refspecs every cached clone fetches.
const REFSPECS: [&str; 3] = [
    "+HEAD:refs/remotes/origin/HEAD",
    "+refs/heads/*:refs/remotes/origin/*",
    "+refs/tags/*:refs/tags/*",
];

#[cfg(feature = "git")]
/// How deep below a repository's root (or the given path) `add` looks for
/// skills.
pub const SEARCH_DEPTH: usize = 4;

#[cfg(feature = "git")]
/// Installs the TLS crypto provider gix's HTTP client needs (ring, which
/// the rest of skillpkg uses too); harmless when one is installed already.
fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

#[cfg(feature = "git")]
impl Repository {
    /// Opens the cached clone of `url` without fetching, creating nothing;
    /// `None` when there is none yet.
    fn cached(cache: &Path, url: &str) -> anyhow::Result<Option<Self>> {
        let (dir, lock) = Self::lock(cache, url)?;
        if !dir.join("HEAD").is_file() {
            return Ok(None);
        }
        let repo = gix::open(&dir).map_err(|error| {
            UserError::new(format!(
                "the cached clone of `{url}` at {} cannot be read",
                dir.display()
            ))
            .with_hint(format!("delete {} and try again", dir.display()))
            .with_source(error)
        })?;
        Ok(Some(Self {
            repo,
            url: url.to_owned(),
            _lock: lock,
        }))
    }

    /// The folder of `url`'s clone, and a lock on it.
    fn lock(cache: &Path, url: &str) -> anyhow::Result<(PathBuf, fs_err::File)> {
        let key = skillpkg_index::checksum::Checksum::of(url.as_bytes()).hex();
        let root = cache.join("git");
        fs_err::create_dir_all(&root)?;
        let dir = root.join(&key[..24]);
        let lock = fs_err::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(root.join(format!("{}.lock", &key[..24])))?;
        lock.file().lock_exclusive()?;
        Ok((dir, lock))
    }

    /// Opens the cached clone of `url`, fetching it (cloning it the first
    /// time).
    pub fn fetch(cache: &Path, url: &str) -> anyhow::Result<Self> {
        install_crypto_provider();
        let started = std::time::Instant::now();
        tracing::info!(%url, "fetching the git repository");
        let (dir, lock) = Self::lock(cache, url)?;
        let repo = if dir.join("HEAD").is_file() {
            let repo = gix::open(&dir).map_err(|error| fetch_error(url, error.into()))?;
            receive(&repo, url)?;
            repo
        } else {
            // Cloned beside, then renamed: a failed clone leaves nothing
            // that looks like a clone.
            let partial = tempfile::Builder::new()
                .prefix(".clone-")
                .tempdir_in(dir.parent().expect("the clone has a parent"))?;
            let repo = gix::init_bare(partial.path())?;
            receive(&repo, url)?;
            drop(repo);
            fs_err::rename(partial.keep(), &dir)?;
            gix::open(&dir)?
        };
        tracing::info!(
            %url,
            ms = started.elapsed().as_millis() as u64,
            "fetched the git repository"
        );
        Ok(Self {
            repo,
            url: url.to_owned(),
            _lock: lock,
        })
    }

    /// Resolves `rev` (a tag, a branch or a commit id; the default branch
    /// when `None`) to a commit.
    pub fn resolve(&self, rev: Option<&str>) -> anyhow::Result<gix::ObjectId> {
        let candidates: Vec<String> = match rev {
            None => vec!["refs/remotes/origin/HEAD".to_owned()],
            Some(rev) => vec![
                format!("refs/tags/{rev}"),
                format!("refs/remotes/origin/{rev}"),
            ],
        };
        for name in &candidates {
            if let Ok(Some(mut reference)) = self.repo.try_find_reference(name.as_str())
                && let Ok(id) = reference.peel_to_id()
            {
                return self.commit_of(id.detach(), rev.unwrap_or("HEAD"));
            }
        }
        if let Some(rev) = rev.filter(|rev| {
            (4..=40).contains(&rev.len()) && rev.bytes().all(|byte| byte.is_ascii_hexdigit())
        }) && let Ok(id) = self.repo.rev_parse_single(rev)
        {
            return self.commit_of(id.detach(), rev);
        }
        let what = match rev {
            Some(rev) => format!("has no branch, tag or commit `{rev}`"),
            None => "has no default branch (it is empty, or its HEAD names no branch)".to_owned(),
        };
        Err(UserError::new(format!("the git repository `{}` {what}", self.url))
        .with_hint("give a branch, a tag or a commit id the repository has (`rev` in skills.toml, `#REV` or `@REV` on the command line)")
        .into())
    }

    /// The commit `id` is or points to (an annotated tag).
    fn commit_of(&self, id: gix::ObjectId, rev: &str) -> anyhow::Result<gix::ObjectId> {
        let object = self.repo.try_find_object(id)?.ok_or_else(|| {
            UserError::new(format!(
                "the git repository `{}` is malformed: `{rev}` names the object {id}, which the repository does not have",
                self.url
            ))
            .with_hint("nothing was installed; the repository breaks git's rules: tell its owner")
        })?;
        let commit = object.peel_to_commit().map_err(|error| {
            UserError::new(format!(
                "`{rev}` in the git repository `{}` is not a commit",
                self.url
            ))
            .with_source(error)
        })?;
        Ok(commit.id)
    }

    /// The tags of the clone that point at the commit `commit` (annotated
    /// tags peeled), by their short names (`v1.2.0`).
    fn tags_at(&self, commit: &str) -> Vec<String> {
        let Ok(id) = gix::ObjectId::from_hex(commit.as_bytes()) else {
            return Vec::new();
        };
        self.tag_names(|tag| tag.peel_to_id().is_ok_and(|target| target.detach() == id))
    }

    /// The short names of the clone's tags that `keep` keeps.
    fn tag_names(&self, mut keep: impl FnMut(&mut gix::Reference<'_>) -> bool) -> Vec<String> {
        let Ok(references) = self.repo.references() else {
            return Vec::new();
        };
        let Ok(tags) = references.tags() else {
            return Vec::new();
        };
        tags.flatten()
            .filter_map(|mut tag| keep(&mut tag).then(|| tag.name().shorten().to_string()))
            .collect()
    }

    /// Returns true if and only if the clone has the commit `id`.
    fn has_commit(&self, id: &gix::ObjectId) -> bool {
        self.repo.try_find_header(*id).is_ok_and(|header| {
            header.is_some_and(|header| header.kind() == gix::object::Kind::Commit)
        })
    }
}

#[cfg(feature = "git")]
/// What one fetch may cost, enforced by `guard.rs` on the bytes the server
/// sends, before gix inflates them (docs/sources.md, "Bounded fetches").
fn fetch_limits() -> guard::FetchLimits {
    guard::FetchLimits {
        // No file of a skill can be larger, and gix holds an object (a
        // delta's base and result too) whole in memory to hash it.
        object_bytes: Limits::default().max_unpacked_bytes,
        // Far above a repository of skills (most packs are a few MB), and
        // what a fetch may download and write.
        pack_bytes: 256 << 20,
        // The work of indexing the pack (every object inflated and hashed
        // once), and the most the bases of its deltas can hold at once.
        inflated_bytes: 512 << 20,
        // gix keeps about a hundred bytes an entry while it indexes, and
        // reserves them for the count the pack declares.
        entries: 200_000,
        // References advertised and acknowledgements, which gix keeps.
        text_bytes: 16 << 20,
    }
}

#[cfg(feature = "git")]
fn fetch_error(url: &str, error: Box<dyn std::error::Error + Send + Sync>) -> anyhow::Error {
    FetchError {
        url: url.to_owned(),
        source: error,
    }
    .into()
}

#[cfg(feature = "git")]
/// Fetches `url` into `repo` through `guard.rs`: the branches as
/// `refs/remotes/origin/*`, the tags as `refs/tags/*` and the default
/// branch as `refs/remotes/origin/HEAD`; then deletes what the remote no
/// longer has. A fetch the guard stops is the repository's fault (exit 1),
/// any other failure is the network's or the server's (exit 3).
fn receive(repo: &gix::Repository, url: &str) -> anyhow::Result<()> {
    use gix::protocol::transport::client::blocking_io::connect;
    let failed = |error: gix::Error| fetch_error(url, error.into());
    let remote = repo
        .remote_at(url)
        .and_then(|remote| remote.with_refspecs(REFSPECS, gix::remote::Direction::Fetch))
        .map_err(failed)?;
    let (location, version) = remote
        .sanitized_url_and_version(gix::remote::Direction::Fetch)
        .map_err(failed)?;
    let ssh = if location.scheme == gix::url::Scheme::Ssh {
        repo.ssh_connect_options().map_err(failed)?
    } else {
        Default::default()
    };
    let transport = connect::connect(
        location,
        connect::Options {
            version,
            ssh,
            trace: false,
        },
    )
    .map_err(failed)?;
    let limits = fetch_limits();
    let guard = guard::Guard::new(limits, repo.object_hash());
    let interrupt = AtomicBool::new(false);
    let outcome = remote
        .to_connection_with_transport(guard::Guarded::new(
            transport,
            std::sync::Arc::clone(&guard),
        ))
        .prepare_fetch(gix::progress::Discard, Default::default())
        .and_then(|prepare| prepare.receive(gix::progress::Discard, &interrupt));
    let outcome = match (outcome, guard.refusal()) {
        (_, Some(refusal)) => {
            tracing::info!(%url, ?refusal, "refused the git repository");
            return Err(UserError::new(format!(
                "the git repository `{url}` {}",
                refusal.describe(&limits)
            ))
            .with_hint(refusal.hint())
            .into());
        }
        (Err(error), None) => {
            tracing::debug!(%url, %error, "the fetch failed");
            return Err(match guard.remote_corruption() {
                Some(said) => UserError::new(format!(
                    "the git repository `{url}` is damaged: its server stopped sending it, and said: {}",
                    if said.is_empty() {
                        "\"aborting due to possible repository corruption on the remote side\"".to_owned()
                    } else {
                        said.iter()
                            .map(|line| format!("`{line}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    }
                ))
                // What gix saw is only the pack ending early.
                .with_hint("nothing was installed; the repository breaks git's rules (a tree names an object that is not what it says, or that is missing): tell its owner")
                .into(),
                None => failed(error),
            });
        }
        (Ok(outcome), None) => outcome,
    };
    // Branches and tags the remote no longer has go from the clone too: a
    // revision resolves as the remote has it now.
    let kept: std::collections::HashSet<String> = outcome
        .ref_map
        .mappings
        .iter()
        .filter_map(|mapping| mapping.local.as_ref().map(ToString::to_string))
        .collect();
    prune(repo, &kept)
}

/// Deletes the remote-tracking branches and tags of `repo` that the last
/// fetch did not map (`kept`): what the remote deleted.
#[cfg(feature = "git")]
fn prune(repo: &gix::Repository, kept: &std::collections::HashSet<String>) -> anyhow::Result<()> {
    use gix::refs::transaction::{Change, PreviousValue, RefEdit, RefLog};
    let mut stale = Vec::new();
    for prefix in ["refs/remotes/origin/", "refs/tags/"] {
        for reference in repo.references()?.prefixed(prefix)? {
            let reference = reference.map_err(|error| anyhow::anyhow!("{error}"))?;
            let name = reference.name().as_bstr().to_string();
            if !kept.contains(&name) {
                stale.push(reference.name().to_owned());
            }
        }
    }
    for name in stale {
        tracing::debug!(reference = %name.as_bstr(), "pruned");
        repo.edit_reference(RefEdit {
            change: Change::Delete {
                expected: PreviousValue::Any,
                log: RefLog::AndReference,
            },
            name,
            deref: false,
        })?;
    }
    Ok(())
}

#[cfg(feature = "git")]
/// The cache folder git clones live in.
fn cache_root() -> anyhow::Result<PathBuf> {
    Ok(crate::client::Cache::open()?.root().to_owned())
}

#[cfg(feature = "git")]
/// Reads the skill `source` names (its repository at `location`: the URL,
/// or a local path resolved against the project), at `commit` when given (a locked one:
/// fetched only when the cached clone lacks it), else at the commit its
/// `rev` resolves to now (always fetched). Returns the commit and the
/// skill, validated and packed. `origin` names the entry for messages.
pub fn read_skill(
    source: &GitSource,
    location: &str,
    commit: Option<&str>,
    offline: bool,
    origin: &str,
) -> anyhow::Result<(String, FolderSkill)> {
    off_the_runtime(|| read_skill_here(source, location, commit, offline, origin))
}

#[cfg(feature = "git")]
/// The repositories this process fetched, and the commits their
/// revisions resolved to: one fetch per repository and one commit per
/// revision in a run, so that the skills of one branch added or installed
/// together are locked at the same commit.
static FETCHED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
#[cfg(feature = "git")]
type Resolutions = Vec<((String, Option<String>), gix::ObjectId)>;
#[cfg(feature = "git")]
static RESOLVED: std::sync::Mutex<Resolutions> = std::sync::Mutex::new(Vec::new());

#[cfg(feature = "git")]
fn resolved(location: &str, rev: Option<&str>) -> Option<gix::ObjectId> {
    let memo = RESOLVED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    memo.iter()
        .find(|((at, at_rev), _)| at == location && at_rev.as_deref() == rev)
        .map(|(_, id)| *id)
}

#[cfg(feature = "git")]
/// The cached clone of `location`, fetched unless this process fetched it
/// already.
fn fetch_once(cache: &Path, location: &str) -> anyhow::Result<Repository> {
    let fetched = FETCHED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .iter()
        .any(|at| at == location);
    if fetched && let Some(cached) = Repository::cached(cache, location)? {
        return Ok(cached);
    }
    let repository = Repository::fetch(cache, location)?;
    FETCHED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .push(location.to_owned());
    Ok(repository)
}

#[cfg(feature = "git")]
fn resolve_once(
    repository: &Repository,
    location: &str,
    rev: Option<&str>,
) -> anyhow::Result<gix::ObjectId> {
    if let Some(id) = resolved(location, rev) {
        return Ok(id);
    }
    let id = repository.resolve(rev)?;
    tracing::info!(%location, rev = rev.unwrap_or("HEAD"), commit = %id, "resolved");
    RESOLVED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .push(((location.to_owned(), rev.map(str::to_owned)), id));
    Ok(id)
}

#[cfg(feature = "git")]
/// Runs `work` on a thread of its own: gix's HTTP transport is reqwest's
/// blocking client, which must not run (or be dropped) on a thread that
/// drives an async runtime, as `install`'s does.
fn off_the_runtime<T: Send>(work: impl FnOnce() -> anyhow::Result<T> + Send) -> anyhow::Result<T> {
    std::thread::scope(|scope| {
        scope
            .spawn(work)
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

#[cfg(feature = "git")]
fn read_skill_here(
    source: &GitSource,
    location: &str,
    commit: Option<&str>,
    offline: bool,
    origin: &str,
) -> anyhow::Result<(String, FolderSkill)> {
    let cache = cache_root()?;
    let locked = commit
        .map(|commit| {
            gix::ObjectId::from_hex(commit.as_bytes()).map_err(|error| {
                UserError::new(format!(
                    "{origin}: `{commit}` in skills.lock is not a commit id"
                ))
                .with_hint("delete skills.lock and run `skillpkg install` to write a fresh one")
                .with_source(error)
            })
        })
        .transpose()?;
    let resolved = resolved(location, source.rev.as_deref());
    let offline_refusal = |why: &str| -> anyhow::Error {
        UserError::new(format!(
            "{origin}: the git repository `{location}` {why}, and --offline (or --frozen) forbids fetching it"
        ))
        .with_hint("run without --offline once")
        .into()
    };
    let wanted = locked.or(resolved);
    let repository = match (wanted, Repository::cached(&cache, location)?) {
        (Some(id), Some(cached)) if cached.has_commit(&id) => cached,
        (_, cached) if offline => {
            return Err(offline_refusal(if cached.is_none() {
                "is not in the cache"
            } else if locked.is_some() {
                "lacks the locked commit in the cache"
            } else {
                "must be fetched to resolve its revision"
            }));
        }
        (_, cached) => {
            drop(cached);
            fetch_once(&cache, location)?
        }
    };
    let commit = match locked {
        Some(id) if repository.has_commit(&id) => id,
        Some(id) => {
            return Err(UserError::new(format!(
                "{origin}: the git repository `{location}` does not have the commit {id} that skills.lock pins"
            ))
            .with_hint("its history was rewritten (or the lock edited); run `skillpkg update` with the skill's name to lock a commit it has")
            .into());
        }
        None => match resolved {
            Some(id) => id,
            None => resolve_once(&repository, location, source.rev.as_deref())?,
        },
    };
    let scratch = tempfile::tempdir()?;
    let staging = scratch.path().join("skill");
    repository.extract(commit, source.path.as_deref(), &staging)?;
    let commit = commit.to_string();
    let tags = repository.tags_at(&commit);
    drop(repository);
    // The repository's (or its folder's) name may differ from the skill's.
    let folder = super::folder::named_after_its_skill(staging)?;
    let mut skill = read_fetched(&folder, origin)?;
    // A skill whose SKILL.md gives no version is known by its tag, or its
    // commit, never as 0.0.0.
    if !skill.versioned {
        skill.label = Some(LockedVersion::for_commit(&commit, &tags));
    }
    Ok((commit, skill))
}

#[cfg(feature = "git")]
/// Fetches `location` and says where `source`'s revision and the
/// repository's tags stand now.
pub fn refs_now(source: &GitSource, location: &str) -> anyhow::Result<RefsNow> {
    off_the_runtime(|| {
        let repository = fetch_once(&cache_root()?, location)?;
        let commit = resolve_once(&repository, location, source.rev.as_deref())?.to_string();
        let label = LockedVersion::for_commit(&commit, &repository.tags_at(&commit));
        let newest_tag =
            super::lockfile::newest_version_tag(&repository.tag_names(|_| true)).cloned();
        Ok(RefsNow {
            commit,
            label,
            newest_tag,
        })
    })
}

#[cfg(feature = "git")]
/// The skills of a repository, for `add`: fetches it, resolves `rev` and
/// lists the folders with a SKILL.md at `path` and below. Returns the commit
/// and the folders.
pub fn list_skills(
    source: &GitSource,
    location: &str,
    offline: bool,
) -> anyhow::Result<(String, Vec<String>)> {
    if offline {
        return Err(UserError::new(format!(
            "adding from the git repository `{location}` fetches it, and --offline forbids that"
        ))
        .into());
    }
    off_the_runtime(|| {
        let repository = fetch_once(&cache_root()?, location)?;
        let commit = resolve_once(&repository, location, source.rev.as_deref())?;
        let found = repository.find_skills(commit, source.path.as_deref())?;
        Ok((commit.to_string(), found))
    })
}
