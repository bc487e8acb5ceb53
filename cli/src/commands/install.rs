//! `skillpkg install` and `skillpkg update`, and the glue `add` and `remove`
//! share with them.

use std::path::PathBuf;

use serde_json::json;
use skillpkg_index::skill::SkillName;

use crate::args::{InstallArgs, InstallFlags, UpdateArgs};
use crate::client::registries::Registries;
use crate::client::registry;
use crate::client::settings::Environment;
use crate::error::{ExitStatus, UserError};
use crate::printer::Printer;
use crate::project::collection::{Collection, Refusal};
use crate::project::commit::{self, ManifestChange};
use crate::project::global;
use crate::project::install::{self, Options, Report};
use crate::project::lockfile::Lockfile;
use crate::project::manifest::{self, MANIFEST, Manifest};
use crate::project::targets::{self, Target};

/// How a command changes skills.toml around an install (`add`, `remove`).
/// Nothing is written until the install succeeds; then the manifest and the
/// lock are committed together ([`commit`]).
#[derive(Default)]
pub struct ManifestEdit<'a> {
    /// Changes the manifest's text before the install, which installs from
    /// the changed text.
    pub before_install: Option<&'a BeforeInstall<'a>>,
    /// Changes it once more, knowing the new lock.
    pub after_install: Option<&'a AfterInstall<'a>>,
    /// Names to warn about when they look like a more downloaded skill's
    /// (the names `add` was given).
    pub lookalikes: &'a [SkillName],
    /// The skills `add` takes as a collection, each of which may be
    /// refused on its own: an install that refuses some of them is tried
    /// again without them, and they are reported.
    pub collection: Option<&'a Collection>,
}

/// Changes a manifest's text.
pub type BeforeInstall<'a> = dyn Fn(&str) -> anyhow::Result<String> + 'a;

/// Changes a manifest's text, knowing the new lock.
pub type AfterInstall<'a> = dyn Fn(&str, &Lockfile) -> anyhow::Result<String> + 'a;

impl std::fmt::Debug for ManifestEdit<'_> {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("ManifestEdit")
            .field("before_install", &self.before_install.is_some())
            .field("after_install", &self.after_install.is_some())
            .field("lookalikes", &self.lookalikes)
            .field("collection", &self.collection)
            .finish()
    }
}

pub fn run(args: &InstallArgs, printer: &Printer) -> anyhow::Result<ExitStatus> {
    install_project(&args.install, None, printer)
}

pub fn update(args: &UpdateArgs, printer: &Printer) -> anyhow::Result<ExitStatus> {
    install_project(&args.install, Some(&args.names), printer)
}

pub fn lock(args: &InstallArgs, printer: &Printer) -> anyhow::Result<ExitStatus> {
    install_with(
        &args.install,
        args.install.registry.registry.as_deref(),
        None,
        true,
        &ManifestEdit::default(),
        printer,
    )
}

/// Returns the project root: the nearest folder with a skills.toml.
/// The project a command works on: with `global`, the user's own
/// ([`global::open`], made when `create`), else [`project_root`].
pub fn root_for(global: bool, create: bool) -> anyhow::Result<PathBuf> {
    if global {
        global::open(create)
    } else {
        project_root()
    }
}

pub fn project_root() -> anyhow::Result<PathBuf> {
    let cwd = std::env::current_dir()?;
    manifest::find_root(&cwd).ok_or_else(|| {
        UserError::new(format!(
            "no {MANIFEST} in {} or any folder above it",
            cwd.display()
        ))
        .with_hint("run `skillpkg init` to start a project")
        .into()
    })
}

/// The project's targets: the manifest's and the flags'. A target of the
/// manifest that leads out of the project is refused unless
/// `allow_external`: the manifest may come from a cloned repository, while
/// a `--target` on the command line is the user's own choice.
pub fn project_targets(
    manifest: &Manifest,
    flags: &[String],
    root: &std::path::Path,
    global: bool,
    allow_external: bool,
) -> anyhow::Result<Vec<Target>> {
    let mut names: Vec<&String> = manifest.targets.iter().collect();
    names.extend(flags.iter().filter(|flag| !manifest.targets.contains(flag)));
    if names.is_empty() {
        return Err(UserError::new("no install targets")
            .with_hint(format!(
                "add `targets = [\"claude\"]` under [install] in {MANIFEST}, or pass --target"
            ))
            .into());
    }
    names
        .into_iter()
        .map(|name| {
            let trusted = allow_external || flags.contains(name);
            targets::resolve(name, root, global, trusted)
        })
        .collect()
}

