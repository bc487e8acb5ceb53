//! The registry as a plugin marketplace for Claude Code and Codex
//! (docs/registry.md, "Claude Code plugin marketplace"): each skill is a
//! plugin whose versions are commits of a git repository of its own, and
//! a marketplace file lists each skill's newest version that is not
//! yanked, pinned by its commit.
//!
//! ```text
//! marketplace.json                  Claude Code's marketplace, for
//!                                   `claude plugin marketplace add URL/marketplace.json`
//! marketplace.git/                  the same file as `.claude-plugin/marketplace.json`
//!                                   of a repository, for Codex (which adds git
//!                                   repositories only) and `claude plugin marketplace add URL/marketplace.git`
//! plugins/<name>.git/               a skill's repository (layout: [`repo`]): one
//!                                   commit a version, with no parent, tagged
//!                                   `v<version>`; `main` at the newest version not yanked
//! ```
//!
//! A version's commit holds the plugin: `.claude-plugin/plugin.json`
//! (name, version, description) and `skills/<name>/` with the files of the
//! version's archive, byte for byte, executable bits kept. Its author and
//! committer are fixed and its date is the version's publish time, so its
//! id depends on the version alone: building the tree again, on any
//! server, gives the same commit, and a pin never moves. A commit has no
//! parent for the same reason: a version published later (a patch of an
//! older line) or a yank changes no other version's commit.
//!
//! Everything here is a file of the static tree, written beside the index
//! files after every publish and yank (a skill's repository with its index
//! file; the marketplace with the discovery index, a moment later), in a
//! folder or a bucket alike. Git reads the repositories over its dumb
//! HTTP protocol from any static host; Claude Code clones shallow, which
//! that protocol cannot do, so `skillpkg-registry serve` also answers
//! git's smart protocol for them ([`upload_pack`]).

pub mod git;
pub mod repo;
pub mod upload_pack;

use std::collections::BTreeMap;

use serde::Serialize;
use skillpkg_index::archive::{Limits, UnpackError, unpack};
use skillpkg_index::checksum::Checksum;
use skillpkg_index::registry::tree::{StaticTree, TreeError};
use skillpkg_index::registry::{IndexRecord, archive_path, latest};
use skillpkg_index::skill::SkillName;

use git::{File, GitError, ObjectId, Stamp, pack_snapshot};
use repo::{Repo, tag_of};

/// Where Claude Code's marketplace file is, in the tree.
pub const MARKETPLACE_PATH: &str = "marketplace.json";
/// Where the marketplace file is inside `marketplace.git`, and where a
/// plugin's manifest is inside its commits' folder: Claude Code's names,
/// which Codex reads too.
const MANIFEST_DIR: &str = ".claude-plugin";
/// Who makes every commit.
const COMMITTER: &str = "skillpkg registry";
const COMMITTER_EMAIL: &str = "registry@skillpkg.invalid";
/// The registry's stamp on a commit made at `seconds` (since 1970, UTC).
fn committed_at(seconds: i64) -> Stamp {
    Stamp {
        name: COMMITTER.to_owned(),
        email: COMMITTER_EMAIL.to_owned(),
        seconds,
    }
}

/// The longest marketplace name.
const MAX_NAME_CHARS: usize = 64;

/// Why a skill's repository or the marketplace could not be written.
#[derive(Debug, thiserror::Error)]
pub enum MarketplaceError {
    #[error(transparent)]
    Tree(#[from] TreeError),
    /// `skill` is `name@version` in each variant.
    #[error("the archive of {skill} is not in the tree")]
    MissingArchive { skill: String },
    #[error(
        "the archive of {skill} in the tree is not the one its index line names ({expected}): restore it from a backup"
    )]
    ChangedArchive { skill: String, expected: Checksum },
    #[error("the archive of {skill} cannot be unpacked")]
    Unpack {
        skill: String,
        #[source]
        source: Box<UnpackError>,
    },
    #[error("cannot unpack {skill} in a temporary folder")]
    Scratch {
        skill: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot make the commit of {skill}")]
    Git {
        skill: String,
        #[source]
        source: GitError,
    },
}

/// A marketplace's name: what users type after `@` (`claude plugin
/// install pdf@skills-example-com`). 1 to 64 characters of `[a-z0-9-]`,
/// starting and ending with a letter or digit; not a name Claude Code
/// keeps for itself (`inline`, `builtin`, `skills-dir`) and without
/// `claude` or `anthropic`, which Claude Code refuses in names that look
/// like its official marketplaces.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MarketplaceName(String);

