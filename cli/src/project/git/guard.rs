//! A guard between a git server and gix, so that what a fetch costs stays
//! bounded whatever the repository holds.
//!
//! gix writes a received pack to disk and indexes it: it inflates every
//! entry once to find where the next one starts, then inflates every
//! object whole (and applies every delta onto its base) in memory to hash
//! it. Object sizes are only known from the pack itself, so a 1 GiB blob of
//! zeros, which travels as a 1 MB pack, cost 1,040 MiB of memory and 2.7 s
//! (8 GiB: 8,213 MiB and 25 s; bench/README.md, "git_fetch.py") before
//! skillpkg could read its size and refuse it. The guard wraps the
//! transport and reads every byte of the pack before gix sees it,
//! refusing, at the entry's header and so before a byte of it is inflated:
//!
//! - an object larger than a skill may be (8 MiB): a blob, a tree, a commit
//!   or a tag by its declared size, a delta by the size of its result (the
//!   second number of the delta's own header, its first inflated bytes) and
//!   by the size of its instructions;
//! - a pack that declares more entries than [`FetchLimits::entries`] (gix
//!   reserves memory for the declared count);
//! - a pack larger than [`FetchLimits::pack_bytes`], and one whose objects
//!   add up to more than [`FetchLimits::inflated_bytes`] once inflated (the
//!   work of indexing it, and the most its deltas' bases can hold at once);
//! - an entry that is not what its header says (an invalid zlib stream, more
//!   or fewer bytes than declared), which gix would refuse later, at a cost;
//! - more than [`FetchLimits::text_bytes`] of protocol lines (references
//!   advertised, acknowledgements), which gix keeps in memory.
//!
//! To find where an entry ends, the guard inflates it too, into a small
//! buffer it overwrites, so it holds a few tens of kilobytes whatever the
//! pack. The pack's layout (gitformat-pack(5)):
//!
//! ```text
//! "PACK" | version (u32, big-endian: 2 or 3) | entry count (u32, big-endian)
//! entries, each:
//!   type (3 bits: 1 commit, 2 tree, 3 blob, 4 tag, 6 offset delta, 7 ref delta)
//!   and inflated size (4 bits, then 7 bits a byte while the top bit is set)
//!   | offset delta: its base's distance back (7 bits a byte, top bit: more)
//!   | ref delta: its base's object id (20 bytes for SHA-1)
//!   | a zlib stream of `size` bytes; a delta's starts with two numbers of
//!     7 bits a byte (low bits first): its base's size, then its result's
//! trailer: the hash of all the above
//! ```
//!
//! gix reads protocol lines through `readline` and the pack through
//! `BufRead`, so the guard counts the first and parses the second; a
//! `BufRead` stream that does not start with `PACK` is refused. It also
//! keeps the server's last progress and error messages: a git server that
//! stops on a corrupt repository says so there, and nowhere else.

use std::collections::VecDeque;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use gix::protocol::transport::client::blocking_io::{
    ExtendedBufRead, HandleProgress, ReadlineBufRead, RequestWriter, SetServiceResponse, Transport,
};
use gix::protocol::transport::client::{self, MessageKind, TransportWithoutIO, WriteMode};
use skillpkg_index::archive::human_bytes;

/// What a fetch may cost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct FetchLimits {
    /// The most one object may hold, inflated (a delta: its result, and its
    /// instructions).
    pub(super) object_bytes: u64,
    /// The most the pack may hold, as sent.
    pub(super) pack_bytes: u64,
    /// The most the pack's entries may add up to, inflated, and its deltas'
    /// results with them.
    pub(super) inflated_bytes: u64,
    /// The most entries a pack may declare.
    pub(super) entries: u32,
    /// The most protocol lines may add up to, in bytes.
    pub(super) text_bytes: u64,
}

