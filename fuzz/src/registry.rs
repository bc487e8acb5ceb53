//! `index_files` and `signed_metadata`: what a client reads from a registry
//! or a mirror before it trusts anything: index lines, `config.json`,
//! `keys/<name>.json`, and the signed `root.json`, `timestamp.json` and
//! `snapshot.json`.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use jiff::Timestamp;
use skillpkg_index::checksum::Checksum;
use skillpkg_index::registry::metadata::{
    self, Root, Seen, SnapshotReference, TimestampFile, Unverified,
};
use skillpkg_index::registry::{
    self, DiscoveryIndex, IndexRecord, KeysFile, RegistryConfig, SearchIndex,
};
use skillpkg_index::skill::SkillName;

/// The skill whose index file the seeds are.
pub const INDEX_NAME: &str = "pdf-processing";

/// Reads `data` by its first byte: 0 an index file (and its first line as
/// one record), 1 `config.json`, 2 a keys file. What reads must write back
/// to something that reads the same.
pub fn index_files(data: &[u8]) {
    let Some((choice, rest)) = crate::selector(data) else {
        return;
    };
    match choice % 3 {
        0 => index_file(rest),
        1 => config(rest),
        _ => keys_file(rest),
    }
}

fn index_file(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Some(line) = text.lines().next() {
        let _ = serde_json::from_str::<IndexRecord>(line);
    }
    let name: SkillName = INDEX_NAME.parse().expect("a valid name");
    let Ok(records) = registry::parse_index_file(&name, text) else {
        return;
    };
    // The registry reads an index file and writes it back on every publish
    // and yank: what it writes must read again, and settle after one round.
    let written = registry::render_index_file(&records);
    let again = registry::parse_index_file(&name, &written)
        .unwrap_or_else(|error| panic!("a rendered index file does not read: {error}\n{written}"));
    assert_eq!(registry::render_index_file(&again), written);
    let _ = registry::latest(&records);
    let all = BTreeMap::from([(name.clone(), records)]);
    let _ = SearchIndex::build(&all);
    let _ = DiscoveryIndex::build(&all, &RegistryConfig::read_only(1024), None);
}

fn config(data: &[u8]) {
    let Ok(config) = serde_json::from_slice::<RegistryConfig>(data) else {
        return;
    };
    let written = registry::render_json(&config);
    let again: RegistryConfig =
        serde_json::from_slice(&written).expect("a rendered config.json reads");
    assert_eq!(again, config);
    let name: SkillName = INDEX_NAME.parse().expect("a valid name");
    let _ = config.archive_url(&name, &semver::Version::new(1, 2, 3));
}

fn keys_file(data: &[u8]) {
    let Ok(keys) = serde_json::from_slice::<KeysFile>(data) else {
        return;
    };
    let written = registry::render_json(&keys);
    let again: KeysFile = serde_json::from_slice(&written).expect("a rendered keys file reads");
    assert_eq!(again, keys);
    for key in keys.public_keys() {
        assert!(keys.contains(&key));
    }
}

/// The time the metadata targets take as now, so runs are reproducible.
pub fn now() -> Timestamp {
    "2026-06-01T00:00:00Z".parse().expect("a valid time")
}

/// Returns the root that the seeds are signed under: version 1, the fixed
/// key as its only root key and as its index key.
pub fn fixed_root() -> &'static Root {
    static ROOT: OnceLock<Root> = OnceLock::new();
    ROOT.get_or_init(|| {
        let key = crate::keys::fixed_key().public();
        let expires = "2036-01-01T00:00:00Z".parse().expect("a valid time");
        Root::new(1, expires, std::slice::from_ref(&key), 1, &key)
    })
}

/// Reads `data` by its first byte as a root (0), a timestamp (1) or a
/// snapshot (2), parses it, and verifies it as a client does under
/// [`fixed_root`].
pub fn signed_metadata(data: &[u8]) {
    let Some((choice, bytes)) = crate::selector(data) else {
        return;
    };
    let root = fixed_root();
    match choice % 3 {
        0 => {
            let _ = metadata::parse::<Root>("1.root.json", "root", bytes);
            if let Ok(first) = metadata::verify_first_root(bytes, None) {
                assert_eq!(first.version, 1);
            }
            let pinned = crate::keys::fixed_key().public();
            let _ = metadata::verify_first_root(bytes, Some(&pinned));
            if let Ok(next) = metadata::verify_next_root(root, bytes) {
                assert_eq!(next.version, root.version + 1);
            }
        }
        1 => {
            let parsed: Result<Unverified<TimestampFile>, _> =
                metadata::parse(metadata::TIMESTAMP_PATH, "timestamp", bytes);
            let _ = parsed.map(|unverified| unverified.verify(root, metadata::RoleName::Index));
            let _ = metadata::verify_timestamp(root, bytes, Seen::default(), now());
        }
        _ => {
            // A timestamp that names these very bytes, so that the snapshot
            // is parsed and checked rather than refused on its hash.
            let timestamp = TimestampFile {
                kind: "timestamp".into(),
                version: 1,
                expires: now(),
                snapshot: SnapshotReference {
                    version: 1,
                    sha256: Checksum::of(bytes),
                },
            };
            if let Ok(snapshot) = metadata::verify_snapshot(root, &timestamp, bytes, now()) {
                for (path, checksum) in snapshot.files.iter().flatten() {
                    assert!(snapshot.check_file(path, None).is_err());
                    let _ = checksum;
                }
            }
            // The same bytes as a node or a bin of a snapshot's tree, named
            // by their sha256, and as the one node and bin a change reads.
            let sum = Checksum::of(bytes);
            let _ = metadata::parse_meta::<metadata::SnapshotNode>("meta/x.json", &sum, "node", bytes);
            let _ = metadata::parse_meta::<metadata::SnapshotBin>("meta/x.json", &sum, "bin", bytes);
            let path = "index/pd/f-/pdf-processing";
            let slot = metadata::slot(path);
            let nodes = std::collections::BTreeMap::from([(slot.node, sum)]);
            let changes = std::collections::BTreeMap::from([(path.to_owned(), Some(sum))]);
            let _ = metadata::MetaTree::update(&nodes, &changes, |_| {
                Ok::<_, metadata::MetadataError>(bytes.to_vec())
            });
            let parsed: Result<Unverified<metadata::Snapshot>, _> =
                metadata::parse(metadata::SNAPSHOT_PATH, "snapshot", bytes);
            if let Ok(unverified) = parsed {
                let _ = unverified
                    .signed
                    .check_file("index/pd/f-/pdf-processing", Some(b""));
            }
        }
    }
}
