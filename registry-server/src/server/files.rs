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
//! costs a piece each in memory, not an archive each. The stat and the read
//! (or the open) run in one trip to the blocking pool, so a slow disk never
//! stalls the async threads. A full `GET` of an archive is counted
//! ([`crate::downloads`]). Every refusal is a typed error
//! ([`super::error`]): 404 `not_found`, 405 `method_not_allowed`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::UNIX_EPOCH;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use skillpkg_index::skill::SkillName;
use tokio::io::AsyncReadExt as _;

use super::api::{App, authenticate};
use super::error::ApiError;
use crate::storage::{Storage, StorageError};

/// Files up to this size are read whole.
const SMALL_FILE: u64 = 64 * 1024;

/// The piece larger files are streamed in.
const PIECE: usize = 64 * 1024;

fn not_found() -> Response {
    ApiError::not_found("no such file in this registry").into_response()
}

/// What the file system had for a request, found off the async threads.
enum Lookup {
    Missing,
    /// The client's copy is current.
    NotModified {
        etag: String,
    },
    Small {
        etag: String,
        bytes: Bytes,
    },
    /// Opened, to be streamed; `len` is the length of the file opened.
    Large {
        etag: String,
        file: fs_err::File,
        len: u64,
    },
}

/// Stats `path` and, unless the client's `If-None-Match` names its ETag,
/// reads it (a small file) or opens it (a larger one): one trip to the
/// blocking pool a request.
fn look_up(path: &std::path::Path, if_none_match: Option<&str>) -> Lookup {
    let Ok(metadata) = fs_err::metadata(path) else {
        return Lookup::Missing;
    };
    if !metadata.is_file() {
        return Lookup::Missing;
    }
    let modified = metadata
        .modified()
        .ok()
        .and_then(|time| time.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |age| age.as_nanos());
    let etag = format!("\"{modified:x}-{:x}\"", metadata.len());
    let matches = if_none_match.is_some_and(|value| {
        value
            .split(',')
            .any(|tag| tag.trim() == etag || tag.trim() == "*")
    });
    if matches {
        return Lookup::NotModified { etag };
    }
    // Replaced or removed between the calls: the client retries.
    if metadata.len() <= SMALL_FILE {
        return match fs_err::read(path) {
            Ok(bytes) => Lookup::Small {
                etag,
                bytes: Bytes::from(bytes),
            },
            Err(_) => Lookup::Missing,
        };
    }
    let Ok(file) = fs_err::File::open(path) else {
        return Lookup::Missing;
    };
    let Ok(opened) = file.metadata() else {
        return Lookup::Missing;
    };
    Lookup::Large {
        etag,
        file,
        len: opened.len(),
    }
}

/// Reads the object at `relative` from a bucket, unless the client's
/// `If-None-Match` names its ETag (the bucket's own). Objects are read
/// whole: a server in front of a bucket takes publishes, and the bucket's
/// web endpoint or a CDN serves the downloads.
async fn look_up_object(
    storage: &Storage,
    relative: &str,
    if_none_match: Option<&str>,
) -> Result<Lookup, StorageError> {
    if let Some(wanted) = if_none_match {
        let Some(meta) = storage.head(relative).await? else {
            return Ok(Lookup::Missing);
        };
        if let Some(etag) = meta.etag
            && wanted
                .split(',')
                .any(|tag| tag.trim() == etag || tag.trim() == "*")
        {
            return Ok(Lookup::NotModified { etag });
        }
    }
    let Some((bytes, etag)) = storage.get_tagged(relative).await? else {
        return Ok(Lookup::Missing);
    };
    let etag = etag.unwrap_or_else(|| {
        // A store that sends no ETag: one from the bytes.
        let checksum = skillpkg_index::checksum::Checksum::of(&bytes).to_string();
        format!("\"{}\"", &checksum[checksum.len() - 32..])
    });
    let matches = if_none_match.is_some_and(|value| {
        value
            .split(',')
            .any(|tag| tag.trim() == etag || tag.trim() == "*")
    });
    Ok(if matches {
        Lookup::NotModified { etag }
    } else {
        Lookup::Small { etag, bytes }
    })
}

