//! `skillpkg-registry build`: the static tree from a folder of archives,
//! with no server, for pipelines that upload to S3, a CDN or nginx.
//!
//! Every `<name>-<version>.tgz` below the source folder (with the
//! `<name>-<version>.tgz.minisig` and `<name>-<version>.intoto.jsonl` beside
//! it, when there are) is checked exactly as a publish is and written
//! exactly as the server writes it. The `published` time of each version is
//! its archive's modification time, which the server sets to the publish
//! time: building from a server's `public/dl` (copied with times, `cp -p` or
//! `rsync -t`) gives a byte-identical tree.
//!
//! Signatures are checked against the keys in `keys/<name>.json` of the
//! `--keys-from` tree (a server's `public/`, or an earlier build), which are
//! written to the new tree as they are. A `.minisig` names its key only by
//! id, so a build cannot register keys on first use as the server does: a
//! signed archive whose skill has no keys there is refused.
//!
//! The plugin marketplace (docs/registry.md, "Claude Code plugin
//! marketplace") is built too: a repository for every skill, and, when the
//! tree's URL is known (`--public-url`, else `--api` without its
//! `/api/v1`), `marketplace.json` and `marketplace.git`.
//!
//! The tree is built in a temporary folder beside the output and renamed
//! into place: a failed build leaves nothing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use skillpkg_index::registry::tree::{StaticTree, VersionFiles};
use skillpkg_index::registry::{
    AllRecords, DEFAULT_DL_TEMPLATE, FORMAT_VERSION, IndexRecord, KeysFile, RegistryConfig, latest,
};
use skillpkg_index::signing::{PublicKey, Signature, TrustedComment};
use skillpkg_index::skill::SkillName;

use crate::marketplace::{self, Listed, MarketplaceError, MarketplaceName};
use crate::publish::{Policy, PublishError, SignerKeys, Upload, verify_archive, without_build};
use crate::report::error_chain;

/// How to build.
#[derive(Clone, Debug)]
pub struct BuildOptions {
    /// The API URL to write into `config.json` (None: a read-only tree).
    pub api: Option<String>,
    /// The public URL, for absolute URLs in the discovery index.
    pub public_url: Option<String>,
    pub max_skill_bytes: u64,
    /// Whether unsigned archives are refused (and `require-signatures` in
    /// `config.json`).
    pub require_signatures: bool,
    /// The audit severity at which an archive is refused (`None`: never);
    /// as at publish, so a built tree has the lines a server would write.
    pub audit_refuse: Option<skillpkg_index::audit::Severity>,
    /// The tree whose `keys/<name>.json` files the signatures are checked
    /// against and which are copied into the new tree.
    pub keys_from: Option<PathBuf>,
    /// The plugin marketplace's name; `None`: named after the URL's host.
    pub marketplace_name: Option<MarketplaceName>,
}

