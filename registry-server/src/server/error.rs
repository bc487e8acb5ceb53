//! Errors on the wire. Every error the server answers (the API's, the
//! static tree's, a request the router does not know, a handler that
//! panicked) has a JSON body of one shape:
//!
//! ```text
//! {"code":"forbidden","message":"`bob` does not own `pdf`; ...",
//!  "errors":[{"code":"not-owner","detail":"`bob` does not own `pdf`; ..."}]}
//! ```
//!
//! - `code` (since 0.2): the kind of error, one of a fixed set of
//!   snake_case words, for scripts to match on. It follows from the status
//!   ([`code_of`]), except for the refusals that have a code of their own
//!   (`audit_refused`, `key_id_taken`, `unknown_user`).
//! - `message` (since 0.2): a sentence for a person.
//! - `errors` (since 0.1): the same sentence as `detail`, which clients
//!   print as it is, and the finer reason as `code` in kebab-case
//!   (`not-owner` and `forbidden` are both 403 `forbidden`).
//!
//! A failure of the server itself (its tree or state unreadable, a task
//! that panicked) answers `internal` and a generic sentence to whoever
//! asked: its cause names the server's own files, so it travels with the
//! response only as far as the request's log line ([`Cause`]), never into
//! the body.

use axum::Json;
use axum::body::Body;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::registry::RegistryError;
use crate::report::error_chain;

/// What `detail` says of an internal error.
const INTERNAL_DETAIL: &str = "the registry failed to answer this request; its operator can find the cause in the server's log";

/// What `detail` says when the registry's disk is full.
const STORAGE_FULL_DETAIL: &str = "the registry has no storage space left, so nothing was written; try again later, or tell its operator";

/// The most of an untyped error body (a rejection of the router's) kept as
/// the message of the typed one.
const MAX_UNTYPED_BODY: usize = 1024;

/// Returns the machine `code` of an error status: a fixed set, one word
/// for each kind of error, whatever the reason.
pub(super) fn code_of(status: StatusCode) -> &'static str {
    match status {
        StatusCode::BAD_REQUEST => "bad_request",
        StatusCode::UNAUTHORIZED => "unauthorized",
        StatusCode::FORBIDDEN => "forbidden",
        StatusCode::NOT_FOUND => "not_found",
        StatusCode::METHOD_NOT_ALLOWED => "method_not_allowed",
        StatusCode::REQUEST_TIMEOUT => "request_timeout",
        StatusCode::CONFLICT => "conflict",
        StatusCode::PRECONDITION_FAILED => "precondition_failed",
        StatusCode::PAYLOAD_TOO_LARGE => "payload_too_large",
        StatusCode::UNSUPPORTED_MEDIA_TYPE => "unsupported_media_type",
        StatusCode::RANGE_NOT_SATISFIABLE => "range_not_satisfiable",
        StatusCode::SERVICE_UNAVAILABLE => "unavailable",
        StatusCode::INSUFFICIENT_STORAGE => "insufficient_storage",
        status if status.is_server_error() => "internal",
        _ => "bad_request",
    }
}

/// The cause of a server failure, carried from the handler to the
/// request's log line in the response's extensions; never sent.
#[derive(Clone, Debug)]
pub(super) struct Cause(pub(super) String);

/// Marks a response whose body is already a typed error.
#[derive(Clone, Copy, Debug)]
struct Typed;

/// Returns true if and only if an I/O error in the chain of `error` says
/// the disk or the quota is full.
fn is_storage_full(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut next = Some(error);
    while let Some(error) = next {
        if let Some(io) = error.downcast_ref::<std::io::Error>()
            && matches!(
                io.kind(),
                std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded
            )
        {
            return true;
        }
        next = error.source();
    }
    false
}

/// The `code` of an upload the registry's audit refused (422).
pub(super) const AUDIT_REFUSED: &str = "audit_refused";
/// The `code` of a publisher key whose id is registered with another key.
pub(super) const KEY_ID_TAKEN: &str = "key_id_taken";
/// The `code` of an owner to add who is not a user of the registry.
pub(super) const UNKNOWN_USER: &str = "unknown_user";

/// An API error: a status, a reason and the sentence clients print.
#[derive(Debug)]
pub(super) struct ApiError {
    status: StatusCode,
    /// The kind of error, `code`: [`code_of`] the status, unless the
    /// refusal has a code of its own.
    code: &'static str,
    /// The finer reason, `errors[].code`.
    reason: &'static str,
    detail: String,
    /// Seconds to send in `Retry-After`.
    retry_after: Option<u64>,
    /// Whether the connection is closed after the answer: the body was not
    /// read (or not in full), so the connection cannot carry another
    /// request.
    close: bool,
    /// What the log line says of a server failure.
    cause: Option<String>,
}

