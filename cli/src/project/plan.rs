//! The install plan: from the lock, each target's record and what is on
//! disk, what goes where.
//!
//! [`plan`] is pure: it takes what [`observe`] read (or what a test wrote
//! down) and decides, for every target and skill, whether the folder is in
//! place, is installed new, replaces skillpkg's own older folder, restores
//! a folder whose files were changed by hand, or is removed; and it refuses,
//! before anything changes, to replace a folder skillpkg did not install.
//! The installer then fetches what the plan needs, stages it and commits
//! it (`project::install`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use skillpkg_index::archive::walk::{self, EntryKind};
use skillpkg_index::archive::{FileDigest, tree_hash, tree_matches};
use skillpkg_index::checksum::Checksum;
use skillpkg_index::skill::SkillName;

use super::lockfile::{LockedSkill, Lockfile};
use super::targets::{InstalledSkill, LINK_PREFIX, STATE_FILE, TargetState, link_identity};
use crate::error::UserError;

/// What is at `<target>/<name>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OnDisk {
    Missing,
    /// A folder: its files' digests and their (`h2:`) tree hash; `other`
    /// lists the symlinks and special files in it (never part of an
    /// installed skill, so their presence is a change). A folder known
    /// unchanged by its stamp has no `files` and the recorded `tree`.
    Folder {
        files: Vec<FileDigest>,
        tree: String,
        other: Vec<String>,
    },
    /// A symlink where the folder would be, and the path it holds (lossy
    /// when not UTF-8, so never equal to a link skillpkg wrote). Never
    /// followed here: a link skillpkg made is recognised by its text.
    Link(String),
    /// A file (or a special file) where the folder would be.
    NotAFolder,
}

impl OnDisk {
    /// The tree hash of what is there, when it is a folder skillpkg could
    /// have installed (no links in it).
    fn tree(&self) -> Option<&str> {
        match self {
            Self::Folder { tree, other, .. } if other.is_empty() => Some(tree),
            _ => None,
        }
    }

    /// Returns true if and only if what is there is a folder skillpkg could
    /// have installed whose files hash to `expected`, an `h2:` or (written
    /// before) `h1:` tree hash.
    pub fn tree_is(&self, expected: &str) -> bool {
        match self {
            Self::Folder { files, tree, other } if other.is_empty() => {
                tree == expected || tree_matches(files, expected)
            }
            _ => false,
        }
    }

    /// What is there, as a record names it ([`OnDisk::is`]): a folder's
    /// tree hash, or `link:` and a symlink's text. `None` for what skillpkg
    /// never puts in place (a file, a folder with links in it).
    pub fn identity(&self) -> Option<String> {
        match self {
            Self::Link(text) => Some(link_identity(text)),
            _ => self.tree().map(str::to_owned),
        }
    }

    /// Returns true if and only if what is there is what `identity` names:
    /// a symlink holding exactly the text after `link:`, or a folder whose
    /// files hash to the tree hash.
    pub fn is(&self, identity: &str) -> bool {
        match identity.strip_prefix(LINK_PREFIX) {
            Some(text) => matches!(self, Self::Link(found) if found == text),
            None => self.tree_is(identity),
        }
    }
}

// The record is the targets' type; what it recognises on disk is the
// plan's.
impl InstalledSkill {
    /// Returns true if and only if `disk` is the folder (or the symlink)
    /// this record says skillpkg installed, or was replacing.
    pub fn recognises(&self, disk: &OnDisk) -> bool {
        let installed = match &self.link {
            Some(text) => disk.is(&link_identity(text)),
            None => disk.tree_is(&self.tree),
        };
        installed
            || self
                .replacing
                .as_deref()
                .is_some_and(|replacing| disk.is(replacing))
    }
}

