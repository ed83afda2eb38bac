//! The request parsers fuzzed through a running server: random bytes and
//! mutations of valid HTTP and memcached requests (set included, with the
//! store writable). Whatever arrives, the server answers in its protocol or
//! closes, never sends a byte of a file outside its root, never stores
//! outside it, and goes on serving exact bytes to the next valid request.

use peerpath_serve::{Config, Server};
use proptest::prelude::*;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::Duration;

/// A secret beside the root, reachable only by escaping it.
const SECRET: &[u8] = b"SECRET-OUTSIDE-THE-ROOT-7f3a";

struct Running {
    http: SocketAddr,
    memcached: SocketAddr,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    dir: tempfile::TempDir,
    file: Vec<u8>,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn start() -> Running {
    start_with(Some(64 << 10))
}

/// A server whose `set` takes up to `max_set_bytes` (`None`: read-only).
fn start_with(max_set_bytes: Option<u64>) -> Running {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir_all(root.join("sub")).unwrap();
    let file: Vec<u8> = (0..50_000u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(root.join("sub/f"), &file).unwrap();
    std::fs::write(root.join("k"), b"value").unwrap();
    std::fs::write(dir.path().join("secret"), SECRET).unwrap();
    std::os::unix::fs::symlink(dir.path().join("secret"), root.join("link")).unwrap();
    let mut c = Config::new(root.canonicalize().unwrap());
    c.http = Some("127.0.0.1:0".parse().unwrap());
    c.memcached = Some("127.0.0.1:0".parse().unwrap());
    c.read_timeout = Duration::from_secs(2);
    c.max_header_bytes = 4096;
    c.max_set_bytes = max_set_bytes;
    let server = Server::bind(c).unwrap();
    let (http, memcached, stop) = (server.http_addr().unwrap(), server.memcached_addr().unwrap(), server.stop_flag());
    let thread = std::thread::spawn(move || {
        server.run();
    });
    Running { http, memcached, stop, thread: Some(thread), dir, file }
}

/// Sends `bytes`, closes the sending side, and reads what comes back (the
/// server answers or closes; a read timeout bounds a stuck one).
fn exchange(addr: SocketAddr, bytes: &[u8]) -> Vec<u8> {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let _ = s.write_all(bytes);
    let _ = s.shutdown(std::net::Shutdown::Write);
    let mut got = Vec::new();
    let _ = s.read_to_end(&mut got);
    got
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// The server still serves exact bytes over both protocols.
fn still_serves(r: &Running) {
    let got = exchange(r.http, b"GET /sub/f HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    let body = got.windows(4).position(|w| w == b"\r\n\r\n").map(|i| &got[i + 4..]).unwrap_or(&[]);
    assert!(got.starts_with(b"HTTP/1.1 200") && body == r.file.as_slice(), "after fuzzing: {:?}", String::from_utf8_lossy(&got[..got.len().min(200)]));
    let got = exchange(r.memcached, b"get k\r\n");
    assert_eq!(got, b"VALUE k 0 5\r\nvalue\r\nEND\r\n");
}

/// Files under the scratch directory, but the root's own (set may add files there).
fn outside_root(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).filter(|p| !p.ends_with("root")).collect();
    v.sort();
    v
}

fn mutate(valid: &[u8], edits: &[(usize, u8, u8)]) -> Vec<u8> {
    let mut v = valid.to_vec();
    for &(at, op, byte) in edits {
        let at = if v.is_empty() { 0 } else { at % (v.len() + 1) };
        match op % 3 {
            0 => v.insert(at, byte),
            1 if at < v.len() => {
                v.remove(at);
            }
            _ if at < v.len() => v[at] = byte,
            _ => v.push(byte),
        }
    }
    v
}

const HTTP_SEEDS: [&[u8]; 4] = [
    b"GET /sub/f HTTP/1.1\r\nHost: x\r\nRange: bytes=100-199\r\n\r\n",
    b"HEAD /k HTTP/1.1\r\nConnection: keep-alive\r\n\r\nGET /k HTTP/1.1\r\n\r\n",
    b"GET /../secret HTTP/1.1\r\nRange: bytes=-5\r\n\r\n",
    b"GET /link%2f..%2F..%2fsecret HTTP/1.0\r\n\r\n",
];
const MEMCACHED_SEEDS: [&[u8]; 4] = [b"get k sub/f\r\n", b"gets k k k\r\n", b"set n 0 0 5\r\nhello\r\nget n\r\n", b"set ../x 0 0 3 noreply\r\nabc\r\nquit\r\n"];

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn any_bytes_to_either_protocol_get_an_answer_or_a_close_and_nothing_escapes(
        seed in 0usize..8,
        edits in proptest::collection::vec((any::<usize>(), any::<u8>(), any::<u8>()), 0..12),
        noise in proptest::collection::vec(any::<u8>(), 0..600),
        raw in any::<bool>(),
    ) {
        thread_local!(static SERVER: Running = start());
        SERVER.with(|r| {
            let (addr, base) = if seed < 4 { (r.http, HTTP_SEEDS[seed]) } else { (r.memcached, MEMCACHED_SEEDS[seed - 4]) };
            let input = if raw { noise.clone() } else { mutate(base, &edits) };
            let got = exchange(addr, &input);
            prop_assert!(!contains(&got, SECRET), "the secret left the root for {:?}", String::from_utf8_lossy(&input));
            if seed < 4 && !got.is_empty() {
                prop_assert!(got.starts_with(b"HTTP/1.1 "), "not HTTP: {:?}", String::from_utf8_lossy(&got[..got.len().min(80)]));
            }
            prop_assert_eq!(outside_root(r.dir.path()), vec![r.dir.path().join("secret")], "something stored outside the root");
            Ok(())
        })?;
    }
}

/// A memcached command the read-only server refuses or answers, and what it
/// answers: `None` where nothing comes back (`noreply`).
#[derive(Debug, Clone)]
enum Command {
    /// A storage command (`set`, `add`, ... `cas`) with its data block.
    Storage { name: &'static str, key: String, data: Vec<u8>, noreply: bool },
    /// A write without a data block, its line's words after its name.
    Write { name: &'static str, args: Vec<String>, noreply: bool },
    Stats,
    Version,
    Get,
}

fn command() -> impl Strategy<Value = Command> {
    let key = "[a-z0-9_./]{1,12}";
    prop_oneof![
        (prop::sample::select(vec!["set", "add", "replace", "append", "prepend", "cas"]), key, proptest::collection::vec(any::<u8>(), 0..400), any::<bool>())
            .prop_map(|(name, key, data, noreply)| Command::Storage { name, key, data, noreply }),
        (key, any::<bool>()).prop_map(|(k, noreply)| Command::Write { name: "delete", args: vec![k], noreply }),
        (prop::sample::select(vec!["incr", "decr", "touch"]), key, any::<u32>(), any::<bool>())
            .prop_map(|(name, k, n, noreply)| Command::Write { name, args: vec![k, n.to_string()], noreply }),
        (prop::sample::select(vec!["gat", "gats"]), any::<u32>(), proptest::collection::vec(key, 1..4))
            .prop_map(|(name, t, keys)| Command::Write { name, args: std::iter::once(t.to_string()).chain(keys).collect(), noreply: false }),
        (proptest::option::of(any::<u32>()), any::<bool>())
            .prop_map(|(delay, noreply)| Command::Write { name: "flush_all", args: delay.into_iter().map(|d| d.to_string()).collect(), noreply }),
        Just(Command::Stats),
        Just(Command::Version),
        Just(Command::Get),
    ]
}

const READ_ONLY: &[u8] = b"SERVER_ERROR read-only: objects are the files under the served directory\r\n";
const GET_K: &[u8] = b"VALUE k 0 5\r\nvalue\r\nEND\r\n";

impl Command {
    fn line(&self) -> Vec<u8> {
        let noreply = |n: bool| if n { " noreply" } else { "" };
        match self {
            Command::Storage { name, key, data, noreply: n } => {
                let unique = if *name == "cas" { " 7" } else { "" };
                let mut v = format!("{name} {key} 0 0 {}{unique}{}\r\n", data.len(), noreply(*n)).into_bytes();
                v.extend_from_slice(data);
                v.extend_from_slice(b"\r\n");
                v
            }
            Command::Write { name, args, noreply: n } => format!("{name} {}{}\r\n", args.join(" "), noreply(*n)).into_bytes(),
            Command::Stats => b"stats\r\n".to_vec(),
            Command::Version => b"version\r\n".to_vec(),
            Command::Get => b"get k\r\n".to_vec(),
        }
    }

    /// Takes this command's answer off the front of `got`; `Err` with what is there instead.
    fn take_answer<'a>(&self, got: &'a [u8]) -> Result<&'a [u8], String> {
        let expect = |want: &[u8]| got.strip_prefix(want).ok_or_else(|| format!("wanted {:?}", String::from_utf8_lossy(want)));
        match self {
            Command::Storage { noreply: true, .. } | Command::Write { noreply: true, .. } => Ok(got),
            Command::Storage { .. } | Command::Write { .. } => expect(READ_ONLY),
            Command::Version => expect(b"VERSION peerpath-serve\r\n"),
            Command::Get => expect(GET_K),
            Command::Stats => {
                let mut rest = got;
                while let Some(after) = rest.strip_prefix(b"STAT ") {
                    let end = after.windows(2).position(|w| w == b"\r\n").ok_or("a STAT line without its end")?;
                    rest = &after[end + 2..];
                }
                rest.strip_prefix(b"END\r\n").ok_or_else(|| "wanted STAT lines, then END".to_string())
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() })]

    /// Pipelined write commands to a read-only server (`set` included), with
    /// `stats`, `version` and `get` between them: each answered in turn
    /// (a storage command's data block read and dropped, whatever its bytes;
    /// `noreply` silent), nothing stored, and the `get` after them all
    /// answered exactly.
    #[test]
    fn pipelined_writes_to_a_read_only_server_stay_in_step(commands in proptest::collection::vec(command(), 0..12)) {
        thread_local!(static SERVER: Running = start_with(None));
        SERVER.with(|r| {
            let mut sent: Vec<u8> = commands.iter().flat_map(Command::line).collect();
            sent.extend_from_slice(b"get k\r\n");
            let got = exchange(r.memcached, &sent);
            let mut rest = &got[..];
            for (i, c) in commands.iter().enumerate() {
                rest = match c.take_answer(rest) {
                    Ok(rest) => rest,
                    Err(why) => return Err(TestCaseError::fail(format!("command {i} {c:?}: {why}; got {:?}", String::from_utf8_lossy(rest)))),
                };
            }
            prop_assert_eq!(String::from_utf8_lossy(rest), String::from_utf8_lossy(GET_K));
            let mut stored: Vec<_> = std::fs::read_dir(r.dir.path().join("root")).unwrap().map(|e| e.unwrap().file_name()).collect();
            stored.sort();
            prop_assert_eq!(stored, ["k", "link", "sub"]);
            Ok(())
        })?;
    }
}

#[test]
fn the_server_serves_exact_bytes_after_fuzzing() {
    let r = start();
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    for i in 0..200 {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let base = if i % 2 == 0 { HTTP_SEEDS[i % 4] } else { MEMCACHED_SEEDS[i % 4] };
        let edits: Vec<(usize, u8, u8)> = (0..(rng % 8)).map(|k| ((rng >> (k * 7)) as usize, (rng >> (k * 3)) as u8, (rng >> (k * 5 + 1)) as u8)).collect();
        let got = exchange(if i % 2 == 0 { r.http } else { r.memcached }, &mutate(base, &edits));
        assert!(!contains(&got, SECRET));
    }
    still_serves(&r);
    assert_eq!(outside_root(r.dir.path()), vec![r.dir.path().join("secret")]);
}
