//! Every HTTP request the client makes, and the one place that follows
//! redirects and decides, hop by hop, whether the token goes along.
//!
//! ```text
//! GET url ─> 301/302/303/307/308 + Location ─> GET hop 1 ─> ... ─> the answer
//!     │                                         │
//!     └ token iff every URL so far ─────────────┘  (at most 10 hops, no loop,
//!       has the token's origin                      http(s) only, never https -> http)
//! ```
//!
//! reqwest follows no redirect itself ([`reqwest::redirect::Policy::none`]):
//! its own policy compares only the last two URLs of a chain, and the
//! redirect layer beneath it re-applies the first request's headers on
//! every hop, so a registry that redirected to another origin that
//! redirected to itself got the token sent there. Here the token is bound
//! to an origin (scheme, host and port: `127.0.0.1:8080`, `localhost:8080`
//! and `127.0.0.1:8081` are three) and goes only with a request whose whole
//! chain stayed in it; see [`token_may_go`].
//!
//! API calls (publish, yank, login) follow no redirect at all, as cargo's
//! registry API client (curl, which follows none unless told to) does not:
//! a 3xx answer to one is an error naming where it pointed, and neither the
//! request, its body, nor the token goes there.
//!
//! Every body is read with a cap ([`Limit`]): a registry, hostile or broken,
//! cannot make the client hold more than the cap of the file it asked for.
//! A read that gets nothing for [`DEFAULT_READ_TIMEOUT`] (or
//! `SKILLPKG_HTTP_TIMEOUT` seconds) is given up. Compression is off (no
//! `Accept-Encoding`), so there is nothing to inflate.

use std::time::Duration;

use anyhow::Context as _;
use reqwest::StatusCode;
use url::{Origin, Url};

use super::error::RedirectProblem;
use super::{RegistryError, redacted};
use crate::client::token::Token;
use crate::error::UserError;

/// The User-Agent of every request.
const USER_AGENT: &str = concat!("skillpkg/", env!("CARGO_PKG_VERSION"));
/// How long to wait for a connection: a registry that does not answer in
/// this time is down or unreachable, and a user should hear so quickly.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long one request may take in all: enough to upload the largest
/// allowed archive (8 MiB by default) over a slow link. It also bounds a
/// server that sends a byte just often enough to beat the read timeout.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(120);
/// How long a read may wait for the server's next bytes (headers or body)
/// before the request is given up: a stalled server must not hold a command
/// for [`REQUEST_TIMEOUT`] per try.
const DEFAULT_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// How many redirects one request may follow.
pub(super) const MAX_REDIRECTS: usize = 10;

/// The most `config.json`, `timestamp.json`, an `N.root.json` or an API
/// answer may hold. Each is a few hundred bytes; a mebibyte is room for
/// hundreds of keys and signatures.
pub(super) const MAX_DOCUMENT_BYTES: u64 = 1 << 20;
/// The most an index file, `snapshot.json`, `search.json`, a keys file, a
/// signature or a provenance file may hold. The largest of these grow with
/// the registry (`search.json` and `snapshot.json` list every skill):
/// 64 MiB is hundreds of thousands of skills, and far more than an index
/// file of any one skill's versions needs.
pub(super) const MAX_TREE_FILE_BYTES: u64 = 64 << 20;
/// The most an archive may hold whatever `max-skill-bytes` a registry
/// claims (its default is 8 MiB): the registry's word bounds what it
/// accepts, not what a client it serves must be willing to hold in memory.
pub(super) const MAX_ARCHIVE_BYTES: u64 = 256 << 20;

/// Which cap a body is read under, for the message when it is passed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Limit {
    /// The registry's own `max-skill-bytes`.
    Registry(u64),
    /// One of this client's caps.
    Client(u64),
}

impl Limit {
    pub(super) fn bytes(self) -> u64 {
        match self {
            Self::Registry(bytes) | Self::Client(bytes) => bytes,
        }
    }

    /// The error for a body of `url` that is larger than this limit.
    fn passed(self, url: &Url, token: Option<&Token>) -> RegistryError {
        let url = shown(url, token);
        match self {
            Self::Registry(limit) => RegistryError::TooLarge { url, limit },
            Self::Client(limit) => RegistryError::OverCap { url, limit },
        }
    }
}

/// A token, and the origin it may be sent to: the origin of the URL it was
/// configured for.
#[derive(Clone, Copy, Debug)]
pub(super) struct Bearer<'a> {
    token: &'a Token,
    origin: &'a Origin,
}

