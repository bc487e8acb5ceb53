//! Portable archive paths: a path that means the same file on Linux, macOS
//! and Windows, and cannot climb out of the folder it is unpacked into.

use unicode_normalization::UnicodeNormalization;

use super::Limits;

/// Why a path is not portable.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PathProblem {
    #[error("the path is empty")]
    Empty,
    #[error("the path is absolute")]
    Absolute,
    #[error("the path starts with a Windows drive (`{0}:`)")]
    Drive(char),
    #[error("the path contains a backslash")]
    Backslash,
    #[error("the path contains an empty, `.` or `..` component")]
    Traversal,
    #[error("the path contains a NUL or control character")]
    ControlCharacter,
    #[error("the path contains {0:?}, which Windows does not allow in file names")]
    ForbiddenCharacter(char),
    #[error("`{0}` is a reserved device name on Windows")]
    ReservedName(String),
    #[error("`{0}` ends with a dot or a space, which Windows drops")]
    TrailingDotOrSpace(String),
    #[error("the path is {0} bytes long; the limit is {1}")]
    TooLong(usize, usize),
    #[error("the path is {0} levels deep; the limit is {1}")]
    TooDeep(usize, usize),
}

/// Checks that `path` (`/`-separated, relative) is portable and within `limits`.
pub fn check_portable_path(path: &str, limits: &Limits) -> Result<(), PathProblem> {
    if path.is_empty() {
        return Err(PathProblem::Empty);
    }
    if path.starts_with('/') {
        return Err(PathProblem::Absolute);
    }
    if has_drive_prefix(path) {
        return Err(PathProblem::Drive(path.chars().next().unwrap_or_default()));
    }
    if path.contains('\\') {
        return Err(PathProblem::Backslash);
    }
    if path.chars().any(char::is_control) {
        return Err(PathProblem::ControlCharacter);
    }
    if path.len() > limits.max_path_bytes {
        return Err(PathProblem::TooLong(path.len(), limits.max_path_bytes));
    }
    let depth = path.split('/').count();
    if depth > limits.max_depth {
        return Err(PathProblem::TooDeep(depth, limits.max_depth));
    }
    for component in path.split('/') {
        if component.is_empty() || component == "." || component == ".." {
            return Err(PathProblem::Traversal);
        }
        if let Some(character) = component
            .chars()
            .find(|c| matches!(c, '<' | '>' | ':' | '"' | '|' | '?' | '*'))
        {
            return Err(PathProblem::ForbiddenCharacter(character));
        }
        if component.ends_with(['.', ' ']) {
            return Err(PathProblem::TrailingDotOrSpace(component.to_owned()));
        }
        if is_reserved_on_windows(component) {
            return Err(PathProblem::ReservedName(component.to_owned()));
        }
    }
    Ok(())
}

fn has_drive_prefix(path: &str) -> bool {
    let bytes = path.as_bytes();
    bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':'
}

/// `CON`, `aux.txt`, `com1.log` and the like: Windows maps these names (with
/// any extension) to devices.
fn is_reserved_on_windows(component: &str) -> bool {
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

/// The key under which two paths collide on a case-insensitive or
/// normalising file system (macOS, Windows): NFC, then a full case fold
/// (upper, then lower case, so `ς` and `σ`, `µ` and `μ` meet).
pub fn collision_key(path: &str) -> String {
    let folded = path.nfc().collect::<String>().to_uppercase().to_lowercase();
    folded.nfc().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_ordinary_paths() {
        for path in [
            "SKILL.md",
            "scripts/extract.py",
            "assets/logo v2.png",
            "références/été.md",
            ".hidden",
        ] {
            assert_eq!(
                check_portable_path(path, &Limits::default()),
                Ok(()),
                "{path}"
            );
        }
    }

    #[test]
    fn refuses_each_unportable_form() {
        let limits = Limits::default();
        let cases: &[(&str, PathProblem)] = &[
            ("", PathProblem::Empty),
            ("/etc/x", PathProblem::Absolute),
            ("C:\\x", PathProblem::Drive('C')),
            ("c:x", PathProblem::Drive('c')),
            ("a\\b", PathProblem::Backslash),
            ("../x", PathProblem::Traversal),
            ("a/../../x", PathProblem::Traversal),
            ("a//b", PathProblem::Traversal),
            ("./a", PathProblem::Traversal),
            ("a\0b", PathProblem::ControlCharacter),
            ("a\x1bb", PathProblem::ControlCharacter),
            ("ab:c", PathProblem::ForbiddenCharacter(':')),
            ("CON", PathProblem::ReservedName("CON".into())),
            ("docs/aux.txt", PathProblem::ReservedName("aux.txt".into())),
            ("lpt9", PathProblem::ReservedName("lpt9".into())),
            (
                "COM\u{b9}.txt",
                PathProblem::ReservedName("COM\u{b9}.txt".into()),
            ),
            ("file.", PathProblem::TrailingDotOrSpace("file.".into())),
            ("dir /x", PathProblem::TrailingDotOrSpace("dir ".into())),
        ];
        for (path, problem) in cases {
            assert_eq!(
                check_portable_path(path, &limits).as_ref(),
                Err(problem),
                "{path:?}"
            );
        }
        assert!(matches!(
            check_portable_path(&"a".repeat(256), &limits),
            Err(PathProblem::TooLong(256, 255))
        ));
        assert!(matches!(
            check_portable_path(&vec!["d"; 17].join("/"), &limits),
            Err(PathProblem::TooDeep(17, 16))
        ));
        assert_eq!(check_portable_path("console.md", &limits), Ok(()));
        assert_eq!(check_portable_path("com10", &limits), Ok(()));
    }

    #[test]
    fn collision_keys_fold_case_and_unicode_normalisation() {
        assert_eq!(collision_key("SKILL.md"), collision_key("skill.md"));
        assert_eq!(collision_key("caf\u{e9}"), collision_key("cafe\u{301}"));
        assert_eq!(
            collision_key("\u{3c3}"),
            collision_key("\u{3c2}"),
            "sigma and final sigma"
        );
        assert_eq!(
            collision_key("\u{b5}"),
            collision_key("\u{3bc}"),
            "micro sign and mu"
        );
        assert_ne!(collision_key("a"), collision_key("b"));
    }
}
