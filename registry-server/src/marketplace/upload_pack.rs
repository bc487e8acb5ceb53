//! git's smart HTTP protocol, version 2 (`Documentation/gitprotocol-v2.txt`),
//! read-only, over the repositories of the tree ([`super::repo`]).
//!
//! Why a server speaks it at all: Claude Code clones a plugin with `git
//! clone --depth 1`, and git refuses a shallow clone over the dumb
//! protocol ("dumb http transport does not support shallow
//! capabilities"), so static files alone cannot install a plugin there.
//! Every commit of these repositories has no parent and every pack holds
//! one whole snapshot, so a fetch needs no negotiation and no shallow
//! boundary: the answer to `want C` is the pack that holds `C`.
//!
//! ```text
//! GET  <repo>/info/refs?service=git-upload-pack   Git-Protocol: version=2
//!      -> "version 2" ls-refs fetch=shallow object-format=sha1 (the capabilities)
//! POST <repo>/git-upload-pack  command=ls-refs   -> "<sha1> <ref>[ symref-target:<ref>]"...
//! POST <repo>/git-upload-pack  command=fetch     -> [acknowledgments ready] packfile (side band 1)
//! ```
//!
//! A client that does not ask for version 2 gets the static `info/refs`
//! instead, and git then reads the repository over the dumb protocol.

use skillpkg_index::registry::tree::{StaticTree, TreeError};

use super::git::{GitError, ObjectId, PackIndex, merge_packs};
use super::repo::{MAIN, Repo};

/// The content type of the capability advertisement.
pub const ADVERTISEMENT_TYPE: &str = "application/x-git-upload-pack-advertisement";
/// The content type of an answer to a command.
pub const RESULT_TYPE: &str = "application/x-git-upload-pack-result";
/// The largest request body read (decompressed): ls-refs and fetch
/// requests are a few hundred bytes; many `have` lines fit too.
pub const MAX_REQUEST_BYTES: usize = 1024 * 1024;
/// The most `want` lines a fetch may have.
const MAX_WANTS: usize = 10_000;
/// The most bytes of one pkt-line's data.
const MAX_PKT_DATA: usize = 65516;

/// Why a request was refused.
#[derive(Debug, thiserror::Error)]
pub enum ProtocolError {
    #[error("the request is not a sequence of pkt-lines: {0}")]
    Framing(&'static str),
    #[error(
        "the request names no command; this server speaks protocol version 2 (`command=ls-refs`, `command=fetch`)"
    )]
    NoCommand,
    #[error("`{0}` is not a command this server knows: it knows `ls-refs` and `fetch`")]
    UnknownCommand(String),
    #[error("`{0}` is not an object id")]
    BadId(String),
    #[error("the request wants more than {MAX_WANTS} objects")]
    TooManyWants,
    #[error("not our ref {0}")]
    NotOurRef(ObjectId),
    #[error("the repository {0} does not exist")]
    NoRepository(String),
    #[error(transparent)]
    Tree(#[from] TreeError),
    #[error("a pack of the repository cannot be read")]
    Pack(#[from] GitError),
}

/// Returns true if and only if a `Git-Protocol` header's value asks for
/// version 2 (`version=2`, among `:`-separated parameters).
pub fn asks_for_version_2(git_protocol: &str) -> bool {
    git_protocol
        .split(':')
        .any(|parameter| parameter.trim() == "version=2")
}

fn pkt(out: &mut Vec<u8>, data: &[u8]) {
    debug_assert!(data.len() <= MAX_PKT_DATA);
    out.extend_from_slice(format!("{:04x}", data.len() + 4).as_bytes());
    out.extend_from_slice(data);
}

const FLUSH: &[u8] = b"0000";
const DELIM: &[u8] = b"0001";

/// The capability advertisement, the answer to `GET info/refs?service=...`
/// from a client that asks for version 2.
pub fn advertisement() -> Vec<u8> {
    let mut out = Vec::new();
    pkt(&mut out, b"version 2\n");
    pkt(
        &mut out,
        format!("agent=skillpkg-registry/{}\n", env!("CARGO_PKG_VERSION")).as_bytes(),
    );
    pkt(&mut out, b"ls-refs\n");
    // `shallow`: a `--depth` fetch is accepted; every commit here is a
    // root, so there is never a boundary to report.
    pkt(&mut out, b"fetch=shallow\n");
    pkt(&mut out, b"object-format=sha1\n");
    out.extend_from_slice(FLUSH);
    out
}

/// A line of a request.
#[derive(Debug, PartialEq, Eq)]
enum Packet<'a> {
    Data(&'a [u8]),
    Flush,
    Delim,
}

/// Splits a request into its pkt-lines.
fn packets(mut body: &[u8]) -> Result<Vec<Packet<'_>>, ProtocolError> {
    let mut packets = Vec::new();
    while !body.is_empty() {
        let length = body
            .get(..4)
            .and_then(|hex| std::str::from_utf8(hex).ok())
            .and_then(|hex| usize::from_str_radix(hex, 16).ok())
            .ok_or(ProtocolError::Framing("a length is not four hex digits"))?;
        match length {
            0 => packets.push(Packet::Flush),
            1 => packets.push(Packet::Delim),
            // Response-end: a client never sends it, and it ends nothing
            // here.
            2 => {}
            3 => return Err(ProtocolError::Framing("a length of 3 is reserved")),
            _ => {
                let data = body
                    .get(4..length)
                    .ok_or(ProtocolError::Framing("a line is cut short"))?;
                packets.push(Packet::Data(data));
            }
        }
        body = &body[length.max(4)..];
    }
    Ok(packets)
}

