//! `peerpath bench-io`: a tiny sweep through the real binary.

mod common;

use common::*;

#[test]
fn tiny_sweep_reports_consistent_numbers_and_an_svg() {
    let dir = scratch();
    let file = dir.path().join("bench.dat");
    let svg = dir.path().join("sweep.svg");
    let out = run(&mut pp(args![
        "bench-io", "--file", &file, "--size", "512K", "--sweep-bs", "4K..64K", "--sweep-qd", "1,4",
        "--runtime-s", "0.2", "--json", "--svg", &svg
    ]))
    .ok();
    let v = out.json();
    assert_eq!(v["provenance_text"], "measured on this machine");
    assert_eq!(v["memory_domain"]["kind"], "host");
    let points = v["points"].as_array().unwrap();
    // 5 sizes x 2 depths x 2 directions + random read and write.
    assert_eq!(points.len(), 5 * 2 * 2 + 2);
    for p in points {
        let (ops, bytes, bs) = (p["ops"].as_u64().unwrap(), p["bytes"].as_u64().unwrap(), p["block_size_bytes"].as_u64().unwrap());
        assert!(ops > 0);
        assert_eq!(bytes, ops * bs, "{p}");
        let l = &p["latency"];
        let f = |k: &str| l[k].as_f64().unwrap();
        assert!(f("p50_us") <= f("p99_us") && f("p99_us") <= f("p99_9_us") && f("p99_9_us") <= f("max_us"), "{p}");
        assert!(p["throughput_gb_per_s"].as_f64().unwrap() > 0.0);
    }
    let picture = std::fs::read_to_string(&svg).unwrap();
    assert!(picture.starts_with("<svg") && picture.contains("seq read") && picture.contains("seq write"));
}

#[test]
fn shm_memory_and_text_output() {
    let dir = scratch();
    let file = dir.path().join("bench.dat");
    let out = run(&mut pp(args![
        "bench-io", "--file", &file, "--size", "256K", "--sweep-bs", "16K", "--sweep-qd", "2", "--rw", "read",
        "--random", "skip", "--memory", "shm", "--runtime-s", "0.1"
    ]))
    .ok();
    let text = out.stdout_str();
    // The figures are the emulation's, and the first line says so (it read "measured on this machine").
    assert!(text.starts_with("peerpath bench-io — measured on this machine with emulated device memory (not hardware device memory)\n"), "{text}");
    assert!(text.contains("emulated device memory of shm"), "{text}");
    assert!(text.contains("seq read") && !text.contains("seq write") && !text.contains("rand"), "{text}");
}

#[test]
fn p2p_memory_that_is_absent_exits_14_and_bad_flags_exit_2() {
    let dir = scratch();
    let file = dir.path().join("bench.dat");
    // A function there that has no P2P memory: 14.
    let sysfs = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../peerpath-topo/fixtures/qemu-switch-cmb/sys");
    let out = run(&mut pp(args![
        "bench-io", "--file", &file, "--size", "64K", "--sweep-bs", "4K", "--sweep-qd", "1", "--memory", "p2p:0000:00:00.0",
        "--sysfs", &sysfs
    ]));
    out.fails(14, &["not a P2P memory provider", "peerpath probe"]);
    // A --sysfs that is no sysfs root is that, said (it read "not a P2P memory provider").
    let out = run(&mut pp(args![
        "bench-io", "--file", &file, "--size", "64K", "--sweep-bs", "4K", "--sweep-qd", "1", "--memory", "p2p:0000:7f:00.0",
        "--sysfs", dir.path()
    ]));
    out.fails(13, &["--sysfs", "is not a sysfs root"]);
    let out = run(&mut pp(args!["bench-io", "--file", &file, "--sweep-bs", "1000"]));
    assert_eq!(out.code(), Some(2), "{}", out.stderr);
    let out = run(&mut pp(args!["bench-io", "--file", &file, "--memory", "gpu"]));
    assert_eq!(out.code(), Some(2), "{}", out.stderr);
    let out = run(&mut pp(args!["bench-io", "--file", &file, "--size", "6K"]));
    out.fails(2, &["multiple of 4096"]);
}

