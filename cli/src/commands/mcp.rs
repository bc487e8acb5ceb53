//! `skillpkg mcp`: read the catalog, then serve it over MCP: on stdio until
//! the client closes the connection, or over streamable HTTP on a loopback
//! address until interrupted (docs/runtime.md).

use std::sync::Arc;

use std::net::SocketAddr;
use std::time::Duration;

use rmcp::ServiceExt as _;
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use crate::args::McpArgs;
use crate::commands::scopes::DEFAULT_HOST;
use crate::env_vars;
use crate::error::{ExitStatus, UserError};
use crate::printer::Printer;
use crate::runtime::access::{self, Token};
use crate::runtime::arrival::{Ordered, OrderedSessions};
use crate::runtime::audit::AuditLog;
use crate::runtime::catalog::{Options, ServedCatalog, Sources};
use crate::runtime::exec::{self, Limits};
use crate::runtime::jail;
use crate::runtime::live::View;
use crate::runtime::run::RunConfig;
use crate::runtime::sandbox;
use crate::runtime::server::{Shared, SkillServer, Transport};
use crate::runtime::tool_call::Redactor;
use crate::runtime::watch;

pub fn run(args: &McpArgs, printer: &Printer) -> anyhow::Result<ExitStatus> {
    let project = match &args.project {
        Some(dir) => dir.clone(),
        None => std::env::current_dir()?,
    };
    if !project.is_dir() {
        return Err(
            UserError::new(format!("`{}` is not a folder", project.display()))
                .with_hint("give the project folder the agent works in with --project")
                .into(),
        );
    }
    let project = std::path::absolute(&project)?;
    let options = Options {
        host: args.host.unwrap_or(DEFAULT_HOST),
        project,
        home: dirs::home_dir(),
        codex_home: std::env::var_os(env_vars::CODEX_HOME)
            .filter(|value| !value.is_empty())
            .map(Into::into),
        allow_modified: args.allow_modified,
        allowed_grants: args.allow_grant.clone(),
        allow_risk: args.allow_risk.iter().map(ToString::to_string).collect(),
        cache: crate::client::Cache::open().ok(),
    };
    // What servers killed before they could clean up left behind (runs'
    // folders, sealed copies, cgroups), removed in the background:
    // start-up does not wait for it.
    std::thread::spawn(jail::sweep_stale);
    // Whether runs can have namespaces here: asked once, by starting a
    // run launcher, while the catalog loads.
    if !args.unsandboxed {
        std::thread::spawn(|| {
            let _ = jail::probe();
        });
        // The server has one runtime for its life: runs' launchers can be
        // made ahead, between runs.
        jail::keep_spares();
    }
    let catalog = Arc::new(ServedCatalog::load(&options)?);
    for note in &catalog.notes {
        printer.status("Note", note);
    }
    printer.status(
        "Serving",
        &format!(
            "{} skill(s) {} would use from {} over MCP on {}",
            catalog.skills().len(),
            options.host.as_str(),
            options.project.display(),
            if args.listen.is_some() {
                "HTTP"
            } else {
                "stdio"
            }
        ),
    );
    let audit = args
        .audit_log
        .as_deref()
        .map(AuditLog::open)
        .transpose()
        .map_err(|error| {
            UserError::new(error.to_string())
                .with_hint("give --audit-log a regular file in a folder you can write to")
        })?;
    let view = View::new(Arc::clone(&catalog), secrets(&catalog));
    for name in view.redactor.skipped() {
        printer.status(
            "Warning",
            &format!("the secret {name} is under 4 characters, so it cannot be redacted from results and the audit log"),
        );
    }
    for (skill, secret) in catalog.skills().iter().flat_map(|skill| {
        skill
            .frontmatter
            .extensions
            .secrets
            .iter()
            .map(move |secret| (skill, secret))
    }) {
        if !secret.optional && !args.pass_env.contains(&secret.name) {
            printer.status(
                "Note",
                &format!(
                    "skill `{}` needs the secret {}, which is not passed: its scripts and tools will be refused until the server runs with --pass-env {}",
                    skill.name, secret.name, secret.name
                ),
            );
        }
    }
    let support = sandbox::probe();
    if args.unsandboxed {
        printer.status(
            "Warning",
            "--unsandboxed: scripts and tools run with every permission of this user",
        );
    } else {
        // What the sandbox is built of is detail, for `-v`; what it
        // cannot do is a warning below.
        for note in &support.notes {
            tracing::info!("sandbox: {note}");
        }
        if let Err(why) = jail::probe() {
            printer.status(
                "Warning",
                &format!(
                    "{why}: every script and tool call will be refused (instructions and resources are served as usual); allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, user.max_user_namespaces > 0, or an AppArmor profile that permits them), or use --unsandboxed for skills you trust"
                ),
            );
        }
        if !support.filesystem {
            printer.status(
                "Warning",
                "this kernel has no Landlock: every script and tool call will be refused; use Linux 6.7 or later, or --unsandboxed for skills you trust",
            );
        }
    }
    let run = RunConfig {
        limits: Limits {
            timeout: Duration::from_secs(args.timeout),
            ..Limits::default()
        },
        unsandboxed: args.unsandboxed,
        server_env: exec::server_environment(),
        project: options.project.clone(),
        pass_env: args.pass_env.iter().cloned().collect(),
        client_timeout: Duration::from_secs(args.client_timeout),
    };
    let sources = catalog.sources.clone();
    drop(catalog);
    let shared = Arc::new(Shared::new(view, args.max_active, audit, run)?);
    // Kept until the server stops; dropping it stops the watching.
    let _watch = (!args.no_watch)
        .then(|| watch_catalog(&shared, options, sources, *printer))
        .flatten();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let served = match args.listen {
        None => runtime.block_on(async move {
            // Requests are numbered as they are read, so calls of the
            // session apply in the order the client sent them. Pipes (as
            // clients start servers) are read and written by the runtime's
            // reactor, not handed to a blocking thread per message.
            let (stdin, stdout) = rmcp::transport::stdio_pipes();
            let service = SkillServer::new(shared, Transport::Stdio)?
                .serve(Ordered::new(AsyncRwTransport::new_server(stdin, stdout)))
                .await
                .map_err(|error| {
                    UserError::new("the MCP client did not complete the handshake")
                        .with_source(error)
                })?;
            service.waiting().await?;
            anyhow::Ok(())
        }),
        Some(address) => runtime.block_on(serve_http(shared, address, args, printer)),
    };
    // The skills' sealed copies and the launchers made ahead go with the
    // server, whatever ended it.
    jail::seal::clean_up();
    jail::clean_up();
    served?;
    Ok(ExitStatus::Success)
}

