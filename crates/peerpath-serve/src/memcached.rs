//! The memcached text protocol: `get`/`gets` of keys that name files under
//! the root, `version`, `quit`, and, when the server is made writable,
//! `set`, which stores an object as a file directly under the root (one
//! path component; written to a temporary file as it arrives, so memory
//! stays bounded, and renamed into place whole: a reader sees the old file
//! or the new one, never part of one). Other writes are refused, their
//! data blocks read and dropped. A key is at most 250 bytes without
//! spaces or control characters (the protocol's rule).

use crate::resolve::resolve;
use crate::out::Done;
use crate::{read_head, respond, Conn, Next, ReadHead};
use std::io::Write;
use std::time::{Duration, Instant};

/// Where a command line ends: after its `\n` (its `\r` before that is optional, as memcached's
/// own parser takes it: `nc` without -C sends bare line feeds, and got no answer).
fn line_end(buf: &[u8]) -> Option<usize> {
    buf.iter().position(|&b| b == b'\n').map(|i| i + 1)
}

/// Answers the connection's commands as long as they come; `Park` when
/// the client has sent nothing more for a while.
pub(crate) fn serve(conn: &mut Conn) -> Next {
    let shared = conn.shared;
    if conn.over {
        let _ = conn.write_all(b"SERVER_ERROR too many connections\r\n");
        return Next::Close;
    }
    loop {
        let n = match read_head(conn, line_end) {
            ReadHead::Ready(n) => n,
            ReadHead::Park => return Next::Park,
            ReadHead::TooLong => {
                let _ = conn.write_all(b"CLIENT_ERROR line too long\r\n");
                shared.done(Duration::ZERO, 0, 0, 400);
                return Next::Close;
            }
            ReadHead::TimedOut | ReadHead::Closed => return Next::Close,
        };
        let started = Instant::now();
        let line = conn.take_request(n);
        let text = &line[..n - 1];
        let text = text.strip_suffix(b"\r").unwrap_or(text);
        let words: Vec<&[u8]> = text.split(|&b| b == b' ').filter(|w| !w.is_empty()).collect();
        let (status, payload, copied, from_host, keep) = match words.first().copied() {
            Some(b"get") | Some(b"gets") if words.len() > 1 => get(conn, &words[1..], words[0] == b"gets"),
            Some(b"version") => (200, 0, 0, 0, conn.write_all(b"VERSION peerpath-serve\r\n").is_ok()),
            Some(b"quit") => return Next::Close,
            Some(b"set") if shared.config.max_set_bytes.is_some() => set(conn, &words),
            Some(b"set" | b"add" | b"replace" | b"append" | b"prepend" | b"cas" | b"delete") => refuse(conn, &words),
            _ => (400, 0, 0, 0, conn.write_all(b"ERROR\r\n").is_ok()),
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

/// A number of a command line.
fn number(w: &[u8]) -> Option<u64> {
    std::str::from_utf8(w).ok().and_then(|s| s.parse::<u64>().ok())
}

/// Refuses a write command: read-only (or, writable, only `set` is taken):
/// the store is the directory. A storage command's data block (`<command>
/// <key> <flags> <exptime> <bytes> ...`, `cas` with its unique after
/// `<bytes>`) is read and dropped first: left unread, its bytes were taken
/// for commands, and pipelined answers fell out of step.
/// Returns (status, payload, copied, from host memory, keep).
fn refuse(conn: &mut Conn, words: &[&[u8]]) -> (u16, u64, u64, u64, bool) {
    let why: &[u8] = if conn.shared.config.max_set_bytes.is_some() { b"SERVER_ERROR only set is taken: objects are the files under the served directory\r\n" } else { b"SERVER_ERROR read-only: objects are the files under the served directory\r\n" };
    // `noreply` (the last word) silences refusals too, as in memcached: a pipelining client
    // would take the refusal for its next command's answer.
    let noreply = words.len() > 2 && words.last() == Some(&&b"noreply"[..]);
    let say = |conn: &mut Conn| noreply || conn.write_all(why).is_ok();
    if words[0] == b"delete" {
        return (405, 0, 0, 0, say(conn));
    }
    let Some(bytes) = words.get(4).and_then(|w| number(w)) else {
        // Without a length the data block cannot be found: the connection is out of step.
        let _ = conn.write_all(b"CLIENT_ERROR bad command line format\r\n");
        return (400, 0, 0, 0, false);
    };
    let in_step = take(conn, bytes.saturating_add(2), |_| true);
    (405, 0, 0, 0, in_step && say(conn))
}

fn valid_key(k: &[u8]) -> bool {
    !k.is_empty() && k.len() <= 250 && k.iter().all(|&b| b > b' ' && b != 0x7f)
}

/// Answers `get`/`gets` for `keys`: a VALUE block per key that names a
/// file, then END. Each block goes out when the next found key is known,
/// with END as the last one's trailer (so a NIC sends the whole answer and
/// this process need not wait for it before writing END).
/// Returns (status, payload, copied, from host memory, keep).
fn get(conn: &mut Conn, keys: &[&[u8]], cas: bool) -> (u16, u64, u64, u64, bool) {
    let (mut payload, mut copied, mut from_host) = (0u64, 0u64, 0u64);
    // The found key whose block is not sent yet, with its header.
    let mut waiting: Option<(crate::Resolved, Vec<u8>)> = None;
    let mut send = |conn: &mut Conn, (found, head): (crate::Resolved, Vec<u8>), trailer: &[u8]| {
        let len = found.len;
        let sent = respond(conn, &head, found, 0, len, trailer);
        payload += sent.payload;
        copied += sent.copied;
        from_host += sent.from_host;
        !sent.close
    };
    for k in keys {
        if !valid_key(k) {
            let keep = waiting.take().is_none_or(|w| send(conn, w, b"\r\n"));
            return (400, payload, copied, from_host, keep && conn.write_all(b"CLIENT_ERROR bad key\r\n").is_ok());
        }
        let Ok(found) = resolve(&conn.shared.root, k) else { continue };
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

/// Reads exactly `n` more bytes of the request, first from what the
/// connection already holds, handing them to `sink`; false if the client
/// went quiet for the read timeout, closed, or the server is stopping.
fn take(conn: &mut Conn, mut n: u64, mut sink: impl FnMut(&[u8]) -> bool) -> bool {
    use std::io::Read;
    let shared = conn.shared;
    let first = (n as usize).min(conn.pending.len());
    if !sink(&conn.pending[..first]) {
        return false;
    }
    conn.pending.drain(..first);
    n -= first as u64;
    let mut chunk = vec![0u8; 64 << 10];
    let mut quiet_since = Instant::now();
    while n > 0 {
        if shared.stop.load(std::sync::atomic::Ordering::Relaxed) {
            return false;
        }
        let want = (n as usize).min(chunk.len());
        match conn.stream.read(&mut chunk[..want]) {
            Ok(0) => return false,
            Ok(got) => {
                if !sink(&chunk[..got]) {
                    return false;
                }
                n -= got as u64;
                quiet_since = Instant::now();
            }
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut | std::io::ErrorKind::Interrupted) => {
                if quiet_since.elapsed() >= shared.config.read_timeout {
                    return false;
                }
            }
            Err(_) => return false,
        }
    }
    true
}

/// `set <key> <flags> <exptime> <bytes> [noreply]` and its data block:
/// stored as the file `key` under the root. Flags other than 0 are refused: a file keeps none,
/// and a client that reads them to decode a value (pickled, compressed) would get 0 back and
/// decode it wrongly. Expiry is not kept: a file stays until replaced. With noreply, nothing is
/// answered, refusals included (as memcached: an answer would be taken for the next command's).
/// Returns (status, payload, copied, from host memory, keep).
fn set(conn: &mut Conn, words: &[&[u8]]) -> (u16, u64, u64, u64, bool) {
    let shared = conn.shared;
    let noreply = words.len() == 6 && words[5] == b"noreply";
    let reply = |conn: &mut Conn, text: &[u8]| noreply || conn.write_all(text).is_ok();
    let (Some(flags), Some(_exptime), Some(bytes)) = (words.get(2).and_then(|w| number(w)), words.get(3).and_then(|w| number(w)), words.get(4).and_then(|w| number(w))) else {
        // Without a length the data block cannot be found: the connection is out of step.
        let _ = conn.write_all(b"CLIENT_ERROR bad command line format\r\n");
        return (400, 0, 0, 0, false);
    };
    let key = words[1];
    let limit = shared.config.max_set_bytes.unwrap_or(0);
    // A key is one file directly under the root: no '/', not "." or "..".
    let name_ok = valid_key(key) && !key.contains(&b'/') && key != b"." && key != b"..";
    let format_ok = (5..=6).contains(&words.len()) && (words.len() == 5 || noreply) && flags <= u64::from(u32::MAX);
    if !name_ok || bytes > limit || !format_ok || flags != 0 {
        // Refused, but the data block is read and dropped so the connection stays in step.
        let why: &[u8] = if !format_ok {
            b"CLIENT_ERROR bad command line format\r\n"
        } else if bytes > limit {
            b"SERVER_ERROR object too large for cache\r\n"
        } else if !name_ok {
            b"CLIENT_ERROR bad key: one file name directly under the served directory\r\n"
        } else {
            b"SERVER_ERROR flags are not kept: objects are plain files (set them with flags 0)\r\n"
        };
        let in_step = take(conn, bytes.saturating_add(2), |_| true);
        return (if bytes > limit { 413 } else { 400 }, 0, 0, 0, in_step && reply(conn, why));
    }
    let path = shared.root.path.join(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(key));
    let Ok((mut opened, temp)) = peerpath_io::create_temporary(&path, false) else {
        let in_step = take(conn, bytes + 2, |_| true);
        return (500, 0, 0, 0, in_step && conn.write_all(b"SERVER_ERROR cannot store here\r\n").is_ok());
    };
    let (mut written, mut failed, mut tail) = (0u64, None, Vec::with_capacity(2));
    let complete = take(conn, bytes + 2, |piece| {
        let data_left = (bytes - written) as usize;
        let (data, rest) = piece.split_at(piece.len().min(data_left));
        if failed.is_none() && !data.is_empty() {
            failed = opened.file.write_all(data).err();
        }
        written += data.len() as u64;
        tail.extend_from_slice(rest);
        true
    });
    if !complete || tail != b"\r\n" {
        peerpath_io::discard(&temp);
        let _ = complete && conn.write_all(b"CLIENT_ERROR bad data chunk\r\n").is_ok();
        return (400, 0, 0, 0, false);
    }
    let stored = match failed {
        Some(e) => Err(e),
        None => opened.file.sync_all().and_then(|()| peerpath_io::publish(&opened.file, &temp, &path, true)),
    };
    if let Err(e) = stored {
        peerpath_io::discard(&temp);
        // The real reason: "out of space" only when it is (a directory of the key's name was said to be).
        let key = String::from_utf8_lossy(key);
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