/// One target, as observed.
#[derive(Clone, Debug)]
pub struct Observed {
    /// The target's name, for the report (`claude`).
    pub name: String,
    /// Its folder, for messages.
    pub dir: PathBuf,
    pub state: TargetState,
    /// What is on disk for every name of the lock and of the record.
    pub disk: BTreeMap<SkillName, OnDisk>,
    /// New stamps of recorded folders whose files were hashed and found as
    /// recorded, for the record to keep.
    pub stamps: BTreeMap<SkillName, String>,
    /// With `link = true`, for every target but the first: the path from
    /// this target's folder to the first's, which each skill's symlink
    /// holds followed by the skill's name (`../../.claude/skills`).
    pub link_to: Option<String>,
}

impl Observed {
    /// The text of the symlink skill `name` is installed as in this target,
    /// when it is installed as one.
    pub fn link_for(&self, name: &SkillName) -> Option<String> {
        self.link_to.as_ref().map(|dir| format!("{dir}/{name}"))
    }
}

/// Why a skill is put into a target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Why {
    /// Nothing was there.
    New,
    /// skillpkg's own folder of another version (or an interrupted
    /// install) is replaced.
    Replace,
    /// skillpkg installed this very version, and its files were changed by
    /// hand since: they are put back. `files` are the folder's files as
    /// found, to name what changed once the archive is unpacked.
    Restore {
        files: Vec<FileDigest>,
        other: Vec<String>,
    },
    /// `--force`.
    Forced,
}

/// A skill to put into a target.
#[derive(Clone, Debug)]
pub struct Put<'lock> {
    pub entry: &'lock LockedSkill,
    /// What it replaces ([`OnDisk::identity`]), for the record to
    /// recognise it after a crash.
    pub replacing: Option<String>,
    pub why: Why,
    /// The symlink's text, when it is put as a link to the first target's
    /// copy.
    pub link: Option<String>,
}

/// What happens in one target.
#[derive(Clone, Debug, Default)]
pub struct TargetPlan<'lock> {
    pub put: Vec<Put<'lock>>,
    /// Recorded skills the lock no longer has, whose folders are
    /// skillpkg's own (or gone): removed.
    pub remove: Vec<SkillName>,
    /// Recorded skills the lock no longer has whose folders were changed:
    /// left in place and no longer recorded, with the warning to show.
    pub abandon: Vec<(SkillName, String)>,
    /// How many locked skills are in place already.
    pub unchanged: usize,
}

/// Plans every target; refuses, before anything changes, a folder skillpkg
/// may not replace.
pub fn plan<'lock>(
    lock: &'lock Lockfile,
    targets: &[Observed],
    force: bool,
) -> anyhow::Result<Vec<TargetPlan<'lock>>> {
    targets
        .iter()
        .map(|target| plan_target(lock, target, force))
        .collect()
}

