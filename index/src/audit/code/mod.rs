//! Reading code: scripts parsed into trees, their strings folded, and
//! values followed from where they come from to where they run.
//!
//! The line rules (`behaviour`) see contiguous text; an attacker who
//! splits a string (`c=cu; $c"rl"`), keeps a decoded value in a variable,
//! or writes a download to a file and runs it later walks past them. So a
//! script in a language the audit parses (shell, Python, JavaScript,
//! TypeScript) is parsed with tree-sitter and lowered to [`Event`]s:
//!
//! - [`Event::Command`]: a command or call with its pieces folded (quotes
//!   joined, variables that hold constants replaced, `os.path.join` and
//!   `+` of literals done, constant base64 and hex decoded). The line
//!   rules read these as a reading of their own, and what they find is
//!   reported at the statement's place;
//! - [`Event::Exec`], [`Event::RunFile`], [`Event::Download`] and
//!   [`Event::Send`]: where values go. A value carries its [`Taint`]:
//!   read from the network, decoded, the whole environment, a credential
//!   store. [`judge`] reports the pairs that are attacks: network bytes or
//!   decoded bytes run as code, a downloaded file run, a credential or the
//!   environment sent.
//!
//! The analysis reads one file at a time and ignores the order of
//! statements (a name holds every value assigned to it anywhere), which
//! errs towards reporting. It never runs anything.

mod cmd;
mod embedded;
mod generic;
mod js;
mod link;
mod powershell;
mod python;
mod shell;
mod value;

use tree_sitter::{Language, Node, Parser, Tree};

use super::patterns::PatternSet;
use super::text::Scan;
use super::{Rule, Severity};
pub(crate) use embedded::{Embedded, embedded, is_markup, runs_as_yaml};
pub(crate) use link::{MAX_MODULE, MAX_MODULES, local_imports};
pub(crate) use value::{Env, Taint, Val};

/// The largest script parsed: larger ones are read by the line rules
/// alone (parsing costs about 0.5 ms per 1 KB on the slowest grammar).
pub(crate) const MAX_PARSED: usize = 1024 * 1024;

/// How deep the lowering follows nested expressions; deeper ones are
/// unknown values (a tree nested 100,000 deep must not exhaust the stack).
const MAX_DEPTH: usize = 200;

/// How many times a file is lowered to let values reach uses that come
/// before their assignment.
const MAX_PASSES: usize = 4;

/// The languages the audit parses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Lang {
    Shell,
    Python,
    JavaScript,
    TypeScript,
    PowerShell,
    /// Windows batch files, read a line at a time (no grammar).
    Cmd,
    /// A language without a grammar here (Ruby, Perl, Lua, Go, PHP,
    /// Rust, ...), read as tokens written with these comments.
    Generic(generic::Comments),
}

impl Lang {
    fn grammar(self) -> Option<Language> {
        Some(match self {
            Self::Shell => tree_sitter_bash::LANGUAGE.into(),
            Self::Python => tree_sitter_python::LANGUAGE.into(),
            Self::JavaScript => tree_sitter_javascript::LANGUAGE.into(),
            Self::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
            Self::PowerShell => tree_sitter_powershell::LANGUAGE.into(),
            Self::Cmd | Self::Generic(_) => return None,
        })
    }
}

/// Returns the language of the script at `path` (relative, lower or any
/// case) with `text`, by extension, then by `#!` line; `None` for files
/// the audit does not parse.
pub(crate) fn language(path: &str, text: &str) -> Option<Lang> {
    let name = path.rsplit('/').next().unwrap_or(path).to_ascii_lowercase();
    let extension = name.rsplit_once('.').map(|(_, extension)| extension);
    let by_extension = match extension {
        Some("sh" | "bash" | "zsh" | "ksh" | "command") => Some(Lang::Shell),
        Some("py" | "pyw") => Some(Lang::Python),
        Some("js" | "mjs" | "cjs" | "jsx") => Some(Lang::JavaScript),
        Some("ts" | "mts" | "cts") => Some(Lang::TypeScript),
        Some("ps1" | "psm1" | "psd1") => Some(Lang::PowerShell),
        Some("cmd" | "bat") => Some(Lang::Cmd),
        Some(
            "rb" | "rake" | "gemspec" | "pl" | "pm" | "r" | "jl" | "tcl" | "ex" | "exs" | "awk"
            | "cr",
        ) => Some(Lang::Generic(generic::Comments::Hash)),
        Some(
            "go" | "rs" | "php" | "java" | "kt" | "kts" | "cs" | "swift" | "scala" | "groovy"
            | "gradle" | "dart" | "c" | "cc" | "cpp" | "h" | "zig" | "v",
        ) => Some(Lang::Generic(generic::Comments::Slashes)),
        Some("lua") => Some(Lang::Generic(generic::Comments::Dashes)),
        _ => None,
    };
    if by_extension.is_some() {
        return by_extension;
    }
    if name == ".envrc" || name == ".profile" || name.ends_with("rc") && name.starts_with(".ba") {
        return Some(Lang::Shell);
    }
    if matches!(
        name.as_str(),
        "rakefile" | "gemfile" | "guardfile" | "podfile" | "vagrantfile" | "brewfile"
    ) {
        return Some(Lang::Generic(generic::Comments::Hash));
    }
    let first = text.lines().next().unwrap_or("");
    let interpreter = first.strip_prefix("#!")?;
    let mut words = interpreter.split_whitespace();
    let mut program = words.next()?.rsplit('/').next()?;
    if program == "env" {
        program = words.find(|word| !word.starts_with('-'))?;
    }
    match program.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.') {
        "sh" | "bash" | "dash" | "zsh" | "ksh" | "ash" => Some(Lang::Shell),
        "python" | "pypy" => Some(Lang::Python),
        "node" | "nodejs" | "deno" | "bun" => Some(Lang::JavaScript),
        "ts-node" | "tsx" => Some(Lang::TypeScript),
        "pwsh" | "powershell" => Some(Lang::PowerShell),
        "ruby" | "perl" | "Rscript" | "julia" | "tclsh" | "elixir" | "awk" | "gawk" | "crystal" => {
            Some(Lang::Generic(generic::Comments::Hash))
        }
        "php" => Some(Lang::Generic(generic::Comments::Slashes)),
        "lua" | "luajit" => Some(Lang::Generic(generic::Comments::Dashes)),
        _ => None,
    }
}

