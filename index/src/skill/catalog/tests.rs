//! Discovery: precedence, shadowing, skipped skills and hostile folders.

use std::path::Path;

use super::*;

fn write_skill(dir: &Path, name: &str, description: &str) {
    fs_err::create_dir_all(dir).unwrap();
    fs_err::write(
        dir.join(SKILL_MD),
        format!("---\nname: {name}\ndescription: {description}\n---\n# {name}\n"),
    )
    .unwrap();
}

fn statuses(catalog: &Catalog) -> Vec<(String, &'static str)> {
    catalog
        .skills()
        .map(|skill| {
            let status = match &skill.status {
                SkillStatus::Active(_) => "active",
                SkillStatus::Shadowed { .. } => "shadowed",
                SkillStatus::Skipped { .. } => "skipped",
            };
            (skill.folder.clone(), status)
        })
        .collect()
}

struct Layout {
    _base: tempfile::TempDir,
    home: PathBuf,
    project: PathBuf,
}

fn layout() -> Layout {
    let base = tempfile::tempdir().unwrap();
    let home = base.path().join("home");
    let project = base.path().join("project");
    fs_err::create_dir_all(&home).unwrap();
    fs_err::create_dir_all(project.join(".git")).unwrap();
    Layout {
        home,
        project,
        _base: base,
    }
}

impl Layout {
    fn env(&self) -> Environment {
        Environment {
            cwd: self.project.clone(),
            home: Some(self.home.clone()),
            codex_home: None,
        }
    }
}

#[test]
fn a_higher_scope_shadows_a_skill_of_the_same_name() {
    let layout = layout();
    write_skill(
        &layout.project.join(".claude/skills/pdf"),
        "pdf",
        "Project PDF.",
    );
    write_skill(&layout.home.join(".claude/skills/pdf"), "pdf", "User PDF.");
    write_skill(&layout.home.join(".claude/skills/notes"), "notes", "Notes.");
    let catalog = discover(Host::ClaudeCode, &layout.env()).unwrap();
    assert_eq!(
        statuses(&catalog),
        vec![
            ("pdf".into(), "active"),
            ("notes".into(), "active"),
            ("pdf".into(), "shadowed"),
        ]
    );
    let shadowed = catalog.scopes[1]
        .skills
        .iter()
        .find(|s| s.folder == "pdf")
        .unwrap();
    let SkillStatus::Shadowed { by, .. } = &shadowed.status else {
        panic!("{shadowed:?}")
    };
    assert_eq!(by, &layout.project.join(".claude/skills/pdf/SKILL.md"));
    let active: Vec<&str> = catalog
        .active()
        .map(|(_, loaded)| loaded.frontmatter.description.as_str())
        .collect();
    assert_eq!(active, vec!["Project PDF.", "Notes."]);
}

#[test]
fn a_skipped_skill_does_not_shadow_a_lower_one() {
    let layout = layout();
    let broken = layout.project.join(".claude/skills/pdf");
    fs_err::create_dir_all(&broken).unwrap();
    fs_err::write(
        broken.join(SKILL_MD),
        "---\nname: pdf\n---\nno description\n",
    )
    .unwrap();
    write_skill(&layout.home.join(".claude/skills/pdf"), "pdf", "User PDF.");
    let catalog = discover(Host::ClaudeCode, &layout.env()).unwrap();
    assert_eq!(
        statuses(&catalog),
        vec![("pdf".into(), "skipped"), ("pdf".into(), "active")]
    );
    let SkillStatus::Skipped { code, .. } = &catalog.scopes[0].skills[0].status else {
        unreachable!()
    };
    assert_eq!(*code, Code::DescriptionMissing);
}

#[test]
fn skipped_skills_say_why_with_the_first_stopping_error() {
    let layout = layout();
    let skills = layout.project.join(".claude/skills");
    fs_err::create_dir_all(skills.join("unparsable")).unwrap();
    fs_err::write(
        skills.join("unparsable/SKILL.md"),
        "---\nname: [unclosed\n---\n",
    )
    .unwrap();
    write_skill(&skills.join("mismatch"), "other-name", "Named differently.");
    write_skill(&skills.join("Bad_Name"), "Bad_Name", "Bad.");
    fs_err::create_dir_all(skills.join("lowercase")).unwrap();
    fs_err::write(
        skills.join("lowercase/skill.md"),
        "---\nname: lowercase\ndescription: x\n---\n",
    )
    .unwrap();
    let catalog = discover(Host::ClaudeCode, &layout.env()).unwrap();
    let codes = skipped(&catalog);
    assert_eq!(
        codes,
        vec![
            ("Bad_Name".into(), Code::NameInvalid),
            ("lowercase".into(), Code::SkillMdCase),
            ("mismatch".into(), Code::NameMismatch),
            ("unparsable".into(), Code::YamlSyntax),
        ]
    );
}

#[test]
fn errors_that_do_not_stop_a_host_leave_the_skill_loaded() {
    let layout = layout();
    let dir = layout.project.join(".claude/skills/linked");
    write_skill(&dir, "linked", "Has a symlink inside.");
    #[cfg(unix)]
    std::os::unix::fs::symlink("/etc/hostname", dir.join("outside")).unwrap();
    let catalog = discover(Host::ClaudeCode, &layout.env()).unwrap();
    let (_, loaded) = catalog.active().next().expect("loaded");
    assert_eq!(loaded.frontmatter.description, "Has a symlink inside.");
    #[cfg(unix)]
    assert_eq!(loaded.first_error().map(|d| d.code), Some(Code::Symlink));
}

