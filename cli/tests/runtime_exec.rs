//! The script runner and its sandbox against real processes and the real
//! kernel: what a skill's script can and cannot do, and that every hostile
//! script (floods, hangs, forks, reads and writes outside its grant, network
//! access) ends with a result. The denials are checked against a control
//! that shows the same access working when granted, so a missing sandbox
//! fails these tests.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::io::ErrorKind;
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::json;
use skillpkg::runtime::exec::{self, ExecError, Limits, RunOutcome, RunRequest};
use skillpkg::runtime::grant::Denied;
use skillpkg::runtime::sandbox::{self, Network};
use skillpkg_index::skill::model::{Permissions, SecretRequirement};
use tokio_util::sync::CancellationToken;

/// A project (the one root), a skill outside it, and a home folder with an
/// SSH key outside both.
struct Fixture {
    _temp: tempfile::TempDir,
    project: PathBuf,
    skill: PathBuf,
    key: PathBuf,
}

impl Fixture {
    fn new() -> Self {
        // This harness is not `skillpkg`: the runs' launcher is.
        skillpkg::runtime::jail::use_launcher(std::path::Path::new(env!("CARGO_BIN_EXE_skillpkg")));
        let temp = tempfile::tempdir().unwrap();
        let base = temp.path().canonicalize().unwrap();
        let project = base.join("project");
        let skill = base.join("skill");
        let key = base.join("home/.ssh/id_ed25519");
        for folder in [
            project.join("data"),
            skill.join("scripts"),
            base.join("home/.ssh"),
        ] {
            fs_err::create_dir_all(folder).unwrap();
        }
        fs_err::write(&key, "-----BEGIN OPENSSH PRIVATE KEY-----\n").unwrap();
        fs_err::write(project.join("data/input.txt"), "granted input\n").unwrap();
        fs_err::write(project.join("notes.txt"), "not granted\n").unwrap();
        Self {
            _temp: temp,
            project,
            skill,
            key,
        }
    }

    /// Writes `scripts/<name>` into the skill and returns its path.
    fn script(&self, name: &str, text: &str) -> PathBuf {
        let path = self.skill.join("scripts").join(name);
        fs_err::write(&path, text).unwrap();
        path
    }

    fn policy(&self, permissions: serde_json::Value) -> sandbox::Policy {
        let permissions: Permissions = serde_json::from_value(permissions).unwrap();
        sandbox::policy_for(
            &self.skill,
            &permissions,
            std::slice::from_ref(&self.project),
            &self.project,
        )
        .unwrap()
    }

    fn request(
        &self,
        script: &Path,
        args: &[&str],
        sandbox: Option<sandbox::Policy>,
    ) -> RunRequest {
        RunRequest {
            program: exec::interpreter_for(script).unwrap(),
            args: args.iter().map(OsString::from).collect(),
            env: exec::environment(
                &exec::server_environment(),
                &BTreeMap::new(),
                "fixture",
                &[],
                &BTreeSet::new(),
            )
            .unwrap()
            .vars,
            workdir: self.project.clone(),
            stdin: None,
            limits: Limits::default(),
            sandbox,
            sealed: None,
        }
    }

    /// Runs a bash script confined by `permissions`.
    async fn confined(
        &self,
        text: &str,
        permissions: serde_json::Value,
        args: &[&str],
    ) -> RunOutcome {
        let script = self.script("run.sh", text);
        let request = self.request(&script, args, Some(self.policy(permissions)));
        exec::run(request, CancellationToken::new()).await.unwrap()
    }
}

fn no_permissions() -> serde_json::Value {
    json!({})
}

/// Waits past `deadline` (when a background child of the run would have
/// written `marker` had it lived) and says whether it stayed unwritten. A
/// run's processes live in a PID namespace of their own, so their ids mean
/// nothing here: what they fail to do is the proof.
fn never_written(marker: &Path, deadline: Instant) -> bool {
    std::thread::sleep(
        (deadline + Duration::from_millis(500)).saturating_duration_since(Instant::now()),
    );
    !marker.exists()
}

