//! # skillpkg-registry
//!
//! The registry side of skillpkg. Today only the command-line surface exists
//! (`skillpkg-registry --help` lists what is planned): the static-tree writer,
//! the HTTP server, the publish API and token management come next, built on
//! the formats in `skillpkg-index`.
