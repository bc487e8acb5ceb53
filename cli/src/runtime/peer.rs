//! What the server asks of the client while it handles a tool call, each
//! wait with a bound: a client that declares a capability and never
//! answers must not hang the call (docs/runtime-tools.md, "Waits").
//!
//! ```text
//! request                          bounded by                       when nobody answers in time
//! roots/list                       --client-timeout (5 s) and       the project folder is the root, with a note;
//!                                  what is left of the call         the session stops asking (below); past the
//!                                                                   call's --timeout: TIMEOUT, nothing runs
//! elicitation/create               what is left of the call         APPROVAL_DENIED, retriable
//! notifications/tools/list_changed --client-timeout                 not sent (the client asks tools/list itself)
//! ```
//!
//! A confirmation waits for a person, who may read for a while: it is
//! bounded by the call's `--timeout` rather than by `--client-timeout`,
//! which is for what client software answers by itself. The server sends
//! no sampling requests.
//!
//! A client that let `roots/list` time out once is not asked again on every
//! call, which would add `--client-timeout` to each: the session remembers
//! it ([`RootsMemory`]) and uses the project folder, with a note, until the
//! client sends `notifications/roots/list_changed` (it is alive, and its
//! roots changed) or [`ROOTS_RETRY_AFTER`] has passed (it may only have
//! been busy). An answer, even an empty list, clears the memory.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use rmcp::RoleServer;
#[allow(deprecated)] // Roots are deprecated by SEP-2577; clients still send them.
use rmcp::model::ListRootsRequest;
use rmcp::model::{ClientResult, ElicitRequestParams, ServerRequest};
use rmcp::service::{Peer, PeerRequestOptions, ServiceError};

use super::run::{Budget, seconds};
use super::tool_call::{ElicitationAnswer, ToolError, cap_chars};

/// `roots/list`'s result. SEP-2577 deprecates roots; clients still send
/// them, and they bound what scripts may touch, so they are asked while
/// clients have them.
#[allow(deprecated)]
pub type RootsList = rmcp::model::ListRootsResult;

/// How long the server waits for the client to answer a request its
/// software answers by itself (`roots/list`), unless `--client-timeout`
/// says otherwise.
pub const DEFAULT_CLIENT_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a session that saw `roots/list` time out uses the project
/// folder before it asks again without a `notifications/roots/list_changed`:
/// long enough that a silent client costs one wait in many calls, short
/// enough that a client that was only busy gets its roots back.
pub const ROOTS_RETRY_AFTER: Duration = Duration::from_secs(5 * 60);

/// What a session remembers of its client's `roots/list`.
#[derive(Debug, Default)]
pub struct RootsMemory {
    /// When the client last let `roots/list` time out; `None` when it
    /// answered, or was never asked.
    silent_since: Option<Instant>,
}

impl RootsMemory {
    /// Returns true if and only if the client should be asked at `now`:
    /// it never timed out, or [`ROOTS_RETRY_AFTER`] has passed since.
    pub fn should_ask(&self, now: Instant) -> bool {
        self.silent_since
            .is_none_or(|since| now.saturating_duration_since(since) >= ROOTS_RETRY_AFTER)
    }

    /// Records an answer.
    pub fn answered(&mut self) {
        self.silent_since = None;
    }

    /// Records a `roots/list` that timed out at `now`.
    pub fn timed_out(&mut self, now: Instant) {
        self.silent_since = Some(now);
    }

    /// Records `notifications/roots/list_changed`: ask at the next call.
    pub fn list_changed(&mut self) {
        self.silent_since = None;
    }
}

/// The folders a call may work in, and what to tell the caller about them.
#[derive(Debug, PartialEq, Eq)]
pub struct Roots {
    pub paths: Vec<PathBuf>,
    /// Set when the project folder stands in for roots the client did not
    /// give.
    pub note: Option<String>,
}

