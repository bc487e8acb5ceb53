//! A bare git repository kept as files of the static tree, laid out as
//! `git update-server-info` leaves one, so that git reads it over its dumb
//! HTTP protocol from any static host, and from a folder (`git clone
//! DIR/public/plugins/pdf.git`):
//!
//! ```text
//! <repo>/HEAD                            ref: refs/heads/main
//! <repo>/refs/heads/main                 the commit `main` names; absent when none
//! <repo>/packed-refs                     the tags (`refs/tags/v<version>`)
//! <repo>/objects/pack/pack-<sha1>.pack   a snapshot each, with its `.idx`; immutable
//! <repo>/objects/info/packs              every pack (`P pack-<sha1>.pack`)
//! <repo>/info/refs                       every ref and its commit (`<sha1>\t<ref>`)
//! ```
//!
//! A change writes the new packs first, then the refs, then
//! `objects/info/packs`, then `info/refs`: a reader that found a ref in
//! `info/refs` finds its pack listed and there.

use std::collections::BTreeMap;

use skillpkg_index::registry::tree::{StaticTree, TreeError};
use skillpkg_index::skill::SkillName;

use super::git::{ObjectId, Pack, PackIndex};

/// Where the skills' repositories are, in the tree.
pub const PLUGINS_DIR: &str = "plugins";
/// The repository of the marketplace itself.
pub const MARKETPLACE_REPO: &str = "marketplace.git";
/// The branch a repository's `HEAD` names.
pub const MAIN: &str = "refs/heads/main";

/// A repository of the tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Repo {
    /// Its folder in the tree, `plugins/pdf.git`.
    prefix: String,
}

/// A repository's refs, as `info/refs` and `HEAD` say.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Refs {
    /// Each ref's commit, by ref name.
    pub refs: BTreeMap<String, ObjectId>,
}

impl Refs {
    /// The commit `HEAD` names, through `main`; `None` when `main` does
    /// not exist (every version is yanked).
    pub fn head(&self) -> Option<ObjectId> {
        self.refs.get(MAIN).copied()
    }
}

/// Returns the tag of `version`, `v<version>`, unless git refuses it as
/// a ref name: semver allows a version ending in `.lock` (`1.0.0-x.lock`),
/// which no ref may. Such a version has a commit but no tag.
pub fn tag_of(version: &semver::Version) -> Option<String> {
    let tag = format!("refs/tags/v{version}");
    (!tag.ends_with(".lock")).then_some(tag)
}

fn invalid_data(path: String, what: String) -> TreeError {
    TreeError::Io {
        path: path.into(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidData, what),
    }
}

impl Repo {
    /// The repository of the skill `name`: `plugins/<name>.git`.
    pub fn plugin(name: &SkillName) -> Self {
        Self {
            prefix: format!("{PLUGINS_DIR}/{name}.git"),
        }
    }

    /// The marketplace's repository: `marketplace.git`.
    pub fn marketplace() -> Self {
        Self {
            prefix: MARKETPLACE_REPO.to_owned(),
        }
    }

    /// The repository whose folder in the tree is `prefix`, if it is one
    /// this registry writes: `plugins/<skill name>.git` or
    /// `marketplace.git`. Anything else (another name, `..`, a path of
    /// several components) is none.
    pub fn at(prefix: &str) -> Option<Self> {
        if prefix == MARKETPLACE_REPO {
            return Some(Self::marketplace());
        }
        let name: SkillName = prefix
            .strip_prefix(PLUGINS_DIR)?
            .strip_prefix('/')?
            .strip_suffix(".git")?
            .parse()
            .ok()?;
        Some(Self::plugin(&name))
    }

