//! Signatures end to end: skillpkg and the stock `minisign` tool verify each
//! other's signatures, and every way of lying is refused with a message that
//! names the skill, the version and the reason.

use std::path::{Path, PathBuf};
use std::process::Command;

use skillpkg_index::archive::{Limits, pack_dir};
use skillpkg_index::checksum::Checksum;
use skillpkg_index::registry::tree::StaticTree;
use skillpkg_index::registry::{IndexRecord, RegistryConfig};
use skillpkg_index::signing::{SecretKey, SourceInfo, sign_provenance};
use skillpkg_tests::{Output, TestContext, run};

fn minisign() -> Command {
    let path = ["/usr/bin/minisign", "/usr/local/bin/minisign"]
        .into_iter()
        .find(|path| Path::new(path).exists())
        .expect("minisign is not installed: `apt-get install minisign` (.ci/run does)");
    Command::new(path)
}

fn ok(command: &mut Command) -> String {
    let output = command.output().unwrap();
    assert!(
        output.status.success(),
        "{command:?} failed:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A sandbox with a packed skill `pdf@1.0.0` at `pdf-1.0.0.tgz`.
fn packed(sandbox: &TestContext) -> PathBuf {
    let dir = sandbox.skill("src/pdf", "pdf", "version: 1.0.0\n", "# PDF\n");
    let path = sandbox.path().join("pdf-1.0.0.tgz");
    let bytes = pack_dir(
        &dir,
        "pdf".parse().unwrap(),
        "1.0.0".parse().unwrap(),
        &Limits::default(),
    )
    .unwrap()
    .tarball;
    fs_err::write(&path, bytes).unwrap();
    path
}

fn skillpkg(sandbox: &TestContext, args: &[&str]) -> Output {
    run(sandbox
        .skillpkg_command()
        .args(args)
        .env("SKILLPKG_CONFIG_DIR", sandbox.path().join("config")))
}

fn comment(name: &str, version: &str, sha256: &Checksum) -> String {
    format!("skillpkg/1\t{name}@{version}\t{sha256}")
}

#[test]
fn a_skillpkg_signature_verifies_with_minisign() {
    let sandbox = TestContext::new();
    let tarball = packed(&sandbox);
    let generated = skillpkg(&sandbox, &["key", "generate", "--no-password", "--json"]);
    assert_eq!(generated.code, 0, "{generated:?}");
    let public = generated.json()["public_key"].as_str().unwrap().to_owned();
    let secret = sandbox.path().join("config/skillpkg/signing.key");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        fs_err::metadata(&secret).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let secret_text = fs_err::read_to_string(&secret).unwrap();
    let shown = skillpkg(&sandbox, &["key", "show"]);
    assert!(
        !shown.stdout.contains(secret_text.lines().nth(1).unwrap()),
        "the secret key is never printed"
    );

    let signed = skillpkg(&sandbox, &["sign", tarball.to_str().unwrap()]);
    assert_eq!(signed.code, 0, "{signed:?}");
    // `minisign -Vm FILE -P KEY`, and with -H (prehashed signatures only).
    let out = ok(minisign().arg("-Vm").arg(&tarball).arg("-P").arg(&public));
    assert!(
        out.contains(&comment(
            "pdf",
            "1.0.0",
            &Checksum::of(&fs_err::read(&tarball).unwrap())
        )),
        "{out}"
    );
    ok(minisign()
        .arg("-H")
        .arg("-Vm")
        .arg(&tarball)
        .arg("-p")
        .arg(sandbox.path().join("config/skillpkg/signing.key.pub")));
}

#[test]
fn minisign_keys_and_signatures_verify_in_skillpkg() {
    let sandbox = TestContext::new();
    let tarball = packed(&sandbox);
    let (public, secret) = (sandbox.path().join("m.pub"), sandbox.path().join("m.key"));
    ok(minisign()
        .args(["-G", "-W", "-p"])
        .arg(&public)
        .arg("-s")
        .arg(&secret));
    let sha256 = Checksum::of(&fs_err::read(&tarball).unwrap());
    // `minisign -S -H`: the trusted comment carries what skillpkg binds.
    ok(minisign()
        .args(["-S", "-W", "-s"])
        .arg(&secret)
        .arg("-m")
        .arg(&tarball)
        .arg("-t")
        .arg(comment("pdf", "1.0.0", &sha256)));
    let verified = skillpkg(
        &sandbox,
        &[
            "verify",
            tarball.to_str().unwrap(),
            "--key",
            public.to_str().unwrap(),
            "--json",
        ],
    );
    assert_eq!(verified.code, 0, "{verified:?}");
    let json = verified.json();
    assert_eq!(
        (json["name"].as_str(), json["version"].as_str()),
        (Some("pdf"), Some("1.0.0"))
    );
    let key_id = fs_err::read_to_string(&public)
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .rsplit(' ')
        .next()
        .unwrap()
        .to_owned();
    // minisign prints the id without leading zeros, skillpkg with all 16
    // digits: the same 64-bit id.
    let id = |text: &str| u64::from_str_radix(text, 16).unwrap();
    assert_eq!(id(json["signer"].as_str().unwrap()), id(&key_id));

    // And skillpkg signs with a key minisign made.
    fs_err::remove_file(format!("{}.minisig", tarball.display())).unwrap();
    let signed = skillpkg(
        &sandbox,
        &[
            "sign",
            tarball.to_str().unwrap(),
            "--key",
            secret.to_str().unwrap(),
        ],
    );
    assert_eq!(signed.code, 0, "{signed:?}");
    ok(minisign()
        .arg("-H")
        .arg("-Vm")
        .arg(&tarball)
        .arg("-p")
        .arg(&public));
}

#[test]
fn a_password_protected_minisign_key_signs_with_the_password_from_the_environment() {
    let sandbox = TestContext::new();
    let tarball = packed(&sandbox);
    let (public, secret) = (sandbox.path().join("e.pub"), sandbox.path().join("e.key"));
    let mut generate = minisign()
        .args(["-G", "-p"])
        .arg(&public)
        .arg("-s")
        .arg(&secret)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write as _;
    generate
        .stdin
        .take()
        .unwrap()
        .write_all(b"correct horse\ncorrect horse\n")
        .unwrap();
    assert!(generate.wait().unwrap().success());

    // No terminal and no password: nothing is asked, the variable is named.
    let refused = skillpkg(
        &sandbox,
        &[
            "sign",
            tarball.to_str().unwrap(),
            "--key",
            secret.to_str().unwrap(),
        ],
    );
    assert_eq!(refused.code, 1, "{refused:?}");
    insta::assert_snapshot!(sandbox.redact(&refused.stderr), @"
    error: the signing key needs a password, and there is no terminal to ask on
    hint: set SKILLPKG_KEY_PASSWORD (for CI, from a secret)
    ");
    let signed = run(sandbox
        .skillpkg_command()
        .args([
            "sign",
            tarball.to_str().unwrap(),
            "--key",
            secret.to_str().unwrap(),
        ])
        .env("SKILLPKG_KEY_PASSWORD", "correct horse"));
    assert_eq!(signed.code, 0, "{signed:?}");
    ok(minisign()
        .arg("-H")
        .arg("-Vm")
        .arg(&tarball)
        .arg("-p")
        .arg(&public));
}

#[test]
fn generating_a_key_without_a_terminal_asks_nothing() {
    let sandbox = TestContext::new();
    let output = skillpkg(&sandbox, &["key", "generate"]);
    assert_eq!(output.code, 1, "{output:?}");
    insta::assert_snapshot!(sandbox.redact(&output.stderr), @"
    error: cannot ask for a password: pass --no-password to store the key unencrypted
      Caused by: the signing key needs a password, and there is no terminal to ask on
    hint: set SKILLPKG_KEY_PASSWORD (for CI, from a secret)
    ");
    assert!(!sandbox.path().join("config/skillpkg/signing.key").exists());
}

/// A signed `pdf-1.0.0.tgz`, the signer's public key file, and a second key.
struct Signed {
    sandbox: TestContext,
    tarball: PathBuf,
    key: SecretKey,
    public: PathBuf,
}

impl Signed {
    fn new() -> Self {
        let sandbox = TestContext::new();
        let tarball = packed(&sandbox);
        let key = SecretKey::generate().unwrap();
        let public = sandbox.write("signer.pub", key.public().to_file());
        let this = Self {
            sandbox,
            tarball,
            key,
            public,
        };
        let sha256 = this.sha256();
        this.sign_with(&this.key, &comment("pdf", "1.0.0", &sha256));
        this
    }

    fn sha256(&self) -> Checksum {
        Checksum::of(&fs_err::read(&self.tarball).unwrap())
    }

    fn sign_with(&self, key: &SecretKey, trusted_comment: &str) {
        let signature = skillpkg_index::signing::Signature::sign(
            key,
            &fs_err::read(&self.tarball).unwrap(),
            trusted_comment,
        );
        fs_err::write(self.signature_path(), signature.to_file()).unwrap();
    }

    fn signature_path(&self) -> PathBuf {
        PathBuf::from(format!("{}.minisig", self.tarball.display()))
    }

    /// `text` redacted, and the signer's key id and public key named.
    fn redact(&self, text: &str) -> String {
        let public = self.key.public();
        self.sandbox
            .redact(text)
            .replace(&public.id().to_string(), "[SIGNER]")
            .replace(&public.to_base64(), "[SIGNER KEY]")
            .replace(
                &skillpkg_index::signing::SignerKey::of(&public).to_string(),
                "[SIGNER ED25519]",
            )
    }

    fn verify(&self) -> Output {
        skillpkg(
            &self.sandbox,
            &[
                "verify",
                self.tarball.to_str().unwrap(),
                "--key",
                self.public.to_str().unwrap(),
            ],
        )
    }

    /// Verifies, expecting a refusal, and returns what it said.
    fn refusal(&self) -> String {
        let output = self.verify();
        assert_eq!(output.code, 1, "{output:?}");
        self.redact(&output.stderr)
    }
}

#[test]
fn a_good_signature_verifies() {
    let signed = Signed::new();
    let output = signed.verify();
    assert_eq!(output.code, 0, "{output:?}");
    insta::assert_snapshot!(signed.redact(&output.stdout), @"
    signed by:  [SIGNER ED25519] (key id [SIGNER], minisign [SIGNER KEY])
    sha256:     sha256:13854313002959898e13da7fb96c68f6239c3826239677b397b458468b9d2f5a
    provenance: none
    ");
}

#[test]
fn a_tampered_tarball_is_refused() {
    let signed = Signed::new();
    let mut bytes = fs_err::read(&signed.tarball).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 1;
    fs_err::write(&signed.tarball, bytes).unwrap();
    insta::assert_snapshot!(signed.refusal(), @"
    error: pdf@1.0.0 failed verification
      Caused by: the signature does not match the archive: the archive was changed after it was signed, or the signature belongs to another file
    ");
}

#[test]
fn a_signature_by_another_key_is_refused() {
    let signed = Signed::new();
    let other = SecretKey::generate().unwrap();
    signed.sign_with(&other, &comment("pdf", "1.0.0", &signed.sha256()));
    let said = signed.refusal().replace(&other.id().to_string(), "[OTHER]");
    insta::assert_snapshot!(said, @"
    error: pdf@1.0.0 failed verification
      Caused by: the signature was made by key [OTHER], not by [SIGNER]
    ");
}

#[test]
fn a_signature_for_another_skill_version_or_archive_is_refused() {
    let signed = Signed::new();
    let sha256 = signed.sha256();
    let mut refusals = Vec::new();
    for (trusted_comment, signed_for) in [
        (comment("csv", "1.0.0", &sha256), "csv@1.0.0"),
        (comment("pdf", "2.0.0", &sha256), "pdf@2.0.0"),
        (
            comment("pdf", "1.0.0", &Checksum::of(b"another archive")),
            "pdf@1.0.0 (sha256:",
        ),
    ] {
        signed.sign_with(&signed.key, &trusted_comment);
        // The signature is checked against the name and version it claims;
        // the archive then holds another skill or version, or other bytes.
        let said = signed.refusal();
        assert!(said.contains(signed_for), "`{signed_for}` not in:\n{said}");
        refusals.push(said);
    }
    insta::assert_snapshot!(refusals.join("---\n"), @"
    error: [HOME]/pdf-1.0.0.tgz holds pdf@1.0.0, but its signature is for csv@1.0.0
    ---
    error: [HOME]/pdf-1.0.0.tgz holds pdf@1.0.0, but its signature is for pdf@2.0.0
    ---
    error: pdf@1.0.0 failed verification
      Caused by: the signature is for pdf@1.0.0 (sha256:2c69436dc18e5782410cdfa0e5e728985a4e51939a2ba73998e933e9921fed02), not for pdf@1.0.0 (sha256:13854313002959898e13da7fb96c68f6239c3826239677b397b458468b9d2f5a)
    ");
}

#[test]
fn a_tampered_trusted_comment_is_refused() {
    let signed = Signed::new();
    let text = fs_err::read_to_string(signed.signature_path())
        .unwrap()
        .replace("pdf@1.0.0", "pdf@1.0.1");
    fs_err::write(signed.signature_path(), text).unwrap();
    insta::assert_snapshot!(signed.refusal(), @"
    error: pdf@1.0.1 failed verification
      Caused by: the trusted comment was changed after it was signed
    ");
}

#[test]
fn a_legacy_unhashed_signature_is_refused() {
    let signed = Signed::new();
    let secret = signed
        .sandbox
        .write("signer.key", signed.key.to_file(None).unwrap());
    ok(minisign()
        .args(["-S", "-l", "-W", "-s"])
        .arg(&secret)
        .arg("-m")
        .arg(&signed.tarball)
        .arg("-t")
        .arg(comment("pdf", "1.0.0", &signed.sha256())));
    insta::assert_snapshot!(signed.refusal(), @"
    error: pdf@1.0.0 failed verification
      Caused by: the signature is in minisign's legacy format (`Ed`, not prehashed); skillpkg requires prehashed (`ED`) signatures: sign again with `skillpkg sign` or `minisign -S`
    ");
}

#[test]
fn a_truncated_or_garbage_signature_is_refused() {
    let signed = Signed::new();
    let text = fs_err::read_to_string(signed.signature_path()).unwrap();
    fs_err::write(signed.signature_path(), &text[..text.len() / 2]).unwrap();
    // Not a snapshot: the subject reads `<path>@?`, which names no skill.
    let said = signed.refusal();
    assert!(said.contains("is not a minisign signature"), "{said}");
    fs_err::write(signed.signature_path(), "garbage\n").unwrap();
    // Not a snapshot: the subject reads `<path>@?`, which names no skill.
    let said = signed.refusal();
    assert!(said.contains("is not a minisign signature"), "{said}");
    fs_err::remove_file(signed.signature_path()).unwrap();
    insta::assert_snapshot!(signed.refusal(), @"
    error: [HOME]/pdf-1.0.0.tgz is not signed: cannot read [HOME]/pdf-1.0.0.tgz.minisig
      Caused by: failed to open file `[HOME]/pdf-1.0.0.tgz.minisig`: No such file or directory (os error 2)
    hint: pass the signature with --sig FILE.minisig
    ");
}

#[test]
fn a_provenance_for_another_archive_is_refused() {
    let signed = Signed::new();
    let source = SourceInfo {
        repository: Some("git+https://example.com/skills".into()),
        commit: Some("a".repeat(40)),
        dirty: false,
        builder: "ci".into(),
        ci_run: None,
    };
    let wrong = sign_provenance(
        &signed.key,
        "pdf-1.0.0.tgz",
        &Checksum::of(b"something else"),
        &source,
    );
    signed.sandbox.write("pdf-1.0.0.intoto.jsonl", &wrong);
    insta::assert_snapshot!(signed.refusal(), @"
    error: pdf@1.0.0 failed verification
      Caused by: the provenance describes an archive with digest sha256:f41f3fa625ff120ddca7ef456bf66371ecea23c129f4e4c32367101edb516cf8, not this archive (sha256:13854313002959898e13da7fb96c68f6239c3826239677b397b458468b9d2f5a)
    ");
    let right = sign_provenance(&signed.key, "pdf-1.0.0.tgz", &signed.sha256(), &source);
    signed.sandbox.write("pdf-1.0.0.intoto.jsonl", &right);
    let output = signed.verify();
    assert_eq!(output.code, 0, "{output:?}");
    insta::assert_snapshot!(signed.redact(&output.stdout), @"
    signed by:  [SIGNER ED25519] (key id [SIGNER], minisign [SIGNER KEY])
    sha256:     sha256:13854313002959898e13da7fb96c68f6239c3826239677b397b458468b9d2f5a
    source:     git+https://example.com/skills @ aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
    built by:   ci
    ");
}

#[test]
fn an_unsigned_version_from_a_registry_that_requires_signatures_is_refused() {
    let sandbox = TestContext::new();
    let tree = StaticTree::new(sandbox.path().join("tree"));
    let dir = sandbox.skill("src/pdf", "pdf", "", "body\n");
    let packed = pack_dir(
        &dir,
        "pdf".parse().unwrap(),
        "1.0.0".parse().unwrap(),
        &Limits::default(),
    )
    .unwrap();
    let published = "2026-11-22T00:00:00Z".parse().unwrap();
    tree.write_archive(
        &packed.name,
        &packed.version,
        &packed.tarball,
        None,
        published,
    )
    .unwrap();
    let record = IndexRecord {
        v: 1,
        name: packed.name.clone(),
        vers: packed.version.clone(),
        cksum: Checksum::of(&packed.tarball),
        size: packed.tarball.len() as u64,
        tree: packed.tree.to_string(),
        files: 1,
        deps: Vec::new(),
        description: "x".into(),
        yanked: false,
        yanked_reason: None,
        signer: None,
        published,
        audit: None,
    };
    tree.write_index(&packed.name, &[record]).unwrap();
    tree.write_config(&RegistryConfig {
        require_signatures: true,
        ..RegistryConfig::read_only(8 * 1024 * 1024)
    })
    .unwrap();
    let output = skillpkg(
        &sandbox,
        &[
            "verify",
            "pdf@1.0.0",
            "--registry",
            tree.root().to_str().unwrap(),
        ],
    );
    assert_eq!(output.code, 1, "{output:?}");
    insta::assert_snapshot!(sandbox.redact(&output.stderr), @"error: pdf@1.0.0 is not signed, and file://[HOME]/tree/ requires signatures: the registry should never have served it");
}

#[test]
fn a_password_protected_skillpkg_key_opens_in_minisign() {
    let sandbox = TestContext::new();
    let tarball = packed(&sandbox);
    let generated = run(sandbox
        .skillpkg_command()
        .args(["key", "generate", "--json"])
        .env("SKILLPKG_CONFIG_DIR", sandbox.path().join("config"))
        .env("SKILLPKG_KEY_PASSWORD", "tr0ub4dor"));
    assert_eq!(generated.code, 0, "{generated:?}");
    assert_eq!(generated.json()["encrypted"], true);
    let secret = sandbox.path().join("config/skillpkg/signing.key");
    let public = sandbox.path().join("config/skillpkg/signing.key.pub");
    // minisign reads the password from standard input when it is not a terminal.
    let mut sign = minisign()
        .args(["-S", "-s"])
        .arg(&secret)
        .arg("-m")
        .arg(&tarball)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    use std::io::Write as _;
    sign.stdin
        .take()
        .unwrap()
        .write_all(b"tr0ub4dor\n")
        .unwrap();
    assert!(
        sign.wait().unwrap().success(),
        "minisign opened the key with its password"
    );
    ok(minisign()
        .arg("-H")
        .arg("-Vm")
        .arg(&tarball)
        .arg("-p")
        .arg(&public));
    // `key show` reads the public key beside it: no password needed.
    let shown = skillpkg(&sandbox, &["key", "show", "--json"]);
    assert_eq!(shown.code, 0, "{shown:?}");
    assert_eq!(shown.json()["public_key"], generated.json()["public_key"]);
}
