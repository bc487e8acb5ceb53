//! JavaScript and TypeScript (tree-sitter-javascript, -typescript)
//! lowered to events: strings folded (`+`, template literals of literals,
//! `path.join`, `[...].join`, `String.fromCharCode`, `atob`,
//! `Buffer.from(..., "base64")`, computed member names such as
//! `globalThis['ev'+'al']`), decoded and fetched values followed to
//! `eval`, `Function`, `vm` and `child_process`, and credential files or
//! `process.env` followed to requests that send them.

use std::collections::{HashMap, HashSet};

use tree_sitter::Node;

use super::{
    Env, Lowered, MAX_DEPTH, Taint, Val, What, decode_base64, decode_hex, decoded,
    is_credential_path, named_children, run_argv, text_of, union,
};

/// Calls (by their folded name's last piece) that run their argument as
/// JavaScript.
const EVAL: &[&str] = &[
    "eval",
    "Function",
    "runInThisContext",
    "runInNewContext",
    "runInContext",
    "compileFunction",
    "Script",
    "setTimeout",
    "setInterval",
    "import",
    "require",
];
/// `child_process` (and `execa`, `shelljs`) calls that run a command line.
const EXEC_LINE: &[&str] = &["exec", "execSync", "execaCommand", "execaCommandSync"];
/// `child_process` (and `execa`) calls that run a program with an argument
/// vector.
const EXEC_ARGV: &[&str] = &[
    "spawn",
    "spawnSync",
    "execFile",
    "execFileSync",
    "fork",
    "execa",
    "execaSync",
    "execaNode",
];
/// Calls whose result, or whose callbacks' arguments, come from the network.
const NETWORK: &[&str] = &[
    "fetch", "get", "request", "axios", "got", "needle", "download", "urlopen",
];
/// Calls that send what they are given.
const SENDS: &[&str] = &[
    "fetch",
    "post",
    "put",
    "patch",
    "request",
    "send",
    "sendBeacon",
    "write",
    "end",
    "axios",
    "got",
    "emit",
];

struct Lowering<'a, 'e> {
    source: &'a str,
    env: &'e mut Env,
    out: &'e mut Lowered,
    /// The named function being lowered, with its parameters.
    function: Option<(String, Vec<String>)>,
    /// The named functions of the file, with their parameters.
    functions: HashMap<String, Vec<String>>,
    /// Names called this pass before the file defined them.
    called: HashSet<String>,
    /// The `resolve` parameters of the promise executors being lowered,
    /// with the key under which [`Env`] keeps what they are given.
    resolvers: Vec<(String, String)>,
    /// The parameters of the function expressions being lowered (`text
    /// => vm.runInThisContext(text)`), innermost last.
    lambdas: Vec<Vec<String>>,
}

/// The key under which [`Env`] keeps what `function` returns.
fn returned(function: &str) -> String {
    format!("{function}\0returns")
}

/// The key under which [`Env`] keeps what `function` passes to the
/// callback that is its parameter number `index`.
fn called_back(function: &str, index: usize) -> String {
    format!("{function}\0callback{index}")
}

/// Lowers the program `root` of `source`.
pub(super) fn lower(root: Node<'_>, source: &str, env: &mut Env, out: &mut Lowered) {
    let functions = std::mem::take(&mut env.functions);
    let mut lowering = Lowering {
        source,
        env,
        out,
        function: None,
        functions,
        called: HashSet::new(),
        resolvers: Vec::new(),
        lambdas: Vec::new(),
    };
    lowering.walk(root, 0);
    lowering.env.functions = lowering.functions;
}

