//! The command line, as clap structs. No logic lives here.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::client::token::Token;
use crate::spec::{SkillSpec, SkillVersion};

/// A package manager for Agent Skills.
///
/// skillpkg validates, packs, publishes and installs Agent Skills: folders
/// with a SKILL.md that Claude Code, Codex, GitHub Copilot and other agents
/// read from their skills folders.
#[derive(Debug, Parser)]
#[command(name = "skillpkg", version = env!("SKILLPKG_LONG_VERSION"), max_term_width = 100)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,

    #[command(flatten)]
    pub global: GlobalArgs,
}

/// Options every command takes.
#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// Print only results and errors, no status lines.
    #[arg(long, short, global = true)]
    pub quiet: bool,

    /// Log what skillpkg does on stderr: -v each step (requests, cache,
    /// fetches, resolution), -vv details, -vvv everything, dependencies'
    /// too. SKILLPKG_LOG (`RUST_LOG` syntax) chooses instead.
    #[arg(long, short, action = clap::ArgAction::Count, global = true, conflicts_with = "quiet")]
    pub verbose: u8,

    /// When to use colour: `auto` uses it on a terminal unless NO_COLOR is set.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto, global = true, value_name = "WHEN")]
    pub color: ColorChoice,
}

/// When to use colour.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

impl ColorChoice {
    /// Makes this choice the process-wide default for styled output.
    pub fn write_global(self) {
        let choice = match self {
            Self::Auto => anstream::ColorChoice::Auto,
            Self::Always => anstream::ColorChoice::Always,
            Self::Never => anstream::ColorChoice::Never,
        };
        choice.write_global();
    }
}

#[derive(Debug, Subcommand)]
// Each command's arguments are built only for the command that runs: a run
// of one command need not build the other thirty.
#[command(defer = true)]
pub enum Command {
    /// Check skills against the Agent Skills specification.
    ///
    /// Each PATH is a skill folder (or its SKILL.md), or a folder that is
    /// searched for skills (hidden folders such as .claude/skills included;
    /// .git and node_modules are skipped). Prints every problem with its code, file, line
    /// and column, then `N valid, M invalid, K warnings`. Exits with 1 when
    /// any skill is invalid. Codes are listed in docs/skill-format.md.
    #[command(after_help = VALIDATE_EXAMPLES)]
    Validate(ValidateArgs),

    /// Look for malicious or risky content in skills.
    ///
    /// Reads every file of each skill (SKILL.md, references, scripts, and
    /// assets that are text) and reports what it finds, each with a rule
    /// id, a severity (info, low, medium, high), the file, line and column,
    /// the excerpt (hidden characters spelled out, secrets masked), why it
    /// matters and how to fix it: hidden Unicode, `!`command`` lines,
    /// secrets, dangerous allowed-tools and permissions, download-and-run,
    /// reverse shells, credential theft, persistence, drop sites, prompt
    /// injection, executables and archives. Nothing is run. Findings the
    /// project accepts are listed in skills.toml's `[audit] allow`, and are
    /// still shown as suppressed. Exits with 1 when a finding is at or
    /// above --fail-on. The rules are listed in docs/security.md.
    #[command(after_help = AUDIT_EXAMPLES)]
    Audit(AuditArgs),

    /// Create a new skill folder from a template
    ///
    /// Writes DIR/NAME (DIR is --path, default the working folder): a
    /// SKILL.md with `name`, `description`, `metadata.version: "0.1.0"` and
    /// a body that says what to write. With --tools, the frontmatter also
    /// declares one tool, `count-words` (input and output JSON schemas that
    /// OpenAI's strict mode accepts, its runtime and entrypoint), least-
    /// privilege `permissions` and a `safety` block, and
    /// scripts/count-words.py (or .mjs, .sh) is its executable script, which
    /// reads one JSON object on stdin and writes one on stdout. The bash
    /// script needs jq. An invalid NAME is refused with the valid name it
    /// most likely meant; an existing DIR/NAME is refused and left as it is.
    /// The folder is built beside DIR/NAME and renamed into place, so it
    /// appears whole or not at all.
    #[command(verbatim_doc_comment, after_help = NEW_EXAMPLES)]
    New(NewArgs),

    /// Pack a skill into a deterministic .tgz, ready to publish.
    ///
    /// Validates the skill first (errors stop the pack, warnings are shown),
    /// then writes `<name>-<version>.tgz`: sorted entries, fixed owners, modes
    /// and times, so the same folder always gives the same bytes. Refuses
    /// symlinks, paths that are not portable, more than 10,000 entries and
    /// skills over 8 MiB (unpacked or packed), and a skill file not named
    /// exactly SKILL.md. Left out: files listed in `.skillignore` (gitignore
    /// syntax), `.git/`, `__pycache__/`, `.DS_Store`, and earlier tarballs of
    /// the skill (`<name>-*.tgz`) at its root.
    #[command(after_help = PACK_EXAMPLES)]
    Pack(PackArgs),

    /// Validate, pack and upload a skill to a registry.
    ///
    /// Validates and packs exactly like `skillpkg pack` (nothing is written
    /// to disk), then uploads the tarball to the registry's API with your
    /// token. A published version is immutable: it can be yanked, never
    /// replaced. With --dry-run, shows what would be uploaded and where, and
    /// needs no token.
    #[command(after_help = PUBLISH_EXAMPLES)]
    Publish(PublishArgs),

    /// Yank a published version, or undo a yank.
    ///
    /// A yanked version stays downloadable (so existing lockfiles keep
    /// working) but is no longer picked for new installs, and is marked
    /// yanked in `skillpkg info`. Only the skill's owners may yank.
    #[command(after_help = YANK_EXAMPLES)]
    Yank(YankArgs),

    /// Store a token for a registry, after checking it with the registry.
    ///
    /// Reads the token from --token, else one line from stdin (prompting
    /// only when stdin is a terminal), asks the registry whose token it is,
    /// and saves it in `<config dir>/skillpkg/credentials.toml` (mode 0600)
    /// under the registry's URL (for `--registry NAME`, its `index`). Later
    /// `publish`, `yank` and reads of that registry (when it is private)
    /// use it. The config dir is $SKILLPKG_CONFIG_DIR, else the
    /// user config folder (`~/.config` on Linux).
    #[command(after_help = LOGIN_EXAMPLES)]
    Login(LoginArgs),

    /// Search a registry's skills by name and description.
    ///
    /// Every word of QUERY must occur (ignoring case) in a skill's name or
    /// description. Skills whose name matches come first. Shows each skill's
    /// latest version that is not yanked.
    #[command(after_help = SEARCH_EXAMPLES)]
    Search(SearchArgs),

    /// Show a skill's details and versions.
    ///
    /// Shows the latest version that is not yanked, or NAME@VERSION: its
    /// description, size, checksum, tree hash, files, dependencies, signer
    /// and publication time, then every version with yanks marked.
    #[command(after_help = INFO_EXAMPLES)]
    Info(InfoArgs),

    /// Create or show the signing key that `publish` and `sign` use.
    ///
    /// Keys are minisign keys: `minisign -Vm FILE -P KEY` verifies every
    /// skillpkg signature.
    #[command(subcommand)]
    #[command(after_help = KEY_EXAMPLES)]
    Key(KeyCommand),

    /// Start a project: write skills.toml.
    ///
    /// The targets come from --agent (the folders those agents read) or
    /// --target; with neither, it looks for the agents installed on this
    /// machine (their folders in the home folder) and says which it found:
    /// on a terminal it asks which agents the project uses, offering those,
    /// and elsewhere it takes those (claude when there are none). The
    /// registry comes from --registry, if given.
    #[command(after_help = INIT_EXAMPLES)]
    Init(InitArgs),

    /// Add skills to skills.toml and install them.
    ///
    /// NAME or NAME@REQ (a semver requirement; default: ^ the newest
    /// version). --target adds targets to the manifest too; --registry NAME
    /// takes the skills from that registry (`registry = "NAME"` in their
    /// entries). A path (starting with `./`, `../`, `/` or `path:`) takes
    /// the skill from that folder, read again at every install; a git
    /// repository is pinned by commit, a discovery index or a tarball by
    /// digest. A source of several skills needs --skill or --all (or asks,
    /// on a terminal).
    #[command(after_help = ADD_EXAMPLES)]
    Add(AddArgs),

