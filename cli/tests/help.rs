//! The binary's own help: every command is listed and explained. (This test
//! also makes `cargo test --workspace` build the `skillpkg` binary that the
//! end-to-end tests in `tests/` run.)

use std::process::Command;

#[test]
fn help_lists_every_command() {
    let output = Command::new(env!("CARGO_BIN_EXE_skillpkg"))
        .arg("--help")
        .output()
        .unwrap();
    assert!(output.status.success());
    let help = String::from_utf8(output.stdout).unwrap();
    for command in [
        "validate", "pack", "publish", "yank", "login", "search", "info",
    ] {
        assert!(help.contains(command), "`{command}` missing from:\n{help}");
    }
}

#[test]
fn an_unknown_command_is_a_usage_error() {
    let output = Command::new(env!("CARGO_BIN_EXE_skillpkg"))
        .arg("frobnicate")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("unrecognized subcommand"));
}
