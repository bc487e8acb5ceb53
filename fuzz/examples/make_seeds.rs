//! Writes the seeds that need a signature or a key: signed metadata under
//! the fixed root, a signature by the fixed key, the fixed key's files and a
//! keys file. The other seeds are written by hand.
//!
//! Run from the repository's root:
//! `cargo run --manifest-path fuzz/Cargo.toml --example make_seeds`

use std::collections::BTreeMap;
use std::path::Path;

use base64::Engine as _;
use skillpkg_fuzz::keys::{SIGNED_DATA, SIGNED_SUBJECT, fixed_key, fixed_secret_key_file};
use skillpkg_fuzz::registry::{INDEX_NAME, fixed_root};
use skillpkg_index::checksum::Checksum;
use skillpkg_index::registry::metadata::{self, Seen};
use skillpkg_index::registry::{KeyRecord, KeysFile};
use skillpkg_index::signing::Signature;

fn write(target: &str, name: &str, selector: Option<u8>, bytes: &[u8]) {
    let dir = Path::new("fuzz/seeds").join(target);
    fs_err::create_dir_all(&dir).expect("the seeds folder can be made");
    let mut seed = selector.map(|byte| vec![byte]).unwrap_or_default();
    seed.extend_from_slice(bytes);
    fs_err::write(dir.join(name), seed).expect("a seed can be written");
}

fn main() {
    let key = fixed_key();
    let public = key.public();
    let root = fixed_root();

    write(
        "signed_metadata",
        "1.root.json",
        Some(b'0'),
        &metadata::sign(root, &[key]),
    );
    let mut next = root.clone();
    next.version = 2;
    write(
        "signed_metadata",
        "2.root.json",
        Some(b'0'),
        &metadata::sign(&next, &[key]),
    );
    let files = BTreeMap::from([
        (
            format!("index/pd/f-/{INDEX_NAME}"),
            Checksum::of(b"index line\n"),
        ),
        ("search.json".to_owned(), Checksum::of(b"{}")),
    ]);
    let expires = "2030-01-01T00:00:00Z".parse().expect("a valid time");
    let (snapshot, timestamp) =
        metadata::sign_snapshot_and_timestamp(files, Seen::default(), expires, key);
    write("signed_metadata", "timestamp.json", Some(b'1'), &timestamp);
    write("signed_metadata", "snapshot.json", Some(b'2'), &snapshot);

    write(
        "minisign_keys",
        "public.pub",
        Some(b'0'),
        public.to_file().as_bytes(),
    );
    write(
        "minisign_keys",
        "public-bare",
        Some(b'0'),
        public.to_base64().as_bytes(),
    );
    let secret = fixed_secret_key_file();
    write(
        "minisign_keys",
        "secret-unencrypted.key",
        Some(b'1'),
        secret.as_bytes(),
    );
    write(
        "minisign_keys",
        "secret-checksummed.key",
        Some(b'1'),
        key.to_file(None).expect("a key writes").as_bytes(),
    );
    // The same key marked as scrypt-encrypted with parameters cheap enough
    // for the fuzzer to derive: it decrypts to garbage, a wrong password.
    let line = secret.lines().nth(1).expect("a payload line");
    let mut bytes = base64::engine::general_purpose::STANDARD
        .decode(line)
        .expect("base64");
    bytes[2..4].copy_from_slice(b"Sc");
    bytes[38..46].copy_from_slice(&32_768_u64.to_le_bytes());
    bytes[46..54].copy_from_slice(&16_384_u64.to_le_bytes());
    let encrypted = format!(
        "untrusted comment: minisign encrypted secret key\n{}\n",
        base64::engine::general_purpose::STANDARD.encode(bytes)
    );
    write(
        "minisign_keys",
        "secret-cheap-scrypt.key",
        Some(b'1'),
        encrypted.as_bytes(),
    );

    let comment = format!(
        "skillpkg/1\t{}@{}\t{}",
        SIGNED_SUBJECT.0,
        SIGNED_SUBJECT.1,
        Checksum::of(SIGNED_DATA)
    );
    let signature = Signature::sign(key, SIGNED_DATA, &comment);
    write(
        "minisign_signature",
        "valid.minisig",
        None,
        signature.to_file().as_bytes(),
    );
    let foreign = Signature::sign(key, SIGNED_DATA, "timestamp:1700000000\tfile:x.tgz");
    write(
        "minisign_signature",
        "foreign-comment.minisig",
        None,
        foreign.to_file().as_bytes(),
    );

    let keys = KeysFile {
        keys: vec![KeyRecord {
            id: public.id().to_string(),
            key: public,
            added: "2026-01-01T00:00:00Z".into(),
        }],
        ..KeysFile::empty()
    };
    write(
        "index_files",
        "keys-file.json",
        Some(b'2'),
        &skillpkg_index::registry::render_json(&keys),
    );
}