/// Installs the project with `flags`, updating `update` (None: nothing).
pub fn install_project(
    flags: &InstallFlags,
    update: Option<&[SkillName]>,
    printer: &Printer,
) -> anyhow::Result<ExitStatus> {
    install_with(
        flags,
        flags.registry.registry.as_deref(),
        update,
        false,
        &ManifestEdit::default(),
        printer,
    )
}

/// Installs the project with `flags`, the default registry chosen by
/// `registry` (which `add` may have taken for itself) instead of
/// `--registry`, and the manifest changed by `edit`.
/// With `--json`, a failure is also written to stdout as JSON
/// ([`crate::outcome::json_error`]).
pub fn install_with(
    flags: &InstallFlags,
    registry: Option<&str>,
    update: Option<&[SkillName]>,
    lock_only: bool,
    edit: &ManifestEdit<'_>,
    printer: &Printer,
) -> anyhow::Result<ExitStatus> {
    let result = loop {
        let result = install_or_fail(
            flags,
            registry,
            update.map(<[SkillName]>::to_vec),
            lock_only,
            edit,
            printer,
        );
        // An install that failed changed nothing: without the skills it
        // refused, it is tried again.
        match (&result, edit.collection) {
            (Err(error), Some(collection)) if collection.leave_out(error) => continue,
            _ => break result,
        }
    };
    if flags.json
        && let Err(error) = &result
    {
        printer.json(&crate::outcome::json_error(error));
    }
    result
}

fn install_or_fail(
    flags: &InstallFlags,
    registry: Option<&str>,
    update: Option<Vec<SkillName>>,
    lock_only: bool,
    edit: &ManifestEdit<'_>,
    printer: &Printer,
) -> anyhow::Result<ExitStatus> {
    let root = root_for(flags.global, false)?;
    let _lock = install::lock_project(&root, || {
        printer.status("Waiting", "for another skillpkg working in this project");
    })?;
    if let Some(note) = commit::recover(&root)? {
        printer.status("Recovered", &note);
    }
    let manifest_path = root.join(MANIFEST);
    let before = fs_err::read_to_string(&manifest_path)?;
    let text = match edit.before_install {
        Some(change) => change(&before)?,
        None => before.clone(),
    };
    // `--link` and `--copy` are kept in skills.toml, so that the next
    // install keeps the same layout.
    let text = match (flags.link, flags.copy) {
        (true, _) => manifest::set_link(&text, true)?,
        (_, true) => manifest::set_link(&text, false)?,
        _ => text,
    };
    let manifest = manifest::parse(manifest_path, &text)?;
    let targets = project_targets(
        &manifest,
        &flags.targets,
        &root,
        flags.global,
        // The user's own skills.toml is no one else's: its targets are
        // theirs to point anywhere.
        flags.allow_external_targets || flags.global,
    )?;
    // From here, a file error may be a target's.
    let install_into = || -> anyhow::Result<ExitStatus> {
        for target in &targets {
            install::clean_leftovers(target)?;
        }
        let registries = Registries::load(
            Environment::from_process(),
            Some(&manifest.registry_config()),
            registry,
        )?;
        let options = Options {
            locked: flags.locked || flags.frozen,
            offline: flags.offline || flags.frozen,
            force: flags.force,
            allow_signer_change: flags.allow_signer_change,
            allow_unsigned: flags.allow_unsigned,
            update,
            lock_only,
            lookalikes: edit.lookalikes.to_vec(),
            allow_risk: flags.allow_risk.clone(),
            link: manifest.link,
        };
        let progress = Progress::new(printer, flags.json);
        let report = registry::block_on(install::install(
            &root,
            &manifest,
            &registries,
            &targets,
            &options,
            &progress,
        ))??;
        let after = match edit.after_install {
            Some(change) => change(&text, &report.lock)?,
            None => text.clone(),
        };
        commit::commit(
            &root,
            Some(ManifestChange {
                before: &before,
                after: &after,
            }),
            report.lock_changed.then_some(&report.lock),
        )?;
        let refused = edit.collection.map(Collection::refused).unwrap_or_default();
        print_report(&report, &refused, flags.json, printer);
        // Skills of a collection that were left out make the status a
        // failure, as a script needs to know; the others are installed.
        Ok(if refused.is_empty() {
            ExitStatus::Success
        } else {
            ExitStatus::Failure
        })
    };
    install_into().map_err(|error| target_error(error, &targets))
}

