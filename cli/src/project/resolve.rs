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

/// A requirement of skills.toml that no version can meet, found before
/// resolving so the message names the skill and what the registry has
/// (pubgrub would only say that the set of versions is empty).
#[derive(Debug, thiserror::Error, serde::Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Unmet {
    #[error("no skill named `{name}` in registry `{registry}`")]
    NoSuchSkill {
        name: SkillName,
        registry: String,
        /// Close names from the registry's search index.
        suggestions: Vec<String>,
    },
    #[error(
        "no version of `{name}` in registry `{registry}` matches `{requirement}`; it has {}",
        describe(versions)
    )]
    NoMatchingVersion {
        name: SkillName,
        registry: String,
        requirement: String,
        /// Every published version, oldest first.
        versions: Vec<PublishedVersion>,
    },
}

/// A published version, and whether it is yanked.
#[derive(Debug, serde::Serialize)]
pub struct PublishedVersion {
    pub version: semver::Version,
    pub yanked: bool,
}

fn describe(versions: &[PublishedVersion]) -> String {
    versions
        .iter()
        .map(|published| {
            if published.yanked {
                format!("{} (yanked)", published.version)
            } else {
                published.version.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

impl Unmet {
    /// What to do about it.
    pub fn hint(&self) -> String {
        match self {
            Self::NoSuchSkill {
                name,
                registry,
                suggestions,
            } => match suggestions.as_slice() {
                [] => format!(
                    "check the name; `skillpkg search {name}` searches registry `{registry}`"
                ),
                names => format!(
                    "did you mean {}?",
                    names
                        .iter()
                        .map(|name| format!("`{name}`"))
                        .collect::<Vec<_>>()
                        .join(" or ")
                ),
            },
            Self::NoMatchingVersion { name, versions, .. } => {
                match versions.iter().rev().find(|published| !published.yanked) {
                    Some(latest) => format!(
                        "change the requirement of `{name}` in skills.toml, for example to \"^{}\" (`skillpkg add {name}@^{}`)",
                        latest.version, latest.version
                    ),
                    None => format!(
                        "every version of `{name}` is yanked: ask its publisher for a new one"
                    ),
                }
            }
        }
    }
}

/// Checks each requirement of the manifest against its index (`versions`:
/// what the registry has, empty when it has no such skill), before
/// resolving. `locked` is the version skills.lock has, which satisfies a
/// requirement even when yanked.
pub fn check_requirement(
    name: &SkillName,
    requirement: &semver::VersionReq,
    registry: &str,
    versions: &[IndexRecord],
    locked: Option<&semver::Version>,
) -> Result<(), Unmet> {
    if versions.is_empty() {
        return Err(Unmet::NoSuchSkill {
            name: name.clone(),
            registry: registry.to_owned(),
            suggestions: Vec::new(),
        });
    }
    let usable = |record: &&IndexRecord| !record.yanked || Some(&record.vers) == locked;
    if versions
        .iter()
        .filter(usable)
        .any(|record| requirement.matches(&record.vers))
    {
        return Ok(());
    }
    let mut published: Vec<PublishedVersion> = versions
        .iter()
        .map(|record| PublishedVersion {
            version: record.vers.clone(),
            yanked: record.yanked,
        })
        .collect();
    published.sort_by(|a, b| a.version.cmp(&b.version));
    Err(Unmet::NoMatchingVersion {
        name: name.clone(),
        registry: registry.to_owned(),
        requirement: requirement.to_string(),
        versions: published,
    })
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

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::project::manifest::Requirement;

    fn name(text: &str) -> SkillName {
        text.parse().unwrap()
    }

    fn record(skill: &str, version: &str, yanked: bool, deps: &[(&str, &str)]) -> IndexRecord {
        serde_json::from_value(serde_json::json!({
            "v": 1,
            "name": skill,
            "vers": version,
            "deps": deps.iter().map(|(name, req)| serde_json::json!({"name": name, "req": req})).collect::<Vec<_>>(),
            "cksum": format!("sha256:{}", "0".repeat(64)),
            "size": 1,
            "tree": format!("h1:{}", "0".repeat(64)),
            "files": 1,
            "description": "",
            "signer": null,
            "yanked": yanked,
            "published": "2026-01-01T00:00:00Z",
        }))
        .unwrap()
    }

    fn manifest(requirements: &[(&str, &str)]) -> Manifest {
        Manifest {
            skills: requirements
                .iter()
                .map(|(skill, req)| {
                    (
                        name(skill),
                        Requirement {
                            requirement: req.parse().unwrap(),
                            allow_unsigned: true,
                            registry: None,
                        },
                    )
                })
                .collect(),
            ..Manifest::default()
        }
    }

    fn versions(resolved: &[IndexRecord]) -> Vec<String> {
        resolved
            .iter()
            .map(|record| format!("{}@{}", record.name, record.vers))
            .collect()
    }

    #[test]
    fn the_newest_matching_versions_win_and_yanked_ones_are_skipped() {
        let indexes = BTreeMap::from([
            (
                name("pdf"),
                vec![
                    record("pdf", "1.0.0", false, &[("fonts", "^1")]),
                    record("pdf", "1.2.0", true, &[("fonts", "^1")]),
                    record("pdf", "1.1.0", false, &[("fonts", "^1.1")]),
                    record("pdf", "2.0.0", false, &[]),
                ],
            ),
            (
                name("fonts"),
                vec![
                    record("fonts", "1.0.0", false, &[]),
                    record("fonts", "1.1.0", false, &[]),
                ],
            ),
        ]);
        let resolved = resolve(&manifest(&[("pdf", "^1")]), &indexes, None, &|_| true).unwrap();
        assert_eq!(versions(&resolved), ["fonts@1.1.0", "pdf@1.1.0"]);
    }

    #[test]
    fn a_locked_version_is_kept_even_yanked_and_released_on_update() {
        let indexes = BTreeMap::from([(
            name("pdf"),
            vec![
                record("pdf", "1.0.0", true, &[]),
                record("pdf", "1.1.0", false, &[]),
            ],
        )]);
        let lock = crate::project::lockfile::parse(&format!(
            "version = 1\n[[skill]]\nname = \"pdf\"\nversion = \"1.0.0\"\nsource = \"registry+default\"\nchecksum = \"sha256:{}\"\ntree = \"h1:{}\"\n",
            "0".repeat(64),
            "0".repeat(64)
        ))
        .unwrap();
        let kept = resolve(&manifest(&[("pdf", "^1")]), &indexes, Some(&lock), &|_| {
            true
        })
        .unwrap();
        assert_eq!(versions(&kept), ["pdf@1.0.0"]);
        let updated = resolve(&manifest(&[("pdf", "^1")]), &indexes, Some(&lock), &|_| {
            false
        })
        .unwrap();
        assert_eq!(versions(&updated), ["pdf@1.1.0"]);
    }

    #[test]
    fn a_conflict_is_explained_naming_both_sides() {
        let indexes = BTreeMap::from([
            (
                name("pdf"),
                vec![record("pdf", "1.0.0", false, &[("fonts", "^2")])],
            ),
            (name("fonts"), vec![record("fonts", "1.0.0", false, &[])]),
        ]);
        let error = resolve(
            &manifest(&[("pdf", "^1"), ("fonts", "^1")]),
            &indexes,
            None,
            &|_| true,
        )
        .unwrap_err();
        assert!(error.explanation.contains("pdf"), "{}", error.explanation);
        assert!(error.explanation.contains("fonts"), "{}", error.explanation);
    }

    #[test]
    fn an_unknown_name_or_a_range_nothing_matches_is_named_before_resolving() {
        let pdf = name("pdf");
        let unknown = check_requirement(&pdf, &"*".parse().unwrap(), "corp", &[], None);
        assert_eq!(
            unknown.unwrap_err().to_string(),
            "no skill named `pdf` in registry `corp`"
        );
        let published = [
            record("pdf", "2.0.0", true, &[]),
            record("pdf", "1.0.0", false, &[]),
        ];
        let error =
            check_requirement(&pdf, &"^2".parse().unwrap(), "corp", &published, None).unwrap_err();
        assert_eq!(
            error.to_string(),
            "no version of `pdf` in registry `corp` matches `^2`; it has 1.0.0, 2.0.0 (yanked)"
        );
        assert_eq!(
            error.hint(),
            "change the requirement of `pdf` in skills.toml, for example to \"^1.0.0\" (`skillpkg add pdf@^1.0.0`)"
        );
        let json = serde_json::to_value(&error).unwrap();
        assert_eq!(json["kind"], "no-matching-version");
        assert_eq!(json["versions"][1]["yanked"], true);
        // Locked, a yanked version still meets the requirement.
        let locked = "2.0.0".parse().unwrap();
        assert!(
            check_requirement(
                &pdf,
                &"^2".parse().unwrap(),
                "corp",
                &published,
                Some(&locked)
            )
            .is_ok()
        );
    }
}
