//! The MCP server: one [`SkillServer`] per connection, over the shared
//! read-only [`ServedCatalog`].
//!
//! It speaks three vocabularies (docs/runtime.md):
//! - spec 001's runtime tools, with underscores on the wire: `skills_load`,
//!   `skills_unload`, `skills_read`, `skills_run_script`;
//! - MCP's Skills Extension (SEP-2640): `skills/list`, `skills/get`, every
//!   file a `skill://<skill>/<path>` resource, `resources/directory/read`;
//! - prompts: `available_skills` (the catalog and the loading-required
//!   rule) and `active_skills` (the loaded skills' instructions).

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use base64::Engine as _;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorData,
    GetPromptRequestParams, GetPromptResponse, GetPromptResult, GetSkillRequestParams,
    GetSkillResult, Implementation, ListPromptsResult, ListResourcesResult, ListSkillsResult,
    ListToolsResult, PaginatedRequestParams, PromptMessage, ProtocolVersion,
    ReadResourceDirectoryRequestParams, ReadResourceDirectoryResult, ReadResourceRequestParams,
    ReadResourceResponse, ResourceContents, ResourceUpdatedNotificationParam, Role,
    ServerCapabilities, ServerConfig, SubscribeRequestParams, SubscriptionFilter,
    UnsubscribeRequestParams,
};
use rmcp::service::{
    NotificationContext, Peer, RequestContext, SubscriptionContext, SubscriptionSendError,
};
use rmcp::{RoleServer, ServerHandler};
use skillpkg_index::skill::model::Tool as SkillTool;
use tokio::sync::broadcast::{self, error::RecvError};

use super::arrival::Turn;
use super::audit::{AuditLog, AuditRecord, SkillInfo, TraceId};
use super::catalog::{self, ServedCatalog, ServedSkill};
use super::handles::{self, SESSION_ARGUMENT, SessionTable, SharedSession};
use super::input::{Answers, Asks, CallBinding, Round, Rounds};
use super::live::{Change, LOADING_RULE, Live, View};
use super::peer::{self, RootsMemory};
use super::resources;
use super::run::{Budget, CallContext, RunConfig, RunScriptArguments, seconds};
use super::session::{Session, SessionError};
use super::tool_call::{
    ApprovalState, ElicitationAnswer, ErrorCode, Outcome, SchemaCache, ToolError, ToolOutcome,
    confirmation_for, decide, wire_name,
};
use super::wire::{self, LoadArguments, ReadArguments, UnloadArguments, parse};

/// The most resources one session may subscribe to.
const MAX_SUBSCRIPTIONS: usize = 1024;

/// How often a connection's forwarding of changes looks whether the
/// connection closed.
const CLOSED_CHECK: Duration = Duration::from_secs(5);

/// The largest file `skills_read` returns; larger ones are for scripts.
pub const READ_LIMIT: u64 = 1024 * 1024;

/// How long past a call's `--timeout` the server waits before it gives up
/// on the call itself: a run's own timeout fires at the deadline and needs
/// a moment to kill its processes and collect their output.
const CALL_GRACE: Duration = Duration::from_secs(1);

/// What every session shares.
#[derive(Debug)]
pub struct Shared {
    /// The catalog as it is now, and its changes.
    pub live: Live,
    pub max_active: usize,
    /// `--audit-log`, opened before anything is served.
    pub audit: Option<AuditLog>,
    /// How scripts and tools run.
    pub run: RunConfig,
    /// The skills' tool schemas, compiled on first use.
    pub schemas: SchemaCache,
    /// Numbers the sessions for the audit log.
    sessions: AtomicU64,
    /// Sessions kept for clients whose connection is not one.
    pub handles: SessionTable,
    /// The seal of confirmations asked the 2026-07-28 way.
    pub rounds: Rounds,
}

impl Shared {
    pub fn new(
        view: View,
        max_active: usize,
        audit: Option<AuditLog>,
        run: RunConfig,
    ) -> std::io::Result<Self> {
        Ok(Self {
            live: Live::new(view),
            max_active,
            audit,
            run,
            schemas: SchemaCache::new(),
            sessions: AtomicU64::new(0),
            handles: SessionTable::default(),
            rounds: Rounds::new()?,
        })
    }
}

/// How a connection reaches the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// One process per client: the connection is the session, whatever the
    /// protocol version.
    Stdio,
    /// Streamable HTTP: the connection is a session only in protocol
    /// versions that have `Mcp-Session-Id` (up to 2025-11-25); from
    /// 2026-07-28 every request stands alone, and sessions are handles
    /// ([`handles`]).
    Http,
}

/// The handler of one MCP connection.
#[derive(Debug)]
pub struct SkillServer {
    shared: Arc<Shared>,
    transport: Transport,
    /// The connection's own session; over stateless HTTP, this request's.
    session: SharedSession,
    /// Whether the client let `roots/list` time out (runtime::peer).
    roots: Mutex<RootsMemory>,
    /// The URIs the client subscribed to with `resources/subscribe`
    /// (before 2026-07-28), told of as their skills change.
    subscribed: Arc<Mutex<BTreeSet<String>>>,
    /// The session's number, for the audit log.
    id: String,
    /// One trace per session (spec 003's `trace_id`).
    trace: TraceId,
}