/// Why a fetch was stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Refusal {
    /// An object larger than [`FetchLimits::object_bytes`]: `what` says
    /// which (`a blob`, `a delta's result`).
    ObjectTooLarge { what: &'static str, size: u64 },
    /// A pack declaring more entries than [`FetchLimits::entries`].
    TooManyEntries { declared: u32 },
    /// A pack larger than [`FetchLimits::pack_bytes`].
    PackTooLarge,
    /// Entries adding up to more than [`FetchLimits::inflated_bytes`].
    TooMuchInflated,
    /// Protocol lines adding up to more than [`FetchLimits::text_bytes`].
    TooMuchText,
    /// A pack that is not what its own headers say.
    Damaged(&'static str),
}

impl Refusal {
    /// What the repository holds, for a sentence that starts with the
    /// repository's name: "the git repository `X` ...".
    pub(super) fn describe(&self, limits: &FetchLimits) -> String {
        match self {
            Refusal::ObjectTooLarge { what, size } => format!(
                "holds {what} of {} ({size} bytes), more than the {} a skill may hold",
                human_bytes(*size),
                human_bytes(limits.object_bytes)
            ),
            Refusal::TooManyEntries { declared } => format!(
                "sent a pack of {declared} objects, more than the {} skillpkg fetches",
                limits.entries
            ),
            Refusal::PackTooLarge => format!(
                "sent a pack larger than the {} skillpkg fetches",
                human_bytes(limits.pack_bytes)
            ),
            Refusal::TooMuchInflated => format!(
                "sent objects that add up to more than the {} skillpkg fetches, once inflated",
                human_bytes(limits.inflated_bytes)
            ),
            Refusal::TooMuchText => format!(
                "sent more than {} of references and protocol lines",
                human_bytes(limits.text_bytes)
            ),
            Refusal::Damaged(why) => format!("sent a pack that is not valid: {why}"),
        }
    }

    /// What to do about it.
    pub(super) fn hint(&self) -> &'static str {
        match self {
            Refusal::ObjectTooLarge { .. } => {
                "nothing was installed; skillpkg fetches no repository that holds a file larger than a skill may hold, anywhere in its history: take the skill from a repository without large files, or as a tarball or from a registry"
            }
            Refusal::TooManyEntries { .. }
            | Refusal::PackTooLarge
            | Refusal::TooMuchInflated
            | Refusal::TooMuchText => {
                "nothing was installed; take the skill from a smaller repository (one that holds skills alone), or as a tarball or from a registry"
            }
            Refusal::Damaged(_) => {
                "nothing was installed; the server sent what git itself would refuse: tell the repository's owner"
            }
        }
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "refused by skillpkg's fetch limits: {self:?}")
    }
}

impl std::error::Error for Refusal {}

/// What the transport and its readers share: the limits, the first
/// refusal, and the protocol text read so far.
#[derive(Debug)]
pub(super) struct Guard {
    limits: FetchLimits,
    hash_len: usize,
    refusal: Mutex<Option<Refusal>>,
    text: AtomicU64,
    /// The last messages the server sent besides the pack.
    remote_text: Mutex<VecDeque<String>>,
}

/// How many of the server's progress and error messages are kept.
const REMOTE_MESSAGES: usize = 16;

impl Guard {
    pub(super) fn new(limits: FetchLimits, object_hash: gix::hash::Kind) -> Arc<Self> {
        Arc::new(Self {
            limits,
            hash_len: object_hash.len_in_bytes(),
            refusal: Mutex::new(None),
            text: AtomicU64::new(0),
            remote_text: Mutex::new(VecDeque::new()),
        })
    }

