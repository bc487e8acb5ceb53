//! The typed model of the Universal Agent Skill extensions (spec 003): what
//! a skill declares beyond the six base fields, once validation has passed.
//!
//! ```text
//! when_to_use:   {mentions, file_types, intents, priority}   selection triggers
//! tools:         [{name, description, input_schema,          tool contracts, also
//!                  output_schema, confirmation,               the items of
//!                  implementation: {runtime, entrypoint,      `tools.json`
//!                                   handler, timeout_seconds,
//!                                   dependencies}}]
//! permissions:   {filesystem: {read, write}, network: {outbound},
//!                 processes: {allow_subprocess}}
//! safety:        {require_confirmation_for, redact: {secrets, pii}, ...}
//! secrets:       {required: [{name, usage: env, description, optional}]}
//! provenance:    {source_repo, source_commit, reviewed_by, signature, ...}
//! host_overrides: [{host, config}]
//! ```
//!
//! Values are built from JSON that already passed the embedded frontmatter
//! schema (Appendix A), so deserializing them cannot fail on shape; the
//! newtypes ([`ToolName`]) still parse, so a model in hand is valid. Field
//! order is the spec's, so that serializing a [`Tool`] gives the canonical
//! `tools.json` item; JSON Schemas are kept as they were written (objects
//! with sorted keys), never rewritten.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A JSON object, as tool schemas and free-form extension values are.
pub type JsonObject = serde_json::Map<String, serde_json::Value>;

/// Everything a skill declares beyond the base fields.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Extensions {
    /// `spec_version`: the version of spec 003 the skill follows (`2.1`).
    pub spec_version: Option<String>,
    /// `tags`.
    pub tags: Vec<String>,
    /// `when_to_use`: the deterministic selection triggers.
    pub when_to_use: Option<WhenToUse>,
    /// `tools`, in the order written.
    pub tools: Vec<Tool>,
    /// `permissions`: what the skill asks to be allowed (default deny).
    pub permissions: Option<Permissions>,
    /// `safety`.
    pub safety: Option<Safety>,
    /// `secrets.required`.
    pub secrets: Vec<SecretRequirement>,
    /// `provenance`.
    pub provenance: Option<Provenance>,
    /// `host_overrides`.
    pub host_overrides: Vec<HostOverride>,
}

/// `when_to_use`: triggers for the selection algorithm of spec 003.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct WhenToUse {
    /// Words whose mention in a request adds 2 each (case-insensitive).
    pub mentions: Vec<String>,
    /// File types (`.pdf`) whose presence adds 3 each.
    pub file_types: Vec<String>,
    /// Host-derived intents that add 1 each.
    pub intents: Vec<String>,
    /// Breaks ties between skills with the same score: higher first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority: Option<u64>,
}

/// A tool contract: JSON Schemas for input and output and how to run it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tool {
    pub name: ToolName,
    pub description: String,
    /// A JSON Schema 2020-12 of `type: object`.
    pub input_schema: JsonObject,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<JsonObject>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmation: Option<Confirmation>,
    pub implementation: Implementation,
}

/// `tools[].confirmation`: whether the host asks the user first.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Confirmation {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<ConfirmationLevel>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
}

/// When a tool needs the user's confirmation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConfirmationLevel {
    Never,
    Always,
    DestructiveWrites,
    ExternalNetwork,
}

/// `tools[].implementation`: the program that carries a tool out.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Implementation {
    pub runtime: Runtime,
    /// A path relative to the skill folder, checked to stay inside it.
    pub entrypoint: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handler: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dependencies: Option<Dependencies>,
}

/// The runtimes spec 003 allows, each with the entrypoint extensions it runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Runtime {
    Python,
    Node,
    Bash,
}

impl Runtime {
    /// Every runtime, in the spec's order.
    pub const ALL: [Runtime; 3] = [Runtime::Python, Runtime::Node, Runtime::Bash];

    /// Returns the name used in the frontmatter.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Python => "python",
            Self::Node => "node",
            Self::Bash => "bash",
        }
    }

    /// Returns the file extensions an entrypoint for this runtime may have.
    pub fn extensions(self) -> &'static [&'static str] {
        match self {
            Self::Python => &["py"],
            // Node cannot run `.ts` without a TypeScript runner (spec 003).
            Self::Node => &["js", "mjs"],
            Self::Bash => &["sh"],
        }
    }
}

impl fmt::Display for Runtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Runtime {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|runtime| runtime.as_str() == text)
            .ok_or_else(|| format!("unknown runtime `{text}`; expected python, node or bash"))
    }
}

