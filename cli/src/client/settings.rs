//! Settings: command-line flags, environment variables and the user's files,
//! resolved in one place.
//!
//! ```text
//! <config dir>/skillpkg/config.toml        registry = "https://skills.example.com/"   (or a name)
//!                                          signing-key = "PATH"
//!                                          [registries.NAME] index = "URL" ...
//! <config dir>/skillpkg/credentials.toml   [registries."https://skills.example.com/"] token = "..."
//! ```
//!
//! `<config dir>` is `$SKILLPKG_CONFIG_DIR`, else the platform's user config
//! folder. The environment is read once, into an [`Environment`], so the
//! rules here and in `client::registries` (which registry, which token) are
//! plain functions that tests call with any environment.

use std::collections::BTreeMap;
use std::path::PathBuf;

use skillpkg_index::secret::Secret;

use crate::client::credentials::Credentials;
use crate::env_vars;
use crate::error::UserError;

/// The subfolder of the config folder that is skillpkg's.
const APP_DIR: &str = "skillpkg";
/// The user config file, in [`APP_DIR`].
const CONFIG_FILE: &str = "config.toml";
/// The credentials file, in [`APP_DIR`].
const CREDENTIALS_FILE: &str = "credentials.toml";
/// The default secret signing key, in [`APP_DIR`] (public key beside it, `.pub`).
const SIGNING_KEY_FILE: &str = "signing.key";

/// What the environment contributes to settings.
#[derive(Clone, Debug, Default)]
pub struct Environment {
    /// `SKILLPKG_REGISTRY`, unparsed (so a bad value is reported only by the
    /// commands that need a registry).
    pub registry: Option<String>,
    /// `SKILLPKG_TOKEN`, unparsed, for the same reason; never shown.
    pub token: Option<Secret>,
    /// Every `SKILLPKG_REGISTRY_<NAME>_TOKEN`, by variable name, unparsed;
    /// never shown.
    pub registry_tokens: BTreeMap<String, Secret>,
    /// The folder that holds `skillpkg/`: `SKILLPKG_CONFIG_DIR`, else the
    /// platform's user config folder (none on a system without a home).
    pub config_dir: Option<PathBuf>,
    /// `SKILLPKG_SIGNING_KEY`: a secret key file's text; never shown.
    pub signing_key: Option<Secret>,
    /// `SKILLPKG_KEY_PASSWORD`; never shown.
    pub key_password: Option<Secret>,
}

impl Environment {
    /// Reads the process environment. Empty values count as unset.
    pub fn from_process() -> Self {
        let var = |name: &str| {
            std::env::var_os(name)
                .filter(|value| !value.is_empty())
                .map(|value| value.to_string_lossy().into_owned())
        };
        Self {
            registry: var(env_vars::SKILLPKG_REGISTRY),
            token: var(env_vars::SKILLPKG_TOKEN).map(Secret::new),
            registry_tokens: std::env::vars_os()
                .filter_map(|(name, value)| {
                    let name = name.into_string().ok()?;
                    let is_token = name.starts_with(env_vars::SKILLPKG_REGISTRY_TOKEN_PREFIX)
                        && name.ends_with(env_vars::SKILLPKG_REGISTRY_TOKEN_SUFFIX)
                        && !value.is_empty();
                    is_token.then(|| (name, Secret::new(value.to_string_lossy().into_owned())))
                })
                .collect(),
            config_dir: std::env::var_os(env_vars::SKILLPKG_CONFIG_DIR)
                .filter(|value| !value.is_empty())
                .map(PathBuf::from)
                .or_else(dirs::config_dir),
            signing_key: var(env_vars::SKILLPKG_SIGNING_KEY).map(Secret::new),
            key_password: var(env_vars::SKILLPKG_KEY_PASSWORD).map(Secret::new),
        }
    }

    /// Returns the path of the user config file.
    pub fn config_file(&self) -> Option<PathBuf> {
        self.app_file(CONFIG_FILE)
    }

    /// Returns the credentials file.
    pub fn credentials(&self) -> Option<Credentials> {
        self.app_file(CREDENTIALS_FILE).map(Credentials::at)
    }

    /// Returns where `skillpkg key generate` puts the key by default.
    pub fn default_signing_key(&self) -> Option<PathBuf> {
        self.app_file(SIGNING_KEY_FILE)
    }

    fn app_file(&self, name: &str) -> Option<PathBuf> {
        self.config_dir
            .as_ref()
            .map(|dir| dir.join(APP_DIR).join(name))
    }

    /// Returns where the user config file is (or would be), for messages.
    pub fn describe_config_file(&self) -> String {
        self.describe_file(CONFIG_FILE)
    }

    /// Returns where a config file would be, for messages.
    fn describe_file(&self, name: &str) -> String {
        self.app_file(name).map_or_else(
            || format!("${}/{APP_DIR}/{name}", env_vars::SKILLPKG_CONFIG_DIR),
            |path| path.display().to_string(),
        )
    }
}

