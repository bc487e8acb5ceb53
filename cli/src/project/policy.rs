//! The trust policy of skills.toml: which versions resolution may choose,
//! decided from the index line, the lock and the provenance file, before any
//! archive is downloaded (docs/manifest.md, `[policy]`).
//!
//! ```toml
//! [policy]
//! minimum-release-age = "3d"     # pass over versions published less than 3 days ago
//! trust = "no-downgrade"         # refuse a version that lost the signature or provenance the locked one had
//! require-signature = true       # pass over unsigned versions
//! require-provenance = true      # pass over versions without provenance that verifies
//!
//! [registries.corp]
//! allowed-signers = ["ed25519:d75a98..."]  # pass over versions signed by other keys
//! ```
//!
//! Two kinds of rule. The *passing* rules (`minimum-release-age`,
//! `require-signature`, `require-provenance`, `allowed-signers`) take
//! versions out of what resolution may choose ([`Judge::judge`]): an older
//! version that meets them is chosen instead, and when none is left the
//! error names the newest version passed over and why. The version
//! skills.lock has is exempt from `minimum-release-age` only: the lock
//! already chose it. The *refusing* rule (`no-downgrade`) compares the
//! version chosen with the locked one ([`check_downgrade`]), since passing
//! over the newer version would keep the old one without a word.

use std::collections::BTreeMap;
use std::path::Path;
use std::str::FromStr;

use jiff::{SignedDuration, Span, SpanRelativeTo, Timestamp};
use skillpkg_index::confusable;
use skillpkg_index::registry::{IndexRecord, SearchEntry};
use skillpkg_index::signing::{KeyId, PublicKey, SignerKey, SignerPin};
use skillpkg_index::skill::SkillName;

use super::lockfile::{LockedSkill, Lockfile};
use crate::error::UserError;

/// The `[policy]` (and registry) keys a skill's `policy-exempt` may name.
pub const EXEMPTABLE: [&str; 5] = [
    "minimum-release-age",
    "require-signature",
    "require-provenance",
    "trust",
    "allowed-signers",
];

/// The keys of `[policy]`.
const KEYS: [&str; 4] = [
    "minimum-release-age",
    "trust",
    "require-signature",
    "require-provenance",
];

/// `[policy]`, read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Policy {
    /// Versions younger than this are passed over.
    pub minimum_release_age: Option<ReleaseAge>,
    pub trust: Trust,
    /// Unsigned versions are passed over.
    pub require_signature: bool,
    /// Versions without provenance that verifies are passed over.
    pub require_provenance: bool,
}

/// `trust`: what a version must keep of the locked one's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Trust {
    /// The default: the lock pins the signer of each skill on first use.
    #[default]
    FirstUse,
    /// As `FirstUse`, and a version that lost the signature or the
    /// provenance the locked one had is refused.
    NoDowngrade,
}

/// `minimum-release-age`: a duration in jiff's friendly format (`3d`,
/// `12h`, `1w`, `2d 6h`) or ISO 8601 (`P3D`), a day being 24 hours.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReleaseAge {
    /// As written, for messages.
    pub text: String,
    pub duration: SignedDuration,
}

/// Why a `minimum-release-age` is not a duration.
#[derive(Debug, thiserror::Error)]
pub enum ReleaseAgeError {
    #[error("`{0}` is not a duration")]
    Syntax(String, #[source] jiff::Error),
    #[error("`{0}` uses months or years, whose length varies; use weeks, days or hours")]
    Calendar(String),
    #[error("`{0}` is negative")]
    Negative(String),
}

impl FromStr for ReleaseAge {
    type Err = ReleaseAgeError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let span: Span = text
            .parse()
            .map_err(|error| ReleaseAgeError::Syntax(text.to_owned(), error))?;
        if span.get_years() != 0 || span.get_months() != 0 {
            return Err(ReleaseAgeError::Calendar(text.to_owned()));
        }
        let duration = span
            .to_duration(SpanRelativeTo::days_are_24_hours())
            .map_err(|error| ReleaseAgeError::Syntax(text.to_owned(), error))?;
        if duration.is_negative() {
            return Err(ReleaseAgeError::Negative(text.to_owned()));
        }
        Ok(Self {
            text: text.to_owned(),
            duration,
        })
    }
}

