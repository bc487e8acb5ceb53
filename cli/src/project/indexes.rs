//! Fetching the index files a resolve needs: the file of every name
//! reachable from the manifest, each from its registry (a manifest skill's
//! own, a dependency's the one of the skill that depends on it).
//!
//! Two passes, so that the files come in concurrently and the outcome is
//! still the one a walk in a fixed order gives, whatever order they arrive
//! in:
//!
//! ```text
//! prefetch   a work queue of (registry, name), at most PARALLEL_INDEX_FETCHES
//!            in flight: as each file arrives, the names its versions depend
//!            on are queued, with no wait for the rest of a "level". Every
//!            answer (versions or error) is kept. After the first error no new
//!            fetch starts; those in flight finish.
//! walk       the depth-first walk from the manifest, in its order, taking each
//!            file from what the prefetch kept: every check (a name wanted from
//!            two registries, a version listed twice, a missing skill read as no
//!            versions) and every error is met in the walk's order, so the
//!            same one is reported every time. A file the prefetch did not get
//!            (only after an error) is fetched there and then.
//! ```
//!
//! Each registry is opened before the prefetch, so that it is opened (and
//! its token found) once; within a registry, its signed metadata is checked
//! once for all the files read at once (`Registry::index`).

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use futures_util::StreamExt as _;
use futures_util::stream::FuturesUnordered;
use skillpkg_index::registry::IndexRecord;
use skillpkg_index::skill::SkillName;

use super::lockfile::Lockfile;
use super::manifest::Manifest;
use crate::client::registries::OpenRegistries;
use crate::client::registry::RegistryError;
use crate::error::UserError;

/// How many index files are fetched at once.
///
/// Index files are small, so a resolve waits on round trips, not bytes: a
/// graph of `n` files `d` levels deep costs about `max(d, n / 16)` of them.
/// Over HTTP/1.1 each request in flight is a connection of its own, and 16
/// stays far below what a server gives one client (`skillpkg-registry`
/// serves 512 connections, nginx 512 a worker by default) and near what
/// other package managers open to one host (npm: 15 sockets); over HTTP/2
/// all of them share one connection, well within the 100 concurrent streams
/// servers commonly allow.
pub(super) const PARALLEL_INDEX_FETCHES: usize = 16;

/// The index files of every name reachable from the manifest, and the
/// registry each name comes from.
#[derive(Debug, Default)]
pub(super) struct Fetched {
    pub(super) records: BTreeMap<SkillName, Vec<IndexRecord>>,
    pub(super) registries: BTreeMap<SkillName, String>,
}

/// A name to read from a registry: (registry, name).
type Wanted = (String, SkillName);

/// What the prefetch got for each file it read.
type Prefetched = BTreeMap<Wanted, Result<Vec<IndexRecord>, RegistryError>>;

/// Fetches the index file of every name reachable from the manifest, each
/// from its registry: a manifest skill's own, a dependency's the one of the
/// skill that depends on it. A name wanted from two registries is an error.
pub(super) async fn fetch_indexes(
    opened: &mut OpenRegistries<'_>,
    manifest: &Manifest,
    lock: Option<&Lockfile>,
) -> anyhow::Result<Fetched> {
    let default_name = opened.registries().default_name().to_owned();
    let roots: Vec<(SkillName, String)> = manifest
        .skills
        .iter()
        .map(|(name, requirement)| {
            let registry = requirement
                .registry
                .clone()
                .unwrap_or_else(|| default_name.clone());
            (name.clone(), registry)
        })
        .collect();
    // Dependencies come from the registry of the skill that depends on
    // them, so these are all the registries the walk reads; opened in the
    // order the walk first reads each (it takes the last name first).
    for (_, registry) in roots.iter().rev() {
        opened.open(registry).await?;
    }
    let prefetched = prefetch(opened, &roots, lock).await;
    walk(opened, roots, lock, prefetched).await
}

/// Reads the index files reachable from `roots`, at most
/// [`PARALLEL_INDEX_FETCHES`] at once, queueing each file's dependencies as
/// it arrives, and keeps every answer; starts no new read after the first
/// error. Reads only from registries already open.
async fn prefetch(
    opened: &OpenRegistries<'_>,
    roots: &[(SkillName, String)],
    lock: Option<&Lockfile>,
) -> Prefetched {
    let mut queued: BTreeSet<Wanted> = BTreeSet::new();
    let mut queue: VecDeque<Wanted> = VecDeque::new();
    for (name, registry) in roots.iter().rev() {
        let wanted = (registry.clone(), name.clone());
        if queued.insert(wanted.clone()) {
            queue.push_back(wanted);
        }
    }
    let mut in_flight = FuturesUnordered::new();
    let mut prefetched = Prefetched::new();
    let mut failed = false;
    loop {
        while !failed && in_flight.len() < PARALLEL_INDEX_FETCHES {
            let Some((registry, name)) = queue.pop_front() else {
                break;
            };
            let Some(source) = opened.get(&registry) else {
                // Not open: the walk opens it, and reports why it cannot.
                continue;
            };
            in_flight.push(async move {
                let result = source.index(&name).await;
                ((registry, name), result)
            });
        }
        let Some((wanted, result)) = in_flight.next().await else {
            break;
        };
        let (registry, name) = &wanted;
        match &result {
            Ok(versions) if check_distinct_versions(name, registry, versions).is_ok() => {
                for dependency in dependencies(name, versions, lock) {
                    let next = (registry.clone(), dependency.clone());
                    if queued.insert(next.clone()) {
                        queue.push_back(next);
                    }
                }
            }
            Err(RegistryError::NoSuchSkill { .. }) => {}
            // The walk reports it, in its order; reading on would only
            // delay that.
            _ => failed = true,
        }
        prefetched.insert(wanted, result);
    }
    prefetched
}