    /// Remove skills from skills.toml and from every target.
    ///
    /// Only folders skillpkg installed are removed.
    #[command(after_help = REMOVE_EXAMPLES, visible_aliases = ["uninstall", "rm"])]
    Remove(RemoveArgs),

    /// Install what skills.toml asks for, as skills.lock pins it.
    ///
    /// Resolves and updates skills.lock when it does not satisfy
    /// skills.toml (not with --locked). Every archive is checked against the
    /// lock's sha256 and its publisher's signature before it is unpacked.
    #[command(after_help = INSTALL_EXAMPLES)]
    Install(InstallArgs),

    /// Resolve skills.toml and write skills.lock, installing nothing.
    #[command(after_help = LOCK_EXAMPLES)]
    Lock(InstallArgs),

    /// Update skills (all, or the ones named) to the newest versions
    /// skills.toml allows, and install them.
    #[command(after_help = UPDATE_EXAMPLES)]
    Update(UpdateArgs),

    /// List the installed skills per target, and whether their files still
    /// match skills.lock.
    #[command(after_help = LIST_EXAMPLES, visible_alias = "ls")]
    List(ListArgs),

    /// Copy everything skills.lock needs into DIR: a static tree that
    /// installs with no network (`skillpkg install --registry DIR`).
    ///
    /// Every archive is checked against the lock's sha256 and pinned signer
    /// before it is written.
    #[command(after_help = VENDOR_EXAMPLES)]
    Vendor(VendorArgs),

    /// Copy a registry into a static tree, verified and incremental.
    ///
    /// Copies the index files, archives, signatures, provenance, keys and
    /// signed metadata of SOURCE (all skills with --all, or those matching
    /// --skill) into DEST, which nginx, S3, a CDN or `skillpkg-registry
    /// serve` can serve unchanged. Every archive's sha256 and signature are
    /// checked before it is written, and the source's signed metadata
    /// (when it has some) before anything is. Run it again to fetch only
    /// what is new; an interrupted run resumes. Point clients at DEST with
    /// `mirror = "URL"` in the registry's config (docs/registries.md).
    #[command(after_help = MIRROR_EXAMPLES)]
    Mirror(MirrorArgs),

    /// Show the dependency tree of the project's skills, from skills.lock.
    #[command(after_help = TREE_EXAMPLES)]
    Tree(TreeArgs),

    /// Show locked skills that have newer versions: the newest skills.toml
    /// allows (wanted) and the newest there is (latest).
    #[command(after_help = OUTDATED_EXAMPLES)]
    Outdated(OutdatedArgs),

    /// Sign an archive: write FILE.tgz.minisig.
    ///
    /// The signature's trusted comment binds it to the skill's name, version
    /// and the archive's sha256 (`skillpkg/1<TAB>name@version<TAB>sha256:...`),
    /// read from the archive's own SKILL.md (or its `<name>-<version>.tgz`
    /// file name). The key comes from --key, $SKILLPKG_SIGNING_KEY, or
    /// `signing-key` in the user config file, else the default key.
    #[command(after_help = SIGN_EXAMPLES)]
    Sign(SignArgs),

    /// Verify who signed an archive, and where it was built.
    ///
    /// TARGET is NAME[@VERSION] (from the registry: the archive, its
    /// signature, the publisher keys and the provenance it serves) or a local
    /// FILE.tgz (with FILE.tgz.minisig, or --sig, and the publisher's --key).
    /// Checks the signature (prehashed Ed25519), the trusted comment's name,
    /// version and sha256, and the provenance, before unpacking anything.
    #[command(after_help = VERIFY_EXAMPLES)]
    Verify(VerifyArgs),

    /// List the skills each agent would load from here, in its precedence.
    ///
    /// For every folder the agent reads (see docs/hosts.md), from the highest
    /// precedence down: each skill folder, and whether the agent uses it
    /// (active), uses another skill of the same name from a higher folder
    /// instead (shadowed), or skips it (skipped, with the first error code:
    /// no readable SKILL.md, or no valid name and description).
    #[command(after_help = SCOPES_EXAMPLES)]
    Scopes(ScopesArgs),

    /// Print the skills block of a system prompt: <available_skills>.
    ///
    /// One <skill> with <name>, <description> and <location> (the absolute
    /// path of SKILL.md) for each skill the agent uses (shadowed and skipped
    /// ones are left out), as the Agent Skills specification shows it; with
    /// --active, an <active_skills> block with the bodies of those skills,
    /// in the order given. All text is XML-escaped.
    #[command(after_help = PROMPT_EXAMPLES)]
    Prompt(PromptArgs),

    /// Pick the skills a request calls for, by their `when_to_use` triggers.
    ///
    /// Runs the deterministic selection of the Universal Agent Skill spec: a
    /// skill or tool the request names (as a whole word, or $name or /name)
    /// is selected outright; otherwise each skill scores +3 per file type a
    /// file matches (--file, and words of the request that look like file
    /// names), +2 per mention found in the request as a whole word (ignoring
    /// case), +1 per --intent it lists, and is selected at --threshold or
    /// above. Shows every skill's score and the triggers behind it.
    #[command(after_help = SELECT_EXAMPLES)]
    Select(SelectArgs),

    /// List a skill's tools, export them for an agent host, or write tools.json.
    ///
    /// Tools are what a skill declares under `tools` in its SKILL.md
    /// frontmatter (the Universal Agent Skill extension): a name, a
    /// description, JSON Schemas for input and output, and the program that
    /// runs them. Without a subcommand, lists them: name, runtime,
    /// entrypoint and description (--json for scripts). SKILL_DIR is the
    /// skill folder (default: the current folder). A skill that does not
    /// validate is refused with its diagnostics, and nothing is written.
    /// See docs/tools.md.
    #[command(args_conflicts_with_subcommands = true, after_help = TOOLS_EXAMPLES)]
    Tools(ToolsArgs),

    /// Serve the project's skills to an agent over MCP (stdio, or HTTP).
    ///
    /// An MCP server over the skills the agent (--host) would use from the
    /// project: the tools skills_load, skills_unload, skills_read and
    /// skills_run_script (spec 001's skills.load, skills.unload, skills.read
    /// and skills.run_script; MCP clients refuse dots in tool names), each
    /// loaded skill's own tools, the prompts available_skills and
    /// active_skills, and MCP's Skills Extension (skills/list, skills/get,
    /// every file a skill:// resource with its sha256). Scripts and tools
    /// run sandboxed. A skill skillpkg installed must match skills.lock, or
    /// it is not served. Protocol versions 2025-06-18 to 2026-07-28, on
    /// stdio and streamable HTTP. State is per connection; where the
    /// connection is not a session (HTTP at 2026-07-28), skills_load
    /// returns a session handle the other tools take back. Diagnostics go
    /// to stderr; stdout carries only the protocol. `skillpkg mcp install
    /// --agent AGENT` registers it with an agent (Claude Code, Codex,
    /// Copilot, VS Code, Cursor) and `skillpkg mcp uninstall` takes it out
    /// again; see docs/runtime.md.
    #[cfg(feature = "runtime")]
    #[command(args_conflicts_with_subcommands = true, after_help = MCP_EXAMPLES)]
    Mcp(McpArgs),

    /// Show where skillpkg reads and writes, and what is configured.
    ///
    /// Prints the user config file, the credentials file, the default
    /// signing key, the cache and state folders and the project's
    /// skills.toml (each marked when absent); the default registry and
    /// every configured registry, with where it is defined; and the
    /// variables skillpkg reads that are set. Tokens, keys and passwords are
    /// shown as ****.
    #[command(after_help = CONFIG_EXAMPLES)]
    Config(ConfigArgs),

    /// Print a shell completion script.
    ///
    /// Writes the script for SHELL (bash, zsh, fish, powershell or elvish)
    /// on stdout; load it from the shell's startup file, as the examples
    /// show. It completes commands, options and their fixed values.
    #[command(after_help = COMPLETIONS_EXAMPLES)]
    Completions(CompletionsArgs),

