//! Reads the catalog again when what it was read from changes: a skill
//! installed, updated or removed while `skillpkg mcp` runs is served, served
//! anew or no longer served, checked against the lock and vetted exactly as
//! at start (docs/runtime.md, "A live catalog").
//!
//! The folders come from the catalog itself ([`Sources`]), each watched by
//! itself, never a whole tree: the scopes the host reads, every skill
//! folder in them, the folders that hold a served skill's files (at most
//! 512 files a skill), and the project folder and the manifest's, for
//! `skills.lock`. So what is watched is bounded by what is served, not by
//! what a hostile skill folder holds (a million subfolders, a link to
//! `/`): a change in a folder no served file is in is seen only where it
//! makes a folder that is watched change. A scope that does not exist yet
//! is watched through the nearest folder above it that does, so creating
//! `.claude/skills` is seen too. The watches are made again after every
//! reading, since the folders that exist change.
//!
//! Changes come in bursts (an install writes a folder, then the lock), so a
//! reading waits until nothing has changed for [`QUIET`], but never longer
//! than [`MOST_DELAY`] after the first change. Opening and reading files is
//! no change: the server's own reading of the skills would otherwise set
//! it off again.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

use notify::event::{AccessKind, AccessMode, EventKind};
use notify::{RecursiveMode, Watcher as _};

use super::catalog::Sources;

/// How long nothing must change before the catalog is read again.
pub const QUIET: Duration = Duration::from_millis(150);

/// The longest a change waits to be read while changes keep coming.
pub const MOST_DELAY: Duration = Duration::from_secs(2);

/// The most readings one change leads to, while each watches new folders.
const READINGS: usize = 3;

/// How often the watching thread looks whether the server is stopping.
const POLL: Duration = Duration::from_millis(500);

/// The files outside the scopes whose change may change the catalog.
const PROJECT_FILES: [&str; 2] = [
    crate::project::lockfile::LOCKFILE,
    crate::project::manifest::MANIFEST,
];

/// A running watch: the thread stops when this is dropped.
#[derive(Debug)]
pub struct Watch {
    stop: Arc<AtomicBool>,
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Watches `sources` (those of the catalog being served); after each
/// change, calls `reload`, which reads the catalog again, serves it and
/// returns what the new catalog was read from. `warn` gets what the
/// operator should know (a folder that cannot be watched).
pub fn start(
    sources: Sources,
    mut reload: impl FnMut() -> Option<Sources> + Send + 'static,
    warn: impl Fn(String) + Send + 'static,
) -> Result<Watch, notify::Error> {
    let (events, received) = mpsc::channel();
    // Links are not followed: a skill's folder may hold a link to `/`,
    // which watched would cost the whole disk. A linked skill's folder is
    // among the sources on its own.
    let mut watcher = notify::RecommendedWatcher::new(
        events,
        notify::Config::default().with_follow_symlinks(false),
    )?;
    let stop = Arc::new(AtomicBool::new(false));
    let stopping = Arc::clone(&stop);
    let mut watching = BTreeSet::new();
    rewatch(&mut watcher, &mut watching, &sources, &warn);
    std::thread::Builder::new()
        .name("skillpkg-watch".to_owned())
        .spawn(move || {
            let mut sources = sources;
            // The watcher lives as long as the thread that reads its events.
            let mut watcher = watcher;
            loop {
                let first = match received.recv_timeout(POLL) {
                    Ok(event) => event,
                    Err(RecvTimeoutError::Timeout) => {
                        if stopping.load(Ordering::Relaxed) {
                            return;
                        }
                        continue;
                    }
                    Err(RecvTimeoutError::Disconnected) => return,
                };
                if !matters(&first, &sources) {
                    continue;
                }
                let started = Instant::now();
                loop {
                    let left = MOST_DELAY.saturating_sub(started.elapsed());
                    if left.is_zero() {
                        break;
                    }
                    match received.recv_timeout(QUIET.min(left)) {
                        Ok(_) => {}
                        Err(RecvTimeoutError::Timeout) => break,
                        Err(RecvTimeoutError::Disconnected) => return,
                    }
                }
                if stopping.load(Ordering::Relaxed) {
                    return;
                }
                // A folder watched only after a reading (a new skill's)
                // may have changed between the reading and its watch: then
                // the catalog is read once more, now that it is watched.
                for _ in 0..READINGS {
                    rewatch(&mut watcher, &mut watching, &sources, &warn);
                    if let Some(now) = reload() {
                        sources = now;
                    }
                    if !rewatch(&mut watcher, &mut watching, &sources, &warn) {
                        break;
                    }
                }
            }
        })
        .map_err(notify::Error::io)?;
    Ok(Watch { stop })
}

/// Returns true if and only if `event` may change the catalog read from
/// `sources`. An event the watcher could not name (an overflow of the
/// kernel's queue) always may.
fn matters(event: &notify::Result<notify::Event>, sources: &Sources) -> bool {
    let Ok(event) = event else {
        return true;
    };
    if event.need_rescan() {
        return true;
    }
    match event.kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => {}
        EventKind::Access(_) => return false,
        _ => {}
    }
    event.paths.iter().any(|path| concerns(path, sources))
}