impl Lowering<'_, '_> {
    fn walk(&mut self, node: Node<'_>, depth: usize) {
        if depth > MAX_DEPTH {
            return;
        }
        match node.kind() {
            "variable_declarator" => {
                let function = node
                    .child_by_field_name("value")
                    .filter(|value| is_function(*value))
                    .zip(node.child_by_field_name("name"));
                if let Some((value, name)) = function {
                    // `const f = async (x) => ...`: a function of the file.
                    let name = text_of(name, self.source).to_owned();
                    let returns = self.function_body(&name, value, depth);
                    if let Some(returns) = returns {
                        self.env.assign(&returned(&name), returns);
                    }
                    return;
                }
                let value = node
                    .child_by_field_name("value")
                    .map_or_else(|| Val::text(""), |value| self.expr(value, depth + 1));
                if let Some(name) = node.child_by_field_name("name") {
                    // `const run = globalThis['ev'+'al']`: calls of `run`
                    // call what it names.
                    if let Some(aliased) = node.child_by_field_name("value").filter(|value| {
                        matches!(
                            value.kind(),
                            "member_expression" | "subscript_expression" | "identifier"
                        )
                    }) {
                        let target = self.name(aliased, depth + 1);
                        let alias = format!("{}()", text_of(name, self.source));
                        self.env.assign(&alias, Val::text(target));
                    }
                    self.bind(name, value, false);
                }
            }
            "function_declaration" | "generator_function_declaration" => {
                if let Some(name) = node.child_by_field_name("name") {
                    let name = text_of(name, self.source).to_owned();
                    self.function_body(&name, node, depth);
                }
            }
            "return_statement" => {
                let values: Vec<Val> = named_children(node)
                    .into_iter()
                    .map(|child| self.expr(child, depth + 1))
                    .collect();
                if let Some((function, _)) = self.function.clone()
                    && !values.is_empty()
                {
                    self.env.assign(&returned(&function), union(&values));
                }
            }
            "expression_statement" | "throw_statement" => {
                for child in named_children(node) {
                    self.expr(child, depth + 1);
                }
            }
            "for_in_statement" => {
                let items = node
                    .child_by_field_name("right")
                    .map_or_else(Val::unknown, |right| self.expr(right, depth + 1));
                if let Some(left) = node.child_by_field_name("left") {
                    self.bind(left, union([&items]), false);
                }
                if let Some(body) = node.child_by_field_name("body") {
                    self.walk(body, depth + 1);
                }
            }
            _ => {
                for child in named_children(node) {
                    self.walk(child, depth + 1);
                }
            }
        }
    }

    /// Lowers the body of the function `name` defined at `node`, noting
    /// its parameters; returns the value of an arrow function's
    /// expression body.
    fn function_body(&mut self, name: &str, node: Node<'_>, depth: usize) -> Option<Val> {
        let mut parameters = Vec::new();
        if let Some(parameter) = node.child_by_field_name("parameter") {
            parameters.push(text_of(parameter, self.source).to_owned());
        }
        if let Some(list) = node.child_by_field_name("parameters") {
            for parameter in named_children(list) {
                let target = parameter
                    .child_by_field_name("pattern")
                    .unwrap_or(parameter);
                let target = match target.kind() {
                    "assignment_pattern" => target.child_by_field_name("left").unwrap_or(target),
                    _ => target,
                };
                // Destructured parameters keep their place, unnamed.
                parameters.push(if target.kind() == "identifier" {
                    text_of(target, self.source).to_owned()
                } else {
                    String::new()
                });
            }
        }
        // A call lowered before the definition passed its arguments to no
        // one: the file is read again.
        if self.called.contains(name) {
            self.env.changed = true;
        }
        self.functions.insert(name.to_owned(), parameters.clone());
        let outer = self.function.replace((name.to_owned(), parameters));
        let body = node.child_by_field_name("body");
        let value = match body {
            Some(body) if body.kind() != "statement_block" => Some(self.expr(body, depth + 1)),
            Some(body) => {
                self.walk(body, depth + 1);
                None
            }
            None => None,
        };
        self.function = outer;
        value
    }

    fn bind(&mut self, target: Node<'_>, value: Val, augmented: bool) {
        match target.kind() {
            "identifier" | "shorthand_property_identifier_pattern" => {
                let name = text_of(target, self.source);
                if augmented {
                    let old = self.env.get(name).cloned().unwrap_or_else(|| Val::text(""));
                    self.env.assign(name, Val::concat([old, value]));
                } else {
                    self.env.assign(name, value);
                }
            }
            "member_expression" => {
                // `obj.field = value`: the object holds it.
                if let Some(object) = target.child_by_field_name("object") {
                    let name = text_of(object, self.source).to_owned();
                    self.env.taint(&name, value.taint);
                }
            }
            _ => {
                let taint = value.taint;
                for child in named_children(target) {
                    self.bind(child, Val::from(taint | Taint::UNKNOWN), false);
                }
            }
        }
    }

