//! `skillpkg-registry build`: the static tree from a folder of archives,
//! with no server, for pipelines that upload to S3, a CDN or nginx.
//!
//! Every `<name>-<version>.tgz` below the source folder (with its
//! `.minisig`, when there is one) is checked exactly as a publish is and
//! written exactly as the server writes it. The `published` time of each
//! version is its archive's modification time, which the server sets to the
//! publish time: building from a server's `public/dl` (copied with times,
//! `cp -p` or `rsync -t`) gives a byte-identical tree.
//!
//! The tree is built in a temporary folder beside the output and renamed
//! into place: a failed build leaves nothing.

use std::path::{Path, PathBuf};

use skillpkg_index::registry::tree::StaticTree;
use skillpkg_index::registry::{AllRecords, DEFAULT_DL_TEMPLATE, FORMAT_VERSION, RegistryConfig};
use skillpkg_index::skill::SkillName;

use crate::publish::{PublishError, verify_archive};
use crate::registry::error_chain;

/// How to build.
#[derive(Clone, Debug)]
pub struct BuildOptions {
    /// The API URL to write into `config.json` (None: a read-only tree).
    pub api: Option<String>,
    /// The public URL, for absolute URLs in the discovery index.
    pub public_url: Option<String>,
    pub max_skill_bytes: u64,
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
    #[error("{name}@{version} appears twice: {} and {}", first.display(), second.display())]
    Duplicate {
        name: String,
        version: String,
        first: PathBuf,
        second: PathBuf,
    },
    #[error(transparent)]
    Tree(#[from] skillpkg_index::registry::tree::TreeError),
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
    let mut all = AllRecords::new();
    let mut sources: std::collections::HashMap<(SkillName, semver::Version), PathBuf> =
        std::collections::HashMap::new();
    for path in archives {
        let tarball = fs_err::read(&path).map_err(io(&path))?;
        let signature_path = PathBuf::from(format!("{}.minisig", path.display()));
        let signature = match fs_err::read(&signature_path) {
            Ok(bytes) => Some(bytes),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => None,
            Err(source) => {
                return Err(BuildError::Io {
                    path: signature_path,
                    source,
                });
            }
        };
        let modified = fs_err::metadata(&path)
            .and_then(|metadata| metadata.modified())
            .map_err(io(&path))?;
        let published = jiff::Timestamp::try_from(modified).map_err(|error| BuildError::Io {
            path: path.clone(),
            source: std::io::Error::other(error.to_string()),
        })?;
        let record = verify_named(
            &path,
            &tarball,
            signature.as_deref(),
            options.max_skill_bytes,
            published,
        )?;
        let key = (record.name.clone(), record.vers.clone());
        if let Some(first) = sources.insert(key, path.clone()) {
            return Err(BuildError::Duplicate {
                name: record.name.to_string(),
                version: record.vers.to_string(),
                first,
                second: path,
            });
        }
        tree.write_archive(
            &record.name,
            &record.vers,
            &tarball,
            signature.as_deref(),
            record.published,
        )?;
        all.entry(record.name.clone()).or_default().push(record);
    }
    for (name, records) in &all {
        tree.write_index(name, records)?;
    }
    let config = RegistryConfig {
        v: FORMAT_VERSION,
        dl: DEFAULT_DL_TEMPLATE.into(),
        api: options.api.clone(),
        auth_required: false,
        max_skill_bytes: options.max_skill_bytes,
        require_signatures: false,
    };
    tree.write_config(&config)?;
    tree.write_aggregates(&all, &config, options.public_url.as_deref())?;

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
/// name the archive itself confirms.
fn verify_named(
    path: &Path,
    tarball: &[u8],
    signature: Option<&[u8]>,
    max_skill_bytes: u64,
    published: jiff::Timestamp,
) -> Result<skillpkg_index::registry::IndexRecord, BuildError> {
    let stem = path
        .file_name()
        .and_then(|name| name.to_str())
        .and_then(|name| name.strip_suffix(".tgz"))
        .unwrap_or("");
    let candidates: Vec<(SkillName, semver::Version)> = stem
        .match_indices('-')
        .filter_map(|(index, _)| {
            Some((stem[..index].parse().ok()?, stem[index + 1..].parse().ok()?))
        })
        .collect();
    let mut last_error = None;
    for (name, version) in candidates {
        match verify_archive(
            &name,
            &version,
            tarball,
            signature,
            max_skill_bytes,
            published,
        ) {
            Ok(record) => return Ok(record),
            Err(error @ PublishError::NameMismatch { .. }) => last_error = Some(error),
            Err(error) => {
                return Err(BuildError::Refused {
                    path: path.to_owned(),
                    source: error,
                });
            }
        }
    }
    match last_error {
        Some(source) => Err(BuildError::Refused {
            path: path.to_owned(),
            source,
        }),
        None => Err(BuildError::BadFileName {
            path: path.to_owned(),
        }),
    }
}
