//! Code inside files that are not scripts by their looks: the recipes of a
//! Makefile or justfile, a Dockerfile's `RUN`, a workflow's `run:`, a
//! `package.json`'s scripts, a `.pth` file's `import` lines.
//!
//! Each is cut out of its file in place: every byte that is not code
//! becomes a space (line ends stay), so the code keeps its offsets and a
//! finding in it is placed in the file as it is.

use super::Lang;

/// The code of a file, masked in place, and the values its file gives
/// names (a Makefile's `BOOT := ...`).
#[derive(Debug)]
pub(crate) struct Embedded {
    pub(crate) lang: Lang,
    pub(crate) text: String,
    pub(crate) seeds: Vec<(String, String)>,
}

/// Returns the code embedded in the file at `path` with `text`, if the
/// file is one that holds some.
pub(crate) fn embedded(path: &str, text: &str) -> Option<Embedded> {
    let lowered = path.to_ascii_lowercase();
    let name = lowered.rsplit('/').next().unwrap_or(&lowered);
    let extension = name.rsplit_once('.').map_or("", |(_, extension)| extension);
    let in_workflows = lowered.contains(".github/workflows/")
        || lowered.starts_with(".github/workflows/")
        || runs_as_yaml(path, text);
    let (lang, masked, seeds) = if matches!(name, "makefile" | "gnumakefile" | "bsdmakefile")
        || name.starts_with("makefile.")
        || matches!(extension, "mk" | "mak")
    {
        let (masked, seeds) = makefile(text);
        (Lang::Shell, masked, seeds)
    } else if matches!(name, "justfile" | ".justfile") || extension == "just" {
        (Lang::Shell, indented_recipes(text), Vec::new())
    } else if name == "dockerfile"
        || name == "containerfile"
        || name.starts_with("dockerfile.")
        || matches!(extension, "dockerfile" | "containerfile")
    {
        (Lang::Shell, dockerfile(text), Vec::new())
    } else if in_workflows && matches!(extension, "yml" | "yaml")
        || matches!(
            name,
            "action.yml"
                | "action.yaml"
                | ".gitlab-ci.yml"
                | "taskfile.yml"
                | "taskfile.yaml"
                | "taskfile.dist.yml"
                | "taskfile.dist.yaml"
                | ".travis.yml"
                | "azure-pipelines.yml"
                | "bitbucket-pipelines.yml"
                | ".drone.yml"
                | "lefthook.yml"
                | "lefthook.yaml"
                | ".lefthook.yml"
                | ".pre-commit-config.yaml"
                | "pre-commit-config.yaml"
                | "docker-compose.yml"
                | "docker-compose.yaml"
                | "compose.yml"
                | "compose.yaml"
        )
    {
        (Lang::Shell, yaml_commands(text), Vec::new())
    } else if matches!(
        name,
        "package.json" | "deno.json" | "deno.jsonc" | "composer.json"
    ) {
        (Lang::Shell, json_scripts(text)?, Vec::new())
    } else if extension == "pth" {
        (Lang::Python, pth(text), Vec::new())
    } else if extension == "ipynb" {
        (Lang::Python, notebook(text)?, Vec::new())
    } else if is_markup(path) {
        (Lang::JavaScript, markup_scripts(text)?, Vec::new())
    } else if let Some(code) = data_url_scripts(text) {
        (Lang::JavaScript, code, Vec::new())
    } else {
        return None;
    };
    Some(Embedded {
        lang,
        text: masked,
        seeds,
    })
}

/// True when the YAML file at `path` is shaped as what runs its commands
/// wherever it is kept: a CI workflow (`jobs:` with `steps:` or
/// `runs-on:`), a compose file (`services:` with `image:` or `build:`),
/// a hook manager's configuration (`repos:` with `hooks:`).
pub(crate) fn runs_as_yaml(path: &str, text: &str) -> bool {
    let lowered = path.to_ascii_lowercase();
    if !(lowered.ends_with(".yml") || lowered.ends_with(".yaml")) {
        return false;
    }
    let key =
        |name: &str| text.starts_with(&format!("{name}:")) || text.contains(&format!("\n{name}:"));
    let nested = |name: &str| text.contains(&format!(" {name}:"));
    key("jobs") && (nested("steps") || nested("runs-on") || nested("script"))
        || key("services") && (nested("image") || nested("build"))
        || key("repos") && nested("hooks") && nested("entry")
}

/// True when the file at `path` is a page or an image that holds its own
/// scripts: HTML, XHTML, SVG.
pub(crate) fn is_markup(path: &str) -> bool {
    let lowered = path.to_ascii_lowercase();
    [".html", ".htm", ".xhtml", ".svg", ".shtml"]
        .iter()
        .any(|extension| lowered.ends_with(extension))
}

