//! The static index: the tree of files a registry is (normative text in
//! `docs/index-format.md`).
//!
//! ```text
//! config.json                                   RegistryConfig
//! index/1/a  index/2/ab  index/3/a/abc          one index file per skill name,
//! index/pd/f-/pdf-processing                      one IndexRecord a line (NDJSON)
//! dl/<name>/<version>/<name>-<version>.tgz      the archive, immutable
//! dl/<name>/<version>/<name>-<version>.tgz.minisig   its signature, when signed
//! dl/<name>/<version>/<name>-<version>.intoto.jsonl  its provenance, when sent
//! keys/<name>.json                              KeysFile: the publisher keys
//! search.json                                   SearchShards: how many shards
//! search/all.json  search/a.json  search/ab.json  SearchIndex: the skills of a shard
//! .well-known/agent-skills/index.json           DiscoveryIndex
//! ```
//!
//! Everything here is pure (paths, types, rendering) except [`tree`], which
//! reads and writes the files with atomic renames.

pub mod metadata;
pub mod tree;

use std::collections::BTreeMap;

use jiff::Timestamp;

use crate::checksum::Checksum;
use crate::skill::SkillName;

/// The version of `config.json` and of index lines this crate writes.
pub const FORMAT_VERSION: u32 = 1;

/// Where `config.json` is.
pub const CONFIG_PATH: &str = "config.json";
/// Where the search index is.
pub const SEARCH_PATH: &str = "search.json";
/// The version of `search.json` (and of its shards) this crate writes:
/// 1 listed every skill in `search.json`; 2 says how many shards list them.
pub const SEARCH_VERSION: u32 = 2;
/// Where the shards of the search index are.
pub const SEARCH_SHARDS_DIR: &str = "search";
/// The most skills a search shard is meant to hold: a registry with more
/// is split into more shards ([`ShardCount::for_skills`]).
pub const SKILLS_PER_SHARD: usize = 1000;
/// Where the Agent Skills Discovery index is.
pub const DISCOVERY_PATH: &str = ".well-known/agent-skills/index.json";
/// Where `skillpkg mirror` keeps its record of a mirror (its source and
/// ETags); a tree that has it is a mirror, which `skillpkg-registry serve`
/// serves read-only. Never served (it starts with `.`).
pub const MIRROR_RECORD_PATH: &str = ".skillpkg-mirror.json";
/// The default archive URL template, relative to the registry's base URL.
pub const DEFAULT_DL_TEMPLATE: &str = "dl/{name}/{version}/{name}-{version}.tgz";

/// `config.json`: what a registry is.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RegistryConfig {
    /// The format version.
    pub v: u32,
    /// The archive URL template (`{name}`, `{version}`), relative or absolute.
    pub dl: String,
    /// The publish API's base URL, or `None` for a read-only tree.
    pub api: Option<String>,
    /// Whether reading needs a token.
    #[serde(rename = "auth-required", default)]
    pub auth_required: bool,
    /// The largest archive (and sum of file sizes) accepted.
    #[serde(rename = "max-skill-bytes")]
    pub max_skill_bytes: u64,
    /// Whether every version must be signed: the registry refuses unsigned
    /// publishes, and clients refuse unsigned versions from it. Since 1.
    #[serde(rename = "require-signatures", default)]
    pub require_signatures: bool,
}

impl RegistryConfig {
    /// A read-only tree with the default template and limits.
    pub fn read_only(max_skill_bytes: u64) -> Self {
        Self {
            v: FORMAT_VERSION,
            dl: DEFAULT_DL_TEMPLATE.into(),
            api: None,
            auth_required: false,
            max_skill_bytes,
            require_signatures: false,
        }
    }

    /// Returns the archive URL (relative or absolute, as the template is).
    pub fn archive_url(&self, name: &SkillName, version: &semver::Version) -> String {
        self.dl
            .replace("{name}", name.as_str())
            .replace("{version}", &version.to_string())
    }
}

/// A dependency as an index line records it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct IndexDependency {
    pub name: SkillName,
    pub req: semver::VersionReq,
}

