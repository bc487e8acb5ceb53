//! An API token: one word of printable ASCII, held as a
//! [`skillpkg_index::secret::Secret`].
//!
//! A [`Token`] never shows its value through `Display` or `Debug`, so it
//! cannot leak into an error message, a log line or a `{:?}` of the parsed
//! arguments.

use std::fmt;
use std::str::FromStr;

use skillpkg_index::secret::{REDACTED, Secret};

/// An API token. Its value is reachable only through [`Token::expose`].
#[derive(Clone, PartialEq, Eq)]
pub struct Token(Secret);

impl Token {
    /// Returns the secret itself, for an `Authorization` header or the
    /// credentials file. Never format it.
    pub fn expose(&self) -> &str {
        self.0.expose()
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Token({REDACTED})")
    }
}

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

/// Why a string is not a token. The variants never carry the text itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    #[error("the token is empty")]
    Empty,
    #[error(
        "the token has a character that is not printable ASCII (at byte {position}); a token is one word of printable ASCII"
    )]
    InvalidCharacter { position: usize },
}

impl FromStr for Token {
    type Err = TokenError;

    /// Parses a token, ignoring whitespace around it (a pasted line keeps its
    /// newline). Only printable ASCII is accepted: the token goes into an
    /// HTTP header, where anything else is invalid or ambiguous.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let text = text.trim();
        if text.is_empty() {
            return Err(TokenError::Empty);
        }
        if let Some(position) = text.bytes().position(|byte| !byte.is_ascii_graphic()) {
            return Err(TokenError::InvalidCharacter { position });
        }
        Ok(Self(Secret::new(text)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_never_shows_its_value() {
        let token: Token = "  spk_secret-value\n".parse().unwrap();
        assert_eq!(token.expose(), "spk_secret-value");
        assert_eq!(token.to_string(), "****");
        assert_eq!(format!("{token:?}"), "Token(****)");
        assert_eq!(format!("{:?}", Some(&token)), "Some(Token(****))");
    }

    #[test]
    fn a_token_is_one_word_of_printable_ascii() {
        assert_eq!("".parse::<Token>(), Err(TokenError::Empty));
        assert_eq!(" \n".parse::<Token>(), Err(TokenError::Empty));
        let error = "abc def".parse::<Token>().unwrap_err();
        assert_eq!(error, TokenError::InvalidCharacter { position: 3 });
        assert!(!error.to_string().contains("abc"));
        assert!("tök".parse::<Token>().is_err());
    }
}