    /// The name a call calls, its computed parts folded:
    /// `globalThis['ev'+'al']` is `globalThis.eval`.
    fn name(&mut self, node: Node<'_>, depth: usize) -> String {
        if depth > MAX_DEPTH {
            return String::new();
        }
        match node.kind() {
            "member_expression" => {
                let object = node
                    .child_by_field_name("object")
                    .map(|object| self.name(object, depth + 1))
                    .unwrap_or_default();
                let property = node
                    .child_by_field_name("property")
                    .map_or("", |property| text_of(property, self.source));
                format!("{object}.{property}")
            }
            "subscript_expression" => {
                let object = node
                    .child_by_field_name("object")
                    .map(|object| self.name(object, depth + 1))
                    .unwrap_or_default();
                let index = node
                    .child_by_field_name("index")
                    .map_or_else(Val::unknown, |index| self.expr(index, depth + 1));
                format!("{object}.{}", index.text.unwrap_or_default())
            }
            "parenthesized_expression" | "sequence_expression" => named_children(node)
                .last()
                .map(|last| self.name(*last, depth + 1))
                .unwrap_or_default(),
            "identifier" => {
                let name = text_of(node, self.source);
                // `const e = globalThis['ev'+'al']; e(x)`: the folded name.
                match self.env.get(&format!("{name}()")) {
                    Some(value) => value.text.clone().unwrap_or_else(|| name.to_owned()),
                    None => name.to_owned(),
                }
            }
            "import" => "import".to_owned(),
            _ => text_of(node, self.source).to_owned(),
        }
    }