fn plan_target<'lock>(
    lock: &'lock Lockfile,
    target: &Observed,
    force: bool,
) -> anyhow::Result<TargetPlan<'lock>> {
    let mut plan = TargetPlan::default();
    for entry in &lock.skills {
        let disk = target.disk.get(&entry.name).unwrap_or(&OnDisk::Missing);
        let recorded = target.state.skills.get(&entry.name);
        let link = target.link_for(&entry.name);
        // A copy put where the file system refused the link stands for it.
        let copy_for_link =
            link.is_some() && recorded.is_some_and(|installed| installed.copy_for_link);
        let same_version = recorded.is_some_and(|installed| {
            installed.tree == entry.tree
                && installed.replacing.is_none()
                && installed.version == entry.version.to_string()
                && (installed.link == link || copy_for_link)
        });
        let in_place = match &link {
            Some(text) if !copy_for_link => disk.is(&link_identity(text)),
            _ => disk.tree_is(&entry.tree),
        };
        if same_version && !force && in_place {
            plan.unchanged += 1;
            continue;
        }
        let folder = target.dir.join(entry.name.as_str());
        let not_ours = |what: String| -> anyhow::Error {
            UserError::new(format!(
                "{} {what}, so skillpkg did not install it",
                folder.display()
            ))
            .with_hint("move it away, or pass --force to replace it")
            .into()
        };
        let (replacing, why) = match (disk, recorded) {
            (OnDisk::Missing, _) => (None, Why::New),
            (_, _) if force => (disk.identity(), Why::Forced),
            (OnDisk::NotAFolder, _) => return Err(not_ours("is a file, not a folder".into())),
            (OnDisk::Link(text), recorded) => {
                if recorded.is_some_and(|installed| installed.recognises(disk)) {
                    (disk.identity(), Why::Replace)
                } else {
                    return Err(not_ours(format!("is a symlink to {text}")));
                }
            }
            (OnDisk::Folder { .. }, None) => {
                return Err(UserError::new(format!(
                    "{} exists, and skillpkg did not install it",
                    folder.display()
                ))
                .with_hint("move it away, or pass --force to replace it")
                .into());
            }
            (OnDisk::Folder { files, tree, other }, Some(installed)) => {
                if installed.recognises(disk) {
                    (Some(tree.clone()), Why::Replace)
                } else if same_version && (link.is_none() || copy_for_link) {
                    (
                        Some(tree.clone()),
                        Why::Restore {
                            files: files.clone(),
                            other: other.clone(),
                        },
                    )
                } else {
                    return Err(UserError::new(format!(
                        "{} was changed since skillpkg installed it (or was never installed by it: its files are not the ones recorded in {})",
                        folder.display(),
                        target.dir.join(STATE_FILE).display()
                    ))
                    .with_hint("`skillpkg verify` shows what changed; move the folder away to keep your changes, or pass --force to replace it")
                    .into());
                }
            }
        };
        plan.put.push(Put {
            entry,
            replacing,
            why,
            link,
        });
    }
    let locked: BTreeSet<&SkillName> = lock.skills.iter().map(|entry| &entry.name).collect();
    for (name, installed) in &target.state.skills {
        if locked.contains(name) {
            continue;
        }
        let disk = target.disk.get(name).unwrap_or(&OnDisk::Missing);
        let ours = match disk {
            OnDisk::Missing => true,
            _ => force || installed.recognises(disk),
        };
        if ours {
            plan.remove.push(name.clone());
        } else {
            let what = match disk {
                OnDisk::Link(text) => {
                    format!("it is now a symlink to {text}, not the one skillpkg made")
                }
                _ => "its files changed since skillpkg installed it".to_owned(),
            };
            plan.abandon.push((
                name.clone(),
                format!(
                    "left {} in place: {what}, so it is no longer managed (delete it yourself, or pass --force)",
                    target.dir.join(name.as_str()).display()
                ),
            ));
        }
    }
    Ok(plan)
}

/// Reads what is on disk for every name of `lock` and of `state` in the
/// target folder `dir`: one walk of each folder. A recorded folder whose
/// stamp still matches is as recorded without reading a file; any other is
/// read and every file hashed (and, when found as recorded, stamped).
/// Returns what is there, and the new stamps.
pub fn observe(
    dir: &Path,
    lock: &Lockfile,
    state: &TargetState,
) -> anyhow::Result<(BTreeMap<SkillName, OnDisk>, BTreeMap<SkillName, String>)> {
    let names: BTreeSet<&SkillName> = lock
        .skills
        .iter()
        .map(|entry| &entry.name)
        .chain(state.skills.keys())
        .collect();
    // One listing of the target: a name that is not in it is missing,
    // with no failed lookup of its own.
    let present: BTreeSet<std::ffi::OsString> = match fs_err::read_dir(dir) {
        Ok(entries) => entries
            .map(|entry| entry.map(|entry| entry.file_name()))
            .collect::<Result<_, _>>()?,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => BTreeSet::new(),
        Err(error) => return Err(error.into()),
    };
    let mut disk = BTreeMap::new();
    let mut stamps = BTreeMap::new();
    for name in names {
        if !present.contains(std::ffi::OsStr::new(name.as_str())) {
            disk.insert(name.clone(), OnDisk::Missing);
            continue;
        }
        let path = dir.join(name.as_str());
        let recorded = state.skills.get(name);
        if let Some(installed) = recorded.filter(|installed| installed.replacing.is_none())
            && let Some(stamp) = &installed.stamp
            && stamp_of(&path)?.as_ref() == Some(stamp)
        {
            disk.insert(
                name.clone(),
                OnDisk::Folder {
                    files: Vec::new(),
                    tree: installed.tree.clone(),
                    other: Vec::new(),
                },
            );
            continue;
        }
        let found = read_folder(&path)?;
        if let Some(installed) = recorded
            && installed.replacing.is_none()
            && found.tree_is(&installed.tree)
            && let Some(stamp) = stamp_of(&path)?
        {
            stamps.insert(name.clone(), stamp);
        }
        disk.insert(name.clone(), found);
    }
    Ok((disk, stamps))
}

