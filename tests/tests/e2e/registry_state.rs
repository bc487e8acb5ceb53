//! The registry's state in its database: a registry that kept its state in
//! JSON files is imported, and every change is in the audit trail that
//! `skillpkg-registry events` shows.

use std::process::Command;

use reqwest::blocking::Client;
use skillpkg_index::checksum::Checksum;
use skillpkg_tests::{
    Postgres, RegistryServer, binary, create_token, publish_raw as publish, run, tarball,
};

/// `skillpkg-registry events --json` of the data folder `root`.
fn events(root: &std::path::Path, skill: Option<&str>) -> Vec<serde_json::Value> {
    let mut command = Command::new(binary("skillpkg-registry"));
    command.args(["events", "--json", "--root"]).arg(root);
    if let Some(skill) = skill {
        command.args(["--skill", skill]);
    }
    run(&mut command).json().as_array().unwrap().clone()
}

#[test]
fn a_registry_that_kept_its_state_in_json_is_imported_and_its_tokens_still_work() {
    let root = tempfile::tempdir().unwrap();
    let state = root.path().join("state");
    fs_err::create_dir_all(&state).unwrap();
    let old_token = "skp_a-token-from-before-the-database";
    let hash = Checksum::of(old_token.as_bytes());
    fs_err::write(
        state.join("tokens.json"),
        format!(
            r#"{{"tokens":[{{"id":"t5","user":"alice","hash":"{hash}","created":"2026-01-01T00:00:00Z"}}]}}"#
        ),
    )
    .unwrap();
    fs_err::write(
        state.join("owners.json"),
        r#"{"owners":{"pdf":["bob","alice"]}}"#,
    )
    .unwrap();

    let server = RegistryServer::start(root.path(), &[]);
    // alice's old token publishes a skill she co-owns, and a new one.
    for name in ["pdf", "csv"] {
        let (status, body) = publish(&server, old_token, name, "1.0.0");
        assert_eq!(status, 201, "{name}: {body}");
    }
    let owners: serde_json::Value = Client::new()
        .get(format!("{}/api/v1/skills/pdf/owners", server.url()))
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(owners["users"], serde_json::json!(["bob", "alice"]));
    assert!(!state.join("tokens.json").exists());
    assert!(state.join("tokens.json.imported").exists());
    assert!(state.join("owners.json.imported").exists());

    // Token ids go on from the imported ones.
    let list = run(Command::new(binary("skillpkg-registry"))
        .args(["token", "list", "--json", "--root"])
        .arg(root.path()));
    assert_eq!(list.json()[0]["id"], "t5");
    create_token(root.path(), "carol");
    let list = run(Command::new(binary("skillpkg-registry"))
        .args(["token", "list", "--json", "--root"])
        .arg(root.path()));
    assert_eq!(list.json()[1]["id"], "t6");

    let trail = events(root.path(), None);
    assert_eq!(trail[0]["action"], "import");
    assert_eq!(trail[0]["actor"], "(admin)");
    assert!(
        trail[0]["detail"]
            .as_str()
            .unwrap()
            .starts_with("1 tokens and the owners of 1 skills"),
        "{trail:?}"
    );
}