    /// Write the manual pages.
    ///
    /// Without --out, prints the page of skillpkg itself (roff) on stdout.
    /// With --out DIR, writes skillpkg.1 and one page per command
    /// (skillpkg-publish.1, skillpkg-key-generate.1, ...) into DIR, which
    /// must exist.
    #[command(after_help = MAN_EXAMPLES)]
    Man(ManArgs),
}

const NEW_EXAMPLES: &str = "\
Examples:
  skillpkg new pdf-forms                                                 a skill in ./pdf-forms
  skillpkg new pdf-forms --description \"Fill PDF forms. Use when ...\"    with its description
  skillpkg new pdf-forms --tools --runtime node --path .claude/skills    with a tool";

const VALIDATE_EXAMPLES: &str = "\
Examples:
  skillpkg validate                                 the skill in the current folder
  skillpkg validate skills/ --strict                every skill below skills/, warnings as errors
  skillpkg validate . --host all                    which agent hosts accept it, and why not
  skillpkg validate pdf --allow unknown-key         leave one warning out
  skillpkg validate skills/ --json | jq '.summary'  for scripts";

const PACK_EXAMPLES: &str = "\
Examples:
  skillpkg pack                                      pack ./ as NAME-VERSION.tgz
  skillpkg pack skills/pdf --version 1.2.0 -o dist/  into dist/, at 1.2.0
  skillpkg pack --json | jq -r .sha256               the archive's checksum";

const PUBLISH_EXAMPLES: &str = "\
Examples:
  skillpkg publish --dry-run                                         what would be uploaded, where
  skillpkg publish skills/pdf --version 1.2.0                        sign and upload it
  skillpkg publish --registry corp --provenance                      to `corp`, with provenance
  SKILLPKG_REGISTRY_CORP_TOKEN=... skillpkg publish --registry corp  the token from the environment";

const YANK_EXAMPLES: &str = "\
Examples:
  skillpkg yank pdf@1.2.0 --reason 'breaks forms'  new resolves skip it; locks keep it
  skillpkg yank pdf@1.2.0 --undo                   make it resolvable again";

const LOGIN_EXAMPLES: &str = "\
Examples:
  skillpkg login                                    paste a token for the default registry
  skillpkg login --registry corp                    for the registry named `corp`
  echo \"$TOKEN\" | skillpkg login --registry corp    from a pipe, as scripts do";

const SEARCH_EXAMPLES: &str = "\
Examples:
  skillpkg search pdf                                  skills whose name or description match
  skillpkg search 'pdf forms' --limit 5                every word must match
  skillpkg search pdf --json | jq -r '.skills[].name'  names only";

const INFO_EXAMPLES: &str = "\
Examples:
  skillpkg info pdf-processing                         the latest version, and every version
  skillpkg info pdf-processing@1.2.0                   one version: files, checksum, signer
  skillpkg info pdf-processing --registry corp --json  from `corp`, for scripts";

const KEY_EXAMPLES: &str = "\
Examples:
  skillpkg key generate  a signing key, protected by a password
  skillpkg key show      its key id and public key, to publish";

const INIT_EXAMPLES: &str = "\
Examples:
  skillpkg init                                         the agents installed here (asks, on a terminal)
  skillpkg init --agent claude-code,codex,copilot       the fewest folders those agents read
  skillpkg init --agent cursor,windsurf --link          any agent of docs/agents.md; one copy, symlinks
  skillpkg init --target claude --target copilot        two agents' folders, by target
  skillpkg init --registry https://skills.example.com/  with a registry";

const ADD_EXAMPLES: &str = "\
Examples:
  skillpkg add pdf-processing                          the latest version, written as ^VERSION
  skillpkg add pdf-processing@~1.2 csv-insights        two skills, one with a requirement
  skillpkg add pdf --registry corp                     from the registry named `corp`
  skillpkg add -g pdf                                  for you, from anywhere: ~/.claude/skills, ~/.agents/skills
  skillpkg add ./skills/pdf                            from a folder, written `{ path = \"skills/pdf\" }`
  skillpkg add path:../shared --skill csv              one skill of a folder that holds several
  skillpkg add acme/skills/review@v1.2.0               from a GitHub repository's folder, at a tag
  skillpkg add git+https://git.example.com/s.git#main --all
                                                       every skill of any git repository, at `main`
  skillpkg add https://skills.example.com/ --skill notes
                                                       from a site's discovery index
  skillpkg add https://example.com/csv-2.0.0.tgz       from a tarball";

const REMOVE_EXAMPLES: &str = "\
Examples:
  skillpkg remove pdf-processing  from skills.toml, the lock and every target";

const INSTALL_EXAMPLES: &str = "\
Examples:
  skillpkg install                     what skills.toml asks for, as skills.lock pins it
  skillpkg install --locked            in CI: fail if skills.lock would change
  skillpkg install --frozen            --locked with no network: from the cache only
  skillpkg install --registry vendor/  from a folder `skillpkg vendor` wrote";

const LOCK_EXAMPLES: &str = "\
Examples:
  skillpkg lock           resolve and write skills.lock, installing nothing
  skillpkg lock --locked  check that skills.lock is up to date";

const UPDATE_EXAMPLES: &str = "\
Examples:
  skillpkg update                 every skill to the newest version its requirement allows
  skillpkg update pdf-processing  that one only (a git skill: where its branch is now)
  skillpkg update -g              the skills added with -g";

const LIST_EXAMPLES: &str = "\
Examples:
  skillpkg list                  the installed skills, their versions and folders
  skillpkg list -g --json        the ones added with -g, for scripts";

const VENDOR_EXAMPLES: &str = "\
Examples:
  skillpkg vendor vendor/                       everything skills.lock needs, verified
  skillpkg install --locked --registry vendor/  then install with no network";

const MIRROR_EXAMPLES: &str = "\
Examples:
  skillpkg mirror https://skills.example.com/ mirror/ --all            every skill, verified
  skillpkg mirror https://skills.example.com/ mirror/ --skill 'pdf-*'  the matching ones
  skillpkg mirror https://skills.example.com/ mirror/ --all            again: only what changed";

const TREE_EXAMPLES: &str = "\
Examples:
  skillpkg tree         the skills and what they depend on
  skillpkg tree --json  for scripts";

const OUTDATED_EXAMPLES: &str = "\
Examples:
  skillpkg outdated         locked, newest allowed, and latest versions
  skillpkg outdated --json  for scripts";

const SIGN_EXAMPLES: &str = "\
Examples:
  skillpkg sign pdf-1.2.0.tgz               write pdf-1.2.0.tgz.minisig with your key
  skillpkg sign pdf-1.2.0.tgz --key ci.key  with another key";

const VERIFY_EXAMPLES: &str = "\
Examples:
  skillpkg verify                                    the installed skills' files against skills.lock
  skillpkg verify pdf-processing@1.2.0               who signed it, where it was built
  skillpkg verify pdf-1.2.0.tgz --key publisher.pub  a local archive and its .minisig";

const KEY_GENERATE_EXAMPLES: &str = "\
Examples:
  skillpkg key generate                          the default key, protected by a password
  skillpkg key generate -o ci.key --no-password  an unprotected key for CI";

const KEY_SHOW_EXAMPLES: &str = "\
Examples:
  skillpkg key show                      the default key's id and public key
  skillpkg key show --key ci.key --json  another key's, for scripts";

const CONFIG_EXAMPLES: &str = "\
Examples:
  skillpkg config                          what a command run here would use
  skillpkg config --registry corp          with `corp` as the default registry
  skillpkg config --json | jq .registries  for scripts";

