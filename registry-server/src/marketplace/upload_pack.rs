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
//!
//! Everything in a request comes from anyone: its lines are read with
//! their lengths checked, must be UTF-8, and an error repeats at most a
//! short start of one. An answer is handed on a piece at a time
//! ([`answer`]), so a fetch of many versions holds one pack at once.

use skillpkg_index::registry::tree::{StaticTree, TreeError};

use super::git::{GitError, MergedPack, ObjectId, PackIndex};
use super::repo::{MAIN, Repo};

/// The content type of the capability advertisement.
pub const ADVERTISEMENT_TYPE: &str = "application/x-git-upload-pack-advertisement";
/// The content type of an answer to a command.
pub const RESULT_TYPE: &str = "application/x-git-upload-pack-result";
/// The largest request body read (decompressed): ls-refs and fetch
/// requests are a few hundred bytes; many `have` lines fit too.
pub const MAX_REQUEST_BYTES: usize = 1024 * 1024;
/// The most bytes of packs one fetch is answered from. A clone wants
/// every tag, so a fetch of a skill with many large versions reads all
/// their packs; past this, the answer stops with an error that says to
/// fetch fewer versions at once (a `--depth 1` clone wants one).
pub const MAX_FETCH_BYTES: usize = 256 * 1024 * 1024;
/// The most `want` lines a fetch may have.
const MAX_WANTS: usize = 10_000;
/// The most `ref-prefix` lines an `ls-refs` filters by; past this it
/// lists every ref, as git's own server does past 65536 (a prefix only
/// narrows the answer). git sends a few, one for each refspec.
const MAX_REF_PREFIXES: usize = 256;
/// The most bytes of one pkt-line's data.
const MAX_PKT_DATA: usize = 65516;
/// The most bytes of a client's text an error repeats: enough to
/// recognise it, never the whole of a line made to be long.
const MAX_ECHO_BYTES: usize = 64;

/// Why a request was refused.
#[derive(Debug, thiserror::Error)]
pub enum ProtocolError {
    #[error("the request is not a sequence of pkt-lines: {0}")]
    Framing(&'static str),
    #[error("a line of the request is not UTF-8")]
    NotText,
    #[error(
        "the request names no command; this server speaks protocol version 2 (`command=ls-refs`, `command=fetch`)"
    )]
    NoCommand,
    #[error("`{0}` is not a command this server knows: it knows `ls-refs` and `fetch`")]
    UnknownCommand(String),
    #[error("`{0}` is not an object id")]
    BadId(String),
    #[error("the fetch wants nothing: name at least one object with `want <id>`")]
    NoWants,
    #[error("the request wants more than {MAX_WANTS} objects")]
    TooManyWants,
    #[error("not our ref {0}")]
    NotOurRef(ObjectId),
    #[error(
        "the fetch is over the limit of {0} bytes this server sends in one answer: fetch fewer versions at once (`git clone --depth 1`, or one tag), or clone over git's dumb protocol (`git -c protocol.version=0 clone`)"
    )]
    TooLarge(usize),
    #[error("the repository {0} does not exist")]
    NoRepository(String),
    /// The client stopped reading the answer.
    #[error("the client went away")]
    Gone,
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

/// The pkt-lines of a request, read one at a time. A malformed one ends
/// them with an error.
struct Packets<'a> {
    rest: &'a [u8],
}

impl<'a> Packets<'a> {
    fn read(&mut self) -> Result<Packet<'a>, ProtocolError> {
        let hex = self
            .rest
            .get(..4)
            .ok_or(ProtocolError::Framing("a length is cut short"))?;
        // Four hex digits, nothing else: `from_str_radix` alone would
        // take a sign (`+00a`).
        if !hex.iter().all(u8::is_ascii_hexdigit) {
            return Err(ProtocolError::Framing("a length is not four hex digits"));
        }
        let length = hex.iter().fold(0_usize, |length, digit| {
            length * 16 + char::from(*digit).to_digit(16).unwrap_or(0) as usize
        });
        let packet = match length {
            0 => Packet::Flush,
            1 => Packet::Delim,
            2 => {
                return Err(ProtocolError::Framing(
                    "a response-end packet (0002) is never part of a request",
                ));
            }
            3 => return Err(ProtocolError::Framing("a length of 3 is reserved")),
            _ if length > MAX_PKT_DATA + 4 => {
                return Err(ProtocolError::Framing(
                    "a line is longer than the 65520 bytes a pkt-line may have",
                ));
            }
            _ => Packet::Data(
                self.rest
                    .get(4..length)
                    .ok_or(ProtocolError::Framing("a line is cut short"))?,
            ),
        };
        self.rest = &self.rest[length.max(4)..];
        Ok(packet)
    }
}

