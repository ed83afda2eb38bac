//! Helpers shared by the integration tests: run the real `peerpath` binary
//! with a deadline, make test data, find system tools, inspect gzip files.
//!
//! Every test works in its own scratch directory under Cargo's target tmp
//! dir (a real disk, so O_DIRECT is exercised; /tmp may be tmpfs).

#![allow(dead_code)] // each test binary uses a different subset

use std::ffi::{OsStr, OsString};
use std::io::{Read, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Generous: a slow, shared 2-core machine must never fail a test by time.
/// Only a hang (or a command that never ends) trips it.
pub const DEADLINE: Duration = Duration::from_secs(600);
/// The deadline for bad input that must not hang (lying size fields).
pub const HANG_DEADLINE: Duration = Duration::from_secs(60);

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_peerpath")
}

/// The bundled protein sample.
pub fn sample_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/sample/protein.fasta")
}

pub fn sample() -> &'static [u8] {
    static SAMPLE: OnceLock<Vec<u8>> = OnceLock::new();
    SAMPLE.get_or_init(|| {
        let s = std::fs::read(sample_path()).expect("the bundled sample data/sample/protein.fasta is readable");
        assert!(s.len() > 1_000_000, "the bundled sample is unexpectedly small");
        s
    })
}

/// A fresh scratch directory, removed when dropped.
pub fn scratch() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("peerpath-cli-test")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .expect("create a scratch directory")
}

/// Deterministic pseudo-random bytes (xorshift64*).
pub fn random_bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut v = Vec::with_capacity(len + 8);
    while v.len() < len {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        v.extend_from_slice(&x.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes());
    }
    v.truncate(len);
    v
}

/// Test data of `len` bytes: protein text (compressible, Huffman-coded
/// members) interleaved with random stretches (incompressible, stored
/// members), so both encoder paths are exercised.
pub fn mixed_data(len: usize, seed: u64) -> Vec<u8> {
    let s = sample();
    let noise = random_bytes(256 << 10, seed ^ 0x5eed);
    let mut v = Vec::with_capacity(len);
    let mut k = seed.wrapping_add(1);
    let mut next = || {
        k = k.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (k >> 16) as usize
    };
    while v.len() < len {
        let want = len - v.len();
        let (src, n) = if next() % 4 == 0 {
            (&noise[..], want.min(4096 + next() % 80_000))
        } else {
            (s, want.min(30_000 + next() % 50_000))
        };
        let at = next() % (src.len() - n + 1);
        v.extend_from_slice(&src[at..at + n]);
    }
    v
}

/// What a finished command left.
pub struct Out {
    pub status: ExitStatus,
    pub stdout: Vec<u8>,
    pub stderr: String,
    pub what: String,
}

impl Out {
    pub fn code(&self) -> Option<i32> {
        self.status.code()
    }

    pub fn describe(&self) -> String {
        format!(
            "{}\n  status: {}\n  stderr: {}\n  stdout (first 2000 bytes): {}",
            self.what,
            self.status,
            self.stderr.trim_end(),
            String::from_utf8_lossy(&self.stdout[..self.stdout.len().min(2000)])
        )
    }

    /// Asserts success and returns self.
    #[track_caller]
    pub fn ok(self) -> Self {
        assert!(self.status.success(), "command failed:\n{}", self.describe());
        self
    }

    /// Asserts the exit code of a failure, that the error message contains
    /// every one of `needles`, and that nothing panicked or was killed.
    #[track_caller]
    pub fn fails(self, code: i32, needles: &[&str]) -> Self {
        assert_eq!(self.code(), Some(code), "wrong exit status (want {code}):\n{}", self.describe());
        assert!(!self.stderr.contains("panicked"), "the binary panicked:\n{}", self.describe());
        assert!(self.stderr.contains("peerpath: error:"), "no error message:\n{}", self.describe());
        for n in needles {
            assert!(self.stderr.contains(n), "the error message lacks {n:?}:\n{}", self.describe());
        }
        self
    }

    pub fn stdout_str(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.stdout)
            .unwrap_or_else(|e| panic!("--json output does not parse ({e}):\n{}", self.describe()))
    }
}

/// A `peerpath` command.
pub fn pp<I, S>(args: I) -> Command
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut c = Command::new(bin());
    c.args(args);
    c.env("RUST_BACKTRACE", "1");
    c
}

