//! The job server's wire format (`peerpath daemon`, its client `PEERPATH_DAEMON`): what a client
//! sends (its request: a length, then JSON) and what the daemon answers (a JSON line each),
//! as pure functions over bytes. A client is untrusted input for the daemon (any process of
//! its user, or root), so these are fuzzed (`fuzz/fuzz_targets/daemon_protocol.rs`); the
//! sockets, descriptors and deadlines are the CLI's (`crates/peerpath-cli/src/daemon.rs`).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;

/// A request is a command line and a few names: anything bigger is not one.
pub const MAX_REQUEST_BYTES: u32 = 1 << 20;
/// The byte a client sends when its job may start ([`Reply::Started`]).
pub const GO: u8 = b'g';

/// What the client asks for.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// Which peerpath binary the client is (the daemon runs only its own build's command lines).
    pub exe: ExeId,
    pub argv: Vec<Vec<u8>>,
    pub cwd: Vec<u8>,
    pub umask: u32,
    /// The variables jobs read, as the client has them.
    pub env: BTreeMap<String, Vec<u8>>,
}

/// A binary's identity: the file the process runs (a rebuilt binary is a new file).
#[derive(Serialize, Deserialize, Clone, Copy, PartialEq, Eq, Debug)]
pub struct ExeId {
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mtime_ns: i128,
}

impl ExeId {
    pub fn of_this_process() -> std::io::Result<ExeId> {
        let m = std::fs::metadata("/proc/self/exe")?;
        Ok(ExeId { dev: m.dev(), ino: m.ino(), size: m.size(), mtime_ns: m.mtime() as i128 * 1_000_000_000 + m.mtime_nsec() as i128 })
    }
}

/// The daemon's answers, a JSON line each.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// The request was read: the client sends its standard streams (the daemon's first answer).
    Descriptors,
    /// The request was read and the job is queued, behind `ahead` jobs (running or waiting).
    Queued { ahead: usize },
    /// The job starts once the client says go ([`GO`]; it may have waited for the jobs before it).
    Started { job: u64 },
    /// The daemon will not run it, and why: the client runs it itself, or fails with `--no-fallback`.
    Refused { why: String },
    /// The job ended with this exit code.
    Exit { code: u8 },
}

/// The request as one message: its JSON's length (4 bytes, little-endian), then the JSON.
/// `Err`: the JSON is longer than a daemon takes ([`MAX_REQUEST_BYTES`]), said.
pub fn encode_request(request: &Request) -> Result<Vec<u8>, String> {
    let body = serde_json::to_vec(request).expect("a request's fields (bytes, integers, string keys) always serialize");
    let len = u32::try_from(body.len()).ok().filter(|&n| n <= MAX_REQUEST_BYTES).ok_or_else(|| too_long(body.len()))?;
    let mut message = len.to_le_bytes().to_vec();
    message.extend_from_slice(&body);
    Ok(message)
}

fn too_long(len: usize) -> String {
    format!("a request of {len} bytes (at most {MAX_REQUEST_BYTES}: a command line that long is not run in the daemon)")
}

/// The length of the request's JSON, from the message's first 4 bytes: at most
/// [`MAX_REQUEST_BYTES`], checked before anything is allocated for it.
pub fn request_length(prefix: [u8; 4]) -> Result<usize, String> {
    let len = u32::from_le_bytes(prefix);
    if len > MAX_REQUEST_BYTES {
        return Err(too_long(len as usize));
    }
    Ok(len as usize)
}

/// The request in a message's JSON (the bytes after its length).
pub fn decode_request(body: &[u8]) -> Result<Request, String> {
    serde_json::from_slice(body).map_err(|e| format!("not a request: {e}"))
}

/// A reply as the daemon sends it: its JSON line.
pub fn encode_reply(reply: &Reply) -> Vec<u8> {
    let mut line = serde_json::to_vec(reply).expect("a reply's fields (integers, a string) always serialize");
    line.push(b'\n');
    line
}

/// A reply in a line the daemon sent (without its newline).
pub fn decode_reply(line: &str) -> Result<Reply, String> {
    serde_json::from_str(line).map_err(|e| format!("a reply that is not one ({e}): {line}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(argv: &[&[u8]]) -> Request {
        Request {
            exe: ExeId { dev: 1, ino: 2, size: 3, mtime_ns: -4 },
            argv: argv.iter().map(|a| a.to_vec()).collect(),
            cwd: b"/tmp/\xff\n".to_vec(),
            umask: 0o022,
            env: [("PEERPATH_KEY".to_string(), b"k".to_vec())].into(),
        }
    }

    #[test]
    fn a_request_reads_back_from_its_message() {
        let r = request(&[b"peerpath", b"verify", b"a\nb\xff"]);
        let m = encode_request(&r).unwrap();
        let len = request_length(m[..4].try_into().unwrap()).unwrap();
        assert_eq!(len, m.len() - 4);
        assert_eq!(decode_request(&m[4..]), Ok(r));
        for reply in [Reply::Descriptors, Reply::Queued { ahead: 3 }, Reply::Started { job: 9 }, Reply::Refused { why: "a\nb".into() }, Reply::Exit { code: 18 }] {
            let line = encode_reply(&reply);
            assert_eq!(line.iter().filter(|&&b| b == b'\n').count(), 1, "one line");
            assert_eq!(decode_reply(std::str::from_utf8(&line[..line.len() - 1]).unwrap()), Ok(reply));
        }
    }

    /// A client sent a request of any length (its command line: `compress` of many files), and
    /// a daemon closed the connection on one past its bound, saying why only in its log: the
    /// client said "the connection closed". A request a daemon would not take is not sent.
    #[test]
    fn a_request_longer_than_a_daemon_takes_is_refused_before_it_is_sent() {
        let long = vec![b'a'; MAX_REQUEST_BYTES as usize / 3];
        let why = encode_request(&request(&[b"peerpath", b"verify", &long])).unwrap_err();
        assert!(why.starts_with("a request of ") && why.contains(&format!("at most {MAX_REQUEST_BYTES}")), "{why}");
        assert!(encode_request(&request(&[b"peerpath", b"verify", &long[..1000]])).is_ok());
    }

    #[test]
    fn a_length_past_the_bound_is_refused_before_anything_is_allocated() {
        assert_eq!(request_length(MAX_REQUEST_BYTES.to_le_bytes()), Ok(MAX_REQUEST_BYTES as usize));
        for len in [MAX_REQUEST_BYTES + 1, u32::MAX] {
            let why = request_length(len.to_le_bytes()).unwrap_err();
            assert!(why.starts_with(&format!("a request of {len} bytes")), "{why}");
        }
    }

    #[test]
    fn bytes_that_are_not_a_request_are_said() {
        for body in [&b""[..], b"{", b"[]", b"{\"exe\":1}", b"\xff\xfe"] {
            assert!(decode_request(body).unwrap_err().starts_with("not a request: "), "{body:?}");
        }
    }
}
