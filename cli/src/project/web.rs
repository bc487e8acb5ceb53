//! Skills published on the web without a registry: an Agent Skills
//! discovery index (`/.well-known/agent-skills/index.json`, or the older
//! `/.well-known/skills/index.json`) and a tarball URL.
//!
//! A discovery index comes in two shapes. 0.2.0 (with `"$schema":
//! ".../discovery/0.2.0/schema.json"`) lists each skill with a `type`
//! (`skill-md`: the SKILL.md alone; `archive`: a `.tar.gz` with SKILL.md at
//! its root), a `url` relative to the index and the artifact's `digest`,
//! which is checked before anything is read from it. 0.1.0 (no `$schema`)
//! lists each skill's `files`, fetched from
//! `<site>/.well-known/<agent-skills|skills>/<name>/<file>`, with no digest:
//! the lock pins their tree hash from the first fetch on.
//!
//! Everything the index names is hostile input: a file path must be
//! portable and stay inside the skill, an https index may only send the
//! client to https URLs (never to a `file://` one), and bodies are read
//! under the package limits before the skill goes through
//! [`super::sources::read_folder`] like any other.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use skillpkg_index::archive::{self, Limits, check_portable_path};
use skillpkg_index::checksum::Checksum;
use skillpkg_index::skill::{SKILL_MD, SkillName};
use url::Url;

use super::folder::{FolderSkill, read_fetched};
use crate::client::registry::{get_public, get_public_at};
use crate::error::UserError;

/// The paths below a site where a discovery index may be, newest first.
const WELL_KNOWN: [&str; 2] = [".well-known/agent-skills", ".well-known/skills"];
/// The index file's name in those folders.
const INDEX_FILE: &str = "index.json";
/// The `$schema` of a 0.2.0 index.
const SCHEMA_V2: &str = "https://schemas.agentskills.io/discovery/0.2.0/schema.json";
/// The most an index may hold.
const MAX_INDEX_BYTES: u64 = 16 << 20;

/// A skill a discovery index lists.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexSkill {
    pub name: SkillName,
    pub description: String,
    pub artifact: Artifact,
}

/// Where a listed skill's files are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Artifact {
    /// 0.1.0: these files, below `base`.
    Files { base: Url, files: Vec<String> },
    /// 0.2.0 `skill-md`: the SKILL.md alone.
    SkillMd { url: Url, digest: Checksum },
    /// 0.2.0 `archive`: a `.tar.gz` of the skill's folder.
    Archive { url: Url, digest: Checksum },
}

impl Artifact {
    /// The digest the index gives, when it gives one.
    pub fn digest(&self) -> Option<Checksum> {
        match self {
            Artifact::Files { .. } => None,
            Artifact::SkillMd { digest, .. } | Artifact::Archive { digest, .. } => Some(*digest),
        }
    }
}

/// A discovery index, read.
#[derive(Debug)]
pub struct Index {
    /// Where it was found.
    pub url: Url,
    pub skills: Vec<IndexSkill>,
    /// Entries left out, and why.
    pub skipped: Vec<String>,
}

/// Parses the URL `text` of a discovery index or a tarball.
pub fn parse_url(text: &str) -> anyhow::Result<Url> {
    let url = Url::parse(text)
        .map_err(|error| UserError::new(format!("`{text}` is not a URL")).with_source(error))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(UserError::new(format!(
            "`{text}` is not an http:// or https:// URL"
        ))
        .with_hint("a discovery index or a tarball is read over HTTP; a local folder is added by its path")
        .into());
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(UserError::new(format!(
            "`{}` holds a user name or password, which would be written to skills.toml and skills.lock",
            crate::client::registry_url::redacted(&url)
        ))
        .with_hint("give the URL without credentials; a site that needs them is better published to a private registry (docs/registry.md)")
        .into());
    }
    Ok(url)
}

/// Returns true if and only if `url` names a tarball rather than a site.
pub fn is_tarball(url: &Url) -> bool {
    let path = url.path().to_ascii_lowercase();
    path.ends_with(".tgz") || path.ends_with(".tar.gz")
}