/// The stamp of a folder: a digest of every entry's path, kind, size,
/// inode, and change and modification times (nanoseconds). `None` when it
/// is not a folder.
pub fn stamp_of(path: &Path) -> anyhow::Result<Option<String>> {
    use sha2::Digest as _;
    use std::os::unix::fs::MetadataExt as _;
    match fs_err::symlink_metadata(path) {
        Ok(metadata) if metadata.is_dir() => {}
        _ => return Ok(None),
    }
    let mut digest = sha2::Sha256::new();
    for entry in walk::walk_all(path)? {
        let metadata = fs_err::symlink_metadata(path.join(&entry.path))?;
        digest.update(format!(
            "{}\0{:?}\0{} {} {}.{} {}.{}\n",
            entry.path,
            metadata.file_type(),
            metadata.size(),
            metadata.ino(),
            metadata.ctime(),
            metadata.ctime_nsec(),
            metadata.mtime(),
            metadata.mtime_nsec()
        ));
    }
    Ok(Some(skillpkg_index::archive::tree_hash::hex(
        digest.finalize().as_slice(),
    )))
}

/// Returns true if and only if the folder `dir` holds files (and no links)
/// that hash to `expected`.
pub fn folder_matches(dir: &Path, expected: &str) -> anyhow::Result<bool> {
    Ok(read_folder(dir)?.tree_is(expected))
}

/// What is at `path`.
pub fn read_folder(path: &Path) -> anyhow::Result<OnDisk> {
    match fs_err::symlink_metadata(path) {
        Ok(metadata) if metadata.is_dir() => {}
        Ok(metadata) if metadata.file_type().is_symlink() => {
            let text = fs_err::read_link(path)?;
            return Ok(OnDisk::Link(text.to_string_lossy().into_owned()));
        }
        Ok(_) => return Ok(OnDisk::NotAFolder),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(OnDisk::Missing),
        Err(error) => return Err(error.into()),
    }
    let mut files = Vec::new();
    let mut other = Vec::new();
    for entry in walk::walk_all(path)? {
        match entry.kind {
            EntryKind::File { executable, .. } => {
                let bytes = fs_err::read(path.join(&entry.path))?;
                files.push(FileDigest {
                    path: entry.path,
                    sha256: *Checksum::of(&bytes).digest(),
                    executable,
                });
            }
            EntryKind::Directory => {}
            EntryKind::Symlink | EntryKind::Special => other.push(entry.path),
        }
    }
    let tree = tree_hash(&files).to_string();
    Ok(OnDisk::Folder { files, tree, other })
}