impl SkillServer {
    /// A new session. Fails only when the system's random source does.
    pub fn new(shared: Arc<Shared>, transport: Transport) -> std::io::Result<Self> {
        let session = Session::new(shared.max_active);
        let id = (shared.sessions.fetch_add(1, Ordering::Relaxed) + 1).to_string();
        Ok(Self {
            shared,
            transport,
            session: Arc::new(Mutex::new(session)),
            roots: Mutex::default(),
            subscribed: Arc::default(),
            id,
            trace: TraceId::random()?,
        })
    }

    /// Runs one tool call and writes its audit line.
    async fn audited(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let started = Instant::now();
        // A client that traces its own calls (W3C `traceparent` in
        // `_meta`) gets its trace in the log; otherwise the session's.
        let trace = [request.meta.as_ref(), Some(&context.meta)]
            .into_iter()
            .flatten()
            .find_map(|meta| TraceId::from_traceparent(meta.0.get("traceparent")?.as_str()?))
            .unwrap_or(self.trace);
        let mut record =
            AuditRecord::begin(&self.id, trace, request.name.as_ref()).map_err(|error| {
                ErrorData::internal_error(format!("no randomness for a run id: {error}"), None)
            })?;
        record.arguments = request.arguments.clone().unwrap_or_default();
        // A session handle is a capability: the log keeps enough of it to
        // tell sessions apart, not enough to use one.
        if let Some(serde_json::Value::String(handle)) =
            record.arguments.get_mut(handles::SESSION_ARGUMENT)
        {
            *handle = handles::shortened(handle);
        }
        record.host_id = context
            .peer
            .peer_info()
            .map(|info| format!("{}/{}", info.client_info.name, info.client_info.version));
        let budget = Budget {
            started,
            total: self.shared.run.limits.timeout,
        };
        let mut notes = Vec::new();
        let own_result = request.name == wire::RUN_SCRIPT;
        let dispatched = tokio::time::timeout_at(
            (budget.deadline() + CALL_GRACE).into(),
            self.dispatch(request, context, &mut record, budget, &mut notes),
        )
        .await;
        let mut result = match dispatched {
            Ok(Ok(CallToolResponse::Complete(result))) => result,
            // A question for the user, the 2026-07-28 way: nothing ran; the
            // log says a confirmation is pending.
            Ok(Ok(CallToolResponse::InputRequired(asked))) => {
                record.duration = started.elapsed();
                record.outcome = Outcome::InputRequired;
                return Ok(
                    match self.append(
                        &record,
                        "the call could not be recorded, so the server does not ask",
                    ) {
                        Ok(()) => CallToolResponse::InputRequired(asked),
                        Err(unrecorded) => unrecorded.into(),
                    },
                );
            }
            Ok(Ok(other)) => return Ok(other),
            Ok(Err(error)) => return Err(error),
            // Every wait inside has its own bound; this one catches what
            // none of them foresaw, so that no call outlives --timeout.
            Err(_) => ToolError::new(
                ErrorCode::Timeout,
                format!(
                    "the call did not finish within its time ({}, --timeout) and was stopped",
                    seconds(budget.total)
                ),
            )
            .into_call_tool_result(),
        };
        add_notes(&mut result, notes, own_result);
        record.duration = started.elapsed();
        if result.is_error == Some(true) {
            record.outcome = Outcome::Error;
            if record.error.is_none() {
                record.error = result
                    .structured_content
                    .as_ref()
                    .and_then(|envelope| serde_json::from_value(envelope["error"].clone()).ok());
            }
        }
        // What the runtime refused before anything ran. (What Landlock
        // refuses during a run fails in the script, unseen by the server.)
        if let Some(error) = &record.error
            && error.code == ErrorCode::PermissionDenied.as_str()
        {
            record.denials.push(error.message.clone());
        }
        // The call ran, but nothing may run unrecorded: say so, and let
        // the operator fix the log.
        Ok(self
            .append(
                &record,
                "the call ran but could not be recorded, so the server withholds its result",
            )
            .map_or_else(Into::into, |()| result.into()))
    }

    /// Writes `record` to the audit log, if there is one; when it cannot,
    /// returns the `UNAVAILABLE` error the client gets instead: the log's
    /// error, then `consequence`.
    fn append(&self, record: &AuditRecord, consequence: &str) -> Result<(), CallToolResult> {
        match &self.shared.audit {
            Some(audit) => audit
                .append(record, &self.shared.live.view().redactor)
                .map_err(|error| {
                    ToolError::new(ErrorCode::Unavailable, format!("{error}; {consequence}"))
                        .into_call_tool_result()
                }),
            None => Ok(()),
        }
    }

