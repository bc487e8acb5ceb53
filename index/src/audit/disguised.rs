//! Names that matter to an attacker, written so that neither a reader nor
//! a rule that matches text sees them: `slaitnederc/swa.` (reversed),
//! `.njf/perqragvnyf` (rot13), `.hdz/jylkluaphsz` (any Caesar shift), or
//! a list of numbers whose steps are those of `crontab` (character codes,
//! with or without an offset, or the steps of a running sum).
//!
//! Whatever computes the plain name back (a `reverse`, a `tr`, a loop
//! that subtracts, a data file read at run time) is beside the point:
//! the disguise itself is the sign. A program has no honest reason to
//! hold `~/.aws/credentials` reversed, and a name this long does not turn
//! up by chance in text (a match must also stand apart from the letters
//! around it, so a base64 blob that happens to hold one is no match).
//!
//! The names are the credential stores, start-up files, shells and
//! commands the line rules know. The text is read once as what a shift
//! of its letters keeps (the steps between them), where every shift of a
//! name, forwards or backwards, reads as the name does; one Aho-Corasick
//! automaton finds them all, and a second one finds the steps of the
//! names in each run of numbers.

use std::sync::LazyLock;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, AhoCorasickKind, MatchKind};

use super::text::{FileKind, Scan};
use super::{Rule, Severity};

/// What an attacker hides: credential stores, start-up files and
/// scheduled jobs, shells and the commands that fetch or run text. Each
/// is long enough (six characters or more) that a disguised spelling of
/// it is not found by chance.
const NAMES: &[&str] = &[
    ".ssh/id_",
    "id_rsa",
    "id_ed25519",
    "id_ecdsa",
    "authorized_keys",
    ".aws/credentials",
    "credentials",
    ".git-credentials",
    ".npmrc",
    ".pypirc",
    ".netrc",
    ".kube/config",
    ".docker/config",
    "application_default_credentials",
    ".config/gcloud",
    "gh/hosts.yml",
    ".vault-token",
    ".pgpass",
    "keychain",
    "wallet.dat",
    "cookies.sqlite",
    "login data",
    ".bashrc",
    ".zshrc",
    ".bash_profile",
    ".zprofile",
    "crontab",
    "launchagents",
    ".git/hooks",
    "ld.so.preload",
    "ld_preload",
    "prompt_command",
    "sitecustomize",
    "usercustomize",
    ".config/autostart",
    "/dev/tcp/",
    "/dev/udp/",
    "/bin/sh",
    "/bin/bash",
    "bash -i",
    "curl -",
    "curl http",
    "wget -",
    "wget http",
    "| bash",
    "invoke-expression",
    "downloadstring",
    "child_process",
    "execsync",
    "subprocess",
    "os.system",
    "base64 -d",
    "mkfifo",
    "github_token",
    "aws_secret_access_key",
    "aws_access_key_id",
    "npm_token",
    "cargo_registry_token",
    "openai_api_key",
    "anthropic_api_key",
];

/// The fewest letters a name needs to be looked for shifted.
const MIN_SHIFTED_LETTERS: usize = 6;

/// How a name was disguised, for the message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Disguise {
    Reversed,
    /// Each letter moved this many places along the alphabet.
    Shifted(u8),
    ReversedShifted(u8),
}

impl Disguise {
    fn describe(self) -> String {
        match self {
            Self::Reversed => "written backwards".to_owned(),
            Self::Shifted(13) => "in rot13".to_owned(),
            Self::Shifted(by) => format!("with each letter moved {by} places along the alphabet"),
            Self::ReversedShifted(13) => "backwards and in rot13".to_owned(),
            Self::ReversedShifted(by) => {
                format!("backwards, each letter moved {by} places along the alphabet")
            }
        }
    }
}

