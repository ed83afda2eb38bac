//! The memcached text protocol: `get`/`gets` of keys that name files under
//! the root, `version`, `stats`, `quit`, and, when the server is made writable,
//! `set`, which stores an object as a file directly under the root (one
//! path component; written to a temporary file as it arrives, so memory
//! stays bounded, and renamed into place whole: a reader sees the old file
//! or the new one, never part of one). Other writes are refused, their
//! data blocks read and dropped (up to a size: see [`Block`] for how a
//! data block is read without holding a worker, and by when it must be
//! whole). A key is at most 250 bytes without spaces or control characters
//! (the protocol's rule).

use crate::resolve::resolve;
use crate::out::Done;
use crate::{read_head, read_more, respond, Conn, More, Next, ReadHead};
use std::io::Write;
use std::time::{Duration, Instant};

/// Where a command line ends: after its `\n` (its `\r` before that is optional, as memcached's
/// own parser takes it: `nc` without -C sends bare line feeds, and got no answer).
fn line_end(buf: &[u8]) -> Option<usize> {
    buf.iter().position(|&b| b == b'\n').map(|i| i + 1)
}

/// What a command came to: (status, payload bytes, bytes copied, payload bytes from host memory,
/// keep the connection).
type Outcome = (u16, u64, u64, u64, bool);

/// Answers the connection's commands as long as they come; `Park` when
/// the client has sent nothing more for a while (in the middle of a data
/// block too: the rest of it is read when it comes, by any worker).
pub(crate) fn serve(conn: &mut Conn) -> Next {
    let shared = conn.shared;
    if conn.over {
        return conn.refuse_unread(503, |c| drop(c.write_all(b"SERVER_ERROR too many connections\r\n")));
    }
    loop {
        let (started, (status, payload, copied, from_host, keep)) = if conn.block.is_some() {
            match read_block(conn) {
                Ok(answered) => answered,
                Err(next) => return next,
            }
        } else {
            let n = match read_head(conn, line_end) {
                ReadHead::Ready(n) => n,
                ReadHead::Park => return Next::Park,
                ReadHead::TooLong => return conn.refuse_unread(400, |c| drop(c.write_all(b"CLIENT_ERROR line too long\r\n"))),
                ReadHead::TimedOut | ReadHead::Closed => return Next::Close,
            };
            let started = Instant::now();
            let line = conn.take_request(n);
            let text = &line[..n - 1];
            let text = text.strip_suffix(b"\r").unwrap_or(text);
            let words: Vec<&[u8]> = text.split(|&b| b == b' ').filter(|w| !w.is_empty()).collect();
            let outcome = match words.first().copied() {
                Some(b"get") | Some(b"gets") if words.len() > 1 => Some(get(conn, &words[1..], words[0] == b"gets")),
                Some(b"version") => Some((200, 0, 0, 0, conn.write_all(format!("VERSION {VERSION}\r\n").as_bytes()).is_ok())),
                // `stats GROUP` (slabs, items, ...): none is kept, answered as memcached answers a group it lacks.
                Some(b"stats") if words.len() == 1 => Some((200, 0, 0, 0, conn.write_all(stats(shared).as_bytes()).is_ok())),
                Some(b"quit") => return Next::Close,
                Some(b"set") if shared.config.max_set_bytes.is_some() => set(conn, &words, started),
                Some(b"set" | b"add" | b"replace" | b"append" | b"prepend" | b"cas") => refuse(conn, &words, started, 5),
                Some(w) => match WRITES.iter().find(|(name, ..)| *name == w) {
                    Some(&(_, least, most)) if (least..=most).contains(&words.len()) => refuse(conn, &words, started, least),
                    _ => Some((400, 0, 0, 0, conn.write_all(b"ERROR\r\n").is_ok())),
                },
                None => Some((400, 0, 0, 0, conn.write_all(b"ERROR\r\n").is_ok())),
            };
            match outcome {
                Some(o) => (started, o),
                // Its data block follows (`conn.block`): answered once it is read.
                None => continue,
            }
        };
        conn.request_done(Done { started, payload, copied, from_host, status });
        conn.answered();
        if !keep {
            return Next::Close;
        }
        if let Some(next) = conn.after_request() {
            return next;
        }
    }
}

/// What `version` and `stats` say this server is.
const VERSION: &str = "peerpath-serve";

