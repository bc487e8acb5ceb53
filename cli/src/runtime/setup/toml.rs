//! Editing Codex's `config.toml` with `toml_edit`: the table
//! `[mcp_servers.NAME]` added, updated or removed, and every other byte of
//! the file (comments, blank lines, key order, quoting) left as it was.
//! Installing and then uninstalling gives back the file byte for byte.

use toml_edit::{Array, DocumentMut, InlineTable, Item, Table, TableLike, Value};

use super::{Action, Edit, Launch, Problem, is_ours};

/// Adds the table `[mcp_servers.NAME]` with `command` and `args`, or sets
/// those two keys of skillpkg's own table (keeping any others, such as
/// `env` or `startup_timeout_sec`).
pub(super) fn install(
    old: &str,
    name: &str,
    launch: &Launch,
    force: bool,
) -> Result<Edit, Problem> {
    let mut document = parse(old)?;
    if !document.contains_key("mcp_servers") {
        // Implicit: only `[mcp_servers.NAME]` is written, as Codex does.
        let mut servers = Table::new();
        servers.set_implicit(true);
        document.insert("mcp_servers", Item::Table(servers));
    }
    let (servers, inline) = servers_mut(&mut document)?.expect("inserted above");
    let action = match servers.get_mut(name) {
        None => {
            insert_new(servers, inline, name, launch);
            Action::Added
        }
        Some(existing) if is_our_entry(existing) => {
            let entry = existing
                .as_table_like_mut()
                .expect("an entry of ours is a table");
            let mut changed = false;
            if entry.get("command").and_then(Item::as_str) != Some(launch.command.as_str()) {
                entry.insert("command", toml_edit::value(launch.command.as_str()));
                changed = true;
            }
            if string_array(entry.get("args")).as_deref() != Some(launch.args.as_slice()) {
                entry.insert("args", toml_edit::value(args_array(launch)));
                changed = true;
            }
            if changed {
                Action::Updated
            } else {
                Action::Unchanged
            }
        }
        Some(_) if force => {
            servers.remove(name);
            insert_new(servers, inline, name, launch);
            Action::Updated
        }
        Some(existing) => {
            return Err(Problem::NotOurs {
                name: name.to_owned(),
                command: describe(existing),
            });
        }
    };
    Ok(Edit {
        text: if action == Action::Unchanged {
            old.to_owned()
        } else {
            document.to_string()
        },
        action,
    })
}

/// Removes skillpkg's table `[mcp_servers.NAME]`.
pub(super) fn uninstall(old: &str, name: &str) -> Result<Edit, Problem> {
    let absent = || Edit {
        action: Action::Absent,
        text: old.to_owned(),
    };
    let mut document = parse(old)?;
    let Some((servers, _)) = servers_mut(&mut document)? else {
        return Ok(absent());
    };
    match servers.get(name) {
        None => return Ok(absent()),
        Some(existing) if !is_our_entry(existing) => {
            return Err(Problem::NotOurs {
                name: name.to_owned(),
                command: describe(existing),
            });
        }
        Some(_) => {}
    }
    servers.remove(name);
    Ok(Edit {
        action: Action::Removed,
        text: document.to_string(),
    })
}

fn parse(text: &str) -> Result<DocumentMut, Problem> {
    text.parse::<DocumentMut>()
        .map_err(|error| Problem::Malformed(error.to_string().trim_end().to_owned()))
}

/// The `mcp_servers` table, if the document has one, and whether it is
/// an inline table (`mcp_servers = { ... }`).
fn servers_mut(document: &mut DocumentMut) -> Result<Option<(&mut dyn TableLike, bool)>, Problem> {
    match document.get_mut("mcp_servers") {
        None => Ok(None),
        Some(item) => {
            let kind = item.type_name();
            let inline = item.is_inline_table();
            item.as_table_like_mut()
                .map(|servers| Some((servers, inline)))
                .ok_or_else(|| Problem::Shape(format!("`mcp_servers` is {kind}, not a table")))
        }
    }
}

/// Inserts a new entry: a `[mcp_servers.NAME]` table, or an inline table
/// where the servers are an inline table themselves (which can hold
/// nothing else).
fn insert_new(servers: &mut dyn TableLike, inline: bool, name: &str, launch: &Launch) {
    if inline {
        let mut entry = InlineTable::new();
        entry.insert("command", launch.command.as_str().into());
        entry.insert("args", Value::Array(args_array(launch)));
        servers.insert(name, toml_edit::value(entry));
    } else {
        let mut entry = Table::new();
        entry.insert("command", toml_edit::value(launch.command.as_str()));
        entry.insert("args", toml_edit::value(args_array(launch)));
        servers.insert(name, Item::Table(entry));
    }
}

fn args_array(launch: &Launch) -> Array {
    launch.args.iter().map(String::as_str).collect()
}

/// The strings of an array item; `None` if it is not an array of strings.
fn string_array(item: Option<&Item>) -> Option<Vec<String>> {
    item?
        .as_array()?
        .iter()
        .map(|value| value.as_str().map(ToOwned::to_owned))
        .collect()
}

fn is_our_entry(entry: &Item) -> bool {
    let Some(entry) = entry.as_table_like() else {
        return false;
    };
    let args = string_array(entry.get("args"));
    is_ours(
        entry.get("command").and_then(Item::as_str),
        args.as_ref()
            .and_then(|args| args.first())
            .map(String::as_str),
    )
}

/// What an entry that is not skillpkg's runs, for the error.
fn describe(entry: &Item) -> String {
    let Some(table) = entry.as_table_like() else {
        return format!("{}, not a server table", entry.type_name());
    };
    if let Some(url) = table.get("url").and_then(Item::as_str) {
        return url.to_owned();
    }
    let Some(command) = table.get("command").and_then(Item::as_str) else {
        return "a table with no command".to_owned();
    };
    std::iter::once(command.to_owned())
        .chain(string_array(table.get("args")).unwrap_or_default())
        .collect::<Vec<_>>()
        .join(" ")
}
