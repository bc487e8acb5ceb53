//! The Landlock sandbox scripts run in (docs/runtime-sandbox.md).
//!
//! Enforcement is default deny. A skill's `permissions` say what it asks
//! for; the client's MCP roots say what the host allows; the script gets
//! the intersection (spec 003 §8), computed here as a [`Policy`] of plain
//! paths, because Landlock takes paths, not patterns:
//!
//! - read: the skill folder, the interpreter's installation, a fixed list
//!   of system folders and files ([`SYSTEM_READ`]), and every path under a
//!   root that a declared `filesystem.read` glob matches when the run
//!   starts (a `prefix/**` glob grants `prefix` itself without a walk);
//! - write: for each `filesystem.write` glob, its fixed prefix (`output` of
//!   `output/**`) under each root, created under the working folder's root
//!   when missing; a glob with no fixed prefix would mean the whole root and
//!   is refused; nothing writable is executable;
//! - refused: a grant that reaches `.git`, `.claude` or other agent
//!   configuration, a skills folder, a shell start-up file or the home
//!   folder (a write), or credentials (a read or a write), judged by
//!   [`super::protected`] after following links and before anything is
//!   created, unless the operator allowed that grant;
//! - execute: with `processes.allow_subprocess: true`, anything readable but
//!   not writable; otherwise only the interpreter chain of the script and
//!   the ELF loader;
//! - network: no TCP `connect` or `bind` unless `network.outbound` lists
//!   hosts; then TCP `connect` to the ports the entries name (`host:443`),
//!   or to any port when one names none: Landlock filters by port, never by
//!   host.
//!
//! The rules are applied by [`restrict_thread`] to a fresh thread of the
//! server, which then spawns the script: a Landlock domain belongs to the
//! thread that enforced it and to every process it starts from then on,
//! so the server itself stays unconfined and no launcher has to be
//! executed in between (docs/runtime-sandbox.md has the measurements).

use std::path::{Component, Path, PathBuf};
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
use skillpkg_index::skill::model::Permissions;
use skillpkg_index::skill::protected::Access;

use super::grant::{Denied, WILDCARDS, parse_glob};
use super::protected::{self, Protection};

/// System folders and files every sandboxed script may read: the dynamic
/// loader's libraries and cache, interpreters' standard libraries, time
/// zones, user and host name lookup, TLS roots. Everything else on the
/// machine (home folders, `/proc`, `/sys`, `/run`, `/var`, other files of
/// `/etc`) is denied unless a glob grants it. Paths that do not exist are
/// skipped.
pub const SYSTEM_READ: &[&str] = &[
    "/usr",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/bin",
    "/sbin",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/localtime",
    "/etc/timezone",
    "/etc/passwd",
    "/etc/group",
    "/etc/nsswitch.conf",
    "/etc/hosts",
    "/etc/host.conf",
    "/etc/resolv.conf",
    "/etc/gai.conf",
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/pki",
    "/etc/mime.types",
    "/etc/locale.alias",
    "/dev/urandom",
    "/dev/random",
    "/dev/zero",
];

/// Device files every sandboxed script may write (and read).
pub const SYSTEM_WRITE: &[&str] = &["/dev/null", "/dev/full"];

/// ELF program interpreters (dynamic loaders). The kernel opens the loader
/// of an executable for execution, so with subprocesses denied it is the
/// one file besides the interpreter chain that keeps execute access.
const ELF_LOADERS: &[&str] = &[
    "/lib64/ld-linux-x86-64.so.2",
    "/lib/ld-linux-aarch64.so.1",
    "/lib/ld-linux-armhf.so.3",
    "/lib/ld-linux.so.2",
    "/lib/ld-musl-x86_64.so.1",
    "/lib/ld-musl-aarch64.so.1",
];

/// How many paths the read globs of one skill may expand to, and how many
/// entries one expansion may visit: the rules are rebuilt for every run,
/// and a glob that matches more is too broad to be least privilege.
const MAX_MATCHES: usize = 4096;
const MAX_VISITED: usize = 50_000;

/// What the running kernel can enforce, reported by [`probe`] once at
/// server start.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Support {
    /// The highest Landlock ABI whose access rights all work here; 0 when
    /// Landlock is missing or disabled.
    pub abi: u32,
    /// Filesystem rules (ABI 1, Linux 5.13).
    pub filesystem: bool,
    /// TCP `connect` and `bind` rules (ABI 4, Linux 6.7).
    pub network: bool,
    /// Signals and abstract UNIX sockets confined to the sandbox (ABI 6,
    /// Linux 6.12).
    pub scopes: bool,
    /// What is not enforced, one sentence each.
    pub notes: Vec<String>,
}

/// Network access of a sandboxed script.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind", content = "ports")]
pub enum Network {
    /// No TCP connect or bind (`network.outbound` is empty).
    Deny,
    /// TCP connect to these ports only, to any host.
    Ports(Vec<u16>),
    /// TCP connect to any host and port; bind stays denied.
    Any,
}

/// The effective grants of one run: the skill's permissions intersected
/// with the roots, as paths. System paths ([`SYSTEM_READ`]) and the
/// interpreter are added when the rules are applied.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Policy {
    /// The skill folder: readable (and executable with `subprocess`).
    pub skill_root: PathBuf,
    /// Files and folders the read globs matched, read only.
    pub read: Vec<PathBuf>,
    /// Folders (or files) the write globs grant: read, write, create,
    /// remove; never execute.
    pub write: Vec<PathBuf>,
    /// TCP access.
    pub network: Network,
    /// `network.outbound` as declared: the hosts (and ports) the run's
    /// proxy lets it reach (cli/src/runtime/jail/proxy.rs).
    #[serde(default)]
    pub outbound: Vec<String>,
    /// `processes.allow_subprocess`: whether the script may execute other
    /// programs than its interpreter.
    pub subprocess: bool,
    /// Things the runtime grants less (or more coarsely) than declared,
    /// for the caller to pass on.
    pub notes: Vec<String>,
}