impl Policy {
    /// Returns true if and only if the policy needs to know which versions
    /// have provenance: then each version locked gets `provenance` recorded.
    pub fn needs_provenance(&self) -> bool {
        self.require_provenance || self.trust == Trust::NoDowngrade
    }
}

/// Reads `[policy]` of the manifest at `path`. Read by hand rather than by
/// serde so that a misspelt key is an error that names it: a
/// `require-signatures` silently ignored would be no policy at all.
pub fn parse_table(value: &toml::Value, path: &Path) -> anyhow::Result<Policy> {
    let invalid = |problem: String| -> anyhow::Error {
        UserError::new(format!("`[policy]` in {} {problem}", path.display()))
            .with_hint(format!(
                "its keys are {}; see docs/manifest.md",
                KEYS.map(|key| format!("`{key}`")).join(", ")
            ))
            .into()
    };
    let toml::Value::Table(table) = value else {
        return Err(invalid("is not a table".into()));
    };
    if let Some(key) = table.keys().find(|key| !KEYS.contains(&key.as_str())) {
        return Err(invalid(format!("has an unknown key `{key}`")));
    }
    let boolean = |key: &str| match table.get(key) {
        None => Ok(false),
        Some(toml::Value::Boolean(value)) => Ok(*value),
        Some(_) => Err(invalid(format!("has a `{key}` that is not true or false"))),
    };
    let minimum_release_age = match table.get("minimum-release-age") {
        None => None,
        Some(toml::Value::String(text)) => Some(text.parse::<ReleaseAge>().map_err(|error| {
            UserError::new(format!(
                "the `minimum-release-age` of `[policy]` in {} is not a duration: {error}",
                path.display()
            ))
            .with_hint("write it like \"3d\", \"12h\", \"1w\" or \"2d 12h\"")
        })?),
        Some(_) => {
            return Err(invalid(
                "has a `minimum-release-age` that is not a string like \"3d\"".into(),
            ));
        }
    };
    let trust = match table.get("trust") {
        None => Trust::FirstUse,
        Some(toml::Value::String(text)) if text == "first-use" => Trust::FirstUse,
        Some(toml::Value::String(text)) if text == "no-downgrade" => Trust::NoDowngrade,
        Some(other) => {
            return Err(invalid(format!(
                "has `trust = {other}`; it is \"first-use\" (the default) or \"no-downgrade\""
            )));
        }
    };
    Ok(Policy {
        minimum_release_age,
        trust,
        require_signature: boolean("require-signature")?,
        require_provenance: boolean("require-provenance")?,
    })
}

/// What is known of a version's provenance file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProvenanceFact {
    /// It verifies: signed by the version's signer, for its archive.
    Verified,
    /// The registry has none.
    Missing,
    /// It does not verify, for this reason.
    Invalid(String),
}

impl ProvenanceFact {
    /// Returns true if and only if the version has provenance that verifies.
    pub fn verified(&self) -> bool {
        matches!(self, Self::Verified)
    }
}

/// What is known of versions' provenance, by name and version: from the
/// lock, then from the registry as resolution needs it.
pub type ProvenanceFacts = BTreeMap<(SkillName, semver::Version), ProvenanceFact>;

/// The facts skills.lock records: each entry whose `provenance` is known.
pub fn facts_from_lock(lock: Option<&Lockfile>) -> ProvenanceFacts {
    lock.iter()
        .flat_map(|lock| &lock.skills)
        .filter_map(|entry| {
            let fact = match entry.provenance? {
                true => ProvenanceFact::Verified,
                false => ProvenanceFact::Missing,
            };
            Some(((entry.name.clone(), entry.version.semver().clone()), fact))
        })
        .collect()
}

