//! `skills.lock` (docs/lockfile.md): deterministic, refused when unknown or
//! conflicted.

use std::path::Path;

use skillpkg_index::checksum::Checksum;
use skillpkg_index::signing::SignerPin;
use skillpkg_index::skill::SkillName;

use crate::error::UserError;

/// The lockfile's file name.
pub const LOCKFILE: &str = "skills.lock";
/// The format version this skillpkg writes and reads.
pub const LOCK_VERSION: u32 = 1;
/// What a `source` starts with: `registry:NAME` names the registry by its
/// logical name, never by URL, so a mirror or a moved index URL changes
/// nothing in the lock.
const REGISTRY_SOURCE_PREFIX: &str = "registry:";

/// What a `source` of a skill from a local folder starts with; the rest is
/// the folder, relative to the project's root, with `/` separators.
pub const PATH_SOURCE_PREFIX: &str = "path:";
/// What a `source` of a skill from a git repository starts with; the rest
/// is the repository's URL with `?rev=REV&path=PATH` as the manifest asks
/// (each when given) and `#COMMIT`, the commit it was resolved to.
pub const GIT_SOURCE_PREFIX: &str = "git+";

/// What a `source` of a skill from a discovery index starts with; the rest
/// is the index's URL as skills.toml gives it.
pub const INDEX_SOURCE_PREFIX: &str = "index+";
/// What a `source` of a skill from a tarball URL starts with; the rest is
/// the URL.
pub const URL_SOURCE_PREFIX: &str = "url+";

/// Returns the `source` of a skill from the registry named `registry`.
pub fn registry_source(registry: &str) -> String {
    format!("{REGISTRY_SOURCE_PREFIX}{registry}")
}

/// The version a lock records: a registry skill's semver version, or, for
/// a skill from elsewhere whose SKILL.md gives none, a label people
/// recognise: the git tag at the locked commit (`v1.2.0`), else `git:` and
/// the short commit (`git:9d2f1ae`). Written in skills.lock as one string,
/// so a lock of semver versions alone reads as it always did.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum LockedVersion {
    Semver(semver::Version),
    Label(String),
}

/// What a label may hold: a git tag's characters, 1 to 100 of them.
const MAX_LABEL: usize = 100;

impl LockedVersion {
    /// The semver version, when this is one.
    pub fn as_semver(&self) -> Option<&semver::Version> {
        match self {
            Self::Semver(version) => Some(version),
            Self::Label(_) => None,
        }
    }

    /// The label of a skill at `commit` with the tags `tags` pointing at it:
    /// the highest tag that reads as a version (`v1.2.0`, `1.2.0`), else the
    /// first tag by name, else `git:` and the commit's first 7 digits.
    pub fn for_commit(commit: &str, tags: &[String]) -> Self {
        // Every tag a lock can hold: `1.2.0` reads back as a semver
        // version, `v1.2.0` as a label; both count.
        let usable: Vec<(&String, Self)> = tags
            .iter()
            .filter_map(|tag| tag.parse::<Self>().ok().map(|parsed| (tag, parsed)))
            .collect();
        let newest = newest_version_tag(usable.iter().map(|(tag, _)| *tag))
            .or_else(|| usable.iter().map(|(tag, _)| *tag).min());
        match usable.iter().find(|(tag, _)| Some(*tag) == newest) {
            Some((_, parsed)) => parsed.clone(),
            None => Self::Label(format!("git:{}", &commit[..commit.len().min(7)])),
        }
    }
}

/// Of `tags`, the one naming the highest version ([`tag_version`]).
pub fn newest_version_tag<'a>(tags: impl IntoIterator<Item = &'a String>) -> Option<&'a String> {
    tags.into_iter()
        .filter_map(|tag| tag_version(tag).map(|version| (version, tag)))
        .max_by(|a, b| a.0.cmp(&b.0))
        .map(|(_, tag)| tag)
}

/// The version a git tag names: `v1.2.0` and `1.2.0` are `1.2.0`.
pub fn tag_version(tag: &str) -> Option<semver::Version> {
    tag.strip_prefix('v').unwrap_or(tag).parse().ok()
}

