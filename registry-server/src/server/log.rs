//! The access log: one line a request, written when its response has been
//! sent in full (or the client went away), so it can say how many bytes
//! went out and how long the whole exchange took:
//!
//! ```text
//! 2026-11-23T10:00:00.123456Z  INFO skillpkg_registry::access: request method=GET path=/index/pd/pdf status=200 bytes=812 duration_ms=0.4
//! 2026-11-23T10:00:01.000000Z ERROR skillpkg_registry::access: request method=GET path=/api/v1/me status=500 bytes=151 duration_ms=1.2 error="/srv/skills/state/tokens.json is corrupt: ..."
//! ```
//!
//! The path is logged without its query string and cut at
//! [`MAX_LOGGED_PATH`] characters; no header is logged, so neither is a
//! token. A server failure's line is at `ERROR` and carries its cause
//! (`error=`), which the answer leaves out; every other line is at `INFO`.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use http_body::{Frame, SizeHint};

use super::error::Cause;

/// The target of the access log's lines, for `RUST_LOG` filters.
const TARGET: &str = "skillpkg_registry::access";

/// The most characters of a path a line shows: a path is the client's to
/// choose, up to the header limit.
const MAX_LOGGED_PATH: usize = 256;

/// What a request's line says, gathered as it goes.
#[derive(Debug)]
struct Line {
    method: Method,
    path: String,
    status: StatusCode,
    cause: Option<String>,
    started: Instant,
    bytes: u64,
}

impl Line {
    fn write(self) {
        let duration_ms = self.started.elapsed().as_secs_f64() * 1000.0;
        // Rounded to a tenth of a millisecond: finer is noise.
        let duration_ms = (duration_ms * 10.0).round() / 10.0;
        // A method and a path are visible ASCII (hyper refuses anything
        // else), so they are shown as they are; a cause is quoted, its
        // control characters escaped.
        let (method, path, status, bytes) = (
            self.method.as_str(),
            self.path.as_str(),
            self.status.as_u16(),
            self.bytes,
        );
        match self.cause {
            Some(error) => tracing::error!(
                target: TARGET,
                method = %method, path = %path, status, bytes, duration_ms, error = ?error,
                "request"
            ),
            None => tracing::info!(
                target: TARGET,
                method = %method, path = %path, status, bytes, duration_ms,
                "request"
            ),
        }
    }
}

/// Returns the path of a request as its line shows it: no query string,
/// at most [`MAX_LOGGED_PATH`] characters.
fn shown_path(uri: &axum::http::Uri) -> String {
    let path = uri.path();
    match path.char_indices().nth(MAX_LOGGED_PATH) {
        Some((cut, _)) => format!("{}...", &path[..cut]),
        None => path.to_owned(),
    }
}

/// The middleware: runs the request, then hands its response a body that
/// writes the line once it is sent or dropped.
pub(super) async fn access(request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = request.method().clone();
    let path = shown_path(request.uri());
    let mut response = next.run(request).await;
    let cause = response
        .extensions_mut()
        .remove::<Cause>()
        .map(|cause| cause.0);
    let line = Line {
        method,
        path,
        status: response.status(),
        cause,
        started,
        bytes: 0,
    };
    response.map(|body| {
        Body::new(Logged {
            inner: body,
            line: Some(line),
        })
    })
}

/// A response body that counts what it yields and writes the request's
/// line at its end, or when it is dropped before (a HEAD request, a client
/// that went away): exactly once either way.
struct Logged {
    inner: Body,
    line: Option<Line>,
}

impl Logged {
    fn finish(&mut self) {
        if let Some(line) = self.line.take() {
            line.write();
        }
    }
}

impl http_body::Body for Logged {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let (Some(data), Some(line)) = (frame.data_ref(), self.line.as_mut()) {
                    line.bytes = line.bytes.saturating_add(data.len() as u64);
                }
            }
            Poll::Ready(Some(Err(_))) | Poll::Ready(None) => self.finish(),
            Poll::Pending => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        // Passed on, so a body of known length keeps its Content-Length.
        self.inner.size_hint()
    }
}

impl Drop for Logged {
    fn drop(&mut self) {
        self.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_logged_path_has_no_query_and_a_bounded_length() {
        let uri: axum::http::Uri = "/index/pd/pdf?token=skp_secret&x=1".parse().unwrap();
        assert_eq!(shown_path(&uri), "/index/pd/pdf");
        let long = format!("/{}", "a".repeat(1000));
        let shown = shown_path(&long.parse().unwrap());
        assert_eq!(shown.len(), MAX_LOGGED_PATH + 3);
        assert!(shown.ends_with("..."));
    }
}