#[test]
fn every_change_is_in_the_audit_trail_with_who_made_it() {
    let root = tempfile::tempdir().unwrap();
    let alice = create_token(root.path(), "alice");
    let bob = create_token(root.path(), "bob");
    let server = RegistryServer::start(root.path(), &[]);
    let client = Client::new();
    let (status, body) = publish(&server, &alice, "pdf", "1.0.0");
    assert_eq!(status, 201, "{body}");
    let cksum = serde_json::from_str::<serde_json::Value>(&body).unwrap()["cksum"]
        .as_str()
        .unwrap()
        .to_owned();
    let status = client
        .put(format!("{}/api/v1/skills/pdf/owners", server.url()))
        .bearer_auth(&alice)
        .json(&serde_json::json!({"add": ["bob"]}))
        .send()
        .unwrap()
        .status();
    assert_eq!(status, 200);
    let status = client
        .delete(format!("{}/api/v1/skills/pdf/1.0.0/yank", server.url()))
        .bearer_auth(&bob)
        .json(&serde_json::json!({"reason": "leaks the API key"}))
        .send()
        .unwrap()
        .status();
    assert_eq!(status, 200);
    // A refused change is not recorded.
    let (status, _) = publish(&server, &bob, "pdf", "1.0.0");
    assert_eq!(status, 409);

    let trail = events(root.path(), Some("pdf"));
    let summary: Vec<(String, String, String)> = trail
        .iter()
        .map(|event| {
            (
                event["actor"].as_str().unwrap().to_owned(),
                event["action"].as_str().unwrap().to_owned(),
                event["detail"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (
                "alice".to_owned(),
                "publish".to_owned(),
                format!("{cksum}, unsigned")
            ),
            ("alice".into(), "owners".into(), "added bob".into()),
            ("bob".into(), "yank".into(), "leaks the API key".into()),
        ]
    );
    assert_eq!(trail[0]["version"], "1.0.0");
    // The whole trail starts with the tokens the admin made.
    let all = events(root.path(), None);
    assert_eq!(all[0]["action"], "token-create");
    assert_eq!(all.len(), 5, "{all:?}");

    // The human form: one line an event, tab-separated.
    let human = run(Command::new(binary("skillpkg-registry"))
        .args(["events", "--skill", "pdf", "--root"])
        .arg(root.path()));
    let lines: Vec<&str> = human.stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{}", human.stdout);
    assert!(
        lines[2].ends_with("\tbob\tyank\tpdf@1.0.0\tleaks the API key"),
        "{}",
        lines[2]
    );
}

/// `skillpkg-registry token create` for `user` in the database `database`.
fn create_token_in(root: &std::path::Path, database: &str, user: &str) -> String {
    let output = run(Command::new(binary("skillpkg-registry"))
        .args([
            "token",
            "create",
            "--user",
            user,
            "--database",
            database,
            "--root",
        ])
        .arg(root));
    output.stdout.trim().to_owned()
}

#[test]
fn two_servers_on_one_postgres_share_tokens_owners_and_the_audit_trail() {
    let database = Postgres::shared().fresh_database();
    let (first_root, second_root) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let alice = create_token_in(first_root.path(), &database, "alice");
    let bob = create_token_in(second_root.path(), &database, "bob");
    let servers = [
        RegistryServer::start(first_root.path(), &["--database", &database]),
        RegistryServer::start(second_root.path(), &["--database", &database]),
    ];

    // Ten first publishes of one new name, by two users, on two servers at
    // once: the database gives the name to exactly one of them.
    let outcomes: Vec<(&str, u16)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..10)
            .map(|i| {
                let (user, token) = if i % 2 == 0 {
                    ("alice", &alice)
                } else {
                    ("bob", &bob)
                };
                let server = &servers[(i / 2) % 2];
                scope.spawn(move || (user, publish(server, token, "race", "1.0.0").0))
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| handle.join().unwrap())
            .collect()
    });
    let winners: std::collections::BTreeSet<&str> = outcomes
        .iter()
        .filter(|(_, status)| *status == 201)
        .map(|(user, _)| *user)
        .collect();
    assert_eq!(winners.len(), 1, "{outcomes:?}");
    let winner = *winners.first().unwrap();
    // The others are refused: not an owner, a version that exists, or one
    // being published.
    for (user, status) in &outcomes {
        if *user != winner {
            assert!([403, 409].contains(status), "{outcomes:?}");
        }
    }
    let published = outcomes.iter().filter(|(_, status)| *status == 201).count();
    assert_eq!(published, 1, "once across the servers: {outcomes:?}");
    for server in &servers {
        let owners: serde_json::Value = Client::new()
            .get(format!("{}/api/v1/skills/race/owners", server.url()))
            .send()
            .unwrap()
            .json()
            .unwrap();
        assert_eq!(owners["users"], serde_json::json!([winner]));
    }

    // A token revoked through the database stops working on both servers.
    let list = run(Command::new(binary("skillpkg-registry"))
        .args(["token", "list", "--json", "--database", &database, "--root"])
        .arg(first_root.path()));
    let bob_id = list.json()[1]["id"].as_str().unwrap().to_owned();
    run(Command::new(binary("skillpkg-registry"))
        .args([
            "token",
            "revoke",
            &bob_id,
            "--database",
            &database,
            "--root",
        ])
        .arg(first_root.path()));
    for server in &servers {
        let status = Client::new()
            .get(format!("{}/api/v1/me", server.url()))
            .bearer_auth(&bob)
            .send()
            .unwrap()
            .status();
        assert_eq!(status, 401);
    }

    // One trail: the tokens, the winner's publishes on both servers, the
    // revocation.
    let trail = run(Command::new(binary("skillpkg-registry"))
        .args(["events", "--json", "--database", &database, "--root"])
        .arg(second_root.path()))
    .json();
    let actions: Vec<&str> = trail
        .as_array()
        .unwrap()
        .iter()
        .map(|event| event["action"].as_str().unwrap())
        .collect();
    assert_eq!(actions.first(), Some(&"token-create"));
    assert_eq!(actions.last(), Some(&"token-revoke"));
    assert_eq!(
        actions
            .iter()
            .filter(|action| **action == "publish")
            .count(),
        published,
        "every publish that landed, and only those: {actions:?}"
    );
}

