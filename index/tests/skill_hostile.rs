//! Hostile skill folders and `SKILL.md` files against packing and
//! validation: what an author (or someone whose skill a registry publishes)
//! could put in a folder or a frontmatter to harm whoever installs, lists or
//! searches it. Each case is refused with a diagnostic that names the file,
//! the place and what to do, or shown to be harmless.

use std::path::PathBuf;

use skillpkg_index::archive::{Limits, PackError, PathProblem, pack_dir};
use skillpkg_index::skill::{Code, SkillReport, ValidateOptions, validate_skill};
use tempfile::TempDir;

const SKILL_MD: &str = "---\nname: sample\ndescription: Does sample things.\n---\n# Body\n";

/// A skill folder named `sample` holding `files`.
struct Folder {
    _temp: TempDir,
    dir: PathBuf,
}

impl Folder {
    fn new(files: &[(&str, &[u8])]) -> Self {
        let temp = TempDir::new().expect("temp dir");
        let dir = temp.path().join("sample");
        for (path, contents) in files {
            let file = dir.join(path);
            fs_err::create_dir_all(file.parent().expect("a parent")).expect("create folders");
            fs_err::write(&file, contents).expect("write");
        }
        Self { _temp: temp, dir }
    }

    fn pack(&self) -> Result<Vec<String>, PackError> {
        let packed = pack_dir(
            &self.dir,
            "sample".parse().expect("a valid name"),
            semver::Version::new(1, 0, 0),
            &Limits::default(),
        )?;
        Ok(packed.files.into_iter().map(|file| file.path).collect())
    }

    fn validate(&self) -> SkillReport {
        validate_skill(&self.dir, &ValidateOptions::for_folder(&self.dir))
    }
}

fn codes(report: &SkillReport) -> Vec<Code> {
    report.diagnostics.iter().map(|d| d.code).collect()
}

// Version control metadata.

#[test]
fn pack_leaves_out_version_control_metadata_as_its_tools_write_it() {
    let folder = Folder::new(&[
        ("SKILL.md", SKILL_MD.as_bytes()),
        (".git", b"gitdir: ../../.git/modules/sample\n"),
        (
            ".gitmodules",
            b"[submodule \"x\"]\n\tpath = x\n\turl = ../x\n",
        ),
        (".gitignore", b"*.log\n"),
        (".hg/hgrc", b"[hooks]\npre-status = touch /tmp/pwned\n"),
        (".svn/wc.db", b""),
        ("vendor/CVS/Root", b":ext:attacker@example.com:/cvs\n"),
        (
            "vendor/_darcs/prefs/defaults",
            b"apply posthook touch /tmp/pwned\n",
        ),
        ("vendor/lib.py", b"print('hi')\n"),
    ]);
    assert_eq!(
        folder.pack().expect("packs"),
        [".gitignore", "SKILL.md", "vendor/lib.py"]
    );
    assert!(folder.validate().is_valid(), "{:#?}", folder.validate());
}

#[test]
fn pack_refuses_git_metadata_in_another_case() {
    let folder = Folder::new(&[
        ("SKILL.md", SKILL_MD.as_bytes()),
        (".GIT/config", b"[core]\n\tfsmonitor = touch /tmp/pwned\n"),
        (".GIT/HEAD", b"ref: refs/heads/main\n"),
    ]);
    let error = folder.pack().expect_err("packed `.GIT`");
    assert!(
        matches!(
            &error,
            PackError::VersionControl {
                path,
                problem: PathProblem::VersionControl { system: "Git", .. }
            } if path == ".GIT"
        ),
        "{error:?}"
    );
    let report = folder.validate();
    assert_eq!(
        codes(&report),
        [Code::VcsMetadata],
        "one diagnostic for the folder, none for what is inside it"
    );
    let hint = report.diagnostics[0].hint.as_deref().unwrap_or_default();
    assert!(hint.contains(".skillignore"), "{hint}");
}

#[test]
fn pack_refuses_a_folder_laid_out_as_a_git_repository() {
    let folder = Folder::new(&[
        ("SKILL.md", SKILL_MD.as_bytes()),
        ("assets/repo/HEAD", b"ref: refs/heads/main\n"),
        (
            "assets/repo/config",
            b"[core]\n\tpager = touch /tmp/pwned\n",
        ),
        (
            "assets/repo/refs/heads/main",
            b"0000000000000000000000000000000000000000\n",
        ),
        ("assets/repo/objects/info/packs", b""),
    ]);
    let error = folder.pack().expect_err("packed a repository");
    assert!(
        matches!(&error, PackError::GitRepository { folder } if folder == "assets/repo"),
        "{error:?}"
    );
    assert_eq!(codes(&folder.validate()), [Code::VcsMetadata]);
}

// Names.

/// `con`, `nul`, `com1` and the like are devices on Windows: no folder can
/// have the name, so a skill named so could never be installed there, and
/// archive paths already refuse them.
#[test]
fn skill_named_after_a_windows_device_is_refused() {
    for name in ["con", "prn", "aux", "nul", "com1", "com0", "lpt9"] {
        let error = name.parse::<skillpkg_index::skill::SkillName>().err();
        let message = error.map(|error| error.to_string()).unwrap_or_default();
        assert!(
            message.contains("reserved device name on Windows"),
            "`{name}` was {message:?}"
        );

        let folder = Folder::new(&[(
            "SKILL.md",
            format!("---\nname: {name}\ndescription: d\n---\n").as_bytes(),
        )]);
        let report = validate_skill(&folder.dir, &ValidateOptions::default());
        let diagnostic = report
            .diagnostics
            .iter()
            .find(|d| d.code == Code::NameInvalid)
            .unwrap_or_else(|| panic!("`{name}`: {:#?}", report.diagnostics));
        assert!(
            diagnostic.message.contains("Windows"),
            "{}",
            diagnostic.message
        );
        assert_eq!(
            diagnostic.hint.as_deref(),
            Some(format!("a valid name would be `{name}-skill`").as_str())
        );
    }
    for name in ["console", "con-tools", "com10", "nul1", "lpt"] {
        assert!(
            name.parse::<skillpkg_index::skill::SkillName>().is_ok(),
            "{name}"
        );
    }
}

/// A registry's index line naming such a skill is refused when read, since
/// a `SkillName` is parsed wherever it comes from.
#[test]
fn index_line_naming_a_windows_device_is_refused() {
    let error = serde_json::from_str::<skillpkg_index::skill::SkillName>("\"aux\"").unwrap_err();
    assert!(error.to_string().contains("Windows"), "{error}");
}
