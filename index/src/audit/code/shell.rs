//! Shell scripts (sh, bash, zsh, dash; tree-sitter-bash) lowered to
//! events: each pipeline folded into one command line, and what its
//! commands run, download and send.

use tree_sitter::Node;

use super::{
    Env, INTERPRETERS, Lowered, MAX_DEPTH, SHELLS, Taint, Val, What, base_name, decode_base64,
    decode_hex, decoded, inline_language, is_credential_path, is_store_path, named_children, rot13,
    text_of, union,
};

/// The most words of a `for` loop whose body is read once for each.
const MAX_LOOP_WORDS: usize = 8;

/// The most loop bodies read once per word in one pass over a script.
const MAX_LOOP_BODIES: usize = 64;

/// Commands that send what they are given to another machine.
const SENDERS: &[&str] = &[
    "curl", "wget", "nc", "ncat", "netcat", "socat", "telnet", "scp", "sftp", "rsync", "ssh",
    "http", "https", "aria2c", "ftp", "mail", "sendmail", "mutt", "git", "aws", "gsutil",
];

/// Commands that pass on a transformed copy of what they are fed: an
/// environment dump through `tr` or `sort` is still one.
const FILTERS: &[&str] = &[
    "tr",
    "sed",
    "awk",
    "gawk",
    "mawk",
    "cut",
    "sort",
    "uniq",
    "grep",
    "egrep",
    "fgrep",
    "rg",
    "fold",
    "paste",
    "column",
    "jq",
    "yq",
    "iconv",
    "expand",
    "nl",
    "sha256sum",
];

/// Words that run the rest of the command line as a command.
const PREFIXES: &[&str] = &[
    "sudo", "doas", "env", "nohup", "exec", "command", "builtin", "time", "nice", "setsid",
    "stdbuf", "timeout", "xargs", "su",
];

struct Lowering<'a, 'e> {
    source: &'a str,
    env: &'e mut Env,
    out: &'e mut Lowered,
    /// The function being lowered: its `$1`, `$@` are its own.
    function: Option<String>,
    /// How many more loop bodies may be read once per word: nested loops
    /// share it, so that their product cannot grow without end.
    loop_budget: usize,
}

/// The key under which [`Env`] keeps what the function `name` writes to
/// its standard output.
fn output_of(name: &str) -> String {
    format!("{name}\0output")
}

/// The key under which [`Env`] keeps the positional parameter `number`
/// (`1`, `@`) of the function `name`.
fn parameter_of(name: &str, number: &str) -> String {
    format!("{name}\0${number}")
}

/// Lowers the shell script `root` of `source`.
pub(super) fn lower(root: Node<'_>, source: &str, env: &mut Env, out: &mut Lowered) {
    let mut lowering = Lowering {
        source,
        env,
        out,
        function: None,
        loop_budget: MAX_LOOP_BODIES,
    };
    lowering.statements(root, 0);
}

impl Lowering<'_, '_> {
    /// Lowers the statements of a function's body; returns all that they
    /// print.
    fn printed(&mut self, body: Node<'_>, depth: usize) -> Val {
        let outputs: Vec<Val> = named_children(body)
            .into_iter()
            .map(|child| self.statement(child, depth + 1))
            .collect();
        match outputs.as_slice() {
            [only] => only.clone(),
            many => union(many),
        }
    }

    /// Lowers every statement under `node`.
    fn statements(&mut self, node: Node<'_>, depth: usize) {
        if depth > MAX_DEPTH {
            return;
        }
        for child in named_children(node) {
            self.statement(child, depth + 1);
        }
    }

    /// Lowers one statement; returns what it writes to its standard output.
    fn statement(&mut self, node: Node<'_>, depth: usize) -> Val {
        if depth > MAX_DEPTH {
            return Val::unknown();
        }
        match node.kind() {
            "command" | "pipeline" | "redirected_statement" => {
                let mut line = Vec::new();
                let known = self.out.events.len();
                let output = self.pipeline(node, None, &mut line, depth + 1);
                // A tool reading its own store, its output filtered on this
                // machine (`kubectl ... | sed | tail`): the whole pipeline
                // is that use.
                let owned = self.out.events[known..]
                    .iter()
                    .any(|event| matches!(event.what, What::OwnUse));
                let sends = line.iter().any(|words| {
                    let program = words.split_whitespace().next().unwrap_or("");
                    SENDERS.contains(&base_name(program).as_str())
                });
                if owned && !sends && node.kind() != "command" {
                    self.out.push(node, What::OwnUse);
                }
                let folded = line.join(" ");
                // `command -v crontab`, `which curl`: asks whether a
                // program is there, runs nothing.
                let looks_up = {
                    let mut words = folded.split_whitespace();
                    match words.next() {
                        Some("command") => matches!(words.next(), Some("-v" | "-V")),
                        Some("which" | "type" | "hash") => true,
                        _ => false,
                    }
                };
                if !folded.is_empty() && !looks_up {
                    self.out.push(node, What::Command(folded));
                }
                output
            }
            "variable_assignment" => {
                self.assign(node, depth + 1);
                Val::text("")
            }
            "declaration_command" => {
                for child in named_children(node) {
                    if child.kind() == "variable_assignment" {
                        self.assign(child, depth + 1);
                    }
                }
                // `export X=...` names what it assigns.
                if only_names(text_of(node, self.source)) {
                    self.out.push(node, What::OwnUse);
                }
                Val::text("")
            }
            "comment" => Val::text(""),
            "function_definition" => {
                // What the function prints is what `$(name)` gives.
                let Some(name) = node.child_by_field_name("name") else {
                    return Val::text("");
                };
                let name = text_of(name, self.source).to_owned();
                let outer = self.function.replace(name.clone());
                let output = node
                    .child_by_field_name("body")
                    .map_or_else(Val::unknown, |body| self.printed(body, depth + 1));
                self.function = outer;
                self.env.assign(&output_of(&name), output);
                Val::text("")
            }
            "list" => {
                // `a || b`: either prints.
                let outputs: Vec<Val> = named_children(node)
                    .into_iter()
                    .map(|child| self.statement(child, depth + 1))
                    .collect();
                union(&outputs)
            }
            "for_statement" => {
                // `for f in a b c`: the name holds each word in turn. A
                // short loop's body is read once for each word, so that a
                // write to each of `~/.zshrc ~/.bashrc` is seen as such;
                // after the loop the name holds what any of them held.
                let body = node.child_by_field_name("body");
                let Some(variable) = node.child_by_field_name("variable") else {
                    return body.map_or_else(Val::unknown, |body| self.statement(body, depth + 1));
                };
                let name = text_of(variable, self.source).to_owned();
                let mut cursor = node.walk();
                let words: Vec<Node<'_>> =
                    node.children_by_field_name("value", &mut cursor).collect();
                let values: Vec<Val> = words
                    .into_iter()
                    .map(|word| self.word(word, depth + 1))
                    .collect();
                let mut output = Val::unknown();
                if let Some(body) = body
                    && (2..=MAX_LOOP_WORDS).contains(&values.len())
                    && values.len() <= self.loop_budget
                    && values.iter().all(|value| value.text.is_some())
                {
                    self.loop_budget -= values.len();
                    let held = self.env.get(&name).cloned();
                    for value in &values {
                        self.env.hold(&name, Some(value.clone()));
                        output = self.statement(body, depth + 1);
                    }
                    self.env.hold(&name, held);
                }
                for value in values {
                    self.env.assign(&name, value);
                }
                match body {
                    Some(body) => self.statement(body, depth + 1),
                    None => output,
                }
            }
            "test_command" => {
                // `[ -f ~/.npmrc ]` asks whether a file is there.
                self.out.push(node, What::OwnUse);
                Val::text("")
            }
            _ => {
                // Lists, subshells, blocks, loops, conditions, functions:
                // their statements, the last one's output.
                let mut output = Val::unknown();
                for child in named_children(node) {
                    output = self.statement(child, depth + 1);
                }
                output
            }
        }
    }

