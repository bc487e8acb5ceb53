//! `skillpkg scopes`: the skills each agent would load from here, scope by
//! scope, with the shadowed and skipped ones marked. Also where `prompt`
//! and `select` get their skills.

use serde_json::json;
use skillpkg_index::skill::Host;
use skillpkg_index::skill::catalog::{self, Catalog, FoundSkill, SkillStatus};
use skillpkg_index::skill::scope::AGENT_HOSTS;

use crate::args::{ScopesArgs, ScopesHost, SkillSourceArgs};
use crate::client::settings;
use crate::error::{ExitStatus, UserError};
use crate::printer::Printer;
use crate::render::one_line;

/// The host `prompt` and `select` read when none is given.
pub const DEFAULT_HOST: Host = Host::ClaudeCode;

pub fn run(args: &ScopesArgs, printer: &Printer) -> anyhow::Result<ExitStatus> {
    let hosts = match args.host {
        ScopesHost::One(host) => vec![host],
        ScopesHost::All => AGENT_HOSTS.to_vec(),
    };
    let env = settings::agent_environment()?;
    let mut catalogs = Vec::with_capacity(hosts.len());
    for host in hosts {
        catalogs.push(discover(host, &env)?);
    }
    if args.json {
        printer.json(&json!({
            "cwd": env.cwd,
            "hosts": catalogs.iter().map(catalog_json).collect::<Vec<_>>(),
        }));
    } else {
        for (index, catalog) in catalogs.iter().enumerate() {
            if index > 0 {
                printer.result("");
            }
            printer.result(&render(catalog));
        }
    }
    Ok(ExitStatus::Success)
}

/// Returns the skills `source` names: a folder's, or a host's (default
/// [`DEFAULT_HOST`]) as seen from the working folder.
pub fn skills_from(source: &SkillSourceArgs) -> anyhow::Result<Catalog> {
    let host = source.host.unwrap_or(DEFAULT_HOST);
    match &source.skills {
        Some(dir) => {
            if !dir.is_dir() {
                return Err(
                    UserError::new(format!("`{}` is not a folder", dir.display()))
                        .with_hint(
                            "give the folder whose subfolders are skills, such as .claude/skills",
                        )
                        .into(),
                );
            }
            Ok(catalog::from_folder(dir, host))
        }
        None => discover(host, &settings::agent_environment()?),
    }
}

fn discover(
    host: Host,
    env: &skillpkg_index::skill::scope::Environment,
) -> anyhow::Result<Catalog> {
    catalog::discover(host, env).map_err(|error| {
        let hint = error.hint();
        UserError::new(error.to_string()).with_hint(hint).into()
    })
}

/// A skill's status as one word.
fn status_word(skill: &FoundSkill) -> &'static str {
    match skill.status {
        SkillStatus::Active(_) => "active",
        SkillStatus::Shadowed { .. } => "shadowed",
        SkillStatus::Skipped { .. } => "skipped",
    }
}

fn render(catalog: &Catalog) -> String {
    let host = catalog.host.map_or("folder", Host::as_str);
    let width = catalog
        .skills()
        .map(|skill| skill.folder.chars().count())
        .max()
        .unwrap_or(0);
    let kind_width = catalog
        .scopes
        .iter()
        .map(|listing| listing.scope.kind.as_str().len())
        .max()
        .unwrap_or(0);
    let mut lines = vec![host.to_owned()];
    let (mut active, mut shadowed, mut skipped) = (0, 0, 0);
    for listing in &catalog.scopes {
        let scope = &listing.scope;
        let mut line = format!(
            "  {:kind_width$} {}",
            scope.kind.as_str(),
            one_line(&scope.dir.display().to_string())
        );
        if let Some(plugin) = &scope.plugin {
            line.push_str(&format!(" (plugin {})", one_line(plugin)));
        }
        if let Some(error) = &listing.error {
            line.push_str(&format!(": cannot be read: {}", one_line(error)));
        } else if !listing.present {
            line.push_str(": not present");
        }
        lines.push(line);
        for skill in &listing.skills {
            let folder = one_line(&skill.folder);
            let mut line = format!("    {:9} {folder:width$}", status_word(skill));
            match &skill.status {
                SkillStatus::Active(loaded) => {
                    active += 1;
                    if let Some(error) = loaded.first_error() {
                        line.push_str(&format!(
                            "  loads, but has {} error(s), the first {}: run `skillpkg validate`",
                            loaded.errors(),
                            error.code
                        ));
                    }
                }
                SkillStatus::Shadowed { by, .. } => {
                    shadowed += 1;
                    line.push_str(&format!("  by {}", one_line(&by.display().to_string())));
                }
                SkillStatus::Skipped { code, message } => {
                    skipped += 1;
                    line.push_str(&format!("  {code}: {}", one_line(message)));
                }
            }
            if let Some(link) = &skill.link {
                line.push_str(&format!("  (-> {})", one_line(&link.display().to_string())));
            }
            lines.push(line.trim_end().to_owned());
        }
    }
    for note in &catalog.notes {
        lines.push(format!("  note: {}", one_line(note)));
    }
    lines.push(format!(
        "{active} active, {shadowed} shadowed, {skipped} skipped"
    ));
    lines.join("\n")
}

fn catalog_json(catalog: &Catalog) -> serde_json::Value {
    json!({
        "host": catalog.host.map(Host::as_str),
        "scopes": catalog.scopes.iter().map(|listing| json!({
            "kind": listing.scope.kind,
            "dir": listing.scope.dir,
            "plugin": listing.scope.plugin,
            "present": listing.present,
            "error": listing.error,
            "skills": listing.skills.iter().map(skill_json).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "notes": catalog.notes,
    })
}

fn skill_json(skill: &FoundSkill) -> serde_json::Value {
    let mut value = json!({
        "folder": skill.folder,
        "location": skill.location,
        "link": skill.link,
        "status": status_word(skill),
    });
    let fields = value.as_object_mut().expect("an object");
    match &skill.status {
        SkillStatus::Active(loaded) | SkillStatus::Shadowed { skill: loaded, .. } => {
            fields.insert("name".into(), json!(loaded.frontmatter.name.as_str()));
            fields.insert("description".into(), json!(loaded.frontmatter.description));
            fields.insert("errors".into(), json!(loaded.errors()));
            fields.insert(
                "first_error".into(),
                json!(loaded.first_error().map(|d| d.code)),
            );
            if let SkillStatus::Shadowed { by, .. } = &skill.status {
                fields.insert("shadowed_by".into(), json!(by));
            }
        }
        SkillStatus::Skipped { code, message } => {
            fields.insert("code".into(), json!(code));
            fields.insert("message".into(), json!(message));
        }
    }
    value
}
