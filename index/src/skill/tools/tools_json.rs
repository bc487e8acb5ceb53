//! `tools.json`: the tools of `SKILL.md` as a JSON file, for hosts that read
//! JSON and not YAML.
//!
//! ```text
//! pdf-processing/
//!   SKILL.md      tools: [...]          the source of truth
//!   tools.json    [{"name": ...}, ...]  derived: `skillpkg tools sync` writes it
//! ```
//!
//! Spec 003 ("Tool Source Priority") makes `SKILL.md` canonical: a
//! `tools.json` that disagrees with it is stale, and adapters ignore it. The
//! file is an array of the same tool objects (Appendix B, embedded as
//! `schemas/tools.schema.json`). Rendering is deterministic: the tools
//! serialized in the spec's field order, schema keys sorted, pretty-printed
//! with two spaces and a final newline, so the same `SKILL.md` always gives
//! the same bytes and the file diffs well under version control.
//!
//! `validate` compares the two as JSON values: formatting is not staleness.
//! `sync` compares bytes, so that it also brings a hand-formatted file into
//! the canonical form, and `sync --check` fails exactly when `sync` would
//! write. A skill without tools has no `tools.json`: one that is there
//! anyway (even `[]`) is stale, and `sync` removes it.

// Appendix B, compiled once: every `validate` of a skill with a
// `tools.json` uses it.
use crate::skill::extensions::TOOLS_VALIDATOR as SCHEMA;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::archive::DEFAULT_MAX_BYTES;
use crate::skill::diagnostic::{Code, Diagnostic, Location};
use crate::skill::model::Tool;

/// The file's name, at the skill's root.
pub const TOOLS_JSON: &str = "tools.json";

/// The largest `tools.json` read: a bigger one makes the skill too large to
/// pack anyway, and the bound keeps a hostile file from filling memory.
pub const MAX_BYTES: u64 = DEFAULT_MAX_BYTES;

/// Schema problems shown at most; the rest are counted.
const MAX_PROBLEMS: usize = 10;

/// Diff lines shown in a diagnostic at most; the rest are counted.
const MAX_DIFF_LINES: usize = 60;

/// Why a `tools.json` cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ToolsJsonError {
    #[error("cannot read {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("`{TOOLS_JSON}` is not a regular file")]
    NotAFile,
    #[error("`{TOOLS_JSON}` is {size} bytes long; the limit is {MAX_BYTES}")]
    TooLarge { size: u64 },
    #[error("`{TOOLS_JSON}` is not valid JSON: {message}")]
    Syntax {
        message: String,
        /// 1-based; 0 when the parser gave no place.
        line: usize,
        column: usize,
    },
    #[error("`{TOOLS_JSON}` does not match the tools.json schema (spec 003, Appendix B): {}", describe(problems, *more))]
    Schema {
        problems: Vec<SchemaProblem>,
        /// Problems found beyond those listed.
        more: usize,
    },
}

/// One place where a `tools.json` breaks Appendix B.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct SchemaProblem {
    /// The JSON pointer of the offending value (`/0/implementation`).
    pub pointer: String,
    pub message: String,
}

fn describe(problems: &[SchemaProblem], more: usize) -> String {
    let mut text = problems
        .iter()
        .map(|problem| {
            let at = if problem.pointer.is_empty() {
                "the document"
            } else {
                &problem.pointer
            };
            format!("at {at}: {}", problem.message)
        })
        .collect::<Vec<_>>()
        .join("; ");
    if more > 0 {
        text.push_str(&format!("; and {more} more"));
    }
    text
}

/// A `tools.json` that is valid JSON and matches Appendix B.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolsJson {
    /// The file as a JSON value, for comparing.
    pub value: Value,
    /// The tools it lists.
    pub tools: Vec<Tool>,
}

/// Returns the canonical `tools.json` for `tools`.
pub fn render(tools: &[Tool]) -> String {
    render_value(tools)
}

/// Renders with the fields in the order `value` serializes them: the
/// spec's order for [`Tool`]s, sorted keys for a plain JSON value.
pub(super) fn render_value(value: &(impl serde::Serialize + ?Sized)) -> String {
    let mut text = serde_json::to_string_pretty(value).expect("tools serialize to JSON");
    text.push('\n');
    text
}

