//! The skill name: the one identifier that is a folder name, an index path
//! and a URL segment at once, so it is held to the strictest common rules;
//! and the name of the skill file. The bottom of the crate: `archive` and
//! `skill` both name skills, and this imports neither.

use std::fmt;
use std::str::FromStr;

/// The file every skill folder has at its root.
pub const SKILL_MD: &str = "SKILL.md";

/// The longest name the Agent Skills specification allows, in characters.
pub const MAX_NAME_LEN: usize = 64;

/// A valid skill name: 1 to 64 characters of `[a-z0-9-]`, with no leading,
/// trailing or doubled `-`, and not a Windows device name (`con`, `prn`,
/// `aux`, `nul`, `com0`-`com9`, `lpt0`-`lpt9`), the rule archive paths follow.
///
/// It can only be built through [`FromStr`] or [`serde::Deserialize`], so a
/// `SkillName` in hand is always safe to use as a path segment.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(transparent)]
pub struct SkillName(String);

/// Why a string is not a valid [`SkillName`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SkillNameError {
    #[error("the name is empty")]
    Empty,
    #[error("the name is {length} characters long; the limit is {MAX_NAME_LEN}")]
    TooLong { length: usize },
    #[error(
        "the name contains {character:?} at position {position}; only lowercase letters a-z, digits and `-` are allowed"
    )]
    InvalidCharacter { character: char, position: usize },
    #[error("the name starts with `-`")]
    LeadingHyphen,
    #[error("the name ends with `-`")]
    TrailingHyphen,
    #[error("the name contains `--`")]
    DoubleHyphen,
    #[error(
        "`{name}` is a reserved device name on Windows, where no folder can have it, so the skill could not be installed there"
    )]
    ReservedOnWindows { name: String },
}

impl SkillName {
    /// Returns the name as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Returns the valid name that `text`, a title or a near miss, most
    /// likely meant (`PDF Processing` gives `pdf-processing`, `Café` gives
    /// `cafe`, `aux` gives `aux-skill`), or `None` when nothing of it is
    /// usable (`!!!`).
    pub fn suggest(text: &str) -> Option<Self> {
        use unicode_normalization::UnicodeNormalization;
        use unicode_normalization::char::is_combining_mark;
        let mut name = String::new();
        // Decompose first so that accents fall away: `é` -> `e`.
        for character in text
            .trim()
            .nfd()
            .filter(|c| !is_combining_mark(*c))
            .flat_map(char::to_lowercase)
        {
            let mapped = if character.is_ascii_alphanumeric() {
                character
            } else {
                '-'
            };
            if !(mapped == '-' && (name.is_empty() || name.ends_with('-'))) {
                name.push(mapped);
            }
        }
        let mut name: String = name.chars().take(MAX_NAME_LEN).collect();
        name.truncate(name.trim_end_matches('-').len());
        // `con` would be valid but for being a Windows device: `con-skill` is not one.
        if is_reserved_on_windows(&name) {
            name.push_str("-skill");
        }
        name.parse().ok()
    }
}

impl FromStr for SkillName {
    type Err = SkillNameError;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        if name.is_empty() {
            return Err(SkillNameError::Empty);
        }
        let length = name.chars().count();
        if length > MAX_NAME_LEN {
            return Err(SkillNameError::TooLong { length });
        }
        if let Some((position, character)) = name
            .chars()
            .enumerate()
            .find(|(_, c)| !matches!(c, 'a'..='z' | '0'..='9' | '-'))
        {
            return Err(SkillNameError::InvalidCharacter {
                character,
                position: position + 1,
            });
        }
        if name.starts_with('-') {
            return Err(SkillNameError::LeadingHyphen);
        }
        if name.ends_with('-') {
            return Err(SkillNameError::TrailingHyphen);
        }
        if name.contains("--") {
            return Err(SkillNameError::DoubleHyphen);
        }
        // The name is a folder name: the same rule as for archive paths.
        if is_reserved_on_windows(name) {
            return Err(SkillNameError::ReservedOnWindows {
                name: name.to_owned(),
            });
        }
        Ok(Self(name.to_owned()))
    }
}