/// Returns what the running kernel's Landlock can enforce. Computed once.
pub fn probe() -> Support {
    static SUPPORT: OnceLock<Support> = OnceLock::new();
    SUPPORT.get_or_init(landlock_rules::probe).clone()
}

/// Computes the effective grants of a run of a skill at `skill_root` with
/// `permissions`, under `roots` (the client's MCP roots, else the project
/// folder), working in `workdir` (already checked by [`workdir_in_roots`]).
/// Creates the write folders that are missing under the root holding
/// `workdir`. A glob that is invalid, climbs out of the roots, names no
/// fixed folder to write, matches too much, or reaches a protected path
/// (`.git`, `.claude`, credentials, the home folder: [`super::protected`])
/// is refused. The skill is named after its folder, and only the home
/// folder and the names every project has are protected; `skillpkg mcp`
/// calls [`policy_for_skill`] with what it knows of this machine.
pub fn policy_for(
    skill_root: &Path,
    permissions: &Permissions,
    roots: &[PathBuf],
    workdir: &Path,
) -> Result<Policy, Denied> {
    let skill = skill_root
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let protection = Protection::new(dirs::home_dir().as_deref(), [], Vec::new());
    let roots = canonical_roots(roots)?;
    let workdir = canonical(workdir)?;
    policy_for_skill(
        &skill,
        skill_root,
        permissions,
        &roots,
        &workdir,
        &protection,
    )
}

/// `roots` after their links, each looked up once for a run: what
/// [`workdir_in_roots`] and [`policy_for_skill`] take.
pub fn canonical_roots(roots: &[PathBuf]) -> Result<Vec<PathBuf>, Denied> {
    roots.iter().map(|root| canonical(root)).collect()
}

/// [`policy_for`] for the skill named `skill`, refusing grants that reach
/// what `protection` protects unless it allows them. Every grant is judged
/// before anything is created for it. `roots` are taken after their links
/// ([`canonical_roots`]), and `workdir` is what [`workdir_in_roots`] gave.
pub fn policy_for_skill(
    skill: &str,
    skill_root: &Path,
    permissions: &Permissions,
    roots: &[PathBuf],
    workdir: &Path,
    protection: &Protection,
) -> Result<Policy, Denied> {
    if roots.is_empty() {
        return Err(Denied::NoRoots);
    }
    let home_root = roots
        .iter()
        .find(|root| workdir.starts_with(root))
        .ok_or_else(|| Denied::OutsideRoots {
            path: workdir.to_path_buf(),
        })?;
    let mut policy = Policy {
        skill_root: canonical(skill_root)?,
        read: Vec::new(),
        write: Vec::new(),
        network: network_for(&permissions.network.outbound),
        outbound: permissions.network.outbound.clone(),
        subprocess: permissions.processes.allow_subprocess == Some(true),
        notes: Vec::new(),
    };

    for glob in &permissions.filesystem.read {
        let (prefix, matcher) = parse_glob("read", glob)?;
        let guarded = !protection.allows(skill, glob);
        if guarded {
            protection.check_text(skill, Access::Read, glob)?;
        }
        let mut budget = protected::MAX_CHECKED;
        let mut matched = 0;
        for root in roots {
            let base = root.join(&prefix);
            let Some(base) = inside(root, &base, "read", glob)? else {
                continue;
            };
            let first = policy.read.len();
            match &matcher {
                // A literal path or `prefix/**`: the folder or file itself.
                None => {
                    policy.read.push(base);
                    matched += 1;
                }
                Some(matcher) => {
                    matched += expand(root, &base, matcher, glob, &mut policy.read)?;
                }
            }
            if guarded {
                for path in &policy.read[first..] {
                    protection.check_path(skill, Access::Read, glob, root, path, &mut budget)?;
                }
            }
            if policy.read.len() > MAX_MATCHES {
                return Err(too_many("read", glob));
            }
        }
        if matched == 0 {
            policy.notes.push(format!(
                "`filesystem.read` pattern `{glob}` matched nothing in the roots when the run started"
            ));
        }
    }

    for glob in &permissions.filesystem.write {
        let (prefix, matcher) = parse_glob("write", glob)?;
        if prefix.as_os_str().is_empty() {
            return Err(Denied::Glob {
                access: "write",
                glob: glob.clone(),
                reason: "it has no fixed folder before its first wildcard, so it would grant the whole root".into(),
            });
        }
        if matcher.is_some() && !glob.ends_with("/**") {
            policy.notes.push(format!(
                "`filesystem.write` pattern `{glob}` is granted as its whole folder `{}`",
                prefix.display()
            ));
        }
        let guarded = !protection.allows(skill, glob);
        if guarded {
            protection.check_text(skill, Access::Write, glob)?;
        }
        for root in roots {
            let target = root.join(&prefix);
            // Judged where links lead, before anything is created: a link
            // `out -> .git` must not open `.git`, nor get `.git/x` made.
            let resolved = protected::resolve(&target);
            if guarded && resolved.starts_with(root) {
                let mut budget = protected::MAX_CHECKED;
                protection.check_path(skill, Access::Write, glob, root, &resolved, &mut budget)?;
            }
            if root == home_root {
                let names_a_file = !glob.ends_with('/') && !glob.contains(WILDCARDS);
                create_inside(root, &target, names_a_file, glob)?;
            }
            if let Some(target) = inside(root, &target, "write", glob)? {
                policy.write.push(target);
            }
        }
    }
    policy.read.sort();
    policy.read.dedup();
    policy.write.sort();
    policy.write.dedup();
    Ok(policy)
}

