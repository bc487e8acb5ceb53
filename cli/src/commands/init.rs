//! `skillpkg init`: write skills.toml. Asks nothing.

use crate::args::InitArgs;
use crate::error::ExitStatus;
use crate::printer::Printer;
use crate::project::{manifest, targets};

pub fn run(args: &InitArgs, printer: &Printer) -> anyhow::Result<ExitStatus> {
    let root = std::env::current_dir()?;
    let chosen = if args.targets.is_empty() {
        vec!["claude".to_owned()]
    } else {
        args.targets.clone()
    };
    for target in &chosen {
        targets::resolve(target, &root, false, true)?;
    }
    let path = manifest::create(&root, args.registry.as_deref(), &chosen)?;
    printer.status(
        "Created",
        &format!("{} (targets: {})", path.display(), chosen.join(", ")),
    );
    Ok(ExitStatus::Success)
}