#[derive(Debug, Args)]
pub struct ConfigArgs {
    #[command(flatten)]
    pub registry: RegistryArgs,

    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

const COMPLETIONS_EXAMPLES: &str = "\
Examples:
  skillpkg completions bash > ~/.local/share/bash-completion/completions/skillpkg
  skillpkg completions zsh > ~/.zfunc/_skillpkg        with fpath+=~/.zfunc before compinit
  skillpkg completions fish > ~/.config/fish/completions/skillpkg.fish
  skillpkg completions powershell >> $PROFILE";

const MAN_EXAMPLES: &str = "\
Examples:
  skillpkg man | man -l -                          read the main page now
  skillpkg man --out ~/.local/share/man/man1       install every page for `man skillpkg-add`";

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to write the script for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write every page into this folder instead of printing the main one.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

#[cfg(feature = "runtime")]
const MCP_EXAMPLES: &str = "\
Examples:
  skillpkg mcp                                    serve ./ for Claude Code's folders
  skillpkg mcp --project ~/work/app --host codex  what Codex sees from ~/work/app
  skillpkg mcp --listen 127.0.0.1:8750            streamable HTTP at http://127.0.0.1:8750/mcp
  skillpkg mcp --listen 127.0.0.1:8750 --allow-origin http://localhost:6274
                                                  ...and MCP Inspector's web page
  skillpkg mcp --listen 0.0.0.0:8750 --token-file ~/.skillpkg-mcp-token
                                                  on the network, for bearers of the token
  skillpkg mcp --audit-log ~/.skillpkg-audit.jsonl  one JSON line per tool call
  skillpkg mcp --pass-env OCR_API_KEY             skills that declare it may read it
  skillpkg mcp install --agent claude-code        register it in ./.mcp.json for Claude Code
  skillpkg mcp install --agent codex --global     ...in ~/.codex/config.toml, for every project
  skillpkg mcp uninstall --agent claude-code      take it out again";

#[cfg(feature = "runtime")]
#[derive(Debug, Args)]
pub struct McpArgs {
    #[command(subcommand)]
    pub command: Option<McpCommand>,

    /// The project folder the agent works in (default: the current folder).
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,

    /// The agent whose skill folders to serve: claude-code (the default),
    /// codex or copilot.
    #[arg(long, value_name = "HOST", value_parser = parse_agent_host)]
    pub host: Option<skillpkg_index::skill::Host>,

    /// How many skills a session may have loaded at once.
    #[arg(long, value_name = "N", default_value_t = crate::runtime::session::DEFAULT_MAX_ACTIVE, value_parser = clap::builder::TypedValueParser::map(clap::value_parser!(u16).range(1..=256), usize::from))]
    pub max_active: usize,

    /// Serve installed skills even when their files differ from skills.lock.
    #[arg(long)]
    pub allow_modified: bool,

    /// Serve the skills as read at start. By default the server watches
    /// the skill folders and skills.lock, and serves a skill installed,
    /// updated or removed while it runs as it is then (checked and vetted
    /// again), telling clients that the list changed.
    #[arg(long)]
    pub no_watch: bool,

    /// Let skill SKILL have the filesystem grant GLOB (exactly as its
    /// SKILL.md writes it) although it reaches `.git`, `.claude`, another
    /// agent's configuration, a skills folder, credentials or the home
    /// folder, which is refused otherwise. Repeat it for each pair. See
    /// docs/runtime-sandbox.md.
    #[arg(long = "allow-grant", value_name = "SKILL=GLOB")]
    pub allow_grant: Vec<crate::runtime::protected::AllowedGrant>,

    /// Serve skill SKILL although its files audit `high` and skills.lock
    /// does not record that verdict for them (as `skillpkg install
    /// --allow-risk` does). Repeat it for each skill. See docs/security.md.
    #[arg(long = "allow-risk", value_name = "SKILL")]
    pub allow_risk: Vec<skillpkg_index::skill::SkillName>,

    /// How long a whole script or tool call may take, in seconds: waiting
    /// for the client (its roots, a confirmation), preparing and running.
    /// At the end the script's whole process group is killed.
    #[arg(long, value_name = "SECONDS", default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub timeout: u64,

    /// How long to wait for the client to answer roots/list, in seconds.
    /// A client that does not answer in time gets the project folder as
    /// the root, and is not asked again until it sends
    /// notifications/roots/list_changed (or 5 minutes pass).
    #[arg(long, value_name = "SECONDS", default_value_t = crate::runtime::peer::DEFAULT_CLIENT_TIMEOUT.as_secs(), value_parser = clap::value_parser!(u64).range(1..=3_600))]
    pub client_timeout: u64,

    /// Let skills that declare the secret NAME read it from this server's
    /// environment. Repeat it, or give a comma-separated list. No other
    /// variable reaches a skill, whatever it declares.
    #[arg(long = "pass-env", value_name = "NAME", value_delimiter = ',', value_parser = parse_env_var_name)]
    pub pass_env: Vec<String>,

    /// Run scripts and tools without the Landlock sandbox: with every
    /// permission of the user running the server. Only for kernels without
    /// Landlock, and only for skills you trust.
    #[arg(long)]
    pub unsandboxed: bool,

    /// Append one JSON line per tool call to FILE (created with mode 0600):
    /// spec 003's telemetry fields, secrets redacted. See docs/runtime.md.
    #[arg(long, value_name = "FILE")]
    pub audit_log: Option<PathBuf>,

    /// Serve streamable HTTP on this loopback address (such as
    /// 127.0.0.1:8750; port 0 picks a free one) at /mcp, instead of stdio.
    /// Prints `listening on http://ADDRESS/mcp` on stdout when ready.
    #[arg(long, value_name = "ADDRESS")]
    pub listen: Option<std::net::SocketAddr>,

    /// With --listen: also accept requests a web page at ORIGIN sends (such
    /// as http://localhost:6274 for MCP Inspector). Pages served from this
    /// server's own address are accepted without it; any other Origin is
    /// refused, so that a site the user visits cannot drive the server.
    /// Repeat it for each origin; `:*` as the port matches any port.
    #[arg(long = "allow-origin", value_name = "ORIGIN", requires = "listen", value_parser = parse_origin)]
    pub allow_origin: Vec<String>,

    /// With --listen: require `Authorization: Bearer <token>` on every
    /// request, the token being the one in FILE (made there on first use,
    /// mode 0600, and shown once). Needed to listen on an address other
    /// than loopback; on a machine other users share, use it on loopback
    /// too. See docs/runtime.md.
    #[arg(long = "token-file", value_name = "FILE", requires = "listen")]
    pub token_file: Option<PathBuf>,
}

#[cfg(feature = "runtime")]
#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Register `skillpkg mcp` with an agent: write its MCP configuration.
    ///
    /// Adds the server NAME (default `skillpkg`) to the file AGENT reads
    /// its MCP servers from, in the project (default: the current folder)
    /// or, with --global, in the user's configuration: claude-code
    /// `.mcp.json` (--global: `~/.claude.json`), codex `.codex/config.toml`
    /// (`$CODEX_HOME/config.toml`), copilot `.github/mcp.json`
    /// (`$COPILOT_HOME/mcp-config.json`), vscode `.vscode/mcp.json` (the
    /// user profile's `mcp.json`), cursor `.cursor/mcp.json`
    /// (`~/.cursor/mcp.json`). The agent starts this skillpkg (its absolute
    /// path, or --command) as `mcp` on stdio, with `--host` for its skill
    /// folders and the serve options given here. Everything else in the
    /// file is kept: other servers, unknown keys, their order, and in TOML
    /// comments and layout. Running it again changes nothing; an entry of
    /// that name that is not skillpkg's is refused unless --force. A file
    /// that does not parse is refused with its line, and left as it is.
    /// Writes are atomic and keep the file's permissions.
    #[command(after_help = MCP_INSTALL_EXAMPLES)]
    Install(Box<McpInstallArgs>),

    /// Remove the entry `mcp install` wrote from an agent's configuration.
    ///
    /// Removes the server NAME (default `skillpkg`) from the file AGENT
    /// reads, only if it is skillpkg's (its command is a `skillpkg` and
    /// its first argument `mcp`), and nothing else: in TOML every other
    /// byte stays, JSON is written back as the agents write it. No entry
    /// of that name is not an error: it says so and exits 0, writing
    /// nothing.
    #[command(after_help = MCP_UNINSTALL_EXAMPLES)]
    Uninstall(McpSetupArgs),
}