/// `host:port` into its parts. A bare IPv6 address has colons but no
/// port: only `[::1]:443` has one.
pub(crate) fn split_host_port(text: &str) -> (&str, Option<u16>) {
    match text.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') || host.ends_with(']') => {
            match port.parse::<u16>() {
                Ok(port) => (host, Some(port)),
                Err(_) => (text, None),
            }
        }
        _ => (text, None),
    }
}

/// `host:port` entries restrict TCP to their ports; one entry without a
/// port (`api.example.com`, `::1`) leaves every port open.
fn network_for(outbound: &[String]) -> Network {
    if outbound.is_empty() {
        return Network::Deny;
    }
    let mut ports = Vec::new();
    for entry in outbound {
        match split_host_port(entry.trim()).1 {
            Some(port) => ports.push(port),
            None => return Network::Any,
        }
    }
    ports.sort_unstable();
    ports.dedup();
    Network::Ports(ports)
}

/// Walks `base` (under `root`) without following symbolic links and adds
/// each path whose root-relative form `matcher` matches. Returns how many.
fn expand(
    root: &Path,
    base: &Path,
    matcher: &globset::GlobMatcher,
    glob: &str,
    out: &mut Vec<PathBuf>,
) -> Result<usize, Denied> {
    let mut matched = 0;
    let mut visited = 0;
    let mut stack = vec![base.to_path_buf()];
    while let Some(folder) = stack.pop() {
        let entries = match fs_err::read_dir(&folder) {
            Ok(entries) => entries,
            // A file prefix, or a folder that went away: nothing to match.
            Err(_) => continue,
        };
        for entry in entries.flatten() {
            visited += 1;
            if visited > MAX_VISITED {
                return Err(too_many("read", glob));
            }
            let path = entry.path();
            let Ok(file_type) = entry.file_type() else {
                continue;
            };
            // A link could point anywhere; granting it would grant its
            // target, so links are neither matched nor followed.
            if file_type.is_symlink() {
                continue;
            }
            let Ok(relative) = path.strip_prefix(root) else {
                continue;
            };
            let Some(relative) = relative.to_str() else {
                continue;
            };
            if matcher.is_match(relative) {
                out.push(path.clone());
                matched += 1;
                if matched > MAX_MATCHES {
                    return Err(too_many("read", glob));
                }
            }
            if file_type.is_dir() {
                stack.push(path);
            }
        }
    }
    Ok(matched)
}

fn too_many(access: &'static str, glob: &str) -> Denied {
    Denied::Glob {
        access,
        glob: glob.to_owned(),
        reason: format!(
            "it matches more than {MAX_MATCHES} paths (or needs more than {MAX_VISITED} entries walked)"
        ),
    }
}

/// Returns the canonical form of `path` when it exists and stays inside
/// `root` (a link out of the root is refused), `None` when it does not
/// exist.
fn inside(
    root: &Path,
    path: &Path,
    access: &'static str,
    glob: &str,
) -> Result<Option<PathBuf>, Denied> {
    match fs_err::canonicalize(path) {
        Ok(real) if real.starts_with(root) => Ok(Some(real)),
        Ok(real) => Err(Denied::Glob {
            access,
            glob: glob.to_owned(),
            reason: format!(
                "{} leads to {}, outside the roots",
                path.display(),
                real.display()
            ),
        }),
        Err(_) => Ok(None),
    }
}

/// Creates a missing write target under `root`: a folder, or an empty
/// file when the glob names one literally (`report.md`). The deepest
/// existing ancestor must be inside the root, so a planted link cannot
/// make it create things elsewhere.
fn create_inside(root: &Path, target: &Path, file: bool, glob: &str) -> Result<(), Denied> {
    if fs_err::symlink_metadata(target).is_ok() {
        return Ok(());
    }
    let mut existing = target.parent();
    while let Some(ancestor) = existing {
        if fs_err::symlink_metadata(ancestor).is_ok() {
            break;
        }
        existing = ancestor.parent();
    }
    if let Some(ancestor) = existing {
        inside(root, ancestor, "write", glob)?;
    }
    let io_error = |source| Denied::Io {
        path: target.to_path_buf(),
        source,
    };
    if file {
        if let Some(parent) = target.parent() {
            fs_err::create_dir_all(parent).map_err(io_error)?;
        }
        fs_err::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(target)
            .map_err(io_error)?;
    } else {
        fs_err::create_dir_all(target).map_err(io_error)?;
    }
    Ok(())
}