/// `text` as what a shift of its letters keeps: each ASCII letter that
/// follows another becomes the distance between them along the alphabet
/// (`A` for none, `B` for one, ...), each letter that starts a run
/// becomes `*`, and every other byte stays. Any Caesar shift of a name,
/// rot13 among them and in either case, reads the same here as the name.
fn unshifted(text: &[u8]) -> Vec<u8> {
    let mut previous: Option<u8> = None;
    text.iter()
        .map(|&byte| {
            if byte.is_ascii_alphabetic() {
                let letter = byte.to_ascii_lowercase() - b'a';
                let out = previous.map_or(b'*', |before| b'A' + (letter + 26 - before) % 26);
                previous = Some(letter);
                out
            } else {
                previous = None;
                byte
            }
        })
        .collect()
}

/// The names unshifted, forwards and backwards: pattern `2 * i` is name
/// `i`, pattern `2 * i + 1` the same name backwards.
static UNSHIFTED: LazyLock<AhoCorasick> = LazyLock::new(|| {
    let texts = NAMES.iter().flat_map(|name| {
        let reversed: Vec<u8> = name.bytes().rev().collect();
        [unshifted(name.as_bytes()), unshifted(&reversed)]
    });
    AhoCorasickBuilder::new()
        .match_kind(MatchKind::Standard)
        .kind(Some(AhoCorasickKind::DFA))
        .build(texts)
        .expect("the unshifted names build an automaton")
});

/// How `found` (a match of pattern `pattern`) disguises its name, or
/// `None` when it is the name as written or a shift too likely by chance.
fn disguise(found: &[u8], pattern: usize) -> Option<(&'static str, Disguise)> {
    let name = NAMES[pattern / 2];
    let reversed = pattern % 2 == 1;
    let spelt: Vec<u8> = if reversed {
        name.bytes().rev().collect()
    } else {
        name.bytes().collect()
    };
    // The shift is that of any letter, the first one's.
    let (at, &letter) = spelt
        .iter()
        .enumerate()
        .find(|(_, b)| b.is_ascii_alphabetic())?;
    let by = (found[at].to_ascii_lowercase() + 26 - letter) % 26;
    // Shifted, a name of few letters is a word by chance (`curl -`
    // backwards and moved 20 places is `- flow`).
    let letters = name.bytes().filter(u8::is_ascii_alphabetic).count();
    match (reversed, by) {
        (false, 0) => None,
        (true, 0) => Some((name, Disguise::Reversed)),
        _ if letters < MIN_SHIFTED_LETTERS => None,
        (false, by) => Some((name, Disguise::Shifted(by))),
        (true, by) => Some((name, Disguise::ReversedShifted(by))),
    }
}

/// The steps between the characters of each name, one byte a step (see
/// [`steps`]), for the names long enough that six steps or more pin them.
static STEPS: LazyLock<(AhoCorasick, Vec<&'static str>)> = LazyLock::new(|| {
    let names: Vec<&'static str> = NAMES
        .iter()
        .copied()
        .filter(|name| name.len() >= 7)
        .collect();
    let texts: Vec<Vec<u8>> = names
        .iter()
        .map(|name| {
            let codes: Vec<i64> = name.bytes().map(i64::from).collect();
            steps(&codes)
        })
        .collect();
    let automaton = AhoCorasickBuilder::new()
        .match_kind(MatchKind::Standard)
        .build(&texts)
        .expect("the names' steps build an automaton");
    (automaton, names)
});

/// The most findings a file gets from this rule: one says it all.
const MAX_FINDINGS: usize = 3;
/// The fewest numbers in a run that could spell a name.
const MIN_RUN: usize = 7;
/// The most numbers read from one file.
const MAX_NUMBERS: usize = 1 << 16;

