//! Python scripts (tree-sitter-python) lowered to events: strings folded
//! (`+`, adjacent literals, f-strings, `os.path.join`, `"".join`, `%`,
//! `.format`, `[::-1]`, `chr`), decoders and network reads followed to
//! `exec`, `eval`, `os.system` and `subprocess`, and credential files or
//! the environment followed to requests that send them.

use std::collections::HashMap;

use tree_sitter::Node;

use super::{
    Env, Lowered, MAX_DEPTH, Taint, Val, What, decode_base64, decode_hex, decoded,
    is_credential_path, is_environ_file, is_store_path, named_children, rot13, run_argv, text_of,
    union,
};

/// Calls that run their first argument as Python code; unpickling runs
/// whatever code the bytes name, so deserialisers are here too.
const EXEC: &[&str] = &[
    "exec",
    "eval",
    "compile",
    "execfile",
    "pickle.loads",
    "cPickle.loads",
    "_pickle.loads",
    "marshal.loads",
    "dill.loads",
    "cloudpickle.loads",
];
/// Calls that load a file (or an open one) with a deserialiser that runs
/// the code its bytes name: a shelf unpickles each value it is asked for.
const UNPICKLERS: &[&str] = &[
    "pickle.load",
    "cPickle.load",
    "_pickle.load",
    "pickle.Unpickler",
    "Unpickler",
    "dill.load",
    "cloudpickle.load",
    "joblib.load",
    "shelve.open",
    "shelve.Shelf",
    "shelve.DbfilenameShelf",
    "shelve.BsdDbShelf",
    "Shelf",
    "DbfilenameShelf",
    "pandas.read_pickle",
    "pd.read_pickle",
    "read_pickle",
    "torch.load",
];

/// Calls that show text to the reader.
const PRINTS: &[&str] = &[
    "print",
    "sys.stdout.write",
    "sys.stderr.write",
    "logging.info",
    "logging.warning",
    "logging.error",
    "logging.debug",
    "log.info",
    "log.warning",
    "log.error",
    "log.debug",
    "logger.info",
    "logger.warning",
    "logger.error",
    "logger.debug",
    "click.echo",
    "console.print",
    "rich.print",
    "parser.error",
    "sys.exit",
];

/// Calls that run their first argument as a shell command line.
const SHELL: &[&str] = &[
    "os.system",
    "os.popen",
    "system",
    "popen",
    "subprocess.getoutput",
    "subprocess.getstatusoutput",
    "getoutput",
    "commands.getoutput",
    "pty.spawn",
];
/// Calls that load code from the file an argument names: a script, a
/// module, a native library.
const FILE_RUNNERS: &[&str] = &[
    "run_path",
    "spec_from_file_location",
    "SourceFileLoader",
    "SourcelessFileLoader",
    "ExtensionFileLoader",
    "load_source",
    "load_compiled",
    "load_dynamic",
    "CDLL",
    "PyDLL",
    "WinDLL",
    "OleDLL",
    "LoadLibrary",
    "spawnl",
    "spawnlp",
    "spawnle",
    "spawnv",
    "spawnvp",
    "spawnve",
    "execv",
    "execvp",
    "execve",
    "execl",
    "execlp",
    "execle",
];
/// Name lookups: a name looked up is sent to whoever serves its domain.
const RESOLVES: &[&str] = &[
    "gethostbyname",
    "gethostbyname_ex",
    "getaddrinfo",
    "gethostbyaddr",
    "getnameinfo",
];
/// Calls that run an argument vector (or a command line with `shell=True`).
const SUBPROCESS: &[&str] = &[
    "run",
    "call",
    "check_call",
    "check_output",
    "Popen",
    "spawnl",
    "spawnlp",
    "spawnv",
    "spawnvp",
    "execv",
    "execvp",
    "execl",
    "execlp",
    "create_subprocess_exec",
    "create_subprocess_shell",
];
/// Calls whose result is read from the network.
const NETWORK: &[&str] = &[
    "urlopen",
    "urlretrieve",
    "requests.get",
    "requests.post",
    "requests.request",
    "httpx.get",
    "httpx.post",
    "httpx.request",
    "session.get",
    "s.get",
    "client.get",
    "http.get",
    "urllib3.request",
    "pool.request",
    "getresponse",
    "recv",
    "aiohttp.request",
];
/// Calls that send what they are given.
const SENDS: &[&str] = &[
    "post",
    "put",
    "patch",
    "urlopen",
    "Request",
    "request",
    "send",
    "sendall",
    "sendto",
    "sendmail",
    "send_message",
    "upload_file",
    "upload_fileobj",
    "put_object",
    "webhook",
];
/// Decoders, by the last piece of their name.
const DECODERS: &[&str] = &[
    "b64decode",
    "b32decode",
    "b16decode",
    "b85decode",
    "a85decode",
    "urlsafe_b64decode",
    "standard_b64decode",
    "decodebytes",
    "decodestring",
    "unhexlify",
    "a2b_hex",
    "a2b_base64",
    "fromhex",
    "decompress",
    "loads",
    "unquote",
    "unquote_to_bytes",
    "unquote_plus",
];