/// Serves the catalog anew whenever what it was read from changes, and
/// says so on stderr. Without a way to watch, says why and serves the
/// catalog as read.
fn watch_catalog(
    shared: &Arc<Shared>,
    options: Options,
    sources: Sources,
    printer: Printer,
) -> Option<watch::Watch> {
    let live = Arc::downgrade(shared);
    // Each note is said once, not again at every reading.
    let mut told: std::collections::HashSet<String> =
        shared.live.view().catalog.notes.iter().cloned().collect();
    let reload = move || {
        let shared = live.upgrade()?;
        match ServedCatalog::load(&options) {
            Ok(catalog) => {
                let sources = catalog.sources.clone();
                let notes = catalog.notes.clone();
                let catalog = Arc::new(catalog);
                let view = View::new(Arc::clone(&catalog), secrets(&catalog));
                if let Some(change) = shared.live.replace(view) {
                    printer.status(
                        "Reloaded",
                        &format!(
                            "{} skill(s) now: {}",
                            catalog.skills().len(),
                            change.describe()
                        ),
                    );
                }
                for note in notes {
                    if told.insert(note.clone()) {
                        printer.status("Note", &note);
                    }
                }
                Some(sources)
            }
            Err(error) => {
                printer.status(
                    "Warning",
                    &format!(
                        "the skills changed, but reading them again failed ({error:#}); still serving them as they were"
                    ),
                );
                None
            }
        }
    };
    match watch::start(sources, reload, move |warning| {
        printer.status("Warning", &warning);
    }) {
        Ok(watch) => Some(watch),
        Err(error) => {
            printer.status(
                "Warning",
                &format!(
                    "cannot watch the skill folders ({error}): skills are served as read now until a restart"
                ),
            );
            None
        }
    }
}

/// A redactor for the value of every secret a served skill declares, as
/// the server's environment has it.
fn secrets(catalog: &ServedCatalog) -> Redactor {
    let mut names: Vec<&str> = catalog
        .skills()
        .iter()
        .flat_map(|skill| skill.frontmatter.extensions.secrets.iter())
        .map(|secret| secret.name.as_str())
        .collect();
    names.sort_unstable();
    names.dedup();
    Redactor::new(
        names
            .into_iter()
            .filter_map(|name| Some((name.to_owned(), std::env::var(name).ok()?))),
    )
}