/// memcached's write commands without a data block, with the words each line holds (its name
/// included) as memcached takes them: another count is ERROR there as here. Refused as the
/// storage commands are (see [`refuse`]). The meta commands (`mg`, `ms`, `md`, `ma`, ...) are
/// not spoken: ERROR, as any unknown command.
const WRITES: [(&[u8], usize, usize); 7] = [
    (b"delete", 2, 4),
    (b"incr", 3, 4),
    (b"decr", 3, 4),
    (b"touch", 3, 4),
    // Get and touch: each sets the keys' expiry (and takes no noreply).
    (b"gat", 3, usize::MAX),
    (b"gats", 3, usize::MAX),
    (b"flush_all", 1, 3),
];

/// memcached's `stats` answer: the figures this server keeps, as `STAT name value` lines and
/// END; memcached's names where the figure is the same thing (connections and bytes are of both
/// protocols, HTTP's too), peerpath's own prefixed `peerpath_`.
fn stats(shared: &crate::Shared) -> String {
    use std::fmt::Write as _;
    use std::sync::atomic::Ordering::Relaxed;
    let c = &shared.counters;
    let (hits, misses, failed) = (c.get_hits.load(Relaxed), c.get_misses.load(Relaxed), c.get_failed.load(Relaxed));
    let (requests, aborted, payload) = shared.stats.so_far();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let figures: [(&str, &dyn std::fmt::Display); 20] = [
        ("pid", &std::process::id()),
        ("uptime", &shared.started.elapsed().as_secs()),
        ("time", &now),
        ("version", &VERSION),
        ("max_connections", &shared.config.max_connections),
        ("curr_connections", &shared.served_connections.load(Relaxed)),
        ("total_connections", &c.total_connections.load(Relaxed)),
        ("rejected_connections", &c.rejected_connections.load(Relaxed)),
        // One per key looked up, as memcached counts.
        ("cmd_get", &(hits + misses + failed)),
        ("get_hits", &hits),
        ("get_misses", &misses),
        ("bytes_read", &c.bytes_read.load(Relaxed)),
        ("bytes_written", &c.bytes_written.load(Relaxed)),
        ("threads", &c.threads.load(Relaxed)),
        ("peerpath_mode", &shared.config.mode.name()),
        ("peerpath_read_only", &u8::from(shared.config.max_set_bytes.is_none())),
        ("peerpath_get_failed", &failed),
        ("peerpath_requests", &requests),
        ("peerpath_requests_aborted", &aborted),
        ("peerpath_payload_bytes", &payload),
    ];
    let mut text = String::new();
    for (name, value) in figures {
        let _ = write!(text, "STAT {name} {value}\r\n");
    }
    text.push_str("END\r\n");
    text
}

/// A number of a command line.
fn number(w: &[u8]) -> Option<u64> {
    std::str::from_utf8(w).ok().and_then(|s| s.parse::<u64>().ok())
}

/// A data block comes at least this fast, or is cut: its deadline is the
/// read timeout, plus a second per this many bytes, after its command line.
const BLOCK_BYTES_PER_S_MIN: u64 = 1 << 20;

/// Refused data blocks up to this size (or the largest object taken, if
/// larger) are read and dropped, the connection kept in step; a longer one
/// is refused and the connection closed without reading it. memcached's own
/// item limit (`-I`) is 1 MiB by default, so its clients send no larger
/// block expecting it to be taken; reading gigabytes only to drop them
/// would tie up a worker and the network for nothing.
const DROPPED_BLOCK_BYTES_MAX: u64 = 1 << 20;

/// The longest refused data block read and dropped ([`DROPPED_BLOCK_BYTES_MAX`]).
fn droppable(conn: &Conn) -> u64 {
    conn.shared.config.max_set_bytes.unwrap_or(0).max(DROPPED_BLOCK_BYTES_MAX)
}

/// A storage command's data block being read: a `set`'s value on its way
/// to a file, or a refused write's block, dropped. It lives in the
/// connection ([`Conn::block`]), so between its pieces the connection waits
/// in epoll and a client that sends it slowly holds no worker (it held one
/// for as long as it kept a byte coming within the read timeout: 64 such
/// clients stopped the server); and it must be whole by its deadline, the
/// read timeout plus a second per MiB after its command line, or the
/// connection is closed.
pub(crate) struct Block {
    /// Bytes still to come, the block's closing `\r\n` included.
    left: u64,
    pub deadline: Instant,
    /// When its command line was taken (the request's latency counts from then).
    started: Instant,
    sink: Sink,
}