/// One line of an index file: one published version.
///
/// Field order is serialisation order and part of the format.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct IndexRecord {
    pub v: u32,
    pub name: SkillName,
    pub vers: semver::Version,
    pub cksum: Checksum,
    pub size: u64,
    pub tree: String,
    pub files: u64,
    pub deps: Vec<IndexDependency>,
    pub description: String,
    pub yanked: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub yanked_reason: Option<String>,
    /// The id of the key that signed it: a name and a hint to find the
    /// key in `keys/<name>.json`, never what trust is decided by (an id is
    /// chosen by whoever makes the key). Always a key id when read through
    /// [`parse_index_file`].
    pub signer: Option<String>,
    #[serde(with = "rfc3339_seconds")]
    pub published: Timestamp,
    /// What the registry's audit found at publish: the verdict and the
    /// ids of the rules (docs/security.md). Absent from lines written
    /// before audits, and from registries that do not audit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audit: Option<crate::audit::Summary>,
}

/// RFC 3339 in UTC with whole seconds: `2026-11-22T10:00:00Z`.
mod rfc3339_seconds {
    use jiff::Timestamp;

    pub(super) fn serialize<S: serde::Serializer>(
        timestamp: &Timestamp,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serializer.collect_str(&timestamp.strftime("%Y-%m-%dT%H:%M:%SZ"))
    }

    pub(super) fn deserialize<'de, D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Timestamp, D::Error> {
        let text = <String as serde::Deserialize>::deserialize(deserializer)?;
        let timestamp: Timestamp = text.parse().map_err(serde::de::Error::custom)?;
        // jiff also reads signed six-digit years (`-000001-...`), which
        // `serialize` would write as `-001-...` and nothing reads back:
        // the registry rewrites index files it reads, so keep to RFC 3339's
        // four-digit years.
        let year = timestamp.to_zoned(jiff::tz::TimeZone::UTC).year();
        if !(0..=9999).contains(&year) {
            return Err(serde::de::Error::custom(format!(
                "`{text}` is outside the years 0000 to 9999 that RFC 3339 can write"
            )));
        }
        Ok(timestamp)
    }
}

/// Returns `timestamp` cut to whole seconds, as index lines record it.
pub fn whole_seconds(timestamp: Timestamp) -> Timestamp {
    Timestamp::from_second(timestamp.as_second()).expect("a valid timestamp stays valid")
}

/// Returns the path of `name`'s index file, relative to the tree's root.
pub fn index_file_path(name: &SkillName) -> String {
    let name = name.as_str();
    // Names are ASCII (`[a-z0-9-]`), so byte slicing is character slicing.
    match name.len() {
        1 => format!("index/1/{name}"),
        2 => format!("index/2/{name}"),
        3 => format!("index/3/{}/{name}", &name[..1]),
        _ => format!("index/{}/{}/{name}", &name[..2], &name[2..4]),
    }
}

/// Returns the path of an archive, relative to the tree's root.
pub fn archive_path(name: &SkillName, version: &semver::Version) -> String {
    format!("dl/{name}/{version}/{name}-{version}.tgz")
}

/// Returns the path of an archive's signature, relative to the tree's root.
pub fn signature_path(name: &SkillName, version: &semver::Version) -> String {
    format!("{}.minisig", archive_path(name, version))
}

/// Returns the path of an archive's provenance, relative to the tree's root.
pub fn provenance_path(name: &SkillName, version: &semver::Version) -> String {
    format!("dl/{name}/{version}/{name}-{version}.intoto.jsonl")
}

impl IndexRecord {
    /// Returns the id of the key the line says signed it, or `None` when
    /// it is unsigned (or names no key id, which [`parse_index_file`]
    /// refuses).
    pub fn signer_id(&self) -> Option<crate::signing::KeyId> {
        self.signer
            .as_deref()
            .and_then(|signer| signer.parse().ok())
    }
}

/// Returns the path of the publisher keys of `name`, relative to the root.
pub fn keys_path(name: &SkillName) -> String {
    format!("keys/{name}.json")
}

/// `keys/<name>.json`: the keys whose signatures the registry accepts for
/// a skill. The first signed publish registers its key; owners add and
/// remove keys through the API.
#[derive(Clone, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct KeysFile {
    pub v: u32,
    pub keys: Vec<KeyRecord>,
}

