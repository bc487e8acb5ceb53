//! The only way out of a run whose skill lists hosts in
//! `permissions.network.outbound`: an HTTP proxy the server runs outside
//! the sandbox on a UNIX socket that is bound into the run. Inside, the
//! run's network namespace has nothing but loopback, so MPTCP, Fast Open,
//! UDP, DNS and every socket family not thought of have nowhere to go; the
//! launcher relays `127.0.0.1:<port>` to the socket and the run's
//! `HTTP_PROXY`/`HTTPS_PROXY` point there.
//!
//! The proxy speaks `CONNECT host:port` (HTTPS and any TLS) and plain HTTP
//! requests in absolute form (`GET http://host/path`), and connects only
//! to the hosts and ports the skill lists; it resolves names itself, so
//! DNS for any other name fails. A refusal is a `403` whose body names the
//! host and the permission, and a note on the run's result.
//!
//! The request head is parsed by `httparse` (hyper's parser), bounded in
//! size and time; after the head the bytes are copied both ways unread.

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpStream, UnixListener, UnixStream};

use crate::runtime::sandbox::split_host_port;

/// The largest request head read.
const MAX_HEAD: usize = 16 * 1024;
/// How long a client may take to send its head, and a host to accept.
const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections one run may hold open at once.
const MAX_CONNECTIONS: usize = 64;

/// Hosts and ports a run may reach.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Allow {
    entries: Vec<Entry>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Entry {
    /// Lowercase, without a trailing dot; `*.example.com` matches any
    /// name below `example.com` (not the name itself); `*` matches all.
    host: String,
    /// `None`: any port.
    port: Option<u16>,
}

impl Allow {
    /// Reads `network.outbound` entries: `host`, `host:port`, `*.domain`,
    /// `[v6]:port`, `*`.
    pub fn parse(outbound: &[String]) -> Self {
        let entries = outbound
            .iter()
            .filter_map(|entry| {
                let entry = entry.trim();
                let (host, port) = split_host_port(entry);
                let host = normalise(host);
                (!host.is_empty()).then_some(Entry { host, port })
            })
            .collect();
        Self { entries }
    }

    /// Whether `host:port` may be reached.
    pub fn permits(&self, host: &str, port: u16) -> bool {
        let host = normalise(host);
        self.entries.iter().any(|entry| {
            entry.port.is_none_or(|allowed| allowed == port)
                && (entry.host == "*"
                    || entry.host == host
                    || entry.host.strip_prefix("*.").is_some_and(|domain| {
                        host.len() > domain.len() + 1
                            && host.ends_with(domain)
                            && host.as_bytes()[host.len() - domain.len() - 1] == b'.'
                    }))
        })
    }
}

fn normalise(host: &str) -> String {
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .trim_end_matches('.')
        .to_ascii_lowercase()
}

/// A running proxy for one run; stops when dropped.
#[derive(Debug)]
pub struct Proxy {
    path: PathBuf,
    task: tokio::task::JoinHandle<()>,
    refused: Arc<Mutex<Vec<String>>>,
}