#[test]
fn the_kernel_enforces_files_and_tcp() {
    // Every test below relies on this; a machine without it must not pass
    // them by accident.
    let support = sandbox::probe();
    assert!(support.filesystem, "{support:?}");
    assert!(support.network, "{support:?}");
    assert!(support.abi >= 4, "{support:?}");
}

#[tokio::test]
async fn a_script_reads_its_grant_but_not_an_ssh_key() {
    let fixture = Fixture::new();
    let key = fixture.key.to_str().unwrap();
    let script = r#"
        for file in "$@"; do
            if content=$(<"$file"); then echo "read $file: $content"; else echo "denied $file"; fi
        done
    "#;
    let granted = fixture.project.join("data/input.txt");
    let ungranted = fixture.project.join("notes.txt");
    let args = [granted.to_str().unwrap(), ungranted.to_str().unwrap(), key];
    let outcome = fixture
        .confined(
            script,
            json!({"filesystem": {"read": ["data/*.txt"]}}),
            &args,
        )
        .await;
    assert!(outcome.stdout.contains("granted input"), "{outcome:?}");
    assert!(
        outcome
            .stdout
            .contains(&format!("denied {}", ungranted.display())),
        "{outcome:?}"
    );
    assert!(
        outcome.stdout.contains(&format!("denied {key}")),
        "{outcome:?}"
    );
    assert!(!outcome.stdout.contains("OPENSSH"), "{outcome:?}");

    // The control: unsandboxed, the same script reads the key.
    let script = fixture.script("run.sh", script);
    let request = fixture.request(&script, &args, None);
    let outcome = exec::run(request, CancellationToken::new()).await.unwrap();
    assert!(outcome.stdout.contains("OPENSSH"), "{outcome:?}");
}

#[tokio::test]
async fn a_granted_file_swapped_for_a_link_after_the_plan_shows_nothing() {
    // A run with a write grant, racing another run's plan, puts a link
    // where a granted file was: the sandbox is built from the path as it
    // was planned, never through the link.
    let fixture = Fixture::new();
    let granted = fixture.project.join("data/input.txt");
    let policy = fixture.policy(json!({"filesystem": {"read": ["data/input.txt"]}}));
    fs_err::remove_file(&granted).unwrap();
    std::os::unix::fs::symlink(&fixture.key, &granted).unwrap();
    let script = fixture.script("cat.sh", "content=$(<\"$1\"); echo \"$content\"\n");
    let request = fixture.request(&script, &[granted.to_str().unwrap()], Some(policy));
    match exec::run(request, CancellationToken::new()).await {
        Ok(outcome) => assert!(!outcome.stdout.contains("OPENSSH"), "{outcome:?}"),
        Err(error) => assert!(
            error
                .hint()
                .is_some_and(|why| why.contains("is a link now")),
            "{error:?}"
        ),
    }
}

#[tokio::test]
async fn a_program_the_sandbox_cannot_start_is_a_refused_run_with_the_reason() {
    // The script's process is made before the run is known, so `exec` is
    // its last step: a failure there is still reported as a run that did
    // not start, never as the script's exit code.
    let fixture = Fixture::new();
    let script = fixture.script("plain.sh", "echo ran\n");
    let mut request = fixture.request(&script, &[], Some(fixture.policy(no_permissions())));
    request.program = vec![OsString::from(&script)];
    let error = exec::run(request, CancellationToken::new())
        .await
        .unwrap_err();
    let said = format!("{error:?}");
    assert!(
        said.contains("cannot start") && said.contains("plain.sh"),
        "{said}"
    );
}

