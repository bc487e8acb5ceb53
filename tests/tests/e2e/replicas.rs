//! Several `skillpkg-registry serve` processes sharing one bucket (Garage)
//! and one PostgreSQL take publishes at once with the guarantees of one:
//! every name@version is published exactly once, and no index line is
//! lost, whatever the order their writes land in. And the faults, through
//! real sockets (a TCP proxy between the servers and the bucket): a store
//! that fails mid-publish, a server killed holding a claim, PostgreSQL
//! restarted between a claim and its commit.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use skillpkg_tests::tcp_proxy::is_request;
use skillpkg_tests::{Fault, Garage, Postgres, RegistryServer, TcpProxy, binary, publish_raw, run};

/// Servers of one registry: data folders of their own, one bucket and one
/// database between them (as `SKILLPKG_REGISTRY_STORAGE` and
/// `SKILLPKG_REGISTRY_DATABASE`), and alice's token. They reach the bucket
/// through a proxy that applies a rule to their requests.
struct Replicas {
    servers: Vec<RegistryServer>,
    token: String,
    proxy: TcpProxy,
    env: Vec<(String, String)>,
    flags: Vec<String>,
    bucket: String,
    roots: Vec<tempfile::TempDir>,
}

impl Replicas {
    /// Two servers on the shared PostgreSQL, with no flags.
    fn start(rule: impl Fn(&[u8]) -> Fault + Send + Sync + 'static) -> Self {
        Self::start_with(2, Postgres::shared().fresh_database(), &[], rule)
    }

    /// `count` servers on `database` with `flags`.
    fn start_with(
        count: usize,
        database: String,
        flags: &[&str],
        rule: impl Fn(&[u8]) -> Fault + Send + Sync + 'static,
    ) -> Self {
        Self::start_full(count, database, flags, false, rule)
    }

    /// `count` servers on `database` with `flags`, with signed metadata
    /// when `signed`.
    fn start_full(
        count: usize,
        database: String,
        flags: &[&str],
        signed: bool,
        rule: impl Fn(&[u8]) -> Fault + Send + Sync + 'static,
    ) -> Self {
        let garage = Garage::shared();
        let bucket = garage.fresh_bucket();
        let s3 = garage
            .s3_endpoint()
            .trim_start_matches("http://")
            .parse()
            .unwrap();
        let proxy = TcpProxy::start(s3, rule);
        let mut env = garage.s3_env();
        for (key, value) in &mut env {
            if key == "AWS_ENDPOINT_URL" {
                *value = proxy.url();
            }
        }
        env.push(("SKILLPKG_REGISTRY_STORAGE".into(), format!("s3://{bucket}")));
        env.push(("SKILLPKG_REGISTRY_DATABASE".into(), database));
        let roots: Vec<_> = (0..count).map(|_| tempfile::tempdir().unwrap()).collect();
        let created = run(std::process::Command::new(binary("skillpkg-registry"))
            .args(["token", "create", "--user", "alice", "--root"])
            .arg(roots[0].path())
            .envs(env.iter().map(|(key, value)| (key, value))));
        assert_eq!(created.code, 0, "{created:?}");
        if signed {
            // One registry, one index key: `keys init` on the first data
            // folder writes the roots to the bucket; every server signs
            // with the same key, one at a time.
            let root_key = roots[0].path().join("root.key");
            let generated = run(std::process::Command::new(binary("skillpkg-registry"))
                .args(["keys", "generate"])
                .arg(&root_key));
            assert_eq!(generated.code, 0, "{generated:?}");
            let init = run(std::process::Command::new(binary("skillpkg-registry"))
                .args(["keys", "init", "--root"])
                .arg(roots[0].path())
                .arg("--root-key")
                .arg(&root_key)
                .envs(env.iter().map(|(key, value)| (key, value))));
            assert_eq!(init.code, 0, "{init:?}");
            let index_key = roots[0].path().join("state/index.key");
            for root in &roots[1..] {
                fs_err::create_dir_all(root.path().join("state")).unwrap();
                fs_err::copy(&index_key, root.path().join("state/index.key")).unwrap();
            }
        }
        let flags: Vec<String> = flags.iter().map(|&flag| flag.to_owned()).collect();
        let mut replicas = Self {
            servers: Vec::new(),
            token: created.stdout.trim().to_owned(),
            proxy,
            env,
            flags,
            bucket,
            roots,
        };
        replicas.servers = (0..count).map(|i| replicas.start_server(i)).collect();
        replicas
    }