/// Why a build failed.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("I/O error on {}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} already exists and is not empty", path.display())]
    OutputExists { path: PathBuf },
    #[error("`{}` is not named `<name>-<version>.tgz`", path.display())]
    BadFileName { path: PathBuf },
    #[error("{} cannot be published: {}", path.display(), error_chain(.source))]
    Refused {
        path: PathBuf,
        #[source]
        source: PublishError,
    },
    #[error(
        "{} is signed, but no key for `{name}` was given to check it with: pass --keys-from a tree whose keys/{name}.json lists the signer's key", path.display()
    )]
    NoKey { path: PathBuf, name: String },
    #[error("{name}@{version} appears twice: {} and {}", first.display(), second.display())]
    Duplicate {
        name: String,
        version: String,
        first: PathBuf,
        second: PathBuf,
    },
    #[error(
        "{name}@{version} ({}) is the same version as {name}@{existing} ({}): versions that differ only in build metadata (`+...`) are one version; keep one of them",
        second.display(), first.display()
    )]
    SameVersion {
        name: String,
        version: String,
        existing: String,
        first: PathBuf,
        second: PathBuf,
    },
    #[error(transparent)]
    Tree(#[from] skillpkg_index::registry::tree::TreeError),
    #[error("cannot write the plugin marketplace")]
    Marketplace(#[from] MarketplaceError),
}

/// What a build wrote.
#[derive(Debug)]
pub struct BuildReport {
    pub skills: usize,
    pub versions: usize,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> BuildError + '_ {
    move |source| BuildError::Io {
        path: path.to_owned(),
        source,
    }
}

/// Builds the tree of the archives below `from` into the new folder `out`.
pub fn build(from: &Path, out: &Path, options: &BuildOptions) -> Result<BuildReport, BuildError> {
    if out.exists() && fs_err::read_dir(out).map_err(io(out))?.next().is_some() {
        return Err(BuildError::OutputExists {
            path: out.to_owned(),
        });
    }
    let keys = match &options.keys_from {
        Some(dir) => {
            fs_err::metadata(dir).map_err(io(dir))?;
            StaticTree::new(dir).read_all_keys()?
        }
        None => BTreeMap::new(),
    };
    let mut archives = Vec::new();
    find_archives(from, &mut archives)?;
    archives.sort();

    let parent = out
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    fs_err::create_dir_all(parent).map_err(io(parent))?;
    let staging = tempfile::Builder::new()
        .prefix(".skillpkg-build-")
        .tempdir_in(parent)
        .map_err(io(parent))?;
    let tree = StaticTree::new(staging.path());
    let policy = Policy {
        max_skill_bytes: options.max_skill_bytes,
        require_signatures: options.require_signatures,
        audit_refuse: options.audit_refuse,
    };
    let mut all = AllRecords::new();
    // Keyed by the version without its build metadata, which semver (and
    // cargo) ignore: `1.0.0+build2` beside `1.0.0` is a duplicate.
    let mut sources: std::collections::HashMap<
        (SkillName, semver::Version),
        (semver::Version, PathBuf),
    > = std::collections::HashMap::new();
    for path in archives {
        let tarball = fs_err::read(&path).map_err(io(&path))?;
        let signature = read_beside(&path, ".tgz.minisig")?;
        let provenance = read_beside(&path, ".intoto.jsonl")?;
        let files = VersionFiles {
            tarball: &tarball,
            signature: signature.as_deref(),
            provenance: provenance.as_deref(),
        };
        let modified = fs_err::metadata(&path)
            .and_then(|metadata| metadata.modified())
            .map_err(io(&path))?;
        let published = jiff::Timestamp::try_from(modified).map_err(|error| BuildError::Io {
            path: path.clone(),
            source: std::io::Error::other(error.to_string()),
        })?;
        let record = verify_named(&path, &files, &keys, &policy, published)?;
        let key = (record.name.clone(), without_build(&record.vers));
        if let Some((existing, first)) = sources.insert(key, (record.vers.clone(), path.clone())) {
            let (name, version) = (record.name.to_string(), record.vers.to_string());
            return Err(if existing == record.vers {
                BuildError::Duplicate {
                    name,
                    version,
                    first,
                    second: path,
                }
            } else {
                BuildError::SameVersion {
                    name,
                    version,
                    existing: existing.to_string(),
                    first,
                    second: path,
                }
            });
        }
        tree.write_version(&record.name, &record.vers, &files, record.published)?;
        all.entry(record.name.clone()).or_default().push(record);
    }
    for (name, records) in &all {
        tree.write_index(name, records)?;
    }
    write_marketplace(&tree, &all, options)?;
    for (name, file) in &keys {
        tree.write_keys(name, file)?;
    }
    let config = RegistryConfig {
        v: FORMAT_VERSION,
        dl: DEFAULT_DL_TEMPLATE.into(),
        api: options.api.clone(),
        auth_required: false,
        max_skill_bytes: options.max_skill_bytes,
        require_signatures: options.require_signatures,
    };
    tree.write_config(&config)?;
    tree.write_aggregates(&all, &config, options.public_url.as_deref())?;
    crate::web::write_all(&tree, &all, &crate::web::limits(options.max_skill_bytes))?;

    if out.exists() {
        fs_err::remove_dir(out).map_err(io(out))?;
    }
    let staging = staging.keep();
    fs_err::rename(&staging, out).map_err(io(out))?;
    Ok(BuildReport {
        skills: all.len(),
        versions: all.values().map(Vec::len).sum(),
    })
}

/// Writes every skill's plugin repository and, when the tree's URL is
/// known, the marketplace of their newest versions that are not yanked.
fn write_marketplace(
    tree: &StaticTree,
    all: &AllRecords,
    options: &BuildOptions,
) -> Result<(), BuildError> {
    let limits = crate::web::limits(options.max_skill_bytes);
    let mut listed = Vec::new();
    for (name, records) in all {
        let plugin = marketplace::write_plugin(tree, name, records, &limits)?;
        if let Some(record) = latest(records)
            && let Some(commit) = plugin.commits.get(&record.vers)
        {
            listed.push(Listed {
                name: name.clone(),
                version: record.vers.clone(),
                description: record.description.clone(),
                commit: *commit,
            });
        }
    }
    // The server's URL: its public URL, else the one its API is under.
    let url = options.public_url.as_deref().or_else(|| {
        options
            .api
            .as_deref()
            .map(|api| api.trim_end_matches('/'))
            .map(|api| api.strip_suffix("/api/v1").unwrap_or(api))
    });
    if let Some(url) = url {
        let settings = marketplace::Settings::new(url, options.marketplace_name.clone());
        marketplace::write_marketplace(tree, &settings, &listed)?;
    }
    Ok(())
}

/// Reads the file beside the archive `<stem>.tgz` named `<stem><suffix>`,
/// if there is one.
fn read_beside(archive: &Path, suffix: &str) -> Result<Option<Vec<u8>>, BuildError> {
    let file_name = archive
        .file_name()
        .and_then(|name| name.to_str())
        .and_then(|name| name.strip_suffix(".tgz"))
        .expect("archives are found by their .tgz extension");
    let path = archive.with_file_name(format!("{file_name}{suffix}"));
    match fs_err::read(&path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(BuildError::Io { path, source }),
    }
}

fn find_archives(dir: &Path, found: &mut Vec<PathBuf>) -> Result<(), BuildError> {
    for entry in fs_err::read_dir(dir).map_err(io(dir))? {
        let entry = entry.map_err(io(dir))?;
        let path = entry.path();
        if entry.file_type().map_err(io(&path))?.is_dir() {
            find_archives(&path, found)?;
        } else if path.extension().is_some_and(|extension| extension == "tgz") {
            found.push(path);
        }
    }
    Ok(())
}

/// Splits `<name>-<version>.tgz` (names hold `-`, and so may versions) at
/// every `-` that leaves a valid name and version, and takes the split whose
/// name the archive itself confirms. For a signed archive the split its
/// trusted comment names is the only one tried, as the signature of any
/// other would not hold.
fn verify_named(
    path: &Path,
    files: &VersionFiles<'_>,
    keys: &BTreeMap<SkillName, KeysFile>,
    policy: &Policy,
    published: jiff::Timestamp,
) -> Result<IndexRecord, BuildError> {
    let stem = path
        .file_name()
        .and_then(|name| name.to_str())
        .and_then(|name| name.strip_suffix(".tgz"))
        .unwrap_or("");
    let mut candidates: Vec<(SkillName, semver::Version)> = stem
        .match_indices('-')
        .filter_map(|(index, _)| {
            Some((stem[..index].parse().ok()?, stem[index + 1..].parse().ok()?))
        })
        .collect();
    if let Some(comment) = files.signature.and_then(signed_as)
        && candidates
            .iter()
            .any(|(name, version)| name == &comment.name && version == &comment.version)
    {
        candidates = vec![(comment.name, comment.version)];
    }
    let refused = |source| BuildError::Refused {
        path: path.to_owned(),
        source,
    };
    let mut last_error = None;
    for (name, version) in candidates {
        let registered: Vec<PublicKey> = keys
            .get(&name)
            .map(KeysFile::public_keys)
            .unwrap_or_default();
        let upload = Upload {
            name: &name,
            version: &version,
            tarball: files.tarball,
            signature: files.signature,
            provenance: files.provenance,
        };
        match verify_archive(
            &upload,
            SignerKeys::Registered(&registered),
            policy,
            published,
        ) {
            Ok(record) => return Ok(record),
            Err(error @ PublishError::NameMismatch { .. }) => last_error = Some(error),
            Err(PublishError::NoKey { name, .. }) => {
                return Err(BuildError::NoKey {
                    path: path.to_owned(),
                    name,
                });
            }
            Err(error) => return Err(refused(error)),
        }
    }
    match last_error {
        Some(source) => Err(refused(source)),
        None => Err(BuildError::BadFileName {
            path: path.to_owned(),
        }),
    }
}

/// Returns what a signature file says it signs, if it says so readably.
fn signed_as(signature: &[u8]) -> Option<TrustedComment> {
    let signature: Signature = std::str::from_utf8(signature).ok()?.parse().ok()?;
    signature.trusted_comment().parse().ok()
}