    fn assign(&mut self, node: Node<'_>, depth: usize) {
        let Some(name) = node.child_by_field_name("name") else {
            return;
        };
        let name = text_of(name, self.source).to_owned();
        let value = node
            .child_by_field_name("value")
            .map_or_else(|| Val::text(""), |value| self.word(value, depth + 1));
        // Naming a store is not reading it: its uses are judged.
        if node
            .child_by_field_name("value")
            .is_some_and(|value| only_names(text_of(value, self.source)))
        {
            self.out.push(node, What::OwnUse);
        }
        self.env.assign(&name, value);
    }

    /// Lowers a pipeline, a command or a redirected statement fed `input`;
    /// adds its folded words to `line` and returns its output.
    fn pipeline(
        &mut self,
        node: Node<'_>,
        input: Option<Val>,
        line: &mut Vec<String>,
        depth: usize,
    ) -> Val {
        if depth > MAX_DEPTH {
            return Val::unknown();
        }
        match node.kind() {
            "pipeline" => {
                let mut input = input;
                let mut output = Val::unknown();
                for (index, child) in named_children(node).into_iter().enumerate() {
                    if index > 0 {
                        line.push("|".to_owned());
                    }
                    output = self.pipeline(child, input.take(), line, depth + 1);
                    input = Some(output.clone());
                }
                output
            }
            "redirected_statement" => {
                let mut input = input;
                let mut targets = Vec::new();
                for redirect in named_children(node).into_iter().skip(1) {
                    match redirect.kind() {
                        "heredoc_redirect" => {
                            let body = named_children(redirect)
                                .into_iter()
                                .find(|child| child.kind() == "heredoc_body");
                            if let Some(body) = body {
                                input = Some(self.word(body, depth + 1));
                            }
                            for inner in named_children(redirect) {
                                if inner.kind() == "file_redirect" {
                                    targets.push(inner);
                                }
                            }
                        }
                        "herestring_redirect" => {
                            if let Some(word) = named_children(redirect).into_iter().next() {
                                input = Some(self.word(word, depth + 1));
                            }
                        }
                        "file_redirect" => targets.push(redirect),
                        _ => {}
                    }
                }
                let output = match node.child_by_field_name("body") {
                    Some(body) => self.pipeline(body, input, line, depth + 1),
                    None => Val::unknown(),
                };
                for target in targets {
                    let operator = text_of(target, self.source);
                    let destination = target.child_by_field_name("destination");
                    let Some(destination) = destination else {
                        continue;
                    };
                    let path = self.word(destination, depth + 1);
                    let reads = operator.trim_start().starts_with('<');
                    line.push(format!(
                        "{} {}",
                        if reads { "<" } else { ">" },
                        path.shown(text_of(destination, self.source))
                    ));
                    if reads {
                        continue;
                    }
                    // Writing a tool's credential file (a token from the
                    // environment into `.npmrc`) sets the tool up; what
                    // reads it later is judged where it goes.
                    if path.identity().is_some_and(is_credential_path) {
                        self.out.push(node, What::OwnUse);
                    }
                    if output.taint.has(Taint::NETWORK) {
                        self.out.push(node, What::Download(path.clone()));
                    }
                    // `printenv > f`: the file holds the environment now.
                    self.keep(&path, output.taint);
                    self.out.push(
                        node,
                        What::Write {
                            path,
                            content: output.clone(),
                        },
                    );
                }
                output
            }
            "command" => self.command(node, input, line, depth + 1),
            "list" => {
                // `[ -f x ] || cat > x <<EOF`, parsed with the redirects
                // around the list: they are the last command's.
                // `a | b || c` is parsed as `a | (b || c)`: the pipe
                // feeds the list's first command.
                let children = named_children(node);
                if node
                    .parent()
                    .is_some_and(|parent| parent.kind() == "pipeline")
                {
                    let Some((first, after)) = children.split_first() else {
                        return Val::unknown();
                    };
                    let output = self.pipeline(*first, input, line, depth + 1);
                    for child in after {
                        self.statement(*child, depth + 1);
                    }
                    return output;
                }
                let Some((last, before)) = children.split_last() else {
                    return Val::unknown();
                };
                for child in before {
                    self.statement(*child, depth + 1);
                }
                self.pipeline(*last, input, line, depth + 1)
            }
            _ => {
                let output = self.statement(node, depth + 1);
                line.push(text_of(node, self.source).to_owned());
                output
            }
        }
    }