    fn expr(&mut self, node: Node<'_>, depth: usize) -> Val {
        if depth > MAX_DEPTH {
            return Val::unknown();
        }
        let source = self.source;
        let value = match node.kind() {
            "string" => {
                let mut pieces = Vec::new();
                for child in named_children(node) {
                    pieces.push(match child.kind() {
                        "escape_sequence" => Val::text(unescape(text_of(child, source))),
                        _ => Val::text(text_of(child, source)),
                    });
                }
                Val::concat(pieces)
            }
            "template_string" => {
                let mut pieces = Vec::new();
                for child in named_children(node) {
                    pieces.push(match child.kind() {
                        "template_substitution" => named_children(child)
                            .first()
                            .map_or_else(Val::unknown, |inner| self.expr(*inner, depth + 1)),
                        "escape_sequence" => Val::text(unescape(text_of(child, source))),
                        _ => Val::text(text_of(child, source)),
                    });
                }
                Val::concat(pieces)
            }
            "number" | "true" | "false" | "null" => Val::text(text_of(node, source)),
            "identifier" | "shorthand_property_identifier" => {
                let name = text_of(node, source);
                self.env.get(name).cloned().unwrap_or_else(Val::unknown)
            }
            "parenthesized_expression"
            | "await_expression"
            | "non_null_expression"
            | "as_expression"
            | "satisfies_expression" => named_children(node)
                .first()
                .map_or_else(Val::unknown, |inner| self.expr(*inner, depth + 1)),
            "sequence_expression" => {
                let mut last = Val::unknown();
                for child in named_children(node) {
                    last = self.expr(child, depth + 1);
                }
                last
            }
            "binary_expression" => {
                let left = node
                    .child_by_field_name("left")
                    .map_or_else(Val::unknown, |left| self.expr(left, depth + 1));
                let right = node
                    .child_by_field_name("right")
                    .map_or_else(Val::unknown, |right| self.expr(right, depth + 1));
                let operator = node
                    .child_by_field_name("operator")
                    .map_or("", |operator| text_of(operator, source));
                if operator == "+" {
                    Val::concat([left, right])
                } else {
                    union([&left, &right])
                }
            }
            "assignment_expression" | "augmented_assignment_expression" => {
                let value = node
                    .child_by_field_name("right")
                    .map_or_else(Val::unknown, |right| self.expr(right, depth + 1));
                if let Some(left) = node.child_by_field_name("left") {
                    let augmented = node.kind() == "augmented_assignment_expression";
                    self.bind(left, value.clone(), augmented);
                }
                value
            }
            "member_expression" => {
                let dotted = self.name(node, depth + 1);
                if dotted == "process.env" {
                    Val::from(Taint::ENVIRONMENT)
                } else {
                    let object = node
                        .child_by_field_name("object")
                        .map_or_else(Val::unknown, |object| self.expr(object, depth + 1));
                    if object.taint.has(Taint::ENVIRONMENT) {
                        // One variable by name: not the whole environment.
                        Val::unknown()
                    } else {
                        union([&object])
                    }
                }
            }
            "subscript_expression" => {
                // `globalThis[x]`, `process[x]`, `require(m)[x]` with a
                // computed `x`.
                if let Some(container) = node.child_by_field_name("object")
                    && matches!(
                        text_of(container, source),
                        "globalThis" | "global" | "window" | "self" | "process" | "module"
                    )
                    && node
                        .child_by_field_name("index")
                        .is_some_and(|index| self.expr(index, depth + 1).text.is_none())
                {
                    self.out.push(node, What::Dispatch);
                }
                let object = node
                    .child_by_field_name("object")
                    .map_or_else(Val::unknown, |object| self.expr(object, depth + 1));
                if object.taint.has(Taint::ENVIRONMENT) {
                    Val::unknown()
                } else {
                    union([&object])
                }
            }
            "call_expression" | "new_expression" => self.call(node, depth),
            "regex" => {
                self.out.push(node, What::Pattern);
                Val::unknown()
            }
            "arrow_function" | "function_expression" | "function" | "function_declaration" => {
                let mut parameters: Vec<String> = node
                    .child_by_field_name("parameter")
                    .into_iter()
                    .map(|parameter| text_of(parameter, source).to_owned())
                    .collect();
                if let Some(list) = node.child_by_field_name("parameters") {
                    parameters.extend(
                        named_children(list)
                            .into_iter()
                            .filter(|parameter| parameter.kind() == "identifier")
                            .map(|parameter| text_of(parameter, source).to_owned()),
                    );
                }
                self.lambdas.push(parameters);
                let value = if let Some(body) = node.child_by_field_name("body") {
                    if body.kind() == "statement_block" {
                        self.walk(body, depth + 1);
                        Val::unknown()
                    } else {
                        self.expr(body, depth + 1)
                    }
                } else {
                    Val::unknown()
                };
                self.lambdas.pop();
                value
            }
            "array" => {
                let values: Vec<Val> = named_children(node)
                    .into_iter()
                    .map(|child| self.expr(child, depth + 1))
                    .collect();
                // An array of numbers is its text as JavaScript gives it
                // (`1,2,3`): character codes, spread or applied later.
                let numbers = !values.is_empty()
                    && named_children(node)
                        .iter()
                        .all(|child| child.kind() == "number");
                if numbers {
                    let text: Vec<&str> = values.iter().map(|value| value.shown("")).collect();
                    Val::text(text.join(","))
                } else {
                    union(&values)
                }
            }
            "object" => {
                let mut values = Vec::new();
                for child in named_children(node) {
                    match child.kind() {
                        "pair" => {
                            if let Some(value) = child.child_by_field_name("value") {
                                values.push(self.expr(value, depth + 1));
                            }
                        }
                        _ => values.push(self.expr(child, depth + 1)),
                    }
                }
                union(&values)
            }
            "spread_element" | "ternary_expression" | "unary_expression" => {
                let values: Vec<Val> = named_children(node)
                    .into_iter()
                    .map(|child| self.expr(child, depth + 1))
                    .collect();
                union(&values)
            }
            _ => {
                for child in named_children(node) {
                    self.walk(child, depth + 1);
                }
                Val::unknown()
            }
        };
        if matches!(
            node.kind(),
            "binary_expression" | "template_string" | "call_expression"
        ) && let Some(text) = &value.text
            && !text.is_empty()
            && text.len() < 4096
        {
            self.out.push(node, What::Command(text.clone()));
        }
        value
    }