/// The arguments of `ls-refs` that change its answer.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct LsRefs {
    symrefs: bool,
    prefixes: Vec<String>,
}

/// The arguments of `fetch` that change its answer.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Fetch {
    wants: Vec<ObjectId>,
    /// The client has nothing more to negotiate: no acknowledgments.
    done: bool,
}

/// A request.
#[derive(Debug, PartialEq, Eq)]
pub enum Command {
    LsRefs(LsRefs),
    Fetch(Fetch),
}

fn text(data: &[u8]) -> &str {
    let data = data.strip_suffix(b"\n").unwrap_or(data);
    std::str::from_utf8(data).unwrap_or("")
}

fn object_id(hex: &str) -> Result<ObjectId, ProtocolError> {
    if hex.len() != 40 {
        return Err(ProtocolError::BadId(hex.to_owned()));
    }
    ObjectId::from_hex(hex.as_bytes()).map_err(|_| ProtocolError::BadId(hex.to_owned()))
}

/// Reads a request: its capabilities (up to a delimiter), then its
/// arguments (up to a flush). Arguments this server does not act on
/// (`thin-pack`, `ofs-delta`, `deepen`, `have`, `filter`...) are read and
/// left: the answer is whole snapshots whatever they say.
pub fn parse(body: &[u8]) -> Result<Command, ProtocolError> {
    let packets = packets(body)?;
    let mut lines = packets.iter();
    let mut command = None;
    for packet in lines.by_ref() {
        match packet {
            Packet::Data(data) => {
                if let Some(name) = text(data).strip_prefix("command=") {
                    command = Some(name.to_owned());
                }
            }
            Packet::Delim | Packet::Flush => break,
        }
    }
    let arguments = lines.map_while(|packet| match packet {
        Packet::Data(data) => Some(text(data)),
        Packet::Delim | Packet::Flush => None,
    });
    match command.as_deref() {
        None => Err(ProtocolError::NoCommand),
        Some("ls-refs") => {
            let mut ls_refs = LsRefs::default();
            for argument in arguments {
                if argument == "symrefs" {
                    ls_refs.symrefs = true;
                } else if let Some(prefix) = argument.strip_prefix("ref-prefix ") {
                    ls_refs.prefixes.push(prefix.to_owned());
                }
            }
            Ok(Command::LsRefs(ls_refs))
        }
        Some("fetch") => {
            let mut fetch = Fetch::default();
            for argument in arguments {
                if let Some(hex) = argument.strip_prefix("want ") {
                    if fetch.wants.len() == MAX_WANTS {
                        return Err(ProtocolError::TooManyWants);
                    }
                    fetch.wants.push(object_id(hex)?);
                } else if argument == "done" {
                    fetch.done = true;
                }
            }
            Ok(Command::Fetch(fetch))
        }
        Some(other) => Err(ProtocolError::UnknownCommand(other.to_owned())),
    }
}

