//! How YAML 1.2 and YAML 1.1 parsers read a plain scalar.
//!
//! skillpkg reads frontmatter with YAML 1.2's core schema (saphyr); many
//! agents read it with a YAML 1.1 parser, most often PyYAML. The two agree
//! on structure but not on what an unquoted (plain) scalar is: `on` is a
//! string here and the boolean true for PyYAML, `010` is ten here and eight
//! there, `2024-01-01` is a string here and a date there. This module gives
//! both readings of a plain scalar, so that validation can warn where they
//! differ (`ambiguous-scalar`) and the runtime can serve a frontmatter in
//! which they no longer do.
//!
//! The YAML 1.1 reading is PyYAML's: its implicit resolvers (the regular
//! expressions of `yaml/resolver.py`) and its safe constructors, which turn
//! the text into a value. It was checked scalar by scalar against PyYAML
//! 6.0, ruamel.yaml 0.19 in YAML 1.1 mode, and js-yaml 3 and 4 (the test
//! table below holds the readings). The one place where YAML 1.1 parsers
//! disagree among themselves is `y`, `Y`, `n` and `N`: booleans in the YAML
//! 1.1 type list, which ruamel.yaml follows and PyYAML and js-yaml do not;
//! they are reported too, naming who reads them so.
//!
//! This is not a second YAML parser: the parser's events give the scalar's
//! text, and only its resolution to a type is done here.

use std::borrow::Cow;
use std::fmt;
use std::sync::LazyLock;

use regex::Regex;

/// What a parser makes of a plain scalar.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Reading {
    Null,
    Bool(bool),
    Integer(i128),
    /// An integer past `i128`: Python's integers have no bound.
    LargeInteger,
    Float(f64),
    String,
    /// A date (`datetime.date`).
    Date,
    /// A date with a time (`datetime.datetime`).
    Timestamp,
    /// The parser refuses the document: PyYAML resolves `=` to YAML 1.1's
    /// `value` type and has no constructor for it, and a `2024-13-45` to
    /// a date it cannot make.
    Refused(&'static str),
}

impl PartialEq for Reading {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::Null, Self::Null)
            | (Self::String, Self::String)
            | (Self::Date, Self::Date)
            | (Self::Timestamp, Self::Timestamp)
            | (Self::LargeInteger, Self::LargeInteger) => true,
            (Self::Bool(a), Self::Bool(b)) => a == b,
            (Self::Integer(a), Self::Integer(b)) => a == b,
            (Self::Float(a), Self::Float(b)) => a == b || (a.is_nan() && b.is_nan()),
            (Self::Refused(a), Self::Refused(b)) => a == b,
            _ => false,
        }
    }
}

impl Reading {
    /// Describes the reading of the scalar `text` for a message: `the
    /// string "on"`, `the integer 8`.
    pub(crate) fn describe(self, text: &str) -> String {
        match self {
            Self::Null => "null".to_owned(),
            Self::Bool(value) => format!("the boolean {value}"),
            Self::Integer(value) => format!("the integer {value}"),
            Self::LargeInteger => "an integer too large for this one".to_owned(),
            Self::Float(value) if value.is_nan() => "the number NaN".to_owned(),
            Self::Float(value) if value.is_infinite() => {
                let sign = if value < 0.0 { "minus " } else { "" };
                format!("the number {sign}infinity")
            }
            Self::Float(value) => format!("the number {}", float_text(value)),
            Self::String => format!("the string \"{text}\""),
            Self::Date => "a date".to_owned(),
            Self::Timestamp => "a timestamp".to_owned(),
            Self::Refused(why) => format!("an error ({why})"),
        }
    }
}

/// Which YAML 1.1 parsers read a scalar the way [`yaml_1_1`] says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Readers {
    /// PyYAML, and the YAML 1.1 parsers that share its resolvers.
    PyYaml,
    /// PyYAML, and js-yaml too (its default schema has timestamps).
    PyYamlAndJsYaml,
    /// Only those that follow YAML 1.1's type list to the letter.
    Strict,
}

