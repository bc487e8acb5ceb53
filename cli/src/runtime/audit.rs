//! The audit log of `skillpkg mcp --audit-log FILE`: one JSON line per tool
//! call, the runtime's own tools and the skills' alike, with the fields of
//! spec 003's Skill Telemetry Contract (docs/runtime-tools.md).
//!
//! ```text
//! {"v":1,"ts":"2025-12-21T10:00:00.123Z","session":"3",
//!  "trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","run_id":"00f067aa0ba902b7",
//!  "tool":"pdf-processing__extract-text","skill_id":"pdf-processing",
//!  "skill_version":"1.0.0","skill_source_commit":null,"host_id":"claude-code/2.0.1",
//!  "adapter_id":"skillpkg/0.1.0","approval_state":"NOT_REQUIRED","duration_ms":42,
//!  "exit_code":0,"outcome":"ok","error_code":null,"error_message":null,
//!  "denials":[],"arguments":{"path":"in/a.pdf"},"arguments_bytes":19}
//! ```
//!
//! (one line in the file). Every key is always there, `null` when unknown,
//! so a reader needs no guessing; `v` changes only when a key changes
//! meaning, and readers ignore keys they do not know.
//!
//! Secrets are redacted from every free-text field (tool, skill fields,
//! host, error, denials, arguments); the arguments are summarized
//! ([`summary`]), never logged whole.
//!
//! The file is opened once, at start, for appending, created with mode
//! 0600: a log that cannot be opened stops the server before it serves
//! anything. Each line is handed to the kernel in one `write` on a file
//! opened with `O_APPEND`, which Linux performs whole, so lines from
//! concurrent sessions, and from other servers sharing the file, never
//! interleave. Nothing is buffered in the process: a line is in the file
//! (the page cache) once [`AuditLog::append`] returns; it is not fsynced.

mod ids;
mod summary;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;
use skillpkg_index::skill::model::{JsonObject, Provenance};

pub use ids::{RunId, TraceId};

use super::tool_call::{ApprovalState, Outcome, Redactor, ToolError, cap_chars};

/// The version of the line format, the `v` of every line.
pub const AUDIT_LOG_VERSION: u32 = 1;

/// `adapter_id`: this runtime and its version.
pub const ADAPTER_ID: &str = concat!("skillpkg/", env!("CARGO_PKG_VERSION"));

/// The longest text kept in a field that a client or tool chose, in
/// characters: enough to identify, never enough to flood the log.
const MAX_FIELD_CHARS: usize = 200;
/// The longest error message kept, in characters.
const MAX_MESSAGE_CHARS: usize = 1000;
/// The most sandbox denials kept for one call.
const MAX_DENIALS: usize = 32;

/// The skill a call belongs to, for the telemetry fields.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SkillInfo {
    /// `skill_id`: the skill's stable identifier, its name.
    pub skill_id: String,
    /// `skill_version`: the skill's version, when it has one.
    pub skill_version: Option<String>,
    /// `skill_source_commit`: `provenance.source_commit`, when declared.
    pub skill_source_commit: Option<String>,
}

impl SkillInfo {
    /// Returns the fields of the skill `name` at `version`, with the
    /// commit from its `provenance`.
    pub fn new(name: &str, version: Option<&str>, provenance: Option<&Provenance>) -> Self {
        Self {
            skill_id: name.to_owned(),
            skill_version: version.map(str::to_owned),
            skill_source_commit: provenance.and_then(|p| p.source_commit.clone()),
        }
    }
}

/// One call, as the server fills it in; [`AuditRecord::to_line`] renders it.
#[derive(Clone, Debug)]
pub struct AuditRecord {
    /// When the call was received.
    pub ts: jiff::Timestamp,
    /// The session it belongs to: the MCP connection's number, or, for a
    /// session that is a handle (runtime::handles), the handle shortened.
    pub session: String,
    pub trace_id: TraceId,
    pub run_id: RunId,
    /// The tool's name on the wire, as the client called it.
    pub tool: String,
    /// The skill of the tool, or the one a runtime tool acted on
    /// (`skills_load`); `None` for neither.
    pub skill: Option<SkillInfo>,
    /// `host_id`: the client, as `<name>/<version>` from its `clientInfo`.
    pub host_id: Option<String>,
    pub approval_state: ApprovalState,
    /// From receiving the call to its result.
    pub duration: Duration,
    /// The tool process's exit status; `None` when none ran or a signal
    /// ended it.
    pub exit_code: Option<i32>,
    pub outcome: Outcome,
    /// The error returned, when the outcome is one.
    pub error: Option<ToolError>,
    /// What the sandbox refused during the call.
    pub denials: Vec<String>,
    /// The arguments as received; summarized when rendered.
    pub arguments: JsonObject,
}

impl AuditRecord {
    /// Returns the record of a call to `tool` received now, with a new
    /// `run_id`, no approval needed, and an `ok` outcome until told
    /// otherwise. Fails only when the system's random source does.
    pub fn begin(
        session: impl Into<String>,
        trace_id: TraceId,
        tool: impl Into<String>,
    ) -> std::io::Result<Self> {
        Ok(Self {
            ts: jiff::Timestamp::now(),
            session: session.into(),
            trace_id,
            run_id: RunId::random()?,
            tool: tool.into(),
            skill: None,
            host_id: None,
            approval_state: ApprovalState::NotRequired,
            duration: Duration::ZERO,
            exit_code: None,
            outcome: Outcome::Ok,
            error: None,
            denials: Vec::new(),
            arguments: JsonObject::new(),
        })
    }

