//! PowerShell scripts (tree-sitter-powershell) lowered to events: each
//! pipeline folded into one command line (quotes joined, `+` and `-join`
//! of literals done, `Join-Path` put together, `$env:USERPROFILE` read as
//! the home folder, variables that hold constants replaced, base64 decoded
//! through `[Convert]::FromBase64String` and `[Text.Encoding]::...`), and
//! what its commands and method calls run, download, send and write.
//!
//! PowerShell is case-insensitive: names of variables, commands, methods
//! and parameters are compared in lower case.

use tree_sitter::Node;

use super::{
    Env, Lowered, MAX_DEPTH, Taint, Val, What, base_name, decode_base64, decoded,
    is_credential_path, is_store_path, named_children, run_argv, text_of, union,
};

/// Aliases of the commands this lowering knows.
const ALIASES: &[(&str, &str)] = &[
    ("iex", "invoke-expression"),
    ("irm", "invoke-restmethod"),
    ("iwr", "invoke-webrequest"),
    ("curl", "invoke-webrequest"),
    ("wget", "invoke-webrequest"),
    ("gc", "get-content"),
    ("cat", "get-content"),
    ("type", "get-content"),
    ("sc", "set-content"),
    ("ac", "add-content"),
    ("saps", "start-process"),
    ("start", "start-process"),
    ("cp", "copy-item"),
    ("copy", "copy-item"),
    ("cpi", "copy-item"),
    ("gci", "get-childitem"),
    ("dir", "get-childitem"),
    ("ls", "get-childitem"),
    ("icm", "invoke-command"),
];

/// Commands that look at a file without reading it, or hand a credential
/// to the tool that owns it: naming a store there is not reading it.
const OWN_USE: &[&str] = &[
    "test-path",
    "split-path",
    "resolve-path",
    "get-item",
    "get-childitem",
    "get-acl",
    "set-acl",
    "remove-item",
    "new-item",
    "icacls",
    "ssh",
    "ssh-add",
    "ssh-keygen",
    "scp",
    "git",
    "gh",
    "kubectl",
    "helm",
    "aws",
    "az",
    "gcloud",
    "docker",
];

/// Environment variables that name folders of the user's home.
const HOME_VARIABLES: &[(&str, &str)] = &[
    ("userprofile", "~"),
    ("home", "~"),
    ("homepath", "~"),
    ("appdata", "~/AppData/Roaming"),
    ("localappdata", "~/AppData/Local"),
];

struct Lowering<'a, 'e> {
    source: &'a str,
    env: &'e mut Env,
    out: &'e mut Lowered,
}

/// Lowers the PowerShell script `root` of `source`.
pub(super) fn lower(root: Node<'_>, source: &str, env: &mut Env, out: &mut Lowered) {
    let mut lowering = Lowering { source, env, out };
    lowering.statements(root, 0);
}

/// A command's argument: a `-Parameter` or a value.
enum Word {
    Parameter(String),
    Value(Val),
}

impl Word {
    /// The word as an argument vector holds it.
    fn as_val(&self) -> Val {
        match self {
            Self::Parameter(parameter) => Val::text(parameter.clone()),
            Self::Value(value) => value.clone(),
        }
    }
}

impl Lowering<'_, '_> {
    /// Lowers every pipeline under `node`, in blocks, loops, conditions
    /// and function bodies alike.
    fn statements(&mut self, node: Node<'_>, depth: usize) {
        if depth > MAX_DEPTH {
            return;
        }
        for child in named_children(node) {
            match child.kind() {
                "pipeline" => {
                    self.pipeline(child, depth + 1);
                }
                "comment" => {}
                _ => self.statements(child, depth + 1),
            }
        }
    }

    /// Lowers a pipeline (or an assignment); returns its output.
    fn pipeline(&mut self, node: Node<'_>, depth: usize) -> Val {
        if depth > MAX_DEPTH {
            return Val::unknown();
        }
        let mut output = Val::unknown();
        for child in named_children(node) {
            output = match child.kind() {
                "assignment_expression" => {
                    self.assign(child, depth + 1);
                    Val::text("")
                }
                "pipeline_chain" => self.chain(node, child, depth + 1),
                _ => self.value(child, depth + 1),
            };
        }
        output
    }