impl std::fmt::Display for LockedVersion {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Semver(version) => version.fmt(formatter),
            Self::Label(label) => formatter.write_str(label),
        }
    }
}

impl std::str::FromStr for LockedVersion {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        if let Ok(version) = text.parse::<semver::Version>() {
            return Ok(Self::Semver(version));
        }
        // A label is printed in messages and tables: a tag's characters
        // only, nothing a terminal would act on.
        let valid = !text.is_empty()
            && text.len() <= MAX_LABEL
            && !text.starts_with(['-', '.', '/'])
            && text
                .chars()
                .all(|character| character.is_ascii_alphanumeric() || "._+-/:".contains(character));
        if valid {
            Ok(Self::Label(text.to_owned()))
        } else {
            Err(format!(
                "`{}` is neither a semver version nor a git tag or `git:` commit",
                text.escape_debug()
            ))
        }
    }
}

impl serde::Serialize for LockedVersion {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for LockedVersion {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

impl From<semver::Version> for LockedVersion {
    fn from(version: semver::Version) -> Self {
        Self::Semver(version)
    }
}

/// What [`LockedVersion::semver`] gives for a label.
static NO_VERSION: semver::Version = semver::Version::new(0, 0, 0);

impl LockedVersion {
    /// The semver version; `0.0.0` for a label. A registry skill's version
    /// is always semver (a lock that says otherwise is refused), so the
    /// registry's paths take this; messages take `Display`.
    pub fn semver(&self) -> &semver::Version {
        self.as_semver().unwrap_or(&NO_VERSION)
    }
}

impl PartialEq<semver::Version> for LockedVersion {
    fn eq(&self, other: &semver::Version) -> bool {
        self.as_semver() == Some(other)
    }
}

/// One locked skill.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LockedSkill {
    pub name: SkillName,
    pub version: LockedVersion,
    pub source: String,
    /// The SHA-256 of the registry's archive. Absent for a skill from a
    /// folder or a git repository: its files are pinned by `tree` alone
    /// (skillpkg packs them itself, and the bytes of an archive it packs
    /// may change between versions of skillpkg; the files do not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checksum: Option<Checksum>,
    /// The tree hash of the skill's files (docs/archive-format.md).
    pub tree: String,
    /// The signer's public key (`ed25519:...`), pinned: a version signed
    /// by another key is a signer change. A lock written before keys were
    /// pinned holds the key id instead, which the next write replaces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signer: Option<SignerPin>,
    /// Whether the version had provenance that verified, recorded when the
    /// manifest's policy needs it (`trust = "no-downgrade"`,
    /// `require-provenance`); absent when it was not checked, as in locks
    /// written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<bool>,
    #[serde(default)]
    pub dependencies: Vec<SkillName>,
    /// The verdict of skillpkg's audit of the installed files and the ids
    /// of the rules it found (the registry's, until the files are fetched),
    /// so that a review of skills.lock shows what changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audit: Option<skillpkg_index::audit::Summary>,
}

/// The lockfile.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Lockfile {
    pub skills: Vec<LockedSkill>,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct RawLockfile {
    version: u32,
    #[serde(default, rename = "skill")]
    skills: Vec<LockedSkill>,
}

impl LockedSkill {
    /// Returns the name of the registry the skill comes from, or `None` for
    /// a `source` this skillpkg does not know.
    pub fn registry(&self) -> Option<&str> {
        self.source.strip_prefix(REGISTRY_SOURCE_PREFIX)
    }

    /// Returns true if and only if the skill comes from a local folder, a
    /// git repository, a discovery index or a tarball URL rather than a
    /// registry.
    pub fn is_direct(&self) -> bool {
        [
            PATH_SOURCE_PREFIX,
            GIT_SOURCE_PREFIX,
            INDEX_SOURCE_PREFIX,
            URL_SOURCE_PREFIX,
        ]
        .iter()
        .any(|prefix| self.source.starts_with(prefix))
    }

