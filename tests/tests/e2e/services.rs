//! The kit's backing services, checked through the crates the registry
//! uses with them: PostgreSQL through sqlx, Garage through object_store
//! (S3) and reqwest (its website endpoint). Also what Garage does with
//! conditional PUTs, so that an upgrade that changes it is noticed.

use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::path::Path as ObjectPath;
use object_store::{
    ObjectStore as _, ObjectStoreExt as _, PutMode, PutPayload, RetryConfig, UpdateVersion,
};
use skillpkg_tests::{Garage, Postgres};
use sqlx::Connection as _;

async fn count_rows(connection: &mut sqlx::PgConnection) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM releases")
        .fetch_one(connection)
        .await
        .expect("count the rows")
}

#[tokio::test]
async fn postgres_answers_through_sqlx_and_keeps_committed_rows_across_a_restart_and_a_crash() {
    let mut postgres = Postgres::start();
    let mut connection = sqlx::PgConnection::connect(&postgres.url())
        .await
        .expect("connect to the kit's PostgreSQL");
    sqlx::query("CREATE TABLE releases (name text, version text, PRIMARY KEY (name, version))")
        .execute(&mut connection)
        .await
        .unwrap();
    sqlx::query("INSERT INTO releases VALUES ($1, $2)")
        .bind("csv-insights")
        .bind("1.0.0")
        .execute(&mut connection)
        .await
        .unwrap();
    let duplicate = sqlx::query("INSERT INTO releases VALUES ('csv-insights', '1.0.0')")
        .execute(&mut connection)
        .await
        .expect_err("the primary key refuses a second 1.0.0");
    assert_eq!(
        duplicate
            .as_database_error()
            .and_then(|error| error.code())
            .as_deref(),
        Some("23505"),
        "{duplicate}"
    );

    postgres.restart();
    sqlx::query("SELECT 1")
        .execute(&mut connection)
        .await
        .expect_err("a connection from before the restart is gone");
    let mut connection = sqlx::PgConnection::connect(&postgres.url()).await.unwrap();
    assert_eq!(count_rows(&mut connection).await, 1);
    sqlx::query("INSERT INTO releases VALUES ('csv-insights', '1.1.0')")
        .execute(&mut connection)
        .await
        .unwrap();

    postgres.kill();
    assert!(!postgres.is_running());
    sqlx::PgConnection::connect(&postgres.url())
        .await
        .expect_err("nothing listens while it is down");
    postgres.start_again();
    let mut connection = sqlx::PgConnection::connect(&postgres.url()).await.unwrap();
    assert_eq!(count_rows(&mut connection).await, 2, "{}", postgres.log());
}

#[tokio::test]
async fn tests_sharing_one_postgres_each_get_a_database_of_their_own() {
    let postgres = Postgres::shared();
    let first = postgres.fresh_database();
    let second = postgres.fresh_database();
    assert_ne!(first, second);
    // The registry picks its backend from the URL through sqlx's `any`.
    sqlx::any::install_default_drivers();
    let first = sqlx::AnyPool::connect(&first).await.unwrap();
    let second = sqlx::AnyPool::connect(&second).await.unwrap();
    sqlx::query("CREATE TABLE owners (name text)")
        .execute(&first)
        .await
        .unwrap();
    sqlx::query("SELECT * FROM owners")
        .execute(&second)
        .await
        .expect_err("the table is in the first database only");
}

fn s3_store(garage: &Garage, bucket: &str) -> AmazonS3 {
    AmazonS3Builder::new()
        .with_endpoint(garage.s3_endpoint())
        .with_allow_http(true)
        .with_region(garage.region())
        .with_bucket_name(bucket)
        .with_access_key_id(garage.access_key_id())
        .with_secret_access_key(garage.secret_access_key())
        .build()
        .expect("an S3 client for the kit's Garage")
}