    /// Lowers `a | b | c`: each element fed the one before; the whole
    /// chain folded into one command line at `statement`.
    fn chain(&mut self, statement: Node<'_>, node: Node<'_>, depth: usize) -> Val {
        let mut input: Option<Val> = None;
        let mut line = Vec::new();
        let mut commands = 0;
        for element in named_children(node) {
            let output = if element.kind() == "command" {
                commands += 1;
                self.command(element, input.take(), &mut line, depth + 1)
            } else {
                let value = self.value(element, depth + 1);
                line.push(value.shown(text_of(element, self.source)).to_owned());
                value
            };
            input = Some(output);
        }
        if commands > 0 {
            self.out.push(statement, What::Command(line.join(" | ")));
        }
        input.unwrap_or_else(Val::unknown)
    }

    fn assign(&mut self, node: Node<'_>, depth: usize) {
        let Some(value_node) = node.child_by_field_name("value") else {
            return;
        };
        let value = match value_node.kind() {
            "pipeline" => self.pipeline(value_node, depth + 1),
            _ => self.value(value_node, depth + 1),
        };
        let Some(name) = named_children(node)
            .into_iter()
            .next()
            .and_then(|left| find_variable(left, self.source, depth + 1))
        else {
            return;
        };
        let operator = named_children(node)
            .into_iter()
            .find(|child| {
                child.kind() == "assignement_operator" || child.kind() == "assignment_operator"
            })
            .map(|op| text_of(op, self.source).trim().to_owned())
            .unwrap_or_default();
        let value = if operator == "+=" {
            let before = self
                .env
                .get(&name)
                .cloned()
                .unwrap_or_else(|| Val::text(""));
            Val::concat([before, value])
        } else {
            value
        };
        // Naming a store is not reading it: its uses are judged.
        if value.text.as_deref().is_some_and(is_credential_path) {
            self.out.push(node, What::OwnUse);
        }
        self.env.assign(&name, value);
    }

    /// The value of an expression; a path naming a credential store or a
    /// folder of them is marked so.
    fn value(&mut self, node: Node<'_>, depth: usize) -> Val {
        let value = self.value_of(node, depth);
        match value.identity() {
            Some(path) if is_store_path(path) => value.tainted(Taint::STORE_PATH),
            _ => value,
        }
    }

    fn value_of(&mut self, node: Node<'_>, depth: usize) -> Val {
        if depth > MAX_DEPTH {
            return Val::unknown();
        }
        let children = named_children(node);
        match node.kind() {
            "variable" => self.variable(text_of(node, self.source)),
            "string_literal" => match children.first() {
                Some(inner) => self.value(*inner, depth + 1),
                None => Val::text(""),
            },
            "verbatim_string_characters" => {
                let text = text_of(node, self.source);
                let inner = text
                    .strip_prefix('\'')
                    .and_then(|text| text.strip_suffix('\''))
                    .unwrap_or(text);
                Val::text(inner.replace("''", "'"))
            }
            "verbatim_here_string_characters" => {
                let text = text_of(node, self.source);
                let inner = text
                    .strip_prefix("@'")
                    .and_then(|text| text.strip_suffix("'@"))
                    .unwrap_or(text);
                Val::text(inner.trim_matches(['\r', '\n']))
            }
            "expandable_string_literal" | "expandable_here_string_literal" => {
                self.expandable(node, depth + 1)
            }
            "generic_token" | "integer_literal" | "real_literal" | "simple_name" => {
                Val::text(text_of(node, self.source))
            }
            "command" => {
                let mut line = Vec::new();
                self.command(node, None, &mut line, depth + 1)
            }
            "pipeline" => self.pipeline(node, depth + 1),
            "script_block_expression" | "script_block" => {
                // Its statements are lowered where they stand; as a value
                // it is its code.
                self.statements(node, depth + 1);
                let text = text_of(node, self.source);
                Val::text(
                    text.trim()
                        .trim_start_matches('{')
                        .trim_end_matches('}')
                        .trim(),
                )
            }
            "expression_with_unary_operator" => {
                let text = text_of(node, self.source).trim_start().to_ascii_lowercase();
                let operand = children.last().copied();
                if text.starts_with("-join")
                    && let Some(operand) = operand
                {
                    let items = self.items(operand, depth + 1);
                    Val::concat(items)
                } else {
                    union(&operand.map(|operand| self.value(operand, depth + 1)))
                }
            }
            "additive_expression" | "additive_argument_expression" if children.len() > 1 => {
                let values: Vec<Val> = children
                    .iter()
                    .map(|child| self.value(*child, depth + 1))
                    .collect();
                // `a + b` of strings joins them; a `-` makes a number.
                let between = self
                    .source
                    .get(children[0].end_byte()..children[children.len() - 1].start_byte())
                    .unwrap_or("");
                if between.contains('-') {
                    union(&values)
                } else {
                    Val::concat(values)
                }
            }
            "array_literal_expression" if children.len() > 1 => {
                let items = self.items(node, depth + 1);
                let mut pieces = Vec::new();
                for (index, item) in items.into_iter().enumerate() {
                    if index > 0 {
                        pieces.push(Val::text(" "));
                    }
                    pieces.push(item);
                }
                Val::concat(pieces)
            }
            "invokation_expression" => self.invocation(node, depth + 1),
            "member_access" => {
                let target = children
                    .first()
                    .map_or_else(Val::unknown, |target| self.value(*target, depth + 1));
                let member = children
                    .last()
                    .map(|member| text_of(*member, self.source).to_ascii_lowercase())
                    .unwrap_or_default();
                // `$reply.Content`: what the reply held.
                Val::from(target.taint | Taint::UNKNOWN)
                    .named(format!("{}.{member}", target.identity().unwrap_or("?")))
            }
            _ if children.len() == 1 => self.value(children[0], depth + 1),
            _ => {
                let values: Vec<Val> = children
                    .iter()
                    .map(|child| self.value(*child, depth + 1))
                    .collect();
                union(&values)
            }
        }
    }

