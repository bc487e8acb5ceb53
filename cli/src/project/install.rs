//! Installing: from the manifest (through the lock) to verified folders in
//! every target.
//!
//! 1. Take the project lock (`.skillpkg-lock`): a second skillpkg in the same
//!    project waits.
//! 2. Use the lockfile when it satisfies the manifest and its policy,
//!    fetching no index file; otherwise resolve (not with
//!    `--locked`/`--offline`) under the policy (`super::policy`). Each skill
//!    comes from its registry (`registry = "NAME"` in the manifest, else the
//!    default one), each dependency from the registry of the skill that
//!    depends on it; the lock records the registry's name.
//! 3. For each locked version, through a bounded pool:
//!    [`crate::client::fetch_verified`], the archive from the
//!    content-addressed cache or downloaded, its sha256 checked against the
//!    lock and its signature (prehashed Ed25519, trusted comment naming
//!    exactly this name, version and sha256) against the pinned signer,
//!    before anything is unpacked.
//! 4. Unpack once (hardened unpacker), check the tree hash against the lock
//!    and that the tree is the skill it claims to be (a `SKILL.md` naming
//!    it), copy into each target beside the final folder, swap it into place.
//! 5. Remove what skillpkg installed and the lock no longer lists; write the
//!    target records. The new lockfile goes back to the caller, which
//!    commits it together with the manifest ([`super::commit`]).
//!
//! A failure at any step leaves the installed folders and the lockfile as
//! they were: new folders appear only by rename, and the lockfile is written
//! last. A folder is replaced or removed only if skillpkg installed it and
//! its files are still what it installed (or with `--force`): a record
//! cloned with a repository cannot hand skillpkg someone else's folder.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use fs4::fs_std::FileExt as _;
use futures_util::{StreamExt as _, TryStreamExt as _};
use skillpkg_index::registry::IndexRecord;
use skillpkg_index::signing::{SignerKey, SignerPin};
use skillpkg_index::skill::SkillName;

use super::indexes::{Fetched, fetch_indexes};
use super::lockfile::{self, LockedSkill, Lockfile, registry_source};
use super::manifest::Manifest;
use super::plan;
use super::policy::{
    self, Judge, ProvenanceFact, ProvenanceFacts, SignerKeys, Skipped, Trust, check_downgrade,
};
use super::resolve;
use super::signers::{self, Pinning};
use super::source::{self, Direct};
use super::sources::{self, DirectLock};
use super::targets::{InstalledSkill, Target};
use crate::client::fetch::check_provenance;
use crate::client::registries::{OpenRegistries, Registries, RegistrySpec};
use crate::client::{Cache, Expected, Source, VerifiedArchive, fetch_verified};
use crate::error::UserError;
use skillpkg_index::audit::{AuditOptions, Severity, SkillAudit};

/// How many archives are fetched at once.
const PARALLEL_DOWNLOADS: usize = 8;

/// How to install.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Fail if the lockfile would change.
    pub locked: bool,
    /// Use only the cache.
    pub offline: bool,
    /// Replace folders skillpkg did not install.
    pub force: bool,
    pub allow_signer_change: bool,
    /// Accept unsigned versions of every skill.
    pub allow_unsigned: bool,
    /// Re-resolve these names (all, when empty) to their newest versions.
    pub update: Option<Vec<SkillName>>,
    /// Resolve and write skills.lock, install nothing.
    pub lock_only: bool,
    /// Names to warn about when they are one edit from (or look like) the
    /// name of a more downloaded skill of their registry (`add`).
    pub lookalikes: Vec<SkillName>,
    /// Install these skills even when the audit finds `high` risks.
    pub allow_risk: Vec<SkillName>,
    /// Keep one copy of each skill, in the first target, and put symlinks
    /// to it in the others (`link = true` in skills.toml).
    pub link: bool,
}

/// What an install did.
#[derive(Debug, Default, serde::Serialize)]
pub struct Report {
    /// (skill, version, target) newly installed or replaced.
    pub installed: Vec<(String, String, String)>,
    /// (skill, target) of `installed` put as a symlink to the first
    /// target's copy.
    pub linked: Vec<(String, String)>,
    /// (skill, target) removed.
    pub removed: Vec<(String, String)>,
    /// Installed folders whose files were changed by hand, put back: the
    /// skill, the target and the files that differed.
    pub restored: Vec<Restored>,
    /// How many (skill, target) pairs were already in place.
    pub unchanged: usize,
    pub lock_changed: bool,
    pub warnings: Vec<String>,
    /// The audit of each skill fetched for this install, before it was
    /// put in place.
    pub audited: Vec<Audited>,
    /// The lockfile the install ended with, for the caller to commit when
    /// `lock_changed`.
    #[serde(skip)]
    pub lock: Lockfile,
}

impl Report {
    /// Returns true if and only if `name` was put into `target` as a
    /// symlink.
    pub fn is_linked(&self, name: &str, target: &str) -> bool {
        self.linked
            .iter()
            .any(|(skill, linked)| skill == name && linked == target)
    }
}

/// The audit verdict of one skill this install fetched.
#[derive(Debug, serde::Serialize)]
pub struct Audited {
    pub name: String,
    pub version: String,
    pub verdict: skillpkg_index::audit::Verdict,
    pub rules: Vec<String>,
    /// Findings accepted by `[audit] allow` in skills.toml.
    pub suppressed: usize,
}

/// A folder put back as the lock has it.
#[derive(Debug, serde::Serialize)]
pub struct Restored {
    pub name: String,
    pub target: String,
    /// `SKILL.md (changed)`, `notes.md (added)`, `run.sh (removed)`.
    pub files: Vec<String>,
}

/// Hears about the progress of an install (the library never prints; the
/// command shows a progress bar on a terminal).
pub trait Reporter: Sync {
    /// `count` archives are about to be downloaded or read from the cache.
    fn fetching(&self, _count: usize) {}
    /// `count` more are done.
    fn fetched(&self, _count: usize) {}
    /// All are done.
    fn finished(&self) {}
}

/// Reports nothing.
#[derive(Debug)]
pub struct Silent;

impl Reporter for Silent {}

/// Holds the project lock while alive.
#[derive(Debug)]
pub struct ProjectLock {
    _file: fs_err::File,
}

/// Takes the project lock, waiting if another skillpkg has it (after
/// calling `waiting`, for the command to say so).
pub fn lock_project(root: &Path, waiting: impl FnOnce()) -> anyhow::Result<ProjectLock> {
    use fs_err::os::unix::fs::OpenOptionsExt as _;
    let path = root.join(".skillpkg-lock");
    // Never through a symlink: a repository that commits `.skillpkg-lock`
    // as a link to a path of its choosing would have skillpkg create that
    // file.
    let file = fs_err::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(&path)
        .map_err(|error| {
            UserError::new(format!("cannot open the project lock {}", path.display()))
                .with_hint("if it is a symlink, delete it: skillpkg creates it as an empty file")
                .with_source(error)
        })?;
    if !file.file().try_lock_exclusive().unwrap_or(false) {
        waiting();
        file.file()
            .lock_exclusive()
            .with_context(|| format!("cannot lock {}", path.display()))?;
    }
    Ok(ProjectLock { _file: file })
}