impl<'a> Bearer<'a> {
    pub(super) fn new(token: &'a Token, origin: &'a Origin) -> Self {
        Self { token, origin }
    }

    /// Returns the token, for scrubbing it from messages.
    pub(super) fn token(self) -> &'a Token {
        self.token
    }
}

/// Returns true if and only if the token of `origin` may go with the request
/// for the last URL of `chain` (the first request, then each hop): every URL
/// of the chain has that origin.
///
/// Bound to the origin, and to the whole chain rather than the last hop:
/// once a hop left the origin, every later hop was chosen by a server the
/// token was never given to. Even a hop that comes back is not trusted with
/// it, since that server picked its path (and, with 307 or 308, would have
/// the method and body replayed there), and a registry that really moved
/// is configured at its new URL instead.
pub(super) fn token_may_go(origin: &Origin, chain: &[Url]) -> bool {
    // A `file:` URL's origin is opaque, and equal to no other: no token.
    chain.iter().all(|url| url.origin() == *origin)
}

/// Returns true if and only if `status` is a redirect that names where to go
/// (`304 Not Modified` and `300 Multiple Choices` are answers).
pub(super) fn is_redirect(status: StatusCode) -> bool {
    matches!(status.as_u16(), 301 | 302 | 303 | 307 | 308)
}

/// Why a redirect was not followed, with the URLs it concerns.
#[derive(Debug, PartialEq, Eq)]
enum Refusal {
    TooMany,
    NoLocation,
    BadLocation(String),
    Scheme(Url),
    Downgrade(Url),
    Loop(Url),
}

impl Refusal {
    fn shown(self, token: Option<&Token>) -> RedirectProblem {
        match self {
            Self::TooMany => RedirectProblem::TooMany { max: MAX_REDIRECTS },
            Self::NoLocation => RedirectProblem::NoLocation,
            Self::BadLocation(location) => RedirectProblem::BadLocation {
                location: scrubbed(location, token),
            },
            Self::Scheme(to) => RedirectProblem::Scheme {
                to: shown(&to, token),
            },
            Self::Downgrade(to) => RedirectProblem::Downgrade {
                to: shown(&to, token),
            },
            Self::Loop(to) => RedirectProblem::Loop {
                to: shown(&to, token),
            },
        }
    }
}

/// Decides where the redirect that the last URL of `chain` answered with
/// goes: a URL to request next, or why not. Only http and https; never from
/// https down to http, which would expose the request (and any token) on the
/// network; never back to a URL of the chain; at most [`MAX_REDIRECTS`].
fn next_hop(chain: &[Url], location: Option<&[u8]>) -> Result<Url, Refusal> {
    let current = chain.last().expect("a chain starts with the first URL");
    if chain.len() > MAX_REDIRECTS {
        return Err(Refusal::TooMany);
    }
    let location = location.ok_or(Refusal::NoLocation)?;
    let bad_location = || {
        let text: String = String::from_utf8_lossy(location)
            .chars()
            .take(200)
            .collect();
        // Escaped: a header is the server's bytes, not text for a terminal.
        Refusal::BadLocation(text.escape_debug().to_string())
    };
    let text = std::str::from_utf8(location).map_err(|_| bad_location())?;
    let mut next = current.join(text).map_err(|_| bad_location())?;
    next.set_fragment(None);
    if !matches!(next.scheme(), "http" | "https") {
        return Err(Refusal::Scheme(next));
    }
    if current.scheme() == "https" && next.scheme() == "http" {
        return Err(Refusal::Downgrade(next));
    }
    if chain.contains(&next) {
        return Err(Refusal::Loop(next));
    }
    Ok(next)
}

/// Returns where a redirect answered to a request for `from` points, as it
/// may be shown (for the error of an API call, which follows none).
pub(super) fn shown_location(from: &Url, location: Option<&[u8]>, token: Option<&Token>) -> String {
    match next_hop(std::slice::from_ref(from), location) {
        Ok(to) | Err(Refusal::Scheme(to) | Refusal::Downgrade(to) | Refusal::Loop(to)) => {
            shown(&to, token)
        }
        Err(Refusal::BadLocation(text)) => format!("\"{}\"", scrubbed(text, token)),
        Err(Refusal::NoLocation | Refusal::TooMany) => "nowhere (no Location header)".into(),
    }
}

