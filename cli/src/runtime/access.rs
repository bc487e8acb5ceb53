//! Who may use `skillpkg mcp --listen` (docs/runtime.md, "Authentication").
//!
//! The server runs skills' scripts for whoever reaches it, so beyond a
//! loopback address of a single-user machine it asks for a bearer token:
//! `--token-file FILE` holds one (made on first use, 256 random bits,
//! mode 0600), every request must carry `Authorization: Bearer <token>`,
//! and the comparison takes the same time whatever the guess
//! ([`subtle`]). A request without it gets 401 with a `WWW-Authenticate`
//! that points at the OAuth 2.0 protected-resource metadata (RFC 9728),
//! which MCP clients read to learn how to authenticate.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use serde_json::json;
use subtle::ConstantTimeEq as _;

/// Where RFC 9728 puts the metadata of the resource at `/mcp`.
pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource/mcp";

/// The shortest token a `--token-file` may hold: 128 bits of base64.
const MIN_TOKEN_CHARS: usize = 22;

/// The bearer token a server asks for.
#[derive(Clone)]
pub struct Token(String);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(..)")
    }
}

/// Why a `--token-file` cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error("cannot read the token file: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot create the token file: {source}")]
    Create {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the token in {} is {chars} characters long; a token needs at least {MIN_TOKEN_CHARS}", path.display())]
    TooShort { path: PathBuf, chars: usize },
    #[error("the token in {} has characters a header cannot carry", path.display())]
    NotAHeader { path: PathBuf },
    #[error("the token file {} can be read by other users (mode {mode:o})", path.display())]
    Readable { path: PathBuf, mode: u32 },
}

impl TokenError {
    pub fn hint(&self) -> String {
        match self {
            Self::Read { .. } | Self::Create { .. } => {
                "give --token-file a file in a folder you can write to; it is made on first use"
                    .to_owned()
            }
            Self::TooShort { path, .. } | Self::NotAHeader { path } => format!(
                "delete {} and start again to have a token made, or write one of letters, digits, `-` and `_`",
                path.display()
            ),
            Self::Readable { path, .. } => format!("run `chmod 600 {}`", path.display()),
        }
    }
}

impl Token {
    /// The token in `path`, or a new one written there (mode 0600) when
    /// there is no file. Returns it with whether it was just made.
    pub fn load_or_create(path: &Path) -> Result<(Self, bool), TokenError> {
        match fs_err::read_to_string(path) {
            Ok(text) => Self::check_file(path, &text).map(|token| (token, false)),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                Self::create(path).map(|token| (token, true))
            }
            Err(source) => Err(TokenError::Read {
                path: path.to_owned(),
                source,
            }),
        }
    }

    fn check_file(path: &Path, text: &str) -> Result<Self, TokenError> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt as _;
            let mode = fs_err::metadata(path)
                .map_err(|source| TokenError::Read {
                    path: path.to_owned(),
                    source,
                })?
                .mode()
                & 0o777;
            if mode & 0o077 != 0 {
                return Err(TokenError::Readable {
                    path: path.to_owned(),
                    mode,
                });
            }
        }
        let token = text.trim();
        if token.chars().count() < MIN_TOKEN_CHARS {
            return Err(TokenError::TooShort {
                path: path.to_owned(),
                chars: token.chars().count(),
            });
        }
        if !token
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || b"-_.~+/=".contains(&byte))
        {
            return Err(TokenError::NotAHeader {
                path: path.to_owned(),
            });
        }
        Ok(Self(token.to_owned()))
    }

    fn create(path: &Path) -> Result<Self, TokenError> {
        let failed = |source| TokenError::Create {
            path: path.to_owned(),
            source,
        };
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes)
            .map_err(|error| failed(std::io::Error::other(error.to_string())))?;
        let token = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
        let mut options = fs_err::OpenOptions::new();
        // Made new, never over a file another process made in between.
        options.write(true).create_new(true);
        #[cfg(unix)]
        fs_err::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options.open(path).map_err(failed)?;
        file.write_all(format!("{token}\n").as_bytes())
            .and_then(|()| file.sync_all())
            .map_err(failed)?;
        Ok(Self(token))
    }

    /// The token itself, to show once when it was made.
    pub fn reveal(&self) -> &str {
        &self.0
    }

    /// Returns true if and only if `headers` carry this token as a bearer
    /// token, compared in constant time.
    pub fn admits(&self, headers: &HeaderMap) -> bool {
        let Some(value) = headers
            .get(header::AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
        else {
            return false;
        };
        let Some((scheme, given)) = value.split_once(' ') else {
            return false;
        };
        scheme.eq_ignore_ascii_case("bearer")
            && bool::from(given.trim().as_bytes().ct_eq(self.0.as_bytes()))
    }
}