    async fn dispatch(
        &self,
        mut request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
        record: &mut AuditRecord,
        budget: Budget,
        notes: &mut Vec<String>,
    ) -> Result<CallToolResponse, ErrorData> {
        // What the calls before this one did to the session is done first.
        let turn = Turn::of(&context);
        if let Some(turn) = &turn {
            turn.wait().await;
        }
        let done = || {
            if let Some(turn) = &turn {
                turn.done();
            }
        };
        // Answers to what a first round of this call asked (2026-07-28).
        let responses = request.input_responses.take();
        let request_state = request.request_state.take();
        let handle = match handles::take_handle(&mut request.arguments) {
            Ok(handle) => handle,
            Err(invalid) => {
                return Ok(ToolError::new(ErrorCode::InvalidArgument, invalid)
                    .into_call_tool_result()
                    .into());
            }
        };
        let stateless = self.stateless(&context);
        let session = match &handle {
            Some(handle) => match self.shared.handles.get(handle) {
                Some(session) => session,
                None => {
                    return Ok(ToolError::new(
                        ErrorCode::FailedPrecondition,
                        format!(
                            "there is no session `{handle}`: it expired or was never made; call skills_load without `{SESSION_ARGUMENT}` to start one and pass the handle it returns"
                        ),
                    )
                    .into_call_tool_result()
                    .into());
                }
            },
            None => self.session.clone(),
        };
        if let Some(handle) = &handle {
            record.session = handles::shortened(handle);
        }
        let name = request.name.as_ref();
        if stateless && handle.is_none() && name != wire::LOAD {
            notes.push(format!(
                "this connection is not a session (streamable HTTP at protocol 2026-07-28): pass the `{SESSION_ARGUMENT}` that skills_load returned"
            ));
        }
        let tools_before = lock(&session).tool_wire_names();
        // The catalog as it is when the call is taken up; a change from
        // now on is for the next call.
        let view = self.shared.live.view();
        let outcome = match name {
            wire::LOAD => parse(name, request.arguments).map(|arguments: LoadArguments| {
                record.skill = single_skill(&view.catalog, &arguments.names);
                // Over stateless HTTP a load without a handle starts a
                // session that outlives the request.
                let kept = handle
                    .clone()
                    .map(Ok)
                    .or_else(|| stateless.then(|| self.shared.handles.insert(session.clone())));
                match kept.transpose() {
                    Ok(kept) => {
                        if let Some(kept) = &kept {
                            record.session = handles::shortened(kept);
                        }
                        load(&session, &view.catalog, &arguments, kept.as_deref())
                    }
                    Err(error) => Ok(ToolError::new(
                        ErrorCode::Internal,
                        format!("no randomness for a session handle: {error}"),
                    )
                    .into_call_tool_result()),
                }
            }),
            wire::UNLOAD => parse(name, request.arguments).map(|arguments: UnloadArguments| {
                let mut session = lock(&session);
                session
                    .unload(arguments.names.as_deref(), arguments.all)
                    .map(|()| session_result(&session, handle.as_deref()))
            }),
            wire::READ => parse(name, request.arguments).map(|arguments: ReadArguments| {
                let result = read(&session, &arguments);
                record.skill = lock(&session)
                    .resolve(arguments.skill.as_deref())
                    .ok()
                    .map(|skill| skill_info(skill));
                result
            }),
            wire::RUN_SCRIPT => {
                let raw = request.arguments.clone().unwrap_or_default();
                let arguments: RunScriptArguments = match parse(name, request.arguments) {
                    Ok(arguments) => arguments,
                    Err(invalid) => return Ok(invalid.into()),
                };
                let skill = match lock(&session).resolve(arguments.skill.as_deref()) {
                    Ok(skill) => skill.clone(),
                    Err(error) => return Ok(session_error(&error).into()),
                };
                done();
                let answer = Answer {
                    call: CallBinding {
                        tool: wire::RUN_SCRIPT,
                        arguments: &raw,
                        session: handle.as_deref().unwrap_or(&self.id),
                    },
                    responses: responses.as_ref(),
                    state: request_state.as_deref(),
                };
                return Ok(self
                    .run_script(&skill, arguments, &context, record, budget, notes, answer)
                    .await);
            }
            wire => {
                let found = lock(&session)
                    .tool(wire)
                    .map(|(skill, tool)| (skill.clone(), tool.clone()));
                let Some((skill, tool)) = found else {
                    // Listed to a client without a session, so it is
                    // there: what is missing is the load.
                    if stateless && let Some(skill) = stateless_tool_skill(&view.catalog, wire) {
                        return Ok(ToolError::new(
                            ErrorCode::FailedPrecondition,
                            format!(
                                "`{wire}` is a tool of the skill `{skill}`, which this session has not loaded: call skills_load with it, then pass the `{SESSION_ARGUMENT}` it returns"
                            ),
                        )
                        .into_call_tool_result()
                        .into());
                    }
                    return Err(ErrorData::invalid_params(
                        format!(
                            "there is no tool named `{wire}` in this session: a skill's tools are listed once skills_load has loaded it"
                        ),
                        None,
                    ));
                };
                done();
                let arguments = request.arguments.unwrap_or_default();
                let wire = wire_name(&skill.name, tool.name.as_str());
                let answer = Answer {
                    call: CallBinding {
                        tool: &wire,
                        arguments: &arguments,
                        session: handle.as_deref().unwrap_or(&self.id),
                    },
                    responses: responses.as_ref(),
                    state: request_state.as_deref(),
                };
                return Ok(self
                    .call_skill_tool(&skill, &tool, &context, record, budget, notes, answer)
                    .await);
            }
        };
        let result = match outcome {
            Ok(Ok(result)) => result,
            Ok(Err(error)) => session_error(&error),
            Err(invalid) => invalid,
        };
        let changed = lock(&session).tool_wire_names() != tools_before;
        done();
        if !stateless && changed {
            // A client that cannot be told keeps its list until it asks.
            peer::notify_tools_changed(&context.peer, self.shared.run.client_timeout).await;
        }
        Ok(result.into())
    }

