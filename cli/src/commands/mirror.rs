//! `skillpkg mirror SOURCE DEST`: a verified, incremental copy of a
//! registry as a static tree (docs/registries.md#mirrors).
//!
//! 1. Open SOURCE and check its signed metadata, when it has some, and walk
//!    the snapshot's nodes and bins (version 2) for the sha256 of every
//!    file: those DEST has are read from it (they are named by their
//!    sha256), the others fetched and written to DEST before the snapshot.
//! 2. Read the index file of every chosen skill: skipped when the copy in
//!    DEST already has the sha256 the snapshot lists, else fetched and
//!    checked against the snapshot (without signed metadata: a conditional
//!    request with the ETag of the last run).
//! 3. Download every version DEST lacks, eight at a time through
//!    [`crate::client::fetch_verified`]: its sha256 checked
//!    against the index line and its signature against the skill's keys,
//!    before anything is written. Signature and provenance go first, the
//!    archive last, each by an atomic rename: an archive in DEST is complete,
//!    so an interrupted run resumes where it stopped.
//! 4. Then the index files, keys files, the search index (its shards,
//!    then `search.json`) and the discovery index; then `config.json` (the mirror's own: read-only, relative
//!    `dl`, and the source's `auth-required`: a mirror of a private
//!    registry is private, and is said so with a warning); last the roots, `snapshot.json` and `timestamp.json`, exactly as
//!    the source signed them. A client never sees new metadata before the
//!    files it names.
//!
//! `DEST/.skillpkg-mirror.json` records the source and the ETags, for the
//! next run.

use std::collections::BTreeMap;

use anyhow::Context as _;
use futures_util::{StreamExt as _, TryStreamExt as _};
use skillpkg_index::checksum::Checksum;
use skillpkg_index::registry::metadata::{ROOT_PATH, Snapshot, meta_path, root_path};
use skillpkg_index::registry::tree::StaticTree;
use skillpkg_index::registry::{
    DISCOVERY_PATH, IndexRecord, KeysFile, RegistryConfig, SEARCH_PATH, SearchFile, SearchIndex,
    archive_path, index_file_path, keys_path, parse_index_file, provenance_path, signature_path,
};
use skillpkg_index::signing::{PublicKey, SignerPin};
use skillpkg_index::skill::SkillName;

use crate::args::MirrorArgs;
use crate::client::registries::Access;
use crate::client::registry::{self, Conditional, Registry};
use crate::client::registry_url::RegistryUrl;
use crate::client::{Expected, Source, fetch_verified};
use crate::commands::registries_here;
use crate::error::{ExitStatus, UserError};
use crate::printer::Printer;

/// The mirror's own record, in DEST.
const MIRROR_STATE: &str = skillpkg_index::registry::MIRROR_RECORD_PATH;
/// How many archives are downloaded at once.
const PARALLEL_DOWNLOADS: usize = 8;

#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct MirrorState {
    source: String,
    /// Path → ETag of the last read.
    #[serde(default)]
    etags: BTreeMap<String, String>,
}

/// What a run did.
#[derive(Debug, Default, serde::Serialize)]
struct Report {
    source: String,
    dest: String,
    skills: usize,
    versions: usize,
    /// Archives downloaded in this run.
    downloaded: usize,
    /// Bytes of everything fetched in this run.
    bytes: u64,
    /// Files fetched (200s) in this run.
    files: usize,
    signed_metadata: bool,
    /// Whether the source, and so the mirror, needs a token for every read.
    auth_required: bool,
}

/// One skill to mirror: its index file and what it lists.
struct Planned {
    name: SkillName,
    index: Vec<u8>,
    records: Vec<IndexRecord>,
}

