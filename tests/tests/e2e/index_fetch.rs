//! How a resolve reads index files, end to end against the real server:
//! concurrently (each file once, many in flight, over reused connections),
//! with the same lock and the same errors whatever order the files arrive
//! in, and revalidated from the user's cache with `If-None-Match` on the
//! next resolve, without a cached copy ever getting past a check a fresh
//! file would fail.

mod proxy;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use sha2::Digest as _;
use skillpkg_tests::{Nginx, Output, Skill, TestContext, TestRegistry, wait_until};

use self::proxy::Proxy;

/// How long the proxy holds each index file in the concurrency test.
const INDEX_DELAY: Duration = Duration::from_millis(200);

/// The graph of 30 skills: `top` depends on five skills, each of those on
/// two of eight, each of those on two of eight more, and those on two of
/// the eight leaves: five levels, up to eight wide, with shared
/// dependencies. Leaves first, so each is published before what needs it.
fn graph() -> Vec<(String, Vec<String>)> {
    let mut skills = Vec::new();
    for leaf in 0..8 {
        skills.push((format!("l4-{leaf}"), Vec::new()));
    }
    for node in 0..8 {
        skills.push((
            format!("l3-{node}"),
            vec![format!("l4-{node}"), format!("l4-{}", (node + 3) % 8)],
        ));
    }
    for node in 0..8 {
        skills.push((
            format!("l2-{node}"),
            vec![format!("l3-{node}"), format!("l3-{}", (node + 1) % 8)],
        ));
    }
    for node in 0..5 {
        skills.push((
            format!("l1-{node}"),
            vec![
                format!("l2-{}", (2 * node) % 8),
                format!("l2-{}", (2 * node + 1) % 8),
            ],
        ));
    }
    skills.push((
        "top".to_owned(),
        (0..5).map(|node| format!("l1-{node}")).collect(),
    ));
    skills
}

/// The path of a skill's index file in the tree (docs/index-format.md).
fn index_path(name: &str) -> String {
    match name.len() {
        1 => format!("index/1/{name}"),
        2 => format!("index/2/{name}"),
        3 => format!("index/3/{}/{name}", &name[..1]),
        _ => format!("index/{}/{}/{name}", &name[..2], &name[2..4]),
    }
}

/// A real registry, its publisher, and a project whose user has a cache
/// folder of their own.
struct World {
    registry: TestRegistry,
    sandbox: TestContext,
}

impl World {
    fn new(signed_metadata: bool) -> Self {
        let sandbox = TestContext::new();
        let mut builder = TestRegistry::builder(&sandbox);
        if signed_metadata {
            builder = builder.signed_metadata();
        }
        let registry = builder.start();
        Self { registry, sandbox }
    }

    /// Publishes `skills` (name, dependencies), each at `version`.
    fn publish(&self, skills: &[(String, Vec<String>)], version: &str) {
        for (name, deps) in skills {
            let deps: Vec<&str> = deps.iter().map(String::as_str).collect();
            self.registry
                .publish(&Skill::new(name, version).depends_on(&deps));
        }
    }

    fn project(&self) -> PathBuf {
        self.sandbox.path().join("project")
    }

    fn cache(&self) -> PathBuf {
        self.sandbox.path().join("cache")
    }

    /// Writes a project that wants `top` from the registry at `url`, with
    /// no lock, so that the next `skillpkg lock` resolves.
    fn want(&self, url: &str, skill: &str) {
        self.sandbox.write(
            "project/skills.toml",
            format!(
                "[registry]\nurl = \"{url}\"\n\n[install]\ntargets = [\"agents\"]\n\n[skills]\n{skill} = \"*\"\n"
            ),
        );
        let _ = fs_err::remove_file(self.project().join("skills.lock"));
    }

    /// Runs skillpkg in the project, as its user.
    fn user(&self, args: &[&str]) -> Output {
        self.sandbox.user_in(&self.project(), &self.cache(), args)
    }

    /// Resolves from scratch (`skillpkg lock` with no skills.lock) and
    /// returns the lock it wrote.
    fn resolve(&self) -> String {
        let _ = fs_err::remove_file(self.project().join("skills.lock"));
        let locked = self.user(&["lock"]);
        assert_eq!(locked.code, 0, "{locked:?}");
        fs_err::read_to_string(self.project().join("skills.lock")).expect("skills.lock")
    }

    /// The server's access log lines so far.
    fn log_lines(&self) -> usize {
        self.registry.server().log().lines().count()
    }