    /// Returns true if and only if this request's connection is not a
    /// session: streamable HTTP at a protocol version without
    /// `initialize` (2026-07-28 on), where rmcp serves each request alone.
    fn stateless(&self, context: &RequestContext<RoleServer>) -> bool {
        self.transport == Transport::Http && uses_input_required(context)
    }

    /// The folders the client lets scripts work in: its MCP roots, when it
    /// declared them and answers in time, else the project folder (with a
    /// note in `notes`). Fails when the call's time ran out first.
    /// `given` are the roots the client gave back with the call at
    /// 2026-07-28; without them the client is asked over the connection.
    async fn roots(
        &self,
        context: &RequestContext<RoleServer>,
        budget: Budget,
        notes: &mut Vec<String>,
        given: Option<Result<peer::RootsList, String>>,
    ) -> Result<Vec<PathBuf>, ToolError> {
        let roots = match given {
            Some(given) => peer::given_roots(given, &self.shared.run.project),
            None => {
                peer::roots(
                    &context.peer,
                    &self.roots,
                    &self.shared.run.project,
                    self.shared.run.client_timeout,
                    budget,
                )
                .await?
            }
        };
        notes.extend(roots.note);
        Ok(roots.paths)
    }

    /// At 2026-07-28, where the server cannot ask the client while it
    /// handles a call: what the call needs of it (`asks`) goes back in an
    /// `InputRequiredResult` (`Err`), or comes with the call, answered
    /// (`Ok`). Before 2026-07-28, or when nothing is needed, there are no
    /// answers: the client is asked over the connection as the need comes.
    fn round(
        &self,
        context: &RequestContext<RoleServer>,
        answer: &Answer<'_>,
        asks: Asks,
        record: &mut AuditRecord,
    ) -> Result<Answers, Box<CallToolResponse>> {
        if !uses_input_required(context) || (asks.question.is_none() && !asks.roots) {
            return Ok(Answers::default());
        }
        match self.shared.rounds.round(
            &answer.call,
            answer.responses,
            answer.state,
            asks,
            self.shared.run.limits.timeout,
        ) {
            Round::Ask(result) => Err(Box::new(CallToolResponse::InputRequired(result))),
            Round::Answered(answers) => Ok(answers),
            Round::Refused(error) => {
                record.error = Some(error.clone());
                Err(Box::new(error.into_call_tool_result().into()))
            }
        }
    }

    #[allow(clippy::too_many_arguments)] // The call's parts, each used once.
    async fn run_script(
        &self,
        skill: &Arc<ServedSkill>,
        arguments: RunScriptArguments,
        context: &RequestContext<RoleServer>,
        record: &mut AuditRecord,
        budget: Budget,
        notes: &mut Vec<String>,
        answer: Answer<'_>,
    ) -> CallToolResponse {
        record.skill = Some(skill_info(skill));
        let view = self.shared.live.view();
        let asks = Asks {
            question: None,
            roots: client_declares_roots(context),
        };
        let answers = match self.round(context, &answer, asks, record) {
            Ok(answers) => answers,
            Err(asked) => return *asked,
        };
        let roots = match self.roots(context, budget, notes, answers.roots).await {
            Ok(roots) => roots,
            Err(error) => {
                record.error = Some(error.clone());
                return error.into_call_tool_result().into();
            }
        };
        match self
            .shared
            .run
            .run_script(
                skill,
                arguments,
                CallContext {
                    roots: &roots,
                    redactor: &view.redactor,
                    protection: &view.catalog.protection,
                    cancel: context.ct.clone(),
                    budget,
                    notes,
                },
            )
            .await
        {
            Ok((result, outcome)) => {
                record.exit_code = outcome.exit_code;
                result.into()
            }
            Err(error) => {
                record.error = Some(error.clone());
                error.into_call_tool_result().into()
            }
        }
    }

