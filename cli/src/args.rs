//! The command line, as clap structs. No logic lives here.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// A package manager for Agent Skills.
///
/// skillpkg validates, packs, publishes and installs Agent Skills: folders
/// with a SKILL.md that Claude Code, Codex, GitHub Copilot and other agents
/// read from their skills folders.
#[derive(Debug, Parser)]
#[command(name = "skillpkg", version, max_term_width = 100)]
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
pub enum Command {
    /// Check skills against the Agent Skills specification.
    ///
    /// Each PATH is a skill folder (or its SKILL.md), or a folder that is
    /// searched for skills (hidden folders such as .claude/skills included;
    /// .git and node_modules are skipped). Prints every problem with its code, file, line
    /// and column, then `N valid, M invalid, K warnings`. Exits with 1 when
    /// any skill is invalid. Codes are listed in docs/skill-format.md.
    Validate(ValidateArgs),

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
    Pack(PackArgs),
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
    /// most) or `claude-code` (its own frontmatter keys are not warned about).
    #[arg(long, value_name = "HOST", default_value = "portable")]
    pub host: skillpkg_index::skill::Host,

    /// Do not report warnings with these codes (comma-separated or repeated),
    /// even with --strict. Naming an error code is refused.
    #[arg(long, value_name = "CODE", value_delimiter = ',')]
    pub allow: Vec<skillpkg_index::skill::Code>,

    /// Print the results as JSON on stdout.
    #[arg(long)]
    pub json: bool,
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
