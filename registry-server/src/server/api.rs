//! The API handlers, `/api/v1` (docs/registry.md#the-api).
//!
//! Every handler that takes a body decides from the request's head first,
//! in this order: the token (401), the declared size (413) and, for a
//! publish, a free upload slot (waited for, then 503). Only then is the
//! body read, within the body timeout (408) and a size limit (413) that
//! hold while it streams. A request refused from its head costs its head:
//! its body is never kept, only thrown away while the client finishes
//! sending it, for a few seconds at most ([`LINGER`]).

use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::body::{Body, Bytes};
use axum::extract::{FromRequest as _, Multipart, Path, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt as _;
use serde_json::json;

use super::error::ApiError;
use super::limits::{JSON_BODY_BYTES, Limits, MULTIPART_SLACK};
use crate::publish::MAX_ATTACHMENT_BYTES;
use skillpkg_index::secret::Secret;

use crate::registry::{PublishRequest, Registry, RegistryError};

/// What the handlers share.
#[derive(Debug)]
pub(super) struct App {
    pub(super) registry: Arc<Registry>,
    pub(super) limits: Limits,
    /// One permit a publish being received or checked.
    pub(super) uploads: Arc<tokio::sync::Semaphore>,
    /// One permit a git fetch being answered.
    pub(super) fetches: Arc<tokio::sync::Semaphore>,
}

/// How long a client refused for want of an upload slot is asked to wait.
const RETRY_AFTER_SECONDS: u64 = 5;

/// The largest `name` or `version` part: a name is at most 64 characters,
/// and a version with pre-release and build parts a few dozen.
const MAX_TEXT_PART_BYTES: usize = 256;

/// Returns the user of the request's bearer token: one indexed lookup in
/// the database.
pub(super) async fn authenticate(
    registry: &Arc<Registry>,
    headers: &HeaderMap,
) -> Result<String, ApiError> {
    let value = headers.get(header::AUTHORIZATION).ok_or_else(|| {
        ApiError::unauthorized(
            "this request needs a token: send `Authorization: Bearer <token>` (`skillpkg login`)",
        )
    })?;
    let token = value
        .to_str()
        .ok()
        .and_then(|value| value.strip_prefix("Bearer "))
        .map(|token| Secret::new(token.trim()))
        .ok_or_else(|| {
            ApiError::unauthorized("the Authorization header must be `Bearer <token>`")
        })?;
    let user = registry
        .state()
        .authenticate(&token)
        .await
        .map_err(|error| ApiError::internal(&error))?;
    user.ok_or_else(|| {
        ApiError::unauthorized("the token is not valid: it is unknown or was revoked")
    })
}

/// How long, at most, the body of a request refused from its head is read
/// and thrown away after the answer. A client that sends its whole body
/// before it reads (most do) would otherwise find the connection reset under
/// its writes and lose the answer; nginx's lingering close does the same.
const LINGER: Duration = Duration::from_secs(10);

/// Refuses a request from its head, its body unread: the answer closes the
/// connection. A body no larger than `most` (what an honest client could
/// send) is first read and thrown away, piece by piece, for up to
/// [`LINGER`] (or the body timeout, if shorter), so the client gets to read
/// the answer; nothing of it is kept.
fn refuse_unread(
    app: &App,
    error: ApiError,
    headers: &HeaderMap,
    body: Body,
    most: u64,
) -> ApiError {
    if declared_length(headers).is_none_or(|length| length <= most) {
        let linger = LINGER.min(app.limits.body_timeout);
        tokio::spawn(async move {
            let mut stream = body.into_data_stream();
            let mut read: u64 = 0;
            let discard = async {
                while let Some(Ok(piece)) = stream.next().await {
                    read = read.saturating_add(piece.len() as u64);
                    if read > most {
                        break;
                    }
                }
            };
            let _ = tokio::time::timeout(linger, discard).await;
        });
    }
    error.closing()
}

/// Returns the Content-Length the request declares, if any.
fn declared_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok()?.parse().ok())
}

/// Runs a change of the registry as a task of its own, so that it runs to
/// its end even when the client goes away and the request's future is
/// dropped: a publish is never left halfway by a disconnection.
async fn detached<T: Send + 'static>(
    work: impl std::future::Future<Output = Result<T, RegistryError>> + Send + 'static,
) -> Result<T, ApiError> {
    match tokio::spawn(work).await {
        Ok(result) => result.map_err(ApiError::from),
        Err(error) => Err(ApiError::internal(&error)),
    }
}