    /// Lowers one command fed `input`; returns its output.
    fn command(
        &mut self,
        node: Node<'_>,
        input: Option<Val>,
        line: &mut Vec<String>,
        depth: usize,
    ) -> Val {
        let mut words = Vec::new();
        let mut shown = Vec::new();
        let mut input = input;
        for child in named_children(node) {
            match child.kind() {
                "herestring_redirect" => {
                    // `cmd <<< "$text"`: the text is its input.
                    if let Some(word) = named_children(child).into_iter().next() {
                        input = Some(self.word(word, depth + 1));
                    }
                }
                "variable_assignment" | "file_redirect" => continue,
                "command_name" => {
                    let inner = named_children(child).into_iter().next().unwrap_or(child);
                    let value = self.word(inner, depth + 1);
                    shown.push(value.shown(text_of(child, self.source)).to_owned());
                    words.push(value);
                }
                _ => {
                    let value = self.word(child, depth + 1);
                    // An argument holding `>` or `|` is one word, not a
                    // redirect or a pipe: the folded line keeps it quoted.
                    let text = value.shown(text_of(child, self.source));
                    if text.contains(['>', '<', '|', ';', '&']) && !text.contains('\'') {
                        shown.push(format!("'{text}'"));
                    } else {
                        shown.push(text.to_owned());
                    }
                    words.push(value);
                }
            }
        }
        line.push(shown.join(" "));
        self.run(node, &words, input)
    }

