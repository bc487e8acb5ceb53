//! Running code for a session: `skills_run_script` (spec 001) and a
//! skill's own tools (spec 003), both through [`super::exec`] under the
//! [`super::sandbox`] policy the skill's permissions and the client's roots
//! give (docs/runtime.md, "Scripts and tools").

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rmcp::model::{CallToolResult, ContentBlock, JsonObject};
use serde::Deserialize;
use serde_json::json;
use skillpkg_index::skill::model::{Permissions, Runtime, Tool};
use tokio_util::sync::CancellationToken;

use super::catalog::ServedSkill;
use super::exec::{self, Limits, RunOutcome, RunRequest};
use super::grant::Denied;
use super::protected::Protection;
use super::sandbox::{self, Policy};
use super::tool_call::{
    ErrorCode, ProcessResult, Redactor, ToolError, ToolOutcome, ToolSchemas, interpret,
    stdin_payload,
};

/// How scripts run, for the whole server.
#[derive(Debug)]
pub struct RunConfig {
    /// `limits.timeout` is `--timeout`: the time a whole call has, from
    /// receiving it to its result (waiting for the client, preparing,
    /// running); a run gets what is left of it ([`Budget`]).
    pub limits: Limits,
    /// `--unsandboxed`: run without Landlock (the user's explicit choice).
    pub unsandboxed: bool,
    /// The server's environment, read once: secrets and the passed-through
    /// variables come from it.
    pub server_env: BTreeMap<String, String>,
    /// The project folder: the root when the client sends none.
    pub project: PathBuf,
    /// `--pass-env`: the only names a skill's secrets may be read from the
    /// server's environment by.
    pub pass_env: BTreeSet<String>,
    /// `--client-timeout`: how long a request to the client may wait
    /// (`roots/list`; runtime::peer).
    pub client_timeout: Duration,
}

/// The time one call has: `--timeout`, from when the server received it.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    pub started: Instant,
    pub total: Duration,
}

impl Budget {
    /// When the call must be over.
    pub fn deadline(&self) -> Instant {
        self.started + self.total
    }

    /// Returns the time left, `None` once it is spent.
    pub fn remaining(&self) -> Option<Duration> {
        let left = self.deadline().saturating_duration_since(Instant::now());
        (!left.is_zero()).then_some(left)
    }

    /// Returns the `TIMEOUT` error of a call whose time ran out `when`
    /// ("before the script started"), before anything ran.
    pub fn spent(&self, when: &str) -> ToolError {
        ToolError::new(
            ErrorCode::Timeout,
            format!(
                "the call's time ({}, --timeout) ran out {when}; nothing was run",
                seconds(self.total)
            ),
        )
    }
}

/// `5 s`, `1.5 s`.
pub(crate) fn seconds(duration: Duration) -> String {
    format!("{} s", duration.as_secs_f64())
}

/// Where and for whom one call runs.
#[derive(Debug)]
pub struct CallContext<'a> {
    /// The client's roots (or the project folder).
    pub roots: &'a [PathBuf],
    /// Keeps the secrets out of what is returned.
    pub redactor: &'a Redactor,
    /// What no filesystem grant may reach, and `--allow-grant`: the
    /// catalog's as the call found it.
    pub protection: &'a Protection,
    /// The client's cancellation of the call.
    pub cancel: CancellationToken,
    /// The call's time; the run gets what is left.
    pub budget: Budget,
    /// Where the run adds what the caller should be told (an optional
    /// secret left out).
    pub notes: &'a mut Vec<String>,
}

/// `skills_run_script`'s arguments (spec 001).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunScriptArguments {
    pub skill: Option<String>,
    pub path: String,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Relative to the first root (the project), or absolute inside a root.
    pub workdir: Option<String>,
}

/// What a run needs besides the script: the grants and where.
struct Prepared {
    env: exec::ScriptEnvironment,
    workdir: PathBuf,
    sandbox: Option<Policy>,
}

fn denied(error: &Denied) -> ToolError {
    let message = match error.hint() {
        Some(hint) => format!("{error}; {hint}"),
        None => error.to_string(),
    };
    ToolError::new(ErrorCode::PermissionDenied, message)
}