/// A `<script>` element's content, an event handler's value (`onload="..."`)
/// and a `javascript:` address.
static MARKUP_SCRIPT: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(
        r#"(?is)<script\b[^>]*>(.*?)</script\s*>|\son[a-z]+\s*=\s*(?:"([^"]*)"|'([^']*)')|["']\s*javascript:([^"']*)["']"#,
    )
    .expect("valid markup script pattern")
});

/// An HTML or SVG file's scripts, in place, as JavaScript: what a browser
/// runs when it shows the page or the image. `None` when it has none.
fn markup_scripts(text: &str) -> Option<String> {
    let keep: Vec<(usize, usize)> = MARKUP_SCRIPT
        .captures_iter(text)
        .filter_map(|found| (1..=4).find_map(|group| found.get(group)))
        .map(|script| (script.start(), script.end()))
        .collect();
    if keep.is_empty() {
        return None;
    }
    // XML's character data markers are no JavaScript.
    Some(
        mask(text, &keep)
            .replace("<![CDATA[", "         ")
            .replace("]]>", "   "),
    )
}

/// `text` with every byte outside `keep` (byte ranges) a space, line ends
/// kept.
fn mask(text: &str, keep: &[(usize, usize)]) -> String {
    let mut bytes: Vec<u8> = text
        .bytes()
        .map(|byte| if byte == b'\n' { b'\n' } else { b' ' })
        .collect();
    for &(start, end) in keep {
        let end = end.min(text.len());
        if start < end {
            bytes[start..end].copy_from_slice(&text.as_bytes()[start..end]);
        }
    }
    // A kept range that cut a character leaves a broken sequence: then
    // every byte past ASCII is a space, so that offsets stay the file's.
    String::from_utf8(bytes).unwrap_or_else(|error| {
        error
            .into_bytes()
            .into_iter()
            .map(|byte| {
                if byte.is_ascii() {
                    char::from(byte)
                } else {
                    ' '
                }
            })
            .collect()
    })
}

/// The lines of `text` with their byte offsets, line ends excluded.
fn lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut at = 0;
    text.split_inclusive('\n').map(move |line| {
        let start = at;
        at += line.len();
        (start, line.trim_end_matches(['\n', '\r']))
    })
}

/// A Makefile: recipe lines (a tab first; `@`, `-` and `+` dropped),
/// their continuations, and the commands of `$(shell ...)`; `$$` is a
/// shell's `$` and `$(NAME)` a variable. The values of simple
/// assignments (`NAME := value`) are given as seeds, with `SHELL` as `sh`.
fn makefile(text: &str) -> (String, Vec<(String, String)>) {
    let mut keep = Vec::new();
    let mut seeds = vec![("SHELL".to_owned(), "sh".to_owned())];
    let mut continued = false;
    for (start, line) in lines(text) {
        let recipe = line.starts_with('\t') || continued;
        if recipe {
            let body = line.trim_start_matches('\t');
            let offset = line.len() - body.len();
            let prefix = body.len() - body.trim_start_matches(['@', '-', '+']).len();
            keep.push((start + offset + prefix, start + line.len()));
        } else if let Some((name, value)) = assignment(line) {
            seeds.push((name.to_owned(), value.trim().to_owned()));
        }
        // `$(shell ...)` anywhere.
        let mut search = 0;
        while let Some(found) = line[search..].find("$(shell ") {
            let open = search + found;
            let body = open + "$(shell ".len();
            let close = matching_paren(line, open + 1).unwrap_or(line.len());
            keep.push((start + body, start + close));
            search = close.max(body);
        }
        continued = line.ends_with('\\');
    }
    let mut masked = mask(text, &keep);
    // Make's own syntax, kept at its length: `$$` is `$`, `$(NAME)` is
    // `${NAME}`.
    masked = masked.replace("$$", " $");
    let mut out = String::with_capacity(masked.len());
    let chars: Vec<char> = masked.chars().collect();
    let mut index = 0;
    while index < chars.len() {
        if chars[index] == '$' && chars.get(index + 1) == Some(&'(') {
            let name: String = chars[index + 2..]
                .iter()
                .take_while(|c| c.is_ascii_alphanumeric() || **c == '_')
                .collect();
            if !name.is_empty() && chars.get(index + 2 + name.len()) == Some(&')') {
                out.push_str("${");
                out.push_str(&name);
                out.push('}');
                index += name.len() + 3;
                continue;
            }
        }
        out.push(chars[index]);
        index += 1;
    }
    (out, seeds)
}