/// Where a value goes, or a folded command, at the bytes `start..end`
/// of the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Event {
    pub(crate) start: usize,
    pub(crate) end: usize,
    pub(crate) what: What,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum What {
    /// A command or call with its pieces folded, for the line rules.
    Command(String),
    /// Code run from a value: `eval`, `exec`, `sh -c`, `new Function`.
    Exec(Val),
    /// A program given inline to its interpreter (`node -e CODE`,
    /// `python3 -c CODE`, `bash -c CODE`), in the language it is in: read
    /// as code, its flows reported at the statement that runs it.
    Inline(Lang, String),
    /// A function that runs its own parameter as code (`text =>
    /// vm.runInThisContext(text)`), passed or stored to be called later.
    Evaluator,
    /// Downloaded or decoded text handed to a function the code was given
    /// rather than one it defines (`this.loader(code)`): with an
    /// [`What::Evaluator`] in the same file, a likely run.
    PassedOn(Val),
    /// A file run as a program: `sh F`, `. F`, `./F`, `subprocess.run([F])`.
    RunFile(Val),
    /// A file loaded by a deserialiser that runs the code its bytes name
    /// (`shelve.open(F)`, `pickle.load(f)`, `joblib.load(F)`).
    Unpickle(Val),
    /// Network bytes written to the file a value names.
    Download(Val),
    /// A value sent over the network.
    Send(Val),
    /// A module or function looked up by a name the code computes
    /// (`importlib.import_module(x)`, `getattr(os, x)`,
    /// `reduce(getattr, parts, m)`, `globals()[x]`,
    /// `module.constructor._load(x)`, `Reflect.get(m, x)`): what is
    /// called is hidden from a reader.
    Dispatch,
    /// Something else a script hides from a reader, said in words: a
    /// path under the home folder built from decoded text.
    Hidden(&'static str),
    /// A regular expression or a glob (`re.compile(r"...")`, `/.../`,
    /// `new RegExp(...)`): what the line rules find in it matches text
    /// and runs nothing.
    Pattern,
    /// A comment: what the line rules find in it does not run.
    Comment,
    /// A file written (`>>`, `tee`, `cp`, `open(F, "w")`,
    /// `writeFileSync`), with what is written when known.
    Write { path: Val, content: Val },
    /// A statement that only names a credential store (an assignment) or
    /// passes one to the tool that owns it (`kubectl --kubeconfig`,
    /// `ssh -i`): what happens to the store is judged where the value
    /// goes, so the line rules' `credential-access` here is at most
    /// `medium`.
    OwnUse,
}

/// What the lowering of one file found.
#[derive(Debug, Default)]
pub(crate) struct Lowered {
    pub(crate) events: Vec<Event>,
}

impl Lowered {
    pub(crate) fn push(&mut self, node: Node<'_>, what: What) {
        self.events.push(Event {
            start: node.start_byte(),
            end: node.end_byte(),
            what,
        });
    }
}

/// Parses `text` as `lang`, only the byte ranges `within` when there are
/// any (a document's code blocks, in place: the parser skips the prose
/// between them instead of lexing it); `None` when the code is too large
/// or the parser gives up.
fn parse(lang: Lang, text: &str, within: &[std::ops::Range<usize>]) -> Option<Tree> {
    let size = if within.is_empty() {
        text.len()
    } else {
        within.iter().map(ExactSizeIterator::len).sum()
    };
    if size > MAX_PARSED {
        return None;
    }
    let mut parser = Parser::new();
    parser.set_language(&lang.grammar()?).ok()?;
    if !within.is_empty() {
        parser
            .set_included_ranges(&included_ranges(text, within))
            .ok()?;
    }
    parser.parse(text, None)
}

/// `within`, ordered and apart, as the parser's ranges with their rows
/// and columns, counted in one pass over `text`.
fn included_ranges(text: &str, within: &[std::ops::Range<usize>]) -> Vec<tree_sitter::Range> {
    let bytes = text.as_bytes();
    let (mut at, mut row, mut line_start) = (0, 0, 0);
    let mut point = |offset: usize| {
        for (index, byte) in bytes[at..offset].iter().enumerate() {
            if *byte == b'\n' {
                row += 1;
                line_start = at + index + 1;
            }
        }
        at = offset;
        tree_sitter::Point::new(row, offset - line_start)
    };
    within
        .iter()
        .map(|range| tree_sitter::Range {
            start_byte: range.start,
            start_point: point(range.start),
            end_byte: range.end,
            end_point: point(range.end),
        })
        .collect()
}

/// Lowers `text` as `lang` into events, reading it until the values of
/// its names settle; `seeds` are names the file gives values outside the
/// code (a Makefile's variables).
pub(crate) fn lower(
    lang: Lang,
    text: &str,
    within: &[std::ops::Range<usize>],
    seeds: &[(String, String)],
) -> Option<Lowered> {
    if lang == Lang::Cmd {
        if text.len() > MAX_PARSED {
            return None;
        }
        let mut env = Env::default();
        let mut lowered = Lowered::default();
        cmd::lower(text, &mut env, &mut lowered);
        return Some(lowered);
    }
    if let Lang::Generic(comments) = lang {
        if text.len() > MAX_PARSED {
            return None;
        }
        let mut lowered = Lowered::default();
        generic::lower(text, comments, &mut lowered);
        return Some(lowered);
    }
    let tree = parse(lang, text, within)?;
    let root = tree.root_node();
    let mut env = Env::default();
    for (name, value) in seeds {
        env.assign(name, Val::text(value.clone()));
    }
    let mut lowered = Lowered::default();
    // Comments tell a script's commented-out lines from its own; a
    // document's code blocks are judged at most `medium` whatever they are.
    let comments = if within.is_empty() {
        comments(root)
    } else {
        Vec::new()
    };
    for _ in 0..MAX_PASSES {
        env.start_pass();
        lowered = Lowered::default();
        lower_tree(lang, root, text, &mut env, &mut lowered);
        if !env.changed {
            break;
        }
    }
    lowered.events.extend(comments);
    // A document's code blocks are examples: looking a name up there
    // hides nothing from the reader of the page.
    if !within.is_empty() {
        lowered
            .events
            .retain(|event| !matches!(event.what, What::Dispatch | What::Hidden(_)));
    }
    if lang == Lang::Shell {
        nested_shell(&mut lowered);
    }
    Some(lowered)
}

/// One pass of the lowering of `root`, the tree of `text`, in `lang`.
fn lower_tree(lang: Lang, root: Node<'_>, text: &str, env: &mut Env, out: &mut Lowered) {
    match lang {
        Lang::Shell => shell::lower(root, text, env, out),
        Lang::Python => python::lower(root, text, env, out),
        Lang::JavaScript | Lang::TypeScript => js::lower(root, text, env, out),
        Lang::PowerShell => powershell::lower(root, text, env, out),
        Lang::Cmd | Lang::Generic(_) => {}
    }
}

/// A local module a script imports, read with it (see `link`).
pub(crate) struct Module {
    pub path: String,
    pub text: String,
    /// Where the script imports it.
    pub start: usize,
    pub end: usize,
}

/// Reads `code`, the script of `scan`, as `lang` together with the local
/// modules it imports: one program, whose values cross files (a feed read
/// here, run by a module's "step runner"; a module's download run here).
/// The script's own statements are judged as [`read`] judges them; a
/// flow that ends in a module, and that the module alone does not make,
/// is reported at the script's import of the module.
pub(crate) fn read_linked(
    scan: &mut Scan<'_>,
    lang: Lang,
    code: &str,
    modules: &[Module],
) -> Option<Reading> {
    let tree = parse(lang, code, &[])?;
    let trees: Vec<(&Module, Tree)> = modules
        .iter()
        .filter_map(|module| Some((module, parse(lang, &module.text, &[])?)))
        .collect();
    let mut env = Env::default();
    let mut lowered = Lowered::default();
    let mut linked: Vec<Lowered> = Vec::new();
    for _ in 0..MAX_PASSES {
        env.start_pass();
        linked = trees
            .iter()
            .map(|(module, tree)| {
                let mut out = Lowered::default();
                lower_tree(lang, tree.root_node(), &module.text, &mut env, &mut out);
                out
            })
            .collect();
        lowered = Lowered::default();
        lower_tree(lang, tree.root_node(), code, &mut env, &mut lowered);
        if !env.changed {
            break;
        }
    }
    lowered.events.extend(comments(tree.root_node()));
    if lang == Lang::Shell {
        nested_shell(&mut lowered);
    }
    let reading = judge(scan, &lowered);
    for ((module, _), together) in trees.iter().zip(&linked) {
        let mut with = Scan::new(&module.path, &module.text, scan.kind);
        with.subject = scan.subject.clone();
        judge(&mut with, together);
        if with.findings.is_empty() {
            continue;
        }
        let mut alone = Scan::new(&module.path, &module.text, scan.kind);
        alone.subject = scan.subject.clone();
        if let Some(own) = lower(lang, &module.text, &[], &[]) {
            judge(&mut alone, &own);
        }
        for finding in with.findings {
            let known = alone.findings.iter().any(|own| {
                own.rule == finding.rule
                    && own.line == finding.line
                    && own.severity >= finding.severity
            });
            if !known {
                scan.report(
                    finding.rule,
                    finding.severity,
                    module.start,
                    module.end,
                    format!(
                        "{}: in {} (line {}), given what this file passes to it",
                        finding.message,
                        module.path,
                        finding
                            .line
                            .map_or_else(|| "?".to_owned(), |line| line.to_string())
                    ),
                );
            }
        }
    }
    Some(reading)
}

/// The most constant `sh -c` strings of one file read as shell code, and
/// the longest read.
const MAX_NESTED: usize = 16;
const MAX_NESTED_TEXT: usize = 4096;

/// Reads the constant code a shell runs (`sh -c '...'`, `bash -c "..."`)
/// as the shell code it is: a download in it run later in it is a flow.
/// What it finds is placed at the statement that runs it.
fn nested_shell(lowered: &mut Lowered) {
    let nested: Vec<(usize, usize, String)> = lowered
        .events
        .iter()
        .filter_map(|event| match &event.what {
            What::Exec(code) if code.is_constant() => code
                .text
                .as_ref()
                .filter(|text| text.len() <= MAX_NESTED_TEXT && text.contains(char::is_whitespace))
                .map(|text| (event.start, event.end, text.clone())),
            _ => None,
        })
        .take(MAX_NESTED)
        .collect();
    for (start, end, text) in nested {
        let Some(inner) = lower(Lang::Shell, &text, &[], &[]) else {
            continue;
        };
        lowered.events.extend(
            inner
                .events
                .into_iter()
                .filter(|event| !matches!(event.what, What::Comment | What::Command(_)))
                .map(|event| Event {
                    start,
                    end,
                    what: event.what,
                }),
        );
    }
}

/// The comments of the tree under `root`, as [`What::Comment`] events,
/// found without recursion.
fn comments(root: Node<'_>) -> Vec<Event> {
    let mut found = Vec::new();
    let mut cursor = root.walk();
    'walk: loop {
        let node = cursor.node();
        if node.kind() == "comment" {
            found.push(Event {
                start: node.start_byte(),
                end: node.end_byte(),
                what: What::Comment,
            });
        }
        if cursor.goto_first_child() {
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                continue 'walk;
            }
            if !cursor.goto_parent() {
                break 'walk;
            }
        }
    }
    found
}

