//! Registry base URLs, and URLs as they may be shown.

use std::fmt;
use std::str::FromStr;

use url::Url;

/// The base URL of a registry: the folder that holds `config.json`.
///
/// Always `http`, `https` or `file`, without query or fragment, and with a
/// path that ends in `/`, so that relative paths of the tree (`config.json`,
/// `index/pd/f-/pdf-processing`) join under it rather than beside it, and so
/// that `http://host:8080` and `http://host:8080/` are one registry in the
/// credentials file. Shown redacted (see [`redacted`]).
#[derive(Clone, PartialEq, Eq)]
pub struct RegistryUrl(Url);

/// Why a string is not a registry URL. Never echoes the text, which may hold
/// a password.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RegistryUrlError {
    #[error("the registry URL is not a valid URL ({0})")]
    Invalid(url::ParseError),
    #[error(
        "the registry URL has the scheme `{0}`; skillpkg reads registries over https://, http:// or file://"
    )]
    Scheme(String),
    #[error("the registry URL has a query or a fragment; give the folder that holds config.json")]
    QueryOrFragment,
    #[error("the registry URL is a file:// URL that is not an absolute local path")]
    NotLocalFile,
}

impl FromStr for RegistryUrl {
    type Err = RegistryUrlError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let text = text.trim();
        let mut url = match Url::parse(text) {
            // A plain path (`examples/registry`, `/srv/tree`) is a local tree.
            Err(url::ParseError::RelativeUrlWithoutBase) if !text.is_empty() => {
                std::path::absolute(text)
                    .ok()
                    .and_then(|path| Url::from_directory_path(path).ok())
                    .ok_or(RegistryUrlError::NotLocalFile)?
            }
            parsed => parsed.map_err(RegistryUrlError::Invalid)?,
        };
        match url.scheme() {
            "http" | "https" => {}
            "file" => {
                if url.to_file_path().is_err() {
                    return Err(RegistryUrlError::NotLocalFile);
                }
            }
            other => return Err(RegistryUrlError::Scheme(other.to_owned())),
        }
        if url.query().is_some() || url.fragment().is_some() {
            return Err(RegistryUrlError::QueryOrFragment);
        }
        if !url.path().ends_with('/') {
            let path = format!("{}/", url.path());
            url.set_path(&path);
        }
        Ok(Self(url))
    }
}

impl RegistryUrl {
    /// Returns the URL of `relative` (a path of the tree) in this registry.
    pub fn join(&self, relative: &str) -> Url {
        self.0
            .join(relative)
            .expect("a relative path joins onto a base URL")
    }

    /// Returns the URL itself. Format it with [`redacted`], never directly.
    pub fn as_url(&self) -> &Url {
        &self.0
    }

    /// Returns the key of this registry in the credentials file: the full
    /// normalised URL, ending in `/`.
    pub fn credentials_key(&self) -> &str {
        self.0.as_str()
    }
}

impl fmt::Display for RegistryUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&redacted(&self.0))
    }
}

impl fmt::Debug for RegistryUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RegistryUrl({})", redacted(&self.0))
    }
}

/// Returns `url` as it may be shown: any user name or password replaced by
/// `****`. (A token may travel as either, as in `https://TOKEN@host/`.)
pub fn redacted(url: &Url) -> String {
    if url.username().is_empty() && url.password().is_none() {
        return url.to_string();
    }
    let mut shown = url.clone();
    // Only URLs that cannot be a base (`mailto:`) refuse these, and those
    // have no user information to hide.
    let _ = shown.set_password(None);
    let _ = shown.set_username("****");
    shown.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_urls_end_in_a_slash_so_paths_join_beneath_them() {
        let registry: RegistryUrl = "http://127.0.0.1:8080/skills".parse().unwrap();
        assert_eq!(registry.credentials_key(), "http://127.0.0.1:8080/skills/");
        assert_eq!(
            registry.join("index/1/a").as_str(),
            "http://127.0.0.1:8080/skills/index/1/a"
        );
        let bare: RegistryUrl = "HTTP://Example.COM:80".parse().unwrap();
        assert_eq!(bare.credentials_key(), "http://example.com/");
        let file: RegistryUrl = "file:///srv/tree".parse().unwrap();
        assert_eq!(
            file.join("config.json").as_str(),
            "file:///srv/tree/config.json"
        );
    }

    #[test]
    fn a_plain_path_is_a_local_tree() {
        let url: RegistryUrl = "/srv/tree".parse().unwrap();
        assert_eq!(url.as_url().as_str(), "file:///srv/tree/");
        let relative: RegistryUrl = "examples/registry".parse().unwrap();
        let expected =
            Url::from_directory_path(std::path::absolute("examples/registry").unwrap()).unwrap();
        assert_eq!(relative.as_url(), &expected);
    }

    #[test]
    fn other_schemes_queries_and_garbage_are_refused() {
        assert!(matches!(
            "ftp://example.com/".parse::<RegistryUrl>(),
            Err(RegistryUrlError::Scheme(scheme)) if scheme == "ftp"
        ));
        assert_eq!(
            "https://example.com/?token=x".parse::<RegistryUrl>(),
            Err(RegistryUrlError::QueryOrFragment)
        );
        assert!("http://".parse::<RegistryUrl>().is_err());
        assert!("".parse::<RegistryUrl>().is_err());
    }

    #[test]
    fn user_information_is_never_shown() {
        let registry: RegistryUrl = "https://alice:s3cret@example.com/r".parse().unwrap();
        assert_eq!(registry.to_string(), "https://****@example.com/r/");
        assert_eq!(
            format!("{registry:?}"),
            "RegistryUrl(https://****@example.com/r/)"
        );
        let token_only: RegistryUrl = "https://s3cret@example.com/".parse().unwrap();
        assert!(!token_only.to_string().contains("s3cret"));
        let plain: RegistryUrl = "https://example.com".parse().unwrap();
        assert_eq!(plain.to_string(), "https://example.com/");
    }
}