    fn arguments<'t>(&mut self, call: Node<'t>, depth: usize) -> Vec<(Node<'t>, Val)> {
        let Some(arguments) = call.child_by_field_name("arguments") else {
            return Vec::new();
        };
        if arguments.kind() == "template_string" {
            return vec![(arguments, self.expr(arguments, depth + 1))];
        }
        named_children(arguments)
            .into_iter()
            .map(|argument| (argument, self.expr(argument, depth + 1)))
            .collect()
    }

    fn call(&mut self, node: Node<'_>, depth: usize) -> Val {
        let function = node
            .child_by_field_name("function")
            .or_else(|| node.child_by_field_name("constructor"));
        if let Some(inner) = function.filter(|f| {
            matches!(
                f.kind(),
                "call_expression" | "new_expression" | "parenthesized_expression"
            )
        }) {
            // `new Function(...)(...)`, `(0, eval)(...)`: the inner call runs.
            self.expr(inner, depth + 1);
        }
        let callee = function
            .map(|f| self.name(f, depth + 1))
            .unwrap_or_default();
        // `f.call(self, a, b)` and `f.apply(self, [a, b])` call `f`.
        let (callee, spread) = match callee.rsplit_once('.') {
            Some((inner, "call")) if inner.contains('.') => (inner.to_owned(), Some(false)),
            Some((inner, "apply")) if inner.contains('.') => (inner.to_owned(), Some(true)),
            _ => (callee, None),
        };
        let last = callee.rsplit('.').next().unwrap_or(&callee).to_owned();
        let receiver = function
            .filter(|f| matches!(f.kind(), "member_expression" | "subscript_expression"))
            .and_then(|f| f.child_by_field_name("object"))
            .map(|object| self.expr(object, depth + 1));
        let network_receiver = receiver
            .as_ref()
            .is_some_and(|receiver| receiver.taint.has(Taint::NETWORK));
        let fetches = NETWORK.contains(&last.as_str())
            && (callee.contains("http")
                || callee.contains("axios")
                || callee.contains("got")
                || callee == "fetch"
                || callee == "needle"
                || callee.ends_with("request"));
        // Callbacks of network calls get network bytes: `https.get(u, r =>
        // r.on("data", c => body += c))`.
        let callbacks = fetches || network_receiver;
        let argument_nodes: Vec<Node<'_>> = node
            .child_by_field_name("arguments")
            .filter(|arguments| arguments.kind() == "arguments")
            .map(named_children)
            .unwrap_or_default();
        if callbacks {
            for argument in &argument_nodes {
                self.bind_parameters(*argument, &Val::from(Taint::NETWORK));
            }
        }
        // A function of the file: what it passes to its callbacks reaches
        // the callbacks given here (bound before their bodies are read).
        let own = if callee.contains('.') {
            None
        } else {
            self.functions.get(&callee).cloned()
        };
        if own.is_some() {
            for (index, argument) in argument_nodes.iter().enumerate() {
                if let Some(value) = self.env.get(&called_back(&callee, index)).cloned() {
                    self.bind_parameters(*argument, &value);
                }
            }
        }
        // `new Promise((resolve) => ... resolve(body))`: the promise is
        // what `resolve` is given.
        let promise = (node.kind() == "new_expression" && callee == "Promise")
            .then(|| {
                let executor = argument_nodes.first().filter(|a| is_function(**a))?;
                let parameter = executor.child_by_field_name("parameter").or_else(|| {
                    executor
                        .child_by_field_name("parameters")
                        .and_then(|list| named_children(list).into_iter().next())
                })?;
                let key = format!("\0promise{}", node.start_byte());
                let name = text_of(parameter, self.source).to_owned();
                self.resolvers.push((name, key.clone()));
                Some(key)
            })
            .flatten();
        let args = self.arguments(node, depth);
        if let Some(key) = promise {
            self.resolvers.pop();
            return self.env.get(&key).cloned().unwrap_or_else(Val::unknown);
        }
        // Text shown to the reader is named, not run nor written; a
        // store's content or the environment printed is read.
        if callee.starts_with("console.")
            && !args
                .iter()
                .any(|(_, value)| value.taint.has(Taint::CREDENTIAL | Taint::ENVIRONMENT))
        {
            self.out.push(node, What::OwnUse);
        }
        // Function-valued arguments are walked (their bodies run).
        let mut values: Vec<Val> = args.iter().map(|(_, value)| value.clone()).collect();
        if let Some(apply) = spread {
            values = values.into_iter().skip(1).collect();
            // The array's items, as far as its text (`1,2,3`) gives them.
            if apply && let Some(array) = values.first().and_then(|array| array.text.clone()) {
                let taint = values[0].taint;
                values = array
                    .split(',')
                    .map(|item| Val::text(item).tainted(taint))
                    .collect();
            }
        }
        let first = values.first().cloned().unwrap_or_else(Val::unknown);

        if callee == "RegExp" {
            self.out.push(node, What::Pattern);
        }
        // A module or function looked up by a computed name: the module
        // loader behind `require`, `Reflect.get(m, x)`, `process.binding`.
        let computed = |index: usize| values.get(index).is_some_and(|value| value.text.is_none());
        if (callee.ends_with("constructor._load")
            || callee.ends_with("Module._load")
            || callee.ends_with("mainModule.require")
            || callee.ends_with("createRequire")
            || callee == "process.binding"
            || callee == "process.dlopen")
            && computed(0)
            || matches!(
                callee.as_str(),
                "Reflect.get" | "Reflect.getOwnPropertyDescriptor"
            ) && computed(1)
        {
            self.out.push(node, What::Dispatch);
        }

        // Sinks.
        let is_eval = EVAL.contains(&last.as_str())
            && (matches!(
                callee.as_str(),
                "eval" | "Function" | "import" | "require" | "setTimeout" | "setInterval"
            ) || callee.ends_with(".eval")
                || callee.ends_with(".Function")
                || callee.starts_with("vm.")
                || last.starts_with("runIn")
                || last == "compileFunction"
                || callee.ends_with("vm.Script"));
        if is_eval {
            let code = if last == "Function" {
                values.last().cloned().unwrap_or_else(Val::unknown)
            } else {
                first
            };
            let code = match (&code.text, last.as_str()) {
                (Some(text), "import" | "require") if text.starts_with("data:") => {
                    data_url(text).tainted(code.taint)
                }
                (_, "import" | "require") if !code.taint.has(Taint::NETWORK | Taint::DECODED) => {
                    return Val::unknown();
                }
                (_, "setTimeout" | "setInterval")
                    if code.text.is_none() && !code.taint.has(Taint::NETWORK | Taint::DECODED) =>
                {
                    return Val::unknown();
                }
                _ => code,
            };
            // `text => vm.runInThisContext(text)`: a function that runs
            // what it is given, wherever it is passed or stored.
            let runs_parameter = code.text.is_none()
                && args.first().is_some_and(|(argument, _)| {
                    argument.kind() == "identifier"
                        && self.lambdas.iter().any(|parameters| {
                            parameters
                                .iter()
                                .any(|parameter| parameter == text_of(*argument, self.source))
                        })
                });
            if runs_parameter {
                self.out.push(node, What::Evaluator);
            }
            self.out.push(node, What::Exec(code));
            return Val::unknown();
        }
        // `new Worker(code, { eval: true })`: the string is the worker's code.
        if last == "Worker"
            && args.iter().any(|(argument, _)| {
                argument.kind() == "object" && text_of(*argument, self.source).contains("eval")
            })
        {
            self.out.push(node, What::Exec(first));
            return Val::unknown();
        }
        // zx's and execa's tagged templates run a command line:
        // `` await $`bash -c ${check}` ``.
        if (callee == "$" || callee.ends_with(".$") || callee.starts_with("$("))
            && node
                .child_by_field_name("arguments")
                .is_some_and(|arguments| arguments.kind() == "template_string")
        {
            self.out
                .push(node, What::Command(first.shown("_").to_owned()));
            if first.taint.has(Taint::NETWORK | Taint::DECODED) {
                self.out.push(node, What::Exec(first));
            }
            return Val::unknown();
        }
        if (EXEC_LINE.contains(&last.as_str())
            && !callee.contains("RegExp")
            && !callee.contains("regex")
            && callee != "exec"
            || callee == "exec" && first.text.is_some())
            && !(callee.ends_with(".exec")
                && receiver
                    .as_ref()
                    .is_some_and(|r| r.text.is_none() && !r.taint.has(Taint::UNKNOWN)))
        {
            self.out.push(node, What::Exec(first.clone()));
            if let Some(text) = &first.text {
                self.out.push(node, What::Command(text.clone()));
            }
            return Val::unknown();
        }
        if EXEC_ARGV.contains(&last.as_str()) {
            let mut words = vec![first];
            if let Some((array, _)) = args.get(1)
                && array.kind() == "array"
            {
                for item in named_children(*array) {
                    words.push(self.expr(item, depth + 1));
                }
            }
            let line: Vec<&str> = words.iter().map(|word| word.shown("_")).collect();
            self.out.push(node, What::Command(line.join(" ")));
            let shell = args.iter().any(|(argument, _)| {
                argument.kind() == "object" && text_of(*argument, self.source).contains("shell")
            });
            if shell {
                self.out.push(node, What::Exec(Val::concat(words.clone())));
            }
            run_argv(self.out, node, &words);
            return Val::unknown();
        }
        if matches!(
            last.as_str(),
            "writeFileSync"
                | "writeFile"
                | "appendFileSync"
                | "appendFile"
                | "createWriteStream"
                | "copyFileSync"
                | "copyFile"
                | "symlinkSync"
                | "cpSync"
        ) {
            let copies =
                last.starts_with("copy") || last.starts_with("symlink") || last == "cpSync";
            let (path, content) = if copies {
                (values.get(1).cloned(), first.clone())
            } else {
                (
                    values.first().cloned(),
                    values.get(1).cloned().unwrap_or_else(Val::unknown),
                )
            };
            if let Some(path) = path {
                self.out.push(node, What::Write { path, content });
            }
        }
        let sends = SENDS.contains(&last.as_str());
        if sends {
            for value in &values {
                if value.taint.has(Taint::CREDENTIAL) || value.taint.has(Taint::ENVIRONMENT) {
                    self.out.push(node, What::Send(value.clone()));
                }
            }
        }

        if let Some((_, key)) = self
            .resolvers
            .iter()
            .rev()
            .find(|(name, _)| *name == callee)
        {
            let key = key.clone();
            let value = union(&values);
            self.env.assign(&key, value);
        }
        // `chunks.push(c)`: the list holds what is added to it.
        if matches!(
            last.as_str(),
            "push" | "unshift" | "add" | "set" | "append" | "concat"
        ) && let Some(object) = function
            .and_then(|f| f.child_by_field_name("object"))
            .filter(|object| object.kind() == "identifier")
        {
            let taint = union(&values).taint
                & (Taint::NETWORK | Taint::DECODED | Taint::ENVIRONMENT | Taint::CREDENTIAL);
            if taint != Taint::NONE {
                let name = text_of(object, self.source).to_owned();
                self.env.taint(&name, taint);
            }
        }
        // A parameter of the function being lowered, called: what it is
        // passed goes to the callback the function's callers give.
        if let Some((function, parameters)) = &self.function
            && let Some(index) = parameters.iter().position(|p| *p == callee)
        {
            let key = called_back(function, index);
            let value = union(&values);
            self.env.assign(&key, value);
        }
        // A function of the file: its parameters hold what it is passed,
        // and the call is what it returns.
        if let Some(parameters) = own {
            for (parameter, value) in parameters.iter().zip(&values) {
                if !parameter.is_empty() {
                    self.env.assign(parameter, value.clone());
                }
            }
            if let Some(value) = self.env.get(&returned(&callee)).cloned() {
                return value;
            }
        } else if !callee.contains('.') {
            self.called.insert(callee.clone());
        }

        // Values.
        if fetches {
            return Val::from(Taint::NETWORK);
        }
        match last.as_str() {
            "atob" => return decoded(first.text.as_deref().and_then(decode_base64), &first),
            "from" if callee.ends_with("Buffer.from") => {
                let encoding = values
                    .get(1)
                    .and_then(|v| v.text.clone())
                    .unwrap_or_default();
                return match encoding.as_str() {
                    "base64" | "base64url" => {
                        decoded(first.text.as_deref().and_then(decode_base64), &first)
                    }
                    "hex" => decoded(first.text.as_deref().and_then(decode_hex), &first),
                    _ => first,
                };
            }
            "fromCharCode" | "fromCodePoint" => {
                // Each argument a code, or a spread array of them (`1,2,3`).
                let mut text = String::new();
                for value in &values {
                    let Some(codes) = value.text.as_deref() else {
                        return Val::from(Taint::DECODED);
                    };
                    for code in codes.split(',') {
                        match code.trim().parse::<u32>().ok().and_then(char::from_u32) {
                            Some(c) => text.push(c),
                            None => return Val::from(Taint::DECODED),
                        }
                    }
                }
                return Val::text(text).tainted(Taint::DECODED);
            }
            "decodeURIComponent"
            | "decodeURI"
            | "unescape"
            | "inflateSync"
            | "gunzipSync"
            | "inflateRawSync"
            | "brotliDecompressSync"
            | "unzipSync" => {
                return Val::from(first.taint | Taint::DECODED);
            }
            "toString" | "trim" | "text" | "json" | "arrayBuffer" | "then" | "toLowerCase"
            | "valueOf" => {
                return receiver.unwrap_or_else(Val::unknown);
            }
            "join" if callee.starts_with("path") || callee.contains("posix") => {
                return join_path(&values);
            }
            "resolve" if callee.starts_with("path") => return join_path(&values),
            "join" => {
                let separator = first.text.unwrap_or_else(|| ",".to_owned());
                if let Some(array) = function
                    .and_then(|f| f.child_by_field_name("object"))
                    .filter(|object| object.kind() == "array")
                {
                    let mut pieces = Vec::new();
                    for (index, item) in named_children(array).into_iter().enumerate() {
                        if index > 0 {
                            pieces.push(Val::text(separator.clone()));
                        }
                        pieces.push(self.expr(item, depth + 1));
                    }
                    return Val::concat(pieces);
                }
            }
            "reverse" | "split" => return receiver.map_or_else(Val::unknown, |r| union([&r])),
            "homedir" => return Val::text("~"),
            "stringify" => return union(&values),
            "readFileSync" | "readFile"
                if first.text.as_deref().is_some_and(is_credential_path) =>
            {
                return Val::from(Taint::CREDENTIAL);
            }
            _ => {}
        }
        // `this.loader(code)`, `handler(code)`: downloaded or decoded text
        // handed to a function the file was given, not one it defines.
        let given = !self.functions.contains_key(&callee)
            && !self.functions.contains_key(&last)
            && (callee.starts_with("this.") || !callee.contains('.'));
        if given
            && let Some(code) = values
                .iter()
                .find(|value| value.taint.has(Taint::NETWORK | Taint::DECODED))
        {
            self.out.push(node, What::PassedOn(code.clone()));
        }
        let mut taint = Taint::UNKNOWN;
        for value in values.iter().chain(receiver.iter()) {
            taint |= value.taint;
        }
        Val::from(taint)
    }

    /// Binds the parameters of a function-valued `argument` to `value`,
    /// and walks its body.
    fn bind_parameters(&mut self, argument: Node<'_>, value: &Val) {
        // `list.map(compile)`: a function of the file, by its name.
        if argument.kind() == "identifier" {
            let name = text_of(argument, self.source);
            if let Some(parameters) = self.functions.get(name).cloned() {
                for parameter in parameters.iter().filter(|p| !p.is_empty()) {
                    self.env.assign(parameter, value.clone());
                }
            }
            return;
        }
        if !matches!(
            argument.kind(),
            "arrow_function" | "function_expression" | "function"
        ) {
            return;
        }
        if let Some(parameter) = argument.child_by_field_name("parameter") {
            self.bind(parameter, value.clone(), false);
        }
        if let Some(parameters) = argument.child_by_field_name("parameters") {
            for parameter in named_children(parameters) {
                let target = parameter
                    .child_by_field_name("pattern")
                    .unwrap_or(parameter);
                self.bind(target, value.clone(), false);
            }
        }
    }
}