/// Reports the names that `scan`'s text disguises: spelt otherwise in a
/// script or a data file, which programs read (a document's prose is the
/// instruction rules' to read, and its base64 `encoded`'s), and as
/// numbers in any file (a table a script reads may be a "document").
pub(crate) fn scan(scan: &mut Scan<'_>) {
    let programs_read = matches!(scan.kind, FileKind::Script | FileKind::Other);
    let text = scan.text;
    let bytes = text.as_bytes();
    let standalone = |start: usize, end: usize| {
        let before = start
            .checked_sub(1)
            .and_then(|at| bytes.get(at))
            .is_some_and(u8::is_ascii_alphanumeric)
            && bytes[start].is_ascii_alphanumeric();
        let after = bytes.get(end).is_some_and(u8::is_ascii_alphanumeric)
            && bytes[end - 1].is_ascii_alphanumeric();
        !before && !after
    };
    let mut found = 0;
    let flat = if programs_read {
        unshifted(bytes)
    } else {
        Vec::new()
    };
    for hit in UNSHIFTED.find_overlapping_iter(&flat) {
        if !standalone(hit.start(), hit.end()) {
            continue;
        }
        let Some((name, disguise)) =
            disguise(&bytes[hit.start()..hit.end()], hit.pattern().as_usize())
        else {
            continue;
        };
        scan.report(
            Rule::ObfuscatedScript,
            Severity::Medium,
            hit.start(),
            hit.end(),
            format!(
                "spells `{name}` {}: a name that matters to an attacker, written so that a reader does not see it",
                disguise.describe()
            ),
        );
        found += 1;
        if found == MAX_FINDINGS {
            return;
        }
    }
    for (start, end, numbers) in runs(text) {
        let differences: Vec<i64> = numbers.windows(2).map(|pair| pair[1] - pair[0]).collect();
        for (codes, how) in [
            (&numbers, "character codes"),
            (&differences, "the steps of a running sum"),
        ] {
            let Some(hit) = STEPS.0.find(&steps(codes)) else {
                continue;
            };
            let name = STEPS.1[hit.pattern().as_usize()];
            scan.report(
                Rule::ObfuscatedScript,
                Severity::Medium,
                start,
                end,
                format!(
                    "a list of numbers that spells `{name}` as {how} (with or without an offset): a name that matters to an attacker, written so that a reader does not see it"
                ),
            );
            found += 1;
            if found == MAX_FINDINGS {
                return;
            }
            break;
        }
    }
}

/// The steps between consecutive numbers, each as one byte (`step +
/// 128`), or 255 for a step too large for any character of a name: what
/// a list of character codes keeps of its text whatever is added to
/// every code.
fn steps(codes: &[i64]) -> Vec<u8> {
    codes
        .windows(2)
        .map(|pair| {
            let step = pair[1] - pair[0];
            u8::try_from(step + 128)
                .ok()
                .filter(|&byte| byte != 255)
                .unwrap_or(255)
        })
        .collect()
}

