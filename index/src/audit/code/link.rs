//! The local modules a script imports: the other files of the skill that
//! run as a part of it (`require('./lib/remediate')`, `from .feed import
//! load`, `import helpers`).
//!
//! A flow that crosses files is split so that neither half is an attack
//! on its own: one module reads a feed, another runs "the steps it is
//! given" with `sh -c`. The script and the modules it imports are read
//! as one program (see [`super::lower_linked`]); only paths that stay
//! inside the skill are followed, and only as far as one import.

use std::sync::LazyLock;

use regex::Regex;

use super::Lang;

/// The most modules read with one script.
pub(crate) const MAX_MODULES: usize = 8;
/// The largest module read.
pub(crate) const MAX_MODULE: u64 = 256 * 1024;

/// An import of a local module: where it stands in the script, and the
/// skill's paths it may name, most likely first.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Import {
    pub start: usize,
    pub end: usize,
    pub candidates: Vec<String>,
}

static JS_IMPORT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?:require|import)\s*\(\s*['"](\.\.?/[^'"\n]+)['"]\s*\)|(?:from|import)\s+['"](\.\.?/[^'"\n]+)['"]"#,
    )
    .expect("a valid pattern")
});

/// `source lib/x.sh`, `. "$(dirname "$0")/lib/x.sh"`, `. "$HERE/x.sh"`:
/// the file's name after the script's folder, however it is spelt.
static SH_SOURCE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?m)^[ \t]*(?:source|\.)[ \t]+["']?(?:\$\(dirname[ \t]+["']?\$(?:0|\{?BASH_SOURCE(?:\[0\])?\}?)["']?\)|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|\$\{BASH_SOURCE(?:\[0\])?%/\*\})?/?([A-Za-z0-9_][A-Za-z0-9_./-]*)["']?[ \t]*(?:$|[;&|#])"#,
    )
    .expect("a valid pattern")
});

static PY_IMPORT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?m)^[ \t]*(?:from[ \t]+(\.*[A-Za-z_][A-Za-z0-9_.]*|\.+)[ \t]+import[ \t]+\(?([A-Za-z0-9_, \t]+)|import[ \t]+([A-Za-z_][A-Za-z0-9_.]*))",
    )
    .expect("a valid pattern")
});

/// The imports of local modules in `text`, the script at `path` (relative
/// to the skill, `/`-separated), written in `lang`.
pub(crate) fn local_imports(lang: Lang, path: &str, text: &str) -> Vec<Import> {
    let folder = path.rsplit_once('/').map_or("", |(folder, _)| folder);
    let mut imports = Vec::new();
    match lang {
        Lang::JavaScript | Lang::TypeScript => {
            for found in JS_IMPORT.captures_iter(text) {
                let Some(name) = found.get(1).or_else(|| found.get(2)) else {
                    continue;
                };
                let Some(base) = resolve(folder, name.as_str()) else {
                    continue;
                };
                let mut candidates = vec![base.clone()];
                for suffix in [".js", ".mjs", ".cjs", ".ts", "/index.js", "/index.ts"] {
                    candidates.push(format!("{base}{suffix}"));
                }
                let whole = found.get(0).expect("a match");
                imports.push(Import {
                    start: whole.start(),
                    end: whole.end(),
                    candidates,
                });
            }
        }
        Lang::Shell => {
            for found in SH_SOURCE.captures_iter(text) {
                let (Some(whole), Some(name)) = (found.get(0), found.get(1)) else {
                    continue;
                };
                if let Some(base) = resolve(folder, name.as_str()) {
                    imports.push(Import {
                        start: whole.start(),
                        end: whole.end(),
                        candidates: vec![base],
                    });
                }
            }
        }
        Lang::Python => {
            for found in PY_IMPORT.captures_iter(text) {
                let whole = found.get(0).expect("a match");
                let (module, names) = match (found.get(1), found.get(3)) {
                    (Some(module), _) => (module.as_str(), found.get(2).map(|n| n.as_str())),
                    (None, Some(module)) => (module.as_str(), None),
                    _ => continue,
                };
                // Leading dots climb from the script's folder (one dot is
                // the folder itself); a script run directly finds plain
                // names in its folder too.
                let dots = module.bytes().take_while(|&b| b == b'.').count();
                let mut relative = "../".repeat(dots.saturating_sub(1));
                relative.push_str(&module[dots..].replace('.', "/"));
                let Some(base) = resolve(folder, relative.trim_end_matches('/')) else {
                    continue;
                };
                let mut candidates = Vec::new();
                if !module[dots..].is_empty() {
                    candidates.push(format!("{base}.py"));
                    candidates.push(format!("{base}/__init__.py"));
                }
                // `from pkg import mod`: the names may be modules.
                for name in names
                    .unwrap_or("")
                    .split(|c: char| c == ',' || c.is_whitespace())
                    .filter(|name| !name.is_empty() && *name != "as")
                    .take(4)
                {
                    let folder = if base.is_empty() {
                        String::new()
                    } else {
                        format!("{base}/")
                    };
                    candidates.push(format!("{folder}{name}.py"));
                }
                if !candidates.is_empty() {
                    imports.push(Import {
                        start: whole.start(),
                        end: whole.end(),
                        candidates,
                    });
                }
            }
        }
        _ => {}
    }
    imports
}

