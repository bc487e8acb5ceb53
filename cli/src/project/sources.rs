//! Skills that come from somewhere other than a registry (docs/sources.md),
//! as a manifest's entries ([`super::source`]) name them: read, fetched and
//! locked.
//!
//! Such a skill goes through the same gate as a registry's archive: its
//! folder is validated as `publish` would, packed by skillpkg's own packer
//! (which leaves out what a package leaves out and refuses what it
//! refuses: symlinks, unportable paths, more than 8 MiB), and the archive is
//! then unpacked, tree-hashed, audited and installed like any other. The
//! lock pins its files by their tree hash, not by an archive checksum: the
//! bytes of an archive skillpkg packs may change between its versions, the
//! files do not.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use skillpkg_index::archive::PackedSkill;
use skillpkg_index::skill::SkillName;

use super::folder::{FolderSkill, folder_of, read_folder};
use super::lockfile::{LockedSkill, Lockfile};
use super::manifest::Manifest;
use super::source::{Direct, describe_source, locked_commit};
use crate::error::UserError;

/// The skills of the manifest that come from a folder or a repository, as
/// they stand now.
#[derive(Debug, Default)]
pub struct DirectLock {
    /// Their lock entries.
    pub entries: Vec<LockedSkill>,
    /// The archives packed from their files, by name.
    pub packed: BTreeMap<SkillName, PackedSkill>,
    pub warnings: Vec<String>,
}

impl DirectLock {
    /// Returns the locked entry of `name` when the lock has it from the
    /// same source with the same files.
    pub fn satisfied_by(&self, lock: &Lockfile) -> bool {
        self.entries.iter().all(|entry| {
            lock.get(&entry.name)
                .is_some_and(|locked| locked.source == entry.source && locked.tree == entry.tree)
        })
    }

    /// The first skill whose files changed since `lock` pinned them from the
    /// same source.
    pub fn changed_since<'a>(&'a self, lock: &Lockfile) -> Option<&'a LockedSkill> {
        self.entries.iter().find(|entry| {
            lock.get(&entry.name)
                .is_some_and(|locked| locked.source == entry.source && locked.tree != entry.tree)
        })
    }
}

/// Locks every skill of the manifest that comes from a folder or a git
/// repository. A folder is validated and packed now (it is read again at
/// every install: its files are the truth, and the lock follows them). A
/// git source keeps its locked commit while its entry (URL, `rev`, `path`)
/// is unchanged and it is not being updated (`update`: the names to
/// update, all when empty); else its `rev` is resolved again, and the
/// skill read at that commit.
pub async fn lock_direct(
    root: &Path,
    manifest: &Manifest,
    old: Option<&Lockfile>,
    update: Option<&[SkillName]>,
    offline: bool,
    locked: bool,
    targets: &[super::targets::Target],
) -> anyhow::Result<DirectLock> {
    let mut lock = DirectLock::default();
    for (name, source) in &manifest.direct {
        let origin = format!("`{name}` in skills.toml");
        let updating = update.is_some_and(|names| names.is_empty() || names.contains(name));
        tracing::debug!(skill = %name, source = %source.describe(), "reading");
        if let Direct::Path(path) = source {
            let dir = folder_of(root, path);
            check_apart_from_targets(&dir, targets, &origin, path)?;
            let folder = read_folder(&dir, &origin)?;
            lock.add(name, source.lock_source(None), None, folder, old)?;
            continue;
        }
        // A source fetched from elsewhere keeps what the lock pins while
        // its entry is unchanged; it is read only when a target needs its
        // files.
        if let Some(entry) = old
            .and_then(|lock| lock.get(name))
            .filter(|entry| source.locked_by(entry) && !updating)
        {
            lock.entries.push(entry.clone());
            continue;
        }
        if locked {
            // Not locked as skills.toml asks: the lock does not satisfy the
            // manifest, which --locked refuses (without fetching anything).
            continue;
        }
        if offline {
            return Err(UserError::new(format!(
                "{origin} comes from the {}, which must be fetched to lock it, and --offline forbids that",
                source.describe()
            ))
            .with_hint("run without --offline once")
            .into());
        }
        let (lock_source, checksum, folder) = fetch(root, source, name, None, &origin).await?;
        lock.add(name, lock_source, checksum, folder, old)?;
    }
    Ok(lock)
}

/// Refuses a skill folder that is inside an install target (installing it
/// would replace the very folder it is read from) or that holds one (each
/// install would pack the copies it made before).
fn check_apart_from_targets(
    dir: &Path,
    targets: &[super::targets::Target],
    origin: &str,
    path: &str,
) -> anyhow::Result<()> {
    let resolve = |path: &Path| -> PathBuf {
        // A target may not exist yet: its nearest existing ancestor,
        // resolved, and the rest as written.
        let mut existing = path;
        let mut rest = Vec::new();
        while !existing.exists() {
            let Some(parent) = existing.parent() else {
                break;
            };
            rest.push(existing.file_name().unwrap_or_default().to_owned());
            existing = parent;
        }
        let mut resolved = std::fs::canonicalize(existing).unwrap_or_else(|_| existing.to_owned());
        resolved.extend(rest.iter().rev());
        resolved
    };
    let folder = resolve(dir);
    for target in targets {
        let target_dir = resolve(&target.dir);
        let relation = if folder.starts_with(&target_dir) {
            "is inside"
        } else if target_dir.starts_with(&folder) {
            "holds"
        } else {
            continue;
        };
        return Err(UserError::new(format!(
            "{origin} is taken from folder {path}, which {relation} the install target `{}` ({})",
            target.name,
            target.dir.display()
        ))
        .with_hint("keep the skill's own folder apart from the agent folders skillpkg installs into, such as skills/NAME")
        .into());
    }
    Ok(())
}

