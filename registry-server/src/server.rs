//! The HTTP server: the static tree at `/`, the API at `/api/v1`.
//!
//! Static files carry an `ETag` (size and modification time, like nginx's)
//! and answer `If-None-Match` with 304; archives, signatures and provenance
//! are cached for a year as immutable, everything else (index files, keys)
//! for a minute. Paths with a
//! component starting with `.` (temporary files) are never served, except
//! `.well-known`.

use std::sync::Arc;
use std::time::UNIX_EPOCH;

use axum::Json;
use axum::Router;
use axum::body::Body;
use axum::extract::{DefaultBodyLimit, Multipart, Path, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, put};
use serde_json::json;

use crate::registry::{PublishRequest, Registry, RegistryError, error_chain};

/// Files up to this size are read on the async thread.
const SMALL_FILE: u64 = 64 * 1024;

/// Room for the multipart framing and the small text parts around the tarball.
const MULTIPART_SLACK: u64 = 64 * 1024;

/// Builds the router for `registry`.
pub fn router(registry: Arc<Registry>) -> Router {
    let body_limit = usize::try_from(registry.max_skill_bytes().saturating_add(MULTIPART_SLACK))
        .unwrap_or(usize::MAX);
    Router::new()
        .route("/api/v1/skills", put(publish))
        .route("/api/v1/skills/{name}/{version}/yank", delete(yank))
        .route("/api/v1/skills/{name}/{version}/unyank", put(unyank))
        .route(
            "/api/v1/skills/{name}/owners",
            get(owners).put(change_owners),
        )
        .route("/api/v1/skills/{name}/keys", get(keys).put(change_keys))
        .route("/api/v1/me", get(me))
        .fallback(static_file)
        .layer(DefaultBodyLimit::max(body_limit))
        .with_state(registry)
}

/// An API error: a status and the JSON body clients print as it is.
struct ApiError(StatusCode, String);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.0, Json(json!({ "errors": [{ "detail": self.1 }] }))).into_response()
    }
}

impl From<RegistryError> for ApiError {
    fn from(error: RegistryError) -> Self {
        let status = match &error {
            RegistryError::BadRequest(_) => StatusCode::BAD_REQUEST,
            RegistryError::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            RegistryError::NotOwner { .. } | RegistryError::Forbidden(_) => StatusCode::FORBIDDEN,
            RegistryError::NotFound(_) => StatusCode::NOT_FOUND,
            RegistryError::Exists { .. } => StatusCode::CONFLICT,
            RegistryError::Tree(_) | RegistryError::State(_) | RegistryError::Metadata(_) => {
                StatusCode::INTERNAL_SERVER_ERROR
            }
        };
        Self(status, error_chain(&error))
    }
}

fn bad_request(detail: impl Into<String>) -> ApiError {
    ApiError(StatusCode::BAD_REQUEST, detail.into())
}

/// Returns the user of the request's bearer token.
fn authenticate(registry: &Registry, headers: &HeaderMap) -> Result<String, ApiError> {
    let unauthorized = |detail: &str| ApiError(StatusCode::UNAUTHORIZED, detail.to_owned());
    let value = headers.get(header::AUTHORIZATION).ok_or_else(|| {
        unauthorized(
            "this request needs a token: send `Authorization: Bearer <token>` (`skillpkg login`)",
        )
    })?;
    let token = value
        .to_str()
        .ok()
        .and_then(|value| value.strip_prefix("Bearer "))
        .ok_or_else(|| unauthorized("the Authorization header must be `Bearer <token>`"))?;
    registry
        .state()
        .authenticate(token.trim())
        .map_err(|error| ApiError(StatusCode::INTERNAL_SERVER_ERROR, error_chain(&error)))?
        .ok_or_else(|| unauthorized("the token is not valid: it is unknown or was revoked"))
}

/// Runs blocking registry work off the async threads.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, RegistryError> + Send + 'static,
) -> Result<T, ApiError> {
    match tokio::task::spawn_blocking(work).await {
        Ok(result) => result.map_err(ApiError::from),
        Err(error) => Err(ApiError(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("the request failed: {error}"),
        )),
    }
}