/// The parts of a publish, as read.
#[derive(Default)]
struct Parts {
    name: Option<String>,
    version: Option<String>,
    tarball: Option<Vec<u8>>,
    signature: Option<Vec<u8>>,
    key: Option<Vec<u8>>,
    provenance: Option<Vec<u8>>,
}

pub(super) async fn publish(
    State(app): State<Arc<App>>,
    request: Request,
) -> Result<Response, ApiError> {
    let registry = &app.registry;
    let limit = registry.max_skill_bytes();
    let most = limit.saturating_add(MULTIPART_SLACK);
    // Decided from the head, before a byte of the body is read: the body
    // of a refused upload is never kept.
    let user = match authenticate(registry, request.headers()).await {
        Ok(user) => user,
        Err(error) => {
            let (parts, body) = request.into_parts();
            return Err(refuse_unread(&app, error, &parts.headers, body, most));
        }
    };
    if let Some(length) = declared_length(request.headers()).filter(|length| *length > most) {
        // Not even thrown away: no honest client sends this much.
        return Err(ApiError::too_large(format!(
            "the upload is {length} bytes; this registry accepts archives of at most {limit} bytes"
        ))
        .closing());
    }
    // Waiting costs a connection and no memory: the body stays unread.
    let slot = tokio::time::timeout(
        app.limits.upload_wait,
        Arc::clone(&app.uploads).acquire_owned(),
    );
    let Ok(Ok(permit)) = slot.await else {
        let busy = ApiError::busy(
            format!(
                "the registry is receiving {} uploads already; try again in {RETRY_AFTER_SECONDS} seconds",
                app.limits.max_concurrent_uploads
            ),
            RETRY_AFTER_SECONDS,
        );
        let (parts, body) = request.into_parts();
        return Err(refuse_unread(&app, busy, &parts.headers, body, most));
    };
    let declared = declared_length(request.headers());
    let multipart = Multipart::from_request(request, &())
        .await
        .map_err(|error| {
            ApiError::bad_request(format!("the body must be multipart/form-data: {error}"))
                .closing()
        })?;
    let timeout = app.limits.body_timeout;
    let parts = tokio::time::timeout(timeout, read_parts(multipart, limit, declared))
        .await
        .map_err(|_| ApiError::timed_out(timeout))?
        .map_err(ApiError::closing)?;
    let missing = |part: &str| ApiError::bad_request(format!("the `{part}` part is missing"));
    let name = parts.name.ok_or_else(|| missing("name"))?;
    let version = parts.version.ok_or_else(|| missing("version"))?;
    let tarball = parts.tarball.ok_or_else(|| missing("tarball"))?;
    let (signature, key, provenance) = (parts.signature, parts.key, parts.provenance);
    let registry = Arc::clone(registry);
    let record = detached(async move {
        // The upload stays in memory until it is checked and written.
        let _permit = permit;
        let request = PublishRequest {
            name: &name,
            version: &version,
            tarball: &tarball,
            signature: signature.as_deref(),
            key: key.as_deref(),
            provenance: provenance.as_deref(),
        };
        registry.publish(&user, &request).await
    })
    .await?;
    Ok((StatusCode::CREATED, Json(record)).into_response())
}

