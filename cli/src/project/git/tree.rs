//! Reading a skill's folder from a commit's tree objects, never checked
//! out: a repository is hostile input like an archive.
//!
//! Every object is looked up by its header first (kind and size, without
//! its bytes), so that what a tree entry says it is and what its object is
//! are compared before anything is read: a folder whose object is a file,
//! a file whose object is a folder, an object the repository lacks and a
//! tree that does not decode are the repository's fault, named with the
//! path that leads to them (exit 1), not an unexpected error. Each name is
//! checked (no `.`, `..`, separators or NUL), symlinks and submodules are
//! refused, and files and folders are counted against the package limits
//! as they are written.

use std::path::Path;

use skillpkg_index::archive::{Limits, human_bytes};
use skillpkg_index::skill::SKILL_MD;

use super::{Repository, SEARCH_DEPTH};
use crate::error::UserError;

/// Where an object sits in a commit's tree, for messages.
#[derive(Clone, Debug)]
enum Place<'a> {
    /// The commit's root folder.
    Root,
    /// A path from the repository's root.
    Path(&'a str),
}

impl std::fmt::Display for Place<'_> {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Place::Root => formatter.write_str("the root folder"),
            Place::Path(path) => write!(formatter, "`{path}`"),
        }
    }
}

/// What an object of `kind` is, to a user.
fn kind_name(kind: gix::object::Kind) -> &'static str {
    match kind {
        gix::object::Kind::Tree => "a folder (a tree)",
        gix::object::Kind::Blob => "a file (a blob)",
        gix::object::Kind::Commit => "a commit",
        gix::object::Kind::Tag => "a tag",
    }
}

/// `prefix` and `name` joined with a `/`.
fn joined(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_owned()
    } else {
        format!("{prefix}/{name}")
    }
}

impl Repository {
    /// The size of the object `id` that `place` in `commit` names as a
    /// `kind`, from its header: refused when the repository lacks it or it
    /// is of another kind.
    fn header(
        &self,
        commit: gix::ObjectId,
        id: gix::ObjectId,
        kind: gix::object::Kind,
        place: &Place<'_>,
    ) -> anyhow::Result<u64> {
        let header = self.repo.try_find_header(id)?.ok_or_else(|| {
            self.malformed(
                commit,
                &format!("{place} names the object {id}, which the repository does not have"),
            )
        })?;
        if header.kind() != kind {
            return Err(self.malformed(
                commit,
                &format!(
                    "{place} is marked as {}, but its object {id} is {}",
                    kind_name(kind),
                    kind_name(header.kind())
                ),
            ));
        }
        Ok(header.size())
    }

    /// The tree `id` at `place` in `commit`, decoded; refused when it is
    /// missing, not a tree, larger than a skill may be, or not a valid tree.
    fn read_tree(
        &self,
        commit: gix::ObjectId,
        id: gix::ObjectId,
        place: &Place<'_>,
    ) -> anyhow::Result<gix::objs::Tree> {
        let size = self.header(commit, id, gix::object::Kind::Tree, place)?;
        // Fetches refuse larger objects; a clone cached before they did may
        // still hold one, and it is read whole.
        let max = Limits::default().max_unpacked_bytes;
        if size > max {
            return Err(self.malformed(
                commit,
                &format!(
                    "the folder {place} is a tree object of {}, more than the {} a skill may hold",
                    human_bytes(size),
                    human_bytes(max)
                ),
            ));
        }
        let tree = self.repo.find_tree(id)?;
        let decoded = tree.decode().map_err(|error| {
            UserError::new(format!(
                "the git repository `{}` is malformed at commit {commit}: the folder {place} is not a valid tree object",
                self.url
            ))
            .with_hint(MALFORMED_HINT)
            .with_source(error)
        })?;
        Ok(decoded.into())
    }

    /// The tree of `commit` at `path` (its root when `None`).
    pub(super) fn folder(
        &self,
        commit: gix::ObjectId,
        path: Option<&str>,
    ) -> anyhow::Result<gix::ObjectId> {
        let commit_object = self.repo.find_commit(commit)?;
        let mut id = commit_object
            .tree_id()
            .map_err(|error| {
                UserError::new(format!(
                    "the git repository `{}` is malformed: its commit {commit} cannot be read",
                    self.url
                ))
                .with_hint(MALFORMED_HINT)
                .with_source(error)
            })?
            .detach();
        let Some(path) = path.filter(|path| *path != ".") else {
            return Ok(id);
        };
        let missing = || -> anyhow::Error {
            UserError::new(format!(
                "the git repository `{}` has no folder `{path}` at commit {commit}",
                self.url
            ))
            .with_hint("give the folder of the skill, relative to the repository's root")
            .into()
        };
        let mut at = String::new();
        for component in path.split('/').filter(|component| !component.is_empty()) {
            let place = if at.is_empty() {
                Place::Root
            } else {
                Place::Path(&at)
            };
            let tree = self.read_tree(commit, id, &place)?;
            let entry = tree
                .entries
                .iter()
                .find(|entry| entry.filename == component)
                .filter(|entry| entry.mode.is_tree())
                .ok_or_else(missing)?;
            id = entry.oid;
            at = joined(&at, component);
        }
        Ok(id)
    }

