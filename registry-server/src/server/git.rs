//! git's smart HTTP protocol (version 2, fetch only) for the
//! repositories of the plugin marketplace ([`crate::marketplace`]):
//!
//! ```text
//! GET  /plugins/<name>.git/info/refs?service=git-upload-pack   GET /marketplace.git/info/refs?...
//! POST /plugins/<name>.git/git-upload-pack                     POST /marketplace.git/git-upload-pack
//! ```
//!
//! A `GET` of `info/refs` that does not ask for version 2 (the
//! `Git-Protocol: version=2` header, which git sends since 2.18 when
//! `protocol.version` is 2, its default in current releases), or asks for
//! no service, is the static file: git then reads the repository over its
//! dumb protocol, as from any static host. A `POST` must ask for version
//! 2. Both need a token when the registry is private, as every file does.
//!
//! The request body (gzipped or not) is read within the body timeout, and
//! at most [`MAX_REQUEST_BYTES`] of it, compressed or not. The answer is
//! made from the tree in the blocking pool and streamed as it is made: a
//! fetch holds one pack of the repository at a time (and a few pkt-lines
//! on their way), reads at most [`MAX_FETCH_BYTES`] of packs, and waits
//! for one of [`Limits::max_concurrent_fetches`] slots first.
//!
//! [`Limits::max_concurrent_fetches`]: super::Limits::max_concurrent_fetches

use std::io::Read as _;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt as _;

use super::api::{App, read_body};
use super::error::ApiError;
use super::files::{require_read_token, static_file};
use super::limits::FETCH_WAIT;
use crate::marketplace::repo::{MARKETPLACE_REPO, PLUGINS_DIR, Repo};
use crate::marketplace::upload_pack::{
    ADVERTISEMENT_TYPE, Command, MAX_FETCH_BYTES, MAX_REQUEST_BYTES, ProtocolError, RESULT_TYPE,
    advertisement, answer, asks_for_version_2, band_error, error_packet, parse,
};
use crate::report::error_chain;

/// The header a git client asks for a protocol version with.
const GIT_PROTOCOL: &str = "git-protocol";

/// Returns true if and only if the request asks for protocol version 2.
fn asks_for_v2(headers: &HeaderMap) -> bool {
    headers
        .get_all(GIT_PROTOCOL)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .any(asks_for_version_2)
}

/// How many pkt-lines of an answer (up to 64 KiB each) wait for the
/// client at most: the rest of the answer waits, unmade, until it reads.
const PIECES_IN_FLIGHT: usize = 4;

/// How long a fetch refused for want of a slot is asked to wait.
const RETRY_AFTER_SECONDS: u64 = 5;

/// An answer of the protocol, never cached.
fn protocol_answer(content_type: &'static str, bytes: impl Into<Body>) -> Response {
    let mut headers = HeaderMap::new();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("no-cache, max-age=0, must-revalidate"),
    );
    (StatusCode::OK, headers, bytes.into()).into_response()
}

fn no_repository(prefix: &str) -> Response {
    ApiError::not_found(format!(
        "there is no repository `{prefix}` in this registry: a skill's is `{PLUGINS_DIR}/<name>.git`, and only once it has a version"
    ))
    .into_response()
}

/// `GET /plugins/{repo}/info/refs`.
pub(super) async fn plugin_info_refs(
    State(app): State<Arc<App>>,
    Path(repo): Path<String>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    info_refs(app, format!("{PLUGINS_DIR}/{repo}"), method, uri, headers).await
}

/// `GET /marketplace.git/info/refs`.
pub(super) async fn marketplace_info_refs(
    State(app): State<Arc<App>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    info_refs(app, MARKETPLACE_REPO.to_owned(), method, uri, headers).await
}

/// `POST /plugins/{repo}/git-upload-pack`.
pub(super) async fn plugin_upload_pack(
    State(app): State<Arc<App>>,
    Path(repo): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    upload_pack(app, format!("{PLUGINS_DIR}/{repo}"), headers, body).await
}

/// `POST /marketplace.git/git-upload-pack`.
pub(super) async fn marketplace_upload_pack(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    upload_pack(app, MARKETPLACE_REPO.to_owned(), headers, body).await
}

/// The capability advertisement for a client that asks for version 2 of
/// `git-upload-pack`; the static `info/refs` for any other.
async fn info_refs(
    app: Arc<App>,
    prefix: String,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    let service = uri.query().is_some_and(|query| {
        query
            .split('&')
            .any(|parameter| parameter == "service=git-upload-pack")
    });
    if method != Method::GET || !service || !asks_for_v2(&headers) {
        return static_file(State(app), method, uri, headers).await;
    }
    if let Err(error) = require_read_token(&app.registry, &headers).await {
        return error.into_response();
    }
    let Some(repo) = Repo::at(&prefix) else {
        return no_repository(&prefix);
    };
    let tree = app.registry.tree().clone();
    match tokio::task::spawn_blocking(move || repo.read_refs(&tree)).await {
        Ok(Ok(Some(_))) => protocol_answer(ADVERTISEMENT_TYPE, advertisement()),
        Ok(Ok(None)) => no_repository(&prefix),
        Ok(Err(error)) => ApiError::internal(&error).into_response(),
        Err(error) => ApiError::internal(&error).into_response(),
    }
}