/// What becomes of a data block's bytes.
enum Sink {
    /// Refused: dropped, then `answer` given (none with noreply).
    Dropped { status: u16, answer: Option<&'static [u8]> },
    Stored(Store),
}

/// A `set`'s value on its way to a temporary file, renamed into place once whole.
struct Store {
    opened: peerpath_io::OpenedFile,
    /// `None` once published; discarded when dropped before (a client gone mid-block).
    temp: Option<peerpath_io::Temporary>,
    path: std::path::PathBuf,
    key: Vec<u8>,
    /// The value's length, and how much of it has come.
    bytes: u64,
    written: u64,
    /// The first write that failed (the rest of the block is still read, to answer in step).
    failed: Option<std::io::Error>,
    /// What came after the value: `\r\n` if the block ends where its length says.
    tail: Vec<u8>,
    noreply: bool,
}

impl Drop for Store {
    fn drop(&mut self) {
        if let Some(temp) = self.temp.take() {
            peerpath_io::discard(&temp);
        }
    }
}

impl Block {
    /// A block of `bytes` (and its `\r\n`) after a command line taken at `started`.
    fn new(conn: &Conn, started: Instant, bytes: u64, sink: Sink) -> Block {
        let deadline = started + conn.shared.config.read_timeout + Duration::from_secs(bytes / BLOCK_BYTES_PER_S_MIN);
        Block { left: bytes.saturating_add(2), deadline, started, sink }
    }