    /// The first refusal, if the fetch was stopped.
    pub(super) fn refusal(&self) -> Option<Refusal> {
        self.refusal
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Records `refusal` (the first one is kept) and returns the error that
    /// stops gix.
    fn refuse(&self, refusal: Refusal) -> io::Error {
        let mut slot = self.refusal.lock().unwrap_or_else(PoisonError::into_inner);
        slot.get_or_insert(refusal.clone());
        io::Error::other(refusal)
    }

    /// Keeps the last [`REMOTE_MESSAGES`] messages the server sent on its
    /// progress and error channels (a message a packet, its line end
    /// taken off), each cut to 200 characters.
    fn remember_remote_text(&self, text: &[u8]) {
        tracing::debug!(text = ?String::from_utf8_lossy(text), "remote said");
        let mut said = self
            .remote_text
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if said.len() == REMOTE_MESSAGES {
            said.pop_front();
        }
        let text = &text[..text.len().min(800)];
        said.push_back(String::from_utf8_lossy(text).chars().take(200).collect());
    }

    /// The server's error lines (`error: ...`, `fatal: ...`), when it said
    /// that it stopped because its repository is corrupt: git's
    /// `upload-pack` says so when `pack-objects` dies on an object that is
    /// not what its tree says, before the client has any of it.
    pub(super) fn remote_corruption(&self) -> Option<Vec<String>> {
        let said = self
            .remote_text
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let lines: Vec<&str> = said
            .iter()
            .flat_map(|message| message.split(['\n', '\r']))
            .map(str::trim)
            .collect();
        let corrupt = lines.iter().any(|line| {
            line.contains("repository corruption")
                || line.contains("bad tree object")
                || line.contains("bad blob object")
                || line.contains("bad object")
        });
        if !corrupt {
            return None;
        }
        let mut errors: Vec<String> = Vec::new();
        for line in lines {
            let wanted = line.starts_with("error:") || line.starts_with("fatal:");
            if wanted && !errors.iter().any(|seen| seen == line) {
                errors.push(line.to_owned());
            }
        }
        Some(errors)
    }

    /// Counts `bytes` of protocol text.
    fn count_text(&self, bytes: usize) -> io::Result<()> {
        let total = self.text.fetch_add(bytes as u64, Ordering::Relaxed) + bytes as u64;
        if total > self.limits.text_bytes {
            return Err(self.refuse(Refusal::TooMuchText));
        }
        Ok(())
    }
}

/// A transport whose responses pass through the [`Guard`].
pub(super) struct Guarded<T> {
    inner: T,
    guard: Arc<Guard>,
}

impl<T> Guarded<T> {
    pub(super) fn new(inner: T, guard: Arc<Guard>) -> Self {
        Self { inner, guard }
    }
}

impl<T: TransportWithoutIO> TransportWithoutIO for Guarded<T> {
    fn set_identity(&mut self, identity: client::Account) -> Result<(), client::Error> {
        self.inner.set_identity(identity)
    }

    fn to_url(&self) -> std::borrow::Cow<'_, gix::bstr::BStr> {
        self.inner.to_url()
    }

    fn supported_protocol_versions(&self) -> &[gix::protocol::transport::Protocol] {
        self.inner.supported_protocol_versions()
    }

    fn connection_persists_across_multiple_requests(&self) -> bool {
        self.inner.connection_persists_across_multiple_requests()
    }

    fn configure(&mut self, config: &dyn std::any::Any) -> gix::error::Result<()> {
        self.inner.configure(config)
    }
}

impl<T: Transport> Transport for Guarded<T> {
    fn handshake<'a>(
        &mut self,
        service: gix::protocol::transport::Service,
        extra_parameters: &'a [(&'a str, Option<&'a str>)],
    ) -> Result<SetServiceResponse<'_>, client::Error> {
        let guard = Arc::clone(&self.guard);
        let mut response = self.inner.handshake(service, extra_parameters)?;
        // Protocol 1 advertises every reference here.
        if let Some(refs) = response.refs.take() {
            response.refs = Some(Box::new(CountedLines { inner: refs, guard }));
        }
        Ok(response)
    }

    fn request(
        &mut self,
        write_mode: WriteMode,
        on_into_read: MessageKind,
        trace: bool,
    ) -> Result<RequestWriter<'_>, client::Error> {
        let guard = Arc::clone(&self.guard);
        let (writer, reader) = self
            .inner
            .request(write_mode, on_into_read, trace)?
            .into_parts();
        Ok(RequestWriter::new_from_bufread(
            writer,
            Box::new(GuardedReader::new(reader, guard)),
            write_mode,
            on_into_read,
            trace,
        ))
    }
}

/// Protocol lines, counted.
struct CountedLines<'a> {
    inner: Box<dyn ReadlineBufRead + 'a>,
    guard: Arc<Guard>,
}

impl io::Read for CountedLines<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let read = self.inner.read(buf)?;
        self.guard.count_text(read)?;
        Ok(read)
    }
}

impl io::BufRead for CountedLines<'_> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        self.inner.fill_buf()
    }

    fn consume(&mut self, amount: usize) {
        // Counted as consumed; a refusal shows at the next line read.
        let _ = self.guard.count_text(amount);
        self.inner.consume(amount);
    }
}

