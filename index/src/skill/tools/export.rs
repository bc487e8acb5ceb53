//! A skill's tools as each host's API takes them.
//!
//! Spec 003's mapping table ("Host Adapter Model") in concrete terms:
//!
//! ```text
//! SKILL.md tools[]   MCP Tool (2025-11-25)   OpenAI function tool      Claude tool
//! name               name                    name                      name
//! description        description             description               description
//! input_schema       inputSchema             parameters                input_schema
//! output_schema      outputSchema            -                         -
//! confirmation       annotations (hints)     -                         -
//!                                            type: "function", strict
//! ```
//!
//! Schemas pass through unchanged: an adapter maps names, it never rewrites
//! the contract (spec 003, "tools.json Format"). `implementation` stays
//! behind: it tells the adapter how to run the tool, not the model how to
//! call it.
//!
//! MCP annotations are hints about behaviour, and MCP assumes the worst when
//! they are absent (`destructiveHint` and `openWorldHint` default to true).
//! So only a confirmation level that says what the tool does becomes one:
//! `destructive_writes` sets `destructiveHint: true` and `external_network`
//! sets `openWorldHint: true`. `never` and `always` say when to ask the user,
//! not what the tool does, and become nothing; neither does `prompt`, which
//! MCP has no field for.

use serde::Serialize;

use super::strict;
use crate::skill::model::{ConfirmationLevel, JsonObject, Tool};

/// An MCP `Tool`, as `tools/list` returns it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct McpTool<'a> {
    pub name: &'a str,
    pub description: &'a str,
    pub input_schema: &'a JsonObject,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<&'a JsonObject>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<McpAnnotations>,
}

/// The MCP tool annotations a confirmation level implies.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct McpAnnotations {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

/// An OpenAI function tool, as the Responses API takes it in `tools`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OpenAiFunction<'a> {
    /// Always `function`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub name: &'a str,
    pub description: &'a str,
    pub parameters: &'a JsonObject,
    /// True if and only if `parameters` satisfies the strict profile.
    pub strict: bool,
}

/// A Claude tool, as the Messages API takes it in `tools`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ClaudeTool<'a> {
    pub name: &'a str,
    pub description: &'a str,
    pub input_schema: &'a JsonObject,
}

/// A strict-profile violation of one tool's `input_schema`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ToolViolation {
    /// The tool whose schema breaks the profile.
    pub tool: String,
    #[serde(flatten)]
    pub violation: strict::Violation,
}

/// Returns the MCP form of `tools`.
pub fn mcp(tools: &[Tool]) -> Vec<McpTool<'_>> {
    tools
        .iter()
        .map(|tool| McpTool {
            name: tool.name.as_str(),
            description: &tool.description,
            input_schema: &tool.input_schema,
            output_schema: tool.output_schema.as_ref(),
            annotations: mcp_annotations(tool),
        })
        .collect()
}

fn mcp_annotations(tool: &Tool) -> Option<McpAnnotations> {
    let level = tool.confirmation.as_ref()?.level?;
    match level {
        ConfirmationLevel::DestructiveWrites => Some(McpAnnotations {
            destructive_hint: Some(true),
            ..McpAnnotations::default()
        }),
        ConfirmationLevel::ExternalNetwork => Some(McpAnnotations {
            open_world_hint: Some(true),
            ..McpAnnotations::default()
        }),
        ConfirmationLevel::Never | ConfirmationLevel::Always => None,
    }
}

/// Returns the OpenAI form of `tools`: each tool is `strict: true` when its
/// input schema satisfies the strict profile, else `strict: false`, with the
/// reasons in the second list.
pub fn openai(tools: &[Tool]) -> (Vec<OpenAiFunction<'_>>, Vec<ToolViolation>) {
    let mut violations = Vec::new();
    let functions = tools
        .iter()
        .map(|tool| {
            let found = strict::check(&tool.input_schema);
            let strict = found.is_empty();
            violations.extend(found.into_iter().map(|violation| ToolViolation {
                tool: tool.name.to_string(),
                violation,
            }));
            OpenAiFunction {
                kind: "function",
                name: tool.name.as_str(),
                description: &tool.description,
                parameters: &tool.input_schema,
                strict,
            }
        })
        .collect();
    (functions, violations)
}