/// What reading a script's code found: the folded commands to give the
/// line rules, and whether code is run from a value that is not a
/// constant (which an encoded blob makes suspicious).
#[derive(Debug, Default)]
pub(crate) struct Reading {
    /// Each folded command and the bytes of the statement it stands for.
    pub(crate) commands: Vec<(usize, usize, String)>,
    /// True when some code is run from a value the analysis could not
    /// fold, or from decoded or downloaded bytes.
    pub(crate) runs_data: bool,
    /// The bytes of statements that only name a credential store or pass
    /// it to its own tool ([`What::OwnUse`]).
    pub(crate) own_uses: Vec<(usize, usize)>,
    /// Where the file's regular expressions and globs are.
    pub(crate) patterns: Vec<(usize, usize)>,
    /// The bytes of comments.
    pub(crate) comments: Vec<(usize, usize)>,
}

impl Reading {
    /// True when the bytes `start..end` overlap one of
    /// [`Reading::own_uses`]: the statement is, or holds, a use that only
    /// names a store (a pattern passed to `re.compile`).
    pub(crate) fn is_own_use(&self, start: usize, end: usize) -> bool {
        self.own_uses.iter().any(|&(s, e)| s < end && start < e)
    }

    /// True when byte `offset` lies in a comment.
    pub(crate) fn in_comment(&self, offset: usize) -> bool {
        self.comments
            .iter()
            .any(|&(s, e)| s <= offset && offset < e)
    }