/// Returns true if and only if `site` is a skillpkg registry: the folder
/// it names holds a `config.json` in the registry's format
/// (docs/index-format.md), so that its skills are to be read as a
/// registry's, with their signatures, and not through its discovery index.
/// A site's answer is kept for the rest of the process: an install that
/// fetches several skills of one site asks it once.
pub async fn is_registry(site: &str) -> anyhow::Result<bool> {
    let mut url = parse_url(site)?;
    // An index's own URL names the site it is the index of.
    if let Some(at) = url.path().find("/.well-known/") {
        let root = url.path()[..=at].to_owned();
        url.set_path(&root);
    }
    if url.path().ends_with(".json") || is_tarball(&url) {
        return Ok(false);
    }
    let mut base = url;
    if !base.path().ends_with('/') {
        base.set_path(&format!("{}/", base.path()));
    }
    static ANSWERS: std::sync::LazyLock<std::sync::Mutex<HashMap<Url, bool>>> =
        std::sync::LazyLock::new(Default::default);
    let config_url = base.join("config.json")?;
    let known = ANSWERS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .get(&config_url)
        .copied();
    if let Some(known) = known {
        return Ok(known);
    }
    let is = match crate::client::registry::get_public_at(&config_url, 64 * 1024).await? {
        None => false,
        Some((bytes, _)) => match serde_json::from_slice(&bytes) {
            Ok(serde_json::Value::Object(config)) => {
                config.get("v").is_some_and(serde_json::Value::is_u64)
                    && config.get("dl").is_some_and(serde_json::Value::is_string)
            }
            _ => false,
        },
    };
    ANSWERS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .insert(config_url, is);
    Ok(is)
}

/// Reads the discovery index of `site`: the URL of an `index.json`, or of a
/// site whose `/.well-known/agent-skills/index.json` (or
/// `/.well-known/skills/index.json`) is tried.
pub async fn read_index(site: &str) -> anyhow::Result<Index> {
    let url = parse_url(site)?;
    let candidates: Vec<Url> = if url.path().ends_with(".json") {
        vec![url.clone()]
    } else {
        let mut base = url.clone();
        if !base.path().ends_with('/') {
            base.set_path(&format!("{}/", base.path()));
        }
        WELL_KNOWN
            .iter()
            .map(|folder| base.join(&format!("{folder}/{INDEX_FILE}")))
            .collect::<Result<_, _>>()?
    };
    for candidate in &candidates {
        let Some((bytes, answered)) = get_public_at(candidate, MAX_INDEX_BYTES).await? else {
            continue;
        };
        // Relative URLs are relative to where the index was found, after
        // redirects (never from https down to http), as a browser reads
        // them.
        return parse_index(&answered, &bytes);
    }
    Err(UserError::new(format!("`{site}` has no discovery index"))
        .with_hint(format!(
            "nothing answered at {}; give the site whose /.well-known/agent-skills/index.json lists skills, or the index's own URL",
            candidates
                .iter()
                .map(Url::as_str)
                .collect::<Vec<_>>()
                .join(" or ")
        ))
        .into())
}

/// Reads the index at `url` from its bytes.
pub fn parse_index(url: &Url, bytes: &[u8]) -> anyhow::Result<Index> {
    let invalid = |why: &str| -> anyhow::Error {
        UserError::new(format!("the discovery index at {url} is not valid: {why}"))
            .with_hint("ask the site's operator to fix it; nothing was installed")
            .into()
    };
    let value: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|_| invalid("it is not JSON"))?;
    let entries = value
        .get("skills")
        .and_then(serde_json::Value::as_array)
        .ok_or_else(|| invalid("it has no `skills` list"))?;
    let v2 = match value.get("$schema") {
        None => false,
        Some(serde_json::Value::String(schema)) if schema == SCHEMA_V2 => true,
        Some(other) => {
            return Err(invalid(&format!(
                "its `$schema` is {other}, a shape this skillpkg does not read (it reads 0.1.0 and 0.2.0)"
            )));
        }
    };
    let mut index = Index {
        url: url.clone(),
        skills: Vec::with_capacity(entries.len()),
        skipped: Vec::new(),
    };
    // The names kept so far, in a set: an index may list 100,000 skills
    // under its size cap, and a search of the list for each entry was
    // quadratic (40,000 entries took half a minute).
    let mut names: HashSet<SkillName> = HashSet::with_capacity(entries.len());
    for entry in entries {
        match read_entry(url, entry, v2) {
            Ok(skill) => {
                // One name, one skill: a second entry of a name could hand
                // out other files than the one a user reviewed.
                if names.insert(skill.name.clone()) {
                    index.skills.push(skill);
                } else {
                    index.skipped.push(format!(
                        "`{}`: listed twice (the first is kept)",
                        skill.name
                    ));
                }
            }
            Err(why) => index.skipped.push(why),
        }
    }
    Ok(index)
}

