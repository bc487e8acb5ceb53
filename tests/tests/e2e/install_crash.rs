//! SIGKILL during installs: 50 times, at varying points of an install of 20
//! skills into two targets. After each kill, a new `skillpkg install`
//! completes, `skillpkg verify` passes, and no target ever holds a
//! half-written skill folder.

use std::path::Path;
use std::time::Duration;

use skillpkg_index::archive::{Limits, pack_dir};
use skillpkg_index::checksum::Checksum;
use skillpkg_index::registry::tree::StaticTree;
use skillpkg_index::registry::{IndexRecord, KeyRecord, KeysFile, RegistryConfig};
use skillpkg_index::signing::{SecretKey, Signature, TrustedComment};
use skillpkg_tests::{TestContext, run};

const SKILLS: usize = 20;

/// A signed file:// registry of `SKILLS` skills of a few files each.
fn registry(sandbox: &TestContext) -> String {
    let tree = StaticTree::new(sandbox.path().join("tree"));
    let key = SecretKey::generate().unwrap();
    let published = "2026-11-22T00:00:00Z".parse().unwrap();
    for index in 0..SKILLS {
        let name = format!("skill-{index:02}");
        let dir = sandbox.skill(
            &format!("src/{name}"),
            &name,
            "",
            &format!("# {name}\n{}\n", "instructions ".repeat(400)),
        );
        for file in 0..4 {
            sandbox.write(
                &format!("src/{name}/references/part-{file}.md"),
                "reference text ".repeat(800),
            );
        }
        let packed = pack_dir(
            &dir,
            name.parse().unwrap(),
            "1.0.0".parse().unwrap(),
            &Limits::default(),
        )
        .unwrap();
        let sha256 = Checksum::of(&packed.tarball);
        let comment = TrustedComment {
            name: packed.name.clone(),
            version: packed.version.clone(),
            sha256,
        };
        let signature = Signature::sign(&key, &packed.tarball, &comment.to_string()).to_file();
        tree.write_archive(
            &packed.name,
            &packed.version,
            &packed.tarball,
            Some(signature.as_bytes()),
            published,
        )
        .unwrap();
        let record = IndexRecord {
            v: 1,
            name: packed.name.clone(),
            vers: packed.version.clone(),
            cksum: sha256,
            size: packed.tarball.len() as u64,
            tree: packed.tree.to_string(),
            files: packed.files.len() as u64,
            deps: Vec::new(),
            description: name.clone(),
            yanked: false,
            yanked_reason: None,
            signer: Some(key.id().to_string()),
            published,
            audit: None,
        };
        tree.write_index(&packed.name, &[record]).unwrap();
        let keys = KeysFile {
            v: 1,
            keys: vec![KeyRecord {
                id: key.id().to_string(),
                key: key.public(),
                added: "2026-11-22T00:00:00Z".into(),
            }],
        };
        fs_err::create_dir_all(tree.root().join("keys")).unwrap();
        fs_err::write(
            tree.root().join(format!("keys/{name}.json")),
            serde_json::to_vec(&keys).unwrap(),
        )
        .unwrap();
    }
    tree.write_config(&RegistryConfig::read_only(8 * 1024 * 1024))
        .unwrap();
    format!("file://{}/", tree.root().display())
}

fn skillpkg(sandbox: &TestContext, project: &Path) -> std::process::Command {
    let mut command = sandbox.skillpkg_command();
    command
        .current_dir(project)
        .env("SKILLPKG_CONFIG_DIR", sandbox.path().join("config"))
        .env("SKILLPKG_CACHE_DIR", sandbox.path().join("cache"));
    command
}

/// Asserts every skill folder in the targets is complete: it has its
/// SKILL.md and all four references, with their full contents.
fn no_half_written_folder(project: &Path) {
    for target in [".claude/skills", ".agents/skills"] {
        let Ok(entries) = fs_err::read_dir(project.join(target)) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if name.starts_with('.') {
                continue;
            }
            for file in 0..4 {
                let text = fs_err::read_to_string(path.join(format!("references/part-{file}.md")))
                    .unwrap_or_else(|_| panic!("{} is half written", path.display()));
                assert_eq!(
                    text.len(),
                    "reference text ".len() * 800,
                    "{} is half written",
                    path.display()
                );
            }
            assert!(
                path.join("SKILL.md").is_file(),
                "{} is half written",
                path.display()
            );
        }
    }
}

#[test]
fn installs_killed_at_random_points_recover_and_verify() {
    let sandbox = TestContext::new();
    let url = registry(&sandbox);
    let project = sandbox.path().join("project");
    fs_err::create_dir_all(&project).unwrap();
    let mut manifest = format!(
        "[registry]\nurl = \"{url}\"\n\n[install]\ntargets = [\"claude\", \"agents\"]\n\n[skills]\n"
    );
    for index in 0..SKILLS {
        manifest.push_str(&format!("skill-{index:02} = \"1\"\n"));
    }
    fs_err::write(project.join("skills.toml"), manifest).unwrap();

    let mut state = 0x2545_F491_4F6C_DD1D_u64;
    let mut killed_mid_install = 0;
    for round in 0..50 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        // Start over from nothing now and then, and from an empty cache.
        if round % 5 == 0 {
            for target in [".claude", ".agents"] {
                let _ = fs_err::remove_dir_all(project.join(target));
            }
            let _ = fs_err::remove_file(project.join("skills.lock"));
        }
        if round % 7 == 0 {
            let _ = fs_err::remove_dir_all(sandbox.path().join("cache"));
        }
        // --force reinstalls every folder: the kill lands in swaps too.
        let mut child = skillpkg(&sandbox, &project)
            .args(["install", "--force", "--quiet"])
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(state % 120));
        if child.try_wait().unwrap().is_none() {
            killed_mid_install += 1;
        }
        let _ = child.kill();
        let _ = child.wait();
        no_half_written_folder(&project);

        let again = run(skillpkg(&sandbox, &project).args(["install"]));
        assert_eq!(again.code, 0, "round {round}: {again:?}");
        let verified = run(skillpkg(&sandbox, &project).args(["verify"]));
        assert_eq!(verified.code, 0, "round {round}: {verified:?}");
        // The same every time round.
        insta::allow_duplicates! {
            insta::assert_snapshot!(sandbox.redact(&verified.stdout), @"40 verified, 0 changed");
        }
        no_half_written_folder(&project);
    }
    assert!(
        killed_mid_install >= 10,
        "only {killed_mid_install} of 50 kills landed during an install: the test proved little"
    );
}