pub fn run(args: &MirrorArgs, printer: &Printer) -> anyhow::Result<ExitStatus> {
    if !args.all && args.skill.is_empty() {
        return Err(UserError::new("say what to mirror")
            .with_hint("pass --all for every skill, or --skill PATTERN (a glob such as `pdf-*`) one or more times")
            .into());
    }
    let patterns = patterns(&args.skill)?;
    // SOURCE is a configured registry's name or a URL; a named registry
    // is read at its `index`, never from its own mirror.
    let registries = registries_here(Some(&args.source))?;
    let spec = registries.default_registry()?.clone();
    let source: RegistryUrl = spec.index.clone();
    let dest = StaticTree::new(&args.dest);
    let state_path = args.dest.join(MIRROR_STATE);
    let mut state: MirrorState = match fs_err::read(&state_path) {
        Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_default(),
        Err(_) => MirrorState::default(),
    };
    if !state.source.is_empty() && state.source != source.to_string() {
        return Err(UserError::new(format!(
            "{} is a mirror of {}, not of {source}",
            args.dest.display(),
            state.source
        ))
        .with_hint("mirror into another folder")
        .into());
    }
    if state.source.is_empty() && args.dest.join("config.json").exists() {
        return Err(UserError::new(format!(
            "{} already holds a registry that skillpkg did not mirror",
            args.dest.display()
        ))
        .with_hint("mirror into a new or empty folder")
        .into());
    }
    state.source = source.to_string();
    let mut report = Report {
        source: source.to_string(),
        dest: args.dest.display().to_string(),
        ..Report::default()
    };
    registry::block_on(async {
        let registry = registries.open(&spec, Access::Write).await?;
        let snapshot = registry.snapshot().await?;
        report.signed_metadata = snapshot.is_some();
        let (signed, meta) = match snapshot.as_deref() {
            Some(snapshot) => {
                let (files, meta) = signed_files(&registry, &dest, snapshot, &mut report).await?;
                (Some(files), meta)
            }
            None => (None, Vec::new()),
        };
        let mut fetcher = Fetcher {
            registry: &registry,
            dest: &dest,
            signed: signed.as_ref(),
            etags: std::mem::take(&mut state.etags),
            files: 0,
            bytes: 0,
            pending: Vec::new(),
        };
        let listed = read_search(&mut fetcher, &source).await?;
        let names = choose(&registry, signed.as_ref(), listed, &patterns)?;
        report.skills = names.len();
        let mut planned = Vec::new();
        for name in names {
            let path = index_file_path(&name);
            let index = fetcher.read(&path).await?.ok_or_else(|| {
                UserError::new(format!(
                    "{source} lists `{name}` but serves no index file for it"
                ))
            })?;
            let records = parse_index_file(&name, &String::from_utf8_lossy(&index))
                .with_context(|| format!("the index file of `{name}` in {source} is not valid"))?;
            let keys = fetcher.read(&keys_path(&name)).await?;
            planned.push((
                Planned {
                    name,
                    index,
                    records,
                },
                keys,
            ));
        }
        let mut jobs = Vec::new();
        for (skill, keys) in &planned {
            let keys: Vec<PublicKey> = match keys {
                Some(bytes) => KeysFile::parse(bytes)
                    .map_err(|error| {
                        UserError::new(format!(
                            "the keys file of `{}` in {source} is not valid",
                            skill.name
                        ))
                        .with_source(error)
                    })?
                    .public_keys(),
                None => Vec::new(),
            };
            for record in &skill.records {
                report.versions += 1;
                if !dest.has_archive(&skill.name, &record.vers)? {
                    jobs.push((&skill.name, record, keys.clone()));
                }
            }
        }
        let bar = progress(printer, args.json, jobs.len());
        // A bounded pool: a slow archive holds up no other.
        let mut copies = futures_util::stream::iter(
            jobs.iter()
                .map(|(name, record, keys)| copy_version(&registry, &dest, name, record, keys)),
        )
        .buffer_unordered(PARALLEL_DOWNLOADS);
        while let Some((bytes, files)) = copies.try_next().await? {
            report.downloaded += 1;
            report.bytes += bytes;
            report.files += files;
            if let Some(bar) = &bar {
                bar.inc(1);
            }
        }
        drop(copies);
        if let Some(bar) = bar {
            bar.finish_and_clear();
        }
        // The index files, keys files and aggregates, now that every
        // archive they list is in place; `search.json` after the shards it
        // names.
        fetcher.read(DISCOVERY_PATH).await?;
        fetcher.pending.sort_by_key(|(path, _)| path == SEARCH_PATH);
        for (skill, _) in &planned {
            let path = index_file_path(&skill.name);
            if dest.read_file(&path)?.as_deref() != Some(&skill.index[..]) {
                dest.write_file(&path, &skill.index)?;
            }
        }
        for (path, bytes) in &fetcher.pending {
            dest.write_file(path, bytes)?;
        }
        report.files += fetcher.files;
        report.bytes += fetcher.bytes;
        state.etags = fetcher.etags;
        // A mirror of a private registry is as private: its config says so,
        // so clients send their tokens and `skillpkg-registry serve` asks
        // for them.
        let config = RegistryConfig {
            require_signatures: registry.config().require_signatures,
            auth_required: registry.config().auth_required,
            ..RegistryConfig::read_only(registry.config().max_skill_bytes)
        };
        report.auth_required = config.auth_required;
        dest.write_config(&config)?;
        if snapshot.is_some() {
            // The snapshot's nodes and bins DEST lacks, before the
            // snapshot that names them.
            for (path, bytes) in &meta {
                dest.write_file(path, bytes)?;
            }
            copy_metadata(&registry, &dest, &mut report).await?;
        }
        anyhow::Ok(())
    })??;
    let bytes = serde_json::to_vec_pretty(&state).expect("the mirror state serialises");
    skillpkg_index::fs::write_atomic(&state_path, &bytes)?;
    if report.auth_required {
        printer.diagnostic(&format!(
            "warning: {} is a private registry (auth-required), so {} holds private skills: serve it only with `skillpkg-registry serve --root {} --read-only --auth-required` and tokens of its own (`skillpkg-registry token create --root {} --user NAME`), never with a static host, which cannot check tokens",
            report.source, report.dest, report.dest, report.dest
        ));
    }
    if args.json {
        printer.json(&report);
    } else {
        printer.status(
            "Mirrored",
            &format!(
                "{} skills, {} versions ({} new) from {} into {}",
                report.skills, report.versions, report.downloaded, report.source, report.dest
            ),
        );
        let serve = if report.auth_required {
            "`skillpkg-registry serve --read-only --auth-required`"
        } else {
            "any static host or `skillpkg-registry serve`"
        };
        printer.result(&format!(
            "fetched {} files, {} bytes; serve {} with {serve}, or install from it with --registry",
            report.files, report.bytes, report.dest
        ));
    }
    Ok(ExitStatus::Success)
}