/// Why the policy passes over a version.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "reason", rename_all = "kebab-case")]
pub enum Skipped {
    /// Younger than `minimum-release-age`.
    TooYoung {
        /// When it was published (RFC 3339).
        published: String,
        /// How long ago, in words: `5 hours ago`.
        age: String,
        minimum_release_age: String,
        /// When it is old enough (RFC 3339).
        of_age: String,
    },
    /// Not signed, and `require-signature` or a registry's
    /// `allowed-signers` wants a signature.
    Unsigned {
        /// The registry whose `allowed-signers` refuse it; `None` for
        /// `require-signature`.
        registry: Option<String>,
    },
    /// Signed by a key that the registry's `allowed-signers` do not list.
    OtherSigner {
        signer: String,
        registry: String,
        allowed: Vec<String>,
    },
    /// skills.lock pins the signer by key id only (a lock written before
    /// keys were pinned), which `allowed-signers` cannot check.
    PinnedById { id: String, registry: String },
    /// No provenance, and `require-provenance`.
    NoProvenance,
    /// Provenance that does not verify, and `require-provenance`.
    InvalidProvenance { why: String },
    /// skills.lock does not record whether the locked version has
    /// provenance, and `require-provenance` (only with `--locked`, which
    /// cannot look it up).
    ProvenanceNotRecorded,
}

impl Skipped {
    /// Says why `name` `version` is passed over, in a sentence without its
    /// end: "pdf 1.3.0 was published 5 hours ago; the policy's
    /// minimum-release-age is 3d".
    pub fn describe(&self, name: &SkillName, version: &semver::Version) -> String {
        match self {
            Self::TooYoung {
                age,
                minimum_release_age,
                ..
            } => format!(
                "{name} {version} was published {age}; the policy's minimum-release-age is {minimum_release_age}"
            ),
            Self::Unsigned { registry: None } => format!(
                "{name} {version} is not signed; the policy's require-signature passes over unsigned versions"
            ),
            Self::Unsigned {
                registry: Some(registry),
            } => format!(
                "{name} {version} is not signed; `allowed-signers` of registry `{registry}` takes only signed versions"
            ),
            Self::OtherSigner {
                signer,
                registry,
                allowed,
            } => format!(
                "{name} {version} is signed by key {signer}, which `allowed-signers` of registry `{registry}` does not list ({})",
                allowed.join(", ")
            ),
            Self::PinnedById { id, registry } => format!(
                "skills.lock pins the signer of {name} {version} by key id {id} only, which `allowed-signers` of registry `{registry}` cannot check: an id is chosen by whoever makes the key"
            ),
            Self::NoProvenance => format!(
                "{name} {version} has no provenance; the policy's require-provenance passes over versions without it"
            ),
            Self::InvalidProvenance { why } => format!(
                "{name} {version} has provenance that does not verify ({why}); the policy's require-provenance passes over it"
            ),
            Self::ProvenanceNotRecorded => format!(
                "skills.lock does not record whether {name} {version} has provenance, which the policy's require-provenance needs"
            ),
        }
    }

    /// What to do when every version a requirement of `name` could take
    /// was passed over, this one (`version`) the newest.
    pub fn hint(&self, name: &SkillName, version: &semver::Version) -> String {
        match self {
            Self::TooYoung { of_age, .. } => format!(
                "wait until {of_age}, when {version} is old enough, or require an older version in skills.toml (`skillpkg add {name}@=VERSION`)"
            ),
            Self::Unsigned { .. } | Self::OtherSigner { .. } => format!(
                "ask the publisher of `{name}` for a version signed by an allowed key, or change the policy in skills.toml if you trust this one"
            ),
            Self::NoProvenance | Self::InvalidProvenance { .. } => format!(
                "ask the publisher of `{name}` to publish with `skillpkg publish --provenance`, or remove `require-provenance` from [policy] in skills.toml"
            ),
            Self::ProvenanceNotRecorded => {
                "run `skillpkg install` without --locked once, to check it and record it in skills.lock".to_owned()
            }
            Self::PinnedById { .. } => {
                "run `skillpkg install` without --locked once, to pin the signer's key in skills.lock".to_owned()
            }
        }
    }
}