impl KeysFile {
    /// A keys file with no keys, of the current format version.
    pub fn empty() -> Self {
        Self {
            v: FORMAT_VERSION,
            keys: Vec::new(),
        }
    }

    /// Parses `keys/<name>.json` as a registry serves it: the one parser
    /// of keys files. A record whose `id` is not the id of its `key` is
    /// refused, so the id a signer is matched by is always the key's own.
    pub fn parse(bytes: &[u8]) -> Result<Self, KeysFileError> {
        let file: Self = serde_json::from_slice(bytes).map_err(KeysFileError::Json)?;
        for record in &file.keys {
            let actual = record.key.id().to_string();
            if record.id != actual {
                return Err(KeysFileError::WrongId {
                    id: record.id.clone(),
                    actual,
                });
            }
        }
        Ok(file)
    }

    /// Returns the public keys, in the file's order.
    pub fn public_keys(&self) -> Vec<crate::signing::PublicKey> {
        self.keys.iter().map(|record| record.key.clone()).collect()
    }

    /// Returns true if and only if `key` (its id and its bytes) is listed.
    pub fn contains(&self, key: &crate::signing::PublicKey) -> bool {
        self.keys.iter().any(|record| &record.key == key)
    }
}

/// One publisher key.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct KeyRecord {
    /// The key id, as minisign shows it.
    pub id: String,
    /// The public key, minisign's base64 line.
    pub key: crate::signing::PublicKey,
    /// When it was registered, RFC 3339.
    pub added: String,
}

/// Why a keys file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum KeysFileError {
    #[error("the keys file is not valid JSON of its format")]
    Json(#[source] serde_json::Error),
    #[error("the keys file lists key id {id} for a key whose id is {actual}")]
    WrongId { id: String, actual: String },
}

/// Why an index file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error("line {line} of the index file of `{name}` is not a valid index line")]
    BadLine {
        name: String,
        line: usize,
        #[source]
        source: serde_json::Error,
    },
    #[error("line {line} of the index file of `{name}` is for `{found}`")]
    WrongName {
        name: String,
        line: usize,
        found: String,
    },
    #[error(
        "line {line} of the index file of `{name}` names signer {signer:?}, which is not a key id (16 hex digits)"
    )]
    BadSigner {
        name: String,
        line: usize,
        signer: String,
    },
}

/// Parses an index file. Blank lines and lines of a newer format version are
/// skipped; a line that names another skill is an error.
pub fn parse_index_file(name: &SkillName, text: &str) -> Result<Vec<IndexRecord>, IndexError> {
    #[derive(serde::Deserialize)]
    struct Versioned {
        v: u32,
    }
    let mut records = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let bad_line = |source| IndexError::BadLine {
            name: name.to_string(),
            line: index + 1,
            source,
        };
        let versioned: Versioned = serde_json::from_str(line).map_err(bad_line)?;
        if versioned.v > FORMAT_VERSION {
            continue;
        }
        let record: IndexRecord = serde_json::from_str(line).map_err(bad_line)?;
        if &record.name != name {
            return Err(IndexError::WrongName {
                name: name.to_string(),
                line: index + 1,
                found: record.name.to_string(),
            });
        }
        if let Some(signer) = &record.signer
            && signer.parse::<crate::signing::KeyId>().is_err()
        {
            return Err(IndexError::BadSigner {
                name: name.to_string(),
                line: index + 1,
                signer: signer.chars().take(64).collect(),
            });
        }
        records.push(record);
    }
    Ok(records)
}

/// Renders an index file: the records sorted by version, one line each.
pub fn render_index_file(records: &[IndexRecord]) -> String {
    let mut sorted: Vec<&IndexRecord> = records.iter().collect();
    sorted.sort_by(|a, b| a.vers.cmp(&b.vers));
    let mut text = String::new();
    for record in sorted {
        text.push_str(&render_index_line(record));
        text.push('\n');
    }
    text
}

/// Renders one index line, without its newline.
pub fn render_index_line(record: &IndexRecord) -> String {
    // serde_json escapes control characters, so a record is always one line.
    serde_json::to_string(record).expect("index records serialise")
}

