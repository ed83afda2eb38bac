//! Storage that fails for real (root only; each test says plainly when it skips):
//! a source whose reads fail with EIO part way through (a file system in this
//! process, over /dev/fuse), a block device whose writes fail with EIO (a loop
//! device over that file system), and a target file system that fills (a 2 MiB tmpfs).

mod common;

use common::*;
use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// A one-file FUSE file system mounted at `dir`: `dir/f` holds `data`, and a
/// read or write that touches `bad` fails with EIO (other writes are dropped). Unmounted (lazily) when dropped.
struct EioFs {
    dir: PathBuf,
}

fn attr(ino: u64, len: u64) -> Vec<u8> {
    let (mode, nlink): (u32, u32) = if ino == 1 { (0o40755, 2) } else { (0o100644, 1) };
    let mut a = Vec::with_capacity(88);
    for v in [ino, len, len.div_ceil(512), 1, 1, 1] {
        a.extend_from_slice(&v.to_le_bytes());
    }
    for v in [0u32, 0, 0, mode, nlink, 0, 0, 0, 4096, 0] {
        a.extend_from_slice(&v.to_le_bytes());
    }
    a
}

fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

fn le64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// Answers the kernel's requests until the file system is unmounted.
fn serve(fuse: OwnedFd, data: Vec<u8>, bad: std::ops::Range<u64>) {
    let mut buf = vec![0u8; (1 << 20) + 8192];
    let len = data.len() as u64;
    loop {
        // SAFETY: `buf` is a live buffer of its length; the descriptor is ours.
        let n = unsafe { libc::read(fuse.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if n < 0 {
            match std::io::Error::last_os_error().raw_os_error() {
                Some(libc::EINTR | libc::ENOENT | libc::EAGAIN) => continue,
                _ => return, // ENODEV: unmounted
            }
        }
        let (op, unique, node) = (le32(&buf, 4), le64(&buf, 8), le64(&buf, 16));
        let body = &buf[40..n as usize];
        let (error, out): (i32, Vec<u8>) = match op {
            26 => {
                // INIT: protocol 7.31, reads of up to 1 MiB.
                let mut o = Vec::new();
                for v in [7u32, 31, le32(body, 8), 0] {
                    o.extend_from_slice(&v.to_le_bytes());
                }
                o.extend_from_slice(&16u16.to_le_bytes());
                o.extend_from_slice(&12u16.to_le_bytes());
                o.extend_from_slice(&(1u32 << 20).to_le_bytes());
                o.extend_from_slice(&1u32.to_le_bytes());
                o.extend_from_slice(&256u16.to_le_bytes());
                o.resize(64, 0);
                (0, o)
            }
            1 if node == 1 && body.starts_with(b"f\0") => {
                let mut o = Vec::new();
                for v in [2u64, 0, 1, 1] {
                    o.extend_from_slice(&v.to_le_bytes());
                }
                o.extend_from_slice(&[0; 8]);
                o.extend(attr(2, len));
                (0, o)
            }
            1 => (-libc::ENOENT, Vec::new()),
            3 => {
                let mut o = 1u64.to_le_bytes().to_vec();
                o.extend_from_slice(&[0; 8]);
                o.extend(attr(node, len));
                (0, o)
            }
            14 | 27 => (0, vec![0; 16]),
            15 => {
                let (off, size) = (le64(body, 8), le32(body, 16) as u64);
                let end = (off + size).min(len);
                if off < bad.end && end > bad.start {
                    (-libc::EIO, Vec::new())
                } else {
                    (0, data[off.min(end) as usize..end as usize].to_vec())
                }
            }
            16 => {
                // WRITE: taken (and dropped) where it does not touch `bad`.
                let (off, size) = (le64(body, 8), le32(body, 16));
                if off < bad.end && off + size as u64 > bad.start {
                    (-libc::EIO, Vec::new())
                } else {
                    (0, [size.to_le_bytes(), [0; 4]].concat())
                }
            }
            4 => {
                let mut o = 1u64.to_le_bytes().to_vec();
                o.extend_from_slice(&[0; 8]);
                o.extend(attr(node, len));
                (0, o)
            }
            28 | 18 | 29 | 25 | 34 | 20 => (0, Vec::new()),
            17 => (0, [vec![0; 40], 4096u32.to_le_bytes().to_vec(), 255u32.to_le_bytes().to_vec(), vec![0; 32]].concat()),
            2 | 36 | 42 => continue, // FORGET, INTERRUPT, BATCH_FORGET: no answer
            _ => (-libc::ENOSYS, Vec::new()),
        };
        let mut reply = ((16 + out.len()) as u32).to_le_bytes().to_vec();
        reply.extend_from_slice(&error.to_le_bytes());
        reply.extend_from_slice(&unique.to_le_bytes());
        reply.extend(out);
        // SAFETY: `reply` is a live buffer of its length; the descriptor is ours.
        unsafe { libc::write(fuse.as_raw_fd(), reply.as_ptr().cast(), reply.len()) };
    }
}

impl EioFs {
    /// None (said) where this process cannot mount one (not root, no /dev/fuse).
    fn mount(dir: &Path, data: Vec<u8>, bad: std::ops::Range<u64>, test: &str) -> Option<EioFs> {
        let Ok(fuse) = std::fs::OpenOptions::new().read(true).write(true).open("/dev/fuse") else {
            eprintln!("SKIPPED {test}: /dev/fuse cannot be opened");
            return None;
        };
        std::fs::create_dir(dir).unwrap();
        let fuse = OwnedFd::from(fuse);
        let target = CString::new(dir.as_os_str().as_bytes()).unwrap();
        let opts = CString::new(format!("fd={},rootmode=40000,user_id=0,group_id=0", fuse.as_raw_fd())).unwrap();
        // SAFETY: every pointer is a live NUL-terminated string.
        let r = unsafe { libc::mount(c"eiofs".as_ptr(), target.as_ptr(), c"fuse".as_ptr(), 0, opts.as_ptr().cast()) };
        if r != 0 {
            eprintln!("SKIPPED {test}: cannot mount a FUSE file system: {}", std::io::Error::last_os_error());
            return None;
        }
        std::thread::spawn(move || serve(fuse, data, bad));
        Some(EioFs { dir: dir.to_path_buf() })
    }
}

impl Drop for EioFs {
    fn drop(&mut self) {
        let target = CString::new(self.dir.as_os_str().as_bytes()).unwrap();
        // SAFETY: a live NUL-terminated string.
        unsafe { libc::umount2(target.as_ptr(), libc::MNT_DETACH) };
    }
}

/// A read that fails with EIO part way through a 1 MiB read (the kernel
/// hands back the bytes before the bad ones, a short read) is said as the
/// read error it is, with its offset: not as a source that shrank, which the
/// file did not.
#[test]
fn a_source_whose_read_fails_part_way_is_a_read_error_not_a_shrunk_source() {
    let dir = scratch();
    if !running_as_root(dir.path()) {
        eprintln!("SKIPPED a_source_whose_read_fails_part_way: not root");
        return;
    }
    let data = random_bytes(8 << 20, 7);
    let bad = (4 << 20) + (512 << 10);
    let Some(fs) = EioFs::mount(&dir.path().join("fuse"), data, bad..bad + 4096, "a_source_whose_read_fails_part_way") else { return };
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    for engine in ["cpu", "emulated"] {
        let o = run(&mut pp(args!["compress", fs.dir.join("f"), "-o", out.join("f.gz"), "--engine", engine, "--block-size", "1M"]))
            .fails(12, &["fuse/f", "a read error at offset"]);
        assert!(!o.stderr.contains("shrank"), "{engine}: an EIO said as a shrunk source:\n{}", o.describe());
        assert_dir_holds(&out, &[]);
    }
}

/// A target file system that fills while `--force` replaces a target: exit
/// 11 naming it and the reason, the old target intact, nothing else left.
#[test]
fn a_full_file_system_keeps_the_target_that_force_would_replace() {
    let dir = scratch();
    if !running_as_root(dir.path()) {
        eprintln!("SKIPPED a_full_file_system_keeps_the_target: not root");
        return;
    }
    let small = dir.path().join("small");
    std::fs::create_dir(&small).unwrap();
    let target = CString::new(small.as_os_str().as_bytes()).unwrap();
    // SAFETY: every pointer is a live NUL-terminated string.
    if unsafe { libc::mount(c"tmpfs".as_ptr(), target.as_ptr(), c"tmpfs".as_ptr(), 0, c"size=2m".as_ptr().cast()) } != 0 {
        eprintln!("SKIPPED a_full_file_system_keeps_the_target: cannot mount a tmpfs: {}", std::io::Error::last_os_error());
        return;
    }
    struct Unmount(CString);
    impl Drop for Unmount {
        fn drop(&mut self) {
            // SAFETY: a live NUL-terminated string.
            unsafe { libc::umount2(self.0.as_ptr(), libc::MNT_DETACH) };
        }
    }
    let _unmount = Unmount(target);
    let src = dir.path().join("src");
    let data = random_bytes(6 << 20, 11);
    std::fs::write(&src, &data).unwrap();
    std::fs::write(small.join("src.gz"), b"old").unwrap();
    for engine in ["cpu", "emulated"] {
        run(&mut pp(args!["compress", &src, "-o", small.join("src.gz"), "--force", "--engine", engine]))
            .fails(11, &["small/src.gz", "No space left on device"]);
        assert_file_eq(&small.join("src.gz"), b"old", "the target --force would have replaced");
        assert_dir_holds(&small, &["src.gz"]);
        assert_file_eq(&src, &data, "the source");
    }
}

/// A read that fails with EIO (at its first byte) says where in the source it
/// failed, in every command that reads by offset: compress (the CPU and the
/// emulated devices), decompress and verify. Nothing is kept.
#[test]
fn a_read_error_says_its_offset_in_the_source() {
    let dir = scratch();
    if !running_as_root(dir.path()) {
        eprintln!("SKIPPED a_read_error_says_its_offset: not root");
        return;
    }
    let data = random_bytes(12 << 20, 5);
    let archive = compress_bytes(dir.path(), "a", &data, &[]);
    let bad = 4u64 << 20;
    let Some(plain) = EioFs::mount(&dir.path().join("plain"), data, bad..bad + 4096, "a_read_error_says_its_offset") else { return };
    let Some(packed) = EioFs::mount(&dir.path().join("packed"), archive, bad..bad + 4096, "a_read_error_says_its_offset") else { return };
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let needles = ["Input/output error", "at offset 4194304"];
    for engine in ["cpu", "emulated"] {
        run(&mut pp(args!["compress", plain.dir.join("f"), "-o", out.join("f.gz"), "--engine", engine])).fails(12, &[&["plain/f"], &needles[..]].concat());
    }
    run(&mut pp(args!["decompress", packed.dir.join("f"), "-o", out.join("f")])).fails(12, &[&["packed/f"], &needles[..]].concat());
    assert_dir_holds(&out, &[]);
    let o = run(&mut pp(args!["verify", packed.dir.join("f")]));
    assert_eq!(o.code(), Some(12), "{}", o.describe());
    for n in needles {
        assert!(o.stderr.contains(n), "verify's error lacks {n:?}:\n{}", o.describe());
    }
}

/// Standard output that is a block device whose writes fail at writeback
/// (EIO once the page cache writes them, after every write() succeeded): the
/// job syncs it and fails, exit 11, not a success with the data lost.
#[test]
fn standard_output_on_a_block_device_that_fails_writeback_fails_the_job() {
    let dir = scratch();
    if !running_as_root(dir.path()) {
        eprintln!("SKIPPED standard_output_on_a_block_device: not root");
        return;
    }
    let Some(tools) = tools_or_skip("standard_output_on_a_block_device", &["losetup"]) else { return };
    let data = random_bytes(12 << 20, 3);
    let archive = dir.path().join("a.gz");
    std::fs::write(&archive, compress_bytes(dir.path(), "a", &data, &[])).unwrap();
    let bad = 8u64 << 20;
    let Some(fs) = EioFs::mount(&dir.path().join("dev"), vec![0; 16 << 20], bad..bad + 4096, "standard_output_on_a_block_device") else { return };
    let attach = std::process::Command::new(&tools[0]).args([os("-f"), os("--show"), os(fs.dir.join("f"))]).output().unwrap();
    if !attach.status.success() {
        eprintln!("SKIPPED standard_output_on_a_block_device: losetup: {}", String::from_utf8_lossy(&attach.stderr).trim());
        return;
    }
    let loop_dev = PathBuf::from(String::from_utf8(attach.stdout).unwrap().trim());
    struct Detach(PathBuf, PathBuf);
    impl Drop for Detach {
        fn drop(&mut self) {
            let _ = std::process::Command::new(&self.0).arg("-d").arg(&self.1).status();
        }
    }
    let _detach = Detach(tools[0].clone(), loop_dev.clone());
    let stdout = std::fs::OpenOptions::new().write(true).open(&loop_dev).unwrap();
    let mut cmd = pp(args!["decompress", &archive, "-o", "-"]);
    let what = describe_cmd(&cmd);
    let mut child = cmd.stdout(stdout).stderr(std::process::Stdio::piped()).spawn().unwrap();
    let err = reader_thread(child.stderr.take().unwrap());
    let status = wait_deadline(&mut child, HANG_DEADLINE, &what);
    let stderr = String::from_utf8_lossy(&err.join().unwrap()).into_owned();
    assert_eq!(status.code(), Some(11), "a lost write said as success:\n{stderr}");
    assert!(stderr.contains("cannot write -: Input/output error"), "{stderr}");
}