/// Returns the name of the registry the manifest takes `requirement` from.
fn registry_of<'a>(
    requirement: &'a super::manifest::Requirement,
    registries: &'a Registries,
) -> &'a str {
    requirement
        .registry
        .as_deref()
        .unwrap_or(registries.default_name())
}

/// The entries of the lock that satisfy the manifest's skills from
/// registries (each requirement met from its registry, each dependency
/// locked from the registry of the skill that depends on it), or `None`
/// when it does not.
fn registry_part<'lock>(
    lock: &'lock Lockfile,
    manifest: &Manifest,
    registries: &Registries,
) -> Option<Vec<&'lock LockedSkill>> {
    let mut reachable = std::collections::BTreeSet::new();
    let mut pending: Vec<(&SkillName, &str)> = manifest
        .skills
        .iter()
        .map(|(name, requirement)| (name, registry_of(requirement, registries)))
        .collect();
    while let Some((name, registry)) = pending.pop() {
        let entry = lock.get(name)?;
        if entry.registry() != Some(registry) {
            return None;
        }
        if reachable.insert(name.clone()) {
            pending.extend(
                entry
                    .dependencies
                    .iter()
                    .map(|dependency| (dependency, registry)),
            );
        }
    }
    let met = manifest.skills.iter().all(|(name, requirement)| {
        lock.get(name)
            .is_some_and(|entry| requirement.requirement.matches(entry.version.semver()))
    });
    met.then(|| {
        lock.skills
            .iter()
            .filter(|entry| reachable.contains(&entry.name))
            .collect()
    })
}

/// Refuses what the registries' `require-signatures` forbids: a manifest
/// entry that allows its skill unsigned, and an unsigned locked skill.
fn check_signature_policy(
    manifest: &Manifest,
    lock: Option<&Lockfile>,
    registries: &Registries,
) -> anyhow::Result<()> {
    let requires = |registry: &str| {
        registries
            .find(registry)
            .is_some_and(|spec| spec.require_signatures)
    };
    for (name, requirement) in &manifest.skills {
        let registry = registry_of(requirement, registries);
        if requirement.allow_unsigned && requires(registry) {
            return Err(UserError::new(format!(
                "`{name}` has `allow-unsigned = true` in skills.toml, but registry `{registry}` requires signatures"
            ))
            .with_hint(format!(
                "remove `allow-unsigned` from the entry of `{name}`: every skill from `{registry}` must be signed (`require-signatures = true` in `[registries.{registry}]`)"
            ))
            .into());
        }
    }
    for entry in lock.iter().flat_map(|lock| &lock.skills) {
        if let Some(registry) = entry.registry().filter(|registry| requires(registry))
            && entry.signer.is_none()
        {
            return Err(unsigned_refused(
                &format!("{}@{}", entry.name, entry.version),
                registry,
            ));
        }
    }
    Ok(())
}

fn unsigned_refused(label: &str, registry: &str) -> anyhow::Error {
    UserError::new(format!(
        "{label} is not signed, and registry `{registry}` requires signatures"
    ))
    .with_hint(format!(
        "`require-signatures = true` in `[registries.{registry}]` refuses unsigned skills whatever `allow-unsigned` says: ask the publisher for a signed version"
    ))
    .into()
}