/// Returns the Claude form of `tools`.
pub fn claude(tools: &[Tool]) -> Vec<ClaudeTool<'_>> {
    tools
        .iter()
        .map(|tool| ClaudeTool {
            name: tool.name.as_str(),
            description: &tool.description,
            input_schema: &tool.input_schema,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::skill::tools::{ExportFormat, export};

    fn tools() -> Vec<Tool> {
        serde_json::from_value(json!([
            {
                "name": "extract-text",
                "description": "Extract text from a PDF file.",
                "input_schema": {
                    "type": "object",
                    "additionalProperties": false,
                    "properties": { "path": { "type": "string" } },
                    "required": ["path"]
                },
                "output_schema": {
                    "type": "object",
                    "properties": { "text": { "type": "string" } }
                },
                "implementation": { "runtime": "python", "entrypoint": "scripts/pdf.py", "handler": "extract_text" }
            },
            {
                "name": "delete-output",
                "description": "Delete generated output files.",
                "confirmation": { "level": "destructive_writes", "prompt": "Deletes output/**." },
                "input_schema": {
                    "type": "object",
                    "properties": { "dry_run": { "type": "boolean" } }
                },
                "implementation": { "runtime": "bash", "entrypoint": "scripts/delete_output.sh" }
            },
            {
                "name": "fetch-page",
                "description": "Fetch a web page.",
                "confirmation": { "level": "external_network" },
                "input_schema": { "type": "object", "additionalProperties": false, "properties": {}, "required": [] },
                "implementation": { "runtime": "node", "entrypoint": "scripts/fetch.mjs" }
            },
            {
                "name": "ask-first",
                "description": "Always asks.",
                "confirmation": { "level": "always" },
                "input_schema": { "type": "object", "additionalProperties": false },
                "implementation": { "runtime": "bash", "entrypoint": "scripts/ask.sh" }
            }
        ]))
        .unwrap()
    }

    fn exported(format: ExportFormat) -> serde_json::Value {
        serde_json::from_str(&export(&tools(), format).text.unwrap()).unwrap()
    }

    #[test]
    fn mcp_maps_names_and_the_confirmation_levels_that_describe_behaviour() {
        let output = exported(ExportFormat::Mcp);
        assert_eq!(
            output[0],
            json!({
                "name": "extract-text",
                "description": "Extract text from a PDF file.",
                "inputSchema": {
                    "type": "object",
                    "additionalProperties": false,
                    "properties": { "path": { "type": "string" } },
                    "required": ["path"]
                },
                "outputSchema": { "type": "object", "properties": { "text": { "type": "string" } } }
            })
        );
        assert_eq!(output[1]["annotations"], json!({ "destructiveHint": true }));
        assert_eq!(output[2]["annotations"], json!({ "openWorldHint": true }));
        assert!(output[3].get("annotations").is_none(), "{}", output[3]);
        assert!(output[1].get("outputSchema").is_none());
    }

    #[test]
    fn openai_is_strict_only_where_the_schema_allows_it() {
        let output = exported(ExportFormat::OpenAi);
        assert_eq!(
            output[0],
            json!({
                "type": "function",
                "name": "extract-text",
                "description": "Extract text from a PDF file.",
                "parameters": {
                    "type": "object",
                    "additionalProperties": false,
                    "properties": { "path": { "type": "string" } },
                    "required": ["path"]
                },
                "strict": true
            })
        );
        let strict: Vec<bool> = (0..4)
            .map(|i| output[i]["strict"].as_bool().unwrap())
            .collect();
        assert_eq!(strict, [true, false, true, true]);

        let result = export(&tools(), ExportFormat::OpenAi);
        let found: Vec<(&str, &str, strict::Rule)> = result
            .violations
            .iter()
            .map(|v| {
                (
                    v.tool.as_str(),
                    v.violation.pointer.as_str(),
                    v.violation.rule,
                )
            })
            .collect();
        assert_eq!(
            found,
            [
                ("delete-output", "", strict::Rule::AdditionalProperties),
                ("delete-output", "", strict::Rule::RequiredMissing),
            ]
        );
    }

    #[test]
    fn openai_strict_refuses_everything_when_one_tool_is_not_strict() {
        let result = export(&tools(), ExportFormat::OpenAiStrict);
        assert_eq!(result.text, None);
        assert_eq!(result.violations.len(), 2);
        let strict_only: Vec<Tool> = tools()
            .into_iter()
            .filter(|t| t.name.as_str() != "delete-output")
            .collect();
        let result = export(&strict_only, ExportFormat::OpenAiStrict);
        assert!(result.violations.is_empty());
        assert!(result.text.unwrap().contains("\"strict\": true"));
    }

    #[test]
    fn claude_takes_name_description_and_input_schema_only() {
        let output = exported(ExportFormat::Claude);
        assert_eq!(
            output[1],
            json!({
                "name": "delete-output",
                "description": "Delete generated output files.",
                "input_schema": { "type": "object", "properties": { "dry_run": { "type": "boolean" } } }
            })
        );
    }

    #[test]
    fn every_format_is_an_array_rendered_with_a_final_newline() {
        for (name, format) in ExportFormat::ALL {
            let text = export(&tools()[..1], *format).text.unwrap();
            assert!(
                text.starts_with("[\n  {\n") && text.ends_with("}\n]\n"),
                "{name}: {text}"
            );
            assert_eq!(name.parse::<ExportFormat>().unwrap(), *format);
        }
        assert!(
            "yaml"
                .parse::<ExportFormat>()
                .unwrap_err()
                .contains("openai-strict")
        );
    }
}