/// Serves streamable HTTP at `/mcp` on `address` until Ctrl-C or SIGTERM.
async fn serve_http(
    shared: Arc<Shared>,
    address: SocketAddr,
    args: &McpArgs,
    printer: &Printer,
) -> anyhow::Result<()> {
    let token = match &args.token_file {
        Some(path) => {
            let (token, created) = Token::load_or_create(path).map_err(|error| {
                let hint = error.hint();
                UserError::new(error.to_string()).with_hint(hint)
            })?;
            if created {
                printer.status(
                    "Token",
                    &format!(
                        "made a token in {} (shown this once): {}; clients send it as `Authorization: Bearer <token>`",
                        path.display(),
                        token.reveal()
                    ),
                );
            }
            Some(Arc::new(token))
        }
        None => None,
    };
    if !address.ip().is_loopback() && token.is_none() {
        return Err(UserError::new(format!("{address} is not a loopback address, and no --token-file is given"))
            .with_hint("skillpkg mcp runs a skill's scripts for whoever connects: listen on 127.0.0.1 or [::1], or add --token-file FILE so that only bearers of its token get in")
            .into());
    }
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .map_err(|error| {
            UserError::new(format!("cannot listen on {address}")).with_source(error)
        })?;
    let bound = listener.local_addr()?;
    let stop = CancellationToken::new();
    let config = StreamableHttpServerConfig::default()
        .with_cancellation_token(stop.child_token())
        // Browsers send an Origin on every cross-site request; MCP clients
        // send none. A page from this server's own address may call it (as
        // the spec's same-origin rule allows), and those the operator lists;
        // any other Origin is refused.
        .with_allowed_origins(allowed_origins(bound, &args.allow_origin))
        .enforce_origin_validation();
    let config = if bound.ip().is_loopback() {
        // Only this server's own authority is a valid Host: a page that
        // rebinds a DNS name to 127.0.0.1 gets nowhere, and neither does a
        // page that posts to 127.0.0.1 directly.
        config.with_allowed_hosts([bound.to_string(), format!("localhost:{}", bound.port())])
    } else {
        // On the network the names clients use are not known here; the
        // token, which a rebinding page does not have, is the guard.
        config.disable_allowed_hosts()
    };
    let service = StreamableHttpService::new(
        move || SkillServer::new(shared.clone(), Transport::Http),
        Arc::new(OrderedSessions(LocalSessionManager::default())),
        config,
    );
    let router = axum::Router::new()
        .nest_service("/mcp", service)
        // rmcp answers a session's DELETE with 202; the session is gone
        // by then, and clients (the Python SDK) take anything but 200 or
        // 204 for a failed termination.
        .layer(axum::middleware::map_response(
            |method: axum::http::Method, mut response: axum::response::Response| async move {
                if method == axum::http::Method::DELETE
                    && response.status() == axum::http::StatusCode::ACCEPTED
                {
                    *response.status_mut() = axum::http::StatusCode::NO_CONTENT;
                }
                response
            },
        ));
    let router = match token {
        None => router,
        Some(token) => router
            .layer(axum::middleware::from_fn(
                move |request: axum::extract::Request, next: axum::middleware::Next| {
                    let token = token.clone();
                    async move {
                        if token.admits(request.headers()) {
                            next.run(request).await
                        } else {
                            access::challenge(
                                &format!(
                                    "http://{}{}",
                                    authority(request.headers(), bound),
                                    access::METADATA_PATH
                                ),
                                request
                                    .headers()
                                    .contains_key(axum::http::header::AUTHORIZATION),
                            )
                        }
                    }
                },
            ))
            // RFC 9728: the metadata is public, at the well-known path with
            // and without the resource's own path after it.
            .route(access::METADATA_PATH, axum::routing::get(metadata))
            .route(
                "/.well-known/oauth-protected-resource",
                axum::routing::get(metadata),
            ),
    };
    printer.result(&format!("listening on http://{bound}/mcp"));
    axum::serve(listener, router)
        .with_graceful_shutdown(async move {
            shutdown_signal().await;
            stop.cancel();
        })
        .await?;
    Ok(())
}

/// The authority a request was sent to: its `Host`, else the address
/// the server is bound to.
fn authority(headers: &axum::http::HeaderMap, bound: SocketAddr) -> String {
    headers
        .get(axum::http::header::HOST)
        .and_then(|host| host.to_str().ok())
        .filter(|host| {
            !host.is_empty()
                && host
                    .bytes()
                    .all(|byte| byte.is_ascii_alphanumeric() || b".-:[]".contains(&byte))
        })
        .map_or_else(|| bound.to_string(), ToOwned::to_owned)
}

async fn metadata(headers: axum::http::HeaderMap) -> axum::Json<serde_json::Value> {
    let host = authority(&headers, SocketAddr::from(([127, 0, 0, 1], 0)));
    axum::Json(access::metadata(&format!("http://{host}/mcp")))
}

/// The origins a request may come from: this server's own address under
/// each name it answers to, and `extra` (`--allow-origin`).
fn allowed_origins(bound: SocketAddr, extra: &[String]) -> Vec<String> {
    let port = bound.port();
    let mut origins = vec![
        format!("http://{bound}"),
        format!("http://localhost:{port}"),
    ];
    origins.extend(extra.iter().cloned());
    origins
}

async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    let Ok(mut terminate) =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
    else {
        let _ = interrupt.await;
        return;
    };
    tokio::select! {
        _ = interrupt => {},
        _ = terminate.recv() => {},
    }
}