    /// The items of an array (`'a', 'b'`, `('a','b')`): each a value.
    fn items(&mut self, node: Node<'_>, depth: usize) -> Vec<Val> {
        if depth > MAX_DEPTH {
            return vec![Val::unknown()];
        }
        let children = named_children(node);
        match node.kind() {
            "array_literal_expression" if children.len() > 1 => children
                .iter()
                .map(|child| self.value(*child, depth + 1))
                .collect(),
            _ if children.len() == 1
                && !matches!(
                    node.kind(),
                    "string_literal" | "invokation_expression" | "member_access" | "command"
                ) =>
            {
                self.items(children[0], depth + 1)
            }
            _ => vec![self.value(node, depth + 1)],
        }
    }

    /// A `"..."` string: its text with `$name`, `$env:NAME` and `$(...)`
    /// replaced by their values.
    fn expandable(&mut self, node: Node<'_>, depth: usize) -> Val {
        let text = text_of(node, self.source);
        let base = node.start_byte();
        let (open, close) = if text.starts_with("@\"") {
            (2, 2)
        } else {
            (1, 1)
        };
        let end = text.len().saturating_sub(close).max(open.min(text.len()));
        let mut pieces = Vec::new();
        let mut at = open.min(text.len());
        for child in named_children(node) {
            let (start, stop) = (child.start_byte() - base, child.end_byte() - base);
            if start < at || stop > end {
                continue;
            }
            pieces.push(Val::text(unescape(&text[at..start])));
            pieces.push(self.value(child, depth + 1));
            at = stop;
        }
        if at < end {
            pieces.push(Val::text(unescape(&text[at..end])));
        }
        Val::concat(pieces)
    }

    fn variable(&self, text: &str) -> Val {
        let name = text
            .trim_start_matches(['$', '@'])
            .trim_start_matches('{')
            .trim_end_matches('}')
            .to_ascii_lowercase();
        if let Some(variable) = name.strip_prefix("env:") {
            return HOME_VARIABLES
                .iter()
                .find(|(known, _)| *known == variable)
                .map_or_else(
                    || Val::unknown().named(text.to_owned()),
                    |(_, path)| Val::text(*path),
                );
        }
        match name.as_str() {
            "home" => Val::text("~"),
            "true" | "false" | "null" => Val::text(""),
            // A value not known is called by its variable: two uses of
            // `$zip` are one file.
            _ => self
                .env
                .get(&name)
                .cloned()
                .map(|value| match value.identity() {
                    Some(_) => value,
                    None => value.named(text.to_owned()),
                })
                .unwrap_or_else(|| Val::unknown().named(text.to_owned())),
        }
    }