    /// Returns the line for the log, `\n` included, with every secret
    /// `redactor` knows replaced.
    pub fn to_line(&self, redactor: &Redactor) -> Vec<u8> {
        let text = |text: &str, max: usize| cap_chars(&redactor.redact(text), max).into_owned();
        let field = |value: Option<&String>| value.map(|value| text(value, MAX_FIELD_CHARS));
        let skill = self.skill.as_ref();
        let mut denials: Vec<String> = self
            .denials
            .iter()
            .take(MAX_DENIALS)
            .map(|denial| text(denial, MAX_FIELD_CHARS))
            .collect();
        if self.denials.len() > MAX_DENIALS {
            denials.push(format!("…(+{} more)", self.denials.len() - MAX_DENIALS));
        }
        let line = Line {
            v: AUDIT_LOG_VERSION,
            ts: format!("{:.3}", self.ts),
            session: &self.session,
            trace_id: self.trace_id.to_string(),
            run_id: self.run_id.to_string(),
            tool: text(&self.tool, MAX_FIELD_CHARS),
            skill_id: field(skill.map(|s| &s.skill_id)),
            skill_version: field(skill.and_then(|s| s.skill_version.as_ref())),
            skill_source_commit: field(skill.and_then(|s| s.skill_source_commit.as_ref())),
            host_id: field(self.host_id.as_ref()),
            adapter_id: ADAPTER_ID,
            approval_state: self.approval_state,
            duration_ms: u64::try_from(self.duration.as_millis()).unwrap_or(u64::MAX),
            exit_code: self.exit_code,
            outcome: self.outcome,
            error_code: self.error.as_ref().map(|e| text(&e.code, MAX_FIELD_CHARS)),
            error_message: self
                .error
                .as_ref()
                .map(|e| text(&e.message, MAX_MESSAGE_CHARS)),
            denials,
            arguments: summary::summarize(&self.arguments, redactor),
            arguments_bytes: summary::json_size(&self.arguments),
        };
        let mut bytes = serde_json::to_vec(&line).expect("an audit line serializes");
        bytes.push(b'\n');
        bytes
    }
}

/// The keys of a line, in order.
#[derive(Serialize)]
struct Line<'a> {
    v: u32,
    ts: String,
    session: &'a str,
    trace_id: String,
    run_id: String,
    tool: String,
    skill_id: Option<String>,
    skill_version: Option<String>,
    skill_source_commit: Option<String>,
    host_id: Option<String>,
    adapter_id: &'static str,
    approval_state: ApprovalState,
    duration_ms: u64,
    exit_code: Option<i32>,
    outcome: Outcome,
    error_code: Option<String>,
    error_message: Option<String>,
    denials: Vec<String>,
    arguments: Value,
    arguments_bytes: u64,
}

/// Why the audit log cannot be opened or written.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    #[error("the audit log {} cannot be opened for appending", path.display())]
    Open {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "the audit log {} is not a regular file; give the path of a file, which is created if missing",
        path.display()
    )]
    NotAFile { path: PathBuf },
    #[error("cannot append to the audit log {}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// The audit log, open for appending; shared by every session.
#[derive(Debug)]
pub struct AuditLog {
    path: PathBuf,
    file: fs_err::File,
}

impl AuditLog {
    /// Opens `path` for appending, creating it with mode 0600 when missing
    /// (an existing file keeps its mode). Refuses anything but a regular
    /// file: `/dev/stdout` would corrupt the MCP stream on stdio, and a
    /// FIFO would block the server.
    pub fn open(path: &Path) -> Result<Self, AuditError> {
        match fs_err::metadata(path) {
            Ok(metadata) if !metadata.is_file() => {
                return Err(AuditError::NotAFile {
                    path: path.to_owned(),
                });
            }
            // Missing is fine, it is created; anything else, opening says.
            Ok(_) | Err(_) => {}
        }
        let mut options = fs_err::OpenOptions::new();
        options.append(true).create(true);
        #[cfg(unix)]
        {
            use fs_err::os::unix::fs::OpenOptionsExt as _;
            options.mode(0o600);
        }
        let file = options.open(path).map_err(|source| AuditError::Open {
            path: path.to_owned(),
            source,
        })?;
        Ok(Self {
            path: path.to_owned(),
            file,
        })
    }

    /// Returns the log's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends `record` as one line, secrets redacted.
    pub fn append(&self, record: &AuditRecord, redactor: &Redactor) -> Result<(), AuditError> {
        self.append_line(&record.to_line(redactor))
    }

    /// Appends `line`, which ends in `\n`, in one `write`.
    fn append_line(&self, line: &[u8]) -> Result<(), AuditError> {
        let error = |source| AuditError::Write {
            path: self.path.clone(),
            source,
        };
        // `&File` writes without a lock of ours: the kernel's append
        // keeps each write whole. A regular file only takes part of a
        // write when it is out of space or interrupted; the rest is then
        // written at once, so that the line at least ends.
        let mut file = &self.file;
        let written = file.write(line).map_err(error)?;
        if written < line.len() {
            file.write_all(&line[written..]).map_err(error)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