/// Standard modules whose functions, looked up by a computed name, run
/// programs, reach the network or read files.
const MODULES: &[&str] = &[
    "os",
    "subprocess",
    "socket",
    "urllib",
    "requests",
    "http",
    "httpx",
    "builtins",
    "__builtins__",
    "importlib",
    "ctypes",
    "shutil",
    "pty",
    "base64",
    "codecs",
    "zlib",
    "marshal",
    "pickle",
    "sys",
    "io",
    "pathlib",
    "runpy",
    "webbrowser",
    "smtplib",
    "ftplib",
];

struct Lowering<'a, 'e> {
    source: &'a str,
    env: &'e mut Env,
    out: &'e mut Lowered,
    /// Names bound to files opened for writing, and the file names.
    handles: HashMap<String, Val>,
    /// The function whose body is being lowered, if any.
    function: Option<String>,
    /// The functions of the file, with their parameters.
    functions: HashMap<String, Vec<String>>,
    /// Names called this pass before the file defined them.
    called: std::collections::HashSet<String>,
    /// True when an earlier pass saw a download: the paths written from
    /// the network are looked up as names are read.
    downloads: bool,
}

/// The key under which [`Env`] holds what a function returns.
fn returned(function: &str) -> String {
    format!("{function}()")
}

/// The key under which [`Env`] marks a file written from the network.
fn fetched(identity: &str) -> String {
    format!("{identity}\u{0}fetched")
}

/// The key under which [`Env`] notes that the file downloads at all.
const ANY_DOWNLOAD: &str = "\u{0}downloads";

/// Lowers the Python module `root` of `source`.
pub(super) fn lower(root: Node<'_>, source: &str, env: &mut Env, out: &mut Lowered) {
    let functions = std::mem::take(&mut env.functions);
    let downloads = env.get(ANY_DOWNLOAD).is_some();
    let mut lowering = Lowering {
        source,
        env,
        out,
        handles: HashMap::new(),
        function: None,
        functions,
        called: std::collections::HashSet::new(),
        downloads,
    };
    lowering.walk(root, 0);
    lowering.env.functions = lowering.functions;
}

impl Lowering<'_, '_> {
    /// Lowers the statements and expressions under `node`.
    fn walk(&mut self, node: Node<'_>, depth: usize) {
        if depth > MAX_DEPTH {
            return;
        }
        match node.kind() {
            "assignment" | "augmented_assignment" => {
                let value = node
                    .child_by_field_name("right")
                    .map_or_else(Val::unknown, |right| self.expr(right, depth + 1));
                // `ssh_dir = os.path.expanduser("~/.ssh")` names a store
                // without reading it: what is done with it is judged
                // where it goes.
                let reads = node.child_by_field_name("right").is_some_and(|right| {
                    let text = text_of(right, self.source);
                    [
                        "open(", "read", "load", "urlopen", "post(", "put(", "send", "upload",
                    ]
                    .iter()
                    .any(|word| text.contains(word))
                });
                // A folder of stores (`~/.ssh`), not a key file in it: a
                // file named here is read by whatever it is given to, which
                // the analysis does not always know (`cfg.read(path)`).
                let folder = |text: &str| is_store_path(text) && !is_credential_path(text);
                let names_store = value.text.as_deref().is_some_and(folder)
                    || node.child_by_field_name("right").is_some_and(|right| {
                        // A literal among its pieces: `x if c else
                        // os.path.join("~/.ssh", x)`.
                        let pieces: Vec<&str> = text_of(right, self.source)
                            .split(['"', '\''])
                            .skip(1)
                            .step_by(2)
                            .collect();
                        pieces.iter().any(|piece| folder(piece))
                            && !pieces.iter().any(|piece| is_credential_path(piece))
                    });
                // A table of paths (`FILE_GLOBS = ["~/.bashrc", ...]`)
                // names them: what reads or writes them is judged there.
                let table = node.child_by_field_name("right").is_some_and(|right| {
                    matches!(right.kind(), "list" | "tuple" | "set")
                        && right.named_child_count() > 0
                        && named_children(right)
                            .iter()
                            .all(|item| matches!(item.kind(), "string" | "concatenated_string"))
                });
                if names_store && !reads || table {
                    self.out.push(node, What::OwnUse);
                }
                if let Some(left) = node.child_by_field_name("left") {
                    let augmented = node.kind() == "augmented_assignment";
                    self.bind(left, value, augmented);
                }
            }
            "with_item" => {
                if let Some(value) = node.child_by_field_name("value") {
                    if value.kind() == "as_pattern" {
                        let bound = named_children(value);
                        if let (Some(opened), Some(alias)) =
                            (bound.first(), value.child_by_field_name("alias"))
                        {
                            let opened_value = self.expr(*opened, depth + 1);
                            let name = text_of(alias, self.source).to_owned();
                            if let Some(file) = self.opened_for_writing(*opened, depth) {
                                self.handles.insert(name.clone(), file);
                            }
                            self.env.assign(&name, opened_value);
                        }
                    } else {
                        self.expr(value, depth + 1);
                    }
                }
            }
            "for_statement" | "for_in_clause" => {
                let items = node
                    .child_by_field_name("right")
                    .map_or_else(Val::unknown, |right| self.expr(right, depth + 1));
                if let Some(left) = node.child_by_field_name("left") {
                    self.bind(left, union([&items]), false);
                }
                for child in named_children(node) {
                    if child.kind() == "block" {
                        self.walk(child, depth + 1);
                    }
                }
            }
            "function_definition" => {
                let name = node
                    .child_by_field_name("name")
                    .map(|name| text_of(name, self.source).to_owned());
                if let Some(name) = &name {
                    let parameters = node
                        .child_by_field_name("parameters")
                        .map(|parameters| self.parameters(parameters))
                        .unwrap_or_default();
                    // A call lowered before the definition passed its
                    // arguments to no one: the file is read again.
                    if self.called.contains(name) {
                        self.env.changed = true;
                    }
                    self.functions.insert(name.clone(), parameters);
                }
                let outer = std::mem::replace(&mut self.function, name);
                for child in named_children(node) {
                    self.walk(child, depth + 1);
                }
                self.function = outer;
            }
            "return_statement" => {
                let values: Vec<Val> = named_children(node)
                    .into_iter()
                    .map(|child| self.expr(child, depth + 1))
                    .collect();
                if let Some(function) = self.function.clone()
                    && !values.is_empty()
                {
                    let value = match values.as_slice() {
                        [only] => only.clone(),
                        many => union(many),
                    };
                    self.env.assign(&returned(&function), value);
                }
            }
            "expression_statement" => {
                for child in named_children(node) {
                    if matches!(child.kind(), "assignment" | "augmented_assignment") {
                        self.walk(child, depth + 1);
                    } else {
                        self.expr(child, depth + 1);
                    }
                }
            }
            "call" | "await" => {
                self.expr(node, depth + 1);
            }
            _ => {
                for child in named_children(node) {
                    self.walk(child, depth + 1);
                }
            }
        }
    }

