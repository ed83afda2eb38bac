//! `peerpath serve`: HTTP/1.1 and memcached's text protocol over a
//! directory, in both payload modes; bad requests, escapes, floods and
//! slow clients get their answers; the report counts what was served.

mod common;

use common::*;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

struct Served {
    /// `None` once `finish` has taken it; a test that fails first kills it (Drop).
    child: Option<std::process::Child>,
    http: String,
    memcached: String,
    /// devmem mode: the emulated NIC's process.
    nic: Option<i32>,
    /// What it said on standard error before it listened.
    said: String,
}

/// Starts `peerpath serve` on free ports; it stops after `requests` requests.
fn serve(dir: &std::path::Path, mode: &str, requests: u64) -> Served {
    serve_with(dir, mode, requests, &[])
}

fn serve_with(dir: &std::path::Path, mode: &str, requests: u64, extra: &[&str]) -> Served {
    serve_env(dir, mode, requests, extra, &[])
}

fn serve_env(dir: &std::path::Path, mode: &str, requests: u64, extra: &[&str], env: &[(&str, &std::path::Path)]) -> Served {
    // A read timeout of 5 s unless the test gives its own: a client held up
    // on a loaded machine (between connecting and sending, or in a large
    // body) is not taken for an idle or stalled one.
    let timeout: &[&str] = if extra.contains(&"--read-timeout") { &[] } else { &["--read-timeout", "5"] };
    // SIGINT at its default: a test run that ignores it (a background job) stops no server.
    let mut child = signals_at_default(&mut pp(args!["serve", dir, "--listen", "127.0.0.1:0", "--memcached", "127.0.0.1:0", "--mode", mode, "--max-requests", requests.to_string()]))
        .args(timeout)
        .args(extra)
        .envs(env.iter().copied())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let (mut http, mut memcached, mut nic, mut said) = (String::new(), String::new(), None, String::new());
    while http.is_empty() || memcached.is_empty() {
        let mut line = String::new();
        assert!(err.read_line(&mut line).unwrap() > 0, "serve exited before listening: {said}");
        said.push_str(&line);
        if let Some(p) = line.split("(process ").nth(1) {
            nic = p.trim_end().trim_end_matches(')').parse().ok();
        }
        if let Some(a) = line.split("http://").nth(1) {
            http = a.split('/').next().unwrap().to_string();
        }
        if let Some(a) = line.split("protocol on ").nth(1) {
            memcached = a.trim().to_string();
        }
    }
    Served { child: Some(child), http, memcached, nic, said }
}

/// Sends raw bytes, returns everything the server sends until it closes.
fn exchange(addr: &str, request: &[u8]) -> Vec<u8> {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.write_all(request).unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    out
}