    /// The folders that hold a SKILL.md at `path` (or the root) of
    /// `commit` and up to [`SEARCH_DEPTH`] levels below it, relative to the
    /// repository's root, sorted. A skill's own folders are searched too:
    /// collections nest skills inside skills (a topic and its parts).
    pub(super) fn find_skills(
        &self,
        commit: gix::ObjectId,
        path: Option<&str>,
    ) -> anyhow::Result<Vec<String>> {
        let start = path.filter(|path| *path != ".").map(str::to_owned);
        let mut found = Vec::new();
        let mut pending = vec![(self.folder(commit, path)?, start, 0)];
        while let Some((id, at, level)) = pending.pop() {
            let place = at.as_deref().map_or(Place::Root, Place::Path);
            let tree = self.read_tree(commit, id, &place)?;
            if tree
                .entries
                .iter()
                .any(|entry| entry.filename == SKILL_MD && entry.mode.is_blob())
            {
                found.push(at.clone().unwrap_or_else(|| ".".to_owned()));
            }
            if level == SEARCH_DEPTH {
                continue;
            }
            for entry in tree.entries.iter().filter(|entry| entry.mode.is_tree()) {
                let Ok(name) = std::str::from_utf8(&entry.filename) else {
                    continue;
                };
                if name == ".git" || check_name(name).is_err() {
                    continue;
                }
                let child = joined(at.as_deref().unwrap_or(""), name);
                pending.push((entry.oid, Some(child), level + 1));
            }
        }
        found.sort();
        Ok(found)
    }

    /// Writes the files of the tree at `path` of `commit` into `into` (a
    /// new folder).
    pub(super) fn extract(
        &self,
        commit: gix::ObjectId,
        path: Option<&str>,
        into: &Path,
    ) -> anyhow::Result<()> {
        let limits = Limits::default();
        // Paths in messages about the repository are from its root, as
        // `git ls-tree` shows them.
        let root = path
            .filter(|path| *path != ".")
            .map(|path| path.trim_matches('/').to_owned())
            .unwrap_or_default();
        // Files and folders alike count against the package's limits, as
        // they go: trees can be shared, so a few objects can describe
        // millions of folders, and one blob can be gigabytes.
        let mut entries = 0_usize;
        let mut bytes = 0_u64;
        let mut pending = vec![(
            self.folder(commit, path)?,
            into.to_owned(),
            String::new(),
            0,
        )];
        fs_err::create_dir(into)?;
        while let Some((id, dir, shown, depth)) = pending.pop() {
            let in_repository = joined(&root, shown.trim_end_matches('/'));
            let here = if in_repository.is_empty() {
                Place::Root
            } else {
                Place::Path(&in_repository)
            };
            let tree = self.read_tree(commit, id, &here)?;
            let mut names = std::collections::HashSet::new();
            for entry in &tree.entries {
                let name = std::str::from_utf8(&entry.filename)
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
                let full = joined(&root, &place);
                match entry.mode.kind() {
                    gix::object::tree::EntryKind::Tree => {
                        // Its kind is checked when it is read, in turn.
                        fs_err::create_dir(&target)?;
                        pending.push((entry.oid, target, format!("{place}/"), depth + 1));
                    }
                    gix::object::tree::EntryKind::Blob
                    | gix::object::tree::EntryKind::BlobExecutable => {
                        // The size from the object's header, before its
                        // bytes are read.
                        bytes += self.header(
                            commit,
                            entry.oid,
                            gix::object::Kind::Blob,
                            &Place::Path(&full),
                        )?;
                        if bytes > limits.max_unpacked_bytes {
                            return Err(self.refuse(
                                commit,
                                &format!(
                                    "more than {} of files",
                                    human_bytes(limits.max_unpacked_bytes)
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

    /// A skill that holds what a skill cannot (a link, a bad name, too
    /// much): the repository is fine, the skill is not.
    fn refuse(&self, commit: gix::ObjectId, what: &str) -> anyhow::Error {
        UserError::new(format!(
            "the skill in the git repository `{}` at commit {commit} has {what}, which a skill cannot hold",
            self.url
        ))
        .with_hint("nothing was installed; a skill's files are plain files and folders with portable names")
        .into()
    }

    /// A repository that breaks git's own rules: its fault, not the
    /// network's nor skillpkg's.
    pub(super) fn malformed(&self, commit: gix::ObjectId, what: &str) -> anyhow::Error {
        UserError::new(format!(
            "the git repository `{}` is malformed at commit {commit}: {what}",
            self.url
        ))
        .with_hint(MALFORMED_HINT)
        .into()
    }
}

/// What to do about a malformed repository.
const MALFORMED_HINT: &str = "nothing was installed; the repository breaks git's rules (`git fsck` in a clone of it reports what is wrong): tell its owner";

/// A name in a tree: one portable path component.
fn check_name(name: &str) -> Result<(), ()> {
    let bad = name.is_empty()
        || name == "."
        || name == ".."
        || name.contains(['/', '\\', '\0'])
        || name.eq_ignore_ascii_case(".git");
    if bad { Err(()) } else { Ok(()) }
}

#[cfg(unix)]
fn set_executable(path: &Path, executable: bool) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    let mode = if executable { 0o755 } else { 0o644 };
    fs_err::set_permissions(path, std::fs::Permissions::from_mode(mode))
}

#[cfg(not(unix))]
fn set_executable(_path: &Path, _executable: bool) -> std::io::Result<()> {
    Ok(())
}

#[cfg(test)]
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