impl fmt::Display for Readers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::PyYaml => "YAML 1.1 parsers such as PyYAML",
            Self::PyYamlAndJsYaml => "YAML 1.1 parsers such as PyYAML, and for js-yaml",
            Self::Strict => {
                "YAML 1.1 parsers that follow its boolean type to the letter, such as ruamel.yaml reading YAML 1.1 (PyYAML reads the string)"
            }
        })
    }
}

/// The two readings of a plain scalar that YAML 1.1 and 1.2 read apart.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct TwoReadings {
    /// What skillpkg (YAML 1.2, the core schema) reads.
    pub here: Reading,
    /// What a YAML 1.1 parser reads.
    pub yaml_1_1: Reading,
    pub readers: Readers,
}

/// Returns both readings of the untagged plain scalar `text` when they
/// differ, `None` when every parser reads it alike.
pub(crate) fn two_readings(text: &str) -> Option<TwoReadings> {
    // Every scalar whose readings differ starts with one of these; most
    // keys and values do not, and are done with here.
    let first = *text.as_bytes().first()?;
    if !matches!(
        first,
        b'0'..=b'9' | b'+' | b'-' | b'.' | b'=' | b'y' | b'Y' | b'n' | b'N' | b'o' | b'O'
    ) {
        return None;
    }
    let (yaml_1_1, readers) = yaml_1_1(text);
    let here = yaml_1_2(text);
    (here != yaml_1_1).then_some(TwoReadings {
        here,
        yaml_1_1,
        readers,
    })
}

/// What skillpkg's parser reads: saphyr's resolution of a plain scalar,
/// the one the document model holds.
pub(crate) fn yaml_1_2(text: &str) -> Reading {
    match saphyr::Scalar::parse_from_cow(Cow::Borrowed(text)) {
        saphyr::Scalar::Null => Reading::Null,
        saphyr::Scalar::Boolean(value) => Reading::Bool(value),
        saphyr::Scalar::Integer(value) => Reading::Integer(value.into()),
        saphyr::Scalar::FloatingPoint(value) => Reading::Float(value.into_inner()),
        saphyr::Scalar::String(_) => Reading::String,
    }
}

// PyYAML's implicit resolvers (`yaml/resolver.py`), verbose patterns
// written out.
static BOOL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$")
        .expect("valid regex")
});
static FLOAT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
    )
    .expect("valid regex")
});
static INT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$",
    )
    .expect("valid regex")
});
static DATE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]$").expect("valid regex")
});
static TIMESTAMP: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?(?:[Tt]|[ \t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9](?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?$",
    )
    .expect("valid regex")
});

/// What a YAML 1.1 parser reads: PyYAML's resolvers in its order (bool,
/// float, int, null, timestamp, value), then its constructor.
pub(crate) fn yaml_1_1(text: &str) -> (Reading, Readers) {
    let pyyaml = |reading| (reading, Readers::PyYaml);
    match text {
        "y" | "Y" => return (Reading::Bool(true), Readers::Strict),
        "n" | "N" => return (Reading::Bool(false), Readers::Strict),
        "" | "~" | "null" | "Null" | "NULL" => return pyyaml(Reading::Null),
        "=" => {
            return pyyaml(Reading::Refused(
                "YAML 1.1's `value` type, which PyYAML cannot construct",
            ));
        }
        _ => {}
    }
    if BOOL.is_match(text) {
        return pyyaml(Reading::Bool(
            matches!(text.as_bytes()[0], b'y' | b'Y' | b't' | b'T' | b'o' | b'O')
                && !text.eq_ignore_ascii_case("off"),
        ));
    }
    if FLOAT.is_match(text) {
        return pyyaml(construct_float(text));
    }
    if INT.is_match(text) {
        return pyyaml(construct_int(text));
    }
    if DATE.is_match(text) {
        return (Reading::Date, Readers::PyYamlAndJsYaml);
    }
    if TIMESTAMP.is_match(text) {
        return (Reading::Timestamp, Readers::PyYamlAndJsYaml);
    }
    pyyaml(Reading::String)
}

