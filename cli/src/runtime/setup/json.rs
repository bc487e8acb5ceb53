//! Editing the JSON files (Claude Code, Copilot, VS Code, Cursor): one
//! member of the servers object added, updated or removed, everything else
//! kept in its order (serde_json's `preserve_order`). The file is written
//! back with two spaces of indent, as the agents themselves write it; a
//! file that had another layout gets that one.
//!
//! Refused, with the line: what is not JSON, a key given twice (JSON
//! allows it, but which one an agent reads is its parser's choice, and a
//! rewrite would drop one), comments and trailing commas (VS Code's
//! JSONC, which a rewrite would lose), a top level or servers member that
//! is not an object.

use std::fmt;

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use super::{Action, Edit, Problem, is_ours};

/// Adds `entry` as the server `name` of the object at `servers_key`, or
/// updates skillpkg's own entry of that name (its `command` and `args`,
/// keeping whatever else the user added to it, such as `env`).
pub(super) fn install(
    old: &str,
    servers_key: &str,
    name: &str,
    entry: &Value,
    force: bool,
) -> Result<Edit, Problem> {
    let mut root = parse(old)?;
    let servers = match root.get_mut(servers_key) {
        Some(servers) => servers,
        None => root
            .entry(servers_key)
            .or_insert_with(|| Value::Object(Map::new())),
    };
    let Value::Object(servers) = servers else {
        return Err(Problem::Shape(format!(
            "`{servers_key}` is {}, not an object",
            kind(servers)
        )));
    };
    let action = match servers.get_mut(name) {
        None => {
            servers.insert(name.to_owned(), entry.clone());
            Action::Added
        }
        Some(existing) if is_our_entry(existing) => {
            let before = existing.clone();
            if let (Value::Object(existing), Value::Object(entry)) = (&mut *existing, entry) {
                for (key, value) in entry {
                    // The launch is ours to set; the rest only when absent.
                    if matches!(key.as_str(), "command" | "args") || !existing.contains_key(key) {
                        existing.insert(key.clone(), value.clone());
                    }
                }
            }
            if *existing == before {
                Action::Unchanged
            } else {
                Action::Updated
            }
        }
        Some(existing) if force => {
            *existing = entry.clone();
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
            render(&root, old)
        },
        action,
    })
}

/// Removes skillpkg's server `name` from the object at `servers_key`.
pub(super) fn uninstall(old: &str, servers_key: &str, name: &str) -> Result<Edit, Problem> {
    let absent = || Edit {
        action: Action::Absent,
        text: old.to_owned(),
    };
    if old.trim().is_empty() {
        return Ok(absent());
    }
    let mut root = parse(old)?;
    let Some(servers) = root.get_mut(servers_key) else {
        return Ok(absent());
    };
    let Value::Object(servers) = servers else {
        return Err(Problem::Shape(format!(
            "`{servers_key}` is {}, not an object",
            kind(servers)
        )));
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
    // Not `remove`: with `preserve_order` it moves the last member into
    // the hole.
    servers.shift_remove(name);
    Ok(Edit {
        action: Action::Removed,
        text: render(&root, old),
    })
}

/// Parses a configuration file: an object, or nothing at all (an empty
/// file is an empty configuration).
fn parse(text: &str) -> Result<Map<String, Value>, Problem> {
    if text.trim().is_empty() {
        return Ok(Map::new());
    }
    let refused = |error: serde_json::Error| {
        let message = error.to_string();
        if looks_like_jsonc(text, &error) {
            Problem::Comments(message)
        } else {
            Problem::Malformed(format!("not valid JSON: {message}"))
        }
    };
    serde_json::from_str::<NoDuplicates>(text).map_err(refused)?;
    match serde_json::from_str::<Value>(text).map_err(refused)? {
        Value::Object(root) => Ok(root),
        other => Err(Problem::Shape(format!(
            "the top level is {}, not an object",
            kind(&other)
        ))),
    }
}

/// Returns true if and only if the parse failed at a comment or a
/// trailing comma: what JSONC allows and JSON does not.
fn looks_like_jsonc(text: &str, error: &serde_json::Error) -> bool {
    if error.to_string().starts_with("trailing comma") {
        return true;
    }
    let Some(line) = text.lines().nth(error.line().saturating_sub(1)) else {
        return false;
    };
    // serde_json's column is where it stopped, 1-based: at the `/`, or
    // just past it.
    let at = error.column().saturating_sub(1);
    (at.saturating_sub(1)..=at).any(|start| {
        line.get(start..)
            .is_some_and(|rest| rest.starts_with("//") || rest.starts_with("/*"))
    })
}

/// The document in two-space indent, ending with a newline when the old
/// file did (Claude Code writes none) or there was no file.
fn render(root: &Map<String, Value>, old: &str) -> String {
    let mut text = serde_json::to_string_pretty(root).expect("a JSON value serialises");
    if old.trim().is_empty() || old.ends_with('\n') {
        text.push('\n');
    }
    text
}

fn is_our_entry(entry: &Value) -> bool {
    is_ours(
        entry.get("command").and_then(Value::as_str),
        entry
            .get("args")
            .and_then(Value::as_array)
            .and_then(|args| args.first())
            .and_then(Value::as_str),
    )
}

/// What an entry that is not skillpkg's runs, for the error.
fn describe(entry: &Value) -> String {
    if let Some(url) = entry.get("url").and_then(Value::as_str) {
        return url.to_owned();
    }
    let Some(command) = entry.get("command").and_then(Value::as_str) else {
        return format!("{}, not a server with a command", kind(entry));
    };
    let args = entry
        .get("args")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|arg| {
            arg.as_str()
                .map_or_else(|| arg.to_string(), ToOwned::to_owned)
        });
    std::iter::once(command.to_owned())
        .chain(args)
        .collect::<Vec<_>>()
        .join(" ")
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Any JSON value in which no object has a key twice; parsing into it
/// fails, at the second key's line, otherwise.
struct NoDuplicates;

impl<'de> de::Deserialize<'de> for NoDuplicates {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(NoDuplicatesVisitor)
    }
}

struct NoDuplicatesVisitor;

impl<'de> Visitor<'de> for NoDuplicatesVisitor {
    type Value = NoDuplicates;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<NoDuplicates, E> {
        Ok(NoDuplicates)
    }

    fn visit_i64<E>(self, _: i64) -> Result<NoDuplicates, E> {
        Ok(NoDuplicates)
    }

    fn visit_u64<E>(self, _: u64) -> Result<NoDuplicates, E> {
        Ok(NoDuplicates)
    }

    fn visit_f64<E>(self, _: f64) -> Result<NoDuplicates, E> {
        Ok(NoDuplicates)
    }

    fn visit_str<E>(self, _: &str) -> Result<NoDuplicates, E> {
        Ok(NoDuplicates)
    }

    fn visit_unit<E>(self) -> Result<NoDuplicates, E> {
        Ok(NoDuplicates)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<NoDuplicates, A::Error> {
        while seq.next_element::<NoDuplicates>()?.is_some() {}
        Ok(NoDuplicates)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<NoDuplicates, A::Error> {
        let mut seen = std::collections::HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if !seen.insert(key.clone()) {
                return Err(de::Error::custom(format_args!(
                    "the key `{key}` is given twice"
                )));
            }
            map.next_value::<NoDuplicates>()?;
        }
        Ok(NoDuplicates)
    }
}