    /// True when byte `offset` lies in a regular expression or a glob.
    pub(crate) fn in_pattern(&self, offset: usize) -> bool {
        self.patterns
            .iter()
            .any(|&(start, end)| start <= offset && offset < end)
    }

    /// True when byte `offset` lies in one of [`Reading::own_uses`].
    pub(crate) fn in_own_use(&self, offset: usize) -> bool {
        self.own_uses
            .iter()
            .any(|&(s, e)| s <= offset && offset < e)
    }
}

/// Reads the code `code` (the text `scan` holds, or the code cut out of
/// it in place; only the byte ranges `within` when there are any) as
/// `lang`: reports the flows that are attacks on `scan`, and returns the
/// folded commands.
pub(crate) fn read(
    scan: &mut Scan<'_>,
    lang: Lang,
    code: &str,
    within: &[std::ops::Range<usize>],
    seeds: &[(String, String)],
) -> Option<Reading> {
    let lowered = lower(lang, code, within, seeds)?;
    Some(judge(scan, &lowered))
}

/// Reports the attacks among `lowered`'s events on `scan`.
pub(crate) fn judge(scan: &mut Scan<'_>, lowered: &Lowered) -> Reading {
    let mut reading = Reading::default();
    let mut dispatches: Vec<(usize, usize)> = Vec::new();
    let mut hidden: Option<(usize, usize, &str)> = None;
    // Network bytes saved as a script, and whether the file itself runs
    // what it downloaded (then that is the finding).
    let mut saved_script: Option<(usize, usize)> = None;
    let mut ran_download = false;
    // Files written from the network, by their folded names.
    let downloaded: Vec<&str> = lowered
        .events
        .iter()
        .filter_map(|event| match &event.what {
            What::Download(path) => path.identity(),
            _ => None,
        })
        .collect();
    // A file from the network: read from it, or saved from it by name.
    let fetched = |file: &Val| {
        file.taint.has(Taint::NETWORK)
            || file
                .identity()
                .is_some_and(|name| downloaded.iter().any(|d| same_file(d, name)))
    };
    let downloads = lowered
        .events
        .iter()
        .any(|event| matches!(event.what, What::Download(_)));
    let mut inline = 0;
    let evaluates = lowered
        .events
        .iter()
        .any(|event| matches!(event.what, What::Evaluator));
    for event in &lowered.events {
        let (start, end) = (event.start, event.end);
        match &event.what {
            What::Command(text) => reading.commands.push((start, end, text.clone())),
            What::Evaluator => {}
            What::PassedOn(code) if evaluates => {
                reading.runs_data = true;
                let (rule, what) = if code.taint.has(Taint::NETWORK) {
                    (Rule::DownloadExec, "read from the network")
                } else {
                    (Rule::DecodeExec, "decoded")
                };
                scan.report(
                    rule,
                    Severity::Medium,
                    start,
                    end,
                    format!(
                        "hands code it {what} to a function it was given, and a function of this file runs what it is given as code"
                    ),
                );
            }
            What::PassedOn(_) => {}
            What::Inline(lang, code) => {
                // Its own flows, placed on the statement that runs it;
                // its lines are read as commands through `Exec`. As many
                // as `nested_shell` reads, and up to four times as large.
                inline += 1;
                if inline > MAX_NESTED || code.len() > MAX_NESTED_TEXT * 4 {
                    continue;
                }
                let Some(inner) = lower(*lang, code, &[], &[]) else {
                    continue;
                };
                let mut nested = Scan::new(scan.file, code, super::text::FileKind::Script);
                nested.subject = scan.subject.clone();
                let inner_reading = judge(&mut nested, &inner);
                reading.runs_data |= inner_reading.runs_data;
                // Its folded commands, read by the line rules there.
                reading.commands.extend(
                    inner_reading
                        .commands
                        .into_iter()
                        .map(|(_, _, command)| (start, end, command)),
                );
                for finding in nested.findings {
                    scan.report(
                        finding.rule,
                        finding.severity,
                        start,
                        end,
                        format!("{}, in the program it gives inline", finding.message),
                    );
                }
            }
            What::Exec(code) => {
                if !code.is_constant() {
                    reading.runs_data = true;
                }
                if code.taint.has(Taint::NETWORK) {
                    scan.report(
                        Rule::DownloadExec,
                        Severity::High,
                        start,
                        end,
                        "runs code it read from the network",
                    );
                } else if code.taint.has(Taint::DECODED) {
                    scan.report(
                        Rule::DecodeExec,
                        Severity::High,
                        start,
                        end,
                        "runs code it decoded",
                    );
                }
                // Code whose text is known is read as commands too.
                if let Some(text) = &code.text {
                    for line in text.lines().filter(|line| !line.trim().is_empty()) {
                        reading.commands.push((start, end, line.to_owned()));
                    }
                }
            }
            What::RunFile(file) => {
                if fetched(file) {
                    reading.runs_data = true;
                    ran_download = true;
                    scan.report(
                        Rule::DownloadExec,
                        Severity::High,
                        start,
                        end,
                        "runs a file it downloaded",
                    );
                }
            }
            What::Unpickle(file) => {
                if fetched(file) {
                    reading.runs_data = true;
                    scan.report(
                        Rule::DownloadExec,
                        Severity::High,
                        start,
                        end,
                        "unpickles a file it downloaded: loading it runs whatever code its bytes name",
                    );
                } else if downloads && file.identity().is_none_or(|name| !name.contains('/')) {
                    scan.report(
                        Rule::DownloadExec,
                        Severity::Medium,
                        start,
                        end,
                        "unpickles a file it cannot name, in a script that downloads files: loading a downloaded one runs whatever code its bytes name",
                    );
                }
            }
            What::Download(path) => {
                if saved_script.is_none() && names_a_script(path, &scan.text[start..end]) {
                    saved_script = Some((start, end));
                }
            }
            What::OwnUse => reading.own_uses.push((start, end)),
            What::Comment => reading.comments.push((start, end)),
            What::Pattern => reading.patterns.push((start, end)),
            What::Write { path, content } => {
                let target = path.identity().and_then(persistence_target);
                let planted = content.text.as_deref().and_then(|text| {
                    PLANTED
                        .iter()
                        .find(|(word, _)| text.contains(word))
                        .map(|(_, what)| *what)
                });
                if let Some(what) = target.or(planted) {
                    // Settings written whole, with no key that runs or
                    // allows anything: worth a look, not the attack.
                    let inert = planted.is_none()
                        && (target.is_some_and(|what| SETTINGS.contains(&what))
                            && content.text.as_deref().is_some_and(runs_nothing)
                            || target == Some(SHELL_START_UP)
                                && content.text.as_deref().is_some_and(only_exports));
                    // A repository's own hook (a lint or format step),
                    // written from the script's own text, is how projects
                    // run checks: worth a look, and its text is judged
                    // where it stands. A hook whose text is not known (a
                    // copy, a template, a download) is the attack's shape.
                    let project_hook = planted.is_none()
                        && target == Some(GIT_HOOK)
                        // Lines of text, not a copied file's name.
                        && content.text.as_deref().is_some_and(|text| text.contains('\n'));
                    let (severity, message) = if project_hook {
                        (
                            Severity::Medium,
                            format!("writes {what}: what it runs is judged where it is written"),
                        )
                    } else if inert {
                        (
                            Severity::Medium,
                            format!(
                                "writes {what} (nothing in what it writes runs or allows anything)"
                            ),
                        )
                    } else {
                        (Severity::High, format!("writes {what}"))
                    };
                    scan.report(Rule::Persistence, severity, start, end, message);
                } else if let Some(severity) = pth_write(path, content, scan.text) {
                    scan.report(
                        Rule::Persistence,
                        severity,
                        start,
                        end,
                        "writes a .pth file, whose `import` lines Python runs at every start when it is in a site folder".to_owned(),
                    );
                }
            }
            What::Send(data) => {
                if data.taint.has(Taint::CREDENTIAL) {
                    scan.report(
                        Rule::CredentialAccess,
                        Severity::High,
                        start,
                        end,
                        "sends what it read from a credential store",
                    );
                } else if data.taint.has(Taint::ENVIRONMENT) {
                    scan.report(
                        Rule::Exfiltration,
                        Severity::High,
                        start,
                        end,
                        "sends the whole environment, with every secret in it",
                    );
                }
            }
            What::Dispatch => dispatches.push((start, end)),
            What::Hidden(what) => {
                hidden.get_or_insert((start, end, what));
            }
        }
    }
    // Code fetched and saved as a script for a later step to run: the
    // step that runs it may be another file, or the agent.
    if let Some((start, end)) = saved_script
        && !ran_download
    {
        scan.report(
            Rule::DownloadExec,
            Severity::Medium,
            start,
            end,
            "saves what it fetched from the network as a script, for a later step to run",
        );
    }
    if let Some((start, end, what)) = hidden {
        scan.report(Rule::ObfuscatedScript, Severity::Medium, start, end, what);
    }
    // A name computed to hide what is called, in a script that reaches
    // the network, the home folder or the environment, or more than one
    // (a module by a computed name, then a function of it): what it does
    // cannot be read from its text.
    if let Some(&(start, end)) = dispatches.first()
        && (dispatches.len() > 1 || reaches_out(scan.text))
    {
        scan.report(
            Rule::ObfuscatedScript,
            Severity::Medium,
            start,
            end,
            "looks a module or function up by a name it computes, in a script that reaches the network, the home folder or the environment: what it calls is hidden".to_owned(),
        );
    }
    reading
}