fn canonical(path: &Path) -> Result<PathBuf, Denied> {
    fs_err::canonicalize(path).map_err(|source| Denied::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// Parses a relative path from outside (an MCP argument): not empty, not
/// absolute, no `..`, no `\` or NUL.
fn relative_path(path: &str) -> Result<PathBuf, Denied> {
    let refuse = |reason: &str| Denied::Path {
        path: path.to_owned(),
        reason: reason.to_owned(),
    };
    if path.is_empty() {
        return Err(refuse("it is empty"));
    }
    if path.contains('\\') || path.contains('\0') {
        return Err(refuse("it contains `\\` or NUL"));
    }
    let parsed = Path::new(path);
    let mut clean = PathBuf::new();
    for component in parsed.components() {
        match component {
            Component::Normal(part) => clean.push(part),
            Component::CurDir => {}
            Component::ParentDir => return Err(refuse("it climbs out with `..`")),
            Component::RootDir | Component::Prefix(_) => {
                return Err(refuse("it is absolute"));
            }
        }
    }
    Ok(clean)
}

/// Resolves `path` (relative to the skill folder, as `skills_run_script`
/// takes it) to the script it names: a regular file under the skill's
/// `scripts/` folder, even after following links.
pub fn script_in_skill(skill_root: &Path, path: &str) -> Result<PathBuf, Denied> {
    file_in(skill_root, Some("scripts"), path)
}

/// Resolves a tool's `implementation.entrypoint` to the file it names: a
/// regular file inside the skill folder, even after following links.
pub fn entrypoint_in_skill(skill_root: &Path, path: &str) -> Result<PathBuf, Denied> {
    file_in(skill_root, None, path)
}

fn file_in(skill_root: &Path, folder: Option<&str>, path: &str) -> Result<PathBuf, Denied> {
    let relative = relative_path(path)?;
    let refuse = |reason: &str| Denied::Path {
        path: path.to_owned(),
        reason: reason.to_owned(),
    };
    let base = match folder {
        Some(folder) => {
            if !relative.starts_with(folder) || relative == Path::new(folder) {
                return Err(refuse("only files under the skill's `scripts/` folder run"));
            }
            canonical(&skill_root.join(folder))?
        }
        None => canonical(skill_root)?,
    };
    let real = fs_err::canonicalize(skill_root.join(&relative))
        .map_err(|_| refuse("there is no such file in the skill"))?;
    if !real.starts_with(&base) {
        return Err(refuse("it is a link that leads out of the skill's folder"));
    }
    if !fs_err::metadata(&real).is_ok_and(|meta| meta.is_file()) {
        return Err(refuse("it is not a regular file"));
    }
    Ok(real)
}

/// Resolves a working folder from outside: a relative one is taken from
/// the first root, an absolute one must be inside a root. Returns its
/// canonical path, which must be a folder inside a root even after
/// following links. `roots` are taken after their links
/// ([`canonical_roots`]).
pub fn workdir_in_roots(roots: &[PathBuf], workdir: &str) -> Result<PathBuf, Denied> {
    let first = roots.first().ok_or(Denied::NoRoots)?;
    let candidate = if Path::new(workdir).is_absolute() {
        PathBuf::from(workdir)
    } else if workdir.is_empty() {
        first.clone()
    } else {
        first.join(relative_path(workdir)?)
    };
    let real = fs_err::canonicalize(&candidate).map_err(|_| Denied::Path {
        path: workdir.to_owned(),
        reason: "there is no such folder".into(),
    })?;
    if !real.is_dir() {
        return Err(Denied::Path {
            path: workdir.to_owned(),
            reason: "it is not a folder".into(),
        });
    }
    if roots.iter().any(|root| real.starts_with(root)) {
        return Ok(real);
    }
    Err(Denied::OutsideRoots { path: real })
}

/// The files that must stay executable for `program` to start when
/// subprocesses are denied: the program itself, its `#!` interpreter
/// (through `/usr/bin/env NAME`, looked up in `path_var`), up to three
/// levels, and the ELF loaders.
pub fn executables_for(program: &Path, path_var: Option<&str>) -> Vec<PathBuf> {
    let mut files = elf_loaders().to_vec();
    let mut next = Some(program.to_path_buf());
    for _ in 0..3 {
        let Some(current) = next.take() else { break };
        next = shebang(&current).and_then(|(interpreter, argument)| {
            // The kernel reads a relative interpreter from the working
            // folder; nothing of the kind is ever granted.
            if !interpreter.is_absolute() {
                return None;
            }
            let is_env = interpreter.file_name().is_some_and(|name| name == "env");
            files.push(interpreter.clone());
            if is_env {
                argument.and_then(|name| find_in_path(&name, path_var))
            } else {
                Some(interpreter)
            }
        });
        files.push(current);
    }
    files.sort();
    files.dedup();
    files
}

/// The ELF loaders this machine has, after their links: looked up once
/// per process.
pub fn elf_loaders() -> &'static [PathBuf] {
    static LOADERS: OnceLock<Vec<PathBuf>> = OnceLock::new();
    LOADERS.get_or_init(|| {
        ELF_LOADERS
            .iter()
            .filter_map(|path| fs_err::canonicalize(path).ok())
            .collect()
    })
}

/// Reads the `#!` line of `path`: the interpreter and its first argument.
pub(crate) fn shebang(path: &Path) -> Option<(PathBuf, Option<String>)> {
    use std::io::Read as _;
    let mut head = [0_u8; 256];
    let mut file = fs_err::File::open(path).ok()?;
    let read = file.read(&mut head).ok()?;
    let head = head.get(..read)?;
    let line = head.strip_prefix(b"#!")?;
    let line = line.split(|byte| *byte == b'\n').next()?;
    let line = std::str::from_utf8(line).ok()?;
    let mut words = line.split_ascii_whitespace();
    let interpreter = PathBuf::from(words.next()?);
    let argument = words.find(|word| !word.starts_with('-')).map(str::to_owned);
    Some((interpreter, argument))
}

/// Looks `name` up in a `PATH` value: the first executable regular file.
/// Looked up once per process for each name and `PATH`, as a shell hashes
/// the commands it ran, and again once the file found is no longer an
/// executable file: each lookup is a `statx` per folder of `PATH`, before
/// every run. A program installed since in an earlier folder of `PATH`
/// is used after the server starts again.
pub fn find_in_path(name: &str, path_var: Option<&str>) -> Option<PathBuf> {
    use std::collections::HashMap;
    use std::sync::Mutex;
    type Found = HashMap<(String, String), PathBuf>;
    static FOUND: OnceLock<Mutex<Found>> = OnceLock::new();
    if name.contains('/') {
        return Path::new(name).is_absolute().then(|| PathBuf::from(name));
    }
    let path_var = path_var?;
    let key = (name.to_owned(), path_var.to_owned());
    let found = FOUND.get_or_init(Mutex::default);
    if let Some(known) = found.lock().ok().and_then(|found| found.get(&key).cloned())
        && is_executable_file(&known)
    {
        return Some(known);
    }
    let now = path_var
        .split(':')
        .filter(|folder| !folder.is_empty())
        .map(|folder| Path::new(folder).join(name))
        .find(|candidate| is_executable_file(candidate))?;
    if let Ok(mut found) = found.lock() {
        found.insert(key, now.clone());
    }
    Some(now)
}

fn is_executable_file(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    fs_err::metadata(path)
        .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

/// Extra paths of one run that the [`Policy`] does not hold: the folders
/// the interpreter is installed in, the files that stay executable, the
/// run's private scratch folder.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct RunGrants {
    pub read: Vec<PathBuf>,
    pub execute: Vec<PathBuf>,
    pub write: Vec<PathBuf>,
}

/// Confines the calling thread (and every process it starts afterwards)
/// to `policy` plus `extra`. Call it on a thread of its own that ends
/// after spawning: the confinement cannot be lifted.
pub fn restrict_thread(policy: &Policy, extra: &RunGrants) -> Result<(), String> {
    landlock_rules::restrict(policy, extra, None)
}

/// A Landlock ruleset made before its run is known, holding the rules of
/// the system paths, which are the same for every run of a kind: the
/// kernel work that does not depend on the run, off its path.
pub struct RulesAhead(landlock_rules::Ahead);

impl std::fmt::Debug for RulesAhead {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("RulesAhead").finish_non_exhaustive()
    }
}