/// The walk from the manifest (see the module's documentation), reading
/// each file from `prefetched`, or from its registry when the prefetch did
/// not get it.
async fn walk(
    opened: &mut OpenRegistries<'_>,
    roots: Vec<(SkillName, String)>,
    lock: Option<&Lockfile>,
    mut prefetched: Prefetched,
) -> anyhow::Result<Fetched> {
    /// Who wants a name: skills.toml, or the skill that depends on it.
    fn wanted_by(by: Option<&SkillName>) -> String {
        by.map_or_else(
            || "skills.toml".to_owned(),
            |skill| format!("a dependency of `{skill}`"),
        )
    }
    let mut fetched = Fetched::default();
    let mut wanted: BTreeMap<SkillName, Option<SkillName>> = BTreeMap::new();
    let mut pending: Vec<(SkillName, String, Option<SkillName>)> = roots
        .into_iter()
        .map(|(name, registry)| (name, registry, None))
        .collect();
    while let Some((name, registry, by)) = pending.pop() {
        if let Some(first) = fetched.registries.get(&name) {
            if first != &registry {
                return Err(UserError::new(format!(
                    "`{name}` is wanted from two registries: `{first}` ({}) and `{registry}` ({})",
                    wanted_by(wanted[&name].as_ref()),
                    wanted_by(by.as_ref())
                ))
                .with_hint(format!(
                    "a project takes each skill name from one registry; a dependency comes from the registry of the skill that depends on it, so set `registry` of `{name}` in skills.toml to match, or drop one of the skills"
                ))
                .into());
            }
            continue;
        }
        let source = opened.open(&registry).await?;
        let result = match prefetched.remove(&(registry.clone(), name.clone())) {
            Some(result) => result,
            None => source.index(&name).await,
        };
        let versions = match result {
            Ok(versions) => versions,
            Err(RegistryError::NoSuchSkill { .. }) => Vec::new(),
            Err(error) => return Err(error.into()),
        };
        check_distinct_versions(&name, &registry, &versions)?;
        pending.extend(
            dependencies(&name, &versions, lock)
                .map(|dependency| (dependency.clone(), registry.clone(), Some(name.clone()))),
        );
        fetched.records.insert(name.clone(), versions);
        fetched.registries.insert(name.clone(), registry);
        wanted.insert(name, by);
    }
    Ok(fetched)
}

/// The names the versions of `name` depend on, in the index file's order:
/// those of every version but the yanked ones, unless the lock has that
/// very version.
fn dependencies<'a>(
    name: &SkillName,
    versions: &'a [IndexRecord],
    lock: Option<&Lockfile>,
) -> impl Iterator<Item = &'a SkillName> {
    let locked = lock
        .and_then(|lock| lock.get(name))
        .map(|entry| entry.version.semver().clone());
    versions
        .iter()
        .filter(move |record| !record.yanked || Some(&record.vers) == locked.as_ref())
        .flat_map(|record| record.deps.iter().map(|dependency| &dependency.name))
}

/// Refuses an index file that lists one version twice, or two versions that
/// differ only in build metadata (`1.0.0` and `1.0.0+build2`): semver
/// orders and matches them as one version, so `=1.0.0` could lock either,
/// and a registry that accepted the second publish is not one to trust.
fn check_distinct_versions(
    name: &SkillName,
    registry: &str,
    records: &[IndexRecord],
) -> anyhow::Result<()> {
    let mut seen: BTreeMap<(u64, u64, u64, &semver::Prerelease), &semver::Version> =
        BTreeMap::new();
    for record in records {
        let version = &record.vers;
        let key = (version.major, version.minor, version.patch, &version.pre);
        if let Some(first) = seen.insert(key, version) {
            return Err(UserError::new(format!(
                "the index of `{name}` in registry `{registry}` lists both {first} and {version}, which are the same version"
            ))
            .with_hint("versions that differ only in build metadata are one version, and a registry must refuse the second; report it to the registry's operator")
            .into());
        }
    }
    Ok(())
}