    /// `[Type]::Method(...)` and `$x.Method(...)`.
    fn invocation(&mut self, node: Node<'_>, depth: usize) -> Val {
        let children = named_children(node);
        let Some(target_node) = children.first().copied() else {
            return Val::unknown();
        };
        let target_text = text_of(target_node, self.source).to_ascii_lowercase();
        let target = if target_node.kind() == "type_literal" {
            Val::text("")
        } else {
            self.value(target_node, depth + 1)
        };
        let method = children
            .iter()
            .find(|child| child.kind() == "member_name")
            .map(|member| text_of(*member, self.source).to_ascii_lowercase())
            .unwrap_or_default();
        let args: Vec<Val> = children
            .iter()
            .find(|child| child.kind() == "argument_list")
            .map(|list| {
                let mut values = Vec::new();
                collect_arguments(*list, &mut |argument| values.push(argument), depth + 1);
                values
                    .into_iter()
                    .map(|argument| self.value(argument, depth + 1))
                    .collect()
            })
            .unwrap_or_default();
        let arg = |index: usize| args.get(index).cloned().unwrap_or_else(Val::unknown);
        match method.as_str() {
            "frombase64string" => {
                let encoded = arg(0);
                let bytes = encoded.text.as_deref().and_then(decode_base64);
                decoded(bytes, &encoded)
            }
            "getstring" => {
                let bytes = arg(0);
                if target_text.contains("unicode") {
                    let text = bytes.text.as_deref().map(utf16le);
                    match text {
                        Some(text) => Val::text(text).tainted(bytes.taint),
                        None => bytes,
                    }
                } else {
                    bytes
                }
            }
            "downloadstring" | "downloaddata" | "getstringasync" | "readasstringasync" => {
                Val::from(Taint::NETWORK)
            }
            "downloadfile" => {
                self.out.push(node, What::Download(arg(1)));
                Val::text("")
            }
            "uploadstring" | "uploaddata" | "uploadvalues" | "uploadfile" | "postasync"
            | "sendasync" | "putasync" => {
                let sent = union(&args[args.len().min(1)..]);
                let sent = if method == "uploadfile" {
                    let file = arg(args.len().saturating_sub(1));
                    Val::from(self.file_taint(&file) | Taint::UNKNOWN)
                } else {
                    sent
                };
                self.out.push(node, What::Send(sent));
                Val::from(Taint::NETWORK)
            }
            "readalltext" | "readallbytes" | "readalllines" => {
                let file = arg(0);
                Val::from(self.file_taint(&file) | Taint::UNKNOWN)
            }
            "getenvironmentvariables" => Val::from(Taint::ENVIRONMENT),
            "create" if target_text.contains("scriptblock") => arg(0),
            "invoke" | "invokescript" | "addscript" => {
                let code = if method == "invoke" { target } else { arg(0) };
                self.out.push(node, What::Exec(code));
                Val::unknown()
            }
            "replace" => match (&target.text, &arg(0).text, &arg(1).text) {
                (Some(text), Some(from), Some(to)) if !from.is_empty() => {
                    Val::text(text.replace(from.as_str(), to)).tainted(target.taint)
                }
                _ => union(&[target]),
            },
            "tolower" | "tolowerinvariant" => transform(&target, str::to_lowercase),
            "toupper" | "toupperinvariant" => transform(&target, str::to_uppercase),
            "trim" => transform(&target, |text| text.trim().to_owned()),
            _ => {
                let mut all = args.clone();
                all.push(target);
                union(&all)
            }
        }
    }