#[cfg(feature = "runtime")]
const MCP_INSTALL_EXAMPLES: &str = "\
Examples:
  skillpkg mcp install --agent claude-code           ./.mcp.json, for everyone working on the project
  skillpkg mcp install --agent claude-code --global  ~/.claude.json, for every project
  skillpkg mcp install --agent codex --global        ~/.codex/config.toml ($CODEX_HOME)
  skillpkg mcp install --agent vscode --dry-run      show the change to .vscode/mcp.json, write nothing
  skillpkg mcp install --agent cursor --pass-env OCR_API_KEY --audit-log ~/mcp-audit.jsonl
                                                     with serve options
  skillpkg mcp install --agent claude-code --command skillpkg
                                                     start `skillpkg` from PATH, not this one's path
  skillpkg mcp install --agent copilot --global --json  for scripts";

#[cfg(feature = "runtime")]
const MCP_UNINSTALL_EXAMPLES: &str = "\
Examples:
  skillpkg mcp uninstall --agent claude-code           from ./.mcp.json
  skillpkg mcp uninstall --agent codex --global        from ~/.codex/config.toml
  skillpkg mcp uninstall --agent vscode --name skills  the entry installed with --name skills";

/// The agents `skillpkg mcp install` can set up.
#[cfg(feature = "runtime")]
const SETUP_AGENTS: [&str; 5] = ["claude-code", "codex", "copilot", "vscode", "cursor"];

/// Which agent's file, where, and which entry.
#[cfg(feature = "runtime")]
#[derive(Debug, Args)]
pub struct McpSetupArgs {
    /// The agent: claude-code, codex, copilot, vscode or cursor.
    #[arg(long, value_name = "AGENT", value_parser = clap::builder::TypedValueParser::map(
        clap::builder::PossibleValuesParser::new(SETUP_AGENTS),
        |agent: String| agent.parse::<crate::runtime::setup::Agent>().expect("a listed agent"),
    ))]
    pub agent: crate::runtime::setup::Agent,

    /// The user's configuration, for every project, instead of the
    /// project's.
    #[arg(long)]
    pub global: bool,

    /// The name of the server entry.
    #[arg(long, value_name = "NAME", default_value = crate::runtime::setup::DEFAULT_NAME)]
    pub name: crate::runtime::setup::ServerName,

    /// The project whose file to edit (default: the current folder). With
    /// --global, install also pins the server to this project
    /// (`--project DIR` in its arguments).
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,

    /// Print the change as a diff, and write nothing.
    #[arg(long)]
    pub dry_run: bool,

    /// Print what was done as JSON on stdout: agent, scope, file, name,
    /// action (added, updated, unchanged, removed or absent).
    #[arg(long)]
    pub json: bool,
}

/// `skillpkg mcp install`: where, and the serve options to start with.
#[cfg(feature = "runtime")]
#[derive(Debug, Args)]
pub struct McpInstallArgs {
    #[command(flatten)]
    pub setup: McpSetupArgs,

    /// Replace an entry of that name that is not skillpkg's.
    #[arg(long)]
    pub force: bool,

    /// The program the agent starts (default: the absolute path of this
    /// skillpkg). `skillpkg` finds it on the agent's PATH instead, for a
    /// file the team shares.
    #[arg(long = "command", value_name = "PROGRAM")]
    pub program: Option<String>,

    /// Serve option: whose skill folders to serve (default: the agent's
    /// own; claude-code for cursor).
    #[arg(long, value_name = "HOST", value_parser = parse_agent_host)]
    pub host: Option<skillpkg_index::skill::Host>,

    /// Serve option: how many skills a session may have loaded at once.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=256))]
    pub max_active: Option<u16>,

    /// Serve option: serve installed skills that differ from skills.lock.
    #[arg(long)]
    pub allow_modified: bool,

    /// Serve option: let skill SKILL have the protected grant GLOB.
    #[arg(long = "allow-grant", value_name = "SKILL=GLOB")]
    pub allow_grant: Vec<crate::runtime::protected::AllowedGrant>,

    /// Serve option: serve skill SKILL although it audits `high`.
    #[arg(long = "allow-risk", value_name = "SKILL")]
    pub allow_risk: Vec<skillpkg_index::skill::SkillName>,

    /// Serve option: how long a whole script or tool call may take, in
    /// seconds.
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub timeout: Option<u64>,

    /// Serve option: how long to wait for the client to answer
    /// roots/list, in seconds.
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..=3_600))]
    pub client_timeout: Option<u64>,

    /// Serve option: let skills that declare the secret NAME read it from
    /// the server's environment (the agent's).
    #[arg(long = "pass-env", value_name = "NAME", value_delimiter = ',', value_parser = parse_env_var_name)]
    pub pass_env: Vec<String>,

    /// Serve option: run scripts and tools without the sandbox.
    #[arg(long)]
    pub unsandboxed: bool,

    /// Serve option: append one JSON line per tool call to FILE (written
    /// as an absolute path).
    #[arg(long, value_name = "FILE")]
    pub audit_log: Option<PathBuf>,
}

/// An Origin as browsers send it: `scheme://host[:port]`, nothing after.
#[cfg(feature = "runtime")]
fn parse_origin(text: &str) -> Result<String, String> {
    // `:*` (any port) is kept as written; rmcp matches it.
    let base = text.strip_suffix(":*").unwrap_or(text);
    let url =
        url::Url::parse(base).map_err(|error| format!("`{text}` is not an origin: {error}"))?;
    let origin = url.origin();
    if !origin.is_tuple() || !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "`{text}` is not an http or https origin such as http://localhost:6274"
        ));
    }
    if url.path() != "/" || url.query().is_some() || url.fragment().is_some() {
        return Err(format!(
            "`{text}` has a path; an origin is only scheme://host[:port]"
        ));
    }
    if base.len() < text.len() && url.port().is_some() {
        return Err(format!("`{text}` gives a port twice"));
    }
    Ok(text.trim_end_matches('/').to_owned())
}

const TOOLS_EXAMPLES: &str = "\
Examples:
  skillpkg tools skills/pdf-processing                            list the tools
  skillpkg tools export --format mcp > tools.mcp.json             MCP Tool objects
  skillpkg tools export skills/pdf --format openai-strict         OpenAI, strict or nothing
  skillpkg tools sync                                             write ./tools.json
  skillpkg tools sync --check                                     in CI: exit 1 if stale";

#[derive(Debug, Args)]
pub struct ToolsArgs {
    #[command(subcommand)]
    pub command: Option<ToolsCommand>,
    /// The skill folder.
    #[arg(default_value = ".", value_name = "SKILL_DIR")]
    pub dir: PathBuf,
    /// Print the tools as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum ToolsCommand {
    /// Print the tools as an agent host's API takes them, as JSON on stdout.
    ///
    /// Always a JSON array, one element per tool in SKILL.md's order:
    /// `mcp` (MCP Tool objects: name, description, inputSchema, outputSchema,
    /// and annotations from the confirmation level), `openai` (function tools
    /// for the Responses API, `strict: true` where the input schema meets
    /// OpenAI's strict profile, else `strict: false` with a warning on stderr
    /// per problem and its JSON pointer), `openai-strict` (the same, but any
    /// problem is an error and nothing is printed on stdout), `claude` (tools
    /// for the Messages API: name, description, input_schema), `tools-json`
    /// (exactly what `tools sync` writes).
    #[command(after_help = TOOLS_EXPORT_EXAMPLES)]
    Export(ToolsExportArgs),

    /// Write tools.json from the tools in SKILL.md.
    ///
    /// SKILL.md is the source of truth; tools.json is a copy for hosts that
    /// read JSON (`validate` reports one that disagrees as
    /// `tools-json-stale`). The file is pretty JSON with two spaces of
    /// indent: the same SKILL.md always gives the same bytes. It is written
    /// atomically, and not at all when it is unchanged. A skill without tools
    /// has no tools.json: sync removes one that is there.
    #[command(after_help = TOOLS_SYNC_EXAMPLES)]
    Sync(ToolsSyncArgs),
}