/// Reads one entry of an index at `index`.
fn read_entry(index: &Url, entry: &serde_json::Value, v2: bool) -> Result<IndexSkill, String> {
    let text = |key: &str| entry.get(key).and_then(serde_json::Value::as_str);
    let name: SkillName = text("name")
        .and_then(|name| name.parse().ok())
        .ok_or_else(|| {
            let shown = text("name")
                .unwrap_or("?")
                .chars()
                .take(80)
                .collect::<String>();
            format!("an entry whose `name` ({shown:?}) is not a skill name")
        })?;
    let description = text("description")
        .filter(|description| !description.is_empty())
        .ok_or_else(|| format!("`{name}`: no `description`"))?
        .to_owned();
    let artifact = if v2 {
        let kind = text("type").unwrap_or("");
        let target = text("url").ok_or_else(|| format!("`{name}`: no `url`"))?;
        let url = follow(index, target).map_err(|why| format!("`{name}`: {why}"))?;
        let digest: Checksum = text("digest")
            .and_then(|digest| digest.parse().ok())
            .ok_or_else(|| format!("`{name}`: no `digest` of the form sha256:<64 hex digits>"))?;
        match kind {
            "skill-md" => Artifact::SkillMd { url, digest },
            "archive" => Artifact::Archive { url, digest },
            other => {
                return Err(format!(
                    "`{name}`: a `type` ({other:?}) that is neither skill-md nor archive"
                ));
            }
        }
    } else {
        let files: Vec<String> = entry
            .get("files")
            .and_then(serde_json::Value::as_array)
            .ok_or_else(|| format!("`{name}`: no `files`"))?
            .iter()
            .map(|file| file.as_str().map(str::to_owned))
            .collect::<Option<_>>()
            .ok_or_else(|| format!("`{name}`: a file that is not a string"))?;
        let limits = Limits::default();
        if files.len() > limits.max_entries {
            return Err(format!("`{name}`: more than {} files", limits.max_entries));
        }
        for file in &files {
            check_portable_path(file, &limits)
                .map_err(|problem| format!("`{name}`: the file {file:?} ({problem})"))?;
            // Each is a URL path below the skill's: nothing that a URL
            // would read otherwise (`%2e%2e` is `..`, `#` and `?` end it).
            if file.contains(['%', '#', '?']) {
                return Err(format!(
                    "`{name}`: the file {file:?} (`%`, `#` and `?` would be read as part of a URL)"
                ));
            }
        }
        if !files.iter().any(|file| file == SKILL_MD) {
            return Err(format!("`{name}`: its files have no SKILL.md"));
        }
        // `<site>/.well-known/<folder>/<name>/`: the index's own folder.
        let base = index
            .join(&format!("{name}/"))
            .map_err(|error| format!("`{name}`: {error}"))?;
        Artifact::Files { base, files }
    };
    Ok(IndexSkill {
        name,
        description,
        artifact,
    })
}