fn patterns(texts: &[String]) -> anyhow::Result<Option<globset::GlobSet>> {
    if texts.is_empty() {
        return Ok(None);
    }
    let mut builder = globset::GlobSetBuilder::new();
    for text in texts {
        builder.add(globset::Glob::new(text).map_err(|error| {
            UserError::new(format!("`{text}` is not a valid skill pattern"))
                .with_hint("use a glob such as `pdf-*` or `data-?`")
                .with_source(error)
        })?);
    }
    Ok(Some(builder.build()?))
}

/// Reads the source's search index (`search.json` and the shards it
/// names) through `fetcher`, so that DEST gets it too; returns the names
/// it lists.
async fn read_search(
    fetcher: &mut Fetcher<'_>,
    source: &RegistryUrl,
) -> anyhow::Result<Vec<SkillName>> {
    let Some(bytes) = fetcher.read(SEARCH_PATH).await? else {
        return Ok(Vec::new());
    };
    let bad = |path: &str| format!("the search index of {source} ({path}) is not valid");
    let shards = match SearchFile::parse(&bytes).with_context(|| bad(SEARCH_PATH))? {
        SearchFile::Listed(index) => {
            return Ok(index.skills.into_iter().map(|entry| entry.name).collect());
        }
        SearchFile::Sharded(shards) => shards,
    };
    let mut names = Vec::new();
    for path in shards.paths() {
        if let Some(bytes) = fetcher.read(&path).await? {
            let shard: SearchIndex = serde_json::from_slice(&bytes).with_context(|| bad(&path))?;
            names.extend(shard.skills.into_iter().map(|entry| entry.name));
        }
    }
    names.sort();
    names.dedup();
    Ok(names)
}