/// Answers `command` from the repository `repo` of `tree`.
pub fn answer(tree: &StaticTree, repo: &Repo, command: &Command) -> Result<Vec<u8>, ProtocolError> {
    let refs = repo
        .read_refs(tree)?
        .ok_or_else(|| ProtocolError::NoRepository(repo.prefix().to_owned()))?;
    let mut out = Vec::new();
    match command {
        Command::LsRefs(ls_refs) => {
            let listed = |name: &str| {
                ls_refs.prefixes.is_empty()
                    || ls_refs
                        .prefixes
                        .iter()
                        .any(|prefix| name.starts_with(prefix))
            };
            if let Some(head) = refs.head().filter(|_| listed("HEAD")) {
                let target = if ls_refs.symrefs {
                    format!(" symref-target:{MAIN}")
                } else {
                    String::new()
                };
                pkt(&mut out, format!("{head} HEAD{target}\n").as_bytes());
            }
            for (name, commit) in refs.refs.iter().filter(|(name, _)| listed(name)) {
                pkt(&mut out, format!("{commit} {name}\n").as_bytes());
            }
            out.extend_from_slice(FLUSH);
        }
        Command::Fetch(fetch) => {
            let pack = pack_of(tree, repo, &fetch.wants)?;
            if !fetch.done {
                // Whatever the client has, the answer is the same whole
                // snapshots: ready at once.
                pkt(&mut out, b"acknowledgments\n");
                pkt(&mut out, b"ready\n");
                out.extend_from_slice(DELIM);
            }
            pkt(&mut out, b"packfile\n");
            for piece in pack.chunks(MAX_PKT_DATA - 1) {
                let mut data = Vec::with_capacity(piece.len() + 1);
                data.push(1);
                data.extend_from_slice(piece);
                pkt(&mut out, &data);
            }
            out.extend_from_slice(FLUSH);
        }
    }
    Ok(out)
}

/// The pack that holds every object of `wants`: a repository's own pack
/// when one holds them all, else the packs that hold them, merged.
fn pack_of(tree: &StaticTree, repo: &Repo, wants: &[ObjectId]) -> Result<Vec<u8>, ProtocolError> {
    let mut missing: Vec<ObjectId> = wants.to_vec();
    missing.sort();
    missing.dedup();
    let mut chosen: Vec<(PackIndex, Vec<u8>)> = Vec::new();
    for checksum in repo.read_packs(tree)? {
        if missing.is_empty() {
            break;
        }
        let Some(index) = repo.read_index(tree, &checksum)? else {
            continue;
        };
        if !missing.iter().any(|want| index.contains(want)) {
            continue;
        }
        let Some((index, pack)) = repo.read_pack(tree, &checksum)? else {
            continue;
        };
        missing.retain(|want| !index.contains(want));
        chosen.push((index, pack));
    }
    if let Some(want) = missing.first() {
        return Err(ProtocolError::NotOurRef(*want));
    }
    match chosen.as_slice() {
        [(_, pack)] => Ok(pack.clone()),
        _ => {
            let packs: Vec<(&PackIndex, &[u8])> = chosen
                .iter()
                .map(|(index, pack)| (index, pack.as_slice()))
                .collect();
            Ok(merge_packs(&packs)?)
        }
    }
}