#[tokio::test]
async fn a_run_after_the_launcher_factory_was_killed_starts_a_new_factory() {
    // Launchers are forked by one factory process per program; one killed
    // from outside is replaced at the next run, which runs as usual.
    let fixture = Fixture::new();
    let first = fixture.confined("echo one\n", no_permissions(), &[]).await;
    assert_eq!(first.stdout, "one\n", "{first:?}");
    let factories = || -> Vec<i32> {
        let ours = std::process::id().to_string();
        fs_err::read_dir("/proc")
            .unwrap()
            .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<i32>().ok())
            .filter(|pid| {
                let cmdline = fs_err::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
                let status =
                    fs_err::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
                String::from_utf8_lossy(&cmdline).contains("__skillpkg-run-factory")
                    && status.lines().any(|line| {
                        line.strip_prefix("PPid:").map(str::trim) == Some(ours.as_str())
                    })
                    && !status
                        .lines()
                        .any(|line| line.starts_with("State:") && line.contains('Z'))
            })
            .collect()
    };
    let killed = factories();
    assert_eq!(killed.len(), 1, "one factory, started by this process");
    for pid in &killed {
        rustix::process::kill_process(
            rustix::process::Pid::from_raw(*pid).unwrap(),
            rustix::process::Signal::KILL,
        )
        .unwrap();
    }
    let second = fixture.confined("echo two\n", no_permissions(), &[]).await;
    assert_eq!(second.stdout, "two\n", "{second:?}");
    let now = factories();
    assert_eq!(now.len(), 1, "{now:?}");
    assert_ne!(now, killed);
}

#[tokio::test]
async fn a_runs_scratch_folder_is_private_to_the_servers_user() {
    // The run's home (its output, HOME and TMPDIR) lives in a scratch
    // folder that other users of the machine cannot open, whatever the
    // umask; the script reports its home and waits while it is looked at.
    use std::os::unix::fs::PermissionsExt as _;
    let fixture = Fixture::new();
    let ready = fixture.project.join("output");
    fs_err::create_dir_all(&ready).unwrap();
    let script = "echo \"$HOME\" > output/home; sleep 1\n";
    let permissions = json!({
        "filesystem": {"write": ["output/**"]},
        "processes": {"allow_subprocess": true},
    });
    let run = fixture.confined(script, permissions, &[]);
    let look = async {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            if let Ok(home) = fs_err::read_to_string(ready.join("home"))
                && home.ends_with('\n')
            {
                let scratch = Path::new(home.trim_end()).parent().unwrap().to_path_buf();
                return fs_err::metadata(&scratch).unwrap().permissions().mode() & 0o777;
            }
            assert!(Instant::now() < deadline, "the script never said its home");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    let (outcome, mode) = tokio::join!(run, look);
    assert_eq!(outcome.exit_code, Some(0), "{outcome:?}");
    assert_eq!(mode, 0o700, "the scratch folder's mode is {mode:o}");
}

#[tokio::test]
async fn a_script_writes_inside_output_and_nowhere_else() {
    let fixture = Fixture::new();
    let outside = fixture.key.with_file_name("authorized_keys");
    let script = r#"
        for file in "$@"; do
            if echo pwned > "$file"; then echo "wrote $file"; else echo "denied $file"; fi
        done
    "#;
    let inside = fixture.project.join("output/report.txt");
    let sibling = fixture.project.join("data/input.txt");
    let args = [
        inside.to_str().unwrap(),
        sibling.to_str().unwrap(),
        outside.to_str().unwrap(),
    ];
    let outcome = fixture
        .confined(
            script,
            json!({"filesystem": {"write": ["output/**"]}}),
            &args,
        )
        .await;
    assert_eq!(outcome.exit_code, Some(0), "{outcome:?}");
    assert_eq!(fs_err::read_to_string(&inside).unwrap(), "pwned\n");
    assert_eq!(fs_err::read_to_string(&sibling).unwrap(), "granted input\n");
    assert!(!outside.exists());
    assert!(
        outcome
            .stdout
            .contains(&format!("denied {}", outside.display())),
        "{outcome:?}"
    );
}

#[tokio::test]
async fn a_script_cannot_connect_to_a_loopback_port_it_was_not_granted() {
    let fixture = Fixture::new();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port().to_string();
    let script = r#"
        if exec 3<>"/dev/tcp/127.0.0.1/$1"; then echo connected; else echo refused; fi
    "#;
    let outcome = fixture.confined(script, no_permissions(), &[&port]).await;
    assert!(outcome.stdout.contains("refused"), "{outcome:?}");
    let accepted = listener.accept();
    assert!(
        matches!(&accepted, Err(error) if error.kind() == ErrorKind::WouldBlock),
        "a connection arrived: {accepted:?}"
    );

    // The control: granted that host and port, the connection arrives,
    // through the run's proxy (the run's own network holds only loopback,
    // where the proxy's relay listens).
    let through_proxy = r#"
        exec 3<>"/dev/tcp/127.0.0.1/${HTTP_PROXY##*:}" || exit 1
        printf 'CONNECT 127.0.0.1:%s HTTP/1.1\r\n\r\n' "$1" >&3
        read -r status <&3
        echo "$status"
    "#;
    let outbound = format!("127.0.0.1:{port}");
    let outcome = fixture
        .confined(
            through_proxy,
            json!({"network": {"outbound": [outbound]}}),
            &[&port],
        )
        .await;
    assert!(outcome.stdout.contains(" 200 "), "{outcome:?}");
    listener.set_nonblocking(false).unwrap();
    assert!(listener.accept().is_ok());
}

#[tokio::test]
async fn a_script_cannot_run_other_programs_unless_it_may() {
    let fixture = Fixture::new();
    let script = r#"if /usr/bin/env true; then echo ran; else echo denied; fi"#;
    let outcome = fixture.confined(script, no_permissions(), &[]).await;
    assert!(outcome.stdout.contains("denied"), "{outcome:?}");
    let outcome = fixture
        .confined(
            script,
            json!({"processes": {"allow_subprocess": true}}),
            &[],
        )
        .await;
    assert!(outcome.stdout.contains("ran"), "{outcome:?}");
}

#[tokio::test]
async fn a_hang_and_a_child_that_ignores_sigterm_are_killed_at_the_timeout() {
    let fixture = Fixture::new();
    let script = fixture.script(
        "hang.sh",
        "trap '' TERM\n(sleep 1; echo late > output/late) &\nwhile :; do :; done\n",
    );
    let mut request = fixture.request(
        &script,
        &[],
        Some(fixture.policy(json!({
            "processes": {"allow_subprocess": true},
            "filesystem": {"write": ["output/**"]},
        }))),
    );
    request.limits.timeout = Duration::from_millis(500);
    let started = Instant::now();
    let outcome = exec::run(request, CancellationToken::new()).await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(3), "{outcome:?}");
    assert!(outcome.timed_out, "{outcome:?}");
    assert_eq!(outcome.signal, Some(9), "{outcome:?}");
    assert_eq!(outcome.exit_code, None);
    assert!(
        never_written(
            &fixture.project.join("output/late"),
            started + Duration::from_secs(1)
        ),
        "the background child survived the timeout"
    );
}