/// Resolves `target`, which an index at `index` names, refusing what an
/// index may not send the client to: anything but http(s), and http from
/// an https index.
fn follow(index: &Url, target: &str) -> Result<Url, String> {
    let url = index
        .join(target)
        .map_err(|error| format!("its `url` {target:?} is not a URL ({error})"))?;
    match (index.scheme(), url.scheme()) {
        ("https", "https") | ("http", "http" | "https") => Ok(url),
        ("https", "http") => Err(format!("its `url` {url} is http:// in an https:// index")),
        _ => Err(format!("its `url` {url} is not an http:// or https:// URL")),
    }
}

/// Reads the files of `skill`, listed by the index at `index`: downloaded,
/// each digest checked against the index's and against `locked` (the
/// digest skills.lock pins, when it pins one), then validated and packed.
/// `origin` names the entry for messages.
pub async fn read_index_skill(
    skill: &IndexSkill,
    locked: Option<Checksum>,
    origin: &str,
) -> anyhow::Result<FolderSkill> {
    let limits = Limits::default();
    if let (Some(locked), Some(digest)) = (locked, skill.artifact.digest())
        && locked != digest
    {
        return Err(UserError::new(format!(
            "{origin}: the discovery index now lists {digest} for `{}`, but skills.lock pins {locked}",
            skill.name
        ))
        .with_hint(format!(
            "the site publishes other files under that name now; run `skillpkg update {}` to take them, after reviewing them",
            skill.name
        ))
        .into());
    }
    let scratch = tempfile::tempdir()?;
    let folder = scratch.path().join(skill.name.as_str());
    match &skill.artifact {
        Artifact::Files { base, files } => {
            fs_err::create_dir(&folder)?;
            let mut total = 0_u64;
            for file in files {
                let url = base.join(file)?;
                if !url.as_str().starts_with(base.as_str()) {
                    return Err(UserError::new(format!(
                        "{origin}: the file {file:?} of `{}` leads out of its folder",
                        skill.name
                    ))
                    .into());
                }
                let bytes = get_public(&url, limits.max_unpacked_bytes)
                    .await?
                    .ok_or_else(|| missing(origin, &url))?;
                total += bytes.len() as u64;
                if total > limits.max_unpacked_bytes {
                    return Err(UserError::new(format!(
                        "{origin}: the files of `{}` hold more than {}",
                        skill.name,
                        archive::human_bytes(limits.max_unpacked_bytes)
                    ))
                    .into());
                }
                let path = folder.join(file);
                fs_err::create_dir_all(path.parent().expect("a file has a folder"))?;
                fs_err::write(&path, &bytes)?;
            }
        }
        Artifact::SkillMd { url, digest } => {
            let bytes = download(url, *digest, limits.max_unpacked_bytes, origin).await?;
            fs_err::create_dir(&folder)?;
            fs_err::write(folder.join(SKILL_MD), &bytes)?;
        }
        Artifact::Archive { url, digest } => {
            let bytes = download(url, *digest, limits.max_packed_bytes, origin).await?;
            unpack(&bytes, &folder, origin)?;
        }
    }
    read_fetched(&folder, origin)
}

/// Reads the tarball at `url`: downloaded, its SHA-256 checked against
/// `locked` when skills.lock pins one, unpacked by the hardened unpacker,
/// validated and packed. Returns its SHA-256 and the skill.
pub async fn read_tarball(
    url: &Url,
    locked: Option<Checksum>,
    origin: &str,
) -> anyhow::Result<(Checksum, FolderSkill)> {
    let limits = Limits::default();
    let bytes = match locked.and_then(|locked| cached(&locked)) {
        Some(bytes) => bytes,
        None => get_public(url, limits.max_packed_bytes)
            .await?
            .ok_or_else(|| missing(origin, url))?,
    };
    let checksum = Checksum::of(&bytes);
    if let Some(locked) = locked
        && locked != checksum
    {
        return Err(UserError::new(format!(
            "{origin}: {url} now serves {checksum}, but skills.lock pins {locked}"
        ))
        .with_hint("the file at that URL changed; if that is expected, run `skillpkg update NAME` to take it, after reviewing it")
        .into());
    }
    let scratch = tempfile::tempdir()?;
    let unpacked = scratch.path().join("skill");
    unpack(&bytes, &unpacked, origin)?;
    store(&checksum, &bytes);
    let folder = super::folder::named_after_its_skill(unpacked)?;
    Ok((checksum, read_fetched(&folder, origin)?))
}