impl<'de> serde::Deserialize<'de> for SkillName {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

impl fmt::Display for SkillName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for SkillName {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// `CON`, `aux.txt`, `com1.log` and the like: Windows maps these names (with
/// any extension) to devices.
pub(crate) fn is_reserved_on_windows(component: &str) -> bool {
    let stem = component
        .split('.')
        .next()
        .unwrap_or(component)
        .trim_end()
        .to_ascii_uppercase();
    if matches!(
        stem.as_str(),
        "CON" | "PRN" | "AUX" | "NUL" | "CONIN$" | "CONOUT$"
    ) {
        return true;
    }
    // COM0-COM9 and LPT0-LPT9, and the superscript digits Windows also
    // treats as device numbers (`COM¹`).
    let mut characters = stem.chars();
    let prefix: String = characters.by_ref().take(3).collect();
    let digit = characters.next();
    (prefix == "COM" || prefix == "LPT")
        && characters.next().is_none()
        && digit.is_some_and(|digit| digit.is_ascii_digit() || matches!(digit, '¹' | '²' | '³'))
}

/// Returns up to three of `candidates` that look like `name` (a typo, a
/// missing word), the closest first: for "did you mean" hints.
pub fn closest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let mut scored: Vec<(f64, &str)> = candidates
        .into_iter()
        .filter(|candidate| *candidate != name)
        .map(|candidate| (strsim::jaro_winkler(candidate, name), candidate))
        .filter(|(score, _)| *score > 0.8)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
    scored.dedup_by(|a, b| a.1 == b.1);
    scored.into_iter().take(3).map(|(_, name)| name).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_the_spec_examples() {
        for name in ["pdf-processing", "a", "data-analysis-2", &"x".repeat(64)] {
            assert_eq!(name.parse::<SkillName>().unwrap().as_str(), name);
        }
    }

    #[test]
    fn refuses_each_broken_rule() {
        let cases = [
            ("", SkillNameError::Empty),
            (&*"x".repeat(65), SkillNameError::TooLong { length: 65 }),
            (
                "PDF",
                SkillNameError::InvalidCharacter {
                    character: 'P',
                    position: 1,
                },
            ),
            (
                "caf\u{e9}",
                SkillNameError::InvalidCharacter {
                    character: '\u{e9}',
                    position: 4,
                },
            ),
            (
                "a/b",
                SkillNameError::InvalidCharacter {
                    character: '/',
                    position: 2,
                },
            ),
            (
                "..",
                SkillNameError::InvalidCharacter {
                    character: '.',
                    position: 1,
                },
            ),
            (
                "my skill",
                SkillNameError::InvalidCharacter {
                    character: ' ',
                    position: 3,
                },
            ),
            ("-pdf", SkillNameError::LeadingHyphen),
            ("pdf-", SkillNameError::TrailingHyphen),
            ("pdf--processing", SkillNameError::DoubleHyphen),
            (
                "com1",
                SkillNameError::ReservedOnWindows {
                    name: "com1".into(),
                },
            ),
        ];
        for (name, expected) in cases {
            assert_eq!(name.parse::<SkillName>().unwrap_err(), expected, "{name:?}");
        }
    }

    #[test]
    fn suggests_the_name_a_title_meant() {
        let suggest = |text: &str| SkillName::suggest(text).map(|name| name.to_string());
        assert_eq!(suggest("PDF Processing").as_deref(), Some("pdf-processing"));
        assert_eq!(suggest("  My -- Tool!  ").as_deref(), Some("my-tool"));
        assert_eq!(suggest("Café Crème").as_deref(), Some("cafe-creme"));
        assert_eq!(suggest("AUX").as_deref(), Some("aux-skill"));
        assert_eq!(suggest(&"a-".repeat(40)).map(|name| name.len()), Some(63));
        assert_eq!(suggest("!!!"), None);
        assert_eq!(suggest("日本語"), None);
    }

    #[test]
    fn deserialize_goes_through_the_same_rules() {
        let error = serde_json::from_str::<SkillName>("\"../etc\"").unwrap_err();
        assert!(error.to_string().contains("only lowercase"), "{error}");
        let name: SkillName = serde_json::from_str("\"ok-name\"").unwrap();
        assert_eq!(name.as_str(), "ok-name");
    }

    #[test]
    fn close_names_come_closest_first_and_far_ones_not_at_all() {
        let names = [
            "pdf-processing",
            "pdf-forms",
            "docx",
            "pdf-processor",
            "spreadsheet",
        ];
        assert_eq!(
            closest("pdf-procesing", names),
            ["pdf-processing", "pdf-processor", "pdf-forms"]
        );
        assert!(closest("kubernetes", names).is_empty());
        assert!(closest("docx", ["docx"]).is_empty());
    }
}