impl ReadlineBufRead for CountedLines<'_> {
    fn readline(
        &mut self,
    ) -> Option<
        io::Result<gix::error::Result<gix::protocol::transport::packetline::PacketLineRef<'_>>>,
    > {
        if let Err(error) = self.guard.count_text(0) {
            return Some(Err(error));
        }
        let line = self.inner.readline();
        if let Some(Ok(Ok(packet))) = &line
            && let Some(data) = packet.as_slice()
            && let Err(error) = self.guard.count_text(data.len())
        {
            return Some(Err(error));
        }
        line
    }

    fn readline_str(&mut self, line: &mut String) -> io::Result<usize> {
        self.guard.count_text(0)?;
        let read = self.inner.readline_str(line)?;
        self.guard.count_text(read)?;
        Ok(read)
    }
}

/// A response: its lines counted, its `BufRead` bytes parsed as a pack
/// before they are handed on.
struct GuardedReader<'a> {
    inner: Box<dyn ExtendedBufRead<'a> + Unpin + 'a>,
    guard: Arc<Guard>,
    /// Bytes read from `inner` and already scanned; `buffer[position..]` is
    /// not handed on yet.
    buffer: Vec<u8>,
    position: usize,
    scanner: PackScanner,
}

/// How much is read from the transport at a time.
const CHUNK: usize = 64 << 10;

impl<'a> GuardedReader<'a> {
    fn new(inner: Box<dyn ExtendedBufRead<'a> + Unpin + 'a>, guard: Arc<Guard>) -> Self {
        let scanner = PackScanner::new(guard.limits, guard.hash_len);
        Self {
            inner,
            guard,
            buffer: Vec::new(),
            position: 0,
            scanner,
        }
    }
}

impl io::Read for GuardedReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let available = io::BufRead::fill_buf(self)?;
        let amount = available.len().min(buf.len());
        buf[..amount].copy_from_slice(&available[..amount]);
        io::BufRead::consume(self, amount);
        Ok(amount)
    }
}

impl io::BufRead for GuardedReader<'_> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if self.position == self.buffer.len() {
            self.buffer.resize(CHUNK, 0);
            self.position = 0;
            let read = match self.inner.read(&mut self.buffer) {
                Ok(read) => read,
                Err(error) => {
                    self.buffer.clear();
                    return Err(error);
                }
            };
            self.buffer.truncate(read);
            // Scanned before gix sees a byte of it.
            if let Err(refusal) = self.scanner.feed(&self.buffer) {
                self.buffer.clear();
                return Err(self.guard.refuse(refusal));
            }
        }
        Ok(&self.buffer[self.position..])
    }

    fn consume(&mut self, amount: usize) {
        self.position = (self.position + amount).min(self.buffer.len());
    }
}

impl ReadlineBufRead for GuardedReader<'_> {
    fn readline(
        &mut self,
    ) -> Option<
        io::Result<gix::error::Result<gix::protocol::transport::packetline::PacketLineRef<'_>>>,
    > {
        debug_assert_eq!(self.position, self.buffer.len(), "lines after pack data");
        if let Err(error) = self.guard.count_text(0) {
            return Some(Err(error));
        }
        let line = self.inner.readline();
        if let Some(Ok(Ok(packet))) = &line
            && let Some(data) = packet.as_slice()
            && let Err(error) = self.guard.count_text(data.len())
        {
            return Some(Err(error));
        }
        line
    }

    fn readline_str(&mut self, line: &mut String) -> io::Result<usize> {
        debug_assert_eq!(self.position, self.buffer.len(), "lines after pack data");
        self.guard.count_text(0)?;
        let read = self.inner.readline_str(line)?;
        self.guard.count_text(read)?;
        Ok(read)
    }
}

impl<'a> ExtendedBufRead<'a> for GuardedReader<'a> {
    fn set_progress_handler(&mut self, handle_progress: Option<HandleProgress<'a>>) {
        // The server's messages are kept (the last few), for when it stops
        // sending a repository it calls corrupt.
        let guard = Arc::clone(&self.guard);
        let mut forward = handle_progress;
        self.inner
            .set_progress_handler(Some(Box::new(move |is_error, text: &[u8]| {
                guard.remember_remote_text(text);
                match forward.as_mut() {
                    Some(forward) => forward(is_error, text),
                    None => std::ops::ControlFlow::Continue(()),
                }
            })));
    }

    fn peek_data_line(&mut self) -> Option<io::Result<Result<&[u8], client::Error>>> {
        self.inner.peek_data_line()
    }

    fn reset(&mut self, version: gix::protocol::transport::Protocol) {
        self.inner.reset(version);
    }

    fn stopped_at(&self) -> Option<MessageKind> {
        self.inner.stopped_at()
    }
}