    /// The index file requests the server logged after line `from`, once
    /// `expected` of them are there: (path, status), in the order logged.
    fn index_requests(&self, from: usize, expected: usize) -> Vec<(String, u16)> {
        let index = |requests: Vec<(String, u16)>| -> Vec<(String, u16)> {
            requests
                .into_iter()
                .filter(|(path, _)| path.starts_with("index/"))
                .collect()
        };
        // A line is written once its answer went out, which may be just
        // after the client, having read it, exited.
        let _ = wait_until(Duration::from_secs(5), || {
            index(self.requests(from)).len() >= expected
        });
        index(self.requests(from))
    }

    /// The GET requests the server logged after line `from`: (path without
    /// its leading `/`, status), in the order logged.
    fn requests(&self, from: usize) -> Vec<(String, u16)> {
        let pattern = regex::Regex::new(r"request method=GET path=/(\S*) status=(\d+)")
            .expect("a valid pattern");
        self.registry
            .server()
            .log()
            .lines()
            .skip(from)
            .filter_map(|line| {
                let captures = pattern.captures(line)?;
                Some((captures[1].to_owned(), captures[2].parse().ok()?))
            })
            .collect()
    }

    /// The cache entry of `name`'s index file from the registry at `url`.
    fn cache_entry(&self, url: &str, name: &str) -> PathBuf {
        let port = url.rsplit(':').next().expect("a port");
        let prefix = format!("127.0.0.1-{port}-");
        let folders: Vec<PathBuf> = fs_err::read_dir(self.cache().join("index"))
            .expect("the index cache")
            .map(|entry| entry.expect("an entry").path())
            .filter(|path| {
                path.file_name()
                    .and_then(|name| name.to_str())
                    .is_some_and(|name| name.starts_with(&prefix))
            })
            .collect();
        assert_eq!(folders.len(), 1, "one folder for {url}: {folders:?}");
        folders[0].join(index_path(name))
    }
}

/// The skills a lock has: name -> (version, dependencies).
fn locked(lock: &str) -> BTreeMap<String, (String, Vec<String>)> {
    let lock: toml::Value = toml::from_str(lock).expect("skills.lock is TOML");
    lock["skill"]
        .as_array()
        .expect("[[skill]] entries")
        .iter()
        .map(|entry| {
            let text = |key: &str| entry[key].as_str().expect("a string").to_owned();
            let deps = entry["dependencies"]
                .as_array()
                .expect("dependencies")
                .iter()
                .map(|dep| dep.as_str().expect("a name").to_owned())
                .collect();
            (text("name"), (text("version"), deps))
        })
        .collect()
}

/// Counts each index path among `requests`.
fn counted(requests: &[(String, u16)]) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for (path, _) in requests {
        *counts.entry(path.clone()).or_default() += 1;
    }
    counts
}

#[test]
fn a_wide_deep_graph_resolves_to_the_whole_lock_reading_each_index_file_once() {
    let world = World::new(false);
    let graph = graph();
    world.publish(&graph, "1.0.0");
    world.want(world.registry.url(), "top");
    let before = world.log_lines();
    let lock = world.resolve();

    let expected: BTreeMap<String, (String, Vec<String>)> = graph
        .iter()
        .map(|(name, deps)| {
            let mut deps = deps.clone();
            deps.sort();
            (name.clone(), ("1.0.0".to_owned(), deps))
        })
        .collect();
    let mut got = locked(&lock);
    for (_, deps) in got.values_mut() {
        deps.sort();
    }
    assert_eq!(got, expected, "{lock}");

    let requests = world.index_requests(before, graph.len());
    let wanted: BTreeMap<String, usize> = graph
        .iter()
        .map(|(name, _)| (index_path(name), 1))
        .collect();
    assert_eq!(counted(&requests), wanted, "each index file exactly once");
    assert!(
        requests.iter().all(|(_, status)| *status == 200),
        "a cold cache asks for every file whole: {requests:?}"
    );
}