/// Extensions of scripts that a later step runs or sources.
const SCRIPT_SUFFIXES: &[&str] = &[
    ".sh", ".bash", ".zsh", ".py", ".ps1", ".psm1", ".js", ".mjs", ".cjs", ".rb", ".pl", ".cmd",
    ".bat", ".command", ".pth",
];

/// True when the file `path`, written at `statement`, is a script: its
/// folded name ends like one, or the statement spells such a name.
fn names_a_script(path: &Val, statement: &str) -> bool {
    let ends_like_one = |name: &str| {
        let name = name
            .trim()
            .trim_end_matches(['"', '\'', '`'])
            .to_ascii_lowercase();
        SCRIPT_SUFFIXES.iter().any(|suffix| name.ends_with(suffix)) || name.contains("/hooks/")
    };
    path.identity().is_some_and(ends_like_one)
        || statement.split(['"', '\'', '`']).any(|piece| {
            let piece = piece.to_ascii_lowercase();
            SCRIPT_SUFFIXES.iter().any(|suffix| piece.ends_with(suffix))
        })
}

/// True when `script` reaches past its own files: an address, a socket,
/// the home folder, the environment.
fn reaches_out(script: &str) -> bool {
    [
        "http://",
        "https://",
        "socket",
        "Path.home",
        "expanduser",
        "homedir",
        "HOME",
        "~/",
        "environ",
        "process.env",
        "getenv",
        "USERPROFILE",
    ]
    .iter()
    .any(|word| script.contains(word))
}

