//! A server running in this process on loopback, asked as a client asks: preconditions
//! (If-Match, If-Unmodified-Since: 412; an unsatisfiable Range before them: 416), entity tags
//! across rewrites, and what `max_requests` counts.

use peerpath_serve::{Config, Report, Server};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

struct Running {
    http: SocketAddr,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<Report>,
    dir: tempfile::TempDir,
}

impl Running {
    /// Stops the server (if it has not stopped by itself) and returns its report.
    fn report(self) -> Report {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.thread.join().unwrap()
    }
}

/// A server of a directory holding `a` (`hello\n`), configured by `with`.
fn start(with: impl FnOnce(&mut Config)) -> Running {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a"), b"hello\n").unwrap();
    let mut c = Config::new(dir.path().canonicalize().unwrap());
    c.http = Some("127.0.0.1:0".parse().unwrap());
    c.read_timeout = Duration::from_secs(30);
    with(&mut c);
    let server = Server::bind(c).unwrap();
    let (http, stop) = (server.http_addr().unwrap(), server.stop_flag());
    let thread = std::thread::spawn(move || server.run());
    Running { http, stop, thread, dir }
}

fn connect(addr: SocketAddr) -> BufReader<TcpStream> {
    let c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    BufReader::new(c)
}

/// Sends a request on a kept connection and reads its answer: the head, and the body its
/// Content-Length says (none to a HEAD).
fn ask(c: &mut BufReader<TcpStream>, request: &str) -> (String, Vec<u8>) {
    c.get_mut().write_all(request.as_bytes()).unwrap();
    let mut head = String::new();
    loop {
        let mut line = String::new();
        assert!(c.read_line(&mut line).unwrap() > 0, "closed after {head:?}");
        head.push_str(&line);
        if line == "\r\n" {
            break;
        }
    }
    let len = field(&head, "content-length").map_or(0, |v| v.parse().unwrap());
    let mut body = vec![0; if request.starts_with("HEAD ") { 0 } else { len }];
    c.read_exact(&mut body).unwrap();
    (head, body)
}

/// A header field's value in a response head.
fn field<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|l| l.split_once(':').filter(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.trim()))
}

fn get(path: &str, fields: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: x\r\n{fields}\r\n")
}

/// RFC 9110 §13.1.1, §13.1.4, §13.2.2: an `If-Match` that does not name the file's tag (strong
/// comparison), or without one an `If-Unmodified-Since` before its Last-Modified, is 412,
/// evaluated before `If-None-Match`; the connection is kept. (They were ignored: 200.)
#[test]
fn failed_preconditions_get_412_before_anything_else() {
    let s = start(|_| {});
    let mut c = connect(s.http);
    let (head, body) = ask(&mut c, &get("/a", ""));
    assert!(head.starts_with("HTTP/1.1 200") && body == b"hello\n", "{head}");
    let etag = field(&head, "etag").unwrap().to_string();
    let modified = field(&head, "last-modified").unwrap().to_string();
    for (fields, status) in [
        (format!("If-Match: {etag}\r\n"), 200),
        ("If-Match: *\r\n".to_string(), 200),
        (format!("If-Match: \"other\", {etag}\r\n"), 200),
        ("If-Match: \"other\"\r\n".to_string(), 412),
        (format!("If-Match: W/{etag}\r\n"), 412),
        // If-Match first: a current copy (If-None-Match) does not make it 304.
        (format!("If-Match: \"other\"\r\nIf-None-Match: {etag}\r\n"), 412),
        (format!("If-Match: {etag}\r\nIf-None-Match: {etag}\r\n"), 304),
        (format!("If-Unmodified-Since: {modified}\r\n"), 200),
        ("If-Unmodified-Since: Fri, 01 Jan 2100 00:00:00 GMT\r\n".to_string(), 200),
        ("If-Unmodified-Since: Thu, 01 Jan 1970 00:00:00 GMT\r\n".to_string(), 412),
        ("If-Unmodified-Since: not a date\r\n".to_string(), 200),
        // If-Match there: If-Unmodified-Since is not looked at.
        (format!("If-Match: {etag}\r\nIf-Unmodified-Since: Thu, 01 Jan 1970 00:00:00 GMT\r\n"), 200),
        (format!("If-Unmodified-Since: Thu, 01 Jan 1970 00:00:00 GMT\r\nRange: bytes=0-1\r\nIf-Range: {etag}\r\n"), 412),
    ] {
        let (head, body) = ask(&mut c, &get("/a", &fields));
        assert!(head.starts_with(&format!("HTTP/1.1 {status} ")), "{fields:?}: {head}");
        assert!(status != 200 || body == b"hello\n", "{fields:?}: {body:?}");
        assert!(status != 412 || body == b"412 Precondition Failed\n", "{fields:?}: {body:?}");
    }
    let (head, body) = ask(&mut c, "HEAD /a HTTP/1.1\r\nHost: x\r\nIf-Match: \"other\"\r\n\r\n");
    assert!(head.starts_with("HTTP/1.1 412 ") && body.is_empty(), "{head}");
    assert_eq!(field(&head, "connection"), Some("keep-alive"));
    drop(c);
    let report = s.report();
    assert_eq!(report.by_status, [(200, 8), (304, 1), (412, 6)].into(), "every 412 counted under its status");
}