const TOOLS_EXPORT_EXAMPLES: &str = "\
Examples:
  skillpkg tools export --format mcp
  skillpkg tools export skills/pdf-processing --format openai 2> strict-problems.txt
  skillpkg tools export skills/pdf-processing --format claude | jq '.[].name'";

const TOOLS_SYNC_EXAMPLES: &str = "\
Examples:
  skillpkg tools sync skills/pdf-processing
  skillpkg tools sync --check      exit 1 and show the diff when tools.json is stale";

#[derive(Debug, Args)]
pub struct ToolsExportArgs {
    /// The skill folder.
    #[arg(default_value = ".", value_name = "SKILL_DIR")]
    pub dir: PathBuf,
    /// The shape to print: mcp, openai, openai-strict, claude or tools-json.
    #[arg(long, value_name = "FORMAT")]
    pub format: skillpkg_index::skill::tools::ExportFormat,
}

#[derive(Debug, Args)]
pub struct ToolsSyncArgs {
    /// The skill folder.
    #[arg(default_value = ".", value_name = "SKILL_DIR")]
    pub dir: PathBuf,
    /// Write nothing; exit 1 and print the diff when tools.json is not what
    /// sync would write.
    #[arg(long)]
    pub check: bool,
    /// Print the result as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

const AUDIT_EXAMPLES: &str = "\
Examples:
  skillpkg audit                            the skill, or the skills, in this folder
  skillpkg audit skills/ vendor/skills      every skill below these folders
  skillpkg audit --installed                the skills this project installed
  skillpkg audit --format sarif > audit.sarif   for GitHub code scanning
  skillpkg audit --fail-on medium --json    for CI scripts";

const SCOPES_EXAMPLES: &str = "\
Examples:
  skillpkg scopes                      Claude Code, Codex and Copilot, one after another
  skillpkg scopes --host claude-code   the skills Claude Code loads from this folder
  skillpkg scopes --host codex --json  for scripts";

const PROMPT_EXAMPLES: &str = "\
Examples:
  skillpkg prompt                               what Claude Code would show the model
  skillpkg prompt --host codex --format json
  skillpkg prompt --skills examples/skills --active pdf-processing";

const SELECT_EXAMPLES: &str = "\
Examples:
  skillpkg select \"extract the tables from report.pdf\"
  skillpkg select \"summarise this\" --file scan.pdf --intent document_extraction
  skillpkg select \"use \\$csv-insights\" --skills examples/skills --json";

#[derive(Debug, Subcommand)]
pub enum KeyCommand {
    /// Generate a key pair: the secret key at PATH (mode 0600), the public
    /// key at PATH.pub, in minisign's formats.
    ///
    /// The secret key is encrypted with a password (asked for on the
    /// terminal, or $SKILLPKG_KEY_PASSWORD), or stored unencrypted with
    /// --no-password. Without a terminal and without $SKILLPKG_KEY_PASSWORD,
    /// nothing is asked: pass --no-password.
    #[command(after_help = KEY_GENERATE_EXAMPLES)]
    Generate(KeyGenerateArgs),
    /// Show the signing key's id and public key.
    #[command(after_help = KEY_SHOW_EXAMPLES)]
    Show(KeyShowArgs),
}

#[derive(Debug, Args)]
pub struct KeyGenerateArgs {
    /// Where to write the secret key (default: <config dir>/skillpkg/signing.key).
    #[arg(long, short, value_name = "PATH")]
    pub output: Option<PathBuf>,
    /// Store the secret key unencrypted (like `minisign -G -W`).
    #[arg(long)]
    pub no_password: bool,
    /// Replace an existing key (the old one is lost).
    #[arg(long)]
    pub force: bool,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct KeyShowArgs {
    /// The secret key file (default: $SKILLPKG_SIGNING_KEY, `signing-key` in
    /// the user config, or the default key).
    #[arg(long, value_name = "PATH")]
    pub key: Option<PathBuf>,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct SignArgs {
    /// The archive to sign.
    #[arg(value_name = "FILE.tgz")]
    pub file: PathBuf,
    /// The secret key file.
    #[arg(long, value_name = "PATH")]
    pub key: Option<PathBuf>,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

// Options of every command that installs. (A plain comment: with deferred arguments, a flattened
// struct's doc comment would become the command's `about`.)
#[derive(Debug, Args)]
pub struct InstallFlags {
    /// Fail if skills.lock would change (for CI).
    #[arg(long)]
    pub locked: bool,
    /// Use only the cache: no network.
    #[arg(long)]
    pub offline: bool,
    /// --locked and --offline.
    #[arg(long)]
    pub frozen: bool,
    /// Replace skill folders that skillpkg did not install.
    #[arg(long)]
    pub force: bool,
    /// Accept a skill whose signer differs from the one skills.lock pins.
    #[arg(long)]
    pub allow_signer_change: bool,
    /// Install NAME even though the audit of its files finds high risks
    /// (repeat or comma-separate for several). The verdict is recorded in
    /// skills.lock, and a later install of the same archive with the same
    /// findings needs no flag.
    #[arg(long, value_name = "NAME", value_delimiter = ',')]
    pub allow_risk: Vec<skillpkg_index::skill::SkillName>,
    /// Accept unsigned skills (instead of `allow-unsigned` in skills.toml).
    #[arg(long)]
    pub allow_unsigned: bool,
    /// Work on the user's own skills, installed in the agents' user
    /// folders (~/.claude/skills, ~/.agents/skills, ...), from anywhere:
    /// their skills.toml and skills.lock are kept apart from any project
    /// (`skillpkg config` shows where), which is never read or written.
    #[arg(long, short = 'g')]
    pub global: bool,
    /// Accept targets in skills.toml that lead out of the project (an
    /// absolute path, `..`, or a symlink), which a cloned repository could
    /// otherwise use to write anywhere.
    #[arg(long)]
    pub allow_external_targets: bool,
    /// Also install into this target: claude, codex, copilot, agents, or a
    /// path. Codex: current releases read .agents/skills (target `agents`),
    /// older ones .codex/skills (target `codex`).
    #[arg(long = "target", value_name = "TARGET")]
    pub targets: Vec<String>,
    /// Keep one copy of each skill, in the first target, and symlink the
    /// other targets to it (recorded as `link = true` in skills.toml; where
    /// a link cannot be made, a copy is installed with a warning).
    #[arg(long, conflicts_with = "copy")]
    pub link: bool,
    /// Install a full copy into every target (removes `link = true` from
    /// skills.toml; the default).
    #[arg(long)]
    pub copy: bool,
    #[command(flatten)]
    pub registry: RegistryArgs,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct NewArgs {
    /// The skill's name, which is also its folder's: 1 to 64 lowercase
    /// letters, digits and single `-` inside.
    #[arg(value_name = "NAME")]
    pub name: String,
    /// Declare an example tool, with its script in scripts/.
    #[arg(long)]
    pub tools: bool,
    /// The language of the example tool's script: python, node or bash
    /// (default: python).
    #[arg(long, value_name = "RUNTIME", requires = "tools")]
    pub runtime: Option<skillpkg_index::skill::model::Runtime>,
    /// The folder to create the skill in (created if missing).
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub path: PathBuf,
    /// What the skill does and when to use it: the line agents read to
    /// decide whether to load it (default: a placeholder to replace).
    #[arg(long, value_name = "TEXT")]
    pub description: Option<String>,
}

#[derive(Debug, Args)]
pub struct InitArgs {
    /// The agent tools the project uses (comma-separated or repeated), by
    /// id: claude-code, codex, copilot, cursor, gemini-cli, opencode,
    /// windsurf, goose, cline, roo, kiro-cli, junie, ... (docs/agents.md
    /// lists all of them). skillpkg picks the folders each of them reads
    /// today, the fewest that serve them all, and says why.
    #[arg(
        long = "agent",
        value_name = "AGENT",
        value_delimiter = ',',
        conflicts_with = "targets",
        value_parser = AgentParser,
        hide_possible_values = true
    )]
    pub agents: Vec<&'static crate::project::agents::Agent>,
    /// Where skills are installed: claude, codex, copilot, agents, or a path
    /// (repeat for several; default: the folders of the agents named or
    /// detected, else claude).
    #[arg(long = "target", value_name = "TARGET")]
    pub targets: Vec<String>,
    /// Write `link = true`: installs keep one copy of each skill in the
    /// first target and symlink the other targets to it.
    #[arg(long)]
    pub link: bool,
    /// The default registry to record in skills.toml: a URL, or the name
    /// of a `[registries.NAME]` table.
    #[arg(long, value_name = "NAME|URL")]
    pub registry: Option<String>,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct AddArgs {
    /// NAME or NAME@REQ from a registry; or a folder (`./skills/pdf`,
    /// `path:../shared/pdf`), a git repository (`OWNER/REPO[/PATH][@REV]`,
    /// `github:...`, `git+URL#REV`), a site's discovery index
    /// (`https://...`) or a tarball URL (`https://.../x.tgz`).
    #[arg(value_name = "NAME[@REQ]|SOURCE", required = true)]
    pub skills: Vec<String>,
    /// Of the skills a folder, repository or index holds, add the one named
    /// NAME (repeat for several).
    #[arg(long = "skill", value_name = "NAME", conflicts_with = "all")]
    pub skill: Vec<skillpkg_index::skill::SkillName>,
    /// Add every skill a folder, repository or index holds.
    #[arg(long)]
    pub all: bool,
    /// Skills to accept unsigned.
    #[command(flatten)]
    pub install: InstallFlags,
}

#[derive(Debug, Args)]
pub struct RemoveArgs {
    /// The skills to remove.
    #[arg(value_name = "NAME", required = true)]
    pub names: Vec<skillpkg_index::skill::SkillName>,
    #[command(flatten)]
    pub install: InstallFlags,
}

#[derive(Debug, Args)]
pub struct InstallArgs {
    #[command(flatten)]
    pub install: InstallFlags,
}

#[derive(Debug, Args)]
pub struct UpdateArgs {
    /// The skills to update (default: all).
    #[arg(value_name = "NAME")]
    pub names: Vec<skillpkg_index::skill::SkillName>,
    #[command(flatten)]
    pub install: InstallFlags,
}

#[derive(Debug, Args)]
pub struct VendorArgs {
    /// The folder to write (new, or empty).
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    #[command(flatten)]
    pub registry: RegistryArgs,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct MirrorArgs {
    /// The registry to copy: a configured registry's name (read at its
    /// `index`, never from its own mirror), a URL, or a local tree's path.
    #[arg(value_name = "SOURCE")]
    pub source: String,
    /// The folder to copy into (created; a later run updates it).
    #[arg(value_name = "DEST")]
    pub dest: PathBuf,
    /// Mirror the skills whose names match this glob (`pdf-*`); repeat
    /// for several.
    #[arg(long, value_name = "PATTERN", conflicts_with = "all")]
    pub skill: Vec<String>,
    /// Mirror every skill.
    #[arg(long)]
    pub all: bool,
    /// Print the result as JSON: skills, versions, archives downloaded,
    /// files and bytes fetched.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct TreeArgs {
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct OutdatedArgs {
    #[command(flatten)]
    pub registry: RegistryArgs,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// List the user's own skills (`add --global`) instead of the
    /// project's.
    #[arg(long, short = 'g')]
    pub global: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// NAME[@VERSION] from the registry, or a local FILE.tgz. Without it:
    /// check every installed skill's files against skills.lock (local edits
    /// or tampering are reported, and exit 1).
    #[arg(value_name = "TARGET")]
    pub target: Option<String>,
    /// The signature of a local archive (default: FILE.tgz.minisig).
    #[arg(long, value_name = "FILE.minisig")]
    pub sig: Option<PathBuf>,
    /// The publisher's public key, for a local archive: a file, or minisign's base64 line.
    #[arg(long, value_name = "KEY")]
    pub key: Option<String>,
    /// The provenance of a local archive (default: <name>-<version>.intoto.jsonl beside it, if there).
    #[arg(long, value_name = "FILE.intoto.jsonl")]
    pub provenance: Option<PathBuf>,
    /// Without TARGET: check the user's own skills (`add --global`)
    /// instead of the project's.
    #[arg(long, short = 'g', conflicts_with = "target")]
    pub global: bool,
    #[command(flatten)]
    pub registry: RegistryArgs,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

// Which registry to use. (A plain comment: with deferred arguments, a flattened
// struct's doc comment would become the command's `about`.)
#[derive(Debug, Args)]
pub struct RegistryArgs {
    /// The registry: the NAME of a `[registries.NAME]` table (in
    /// skills.toml or <config dir>/skillpkg/config.toml), or a URL
    /// (https://, http://, file://, or a plain path) of the folder that
    /// holds its config.json; a configured registry's index or mirror URL
    /// is that registry. Defaults to $SKILLPKG_REGISTRY, else `[registry]
    /// url` in skills.toml, else `registry` in config.toml, else
    /// `[registries.default]`. With `add`: the registry the added skills
    /// come from, recorded in skills.toml.
    #[arg(long, value_name = "NAME|URL")]
    pub registry: Option<String>,
}

// The token to authenticate with. (A plain comment: with deferred arguments, a flattened
// struct's doc comment would become the command's `about`.)
#[derive(Debug, Args)]
pub struct TokenArgs {
    /// The API token. Defaults to $SKILLPKG_REGISTRY_<NAME>_TOKEN, else
    /// $SKILLPKG_TOKEN, else the registry's `token-command`, else the one
    /// `skillpkg login` stored for the registry. Prefer those: an argument
    /// is visible to other users of the machine in the process list.
    #[arg(long, value_name = "TOKEN")]
    pub token: Option<Token>,
}

#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Skill folders, SKILL.md files, or folders to search for skills.
    #[arg(default_value = ".", value_name = "PATH")]
    pub paths: Vec<PathBuf>,

    /// Treat every warning as an error.
    #[arg(long)]
    pub strict: bool,

    /// Also apply the rules of an agent host: `claude-api` (no XML tags in
    /// name or description, no `anthropic` or `claude` in name, 8 MiB at
    /// most, no network, no packages to install), `claude-code` (its own
    /// frontmatter keys are not warned about), `codex`, `copilot`, `mcp`,
    /// `openai`. `all` checks every host and prints a table: skill x host,
    /// portable or not and why (exit 1 if any skill fails any host).
    #[arg(long, value_name = "HOST", default_value = "portable")]
    pub host: HostSelection,

    /// Do not report warnings with these codes (comma-separated or repeated),
    /// even with --strict. Naming an error code is refused.
    #[arg(long, value_name = "CODE", value_delimiter = ',')]
    pub allow: Vec<skillpkg_index::skill::Code>,

    /// Print the results as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct AuditArgs {
    /// Skill folders, or folders to search for skills [default: .]
    #[arg(value_name = "PATH", conflicts_with = "installed")]
    pub paths: Vec<PathBuf>,

    /// Audit the skills installed in this project's targets instead.
    #[arg(long)]
    pub installed: bool,

    /// With --installed: the user's own skills (`add --global`), not the
    /// project's.
    #[arg(long, short = 'g', requires = "installed")]
    pub global: bool,

    /// How to print the findings: human, json, or sarif (SARIF 2.1.0, for
    /// GitHub code scanning and other tools).
    #[arg(long, value_enum, default_value = "human")]
    pub format: AuditFormat,

    /// Print the findings as JSON on stdout (same as --format json).
    #[arg(long, conflicts_with = "format")]
    pub json: bool,

    /// Exit with 1 when a finding is at or above this severity: info, low,
    /// medium or high.
    #[arg(long, value_name = "SEVERITY", default_value = "high")]
    pub fail_on: skillpkg_index::audit::Severity,

    /// Also apply a host profile's rules (`claude-api`: no network).
    #[arg(long, value_name = "HOST")]
    pub host: Option<skillpkg_index::skill::Host>,
}

/// The output formats of `skillpkg audit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AuditFormat {
    Human,
    Json,
    Sarif,
}

#[derive(Debug, Args)]
pub struct PackArgs {
    /// The skill folder.
    #[arg(default_value = ".", value_name = "PATH")]
    pub path: PathBuf,

    /// Where to write the tarball: a file, or an existing folder to write
    /// `<name>-<version>.tgz` into. Defaults to the current folder.
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// The version to pack, for a skill whose frontmatter has none (neither
    /// `version` nor a semver `metadata.version`); it must agree with one
    /// that is there.
    #[arg(long, value_name = "SEMVER")]
    pub version: Option<semver::Version>,

    /// Print the result as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct PublishArgs {
    /// The skill folder.
    #[arg(default_value = ".", value_name = "PATH")]
    pub path: PathBuf,

    /// The version to publish, for a skill whose frontmatter has none; it
    /// must agree with one that is there.
    #[arg(long, value_name = "SEMVER")]
    pub version: Option<semver::Version>,

    #[command(flatten)]
    pub registry: RegistryArgs,

    #[command(flatten)]
    pub token: TokenArgs,

    /// Validate and pack, then show what would be uploaded (name, version,
    /// size, checksum) and to which URL, without uploading. Needs no token.
    #[arg(long)]
    pub dry_run: bool,

    /// The secret signing key (default: $SKILLPKG_SIGNING_KEY, `signing-key`
    /// in the user config, or the key `skillpkg key generate` made).
    #[arg(long, value_name = "PATH")]
    pub key: Option<PathBuf>,

    /// Publish without a signature (a registry that requires signatures
    /// refuses it, and so do users who pinned your key).
    #[arg(long, conflicts_with_all = ["key", "provenance"])]
    pub no_sign: bool,

    /// Also publish provenance: the git repository, commit and CI run the
    /// archive was built from, as a signed in-toto statement.
    #[arg(long)]
    pub provenance: bool,

    /// With --provenance: publish even if the skill folder has changes that
    /// are not committed (the provenance then says so).
    #[arg(long, requires = "provenance")]
    pub allow_dirty: bool,

    /// Print the result as JSON on stdout: the registry's index line for the
    /// new version (with --dry-run, what would be uploaded).
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct YankArgs {
    /// The version to yank, as NAME@VERSION.
    #[arg(value_name = "NAME@VERSION")]
    pub skill: SkillVersion,

    /// Undo the yank: the version can be picked for new installs again.
    #[arg(long, conflicts_with = "reason")]
    pub undo: bool,

    /// Why the version is yanked, shown by `skillpkg info` (for example
    /// "leaks credentials; use 1.2.1").
    #[arg(long, value_name = "TEXT")]
    pub reason: Option<String>,

    #[command(flatten)]
    pub registry: RegistryArgs,

    #[command(flatten)]
    pub token: TokenArgs,
}

#[derive(Debug, Args)]
pub struct LoginArgs {
    #[command(flatten)]
    pub registry: RegistryArgs,

    /// The token to store. Without it, one line is read from stdin, so
    /// `skillpkg login < token.txt` and `echo "$TOKEN" | skillpkg login`
    /// work and keep the token out of the process list.
    #[arg(long, value_name = "TOKEN")]
    pub token: Option<Token>,
}

#[derive(Debug, Args)]
pub struct SearchArgs {
    /// Words to look for; all of them must match.
    #[arg(value_name = "QUERY")]
    pub query: String,

    #[command(flatten)]
    pub registry: RegistryArgs,

    /// Show at most N skills.
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub limit: usize,

    /// Print the matching skills as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct InfoArgs {
    /// The skill, and optionally the version to show: NAME or NAME@VERSION.
    #[arg(value_name = "NAME[@VERSION]")]
    pub skill: SkillSpec,

    #[command(flatten)]
    pub registry: RegistryArgs,

    /// Print the details as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

/// `--host`: one host profile, or `all` of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostSelection {
    One(skillpkg_index::skill::Host),
    All,
}

impl std::str::FromStr for HostSelection {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        if text == "all" {
            return Ok(Self::All);
        }
        text.parse()
            .map(Self::One)
            .map_err(|error: String| format!("{error}, all"))
    }
}

/// The agent whose skills `scopes` lists: one host, or all of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScopesHost {
    One(skillpkg_index::skill::Host),
    All,
}

impl std::str::FromStr for ScopesHost {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        if text == "all" {
            return Ok(Self::All);
        }
        parse_agent_host(text).map(Self::One)
    }
}

/// Parses the name of an environment variable (`--pass-env`).
#[cfg(feature = "runtime")]
fn parse_env_var_name(text: &str) -> Result<String, String> {
    if skillpkg_index::skill::extensions::is_env_var_name(text) {
        Ok(text.to_owned())
    } else {
        Err(format!(
            "`{text}` is not an environment variable name: letters, digits and `_`, not starting with a digit"
        ))
    }
}

/// Parses a host that reads skills from folders.
/// Parses `--agent ID` with the table of agents, and offers its ids to
/// shell completion.
#[derive(Clone, Debug)]
struct AgentParser;

impl clap::builder::TypedValueParser for AgentParser {
    type Value = &'static crate::project::agents::Agent;

    fn parse_ref(
        &self,
        command: &clap::Command,
        argument: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<Self::Value, clap::Error> {
        let parse = |text: &str| crate::project::agents::parse(text);
        clap::builder::TypedValueParser::parse_ref(&parse, command, argument, value)
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(crate::project::agents::AGENTS.iter().map(
            |agent| {
                clap::builder::PossibleValue::new(agent.id)
                    .aliases(agent.aliases.iter().copied())
                    .help(agent.name)
            },
        )))
    }
}

fn parse_agent_host(text: &str) -> Result<skillpkg_index::skill::Host, String> {
    use skillpkg_index::skill::scope::AGENT_HOSTS;
    let host: skillpkg_index::skill::Host = text.parse()?;
    if AGENT_HOSTS.contains(&host) {
        Ok(host)
    } else {
        Err(format!(
            "`{text}` has no skills folders; expected claude-code, codex or copilot"
        ))
    }
}

#[derive(Debug, Args)]
pub struct ScopesArgs {
    /// The agent: claude-code, codex, copilot, or all (the default).
    #[arg(long, value_name = "HOST", default_value = "all")]
    pub host: ScopesHost,

    /// Print the listing as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

// Where `prompt` and `select` take their skills from. (A plain comment: with deferred arguments, a flattened
// struct's doc comment would become the command's `about`.)
#[derive(Debug, Args)]
pub struct SkillSourceArgs {
    /// The agent whose folders to read: claude-code, codex or copilot
    /// (default: claude-code).
    #[arg(long, value_name = "HOST", value_parser = parse_agent_host)]
    pub host: Option<skillpkg_index::skill::Host>,

    /// Read the skills in DIR (its subfolders) instead of an agent's folders.
    #[arg(long, value_name = "DIR", conflicts_with = "host")]
    pub skills: Option<PathBuf>,
}

/// The format `prompt` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PromptFormat {
    Xml,
    Json,
}

#[derive(Debug, Args)]
pub struct PromptArgs {
    #[command(flatten)]
    pub source: SkillSourceArgs,

    /// xml: the <available_skills> block; json: the same data as JSON.
    #[arg(long, value_enum, default_value_t = PromptFormat::Xml)]
    pub format: PromptFormat,

    /// Also include the bodies of these skills in <active_skills>, in this
    /// order (comma-separated or repeated).
    #[arg(long, value_name = "NAME", value_delimiter = ',')]
    pub active: Vec<String>,
}

#[derive(Debug, Args)]
pub struct SelectArgs {
    /// The user's request.
    #[arg(value_name = "REQUEST")]
    pub request: String,

    /// A file the request is about (only its name is used; repeatable).
    #[arg(long = "file", value_name = "PATH")]
    pub files: Vec<PathBuf>,

    /// An intent the host derived from the request (repeatable).
    #[arg(long = "intent", value_name = "INTENT")]
    pub intents: Vec<String>,

    /// The score a skill needs to be selected.
    #[arg(long, value_name = "N", default_value_t = skillpkg_index::skill::select::DEFAULT_THRESHOLD)]
    pub threshold: u32,

    #[command(flatten)]
    pub source: SkillSourceArgs,

    /// Print the result as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}