/// The runs of `MIN_RUN` numbers or more in `text`, written in decimal and
/// separated by commas, semicolons or white space: their start, end and
/// values.
fn runs(text: &str) -> Vec<(usize, usize, Vec<i64>)> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut current: Vec<i64> = Vec::new();
    let mut start = 0;
    let mut end = 0;
    let mut at = 0;
    let mut read = 0;
    let mut close = |current: &mut Vec<i64>, start: usize, end: usize| {
        if current.len() >= MIN_RUN {
            out.push((start, end, std::mem::take(current)));
        } else {
            current.clear();
        }
    };
    while at < bytes.len() && read < MAX_NUMBERS {
        let byte = bytes[at];
        if byte.is_ascii_digit() {
            let from = at;
            while at < bytes.len() && bytes[at].is_ascii_digit() {
                at += 1;
            }
            // A number glued to a word or a decimal point is not one of
            // a list's (`x86`, `3.14`).
            let glued = from > 0
                && (bytes[from - 1].is_ascii_alphabetic() || bytes[from - 1] == b'.')
                || bytes
                    .get(at)
                    .is_some_and(|b| b.is_ascii_alphabetic() || *b == b'.');
            let value = text[from..at]
                .parse::<i64>()
                .ok()
                .filter(|_| at - from <= 7);
            match value {
                Some(value) if !glued => {
                    if current.is_empty() {
                        start = from;
                    }
                    current.push(value);
                    end = at;
                    read += 1;
                }
                _ => close(&mut current, start, end),
            }
            continue;
        }
        if !matches!(byte, b',' | b';' | b' ' | b'\t' | b'\r' | b'\n') {
            close(&mut current, start, end);
        }
        at += 1;
    }
    close(&mut current, start, end);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(text: &str) -> Vec<String> {
        let mut scan = Scan::new("scripts/x", text, FileKind::Script);
        super::scan(&mut scan);
        scan.findings.into_iter().map(|f| f.message).collect()
    }

    #[test]
    fn names_written_backwards_or_shifted_are_found() {
        let reversed = found(r#"const INPUTS: [&[u8]; 1] = [b"lmot.slaitnederc/ograc."];"#);
        assert!(
            reversed
                .iter()
                .any(|m| m.contains("`credentials` written backwards")),
            "{reversed:?}"
        );
        let rot13 = found("my @SEED = ('.njf/perqragvnyf', '.xhor/pbasvt');");
        assert!(
            rot13
                .iter()
                .any(|m| m.contains("`.aws/credentials` in rot13")),
            "{rot13:?}"
        );
        assert!(
            rot13.iter().any(|m| m.contains("`.kube/config` in rot13")),
            "{rot13:?}"
        );
        let caesar = found("p = home + '/' + shift('.hdz/jylkluaphsz', -7)");
        assert!(
            caesar.iter().any(|m| m.contains("moved 7 places")),
            "{caesar:?}"
        );
        let upper = found("X = 'CRONTAB'[::-1] or 'BATNORC'");
        assert!(
            upper
                .iter()
                .any(|m| m.contains("`crontab` written backwards")),
            "{upper:?}"
        );
    }

    #[test]
    fn numbers_that_step_like_a_name_are_found() {
        // `crontab` as codes, as codes plus 3, and as a running sum.
        let codes: Vec<i64> = "crontab".bytes().map(i64::from).collect();
        let plain = codes
            .iter()
            .map(i64::to_string)
            .collect::<Vec<_>>()
            .join(", ");
        assert!(found(&format!("x = [{plain}]"))[0].contains("`crontab` as character codes"));
        let offset = codes
            .iter()
            .map(|c| (c + 3).to_string())
            .collect::<Vec<_>>()
            .join(",");
        assert!(found(&format!("x = [{offset}]"))[0].contains("`crontab`"));
        let mut sum = 1000;
        let mut running = vec![sum.to_string()];
        for code in &codes {
            sum += code;
            running.push(sum.to_string());
        }
        let messages = found(&format!("# bounds\n{}\n", running.join("\n")));
        assert!(
            messages[0].contains("the steps of a running sum"),
            "{messages:?}"
        );
    }

    #[test]
    fn ordinary_text_numbers_and_blobs_are_not_disguises() {
        for text in [
            "def credentials(): return read('~/.aws/credentials')",
            "echo 'set up your .bashrc' && crontab -l",
            "version = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]",
            "primes = [2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37]",
            "pi = 3.14159 26535 89793 23846 26433 83279 50288",
            "Zm9vYmFyc2xhaXRuZWRlcmNmb29iYXJzbGFpdG5lZGVyY2Zvb2Jh",
            "The quick brown fox jumps over the lazy dog, sitting in the sun.",
            "x86 x87 x88 x89 x90 x91 x92 x93",
        ] {
            assert!(found(text).is_empty(), "{text}: {:?}", found(text));
        }
        // Inside a longer run of letters, a disguise is chance.
        assert!(found("QmFzZTY0slaitnederczQm").is_empty());
    }
}