/// Has `c`'s child start with SIGINT and SIGQUIT at their default dispositions, for a test that
/// stops it with one of them. A test run with them ignored (a script's background job,
/// `cargo test &`, `trap '' INT QUIT`) hands that on, and peerpath keeps a signal ignored at
/// start ignored (gzip's rule): the signal would not stop the child, and one waiting for more
/// input would wait for ever.
pub fn signals_at_default(c: &mut Command) -> &mut Command {
    // SAFETY: runs in the forked child before exec; signal(2) is async-signal-safe and only
    // sets these signals' dispositions.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(c, || {
            for sig in [libc::SIGINT, libc::SIGQUIT] {
                if libc::signal(sig, libc::SIG_DFL) == libc::SIG_ERR {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        })
    }
}

/// Builds an argument list from mixed strings and paths.
#[macro_export]
macro_rules! args {
    ($($a:expr),* $(,)?) => {{
        let v: Vec<std::ffi::OsString> = vec![$(std::ffi::OsString::from($a)),*];
        v
    }};
}

pub fn describe_cmd(cmd: &Command) -> String {
    let mut s = cmd.get_program().to_string_lossy().into_owned();
    for a in cmd.get_args() {
        s.push(' ');
        s.push_str(&a.to_string_lossy());
    }
    s
}

pub fn reader_thread(mut r: impl Read + Send + 'static) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = r.read_to_end(&mut v);
        v
    })
}

