//! `skillpkg key generate` and `skillpkg key show`.

use serde_json::json;
use skillpkg_index::signing::{PublicKey, SecretKey, SignerKey};

use crate::args::{KeyCommand, KeyGenerateArgs, KeyShowArgs};
use crate::client::settings::{self, Environment, KeySource};
use crate::error::{ExitStatus, UserError};
use crate::printer::Printer;
use crate::signing_key;

pub fn run(command: &KeyCommand, printer: &Printer) -> anyhow::Result<ExitStatus> {
    match command {
        KeyCommand::Generate(args) => generate(args, printer),
        KeyCommand::Show(args) => show(args, printer),
    }
}

fn generate(args: &KeyGenerateArgs, printer: &Printer) -> anyhow::Result<ExitStatus> {
    let environment = Environment::from_process();
    let path = match &args.output {
        Some(path) => path.clone(),
        None => environment.default_signing_key().ok_or_else(|| {
            UserError::new("there is no user config folder to put the key in")
                .with_hint("pass --output PATH")
        })?,
    };
    let password = if args.no_password {
        None
    } else {
        let first = signing_key::password(
            &environment,
            printer,
            "Password for the new key (empty for none): ",
        )
        .map_err(|error| {
            error.context(
                "cannot ask for a password: pass --no-password to store the key unencrypted",
            )
        })?;
        if environment.key_password.is_none() && !first.is_empty() {
            let second = signing_key::password(&environment, printer, "The same password again: ")?;
            if first != second {
                return Err(UserError::new("the two passwords differ")
                    .with_hint("run the command again")
                    .into());
            }
        }
        Some(first).filter(|password| !password.is_empty())
    };
    let key = SecretKey::generate()?;
    let public_path = path.with_file_name(format!(
        "{}.pub",
        path.file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default()
    ));
    signing_key::write_new(&path, &key.to_file(password.as_deref())?, 0o600, args.force)?;
    signing_key::write_new(&public_path, &key.public().to_file(), 0o644, true)?;
    if args.json {
        printer.json(&json!({
            "key_id": key.id().to_string(),
            "signer": SignerKey::of(&key.public()).to_string(),
            "public_key": key.public().to_base64(),
            "secret_key_path": path,
            "public_key_path": public_path,
            "encrypted": password.is_some(),
        }));
    } else {
        printer.status(
            "Generated",
            &format!(
                "key {} ({})",
                key.id(),
                if password.is_some() {
                    "password-protected"
                } else {
                    "no password"
                }
            ),
        );
        printer.result(&format!(
            "secret key: {} (keep it secret; mode 0600)\npublic key: {}\nsigner:     {} (what `allowed-signers` and skills.lock name)\n\n{}",
            path.display(),
            public_path.display(),
            SignerKey::of(&key.public()),
            key.public().to_base64()
        ));
    }
    Ok(ExitStatus::Success)
}

fn show(args: &KeyShowArgs, printer: &Printer) -> anyhow::Result<ExitStatus> {
    let environment = Environment::from_process();
    // The public key beside a key file needs no password to read.
    let beside = match settings::signing_key(args.key.as_deref(), &environment)? {
        Some(KeySource::File(path)) => fs_err::read_to_string(format!("{}.pub", path.display()))
            .ok()
            .and_then(|text| text.parse::<PublicKey>().ok()),
        _ => None,
    };
    let public = match beside {
        Some(public) => public,
        None => signing_key::require(args.key.as_deref(), &environment, printer)?.public(),
    };
    if args.json {
        printer.json(&json!({
            "key_id": public.id().to_string(),
            "signer": SignerKey::of(&public).to_string(),
            "public_key": public.to_base64(),
        }));
    } else {
        // The signer first: it is what trust is decided by. The id is
        // only a name, which another key can carry.
        printer.result(&format!(
            "signer:     {}\nkey id:     {}\npublic key: {}",
            SignerKey::of(&public),
            public.id(),
            public.to_base64()
        ));
    }
    Ok(ExitStatus::Success)
}