/// The 401 a request without the token gets: RFC 6750's challenge, with
/// RFC 9728's `resource_metadata` so an MCP client finds out what to do;
/// `error="invalid_token"` only when it sent credentials (RFC 6750 §3.1).
pub fn challenge(metadata_url: &str, sent_credentials: bool) -> Response {
    let mut response = (
        StatusCode::UNAUTHORIZED,
        [(header::CONTENT_TYPE, "application/json")],
        json!({
            "error": "invalid_token",
            "error_description": "this server needs `Authorization: Bearer <token>`, with the token in the file its --token-file names",
        })
        .to_string(),
    )
        .into_response();
    let error = if sent_credentials {
        ", error=\"invalid_token\""
    } else {
        ""
    };
    if let Ok(value) = HeaderValue::from_str(&format!(
        "Bearer resource_metadata=\"{metadata_url}\"{error}"
    )) {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

/// RFC 9728's protected-resource metadata of the MCP endpoint at
/// `resource`. There is no authorization server to name: the token is
/// given to the client by the operator, so the document says only how to
/// send it.
pub fn metadata(resource: &str) -> serde_json::Value {
    json!({
        "resource": resource,
        "bearer_methods_supported": ["header"],
        "resource_name": "skillpkg mcp",
        "resource_documentation": concat!(env!("CARGO_PKG_REPOSITORY"), "/blob/main/docs/runtime.md#authentication"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::AUTHORIZATION, HeaderValue::from_str(value).unwrap());
        headers
    }

    #[test]
    fn a_token_is_made_once_private_and_then_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        let (made, created) = Token::load_or_create(&path).unwrap();
        assert!(created);
        assert_eq!(made.reveal().len(), 43, "256 bits of base64url");
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt as _;
            assert_eq!(fs_err::metadata(&path).unwrap().mode() & 0o777, 0o600);
        }
        let (read, created) = Token::load_or_create(&path).unwrap();
        assert!(!created);
        assert_eq!(read.reveal(), made.reveal());
        assert!(!format!("{read:?}").contains(made.reveal()));
    }

    #[test]
    fn a_bad_token_file_is_refused_with_what_to_do() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        fs_err::write(&path, "short\n").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            fs_err::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
            let error = Token::load_or_create(&path).unwrap_err();
            assert!(
                matches!(error, TokenError::Readable { mode: 0o644, .. }),
                "{error}"
            );
            assert!(error.hint().contains("chmod 600"));
            fs_err::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
        let error = Token::load_or_create(&path).unwrap_err();
        assert!(
            matches!(error, TokenError::TooShort { chars: 5, .. }),
            "{error}"
        );
        fs_err::write(&path, "a token with spaces in it, long enough\n").unwrap();
        assert!(matches!(
            Token::load_or_create(&path).unwrap_err(),
            TokenError::NotAHeader { .. }
        ));
    }

    #[test]
    fn only_the_exact_bearer_token_is_admitted() {
        let token = Token("0123456789abcdefghijklmnopqrstuv".to_owned());
        assert!(token.admits(&headers("Bearer 0123456789abcdefghijklmnopqrstuv")));
        assert!(token.admits(&headers("bearer 0123456789abcdefghijklmnopqrstuv")));
        for wrong in [
            "Bearer 0123456789abcdefghijklmnopqrstu",
            "Bearer 0123456789abcdefghijklmnopqrstuvw",
            "Bearer ",
            "Basic 0123456789abcdefghijklmnopqrstuv",
            "0123456789abcdefghijklmnopqrstuv",
        ] {
            assert!(!token.admits(&headers(wrong)), "{wrong}");
        }
        assert!(!token.admits(&HeaderMap::new()));
    }
}