/// Returns the client's MCP roots when it declared them and answers in
/// time, else the project folder. Fails only when the call's own time ran
/// out while waiting (`TIMEOUT`).
pub async fn roots(
    peer: &Peer<RoleServer>,
    memory: &Mutex<RootsMemory>,
    project: &Path,
    client_timeout: Duration,
    budget: Budget,
) -> Result<Roots, ToolError> {
    let project_only = |note: Option<String>| Roots {
        paths: vec![project.to_path_buf()],
        note,
    };
    #[allow(deprecated)]
    let declared = peer
        .peer_info()
        .is_some_and(|info| info.capabilities.roots.is_some());
    if !declared {
        return Ok(project_only(None));
    }
    let lock = || memory.lock().unwrap_or_else(PoisonError::into_inner);
    if !lock().should_ask(Instant::now()) {
        return Ok(project_only(Some(format!(
            "the client did not answer roots/list in time earlier in this session, so the project folder {} is the root; the server asks again after notifications/roots/list_changed, or {} minutes after that timeout",
            project.display(),
            ROOTS_RETRY_AFTER.as_secs() / 60
        ))));
    }
    let Some(left) = budget.remaining() else {
        return Err(budget.spent("before the client could be asked for its roots"));
    };
    let wait = client_timeout.min(left);
    #[allow(deprecated)]
    let answer = async {
        peer.send_request_with_option(
            ServerRequest::ListRootsRequest(ListRootsRequest::default()),
            PeerRequestOptions::with_timeout(wait),
        )
        .await?
        .await_response()
        .await
    };
    // rmcp's own timeout also tells the client the request is cancelled;
    // this one bounds the rest (a transport that takes the request and
    // never returns).
    let answer = tokio::time::timeout(wait + Duration::from_millis(100), answer)
        .await
        .unwrap_or(Err(ServiceError::Timeout { timeout: wait }));
    match answer {
        #[allow(deprecated)]
        Ok(ClientResult::ListRootsResult(listed)) => {
            lock().answered();
            Ok(listed_roots(&listed, project))
        }
        Ok(_) => {
            lock().answered();
            Ok(project_only(Some(format!(
                "the client answered roots/list with something else, so the project folder {} is the root",
                project.display()
            ))))
        }
        Err(ServiceError::Timeout { .. }) => {
            // Silent for as long as the whole call could wait is silent
            // enough: the next call does not wait either.
            lock().timed_out(Instant::now());
            if left < client_timeout {
                return Err(budget.spent("while waiting for the client to answer roots/list"));
            }
            Ok(project_only(Some(format!(
                "the client did not answer roots/list within {}, so the project folder {} is the root; the server asks again after notifications/roots/list_changed, or in {} minutes",
                seconds(wait),
                project.display(),
                ROOTS_RETRY_AFTER.as_secs() / 60
            ))))
        }
        Err(error) => Ok(project_only(Some(format!(
            "the client's roots/list failed ({}), so the project folder {} is the root",
            // The client's own words, which may be long.
            cap_chars(&error.to_string(), 200),
            project.display()
        )))),
    }
}

/// The folders of the roots a client listed (those that are `file:` URIs);
/// the project folder when there are none.
#[allow(deprecated)]
fn listed_roots(listed: &RootsList, project: &Path) -> Roots {
    let paths: Vec<PathBuf> = listed
        .roots
        .iter()
        .filter_map(|root| url::Url::parse(&root.uri).ok()?.to_file_path().ok())
        .collect();
    if paths.is_empty() {
        Roots {
            paths: vec![project.to_path_buf()],
            note: None,
        }
    } else {
        Roots { paths, note: None }
    }
}

/// The roots a client gave back with a call asked for them the 2026-07-28
/// way ([`super::input`]), or the project folder, with a note saying why,
/// when it gave none.
pub fn given_roots(answer: Result<RootsList, String>, project: &Path) -> Roots {
    match answer {
        Ok(listed) => listed_roots(&listed, project),
        Err(why) => Roots {
            paths: vec![project.to_path_buf()],
            note: Some(format!(
                "{}, so the project folder {} is the root",
                cap_chars(&why, 200),
                project.display()
            )),
        },
    }
}

/// Asks the user, through the client, to confirm a tool call, waiting at
/// most for what is left of the call.
pub async fn confirm(
    peer: &Peer<RoleServer>,
    request: ElicitRequestParams,
    budget: Budget,
) -> ElicitationAnswer {
    if peer.supported_elicitation_modes().is_empty() {
        return ElicitationAnswer::NotSupported;
    }
    let Some(left) = budget.remaining() else {
        return ElicitationAnswer::Failed(format!(
            "the call's time ({}) ran out before the question could be asked",
            seconds(budget.total)
        ));
    };
    let asked = peer.create_elicitation_with_timeout(request, Some(left));
    match tokio::time::timeout(left + Duration::from_millis(100), asked).await {
        Ok(Ok(result)) => ElicitationAnswer::Answered(result),
        Ok(Err(ServiceError::Timeout { .. })) | Err(_) => ElicitationAnswer::Failed(format!(
            "no answer within the call's time ({}, --timeout)",
            seconds(budget.total)
        )),
        Ok(Err(error)) => ElicitationAnswer::Failed(error.to_string()),
    }
}

/// Tells the client that the session's tools changed, waiting at most
/// `client_timeout` for the transport to take the message: a client that
/// cannot be told asks `tools/list` when it needs it.
pub async fn notify_tools_changed(peer: &Peer<RoleServer>, client_timeout: Duration) {
    let _ = tokio::time::timeout(client_timeout, peer.notify_tool_list_changed()).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_that_timed_out_is_not_asked_again_until_its_roots_change_or_time_passes() {
        let start = Instant::now();
        let mut memory = RootsMemory::default();
        assert!(memory.should_ask(start), "a new session asks");
        memory.timed_out(start);
        assert!(!memory.should_ask(start + Duration::from_secs(1)));
        assert!(!memory.should_ask(start + ROOTS_RETRY_AFTER - Duration::from_millis(1)));
        assert!(memory.should_ask(start + ROOTS_RETRY_AFTER));
        memory.list_changed();
        assert!(memory.should_ask(start + Duration::from_secs(1)));
        memory.timed_out(start);
        memory.answered();
        assert!(memory.should_ask(start));
    }
}