    #[allow(clippy::too_many_arguments)] // The call's parts, each used once.
    async fn call_skill_tool(
        &self,
        skill: &Arc<ServedSkill>,
        tool: &SkillTool,
        context: &RequestContext<RoleServer>,
        record: &mut AuditRecord,
        budget: Budget,
        notes: &mut Vec<String>,
        answer: Answer<'_>,
    ) -> CallToolResponse {
        record.skill = Some(skill_info(skill));
        let arguments = answer.call.arguments;
        let view = self.shared.live.view();
        let schemas = match self.shared.schemas.get(&skill.name, &skill.tree, tool) {
            Ok(schemas) => schemas,
            Err(error) => return error.into_call_tool_result().into(),
        };
        if let Err(error) = schemas.check_arguments(arguments) {
            record.error = Some(error.clone());
            return error.into_call_tool_result().into();
        }
        let confirmation = confirmation_for(
            &skill.name,
            tool,
            skill.frontmatter.extensions.safety.as_ref(),
        );
        if confirmation.is_some() {
            record.approval_state = ApprovalState::Pending;
        }
        // 2026-07-28: no server-to-client request; the question and the
        // ask for roots go back in the result, and the answers come with
        // the call again (runtime::input).
        let asks = Asks {
            question: confirmation
                .as_ref()
                .filter(|_| client_can_elicit(context))
                .map(|request| request.elicitation_request(arguments, &view.redactor)),
            roots: client_declares_roots(context),
        };
        let mut answers = match self.round(context, &answer, asks, record) {
            Ok(answers) => answers,
            Err(asked) => return *asked,
        };
        if let Some(request) = confirmation {
            let answer = if uses_input_required(context) {
                answers
                    .confirmation
                    .take()
                    .unwrap_or(ElicitationAnswer::NotSupported)
            } else {
                let question = request.elicitation_request(arguments, &view.redactor);
                peer::confirm(&context.peer, question, budget).await
            };
            let approval = decide(&request, &answer);
            record.approval_state = approval.state;
            if let Some(denial) = approval.denial {
                record.error = Some(denial.clone());
                return denial.into_call_tool_result().into();
            }
        }
        let roots = match self.roots(context, budget, notes, answers.roots).await {
            Ok(roots) => roots,
            Err(error) => {
                record.error = Some(error.clone());
                return error.into_call_tool_result().into();
            }
        };
        let (outcome, run) = self
            .shared
            .run
            .run_tool(
                skill,
                tool,
                &schemas,
                arguments,
                CallContext {
                    roots: &roots,
                    redactor: &view.redactor,
                    protection: &view.catalog.protection,
                    cancel: context.ct.clone(),
                    budget,
                    notes,
                },
            )
            .await;
        if let Some(run) = run {
            record.exit_code = run.exit_code;
        }
        record.outcome = outcome.outcome();
        if let ToolOutcome::Error(error) = &outcome {
            record.error = Some(error.clone());
        }
        outcome.into_call_tool_result().into()
    }
}

/// A call, as a request state is bound to it, and what the client sent
/// back with it when it was asked something the 2026-07-28 way.
struct Answer<'a> {
    call: CallBinding<'a>,
    responses: Option<&'a rmcp::model::InputResponses>,
    state: Option<&'a str>,
}

/// Returns true if and only if the client declared roots, in this
/// request's `_meta` (2026-07-28) or its handshake.
fn client_declares_roots(context: &RequestContext<RoleServer>) -> bool {
    context
        .meta
        .client_capabilities()
        .or_else(|| {
            context
                .peer
                .peer_info()
                .map(|info| info.capabilities.clone())
        })
        .is_some_and(|capabilities| capabilities.roots.is_some())
}

/// Returns true if and only if the request's protocol has no
/// server-to-client requests (2026-07-28 on), so a question goes back in
/// an `InputRequiredResult`.
fn uses_input_required(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|version| !version.has_initialize())
}

/// Returns true if and only if the client declared form elicitation, in
/// this request's `_meta` or its handshake.
fn client_can_elicit(context: &RequestContext<RoleServer>) -> bool {
    let declared = context.meta.client_capabilities().or_else(|| {
        context
            .peer
            .peer_info()
            .map(|info| info.capabilities.clone())
    });
    declared.is_some_and(|capabilities| {
        capabilities
            .elicitation
            .is_some_and(|elicitation| elicitation.form.is_some() || elicitation.url.is_none())
    })
}

/// The session behind `session`. A panic while holding the lock leaves the
/// session as valid as before it: every change is made whole or not at all.
/// Tells `peer` of every change of the catalog until its connection
/// closes: the resource list changed, and each subscribed resource whose
/// skill changed. Its own tools are those of the skills it loaded, which a
/// change does not touch (a changed skill is loaded again to change them).
async fn forward_changes(
    mut changes: broadcast::Receiver<Arc<Change>>,
    peer: Peer<RoleServer>,
    subscribed: Arc<Mutex<BTreeSet<String>>>,
    client_timeout: Duration,
) {
    loop {
        let change = tokio::select! {
            change = changes.recv() => change,
            () = tokio::time::sleep(CLOSED_CHECK) => {
                if peer.is_transport_closed() {
                    return;
                }
                continue;
            }
        };
        let change = match change {
            Ok(change) => Some(change),
            Err(RecvError::Lagged(_)) => None,
            Err(RecvError::Closed) => return,
        };
        if peer.is_transport_closed() {
            return;
        }
        // A client that does not take a notification in time misses it,
        // as it would a lost one; the next list it asks for is current.
        let _ = tokio::time::timeout(client_timeout, peer.notify_resource_list_changed()).await;
        let uris: Vec<String> = subscribed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .filter(|uri| touches(change.as_deref(), uri))
            .cloned()
            .collect();
        for uri in uris {
            let _ = tokio::time::timeout(
                client_timeout,
                peer.notify_resource_updated(ResourceUpdatedNotificationParam::new(uri)),
            )
            .await;
        }
    }
}

/// Returns true if and only if `change` (`None`: some change, unknown)
/// may have changed what `uri` reads.
fn touches(change: Option<&Change>, uri: &str) -> bool {
    let Some(change) = change else {
        return true;
    };
    catalog::split_uri(uri)
        .is_some_and(|(name, _)| change.touched().any(|touched| *touched == name))
}

fn lock(session: &SharedSession) -> MutexGuard<'_, Session> {
    session.lock().unwrap_or_else(PoisonError::into_inner)
}

