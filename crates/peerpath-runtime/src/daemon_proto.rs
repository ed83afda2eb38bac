//! The job server's wire format (`peerpath daemon`, its client `PEERPATH_DAEMON`): what a client
//! sends (its request: a length, then JSON) and what the daemon answers (a JSON line each),
//! as pure functions over bytes. A client is untrusted input for the daemon (any process of
//! its user, or root), so these are fuzzed (`fuzz/fuzz_targets/daemon_protocol.rs`); the
//! sockets, descriptors and deadlines are the CLI's (`crates/peerpath-cli/src/daemon.rs`).

use serde::de::{DeserializeSeed, Deserializer, SeqAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};
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
    /// Its command line, `peerpath` first.
    pub argv: ByteStrings,
    pub cwd: Vec<u8>,
    pub umask: u32,
    /// The variables jobs read, as the client has them: `NAME=VALUE` each ([`variables`],
    /// [`Request::environment`]).
    pub env: ByteStrings,
}

impl Request {
    /// Its variables by name.
    pub fn environment(&self) -> BTreeMap<String, Vec<u8>> {
        self.env.iter().filter_map(variable).map(|(k, v)| (k.to_string(), v.to_vec())).collect()
    }
}

/// Variables by name as a request holds them (`NAME=VALUE` each): `Err` where a value holds a NUL
/// (none of a process's environment can).
pub fn variables(env: &BTreeMap<String, Vec<u8>>) -> Result<ByteStrings, String> {
    ByteStrings::new(env.iter().map(|(k, v)| [k.as_bytes(), b"=", v].concat()))
}

/// A `NAME=VALUE` as [`Request::environment`] takes it: `None` where there is no `=` or the name
/// is not UTF-8 ([`decode_request`] refuses such a request).
fn variable(entry: &[u8]) -> Option<(&str, &[u8])> {
    let at = entry.iter().position(|&b| b == b'=')?;
    Some((std::str::from_utf8(&entry[..at]).ok()?, &entry[at + 1..]))
}

/// Byte strings (a command line's arguments, an environment's `NAME=VALUE`s), each ended by a NUL
/// in one buffer, as the kernel keeps a process's (`/proc/PID/cmdline`, `environ`): none can hold
/// a NUL. A request decodes to no more bytes than its own length, however many strings it holds:
/// a vector each (24 bytes, and an allocation) made a 1 MiB request of empty arguments 10 MiB,
/// of short variables 14 MiB, for each of the 128 requests a daemon holds at once. Sent as a JSON
/// array: each a string where it is UTF-8 (a byte a byte, not the 2 to 4 of a number), an array
/// of its bytes where not.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct ByteStrings(Vec<u8>);

impl ByteStrings {
    /// `Err`: one holds a NUL, which no argument nor environment variable of a process can.
    pub fn new<T: AsRef<[u8]>>(items: impl IntoIterator<Item = T>) -> Result<ByteStrings, String> {
        let mut all = Vec::new();
        for item in items {
            push(&mut all, item.as_ref())?;
        }
        Ok(ByteStrings(all))
    }

    pub fn iter(&self) -> impl Iterator<Item = &[u8]> {
        self.0.split_inclusive(|&b| b == 0).map(|s| &s[..s.len() - 1])
    }

    /// All their bytes, each ended by a NUL: what the request holds in memory for them.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

/// Why byte strings are refused (not showing them: a variable may be a key).
const NUL: &str = "a NUL byte in an argument or variable";

/// Appends `item` and its NUL to `all`.
fn push(all: &mut Vec<u8>, item: &[u8]) -> Result<(), String> {
    if item.contains(&0) {
        return Err(NUL.into());
    }
    all.extend_from_slice(item);
    all.push(0);
    Ok(())
}

impl Serialize for ByteStrings {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        struct One<'a>(&'a [u8]);
        impl Serialize for One<'_> {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                match std::str::from_utf8(self.0) {
                    Ok(text) => serializer.serialize_str(text),
                    Err(_) => serializer.collect_seq(self.0),
                }
            }
        }
        serializer.collect_seq(self.iter().map(One))
    }
}

