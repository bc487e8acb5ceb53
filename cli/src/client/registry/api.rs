//! The registry's write API (docs/registry.md), under `config.json`'s `api`:
//!
//! ```text
//! PUT    {api}/skills                            multipart: name, version, tarball -> 201, index line
//! DELETE {api}/skills/{name}/{version}/yank      {"reason": "..."}                 -> 200, index line
//! PUT    {api}/skills/{name}/{version}/unyank                                      -> 200, index line
//! GET    {api}/me                                                                  -> 200, {"user": "..."}
//! ```
//!
//! Every call sends `Authorization: Bearer <token>` to the API URL that the
//! registry's own `config.json` names, and follows no redirect: a 3xx answer
//! is a [`RegistryError::ApiRedirect`], so neither a publish's archive nor
//! the token is ever re-sent to where a server points (cargo's registry API
//! client does the same). Answers are read up to 1 MiB. A non-2xx answer's
//! `{"errors":[{"detail":"..."}]}` becomes a [`RegistryError::Refused`]
//! (4xx) or [`RegistryError::ServerFailed`] (anything else) that carries the
//! details as the server wrote them.

use reqwest::multipart::{Form, Part};
use skillpkg_index::registry::IndexRecord;
use skillpkg_index::skill::SkillName;
use url::Url;

use super::http::{self, Http, Limit, MAX_DOCUMENT_BYTES, shown};
use super::{Action, RegistryError, RegistryUrl, redacted};
use crate::client::token::Token;

/// The most of an unexpected (non-JSON) error body that is shown.
const MAX_SHOWN_BODY: usize = 300;

/// The API of one registry.
#[derive(Debug)]
pub struct Api<'registry> {
    http: &'registry Http,
    registry: &'registry RegistryUrl,
    /// The API's base URL, ending in `/`.
    base: Url,
}

/// What goes with an archive to the registry.
#[derive(Debug, Default)]
pub struct Attachments {
    /// The `.minisig` text.
    pub signature: Option<String>,
    /// The signer's public key (minisign's base64 line).
    pub key: Option<String>,
    /// The `.intoto.jsonl` text.
    pub provenance: Option<String>,
}

/// A version as the registry recorded it after a publish or a yank.
#[derive(Clone, Debug)]
pub struct Published {
    /// The index line exactly as the registry returned it (key order and
    /// unknown keys included), for `--json`.
    pub line: String,
    /// The same line, parsed.
    pub record: IndexRecord,
}

impl<'registry> Api<'registry> {
    pub(super) fn new(http: &'registry Http, registry: &'registry RegistryUrl, base: Url) -> Self {
        Self {
            http,
            registry,
            base,
        }
    }

    fn url(&self, path: &str) -> Url {
        self.base
            .join(path)
            .expect("API paths are relative paths of names and versions")
    }

    /// Returns the URL that publishes go to.
    pub fn publish_url(&self) -> Url {
        self.url("skills")
    }

    /// Uploads a packed skill, with its signature, the public key that made
    /// it (which registers the key on a skill's first signed publish) and
    /// its provenance, when there are.
    pub async fn publish(
        &self,
        token: &Token,
        name: &SkillName,
        version: &semver::Version,
        tarball: Vec<u8>,
        attachments: Attachments,
    ) -> Result<Published, RegistryError> {
        let tarball = Part::bytes(tarball)
            .file_name(format!("{name}-{version}.tgz"))
            .mime_str("application/gzip")
            .expect("application/gzip is a valid MIME type");
        let mut form = Form::new()
            .text("name", name.to_string())
            .text("version", version.to_string())
            .part("tarball", tarball);
        for (part, text) in [
            ("signature", attachments.signature),
            ("key", attachments.key),
            ("provenance", attachments.provenance),
        ] {
            if let Some(text) = text {
                form = form.text(part, text);
            }
        }
        let url = self.publish_url();
        let request = self.http.api().put(url.clone()).multipart(form);
        let body = self.send(Action::Publish, &url, request, token).await?;
        published(&url, &body)
    }

    /// Yanks `name@version`, recording `reason` when one is given.
    pub async fn yank(
        &self,
        token: &Token,
        name: &SkillName,
        version: &semver::Version,
        reason: Option<&str>,
    ) -> Result<Published, RegistryError> {
        let url = self.url(&format!("skills/{name}/{version}/yank"));
        let body = match reason {
            Some(reason) => serde_json::json!({ "reason": reason }),
            None => serde_json::json!({}),
        };
        let request = self.http.api().delete(url.clone()).json(&body);
        let body = self.send(Action::Yank, &url, request, token).await?;
        published(&url, &body)
    }

    /// Undoes the yank of `name@version`.
    pub async fn unyank(
        &self,
        token: &Token,
        name: &SkillName,
        version: &semver::Version,
    ) -> Result<Published, RegistryError> {
        let url = self.url(&format!("skills/{name}/{version}/unyank"));
        let request = self
            .http
            .api()
            .put(url.clone())
            .json(&serde_json::json!({}));
        let body = self.send(Action::Unyank, &url, request, token).await?;
        published(&url, &body)
    }

    /// Returns the user `token` belongs to (`GET {api}/me`).
    pub async fn user(&self, token: &Token) -> Result<String, RegistryError> {
        #[derive(serde::Deserialize)]
        struct Me {
            user: String,
        }
        let url = self.url("me");
        let request = self.http.api().get(url.clone());
        let body = self.send(Action::Login, &url, request, token).await?;
        let me: Me =
            serde_json::from_slice(&body).map_err(|source| RegistryError::BadDocument {
                url: redacted(&url),
                what: "answer to `GET /me` (expected {\"user\": \"...\"})",
                source,
            })?;
        Ok(printable(&me.user))
    }