/// `NAME := value`, `NAME = value`, `NAME ?= value`.
fn assignment(line: &str) -> Option<(&str, &str)> {
    let (name, value) = line.split_once('=')?;
    let name = name.trim_end_matches([':', '?', '+', '!']).trim();
    let simple = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
    simple.then_some((name, value))
}

/// The index of the `)` that closes the `(` at `open`.
fn matching_paren(text: &str, open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (index, byte) in text.bytes().enumerate().skip(open) {
        match byte {
            b'(' => depth += 1,
            b')' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(index);
                }
            }
            _ => {}
        }
    }
    None
}

/// A justfile: the indented lines under a recipe (`name:`), `@` dropped.
fn indented_recipes(text: &str) -> String {
    let mut keep = Vec::new();
    for (start, line) in lines(text) {
        let body = line.trim_start();
        if body.len() < line.len() && !body.is_empty() {
            let offset = line.len() - body.len();
            let prefix = body.len() - body.trim_start_matches(['@', '-']).len();
            keep.push((start + offset + prefix, start + line.len()));
        }
    }
    mask(text, &keep)
}

/// A Dockerfile: the shell form of `RUN` (and of `CMD`, `ENTRYPOINT`),
/// with its continuation lines.
fn dockerfile(text: &str) -> String {
    let mut keep = Vec::new();
    let mut continued = false;
    for (start, line) in lines(text) {
        let trimmed = line.trim_start();
        let word_end = trimmed.find(char::is_whitespace).unwrap_or(trimmed.len());
        let instruction = trimmed[..word_end].to_ascii_uppercase();
        if continued {
            keep.push((start, start + line.len()));
        } else if matches!(instruction.as_str(), "RUN" | "CMD" | "ENTRYPOINT")
            && !trimmed[word_end..].trim_start().starts_with('[')
        {
            let body = start + (line.len() - trimmed.len()) + word_end;
            keep.push((body, start + line.len()));
        } else {
            continued = false;
            continue;
        }
        continued = line.ends_with('\\');
    }
    mask(text, &keep)
}

/// Keys of CI and task files whose values are shell commands.
const COMMAND_KEYS: &[&str] = &[
    "run",
    "script",
    "before_script",
    "after_script",
    "cmds",
    "cmd",
    "command",
    "commands",
    "install",
    "before_install",
    "entry",
    "entrypoint",
];

/// A workflow or task file: the values of [`COMMAND_KEYS`], inline, as
/// list items or as block scalars (`run: |`).
fn yaml_commands(text: &str) -> String {
    let mut keep = Vec::new();
    // The indentation of the key whose block is being kept.
    let mut block: Option<usize> = None;
    for (start, line) in lines(text) {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        if let Some(key_indent) = block {
            if trimmed.is_empty() {
                continue;
            }
            if indent > key_indent {
                let item = trimmed.strip_prefix("- ").map_or(0, |_| 2);
                keep.push((start + indent + item, start + line.len()));
                continue;
            }
            block = None;
        }
        let entry = trimmed.strip_prefix("- ").unwrap_or(trimmed);
        let entry_offset = line.len() - entry.len();
        let Some((key, value)) = entry.split_once(':') else {
            continue;
        };
        if !COMMAND_KEYS.contains(&key.trim()) {
            continue;
        }
        let value_offset = entry_offset + key.len() + 1;
        let value_trimmed = value.trim_start();
        let value_start = value_offset + (value.len() - value_trimmed.len());
        if value_trimmed.is_empty()
            || value_trimmed.starts_with('|')
            || value_trimmed.starts_with('>')
        {
            block = Some(indent);
        } else if value_trimmed.starts_with('[') {
            // An exec form, `["/bin/sh", "-c"]`: its words, apart.
            let at = start + value_start;
            let mut open: Option<(u8, usize)> = None;
            for (index, byte) in value_trimmed.bytes().enumerate() {
                match open {
                    None if byte == b'"' || byte == b'\'' => open = Some((byte, index + 1)),
                    Some((quote, from)) if byte == quote => {
                        keep.push((at + from, at + index));
                        open = None;
                    }
                    _ => {}
                }
            }
        } else {
            let unquoted = value_trimmed.starts_with(['"', '\'']);
            let skip = usize::from(unquoted);
            keep.push((start + value_start + skip, start + line.len() - skip));
        }
    }
    mask(text, &keep)
}