/// Reads the bytes of `dir/tools.json`, or `None` when there is none. A
/// symlink, folder or device is refused rather than followed.
pub fn read_bytes(dir: &Path) -> Result<Option<Vec<u8>>, ToolsJsonError> {
    let path = dir.join(TOOLS_JSON);
    let io_error = |source| ToolsJsonError::Io {
        path: path.clone(),
        source,
    };
    let metadata = match fs_err::symlink_metadata(&path) {
        Ok(metadata) => metadata,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(io_error(error)),
    };
    if !metadata.is_file() {
        return Err(ToolsJsonError::NotAFile);
    }
    if metadata.len() > MAX_BYTES {
        return Err(ToolsJsonError::TooLarge {
            size: metadata.len(),
        });
    }
    let mut bytes = Vec::new();
    // The file may grow between the check and the read: read one byte past
    // the limit at most.
    fs_err::File::open(&path)
        .map_err(io_error)?
        .take(MAX_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(io_error)?;
    if bytes.len() as u64 > MAX_BYTES {
        return Err(ToolsJsonError::TooLarge {
            size: bytes.len() as u64,
        });
    }
    Ok(Some(bytes))
}

/// Parses a `tools.json` and checks it against Appendix B.
pub fn parse(bytes: &[u8]) -> Result<ToolsJson, ToolsJsonError> {
    // serde_json stops at 128 levels of nesting, so a hostile file cannot
    // exhaust the stack.
    let value: Value = serde_json::from_slice(bytes).map_err(|error| ToolsJsonError::Syntax {
        message: error.to_string(),
        line: error.line(),
        column: error.column(),
    })?;
    let mut problems = Vec::new();
    let mut more = 0;
    for error in SCHEMA.iter_errors(&value) {
        if problems.len() < MAX_PROBLEMS {
            problems.push(SchemaProblem {
                pointer: error.instance_path().as_str().to_owned(),
                message: error.to_string(),
            });
        } else {
            more += 1;
        }
    }
    if !problems.is_empty() {
        return Err(ToolsJsonError::Schema { problems, more });
    }
    // Appendix B fixed the shape; the typed model still parses its values
    // (tool names), so a mismatch is reported, never assumed away.
    let tools = serde_json::from_value(value.clone()).map_err(|error| ToolsJsonError::Schema {
        problems: vec![SchemaProblem {
            pointer: String::new(),
            message: error.to_string(),
        }],
        more: 0,
    })?;
    Ok(ToolsJson { value, tools })
}

/// Reads and parses `dir/tools.json`; `None` when there is none.
pub fn read(dir: &Path) -> Result<Option<ToolsJson>, ToolsJsonError> {
    read_bytes(dir)?.map(|bytes| parse(&bytes)).transpose()
}

/// Returns true if and only if a `tools.json` whose value is `value` agrees
/// with the skill's `tools`. A skill without tools has no `tools.json`, so
/// any file disagrees with it.
pub fn agrees(value: &Value, tools: &[Tool]) -> bool {
    !tools.is_empty() && *value == serde_json::to_value(tools).expect("tools serialize to JSON")
}

/// Checks the `tools.json` of the skill in `dir` against Appendix B and,
/// when the skill's `tools` are known, against them (`tools-json-invalid`,
/// `tools-json-stale`). Without a `tools.json` there is nothing to check.
pub fn check(dir: &Path, tools: Option<&[Tool]>, diagnostics: &mut Vec<Diagnostic>) {
    let bytes = match read_bytes(dir) {
        Ok(Some(bytes)) => bytes,
        Ok(None) => return,
        Err(error) => {
            diagnostics.push(invalid(&error, ""));
            return;
        }
    };
    let file = match parse(&bytes) {
        Ok(file) => file,
        Err(error) => {
            diagnostics.push(invalid(&error, &String::from_utf8_lossy(&bytes)));
            return;
        }
    };
    let Some(tools) = tools else {
        return;
    };
    if agrees(&file.value, tools) {
        return;
    }
    let expected = if tools.is_empty() {
        String::new()
    } else {
        render(tools)
    };
    // Rendered like SKILL.md's side, so the diff shows what differs and not
    // how the file was formatted; a file the typed model cannot repeat
    // exactly (`"pip": []`) is shown as it is, keys sorted.
    let current = if serde_json::to_value(&file.tools).ok().as_ref() == Some(&file.value) {
        render(&file.tools)
    } else {
        render_value(&file.value)
    };
    let diff = diff(&current, &expected);
    let message = if tools.is_empty() {
        format!("`{TOOLS_JSON}` is stale: SKILL.md declares no tools")
    } else {
        format!("`{TOOLS_JSON}` is stale: it disagrees with the tools in SKILL.md")
    };
    diagnostics.push(
        Diagnostic::new(Code::ToolsJsonStale, TOOLS_JSON, message).with_hint(format!(
            "run `skillpkg tools sync`: SKILL.md is the source of truth and hosts ignore a stale {TOOLS_JSON}; the difference:\n{}",
            shorten(&diff, MAX_DIFF_LINES)
        )),
    );
}

fn invalid(error: &ToolsJsonError, text: &str) -> Diagnostic {
    let diagnostic = Diagnostic::new(Code::ToolsJsonInvalid, TOOLS_JSON, error.to_string())
        .with_hint(format!(
            "{TOOLS_JSON} is generated from SKILL.md: run `skillpkg tools sync` to rewrite it, or delete it"
        ));
    match error {
        ToolsJsonError::Syntax { line, column, .. } if *line > 0 => diagnostic.at(
            Location {
                line: *line,
                column: (*column).max(1),
                end_column: (*column).max(1) + 1,
            },
            text,
        ),
        _ => diagnostic,
    }
}

/// Returns a unified line diff from `old` (the file) to `new` (what
/// `SKILL.md` gives). Empty when they are equal.
pub fn diff(old: &str, new: &str) -> String {
    similar::TextDiff::configure()
        // A hostile file could make an exact diff slow: past the timeout
        // the diff is coarser, never wrong.
        .timeout(Duration::from_secs(2))
        .diff_lines(old, new)
        .unified_diff()
        .header(TOOLS_JSON, "SKILL.md tools")
        .to_string()
}

fn shorten(text: &str, max_lines: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() <= max_lines {
        return text.trim_end().to_owned();
    }
    format!(
        "{}\n… and {} more lines",
        lines[..max_lines].join("\n"),
        lines.len() - max_lines
    )
}

/// What `sync` does to bring `tools.json` in line with `SKILL.md`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SyncPlan {
    /// The file has the canonical bytes already.
    UpToDate,
    /// The skill has no tools and no `tools.json`.
    NoTools,
    /// Write `contents`, where there was no file.
    Create { contents: String },
    /// Replace the file with `contents`; `diff` shows the change.
    Replace { contents: String, diff: String },
    /// Remove the file, since the skill has no tools; `diff` shows it go.
    Remove { diff: String },
}