    /// Returns the name of the registry the skill comes from, or an error
    /// for a `source` this skillpkg does not know.
    pub fn require_registry(&self) -> anyhow::Result<&str> {
        self.registry().ok_or_else(|| {
            UserError::new(format!(
                "skills.lock takes `{}` from `{}`, a source this skillpkg does not know",
                self.name, self.source
            ))
            .with_hint("a newer skillpkg may have written it: upgrade skillpkg, or delete skills.lock and run `skillpkg install`")
            .into()
        })
    }

    /// The registry's archive this entry pins: its checksum, or an error
    /// for an entry that has none (a registry entry always has one).
    pub fn require_checksum(&self) -> anyhow::Result<Checksum> {
        self.checksum.ok_or_else(|| {
            UserError::new(format!(
                "skills.lock takes `{}` from `{}` but has no `checksum` for it",
                self.name, self.source
            ))
            .with_hint("delete skills.lock and run `skillpkg install` to write a fresh one")
            .into()
        })
    }
}

impl Lockfile {
    /// Returns the locked entry of `name`.
    pub fn get(&self, name: &SkillName) -> Option<&LockedSkill> {
        self.skills.iter().find(|skill| &skill.name == name)
    }

    /// Renders the lockfile: sorted, LF, no timestamps.
    pub fn render(&self) -> String {
        let mut skills = self.skills.clone();
        skills.sort_by(|a, b| a.name.cmp(&b.name));
        for skill in &mut skills {
            skill.dependencies.sort();
            skill.dependencies.dedup();
        }
        let body = toml::to_string(&RawLockfile {
            version: LOCK_VERSION,
            skills,
        })
        .expect("a lockfile serialises");
        format!("# This file is written by skillpkg: do not edit it.\n{body}")
    }
}

/// Reads the lockfile at `root`; `None` when there is none.
pub fn read(root: &Path) -> anyhow::Result<Option<Lockfile>> {
    let path = root.join(LOCKFILE);
    let text = match fs_err::read_to_string(&path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(error.into()),
    };
    parse_at(&path, &text).map(Some)
}

/// Reads a lockfile's text.
pub fn parse(text: &str) -> anyhow::Result<Lockfile> {
    parse_at(Path::new(LOCKFILE), text)
}

/// Reads the text of the lockfile at `path` (named in errors).
fn parse_at(path: &Path, text: &str) -> anyhow::Result<Lockfile> {
    if text
        .lines()
        .any(|line| line.starts_with("<<<<<<<") || line.starts_with(">>>>>>>") || line == "=======")
    {
        return Err(UserError::new(format!("{} has merge-conflict markers", path.display()))
            .with_hint("resolve the conflict in skills.toml, delete skills.lock, and run `skillpkg install` to write a fresh one")
            .into());
    }
    #[derive(serde::Deserialize)]
    struct Version {
        version: Option<u32>,
    }
    let version: Version = toml::from_str(text).map_err(|error| {
        UserError::new(format!("{} is not a valid lockfile", path.display())).with_source(error)
    })?;
    match version.version {
        Some(LOCK_VERSION) => {}
        Some(other) => {
            return Err(UserError::new(format!(
                "{} has format version {other}; this skillpkg reads version {LOCK_VERSION}",
                path.display()
            ))
            .with_hint("a newer skillpkg wrote it: upgrade skillpkg")
            .into());
        }
        None => {
            return Err(
                UserError::new(format!("{} has no format `version`", path.display()))
                    .with_hint("delete it and run `skillpkg install`")
                    .into(),
            );
        }
    }
    let raw: RawLockfile = toml::from_str(text).map_err(|error| {
        UserError::new(format!("{} is not a valid lockfile", path.display()))
            .with_hint("delete it and run `skillpkg install`")
            .with_source(error)
    })?;
    // One entry per name: everything downstream looks skills up by name, so
    // a second entry could pair one version's files with another's record.
    let mut names = std::collections::BTreeSet::new();
    if let Some(twice) = raw.skills.iter().find(|entry| !names.insert(&entry.name)) {
        return Err(
            UserError::new(format!("{} lists `{}` twice", path.display(), twice.name))
                .with_hint("delete skills.lock and run `skillpkg install` to write a fresh one")
                .into(),
        );
    }
    // A registry publishes semver versions only; a label is a version
    // people recognise for a skill from elsewhere.
    if let Some(entry) = raw
        .skills
        .iter()
        .find(|entry| !entry.is_direct() && entry.version.as_semver().is_none())
    {
        return Err(UserError::new(format!(
            "{} gives `{}` from a registry the version `{}`, which is not a semver version",
            path.display(),
            entry.name,
            entry.version
        ))
        .with_hint("delete skills.lock and run `skillpkg install` to write a fresh one")
        .into());
    }
    Ok(Lockfile { skills: raw.skills })
}

/// Writes the lockfile at `root` atomically.
pub fn write(root: &Path, lockfile: &Lockfile) -> anyhow::Result<()> {
    skillpkg_index::fs::write_atomic(&root.join(LOCKFILE), lockfile.render().as_bytes())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skill(name: &str, dependencies: &[&str]) -> LockedSkill {
        LockedSkill {
            audit: None,
            name: name.parse().unwrap(),
            version: "1.0.0".parse().unwrap(),
            source: registry_source("default"),
            checksum: Some(Checksum::of(name.as_bytes())),
            tree: "h1:x".into(),
            signer: Some("A448895874B90297".parse().unwrap()),
            provenance: None,
            dependencies: dependencies.iter().map(|d| d.parse().unwrap()).collect(),
        }
    }

    #[test]
    fn renders_sorted_and_round_trips() {
        let temp = tempfile::tempdir().unwrap();
        let lock = Lockfile {
            skills: vec![skill("zeta", &["b", "a"]), skill("alpha", &[])],
        };
        write(temp.path(), &lock).unwrap();
        let text = fs_err::read_to_string(temp.path().join(LOCKFILE)).unwrap();
        assert!(text.find("alpha").unwrap() < text.find("zeta").unwrap());
        assert!(text.contains("dependencies = [\"a\", \"b\"]"), "{text}");
        assert!(!text.contains('\r') && !text.contains("/tmp"));
        let read_back = read(temp.path()).unwrap().unwrap();
        assert_eq!(read_back.render(), lock.render());
    }

    #[test]
    fn sources_name_the_registry_and_unknown_ones_are_errors() {
        let mut entry = skill("pdf", &[]);
        assert_eq!(entry.source, "registry:default");
        entry.source = registry_source("corp-eu");
        assert_eq!(entry.registry(), Some("corp-eu"));
        entry.source = "git:https://example.com/x".into();
        assert_eq!(entry.registry(), None);
        let error = entry.require_registry().unwrap_err();
        assert!(
            error.to_string().contains("`git:https://example.com/x`"),
            "{error}"
        );
    }

    #[test]
    fn versions_are_semver_or_labels_people_recognise() {
        let version = |text: &str| text.parse::<LockedVersion>();
        assert_eq!(
            version("1.2.0").unwrap(),
            LockedVersion::Semver(semver::Version::new(1, 2, 0))
        );
        assert_eq!(version("v1.2.0").unwrap().to_string(), "v1.2.0");
        assert_eq!(version("git:9d2f1ae").unwrap().as_semver(), None);
        for bad in ["", "-x", "a b", "v1\u{1b}[31m", &"x".repeat(101), "/etc"] {
            assert!(version(bad).is_err(), "{bad:?}");
        }
        let commit = "9d2f1ae0123456789abcdef0123456789abcdef0";
        let label = |tags: &[&str]| {
            let tags: Vec<String> = tags.iter().map(|&tag| tag.to_owned()).collect();
            LockedVersion::for_commit(commit, &tags).to_string()
        };
        assert_eq!(label(&[]), "git:9d2f1ae");
        assert_eq!(label(&["v1.2.0", "v1.10.0", "latest"]), "v1.10.0");
        assert_eq!(label(&["release", "beta"]), "beta");
        // A tag without the `v` is a version too, and reads back as one.
        assert_eq!(label(&["1.2.0"]), "1.2.0");
        assert_eq!(label(&["1.2.0", "v1.3.0", "latest"]), "v1.3.0");
        assert_eq!(
            LockedVersion::for_commit(commit, &["2.0.0".to_owned()]).as_semver(),
            Some(&semver::Version::new(2, 0, 0))
        );
        // A tag no message may print is passed over.
        assert_eq!(label(&["bad tag\u{7}"]), "git:9d2f1ae");
        assert_eq!(tag_version("v2.0.1"), Some(semver::Version::new(2, 0, 1)));
        assert_eq!(tag_version("2.0"), None);
    }

    #[test]
    fn a_registry_skill_with_a_label_for_a_version_is_refused() {
        let temp = tempfile::tempdir().unwrap();
        fs_err::write(
            temp.path().join(LOCKFILE),
            "version = 1\n\n[[skill]]\nname = \"pdf\"\nversion = \"git:9d2f1ae\"\nsource = \"registry:default\"\ntree = \"x\"\n",
        )
        .unwrap();
        let error = read(temp.path()).unwrap_err();
        assert!(
            error.to_string().contains("not a semver version"),
            "{error}"
        );
    }

    #[test]
    fn unknown_versions_and_conflicts_are_errors_with_advice() {
        let temp = tempfile::tempdir().unwrap();
        fs_err::write(temp.path().join(LOCKFILE), "version = 2\n").unwrap();
        let error = read(temp.path()).unwrap_err();
        assert!(error.to_string().contains("format version 2"), "{error}");
        fs_err::write(
            temp.path().join(LOCKFILE),
            "version = 1\n<<<<<<< HEAD\n=======\n>>>>>>> other\n",
        )
        .unwrap();
        let error = read(temp.path()).unwrap_err();
        assert!(
            error.to_string().contains("merge-conflict markers"),
            "{error}"
        );
    }

    #[test]
    fn provenance_is_written_only_when_known_and_old_locks_read_without_it() {
        let mut entry = skill("pdf", &[]);
        entry.provenance = Some(true);
        let text = Lockfile {
            skills: vec![entry.clone()],
        }
        .render();
        assert!(
            text.contains("signer = \"A448895874B90297\"\nprovenance = true\ndependencies = []"),
            "{text}"
        );
        assert_eq!(parse(&text).unwrap().skills[0].provenance, Some(true));
        entry.provenance = None;
        let old = Lockfile {
            skills: vec![entry],
        }
        .render();
        assert!(!old.contains("provenance"), "{old}");
        assert_eq!(parse(&old).unwrap().skills[0].provenance, None);
    }

    #[test]
    fn a_signer_is_pinned_by_key_and_old_pins_by_id_still_read() {
        let key = "ed25519:d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";
        let mut entry = skill("pdf", &[]);
        entry.signer = Some(key.parse().unwrap());
        let text = Lockfile {
            skills: vec![entry],
        }
        .render();
        assert!(text.contains(&format!("signer = \"{key}\"\n")), "{text}");
        let read_back = parse(&text).unwrap();
        assert_eq!(read_back.skills[0].signer.unwrap().to_string(), key);
        assert!(read_back.skills[0].signer.unwrap().key().is_some());
        // A lock from before keys were pinned: read as a legacy pin by id.
        let old = text.replace(key, "A448895874B90297");
        let legacy = parse(&old).unwrap().skills[0].signer.unwrap();
        assert!(legacy.key().is_none());
        // Anything else is not a signer, and the error says where.
        for bad in [
            "A44889587",
            "ed25519:xyz",
            "RWSXArl0WIlIpNLIXgmpYWlD0ZTStPLpuXiS2yVpHWuZMkCNPbSXzuIo",
        ] {
            let error = parse(&text.replace(key, bad)).unwrap_err();
            let shown = format!("{error:#}");
            assert!(
                shown.contains("skills.lock") && shown.contains("not a signer"),
                "{shown}"
            );
        }
    }

    #[test]
    fn a_lockfile_listing_a_skill_twice_is_refused() {
        let lock = Lockfile {
            skills: vec![skill("pdf", &[]), skill("pdf", &[])],
        };
        let error = parse(&lock.render()).unwrap_err();
        assert!(error.to_string().contains("lists `pdf` twice"), "{error}");
    }
}