    /// Binds the target `left` to `value`.
    fn bind(&mut self, left: Node<'_>, value: Val, augmented: bool) {
        match left.kind() {
            "identifier" => {
                let name = text_of(left, self.source);
                if augmented {
                    let old = self.env.get(name).cloned().unwrap_or_else(|| Val::text(""));
                    self.env.assign(name, Val::concat([old, value]));
                } else {
                    // A value of unknown text is known by the name it is
                    // bound to: a path written here and run there is one
                    // file.
                    let value = if value.identity().is_none() {
                        value.named(name)
                    } else {
                        value
                    };
                    self.env.assign(name, value);
                }
            }
            // `self.data = ...`: what the attribute holds, by its dotted
            // name, for every method that reads it.
            "attribute" => {
                let dotted: String = text_of(left, self.source)
                    .chars()
                    .filter(|c| !c.is_whitespace())
                    .collect();
                self.env.assign(&dotted, value);
            }
            "pattern_list" | "tuple_pattern" | "list_pattern" | "tuple" | "list" => {
                let taint = value.taint;
                for child in named_children(left) {
                    self.bind(child, Val::from(taint | Taint::UNKNOWN), false);
                }
            }
            _ => {}
        }
    }

    /// The names of a function's parameters, `self` and `cls` left out.
    fn parameters(&self, parameters: Node<'_>) -> Vec<String> {
        named_children(parameters)
            .into_iter()
            .filter_map(|parameter| match parameter.kind() {
                "identifier" => Some(parameter),
                "default_parameter" | "typed_default_parameter" => {
                    parameter.child_by_field_name("name")
                }
                "typed_parameter" => named_children(parameter).into_iter().next(),
                _ => None,
            })
            .map(|name| text_of(name, self.source).to_owned())
            .filter(|name| name != "self" && name != "cls")
            .collect()
    }

    /// `value`, marked as network bytes when it names a file the code
    /// wrote from the network.
    fn marked_fetched(&self, value: Val) -> Val {
        if self.downloads
            && let Some(identity) = value.identity()
            && self.env.get(&fetched(identity)).is_some()
        {
            return value.tainted(Taint::NETWORK);
        }
        value
    }

    /// Notes that `file` is written from the network.
    fn downloaded(&mut self, node: Node<'_>, file: Val) {
        if let Some(identity) = file.identity() {
            self.env.assign(&fetched(identity), Val::text(""));
            self.env.assign(ANY_DOWNLOAD, Val::text(""));
        }
        self.out.push(node, What::Download(file));
    }

    /// The file a call opens for writing (`open(F, "wb")`), if it does.
    fn opened_for_writing(&mut self, node: Node<'_>, depth: usize) -> Option<Val> {
        if node.kind() != "call" {
            return None;
        }
        let callee = self.callee(node);
        if !(callee == "open" || callee.ends_with(".open")) {
            return None;
        }
        let args = node.child_by_field_name("arguments")?;
        let values: Vec<Node<'_>> = named_children(args);
        let file = values.first()?;
        let mode = values
            .get(1)
            .map(|mode| self.expr(*mode, depth + 1))
            .and_then(|mode| mode.text);
        if mode.is_some_and(|mode| mode.contains('w') || mode.contains('a')) {
            Some(self.expr(*file, depth + 1))
        } else {
            None
        }
    }

    /// The dotted name a call calls, as written (`os.path.join`), or the
    /// folded name when it is computed (`getattr(builtins, "ex"+"ec")`).
    fn callee(&mut self, call: Node<'_>) -> String {
        let Some(function) = call.child_by_field_name("function") else {
            return String::new();
        };
        if function.kind() == "call" {
            // `getattr(x, "name")(...)`, `__import__("os").system(...)`.
            let inner = self.callee(function);
            if inner == "getattr" {
                let args = function
                    .child_by_field_name("arguments")
                    .map(named_children)
                    .unwrap_or_default();
                if let Some(name) = args.get(1)
                    && let Some(name) = self.expr(*name, 0).text
                {
                    return name;
                }
            }
            return inner;
        }
        if function.kind() == "attribute"
            && let Some(object) = function.child_by_field_name("object")
            && object.kind() == "call"
            && self.callee(object) == "__import__"
        {
            let attribute = function
                .child_by_field_name("attribute")
                .map_or("", |name| text_of(name, self.source));
            let module = object
                .child_by_field_name("arguments")
                .and_then(|args| named_children(args).into_iter().next())
                .and_then(|name| self.expr(name, 0).text)
                .unwrap_or_default();
            return format!("{module}.{attribute}");
        }
        text_of(function, self.source)
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect()
    }

