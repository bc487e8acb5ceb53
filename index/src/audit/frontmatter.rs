//! What a skill's frontmatter asks for: `allowed-tools` (spec 000),
//! `permissions` (spec 003), and look-alike letters in `name` and
//! `description`.

use crate::skill::document::{Node, SkillDocument, Value};
use crate::skill::{Host, Location};

use super::text::Scan;
use super::{Rule, Severity};

/// Tools that run any command: granted without a pattern they are an
/// unrestricted shell.
const SHELLS: &[&str] = &[
    "bash",
    "shell",
    "powershell",
    "sh",
    "terminal",
    "run_in_terminal",
];

/// Tools that, with an unrestricted shell, make the combinations spec 000
/// warns about.
const COMBINED: &[(&str, &str)] = &[
    ("write", "can create and execute scripts"),
    ("edit", "can modify and execute scripts"),
    ("multiedit", "can modify and execute scripts"),
    ("notebookedit", "can modify and execute scripts"),
    ("webfetch", "can download and execute remote code"),
];

/// Splits an `allowed-tools` string into tools: by commas when it has
/// any, else by spaces, never inside parentheses (`Bash(git add:*)`).
fn split_tools(text: &str) -> Vec<String> {
    let by_comma = text.contains(',');
    let mut tools = Vec::new();
    let mut current = String::new();
    let mut depth = 0usize;
    for character in text.chars() {
        match character {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            _ => {}
        }
        let separates =
            depth == 0 && (character == ',' || (!by_comma && character.is_whitespace()));
        if separates {
            if !current.trim().is_empty() {
                tools.push(current.trim().to_owned());
            }
            current.clear();
        } else {
            current.push(character);
        }
    }
    if !current.trim().is_empty() {
        tools.push(current.trim().to_owned());
    }
    tools
}

/// Returns the tool's name and whether it is restricted by a pattern
/// other than "anything" (`Bash(*)` is no restriction).
fn parse_tool(tool: &str) -> (String, bool) {
    match tool.split_once('(') {
        Some((name, pattern)) => {
            let pattern = pattern.trim_end_matches(')').trim();
            let open = pattern.is_empty() || pattern.chars().all(|c| matches!(c, '*' | ':' | ' '));
            (name.trim().to_ascii_lowercase(), !open)
        }
        None => (tool.trim().to_ascii_lowercase(), false),
    }
}

/// Returns the byte offsets in the scanned text of a node's first line.
fn span(scan: &Scan<'_>, location: Location) -> (usize, usize) {
    scan.span_of(location)
}

pub(crate) fn scan(scan: &mut Scan<'_>, document: &SkillDocument, host: Option<Host>) {
    if let Some((key, value)) = document.get("allowed-tools") {
        check_allowed_tools(scan, key, value);
    }
    if let Some((_, permissions)) = document.get("permissions") {
        check_permissions(scan, permissions, host);
    }
    for field in ["name", "description"] {
        if let Some((_, value)) = document.get(field)
            && let Value::String(text) = &value.value
        {
            let (start, _) = span(scan, value.location);
            super::unicode::scan_confusable(scan, field, text, start);
        }
    }
}

fn check_allowed_tools(scan: &mut Scan<'_>, key: &Node, value: &Node) {
    let tools: Vec<String> = match &value.value {
        Value::String(text) => split_tools(text),
        Value::Sequence(items) => items
            .iter()
            .filter_map(|item| item.value.scalar_text())
            .collect(),
        _ => return,
    };
    let parsed: Vec<(String, bool, &str)> = tools
        .iter()
        .map(|tool| {
            let (name, restricted) = parse_tool(tool);
            (name, restricted, tool.as_str())
        })
        .collect();
    let (start, end) = span(scan, value.location);
    let (start, end) = if start == end {
        span(scan, key.location)
    } else {
        (start, end)
    };
    let Some((_, _, shell)) = parsed
        .iter()
        .find(|(name, restricted, _)| SHELLS.contains(&name.as_str()) && !restricted)
    else {
        return;
    };
    scan.report(
        Rule::UnrestrictedShell,
        Severity::Medium,
        start,
        end,
        format!("`allowed-tools` grants `{shell}` for any command, without asking the user"),
    );
    for (other, why) in COMBINED {
        if let Some((_, _, tool)) = parsed.iter().find(|(name, _, _)| name == other) {
            scan.report(
                Rule::DangerousToolCombination,
                Severity::Medium,
                start,
                end,
                format!(
                    "`allowed-tools` grants `{shell}` with `{tool}`: the skill {why} without asking"
                ),
            );
        }
    }
}

