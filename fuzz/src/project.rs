//! `lockfile` and `manifest`: a project's `skills.lock` and `skills.toml`,
//! which arrive with a cloned repository and so are anyone's input.

use skillpkg::project::{lockfile, manifest};
use skillpkg_index::skill::SkillName;

/// Reads `data` as `skills.lock`. A lockfile that reads renders to one that
/// reads the same, and renders the same again.
pub fn lockfile(data: &[u8]) {
    let root = project_folder(lockfile::LOCKFILE, data);
    let Ok(Some(lock)) = lockfile::read(&root) else {
        return;
    };
    let rendered = lock.render();
    fs_err::write(root.join(lockfile::LOCKFILE), &rendered).expect("the lockfile can be written");
    let again = lockfile::read(&root)
        .unwrap_or_else(|error| panic!("a rendered lockfile does not read: {error:#}\n{rendered}"))
        .expect("the lockfile is there");
    assert_eq!(again.render(), rendered);
    for skill in &lock.skills {
        assert!(lock.get(&skill.name).is_some());
        let _ = skill.registry();
        // A signer reads as a key or a legacy id, and writes back as read.
        if let Some(signer) = skill.signer {
            let again = again.get(&skill.name).and_then(|entry| entry.signer);
            assert_eq!(again, Some(signer));
        }
    }
}

/// Reads `data` as `skills.toml`. When it reads, edits it as `skillpkg add`
/// and `remove` do, and checks that the edited manifest reads and says what
/// the edit set.
pub fn manifest(data: &[u8]) {
    let root = project_folder(manifest::MANIFEST, data);
    if manifest::read(&root).is_err() {
        return;
    }
    let added: SkillName = "fuzz-added".parse().expect("a valid name");
    let removed: SkillName = "pdf-processing".parse().expect("a valid name");
    let set = manifest::SetSkill {
        name: added.clone(),
        requirement: "^1.2".into(),
        registry: manifest::RegistryChoice::Keep,
    };
    let Ok(before) = std::str::from_utf8(data) else {
        return;
    };
    let Ok((text, _)) = manifest::edit(
        before,
        std::slice::from_ref(&set),
        std::slice::from_ref(&removed),
        &["claude".to_owned()],
    ) else {
        return;
    };
    let again = manifest::parse(root.join(manifest::MANIFEST), &text)
        .unwrap_or_else(|error| panic!("an edited manifest does not read: {error:#}\n{text}"));
    let requirement = again
        .skills
        .get(&added)
        .unwrap_or_else(|| panic!("the edit did not add the skill\n{text}"));
    assert_eq!(requirement.requirement.to_string(), "^1.2");
    assert!(
        !again.skills.contains_key(&removed),
        "the edit did not remove the skill\n{text}"
    );
}

/// Returns a project folder holding `data` as its only file, `file_name`.
fn project_folder(file_name: &str, data: &[u8]) -> std::path::PathBuf {
    let root = crate::scratch().join("project");
    fs_err::create_dir_all(&root).expect("the project folder can be made");
    crate::clear(&root);
    fs_err::write(root.join(file_name), data).expect("the project file can be written");
    root
}