/// Reads a request body sent gzipped (`Content-Encoding: gzip`, which git
/// uses for requests over 1 KiB), at most [`MAX_REQUEST_BYTES`] of it.
fn gunzip(bytes: &[u8]) -> Result<Vec<u8>, ApiError> {
    let mut plain = Vec::new();
    flate2::read::GzDecoder::new(bytes)
        .take(MAX_REQUEST_BYTES as u64 + 1)
        .read_to_end(&mut plain)
        .map_err(|error| {
            ApiError::bad_request(format!("the gzipped request does not decompress: {error}"))
        })?;
    if plain.len() > MAX_REQUEST_BYTES {
        return Err(too_large());
    }
    Ok(plain)
}

fn too_large() -> ApiError {
    ApiError::too_large(format!(
        "the request is over the limit of {MAX_REQUEST_BYTES} bytes for git's requests"
    ))
    .closing()
}

/// Answers a command of protocol version 2 (`ls-refs`, `fetch`).
async fn upload_pack(app: Arc<App>, prefix: String, headers: HeaderMap, body: Body) -> Response {
    if let Err(error) = require_read_token(&app.registry, &headers).await {
        return error.into_response();
    }
    if !asks_for_v2(&headers) {
        return ApiError::bad_request(
            "this server answers version 2 of git's protocol only: run git with `-c protocol.version=2` (git 2.18 or later), or clone over git's dumb protocol without `--depth`",
        )
        .into_response();
    }
    let Some(repo) = Repo::at(&prefix) else {
        return no_repository(&prefix);
    };
    let bytes = match read_body(&app, &headers, body, MAX_REQUEST_BYTES, too_large).await {
        Ok(bytes) => bytes,
        Err(error) => return error.into_response(),
    };
    let gzipped = headers
        .get(header::CONTENT_ENCODING)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.trim().eq_ignore_ascii_case("gzip"));
    let bytes = if gzipped {
        match gunzip(&bytes) {
            Ok(bytes) => bytes,
            Err(error) => return error.into_response(),
        }
    } else {
        bytes
    };
    // A request git cannot have meant is answered in the protocol's own
    // way, which git shows as `remote error: ...`.
    let command = match parse(&bytes) {
        Ok(command) => command,
        Err(error) => return protocol_answer(RESULT_TYPE, error_packet(&error.to_string())),
    };
    // A fetch reads packs: only so many at once.
    let permit = if matches!(command, Command::Fetch(_)) {
        let slot = tokio::time::timeout(FETCH_WAIT, Arc::clone(&app.fetches).acquire_owned());
        let Ok(Ok(permit)) = slot.await else {
            return ApiError::busy(
                format!(
                    "the registry is answering {} git fetches already; try again in {RETRY_AFTER_SECONDS} seconds",
                    app.limits.max_concurrent_fetches
                ),
                RETRY_AFTER_SECONDS,
            )
            .into_response();
        };
        Some(permit)
    } else {
        None
    };
    let tree = app.registry.tree().clone();
    let (sender, mut receiver) = tokio::sync::mpsc::channel(PIECES_IN_FLIGHT);
    let answering = tokio::task::spawn_blocking(move || {
        let _permit = permit;
        let mut started = false;
        let answered = answer(&tree, &repo, &command, MAX_FETCH_BYTES, &mut |piece| {
            started = true;
            sender.blocking_send(Ok(piece)).is_ok()
        });
        match answered {
            Ok(()) | Err(ProtocolError::Gone) => {}
            // Nothing sent: the handler answers it, as a whole.
            Err(error) if !started => {
                let _ = sender.blocking_send(Err(error));
            }
            // The answer is under way: it ends with the error, on the
            // channel git reads errors from in a pack.
            Err(error) => {
                let told = match &error {
                    ProtocolError::TooLarge(_) => error.to_string(),
                    _ => {
                        tracing::error!(
                            repository = repo.prefix(),
                            error = error_chain(&error),
                            "cannot answer a git fetch"
                        );
                        "the server failed while sending the pack; try again".to_owned()
                    }
                };
                let _ = sender.blocking_send(Ok(band_error(&told)));
            }
        }
    });
    let first = match receiver.recv().await {
        Some(Ok(first)) => first,
        Some(Err(ProtocolError::NoRepository(_))) => return no_repository(&prefix),
        Some(Err(error @ (ProtocolError::NotOurRef(_) | ProtocolError::TooLarge(_)))) => {
            return protocol_answer(RESULT_TYPE, error_packet(&format!("upload-pack: {error}")));
        }
        Some(Err(error)) => return ApiError::internal(&error).into_response(),
        // The task ended without a word: it panicked.
        None => {
            return match answering.await {
                Err(error) => ApiError::internal(&error).into_response(),
                Ok(()) => ApiError::internal(&std::io::Error::other(
                    "the answer of a git request ended before it began",
                ))
                .into_response(),
            };
        }
    };
    let rest = futures_util::stream::unfold(receiver, |mut receiver| async move {
        let piece = receiver.recv().await?;
        Some((piece, receiver))
    });
    let pieces = futures_util::stream::once(async move { Ok(first) }).chain(rest);
    let body = pieces.map(|piece| piece.map_err(|error| std::io::Error::other(error.to_string())));
    protocol_answer(RESULT_TYPE, Body::from_stream(body))
}