/// True for a function-valued expression.
fn is_function(node: Node<'_>) -> bool {
    matches!(
        node.kind(),
        "arrow_function" | "function_expression" | "function" | "generator_function"
    )
}

/// The code of a `data:` URL: base64 decoded when it says so.
fn data_url(url: &str) -> Val {
    let Some((header, body)) = url.split_once(',') else {
        return Val::from(Taint::DECODED);
    };
    if header.ends_with(";base64") {
        decoded(decode_base64(body), &Val::text(""))
    } else {
        Val::text(body).tainted(Taint::DECODED)
    }
}

/// `path.join` of the parts.
fn join_path(parts: &[Val]) -> Val {
    let mut pieces = Vec::new();
    for (index, part) in parts.iter().enumerate() {
        if index > 0 {
            pieces.push(Val::text("/"));
        }
        pieces.push(part.clone());
    }
    Val::concat(pieces)
}

/// The escapes of a JavaScript string: `\xHH`, `\uHHHH`, `\u{H...}`.
fn unescape(escape: &str) -> String {
    let body = escape.trim_start_matches('\\');
    let hex = |digits: &str| {
        u32::from_str_radix(digits, 16)
            .ok()
            .and_then(char::from_u32)
    };
    let decoded = if let Some(digits) = body.strip_prefix('x') {
        hex(digits)
    } else if let Some(digits) = body.strip_prefix("u{") {
        hex(digits.trim_end_matches('}'))
    } else if let Some(digits) = body.strip_prefix('u') {
        hex(digits)
    } else {
        match body {
            "n" => Some('\n'),
            "t" => Some('\t'),
            "r" => Some('\r'),
            _ => body.chars().next(),
        }
    };
    decoded.map_or_else(|| escape.to_owned(), |c| c.to_string())
}
