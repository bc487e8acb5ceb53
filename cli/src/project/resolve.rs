//! Resolution with pubgrub over the registry's index files.
//!
//! Every version a requirement can pick is known up front (the index files
//! of every name reachable from the manifest), so a requirement becomes the
//! exact set of versions that match it under semver's own rules, and
//! pubgrub's offline provider does the search. Yanked versions are left out,
//! except a locked one, which keeps installing. Locked versions are tried
//! first: resolution changes a locked skill only when it must (or when the
//! user asked to update it).
//!
//! The trust policy of skills.toml (`super::policy`) passes over versions
//! before the search as yanking does, through the `skip` function each
//! entry point takes: when that leaves a requirement nothing, the error
//! names the newest version passed over and why.

use std::collections::{BTreeMap, BTreeSet};

use pubgrub::{
    DefaultStringReporter, OfflineDependencyProvider, PubGrubError, Ranges, Reporter as _,
};
use skillpkg_index::registry::IndexRecord;
use skillpkg_index::skill::SkillName;

use super::lockfile::Lockfile;
use super::manifest::Manifest;
use super::policy::{Lost, Skipped};

/// Why the policy passes over a version, or `None` when it may be chosen.
pub type Skip<'a> = dyn Fn(&IndexRecord) -> Option<Skipped> + 'a;

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
    #[error(
        "no version of `{name}` in registry `{registry}` that matches `{requirement}` meets the policy of skills.toml: {}",
        passed_over[0].skipped.describe(name, &passed_over[0].version)
    )]
    PassedOver {
        name: SkillName,
        registry: String,
        requirement: String,
        /// The versions that match but that the policy passes over, newest
        /// first (never empty).
        passed_over: Vec<PassedOverVersion>,
    },
    #[error("{0}")]
    Downgrade(Box<Downgrade>),
}

/// A version that lost what the locked one had, under `trust =
/// "no-downgrade"`.
#[derive(Debug, thiserror::Error, serde::Serialize)]
#[error("{}", describe_downgrade(name, locked, version, lost))]
pub struct Downgrade {
    pub name: SkillName,
    pub registry: String,
    /// The version skills.lock has.
    pub locked: semver::Version,
    /// The version resolution chose.
    pub version: semver::Version,
    pub lost: Lost,
}

/// A version the policy passes over, and why.
#[derive(Debug, serde::Serialize)]
pub struct PassedOverVersion {
    pub version: semver::Version,
    #[serde(flatten)]
    pub skipped: Skipped,
}

fn describe_downgrade(
    name: &SkillName,
    locked: &semver::Version,
    version: &semver::Version,
    lost: &Lost,
) -> String {
    let what = match lost {
        Lost::Signature { locked_signer } => format!(
            "{name} {version} is not signed, but the locked {name} {locked} was signed by key {locked_signer}"
        ),
        Lost::Provenance => format!(
            "{name} {version} has no provenance that verifies, but the locked {name} {locked} had provenance"
        ),
    };
    format!("{what}; the policy's trust = \"no-downgrade\" refuses the change")
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
            Self::PassedOver {
                name, passed_over, ..
            } => passed_over[0].skipped.hint(name, &passed_over[0].version),
            Self::Downgrade(downgrade) => {
                let Downgrade {
                    name,
                    locked,
                    version,
                    ..
                } = downgrade.as_ref();
                format!(
                    "keep {locked} (`skillpkg add {name}@={locked}`) and ask the publisher why {version} lost it; if you accept it, remove `trust = \"no-downgrade\"` from [policy] in skills.toml"
                )
            }
        }
    }
}