/// `package.json` and its kin: the string values of the `scripts` (or
/// `tasks`) object, their JSON escapes decoded at their length.
fn json_scripts(text: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(text).ok()?;
    let scripts = value
        .get("scripts")
        .or_else(|| value.get("tasks"))?
        .as_object()?;
    let section = text
        .find("\"scripts\"")
        .or_else(|| text.find("\"tasks\""))?;
    let mut keep = Vec::new();
    let mut decoded = Vec::new();
    for (name, script) in scripts {
        let Some(script) = script.as_str() else {
            continue;
        };
        let key = format!("\"{}\"", name.replace('\\', "\\\\").replace('"', "\\\""));
        let Some(found) = text[section..].find(&key) else {
            continue;
        };
        let after = section + found + key.len();
        let rest = &text[after..];
        let Some(colon) = rest.find(':') else {
            continue;
        };
        let Some(quote) = rest[colon..].find('"') else {
            continue;
        };
        let open = after + colon + quote;
        // The closing quote: the first one not escaped.
        let bytes = text.as_bytes();
        let mut index = open + 1;
        while index < bytes.len() && bytes[index] != b'"' {
            index += if bytes[index] == b'\\' { 2 } else { 1 };
        }
        keep.push((open + 1, index.min(text.len())));
        decoded.push(script);
    }
    let mut masked = mask(text, &keep);
    for ((start, end), script) in keep.into_iter().zip(decoded) {
        // Each script as the shell gets it, its lines parted by `;` so
        // the file's lines stay, padded to the length of its JSON form.
        let mut script = script.replace(['\n', '\r'], ";");
        if script.len() > end - start {
            continue;
        }
        script.extend(std::iter::repeat_n(' ', end - start - script.len()));
        masked.replace_range(start..end, &script);
    }
    Some(masked)
}

/// A Jupyter notebook: the code cells' lines, each written at the start
/// of the line of the notebook that holds its JSON string (padded with
/// spaces to that line's length), so a finding in a cell is placed on
/// the line of the notebook it came from.
fn notebook(text: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(text).ok()?;
    let cells = value.get("cells")?.as_array()?;
    let mut out: Vec<u8> = text
        .bytes()
        .map(|byte| if byte == b'\n' { b'\n' } else { b' ' })
        .collect();
    let bytes = text.as_bytes();
    let mut cursor = 0;
    // Where the next line of code may be written: a notebook written on
    // one line gets its lines one after the other, parted by `;`.
    let mut free = 0;
    for cell in cells {
        let found = text[cursor..].find("\"source\"")?;
        cursor += found + "\"source\"".len();
        if cell.get("cell_type").and_then(serde_json::Value::as_str) != Some("code") {
            continue;
        }
        // The strings of the value: one, or those of an array.
        let mut at = cursor;
        while at < bytes.len() && matches!(bytes[at], b' ' | b'\t' | b'\r' | b'\n' | b':') {
            at += 1;
        }
        let in_array = bytes.get(at) == Some(&b'[');
        loop {
            while at < bytes.len()
                && matches!(bytes[at], b' ' | b'\t' | b'\r' | b'\n' | b',' | b'[')
            {
                at += 1;
            }
            if bytes.get(at) != Some(&b'"') {
                break;
            }
            let open = at;
            let mut close = open + 1;
            while close < bytes.len() && bytes[close] != b'"' {
                close += if bytes[close] == b'\\' { 2 } else { 1 };
            }
            let Some(token) = text.get(open..=close.min(text.len() - 1)) else {
                break;
            };
            at = close + 1;
            let Ok(line) = serde_json::from_str::<String>(token) else {
                break;
            };
            let line_start = text[..open].rfind('\n').map_or(0, |index| index + 1);
            let line_end = text[open..]
                .find('\n')
                .map_or(text.len(), |index| open + index);
            let code = line
                .trim_end_matches(['\n', '\r'])
                .replace(['\n', '\r'], "; ");
            let (start, code) = if line_start >= free {
                (line_start, code)
            } else {
                (free, format!("; {code}"))
            };
            if start + code.len() <= line_end {
                out[start..start + code.len()].copy_from_slice(code.as_bytes());
                free = start + code.len();
            }
            if !in_array {
                break;
            }
        }
        cursor = at;
    }
    String::from_utf8(out).ok()
}

/// A `.pth` file: Python's `site` runs each line that starts with
/// `import`.
fn pth(text: &str) -> String {
    let keep: Vec<(usize, usize)> = lines(text)
        .filter(|(_, line)| line.starts_with("import ") || line.starts_with("import\t"))
        .map(|(start, line)| (start, start + line.len()))
        .collect();
    mask(text, &keep)
}