/// Returns `url` as it may be shown: user information redacted, and the
/// token, if it appears anywhere in it (a registry can echo it into a
/// `Location`), replaced by `****`.
pub(super) fn shown(url: &Url, token: Option<&Token>) -> String {
    scrubbed(redacted(url), token)
}

/// Returns `text` with every occurrence of the token replaced by `****`.
fn scrubbed(text: String, token: Option<&Token>) -> String {
    match token {
        Some(token) if text.contains(token.expose()) => text.replace(token.expose(), "****"),
        _ => text,
    }
}

/// What a GET ended with: the answer of its last hop.
#[derive(Debug)]
pub(super) struct Answer {
    pub(super) response: reqwest::Response,
    /// The URL that answered (the last hop).
    pub(super) url: Url,
    /// True if and only if there was a token for the request and it was not
    /// sent to the last hop, because the chain left the token's origin.
    pub(super) token_withheld: bool,
}

/// The HTTP clients of one registry.
#[derive(Debug)]
pub(super) struct Http {
    /// For reads of the tree.
    client: reqwest::Client,
    /// For API calls: without the read timeout, which reqwest counts from
    /// the start of a request to its answer's headers, so that it would cut
    /// off the upload of a publish that takes longer on a slow link. The
    /// overall timeout bounds them, and they are not retried.
    api: reqwest::Client,
    read_timeout: Duration,
}

impl Http {
    /// Builds the client, with the read timeout from `SKILLPKG_HTTP_TIMEOUT`
    /// when it is set.
    pub(super) fn new() -> anyhow::Result<Self> {
        let read_timeout = read_timeout_setting()?;
        let builder = || {
            reqwest::Client::builder()
                // The Mozilla roots compiled in (webpki-roots), never the
                // system's: the same trust on every machine, and no reading
                // of hundreds of certificate files at every start, which a
                // dependency of the workspace (object_store) would otherwise
                // switch on for every reqwest client through Cargo's
                // feature unification.
                .tls_built_in_native_certs(false)
                .user_agent(USER_AGENT)
                .connect_timeout(CONNECT_TIMEOUT)
                .timeout(REQUEST_TIMEOUT.max(read_timeout))
                .redirect(reqwest::redirect::Policy::none())
        };
        let client = builder()
            .read_timeout(read_timeout)
            .build()
            .context("cannot set up the HTTP client")?;
        let api = builder().build().context("cannot set up the HTTP client")?;
        Ok(Self {
            client,
            api,
            read_timeout,
        })
    }

    /// Returns the client for API calls, which follows no redirect.
    pub(super) fn api(&self) -> &reqwest::Client {
        &self.api
    }

    /// GETs `url`, following redirects, with `bearer`'s token on each hop
    /// that [`token_may_go`] allows, and `If-None-Match: etag` when given.
    pub(super) async fn get(
        &self,
        url: &Url,
        bearer: Option<Bearer<'_>>,
        etag: Option<&str>,
    ) -> Result<Answer, RegistryError> {
        let token = bearer.map(|bearer| bearer.token);
        let mut chain = vec![url.clone()];
        loop {
            let hop = chain.last().expect("the chain has the first URL").clone();
            let mut request = self.client.get(hop.clone());
            let attached = bearer.filter(|bearer| token_may_go(bearer.origin, &chain));
            if let Some(bearer) = attached {
                request = request.bearer_auth(bearer.token.expose());
            }
            if let Some(etag) = etag {
                request = request.header(reqwest::header::IF_NONE_MATCH, etag);
            }
            let started = std::time::Instant::now();
            let response = request
                .send()
                .await
                .map_err(|source| self.failed(url, &hop, token, source))?;
            tracing::info!(
                url = %shown(&hop, token),
                status = response.status().as_u16(),
                ms = started.elapsed().as_millis() as u64,
                "GET"
            );
            if !is_redirect(response.status()) {
                return Ok(Answer {
                    response,
                    url: hop,
                    token_withheld: bearer.is_some() && attached.is_none(),
                });
            }
            let location = response
                .headers()
                .get(reqwest::header::LOCATION)
                .map(reqwest::header::HeaderValue::as_bytes);
            let next = next_hop(&chain, location).map_err(|refusal| RegistryError::Redirect {
                url: shown(url, token),
                problem: refusal.shown(token),
            })?;
            chain.push(next);
        }
    }

