//! The search index in shards (docs/index-format.md, "search.json"): a
//! registry that grows is split into more shards at its next start, a
//! publish rewrites the one shard of its skill, the client and the mirror
//! read every shard, and a hostile tree's shards get clear errors.

use std::collections::BTreeMap;
use std::path::Path;

use skillpkg_tests::{RegistryServer, TestContext, TestRegistry, publish_raw, run};

/// The files of the search index in `public`: `search.json` and every shard.
fn search_files(public: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut files: BTreeMap<String, Vec<u8>> =
        skillpkg_tests::served_files_below(&public.join("search"))
            .into_iter()
            .map(|(relative, bytes)| (format!("search/{}", relative.display()), bytes))
            .collect();
    files.insert(
        "search.json".into(),
        fs_err::read(public.join("search.json")).unwrap(),
    );
    files
}

fn shard_count(public: &Path) -> u64 {
    let root: serde_json::Value =
        serde_json::from_slice(&fs_err::read(public.join("search.json")).unwrap()).unwrap();
    root["shards"].as_u64().unwrap()
}

fn names(public: &Path) -> Vec<String> {
    skillpkg_tests::search_entries(|path| fs_err::read_to_string(public.join(path)).unwrap())
        .iter()
        .map(|entry| entry["name"].as_str().unwrap().to_owned())
        .collect()
}

const TOOLS: [&str; 5] = [
    "alpha-tool",
    "bravo-kit",
    "charlie-helper",
    "delta-runner",
    "echo-writer",
];

#[test]
fn a_growing_registry_is_split_into_shards_and_a_publish_rewrites_one() {
    let sandbox = TestContext::new();
    let flags = ["--skills-per-shard", "2"];
    let mut registry = TestRegistry::builder(&sandbox).flags(&flags).start();
    let public = registry.public();
    // A new registry has one shard, whatever its size later.
    assert_eq!(shard_count(&public), 1);
    assert_eq!(
        fs_err::read_to_string(public.join("search/all.json")).unwrap(),
        "{\"v\":2,\"skills\":[]}\n"
    );
    for name in &TOOLS[..3] {
        let (status, body) = publish_raw(registry.server(), registry.token(), name, "1.0.0");
        assert_eq!(status, 201, "{body}");
    }
    // Three skills in one shard until the server checks its size: at
    // start (or every minute).
    assert_eq!(shard_count(&public), 1);
    assert_eq!(names(&public), &TOOLS[..3]);
    registry.server_mut().kill();
    registry.replace_server(RegistryServer::start(registry.data(), &flags));
    assert_eq!(shard_count(&public), 16, "3 skills at 2 a shard");
    let before = search_files(&public);
    let shards: Vec<&String> = before
        .keys()
        .filter(|path| path.len() == "search/0.json".len())
        .collect();
    assert_eq!(
        shards.len(),
        16,
        "every shard is written: {:?}",
        before.keys()
    );
    assert!(
        !public.join("search/all.json").exists(),
        "the one shard of before is gone"
    );
    assert_eq!(names(&public), &TOOLS[..3]);

    // A publish rewrites the one shard that lists its skill: the first
    // hex digit of the sha256 of its name.
    let (status, body) = publish_raw(registry.server(), registry.token(), TOOLS[3], "1.0.0");
    assert_eq!(status, 201, "{body}");
    let after = search_files(&public);
    let changed: Vec<&String> = after
        .keys()
        .filter(|path| before.get(*path) != after.get(*path))
        .collect();
    let digest = sha256_hex(TOOLS[3]);
    let shard = format!("search/{}.json", &digest[..1]);
    assert_eq!(changed, [&shard], "sha256({}) = {digest}", TOOLS[3]);
    assert!(
        String::from_utf8_lossy(&after[&shard]).contains(TOOLS[3]),
        "{shard} lists it"
    );
    assert_eq!(names(&public), &TOOLS[..4]);

    // The client reads every shard: `skillpkg search` finds skills in
    // all of them, from the server and from the tree as a static folder.
    for source in [registry.url().to_owned(), public.display().to_string()] {
        let output = sandbox.skillpkg([
            "search",
            "",
            "--json",
            "--limit",
            "100",
            "--registry",
            &source,
        ]);
        assert_eq!(output.code, 0, "{output:?}");
        let found: Vec<String> = output.json()["skills"]
            .as_array()
            .unwrap()
            .iter()
            .map(|entry| entry["name"].as_str().unwrap().to_owned())
            .collect();
        let mut expected: Vec<String> = TOOLS[..4].iter().map(|name| (*name).to_owned()).collect();
        expected.sort();
        let mut sorted = found.clone();
        sorted.sort();
        assert_eq!(sorted, expected, "from {source}");
    }

    // A yank rewrites the shard too: the skill is no longer offered.
    let yank = registry.publisher(&[
        "yank",
        &format!("{}@1.0.0", TOOLS[0]),
        "--registry",
        registry.url(),
        "--token",
        registry.token(),
    ]);
    assert_eq!(yank.code, 0, "{yank:?}");
    assert!(!names(&public).iter().any(|name| name == TOOLS[0]));
}