/// `relative` (`./lib/x`, `../x`, `lib/x`) from `folder`, as a path in
/// the skill; `None` when it climbs out of the skill or is absolute.
fn resolve(folder: &str, relative: &str) -> Option<String> {
    if relative.starts_with('/') || relative.contains('\\') || relative.contains('\0') {
        return None;
    }
    let mut parts: Vec<&str> = folder.split('/').filter(|part| !part.is_empty()).collect();
    for part in relative.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            part => parts.push(part),
        }
    }
    Some(parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidates(lang: Lang, path: &str, text: &str) -> Vec<Vec<String>> {
        local_imports(lang, path, text)
            .into_iter()
            .map(|import| import.candidates)
            .collect()
    }

    #[test]
    fn javascript_and_python_imports_name_files_of_the_skill() {
        let js = candidates(
            Lang::JavaScript,
            "scripts/audit.js",
            "const { applyAll } = require('./lib/remediate');\nimport x from \"../shared/x.mjs\";\nconst fs = require('fs');\n",
        );
        assert_eq!(js.len(), 2);
        assert_eq!(js[0][0], "scripts/lib/remediate");
        assert!(js[0].contains(&"scripts/lib/remediate.js".to_owned()));
        assert_eq!(js[1][0], "shared/x.mjs");
        let py = candidates(
            Lang::Python,
            "scripts/run.py",
            "import os\nimport helpers\nfrom .feed import load\nfrom . import steps, util\nfrom ..shared.net import get\n",
        );
        assert_eq!(py[0], ["scripts/os.py", "scripts/os/__init__.py"]);
        assert_eq!(py[1][0], "scripts/helpers.py");
        assert_eq!(py[2][0], "scripts/feed.py");
        assert!(py[3].contains(&"scripts/steps.py".to_owned()));
        assert!(py[3].contains(&"scripts/util.py".to_owned()));
        assert_eq!(py[4][0], "shared/net.py");
    }

    #[test]
    fn shell_scripts_source_files_of_the_skill() {
        let sh = candidates(
            Lang::Shell,
            "scripts/check.sh",
            "#!/bin/sh\nHERE=$(cd \"$(dirname \"$0\")\" && pwd)\n. \"$HERE/lib/policy.sh\"\nsource \"$(dirname \"$0\")/util.sh\"\nsource ~/.bashrc\n",
        );
        assert_eq!(sh, [["scripts/lib/policy.sh"], ["scripts/util.sh"]]);
    }

    #[test]
    fn paths_that_leave_the_skill_are_not_followed() {
        assert!(candidates(Lang::JavaScript, "a.js", "require('../../etc/passwd')").is_empty());
        assert!(candidates(Lang::JavaScript, "scripts/a.js", "require('../../x')").is_empty());
        assert!(candidates(Lang::Python, "a.py", "from ...up import x").is_empty());
        assert_eq!(resolve("scripts", "../x"), Some("x".to_owned()));
        assert_eq!(resolve("", "/etc/passwd"), None);
    }
}
