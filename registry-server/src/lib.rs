//! # skillpkg-registry
//!
//! The registry side of skillpkg. What exists today is the command-line
//! surface; the static-tree writer, the HTTP server, the publish API and token
//! management follow (see `docs/` for the plan).

/// What `skillpkg-registry --help` lists as coming.
pub const PLANNED_COMMANDS: &[(&str, &str)] = &[
    (
        "serve --root DIR [--listen ADDR]",
        "serve a static index and accept publishes, yanks and owner changes",
    ),
    (
        "build --from DIR --out DIR",
        "write the static index tree from a folder of tarballs, with no server",
    ),
    (
        "token create|list|revoke",
        "manage publish tokens, stored hashed outside the served tree",
    ),
];
