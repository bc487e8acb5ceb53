//! `-v`: what skillpkg does, logged on stderr with `tracing`.
//!
//! Nothing is set up without `-v` or `SKILLPKG_LOG`, so a plain command
//! pays nothing for the log statements it passes.

use tracing_subscriber::EnvFilter;

/// The filter each `-v` count stands for: skillpkg's own steps, then its
/// details, then everything, the libraries' (gix, reqwest, hyper) too.
fn filter_for(verbose: u8) -> &'static str {
    match verbose {
        0 | 1 => "skillpkg=info",
        2 => "skillpkg=debug",
        _ => "trace",
    }
}

/// Starts logging on stderr for `verbose` (the count of `-v`), or as
/// `SKILLPKG_LOG` says when it is set. A `SKILLPKG_LOG` that does not
/// parse is said once, and `-v`'s filter is used.
pub fn init(verbose: u8) {
    let from_env = std::env::var(crate::env_vars::SKILLPKG_LOG)
        .ok()
        .filter(|value| !value.is_empty());
    if verbose == 0 && from_env.is_none() {
        return;
    }
    let (filter, bad) = match from_env.as_deref().map(EnvFilter::try_new) {
        Some(Ok(filter)) => (filter, None),
        Some(Err(error)) => (EnvFilter::new(filter_for(verbose)), Some(error)),
        None => (EnvFilter::new(filter_for(verbose)), None),
    };
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_timer(tracing_subscriber::fmt::time::uptime())
        .with_target(verbose >= 2)
        .init();
    if let Some(error) = bad {
        tracing::warn!(
            "{} is not a filter ({error}); using -v's",
            crate::env_vars::SKILLPKG_LOG
        );
    }
}