    /// What the command `words` does, fed `input`; returns its output.
    fn run(&mut self, node: Node<'_>, words: &[Val], input: Option<Val>) -> Val {
        let Some(first) = words.first() else {
            return Val::unknown();
        };
        let name = first.text.as_deref().map(base_name).unwrap_or_default();
        let args = &words[1..];
        let text = |index: usize| args.get(index).and_then(|arg| arg.text.as_deref());
        let flag = |flags: &[&str]| {
            args.iter().any(|arg| {
                arg.text
                    .as_deref()
                    .is_some_and(|word| flags.contains(&word))
            })
        };
        if PREFIXES.contains(&name.as_str()) {
            // `sudo -u x sh`, `env A=B sh`: the rest is the command.
            let rest = args
                .iter()
                .position(|arg| {
                    arg.text.as_deref().is_none_or(|word| {
                        !word.starts_with('-')
                            && !word.contains('=')
                            && word.parse::<u64>().is_err()
                    })
                })
                .unwrap_or(args.len());
            if name == "env" && rest == args.len() {
                return Val::from(Taint::ENVIRONMENT);
            }
            return self.run(node, &args[rest..], input);
        }
        // A function of the script: its parameters hold the words, and it
        // prints what its body prints.
        if let Some(output) = self.env.get(&output_of(&name)).cloned() {
            for (index, arg) in args.iter().enumerate() {
                self.env
                    .assign(&parameter_of(&name, &(index + 1).to_string()), arg.clone());
                self.env.assign(&parameter_of(&name, "@"), arg.clone());
            }
            // Fed a pipe, a function is a filter (`... | _normalise`):
            // what it prints may be what it was given.
            return match input {
                Some(input) if input.taint != Taint::NONE => {
                    union([&output, &input]).tainted(input.taint)
                }
                _ => output,
            };
        }
        // A command whose name came from the network or a download.
        // Any program is a file run: one saved from the network, by its
        // path or by its name in a `bin` folder, is reported (`judge`).
        if first.taint.has(Taint::NETWORK) || first.identity().is_some() {
            self.out.push(node, What::RunFile(first.clone()));
        }
        // `curl ... | $(IFS=; echo "${p[*]}")`: a program whose name is
        // not known, fed downloaded or decoded bytes, may be any shell.
        // (A variable of the environment, `$PAGER`, is the user's.)
        let users = first.name.as_deref().is_some_and(|name| {
            name.strip_prefix('$').is_some_and(|name| {
                !matches!(name, "SHELL" | "BASH")
                    && name.chars().all(|c| c.is_ascii_uppercase() || c == '_')
            })
        });
        if first.text.is_none()
            && !users
            && let Some(fed) = input
                .as_ref()
                .filter(|input| input.taint.has(Taint::NETWORK | Taint::DECODED))
        {
            self.out.push(node, What::Exec(fed.clone()));
        }
        if owns_its_credentials(&name, args) {
            self.out.push(node, What::OwnUse);
        }
        if matches!(name.as_str(), "cp" | "install" | "ln") {
            let operands: Vec<&Val> = args
                .iter()
                .filter(|arg| {
                    arg.text
                        .as_deref()
                        .is_none_or(|word| !word.starts_with('-'))
                })
                .collect();
            if let [sources @ .., destination] = operands.as_slice() {
                let credential = sources.iter().any(|source| {
                    source.identity().is_some_and(is_credential_path)
                        || source
                            .text
                            .as_deref()
                            .and_then(|path| self.env.get(&format!("file:{path}")))
                            .is_some_and(|file| file.taint.has(Taint::CREDENTIAL))
                });
                let content = sources
                    .first()
                    .map_or_else(Val::unknown, |source| (*source).clone());
                self.out.push(
                    node,
                    What::Write {
                        path: (*destination).clone(),
                        content,
                    },
                );
                if credential {
                    if let Some(path) = destination.identity() {
                        self.env.taint(&format!("file:{path}"), Taint::CREDENTIAL);
                    }
                    // The project's own file (not one in a home folder), copied:
                    // where the copy goes is judged on its own.
                    let project_own = sources.iter().all(|source| {
                        source.identity().is_some_and(|path| {
                            !path.starts_with('~')
                                && !path.starts_with("$HOME")
                                && !path.starts_with("/home/")
                                && !path.starts_with("/root")
                                && !path.starts_with("/etc")
                                && !path.contains("..")
                        })
                    });
                    if project_own {
                        self.out.push(node, What::OwnUse);
                    }
                }
            }
        }
        let code_after = |option: &str| {
            args.iter()
                .position(|arg| arg.text.as_deref() == Some(option))
                .and_then(|at| args.get(at + 1))
        };
        let first_operand = || {
            args.iter().find(|arg| {
                arg.text
                    .as_deref()
                    .is_none_or(|word| !word.starts_with('-'))
            })
        };
        match name.as_str() {
            _ if SHELLS.contains(&name.as_str()) || INTERPRETERS.contains(&name.as_str()) => {
                let option = if SHELLS.contains(&name.as_str()) || name.starts_with("python") {
                    "-c"
                } else if name == "pwsh" || name == "powershell" {
                    "-command"
                } else {
                    "-e"
                };
                if let Some(code) = code_after(option).or_else(|| code_after("-c")) {
                    if let (Some(lang), Some(text)) = (inline_language(&name), &code.text) {
                        self.out.push(node, What::Inline(lang, text.clone()));
                    }
                    self.out.push(node, What::Exec(code.clone()));
                } else if let (Some(input), true) = (
                    input.as_ref(),
                    first_operand().is_some_and(|file| file.text.as_deref().is_some_and(is_stdin)),
                ) {
                    self.out.push(node, What::Exec(input.clone()));
                } else if let Some(file) = first_operand() {
                    self.out.push(node, What::RunFile(file.clone()));
                } else if let Some(input) = input {
                    self.out.push(node, What::Exec(input));
                }
                Val::unknown()
            }
            "eval" => {
                let code = Val::concat(joined(args));
                self.out.push(node, What::Exec(code));
                Val::unknown()
            }
            "source_url" | "source_up_if_exists" | "fetchurl" => {
                // direnv's: download a file and source it.
                self.out
                    .push(node, What::RunFile(Val::from(Taint::NETWORK)));
                Val::unknown()
            }
            "tar" | "bsdtar" | "unzip" | "7z" | "7za" | "7zr" | "unrar"
                if args.iter().any(|arg| {
                    arg.identity()
                        .is_some_and(|path| self.file_taint(path).has(Taint::NETWORK))
                }) =>
            {
                // A downloaded archive unpacked: every file in the folder it
                // is unpacked into came from the network.
                // (Into the working folder, the files are not told apart
                // from the skill's own.)
                if let Some(folder) = extraction_folder(&name, args) {
                    let folder = folder.trim_end_matches('/').to_owned();
                    if !folder.is_empty() && folder != "." {
                        self.env.taint(&format!("folder:{folder}"), Taint::NETWORK);
                        self.out.push(
                            node,
                            What::Download(Val::unknown().named(format!("{folder}/"))),
                        );
                    }
                }
                Val::unknown()
            }
            "tee" => {
                let input = input.unwrap_or_else(Val::unknown);
                for file in args
                    .iter()
                    .filter(|arg| arg.text.as_deref().is_none_or(|w| !w.starts_with('-')))
                {
                    self.out.push(
                        node,
                        What::Write {
                            path: file.clone(),
                            content: input.clone(),
                        },
                    );
                }
                input
            }
            "sed" if flag(&["-i", "--in-place"]) => {
                if let Some(file) = args.last() {
                    self.out.push(
                        node,
                        What::Write {
                            path: file.clone(),
                            content: Val::unknown(),
                        },
                    );
                }
                Val::unknown()
            }
            "git" if text(0) == Some("rev-parse") && text(1) == Some("--git-path") => {
                Val::text(format!(".git/{}", text(2).unwrap_or("")))
            }
            "test" | "[" | "chmod" | "chown" | "chgrp" | "stat" | "ls" | "touch" | "rm"
            | "mkdir" | "rmdir" => {
                self.out.push(node, What::OwnUse);
                Val::text("")
            }
            "." | "source" => {
                match (args.first(), input) {
                    // `source /dev/stdin <<< "$code"`: the input runs.
                    (Some(file), Some(input)) if file.text.as_deref().is_some_and(is_stdin) => {
                        self.out.push(node, What::Exec(input));
                    }
                    (Some(file), _) => self.out.push(node, What::RunFile(file.clone())),
                    (None, _) => {}
                }
                Val::unknown()
            }
            // A DNS answer is bytes from the network: a TXT record is
            // as good a channel for a payload as a web page.
            "dig" | "host" | "nslookup" | "drill" | "kdig" | "delv" => Val::from(Taint::NETWORK),
            "curl" | "wget" | "fetch" | "aria2c" | "http" | "https" => {
                self.transfer(node, &name, args, input.as_ref());
                Val::from(Taint::NETWORK)
            }
            "nc" | "ncat" | "netcat" | "socat" | "telnet" => {
                if let Some(input) = input {
                    self.out.push(node, What::Send(input));
                }
                Val::from(Taint::NETWORK)
            }
            "echo" | "printf" => {
                // Printing a store's name to the terminal is not reading
                // it; fed to another command, the name is judged there.
                // Printed into a pipe, a file or a command's output (of a
                // subshell piped on: `(crontab -l; echo ...) | crontab -`),
                // the text is written.
                let piped = std::iter::successors(node.parent(), Node::parent).any(|parent| {
                    matches!(
                        parent.kind(),
                        "pipeline"
                            | "redirected_statement"
                            | "command_substitution"
                            | "process_substitution"
                    )
                });
                let read = args.iter().any(|arg| {
                    arg.taint.has(Taint::CREDENTIAL) || arg.taint.has(Taint::ENVIRONMENT)
                });
                if !piped && !read {
                    self.out.push(node, What::OwnUse);
                }
                if name == "printf" {
                    printf(args)
                } else {
                    let operands: Vec<Val> = args
                        .iter()
                        .filter(|arg| !matches!(arg.text.as_deref(), Some("-n" | "-e" | "-ne")))
                        .cloned()
                        .collect();
                    Val::concat(joined(&operands))
                }
            }
            "base64" | "base32" | "basenc" if flag(&["-d", "--decode", "-D"]) => {
                let input = input.unwrap_or_else(Val::unknown);
                let bytes = input.text.as_deref().and_then(decode_base64);
                decoded(bytes, &input)
            }
            "xxd" if flag(&["-r", "-p", "-r -p"]) => {
                let input = input.unwrap_or_else(Val::unknown);
                let bytes = input.text.as_deref().and_then(decode_hex);
                decoded(bytes, &input)
            }
            "tr" if text(0).is_some_and(|set| set.contains("A-Z") || set.contains("a-z"))
                && text(1).is_some_and(|set| set.contains("N-Z") || set.contains("n-z")) =>
            {
                let input = input.unwrap_or_else(Val::unknown);
                match &input.text {
                    Some(text) => Val::text(rot13(text)).tainted(input.taint | Taint::DECODED),
                    None => Val::from(input.taint | Taint::DECODED),
                }
            }
            "openssl" | "gunzip" | "zcat" | "gzip" | "bzip2" | "bzcat" | "xz" | "xzcat"
            | "zstd" | "zstdcat" | "uudecode" | "rev" => {
                let input = input.unwrap_or_else(Val::unknown);
                Val::from(input.taint | Taint::DECODED)
            }
            "cat" if args.is_empty() => input.unwrap_or_else(|| Val::text("")),
            "cat" | "head" | "tail" | "tac" | "less" | "more" => {
                let mut output = input.unwrap_or_else(|| Val::text(""));
                for file in args {
                    output = output.tainted(file.read_taint());
                    if let Some(path) = file.identity() {
                        output = output.tainted(self.file_taint(path));
                    }
                }
                Val::from(output.taint | Taint::UNKNOWN)
            }
            "printenv" | "set" | "export" | "declare" if args.is_empty() => {
                Val::from(Taint::ENVIRONMENT)
            }
            "tar" | "zip" | "7z" | "7za" | "rar" | "gpg" | "base64" | "xxd" | "od" | "hexdump" => {
                // Packing passes on what it packs, to its output or to the
                // archive it writes.
                let mut taint = input.map_or(Taint::NONE, |input| input.taint);
                for arg in args {
                    taint |= arg.read_taint();
                    if let Some(path) = arg.identity() {
                        taint |= self.file_taint(path);
                    }
                }
                if let Some(archive) = archive_of(&name, args) {
                    self.keep(&archive, taint);
                }
                Val::from(taint | Taint::UNKNOWN)
            }
            _ if FILTERS.contains(&name.as_str()) => {
                let taint = input.map_or(Taint::NONE, |input| input.taint);
                let mut taint = taint & (Taint::ENVIRONMENT | Taint::CREDENTIAL | Taint::NETWORK);
                // `grep KEY ~/.aws/credentials`: the files it reads.
                for arg in args.iter().skip(1) {
                    taint |= arg.read_taint();
                }
                Val::from(taint | Taint::UNKNOWN)
            }
            _ => Val::unknown(),
        }
    }