#[test]
fn a_mirror_copies_the_shards_and_fetches_none_again_when_nothing_changed() {
    let sandbox = TestContext::new();
    let flags = ["--skills-per-shard", "1"];
    let mut registry = TestRegistry::builder(&sandbox).flags(&flags).start();
    for name in &TOOLS[..2] {
        let (status, body) = publish_raw(registry.server(), registry.token(), name, "1.0.0");
        assert_eq!(status, 201, "{body}");
    }
    registry.server_mut().kill();
    registry.replace_server(RegistryServer::start(registry.data(), &flags));
    let public = registry.public();
    assert_eq!(shard_count(&public), 16);
    let dest = sandbox.path().join("mirror");
    let mirror = || {
        let output = run(sandbox
            .skillpkg_command()
            .args(["mirror", registry.url()])
            .arg(&dest)
            .args(["--all", "--json"]));
        assert_eq!(output.code, 0, "{output:?}");
        output.json()
    };
    let first = mirror();
    assert_eq!(first["skills"], 2);
    assert_eq!(
        search_files(&dest),
        search_files(&public),
        "the same shards"
    );
    // Nothing changed: every file is answered 304, none is fetched.
    let second = mirror();
    assert_eq!(second["files"], 0, "{second}");
    assert_eq!(second["downloaded"], 0);
    // One more skill: its shard comes over, and search.json after it.
    let (status, body) = publish_raw(registry.server(), registry.token(), TOOLS[2], "1.0.0");
    assert_eq!(status, 201, "{body}");
    let third = mirror();
    assert_eq!(third["skills"], 3);
    assert_eq!(search_files(&dest), search_files(&public));
    let output = sandbox.skillpkg([
        "search",
        "charlie",
        "--json",
        "--registry",
        dest.to_str().unwrap(),
    ]);
    assert_eq!(output.code, 0, "{output:?}");
    assert_eq!(output.json()["skills"][0]["name"], TOOLS[2]);
}

#[test]
fn a_hostile_search_index_gets_an_error_naming_its_file() {
    let sandbox = TestContext::new();
    sandbox.write(
        "tree/config.json",
        r#"{"v":1,"dl":"dl/{name}/{version}/{name}-{version}.tgz","api":null,"max-skill-bytes":8388608}"#,
    );
    let tree = sandbox.path().join("tree");
    let search = |expected: &str| {
        let output = sandbox.skillpkg(["search", "pdf", "--registry", tree.to_str().unwrap()]);
        assert_eq!(output.code, 3, "{output:?}");
        assert!(
            output.stderr.contains(expected),
            "`{expected}` not in:\n{}",
            output.stderr
        );
    };
    sandbox.write("tree/search.json", r#"{"v":2,"shards":7}"#);
    search("1, 16 or 256");
    sandbox.write("tree/search.json", r#"{"v":2,"shards":16}"#);
    sandbox.write("tree/search/3.json", "{\"v\":2,\"skills\":[{\"name\":");
    search("search/3.json");
    // A name listed in two shards is shown once; a missing shard lists
    // nothing.
    let entry = r#"{"name":"pdf","version":"1.0.0","description":"PDF things.","versions":1}"#;
    sandbox.write(
        "tree/search/3.json",
        format!("{{\"v\":2,\"skills\":[{entry}]}}"),
    );
    sandbox.write(
        "tree/search/4.json",
        format!("{{\"v\":2,\"skills\":[{entry}]}}"),
    );
    let output = sandbox.skillpkg([
        "search",
        "pdf",
        "--json",
        "--registry",
        tree.to_str().unwrap(),
    ]);
    assert_eq!(output.code, 0, "{output:?}");
    assert_eq!(output.json()["total"], 1, "{output:?}");
}

fn sha256_hex(text: &str) -> String {
    use sha2::Digest as _;
    sha2::Sha256::digest(text.as_bytes())
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}
