//! What a server lets a client, or many, make it spend: the [`Limits`] an
//! operator sets, and the fixed bounds beside them. Every part of the
//! server reads its bounds from here.

use std::time::Duration;

/// Room for the multipart framing and the small text parts around the tarball.
pub(super) const MULTIPART_SLACK: u64 = 64 * 1024;

/// The largest JSON body of the yank, owners and keys endpoints. Their
/// bodies are a reason or a few user names and keys: a few hundred bytes.
pub const JSON_BODY_BYTES: usize = 64 * 1024;

/// The largest request head (request line and headers). A request sends a
/// token and a handful of standard headers, well under 1 KiB; nginx's
/// default is 8 KiB a line.
pub const MAX_HEADER_BYTES: usize = 16 * 1024;

/// The most headers in a request.
pub const MAX_HEADERS: usize = 64;

/// How long a git fetch waits for a fetch slot
/// ([`Limits::max_concurrent_fetches`]) before it is answered 503 with
/// `Retry-After`: a fetch is over in a moment, so a short wait lets a
/// burst of clones through while a flood is turned away.
pub(super) const FETCH_WAIT: Duration = Duration::from_secs(5);

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
    /// The most git fetches (`command=fetch` of git's smart protocol)
    /// answered at once. Each holds a pack of the skill's repository in
    /// memory while it streams; one more waits up to [`FETCH_WAIT`] for a
    /// slot, then is answered 503 with `Retry-After`.
    pub max_concurrent_fetches: usize,
    /// How long a shutdown waits for the requests in flight to finish
    /// before it drops them.
    pub drain_timeout: Duration,
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
            // Each holds one pack of a few MiB at most (a version of a
            // skill) and a few side-band lines in flight.
            max_concurrent_fetches: 16,
            // Every request but an upload is answered within milliseconds;
            // an upload's body has the body timeout, which a restart does
            // not wait for in full.
            drain_timeout: Duration::from_secs(10),
        }
    }
}