#[test]
fn index_files_are_fetched_concurrently_over_reused_connections() {
    let world = World::new(false);
    let graph = graph();
    world.publish(&graph, "1.0.0");
    let proxy = Proxy::start(world.registry.url(), |path| {
        if path.starts_with("/index/") {
            INDEX_DELAY
        } else {
            Duration::ZERO
        }
    });
    world.want(proxy.url(), "top");
    let started = Instant::now();
    let lock = world.resolve();
    let took = started.elapsed();
    assert_eq!(locked(&lock).len(), graph.len(), "{lock}");

    let seen = proxy.seen();
    let index: Vec<_> = seen
        .iter()
        .filter(|seen| seen.path.starts_with("/index/"))
        .collect();
    assert_eq!(index.len(), graph.len(), "{seen:?}");
    // Read one after the other, 30 files held 200 ms each take 6 s; the
    // graph is five levels deep, so five rounds of 200 ms is the floor.
    let serial = INDEX_DELAY * u32::try_from(graph.len()).expect("a small graph");
    assert!(
        proxy.max_in_flight() > 1,
        "at most {} request in flight",
        proxy.max_in_flight()
    );
    assert!(
        proxy.max_in_flight() <= 16,
        "the client keeps at most 16 index files in flight, not {}",
        proxy.max_in_flight()
    );
    assert!(
        took < serial / 3,
        "the resolve took {took:?}, against {serial:?} for the files one after the other"
    );
    // Connections are kept alive and reused: fewer connections than
    // requests, and about as many as were ever in flight at once.
    assert!(
        proxy.connections() < seen.len() && proxy.connections() <= 16 + 4,
        "{} connections for {} requests",
        proxy.connections(),
        seen.len()
    );
}

#[test]
fn the_lock_and_the_error_do_not_depend_on_the_order_files_arrive_in() {
    let world = World::new(false);
    let graph = graph();
    world.publish(&graph, "1.0.0");
    world.want(world.registry.url(), "top");
    let direct = world.resolve();

    // Two broken index files, deep in the graph and far apart, and two
    // proxies that each hold one of them back 400 ms (and the other files
    // for times in opposite orders): through one the error in `l3-1`
    // arrives first, through the other the one in `l4-6`.
    let (first, second) = (index_path("l3-1"), index_path("l4-6"));
    let jitter = |path: &str| {
        let digest = sha2::Sha256::digest(path.as_bytes());
        u64::from(digest[0] % 5)
    };
    let held = |late: String, reverse: bool| {
        move |path: &str| {
            if path.trim_start_matches('/') == late {
                Duration::from_millis(400)
            } else if reverse {
                Duration::from_millis(20 * (4 - jitter(path)))
            } else {
                Duration::from_millis(20 * jitter(path))
            }
        }
    };
    let first_late = Proxy::start(world.registry.url(), held(first.clone(), false));
    let second_late = Proxy::start(world.registry.url(), held(second.clone(), true));
    let mut locks = Vec::new();
    for proxy in [&first_late, &second_late] {
        world.want(proxy.url(), "top");
        locks.push(world.resolve());
    }
    assert_eq!(locks[0], direct);
    assert_eq!(locks[1], direct);

    for path in [&first, &second] {
        fs_err::write(
            world.registry.public().join(path),
            "{\"name\": this is not an index line\n",
        )
        .expect("break an index file");
    }
    let mut errors = Vec::new();
    // The third run, through a proxy whose files are cached by now, has
    // the two broken files sent whole and the rest answered 304.
    for proxy in [&first_late, &second_late, &first_late] {
        world.want(proxy.url(), "top");
        let failed = world.user(&["lock"]);
        assert_eq!(failed.code, 3, "{failed:?}");
        errors.push(
            failed
                .stderr
                .replace(first_late.url(), "[PROXY]")
                .replace(second_late.url(), "[PROXY]"),
        );
    }
    assert_eq!(errors[0], errors[1]);
    assert_eq!(errors[0], errors[2]);
    // The one the walk from skills.toml meets first.
    assert!(
        errors[0].contains(&first) && !errors[0].contains(&second),
        "{}",
        errors[0]
    );
    assert!(!world.project().join("skills.lock").exists());
}