impl<'a> Iterator for Packets<'a> {
    type Item = Result<Packet<'a>, ProtocolError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        let packet = self.read();
        if packet.is_err() {
            self.rest = &[];
        }
        Some(packet)
    }
}

/// The arguments of `ls-refs` that change its answer.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct LsRefs {
    symrefs: bool,
    /// The prefixes a ref must start with one of to be listed; none:
    /// every ref.
    prefixes: Vec<String>,
}

/// The arguments of `fetch` that change its answer.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Fetch {
    /// At least one.
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

/// Returns the text of a line, without its newline.
fn text(data: &[u8]) -> Result<&str, ProtocolError> {
    let data = data.strip_suffix(b"\n").unwrap_or(data);
    std::str::from_utf8(data).map_err(|_| ProtocolError::NotText)
}

/// Returns the start of `text` that an error may repeat: at most
/// [`MAX_ECHO_BYTES`], cut between characters, with `…` when cut.
fn shortened(text: &str) -> String {
    if text.len() <= MAX_ECHO_BYTES {
        return text.to_owned();
    }
    format!("{}…", prefix(text, MAX_ECHO_BYTES))
}

/// Returns the longest start of `text` of at most `most` bytes that ends
/// between characters (`str::floor_char_boundary`, newer than this
/// crate's minimum Rust).
fn prefix(text: &str, most: usize) -> &str {
    let mut end = most.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

fn object_id(hex: &str) -> Result<ObjectId, ProtocolError> {
    let bad = || ProtocolError::BadId(shortened(hex));
    if hex.len() != 40 {
        return Err(bad());
    }
    ObjectId::from_hex(hex.as_bytes()).map_err(|_| bad())
}

/// Returns the text of each line of `packets` up to the next delimiter or
/// flush.
fn section<'a, 'b>(
    packets: &'b mut Packets<'a>,
) -> impl Iterator<Item = Result<&'a str, ProtocolError>> + use<'a, 'b> {
    packets.map_while(|packet| match packet {
        Ok(Packet::Data(data)) => Some(text(data)),
        Ok(Packet::Delim | Packet::Flush) => None,
        Err(error) => Some(Err(error)),
    })
}

/// Reads a request: its capabilities (up to a delimiter), then its
/// arguments (up to a flush). Arguments this server does not act on
/// (`thin-pack`, `ofs-delta`, `deepen`, `have`, `filter`...) are read and
/// left: the answer is whole snapshots whatever they say. Every line must
/// be UTF-8: a line that is not could be a `want` this server would
/// otherwise leave out unseen.
pub fn parse(body: &[u8]) -> Result<Command, ProtocolError> {
    let mut packets = Packets { rest: body };
    let mut command = None;
    for line in section(&mut packets) {
        if let Some(name) = line?.strip_prefix("command=") {
            command = Some(name);
        }
    }
    let arguments = section(&mut packets);
    match command {
        None => Err(ProtocolError::NoCommand),
        Some("ls-refs") => {
            let mut ls_refs = LsRefs::default();
            let mut prefixes = 0_usize;
            for argument in arguments {
                let argument = argument?;
                if argument == "symrefs" {
                    ls_refs.symrefs = true;
                } else if let Some(prefix) = argument.strip_prefix("ref-prefix ") {
                    prefixes += 1;
                    if prefixes <= MAX_REF_PREFIXES {
                        ls_refs.prefixes.push(prefix.to_owned());
                    }
                }
            }
            if prefixes > MAX_REF_PREFIXES {
                ls_refs.prefixes.clear();
            }
            Ok(Command::LsRefs(ls_refs))
        }
        Some("fetch") => {
            let mut fetch = Fetch::default();
            for argument in arguments {
                let argument = argument?;
                if let Some(hex) = argument.strip_prefix("want ") {
                    if fetch.wants.len() == MAX_WANTS {
                        return Err(ProtocolError::TooManyWants);
                    }
                    fetch.wants.push(object_id(hex)?);
                } else if argument == "done" {
                    fetch.done = true;
                }
            }
            if fetch.wants.is_empty() {
                return Err(ProtocolError::NoWants);
            }
            Ok(Command::Fetch(fetch))
        }
        Some(other) => Err(ProtocolError::UnknownCommand(shortened(other))),
    }
}