    /// Its folder in the tree.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    fn path(&self, relative: &str) -> String {
        format!("{}/{relative}", self.prefix)
    }

    fn pack_path(&self, checksum: &ObjectId, extension: &str) -> String {
        self.path(&format!("objects/pack/pack-{checksum}.{extension}"))
    }

    /// Reads the repository's refs from `info/refs`; none when it has no
    /// `info/refs` (not written yet).
    pub fn read_refs(&self, tree: &StaticTree) -> Result<Option<Refs>, TreeError> {
        let path = self.path("info/refs");
        let Some(bytes) = tree.read_file(&path)? else {
            return Ok(None);
        };
        let text = String::from_utf8(bytes)
            .map_err(|_| invalid_data(path.clone(), "it is not UTF-8".into()))?;
        let mut refs = Refs::default();
        for line in text.lines() {
            let parsed = line.split_once('\t').and_then(|(id, name)| {
                let id = ObjectId::from_hex(id.as_bytes()).ok()?;
                Some((name.to_owned(), id))
            });
            let Some((name, id)) = parsed else {
                return Err(invalid_data(
                    path,
                    format!("`{line}` is not `<sha1>\\t<ref>`"),
                ));
            };
            refs.refs.insert(name, id);
        }
        Ok(Some(refs))
    }

    /// Reads the checksums of the packs `objects/info/packs` lists.
    pub fn read_packs(&self, tree: &StaticTree) -> Result<Vec<ObjectId>, TreeError> {
        let path = self.path("objects/info/packs");
        let Some(bytes) = tree.read_file(&path)? else {
            return Ok(Vec::new());
        };
        let text = String::from_utf8_lossy(&bytes);
        let mut packs = Vec::new();
        for line in text.lines().filter(|line| !line.is_empty()) {
            let checksum = line
                .strip_prefix("P pack-")
                .and_then(|rest| rest.strip_suffix(".pack"))
                .and_then(|hex| ObjectId::from_hex(hex.as_bytes()).ok())
                .ok_or_else(|| {
                    invalid_data(
                        path.clone(),
                        format!("`{line}` is not `P pack-<sha1>.pack`"),
                    )
                })?;
            packs.push(checksum);
        }
        Ok(packs)
    }

    /// Reads the pack `checksum` (whose index the caller has read);
    /// `None` when it is gone.
    pub fn read_pack(
        &self,
        tree: &StaticTree,
        checksum: &ObjectId,
    ) -> Result<Option<Vec<u8>>, TreeError> {
        tree.read_file(&self.pack_path(checksum, "pack"))
    }

    /// Reads the index of the pack `checksum`; `None` when it is gone.
    pub fn read_index(
        &self,
        tree: &StaticTree,
        checksum: &ObjectId,
    ) -> Result<Option<PackIndex>, TreeError> {
        let path = self.pack_path(checksum, "idx");
        let Some(bytes) = tree.read_file(&path)? else {
            return Ok(None);
        };
        PackIndex::parse(&bytes)
            .map(Some)
            .map_err(|error| invalid_data(path, error.to_string()))
    }

    /// Reads the index of every pack in `objects/pack/`, listed in
    /// `objects/info/packs` or not, with its pack's checksum. A pack whose
    /// index is there is whole: [`Repo::write_pack`] writes the index last.
    pub fn read_all_indexes(
        &self,
        tree: &StaticTree,
    ) -> Result<Vec<(ObjectId, PackIndex)>, TreeError> {
        let folder = self.path("objects/pack");
        let mut indexes = Vec::new();
        for path in tree.list(&folder)? {
            let checksum = path
                .strip_prefix(&folder)
                .and_then(|name| name.strip_prefix("/pack-"))
                .and_then(|name| name.strip_suffix(".idx"))
                .and_then(|hex| ObjectId::from_hex(hex.as_bytes()).ok());
            let Some(checksum) = checksum else {
                continue;
            };
            if let Some(index) = self.read_index(tree, &checksum)? {
                indexes.push((checksum, index));
            }
        }
        Ok(indexes)
    }

    /// Writes a pack and its index, unless they are there (a pack is named
    /// by its checksum: one there is this one). The pack first: an index
    /// is never without its pack.
    pub fn write_pack(&self, tree: &StaticTree, pack: &Pack) -> Result<(), TreeError> {
        let index = self.pack_path(&pack.checksum, "idx");
        if tree.exists(&index)? {
            return Ok(());
        }
        tree.write_file(&self.pack_path(&pack.checksum, "pack"), &pack.pack)?;
        tree.write_file(&index, &pack.index)
    }

    /// Removes the pack `checksum` and its index, the index first.
    pub fn remove_pack(&self, tree: &StaticTree, checksum: &ObjectId) -> Result<(), TreeError> {
        tree.remove_file(&self.pack_path(checksum, "idx"))?;
        tree.remove_file(&self.pack_path(checksum, "pack"))
    }

    /// Points `main` at `main` (or removes it), the tags at `tags`, and
    /// lists `packs` (whose files are there): everything but the packs,
    /// in the order a reader needs (see the module's documentation).
    pub fn write_refs(
        &self,
        tree: &StaticTree,
        main: Option<ObjectId>,
        tags: &BTreeMap<String, ObjectId>,
        packs: &[ObjectId],
    ) -> Result<(), TreeError> {
        match main {
            Some(commit) => tree.write_file(&self.path(MAIN), format!("{commit}\n").as_bytes())?,
            None => tree.remove_file(&self.path(MAIN))?,
        }
        let mut packed = String::from("# pack-refs with: peeled fully-peeled sorted \n");
        for (name, commit) in tags {
            packed.push_str(&format!("{commit} {name}\n"));
        }
        tree.write_file(&self.path("packed-refs"), packed.as_bytes())?;
        tree.write_file(&self.path("HEAD"), format!("ref: {MAIN}\n").as_bytes())?;
        let mut listed = String::new();
        let mut packs = packs.to_vec();
        packs.sort();
        packs.dedup();
        for checksum in packs {
            listed.push_str(&format!("P pack-{checksum}.pack\n"));
        }
        listed.push('\n');
        tree.write_file(&self.path("objects/info/packs"), listed.as_bytes())?;
        let mut refs: BTreeMap<&str, ObjectId> = tags
            .iter()
            .map(|(name, commit)| (name.as_str(), *commit))
            .collect();
        if let Some(commit) = main {
            refs.insert(MAIN, commit);
        }
        let mut info = String::new();
        for (name, commit) in refs {
            info.push_str(&format!("{commit}\t{name}\n"));
        }
        tree.write_file(&self.path("info/refs"), info.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_repositories_the_registry_writes_are_found() {
        assert_eq!(
            Repo::at("plugins/pdf.git").unwrap().prefix(),
            "plugins/pdf.git"
        );
        assert_eq!(
            Repo::at("marketplace.git").unwrap().prefix(),
            "marketplace.git"
        );
        for other in [
            "plugins/PDF.git",
            "plugins/pdf",
            "plugins/../pdf.git",
            "plugins/a/b.git",
            "plugins/.git",
            "dl/pdf.git",
            "plugins/marketplace.git/x",
        ] {
            assert_eq!(Repo::at(other), None, "{other}");
        }
    }

    #[test]
    fn a_version_git_refuses_as_a_ref_has_no_tag() {
        let tag = |version: &str| tag_of(&version.parse().unwrap());
        assert_eq!(tag("1.2.0").as_deref(), Some("refs/tags/v1.2.0"));
        assert_eq!(
            tag("1.0.0-rc.1+build.7").as_deref(),
            Some("refs/tags/v1.0.0-rc.1+build.7")
        );
        assert_eq!(tag("1.0.0-x.lock"), None);
        assert_eq!(tag("1.0.0+a.lock"), None);
    }

    #[test]
    fn refs_written_read_back() {
        let temp = tempfile::tempdir().unwrap();
        let tree = StaticTree::new(temp.path());
        let repo = Repo::plugin(&"pdf".parse().unwrap());
        assert_eq!(repo.read_refs(&tree).unwrap(), None);
        let one = ObjectId::from_hex(b"1111111111111111111111111111111111111111").unwrap();
        let two = ObjectId::from_hex(b"2222222222222222222222222222222222222222").unwrap();
        let tags = BTreeMap::from([
            ("refs/tags/v1.0.0".to_owned(), one),
            ("refs/tags/v2.0.0".to_owned(), two),
        ]);
        repo.write_refs(&tree, Some(two), &tags, &[two, one, two])
            .unwrap();
        let refs = repo.read_refs(&tree).unwrap().unwrap();
        assert_eq!(refs.head(), Some(two));
        assert_eq!(refs.refs.len(), 3);
        assert_eq!(repo.read_packs(&tree).unwrap(), [one, two]);
        assert_eq!(
            fs_err::read_to_string(temp.path().join("plugins/pdf.git/info/refs")).unwrap(),
            format!("{two}\trefs/heads/main\n{one}\trefs/tags/v1.0.0\n{two}\trefs/tags/v2.0.0\n")
        );
        // Every version yanked: no `main`.
        repo.write_refs(&tree, None, &tags, &[one, two]).unwrap();
        assert_eq!(repo.read_refs(&tree).unwrap().unwrap().head(), None);
        assert!(!temp.path().join("plugins/pdf.git/refs/heads/main").exists());
    }
}
