//! `skillpkg config`: the paths, registries and variables a command run
//! here would use, with every secret redacted.

use skillpkg_tests::{TestContext, run};

#[test]
fn config_shows_paths_registries_and_variables_and_never_a_secret() {
    let sandbox = TestContext::new();
    let project = sandbox.path().join("project");
    fs_err::create_dir_all(&project).unwrap();
    fs_err::write(
        project.join("skills.toml"),
        "[registry]\nurl = \"corp\"\n\n[registries.corp]\n\
         index = \"https://skills.corp.example/\"\n\
         mirror = \"https://mirror.corp.example/skills/\"\n\n[skills]\n",
    )
    .unwrap();
    let config = sandbox.path().join("config");
    let command = |args: &[&str]| {
        run(sandbox
            .skillpkg_command()
            .args(["config"])
            .args(args)
            .current_dir(&project)
            .env("SKILLPKG_CONFIG_DIR", &config)
            .env("SKILLPKG_CACHE_DIR", sandbox.path().join("cache"))
            .env("SKILLPKG_STATE_DIR", sandbox.path().join("state"))
            .env("SKILLPKG_TOKEN", "skp_very_secret_one")
            .env("SKILLPKG_REGISTRY_CORP_TOKEN", "skp_very_secret_two")
            .env("SKILLPKG_KEY_PASSWORD", "hunter2")
            // What the machine running the tests may set.
            .env_remove("CI")
            .env_remove("CODEX_HOME")
            .env_remove("SKILLPKG_HTTP_TIMEOUT")
            .env_remove("SKILLPKG_REGISTRY")
            .env_remove("SKILLPKG_SIGNING_KEY"))
    };
    let output = command(&[]);
    assert_eq!(output.code, 0, "{output:?}");
    for secret in ["skp_very_secret", "hunter2"] {
        assert!(!output.stdout.contains(secret), "{}", output.stdout);
        assert!(!output.stderr.contains(secret), "{}", output.stderr);
    }
    insta::assert_snapshot!(sandbox.redact(&output.stdout), @"
    config file:      [HOME]/config/skillpkg/config.toml (absent)
    credentials:      [HOME]/config/skillpkg/credentials.toml (absent)
    signing key:      [HOME]/config/skillpkg/signing.key (absent)
    cache:            [HOME]/cache (absent)
    state:            [HOME]/state (absent)
    global skills:    [HOME]/.local/share/skillpkg/global (absent)
    project:          [HOME]/project/skills.toml
    default registry: corp https://skills.corp.example/
    registries:
      corp  https://skills.corp.example/  mirror https://mirror.corp.example/skills/  (defined in [HOME]/project/skills.toml)
    environment:
      NO_COLOR=1
      SKILLPKG_CACHE_DIR=[HOME]/cache
      SKILLPKG_CONFIG_DIR=[HOME]/config
      SKILLPKG_KEY_PASSWORD=****
      SKILLPKG_REGISTRY_CORP_TOKEN=****
      SKILLPKG_STATE_DIR=[HOME]/state
      SKILLPKG_TOKEN=****
    ");

    let json = command(&["--json"]);
    assert_eq!(json.code, 0, "{json:?}");
    let value: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(value["paths"]["project"]["exists"], true);
    assert_eq!(value["paths"]["config_file"]["exists"], false);
    assert_eq!(value["default_registry"]["name"], "corp");
    assert_eq!(
        value["registries"][0]["mirror"],
        "https://mirror.corp.example/skills/"
    );
    assert_eq!(value["environment"]["SKILLPKG_REGISTRY_CORP_TOKEN"], "****");
    assert!(!json.stdout.contains("skp_very_secret"), "{}", json.stdout);

    // A broken config file is named, and is this command's error to show.
    fs_err::create_dir_all(config.join("skillpkg")).unwrap();
    fs_err::write(config.join("skillpkg/config.toml"), "registry = [\n").unwrap();
    let broken = command(&[]);
    assert_eq!(broken.code, 1, "{broken:?}");
    assert!(broken.stderr.contains("config.toml"), "{}", broken.stderr);
}