    /// `curl` and `wget`: what they send, and where they save.
    fn transfer(&mut self, node: Node<'_>, name: &str, args: &[Val], input: Option<&Val>) {
        let mut index = 0;
        while index < args.len() {
            let word = args[index].text.as_deref().unwrap_or("");
            let next = args.get(index + 1);
            let (option, inline) = match word.split_once('=') {
                Some((option, value)) if word.starts_with("--") => (option, Some(value)),
                // `-so FILE`, `-sSLd DATA`: a cluster of short options
                // takes its value after its last letter.
                // The last letter, whatever its width: a script may hold
                // any character there.
                _ if word.len() > 2 && word.starts_with('-') && !word.starts_with("--") => {
                    let last = word.char_indices().last().map_or(0, |(at, _)| at);
                    (&word[last..], None)
                }
                _ => (word, None),
            };
            let option = match option {
                "o" | "O" | "d" | "F" | "T" => match option {
                    "o" => "-o",
                    "O" => "-O",
                    "d" => "-d",
                    "F" => "-F",
                    _ => "-T",
                },
                other => other,
            };
            let value = || {
                inline
                    .map(Val::text)
                    .or_else(|| next.cloned())
                    .unwrap_or_else(Val::unknown)
            };
            let sends = matches!(
                option,
                "-d" | "--data"
                    | "--data-binary"
                    | "--data-raw"
                    | "--data-urlencode"
                    | "--json"
                    | "-F"
                    | "--form"
                    | "-T"
                    | "--upload-file"
                    | "--post-data"
                    | "--post-file"
                    | "--body-data"
                    | "--body-file"
            );
            let saves = match name {
                "wget" => matches!(option, "-O" | "--output-document"),
                _ => matches!(option, "-o" | "--output"),
            };
            if sends {
                let data = value();
                let data = match data.text.as_deref() {
                    Some("@-" | "-") => input.cloned().unwrap_or_else(Val::unknown),
                    Some(text) => {
                        let path = text.trim_start_matches('@').split(';').next().unwrap_or("");
                        let path = path.split_once('=').map_or(path, |(_, path)| path);
                        let path = path.trim_start_matches('@').trim_start_matches('<');
                        let read = if text.starts_with('@')
                            || option == "-T"
                            || option == "--upload-file"
                            || option.ends_with("-file")
                        {
                            data.read_taint() | self.file_taint(path)
                        } else {
                            self.file_taint(path)
                        };
                        data.clone().tainted(read)
                    }
                    None => {
                        let read = match data.identity() {
                            Some(path)
                                if matches!(option, "-T" | "--upload-file")
                                    || option.ends_with("-file") =>
                            {
                                data.read_taint() | self.file_taint(path)
                            }
                            _ => Taint::NONE,
                        };
                        data.tainted(read)
                    }
                };
                self.out.push(node, What::Send(data));
            } else if !saves
                && args[index]
                    .taint
                    .has(Taint::ENVIRONMENT | Taint::CREDENTIAL)
            {
                // The address or a header carries it: `?flags=$(env | base64)`.
                self.out.push(node, What::Send(args[index].clone()));
            }
            if saves {
                let file = value();
                if file.text.as_deref() != Some("-") {
                    if let Some(path) = file.identity() {
                        self.env.taint(&format!("file:{path}"), Taint::NETWORK);
                    }
                    self.out.push(node, What::Download(file));
                }
            }
            index += 1;
        }
    }