#[test]
fn random_offsets_come_from_a_fresh_seed_unless_one_is_given() {
    let dir = scratch();
    let file = dir.path().join("bench.dat");
    let seed_of = |extra: &[&str]| {
        let mut a = args!["bench-io", "--file", &file, "--size", "256K", "--random", "only", "--rw", "read", "--runtime-s", "0.05", "--json"];
        a.extend(extra.iter().map(|s| s.into()));
        run(&mut pp(a)).ok().json()["seed"].as_u64().expect("the report carries its seed")
    };
    assert_eq!(seed_of(&["--seed", "7"]), 7);
    // Two runs without --seed draw different offsets (as fio's randrepeat=0), and say which.
    assert_ne!(seed_of(&[]), seed_of(&[]));
    let text = run(&mut pp(args!["bench-io", "--file", &file, "--size", "256K", "--random", "only", "--rw", "read", "--runtime-s", "0.05", "--seed", "99"]))
        .ok()
        .stdout_str();
    assert!(text.contains("seed 99 (--seed 99 repeats them)"), "{text}");
}

/// A sweep with no point is refused before any file is made; a file the
/// sweep made is removed when it fails (a full disk), an empty one it was given emptied again; shm memory that its
/// directory cannot hold is said at once (exit 11), not as a bad address.
#[test]
fn a_failed_sweep_leaves_no_file_it_made_and_an_empty_sweep_is_refused() {
    let dir = scratch();
    let file = dir.path().join("bench.dat");
    run(&mut pp(args!["bench-io", "--file", &file, "--size", "64K", "--sweep-bs", "1M", "--random", "skip"])).fails(2, &["nothing to measure", "larger than the 65536-byte file"]);
    assert!(!file.exists());
    let Some(fs) = TmpfsMount::new("a_failed_sweep_leaves_no_file_it_made", "1m") else { return };
    let new = fs.dir.join("new.dat");
    run(&mut pp(args!["bench-io", "--file", &new, "--size", "4M", "--runtime-s", "0.1"])).fails(11, &["No space left"]);
    assert_dir_holds(&fs.dir, &[]);
    // A file on a memory file system measures memory, and says so; so do shm buffers (or not).
    let o = run(&mut pp(args!["bench-io", "--file", fs.dir.join("m.dat"), "--size", "256K", "--sweep-bs", "64K", "--sweep-qd", "1", "--random", "skip", "--runtime-s", "0.05", "--memory", "shm", "--shm-dir", &fs.dir])).ok();
    assert!(o.stdout_str().contains("is on a memory file system (tmpfs or ramfs)") && o.stdout_str().contains("host pages of a memory file system"), "{}", o.stdout_str());
    std::fs::remove_file(fs.dir.join("m.dat")).unwrap();
    let not_memory = !std::process::Command::new("stat").args(["-f", "-c", "%T"]).arg(dir.path()).output().is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("tmpfs"));
    if not_memory {
        let o = run(&mut pp(args!["bench-io", "--file", &file, "--size", "256K", "--sweep-bs", "64K", "--sweep-qd", "1", "--random", "skip", "--runtime-s", "0.05", "--memory", "shm", "--shm-dir", dir.path()])).ok();
        assert!(o.stdout_str().contains("page-cache pages of a file in") && !o.stdout_str().contains("memory file system (tmpfs"), "{}", o.stdout_str());
        std::fs::remove_file(&file).unwrap();
    }
    // An empty file it was given, laid out until the disk filled: empty again, the room given
    // back (ext4's fallocate keeps what it allocated before ENOSPC, and the size; tmpfs's not).
    if let Some(ext4) = Ext4Mount::new("a_failed_sweep_empties_an_empty_file_again", 16) {
        let given = ext4.dir.join("empty.dat");
        std::fs::write(&given, b"").unwrap();
        run(&mut pp(args!["bench-io", "--file", &given, "--size", "64M", "--runtime-s", "0.1"])).fails(11, &["No space left"]);
        assert_eq!(std::fs::metadata(&given).unwrap().len(), 0, "the empty file as it was");
    }
    std::fs::write(fs.dir.join("fill"), vec![0u8; 1 << 20]).unwrap_or(()); // as much as fits
    let out = run(&mut pp(args![
        "bench-io", "--file", &file, "--size", "4M", "--sweep-bs", "1M", "--sweep-qd", "8", "--random", "skip", "--memory", "shm", "--shm-dir", &fs.dir, "--runtime-s", "0.1"
    ]));
    out.fails(11, &["make resident", "file system full"]);
    assert_dir_holds(&fs.dir, &["fill"]);
    // Buffers past half the machine's memory are refused before anything is made (they were
    // allocated and touched, and a panic past memory): 1024 requests of 16 MiB in flight, in a
    // 16 GiB file that holds as many blocks (a smaller file has fewer in flight).
    let memory_kib: u64 = std::fs::read_to_string("/proc/meminfo").unwrap().lines().find_map(|l| l.strip_prefix("MemTotal:")).and_then(|v| v.trim().trim_end_matches(" kB").parse().ok()).unwrap();
    if memory_kib < 32 << 20 {
        run(&mut pp(args!["bench-io", "--file", &file, "--size", "16G", "--sweep-bs", "16M", "--sweep-qd", "1024", "--rw", "read", "--random", "skip"])).fails(2, &["of buffers, more than half this machine's"]);
        assert!(!file.exists());
    } else {
        eprintln!("SKIPPED (one check): 16 GiB of buffers is less than half this machine's memory");
    }
    // Interrupted while it lays a new file out: the file goes (a part of it was refused by the
    // next sweep, "holds fewer bytes than asked for").
    let mut c = pp(args!["bench-io", "--file", &file, "--size", "2G", "--random", "skip", "--runtime-s", "0.1"]);
    let mut child = signals_at_default(&mut c).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null()).spawn().unwrap();
    let t = std::time::Instant::now();
    while std::fs::metadata(&file).map_or(0, |m| m.len()) == 0 && t.elapsed() < HANG_DEADLINE {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    // SAFETY: kill sends SIGINT to the child we started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = wait_deadline(&mut child, HANG_DEADLINE, "bench-io");
    assert_eq!(std::os::unix::process::ExitStatusExt::signal(&status).or(status.code().map(|c| c - 128)), Some(libc::SIGINT), "{status:?}");
    assert!(!file.exists(), "a file it made and did not finish is removed");
}

