//! `NAME@VERSION` and `NAME[@VERSION]` on the command line.

use std::fmt;
use std::str::FromStr;

use skillpkg_index::skill::{SkillName, SkillNameError};

/// A skill name with an optional exact version: `pdf` or `pdf@1.2.0`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkillSpec {
    pub name: SkillName,
    pub version: Option<semver::Version>,
}

/// A skill name with an exact version: `pdf@1.2.0`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkillVersion {
    pub name: SkillName,
    pub version: semver::Version,
}

/// Why a command-line argument is not a skill (and version).
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    #[error("`{text}` is not a skill name: {source}")]
    Name {
        text: String,
        #[source]
        source: SkillNameError,
    },
    #[error("`{text}` is not a version (expected MAJOR.MINOR.PATCH, like 1.0.0): {source}")]
    Version {
        text: String,
        #[source]
        source: semver::Error,
    },
    #[error("`{0}` has no version: write NAME@VERSION, like {0}@1.0.0")]
    MissingVersion(String),
}

impl FromStr for SkillSpec {
    type Err = SpecError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let (name, version) = match text.split_once('@') {
            Some((name, version)) => (name, Some(version)),
            None => (text, None),
        };
        let name = name.parse().map_err(|source| SpecError::Name {
            text: name.to_owned(),
            source,
        })?;
        let version = version
            .map(|version| {
                version.parse().map_err(|source| SpecError::Version {
                    text: version.to_owned(),
                    source,
                })
            })
            .transpose()?;
        Ok(Self { name, version })
    }
}

impl FromStr for SkillVersion {
    type Err = SpecError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let spec: SkillSpec = text.parse()?;
        match spec.version {
            Some(version) => Ok(Self {
                name: spec.name,
                version,
            }),
            None => Err(SpecError::MissingVersion(text.to_owned())),
        }
    }
}

impl fmt::Display for SkillVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@{}", self.name, self.version)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_with_and_without_versions() {
        let spec: SkillSpec = "pdf-processing@1.2.0-beta.1".parse().unwrap();
        assert_eq!(spec.name.as_str(), "pdf-processing");
        assert_eq!(spec.version.unwrap().to_string(), "1.2.0-beta.1");
        assert_eq!("pdf".parse::<SkillSpec>().unwrap().version, None);
        assert!(matches!(
            "PDF".parse::<SkillSpec>(),
            Err(SpecError::Name { .. })
        ));
        assert!(matches!(
            "pdf@1".parse::<SkillSpec>(),
            Err(SpecError::Version { .. })
        ));
        assert!(matches!(
            "pdf".parse::<SkillVersion>(),
            Err(SpecError::MissingVersion(text)) if text == "pdf"
        ));
        assert_eq!(
            "pdf@1.0.0".parse::<SkillVersion>().unwrap().to_string(),
            "pdf@1.0.0"
        );
    }
}
