//! What one run's new root holds, from its Landlock policy: the system
//! folders read-only, the interpreter's installation read-only, the
//! skill's sealed copy read-only at the skill's own path, the read grants
//! read-only, the write grants and the scratch folder writable, a `/dev`
//! of five devices. Nothing else of the machine exists for the run: no
//! home, no `/proc`, no `/sys`, no `/run`, no `/tmp`, no other skill.
//!
//! Paths inside are the paths outside, so the Landlock rules, the script's
//! path and the working folder mean the same on both sides.

use std::path::{Path, PathBuf};

use super::spec::{Bind, LandlockRules, Link, RunLimits, Spec};
use crate::runtime::sandbox::{self, Network, Policy, RunGrants};

/// The devices a run may use.
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
];

/// One run, before it becomes a [`Spec`].
#[derive(Debug)]
pub struct Run<'a> {
    pub program: &'a Path,
    pub args: Vec<std::ffi::OsString>,
    pub env: Vec<(String, String)>,
    pub workdir: &'a Path,
    /// An empty folder private to the server.
    pub root: PathBuf,
    pub policy: &'a Policy,
    pub grants: &'a RunGrants,
    /// The checked copy of the skill folder ([`super::seal`]), shown at
    /// `policy.skill_root`.
    pub sealed: Option<&'a Path>,
    pub limits: RunLimits,
    /// The run's proxy socket ([`super::proxy`]), when the skill lists
    /// hosts.
    pub proxy: Option<&'a Path>,
}

/// Where the proxy's socket appears inside the sandbox.
pub const PROXY_SOCKET: &str = "/run/skillpkg/proxy.sock";

/// The part of every run's root that comes from the machine, not from the
/// run: the system folders and files (read-only binds, or the links of a
/// merged `/usr`) and the devices. Read once per process: a launcher
/// builds it while it waits for a run, and a server plans with the same.
#[derive(Debug, Default)]
pub struct System {
    pub binds: Vec<Bind>,
    pub links: Vec<Link>,
    pub devices: Vec<PathBuf>,
}

/// This machine's [`System`], read once.
pub fn system() -> &'static System {
    static SYSTEM: std::sync::OnceLock<System> = std::sync::OnceLock::new();
    SYSTEM.get_or_init(|| {
        let mut system = System::default();
        for path in sandbox::SYSTEM_READ
            .iter()
            .chain(sandbox::SYSTEM_WRITE)
            .map(Path::new)
        {
            if DEVICES.contains(&path.to_str().unwrap_or_default()) {
                continue;
            }
            match fs_err::symlink_metadata(path) {
                Ok(meta) if meta.file_type().is_symlink() => {
                    if let Ok(to) = fs_err::read_link(path) {
                        system.links.push(Link {
                            path: path.to_path_buf(),
                            to,
                        });
                    }
                }
                Ok(_) => system.binds.push(identity(path, false)),
                Err(_) => {}
            }
        }
        system.devices = DEVICES
            .iter()
            .map(PathBuf::from)
            .filter(|path| path.exists())
            .collect();
        system
    })
}

/// The spec of `run`.
pub fn spec(run: Run<'_>) -> Spec {
    let system = system();
    let mut binds = system.binds.clone();
    let links = system.links.clone();
    let devices = system.devices.clone();
    for path in run.grants.read.iter().chain(&run.grants.execute) {
        binds.push(identity(path, false));
    }
    let policy = run.policy;
    for path in &policy.read {
        binds.push(identity(path, false));
    }
    binds.push(match run.sealed {
        Some(sealed) => Bind {
            source: sealed.to_path_buf(),
            target: policy.skill_root.clone(),
            writable: false,
        },
        None => identity(&policy.skill_root, false),
    });
    for path in policy.write.iter().chain(&run.grants.write) {
        binds.push(identity(path, true));
    }
    if let Some(socket) = run.proxy {
        binds.push(Bind {
            source: socket.to_path_buf(),
            target: PathBuf::from(PROXY_SOCKET),
            writable: true,
        });
    }
    let binds = ordered(binds);
    let mut dirs = Vec::new();
    if !binds
        .iter()
        .any(|bind| run.workdir.starts_with(&bind.target))
    {
        dirs.push(run.workdir.to_path_buf());
    }
    Spec {
        program: run.program.to_path_buf(),
        args: run.args,
        env: run.env,
        workdir: run.workdir.to_path_buf(),
        root: run.root,
        binds,
        links,
        dirs,
        devices,
        limits: run.limits,
        proxy: run.proxy.map(|_| PathBuf::from(PROXY_SOCKET)),
        landlock: Some(LandlockRules {
            policy: Policy {
                // The run's network namespace holds only loopback, where
                // the proxy's relay listens: Landlock's port rules would
                // only get in its way. With no hosts listed there is no
                // relay, and TCP stays denied.
                network: match policy.network {
                    Network::Deny => Network::Deny,
                    Network::Ports(_) | Network::Any => Network::Any,
                },
                ..policy.clone()
            },
            grants: run.grants.clone(),
        }),
    }
}