/// Returns `duration` in words, in its largest unit, rounded down: `5
/// hours`, `1 day`, `42 seconds`.
pub fn describe_duration(duration: SignedDuration) -> String {
    let seconds = duration.as_secs().max(0);
    let (count, unit) = match seconds {
        0..60 => (seconds, "second"),
        60..3600 => (seconds / 60, "minute"),
        3600..86_400 => (seconds / 3600, "hour"),
        _ => (seconds / 86_400, "day"),
    };
    if count == 1 {
        format!("1 {unit}")
    } else {
        format!("{count} {unit}s")
    }
}

/// Returns the registry a name comes from and its `allowed-signers`, when
/// it has some.
pub type AllowedSigners<'a, 's> = dyn Fn(&SkillName) -> Option<(&'s str, &'s [SignerKey])> + 'a;

/// The keys a registry serves for a skill (`keys/<name>.json`), read for
/// the skills whose registry has `allowed-signers`: an index line names its
/// signer by id, and the policy decides by key.
pub type SignerKeys = BTreeMap<SkillName, Vec<PublicKey>>;

/// Applies the passing rules to versions.
pub struct Judge<'a, 's> {
    pub policy: &'a Policy,
    /// The time ages are measured to.
    pub now: Timestamp,
    /// The lock resolution starts from: its versions are exempt from
    /// `minimum-release-age`.
    pub lock: Option<&'a Lockfile>,
    /// The registry each name comes from, and its `allowed-signers`.
    pub allowed_signers: &'a AllowedSigners<'a, 's>,
    /// The keys of the skills whose registry has `allowed-signers`.
    pub signer_keys: &'a SignerKeys,
    /// What is known of provenance; a version not in it passes
    /// `require-provenance` until it is looked up.
    pub provenance: &'a ProvenanceFacts,
}

impl std::fmt::Debug for Judge<'_, '_> {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Judge")
            .field("policy", self.policy)
            .field("now", &self.now)
            .finish_non_exhaustive()
    }
}

impl Judge<'_, '_> {
    /// Returns why the policy passes over `record`, or `None` when it may
    /// be chosen.
    pub fn judge(&self, record: &IndexRecord) -> Option<Skipped> {
        if let Some(skipped) = self.judge_signer(&record.name, record.signer_id()) {
            return Some(skipped);
        }
        let locked = self
            .lock
            .and_then(|lock| lock.get(&record.name))
            .is_some_and(|entry| entry.version == record.vers);
        if let Some(minimum) = &self.policy.minimum_release_age
            && !locked
        {
            let age = self.now.duration_since(record.published);
            if age < minimum.duration {
                return Some(too_young(record.published, age, minimum));
            }
        }
        if self.policy.require_provenance {
            match self
                .provenance
                .get(&(record.name.clone(), record.vers.clone()))
            {
                Some(ProvenanceFact::Missing) => return Some(Skipped::NoProvenance),
                Some(ProvenanceFact::Invalid(why)) => {
                    return Some(Skipped::InvalidProvenance { why: why.clone() });
                }
                Some(ProvenanceFact::Verified) | None => {}
            }
        }
        None
    }

    /// Returns why the policy refuses a locked version, or `None` when it
    /// meets it. Age does not count: the lock already chose it.
    pub fn judge_locked(&self, entry: &LockedSkill) -> Option<Skipped> {
        if let Some((registry, allowed)) = (self.allowed_signers)(&entry.name) {
            match &entry.signer {
                None => {
                    return Some(Skipped::Unsigned {
                        registry: Some(registry.to_owned()),
                    });
                }
                Some(SignerPin::Id(id)) => {
                    return Some(Skipped::PinnedById {
                        id: id.to_string(),
                        registry: registry.to_owned(),
                    });
                }
                Some(SignerPin::Key(key)) if !allowed.contains(key) => {
                    return Some(Skipped::OtherSigner {
                        signer: key.to_string(),
                        registry: registry.to_owned(),
                        allowed: allowed.iter().map(ToString::to_string).collect(),
                    });
                }
                Some(SignerPin::Key(_)) => {}
            }
        }
        if self.policy.require_signature && entry.signer.is_none() {
            return Some(Skipped::Unsigned { registry: None });
        }
        if self.policy.require_provenance {
            return match entry.provenance {
                Some(true) => None,
                Some(false) => Some(Skipped::NoProvenance),
                None => Some(Skipped::ProvenanceNotRecorded),
            };
        }
        None
    }