/// Every skill of a registry: its name and its versions.
pub type AllRecords = BTreeMap<SkillName, Vec<IndexRecord>>;

/// Returns the latest version that is not yanked.
pub fn latest(records: &[IndexRecord]) -> Option<&IndexRecord> {
    records
        .iter()
        .filter(|record| !record.yanked)
        .max_by(|a, b| a.vers.cmp(&b.vers))
}

/// A shard of the search index (`search/<shard>.json`), or, in version 1,
/// `search.json` itself: the skills it lists, by name.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SearchIndex {
    pub v: u32,
    pub skills: Vec<SearchEntry>,
}

/// `search.json` since version 2: how many shards list the skills. A
/// publish rewrites the one shard of its skill, whose size does not grow
/// with the registry's, instead of a file listing every skill.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchShards {
    pub v: u32,
    pub shards: ShardCount,
}

/// What `search.json` is: the skills themselves (version 1, written by
/// earlier registries), or the number of shards that list them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SearchFile {
    Listed(SearchIndex),
    Sharded(ShardCount),
}

impl SearchFile {
    /// Parses `search.json`.
    pub fn parse(bytes: &[u8]) -> Result<Self, serde_json::Error> {
        #[derive(serde::Deserialize)]
        struct Version {
            v: u32,
        }
        let Version { v } = serde_json::from_slice(bytes)?;
        if v >= SEARCH_VERSION {
            let shards: SearchShards = serde_json::from_slice(bytes)?;
            Ok(Self::Sharded(shards.shards))
        } else {
            Ok(Self::Listed(serde_json::from_slice(bytes)?))
        }
    }
}

/// How many shards the search index has: 1, 16 or 256. A skill is in the
/// shard named by the first hex digits of the sha256 of its name (none,
/// one or two of them), its *bin* being the first byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(into = "u32")]
pub struct ShardCount(u32);

impl ShardCount {
    /// One shard, `search/all.json`.
    pub const ONE: Self = Self(1);

    /// Returns the shard count `count`, if it is one of 1, 16 and 256.
    pub fn new(count: u32) -> Option<Self> {
        matches!(count, 1 | 16 | 256).then_some(Self(count))
    }

    /// The fewest shards that hold `skills` skills with at most
    /// `per_shard` ([`SKILLS_PER_SHARD`] by default) a shard on average.
    pub fn for_skills(skills: usize, per_shard: usize) -> Self {
        if skills <= per_shard {
            Self(1)
        } else if skills <= 16 * per_shard {
            Self(16)
        } else {
            Self(256)
        }
    }

    /// The number of shards.
    pub fn get(self) -> u32 {
        self.0
    }

    /// How many bins each shard holds.
    fn bins_per_shard(self) -> u32 {
        256 / self.0
    }

    /// The shard that lists `name`.
    pub fn shard_of(self, name: &str) -> u32 {
        self.shard_of_bin(search_bin(name))
    }

    /// The shard that holds the bin `bin`.
    pub fn shard_of_bin(self, bin: u8) -> u32 {
        u32::from(bin) / self.bins_per_shard()
    }

    /// The bins (first bytes of the sha256 of names) of shard `shard`.
    pub fn bins(self, shard: u32) -> std::ops::RangeInclusive<u8> {
        let per = self.bins_per_shard();
        let first = u8::try_from(shard * per).unwrap_or(u8::MAX);
        let last = u8::try_from(shard * per + per - 1).unwrap_or(u8::MAX);
        first..=last
    }

    /// The path of shard `shard`.
    pub fn path(self, shard: u32) -> String {
        match self.0 {
            1 => format!("{SEARCH_SHARDS_DIR}/all.json"),
            16 => format!("{SEARCH_SHARDS_DIR}/{shard:x}.json"),
            _ => format!("{SEARCH_SHARDS_DIR}/{shard:02x}.json"),
        }
    }

    /// The paths of every shard, in order.
    pub fn paths(self) -> impl Iterator<Item = String> {
        (0..self.0).map(move |shard| self.path(shard))
    }