    /// What reading the file `path` gives: a credential store's content,
    /// or what was downloaded or copied there.
    fn file_taint(&self, path: &str) -> Taint {
        let kept = |key: String| self.env.get(&key).map_or(Taint::NONE, |file| file.taint);
        let mut taint = kept(format!("file:{path}")) | kept(format!("folder:{path}"));
        // `"$dir/$f"`, a name not known: any file kept in the folder.
        if let Some((folder, file)) = path.rsplit_once('/')
            && file.contains('$')
        {
            taint |= kept(format!("folder:{folder}"));
        }
        if is_credential_path(path) || is_store_path(path) {
            taint |= Taint::CREDENTIAL;
        }
        taint
    }

    /// Notes that the file `path` now holds what `taint` says, when that
    /// is a secret, and that its folder holds it too.
    fn keep(&mut self, path: &Val, taint: Taint) {
        let secret = taint & (Taint::ENVIRONMENT | Taint::CREDENTIAL);
        if secret == Taint::NONE {
            return;
        }
        let Some(identity) = path.identity() else {
            return;
        };
        self.env.taint(&format!("file:{identity}"), secret);
        if let Some((folder, _)) = identity.rsplit_once('/') {
            self.env.taint(&format!("folder:{folder}"), secret);
        }
    }

    /// The value of a word: its quotes removed, its expansions done.
    fn word(&mut self, node: Node<'_>, depth: usize) -> Val {
        let value = self.word_of(node, depth);
        match &value.text {
            Some(text) if is_store_path(text) => value.tainted(Taint::STORE_PATH),
            _ => value,
        }
    }

    fn word_of(&mut self, node: Node<'_>, depth: usize) -> Val {
        if depth > MAX_DEPTH {
            return Val::unknown();
        }
        let source = self.source;
        let text = text_of(node, source);
        match node.kind() {
            "word" | "number" | "heredoc_body" | "string_content" => {
                if node.kind() == "heredoc_body" {
                    return self.heredoc(node, depth);
                }
                Val::text(unescape_word(text))
            }
            "raw_string" => Val::text(text.trim_start_matches('\'').trim_end_matches('\'')),
            "ansi_c_string" => {
                Val::text(ansi_c(text.trim_start_matches("$'").trim_end_matches('\'')))
            }
            "string" | "translated_string" => {
                // The text between the children is literal.
                let inner_start = node.start_byte() + 1;
                let inner_end = node.end_byte().saturating_sub(1).max(inner_start);
                let mut pieces = Vec::new();
                let mut at = inner_start;
                for child in named_children(node) {
                    if child.start_byte() > at {
                        pieces.push(Val::text(source.get(at..child.start_byte()).unwrap_or("")));
                    }
                    pieces.push(match child.kind() {
                        "string_content" => Val::text(unescape_double(text_of(child, source))),
                        _ => self.word(child, depth + 1),
                    });
                    at = child.end_byte();
                }
                if inner_end > at {
                    pieces.push(Val::text(source.get(at..inner_end).unwrap_or("")));
                }
                Val::concat(pieces)
            }
            "concatenation" => {
                let pieces: Vec<Val> = named_children(node)
                    .into_iter()
                    .map(|child| self.word(child, depth + 1))
                    .collect();
                Val::concat(pieces)
            }
            "simple_expansion" | "expansion" => self.expansion(node, depth),
            "array" => {
                // `(a b c)`: the words, as `${name[*]}` gives them.
                let items: Vec<Val> = named_children(node)
                    .into_iter()
                    .map(|child| self.word(child, depth + 1))
                    .collect();
                Val::concat(joined(&items))
            }
            "command_substitution" | "process_substitution" => {
                let mut output = Val::unknown();
                for child in named_children(node) {
                    output = self.statement(child, depth + 1);
                }
                if node.kind() == "process_substitution" {
                    // `<(curl ...)` is a file holding the output.
                    return Val::from(output.taint | Taint::UNKNOWN);
                }
                output
            }
            _ => Val::unknown(),
        }
    }

    fn heredoc(&mut self, node: Node<'_>, depth: usize) -> Val {
        let source = self.source;
        let mut pieces = Vec::new();
        let mut at = node.start_byte();
        for child in named_children(node) {
            // `\${name}` in a heredoc is the text itself.
            let escaped = child.start_byte() > at
                && source.as_bytes().get(child.start_byte() - 1) == Some(&b'\\');
            if child.kind() == "heredoc_content" {
                // The literal text between expansions; a backslash that
                // ends it escapes the expansion after it (below).
                let text = source.get(at..child.end_byte()).unwrap_or("");
                let text = match child.next_named_sibling() {
                    Some(next) if next.start_byte() == child.end_byte() => {
                        text.strip_suffix('\\').unwrap_or(text)
                    }
                    _ => text,
                };
                pieces.push(Val::text(text));
            } else if escaped {
                pieces.push(Val::text(
                    source.get(at..child.start_byte() - 1).unwrap_or(""),
                ));
                pieces.push(Val::text(text_of(child, source)));
            } else {
                if child.start_byte() > at {
                    pieces.push(Val::text(source.get(at..child.start_byte()).unwrap_or("")));
                }
                pieces.push(self.word(child, depth + 1));
            }
            at = child.end_byte();
        }
        if node.end_byte() > at {
            pieces.push(Val::text(source.get(at..node.end_byte()).unwrap_or("")));
        }
        Val::concat(pieces)
    }