/// The targets of [`TARGETS`] that are settings: what they run is in
/// their keys.
const SETTINGS: &[&str] = &[
    "Claude Code's settings, whose hooks run commands",
    "Codex's configuration",
    "an editor's or agent's configuration, whose MCP servers and tasks run",
];

/// Pieces of a settings key that runs, allows or redirects something.
const RUNNING_KEYS: &[&str] = &[
    "hook",
    "command",
    "mcp",
    "task",
    "runon",
    "shell",
    "exec",
    "terminal",
    "allow",
    "permission",
    "args",
    "env",
    "preload",
    "server",
    "url",
    "proxy",
    "script",
    "program",
    "launch",
    "notify",
    "instructions",
    "model_provider",
    "sandbox",
    "approval",
];

/// What [`TARGETS`] calls a shell's start-up file.
const SHELL_START_UP: &str = "a shell start-up file";
const GIT_HOOK: &str = "a git hook, which git runs";

/// True when the shell text `text` only sets variables to constants
/// (`export NEXT_TELEMETRY_DISABLED=1`), with comments: it runs nothing,
/// and it moves no program (`PATH`) nor library (`LD_*`) into the way.
fn only_exports(text: &str) -> bool {
    static EXPORT: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r#"^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(?:[A-Za-z0-9_.,:/@+-]*|"[A-Za-z0-9_.,:/@+ -]*"|'[A-Za-z0-9_.,:/@+ -]*')$"#)
            .expect("a valid pattern")
    });
    let mut any = false;
    let clean = text.lines().map(str::trim).all(|line| {
        if line.is_empty() || line.starts_with('#') {
            return true;
        }
        any = true;
        EXPORT.captures(line).is_some_and(|found| {
            let name = &found[1];
            !name.contains("PATH")
                && !name.starts_with("LD_")
                && !name.starts_with("DYLD_")
                && !matches!(
                    name,
                    "PROMPT_COMMAND" | "BASH_ENV" | "ENV" | "PS1" | "PS4" | "ZDOTDIR"
                )
        })
    });
    any && clean
}

/// True when the settings `text` is a JSON or TOML document none of whose
/// keys runs, allows or redirects anything (`"editor.tabSize": 4`).
fn runs_nothing(text: &str) -> bool {
    static KEY: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r#"(?m)(?:^|[{,\s])["']?([A-Za-z0-9_.@/-]+)["']?\s*[:=]"#)
            .expect("a valid pattern")
    });
    let mut keys = KEY
        .captures_iter(text)
        .map(|captures| captures[1].to_ascii_lowercase());
    let mut any = false;
    let clean = keys.all(|key| {
        any = true;
        !RUNNING_KEYS.iter().any(|word| key.contains(word))
    });
    any && clean && !text.contains("$(") && !text.contains('`')
}

/// Files that an agent, a shell, the dynamic loader, sudo or git read or
/// run on their own, by a pattern of their path, and what they are.
static TARGETS: &[(&str, &str)] = &[
    (
        r"(?:^|/)\.claude/settings(?:\.local)?\.json$",
        "Claude Code's settings, whose hooks run commands",
    ),
    (
        r"(?:^|/)\.claude/(?:hooks|commands|agents)/",
        "Claude Code's configuration",
    ),
    (
        r"(?:^|/)\.codex/(?:config\.toml|AGENTS\.md)$",
        "Codex's configuration",
    ),
    (
        r"(?:^|/)\.(?:cursor|vscode|gemini|kiro|windsurf|codeium/windsurf)/(?:mcp(?:_config)?|settings)\.json$",
        "an editor's or agent's configuration, whose MCP servers and tasks run",
    ),
    (
        r"(?:^|/)\.mcp\.json$|claude_desktop_config\.json$",
        "an MCP server configuration, whose servers run",
    ),
    (
        r"(?:^|/)(?:CLAUDE|AGENTS|GEMINI)\.md$|(?:^|/)\.github/copilot-instructions\.md$",
        "an agent's standing instructions",
    ),
    (
        r"^/etc/ld\.so\.preload$",
        "the dynamic loader's preload list, loaded into every program",
    ),
    (
        r"^/etc/(?:profile\.d/|profile$|bash\.bashrc$|environment$|zsh/|zshenv$|zprofile$)",
        "a start-up file every login shell runs",
    ),
    (r"^/etc/sudoers(?:\.d/|$)", "sudo's rules"),
    (
        r"^/etc/(?:rc\.local$|init\.d/|systemd/|cron|anacrontab$)|/var/spool/cron",
        "a service or job the system starts",
    ),
    (
        r"(?:^|/)\.config/(?:systemd/user|autostart)/",
        "a service or program the desktop starts",
    ),
    (
        r"(?:^|/)\.git/hooks/|(?:^|/)\.husky/|(?:^|/)hooks/(?:pre-commit|pre-push|pre-merge-commit|pre-rebase|pre-applypatch|pre-auto-gc|prepare-commit-msg|commit-msg|post-commit|post-checkout|post-merge|post-rewrite|post-applypatch|post-index-change|applypatch-msg|reference-transaction|push-to-checkout|fsmonitor-watchman|sendemail-validate)$",
        "a git hook, which git runs",
    ),
    (
        r"(?:^|/|~)\.(?:bashrc|bash_profile|bash_login|profile|zshrc|zshenv|zprofile|zlogin|kshrc|cshrc|tcshrc)$|(?:^|/)\.config/fish/config\.fish$",
        "a shell start-up file",
    ),
    (
        r"(?:^|/|~)\.(?:bash_aliases|bash_logout|zlogout|vimrc|tmux\.conf|inputrc)$|(?:^|/)\.config/environment\.d/|(?:^|/)\.config/nvim/init\.(?:vim|lua)$",
        "a file a shell or an editor reads and runs commands from",
    ),
    (
        r"(?:^|/)(?:site|user)customize\.py$|(?:^|/)site-packages/[^/]+\.pth$",
        "a file Python runs at every start",
    ),
    (
        r"(?i)(?:^|/)Start Menu/Programs/Startup/|(?:^|/)Microsoft\.PowerShell_profile\.ps1$|(?:^|/)profile\.ps1$",
        "a program or profile Windows or PowerShell runs at start",
    ),
    (r"(?:^|/)Library/Launch(?:Agents|Daemons)/", "a launchd job"),
    (
        r"(?:^|/)(?:s?bin|\.local/bin|\.cargo/bin|\.npm-global/bin|shims)/(?:sudo|su|doas|pkexec|passwd|ssh|scp|sftp|ssh-add|gpg2?|security|kinit|login)(?:\.exe)?$",
        "a program in a folder on PATH named after one that takes passwords or keys, which runs in its place and sees them",
    ),
];