fn split(resp: &[u8]) -> (String, Vec<u8>) {
    let at = resp.windows(4).position(|w| w == b"\r\n\r\n").expect("a header block") + 4;
    (String::from_utf8_lossy(&resp[..at]).into_owned(), resp[at..].to_vec())
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Served {
    fn pid(&self) -> i32 {
        self.child.as_ref().expect("running").id() as i32
    }
}

fn finish(mut s: Served) -> String {
    let out = s.child.take().expect("running").wait_with_output().unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn files_ranges_and_errors_over_http_and_memcached_in_both_modes() {
    let dir = scratch();
    let root = dir.path().join("root");
    std::fs::create_dir_all(root.join("sub")).unwrap();
    let blob = random_bytes(3 << 20, 5);
    std::fs::write(root.join("sub/blob"), &blob).unwrap();
    std::fs::write(root.join("a.txt"), b"hello\n").unwrap();
    std::fs::write(root.join("empty"), b"").unwrap();
    std::fs::write(dir.path().join("secret"), b"outside").unwrap();
    std::os::unix::fs::symlink(dir.path().join("secret"), root.join("out")).unwrap();
    for mode in ["zerocopy", "host", "devmem", "send-zc"] {
        // 1 s: the slow client below is cut at it.
        let s = serve_with(&root, mode, 24, &["--read-timeout", "1"]);
        let h = s.http.clone();
        let get = |path: &str, extra: &str| split(&exchange(&h, format!("GET {path} HTTP/1.1\r\nHost: x\r\n{extra}Connection: close\r\n\r\n").as_bytes()));
        let (head, body) = get("/sub/blob", "");
        assert!(head.starts_with("HTTP/1.1 200") && head.contains(&format!("Content-Length: {}", blob.len())), "{head}");
        assert_eq!(body, blob, "{mode}: the whole file");
        let (head, body) = get("/sub/blob", "Range: bytes=1000-1999\r\n");
        assert!(head.starts_with("HTTP/1.1 206") && head.contains(&format!("Content-Range: bytes 1000-1999/{}", blob.len())), "{head}");
        assert_eq!(body, &blob[1000..2000]);
        assert!(get("/sub/blob", "Range: bytes=99999999-\r\n").0.starts_with("HTTP/1.1 416"));
        assert!(get("/nope", "").0.starts_with("HTTP/1.1 404"));
        assert!(get("/../secret", "").0.starts_with("HTTP/1.1 400"), "escaping the root");
        assert!(get("/out", "").0.starts_with("HTTP/1.1 404"), "a symlink out of the root");
        let (head, body) = get("/empty", "");
        assert!(head.starts_with("HTTP/1.1 200") && head.contains("Content-Length: 0\r\n") && body.is_empty(), "{mode}: an empty file: {head}");
        let (head, body) = split(&exchange(&h, b"HEAD /a.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
        assert!(head.contains("Content-Length: 6") && body.is_empty(), "{head}");
        assert!(exchange(&h, b"POST /a.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n").starts_with(b"HTTP/1.1 405"));
        assert!(exchange(&h, b"GARBAGE\x01\x02 / HTTP/9\r\n\r\n").starts_with(b"HTTP/1.1 400"));
        let flood = format!("GET /a.txt HTTP/1.1\r\nHost: x\r\n{}\r\n", "X-Flood: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n".repeat(400));
        assert!(exchange(&h, flood.as_bytes()).starts_with(b"HTTP/1.1 431"), "a header flood");
        // A slow client: half a request, then silence past the read timeout.
        let t = std::time::Instant::now();
        assert!(exchange(&h, b"GET /a.txt HTTP/1.1\r\nHost: sl").starts_with(b"HTTP/1.1 408"));
        assert!(t.elapsed() < Duration::from_secs(10));
        // Keep-alive: two requests on one connection.
        let two = exchange(&h, b"GET /a.txt HTTP/1.1\r\nHost: x\r\n\r\nGET /a.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        assert_eq!(two.windows(6).filter(|w| w == b"hello\n").count(), 2);
        // memcached: two keys (one missing), then a write, which is refused.
        let m = exchange(&s.memcached, b"get a.txt nope sub/../a.txt\r\nset k 0 0 1\r\nx\r\nquit\r\n");
        let m = String::from_utf8_lossy(&m).into_owned();
        assert!(m.starts_with("VALUE a.txt 0 6\r\nhello\n\r\nEND\r\n"), "{m}");
        assert!(m.contains("SERVER_ERROR read-only"), "{m}");
        // Pipelined answers stay in order, whoever sends them (in devmem mode
        // the NIC sends payloads without the server waiting for it; what the
        // server writes itself waits for those).
        let (a, ranged) = ("HTTP/1.1 200 OK\r\nContent-Length: 6\r\n", "HTTP/1.1 206 Partial Content\r\nContent-Length: 10\r\n");
        let got = exchange(&h, b"GET /a.txt HTTP/1.1\r\nHost: x\r\n\r\nGET /sub/blob HTTP/1.1\r\nHost: x\r\nRange: bytes=5-14\r\n\r\nGET /nope HTTP/1.1\r\nHost: x\r\n\r\nGET /a.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        let got = String::from_utf8_lossy(&got).into_owned();
        let (first, rest) = got.split_once("hello\n").unwrap_or_else(|| panic!("{mode}: {got}"));
        let (second, third) = rest.split_at(rest.find("HTTP/1.1 404").unwrap_or_else(|| panic!("{mode}: {got}")));
        assert!(first.starts_with(a) && second.starts_with(ranged) && second.ends_with(&*String::from_utf8_lossy(&blob[5..15])), "{mode}: {got}");
        // A 404 keeps the connection: the request after it is answered.
        let (missing, fourth) = third.split_once("404 Not Found\n").unwrap_or_else(|| panic!("{mode}: {got}"));
        assert!(missing.contains("Connection: keep-alive") && fourth.starts_with(a) && fourth.ends_with("hello\n"), "{mode}: {got}");
        let bad_key = "k".repeat(300);
        let got = exchange(&s.memcached, format!("get a.txt\r\nversion\r\nget nope a.txt\r\nget a.txt {bad_key}\r\nbogus\r\nquit\r\n").as_bytes());
        let value = "VALUE a.txt 0 6\r\nhello\n\r\n";
        assert_eq!(String::from_utf8_lossy(&got), format!("{value}END\r\nVERSION peerpath-serve\r\n{value}END\r\n{value}CLIENT_ERROR bad key\r\nERROR\r\n"), "{mode}");
        let report = finish(s);
        let provenance = if mode == "devmem" { EMULATED_NIC } else { "measured on this host" };
        assert!(report.contains(&format!("({mode} mode; {provenance}): 25 requests in ")), "{report}");
        let per_request: f64 = report.split("memory per request: ").nth(1).unwrap().split_whitespace().next().unwrap().parse().unwrap();
        let from_host: f64 = report.split("sent from host memory per request: ").nth(1).unwrap().split_whitespace().next().unwrap().parse().unwrap();
        match mode {
            "zerocopy" => assert!(per_request == 0.0 && from_host > 100_000.0, "sendfile: no payload through the process, all from the page cache: {report}"),
            "host" => assert!(per_request > 100_000.0 && from_host > 100_000.0, "host mode copies every payload byte: {report}"),
            "send-zc" => {
                assert!(per_request == 0.0 && from_host > 100_000.0, "SEND_ZC: no payload through the process: {report}");
                // Loopback: the kernel copies every byte after all, and says so.
                let line = report.lines().find(|l| l.starts_with("SEND_ZC: ")).unwrap_or_else(|| panic!("no SEND_ZC line: {report}"));
                let sent: u64 = line["SEND_ZC: ".len()..].split_whitespace().next().unwrap().parse().unwrap();
                assert!(sent > 3 << 20 && line.contains(&format!("copying {sent} of them")) && line.contains("loopback"), "{line}");
            }
            _ => {
                assert!(per_request == 0.0 && from_host == 0.0, "devmem: every payload from the NIC's memory: {report}");
                assert!(report.contains("emulated NIC memory: ") && !report.contains("FALLBACK"), "{report}");
            }
        }
    }
}

/// SIGINT (or SIGTERM) stops the server and prints its report.
#[test]
fn an_interrupted_server_prints_its_report() {
    let dir = scratch();
    std::fs::write(dir.path().join("f"), b"data").unwrap();
    let s = serve(dir.path(), "host", 1000);
    let got = split(&exchange(&s.http, b"GET /f HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")).1;
    assert_eq!(got, b"data");
    // SAFETY: kill(2) with our own child's pid.
    unsafe { libc::kill(s.pid(), libc::SIGINT) };
    let report = finish(s);
    assert!(report.contains("(host mode; measured on this host): 1 request in "), "{report}");
}

/// `peerpath bench-kv` loads a memcached-protocol server and checks every
/// answer; a key the server lacks is an error, not a fast run of misses.
#[test]
fn the_load_client_measures_gets_and_refuses_misses() {
    let dir = scratch();
    std::fs::write(dir.path().join("obj"), random_bytes(10_000, 3)).unwrap();
    let s = serve(dir.path(), "zerocopy", 1_000_000_000);
    let o = run(&mut pp(args!["bench-kv", "--server", &s.memcached, "--key", "obj", "-c", "2", "--seconds", "0.3"])).ok();
    let n: u64 = o.stdout_str().split("obj: ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
    assert!(n > 0, "{}", o.stdout_str());
    run(&mut pp(args!["bench-kv", "--server", &s.memcached, "--key", "missing", "-c", "1", "--seconds", "0.3"])).fails(3, &["no value for missing"]);
    // SAFETY: kill(2) with our own child's pid.
    unsafe { libc::kill(s.pid(), libc::SIGTERM) };
    let report = finish(s);
    assert!(report.contains(&format!("): {} requests in ", n + 1)), "the server counted the client's gets and the miss: {report}");
}

/// devmem: the emulated NIC dies while idle; the next request (a new connection's first,
/// which nothing of was handed to the NIC) and all after it are served from the host, and the
/// server says so (the first got an empty reply, counted as served).
#[test]
fn when_the_emulated_nic_dies_the_host_path_takes_over_and_says_so() {
    let dir = scratch();
    std::fs::write(dir.path().join("f"), random_bytes(100_000, 8)).unwrap();
    let s = serve(dir.path(), "devmem", 1000);
    let want = std::fs::read(dir.path().join("f")).unwrap();
    let get = || exchange(&s.http, b"GET /f HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert_eq!(split(&get()).1, want, "from the NIC's memory");
    let nic = s.nic.expect("the NIC's process id is printed");
    // SAFETY: kill(2) with the pid of a process this test's child started.
    unsafe { libc::kill(nic, libc::SIGKILL) };
    wait_until_ended(nic, "the NIC killed with SIGKILL");
    for _ in 0..3 {
        assert_eq!(split(&get()).1, want, "the host path serves");
    }
    // SAFETY: kill(2) with our own child's pid.
    unsafe { libc::kill(s.pid(), libc::SIGTERM) };
    let report = finish(s);
    assert!(report.contains("FALLBACK: the emulated NIC is gone"), "{report}");
    // Its CPU is still read once it is dead (not reaped until the server stops).
    assert!(report.contains(&format!("(devmem mode; {EMULATED_NIC})")) && report.contains("the emulated NIC's process, which sends the payloads: "), "{report}");
}

/// devmem: a NIC that cannot start is not waited for. A --nic-memory it
/// could never take is a usage error at once; any other start failure (here
/// its socket's directory is missing) is said, with the NIC's reason, and the
/// host path serves, as when the NIC dies later. (The server waited 10 s,
/// then gave up without the NIC's reason.)
#[test]
fn a_nic_that_cannot_start_is_said_at_once_and_the_host_path_serves() {
    let dir = scratch();
    std::fs::write(dir.path().join("f"), random_bytes(100_000, 9)).unwrap();
    run(&mut pp(args!["serve", dir.path(), "--listen", "127.0.0.1:0", "--mode", "devmem", "--nic-memory", "0", "--duration", "1"])).fails(2, &["--nic-memory 0 is less than"]);
    run(&mut pp(args!["serve", dir.path(), "--listen", "127.0.0.1:0", "--mode", "devmem", "--nic-memory", "1000000G", "--duration", "1"])).fails(2, &["more than this machine's memory"]);
    let missing = dir.path().join("no-such-dir");
    let s = serve_env(dir.path(), "devmem", 2, &[], &[("TMPDIR", &missing)]);
    assert!(s.said.contains("FALLBACK: the emulated NIC did not start: NIC socket") && s.said.contains("the host path (sendfile) serves every request"), "{}", s.said);
    assert!(s.nic.is_none(), "no NIC process is said: {}", s.said);
    let want = std::fs::read(dir.path().join("f")).unwrap();
    assert_eq!(split(&exchange(&s.http, b"GET /f HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")).1, want);
    assert_eq!(exchange(&s.memcached, b"get f\r\nquit\r\n").len(), want.len() + "VALUE f 0 100000\r\n\r\nEND\r\n".len());
    let report = finish(s);
    assert!(report.contains("FALLBACK: the emulated NIC did not start: NIC socket") && report.contains("2 requests in "), "{report}");
    // No NIC sent anything: the figures are this host's alone.
    assert!(report.contains("(devmem mode; measured on this host): 2 requests in ") && !report.contains("emulated NIC's process"), "{report}");
}

/// What a devmem report says its figures are: measured with an emulated
/// NIC, a process of its own (not real NIC hardware).
const EMULATED_NIC: &str = "measured on this host with an emulated NIC, a process of its own whose CPU is not in the host CPU figure";

/// Every figure says what it is. devmem's payloads are sent by an emulated
/// NIC, a process of its own: its report says so (text and JSON
/// `provenance`), its host CPU is the server process's only, and the NIC
/// process's CPU is given apart (it sends every payload here, so it is
/// some). The other modes' figures are this host's alone. (devmem's said
/// "measured on this host", its NIC's CPU nowhere.)
#[test]
fn devmem_figures_say_they_are_measured_with_an_emulated_nic_and_count_its_cpu_apart() {
    let dir = scratch();
    let root = dir.path().join("root");
    std::fs::create_dir(&root).unwrap();
    let blob = random_bytes(4 << 20, 12);
    std::fs::write(root.join("blob"), &blob).unwrap();
    let requests = 64;
    for (mode, json) in [("devmem", true), ("devmem", false), ("host", true), ("zerocopy", true)] {
        let s = serve_with(&root, mode, requests, if json { &["--json"] } else { &[] });
        // One connection, many gets: the NIC sends 256 MiB, some CPU of its own
        // (tens of ms; its figures are in clock ticks, 10 ms on most hosts).
        let c = TcpStream::connect(&s.http).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let mut c = BufReader::new(c);
        for i in 0..requests {
            let close = if i + 1 == requests { "Connection: close\r\n" } else { "" };
            c.get_mut().write_all(format!("GET /blob HTTP/1.1\r\nHost: x\r\n{close}\r\n").as_bytes()).unwrap();
            let (head, len) = read_head_of(&mut c);
            assert!(head.starts_with("HTTP/1.1 200") && len == blob.len(), "{mode}: {head}");
            let mut body = vec![0; len];
            c.read_exact(&mut body).unwrap();
            assert!(body == blob, "{mode}: request {i}: the payload");
        }
        let out = finish(s);
        if !json {
            assert!(out.starts_with(&format!("serve (devmem mode; {EMULATED_NIC}): {requests} requests in ")), "{out}");
            let us: f64 = out.split("which sends the payloads: ").nth(1).and_then(|t| t.split(" us per request").next()).and_then(|t| t.parse().ok()).unwrap_or_else(|| panic!("the NIC's CPU per request: {out}"));
            assert!(us > 0.0 && out.contains("host CPU ") && out.contains(" us per request (the server process only; the emulated NIC's process"), "{out}");
            continue;
        }
        let report: serde_json::Value = serde_json::from_str(&out).unwrap();
        let (seconds, per_request) = (&report["nic_process_cpu_seconds"], &report["nic_process_cpu_us_per_request"]);
        if mode == "devmem" {
            assert_eq!(report["provenance"], EMULATED_NIC, "{report}");
            let (seconds, per_request) = (seconds.as_f64().unwrap_or_else(|| panic!("{report}")), per_request.as_f64().unwrap_or_else(|| panic!("{report}")));
            assert!(seconds > 0.0 && (per_request - seconds * 1e6 / requests as f64).abs() < 1e-3 * per_request.max(1.0), "{report}");
        } else {
            assert_eq!(report["provenance"], "measured on this host", "{mode}: {report}");
            assert!(seconds.is_null() && per_request.is_null(), "{mode}: no NIC: {report}");
        }
    }
}

/// devmem: the emulated NIC's socket and memory files are gone when the
/// server stops, and when it is killed (the NIC, left alone, removes them).
#[test]
fn a_devmem_server_leaves_no_files_when_stopped_or_killed() {
    let dir = scratch();
    std::fs::write(dir.path().join("f"), random_bytes(10_000, 3)).unwrap();
    // The NIC's files (peerpath-nic-PID-N.sock, .mem) and the directory older builds made.
    let files = |pid: i32| -> Vec<std::path::PathBuf> {
        let ours = |n: &str| n == format!("peerpath-nic-{pid}") || n.starts_with(&format!("peerpath-nic-{pid}-")) || n.starts_with(&format!("peerpath-nic-{pid}."));
        [std::env::temp_dir(), "/dev/shm".into()]
            .iter()
            .flat_map(|d| std::fs::read_dir(d).into_iter().flatten().flatten().map(|e| e.path()))
            .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(ours))
            .collect()
    };
    for signal in [libc::SIGTERM, libc::SIGKILL] {
        let mut s = serve(dir.path(), "devmem", 1000);
        let (pid, nic) = (s.pid(), s.nic.expect("the NIC's process id is printed"));
        assert!(files(pid).iter().any(|f| f.extension().is_some_and(|e| e == "sock")), "the NIC's socket is where this test looks: {:?}", files(pid));
        assert_eq!(split(&exchange(&s.http, b"GET /f HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")).1.len(), 10_000);
        // SAFETY: kill(2) with our own child's pid.
        unsafe { libc::kill(pid, signal) };
        let _ = s.child.take().expect("running").wait();
        // The NIC is the server's child: once the server is gone, it ends (a zombie is ended).
        wait_until_ended(nic, "the NIC, whose server is gone,");
        assert_eq!(files(pid), Vec::<std::path::PathBuf>::new(), "signal {signal}: left behind");
    }
}

/// Real clients, unchanged: curl for HTTP (a whole file and a range), Python's
/// pymemcache and libmemcached's memcat for memcached's text protocol (a hit,
/// a miss, several keys at once), in each payload mode; every byte compared.
#[test]
fn real_clients_work_unchanged_in_every_mode() {
    let test = "real_clients_work_unchanged_in_every_mode";
    let Some(curl) = tools_or_skip(test, &["curl"]).map(|t| t[0].clone()) else { return };
    // libmemcached 1.1 names it memccat; older ones memcat.
    let Some(memcat) = tool("memccat").or_else(|| tool("memcat")) else {
        eprintln!("SKIPPED {test}: neither memccat nor memcat (scripts/install-deps.sh installs libmemcached-tools)");
        return;
    };
    // Debian's pymemcache lives in Debian's python3, which may not be the first on PATH.
    let imports = |p: &std::path::Path| std::process::Command::new(p).args(["-c", "import pymemcache"]).stderr(std::process::Stdio::null()).status().is_ok_and(|s| s.success());
    let Some(python) = [tool("python3"), Some("/usr/bin/python3".into())].into_iter().flatten().find(|p| imports(p)) else {
        eprintln!("SKIPPED {test}: no python3 with pymemcache (scripts/install-deps.sh installs python3-pymemcache)");
        return;
    };
    let (curl, python, memcat) = (&curl, &python, &memcat);
    let dir = scratch();
    let obj = mixed_data(300_000, 9);
    std::fs::write(dir.path().join("obj"), &obj).unwrap();
    std::fs::write(dir.path().join("a.txt"), b"hello\n").unwrap();
    for mode in ["host", "zerocopy", "send-zc", "devmem"] {
        let s = serve(dir.path(), mode, 1000);
        let got = sys(curl, &[os("-sf").as_os_str(), os(format!("http://{}/obj", s.http)).as_os_str()], None);
        assert!(got == obj, "{mode}: curl got {} bytes", got.len());
        let part = sys(curl, &[os("-sf").as_os_str(), os("-r").as_os_str(), os("1000-1999").as_os_str(), os(format!("http://{}/obj", s.http)).as_os_str()], None);
        assert!(part == obj[1000..2000], "{mode}: curl range");
        let (host, port) = s.memcached.rsplit_once(':').unwrap();
        let script = format!(
            "import sys\nfrom pymemcache.client.base import Client\nc = Client(('{host}', {port}))\nv = c.get('obj')\nassert c.get('missing') is None\nm = c.get_many(['a.txt', 'missing', 'obj'])\nassert sorted(m) == ['a.txt', 'obj'], sorted(m)\nassert m['a.txt'] == b'hello\\n' and m['obj'] == v\nsys.stdout.buffer.write(v)\n"
        );
        let got = sys(python, &[os("-c").as_os_str(), os(script).as_os_str()], None);
        assert!(got == obj, "{mode}: pymemcache got {} bytes", got.len());
        let got = sys(memcat, &[os(format!("--servers={}", s.memcached)).as_os_str(), os("obj").as_os_str()], None);
        // memccat prints a newline after each value (as against memcached itself).
        assert!(got.strip_suffix(b"\n") == Some(&obj[..]), "{mode}: memccat got {} bytes", got.len());
    }
}

/// devmem with many descriptors in flight: several clients at once over
/// keep-alive connections, a NIC memory that holds only a few of the objects
/// (so objects are evicted and placed again while others are being sent):
/// every response is exactly its file, and every payload came from the NIC.
/// The two object caches (the NIC's memory in devmem mode, this process's
/// in host mode), each too small for the objects asked for: many clients
/// at once, evictions under them, and every byte right.
#[test]
fn the_object_caches_serve_many_clients_at_once_through_evictions_without_a_wrong_byte() {
    for (mode, cache) in [("devmem", "--nic-memory"), ("host", "--host-cache")] {
        many_clients_through_evictions(mode, cache);
    }
}

fn many_clients_through_evictions(mode: &str, cache: &str) {
    let dir = scratch();
    let root = dir.path().join("root");
    std::fs::create_dir_all(&root).unwrap();
    let files: Vec<Vec<u8>> = (0..6).map(|i| random_bytes(300 << 10, 100 + i)).collect();
    for (i, f) in files.iter().enumerate() {
        std::fs::write(root.join(format!("o{i}")), f).unwrap();
    }
    let (clients, each) = (6usize, 12usize);
    let mut child = pp(args!["serve", &root, "--listen", "127.0.0.1:0", "--mode", mode, cache, "1M", "--max-requests", (clients * each).to_string(), "--read-timeout", "5", "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let addr = loop {
        let mut line = String::new();
        assert!(err.read_line(&mut line).unwrap() > 0, "serve exited before listening");
        if let Some(a) = line.split("http://").nth(1) {
            break a.split('/').next().unwrap().to_string();
        }
    };
    let files = std::sync::Arc::new(files);
    let threads: Vec<_> = (0..clients)
        .map(|c| {
            let (addr, files) = (addr.clone(), files.clone());
            std::thread::spawn(move || {
                let s = TcpStream::connect(&addr).unwrap();
                s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
                let mut r = BufReader::new(s.try_clone().unwrap());
                let mut w = s;
                for k in 0..each {
                    let i = (c + k * 5) % files.len();
                    write!(w, "GET /o{i} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
                    let mut len = None;
                    loop {
                        let mut line = String::new();
                        r.read_line(&mut line).unwrap();
                        if line == "\r\n" {
                            break;
                        }
                        if let Some(v) = line.strip_prefix("Content-Length: ") {
                            len = Some(v.trim().parse::<usize>().unwrap());
                        }
                    }
                    let mut body = vec![0u8; len.expect("a length")];
                    r.read_exact(&mut body).unwrap();
                    assert!(body == files[i], "client {c}, request {k}: o{i} came back different");
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("a client saw a wrong byte or an error");
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["requests"], (clients * each) as u64, "{report}");
    if mode == "devmem" {
        assert_eq!(report["payload_bytes_from_host_memory_per_request"], 0.0, "every payload from the NIC: {report}");
        assert!(report["nic"]["evictions"].as_u64().unwrap() > 0, "the small NIC memory evicted: {report}");
        assert!(report["nic_fallback"].is_null(), "{report}");
    } else {
        let c = &report["host_cache"];
        assert!(c["evictions"].as_u64().unwrap() > 0 && c["hits"].as_u64().unwrap() > 0, "the small host cache hit and evicted: {report}");
        assert_eq!(c["hits"].as_u64().unwrap() + c["misses"].as_u64().unwrap() + c["changed"].as_u64().unwrap(), (clients * each) as u64, "{report}");
    }
}

/// Host mode's memory cache: an object is read once and then sent from
/// memory; a file rewritten in place (same length), replaced, or grown is
/// read anew, never its old bytes sent; objects over half the cache are
/// read per request; `--host-cache 0` reads every time; the option is for
/// host mode only.
#[test]
fn host_mode_keeps_objects_in_memory_and_never_sends_an_old_version() {
    let dir = scratch();
    let root = dir.path().join("root");
    std::fs::create_dir(&root).unwrap();
    let (a, big) = (mixed_data(50_000, 1), mixed_data(600 << 10, 2));
    std::fs::write(root.join("a"), &a).unwrap();
    std::fs::write(root.join("big"), &big).unwrap();
    let get = |s: &Served, name: &str| split(&exchange(&s.http, format!("GET /{name} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes())).1;
    let mget = |s: &Served, name: &str| exchange(&s.memcached, format!("get {name}\r\nquit\r\n").as_bytes());
    let s = serve_with(&root, "host", 8, &["--host-cache", "1M", "--json"]);
    assert!(get(&s, "a") == a, "a came back different");
    assert!(get(&s, "a") == a, "a came back different");
    let m = mget(&s, "a");
    assert!(m.starts_with(b"VALUE a 0 50000\r\n") && m[17..17 + a.len()] == a[..], "memcached get from the cache");
    // Rewritten in place, same length, its modification time set apart (a
    // kernel without multigrain timestamps could give a write in the same
    // tick the same one; the change time tells it then, on 6.13 and later).
    let mut a2 = a.clone();
    a2[25_000] ^= 0xff;
    {
        use std::io::{Seek, SeekFrom};
        let mut f = std::fs::File::options().write(true).open(root.join("a")).unwrap();
        f.seek(SeekFrom::Start(0)).unwrap();
        f.write_all(&a2).unwrap();
        f.set_modified(std::time::UNIX_EPOCH + Duration::from_secs(1_000_000)).unwrap();
    }
    assert!(get(&s, "a") == a2, "the rewritten file, not the cached one");
    // Replaced by a rename (a new inode), then grown.
    std::fs::write(root.join("a.new"), &a).unwrap();
    std::fs::rename(root.join("a.new"), root.join("a")).unwrap();
    assert!(get(&s, "a") == a, "a came back different");
    std::fs::OpenOptions::new().append(true).open(root.join("a")).unwrap().write_all(b"more").unwrap();
    assert!(get(&s, "a") == [&a[..], b"more"].concat(), "a came back different");
    // Over half of the 1 MiB cache: read per request, right each time.
    assert!(get(&s, "big") == big, "big came back different");
    assert!(get(&s, "big") == big, "big came back different");
    let report: serde_json::Value = serde_json::from_str(&finish(s)).unwrap();
    let c = &report["host_cache"];
    assert_eq!((c["hits"].as_u64(), c["misses"].as_u64(), c["too_large"].as_u64(), c["bytes"].as_u64()), (Some(2), Some(4), Some(2), Some(1 << 20)), "{report}");
    assert!(report["host_memory_payload_bytes_per_request"].as_f64().unwrap() > 50_000.0, "every payload byte still crosses this process's memory: {report}");
    // Off: no cache in the report, the bytes still right.
    let s = serve_with(&root, "host", 1, &["--host-cache", "0", "--json"]);
    assert!(get(&s, "big") == big, "big came back different");
    let report: serde_json::Value = serde_json::from_str(&finish(s)).unwrap();
    assert!(report["host_cache"].is_null(), "{report}");
    // The text report says what the cache did.
    let s = serve_with(&root, "host", 1, &["--host-cache", "4M"]);
    get(&s, "a");
    let report = finish(s);
    assert!(report.contains("host memory cache (4.0 MiB): 0 hits, 1 read in and kept"), "{report}");
    let out = pp(args!["serve", &root, "--mode", "zerocopy", "--host-cache", "1M"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--host-cache needs --mode host"), "{}", String::from_utf8_lossy(&out.stderr));
}

/// `--writable`: memcached `set` stores a file directly under the directory,
/// whole or not at all; a replaced object is served anew (the devmem NIC's
/// copy too); too large, bad keys and bad data are refused, and the
/// connection stays in step where the protocol allows.
#[test]
fn set_stores_objects_as_files_whole_and_they_are_served_anew() {
    let dir = scratch();
    let d = dir.path();
    std::fs::write(d.join("old"), b"0123456789A").unwrap();
    for mode in ["host", "devmem"] {
        let s = serve_with(d, mode, 1000, &["--writable", "--max-object", "64"]);
        let big = vec![b'x'; 100];
        let mut req = Vec::new();
        req.extend_from_slice(b"get old\r\nset new 0 0 11\r\nhello world\r\nget new\r\n");
        // The same length again: the NIC must not keep serving its old copy.
        req.extend_from_slice(b"set new 0 0 11\r\nHELLO WORLD\r\nget new\r\n");
        req.extend_from_slice(b"set old 0 0 3 noreply\r\nabc\r\nget old\r\n");
        req.extend_from_slice(b"set big 0 0 100\r\n");
        req.extend_from_slice(&big);
        req.extend_from_slice(b"\r\nset ../escape 0 0 1\r\nx\r\nset a/b 0 0 1\r\nx\r\nget new\r\nquit\r\n");
        let got = exchange(&s.memcached, &req);
        let want = b"VALUE old 0 11\r\n0123456789A\r\nEND\r\nSTORED\r\nVALUE new 0 11\r\nhello world\r\nEND\r\nSTORED\r\nVALUE new 0 11\r\nHELLO WORLD\r\nEND\r\nVALUE old 0 3\r\nabc\r\nEND\r\nSERVER_ERROR object too large for cache\r\nCLIENT_ERROR bad key: one file name directly under the served directory\r\nCLIENT_ERROR bad key: one file name directly under the served directory\r\nVALUE new 0 11\r\nHELLO WORLD\r\nEND\r\n";
        assert_eq!(String::from_utf8_lossy(&got), String::from_utf8_lossy(want), "{mode}");
        assert_eq!(std::fs::read(d.join("new")).unwrap(), b"HELLO WORLD");
        assert!(!d.join("big").exists() && !d.parent().unwrap().join("escape").exists() && !d.join("a").exists());
        // A data block that does not end where its length says: refused, nothing stored, closed.
        let got = exchange(&s.memcached, b"set torn 0 0 3\r\nabcdef\r\nget new\r\n");
        assert_eq!(String::from_utf8_lossy(&got), "CLIENT_ERROR bad data chunk\r\n", "{mode}");
        assert!(!d.join("torn").exists());
        // Flags a file cannot keep are refused (they were dropped: a client decoding by them got
        // 0 back), flags past 32 bits are a bad line; with noreply a refusal is not answered
        // either (it was, and taken for the next get's answer); a bare line feed ends a line.
        let mut req = b"set f 5 0 1\r\nx\r\nset g 4294967296 0 1\r\nx\r\nset h 0 0 100 noreply\r\n".to_vec();
        req.extend_from_slice(&big);
        req.extend_from_slice(b"\r\nset a/b 0 0 1 noreply\r\nx\r\nget old\nquit\n");
        let got = exchange(&s.memcached, &req);
        let want = "SERVER_ERROR flags are not kept: objects are plain files (set them with flags 0)\r\nCLIENT_ERROR bad command line format\r\nVALUE old 0 3\r\nabc\r\nEND\r\n";
        assert_eq!(String::from_utf8_lossy(&got), want, "{mode}");
        assert!(["f", "g", "h", "a"].iter().all(|k| !d.join(k).exists()), "{mode}: nothing stored");
        std::fs::write(d.join("old"), b"0123456789A").unwrap();
        std::fs::remove_file(d.join("new")).unwrap();
        drop(s);
    }
    // --max-object without --writable was taken and meant nothing: refused.
    let out = pp(args!["serve", d, "--max-object", "1M"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--writable"), "{}", String::from_utf8_lossy(&out.stderr));
    // Without --writable the directory stays read-only.
    let s = serve(d, "host", 100);
    let got = exchange(&s.memcached, b"set new 0 0 1\r\nx\r\nquit\r\n");
    assert!(String::from_utf8_lossy(&got).starts_with("SERVER_ERROR read-only"), "{}", String::from_utf8_lossy(&got));
    assert!(!d.join("new").exists());
}

/// memcached writes other than `set` (and `set` when read-only) are refused
/// after their data blocks are read and dropped: the blocks were taken for
/// commands, so pipelined answers fell out of step. A `set` that cannot be
/// stored says why (a directory of the key's name was "out of space").
#[test]
fn refused_writes_drop_their_data_blocks_and_say_why() {
    let dir = scratch();
    let d = dir.path();
    std::fs::write(d.join("a.txt"), b"hello\n").unwrap();
    std::fs::create_dir(d.join("sub")).unwrap();
    let value = "VALUE a.txt 0 6\r\nhello\n\r\nEND\r\n";
    let writes = b"add k 0 0 11\r\nget a.txt\r\n\r\nreplace k 0 0 2\r\nab\r\nappend k 0 0 2 noreply\r\nab\r\nprepend k 0 0 2\r\nab\r\ncas k 0 0 3 99\r\nabc\r\ndelete k\r\n";
    for (writable, why) in [(false, "SERVER_ERROR read-only: objects are the files under the served directory\r\n"), (true, "SERVER_ERROR only set is taken: objects are the files under the served directory\r\n")] {
        let s = serve_with(d, "zerocopy", 1000, if writable { &["--writable"] } else { &[] });
        let mut req = writes.to_vec();
        // Six refused, and `append ... noreply` not answered (a pipelining client would take
        // the refusal for its next command's answer).
        let mut want = why.repeat(5);
        if writable {
            req.extend_from_slice(b"set sub 0 0 2\r\nab\r\n");
            want.push_str("SERVER_ERROR cannot store object: sub is a directory\r\n");
        } else {
            req.extend_from_slice(b"set k 0 0 8\r\nget a.tx\r\nset q 0 0 3 noreply\r\nabc\r\n");
            want.push_str(why);
        }
        req.extend_from_slice(b"get a.txt\r\nadd k 0 0\r\nget a.txt\r\n");
        want.push_str(value);
        // Without a length the data block cannot be found: refused, and the connection closed.
        want.push_str("CLIENT_ERROR bad command line format\r\n");
        assert_eq!(String::from_utf8_lossy(&exchange(&s.memcached, &req)), want, "writable: {writable}");
        assert!(!d.join("k").exists() && d.join("sub").is_dir());
        drop(s);
    }
}

/// Every write command memcached knows is refused as `set` and `delete` are (incr, decr, touch,
/// gat, gats and flush_all got ERROR, an unknown command's answer), `noreply` silencing it; a
/// line with a count of words memcached does not take, and a command it does not know (the meta
/// commands), get ERROR, as memcached gives them.
#[test]
fn every_memcached_write_is_refused_as_set_is() {
    let dir = scratch();
    let d = dir.path();
    std::fs::write(d.join("a"), b"hello\n").unwrap();
    let writes = b"incr a 1\r\ndecr a 1\r\ntouch a 10\r\ngat 10 a\r\ngats 10 a noreply\r\nflush_all\r\nflush_all 0\r\nincr a 1 noreply\r\nflush_all noreply\r\ntouch a 0 noreply\r\ndelete a 0 noreply\r\n";
    let malformed = b"incr\r\ntouch a\r\nflush_all 1 2 3\r\ndelete\r\nmg a v\r\nfrobnicate a\r\n";
    for (writable, why) in [(false, "SERVER_ERROR read-only: objects are the files under the served directory\r\n"), (true, "SERVER_ERROR only set is taken: objects are the files under the served directory\r\n")] {
        let s = serve_with(d, "host", 1000, if writable { &["--writable"] } else { &[] });
        let mut req = writes.to_vec();
        req.extend_from_slice(malformed);
        req.extend_from_slice(b"get a\r\nquit\r\n");
        // Seven answered (gat and gats take no noreply: `noreply` is a key there), four silenced.
        let want = format!("{}{}VALUE a 0 6\r\nhello\n\r\nEND\r\n", why.repeat(7), "ERROR\r\n".repeat(6));
        assert_eq!(String::from_utf8_lossy(&exchange(&s.memcached, &req)), want, "writable: {writable}");
        assert_eq!(std::fs::read(d.join("a")).unwrap(), b"hello\n");
        drop(s);
    }
}

/// memcached's `stats` lists the server's figures as memcached does (`STAT name value` lines,
/// then END; monitoring tools read them), counted as the server goes: it got ERROR. A group
/// (`stats slabs`, `stats items`) is answered as memcached answers one it lacks: ERROR. A get
/// counts each key it looks up, as memcached does (`get a nope a` is 3 in `cmd_get`, 2 hits);
/// `threads` is the worker threads serving.
#[test]
fn memcached_stats_lists_the_servers_figures() {
    let dir = scratch();
    std::fs::write(dir.path().join("a.txt"), b"hello\n").unwrap();
    // One worker: every request is its (the figure counted workers ever started).
    let s = serve_with(dir.path(), "zerocopy", 1000, &["--workers", "1"]);
    let asked = b"get a.txt nope a.txt\r\ngets a.txt\r\nquit\r\n";
    let got = exchange(&s.memcached, asked);
    let before = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    // `stats` alone first: what the server has read when it answers is known.
    let mut c = BufReader::new(TcpStream::connect(&s.memcached).unwrap());
    let (text, stats) = memcached_stats(&mut c);
    c.get_mut().write_all(b"stats slabs\r\nstats items\r\nversion\r\nquit\r\n").unwrap();
    let mut rest = String::new();
    c.read_to_string(&mut rest).unwrap();
    assert_eq!(rest, "ERROR\r\nERROR\r\nVERSION peerpath-serve\r\n");
    let number = |name: &str| stat(&stats, &text, name);
    assert_eq!(number("pid"), s.pid() as u64);
    assert!(number("time").abs_diff(before) <= 60, "{text}");
    number("uptime");
    assert_eq!(stats["version"], "peerpath-serve");
    // Three keys looked up by the first connection's get, one by its gets: three hits, one miss.
    assert_eq!((number("cmd_get"), number("get_hits"), number("get_misses"), number("peerpath_get_failed")), (4, 3, 1, 0), "{text}");
    // This connection is the one open now; two were accepted.
    assert_eq!((number("curr_connections"), number("total_connections"), number("rejected_connections")), (1, 2, 0), "{text}");
    // Everything the first connection sent and got, and this one's `stats` line.
    assert_eq!(number("bytes_read"), (asked.len() + b"stats\r\n".len()) as u64, "{text}");
    assert_eq!(number("bytes_written"), got.len() as u64, "{text}");
    let workers = std::fs::read_dir(format!("/proc/{}/task", s.pid())).unwrap().filter(|t| std::fs::read_to_string(t.as_ref().unwrap().path().join("comm")).is_ok_and(|n| n.trim() == "serve-worker")).count();
    assert_eq!((number("threads"), workers), (1, 1), "{text}");
    assert_eq!((stats["peerpath_mode"].as_str(), number("peerpath_read_only"), number("peerpath_requests"), number("peerpath_payload_bytes")), ("zerocopy", 1, 2, 18), "{text}");
    drop(s);
}

/// A key whose file is found but cannot be read or sent is no hit: no VALUE was answered (a
/// sysfs file says 4096 bytes and has fewer: the read comes up short, the connection is
/// closed). It was counted a hit once the name resolved.
#[test]
fn a_get_whose_file_cannot_be_sent_is_not_a_hit() {
    // A file that says more bytes than it has (sysfs's attributes say 4096): where there is none,
    // the test cannot make a send fail after the name resolves, and says so.
    let sysfs = std::path::Path::new("/sys/kernel");
    let says_more = std::fs::metadata(sysfs.join("uevent_seqnum")).ok().zip(std::fs::read(sysfs.join("uevent_seqnum")).ok()).is_some_and(|(m, b)| m.len() as usize > b.len());
    if !says_more {
        eprintln!("SKIPPED a_get_whose_file_cannot_be_sent_is_not_a_hit: no /sys/kernel/uevent_seqnum that says more bytes than it holds");
        return;
    }
    for mode in ["host", "zerocopy", "send-zc"] {
        let s = serve(sysfs, mode, 1000);
        let got = String::from_utf8_lossy(&exchange(&s.memcached, b"get nope uevent_seqnum\r\n")).into_owned();
        assert!(!got.ends_with("END\r\n"), "{mode}: {got:?}");
        let mut c = BufReader::new(TcpStream::connect(&s.memcached).unwrap());
        let (text, stats) = memcached_stats(&mut c);
        let number = |name: &str| stat(&stats, &text, name);
        assert_eq!((number("cmd_get"), number("get_hits"), number("get_misses")), (2, 0, 1), "{mode}: {text}");
        assert_eq!(number("peerpath_get_failed"), 1, "{mode}: {text}");
        drop(s);
    }
}

/// Asks `stats` on `c`: its text and its figures by name.
fn memcached_stats(c: &mut BufReader<TcpStream>) -> (String, std::collections::HashMap<String, String>) {
    c.get_mut().set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    c.get_mut().write_all(b"stats\r\n").unwrap();
    let mut text = String::new();
    while !text.ends_with("END\r\n") {
        assert!(c.read_line(&mut text).unwrap() > 0, "no END: {text:?}");
    }
    let mut stats = std::collections::HashMap::new();
    for line in text.strip_suffix("END\r\n").unwrap().split_inclusive("\r\n") {
        let fields: Vec<&str> = line.strip_suffix("\r\n").unwrap_or_else(|| panic!("a line not ended by CRLF: {line:?}")).split(' ').collect();
        assert!(fields.len() == 3 && fields[0] == "STAT", "not a STAT line: {line:?}");
        assert!(stats.insert(fields[1].to_string(), fields[2].to_string()).is_none(), "{} twice", fields[1]);
    }
    (text, stats)
}

/// A figure of `stats` (`text` its whole answer, for the message).
fn stat(stats: &std::collections::HashMap<String, String>, text: &str, name: &str) -> u64 {
    stats.get(name).unwrap_or_else(|| panic!("no {name}: {text}")).parse().unwrap_or_else(|_| panic!("{name} is not a number: {text}"))
}

/// A client that asks for a large object and never reads it: the server
/// gives up on it after its write timeout (the read timeout's value), serves
/// others meanwhile, and still stops when asked, in every mode.
#[test]
fn a_client_that_stops_reading_is_dropped_and_the_server_still_stops() {
    let dir = scratch();
    let big = random_bytes(64 << 20, 12);
    std::fs::write(dir.path().join("big"), &big).unwrap();
    std::fs::write(dir.path().join("a.txt"), b"hello\n").unwrap();
    for mode in ["host", "zerocopy", "send-zc", "devmem"] {
        // A write timeout of 2 s: stopping waits for it once.
        let s = serve_with(dir.path(), mode, 1000, &["--nic-memory", "200M", "--read-timeout", "2"]);
        let mut stuck = TcpStream::connect(&s.http).unwrap();
        // A small receive buffer, never read: the server's sends fill it.
        stuck.write_all(b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        std::thread::sleep(Duration::from_millis(300));
        let (head, body) = split(&exchange(&s.http, b"GET /a.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
        assert!(head.starts_with("HTTP/1.1 200") && body == b"hello\n", "{mode}: others are served meanwhile: {head}");
        let t = std::time::Instant::now();
        // SAFETY: kill(2) with our own child's pid.
        unsafe { libc::kill(s.pid(), libc::SIGTERM) };
        let report = finish(s);
        assert!(t.elapsed() < Duration::from_secs(15), "{mode}: the server took {:?} to stop", t.elapsed());
        assert!(report.contains(" in ") && report.contains("requests/s"), "{report}");
        drop(stuck);
    }
}

/// devmem's size policy: objects over `--nic-max-object` are never placed
/// in the NIC's memory but sent, whole and right, from the host (counted as
/// too large); smaller ones are placed once and then hit; a limit over half
/// of the memory, or without devmem, is a usage error.
#[test]
fn objects_over_the_nic_size_limit_are_sent_from_the_host() {
    let dir = scratch();
    let root = dir.path().join("root");
    std::fs::create_dir(&root).unwrap();
    let (small, large) = (mixed_data(2000, 1), mixed_data(10_000, 2));
    std::fs::write(root.join("small"), &small).unwrap();
    std::fs::write(root.join("large"), &large).unwrap();
    let s = serve_with(&root, "devmem", 4, &["--nic-memory", "1M", "--nic-max-object", "4K", "--json"]);
    for (name, want) in [("small", &small), ("large", &large), ("small", &small), ("large", &large)] {
        let (head, body) = split(&exchange(&s.http, format!("GET /{name} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes()));
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        assert_eq!(&body, want, "{name}");
    }
    let report: serde_json::Value = serde_json::from_str(&finish(s)).unwrap();
    let nic = &report["nic"];
    assert_eq!((nic["misses"].as_u64(), nic["hits"].as_u64(), nic["too_large"].as_u64()), (Some(1), Some(1), Some(2)), "{report}");
    run(&mut pp(args!["serve", &root, "--mode", "devmem", "--nic-memory", "1M", "--nic-max-object", "600K"])).fails(2, &["over half"]);
    run(&mut pp(args!["serve", &root, "--nic-max-object", "4K"])).fails(2, &["--mode devmem"]);
}

/// A server process's thread count (/proc/PID/status).
fn threads_of(pid: i32) -> usize {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status.lines().find_map(|l| l.strip_prefix("Threads:")).unwrap().trim().parse().unwrap()
}

/// The event loop: hundreds of connections that are idle or send half a
/// request (slowloris) hold no thread and do not keep others from being
/// served; the half requests get 408 when their head is not whole within
/// the read timeout of its first byte, even from a client that keeps
/// trickling bytes; idle ones are closed at the read timeout.
/// (With a thread per connection and 256 at most, as before, the fresh
/// client here was refused 503 and the server ran 600 threads.)
#[test]
fn idle_and_slow_connections_hold_no_thread_and_others_are_still_served() {
    let dir = scratch();
    let obj = random_bytes(100_000, 31);
    std::fs::write(dir.path().join("obj"), &obj).unwrap();
    let s = serve_with(dir.path(), "zerocopy", 1000, &["--workers", "4", "--max-connections", "700", "--read-timeout", "6"]);
    let mut idle = Vec::new();
    let mut half = Vec::new();
    for i in 0..600 {
        let mut c = TcpStream::connect(&s.http).unwrap();
        if i % 2 == 1 {
            c.write_all(b"GET /obj HTTP/1.1\r\nHost: sl").unwrap();
            half.push(c);
        } else {
            idle.push(c);
        }
    }
    let started = std::time::Instant::now();
    // A client that keeps trickling a head, a byte every 300 ms: 32 s of
    // bytes if it were never cut.
    let mut trickle = TcpStream::connect(&s.http).unwrap();
    trickle.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
    let trickler = std::thread::spawn(move || {
        let mut out = Vec::new();
        for b in b"GET /obj HTTP/1.1\r\nHost: x\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" {
            if trickle.write_all(&[*b]).is_err() {
                break;
            }
            let mut buf = [0u8; 4096];
            match trickle.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => out.extend_from_slice(&buf[..n]),
                Err(_) => {}
            }
        }
        let _ = trickle.read_to_end(&mut out);
        out
    });
    // Others are served meanwhile, on keep-alive connections and fresh ones.
    for _ in 0..10 {
        let (head, body) = split(&exchange(&s.http, b"GET /obj HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
        assert!(head.starts_with("HTTP/1.1 200") && body == obj, "served while 600 connections wait: {head}");
    }
    let threads = threads_of(s.pid());
    assert!(threads <= 12, "{threads} threads for 601 connections and 4 workers");
    let trickled = trickler.join().unwrap();
    assert!(String::from_utf8_lossy(&trickled).starts_with("HTTP/1.1 408"), "a trickled head gets 408: {:?}", String::from_utf8_lossy(&trickled));
    assert!(started.elapsed() < Duration::from_secs(18), "the trickled head was cut at the read timeout, not kept for {:?}", started.elapsed());
    for mut c in half {
        c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let mut out = Vec::new();
        let _ = c.read_to_end(&mut out);
        assert!(out.starts_with(b"HTTP/1.1 408"), "{:?}", String::from_utf8_lossy(&out));
    }
    for mut c in idle {
        c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let mut out = Vec::new();
        assert_eq!(c.read_to_end(&mut out).unwrap(), 0, "an idle connection is closed without a word");
    }
    // SAFETY: kill(2) with our own child's pid.
    unsafe { libc::kill(s.pid(), libc::SIGTERM) };
    let report = finish(s);
    let peak: u32 = report.split("connections: at most ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
    assert!((601..=611).contains(&peak) && report.contains("open at once (limit 700)"), "{report}");
    let workers: u32 = report.split("served by ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
    assert!((1..=4).contains(&workers), "{report}");
    assert!(report.contains("408: 301"), "{report}");
}

/// A keep-alive HTTP GET on `c`: the status line and the body.
fn get_on(c: &mut BufReader<TcpStream>, name: &str) -> (String, Vec<u8>) {
    c.get_mut().write_all(format!("GET /{name} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes()).unwrap();
    let (status, len) = read_head_of(c);
    let mut body = vec![0u8; len];
    c.read_exact(&mut body).unwrap();
    (status, body)
}

/// Reads a response's status line and headers: the status line and the Content-Length (0 if none).
fn read_head_of(c: &mut BufReader<TcpStream>) -> (String, usize) {
    let (mut status, mut len) = (String::new(), 0usize);
    c.read_line(&mut status).unwrap();
    loop {
        let mut line = String::new();
        c.read_line(&mut line).unwrap();
        if line == "\r\n" || line.is_empty() {
            break;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            len = v.trim().parse().unwrap();
        }
    }
    (status, len)
}

/// More busy keep-alive clients than workers, over both protocols and in
/// every mode: connections are handed between the workers and the event
/// loop between requests, and every answer is exactly its file.
#[test]
fn more_busy_clients_than_workers_are_all_served_right() {
    let dir = scratch();
    let objects: Vec<(String, Vec<u8>)> = (0..6).map(|i| (format!("o{i}"), random_bytes(1000 + i * 60_000, 40 + i as u64))).collect();
    for (name, data) in &objects {
        std::fs::write(dir.path().join(name), data).unwrap();
    }
    let (clients, rounds) = (12, 15);
    for mode in ["host", "zerocopy", "send-zc", "devmem"] {
        let total = (clients * rounds) as u64;
        // A long read timeout: a client thread held up on a loaded machine must not be taken for an idle one.
        let s = serve_with(dir.path(), mode, total, &["--workers", "2", "--nic-memory", "1M", "--read-timeout", "10"]);
        std::thread::scope(|sc| {
            for k in 0..clients {
                let (s, objects) = (&s, &objects);
                sc.spawn(move || {
                    if k % 2 == 0 {
                        let mut c = BufReader::new(TcpStream::connect(&s.http).unwrap());
                        for r in 0..rounds {
                            let (name, data) = &objects[(k + r) % objects.len()];
                            let (status, body) = get_on(&mut c, name);
                            assert!(status.starts_with("HTTP/1.1 200") && body == *data, "{mode}: client {k} round {r}: {status}, {} bytes", body.len());
                            if r % 5 == 4 {
                                // A pause past the linger: the connection waits in the event loop.
                                std::thread::sleep(Duration::from_millis(150));
                            }
                        }
                    } else {
                        let mut c = BufReader::new(TcpStream::connect(&s.memcached).unwrap());
                        for r in 0..rounds {
                            let (name, data) = &objects[(k + r) % objects.len()];
                            c.get_mut().write_all(format!("get {name}\r\n").as_bytes()).unwrap();
                            let mut head = String::new();
                            c.read_line(&mut head).unwrap();
                            assert_eq!(head, format!("VALUE {name} 0 {}\r\n", data.len()), "{mode}: client {k} round {r}");
                            let mut body = vec![0u8; data.len() + 7];
                            c.read_exact(&mut body).unwrap();
                            assert!(body[..data.len()] == data[..] && &body[data.len()..] == b"\r\nEND\r\n", "{mode}: client {k} round {r}");
                        }
                    }
                });
            }
        });
        let report = finish(s);
        assert!(report.contains(&format!("{total} requests in ")) && report.contains(&format!("status codes: 200: {total}\n")), "{mode}: {report}");
        let workers: u32 = report.split("served by ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
        assert!((1..=2).contains(&workers), "{mode}: {report}");
    }
}

/// A keep-alive connection whose response took longer than the read
/// timeout (a large object read slowly, never stalled for the timeout)
/// is not closed for it: the client's idle time counts from the end of
/// the response, so its next request is answered. In every mode: in devmem
/// mode the NIC sends the payload after the server has answered, and the
/// idle time counted from the hand-over (the connection was closed).
#[test]
fn a_response_longer_than_the_read_timeout_keeps_its_connection() {
    let dir = scratch();
    let big = random_bytes(48 << 20, 77);
    std::fs::write(dir.path().join("big"), &big).unwrap();
    std::fs::write(dir.path().join("a.txt"), b"hello\n").unwrap();
    for mode in ["host", "zerocopy", "send-zc", "devmem"] {
        // The read timeout is 1.5 s; the response takes 3 s or more. The
        // client reads slowly until 24 MiB are left, more than loopback's
        // sockets hold (up to about 21 MiB here, with tcp_rmem's 32 MiB
        // limit), so the server is still sending then; the rest it reads at
        // once. Its idle time after the response is then milliseconds, not
        // the time a loaded machine takes to sleep through what the sockets
        // held (over 1.5 s on CI once, reading all of it slowly).
        let s = serve_with(dir.path(), mode, 1000, &["--read-timeout", "1.5", "--nic-memory", "128M"]);
        let mut c = BufReader::with_capacity(1 << 20, TcpStream::connect(&s.http).unwrap());
        c.get_mut().set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        c.get_mut().write_all(b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let started = std::time::Instant::now();
        let (status, _) = read_head_of(&mut c);
        // 1 MiB every 150 ms for 24 MiB: 3.6 s or more, the server never waits 1.5 s for room.
        let mut body = vec![0u8; big.len()];
        let (slow, rest) = body.split_at_mut(24 << 20);
        for piece in slow.chunks_mut(1 << 20) {
            c.read_exact(piece).unwrap();
            std::thread::sleep(Duration::from_millis(150));
        }
        c.read_exact(rest).unwrap();
        assert!(status.starts_with("HTTP/1.1 200") && body == big, "{mode}: {status}");
        assert!(started.elapsed() > Duration::from_millis(3000), "{mode}: the response took {:?}, not over the read timeout", started.elapsed());
        let (status, body) = get_on(&mut c, "a.txt");
        assert!(status.starts_with("HTTP/1.1 200") && body == b"hello\n", "{mode}: the next request on the connection: {status}");
    }
}

/// A client that stops reading a large response holds no worker: with one
/// worker, others are answered (HTTP and memcached) while its response
/// waits, long before the write timeout would have freed a blocked worker;
/// then it reads slowly and gets every byte, and its connection goes on.
/// In host mode (from the cache and read per request) and zerocopy.
#[test]
fn a_client_that_stops_reading_holds_no_worker_and_later_gets_every_byte() {
    let dir = scratch();
    let big = random_bytes(32 << 20, 31);
    std::fs::write(dir.path().join("big"), &big).unwrap();
    std::fs::write(dir.path().join("a.txt"), b"hello\n").unwrap();
    for (mode, extra) in [("host", None), ("host", Some("0")), ("zerocopy", None)] {
        let mut args = vec!["--workers", "1", "--read-timeout", "20", "--json"];
        if let Some(c) = extra {
            args.extend(["--host-cache", c]);
        }
        let s = serve_with(dir.path(), mode, 4, &args);
        let mut slow = BufReader::with_capacity(256 << 10, TcpStream::connect(&s.http).unwrap());
        slow.get_mut().set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        slow.get_mut().write_all(b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        // The server fills the sockets' buffers and would wait (the one worker) for room.
        std::thread::sleep(Duration::from_millis(500));
        let t = std::time::Instant::now();
        let (head, body) = split(&exchange(&s.http, b"GET /a.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
        assert!(head.starts_with("HTTP/1.1 200") && body == b"hello\n", "{mode} {extra:?}: {head}");
        let got = exchange(&s.memcached, b"get a.txt\r\nquit\r\n");
        assert_eq!(String::from_utf8_lossy(&got), "VALUE a.txt 0 6\r\nhello\n\r\nEND\r\n");
        // A worker blocked in the send would have answered only at the 20 s write timeout.
        assert!(t.elapsed() < Duration::from_secs(10), "{mode} {extra:?}: others waited {:?} for the one worker", t.elapsed());
        // Now the slow client reads, a piece at a time, and gets it all.
        let (status, _) = read_head_of(&mut slow);
        let mut body = vec![0u8; big.len()];
        for (i, piece) in body.chunks_mut(1 << 20).enumerate() {
            slow.read_exact(piece).unwrap();
            if i % 8 == 0 {
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        assert!(status.starts_with("HTTP/1.1 200") && body == big, "{mode} {extra:?}: {status}, the body came back different");
        let (status, body) = get_on(&mut slow, "a.txt");
        assert!(status.starts_with("HTTP/1.1 200") && body == b"hello\n", "{mode} {extra:?}: the next request on the connection: {status}");
        let report: serde_json::Value = serde_json::from_str(&finish(s)).unwrap();
        assert_eq!((report["requests"].as_u64(), report["connections"]["workers"].as_u64()), (Some(4), Some(1)), "{report}");
        assert_eq!(report["payload_bytes"].as_u64(), Some(big.len() as u64 + 18), "{report}");
    }
}

/// A named pipe under DIR is not found, at once: opening a
/// FIFO waited for a writer, holding a worker for good; with every worker
/// held the server answered nothing and did not stop.
#[test]
fn a_fifo_in_the_directory_is_not_found_and_holds_no_worker() {
    let dir = scratch();
    std::fs::write(dir.path().join("a.txt"), b"hello\n").unwrap();
    let fifo = std::ffi::CString::new(dir.path().join("fifo").into_os_string().into_encoded_bytes()).unwrap();
    // SAFETY: mkfifo with a NUL-terminated path we own.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0, "{}", std::io::Error::last_os_error());
    // Two workers: more requests for the FIFO than workers.
    let s = serve_with(dir.path(), "host", 1000, &["--workers", "2"]);
    for name in ["fifo"; 3] {
        let got = exchange(&s.http, format!("GET /{name} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes());
        assert!(got.starts_with(b"HTTP/1.1 404"), "{name}: {:?}", String::from_utf8_lossy(&got));
        let got = exchange(&s.memcached, format!("get {name} a.txt\r\nget {name}\r\nquit\r\n").as_bytes());
        assert_eq!(String::from_utf8_lossy(&got), "VALUE a.txt 0 6\r\nhello\n\r\nEND\r\nEND\r\n", "{name}");
    }
    // SAFETY: kill(2) with our own child's pid.
    unsafe { libc::kill(s.pid(), libc::SIGTERM) };
    let report = finish(s);
    assert!(report.contains("404: 3"), "{report}");
}

/// Seconds too large for a deadline are a usage error (they panicked: exit 101).
#[test]
fn durations_too_large_are_refused() {
    let dir = scratch();
    for (opt, value) in [("--duration", "1e20"), ("--read-timeout", "1e20"), ("--duration", "inf"), ("--read-timeout", "0")] {
        run(&mut pp(args!["serve", dir.path(), "--listen", "127.0.0.1:0", opt, value])).fails(2, &[&format!("{opt} must be a positive number of seconds")]);
    }
}

/// The report's peak counts connections served: one refused over the
/// limit (503) is not among them (it said 4 open at once with a limit of 3).
#[test]
fn a_refused_connection_is_not_counted_in_the_peak() {
    let dir = scratch();
    std::fs::write(dir.path().join("a.txt"), b"hello\n").unwrap();
    let s = serve_with(dir.path(), "zerocopy", 1000, &["--max-connections", "3", "--read-timeout", "60"]);
    // Three served connections, each answered once (so each is surely accepted), kept open.
    let held: Vec<TcpStream> = (0..3)
        .map(|_| {
            let mut c = BufReader::new(TcpStream::connect(&s.http).unwrap());
            c.get_ref().set_read_timeout(Some(Duration::from_secs(20))).unwrap();
            assert_eq!(get_on(&mut c, "a.txt").1, b"hello\n");
            c.into_inner()
        })
        .collect();
    let refused = exchange(&s.http, b"GET /a.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert!(refused.starts_with(b"HTTP/1.1 503"), "{:?}", String::from_utf8_lossy(&refused));
    drop(held);
    // SAFETY: kill(2) with our own child's pid.
    unsafe { libc::kill(s.pid(), libc::SIGTERM) };
    let report = finish(s);
    assert!(report.contains("connections: at most 3 open at once (limit 3)"), "{report}");
}

/// What RFC 9110/9112 ask that the server did not do: HEAD answers carry no body, errors
/// included; HTTP/1.1 asks for one Host; the absolute form is taken; an `If-Range` that does
/// not match sends the whole file; every `Connection` option counts;
/// a Date on each answer; a long URI is 414; empty lines before a request are skipped; the
/// range unit is case-insensitive.
#[test]
fn http_requests_are_answered_as_rfc_9110_and_9112_ask() {
    let dir = scratch();
    let d = dir.path();
    std::fs::write(d.join("a.txt"), b"hello\n").unwrap();
    let s = serve_with(d, "zerocopy", 1000, &[]);
    let ask = |req: &str| String::from_utf8_lossy(&exchange(&s.http, req.as_bytes())).into_owned();
    let many_headers = format!("HEAD /a.txt HTTP/1.1\r\nHost: x\r\n{}\r\n", "X: y\r\n".repeat(70));
    for (req, status) in [
        ("HEAD /nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", "404"),
        // A HEAD's Range is ignored (RFC 9110 §14.2): the whole file's head, not a 416's.
        ("HEAD /a.txt HTTP/1.1\r\nHost: x\r\nRange: bytes=50-\r\nConnection: close\r\n\r\n", "200"),
        ("HEAD /../x HTTP/1.1\r\nHost: x\r\n\r\n", "400"),
        // Errors found before the method is known to be HEAD: still no body.
        ("HEAD /a.txt HTTP/1.1\r\n\r\n", "400"),
        ("HEAD /a.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\n", "400"),
        ("HEAD /a.txt HTTP/3.0\r\nHost: x\r\n\r\n", "505"),
        (many_headers.as_str(), "431"),
    ] {
        let got = ask(req);
        assert!(got.starts_with(&format!("HTTP/1.1 {status}")) && got.ends_with("\r\n\r\n"), "no body to a HEAD: {got:?}");
    }
    for req in ["GET /a.txt HTTP/1.1\r\n\r\n", "GET /a.txt HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n"] {
        assert!(ask(req).starts_with("HTTP/1.1 400"), "{req:?}");
    }
    assert!(ask("GET /a.txt HTTP/1.0\r\n\r\n").ends_with("hello\n"), "HTTP/1.0 needs no Host");
    let got = ask("GET http://example.org/a.txt HTTP/1.1\r\nHost: example.org\r\nConnection: close\r\n\r\n");
    assert!(got.starts_with("HTTP/1.1 200") && got.ends_with("\r\n\r\nhello\n"), "absolute form: {got:?}");
    let got = ask("GET /a.txt HTTP/1.1\r\nHost: x\r\nRange: bytes=0-1\r\nIf-Range: \"nomatch\"\r\nConnection: close\r\n\r\n");
    assert!(got.starts_with("HTTP/1.1 200") && got.ends_with("hello\n"), "If-Range that cannot match: the whole file: {got:?}");
    let got = ask("GET /a.txt HTTP/1.1\r\nHost: x\r\nRange: BYTES=0-1\r\nConnection: keep-alive, close\r\n\r\n");
    assert!(got.starts_with("HTTP/1.1 206") && got.contains("Connection: close\r\n") && got.contains("\r\nDate: ") && got.ends_with("he"), "{got:?}");
    let got = ask("\r\n\r\nGET /a.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert!(got.starts_with("HTTP/1.1 200") && got.ends_with("hello\n"), "empty lines first: {got:?}");
    let got = ask(&format!("GET /{} HTTP/1.1\r\nHost: x\r\n\r\n", "a".repeat(70_000)));
    assert!(got.starts_with("HTTP/1.1 414 URI Too Long"), "{got:?}");
    // A later minor version is answered as 1.1; another major version is 505 (RFC 9110 §2.5, §15.6.6).
    let got = ask("GET /a.txt HTTP/1.2\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert!(got.starts_with("HTTP/1.1 200") && got.ends_with("hello\n"), "{got:?}");
    assert!(ask("GET /a.txt HTTP/2.0\r\nHost: x\r\n\r\n").starts_with("HTTP/1.1 505 HTTP Version Not Supported"));
    assert!(ask("GET /a.txt HTTP/1.x\r\nHost: x\r\n\r\n").starts_with("HTTP/1.1 400"));
    // Lines may end with a bare LF (RFC 9112 §2.2): answered at once, not 408 at the read
    // timeout; keep-alive and pipelining work as with CRLF, a later version is still seen.
    let t = std::time::Instant::now();
    let got = ask("GET /a.txt HTTP/1.1\nHost: x\nConnection: close\n\n");
    assert!(got.starts_with("HTTP/1.1 200") && got.ends_with("\r\n\r\nhello\n"), "bare LF: {got:?}");
    assert!(t.elapsed() < Duration::from_secs(4), "bare LF answered after {:?}", t.elapsed());
    let got = ask("GET /a.txt HTTP/1.1\nHost: x\r\n\nGET /a.txt HTTP/1.1\r\nHost: x\nRange: bytes=1-2\nConnection: close\r\n\r\n");
    assert!(got.starts_with("HTTP/1.1 200") && got.matches("hello\n").count() == 1 && got.contains("HTTP/1.1 206") && got.ends_with("el"), "mixed line ends, two requests: {got:?}");
    assert!(ask("GET /a.txt HTTP/2.0\nHost: x\n\n").starts_with("HTTP/1.1 505"));
    let got = ask(&format!("GET /a.txt HTTP/1.1\nHost: x\n{}\n", "X-Flood: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n".repeat(500)));
    assert!(got.starts_with("HTTP/1.1 431"), "a header flood with bare LFs: {got:?}");
    // Ranges (RFC 9110 §14.1.2): a first byte past the end, however many digits, is 416; what
    // is not a range (digits only, no signs or spaces) is ignored: the whole file.
    for first in ["99999999999999999999", "18446744073709551616", "6"] {
        let got = ask(&format!("GET /a.txt HTTP/1.1\r\nHost: x\r\nRange: bytes={first}-\r\nConnection: close\r\n\r\n"));
        assert!(got.starts_with("HTTP/1.1 416") && got.contains("Content-Range: bytes */6\r\n"), "{first}: {got:?}");
    }
    for range in ["bytes=+1-3", "bytes=1-+3", "bytes=-+2", "bytes=1 - 3", "bytes=0x1-2"] {
        let got = ask(&format!("GET /a.txt HTTP/1.1\r\nHost: x\r\nRange: {range}\r\nConnection: close\r\n\r\n"));
        assert!(got.starts_with("HTTP/1.1 200") && !got.contains("Content-Range") && got.ends_with("\r\n\r\nhello\n"), "{range}: {got:?}");
    }
    let got = ask("GET /a.txt HTTP/1.1\r\nHost: x\r\nRange: bytes=2-99999999999999999999\r\nConnection: close\r\n\r\n");
    assert!(got.starts_with("HTTP/1.1 206") && got.contains("Content-Range: bytes 2-5/6\r\n") && got.ends_with("llo\n"), "{got:?}");
    drop(s);
}

/// SIGINT (^C) ends a bench-kv run early with its report, of the time it ran: it killed the
/// client with no word, the run's figures lost.
#[test]
fn an_interrupted_bench_kv_prints_its_report() {
    let dir = scratch();
    std::fs::write(dir.path().join("obj"), b"value").unwrap();
    let s = serve(dir.path(), "host", 1_000_000_000);
    let child = signals_at_default(&mut pp(args!["bench-kv", "--server", &s.memcached, "--key", "obj", "-c", "2", "--seconds", "120"])).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap();
    // Once it catches SIGINT (its SigCgt mask has bit 1; the old client never did: sent after 30 s).
    let caught = || std::fs::read_to_string(format!("/proc/{}/status", child.id())).ok().and_then(|t| t.lines().find_map(|l| l.strip_prefix("SigCgt:").map(|m| u64::from_str_radix(m.trim(), 16).unwrap_or(0) & 2 != 0))).unwrap_or(false);
    let t = std::time::Instant::now();
    while !caught() && t.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: kill(2) with our own child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let o = child.wait_with_output().unwrap();
    let (out, err) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success(), "{:?}: {out}{err}", o.status);
    let seconds: f64 = out.split(" in ").nth(1).and_then(|t| t.split(' ').next()).and_then(|t| t.parse().ok()).unwrap_or_else(|| panic!("no time: {out}"));
    assert!(out.contains(" get obj: ") && out.contains(" on 2 connections: ") && seconds < 120.0, "{out}");
    drop(s);
}

/// bench-kv's failures have the exit codes of their kind (all were 15, a device's failure):
/// a key that cannot be asked is a usage error, a server not there or without the key a
/// source missing, and `serve --max-requests 0` is refused. They are said as the server's
/// ("cannot read source 127.0.0.1:1" was a file's wording), the key quoted.
#[test]
fn bench_kv_and_serve_refusals_have_their_exit_codes() {
    let dir = scratch();
    run(&mut pp(args!["bench-kv", "--server", "127.0.0.1:1", "--key", "k", "--seconds", "0.1"])).fails(3, &["peerpath: error: cannot reach the server 127.0.0.1:1: "]);
    run(&mut pp(args!["bench-kv", "--server", "127.0.0.1:1", "--key", "a b", "--seconds", "0.1"])).fails(2, &["--key"]);
    std::fs::write(dir.path().join("a.txt"), b"hello\n").unwrap();
    let s = serve_with(dir.path(), "host", 1000, &[]);
    run(&mut pp(args!["bench-kv", "--server", &s.memcached, "--key", "nope", "--seconds", "0.1"])).fails(3, &[&format!("peerpath: error: the server {} has no value for nope\n", s.memcached)]);
    // The key is quoted as names are (one that begins as a quoted name does is quoted).
    run(&mut pp(args!["bench-kv", "--server", &s.memcached, "--key", "'nope", "--seconds", "0.1"])).fails(3, &[&format!("the server {} has no value for \\''nope'\n", s.memcached)]);
    drop(s);
}

/// memcached data blocks are read as they come, the connection waiting in epoll between their
/// pieces: clients that drip a block a byte at a time (refused, or stored with --writable) hold
/// no worker, and are cut at the block's deadline (the read timeout plus a second per MiB). They
/// held the worker for as long as a byte came within the read timeout, for ever: with one
/// worker, two such clients froze both ports. A refused block longer than any the server reads
/// to drop is refused at once, unread, and its connection closed (it was read, a worker held).
#[test]
fn clients_that_drip_a_data_block_hold_no_worker_and_are_cut_at_its_deadline() {
    let dir = scratch();
    let d = dir.path();
    std::fs::write(d.join("a.txt"), b"hello\n").unwrap();
    for (extra, refusal) in [(&[][..], "SERVER_ERROR read-only"), (&["--writable"][..], "SERVER_ERROR object too large for cache")] {
        let s = serve_with(d, "zerocopy", 1000, &[&["--workers", "1", "--read-timeout", "4"], extra].concat());
        let mut huge = TcpStream::connect(&s.memcached).unwrap();
        huge.write_all(b"set k 0 0 1000000000\r\n").unwrap();
        let drippers: Vec<TcpStream> = (0..2)
            .map(|_| {
                let mut c = TcpStream::connect(&s.memcached).unwrap();
                c.write_all(b"set k 0 0 1000\r\n").unwrap();
                c
            })
            .collect();
        // A byte every 300 ms: the block would take 5 minutes; the read timeout never passes.
        let mut dripping: Vec<TcpStream> = drippers.iter().map(|c| c.try_clone().unwrap()).collect();
        let dripper = std::thread::spawn(move || {
            for _ in 0..1000 {
                dripping.retain_mut(|c| c.write_all(b"x").is_ok());
                if dripping.is_empty() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(300));
            }
        });
        std::thread::sleep(Duration::from_millis(500));
        // Others are served meanwhile, on both ports.
        assert_eq!(String::from_utf8_lossy(&exchange(&s.memcached, b"get a.txt\r\nquit\r\n")), "VALUE a.txt 0 6\r\nhello\n\r\nEND\r\n", "{extra:?}");
        let (head, body) = split(&exchange(&s.http, b"GET /a.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
        assert!(head.starts_with("HTTP/1.1 200") && body == b"hello\n", "{extra:?}: {head}");
        let mut said = Vec::new();
        huge.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        huge.read_to_end(&mut said).unwrap();
        assert!(String::from_utf8_lossy(&said).starts_with(refusal), "{extra:?}: refused at once and closed: {:?}", String::from_utf8_lossy(&said));
        for mut c in drippers {
            let mut said = Vec::new();
            c.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
            let _ = c.read_to_end(&mut said);
            assert_eq!(String::from_utf8_lossy(&said), "SERVER_ERROR data block not whole in time (the read timeout plus a second per MiB)\r\n", "{extra:?}");
        }
        dripper.join().unwrap();
        assert!(!d.join("k").exists(), "{extra:?}: nothing of a cut value is stored");
        // SAFETY: kill(2) with our own child's pid.
        unsafe { libc::kill(s.pid(), libc::SIGTERM) };
        let report = finish(s);
        assert!(report.contains("408: 2"), "{report}");
    }
}

/// A request with two Content-Length fields (0, then 38) was taken with the first, and its
/// 38-byte body answered as a second request: request smuggling past a proxy that takes the
/// last. Two are refused (400, closed: RFC 9112 §6.3), even two of 0; one 0 is still taken.
#[test]
fn two_content_lengths_are_refused_and_the_body_is_not_taken_for_a_request() {
    let dir = scratch();
    std::fs::write(dir.path().join("a.txt"), b"hello\n").unwrap();
    let s = serve_with(dir.path(), "zerocopy", 1000, &[]);
    let smuggled = b"GET /a.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nContent-Length: 38\r\n\r\nGET /b/x.txt HTTP/1.1\r\nHost: x\r\n\r\n";
    let twice_0 = b"GET /a.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\ncontent-length: 0\r\n\r\n";
    for req in [&smuggled[..], &twice_0[..]] {
        let got = String::from_utf8_lossy(&exchange(&s.http, req)).into_owned();
        assert!(got.starts_with("HTTP/1.1 400") && got.contains("Connection: close\r\n") && got.matches("HTTP/1.1").count() == 1, "{got:?}");
    }
    let got = String::from_utf8_lossy(&exchange(&s.http, b"GET /a.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")).into_owned();
    assert!(got.starts_with("HTTP/1.1 200") && got.ends_with("\r\n\r\nhello\n"), "{got:?}");
    drop(s);
}

/// A memcached server of one connection for bench-kv: answers the first get with `answer`
/// (`after` it came), then drips a byte every 500 ms (`drip`), and closes when the client goes,
/// or at once (`close`). Returns its address and the thread (joined once the client is done).
fn fake_kv_server(answer: &[u8], after: Duration, drip: bool, close: bool) -> (String, std::thread::JoinHandle<()>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let answer = answer.to_vec();
    let server = std::thread::spawn(move || {
        let (mut c, _) = listener.accept().unwrap();
        let _ = c.read(&mut [0u8; 100]);
        std::thread::sleep(after);
        let _ = c.write_all(&answer);
        while drip && c.write_all(b"x").is_ok() {
            std::thread::sleep(Duration::from_millis(500));
        }
        if !close {
            let _ = c.read_to_end(&mut Vec::new());
        }
    });
    (addr, server)
}

/// bench-kv prints a rate under 1 a second with its digits, as serve's report does: one get
/// answered 1.5 s after it was sent read "1 requests/s" (0.66 rounded), or 0 for a slower one.
#[test]
fn bench_kv_prints_a_slow_rate_with_its_digits() {
    let (addr, server) = fake_kv_server(b"VALUE k 0 3\r\nabc\r\nEND\r\n", Duration::from_millis(1500), false, true);
    let o = run_full(&mut pp(args!["bench-kv", "--server", &addr, "--key", "k", "-c", "1", "--seconds", "0.1"]), None, Duration::from_secs(90)).ok();
    server.join().unwrap();
    let text = o.stdout_str();
    let word_after = |s: &str| -> String { text.split(s).nth(1).and_then(|t| t.split(' ').next()).unwrap_or_else(|| panic!("no {s:?}: {text}")).to_string() };
    let (requests, seconds, rate) = (word_after(": "), word_after(" request in "), word_after(" connection: "));
    let (seconds, got): (f64, f64) = (seconds.parse().unwrap(), rate.parse().unwrap());
    assert!(requests == "1" && seconds >= 1.5, "{text}");
    // Three significant digits, of the rate the line's own count and time give.
    assert!(rate.starts_with("0.") && rate[2..].trim_start_matches('0').len() == 3 && (got - 1.0 / seconds).abs() < 0.01, "{rate} requests/s: {text}");
}

/// bench-kv against a server that accepts and never answers, or drips its answer: the run ends
/// with an error a bounded time after --seconds (it hung for ever), exit 12 (an error reading
/// the server), saying why.
#[test]
fn bench_kv_gives_up_on_a_server_that_does_not_answer() {
    for (answer, drip, needle) in [(&b""[..], false, "reading the answer: the server sent nothing for 5 s"), (b"VALUE k 0 1000\r\n", true, "the value was not whole 5 s after the run's end")] {
        let (addr, server) = fake_kv_server(answer, Duration::ZERO, drip, false);
        let o = run_full(&mut pp(args!["bench-kv", "--server", &addr, "--key", "k", "-c", "1", "--seconds", "0.5"]), None, Duration::from_secs(90));
        o.fails(12, &[&format!("peerpath: error: the server {addr} broke off: "), needle]);
        server.join().unwrap();
    }
}

/// bench-kv takes no value length a server declares on trust: it is counted through a fixed
/// buffer, never allocated (100 GB aborted the process, 2^64 - 6 panicked, and a 1 GiB object
/// took 1 GiB a connection): a lie is exit 12, saying what was wrong.
#[test]
fn bench_kv_allocates_no_value_length_a_server_declares() {
    for (answer, needle) in [
        (&b"VALUE k 0 100000000000\r\n"[..], "the server closed the connection 0 bytes into a 100000000000-byte value"),
        (b"VALUE k 0 18446744073709551610\r\nabc", "more than any file holds"),
        (b"VALUE k 0 3\r\nabc\r\nEXD\r\n", "not followed by END"),
    ] {
        let (addr, server) = fake_kv_server(answer, Duration::ZERO, false, true);
        let o = run_full(&mut pp(args!["bench-kv", "--server", &addr, "--key", "k", "-c", "1", "--seconds", "0.5"]), None, Duration::from_secs(90));
        o.fails(12, &[needle]);
        server.join().unwrap();
    }
}

/// A response the client does not take whole (it goes away midway) is
/// counted as aborted, not under its status: the report said 200 for it,
/// as for one sent whole. In every mode (devmem: the NIC's send fails).
#[test]
fn a_response_cut_short_is_counted_as_aborted_not_as_a_200() {
    let dir = scratch();
    std::fs::write(dir.path().join("big"), random_bytes(64 << 20, 13)).unwrap();
    std::fs::write(dir.path().join("a.txt"), b"hello\n").unwrap();
    for mode in ["zerocopy", "host", "send-zc", "devmem"] {
        let s = serve_with(dir.path(), mode, 2, &["--nic-memory", "200M", "--json"]);
        let mut c = BufReader::new(TcpStream::connect(&s.http).unwrap());
        c.get_ref().set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        c.get_mut().write_all(b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        // The response has begun (64 MiB: more than loopback's sockets hold); then the client goes.
        let (status, len) = read_head_of(&mut c);
        assert!(status.starts_with("HTTP/1.1 200") && len == 64 << 20, "{mode}: {status}");
        let mut some = vec![0u8; 1 << 20];
        c.read_exact(&mut some).unwrap();
        drop(c);
        let (head, body) = split(&exchange(&s.http, b"GET /a.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
        assert!(head.starts_with("HTTP/1.1 200") && body == b"hello\n", "{mode}: {head}");
        let report: serde_json::Value = serde_json::from_str(&finish(s)).unwrap();
        assert_eq!(report["requests"].as_u64(), Some(2), "{mode}: {report}");
        assert_eq!(report["aborted"].as_u64(), Some(1), "{mode}: the big one was cut short: {report}");
        assert_eq!(report["by_status"], serde_json::json!({"200": 1}), "{mode}: only a.txt was sent whole: {report}");
        assert_eq!(report["payload_bytes"].as_u64(), Some(6), "{mode}: {report}");
    }
}

/// Addresses may name a host (`localhost:PORT`, refused before), resolved to its IPv4 address.
#[test]
fn addresses_may_be_host_names() {
    let dir = scratch();
    std::fs::write(dir.path().join("a.txt"), b"hello\n").unwrap();
    let mut child = pp(args!["serve", dir.path(), "--listen", "localhost:0", "--memcached", "localhost:0", "--max-requests", "2"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let (mut http, mut memcached, mut said) = (String::new(), String::new(), String::new());
    while http.is_empty() || memcached.is_empty() {
        let mut line = String::new();
        if err.read_line(&mut line).unwrap() == 0 {
            let _ = child.kill();
            panic!("serve exited before listening: {said}");
        }
        said.push_str(&line);
        if let Some(a) = line.split("http://").nth(1) {
            http = a.split('/').next().unwrap().to_string();
        }
        if let Some(a) = line.split("protocol on ").nth(1) {
            memcached = a.trim().to_string();
        }
    }
    let s = Served { child: Some(child), http, memcached, nic: None, said };
    assert!(s.http.starts_with("127.0.0.1:") && s.memcached.starts_with("127.0.0.1:"), "{}", s.said);
    assert!(exchange(&s.http, b"GET /a.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").ends_with(b"\r\n\r\nhello\n"));
    assert_eq!(exchange(&s.memcached, b"get a.txt\r\nquit\r\n"), b"VALUE a.txt 0 6\r\nhello\n\r\nEND\r\n");
    assert!(finish(s).contains("2 requests in"));
    // No port: refused (a usage error, said by the argument parser), no name looked up.
    let o = run(&mut pp(args!["serve", dir.path(), "--listen", "localhost"]));
    assert!(o.code() == Some(2) && o.stderr.contains("localhost: not an address (IP:PORT or HOST:PORT)"), "{}", o.stderr);
}

/// Conditional requests (RFC 9110 §13), in every mode: 200 and 206 answers carry a strong ETag
/// (inode, length, modification time to the nanosecond) and Last-Modified; an If-None-Match
/// naming it (in a list, weakly compared, or `*`) or, without one, an If-Modified-Since not
/// before Last-Modified gets 304 with no body, a HEAD's too, the connection kept; If-Range
/// serves the range only if it is the file's (a strong tag, or its date), else the whole file;
/// a rewrite in the same second, same length, has another tag. 304s are counted. (There were
/// no validators: a client that revalidated got the whole body every time.)
#[test]
fn conditional_requests_get_304_and_if_range_serves_the_range_only_on_a_match() {
    let dir = scratch();
    let path = dir.path().join("a.txt");
    // 2020-01-01 00:00:00 UTC, and `ms` milliseconds.
    let set = |body: &[u8], ms: u64| {
        std::fs::write(&path, body).unwrap();
        std::fs::File::options().write(true).open(&path).unwrap().set_modified(std::time::UNIX_EPOCH + Duration::from_millis(1_577_836_800_000 + ms)).unwrap();
    };
    let lm = "Wed, 01 Jan 2020 00:00:00 GMT";
    for mode in ["zerocopy", "host", "send-zc", "devmem"] {
        set(b"hello\n", 500);
        let s = serve_with(dir.path(), mode, 1000, &["--json"]);
        let ask = |extra: &str| String::from_utf8_lossy(&exchange(&s.http, format!("GET /a.txt HTTP/1.1\r\nHost: x\r\n{extra}Connection: close\r\n\r\n").as_bytes())).into_owned();
        let etag_of = |got: &str| got.split("\r\nETag: ").nth(1).and_then(|t| t.split("\r\n").next()).unwrap_or_else(|| panic!("{mode}: no ETag: {got:?}")).to_string();
        let got = ask("");
        let etag = etag_of(&got);
        assert!(etag.len() > 2 && etag.starts_with('"') && etag.ends_with('"') && got.contains(&format!("\r\nLast-Modified: {lm}\r\n")) && got.ends_with("\r\n\r\nhello\n"), "{mode}: {got:?}");
        let weak = format!("W/{etag}");
        for current in [format!("If-None-Match: {etag}"), format!("If-None-Match: {weak}"), format!("If-None-Match: \"x\", {etag}"), "If-None-Match: *".into(), format!("If-Modified-Since: {lm}")] {
            let got = ask(&format!("{current}\r\n"));
            assert!(got.starts_with("HTTP/1.1 304 Not Modified\r\n") && got.contains(&format!("\r\nETag: {etag}\r\n")) && !got.contains("Content-Length") && got.ends_with("\r\n\r\n"), "{mode}: {current}: {got:?}");
        }
        // If-Modified-Since is not looked at when If-None-Match is there.
        for stale in ["If-None-Match: \"x\"\r\n".to_string(), "If-Modified-Since: Tue, 31 Dec 2019 23:59:59 GMT\r\n".into(), format!("If-None-Match: \"x\"\r\nIf-Modified-Since: {lm}\r\n")] {
            let got = ask(&stale);
            assert!(got.starts_with("HTTP/1.1 200") && got.ends_with("\r\n\r\nhello\n"), "{mode}: {stale:?}: {got:?}");
        }
        // A HEAD's 304 too; a 304 keeps its connection for the next request.
        let got = exchange(&s.http, format!("HEAD /a.txt HTTP/1.1\r\nHost: x\r\nIf-None-Match: {etag}\r\n\r\nGET /a.txt HTTP/1.1\r\nHost: x\r\nIf-None-Match: {etag}\r\n\r\nGET /a.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes());
        let got = String::from_utf8_lossy(&got);
        assert!(got.matches("HTTP/1.1 304").count() == 2 && got.contains("Connection: keep-alive") && got.matches("hello\n").count() == 1 && got.ends_with("\r\n\r\nhello\n"), "{mode}: {got:?}");
        for (if_range, ranged) in [(etag.as_str(), true), (lm, true), (weak.as_str(), false), ("\"x\"", false), ("Tue, 31 Dec 2019 23:59:59 GMT", false)] {
            let got = ask(&format!("Range: bytes=1-2\r\nIf-Range: {if_range}\r\n"));
            let want = if ranged { got.starts_with("HTTP/1.1 206") && got.contains("Content-Range: bytes 1-2/6\r\n") && got.ends_with("\r\n\r\nel") } else { got.starts_with("HTTP/1.1 200") && got.ends_with("\r\n\r\nhello\n") };
            assert!(want && got.contains(&format!("\r\nETag: {etag}\r\n")), "{mode}: If-Range {if_range}: {got:?}");
        }
        // Rewritten: the same length, in the same second (the same Last-Modified), another tag.
        set(b"HELLO\n", 600);
        let got = ask(&format!("If-None-Match: {etag}\r\n"));
        assert!(got.starts_with("HTTP/1.1 200") && got.ends_with("\r\n\r\nHELLO\n") && etag_of(&got) != etag, "{mode}: {got:?}");
        // SAFETY: kill(2) with our own child's pid.
        unsafe { libc::kill(s.pid(), libc::SIGTERM) };
        let report: serde_json::Value = serde_json::from_str(&finish(s)).unwrap();
        assert_eq!(report["by_status"], serde_json::json!({"200": 9, "206": 2, "304": 7}), "{mode}: {report}");
    }
}

/// Every error answer the server sends is counted once under its status, once it is sent, as
/// the others are: 408, 414, 431 (a header block too long, or too many fields), a refused
/// connection's 503 (memcached: SERVER_ERROR), a memcached line too long (400). A refused
/// connection's answer was not counted at all; 408, 414 and the first 431 were counted before
/// they were sent, whether they were or not, with no latency (0 us among the others'). A
/// HEAD's 408 or 431 has no body (it had one).
#[test]
fn every_error_answer_is_counted_once_under_its_status() {
    let dir = scratch();
    std::fs::write(dir.path().join("a.txt"), b"hello\n").unwrap();
    let s = serve_with(dir.path(), "zerocopy", 1000, &["--max-connections", "1", "--read-timeout", "60", "--json"]);
    let ask = |addr: &str, req: &[u8]| String::from_utf8_lossy(&exchange(addr, req)).into_owned();
    // One connection served and kept: the next ones are refused.
    let mut held = BufReader::new(TcpStream::connect(&s.http).unwrap());
    held.get_ref().set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    assert_eq!(get_on(&mut held, "a.txt").1, b"hello\n");
    let got = ask(&s.http, b"GET /a.txt HTTP/1.1\r\nHost: x\r\n\r\n");
    assert!(got.starts_with("HTTP/1.1 503"), "{got:?}");
    assert_eq!(ask(&s.memcached, b"get a.txt\r\n"), "SERVER_ERROR too many connections\r\n");
    // Closed by the server (its count of connections is down before the client sees the end).
    held.get_mut().write_all(b"GET /a.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
    let mut rest = Vec::new();
    held.read_to_end(&mut rest).unwrap();
    assert!(rest.ends_with(b"\r\n\r\nhello\n"), "{:?}", String::from_utf8_lossy(&rest));
    let got = ask(&s.http, format!("GET /{} HTTP/1.1\r\nHost: x\r\n\r\n", "a".repeat(70_000)).as_bytes());
    assert!(got.starts_with("HTTP/1.1 414"), "{got:?}");
    let got = ask(&s.http, format!("HEAD /a.txt HTTP/1.1\r\nHost: x\r\n{}\r\n", "X-Flood: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n".repeat(400)).as_bytes());
    assert!(got.starts_with("HTTP/1.1 431") && got.ends_with("\r\n\r\n"), "a HEAD's header flood, no body: {got:?}");
    let got = ask(&s.http, format!("GET /a.txt HTTP/1.1\r\nHost: x\r\n{}\r\n", "X: y\r\n".repeat(70)).as_bytes());
    assert!(got.starts_with("HTTP/1.1 431"), "too many fields: {got:?}");
    assert_eq!(ask(&s.memcached, format!("get {}", "k".repeat(70_000)).as_bytes()), "CLIENT_ERROR line too long\r\n");
    // SAFETY: kill(2) with our own child's pid.
    unsafe { libc::kill(s.pid(), libc::SIGTERM) };
    let report: serde_json::Value = serde_json::from_str(&finish(s)).unwrap();
    assert_eq!(report["by_status"], serde_json::json!({"200": 2, "400": 1, "414": 1, "431": 2, "503": 2}), "{report}");
    assert_eq!((report["requests"].as_u64(), report["aborted"].as_u64()), (Some(8), Some(0)), "{report}");
    // 408, a HEAD's: no body.
    let s = serve_with(dir.path(), "zerocopy", 1000, &["--read-timeout", "1", "--json"]);
    let got = ask(&s.http, b"HEAD /a.txt HTTP/1.1\r\nHost: sl");
    assert!(got.starts_with("HTTP/1.1 408") && got.ends_with("\r\n\r\n"), "{got:?}");
    // SAFETY: kill(2) with our own child's pid.
    unsafe { libc::kill(s.pid(), libc::SIGTERM) };
    let report: serde_json::Value = serde_json::from_str(&finish(s)).unwrap();
    assert_eq!((&report["by_status"], report["requests"].as_u64()), (&serde_json::json!({"408": 1}), Some(1)), "{report}");
}

/// devmem: a response the NIC could not finish (the client went away mid-body) is aborted, and
/// its latency is not among the percentiles, as no aborted request's is; the report says so.
/// (It was: the server counts a response as sent once the NIC has it, and when the NIC's send
/// failed, only its status was taken back.)
#[test]
fn a_devmem_response_the_nic_could_not_finish_is_not_among_the_latencies() {
    let dir = scratch();
    std::fs::write(dir.path().join("big"), random_bytes(64 << 20, 14)).unwrap();
    let s = serve_with(dir.path(), "devmem", 1000, &["--nic-memory", "200M"]);
    let mut c = BufReader::new(TcpStream::connect(&s.http).unwrap());
    c.get_ref().set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    c.get_mut().write_all(b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    // The response has begun (64 MiB: more than loopback's sockets hold); then the client goes.
    let (status, len) = read_head_of(&mut c);
    assert!(status.starts_with("HTTP/1.1 200") && len == 64 << 20, "{status}");
    let mut some = vec![0u8; 1 << 20];
    c.read_exact(&mut some).unwrap();
    drop(c);
    // SAFETY: kill(2) with our own child's pid.
    unsafe { libc::kill(s.pid(), libc::SIGTERM) };
    let report = finish(s);
    assert!(report.contains(": 1 request in") && report.contains("1 aborted (") && report.contains("not in the latencies)"), "{report}");
    assert!(report.contains("latency p50 0 us, p99 0 us, p99.9 0 us;"), "no request was sent whole: {report}");
}

/// devmem: the emulated NIC dies mid-response (SIGKILL while it is sending 64 MiB to a client
/// that took a few MiB and then stopped reading): that response was not sent whole, so it is
/// aborted, not a 200, and none of its payload is counted. (The NIC's answers it still owed were
/// left owed when it died: the report said 200 and the whole 64 MiB sent.)
#[test]
fn a_devmem_response_cut_short_by_the_nics_death_is_aborted() {
    let dir = scratch();
    std::fs::write(dir.path().join("big"), random_bytes(64 << 20, 15)).unwrap();
    let s = serve_with(dir.path(), "devmem", 1000, &["--nic-memory", "200M", "--json"]);
    let nic = s.nic.expect("the NIC's process id is printed");
    let mut c = BufReader::new(TcpStream::connect(&s.http).unwrap());
    c.get_ref().set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    c.get_mut().write_all(b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    // The NIC is sending (64 MiB: more than loopback's sockets hold); the client takes 4 MiB, then stalls.
    let (status, len) = read_head_of(&mut c);
    assert!(status.starts_with("HTTP/1.1 200") && len == 64 << 20, "{status}");
    let mut some = vec![0u8; 4 << 20];
    c.read_exact(&mut some).unwrap();
    // SAFETY: kill(2) with the pid of a process this test's child started.
    unsafe { libc::kill(nic, libc::SIGKILL) };
    wait_until_ended(nic, "the NIC killed with SIGKILL");
    // SAFETY: kill(2) with our own child's pid.
    unsafe { libc::kill(s.pid(), libc::SIGTERM) };
    let report: serde_json::Value = serde_json::from_str(&finish(s)).unwrap();
    // The client is still there, having read nothing more: the NIC's death cut the response short.
    drop(c);
    assert!(report["nic_fallback"].as_str().is_some_and(|w| w.contains("the emulated NIC is gone")), "{report}");
    assert_eq!((report["requests"].as_u64(), report["aborted"].as_u64()), (Some(1), Some(1)), "{report}");
    assert_eq!(report["by_status"], serde_json::json!({}), "nothing was sent whole: {report}");
    assert_eq!(report["payload_bytes"].as_u64(), Some(0), "{report}");
}