    /// Lowers one command fed `input`: adds its folded words to `line` and
    /// returns its output.
    fn command(
        &mut self,
        node: Node<'_>,
        input: Option<Val>,
        line: &mut Vec<String>,
        depth: usize,
    ) -> Val {
        let mut invoked = false;
        let mut name = Val::unknown();
        let mut shown = Vec::new();
        let mut words = Vec::new();
        for child in named_children(node) {
            match child.kind() {
                "command_invokation_operator" => invoked = true,
                "command_name" => {
                    name = Val::text(text_of(child, self.source));
                    shown.push(text_of(child, self.source).to_owned());
                }
                "command_name_expr" => {
                    let inner = named_children(child).into_iter().next().unwrap_or(child);
                    name = if inner.kind() == "command_name" {
                        Val::text(text_of(inner, self.source))
                    } else {
                        self.value(inner, depth + 1)
                    };
                    shown.push(name.shown(text_of(child, self.source)).to_owned());
                }
                "command_elements" => {
                    for element in named_children(child) {
                        match element.kind() {
                            "command_argument_sep" => {}
                            "command_parameter" => {
                                let text = text_of(element, self.source);
                                shown.push(text.to_owned());
                                words.push(Word::Parameter(
                                    text.trim_end_matches(':').to_ascii_lowercase(),
                                ));
                            }
                            _ => {
                                let value = self.value(element, depth + 1);
                                shown.push(value.shown(text_of(element, self.source)).to_owned());
                                words.push(Word::Value(value));
                            }
                        }
                    }
                }
                _ => {}
            }
        }
        line.push(shown.join(" "));
        let lower = name.text.as_deref().map(program_name).unwrap_or_default();
        let canonical = ALIASES
            .iter()
            .find(|(alias, _)| *alias == lower)
            .map_or(lower.as_str(), |(_, full)| full);
        if invoked {
            // `& $file`, `. ./x.ps1`, `& { code }`.
            if name
                .text
                .as_deref()
                .is_some_and(|text| !text.contains(['/', '\\', '.']))
                && name.taint == Taint::NONE
            {
                // `& Get-Thing`: a command by name.
            } else {
                self.out.push(node, What::RunFile(name.clone()));
            }
        }
        if OWN_USE.contains(&canonical) {
            self.out.push(node, What::OwnUse);
        }
        let parameter = |names: &[&str]| -> Option<Val> {
            words
                .iter()
                .enumerate()
                .find_map(|(index, word)| match word {
                    Word::Parameter(parameter)
                        if names
                            .iter()
                            .any(|name| parameter.strip_prefix('-') == Some(name)) =>
                    {
                        match words.get(index + 1) {
                            Some(Word::Value(value)) => Some(value.clone()),
                            _ => None,
                        }
                    }
                    _ => None,
                })
        };
        // Values not taken by a parameter, in order.
        let positional: Vec<Val> = {
            let mut values = Vec::new();
            let mut after_parameter = false;
            for word in &words {
                match word {
                    Word::Parameter(_) => after_parameter = true,
                    Word::Value(value) => {
                        if !after_parameter {
                            values.push(value.clone());
                        }
                        after_parameter = false;
                    }
                }
            }
            values
        };
        let first = positional.first().cloned();
        // `& $name $code`, `.($env:ComSpec[4,15,25] -join '') $code`: a
        // command whose name is computed, given downloaded or decoded
        // text, is how `Invoke-Expression` is called without its name.
        if invoked && name.text.is_none() {
            let fed = positional
                .iter()
                .chain(input.iter())
                .find(|value| value.taint.has(Taint::NETWORK | Taint::DECODED));
            if let Some(code) = fed {
                self.out.push(node, What::Exec(code.clone()));
            }
        }
        match canonical {
            "invoke-expression" => {
                let code = parameter(&["command"])
                    .or(first)
                    .or(input)
                    .unwrap_or_else(Val::unknown);
                self.out.push(node, What::Exec(code));
                Val::unknown()
            }
            "invoke-command" => {
                if let Some(code) = parameter(&["scriptblock"]) {
                    self.out.push(node, What::Exec(code));
                }
                Val::unknown()
            }
            "invoke-restmethod" | "invoke-webrequest" => {
                if let Some(body) = parameter(&["body"]) {
                    self.out.push(node, What::Send(body));
                }
                if let Some(file) = parameter(&["infile"]) {
                    let taint = self.file_taint(&file);
                    self.out
                        .push(node, What::Send(Val::from(taint | Taint::UNKNOWN)));
                }
                if let Some(file) = parameter(&["outfile"]) {
                    self.out.push(node, What::Download(file));
                }
                Val::from(Taint::NETWORK)
            }
            "get-content" => {
                let file = parameter(&["path", "literalpath"])
                    .or(first)
                    .unwrap_or_else(Val::unknown);
                let taint = self.file_taint(&file);
                Val::from(taint | Taint::UNKNOWN)
            }
            "set-content" | "add-content" | "out-file" => {
                let path = parameter(&["path", "literalpath", "filepath"])
                    .or(first)
                    .unwrap_or_else(Val::unknown);
                let content = parameter(&["value", "inputobject"])
                    .or(input)
                    .unwrap_or_else(Val::unknown);
                if content.taint.has(Taint::NETWORK) {
                    self.out.push(node, What::Download(path.clone()));
                }
                self.out.push(node, What::Write { path, content });
                Val::text("")
            }
            "copy-item" => {
                let source = parameter(&["path", "literalpath"]).or_else(|| first.clone());
                let destination =
                    parameter(&["destination"]).or_else(|| positional.get(1).cloned());
                if let (Some(source), Some(destination)) = (source, destination) {
                    let taint = self.file_taint(&source);
                    if taint.has(Taint::CREDENTIAL)
                        && let Some(path) = destination.identity()
                    {
                        self.env.taint(&format!("file:{path}"), Taint::CREDENTIAL);
                    }
                    self.out.push(
                        node,
                        What::Write {
                            path: destination,
                            content: source,
                        },
                    );
                }
                Val::text("")
            }
            "compress-archive" => {
                // Packing takes what the files hold into the archive.
                let source = parameter(&["path", "literalpath"])
                    .or_else(|| first.clone())
                    .or(input);
                let destination =
                    parameter(&["destinationpath"]).or_else(|| positional.get(1).cloned());
                if let (Some(source), Some(destination)) = (source, destination) {
                    let secret =
                        self.file_taint(&source) & (Taint::CREDENTIAL | Taint::ENVIRONMENT);
                    if secret != Taint::NONE
                        && let Some(path) = destination.identity()
                    {
                        let normal = path.replace('\\', "/");
                        self.env.taint(&format!("file:{normal}"), secret);
                    }
                }
                Val::text("")
            }
            "where-object" | "sort-object" | "select-object" | "foreach-object" | "tee-object"
            | "out-string" | "convertto-json" | "convertto-csv" | "format-table"
            | "format-list" => {
                // Filters pass on what they are fed.
                let taint = input.map_or(Taint::NONE, |input| input.taint);
                Val::from(taint | Taint::UNKNOWN)
            }
            "join-path" => {
                let parent = parameter(&["path"]).or_else(|| first.clone());
                let child = parameter(&["childpath"]).or_else(|| positional.get(1).cloned());
                self.out.push(node, What::OwnUse);
                match (parent, child) {
                    (Some(parent), Some(child)) => Val::concat([parent, Val::text("/"), child]),
                    (Some(parent), None) => parent,
                    _ => Val::unknown(),
                }
            }
            "get-childitem" | "get-item"
                if first
                    .as_ref()
                    .and_then(|value| value.text.as_deref())
                    .is_some_and(|path| path.eq_ignore_ascii_case("env:")) =>
            {
                Val::from(Taint::ENVIRONMENT)
            }
            "start-process" => {
                let file = parameter(&["filepath"])
                    .or(first)
                    .unwrap_or_else(Val::unknown);
                let mut argv = vec![file];
                if let Some(arguments) = parameter(&["argumentlist", "args"])
                    && let Some(text) = &arguments.text
                {
                    argv.extend(
                        text.split_whitespace()
                            .map(|word| Val::text(word.trim_matches(['\'', '"', ',']))),
                    );
                }
                self.run_program(node, &argv);
                Val::unknown()
            }
            "powershell" | "pwsh" | "cmd" => {
                let argv: Vec<Val> = std::iter::once(Val::text(canonical))
                    .chain(words.iter().map(Word::as_val))
                    .collect();
                self.run_program(node, &argv);
                if input.is_some() && words.is_empty() {
                    self.out
                        .push(node, What::Exec(input.unwrap_or_else(Val::unknown)));
                }
                Val::unknown()
            }
            _ => {
                let argv: Vec<Val> = std::iter::once(name)
                    .chain(words.iter().map(Word::as_val))
                    .collect();
                run_argv(self.out, node, &argv);
                Val::unknown()
            }
        }
    }