    /// The error for a request of `url` that failed at `hop` (the same URL
    /// when it failed before any redirect): a timeout, or a network error.
    pub(super) fn failed(
        &self,
        url: &Url,
        hop: &Url,
        token: Option<&Token>,
        source: reqwest::Error,
    ) -> RegistryError {
        let url = if hop == url {
            shown(url, token)
        } else {
            format!(
                "{} (where {} redirected)",
                shown(hop, token),
                shown(url, token)
            )
        };
        // reqwest's message repeats the URL unredacted; ours names it.
        let source = source.without_url();
        if source.is_timeout() {
            RegistryError::Timeout {
                url,
                seconds: self.read_timeout.as_secs(),
                source,
            }
        } else {
            RegistryError::Network { url, source }
        }
    }

    /// Reads the body of `response` (the answer to a request for `url`),
    /// stopping as soon as it passes `limit`, and hands each chunk to
    /// `each` as it arrives.
    pub(super) async fn body(
        &self,
        mut response: reqwest::Response,
        url: &Url,
        token: Option<&Token>,
        limit: Limit,
        mut each: impl FnMut(&[u8]),
    ) -> Result<Vec<u8>, RegistryError> {
        // A declared length past the cap is refused before any of the body.
        if response
            .content_length()
            .is_some_and(|length| length > limit.bytes())
        {
            return Err(limit.passed(url, token));
        }
        let mut bytes = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|source| self.failed(url, url, token, source))?
        {
            if (bytes.len() + chunk.len()) as u64 > limit.bytes() {
                return Err(limit.passed(url, token));
            }
            each(&chunk);
            bytes.extend_from_slice(&chunk);
        }
        Ok(bytes)
    }
}

/// Reads the local file of a `file:` URL of a registry, under `limit`;
/// `None` when it does not exist.
pub(super) fn read_local(url: &Url, limit: Limit) -> Result<Option<Vec<u8>>, RegistryError> {
    use std::io::Read as _;
    // `RegistryUrl` admits only local file URLs, and `Registry::resolve`
    // only local ones for absolute URLs.
    let Ok(path) = url.to_file_path() else {
        return Err(RegistryError::File {
            path: url.path().into(),
            source: std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a local file URL"),
        });
    };
    tracing::debug!(path = %path.display(), "read");
    let file = match fs_err::File::open(&path) {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(RegistryError::File { path, source }),
    };
    // `take` rather than the file's length: a device or a FIFO has none.
    let mut bytes = Vec::new();
    file.take(limit.bytes() + 1)
        .read_to_end(&mut bytes)
        .map_err(|source| RegistryError::File {
            path: path.clone(),
            source,
        })?;
    if bytes.len() as u64 > limit.bytes() {
        return Err(limit.passed(url, None));
    }
    Ok(Some(bytes))
}