/// Names the files of a folder (`found`, plus links and special files in
/// `other`) that differ from the archive's (`archive`): `a.md (changed)`,
/// `b.sh (added)`, `c.md (removed)`, sorted.
pub fn changed_files(
    found: &[FileDigest],
    other: &[String],
    archive: &[FileDigest],
) -> Vec<String> {
    let archived: BTreeMap<&str, &[u8; 32]> = archive
        .iter()
        .map(|file| (file.path.as_str(), &file.sha256))
        .collect();
    let present: BTreeSet<&str> = found.iter().map(|file| file.path.as_str()).collect();
    let mut changed = Vec::new();
    for file in found {
        match archived.get(file.path.as_str()) {
            Some(sha256) if **sha256 == file.sha256 => {}
            Some(_) => changed.push(format!("{} (changed)", file.path)),
            None => changed.push(format!("{} (added)", file.path)),
        }
    }
    changed.extend(other.iter().map(|path| format!("{path} (added link)")));
    for path in archived.keys() {
        if !present.contains(path) {
            changed.push(format!("{path} (removed)"));
        }
    }
    changed.sort();
    changed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(text: &str) -> SkillName {
        text.parse().unwrap()
    }

    fn digest(path: &str, content: &str) -> FileDigest {
        FileDigest {
            path: path.to_owned(),
            sha256: *Checksum::of(content.as_bytes()).digest(),
            executable: false,
        }
    }

    fn folder(files: &[(&str, &str)]) -> OnDisk {
        let files: Vec<FileDigest> = files
            .iter()
            .map(|(path, content)| digest(path, content))
            .collect();
        let tree = tree_hash(&files).to_string();
        OnDisk::Folder {
            files,
            tree,
            other: Vec::new(),
        }
    }

    fn tree_of(disk: &OnDisk) -> String {
        disk.tree().unwrap().to_owned()
    }

    fn locked(skill: &str, version: &str, tree: &str) -> LockedSkill {
        LockedSkill {
            audit: None,
            name: name(skill),
            version: version.parse().unwrap(),
            source: "registry+default".into(),
            checksum: Some(Checksum::of(b"archive")),
            tree: tree.to_owned(),
            signer: None,
            provenance: None,
            dependencies: Vec::new(),
        }
    }

    fn record(version: &str, tree: &str) -> InstalledSkill {
        InstalledSkill {
            version: version.to_owned(),
            tree: tree.to_owned(),
            replacing: None,
            stamp: None,
            link: None,
            copy_for_link: false,
        }
    }

    fn target(state: &[(&str, InstalledSkill)], disk: Vec<(&str, OnDisk)>) -> Observed {
        Observed {
            name: "claude".into(),
            dir: PathBuf::from("/project/.claude/skills"),
            state: TargetState {
                v: 1,
                skills: state
                    .iter()
                    .map(|(skill, installed)| (name(skill), installed.clone()))
                    .collect(),
            },
            disk: disk
                .into_iter()
                .map(|(skill, disk)| (name(skill), disk))
                .collect(),
            stamps: BTreeMap::new(),
            link_to: None,
        }
    }

    fn summary(plan: &TargetPlan<'_>) -> Vec<String> {
        let mut lines: Vec<String> = plan
            .put
            .iter()
            .map(|put| {
                let why = match &put.why {
                    Why::New => "new",
                    Why::Replace => "replace",
                    Why::Restore { .. } => "restore",
                    Why::Forced => "forced",
                };
                format!("put {}@{} ({why})", put.entry.name, put.entry.version)
            })
            .collect();
        lines.extend(plan.remove.iter().map(|name| format!("remove {name}")));
        lines.extend(
            plan.abandon
                .iter()
                .map(|(name, _)| format!("abandon {name}")),
        );
        lines.push(format!("unchanged {}", plan.unchanged));
        lines
    }

    #[test]
    fn what_is_in_place_stays_what_is_new_or_older_is_put() {
        let v1 = folder(&[("SKILL.md", "one")]);
        let v2 = folder(&[("SKILL.md", "two")]);
        let lock = Lockfile {
            skills: vec![
                locked("docx", "1.0.0", &tree_of(&v1)),
                locked("pdf", "2.0.0", &tree_of(&v2)),
                locked("xlsx", "1.0.0", &tree_of(&v1)),
            ],
        };
        let observed = target(
            &[
                ("docx", record("1.0.0", &tree_of(&v1))),
                ("pdf", record("1.0.0", &tree_of(&v1))),
                ("old", record("1.0.0", &tree_of(&v1))),
            ],
            vec![
                ("docx", v1.clone()),
                ("pdf", v1.clone()),
                ("old", v1.clone()),
            ],
        );
        let plans = plan(&lock, &[observed], false).unwrap();
        assert_eq!(
            summary(&plans[0]),
            [
                "put pdf@2.0.0 (replace)",
                "put xlsx@1.0.0 (new)",
                "remove old",
                "unchanged 1"
            ]
        );
        assert_eq!(
            plans[0].put[0].replacing.as_deref(),
            Some(tree_of(&v1).as_str())
        );
    }

    #[test]
    fn a_folder_edited_by_hand_is_restored_and_names_its_changes() {
        let installed = folder(&[("SKILL.md", "one"), ("scripts/run.sh", "echo")]);
        let edited = folder(&[("SKILL.md", "one, edited"), ("notes.md", "mine")]);
        let lock = Lockfile {
            skills: vec![locked("pdf", "1.0.0", &tree_of(&installed))],
        };
        let observed = target(
            &[("pdf", record("1.0.0", &tree_of(&installed)))],
            vec![("pdf", edited)],
        );
        let plans = plan(&lock, &[observed], false).unwrap();
        assert_eq!(
            summary(&plans[0]),
            ["put pdf@1.0.0 (restore)", "unchanged 0"]
        );
        let Why::Restore { files, other } = &plans[0].put[0].why else {
            panic!("a restore");
        };
        let OnDisk::Folder {
            files: archive_files,
            ..
        } = &installed
        else {
            unreachable!()
        };
        assert_eq!(
            changed_files(files, other, archive_files),
            [
                "SKILL.md (changed)",
                "notes.md (added)",
                "scripts/run.sh (removed)"
            ]
        );
        // A link added inside an installed folder is a change too.
        let mut linked = installed.clone();
        if let OnDisk::Folder { other, .. } = &mut linked {
            other.push("escape".into());
        }
        let observed = target(
            &[("pdf", record("1.0.0", &tree_of(&installed)))],
            vec![("pdf", linked)],
        );
        let plans = plan(&lock, &[observed], false).unwrap();
        assert_eq!(
            summary(&plans[0]),
            ["put pdf@1.0.0 (restore)", "unchanged 0"]
        );
    }

    #[test]
    fn folders_skillpkg_did_not_install_or_that_changed_before_an_upgrade_are_refused() {
        let v1 = folder(&[("SKILL.md", "one")]);
        let v2 = folder(&[("SKILL.md", "two")]);
        let edited = folder(&[("SKILL.md", "one, edited")]);
        let lock = Lockfile {
            skills: vec![locked("pdf", "2.0.0", &tree_of(&v2))],
        };
        let foreign = target(&[], vec![("pdf", v1.clone())]);
        let error = plan(&lock, std::slice::from_ref(&foreign), false).unwrap_err();
        assert_eq!(
            error.to_string(),
            "/project/.claude/skills/pdf exists, and skillpkg did not install it"
        );
        let changed = target(
            &[("pdf", record("1.0.0", &tree_of(&v1)))],
            vec![("pdf", edited)],
        );
        let error = plan(&lock, std::slice::from_ref(&changed), false).unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("/project/.claude/skills/pdf was changed since skillpkg installed it"),
            "{error}"
        );
        let link = target(&[], vec![("pdf", OnDisk::NotAFolder)]);
        assert!(plan(&lock, std::slice::from_ref(&link), false).is_err());
        // --force takes each of them over.
        for observed in [foreign, changed, link] {
            let plans = plan(&lock, &[observed], true).unwrap();
            assert_eq!(
                summary(&plans[0]),
                ["put pdf@2.0.0 (forced)", "unchanged 0"]
            );
        }
        // One refused target refuses the whole plan, before anything changes.
        let fine = target(&[], vec![]);
        let foreign = target(&[], vec![("pdf", v1)]);
        assert!(plan(&lock, &[fine, foreign], false).is_err());
    }

    #[test]
    fn a_linked_target_holds_symlinks_it_recognises_by_their_text() {
        let v1 = folder(&[("SKILL.md", "one")]);
        let v2 = folder(&[("SKILL.md", "two")]);
        let text = "../../.claude/skills/pdf";
        let ours = OnDisk::Link(text.into());
        let mut linked_record = record("1.0.0", &tree_of(&v1));
        linked_record.link = Some(text.into());
        let lock = Lockfile {
            skills: vec![locked("pdf", "1.0.0", &tree_of(&v1))],
        };
        let linked = |state: &[(&str, InstalledSkill)], disk: Vec<(&str, OnDisk)>| {
            let mut observed = target(state, disk);
            observed.name = "agents".into();
            observed.dir = "/project/.agents/skills".into();
            observed.link_to = Some("../../.claude/skills".into());
            observed
        };
        // Nothing there: a link is put, holding the path to the copy.
        let plans = plan(&lock, &[linked(&[], vec![])], false).unwrap();
        assert_eq!(summary(&plans[0]), ["put pdf@1.0.0 (new)", "unchanged 0"]);
        assert_eq!(plans[0].put[0].link.as_deref(), Some(text));
        // skillpkg's own link, as recorded: in place.
        let observed = linked(
            &[("pdf", linked_record.clone())],
            vec![("pdf", ours.clone())],
        );
        let plans = plan(&lock, &[observed], false).unwrap();
        assert_eq!(summary(&plans[0]), ["unchanged 1"]);
        // A copy skillpkg installed before `link = true` becomes a link.
        let observed = linked(
            &[("pdf", record("1.0.0", &tree_of(&v1)))],
            vec![("pdf", v1.clone())],
        );
        let plans = plan(&lock, &[observed], false).unwrap();
        assert_eq!(
            summary(&plans[0]),
            ["put pdf@1.0.0 (replace)", "unchanged 0"]
        );
        // And its own link becomes a copy again without `link`.
        let observed = target(
            &[("pdf", linked_record.clone())],
            vec![("pdf", ours.clone())],
        );
        let plans = plan(&lock, &[observed], false).unwrap();
        assert_eq!(
            summary(&plans[0]),
            ["put pdf@1.0.0 (replace)", "unchanged 0"]
        );
        assert_eq!(
            plans[0].put[0].replacing.as_deref(),
            Some("link:../../.claude/skills/pdf")
        );
        // A link someone else made, or one skillpkg's was changed into, is
        // refused, as a folder it did not install is.
        for state in [vec![], vec![("pdf", linked_record.clone())]] {
            let observed = linked(&state, vec![("pdf", OnDisk::Link("/home/me/pdf".into()))]);
            let error = plan(&lock, std::slice::from_ref(&observed), false).unwrap_err();
            assert_eq!(
                error.to_string(),
                "/project/.agents/skills/pdf is a symlink to /home/me/pdf, so skillpkg did not install it"
            );
            let plans = plan(&lock, &[observed], true).unwrap();
            assert_eq!(
                summary(&plans[0]),
                ["put pdf@1.0.0 (forced)", "unchanged 0"]
            );
        }
        // A folder where skillpkg put a link is not restored over: refused.
        let observed = linked(&[("pdf", linked_record.clone())], vec![("pdf", v2)]);
        assert!(plan(&lock, &[observed], false).is_err());
        // A removed skill: skillpkg's link goes, a changed one stays.
        let none = Lockfile::default();
        let observed = linked(&[("pdf", linked_record.clone())], vec![("pdf", ours)]);
        let plans = plan(&none, &[observed], false).unwrap();
        assert_eq!(summary(&plans[0]), ["remove pdf", "unchanged 0"]);
        let observed = linked(
            &[("pdf", linked_record)],
            vec![("pdf", OnDisk::Link("elsewhere".into()))],
        );
        let plans = plan(&none, &[observed], false).unwrap();
        assert_eq!(summary(&plans[0]), ["abandon pdf", "unchanged 0"]);
    }

    #[test]
    fn a_removed_skill_whose_folder_changed_is_left_in_place_unless_forced() {
        let v1 = folder(&[("SKILL.md", "one")]);
        let edited = folder(&[("SKILL.md", "one, edited")]);
        let lock = Lockfile::default();
        let observed = target(
            &[
                ("edited", record("1.0.0", &tree_of(&v1))),
                ("gone", record("1.0.0", &tree_of(&v1))),
            ],
            vec![("edited", edited)],
        );
        let plans = plan(&lock, std::slice::from_ref(&observed), false).unwrap();
        assert_eq!(
            summary(&plans[0]),
            ["remove gone", "abandon edited", "unchanged 0"]
        );
        assert!(plans[0].abandon[0].1.contains("no longer managed"));
        let plans = plan(&lock, &[observed], true).unwrap();
        assert_eq!(
            summary(&plans[0]),
            ["remove edited", "remove gone", "unchanged 0"]
        );
    }

    #[test]
    fn an_interrupted_replace_is_finished() {
        let v1 = folder(&[("SKILL.md", "one")]);
        let v2 = folder(&[("SKILL.md", "two")]);
        let lock = Lockfile {
            skills: vec![locked("pdf", "2.0.0", &tree_of(&v2))],
        };
        // The record claims v2 while replacing v1, and v1 is still there.
        let mut claim = record("2.0.0", &tree_of(&v2));
        claim.replacing = Some(tree_of(&v1));
        let observed = target(&[("pdf", claim)], vec![("pdf", v1)]);
        let plans = plan(&lock, &[observed], false).unwrap();
        assert_eq!(
            summary(&plans[0]),
            ["put pdf@2.0.0 (replace)", "unchanged 0"]
        );
    }

    #[test]
    fn a_stamped_folder_is_known_unchanged_until_a_file_changes() {
        let dir = tempfile::tempdir().unwrap();
        let skill = dir.path().join("pdf");
        fs_err::create_dir_all(skill.join("scripts")).unwrap();
        fs_err::write(skill.join("SKILL.md"), "one").unwrap();
        fs_err::write(skill.join("scripts/run.sh"), "echo").unwrap();
        let OnDisk::Folder { tree, .. } = read_folder(&skill).unwrap() else {
            panic!("a folder");
        };
        let lock = Lockfile {
            skills: vec![locked("pdf", "1.0.0", &tree)],
        };
        let mut state = TargetState {
            v: 1,
            skills: BTreeMap::from([(name("pdf"), record("1.0.0", &tree))]),
        };
        // Not stamped yet: read, hashed, found as recorded, and stamped.
        let (disk, stamps) = observe(dir.path(), &lock, &state).unwrap();
        assert!(matches!(&disk[&name("pdf")], OnDisk::Folder { files, .. } if files.len() == 2));
        let stamp = stamps[&name("pdf")].clone();
        state.skills.get_mut(&name("pdf")).unwrap().stamp = Some(stamp);
        // Stamped: as recorded, without reading a file.
        let (disk, stamps) = observe(dir.path(), &lock, &state).unwrap();
        assert!(stamps.is_empty());
        assert!(
            matches!(&disk[&name("pdf")], OnDisk::Folder { files, tree: found, .. } if files.is_empty() && *found == tree)
        );
        // An edit, even of the same size, is read again and not as recorded.
        fs_err::write(skill.join("SKILL.md"), "two").unwrap();
        let (disk, stamps) = observe(dir.path(), &lock, &state).unwrap();
        assert!(stamps.is_empty());
        assert_ne!(disk[&name("pdf")].tree(), Some(tree.as_str()));
        // A name that is not in the target is missing.
        fs_err::remove_dir_all(&skill).unwrap();
        let (disk, _) = observe(dir.path(), &lock, &state).unwrap();
        assert_eq!(disk[&name("pdf")], OnDisk::Missing);
    }
}