/// RFC 9110 §13.2.1: preconditions are evaluated only where the response would otherwise be 2xx,
/// so a Range `a` (6 bytes) cannot satisfy is 416 whatever they say, its Content-Range saying
/// the length (a GET's: a HEAD's Range is ignored, see `a_heads_range_is_ignored`); one a stale If-Range drops is not, and they stand. (A failing
/// If-Match or If-Unmodified-Since made it 412, a current If-None-Match or If-Modified-Since 304.)
#[test]
fn an_unsatisfiable_range_is_416_before_any_precondition() {
    let s = start(|_| {});
    let mut c = connect(s.http);
    let (head, _) = ask(&mut c, &get("/a", ""));
    let etag = field(&head, "etag").unwrap().to_string();
    let modified = field(&head, "last-modified").unwrap().to_string();
    let unsatisfiable = "Range: bytes=6-\r\n";
    for (fields, status) in [
        ("If-Match: \"other\"\r\n".to_string(), 416),
        ("If-Unmodified-Since: Thu, 01 Jan 1970 00:00:00 GMT\r\n".to_string(), 416),
        (format!("If-None-Match: {etag}\r\n"), 416),
        (format!("If-Modified-Since: {modified}\r\n"), 416),
        (format!("If-Match: \"other\"\r\nIf-None-Match: {etag}\r\n"), 416),
        // A stale If-Range: the Range is ignored, the preconditions answer.
        (format!("If-None-Match: {etag}\r\nIf-Range: \"other\"\r\n"), 304),
        ("If-Match: \"other\"\r\nIf-Range: \"other\"\r\n".to_string(), 412),
        ("If-Range: \"other\"\r\n".to_string(), 200),
    ] {
        let (head, body) = ask(&mut c, &get("/a", &format!("{fields}{unsatisfiable}")));
        assert!(head.starts_with(&format!("HTTP/1.1 {status} ")), "{fields:?}: {head}");
        assert!(status != 416 || (field(&head, "content-range") == Some("bytes */6") && body == b"416 Range Not Satisfiable\n"), "{fields:?}: {head}");
    }
    // A satisfiable Range: the preconditions answer as before.
    for (fields, status) in [("If-Match: \"other\"\r\n".to_string(), 412), (format!("If-None-Match: {etag}\r\n"), 304), (format!("If-Match: {etag}\r\n"), 206)] {
        let (head, _) = ask(&mut c, &get("/a", &format!("{fields}Range: bytes=5-\r\n")));
        assert!(head.starts_with(&format!("HTTP/1.1 {status} ")), "{fields:?}: {head}");
    }
    drop(c);
    let report = s.report();
    assert_eq!(report.by_status, [(200, 2), (206, 1), (304, 2), (412, 2), (416, 5)].into(), "{:?}", report.by_status);
}

