//! Accepting connections and serving HTTP/1.1 on them with hyper, within
//! the [`Limits`] on connections, header time and size, and stalled sends.
//!
//! `axum::serve` has no knobs for these (no header timeout, no limit on
//! connections), so this is the accept loop of axum's "serve with hyper"
//! example with them set: hyper's own header timeout, header size and
//! header count limits, a semaphore for connections, and a transport that
//! fails a write the client has not taken for the send timeout.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use hyper::rt::{Read, ReadBufCursor, Write};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;

use super::limits::{Limits, MAX_HEADER_BYTES, MAX_HEADERS};

/// The largest read buffer of a connection.
const READ_BUFFER_BYTES: usize = 64 * 1024;

/// Serves `router` on `listener` until `shutdown` completes, then stops
/// accepting and waits up to [`Limits::drain_timeout`] for the requests in
/// flight: each connection finishes the request it is serving and closes,
/// an idle one closes at once. Returns true if and only if every
/// connection closed in time.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    shutdown: impl Future<Output = ()>,
) -> bool {
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .max_header_size(MAX_HEADER_BYTES)
        .max_headers(MAX_HEADERS)
        // The read buffer of a connection (hyper's default lets it grow to
        // 400 KiB): what a crowd of uploads, honest or not, costs here.
        .max_buf_size(READ_BUFFER_BYTES);
    let connections = Arc::new(tokio::sync::Semaphore::new(limits.max_connections.max(1)));
    let graceful = GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        // A permit first, then the accept: past the limit, connections wait
        // in the kernel's queue, costing this process nothing.
        let permit = tokio::select! {
            permit = Arc::clone(&connections).acquire_owned() => {
                permit.expect("the semaphore is never closed")
            }
            () = &mut shutdown => break,
        };
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    accept_failed(&error).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let io = SendTimeout::new(TokioIo::new(stream), limits.send_timeout);
        let connection = http.serve_connection(io, TowerToHyperService::new(router.clone()));
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                // Header timeouts, resets, clients that stopped reading:
                // the client's doing, worth a line only when debugging.
                tracing::debug!(%error, "connection ended");
            }
            drop(permit);
        });
    }
    drop(listener);
    tracing::info!(
        connections = graceful.count(),
        "shutting down: no new connections; draining the open ones"
    );
    let drained = tokio::time::timeout(limits.drain_timeout, graceful.shutdown())
        .await
        .is_ok();
    if !drained {
        tracing::warn!(
            "stopped with requests still in flight after {} seconds",
            limits.drain_timeout.as_secs_f64()
        );
    }
    drained
}

/// Waits after a failed accept: at once for a connection that was reset
/// before it was accepted, a while for a shortage (of file descriptors,
/// say) that only time relieves.
async fn accept_failed(error: &io::Error) {
    use io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    if matches!(
        error.kind(),
        ConnectionAborted | ConnectionRefused | ConnectionReset
    ) {
        return;
    }
    tracing::error!(%error, "cannot accept a connection");
    tokio::time::sleep(Duration::from_secs(1)).await;
}

/// A transport whose writes fail once one has waited `timeout` for the
/// client to take the bytes (a client that stops reading a response, to hold
/// the connection). Reads pass through: the header and body timeouts bound
/// them.
struct SendTimeout<I> {
    io: I,
    timeout: Duration,
    /// Running while a write or flush is waiting.
    stalled: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl<I> SendTimeout<I> {
    fn new(io: I, timeout: Duration) -> Self {
        Self {
            io,
            timeout,
            stalled: None,
        }
    }

    /// Passes on a finished write; for a waiting one, starts or checks the
    /// clock.
    fn check<T>(
        &mut self,
        cx: &mut Context<'_>,
        result: Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>> {
        if result.is_ready() {
            self.stalled = None;
            return result;
        }
        let timeout = self.timeout;
        let stalled = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
        if stalled.as_mut().poll(cx).is_ready() {
            self.stalled = None;
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "the client took nothing of the response for {} seconds",
                    timeout.as_secs_f64()
                ),
            )));
        }
        Poll::Pending
    }
}

impl<I: Read + Unpin> Read for SendTimeout<I> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_read(cx, buf)
    }
}

impl<I: Write + Unpin> Write for SendTimeout<I> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let result = Pin::new(&mut this.io).poll_write(cx, buf);
        this.check(cx, result)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let result = Pin::new(&mut this.io).poll_write_vectored(cx, bufs);
        this.check(cx, result)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let result = Pin::new(&mut this.io).poll_flush(cx);
        this.check(cx, result)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let result = Pin::new(&mut this.io).poll_shutdown(cx);
        this.check(cx, result)
    }
}