/// Where the scanner is in the pack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    /// The 12 bytes of the pack's header.
    Header,
    /// An entry's type and size.
    EntryHeader,
    /// An offset delta's distance to its base.
    BaseOffset,
    /// A ref delta's base id: this many bytes more.
    BaseId(usize),
    /// An entry's zlib stream.
    Data,
    /// The trailer: this many bytes more.
    Trailer(usize),
    /// After the trailer.
    Done,
}

/// The entry being read.
#[derive(Clone, Copy, Debug, Default)]
struct Entry {
    kind: u8,
    /// The inflated size its header declares.
    size: u64,
    /// The bits of `size` read so far, and whether its header has ended.
    shift: u32,
    /// Bytes inflated so far.
    inflated: u64,
    /// A delta's first inflated bytes: its header.
    delta_header: [u8; 20],
    delta_header_len: usize,
    delta_header_read: bool,
}

const OFS_DELTA: u8 = 6;
const REF_DELTA: u8 = 7;

/// The most bytes a number of 7 bits a byte takes for a `u64`.
const MAX_VARINT_BYTES: usize = 10;

/// Parses a pack as it streams past, holding a small buffer whatever the
/// pack (see the module's documentation).
pub(super) struct PackScanner {
    limits: FetchLimits,
    hash_len: usize,
    stage: Stage,
    header: Vec<u8>,
    entries_left: u32,
    /// Bytes of the pack seen.
    seen: u64,
    /// Entries and delta results declared so far, inflated.
    inflated: u64,
    entry: Entry,
    varint_bytes: usize,
    inflate: gix::zlib::Decompress,
    scratch: Vec<u8>,
}

impl std::fmt::Debug for PackScanner {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("PackScanner")
            .field("stage", &self.stage)
            .field("seen", &self.seen)
            .finish_non_exhaustive()
    }
}

impl PackScanner {
    pub(super) fn new(limits: FetchLimits, hash_len: usize) -> Self {
        Self {
            limits,
            hash_len,
            stage: Stage::Header,
            header: Vec::with_capacity(12),
            entries_left: 0,
            seen: 0,
            inflated: 0,
            entry: Entry::default(),
            varint_bytes: 0,
            inflate: gix::zlib::Decompress::new(),
            scratch: vec![0; 32 << 10],
        }
    }

    /// Returns true if and only if the whole pack, trailer included, has
    /// been seen.
    #[cfg(test)]
    fn is_done(&self) -> bool {
        self.stage == Stage::Done
    }

    /// Reads the next `bytes` of the pack.
    pub(super) fn feed(&mut self, mut bytes: &[u8]) -> Result<(), Refusal> {
        self.seen += bytes.len() as u64;
        if self.seen > self.limits.pack_bytes {
            return Err(Refusal::PackTooLarge);
        }
        while !bytes.is_empty() {
            match self.stage {
                Stage::Header => {
                    let take = (12 - self.header.len()).min(bytes.len());
                    self.header.extend_from_slice(&bytes[..take]);
                    bytes = &bytes[take..];
                    if !self
                        .header
                        .starts_with(&b"PACK"[..self.header.len().min(4)])
                    {
                        return Err(Refusal::Damaged("it does not start with `PACK`"));
                    }
                    if self.header.len() == 12 {
                        self.read_header()?;
                    }
                }
                Stage::EntryHeader => {
                    let byte = bytes[0];
                    bytes = &bytes[1..];
                    self.entry_header_byte(byte)?;
                }
                Stage::BaseOffset => {
                    let byte = bytes[0];
                    bytes = &bytes[1..];
                    self.varint_bytes += 1;
                    if self.varint_bytes > MAX_VARINT_BYTES {
                        return Err(Refusal::Damaged("a delta's base offset does not end"));
                    }
                    if byte & 0x80 == 0 {
                        self.start_data();
                    }
                }
                Stage::BaseId(left) => {
                    let take = left.min(bytes.len());
                    bytes = &bytes[take..];
                    if take == left {
                        self.start_data();
                    } else {
                        self.stage = Stage::BaseId(left - take);
                    }
                }
                Stage::Data => {
                    let consumed = self.inflate_some(bytes)?;
                    if consumed == 0 && self.stage == Stage::Data {
                        // Input it would not take, short of its end: every
                        // byte handed on must have been read.
                        return Err(Refusal::Damaged("an entry's zlib stream stalls"));
                    }
                    bytes = &bytes[consumed..];
                }
                Stage::Trailer(left) => {
                    let take = left.min(bytes.len());
                    bytes = &bytes[take..];
                    self.stage = if take == left {
                        Stage::Done
                    } else {
                        Stage::Trailer(left - take)
                    };
                }
                // Nothing follows a pack but the end of the response.
                Stage::Done => break,
            }
        }
        Ok(())
    }

