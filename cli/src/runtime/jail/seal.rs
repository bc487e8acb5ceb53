//! Sealed copies: a run sees a skill as it was checked. The first run of
//! a skill copies the bytes of each file of its manifest, as they are read
//! and hashed against the manifest, into a folder private to the server
//! (mode 0700, files read-only); the run's new root shows that copy at the
//! skill's path, read-only. A file added to the installed folder later,
//! or swapped after the check, does not exist for the run: what runs is
//! what was checked, by construction, not by checking again just before.

use std::collections::HashMap;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use crate::runtime::catalog::ServedSkill;

/// The server's sealed copies, by skill name and tree hash.
struct Store {
    dir: tempfile::TempDir,
    sealed: HashMap<(String, String), Arc<PathBuf>>,
}

static STORE: OnceLock<Mutex<Option<Store>>> = OnceLock::new();

/// The sealed copy of `skill`, made on first use.
pub fn sealed(skill: &ServedSkill) -> Result<Arc<PathBuf>, String> {
    let store = STORE.get_or_init(|| Mutex::new(None));
    let mut store = store
        .lock()
        .map_err(|_| "the sealed copies are unusable after a panic".to_owned())?;
    if store.is_none() {
        let dir = tempfile::Builder::new()
            .prefix(&format!(
                "{}{}-",
                super::leftovers::SEALED_PREFIX,
                super::leftovers::owner_tag()
            ))
            .tempdir()
            .map_err(|error| format!("cannot make a private folder for sealed copies: {error}"))?;
        *store = Some(Store {
            dir,
            sealed: HashMap::new(),
        });
    }
    let Some(store) = store.as_mut() else {
        unreachable!("made above")
    };
    let key = (skill.name.clone(), skill.tree.clone());
    if let Some(path) = store.sealed.get(&key) {
        return Ok(Arc::clone(path));
    }
    let target = store
        .dir
        .path()
        .join(format!("{}-{}", skill.name, store.sealed.len()));
    copy(skill, &target).inspect_err(|_| {
        let _ = super::leftovers::make_writable(&target);
        let _ = fs_err::remove_dir_all(&target);
    })?;
    let path = Arc::new(target);
    store.sealed.insert(key, Arc::clone(&path));
    Ok(path)
}

/// Removes every sealed copy (at server shutdown).
pub fn clean_up() {
    if let Some(store) = STORE.get()
        && let Ok(mut store) = store.lock()
        && let Some(store) = store.take()
    {
        let _ = super::leftovers::make_writable(store.dir.path());
        drop(store.dir);
    }
}

fn copy(skill: &ServedSkill, target: &Path) -> Result<(), String> {
    fs_err::create_dir_all(target)
        .map_err(|error| format!("cannot make {}: {error}", target.display()))?;
    for file in &skill.files {
        let bytes = skill
            .read(&file.path, u64::MAX)
            .map_err(|error| error.to_string())?;
        let path = target.join(&file.path);
        if let Some(parent) = path.parent() {
            fs_err::create_dir_all(parent)
                .map_err(|error| format!("cannot make {}: {error}", parent.display()))?;
        }
        fs_err::write(&path, &bytes)
            .map_err(|error| format!("cannot write {}: {error}", path.display()))?;
        let mode = if file.executable { 0o555 } else { 0o444 };
        fs_err::set_permissions(&path, std::fs::Permissions::from_mode(mode))
            .map_err(|error| format!("cannot seal {}: {error}", path.display()))?;
    }
    Ok(())
}