#[test]
fn a_server_rides_out_a_postgres_restart_and_says_what_failed_while_it_was_down() {
    let mut postgres = Postgres::start();
    let database = postgres.fresh_database();
    let root = tempfile::tempdir().unwrap();
    let alice = create_token_in(root.path(), &database, "alice");
    let server = RegistryServer::start(root.path(), &["--database", &database]);
    let (status, body) = publish(&server, &alice, "pdf", "1.0.0");
    assert_eq!(status, 201, "{body}\n{}", server.log());

    postgres.stop();
    let (status, body) = publish(&server, &alice, "pdf", "1.1.0");
    assert_eq!(status, 500, "{body}");
    assert!(!body.contains(&database), "no URL in the answer: {body}");
    // The request's log line is written once its answer is sent: wait.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !server.log().contains("database error on postgres://") {
        assert!(
            std::time::Instant::now() < deadline,
            "the cause is not in the log:\n{}",
            server.log()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }

    postgres.start_again();
    // The pool checks a connection before it lends it: the first request
    // after the restart gets a new one.
    let (status, body) = publish(&server, &alice, "pdf", "1.1.0");
    assert_eq!(status, 201, "{body}");
    let versions: Vec<serde_json::Value> =
        fs_err::read_to_string(root.path().join("public/index/3/p/pdf"))
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
    assert_eq!(versions.len(), 2, "the failed publish left nothing");
}

/// A registry of an earlier skillpkg, whose versions are only in its index
/// files (here a tree `build` wrote, as a server before the database did):
/// the server records them in its database at first start, once, and then
/// treats them as its own: the same index file, a version that exists, a
/// yank, a new version beside them.
#[test]
fn a_tree_from_before_the_database_has_its_versions_recorded_once() {
    let archives = tempfile::tempdir().unwrap();
    for (name, version) in [("pdf", "1.0.0"), ("pdf", "1.1.0"), ("csv", "0.1.0")] {
        fs_err::write(
            archives.path().join(format!("{name}-{version}.tgz")),
            tarball(name, version),
        )
        .unwrap();
    }
    let root = tempfile::tempdir().unwrap();
    let built = run(Command::new(binary("skillpkg-registry"))
        .args(["build", "--from"])
        .arg(archives.path())
        .arg("--out")
        .arg(root.path().join("public")));
    assert_eq!(built.code, 0, "{built:?}");
    let index_before = fs_err::read(root.path().join("public/index/3/p/pdf")).unwrap();
    let alice = create_token(root.path(), "alice");

    let server = RegistryServer::start(root.path(), &[]);
    assert_eq!(
        fs_err::read(root.path().join("public/index/3/p/pdf")).unwrap(),
        index_before,
        "the index file is written from the database as it was"
    );
    let (status, body) = publish(&server, &alice, "pdf", "1.1.0");
    assert_eq!(status, 409, "{body}");
    assert!(body.contains("already published"), "{body}");
    let (status, body) = publish(&server, &alice, "pdf", "1.2.0");
    assert_eq!(status, 201, "{body}");
    let yanked = Client::new()
        .delete(format!("{}/api/v1/skills/csv/0.1.0/yank", server.url()))
        .bearer_auth(&alice)
        .send()
        .unwrap();
    assert_eq!(yanked.status(), 200);
    let csv = fs_err::read_to_string(root.path().join("public/index/3/c/csv")).unwrap();
    assert!(csv.contains("\"yanked\":true"), "{csv}");
    let pdf = fs_err::read_to_string(root.path().join("public/index/3/p/pdf")).unwrap();
    assert_eq!(pdf.lines().count(), 3, "{pdf}");

    // Started again: recorded once, nothing imported twice.
    drop(server);
    let again = RegistryServer::start(root.path(), &[]);
    let imports: Vec<serde_json::Value> = events(root.path(), None)
        .into_iter()
        .filter(|event| event["action"] == "import")
        .collect();
    assert_eq!(imports.len(), 1, "{imports:?}");
    assert!(
        imports[0]["detail"]
            .as_str()
            .unwrap()
            .starts_with("3 versions of 2 skills from "),
        "{imports:?}"
    );
    assert_eq!(
        fs_err::read_to_string(root.path().join("public/index/3/p/pdf"))
            .unwrap()
            .lines()
            .count(),
        3
    );
    drop(again);
}
