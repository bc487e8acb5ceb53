//! Talking to registries, and the only way an archive from one reaches the
//! rest of skillpkg.
//!
//! - [`fetch`]: [`fetch::fetch_verified`], the one path from the network or
//!   the cache to a [`fetch::VerifiedArchive`].
//! - [`cache`]: the content-addressed archive cache it reads and fills.

pub mod cache;
pub mod fetch;

pub use cache::Cache;
pub use fetch::{Expected, Source, VerifiedArchive, fetch_verified};