/// Returns true if and only if a change at `path` may change the catalog:
/// it is in a watched tree, or on the way to one (a scope being made), or
/// the lock or the manifest.
fn concerns(path: &Path, sources: &Sources) -> bool {
    sources
        .trees
        .iter()
        .any(|tree| path.starts_with(tree) || tree.starts_with(path))
        || sources.project.iter().any(|dir| {
            path.parent() == Some(dir.as_path())
                && path
                    .file_name()
                    .and_then(|name| name.to_str())
                    .is_some_and(|name| PROJECT_FILES.contains(&name))
        })
}

/// The folders to watch for `sources`, each by itself.
fn wanted(sources: &Sources) -> BTreeSet<PathBuf> {
    let mut wanted = BTreeSet::new();
    for dir in sources.folders.iter().chain(&sources.project) {
        // A folder not there yet is watched through the nearest one above
        // it that is, whose change making it is seen.
        if let Some(there) = dir.ancestors().find(|dir| dir.is_dir()) {
            wanted.insert(there.to_owned());
        }
    }
    wanted
}

/// Brings the watches from `watching` to what `sources` needs; returns
/// true if and only if a folder is watched that was not before.
fn rewatch(
    watcher: &mut notify::RecommendedWatcher,
    watching: &mut BTreeSet<PathBuf>,
    sources: &Sources,
    warn: &impl Fn(String),
) -> bool {
    let wanted = wanted(sources);
    watching.retain(|dir| {
        if wanted.contains(dir) {
            return true;
        }
        // A folder removed is no longer watched anyway.
        let _ = watcher.unwatch(dir);
        false
    });
    let mut added = false;
    for dir in wanted {
        if watching.contains(&dir) {
            continue;
        }
        match watcher.watch(&dir, RecursiveMode::NonRecursive) {
            Ok(()) => {
                watching.insert(dir);
                added = true;
            }
            Err(error) => warn(format!(
                "cannot watch {} ({error}): skills changed there are served as they are now only after a restart{}",
                dir.display(),
                if matches!(error.kind, notify::ErrorKind::MaxFilesWatch) {
                    "; raise fs.inotify.max_user_watches"
                } else {
                    ""
                }
            )),
        }
    }
    added
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sources(root: &Path) -> Sources {
        let trees = vec![
            root.join("project/.claude/skills"),
            root.join("home/.claude/skills"),
        ];
        Sources {
            folders: trees.clone(),
            trees,
            project: vec![root.join("project")],
        }
    }

    #[test]
    fn what_concerns_the_catalog() {
        let root = Path::new("/r");
        let sources = sources(root);
        for path in [
            "/r/project/.claude/skills/pdf/SKILL.md",
            "/r/project/.claude/skills",
            // On the way to a scope: making it.
            "/r/project/.claude",
            "/r/project/skills.lock",
            "/r/project/skills.toml",
            "/r/home/.claude/skills/x/scripts/run.py",
        ] {
            assert!(concerns(Path::new(path), &sources), "{path}");
        }
        for path in [
            "/r/project/README.md",
            "/r/project/src/skills.lock",
            "/r/project/.claude/settings.json",
            "/r/home/.bash_history",
            "/r/project/.claude/skillsx/a",
        ] {
            assert!(!concerns(Path::new(path), &sources), "{path}");
        }
    }

    #[test]
    fn reads_are_no_change_and_an_overflow_is_one() {
        let sources = sources(Path::new("/r"));
        let at = |kind| {
            Ok(notify::Event::new(kind).add_path(PathBuf::from("/r/project/.claude/skills/a")))
        };
        assert!(!matters(
            &at(EventKind::Access(AccessKind::Open(
                notify::event::AccessMode::Any
            ))),
            &sources
        ));
        assert!(!matters(
            &at(EventKind::Access(AccessKind::Close(AccessMode::Read))),
            &sources
        ));
        assert!(matters(
            &at(EventKind::Access(AccessKind::Close(AccessMode::Write))),
            &sources
        ));
        assert!(matters(
            &at(EventKind::Modify(notify::event::ModifyKind::Any)),
            &sources
        ));
        let overflow =
            Ok(notify::Event::new(EventKind::Other).set_flag(notify::event::Flag::Rescan));
        assert!(matters(&overflow, &sources));
        assert!(matters(&Err(notify::Error::generic("queue")), &sources));
    }

    #[test]
    fn a_missing_scope_is_watched_through_the_folder_above_it() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        fs_err::create_dir_all(root.join("project/.claude/skills")).unwrap();
        fs_err::create_dir_all(root.join("home")).unwrap();
        let wanted = wanted(&sources(root));
        assert_eq!(
            wanted,
            BTreeSet::from([
                root.join("home"),
                root.join("project"),
                root.join("project/.claude/skills"),
            ])
        );
    }

    #[test]
    fn a_change_is_read_once_its_burst_is_over() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let scope = root.join("project/.claude/skills");
        fs_err::create_dir_all(root.join("project")).unwrap();
        let (told, reloads) = mpsc::channel();
        let sources = Sources {
            trees: vec![scope.clone()],
            folders: vec![scope.clone()],
            project: vec![root.join("project")],
        };
        // As a reading would find it: the skill's folder is one to watch.
        let mut again = sources.clone();
        again.folders.push(scope.join("pdf"));
        let _watch = start(
            sources,
            move || {
                told.send(Instant::now()).unwrap();
                Some(again.clone())
            },
            |warning| panic!("{warning}"),
        )
        .unwrap();
        // The scope is made, then a skill written in it in several steps:
        // one reading, after the last.
        fs_err::create_dir_all(scope.join("pdf")).unwrap();
        for step in 0..5 {
            fs_err::write(scope.join("pdf/SKILL.md"), format!("step {step}")).unwrap();
            std::thread::sleep(Duration::from_millis(20));
        }
        let last_write = Instant::now();
        let read_at = reloads.recv_timeout(Duration::from_secs(10)).unwrap();
        assert!(read_at >= last_write, "read before the burst was over");
        // Now in the skill's folder, watched since the reading.
        std::thread::sleep(QUIET * 2);
        while reloads.try_recv().is_ok() {}
        fs_err::write(scope.join("pdf/notes.md"), "more").unwrap();
        reloads.recv_timeout(Duration::from_secs(10)).unwrap();
        // A file of the project that is not the lock changes nothing.
        std::thread::sleep(QUIET * 2);
        while reloads.try_recv().is_ok() {}
        fs_err::write(root.join("project/README.md"), "x").unwrap();
        assert!(reloads.recv_timeout(QUIET * 4).is_err());
        fs_err::write(root.join("project/skills.lock"), "x").unwrap();
        reloads.recv_timeout(Duration::from_secs(10)).unwrap();
    }

    #[test]
    fn a_deep_folder_no_served_file_is_in_is_not_watched() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let scope = root.join("project/.claude/skills");
        let deep = scope.join("pdf/node_modules/a/b/c");
        fs_err::create_dir_all(&deep).unwrap();
        let sources = Sources {
            trees: vec![scope.clone()],
            folders: vec![scope.clone(), scope.join("pdf")],
            project: vec![root.join("project")],
        };
        assert_eq!(
            wanted(&sources),
            BTreeSet::from([root.join("project"), scope.clone(), scope.join("pdf")]),
            "one watch a folder, none for what no served file is in"
        );
    }

    #[test]
    fn a_link_inside_a_scope_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let scope = root.join("project/.claude/skills");
        let outside = root.join("outside");
        fs_err::create_dir_all(scope.join("pdf")).unwrap();
        fs_err::create_dir_all(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, scope.join("pdf/root")).unwrap();
        let (told, reloads) = mpsc::channel();
        let sources = Sources {
            trees: vec![scope.clone()],
            folders: vec![scope.clone(), scope.join("pdf")],
            project: vec![root.join("project")],
        };
        let again = sources.clone();
        let _watch = start(
            sources,
            move || {
                told.send(()).unwrap();
                Some(again.clone())
            },
            |warning| panic!("{warning}"),
        )
        .unwrap();
        fs_err::write(outside.join("elsewhere.txt"), "x").unwrap();
        assert!(
            reloads.recv_timeout(QUIET * 4).is_err(),
            "a change behind a link is not watched"
        );
        fs_err::write(scope.join("pdf/SKILL.md"), "x").unwrap();
        reloads.recv_timeout(Duration::from_secs(10)).unwrap();
    }
}