fn exec_error(error: &exec::ExecError) -> ToolError {
    let code = match error {
        exec::ExecError::Environment { .. } => ErrorCode::InvalidArgument,
        exec::ExecError::NotRunnable { .. } => ErrorCode::InvalidArgument,
        exec::ExecError::Unenforceable { .. }
        | exec::ExecError::Sandbox(_)
        | exec::ExecError::SecretNotPassed { .. } => ErrorCode::PermissionDenied,
        exec::ExecError::MissingSecret { .. }
        | exec::ExecError::InterpreterNotFound { .. }
        | exec::ExecError::Spawn { .. }
        | exec::ExecError::Scratch(_) => ErrorCode::Unavailable,
    };
    let message = match error.hint() {
        Some(hint) => format!("{error}; {hint}"),
        None => error.to_string(),
    };
    ToolError::new(code, message)
}

/// Checks that `path` (as the caller gave it) names a file of `skill`'s
/// manifest: a file added since start, or one reached through a link (a
/// linked `scripts/`), was never checked and never runs.
fn in_manifest(skill: &ServedSkill, path: &str) -> Result<(), ToolError> {
    match super::catalog::normalise(path) {
        Some(relative) if skill.file(&relative).is_some() => Ok(()),
        _ => Err(ToolError::new(
            ErrorCode::PermissionDenied,
            format!(
                "`{path}` is not a file skill `{}` had when the server started; only those run (no links, nothing added since)",
                skill.name
            ),
        )),
    }
}

/// The sealed copy a sandboxed run of `skill` sees: its files as they
/// were checked (cli/src/runtime/jail/seal.rs).
fn sealed_copy(skill: &ServedSkill, sandboxed: bool) -> Result<Option<PathBuf>, ToolError> {
    if !sandboxed {
        return Ok(None);
    }
    super::jail::seal::sealed(skill)
        .map(|path| Some(path.as_ref().clone()))
        .map_err(|reason| {
            ToolError::new(
                ErrorCode::Integrity,
                format!(
                    "skill `{}` could not be sealed for the run: {reason}",
                    skill.name
                ),
            )
        })
}

/// Checks that none of `skill`'s files changed since the server read
/// them: code that runs is code that was checked.
fn unchanged(skill: &ServedSkill) -> Result<(), ToolError> {
    let changed = skill.changed_since_start();
    if changed.is_empty() {
        Ok(())
    } else {
        Err(ToolError::new(
            ErrorCode::Integrity,
            format!(
                "skill `{}` changed on disk since the server read it ({}); nothing was run: load it again with skills_load, which serves it as it is now",
                skill.name,
                changed.join(", ")
            ),
        ))
    }
}

impl RunConfig {
    /// An unsandboxed run starts the installed files, so they are checked
    /// again first; a sandboxed run sees the sealed copy, made from the
    /// bytes that were checked ([`sealed_copy`]), and pays for no second
    /// reading.
    fn unchanged_unless_sealed(&self, skill: &ServedSkill) -> Result<(), ToolError> {
        if self.unsandboxed {
            unchanged(skill)
        } else {
            Ok(())
        }
    }

    /// The run's limits: what is left of the call's time, so that waiting
    /// for the client and preparing count against `--timeout` too.
    fn limits_within(&self, budget: Budget) -> Result<Limits, ToolError> {
        let timeout = budget
            .remaining()
            .ok_or_else(|| budget.spent("before the script started"))?;
        Ok(Limits {
            timeout,
            ..self.limits
        })
    }

    fn prepare(
        &self,
        skill: &ServedSkill,
        roots: &[PathBuf],
        protection: &Protection,
        workdir: Option<&str>,
        given_env: &BTreeMap<String, String>,
    ) -> Result<Prepared, ToolError> {
        let roots = sandbox::canonical_roots(roots).map_err(|error| denied(&error))?;
        let workdir = sandbox::workdir_in_roots(&roots, workdir.unwrap_or("."))
            .map_err(|error| denied(&error))?;
        let default = Permissions::default();
        let permissions = skill
            .frontmatter
            .extensions
            .permissions
            .as_ref()
            .unwrap_or(&default);
        let sandbox = if self.unsandboxed {
            None
        } else {
            Some(
                sandbox::policy_for_skill(
                    &skill.name,
                    &skill.root,
                    permissions,
                    &roots,
                    &workdir,
                    protection,
                )
                .map_err(|error| denied(&error))?,
            )
        };
        let env = exec::environment(
            &self.server_env,
            given_env,
            &skill.name,
            &skill.frontmatter.extensions.secrets,
            &self.pass_env,
        )
        .map_err(|error| exec_error(&error))?;
        Ok(Prepared {
            env,
            workdir,
            sandbox,
        })
    }