/// Where an answer goes, a piece at a time; returns false once the client
/// is gone.
pub type Sink<'a> = dyn FnMut(Vec<u8>) -> bool + 'a;

/// Answers `command` from the repository `repo` of `tree`, a piece at a
/// time to `send`, from at most `max_fetch_bytes` of packs. Nothing is
/// sent until the answer is known to start well (the repository and the
/// packs of every want are there): an error returned after a piece was
/// sent leaves the answer cut, for the caller to end with
/// [`band_error`].
pub fn answer(
    tree: &StaticTree,
    repo: &Repo,
    command: &Command,
    max_fetch_bytes: usize,
    send: &mut Sink<'_>,
) -> Result<(), ProtocolError> {
    let refs = repo
        .read_refs(tree)?
        .ok_or_else(|| ProtocolError::NoRepository(repo.prefix().to_owned()))?;
    match command {
        Command::LsRefs(ls_refs) => {
            let mut out = Vec::new();
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
            sent(send, out)
        }
        Command::Fetch(fetch) => {
            let mut chosen = packs_of(tree, repo, &fetch.wants)?.into_iter();
            let Some((checksum, index)) = chosen.next() else {
                return Err(ProtocolError::NoWants);
            };
            let mut budget = Budget {
                limit: max_fetch_bytes,
                left: max_fetch_bytes,
            };
            let first = budget.read_pack(tree, repo, &checksum)?;
            let mut out = Vec::new();
            if !fetch.done {
                // Whatever the client has, the answer is the same whole
                // snapshots: ready at once.
                pkt(&mut out, b"acknowledgments\n");
                pkt(&mut out, b"ready\n");
                out.extend_from_slice(DELIM);
            }
            pkt(&mut out, b"packfile\n");
            sent(send, out)?;
            let mut band = SideBand::new(send);
            let rest: Vec<(ObjectId, PackIndex)> = chosen.collect();
            if rest.is_empty() {
                // The repository's own pack, as it is.
                band.write(&first)?;
            } else {
                let indexes = std::iter::once(&index).chain(rest.iter().map(|(_, index)| index));
                let (mut merged, header) = MergedPack::start(indexes)?;
                band.write(&header)?;
                for object in merged.take(&index, &first)? {
                    band.write(object)?;
                }
                drop(first);
                for (checksum, index) in &rest {
                    let pack = budget.read_pack(tree, repo, checksum)?;
                    for object in merged.take(index, &pack)? {
                        band.write(object)?;
                    }
                }
                band.write(merged.finish()?.as_bytes())?;
            }
            band.flush()?;
            sent(send, FLUSH.to_vec())
        }
    }
}

fn sent(send: &mut Sink<'_>, piece: Vec<u8>) -> Result<(), ProtocolError> {
    if send(piece) {
        Ok(())
    } else {
        Err(ProtocolError::Gone)
    }
}

/// The bytes of packs a fetch may still read.
struct Budget {
    /// All it may read.
    limit: usize,
    left: usize,
}

