//! The binary's own help lists its commands. (This test also makes `cargo
//! test --workspace` build `skillpkg-registry` for the end-to-end tests.)

use std::process::Command;

#[test]
fn help_lists_every_command() {
    let output = Command::new(env!("CARGO_BIN_EXE_skillpkg-registry"))
        .arg("--help")
        .output()
        .unwrap();
    assert!(output.status.success());
    let help = String::from_utf8(output.stdout).unwrap();
    for command in ["serve", "build", "token", "key"] {
        assert!(help.contains(command), "`{command}` missing from:\n{help}");
    }
}

#[test]
fn running_without_a_command_fails_and_points_to_help() {
    let output = Command::new(env!("CARGO_BIN_EXE_skillpkg-registry"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--help"));
}
