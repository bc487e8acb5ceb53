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
//! errors: {"errors":[{"code":"not-found","detail":"..."}]}
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
//!   whole.
//! - **Errors** ([`error`]): a failure of the server itself answers a stable
//!   code and a generic sentence; its cause, which names the server's files,
//!   goes to the log only.

mod api;
mod error;
mod files;
mod listen;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{delete, get, put};
use tower_http::trace::{DefaultMakeSpan, DefaultOnFailure, DefaultOnResponse, TraceLayer};
use tracing::Level;

pub use listen::serve;

use crate::registry::Registry;

/// Room for the multipart framing and the small text parts around the tarball.
const MULTIPART_SLACK: u64 = 64 * 1024;

/// The largest JSON body of the yank, owners and keys endpoints. Their
/// bodies are a reason or a few user names and keys: a few hundred bytes.
pub const JSON_BODY_BYTES: usize = 64 * 1024;

/// The largest request head (request line and headers). A request sends a
/// token and a handful of standard headers, well under 1 KiB; nginx's
/// default is 8 KiB a line.
pub const MAX_HEADER_BYTES: usize = 16 * 1024;

/// The most headers in a request.
pub const MAX_HEADERS: usize = 64;

/// How a server bounds what clients can make it spend.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// How long a client has to send a request's headers, from the moment
    /// its connection is accepted or the previous response was sent. A
    /// connection that has not sent them in time is closed (slowloris).
    pub header_timeout: Duration,
    /// How long a request body may take to arrive in full. A slower body
    /// is answered 408 and its connection closed.
    pub body_timeout: Duration,
    /// How long a response may wait for the client to read it. A client
    /// that stops reading for this long is disconnected.
    pub send_timeout: Duration,
    /// The most connections served at once; further ones wait in the
    /// kernel's accept queue until one closes.
    pub max_connections: usize,
    /// The most publishes being received or checked at once. One more
    /// waits for a slot, its body unread, and is answered 503 with
    /// `Retry-After` if none comes free within [`Limits::upload_wait`].
    pub max_concurrent_uploads: usize,
    /// How long a publish waits for an upload slot.
    pub upload_wait: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            header_timeout: Duration::from_secs(10),
            // An 8 MiB archive in two minutes is 70 KB/s: any real link.
            body_timeout: Duration::from_secs(120),
            send_timeout: Duration::from_secs(30),
            // Below the usual limit of 1024 open files a process.
            max_connections: 512,
            // Each holds up to an archive and its unpacked copy: with the
            // 8 MiB default, four are 64 MiB at most.
            max_concurrent_uploads: 4,
            // A burst of honest publishes (a CI matrix) queues through; a
            // flood is turned away while each waiter costs a connection.
            upload_wait: Duration::from_secs(10),
        }
    }
}

/// What the handlers share.
#[derive(Debug)]
struct App {
    registry: Arc<Registry>,
    limits: Limits,
    /// One permit a publish being received or checked.
    uploads: Arc<tokio::sync::Semaphore>,
}

/// Builds the router for `registry`, logging each request (method, path,
/// status, time) to the `tracing` subscriber.
pub fn router(registry: Arc<Registry>, limits: Limits) -> Router {
    let body_limit = usize::try_from(registry.max_skill_bytes().saturating_add(MULTIPART_SLACK))
        .unwrap_or(usize::MAX);
    let app = Arc::new(App {
        registry,
        limits,
        uploads: Arc::new(tokio::sync::Semaphore::new(limits.max_concurrent_uploads)),
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
        .fallback(files::static_file)
        // Only the multipart reader of a publish reads through this limit;
        // the JSON endpoints read through their own, smaller one.
        .layer(DefaultBodyLimit::max(body_limit))
        .layer(
            TraceLayer::new_for_http()
                .make_span_with(DefaultMakeSpan::new().level(Level::INFO))
                .on_request(())
                .on_response(DefaultOnResponse::new().level(Level::INFO))
                .on_failure(DefaultOnFailure::new().level(Level::WARN)),
        )
        .with_state(app)
}