#[tokio::test]
async fn background_children_die_with_the_script() {
    let fixture = Fixture::new();
    let script = fixture.script(
        "fork.sh",
        "(sleep 1; echo late > output/late) &\nsleep 30 &\n",
    );
    let request = fixture.request(
        &script,
        &[],
        Some(fixture.policy(json!({
            "processes": {"allow_subprocess": true},
            "filesystem": {"write": ["output/**"]},
        }))),
    );
    let started = Instant::now();
    let outcome = exec::run(request, CancellationToken::new()).await.unwrap();
    // The sleep holds stdout open; the run still ends with the script.
    assert!(started.elapsed() < Duration::from_secs(3), "{outcome:?}");
    assert_eq!(outcome.exit_code, Some(0), "{outcome:?}");
    assert!(!outcome.timed_out);
    assert!(
        never_written(
            &fixture.project.join("output/late"),
            started + Duration::from_secs(1)
        ),
        "the background child outlived the script"
    );
}

#[tokio::test]
async fn an_output_flood_is_cut_at_the_cap() {
    let fixture = Fixture::new();
    let script = fixture.script(
        "flood.py",
        "import sys\nsys.stdout.write('x' * 3_000_000)\nsys.stderr.write('e' * 10)\n",
    );
    let mut request = fixture.request(&script, &[], Some(fixture.policy(no_permissions())));
    request.limits.output_cap = 1024 * 1024;
    let outcome = exec::run(request, CancellationToken::new()).await.unwrap();
    assert_eq!(outcome.exit_code, Some(0), "{}", outcome.stderr);
    assert_eq!(outcome.stdout.len(), 1024 * 1024);
    assert!(outcome.stdout_truncated);
    assert_eq!(outcome.stderr, "eeeeeeeeee");
    assert!(!outcome.stderr_truncated);
}