    /// Splits `entries` (in name order) into the shards' files, in order
    /// of their paths; every shard is there, an empty one too.
    pub fn split(self, entries: Vec<SearchEntry>) -> Vec<(String, SearchIndex)> {
        let mut shards: Vec<(String, SearchIndex)> = self
            .paths()
            .map(|path| {
                (
                    path,
                    SearchIndex {
                        v: SEARCH_VERSION,
                        skills: Vec::new(),
                    },
                )
            })
            .collect();
        for entry in entries {
            let shard = self.shard_of(entry.name.as_str()) as usize;
            shards[shard].1.skills.push(entry);
        }
        shards
    }
}

impl From<ShardCount> for u32 {
    fn from(count: ShardCount) -> Self {
        count.0
    }
}

impl<'de> serde::Deserialize<'de> for ShardCount {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let count = u32::deserialize(deserializer)?;
        Self::new(count).ok_or_else(|| {
            serde::de::Error::custom(format!("{count} shards: a search index has 1, 16 or 256"))
        })
    }
}

/// The bin of a skill name: the first byte of its sha256, which names the
/// search shard that lists it ([`ShardCount::shard_of`]).
pub fn search_bin(name: &str) -> u8 {
    use sha2::Digest as _;
    sha2::Sha256::digest(name.as_bytes())[0]
}

/// One skill in `search.json`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SearchEntry {
    pub name: SkillName,
    /// The latest version that is not yanked.
    pub version: semver::Version,
    pub description: String,
    /// How many versions there are, yanked ones included.
    pub versions: usize,
    /// How many times the registry's server has served an archive of the
    /// skill (any version), as of the last time it wrote this file; 0 when
    /// it counts none (a tree written by `build`, or before counting
    /// existed). Downloads served by a CDN or another static host are not
    /// counted. Since 1.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub downloads: u64,
}

fn is_zero(count: &u64) -> bool {
    *count == 0
}

impl SearchIndex {
    /// Lists every skill of a registry, by name, as the search index's
    /// shards hold them (split them with [`ShardCount::split`]).
    pub fn build(all: &AllRecords) -> Self {
        let skills = all
            .iter()
            .filter_map(|(name, records)| {
                let latest = latest(records)?;
                Some(SearchEntry {
                    name: name.clone(),
                    version: latest.vers.clone(),
                    description: latest.description.clone(),
                    versions: records.len(),
                    downloads: 0,
                })
            })
            .collect();
        Self {
            v: SEARCH_VERSION,
            skills,
        }
    }

    /// Sets each skill's `downloads` from `counts` (a skill it does not
    /// name has none).
    #[must_use]
    pub fn with_downloads(mut self, counts: &BTreeMap<SkillName, u64>) -> Self {
        for entry in &mut self.skills {
            entry.downloads = counts.get(&entry.name).copied().unwrap_or(0);
        }
        self
    }
}

/// The `$schema` of the discovery index's 0.2.0 shape. Installers read an
/// index without it as the 0.1.0 shape, in which every entry of ours is
/// invalid.
pub const DISCOVERY_SCHEMA: &str = "https://schemas.agentskills.io/discovery/0.2.0/schema.json";

/// `.well-known/agent-skills/index.json` (Agent Skills Discovery v0.2.0).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DiscoveryIndex {
    #[serde(rename = "$schema", default = "discovery_schema")]
    pub schema: String,
    pub skills: Vec<DiscoveryEntry>,
}

fn discovery_schema() -> String {
    DISCOVERY_SCHEMA.to_owned()
}

/// One skill in the discovery index.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DiscoveryEntry {
    pub name: SkillName,
    #[serde(rename = "type")]
    pub kind: String,
    pub description: String,
    pub url: String,
    pub digest: Checksum,
}

impl DiscoveryIndex {
    /// Builds the discovery index. URLs are relative to the index file
    /// itself, or absolute under `base_url` when one is given.
    pub fn build(all: &AllRecords, config: &RegistryConfig, base_url: Option<&str>) -> Self {
        let skills = all
            .values()
            .filter_map(|records| {
                let latest = latest(records)?;
                Some(DiscoveryEntry::of(
                    &latest.name,
                    &latest.vers,
                    &latest.description,
                    latest.cksum,
                    config,
                    base_url,
                ))
            })
            .collect();
        Self::new(skills)
    }

