//! API tokens and the credentials file that keeps them.
//!
//! ```text
//! <config dir>/skillpkg/credentials.toml     mode 0600, written by `skillpkg login`
//!
//! [registries."https://skills.example.com/"]   the registry URL, ending in `/`
//! token = "..."
//! ```
//!
//! The file is only ever replaced whole: a temporary file in the same folder
//! (created 0600, so the token is never readable by others, not even for a
//! moment), then a rename over the old one. Keys skillpkg does not know are
//! kept when it rewrites the file.
//!
//! The token itself is a [`super::token::Token`], which never shows its
//! value.

use std::path::{Path, PathBuf};

use skillpkg_index::fs::{WriteOptions, write_atomic_with};

use anyhow::Context as _;

use super::registry_url::RegistryUrl;
use super::token::{Token, TokenError};
use crate::error::UserError;

/// The credentials file.
#[derive(Clone, Debug)]
pub struct Credentials {
    path: PathBuf,
}

/// The table that holds one entry per registry.
const REGISTRIES: &str = "registries";
/// The key of a registry's token.
const TOKEN: &str = "token";

impl Credentials {
    /// The credentials file at `path` (which need not exist).
    pub fn at(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }

    /// Returns the file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Returns the token stored for `registry`, if there is one.
    pub fn token(&self, registry: &RegistryUrl) -> anyhow::Result<Option<Token>> {
        let document = self.read()?;
        let Some(value) = document
            .get(REGISTRIES)
            .and_then(|registries| registries.get(registry.credentials_key()))
            .and_then(|entry| entry.get(TOKEN))
        else {
            return Ok(None);
        };
        let token = value
            .as_str()
            .ok_or_else(|| self.invalid("a token is not a string"))?
            .parse()
            .map_err(|error: TokenError| self.invalid(&error.to_string()))?;
        Ok(Some(token))
    }

    /// Stores `token` for `registry`, replacing the one stored before and
    /// keeping every other entry.
    pub fn store(&self, registry: &RegistryUrl, token: &Token) -> anyhow::Result<()> {
        let mut document = self.read()?;
        let registries = document
            .entry(REGISTRIES)
            .or_insert_with(|| toml::Value::Table(toml::Table::new()))
            .as_table_mut()
            .ok_or_else(|| self.invalid("`registries` is not a table"))?;
        let mut entry = toml::Table::new();
        entry.insert(TOKEN.into(), toml::Value::String(token.expose().to_owned()));
        registries.insert(
            registry.credentials_key().to_owned(),
            toml::Value::Table(entry),
        );
        let text = toml::to_string(&document).context("cannot serialise the credentials")?;
        write_private(&self.path, text.as_bytes())
    }

    /// Reads the file; a missing file is an empty one.
    fn read(&self) -> anyhow::Result<toml::Table> {
        let text = match fs_err::read_to_string(&self.path) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                return Ok(toml::Table::new());
            }
            Err(error) => return Err(error.into()),
        };
        text.parse::<toml::Table>().map_err(|error| {
            UserError::new(format!(
                "the credentials file {} is not valid TOML",
                self.path.display()
            ))
            .with_hint(self.fix_hint())
            .with_source(error)
            .into()
        })
    }

    fn invalid(&self, problem: &str) -> anyhow::Error {
        UserError::new(format!(
            "the credentials file {} is not valid: {problem}",
            self.path.display()
        ))
        .with_hint(self.fix_hint())
        .into()
    }

    fn fix_hint(&self) -> String {
        format!(
            "fix it, or delete it and run `skillpkg login` again; it holds `[registries.\"URL\"]` tables with a `token` each ({})",
            self.path.display()
        )
    }
}

/// Replaces `path` with `bytes`, readable and writable by the owner only.
fn write_private(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    // 0600 from the first byte; the rename replaces any older file,
    // whatever its mode was, with this one.
    let options = WriteOptions::private().create_parents();
    write_atomic_with(path, bytes, &options)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn registry(text: &str) -> RegistryUrl {
        text.parse().unwrap()
    }

    #[cfg(unix)]
    fn mode(path: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt;
        fs_err::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[cfg(unix)]
    #[test]
    fn the_credentials_file_is_created_0600_and_made_0600_again() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("skillpkg/credentials.toml");
        let credentials = Credentials::at(&path);
        let local = registry("http://127.0.0.1:8080");
        credentials
            .store(&local, &"first".parse().unwrap())
            .unwrap();
        assert_eq!(mode(&path), 0o600);

        fs_err::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        credentials
            .store(&local, &"second".parse().unwrap())
            .unwrap();
        assert_eq!(mode(&path), 0o600);
        assert_eq!(
            credentials.token(&local).unwrap().unwrap().expose(),
            "second"
        );
        // No temporary file is left beside it.
        let names: Vec<_> = fs_err::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert_eq!(names, ["credentials.toml"]);
    }

    #[test]
    fn tokens_are_kept_per_registry_with_other_keys_preserved() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("credentials.toml");
        fs_err::write(
            &path,
            "future-key = 1\n[registries.\"https://other.example/\"]\ntoken = \"other\"\n",
        )
        .unwrap();
        let credentials = Credentials::at(&path);
        let local = registry("http://127.0.0.1:8080/");
        assert_eq!(credentials.token(&local).unwrap(), None);
        credentials.store(&local, &"mine".parse().unwrap()).unwrap();

        let text = fs_err::read_to_string(&path).unwrap();
        assert!(text.contains("future-key = 1"), "{text}");
        assert!(
            text.contains("[registries.\"http://127.0.0.1:8080/\"]"),
            "{text}"
        );
        let other = registry("https://other.example");
        assert_eq!(
            credentials.token(&other).unwrap().unwrap().expose(),
            "other"
        );
        assert_eq!(credentials.token(&local).unwrap().unwrap().expose(), "mine");
    }

    #[test]
    fn a_broken_credentials_file_is_named_and_its_content_not_echoed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("credentials.toml");
        fs_err::write(&path, "[registries.\"http://x/\"]\ntoken = \"a b\"\n").unwrap();
        let error = Credentials::at(&path)
            .token(&registry("http://x"))
            .unwrap_err();
        let message = format!("{error:#}");
        assert!(message.contains("credentials.toml"), "{message}");
        assert!(!message.contains("a b"), "{message}");
    }
}