/// Words that plant persistence in whatever file they are written to.
const PLANTED: &[(&str, &str)] = &[
    (
        "LD_PRELOAD",
        "an LD_PRELOAD setting, which loads a library into every program started after it",
    ),
    (
        "PROMPT_COMMAND",
        "a PROMPT_COMMAND, which the shell runs before every prompt",
    ),
    ("NOPASSWD", "a sudo rule without a password"),
    (
        "folderOpen",
        "an editor task that runs when the folder is opened",
    ),
];

static TARGET_SET: std::sync::LazyLock<PatternSet> =
    std::sync::LazyLock::new(|| PatternSet::new(TARGETS.iter().map(|(pattern, _)| *pattern)));

/// How bad writing `content` to `path` is when the path is a `.pth`
/// file out of the folders [`TARGETS`] name: `high` when what is written
/// has an `import` line (the only lines Python's `site` runs), `medium`
/// when neither the content nor the folder is known and the script
/// looks for Python's site folders (a model's weights, also `.pth`, are
/// saved under a folder the script names).
fn pth_write(path: &Val, content: &Val, script: &str) -> Option<Severity> {
    let name = path.identity()?.trim();
    if !name.to_ascii_lowercase().ends_with(".pth") {
        return None;
    }
    let imports = |text: &str| {
        text.lines().any(|line| {
            line.trim_start().starts_with("import ") || line.trim_start().starts_with("import\t")
        })
    };
    match content.text.as_deref() {
        Some(text) if imports(text) => Some(Severity::High),
        Some(_) => None,
        None if content.identity().is_some_and(imports) => Some(Severity::High),
        None if path.text.is_none() && (script.contains("site") || script.contains("purelib")) => {
            Some(Severity::Medium)
        }
        None => None,
    }
}

/// What the file at `path` is, when writing it is persistence.
pub(crate) fn persistence_target(path: &str) -> Option<&'static str> {
    let path = path.trim();
    TARGET_SET
        .matches(path)
        .first()
        .map(|&index| TARGETS[index].1)
}

/// True when two folded file names name the same file: equal, or equal
/// once a leading `./` is dropped; or when `saved` is a folder (ends with
/// `/`) that holds `run`.
fn same_file(saved: &str, run: &str) -> bool {
    let trim = |name: &str| name.trim_start_matches("./").to_owned();
    // A folder an archive from the network was unpacked into holds each
    // file below it.
    if saved.ends_with('/') {
        return trim(run).starts_with(&trim(saved));
    }
    // A program saved into a `bin` folder runs by its name alone.
    trim(saved) == trim(run)
        || !run.contains('/') && !run.is_empty() && saved.ends_with(&format!("/bin/{run}"))
}

/// True when `path` names a credential store (`~/.ssh/id_rsa`,
/// `~/.aws/credentials`, `.npmrc`): reading it makes a credential.
pub(crate) fn is_credential_path(path: &str) -> bool {
    super::behaviour::names_credential_store(path)
}

/// Folders that hold credential stores: packing or copying one takes
/// every key in it.
const CREDENTIAL_FOLDERS: &[&str] = &[
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".kube",
    ".docker",
    "gcloud",
    ".config/gh",
    ".password-store",
    ".mozilla",
    ".thunderbird",
    "Library/Keychains",
    ".local/share/keyrings",
    ".bitcoin",
    ".electrum",
    ".ethereum",
];

/// True when `text` is one path (no spaces) naming a credential store or
/// a folder of them (`~/.ssh`, `$HOME/.aws/`, `.gnupg`,
/// `%APPDATA%\gcloud`).
pub(crate) fn is_store_path(text: &str) -> bool {
    let text = text.trim();
    if text.is_empty() || text.len() > 4096 || text.contains(char::is_whitespace) {
        return false;
    }
    let path = text.replace('\\', "/");
    let path = path.trim_end_matches('/');
    CREDENTIAL_FOLDERS.iter().any(|folder| {
        path.strip_suffix(folder)
            .is_some_and(|before| before.is_empty() || before.ends_with('/') || before == "~")
    }) || is_credential_path(text)
}

/// True when `path` is a process's environment as the kernel shows it
/// (`/proc/self/environ`, `/proc/1/environ`): every variable at once.
pub(crate) fn is_environ_file(path: &str) -> bool {
    path.strip_prefix("/proc/")
        .and_then(|rest| rest.strip_suffix("/environ"))
        .is_some_and(|process| !process.contains('/'))
}

/// The text of `node` in `source`.
pub(crate) fn text_of<'a>(node: Node<'_>, source: &'a str) -> &'a str {
    source.get(node.byte_range()).unwrap_or("")
}

