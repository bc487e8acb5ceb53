//! The runtime's own tools and prompts as clients see them: names,
//! descriptions, input schemas, and the arguments they take (spec 001's
//! `skills.load`, `skills.unload`, `skills.read` and `skills.run_script`,
//! with underscores on the wire).

use std::sync::Arc;

use rmcp::model::{CallToolResult, JsonObject, Prompt, PromptArgument, Tool};
use serde::Deserialize;
use serde_json::{Value, json};

use super::catalog::ServedCatalog;
use super::tool_call::{ErrorCode, ToolError, listed_tool};

/// `skills_load`'s `mode`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// The loaded set becomes `names` (spec 001's recommended default).
    #[default]
    Replace,
    /// `names` join the loaded set; names already loaded keep their place.
    Add,
}

/// Spec 001's `skills.load`, `skills.unload`, `skills.read` and
/// `skills.run_script` as MCP clients accept them: no dots.
pub const LOAD: &str = "skills_load";
pub const UNLOAD: &str = "skills_unload";
pub const READ: &str = "skills_read";
pub const RUN_SCRIPT: &str = "skills_run_script";

/// The argument (and prompt argument) that carries a session's handle
/// (runtime::handles).
pub const SESSION_ARGUMENT: &str = "session";

/// The runtime's own tools, whose names no skill's tool may take.
pub const RUNTIME_TOOLS: [&str; 4] = [LOAD, UNLOAD, READ, RUN_SCRIPT];

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoadArguments {
    pub names: Vec<String>,
    #[serde(default)]
    pub mode: Mode,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UnloadArguments {
    pub names: Option<Vec<String>>,
    #[serde(default)]
    pub all: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReadArguments {
    pub skill: Option<String>,
    pub path: String,
}

pub fn parse<T: serde::de::DeserializeOwned>(
    tool: &str,
    arguments: Option<JsonObject>,
) -> Result<T, CallToolResult> {
    serde_json::from_value(Value::Object(arguments.unwrap_or_default())).map_err(|error| {
        ToolError::new(
            ErrorCode::InvalidArgument,
            format!("invalid arguments for {tool}: {error}; see the tool's inputSchema"),
        )
        .into_call_tool_result()
    })
}

/// What the `session` property of a tool's input says.
const SESSION_DESCRIPTION: &str = "The session handle skills_load returned. Needed when the connection is not a session (streamable HTTP at protocol 2026-07-28); elsewhere the connection is the session.";

/// The session tools, as `tools/list` shows them. Each takes an optional
/// `session` (runtime::handles), which the server takes out before it
/// reads the rest.
pub fn session_tools() -> Vec<Tool> {
    let tool = |name: &str, description: &str, mut schema: Value| {
        schema["properties"][SESSION_ARGUMENT] =
            json!({ "type": "string", "description": SESSION_DESCRIPTION });
        let Value::Object(schema) = schema else {
            unreachable!("tool schemas are objects")
        };
        Tool::new(name.to_owned(), description.to_owned(), Arc::new(schema))
    };
    vec![
        tool(
            LOAD,
            "Load skills by name so their instructions apply: returns each skill's SKILL.md instructions in <active_skills> and a receipt (location, root_dir, digest, properties). Call it before using any skill. mode \"replace\" (default) makes these the only loaded skills; \"add\" keeps the ones already loaded.",
            json!({
                "type": "object",
                "properties": {
                    "names": { "type": "array", "items": { "type": "string" }, "minItems": 1, "description": "Names of skills from <available_skills>." },
                    "mode": { "type": "string", "enum": ["replace", "add"], "default": "replace" }
                },
                "required": ["names"],
                "additionalProperties": false
            }),
        ),
        tool(
            UNLOAD,
            "Unload skills whose instructions no longer apply: give names, or all: true.",
            json!({
                "type": "object",
                "properties": {
                    "names": { "type": "array", "items": { "type": "string" } },
                    "all": { "type": "boolean" }
                },
                "additionalProperties": false
            }),
        ),
        tool(
            READ,
            "Read a file of a loaded skill, such as references/guide.md, by its path relative to the skill folder. skill defaults to the most recently loaded skill. Text comes back as text, other files as base64.",
            json!({
                "type": "object",
                "properties": {
                    "skill": { "type": "string", "description": "A loaded skill; defaults to the most recently loaded one." },
                    "path": { "type": "string", "description": "Relative to the skill folder." }
                },
                "required": ["path"],
                "additionalProperties": false
            }),
        ),
        tool(
            RUN_SCRIPT,
            "Run a script of a loaded skill, such as scripts/extract.py (under the skill's scripts/ folder; .py with python3, .sh with bash, .js/.mjs with node, else its #! line). It runs sandboxed with only the permissions the skill declares, in workdir (default: the project folder), with a timeout. Returns path, exit_code, stdout and stderr.",
            json!({
                "type": "object",
                "properties": {
                    "skill": { "type": "string", "description": "A loaded skill; defaults to the most recently loaded one." },
                    "path": { "type": "string", "description": "Relative to the skill folder, under scripts/." },
                    "args": { "type": "array", "items": { "type": "string" } },
                    "env": { "type": "object", "additionalProperties": { "type": "string" } },
                    "workdir": { "type": "string", "description": "Relative to the project folder, or absolute inside a root." }
                },
                "required": ["path"],
                "additionalProperties": false
            }),
        ),
    ]
}

/// Every served skill's tools as a client without a session sees them in
/// `tools/list`: as a loaded session lists them, each with a required
/// `session` property, and a description that says to load the skill
/// first. A tool whose wire name another served tool already has is left
/// out (a session cannot load both either).
pub fn stateless_tools(catalog: &ServedCatalog) -> Vec<Tool> {
    let mut seen = std::collections::HashSet::new();
    let mut tools = Vec::new();
    for skill in catalog.skills() {
        for declared in &skill.frontmatter.extensions.tools {
            let mut tool = listed_tool(&skill.name, declared);
            if RUNTIME_TOOLS.contains(&tool.name.as_ref()) || !seen.insert(tool.name.to_string()) {
                continue;
            }
            let mut schema = (*tool.input_schema).clone();
            let properties = schema.entry("properties").or_insert_with(|| json!({}));
            if let Value::Object(properties) = properties {
                properties.insert(
                    SESSION_ARGUMENT.to_owned(),
                    json!({ "type": "string", "description": format!("The session handle skills_load returned when it loaded {}.", skill.name) }),
                );
            }
            let required = schema.entry("required").or_insert_with(|| json!([]));
            if let Value::Array(required) = required {
                required.push(json!(SESSION_ARGUMENT));
            }
            tool.input_schema = Arc::new(schema);
            tool.description = Some(
                format!(
                    "{} (A tool of the skill {}: call skills_load with it first, and pass the session it returns.)",
                    tool.description.as_deref().unwrap_or_default(),
                    skill.name
                )
                .trim_start()
                .to_owned()
                .into(),
            );
            tools.push(tool);
        }
    }
    tools
}

pub fn prompts() -> Vec<Prompt> {
    vec![
        Prompt::new(
            "available_skills",
            Some(
                "The skills this server serves, as <available_skills>, with the rule that a skill is loaded before it is used.",
            ),
            None,
        ),
        Prompt::new(
            "active_skills",
            Some(
                "The instructions of the skills this session has loaded, as <active_skills>, in load order.",
            ),
            Some(vec![
                PromptArgument::new(SESSION_ARGUMENT)
                    .with_description(SESSION_DESCRIPTION)
                    .with_required(false),
            ]),
        ),
    ]
}