impl RulesAhead {
    /// The ruleset for runs with `network` (its kind: none, ports, any)
    /// and `subprocess`; `None` when Landlock cannot make it (the run then
    /// makes its own, and says why it cannot).
    pub fn make(network: &Network, subprocess: bool) -> Option<Self> {
        landlock_rules::ahead(network, subprocess).ok().map(Self)
    }
}

/// [`restrict_thread`], starting from `ahead` when it was made for runs
/// like this one (same network kind and `subprocess`), else from scratch:
/// the same rules either way.
pub fn restrict_thread_from(
    ahead: Option<RulesAhead>,
    policy: &Policy,
    extra: &RunGrants,
) -> Result<(), String> {
    landlock_rules::restrict(policy, extra, ahead.map(|ahead| ahead.0))
}

/// Does ahead what every [`restrict_thread`] of this process needs: the
/// kernel's Landlock ABI, the system paths opened. A run's launcher calls
/// it while it waits; the descriptors are close-on-exec.
pub fn warm_landlock() {
    landlock_rules::warm();
}

#[cfg(target_os = "linux")]
mod landlock_rules {
    use std::path::Path;
    use std::sync::OnceLock;

    use landlock::{
        ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, NetPort, PathBeneath,
        PathFd, Ruleset, RulesetAttr, RulesetCreated, RulesetCreatedAttr, RulesetStatus, Scope,
    };

    use super::{Network, Policy, RunGrants, SYSTEM_READ, SYSTEM_WRITE, Support};

    const ABIS: [ABI; 10] = [
        ABI::V10,
        ABI::V9,
        ABI::V8,
        ABI::V7,
        ABI::V6,
        ABI::V5,
        ABI::V4,
        ABI::V3,
        ABI::V2,
        ABI::V1,
    ];

    fn features(abi: ABI) -> (BitFlags<AccessFs>, BitFlags<AccessNet>, BitFlags<Scope>) {
        (
            AccessFs::from_all(abi),
            AccessNet::from_all(abi),
            Scope::from_all(abi),
        )
    }

    fn works(abi: ABI) -> bool {
        let (fs, net, scope) = features(abi);
        let mut ruleset = Ruleset::default().set_compatibility(CompatLevel::HardRequirement);
        let build = || -> Result<RulesetCreated, landlock::RulesetError> {
            ruleset = ruleset.handle_access(fs)?;
            if !net.is_empty() {
                ruleset = ruleset.handle_access(net)?;
            }
            if !scope.is_empty() {
                ruleset = ruleset.scope(scope)?;
            }
            ruleset.create()
        };
        build().is_ok()
    }

    /// The highest ABI whose rights all work, lowered to the first ABI
    /// with the same rights (newer ABIs may only add flags this runtime
    /// does not use).
    pub(super) fn current_abi() -> ABI {
        static ABI_FOUND: std::sync::OnceLock<ABI> = std::sync::OnceLock::new();
        *ABI_FOUND.get_or_init(|| {
            let Some(index) = ABIS.iter().position(|abi| works(*abi)) else {
                return ABI::Unsupported;
            };
            let mut found = ABIS[index];
            for lower in &ABIS[index + 1..] {
                if features(*lower) == features(found) {
                    found = *lower;
                } else {
                    break;
                }
            }
            found
        })
    }