#[test]
fn a_warm_resolve_revalidates_with_if_none_match_and_still_sees_a_new_version() {
    let world = World::new(false);
    let graph = graph();
    world.publish(&graph, "1.0.0");
    world.want(world.registry.url(), "top");
    let cold = world.resolve();

    let before = world.log_lines();
    let warm = world.resolve();
    assert_eq!(warm, cold);
    let requests = world.index_requests(before, graph.len());
    assert_eq!(requests.len(), graph.len(), "{requests:?}");
    assert!(
        requests.iter().all(|(_, status)| *status == 304),
        "every file revalidated, none sent again: {requests:?}"
    );

    // A new version of a leaf: its file changed, and only it is sent.
    world.publish(&[("l4-5".to_owned(), Vec::new())], "1.1.0");
    let before = world.log_lines();
    let newer = locked(&world.resolve());
    assert_eq!(newer["l4-5"].0, "1.1.0");
    let requests = world.index_requests(before, graph.len());
    let sent: Vec<&str> = requests
        .iter()
        .filter(|(_, status)| *status == 200)
        .map(|(path, _)| path.as_str())
        .collect();
    assert_eq!(sent, [index_path("l4-5")], "{requests:?}");
    assert_eq!(
        requests.iter().filter(|(_, status)| *status == 304).count(),
        graph.len() - 1
    );

    // The cache holds one file per skill, the newest.
    let entry =
        fs_err::read(world.cache_entry(world.registry.url(), "l4-5")).expect("a cache entry");
    let served = fs_err::read(world.registry.public().join(index_path("l4-5"))).unwrap();
    assert!(entry.ends_with(&served), "the entry holds the new file");
}

#[test]
fn a_damaged_cache_entry_is_ignored_and_the_file_read_again() {
    let world = World::new(false);
    let graph = graph();
    world.publish(&graph, "1.0.0");
    world.want(world.registry.url(), "top");
    let cold = world.resolve();

    let flipped = world.cache_entry(world.registry.url(), "l3-2");
    let mut bytes = fs_err::read(&flipped).unwrap();
    let last = bytes.len() - 2;
    bytes[last] ^= 0x20;
    fs_err::write(&flipped, bytes).unwrap();
    let garbage = world.cache_entry(world.registry.url(), "l1-4");
    fs_err::write(&garbage, b"\x00\xffnot an entry at all").unwrap();

    let before = world.log_lines();
    assert_eq!(world.resolve(), cold);
    let requests = world.index_requests(before, graph.len());
    let mut sent: Vec<&str> = requests
        .iter()
        .filter(|(_, status)| *status == 200)
        .map(|(path, _)| path.as_str())
        .collect();
    sent.sort_unstable();
    assert_eq!(
        sent,
        [index_path("l1-4"), index_path("l3-2")],
        "{requests:?}"
    );
    assert_eq!(requests.len(), graph.len(), "{requests:?}");

    // Both were written again whole: the next resolve revalidates them.
    let before = world.log_lines();
    assert_eq!(world.resolve(), cold);
    let requests = world.index_requests(before, graph.len());
    assert!(
        requests.iter().all(|(_, status)| *status == 304),
        "{requests:?}"
    );
}

