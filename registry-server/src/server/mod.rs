//! The HTTP server: the static tree at `/`, the API at `/api/v1`, and the
//! connection handling that keeps any one client, or many, from exhausting
//! the server.
//!
//! ```text
//! GET  /<path of the tree>                    files of public/ (auth-required: a token)
//! PUT  /api/v1/skills                         publish (multipart)
//! DELETE /api/v1/skills/{name}/{version}/yank  PUT .../unyank
//! GET|PUT /api/v1/skills/{name}/owners       GET|PUT /api/v1/skills/{name}/keys
//! GET  /api/v1/me
//! GET  /plugins/<name>.git/info/refs?service=git-upload-pack   git's smart protocol, version 2
//! POST /plugins/<name>.git/git-upload-pack                     (and the same for /marketplace.git)
//! errors: {"code":"not_found","message":"...","errors":[{"code":"not-found","detail":"..."}]}
//! ```
//!
//! What a client can make the server spend, and where it is bounded:
//!
//! - **Connections** ([`listen`]): at most [`Limits::max_connections`] at
//!   once (more wait in the kernel's queue); a connection's request headers
//!   must arrive within [`Limits::header_timeout`] and fit in
//!   [`MAX_HEADER_BYTES`]; a client that stops reading its response for
//!   [`Limits::send_timeout`] is disconnected.
//! - **Request bodies** ([`api`]): nothing is read before the token, the
//!   declared size and, for a publish, a free upload slot are checked from
//!   the headers; a body must arrive in full within [`Limits::body_timeout`];
//!   JSON bodies are at most [`JSON_BODY_BYTES`], uploads at most the
//!   archive limit and their parts each at most their own limit; at most
//!   [`Limits::max_concurrent_uploads`] publishes hold an upload in memory,
//!   and the next ones wait for a slot with their bodies unread.
//! - **Responses** ([`files`]): archives are streamed from disk, never read
//!   whole. A git fetch ([`git`]) is streamed a pack at a time, from at
//!   most [`MAX_FETCH_BYTES`] of packs, and at most
//!   [`Limits::max_concurrent_fetches`] are answered at once.
//! - **Errors** ([`error`]): every error answer is typed JSON; a failure of
//!   the server itself answers a stable code and a generic sentence; its
//!   cause, which names the server's files, goes to the log only.
//! - **Log** ([`log`]): one line a request, once its response is sent.
//!
//! The layers, outermost first: the access log, the panic catcher (a panic
//! is a 500 and a log line, not a dropped connection), the typing of
//! untyped errors, the body limit, the routes.

mod api;
mod error;
mod files;
mod git;
mod limits;
mod listen;
mod log;

use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::middleware;
use axum::routing::{delete, get, post, put};
use tower_http::catch_panic::CatchPanicLayer;

pub use limits::{JSON_BODY_BYTES, Limits, MAX_HEADER_BYTES, MAX_HEADERS};
pub use listen::serve;

#[cfg(doc)]
use crate::marketplace::upload_pack::MAX_FETCH_BYTES;
use api::App;
use limits::MULTIPART_SLACK;

use crate::registry::Registry;

/// Builds the router for `registry`, logging each request (method, path,
/// status, bytes, time) to the `tracing` subscriber.
pub fn router(registry: Arc<Registry>, limits: Limits) -> Router {
    let body_limit = usize::try_from(registry.max_skill_bytes().saturating_add(MULTIPART_SLACK))
        .unwrap_or(usize::MAX);
    let app = Arc::new(App {
        registry,
        limits,
        uploads: Arc::new(tokio::sync::Semaphore::new(limits.max_concurrent_uploads)),
        fetches: Arc::new(tokio::sync::Semaphore::new(limits.max_concurrent_fetches)),
    });
    Router::new()
        .route("/api/v1/skills", put(api::publish))
        .route("/api/v1/skills/{name}/{version}/yank", delete(api::yank))
        .route("/api/v1/skills/{name}/{version}/unyank", put(api::unyank))
        .route(
            "/api/v1/skills/{name}/owners",
            get(api::owners).put(api::change_owners),
        )
        .route(
            "/api/v1/skills/{name}/keys",
            get(api::keys).put(api::change_keys),
        )
        .route("/api/v1/me", get(api::me))
        .route("/plugins/{repo}/info/refs", get(git::plugin_info_refs))
        .route(
            "/plugins/{repo}/git-upload-pack",
            post(git::plugin_upload_pack),
        )
        .route(
            "/marketplace.git/info/refs",
            get(git::marketplace_info_refs),
        )
        .route(
            "/marketplace.git/git-upload-pack",
            post(git::marketplace_upload_pack),
        )
        .fallback(files::static_file)
        // Only the multipart reader of a publish reads through this limit;
        // the JSON endpoints read through their own, smaller one.
        .layer(DefaultBodyLimit::max(body_limit))
        .layer(middleware::map_response(error::type_errors))
        .layer(CatchPanicLayer::custom(
            |panic: Box<dyn std::any::Any + Send>| error::panicked(&*panic),
        ))
        .layer(middleware::from_fn(log::access))
        .with_state(app)
}
