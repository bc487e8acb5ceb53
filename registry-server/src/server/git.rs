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
//! at most [`MAX_REQUEST_BYTES`] of it, compressed or not; the answer is
//! made from the tree in one trip to the blocking pool.

use std::io::Read as _;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};

use super::api::{App, authenticate, read_body};
use super::error::ApiError;
use super::files::static_file;
use crate::marketplace::repo::{MARKETPLACE_REPO, PLUGINS_DIR, Repo};
use crate::marketplace::upload_pack::{
    ADVERTISEMENT_TYPE, MAX_REQUEST_BYTES, ProtocolError, RESULT_TYPE, advertisement, answer,
    asks_for_version_2, error_packet, parse,
};

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

/// Refuses a request to a private registry without a valid token, as a
/// read of any of its files is.
async fn check_token(app: &Arc<App>, headers: &HeaderMap) -> Result<(), ApiError> {
    let registry = &app.registry;
    if !registry.auth_required() {
        return Ok(());
    }
    match authenticate(registry, headers).await {
        Ok(_) => Ok(()),
        Err(error) if error.status() == StatusCode::UNAUTHORIZED => Err(ApiError::unauthorized(
            format!("this registry is private: {}", error.detail()),
        )),
        Err(error) => Err(error),
    }
}

/// An answer of the protocol: its bytes, never cached.
fn protocol_answer(content_type: &'static str, bytes: Vec<u8>) -> Response {
    let mut headers = HeaderMap::new();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("no-cache, max-age=0, must-revalidate"),
    );
    (StatusCode::OK, headers, Body::from(bytes)).into_response()
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
    if let Err(error) = check_token(&app, &headers).await {
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
    if let Err(error) = check_token(&app, &headers).await {
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
    let tree = app.registry.tree().clone();
    let answered = tokio::task::spawn_blocking(move || answer(&tree, &repo, &command)).await;
    match answered {
        Ok(Ok(bytes)) => protocol_answer(RESULT_TYPE, bytes),
        Ok(Err(ProtocolError::NoRepository(_))) => no_repository(&prefix),
        Ok(Err(error @ ProtocolError::NotOurRef(_))) => {
            protocol_answer(RESULT_TYPE, error_packet(&format!("upload-pack: {error}")))
        }
        Ok(Err(error)) => ApiError::internal(&error).into_response(),
        Err(error) => ApiError::internal(&error).into_response(),
    }
}