/// Reads the parts of a publish, each within its own limit: a part over
/// it is refused as soon as it grows past it, not once it has arrived. The
/// tarball's room is taken at once from the declared body length (capped
/// at the limit), so it is not copied over and over as it grows.
async fn read_parts(
    mut multipart: Multipart,
    limit: u64,
    declared: Option<u64>,
) -> Result<Parts, ApiError> {
    let mut parts = Parts::default();
    let archive_limit = usize::try_from(limit).unwrap_or(usize::MAX);
    loop {
        let mut field = match multipart.next_field().await {
            Ok(Some(field)) => field,
            Ok(None) => return Ok(parts),
            Err(error) => return Err(body_error(&error, limit)),
        };
        let part = field.name().unwrap_or_default().to_owned();
        let (slot, part_limit) = match part.as_str() {
            "name" | "version" => (None, MAX_TEXT_PART_BYTES),
            "tarball" => (Some(&mut parts.tarball), archive_limit),
            "signature" => (Some(&mut parts.signature), MAX_ATTACHMENT_BYTES),
            "key" => (Some(&mut parts.key), MAX_ATTACHMENT_BYTES),
            "provenance" => (Some(&mut parts.provenance), MAX_ATTACHMENT_BYTES),
            other => {
                return Err(ApiError::bad_request(format!(
                    "unexpected part `{}`: send name, version, tarball, and for a signed publish signature, key and provenance",
                    other.escape_debug()
                )));
            }
        };
        let twice = || ApiError::bad_request(format!("the `{part}` part is sent twice"));
        if slot.as_ref().is_some_and(|slot| slot.is_some()) {
            return Err(twice());
        }
        let room = if part == "tarball" {
            declared.map_or(0, |length| length.min(limit))
        } else {
            0
        };
        let mut bytes = Vec::with_capacity(usize::try_from(room).unwrap_or(0));
        loop {
            match field.chunk().await {
                Ok(Some(chunk)) => {
                    if bytes.len() + chunk.len() > part_limit {
                        return Err(ApiError::too_large(format!(
                            "the `{part}` part is over its limit of {part_limit} bytes"
                        )));
                    }
                    bytes.extend_from_slice(&chunk);
                }
                Ok(None) => break,
                Err(error) => return Err(body_error(&error, limit)),
            }
        }
        match slot {
            Some(slot) => *slot = Some(bytes),
            None => {
                let text = String::from_utf8_lossy(&bytes).into_owned();
                let slot = if part == "name" {
                    &mut parts.name
                } else {
                    &mut parts.version
                };
                if slot.is_some() {
                    return Err(twice());
                }
                *slot = Some(text);
            }
        }
    }
}

/// Maps a body error: over the streaming limit is 413, anything else 400.
fn body_error(error: &axum::extract::multipart::MultipartError, limit: u64) -> ApiError {
    if error.status() == StatusCode::PAYLOAD_TOO_LARGE {
        ApiError::too_large(format!(
            "the upload is over the limit: this registry accepts archives of at most {limit} bytes"
        ))
    } else {
        ApiError::bad_request(format!(
            "the upload could not be read: {}",
            error.body_text()
        ))
    }
}

/// Reads a JSON body of at most [`JSON_BODY_BYTES`] within the body
/// timeout. An empty body is `None`.
async fn read_json<T: serde::de::DeserializeOwned>(
    app: &App,
    headers: &HeaderMap,
    body: Body,
    example: &str,
) -> Result<Option<T>, ApiError> {
    let too_large = || {
        ApiError::too_large(format!(
            "the body is over the limit of {JSON_BODY_BYTES} bytes for this request"
        ))
        .closing()
    };
    let bytes = read_body(app, headers, body, JSON_BODY_BYTES, too_large).await?;
    if bytes.is_empty() {
        return Ok(None);
    }
    serde_json::from_slice(&bytes).map(Some).map_err(|error| {
        ApiError::bad_request(format!("the body must be JSON like {example}: {error}"))
    })
}

/// Reads a body of at most `most` bytes within the body timeout; a
/// larger one (declared, or as it streams) is refused with `too_large`.
pub(super) async fn read_body(
    app: &App,
    headers: &HeaderMap,
    body: Body,
    most: usize,
    too_large: impl Fn() -> ApiError,
) -> Result<Vec<u8>, ApiError> {
    if declared_length(headers).is_some_and(|length| length > most as u64) {
        return Err(too_large());
    }
    let read = async {
        let mut stream = body.into_data_stream();
        let mut bytes = Vec::new();
        while let Some(chunk) = stream.next().await {
            let chunk: Bytes = chunk.map_err(|error| {
                ApiError::bad_request(format!("the body could not be read: {error}")).closing()
            })?;
            if bytes.len() + chunk.len() > most {
                return Err(too_large());
            }
            bytes.extend_from_slice(&chunk);
        }
        Ok(bytes)
    };
    let timeout = app.limits.body_timeout;
    tokio::time::timeout(timeout, read)
        .await
        .map_err(|_| ApiError::timed_out(timeout))?
}

#[derive(serde::Deserialize)]
struct YankBody {
    reason: Option<String>,
}

pub(super) async fn yank(
    State(app): State<Arc<App>>,
    Path((name, version)): Path<(String, String)>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    set_yanked(&app, &headers, body, name, version, true).await
}