/// Splits off a leading sign, as PyYAML's constructors do.
fn sign(text: &str) -> (bool, &str) {
    match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    }
}

/// PyYAML's `construct_yaml_float`.
fn construct_float(text: &str) -> Reading {
    let cleaned = text.replace('_', "").to_ascii_lowercase();
    let (negative, unsigned) = sign(&cleaned);
    let magnitude = match unsigned {
        ".inf" => f64::INFINITY,
        ".nan" => return Reading::Float(f64::NAN),
        _ if unsigned.contains(':') => {
            let mut value = 0.0;
            for part in unsigned.split(':') {
                let Ok(part) = part.parse::<f64>() else {
                    return Reading::Refused("a number PyYAML cannot read");
                };
                value = value * 60.0 + part;
            }
            value
        }
        _ => match unsigned.parse::<f64>() {
            Ok(value) => value,
            Err(_) => return Reading::Refused("a number PyYAML cannot read"),
        },
    };
    Reading::Float(if negative { -magnitude } else { magnitude })
}

/// PyYAML's `construct_yaml_int`.
fn construct_int(text: &str) -> Reading {
    let cleaned = text.replace('_', "");
    let (negative, unsigned) = sign(&cleaned);
    let parsed = if unsigned == "0" {
        Some(0)
    } else if let Some(digits) = unsigned.strip_prefix("0b") {
        i128::from_str_radix(digits, 2).ok()
    } else if let Some(digits) = unsigned.strip_prefix("0x") {
        i128::from_str_radix(digits, 16).ok()
    } else if unsigned.starts_with('0') {
        i128::from_str_radix(unsigned, 8).ok()
    } else if unsigned.contains(':') {
        unsigned.split(':').try_fold(0_i128, |value, part| {
            value
                .checked_mul(60)?
                .checked_add(part.parse::<i128>().ok()?)
        })
    } else {
        unsigned.parse::<i128>().ok()
    };
    match parsed {
        Some(value) => Reading::Integer(if negative { -value } else { value }),
        // The pattern allows no other failure than an empty `0b_` or a
        // number past `i128`.
        None if unsigned.trim_start_matches(['0', 'b', 'x']).is_empty() => {
            Reading::Refused("a number PyYAML cannot read")
        }
        None => Reading::LargeInteger,
    }
}

/// Returns how to write the YAML 1.2 reading `here` of a plain scalar so
/// that YAML 1.1 and 1.2 parsers read it alike: a string quoted, a number
/// in a form both read as that number. `None` when there is none.
pub(crate) fn unambiguous_form(text: &str, here: Reading) -> Option<String> {
    let written = match here {
        Reading::String => {
            let mut quoted = String::with_capacity(text.len() + 2);
            quoted.push('"');
            for character in text.chars() {
                if matches!(character, '"' | '\\') {
                    quoted.push('\\');
                }
                quoted.push(character);
            }
            quoted.push('"');
            return Some(quoted);
        }
        Reading::Integer(value) => value.to_string(),
        Reading::Float(value) if value.is_nan() => ".nan".to_owned(),
        Reading::Float(value) if value.is_infinite() => {
            if value < 0.0 { "-.inf" } else { ".inf" }.to_owned()
        }
        Reading::Float(value) => float_text(value),
        _ => return None,
    };
    // Both must read the new form as the old value: checked, not assumed.
    let both = yaml_1_2(&written) == here && yaml_1_1(&written).0 == here;
    both.then_some(written)
}

