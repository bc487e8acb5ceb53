//! The trust policy for skills that come from elsewhere than a registry: a
//! git repository, a discovery index or a tarball URL (docs/manifest.md,
//! "`[policy]` and other sources").
//!
//! Such a source has no publisher signature, no provenance and no
//! publication time skillpkg can check (a commit's date is whatever its
//! author wrote). So a `[policy]` key that asks for one of them cannot be
//! met, and is never passed over in silence: the install stops before
//! anything is fetched, naming the skill, the source, the key and the
//! per-skill way out, `policy-exempt = ["KEY", ...]` in the skill's entry.
//! The same holds for a registry's `allowed-signers` and
//! `require-signatures` when the source's URL is inside that registry.
//!
//! Skills from a folder of the project are the project's own files, which
//! its history reviews: the policy, about what others publish, does not
//! apply to them.

use super::lockfile::Lockfile;
use super::manifest::Manifest;
use super::policy::Trust;
use super::source::Direct;
use crate::client::registries::Registries;
use crate::error::UserError;

/// One rule a source cannot meet.
#[derive(Debug, PartialEq, Eq)]
struct Unmet {
    /// The key, as skills.toml writes it.
    key: &'static str,
    /// Why the source cannot meet it.
    why: String,
    /// Whether `policy-exempt` may name it.
    exemptable: bool,
}

/// Refuses a skill from a git repository, a discovery index or a tarball
/// URL that the policy of `manifest` (or of the registry its URL is in)
/// cannot be met by, unless its entry exempts it from that key.
pub fn check(
    manifest: &Manifest,
    registries: &Registries,
    old: Option<&Lockfile>,
) -> anyhow::Result<()> {
    for (name, source) in &manifest.direct {
        if matches!(source, Direct::Path(_)) {
            continue;
        }
        let exempt = manifest
            .policy_exempt
            .get(name)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let unmet = unmet(manifest, registries, old, name, source);
        let Some(first) = unmet
            .iter()
            .find(|unmet| !(unmet.exemptable && exempt.iter().any(|key| key == unmet.key)))
        else {
            continue;
        };
        let error = UserError::new(format!(
            "`{name}` comes from the {}, {}, so it cannot meet `{}`",
            source.describe(),
            first.why,
            first.key
        ));
        let error = if first.exemptable {
            let keys: Vec<String> = unmet
                .iter()
                .filter(|unmet| unmet.exemptable)
                .map(|unmet| format!("\"{}\"", unmet.key))
                .collect();
            error.with_hint(format!(
                "to take `{name}` from this source anyway, after reviewing its files, add `policy-exempt = [{}]` to its entry in skills.toml; the policy still holds for every other skill",
                keys.join(", ")
            ))
        } else {
            error.with_hint(format!(
                "take `{name}` from the registry itself (`{name} = \"VERSION\"`), where its signature is checked"
            ))
        };
        return Err(error.into());
    }
    Ok(())
}

/// Every rule `source` cannot meet, in the order the error names them.
fn unmet(
    manifest: &Manifest,
    registries: &Registries,
    old: Option<&Lockfile>,
    name: &skillpkg_index::skill::SkillName,
    source: &Direct,
) -> Vec<Unmet> {
    let policy = &manifest.policy;
    let mut unmet = Vec::new();
    let mut push = |key, why: &str, exemptable| {
        unmet.push(Unmet {
            key,
            why: why.to_owned(),
            exemptable,
        });
    };
    if let Some(url) = source_url(source)
        && let Some(spec) = registries.specs().find(|spec| {
            inside(url, spec.index.as_url())
                || spec
                    .mirror
                    .as_ref()
                    .is_some_and(|mirror| inside(url, mirror.as_url()))
        })
    {
        if spec.require_signatures {
            push(
                "require-signatures",
                &format!(
                    "whose files are read as plain files of registry `{}` with no signature checked",
                    spec.name
                ),
                false,
            );
        }
        if spec.allowed_signers.is_some() {
            push(
                "allowed-signers",
                &format!(
                    "whose files are read as plain files of registry `{}` with no signature checked",
                    spec.name
                ),
                true,
            );
        }
    }
    if policy.require_signature {
        push(
            "require-signature",
            "which carries no publisher signature",
            true,
        );
    }
    if policy.require_provenance {
        push("require-provenance", "which carries no provenance", true);
    }
    if policy.minimum_release_age.is_some() {
        push(
            "minimum-release-age",
            "which gives no publication time skillpkg can check",
            true,
        );
    }
    if policy.trust == Trust::NoDowngrade
        && let Some(entry) = old.and_then(|lock| lock.get(name))
        && entry.registry().is_some()
        && (entry.signer.is_some() || entry.provenance == Some(true))
    {
        push(
            "trust",
            "which carries neither the signature nor the provenance the locked registry version had (`trust = \"no-downgrade\"`)",
            true,
        );
    }
    unmet
}

/// The URL a source is read from, when it is one.
fn source_url(source: &Direct) -> Option<&str> {
    match source {
        Direct::Index(url) | Direct::Url(url) => Some(url),
        Direct::Git(git) => Some(&git.url),
        Direct::Path(_) => None,
    }
}

/// Returns true if and only if `url` is `base` or below it (same scheme,
/// host and port, and a path under base's).
fn inside(url: &str, base: &url::Url) -> bool {
    let Ok(url) = url::Url::parse(url) else {
        return false;
    };
    let base_path = base.path().trim_end_matches('/');
    url.scheme() == base.scheme()
        && url.host_str() == base.host_str()
        && url.port_or_known_default() == base.port_or_known_default()
        && (url.path().trim_end_matches('/') == base_path
            || url.path().starts_with(&format!("{base_path}/")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_inside_a_registry_is_told_from_one_beside_it() {
        let base = url::Url::parse("https://skills.corp.example/reg/").unwrap();
        assert!(inside("https://skills.corp.example/reg/", &base));
        assert!(inside(
            "https://skills.corp.example/reg/dl/pdf/1.0.0/pdf-1.0.0.tgz",
            &base
        ));
        assert!(inside("https://SKILLS.corp.example:443/reg/x", &base));
        assert!(!inside("https://skills.corp.example/registry/x", &base));
        assert!(!inside("http://skills.corp.example/reg/x", &base));
        assert!(!inside("https://skills.corp.example.evil/reg/x", &base));
        assert!(!inside("not a url", &base));
    }
}
