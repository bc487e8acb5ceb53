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
//! A skill's folder is read from the commit's tree objects, never checked
//! out: a repository is hostile input like an archive, so each name is
//! checked (no `.`, `..`, separators or NUL), symlinks and submodules are
//! refused, and the files written are counted against the package limits
//! before the folder goes through [`super::sources::read_folder`] like any
//! other.

#[cfg(feature = "git")]
use std::path::{Path, PathBuf};
#[cfg(feature = "git")]
use std::sync::atomic::AtomicBool;

#[cfg(feature = "git")]
use fs4::fs_std::FileExt as _;
#[cfg(feature = "git")]
use skillpkg_index::archive::Limits;
#[cfg(feature = "git")]
use skillpkg_index::skill::SKILL_MD;

#[cfg(feature = "git")]
use super::sources::{FolderSkill, GitSource, read_fetched};
#[cfg(feature = "git")]
use crate::error::UserError;

/// Without the `git` feature (the fuzz targets build without it), every
/// git source is refused.
#[cfg(not(feature = "git"))]
mod without_git {
    use super::super::sources::{FolderSkill, GitSource};
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
}
#[cfg(not(feature = "git"))]
pub use without_git::{list_skills, read_skill};

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
        let interrupt = AtomicBool::new(false);
        let failed = |error: Box<dyn std::error::Error + Send + Sync>| FetchError {
            url: url.to_owned(),
            source: error,
        };
        let repo = if dir.join("HEAD").is_file() {
            let repo = gix::open(&dir).map_err(|error| failed(error.into()))?;
            let outcome = repo
                .find_remote("origin")
                .map_err(|error| failed(error.into()))?
                .connect(gix::remote::Direction::Fetch)
                .map_err(|error| failed(error.into()))?
                .prepare_fetch(gix::progress::Discard, Default::default())
                .map_err(|error| failed(error.into()))?
                .receive(gix::progress::Discard, &interrupt)
                .map_err(|error| failed(error.into()))?;
            // Branches and tags the remote no longer has go from the
            // clone too: a revision resolves as the remote has it now.
            let kept: std::collections::HashSet<String> = outcome
                .ref_map
                .mappings
                .iter()
                .filter_map(|mapping| mapping.local.as_ref().map(ToString::to_string))
                .collect();
            prune(&repo, &kept)?;
            repo
        } else {
            // Cloned beside, then renamed: a failed clone leaves nothing
            // that looks like a clone.
            let partial = tempfile::Builder::new()
                .prefix(".clone-")
                .tempdir_in(dir.parent().expect("the clone has a parent"))?;
            let mut prepare = gix::prepare_clone_bare(url, partial.path())
                .map_err(|error| failed(error.into()))?
                .configure_remote(|remote| {
                    remote.with_refspecs(REFSPECS, gix::remote::Direction::Fetch)
                });
            prepare
                .fetch_only(gix::progress::Discard, &interrupt)
                .map_err(|error| failed(error.into()))?;
            drop(prepare);
            fs_err::rename(partial.keep(), &dir)?;
            gix::open(&dir).map_err(|error| failed(error.into()))?
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
        let object = self.repo.find_object(id)?;
        let commit = object.peel_to_commit().map_err(|error| {
            UserError::new(format!(
                "`{rev}` in the git repository `{}` is not a commit",
                self.url
            ))
            .with_source(error)
        })?;
        Ok(commit.id)
    }

    /// Returns true if and only if the clone has the commit `id`.
    fn has_commit(&self, id: &gix::ObjectId) -> bool {
        self.repo
            .find_object(*id)
            .is_ok_and(|object| object.kind == gix::object::Kind::Commit)
    }

    /// The tree at `path` (the root when `None`) of `commit`.
    fn tree(&self, commit: gix::ObjectId, path: Option<&str>) -> anyhow::Result<gix::Tree<'_>> {
        let tree = self.repo.find_commit(commit)?.tree()?;
        let Some(path) = path.filter(|path| *path != ".") else {
            return Ok(tree);
        };
        let missing = || -> anyhow::Error {
            UserError::new(format!(
                "the git repository `{}` has no folder `{path}` at commit {commit}",
                self.url
            ))
            .with_hint("give the folder of the skill, relative to the repository's root")
            .into()
        };
        let entry = tree.lookup_entry_by_path(path)?.ok_or_else(missing)?;
        if !entry.mode().is_tree() {
            return Err(missing());
        }
        Ok(entry.object()?.into_tree())
    }

    /// The folders that hold a SKILL.md at `path` (or the root) of
    /// `commit` and up to [`SEARCH_DEPTH`] levels below it, relative to the
    /// repository's root, sorted.
    pub fn find_skills(
        &self,
        commit: gix::ObjectId,
        path: Option<&str>,
    ) -> anyhow::Result<Vec<String>> {
        let start = path.filter(|path| *path != ".").map(str::to_owned);
        let mut found = Vec::new();
        let mut pending = vec![(self.tree(commit, path)?.id, start, 0)];
        while let Some((id, at, level)) = pending.pop() {
            let tree = self.repo.find_tree(id)?;
            let decoded = tree.decode()?;
            if decoded
                .entries
                .iter()
                .any(|entry| entry.filename == SKILL_MD && entry.mode.is_blob())
            {
                found.push(at.unwrap_or_else(|| ".".to_owned()));
                continue;
            }
            if level == SEARCH_DEPTH {
                continue;
            }
            for entry in decoded.entries.iter().filter(|entry| entry.mode.is_tree()) {
                let Ok(name) = std::str::from_utf8(entry.filename) else {
                    continue;
                };
                if name == ".git" || check_name(name).is_err() {
                    continue;
                }
                let child = match &at {
                    Some(at) => format!("{at}/{name}"),
                    None => name.to_owned(),
                };
                pending.push((entry.oid.to_owned(), Some(child), level + 1));
            }
        }
        found.sort();
        Ok(found)
    }

    /// Writes the files of the tree at `path` of `commit` into `into` (a
    /// new folder).
    fn extract(
        &self,
        commit: gix::ObjectId,
        path: Option<&str>,
        into: &Path,
    ) -> anyhow::Result<()> {
        let limits = Limits::default();
        // Files and folders alike count against the package's limits, as
        // they go: trees can be shared, so a few objects can describe
        // millions of folders, and one blob can be gigabytes.
        let mut entries = 0_usize;
        let mut bytes = 0_u64;
        let mut pending = vec![(
            self.tree(commit, path)?.id,
            into.to_owned(),
            String::new(),
            0,
        )];
        fs_err::create_dir(into)?;
        while let Some((id, dir, shown, depth)) = pending.pop() {
            let tree = self.repo.find_tree(id)?;
            let mut names = std::collections::HashSet::new();
            for entry in tree.decode()?.entries {
                let name = std::str::from_utf8(entry.filename)
                    .ok()
                    .filter(|name| check_name(name).is_ok())
                    .ok_or_else(|| {
                        let at = if shown.is_empty() {
                            "the skill's folder".to_owned()
                        } else {
                            format!("`{}`", shown.trim_end_matches('/'))
                        };
                        self.refuse(commit, &format!("the name {:?} in {at}", entry.filename))
                    })?;
                let place = format!("{shown}{name}");
                // Git itself (fsck) refuses a tree that names an entry
                // twice: readers would disagree on which one is the file.
                if !names.insert(name) {
                    return Err(self.refuse(commit, &format!("two entries named `{place}`")));
                }
                entries += 1;
                if entries > limits.max_entries || depth >= limits.max_depth {
                    return Err(self.refuse(
                        commit,
                        &format!(
                            "more than {} files and folders, or folders more than {} deep",
                            limits.max_entries, limits.max_depth
                        ),
                    ));
                }
                let target = dir.join(name);
                match entry.mode.kind() {
                    gix::object::tree::EntryKind::Tree => {
                        fs_err::create_dir(&target)?;
                        pending.push((
                            entry.oid.to_owned(),
                            target,
                            format!("{place}/"),
                            depth + 1,
                        ));
                    }
                    gix::object::tree::EntryKind::Blob
                    | gix::object::tree::EntryKind::BlobExecutable => {
                        // The size from the object's header, before its
                        // bytes are read.
                        bytes += self.repo.find_header(entry.oid)?.size();
                        if bytes > limits.max_unpacked_bytes {
                            return Err(self.refuse(
                                commit,
                                &format!(
                                    "more than {} of files",
                                    skillpkg_index::archive::human_bytes(limits.max_unpacked_bytes)
                                ),
                            ));
                        }
                        let blob = self.repo.find_blob(entry.oid)?;
                        fs_err::write(&target, &blob.data)?;
                        set_executable(
                            &target,
                            entry.mode.kind() == gix::object::tree::EntryKind::BlobExecutable,
                        )?;
                    }
                    gix::object::tree::EntryKind::Link => {
                        return Err(self.refuse(commit, &format!("the symlink `{place}`")));
                    }
                    gix::object::tree::EntryKind::Commit => {
                        return Err(self.refuse(commit, &format!("the submodule `{place}`")));
                    }
                }
            }
        }
        Ok(())
    }

    fn refuse(&self, commit: gix::ObjectId, what: &str) -> anyhow::Error {
        UserError::new(format!(
            "the skill in the git repository `{}` at commit {commit} has {what}, which a skill cannot hold",
            self.url
        ))
        .with_hint("nothing was installed; a skill's files are plain files and folders with portable names")
        .into()
    }
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
/// A name in a tree: one portable path component.
fn check_name(name: &str) -> Result<(), ()> {
    let bad = name.is_empty()
        || name == "."
        || name == ".."
        || name.contains(['/', '\\', '\0'])
        || name.eq_ignore_ascii_case(".git");
    if bad { Err(()) } else { Ok(()) }
}

#[cfg(all(unix, feature = "git"))]
fn set_executable(path: &Path, executable: bool) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    let mode = if executable { 0o755 } else { 0o644 };
    fs_err::set_permissions(path, std::fs::Permissions::from_mode(mode))
}

#[cfg(all(not(unix), feature = "git"))]
fn set_executable(_path: &Path, _executable: bool) -> std::io::Result<()> {
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
    drop(repository);
    // The repository's (or its folder's) name may differ from the skill's.
    let folder = super::sources::named_after_its_skill(staging)?;
    let skill = read_fetched(&folder, origin)?;
    Ok((commit.to_string(), skill))
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

#[cfg(all(test, feature = "git"))]
mod tests {
    use super::*;

    #[test]
    fn names_that_would_leave_their_folder_are_refused() {
        for bad in ["", ".", "..", "a/b", "a\\b", "nul\0", ".git", ".GIT"] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
        for good in ["SKILL.md", ".skillignore", "..x", "a b"] {
            assert!(check_name(good).is_ok(), "{good:?}");
        }
    }
}
