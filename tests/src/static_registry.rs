//! A signed static registry written straight into a folder with the index
//! crate, for tests that need a registry but not a server: installs read it
//! as a `file://` URL. It publishes whatever it is given, as a static tree
//! written by hand would, so tests can serve hostile archives too.

use std::path::Path;

use skillpkg_index::archive::{FileDigest, Limits, pack_dir, tree_hash};
use skillpkg_index::checksum::Checksum;
use skillpkg_index::registry::tree::StaticTree;
use skillpkg_index::registry::{IndexRecord, KeyRecord, KeysFile, RegistryConfig};
use skillpkg_index::signing::{PublicKey, SecretKey, Signature, TrustedComment};

use crate::TestContext;

/// A signed static registry (a `file://` tree) built in a test home.
#[derive(Debug)]
pub struct Registry {
    tree: StaticTree,
    key: SecretKey,
    /// The keys `keys/<name>.json` lists; `None`: the signing key alone.
    listed: Option<Vec<PublicKey>>,
    records: std::collections::BTreeMap<String, Vec<IndexRecord>>,
}

impl Registry {
    pub fn new(ctx: &TestContext) -> Self {
        let tree = StaticTree::new(ctx.path().join("registry"));
        tree.write_config(&RegistryConfig::read_only(8 * 1024 * 1024))
            .unwrap();
        Self {
            tree,
            key: SecretKey::generate().unwrap(),
            listed: None,
            records: Default::default(),
        }
    }

    /// The folder the tree is in.
    pub fn root(&self) -> &Path {
        self.tree.root()
    }

    /// The key the next publishes are signed with.
    pub fn key(&self) -> &SecretKey {
        &self.key
    }

    /// Signs the next publishes with `key`, and lists it alone in their
    /// keys files: what an operator who rewrites `keys/<name>.json` does.
    pub fn sign_with(&mut self, key: SecretKey) {
        self.key = key;
        self.listed = None;
    }

    /// Lists `keys` in the keys files the next publishes write, whichever
    /// key signs them: a keys file that lies.
    pub fn list_keys(&mut self, keys: Vec<PublicKey>) {
        self.listed = Some(keys);
    }

    pub fn url(&self) -> String {
        format!("file://{}/", self.tree.root().display())
    }

    /// Publishes the folder `dir` as `name@version`, signed, whatever the
    /// folder holds: nothing checks it is a skill, as nothing does when a
    /// static tree is written by hand.
    pub fn publish_folder(&mut self, dir: &Path, name: &str, version: &str) {
        let packed = pack_dir(
            dir,
            name.parse().unwrap(),
            version.parse().unwrap(),
            &Limits::default(),
        )
        .unwrap();
        self.publish_tarball(
            name,
            version,
            &packed.tarball,
            &packed.tree.to_string(),
            packed.files.len(),
        );
    }

    /// Publishes `files` (path, contents) as the archive of `name@version`,
    /// packed by hand: `pack` would refuse a folder that is not a skill.
    pub fn publish_files(&mut self, name: &str, version: &str, files: &[(&str, &str)]) {
        let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(
            Vec::new(),
            flate2::Compression::default(),
        ));
        let mut digests = Vec::new();
        for (path, contents) in files {
            let mut header = tar::Header::new_ustar();
            header.set_size(contents.len() as u64);
            header.set_mode(0o644);
            header.set_mtime(0);
            header.set_entry_type(tar::EntryType::Regular);
            builder
                .append_data(&mut header, path, contents.as_bytes())
                .unwrap();
            digests.push(FileDigest {
                path: (*path).to_owned(),
                sha256: *Checksum::of(contents.as_bytes()).digest(),
                executable: false,
            });
        }
        let tarball = builder.into_inner().unwrap().finish().unwrap();
        digests.sort_by(|a, b| a.path.cmp(&b.path));
        let tree = tree_hash(&digests).to_string();
        self.publish_tarball(name, version, &tarball, &tree, files.len());
    }

    pub fn publish_tarball(
        &mut self,
        name: &str,
        version: &str,
        tarball: &[u8],
        tree: &str,
        files: usize,
    ) {
        let name: skillpkg_index::skill::SkillName = name.parse().unwrap();
        let version: semver::Version = version.parse().unwrap();
        let published = "2026-11-22T00:00:00Z".parse().unwrap();
        let sha256 = Checksum::of(tarball);
        let comment = TrustedComment {
            name: name.clone(),
            version: version.clone(),
            sha256,
        };
        let signature = Signature::sign(&self.key, tarball, &comment.to_string()).to_file();
        self.tree
            .write_archive(
                &name,
                &version,
                tarball,
                Some(signature.as_bytes()),
                published,
            )
            .unwrap();
        let records = self.records.entry(name.to_string()).or_default();
        records.push(IndexRecord {
            v: 1,
            name: name.clone(),
            vers: version,
            cksum: sha256,
            size: tarball.len() as u64,
            tree: tree.to_owned(),
            files: files as u64,
            deps: Vec::new(),
            description: name.to_string(),
            yanked: false,
            yanked_reason: None,
            signer: Some(self.key.id().to_string()),
            published,
            audit: None,
        });
        self.tree.write_index(&name, records).unwrap();
        let listed = self
            .listed
            .clone()
            .unwrap_or_else(|| vec![self.key.public()]);
        let keys = KeysFile {
            v: 1,
            keys: listed
                .into_iter()
                .map(|key| KeyRecord {
                    id: key.id().to_string(),
                    key,
                    added: "2026-11-22T00:00:00Z".into(),
                })
                .collect(),
        };
        self.tree.write_keys(&name, &keys).unwrap();
    }

    /// Publishes a valid skill `name@version` whose SKILL.md says `marker`.
    pub fn publish(&mut self, ctx: &TestContext, name: &str, version: &str, marker: &str) {
        let dir = ctx.skill(
            &format!("src/{name}-{version}/{name}"),
            name,
            &format!("version: {version}\n"),
            &format!("# {name}\n{marker}\n"),
        );
        self.publish_folder(&dir, name, version);
    }
}