/// Why a marketplace name was refused.
#[derive(Debug, thiserror::Error)]
#[error("`{name}` cannot be a marketplace name: {why}")]
pub struct NameError {
    name: String,
    why: &'static str,
}

impl std::str::FromStr for MarketplaceName {
    type Err = NameError;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        let refuse = |why| NameError {
            name: name.to_owned(),
            why,
        };
        if name.is_empty() || name.chars().count() > MAX_NAME_CHARS {
            return Err(refuse("it must be 1 to 64 characters"));
        }
        if !name
            .bytes()
            .all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'-')
        {
            return Err(refuse("it may hold only a-z, 0-9 and `-`"));
        }
        if name.starts_with('-') || name.ends_with('-') {
            return Err(refuse("it must start and end with a letter or a digit"));
        }
        if ["inline", "builtin", "skills-dir"].contains(&name) {
            return Err(refuse("Claude Code keeps this name for its own plugins"));
        }
        if name.contains("claude") || name.contains("anthropic") {
            return Err(refuse(
                "Claude Code refuses names that could pass for its official marketplaces",
            ));
        }
        Ok(Self(name.to_owned()))
    }
}

impl std::fmt::Display for MarketplaceName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl MarketplaceName {
    /// The name a registry at `base_url` has unless given one: its host,
    /// with every run of other characters than letters and digits made one
    /// `-` (`https://skills.example.com` is `skills-example-com`), or
    /// `skillpkg` when that is no valid name.
    pub fn of_url(base_url: &str) -> Self {
        let host = url::Url::parse(base_url)
            .ok()
            .and_then(|url| url.host_str().map(str::to_ascii_lowercase))
            .unwrap_or_default();
        let mut name = String::new();
        for character in host.chars() {
            if character.is_ascii_alphanumeric() {
                name.push(character);
            } else if !name.is_empty() && !name.ends_with('-') {
                name.push('-');
            }
        }
        let name: String = name
            .trim_end_matches('-')
            .chars()
            .take(MAX_NAME_CHARS)
            .collect();
        name.trim_end_matches('-')
            .parse()
            .unwrap_or_else(|_| Self("skillpkg".to_owned()))
    }
}

/// How the marketplace is written: its name, and the URL the tree is
/// served at, under which the plugins' repositories are (a marketplace
/// names them by absolute URL).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    pub name: MarketplaceName,
    /// The tree's URL, without a trailing `/`.
    pub base_url: String,
}

impl Settings {
    /// The settings of a tree served at `base_url`, named `name` or after
    /// the URL's host.
    pub fn new(base_url: &str, name: Option<MarketplaceName>) -> Self {
        let base_url = base_url.trim_end_matches('/').to_owned();
        Self {
            name: name.unwrap_or_else(|| MarketplaceName::of_url(&base_url)),
            base_url,
        }
    }
}

/// A skill's repository, as written: each version's commit.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plugin {
    pub commits: BTreeMap<semver::Version, ObjectId>,
}

/// The `.claude-plugin/plugin.json` of a version.
#[derive(Serialize)]
struct PluginManifest<'a> {
    name: &'a SkillName,
    version: String,
    description: &'a str,
}

/// Renders a JSON document as this module writes every one: two-space
/// indents, a newline at the end.
fn pretty(value: &impl Serialize) -> Vec<u8> {
    let mut bytes = serde_json::to_vec_pretty(value).expect("marketplace documents serialise");
    bytes.push(b'\n');
    bytes
}

/// The commit of `record` (a version of `name`), packed: the plugin made
/// of the version's archive, read from the tree and checked against the
/// index line's checksum before it is unpacked (with `limits`, by the
/// hardened unpacker).
fn snapshot(
    tree: &StaticTree,
    name: &SkillName,
    record: &IndexRecord,
    limits: &Limits,
) -> Result<git::Pack, MarketplaceError> {
    let version = &record.vers;
    let skill = || format!("{name}@{version}");
    let tarball = tree
        .read_file(&archive_path(name, version))?
        .ok_or_else(|| MarketplaceError::MissingArchive { skill: skill() })?;
    if Checksum::of(&tarball) != record.cksum {
        return Err(MarketplaceError::ChangedArchive {
            skill: skill(),
            expected: record.cksum,
        });
    }
    let scratch_error = |source| MarketplaceError::Scratch {
        skill: skill(),
        source,
    };
    let scratch = tempfile::tempdir().map_err(scratch_error)?;
    let dir = scratch.path().join("skill");
    let unpacked =
        unpack(&tarball[..], &dir, limits).map_err(|source| MarketplaceError::Unpack {
            skill: skill(),
            source: Box::new(source),
        })?;
    let manifest = PluginManifest {
        name,
        version: version.to_string(),
        description: &record.description,
    };
    let mut files = vec![File {
        path: format!("{MANIFEST_DIR}/plugin.json"),
        executable: false,
        bytes: pretty(&manifest),
    }];
    for file in &unpacked.files {
        let bytes = fs_err::read(dir.join(&file.path)).map_err(scratch_error)?;
        files.push(File {
            path: format!("skills/{name}/{}", file.path),
            executable: file.executable,
            bytes,
        });
    }
    let message = format!(
        "{name} {version}\n\n{} {}\n",
        record.cksum,
        archive_path(name, version)
    );
    pack_snapshot(
        &files,
        &message,
        &committed_at(record.published.as_second()),
    )
    .map_err(|source| MarketplaceError::Git {
        skill: skill(),
        source,
    })
}

