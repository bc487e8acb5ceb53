//! Signature verification cost: 1,000 signed 100 KB archives.
//!
//! Run: `cargo run --release -p skillpkg-index --example verify-bench`
//!
//! Baseline, in the same run: the sha256 of each archive, which any
//! checksum-verifying installer computes anyway. The figure of interest is
//! the full check (`verify_skill`: sha256, BLAKE2b-512 prehash, two Ed25519
//! `verify_strict`, the trusted comment) per archive, and its ratio to the
//! baseline.
#![allow(clippy::print_stdout, reason = "a benchmark reports on stdout")]

use std::time::Instant;

use skillpkg_index::checksum::Checksum;
use skillpkg_index::signing::{SecretKey, Signature, TrustedComment, verify_skill};
use skillpkg_index::skill::SkillName;

const ARCHIVES: usize = 1_000;
const SIZE: usize = 100 * 1024;
const ROUNDS: usize = 5;

fn main() {
    let key = SecretKey::generate().expect("a key");
    let public = [key.public()];
    let name: SkillName = "bench".parse().expect("a name");
    let mut state = 0x9E37_79B9_7F4A_7C15_u64;
    let archives: Vec<(semver::Version, Vec<u8>, String)> = (0..ARCHIVES)
        .map(|index| {
            let bytes: Vec<u8> = (0..SIZE)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    state as u8
                })
                .collect();
            let version = semver::Version::new(1, 0, index as u64);
            let comment = TrustedComment {
                name: name.clone(),
                version: version.clone(),
                sha256: Checksum::of(&bytes),
            };
            let signature = Signature::sign(&key, &bytes, &comment.to_string()).to_file();
            (version, bytes, signature)
        })
        .collect();

    let best = |work: &dyn Fn()| {
        (0..ROUNDS)
            .map(|_| {
                let start = Instant::now();
                work();
                start.elapsed()
            })
            .min()
            .expect("rounds")
    };
    let hashing = best(&|| {
        for (_, bytes, _) in &archives {
            std::hint::black_box(Checksum::of(bytes));
        }
    });
    let verifying = best(&|| {
        for (version, bytes, signature) in &archives {
            verify_skill(bytes, signature, &public, &name, version).expect("a valid signature");
        }
    });
    let per = |total: std::time::Duration| total.as_secs_f64() * 1e6 / ARCHIVES as f64;
    println!(
        "archives:        {ARCHIVES} x {} KB, best of {ROUNDS} rounds",
        SIZE / 1024
    );
    println!(
        "sha256 only:     {:8.2} ms total, {:6.1} us each (baseline)",
        hashing.as_secs_f64() * 1e3,
        per(hashing)
    );
    println!(
        "verify_skill:    {:8.2} ms total, {:6.1} us each",
        verifying.as_secs_f64() * 1e3,
        per(verifying)
    );
    println!(
        "ratio:           {:.2}x the baseline; signature work {:.1} us each",
        verifying.as_secs_f64() / hashing.as_secs_f64(),
        per(verifying) - per(hashing)
    );
}
