//! The one type for a value that must never be shown: API tokens, a secret
//! key's text from the environment, a key password.
//!
//! [`Secret`] has no `Display` and a `Debug` that prints `****`, so a
//! secret cannot reach a log line, an error message or a panic by
//! formatting; its text is reachable only through [`Secret::expose`], which
//! is easy to find in review. Comparison runs in time independent of where
//! two secrets of equal length first differ.

use std::fmt;

/// What `Debug` shows instead of a secret.
pub const REDACTED: &str = "****";

/// A string that is never formatted.
#[derive(Clone, Default)]
pub struct Secret(String);

impl Secret {
    /// Wraps `text`.
    pub fn new(text: impl Into<String>) -> Self {
        Self(text.into())
    }

    /// Returns the secret itself, to send in a header or to write to a
    /// private file. Never format it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Returns true if and only if the secret is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

impl PartialEq for Secret {
    fn eq(&self, other: &Self) -> bool {
        let (a, b) = (self.0.as_bytes(), other.0.as_bytes());
        a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
    }
}

impl Eq for Secret {}

impl From<String> for Secret {
    fn from(text: String) -> Self {
        Self(text)
    }
}

impl From<&str> for Secret {
    fn from(text: &str) -> Self {
        Self(text.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_the_secret() {
        let secret = Secret::new("skp_abcdef");
        assert_eq!(format!("{secret:?}"), "****");
        assert_eq!(format!("{:?}", Some(secret.clone())), "Some(****)");
        assert_eq!(secret.expose(), "skp_abcdef");
    }

    #[test]
    fn equality_is_by_value() {
        assert_eq!(Secret::new("a1"), Secret::from("a1"));
        assert_ne!(Secret::new("a1"), Secret::new("a2"));
        assert_ne!(Secret::new("a1"), Secret::new("a12"));
        assert!(Secret::default().is_empty());
    }
}