/// A run like most, framed as the server sends one: a launcher's script
/// process reads it while it waits for its own run, so that reading the
/// real one finds the code it runs and the memory it allocates in place
/// (a process forked gets its parent's code mapped again page by page, at
/// its first use: a fault each, on the run's path). Made once per process.
pub fn sample() -> &'static [u8] {
    static SAMPLE: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    SAMPLE.get_or_init(|| {
        let skill = Path::new("/project/.claude/skills/sample");
        let policy = Policy {
            skill_root: skill.to_path_buf(),
            read: vec![PathBuf::from("/project/docs")],
            write: vec![PathBuf::from("/project/out")],
            network: Network::Deny,
            outbound: Vec::new(),
            subprocess: false,
            notes: Vec::new(),
        };
        let grants = RunGrants {
            read: vec![PathBuf::from("/usr")],
            execute: vec![PathBuf::from("/usr/bin/bash")],
            write: vec![PathBuf::from("/scratch/home")],
        };
        let script = skill.join("scripts/run.sh");
        let run = Run {
            program: Path::new("/usr/bin/bash"),
            args: vec![
                script.into_os_string(),
                "--input".into(),
                "data.json".into(),
            ],
            env: ["PATH", "HOME", "TMPDIR", "LANG", "TERM"]
                .iter()
                .map(|name| {
                    (
                        (*name).to_owned(),
                        "/usr/local/bin:/usr/bin:/bin".to_owned(),
                    )
                })
                .collect(),
            workdir: Path::new("/project"),
            root: PathBuf::from("/scratch/root"),
            policy: &policy,
            grants: &grants,
            sealed: Some(Path::new("/scratch/sealed/sample")),
            limits: RunLimits::default(),
            proxy: None,
        };
        super::spec::framed(&spec(run)).unwrap_or_default()
    })
}

pub(super) fn identity(path: &Path, writable: bool) -> Bind {
    Bind {
        source: path.to_path_buf(),
        target: path.to_path_buf(),
        writable,
    }
}

/// Parents before children, so a grant inside a read-only folder is
/// mounted over it; a bind that a bind of its own source already shows
/// with the same access is dropped (`/usr/lib/python3` under `/usr`).
pub(super) fn ordered(mut binds: Vec<Bind>) -> Vec<Bind> {
    binds.sort_by_cached_key(|bind| (bind.target.components().count(), bind.writable));
    let mut kept: Vec<Bind> = Vec::new();
    for bind in binds {
        let shown = kept
            .iter()
            .rev()
            .find(|kept| bind.target.starts_with(&kept.target));
        let redundant = shown.is_some_and(|shown| {
            shown.source == shown.target
                && bind.source == bind.target
                && (shown.writable || !bind.writable)
        });
        if !redundant && !kept.contains(&bind) {
            kept.push(bind);
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bind(path: &str, writable: bool) -> Bind {
        identity(Path::new(path), writable)
    }

    #[test]
    fn nested_binds_come_after_their_parents_and_covered_ones_go() {
        let kept = ordered(vec![
            bind("/p/out", true),
            bind("/usr/lib/python3", false),
            bind("/p", false),
            bind("/usr", false),
            bind("/p/docs", false),
        ]);
        assert_eq!(
            kept,
            vec![bind("/p", false), bind("/usr", false), bind("/p/out", true)]
        );
    }

    #[test]
    fn the_sample_run_reads_as_a_spec() {
        let sample = sample();
        let spec = crate::runtime::jail::spec::read_framed(&mut &sample[..])
            .unwrap()
            .unwrap();
        assert_eq!(spec.program, Path::new("/usr/bin/bash"));
        assert!(
            spec.binds
                .iter()
                .any(|bind| bind.target.ends_with("sample"))
        );
    }

    #[test]
    fn a_sealed_copy_is_shown_over_the_folder_that_holds_it() {
        let sealed = Bind {
            source: PathBuf::from("/run/sealed/pdf"),
            target: PathBuf::from("/p/.claude/skills/pdf"),
            writable: false,
        };
        let kept = ordered(vec![sealed.clone(), bind("/p", false)]);
        assert_eq!(kept, vec![bind("/p", false), sealed]);
    }
}
