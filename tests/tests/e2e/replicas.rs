//! Several `skillpkg-registry serve` processes sharing one bucket (Garage)
//! and one PostgreSQL take publishes at once with the guarantees of one:
//! every name@version is published exactly once, and no index line is
//! lost, whatever the order their writes land in.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use skillpkg_tests::tcp_proxy::is_request;
use skillpkg_tests::{Fault, Garage, Postgres, RegistryServer, TcpProxy, binary, publish_raw, run};

/// Two replicas of one registry: data folders of their own, one bucket and
/// one database between them (as `SKILLPKG_REGISTRY_STORAGE` and
/// `SKILLPKG_REGISTRY_DATABASE`), and alice's token. They reach the bucket
/// through a proxy that applies `rule` to their requests.
struct Replicas {
    servers: Vec<RegistryServer>,
    token: String,
    proxy: TcpProxy,
    _roots: Vec<tempfile::TempDir>,
}

impl Replicas {
    fn start(rule: impl Fn(&[u8]) -> Fault + Send + Sync + 'static) -> Self {
        let garage = Garage::shared();
        let bucket = garage.fresh_bucket();
        let database = Postgres::shared().fresh_database();
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
        let roots = vec![tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
        let created = run(std::process::Command::new(binary("skillpkg-registry"))
            .args(["token", "create", "--user", "alice", "--root"])
            .arg(roots[0].path())
            .envs(env.iter().map(|(key, value)| (key, value))));
        assert_eq!(created.code, 0, "{created:?}");
        let servers = roots
            .iter()
            .map(|root| RegistryServer::start_with_env(root.path(), &[], &env))
            .collect();
        Self {
            servers,
            token: created.stdout.trim().to_owned(),
            proxy,
            _roots: roots,
        }
    }

    /// `GET path` of the tree through a replica (which reads the bucket).
    fn get(&self, replica: usize, path: &str) -> String {
        let response =
            reqwest::blocking::get(format!("{}/{path}", self.servers[replica].url())).unwrap();
        assert_eq!(response.status(), 200, "{path}");
        response.text().unwrap()
    }
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
                    let server = &replicas.servers[i % 2];
                    let (status, body) = publish_raw(server, &replicas.token, name, version);
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
        let many = replicas.get(replica, "index/ma/ny/many");
        let mut versions: Vec<String> = many
            .lines()
            .map(|line| {
                serde_json::from_str::<serde_json::Value>(line).unwrap()["vers"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .collect();
        versions.sort();
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
        let search: serde_json::Value =
            serde_json::from_str(&replicas.get(replica, "search.json")).unwrap();
        let skills: BTreeMap<String, serde_json::Value> = search["skills"]
            .as_array()
            .unwrap()
            .iter()
            .map(|skill| (skill["name"].as_str().unwrap().to_owned(), skill.clone()))
            .collect();
        assert_eq!(skills.len(), 42, "{search}");
    }
    assert!(
        replicas.proxy.faults() >= 61,
        "every index write was delayed: {}",
        replicas.proxy.faults()
    );
}