/// The picture is never the file measured (it replaced it, with --rw read too), and a place it
/// cannot be written is said before the sweep (the sweep's figures were lost after it); an
/// existing empty file is laid out with --rw read as a new one is (it failed, "Bad file
/// descriptor"); a file under one block is not told to use --size 0.
#[test]
fn the_picture_never_replaces_the_file_and_an_empty_file_is_laid_out() {
    let dir = scratch();
    let d = dir.path();
    let file = d.join("data.bin");
    let data = random_bytes(1 << 20, 5);
    std::fs::write(&file, &data).unwrap();
    let quick = |extra: &[&std::ffi::OsStr]| {
        let mut a = args!["bench-io", "--file", &file, "--size", "1M", "--sweep-bs", "4K", "--sweep-qd", "1", "--rw", "read", "--random", "skip", "--runtime-s", "0.05"];
        a.extend(extra.iter().map(|x| x.to_os_string()));
        run(&mut pp(a))
    };
    let mut c = pp(["bench-io"]);
    c.current_dir(d).args(["--file", "data.bin", "--size", "1M", "--sweep-bs", "4K", "--sweep-qd", "1", "--rw", "read", "--random", "skip", "--runtime-s", "0.05", "--svg", "./data.bin"]);
    run(&mut c).fails(5, &["is the file measured"]);
    assert_eq!(std::fs::read(&file).unwrap(), data, "the file measured is as it was");
    let o = quick(&[std::ffi::OsStr::new("--svg"), d.join("nowhere/x.svg").as_os_str()]).fails(11, &["nowhere/x.svg"]);
    assert!(o.stdout.is_empty(), "refused before the sweep");
    let empty = d.join("empty.bin");
    std::fs::write(&empty, b"").unwrap();
    run(&mut pp(args!["bench-io", "--file", &empty, "--size", "1M", "--sweep-bs", "4K", "--sweep-qd", "1", "--rw", "read", "--random", "skip", "--runtime-s", "0.05"])).ok();
    assert_eq!(std::fs::metadata(&empty).unwrap().len(), 1 << 20);
    std::fs::write(d.join("small.bin"), vec![1u8; 1682]).unwrap();
    run(&mut pp(args!["bench-io", "--file", d.join("small.bin"), "--size", "1M"])).fails(2, &["smaller than one 4 KiB block: give a new file"]);
}

/// A file that holds data is only read unless writes are asked for (`--rw write|both`): its
/// bytes were overwritten by the default sweep, without a word.
#[test]
fn a_file_that_holds_data_is_only_read_unless_writes_are_asked_for() {
    let dir = scratch();
    let file = dir.path().join("data.bin");
    let data = random_bytes(1 << 20, 5);
    std::fs::write(&file, &data).unwrap();
    let sweep = args!["bench-io", "--file", &file, "--size", "1M", "--sweep-bs", "64K", "--sweep-qd", "1", "--runtime-s", "0.05", "--json"];
    let v = run(&mut pp(sweep.clone())).ok().json();
    let patterns: Vec<String> = v["points"].as_array().unwrap().iter().map(|p| p["pattern"].to_string()).collect();
    assert!(!patterns.is_empty() && patterns.iter().all(|p| p.contains("read")), "{patterns:?}");
    assert_file_eq(&file, &data, "the file's data after a sweep that did not ask to write");
    let mut both = sweep;
    both.extend(args!["--rw", "both"]);
    let v = run(&mut pp(both)).ok().json();
    assert!(v["points"].as_array().unwrap().iter().any(|p| p["pattern"].to_string().contains("write")));
}

