//! The `skillpkg-registry` binary.

use clap::Parser;

/// The skillpkg registry server.
///
/// Not yet available; planned commands:
///
///   serve --root DIR [--listen ADDR]   serve a static index and accept publishes
///   build --from DIR --out DIR         write the static index tree without a server
///   token create|list|revoke           manage publish tokens
#[derive(Debug, Parser)]
#[command(name = "skillpkg-registry", version, verbatim_doc_comment)]
struct Cli {}

fn main() -> std::process::ExitCode {
    let _cli = Cli::parse();
    #[allow(clippy::print_stderr, reason = "the binary's only output")]
    {
        eprintln!("error: skillpkg-registry has no commands yet; see `skillpkg-registry --help`");
    }
    std::process::ExitCode::from(2)
}
