//! Reads the catalog again when what it was read from changes: a skill
//! installed, updated or removed while `skillpkg mcp` runs is served, served
//! anew or no longer served, checked against the lock and vetted exactly as
//! at start (docs/runtime.md, "A live catalog").
//!
//! The folders come from the catalog itself ([`Sources`]): the scopes the
//! host reads (watched whole, links inside not followed), the folders that
//! served linked skills point at, and the
//! project folder and the manifest's, for `skills.lock`. A scope that does
//! not exist yet is watched through the nearest folder above it that does,
//! so creating `.claude/skills` is seen too. The watches are made again
//! after every reading, since the folders that exist change.
//!
//! Changes come in bursts (an install writes a folder, then the lock), so a
//! reading waits until nothing has changed for [`QUIET`], but never longer
//! than [`MOST_DELAY`] after the first change. Opening and reading files is
//! no change: the server's own reading of the skills would otherwise set
//! it off again.

use std::collections::BTreeMap;
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
    let mut watching = BTreeMap::new();
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
                // Watched before it is read: a folder made since the last
                // reading (a scope) is watched first, so what is written
                // in it while the catalog is read is seen, and read next.
                rewatch(&mut watcher, &mut watching, &sources, &warn);
                if let Some(now) = reload() {
                    sources = now;
                }
                rewatch(&mut watcher, &mut watching, &sources, &warn);
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

/// What to watch for `sources`, and how.
fn wanted(sources: &Sources) -> BTreeMap<PathBuf, RecursiveMode> {
    let mut wanted = BTreeMap::new();
    for tree in &sources.trees {
        match tree.ancestors().find(|dir| dir.is_dir()) {
            Some(dir) if dir == tree => {
                wanted.insert(dir.to_owned(), RecursiveMode::Recursive);
            }
            Some(dir) => {
                wanted
                    .entry(dir.to_owned())
                    .or_insert(RecursiveMode::NonRecursive);
            }
            None => {}
        }
    }
    for dir in &sources.project {
        if dir.is_dir() {
            wanted
                .entry(dir.clone())
                .or_insert(RecursiveMode::NonRecursive);
        }
    }
    // A folder inside one watched whole needs no watch of its own.
    let whole: Vec<PathBuf> = wanted
        .iter()
        .filter(|(_, mode)| **mode == RecursiveMode::Recursive)
        .map(|(dir, _)| dir.clone())
        .collect();
    wanted.retain(|dir, _| {
        !whole
            .iter()
            .any(|tree| dir != tree && dir.starts_with(tree))
    });
    wanted
}

/// Brings the watches from `watching` to what `sources` needs.
fn rewatch(
    watcher: &mut notify::RecommendedWatcher,
    watching: &mut BTreeMap<PathBuf, RecursiveMode>,
    sources: &Sources,
    warn: &impl Fn(String),
) {
    let wanted = wanted(sources);
    watching.retain(|dir, mode| {
        if wanted.get(dir) == Some(mode) {
            return true;
        }
        // Gone, or to be watched another way; a folder removed is no
        // longer watched anyway.
        let _ = watcher.unwatch(dir);
        false
    });
    for (dir, mode) in wanted {
        if watching.contains_key(&dir) {
            continue;
        }
        match watcher.watch(&dir, mode) {
            Ok(()) => {
                watching.insert(dir, mode);
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
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sources(root: &Path) -> Sources {
        Sources {
            trees: vec![
                root.join("project/.claude/skills"),
                root.join("home/.claude/skills"),
            ],
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
            BTreeMap::from([
                (root.join("home"), RecursiveMode::NonRecursive),
                (root.join("project"), RecursiveMode::NonRecursive),
                (
                    root.join("project/.claude/skills"),
                    RecursiveMode::Recursive
                ),
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
            project: vec![root.join("project")],
        };
        let again = sources.clone();
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
        // Now inside the scope, which is watched whole after the reading.
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