/// `skills_load`; `handle` is the session's, when it has one.
fn load(
    session: &SharedSession,
    catalog: &ServedCatalog,
    arguments: &LoadArguments,
    handle: Option<&str>,
) -> Result<CallToolResult, SessionError> {
    let mut session = lock(session);
    session.load(catalog, &arguments.names, arguments.mode)?;
    Ok(session_result(&session, handle))
}

fn read(
    session: &SharedSession,
    arguments: &ReadArguments,
) -> Result<CallToolResult, SessionError> {
    let skill = lock(session).resolve(arguments.skill.as_deref())?.clone();
    let path = catalog::normalise(&arguments.path).ok_or_else(|| SessionError::Read {
        error: catalog::ReadError::NotInSkill {
            skill: skill.name.clone(),
            path: arguments.path.clone(),
        },
    })?;
    let bytes = skill.read(&path, READ_LIMIT)?;
    let uri = skill.uri(&path);
    let content = match String::from_utf8(bytes) {
        Ok(text) if !text.contains('\0') => ContentBlock::text(text),
        Ok(text) => blob(&uri, &path, text.as_bytes()),
        Err(error) => blob(&uri, &path, error.as_bytes()),
    };
    Ok(CallToolResult::success(vec![content]))
}

/// The skill whose tool `wire` names, among every served skill's: what a
/// client without a session may have seen in `tools/list`.
fn stateless_tool_skill(catalog: &ServedCatalog, wire: &str) -> Option<String> {
    catalog.skills().iter().find_map(|skill| {
        skill
            .frontmatter
            .extensions
            .tools
            .iter()
            .any(|tool| super::tool_call::wire_name(&skill.name, tool.name.as_str()) == wire)
            .then(|| skill.name.clone())
    })
}

/// The telemetry fields of `skill`.
fn skill_info(skill: &ServedSkill) -> SkillInfo {
    let version = skill
        .locked
        .as_ref()
        .map(ToString::to_string)
        .or_else(|| skill.frontmatter.version.as_ref().map(ToString::to_string));
    SkillInfo::new(
        &skill.name,
        version.as_deref(),
        skill.frontmatter.extensions.provenance.as_ref(),
    )
}

/// The skill a load is about, when it names exactly one that is served.
fn single_skill(catalog: &ServedCatalog, names: &[String]) -> Option<SkillInfo> {
    match names {
        [name] => catalog.get(name).ok().map(|skill| skill_info(skill)),
        _ => None,
    }
}

fn blob(uri: &str, path: &str, bytes: &[u8]) -> ContentBlock {
    ContentBlock::resource(
        ResourceContents::blob(base64::engine::general_purpose::STANDARD.encode(bytes), uri)
            .with_mime_type(resources::listed_mime_type(path)),
    )
}

/// The result of `skills_load` and `skills_unload`: the receipt (with the
/// session's handle, when it has one) as structured content and as text,
/// then the `<active_skills>` block.
fn session_result(session: &Session, handle: Option<&str>) -> CallToolResult {
    let mut receipt = session.receipt();
    if let Some(handle) = handle {
        receipt[SESSION_ARGUMENT] = serde_json::Value::String(handle.to_owned());
    }
    let mut content = vec![ContentBlock::text(receipt.to_string())];
    let block = session.active_block();
    if !block.is_empty() {
        content.push(ContentBlock::text(block));
    }
    let mut result = CallToolResult::success(content);
    result.structured_content = Some(receipt);
    result
}

/// Adds the call's `notes` where a reader of its result finds them: to the
/// `notes` of `skills_run_script`'s result (`own_result`), beside `error` in
/// an error envelope, and otherwise, since a skill tool's
/// `structuredContent` must match its `output_schema`, as text blocks after
/// the result.
fn add_notes(result: &mut CallToolResult, notes: Vec<String>, own_result: bool) {
    if notes.is_empty() {
        return;
    }
    use serde_json::Value;
    let envelope = result.is_error == Some(true);
    // Only a result whose one text block is its JSON can take them inside:
    // that block is rewritten to match, for clients that read only text.
    let single_text = matches!(result.content.as_slice(), [block] if block.as_text().is_some());
    match result.structured_content.as_mut() {
        Some(Value::Object(object))
            if single_text
                && (own_result
                    || (envelope && object.get("status").is_some_and(|s| s == "error")))
                && object.get("notes").is_none_or(Value::is_array) =>
        {
            if let Value::Array(listed) = object
                .entry("notes")
                .or_insert_with(|| Value::Array(Vec::new()))
            {
                listed.extend(notes.into_iter().map(Value::String));
            }
            result.content = vec![ContentBlock::text(
                Value::Object(object.clone()).to_string(),
            )];
        }
        _ => result.content.extend(
            notes
                .into_iter()
                .map(|note| ContentBlock::text(format!("note: {note}"))),
        ),
    }
}

fn session_error(error: &SessionError) -> CallToolResult {
    let code = match error {
        SessionError::UnknownSkill(_) => ErrorCode::NotFound,
        SessionError::TooMany { .. }
        | SessionError::NothingToUnload
        | SessionError::ToolNameCollision(_) => ErrorCode::InvalidArgument,
        SessionError::NothingLoaded | SessionError::NotLoaded { .. } => {
            ErrorCode::FailedPrecondition
        }
        SessionError::ChangedOnDisk { .. } => ErrorCode::Integrity,
        SessionError::Read { error } => match error {
            catalog::ReadError::NotInSkill { .. } => ErrorCode::NotFound,
            catalog::ReadError::TooLarge { .. } => ErrorCode::InvalidArgument,
            catalog::ReadError::Changed { .. } => ErrorCode::Integrity,
            catalog::ReadError::Io { .. } => ErrorCode::Unavailable,
        },
    };
    ToolError::new(code, error.to_string()).into_call_tool_result()
}