/// Installs the project at `root` into `targets`.
pub async fn install(
    root: &Path,
    manifest: &Manifest,
    registries: &Registries,
    targets: &[Target],
    options: &Options,
    reporter: &dyn Reporter,
) -> anyhow::Result<Report> {
    let old_lock = lockfile::read(root)?;
    let mut report = Report::default();
    for (name, requirement) in &manifest.skills {
        if let Some(registry) = &requirement.registry {
            registries.get(registry).with_context(|| {
                format!("skills.toml takes `{name}` from registry `{registry}`")
            })?;
        }
    }
    check_signature_policy(manifest, None, registries)?;
    // A source that cannot meet the policy stops the install before
    // anything is fetched.
    super::source_policy::check(manifest, registries, old_lock.as_ref())?;
    if let Some(names) = &options.update {
        check_update_names(names, manifest, old_lock.as_ref())?;
    }
    // Skills from folders are read (validated, packed) first: a bad one
    // stops the install before any registry is asked.
    let direct = sources::lock_direct(
        root,
        manifest,
        old_lock.as_ref(),
        options.update.as_deref(),
        options.offline,
        options.locked,
        targets,
    )
    .await?;
    report.warnings.extend(direct.warnings.iter().cloned());
    // With --locked only what the lock pins is read (or nothing at all,
    // when the lock does not satisfy the manifest).
    let mut opened = if options.locked {
        OpenRegistries::locked(registries)
    } else {
        OpenRegistries::new(registries)
    };

    let now = jiff::Timestamp::now();
    // Locked versions the policy refuses (it may have changed since the
    // lock was written) are chosen again, as if not locked.
    let mut refused = lock_refusals(manifest, old_lock.as_ref(), registries, now);
    // A pin by key id under `allowed-signers` is upgraded to a pin by key
    // (and the key checked against them) below, keeping its version;
    // --locked cannot upgrade it, so there it stays refused.
    if !options.locked {
        refused.retain(|(_, skipped)| !matches!(skipped, Skipped::PinnedById { .. }));
    }
    // The keys files read to decide signers, each once.
    let mut signer_keys = SignerKeys::new();
    // The lock's entries for the skills from registries, when they still
    // satisfy skills.toml and nothing asks to choose again.
    let registry_locked = old_lock
        .as_ref()
        .filter(|_| options.update.is_none() && refused.is_empty())
        .and_then(|lock| Some((lock, registry_part(lock, manifest, registries)?)));
    let lock = match registry_locked {
        Some((lock, part))
            if direct.satisfied_by(lock)
                && part.len() + direct.entries.len() == lock.skills.len() =>
        {
            tracing::info!("skills.lock satisfies skills.toml: nothing to resolve");
            lock.clone()
        }
        // Only skills from elsewhere than a registry changed: the
        // registries' part of the lock stands, nothing is resolved (and
        // nothing asked).
        Some((_, part)) if !options.locked => {
            let mut skills: Vec<LockedSkill> = part.into_iter().cloned().collect();
            skills.extend(direct.entries.iter().cloned());
            Lockfile { skills }
        }
        _ => {
            if let Some((entry, skipped)) = refused.first()
                && (options.locked || options.offline)
            {
                return Err(UserError::new(format!(
            "skills.lock has {}@{}, which the policy of skills.toml refuses: {}",
            entry.name,
            entry.version,
            skipped.describe(&entry.name, entry.version.semver())
        ))
        .with_hint(
            "run `skillpkg install` without --locked or --offline, to choose versions the policy accepts, and commit skills.lock",
        )
        .into());
            }
            if let Some(entry) = old_lock
                .as_ref()
                .and_then(|lock| direct.changed_since(lock))
                .filter(|_| options.locked)
            {
                return Err(UserError::new(format!(
            "the files of `{}` ({}) changed since skills.lock was written, and --locked forbids changing it",
            entry.name, entry.source
        ))
        .with_hint(
            "run `skillpkg install` without --locked, and commit the new skills.lock",
        )
        .into());
            }
            if options.locked {
                return Err(UserError::new(
                    "skills.lock does not match skills.toml, and --locked forbids changing it",
                )
                .with_hint(
                    "run `skillpkg install` without --locked, and commit the new skills.lock",
                )
                .into());
            }
            if options.offline && !manifest.skills.is_empty() {
                return Err(UserError::new("skills.lock does not match skills.toml, and resolving needs the registry's index")
            .with_hint("run without --offline once, to update skills.lock")
            .into());
            }
            let mut lock = if manifest.skills.is_empty() {
                Lockfile::default()
            } else {
                resolve_registry_skills(
                    &mut opened,
                    manifest,
                    registries,
                    old_lock.as_ref(),
                    &refused,
                    options,
                    now,
                    &mut signer_keys,
                    &mut report,
                )
                .await?
            };
            if let Some(entry) = direct
                .entries
                .iter()
                .find(|entry| lock.get(&entry.name).is_some())
            {
                return Err(UserError::new(format!(
            "`{}` is taken from `{}` in skills.toml, but a skill from a registry depends on a skill of that name",
            entry.name, entry.source
        ))
        .with_hint("a skill from a registry brings its dependencies from that registry: rename one of them, or take both from the registry")
        .into());
            }
            lock.skills.extend(direct.entries.iter().cloned());
            lock
        }
    };
    // Every signer the lock holds by id (from an index line, or a lock
    // written before keys were pinned) becomes the key it stands for,
    // compared with the key the old lock pins.
    let mut lock = lock;
    if options.locked || options.offline {
        let by_id = signers::pinned_by_id(&lock);
        if !by_id.is_empty() {
            report.warnings.push(format!(
                "skills.lock pins the signer of {} by key id only, which another key can carry; run `skillpkg install` without --locked or --offline once, to pin the keys",
                by_id
                    .iter()
                    .map(|name| format!("`{name}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    } else {
        signers::pin_keys(
            &mut lock,
            old_lock.as_ref(),
            &mut opened,
            &mut signer_keys,
            Pinning {
                allow_signer_change: options.allow_signer_change,
            },
            &mut report.warnings,
        )
        .await?;
    }
    finish_install(
        manifest, registries, targets, options, reporter, opened, old_lock, lock, direct, report,
    )
    .await
}

/// Resolves the skills of skills.toml that come from registries, under the
/// policy, into lock entries.
#[allow(clippy::too_many_arguments)]
async fn resolve_registry_skills(
    opened: &mut OpenRegistries<'_>,
    manifest: &Manifest,
    registries: &Registries,
    old_lock: Option<&Lockfile>,
    refused: &[(LockedSkill, Skipped)],
    options: &Options,
    now: jiff::Timestamp,
    signer_keys: &mut SignerKeys,
    report: &mut Report,
) -> anyhow::Result<Lockfile> {
    tracing::info!("resolving the skills of skills.toml from their registries");
    let fetched = fetch_indexes(opened, manifest, old_lock).await?;
    let keep = |name: &SkillName| {
        let kept = match &options.update {
            None => true,
            Some(names) => !names.is_empty() && !names.contains(name),
        };
        kept && !refused.iter().any(|(entry, _)| &entry.name == name)
    };
    let resolution = resolve_with_policy(
        opened,
        manifest,
        &fetched,
        old_lock,
        &keep,
        now,
        signer_keys,
    )
    .await?;
    new_lock(
        &resolution,
        &fetched.registries,
        manifest,
        registries,
        old_lock,
        options,
        report,
    )
}

/// Installs `lock`, the lock the install ends with, into the targets.
#[allow(clippy::too_many_arguments)]
async fn finish_install(
    manifest: &Manifest,
    registries: &Registries,
    targets: &[Target],
    options: &Options,
    reporter: &dyn Reporter,
    mut opened: OpenRegistries<'_>,
    old_lock: Option<Lockfile>,
    lock: Lockfile,
    direct: DirectLock,
    mut report: Report,
) -> anyhow::Result<Report> {
    check_signature_policy(manifest, Some(&lock), registries)?;
    warn_lookalikes(&options.lookalikes, &lock, &opened, &mut report).await;

    if options.lock_only {
        report.lock_changed = old_lock.as_ref() != Some(&lock);
        report.lock = lock;
        return Ok(report);
    }
    let cache = Cache::open()?;
    // The plan: what each target needs, decided from the lock, the
    // records and what is on disk, and refused (before anything changes)
    // where a folder is not skillpkg's to replace.
    let mut observed = Vec::new();
    let links = link_paths(targets, options.link)?;
    for (target, link_to) in targets.iter().zip(links) {
        let state = target.state()?;
        let (disk, stamps) = plan::observe(&target.dir, &lock, &state)?;
        observed.push(plan::Observed {
            name: target.name.clone(),
            dir: target.dir.clone(),
            state,
            disk,
            stamps,
            link_to,
        });
    }
    let plans = plan::plan(&lock, &observed, options.force)?;
    for (target, plan) in targets.iter().zip(&plans) {
        tracing::info!(
            target = %target.name,
            put = plan.put.len(),
            unchanged = plan.unchanged,
            remove = plan.remove.len(),
            "plan"
        );
        for put in &plan.put {
            tracing::debug!(target = %target.name, skill = %put.entry.name, why = ?put.why, "put");
        }
    }
    // Every archive fetched and verified, and unpacked into a temporary
    // folder inside each target, before any skill folder changes: a
    // download, checksum or signature failure changes nothing.
    // A symlink needs no archive: it points at the first target's copy.
    let mut needed: Vec<&LockedSkill> = plans
        .iter()
        .flat_map(|plan| plan.put.iter())
        .filter(|put| put.link.is_none())
        .map(|put| put.entry)
        .collect();
    needed.sort_by(|a, b| a.name.cmp(&b.name));
    needed.dedup_by(|a, b| a.name == b.name);
    // Skills from folders are packed already; the others come from their
    // registries.
    let (direct_needed, needed): (Vec<&LockedSkill>, Vec<&LockedSkill>) =
        needed.into_iter().partition(|entry| entry.is_direct());
    let mut packed = direct.packed;
    let mut archives: BTreeMap<SkillName, VerifiedArchive> = BTreeMap::new();
    for entry in direct_needed {
        let skill = match packed.remove(&entry.name) {
            Some(skill) => skill,
            // A source kept as the lock pins it: fetched now.
            None => fetch_pinned(manifest, entry, options.offline).await?,
        };
        archives.insert(entry.name.clone(), VerifiedArchive::packed_here(skill));
    }
    // Each registry is opened only if one of its archives is not cached.
    if !options.offline {
        for entry in &needed {
            let registry = entry.require_registry()?;
            if opened.get(registry).is_none() && !cache.has(&entry.require_checksum()?) {
                opened.open(registry).await.with_context(|| {
                    format!(
                        "skills.lock takes {}@{} from registry `{registry}`",
                        entry.name, entry.version
                    )
                })?;
            }
        }
    }
    // A bounded pool: a slow archive holds up no other.
    reporter.fetching(needed.len());
    let fetched: Vec<(SkillName, VerifiedArchive)> =
        futures_util::stream::iter(needed.iter().map(|entry| {
            let source = Source {
                cache: Some(&cache),
                registry: entry.registry().and_then(|name| opened.get(name)),
                keys: None,
                offline: options.offline,
            };
            async move {
                let archive = fetch_verified(source, &expected(entry)?).await?;
                reporter.fetched(1);
                anyhow::Ok((entry.name.clone(), archive))
            }
        }))
        .buffer_unordered(PARALLEL_DOWNLOADS)
        .try_collect()
        .await?;
    archives.extend(fetched);
    reporter.finished();
    let (staged, audits) = stage(
        targets,
        &plans,
        &archives,
        &manifest.audit_allow,
        &mut report.warnings,
    )?;
    let verdicts = judge(&audits, &lock, old_lock.as_ref(), options, &mut report)?;
    for (((target, observed), plan), staged) in targets.iter().zip(observed).zip(&plans).zip(staged)
    {
        commit_target(
            target,
            observed.state,
            &observed.stamps,
            plan,
            staged,
            &mut report,
        )?;
    }
    drop(plans);
    let mut lock = lock;
    for entry in &mut lock.skills {
        if let Some(verdict) = verdicts.get(&entry.name) {
            entry.audit = Some(verdict.clone());
        }
    }
    report.lock_changed = old_lock.as_ref() != Some(&lock);
    report.lock = lock;
    Ok(report)
}

/// Per target, the skills staged for it.
type StagedTargets = Vec<BTreeMap<SkillName, Staged>>;

/// A skill staged beside its target folder, ready to be renamed into
/// place.
struct Staged {
    holder: Holder,
    /// For a restore: the files that differed from the archive.
    changed: Vec<String>,
    /// The symlink's text, when the skill is staged as a link.
    link: Option<String>,
}

/// What is renamed into place; removed if the install stops first.
enum Holder {
    Folder(tempfile::TempDir),
    Link(tempfile::TempPath),
}

impl Holder {
    /// Keeps it, to be renamed into place.
    fn keep(self) -> anyhow::Result<PathBuf> {
        Ok(match self {
            Holder::Folder(dir) => dir.keep(),
            Holder::Link(path) => path.keep()?,
        })
    }
}

/// Stages every skill the plans put: each archive is unpacked once (the
/// hardened unpacker, then the tree hash and the skill's identity
/// checked), straight into a temporary folder inside the first target that
/// needs it, and copied from there for the others. A skill put as a link
/// is staged as a symlink beside the target's folders; where the file
/// system refuses one, as a copy of the first target's folder, with a
/// warning.
fn stage(
    targets: &[Target],
    plans: &[plan::TargetPlan<'_>],
    archives: &BTreeMap<SkillName, VerifiedArchive>,
    allows: &[skillpkg_index::audit::Allow],
    warnings: &mut Vec<String>,
) -> anyhow::Result<(StagedTargets, BTreeMap<SkillName, SkillAudit>)> {
    let mut audits = BTreeMap::new();
    let mut first: BTreeMap<SkillName, (PathBuf, Vec<skillpkg_index::archive::FileDigest>)> =
        BTreeMap::new();
    let mut staged = Vec::new();
    for (target, plan) in targets.iter().zip(plans) {
        let mut prepared = BTreeMap::new();
        if !plan.put.is_empty() {
            fs_err::create_dir_all(&target.dir)?;
        }
        for put in &plan.put {
            let entry = put.entry;
            if let Some(text) = &put.link {
                let staged = match stage_link(&target.dir, &entry.name, text) {
                    Ok(path) => Staged {
                        holder: Holder::Link(path),
                        changed: Vec::new(),
                        link: Some(text.clone()),
                    },
                    Err(error) => {
                        warnings.push(format!(
                            "cannot link {} in {} to {} ({error}): copied it instead",
                            entry.name,
                            target.dir.display(),
                            targets[0].dir.display()
                        ));
                        let copy = first
                            .get(&entry.name)
                            .map(|(source, _)| source.clone())
                            .unwrap_or_else(|| targets[0].dir.join(entry.name.as_str()));
                        Staged {
                            holder: Holder::Folder(stage_copy(&target.dir, &copy, entry)?),
                            changed: Vec::new(),
                            link: None,
                        }
                    }
                };
                prepared.insert(entry.name.clone(), staged);
                continue;
            }
            // The staging folder is the skill's folder itself, renamed
            // into place at commit.
            let holder = tempfile::Builder::new()
                .prefix(&format!(".skillpkg-new-{}-", entry.name))
                .tempdir_in(&target.dir)?;
            let destination = holder.path().to_owned();
            let digests = match first.get(&entry.name) {
                Some((source, digests)) => {
                    copy_tree(source, &destination)?;
                    digests
                }
                None => {
                    let files = archives[&entry.name].unpack_into_empty(&destination).map_err(|error| {
                        UserError::new(format!("cannot unpack {}@{}", entry.name, entry.version))
                            .with_hint("the registry serves an archive that skillpkg refuses to unpack; nothing was installed; report it to the registry's operator or the skill's publisher")
                            .with_source(error)
                    })?;
                    if !files.tree_is(&entry.tree) {
                        return Err(UserError::new(format!(
                            "{}@{}: the archive's files have the tree hash {}, but skills.lock says {}",
                            entry.name, entry.version, files.tree, entry.tree
                        ))
                        .into());
                    }
                    check_is_the_skill(&destination, entry)?;
                    // The files are audited here, whatever the registry
                    // said: it may be old, lenient or hostile.
                    let mut audited =
                        skillpkg_index::audit::audit_folder(&destination, &AuditOptions::default())
                            .with_context(|| {
                                format!("cannot audit {}@{}", entry.name, entry.version)
                            })?;
                    audited.suppress(Some(entry.name.as_str()), allows);
                    audits.insert(entry.name.clone(), audited);
                    let digests = files.digests();
                    &first
                        .entry(entry.name.clone())
                        .or_insert((destination.clone(), digests))
                        .1
                }
            };
            let changed = match &put.why {
                plan::Why::Restore { files, other } => plan::changed_files(files, other, digests),
                _ => Vec::new(),
            };
            prepared.insert(
                entry.name.clone(),
                Staged {
                    holder: Holder::Folder(holder),
                    changed,
                    link: None,
                },
            );
        }
        staged.push(prepared);
    }
    Ok((staged, audits))
}

/// Judges the audits of the fetched skills: a `high` verdict refuses the
/// install (nothing has been put in place yet) unless `--allow-risk` names
/// the skill or the lock already records that very verdict for that very
/// archive (accepted before, in a reviewed lock). Returns the verdicts to
/// record in the lock: none under `--locked`, which changes no line of it.
fn judge(
    audits: &BTreeMap<SkillName, SkillAudit>,
    lock: &Lockfile,
    old_lock: Option<&Lockfile>,
    options: &Options,
    report: &mut Report,
) -> anyhow::Result<BTreeMap<SkillName, skillpkg_index::audit::Summary>> {
    let mut refused = Vec::new();
    let mut verdicts = BTreeMap::new();
    for entry in &lock.skills {
        let Some(audited) = audits.get(&entry.name) else {
            continue;
        };
        let summary = audited.summary();
        if let Some(registry) = entry
            .audit
            .as_ref()
            .filter(|registry| registry.verdict != summary.verdict)
        {
            report.warnings.push(format!(
                "{}@{}: the registry's audit said {}, skillpkg's own audit of the files says {}",
                entry.name, entry.version, registry.verdict, summary.verdict
            ));
        }
        let accepted_before = old_lock
            .and_then(|old| old.get(&entry.name))
            .filter(|old| old.checksum == entry.checksum && old.tree == entry.tree)
            .and_then(|old| old.audit.as_ref())
            .is_some_and(|old| {
                old.verdict == summary.verdict
                    && summary.rules.iter().all(|rule| old.rules.contains(rule))
            });
        if summary.verdict.reaches(Severity::High)
            && !options.allow_risk.contains(&entry.name)
            && !accepted_before
        {
            refused.push((entry.name.clone(), entry.version.clone(), audited));
        }
        report.audited.push(Audited {
            name: entry.name.to_string(),
            version: entry.version.to_string(),
            verdict: summary.verdict,
            rules: summary.rules.clone(),
            suppressed: audited.suppressed.len(),
        });
        if !options.locked {
            verdicts.insert(entry.name.clone(), summary);
        }
    }
    if refused.is_empty() {
        return Ok(verdicts);
    }
    let reasons: Vec<super::collection::Refusal> = refused
        .iter()
        .map(|(name, version, audited)| {
            let findings: Vec<String> = audited
                .findings
                .iter()
                .filter(|finding| finding.severity == Severity::High)
                .map(|finding| {
                    let place = finding.line.map_or(finding.file.clone(), |line| {
                        format!("{}:{line}", finding.file)
                    });
                    format!("{place}: {} [{}]", finding.message, finding.rule)
                })
                .collect();
            super::collection::Refusal {
                skill: name.to_string(),
                reason: format!(
                    "{name}@{version} has high-risk findings: {}",
                    findings.join(", ")
                ),
                fix: Some(format!(
                    "read the findings with `skillpkg audit` on the skill's files, then install with --allow-risk {name} only if you trust it, or accept single findings in skills.toml's `[audit] allow`"
                )),
            }
        })
        .collect();
    let refused = super::collection::AuditRefused { refused: reasons };
    let flags: Vec<String> = refused
        .refused
        .iter()
        .map(|refusal| format!("--allow-risk {}", refusal.skill))
        .collect();
    Err(UserError::new(format!("refusing to install: {refused}"))
        .with_hint(format!(
            "nothing was installed; read the findings with `skillpkg audit` on the skill's files, then install with {} only if you trust it, or accept single findings in skills.toml's `[audit] allow`",
            flags.join(" ")
        ))
        .with_source(refused)
        .into())
}

/// Commits one target's plan: the record claims the new folders first (so
/// a crash in between leaves folders the next run knows are its own), each
/// staged folder is renamed into place, what the lock no longer has is
/// removed, and the record is written last.
fn commit_target(
    target: &Target,
    mut state: super::targets::TargetState,
    stamps: &BTreeMap<SkillName, String>,
    plan: &plan::TargetPlan<'_>,
    mut staged: BTreeMap<SkillName, Staged>,
    report: &mut Report,
) -> anyhow::Result<()> {
    report.unchanged += plan.unchanged;
    let before = state.clone();
    // Folders found as recorded keep their new stamp; the next install
    // knows them unchanged without reading their files.
    for (name, stamp) in stamps {
        if let Some(installed) = state.skills.get_mut(name) {
            installed.stamp = Some(stamp.clone());
        }
    }
    if !plan.put.is_empty() {
        for put in &plan.put {
            state.skills.insert(
                put.entry.name.clone(),
                InstalledSkill {
                    version: put.entry.version.to_string(),
                    tree: put.entry.tree.clone(),
                    replacing: put.replacing.clone(),
                    stamp: None,
                    link: staged[&put.entry.name].link.clone(),
                    copy_for_link: put.link.is_some() && staged[&put.entry.name].link.is_none(),
                },
            );
        }
        target.write_state(&state)?;
    }
    for put in &plan.put {
        let entry = put.entry;
        let staged = staged
            .remove(&entry.name)
            .expect("every skill put was staged");
        let source = staged.holder.keep()?;
        let replace = put.why != plan::Why::New;
        swap_into_place(&source, &target.dir, entry.name.as_str(), replace)?;
        if staged.link.is_some() {
            report
                .linked
                .push((entry.name.to_string(), target.name.clone()));
        }
        state.skills.insert(
            entry.name.clone(),
            InstalledSkill {
                version: entry.version.to_string(),
                tree: entry.tree.clone(),
                replacing: None,
                stamp: None,
                copy_for_link: put.link.is_some() && staged.link.is_none(),
                link: staged.link,
            },
        );
        if let plan::Why::Restore { .. } = put.why {
            report.restored.push(Restored {
                name: entry.name.to_string(),
                target: target.name.clone(),
                files: staged.changed,
            });
        } else {
            report.installed.push((
                entry.name.to_string(),
                entry.version.to_string(),
                target.name.clone(),
            ));
        }
    }
    for name in &plan.remove {
        state.skills.remove(name);
        if fs_err::symlink_metadata(target.dir.join(name.as_str())).is_ok() {
            remove_atomically(&target.dir, name)?;
        }
        report.removed.push((name.to_string(), target.name.clone()));
    }
    for (name, warning) in &plan.abandon {
        state.skills.remove(name);
        report.warnings.push(warning.clone());
    }
    // Written when anything changed, the claim above included: the record
    // on disk must end as the final one.
    if !plan.put.is_empty() || state != before {
        target.write_state(&state)?;
    }
    Ok(())
}

/// Checks that an unpacked archive is the skill the lock says it is: a
/// `SKILL.md` at its root whose frontmatter names it. A registry that is
/// only a static tree checks nothing at publish time, so this is where an
/// archive of something else is stopped.
fn check_is_the_skill(dir: &Path, entry: &LockedSkill) -> anyhow::Result<()> {
    let label = format!("{}@{}", entry.name, entry.version);
    let refuse = |why: String| -> anyhow::Error {
        UserError::new(format!("{label} is not a valid skill: {why}"))
            .with_hint("the registry serves an archive that was never validated; report it to the registry's operator or the skill's publisher")
            .into()
    };
    let bytes = match fs_err::read(dir.join(skillpkg_index::skill::SKILL_MD)) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Err(refuse("its archive has no SKILL.md at the root".into()));
        }
        Err(error) => return Err(error.into()),
    };
    let document = skillpkg_index::skill::document::parse(&bytes)
        .map_err(|error| refuse(format!("its SKILL.md cannot be read ({error})")))?;
    match document
        .get("name")
        .and_then(|(_, value)| value.value.as_str())
    {
        Some(name) if name == entry.name.as_str() => Ok(()),
        Some(name) => Err(refuse(format!(
            "its SKILL.md names the skill `{name}`, not `{}`",
            entry.name
        ))),
        None => Err(refuse("its SKILL.md has no `name`".into())),
    }
}

/// Refuses `update NAME` for a name the project has neither in skills.toml
/// nor in skills.lock.
fn check_update_names(
    names: &[SkillName],
    manifest: &Manifest,
    lock: Option<&Lockfile>,
) -> anyhow::Result<()> {
    let known =
        |name: &SkillName| manifest.has(name) || lock.is_some_and(|lock| lock.get(name).is_some());
    let Some(unknown) = names.iter().find(|name| !known(name)) else {
        return Ok(());
    };
    let mut candidates: Vec<&str> = manifest
        .names()
        .into_iter()
        .map(SkillName::as_str)
        .collect();
    candidates.extend(
        lock.iter()
            .flat_map(|lock| &lock.skills)
            .map(|entry| entry.name.as_str()),
    );
    let close = skillpkg_index::name::closest(unknown.as_str(), candidates);
    let hint = match close.first() {
        Some(close) => format!("did you mean `{close}`?"),
        None => format!("`skillpkg add {unknown}` adds it to the project"),
    };
    Err(UserError::new(format!(
        "`{unknown}` is not a skill of this project: skills.toml does not ask for it and skills.lock does not have it"
    ))
    .with_hint(hint)
    .into())
}

/// Checks every requirement of skills.toml against its registry's index
/// before resolving: an unknown name, or a range no version meets, is
/// named with what the registry has (close names from its search index,
/// or its versions with the yanked ones marked).
async fn check_requirements(
    opened: &mut OpenRegistries<'_>,
    manifest: &Manifest,
    fetched: &Fetched,
    lock: Option<&Lockfile>,
    keep: &dyn Fn(&SkillName) -> bool,
    skip: &resolve::Skip<'_>,
) -> anyhow::Result<()> {
    for (name, requirement) in &manifest.skills {
        let registry = fetched
            .registries
            .get(name)
            .cloned()
            .unwrap_or_else(|| registry_of(requirement, opened.registries()).to_owned());
        let locked = lock
            .and_then(|lock| lock.get(name))
            .filter(|_| keep(name))
            .map(|entry| entry.version.semver());
        let versions = fetched.records.get(name).map_or(&[][..], Vec::as_slice);
        // Named as `--registry` takes it: its name, or an unnamed one's URL.
        let shown = opened
            .registries()
            .find(&registry)
            .map_or_else(|| registry.clone(), RegistrySpec::argument);
        let Err(mut unmet) = resolve::check_requirement(
            name,
            &requirement.requirement,
            &shown,
            versions,
            locked,
            skip,
        ) else {
            continue;
        };
        if let resolve::Unmet::NoSuchSkill { suggestions, .. } = &mut unmet {
            // Suggestions are a courtesy: a registry without a search index
            // still gets the error, without them.
            if let Ok(index) = opened.open(&registry).await?.search_index().await {
                *suggestions = skillpkg_index::name::closest(
                    name.as_str(),
                    index.skills.iter().map(|entry| entry.name.as_str()),
                )
                .into_iter()
                .map(str::to_owned)
                .collect();
            }
        }
        return Err(unmet.into());
    }
    Ok(())
}

/// Turns resolved records into the new lockfile, enforcing the signer pins
/// and the unsigned policy.
fn new_lock(
    resolution: &Resolution,
    origins: &BTreeMap<SkillName, String>,
    manifest: &Manifest,
    registries: &Registries,
    old: Option<&Lockfile>,
    options: &Options,
    report: &mut Report,
) -> anyhow::Result<Lockfile> {
    let facts = &resolution.provenance;
    let mut skills = Vec::new();
    for record in &resolution.records {
        let label = format!("{}@{}", record.name, record.vers);
        let old_entry = old.and_then(|lock| lock.get(&record.name));
        let provenance_of =
            |version: &semver::Version| facts.get(&(record.name.clone(), version.clone()));
        if manifest.policy.trust == Trust::NoDowngrade
            && let Some(entry) = old_entry
            && let Some(lost) = check_downgrade(
                entry,
                record,
                provenance_of(entry.version.semver()),
                provenance_of(&record.vers),
            )
        {
            return Err(resolve::Unmet::Downgrade(Box::new(resolve::Downgrade {
                name: record.name.clone(),
                registry: origins[&record.name].clone(),
                locked: entry.version.semver().clone(),
                version: record.vers.clone(),
                lost,
            }))
            .into());
        }
        // Recorded when the policy needs it, else kept from the lock for
        // the same version.
        let provenance = if manifest.policy.needs_provenance() {
            provenance_of(&record.vers).map(ProvenanceFact::verified)
        } else {
            old_entry
                .filter(|entry| entry.version == record.vers)
                .and_then(|entry| entry.provenance)
        };
        if record.yanked {
            report.warnings.push(format!(
                "{label} is yanked{}; it stays because skills.lock has it",
                record
                    .yanked_reason
                    .as_deref()
                    .map(|reason| format!(" ({reason})"))
                    .unwrap_or_default()
            ));
        }
        // A change of key is found once the keys are known
        // (`signers::pin_keys`); losing the signature is found here.
        let old_signer = old
            .and_then(|lock| lock.get(&record.name))
            .and_then(|entry| entry.signer);
        match (&old_signer, &record.signer) {
            (Some(old), None) if !options.allow_signer_change => {
                return Err(UserError::new(format!(
                    "{label} is not signed, but skills.lock pins key {old} for `{}`",
                    record.name
                ))
                .with_hint("pass --allow-signer-change to accept an unsigned version")
                .into());
            }
            _ => {}
        }
        let registry = &origins[&record.name];
        if record.signer.is_none()
            && registries
                .find(registry)
                .is_some_and(|spec| spec.require_signatures)
        {
            return Err(unsigned_refused(&label, registry));
        }
        let allowed = options.allow_unsigned
            || manifest
                .skills
                .get(&record.name)
                .is_some_and(|requirement| requirement.allow_unsigned);
        if record.signer.is_none() && !allowed {
            return Err(UserError::new(format!("{label} is not signed"))
                .with_hint(format!("set `{} = {{ version = \"...\", allow-unsigned = true }}` in skills.toml, or pass --allow-unsigned", record.name))
                .into());
        }
        skills.push(LockedSkill {
            name: record.name.clone(),
            version: record.vers.clone().into(),
            source: registry_source(registry),
            checksum: Some(record.cksum),
            tree: record.tree.clone(),
            signer: record.signer_id().map(SignerPin::Id),
            provenance,
            // The verdict of the files when the lock has one for this
            // very archive; else the registry's, until the files are fetched.
            audit: old
                .and_then(|lock| lock.get(&record.name))
                .filter(|entry| entry.checksum == Some(record.cksum))
                .and_then(|entry| entry.audit.clone())
                .or_else(|| record.audit.clone()),
            dependencies: record
                .deps
                .iter()
                .map(|dependency| dependency.name.clone())
                .collect(),
        });
    }
    Ok(Lockfile { skills })
}

/// Returns the registry `name` comes from (in `by_name`) and its
/// `allowed-signers`, when it has some.
fn allowed_signers<'a>(
    registries: &'a Registries,
    by_name: &'a BTreeMap<SkillName, String>,
    name: &SkillName,
) -> Option<(&'a str, &'a [SignerKey])> {
    let registry = by_name.get(name)?;
    let allowed = registries.find(registry)?.allowed_signers.as_deref()?;
    Some((registry.as_str(), allowed))
}

/// Returns the entries of the lock that the policy refuses, and why.
fn lock_refusals(
    manifest: &Manifest,
    lock: Option<&Lockfile>,
    registries: &Registries,
    now: jiff::Timestamp,
) -> Vec<(LockedSkill, Skipped)> {
    let Some(lock) = lock else {
        return Vec::new();
    };
    // Skills from folders and repositories are the project's own choice:
    // the policy is about which versions of a registry's skills to take.
    let by_name: BTreeMap<SkillName, String> = lock
        .skills
        .iter()
        .filter_map(|entry| Some((entry.name.clone(), entry.registry()?.to_owned())))
        .collect();
    let facts = ProvenanceFacts::new();
    // Locked entries are judged by the key they pin: no keys file needed.
    let signer_keys = SignerKeys::new();
    let allowed = |name: &SkillName| allowed_signers(registries, &by_name, name);
    let judge = Judge {
        policy: &manifest.policy,
        now,
        lock: Some(lock),
        allowed_signers: &allowed,
        signer_keys: &signer_keys,
        provenance: &facts,
    };
    lock.skills
        .iter()
        .filter(|entry| !entry.is_direct())
        .filter_map(|entry| Some((entry.clone(), judge.judge_locked(entry)?)))
        .collect()
}

/// The versions resolution chose, and what it learned of provenance.
#[derive(Debug)]
struct Resolution {
    records: Vec<IndexRecord>,
    provenance: ProvenanceFacts,
}

/// Resolves under the policy. Which versions have provenance is looked up
/// only as resolution needs it: a version not looked up yet may be chosen,
/// then each chosen one is looked up (and, under `no-downgrade`, the
/// locked version it replaces, when skills.lock does not record it), and
/// resolution runs again until every version chosen is known: one lookup
/// per skill when the newest versions have provenance.
async fn resolve_with_policy(
    opened: &mut OpenRegistries<'_>,
    manifest: &Manifest,
    fetched: &Fetched,
    lock: Option<&Lockfile>,
    keep: &dyn Fn(&SkillName) -> bool,
    now: jiff::Timestamp,
    signer_keys: &mut SignerKeys,
) -> anyhow::Result<Resolution> {
    let mut facts = policy::facts_from_lock(lock);
    let registries = opened.registries();
    // `allowed-signers` decide by key, and index lines name keys by id:
    // the keys of each skill from such a registry are read first.
    for (name, registry) in &fetched.registries {
        let listed = registries
            .find(registry)
            .is_some_and(|spec| spec.allowed_signers.is_some());
        if listed && !signer_keys.contains_key(name) {
            let opened = opened.open(registry).await?;
            let keys = crate::client::fetch::registry_keys(opened, name).await?;
            signer_keys.insert(name.clone(), keys);
        }
    }
    let signer_keys = &*signer_keys;
    let allowed = |name: &SkillName| allowed_signers(registries, &fetched.registries, name);
    loop {
        let judge = Judge {
            policy: &manifest.policy,
            now,
            lock,
            allowed_signers: &allowed,
            signer_keys,
            provenance: &facts,
        };
        let skip = |record: &IndexRecord| judge.judge(record);
        check_requirements(opened, manifest, fetched, lock, keep, &skip).await?;
        let resolved = resolve::resolve(manifest, &fetched.records, lock, keep, &skip)?;
        if !manifest.policy.needs_provenance() {
            return Ok(Resolution {
                records: resolved,
                provenance: facts,
            });
        }
        let known =
            |record: &IndexRecord| facts.contains_key(&(record.name.clone(), record.vers.clone()));
        let mut unknown: Vec<&IndexRecord> =
            resolved.iter().filter(|record| !known(record)).collect();
        if manifest.policy.trust == Trust::NoDowngrade {
            for record in &resolved {
                let replaced = lock
                    .and_then(|lock| lock.get(&record.name))
                    .filter(|entry| entry.version != record.vers)
                    .and_then(|entry| {
                        fetched.records[&record.name]
                            .iter()
                            .find(|old| entry.version == old.vers)
                    });
                unknown.extend(replaced.filter(|old| !known(old)));
            }
        }
        if unknown.is_empty() {
            return Ok(Resolution {
                records: resolved,
                provenance: facts,
            });
        }
        let mut learned = Vec::new();
        for record in unknown {
            let registry = opened.open(&fetched.registries[&record.name]).await?;
            let fact = if record.signer.is_none() {
                // Provenance is signed by the archive's signer: an unsigned
                // version has none that could verify.
                ProvenanceFact::Missing
            } else {
                match check_provenance(registry, record).await.with_context(|| {
                    format!(
                        "cannot read the provenance of {}@{}",
                        record.name, record.vers
                    )
                })? {
                    None => ProvenanceFact::Missing,
                    Some(Ok(_)) => ProvenanceFact::Verified,
                    Some(Err(why)) => ProvenanceFact::Invalid(why),
                }
            };
            learned.push(((record.name.clone(), record.vers.clone()), fact));
        }
        facts.extend(learned);
    }
}

/// Warns about each of `names` (those `add` asked for) that is one edit
/// from, or looks like, the name of a more downloaded skill in its
/// registry's search index. A courtesy: a registry that was not read for
/// this install, or has no search index, gets no warning.
async fn warn_lookalikes(
    names: &[SkillName],
    lock: &Lockfile,
    opened: &OpenRegistries<'_>,
    report: &mut Report,
) {
    for name in names {
        let Some(registry) = lock
            .get(name)
            .and_then(LockedSkill::registry)
            .and_then(|registry| opened.get(registry))
        else {
            continue;
        };
        if let Ok(index) = registry.search_index().await
            && let Some(warning) = policy::lookalike_warning(name, &index.skills)
        {
            report.warnings.push(warning);
        }
    }
}

/// Fetches the files of `entry`, a skill from a git repository, a
/// discovery index or a tarball URL, as skills.lock pins them.
async fn fetch_pinned(
    manifest: &Manifest,
    entry: &LockedSkill,
    offline: bool,
) -> anyhow::Result<skillpkg_index::archive::PackedSkill> {
    let source = manifest
        .direct
        .get(&entry.name)
        .expect("a direct entry of the lock is in the manifest");
    let origin = format!("`{}` in skills.toml", entry.name);
    // A tarball's or an index's artifact the lock pins by checksum is read
    // from the cache when it is there, offline too.
    let cached = match source {
        Direct::Index(_) | Direct::Url(_) => entry
            .checksum
            .and_then(|checksum| super::web::read_cached(&checksum, &entry.name, &origin)),
        _ => None,
    };
    let packed = match (source, cached) {
        (_, Some(cached)) => cached?.packed,
        (Direct::Git(git), None) => {
            let commit = source::locked_commit(&entry.source);
            let location = git.location(manifest.root());
            super::git::read_skill(git, &location, commit, offline, &origin)?
                .1
                .packed
        }
        (_, None) if offline => {
            return Err(UserError::new(format!(
                "{origin} comes from the {}, whose files are not in the cache, and --offline (or --frozen) forbids fetching them",
                source.describe()
            ))
            .with_hint("run without --offline once")
            .into());
        }
        (_, None) => {
            sources::fetch(manifest.root(), source, &entry.name, Some(entry), &origin)
                .await?
                .2
                .packed
        }
    };
    if !packed.tree_is(&entry.tree) {
        return Err(UserError::new(format!(
            "{origin}: the files of the {} have the tree hash {}, but skills.lock pins {}",
            source.describe(),
            packed.tree,
            entry.tree
        ))
        .with_hint(format!(
            "they changed since the lock was written; run `skillpkg update {}` to take them, after reviewing them",
            entry.name
        ))
        .into());
    }
    Ok(packed)
}

/// What the lock says a registry's archive must be.
fn expected(entry: &LockedSkill) -> anyhow::Result<Expected<'_>> {
    Ok(Expected {
        name: &entry.name,
        version: entry.version.semver(),
        checksum: entry.require_checksum()?,
        signer: entry.signer,
        pinned_by: "skills.lock",
    })
}

/// Moves the complete folder `source` (already inside `target`) to
/// `<target>/<name>`: the final folder is always either the old complete one
/// or the new complete one. `replace` when the plan found a folder there.
fn swap_into_place(source: &Path, target: &Path, name: &str, replace: bool) -> anyhow::Result<()> {
    let destination = target.join(name);
    if replace && fs_err::symlink_metadata(&destination).is_ok() {
        let old = tempfile::Builder::new()
            .prefix(&format!(".skillpkg-old-{name}-"))
            .tempdir_in(target)?
            .keep();
        fs_err::remove_dir(&old)?;
        fs_err::rename(&destination, &old)?;
        fs_err::rename(source, &destination)?;
        remove_entry(&old)?;
    } else {
        fs_err::rename(source, &destination)?;
    }
    Ok(())
}

/// For each target, the path from its folder to the first target's, which
/// its symlinks hold (with `link`; `None` for the first, and for all
/// without it). Refuses targets that are one folder, or one inside
/// another, which no install can keep apart.
pub fn link_paths(targets: &[Target], link: bool) -> anyhow::Result<Vec<Option<String>>> {
    let real: Vec<PathBuf> = targets
        .iter()
        .map(|target| real_path(&target.dir))
        .collect::<anyhow::Result<_>>()?;
    for (a, (target_a, real_a)) in targets.iter().zip(&real).enumerate() {
        for (target_b, real_b) in targets.iter().zip(&real).skip(a + 1) {
            let how = if real_a == real_b {
                "are the same folder"
            } else if real_b.starts_with(real_a) || real_a.starts_with(real_b) {
                "are one inside the other"
            } else {
                continue;
            };
            return Err(UserError::new(format!(
                "the install targets `{}` and `{}` {how} ({} and {})",
                target_a.name,
                target_b.name,
                real_a.display(),
                real_b.display()
            ))
            .with_hint("name each folder once in `targets` under [install] in skills.toml, none inside another")
            .into());
        }
    }
    real.iter()
        .zip(targets)
        .enumerate()
        .map(|(index, (from, target))| match (link, index) {
            (true, 1..) => link_path(from, &real[0], target, &targets[0]).map(Some),
            _ => Ok(None),
        })
        .collect()
}

/// The path from the folder `from` (the real path of `target`) to `to`
/// (of `first`), for the symlinks of a linked install: relative, between
/// the folders as they are (or will be) once every symlink on the way is
/// resolved, so that a link made in a folder reached through a symlink
/// still finds its copy.
fn link_path(from: &Path, to: &Path, target: &Target, first: &Target) -> anyhow::Result<String> {
    let common = from
        .components()
        .zip(to.components())
        .take_while(|(a, b)| a == b)
        .count();
    let mut path = PathBuf::new();
    for _ in from.components().skip(common) {
        path.push("..");
    }
    path.extend(to.components().skip(common));
    path.into_os_string().into_string().map_err(|path| {
        UserError::new(format!(
            "cannot link `{}` to `{}`: the path between them, {}, is not UTF-8",
            target.name,
            first.name,
            Path::new(&path).display()
        ))
        .with_hint("set `link = false` under [install] in skills.toml to install copies")
        .into()
    })
}

/// `path` with every symlink resolved: its nearest existing folder,
/// canonicalized, and the rest of it as it is.
fn real_path(path: &Path) -> anyhow::Result<PathBuf> {
    let mut existing = path;
    let mut rest = Vec::new();
    loop {
        match fs_err::canonicalize(existing) {
            Ok(real) => return Ok(real.join(rest.into_iter().rev().collect::<PathBuf>())),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                let (Some(parent), Some(name)) = (existing.parent(), existing.file_name()) else {
                    return Err(error.into());
                };
                rest.push(name);
                existing = parent;
            }
            Err(error) => return Err(error.into()),
        }
    }
}

/// Makes the symlink skill `name` is put as, beside the target's folders
/// (`.skillpkg-new-NAME-…`, which the next install cleans up if this one
/// stops first).
fn stage_link(dir: &Path, name: &SkillName, text: &str) -> std::io::Result<tempfile::TempPath> {
    let link = tempfile::Builder::new()
        .prefix(&format!(".skillpkg-new-{name}-"))
        .make_in(dir, |path| std::os::unix::fs::symlink(text, path))?;
    Ok(link.into_temp_path())
}

/// Stages a copy of the first target's folder of `entry` (staged by this
/// install, or in place) where a link could not be made, checked against
/// the lock's tree hash.
fn stage_copy(dir: &Path, source: &Path, entry: &LockedSkill) -> anyhow::Result<tempfile::TempDir> {
    let holder = tempfile::Builder::new()
        .prefix(&format!(".skillpkg-new-{}-", entry.name))
        .tempdir_in(dir)?;
    copy_tree(source, holder.path())?;
    if !plan::folder_matches(holder.path(), &entry.tree)? {
        return Err(UserError::new(format!(
            "{}: the copy of {} does not have the tree hash skills.lock says, {}",
            entry.name,
            source.display(),
            entry.tree
        ))
        .with_hint("run `skillpkg install --force` to put the first target's copy back")
        .into());
    }
    Ok(holder)
}

/// Removes the folder of skill `name` from the target folder `parent`. It
/// takes a [`SkillName`], never a path, so what it removes is always a
/// direct child of the target; a symlink there is removed, not followed.
fn remove_atomically(parent: &Path, name: &SkillName) -> anyhow::Result<()> {
    let dir = parent.join(name.as_str());
    let old = tempfile::Builder::new()
        .prefix(&format!(".skillpkg-old-{name}-"))
        .tempdir_in(parent)?
        .keep();
    fs_err::remove_dir(&old)?;
    fs_err::rename(&dir, &old)?;
    remove_entry(&old)
}

/// Removes a folder with everything in it, or a file or symlink (which is
/// removed, never followed).
fn remove_entry(path: &Path) -> anyhow::Result<()> {
    if fs_err::symlink_metadata(path)?.is_dir() {
        fs_err::remove_dir_all(path)?;
    } else {
        fs_err::remove_file(path)?;
    }
    Ok(())
}

/// Copies a folder tree, keeping exec bits (`fs::copy` copies permissions).
fn copy_tree(from: &Path, to: &Path) -> anyhow::Result<()> {
    for entry in fs_err::read_dir(from)? {
        let entry = entry?;
        let destination = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            fs_err::create_dir(&destination)?;
            copy_tree(&entry.path(), &destination)?;
        } else {
            fs_err::copy(entry.path(), &destination)?;
        }
    }
    Ok(())
}

/// Removes the leftovers of an interrupted install in a target folder.
pub fn clean_leftovers(target: &Target) -> anyhow::Result<()> {
    let Ok(entries) = fs_err::read_dir(&target.dir) else {
        return Ok(());
    };
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with(".skillpkg-new-") || name.starts_with(".skillpkg-old-") {
            remove_entry(&entry.path())?;
        }
    }
    Ok(())
}
