//! Editing the JSON files (Claude Code, Copilot, VS Code, Cursor): one
//! member of the servers object added, updated or removed, through a
//! concrete syntax tree (`jsonc-parser`'s CST), so that everything else
//! stays as it was, byte for byte: the other members and their order,
//! comments (VS Code's `mcp.json` is JSONC), trailing commas, indentation
//! and line ends. A new member is laid out like its neighbours.
//!
//! Read as JSON with comments and trailing commas, nothing looser (no
//! single quotes, unquoted keys, hexadecimal numbers: an agent's own parser
//! would refuse them). Refused, with the line: what is not that, a key
//! given twice (which one an agent reads is its parser's choice), a top
//! level or servers member that is not an object.

use jsonc_parser::cst::{CstInputValue, CstObject, CstRootNode};
use jsonc_parser::{CollectOptions, ParseOptions, ast};
use serde_json::Value;

use super::{Action, Edit, Problem, is_ours};
use crate::runtime::tool_call::json_kind as kind;

/// The keys of a server entry in the order the agents write them; others
/// follow, sorted.
const ENTRY_ORDER: [&str; 6] = ["type", "command", "args", "env", "tools", "cwd"];

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
    let root = parse(old)?;
    let servers = servers(&root, servers_key, true)?.expect("made when missing");
    let action = match servers.get(name) {
        None => {
            servers.append(name, input(entry));
            Action::Added
        }
        Some(existing) => {
            let value = existing.value().and_then(|value| value.to_serde_value());
            match (existing.object_value(), &value, entry) {
                (Some(object), Some(before), Value::Object(wanted)) if is_our_entry(before) => {
                    for (key, value) in wanted {
                        match object.get(key) {
                            // The launch is ours to set; the rest only when absent.
                            Some(prop) if matches!(key.as_str(), "command" | "args") => {
                                if prop.value().and_then(|now| now.to_serde_value()).as_ref()
                                    != Some(value)
                                {
                                    prop.set_value(input(value));
                                }
                            }
                            Some(_) => {}
                            None => {
                                object.append(key, input(value));
                            }
                        }
                    }
                    if root.to_string() == old {
                        Action::Unchanged
                    } else {
                        Action::Updated
                    }
                }
                _ if force => {
                    existing.set_value(input(entry));
                    Action::Updated
                }
                _ => {
                    return Err(Problem::NotOurs {
                        name: name.to_owned(),
                        command: value
                            .as_ref()
                            .map_or_else(|| "nothing".to_owned(), describe),
                    });
                }
            }
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
    let root = parse(old)?;
    let Some(servers) = servers(&root, servers_key, false)? else {
        return Ok(absent());
    };
    let Some(existing) = servers.get(name) else {
        return Ok(absent());
    };
    let value = existing.value().and_then(|value| value.to_serde_value());
    if !value.as_ref().is_some_and(is_our_entry) {
        return Err(Problem::NotOurs {
            name: name.to_owned(),
            command: value
                .as_ref()
                .map_or_else(|| "nothing".to_owned(), describe),
        });
    }
    existing.remove();
    Ok(Edit {
        action: Action::Removed,
        text: render(&root, old),
    })
}

/// What the files are read as: JSON, with comments and trailing commas.
fn options() -> ParseOptions {
    ParseOptions {
        allow_comments: true,
        allow_trailing_commas: true,
        allow_loose_object_property_names: false,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        allow_bare_decimal_point_numbers: false,
        allow_non_finite_numbers: false,
        allow_extended_string_escapes: false,
    }
}

/// Parses a configuration file: an object, or nothing at all (an empty
/// file is an empty configuration).
fn parse(text: &str) -> Result<CstRootNode, Problem> {
    let malformed = |error: jsonc_parser::errors::ParseError| {
        Problem::Malformed(format!(
            "not valid JSON at line {}, column {}: {}",
            error.line_display(),
            error.column_display(),
            error.kind()
        ))
    };
    let parsed = jsonc_parser::parse_to_ast(text, &CollectOptions::default(), &options())
        .map_err(malformed)?;
    if let Some(value) = &parsed.value {
        no_duplicates(value, text)?;
        if !matches!(value, ast::Value::Object(_)) {
            return Err(Problem::Shape(format!(
                "the top level is {}, not an object",
                ast_kind(value)
            )));
        }
    }
    let root = CstRootNode::parse(text, &options()).map_err(malformed)?;
    if root.value().is_none() {
        root.set_value(CstInputValue::Object(Vec::new()));
    }
    Ok(root)
}

/// The servers object at `key` of the top level; made, when `make`, if
/// there is none.
fn servers(root: &CstRootNode, key: &str, make: bool) -> Result<Option<CstObject>, Problem> {
    let top = root.object_value().expect("checked to be an object");
    match top.get(key) {
        Some(prop) => match prop.object_value() {
            Some(object) => Ok(Some(object)),
            None => Err(Problem::Shape(format!(
                "`{key}` is {}, not an object",
                prop.value()
                    .and_then(|value| value.to_serde_value())
                    .as_ref()
                    .map_or("nothing", kind)
            ))),
        },
        None if make => Ok(Some(top.object_value_or_set(key))),
        None => Ok(None),
    }
}

/// Fails at the second of two keys of one object that are the same.
fn no_duplicates(value: &ast::Value<'_>, text: &str) -> Result<(), Problem> {
    match value {
        ast::Value::Object(object) => {
            let mut seen = std::collections::HashSet::new();
            for prop in &object.properties {
                let key = prop.name.as_str();
                if !seen.insert(key) {
                    let line = text[..prop.range.start].matches('\n').count() + 1;
                    return Err(Problem::Malformed(format!(
                        "the key `{key}` is given twice (line {line})"
                    )));
                }
                no_duplicates(&prop.value, text)?;
            }
            Ok(())
        }
        ast::Value::Array(array) => array
            .elements
            .iter()
            .try_for_each(|element| no_duplicates(element, text)),
        _ => Ok(()),
    }
}

/// `value` as the CST takes it, an entry's keys in the agents' order.
fn input(value: &Value) -> CstInputValue {
    match value {
        Value::Null => CstInputValue::Null,
        Value::Bool(value) => CstInputValue::Bool(*value),
        Value::Number(number) => CstInputValue::Number(number.to_string()),
        Value::String(text) => CstInputValue::String(text.clone()),
        Value::Array(items) => CstInputValue::Array(items.iter().map(input).collect()),
        Value::Object(members) => {
            let mut members: Vec<(&String, &Value)> = members.iter().collect();
            members.sort_by_key(|(key, _)| {
                (
                    ENTRY_ORDER
                        .iter()
                        .position(|known| known == key)
                        .unwrap_or(ENTRY_ORDER.len()),
                    key.as_str(),
                )
            });
            CstInputValue::Object(
                members
                    .into_iter()
                    .map(|(key, value)| (key.clone(), input(value)))
                    .collect(),
            )
        }
    }
}

/// The edited document; a new file ends with a newline.
fn render(root: &CstRootNode, old: &str) -> String {
    let mut text = root.to_string();
    if old.trim().is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text
}

fn ast_kind(value: &ast::Value<'_>) -> &'static str {
    match value {
        ast::Value::NullKeyword(_) => "null",
        ast::Value::BooleanLit(_) => "a boolean",
        ast::Value::NumberLit(_) => "a number",
        ast::Value::StringLit(_) => "a string",
        ast::Value::Array(_) => "an array",
        ast::Value::Object(_) => "an object",
    }
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