    /// The value of an expression.
    fn expr(&mut self, node: Node<'_>, depth: usize) -> Val {
        if depth > MAX_DEPTH {
            return Val::unknown();
        }
        let source = self.source;
        let value = match node.kind() {
            "string" => self.string(node, depth),
            "concatenated_string" => {
                let pieces: Vec<Val> = named_children(node)
                    .into_iter()
                    .map(|child| self.expr(child, depth + 1))
                    .collect();
                Val::concat(pieces)
            }
            "integer" | "float" => Val::text(text_of(node, source)),
            "true" | "false" | "none" => Val::text(text_of(node, source)),
            "identifier" => {
                let name = text_of(node, source);
                let value = self.env.get(name).cloned().unwrap_or_else(Val::unknown);
                self.marked_fetched(value)
            }
            "parenthesized_expression" | "await" | "expression_list" => {
                let children = named_children(node);
                match children.as_slice() {
                    [only] => self.expr(*only, depth + 1),
                    many => {
                        let values: Vec<Val> = many
                            .iter()
                            .map(|child| self.expr(*child, depth + 1))
                            .collect();
                        union(&values)
                    }
                }
            }
            "binary_operator" => self.binary(node, depth),
            "attribute" => self.attribute(node, depth),
            "subscript" => self.subscript(node, depth),
            "call" => self.call(node, depth),
            "list"
            | "tuple"
            | "set"
            | "dictionary"
            | "pair"
            | "dictionary_splat"
            | "list_splat"
            | "keyword_argument"
            | "conditional_expression"
            | "boolean_operator"
            | "list_comprehension"
            | "generator_expression"
            | "lambda" => {
                let values: Vec<Val> = named_children(node)
                    .into_iter()
                    .map(|child| self.expr(child, depth + 1))
                    .collect();
                union(&values)
            }
            _ => {
                let values: Vec<Val> = named_children(node)
                    .into_iter()
                    .map(|child| self.expr(child, depth + 1))
                    .collect();
                union(&values)
            }
        };
        // What folding built from pieces is read by the line rules.
        if (matches!(
            node.kind(),
            "binary_operator" | "concatenated_string" | "call" | "subscript"
        ) || node.kind() == "string" && text_of(node, source).contains('{'))
            && let Some(text) = &value.text
            && !text.is_empty()
            && text.len() < 4096
        {
            self.out.push(node, What::Command(text.clone()));
        }
        value
    }

    fn string(&mut self, node: Node<'_>, depth: usize) -> Val {
        let source = self.source;
        let start = node
            .child(0)
            .map_or("", |start| text_of(start, source))
            .to_ascii_lowercase();
        let raw = start.contains('r');
        let mut pieces = Vec::new();
        for child in named_children(node) {
            match child.kind() {
                "string_content" => {
                    let text = text_of(child, source);
                    pieces.push(Val::text(if raw {
                        text.to_owned()
                    } else {
                        unescape(text)
                    }));
                }
                "interpolation" => {
                    let inner = child
                        .child_by_field_name("expression")
                        .map_or_else(Val::unknown, |expression| self.expr(expression, depth + 1));
                    pieces.push(inner);
                }
                _ => {}
            }
        }
        Val::concat(pieces)
    }

    fn binary(&mut self, node: Node<'_>, depth: usize) -> Val {
        let left = node
            .child_by_field_name("left")
            .map_or_else(Val::unknown, |left| self.expr(left, depth + 1));
        let right = node
            .child_by_field_name("right")
            .map_or_else(Val::unknown, |right| self.expr(right, depth + 1));
        let operator = node
            .child_by_field_name("operator")
            .map_or("", |operator| text_of(operator, self.source));
        match operator {
            "+" => Val::concat([left, right]),
            // `Path.home() / ".claude" / "settings.json"`.
            // A folder not known, by its name (`user_site / "x.py"`):
            // only paths are divided by text.
            "/" if left
                .text
                .as_deref()
                .is_none_or(|text| text.parse::<f64>().is_err())
                && right
                    .text
                    .as_deref()
                    .is_some_and(|text| text.parse::<f64>().is_err()) =>
            {
                join_path(&[left, right])
            }
            "%" => match (&left.text, &right.text) {
                (Some(format), Some(argument)) if format.matches("%s").count() == 1 => {
                    Val::text(format.replacen("%s", argument, 1)).tainted(left.taint | right.taint)
                }
                _ => union([&left, &right]),
            },
            _ => union([&left, &right]),
        }
    }

    fn attribute(&mut self, node: Node<'_>, depth: usize) -> Val {
        let dotted: String = text_of(node, self.source)
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect();
        if dotted == "os.environ" || dotted.ends_with(".environ") || dotted == "environ" {
            return Val::from(Taint::ENVIRONMENT);
        }
        if let Some(held) = self.env.get(&dotted) {
            return held.clone();
        }
        let object = node
            .child_by_field_name("object")
            .map_or_else(Val::unknown, |object| self.expr(object, depth + 1));
        // `response.text`, `data.content`: what the object holds.
        union([&object])
    }