/// Downloads `url` and checks its digest.
async fn download(url: &Url, digest: Checksum, max: u64, origin: &str) -> anyhow::Result<Vec<u8>> {
    if let Some(bytes) = cached(&digest) {
        return Ok(bytes);
    }
    let bytes = get_public(url, max)
        .await?
        .ok_or_else(|| missing(origin, url))?;
    let actual = Checksum::of(&bytes);
    if actual != digest {
        return Err(UserError::new(format!(
            "{origin}: {url} has the digest {actual}, but the discovery index says {digest}"
        ))
        .with_hint("the site serves files that do not match its own index; nothing was installed; tell its operator")
        .into());
    }
    store(&digest, &bytes);
    Ok(bytes)
}

/// The artifact of checksum `checksum` from the cache, when it is there.
fn cached(checksum: &Checksum) -> Option<Vec<u8>> {
    crate::client::Cache::open().ok()?.unsigned(checksum)
}

/// Keeps an artifact whose checksum was checked in the cache, for later
/// installs (offline ones too). A cache that cannot be written is no error:
/// the file is fetched again next time.
fn store(checksum: &Checksum, bytes: &[u8]) {
    if let Ok(cache) = crate::client::Cache::open() {
        let _ = cache.store_unsigned(checksum, bytes);
    }
}

/// Reads a skill whose artifact skills.lock pins by `checksum` from the
/// cache, when it is there: a `.tar.gz` (a tarball URL's, or an index's
/// `archive`) or a SKILL.md alone (an index's `skill-md`). `None` when it
/// is not cached.
pub fn read_cached(
    checksum: &Checksum,
    name: &SkillName,
    origin: &str,
) -> Option<anyhow::Result<FolderSkill>> {
    let bytes = cached(checksum)?;
    Some((|| {
        let scratch = tempfile::tempdir()?;
        let folder = scratch.path().join(name.as_str());
        if bytes.starts_with(&[0x1f, 0x8b]) {
            unpack(&bytes, &folder, origin)?;
        } else {
            fs_err::create_dir(&folder)?;
            fs_err::write(folder.join(SKILL_MD), &bytes)?;
        }
        read_fetched(&folder, origin)
    })())
}

fn missing(origin: &str, url: &Url) -> anyhow::Error {
    UserError::new(format!("{origin}: {url} is not found (404)"))
        .with_hint("check the URL (the site lists or names a file it does not serve); nothing was installed")
        .into()
}