#[tokio::test]
async fn an_endless_flood_ends_at_the_timeout_with_the_cap_kept() {
    let fixture = Fixture::new();
    let script = fixture.script(
        "endless.sh",
        "while :; do echo yyyyyyyyyyyyyyyyyyyyyyyyyyyyy; done\n",
    );
    let mut request = fixture.request(&script, &[], Some(fixture.policy(no_permissions())));
    request.limits.timeout = Duration::from_millis(700);
    request.limits.output_cap = 4096;
    let outcome = exec::run(request, CancellationToken::new()).await.unwrap();
    assert!(outcome.timed_out);
    assert!(outcome.stdout_truncated);
    assert_eq!(outcome.stdout.len(), 4096);
}

#[tokio::test]
async fn cancellation_stops_the_script_promptly() {
    let fixture = Fixture::new();
    let script = fixture.script("wait.sh", "while :; do :; done\n");
    let request = fixture.request(&script, &[], Some(fixture.policy(no_permissions())));
    let cancel = CancellationToken::new();
    let canceller = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        canceller.cancel();
    });
    let started = Instant::now();
    let outcome = exec::run(request, cancel).await.unwrap();
    assert!(outcome.cancelled);
    assert!(!outcome.timed_out);
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn the_environment_is_cleared_but_for_the_allowlist_env_and_secrets() {
    let fixture = Fixture::new();
    let mut server = exec::server_environment();
    server.insert("SERVER_ONLY_TOKEN".into(), "leaked".into());
    server.insert("OCR_API_KEY".into(), "s3cret".into());
    server.insert("LANG".into(), "C.UTF-8".into());
    let secrets: Vec<SecretRequirement> = serde_json::from_value(json!([
        {"name": "OCR_API_KEY", "usage": "env"},
        {"name": "OPTIONAL_KEY", "usage": "env", "optional": true}
    ]))
    .unwrap();
    let given = BTreeMap::from([("MODE".to_owned(), "fast".to_owned())]);
    let passed = BTreeSet::from(["OCR_API_KEY".to_owned(), "SERVER_ONLY_TOKEN".to_owned()]);
    let env = exec::environment(&server, &given, "ocr", &secrets, &passed)
        .unwrap()
        .vars;
    let script = fixture.script(
        "env.py",
        "import os\nfor k in sorted(os.environ): print(k + '=' + os.environ[k])\n",
    );
    let mut request = fixture.request(&script, &[], Some(fixture.policy(no_permissions())));
    request.env = env;
    let outcome = exec::run(request, CancellationToken::new()).await.unwrap();
    let names: Vec<&str> = outcome
        .stdout
        .lines()
        .filter_map(|line| line.split_once('=').map(|(name, _)| name))
        .filter(|name| *name != "LC_CTYPE") // Python may set it itself.
        .collect();
    assert_eq!(
        names,
        ["HOME", "LANG", "MODE", "OCR_API_KEY", "PATH", "TMPDIR"],
        "{outcome:?}"
    );
    assert!(outcome.stdout.contains("OCR_API_KEY=s3cret\n"));
    assert!(!outcome.stdout.contains("leaked"));

    // A required secret the server lacks, and variables a caller may not set.
    let missing = exec::environment(&BTreeMap::new(), &BTreeMap::new(), "ocr", &secrets, &passed);
    assert!(matches!(missing, Err(ExecError::MissingSecret { name, .. }) if name == "OCR_API_KEY"));
    for name in ["PATH", "LD_PRELOAD", "HOME", "OCR_API_KEY", "1BAD", "A-B"] {
        let given = BTreeMap::from([(name.to_owned(), "x".to_owned())]);
        let refused = exec::environment(&server, &given, "ocr", &secrets, &passed);
        assert!(
            matches!(refused, Err(ExecError::Environment { .. })),
            "{name} was accepted"
        );
    }
}