/// The JavaScript of the `data:` addresses in `text`
/// (`node-options=--import=data:text/javascript,CODE`, `import
/// "data:text/javascript;base64,..."`), in place: every other byte a
/// space, line ends kept. Node imports such an address as a module, so
/// a setting or an argument that names one runs the code in it.
fn data_url_scripts(text: &str) -> Option<String> {
    let lowered = text.to_ascii_lowercase();
    let mut masked: Vec<u8> = text
        .bytes()
        .map(|byte| if byte == b'\n' { b'\n' } else { b' ' })
        .collect();
    let mut found = false;
    for marker in [
        "data:text/javascript",
        "data:application/javascript",
        "data:text/ecmascript",
    ] {
        let mut from = 0;
        while let Some(at) = lowered[from..].find(marker).map(|offset| from + offset) {
            from = at + marker.len();
            let Some(comma) = lowered[from..].find(',').filter(|&offset| offset <= 40) else {
                continue;
            };
            let base64 = lowered[from..from + comma].contains(";base64");
            let start = from + comma + 1;
            // The code ends with its line, or with the quote that opened
            // the address.
            let quote = text[..at]
                .chars()
                .next_back()
                .filter(|c| matches!(c, '"' | '\'' | '`'));
            let end = text[start..]
                .find(|c: char| c == '\n' || Some(c) == quote)
                .map_or(text.len(), |offset| start + offset);
            // A quoted setting's closing quote is not code.
            let raw = text[start..end].trim_end().trim_end_matches(['"', '\'']);
            let code: Vec<u8> = if base64 {
                match super::decode_base64(raw) {
                    Some(bytes) => bytes,
                    None => continue,
                }
            } else {
                percent_decoded(raw)
            };
            // Decoded code is never longer than its address; what is
            // left of the address stays blank. Line ends inside become
            // spaces, so lines keep their numbers.
            for (index, byte) in code.iter().take(end - start).enumerate() {
                masked[start + index] = if *byte == b'\n' { b' ' } else { *byte };
            }
            found = true;
        }
    }
    if !found {
        return None;
    }
    Some(String::from_utf8_lossy(&masked).into_owned())
}

/// `text` with its `%XX` escapes decoded.
fn percent_decoded(text: &str) -> Vec<u8> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] == b'%'
            && let Some(hex) = text.get(at + 1..at + 3)
            && let Ok(byte) = u8::from_str_radix(hex, 16)
        {
            out.push(byte);
            at += 3;
            continue;
        }
        out.push(bytes[at]);
        at += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_is_cut_out_in_place() {
        let make = "X := abc\nall:\n\t@curl -o f $(URL)\n\techo $$HOME\n";
        let found = embedded("Makefile", make).unwrap();
        assert_eq!(found.text.len(), make.len());
        assert!(found.text.contains("curl -o f ${URL}"));
        assert!(found.text.contains("echo  $HOME"));
        assert!(!found.text.contains("X :="));
        assert!(found.seeds.contains(&("X".to_owned(), "abc".to_owned())));

        let docker = "FROM x\nRUN a \\\n && b\nCOPY . /\nRUN [\"sh\"]\n";
        let masked = embedded("Dockerfile", docker).unwrap().text;
        assert!(masked.contains(" a \\\n && b\n"));
        assert!(!masked.contains("COPY") && !masked.contains("FROM"));

        let workflow = "jobs:\n  a:\n    steps:\n      - run: |\n          curl x > f\n          . ./f\n      - name: y\n        run: make lint\n";
        let masked = embedded(".github/workflows/ci.yml", workflow).unwrap().text;
        assert!(
            masked.contains("curl x > f")
                && masked.contains(". ./f")
                && masked.contains("make lint")
        );
        assert!(!masked.contains("name"));

        let package = "{\"scripts\": {\"pre\": \"sh \\\"$f\\\"\"}}";
        let masked = embedded("package.json", package).unwrap().text;
        assert_eq!(masked.len(), package.len());
        assert!(masked.contains("sh \"$f\"  "), "{masked}");
        let inline = "{\"scripts\": {\"pre\": \"node -e \\\"x()\\\"\\nls \\\\d\"}}";
        let masked = embedded("package.json", inline).unwrap().text;
        assert_eq!(masked.len(), inline.len());
        assert!(masked.contains("node -e \"x()\";ls \\d   "), "{masked}");

        let pth = "/opt/lib\nimport os; os.system('x')\n";
        let masked = embedded("x.pth", pth).unwrap();
        assert_eq!(masked.lang, Lang::Python);
        assert!(masked.text.starts_with("        \nimport os"));
    }
}
