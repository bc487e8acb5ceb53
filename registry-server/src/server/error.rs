//! API errors on the wire:
//!
//! ```text
//! {"errors":[{"code":"unauthorized","detail":"the token is not valid: ..."}]}
//! ```
//!
//! `code` (since 0.1) is one of a fixed set, for scripts to match on;
//! `detail` is a sentence for a person, which clients print as it is. A
//! failure of the server itself (its tree or state unreadable, a task that
//! panicked) answers `internal` and a generic sentence to whoever asked:
//! its cause names the server's own files, so it goes to the server's log
//! only, inside the request's span.

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::registry::{RegistryError, error_chain};

/// What `detail` says of an internal error.
const INTERNAL_DETAIL: &str = "the registry failed to answer this request; its operator can find the cause in the server's log";

/// What `detail` says when the registry's disk is full.
const STORAGE_FULL_DETAIL: &str = "the registry has no storage space left, so nothing was written; try again later, or tell its operator";

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

/// An API error: a status, a stable code and the sentence clients print.
#[derive(Debug)]
pub(super) struct ApiError {
    status: StatusCode,
    code: &'static str,
    detail: String,
    /// Seconds to send in `Retry-After`.
    retry_after: Option<u64>,
    /// Whether the connection is closed after the answer: the body was not
    /// read (or not in full), so the connection cannot carry another
    /// request.
    close: bool,
}

impl ApiError {
    pub(super) fn new(status: StatusCode, code: &'static str, detail: impl Into<String>) -> Self {
        Self {
            status,
            code,
            detail: detail.into(),
            retry_after: None,
            close: false,
        }
    }

    pub(super) fn bad_request(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "bad-request", detail)
    }

    pub(super) fn unauthorized(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "unauthorized", detail)
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

    /// A failure of the server itself: logs `error` and its causes, and
    /// answers a generic sentence. A full disk is told apart (507
    /// `insufficient-storage`), since the client can do something about it:
    /// wait, or tell the operator.
    pub(super) fn internal(error: &(dyn std::error::Error + 'static)) -> Self {
        tracing::error!(error = error_chain(error), "internal error");
        if is_storage_full(error) {
            return Self::new(
                StatusCode::INSUFFICIENT_STORAGE,
                "insufficient-storage",
                STORAGE_FULL_DETAIL,
            );
        }
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            INTERNAL_DETAIL,
        )
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
        let body = json!({ "errors": [{ "code": self.code, "detail": self.detail }] });
        let mut response = (self.status, Json(body)).into_response();
        let headers = response.headers_mut();
        if let Some(seconds) = self.retry_after {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        if self.close {
            headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
        }
        response
    }
}

impl From<RegistryError> for ApiError {
    fn from(error: RegistryError) -> Self {
        let (status, code) = match &error {
            RegistryError::BadRequest(_) => (StatusCode::BAD_REQUEST, "bad-request"),
            RegistryError::TooLarge(_) => (StatusCode::PAYLOAD_TOO_LARGE, "too-large"),
            RegistryError::NotOwner { .. } => (StatusCode::FORBIDDEN, "not-owner"),
            RegistryError::Forbidden(_) => (StatusCode::FORBIDDEN, "forbidden"),
            RegistryError::NotFound(_) => (StatusCode::NOT_FOUND, "not-found"),
            RegistryError::Exists { .. } | RegistryError::SameVersion { .. } => {
                (StatusCode::CONFLICT, "exists")
            }
            RegistryError::Tree(_)
            | RegistryError::State(_)
            | RegistryError::Metadata(_)
            | RegistryError::Setup(_) => {
                return Self::internal(&error);
            }
        };
        Self::new(status, code, error_chain(&error))
    }
}