    /// Judges the signer an index line names by id: under `allowed-signers`
    /// the id is looked up in the skill's keys, and the version passes only
    /// when every key carrying that id is an allowed one (a keys file that
    /// lists an allowed key and another under one id is not trusted to say
    /// which signed).
    fn judge_signer(&self, name: &SkillName, signer: Option<KeyId>) -> Option<Skipped> {
        if let Some((registry, allowed)) = (self.allowed_signers)(name) {
            let Some(signer) = signer else {
                return Some(Skipped::Unsigned {
                    registry: Some(registry.to_owned()),
                });
            };
            let keys: Vec<&PublicKey> = self
                .signer_keys
                .get(name)
                .into_iter()
                .flatten()
                .filter(|key| key.id() == signer)
                .collect();
            let other = match keys.as_slice() {
                [] => Some(format!("{signer}, whose key the registry does not serve")),
                keys => keys
                    .iter()
                    .map(|key| SignerKey::of(key))
                    .find(|key| !allowed.contains(key))
                    .map(|key| format!("{signer} ({key})")),
            };
            if let Some(other) = other {
                return Some(Skipped::OtherSigner {
                    signer: other,
                    registry: registry.to_owned(),
                    allowed: allowed.iter().map(ToString::to_string).collect(),
                });
            }
        }
        if self.policy.require_signature && signer.is_none() {
            return Some(Skipped::Unsigned { registry: None });
        }
        None
    }
}

fn too_young(published: Timestamp, age: SignedDuration, minimum: &ReleaseAge) -> Skipped {
    let age = if age.is_negative() {
        // A registry's clock ahead of this one, or a lying index line.
        "in the future".to_owned()
    } else {
        format!("{} ago", describe_duration(age))
    };
    let of_age = published
        .checked_add(minimum.duration)
        .map_or_else(|_| "never".to_owned(), rfc3339);
    Skipped::TooYoung {
        published: rfc3339(published),
        age,
        minimum_release_age: minimum.text.clone(),
        of_age,
    }
}

fn rfc3339(time: Timestamp) -> String {
    time.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// What a version lost of the locked one's, under `trust = "no-downgrade"`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Lost {
    /// The locked version was signed (by this key); the new one is not.
    Signature { locked_signer: String },
    /// The locked version had provenance that verified; the new one has
    /// none, or none that verifies.
    Provenance,
}

/// Refuses `record` in place of the locked `entry` when it lost the
/// signature or the provenance `entry` had: `locked_provenance` is what is
/// known of the locked version's provenance, `provenance` of the new one's.
/// The same version is never a downgrade of itself.
pub fn check_downgrade(
    entry: &LockedSkill,
    record: &IndexRecord,
    locked_provenance: Option<&ProvenanceFact>,
    provenance: Option<&ProvenanceFact>,
) -> Option<Lost> {
    if entry.version == record.vers {
        return None;
    }
    if let (Some(signer), None) = (&entry.signer, &record.signer) {
        return Some(Lost::Signature {
            locked_signer: signer.to_string(),
        });
    }
    let had = locked_provenance.is_some_and(ProvenanceFact::verified);
    let has = provenance.is_some_and(ProvenanceFact::verified);
    (had && !has).then_some(Lost::Provenance)
}