    /// What running `argv` runs: an encoded command decoded, a command, or
    /// a file.
    fn run_program(&mut self, node: Node<'_>, argv: &[Val]) {
        let program = argv
            .first()
            .and_then(|value| value.text.as_deref())
            .map(program_name)
            .unwrap_or_default();
        if program == "powershell" || program == "pwsh" {
            let encoded = argv.iter().enumerate().find_map(|(index, word)| {
                let option = word.text.as_deref()?.to_ascii_lowercase();
                let option = option.trim_start_matches(['-', '/']);
                (!option.is_empty()
                    && "encodedcommand".starts_with(option)
                    && option.starts_with('e'))
                .then(|| argv.get(index + 1).cloned())
                .flatten()
            });
            if let Some(encoded) = encoded {
                let bytes = encoded.text.as_deref().and_then(decode_base64);
                let code = match bytes.map(|bytes| utf16le(&String::from_utf8_lossy(&bytes))) {
                    Some(text) => Val::text(text).tainted(encoded.taint | Taint::DECODED),
                    None => Val::from(encoded.taint | Taint::DECODED),
                };
                self.out.push(node, What::Exec(code));
                return;
            }
        }
        run_argv(self.out, node, argv);
    }

    /// What reading the file `path` gives: a credential, or what was
    /// copied there.
    fn file_taint(&self, path: &Val) -> Taint {
        let Some(identity) = path.identity() else {
            return path.taint | path.read_taint();
        };
        let normal = identity.replace('\\', "/");
        let mut taint = path.taint | path.read_taint();
        if is_credential_path(&normal) {
            taint |= Taint::CREDENTIAL;
        }
        if let Some(file) = self.env.get(&format!("file:{normal}")) {
            taint |= file.taint;
        }
        taint
    }
}