pub(super) async fn unyank(
    State(app): State<Arc<App>>,
    Path((name, version)): Path<(String, String)>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    set_yanked(&app, &headers, body, name, version, false).await
}

/// Authenticates a request that carries a JSON body from its headers
/// alone: a refusal leaves the body unread ([`refuse_unread`]), an
/// acceptance hands it back to be read.
async fn authenticate_json(
    app: &App,
    headers: &HeaderMap,
    body: Body,
) -> Result<(String, Body), ApiError> {
    match authenticate(&app.registry, headers).await {
        Ok(user) => Ok((user, body)),
        Err(error) => Err(refuse_unread(
            app,
            error,
            headers,
            body,
            JSON_BODY_BYTES as u64,
        )),
    }
}

async fn set_yanked(
    app: &App,
    headers: &HeaderMap,
    body: Body,
    name: String,
    version: String,
    yanked: bool,
) -> Result<Response, ApiError> {
    let (user, body) = authenticate_json(app, headers, body).await?;
    let body: Option<YankBody> = read_json(app, headers, body, r#"{"reason":"..."}"#).await?;
    let reason = body.and_then(|body| body.reason);
    let registry = Arc::clone(&app.registry);
    let record = detached(async move {
        registry
            .set_yanked(&user, &name, &version, yanked, reason)
            .await
    })
    .await?;
    Ok(Json(record).into_response())
}

/// Checks the token of a read of the API, when the registry is private:
/// who owns a skill, and which keys it has, are as private as its files.
async fn authorize_read(app: &App, headers: &HeaderMap) -> Result<(), ApiError> {
    if app.registry.auth_required() {
        authenticate(&app.registry, headers).await?;
    }
    Ok(())
}

pub(super) async fn owners(
    State(app): State<Arc<App>>,
    Path(name): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    authorize_read(&app, &headers).await?;
    let registry = Arc::clone(&app.registry);
    let users = registry.owners(&name).await?;
    Ok(Json(json!({ "users": users })).into_response())
}

/// What `PUT .../owners` and `PUT .../keys` change: entries to add and remove.
#[derive(serde::Deserialize)]
struct ListChange {
    #[serde(default)]
    add: Vec<String>,
    #[serde(default)]
    remove: Vec<String>,
}

/// Authenticates a `PUT .../owners` or `PUT .../keys` from its headers (a
/// refusal leaves the body unread), then reads its body.
async fn read_change(
    app: &App,
    headers: &HeaderMap,
    body: Body,
    example: &str,
) -> Result<(String, ListChange), ApiError> {
    let (user, body) = authenticate_json(app, headers, body).await?;
    let change = read_json(app, headers, body, example)
        .await?
        .ok_or_else(|| ApiError::bad_request(format!("the body must be JSON like {example}")))?;
    Ok((user, change))
}

pub(super) async fn change_owners(
    State(app): State<Arc<App>>,
    Path(name): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let (user, change) =
        read_change(&app, &headers, body, r#"{"add":["bob"],"remove":[]}"#).await?;
    let registry = Arc::clone(&app.registry);
    let users = detached(async move {
        registry
            .change_owners(&user, &name, &change.add, &change.remove)
            .await
    })
    .await?;
    Ok(Json(json!({ "users": users })).into_response())
}

pub(super) async fn keys(
    State(app): State<Arc<App>>,
    Path(name): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    authorize_read(&app, &headers).await?;
    let registry = Arc::clone(&app.registry);
    let keys = registry.keys(&name).await?;
    Ok(Json(json!({ "keys": keys.keys })).into_response())
}

pub(super) async fn change_keys(
    State(app): State<Arc<App>>,
    Path(name): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let (user, change) = read_change(
        &app,
        &headers,
        body,
        r#"{"add":["RWQ..."],"remove":["<key id>"]}"#,
    )
    .await?;
    let registry = Arc::clone(&app.registry);
    let keys = detached(async move {
        registry
            .change_keys(&user, &name, &change.add, &change.remove)
            .await
    })
    .await?;
    Ok(Json(json!({ "keys": keys.keys })).into_response())
}

pub(super) async fn me(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let user = authenticate(&app.registry, &headers).await?;
    Ok(Json(json!({ "user": user })).into_response())
}