    /// The index of `skills`, in the 0.2.0 shape.
    pub fn new(skills: Vec<DiscoveryEntry>) -> Self {
        Self {
            schema: discovery_schema(),
            skills,
        }
    }
}

impl DiscoveryEntry {
    /// The entry of `name@version`, the newest version of a skill that is
    /// not yanked, whose archive has the digest `digest`.
    pub fn of(
        name: &SkillName,
        version: &semver::Version,
        description: &str,
        digest: Checksum,
        config: &RegistryConfig,
        base_url: Option<&str>,
    ) -> Self {
        let archive = config.archive_url(name, version);
        let url = if archive.contains("://") {
            archive
        } else {
            match base_url {
                Some(base) => format!("{}/{archive}", base.trim_end_matches('/')),
                None => format!("../../{archive}"),
            }
        };
        Self {
            name: name.clone(),
            kind: "archive".into(),
            description: description.to_owned(),
            url,
            digest,
        }
    }
}

/// Serialises a JSON document of the tree: compact, with a final newline.
pub fn render_json(value: &impl serde::Serialize) -> Vec<u8> {
    let mut bytes = serde_json::to_vec(value).expect("registry documents serialise");
    bytes.push(b'\n');
    bytes
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_keys_record_whose_id_is_not_its_key_s_is_refused() {
        let one = crate::signing::SecretKey::generate().unwrap().public();
        let two = crate::signing::SecretKey::generate().unwrap().public();
        let record = |id: String, key: &crate::signing::PublicKey| {
            format!(
                r#"{{"id":"{id}","key":"{}","added":"2026-01-01T00:00:00Z"}}"#,
                key.to_base64()
            )
        };
        let good = format!(
            r#"{{"v":1,"keys":[{}]}}"#,
            record(one.id().to_string(), &one)
        );
        let parsed = KeysFile::parse(good.as_bytes()).unwrap().public_keys();
        assert!(parsed.len() == 1 && parsed[0] == one);
        // The id of one key in front of another: a signer matched by id
        // would be matched to the wrong key.
        let lying = format!(
            r#"{{"v":1,"keys":[{}]}}"#,
            record(one.id().to_string(), &two)
        );
        let error = KeysFile::parse(lying.as_bytes()).unwrap_err();
        assert!(matches!(error, KeysFileError::WrongId { .. }), "{error}");
        assert!(KeysFile::parse(b"{\"v\":1}").is_err());
    }
    use super::*;

    fn name(text: &str) -> SkillName {
        text.parse().unwrap()
    }

    fn record(version: &str, yanked: bool) -> IndexRecord {
        IndexRecord {
            v: 1,
            name: name("pdf-processing"),
            vers: version.parse().unwrap(),
            cksum: Checksum::of(version.as_bytes()),
            size: 10,
            tree: "h1:x".into(),
            files: 1,
            deps: vec![IndexDependency {
                name: name("base"),
                req: "^1.2".parse().unwrap(),
            }],
            description: "Line one\nline two, \"quoted\"".into(),
            yanked,
            yanked_reason: yanked.then(|| "broken".to_owned()),
            signer: None,
            published: "2026-11-22T10:00:00Z".parse().unwrap(),
            audit: None,
        }
    }

    #[test]
    fn a_timestamp_that_would_not_read_back_once_written_is_refused() {
        let line = |published: &str| {
            let mut value = serde_json::to_value(record("1.0.0", false)).unwrap();
            value["published"] = published.into();
            value.to_string()
        };
        for published in ["-000001-01-01T00:00:00Z", "-009999-12-31T23:59:59Z"] {
            let error = parse_index_file(&name("pdf-processing"), &line(published)).unwrap_err();
            assert!(
                matches!(error, IndexError::BadLine { line: 1, .. }),
                "{published}"
            );
        }
        for published in ["0000-01-01T00:00:00Z", "9999-12-30T00:00:00Z"] {
            let records = parse_index_file(&name("pdf-processing"), &line(published)).unwrap();
            let written = render_index_file(&records);
            assert_eq!(
                parse_index_file(&name("pdf-processing"), &written).unwrap(),
                records,
                "{published}"
            );
        }
    }

    #[test]
    fn index_paths_are_sharded_like_cargo() {
        assert_eq!(index_file_path(&name("a")), "index/1/a");
        assert_eq!(index_file_path(&name("ab")), "index/2/ab");
        assert_eq!(index_file_path(&name("abc")), "index/3/a/abc");
        assert_eq!(
            index_file_path(&name("pdf-processing")),
            "index/pd/f-/pdf-processing"
        );
        assert_eq!(
            archive_path(&name("pdf"), &"1.2.0".parse().unwrap()),
            "dl/pdf/1.2.0/pdf-1.2.0.tgz"
        );
    }

    #[test]
    fn an_index_line_has_the_documented_form() {
        let line = render_index_file(&[record("1.0.0", false)]);
        assert_eq!(
            line,
            format!(
                "{{\"v\":1,\"name\":\"pdf-processing\",\"vers\":\"1.0.0\",\"cksum\":\"{}\",\"size\":10,\"tree\":\"h1:x\",\"files\":1,\"deps\":[{{\"name\":\"base\",\"req\":\"^1.2\"}}],\"description\":\"Line one\\nline two, \\\"quoted\\\"\",\"yanked\":false,\"signer\":null,\"published\":\"2026-11-22T10:00:00Z\"}}\n",
                Checksum::of(b"1.0.0")
            )
        );
    }

    #[test]
    fn index_files_round_trip_sorted_by_version_and_skip_newer_lines() {
        let text = render_index_file(&[record("1.10.0", true), record("1.2.0", false)]);
        let mut lines = text.lines();
        assert!(lines.next().unwrap().contains("\"vers\":\"1.2.0\""));
        assert!(
            lines
                .next()
                .unwrap()
                .contains("\"yanked_reason\":\"broken\"")
        );
        let with_future = format!("{text}{{\"v\":2,\"whatever\":true}}\n\n");
        let records = parse_index_file(&name("pdf-processing"), &with_future).unwrap();
        assert_eq!(
            records,
            vec![record("1.2.0", false), record("1.10.0", true)]
        );
    }

    #[test]
    fn a_bad_or_foreign_line_is_an_error_naming_its_line() {
        let good = render_index_file(&[record("1.0.0", false)]);
        let error =
            parse_index_file(&name("pdf-processing"), &format!("{good}not json\n")).unwrap_err();
        assert!(
            matches!(error, IndexError::BadLine { line: 2, .. }),
            "{error}"
        );
        let error = parse_index_file(&name("other"), &good).unwrap_err();
        assert!(
            matches!(error, IndexError::WrongName { line: 1, .. }),
            "{error}"
        );
    }

    #[test]
    fn aggregates_list_the_latest_unyanked_version() {
        let mut all = AllRecords::new();
        all.insert(
            name("pdf-processing"),
            vec![record("1.0.0", false), record("2.0.0", true)],
        );
        let mut gone = record("1.0.0", true);
        gone.name = name("gone");
        all.insert(name("gone"), vec![gone]);
        let search = SearchIndex::build(&all);
        assert_eq!(search.skills.len(), 1);
        assert_eq!(search.skills[0].version.to_string(), "1.0.0");
        assert_eq!(search.skills[0].versions, 2);
        let config = RegistryConfig::read_only(8);
        let discovery = DiscoveryIndex::build(&all, &config, None);
        let json = serde_json::to_value(&discovery).unwrap();
        assert_eq!(
            json["$schema"],
            "https://schemas.agentskills.io/discovery/0.2.0/schema.json"
        );
        assert_eq!(
            discovery.skills[0].url,
            "../../dl/pdf-processing/1.0.0/pdf-processing-1.0.0.tgz"
        );
        let absolute = DiscoveryIndex::build(&all, &config, Some("https://skills.example.com/"));
        assert_eq!(
            absolute.skills[0].url,
            "https://skills.example.com/dl/pdf-processing/1.0.0/pdf-processing-1.0.0.tgz"
        );
    }

    #[test]
    fn a_skill_is_in_the_shard_its_bin_is_in_whatever_the_shard_count() {
        let per = SKILLS_PER_SHARD;
        assert_eq!(ShardCount::for_skills(0, per), ShardCount::ONE);
        assert_eq!(ShardCount::for_skills(per, per).get(), 1);
        assert_eq!(ShardCount::for_skills(per + 1, per).get(), 16);
        assert_eq!(ShardCount::for_skills(16 * per, per).get(), 16);
        assert_eq!(ShardCount::for_skills(16 * per + 1, per).get(), 256);
        // The bin is the first byte of the sha256 of the name:
        // sha256("pdf") = c35b21...; sha256("csv") = 53bb9b...
        assert_eq!(search_bin("pdf"), 0xc3, "{}", Checksum::of(b"pdf"));
        assert_eq!(search_bin("csv"), 0x53, "{}", Checksum::of(b"csv"));
        let sixteen = ShardCount::new(16).unwrap();
        let all = ShardCount::new(256).unwrap();
        assert_eq!(
            ShardCount::ONE.path(ShardCount::ONE.shard_of("pdf")),
            "search/all.json"
        );
        assert_eq!(sixteen.path(sixteen.shard_of("pdf")), "search/c.json");
        assert_eq!(sixteen.path(sixteen.shard_of("csv")), "search/5.json");
        assert_eq!(all.path(all.shard_of("pdf")), "search/c3.json");
        assert_eq!(all.path(all.shard_of("csv")), "search/53.json");
        for count in [ShardCount::ONE, sixteen, all] {
            let paths: Vec<String> = count.paths().collect();
            assert_eq!(paths.len(), count.get() as usize);
            let mut unique = paths.clone();
            unique.dedup();
            assert_eq!(unique, paths, "paths are distinct and in order");
            for name in ["pdf", "csv", "pdf-processing", "a"] {
                let shard = count.shard_of(name);
                assert!(
                    count.bins(shard).contains(&search_bin(name)),
                    "{name} in {count:?}"
                );
            }
            let covered: usize = (0..count.get())
                .map(|shard| count.bins(shard).count())
                .sum();
            assert_eq!(covered, 256, "the shards cover every bin once");
        }
        assert_eq!(ShardCount::new(7), None);
    }

    #[test]
    fn split_puts_every_entry_in_its_shard_and_writes_empty_shards_too() {
        let entry = |text: &str| SearchEntry {
            name: name(text),
            version: "1.0.0".parse().unwrap(),
            description: String::new(),
            versions: 1,
            downloads: 0,
        };
        let sixteen = ShardCount::new(16).unwrap();
        let shards = sixteen.split(vec![entry("csv"), entry("pdf")]);
        assert_eq!(shards.len(), 16);
        assert_eq!(shards[12].0, "search/c.json");
        assert_eq!(shards[12].1.skills, vec![entry("pdf")]);
        assert_eq!(shards[5].1.skills, vec![entry("csv")]);
        let listed: usize = shards.iter().map(|(_, shard)| shard.skills.len()).sum();
        assert_eq!(listed, 2);
    }

    #[test]
    fn search_json_is_read_in_both_versions_and_a_bad_shard_count_is_refused() {
        let listed = SearchFile::parse(br#"{"v":1,"skills":[]}"#).unwrap();
        assert_eq!(
            listed,
            SearchFile::Listed(SearchIndex {
                v: 1,
                skills: vec![]
            })
        );
        let sharded = SearchFile::parse(br#"{"v":2,"shards":16}"#).unwrap();
        assert_eq!(sharded, SearchFile::Sharded(ShardCount::new(16).unwrap()));
        let rendered = render_json(&SearchShards {
            v: SEARCH_VERSION,
            shards: ShardCount::new(256).unwrap(),
        });
        assert_eq!(
            SearchFile::parse(&rendered).unwrap(),
            SearchFile::Sharded(ShardCount::new(256).unwrap())
        );
        let error = SearchFile::parse(br#"{"v":2,"shards":7}"#).unwrap_err();
        assert!(error.to_string().contains("1, 16 or 256"), "{error}");
        assert!(SearchFile::parse(br#"{"v":2,"skills":[]}"#).is_err());
    }
}