    pub(super) fn probe() -> Support {
        let abi = current_abi();
        let number = abi as u32;
        let mut notes = Vec::new();
        if abi == ABI::Unsupported {
            notes.push(
                "Landlock is not available (Linux 5.13 or later with `landlock` in the LSM list): scripts can only run unsandboxed".into(),
            );
        }
        // What Landlock alone left open before ABI 4 and 6 (TCP, UDP,
        // other socket families, signals, abstract and path-named UNIX
        // sockets, processes that leave the group) each run's own
        // namespaces close: nothing more to say about them.
        Support {
            abi: number,
            filesystem: number >= 1,
            network: number >= 4,
            scopes: number >= 6,
            notes,
        }
    }

    static READ: OnceLock<Vec<Opened>> = OnceLock::new();
    static WRITE: OnceLock<Vec<Opened>> = OnceLock::new();

    /// Learns the ABI and opens the system paths now, ahead of a run.
    pub(super) fn warm() {
        current_abi();
        system(SYSTEM_READ, &READ);
        system(SYSTEM_WRITE, &WRITE);
    }

    /// A path opened once (`O_PATH`) for rules.
    struct Opened {
        fd: PathFd,
        folder: bool,
    }

    fn open(path: &Path) -> Option<Opened> {
        // A path that does not exist (a system folder this distribution
        // lacks) grants nothing.
        let folder = fs_err::metadata(path).ok()?.is_dir();
        Some(Opened {
            fd: PathFd::new(path).ok()?,
            folder,
        })
    }

    /// The system paths, opened at the first run and kept, so each run
    /// only adds their rules.
    fn system(
        paths: &'static [&'static str],
        cell: &'static OnceLock<Vec<Opened>>,
    ) -> &'static [Opened] {
        cell.get_or_init(|| {
            paths
                .iter()
                .filter_map(|path| open(Path::new(path)))
                .collect()
        })
    }

    fn add_opened(
        ruleset: RulesetCreated,
        opened: &Opened,
        access: BitFlags<AccessFs>,
        abi: ABI,
    ) -> Result<RulesetCreated, String> {
        // Rights a kernel does not know are left out rather than refused;
        // rights that only apply to folders are left out of file rules.
        let access = if opened.folder {
            access & AccessFs::from_all(abi)
        } else {
            access & AccessFs::from_file(abi)
        };
        ruleset
            .add_rule(PathBeneath::new(&opened.fd, access))
            .map_err(|error| format!("cannot add a Landlock rule: {error}"))
    }

    fn add(
        ruleset: RulesetCreated,
        path: &Path,
        access: BitFlags<AccessFs>,
        abi: ABI,
    ) -> Result<RulesetCreated, String> {
        match open(path) {
            Some(opened) => add_opened(ruleset, &opened, access, abi),
            None => Ok(ruleset),
        }
    }

    /// What a ruleset handles and grants the system paths depends on: the
    /// kind of network (not its ports) and whether subprocesses may run.
    type Kind = (std::mem::Discriminant<Network>, bool);

    /// A ruleset with the system paths' rules, made for runs of `kind`.
    pub(super) struct Ahead {
        kind: Kind,
        created: RulesetCreated,
    }

    pub(super) fn ahead(network: &Network, subprocess: bool) -> Result<Ahead, String> {
        let kind = (std::mem::discriminant(network), subprocess);
        Ok(Ahead {
            kind,
            created: with_system_rules(network, subprocess)?,
        })
    }

    /// A new ruleset for runs with `network` and `subprocess`, holding the
    /// system paths' rules.
    fn with_system_rules(network: &Network, subprocess: bool) -> Result<RulesetCreated, String> {
        let abi = current_abi();
        if abi == ABI::Unsupported {
            return Err("Landlock is not available on this kernel".into());
        }
        let all = AccessFs::from_all(abi);
        let read = AccessFs::from_read(abi) & !AccessFs::Execute;
        let system_access = if subprocess {
            AccessFs::from_read(abi)
        } else {
            read
        };
        let error = |error: landlock::RulesetError| error.to_string();

        let mut ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(all)
            .map_err(error)?;
        let net = AccessNet::from_all(abi);
        let handled_net = match network {
            Network::Deny => net,
            // Outbound TCP is allowed (to some ports); UDP stays open for
            // DNS, and bind stays denied.
            Network::Ports(_) => AccessNet::BindTcp | AccessNet::ConnectTcp,
            Network::Any => BitFlags::from(AccessNet::BindTcp),
        };
        if !net.is_empty() {
            ruleset = ruleset.handle_access(handled_net).map_err(error)?;
        }
        let scope = Scope::from_all(abi);
        if !scope.is_empty() {
            ruleset = ruleset.scope(scope).map_err(error)?;
        }
        let mut created = ruleset.create().map_err(error)?;

        for opened in system(SYSTEM_READ, &READ) {
            created = add_opened(created, opened, system_access, abi)?;
        }
        let device = read | AccessFs::WriteFile | AccessFs::Truncate;
        for opened in system(SYSTEM_WRITE, &WRITE) {
            created = add_opened(created, opened, device, abi)?;
        }
        Ok(created)
    }

    pub(super) fn restrict(
        policy: &Policy,
        extra: &RunGrants,
        ahead: Option<Ahead>,
    ) -> Result<(), String> {
        let abi = current_abi();
        if abi == ABI::Unsupported {
            return Err("Landlock is not available on this kernel".into());
        }
        let all = AccessFs::from_all(abi);
        let read = AccessFs::from_read(abi) & !AccessFs::Execute;
        let read_execute = AccessFs::from_read(abi);
        let write = all & !AccessFs::Execute;
        let system_access = if policy.subprocess {
            read_execute
        } else {
            read
        };
        let error = |error: landlock::RulesetError| error.to_string();
        let net = AccessNet::from_all(abi);

        let kind = (std::mem::discriminant(&policy.network), policy.subprocess);
        let mut created = match ahead.filter(|ahead| ahead.kind == kind) {
            Some(ahead) => ahead.created,
            None => with_system_rules(&policy.network, policy.subprocess)?,
        };
        created = add(created, &policy.skill_root, system_access, abi)?;
        for path in &policy.read {
            created = add(created, path, read, abi)?;
        }
        // The interpreter's installation is treated like a system folder.
        for path in &extra.read {
            created = add(created, path, system_access, abi)?;
        }
        for path in policy.write.iter().chain(&extra.write) {
            created = add(created, path, write, abi)?;
        }
        for path in &extra.execute {
            created = add(created, path, AccessFs::Execute | AccessFs::ReadFile, abi)?;
        }
        if let (false, Network::Ports(ports)) = (net.is_empty(), &policy.network) {
            for port in ports {
                created = created
                    .add_rule(NetPort::new(*port, AccessNet::ConnectTcp))
                    .map_err(error)?;
            }
        }
        let status = created.restrict_self().map_err(error)?;
        if status.ruleset != RulesetStatus::FullyEnforced {
            return Err(format!(
                "Landlock enforced the rules only partly ({:?})",
                status.ruleset
            ));
        }
        Ok(())
    }
}

