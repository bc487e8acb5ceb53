//! The static tree at `/`.
//!
//! From a folder, a file is sent by `tower-http`'s [`ServeFile`], which
//! answers `Range` (one range: 206 with `Content-Range`; a range past the
//! end: 416), sends `Last-Modified` and answers `If-Modified-Since` with
//! 304, answers `HEAD`, and streams the file in 64 KiB pieces, so a crowd
//! of downloads of the largest archive costs a piece each in memory. The
//! exception is the commonest request, a whole `GET` (no `Range`, no date
//! condition) of a file of at most 256 KiB (index files, keys, most
//! archives): this module reads it in its own lookup and sends it with
//! the same headers. ServeFile opens, stats and reads through
//! `tokio::fs`, a trip to the blocking pool each, and those trips, not the
//! work in them, were most of a request's cost: sending every file
//! through it served index files at 0.4 times the rate of one trip
//! (bench/README.md). Around it, this module:
//!
//! - sends a folder's `index.html` for the folder (`/` is the home page:
//!   docs/web.md), with the pages' content security policy;
//! - refuses paths with a component starting with `.` (temporary files, a
//!   mirror's record and state), except a leading `.well-known`, and empty
//!   components; the path is checked after percent-decoding, as the file
//!   system sees it, so `%2e` is a `.`;
//! - looks the file up in one trip to the blocking pool: its metadata, and
//!   those of its precompressed siblings `<file>.br` and `<file>.gz`, and,
//!   for a whole small `GET`, the bytes of the form chosen. A sibling is
//!   sent, with `Content-Encoding`, to a client whose
//!   `Accept-Encoding` takes it (its q-values decide; on a tie, `br`
//!   first), and only when it is a file no older than the one it stands
//!   for: a sibling left behind by a rewrite of the file is never sent.
//!   Every answer for a file that has one carries `Vary: Accept-Encoding`.
//!   The tree writer writes no siblings; an operator may add them;
//! - gives every file answer a strong `ETag`, `"<mtime ns>-<size>"` in hex
//!   (`-gz` or `-br` appended for a sibling), and answers `If-None-Match`
//!   naming it with 304 without opening the file; `If-Modified-Since` is
//!   ignored when `If-None-Match` is sent, and a `Range` is honoured only
//!   if its `If-Range` (when sent) names the current ETag or
//!   `Last-Modified`. A request for several ranges gets the whole file;
//! - sets the content type, and the cache policy: archives, signatures,
//!   provenance, versioned roots, `meta/` and the marketplace
//!   repositories' packs are cached for a year as immutable, everything
//!   else (index files, keys, a repository's refs) for a minute;
//! - counts a `GET` of an archive answered in full (200; not a `HEAD`, a
//!   206 or a 304) as a download ([`crate::downloads`]).
//!
//! From a bucket, an object is read whole, with the bucket's own ETag and
//! 304 for it, and no ranges or siblings: a server in front of a bucket
//! takes publishes, and the bucket's web endpoint or a CDN serves the
//! downloads.
//!
//! Every refusal is a typed error ([`super::error`]): 404 `not_found`, 405
//! `method_not_allowed`, 412 `precondition_failed`, 416
//! `range_not_satisfiable` (with `Content-Range: bytes */<size>`).

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use skillpkg_index::skill::SkillName;
use tower_http::services::ServeFile;

use super::api::{App, authenticate};
use super::error::ApiError;
use crate::registry::Registry;
use crate::storage::{Storage, StorageError};

/// Files up to this size are read whole, in the lookup's trip to the
/// blocking pool; larger ones are streamed by ServeFile. Most archives are
/// below it, so a download is one trip, not ServeFile's open, stat and
/// reads; a connection holds at most this much of a file (128 MiB for the
/// default 512 connections, [`super::limits::Limits::max_connections`]).
const SMALL_FILE: u64 = 256 * 1024;

fn not_found() -> Response {
    ApiError::not_found("no such file in this registry").into_response()
}

/// A precompressed form of a file, kept beside it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Coding {
    Brotli,
    Gzip,
}

impl Coding {
    const ALL: [Self; 2] = [Self::Brotli, Self::Gzip];