impl<'de> Deserialize<'de> for ByteStrings {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        /// The array, each string appended to one buffer as it is read.
        struct All;
        impl<'de> Visitor<'de> for All {
            type Value = ByteStrings;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an array of byte strings")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<ByteStrings, A::Error> {
                let mut all = Vec::new();
                while seq.next_element_seed(One(&mut all))?.is_some() {}
                all.shrink_to_fit();
                Ok(ByteStrings(all))
            }
        }
        /// One byte string (a string, or an array of bytes), appended with its NUL.
        struct One<'a>(&'a mut Vec<u8>);
        impl<'de> DeserializeSeed<'de> for One<'_> {
            type Value = ();
            fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
                deserializer.deserialize_any(self)
            }
        }
        impl<'de> Visitor<'de> for One<'_> {
            type Value = ();
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string, or an array of bytes")
            }
            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<(), E> {
                push(self.0, text.as_bytes()).map_err(E::custom)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
                while let Some(b) = seq.next_element::<u8>()? {
                    if b == 0 {
                        return Err(serde::de::Error::custom(NUL));
                    }
                    self.0.push(b);
                }
                self.0.push(0);
                Ok(())
            }
        }
        deserializer.deserialize_seq(All)
    }
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
    let request: Request = serde_json::from_slice(body).map_err(|e| format!("not a request: {e}"))?;
    if request.env.iter().any(|e| variable(e).is_none()) {
        return Err("not a request: a variable that is not NAME=VALUE (its name UTF-8)".into());
    }
    Ok(request)
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
            argv: ByteStrings::new(argv).unwrap(),
            cwd: b"/tmp/\xff\n".to_vec(),
            umask: 0o022,
            env: variables(&[("PEERPATH_KEY".to_string(), b"k".to_vec())].into()).unwrap(),
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

    /// Arguments and variables read back byte for byte (empty ones, ones that are not UTF-8), sent
    /// as text where they are UTF-8; a NUL, which no process's can hold, is refused.
    #[test]
    fn byte_strings_read_back_and_text_is_sent_as_text() {
        let items: [&[u8]; 5] = [b"", b"a b", b"\xff\xfe", b"", "\u{e9}\n".as_bytes()];
        let strings = ByteStrings::new(items).unwrap();
        assert_eq!(strings.iter().collect::<Vec<_>>(), items);
        assert_eq!(strings.as_bytes(), b"\0a b\0\xff\xfe\0\0\xc3\xa9\n\0");
        let json = serde_json::to_string(&strings).unwrap();
        assert_eq!(json, r#"["","a b",[255,254],"","é\n"]"#);
        assert_eq!(serde_json::from_str::<ByteStrings>(&json).unwrap(), strings);
        assert_eq!(ByteStrings::new([&b""[..]; 0]).unwrap().iter().count(), 0);
        assert_eq!(ByteStrings::new([&b"a\0b"[..]]).unwrap_err(), NUL);
        for json in [r#"["a\u0000"]"#, "[[97,0]]", "[[256]]", "[1]", "[{}]", r#""a""#] {
            assert!(serde_json::from_str::<ByteStrings>(json).is_err(), "{json}");
        }
    }

    /// However many arguments or variables a request holds, it decodes to one buffer no longer than
    /// itself: a vector each made a 1 MiB request of empty arguments 10 MiB, of short variables 14 MiB.
    #[test]
    fn a_request_of_many_short_strings_decodes_to_no_more_bytes_than_it_is() {
        let empties = vec![&b""[..]; 100_000];
        let mut many = request(&empties);
        many.env = variables(&(0..50_000).map(|i| (format!("{i:x}"), vec![])).collect()).unwrap();
        let m = encode_request(&many).unwrap();
        let back = decode_request(&m[4..]).unwrap();
        assert_eq!(back.argv.iter().count(), 100_000);
        assert_eq!(back.environment().len(), 50_000);
        assert!(back.argv.as_bytes().len() + back.env.as_bytes().len() + back.cwd.len() <= m.len() - 4);
        assert_eq!(back, many);
    }

    #[test]
    fn variables_read_back_by_name_and_others_are_refused() {
        let env: BTreeMap<String, Vec<u8>> = [("TMPDIR".to_string(), b"/t\xff=x".to_vec()), ("PEERPATH_A".to_string(), vec![])].into();
        let r = Request { env: variables(&env).unwrap(), ..request(&[b"peerpath"]) };
        assert_eq!(r.environment(), env);
        for bad in [&b"NOVALUE"[..], b"\xff=1"] {
            let r = Request { env: ByteStrings::new([bad]).unwrap(), ..request(&[b"peerpath"]) };
            let m = encode_request(&r).unwrap();
            assert!(decode_request(&m[4..]).unwrap_err().contains("a variable that is not NAME=VALUE"), "{bad:?}");
        }
    }

    /// A client sent a request of any length (its command line: `compress` of many files), and
    /// a daemon closed the connection on one past its bound, saying why only in its log: the
    /// client said "the connection closed". A request a daemon would not take is not sent.
    #[test]
    fn a_request_longer_than_a_daemon_takes_is_refused_before_it_is_sent() {
        let long = vec![b'a'; MAX_REQUEST_BYTES as usize];
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