#[cfg(not(target_os = "linux"))]
mod landlock_rules {
    use super::{Network, Policy, RunGrants, Support};

    /// Nothing: there are no rulesets to make ahead.
    pub(super) struct Ahead;

    pub(super) fn ahead(_: &Network, _: bool) -> Result<Ahead, String> {
        Err("Landlock exists only on Linux".into())
    }

    pub(super) fn probe() -> Support {
        Support {
            abi: 0,
            filesystem: false,
            network: false,
            scopes: false,
            notes: vec!["Landlock exists only on Linux: scripts can only run unsandboxed".into()],
        }
    }

    pub(super) fn warm() {}

    pub(super) fn restrict(_: &Policy, _: &RunGrants, _: Option<Ahead>) -> Result<(), String> {
        Err("Landlock exists only on Linux".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::grant::{Reach, Refusal};

    /// A ruleset made ahead confines a run exactly as one made at the run,
    /// and one made for another kind of run is not used.
    #[test]
    fn rules_made_ahead_confine_as_rules_made_at_the_run() {
        let temp = tempfile::tempdir().unwrap();
        let skill = temp.path().join("skill");
        fs_err::create_dir_all(&skill).unwrap();
        fs_err::write(skill.join("SKILL.md"), "x").unwrap();
        let secret = temp.path().join("secret.txt");
        fs_err::write(&secret, "x").unwrap();
        let outside = temp.path().join("out.txt");
        let policy = Policy {
            skill_root: skill.clone(),
            read: Vec::new(),
            write: Vec::new(),
            network: Network::Deny,
            outbound: Vec::new(),
            subprocess: false,
            notes: Vec::new(),
        };
        for ahead in [
            None,
            Some((Network::Deny, false)),
            Some((Network::Any, false)),
            Some((Network::Deny, true)),
        ] {
            let (policy, skill, secret, outside) = (
                policy.clone(),
                skill.clone(),
                secret.clone(),
                outside.clone(),
            );
            let kind = ahead.clone();
            let seen = std::thread::spawn(move || {
                let made =
                    kind.and_then(|(network, subprocess)| RulesAhead::make(&network, subprocess));
                restrict_thread_from(made, &policy, &RunGrants::default()).unwrap();
                (
                    fs_err::read(skill.join("SKILL.md")).is_ok(),
                    fs_err::read("/usr/bin/env").is_ok(),
                    fs_err::read(&secret).is_ok(),
                    fs_err::write(&outside, "x").is_ok(),
                    // Without `subprocess`, system files are not executable.
                    std::process::Command::new("/usr/bin/true").status().is_ok(),
                )
            })
            .join()
            .unwrap();
            assert_eq!(seen, (true, true, false, false, false), "ahead: {ahead:?}");
        }
    }

    #[test]
    fn a_glob_splits_into_its_fixed_folder_and_the_rest() {
        let prefix = |glob: &str| {
            let (prefix, matcher) = parse_glob("read", glob).unwrap();
            (prefix, matcher.is_some())
        };
        assert_eq!(prefix("output/**"), (PathBuf::from("output"), false));
        assert_eq!(prefix("./output/**"), (PathBuf::from("output"), false));
        assert_eq!(prefix("report.md"), (PathBuf::from("report.md"), false));
        assert_eq!(prefix("docs/**/*.pdf"), (PathBuf::from("docs"), true));
        assert_eq!(prefix("output/*.txt"), (PathBuf::from("output"), true));
        assert_eq!(prefix("**/*.pdf"), (PathBuf::new(), true));
        assert_eq!(prefix("a/b?/c"), (PathBuf::from("a"), true));
        for bad in [
            "",
            "/etc/**",
            "~/x",
            "../x",
            "a/../../x",
            "!x",
            "a\\b",
            "a/[b",
        ] {
            assert!(parse_glob("read", bad).is_err(), "{bad:?} was accepted");
        }
    }

    /// A project with a skill folder, and the write grant `glob` computed
    /// for skill `evil` under it with `protection`.
    fn write_policy(project: &Path, glob: &str, protection: &Protection) -> Result<Policy, Denied> {
        let skill = project.join("skill");
        fs_err::create_dir_all(&skill).unwrap();
        let permissions: Permissions = serde_json::from_value(serde_json::json!({
            "filesystem": {"write": [glob]}
        }))
        .unwrap();
        policy_for_skill(
            "evil",
            &skill,
            &permissions,
            &[project.to_path_buf()],
            project,
            protection,
        )
    }

    fn refusal(result: Result<Policy, Denied>) -> Refusal {
        match result {
            Err(Denied::Protected(refusal)) => *refusal,
            other => panic!("not refused as protected: {other:?}"),
        }
    }

    #[test]
    fn grants_into_agent_or_vcs_configuration_are_refused_before_anything_is_created() {
        let dir = tempfile::tempdir().unwrap();
        let project = fs_err::canonicalize(dir.path()).unwrap();
        let protection = Protection::default();
        for (glob, rule, created) in [
            (".claude/**", "agent-config", ".claude"),
            (".git/hooks/**", "vcs", ".git"),
            (".GIT/Hooks/*", "vcs", ".GIT"),
            ("./.github//workflows/**", "agent-config", ".github"),
            ("skills.lock", "skillpkg-state", "skills.lock"),
            (".bashrc", "shell-startup", ".bashrc"),
        ] {
            let refused = refusal(write_policy(&project, glob, &protection));
            assert_eq!(refused.rule.id(), rule, "{glob}");
            assert_eq!(refused.glob, glob);
            let message = Denied::Protected(Box::new(refused)).to_string();
            assert!(message.contains(&format!("rule `{rule}`")), "{message}");
            assert!(
                !project.join(created).exists(),
                "{glob} created {created} although refused"
            );
        }
        assert!(write_policy(&project, "output/**", &protection).is_ok());
        assert!(project.join("output").is_dir());
    }

    #[test]
    fn a_link_into_git_or_a_folder_that_holds_git_opens_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let project = fs_err::canonicalize(dir.path()).unwrap();
        fs_err::create_dir_all(project.join(".git/hooks")).unwrap();
        std::os::unix::fs::symlink(".git/hooks", project.join("out")).unwrap();
        let protection = Protection::default();
        let refused = refusal(write_policy(&project, "out/**", &protection));
        assert_eq!(refused.rule.id(), "vcs");
        // Below the link, where nothing exists yet: nothing is made in `.git`.
        let refused = refusal(write_policy(&project, "out/new/**", &protection));
        assert_eq!(refused.rule.id(), "vcs");
        assert!(!project.join(".git/hooks/new").exists());
        // A folder holding a repository of its own.
        fs_err::create_dir_all(project.join("vendor/lib/.git")).unwrap();
        let refused = refusal(write_policy(&project, "vendor/**", &protection));
        assert_eq!(refused.reach, Reach::Contains);
        assert!(
            refused.protected.ends_with("vendor/lib/.git"),
            "{refused:?}"
        );
    }

    #[test]
    fn the_operator_allows_one_exact_grant() {
        let dir = tempfile::tempdir().unwrap();
        let project = fs_err::canonicalize(dir.path()).unwrap();
        let protection = Protection::new(None, [], vec!["evil=.claude/**".parse().unwrap()]);
        let policy = write_policy(&project, ".claude/**", &protection).unwrap();
        assert_eq!(policy.write, [project.join(".claude")]);
        // Another spelling of the same grant is another grant.
        refusal(write_policy(&project, "./.claude/**", &protection));
    }

    #[test]
    fn reads_of_credentials_are_refused_reads_of_git_are_not() {
        let dir = tempfile::tempdir().unwrap();
        let project = fs_err::canonicalize(dir.path()).unwrap();
        fs_err::create_dir_all(project.join(".git")).unwrap();
        fs_err::create_dir_all(project.join("docs")).unwrap();
        fs_err::write(project.join("docs/notes.md"), "notes\n").unwrap();
        let read = |glob: &str| {
            let permissions: Permissions = serde_json::from_value(serde_json::json!({
                "filesystem": {"read": [glob]}
            }))
            .unwrap();
            policy_for_skill(
                "evil",
                &project,
                &permissions,
                std::slice::from_ref(&project),
                &project,
                &Protection::default(),
            )
        };
        assert!(read(".git/**").is_ok());
        assert!(read("docs/**").is_ok());
        fs_err::write(project.join("docs/.env"), "TOKEN=x\n").unwrap();
        assert_eq!(refusal(read("docs/**")).rule.id(), "credentials");
        // A walked glob is judged by what it matched.
        fs_err::write(project.join("docs/server.pem"), "key\n").unwrap();
        assert_eq!(refusal(read("docs/*")).rule.id(), "credentials");
        assert!(read("docs/*.md").is_ok());
    }

    #[test]
    fn outbound_hosts_become_ports_or_any() {
        let hosts = |hosts: &[&str]| {
            network_for(
                &hosts
                    .iter()
                    .map(|host| (*host).to_owned())
                    .collect::<Vec<_>>(),
            )
        };
        assert_eq!(hosts(&[]), Network::Deny);
        assert_eq!(
            hosts(&["api.example.com:443", "[::1]:8080", "b.example.com:443"]),
            Network::Ports(vec![443, 8080])
        );
        assert_eq!(hosts(&["api.example.com:443", "example.org"]), Network::Any);
        // A bare IPv6 address ends in digits after a colon, but names no port.
        assert_eq!(hosts(&["::1"]), Network::Any);
        assert_eq!(hosts(&["example.org:https"]), Network::Any);
    }
}