    /// The suffix of the sibling's name, and of its ETag.
    fn suffix(self) -> &'static str {
        match self {
            Self::Brotli => "br",
            Self::Gzip => "gz",
        }
    }

    fn content_encoding(self) -> HeaderValue {
        HeaderValue::from_static(match self {
            Self::Brotli => "br",
            Self::Gzip => "gzip",
        })
    }
}

/// The forms of a file a client takes, most wanted first: `Some` a
/// precompressed one, `None` the file as it is (which is always there, so
/// the forms after it are never sent). A form with q=0 is not listed.
/// Codings other than `br`, `gzip` and `identity` are ignored, as is an
/// entry with a malformed q-value.
fn wanted_forms(headers: &HeaderMap) -> Vec<Option<Coding>> {
    let mut quality: [Option<u16>; 3] = [None; 3];
    for value in headers.get_all(header::ACCEPT_ENCODING) {
        let Ok(value) = value.to_str() else { continue };
        for entry in value.split(',') {
            let mut parts = entry.split(';');
            let name = parts.next().unwrap_or_default().trim();
            let slot = if name.eq_ignore_ascii_case("br") {
                0
            } else if name.eq_ignore_ascii_case("gzip") || name.eq_ignore_ascii_case("x-gzip") {
                1
            } else if name.eq_ignore_ascii_case("identity") {
                2
            } else {
                continue;
            };
            let q = match parts.next() {
                None => Some(1000),
                Some(param) => q_value(param.trim()),
            };
            if let Some(q) = q
                && quality[slot].is_none()
            {
                quality[slot] = Some(q);
            }
        }
    }
    let mut forms: Vec<(u16, usize, Option<Coding>)> = [
        (quality[0], 2, Some(Coding::Brotli)),
        (quality[1], 1, Some(Coding::Gzip)),
        (quality[2], 0, None),
    ]
    .into_iter()
    .filter_map(|(q, rank, form)| q.filter(|q| *q > 0).map(|q| (q, rank, form)))
    .collect();
    forms.sort_by_key(|&(q, rank, _)| std::cmp::Reverse((q, rank)));
    forms.into_iter().map(|(_, _, form)| form).collect()
}

/// Parses `q=0.8` into thousandths; `None` if it is not a q-value.
fn q_value(param: &str) -> Option<u16> {
    let value = param
        .strip_prefix("q=")
        .or_else(|| param.strip_prefix("Q="))?;
    let (whole, fraction) = value.split_once('.').unwrap_or((value, ""));
    let whole = match whole {
        "0" => 0,
        "1" => 1000,
        _ => return None,
    };
    if fraction.len() > 3 || !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // Thousandths: the digits, padded with zeros to three.
    let fraction = fraction
        .bytes()
        .chain(std::iter::repeat(b'0'))
        .take(3)
        .fold(0, |thousandths, digit| {
            thousandths * 10 + u16::from(digit - b'0')
        });
    let q = whole + fraction;
    (q <= 1000).then_some(q)
}

/// A file of the tree as found, in the form to send.
#[derive(Debug)]
struct Found {
    /// The file to send: the tree's, or its precompressed sibling.
    path: PathBuf,
    coding: Option<Coding>,
    etag: String,
    modified: Option<SystemTime>,
    /// The length of the file to send.
    len: u64,
    /// Whether the file has a sibling that some client would be sent.
    varies: bool,
}

/// Returns the metadata of `path` if it is a file. The error, which would
/// name the path, is not kept: a missing or unreadable file is one the
/// tree does not have.
fn file_metadata(path: &Path) -> Option<std::fs::Metadata> {
    path.metadata().ok().filter(std::fs::Metadata::is_file)
}

