//! Resolution with pubgrub over the registry's index files.
//!
//! Every version a requirement can pick is known up front (the index files
//! of every name reachable from the manifest), so a requirement becomes the
//! exact set of versions that match it under semver's own rules, and
//! pubgrub's offline provider does the search. Yanked versions are left out,
//! except a locked one, which keeps installing. Locked versions are tried
//! first: resolution changes a locked skill only when it must (or when the
//! user asked to update it).

use std::collections::{BTreeMap, BTreeSet};

use pubgrub::{
    DefaultStringReporter, OfflineDependencyProvider, PubGrubError, Ranges, Reporter as _,
};
use skillpkg_index::registry::IndexRecord;
use skillpkg_index::skill::SkillName;

use super::lockfile::Lockfile;
use super::manifest::Manifest;

/// The name of the project in conflict explanations.
const ROOT: &str = "your skills.toml";

type Provider = OfflineDependencyProvider<String, Ranges<semver::Version>>;

/// Why there is no set of versions that satisfies everything.
#[derive(Debug, thiserror::Error)]
#[error("no set of skill versions satisfies every requirement:\n{explanation}")]
pub struct ResolveError {
    pub explanation: String,
}

fn matching(
    requirement: &semver::VersionReq,
    versions: &BTreeSet<semver::Version>,
) -> Ranges<semver::Version> {
    versions
        .iter()
        .filter(|version| requirement.matches(version))
        .fold(Ranges::empty(), |ranges, version| {
            ranges.union(&Ranges::singleton(version.clone()))
        })
}

/// Resolves the manifest against `indexes` (every reachable name's versions).
/// `keep` lists the names whose locked version is preferred.
pub fn resolve(
    manifest: &Manifest,
    indexes: &BTreeMap<SkillName, Vec<IndexRecord>>,
    lock: Option<&Lockfile>,
    keep: &dyn Fn(&SkillName) -> bool,
) -> Result<Vec<IndexRecord>, ResolveError> {
    let locked = |name: &SkillName| {
        lock.and_then(|lock| lock.get(name))
            .map(|skill| skill.version.clone())
    };
    let pinned = |name: &SkillName| locked(name).filter(|_| keep(name));
    match attempt(manifest, indexes, &pinned) {
        Ok(resolved) => Ok(resolved),
        // The locked versions may be what conflicts: try again free.
        Err(_) if lock.is_some() => attempt(manifest, indexes, &|_| None),
        Err(error) => Err(error),
    }
}

fn attempt(
    manifest: &Manifest,
    indexes: &BTreeMap<SkillName, Vec<IndexRecord>>,
    pinned: &dyn Fn(&SkillName) -> Option<semver::Version>,
) -> Result<Vec<IndexRecord>, ResolveError> {
    // The versions each name may take: not yanked (unless locked), and only
    // the pinned one when pinned.
    let mut available: BTreeMap<&SkillName, BTreeSet<semver::Version>> = BTreeMap::new();
    for (name, records) in indexes {
        let versions = records
            .iter()
            // A yanked version stays only where it is locked and kept.
            .filter(|record| !record.yanked || pinned(name).as_ref() == Some(&record.vers))
            .map(|record| record.vers.clone())
            .filter(|version| pinned(name).is_none_or(|pin| &pin == version));
        available.insert(name, versions.collect());
    }
    let empty = BTreeSet::new();
    let versions_of = |name: &SkillName| available.get(name).unwrap_or(&empty);
    let mut provider = Provider::new();
    provider.add_dependencies(
        ROOT.to_owned(),
        semver::Version::new(0, 0, 0),
        manifest.skills.iter().map(|(name, requirement)| {
            (
                name.to_string(),
                matching(&requirement.requirement, versions_of(name)),
            )
        }),
    );
    for (name, records) in indexes {
        for record in records
            .iter()
            .filter(|record| versions_of(name).contains(&record.vers))
        {
            let dependencies = record.deps.iter().map(|dependency| {
                (
                    dependency.name.to_string(),
                    matching(&dependency.req, versions_of(&dependency.name)),
                )
            });
            provider.add_dependencies(name.to_string(), record.vers.clone(), dependencies);
        }
    }
    match pubgrub::resolve(&provider, ROOT.to_owned(), semver::Version::new(0, 0, 0)) {
        Ok(solution) => {
            let mut resolved: Vec<IndexRecord> = solution
                .into_iter()
                .filter(|(package, _)| package != ROOT)
                .filter_map(|(package, version)| {
                    let name: SkillName = package.parse().ok()?;
                    indexes
                        .get(&name)?
                        .iter()
                        .find(|record| record.vers == version)
                        .cloned()
                })
                .collect();
            resolved.sort_by(|a, b| a.name.cmp(&b.name));
            Ok(resolved)
        }
        Err(PubGrubError::NoSolution(mut tree)) => {
            tree.collapse_no_versions();
            let explanation =
                DefaultStringReporter::report(&tree).replace(&format!("{ROOT} 0.0.0"), ROOT);
            Err(ResolveError { explanation })
        }
        Err(other) => Err(ResolveError {
            explanation: other.to_string(),
        }),
    }
}