    /// Takes `piece` (at most what is left of the block).
    fn take(&mut self, piece: &[u8]) {
        self.left -= piece.len() as u64;
        if let Sink::Stored(s) = &mut self.sink {
            let (data, rest) = piece.split_at(piece.len().min((s.bytes - s.written) as usize));
            if s.failed.is_none() && !data.is_empty() {
                s.failed = s.opened.file.write_all(data).err();
            }
            s.written += data.len() as u64;
            s.tail.extend_from_slice(rest);
        }
    }
}

/// Reads the rest of the connection's data block as it comes, then answers
/// its command: the block's start and the command's outcome; `Err` with
/// what to do with the connection when the client sends nothing more for
/// now (park it: the block stays), closes, or misses the block's deadline.
fn read_block(conn: &mut Conn) -> Result<(Instant, Outcome), Next> {
    let mut linger_until = Instant::now() + crate::event::LINGER;
    let mut chunk = vec![0u8; 64 << 10];
    loop {
        let block = conn.block.as_mut().expect("a data block is being read");
        let n = block.left.min(conn.pending.len() as u64) as usize;
        block.take(&conn.pending[..n]);
        conn.pending.drain(..n);
        if block.left == 0 {
            break;
        }
        let more = read_more(conn, linger_until, &mut chunk);
        let status = match (more, &conn.block) {
            (More::Got, _) => {
                // The worker waits a quiet spell, not a fixed time from the block's start: a
                // large value coming steadily is not handed back at each pause between segments.
                linger_until = Instant::now() + crate::event::LINGER;
                continue;
            }
            (More::Park, _) => return Err(Next::Park),
            (More::TimedOut, _) => {
                let _ = conn.write_all(b"SERVER_ERROR data block not whole in time (the read timeout plus a second per MiB)\r\n");
                408
            }
            (More::Closed, Some(Block { sink: Sink::Dropped { status, .. }, .. })) => *status,
            (More::Closed, _) => 400,
        };
        // Counted as the command it ended; a value half stored is discarded (`Store`'s Drop).
        let started = conn.block.take().map_or_else(Instant::now, |b| b.started);
        conn.request_done(Done { started, payload: 0, copied: 0, from_host: 0, status });
        return Err(Next::Close);
    }
    let block = conn.block.take().expect("a data block is being read");
    let started = block.started;
    let outcome = match block.sink {
        Sink::Dropped { status, answer } => (status, 0, 0, 0, answer.is_none_or(|a| conn.write_all(a).is_ok())),
        Sink::Stored(store) => stored(conn, store),
    };
    Ok((started, outcome))
}

/// Refuses a write command: read-only (or, writable, only `set` is taken):
/// the store is the directory. A storage command's data block (`<command>
/// <key> <flags> <exptime> <bytes> ...`, `cas` with its unique after
/// `<bytes>`) is read and dropped first ([`Block`]): left unread, its bytes
/// were taken for commands, and pipelined answers fell out of step. One
/// longer than [`droppable`] is not read: refused, and the connection closed.
/// The other write commands ([`WRITES`]) have no block. `least`: the words the command's line
/// holds without its optional ones. `None` when the block is to be read (`conn.block`).
fn refuse(conn: &mut Conn, words: &[&[u8]], started: Instant, least: usize) -> Option<Outcome> {
    let why: &'static [u8] = if conn.shared.config.max_set_bytes.is_some() { b"SERVER_ERROR only set is taken: objects are the files under the served directory\r\n" } else { b"SERVER_ERROR read-only: objects are the files under the served directory\r\n" };
    // `noreply` (the last word, after those the command needs) silences refusals too, as in
    // memcached: a pipelining client would take the refusal for its next command's answer.
    // `gat` and `gats` take none (a key may be called so).
    let block = !WRITES.iter().any(|(name, ..)| *name == words[0]);
    let noreply = words.len() > least && words.last() == Some(&&b"noreply"[..]) && !matches!(words[0], b"gat" | b"gats");
    let answer = (!noreply).then_some(why);
    if !block {
        return Some((405, 0, 0, 0, answer.is_none_or(|a| conn.write_all(a).is_ok())));
    }
    let Some(bytes) = words.get(4).and_then(|w| number(w)) else {
        // Without a length the data block cannot be found: the connection is out of step.
        let _ = conn.write_all(b"CLIENT_ERROR bad command line format\r\n");
        return Some((400, 0, 0, 0, false));
    };
    if bytes > droppable(conn) {
        let _ = answer.is_none_or(|a| conn.write_all(a).is_ok());
        return Some((405, 0, 0, 0, false));
    }
    conn.block = Some(Block::new(conn, started, bytes, Sink::Dropped { status: 405, answer }));
    None
}

fn valid_key(k: &[u8]) -> bool {
    !k.is_empty() && k.len() <= 250 && k.iter().all(|&b| b > b' ' && b != 0x7f)
}

/// Answers `get`/`gets` for `keys`: a VALUE block per key that names a
/// file, then END. Each block goes out when the next found key is known,
/// with END as the last one's trailer (so a NIC sends the whole answer and
/// this process need not wait for it before writing END). Counts the keys
/// looked up as memcached does, one each (a bad key ends the command; it and
/// those after it are not looked up): a hit once its VALUE is answered, a
/// miss when it names no file, failed when it named one whose VALUE was not
/// answered (it could not be read or sent: the connection is closed).
fn get(conn: &mut Conn, keys: &[&[u8]], cas: bool) -> Outcome {
    use std::sync::atomic::Ordering::Relaxed;
    let mut looked = Looked::default();
    let outcome = answer_get(conn, keys, cas, &mut looked);
    let c = &conn.shared.counters;
    c.get_hits.fetch_add(looked.hits, Relaxed);
    c.get_misses.fetch_add(looked.misses, Relaxed);
    c.get_failed.fetch_add(looked.found - looked.hits, Relaxed);
    outcome
}

/// The keys a `get` looked up: those that named a file, of them those whose VALUE was
/// answered, and those that named none.
#[derive(Default)]
struct Looked {
    found: u64,
    hits: u64,
    misses: u64,
}

/// [`get`]'s answer, counting its keys in `looked`.
fn answer_get(conn: &mut Conn, keys: &[&[u8]], cas: bool, looked: &mut Looked) -> Outcome {
    let (mut payload, mut copied, mut from_host) = (0u64, 0u64, 0u64);
    // The found key whose block is not sent yet, with its header.
    let mut waiting: Option<(crate::Resolved, Vec<u8>)> = None;
    let mut send = |conn: &mut Conn, (found, head): (crate::Resolved, Vec<u8>), trailer: &[u8]| {
        let len = found.len;
        let sent = respond(conn, 200, &head, found, 0, len, trailer);
        payload += sent.payload;
        copied += sent.copied;
        from_host += sent.from_host;
        looked.hits += u64::from(!sent.close);
        !sent.close
    };
    for k in keys {
        if !valid_key(k) {
            let keep = waiting.take().is_none_or(|w| send(conn, w, b"\r\n"));
            return (400, payload, copied, from_host, keep && conn.write_all(b"CLIENT_ERROR bad key\r\n").is_ok());
        }
        let Ok(found) = resolve(&conn.shared.root, k) else {
            looked.misses += 1;
            continue;
        };
        looked.found += 1;
        if let Some(w) = waiting.take() {
            if !send(conn, w, b"\r\n") {
                return (200, payload, copied, from_host, false);
            }
        }
        let mut head = b"VALUE ".to_vec();
        head.extend_from_slice(k);
        head.extend_from_slice(format!(" 0 {}{}\r\n", found.len, if cas { " 0" } else { "" }).as_bytes());
        waiting = Some((found, head));
    }
    let keep = match waiting.take() {
        Some(w) => send(conn, w, b"\r\nEND\r\n"),
        None => conn.write_all(b"END\r\n").is_ok(),
    };
    (200, payload, copied, from_host, keep)
}

/// `set <key> <flags> <exptime> <bytes> [noreply]` and its data block:
/// stored as the file `key` under the root. Flags other than 0 are refused: a file keeps none,
/// and a client that reads them to decode a value (pickled, compressed) would get 0 back and
/// decode it wrongly. Expiry is not kept: a file stays until replaced. With noreply, nothing is
/// answered, refusals included (as memcached: an answer would be taken for the next command's).
/// `None` when the data block is to be read (`conn.block`), then stored or dropped.
fn set(conn: &mut Conn, words: &[&[u8]], started: Instant) -> Option<Outcome> {
    let shared = conn.shared;
    let noreply = words.len() == 6 && words[5] == b"noreply";
    let (Some(flags), Some(_exptime), Some(bytes)) = (words.get(2).and_then(|w| number(w)), words.get(3).and_then(|w| number(w)), words.get(4).and_then(|w| number(w))) else {
        // Without a length the data block cannot be found: the connection is out of step.
        let _ = conn.write_all(b"CLIENT_ERROR bad command line format\r\n");
        return Some((400, 0, 0, 0, false));
    };
    let key = words[1];
    let limit = shared.config.max_set_bytes.unwrap_or(0);
    // A key is one file directly under the root: no '/', not "." or "..".
    let name_ok = valid_key(key) && !key.contains(&b'/') && key != b"." && key != b"..";
    let format_ok = (5..=6).contains(&words.len()) && (words.len() == 5 || noreply) && flags <= u64::from(u32::MAX);
    if !name_ok || bytes > limit || !format_ok || flags != 0 {
        let why: &'static [u8] = if !format_ok {
            b"CLIENT_ERROR bad command line format\r\n"
        } else if bytes > limit {
            b"SERVER_ERROR object too large for cache\r\n"
        } else if !name_ok {
            b"CLIENT_ERROR bad key: one file name directly under the served directory\r\n"
        } else {
            b"SERVER_ERROR flags are not kept: objects are plain files (set them with flags 0)\r\n"
        };
        let status = if bytes > limit { 413 } else { 400 };
        let answer = (!noreply).then_some(why);
        if bytes > droppable(conn) {
            // Longer than any block read to be dropped: refused without reading it, and closed.
            let _ = answer.is_none_or(|a| conn.write_all(a).is_ok());
            return Some((status, 0, 0, 0, false));
        }
        // Refused, but the data block is read and dropped so the connection stays in step.
        conn.block = Some(Block::new(conn, started, bytes, Sink::Dropped { status, answer }));
        return None;
    }
    let path = shared.root.path.join(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(key));
    let sink = match peerpath_io::create_temporary(&path, false) {
        Ok((opened, temp)) => Sink::Stored(Store { opened, temp: Some(temp), path, key: key.to_vec(), bytes, written: 0, failed: None, tail: Vec::with_capacity(2), noreply }),
        Err(_) => Sink::Dropped { status: 500, answer: Some(b"SERVER_ERROR cannot store here\r\n") },
    };
    conn.block = Some(Block::new(conn, started, bytes, sink));
    None
}