impl SyncPlan {
    /// Returns true if and only if carrying the plan out changes the folder.
    pub fn changes(&self) -> bool {
        !matches!(self, Self::UpToDate | Self::NoTools)
    }
}

/// Decides what `sync` does for the skill in `dir` whose tools are `tools`.
/// A `tools.json` that is not valid is replaced like a stale one; one that
/// is not a regular file is an error.
pub fn plan_sync(dir: &Path, tools: &[Tool]) -> Result<SyncPlan, ToolsJsonError> {
    let current = read_bytes(dir)?;
    let current_text = current
        .as_deref()
        .map(|bytes| String::from_utf8_lossy(bytes).into_owned());
    Ok(match (current_text, tools.is_empty()) {
        (None, true) => SyncPlan::NoTools,
        (Some(text), true) => SyncPlan::Remove {
            diff: diff(&text, ""),
        },
        (None, false) => SyncPlan::Create {
            contents: render(tools),
        },
        (Some(text), false) => {
            let contents = render(tools);
            if current.as_deref() == Some(contents.as_bytes()) {
                SyncPlan::UpToDate
            } else {
                SyncPlan::Replace {
                    diff: diff(&text, &contents),
                    contents,
                }
            }
        }
    })
}

/// Carries out `plan` in `dir`: the new file is written to a temporary file
/// beside it and renamed over it, so a reader sees the old file or the new
/// one, never half of one.
pub fn apply_sync(dir: &Path, plan: &SyncPlan) -> Result<(), ToolsJsonError> {
    let path = dir.join(TOOLS_JSON);
    let io_error = |source| ToolsJsonError::Io {
        path: path.clone(),
        source,
    };
    match plan {
        SyncPlan::UpToDate | SyncPlan::NoTools => Ok(()),
        SyncPlan::Remove { .. } => fs_err::remove_file(&path).map_err(io_error),
        SyncPlan::Create { contents } | SyncPlan::Replace { contents, .. } => {
            // 0644, synced, renamed over the old one (a symlink there is
            // replaced, never followed).
            crate::fs::write_atomic(&path, contents.as_bytes())
                .map_err(|error| io_error(error.source))?;
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn tool(name: &str) -> Tool {
        serde_json::from_value(json!({
            "name": name,
            "description": "Does it.",
            "input_schema": { "type": "object", "properties": { "b": {}, "a": {} } },
            "implementation": { "runtime": "python", "entrypoint": "scripts/run.py" }
        }))
        .unwrap()
    }

    #[test]
    fn renders_in_field_order_with_sorted_schema_keys_and_a_final_newline() {
        assert_eq!(
            render(&[tool("run")]),
            r#"[
  {
    "name": "run",
    "description": "Does it.",
    "input_schema": {
      "properties": {
        "a": {},
        "b": {}
      },
      "type": "object"
    },
    "implementation": {
      "runtime": "python",
      "entrypoint": "scripts/run.py"
    }
  }
]
"#
        );
    }

    #[test]
    fn a_rendered_file_parses_back_to_the_same_tools() {
        let tools = vec![tool("one"), tool("two")];
        let parsed = parse(render(&tools).as_bytes()).unwrap();
        assert_eq!(parsed.tools, tools);
        assert!(agrees(&parsed.value, &tools));
        assert!(!agrees(&parsed.value, &tools[..1]));
        assert!(!agrees(&json!([]), &[]), "no tools means no tools.json");
    }

    #[test]
    fn schema_problems_name_their_place() {
        let error = parse(br#"[{"name": "Bad--Name", "description": "x", "input_schema": {}, "implementation": {"runtime": "ruby", "entrypoint": "a.rb"}, "extra": 1}]"#)
            .unwrap_err();
        let ToolsJsonError::Schema { problems, .. } = &error else {
            panic!("{error}")
        };
        let pointers: Vec<&str> = problems.iter().map(|p| p.pointer.as_str()).collect();
        assert!(pointers.contains(&"/0/name"), "{pointers:?}");
        assert!(
            pointers.contains(&"/0/implementation/runtime"),
            "{pointers:?}"
        );
        assert!(pointers.contains(&"/0"), "{pointers:?}");
        assert!(matches!(
            parse(br#"{"tools": []}"#),
            Err(ToolsJsonError::Schema { .. })
        ));
    }

    #[test]
    fn deep_or_broken_json_is_an_error_not_a_crash() {
        let deep = "[".repeat(100_000);
        assert!(matches!(
            parse(deep.as_bytes()),
            Err(ToolsJsonError::Syntax { .. })
        ));
        let Err(ToolsJsonError::Syntax { line, column, .. }) = parse(b"[\n  {,\n]") else {
            panic!("a syntax error")
        };
        assert_eq!((line, column), (2, 4));
    }

    #[test]
    fn the_diff_shows_only_what_changed() {
        let old = render(&[tool("one")]);
        let new = render(&[tool("two")]);
        let diff = diff(&old, &new);
        assert!(
            diff.starts_with("--- tools.json\n+++ SKILL.md tools\n"),
            "{diff}"
        );
        assert!(
            diff.contains("\n-    \"name\": \"one\",\n+    \"name\": \"two\",\n"),
            "{diff}"
        );
        assert_eq!(super::diff(&old, &old), "");
        let long = (0..100).map(|i| format!("{i}\n")).collect::<String>();
        let shown = shorten(&long, 60);
        assert!(shown.ends_with("59\n… and 40 more lines"), "{shown}");
    }
}
