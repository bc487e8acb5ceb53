//! Loading and saving signing keys: where they are, their passwords, and
//! their files' permissions.
//!
//! A password is read from `SKILLPKG_KEY_PASSWORD`, else asked for on the
//! terminal (without echo). When standard input is not a terminal nothing is
//! ever asked: the command fails and names the variable to set.

use skillpkg_index::fs::{WriteOptions, write_atomic_with};
use std::io::IsTerminal as _;
use std::path::Path;

use anyhow::Context as _;
use skillpkg_index::signing::{KeyError, PublicKey, SecretKey};

use crate::client::settings::{self, Environment, KeySource};
use crate::env_vars;
use crate::error::UserError;
use crate::printer::Printer;

/// Loads the signing key: `--key`, `SKILLPKG_SIGNING_KEY`, the config file's
/// `signing-key`, or the default file. `None` when there is none anywhere.
pub fn load(
    flag: Option<&Path>,
    environment: &Environment,
    printer: &Printer,
) -> anyhow::Result<Option<SecretKey>> {
    let Some(source) = settings::signing_key(flag, environment)? else {
        return Ok(None);
    };
    let (text, origin) = match source {
        KeySource::File(path) => {
            let text = fs_err::read_to_string(&path).map_err(|error| {
                UserError::new(format!("cannot read the signing key {}", path.display()))
                    .with_hint(settings::signing_key_ways(environment))
                    .with_source(error)
            })?;
            (text, path.display().to_string())
        }
        KeySource::Environment(text) => (
            text.expose().to_owned(),
            env_vars::SKILLPKG_SIGNING_KEY.to_owned(),
        ),
    };
    let password = if SecretKey::is_encrypted(&text) {
        Some(password(
            environment,
            printer,
            &format!("Password for the signing key {origin}: "),
        )?)
    } else {
        None
    };
    let key = SecretKey::from_file(&text, password.as_deref()).map_err(|error| {
        let hint = match error {
            KeyError::WrongPassword => format!("check the password ({} or the terminal)", env_vars::SKILLPKG_KEY_PASSWORD),
            _ => "a signing key is a minisign secret key file, as `skillpkg key generate` or `minisign -G` writes it".into(),
        };
        UserError::new(format!("cannot load the signing key {origin}")).with_hint(hint).with_source(error)
    })?;
    Ok(Some(key))
}

/// Loads the signing key, failing with every way to give one when there is none.
pub fn require(
    flag: Option<&Path>,
    environment: &Environment,
    printer: &Printer,
) -> anyhow::Result<SecretKey> {
    load(flag, environment, printer)?.ok_or_else(|| {
        UserError::new("no signing key is configured")
            .with_hint(settings::signing_key_ways(environment))
            .into()
    })
}

/// Returns the key password: `SKILLPKG_KEY_PASSWORD`, else asked for on the
/// terminal; an error naming the variable when there is no terminal.
pub fn password(
    environment: &Environment,
    printer: &Printer,
    prompt: &str,
) -> anyhow::Result<String> {
    if let Some(password) = &environment.key_password {
        return Ok(password.expose().to_owned());
    }
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        return Err(UserError::new(
            "the signing key needs a password, and there is no terminal to ask on",
        )
        .with_hint(format!(
            "set {} (for CI, from a secret)",
            env_vars::SKILLPKG_KEY_PASSWORD
        ))
        .into());
    }
    printer.prompt(prompt);
    let line = rpassword::read_password().context("cannot read the password")?;
    Ok(line.trim_end_matches(['\r', '\n']).to_owned())
}

/// Writes a file atomically, with `mode` on Unix, refusing to replace an
/// existing file unless `force`.
pub fn write_new(path: &Path, contents: &str, mode: u32, force: bool) -> anyhow::Result<()> {
    if path.exists() && !force {
        return Err(UserError::new(format!("{} already exists", path.display()))
            .with_hint("pass --force to replace it (the old key is then lost), or --output to write elsewhere")
            .into());
    }
    // The mode is set before any byte of the key is written.
    let options = WriteOptions::default().mode(mode).create_parents();
    write_atomic_with(path, contents.as_bytes(), &options)?;
    Ok(())
}

/// Reads a public key given as a file path or as minisign's base64 line.
pub fn public_key(text_or_path: &str) -> anyhow::Result<PublicKey> {
    let path = Path::new(text_or_path);
    let text = if path.exists() {
        fs_err::read_to_string(path)?
    } else {
        text_or_path.to_owned()
    };
    text.parse().map_err(|error| {
        UserError::new(format!("`{text_or_path}` is not a public key"))
            .with_hint("give a minisign public key file, or its base64 line (RW...)")
            .with_source(error)
            .into()
    })
}