    /// Starts server `i` on its data folder.
    fn start_server(&self, i: usize) -> RegistryServer {
        let flags: Vec<&str> = self.flags.iter().map(String::as_str).collect();
        RegistryServer::start_with_env(self.roots[i].path(), &flags, &self.env)
    }

    /// Publishes `name@version` on server `i`: the status and the body.
    fn publish(&self, i: usize, name: &str, version: &str) -> (u16, String) {
        publish_raw(&self.servers[i], &self.token, name, version)
    }

    /// `GET path` of the tree through a replica (which reads the bucket).
    fn get(&self, replica: usize, path: &str) -> String {
        let response =
            reqwest::blocking::get(format!("{}/{path}", self.servers[replica].url())).unwrap();
        assert_eq!(response.status(), 200, "{path}");
        response.text().unwrap()
    }

    /// The paths of the objects in the bucket below `prefix`, read
    /// directly (not through the proxy).
    fn objects(&self, prefix: &str) -> Vec<String> {
        let garage = Garage::shared();
        let store = crate::storage::on_garage(garage, &self.bucket, "", garage.secret_access_key());
        tokio::runtime::Runtime::new()
            .unwrap()
            .block_on(store.list(prefix))
            .unwrap()
            .into_iter()
            .map(|meta| meta.path)
            .collect()
    }