/// Unpacks a `.tar.gz` with the hardened unpacker into `folder` (new).
fn unpack(bytes: &[u8], folder: &Path, origin: &str) -> anyhow::Result<()> {
    archive::unpack(bytes, folder, &Limits::default()).map_err(|error| {
        UserError::new(format!("{origin}: the archive cannot be unpacked"))
            .with_hint("an archive must be a .tar.gz of the skill's folder with SKILL.md at its root (as `skillpkg pack` writes), without links or unportable paths; nothing was installed")
            .with_source(error)
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index(json: &str) -> Index {
        let url =
            Url::parse("https://skills.example.com/.well-known/agent-skills/index.json").unwrap();
        parse_index(&url, json.as_bytes()).unwrap()
    }

    #[test]
    fn both_shapes_are_read_and_bad_entries_are_left_out_with_a_reason() {
        let digest = format!("sha256:{}", "ab".repeat(32));
        let v2 = index(&format!(
            r#"{{"$schema":"{SCHEMA_V2}","skills":[
              {{"name":"pdf","type":"archive","description":"d","url":"../../dl/pdf.tgz","digest":"{digest}"}},
              {{"name":"md","type":"skill-md","description":"d","url":"https://cdn.example.com/md/SKILL.md","digest":"{digest}"}},
              {{"name":"down","type":"archive","description":"d","url":"http://skills.example.com/x.tgz","digest":"{digest}"}},
              {{"name":"local","type":"archive","description":"d","url":"file:///etc/passwd","digest":"{digest}"}},
              {{"name":"Bad Name","type":"archive","description":"d","url":"x","digest":"{digest}"}},
              {{"name":"nodigest","type":"archive","description":"d","url":"x"}}
            ]}}"#
        ));
        let names: Vec<&str> = v2.skills.iter().map(|skill| skill.name.as_str()).collect();
        assert_eq!(names, ["pdf", "md"]);
        assert_eq!(
            v2.skills[0].artifact,
            Artifact::Archive {
                url: Url::parse("https://skills.example.com/dl/pdf.tgz").unwrap(),
                digest: digest.parse().unwrap()
            }
        );
        let skipped = v2.skipped.join("\n");
        assert!(
            skipped.contains("is http:// in an https:// index"),
            "{skipped}"
        );
        assert!(skipped.contains("file:///etc/passwd"), "{skipped}");
        assert!(skipped.contains("\"Bad Name\""), "{skipped}");
        assert!(skipped.contains("`nodigest`: no `digest`"), "{skipped}");

        let v1 = index(
            r#"{"skills":[
              {"name":"notes","description":"d","files":["SKILL.md","scripts/a.sh"]},
              {"name":"escape","description":"d","files":["SKILL.md","../../x"]},
              {"name":"nomd","description":"d","files":["README.md"]},
              {"name":"notes","description":"again","files":["SKILL.md"]}
            ]}"#,
        );
        assert_eq!(v1.skills.len(), 1);
        assert_eq!(v1.skills[0].description, "d");
        assert!(
            v1.skipped
                .iter()
                .any(|why| why == "`notes`: listed twice (the first is kept)"),
            "{:?}",
            v1.skipped
        );
        assert_eq!(
            v1.skills[0].artifact,
            Artifact::Files {
                base: Url::parse("https://skills.example.com/.well-known/agent-skills/notes/")
                    .unwrap(),
                files: vec!["SKILL.md".into(), "scripts/a.sh".into()]
            }
        );
        assert_eq!(v1.skipped.len(), 3, "{:?}", v1.skipped);

        let url = Url::parse("https://x.example/index.json").unwrap();
        let error = parse_index(&url, br#"{"$schema":"https://schemas.agentskills.io/discovery/9.0.0/schema.json","skills":[]}"#)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("a shape this skillpkg does not read"),
            "{error}"
        );
    }

    #[test]
    fn an_index_of_100000_entries_keeps_the_first_of_each_name() {
        let digest = format!("sha256:{}", "cd".repeat(32));
        let entries: Vec<serde_json::Value> = (0..100_000)
            .map(|number| {
                // Every thousandth entry repeats the name before it.
                let name = format!("skill-{}", number - usize::from(number % 1000 == 999));
                serde_json::json!({
                    "name": name, "type": "skill-md", "description": format!("Entry {number}."),
                    "url": format!("{name}/SKILL.md"), "digest": digest,
                })
            })
            .collect();
        let text = serde_json::json!({ "$schema": SCHEMA_V2, "skills": entries }).to_string();
        let read = index(&text);
        assert_eq!(read.skills.len(), 99_900);
        assert_eq!(read.skipped.len(), 100);
        assert_eq!(
            read.skipped[0],
            "`skill-998`: listed twice (the first is kept)"
        );
        let kept = &read.skills[998];
        assert_eq!(
            (kept.name.as_str(), kept.description.as_str()),
            ("skill-998", "Entry 998.")
        );
        assert_eq!(read.skills.last().unwrap().name.as_str(), "skill-99998");
    }

    #[test]
    fn tarball_urls_are_told_from_sites() {
        let url = |text: &str| Url::parse(text).unwrap();
        assert!(is_tarball(&url("https://example.com/pdf-1.2.0.tgz")));
        assert!(is_tarball(&url("https://example.com/a/pdf.TAR.GZ?x=1")));
        assert!(!is_tarball(&url("https://skills.example.com/")));
        assert!(parse_url("file:///etc").is_err());
    }
}
