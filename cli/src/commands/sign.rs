//! `skillpkg sign FILE.tgz`: write `FILE.tgz.minisig`.

use std::path::PathBuf;

use serde_json::json;
use skillpkg_index::checksum::Checksum;
use skillpkg_index::signing::{Signature, TrustedComment};

use crate::args::SignArgs;
use crate::client::settings::Environment;
use crate::error::{ExitStatus, UserError};
use crate::printer::Printer;
use crate::{signing_key, skill_archive};

pub fn run(args: &SignArgs, printer: &Printer) -> anyhow::Result<ExitStatus> {
    let environment = Environment::from_process();
    let key = signing_key::require(args.key.as_deref(), &environment, printer)?;
    let tarball = fs_err::read(&args.file).map_err(|error| {
        UserError::new(format!("cannot read {}", args.file.display())).with_source(error)
    })?;
    let identity = skill_archive::identify(&tarball, &args.file)?;
    let version = skill_archive::version(&identity, &args.file)?;
    let comment = TrustedComment {
        name: identity.name,
        version,
        sha256: Checksum::of(&tarball),
    };
    let signature = Signature::sign(&key, &tarball, &comment.to_string());
    let output = PathBuf::from(format!("{}.minisig", args.file.display()));
    signing_key::write_new(&output, &signature.to_file(), 0o644, true)?;
    if args.json {
        printer.json(&json!({
            "signature": output,
            "key_id": key.id().to_string(),
            "name": comment.name,
            "version": comment.version.to_string(),
            "sha256": comment.sha256,
        }));
    } else {
        printer.status(
            "Signed",
            &format!("{}@{} with key {}", comment.name, comment.version, key.id()),
        );
        printer.result(&format!("signature: {}", output.display()));
    }
    Ok(ExitStatus::Success)
}