    fn read_header(&mut self) -> Result<(), Refusal> {
        let version = u32::from_be_bytes(self.header[4..8].try_into().expect("4 bytes"));
        if !matches!(version, 2 | 3) {
            return Err(Refusal::Damaged("its version is neither 2 nor 3"));
        }
        let entries = u32::from_be_bytes(self.header[8..12].try_into().expect("4 bytes"));
        if entries > self.limits.entries {
            return Err(Refusal::TooManyEntries { declared: entries });
        }
        self.entries_left = entries;
        self.next_entry();
        Ok(())
    }

    fn next_entry(&mut self) {
        self.stage = if self.entries_left == 0 {
            Stage::Trailer(self.hash_len)
        } else {
            self.entry = Entry::default();
            Stage::EntryHeader
        };
    }

    fn entry_header_byte(&mut self, byte: u8) -> Result<(), Refusal> {
        let entry = &mut self.entry;
        if entry.shift == 0 {
            entry.kind = (byte >> 4) & 0b111;
            entry.size = u64::from(byte & 0b1111);
            entry.shift = 4;
        } else {
            if entry.shift > 57 {
                return Err(Refusal::Damaged("an entry's size does not end"));
            }
            entry.size |= u64::from(byte & 0x7f) << entry.shift;
            entry.shift += 7;
        }
        if byte & 0x80 != 0 {
            return Ok(());
        }
        let what = match entry.kind {
            1 => "a commit",
            2 => "a tree",
            3 => "a blob",
            4 => "a tag",
            OFS_DELTA | REF_DELTA => "a delta's instructions",
            _ => return Err(Refusal::Damaged("an entry is of no known type")),
        };
        let (kind, size) = (entry.kind, entry.size);
        // Refused before a byte of it is inflated, here or by gix.
        if size > self.limits.object_bytes {
            return Err(Refusal::ObjectTooLarge { what, size });
        }
        self.count_inflated(size)?;
        match kind {
            OFS_DELTA => {
                self.varint_bytes = 0;
                self.stage = Stage::BaseOffset;
            }
            REF_DELTA => self.stage = Stage::BaseId(self.hash_len),
            _ => self.start_data(),
        }
        Ok(())
    }

    fn count_inflated(&mut self, bytes: u64) -> Result<(), Refusal> {
        self.inflated = self.inflated.saturating_add(bytes);
        if self.inflated > self.limits.inflated_bytes {
            return Err(Refusal::TooMuchInflated);
        }
        Ok(())
    }

    fn start_data(&mut self) {
        self.inflate.reset();
        self.stage = Stage::Data;
    }

