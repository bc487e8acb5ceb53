//! The registry's storage on a real S3-compatible server (Garage): objects
//! written whole, listed under a prefix, served as they are by the bucket's
//! own web endpoint, and a store that refuses or is down fails fast with
//! the bucket and the path named.

use std::time::{Duration, Instant};

use bytes::Bytes;
use skillpkg_registry::storage::{Storage, StorageError};
use skillpkg_tests::Garage;

/// The storage `s3://BUCKET/PREFIX` on `garage`, with `secret` as the key.
fn on_garage(garage: &Garage, bucket: &str, prefix: &str, secret: &str) -> Storage {
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