/// Returns a warning when `name` is one edit from, or looks like, the name
/// of a skill in `index` (a registry's search index) with more downloads:
/// the user may have mistyped a popular name into a squatter's.
pub fn lookalike_warning(name: &SkillName, index: &[SearchEntry]) -> Option<String> {
    let own = index
        .iter()
        .find(|entry| &entry.name == name)
        .map_or(0, |entry| entry.downloads);
    let (entry, likeness) = index
        .iter()
        .filter(|entry| entry.downloads > own)
        .filter_map(|entry| {
            confusable::likeness(name.as_str(), entry.name.as_str())
                .map(|likeness| (entry, likeness))
        })
        .max_by(|a, b| {
            a.0.downloads
                .cmp(&b.0.downloads)
                .then(b.0.name.cmp(&a.0.name))
        })?;
    Some(format!(
        "`{name}` {} `{}`, which has {} downloads to its {own}: check that `{name}` is the skill you meant",
        likeness.phrase(),
        entry.name,
        entry.downloads
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(text: &str) -> anyhow::Result<Policy> {
        let value: toml::Value = toml::from_str(text).unwrap();
        parse_table(&value, Path::new("skills.toml"))
    }

    #[test]
    fn release_ages_are_friendly_durations_with_24_hour_days() {
        let hours = |text: &str| text.parse::<ReleaseAge>().unwrap().duration.as_hours();
        assert_eq!(hours("3d"), 72);
        assert_eq!(hours("12h"), 12);
        assert_eq!(hours("1w"), 168);
        assert_eq!(hours("2d 6h"), 54);
        assert_eq!(hours("P3D"), 72);
        assert_eq!(hours("0s"), 0);
        for (text, problem) in [
            ("1mo", "months or years"),
            ("1y", "months or years"),
            ("-3d", "negative"),
            ("3 dayz", "not a duration"),
            ("", "not a duration"),
            ("3", "not a duration"),
        ] {
            let error = text.parse::<ReleaseAge>().unwrap_err().to_string();
            assert!(error.contains(problem), "{text}: {error}");
        }
    }

    #[test]
    fn the_policy_table_is_read_and_misspelt_keys_are_named() {
        let read = policy(
            "minimum-release-age = \"3d\"\ntrust = \"no-downgrade\"\nrequire-signature = true\nrequire-provenance = true\n",
        )
        .unwrap();
        assert_eq!(read.minimum_release_age.unwrap().text, "3d");
        assert_eq!(read.trust, Trust::NoDowngrade);
        assert!(read.require_signature && read.require_provenance);
        assert_eq!(policy("").unwrap(), Policy::default());

        let error = policy("require-signatures = true\n")
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("unknown key `require-signatures`"),
            "{error}"
        );
        let error = policy("trust = \"paranoid\"\n").unwrap_err().to_string();
        assert!(error.contains("\"no-downgrade\""), "{error}");
        let error = policy("minimum-release-age = 3\n").unwrap_err().to_string();
        assert!(error.contains("not a string"), "{error}");
        let error = policy("minimum-release-age = \"3 months\"\n")
            .unwrap_err()
            .to_string();
        assert!(error.contains("`minimum-release-age`"), "{error}");
    }

    #[test]
    fn ages_are_told_in_their_largest_unit() {
        let words = |seconds| describe_duration(SignedDuration::from_secs(seconds));
        assert_eq!(words(0), "0 seconds");
        assert_eq!(words(1), "1 second");
        assert_eq!(words(125), "2 minutes");
        assert_eq!(words(5 * 3600 + 59 * 60), "5 hours");
        assert_eq!(words(86_400), "1 day");
        assert_eq!(words(10 * 86_400 + 3600), "10 days");
    }

    #[test]
    fn a_name_one_edit_from_a_more_downloaded_one_is_warned_about() {
        let entry = |name: &str, downloads| SearchEntry {
            name: name.parse().unwrap(),
            version: "1.0.0".parse().unwrap(),
            description: String::new(),
            versions: 1,
            downloads,
        };
        let index = [
            entry("pdf-processing", 250),
            entry("pdf-procesing", 3),
            entry("pdf-tools", 900),
        ];
        let warning = lookalike_warning(&"pdf-procesing".parse().unwrap(), &index).unwrap();
        assert_eq!(
            warning,
            "`pdf-procesing` is one edit from `pdf-processing`, which has 250 downloads to its 3: check that `pdf-procesing` is the skill you meant"
        );
        // The popular one is not warned about for its less popular neighbour.
        assert_eq!(
            lookalike_warning(&"pdf-processing".parse().unwrap(), &index),
            None
        );
        assert_eq!(
            lookalike_warning(&"csv-tools".parse().unwrap(), &index),
            None
        );
        // A search index without counts (an older registry) warns of nothing.
        let uncounted = [entry("pdf-processing", 0), entry("pdf-procesing", 0)];
        assert_eq!(
            lookalike_warning(&"pdf-procesing".parse().unwrap(), &uncounted),
            None
        );
    }
}