/// The sha256 of every file `snapshot` lists: its list (version 1), or
/// (version 2) what its nodes and bins list, read from DEST when DEST has
/// them (they are named by their sha256, so a copy is the same), else from
/// the source and returned to be written to DEST.
async fn signed_files(
    registry: &Registry,
    dest: &StaticTree,
    snapshot: &Snapshot,
    report: &mut Report,
) -> anyhow::Result<(BTreeMap<String, Checksum>, Vec<(String, Vec<u8>)>)> {
    if let Some(files) = &snapshot.files {
        return Ok((files.clone(), Vec::new()));
    }
    let mut files = BTreeMap::new();
    let mut fetched = Vec::new();
    let Some(nodes) = &snapshot.nodes else {
        return Ok((files, fetched));
    };
    let mut read = async |sum: &Checksum, kind: &'static str| -> anyhow::Result<_> {
        let path = meta_path(sum);
        if let Some(bytes) = dest.read_file(&path)?
            && let Ok(entries) = registry.remember_meta(&path, sum, kind, &bytes)
        {
            return Ok(entries);
        }
        let bytes = registry.raw_file(&path).await?.with_context(|| {
            format!(
                "{} lists {path} in its signed snapshot (version {}) but does not serve it",
                registry.url(),
                snapshot.version
            )
        })?;
        let entries = registry
            .remember_meta(&path, sum, kind, &bytes)
            .with_context(|| format!("{path} of {} is not valid", registry.url()))?;
        report.files += 1;
        report.bytes += bytes.len() as u64;
        fetched.push((path, bytes));
        anyhow::Ok(entries)
    };
    for node in nodes.values() {
        let bins = read(node, "node").await?;
        for bin in bins.values() {
            files.extend(
                read(bin, "bin")
                    .await?
                    .iter()
                    .map(|(path, sum)| (path.clone(), *sum)),
            );
        }
    }
    Ok((files, fetched))
}

/// The skills to mirror: those the snapshot lists (`signed`, the sha256
/// of every file it lists), or, without signed metadata, the search
/// index (`listed`), filtered by the patterns.
fn choose(
    registry: &Registry,
    signed: Option<&BTreeMap<String, Checksum>>,
    listed: Vec<SkillName>,
    patterns: &Option<globset::GlobSet>,
) -> anyhow::Result<Vec<SkillName>> {
    let all: Vec<SkillName> = match signed {
        Some(signed) => signed
            .keys()
            .filter(|path| path.starts_with("index/"))
            .filter_map(|path| path.rsplit('/').next()?.parse().ok())
            .collect(),
        None => listed,
    };
    let Some(patterns) = patterns else {
        return Ok(all);
    };
    let chosen: Vec<SkillName> = all
        .into_iter()
        .filter(|name| patterns.is_match(name.as_str()))
        .collect();
    if chosen.is_empty() {
        return Err(UserError::new(format!(
            "no skill of {} matches the given --skill patterns",
            registry.url()
        ))
        .with_hint("check the patterns; `skillpkg search` lists the registry's skills")
        .into());
    }
    Ok(chosen)
}

/// Reads files of the source for the mirror: unchanged ones from DEST.
struct Fetcher<'a> {
    registry: &'a Registry,
    dest: &'a StaticTree,
    /// The sha256 of every file the snapshot lists, when there is one.
    signed: Option<&'a BTreeMap<String, Checksum>>,
    /// Path → ETag, of the last run and then of this one.
    etags: BTreeMap<String, String>,
    /// Files (200s) and bytes fetched.
    files: usize,
    bytes: u64,
    /// Files read that DEST lacks or has older: written after the archives.
    pending: Vec<(String, Vec<u8>)>,
}

impl Fetcher<'_> {
    /// Returns the file at `path` as the source serves it now (checked
    /// against the snapshot when there is one), reading DEST's copy
    /// instead when it is known to be the same.
    async fn read(&mut self, path: &str) -> anyhow::Result<Option<Vec<u8>>> {
        if let Some(signed) = self.signed
            && skillpkg_index::registry::metadata::in_snapshot(path)
            && !signed.contains_key(path)
        {
            // The snapshot says there is none (a skill without keys, a
            // registry without shards): nothing to ask for.
            return Ok(None);
        }
        let local = self.dest.read_file(path)?;
        if let Some(signed) = self.signed {
            if let (Some(expected), Some(local)) = (signed.get(path), &local)
                && Checksum::of(local) == *expected
            {
                return Ok(Some(local.clone()));
            }
            if skillpkg_index::registry::metadata::in_snapshot(path) {
                let bytes = self.registry.file(path).await?;
                if let Some(bytes) = &bytes {
                    self.fetched(path, bytes);
                }
                return Ok(bytes);
            }
        }
        let etag = local
            .as_ref()
            .and_then(|_| self.etags.get(path))
            .map(String::as_str);
        match self.registry.file_if_changed(path, etag).await? {
            Conditional::NotModified => Ok(local),
            Conditional::Missing => {
                self.etags.remove(path);
                Ok(None)
            }
            Conditional::Found { bytes, etag } => {
                match etag {
                    Some(etag) => self.etags.insert(path.to_owned(), etag),
                    None => self.etags.remove(path),
                };
                self.fetched(path, &bytes);
                Ok(Some(bytes))
            }
        }
    }

    fn fetched(&mut self, path: &str, bytes: &[u8]) {
        self.files += 1;
        self.bytes += bytes.len() as u64;
        if !path.starts_with("index/") {
            self.pending.push((path.to_owned(), bytes.to_vec()));
        }
    }
}

