//! What the server tells a launcher about one run: the command, the new
//! root's mounts, the limits and the Landlock rules. Sent as JSON, length
//! first ([`framed`]), on the launcher's stdin before the script's own
//! input; the script's process, which holds that stdin, reads it.

use std::ffi::OsString;
use std::io::Read;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::runtime::sandbox::{Policy, RunGrants};

/// The largest spec a script's process reads.
const MAX_SPEC: u32 = 64 << 20;

/// `spec` as it crosses the pipe from the server to the script's process:
/// its length (4 bytes, big-endian), then its JSON, to be written at once.
pub fn framed(spec: &Spec) -> Result<Vec<u8>, String> {
    let mut framed = vec![0; 4];
    serde_json::to_writer(&mut framed, spec).map_err(|error| error.to_string())?;
    let length = u32::try_from(framed.len() - 4).map_err(|_| "the run is too large to describe")?;
    framed[..4].copy_from_slice(&length.to_be_bytes());
    Ok(framed)
}

/// Reads one [`framed`] spec from `pipe`; `Ok(None)` when the pipe ends
/// before it begins (the writer went away without a run).
pub fn read_framed(pipe: &mut impl Read) -> Result<Option<Spec>, String> {
    let mut length = [0; 4];
    match pipe.read_exact(&mut length) {
        Ok(()) => {}
        Err(error) if error.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(error) => return Err(format!("no run description: {error}")),
    }
    let length = u32::from_be_bytes(length);
    if length > MAX_SPEC {
        return Err(format!("a run description of {length} bytes"));
    }
    let mut bytes = vec![0; length as usize];
    pipe.read_exact(&mut bytes)
        .map_err(|error| format!("a cut run description: {error}"))?;
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|error| format!("a bad run description: {error}"))
}

/// One run, as the script's process needs it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Spec {
    /// The program to execute, an absolute path as seen inside the sandbox.
    pub program: PathBuf,
    /// `argv[1..]`.
    pub args: Vec<OsString>,
    /// The whole environment.
    pub env: Vec<(String, String)>,
    /// The working folder, inside the sandbox.
    pub workdir: PathBuf,
    /// An empty folder, private to the server, that becomes `/`.
    pub root: PathBuf,
    /// What is visible in the new root, in order (parents first).
    pub binds: Vec<Bind>,
    /// Symbolic links made in the new root (`/bin -> usr/bin`).
    pub links: Vec<Link>,
    /// Empty folders made in the new root (the working folder when no bind
    /// holds it).
    pub dirs: Vec<PathBuf>,
    /// Device files bound from the host's `/dev` into a fresh `/dev`.
    pub devices: Vec<PathBuf>,
    pub limits: RunLimits,
    /// The proxy's UNIX socket inside the new root, when the skill lists
    /// hosts: the script's process relays `127.0.0.1:<port>` in the run's
    /// network namespace to it and points the proxy variables there.
    pub proxy: Option<PathBuf>,
    /// The Landlock rules, applied last before `exec`.
    pub landlock: Option<LandlockRules>,
}

/// The Landlock layer: the policy and the run's own grants.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LandlockRules {
    pub policy: Policy,
    pub grants: RunGrants,
}

/// `source` appears at `target` inside the sandbox.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bind {
    pub source: PathBuf,
    pub target: PathBuf,
    pub writable: bool,
}

/// A symbolic link at `path` pointing to `to`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Link {
    pub path: PathBuf,
    pub to: PathBuf,
}

/// Resource limits of one run (`setrlimit`), each a hard limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunLimits {
    /// Processes and threads (`RLIMIT_NPROC`, counted inside the run's own
    /// user namespace), and the pids cgroup's `pids.max` when there is one.
    pub processes: u64,
    /// Bytes of data (`RLIMIT_DATA`: heap and private mappings; address
    /// space reserved without being used, as V8 does, is not counted).
    pub memory: u64,
    /// Seconds of CPU time (`RLIMIT_CPU`).
    pub cpu_seconds: u64,
    /// Bytes one file may grow to (`RLIMIT_FSIZE`).
    pub file_size: u64,
    /// Open files (`RLIMIT_NOFILE`).
    pub open_files: u64,
}

impl Default for RunLimits {
    fn default() -> Self {
        Self {
            processes: 128,
            memory: 2 << 30,
            cpu_seconds: 120,
            file_size: 1 << 30,
            open_files: 1024,
        }
    }
}