    /// True when the first argument of the call `node` is a module: a
    /// name the file imports or one of the standard library's, or the
    /// result of `importlib.import_module`.
    fn names_module(&self, node: Node<'_>) -> bool {
        let Some(first) = node
            .child_by_field_name("arguments")
            .and_then(|args| named_children(args).into_iter().next())
        else {
            return false;
        };
        let text = text_of(first, self.source);
        let root = text.split('.').next().unwrap_or(text);
        MODULES.contains(&root)
            || text.contains("import_module(")
            || text.contains("__import__(")
            || self.source.contains(&format!("import {root}")) && !text.contains(['(', '['])
    }

    /// True when the call `node` is given `getattr`, `__import__`, `eval`
    /// or `exec` itself as a value (`functools.reduce(getattr, parts,
    /// module)`, `map(__import__, names)`).
    fn passes_lookup(&self, node: Node<'_>) -> bool {
        node.child_by_field_name("arguments").is_some_and(|args| {
            named_children(args).into_iter().any(|arg| {
                arg.kind() == "identifier"
                    && matches!(
                        text_of(arg, self.source),
                        "getattr" | "__import__" | "eval" | "exec" | "import_module"
                    )
            })
        })
    }

    fn subscript(&mut self, node: Node<'_>, depth: usize) -> Val {
        let value = node
            .child_by_field_name("value")
            .map_or_else(Val::unknown, |value| self.expr(value, depth + 1));
        let index = node.child_by_field_name("subscript");
        // `globals()[x]`, `vars(os)[x]`, `sys.modules[x]`,
        // `__builtins__[x]` with a computed `x`.
        if let Some(container) = node.child_by_field_name("value") {
            let container = text_of(container, self.source);
            let table = container.starts_with("globals(")
                || container.starts_with("locals(")
                || container.starts_with("vars(")
                || container == "sys.modules"
                || container.ends_with("__builtins__")
                || container.ends_with("__dict__");
            if table
                && let Some(index) = index
                && self.expr(index, depth + 1).text.is_none()
            {
                self.out.push(node, What::Dispatch);
            }
        }
        let index_text = index.map_or("", |index| text_of(index, self.source));
        let compact: String = index_text.chars().filter(|c| !c.is_whitespace()).collect();
        if compact == "::-1"
            && let Some(text) = &value.text
        {
            return Val::text(text.chars().rev().collect::<String>()).tainted(value.taint);
        }
        if value.taint.has(Taint::ENVIRONMENT) {
            // One variable, by name: not the whole environment.
            return Val::unknown();
        }
        union([&value])
    }

    fn arguments(&mut self, call: Node<'_>, depth: usize) -> (Vec<Val>, Vec<(String, Val)>) {
        let mut positional = Vec::new();
        let mut keywords = Vec::new();
        let Some(arguments) = call.child_by_field_name("arguments") else {
            return (positional, keywords);
        };
        // `bytes(c ^ k for c in data)`: the generator is the one argument.
        if arguments.kind() == "generator_expression" {
            positional.push(self.expr(arguments, depth + 1));
            return (positional, keywords);
        }
        for argument in named_children(arguments) {
            if argument.kind() == "keyword_argument" {
                let name = argument
                    .child_by_field_name("name")
                    .map_or("", |name| text_of(name, self.source))
                    .to_owned();
                let value = argument
                    .child_by_field_name("value")
                    .map_or_else(Val::unknown, |value| self.expr(value, depth + 1));
                keywords.push((name, value));
            } else {
                positional.push(self.expr(argument, depth + 1));
            }
        }
        (positional, keywords)
    }