    /// Inflates what it can of the entry from `bytes` and returns how many
    /// it took; moves to the next entry at the end of the stream.
    fn inflate_some(&mut self, bytes: &[u8]) -> Result<usize, Refusal> {
        let mut consumed = 0;
        loop {
            let before_in = self.inflate.total_in();
            let before_out = self.inflate.total_out();
            let status = self
                .inflate
                .decompress(
                    &bytes[consumed..],
                    &mut self.scratch,
                    gix::zlib::FlushDecompress::None,
                )
                .map_err(|_| Refusal::Damaged("an entry is not a valid zlib stream"))?;
            let read = (self.inflate.total_in() - before_in) as usize;
            let written = (self.inflate.total_out() - before_out) as usize;
            consumed += read;
            self.entry.inflated += written as u64;
            if self.entry.inflated > self.entry.size {
                return Err(Refusal::Damaged(
                    "an entry inflates to more than its header declares",
                ));
            }
            if matches!(self.entry.kind, OFS_DELTA | REF_DELTA) && !self.entry.delta_header_read {
                let take = written.min(self.entry.delta_header.len() - self.entry.delta_header_len);
                let at = self.entry.delta_header_len;
                self.entry.delta_header[at..at + take].copy_from_slice(&self.scratch[..take]);
                self.entry.delta_header_len += take;
                self.read_delta_header(false)?;
            }
            match status {
                gix::zlib::Status::StreamEnd => {
                    if self.entry.inflated != self.entry.size {
                        return Err(Refusal::Damaged(
                            "an entry inflates to fewer bytes than its header declares",
                        ));
                    }
                    if matches!(self.entry.kind, OFS_DELTA | REF_DELTA) {
                        self.read_delta_header(true)?;
                    }
                    self.entries_left -= 1;
                    self.next_entry();
                    return Ok(consumed);
                }
                // More input is needed, unless the buffer filled up: then
                // there is more output to take first.
                gix::zlib::Status::Ok | gix::zlib::Status::BufError => {
                    let stuck = read == 0 && written == 0;
                    let wants_input = consumed == bytes.len() && written < self.scratch.len();
                    if stuck || wants_input {
                        return Ok(consumed);
                    }
                }
            }
        }
    }

    /// Reads a delta's header (its base's size and its result's) once
    /// enough of it is inflated; `ended` when the delta has no more.
    fn read_delta_header(&mut self, ended: bool) -> Result<(), Refusal> {
        if self.entry.delta_header_read {
            return Ok(());
        }
        let header = &self.entry.delta_header[..self.entry.delta_header_len];
        let Some((base, used)) = varint(header) else {
            return if ended || header.len() >= MAX_VARINT_BYTES * 2 {
                Err(Refusal::Damaged("a delta has no header"))
            } else {
                Ok(())
            };
        };
        let Some((result, _)) = varint(&header[used..]) else {
            return if ended || header.len() >= MAX_VARINT_BYTES * 2 {
                Err(Refusal::Damaged("a delta has no header"))
            } else {
                Ok(())
            };
        };
        self.entry.delta_header_read = true;
        for (what, size) in [("a delta's base", base), ("a delta's result", result)] {
            if size > self.limits.object_bytes {
                return Err(Refusal::ObjectTooLarge { what, size });
            }
        }
        self.count_inflated(result)
    }
}

