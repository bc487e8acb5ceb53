//! Settings: command-line flags, environment variables and the user's files,
//! resolved in one place.
//!
//! ```text
//! registry   --registry URL  >  $SKILLPKG_REGISTRY  >  registry = "URL" in config.toml
//! token      --token TOKEN   >  $SKILLPKG_TOKEN     >  credentials.toml, under the registry's URL
//!
//! <config dir>/skillpkg/config.toml        registry = "https://skills.example.com/"
//! <config dir>/skillpkg/credentials.toml   [registries."https://skills.example.com/"] token = "..."
//! ```
//!
//! `<config dir>` is `$SKILLPKG_CONFIG_DIR`, else the platform's user config
//! folder. The environment is read once, into an [`Environment`], so the
//! rules here are plain functions that tests call with any environment.

use std::path::PathBuf;

use crate::UserError;
use crate::credentials::{Credentials, Token};
use crate::env_vars;
use crate::registry_client::RegistryUrl;

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
    pub token: Option<SecretString>,
    /// The folder that holds `skillpkg/`: `SKILLPKG_CONFIG_DIR`, else the
    /// platform's user config folder (none on a system without a home).
    pub config_dir: Option<PathBuf>,
    /// `SKILLPKG_SIGNING_KEY`: a secret key file's text; never shown.
    pub signing_key: Option<SecretString>,
    /// `SKILLPKG_KEY_PASSWORD`; never shown.
    pub key_password: Option<SecretString>,
}

/// An environment variable's value that must never be shown.
#[derive(Clone, Default)]
pub struct SecretString(pub String);

impl std::fmt::Debug for SecretString {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("****")
    }
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
            token: var(env_vars::SKILLPKG_TOKEN).map(SecretString),
            config_dir: std::env::var_os(env_vars::SKILLPKG_CONFIG_DIR)
                .filter(|value| !value.is_empty())
                .map(PathBuf::from)
                .or_else(dirs::config_dir),
            signing_key: var(env_vars::SKILLPKG_SIGNING_KEY).map(SecretString),
            key_password: var(env_vars::SKILLPKG_KEY_PASSWORD).map(SecretString),
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

    /// Returns where a config file would be, for messages.
    fn describe_file(&self, name: &str) -> String {
        self.app_file(name).map_or_else(
            || format!("${}/{APP_DIR}/{name}", env_vars::SKILLPKG_CONFIG_DIR),
            |path| path.display().to_string(),
        )
    }
}

/// The user config file: `config.toml`. Unknown keys are ignored.
#[derive(Debug, Default, serde::Deserialize)]
struct UserConfig {
    registry: Option<String>,
    /// The secret signing key's path.
    #[serde(rename = "signing-key")]
    signing_key: Option<PathBuf>,
}

/// Where the secret signing key comes from.
#[derive(Debug)]
pub enum KeySource {
    /// `--key PATH`, `signing-key` in the config file, or the default path.
    File(PathBuf),
    /// `SKILLPKG_SIGNING_KEY`.
    Environment(SecretString),
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
    if let Some(path) = environment.config_file() {
        if let Some(key) = read_user_config(&path)?.signing_key {
            return Ok(Some(KeySource::File(key)));
        }
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

/// Returns the registry to use: the flag, else `SKILLPKG_REGISTRY`, else
/// the user config file's `registry`.
pub fn registry(
    flag: Option<&RegistryUrl>,
    environment: &Environment,
) -> anyhow::Result<RegistryUrl> {
    if let Some(url) = flag {
        return Ok(url.clone());
    }
    if let Some(text) = &environment.registry {
        return text.parse().map_err(|error| {
            UserError::new(format!("{} is not a registry URL", env_vars::SKILLPKG_REGISTRY))
                .with_hint("set it to the https://, http:// or file:// URL of the folder that holds the registry's config.json")
                .with_source(error)
                .into()
        });
    }
    if let Some(path) = environment.config_file() {
        let config = read_user_config(&path)?;
        if let Some(text) = config.registry {
            return text.parse().map_err(|error| {
                UserError::new(format!(
                    "`registry` in {} is not a registry URL",
                    path.display()
                ))
                .with_hint("set it to the https://, http:// or file:// URL of the folder that holds the registry's config.json")
                .with_source(error)
                .into()
            });
        }
    }
    Err(UserError::new("no registry is configured")
        .with_hint(format!(
            "pass `--registry URL`, set {}=URL, or add `registry = \"URL\"` to {}",
            env_vars::SKILLPKG_REGISTRY,
            environment.describe_file(CONFIG_FILE)
        ))
        .into())
}

fn read_user_config(path: &std::path::Path) -> anyhow::Result<UserConfig> {
    let text = match fs_err::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Ok(UserConfig::default());
        }
        Err(error) => return Err(error.into()),
    };
    toml::from_str(&text).map_err(|error| {
        UserError::new(format!("the config file {} is not valid", path.display()))
            .with_hint("it is TOML; skillpkg reads `registry = \"URL\"` from it")
            .with_source(error)
            .into()
    })
}