/// Finds the file at `path` and the form of it to send to a client that
/// takes `wanted`: one trip to the blocking pool a request.
fn find(path: PathBuf, wanted: &[Option<Coding>]) -> Option<Found> {
    let metadata = file_metadata(&path)?;
    let modified = metadata.modified().ok();
    // Siblings no older than the file; an unknown time is too old.
    let siblings = Coding::ALL.map(|coding| {
        let mut name = path.clone().into_os_string();
        name.push(".");
        name.push(coding.suffix());
        let sibling = PathBuf::from(name);
        let fresh = file_metadata(&sibling).filter(|sibling| {
            matches!(
                (sibling.modified().ok(), modified),
                (Some(theirs), Some(ours)) if theirs >= ours
            )
        })?;
        Some((coding, sibling, fresh))
    });
    let varies = siblings.iter().any(Option::is_some);
    let chosen = wanted.iter().map_while(|form| *form).find_map(|coding| {
        siblings
            .iter()
            .flatten()
            .find(|(candidate, ..)| *candidate == coding)
    });
    Some(match chosen {
        Some((coding, sibling, sibling_metadata)) => Found {
            etag: etag(sibling_metadata, Some(*coding)),
            modified: sibling_metadata.modified().ok(),
            len: sibling_metadata.len(),
            path: sibling.clone(),
            coding: Some(*coding),
            varies,
        },
        None => Found {
            etag: etag(&metadata, None),
            modified,
            len: metadata.len(),
            path,
            coding: None,
            varies,
        },
    })
}

/// Finds the file at `path` as [`find`] does and, when `read_whole` and
/// it is at most [`SMALL_FILE`] bytes and `if_none_match` does not name
/// it, reads it: the lookup and the read in one trip to the blocking pool.
/// The file read is the one opened, its ETag, time and length those of
/// the open file, whatever replaced it since it was found.
fn find_and_read(
    path: PathBuf,
    wanted: &[Option<Coding>],
    read_whole: bool,
    if_none_match: &[HeaderValue],
) -> Option<(Found, Option<Bytes>)> {
    let mut found = find(path, wanted)?;
    if !read_whole || found.len > SMALL_FILE || names(if_none_match.iter(), &found.etag) {
        return Some((found, None));
    }
    // Removed since: the client asks again.
    let file = fs_err::File::open(&found.path).ok()?;
    let opened = file.metadata().ok()?;
    if opened.len() > SMALL_FILE {
        // Replaced by a larger file since: ServeFile streams it.
        return Some((found, None));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(opened.len()).ok()?);
    file.take(opened.len()).read_to_end(&mut bytes).ok()?;
    found.etag = etag(&opened, found.coding);
    found.modified = opened.modified().ok();
    found.len = opened.len();
    Some((found, Some(Bytes::from(bytes))))
}

/// The ETag of a file: its modification time in nanoseconds and its size,
/// in hex, and the coding of a precompressed sibling.
fn etag(metadata: &std::fs::Metadata, coding: Option<Coding>) -> String {
    let modified = metadata
        .modified()
        .ok()
        .and_then(|time| time.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |age| age.as_nanos());
    match coding {
        None => format!("\"{modified:x}-{:x}\"", metadata.len()),
        Some(coding) => format!("\"{modified:x}-{:x}-{}\"", metadata.len(), coding.suffix()),
    }
}

/// Returns true if and only if `If-None-Match` names `etag`, or is `*`
/// (a weak comparison, as for `GET` and `HEAD`).
fn none_match_names(headers: &HeaderMap, etag: &str) -> bool {
    names(headers.get_all(header::IF_NONE_MATCH).iter(), etag)
}

/// Returns true if and only if the values of an `If-None-Match` name
/// `etag`, or are `*`.
fn names<'a>(values: impl Iterator<Item = &'a HeaderValue>, etag: &str) -> bool {
    values
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .map(str::trim)
        .any(|tag| tag == "*" || tag.strip_prefix("W/").unwrap_or(tag) == etag)
}

/// Returns true if and only if a `Range` may be honoured: there is no
/// `If-Range`, or it names the file as it is now, by its ETag (a strong
/// comparison) or its `Last-Modified` date.
fn range_still_applies(headers: &HeaderMap, found: &Found) -> bool {
    let Some(condition) = headers.get(header::IF_RANGE) else {
        return true;
    };
    let Ok(condition) = condition.to_str() else {
        return false;
    };
    let condition = condition.trim();
    if condition.starts_with('"') {
        return condition == found.etag;
    }
    let (Ok(date), Some(modified)) = (httpdate::parse_http_date(condition), found.modified) else {
        return false;
    };
    // `Last-Modified` is whole seconds.
    let seconds = |time: SystemTime| {
        time.duration_since(UNIX_EPOCH)
            .map_or(0, |age| age.as_secs())
    };
    seconds(date) == seconds(modified)
}

