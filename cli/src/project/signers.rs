//! Pinning signers by key (docs/lockfile.md, `signer`).
//!
//! An index line names its signer by key id, which whoever makes a key
//! chooses. Before a lock is written, every signer it holds by id is
//! turned into the key that id stands for in the skill's
//! `keys/<name>.json`, and that key is what is compared with the pin the
//! lock had:
//!
//! ```text
//! index line     "signer": "A448895874B90297"          a hint
//! keys file      A448895874B90297 -> RWSX...            exactly one key, or refused
//! skills.lock    signer = "ed25519:d75a98..."           the pin: a new key is a signer change
//! ```
//!
//! A lock written before keys were pinned holds ids. Such a pin is honoured
//! one last time: the id is looked up the same way, the locked archive is
//! checked to be signed by that key (from the cache, or downloaded), and the
//! lock is rewritten with the key, with a note. Nothing here trusts the
//! keys file beyond that first use: once a key is pinned, archives are
//! verified with it alone (`crate::client::fetch`).

use std::collections::BTreeMap;

use skillpkg_index::signing::{KeyId, PublicKey, SignerKey, SignerPin};
use skillpkg_index::skill::SkillName;

use super::lockfile::{LockedSkill, Lockfile};
use super::policy::SignerKeys;
use crate::client::fetch::registry_keys;
use crate::client::registries::OpenRegistries;
use crate::client::{Cache, Expected, Source, fetch_verified};
use crate::error::UserError;

/// How to pin.
#[derive(Clone, Copy, Debug, Default)]
pub struct Pinning {
    /// Accept a key other than the one the old lock pins.
    pub allow_signer_change: bool,
}

/// Replaces each signer `lock` holds by id (its registry's skills: what
/// an index line names, or a lock written before keys were pinned) by the
/// key the skill's keys file lists under that id, refusing a key that is
/// not the one `old` pins unless `allow_signer_change`. Keys files already
/// read are in `keys`, and those read here are added to it. Notes about
/// upgraded pins go to `notes`.
pub async fn pin_keys(
    lock: &mut Lockfile,
    old: Option<&Lockfile>,
    opened: &mut OpenRegistries<'_>,
    keys: &mut SignerKeys,
    pinning: Pinning,
    notes: &mut Vec<String>,
) -> anyhow::Result<()> {
    for entry in &mut lock.skills {
        let Some(SignerPin::Id(id)) = entry.signer else {
            continue;
        };
        let Some(registry) = entry.registry().map(str::to_owned) else {
            continue;
        };
        let old_entry = old.and_then(|lock| lock.get(&entry.name));
        // The same archive the old lock pinned by key: that key stays, and
        // the fetch verifies the archive with it alone.
        if let Some(old_entry) = old_entry
            && old_entry.checksum == entry.checksum
            && let Some(SignerPin::Key(pinned)) = old_entry.signer
        {
            entry.signer = Some(SignerPin::Key(pinned));
            continue;
        }
        if !keys.contains_key(&entry.name) {
            let served = registry_keys(opened.open(&registry).await?, &entry.name).await?;
            keys.insert(entry.name.clone(), served);
        }
        let key = key_for(
            &entry.name,
            entry.version.semver(),
            id,
            &keys[&entry.name],
            &registry,
        )?;
        let label = format!("{}@{}", entry.name, entry.version);
        match old_entry.and_then(|old| old.signer) {
            Some(SignerPin::Key(pinned)) if pinned != key && !pinning.allow_signer_change => {
                return Err(signer_changed(
                    &entry.name,
                    &pinned.to_string(),
                    &label,
                    id,
                    &key,
                ));
            }
            Some(SignerPin::Id(pinned)) if pinned != id && !pinning.allow_signer_change => {
                return Err(signer_changed(
                    &entry.name,
                    &format!("key {pinned}"),
                    &label,
                    id,
                    &key,
                ));
            }
            Some(SignerPin::Id(_)) => {
                // The last use of a pin by id: the archive the old lock
                // has must be signed by the key the id stands for now.
                if let Some(old_entry) = old_entry {
                    check_signed_by(old_entry, &key, opened, &registry).await?;
                }
                notes.push(format!(
                    "skills.lock pinned the signer of `{}` by key id {id} only; it now pins the key itself, {key}, as registry `{registry}` serves it for that id (review this change to skills.lock)",
                    entry.name
                ));
            }
            _ => {}
        }
        if let Some(allowed) = opened
            .registries()
            .find(&registry)
            .and_then(|spec| spec.allowed_signers.as_deref())
            && !allowed.contains(&key)
        {
            return Err(UserError::new(format!(
                "{label} is signed by {key} (key id {id}), which `allowed-signers` of registry `{registry}` does not list"
            ))
            .with_hint(format!(
                "ask the publisher of `{}` for a version signed by an allowed key, or add this key to `allowed-signers` if you trust it",
                entry.name
            ))
            .into());
        }
        entry.signer = Some(SignerPin::Key(key));
    }
    Ok(())
}

