//! `skills.toml` (docs/manifest.md): read into a typed model, and edited in
//! place with `toml_edit` so that `add` and `remove` keep comments and layout.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use skillpkg_index::skill::SkillName;

use crate::UserError;

/// The manifest's file name.
pub const MANIFEST: &str = "skills.toml";

/// A skill the manifest asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Requirement {
    pub requirement: semver::VersionReq,
    pub allow_unsigned: bool,
}

/// The manifest, read.
#[derive(Clone, Debug, Default)]
pub struct Manifest {
    pub registry: Option<String>,
    pub targets: Vec<String>,
    pub skills: BTreeMap<SkillName, Requirement>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RawManifest {
    registry: Option<RawRegistry>,
    install: Option<RawInstall>,
    #[serde(default)]
    skills: BTreeMap<String, RawRequirement>,
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
}

#[derive(serde::Deserialize)]
#[serde(untagged)]
enum RawRequirement {
    Version(String),
    Table {
        version: String,
        #[serde(default, rename = "allow-unsigned")]
        allow_unsigned: bool,
    },
}

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
    let raw: RawManifest = toml::from_str(&text).map_err(|error| {
        UserError::new(format!("{} is not a valid manifest", path.display()))
            .with_hint("see docs/manifest.md for its keys")
            .with_source(error)
    })?;
    let mut skills = BTreeMap::new();
    for (name, raw) in raw.skills {
        let skill: SkillName = name.parse().map_err(|error| {
            UserError::new(format!(
                "`{name}` in {} is not a valid skill name",
                path.display()
            ))
            .with_source(error)
        })?;
        let (text, allow_unsigned) = match raw {
            RawRequirement::Version(text) => (text, false),
            RawRequirement::Table {
                version,
                allow_unsigned,
            } => (version, allow_unsigned),
        };
        let requirement = text.parse().map_err(|error| {
            UserError::new(format!(
                "the requirement `{text}` of `{name}` in {} is not a semver requirement",
                path.display()
            ))
            .with_hint("write it like \"^1.2\", \"~1.2.3\", \"=1.0.0\" or \"*\"")
            .with_source(error)
        })?;
        skills.insert(
            skill,
            Requirement {
                requirement,
                allow_unsigned,
            },
        );
    }
    Ok(Manifest {
        registry: raw.registry.map(|registry| registry.url),
        targets: raw
            .install
            .map(|install| install.targets)
            .unwrap_or_default(),
        skills,
    })
}

/// Writes a new manifest; refuses to replace one.
pub fn create(root: &Path, registry: Option<&str>, targets: &[String]) -> anyhow::Result<PathBuf> {
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
        "\n[install]\ntargets = [{}]\n\n[skills]\n",
        targets.join(", ")
    ));
    write(&path, &text)?;
    Ok(path)
}

fn toml_string(text: &str) -> String {
    toml_edit::Value::from(text).to_string().trim().to_owned()
}

/// Reads the manifest as an editable document.
fn load_document(root: &Path) -> anyhow::Result<(PathBuf, toml_edit::DocumentMut)> {
    let path = root.join(MANIFEST);
    let text = fs_err::read_to_string(&path)?;
    let document = text.parse().map_err(|error| {
        UserError::new(format!("{} is not valid TOML", path.display())).with_source(error)
    })?;
    Ok((path, document))
}

/// Returns the `[skills]` table, creating it when missing.
fn skills_table(document: &mut toml_edit::DocumentMut) -> anyhow::Result<&mut toml_edit::Table> {
    document
        .entry("skills")
        .or_insert(toml_edit::table())
        .as_table_mut()
        .context("`skills` must be a table")
}

/// Marks skills as allowed unsigned (`{ version = "...", allow-unsigned = true }`).
pub fn allow_unsigned(root: &Path, names: &[SkillName]) -> anyhow::Result<()> {
    let (path, mut document) = load_document(root)?;
    let skills = skills_table(&mut document)?;
    for name in names {
        let Some(item) = skills.get_mut(name.as_str()) else {
            continue;
        };
        let mut table = match item.as_inline_table() {
            Some(table) => table.clone(),
            None => {
                let mut table = toml_edit::InlineTable::new();
                table.insert("version", item.as_str().unwrap_or("*").into());
                table
            }
        };
        table.insert("allow-unsigned", true.into());
        *item = toml_edit::value(table);
    }
    write(&path, &document.to_string())
}

/// Edits the manifest in place: sets or removes skills, adds targets.
pub fn edit(
    root: &Path,
    set: &[(SkillName, String)],
    remove: &[SkillName],
    add_targets: &[String],
) -> anyhow::Result<Vec<SkillName>> {
    let (path, mut document) = load_document(root)?;
    let skills = skills_table(&mut document)?;
    for (name, requirement) in set {
        match skills
            .get_mut(name.as_str())
            .and_then(|item| item.as_inline_table_mut())
        {
            Some(table) => {
                table.insert("version", requirement.as_str().into());
            }
            None => skills[name.as_str()] = toml_edit::value(requirement.as_str()),
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
    write(&path, &document.to_string())?;
    Ok(missing)
}

/// Replaces a file atomically.
pub fn write(path: &Path, text: &str) -> anyhow::Result<()> {
    use std::io::Write as _;
    let parent = path
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut file = tempfile::NamedTempFile::new_in(parent)
        .with_context(|| format!("cannot write into {}", parent.display()))?;
    file.write_all(text.as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        file.as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o644))?;
    }
    file.persist(path)
        .with_context(|| format!("cannot write {}", path.display()))?;
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

        edit(
            temp.path(),
            &[("new".parse().unwrap(), "^0.3".into())],
            &["csv".parse().unwrap()],
            &["agents".into()],
        )
        .unwrap();
        let text = fs_err::read_to_string(temp.path().join(MANIFEST)).unwrap();
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
    fn a_bad_requirement_names_the_skill() {
        let temp = tempfile::tempdir().unwrap();
        fs_err::write(temp.path().join(MANIFEST), "[skills]\npdf = \"latest\"\n").unwrap();
        let error = read(temp.path()).unwrap_err();
        assert!(error.to_string().contains("`latest` of `pdf`"), "{error}");
    }
}
