//! The static tree at `/`.
//!
//! Static files carry an `ETag` (size and modification time, like nginx's)
//! and answer `If-None-Match` with 304; archives, signatures and provenance
//! are cached for a year as immutable, everything else (index files, keys)
//! for a minute. Paths with a component starting with `.` (temporary
//! files, a mirror's record and state) are never served, except
//! `.well-known`.
//!
//! Small files (index files, keys) are read whole; larger ones (archives)
//! are streamed in pieces, so a crowd of downloads of the largest archive
//! costs a piece each in memory, not an archive each.

use std::sync::Arc;
use std::time::UNIX_EPOCH;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use tokio::io::AsyncReadExt as _;

use super::App;
use super::api::authenticate;
use super::error::ApiError;

/// Files up to this size are read whole, on the async thread.
const SMALL_FILE: u64 = 64 * 1024;

/// The piece larger files are streamed in.
const PIECE: usize = 64 * 1024;

fn plain(status: StatusCode, text: &'static str) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        text,
    )
        .into_response()
}

fn not_found() -> Response {
    plain(StatusCode::NOT_FOUND, "not found\n")
}

/// Serves a file of the static tree.
pub(super) async fn static_file(
    State(app): State<Arc<App>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    if method != Method::GET && method != Method::HEAD {
        return plain(StatusCode::METHOD_NOT_ALLOWED, "method not allowed\n");
    }
    let registry = &app.registry;
    if registry.auth_required()
        && let Err(error) = authenticate(registry, &headers)
    {
        if error.status() != StatusCode::UNAUTHORIZED {
            return error.into_response();
        }
        return ApiError::unauthorized(format!("this registry is private: {}", error.detail()))
            .into_response();
    }
    // The path as sent, still percent-encoded: `%2e%2e` is a file of that
    // name, never `..`, since nothing here decodes it.
    let relative = uri.path().trim_start_matches('/');
    let components: Vec<&str> = relative.split('/').collect();
    let safe = !relative.is_empty()
        && components.iter().enumerate().all(|(index, component)| {
            !component.is_empty()
                && (!component.starts_with('.') || (index == 0 && *component == ".well-known"))
        });
    if !safe {
        return not_found();
    }
    let path = registry.tree().root().join(relative);
    // A stat of a cached file is cheaper than a trip to the blocking pool.
    let Ok(metadata) = fs_err::metadata(&path) else {
        return not_found();
    };
    if !metadata.is_file() {
        return not_found();
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
    // Index files are small and hot: read them in place.
    if metadata.len() <= SMALL_FILE {
        let Ok(bytes) = fs_err::read(&path) else {
            // Replaced between the two calls: the client retries.
            return not_found();
        };
        return (StatusCode::OK, response_headers, Body::from(bytes)).into_response();
    }
    let Ok(file) = tokio::fs::File::open(&path).await else {
        return not_found();
    };
    // The length of the file opened: what is streamed.
    let Ok(opened) = file.metadata().await else {
        return not_found();
    };
    response_headers.insert(header::CONTENT_LENGTH, HeaderValue::from(opened.len()));
    (StatusCode::OK, response_headers, stream(file)).into_response()
}

/// Streams `file` in pieces of [`PIECE`] bytes.
fn stream(file: tokio::fs::File) -> Body {
    let pieces = futures_util::stream::try_unfold(file, |mut file| async move {
        let mut piece = vec![0; PIECE];
        let read = file.read(&mut piece).await?;
        if read == 0 {
            return Ok::<_, std::io::Error>(None);
        }
        piece.truncate(read);
        Ok(Some((Bytes::from(piece), file)))
    });
    Body::from_stream(pieces)
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