/// An error as the protocol sends one (`ERR <message>`), which git shows
/// as `remote error: <message>`.
pub fn error_packet(message: &str) -> Vec<u8> {
    let mut out = Vec::new();
    let mut line = format!("ERR {message}\n");
    if line.len() > MAX_PKT_DATA {
        line.truncate(MAX_PKT_DATA - 1);
        line.push('\n');
    }
    pkt(&mut out, line.as_bytes());
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::super::git::{File, Stamp, pack_snapshot};
    use super::*;

    fn request(capabilities: &[&str], arguments: &[&str]) -> Vec<u8> {
        let mut out = Vec::new();
        for line in capabilities {
            pkt(&mut out, format!("{line}\n").as_bytes());
        }
        out.extend_from_slice(DELIM);
        for line in arguments {
            pkt(&mut out, format!("{line}\n").as_bytes());
        }
        out.extend_from_slice(FLUSH);
        out
    }

    #[test]
    fn requests_parse_and_malformed_ones_are_refused() {
        let ls = request(
            &["command=ls-refs", "agent=git/2.47.3", "object-format=sha1"],
            &[
                "peel",
                "symrefs",
                "ref-prefix HEAD",
                "ref-prefix refs/heads/",
            ],
        );
        assert_eq!(
            parse(&ls).unwrap(),
            Command::LsRefs(LsRefs {
                symrefs: true,
                prefixes: vec!["HEAD".into(), "refs/heads/".into()],
            })
        );
        let want = "1111111111111111111111111111111111111111";
        let fetch = request(
            &["command=fetch"],
            &["thin-pack", "deepen 1", &format!("want {want}"), "done"],
        );
        let Command::Fetch(fetch) = parse(&fetch).unwrap() else {
            panic!("a fetch");
        };
        assert!(fetch.done);
        assert_eq!(fetch.wants, [ObjectId::from_hex(want.as_bytes()).unwrap()]);

        assert!(matches!(parse(b"0009abc"), Err(ProtocolError::Framing(_))));
        assert!(matches!(parse(b"zzzz"), Err(ProtocolError::Framing(_))));
        assert!(matches!(parse(b"0003"), Err(ProtocolError::Framing(_))));
        assert!(matches!(
            parse(&request(&[], &[])),
            Err(ProtocolError::NoCommand)
        ));
        assert!(matches!(
            parse(&request(&["command=push"], &[])),
            Err(ProtocolError::UnknownCommand(_))
        ));
        assert!(matches!(
            parse(&request(&["command=fetch"], &["want ../../etc/passwd"])),
            Err(ProtocolError::BadId(_))
        ));
    }

    #[test]
    fn a_fetch_is_answered_with_the_snapshot_that_holds_its_want() {
        let temp = tempfile::tempdir().unwrap();
        let tree = StaticTree::new(temp.path());
        let repo = Repo::plugin(&"pdf".parse().unwrap());
        let stamp = Stamp {
            name: "n".into(),
            email: "e@x".into(),
            seconds: 0,
        };
        let file = |text: &str| File {
            path: "a".into(),
            executable: false,
            bytes: text.as_bytes().to_vec(),
        };
        let one = pack_snapshot(&[file("1")], "1\n", &stamp).unwrap();
        let two = pack_snapshot(&[file("2")], "2\n", &stamp).unwrap();
        repo.write_pack(&tree, &one).unwrap();
        repo.write_pack(&tree, &two).unwrap();
        let tags = BTreeMap::from([("refs/tags/v1.0.0".to_owned(), one.commit)]);
        repo.write_refs(
            &tree,
            Some(two.commit),
            &tags,
            &[one.checksum, two.checksum],
        )
        .unwrap();

        let fetch = |wants: Vec<ObjectId>, done| Command::Fetch(Fetch { wants, done });
        let answer_one = answer(&tree, &repo, &fetch(vec![one.commit], true)).unwrap();
        assert!(answer_one.starts_with(b"000dpackfile\n"));
        assert!(answer_one.ends_with(FLUSH));
        assert!(
            answer_one
                .windows(one.pack.len())
                .any(|window| window == one.pack),
            "the pack is sent as it is"
        );
        let negotiating = answer(&tree, &repo, &fetch(vec![two.commit], false)).unwrap();
        assert!(negotiating.starts_with(b"0014acknowledgments\n000aready\n0001000dpackfile\n"));
        // Both: one merged pack.
        let both = pack_of(&tree, &repo, &[one.commit, two.commit]).unwrap();
        assert_eq!(
            &both[8..12],
            &(3_u32 + 3).to_be_bytes(),
            "a commit, a tree, a blob each"
        );

        let stranger = ObjectId::from_hex(b"3333333333333333333333333333333333333333").unwrap();
        assert!(matches!(
            answer(&tree, &repo, &fetch(vec![stranger], true)),
            Err(ProtocolError::NotOurRef(_))
        ));
        let none = Repo::plugin(&"csv".parse().unwrap());
        assert!(matches!(
            answer(&tree, &none, &fetch(vec![one.commit], true)),
            Err(ProtocolError::NoRepository(_))
        ));

        let listed = answer(
            &tree,
            &repo,
            &Command::LsRefs(LsRefs {
                symrefs: true,
                prefixes: vec!["HEAD".into()],
            }),
        )
        .unwrap();
        let line = format!("{} HEAD symref-target:refs/heads/main\n", two.commit);
        assert_eq!(
            String::from_utf8(listed).unwrap(),
            format!("{:04x}{line}0000", line.len() + 4)
        );
    }
}