/// Returns the names of `lock`'s registry skills that are pinned by key id
/// only.
pub fn pinned_by_id(lock: &Lockfile) -> Vec<&SkillName> {
    lock.skills
        .iter()
        .filter(|entry| entry.registry().is_some())
        .filter(|entry| matches!(entry.signer, Some(SignerPin::Id(_))))
        .map(|entry| &entry.name)
        .collect()
}

/// Returns the one key of `keys` (the skill's keys file) that carries
/// `id`: none, or two under one id, is the registry's fault.
fn key_for(
    name: &SkillName,
    version: &semver::Version,
    id: KeyId,
    keys: &[PublicKey],
    registry: &str,
) -> anyhow::Result<SignerKey> {
    let with_id: BTreeMap<SignerKey, &PublicKey> = keys
        .iter()
        .filter(|key| key.id() == id)
        .map(|key| (SignerKey::of(key), key))
        .collect();
    let mut found = with_id.keys();
    match (found.next(), found.next()) {
        (Some(key), None) => Ok(*key),
        (None, _) => Err(UserError::new(format!(
            "{name}@{version} is signed by key id {id}, but registry `{registry}` lists no key with that id in keys/{name}.json"
        ))
        .with_hint("the registry's keys and index disagree: ask its operator, or try again later")
        .into()),
        (Some(_), Some(_)) => Err(UserError::new(format!(
            "registry `{registry}` lists {} different keys with id {id} for `{name}`, so the id does not say which one signed {name}@{version}",
            with_id.len()
        ))
        .with_hint("a key id names one key; this registry serves keys that say otherwise: do not trust it for this skill, and tell its operator")
        .into()),
    }
}

fn signer_changed(
    name: &SkillName,
    pinned: &str,
    label: &str,
    id: KeyId,
    key: &SignerKey,
) -> anyhow::Error {
    UserError::new(format!(
        "the signer of `{name}` changed: skills.lock pins {pinned}, but {label} is signed by {key} (key id {id})"
    ))
    .with_hint("if the publisher rotated keys, confirm it with them, then pass --allow-signer-change")
    .into()
}

/// Checks that the archive `entry` locks is signed by `key`: from the
/// cache when it has it, else downloaded from `registry` (and cached).
async fn check_signed_by(
    entry: &LockedSkill,
    key: &SignerKey,
    opened: &mut OpenRegistries<'_>,
    registry: &str,
) -> anyhow::Result<()> {
    let cache = Cache::open()?;
    let expected = Expected {
        name: &entry.name,
        version: entry.version.semver(),
        checksum: entry.require_checksum()?,
        signer: Some(SignerPin::Key(*key)),
        pinned_by: "the key its id stands for",
    };
    if crate::client::fetch::cached(&cache, &expected).is_some() {
        return Ok(());
    }
    let registry = opened.open(registry).await?;
    let source = Source {
        cache: Some(&cache),
        registry: Some(registry),
        keys: None,
        offline: false,
    };
    fetch_verified(source, &expected).await.map(|_| ())
}
