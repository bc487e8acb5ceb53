//! The `skillpkg` binary: parse arguments, run, and turn the outcome into an
//! exit status (0 ok, 1 a problem the user can fix, 2 a usage error, 3 a
//! registry that cannot be reached or answers wrong, 4 unexpected).

use std::process::ExitCode;

use clap::Parser as _;
use skillpkg::{args::Cli, outcome, printer::Printer};

fn main() -> ExitCode {
    // A run's sandbox is built by this binary started again (see
    // cli/src/runtime/jail/launcher.rs): before anything else.
    #[cfg(all(target_os = "linux", feature = "runtime"))]
    if std::env::args_os().nth(1).as_deref()
        == Some(std::ffi::OsStr::new(skillpkg::runtime::jail::LAUNCHER_ARG))
    {
        skillpkg::runtime::jail::launcher::main();
    }
    #[cfg(all(target_os = "linux", feature = "runtime"))]
    if std::env::args_os().nth(1).as_deref()
        == Some(std::ffi::OsStr::new(
            skillpkg::runtime::jail::factory::FACTORY_ARG,
        ))
    {
        skillpkg::runtime::jail::factory::main();
    }
    // Audits of the skills `skillpkg mcp` serves run in this binary
    // started again (see cli/src/runtime/vetting.rs).
    #[cfg(feature = "runtime")]
    if std::env::args_os().nth(1).as_deref()
        == Some(std::ffi::OsStr::new(skillpkg::runtime::vetting::WORKER_ARG))
    {
        skillpkg::runtime::vetting::worker_main();
    }
    let cli = Cli::parse();
    cli.global.color.write_global();
    skillpkg::logging::init(cli.global.verbose);
    let printer = Printer::new(cli.global.quiet).verbose(cli.global.verbose > 0);
    match skillpkg::run(cli, &printer) {
        Ok(status) => status.into(),
        Err(error) => {
            printer.error(&error, outcome::hint(&error).as_deref());
            outcome::exit_status(&error).into()
        }
    }
}