/// A `set`'s whole data block has come: the value is put in place as its
/// file if the block ended where its length said and it was written whole.
fn stored(conn: &mut Conn, mut store: Store) -> Outcome {
    let reply = |conn: &mut Conn, text: &[u8]| store.noreply || conn.write_all(text).is_ok();
    let temp = store.temp.take().expect("a value is put in place once");
    if store.tail != b"\r\n" {
        peerpath_io::discard(&temp);
        let _ = conn.write_all(b"CLIENT_ERROR bad data chunk\r\n");
        return (400, 0, 0, 0, false);
    }
    let written = store.written;
    let published = match store.failed.take() {
        Some(e) => Err(e),
        None => store.opened.file.sync_all().and_then(|()| peerpath_io::publish(&store.opened.file, &temp, &store.path, true)),
    };
    if let Err(e) = published {
        peerpath_io::discard(&temp);
        // The real reason: "out of space" only when it is (a directory of the key's name was said to be).
        let key = String::from_utf8_lossy(&store.key);
        let (status, why) = match e.raw_os_error() {
            Some(libc::ENOSPC | libc::EDQUOT) => (507, "SERVER_ERROR out of space storing object\r\n".to_string()),
            Some(libc::EISDIR) => (500, format!("SERVER_ERROR cannot store object: {key} is a directory\r\n")),
            _ => (500, format!("SERVER_ERROR cannot store object: {key}: {e}\r\n")),
        };
        return (status, 0, written, 0, reply(conn, why.as_bytes()));
    }
    // The payload passed through this process (read from the socket, written to the file).
    (201, 0, written, written, reply(conn, b"STORED\r\n"))
}