#[test]
fn a_symlinked_folder_counts_under_the_links_name() {
    let layout = layout();
    let real = layout.home.join("library/real-name");
    write_skill(&real, "shared", "Shared through a link.");
    let skills = layout.project.join(".claude/skills");
    fs_err::create_dir_all(&skills).unwrap();
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(&real, skills.join("shared")).unwrap();
        let catalog = discover(Host::ClaudeCode, &layout.env()).unwrap();
        let skill = catalog.skills().next().unwrap();
        assert!(skill.active().is_some(), "{skill:?}");
        assert_eq!(skill.link.as_deref(), Some(real.as_path()));
        assert_eq!(skill.location, skills.join("shared/SKILL.md"));
    }
}

#[test]
fn symlink_loops_and_dangling_links_are_skipped_with_a_reason() {
    let layout = layout();
    let skills = layout.project.join(".claude/skills");
    fs_err::create_dir_all(&skills).unwrap();
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink("loop", skills.join("loop")).unwrap();
        std::os::unix::fs::symlink("nowhere", skills.join("dangling")).unwrap();
        // A link back to the scope itself is a folder without SKILL.md.
        std::os::unix::fs::symlink(".", skills.join("itself")).unwrap();
        let catalog = discover(Host::ClaudeCode, &layout.env()).unwrap();
        let found = skipped(&catalog);
        assert_eq!(
            found,
            vec![
                ("dangling".into(), Code::UnreadableFile),
                ("loop".into(), Code::UnreadableFile),
            ]
        );
    }
}

#[test]
fn hidden_entries_files_and_folders_without_a_skill_are_not_skills() {
    let layout = layout();
    let skills = layout.project.join(".claude/skills");
    write_skill(&skills.join(".system"), "system", "Hidden.");
    write_skill(&skills.join("group/nested"), "nested", "Too deep.");
    fs_err::write(skills.join("README.md"), "not a skill").unwrap();
    let catalog = discover(Host::ClaudeCode, &layout.env()).unwrap();
    assert_eq!(catalog.skills().count(), 0);
    assert!(catalog.scopes[0].present);
}

#[test]
fn codex_prefers_the_working_folder_over_the_repository_over_the_user() {
    let layout = layout();
    let cwd = layout.project.join("sub");
    write_skill(&cwd.join(".agents/skills/fmt"), "fmt", "Sub.");
    write_skill(&layout.project.join(".codex/skills/fmt"), "fmt", "Root.");
    write_skill(
        &layout.project.join(".codex/skills/lint"),
        "lint",
        "Root lint.",
    );
    write_skill(
        &layout.home.join(".codex/skills/lint"),
        "lint",
        "User lint.",
    );
    let env = Environment {
        cwd,
        ..layout.env()
    };
    let catalog = discover(Host::Codex, &env).unwrap();
    let active: Vec<&str> = catalog
        .active()
        .map(|(_, loaded)| loaded.frontmatter.description.as_str())
        .collect();
    assert_eq!(active, vec!["Sub.", "Root lint."]);
    assert_eq!(catalog.skills().filter(|s| s.active().is_none()).count(), 2);
}

#[test]
fn others_named_finds_the_collisions_of_a_skill_in_other_scopes() {
    let layout = layout();
    let mine = layout.project.join(".codex/skills/fmt");
    write_skill(&mine, "fmt", "Mine.");
    write_skill(&layout.home.join(".agents/skills/fmt"), "fmt", "Theirs.");
    write_skill(&layout.home.join(".agents/skills/other"), "other", "Other.");
    let catalog = discover(Host::Codex, &layout.env()).unwrap();
    let others: Vec<&Path> = catalog
        .others_named("fmt", &mine)
        .map(|skill| skill.dir.as_path())
        .collect();
    assert_eq!(
        others,
        vec![layout.home.join(".agents/skills/fmt").as_path()]
    );
}

#[test]
fn an_unreadable_scope_is_reported_not_fatal() {
    let layout = layout();
    let skills = layout.project.join(".claude/skills");
    write_skill(&skills.join("pdf"), "pdf", "PDF.");
    write_skill(&layout.home.join(".claude/skills/notes"), "notes", "Notes.");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs_err::set_permissions(&skills, std::fs::Permissions::from_mode(0o000)).unwrap();
        let blocked = fs_err::read_dir(&skills).is_err();
        let catalog = discover(Host::ClaudeCode, &layout.env()).unwrap();
        fs_err::set_permissions(&skills, std::fs::Permissions::from_mode(0o755)).unwrap();
        // Privileged users read it anyway; then there is nothing to report.
        assert_eq!(catalog.scopes[0].error.is_some(), blocked);
        assert!(catalog.active().any(|(skill, _)| skill.folder == "notes"));
    }
}

#[test]
fn a_folder_given_directly_is_one_scope() {
    let base = tempfile::tempdir().unwrap();
    write_skill(&base.path().join("b"), "b", "B.");
    write_skill(&base.path().join("a"), "a", "A.");
    let catalog = from_folder(base.path(), Host::ClaudeCode);
    assert_eq!(catalog.host, None);
    assert_eq!(catalog.scopes[0].scope.kind, ScopeKind::Folder);
    assert_eq!(
        statuses(&catalog),
        vec![("a".into(), "active"), ("b".into(), "active")]
    );
}

/// Each skill's folder and the code it was skipped for; a skill that was
/// not skipped fails the test.
fn skipped(catalog: &Catalog) -> Vec<(String, Code)> {
    catalog
        .skills()
        .map(|skill| match &skill.status {
            SkillStatus::Skipped { code, .. } => (skill.folder.clone(), *code),
            other => panic!("{other:?}"),
        })
        .collect()
}
