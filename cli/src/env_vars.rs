//! Every environment variable skillpkg reads, in one place.
//!
//! No other module names an environment variable with a string literal: they
//! use these constants, so this list is the complete and documented set
//! (docs/client.md repeats it for users). An empty value counts as unset.

/// The default registry when `--registry` is not given: a base URL
/// (`https://`, `http://` or `file://`, or a plain path) of a static index
/// tree, or the name of a registry configured under `[registries.NAME]`.
/// Takes precedence over `[registry] url` in skills.toml and `registry` in
/// the user config file.
pub const SKILLPKG_REGISTRY: &str = "SKILLPKG_REGISTRY";

/// The API token of the default registry when `--token` is not given.
/// Takes precedence over a `token-command` and the credentials file, and
/// comes after [`registry_token`]'s variable. Never printed.
pub const SKILLPKG_TOKEN: &str = "SKILLPKG_TOKEN";

/// The start of `SKILLPKG_REGISTRY_<NAME>_TOKEN`: see [`registry_token`].
pub const SKILLPKG_REGISTRY_TOKEN_PREFIX: &str = "SKILLPKG_REGISTRY_";
/// The end of `SKILLPKG_REGISTRY_<NAME>_TOKEN`: see [`registry_token`].
pub const SKILLPKG_REGISTRY_TOKEN_SUFFIX: &str = "_TOKEN";

/// Returns the variable that holds the token of the registry named `name`:
/// `SKILLPKG_REGISTRY_<NAME>_TOKEN`, the name uppercased with `-` as `_`
/// (`corp-eu` reads `SKILLPKG_REGISTRY_CORP_EU_TOKEN`). It takes precedence
/// over [`SKILLPKG_TOKEN`], a `token-command` and the credentials file, and
/// comes after `--token`. Never printed.
pub fn registry_token(name: &str) -> String {
    format!(
        "{SKILLPKG_REGISTRY_TOKEN_PREFIX}{}{SKILLPKG_REGISTRY_TOKEN_SUFFIX}",
        name.to_ascii_uppercase().replace('-', "_")
    )
}

/// The folder that holds `skillpkg/config.toml` and
/// `skillpkg/credentials.toml`, instead of the platform's user config folder
/// (`$XDG_CONFIG_HOME` or `~/.config` on Linux, `~/Library/Application
/// Support` on macOS, `%APPDATA%` on Windows).
pub const SKILLPKG_CONFIG_DIR: &str = "SKILLPKG_CONFIG_DIR";

/// Any non-empty value turns colours off (<https://no-color.org>). Read by
/// `anstream`, not by skillpkg's code; listed so this list is complete.
pub const NO_COLOR: &str = "NO_COLOR";

/// The secret signing key itself (the text of a minisign secret key file),
/// for CI secrets, when `--key` is not given. Takes precedence over
/// `signing-key` in the user config file. Never printed.
pub const SKILLPKG_SIGNING_KEY: &str = "SKILLPKG_SIGNING_KEY";

/// The password of an encrypted signing key. Without it, skillpkg asks on
/// the terminal, and fails (naming this variable) when there is none.
/// Never printed.
pub const SKILLPKG_KEY_PASSWORD: &str = "SKILLPKG_KEY_PASSWORD";

/// Set by GitHub Actions; with `GITHUB_SERVER_URL`, `GITHUB_REPOSITORY`,
/// `GITHUB_RUN_ID` and `GITHUB_RUN_ATTEMPT` it names the CI run in
/// provenance (`publish --provenance`).
pub const GITHUB_ACTIONS: &str = "GITHUB_ACTIONS";
/// See [`GITHUB_ACTIONS`].
pub const GITHUB_SERVER_URL: &str = "GITHUB_SERVER_URL";
/// See [`GITHUB_ACTIONS`].
pub const GITHUB_REPOSITORY: &str = "GITHUB_REPOSITORY";
/// See [`GITHUB_ACTIONS`].
pub const GITHUB_RUN_ID: &str = "GITHUB_RUN_ID";
/// See [`GITHUB_ACTIONS`].
pub const GITHUB_RUN_ATTEMPT: &str = "GITHUB_RUN_ATTEMPT";
/// Set by most CI systems; provenance then names the builder `ci`.
pub const CI: &str = "CI";

/// Codex's home folder; the user-level `codex` target is `$CODEX_HOME/skills`
/// (default `~/.codex/skills`), and `scopes`, `prompt` and `select --host
/// codex` read skills there.
pub const CODEX_HOME: &str = "CODEX_HOME";

/// Claude Code's configuration folder, instead of `~/.claude`; with it set,
/// Claude Code's user file is `$CLAUDE_CONFIG_DIR/.claude.json`, which
/// `skillpkg mcp install --agent claude-code --global` edits.
pub const CLAUDE_CONFIG_DIR: &str = "CLAUDE_CONFIG_DIR";

/// The GitHub Copilot CLI's folder, instead of `~/.copilot`; `skillpkg mcp
/// install --agent copilot --global` edits `$COPILOT_HOME/mcp-config.json`,
/// and `init` looks for Copilot there.
pub const COPILOT_HOME: &str = "COPILOT_HOME";