impl Budget {
    /// Reads the pack `checksum` of `repo`, if it fits.
    fn read_pack(
        &mut self,
        tree: &StaticTree,
        repo: &Repo,
        checksum: &ObjectId,
    ) -> Result<Vec<u8>, ProtocolError> {
        let pack = repo
            .read_pack(tree, checksum)?
            // Listed, and its index read a moment ago: removed since.
            .ok_or(ProtocolError::Pack(GitError::BadPack(
                "it is listed but gone",
            )))?;
        self.left = self
            .left
            .checked_sub(pack.len())
            .ok_or(ProtocolError::TooLarge(self.limit))?;
        Ok(pack)
    }
}

/// The packs that hold every object of `wants`, by checksum, with their
/// indexes: a repository's own pack when one holds them all, else the
/// packs that hold them. Reads indexes only.
fn packs_of(
    tree: &StaticTree,
    repo: &Repo,
    wants: &[ObjectId],
) -> Result<Vec<(ObjectId, PackIndex)>, ProtocolError> {
    let mut missing: Vec<ObjectId> = wants.to_vec();
    missing.sort();
    missing.dedup();
    let mut chosen = Vec::new();
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
        missing.retain(|want| !index.contains(want));
        chosen.push((checksum, index));
    }
    if let Some(want) = missing.first() {
        return Err(ProtocolError::NotOurRef(*want));
    }
    Ok(chosen)
}

/// The pack, on the side band's channel 1: pkt-lines of a channel byte
/// and up to 65515 bytes of the pack each, sent as each fills.
struct SideBand<'a, 'b> {
    line: Vec<u8>,
    send: &'a mut Sink<'b>,
}

impl<'a, 'b> SideBand<'a, 'b> {
    const CHANNEL_DATA: u8 = 1;

    fn new(send: &'a mut Sink<'b>) -> Self {
        Self {
            line: Vec::new(),
            send,
        }
    }

    fn write(&mut self, mut bytes: &[u8]) -> Result<(), ProtocolError> {
        while !bytes.is_empty() {
            if self.line.is_empty() {
                self.line.reserve(4 + MAX_PKT_DATA);
                self.line.extend_from_slice(b"0000");
                self.line.push(Self::CHANNEL_DATA);
            }
            let room = 4 + MAX_PKT_DATA - self.line.len();
            let (now, later) = bytes.split_at(room.min(bytes.len()));
            self.line.extend_from_slice(now);
            bytes = later;
            if self.line.len() == 4 + MAX_PKT_DATA {
                self.flush()?;
            }
        }
        Ok(())
    }

    /// Sends the line being filled, if any.
    fn flush(&mut self) -> Result<(), ProtocolError> {
        if self.line.is_empty() {
            return Ok(());
        }
        let length = format!("{:04x}", self.line.len());
        self.line[..4].copy_from_slice(length.as_bytes());
        sent(self.send, std::mem::take(&mut self.line))
    }
}

/// Returns `message` cut at a character boundary to fit a pkt-line after
/// `room` bytes of framing.
fn fitted(message: &str, room: usize) -> &str {
    prefix(message, MAX_PKT_DATA - room)
}

/// An error as the protocol sends one (`ERR <message>`), which git shows
/// as `remote error: <message>`.
pub fn error_packet(message: &str) -> Vec<u8> {
    let mut out = Vec::new();
    let line = format!("ERR {}\n", fitted(message, "ERR \n".len()));
    pkt(&mut out, line.as_bytes());
    out
}

