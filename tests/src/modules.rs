//! The project's rule that no two files import each other, directly or
//! round a circle (docs/contributing.md), checked over every crate's
//! sources: a module's `use` lines and the `crate::`/`super::` paths in
//! its code, tests and comments aside, are its imports.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The modules of the crate whose sources are in `src`, each with the
/// modules of the same crate its code names.
pub fn imports(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    let mut pending = vec![src.to_owned()];
    while let Some(dir) = pending.pop() {
        for entry in fs_err::read_dir(&dir).expect("read a source folder") {
            let path = entry.expect("a folder entry").path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|extension| extension == "rs") {
                files.push(path);
            }
        }
    }
    let module_of = |path: &Path| -> Vec<String> {
        let relative = path
            .strip_prefix(src)
            .expect("below src")
            .with_extension("");
        let mut parts: Vec<String> = relative
            .components()
            .map(|part| part.as_os_str().to_string_lossy().into_owned())
            .collect();
        if parts
            .last()
            .is_some_and(|last| last == "mod" || last == "lib" || last == "main")
        {
            parts.pop();
        }
        parts
    };
    let modules: BTreeSet<Vec<String>> = files.iter().map(|path| module_of(path)).collect();
    // The longest module a path names: `crate::a::b::Item` is `a::b` when
    // that is a file of its own, else `a`.
    let owner = |path: &[String]| -> Option<Vec<String>> {
        (1..=path.len())
            .rev()
            .map(|length| path[..length].to_vec())
            .find(|candidate| modules.contains(candidate))
    };
    let path_pattern = regex::Regex::new(
        r"\b(crate|super)((?:::super)*)::((?:[a-z_][a-z0-9_]*::)*)(\{[^{}]*\}|[a-z_][a-z0-9_]*)",
    )
    .expect("a valid pattern");
    let mut graph = BTreeMap::new();
    for path in &files {
        let module = module_of(path);
        let text = fs_err::read_to_string(path).expect("read a source file");
        let code: String = text
            .lines()
            .take_while(|line| !line.contains("#[cfg(test)]"))
            .filter(|line| !line.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        let mut named = BTreeSet::new();
        for found in path_pattern.captures_iter(&code) {
            let base: Vec<String> = if &found[1] == "crate" {
                Vec::new()
            } else {
                // `super` is the parent of this file's module (of its
                // folder's, for a `mod.rs`).
                let ups = 1 + found[2].matches("super").count();
                module[..module.len().saturating_sub(ups)].to_vec()
            };
            let middle: Vec<String> = found[3]
                .split("::")
                .filter(|part| !part.is_empty())
                .map(str::to_owned)
                .collect();
            let last = &found[4];
            let tails: Vec<&str> = match last.strip_prefix('{') {
                Some(group) => group
                    .trim_end_matches('}')
                    .split(',')
                    .map(str::trim)
                    .collect(),
                None => vec![last],
            };
            for tail in tails {
                let mut path = base.clone();
                path.extend(middle.iter().cloned());
                path.extend(tail.split("::").map(str::to_owned).filter(|part| {
                    !part.is_empty()
                        && part != "self"
                        && part
                            .chars()
                            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
                }));
                if let Some(target) = owner(&path)
                    && target != module
                    && !target.is_empty()
                {
                    named.insert(target.join("::"));
                }
            }
        }
        graph.insert(module.join("::"), named);
    }
    graph
}

/// The circles of `graph`: each set of modules that reach one another.
pub fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<BTreeSet<String>> {
    let reaches = |from: &String| -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut pending = vec![from.clone()];
        while let Some(module) = pending.pop() {
            for next in graph.get(&module).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    pending.push(next.clone());
                }
            }
        }
        seen
    };
    let reach: BTreeMap<&String, BTreeSet<String>> = graph
        .keys()
        .map(|module| (module, reaches(module)))
        .collect();
    let mut circles: Vec<BTreeSet<String>> = Vec::new();
    for (module, reached) in &reach {
        if !reached.contains(*module) {
            continue;
        }
        let circle: BTreeSet<String> = reached
            .iter()
            .filter(|other| reach.get(other).is_some_and(|back| back.contains(*module)))
            .cloned()
            .collect();
        if !circles.contains(&circle) {
            circles.push(circle);
        }
    }
    circles
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_two_files_of_a_crate_import_each_other() {
        let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut found = Vec::new();
        for krate in ["cli", "index", "registry-server", "tests"] {
            let graph = imports(&workspace.join(krate).join("src"));
            assert!(graph.len() > 5, "{krate}: too few modules read");
            if krate == "cli" {
                // The reader sees real imports: `use super::source::...`.
                assert!(
                    graph["project::sources"].contains("project::source"),
                    "{graph:?}"
                );
                assert!(
                    graph["runtime::sandbox"].contains("runtime::grant"),
                    "{graph:?}"
                );
            }
            for circle in circles(&graph) {
                found.push(format!("{krate}: {circle:?}"));
            }
        }
        assert!(found.is_empty(), "import circles:\n{}", found.join("\n"));
    }

    #[test]
    fn a_circle_is_found_and_a_chain_is_not() {
        let temp = tempfile::tempdir().unwrap();
        let src = temp.path();
        fs_err::create_dir_all(src.join("a")).unwrap();
        fs_err::write(src.join("lib.rs"), "mod a;\nmod c;\n").unwrap();
        fs_err::write(src.join("a/mod.rs"), "mod b;\nuse crate::c::Thing;\n").unwrap();
        fs_err::write(
            src.join("a/b.rs"),
            "// super::super::c is only a comment\nuse std::fmt;\n",
        )
        .unwrap();
        fs_err::write(src.join("c.rs"), "use crate::a::b::{Other, More};\n").unwrap();
        let graph = imports(src);
        assert_eq!(graph["a"], BTreeSet::from(["c".to_owned()]));
        assert_eq!(graph["c"], BTreeSet::from(["a::b".to_owned()]));
        assert!(circles(&graph).is_empty(), "{graph:?}");
        fs_err::write(src.join("a/b.rs"), "use super::super::c::Thing;\n").unwrap();
        let graph = imports(src);
        assert_eq!(
            circles(&imports(src)),
            [BTreeSet::from(["a::b".to_owned(), "c".to_owned()])],
            "{graph:?}"
        );
    }
}