/// Writes the repository of `name` for its index lines `records`: a
/// commit for each version it has none for yet (read from the archives of
/// the tree, within `limits`), then its refs. Returns every version's
/// commit.
///
/// The repository as found is trusted only as far as its packs bear it
/// out: a tag is kept when a pack in `objects/pack/` holds its commit, and
/// every pack there is listed again, so a repository left half-written
/// (two writers interleaved, a crash between files) is whole after the
/// next write. Two writes of one repository must not run at once: the
/// caller serialises them (the server, with a lock a skill; two servers
/// on one bucket are not, and the second write of a pair may drop what
/// the first added until the skill's next change writes it again).
pub fn write_plugin(
    tree: &StaticTree,
    name: &SkillName,
    records: &[IndexRecord],
    limits: &Limits,
) -> Result<Plugin, MarketplaceError> {
    let repo = Repo::plugin(name);
    let known = repo.read_refs(tree)?.unwrap_or_default();
    // Every index is read, one small file a version: a write is rare,
    // and this is what makes a tag without its pack found.
    let indexes = repo.read_all_indexes(tree)?;
    let packed = |commit: &ObjectId| indexes.iter().any(|(_, index)| index.contains(commit));
    let mut packs: Vec<ObjectId> = indexes.iter().map(|(checksum, _)| *checksum).collect();
    let mut plugin = Plugin::default();
    let mut tags = BTreeMap::new();
    for record in records {
        let tag = tag_of(&record.vers);
        let kept = tag
            .as_ref()
            .and_then(|tag| known.refs.get(tag))
            .filter(|commit| packed(commit));
        let commit = match kept {
            Some(commit) => *commit,
            None => {
                let pack = snapshot(tree, name, record, limits)?;
                repo.write_pack(tree, &pack)?;
                packs.push(pack.checksum);
                pack.commit
            }
        };
        if let Some(tag) = tag {
            tags.insert(tag, commit);
        }
        plugin.commits.insert(record.vers.clone(), commit);
    }
    let main = latest(records).and_then(|record| plugin.commits.get(&record.vers).copied());
    repo.write_refs(tree, main, &tags, &packs)?;
    Ok(plugin)
}

/// Returns the commit of `name@version` that the skill's repository in
/// the tree has, when it has one (its tag in `info/refs`).
pub fn commit_of(
    tree: &StaticTree,
    name: &SkillName,
    version: &semver::Version,
) -> Result<Option<ObjectId>, TreeError> {
    let Some(tag) = tag_of(version) else {
        return Ok(None);
    };
    Ok(Repo::plugin(name)
        .read_refs(tree)?
        .and_then(|refs| refs.refs.get(&tag).copied()))
}

/// A plugin of the marketplace: a skill's newest version that is not
/// yanked, and its commit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listed {
    pub name: SkillName,
    pub version: semver::Version,
    pub description: String,
    pub commit: ObjectId,
}

#[derive(Serialize)]
struct Manifest<'a> {
    name: String,
    owner: Owner,
    metadata: Metadata,
    plugins: Vec<Entry<'a>>,
}

#[derive(Serialize)]
struct Owner {
    name: String,
}

#[derive(Serialize)]
struct Metadata {
    description: String,
}

#[derive(Serialize)]
struct Entry<'a> {
    name: &'a SkillName,
    description: &'a str,
    version: String,
    source: Source,
}

#[derive(Serialize)]
struct Source {
    source: &'static str,
    url: String,
    sha: String,
}