impl ServerHandler for SkillServer {
    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::KNOWN_VERSIONS)
    }

    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .enable_prompts()
                .enable_resources()
                .enable_resources_list_changed()
                .enable_resources_subscribe()
                .enable_skills_with_directory_read()
                .build(),
        )
        .with_server_info(Implementation::new("skillpkg", env!("CARGO_PKG_VERSION")))
        .with_instructions(self.shared.live.view().instructions.clone())
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        // `subscriptions/listen` (2026-07-28): whatever was asked for, cut
        // by rmcp to what get_info advertises, with at most
        // MAX_SUBSCRIPTIONS resources. The stream stays open until the
        // client ends it; changes are sent on it as they happen.
        let mut accepted = requested.clone();
        if let Some(uris) = &mut accepted.resource_subscriptions {
            uris.truncate(MAX_SUBSCRIPTIONS);
        }
        Some(accepted)
    }

    async fn listen(&self, subscription: SubscriptionContext) -> Result<(), ErrorData> {
        let mut changes = self.shared.live.subscribe();
        loop {
            let change = tokio::select! {
                () = subscription.cancelled() => return Ok(()),
                change = changes.recv() => change,
            };
            let change = match change {
                Ok(change) => Some(change),
                // Fallen behind: something changed, what is unknown.
                Err(RecvError::Lagged(_)) => None,
                Err(RecvError::Closed) => {
                    subscription.cancelled().await;
                    return Ok(());
                }
            };
            let accepted = subscription.accepted();
            let sink = subscription.sink();
            let mut sent = Vec::new();
            if accepted.resources_list_changed == Some(true) {
                sent.push(sink.notify_resource_list_changed().await);
            }
            // Listed to such a client: every served skill's tools.
            if accepted.tools_list_changed == Some(true)
                && change.as_ref().is_none_or(|change| change.tools)
            {
                sent.push(sink.notify_tool_list_changed().await);
            }
            for uri in accepted.resource_subscriptions.iter().flatten() {
                if touches(change.as_deref(), uri) {
                    sent.push(sink.notify_resource_updated(uri.clone()).await);
                }
            }
            if sent
                .iter()
                .any(|sent| matches!(sent, Err(SubscriptionSendError::SubscriptionClosed)))
            {
                return Ok(());
            }
        }
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        // A connection that is a session hears of changes on it until it
        // closes.
        tokio::spawn(forward_changes(
            self.shared.live.subscribe(),
            context.peer,
            Arc::clone(&self.subscribed),
            self.shared.run.client_timeout,
        ));
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if self
            .shared
            .live
            .view()
            .catalog
            .resolve_uri(&request.uri)
            .is_none()
        {
            return Err(ErrorData::invalid_params(
                format!(
                    "no skill is served at {}; subscribe to a skill's files, as skills/list gives them",
                    request.uri
                ),
                None,
            ));
        }
        let mut subscribed = self
            .subscribed
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if subscribed.len() >= MAX_SUBSCRIPTIONS && !subscribed.contains(&request.uri) {
            return Err(ErrorData::invalid_params(
                format!(
                    "a session may subscribe to at most {MAX_SUBSCRIPTIONS} resources; unsubscribe from some first"
                ),
                None,
            ));
        }
        subscribed.insert(request.uri);
        Ok(())
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.subscribed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&request.uri);
        Ok(())
    }

    async fn on_roots_list_changed(&self, _context: NotificationContext<RoleServer>) {
        // The client is alive and its roots changed: ask again, even if it
        // let an earlier roots/list time out.
        self.roots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .list_changed();
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        if let Some(turn) = Turn::of(&context) {
            turn.wait().await;
        }
        resources::no_cursor(
            request
                .as_ref()
                .and_then(|request| request.cursor.as_deref()),
        )?;
        let mut tools = wire::session_tools();
        if self.stateless(&context) {
            // No connection, so no loaded set to list: every served skill's
            // tools, each taking the session that loaded its skill.
            tools.extend(self.shared.live.view().stateless_tools().iter().cloned());
        } else {
            tools.extend(lock(&self.session).listed_tools());
        }
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.audited(request, context).await
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        resources::no_cursor(
            request
                .as_ref()
                .and_then(|request| request.cursor.as_deref()),
        )?;
        Ok(ListPromptsResult::with_all_items(wire::prompts()))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        if let Some(turn) = Turn::of(&context) {
            turn.wait().await;
        }
        let (description, text) = match request.name.as_str() {
            "available_skills" => (
                "The skills this server serves",
                format!("{LOADING_RULE}\n\n{}", self.shared.live.view().available),
            ),
            "active_skills" => {
                let session = match request
                    .arguments
                    .as_ref()
                    .and_then(|arguments| arguments.get(SESSION_ARGUMENT))
                    .and_then(|handle| handle.as_str())
                {
                    Some(handle) => self.shared.handles.get(handle).ok_or_else(|| {
                        ErrorData::invalid_params(
                            format!("there is no session `{handle}`: it expired or was never made"),
                            None,
                        )
                    })?,
                    None => self.session.clone(),
                };
                let block = lock(&session).active_block();
                (
                    "The loaded skills' instructions",
                    if block.is_empty() {
                        "<active_skills>\n</active_skills>\n".to_owned()
                    } else {
                        block
                    },
                )
            }
            other => {
                return Err(ErrorData::invalid_params(
                    format!(
                        "there is no prompt named `{other}`; the prompts are available_skills and active_skills"
                    ),
                    None,
                ));
            }
        };
        let mut result = GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)]);
        result.description = Some(description.to_owned());
        Ok(result.into())
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        resources::no_cursor(
            request
                .as_ref()
                .and_then(|request| request.cursor.as_deref()),
        )?;
        Ok(ListResourcesResult::with_all_items(resources::list(
            &self.shared.live.view().catalog,
        )))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        resources::read(&self.shared.live.view().catalog, &request.uri).map(Into::into)
    }

    async fn list_skills(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListSkillsResult, ErrorData> {
        resources::no_cursor(
            request
                .as_ref()
                .and_then(|request| request.cursor.as_deref()),
        )?;
        Ok(ListSkillsResult::with_all_items(
            self.shared
                .live
                .view()
                .catalog
                .skills()
                .iter()
                .map(|skill| skill.entry.clone())
                .collect(),
        ))
    }

    async fn get_skill(
        &self,
        request: GetSkillRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetSkillResult, ErrorData> {
        self.shared
            .live
            .view()
            .catalog
            .resolve_uri(&request.uri)
            .filter(|(_, path)| path == "SKILL.md")
            .map(|(skill, _)| GetSkillResult::new(skill.entry.clone()))
            .ok_or_else(|| {
                ErrorData::invalid_params(
                    format!(
                        "no skill at {}; skills/list gives each skill's SKILL.md URI",
                        request.uri
                    ),
                    None,
                )
            })
    }

    async fn read_resource_directory(
        &self,
        request: ReadResourceDirectoryRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceDirectoryResult, ErrorData> {
        resources::no_cursor(request.cursor.as_deref())?;
        resources::directory(&self.shared.live.view().catalog, &request.uri)
            .map(ReadResourceDirectoryResult::with_all_items)
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::{CallToolResult, ContentBlock};
    use serde_json::json;

    use super::add_notes;
    use crate::runtime::catalog::normalise;
    use crate::runtime::tool_call::{ErrorCode, ToolError};

    fn texts(result: &CallToolResult) -> Vec<String> {
        result
            .content
            .iter()
            .map(|block| block.as_text().expect("text").text.clone())
            .collect()
    }

    #[test]
    fn notes_go_where_the_reader_of_each_result_finds_them() {
        let note = || vec!["the project folder is the root".to_owned()];
        // skills_run_script's own result: its `notes`, and the text block
        // rewritten to match.
        let ran = json!({"path": "scripts/a.sh", "exit_code": 0, "notes": ["granted more"]});
        let mut result = CallToolResult::success(vec![ContentBlock::text(ran.to_string())]);
        result.structured_content = Some(ran);
        add_notes(&mut result, note(), true);
        let expected = json!({"path": "scripts/a.sh", "exit_code": 0, "notes": ["granted more", "the project folder is the root"]});
        assert_eq!(result.structured_content, Some(expected.clone()));
        assert_eq!(texts(&result), [expected.to_string()]);

        // An error envelope, of any tool: beside `error`.
        let mut result = ToolError::new(ErrorCode::Timeout, "out of time").into_call_tool_result();
        add_notes(&mut result, note(), false);
        let envelope = result.structured_content.clone().unwrap();
        assert_eq!(envelope["error"]["code"], "TIMEOUT");
        assert_eq!(envelope["notes"], json!(["the project folder is the root"]));
        assert_eq!(texts(&result), [envelope.to_string()]);

        // A skill tool's own result must keep matching its output_schema:
        // the note is a text block after it.
        let mut result = CallToolResult::structured(json!({"count": 3}));
        add_notes(&mut result, note(), false);
        assert_eq!(result.structured_content, Some(json!({"count": 3})));
        assert_eq!(
            texts(&result).last().unwrap(),
            "note: the project folder is the root"
        );

        // No notes, no change.
        let mut result = CallToolResult::structured(json!({"count": 3}));
        add_notes(&mut result, Vec::new(), false);
        assert_eq!(result.content.len(), 1);
    }

    #[test]
    fn paths_from_a_model_are_normalised_or_refused() {
        assert_eq!(
            normalise("references/a.md").as_deref(),
            Some("references/a.md")
        );
        assert_eq!(
            normalise("./references//a.md").as_deref(),
            Some("references/a.md")
        );
        assert_eq!(
            normalise("references\\a.md").as_deref(),
            Some("references/a.md")
        );
        assert_eq!(normalise("../other/SKILL.md"), None);
        assert_eq!(normalise("references/../../x"), None);
        assert_eq!(normalise("/etc/passwd"), None);
        assert_eq!(normalise("\\etc\\passwd"), None);
        assert_eq!(normalise(""), None);
        assert_eq!(normalise("."), None);
    }
}