/// The home folder. `init` looks for the agents installed on this machine
/// below it (docs/agents.md); without it, the platform's home folder.
pub const HOME: &str = "HOME";

/// The user's configuration folder (default `~/.config`), where some agents
/// keep theirs (`$XDG_CONFIG_HOME/opencode`); `init` looks there for them.
pub const XDG_CONFIG_HOME: &str = "XDG_CONFIG_HOME";

/// The folders agents move their own folder to, instead of the one in the
/// home folder; `init` looks there for them (docs/agents.md): CodeWhale
/// (`~/.codewhale`).
pub const CODEWHALE_HOME: &str = "CODEWHALE_HOME";
/// Mistral Vibe's folder, instead of `~/.vibe`. See [`CODEWHALE_HOME`].
pub const VIBE_HOME: &str = "VIBE_HOME";
/// Hermes Agent's folder, instead of `~/.hermes`. See [`CODEWHALE_HOME`].
pub const HERMES_HOME: &str = "HERMES_HOME";
/// Autohand Code's folder, instead of `~/.autohand`. See [`CODEWHALE_HOME`].
pub const AUTOHAND_HOME: &str = "AUTOHAND_HOME";
/// Grok Build's folder, instead of `~/.grok`. See [`CODEWHALE_HOME`].
pub const GROK_HOME: &str = "GROK_HOME";
/// Sarvam Code's folder, instead of `~/.sarvam`. See [`CODEWHALE_HOME`].
pub const SARVAM_HOME: &str = "SARVAM_HOME";
/// Windows' roaming application data folder, where Zed keeps its
/// configuration (`%APPDATA%\Zed`); `init` looks there for it.
pub const APPDATA: &str = "APPDATA";
/// A Flatpak's configuration folder, where a Flatpak Zed keeps its own;
/// `init` looks there for it.
pub const FLATPAK_XDG_CONFIG_HOME: &str = "FLATPAK_XDG_CONFIG_HOME";

/// The folder of skillpkg's download cache (archives, and index files with
/// their ETags), instead of the platform's user cache folder
/// (`$XDG_CACHE_HOME` or `~/.cache` on Linux).
pub const SKILLPKG_CACHE_DIR: &str = "SKILLPKG_CACHE_DIR";

/// The folder where skillpkg keeps what it trusts of each registry's signed
/// metadata (the pinned root, the last sequence numbers seen), instead of
/// the platform's user state folder (`$XDG_STATE_HOME/skillpkg` or
/// `~/.local/state/skillpkg` on Linux).
pub const SKILLPKG_STATE_DIR: &str = "SKILLPKG_STATE_DIR";

/// The folder of the user's own skills.toml and skills.lock, those
/// `--global` commands (`add -g`, `install -g`, `list -g`) work on, instead
/// of `skillpkg/global` in the platform's user data folder
/// (`$XDG_DATA_HOME` or `~/.local/share` on Linux).
pub const SKILLPKG_GLOBAL_DIR: &str = "SKILLPKG_GLOBAL_DIR";

/// How many seconds (a whole number above 0; default 30) a request to a
/// registry may wait for the server's next bytes, headers or body, before it
/// is given up (and retried, like any network failure).
pub const SKILLPKG_HTTP_TIMEOUT: &str = "SKILLPKG_HTTP_TIMEOUT";

/// What `-v` logs, in `RUST_LOG`'s syntax (`skillpkg=debug`,
/// `skillpkg::client=trace,gix=info`): set, it takes the place of the level
/// `-v`, `-vv` and `-vvv` choose, and logs without them too.
pub const SKILLPKG_LOG: &str = "SKILLPKG_LOG";

/// For tests only: any non-empty value removes the waits between retries of
/// a failed download (the retries themselves still happen).
pub const SKILLPKG_TEST_NO_RETRY_DELAY: &str = "SKILLPKG_TEST_NO_RETRY_DELAY";

/// Every variable above that `skillpkg config` shows when it is set, and
/// whether its value is a secret (shown as `****`). The
/// `SKILLPKG_REGISTRY_<NAME>_TOKEN` variables are secrets too.
pub const SHOWN: &[(&str, bool)] = &[
    (SKILLPKG_REGISTRY, false),
    (SKILLPKG_TOKEN, true),
    (SKILLPKG_CONFIG_DIR, false),
    (SKILLPKG_CACHE_DIR, false),
    (SKILLPKG_STATE_DIR, false),
    (SKILLPKG_GLOBAL_DIR, false),
    (SKILLPKG_SIGNING_KEY, true),
    (SKILLPKG_KEY_PASSWORD, true),
    (SKILLPKG_HTTP_TIMEOUT, false),
    (SKILLPKG_LOG, false),
    (CODEX_HOME, false),
    (CLAUDE_CONFIG_DIR, false),
    (COPILOT_HOME, false),
    (NO_COLOR, false),
    (CI, false),
];
