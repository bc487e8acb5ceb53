//! `skills.toml` (docs/manifest.md): read into a typed model, and edited in
//! place with `toml_edit` so that `add` and `remove` keep comments and layout.
//! Its `[policy]` table is read by [`super::policy`].

use skillpkg_index::fs::{WriteOptions, write_atomic_with};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use skillpkg_index::skill::SkillName;

use super::policy::{self, Policy};
use super::source::Direct;
use crate::client::registries::{self, ConfigFile, ProjectRegistries, RegistrySpec};
use crate::error::UserError;

/// The manifest's file name.
pub const MANIFEST: &str = "skills.toml";

/// A skill the manifest asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Requirement {
    pub requirement: semver::VersionReq,
    pub allow_unsigned: bool,
    /// `registry = "NAME"`: the registry it comes from; `None` for the
    /// project's default registry.
    pub registry: Option<String>,
}

/// The manifest, read.
#[derive(Clone, Debug, Default)]
pub struct Manifest {
    /// The manifest's path.
    pub path: PathBuf,
    /// `[registry] url`: the default registry, a URL, a path (relative to
    /// the project) or a registry name, unparsed.
    pub registry: Option<String>,
    /// `[registries.NAME]` tables.
    pub registries: BTreeMap<String, RegistrySpec>,
    pub targets: Vec<String>,
    /// `[install] link`: one copy of each skill, in the first target, and
    /// symlinks to it in the others.
    pub link: bool,
    /// The skills taken from a registry, by version.
    pub skills: BTreeMap<SkillName, Requirement>,
    /// The skills taken from a folder or a git repository.
    pub direct: BTreeMap<SkillName, Direct>,
    /// `policy-exempt` of the skills in `direct`: the `[policy]` keys their
    /// source may leave unmet (`super::source_policy`).
    pub policy_exempt: BTreeMap<SkillName, Vec<String>>,
    /// `[audit] allow`: audit findings the project accepts, with reasons.
    pub audit_allow: Vec<skillpkg_index::audit::Allow>,
    /// `[policy]`: which versions resolution may choose.
    pub policy: Policy,
}

impl Manifest {
    /// What the manifest says about registries, for
    /// [`Registries::load`](crate::client::registries::Registries::load).
    pub fn registry_config(&self) -> ProjectRegistries {
        ProjectRegistries {
            file: self.path.clone(),
            default: self.registry.clone(),
            specs: self.registries.clone(),
        }
    }

    /// Returns true if and only if the manifest asks for `name`, from a
    /// registry or from elsewhere.
    pub fn has(&self, name: &SkillName) -> bool {
        self.skills.contains_key(name) || self.direct.contains_key(name)
    }

    /// The names of every skill the manifest asks for, sorted.
    pub fn names(&self) -> Vec<&SkillName> {
        let mut names: Vec<&SkillName> = self.skills.keys().chain(self.direct.keys()).collect();
        names.sort();
        names
    }