fn progress(printer: &Printer, json: bool, archives: usize) -> Option<indicatif::ProgressBar> {
    use std::io::IsTerminal as _;
    if json || printer.is_quiet() || !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = indicatif::ProgressBar::new(archives as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template("  Mirroring [{bar:30}] {pos}/{len} archives")
            .expect("a valid template")
            .progress_chars("=> "),
    );
    Some(bar)
}

/// Downloads one version, checks it, and writes it into DEST: the
/// signature and provenance first, the archive last. Returns the bytes and
/// files fetched.
async fn copy_version(
    registry: &Registry,
    dest: &StaticTree,
    name: &SkillName,
    record: &IndexRecord,
    keys: &[PublicKey],
) -> anyhow::Result<(u64, usize)> {
    // Checked against its index line before anything of it is written; a
    // mirror keeps no second copy in the user's cache.
    let archive = fetch_verified(
        Source {
            cache: None,
            registry: Some(registry),
            keys: Some(keys),
            offline: false,
        },
        &Expected {
            name,
            version: &record.vers,
            checksum: record.cksum,
            signer: record.signer_id().map(SignerPin::Id),
            pinned_by: "its index line",
        },
    )
    .await?;
    let mut bytes = archive.bytes().len() as u64;
    let mut files = 1;
    let provenance = registry.file(&provenance_path(name, &record.vers)).await?;
    if let Some(signature) = archive.signature() {
        bytes += signature.len() as u64;
        files += 1;
        dest.write_file(&signature_path(name, &record.vers), signature.as_bytes())?;
    }
    if let Some(provenance) = &provenance {
        bytes += provenance.len() as u64;
        files += 1;
        dest.write_file(&provenance_path(name, &record.vers), provenance)?;
    }
    dest.write_file(&archive_path(name, &record.vers), archive.bytes())?;
    Ok((bytes, files))
}

/// Copies the roots DEST lacks, then the snapshot and timestamp that were
/// verified, in that order.
async fn copy_metadata(
    registry: &Registry,
    dest: &StaticTree,
    report: &mut Report,
) -> anyhow::Result<()> {
    let verified = registry.verified_metadata();
    let read = |path: &str| {
        verified
            .files
            .iter()
            .find(|(file, _)| file == path)
            .map(|(_, bytes)| bytes.clone())
    };
    // Roots never change: only those DEST lacks are copied, up to the one
    // the chain ended at.
    let mut newest = None;
    for version in 1..=verified.root_version {
        let path = root_path(version);
        if let Some(bytes) = dest.read_file(&path)? {
            newest = Some(bytes);
            continue;
        }
        let bytes = match read(&path) {
            Some(bytes) => bytes,
            None => {
                let bytes = registry.raw_file(&path).await?.with_context(|| {
                    format!(
                        "{} lists root version {version} but serves no {path}",
                        registry.url()
                    )
                })?;
                report.files += 1;
                report.bytes += bytes.len() as u64;
                bytes
            }
        };
        dest.write_file(&path, &bytes)?;
        newest = Some(bytes);
    }
    if let Some(newest) = newest {
        dest.write_file(ROOT_PATH, &newest)?;
    }
    for file in [
        skillpkg_index::registry::metadata::SNAPSHOT_PATH,
        skillpkg_index::registry::metadata::TIMESTAMP_PATH,
    ] {
        let bytes = read(file).context("the verified metadata has no such file")?;
        report.files += 1;
        report.bytes += bytes.len() as u64;
        dest.write_file(file, &bytes)?;
    }
    Ok(())
}