/// A target folder that cannot be written (read-only, not a folder) as
/// the user's error, naming the target and why; other errors as they are.
fn target_error(error: anyhow::Error, targets: &[Target]) -> anyhow::Error {
    use std::io::ErrorKind;
    let Some(io) = error
        .chain()
        .find_map(|cause| cause.downcast_ref::<std::io::Error>())
    else {
        return error;
    };
    let why = match io.kind() {
        ErrorKind::PermissionDenied => "this user may not write there",
        ErrorKind::ReadOnlyFilesystem => "it is on a read-only file system",
        ErrorKind::NotADirectory | ErrorKind::AlreadyExists => {
            "a file stands where a folder must be"
        }
        _ => return error,
    };
    let text: String = error
        .chain()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(": ");
    let Some(target) = targets
        .iter()
        .find(|target| text.contains(&target.dir.display().to_string()))
    else {
        return error;
    };
    UserError::new(format!(
        "cannot write the install target `{}` ({}): {why}",
        target.name,
        target.dir.display()
    ))
    .with_hint("make it a folder this user can write, or choose other targets in skills.toml's [install] targets")
    .with_source(error)
    .into()
}

fn print_report(report: &Report, refused: &[Refusal], json: bool, printer: &Printer) {
    for warning in &report.warnings {
        // A yank reason is the registry's text.
        printer.diagnostic(&format!("warning: {}", crate::render::printable(warning)));
    }
    if json {
        printer.json(&json!({
            "installed": report.installed.iter().map(|(name, version, target)| json!({"name": name, "version": version, "target": target, "linked": report.is_linked(name, target)})).collect::<Vec<_>>(),
            "removed": report.removed.iter().map(|(name, target)| json!({"name": name, "target": target})).collect::<Vec<_>>(),
            "restored": report.restored,
            "unchanged": report.unchanged,
            "lock_changed": report.lock_changed,
            "audited": report.audited,
            "warnings": report.warnings,
            "refused": refused,
        }));
        return;
    }
    for audited in &report.audited {
        let rules = if audited.rules.is_empty() {
            String::new()
        } else {
            format!(" ({})", audited.rules.join(", "))
        };
        let suppressed = match audited.suppressed {
            0 => String::new(),
            count => format!(", {count} accepted in skills.toml"),
        };
        printer.status(
            "Audited",
            &format!(
                "{} {}: {}{rules}{suppressed}",
                audited.name, audited.version, audited.verdict
            ),
        );
    }
    for (name, version, target) in &report.installed {
        if report.is_linked(name, target) {
            printer.status(
                "Linked",
                &format!("{name} {version} into {target} (a symlink to the first target's copy)"),
            );
        } else {
            printer.status("Installed", &format!("{name} {version} into {target}"));
        }
    }
    for (name, target) in &report.removed {
        printer.status("Removed", &format!("{name} from {target}"));
    }
    for restored in &report.restored {
        // File names come from the user's folder.
        printer.status(
            "Restored",
            &crate::render::printable(&format!(
                "{} in {}: its files were changed by hand ({})",
                restored.name,
                restored.target,
                restored.files.join(", ")
            )),
        );
    }
    for refusal in refused {
        printer.diagnostic(&refusal.to_string());
    }
    let plural = |count: usize| if count == 1 { "" } else { "s" };
    let left_out = match refused.len() {
        0 => String::new(),
        count => format!("; {count} skill{} left out (above)", plural(count)),
    };
    printer.result(&format!(
        "{} installed, {} removed, {}{} already in place{}{left_out}",
        report.installed.len(),
        report.removed.len(),
        if report.restored.is_empty() {
            String::new()
        } else {
            format!("{} restored, ", report.restored.len())
        },
        report.unchanged,
        if report.lock_changed {
            "; skills.lock updated"
        } else {
            ""
        }
    ));
}

/// A progress bar on stderr when it is a terminal (and not `--quiet` or
/// `--json`); nothing otherwise.
struct Progress {
    bar: Option<indicatif::ProgressBar>,
}

impl Progress {
    fn new(printer: &Printer, json: bool) -> Self {
        use std::io::IsTerminal as _;
        let show = std::io::stderr().is_terminal() && !printer.is_quiet() && !json;
        Self {
            bar: show.then(indicatif::ProgressBar::hidden),
        }
    }
}

impl install::Reporter for Progress {
    fn fetching(&self, count: usize) {
        if let Some(bar) = &self.bar {
            bar.set_length(count as u64);
            bar.set_style(
                indicatif::ProgressStyle::with_template(
                    "{prefix:>12.cyan.bold} [{bar:30}] {pos}/{len} archives",
                )
                .expect("a valid template")
                .progress_chars("=> "),
            );
            bar.set_prefix("Fetching");
            // Drawn only once styled.
            bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
        }
    }

    fn fetched(&self, count: usize) {
        if let Some(bar) = &self.bar {
            bar.inc(count as u64);
        }
    }

    fn finished(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