/// Refuses a read of a private registry (`--auth-required`) without a
/// valid token; any read of a public one passes.
pub(super) async fn require_read_token(
    registry: &Arc<Registry>,
    headers: &HeaderMap,
) -> Result<(), ApiError> {
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
    if let Err(error) = require_read_token(registry, &headers).await {
        return error.into_response();
    }
    match registry.storage() {
        Storage::Folder(root) => from_folder(registry, root, method, uri, &headers).await,
        storage => from_bucket(registry, storage, &method, &uri, &headers).await,
    }
}

/// Returns the path of the file that answers for `relative`: a folder's
/// page is its `index.html`, and `/` is the home page (docs/web.md).
fn with_index(relative: &str) -> std::borrow::Cow<'_, str> {
    if relative.is_empty() || relative.ends_with('/') {
        format!("{relative}index.html").into()
    } else {
        relative.into()
    }
}

/// Returns true if and only if `relative` is a path the tree serves: not
/// empty, no empty component, no component starting with `.` but a
/// leading `.well-known`.
fn servable(relative: &str) -> bool {
    !relative.is_empty()
        && relative.split('/').enumerate().all(|(index, component)| {
            !component.is_empty()
                && !component.contains(['\\', '\0'])
                && (!component.starts_with('.') || (index == 0 && component == ".well-known"))
        })
}

/// Serves the file at the request's path in the folder `root`.
async fn from_folder(
    registry: &Registry,
    root: &Path,
    method: Method,
    uri: Uri,
    headers: &HeaderMap,
) -> Response {
    // Decoded as `ServeDir` would, so that the path checked is the one
    // opened.
    let encoded = uri.path().trim_start_matches('/');
    let Ok(relative) = percent_encoding::percent_decode_str(encoded).decode_utf8() else {
        return not_found();
    };
    let relative = with_index(&relative).into_owned();
    if !servable(&relative) {
        return not_found();
    }
    let wanted = wanted_forms(headers);
    let path = root.join(&relative);
    let conditional = headers.contains_key(header::IF_NONE_MATCH);
    // A whole small file is read in the lookup's trip; ServeFile answers
    // the rest (ranges, dates, `HEAD`, larger files).
    let read_whole = method == Method::GET
        && !headers.contains_key(header::RANGE)
        && (conditional || !headers.contains_key(header::IF_MODIFIED_SINCE))
        && !headers.contains_key(header::IF_UNMODIFIED_SINCE);
    let if_none_match: Vec<HeaderValue> = headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .cloned()
        .collect();
    // A small file read lately, and no file of the tree changed since:
    // sent from memory, with no trip to the blocking pool.
    if read_whole && let Some(hot) = hot::get(&path) {
        let (file_headers, content_type) = answer_headers(&relative, &hot.etag, false);
        if conditional && none_match_names(headers, &hot.etag) {
            return (StatusCode::NOT_MODIFIED, file_headers).into_response();
        }
        return whole_file(
            registry,
            &relative,
            file_headers,
            content_type,
            None,
            hot.modified,
            hot.bytes.clone(),
        );
    }
    let changes = hot::changes();
    let key = path.clone();
    let lookup = move || find_and_read(path, &wanted, read_whole, &if_none_match);
    let (found, bytes) = match tokio::task::spawn_blocking(lookup).await {
        Ok(Some(found)) => found,
        Ok(None) => return not_found(),
        Err(error) => return ApiError::internal(&error).into_response(),
    };
    let (mut file_headers, content_type) = answer_headers(&relative, &found.etag, found.varies);
    if conditional && none_match_names(headers, &found.etag) {
        return (StatusCode::NOT_MODIFIED, file_headers).into_response();
    }
    if let Some(bytes) = bytes {
        // Only the file as it is (no sibling to choose from), and only
        // small ones, are kept.
        if !found.varies && found.coding.is_none() {
            hot::put(key, changes, &found.etag, found.modified, &bytes);
        }
        return whole_file(
            registry,
            &relative,
            file_headers,
            content_type,
            found.coding,
            found.modified,
            bytes,
        );
    }

    // What ServeFile acts on: the method, the path, and the conditions
    // and range it answers.
    let mut forwarded = Request::new(Body::empty());
    *forwarded.method_mut() = method.clone();
    *forwarded.uri_mut() = uri;
    let mut pass = |name: HeaderName| {
        if let Some(value) = headers.get(&name) {
            forwarded.headers_mut().insert(name, value.clone());
        }
    };
    // RFC 9110, 13.1.3: a recipient ignores `If-Modified-Since` when
    // `If-None-Match` is there.
    if !conditional {
        pass(header::IF_MODIFIED_SINCE);
    }
    pass(header::IF_UNMODIFIED_SINCE);
    let one_range = headers
        .get(header::RANGE)
        .and_then(|range| range.to_str().ok())
        .is_some_and(|range| !range.contains(','));
    if one_range && range_still_applies(headers, &found) {
        pass(header::RANGE);
    }

    let served = ServeFile::new(&found.path).try_call(forwarded).await;
    let served = match served {
        Ok(served) => served,
        Err(error) => return ApiError::internal(&error).into_response(),
    };
    let status = served.status();
    match status {
        StatusCode::OK | StatusCode::PARTIAL_CONTENT | StatusCode::NOT_MODIFIED => {}
        // Removed since it was found.
        StatusCode::NOT_FOUND => return not_found(),
        StatusCode::RANGE_NOT_SATISFIABLE => {
            let mut refused = ApiError::new(
                status,
                "range-not-satisfiable",
                format!(
                    "the range asked for is not within this file's {} bytes",
                    found.len
                ),
            )
            .into_response();
            if let Some(range) = served.headers().get(header::CONTENT_RANGE) {
                refused
                    .headers_mut()
                    .insert(header::CONTENT_RANGE, range.clone());
            }
            return refused;
        }
        StatusCode::PRECONDITION_FAILED => {
            return ApiError::new(
                status,
                "precondition-failed",
                "the file was modified since the date of `If-Unmodified-Since`",
            )
            .into_response();
        }
        // Typed on the way out (`error::type_errors`).
        _ => return served.into_response(),
    }
    if status == StatusCode::OK
        && method == Method::GET
        && let Some(name) = archive_name(&relative)
    {
        registry.record_download(&name);
    }
    let (mut response_parts, body) = served.into_parts();
    if status != StatusCode::NOT_MODIFIED {
        file_headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
        if let Some(coding) = found.coding {
            file_headers.insert(header::CONTENT_ENCODING, coding.content_encoding());
        }
    }
    response_parts.headers.extend(file_headers);
    Response::from_parts(response_parts, Body::new(body))
}

