//! The `skillpkg-registry` binary.
#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "the binary's own output"
)]

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use clap::{Args, Parser, Subcommand};
use skillpkg_index::archive::DEFAULT_MAX_BYTES;
use skillpkg_index::registry::tree::StaticTree;
use skillpkg_index::skill::SkillName;
use skillpkg_registry::build::{BuildOptions, build};
use skillpkg_registry::keys::{change_keys, parse_ids, parse_keys};
use skillpkg_registry::registry::{Options, PUBLIC_DIR, Registry, STATE_DIR};
use skillpkg_registry::state::State;

/// The skillpkg registry: serves a static skill index and accepts publishes.
///
/// A registry's data folder (--root) holds `public/`, the static tree that
/// is served (by this server, or by any static host), and `state/`, the
/// tokens and owners, which are never served. See docs/registry.md.
#[derive(Debug, Parser)]
#[command(name = "skillpkg-registry", version, max_term_width = 100)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the static tree and the publish API.
    ///
    /// Prints `listening on http://ADDR` once it accepts connections.
    Serve(ServeArgs),
    /// Write the static tree from a folder of `<name>-<version>.tgz` archives.
    ///
    /// Each archive (with its `.tgz.minisig` and `.intoto.jsonl`, if any) is
    /// checked as a publish would be; its modification time is its
    /// `published` time. Signatures are checked against the keys of
    /// --keys-from. The output folder must not exist or be empty; a failed
    /// build writes nothing.
    Build(BuildArgs),
    /// Create, list and revoke publish tokens.
    #[command(subcommand)]
    Token(TokenCommand),
    /// Add, list and remove the publisher keys of a skill.
    ///
    /// The keys are the skill's `keys/<name>.json` in the public tree: a
    /// signed publish must be signed by one of them. Safe while the server
    /// runs.
    #[command(subcommand)]
    Key(KeyCommand),
}

#[derive(Debug, Args)]
struct ServeArgs {
    /// The registry's data folder (created if missing).
    #[arg(long, value_name = "DIR")]
    root: PathBuf,
    /// The address to listen on; port 0 picks a free port.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    listen: String,
    /// The URL clients use to reach this server, when it is not
    /// `http://ADDR` (behind a proxy, say).
    #[arg(long, value_name = "URL")]
    public_url: Option<String>,
    /// The largest archive accepted, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_BYTES)]
    max_skill_bytes: u64,
    /// Refuse unsigned publishes (`require-signatures` in config.json).
    #[arg(long)]
    require_signatures: bool,
    /// A private registry: every read of the tree needs a valid token
    /// (`auth-required` in config.json). Serve the tree with this server,
    /// not a static host, which could not check tokens.
    #[arg(long)]
    auth_required: bool,
}

#[derive(Debug, Args)]
struct BuildArgs {
    /// The folder to search for archives.
    #[arg(long, value_name = "DIR")]
    from: PathBuf,
    /// The folder to write the tree into.
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// The API URL for `config.json` (default: none, a read-only tree).
    #[arg(long, value_name = "URL")]
    api: Option<String>,
    /// The URL the tree will be served at, for absolute URLs in the
    /// discovery index (default: relative URLs).
    #[arg(long, value_name = "URL")]
    public_url: Option<String>,
    /// The largest archive accepted, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_BYTES)]
    max_skill_bytes: u64,
    /// Refuse unsigned archives (`require-signatures` in config.json).
    #[arg(long)]
    require_signatures: bool,
    /// A tree (a server's `public/`, or an earlier build) whose
    /// `keys/<name>.json` files list the keys signatures are checked
    /// against; they are copied into the new tree. Without it, signed
    /// archives are refused.
    #[arg(long, value_name = "DIR")]
    keys_from: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
enum TokenCommand {
    /// Create a token for a user and print it (once: only its hash is kept).
    Create {
        #[arg(long, value_name = "DIR")]
        root: PathBuf,
        /// The user the token acts as.
        #[arg(long)]
        user: String,
    },
    /// List the tokens: id, user, creation time.
    List {
        #[arg(long, value_name = "DIR")]
        root: PathBuf,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Revoke a token by id; it stops working at once.
    Revoke {
        #[arg(long, value_name = "DIR")]
        root: PathBuf,
        /// The token's id, as `token list` shows it.
        id: String,
    },
}

#[derive(Debug, Subcommand)]
enum KeyCommand {
    /// Register a public key for a skill (also before its first publish).
    Add {
        #[arg(long, value_name = "DIR")]
        root: PathBuf,
        /// The skill.
        #[arg(long, value_name = "NAME")]
        skill: SkillName,
        /// The public key: minisign's base64 line (`RW...`), or the path of
        /// a public key file.
        #[arg(long, value_name = "KEY")]
        key: String,
    },
    /// List a skill's keys: id, public key, when it was added.
    List {
        #[arg(long, value_name = "DIR")]
        root: PathBuf,
        /// The skill.
        #[arg(long, value_name = "NAME")]
        skill: SkillName,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Remove a key by id; the last key of a skill cannot be removed.
    Remove {
        #[arg(long, value_name = "DIR")]
        root: PathBuf,
        /// The skill.
        #[arg(long, value_name = "NAME")]
        skill: SkillName,
        /// The key's id, as `key list` shows it.
        id: String,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            for cause in error.chain().skip(1) {
                eprintln!("  Caused by: {cause}");
            }
            ExitCode::from(1)
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Serve(args) => serve(args),
        Command::Build(args) => {
            let options = BuildOptions {
                api: args.api,
                public_url: args.public_url,
                max_skill_bytes: args.max_skill_bytes,
                require_signatures: args.require_signatures,
                keys_from: args.keys_from,
            };
            let report = build(&args.from, &args.out, &options)?;
            println!(
                "built {} with {} skills, {} versions",
                args.out.display(),
                report.skills,
                report.versions
            );
            Ok(())
        }
        Command::Token(command) => token(command),
        Command::Key(command) => key(command),
    }
}

fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the runtime")?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(&args.listen)
            .await
            .with_context(|| format!("cannot listen on {}", args.listen))?;
        let address = listener
            .local_addr()
            .context("cannot read the listening address")?;
        let public_url = args
            .public_url
            .unwrap_or_else(|| format!("http://{address}"));
        let options = Options {
            public_url: Some(public_url.clone()),
            max_skill_bytes: args.max_skill_bytes,
            require_signatures: args.require_signatures,
            auth_required: args.auth_required,
        };
        let (registry, removed) = Registry::open(&args.root, options)
            .with_context(|| format!("cannot open the registry in {}", args.root.display()))?;
        for path in removed {
            eprintln!("recovered: removed {path}, left by an interrupted publish");
        }
        println!("listening on {public_url}");
        let _ = std::io::stdout().flush();
        let app = skillpkg_registry::server::router(Arc::new(registry));
        axum::serve(listener, app)
            .with_graceful_shutdown(shutdown())
            .await
            .context("the server failed")
    })
}