impl ApiError {
    pub(super) fn new(status: StatusCode, reason: &'static str, detail: impl Into<String>) -> Self {
        Self {
            status,
            code: code_of(status),
            reason,
            detail: detail.into(),
            retry_after: None,
            close: false,
            cause: None,
        }
    }

    pub(super) fn bad_request(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "bad-request", detail)
    }

    pub(super) fn unauthorized(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "unauthorized", detail)
    }

    pub(super) fn not_found(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not-found", detail)
    }

    pub(super) fn too_large(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::PAYLOAD_TOO_LARGE, "too-large", detail)
    }

    /// A body that did not arrive within the body timeout.
    pub(super) fn timed_out(timeout: std::time::Duration) -> Self {
        Self::new(
            StatusCode::REQUEST_TIMEOUT,
            "timeout",
            format!(
                "the request body did not arrive within {} seconds",
                timeout.as_secs_f64()
            ),
        )
        .closing()
    }

    /// A request refused for want of room, to retry after `seconds`.
    pub(super) fn busy(detail: impl Into<String>, seconds: u64) -> Self {
        Self {
            retry_after: Some(seconds),
            ..Self::new(StatusCode::SERVICE_UNAVAILABLE, "busy", detail)
        }
    }

    /// A failure of the server itself: answers a generic sentence, and
    /// keeps `error` and its causes for the log line. A full disk is told
    /// apart (507 `insufficient-storage`), since the client can do
    /// something about it: wait, or tell the operator.
    pub(super) fn internal(error: &(dyn std::error::Error + 'static)) -> Self {
        let cause = Some(error_chain(error));
        if is_storage_full(error) {
            return Self {
                cause,
                ..Self::new(
                    StatusCode::INSUFFICIENT_STORAGE,
                    "insufficient-storage",
                    STORAGE_FULL_DETAIL,
                )
            };
        }
        Self {
            cause,
            ..Self::failed()
        }
    }

    /// The generic answer to a failure of the server, cause untold.
    fn failed() -> Self {
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            INTERNAL_DETAIL,
        )
    }

    /// Gives the error a `code` of its own, in place of its status's.
    fn with_code(mut self, code: &'static str) -> Self {
        self.code = code;
        self
    }

    /// Marks the answer as the last on its connection.
    pub(super) fn closing(mut self) -> Self {
        self.close = true;
        self
    }

    pub(super) fn status(&self) -> StatusCode {
        self.status
    }

    pub(super) fn detail(&self) -> &str {
        &self.detail
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = json!({
            "code": self.code,
            "message": self.detail,
            "errors": [{ "code": self.reason, "detail": self.detail }],
        });
        let mut response = (self.status, Json(body)).into_response();
        let headers = response.headers_mut();
        if let Some(seconds) = self.retry_after {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        if self.close {
            headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
        }
        response.extensions_mut().insert(Typed);
        if let Some(cause) = self.cause {
            response.extensions_mut().insert(Cause(cause));
        }
        response
    }
}

impl From<RegistryError> for ApiError {
    fn from(error: RegistryError) -> Self {
        let own_code =
            |status, reason, code| Self::new(status, reason, error_chain(&error)).with_code(code);
        let (status, reason) = match &error {
            RegistryError::AuditRefused(_) => {
                return own_code(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "audit-refused",
                    AUDIT_REFUSED,
                );
            }
            RegistryError::KeyIdTaken(_) => {
                return own_code(StatusCode::CONFLICT, "key-id-taken", KEY_ID_TAKEN);
            }
            RegistryError::UnknownUser { .. } => {
                return own_code(StatusCode::BAD_REQUEST, "unknown-user", UNKNOWN_USER);
            }
            RegistryError::BadRequest(_) => (StatusCode::BAD_REQUEST, "bad-request"),
            RegistryError::ControlCharacter(_) => (StatusCode::BAD_REQUEST, "control-character"),
            RegistryError::TooLarge(_) => (StatusCode::PAYLOAD_TOO_LARGE, "too-large"),
            RegistryError::NotOwner { .. } => (StatusCode::FORBIDDEN, "not-owner"),
            RegistryError::Forbidden(_) => (StatusCode::FORBIDDEN, "forbidden"),
            RegistryError::NotFound(_) => (StatusCode::NOT_FOUND, "not-found"),
            RegistryError::Exists { .. } | RegistryError::SameVersion { .. } => {
                (StatusCode::CONFLICT, "exists")
            }
            RegistryError::Busy { .. } => (StatusCode::CONFLICT, "publish-in-progress"),
            RegistryError::Confusable(_) => (StatusCode::CONFLICT, "confusable-name"),
            RegistryError::Tree(_)
            | RegistryError::State(_)
            | RegistryError::Metadata(_)
            | RegistryError::Downloads(_)
            | RegistryError::Setup(_) => {
                return Self::internal(&error);
            }
        };
        Self::new(status, reason, error_chain(&error))
    }
}