    /// Returns the project's folder.
    pub fn root(&self) -> &Path {
        self.path.parent().unwrap_or(Path::new("."))
    }
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RawManifest {
    registry: Option<RawRegistry>,
    registries: Option<toml::Value>,
    install: Option<RawInstall>,
    #[serde(default)]
    skills: BTreeMap<String, toml::Value>,
    audit: Option<RawAudit>,
    policy: Option<toml::Value>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAudit {
    #[serde(default)]
    allow: Vec<skillpkg_index::audit::Allow>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRegistry {
    url: String,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RawInstall {
    #[serde(default)]
    targets: Vec<String>,
    #[serde(default)]
    link: bool,
}

/// The keys of a skill's table in `[skills]`.
const SKILL_KEYS: &str =
    "`version`, `allow-unsigned` and `registry` (or `path`, or `git` with `rev` and `path`)";

/// Finds the project: the nearest folder at or above `start` with a manifest.
pub fn find_root(start: &Path) -> Option<PathBuf> {
    start
        .ancestors()
        .find(|dir| dir.join(MANIFEST).is_file())
        .map(Path::to_owned)
}

/// Reads the manifest of the project at `root`.
pub fn read(root: &Path) -> anyhow::Result<Manifest> {
    let path = root.join(MANIFEST);
    let text = fs_err::read_to_string(&path)?;
    parse(path, &text)
}

/// Reads the text of the manifest at `path` (which it may not be written to
/// yet: `add` installs from its edited manifest before writing it).
pub fn parse(path: PathBuf, text: &str) -> anyhow::Result<Manifest> {
    let raw: RawManifest = toml::from_str(text).map_err(|error| {
        UserError::new(format!("{} is not a valid manifest", path.display()))
            .with_hint("see docs/manifest.md for its keys")
            .with_source(error)
    })?;
    let mut skills = BTreeMap::new();
    let mut direct = BTreeMap::new();
    let mut policy_exempt = BTreeMap::new();
    for (name, value) in raw.skills {
        let skill: SkillName = name.parse().map_err(|error| {
            UserError::new(format!(
                "`{name}` in {} is not a valid skill name",
                path.display()
            ))
            .with_source(error)
        })?;
        match entry(&name, &value, &path)? {
            Entry::Registry(requirement) => skills.insert(skill, requirement),
            Entry::Direct(source, exempt) => {
                if !exempt.is_empty() {
                    policy_exempt.insert(skill.clone(), exempt);
                }
                direct.insert(skill, source);
                continue;
            }
        };
    }
    let audit_allow = raw.audit.map(|audit| audit.allow).unwrap_or_default();
    for allow in &audit_allow {
        allow.check().map_err(|problem| {
            UserError::new(format!("{}: {problem}", path.display()))
                .with_hint("each entry is `{ rule = \"RULE\", skill = \"NAME\", path = \"GLOB\", reason = \"WHY\" }`; see docs/security.md")
        })?;
    }
    let registries = match &raw.registries {
        Some(tables) => registries::parse_tables(tables, &path, ConfigFile::Manifest)?,
        None => BTreeMap::new(),
    };
    let policy = match &raw.policy {
        Some(table) => policy::parse_table(table, &path)?,
        None => Policy::default(),
    };
    Ok(Manifest {
        path,
        policy,
        registry: raw.registry.map(|registry| registry.url),
        registries,
        link: raw.install.as_ref().is_some_and(|install| install.link),
        targets: raw
            .install
            .map(|install| install.targets)
            .unwrap_or_default(),
        skills,
        direct,
        policy_exempt,
        audit_allow,
    })
}

/// One entry of `[skills]`.
enum Entry {
    Registry(Requirement),
    /// Where the files are, and the `[policy]` keys the source may leave
    /// unmet.
    Direct(Direct, Vec<String>),
}

/// Reads a `policy-exempt` list: keys of [`super::policy::EXEMPTABLE`].
fn policy_exempt(
    value: &toml::Value,
    invalid: &dyn Fn(String) -> anyhow::Error,
) -> anyhow::Result<Vec<String>> {
    let known = policy::EXEMPTABLE;
    let listed = || {
        known
            .iter()
            .map(|key| format!("\"{key}\""))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let toml::Value::Array(items) = value else {
        return Err(invalid(format!(
            "has a `policy-exempt` that is not a list: write `policy-exempt = [\"require-signature\"]` with keys among {}",
            listed()
        )));
    };
    items
        .iter()
        .map(|item| match item.as_str() {
            Some(key) if known.contains(&key) => Ok(key.to_owned()),
            _ => Err(invalid(format!(
                "has `policy-exempt` entry {item}, which is none of the keys a source may be exempt from ({})",
                listed()
            ))),
        })
        .collect()
}

/// Reads one entry of `[skills]`: a requirement string, a table with
/// `version`, `allow-unsigned` and `registry`, or a table with `path` or
/// `git` ([`Direct`]). Read by hand rather than by serde so that a misspelt
/// key is an error that names it: a `registy` silently ignored would take
/// the skill from another registry.
fn entry(name: &str, value: &toml::Value, path: &Path) -> anyhow::Result<Entry> {
    let invalid = |problem: String| -> anyhow::Error {
        UserError::new(format!(
            "the entry of `{name}` in {} {problem}",
            path.display()
        ))
        .with_hint(format!(
            "write `{name} = \"^1.2\"`, or a table with {SKILL_KEYS}: `{name} = {{ version = \"^1.2\", registry = \"corp\" }}`"
        ))
        .into()
    };
    let (text, allow_unsigned, registry) = match value {
        toml::Value::String(text) => (text.as_str(), false, None),
        toml::Value::Table(table)
            if super::source::is_direct_table(&|key| table.contains_key(key)) =>
        {
            let mut table = table.clone();
            let exempt = match table.remove("policy-exempt") {
                None => Vec::new(),
                Some(value) => policy_exempt(&value, &invalid)?,
            };
            return Direct::from_table(&table, &invalid)
                .map(|source| Entry::Direct(source, exempt));
        }
        toml::Value::Table(table) => {
            if let Some(key) = table
                .keys()
                .find(|key| !["version", "allow-unsigned", "registry"].contains(&key.as_str()))
            {
                return Err(invalid(format!("has an unknown key `{key}`")));
            }
            let text = match table.get("version") {
                Some(toml::Value::String(text)) => text.as_str(),
                Some(_) => return Err(invalid("has a `version` that is not a string".into())),
                None => return Err(invalid("has no `version`".into())),
            };
            let allow_unsigned = match table.get("allow-unsigned") {
                None => false,
                Some(toml::Value::Boolean(allow)) => *allow,
                Some(_) => {
                    return Err(invalid(
                        "has an `allow-unsigned` that is not true or false".into(),
                    ));
                }
            };
            let registry = match table.get("registry") {
                None => None,
                Some(toml::Value::String(registry)) if registries::is_valid_name(registry) => {
                    Some(registry.clone())
                }
                Some(toml::Value::String(registry)) => {
                    return Err(invalid(format!(
                        "has `registry = \"{registry}\"`, which is not a registry name (lowercase letters, digits and `-`)"
                    )));
                }
                Some(_) => return Err(invalid("has a `registry` that is not a string".into())),
            };
            (text, allow_unsigned, registry)
        }
        _ => {
            return Err(invalid(
                "is neither a requirement string nor a table".into(),
            ));
        }
    };
    let requirement = text.parse().map_err(|error| {
        UserError::new(format!(
            "the requirement `{text}` of `{name}` in {} is not a semver requirement",
            path.display()
        ))
        .with_hint("write it like \"^1.2\", \"~1.2.3\", \"=1.0.0\" or \"*\"")
        .with_source(error)
    })?;
    Ok(Entry::Registry(Requirement {
        requirement,
        allow_unsigned,
        registry,
    }))
}

/// Writes a new manifest; refuses to replace one.
pub fn create(
    root: &Path,
    registry: Option<&str>,
    targets: &[String],
    link: bool,
) -> anyhow::Result<PathBuf> {
    let path = root.join(MANIFEST);
    if path.exists() {
        return Err(UserError::new(format!("{} already exists", path.display()))
            .with_hint("edit it, or add skills with `skillpkg add`")
            .into());
    }
    let mut text = String::from(
        "# Skills this project uses; see docs/manifest.md. `skillpkg add NAME` adds one.\n",
    );
    if let Some(url) = registry {
        text.push_str(&format!("\n[registry]\nurl = {}\n", toml_string(url)));
    }
    let targets: Vec<String> = targets.iter().map(|target| toml_string(target)).collect();
    text.push_str(&format!(
        "\n[install]\ntargets = [{}]\n",
        targets.join(", ")
    ));
    if link {
        text.push_str(LINK_LINE);
    }
    text.push_str("\n[skills]\n");
    write(&path, &text)?;
    Ok(path)
}

fn toml_string(text: &str) -> String {
    toml_edit::Value::from(text).to_string().trim().to_owned()
}

/// Reads a manifest's text as an editable document.
fn load_document(text: &str) -> anyhow::Result<toml_edit::DocumentMut> {
    text.parse().map_err(|error| {
        UserError::new(format!("{MANIFEST} is not valid TOML"))
            .with_source(error)
            .into()
    })
}

/// Returns the `[skills]` table, creating it when missing.
fn skills_table(document: &mut toml_edit::DocumentMut) -> anyhow::Result<&mut toml_edit::Table> {
    document
        .entry("skills")
        .or_insert(toml_edit::table())
        .as_table_mut()
        .context("`skills` must be a table")
}

/// Returns the manifest `text` with `[registry] url = URL`: the project's
/// default registry, recorded so that a plain `install` elsewhere (a
/// teammate's clone) reads the same registry.
pub fn set_registry_url(text: &str, url: &str) -> anyhow::Result<String> {
    let mut document = load_document(text)?;
    let registry = document
        .entry("registry")
        .or_insert(toml_edit::table())
        .as_table_mut()
        .context("`registry` must be a table")?;
    registry.insert("url", toml_edit::value(url));
    Ok(document.to_string())
}

/// Returns the manifest `text` with skills marked as allowed unsigned
/// (`{ version = "...", allow-unsigned = true }`).
pub fn allow_unsigned(text: &str, names: &[SkillName]) -> anyhow::Result<String> {
    let mut document = load_document(text)?;
    let skills = skills_table(&mut document)?;
    for name in names {
        let Some(item) = skills.get_mut(name.as_str()) else {
            continue;
        };
        if let Some(table) = item.as_table_like_mut() {
            table.insert("allow-unsigned", toml_edit::value(true));
            continue;
        }
        let mut table = toml_edit::InlineTable::new();
        table.insert("version", item.as_str().unwrap_or("*").into());
        table.insert("allow-unsigned", true.into());
        *item = toml_edit::value(table);
    }
    Ok(document.to_string())
}

/// Which registry [`edit`] records for a skill it sets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RegistryChoice {
    /// Leave the entry's `registry` as it is (a new entry gets none).
    Keep,
    /// The default registry: no `registry` key, so the short `name = "REQ"`
    /// form for a new entry.
    Default,
    /// `registry = "NAME"`.
    Named(String),
}

/// A skill for [`edit`] to set.
#[derive(Clone, Debug)]
pub struct SetSkill {
    pub name: SkillName,
    /// The requirement, as written.
    pub requirement: String,
    pub registry: RegistryChoice,
}

/// Edits the manifest's `text`, keeping its comments and layout: sets or
/// removes skills, adds targets. Returns the new text and the names to
/// remove that it does not have. Writes nothing: the caller commits the
/// manifest together with the lock (`project::commit`).
pub fn edit(
    text: &str,
    set: &[SetSkill],
    remove: &[SkillName],
    add_targets: &[String],
) -> anyhow::Result<(String, Vec<SkillName>)> {
    let mut document = load_document(text)?;
    let skills = skills_table(&mut document)?;
    for skill in set {
        let name = skill.name.as_str();
        let version = skill.requirement.as_str();
        // A folder's or a repository's entry becomes a registry's: none of
        // its keys apply any more.
        if skills
            .get(name)
            .and_then(|item| item.as_table_like())
            .is_some_and(|table| super::source::is_direct_table(&|key| table.contains_key(key)))
        {
            skills.remove(name);
        }
        match skills
            .get_mut(name)
            .and_then(|item| item.as_table_like_mut())
        {
            Some(table) => {
                table.insert("version", toml_edit::value(version));
                match &skill.registry {
                    RegistryChoice::Keep => {}
                    RegistryChoice::Default => {
                        table.remove("registry");
                    }
                    RegistryChoice::Named(registry) => {
                        table.insert("registry", toml_edit::value(registry.as_str()));
                    }
                }
            }
            None => {
                skills[name] = match &skill.registry {
                    RegistryChoice::Named(registry) => {
                        let mut table = toml_edit::InlineTable::new();
                        table.insert("version", version.into());
                        table.insert("registry", registry.as_str().into());
                        toml_edit::value(table)
                    }
                    RegistryChoice::Keep | RegistryChoice::Default => toml_edit::value(version),
                };
            }
        }
    }
    let mut missing = Vec::new();
    for name in remove {
        if skills.remove(name.as_str()).is_none() {
            missing.push(name.clone());
        }
    }
    if !add_targets.is_empty() {
        let install = document
            .entry("install")
            .or_insert(toml_edit::table())
            .as_table_mut()
            .context("`install` must be a table")?;
        let targets = install
            .entry("targets")
            .or_insert(toml_edit::value(toml_edit::Array::new()));
        let array = targets
            .as_array_mut()
            .context("`install.targets` must be an array")?;
        for target in add_targets {
            if !array.iter().any(|value| value.as_str() == Some(target)) {
                array.push(target.as_str());
            }
        }
    }
    Ok((document.to_string(), missing))
}

/// `link = true` as `init --link` writes it.
const LINK_LINE: &str =
    "link = true                          # one copy in the first target, symlinks in the others\n";

/// Returns the manifest `text` with `[install] link` set to `link` (a
/// `false` is written as no key at all, the default).
pub fn set_link(text: &str, link: bool) -> anyhow::Result<String> {
    let mut document = load_document(text)?;
    let install = document
        .entry("install")
        .or_insert(toml_edit::table())
        .as_table_mut()
        .context("`install` must be a table")?;
    if link {
        install.insert("link", toml_edit::value(true));
    } else {
        install.remove("link");
    }
    Ok(document.to_string())
}

/// Returns the manifest `text` with `name` taken from `source` (a folder or
/// a git repository), replacing its entry.
pub fn set_direct(text: &str, name: &SkillName, source: &Direct) -> anyhow::Result<String> {
    let mut document = load_document(text)?;
    let skills = skills_table(&mut document)?;
    skills.insert(name.as_str(), toml_edit::value(source.to_toml()));
    Ok(document.to_string())
}

/// Replaces a file atomically.
pub fn write(path: &Path, text: &str) -> anyhow::Result<()> {
    write_atomic_with(path, text.as_bytes(), &WriteOptions::default())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_requirements_and_edits_keep_comments() {
        let temp = tempfile::tempdir().unwrap();
        fs_err::write(
            temp.path().join(MANIFEST),
            "# mine\n[install]\ntargets = [\"claude\"]\n\n[skills]\npdf = \"^1.2\" # the PDF one\ncsv = { version = \"2\", allow-unsigned = true }\n",
        )
        .unwrap();
        let manifest = read(temp.path()).unwrap();
        assert_eq!(manifest.targets, ["claude"]);
        let pdf = &manifest.skills[&"pdf".parse().unwrap()];
        assert_eq!(pdf.requirement.to_string(), "^1.2");
        assert!(manifest.skills[&"csv".parse().unwrap()].allow_unsigned);

        let before = fs_err::read_to_string(temp.path().join(MANIFEST)).unwrap();
        let (text, missing) = edit(
            &before,
            &[SetSkill {
                name: "new".parse().unwrap(),
                requirement: "^0.3".into(),
                registry: RegistryChoice::Keep,
            }],
            &["csv".parse().unwrap(), "absent".parse().unwrap()],
            &["agents".into()],
        )
        .unwrap();
        assert_eq!(missing, ["absent".parse::<SkillName>().unwrap()]);
        assert_eq!(
            fs_err::read_to_string(temp.path().join(MANIFEST)).unwrap(),
            before,
            "edit writes nothing"
        );
        assert!(text.starts_with("# mine\n"), "{text}");
        assert!(text.contains("pdf = \"^1.2\" # the PDF one"), "{text}");
        assert!(text.contains("new = \"^0.3\""), "{text}");
        assert!(!text.contains("csv"), "{text}");
        assert!(
            text.contains("targets = [\"claude\", \"agents\"]"),
            "{text}"
        );
    }

    #[test]
    fn the_policy_table_is_read_with_the_manifest() {
        let temp = tempfile::tempdir().unwrap();
        fs_err::write(
            temp.path().join(MANIFEST),
            "[policy]\nminimum-release-age = \"3d\"\n\n[skills]\npdf = \"^1\"\n",
        )
        .unwrap();
        let manifest = read(temp.path()).unwrap();
        let age = manifest.policy.minimum_release_age.unwrap();
        assert_eq!(age.duration.as_hours(), 72);
        fs_err::write(temp.path().join(MANIFEST), "[policy]\ntrust = 1\n").unwrap();
        let error = read(temp.path()).unwrap_err().to_string();
        assert!(error.contains("`[policy]`"), "{error}");
    }

    #[test]
    fn a_bad_requirement_names_the_skill() {
        let temp = tempfile::tempdir().unwrap();
        fs_err::write(temp.path().join(MANIFEST), "[skills]\npdf = \"latest\"\n").unwrap();
        let error = read(temp.path()).unwrap_err();
        assert!(error.to_string().contains("`latest` of `pdf`"), "{error}");
    }

    #[test]
    fn a_skill_may_name_its_registry_and_add_writes_it_only_when_not_the_default() {
        let temp = tempfile::tempdir().unwrap();
        fs_err::write(
            temp.path().join(MANIFEST),
            "[skills]\npdf = { version = \"^1\", registry = \"corp\" }\ncsv = \"2\"\n",
        )
        .unwrap();
        let manifest = read(temp.path()).unwrap();
        let pdf = &manifest.skills[&"pdf".parse().unwrap()];
        assert_eq!(pdf.registry.as_deref(), Some("corp"));
        assert_eq!(manifest.skills[&"csv".parse().unwrap()].registry, None);
        assert_eq!(manifest.root(), temp.path());

        let set = |name: &str, registry: RegistryChoice| SetSkill {
            name: name.parse().unwrap(),
            requirement: "^3".into(),
            registry,
        };
        let before = fs_err::read_to_string(temp.path().join(MANIFEST)).unwrap();
        let (text, _) = edit(
            &before,
            &[
                set("new", RegistryChoice::Named("corp".into())),
                set("plain", RegistryChoice::Default),
                set("csv", RegistryChoice::Named("eu-2".into())),
                set("pdf", RegistryChoice::Keep),
            ],
            &[],
            &[],
        )
        .unwrap();
        assert!(
            text.contains("new = { version = \"^3\", registry = \"corp\" }"),
            "{text}"
        );
        assert!(text.contains("plain = \"^3\""), "{text}");
        assert!(
            text.contains("csv = { version = \"^3\", registry = \"eu-2\" }"),
            "{text}"
        );
        assert!(
            text.contains("pdf = { version = \"^3\", registry = \"corp\" }"),
            "{text}"
        );

        let (text, _) = edit(&text, &[set("pdf", RegistryChoice::Default)], &[], &[]).unwrap();
        let manifest = parse(temp.path().join(MANIFEST), &text).unwrap();
        let pdf = &manifest.skills[&"pdf".parse().unwrap()];
        assert_eq!(pdf.registry, None);
    }

    #[test]
    fn a_misspelt_key_or_a_bad_registry_name_in_a_skill_entry_is_named() {
        let temp = tempfile::tempdir().unwrap();
        let error_for = |entry: &str| {
            fs_err::write(
                temp.path().join(MANIFEST),
                format!("[skills]\npdf = {entry}\n"),
            )
            .unwrap();
            read(temp.path()).unwrap_err().to_string()
        };
        let error = error_for("{ version = \"1\", registy = \"corp\" }");
        assert!(error.contains("unknown key `registy`"), "{error}");
        assert!(error.contains("`pdf`"), "{error}");
        let error = error_for("{ version = \"1\", registry = \"Corp\" }");
        assert!(error.contains("not a registry name"), "{error}");
        let error = error_for("{ registry = \"corp\" }");
        assert!(error.contains("has no `version`"), "{error}");
    }
}
