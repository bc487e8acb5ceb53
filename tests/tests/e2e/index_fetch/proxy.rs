//! A loopback HTTP/1.1 proxy in front of a real registry server (axum on
//! tokio, real sockets, keep-alive), for what the server's own log cannot
//! show: how many requests the client had in flight at once, over how many
//! connections, and with which `If-None-Match`. It can slow answers down, and
//! play a dishonest cache (a 304 for every conditional request, or an old
//! index file whatever the server has now).
//!
//! It runs on a thread of its own with its own runtime, and stops when
//! dropped.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use axum::serve::ListenerExt as _;

/// One request the proxy answered.
#[derive(Clone, Debug)]
pub(super) struct Seen {
    /// The path, with its leading `/`.
    pub(super) path: String,
    /// The `If-None-Match` the client sent, if any.
    pub(super) if_none_match: Option<String>,
    /// The status the client got.
    pub(super) status: u16,
}

type Delay = dyn Fn(&str) -> Duration + Send + Sync;

struct Shared {
    upstream: String,
    client: reqwest::Client,
    delay: Box<Delay>,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    connections: AtomicUsize,
    seen: Mutex<Vec<Seen>>,
    /// Answer 304 to every conditional request for an index file, without
    /// asking the server.
    lie_not_modified: AtomicBool,
    /// Serve these bodies for these paths, whatever the server has.
    frozen: Mutex<BTreeMap<String, Vec<u8>>>,
}

/// The proxy. Stops (its runtime shut down, its port closed) when dropped.
pub(super) struct Proxy {
    url: String,
    shared: Arc<Shared>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl std::fmt::Debug for Proxy {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "Proxy({})", self.url)
    }
}

impl Proxy {
    /// Starts a proxy to `upstream` (`http://127.0.0.1:PORT`) that holds
    /// each request for `delay(path)` before it forwards it.
    pub(super) fn start(
        upstream: &str,
        delay: impl Fn(&str) -> Duration + Send + Sync + 'static,
    ) -> Self {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind the proxy");
        listener
            .set_nonblocking(true)
            .expect("a non-blocking socket");
        let url = format!(
            "http://{}",
            listener.local_addr().expect("the proxy's address")
        );
        let shared = Arc::new(Shared {
            upstream: upstream.trim_end_matches('/').to_owned(),
            client: reqwest::Client::builder()
                .no_proxy()
                .build()
                .expect("an HTTP client"),
            delay: Box::new(delay),
            in_flight: AtomicUsize::new(0),
            max_in_flight: AtomicUsize::new(0),
            connections: AtomicUsize::new(0),
            seen: Mutex::new(Vec::new()),
            lie_not_modified: AtomicBool::new(false),
            frozen: Mutex::new(BTreeMap::new()),
        });
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let state = shared.clone();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("a runtime for the proxy");
            runtime.block_on(async move {
                let listener =
                    tokio::net::TcpListener::from_std(listener).expect("a tokio listener");
                let counted = state.clone();
                let listener = listener.tap_io(move |_| {
                    counted.connections.fetch_add(1, Ordering::SeqCst);
                });
                let app = axum::Router::new().fallback(forward).with_state(state);
                tokio::select! {
                    served = axum::serve(listener, app) => served.expect("the proxy serves"),
                    _ = stopped => {}
                }
            });
            runtime.shutdown_background();
        });
        Self {
            url,
            shared,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// Returns the base URL, `http://127.0.0.1:PORT`.
    pub(super) fn url(&self) -> &str {
        &self.url
    }

    /// Returns every request answered so far, in the order answered.
    pub(super) fn seen(&self) -> Vec<Seen> {
        self.shared.seen.lock().expect("requests").clone()
    }

    /// Returns the most requests that were being answered at once.
    pub(super) fn max_in_flight(&self) -> usize {
        self.shared.max_in_flight.load(Ordering::SeqCst)
    }

    /// Returns how many connections were accepted.
    pub(super) fn connections(&self) -> usize {
        self.shared.connections.load(Ordering::SeqCst)
    }

    /// Forgets what was counted so far.
    pub(super) fn reset(&self) {
        self.shared.seen.lock().expect("requests").clear();
        self.shared.max_in_flight.store(0, Ordering::SeqCst);
        self.shared.connections.store(0, Ordering::SeqCst);
    }

    /// Answers 304 to every conditional request for an index file, as a
    /// cache that claims the client's copy is current whatever it is.
    pub(super) fn lie_not_modified(&self, lie: bool) {
        self.shared.lie_not_modified.store(lie, Ordering::SeqCst);
    }

    /// Serves `body` at `path` (with its leading `/`) from now on, whatever
    /// the server has there.
    pub(super) fn freeze(&self, path: &str, body: Vec<u8>) {
        self.shared
            .frozen
            .lock()
            .expect("frozen files")
            .insert(path.to_owned(), body);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn forward(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let path = request.uri().path().to_owned();
    let target = request
        .uri()
        .path_and_query()
        .map_or_else(|| path.clone(), |target| target.as_str().to_owned());
    let condition = request
        .headers()
        .get(header::IF_NONE_MATCH)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    let authorization = request.headers().get(header::AUTHORIZATION).cloned();
    let now = shared.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    shared.max_in_flight.fetch_max(now, Ordering::SeqCst);
    tokio::time::sleep((shared.delay)(&path)).await;
    let frozen = shared
        .frozen
        .lock()
        .expect("frozen files")
        .get(&path)
        .cloned();
    let lie = shared.lie_not_modified.load(Ordering::SeqCst)
        && condition.is_some()
        && path.starts_with("/index/");
    let (status, etag, body) = if lie {
        (StatusCode::NOT_MODIFIED, condition.clone(), Vec::new())
    } else if let Some(body) = frozen {
        (StatusCode::OK, Some("\"frozen\"".to_owned()), body)
    } else {
        let mut upstream = shared.client.get(format!("{}{target}", shared.upstream));
        if let Some(condition) = &condition {
            upstream = upstream.header(header::IF_NONE_MATCH, condition);
        }
        if let Some(authorization) = authorization {
            upstream = upstream.header(header::AUTHORIZATION, authorization);
        }
        match upstream.send().await {
            Ok(answer) => {
                let status = answer.status();
                let etag = answer
                    .headers()
                    .get(header::ETAG)
                    .and_then(|value| value.to_str().ok())
                    .map(str::to_owned);
                let body = answer.bytes().await.map(|bytes| bytes.to_vec());
                match body {
                    Ok(body) => (status, etag, body),
                    Err(_) => (StatusCode::BAD_GATEWAY, None, Vec::new()),
                }
            }
            Err(_) => (StatusCode::BAD_GATEWAY, None, Vec::new()),
        }
    };
    shared.in_flight.fetch_sub(1, Ordering::SeqCst);
    shared.seen.lock().expect("requests").push(Seen {
        path,
        if_none_match: condition,
        status: status.as_u16(),
    });
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    if let Some(etag) = etag.and_then(|etag| HeaderValue::from_str(&etag).ok()) {
        response.headers_mut().insert(header::ETAG, etag);
    }
    response
}