/// Checks each requirement of the manifest against its index (`versions`:
/// what the registry has, empty when it has no such skill), before
/// resolving. `locked` is the version skills.lock has, which satisfies a
/// requirement even when yanked; `skip` is the policy.
pub fn check_requirement(
    name: &SkillName,
    requirement: &semver::VersionReq,
    registry: &str,
    versions: &[IndexRecord],
    locked: Option<&semver::Version>,
    skip: &Skip<'_>,
) -> Result<(), Unmet> {
    if versions.is_empty() {
        return Err(Unmet::NoSuchSkill {
            name: name.clone(),
            registry: registry.to_owned(),
            suggestions: Vec::new(),
        });
    }
    let usable = |record: &&IndexRecord| !record.yanked || Some(&record.vers) == locked;
    let mut matching: Vec<&IndexRecord> = versions
        .iter()
        .filter(usable)
        .filter(|record| requirement.matches(&record.vers))
        .collect();
    matching.sort_by(|a, b| b.vers.cmp(&a.vers));
    let passed_over: Vec<PassedOverVersion> = matching
        .iter()
        .map_while(|record| {
            skip(record).map(|skipped| PassedOverVersion {
                version: record.vers.clone(),
                skipped,
            })
        })
        .collect();
    if passed_over.len() < matching.len() {
        return Ok(());
    }
    if !passed_over.is_empty() {
        return Err(Unmet::PassedOver {
            name: name.clone(),
            registry: registry.to_owned(),
            requirement: requirement.to_string(),
            passed_over,
        });
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
/// `keep` lists the names whose locked version is preferred; `skip` is the
/// policy, which no chosen version breaks.
pub fn resolve(
    manifest: &Manifest,
    indexes: &BTreeMap<SkillName, Vec<IndexRecord>>,
    lock: Option<&Lockfile>,
    keep: &dyn Fn(&SkillName) -> bool,
    skip: &Skip<'_>,
) -> Result<Vec<IndexRecord>, ResolveError> {
    let locked = |name: &SkillName| {
        lock.and_then(|lock| lock.get(name))
            .map(|skill| skill.version.semver().clone())
    };
    let pinned = |name: &SkillName| locked(name).filter(|_| keep(name));
    let result = match attempt(manifest, indexes, &pinned, skip) {
        Ok(resolved) => Ok(resolved),
        // The locked versions may be what conflicts: try again free.
        Err(_) if lock.is_some() => attempt(manifest, indexes, &|_| None, skip),
        Err(error) => Err(error),
    };
    result.map_err(|mut error| {
        error.explanation.push_str(&passed_over_note(indexes, skip));
        error
    })
}

/// Names, for a conflict, the newest version of each name that the policy
/// passed over, and why: pubgrub only sees the versions that were left.
fn passed_over_note(indexes: &BTreeMap<SkillName, Vec<IndexRecord>>, skip: &Skip<'_>) -> String {
    let mut note = String::new();
    for (name, records) in indexes {
        let mut passed: Vec<(&IndexRecord, Skipped)> = records
            .iter()
            .filter(|record| !record.yanked)
            .filter_map(|record| skip(record).map(|skipped| (record, skipped)))
            .collect();
        passed.sort_by(|a, b| b.0.vers.cmp(&a.0.vers));
        let Some((newest, skipped)) = passed.first() else {
            continue;
        };
        if note.is_empty() {
            note.push_str("\nThe policy of skills.toml passed over:");
        }
        note.push_str(&format!("\n  {}", skipped.describe(name, &newest.vers)));
        if passed.len() > 1 {
            note.push_str(&format!(" (and {} older)", passed.len() - 1));
        }
    }
    note
}

fn attempt(
    manifest: &Manifest,
    indexes: &BTreeMap<SkillName, Vec<IndexRecord>>,
    pinned: &dyn Fn(&SkillName) -> Option<semver::Version>,
    skip: &Skip<'_>,
) -> Result<Vec<IndexRecord>, ResolveError> {
    // The versions each name may take: not yanked (unless locked), only
    // the pinned one when pinned, and none the policy passes over.
    let mut available: BTreeMap<&SkillName, BTreeSet<semver::Version>> = BTreeMap::new();
    for (name, records) in indexes {
        let versions = records
            .iter()
            // A yanked version stays only where it is locked and kept.
            .filter(|record| !record.yanked || pinned(name).as_ref() == Some(&record.vers))
            .filter(|record| skip(record).is_none())
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
        let resolved = resolve(
            &manifest(&[("pdf", "^1")]),
            &indexes,
            None,
            &|_| true,
            &|_| None,
        )
        .unwrap();
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
        let kept = resolve(
            &manifest(&[("pdf", "^1")]),
            &indexes,
            Some(&lock),
            &|_| true,
            &|_| None,
        )
        .unwrap();
        assert_eq!(versions(&kept), ["pdf@1.0.0"]);
        let updated = resolve(
            &manifest(&[("pdf", "^1")]),
            &indexes,
            Some(&lock),
            &|_| false,
            &|_| None,
        )
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
            &|_| None,
        )
        .unwrap_err();
        assert!(error.explanation.contains("pdf"), "{}", error.explanation);
        assert!(error.explanation.contains("fonts"), "{}", error.explanation);
    }

    #[test]
    fn an_unknown_name_or_a_range_nothing_matches_is_named_before_resolving() {
        let pdf = name("pdf");
        let unknown = check_requirement(&pdf, &"*".parse().unwrap(), "corp", &[], None, &|_| None);
        assert_eq!(
            unknown.unwrap_err().to_string(),
            "no skill named `pdf` in registry `corp`"
        );
        let published = [
            record("pdf", "2.0.0", true, &[]),
            record("pdf", "1.0.0", false, &[]),
        ];
        let error = check_requirement(
            &pdf,
            &"^2".parse().unwrap(),
            "corp",
            &published,
            None,
            &|_| None,
        )
        .unwrap_err();
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
                Some(&locked),
                &|_| None,
            )
            .is_ok()
        );
    }

    /// `skill@version`, signed by `signer` (or not), published at `published`.
    fn record_at(skill: &str, version: &str, signer: Option<&str>, published: &str) -> IndexRecord {
        let mut record = record(skill, version, false, &[]);
        record.signer = signer.map(str::to_owned);
        record.published = published.parse().unwrap();
        record
    }

    fn judge<'a>(
        policy: &'a crate::project::policy::Policy,
        lock: Option<&'a Lockfile>,
        facts: &'a crate::project::policy::ProvenanceFacts,
        allowed: &'a crate::project::policy::AllowedSigners<'a, 'a>,
    ) -> crate::project::policy::Judge<'a, 'a> {
        static NO_KEYS: std::sync::LazyLock<crate::project::policy::SignerKeys> =
            std::sync::LazyLock::new(Default::default);
        judge_with_keys(policy, lock, facts, allowed, &NO_KEYS)
    }

    fn judge_with_keys<'a>(
        policy: &'a crate::project::policy::Policy,
        lock: Option<&'a Lockfile>,
        facts: &'a crate::project::policy::ProvenanceFacts,
        allowed: &'a crate::project::policy::AllowedSigners<'a, 'a>,
        signer_keys: &'a crate::project::policy::SignerKeys,
    ) -> crate::project::policy::Judge<'a, 'a> {
        crate::project::policy::Judge {
            policy,
            now: "2026-03-10T12:00:00Z".parse().unwrap(),
            lock,
            allowed_signers: allowed,
            signer_keys,
            provenance: facts,
        }
    }

    #[test]
    fn a_version_younger_than_the_minimum_release_age_is_passed_over_unless_locked() {
        use crate::project::policy::{Policy, ProvenanceFacts};
        let policy = Policy {
            minimum_release_age: Some("3d".parse().unwrap()),
            ..Policy::default()
        };
        let facts = ProvenanceFacts::new();
        let no_signers = |_: &SkillName| None;
        let indexes = BTreeMap::from([(
            name("pdf"),
            vec![
                record_at("pdf", "1.2.0", None, "2026-03-01T00:00:00Z"),
                // Published 5 hours and a minute before the judge's now.
                record_at("pdf", "1.3.0", None, "2026-03-10T06:59:00Z"),
            ],
        )]);
        let fresh = judge(&policy, None, &facts, &no_signers);
        let resolved = resolve(
            &manifest(&[("pdf", "^1")]),
            &indexes,
            None,
            &|_| true,
            &|record| fresh.judge(record),
        )
        .unwrap();
        assert_eq!(versions(&resolved), ["pdf@1.2.0"]);

        // Nothing else meets `^1.3`: the error names 1.3.0 and its age.
        let error = check_requirement(
            &name("pdf"),
            &"^1.3".parse().unwrap(),
            "corp",
            &indexes[&name("pdf")],
            None,
            &|record| fresh.judge(record),
        )
        .unwrap_err();
        assert_eq!(
            error.to_string(),
            "no version of `pdf` in registry `corp` that matches `^1.3` meets the policy of skills.toml: pdf 1.3.0 was published 5 hours ago; the policy's minimum-release-age is 3d"
        );
        assert_eq!(
            error.hint(),
            "wait until 2026-03-13T06:59:00Z, when 1.3.0 is old enough, or require an older version in skills.toml (`skillpkg add pdf@=VERSION`)"
        );
        let json = serde_json::to_value(&error).unwrap();
        assert_eq!(json["kind"], "passed-over");
        assert_eq!(json["passed_over"][0]["reason"], "too-young");
        assert_eq!(json["passed_over"][0]["published"], "2026-03-10T06:59:00Z");

        // Locked, the young version stays: the lock already chose it.
        let lock = crate::project::lockfile::parse(&format!(
            "version = 1\n[[skill]]\nname = \"pdf\"\nversion = \"1.3.0\"\nsource = \"registry:default\"\nchecksum = \"sha256:{}\"\ntree = \"h1:x\"\n",
            "0".repeat(64)
        ))
        .unwrap();
        let locked = judge(&policy, Some(&lock), &facts, &no_signers);
        let resolved = resolve(
            &manifest(&[("pdf", "^1")]),
            &indexes,
            Some(&lock),
            &|_| true,
            &|record| locked.judge(record),
        )
        .unwrap();
        assert_eq!(versions(&resolved), ["pdf@1.3.0"]);
    }

    #[test]
    fn unsigned_other_signers_and_missing_provenance_are_passed_over() {
        use crate::project::policy::{
            Policy, ProvenanceFact, ProvenanceFacts, SignerKeys, Skipped,
        };
        use skillpkg_index::signing::{SecretKey, SignerKey};
        let publisher = SecretKey::generate().unwrap();
        let stranger = SecretKey::generate().unwrap();
        let publisher_id = publisher.id().to_string();
        let stranger_id = stranger.id().to_string();
        let allowed: Vec<SignerKey> = vec![SignerKey::of(&publisher.public())];
        let corp = |_: &SkillName| Some(("corp", allowed.as_slice()));
        // The registry's keys of `pdf`: the publisher's and a stranger's.
        let keys = SignerKeys::from([(name("pdf"), vec![publisher.public(), stranger.public()])]);
        let none = |_: &SkillName| None;
        let facts = ProvenanceFacts::from([
            (
                (name("pdf"), "1.0.0".parse().unwrap()),
                ProvenanceFact::Missing,
            ),
            (
                (name("pdf"), "1.1.0".parse().unwrap()),
                ProvenanceFact::Verified,
            ),
        ]);
        let old = "2026-01-01T00:00:00Z";
        let unsigned = record_at("pdf", "1.0.0", None, old);
        let signed = record_at("pdf", "1.1.0", Some(&publisher_id), old);
        let other = record_at("pdf", "1.2.0", Some(&stranger_id), old);

        let signatures = Policy {
            require_signature: true,
            ..Policy::default()
        };
        let by_policy = judge(&signatures, None, &facts, &none);
        assert_eq!(
            by_policy.judge(&unsigned),
            Some(Skipped::Unsigned { registry: None })
        );
        assert_eq!(by_policy.judge(&other), None);

        let plain = Policy::default();
        let by_registry = judge_with_keys(&plain, None, &facts, &corp, &keys);
        assert_eq!(by_registry.judge(&signed), None);
        let refused = by_registry.judge(&other).unwrap();
        assert_eq!(
            refused.describe(&name("pdf"), &other.vers),
            format!(
                "pdf 1.2.0 is signed by key {stranger_id} ({}), which `allowed-signers` of registry `corp` does not list ({})",
                SignerKey::of(&stranger.public()),
                allowed[0]
            )
        );
        // An id the keys do not list is no allowed key either.
        let no_keys = SignerKeys::new();
        let blind = judge_with_keys(&plain, None, &facts, &corp, &no_keys);
        assert!(matches!(
            blind.judge(&signed),
            Some(Skipped::OtherSigner { signer, .. }) if signer.contains("whose key the registry does not serve")
        ));
        // The stranger's key made to carry the publisher's id: the id
        // alone would pass it; its key does not.
        let forged = stranger.with_id(publisher.id());
        let forged_keys = SignerKeys::from([(name("pdf"), vec![forged.public()])]);
        let fooled = judge_with_keys(&plain, None, &facts, &corp, &forged_keys);
        assert!(matches!(
            fooled.judge(&signed),
            Some(Skipped::OtherSigner { .. })
        ));
        // Both under one id: the keys do not say which signed.
        let both = SignerKeys::from([(name("pdf"), vec![publisher.public(), forged.public()])]);
        let unsure = judge_with_keys(&plain, None, &facts, &corp, &both);
        assert!(matches!(
            unsure.judge(&signed),
            Some(Skipped::OtherSigner { .. })
        ));
        assert!(matches!(
            by_registry.judge(&unsigned),
            Some(Skipped::Unsigned { registry: Some(registry) }) if registry == "corp"
        ));

        let provenance = Policy {
            require_provenance: true,
            ..Policy::default()
        };
        let by_provenance = judge(&provenance, None, &facts, &none);
        assert_eq!(by_provenance.judge(&unsigned), Some(Skipped::NoProvenance));
        assert_eq!(by_provenance.judge(&signed), None);
        // Not looked up yet: it may be chosen, and is looked up then.
        assert_eq!(by_provenance.judge(&other), None);
    }

    #[test]
    fn losing_the_signature_or_the_provenance_of_the_locked_version_is_a_downgrade() {
        use crate::project::policy::{Lost, ProvenanceFact, check_downgrade};
        let lock = crate::project::lockfile::parse(&format!(
            "version = 1\n[[skill]]\nname = \"pdf\"\nversion = \"1.0.0\"\nsource = \"registry:default\"\nchecksum = \"sha256:{}\"\ntree = \"h1:x\"\nsigner = \"A448895874B90297\"\nprovenance = true\n",
            "0".repeat(64)
        ))
        .unwrap();
        let entry = &lock.skills[0];
        let old = "2026-01-01T00:00:00Z";
        let verified = ProvenanceFact::Verified;
        let unsigned = record_at("pdf", "1.1.0", None, old);
        assert_eq!(
            check_downgrade(entry, &unsigned, Some(&verified), None),
            Some(Lost::Signature {
                locked_signer: "A448895874B90297".into()
            })
        );
        let signed = record_at("pdf", "1.1.0", Some("A448895874B90297"), old);
        assert_eq!(
            check_downgrade(
                entry,
                &signed,
                Some(&verified),
                Some(&ProvenanceFact::Missing)
            ),
            Some(Lost::Provenance)
        );
        assert_eq!(
            check_downgrade(entry, &signed, Some(&verified), Some(&verified)),
            None
        );
        // The locked version itself, whatever is known of it now.
        let same = record_at("pdf", "1.0.0", None, old);
        assert_eq!(check_downgrade(entry, &same, Some(&verified), None), None);
        let error = Unmet::Downgrade(Box::new(Downgrade {
            name: name("pdf"),
            registry: "default".into(),
            locked: "1.0.0".parse().unwrap(),
            version: "1.1.0".parse().unwrap(),
            lost: Lost::Provenance,
        }));
        assert_eq!(
            error.to_string(),
            "pdf 1.1.0 has no provenance that verifies, but the locked pdf 1.0.0 had provenance; the policy's trust = \"no-downgrade\" refuses the change"
        );
    }
}