/// Fetches the skill `name` that `source` (not a folder) names: at the
/// commit, digest or checksum `pinned` says (from skills.lock), else as
/// the source stands now. Returns the `source` to lock, the checksum to
/// lock (of a tarball or an index's artifact) and the skill.
pub async fn fetch(
    root: &Path,
    source: &Direct,
    name: &SkillName,
    pinned: Option<&LockedSkill>,
    origin: &str,
) -> anyhow::Result<(
    String,
    Option<skillpkg_index::checksum::Checksum>,
    FolderSkill,
)> {
    match source {
        Direct::Path(path) => Err(anyhow::anyhow!("the folder {path} is not fetched")),
        Direct::Git(git) => {
            let commit = pinned.and_then(|entry| locked_commit(&entry.source));
            let location = git.location(root);
            let (commit, folder) = super::git::read_skill(git, &location, commit, false, origin)?;
            Ok((source.lock_source(Some(&commit)), None, folder))
        }
        Direct::Index(site) => {
            let index = super::web::read_index(site).await?;
            let Some(skill) = index.skills.iter().find(|skill| &skill.name == name) else {
                let why = index
                    .skipped
                    .iter()
                    .find(|why| why.starts_with(&format!("`{name}`")))
                    .map(|why| format!(" (its entry is not valid: {why})"))
                    .unwrap_or_default();
                return Err(UserError::new(format!(
                    "{origin}: the discovery index at {} lists no skill `{name}`{why}",
                    index.url
                ))
                .with_hint(format!("it lists {}", listed(&index)))
                .into());
            };
            let locked = pinned.and_then(|entry| entry.checksum);
            let mut folder = super::web::read_index_skill(skill, locked, origin).await?;
            // Read through the discovery index, a registry's skill has no
            // signature and no version: never silently.
            if super::web::is_registry(site).await.unwrap_or(false) {
                folder.warnings.push(format!(
                    "{origin} is read through the discovery index of {site}, which is a skillpkg registry: its signature and version are not checked; `skillpkg add {site} --skill {name}` installs it as a registry skill"
                ));
            }
            Ok((source.lock_source(None), skill.artifact.digest(), folder))
        }
        Direct::Url(url) => {
            let url = super::web::parse_url(url)?;
            let locked = pinned.and_then(|entry| entry.checksum);
            let (checksum, folder) = super::web::read_tarball(&url, locked, origin).await?;
            Ok((source.lock_source(None), Some(checksum), folder))
        }
    }
}

/// The skills an index lists, for messages.
pub fn listed(index: &super::web::Index) -> String {
    if index.skills.is_empty() {
        return "no valid entry".to_owned();
    }
    index
        .skills
        .iter()
        .map(|skill| skill.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

impl DirectLock {
    /// Adds the skill `name` read from `source`, checking it is the skill
    /// the entry names.
    fn add(
        &mut self,
        name: &SkillName,
        source: String,
        checksum: Option<skillpkg_index::checksum::Checksum>,
        folder: FolderSkill,
        old: Option<&Lockfile>,
    ) -> anyhow::Result<()> {
        let origin = format!("`{name}` in skills.toml");
        if &folder.packed.name != name {
            return Err(UserError::new(format!(
                "{origin} is taken from {}, which holds the skill `{}`",
                describe_source(&source),
                folder.packed.name
            ))
            .with_hint(format!(
                "name the entry `{}`, or point it at the folder of `{name}`",
                folder.packed.name
            ))
            .into());
        }
        if !folder.dependencies.is_empty() {
            let names: Vec<&str> = folder.dependencies.iter().map(SkillName::as_str).collect();
            self.warnings.push(format!(
                "`{name}` depends on {}, which skillpkg installs only for skills from a registry: add them to skills.toml",
                names.join(", ")
            ));
        }
        self.warnings.extend(folder.warnings);
        let version = folder
            .label
            .clone()
            .filter(|_| !folder.versioned)
            .unwrap_or_else(|| folder.packed.version.clone().into());
        let packed = folder.packed;
        // The lock's own tree hash while the files still match it (an
        // `h1:` one too: the lock does not change for the hash's version).
        let same = old
            .and_then(|lock| lock.get(name))
            .filter(|locked| locked.source == source && packed.tree_is(&locked.tree));
        let tree = same.map_or_else(|| packed.tree.to_string(), |locked| locked.tree.clone());
        let audit = same.and_then(|locked| locked.audit.clone());
        self.entries.push(LockedSkill {
            name: name.clone(),
            version,
            source,
            checksum,
            tree,
            signer: None,
            provenance: None,
            dependencies: Vec::new(),
            audit,
        });
        self.packed.insert(name.clone(), packed);
        Ok(())
    }
}