    /// `$name`, `${name}`, `${name:-default}`.
    fn expansion(&mut self, node: Node<'_>, depth: usize) -> Val {
        let children = named_children(node);
        // `${name[@]}`, `${name[*]}`, `${name[0]}`: the array's words.
        if let Some(subscript) = children.iter().find(|child| child.kind() == "subscript") {
            let name = subscript
                .child_by_field_name("name")
                .map_or("", |name| text_of(name, self.source));
            return self
                .env
                .get(name)
                .cloned()
                .unwrap_or_else(Val::unknown)
                .named(format!("${name}"));
        }
        let Some(variable) = children.iter().find(|child| {
            child.kind() == "variable_name" || child.kind() == "special_variable_name"
        }) else {
            return Val::unknown();
        };
        let name = text_of(*variable, self.source);
        // `$1`, `$@` in a function: what its callers give it.
        if let Some(function) = &self.function
            && (name.parse::<u8>().is_ok() || name == "@" || name == "*")
        {
            let key = parameter_of(function, if name == "*" { "@" } else { name });
            return self
                .env
                .get(&key)
                .cloned()
                .unwrap_or_else(Val::unknown)
                .named(format!("${name}"));
        }
        if let Some(value) = self.env.get(name) {
            // `${name:offset:length}`: a piece of it.
            if let Some(piece) = substring(text_of(node, self.source), value) {
                return piece;
            }
            return value.clone().named(format!("${name}"));
        }
        match name {
            "HOME" => return Val::text("~"),
            "USER" | "LOGNAME" => return Val::text("user"),
            _ => {}
        }
        // `${name:-default}`: the default, when the name holds nothing known.
        let default = children
            .iter()
            .skip_while(|child| child.id() != variable.id())
            .skip(1)
            .find(|child| child.kind() != "variable_name");
        match default {
            Some(default) => {
                let value = self.word(*default, depth + 1);
                if value.text.is_some() {
                    value
                } else {
                    Val::unknown().named(format!("${name}"))
                }
            }
            None => Val::unknown().named(format!("${name}")),
        }
    }
}

/// The folder an unpacking command `name` writes into, by its options
/// (`tar -C DIR`, `unzip -d DIR`, `7z x -oDIR`), when it names one.
fn extraction_folder(name: &str, args: &[Val]) -> Option<String> {
    let words: Vec<Option<&str>> = args.iter().map(Val::identity).collect();
    let after = |option: &str| {
        words
            .iter()
            .position(|word| *word == Some(option))
            .and_then(|at| words.get(at + 1).copied().flatten())
    };
    match name {
        "tar" | "bsdtar" => after("-C").or_else(|| {
            words
                .iter()
                .find_map(|word| word.and_then(|word| word.strip_prefix("--directory=")))
        }),
        "unzip" => after("-d"),
        "7z" | "7za" | "7zr" => words.iter().find_map(|word| {
            word.and_then(|word| word.strip_prefix("-o"))
                .filter(|folder| !folder.is_empty())
        }),
        _ => None,
    }
    .map(str::to_owned)
}

/// True when the shell text runs nothing: no command substitution.
fn only_names(text: &str) -> bool {
    !text.contains("$(") && !text.contains('`') && !text.contains("<(")
}

/// Tools that read their own credential stores whatever the argument.
const CONFIG_OWNERS: &[&str] = &[
    "kubectl",
    "helm",
    "kubectx",
    "kubens",
    "k9s",
    "aws",
    "gcloud",
    "gsutil",
    "az",
    "docker",
    "podman",
    "npm",
    "yarn",
    "pnpm",
    "pip",
    "pip3",
    "twine",
    "gh",
    "terraform",
];
/// Tools that use a key given with an option (`ssh -i KEY`).
const KEY_USERS: &[&str] = &[
    "ssh",
    "scp",
    "sftp",
    "ssh-add",
    "ssh-keygen",
    "git",
    "rsync",
];

/// True when the command `name args` names credential stores only as the
/// tool that owns them uses them: any argument of `kubectl` or `aws`, an
/// option's value for `ssh -i`.
fn owns_its_credentials(name: &str, args: &[Val]) -> bool {
    let mut named = false;
    for (index, arg) in args.iter().enumerate() {
        let Some(text) = arg.text.as_deref() else {
            continue;
        };
        if !is_credential_path(text) {
            continue;
        }
        named = true;
        let after_option = index > 0
            && args[index - 1]
                .text
                .as_deref()
                .is_some_and(|previous| previous.starts_with('-'));
        // `ssh-add KEY` and `ssh-keygen -y -f KEY` hand the key to the
        // agent or the tool that made it.
        let owned = CONFIG_OWNERS.contains(&name)
            || matches!(name, "ssh-add" | "ssh-keygen")
            || KEY_USERS.contains(&name) && (after_option || text.starts_with("IdentityFile="));
        if !owned {
            return false;
        }
    }
    named
}

/// True when `path` is the standard input as a file.
fn is_stdin(path: &str) -> bool {
    matches!(path, "/dev/stdin" | "-" | "/dev/fd/0" | "/proc/self/fd/0")
}