/// The read timeout: `SKILLPKG_HTTP_TIMEOUT` seconds, else
/// [`DEFAULT_READ_TIMEOUT`].
fn read_timeout_setting() -> anyhow::Result<Duration> {
    let variable = crate::env_vars::SKILLPKG_HTTP_TIMEOUT;
    let Some(value) = std::env::var_os(variable).filter(|value| !value.is_empty()) else {
        return Ok(DEFAULT_READ_TIMEOUT);
    };
    let value = value.to_string_lossy();
    match value.trim().parse::<u64>() {
        Ok(seconds) if seconds > 0 => Ok(Duration::from_secs(seconds)),
        _ => Err(UserError::new(format!(
            "{variable} is `{}`, not a whole number of seconds above 0",
            value.escape_debug()
        ))
        .with_hint(format!(
            "set {variable} to how many seconds to wait for a registry's next bytes (the default is {}), or unset it",
            DEFAULT_READ_TIMEOUT.as_secs()
        ))
        .into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(text: &str) -> Url {
        Url::parse(text).unwrap()
    }

    fn hop(chain: &[&str], location: &str) -> Result<Url, Refusal> {
        let chain: Vec<Url> = chain.iter().map(|text| url(text)).collect();
        next_hop(&chain, Some(location.as_bytes()))
    }

    #[test]
    fn the_token_goes_only_along_a_chain_that_never_left_its_origin() {
        let origin = url("http://127.0.0.1:8080/registry/").origin();
        let chain = |urls: &[&str]| urls.iter().map(|text| url(text)).collect::<Vec<_>>();
        assert!(token_may_go(&origin, &chain(&["http://127.0.0.1:8080/a"])));
        assert!(token_may_go(
            &origin,
            &chain(&[
                "http://127.0.0.1:8080/a",
                "http://127.0.0.1:8080/b",
                "http://127.0.0.1:8080/c"
            ])
        ));
        for other in [
            "http://localhost:8080/a",
            "http://127.0.0.1:8081/a",
            "https://127.0.0.1:8080/a",
            "http://[::1]:8080/a",
            "file:///srv/tree/a",
        ] {
            assert!(!token_may_go(&origin, &chain(&[other])), "{other}");
            // Once left, never again, even back at the origin.
            assert!(
                !token_may_go(
                    &origin,
                    &chain(&["http://127.0.0.1:8080/a", other, "http://127.0.0.1:8080/b"])
                ),
                "{other}"
            );
        }
        // The default port is the same origin written either way.
        let https = url("https://skills.example/").origin();
        assert!(token_may_go(
            &https,
            &chain(&["https://SKILLS.example:443/x"])
        ));
    }

    #[test]
    fn redirects_never_go_from_https_down_to_http() {
        assert_eq!(
            hop(
                &["https://skills.example/index/1/a"],
                "http://skills.example/index/1/a"
            ),
            Err(Refusal::Downgrade(url("http://skills.example/index/1/a")))
        );
        assert!(matches!(
            hop(&["https://skills.example/x"], "http://cdn.example/x"),
            Err(Refusal::Downgrade(_))
        ));
        assert!(hop(&["https://skills.example/x"], "https://cdn.example/x").is_ok());
        assert!(hop(&["http://127.0.0.1:1/x"], "https://127.0.0.1:2/x").is_ok());
        assert!(hop(&["http://127.0.0.1:1/x"], "http://127.0.0.1:2/x").is_ok());
        // An upgrade earlier in the chain does not license a downgrade later.
        assert!(matches!(
            hop(
                &["http://a.example/x", "https://a.example/x"],
                "http://b.example/x"
            ),
            Err(Refusal::Downgrade(_))
        ));
    }

    #[test]
    fn redirects_go_to_http_and_https_only() {
        for location in [
            "file:///etc/passwd",
            "ftp://a.example/x",
            "data:,{}",
            "javascript:alert(1)",
        ] {
            assert!(
                matches!(
                    hop(&["http://a.example/x"], location),
                    Err(Refusal::Scheme(_))
                ),
                "{location}"
            );
        }
    }

    #[test]
    fn relative_locations_resolve_against_the_hop_that_sent_them() {
        assert_eq!(
            hop(
                &["http://a.example/r/index/x", "http://b.example/cdn/x"],
                "../y"
            ),
            Ok(url("http://b.example/y"))
        );
        assert_eq!(
            hop(&["http://a.example/x"], "//b.example/y#fragment"),
            Ok(url("http://b.example/y"))
        );
    }

    #[test]
    fn loops_and_long_chains_are_refused() {
        assert_eq!(
            hop(&["http://a.example/x"], "/x#again"),
            Err(Refusal::Loop(url("http://a.example/x")))
        );
        assert_eq!(
            hop(
                &["http://a.example/x", "http://b.example/y"],
                "http://a.example/x"
            ),
            Err(Refusal::Loop(url("http://a.example/x")))
        );
        let long: Vec<String> = (0..=MAX_REDIRECTS)
            .map(|hop| format!("http://a.example/{hop}"))
            .collect();
        let long: Vec<&str> = long.iter().map(String::as_str).collect();
        assert_eq!(hop(&long, "/next"), Err(Refusal::TooMany));
        assert!(hop(&long[..MAX_REDIRECTS], "/next").is_ok());
    }

    #[test]
    fn a_missing_or_unreadable_location_is_refused_and_shown_escaped() {
        let chain = [url("http://a.example/x")];
        assert_eq!(next_hop(&chain, None), Err(Refusal::NoLocation));
        assert_eq!(
            next_hop(&chain, Some(b"http://[::1\x9b2J")),
            Err(Refusal::BadLocation("http://[::1\u{fffd}2J".into()))
        );
        let Err(Refusal::BadLocation(shown)) =
            next_hop(&chain, Some("http://[\u{1b}]0;x\u{7}".as_bytes()))
        else {
            panic!("not refused");
        };
        assert!(!shown.chars().any(char::is_control), "{shown}");
    }

    #[test]
    fn the_token_never_shows_in_a_url() {
        let token: Token = "skp_secret".parse().unwrap();
        let location = url("https://alice:skp_secret@b.example/x?token=skp_secret");
        let text = shown(&location, Some(&token));
        assert_eq!(text, "https://****@b.example/x?token=****");
    }
}
