//! `peerpath serve`'s request parsers on arbitrary bytes, through a server
//! running in this process on loopback (HTTP/1.1 and memcached, `set`
//! allowed): the first byte picks HTTP, memcached, or the name resolver
//! alone (`peerpath_serve::resolve`, which both use); the rest is sent, its
//! sending side then closed, and the answer read to its end. Whatever
//! arrives: an HTTP answer (or a close) to HTTP, no byte of a file outside
//! the root in any answer, nothing stored outside the root, no name
//! resolved to a file outside it; and every 4096 inputs the server still
//! serves a file's exact bytes.
#![no_main]

#[path = "common/scratch.rs"]
mod scratch;

use libfuzzer_sys::fuzz_target;
use peerpath_serve::{resolve, Config, Root, Server};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

/// A secret beside the root, reachable only by escaping it.
const SECRET: &[u8] = b"SECRET-OUTSIDE-THE-ROOT-7f3a";

struct Running {
    http: SocketAddr,
    memcached: SocketAddr,
    dir: PathBuf,
    root: Root,
    file: Vec<u8>,
}

fn running() -> &'static Running {
    static RUNNING: OnceLock<Running> = OnceLock::new();
    RUNNING.get_or_init(|| {
        let dir = scratch::scratch_dir("serve_requests");
        let root = dir.join("root");
        std::fs::create_dir_all(root.join("sub")).expect("the root");
        let file: Vec<u8> = (0..50_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(root.join("sub/f"), &file).expect("a file");
        std::fs::write(root.join("k"), b"value").expect("a file");
        std::fs::write(dir.join("secret"), SECRET).expect("the secret");
        std::os::unix::fs::symlink(dir.join("secret"), root.join("link")).expect("a link out");
        std::os::unix::fs::symlink("../secret", root.join("sub/up")).expect("a link out");
        let root = root.canonicalize().expect("the root");
        let mut c = Config::new(root.clone());
        c.http = Some("127.0.0.1:0".parse().expect("an address"));
        c.memcached = Some("127.0.0.1:0".parse().expect("an address"));
        c.read_timeout = Duration::from_secs(2);
        c.max_header_bytes = 4096;
        c.max_set_bytes = Some(256);
        c.workers = 4;
        let server = Server::bind(c).expect("the server binds");
        let (http, memcached) = (server.http_addr().expect("HTTP"), server.memcached_addr().expect("memcached"));
        std::thread::spawn(move || {
            server.run();
        });
        Running { http, memcached, dir, root: Root::open(&root).expect("the root opens"), file }
    })
}

fn exchange(addr: SocketAddr, bytes: &[u8]) -> Vec<u8> {
    let mut s = TcpStream::connect(addr).expect("the server takes connections");
    s.set_read_timeout(Some(Duration::from_secs(20))).expect("a timeout");
    let _ = s.write_all(bytes);
    let _ = s.shutdown(std::net::Shutdown::Write);
    let mut got = Vec::new();
    let _ = s.read_to_end(&mut got);
    got
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

fn shown(b: &[u8]) -> String {
    String::from_utf8_lossy(&b[..b.len().min(200)]).into_owned()
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else { return };
    let r = running();
    match mode % 3 {
        0 => {
            let got = exchange(r.http, rest);
            assert!(got.is_empty() || got.starts_with(b"HTTP/1.1 "), "not HTTP for {:?}: {:?}", shown(rest), shown(&got));
            assert!(!contains(&got, SECRET), "the secret left the root for {:?}", shown(rest));
        }
        1 => {
            let got = exchange(r.memcached, rest);
            assert!(!contains(&got, SECRET), "the secret left the root for {:?}", shown(rest));
        }
        _ => {
            if let Ok(mut found) = resolve(&r.root, rest) {
                assert!(found.path.starts_with(&r.root.path), "{:?} resolved to {}", shown(rest), found.path.display());
                let mut bytes = Vec::new();
                found.file.read_to_end(&mut bytes).expect("a resolved file reads");
                assert!(bytes != SECRET, "{:?} resolved to the secret", shown(rest));
            }
        }
    }
    let left: Vec<_> = std::fs::read_dir(&r.dir).expect("the scratch directory").flatten().map(|e| e.file_name()).filter(|n| n != "root" && n != "secret").collect();
    assert!(left.is_empty(), "stored outside the root: {left:?} after {:?}", shown(rest));
    assert_eq!(std::fs::read(r.dir.join("secret")).expect("the secret"), SECRET, "the secret was written through after {:?}", shown(rest));
    static RUNS: AtomicU64 = AtomicU64::new(0);
    if RUNS.fetch_add(1, Ordering::Relaxed).is_multiple_of(4096) {
        let got = exchange(r.http, b"GET /sub/f HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        let body = got.windows(4).position(|w| w == b"\r\n\r\n").map(|i| &got[i + 4..]).unwrap_or(&[]);
        assert!(got.starts_with(b"HTTP/1.1 200") && body == r.file.as_slice(), "after {:?} the file is not served exactly: {:?}", shown(rest), shown(&got));
    }
});