/// Waits for `child` until `deadline`; kills it and panics if it is still
/// running then (a hang is a failure, slowness below the deadline is not).
pub fn wait_deadline(child: &mut Child, deadline: Duration, what: &str) -> ExitStatus {
    let start = Instant::now();
    loop {
        match child.try_wait().expect("wait for child") {
            Some(st) => return st,
            None if start.elapsed() > deadline => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("{what}: still running after {} s (hang?); killed", deadline.as_secs());
            }
            None => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

/// Waits until process `pid` (not this test's child) has ended: gone, or a
/// zombie whose every thread has exited. Only then are all its descriptors
/// closed; a thread-group leader shows `Z` while its other threads are still
/// exiting (and holding them). Panics after 20 s, naming `what`.
pub fn wait_until_ended(pid: i32, what: &str) {
    let start = Instant::now();
    let ended = |status: &str| {
        let field = |name: &str| status.lines().find_map(|l| l.strip_prefix(name)).map(str::trim);
        field("State:").is_some_and(|s| s.starts_with('Z')) && field("Threads:") == Some("1")
    };
    while std::fs::read_to_string(format!("/proc/{pid}/status")).is_ok_and(|st| !ended(&st)) {
        assert!(start.elapsed() < Duration::from_secs(20), "{what} (process {pid}) has not ended in 20 s");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Waits (at most 5 s) until process `pid` has `path` open: a test that changes a source
/// under a job does it only once the job has it (and its size).
pub fn wait_until_open(pid: u32, path: &Path) {
    let start = Instant::now();
    let opened = || std::fs::read_dir(format!("/proc/{pid}/fd")).into_iter().flatten().flatten().any(|fd| std::fs::read_link(fd.path()).is_ok_and(|p| p == path));
    while !opened() && start.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Runs `cmd` with optional standard input, collecting its output.
pub fn run_full(cmd: &mut Command, stdin: Option<Vec<u8>>, deadline: Duration) -> Out {
    let what = describe_cmd(cmd);
    cmd.stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() });
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
    let writer = stdin.map(|data| {
        let mut w = child.stdin.take().expect("stdin piped");
        std::thread::spawn(move || {
            let _ = w.write_all(&data);
        })
    });
    let out = reader_thread(child.stdout.take().expect("stdout piped"));
    let err = reader_thread(child.stderr.take().expect("stderr piped"));
    let status = wait_deadline(&mut child, deadline, &what);
    if let Some(w) = writer {
        let _ = w.join();
    }
    Out {
        status,
        stdout: out.join().expect("stdout reader"),
        stderr: String::from_utf8_lossy(&err.join().expect("stderr reader")).into_owned(),
        what,
    }
}

pub fn run(cmd: &mut Command) -> Out {
    run_full(cmd, None, DEADLINE)
}

/// A system tool on PATH, or None (the caller skips, saying why).
pub fn tool(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path).map(|d| d.join(name)).find(|p| p.is_file())
}

/// Finds every tool or prints why the test is skipped.
pub fn tools_or_skip(test: &str, names: &[&str]) -> Option<Vec<PathBuf>> {
    let mut found = Vec::new();
    for n in names {
        match tool(n) {
            Some(p) => found.push(p),
            None => {
                eprintln!("SKIPPED {test}: `{n}` is not installed (scripts/install-deps.sh installs it)");
                return None;
            }
        }
    }
    Some(found)
}

/// Runs a system tool, asserting success, returning stdout.
#[track_caller]
pub fn sys(program: &Path, args: &[&OsStr], stdin: Option<Vec<u8>>) -> Vec<u8> {
    let mut c = Command::new(program);
    c.args(args);
    run_full(&mut c, stdin, DEADLINE).ok().stdout
}

pub fn os(s: impl AsRef<OsStr>) -> OsString {
    s.as_ref().to_owned()
}

/// True when the tests run as root (chmod 000 does not stop reads then).
pub fn running_as_root(dir: &Path) -> bool {
    let p = dir.join(".uid-probe");
    std::fs::write(&p, b"").expect("write a probe file");
    let uid = std::fs::metadata(&p).expect("stat the probe").uid();
    std::fs::remove_file(&p).expect("remove the probe");
    uid == 0
}

/// Names in `dir` (not recursive); none where `dir` is not there (a job
/// that fails removes the output directory it made).
pub fn names_in(dir: &Path) -> Vec<String> {
    let entries = match std::fs::read_dir(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
        r => r,
    };
    let mut v: Vec<String> = entries
        .unwrap_or_else(|e| panic!("list {}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Nothing left behind: no temporary files in `dir`, and `dir` holds
/// exactly `expected` (sorted names).
#[track_caller]
pub fn assert_dir_holds(dir: &Path, expected: &[&str]) {
    let names = names_in(dir);
    let temps: Vec<&String> = names.iter().filter(|n| n.contains(".peerpath-tmp.")).collect();
    assert!(temps.is_empty(), "temporary files left in {}: {temps:?}", dir.display());
    let mut want: Vec<String> = expected.iter().map(|s| s.to_string()).collect();
    want.sort();
    assert_eq!(names, want, "unexpected contents of {}", dir.display());
}

/// Asserts a file holds exactly `expected` (without printing megabytes).
#[track_caller]
pub fn assert_file_eq(path: &Path, expected: &[u8], what: &str) {
    let got = std::fs::read(path).unwrap_or_else(|e| panic!("{what}: cannot read {}: {e}", path.display()));
    assert_bytes_eq(&got, expected, what);
}

#[track_caller]
pub fn assert_bytes_eq(got: &[u8], expected: &[u8], what: &str) {
    if got != expected {
        let first = got.iter().zip(expected).position(|(a, b)| a != b).unwrap_or(got.len().min(expected.len()));
        panic!("{what}: {} bytes, expected {}; first difference at byte {first}", got.len(), expected.len());
    }
}

/// One member of a gzip file as found by walking its size subfields.
#[derive(Clone, Copy, Debug)]
pub struct Member {
    pub offset: usize,
    pub len: usize,
}

/// Walks a peerpath ('PP') or BGZF ('BC') file by the declared member
/// sizes, checking the layout the README documents.
pub fn members(data: &[u8]) -> Vec<Member> {
    let mut v = Vec::new();
    let mut pos = 0;
    while pos < data.len() {
        let m = &data[pos..];
        assert!(m.len() >= 18 && m[0] == 0x1f && m[1] == 0x8b && m[2] == 8 && m[3] & 4 != 0, "member at {pos} is not a sized member");
        let len = match &m[12..14] {
            b"PP" => u32::from_le_bytes(m[16..20].try_into().unwrap()) as usize,
            b"BC" => u16::from_le_bytes(m[16..18].try_into().unwrap()) as usize + 1,
            other => panic!("member at {pos}: unknown first subfield {other:?}"),
        };
        v.push(Member { offset: pos, len });
        pos += len;
    }
    assert_eq!(pos, data.len(), "members do not tile the file");
    v
}

/// Compresses `data` with peerpath (extra args appended) and returns the
/// compressed bytes; leaves `name` and `name.gz` in `dir`.
pub fn compress_bytes(dir: &Path, name: &str, data: &[u8], extra: &[&str]) -> Vec<u8> {
    let src = dir.join(name);
    std::fs::write(&src, data).expect("write source");
    let gz = dir.join(format!("{name}.gz"));
    let mut a = args!["compress", &src, "-o", &gz, "-q", "-T", "2"];
    a.extend(extra.iter().map(OsString::from));
    run(&mut pp(a)).ok();
    std::fs::read(&gz).expect("read the compressed file")
}

/// Standard gzip header CRC-16 (the low 16 bits of the CRC-32).
pub fn crc32(data: &[u8]) -> u32 {
    let mut crc = 0xffff_ffffu32;
    for &b in data {
        crc ^= b as u32;
        for _ in 0..8 {
            crc = if crc & 1 != 0 { (crc >> 1) ^ 0xedb8_8320 } else { crc >> 1 };
        }
    }
    !crc
}

/// Mounts a small tmpfs on a fresh directory; unmounted on drop, whatever
/// happens in the test. None (with the reason printed) where mounting is
/// not possible (not root, no CAP_SYS_ADMIN, no `mount`).
pub struct TmpfsMount {
    pub dir: PathBuf,
    _parent: tempfile::TempDir,
}

impl TmpfsMount {
    pub fn new(test: &str, size: &str) -> Option<TmpfsMount> {
        Self::mount(test, "tmpfs", &format!("size={size}"))
    }

    /// Mounts a memory file system of type `fstype` ("tmpfs", "ramfs").
    pub fn mount(test: &str, fstype: &str, options: &str) -> Option<TmpfsMount> {
        let parent = scratch();
        if !running_as_root(parent.path()) {
            eprintln!("SKIPPED {test}: mounting a {fstype} needs root");
            return None;
        }
        if tool("mount").is_none() || tool("umount").is_none() {
            eprintln!("SKIPPED {test}: `mount`/`umount` not installed");
            return None;
        }
        let dir = parent.path().join("small-fs");
        std::fs::create_dir(&dir).expect("create the mount point");
        let out = run(Command::new("mount").args(["-t", fstype, "-o", options, fstype]).arg(&dir));
        if !out.status.success() {
            eprintln!("SKIPPED {test}: cannot mount a {fstype} here: {}", out.stderr.trim());
            return None;
        }
        Some(TmpfsMount { dir, _parent: parent })
    }
}

impl Drop for TmpfsMount {
    fn drop(&mut self) {
        let ok = Command::new("umount").arg(&self.dir).status().map(|s| s.success()).unwrap_or(false);
        if !ok {
            // Something still holds it (a child that was killed late): detach it.
            let _ = Command::new("umount").arg("-l").arg(&self.dir).status();
        }
    }
}

/// A loop device over an image file, detached however the test ends.
pub struct Loop(pub String);

impl Loop {
    /// Attaches `image`; None (with the reason printed) where there is no `losetup` or no
    /// loop device to be had (not root, a container).
    pub fn attach(test: &str, image: &Path) -> Option<Loop> {
        tools_or_skip(test, &["losetup"])?;
        let attached = Command::new("losetup").args(["-f", "--show"]).arg(image).output().unwrap();
        if !attached.status.success() {
            eprintln!("SKIPPED {test}: no loop device here ({})", String::from_utf8_lossy(&attached.stderr).trim());
            return None;
        }
        Some(Loop(String::from_utf8_lossy(&attached.stdout).trim().to_string()))
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = Command::new("losetup").args(["-d", &self.0]).status();
    }
}

/// Every regular file under `root`, at any depth (symbolic links not followed).
pub fn walk(root: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for e in std::fs::read_dir(root).unwrap() {
        let (p, t) = { let e = e.unwrap(); (e.path(), e.file_type().unwrap()) };
        if t.is_dir() {
            files.extend(walk(&p));
        } else if t.is_file() {
            files.push(p);
        }
    }
    files
}

/// Every regular file under `root` with its bytes, sorted: to check that a command changed nothing.
pub fn snapshot(root: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut v: Vec<(PathBuf, Vec<u8>)> = walk(root).into_iter().map(|p| {
        let b = std::fs::read(&p).unwrap();
        (p, b)
    }).collect();
    v.sort();
    v
}

/// From a device pass's report: the bytes this process copied to or from
/// the device's memory, and the payload bytes the kernel and the device
/// moved (`device_job::host_copies`).
pub fn host_copies(report: &str) -> (u64, u64) {
    let (_, rest) = report.split_once("bytes this process copied to or from the device's memory: ").unwrap_or_else(|| panic!("no host copies in: {report}"));
    let copied = rest.split(' ').next().unwrap().parse().unwrap();
    let payload = rest.split_once("; the ").unwrap().1.split(' ').next().unwrap().parse().unwrap();
    (copied, payload)
}

/// A device pass's report says, measured, that this process copied
/// metadata only to or from the device's memory: at most a page and a
/// hundredth of the payload (headers, indices, keys, counters).
pub fn assert_metadata_only(report: &str) {
    let (copied, payload) = host_copies(report);
    assert!(copied <= 4096 + payload / 100, "{copied} bytes copied by this process for {payload} of payload: {report}");
}

/// `peerpath` run where /dev/shm is a 1 MiB tmpfs (too small for any device job's memory) and,
/// with `tmpfs`, the temporary directory `tmp` a tmpfs of that size: mounted in a mount
/// namespace of its own (`unshare -rm`: with a user namespace, so no root is needed where the
/// kernel gives users one); the machine's /dev/shm is untouched. None, the reason printed,
/// where that cannot be done.
pub fn with_small_shm(test: &str, tmp: &Path, tmpfs: Option<&str>, a: Vec<std::ffi::OsString>) -> Option<std::process::Command> {
    const SCRIPT: &str = r#"mount -t tmpfs -o size=1m tmpfs /dev/shm || exit 97; if [ -n "$PP_TMPFS" ]; then mount -t tmpfs -o size="$PP_TMPFS" tmpfs "$TMPDIR" || exit 97; fi; exec "$@""#;
    let probe = tool("unshare").map(|u| run(std::process::Command::new(u).args(["-rm", "sh", "-c", SCRIPT, "sh", "true"])));
    match probe {
        None => eprintln!("SKIPPED {test}: `unshare` is not installed"),
        Some(o) if !o.status.success() => eprintln!("SKIPPED {test}: no mount namespace with a small /dev/shm here (unshare -rm): {}", o.stderr.trim()),
        Some(_) => {
            let mut c = std::process::Command::new("unshare");
            c.args(["-rm", "sh", "-c", SCRIPT, "sh", bin()]).args(a).env("TMPDIR", tmp).env("PP_TMPFS", tmpfs.unwrap_or("")).env_remove("PEERPATH_DAEMON");
            return Some(c);
        }
    }
    None
}

/// Runs `job` while a thread writes `new` and `old` (the bytes there before) in turn at byte
/// `at` of the file `src`, moving its modification time to a new value each time (so that a
/// coarse clock cannot hide a write; `attempt` keeps different runs' times apart), from before
/// the job starts until it ends; the file holds its old bytes there again after. What the job
/// gave, and how many writes were made.
pub fn while_rewritten<T>(src: &Path, (old, new, at): (&[u8], &[u8], u64), attempt: u64, job: impl FnOnce() -> T) -> (T, u64) {
    use std::os::unix::fs::FileExt;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    let (stop, writes) = (AtomicBool::new(false), AtomicU64::new(0));
    let got = std::thread::scope(|sc| {
        sc.spawn(|| {
            let f = std::fs::OpenOptions::new().write(true).open(src).unwrap();
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                f.write_all_at(if i.is_multiple_of(2) { new } else { old }, at).unwrap();
                f.set_modified(std::time::UNIX_EPOCH + Duration::from_secs(1_000_000 + 1000 * attempt + i)).unwrap();
                i += 1;
                writes.store(i, Ordering::Relaxed);
            }
            // The last write done: the file holds one version whole again.
            if !i.is_multiple_of(2) {
                f.write_all_at(old, at).unwrap();
            }
        });
        while writes.load(Ordering::Relaxed) < 2 {
            std::thread::yield_now();
        }
        let got = job();
        stop.store(true, Ordering::Relaxed);
        got
    });
    (got, writes.load(std::sync::atomic::Ordering::Relaxed))
}
