//! The `SKILL.md` the server serves: the file, with every frontmatter
//! scalar that YAML 1.1 and 1.2 parsers read differently rewritten so that
//! both read it as skillpkg did ([`skillpkg_index::skill::unambiguous_text`]:
//! `on` quoted, `010` written `10`; every other byte as written).
//!
//! Clients read `SKILL.md` with their own YAML parser, often a YAML 1.1
//! one (PyYAML), and some refuse a frontmatter that reads two ways. What
//! skillpkg validated is the YAML 1.2 reading, so that is the one served.
//!
//! Every size and digest the server shows of `SKILL.md` (the SEP-2640
//! manifest, `resources/list`, directory listings, the `skills_load`
//! receipt) is that of the bytes it serves, so a client that checks a read
//! against its digest finds them equal. The files' own digests, which the
//! tree hash and so the check against `skills.lock` are computed from,
//! stay those of the file on disk, and every read is still checked
//! against them before the rewrite.

use sha2::{Digest as _, Sha256};
use skillpkg_index::skill::{SKILL_MD, unambiguous_text};

/// A file of a served skill.
#[derive(Clone, Debug)]
pub struct ServedFile {
    /// Relative to the skill folder, `/`-separated.
    pub path: String,
    pub size: u64,
    pub sha256: [u8; 32],
    pub executable: bool,
}

/// `SKILL.md` as served, when that differs from `bytes`, the file whose
/// manifest entry is `file`; `None` when it is served as written (or
/// `bytes` are not the bytes `file` was read as).
pub fn rewritten(bytes: &[u8], file: &ServedFile) -> Option<ServedFile> {
    if Sha256::digest(bytes).as_slice() != file.sha256 {
        return None;
    }
    let served = unambiguous_text(bytes)?;
    Some(ServedFile {
        path: file.path.clone(),
        size: served.len() as u64,
        sha256: Sha256::digest(served.as_bytes()).into(),
        executable: file.executable,
    })
}

/// `file` as listed to clients: the served `SKILL.md` in place of the
/// file when it is rewritten (`served`), else the file.
pub fn listed<'a>(file: &'a ServedFile, served: Option<&'a ServedFile>) -> &'a ServedFile {
    match served {
        Some(served) if file.path == SKILL_MD => served,
        _ => file,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(bytes: &[u8]) -> ServedFile {
        ServedFile {
            path: SKILL_MD.to_owned(),
            size: bytes.len() as u64,
            sha256: Sha256::digest(bytes).into(),
            executable: false,
        }
    }

    #[test]
    fn lists_the_served_bytes_of_a_rewritten_skill_md() {
        let bytes = b"---\nname: x\ndescription: d\nmetadata:\n  beta: yes\n---\nbody\n";
        let on_disk = file(bytes);
        let served = rewritten(bytes, &on_disk).unwrap();
        let text = "---\nname: x\ndescription: d\nmetadata:\n  beta: \"yes\"\n---\nbody\n";
        assert_eq!(served.size, text.len() as u64);
        assert_eq!(served.sha256, file(text.as_bytes()).sha256);
        assert_eq!(listed(&on_disk, Some(&served)).sha256, served.sha256);
        let other = ServedFile {
            path: "notes.md".to_owned(),
            ..file(b"n")
        };
        assert_eq!(listed(&other, Some(&served)).path, "notes.md");
    }

    #[test]
    fn serves_as_written_what_reads_alike_or_changed() {
        let plain = b"---\nname: x\ndescription: \"yes\"\n---\n";
        assert!(rewritten(plain, &file(plain)).is_none());
        let ambiguous = b"---\nname: x\ndescription: yes\n---\n";
        assert!(rewritten(ambiguous, &file(b"other bytes")).is_none());
    }
}
