//! Diagnostics: what validation found, where, and how bad it is.
//!
//! Every diagnostic carries a stable kebab-case [`Code`]. Codes are part of
//! the public interface (scripts match on them in `--json` output), so a code
//! is never renamed or reused; `docs/skill-format.md` documents each one and a
//! test checks that the document and [`Code::ALL`] agree.

use std::fmt;
use std::path::PathBuf;

/// How serious a diagnostic is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Severity {
    /// The skill is still valid; `--strict` turns every warning into an error.
    Warning,
    /// The skill is invalid: it cannot be packed or published.
    Error,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Warning => "warning",
            Self::Error => "error",
        })
    }
}

macro_rules! codes {
    ($($variant:ident => $text:literal, $severity:ident;)*) => {
        /// A stable diagnostic code.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Code {
            $(#[doc = concat!("`", $text, "`")] $variant,)*
        }

        impl Code {
            /// Every code, in documentation order.
            pub const ALL: &'static [Code] = &[$(Code::$variant,)*];

            /// Returns the kebab-case form used in output and documentation.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Code::$variant => $text,)*
                }
            }

            /// Returns the severity the code has without `--strict`.
            pub fn default_severity(self) -> Severity {
                match self {
                    $(Code::$variant => Severity::$severity,)*
                }
            }
        }
    };
}

impl Code {
    /// Returns true if and only if the code is a recommendation: advice on
    /// a skill's form (a script without a shebang, a long body), which
    /// `pack`, `publish` and `install` sum up in one line unless `-v`.
    pub fn is_recommendation(self) -> bool {
        matches!(
            self,
            Code::ScriptNoShebang
                | Code::ScriptNotExecutable
                | Code::BodyTooLong
                | Code::BodyTooManyTokens
                | Code::NonPortableKey
                | Code::ToolOutputSchemaMissing
                | Code::ToolSchemaOpen
        )
    }
}