/// Renders `marketplace.json`: every plugin of `listed`, by name.
pub fn render(settings: &Settings, listed: &[Listed]) -> Vec<u8> {
    let mut listed: Vec<&Listed> = listed.iter().collect();
    listed.sort_by(|a, b| a.name.cmp(&b.name));
    let manifest = Manifest {
        name: settings.name.to_string(),
        owner: Owner {
            name: settings.name.to_string(),
        },
        metadata: Metadata {
            description: format!(
                "The skills of the skillpkg registry at {}",
                settings.base_url
            ),
        },
        plugins: listed
            .into_iter()
            .map(|plugin| Entry {
                name: &plugin.name,
                description: &plugin.description,
                version: plugin.version.to_string(),
                source: Source {
                    source: "url",
                    url: format!(
                        "{}/{}",
                        settings.base_url,
                        Repo::plugin(&plugin.name).prefix()
                    ),
                    sha: plugin.commit.to_string(),
                },
            })
            .collect(),
    };
    pretty(&manifest)
}

/// Writes the marketplace of `listed`: `marketplace.git` (one commit, its
/// old pack removed once nothing names it), then `marketplace.json`.
/// Writes nothing when `marketplace.json` already says this.
pub fn write_marketplace(
    tree: &StaticTree,
    settings: &Settings,
    listed: &[Listed],
) -> Result<(), MarketplaceError> {
    let bytes = render(settings, listed);
    let repo = Repo::marketplace();
    if tree.read_file(MARKETPLACE_PATH)?.as_deref() == Some(&bytes[..])
        && repo.read_refs(tree)?.is_some()
    {
        return Ok(());
    }
    let file = File {
        path: format!("{MANIFEST_DIR}/{MARKETPLACE_PATH}"),
        executable: false,
        bytes: bytes.clone(),
    };
    let message = format!("The marketplace {}\n", settings.name);
    // A fixed date: the commit is a function of the file alone.
    let pack = pack_snapshot(&[file], &message, &committed_at(0)).map_err(|source| {
        MarketplaceError::Git {
            skill: format!("the marketplace {}", settings.name),
            source,
        }
    })?;
    let old = repo.read_packs(tree)?;
    repo.write_pack(tree, &pack)?;
    repo.write_refs(tree, Some(pack.commit), &BTreeMap::new(), &[pack.checksum])?;
    tree.write_file(MARKETPLACE_PATH, &bytes)?;
    for checksum in old.iter().filter(|checksum| **checksum != pack.checksum) {
        repo.remove_pack(tree, checksum)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marketplace_names_follow_claude_code_s_rules() {
        for good in ["skillpkg", "skills-example-com", "a", "127-0-0-1"] {
            assert_eq!(good.parse::<MarketplaceName>().unwrap().to_string(), good);
        }
        for bad in [
            "",
            "Skills",
            "my skills",
            "a/b",
            "..",
            "-a",
            "a-",
            "inline",
            "skills-dir",
            "claude-plugins",
            "my-anthropic",
            &"a".repeat(65),
        ] {
            assert!(bad.parse::<MarketplaceName>().is_err(), "{bad}");
        }
        assert_eq!(
            MarketplaceName::of_url("https://Skills.Example.com:8443/x").to_string(),
            "skills-example-com"
        );
        assert_eq!(
            MarketplaceName::of_url("http://127.0.0.1:8080").to_string(),
            "127-0-0-1"
        );
        assert_eq!(
            MarketplaceName::of_url("http://claude.example.com").to_string(),
            "skillpkg"
        );
        assert_eq!(MarketplaceName::of_url("not a url").to_string(), "skillpkg");
    }

    /// Publishes `pdf@version` (with `body`) into `tree` as the server
    /// does: its archive, and returns its index line.
    fn publish(tree: &StaticTree, version: &str, body: &str, yanked: bool) -> IndexRecord {
        let source = tempfile::tempdir().unwrap();
        let dir = source.path().join("pdf");
        fs_err::create_dir_all(dir.join("scripts")).unwrap();
        fs_err::write(
            dir.join("SKILL.md"),
            format!("---\nname: pdf\ndescription: Reads PDFs.\n---\n{body}"),
        )
        .unwrap();
        fs_err::write(dir.join("scripts/run.sh"), "#!/bin/sh\necho pdf\n").unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        fs_err::set_permissions(
            dir.join("scripts/run.sh"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        let name: SkillName = "pdf".parse().unwrap();
        let version: semver::Version = version.parse().unwrap();
        let packed = skillpkg_index::archive::pack_dir(
            &dir,
            name.clone(),
            version.clone(),
            &Limits::default(),
        )
        .unwrap();
        tree.write_file(&archive_path(&name, &version), &packed.tarball)
            .unwrap();
        let line = serde_json::json!({
            "v": 1, "name": "pdf", "vers": version.to_string(),
            "cksum": Checksum::of(&packed.tarball).to_string(),
            "size": packed.tarball.len(), "tree": packed.tree.as_str(),
            "files": packed.files.len(), "deps": [], "description": "Reads PDFs.",
            "yanked": yanked, "signer": null, "published": "2026-11-22T10:00:00Z",
        });
        skillpkg_index::registry::parse_index_file(&name, &line.to_string())
            .unwrap()
            .remove(0)
    }

    #[test]
    fn two_builds_of_a_tree_make_the_same_commits_and_files() {
        let name: SkillName = "pdf".parse().unwrap();
        let mut built = Vec::new();
        for _ in 0..2 {
            let temp = tempfile::tempdir().unwrap();
            let tree = StaticTree::new(temp.path());
            let records = [
                publish(&tree, "1.0.0", "# One\n", false),
                publish(&tree, "1.1.0", "# Two\n", true),
            ];
            let plugin = write_plugin(&tree, &name, &records, &Limits::default()).unwrap();
            let files: BTreeMap<String, Vec<u8>> = tree
                .list(repo::PLUGINS_DIR)
                .unwrap()
                .into_iter()
                .map(|path| {
                    let bytes = tree.read_file(&path).unwrap().unwrap();
                    (path, bytes)
                })
                .collect();
            // Written again over itself: nothing changes.
            assert_eq!(
                write_plugin(&tree, &name, &records, &Limits::default()).unwrap(),
                plugin
            );
            let refs = Repo::plugin(&name).read_refs(&tree).unwrap().unwrap();
            assert_eq!(
                refs.head(),
                plugin.commits.get(&"1.0.0".parse().unwrap()).copied(),
                "`main` is the newest version that is not yanked"
            );
            assert_eq!(
                refs.refs.len(),
                3,
                "main and a tag a version, the yanked one too"
            );
            built.push((plugin, files));
        }
        assert_eq!(built[0].0, built[1].0);
        assert_eq!(built[0].1, built[1].1);
        assert_eq!(built[0].0.commits.len(), 2);
    }

    #[test]
    fn a_repository_whose_tag_has_no_listed_pack_is_repaired_by_the_next_write() {
        let temp = tempfile::tempdir().unwrap();
        let tree = StaticTree::new(temp.path());
        let name: SkillName = "pdf".parse().unwrap();
        let repo = Repo::plugin(&name);
        let records = [
            publish(&tree, "1.0.0", "# One\n", false),
            publish(&tree, "1.1.0", "# Two\n", false),
        ];
        let plugin = write_plugin(&tree, &name, &records, &Limits::default()).unwrap();
        let packs = repo.read_packs(&tree).unwrap();
        assert_eq!(packs.len(), 2);
        let listing = "plugins/pdf.git/objects/info/packs";
        let written = tree.read_file(listing).unwrap().unwrap();

        // Two writers interleaved: the refs name both tags, the listing
        // one pack.
        tree.write_file(listing, format!("P pack-{}.pack\n\n", packs[0]).as_bytes())
            .unwrap();
        assert_eq!(
            write_plugin(&tree, &name, &records, &Limits::default()).unwrap(),
            plugin
        );
        assert_eq!(tree.read_file(listing).unwrap().unwrap(), written);

        // A tag whose pack is gone altogether: made again, not trusted.
        for checksum in &packs {
            repo.remove_pack(&tree, checksum).unwrap();
        }
        assert_eq!(
            write_plugin(&tree, &name, &records, &Limits::default()).unwrap(),
            plugin
        );
        assert_eq!(tree.read_file(listing).unwrap().unwrap(), written);
        assert_eq!(repo.read_all_indexes(&tree).unwrap().len(), 2);
    }

    #[test]
    fn the_marketplace_escapes_what_publishers_wrote() {
        let settings = Settings::new("https://skills.example.com/", None);
        let listed = Listed {
            name: "pdf".parse().unwrap(),
            version: "1.0.0+build.1".parse().unwrap(),
            description: "Quotes \" and \\ and\nnew lines, </script> and \u{2028}.".into(),
            commit: ObjectId::from_hex(b"0123456789abcdef0123456789abcdef01234567").unwrap(),
        };
        let bytes = render(&settings, std::slice::from_ref(&listed));
        let json: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(json["name"], "skills-example-com");
        assert_eq!(json["owner"]["name"], "skills-example-com");
        let plugin = &json["plugins"][0];
        assert_eq!(plugin["description"], listed.description.as_str());
        assert_eq!(plugin["version"], "1.0.0+build.1");
        assert_eq!(
            plugin["source"],
            serde_json::json!({
                "source": "url",
                "url": "https://skills.example.com/plugins/pdf.git",
                "sha": "0123456789abcdef0123456789abcdef01234567",
            })
        );
    }
}