    /// `skills_run_script`: runs a file under the skill's `scripts/`.
    pub async fn run_script(
        &self,
        skill: &ServedSkill,
        arguments: RunScriptArguments,
        call: CallContext<'_>,
    ) -> Result<(CallToolResult, RunOutcome), ToolError> {
        let CallContext {
            roots,
            redactor,
            protection,
            cancel,
            budget,
            notes,
        } = call;
        allowed_to_run_scripts(skill, &arguments.path, &arguments.args)?;
        let script = sandbox::script_in_skill(&skill.root, &arguments.path)
            .map_err(|error| denied(&error))?;
        in_manifest(skill, &arguments.path)?;
        self.unchanged_unless_sealed(skill)?;
        let program = exec::interpreter_for(&script).map_err(|error| exec_error(&error))?;
        let prepared = self.prepare(
            skill,
            roots,
            protection,
            arguments.workdir.as_deref(),
            &arguments.env,
        )?;
        notes.extend(prepared.env.notes);
        let limits = self.limits_within(budget)?;
        let outcome = exec::run(
            RunRequest {
                program,
                args: arguments.args.iter().map(OsString::from).collect(),
                env: prepared.env.vars,
                workdir: prepared.workdir,
                stdin: None,
                limits,
                sealed: sealed_copy(skill, prepared.sandbox.is_some())?,
                sandbox: prepared.sandbox,
            },
            cancel,
        )
        .await
        .map_err(|error| exec_error(&error))?;
        let mut result = json!({
            "path": arguments.path,
            "exit_code": outcome.exit_code,
            "stdout": redactor.redact(cut_if(redactor, &outcome.stdout, outcome.stdout_truncated)),
            "stderr": redactor.redact(cut_if(redactor, &outcome.stderr, outcome.stderr_truncated)),
        });
        for (key, flag) in [
            ("stdout_truncated", outcome.stdout_truncated),
            ("stderr_truncated", outcome.stderr_truncated),
            ("timed_out", outcome.timed_out),
            ("cancelled", outcome.cancelled),
        ] {
            if flag {
                result[key] = json!(true);
            }
        }
        if let Some(signal) = outcome.signal {
            result["signal"] = json!(signal);
        }
        if !outcome.notes.is_empty() {
            result["notes"] = json!(outcome.notes);
        }
        let failed = outcome.exit_code != Some(0);
        let mut call = if failed {
            CallToolResult::error(vec![ContentBlock::text(result.to_string())])
        } else {
            CallToolResult::success(vec![ContentBlock::text(result.to_string())])
        };
        call.structured_content = Some(result);
        Ok((call, outcome))
    }

    /// Runs the tool `tool` of `skill` with `arguments` (already checked
    /// against its input schema): JSON on stdin, the result on stdout.
    pub async fn run_tool(
        &self,
        skill: &ServedSkill,
        tool: &Tool,
        schemas: &ToolSchemas,
        arguments: &JsonObject,
        call: CallContext<'_>,
    ) -> (ToolOutcome, Option<RunOutcome>) {
        let CallContext {
            roots,
            redactor,
            protection,
            cancel,
            budget,
            notes,
        } = call;
        let started = async {
            let entrypoint = tool.implementation.entrypoint.as_str();
            in_manifest(skill, entrypoint)?;
            self.unchanged_unless_sealed(skill)?;
            let script = sandbox::entrypoint_in_skill(&skill.root, entrypoint)
                .map_err(|error| denied(&error))?;
            let interpreter = match tool.implementation.runtime {
                Runtime::Python => "python3",
                Runtime::Node => "node",
                Runtime::Bash => "bash",
            };
            let prepared = self.prepare(skill, roots, protection, None, &BTreeMap::new())?;
            notes.extend(prepared.env.notes);
            let limits = self.limits_within(budget)?;
            exec::run(
                RunRequest {
                    program: vec![interpreter.into(), script.into_os_string()],
                    args: Vec::new(),
                    env: prepared.env.vars,
                    workdir: prepared.workdir,
                    stdin: Some(stdin_payload(arguments)),
                    limits,
                    sealed: sealed_copy(skill, prepared.sandbox.is_some())?,
                    sandbox: prepared.sandbox,
                },
                cancel,
            )
            .await
            .map_err(|error| exec_error(&error))
        };
        match started.await {
            Err(error) => (ToolOutcome::Error(error), None),
            Ok(outcome) => {
                let process = ProcessResult {
                    exit_code: outcome.exit_code,
                    stdout: cut_if(redactor, &outcome.stdout, outcome.stdout_truncated)
                        .as_bytes()
                        .to_vec(),
                    stderr: cut_if(redactor, &outcome.stderr, outcome.stderr_truncated)
                        .as_bytes()
                        .to_vec(),
                    timed_out: outcome.timed_out,
                    stdout_truncated: outcome.stdout_truncated,
                    cancelled: outcome.cancelled,
                    denied: None,
                };
                (interpret(&process, schemas, redactor), Some(outcome))
            }
        }
    }
}