async fn shutdown() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut terminate =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                .expect("a SIGTERM handler");
        tokio::select! {
            _ = interrupt => {}
            _ = terminate.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = interrupt.await;
}

fn token(command: TokenCommand) -> anyhow::Result<()> {
    let open = |root: &PathBuf| {
        State::open(&root.join(STATE_DIR))
            .with_context(|| format!("cannot open the state of {}", root.display()))
    };
    match command {
        TokenCommand::Create { root, user } => {
            let (token, record) = open(&root)?.create_token(&user)?;
            eprintln!(
                "created token {} for {}; it is shown only this once:",
                record.id, record.user
            );
            println!("{}", token.expose());
        }
        TokenCommand::List { root, json } => {
            let tokens = open(&root)?.list_tokens()?;
            if json {
                let list: Vec<_> = tokens
                    .iter()
                    .map(
                        |t| serde_json::json!({ "id": t.id, "user": t.user, "created": t.created }),
                    )
                    .collect();
                println!("{}", serde_json::to_string_pretty(&list)?);
            } else {
                for token in tokens {
                    println!("{}\t{}\t{}", token.id, token.user, token.created);
                }
            }
        }
        TokenCommand::Revoke { root, id } => {
            let record = open(&root)?.revoke_token(&id)?;
            eprintln!("revoked token {} of {}", record.id, record.user);
        }
    }
    Ok(())
}

fn key(command: KeyCommand) -> anyhow::Result<()> {
    let open = |root: &PathBuf| {
        let state = State::open(&root.join(STATE_DIR))
            .with_context(|| format!("cannot open the state of {}", root.display()))?;
        anyhow::Ok((StaticTree::new(root.join(PUBLIC_DIR)), state))
    };
    match command {
        KeyCommand::Add { root, skill, key } => {
            // A key is base64 text; anything else is taken as a file's path.
            let text = if key.parse::<skillpkg_index::signing::PublicKey>().is_ok() {
                key
            } else {
                match fs_err::read_to_string(&key) {
                    Ok(text) => text,
                    Err(error) if error.kind() == std::io::ErrorKind::NotFound => key,
                    Err(error) => return Err(error.into()),
                }
            };
            let key = parse_keys(&[text])?.remove(0);
            let (tree, state) = open(&root)?;
            change_keys(
                &tree,
                &state,
                &skill,
                std::slice::from_ref(&key),
                &[],
                jiff::Timestamp::now(),
            )
            .with_context(|| format!("cannot add the key to `{skill}`"))?;
            eprintln!("`{skill}` accepts signatures by key {} now", key.id());
        }
        KeyCommand::List { root, skill, json } => {
            let (tree, _) = open(&root)?;
            let keys = tree.read_keys(&skill)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&keys.keys)?);
            } else if keys.keys.is_empty() {
                eprintln!("`{skill}` has no keys: its first signed publish registers one");
            } else {
                for record in keys.keys {
                    println!(
                        "{}\t{}\t{}",
                        record.id,
                        record.key.to_base64(),
                        record.added
                    );
                }
            }
        }
        KeyCommand::Remove { root, skill, id } => {
            let id = parse_ids(&[id])?.remove(0);
            let (tree, state) = open(&root)?;
            change_keys(&tree, &state, &skill, &[], &[id], jiff::Timestamp::now())
                .with_context(|| format!("cannot remove the key from `{skill}`"))?;
            eprintln!("removed key {id} from `{skill}`");
        }
    }
    Ok(())
}
