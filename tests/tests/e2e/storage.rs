//! The registry's storage on a real S3-compatible server (Garage): objects
//! written whole, listed under a prefix, served as they are by the bucket's
//! own web endpoint, and a store that refuses or is down fails fast with
//! the bucket and the path named.

use std::time::{Duration, Instant};

use bytes::Bytes;
use skillpkg_registry::storage::{Storage, StorageError};
use skillpkg_tests::{Garage, RegistryServer, Skill, TestContext, TestRegistry};

/// The storage `s3://BUCKET/PREFIX` on `garage`, with `secret` as the key.
pub(crate) fn on_garage(garage: &Garage, bucket: &str, prefix: &str, secret: &str) -> Storage {
    let endpoint = garage.s3_endpoint();
    Storage::from_url_with(
        &format!("s3://{bucket}/{prefix}"),
        [
            ("aws_endpoint", endpoint.as_str()),
            ("aws_region", garage.region()),
            ("aws_access_key_id", garage.access_key_id()),
            ("aws_secret_access_key", secret),
            ("aws_allow_http", "true"),
        ],
    )
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bucket_keeps_the_tree_whole_under_its_prefix_and_its_web_endpoint_serves_it() {
    let garage = tokio::task::spawn_blocking(Garage::shared).await.unwrap();
    let bucket = garage.fresh_bucket();
    let storage = on_garage(garage, &bucket, "", garage.secret_access_key());
    assert_eq!(storage.describe(), format!("s3://{bucket}"));
    assert_eq!(storage.get("index/3/p/pdf").await.unwrap(), None);

    let line = Bytes::from_static(b"{\"v\":1}\n");
    storage
        .put("index/3/p/pdf", Bytes::from_static(b"old\n"))
        .await
        .unwrap();
    storage.put("index/3/p/pdf", line.clone()).await.unwrap();
    assert_eq!(
        storage.get("index/3/p/pdf").await.unwrap(),
        Some(line.clone())
    );
    let meta = storage.head("index/3/p/pdf").await.unwrap().unwrap();
    assert_eq!(meta.size, line.len() as u64);
    assert!(meta.etag.is_some(), "a bucket tags its objects");

    // Garage 2.5 ignores `If-None-Match: *` on PUT and overwrites: the
    // registry must never rely on it alone (docs/registry.md).
    let archive = "dl/pdf/1.0.0/pdf-1.0.0.tgz";
    assert!(
        storage
            .put_new(archive, Bytes::from_static(b"first"))
            .await
            .unwrap()
    );
    let second = storage
        .put_new(archive, Bytes::from_static(b"second"))
        .await
        .unwrap();
    let kept = storage.get(archive).await.unwrap().unwrap();
    assert!(
        second && kept == Bytes::from_static(b"second"),
        "Garage now honours conditional writes ({second}, {kept:?}): the registry may rely on them as a second guard"
    );

    let listed: Vec<String> = storage
        .list("")
        .await
        .unwrap()
        .into_iter()
        .map(|meta| meta.path)
        .collect();
    assert_eq!(listed, [archive, "index/3/p/pdf"]);
    assert_eq!(storage.list("dl").await.unwrap().len(), 1);

    // A prefix is a registry of its own in the same bucket.
    let other = on_garage(garage, &bucket, "tenant-b/", garage.secret_access_key());
    assert_eq!(other.list("").await.unwrap(), []);
    other
        .put("index/1/a", Bytes::from_static(b"a\n"))
        .await
        .unwrap();
    assert_eq!(other.list("").await.unwrap().len(), 1);
    assert_eq!(storage.list("index").await.unwrap().len(), 1, "unchanged");

    // The bucket's web endpoint serves the tree as it is, with no
    // credentials: what a client installs from with no server between.
    let served = reqwest::Client::new()
        .get(format!("http://{}/index/3/p/pdf", garage.web_address()))
        .header("Host", garage.web_host_of(&bucket))
        .send()
        .await
        .unwrap();
    assert_eq!(served.status(), 200);
    assert_eq!(served.bytes().await.unwrap(), line);

    storage.delete("index/3/p/pdf").await.unwrap();
    storage.delete("index/3/p/pdf").await.unwrap();
    assert_eq!(storage.head("index/3/p/pdf").await.unwrap(), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bucket_that_refuses_or_is_down_fails_fast_naming_the_bucket_and_path() {
    let garage = tokio::task::spawn_blocking(Garage::shared).await.unwrap();
    let bucket = garage.fresh_bucket();
    let wrong = on_garage(
        garage,
        &bucket,
        "",
        "0000000000000000000000000000000000000000000000000000000000000000",
    );
    let error = wrong
        .put("index/1/a", Bytes::from_static(b"a\n"))
        .await
        .unwrap_err();
    assert!(matches!(error, StorageError::Bucket { .. }), "{error:?}");
    assert_eq!(
        error.to_string(),
        format!("the bucket s3://{bucket} failed on `index/1/a`")
    );

    // Nothing listens on this port: connection refused, retried a few
    // times, then an error, in seconds.
    let port = skillpkg_tests::free_port();
    let down = Storage::from_url_with(
        &format!("s3://{bucket}"),
        [
            ("aws_endpoint", format!("http://127.0.0.1:{port}").as_str()),
            ("aws_region", "garage"),
            ("aws_access_key_id", garage.access_key_id()),
            ("aws_secret_access_key", garage.secret_access_key()),
            ("aws_allow_http", "true"),
        ],
    )
    .unwrap();
    let started = Instant::now();
    let error = down.get("config.json").await.unwrap_err();
    assert!(matches!(error, StorageError::Bucket { .. }), "{error:?}");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "took {:?}",
        started.elapsed()
    );
    // And a path outside the tree never reaches the store.
    assert!(matches!(
        down.get("../secret").await,
        Err(StorageError::BadPath(_))
    ));
}

/// Runs `skillpkg init` and `skillpkg add pdf --registry URL` in a new
/// project of `cx`; returns the installed `SKILL.md` and `skills.lock`.
fn add_pdf_from(cx: &TestContext, registry: &str) -> (String, String) {
    let project = cx.path().join("project");
    let cache = cx.path().join("cache");
    fs_err::create_dir_all(&project).unwrap();
    let init = cx.user_in(&project, &cache, &["init", "--target", "claude"]);
    assert_eq!(init.code, 0, "{init:?}");
    let added = cx.user_in(&project, &cache, &["add", "pdf", "--registry", registry]);
    assert_eq!(added.code, 0, "{added:?}");
    (
        fs_err::read_to_string(project.join(".claude/skills/pdf/SKILL.md")).unwrap(),
        fs_err::read_to_string(project.join("skills.lock")).unwrap(),
    )
}

/// A registry whose tree is in a bucket: `serve --storage s3://...` takes
/// signed publishes into the bucket (nothing into the data folder's
/// `public/`), its own `GET`s read the bucket, a restart on the same bucket
/// keeps every version and clears what an interrupted publish left, and a
/// client installs from the bucket's web endpoint with no server between,
/// checking the signed metadata the server wrote there.
#[test]
fn a_registry_in_a_bucket_takes_publishes_and_its_web_endpoint_serves_installs() {
    let garage = Garage::shared();
    // The kit's bucket is the one the web endpoint serves at `localhost`
    // (any other needs a Host header a client cannot send); a prefix of
    // this test's own keeps it apart from other tests.
    let prefix = "served-registry";
    let storage_url = format!("s3://{}/{prefix}", garage.bucket());
    let mut env = garage.s3_env();
    env.push(("SKILLPKG_REGISTRY_STORAGE".into(), storage_url));
    let cx = TestContext::new();
    let mut registry = TestRegistry::builder(&cx)
        .env(&env)
        .signed_metadata()
        .start();
    registry.publish(&Skill::new("pdf", "1.0.0").body("# PDF\n\nVersion one.\n"));
    registry.publish(&Skill::new("pdf", "1.1.0").body("# PDF\n\nVersion two.\n"));
    registry.publish(&Skill::new("csv", "0.1.0"));
    assert!(
        !registry.public().exists(),
        "nothing is written to the data folder's public/ when the tree is in a bucket"
    );

    let web = format!("{}/{prefix}", garage.web_url());
    let http = reqwest::blocking::Client::new();
    let from_web = |path: &str| {
        let response = http.get(format!("{web}/{path}")).send().unwrap();
        assert_eq!(
            response.status(),
            200,
            "{path} from the bucket's web endpoint"
        );
        response.bytes().unwrap()
    };
    let index = from_web("index/3/p/pdf");
    assert_eq!(String::from_utf8_lossy(&index).lines().count(), 2);
    for path in [
        "config.json",
        "search.json",
        "search/all.json",
        "root.json",
        "snapshot.json",
        "timestamp.json",
        "keys/pdf.json",
        "dl/pdf/1.1.0/pdf-1.1.0.tgz.minisig",
    ] {
        from_web(path);
    }

    // The server reads the same bucket: the same bytes, with the bucket's
    // ETag, and 304 for it.
    let served = http
        .get(format!("{}/index/3/p/pdf", registry.url()))
        .send()
        .unwrap();
    assert_eq!(served.status(), 200);
    let etag = served.headers()["etag"].to_str().unwrap().to_owned();
    assert_eq!(served.bytes().unwrap(), index);
    let again = http
        .get(format!("{}/index/3/p/pdf", registry.url()))
        .header("If-None-Match", &etag)
        .send()
        .unwrap();
    assert_eq!(again.status(), 304);

    // A client installs from the bucket's web endpoint.
    let (installed, _) = add_pdf_from(&cx, &web);
    assert!(installed.contains("Version two."), "{installed}");

    // The plugin marketplace is in the bucket too (written a moment after
    // a publish): git clones a skill's repository from the web endpoint
    // over its dumb protocol, and shallow, as Claude Code does, from the
    // server, which answers git's smart protocol from the bucket.
    assert!(
        skillpkg_tests::wait_until(std::time::Duration::from_secs(10), || {
            http.get(format!("{web}/marketplace.json"))
                .send()
                .and_then(|response| response.text())
                .is_ok_and(|text| text.contains("\"1.1.0\"") && text.contains("\"csv\""))
        }),
        "the bucket's marketplace.json never listed pdf 1.1.0 and csv"
    );
    for (label, base, args) in [
        ("dumb", web.as_str(), ["-c", "protocol.version=0", "clone"]),
        ("smart", registry.url(), ["clone", "--depth", "1"]),
    ] {
        let checkout = cx.path().join(format!("clone-{label}"));
        let cloned = skillpkg_tests::run(
            std::process::Command::new("git")
                .args(args)
                .arg(format!("{base}/plugins/pdf.git"))
                .arg(&checkout),
        );
        assert_eq!(cloned.code, 0, "{label}: {cloned:?}");
        let skill = fs_err::read_to_string(checkout.join("skills/pdf/SKILL.md")).unwrap();
        assert!(skill.contains("Version two."), "{label}: {skill}");
    }

    // A restart on the bucket keeps every version; an object no version
    // of the database lists (a stray upload) is in no index file, and a
    // publish of that version replaces it.
    let rt = tokio::runtime::Runtime::new().unwrap();
    let store = on_garage(garage, garage.bucket(), prefix, garage.secret_access_key());
    let stray = "dl/pdf/9.0.0/pdf-9.0.0.tgz";
    rt.block_on(store.put(stray, Bytes::from_static(b"not an archive")))
        .unwrap();
    registry.server_mut().kill();
    let restarted = RegistryServer::start_with_env(registry.data(), &[], &env);
    assert_eq!(from_web("index/3/p/pdf"), index);
    registry.replace_server(restarted);
    registry.publish(&Skill::new("pdf", "9.0.0"));
    let index = String::from_utf8(from_web("index/3/p/pdf").to_vec()).unwrap();
    assert_eq!(index.lines().count(), 3, "{index}");
    let archive = rt.block_on(store.get(stray)).unwrap().unwrap();
    assert!(
        index.contains(&skillpkg_index::checksum::Checksum::of(&archive).to_string()),
        "the stray object was replaced by the published archive"
    );
    let tree = rt.block_on(store.list("dl")).unwrap();
    assert_eq!(
        tree.len(),
        8,
        "four archives and their signatures: {tree:?}"
    );
}

/// docs/deploy.md's second deployment: one URL, nginx, in front of a
/// bucket (its website endpoint, as a CDN would be) and of the server,
/// which takes the publishes (`/api/`). A publisher and a user who know
/// only that URL publish a signed skill and install it.
#[test]
fn nginx_in_front_of_a_bucket_and_the_server_is_one_registry() {
    let garage = Garage::shared();
    let bucket = garage.fresh_bucket();
    let front_port = skillpkg_tests::free_port();
    let front_url = format!("http://127.0.0.1:{front_port}");
    let mut env = garage.s3_env();
    env.push(("SKILLPKG_REGISTRY_STORAGE".into(), format!("s3://{bucket}")));
    let cx = TestContext::new();
    let registry = TestRegistry::builder(&cx)
        .env(&env)
        .flags(&["--public-url", &front_url, "--require-signatures"])
        .start();
    let front = skillpkg_tests::Nginx::front(
        front_port,
        registry.server().address(),
        &garage.web_address().to_string(),
        &garage.web_host_of(&bucket),
    );
    assert_eq!(front.url(), front_url);

    let config: serde_json::Value = reqwest::blocking::get(format!("{front_url}/config.json"))
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(config["api"], format!("{front_url}/api/v1"));

    let dir = cx.path().join("skills/pdf");
    Skill::new("pdf", "1.0.0")
        .body("# PDF\n\nThrough the front.\n")
        .write(&dir);
    let published = registry.publisher(&[
        "publish",
        dir.to_str().unwrap(),
        "--registry",
        &front_url,
        "--token",
        registry.token(),
    ]);
    assert_eq!(published.code, 0, "{published:?}\n{}", front.error_log());
    let served = registry.server().log();
    assert!(
        served.contains("method=PUT path=/api/v1/skills status=201"),
        "the publish reached the server through nginx:\n{served}"
    );

    let (installed, lock) = add_pdf_from(&cx, &front_url);
    assert!(installed.contains("Through the front."), "{installed}");
    assert!(
        lock.contains("signer = \""),
        "the install checked the signature: {lock}"
    );
    assert!(
        !registry.server().log().contains("path=/dl/"),
        "the archive came from the bucket, not the server:\n{}",
        registry.server().log()
    );
}
