//! Talking to registries, and the only way an archive from one reaches the
//! rest of skillpkg.
//!
//! - [`registries`]: which registries a command may use, from the project,
//!   the user's config file, the environment and the flags, read once into
//!   one typed value; tokens from the flag, the environment, a token
//!   command or [`credentials`].
//! - [`registry`]: one open registry over HTTP or `file://`: index files,
//!   its signed metadata ([`registry::trust`]), downloads under a size cap,
//!   the publish API.
//! - [`fetch`]: [`fetch::fetch_verified`], the one path from the network or
//!   the cache to a [`fetch::VerifiedArchive`]; [`cache`]: the
//!   content-addressed archive cache it reads and fills.
//! - [`index_cache`]: the index files a registry served before, with their
//!   ETags, which [`registry::Registry::index`] revalidates.
//! - [`token`], [`registry_url`], [`settings`] (flags, environment and the
//!   user's files, read once): the values the others
//!   share.
//!
//! Modules here import only downwards in this order: `registries` ->
//! `registry` | `credentials` | `settings` | `cache` -> `index_cache` |
//! `token` | `registry_url`; `fetch` -> `registry` | `cache`. Nothing here
//! imports `project`, `runtime` or `commands`.

pub mod cache;
pub mod credentials;
pub mod fetch;
pub mod index_cache;
pub mod registries;
pub mod registry;
pub mod registry_url;
pub mod settings;
pub mod token;

pub use cache::Cache;
pub use fetch::{Expected, Source, VerifiedArchive, fetch_verified};
