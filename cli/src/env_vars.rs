//! Every environment variable skillpkg reads, in one place.
//!
//! No other module names an environment variable with a string literal: they
//! use these constants, so this list is the complete and documented set
//! (docs/client.md repeats it for users). An empty value counts as unset.

/// The registry to use when `--registry` is not given: a base URL
/// (`https://`, `http://` or `file://`) of a static index tree.
/// Takes precedence over `registry` in the user config file.
pub const SKILLPKG_REGISTRY: &str = "SKILLPKG_REGISTRY";

/// The API token to use when `--token` is not given. Takes precedence over
/// the credentials file. Never printed.
pub const SKILLPKG_TOKEN: &str = "SKILLPKG_TOKEN";

/// The folder that holds `skillpkg/config.toml` and
/// `skillpkg/credentials.toml`, instead of the platform's user config folder
/// (`$XDG_CONFIG_HOME` or `~/.config` on Linux, `~/Library/Application
/// Support` on macOS, `%APPDATA%` on Windows).
pub const SKILLPKG_CONFIG_DIR: &str = "SKILLPKG_CONFIG_DIR";

/// Any non-empty value turns colours off (<https://no-color.org>). Read by
/// `anstream`, not by skillpkg's code; listed so this list is complete.
pub const NO_COLOR: &str = "NO_COLOR";