/// A program's name as PowerShell finds it: its file name, lower case,
/// without `.exe`.
fn program_name(text: &str) -> String {
    base_name(text).trim_end_matches(".exe").to_owned()
}

/// The name (lower case, no `$`) of the variable an assignment's left side
/// is.
fn find_variable(node: Node<'_>, source: &str, depth: usize) -> Option<String> {
    if depth > MAX_DEPTH {
        return None;
    }
    if node.kind() == "variable" {
        let name = text_of(node, source)
            .trim_start_matches('$')
            .trim_start_matches('{')
            .trim_end_matches('}')
            .to_ascii_lowercase();
        return (!name.starts_with("env:")).then_some(name);
    }
    let children = named_children(node);
    match children.as_slice() {
        [only] => find_variable(*only, source, depth + 1),
        _ => None,
    }
}

/// Calls `found` with each argument expression under an argument list.
fn collect_arguments<'t>(node: Node<'t>, found: &mut dyn FnMut(Node<'t>), depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    for child in named_children(node) {
        match child.kind() {
            "argument_expression_list" => collect_arguments(child, found, depth + 1),
            _ => found(child),
        }
    }
}

/// The text of a `"..."` piece with PowerShell's backtick escapes read.
fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '`' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('0') => out.push('\0'),
            Some(other) => out.push(other),
            None => {}
        }
    }
    out
}

/// Text whose bytes are UTF-16LE (as `[Text.Encoding]::Unicode` and
/// `powershell -EncodedCommand` read them), decoded; other text as it is.
fn utf16le(text: &str) -> String {
    let bytes = text.as_bytes();
    let looks_wide = bytes.len() >= 2 && bytes.iter().skip(1).step_by(2).all(|&byte| byte == 0);
    if !looks_wide {
        return text.to_owned();
    }
    let units: Vec<u16> = bytes
        .chunks(2)
        .map(|pair| u16::from_le_bytes([pair[0], pair.get(1).copied().unwrap_or(0)]))
        .collect();
    String::from_utf16_lossy(&units)
}

fn transform(value: &Val, change: impl Fn(&str) -> String) -> Val {
    match &value.text {
        Some(text) => Val::text(change(text)).tainted(value.taint),
        None => value.clone(),
    }
}