/// Serves a file of the static tree.
pub(super) async fn static_file(
    State(app): State<Arc<App>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    if method != Method::GET && method != Method::HEAD {
        let refused = ApiError::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "method-not-allowed",
            "the files of the tree are read with GET or HEAD",
        );
        let mut response = refused.into_response();
        response
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
        return response;
    }
    let registry = &app.registry;
    if registry.auth_required()
        && let Err(error) = authenticate(registry, &headers).await
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
    // A folder's page is its `index.html`: `/` is the home page
    // (docs/web.md).
    let with_index;
    let relative = if relative.is_empty() || relative.ends_with('/') {
        with_index = format!("{relative}index.html");
        with_index.as_str()
    } else {
        relative
    };
    let components: Vec<&str> = relative.split('/').collect();
    let safe = !relative.is_empty()
        && components.iter().enumerate().all(|(index, component)| {
            !component.is_empty()
                && (!component.starts_with('.') || (index == 0 && *component == ".well-known"))
        });
    if !safe {
        return not_found();
    }
    let if_none_match = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    let lookup = match registry.storage() {
        Storage::Folder(root) => {
            let path: PathBuf = root.join(relative);
            let lookup =
                tokio::task::spawn_blocking(move || look_up(&path, if_none_match.as_deref())).await;
            match lookup {
                Ok(lookup) => lookup,
                Err(error) => return ApiError::internal(&error).into_response(),
            }
        }
        storage => match look_up_object(storage, relative, if_none_match.as_deref()).await {
            Ok(lookup) => lookup,
            Err(StorageError::BadPath(_)) => return not_found(),
            Err(error) => return ApiError::internal(&error).into_response(),
        },
    };
    if method == Method::GET
        && matches!(lookup, Lookup::Small { .. } | Lookup::Large { .. })
        && let Some(name) = archive_name(relative)
    {
        registry.record_download(&name);
    }
    let (content_type, cache_control) = file_headers(relative);
    let mut response_headers = HeaderMap::new();
    response_headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(cache_control),
    );
    if content_type.starts_with("text/html") {
        page_headers(&mut response_headers);
    }
    let etag = match &lookup {
        Lookup::Missing => return not_found(),
        Lookup::NotModified { etag } | Lookup::Small { etag, .. } | Lookup::Large { etag, .. } => {
            etag
        }
    };
    response_headers.insert(
        header::ETAG,
        HeaderValue::from_str(etag).expect("an ETag is ASCII"),
    );
    match lookup {
        Lookup::Missing => not_found(),
        Lookup::NotModified { .. } => (StatusCode::NOT_MODIFIED, response_headers).into_response(),
        Lookup::Small { bytes, .. } => {
            response_headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
            (StatusCode::OK, response_headers, Body::from(bytes)).into_response()
        }
        Lookup::Large { file, len, .. } => {
            response_headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
            response_headers.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
            let file = tokio::fs::File::from_std(file.into_parts().0);
            (StatusCode::OK, response_headers, stream(file)).into_response()
        }
    }
}

/// Returns the skill whose archive `path` is, when it is one:
/// `dl/<name>/<version>/<name>-<version>.tgz`, the layout the server writes.
fn archive_name(path: &str) -> Option<SkillName> {
    let mut components = path.split('/');
    let (Some("dl"), Some(name), Some(version), Some(file), None) = (
        components.next(),
        components.next(),
        components.next(),
        components.next(),
        components.next(),
    ) else {
        return None;
    };
    (file.strip_suffix(".tgz")? == format!("{name}-{version}"))
        .then(|| name.parse().ok())
        .flatten()
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

/// The policy of the web pages (docs/web.md): their own script and style
/// sheet and nothing else, so that even markup that slipped through the
/// Markdown cleaning could neither run a script nor load anything.
pub(super) const PAGE_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/// Adds the headers of a web page: its content security policy, and no
/// sniffing of other types.
fn page_headers(headers: &mut HeaderMap) {
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(PAGE_POLICY),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
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
    } else if versioned_root || path.starts_with("meta/") {
        // The snapshot's nodes and bins are named by their sha256.
        ("application/json", IMMUTABLE)
    } else if path.ends_with(".minisig") {
        ("text/plain; charset=utf-8", IMMUTABLE)
    } else if path.ends_with(".intoto.jsonl") {
        ("application/x-ndjson", IMMUTABLE)
    } else if path.ends_with(".json") {
        ("application/json", SHORT)
    } else if path.ends_with(".html") {
        ("text/html; charset=utf-8", SHORT)
    } else if path.ends_with(".css") {
        ("text/css; charset=utf-8", SHORT)
    } else if path.ends_with(".js") {
        ("text/javascript; charset=utf-8", SHORT)
    } else {
        ("text/plain; charset=utf-8", SHORT)
    }
}

#[cfg(test)]
mod tests {
    use super::archive_name;

    #[test]
    fn only_the_archive_of_a_version_counts_as_a_download() {
        assert_eq!(
            archive_name("dl/pdf/1.2.0/pdf-1.2.0.tgz").map(|name| name.to_string()),
            Some("pdf".to_owned())
        );
        for other in [
            "dl/pdf/1.2.0/pdf-1.2.0.tgz.minisig",
            "dl/pdf/1.2.0/pdf-1.2.0.intoto.jsonl",
            "dl/pdf/1.2.0/csv-1.2.0.tgz",
            "dl/pdf/1.2.0/x/pdf-1.2.0.tgz",
            "dl/PDF/1.2.0/PDF-1.2.0.tgz",
            "index/3/p/pdf",
            "search.json",
        ] {
            assert_eq!(archive_name(other), None, "{other}");
        }
    }
}