impl Proxy {
    /// Listens on a new UNIX socket at `path`.
    pub fn start(path: &Path, allow: Allow) -> std::io::Result<Self> {
        let listener = UnixListener::bind(path)?;
        let refused = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&refused);
        let allow = Arc::new(allow);
        let open = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let Ok(permit) = Arc::clone(&open).acquire_owned().await else {
                    return;
                };
                let allow = Arc::clone(&allow);
                let seen = Arc::clone(&seen);
                tokio::spawn(async move {
                    if let Err(Refused(target)) = serve(stream, &allow).await
                        && let Ok(mut seen) = seen.lock()
                        && seen.len() < 20
                        && !seen.contains(&target)
                    {
                        seen.push(target);
                    }
                    drop(permit);
                });
            }
        });
        Ok(Self {
            path: path.to_path_buf(),
            task,
            refused,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The hosts the run tried and was refused, for the run's notes.
    pub fn refused(&self) -> Vec<String> {
        self.refused
            .lock()
            .map(|seen| seen.clone())
            .unwrap_or_default()
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A connection refused: `host:port`.
struct Refused(String);

async fn serve(mut client: UnixStream, allow: &Allow) -> Result<(), Refused> {
    let Ok(Some((head, rest))) = tokio::time::timeout(HEAD_TIMEOUT, read_head(&mut client))
        .await
        .map(Result::ok)
        .map(Option::flatten)
    else {
        let _ = answer(&mut client, 400, "the proxy could not read a request head").await;
        return Ok(());
    };
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut request = httparse::Request::new(&mut headers);
    if !matches!(request.parse(&head), Ok(httparse::Status::Complete(_))) {
        let _ = answer(&mut client, 400, "the proxy could not parse the request").await;
        return Ok(());
    }
    let (Some(method), Some(target)) = (request.method, request.path) else {
        return Ok(());
    };
    let (host, port, forward) = if method.eq_ignore_ascii_case("CONNECT") {
        let (host, port) = split_host_port(target);
        let Some(port) = port else {
            let _ = answer(&mut client, 400, "CONNECT needs host:port").await;
            return Ok(());
        };
        (normalise(host), port, None)
    } else {
        let Ok(url) = url::Url::parse(target) else {
            let _ = answer(
                &mut client,
                400,
                "only absolute http:// requests and CONNECT go through this proxy",
            )
            .await;
            return Ok(());
        };
        let (Some(host), Some(port)) = (url.host_str(), url.port_or_known_default()) else {
            return Ok(());
        };
        if url.scheme() != "http" {
            let _ = answer(&mut client, 400, "use CONNECT for anything but http://").await;
            return Ok(());
        }
        let mut origin = url.path().to_owned();
        if let Some(query) = url.query() {
            origin.push('?');
            origin.push_str(query);
        }
        let mut head_out = format!("{method} {origin} HTTP/1.1\r\n");
        for header in request.headers.iter() {
            if header.name.to_ascii_lowercase().starts_with("proxy-") {
                continue;
            }
            head_out.push_str(header.name);
            head_out.push_str(": ");
            head_out.push_str(&String::from_utf8_lossy(header.value));
            head_out.push_str("\r\n");
        }
        head_out.push_str("\r\n");
        (normalise(host), port, Some(head_out))
    };
    if !allow.permits(&host, port) {
        let _ = answer(
            &mut client,
            403,
            &format!("skillpkg: {host}:{port} is not in the skill's permissions.network.outbound"),
        )
        .await;
        return Err(Refused(format!("{host}:{port}")));
    }
    let addresses: Vec<SocketAddr> = match host.parse::<IpAddr>() {
        Ok(ip) => vec![SocketAddr::new(ip, port)],
        Err(_) => {
            let resolved = tokio::time::timeout(
                CONNECT_TIMEOUT,
                tokio::net::lookup_host((host.as_str(), port)),
            )
            .await;
            let Ok(Ok(resolved)) = resolved else {
                let _ = answer(
                    &mut client,
                    502,
                    &format!("skillpkg: cannot resolve {host}"),
                )
                .await;
                return Ok(());
            };
            // A listed name must not lead to this machine or its link:
            // `localhost` says so; any other name that does is a way in
            // the permissions do not show.
            resolved
                .filter(|address| host == "localhost" || !is_local(address.ip()))
                .collect()
        }
    };
    if addresses.is_empty() {
        let _ = answer(
            &mut client,
            403,
            &format!("skillpkg: {host} resolves only to local addresses; list the address itself"),
        )
        .await;
        return Err(Refused(format!("{host}:{port}")));
    }
    let Ok(Ok(mut upstream)) =
        tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(&addresses[..])).await
    else {
        let _ = answer(
            &mut client,
            502,
            &format!("skillpkg: cannot reach {host}:{port}"),
        )
        .await;
        return Ok(());
    };
    let sent = match forward {
        None => {
            client
                .write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")
                .await
        }
        Some(head) => upstream.write_all(head.as_bytes()).await,
    };
    if sent.is_err() || upstream.write_all(&rest).await.is_err() {
        return Ok(());
    }
    let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
    Ok(())
}

/// Loopback, link-local (cloud metadata lives there), unspecified.
fn is_local(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(ip) => ip.is_loopback() || ip.is_link_local() || ip.is_unspecified(),
        IpAddr::V6(ip) => {
            ip.is_loopback()
                || ip.is_unspecified()
                || ip.is_unicast_link_local()
                || ip
                    .to_ipv4_mapped()
                    .is_some_and(|ip| is_local(IpAddr::V4(ip)))
        }
    }
}

/// Reads up to the end of the head; returns it and what came after.
async fn read_head(client: &mut UnixStream) -> std::io::Result<Option<(Vec<u8>, Vec<u8>)>> {
    let mut buffer = Vec::with_capacity(1024);
    let mut chunk = [0; 4096];
    loop {
        let read = client.read(&mut chunk).await?;
        if read == 0 {
            return Ok(None);
        }
        buffer.extend_from_slice(&chunk[..read]);
        if let Some(end) = buffer.windows(4).position(|window| window == b"\r\n\r\n") {
            let rest = buffer.split_off(end + 4);
            return Ok(Some((buffer, rest)));
        }
        if buffer.len() > MAX_HEAD {
            return Ok(None);
        }
    }
}

async fn answer(client: &mut UnixStream, status: u16, text: &str) -> std::io::Result<()> {
    let reason = match status {
        400 => "Bad Request",
        403 => "Forbidden",
        _ => "Bad Gateway",
    };
    let body = format!("{text}\n");
    let head = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    client.write_all(head.as_bytes()).await?;
    client.write_all(body.as_bytes()).await?;
    client.shutdown().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_match_exactly_by_port_or_below_a_wildcard_domain() {
        let allow = Allow::parse(&[
            "api.example.com:443".into(),
            "*.cdn.example.org".into(),
            "Files.Example.NET".into(),
            "[::1]:8080".into(),
        ]);
        assert!(allow.permits("api.example.com", 443));
        assert!(allow.permits("API.example.com.", 443));
        assert!(!allow.permits("api.example.com", 80));
        assert!(!allow.permits("evil-api.example.com", 443));
        assert!(!allow.permits("api.example.com.evil.net", 443));
        assert!(allow.permits("a.b.cdn.example.org", 1));
        assert!(!allow.permits("cdn.example.org", 443));
        assert!(!allow.permits("xcdn.example.org", 443));
        assert!(allow.permits("files.example.net", 22));
        assert!(allow.permits("::1", 8080));
        assert!(!allow.permits("127.0.0.1", 8080));
        assert!(Allow::parse(&["*".into()]).permits("anything.at.all", 9));
        assert!(!Allow::default().permits("example.com", 443));
    }
}