    fn call(&mut self, node: Node<'_>, depth: usize) -> Val {
        // `globals()[name](...)`: the look-up is read as the subscript it is.
        if let Some(function) = node
            .child_by_field_name("function")
            .filter(|function| function.kind() == "subscript")
        {
            self.expr(function, depth + 1);
        }
        let callee = self.callee(node);
        let last = callee.rsplit('.').next().unwrap_or(&callee).to_owned();
        let (args, keywords) = self.arguments(node, depth);
        let object = node
            .child_by_field_name("function")
            .filter(|function| function.kind() == "attribute")
            .and_then(|function| function.child_by_field_name("object"));
        let receiver = object.map(|object| self.expr(object, depth + 1));
        let first = args.first().cloned().unwrap_or_else(Val::unknown);
        let keyword = |name: &str| {
            keywords
                .iter()
                .find(|(key, _)| key == name)
                .map(|(_, v)| v.clone())
        };
        let all: Vec<&Val> = args
            .iter()
            .chain(keywords.iter().map(|(_, value)| value))
            .collect();

        // Text shown to the reader is not run nor written: a path printed
        // (`print(f"### ~/.config/systemd/user/{name}.service")`) is named,
        // a store's content printed is read.
        if PRINTS.contains(&callee.as_str())
            && keyword("file").is_none()
            && !all
                .iter()
                .any(|value| value.taint.has(Taint::CREDENTIAL | Taint::ENVIRONMENT))
        {
            self.out.push(node, What::OwnUse);
        }
        // A pattern that names credential files matches names; it reads
        // nothing (a secret scanner's `re.compile(r"id_rsa|\.netrc")`).
        if callee.starts_with("re.")
            && matches!(
                last.as_str(),
                "compile"
                    | "match"
                    | "search"
                    | "fullmatch"
                    | "findall"
                    | "finditer"
                    | "sub"
                    | "split"
            )
            || callee.starts_with("fnmatch.")
        {
            self.out.push(node, What::OwnUse);
            // The pattern with what names it (`("iex-download",
            // re.compile(...))`): a line rule's match may start in the
            // label.
            let holder = node
                .parent()
                .filter(|parent| {
                    matches!(
                        parent.kind(),
                        "tuple" | "list" | "pair" | "keyword_argument"
                    )
                })
                .unwrap_or(node);
            self.out.push(holder, What::Pattern);
        }
        // A module or function looked up by a computed name.
        let computed = |value: Option<&Val>| value.is_some_and(|value| value.text.is_none());
        if matches!(
            callee.as_str(),
            "importlib.import_module" | "import_module" | "__import__" | "builtins.__import__"
        ) && computed(args.first())
            || callee == "getattr" && computed(args.get(1)) && self.names_module(node)
            || self.passes_lookup(node)
        {
            self.out.push(node, What::Dispatch);
        }
        // Sinks.
        // Code loaded from a file: a module, a script, a native library.
        if FILE_RUNNERS.contains(&last.as_str()) || callee == "os.startfile" {
            for value in &args {
                self.out.push(node, What::RunFile(value.clone()));
            }
        }
        if UNPICKLERS.contains(&callee.as_str()) {
            self.out.push(node, What::Unpickle(first.clone()));
        }
        if EXEC.contains(&callee.as_str())
            || EXEC.contains(&last.as_str()) && callee.starts_with("builtins")
        {
            self.out.push(node, What::Exec(first));
            return Val::unknown();
        }
        if SHELL.contains(&callee.as_str()) {
            self.out.push(node, What::Exec(first.clone()));
            if let Some(text) = &first.text {
                self.out.push(node, What::Command(text.clone()));
            }
            return Val::unknown();
        }
        // `shell=True` makes any call a shell's: `self.launcher(cmd,
        // shell=True)` where `launcher = subprocess.run`.
        let shell_keyword = keyword("shell")
            .and_then(|value| value.text)
            .is_some_and(|t| t == "True");
        if SUBPROCESS.contains(&last.as_str())
            && (callee.contains("subprocess")
                || callee.starts_with("os.")
                || callee.contains("asyncio")
                || callee == last)
            || shell_keyword
        {
            let shell = keyword("shell")
                .and_then(|value| value.text)
                .is_some_and(|t| t == "True")
                || last == "create_subprocess_shell";
            if shell || first.text.is_some() && args.len() == 1 && !self.is_list(node) {
                if shell {
                    self.out.push(node, What::Exec(first.clone()));
                }
                if let Some(text) = &first.text {
                    self.out.push(node, What::Command(text.clone()));
                }
            }
            let words = self.argv(node, depth);
            if !words.is_empty() {
                let line: Vec<&str> = words.iter().map(|word| word.shown("_")).collect();
                self.out.push(node, What::Command(line.join(" ")));
                run_argv(self.out, node, &words);
            }
            return Val::unknown();
        }
        if last == "urlretrieve"
            && let Some(file) = args.get(1)
        {
            self.downloaded(node, file.clone());
        }

        if (last == "open" || last == "io.open")
            && let Some(file) = self.opened_for_writing(node, depth)
        {
            self.out.push(
                node,
                What::Write {
                    path: file,
                    content: Val::unknown(),
                },
            );
        }
        if matches!(last.as_str(), "write_text" | "write_bytes")
            && let Some(file) = receiver.clone()
        {
            self.out.push(
                node,
                What::Write {
                    path: file,
                    content: first.clone(),
                },
            );
        }
        if (matches!(
            last.as_str(),
            "copy" | "copy2" | "copyfile" | "move" | "symlink"
        ) && callee.starts_with("shutil")
            || callee == "os.symlink")
            && let Some(destination) = args.get(1)
        {
            self.out.push(
                node,
                What::Write {
                    path: destination.clone(),
                    content: first.clone(),
                },
            );
        }
        if last == "write" {
            let file =
                object.and_then(|object| self.handles.get(text_of(object, self.source)).cloned());
            if let Some(file) = file {
                self.out.push(
                    node,
                    What::Write {
                        path: file,
                        content: first.clone(),
                    },
                );
            }
        }
        if (last == "write" || last == "write_bytes" || last == "write_text")
            && first.taint.has(Taint::NETWORK)
        {
            let file = object
                .and_then(|object| {
                    let name = text_of(object, self.source);
                    self.handles.get(name).cloned()
                })
                .or_else(|| (last != "write").then(|| receiver.clone()).flatten());
            if let Some(file) = file {
                self.downloaded(node, file);
            }
        }
        if last == "copyfileobj"
            && first.taint.has(Taint::NETWORK)
            && let Some(target) = node
                .child_by_field_name("arguments")
                .and_then(|arguments| named_children(arguments).get(1).copied())
            && let Some(file) = self.handles.get(text_of(target, self.source)).cloned()
        {
            self.downloaded(node, file);
        }
        let sends = SENDS.contains(&last.as_str())
            || RESOLVES.contains(&last.as_str())
            || callee.contains("resolver.")
            || last == "get"
                && keywords
                    .iter()
                    .any(|(key, _)| matches!(key.as_str(), "params" | "data" | "json" | "headers"));
        if sends {
            for value in &all {
                if value.taint.has(Taint::CREDENTIAL) || value.taint.has(Taint::ENVIRONMENT) {
                    self.out.push(node, What::Send((*value).clone()));
                }
            }
        }

        // Values.
        if NETWORK.contains(&callee.as_str()) || NETWORK.contains(&last.as_str()) {
            return Val::from(Taint::NETWORK);
        }
        if DECODERS.contains(&last.as_str())
            || callee == "codecs.decode"
            || last == "decode" && args.get(1).and_then(|a| a.text.as_deref()).is_some()
        {
            let input = if callee == "bytes.fromhex"
                || last == "unhexlify"
                || last == "a2b_hex"
                || last == "fromhex"
            {
                return decoded(first.text.as_deref().and_then(decode_hex), &first);
            } else {
                first
            };
            let scheme = args
                .get(1)
                .and_then(|a| a.text.clone())
                .unwrap_or_default()
                .to_ascii_lowercase();
            if scheme.contains("rot") {
                return match &input.text {
                    Some(text) => Val::text(rot13(text)).tainted(input.taint | Taint::DECODED),
                    None => Val::from(input.taint | Taint::DECODED),
                };
            }
            if scheme == "hex" {
                return decoded(input.text.as_deref().and_then(decode_hex), &input);
            }
            if last.contains("64")
                || last == "decodebytes"
                || last == "decodestring"
                || scheme.contains("base64")
            {
                return decoded(input.text.as_deref().and_then(decode_base64), &input);
            }
            return Val::from(input.taint | Taint::DECODED);
        }
        match last.as_str() {
            "join"
                if callee.starts_with("os.path")
                    || callee.starts_with("posixpath")
                    || callee.contains("Path") =>
            {
                return join_path(&args);
            }
            "join" => {
                let separator = receiver.unwrap_or_else(Val::unknown);
                return self.join_list(node, &separator, depth);
            }
            "Path" | "PurePath" | "PosixPath" | "joinpath" => {
                let mut parts: Vec<Val> = receiver.into_iter().collect();
                parts.extend(args.iter().cloned());
                return join_path(&parts);
            }
            "expanduser" | "expandvars" | "abspath" | "normpath" | "realpath" | "str"
            | "fspath" | "strip" | "lower" | "encode" | "bytes" | "decode" | "read"
            | "read_text" | "read_bytes" | "readlines" | "text" | "json" | "getvalue" => {
                let base = if last == "expanduser"
                    || last == "str"
                    || last == "fspath"
                    || last == "abspath"
                    || last == "normpath"
                    || last == "realpath"
                {
                    first
                } else {
                    receiver.unwrap_or_else(|| first.clone())
                };
                if matches!(last.as_str(), "read_text" | "read_bytes")
                    && base.text.as_deref().is_some_and(is_credential_path)
                {
                    return Val::from(base.taint | Taint::CREDENTIAL);
                }
                if matches!(last.as_str(), "read_text" | "read_bytes")
                    && base.text.as_deref().is_some_and(is_environ_file)
                {
                    return Val::from(base.taint | Taint::ENVIRONMENT);
                }
                return base;
            }
            "home" => return Val::text("~"),
            "getenv" => return Val::unknown(),
            // `os.environ.get("X")`: one variable, not the environment.
            "get" | "pop" | "setdefault"
                if receiver
                    .as_ref()
                    .is_some_and(|receiver| receiver.taint.has(Taint::ENVIRONMENT)) =>
            {
                return Val::unknown();
            }
            "copy" | "items" | "keys" | "values" | "dict" => {
                let base = receiver.unwrap_or_else(|| first.clone());
                return union([&base]);
            }
            "chr" => {
                if let Some(code) = first
                    .text
                    .as_deref()
                    .and_then(|t| t.parse::<u32>().ok())
                    .and_then(char::from_u32)
                {
                    return Val::text(code.to_string()).tainted(Taint::DECODED);
                }
                return Val::from(Taint::DECODED);
            }
            "format" => {
                if let Some(format) = receiver.as_ref().and_then(|r| r.text.clone()) {
                    let mut folded = format;
                    let mut taint = Taint::NONE;
                    for arg in &args {
                        taint |= arg.taint;
                        match (&arg.text, folded.find('{')) {
                            (Some(text), Some(open)) => match folded[open..].find('}') {
                                Some(close) => folded.replace_range(open..open + close + 1, text),
                                None => break,
                            },
                            _ => return union(&args),
                        }
                    }
                    return Val::text(folded).tainted(taint);
                }
            }
            "replace" => {
                if let (Some(base), Some(from), Some(to)) = (
                    receiver.as_ref().and_then(|r| r.text.clone()),
                    args.first().and_then(|a| a.text.clone()),
                    args.get(1).and_then(|a| a.text.clone()),
                ) && !from.is_empty()
                {
                    return Val::text(base.replace(&from, &to))
                        .tainted(receiver.map_or(Taint::NONE, |r| r.taint));
                }
            }
            "open" | "io.open" => {
                if first.text.as_deref().is_some_and(is_credential_path) {
                    return Val::from(Taint::CREDENTIAL);
                }
                if first.text.as_deref().is_some_and(is_environ_file) {
                    return Val::from(Taint::ENVIRONMENT);
                }
                return union([&first]);
            }
            "check_output" | "getoutput" => {}
            _ => {}
        }
        // A function of the file: its parameters hold what it is passed,
        // and the call is what it returns.
        let function = if !callee.contains('.') {
            Some(callee)
        } else if callee.starts_with("self.") || self.functions.contains_key(&last) {
            // A method of the file's classes, on `self` or on an object.
            Some(last)
        } else {
            None
        };
        if let Some(function) = function {
            if let Some(parameters) = self.functions.get(&function).cloned() {
                for (parameter, value) in parameters.iter().zip(&args) {
                    self.env.assign(parameter, value.clone());
                }
                for (name, value) in &keywords {
                    if parameters.contains(name) {
                        self.env.assign(name, value.clone());
                    }
                }
                if let Some(value) = self.env.get(&returned(&function)).cloned() {
                    return value;
                }
            } else {
                self.called.insert(function);
            }
        }
        let mut taint = Taint::UNKNOWN;
        for value in all.iter().copied().chain(receiver.iter()) {
            // What a call returns of its receiver or arguments: a network
            // response's parts are network bytes.
            taint |= value.taint;
        }
        Val::from(taint)
    }