/// Reads a number of 7 bits a byte, low bits first, from the start of
/// `bytes`: the number and the bytes it took, or `None` when it does not
/// end within them (or within a `u64`).
fn varint(bytes: &[u8]) -> Option<(u64, usize)> {
    let mut value = 0_u64;
    for (index, byte) in bytes.iter().enumerate().take(MAX_VARINT_BYTES) {
        let bits = u64::from(byte & 0x7f);
        let shift = 7 * index as u32;
        if shift > 63 || (shift == 63 && bits > 1) {
            return None;
        }
        value |= bits << shift;
        if byte & 0x80 == 0 {
            return Some((value, index + 1));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: FetchLimits = FetchLimits {
        object_bytes: 8 << 20,
        pack_bytes: 64 << 20,
        inflated_bytes: 32 << 20,
        entries: 1000,
        text_bytes: 1 << 20,
    };

    fn zlib(data: &[u8]) -> Vec<u8> {
        use std::io::Write as _;
        let mut encoder =
            gix::zlib::stream::deflate::Write::new(Vec::new(), gix::zlib::Compression::default());
        encoder.write_all(data).unwrap();
        encoder.flush().unwrap();
        encoder.into_inner()
    }

    /// An entry's header: its type and size.
    fn entry_header(kind: u8, mut size: u64) -> Vec<u8> {
        let mut bytes = vec![(kind << 4) | (size & 0xf) as u8];
        size >>= 4;
        while size > 0 {
            *bytes.last_mut().unwrap() |= 0x80;
            bytes.push((size & 0x7f) as u8);
            size >>= 7;
        }
        bytes
    }

    fn delta_varint(mut value: u64) -> Vec<u8> {
        let mut bytes = Vec::new();
        loop {
            let byte = (value & 0x7f) as u8;
            value >>= 7;
            if value == 0 {
                bytes.push(byte);
                return bytes;
            }
            bytes.push(byte | 0x80);
        }
    }

    fn pack(entries: u32, body: &[u8]) -> Vec<u8> {
        let mut pack = b"PACK".to_vec();
        pack.extend(2_u32.to_be_bytes());
        pack.extend(entries.to_be_bytes());
        pack.extend(body);
        pack.extend([0; 20]);
        pack
    }

    /// Feeds `pack` in chunks of `chunk` bytes.
    fn scan(pack: &[u8], chunk: usize) -> Result<PackScanner, Refusal> {
        let mut scanner = PackScanner::new(LIMITS, 20);
        for part in pack.chunks(chunk) {
            scanner.feed(part)?;
        }
        Ok(scanner)
    }

    #[test]
    fn a_valid_pack_is_read_to_its_end_in_chunks_of_any_size() {
        let blob = vec![7_u8; 100_000];
        let mut body = entry_header(3, blob.len() as u64);
        body.extend(zlib(&blob));
        let mut delta = delta_varint(100_000);
        delta.extend(delta_varint(5));
        delta.extend([5, b'h', b'e', b'l', b'l', b'o']);
        body.extend(entry_header(OFS_DELTA, delta.len() as u64));
        body.push(0x7f);
        body.extend(zlib(&delta));
        let pack = pack(2, &body);
        for chunk in [1, 2, 7, 4096, pack.len()] {
            assert!(scan(&pack, chunk).unwrap().is_done(), "chunk {chunk}");
        }
    }

    #[test]
    fn a_huge_object_is_refused_by_its_header_before_its_data() {
        // The header alone: no data follows, and none is needed.
        let body = entry_header(3, 8 << 30);
        let refused = scan(&pack(1, &body), 3).unwrap_err();
        assert_eq!(
            refused,
            Refusal::ObjectTooLarge {
                what: "a blob",
                size: 8 << 30
            }
        );
        assert!(
            refused
                .describe(&LIMITS)
                .contains("a blob of 8.0 GiB (8589934592 bytes), more than the 8.0 MiB")
        );
    }

    #[test]
    fn a_small_delta_with_a_huge_result_is_refused() {
        let mut delta = delta_varint(10);
        delta.extend(delta_varint(1 << 40));
        let mut body = entry_header(REF_DELTA, delta.len() as u64);
        body.extend([0xab; 20]);
        body.extend(zlib(&delta));
        assert_eq!(
            scan(&pack(1, &body), 5).unwrap_err(),
            Refusal::ObjectTooLarge {
                what: "a delta's result",
                size: 1 << 40
            }
        );
    }

    #[test]
    fn many_medium_objects_are_refused_once_they_add_up() {
        let blob = vec![0_u8; 7 << 20];
        let compressed = zlib(&blob);
        let mut body = Vec::new();
        for _ in 0..5 {
            body.extend(entry_header(3, blob.len() as u64));
            body.extend(&compressed);
        }
        assert_eq!(
            scan(&pack(5, &body), 65536).unwrap_err(),
            Refusal::TooMuchInflated
        );
    }

    #[test]
    fn a_huge_declared_entry_count_and_damage_are_refused() {
        assert_eq!(
            scan(&pack(u32::MAX, &[]), 100).unwrap_err(),
            Refusal::TooManyEntries { declared: u32::MAX }
        );
        assert!(matches!(
            scan(b"NOPE\0\0\0\x02", 3).unwrap_err(),
            Refusal::Damaged(_)
        ));
        // Declares 10 bytes, inflates to 11.
        let mut body = entry_header(3, 10);
        body.extend(zlib(&[1; 11]));
        assert!(matches!(
            scan(&pack(1, &body), 4).unwrap_err(),
            Refusal::Damaged(_)
        ));
        // Not zlib at all.
        let mut body = entry_header(3, 10);
        body.extend([0xff; 30]);
        assert!(matches!(
            scan(&pack(1, &body), 4).unwrap_err(),
            Refusal::Damaged(_)
        ));
    }

    #[test]
    fn a_pack_larger_than_the_cap_is_refused() {
        let mut scanner = PackScanner::new(
            FetchLimits {
                pack_bytes: 100,
                ..LIMITS
            },
            20,
        );
        assert_eq!(scanner.feed(&[0; 101]), Err(Refusal::PackTooLarge));
    }
}