async fn publish(
    State(registry): State<Arc<Registry>>,
    headers: HeaderMap,
    multipart: Result<Multipart, axum::extract::multipart::MultipartRejection>,
) -> Result<Response, ApiError> {
    // The size comes before a byte of the body is read.
    let limit = registry.max_skill_bytes();
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok()?.parse::<u64>().ok());
    if let Some(length) = declared.filter(|length| *length > limit + MULTIPART_SLACK) {
        return Err(ApiError(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "the upload is {length} bytes; this registry accepts archives of at most {limit} bytes"
            ),
        ));
    }
    let mut multipart = multipart
        .map_err(|error| bad_request(format!("the body must be multipart/form-data: {error}")))?;
    let user = match authenticate(&registry, &headers) {
        Ok(user) => user,
        Err(error) => {
            // Read the (size-limited) body before answering: a client still
            // sending it would otherwise see the connection close instead of
            // the 401 and its explanation.
            while let Ok(Some(field)) = multipart.next_field().await {
                if field.bytes().await.is_err() {
                    break;
                }
            }
            return Err(error);
        }
    };
    let (mut name, mut version, mut tarball) = (None, None, None);
    let (mut signature, mut key, mut provenance) = (None, None, None);
    loop {
        let field = match multipart.next_field().await {
            Ok(Some(field)) => field,
            Ok(None) => break,
            Err(error) => return Err(body_error(&error, limit)),
        };
        let part = field.name().unwrap_or_default().to_owned();
        let bytes = field
            .bytes()
            .await
            .map_err(|error| body_error(&error, limit))?;
        match part.as_str() {
            "name" => name = Some(String::from_utf8_lossy(&bytes).into_owned()),
            "version" => version = Some(String::from_utf8_lossy(&bytes).into_owned()),
            "tarball" => tarball = Some(bytes),
            "signature" => signature = Some(bytes),
            "key" => key = Some(bytes),
            "provenance" => provenance = Some(bytes),
            other => {
                return Err(bad_request(format!(
                    "unexpected part `{other}`: send name, version, tarball, and for a signed publish signature, key and provenance"
                )));
            }
        }
    }
    let missing = |part: &str| bad_request(format!("the `{part}` part is missing"));
    let name = name.ok_or_else(|| missing("name"))?;
    let version = version.ok_or_else(|| missing("version"))?;
    let tarball = tarball.ok_or_else(|| missing("tarball"))?;
    let record = blocking(move || {
        let request = PublishRequest {
            name: &name,
            version: &version,
            tarball: &tarball,
            signature: signature.as_deref(),
            key: key.as_deref(),
            provenance: provenance.as_deref(),
        };
        registry.publish(&user, &request)
    })
    .await?;
    Ok((StatusCode::CREATED, Json(record)).into_response())
}

/// Maps a body error: over the streaming limit is 413, anything else 400.
fn body_error(error: &axum::extract::multipart::MultipartError, limit: u64) -> ApiError {
    if error.status() == StatusCode::PAYLOAD_TOO_LARGE {
        ApiError(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "the upload is over the limit: this registry accepts archives of at most {limit} bytes"
            ),
        )
    } else {
        bad_request(format!(
            "the upload could not be read: {}",
            error.body_text()
        ))
    }
}

#[derive(serde::Deserialize, Default)]
struct YankBody {
    reason: Option<String>,
}

async fn yank(
    State(registry): State<Arc<Registry>>,
    headers: HeaderMap,
    Path((name, version)): Path<(String, String)>,
    body: axum::body::Bytes,
) -> Result<Response, ApiError> {
    set_yanked(registry, &headers, name, version, true, &body).await
}

async fn unyank(
    State(registry): State<Arc<Registry>>,
    headers: HeaderMap,
    Path((name, version)): Path<(String, String)>,
    body: axum::body::Bytes,
) -> Result<Response, ApiError> {
    set_yanked(registry, &headers, name, version, false, &body).await
}

async fn set_yanked(
    registry: Arc<Registry>,
    headers: &HeaderMap,
    name: String,
    version: String,
    yanked: bool,
    body: &[u8],
) -> Result<Response, ApiError> {
    let user = authenticate(&registry, headers)?;
    let body: YankBody = if body.is_empty() {
        YankBody::default()
    } else {
        serde_json::from_slice(body).map_err(|error| {
            bad_request(format!(
                "the body must be JSON like {{\"reason\":\"...\"}}: {error}"
            ))
        })?
    };
    let record =
        blocking(move || registry.set_yanked(&user, &name, &version, yanked, body.reason)).await?;
    Ok(Json(record).into_response())
}

