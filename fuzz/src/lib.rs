//! The logic of skillpkg's fuzz targets, one public function per target.
//!
//! Each file in `fuzz_targets/` is one line that hands libFuzzer's input to
//! a function here, so the same code runs under `cargo fuzz run`, when the
//! end-to-end test replays `regressions/`, and in any unit test that wants
//! to call it. A function returns normally for every input, valid or not;
//! a panic (a failed invariant, an overflow, an index out of bounds) or an
//! abort is a finding.
//!
//! ```text
//! fuzz/
//!   fuzz_targets/<target>.rs   the libFuzzer entry points
//!   src/                       what each target does (this crate)
//!   seeds/<target>/            small hand-written inputs, in git
//!   dictionaries/<format>.dict tokens for libFuzzer's -dict=
//!   regressions/<target>/      inputs that once crashed, replayed by tests/tests/fuzz.rs
//!   corpus/ artifacts/         what fuzzing generates, never in git
//! ```

pub mod archive;
pub mod keys;
pub mod project;
pub mod registry;
pub mod skill;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Returns this process's scratch folder, made once and reused by every run:
/// a fresh temporary folder per run would cost more than the parsing.
/// It lives under `$TMPDIR`, so point that at a tmpfs for speed.
pub(crate) fn scratch() -> &'static Path {
    static SCRATCH: OnceLock<PathBuf> = OnceLock::new();
    SCRATCH.get_or_init(|| {
        tempfile::Builder::new()
            .prefix("skillpkg-fuzz-")
            .tempdir()
            .expect("a temporary folder")
            .keep()
    })
}

/// Returns the names in `dir`, sorted.
pub(crate) fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs_err::read_dir(dir)
        .expect("the scratch folder is readable")
        .map(|entry| {
            entry
                .expect("the scratch folder is readable")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    names
}

/// Empties `dir` (which must exist) without removing it.
pub(crate) fn clear(dir: &Path) {
    for name in names_in(dir) {
        let path = dir.join(name);
        if path.symlink_metadata().is_ok_and(|meta| meta.is_dir()) {
            fs_err::remove_dir_all(&path).expect("the scratch folder can be cleared");
        } else {
            fs_err::remove_file(&path).expect("the scratch folder can be cleared");
        }
    }
}

/// Splits off the first byte, which targets that cover several parsers use
/// to choose one, so that the fuzzer learns the choice as one byte.
pub(crate) fn selector(data: &[u8]) -> Option<(u8, &[u8])> {
    data.split_first().map(|(first, rest)| (*first, rest))
}