/// `implementation.dependencies`: what a host would have to install.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Dependencies {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pip: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub npm: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub system: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
}

impl Dependencies {
    /// Returns true if and only if something would have to be installed.
    pub fn requires_install(&self) -> bool {
        !(self.pip.is_empty() && self.npm.is_empty() && self.system.is_empty())
    }
}

/// `permissions`: what the skill asks for; everything else is denied.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Permissions {
    pub filesystem: FilesystemPermissions,
    pub network: NetworkPermissions,
    pub processes: ProcessPermissions,
}

/// `permissions.filesystem`: globs over root-relative paths with `/`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct FilesystemPermissions {
    pub read: Vec<String>,
    pub write: Vec<String>,
}

/// `permissions.network`: hosts the skill may connect to; empty is none.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct NetworkPermissions {
    pub outbound: Vec<String>,
}

/// `permissions.processes`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ProcessPermissions {
    /// Absent means denied.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allow_subprocess: Option<bool>,
}

/// `safety`: confirmation gates and redaction. Other keys are allowed by
/// the schema and kept.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Safety {
    pub require_confirmation_for: Vec<ConfirmationLevel>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub redact: Option<Redact>,
    #[serde(flatten)]
    pub other: JsonObject,
}

/// `safety.redact`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Redact {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secrets: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pii: Option<bool>,
}

/// One entry of `secrets.required`: an environment variable the tools read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SecretRequirement {
    pub name: String,
    /// Always `env`, the only way spec 003 passes a secret.
    pub usage: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default)]
    pub optional: bool,
}

/// `provenance`: where the skill comes from and who reviewed it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Provenance {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_repo: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_commit: Option<String>,
    pub reviewed_by: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    #[serde(flatten)]
    pub other: JsonObject,
}

/// One entry of `host_overrides`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostOverride {
    pub host: String,
    pub config: JsonObject,
}

/// The host identifiers spec 003 reserves for `host_overrides`.
pub const RESERVED_HOSTS: &[&str] = &[
    "claude-api",
    "claude-code",
    "mcp",
    "openai-responses",
    "codex-cli",
];

/// A valid tool name: the skill name's rules without the Windows device
/// names (a tool is never a folder): 1 to 64 characters of `[a-z0-9-]`, no
/// leading, trailing or doubled `-`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct ToolName(String);

impl ToolName {
    /// Returns the name as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ToolName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for ToolName {
    type Err = String;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        let length = name.chars().count();
        if !(1..=super::MAX_NAME_LEN).contains(&length) {
            return Err(format!(
                "a tool name is 1 to {} characters, not {length}",
                super::MAX_NAME_LEN
            ));
        }
        if let Some(character) = name
            .chars()
            .find(|c| !matches!(c, 'a'..='z' | '0'..='9' | '-'))
        {
            return Err(format!(
                "a tool name has only a-z, 0-9 and `-`, not {character:?}"
            ));
        }
        if name.starts_with('-') || name.ends_with('-') {
            return Err("a tool name does not start or end with `-`".into());
        }
        if name.contains("--") {
            return Err("a tool name does not contain `--`".into());
        }
        Ok(Self(name.to_owned()))
    }
}

impl<'de> Deserialize<'de> for ToolName {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

impl Extensions {
    /// Reads the value of the top-level key `key` into the model. Returns
    /// the reason when the value does not have the key's shape; keys the
    /// model does not hold are ignored.
    pub fn read(&mut self, key: &str, value: serde_json::Value) -> Result<(), serde_json::Error> {
        fn parse<T: serde::de::DeserializeOwned>(
            value: serde_json::Value,
        ) -> Result<T, serde_json::Error> {
            serde_json::from_value(value)
        }
        match key {
            "spec_version" => self.spec_version = Some(parse(value)?),
            "tags" => self.tags = parse(value)?,
            "when_to_use" => self.when_to_use = Some(parse(value)?),
            "tools" => self.tools = parse(value)?,
            "permissions" => self.permissions = Some(parse(value)?),
            "safety" => self.safety = Some(parse(value)?),
            "secrets" => {
                #[derive(Deserialize)]
                struct Secrets {
                    #[serde(default)]
                    required: Vec<SecretRequirement>,
                }
                self.secrets = parse::<Secrets>(value)?.required;
            }
            "provenance" => self.provenance = Some(parse(value)?),
            "host_overrides" => self.host_overrides = parse(value)?,
            _ => {}
        }
        Ok(())
    }
}