/// The named children of `node`.
pub(crate) fn named_children<'t>(node: Node<'t>) -> Vec<Node<'t>> {
    let mut cursor = node.walk();
    node.named_children(&mut cursor).collect()
}

/// Decodes standard or URL-safe base64, padded or not; `None` when
/// `text` is not base64 of at least one byte.
pub(crate) fn decode_base64(text: &str) -> Option<Vec<u8>> {
    use base64::Engine as _;
    let compact: String = text.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    if compact.is_empty() {
        return None;
    }
    let engines = [
        base64::engine::general_purpose::STANDARD,
        base64::engine::general_purpose::STANDARD_NO_PAD,
        base64::engine::general_purpose::URL_SAFE,
        base64::engine::general_purpose::URL_SAFE_NO_PAD,
    ];
    engines
        .iter()
        .find_map(|engine| engine.decode(&compact).ok())
}

/// Decodes hex (`6375726c`, `63 75 72 6c`, `\x63\x75`).
pub(crate) fn decode_hex(text: &str) -> Option<Vec<u8>> {
    let digits: String = text
        .replace("\\x", "")
        .chars()
        .filter(|c| !c.is_ascii_whitespace())
        .collect();
    if digits.is_empty() || !digits.len().is_multiple_of(2) {
        return None;
    }
    (0..digits.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(digits.get(at..at + 2)?, 16).ok())
        .collect()
}

/// Applies rot13 to ASCII letters.
pub(crate) fn rot13(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            'a'..='z' => (((c as u8 - b'a') + 13) % 26 + b'a') as char,
            'A'..='Z' => (((c as u8 - b'A') + 13) % 26 + b'A') as char,
            _ => c,
        })
        .collect()
}

/// A decoded value: its text when the bytes are text, always tainted
/// [`Taint::DECODED`].
pub(crate) fn decoded(bytes: Option<Vec<u8>>, from: &Val) -> Val {
    let text = bytes.and_then(|bytes| String::from_utf8(bytes).ok());
    match text {
        Some(text) => Val::text(text).tainted(from.taint | Taint::DECODED),
        None => Val::from(from.taint | Taint::DECODED),
    }
}

/// The language of the code an interpreter called `program` is given
/// inline, when the audit reads it.
pub(crate) fn inline_language(program: &str) -> Option<Lang> {
    match program {
        _ if SHELLS.contains(&program) => Some(Lang::Shell),
        _ if program.starts_with("python") => Some(Lang::Python),
        "node" | "nodejs" | "bun" | "deno" => Some(Lang::JavaScript),
        "pwsh" | "powershell" | "powershell.exe" => Some(Lang::PowerShell),
        "ruby" | "perl" => Some(Lang::Generic(generic::Comments::Hash)),
        "php" => Some(Lang::Generic(generic::Comments::Slashes)),
        "lua" | "luajit" => Some(Lang::Generic(generic::Comments::Dashes)),
        _ => None,
    }
}

/// Programs that run the code or the file they are given.
pub(crate) const SHELLS: &[&str] = &["sh", "bash", "dash", "zsh", "ksh", "ash", "busybox"];
pub(crate) const INTERPRETERS: &[&str] = &[
    "python",
    "python2",
    "python3",
    "perl",
    "ruby",
    "node",
    "php",
    "pwsh",
    "powershell",
];

/// What running the program `words` (an argument vector, as
/// `subprocess.run([...])` or `spawn(...)` get it) runs: the code after
/// `-c` or `-e`, or the file named, of a shell or an interpreter; and the
/// program itself when it is a path.
pub(crate) fn run_argv(out: &mut Lowered, node: Node<'_>, words: &[Val]) {
    let Some(first) = words.first() else {
        return;
    };
    if first.taint.has(Taint::NETWORK) || first.text.as_deref().is_some_and(|w| w.contains('/')) {
        out.push(node, What::RunFile(first.clone()));
    }
    let name = first.text.as_deref().map(base_name).unwrap_or_default();
    let name = name.trim_end_matches(".exe");
    let args = &words[1..];
    // A program whose name is not known (`process.env.SHELL || "/bin/sh"`,
    // a name from a table) given `-c` and a value runs that value as
    // code: `-c` is how every shell and interpreter takes it.
    if first.text.is_none()
        && let Some(at) = args
            .iter()
            .position(|arg| arg.text.as_deref() == Some("-c"))
        && let Some(code) = args.get(at + 1)
    {
        out.push(node, What::Exec(code.clone()));
        return;
    }
    if !SHELLS.contains(&name) && !INTERPRETERS.contains(&name) {
        return;
    }
    let code = args
        .iter()
        .position(|arg| {
            matches!(
                arg.text.as_deref().map(str::to_ascii_lowercase).as_deref(),
                Some("-c" | "-e" | "-command" | "/c")
            )
        })
        .and_then(|at| args.get(at + 1));
    if let Some(code) = code {
        if let (Some(lang), Some(text)) = (inline_language(name), &code.text) {
            out.push(node, What::Inline(lang, text.clone()));
        }
        out.push(node, What::Exec(code.clone()));
    } else if let Some(file) = args.iter().find(|arg| {
        arg.text
            .as_deref()
            .is_none_or(|word| !word.starts_with('-'))
    }) {
        out.push(node, What::RunFile(file.clone()));
    }
}

/// A value made of others, of unknown text: the union of their taints.
pub(crate) fn union<'v>(values: impl IntoIterator<Item = &'v Val>) -> Val {
    let mut taint = Taint::UNKNOWN;
    for value in values {
        taint |= value.taint;
    }
    Val::from(taint)
}

/// The last piece of a dotted or slashed name, lower case:
/// `/usr/bin/bash` is `bash`, `subprocess.run` is `run`.
pub(crate) fn base_name(name: &str) -> String {
    name.rsplit(['/', '\\'])
        .next()
        .unwrap_or(name)
        .to_ascii_lowercase()
}

#[cfg(test)]
mod tests;