    /// True when the call's first argument is a list literal.
    fn is_list(&self, call: Node<'_>) -> bool {
        call.child_by_field_name("arguments")
            .and_then(|args| named_children(args).into_iter().next())
            .is_some_and(|first| first.kind() == "list" || first.kind() == "tuple")
    }

    /// The argument vector of a `subprocess` call: the list's items, or
    /// the positional arguments of `os.exec*`/`os.spawn*`.
    fn argv(&mut self, call: Node<'_>, depth: usize) -> Vec<Val> {
        let Some(arguments) = call.child_by_field_name("arguments") else {
            return Vec::new();
        };
        let children = named_children(arguments);
        match children.first() {
            Some(first) if first.kind() == "list" || first.kind() == "tuple" => {
                named_children(*first)
                    .into_iter()
                    .map(|item| self.expr(item, depth + 1))
                    .collect()
            }
            Some(_) => Vec::new(),
            None => Vec::new(),
        }
    }

    /// `SEP.join([...])` of the list literal (or a name holding one).
    fn join_list(&mut self, call: Node<'_>, separator: &Val, depth: usize) -> Val {
        let items = call
            .child_by_field_name("arguments")
            .and_then(|args| named_children(args).into_iter().next());
        let Some(items) = items else {
            return Val::unknown();
        };
        if !matches!(items.kind(), "list" | "tuple") {
            let value = self.expr(items, depth + 1);
            return union([&value, separator]);
        }
        let values: Vec<Val> = named_children(items)
            .into_iter()
            .map(|item| self.expr(item, depth + 1))
            .collect();
        let mut pieces = Vec::new();
        for (index, value) in values.into_iter().enumerate() {
            if index > 0 {
                pieces.push(separator.clone());
            }
            pieces.push(value);
        }
        Val::concat(pieces)
    }
}

