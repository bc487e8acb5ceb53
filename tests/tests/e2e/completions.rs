//! `skillpkg completions` and `skillpkg man`, loaded by the real shells and
//! read by the real `man`.

use std::process::Command;

use skillpkg_tests::{TestContext, run};

/// Writes `skillpkg completions SHELL` to a file and returns its path.
fn script(sandbox: &TestContext, shell: &str) -> std::path::PathBuf {
    let output = run(sandbox.skillpkg_command().args(["completions", shell]));
    assert_eq!(output.code, 0, "{output:?}");
    assert!(!output.stdout.is_empty());
    let path = sandbox.path().join(format!("completions.{shell}"));
    fs_err::write(&path, &output.stdout).unwrap();
    path
}

#[test]
fn bash_completes_commands_options_and_their_values() {
    let sandbox = TestContext::new();
    let path = script(&sandbox, "bash");
    // What bash's programmable completion does on TAB: the function the
    // script registered, called with the words typed so far.
    let complete = |words: &str| -> Vec<String> {
        let program = format!(
            "source {}; COMP_WORDS=({words}); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1)); \
             COMP_LINE=\"{words}\"; COMP_POINT=${{#COMP_LINE}}; \
             _skillpkg skillpkg \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"; \
             printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            path.display()
        );
        let output = run(Command::new("bash").args(["--norc", "--noprofile", "-c", &program]));
        assert_eq!(output.code, 0, "{output:?}");
        output.stdout.lines().map(str::to_owned).collect()
    };
    assert_eq!(complete("skillpkg pu"), ["publish"]);
    assert!(complete("skillpkg publish --dr").contains(&"--dry-run".to_owned()));
    let shells = complete("skillpkg completions ''");
    for shell in ["bash", "zsh", "fish", "powershell"] {
        assert!(shells.contains(&shell.to_owned()), "{shell} in {shells:?}");
    }
}

#[test]
fn fish_completes_commands_and_options() {
    let sandbox = TestContext::new();
    let path = script(&sandbox, "fish");
    let complete = |line: &str| -> Vec<String> {
        let program = format!("source {}; complete -C '{line}'", path.display());
        let output = run(Command::new("fish")
            .args(["--no-config", "-c", &program])
            .env("HOME", sandbox.path()));
        assert_eq!(output.code, 0, "{output:?}");
        // `complete -C` prints each candidate, a tab, and its description.
        output
            .stdout
            .lines()
            .map(|line| line.split('\t').next().unwrap_or_default().to_owned())
            .collect()
    };
    assert!(complete("skillpkg pu").contains(&"publish".to_owned()));
    assert!(complete("skillpkg publish --dr").contains(&"--dry-run".to_owned()));
}

#[test]
fn zsh_loads_the_script_as_a_completion_function() {
    let sandbox = TestContext::new();
    let path = script(&sandbox, "zsh");
    let folder = sandbox.path().join("zfunc");
    fs_err::create_dir_all(&folder).unwrap();
    fs_err::copy(&path, folder.join("_skillpkg")).unwrap();
    let program = format!(
        "fpath=({} $fpath); autoload -U compinit; compinit -u -d {}; \
         print -r -- ${{_comps[skillpkg]}}",
        folder.display(),
        sandbox.path().join("zcompdump").display()
    );
    let output = run(Command::new("zsh")
        .args(["-f", "-c", &program])
        .env("HOME", sandbox.path()));
    assert_eq!(output.code, 0, "{output:?}");
    assert_eq!(
        output.stdout.trim(),
        "_skillpkg",
        "compinit binds the function to skillpkg"
    );
}

#[test]
fn the_manual_pages_render_without_warnings() {
    let sandbox = TestContext::new();
    let output = run(sandbox.skillpkg_command().arg("man"));
    assert_eq!(output.code, 0, "{output:?}");
    assert!(
        output.stdout.starts_with(".ie"),
        "roff: {}",
        &output.stdout[..80]
    );

    let pages = sandbox.path().join("man1");
    let refused = run(sandbox
        .skillpkg_command()
        .args(["man", "--out"])
        .arg(&pages));
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(
        refused.stderr.contains("is not a folder"),
        "{}",
        refused.stderr
    );
    assert!(!pages.exists(), "nothing is made");

    fs_err::create_dir_all(&pages).unwrap();
    let written = run(sandbox
        .skillpkg_command()
        .args(["man", "--out"])
        .arg(&pages));
    assert_eq!(written.code, 0, "{written:?}");
    for page in ["skillpkg.1", "skillpkg-add.1", "skillpkg-key-generate.1"] {
        let rendered = run(Command::new("man")
            .args(["--warnings", "-P", "cat", "-l"])
            .arg(pages.join(page))
            .env("MANWIDTH", "80"));
        assert_eq!(rendered.code, 0, "{rendered:?}");
        assert!(rendered.stderr.is_empty(), "{page}: {}", rendered.stderr);
        let name = page.trim_end_matches(".1");
        let mut lines = rendered.stdout.lines();
        let named = lines
            .find(|line| *line == "NAME")
            .and_then(|_| lines.next());
        assert_eq!(
            named.and_then(|line| line.split_whitespace().next()),
            Some(name),
            "{page} names itself:\n{}",
            rendered.stdout
        );
    }
}

/// `--version` names the commit the binary was built from, so that a bug
/// report says which code it is about.
#[test]
fn version_names_the_commit_it_was_built_from() {
    let sandbox = TestContext::new();
    let output = run(sandbox.skillpkg_command().arg("--version"));
    assert_eq!(output.code, 0, "{output:?}");
    let head = run(Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR")));
    assert_eq!(head.code, 0, "the tests run in a git checkout: {head:?}");
    let date = run(Command::new("git")
        .args(["log", "-1", "--format=%cs", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR")));
    assert_eq!(
        output.stdout.trim(),
        format!(
            "skillpkg {} ({} {})",
            env!("CARGO_PKG_VERSION"),
            head.stdout.trim(),
            date.stdout.trim()
        )
    );
}