async fn read(store: &AmazonS3, key: &ObjectPath) -> String {
    let bytes = store.get(key).await.unwrap().bytes().await.unwrap();
    String::from_utf8(bytes.to_vec()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garage_stores_lists_and_deletes_through_object_store_and_serves_its_website() {
    let mut garage = Garage::start();
    let store = s3_store(&garage, garage.bucket());
    let archive = ObjectPath::from("dl/csv-insights/csv-insights-1.0.0.tgz");
    let index = ObjectPath::from("index/cs/v-/csv-insights");
    store
        .put(&archive, PutPayload::from_static(b"archive bytes"))
        .await
        .expect("PUT through object_store");
    store
        .put(&index, PutPayload::from_static(b"{\"v\":\"1.0.0\"}\n"))
        .await
        .unwrap();
    assert_eq!(read(&store, &archive).await, "archive bytes");
    let listed = store
        .list_with_delimiter(Some(&ObjectPath::from("dl/csv-insights")))
        .await
        .unwrap();
    let keys: Vec<String> = listed
        .objects
        .iter()
        .map(|object| object.location.to_string())
        .collect();
    assert_eq!(keys, ["dl/csv-insights/csv-insights-1.0.0.tgz"]);

    // Plain HTTP, no credentials: what a CDN in front of the bucket does.
    let url = format!("{}/{archive}", garage.web_url());
    let response = reqwest::get(&url).await.unwrap();
    assert_eq!(response.status(), 200, "{url}");
    assert_eq!(response.text().await.unwrap(), "archive bytes");

    store.delete(&archive).await.expect("DELETE");
    let error = store.get(&archive).await.expect_err("deleted");
    assert!(
        matches!(error, object_store::Error::NotFound { .. }),
        "{error}"
    );
    assert_eq!(reqwest::get(&url).await.unwrap().status(), 404);

    // A clean stop waits for clients' idle connections (Garage::stop):
    // close them first. The runtime has worker threads to close them on.
    drop(store);
    garage.restart();
    let store = s3_store(&garage, garage.bucket());
    assert_eq!(read(&store, &index).await, "{\"v\":\"1.0.0\"}\n");

    // What Garage acknowledged survives a kill.
    let acknowledged = ObjectPath::from("index/cs/v-/csv-insights.new");
    store
        .put(&acknowledged, PutPayload::from_static(b"acknowledged"))
        .await
        .unwrap();
    garage.kill();
    assert!(!garage.is_running());
    // object_store retries a refused connection for up to 3 minutes by
    // default: ask once.
    let impatient = AmazonS3Builder::new()
        .with_endpoint(garage.s3_endpoint())
        .with_allow_http(true)
        .with_region(garage.region())
        .with_bucket_name(garage.bucket())
        .with_access_key_id(garage.access_key_id())
        .with_secret_access_key(garage.secret_access_key())
        .with_retry(RetryConfig {
            max_retries: 0,
            ..RetryConfig::default()
        })
        .build()
        .unwrap();
    impatient
        .get(&index)
        .await
        .expect_err("nothing answers while it is down");
    garage.start_again();
    assert_eq!(read(&store, &acknowledged).await, "acknowledged");
}

#[tokio::test]
async fn each_test_gets_a_bucket_of_its_own_served_at_its_own_host() {
    let garage = Garage::shared();
    let mine = garage.fresh_bucket();
    let theirs = garage.fresh_bucket();
    let key = ObjectPath::from("index.json");
    s3_store(garage, &mine)
        .put(&key, PutPayload::from_static(b"mine"))
        .await
        .unwrap();
    s3_store(garage, &theirs)
        .get(&key)
        .await
        .expect_err("the object is in the first bucket only");

    // `<bucket>.localhost` is not in the system resolver: tell the client.
    let client = reqwest::Client::builder()
        .resolve(&garage.web_host_of(&mine), garage.web_address())
        .build()
        .unwrap();
    let url = format!("{}/index.json", garage.web_url_of(&mine));
    let response = client.get(&url).send().await.unwrap();
    assert_eq!(response.status(), 200, "{url}");
    assert_eq!(response.text().await.unwrap(), "mine");
    // Or name the bucket in the Host header.
    let response = reqwest::Client::new()
        .get(format!("http://{}/index.json", garage.web_address()))
        .header(reqwest::header::HOST, garage.web_host_of(&theirs))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 404);
}

/// Garage 2.5 does not implement conditional writes: `If-None-Match: *`
/// and `If-Match` on PUT are ignored, the object is overwritten and the
/// answer is 200. The registry must not rest on them;
/// if this test fails, Garage has started honouring them.
#[tokio::test]
async fn garage_ignores_if_none_match_and_if_match_on_put() {
    let garage = Garage::shared();
    let store = s3_store(garage, &garage.fresh_bucket());
    let key = ObjectPath::from("dl/immutable.tgz");
    let first = store
        .put(&key, PutPayload::from_static(b"first"))
        .await
        .unwrap();

    // object_store sends `If-None-Match: *` for PutMode::Create.
    let created_again = store
        .put_opts(
            &key,
            PutPayload::from_static(b"second"),
            PutMode::Create.into(),
        )
        .await;
    assert!(
        created_again.is_ok(),
        "Garage now refuses If-None-Match: * on an existing key ({:?}): \
         update this test and the notes on Garage in docs/contributing.md",
        created_again.err()
    );
    assert_eq!(read(&store, &key).await, "second", "and it overwrote");

    // And `If-Match: <etag>` for PutMode::Update.
    let wrong = UpdateVersion {
        e_tag: first.e_tag.clone(),
        version: None,
    };
    assert_ne!(
        store.head(&key).await.unwrap().e_tag,
        first.e_tag,
        "the ETag is stale"
    );
    let updated = store
        .put_opts(
            &key,
            PutPayload::from_static(b"third"),
            PutMode::Update(wrong).into(),
        )
        .await;
    assert!(
        updated.is_ok(),
        "Garage now refuses If-Match with a stale ETag ({:?}): update this test \
         and the notes on Garage in docs/contributing.md",
        updated.err()
    );
    assert_eq!(read(&store, &key).await, "third", "and it overwrote");
}