/// `os.path.join` of the parts: joined with `/`, a part starting with `/`
/// starting over.
fn join_path(parts: &[Val]) -> Val {
    let mut pieces: Vec<Val> = Vec::new();
    for part in parts {
        if part
            .text
            .as_deref()
            .is_some_and(|text| text.starts_with('/'))
        {
            pieces.clear();
        }
        if !pieces.is_empty() {
            let ends = pieces
                .last()
                .and_then(|last| last.text.as_deref())
                .is_some_and(|text| text.ends_with('/'));
            if !ends {
                pieces.push(Val::text("/"));
            }
        }
        pieces.push(part.clone());
    }
    Val::concat(pieces)
}

/// The escapes of a Python string literal.
fn unescape(text: &str) -> String {
    if !text.contains('\\') {
        return text.to_owned();
    }
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut index = 0;
    let hex = |digits: &[char]| -> Option<char> {
        let digits: String = digits.iter().collect();
        u32::from_str_radix(&digits, 16)
            .ok()
            .and_then(char::from_u32)
    };
    while index < chars.len() {
        let c = chars[index];
        index += 1;
        if c != '\\' || index >= chars.len() {
            out.push(c);
            continue;
        }
        let next = chars[index];
        index += 1;
        let width = match next {
            'x' => 2,
            'u' => 4,
            'U' => 8,
            _ => 0,
        };
        if width > 0 {
            match chars.get(index..index + width).and_then(hex) {
                Some(decoded) => {
                    out.push(decoded);
                    index += width;
                }
                None => {
                    out.push('\\');
                    out.push(next);
                }
            }
            continue;
        }
        match next {
            'n' => out.push('\n'),
            't' => out.push('\t'),
            'r' => out.push('\r'),
            '\n' => {}
            '\\' | '\'' | '"' => out.push(next),
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
                    Some(decoded) => out.push(decoded),
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
    fn python_escapes_and_paths() {
        assert_eq!(unescape(r"\x63url \u0041 \101"), "curl A A");
        let joined = join_path(&[Val::text("~"), Val::text(".aws"), Val::text("credentials")]);
        assert_eq!(joined.text.as_deref(), Some("~/.aws/credentials"));
        let absolute = join_path(&[Val::text("x"), Val::text("/etc"), Val::text("passwd")]);
        assert_eq!(absolute.text.as_deref(), Some("/etc/passwd"));
    }
}