/// Returns where agents would look for skills from this process: the
/// working folder, the home folder and `CODEX_HOME` (empty counts as unset).
pub fn agent_environment() -> anyhow::Result<skillpkg_index::skill::scope::Environment> {
    let cwd = std::env::current_dir()
        .map_err(|error| UserError::new("cannot read the working folder").with_source(error))?;
    Ok(skillpkg_index::skill::scope::Environment {
        cwd,
        home: dirs::home_dir(),
        codex_home: std::env::var_os(env_vars::CODEX_HOME)
            .filter(|value| !value.is_empty())
            .map(PathBuf::from),
    })
}

/// The user config file, `config.toml`, read. Unknown keys are ignored.
#[derive(Debug, Default, serde::Deserialize)]
pub struct UserConfig {
    /// Where the file is (or would be); `None` when there is no config
    /// folder.
    #[serde(skip)]
    pub path: Option<PathBuf>,
    /// `registry`: the default registry, a URL, a path or a registry name,
    /// unparsed (so that only the commands that need a registry report a
    /// bad one).
    pub registry: Option<String>,
    /// The secret signing key's path.
    #[serde(rename = "signing-key")]
    pub signing_key: Option<PathBuf>,
    /// `[registries.NAME]` tables, unparsed; `client::registries` reads
    /// them, refusing unknown keys.
    pub registries: Option<toml::Value>,
}

/// Where the secret signing key comes from.
#[derive(Debug)]
pub enum KeySource {
    /// `--key PATH`, `signing-key` in the config file, or the default path.
    File(PathBuf),
    /// `SKILLPKG_SIGNING_KEY`.
    Environment(Secret),
}

/// Returns the secret signing key's source: the flag, else
/// `SKILLPKG_SIGNING_KEY`, else `signing-key` in the user config file, else
/// the default file if it exists; `None` when there is no key anywhere.
pub fn signing_key(
    flag: Option<&std::path::Path>,
    environment: &Environment,
) -> anyhow::Result<Option<KeySource>> {
    if let Some(path) = flag {
        return Ok(Some(KeySource::File(path.to_owned())));
    }
    if let Some(text) = &environment.signing_key {
        return Ok(Some(KeySource::Environment(text.clone())));
    }
    if let Some(key) = user_config(environment)?.signing_key {
        return Ok(Some(KeySource::File(key)));
    }
    Ok(environment
        .default_signing_key()
        .filter(|path| path.exists())
        .map(KeySource::File))
}

/// Describes, for a hint, every way to give a signing key.
pub fn signing_key_ways(environment: &Environment) -> String {
    format!(
        "create one with `skillpkg key generate`, or pass `--key PATH`, set {}=<key text>, or add `signing-key = \"PATH\"` to {}",
        env_vars::SKILLPKG_SIGNING_KEY,
        environment.describe_file(CONFIG_FILE)
    )
}

/// Reads the user config file; a missing file (or no config folder) is an
/// empty one.
pub fn user_config(environment: &Environment) -> anyhow::Result<UserConfig> {
    match environment.config_file() {
        Some(path) => read_user_config(&path),
        None => Ok(UserConfig::default()),
    }
}

fn read_user_config(path: &std::path::Path) -> anyhow::Result<UserConfig> {
    let text = match fs_err::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Ok(UserConfig {
                path: Some(path.to_owned()),
                ..UserConfig::default()
            });
        }
        Err(error) => return Err(error.into()),
    };
    let mut config: UserConfig = toml::from_str(&text).map_err(|error| {
        UserError::new(format!("the config file {} is not valid", path.display()))
            .with_hint("it is TOML; skillpkg reads `registry = \"URL\"`, `signing-key` and `[registries.NAME]` tables from it")
            .with_source(error)
    })?;
    config.path = Some(path.to_owned());
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_never_shows_a_token() {
        let environment = Environment {
            token: Some(Secret::new("s3cret")),
            registry_tokens: BTreeMap::from([(
                "SKILLPKG_REGISTRY_CORP_TOKEN".to_owned(),
                Secret::new("t0p-secret"),
            )]),
            ..Environment::default()
        };
        let shown = format!("{environment:?}");
        assert!(
            !shown.contains("s3cret") && !shown.contains("t0p-secret"),
            "{shown}"
        );
    }

    #[test]
    fn the_user_config_keeps_its_registry_tables_for_later_and_ignores_unknown_keys() {
        let dir = tempfile::tempdir().unwrap();
        let environment = Environment {
            config_dir: Some(dir.path().to_owned()),
            ..Environment::default()
        };
        let missing = user_config(&environment).unwrap();
        assert!(missing.registry.is_none() && missing.registries.is_none());
        assert_eq!(missing.path, environment.config_file());

        fs_err::create_dir_all(dir.path().join("skillpkg")).unwrap();
        fs_err::write(
            dir.path().join("skillpkg/config.toml"),
            "registry = \"corp\"\nfuture = true\n[registries.corp]\nindex = \"https://corp.example\"\n",
        )
        .unwrap();
        let config = user_config(&environment).unwrap();
        assert_eq!(config.registry.as_deref(), Some("corp"));
        assert!(config.registries.unwrap().get("corp").is_some());

        fs_err::write(dir.path().join("skillpkg/config.toml"), "registry = [\n").unwrap();
        let error = user_config(&environment).unwrap_err();
        assert!(error.to_string().contains("is not valid"), "{error}");
    }
}