/// An error in the middle of a pack, on the side band's error channel
/// (3), which git shows as `remote error: <message>` and stops at.
pub fn band_error(message: &str) -> Vec<u8> {
    let mut out = Vec::new();
    let mut data = vec![3];
    data.extend_from_slice(fitted(message, 2).as_bytes());
    data.push(b'\n');
    pkt(&mut out, &data);
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

    /// Returns the whole answer to `command`, from at most
    /// `max_fetch_bytes` of packs.
    fn answered(
        tree: &StaticTree,
        repo: &Repo,
        command: &Command,
        max_fetch_bytes: usize,
    ) -> Result<Vec<u8>, ProtocolError> {
        let mut out = Vec::new();
        answer(tree, repo, command, max_fetch_bytes, &mut |piece| {
            out.extend_from_slice(&piece);
            true
        })?;
        Ok(out)
    }

    /// Returns the pack of an answer to a fetch: the data of its side
    /// band's channel 1, after `packfile`.
    fn pack_in(answer: &[u8]) -> Vec<u8> {
        let mut pack = Vec::new();
        let mut in_pack = false;
        for packet in (Packets { rest: answer }) {
            if let Packet::Data(data) = packet.unwrap() {
                if in_pack {
                    assert_eq!(data[0], 1, "only pack data on the side band");
                    pack.extend_from_slice(&data[1..]);
                }
                in_pack |= data == b"packfile\n";
            }
        }
        pack
    }

    /// Asserts that `bytes` is one pkt-line of at most `most` bytes that
    /// starts with `start`.
    fn assert_one_short_line(bytes: &[u8], start: &[u8], most: usize) {
        let mut packets = Packets { rest: bytes };
        let Some(Ok(Packet::Data(data))) = packets.next() else {
            panic!("not a pkt-line: {bytes:?}");
        };
        assert!(packets.next().is_none(), "one line");
        assert!(data.starts_with(start), "{data:?}");
        assert!(bytes.len() <= most, "{} bytes", bytes.len());
        assert!(std::str::from_utf8(data).is_ok(), "cut between characters");
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
        assert!(matches!(parse(b"00"), Err(ProtocolError::Framing(_))));
        assert!(matches!(parse(b""), Err(ProtocolError::NoCommand)));
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
    fn an_error_echoing_a_long_multibyte_command_does_not_panic() {
        // 2-byte characters, as many as a line holds: echoed whole, the
        // error is past a pkt-line's length, and a cut at a byte offset
        // lands inside one.
        let name = "é".repeat(32_700);
        let error = parse(&request(&[&format!("command={name}")], &[])).unwrap_err();
        let ProtocolError::UnknownCommand(echoed) = &error else {
            panic!("{error:?}");
        };
        assert!(echoed.len() <= MAX_ECHO_BYTES + '…'.len_utf8(), "{echoed}");
        assert_one_short_line(&error_packet(&error.to_string()), b"ERR `\xc3\xa9", 200);
        // However long the message, the packet is one line, cut between
        // characters.
        for filler in ["é", "€", "😀", "a"] {
            let message = filler.repeat(70_000);
            assert_one_short_line(&error_packet(&message), b"ERR ", 4 + MAX_PKT_DATA);
            assert_one_short_line(&band_error(&message), b"\x03", 4 + MAX_PKT_DATA);
        }
    }

    #[test]
    fn an_error_echoing_a_long_multibyte_want_does_not_panic() {
        let want = format!("want {}", "é".repeat(30_000));
        let error = parse(&request(&["command=fetch"], &[&want])).unwrap_err();
        let ProtocolError::BadId(echoed) = &error else {
            panic!("{error:?}");
        };
        assert!(echoed.len() <= MAX_ECHO_BYTES + '…'.len_utf8(), "{echoed}");
        assert_one_short_line(&error_packet(&error.to_string()), b"ERR ", 200);
    }

    #[test]
    fn a_length_past_65520_is_refused() {
        let mut body = b"ffff".to_vec();
        body.resize(0xffff, b'a');
        assert!(matches!(parse(&body), Err(ProtocolError::Framing(_))));
        // The longest line there may be is read.
        let mut body = b"fff0command=ls-refs".to_vec();
        body.resize(0xfff0, b'a');
        body.extend_from_slice(b"0000");
        assert!(matches!(
            parse(&body),
            Err(ProtocolError::UnknownCommand(_))
        ));
    }

    #[test]
    fn a_length_with_a_sign_or_spaces_is_refused() {
        for body in [
            &b"+00acommand=ls-refs"[..],
            b"+0140000",
            b" 00a0000",
            b"00a 0000",
            b"-0010000",
        ] {
            assert!(
                matches!(parse(body), Err(ProtocolError::Framing(_))),
                "{body:?}"
            );
        }
    }

    #[test]
    fn a_response_end_packet_in_a_request_is_refused() {
        let mut body = Vec::new();
        pkt(&mut body, b"command=ls-refs\n");
        body.extend_from_slice(b"0002");
        body.extend_from_slice(DELIM);
        body.extend_from_slice(FLUSH);
        assert!(matches!(parse(&body), Err(ProtocolError::Framing(_))));
    }

    #[test]
    fn a_want_that_is_not_utf8_is_refused_not_dropped() {
        let one = "1".repeat(40);
        let mut body = Vec::new();
        pkt(&mut body, b"command=fetch\n");
        body.extend_from_slice(DELIM);
        pkt(&mut body, format!("want {one}\n").as_bytes());
        pkt(
            &mut body,
            b"want \xff\xfe1111111111111111111111111111111111111\n",
        );
        body.extend_from_slice(FLUSH);
        assert!(matches!(parse(&body), Err(ProtocolError::NotText)));
        let mut body = Vec::new();
        pkt(&mut body, b"command=\xc3(\n");
        body.extend_from_slice(FLUSH);
        assert!(matches!(parse(&body), Err(ProtocolError::NotText)));
    }

    #[test]
    fn a_fetch_that_wants_nothing_is_refused() {
        assert!(matches!(
            parse(&request(&["command=fetch"], &["done"])),
            Err(ProtocolError::NoWants)
        ));
        assert!(matches!(
            parse(&request(&["command=fetch"], &[])),
            Err(ProtocolError::NoWants)
        ));
    }

    #[test]
    fn a_fetch_of_too_many_wants_is_refused() {
        let lines: Vec<String> = (0..=MAX_WANTS)
            .map(|number| format!("want {number:040x}"))
            .collect();
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        assert!(matches!(
            parse(&request(&["command=fetch"], &lines[..MAX_WANTS])),
            Ok(Command::Fetch(_))
        ));
        let body = request(&["command=fetch"], &lines);
        assert!(body.len() <= MAX_REQUEST_BYTES, "within the request limit");
        assert!(matches!(parse(&body), Err(ProtocolError::TooManyWants)));
    }

    #[test]
    fn too_many_ref_prefixes_list_every_ref() {
        let lines: Vec<String> = (0..50_000)
            .map(|number| format!("ref-prefix refs/tags/v{number}"))
            .collect();
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        let Command::LsRefs(ls_refs) = parse(&request(&["command=ls-refs"], &lines)).unwrap()
        else {
            panic!("ls-refs");
        };
        assert_eq!(ls_refs.prefixes, Vec::<String>::new());
        let Command::LsRefs(ls_refs) =
            parse(&request(&["command=ls-refs"], &lines[..MAX_REF_PREFIXES])).unwrap()
        else {
            panic!("ls-refs");
        };
        assert_eq!(ls_refs.prefixes.len(), MAX_REF_PREFIXES);
    }

    /// A repository `pdf` of two versions, each its own pack, in a
    /// temporary folder (bind `_temp` to keep it).
    struct TwoVersions {
        _temp: tempfile::TempDir,
        tree: StaticTree,
        repo: Repo,
        one: super::super::git::Pack,
        two: super::super::git::Pack,
    }

    fn two_versions() -> TwoVersions {
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
        TwoVersions {
            _temp: temp,
            tree,
            repo,
            one,
            two,
        }
    }

    fn fetch(wants: Vec<ObjectId>, done: bool) -> Command {
        Command::Fetch(Fetch { wants, done })
    }

    #[test]
    fn a_fetch_is_answered_with_the_snapshot_that_holds_its_want() {
        let TwoVersions {
            _temp,
            tree,
            repo,
            one,
            two,
        } = two_versions();
        let answer_one = answered(
            &tree,
            &repo,
            &fetch(vec![one.commit], true),
            MAX_FETCH_BYTES,
        )
        .unwrap();
        assert!(answer_one.starts_with(b"000dpackfile\n"));
        assert!(answer_one.ends_with(FLUSH));
        assert_eq!(pack_in(&answer_one), one.pack, "the pack is sent as it is");
        let negotiating = answered(
            &tree,
            &repo,
            &fetch(vec![two.commit], false),
            MAX_FETCH_BYTES,
        )
        .unwrap();
        assert!(negotiating.starts_with(b"0014acknowledgments\n000aready\n0001000dpackfile\n"));

        let stranger = ObjectId::from_hex(b"3333333333333333333333333333333333333333").unwrap();
        assert!(matches!(
            answered(&tree, &repo, &fetch(vec![stranger], true), MAX_FETCH_BYTES),
            Err(ProtocolError::NotOurRef(_))
        ));
        let none = Repo::plugin(&"csv".parse().unwrap());
        assert!(matches!(
            answered(
                &tree,
                &none,
                &fetch(vec![one.commit], true),
                MAX_FETCH_BYTES
            ),
            Err(ProtocolError::NoRepository(_))
        ));

        let listed = answered(
            &tree,
            &repo,
            &Command::LsRefs(LsRefs {
                symrefs: true,
                prefixes: vec!["HEAD".into()],
            }),
            MAX_FETCH_BYTES,
        )
        .unwrap();
        let line = format!("{} HEAD symref-target:refs/heads/main\n", two.commit);
        assert_eq!(
            String::from_utf8(listed).unwrap(),
            format!("{:04x}{line}0000", line.len() + 4)
        );
    }

    #[test]
    fn a_fetch_of_two_snapshots_is_one_pack_git_accepts() {
        let TwoVersions {
            _temp: temp,
            tree,
            repo,
            one,
            two,
        } = two_versions();
        let both = answered(
            &tree,
            &repo,
            &fetch(vec![one.commit, two.commit, one.commit], true),
            MAX_FETCH_BYTES,
        )
        .unwrap();
        let pack = pack_in(&both);
        assert_eq!(
            &pack[8..12],
            &(3_u32 + 3).to_be_bytes(),
            "a commit, a tree, a blob each"
        );
        let path = temp.path().join("merged.pack");
        fs_err::write(&path, &pack).unwrap();
        let checked = std::process::Command::new("git")
            .args(["index-pack", "--strict"])
            .arg(&path)
            .output()
            .expect("git runs");
        assert!(
            checked.status.success(),
            "{}",
            String::from_utf8_lossy(&checked.stderr)
        );
    }

    #[test]
    fn a_fetch_over_the_byte_limit_is_refused() {
        let TwoVersions {
            _temp,
            tree,
            repo,
            one,
            two,
        } = two_versions();
        // Before anything is sent: the first pack alone is over.
        let mut pieces = 0;
        let refused = answer(
            &tree,
            &repo,
            &fetch(vec![one.commit], true),
            one.pack.len() - 1,
            &mut |_| {
                pieces += 1;
                true
            },
        );
        assert!(matches!(refused, Err(ProtocolError::TooLarge(_))));
        assert_eq!(pieces, 0);
        // Within: whole.
        let whole = answered(&tree, &repo, &fetch(vec![one.commit], true), one.pack.len());
        assert_eq!(pack_in(&whole.unwrap()), one.pack);
        // Past it in the second pack: cut, for the caller to end.
        let limit = one.pack.len() + two.pack.len() - 1;
        let cut = answered(
            &tree,
            &repo,
            &fetch(vec![one.commit, two.commit], true),
            limit,
        );
        let error = cut.unwrap_err();
        assert!(matches!(error, ProtocolError::TooLarge(_)));
        assert!(error.to_string().contains(&limit.to_string()), "{error}");
    }

    #[test]
    fn a_client_that_goes_away_stops_the_answer() {
        let TwoVersions {
            _temp,
            tree,
            repo,
            one,
            ..
        } = two_versions();
        let mut pieces = 0;
        let stopped = answer(
            &tree,
            &repo,
            &fetch(vec![one.commit], true),
            MAX_FETCH_BYTES,
            &mut |_| {
                pieces += 1;
                false
            },
        );
        assert!(matches!(stopped, Err(ProtocolError::Gone)));
        assert_eq!(pieces, 1);
    }
}