/// A float as PyYAML's resolver takes one: a dot in the mantissa and a
/// sign on the exponent (`1000.0`, `1.5e+20`, `1.0e-7`).
fn float_text(value: f64) -> String {
    let shortest = format!("{value:?}");
    match shortest.split_once('e') {
        None => shortest,
        Some((mantissa, exponent)) => {
            let dot = if mantissa.contains('.') { "" } else { ".0" };
            let plus = if exponent.starts_with('-') { "" } else { "+" };
            format!("{mantissa}{dot}e{plus}{exponent}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Reading::*;
    use super::*;

    /// Each scalar with what saphyr (YAML 1.2 core, as skillpkg reads it)
    /// and PyYAML 6.0.4 (`yaml.safe_load`) read, checked against both.
    /// Where js-yaml or ruamel.yaml differ from PyYAML the comment says so.
    const TABLE: &[(&str, Reading, Reading)] = &[
        // Booleans: YAML 1.1 has ten spellings more than YAML 1.2.
        ("yes", String, Bool(true)),
        ("Yes", String, Bool(true)),
        ("YES", String, Bool(true)),
        ("no", String, Bool(false)),
        ("No", String, Bool(false)),
        ("NO", String, Bool(false)),
        ("on", String, Bool(true)),
        ("On", String, Bool(true)),
        ("ON", String, Bool(true)),
        ("off", String, Bool(false)),
        ("Off", String, Bool(false)),
        ("OFF", String, Bool(false)),
        // js-yaml 3 and 4 read all of the above as strings.
        ("true", Bool(true), Bool(true)),
        ("True", Bool(true), Bool(true)),
        ("FALSE", Bool(false), Bool(false)),
        ("tRue", String, String),
        ("nope", String, String),
        ("online", String, String),
        // Nulls are alike.
        ("~", Null, Null),
        ("null", Null, Null),
        ("NULL", Null, Null),
        // A leading zero is octal in YAML 1.1 (js-yaml 3 too), decimal in
        // YAML 1.2's core schema; `08` is no octal, so a string.
        ("010", Integer(10), Integer(8)),
        ("0010", Integer(10), Integer(8)),
        ("-010", Integer(-10), Integer(-8)),
        ("+010", Integer(10), Integer(8)),
        ("08", Integer(8), String),
        ("09", Integer(9), String),
        ("0", Integer(0), Integer(0)),
        ("00", Integer(0), Integer(0)),
        ("0o17", Integer(15), String),
        ("0O17", String, String),
        ("0x1F", Integer(31), Integer(31)),
        ("+0x1F", String, Integer(31)),
        // saphyr reads no sign before `0x` (ruamel.yaml and js-yaml 4 do),
        // but reads one after it.
        ("-0x1F", String, Integer(-31)),
        ("0x1f_ff", String, Integer(8191)),
        ("0x+1F", Integer(31), String),
        // Binary is YAML 1.1's (ruamel.yaml and js-yaml 4 read it in 1.2).
        ("0b101", String, Integer(5)),
        ("-0b101", String, Integer(-5)),
        ("0b1_0", String, Integer(2)),
        // YAML 1.1 allows `_` between digits.
        ("1_000", String, Integer(1000)),
        ("1_0", String, Integer(10)),
        ("1_000.5", String, Float(1000.5)),
        ("+12", Integer(12), Integer(12)),
        ("-12", Integer(-12), Integer(-12)),
        (
            "12345678901234567890",
            Float(12345678901234567890.0),
            Integer(12345678901234567890),
        ),
        // Base 60 (js-yaml 3 too).
        ("1:20", String, Integer(80)),
        ("-1:20", String, Integer(-80)),
        ("12:30", String, Integer(750)),
        ("10:00:00", String, Integer(36000)),
        ("190:20:30", String, Integer(685230)),
        ("1:20.5", String, Float(80.5)),
        ("1:60", String, String),
        ("12:30pm", String, String),
        // YAML 1.1 floats need a dot and a signed exponent (ruamel.yaml
        // reads `1e3` as 1000.0 with a warning, js-yaml as 1000).
        ("1e3", Float(1000.0), String),
        ("1E3", Float(1000.0), String),
        ("1e+3", Float(1000.0), String),
        ("1.0e3", Float(1000.0), String),
        ("1.0e+3", Float(1000.0), Float(1000.0)),
        ("1.0E-3", Float(0.001), Float(0.001)),
        ("1.5", Float(1.5), Float(1.5)),
        ("1.", Float(1.0), Float(1.0)),
        (".5", Float(0.5), Float(0.5)),
        // A sign before a bare dot is no YAML 1.1 float (nor js-yaml's).
        ("-.5", Float(-0.5), String),
        ("+.5", Float(0.5), String),
        ("-1.5", Float(-1.5), Float(-1.5)),
        (".", String, String),
        (".inf", Float(f64::INFINITY), Float(f64::INFINITY)),
        ("+.inf", Float(f64::INFINITY), Float(f64::INFINITY)),
        ("-.Inf", Float(f64::NEG_INFINITY), Float(f64::NEG_INFINITY)),
        ("inf", String, String),
        (".nan", Float(f64::NAN), Float(f64::NAN)),
        (".NaN", Float(f64::NAN), Float(f64::NAN)),
        ("nan", String, String),
        ("+.nan", String, String),
        // Dates and times are YAML 1.1 types (and js-yaml's, 3 and 4).
        ("2024-01-01", String, Date),
        ("2001-12-14t21:59:43.10-05:00", String, Timestamp),
        ("2001-12-14 21:59:43.10 -5", String, Timestamp),
        ("2024-13-45", String, Date),
        ("2024-1-1", String, String),
        // `=` is YAML 1.1's value type, which PyYAML cannot construct.
        (
            "=",
            String,
            Refused("YAML 1.1's `value` type, which PyYAML cannot construct"),
        ),
        ("==", String, String),
        // Versions and words are alike.
        ("1.0.0", String, String),
        ("3.14.15", String, String),
        ("0.10", Float(0.1), Float(0.1)),
        ("v1", String, String),
        ("+", String, String),
    ];

    #[test]
    fn reads_each_scalar_as_saphyr_and_pyyaml_do() {
        for (text, here, there) in TABLE {
            assert_eq!(yaml_1_2(text), *here, "YAML 1.2 reading of `{text}`");
            assert_eq!(yaml_1_1(text).0, *there, "YAML 1.1 reading of `{text}`");
            let differ = two_readings(text);
            assert_eq!(differ.is_some(), here != there, "`{text}`");
        }
    }

    #[test]
    fn y_and_n_are_booleans_only_for_a_strict_yaml_1_1_reader() {
        // ruamel.yaml 0.19 with `version = (1, 1)` reads these as booleans;
        // PyYAML and js-yaml read strings.
        for (text, value) in [("y", true), ("Y", true), ("n", false), ("N", false)] {
            let readings = two_readings(text).unwrap();
            assert_eq!(readings.here, String);
            assert_eq!(readings.yaml_1_1, Bool(value));
            assert_eq!(readings.readers, Readers::Strict);
        }
    }

    #[test]
    fn the_unambiguous_form_keeps_the_yaml_1_2_value() {
        for (text, expected) in [
            ("on", "\"on\""),
            ("2024-01-01", "\"2024-01-01\""),
            ("010", "10"),
            ("08", "8"),
            ("0o17", "15"),
            ("1e3", "1000.0"),
            ("-.5", "-0.5"),
            ("12345678901234567890", "1.2345678901234567e+19"),
            ("0x+1F", "31"),
        ] {
            let here = yaml_1_2(text);
            let form = unambiguous_form(text, here).unwrap();
            assert_eq!(form, expected, "`{text}`");
            assert!(two_readings(&form).is_none(), "`{form}`");
        }
        assert_eq!(float_text(1e-7), "1.0e-7");
    }
}