/// Writes asked for over a file that holds data overwrite it, as documented, and the report says
/// so (it said nothing); a file the sweep laid out itself has no such note.
#[test]
fn writes_over_a_file_that_held_data_are_said() {
    let dir = scratch();
    let file = dir.path().join("data.bin");
    std::fs::write(&file, random_bytes(256 << 10, 6)).unwrap();
    let sweep = |f: &std::path::Path| run(&mut pp(args!["bench-io", "--file", f, "--size", "256K", "--sweep-bs", "64K", "--sweep-qd", "1", "--rw", "write", "--random", "skip", "--runtime-s", "0.05"])).ok().stdout_str();
    let text = sweep(&file);
    assert!(text.contains(&format!("note          {} held data: the write points overwrote its first 256K (writes were asked for)", file.display())), "{text}");
    let text = sweep(&dir.path().join("new.bin"));
    assert!(!text.contains("held data"), "{text}");
}

/// A small ext4 in a file, loop-mounted on a fresh directory; unmounted on drop. None (said)
/// where it cannot be made (not root, no mkfs.ext4, no loop devices).
struct Ext4Mount {
    dir: std::path::PathBuf,
    _parent: tempfile::TempDir,
}

impl Ext4Mount {
    fn new(test: &str, mib: u64) -> Option<Ext4Mount> {
        let parent = scratch();
        let (image, dir) = (parent.path().join("fs.img"), parent.path().join("fs"));
        std::fs::File::create(&image).unwrap().set_len(mib << 20).unwrap();
        std::fs::create_dir(&dir).unwrap();
        let made = std::process::Command::new("mkfs.ext4").args(["-q", "-F"]).arg(&image).status().is_ok_and(|s| s.success());
        let mounted = made && std::process::Command::new("mount").args(["-o", "loop"]).arg(&image).arg(&dir).status().is_ok_and(|s| s.success());
        if !mounted {
            eprintln!("SKIPPED {test}: cannot make and loop-mount an ext4 here (needs root, mkfs.ext4 and a loop device)");
            return None;
        }
        Some(Ext4Mount { dir, _parent: parent })
    }
}

impl Drop for Ext4Mount {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.dir).status();
    }
}

/// A queue deeper than the file has blocks made a buffer for every request, in flight or not:
/// queue depth 128 x 1 MiB against a 1 MiB file allocated and touched 128 MiB for one transfer.
/// Only what can be in flight is made (the process's peak memory, and the shm region's size,
/// show it), and the report says the depth was capped and at what.
#[test]
// The child is reaped by wait4 (which alone gives its own peak memory), not by `Child::wait`.
#[allow(clippy::zombie_processes)]
fn a_queue_deeper_than_the_file_is_capped_and_said() {
    let dir = scratch();
    let file = dir.path().join("one-block.dat");
    std::fs::write(&file, random_bytes(1 << 20, 9)).unwrap();
    let sweep = args!["bench-io", "--file", &file, "--size", "1M", "--sweep-bs", "1M", "--sweep-qd", "1,128", "--rw", "read", "--random", "skip", "--runtime-s", "0.1"];
    // Its peak resident memory, this child's alone (wait4: the tests' other children do not count).
    let mut child = pp(sweep.iter().chain(&args!["--json"])).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut stdout, &mut v).map(|_| v)
    });
    let (mut status, mut usage) = (0, std::mem::MaybeUninit::<libc::rusage>::zeroed());
    // SAFETY: wait4 on the child this test started (not waited for elsewhere); status and usage
    // are this frame's, written by the kernel.
    assert_eq!(unsafe { libc::wait4(child.id() as i32, &mut status, 0, usage.as_mut_ptr()) }, child.id() as i32);
    // SAFETY: wait4 succeeded, so it filled the rusage (zeroed before, too).
    let peak_kib = unsafe { usage.assume_init() }.ru_maxrss;
    let v: serde_json::Value = serde_json::from_slice(&reader.join().unwrap().unwrap()).unwrap();
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "bench-io failed: {v}");
    let points = v["points"].as_array().unwrap();
    assert_eq!(points.iter().map(|p| (p["queue_depth"].as_u64().unwrap(), p["queue_depth_in_flight"].as_u64().unwrap())).collect::<Vec<_>>(), [(1, 1), (128, 1)]);
    assert!(v["notes"].as_array().unwrap().iter().any(|n| n.as_str().unwrap().contains("queue depth 128: the 1048576-byte file holds 1 such block, so the queue depth was capped at 1 (qd 128* below: 1 in flight at most, 1 buffer made) and the point's figures come from 1 transfer")), "{v}");
    assert!(peak_kib < 64 << 10, "peak resident memory {peak_kib} KiB: buffers for requests that were never in flight");
    // In a shm region (standing in for device memory): the region is what can be in flight.
    let mut shm = sweep.clone();
    shm.extend(args!["--memory", "shm", "--shm-dir", dir.path()]);
    let text = run(&mut pp(shm)).ok().stdout_str();
    assert!(text.contains("a 1M shm region") && !text.contains("128M"), "{text}");
    assert!(text.lines().any(|l| l.trim_start().starts_with("seq read") && l.split_whitespace().nth(3) == Some("128*")), "the capped point is marked: {text}");
}