/// Output cut at the cap may end in the first characters of a secret.
fn cut_if<'a>(redactor: &Redactor, text: &'a str, truncated: bool) -> &'a str {
    if truncated {
        redactor.cut_partial_tail(text)
    } else {
        text
    }
}

/// `allowed-tools` gates `skills_run_script`: a skill that lists tools and
/// none that runs programs (`Bash`, `Bash(...)`, `skills_run_script`) has
/// not asked to run scripts. `Bash(PATTERN)` allows the scripts whose path
/// (`scripts/x.py`) or command line (`python3 scripts/x.py`), with or
/// without the arguments, the glob PATTERN matches (`*` crosses `/`); a
/// trailing `:*` means "and any arguments", as in Claude Code's
/// `Bash(git log:*)`.
fn allowed_to_run_scripts(
    skill: &ServedSkill,
    path: &str,
    args: &[String],
) -> Result<(), ToolError> {
    let allowed = &skill.frontmatter.allowed_tools;
    if allowed.is_empty() {
        return Ok(());
    }
    let path = path.trim_start_matches("./");
    let command = format!(
        "{} {path}",
        exec::interpreter_by_extension(Path::new(path)).unwrap_or_default()
    );
    // What a pattern may match: the path, and the command line, each with
    // and without the arguments.
    let with_args = |line: &str| {
        std::iter::once(line)
            .chain(args.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let command = command.trim_start().to_owned();
    let candidates = [
        path.to_owned(),
        with_args(path),
        command.clone(),
        with_args(&command),
    ];
    let permits = |entry: &str| {
        let entry = entry.trim();
        if matches!(
            entry,
            "Bash" | "Bash(*)" | "skills_run_script" | "skills.run_script"
        ) {
            return true;
        }
        let Some(pattern) = entry
            .strip_prefix("Bash(")
            .and_then(|rest| rest.strip_suffix(')'))
        else {
            return false;
        };
        // Claude Code's `Bash(prefix:*)`: the command is `prefix`, or
        // `prefix` and arguments; `Bash(x.sh:*)` never allows `x.sh.py`.
        let globs: Vec<String> = match pattern.strip_suffix(":*") {
            Some(prefix) => vec![prefix.to_owned(), format!("{prefix} *")],
            None => vec![pattern.to_owned()],
        };
        globs.iter().any(|glob| {
            globset::GlobBuilder::new(glob)
                .literal_separator(false)
                .build()
                .map(|glob| glob.compile_matcher())
                .is_ok_and(|glob| candidates.iter().any(|candidate| glob.is_match(candidate)))
        })
    };
    if allowed.iter().any(|entry| permits(entry)) {
        Ok(())
    } else {
        Err(ToolError::new(
            ErrorCode::PermissionDenied,
            format!(
                "skill `{}` does not allow running scripts: its allowed-tools are {}; `{path}` was not run",
                skill.name,
                allowed.join(", ")
            ),
        ))
    }
}

#[cfg(test)]
mod budget_tests {
    use std::time::{Duration, Instant};

    use super::{Budget, seconds};

    #[test]
    fn a_budget_counts_from_when_the_call_was_received() {
        let fresh = Budget {
            started: Instant::now(),
            total: Duration::from_secs(60),
        };
        let left = fresh.remaining().unwrap();
        assert!(left > Duration::from_secs(59) && left <= Duration::from_secs(60));
        let spent = Budget {
            started: Instant::now() - Duration::from_secs(3),
            total: Duration::from_secs(2),
        };
        assert_eq!(spent.remaining(), None);
        let error = spent.spent("while waiting for the client to answer roots/list");
        assert_eq!(error.code, "TIMEOUT");
        assert!(error.retriable);
        assert_eq!(
            error.message,
            "the call's time (2 s, --timeout) ran out while waiting for the client to answer roots/list; nothing was run"
        );
    }

    #[test]
    fn durations_read_as_seconds() {
        assert_eq!(seconds(Duration::from_secs(5)), "5 s");
        assert_eq!(seconds(Duration::from_millis(1500)), "1.5 s");
    }
}