/// The archive `tar -czf FILE` or `zip FILE ...` writes.
fn archive_of(name: &str, args: &[Val]) -> Option<Val> {
    match name {
        "tar" => args.iter().enumerate().find_map(|(index, arg)| {
            let word = arg.text.as_deref()?;
            if let Some(file) = word.strip_prefix("--file=") {
                return Some(Val::text(file));
            }
            let short = word.starts_with('-') && !word.starts_with("--") && word.ends_with('f');
            let bare = index == 0 && !word.starts_with('-') && word.ends_with('f');
            (short || bare || word == "--file")
                .then(|| args.get(index + 1).cloned())
                .flatten()
        }),
        "zip" | "7z" | "7za" | "rar" => args
            .iter()
            .find(|arg| {
                arg.text
                    .as_deref()
                    .is_none_or(|word| !word.starts_with('-') && !matches!(word, "a" | "u"))
            })
            .cloned(),
        _ => None,
    }
}

/// `${name:offset}` and `${name:offset:length}` of a known `value`.
fn substring(expansion: &str, value: &Val) -> Option<Val> {
    let text = value.text.as_deref()?;
    let inner = expansion.strip_prefix("${")?.strip_suffix('}')?;
    let (_, range) = inner.split_once(':')?;
    let (offset, length) = match range.split_once(':') {
        Some((offset, length)) => (offset, Some(length)),
        None => (range, None),
    };
    let offset: usize = offset.trim().parse().ok()?;
    let chars: Vec<char> = text.chars().collect();
    let start = offset.min(chars.len());
    let end = match length {
        Some(length) => start
            .saturating_add(length.trim().parse::<usize>().ok()?)
            .min(chars.len()),
        None => chars.len(),
    };
    Some(Val::text(chars[start..end].iter().collect::<String>()).tainted(value.taint))
}

/// The values as words of one command line, separated by spaces.
fn joined(values: &[Val]) -> Vec<Val> {
    let mut pieces = Vec::new();
    for (index, value) in values.iter().enumerate() {
        if index > 0 {
            pieces.push(Val::text(" "));
        }
        pieces.push(value.clone());
    }
    pieces
}

/// `printf FORMAT ARGS`: `%s` and `%b` replaced by the arguments in turn,
/// `%%` by `%`, escapes done.
fn printf(args: &[Val]) -> Val {
    let Some(format) = args.first() else {
        return Val::text("");
    };
    let Some(format) = format.text.as_deref() else {
        return Val::unknown();
    };
    let mut pieces = Vec::new();
    let mut operands = args[1..].iter();
    let mut literal = String::new();
    let mut chars = ansi_c(format)
        .chars()
        .collect::<Vec<_>>()
        .into_iter()
        .peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            literal.push(c);
            continue;
        }
        // Skip flags and widths up to the conversion.
        let mut conversion = None;
        while let Some(&next) = chars.peek() {
            chars.next();
            if next.is_ascii_alphabetic() || next == '%' {
                conversion = Some(next);
                break;
            }
        }
        match conversion {
            Some('%') => literal.push('%'),
            Some(_) => {
                pieces.push(Val::text(std::mem::take(&mut literal)));
                pieces.push(operands.next().cloned().unwrap_or_else(|| Val::text("")));
            }
            None => {}
        }
    }
    pieces.push(Val::text(literal));
    Val::concat(pieces)
}

/// A bare word's text: backslashes drop, the character after stays.
fn unescape_word(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('\n') | None => {}
                Some(next) => out.push(next),
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Text inside double quotes: `\"`, `\\`, `\$`, `` \` `` lose their
/// backslash, and a backslash before a line end joins the lines.
fn unescape_double(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.peek() {
                Some('"' | '\\' | '$' | '`') => out.push(chars.next().unwrap_or('\\')),
                Some('\n') => {
                    chars.next();
                }
                _ => out.push('\\'),
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The escapes of `$'...'` and of `printf` formats: `\xHH`, `\NNN`
/// (octal), `\n`, `\t`, `\\`, `\'`.
fn ansi_c(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let chars: Vec<char> = text.chars().collect();
    let mut index = 0;
    while index < chars.len() {
        let c = chars[index];
        index += 1;
        if c != '\\' || index >= chars.len() {
            out.push(c);
            continue;
        }
        let next = chars[index];
        index += 1;
        match next {
            'n' => out.push('\n'),
            't' => out.push('\t'),
            'r' => out.push('\r'),
            'e' | 'E' => out.push('\u{1b}'),
            'a' => out.push('\u{7}'),
            '\\' | '\'' | '"' | '?' => out.push(next),
            'x' => {
                let digits: String = chars[index..]
                    .iter()
                    .take(2)
                    .take_while(|c| c.is_ascii_hexdigit())
                    .collect();
                index += digits.len();
                match u32::from_str_radix(&digits, 16)
                    .ok()
                    .and_then(char::from_u32)
                {
                    Some(c) => out.push(c),
                    None => out.push_str("\\x"),
                }
            }
            '0'..='7' => {
                let digits: String = std::iter::once(next)
                    .chain(chars[index..].iter().take(2).copied())
                    .take_while(|c| c.is_digit(8))
                    .collect();
                index += digits.len() - 1;
                match u32::from_str_radix(&digits, 8)
                    .ok()
                    .and_then(char::from_u32)
                {
                    Some(c) => out.push(c),
                    None => out.push('\\'),
                }
            }
            _ => {
                out.push('\\');
                out.push(next);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_of_ansi_c_strings_and_printf_formats() {
        assert_eq!(ansi_c(r"\x63url"), "curl");
        assert_eq!(ansi_c(r"\143url"), "curl");
        assert_eq!(ansi_c(r"a\tb"), "a\tb");
        let folded = printf(&[
            Val::text("/dev/%s/%s/%d"),
            Val::text("tcp"),
            Val::text("203.0.113.7"),
            Val::text("4444"),
        ]);
        assert_eq!(folded.text.as_deref(), Some("/dev/tcp/203.0.113.7/4444"));
        assert_eq!(unescape_word(r"cu\rl"), "curl");
    }
}