/// The time limit a point was given is printed as given: `--runtime-s 0.05` read "at most 0.1 s".
#[test]
fn the_time_limit_per_point_is_printed_as_given() {
    let dir = scratch();
    let file = dir.path().join("bench.dat");
    let out = run(&mut pp(args!["bench-io", "--file", &file, "--size", "64K", "--sweep-bs", "4K", "--sweep-qd", "1", "--random", "skip", "--runtime-s", "0.05"])).ok();
    assert!(out.stdout_str().contains("per point     at most 0.05 s or one pass"), "{}", out.describe());
}

/// A loop device without direct I/O reads its backing file through the page cache: its figures
/// (2.5 GB/s where the disk under it reads 1.4) were printed as measured with no word. The report
/// says so, and a device smaller than --size (the default 1G) is told which --size fits.
#[test]
fn a_loop_device_says_it_measures_its_backing_files_page_cache() {
    let dir = scratch();
    let image = dir.path().join("disk.img");
    std::fs::write(&image, random_bytes(1 << 20, 11)).unwrap();
    let Some(dev) = Loop::attach("a_loop_device_says_it_measures_its_backing_files_page_cache", &image) else { return };
    let o = run(&mut pp(args!["bench-io", "--file", &dev.0, "--size", "1M", "--sweep-bs", "64K", "--sweep-qd", "1", "--random", "skip", "--runtime-s", "0.05"])).ok();
    let text = o.stdout_str();
    assert!(text.contains("(block device, 1M used)") && text.contains(&format!("is a loop device over {}", image.display())), "{text}");
    // losetup's default is no direct I/O; one that gives it says so instead.
    assert!(text.contains("without direct I/O (its loop/dio is 0)") || text.contains("with direct I/O: its figures are those of that file's file system"), "{text}");
    run(&mut pp(args!["bench-io", "--file", &dev.0, "--sweep-bs", "64K", "--random", "skip"])).fails(2, &["less than the 1073741824 asked for (--size): give --size 1048576 or less"]);
}

/// A file system that refuses O_DIRECT (ramfs): the report said the refusal twice (the I/O path
/// line and a note) and that the file was laid out with "O_DIRECT writes"; once, and "buffered".
#[test]
fn a_file_system_without_o_direct_is_said_once_and_laid_out_buffered() {
    let Some(fs) = TmpfsMount::mount("a_file_system_without_o_direct_is_said_once_and_laid_out_buffered", "ramfs", "mode=0755") else { return };
    let file = fs.dir.join("bench.dat");
    let sweep = args!["bench-io", "--file", &file, "--size", "64K", "--sweep-bs", "4K", "--sweep-qd", "1", "--rw", "read", "--random", "skip", "--runtime-s", "0.05"];
    let text = run(&mut pp(sweep.clone())).ok().stdout_str();
    assert_eq!(text.matches("refused O_DIRECT").count(), 1, "{text}");
    assert!(text.contains("I/O path      io_uring (buffered) [the file system refused O_DIRECT") || text.contains("pread/pwrite (buffered) ["), "{text}");
    assert!(text.contains("laid out 64K of the file first (pattern data, buffered writes: O_DIRECT was refused)"), "{text}");
    // The JSON holds it too: in the I/O path and among the notes (bench/io.sh prints those).
    let v = run(&mut pp(sweep.iter().chain(&args!["--json"]))).ok().json();
    assert_eq!(v["io_path"]["direct"], false);
    assert!(v["io_path"]["fallback_reason"].as_str().unwrap().contains("refused O_DIRECT"), "{v}");
}