    /// Sends an authenticated request and returns the body of a 2xx answer.
    /// The token is bound to the API's origin simply: the request goes to
    /// `url`, under the API's base, and nowhere else, since no redirect is
    /// followed.
    async fn send(
        &self,
        action: Action,
        url: &Url,
        request: reqwest::RequestBuilder,
        token: &Token,
    ) -> Result<Vec<u8>, RegistryError> {
        let response = request
            .bearer_auth(token.expose())
            .send()
            .await
            // A timeout here is the overall one (API calls have no read
            // timeout): no setting to suggest, so a plain network error.
            .map_err(|source| RegistryError::Network {
                url: shown(url, Some(token)),
                source: source.without_url(),
            })?;
        let status = response.status();
        if http::is_redirect(status) {
            let location = response
                .headers()
                .get(reqwest::header::LOCATION)
                .map(reqwest::header::HeaderValue::as_bytes);
            return Err(RegistryError::ApiRedirect {
                action,
                url: shown(url, Some(token)),
                to: http::shown_location(url, location, Some(token)),
            });
        }
        let body = self
            .http
            .body(
                response,
                url,
                Some(token),
                Limit::Client(MAX_DOCUMENT_BYTES),
                |_| {},
            )
            .await
            .map_err(|error| match error {
                RegistryError::Timeout { url, source, .. } => {
                    RegistryError::Network { url, source }
                }
                other => other,
            })?;
        if status.is_success() {
            return Ok(body);
        }
        let details = error_details(&body, status);
        Err(if status.is_client_error() {
            RegistryError::Refused {
                action,
                registry: self.registry.to_string(),
                status: status.as_u16(),
                code: error_code(&body),
                details,
            }
        } else {
            RegistryError::ServerFailed {
                action,
                url: shown(url, Some(token)),
                status: status.as_u16(),
                details,
            }
        })
    }
}

fn published(url: &Url, body: &[u8]) -> Result<Published, RegistryError> {
    let bad = |source| RegistryError::BadDocument {
        url: redacted(url),
        what: "index line",
        source,
    };
    let record = serde_json::from_slice(body).map_err(bad)?;
    // It parsed as JSON, so it is UTF-8 with no raw control characters.
    let line = String::from_utf8_lossy(body).trim().to_owned();
    Ok(Published { line, record })
}

/// Returns the `detail`s of an API error body; for a body of another shape,
/// its start, or the status when it is empty.
fn error_details(body: &[u8], status: reqwest::StatusCode) -> Vec<String> {
    #[derive(serde::Deserialize)]
    struct Errors {
        errors: Vec<Detail>,
    }
    #[derive(serde::Deserialize)]
    struct Detail {
        detail: String,
    }
    if let Ok(errors) = serde_json::from_slice::<Errors>(body) {
        let details: Vec<String> = errors
            .errors
            .iter()
            .map(|error| printable(&error.detail))
            .filter(|detail| !detail.is_empty())
            .collect();
        if !details.is_empty() {
            return details;
        }
    }
    let text = printable(&String::from_utf8_lossy(body));
    if text.is_empty() {
        return vec![format!("HTTP {status}")];
    }
    let mut shown: String = text.chars().take(MAX_SHOWN_BODY).collect();
    if shown.len() < text.len() {
        shown.push('…');
    }
    vec![shown]
}

/// Returns the `code` of an API error body (since 0.2), when it is one of
/// the snake_case words the API sends: anything else is not trusted to be
/// printed or matched.
fn error_code(body: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Coded {
        code: String,
    }
    let code = serde_json::from_slice::<Coded>(body).ok()?.code;
    let word = !code.is_empty()
        && code.len() <= 64
        && code
            .bytes()
            .all(|byte| byte.is_ascii_lowercase() || byte == b'_');
    word.then_some(code)
}

/// Returns `text` with control characters (newlines, terminal escapes)
/// turned into spaces: a server's words are shown verbatim, but they must
/// not be able to rewrite the user's terminal.
fn printable(text: &str) -> String {
    text.chars()
        .map(|character| {
            if character.is_control() {
                ' '
            } else {
                character
            }
        })
        .collect::<String>()
        .trim()
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_details_are_the_servers_words_without_control_characters() {
        let body = br#"{"errors":[{"detail":"version 1.0.0 of `pdf` is already published"},{"detail":"bad\u001b[31m"}]}"#;
        assert_eq!(
            error_details(body, reqwest::StatusCode::CONFLICT),
            ["version 1.0.0 of `pdf` is already published", "bad [31m"]
        );
    }

    #[test]
    fn an_error_code_is_read_when_it_is_a_word() {
        let body = br#"{"code":"audit_refused","message":"x","errors":[{"code":"audit-refused","detail":"x"}]}"#;
        assert_eq!(error_code(body).as_deref(), Some("audit_refused"));
        assert_eq!(error_code(br#"{"code":"bad[31m"}"#), None);
        assert_eq!(error_code(br#"{"errors":[]}"#), None);
        assert_eq!(error_code(b"not json"), None);
    }

    #[test]
    fn other_error_bodies_are_shown_shortened_or_as_the_status() {
        let long = "x".repeat(1000);
        let details = error_details(long.as_bytes(), reqwest::StatusCode::BAD_GATEWAY);
        assert_eq!(details[0].chars().count(), MAX_SHOWN_BODY + 1);
        assert_eq!(
            error_details(b"", reqwest::StatusCode::UNAUTHORIZED),
            ["HTTP 401 Unauthorized"]
        );
    }
}