/// Gives an error response that is not typed yet (a rejection of the
/// router's or of an extractor, in plain text or empty) the typed body, its
/// text as the message. The headers that describe the refusal (`Allow`,
/// `Retry-After`, `Connection`) are kept; an untyped server failure's text
/// goes to the log only.
pub(super) async fn type_errors(response: Response) -> Response {
    let status = response.status();
    let is_error = status.is_client_error() || status.is_server_error();
    if !is_error || response.extensions().get::<Typed>().is_some() {
        return response;
    }
    let (parts, body) = response.into_parts();
    let text = match axum::body::to_bytes(body, MAX_UNTYPED_BODY).await {
        Ok(bytes) => String::from_utf8_lossy(&bytes).trim().to_owned(),
        Err(_) => String::new(),
    };
    let error = if status.is_server_error() {
        ApiError::untold(status, text)
    } else {
        let detail = if text.is_empty() {
            status
                .canonical_reason()
                .unwrap_or("refused")
                .to_lowercase()
        } else {
            text
        };
        ApiError::new(status, reason_of(status), detail)
    };
    let mut typed = error.into_response();
    for name in [header::ALLOW, header::RETRY_AFTER, header::CONNECTION] {
        if let Some(value) = parts.headers.get(&name) {
            typed.headers_mut().insert(name, value.clone());
        }
    }
    typed
}

impl ApiError {
    /// A server failure whose text is not for the client.
    fn untold(status: StatusCode, text: String) -> Self {
        Self {
            status,
            cause: Some(text),
            ..Self::failed()
        }
    }
}

/// The `errors[].code` of a status the router or an extractor answered.
fn reason_of(status: StatusCode) -> &'static str {
    match status {
        StatusCode::UNAUTHORIZED => "unauthorized",
        StatusCode::FORBIDDEN => "forbidden",
        StatusCode::NOT_FOUND => "not-found",
        StatusCode::METHOD_NOT_ALLOWED => "method-not-allowed",
        StatusCode::REQUEST_TIMEOUT => "timeout",
        StatusCode::PRECONDITION_FAILED => "precondition-failed",
        StatusCode::PAYLOAD_TOO_LARGE => "too-large",
        StatusCode::UNSUPPORTED_MEDIA_TYPE => "unsupported-media-type",
        StatusCode::RANGE_NOT_SATISFIABLE => "range-not-satisfiable",
        _ => "bad-request",
    }
}