async fn owners(
    State(registry): State<Arc<Registry>>,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    let users = blocking(move || registry.owners(&name)).await?;
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

async fn change_owners(
    State(registry): State<Arc<Registry>>,
    headers: HeaderMap,
    Path(name): Path<String>,
    body: axum::body::Bytes,
) -> Result<Response, ApiError> {
    let user = authenticate(&registry, &headers)?;
    let change: ListChange = serde_json::from_slice(&body).map_err(|error| {
        bad_request(format!(
            "the body must be JSON like {{\"add\":[\"bob\"],\"remove\":[]}}: {error}"
        ))
    })?;
    let users =
        blocking(move || registry.change_owners(&user, &name, &change.add, &change.remove)).await?;
    Ok(Json(json!({ "users": users })).into_response())
}

async fn keys(
    State(registry): State<Arc<Registry>>,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    let keys = blocking(move || registry.keys(&name)).await?;
    Ok(Json(json!({ "keys": keys.keys })).into_response())
}

async fn change_keys(
    State(registry): State<Arc<Registry>>,
    headers: HeaderMap,
    Path(name): Path<String>,
    body: axum::body::Bytes,
) -> Result<Response, ApiError> {
    let user = authenticate(&registry, &headers)?;
    let change: ListChange = serde_json::from_slice(&body).map_err(|error| {
        bad_request(format!(
            "the body must be JSON like {{\"add\":[\"RWQ...\"],\"remove\":[\"<key id>\"]}}: {error}"
        ))
    })?;
    let keys =
        blocking(move || registry.change_keys(&user, &name, &change.add, &change.remove)).await?;
    Ok(Json(json!({ "keys": keys.keys })).into_response())
}

async fn me(
    State(registry): State<Arc<Registry>>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let user = authenticate(&registry, &headers)?;
    Ok(Json(json!({ "user": user })).into_response())
}

fn plain(status: StatusCode, text: &'static str) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        text,
    )
        .into_response()
}

/// Serves a file of the static tree.
async fn static_file(
    State(registry): State<Arc<Registry>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    if method != Method::GET && method != Method::HEAD {
        return plain(StatusCode::METHOD_NOT_ALLOWED, "method not allowed\n");
    }
    if registry.auth_required() {
        if let Err(error) = authenticate(&registry, &headers) {
            return ApiError(error.0, format!("this registry is private: {}", error.1))
                .into_response();
        }
    }
    let relative = uri.path().trim_start_matches('/');
    let components: Vec<&str> = relative.split('/').collect();
    let safe = !relative.is_empty()
        && components.iter().enumerate().all(|(index, component)| {
            !component.is_empty()
                && (!component.starts_with('.') || (index == 0 && *component == ".well-known"))
        });
    if !safe {
        return plain(StatusCode::NOT_FOUND, "not found\n");
    }
    let path = registry.tree().root().join(relative);
    // A stat of a cached file is cheaper than a trip to the blocking pool.
    let Ok(metadata) = fs_err::metadata(&path) else {
        return plain(StatusCode::NOT_FOUND, "not found\n");
    };
    if !metadata.is_file() {
        return plain(StatusCode::NOT_FOUND, "not found\n");
    }
    let modified = metadata
        .modified()
        .ok()
        .and_then(|time| time.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |age| age.as_nanos());
    let etag = format!("\"{modified:x}-{:x}\"", metadata.len());
    let (content_type, cache_control) = file_headers(relative);
    let mut response_headers = HeaderMap::new();
    response_headers.insert(
        header::ETAG,
        HeaderValue::from_str(&etag).expect("an ETag is ASCII"),
    );
    response_headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(cache_control),
    );
    let matches = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| {
            value
                .split(',')
                .any(|tag| tag.trim() == etag || tag.trim() == "*")
        });
    if matches {
        return (StatusCode::NOT_MODIFIED, response_headers).into_response();
    }
    response_headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    // Index files are small and hot: read them in place. Archives (up to the
    // size limit) go through the blocking pool.
    let read = if metadata.len() <= SMALL_FILE {
        fs_err::read(&path)
    } else {
        tokio::fs::read(&path).await
    };
    let Ok(bytes) = read else {
        // Replaced between the two calls: the client retries.
        return plain(StatusCode::NOT_FOUND, "not found\n");
    };
    (StatusCode::OK, response_headers, Body::from(bytes)).into_response()
}

/// Returns the content type and cache policy of a tree path.
fn file_headers(path: &str) -> (&'static str, &'static str) {
    const IMMUTABLE: &str = "public, max-age=31536000, immutable";
    const SHORT: &str = "public, max-age=60, must-revalidate";
    // `N.root.json` never changes once written; `root.json` is its newest copy.
    let versioned_root = path
        .strip_suffix(".root.json")
        .is_some_and(|version| !version.is_empty() && version.bytes().all(|b| b.is_ascii_digit()));
    if path.ends_with(".tgz") {
        ("application/gzip", IMMUTABLE)
    } else if versioned_root {
        ("application/json", IMMUTABLE)
    } else if path.ends_with(".minisig") {
        ("text/plain; charset=utf-8", IMMUTABLE)
    } else if path.ends_with(".intoto.jsonl") {
        ("application/x-ndjson", IMMUTABLE)
    } else if path.ends_with(".json") {
        ("application/json", SHORT)
    } else {
        ("text/plain; charset=utf-8", SHORT)
    }
}
