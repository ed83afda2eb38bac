//! The memcached text protocol, read-only: `get`/`gets` of keys that name
//! files under the root, `version`, `quit`. A key is at most 250 bytes
//! without spaces or control characters (the protocol's rule).

use crate::resolve::resolve;
use crate::{read_head, respond, ReadHead, Shared};
use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

fn line_end(buf: &[u8]) -> Option<usize> {
    buf.windows(2).position(|w| w == b"\r\n").map(|i| i + 2)
}

pub(crate) fn connection(shared: &Shared, mut stream: TcpStream, over: bool) {
    let _ = stream.set_write_timeout(Some(shared.config.read_timeout));
    if over {
        let _ = stream.write_all(b"SERVER_ERROR too many connections\r\n");
        return;
    }
    let mut buf = Vec::new();
    let mut nic = None;
    loop {
        let n = match read_head(shared, &mut stream, &mut buf, line_end) {
            ReadHead::Ready(n) => n,
            ReadHead::TooLong => {
                let _ = stream.write_all(b"CLIENT_ERROR line too long\r\n");
                shared.done(Duration::ZERO, 0, 0, 400);
                return;
            }
            ReadHead::TimedOut | ReadHead::Closed => return,
        };
        let started = Instant::now();
        let line: Vec<u8> = buf.drain(..n).collect();
        let words: Vec<&[u8]> = line[..n - 2].split(|&b| b == b' ').filter(|w| !w.is_empty()).collect();
        let (status, payload, copied, from_host, keep) = match words.first().copied() {
            Some(b"get") | Some(b"gets") if words.len() > 1 => get(shared, &mut stream, &mut nic, &words[1..], words[0] == b"gets"),
            Some(b"version") => (200, 0, 0, 0, stream.write_all(b"VERSION peerpath-serve\r\n").is_ok()),
            Some(b"quit") => return,
            Some(b"set") | Some(b"add") | Some(b"replace") | Some(b"delete") => {
                // Read-only: the store is the directory.
                (405, 0, 0, 0, stream.write_all(b"SERVER_ERROR read-only: objects are the files under the served directory\r\n").is_ok())
            }
            _ => (400, 0, 0, 0, stream.write_all(b"ERROR\r\n").is_ok()),
        };
        shared.done_from(started.elapsed(), payload, copied, from_host, status);
        if !keep {
            return;
        }
    }
}

fn valid_key(k: &[u8]) -> bool {
    !k.is_empty() && k.len() <= 250 && k.iter().all(|&b| b > b' ' && b != 0x7f)
}

/// Answers `get`/`gets` for `keys`: a VALUE block per key that names a
/// file, then END. Returns (status, payload, copied, from host memory, keep).
fn get(shared: &Shared, stream: &mut TcpStream, nic: &mut Option<crate::nic::Channel>, keys: &[&[u8]], cas: bool) -> (u16, u64, u64, u64, bool) {
    let (mut payload, mut copied, mut from_host) = (0u64, 0u64, 0u64);
    for k in keys {
        if !valid_key(k) {
            return (400, payload, copied, from_host, stream.write_all(b"CLIENT_ERROR bad key\r\n").is_ok());
        }
        let Ok(found) = resolve(&shared.root, k) else { continue };
        let mut head = b"VALUE ".to_vec();
        head.extend_from_slice(k);
        head.extend_from_slice(format!(" 0 {}{}\r\n", found.len, if cas { " 0" } else { "" }).as_bytes());
        let sent = respond(shared, stream, nic, &head, &found, 0, found.len);
        payload += sent.payload;
        copied += sent.copied;
        from_host += sent.from_host;
        if sent.close || stream.write_all(b"\r\n").is_err() {
            return (200, payload, copied, from_host, false);
        }
    }
    (200, payload, copied, from_host, stream.write_all(b"END\r\n").is_ok())
}