/// A file rewritten at the same length with its modification time as before (a rewrite within
/// one tick of it looks the same) is another version: its tag changes with its change time, so a
/// cache's If-None-Match gets the new bytes, not 304; Last-Modified stays. (The tag had no change
/// time: 304, and the cache kept the old content.)
#[test]
fn a_rewrite_within_the_modification_times_tick_changes_the_entity_tag() {
    let s = start(|_| {});
    let path = s.dir.path().join("a");
    let mut c = connect(s.http);
    let (head, _) = ask(&mut c, &get("/a", ""));
    let (etag, modified) = (field(&head, "etag").unwrap().to_string(), field(&head, "last-modified").unwrap().to_string());
    let before = std::fs::metadata(&path).unwrap();
    // Rewritten until its change time moves (a coarse clock may need a tick), its modification time set back.
    loop {
        std::fs::write(&path, b"HELLO\n").unwrap();
        std::fs::File::options().write(true).open(&path).unwrap().set_modified(before.modified().unwrap()).unwrap();
        let after = std::fs::metadata(&path).unwrap();
        assert_eq!((after.modified().unwrap(), after.len()), (before.modified().unwrap(), before.len()));
        use std::os::unix::fs::MetadataExt;
        if (after.ctime(), after.ctime_nsec()) != (before.ctime(), before.ctime_nsec()) {
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let (head, body) = ask(&mut c, &get("/a", &format!("If-None-Match: {etag}\r\n")));
    assert!(head.starts_with("HTTP/1.1 200") && body == b"HELLO\n", "{head}");
    assert_ne!(field(&head, "etag"), Some(&etag[..]));
    assert_eq!(field(&head, "last-modified"), Some(&modified[..]));
    drop(c);
    s.report();
}

/// Connections refused at the limit (503) are counted under their status, not toward
/// `max_requests`: a burst of them does not end the server before it has answered that many
/// requests. (Two refusals after one request ended a 2-request server, its client's second
/// request unanswered.)
#[test]
fn refused_connections_do_not_spend_the_request_budget() {
    let s = start(|c| {
        c.max_connections = 1;
        c.max_requests = Some(2);
    });
    let mut held = connect(s.http);
    assert_eq!(ask(&mut held, &get("/a", "")).1, b"hello\n");
    for _ in 0..3 {
        let mut refused = connect(s.http);
        refused.get_mut().write_all(get("/a", "").as_bytes()).unwrap();
        let mut got = Vec::new();
        let _ = refused.read_to_end(&mut got);
        assert!(got.starts_with(b"HTTP/1.1 503 "), "{:?}", String::from_utf8_lossy(&got));
    }
    assert_eq!(ask(&mut held, &get("/a", "")).1, b"hello\n");
    // The budget is spent: the server stops by itself.
    let report = s.thread.join().unwrap();
    assert_eq!(report.by_status, [(200, 2), (503, 3)].into());
    assert_eq!((report.requests, report.aborted), (5, 0));
}

/// RFC 9110 §14.2: a server must ignore a Range received with a method range handling is not
/// defined for, which is every one but GET: a HEAD with a Range, satisfiable or not, If-Range
/// or not, is answered as without it (200, the whole file's Content-Length, no Content-Range),
/// its preconditions standing; a GET's Range is served as before. (A HEAD got 206 or 416.)
#[test]
fn a_heads_range_is_ignored() {
    let s = start(|_| {});
    let mut c = connect(s.http);
    let (head, _) = ask(&mut c, &get("/a", ""));
    let etag = field(&head, "etag").unwrap().to_string();
    let mut heads = 0;
    for range in ["bytes=0-1", "bytes=5-", "bytes=6-", "bytes=-0"] {
        for if_range in [String::new(), format!("If-Range: {etag}\r\n"), "If-Range: \"other\"\r\n".to_string()] {
            let (head, body) = ask(&mut c, &format!("HEAD /a HTTP/1.1\r\nHost: x\r\nRange: {range}\r\n{if_range}\r\n"));
            assert!(head.starts_with("HTTP/1.1 200 ") && body.is_empty(), "{range} {if_range:?}: {head}");
            assert_eq!((field(&head, "content-length"), field(&head, "content-range")), (Some("6"), None), "{range} {if_range:?}: {head}");
            assert_eq!(field(&head, "connection"), Some("keep-alive"));
            heads += 1;
        }
    }
    let (head, _) = ask(&mut c, &format!("HEAD /a HTTP/1.1\r\nHost: x\r\nIf-None-Match: {etag}\r\nRange: bytes=6-\r\n\r\n"));
    assert!(head.starts_with("HTTP/1.1 304 "), "{head}");
    let (head, body) = ask(&mut c, &get("/a", "Range: bytes=0-1\r\n"));
    assert!(head.starts_with("HTTP/1.1 206 ") && field(&head, "content-range") == Some("bytes 0-1/6") && body == b"he", "{head}");
    let (head, _) = ask(&mut c, &get("/a", "Range: bytes=6-\r\n"));
    assert!(head.starts_with("HTTP/1.1 416 ") && field(&head, "content-range") == Some("bytes */6"), "{head}");
    drop(c);
    let report = s.report();
    assert_eq!(report.by_status, [(200, 1 + heads), (206, 1), (304, 1), (416, 1)].into(), "{:?}", report.by_status);
}