    /// The versions in `name`'s index file, as server `i` serves it.
    fn versions(&self, i: usize, name: &str) -> Vec<String> {
        let path = skillpkg_index::registry::index_file_path(&name.parse().unwrap());
        let mut versions: Vec<String> = self
            .get(i, &path)
            .lines()
            .map(|line| {
                serde_json::from_str::<serde_json::Value>(line).unwrap()["vers"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .collect();
        versions.sort();
        versions
    }
}

/// Returns true if and only if `piece` starts a `PUT` of an archive.
fn puts_archive(piece: &[u8]) -> bool {
    is_request(piece, "PUT", "/dl/")
        && String::from_utf8_lossy(piece)
            .lines()
            .next()
            .is_some_and(|line| {
                line.split(' ')
                    .nth(1)
                    .is_some_and(|path| path.ends_with(".tgz"))
            })
}

/// A delay of 0 to 300 ms, different each call: writes that land in
/// another order than they were made in.
fn jitter() -> Duration {
    static STATE: AtomicU64 = AtomicU64::new(0x9e37_79b9_7f4a_7c15);
    let mut x = STATE.fetch_add(0x9e37_79b9_7f4a_7c15, Ordering::Relaxed);
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    Duration::from_millis(x % 300)
}

#[test]
fn two_replicas_publish_each_version_once_and_lose_no_index_line() {
    // Every index file's write held back a random while: a write of an
    // older revision often lands after a newer one.
    let replicas = Replicas::start(|piece| {
        if is_request(piece, "PUT", "/index/") {
            Fault::Delay(jitter())
        } else {
            Fault::Pass
        }
    });
    // All at once, alternating between the replicas: 40 new names, 10
    // publishes of one name@version, and 20 versions of one name (whose
    // index file every one of them rewrites).
    let mut jobs: Vec<(String, String)> = Vec::new();
    jobs.extend((0..40).map(|i| (format!("distinct-{i}"), "1.0.0".to_owned())));
    jobs.extend((0..10).map(|_| ("same".to_owned(), "1.0.0".to_owned())));
    jobs.extend((0..20).map(|i| ("many".to_owned(), format!("1.{i}.0"))));
    let start = std::sync::Barrier::new(jobs.len());
    let outcomes: Vec<(String, String, u16, String)> = std::thread::scope(|scope| {
        let handles: Vec<_> = jobs
            .iter()
            .enumerate()
            .map(|(i, (name, version))| {
                let (replicas, start) = (&replicas, &start);
                scope.spawn(move || {
                    start.wait();
                    let (status, body) = replicas.publish(i % 2, name, version);
                    (name.clone(), version.clone(), status, body)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let status_of = |wanted: &str| -> Vec<u16> {
        outcomes
            .iter()
            .filter(|(name, ..)| name.starts_with(wanted))
            .map(|(_, _, status, _)| *status)
            .collect()
    };
    assert!(
        status_of("distinct-").iter().all(|status| *status == 201),
        "every distinct name lands: {outcomes:?}"
    );
    let same = status_of("same");
    assert_eq!(
        same.iter().filter(|status| **status == 201).count(),
        1,
        "exactly one of ten: {same:?}"
    );
    for (name, _, status, body) in &outcomes {
        if name == "same" && *status != 201 {
            assert_eq!(*status, 409, "{body}");
            assert!(
                body.contains("already published") || body.contains("being published"),
                "{body}"
            );
        }
    }
    assert!(
        status_of("many").iter().all(|status| *status == 201),
        "{outcomes:?}"
    );

    // Every line is in the bucket, whichever replica is asked.
    for replica in 0..2 {
        let versions = replicas.versions(replica, "many");
        let mut expected: Vec<String> = (0..20).map(|i| format!("1.{i}.0")).collect();
        expected.sort();
        assert_eq!(versions, expected, "no line of `many` is lost");
        assert_eq!(replicas.get(replica, "index/sa/me/same").lines().count(), 1);
        for i in 0..40 {
            let name = format!("distinct-{i}");
            let index = replicas.get(
                replica,
                &skillpkg_index::registry::index_file_path(&name.parse().unwrap()),
            );
            assert_eq!(index.lines().count(), 1, "{name}");
        }
        // The aggregates were written last at the newest revision.
        let search = skillpkg_tests::search_entries(|path| replicas.get(replica, path));
        let skills: BTreeMap<String, serde_json::Value> = search
            .iter()
            .map(|skill| (skill["name"].as_str().unwrap().to_owned(), skill.clone()))
            .collect();
        assert_eq!(skills.len(), 42, "{search:?}");
    }
    assert!(
        replicas.proxy.faults() >= 61,
        "every index write was delayed: {}",
        replicas.proxy.faults()
    );
}

#[test]
fn a_store_failing_mid_publish_leaves_nothing_and_the_retry_lands() {
    // The bucket answers 500 to every write of an archive while `failing`.
    let failing = Arc::new(AtomicBool::new(true));
    let replicas = {
        let failing = Arc::clone(&failing);
        Replicas::start_with(1, Postgres::shared().fresh_database(), &[], move |piece| {
            if failing.load(Ordering::SeqCst) && puts_archive(piece) {
                Fault::Answer(500)
            } else {
                Fault::Pass
            }
        })
    };
    let (status, body) = replicas.publish(0, "pdf", "1.0.0");
    assert_eq!(status, 500, "{body}");
    assert!(body.contains("internal"), "{body}");
    assert!(!body.contains("s3://"), "no bucket in the answer: {body}");
    assert!(
        replicas.proxy.faults() >= 2,
        "the store's 500 was retried: {}",
        replicas.proxy.faults()
    );
    assert_eq!(replicas.objects("dl"), Vec::<String>::new(), "nothing left");
    assert_eq!(replicas.objects("index"), Vec::<String>::new());
    let log = replicas.servers[0].log();
    assert!(
        log.contains("dl/pdf/1.0.0/pdf-1.0.0.tgz") && log.contains("500"),
        "the log names the object and the store's answer:\n{log}"
    );

    // The store is back: the same publish lands at once (the claim was
    // given up).
    failing.store(false, Ordering::SeqCst);
    let (status, body) = replicas.publish(0, "pdf", "1.0.0");
    assert_eq!(status, 201, "{body}");
    assert_eq!(replicas.versions(0, "pdf"), ["1.0.0"]);
}

#[test]
fn a_server_killed_holding_a_claim_keeps_others_off_until_it_expires() {
    // Archive writes are held back while `holding`: long enough to kill
    // the server in the middle of one, and shorter than the claim's life
    // (what reached the network before the kill lands before another
    // publish may take the version over).
    let holding = Arc::new(AtomicBool::new(true));
    let mut replicas = {
        let holding = Arc::clone(&holding);
        Replicas::start_with(
            2,
            Postgres::shared().fresh_database(),
            &["--claim-lifetime", "3s"],
            move |piece| {
                if holding.load(Ordering::SeqCst) && puts_archive(piece) {
                    Fault::Delay(Duration::from_secs(2))
                } else {
                    Fault::Pass
                }
            },
        )
    };
    let (status, body) = std::thread::scope(|scope| {
        let replicas = &replicas;
        let publish = scope.spawn(move || replicas.publish(0, "held", "1.0.0"));
        // The claim is made, the archive on its way: the server dies.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while replicas.proxy.faults() == 0 {
            assert!(std::time::Instant::now() < deadline, "no archive write");
            std::thread::sleep(Duration::from_millis(20));
        }
        // Killed from here, while the other thread waits on its answer.
        let pid = replicas.servers[0].pid();
        let killed = std::process::Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        publish.join().unwrap()
    });
    assert_eq!(status, 0, "the killed server never answered: {body}");
    holding.store(false, Ordering::SeqCst);
    replicas.servers[0].kill();

    // The other server: the version is someone's, for the claim's life.
    let (status, body) = replicas.publish(1, "held", "1.0.0");
    assert_eq!(status, 409, "{body}");
    assert!(body.contains("being published"), "{body}");
    std::thread::sleep(Duration::from_millis(3200));
    let (status, body) = replicas.publish(1, "held", "1.0.0");
    assert_eq!(status, 201, "the expired claim is taken over: {body}");
    assert_eq!(replicas.versions(1, "held"), ["1.0.0"]);

    // A server started again finds nothing to recover, and serves it.
    replicas.servers[0] = replicas.start_server(0);
    assert_eq!(replicas.versions(0, "held"), ["1.0.0"]);
    assert!(
        !replicas.servers[0].log().contains("recovered"),
        "{}",
        replicas.servers[0].log()
    );
}

#[test]
fn a_publish_rides_out_a_postgres_restart_while_its_archive_is_written() {
    let mut postgres = Postgres::start();
    let database = postgres.fresh_database();
    let holding = Arc::new(AtomicBool::new(true));
    let replicas = {
        let holding = Arc::clone(&holding);
        Replicas::start_with(1, database, &[], move |piece| {
            if holding.load(Ordering::SeqCst) && puts_archive(piece) {
                // Longer than PostgreSQL takes to restart.
                Fault::Delay(Duration::from_secs(6))
            } else {
                Fault::Pass
            }
        })
    };
    let (status, body) = std::thread::scope(|scope| {
        let replicas = &replicas;
        let publish = scope.spawn(move || replicas.publish(0, "pdf", "1.0.0"));
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while replicas.proxy.faults() == 0 {
            assert!(std::time::Instant::now() < deadline, "no archive write");
            std::thread::sleep(Duration::from_millis(20));
        }
        // Between the claim and the commit, every connection of the
        // server's pool dies.
        postgres.restart();
        publish.join().unwrap()
    });
    holding.store(false, Ordering::SeqCst);
    assert_eq!(status, 201, "{body}\n{}", replicas.servers[0].log());
    assert_eq!(replicas.versions(0, "pdf"), ["1.0.0"]);
    let (status, body) = replicas.publish(0, "pdf", "1.1.0");
    assert_eq!(status, 201, "{body}");
    assert_eq!(replicas.versions(0, "pdf"), ["1.0.0", "1.1.0"]);
}

#[test]
fn servers_sharing_a_database_share_their_download_counts() {
    let replicas = Replicas::start(|_| Fault::Pass);
    assert_eq!(replicas.publish(0, "pdf", "1.0.0").0, 201);
    let archive = format!("{}/dl/pdf/1.0.0/pdf-1.0.0.tgz", replicas.servers[0].url());
    for _ in 0..3 {
        let answer = reqwest::blocking::get(&archive).unwrap();
        assert_eq!(answer.status(), 200);
        answer.bytes().unwrap();
    }
    // A change on the first server adds its counts to the database; one on
    // the second reads everyone's into the search shard it writes.
    assert_eq!(replicas.publish(0, "csv", "1.0.0").0, 201);
    assert_eq!(replicas.publish(1, "xlsx", "1.0.0").0, 201);
    let search = skillpkg_tests::search_entries(|path| replicas.get(1, path));
    let pdf = search.iter().find(|entry| entry["name"] == "pdf").cloned();
    assert_eq!(
        pdf.map(|entry| entry["downloads"].clone()),
        Some(3.into()),
        "{search:?}"
    );
}

/// Publishes `name@version` to server `i` signed by `key`, sending the
/// public key (a first signed publish registers it).
fn publish_signed(
    replicas: &Replicas,
    i: usize,
    name: &str,
    version: &str,
    key: &skillpkg_index::signing::SecretKey,
) -> (u16, String) {
    use reqwest::blocking::multipart::{Form, Part};
    use skillpkg_index::signing::{Signature, TrustedComment};
    let tarball = skillpkg_tests::tarball(name, version);
    let comment = TrustedComment {
        name: name.parse().unwrap(),
        version: version.parse().unwrap(),
        sha256: skillpkg_index::checksum::Checksum::of(&tarball),
    }
    .to_string();
    let signature = Signature::sign(key, &tarball, &comment).to_file();
    let form = Form::new()
        .text("name", name.to_owned())
        .text("version", version.to_owned())
        .part("tarball", Part::bytes(tarball).file_name("x.tgz"))
        .part(
            "signature",
            Part::bytes(signature.into_bytes()).file_name("x.minisig"),
        )
        .text("key", key.public().to_base64());
    let answer = reqwest::blocking::Client::new()
        .put(format!("{}/api/v1/skills", replicas.servers[i].url()))
        .bearer_auth(&replicas.token)
        .multipart(form)
        .send()
        .unwrap();
    (answer.status().as_u16(), answer.text().unwrap())
}

#[test]
fn of_first_signed_publishes_on_two_servers_one_key_wins() {
    let replicas = Replicas::start(|_| Fault::Pass);
    let keys: Vec<skillpkg_index::signing::SecretKey> = (0..8)
        .map(|_| skillpkg_index::signing::SecretKey::generate().unwrap())
        .collect();
    let start = std::sync::Barrier::new(keys.len());
    let answers: Vec<(u16, String)> = std::thread::scope(|scope| {
        let handles: Vec<_> = keys
            .iter()
            .enumerate()
            .map(|(minor, key)| {
                let (replicas, start) = (&replicas, &start);
                scope.spawn(move || {
                    start.wait();
                    publish_signed(replicas, minor % 2, "pdf", &format!("1.{minor}.0"), key)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let keys_file: serde_json::Value =
        serde_json::from_str(&replicas.get(0, "keys/pdf.json")).unwrap();
    let registered: Vec<&str> = keys_file["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|key| key["id"].as_str().unwrap())
        .collect();
    assert_eq!(registered.len(), 1, "one key wins: {keys_file} {answers:?}");
    let mut published = 0;
    for (status, body) in &answers {
        match status {
            201 => {
                published += 1;
                let line: serde_json::Value = serde_json::from_str(body).unwrap();
                assert_eq!(line["signer"], registered[0], "{body}");
            }
            403 => assert!(body.contains("not registered for `pdf`"), "{body}"),
            _ => panic!("{status}: {body}"),
        }
    }
    assert!(published >= 1, "{answers:?}");
    assert_eq!(replicas.versions(1, "pdf").len(), published);
}

/// Signed metadata with several servers: one signs at a time (the lease
/// in the database), and the snapshot, a tree of nodes and bins, ends up
/// covering every publish of either server, which a mirror checks file by
/// file.
#[test]
fn two_servers_sign_one_snapshot_that_covers_every_publish() {
    // Index writes and snapshot writes held back at random, so publishes
    // land while another server holds the lease and signs.
    let replicas =
        Replicas::start_full(2, Postgres::shared().fresh_database(), &[], true, |piece| {
            if is_request(piece, "PUT", "/index/") || is_request(piece, "PUT", "/snapshot.json") {
                Fault::Delay(jitter())
            } else {
                Fault::Pass
            }
        });
    let names: Vec<String> = (0..16).map(|i| format!("signed-{i}")).collect();
    let start = std::sync::Barrier::new(names.len());
    std::thread::scope(|scope| {
        for (i, name) in names.iter().enumerate() {
            let (replicas, start) = (&replicas, &start);
            scope.spawn(move || {
                start.wait();
                let (status, body) = replicas.publish(i % 2, name, "1.0.0");
                assert_eq!(status, 201, "{name}: {body}");
            });
        }
    });
    // The last signing may still run when the last publish answers (its
    // server left its change to the lease's holder): the snapshot covers
    // everything once `timestamp.json` stops changing and a mirror, which
    // checks every index file against it, passes.
    let snapshot: serde_json::Value =
        serde_json::from_str(&replicas.get(0, "snapshot.json")).unwrap();
    assert!(
        snapshot["signed"]["nodes"].is_object() && snapshot["signed"]["files"].is_null(),
        "a tree of nodes (version 2): {snapshot}"
    );
    let sandbox = skillpkg_tests::TestContext::new();
    let dest = sandbox.path().join("mirror");
    let mirrored = skillpkg_tests::wait_until(Duration::from_secs(20), || {
        let output = run(sandbox
            .skillpkg_command()
            .args(["mirror", replicas.servers[1].url()])
            .arg(&dest)
            .args(["--all", "--json"]));
        output.code == 0 && output.json()["skills"] == names.len()
    });
    assert!(
        mirrored,
        "a mirror of every publish passes the snapshot's checks"
    );
    for name in &names {
        let path = skillpkg_index::registry::index_file_path(&name.parse().unwrap());
        assert!(dest.join(&path).is_file(), "{path}");
    }
    assert!(
        !replicas.objects("meta").is_empty(),
        "the nodes and bins are in the bucket"
    );
}
