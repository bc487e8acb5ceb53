//! A skill's tools (spec 003, "Tool Definition") out to the hosts that call
//! them, and in and out of `tools.json`.
//!
//! The tools a skill declares in its `SKILL.md` frontmatter are the source
//! of truth. From them come:
//!
//! ```text
//! ExportFormat::Mcp           [MCP Tool]              name, description, inputSchema,
//!                                                     outputSchema, annotations
//! ExportFormat::OpenAi        [OpenAI function tool]  type, name, description,
//!                                                     parameters, strict (when it can be)
//! ExportFormat::OpenAiStrict  the same, all strict, or nothing and the reasons
//! ExportFormat::Claude        [Claude tool]           name, description, input_schema
//! ExportFormat::ToolsJson     tools.json              the tools as SKILL.md has them
//! ```
//!
//! The tools come from a validated skill's
//! [`Frontmatter`](super::Frontmatter), which holds every tool it declares
//! (validation refuses a `tools` value that does not fit the model).
//! [`export()`] maps the fields (the table is in
//! [module `export`](mod@export)),
//! [`strict`] decides whether an input schema fits OpenAI's strict mode, and
//! [`tools_json`] reads, checks, renders and syncs the `tools.json` file.
//! Every output is rendered the same way: pretty JSON with two spaces of
//! indent and a final newline, so the same skill always gives the same bytes.

pub mod export;
pub mod strict;
pub mod tools_json;

use std::fmt;
use std::str::FromStr;

pub use export::ToolViolation;
pub use tools_json::{TOOLS_JSON, ToolsJsonError};

use super::model::Tool;
use tools_json::render_value as render;

/// Compiles a tool's `input_schema` or `output_schema` the one way skillpkg
/// reads tool schemas, at load and at call time alike: JSON Schema 2020-12,
/// with no resolver configured, so a `$ref` to a URL or a file is refused
/// instead of fetched (a schema is self-contained or it is invalid).
pub fn compile_schema(
    schema: &serde_json::Value,
) -> Result<jsonschema::Validator, jsonschema::ValidationError<'static>> {
    jsonschema::draft202012::new(schema)
}

/// The shapes `skillpkg tools export` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ExportFormat {
    /// MCP `Tool` objects (specification 2025-11-25).
    Mcp,
    /// OpenAI function tools for the Responses API; `strict: true` where the
    /// input schema allows it.
    OpenAi,
    /// OpenAI function tools that are all `strict: true`, or none at all.
    OpenAiStrict,
    /// Tools for the Claude Messages API.
    Claude,
    /// The canonical `tools.json`.
    ToolsJson,
}

impl ExportFormat {
    /// Every format with its command-line name.
    pub const ALL: &'static [(&'static str, ExportFormat)] = &[
        ("mcp", ExportFormat::Mcp),
        ("openai", ExportFormat::OpenAi),
        ("openai-strict", ExportFormat::OpenAiStrict),
        ("claude", ExportFormat::Claude),
        ("tools-json", ExportFormat::ToolsJson),
    ];

    /// Returns the name used on the command line.
    pub fn as_str(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, format)| *format == self)
            .map(|(name, _)| *name)
            .expect("every format is listed")
    }
}

impl fmt::Display for ExportFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ExportFormat {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .iter()
            .find(|(name, _)| *name == text)
            .map(|(_, format)| *format)
            .ok_or_else(|| {
                let names: Vec<_> = Self::ALL.iter().map(|(name, _)| *name).collect();
                format!(
                    "unknown export format `{text}`; expected one of: {}",
                    names.join(", ")
                )
            })
    }
}

/// The outcome of an export.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Export {
    /// The JSON document, rendered; `None` when the format refused the
    /// tools (`openai-strict` with a violation).
    pub text: Option<String>,
    /// Where input schemas leave OpenAI's strict profile (OpenAI formats
    /// only): warnings for `openai`, the reasons for refusing with
    /// `openai-strict`.
    pub violations: Vec<ToolViolation>,
}

/// Exports `tools` in `format`. The document is always a JSON array, one
/// element per tool in the order `SKILL.md` lists them.
pub fn export(tools: &[Tool], format: ExportFormat) -> Export {
    let (text, violations) = match format {
        ExportFormat::Mcp => (Some(render(&export::mcp(tools))), Vec::new()),
        ExportFormat::Claude => (Some(render(&export::claude(tools))), Vec::new()),
        ExportFormat::ToolsJson => (Some(render(tools)), Vec::new()),
        ExportFormat::OpenAi => {
            let (functions, violations) = export::openai(tools);
            (Some(render(&functions)), violations)
        }
        ExportFormat::OpenAiStrict => {
            let (functions, violations) = export::openai(tools);
            let text = violations.is_empty().then(|| render(&functions));
            (text, violations)
        }
    };
    Export { text, violations }
}