/// The answer to a handler that panicked: `internal`, the panic's message
/// for the log line only.
pub(super) fn panicked(panic: &(dyn std::any::Any + Send)) -> Response<Body> {
    let message = panic
        .downcast_ref::<&str>()
        .map(|text| (*text).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a handler panicked".to_owned());
    ApiError::untold(
        StatusCode::INTERNAL_SERVER_ERROR,
        format!("panicked: {message}"),
    )
    .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn body_of(response: Response) -> serde_json::Value {
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        serde_json::from_slice(&bytes).unwrap()
    }

    fn block_on<F: std::future::Future>(future: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(future)
    }

    #[test]
    fn every_error_status_has_a_stable_snake_case_code() {
        let expected = [
            (400, "bad_request"),
            (401, "unauthorized"),
            (403, "forbidden"),
            (404, "not_found"),
            (405, "method_not_allowed"),
            (408, "request_timeout"),
            (409, "conflict"),
            (412, "precondition_failed"),
            (413, "payload_too_large"),
            (415, "unsupported_media_type"),
            (416, "range_not_satisfiable"),
            (418, "bad_request"),
            (500, "internal"),
            (502, "internal"),
            (503, "unavailable"),
            (507, "insufficient_storage"),
        ];
        for (status, code) in expected {
            assert_eq!(code_of(StatusCode::from_u16(status).unwrap()), code);
        }
    }

    #[test]
    fn refusals_with_a_code_of_their_own_answer_it() {
        for (error, status, code, reason) in [
            (
                RegistryError::AuditRefused("pdf@1.0.0 was refused by the registry's audit".into()),
                422,
                "audit_refused",
                "audit-refused",
            ),
            (
                RegistryError::KeyIdTaken("the key id 0000000000000001 is taken".into()),
                409,
                "key_id_taken",
                "key-id-taken",
            ),
            (
                RegistryError::UnknownUser {
                    user: "mallory".into(),
                    name: "pdf".into(),
                },
                400,
                "unknown_user",
                "unknown-user",
            ),
            (
                RegistryError::ControlCharacter("the yank reason holds U+001B".into()),
                400,
                "bad_request",
                "control-character",
            ),
        ] {
            let response = ApiError::from(error).into_response();
            assert_eq!(response.status().as_u16(), status);
            let body = block_on(body_of(response));
            assert_eq!(body["code"], code, "{body}");
            assert_eq!(body["errors"][0]["code"], reason, "{body}");
        }
        // An untyped 422 (an extractor's) is still `bad_request`: the code
        // is the refusal's, not the status's.
        let untyped = (StatusCode::UNPROCESSABLE_ENTITY, "no").into_response();
        assert_eq!(
            block_on(body_of(block_on(type_errors(untyped))))["code"],
            "bad_request"
        );
    }

    #[test]
    fn an_internal_error_keeps_its_cause_out_of_the_body() {
        let cause = std::io::Error::other("/srv/skills/state/owners.json: permission denied");
        let response = ApiError::internal(&cause).into_response();
        assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
        let logged = response.extensions().get::<Cause>().unwrap().0.clone();
        assert!(logged.contains("/srv/skills/state/owners.json"), "{logged}");
        let body = block_on(body_of(response));
        assert_eq!(body["code"], "internal");
        assert_eq!(body["errors"][0]["code"], "internal");
        assert_eq!(body["message"], INTERNAL_DETAIL);
        assert_eq!(body["errors"][0]["detail"], INTERNAL_DETAIL);
        assert!(!body.to_string().contains("/srv"), "{body}");

        let full = std::io::Error::from(std::io::ErrorKind::StorageFull);
        let response = ApiError::internal(&full).into_response();
        assert_eq!(response.status(), StatusCode::INSUFFICIENT_STORAGE);
        assert_eq!(block_on(body_of(response))["code"], "insufficient_storage");
    }

    #[test]
    fn untyped_errors_get_the_typed_body_and_keep_their_allow_header() {
        let plain = (
            StatusCode::METHOD_NOT_ALLOWED,
            [(header::ALLOW, "GET,HEAD")],
            "",
        )
            .into_response();
        let typed = block_on(type_errors(plain));
        assert_eq!(typed.headers()[header::ALLOW], "GET,HEAD");
        let body = block_on(body_of(typed));
        assert_eq!(body["code"], "method_not_allowed");
        assert_eq!(body["errors"][0]["code"], "method-not-allowed");
        assert_eq!(body["message"], "method not allowed");

        let rejection =
            (StatusCode::BAD_REQUEST, "Invalid URL: bad percent-encoding").into_response();
        let body = block_on(body_of(block_on(type_errors(rejection))));
        assert_eq!(body["code"], "bad_request");
        assert_eq!(body["message"], "Invalid URL: bad percent-encoding");

        let failure = (StatusCode::BAD_GATEWAY, "/srv/skills/public: gone").into_response();
        let typed = block_on(type_errors(failure));
        assert_eq!(
            typed.extensions().get::<Cause>().unwrap().0,
            "/srv/skills/public: gone"
        );
        let body = block_on(body_of(typed));
        assert_eq!(body["code"], "internal");
        assert!(!body.to_string().contains("/srv"), "{body}");

        let fine = (StatusCode::OK, "hello").into_response();
        assert!(
            block_on(type_errors(fine))
                .extensions()
                .get::<Typed>()
                .is_none()
        );
    }

    #[test]
    fn a_panic_answers_internal_and_tells_only_the_log() {
        let response = panicked(&"index out of bounds at /srv/x");
        assert!(
            response
                .extensions()
                .get::<Cause>()
                .unwrap()
                .0
                .contains("/srv/x")
        );
        let body = block_on(body_of(response));
        assert_eq!(body["code"], "internal");
        assert!(!body.to_string().contains("/srv"), "{body}");
    }
}