codes! {
    SkillMdMissing => "skill-md-missing", Error;
    SkillMdCase => "skill-md-case", Warning;
    NotUtf8 => "not-utf8", Error;
    FrontmatterMissing => "frontmatter-missing", Error;
    FrontmatterUnclosed => "frontmatter-unclosed", Error;
    YamlSyntax => "yaml-syntax", Error;
    FrontmatterNotMapping => "frontmatter-not-mapping", Error;
    FrontmatterTooLarge => "frontmatter-too-large", Error;
    AmbiguousYaml => "ambiguous-yaml", Error;
    ControlCharacter => "control-character", Error;
    NameMissing => "name-missing", Error;
    NameInvalid => "name-invalid", Error;
    NameMismatch => "name-mismatch", Error;
    DescriptionMissing => "description-missing", Error;
    DescriptionTooLong => "description-too-long", Error;
    CompatibilityInvalid => "compatibility-invalid", Error;
    InvalidFieldType => "invalid-field-type", Error;
    VersionInvalid => "version-invalid", Error;
    DependencyInvalid => "dependency-invalid", Error;
    ToolSchemaInvalid => "tool-schema-invalid", Error;
    SpecVersionInvalid => "spec-version-invalid", Error;
    WhenToUseInvalid => "when-to-use-invalid", Error;
    ToolsInvalid => "tools-invalid", Error;
    ToolNameInvalid => "tool-name-invalid", Error;
    ToolNameDuplicate => "tool-name-duplicate", Error;
    ToolDescriptionInvalid => "tool-description-invalid", Error;
    ToolConfirmationInvalid => "tool-confirmation-invalid", Error;
    ToolImplementationInvalid => "tool-implementation-invalid", Error;
    ToolRuntimeInvalid => "tool-runtime-invalid", Error;
    ToolEntrypointOutside => "tool-entrypoint-outside", Error;
    ToolEntrypointExtension => "tool-entrypoint-extension", Error;
    ToolEntrypointMissing => "tool-entrypoint-missing", Error;
    PermissionsInvalid => "permissions-invalid", Error;
    PermissionGlobInvalid => "permission-glob-invalid", Error;
    SafetyInvalid => "safety-invalid", Error;
    SecretsInvalid => "secrets-invalid", Error;
    ProvenanceInvalid => "provenance-invalid", Error;
    HostOverridesInvalid => "host-overrides-invalid", Error;
    ToolsJsonInvalid => "tools-json-invalid", Error;
    ToolsJsonStale => "tools-json-stale", Error;
    HostXmlTag => "host-xml-tag", Error;
    HostReservedWord => "host-reserved-word", Error;
    HostSizeLimit => "host-size-limit", Error;
    HostNetwork => "host-network", Error;
    HostOpenaiStrict => "host-openai-strict", Error;
    SkillMdIgnored => "skill-md-ignored", Error;
    Symlink => "symlink", Error;
    SpecialFile => "special-file", Error;
    UnportablePath => "unportable-path", Error;
    PathCollision => "path-collision", Error;
    VcsMetadata => "vcs-metadata", Error;
    UnreadableFile => "unreadable-file", Error;
    UnknownKey => "unknown-key", Warning;
    NonPortableKey => "non-portable-key", Warning;
    AmbiguousScalar => "ambiguous-scalar", Warning;
    MetadataValueNotString => "metadata-value-not-string", Warning;
    AllowedToolsNotString => "allowed-tools-not-string", Warning;
    BodyEmpty => "body-empty", Warning;
    BodyTooLong => "body-too-long", Warning;
    BodyTooManyTokens => "body-too-many-tokens", Warning;
    ScriptNoShebang => "script-no-shebang", Warning;
    ScriptNotExecutable => "script-not-executable", Warning;
    BrokenLink => "broken-link", Warning;
    LinkOutsideSkill => "link-outside-skill", Warning;
    PossibleSecret => "possible-secret", Warning;
    TooManyFiles => "too-many-files", Warning;
    TooLarge => "too-large", Warning;
    ToolSchemaOpen => "tool-schema-open", Warning;
    ToolOutputSchemaMissing => "tool-output-schema-missing", Warning;
    PermissionOverbroad => "permission-overbroad", Warning;
    PermissionProtectedPath => "permission-protected-path", Warning;
    HostOverrideUnknown => "host-override-unknown", Warning;
    HostDependencyInstall => "host-dependency-install", Warning;
    HostNameCollision => "host-name-collision", Warning;
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Code {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .iter()
            .copied()
            .find(|code| code.as_str() == text)
            .ok_or_else(|| {
                format!(
                    "unknown diagnostic code `{text}`; the codes are listed in docs/skill-format.md"
                )
            })
    }
}

impl serde::Serialize for Code {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// A position in a file: 1-based line, 1-based column counted in characters.
///
/// `end_column` is exclusive and on the same line as `column`; a span that
/// covers several lines is cut at the end of its first line, which is all a
/// caret under one line can show.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Location {
    pub line: usize,
    pub column: usize,
    pub end_column: usize,
}

/// One finding of validation.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Diagnostic {
    pub code: Code,
    pub severity: Severity,
    /// One sentence that names the field or file and what is wrong with it.
    pub message: String,
    /// The file the finding is about, relative to the skill's folder.
    pub file: PathBuf,
    /// Where in `file`, when the finding has a place.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub location: Option<Location>,
    /// The text of the line at `location`, for rendering a caret under it.
    #[serde(skip)]
    pub source_line: Option<String>,
    /// What to do about it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

impl Diagnostic {
    /// Creates a diagnostic with the code's default severity and no place.
    pub fn new(code: Code, file: impl Into<PathBuf>, message: impl Into<String>) -> Self {
        Self {
            code,
            severity: code.default_severity(),
            message: message.into(),
            file: file.into(),
            location: None,
            source_line: None,
            hint: None,
        }
    }

    /// Places the diagnostic at `location`, keeping the line's text for rendering.
    #[must_use]
    pub fn at(mut self, location: Location, source: &str) -> Self {
        self.source_line = source
            .lines()
            .nth(location.line.saturating_sub(1))
            .map(str::to_owned);
        self.location = Some(location);
        self
    }

    /// Adds advice on what to do.
    #[must_use]
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
}