/// Returns the token to use for `registry`, if any: the flag, else
/// `SKILLPKG_TOKEN`, else the one stored for `registry` in the credentials
/// file.
pub fn token(
    flag: Option<&Token>,
    environment: &Environment,
    registry: &RegistryUrl,
) -> anyhow::Result<Option<Token>> {
    if let Some(token) = flag {
        return Ok(Some(token.clone()));
    }
    if let Some(SecretString(text)) = &environment.token {
        return text.parse().map(Some).map_err(|error| {
            UserError::new(format!("{} is not a valid token", env_vars::SKILLPKG_TOKEN))
                .with_hint("set it to the token the registry gave you, or unset it")
                .with_source(error)
                .into()
        });
    }
    match environment.credentials() {
        Some(credentials) => credentials.token(registry),
        None => Ok(None),
    }
}

/// Returns the token for `registry`, or an error that says how to provide
/// one.
pub fn require_token(
    flag: Option<&Token>,
    environment: &Environment,
    registry: &RegistryUrl,
) -> anyhow::Result<Token> {
    token(flag, environment, registry)?.ok_or_else(|| {
        UserError::new(format!("no token for {registry}"))
            .with_hint(format!(
                "run `skillpkg login --registry {registry}`, pass `--token TOKEN`, or set {}",
                env_vars::SKILLPKG_TOKEN
            ))
            .into()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(text: &str) -> RegistryUrl {
        text.parse().unwrap()
    }

    fn environment(dir: &std::path::Path) -> Environment {
        Environment {
            config_dir: Some(dir.to_owned()),
            ..Environment::default()
        }
    }

    fn write_config(dir: &std::path::Path, text: &str) {
        fs_err::create_dir_all(dir.join("skillpkg")).unwrap();
        fs_err::write(dir.join("skillpkg/config.toml"), text).unwrap();
    }

    #[test]
    fn the_flag_beats_the_environment_which_beats_the_config_file() {
        let dir = tempfile::tempdir().unwrap();
        write_config(
            dir.path(),
            "registry = \"https://file.example\"\nfuture = true\n",
        );
        let mut environment = environment(dir.path());
        assert_eq!(
            registry(None, &environment).unwrap(),
            url("https://file.example/")
        );
        environment.registry = Some("https://env.example".into());
        assert_eq!(
            registry(None, &environment).unwrap(),
            url("https://env.example/")
        );
        let flag = url("file:///srv/tree");
        assert_eq!(registry(Some(&flag), &environment).unwrap(), flag);
    }

    #[test]
    fn no_registry_anywhere_is_a_user_error_naming_all_three_ways() {
        let dir = tempfile::tempdir().unwrap();
        let error = registry(None, &environment(dir.path())).unwrap_err();
        assert_eq!(
            crate::error::exit_status(&error),
            crate::ExitStatus::Failure
        );
        let hint = crate::error::hint(&error).unwrap();
        assert!(hint.contains("--registry URL"), "{hint}");
        assert!(hint.contains("SKILLPKG_REGISTRY=URL"), "{hint}");
        let config_file = dir.path().join("skillpkg/config.toml");
        assert!(hint.contains(&config_file.display().to_string()), "{hint}");
    }

    #[test]
    fn bad_registry_values_name_where_they_came_from() {
        let dir = tempfile::tempdir().unwrap();
        let mut environment = environment(dir.path());
        write_config(dir.path(), "registry = \"ftp://example.com\"\n");
        let error = registry(None, &environment).unwrap_err();
        assert!(error.to_string().contains("config.toml"), "{error}");

        write_config(dir.path(), "registry = [\n");
        let error = registry(None, &environment).unwrap_err();
        assert!(error.to_string().contains("is not valid"), "{error}");

        environment.registry = Some("ftp://nonsense".into());
        let error = registry(None, &environment).unwrap_err();
        assert!(error.to_string().contains("SKILLPKG_REGISTRY"), "{error}");
    }

    #[test]
    fn tokens_come_from_the_flag_then_the_environment_then_the_credentials_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut environment = environment(dir.path());
        let local = url("http://127.0.0.1:8080");
        assert!(token(None, &environment, &local).unwrap().is_none());
        let error = require_token(None, &environment, &local).unwrap_err();
        let hint = crate::error::hint(&error).unwrap();
        assert!(
            hint.contains("skillpkg login --registry http://127.0.0.1:8080/"),
            "{hint}"
        );
        assert!(hint.contains("SKILLPKG_TOKEN"), "{hint}");

        environment
            .credentials()
            .unwrap()
            .store(&local, &"from-file".parse().unwrap())
            .unwrap();
        let found = |flag: Option<&Token>, environment: &Environment| {
            token(flag, environment, &local)
                .unwrap()
                .unwrap()
                .expose()
                .to_owned()
        };
        assert_eq!(found(None, &environment), "from-file");
        // Another registry does not get this registry's token.
        assert!(
            token(None, &environment, &url("http://127.0.0.1:9090"))
                .unwrap()
                .is_none()
        );

        environment.token = Some(SecretString("from-env".into()));
        assert_eq!(found(None, &environment), "from-env");
        let flag: Token = "from-flag".parse().unwrap();
        assert_eq!(found(Some(&flag), &environment), "from-flag");
    }

    #[test]
    fn the_environment_never_shows_the_token() {
        let environment = Environment {
            token: Some(SecretString("s3cret".into())),
            ..Environment::default()
        };
        assert!(!format!("{environment:?}").contains("s3cret"));
    }
}