/// The headers of every answer for a file at `relative` with the ETag
/// `etag` (`varies`: it has a sibling some client is sent), and its
/// content type.
fn answer_headers(relative: &str, etag: &str, varies: bool) -> (HeaderMap, &'static str) {
    let (content_type, cache_control) = file_headers(relative);
    let mut headers = HeaderMap::new();
    headers.insert(
        header::ETAG,
        HeaderValue::from_str(etag).expect("an ETag is ASCII"),
    );
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(cache_control),
    );
    if varies {
        headers.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    }
    if content_type.starts_with("text/html") {
        page_headers(&mut headers);
    }
    (headers, content_type)
}

/// A whole file, read by this module: the headers ServeFile would send
/// with it, and a download counted when it is an archive.
fn whole_file(
    registry: &Registry,
    relative: &str,
    mut headers: HeaderMap,
    content_type: &'static str,
    coding: Option<Coding>,
    modified: Option<SystemTime>,
    bytes: Bytes,
) -> Response {
    if let Some(name) = archive_name(relative) {
        registry.record_download(&name);
    }
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    if let Some(coding) = coding {
        headers.insert(header::CONTENT_ENCODING, coding.content_encoding());
    }
    if let Some(modified) = modified {
        let date = httpdate::fmt_http_date(modified);
        headers.insert(
            header::LAST_MODIFIED,
            HeaderValue::from_str(&date).expect("an HTTP date is ASCII"),
        );
    }
    headers.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    (StatusCode::OK, headers, Body::from(bytes)).into_response()
}