#[tokio::test]
async fn each_interpreter_runs_confined() {
    let fixture = Fixture::new();
    for (name, text) in [
        ("hello.py", "print('hello from python')\n"),
        ("hello.sh", "echo hello from bash\n"),
        ("hello.js", "console.log('hello from node')\n"),
        ("hello.mjs", "console.log('hello from node')\n"),
        ("hello", "#!/bin/sh\necho hello from sh\n"),
    ] {
        let script = fixture.script(name, text);
        if name == "hello" {
            fs_err::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        // With subprocesses denied only the interpreter may run; allowed,
        // its installation must stay executable too.
        for permissions in [
            no_permissions(),
            json!({"processes": {"allow_subprocess": true}}),
        ] {
            let request = fixture.request(&script, &[], Some(fixture.policy(permissions)));
            let outcome = exec::run(request, CancellationToken::new()).await.unwrap();
            assert_eq!(outcome.exit_code, Some(0), "{name}: {outcome:?}");
            assert!(
                outcome.stdout.starts_with("hello from"),
                "{name}: {outcome:?}"
            );
        }
    }
}

#[test]
fn the_interpreter_mapping() {
    let fixture = Fixture::new();
    let first = |name: &str, text: &str| {
        let script = fixture.script(name, text);
        exec::interpreter_for(&script).map(|command| command[0].clone())
    };
    assert_eq!(first("a.py", "").unwrap(), "python3");
    assert_eq!(first("a.sh", "").unwrap(), "bash");
    assert_eq!(first("a.js", "").unwrap(), "node");
    assert_eq!(first("a.mjs", "").unwrap(), "node");
    // A shebang without the exec bit, an unknown extension, a binary.
    assert!(matches!(
        first("a.rb", "#!/usr/bin/env ruby\n"),
        Err(ExecError::NotRunnable { .. })
    ));
    assert!(matches!(
        first("a.txt", "hello\n"),
        Err(ExecError::NotRunnable { .. })
    ));
    let tool = fixture.script("tool", "#!/bin/sh\n");
    fs_err::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(exec::interpreter_for(&tool).unwrap(), [tool.as_os_str()]);
    let plain = fixture.script("plain", "no shebang\n");
    fs_err::set_permissions(&plain, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert!(matches!(
        exec::interpreter_for(&plain),
        Err(ExecError::NotRunnable { .. })
    ));
}

#[test]
fn permissions_outside_the_roots_are_refused() {
    let fixture = Fixture::new();
    let refused = |permissions: serde_json::Value| {
        let permissions: Permissions = serde_json::from_value(permissions).unwrap();
        sandbox::policy_for(
            &fixture.skill,
            &permissions,
            std::slice::from_ref(&fixture.project),
            &fixture.project,
        )
        .unwrap_err()
    };
    for glob in ["../home/**", "/etc/passwd", "~/.ssh/*", "!secret"] {
        let error = refused(json!({"filesystem": {"read": [glob]}}));
        assert!(
            matches!(&error, Denied::Glob { access: "read", glob: g, .. } if g == glob),
            "{error}"
        );
    }
    let error = refused(json!({"filesystem": {"write": ["**/*.txt"]}}));
    assert!(error.to_string().contains("whole root"), "{error}");
    // A link out of the root does not carry a grant with it.
    std::os::unix::fs::symlink(fixture.key.parent().unwrap(), fixture.project.join("keys"))
        .unwrap();
    let error = refused(json!({"filesystem": {"read": ["keys/**"]}}));
    assert!(error.to_string().contains("outside the roots"), "{error}");

    let permissions: Permissions =
        serde_json::from_value(json!({"network": {"outbound": ["api.example.com"]}})).unwrap();
    let policy = sandbox::policy_for(
        &fixture.skill,
        &permissions,
        std::slice::from_ref(&fixture.project),
        &fixture.project,
    )
    .unwrap();
    assert_eq!(policy.network, Network::Any);
    // Hosts are told apart by the run's proxy, not by a Landlock port rule.
    assert_eq!(policy.outbound, ["api.example.com"]);
}

#[test]
fn only_scripts_in_the_skill_run_and_workdirs_stay_in_the_roots() {
    let fixture = Fixture::new();
    let script = fixture.script("ok.sh", "");
    assert_eq!(
        sandbox::script_in_skill(&fixture.skill, "scripts/ok.sh").unwrap(),
        script
    );
    std::os::unix::fs::symlink(&fixture.key, fixture.skill.join("scripts/key.sh")).unwrap();
    fs_err::write(fixture.skill.join("SKILL.md"), "").unwrap();
    for path in [
        "SKILL.md",
        "scripts/../SKILL.md",
        "/etc/passwd",
        "scripts/key.sh",
        "scripts/none.sh",
        "scripts",
    ] {
        assert!(
            sandbox::script_in_skill(&fixture.skill, path).is_err(),
            "{path} was accepted"
        );
    }
    let roots = [fixture.project.clone()];
    assert_eq!(
        sandbox::workdir_in_roots(&roots, "data").unwrap(),
        fixture.project.join("data")
    );
    assert_eq!(
        sandbox::workdir_in_roots(&roots, ".").unwrap(),
        fixture.project
    );
    for workdir in ["..", "/tmp", fixture.skill.to_str().unwrap()] {
        assert!(
            sandbox::workdir_in_roots(&roots, workdir).is_err(),
            "{workdir} was accepted"
        );
    }
}

/// `cargo test --release -p skillpkg --test runtime_exec -- --ignored --nocapture`
/// prints the median time of a no-op bash script through [`exec::run`],
/// sandbox included, against spawning `bash script.sh` directly.
#[tokio::test]
#[ignore = "a measurement, not a check"]
#[allow(clippy::print_stderr, reason = "the measurement is the output")]
async fn overhead_of_a_confined_no_op_script() {
    const RUNS: usize = 100;
    let fixture = Fixture::new();
    let script = fixture.script("noop.sh", "");
    let policy = fixture.policy(no_permissions());
    // The minimum shows the cost on an idle machine, the median what a
    // loaded one gives.
    let summary = |mut times: Vec<Duration>| {
        times.sort();
        (times[0], times[times.len() / 2])
    };
    let mut direct = Vec::new();
    let mut confined = Vec::new();
    let mut unconfined = Vec::new();
    for _ in 0..RUNS {
        let started = Instant::now();
        let status = tokio::process::Command::new("bash")
            .arg(&script)
            .status()
            .await
            .unwrap();
        assert!(status.success());
        direct.push(started.elapsed());

        let started = Instant::now();
        let outcome = exec::run(
            fixture.request(&script, &[], Some(policy.clone())),
            CancellationToken::new(),
        )
        .await
        .unwrap();
        assert_eq!(outcome.exit_code, Some(0));
        confined.push(started.elapsed());

        let started = Instant::now();
        let outcome = exec::run(
            fixture.request(&script, &[], None),
            CancellationToken::new(),
        )
        .await
        .unwrap();
        assert_eq!(outcome.exit_code, Some(0));
        unconfined.push(started.elapsed());
    }
    let (direct, confined, unconfined) = (summary(direct), summary(confined), summary(unconfined));
    eprintln!(
        "{RUNS} runs, minimum / median: bash directly {:?} / {:?}; exec::run unsandboxed {:?} / {:?}; sandboxed {:?} / {:?} ({:.2}x / {:.2}x)",
        direct.0,
        direct.1,
        unconfined.0,
        unconfined.1,
        confined.0,
        confined.1,
        confined.0.as_secs_f64() / direct.0.as_secs_f64(),
        confined.1.as_secs_f64() / direct.1.as_secs_f64(),
    );
}