/// Replaces the body of the cache entry `entry` with `body`, fixing its
/// sha256 so that it reads as whole: what someone who can write the
/// user's cache folder could do.
fn rewrite_entry(entry: &Path, body: &[u8]) {
    let bytes = fs_err::read(entry).expect("a cache entry");
    let text = String::from_utf8(bytes).expect("an entry of text");
    let mut lines = text.splitn(3, '\n');
    let magic = lines.next().expect("the magic line");
    let mut header: serde_json::Value =
        serde_json::from_str(lines.next().expect("the header")).expect("a JSON header");
    header["sha256"] = hex(&sha2::Sha256::digest(body)).into();
    let mut rewritten = format!("{magic}\n{header}\n").into_bytes();
    rewritten.extend_from_slice(body);
    fs_err::write(entry, rewritten).expect("rewrite the entry");
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// With signed metadata, a cached copy is held to the snapshot like a fresh
/// file: one changed on disk (its sha256 fixed up), or kept by a cache in
/// between that answers 304 for a file that changed, is read again; a file
/// kept old whatever the client asks is refused as the snapshot mismatch it
/// is.
#[test]
fn with_signed_metadata_a_stale_or_changed_copy_never_passes_the_snapshot() {
    let world = World::new(true);
    let chain = [
        ("app".to_owned(), vec!["lib".to_owned()]),
        ("lib".to_owned(), vec!["leaf".to_owned()]),
        ("leaf".to_owned(), Vec::new()),
    ];
    world.publish(
        &[chain[2].clone(), chain[1].clone(), chain[0].clone()],
        "1.0.0",
    );
    let served_leaf = fs_err::read(world.registry.public().join(index_path("leaf"))).unwrap();

    // The timestamp and the snapshot are read once for the three files.
    world.want(world.registry.url(), "app");
    let before = world.log_lines();
    world.resolve();
    let _ = world.index_requests(before, 3);
    let metadata: Vec<(String, u16)> = world
        .requests(before)
        .into_iter()
        .filter(|(path, _)| path.ends_with(".json"))
        .collect();
    let count = |file: &str| metadata.iter().filter(|(path, _)| path == file).count();
    assert_eq!(
        (count("timestamp.json"), count("snapshot.json")),
        (1, 1),
        "{metadata:?}"
    );

    // Changed on disk: the copy of `leaf` lists a version that does not
    // exist, and reads as whole. The server says 304; the copy fails the
    // snapshot, so the client reads the file again.
    let forged = String::from_utf8(served_leaf.clone())
        .unwrap()
        .replace("\"1.0.0\"", "\"9.9.9\"");
    rewrite_entry(
        &world.cache_entry(world.registry.url(), "leaf"),
        forged.as_bytes(),
    );
    let before = world.log_lines();
    let lock = locked(&world.resolve());
    assert_eq!(lock["leaf"].0, "1.0.0");
    let requests = world.index_requests(before, 4);
    let leaf: Vec<u16> = requests
        .iter()
        .filter(|(path, _)| *path == index_path("leaf"))
        .map(|(_, status)| *status)
        .collect();
    assert_eq!(leaf, [304, 200], "{requests:?}");

    // A cache in between that answers 304 to every conditional request
    // (a freeze, or a broken CDN), after a new version of `leaf`.
    let proxy = Proxy::start(world.registry.url(), |_| Duration::ZERO);
    world.want(proxy.url(), "app");
    world.resolve();
    world.publish(&[chain[2].clone()], "1.1.0");
    proxy.lie_not_modified(true);
    proxy.reset();
    let lock = locked(&world.resolve());
    assert_eq!(lock["leaf"].0, "1.1.0", "the new version is seen");
    let leaf: Vec<(Option<String>, u16)> = proxy
        .seen()
        .into_iter()
        .filter(|seen| seen.path == format!("/{}", index_path("leaf")))
        .map(|seen| (seen.if_none_match, seen.status))
        .collect();
    assert!(
        matches!(&leaf[..], [(Some(_), 304), (None, 200)]),
        "asked with the ETag, told 304, then asked without: {leaf:?}"
    );

    // And one that serves the old file whatever it is asked, to a client
    // with no copy of the new one: the resolve fails, naming the file and
    // the snapshot, and writes no lock.
    proxy.lie_not_modified(false);
    proxy.freeze(&format!("/{}", index_path("leaf")), served_leaf);
    fs_err::remove_dir_all(world.cache().join("index")).unwrap();
    world.want(proxy.url(), "app");
    let frozen = world.user(&["lock"]);
    assert_eq!(frozen.code, 3, "{frozen:?}");
    assert!(
        frozen
            .stderr
            .contains("index/le/af/leaf differs from the registry's signed snapshot"),
        "{}",
        frozen.stderr
    );
    assert!(!world.project().join("skills.lock").exists());
}

/// nginx, as a static host serves a registry: its own ETags (modification
/// time and size) and 304s work the same, seen through the proxy.
#[test]
fn through_nginx_a_warm_resolve_gets_304s_and_a_new_version_is_seen() {
    let world = World::new(false);
    let graph = graph();
    world.publish(&graph, "1.0.0");
    let nginx = Nginx::serve(&world.registry.public());
    let proxy = Proxy::start(nginx.url(), |_| Duration::ZERO);
    world.want(proxy.url(), "top");
    let index_statuses = || -> Vec<(bool, u16)> {
        proxy
            .seen()
            .into_iter()
            .filter(|seen| seen.path.starts_with("/index/"))
            .map(|seen| (seen.if_none_match.is_some(), seen.status))
            .collect()
    };
    let cold = world.resolve();
    assert_eq!(index_statuses(), vec![(false, 200); graph.len()]);

    proxy.reset();
    assert_eq!(world.resolve(), cold);
    assert_eq!(index_statuses(), vec![(true, 304); graph.len()]);

    proxy.reset();
    world.publish(&[("l3-7".to_owned(), vec!["l4-7".to_owned()])], "2.0.0");
    assert_eq!(locked(&world.resolve())["l3-7"].0, "2.0.0");
    let statuses = index_statuses();
    assert_eq!(
        statuses.iter().filter(|seen| **seen == (true, 200)).count(),
        1,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|seen| **seen == (true, 304)).count(),
        graph.len() - 1,
        "{statuses:?}"
    );
}