/// Small files sent lately, kept in memory: index files, keys, the search
/// index, pages, most archives. One is sent from here while no tree of this process has
/// written or removed a file since it was read
/// ([`skillpkg_index::registry::tree::changes`]) and for at most
/// [`hot::FRESH`], which bounds how long a change made by another process
/// (an operator's command, a file added by hand) goes unseen. A file is
/// kept only when it was read whole and has no precompressed sibling.
mod hot {
    use std::collections::HashMap;
    use std::path::PathBuf;
    use std::sync::{LazyLock, Mutex};
    use std::time::{Duration, Instant, SystemTime};

    use axum::body::Bytes;

    /// How long a file is sent from memory at most.
    pub(super) const FRESH: Duration = Duration::from_secs(1);
    /// The largest file kept: any file read whole (most archives, which
    /// never change, are among them).
    const MAX_FILE: u64 = super::SMALL_FILE;
    /// The most bytes kept; past it, everything is dropped.
    const MAX_TOTAL: usize = 32 * 1024 * 1024;

    pub(super) struct Hot {
        pub(super) bytes: Bytes,
        pub(super) etag: String,
        pub(super) modified: Option<SystemTime>,
        changes: u64,
        read: Instant,
    }

    struct Files {
        by_path: HashMap<PathBuf, std::sync::Arc<Hot>>,
        total: usize,
    }

    static FILES: LazyLock<Mutex<Files>> = LazyLock::new(|| {
        Mutex::new(Files {
            by_path: HashMap::new(),
            total: 0,
        })
    });

    /// How many changes the trees of this process made so far.
    pub(super) fn changes() -> u64 {
        skillpkg_index::registry::tree::changes()
    }

    /// The file at `path`, if it is kept and still current.
    pub(super) fn get(path: &PathBuf) -> Option<std::sync::Arc<Hot>> {
        let files = FILES
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let hot = files.by_path.get(path)?;
        (hot.changes == changes() && hot.read.elapsed() < FRESH).then(|| hot.clone())
    }

    /// Keeps the file at `path`, read when the trees had made `changes`
    /// changes.
    pub(super) fn put(
        path: PathBuf,
        changes: u64,
        etag: &str,
        modified: Option<SystemTime>,
        bytes: &Bytes,
    ) {
        if bytes.len() as u64 > MAX_FILE {
            return;
        }
        let mut files = FILES
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if files.total + bytes.len() > MAX_TOTAL {
            files.by_path.clear();
            files.total = 0;
        }
        let hot = Hot {
            bytes: bytes.clone(),
            etag: etag.to_owned(),
            modified,
            changes,
            read: Instant::now(),
        };
        files.total += bytes.len();
        if let Some(old) = files.by_path.insert(path, std::sync::Arc::new(hot)) {
            files.total -= old.bytes.len();
        }
    }
}

/// Reads the object at the request's path from a bucket, unless the
/// client's `If-None-Match` names its ETag (the bucket's own). The path is
/// the one sent, still percent-encoded: `%2e%2e` is an object of that
/// name, never `..`.
async fn from_bucket(
    registry: &Registry,
    storage: &Storage,
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
) -> Response {
    let relative = with_index(uri.path().trim_start_matches('/'));
    let relative = relative.as_ref();
    if !servable(relative) {
        return not_found();
    }
    let if_none_match = |etag: &str| none_match_names(headers, etag);
    let conditional = headers.contains_key(header::IF_NONE_MATCH);
    let (bytes, etag) = match read_object(storage, relative, conditional, if_none_match).await {
        Ok(Object::Missing) => return not_found(),
        Ok(Object::NotModified { etag }) => (None, etag),
        Ok(Object::Read { bytes, etag }) => (Some(bytes), etag),
        Err(StorageError::BadPath(_)) => return not_found(),
        Err(error) => return ApiError::internal(&error).into_response(),
    };
    let (content_type, cache_control) = file_headers(relative);
    let mut response_headers = HeaderMap::new();
    response_headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(cache_control),
    );
    response_headers.insert(
        header::ETAG,
        HeaderValue::from_str(&etag).expect("an ETag is ASCII"),
    );
    if content_type.starts_with("text/html") {
        page_headers(&mut response_headers);
    }
    let Some(bytes) = bytes else {
        return (StatusCode::NOT_MODIFIED, response_headers).into_response();
    };
    if method == Method::GET
        && let Some(name) = archive_name(relative)
    {
        registry.record_download(&name);
    }
    response_headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    (StatusCode::OK, response_headers, Body::from(bytes)).into_response()
}