/// Returns true for a filesystem glob that grants every file.
fn is_overbroad_glob(glob: &str) -> bool {
    let trimmed = glob.trim().trim_start_matches("./");
    matches!(trimmed, "/" | "~" | "~/" | "~/**" | "/**" | "" | ".")
        || trimmed
            .split('/')
            .all(|part| part.chars().all(|c| c == '*'))
}

fn is_overbroad_host(host: &str) -> bool {
    let trimmed = host.trim();
    trimmed.chars().all(|c| matches!(c, '*' | '.'))
        || trimmed == "0.0.0.0/0"
        || trimmed == "::/0"
        || trimmed == "*:*"
}

fn child<'a>(node: &'a Node, key: &str) -> Option<&'a Node> {
    match &node.value {
        Value::Mapping(entries) => entries
            .iter()
            .find(|(k, _)| k.value.as_str() == Some(key))
            .map(|(_, v)| v),
        _ => None,
    }
}

fn items(node: Option<&Node>) -> &[Node] {
    match node.map(|node| &node.value) {
        Some(Value::Sequence(items)) => items,
        _ => &[],
    }
}

fn check_permissions(scan: &mut Scan<'_>, permissions: &Node, host: Option<Host>) {
    let filesystem = child(permissions, "filesystem");
    for access in ["read", "write"] {
        for item in items(filesystem.and_then(|node| child(node, access))) {
            let Some(glob) = item.value.as_str() else {
                continue;
            };
            if is_overbroad_glob(glob) {
                let (start, end) = span(scan, item.location);
                scan.report(
                    Rule::OverbroadPermissions,
                    Severity::Medium,
                    start,
                    end,
                    format!("`permissions.filesystem.{access}` pattern `{glob}` grants every file"),
                );
            }
        }
    }
    let outbound = items(child(permissions, "network").and_then(|node| child(node, "outbound")));
    for item in outbound {
        let Some(host_pattern) = item.value.as_str() else {
            continue;
        };
        if is_overbroad_host(host_pattern) {
            let (start, end) = span(scan, item.location);
            scan.report(
                Rule::OverbroadPermissions,
                Severity::Medium,
                start,
                end,
                format!("`permissions.network.outbound` entry `{host_pattern}` allows every host"),
            );
        }
    }
    if host == Some(Host::ClaudeApi)
        && let Some(first) = outbound.first()
    {
        let (start, end) = span(scan, first.location);
        scan.report(
            Rule::NetworkForbiddenByHost,
            Severity::Medium,
            start,
            end,
            "`permissions.network.outbound` asks for network access; the Claude API runs skills without any",
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_tools_as_agents_do() {
        assert_eq!(split_tools("Bash Write"), ["Bash", "Write"]);
        assert_eq!(
            split_tools("Bash(git add:*), Read"),
            ["Bash(git add:*)", "Read"]
        );
        assert_eq!(
            split_tools("Bash(git status:*) Bash(git diff:*)"),
            ["Bash(git status:*)", "Bash(git diff:*)"]
        );
        assert_eq!(parse_tool("Bash(git add:*)"), ("bash".into(), true));
        assert_eq!(parse_tool("Bash(*)"), ("bash".into(), false));
    }

    #[test]
    fn overbroad_globs_and_hosts() {
        assert!(is_overbroad_glob("**/*") && is_overbroad_glob("/") && is_overbroad_glob("~/**"));
        assert!(!is_overbroad_glob("output/**") && !is_overbroad_glob("**/*.pdf"));
        assert!(is_overbroad_host("*") && !is_overbroad_host("*.example.com"));
    }
}