/// What a bucket had for a request.
enum Object {
    Missing,
    /// The client's copy is current.
    NotModified {
        etag: String,
    },
    Read {
        etag: String,
        bytes: Bytes,
    },
}

/// Reads the object at `relative`, unless `matches` says the client has
/// its ETag (asked first with a `HEAD` when the request is `conditional`).
async fn read_object(
    storage: &Storage,
    relative: &str,
    conditional: bool,
    matches: impl Fn(&str) -> bool,
) -> Result<Object, StorageError> {
    if conditional {
        let Some(meta) = storage.head(relative).await? else {
            return Ok(Object::Missing);
        };
        if let Some(etag) = meta.etag
            && matches(&etag)
        {
            return Ok(Object::NotModified { etag });
        }
    }
    let Some((bytes, etag)) = storage.get_tagged(relative).await? else {
        return Ok(Object::Missing);
    };
    let etag = etag.unwrap_or_else(|| {
        // A store that sends no ETag: one from the bytes.
        let checksum = skillpkg_index::checksum::Checksum::of(&bytes).to_string();
        format!("\"{}\"", &checksum[checksum.len() - 32..])
    });
    Ok(if conditional && matches(&etag) {
        Object::NotModified { etag }
    } else {
        Object::Read { etag, bytes }
    })
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
    } else if path.contains("/objects/pack/pack-") && path.ends_with(".pack") {
        // A marketplace repository's packs, named by their checksum.
        ("application/x-git-packed-objects", IMMUTABLE)
    } else if path.contains("/objects/pack/pack-") && path.ends_with(".idx") {
        ("application/x-git-packed-objects-toc", IMMUTABLE)
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
    use super::*;

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

    #[test]
    fn dot_paths_and_empty_components_are_not_served() {
        for path in [
            "index/3/p/pdf",
            ".well-known/agent-skills/index.json",
            "dl/pdf/1.0.0+build.1/pdf-1.0.0+build.1.tgz",
        ] {
            assert!(servable(path), "{path}");
        }
        for path in [
            "",
            ".skillpkg-tmp-x",
            "index/.skillpkg-tmp-x",
            "..",
            "index/../../state/registry.db",
            "a/.well-known/x",
            "index//3/p/pdf",
            "index/",
            "a\\b",
        ] {
            assert!(!servable(path), "{path}");
        }
    }

    fn accepting(value: &str) -> Vec<Option<Coding>> {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::ACCEPT_ENCODING,
            HeaderValue::from_str(value).unwrap(),
        );
        wanted_forms(&headers)
    }

    #[test]
    fn the_forms_a_client_takes_follow_its_q_values() {
        use Coding::{Brotli, Gzip};
        assert_eq!(wanted_forms(&HeaderMap::new()), []);
        assert_eq!(accepting("gzip"), [Some(Gzip)]);
        assert_eq!(accepting("gzip, deflate, br"), [Some(Brotli), Some(Gzip)]);
        assert_eq!(accepting("br;q=0.5, gzip"), [Some(Gzip), Some(Brotli)]);
        assert_eq!(accepting("x-gzip;q=0.8,br;q=0"), [Some(Gzip)]);
        assert_eq!(accepting("gzip;q=0.5, identity"), [None, Some(Gzip)]);
        assert_eq!(accepting("GZIP;Q=1.000"), [Some(Gzip)]);
        assert_eq!(accepting("gzip;q=1.5, br;q=x"), []);
        assert_eq!(accepting("*"), []);
        assert_eq!(q_value("q=0.25"), Some(250));
        assert_eq!(q_value("q=1"), Some(1000));
        assert_eq!(q_value("q=0.0001"), None);
    }

    fn set_modified(path: &Path, time: SystemTime) {
        fs_err::OpenOptions::new()
            .write(true)
            .open(path)
            .unwrap()
            .file()
            .set_modified(time)
            .unwrap();
    }

    #[test]
    fn a_kept_file_is_sent_until_any_tree_of_the_process_changes_a_file() {
        let temp = tempfile::tempdir().unwrap();
        let path = temp.path().join("index/pd/f-/pdf");
        let bytes = Bytes::from_static(b"{\"v\":1}\n");
        // Other tests of this process write trees too: kept as current
        // once no change came between the count and the look.
        let kept = (0..1000).find_map(|_| {
            hot::put(path.clone(), hot::changes(), "\"1-8\"", None, &bytes);
            hot::get(&path)
        });
        assert_eq!(kept.unwrap().bytes, bytes);
        // Read before a change ended: never kept as current.
        let before = hot::changes();
        let tree = skillpkg_index::registry::tree::StaticTree::new(temp.path());
        tree.write_file("search.json", b"{}").unwrap();
        assert!(hot::get(&path).is_none());
        hot::put(path.clone(), before, "\"1-8\"", None, &bytes);
        assert!(hot::get(&path).is_none());
        // Larger files are not kept.
        let large = temp.path().join("large");
        let big = Bytes::from(vec![0; usize::try_from(SMALL_FILE).unwrap() + 1]);
        hot::put(large.clone(), hot::changes(), "\"x\"", None, &big);
        assert!(hot::get(&large).is_none());
    }

    #[test]
    fn a_whole_small_file_is_read_in_the_lookup_unless_the_client_has_it() {
        let temp = tempfile::tempdir().unwrap();
        let small = temp.path().join("pdf");
        let large = temp.path().join("large.tgz");
        fs_err::write(&small, "{\"v\":1}\n").unwrap();
        fs_err::write(&large, vec![7; usize::try_from(SMALL_FILE).unwrap() + 1]).unwrap();

        let (found, bytes) = find_and_read(small.clone(), &[], true, &[]).unwrap();
        assert_eq!(bytes.as_deref(), Some(&b"{\"v\":1}\n"[..]));
        assert_eq!(found.len, 8);
        let etag = HeaderValue::from_str(&found.etag).unwrap();
        assert_eq!(
            find_and_read(small.clone(), &[], true, &[etag]).unwrap().1,
            None,
            "the client has it: 304"
        );
        assert_eq!(find_and_read(small, &[], false, &[]).unwrap().1, None);
        let (found, bytes) = find_and_read(large, &[], true, &[]).unwrap();
        assert_eq!((found.len, bytes), (SMALL_FILE + 1, None), "streamed");
        assert!(find_and_read(temp.path().join("none"), &[], true, &[]).is_none());
    }

    #[test]
    fn a_sibling_is_sent_only_when_wanted_and_no_older_than_its_file() {
        let temp = tempfile::tempdir().unwrap();
        let file = temp.path().join("search.json");
        let gz = temp.path().join("search.json.gz");
        fs_err::write(&file, "{}").unwrap();
        let found = find(file.clone(), &[Some(Coding::Gzip)]).unwrap();
        assert_eq!((found.coding, found.varies), (None, false));

        fs_err::write(&gz, "compressed").unwrap();
        let newer = SystemTime::now() + std::time::Duration::from_secs(5);
        set_modified(&gz, newer);
        let found = find(file.clone(), &[Some(Coding::Brotli), Some(Coding::Gzip)]).unwrap();
        assert_eq!((found.coding, found.varies), (Some(Coding::Gzip), true));
        assert_eq!(found.path, gz);
        assert_eq!(found.len, 10);
        assert!(found.etag.ends_with("-a-gz\""), "{}", found.etag);
        let plain = find(file.clone(), &[]).unwrap();
        assert_eq!((plain.coding, plain.varies), (None, true));
        assert_ne!(plain.etag, found.etag);
        let identity_first = find(file.clone(), &[None, Some(Coding::Gzip)]).unwrap();
        assert_eq!(identity_first.coding, None);

        // The file rewritten after its sibling: the sibling is stale.
        let later = newer + std::time::Duration::from_secs(5);
        set_modified(&file, later);
        let found = find(file.clone(), &[Some(Coding::Gzip)]).unwrap();
        assert_eq!((found.coding, found.varies), (None, false));

        // A sibling without its file is not served.
        fs_err::remove_file(&file).unwrap();
        assert!(find(file, &[Some(Coding::Gzip)]).is_none());
        assert!(find(temp.path().to_owned(), &[]).is_none(), "a folder");
    }
}
