//! `peerpath dedup`: stores keep each chunk once, restore exactly, detect
//! damage, and survive being killed at any instant (SIGKILL) with no chunk
//! referenced without its data.

mod common;

use common::*;
use std::io::Write;
use std::path::{Path, PathBuf};

fn edited_copy(data: &[u8]) -> Vec<u8> {
    let mut e = data.to_vec();
    e.splice(data.len() / 3..data.len() / 3, b"an insertion the chunker must absorb".iter().copied());
    e.truncate(e.len() - 1000);
    e
}

fn stats(store: &Path) -> String {
    run(&mut pp(args!["dedup", "stats", "-s", store])).ok().stdout_str()
}

#[test]
fn files_restore_exactly_and_shared_chunks_are_kept_once() {
    let dir = scratch();
    let d = dir.path();
    let a = mixed_data(6 << 20, 1);
    let b = edited_copy(&a);
    std::fs::write(d.join("a"), &a).unwrap();
    std::fs::write(d.join("b"), &b).unwrap();
    std::fs::write(d.join("empty"), b"").unwrap();
    let st = d.join("st");
    let cwd = |c: &mut std::process::Command| {
        c.current_dir(d);
    };
    let mut c = pp(args!["dedup", "store", "a", "b", "empty", "-s", &st, "--min", "4K", "--avg", "16K", "--max", "64K"]);
    cwd(&mut c);
    run(&mut c).ok();
    let s = stats(&st);
    let ratio: f64 = s.split("deduplication ratio: ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
    assert!(ratio > 1.9, "a and its edited copy share almost every chunk: {s}");
    for (name, want) in [("a", &a), ("b", &b), ("empty", &Vec::new())] {
        let out = d.join(format!("{name}.back"));
        run(&mut pp(args!["dedup", "restore", name, "-s", &st, "-o", &out])).ok();
        assert_file_eq(&out, want, name);
    }
    run(&mut pp(args!["dedup", "verify", "-s", &st])).ok();
    // The same name again needs --force; other sizes or hash for this store are refused.
    let mut c = pp(args!["dedup", "store", "a", "-s", &st]);
    cwd(&mut c);
    run(&mut c).fails(4, &["exists"]);
    let mut c = pp(args!["dedup", "store", "a", "-s", &st, "-f", "--hash", "sha256"]);
    cwd(&mut c);
    let o = run(&mut c).fails(2, &["the store chunks with --min 4096 --avg 16384 --max 65536 and --hash blake3", "set when it is made"]);
    assert!(!o.stderr.contains("ChunkParams"), "{}", o.stderr);
    run(&mut pp(args!["dedup", "restore", "nope", "-s", &st, "-o", d.join("x")])).fails(3, &["nope: not in the store"]);
    run(&mut pp(args!["dedup", "restore", "a", "-s", &st, "-o", d.join("a")])).fails(4, &["exists"]);
    assert_eq!(std::fs::read(d.join("a")).unwrap(), a, "sources are never modified");
}

/// A file replaced with --force leaves the chunks only it had: stats counts them apart (the
/// ratio is of the chunks files refer to, not below 1), and says when a store is running
/// rather than calling its pack bytes a killed store's.
#[test]
fn stats_tell_chunks_no_file_refers_to_and_a_running_store() {
    use std::os::fd::AsRawFd;
    let dir = scratch();
    let d = dir.path();
    let (a, c) = (mixed_data(2 << 20, 11), mixed_data(2 << 20, 12));
    std::fs::write(d.join("a"), &a).unwrap();
    std::fs::write(d.join("c"), &c).unwrap();
    let (st, only_c) = (d.join("st"), d.join("only-c"));
    let store_in = |st: &Path, src: &str, extra: &[&str]| {
        let mut cmd = pp(args!["dedup", "store", src, "-s", st, "--min", "4K", "--avg", "16K", "--max", "64K"]);
        cmd.args(extra).current_dir(d);
        run(&mut cmd).ok();
    };
    let store = |src: &str, extra: &[&str]| store_in(&st, src, extra);
    store_in(&only_c, "c", &[]);
    let c_alone = run(&mut pp(args!["dedup", "stats", "-s", &only_c, "--json"])).ok().json();
    store("a", &[]);
    let j = run(&mut pp(args!["dedup", "stats", "-s", &st, "--json"])).ok().json();
    assert_eq!((j["unreferenced_chunks"].as_u64(), j["store_running"].as_bool()), (Some(0), Some(false)), "{j}");
    // Name "a" now holds c's bytes: a's chunks are left, no file refers to them.
    std::fs::write(d.join("a"), &c).unwrap();
    store("a", &["-f"]);
    let j = run(&mut pp(args!["dedup", "stats", "-s", &st, "--json"])).ok().json();
    let unique = j["unique_chunk_bytes"].as_u64().unwrap();
    let c_bytes = c_alone["unique_chunk_bytes"].as_u64().unwrap();
    assert_eq!(j["unreferenced_chunk_bytes"].as_u64(), Some(unique - c_bytes), "{j}\n{c_alone}");
    assert_eq!(j["unreferenced_chunks"].as_u64(), Some(j["unique_chunks"].as_u64().unwrap() - c_alone["unique_chunks"].as_u64().unwrap()), "{j}");
    assert!(j["unreferenced_chunks"].as_u64().unwrap() > 10, "{j}");
    assert_eq!(j["dedup_ratio"], c_alone["dedup_ratio"], "the ratio is the files' (c's alone): {j}");
    let text = stats(&st);
    assert!(text.contains("chunks no file refers to: ") && text.contains("replaced with --force"), "{text}");
    // A writer holds the lock (as a running store does): its pack bytes are not a killed store's.
    let pack = std::fs::read_dir(st.join("packs")).unwrap().next().unwrap().unwrap().path();
    std::fs::OpenOptions::new().append(true).open(&pack).unwrap().write_all(&[7u8; 1000]).unwrap();
    let text = stats(&st);
    assert!(text.contains("left by a store that was killed") && !text.contains("a writer is running"), "{text}");
    let lock = std::fs::File::open(st.join("lock")).unwrap();
    // SAFETY: flock on a descriptor this test owns, released when it closes.
    assert_eq!(unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX) }, 0);
    let j = run(&mut pp(args!["dedup", "stats", "-s", &st, "--json"])).ok().json();
    assert_eq!((j["store_running"].as_bool(), j["unreferenced_pack_bytes"].as_u64()), (Some(true), Some(1000)), "{j}");
    let text = stats(&st);
    assert!(text.contains("a writer is running") && text.contains("the running writer's") && !text.contains("killed"), "{text}");
}

/// An index that cannot be written (here a file size limit of 0) is said as that (exit 11), not
/// as a damaged store (6, which sends users to delete a sound one), and a new store that could
/// not be made leaves nothing (it left the directory with its half-made index).
#[test]
fn an_index_that_cannot_be_written_is_no_damaged_store() {
    let dir = scratch();
    let src = dir.path().join("a");
    std::fs::write(&src, &sample()[..200_000]).unwrap();
    let store = dir.path().join("store");
    let o = std::process::Command::new("sh").arg("-c").arg("ulimit -f 0; exec \"$0\" \"$@\"").arg(bin()).args(args!["dedup", "store", &src, "-s", &store, "-q"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(11), "{stderr}");
    assert!(stderr.contains("index.sqlite") && stderr.contains("could not be written") && !stderr.contains("damaged"), "{stderr}");
    assert!(!store.exists(), "nothing made is left: {:?}", std::fs::read_dir(&store).map(|d| d.flatten().map(|e| e.file_name()).collect::<Vec<_>>()));
    // Without the limit the same store is made.
    run(&mut pp(args!["dedup", "store", &src, "-s", &store, "-q"])).ok();
}

#[test]
fn a_damaged_store_is_named_and_nothing_is_written() {
    let dir = scratch();
    let d = dir.path();
    let a = mixed_data(2 << 20, 2);
    let src = d.join("a");
    std::fs::write(&src, &a).unwrap();
    let st = d.join("st");
    run(&mut pp(args!["dedup", "store", &src, "-s", &st])).ok();
    let pack = st.join("packs/pack-000000");
    // The store's own files are never stored in it (a pack read its own appends).
    let own = snapshot(&st);
    for file in [pack.clone(), st.join("index.sqlite"), d.join("st/../st/packs/pack-000000")] {
        run(&mut pp(args!["dedup", "store", &file, "-s", &st])).fails(5, &["source and target are the same file", file.file_name().unwrap().to_str().unwrap()]);
    }
    assert!(snapshot(&st) == own, "the store changed");
    let mut bytes = std::fs::read(&pack).unwrap();
    bytes[1_000_000] ^= 0x40;
    std::fs::write(&pack, &bytes).unwrap();
    let out = d.join("back");
    run(&mut pp(args!["dedup", "restore", &src, "-s", &st, "-o", &out])).fails(6, &["does not match its blake3 fingerprint", "nothing was written"]);
    assert!(!out.exists());
    run(&mut pp(args!["dedup", "verify", "-s", &st])).fails(6, &["pack 0 at byte"]);
    // A pack cut short: stats still prints the index's figures, and says the packs lost chunks
    // (it exited 0, its stored bytes those the index placed in the missing part).
    std::fs::File::options().write(true).open(&pack).unwrap().set_len(500_000).unwrap();
    let o = run(&mut pp(args!["dedup", "stats", "-s", &st])).fails(6, &["packs shorter than the index says", "pack-000000 holds 500000 bytes"]);
    assert!(o.stdout_str().contains("stored bytes"), "{}", o.stdout_str());
    std::fs::write(st.join("index.sqlite"), b"not a database at all, just bytes").unwrap();
    run(&mut pp(args!["dedup", "stats", "-s", &st])).fails(6, &["index"]);
    run(&mut pp(args!["dedup", "stats", "-s", d.join("nowhere")])).fails(3, &["index.sqlite"]);
    // A store into a directory whose index is not a store's writes nothing in it or beside it
    // (an empty index grew tables; another program's file got a lock and packs beside it).
    for (name, index) in [("empty", &b""[..]), ("foreign", &b"not a database at all, just bytes"[..])] {
        let other = d.join(name);
        std::fs::create_dir(&other).unwrap();
        std::fs::write(other.join("index.sqlite"), index).unwrap();
        run(&mut pp(args!["dedup", "store", &src, "-s", &other, "-f"])).fails(6, &["not a dedup store's index", "nothing was written"]);
        assert_eq!(std::fs::read(other.join("index.sqlite")).unwrap(), index, "{name}: the index as it was");
        assert_dir_holds(&other, &["index.sqlite"]);
    }
}

/// kill -9 at many points of a store: the store always reopens, verifies
/// (no chunk referenced without its data), and a later store completes.
#[test]
fn a_store_killed_at_any_instant_stays_consistent() {
    let dir = scratch();
    let d = dir.path();
    let a = mixed_data(24 << 20, 3);
    let src = d.join("a");
    std::fs::write(&src, &a).unwrap();
    let b = d.join("b");
    std::fs::write(&b, edited_copy(&a)).unwrap();
    let st = d.join("st");
    for (k, delay) in [0u64, 20, 60, 120, 250, 400].into_iter().enumerate() {
        let which = if k % 2 == 0 { &src } else { &b };
        let mut child = pp(args!["dedup", "store", which, "-s", &st, "-f", "--avg", "16K", "--min", "4K", "--max", "64K"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(delay));
        // SAFETY: kill(2) with our own child's pid.
        unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
        wait_deadline(&mut child, HANG_DEADLINE, "a killed store");
        if st.join("index.sqlite").exists() {
            let v = run(&mut pp(args!["dedup", "verify", "-s", &st]));
            assert_eq!(v.code(), Some(0), "killed after {delay} ms: {}", v.stderr);
        }
    }
    run(&mut pp(args!["dedup", "store", &src, &b, "-s", &st, "-f"])).ok();
    run(&mut pp(args!["dedup", "verify", "-s", &st])).ok();
    run(&mut pp(args!["dedup", "restore", &b, "-s", &st, "-o", d.join("b.back")])).ok();
    assert_file_eq(&d.join("b.back"), &edited_copy(&a), "restored after the kills");
}

/// `--engine gpu`: on a GPU (peerpath's FastCDC and BLAKE3 kernels) the
/// store is the CPU's byte for byte; without one the fallback says why and
/// the CPU makes it; --no-fallback exits 15; SHA-256 and --compress are the CPU's.
#[test]
fn dedup_on_a_gpu_makes_the_cpus_store_or_falls_back_saying_why() {
    let dir = scratch();
    let d = dir.path();
    let a = mixed_data(9 << 20, 6);
    let b = edited_copy(&a);
    let (sa, sb) = (d.join("a"), d.join("b"));
    std::fs::write(&sa, &a).unwrap();
    std::fs::write(&sb, &b).unwrap();
    let (cpu, gpu) = (d.join("cpu"), d.join("gpu"));
    let sizes = args!["--avg", "32K", "--min", "8K", "--max", "128K"];
    run(pp(args!["dedup", "store", &sa, &sb, "-s", &cpu]).args(&sizes)).ok();
    let o = run(pp(args!["dedup", "store", &sa, &sb, "-s", &gpu, "--engine", "gpu"]).args(&sizes)).ok();
    let on_gpu = !o.stderr.contains("FALLBACK");
    if on_gpu {
        eprintln!("a GPU chunked the files: {}", o.stdout_str());
        assert!(o.stdout_str().contains("on 1 GPU") && host_copies(&o.stdout_str()).0 < host_copies(&o.stdout_str()).1 / 100 && o.stdout_str().contains("measured on a real accelerator (GPU)"), "{}", o.stdout_str());
    } else {
        eprintln!("SKIPPED the GPU's own run (no GPU here): {}", o.stderr);
        assert!(o.stderr.contains("FALLBACK: GPU 0 unavailable: ") && o.stderr.contains("chunking on the host CPU"), "{}", o.stderr);
        run(pp(args!["dedup", "store", &sa, "-s", d.join("none"), "--engine", "gpu", "--no-fallback"]).args(&sizes)).fails(15, &["GPU 0 unavailable", "--no-fallback"]);
    }
    assert_eq!(std::fs::read(cpu.join("packs/pack-000000")).unwrap(), std::fs::read(gpu.join("packs/pack-000000")).unwrap(), "the same chunks, in the same order");
    assert_eq!(stats(&cpu).replace(cpu.to_str().unwrap(), "S"), stats(&gpu).replace(gpu.to_str().unwrap(), "S"));
    run(&mut pp(args!["dedup", "restore", &sb, "-s", &gpu, "-o", d.join("b.back")])).ok();
    assert_file_eq(&d.join("b.back"), &b, "restored from the GPU engine's store");
    // What the GPU's kernels do not do is the CPU's, said (or exit 15).
    run(&mut pp(args!["dedup", "store", &sa, "-s", d.join("sha"), "--hash", "sha256", "--engine", "gpu", "--no-fallback"])).fails(15, &["--no-fallback"]);
    run(&mut pp(args!["dedup", "store", &sa, "-s", d.join("gz"), "--compress", "1", "--engine", "gpu", "--no-fallback"])).fails(15, &["--no-fallback"]);
    run(&mut pp(args!["dedup", "store", &sa, "-s", d.join("x"), "--gpu", "1"])).fails(2, &["--gpu needs --engine gpu"]);
    // A new store is its owner's alone: it holds every stored file's bytes (private ones too).
    use std::os::unix::fs::PermissionsExt;
    for store in [&cpu, &gpu] {
        assert_eq!(std::fs::metadata(store).unwrap().permissions().mode() & 0o777, 0o700, "{}", store.display());
    }
    // The directories above a new store are made as any are (they were made 0700 too).
    run(&mut pp(args!["dedup", "store", &sa, "-s", d.join("above/store"), "-q"])).ok();
    assert_eq!(std::fs::metadata(d.join("above/store")).unwrap().permissions().mode() & 0o777, 0o700);
    std::fs::create_dir(d.join("as-any")).unwrap();
    assert_eq!(std::fs::metadata(d.join("above")).unwrap().permissions().mode(), std::fs::metadata(d.join("as-any")).unwrap().permissions().mode());
    // A name given twice: refused before the store is made (the first was stored, then exit 4).
    run(&mut pp(args!["dedup", "store", &sa, &sb, &sa, "-s", d.join("twice")])).fails(2, &["named twice"]);
    assert!(!d.join("twice").exists());
}

/// `--engine emulated`: the emulated CSP chunks and fingerprints in its own
/// memory and only boundaries and digests come back; the store it makes is
/// the CPU's byte for byte (same packs, same ratio), restores exactly, and
/// chunk sizes the device cannot take are a said fallback.
#[test]
fn an_emulated_csp_makes_the_same_store_as_the_cpu() {
    let dir = scratch();
    let d = dir.path();
    let a = mixed_data(9 << 20, 4);
    let b = edited_copy(&a);
    let (sa, sb) = (d.join("a"), d.join("b"));
    std::fs::write(&sa, &a).unwrap();
    std::fs::write(&sb, &b).unwrap();
    let (cpu, emu) = (d.join("cpu"), d.join("emu"));
    run(&mut pp(args!["dedup", "store", &sa, &sb, "-s", &cpu, "--avg", "32K", "--min", "8K", "--max", "128K"])).ok();
    let o = run(&mut pp(args!["dedup", "store", &sa, &sb, "-s", &emu, "--avg", "32K", "--min", "8K", "--max", "128K", "--engine", "emulated", "--no-fallback"])).ok();
    assert!(o.stdout_str().contains("measured on emulated devices"), "{}", o.stdout_str());
    // Measured: what this process copied out of the device's memory is the boundaries and digests it names.
    let report = o.stdout_str();
    let (copied, payload) = host_copies(&report);
    let metadata: u64 = report.split(" bytes of boundaries and digests back").next().unwrap().rsplit(' ').next().unwrap().parse().unwrap();
    assert_eq!((copied, payload), (metadata, a.len() as u64), "{report}");
    assert!(copied < payload / 100, "{report}");
    assert_eq!(std::fs::read(cpu.join("packs/pack-000000")).unwrap(), std::fs::read(emu.join("packs/pack-000000")).unwrap(), "the same chunks, in the same order");
    assert_eq!(stats(&cpu).replace(cpu.to_str().unwrap(), "S"), stats(&emu).replace(emu.to_str().unwrap(), "S"));
    run(&mut pp(args!["dedup", "restore", &sb, "-s", &emu, "-o", d.join("b.back")])).ok();
    assert_file_eq(&d.join("b.back"), &b, "restored from the device's store");
    let odd = d.join("odd");
    let o = run(&mut pp(args!["dedup", "store", &sa, "-s", &odd, "--min", "1000", "--engine", "emulated"])).ok();
    assert!(o.stderr.contains("FALLBACK") && o.stderr.contains("whole KiB"), "{}", o.stderr);
    run(&mut pp(args!["dedup", "store", &sb, "-s", &odd, "--engine", "emulated", "--no-fallback"])).fails(15, &["whole KiB"]);
}

/// A file's recipe (its chunks' digests, in order) in a store.
fn recipe(store: &Path, name: &Path) -> Vec<u8> {
    let db = rusqlite::Connection::open(store.join("index.sqlite")).unwrap();
    use std::os::unix::ffi::OsStrExt;
    db.query_row("SELECT chunks FROM files WHERE name = ?1", [name.as_os_str().as_bytes()], |r| r.get(0)).unwrap()
}

/// A new version of a stored file has most of its chunks found from what
/// followed them before (hashed, not cut: RapidCDC's hints), and they are the
/// chunks a store that never saw the old version cuts, on any thread count;
/// a file stored through a device leaves no hints, and a damaged hint is none.
#[test]
fn a_new_version_is_found_from_what_followed_before_and_cut_alike() {
    let dir = scratch();
    let d = dir.path();
    // Random bytes: no chunk twice (a chunk's hint is what followed it last).
    let a = random_bytes(12 << 20, 8);
    let mut b = edited_copy(&a);
    b.splice(b.len() / 2..b.len() / 2 + 5000, []);
    let (sa, sb) = (d.join("a"), d.join("b"));
    std::fs::write(&sa, &a).unwrap();
    std::fs::write(&sb, &b).unwrap();
    let sizes = ["--min", "4K", "--avg", "16K", "--max", "64K"];
    let fresh = d.join("fresh");
    run(&mut pp(args!["dedup", "store", &sb, "-s", &fresh].into_iter().chain(sizes.map(Into::into)).collect::<Vec<_>>())).ok();
    for t in ["1", "3"] {
        let st = d.join(format!("st{t}"));
        let o = run(&mut pp(args!["dedup", "store", &sa, &sb, "-s", &st, "-T", t, "--json"].into_iter().chain(sizes.map(Into::into)).collect::<Vec<_>>())).ok();
        let v: serde_json::Value = serde_json::from_str(o.stdout_str().trim()).unwrap();
        let files = v["files"].as_array().unwrap();
        assert_eq!(files[0]["found_chunks"], 0, "nothing stored before a, which does not repeat itself: {v}");
        let (found, chunks) = (files[1]["found_chunks"].as_u64().unwrap(), files[1]["chunks"].as_u64().unwrap());
        assert!(found * 10 >= chunks * 9, "-T {t}: {found} of {chunks} chunks of b found: {v}");
        assert_eq!(recipe(&st, &sb), recipe(&fresh, &sb), "-T {t}: b's chunks are those cut without hints");
        run(&mut pp(args!["dedup", "restore", &sb, "-s", &st, "-o", d.join(format!("b{t}"))])).ok();
        assert_file_eq(&d.join(format!("b{t}")), &b, "restored");
    }
    // One file that is a then b: b's half is found from a's, with nothing stored before. On
    // one thread half the chunks at least; on two, how many depends on whether the thread
    // cutting b's half comes after a's chunks were learned (timing: CI once saw 44.8 %), so
    // there only the chunks are checked, the same as one thread's.
    let sab = d.join("ab");
    std::fs::write(&sab, [&a[..], &b[..]].concat()).unwrap();
    for t in ["1", "2"] {
        let st = d.join(format!("one{t}"));
        let o = run(&mut pp(args!["dedup", "store", &sab, "-s", &st, "-T", t, "--json"].into_iter().chain(sizes.map(Into::into)).collect::<Vec<_>>())).ok();
        let v: serde_json::Value = serde_json::from_str(o.stdout_str().trim()).unwrap();
        let (found, chunks) = (v["files"][0]["found_chunks"].as_u64().unwrap(), v["files"][0]["chunks"].as_u64().unwrap());
        if t == "1" {
            assert!(found * 20 >= chunks * 9, "-T 1: {found} of {chunks} chunks of a then b found: {v}");
        } else {
            assert_eq!(recipe(&st, &sab), recipe(&d.join("one1"), &sab), "-T 2: the chunks of one thread ({found} of {chunks} found)");
        }
        run(&mut pp(args!["dedup", "restore", &sab, "-s", &st, "-o", d.join(format!("ab{t}"))])).ok();
        assert_file_eq(&d.join(format!("ab{t}")), &[&a[..], &b[..]].concat(), "restored");
    }
    // Through an emulated CSP no chunk's first byte reaches the host: no hints are kept.
    let emu = d.join("emu");
    run(&mut pp(args!["dedup", "store", &sa, "-s", &emu, "--engine", "emulated", "--no-fallback"].into_iter().chain(sizes.map(Into::into)).collect::<Vec<_>>())).ok();
    let db = rusqlite::Connection::open(emu.join("index.sqlite")).unwrap();
    assert_eq!(db.query_row("SELECT count(*) FROM successors", [], |r| r.get::<_, i64>(0)).unwrap(), 0);
    // Damaged hints (lengths wrong or negative, digests of the wrong size, bytes out of range)
    // are none: the file's chunks are the same.
    let st = d.join("st1");
    let db = rusqlite::Connection::open(st.join("index.sqlite")).unwrap();
    db.execute_batch(
        "UPDATE successors SET len = -5 WHERE substr(digest, 1, 1) < x'40';
         UPDATE successors SET len = len + 2 WHERE substr(digest, 1, 1) BETWEEN x'40' AND x'5f';
         UPDATE successors SET next = x'0102' WHERE substr(digest, 1, 1) >= x'c0';
         UPDATE successors SET after = 999 WHERE substr(digest, 1, 1) BETWEEN x'80' AND x'bf';",
    )
    .unwrap();
    drop(db);
    let o = run(&mut pp(args!["dedup", "store", &sb, "-s", &st, "-f", "--json"])).ok();
    let v: serde_json::Value = serde_json::from_str(o.stdout_str().trim()).unwrap();
    assert_eq!(recipe(&st, &sb), recipe(&fresh, &sb), "damaged hints change no chunk: {v}");
}

/// Chunks are cut and hashed on several threads, a segment each, and joined
/// exactly, and new chunks compressed on as many: stores made on 1, 2, 3
/// and 7 threads hold the same pack and the same counts, over blocks of several segments, a long run of zeros
/// (where chains begun at different places never meet) and a file of less
/// than a segment.
#[test]
fn stores_made_on_any_number_of_threads_are_the_same() {
    let dir = scratch();
    let d = dir.path();
    let mut a = mixed_data(14 << 20, 6);
    a.splice(7 << 19..7 << 19, std::iter::repeat_n(0u8, (3 << 20) + 4321));
    let small = mixed_data(300 << 10, 7);
    let (sa, ss) = (d.join("a"), d.join("small"));
    std::fs::write(&sa, &a).unwrap();
    std::fs::write(&ss, &small).unwrap();
    for compress in [&[][..], &["--compress", "1"][..]] {
        let mut first = None;
        for t in ["1", "2", "3", "7"] {
            let st = d.join(format!("st{t}{}", compress.len()));
            let o = run(&mut pp(args!["dedup", "store", &sa, &ss, "-s", &st, "--min", "4K", "--avg", "16K", "--max", "64K", "-T", t].into_iter().chain(compress.iter().map(std::ffi::OsString::from)).collect::<Vec<_>>())).ok();
            assert!(o.stdout_str().contains(&format!("on {t} thread{}", if t == "1" { "," } else { "s," })), "{}", o.stdout_str());
            let made = (std::fs::read(st.join("packs/pack-000000")).unwrap(), stats(&st).replace(st.to_str().unwrap(), "S"));
            match &first {
                None => first = Some(made),
                Some(f) => assert!(f == &made, "-T {t} {compress:?} made another store: {}", made.1),
            }
            let back = d.join(format!("a{t}{}", compress.len()));
            run(&mut pp(args!["dedup", "restore", &sa, "-s", &st, "-o", &back])).ok();
            assert_file_eq(&back, &a, "restored");
        }
    }
}

/// Restore reads chunks on threads, a batch at a time, and writes them in
/// order: a file of many batches comes back exactly, and a damaged chunk
/// far into it is named with the bytes it held.
#[test]
fn a_restore_of_many_batches_is_exact_and_names_a_damaged_chunk_where_it_lies() {
    let dir = scratch();
    let d = dir.path();
    let a = random_bytes(6 << 20, 12);
    let (src, st) = (d.join("a"), d.join("st"));
    std::fs::write(&src, &a).unwrap();
    run(&mut pp(args!["dedup", "store", &src, "-s", &st, "--min", "4K", "--avg", "8K", "--max", "16K"])).ok();
    run(&mut pp(args!["dedup", "restore", &src, "-s", &st, "-o", d.join("back")])).ok();
    assert_file_eq(&d.join("back"), &a, "restored over many batches");
    // Random bytes share no chunk: the pack holds the file in order, so pack byte = file byte.
    let pack = st.join("packs/pack-000000");
    let mut bytes = std::fs::read(&pack).unwrap();
    let flipped = 5_000_000usize;
    bytes[flipped] ^= 1;
    std::fs::write(&pack, &bytes).unwrap();
    let e = run(&mut pp(args!["dedup", "restore", &src, "-s", &st, "-o", d.join("back2")])).fails(6, &["does not match", "nothing was written"]);
    let from: usize = e.stderr.split("(bytes ").nth(1).unwrap().split("..").next().unwrap().parse().unwrap();
    assert!(from <= flipped && flipped < from + (16 << 10), "chunk at {from} named for a byte flipped at {flipped}: {}", e.stderr);
    assert!(!d.join("back2").exists());
    // To standard output, what went out before the damaged chunk is said (it was "nothing was written").
    let e = run(&mut pp(args!["dedup", "restore", &src, "-s", &st, "-o", "-"])).fails(6, &["does not match", "bytes had reached standard output before it"]);
    assert_eq!(e.stdout.len(), from, "the chunks before the damaged one reached standard output: {}", e.stderr);
}

/// A pipe is stored as what came through it (its size unknown beforehand),
/// cut on threads like a file and into the same chunks; on a device it is
/// chunked on the CPU, said so (or exit 15 with --no-fallback); a directory
/// is refused by name.
#[test]
fn a_pipe_is_stored_as_a_file_is_and_a_directory_is_refused() {
    let dir = scratch();
    let d = dir.path();
    let a = mixed_data(5 << 20, 8);
    let (file, fifo, st) = (d.join("a"), d.join("fifo"), d.join("st"));
    std::fs::write(&file, &a).unwrap();
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let feed = || std::process::Command::new("sh").arg("-c").arg("cat \"$0\" > \"$1\"").arg(&file).arg(&fifo).spawn().unwrap();
    let mut writer = feed();
    run(&mut pp(args!["dedup", "store", &fifo, "-s", &st, "-T", "2"])).ok();
    writer.wait().unwrap();
    let o = run(&mut pp(args!["dedup", "store", &file, "-s", &st])).ok();
    assert!(o.stdout_str().contains(", 0 B new (0 chunks)"), "the file's chunks are the pipe's: {}", o.stdout_str());
    run(&mut pp(args!["dedup", "restore", &fifo, "-s", &st, "-o", d.join("back")])).ok();
    assert_file_eq(&d.join("back"), &a, "stored from a pipe");
    let mut writer = feed();
    let o = run(&mut pp(args!["dedup", "store", &fifo, "-s", d.join("emu"), "--engine", "emulated"])).ok();
    writer.wait().unwrap();
    assert!(o.stderr.contains("FALLBACK") && o.stderr.contains("a pipe"), "{}", o.stderr);
    let mut writer = feed();
    run(&mut pp(args!["dedup", "store", &fifo, "-s", d.join("emu2"), "--engine", "emulated", "--no-fallback"])).fails(15, &["a pipe"]);
    drop(std::fs::File::open(&fifo)); // lets the writer finish
    writer.wait().unwrap();
    assert!(!d.join("emu2").exists(), "a store that failed before it kept a file is not left behind");
    run(&mut pp(args!["dedup", "store", d, "-s", &st])).fails(3, &["is a directory"]);
}

/// `--compress`: new chunks are kept as gzip members where that is smaller
/// (incompressible ones as they are), restore and verify decode and check
/// them, stats reports the dedup and compression ratios apart, the device
/// makes the very same pack, and a damaged member is named.
#[test]
fn compressed_chunks_restore_exactly_and_the_device_makes_the_same_pack() {
    let dir = scratch();
    let d = dir.path();
    let a = mixed_data(5 << 20, 7);
    let b = edited_copy(&a);
    let (sa, sb) = (d.join("a"), d.join("b"));
    std::fs::write(&sa, &a).unwrap();
    std::fs::write(&sb, &b).unwrap();
    let (cpu, emu, plain) = (d.join("cpu"), d.join("emu"), d.join("plain"));
    let sizes = ["--avg", "32K", "--min", "8K", "--max", "128K"];
    run(pp(args!["dedup", "store", &sa, &sb, "-s", &cpu, "--compress", "1"]).args(sizes)).ok();
    let o = run(pp(args!["dedup", "store", &sa, &sb, "-s", &emu, "--compress", "1", "--engine", "emulated", "--no-fallback"]).args(sizes)).ok();
    assert!(o.stdout_str().contains("compressed (level 1) on 1 emulated CSP") && host_copies(&o.stdout_str()).0 < host_copies(&o.stdout_str()).1 / 100, "{}", o.stdout_str());
    run(pp(args!["dedup", "store", &sa, &sb, "-s", &plain]).args(sizes)).ok();
    let pack = |s: &Path| std::fs::read(s.join("packs/pack-000000")).unwrap();
    assert_eq!(pack(&cpu), pack(&emu), "the device's members are the CPU's bytes");
    assert!(pack(&cpu).len() < pack(&plain).len() * 9 / 10, "{} against {} bytes", pack(&cpu).len(), pack(&plain).len());
    let s = stats(&cpu);
    let number = |after: &str| -> f64 { s.split(after).nth(1).unwrap().split(' ').next().unwrap().parse().unwrap() };
    assert!(number("deduplication ratio: ") > 1.9 && number("compression ratio: ") > 1.1, "{s}");
    let p = stats(&plain);
    assert_eq!(s.split("unique chunks: ").nth(1).unwrap().split(';').next(), p.split("unique chunks: ").nth(1).unwrap().split(';').next(), "the same chunks:\n{s}\n{p}");
    assert!(!p.contains("compression ratio"), "{p}");
    for (src, want) in [(&sa, &a), (&sb, &b)] {
        let out = d.join("back");
        run(&mut pp(args!["dedup", "restore", src, "-s", &emu, "-o", &out, "-f"])).ok();
        assert_file_eq(&out, want, "restored from compressed chunks");
    }
    run(&mut pp(args!["dedup", "verify", "-s", &cpu])).ok();
    // A flipped byte inside the first member's deflate data: named, nothing written.
    let mut damaged = pack(&cpu);
    damaged[40] ^= 0x55;
    std::fs::write(cpu.join("packs/pack-000000"), &damaged).unwrap();
    let out = d.join("never");
    run(&mut pp(args!["dedup", "restore", &sa, "-s", &cpu, "-o", &out])).fails(6, &["chunk 0 of", "pack 0 at byte 0", "nothing was written"]);
    assert!(!out.exists());
    run(&mut pp(args!["dedup", "verify", "-s", &cpu])).fails(6, &["pack 0 at byte 0"]);
    // An index that claims an absurd size is damage, not an allocation.
    {
        let db = rusqlite::Connection::open(emu.join("index.sqlite")).unwrap();
        db.execute("UPDATE chunks SET len = 1099511627776 WHERE offset = 0", []).unwrap();
    }
    run(&mut pp(args!["dedup", "restore", &sa, "-s", &emu, "-o", &out])).fails(6, &["the index is damaged", "nothing was written"]);
    run(&mut pp(args!["dedup", "verify", "-s", &emu])).fails(6, &["the index is damaged"]);
}

/// A store made before chunks could be compressed (format 1: no codec or
/// size column, nor files' modes) is read as it is, and brought to format 3 when written.
#[test]
fn a_format_1_store_is_read_and_upgraded_when_written() {
    let dir = scratch();
    let d = dir.path();
    let a = mixed_data(3 << 20, 9);
    let b = edited_copy(&a);
    let (sa, sb, st) = (d.join("a"), d.join("b"), d.join("st"));
    std::fs::write(&sa, &a).unwrap();
    std::fs::write(&sb, &b).unwrap();
    run(&mut pp(args!["dedup", "store", &sa, "-s", &st])).ok();
    let format = || -> String {
        let db = rusqlite::Connection::open(st.join("index.sqlite")).unwrap();
        db.query_row("SELECT value FROM meta WHERE key = 'format'", [], |r| r.get(0)).unwrap()
    };
    {
        let db = rusqlite::Connection::open(st.join("index.sqlite")).unwrap();
        db.execute_batch(
            "CREATE TABLE old (digest BLOB PRIMARY KEY, pack INTEGER NOT NULL, offset INTEGER NOT NULL, len INTEGER NOT NULL) WITHOUT ROWID;
             INSERT INTO old SELECT digest, pack, offset, len FROM chunks; DROP TABLE chunks; ALTER TABLE old RENAME TO chunks;
             ALTER TABLE files DROP COLUMN mode; UPDATE meta SET value = 'peerpath-dedup/1' WHERE key = 'format';",
        )
        .unwrap();
    }
    let out = d.join("a.back");
    run(&mut pp(args!["dedup", "restore", &sa, "-s", &st, "-o", &out])).ok();
    assert_file_eq(&out, &a, "restored from a format-1 store");
    run(&mut pp(args!["dedup", "verify", "-s", &st])).ok();
    assert!(stats(&st).contains("deduplication ratio: 1.000"));
    assert_eq!(format(), "peerpath-dedup/1", "reading changes nothing");
    run(&mut pp(args!["dedup", "store", &sb, "-s", &st, "--compress", "1"])).ok();
    assert_eq!(format(), "peerpath-dedup/3");
    for (src, want) in [(&sa, &a), (&sb, &b)] {
        run(&mut pp(args!["dedup", "restore", src, "-s", &st, "-o", &out, "-f"])).ok();
        assert_file_eq(&out, want, "restored after the upgrade");
    }
    run(&mut pp(args!["dedup", "verify", "-s", &st])).ok();
}

#[test]
fn a_restore_never_writes_into_its_store_even_with_force() {
    let dir = scratch();
    let d = dir.path();
    let src = d.join("a");
    std::fs::write(&src, mixed_data(1 << 20, 21)).unwrap();
    let st = d.join("st");
    run(&mut pp(args!["dedup", "store", &src, "-s", &st])).ok();
    std::os::unix::fs::symlink(st.join("packs"), d.join("link")).unwrap();
    let before = snapshot(&st);
    for target in [st.join("index.sqlite"), st.join("packs/pack-000000"), st.join("packs/pack-000001"), st.join("lock"), d.join("link/new")] {
        run(&mut pp(args!["dedup", "restore", &src, "-s", &st, "-f", "-o", &target])).fails(5, &["is in the store", "never a target"]);
    }
    let after = snapshot(&st);
    assert_eq!(after, before, "the store as it was");
    run(&mut pp(args!["dedup", "verify", "-s", &st])).ok();
    // `-o -` is standard output (it made a file named "-"); a file gets a new file's mode (it was 0600 whatever the umask).
    let o = run(&mut pp(args!["dedup", "restore", &src, "-s", &st, "-o", "-"])).ok();
    assert!(o.stdout == std::fs::read(&src).unwrap(), "restored to standard output");
    assert!(!std::path::Path::new("-").exists() && !d.join("-").exists());
    use std::os::unix::fs::PermissionsExt;
    let back = d.join("back");
    run(&mut pp(args!["dedup", "restore", &src, "-s", &st, "-o", &back])).ok();
    std::fs::File::create(d.join("fresh")).unwrap();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&back), mode(&d.join("fresh")), "a new file's mode");
}

/// A store that fails (its file system full) takes back what it appended,
/// so the store is as before and the space is free again; bytes a killed
/// store left are cut off by the next one; a store whose index is lost is
/// not silently started again.
#[test]
fn a_failed_store_leaves_the_store_as_it_was_and_a_lost_index_is_refused() {
    let test = "a_failed_store_leaves_the_store_as_it_was_and_a_lost_index_is_refused";
    let dir = scratch();
    let d = dir.path();
    let (big, small) = (d.join("big"), d.join("small"));
    std::fs::write(&big, random_bytes(3_000_000, 22)).unwrap();
    std::fs::write(&small, mixed_data(200_000, 23)).unwrap();
    if let Some(fs) = TmpfsMount::new(test, "2m") {
        let st = fs.dir.join("st");
        run(&mut pp(args!["dedup", "store", &small, "-s", &st])).ok();
        let pack = st.join("packs/pack-000000");
        let before = std::fs::read(&pack).unwrap();
        run(&mut pp(args!["dedup", "store", &big, "-s", &st])).fails(11, &["No space left", "nothing was kept"]);
        assert_eq!(std::fs::read(&pack).unwrap(), before, "the pack cut back to what the index knows");
        assert!(!stats(&st).contains("no chunk refers to"), "{}", stats(&st));
        // The space is there again: another file fits.
        let again = d.join("again");
        std::fs::write(&again, mixed_data(300_000, 24)).unwrap();
        run(&mut pp(args!["dedup", "store", &again, "-s", &st])).ok();
        run(&mut pp(args!["dedup", "verify", "-s", &st])).ok();
    }
    // Bytes past the index's last chunk (a store killed after appending) are cut off by the next store.
    let st = d.join("st");
    run(&mut pp(args!["dedup", "store", &small, "-s", &st])).ok();
    let pack = st.join("packs/pack-000000");
    let kept = std::fs::read(&pack).unwrap();
    let mut f = std::fs::OpenOptions::new().append(true).open(&pack).unwrap();
    std::io::Write::write_all(&mut f, &[7u8; 5000]).unwrap();
    drop(f);
    assert!(stats(&st).contains("no chunk refers to: 5000"), "{}", stats(&st));
    let other = d.join("other");
    std::fs::write(&other, random_bytes(100_000, 25)).unwrap();
    run(&mut pp(args!["dedup", "store", &other, "-s", &st])).ok();
    assert_eq!(&std::fs::read(&pack).unwrap()[..kept.len() + 16], &[&kept[..], &std::fs::read(&other).unwrap()[..16]].concat()[..], "the new chunk where the stray bytes were");
    run(&mut pp(args!["dedup", "verify", "-s", &st])).ok();
    // A pack shorter than the chunks the index has in it: refused (appends would land elsewhere than recorded).
    let whole = std::fs::read(&pack).unwrap();
    std::fs::write(&pack, &whole[..whole.len() - 10]).unwrap();
    run(&mut pp(args!["dedup", "store", &other, "-s", &st, "-f"])).fails(6, &["the index has chunks in it up to byte", "nothing was written"]);
    std::fs::write(&pack, &whole).unwrap();
    // A pack past the index's last one, left by a killed store, is emptied before the next pack is begun there.
    let small_packs = d.join("small-packs");
    let big = d.join("big");
    std::fs::write(&big, random_bytes(600_000, 27)).unwrap();
    run(pp(args!["dedup", "store", &small, "-s", &small_packs]).env("PEERPATH_TEST_PACK_BYTES", "100000")).ok();
    let packs = small_packs.join("packs");
    let n = std::fs::read_dir(&packs).unwrap().count();
    std::fs::write(packs.join(format!("pack-{n:06}")), vec![9u8; 70_000]).unwrap();
    run(pp(args!["dedup", "store", &big, "-s", &small_packs]).env("PEERPATH_TEST_PACK_BYTES", "100000")).ok();
    run(&mut pp(args!["dedup", "verify", "-s", &small_packs])).ok();
    run(&mut pp(args!["dedup", "restore", &big, "-s", &small_packs, "-o", d.join("big.back")])).ok();
    assert_file_eq(&d.join("big.back"), &std::fs::read(&big).unwrap(), "restored across packs");
    // The index lost: refused, nothing made or changed.
    std::fs::remove_file(st.join("index.sqlite")).unwrap();
    let packs = std::fs::read(&pack).unwrap();
    run(&mut pp(args!["dedup", "store", &small, "-s", &st])).fails(6, &["index is missing", "put index.sqlite back", "nothing was written"]);
    assert!(!st.join("index.sqlite").exists());
    assert_eq!(std::fs::read(&pack).unwrap(), packs);
}

/// Runs that begin a store at once make one store: the one that fails (its file already there,
/// or other chunk sizes) never removes what the other stored. A new store whose only run failed
/// leaves nothing (here: its file system full).
#[test]
fn runs_that_begin_a_store_at_once_make_one_and_a_failed_one_leaves_nothing() {
    let test = "runs_that_begin_a_store_at_once_make_one_and_a_failed_one_leaves_nothing";
    let dir = scratch();
    let d = dir.path();
    let a = d.join("a");
    std::fs::write(&a, random_bytes(2_000_000, 31)).unwrap();
    for round in 0..6 {
        let st = d.join(format!("st{round}"));
        // Odd rounds: the second run asks other chunk sizes (a usage error once the store is made).
        let other: Vec<&str> = if round % 2 == 1 { vec!["--min", "4K", "--avg", "16K", "--max", "64K"] } else { vec![] };
        let outs: Vec<Out> = std::thread::scope(|s| {
            let first = s.spawn(|| run(&mut pp(args!["dedup", "store", &a, "-s", &st, "-q"])));
            let second = s.spawn(|| run(pp(args!["dedup", "store", &a, "-s", &st, "-q"]).args(&other)));
            vec![first.join().unwrap(), second.join().unwrap()]
        });
        let codes: Vec<Option<i32>> = outs.iter().map(|o| o.status.code()).collect();
        assert_eq!(codes.iter().filter(|&&c| c == Some(0)).count(), 1, "round {round}: one run stores, {codes:?}: {}{}", outs[0].stderr, outs[1].stderr);
        let list = run(&mut pp(args!["dedup", "list", "-s", &st])).ok().stdout_str();
        assert!(list.contains("2000000"), "round {round}: the file stored is in the store: {list}");
        run(&mut pp(args!["dedup", "verify", "-s", &st])).ok();
        run(&mut pp(args!["dedup", "restore", &a, "-s", &st, "-o", d.join(format!("back{round}"))])).ok();
        assert_file_eq(&d.join(format!("back{round}")), &std::fs::read(&a).unwrap(), "restored");
    }
    if let Some(fs) = TmpfsMount::new(test, "1m") {
        let st = fs.dir.join("new");
        run(&mut pp(args!["dedup", "store", &a, "-s", &st])).fails(11, &["No space left"]);
        assert!(!st.exists(), "a new store whose run failed is not left: {:?}", std::fs::read_dir(&st).map(|d| d.flatten().map(|e| e.file_name()).collect::<Vec<_>>()));
    }
}

/// A disk that fills while the index grows (the pack's append fitted, SQLite's log did not)
/// is a full disk, exit 11, and the append is taken back: it was exit 6 ("the store's
/// index: database or disk is full", a damaged store) with 1 MB the index never named left in
/// the pack, and the disk still full.
#[test]
fn a_disk_that_fills_under_the_index_is_a_full_disk_and_the_pack_is_cut_back() {
    let test = "a_disk_that_fills_under_the_index_is_a_full_disk_and_the_pack_is_cut_back";
    let Some(fs) = TmpfsMount::new(test, "3m") else { return };
    let dir = scratch();
    let d = dir.path();
    let (r1, r2) = (d.join("r1"), d.join("r2"));
    std::fs::write(&r1, random_bytes(1 << 20, 41)).unwrap();
    std::fs::write(&r2, random_bytes(1_000_000, 42)).unwrap();
    let st = fs.dir.join("st");
    run(&mut pp(args!["dedup", "store", &r1, "-s", &st, "-q"])).ok();
    let pack = st.join("packs/pack-000000");
    let before = std::fs::read(&pack).unwrap();
    // Room for the new chunks and a few pages more, not for the index's log.
    let free = run(std::process::Command::new("stat").args(["-f", "-c", "%a %S"]).arg(&fs.dir)).ok().stdout_str();
    let (blocks, size) = free.trim().split_once(' ').map(|(a, b)| (a.parse::<u64>().unwrap(), b.parse::<u64>().unwrap())).unwrap();
    std::fs::write(fs.dir.join("fill"), vec![0u8; (blocks * size - 1_000_000 - 45_000) as usize]).unwrap();
    run(&mut pp(args!["dedup", "store", &r2, "-s", &st])).fails(11, &["No space left"]);
    assert!(std::fs::read(&pack).unwrap() == before, "the pack cut back to what the index knows");
    std::fs::remove_file(fs.dir.join("fill")).unwrap();
    assert!(!stats(&st).contains("no chunk refers to"), "{}", stats(&st));
    run(&mut pp(args!["dedup", "verify", "-s", &st])).ok();
}

/// A store on a read-only file system (a backup mounted read-only) is read
/// as any other: SQLite cannot make its log's shared-memory file there.
#[test]
fn a_store_on_a_read_only_mount_is_listed_verified_and_restored() {
    let dir = scratch();
    let d = dir.path();
    if !running_as_root(d) || tool("mount").is_none() {
        eprintln!("SKIPPED a_store_on_a_read_only_mount_is_listed_verified_and_restored: a bind mount needs root and `mount`");
        return;
    }
    let src = d.join("a");
    let data = mixed_data(1 << 20, 26);
    std::fs::write(&src, &data).unwrap();
    let st = d.join("st");
    run(&mut pp(args!["dedup", "store", &src, "-s", &st])).ok();
    let ro = d.join("ro");
    std::fs::create_dir(&ro).unwrap();
    struct Unmount(PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = std::process::Command::new("umount").arg(&self.0).status();
        }
    }
    assert!(std::process::Command::new("mount").arg("--bind").arg(&st).arg(&ro).status().unwrap().success());
    let _mounted = Unmount(ro.clone());
    assert!(std::process::Command::new("mount").args(["-o", "remount,bind,ro"]).arg(&ro).status().unwrap().success());
    assert!(std::fs::write(ro.join("probe"), b"").is_err(), "the mount is read-only");
    assert!(run(&mut pp(args!["dedup", "list", "-s", &ro])).ok().stdout_str().contains("1048576"));
    run(&mut pp(args!["dedup", "verify", "-s", &ro])).ok();
    assert!(stats(&ro).contains("files: 1"));
    let back = d.join("back");
    run(&mut pp(args!["dedup", "restore", &src, "-s", &ro, "-o", &back])).ok();
    assert_file_eq(&back, &data, "restored from a read-only store");
    run(&mut pp(args!["dedup", "store", &back, "-s", &ro])).fails(11, &["Read-only file system"]);
}

/// `--hash sha256`: the CPU and an emulated CSP make the same store, which
/// restores exactly and dedups as BLAKE3's does; an independent reader
/// (Python's sqlite3 and hashlib) finds every chunk of the index in its
/// pack at its offset, with the SHA-256 the index names, and the chunks of
/// each file adding up to it.
#[test]
fn sha256_stores_are_the_cpus_on_a_device_and_an_independent_reader_agrees() {
    let dir = scratch();
    let d = dir.path();
    let a = mixed_data(5 << 20, 8);
    let b = edited_copy(&a);
    let (sa, sb) = (d.join("a"), d.join("b"));
    std::fs::write(&sa, &a).unwrap();
    std::fs::write(&sb, &b).unwrap();
    let sizes = ["--avg", "32K", "--min", "8K", "--max", "128K"];
    let (cpu, emu, blake) = (d.join("cpu"), d.join("emu"), d.join("blake"));
    run(pp(args!["dedup", "store", &sa, &sb, "-s", &cpu, "--hash", "sha256"]).args(sizes)).ok();
    run(pp(args!["dedup", "store", &sa, &sb, "-s", &emu, "--hash", "sha256", "--engine", "emulated", "--no-fallback"]).args(sizes)).ok();
    run(pp(args!["dedup", "store", &sa, &sb, "-s", &blake]).args(sizes)).ok();
    assert_eq!(std::fs::read(cpu.join("packs/pack-000000")).unwrap(), std::fs::read(emu.join("packs/pack-000000")).unwrap(), "the same chunks, in the same order");
    let (cs, es, bs) = (stats(&cpu), stats(&emu), stats(&blake));
    assert_eq!(cs.replace(cpu.to_str().unwrap(), "S"), es.replace(emu.to_str().unwrap(), "S"));
    let ratio = |s: &str| s.split("deduplication ratio: ").nth(1).unwrap().split(' ').next().unwrap().to_string();
    assert_eq!(ratio(&cs), ratio(&bs), "the same chunks whatever the fingerprint: {cs} / {bs}");
    assert!(cs.contains("sha256") || cs.contains("SHA-256"), "{cs}");
    for (name, want) in [(&sb, &b), (&sa, &a)] {
        let out = d.join("back");
        run(&mut pp(args!["dedup", "restore", name, "-s", &emu, "-o", &out, "-f"])).ok();
        assert_file_eq(&out, want, "restored from the device's SHA-256 store");
    }
    run(&mut pp(args!["dedup", "verify", "-s", &emu])).ok();
    let Some(py) = tools_or_skip("the SHA-256 store against Python's hashlib", &["python3"]) else { return };
    let script = r#"
import hashlib, os, sqlite3, sys
store = sys.argv[1]
db = sqlite3.connect("file:" + os.path.join(store, "index.sqlite") + "?mode=ro", uri=True)
n = 0
for digest, pack, offset, length, codec, size in db.execute("SELECT digest, pack, offset, len, codec, size FROM chunks"):
    assert codec == 0 and size == length, (codec, size, length)
    with open(os.path.join(store, "packs", "pack-%06d" % pack), "rb") as f:
        f.seek(offset)
        data = f.read(length)
    assert len(data) == length and hashlib.sha256(data).digest() == bytes(digest), (pack, offset)
    n += 1
files = sorted(size for (size,) in db.execute("SELECT size FROM files"))
print(n, *files)
"#;
    let o = String::from_utf8(sys(&py[0], &[std::ffi::OsStr::new("-c"), std::ffi::OsStr::new(script), emu.as_os_str()], None)).unwrap();
    let words: Vec<u64> = o.split_whitespace().map(|w| w.parse().unwrap()).collect();
    let mut sizes = [a.len() as u64, b.len() as u64];
    sizes.sort();
    assert!(words[0] > 100, "{o}");
    assert_eq!(&words[1..], &sizes[..], "{o}");
}

/// The number just after `label` in a report.
fn number_after(text: &str, label: &str) -> String {
    let rest = text.split(label).nth(1).unwrap_or_else(|| panic!("no {label:?} in: {text}"));
    rest.split(|c: char| !(c.is_ascii_digit() || c == '.')).next().unwrap().to_string()
}

/// `--json`: `dedup store` (a `dedup-store`: each file's chunks and new
/// chunks as its text line says them; on an emulated CSP the pass with its
/// measured host copies), `restore` (a `dedup-restore`) and `stats` (a
/// `dedup-stats`: the text's figures and ratios); a store stopped by an
/// error reports what it stored before it, then exits with the error's
/// code; `restore -o -` takes no --json (the file goes to standard output).
#[test]
fn json_reports_say_what_the_text_says() {
    let dir = scratch();
    let d = dir.path();
    let a = mixed_data(5 << 20, 7);
    let b = edited_copy(&a);
    let (sa, sb) = (d.join("a"), d.join("b"));
    std::fs::write(&sa, &a).unwrap();
    std::fs::write(&sb, &b).unwrap();
    let sizes = args!["--min", "8K", "--avg", "32K", "--max", "128K"];
    // The same store made twice, with and without --json: the same figures.
    let (text_st, json_st) = (d.join("t"), d.join("j"));
    let text = run(pp(args!["dedup", "store", &sa, &sb, "-s", &text_st]).args(&sizes)).ok().stdout_str();
    let v = run(pp(args!["dedup", "store", &sa, &sb, "-s", &json_st, "--json"]).args(&sizes)).ok().json();
    assert_eq!((v["complete"].as_bool(), v["error"].is_null(), v["hash"].as_str(), v["engine"].as_str()), (Some(true), true, Some("blake3"), Some("cpu")), "{v}");
    assert_eq!(v["chunking"], serde_json::json!({ "min_bytes": 8192, "avg_bytes": 32768, "max_bytes": 131072 }));
    assert_eq!(v["fallbacks"], serde_json::json!([]));
    let files = v["files"].as_array().unwrap();
    assert_eq!(files.len(), 2);
    for ((line, f), (src, data)) in text.lines().zip(files).zip([(&sa, &a), (&sb, &b)]) {
        let chunks = line.split(" chunks, ").next().unwrap().rsplit(' ').next().unwrap();
        let new = number_after(line, " new (");
        assert_eq!((f["chunks"].to_string(), f["new_chunks"].to_string()), (chunks.to_string(), new), "{line}\n{f}");
        let found = f["found_chunks"].as_u64().unwrap();
        assert_eq!(line.contains(&format!(", {found} found from what followed them")), found > 0, "{line}\n{f}");
        assert_eq!((f["source"].as_str(), f["bytes"].as_u64(), f["engine"].as_str()), (src.to_str(), Some(data.len() as u64), Some("cpu")), "{f}");
        assert_eq!(f["pack_bytes"], f["new_chunk_bytes"], "nothing compressed: {f}");
        assert!(f["threads"].as_u64().is_some_and(|t| t >= 1) && f["device_pass"].is_null(), "{f}");
    }
    assert!(files[1]["new_chunks"].as_u64().unwrap() * 4 < files[0]["chunks"].as_u64().unwrap(), "b shares most of a's chunks: {v}");
    // Stats: the text's numbers and ratio.
    let s = stats(&text_st);
    let j = run(&mut pp(args!["dedup", "stats", "-s", &json_st, "--json"])).ok().json();
    for (label, key) in [("logical bytes: ", "logical_bytes"), ("chunk references: ", "chunk_references"), ("unique chunks: ", "unique_chunks"), ("stored bytes: ", "stored_bytes"), ("files: ", "files")] {
        assert_eq!(number_after(&s, label), j[key].to_string(), "{key}: {s}\n{j}");
    }
    assert_eq!(j["logical_bytes"].as_u64(), Some((a.len() + b.len()) as u64));
    assert_eq!(number_after(&s, "deduplication ratio: "), format!("{:.3}", j["dedup_ratio"].as_f64().unwrap()), "{s}\n{j}");
    assert!(j["dedup_ratio"].as_f64().unwrap() > 1.7, "{j}");
    assert_eq!((j["compression_ratio"].as_f64(), j["unreferenced_pack_bytes"].as_u64()), (Some(1.0), Some(0)), "{j}");
    assert!(!s.contains("compression ratio"), "{s}");
    // Restore: the file, and its chunks as the store counted them.
    let back = d.join("b.back");
    let r = run(&mut pp(args!["dedup", "restore", &sb, "-s", &json_st, "-o", &back, "--json"])).ok().json();
    assert_file_eq(&back, &b, "restored with --json");
    assert_eq!((r["bytes"].as_u64(), r["chunks"].as_u64(), r["compressed_chunks"].as_u64(), r["pack_bytes"].as_u64()), (Some(b.len() as u64), files[1]["chunks"].as_u64(), Some(0), Some(b.len() as u64)), "{r}");
    assert_eq!((r["output"].as_str(), r["hash"].as_str()), (back.to_str(), Some("blake3")), "{r}");
    let o = run(&mut pp(args!["dedup", "restore", &sb, "-s", &json_st, "-o", "-", "--json"])).fails(2, &["--json", "-o -"]);
    assert!(o.stdout.is_empty());
    // An emulated CSP compressing new chunks: its pass, the figures its text line gives.
    let (emu_t, emu_j) = (d.join("et"), d.join("ej"));
    let line = run(pp(args!["dedup", "store", &sa, "-s", &emu_t, "--engine", "emulated", "--compress", "1", "--no-fallback"]).args(&sizes)).ok().stdout_str();
    let v = run(pp(args!["dedup", "store", &sa, "-s", &emu_j, "--engine", "emulated", "--compress", "1", "--no-fallback", "--json"]).args(&sizes)).ok().json();
    let f = &v["files"][0];
    let pass = &f["device_pass"];
    let (copied, payload) = host_copies(&line);
    assert_eq!((pass["host_copies"]["bytes"].as_u64(), pass["host_copies"]["payload_bytes"].as_u64(), pass["result_bytes"].as_u64()), (Some(copied), Some(payload), Some(copied)), "the boundaries and digests, and nothing else: {line}\n{v}");
    assert_eq!(payload, a.len() as u64);
    assert_eq!(pass["commands"].to_string(), number_after(&line, "into its memory, "), "{line}");
    assert_eq!((f["engine"].as_str(), f["provenance"].as_str(), pass["gpu"].as_bool(), v["compress_level"].as_u64()), (Some("emulated"), Some("measured on emulated devices"), Some(false), Some(1)), "{v}");
    assert!(f["pack_bytes"].as_u64() < f["new_chunk_bytes"].as_u64(), "new chunks compressed: {f}");
    let s = stats(&emu_t);
    let j = run(&mut pp(args!["dedup", "stats", "-s", &emu_j, "--json"])).ok().json();
    assert_eq!(number_after(&s, "compression ratio: "), format!("{:.3}", j["compression_ratio"].as_f64().unwrap()), "{s}\n{j}");
    assert_eq!(number_after(&s, "overall: "), format!("{:.3}", j["overall_ratio"].as_f64().unwrap()), "{s}\n{j}");
    // Stopped by an error (a name already stored): the report of what was stored before it, then the error's exit code.
    let sc = d.join("c");
    std::fs::write(&sc, mixed_data(1 << 20, 9)).unwrap();
    let o = run(&mut pp(args!["dedup", "store", &sc, &sa, "-s", &json_st, "--json"])).fails(4, &["exists"]);
    let v = o.json();
    assert_eq!((v["complete"].as_bool(), v["files"].as_array().map(Vec::len), v["files"][0]["source"].as_str()), (Some(false), Some(1), sc.to_str()), "{v}");
    assert!(v["error"].as_str().is_some_and(|e| e.contains("exists")), "{v}");
    assert!(run(&mut pp(args!["dedup", "list", "-s", &json_st])).ok().stdout_str().contains(sc.to_str().unwrap()), "what the report lists is in the store");
    // Stopped before any file was stored: no report, as the text prints no line.
    let o = run(&mut pp(args!["dedup", "store", &sa, "-s", &json_st, "--json"])).fails(4, &["exists"]);
    assert!(o.stdout.is_empty(), "{}", o.stdout_str());
}

/// `restore -o -` into a full disk says exactly how many bytes reached standard output (it
/// counted whole chunks written before the failing one, and bytes still buffered).
#[test]
fn a_restore_to_a_full_standard_output_says_how_many_bytes_went_out() {
    let test = "a_restore_to_a_full_standard_output_says_how_many_bytes_went_out";
    let Some(fs) = TmpfsMount::new(test, "1m") else { return };
    let dir = scratch();
    let d = dir.path();
    let a = d.join("a");
    std::fs::write(&a, mixed_data(3 << 20, 11)).unwrap();
    let st = d.join("st");
    run(&mut pp(args!["dedup", "store", &a, "-s", &st, "-q"])).ok();
    let out = fs.dir.join("out");
    let o = pp(args!["dedup", "restore", &a, "-s", &st, "-o", "-"]).stdout(std::fs::File::create(&out).unwrap()).output().unwrap();
    let o = Out { status: o.status, stdout: Vec::new(), stderr: String::from_utf8_lossy(&o.stderr).into_owned(), what: "dedup restore -o - > full".into() };
    let went = std::fs::metadata(&out).unwrap().len();
    assert!(went > 0, "something fits");
    let o = o.fails(11, &["No space left"]);
    assert!(o.stderr.contains(&format!("after {went} bytes had been written")), "{went} bytes are there: {}", o.stderr);
}

/// `peerpath dedup ARGS -s STORE`, run in `cwd`, its packs rolled over past `pack_bytes`.
fn dedup_in(store: &Path, cwd: &Path, pack_bytes: &str, args: &[&str]) -> std::process::Command {
    let mut c = pp(["dedup"].iter().chain(args));
    c.arg("-s").arg(store).current_dir(cwd).env("PEERPATH_TEST_PACK_BYTES", pack_bytes);
    c
}

/// The packs' files: names and contents.
fn packs_of(st: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    snapshot(&st.join("packs"))
}

fn pack_bytes_on_disk(st: &Path) -> u64 {
    std::fs::read_dir(st.join("packs")).unwrap().map(|e| e.unwrap().metadata().unwrap().len()).sum()
}

/// `dedup remove` takes names out (all named or none); `gc --dry-run` changes nothing; `gc`
/// rewrites packs with unused bytes (compressed and raw chunks alike), removes those with
/// nothing live, and packs a killed gc or store left; every file left restores exactly, and
/// the store takes new files after it.
#[test]
fn removed_files_space_comes_back_with_gc_and_the_rest_restores_exactly() {
    let dir = scratch();
    let d = dir.path();
    let a = mixed_data(3 << 20, 21);
    let (b, c) = (edited_copy(&a), mixed_data(2 << 20, 22));
    for (n, v) in [("a", &a), ("b", &b), ("c", &c)] {
        std::fs::write(d.join(n), v).unwrap();
    }
    let st = d.join("st");
    let dd = |extra: &[&str]| dedup_in(&st, d, "300000", extra);
    run(&mut dd(&["store", "a", "b", "--min", "4K", "--avg", "16K", "--max", "64K"])).ok();
    run(&mut dd(&["store", "c", "--compress", "1"])).ok();
    let j = run(&mut dd(&["stats", "--json"])).ok().json();
    assert!(j["stored_bytes"].as_u64() < j["unique_chunk_bytes"].as_u64(), "c's chunks are compressed: {j}");
    // A name the store does not hold: nothing is removed.
    run(&mut dd(&["remove", "a", "nope"])).fails(3, &["nope", "not in the store", "nothing was removed"]);
    assert!(run(&mut dd(&["list"])).ok().stdout_str().contains("a\t"), "a stays");
    run(&mut dd(&["remove", "a", "a"])).fails(2, &["named twice"]);
    let o = run(&mut dd(&["remove", "a", "c", "--json"])).ok().json();
    assert_eq!((o["files"].as_u64(), o["logical_bytes"].as_u64()), (Some(2), Some((a.len() + c.len()) as u64)), "{o}");
    let before = run(&mut dd(&["stats", "--json"])).ok().json();
    let dead = before["unreferenced_chunk_bytes"].as_u64().unwrap();
    assert!(dead > 1 << 20, "c's chunks and a's own: {before}");
    assert!(stats(&st).contains("dedup gc"), "stats says what takes the space back");
    // What a killed store leaves (a tail on the last pack) and a killed gc (a pack past the last).
    let last = std::fs::read_dir(st.join("packs")).unwrap().map(|e| e.unwrap().path()).max().unwrap();
    std::fs::OpenOptions::new().append(true).open(&last).unwrap().write_all(&[9u8; 5000]).unwrap();
    std::fs::write(st.join("packs/pack-000900"), vec![7u8; 12345]).unwrap();
    let (packs, names) = (packs_of(&st), names_in(&st));
    let n = run(&mut dd(&["gc", "-n", "--min-unused", "0", "--json"])).ok().json();
    assert_eq!(n["dry_run"].as_bool(), Some(true));
    assert!(n["packs_rewritten"].as_u64() > Some(0) && n["packs_removed"].as_u64() > Some(0), "{n}");
    assert!(packs_of(&st) == packs && names_in(&st) == names, "--dry-run changes nothing");
    let g = run(&mut dd(&["gc", "--min-unused", "0", "--json"])).ok().json();
    assert_eq!(g["chunk_bytes_dropped"].as_u64(), Some(dead), "{g}");
    for k in ["packs_rewritten", "packs_removed", "live_bytes_copied", "chunks_dropped", "chunk_bytes_dropped", "packs_after", "pack_bytes_after", "bytes_reclaimed"] {
        assert_eq!(g[k], n[k], "{k}: the dry run said what gc did: {n}\n{g}");
    }
    let after = run(&mut dd(&["stats", "--json"])).ok().json();
    assert_eq!((after["unreferenced_chunks"].as_u64(), after["unreferenced_pack_bytes"].as_u64()), (Some(0), Some(0)), "{after}");
    assert_eq!(pack_bytes_on_disk(&st), after["stored_bytes"].as_u64().unwrap(), "the packs hold the live chunks and nothing else: {after}");
    assert_eq!(g["pack_bytes_after"].as_u64(), after["stored_bytes"].as_u64(), "{g}");
    assert!(!st.join("packs/pack-000900").exists());
    assert_eq!(after["logical_bytes"].as_u64(), Some(b.len() as u64));
    run(&mut dd(&["verify"])).ok();
    run(&mut dd(&["restore", "b", "-o", "b.back"])).ok();
    assert_file_eq(&d.join("b.back"), &b, "b after gc");
    // Nothing left to take back: a second gc changes nothing.
    let packs = packs_of(&st);
    let again = run(&mut dd(&["gc", "--min-unused", "0", "--json"])).ok().json();
    assert_eq!((again["packs_rewritten"].as_u64(), again["packs_removed"].as_u64()), (Some(0), Some(0)), "{again}");
    assert!(packs_of(&st) == packs);
    // The store goes on: a's chunks come back (b's are found), c's too, compressed.
    run(&mut dd(&["store", "a"])).ok();
    run(&mut dd(&["store", "c", "--compress", "1"])).ok();
    for (n, v) in [("a", &a), ("b", &b), ("c", &c)] {
        let out = format!("{n}.again");
        run(&mut dd(&["restore", n, "-o", &out])).ok();
        assert_file_eq(&d.join(&out), v, n);
    }
    run(&mut dd(&["verify"])).ok();
    // Under the default share, packs with few unused bytes stay, and gc says so.
    run(&mut dd(&["store", "-f", "c"])).ok(); // the same bytes: nothing unused
    std::fs::write(d.join("c"), [&c[..100_000], b"a small edit".as_slice(), &c[100_000..]].concat()).unwrap();
    run(&mut dd(&["store", "-f", "c", "--compress", "1"])).ok();
    let t = run(&mut dd(&["gc"])).ok().stdout_str();
    assert!(t.contains("kept 1 pack with") && t.contains("under --min-unused 10 %"), "{t}");
}

/// A live chunk that does not match its fingerprint stops gc before anything changes (no new
/// pack, the index as it was), naming it; a store that is not one is refused.
#[test]
fn gc_checks_each_chunk_it_copies_and_changes_nothing_when_one_is_damaged() {
    let dir = scratch();
    let d = dir.path();
    let (x, a) = (mixed_data(60_000, 31), mixed_data(1 << 20, 32));
    std::fs::write(d.join("x"), &x).unwrap();
    std::fs::write(d.join("a"), &a).unwrap();
    let st = d.join("st");
    let dd = |extra: &[&str]| dedup_in(&st, d, "300000", extra);
    run(&mut dd(&["store", "x", "a", "--min", "4K", "--avg", "16K", "--max", "64K"])).ok();
    run(&mut dd(&["remove", "x"])).ok();
    // Pack 0 holds x (no file refers to it now) and then a's first chunks: its last byte is a's.
    let first = st.join("packs/pack-000000");
    let mut bytes = std::fs::read(&first).unwrap();
    *bytes.last_mut().unwrap() ^= 0x40;
    std::fs::write(&first, &bytes).unwrap();
    let (packs, listed) = (packs_of(&st), run(&mut dd(&["list"])).ok().stdout_str());
    let stats_before = run(&mut dd(&["stats", "--json"])).ok().json();
    run(&mut dd(&["gc", "--min-unused", "0"])).fails(6, &["pack 0", "does not match", "gc changed nothing"]);
    assert!(packs_of(&st) == packs, "no pack made, changed or removed");
    assert_eq!(run(&mut dd(&["list"])).ok().stdout_str(), listed);
    let mut stats_after = run(&mut dd(&["stats", "--json"])).ok().json();
    stats_after["store_running"] = stats_before["store_running"].clone();
    assert_eq!(stats_after, stats_before, "the index as it was");
    run(&mut pp(args!["dedup", "gc", "-s", d.join("nowhere")])).fails(3, &["not a dedup store"]);
}

/// gc removes the old packs only once no reader holds the store (a restore or verify running
/// from before its commit could be about to read them): it waits, and says so. A restore into a
/// pipe nobody reads yet holds it; so does any process's shared flock on the packs directory.
#[test]
fn gc_waits_for_readers_before_removing_old_packs() {
    use std::io::{BufRead, Read};
    use std::os::fd::AsRawFd;
    let dir = scratch();
    let d = dir.path();
    let (a, c) = (mixed_data(1 << 20, 41), mixed_data(1 << 20, 42));
    std::fs::write(d.join("a"), &a).unwrap();
    std::fs::write(d.join("c"), &c).unwrap();
    let st = d.join("st");
    run(pp(args!["dedup", "store", "a", "c", "-s", &st]).current_dir(d)).ok();
    run(pp(args!["dedup", "remove", "a", "-s", &st]).current_dir(d)).ok();
    let old = st.join("packs/pack-000000");
    // A restore of c to a pipe: once its first byte is out it holds the store, and it stalls
    // (1 MiB, more than a pipe holds) until the pipe is read.
    let mut restore = pp(args!["dedup", "restore", "c", "-s", &st, "-o", "-"]).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::null()).spawn().unwrap();
    let mut out = restore.stdout.take().unwrap();
    let mut first = [0u8; 1];
    out.read_exact(&mut first).unwrap();
    let mut gc = pp(args!["dedup", "gc", "-s", &st, "--min-unused", "0"]).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::piped()).spawn().unwrap();
    let mut err = std::io::BufReader::new(gc.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    assert!(line.contains("waiting for readers"), "{line}");
    assert!(old.exists(), "the old pack stays while the restore reads the store");
    let mut rest = Vec::new();
    out.read_to_end(&mut rest).unwrap();
    assert!(wait_deadline(&mut restore, HANG_DEADLINE, "restore").success());
    assert!([&first[..], &rest[..]].concat() == c, "the restore gave c whole");
    assert!(wait_deadline(&mut gc, HANG_DEADLINE, "gc").success());
    assert!(!old.exists(), "and goes once it is done");
    // A shared flock on the packs directory, as every reader takes it: gc waits for it too.
    run(pp(args!["dedup", "store", "a", "-s", &st]).current_dir(d)).ok();
    run(pp(args!["dedup", "remove", "a", "-s", &st]).current_dir(d)).ok();
    let packs = std::fs::File::open(st.join("packs")).unwrap();
    // SAFETY: flock on a descriptor this test owns, released when it closes.
    assert_eq!(unsafe { libc::flock(packs.as_raw_fd(), libc::LOCK_SH) }, 0);
    let mut gc = pp(args!["dedup", "gc", "-s", &st, "--min-unused", "0"]).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::piped()).spawn().unwrap();
    let mut err = std::io::BufReader::new(gc.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    assert!(line.contains("waiting for readers"), "{line}");
    drop(packs);
    assert!(wait_deadline(&mut gc, HANG_DEADLINE, "gc").success());
    run(&mut pp(args!["dedup", "restore", "c", "-s", &st, "-o", d.join("c.back")])).ok();
    assert_file_eq(&d.join("c.back"), &c, "c after gc");
}

/// kill -9 at many points of a gc: every file left restores exactly, and the next gc leaves the
/// packs holding exactly the live chunks.
#[test]
fn a_gc_killed_at_any_instant_loses_nothing() {
    let dir = scratch();
    let d = dir.path();
    let st = d.join("st");
    let files: Vec<Vec<u8>> = (0..6).map(|i| mixed_data(3 << 20, 50 + i)).collect();
    for (i, f) in files.iter().enumerate() {
        std::fs::write(d.join(format!("f{i}")), f).unwrap();
    }
    let dd = |extra: &[&str]| dedup_in(&st, d, "1000000", extra);
    run(&mut dd(&["store", "f0", "f1", "f2", "f3", "f4", "f5", "--min", "4K", "--avg", "16K", "--max", "64K"])).ok();
    for (k, delay) in [0u64, 5, 15, 30, 60, 120].into_iter().enumerate() {
        // Every other file goes, one a round, so each gc has packs to rewrite.
        if k % 2 == 0 && k / 2 < 3 {
            run(&mut dd(&["remove", &format!("f{}", k)])).ok();
        }
        let mut child = dd(&["gc", "--min-unused", "0"]).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null()).spawn().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(delay));
        // SAFETY: kill(2) with our own child's pid.
        unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
        wait_deadline(&mut child, HANG_DEADLINE, "a killed gc");
        run(&mut dd(&["verify"])).ok();
        for i in [1, 3, 5] {
            let out = format!("f{i}.back");
            run(&mut dd(&["restore", &format!("f{i}"), "-o", &out, "-f"])).ok();
            assert_file_eq(&d.join(&out), &files[i], &format!("f{i} after a gc killed at {delay} ms"));
        }
    }
    run(&mut dd(&["gc", "--min-unused", "0"])).ok();
    let j = run(&mut dd(&["stats", "--json"])).ok().json();
    assert_eq!((j["unreferenced_chunks"].as_u64(), j["unreferenced_pack_bytes"].as_u64(), j["files"].as_u64()), (Some(0), Some(0), Some(3)), "{j}");
    assert_eq!(pack_bytes_on_disk(&st), j["stored_bytes"].as_u64().unwrap());
}

/// A store whose packs directory is gone: stats gives its figures and then names the packs the
/// index misses (exit 6, not a write error), and a store into it is refused without making the
/// directory or a pack (the damage stays as it was found).
#[test]
fn a_store_without_its_packs_directory_is_damage_and_nothing_is_made() {
    let dir = scratch();
    let d = dir.path();
    std::fs::write(d.join("f"), mixed_data(300_000, 61)).unwrap();
    std::fs::write(d.join("g"), mixed_data(300_000, 62)).unwrap();
    let st = d.join("st");
    run(pp(args!["dedup", "store", "f", "-s", &st]).current_dir(d)).ok();
    std::fs::remove_dir_all(st.join("packs")).unwrap();
    let o = run(&mut pp(args!["dedup", "stats", "-s", &st])).fails(6, &["packs shorter than the index says", "pack-000000 holds 0 bytes"]);
    assert!(o.stdout_str().contains("files: 1"), "the figures come first: {}", o.stdout_str());
    run(pp(args!["dedup", "store", "g", "-s", &st]).current_dir(d)).fails(6, &["pack-000000", "the pack is missing", "nothing was written"]);
    assert!(!st.join("packs").exists(), "nothing made");
    run(&mut pp(args!["dedup", "verify", "-s", &st])).fails(6, &["cannot be opened"]);
}

/// gc stopped dead (abort: no destructor or handler runs, as SIGKILL leaves things) at each of
/// its crash windows: after its new packs are synced and before the commit, after the commit and
/// before the old packs go, and between two unlinks. Each time every file left restores and
/// verifies, and the next gc leaves the packs holding exactly the live chunks.
#[test]
fn a_gc_stopped_dead_at_each_step_loses_nothing() {
    let dir = scratch();
    let d = dir.path();
    let st = d.join("st");
    let files: Vec<Vec<u8>> = (0..3).map(|i| mixed_data(2 << 20, 70 + i)).collect();
    for (i, f) in files.iter().enumerate() {
        std::fs::write(d.join(format!("f{i}")), f).unwrap();
    }
    let dd = |extra: &[&str]| dedup_in(&st, d, "500000", extra);
    run(&mut dd(&["store", "f0", "f1", "f2", "--min", "4K", "--avg", "16K", "--max", "64K"])).ok();
    for step in ["before-commit", "after-commit", "mid-unlink"] {
        run(&mut dd(&["remove", "f1"])).ok();
        let o = dd(&["gc", "--min-unused", "0"]).env("PEERPATH_TEST_GC_ABORT", step).output().unwrap();
        assert_eq!(std::os::unix::process::ExitStatusExt::signal(&o.status), Some(libc::SIGABRT), "{step}: gc stopped there: {}", String::from_utf8_lossy(&o.stderr));
        run(&mut dd(&["verify"])).ok();
        let j = run(&mut dd(&["stats", "--json"])).ok().json();
        assert!(j["unreferenced_pack_bytes"].as_u64() > Some(0), "{step}: what the stopped gc left is counted: {j}");
        for i in [0, 2] {
            let out = format!("f{i}.back");
            run(&mut dd(&["restore", &format!("f{i}"), "-o", &out, "-f"])).ok();
            assert_file_eq(&d.join(&out), &files[i], &format!("f{i} after gc stopped {step}"));
        }
        run(&mut dd(&["gc", "--min-unused", "0"])).ok();
        let j = run(&mut dd(&["stats", "--json"])).ok().json();
        assert_eq!((j["unreferenced_chunks"].as_u64(), j["unreferenced_pack_bytes"].as_u64()), (Some(0), Some(0)), "{step}: {j}");
        assert_eq!(pack_bytes_on_disk(&st), j["stored_bytes"].as_u64().unwrap(), "{step}");
        run(&mut dd(&["store", "f1"])).ok();
    }
    run(&mut dd(&["restore", "f1", "-o", "f1.back"])).ok();
    assert_file_eq(&d.join("f1.back"), &files[1], "f1 stored again");
}

/// A pack cut short, or gone, whose chunks no file refers to any more (their files removed): gc
/// drops those chunks without reading them and says that their data was not there, whatever
/// becomes of their pack (kept, removed, or already gone), and the store is whole again. A chunk
/// a file still refers to past a pack's end stops gc before anything changes, naming it.
#[test]
fn gc_drops_unreferenced_chunks_of_a_damaged_pack_unread_and_says_so() {
    let dir = scratch();
    let d = dir.path();
    // Random bytes: every chunk new, so the first pack holds a's bytes, then x's.
    let (a, x) = (random_bytes(200_000, 81), random_bytes(2 << 20, 82));
    std::fs::write(d.join("a"), &a).unwrap();
    std::fs::write(d.join("x"), &x).unwrap();
    let st = d.join("st");
    let dd = |extra: &[&str]| dedup_in(&st, d, "300000", extra);
    run(&mut dd(&["store", "a", "x", "--min", "4K", "--avg", "16K", "--max", "64K"])).ok();
    run(&mut dd(&["remove", "x"])).ok();
    let packs: Vec<PathBuf> = {
        let mut p: Vec<PathBuf> = std::fs::read_dir(st.join("packs")).unwrap().map(|e| e.unwrap().path()).collect();
        p.sort();
        p
    };
    assert!(packs.len() >= 4, "x spans several packs: {packs:?}");
    let first = packs[0].clone();
    let set_len = |p: &Path, len: u64| std::fs::OpenOptions::new().write(true).open(p).unwrap().set_len(len).unwrap();
    // A chunk a refers to past the end: refused, nothing changed.
    let whole = std::fs::read(&first).unwrap();
    set_len(&first, 150_000);
    let before = packs_of(&st);
    run(&mut dd(&["gc", "--min-unused", "0"])).fails(6, &["pack-000000 is 150000 bytes", "a chunk files refer to", "gc changed nothing"]);
    assert!(packs_of(&st) == before, "no pack made, changed or removed");
    std::fs::write(&first, &whole).unwrap();
    // Only x's chunks lost: the first pack cut just past a's bytes, another cut short, the last gone.
    set_len(&first, a.len() as u64 + 1000);
    set_len(&packs[2], 1000);
    std::fs::remove_file(packs.last().unwrap()).unwrap();
    run(&mut dd(&["stats"])).fails(6, &["packs shorter than the index says"]);
    let n = run(&mut dd(&["gc", "-n", "--json"])).ok().json();
    let damaged = n["damaged_chunks_dropped"].as_u64().unwrap();
    assert!(damaged > 3 && damaged < n["chunks_dropped"].as_u64().unwrap(), "{n}");
    let t = run(&mut dd(&["gc", "-n"])).ok().stdout_str();
    assert!(t.contains(&format!("{damaged} of the chunks no file refers to had no data left to read")) && t.contains("would be dropped without reading them"), "{t}");
    let g = run(&mut dd(&["gc"])).ok().stdout_str();
    assert!(g.contains(&format!("{damaged} of the chunks no file refers to had no data left to read")) && g.contains("were dropped without reading them"), "{g}");
    assert!(g.contains("kept 1 pack with 1000 unused bytes"), "the first pack stays (a is in it), its lost chunks leave the index: {g}");
    let j = run(&mut dd(&["stats", "--json"])).ok().json();
    assert_eq!((j["unreferenced_chunks"].as_u64(), j["files"].as_u64()), (Some(0), Some(1)), "{j}");
    run(&mut dd(&["verify"])).ok();
    run(&mut dd(&["restore", "a", "-o", "a.back"])).ok();
    assert_file_eq(&d.join("a.back"), &a, "a after gc");
    // The store goes on: x again, and then a gc with nothing damaged left.
    run(&mut dd(&["store", "x"])).ok();
    run(&mut dd(&["restore", "x", "-o", "x.back"])).ok();
    assert_file_eq(&d.join("x.back"), &x, "x stored again");
    let g = run(&mut dd(&["gc", "--json"])).ok().json();
    assert_eq!(g["damaged_chunks_dropped"].as_u64(), Some(0), "{g}");
    run(&mut dd(&["verify"])).ok();
}

/// A file rewritten in place while it is stored (the same size, other bytes: a log, a database,
/// a file being copied over) is not stored as a mix of old and new bytes: as tar's "file changed
/// as we read it", the store compares the file's size, modification and status-change times
/// before and after reading it, and refuses it (exit 12, naming it; nothing recorded under its
/// name, the store as usable as before). A writer here rewrites a block of the file over and
/// over and moves its modification time to a new value each time (as `touch -d` does: so that a
/// coarse clock cannot hide a write), from before the store starts until it ends; a store it did
/// not reach (a scheduler may starve it) must have stored one version exactly, and a few runs
/// are made until one is refused.
#[test]
fn a_file_changed_in_place_while_it_is_stored_is_refused_naming_it() {
    let dir = scratch();
    let d = dir.path();
    let old = random_bytes(24 << 20, 91);
    let block = random_bytes(1 << 20, 92);
    let mid = (12 << 20) as u64;
    let mut new = old.clone();
    new[mid as usize..][..block.len()].copy_from_slice(&block);
    let src = d.join("busy");
    std::fs::write(&src, &old).unwrap();
    std::fs::write(d.join("other"), b"a file stored first: the store is there whatever happens").unwrap();
    let st = d.join("st");
    run(pp(args!["dedup", "store", "other", "-s", &st]).current_dir(d)).ok();
    let mut refused = 0;
    for attempt in 0..10 {
        let (o, writes) = while_rewritten(&src, (&old[mid as usize..][..block.len()], &block, mid), attempt, || run(pp(args!["dedup", "store", "busy", "-s", &st, "-f", "-T", "2"]).current_dir(d)));
        let listed = run(&mut pp(args!["dedup", "list", "-s", &st])).ok().stdout_str();
        match o.code() {
            Some(12) => {
                o.fails(12, &["busy", "the file changed while it was being read", "modification time", "it was not stored"]);
                assert!(!listed.contains("busy\t"), "attempt {attempt}: nothing recorded under its name: {listed}");
                refused += 1;
                break;
            }
            _ => {
                o.ok();
                let back = d.join("busy.back");
                run(&mut pp(args!["dedup", "restore", "busy", "-s", &st, "-o", &back, "-f"])).ok();
                let got = std::fs::read(&back).unwrap();
                assert!(got == old || got == new, "attempt {attempt}: stored as one version, not a mix ({writes} writes)");
                run(&mut pp(args!["dedup", "remove", "busy", "-s", &st])).ok();
            }
        }
    }
    assert_eq!(refused, 1, "a store that a writer ran through was refused");
    run(&mut pp(args!["dedup", "verify", "-s", &st])).ok();
    // Left alone, it is stored, and restores exactly.
    run(pp(args!["dedup", "store", "busy", "-s", &st]).current_dir(d)).ok();
    run(&mut pp(args!["dedup", "restore", "busy", "-s", &st, "-o", d.join("busy.back"), "-f"])).ok();
    assert_file_eq(&d.join("busy.back"), &old, "stored once nothing writes it");
}

/// `-` stores standard input, under the name `--name` gives (required: a stream has none), and
/// `--name` names any one source (a pipe, whose `/dev/fd/N` path says nothing, or a file);
/// `restore NAME` gives the bytes back. A pipe stored without `--name` is stored under its path,
/// and a warning says which name that is.
#[test]
fn standard_input_and_pipes_are_stored_under_the_name_given() {
    let dir = scratch();
    let d = dir.path();
    let a = mixed_data(3 << 20, 95);
    let (file, st) = (d.join("a"), d.join("st"));
    std::fs::write(&file, &a).unwrap();
    // Standard input, a pipe and a file of that name (`< a`).
    let o = run_full(&mut pp(args!["dedup", "store", "-", "--name", "backup.tar", "-s", &st, "-T", "2"]), Some(a.clone()), DEADLINE).ok();
    assert!(o.stdout_str().starts_with("backup.tar (from standard input): "), "{}", o.stdout_str());
    let o = pp(args!["dedup", "store", "-", "--name", "from-file", "-s", &st, "--json"]).stdin(std::fs::File::open(&file).unwrap()).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!((o["files"][0]["source"].as_str(), o["files"][0]["name"].as_str(), o["files"][0]["bytes"].as_u64()), (Some("-"), Some("from-file"), Some(a.len() as u64)), "{o}");
    for name in ["backup.tar", "from-file"] {
        let back = d.join(format!("{name}.back"));
        run(&mut pp(args!["dedup", "restore", name, "-s", &st, "-o", &back])).ok();
        assert_file_eq(&back, &a, name);
    }
    let listed = run(&mut pp(args!["dedup", "list", "-s", &st])).ok().stdout_str();
    assert!(listed.contains("backup.tar\t") && listed.contains("from-file\t") && !listed.contains("-\t"), "{listed}");
    // A name held already needs --force, as a path does.
    run_full(&mut pp(args!["dedup", "store", "-", "--name", "backup.tar", "-s", &st]), Some(b"other".to_vec()), DEADLINE).fails(4, &["backup.tar", "exists"]);
    // `-` without a name, --name with two sources: usage errors, nothing stored.
    let before = snapshot(&st);
    run_full(&mut pp(args!["dedup", "store", "-", "-s", &st]), Some(b"x".to_vec()), DEADLINE).fails(2, &["`-` (standard input) needs --name NAME"]);
    run(&mut pp(args!["dedup", "store", &file, "-", "--name", "n", "-s", &st])).fails(2, &["--name names one source, and 2 are given"]);
    assert!(snapshot(&st) == before, "nothing stored");
    // A file under another name.
    let o = run(&mut pp(args!["dedup", "store", &file, "--name", "renamed", "-s", &st])).ok();
    assert!(o.stdout_str().starts_with(&format!("renamed (from {}): ", file.display())), "{}", o.stdout_str());
    run(&mut pp(args!["dedup", "restore", "renamed", "-s", &st, "-o", d.join("renamed.back")])).ok();
    assert_file_eq(&d.join("renamed.back"), &a, "renamed");
    // A pipe by its path (bash's `<(...)` is /dev/fd/N): stored under that path, said so; with --name, under the name.
    let Some(bash) = tool("bash") else { return };
    let script = |name: &str| format!("exec \"$0\" dedup store <(cat \"$1\") -s \"$2\" {name}");
    let o = run(std::process::Command::new(&bash).arg("-c").arg(script("")).arg(bin()).arg(&file).arg(&st)).ok();
    let recorded = o.stdout_str().split(':').next().unwrap().to_string();
    assert!(recorded.starts_with("/dev/fd/"), "{}", o.stdout_str());
    assert!(o.stderr.contains(&format!("warning: {recorded} is a pipe: stored under the name {recorded}")) && o.stderr.contains("--name NAME"), "{}", o.stderr);
    run(&mut pp(args!["dedup", "restore", &recorded, "-s", &st, "-o", d.join("fd.back")])).ok();
    assert_file_eq(&d.join("fd.back"), &a, "stored as /dev/fd/N");
    let o = run(std::process::Command::new(&bash).arg("-c").arg(script("--name tree.tar")).arg(bin()).arg(&file).arg(&st)).ok();
    assert!(o.stdout_str().starts_with("tree.tar (from /dev/fd/") && !o.stderr.contains("warning"), "{}\n{}", o.stdout_str(), o.stderr);
    run(&mut pp(args!["dedup", "restore", "tree.tar", "-s", &st, "-o", d.join("tree.back")])).ok();
    assert_file_eq(&d.join("tree.back"), &a, "a pipe stored under --name");
    run(&mut pp(args!["dedup", "verify", "-s", &st])).ok();
}

/// A store that finds another writer holding the store says that it waits for it (it waited
/// silently), and stores once the lock is let go. A character device named as a source
/// (/dev/zero never ends) is refused before the store is touched, saying to give it as standard
/// input; as `-` it is read (here /dev/null: nothing).
#[test]
fn a_store_says_it_waits_for_another_writer_and_an_endless_device_is_refused() {
    use std::io::BufRead;
    use std::os::fd::AsRawFd;
    let dir = scratch();
    let d = dir.path();
    let a = mixed_data(500_000, 97);
    std::fs::write(d.join("a"), &a).unwrap();
    std::fs::write(d.join("b"), b"first").unwrap();
    let st = d.join("st");
    run(pp(args!["dedup", "store", "b", "-s", &st]).current_dir(d)).ok();
    let lock = std::fs::File::open(st.join("lock")).unwrap();
    // SAFETY: flock on a descriptor this test owns, released when it closes.
    assert_eq!(unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX) }, 0);
    let mut store = pp(args!["dedup", "store", "a", "-s", &st]).current_dir(d).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::piped()).spawn().unwrap();
    // Its first line, read aside: a store that waits without a word would leave this waiting too.
    let (tx, rx) = std::sync::mpsc::channel();
    let err = store.stderr.take().unwrap();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = std::io::BufReader::new(err).read_line(&mut line);
        let _ = tx.send(line);
    });
    let line = rx.recv_timeout(HANG_DEADLINE).unwrap_or_else(|_| {
        let _ = store.kill();
        let _ = store.wait();
        panic!("the store said nothing in {} s while it waited for the lock", HANG_DEADLINE.as_secs())
    });
    assert!(line.starts_with("peerpath: dedup: waiting for another writer of the store") && line.contains("a store, remove or gc"), "{line}");
    drop(lock);
    assert!(wait_deadline(&mut store, HANG_DEADLINE, "the store that waited").success());
    run(pp(args!["dedup", "restore", "a", "-s", &st, "-o", d.join("a.back")]).current_dir(d)).ok();
    assert_file_eq(&d.join("a.back"), &a, "stored once the lock was let go");
    let before = snapshot(&st);
    run(&mut pp(args!["dedup", "store", "/dev/zero", "-s", &st])).fails(2, &["/dev/zero is a character device: it may never end", "store - --name NAME"]);
    assert!(snapshot(&st) == before, "nothing stored");
    // (`run` gives it /dev/null as standard input.)
    run(&mut pp(args!["dedup", "store", "-", "--name", "nothing", "-s", &st])).ok();
    let listed = run(&mut pp(args!["dedup", "list", "-s", &st])).ok().stdout_str();
    assert!(listed.contains("nothing\t0\t0 chunks"), "{listed}");
}

/// The store keeps no file's mode: a restore to a new file gets a new file's (0666 less the
/// umask, as the shell's `>` makes it), and one over an existing file with --force keeps that
/// file's own mode, as `cp` and `>` leave it (it was reset to a new file's: an executable, or a
/// private file, lost its bits).
#[test]
fn a_restore_gives_the_mode_kept_and_where_none_was_a_new_files_or_the_replaced_ones() {
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch();
    let d = dir.path();
    let a = mixed_data(300_000, 41);
    let (src, st) = (d.join("a"), d.join("st"));
    std::fs::write(&src, &a).unwrap();
    std::fs::set_permissions(&src, std::fs::Permissions::from_mode(0o750)).unwrap();
    run(&mut pp(args!["dedup", "store", "-q", &src, "-s", &st])).ok();
    // The same bytes through a pipe: no mode kept.
    let mut c = pp(args!["dedup", "store", "-q", "-", "--name", "piped", "-s", &st]);
    c.stdin(std::process::Stdio::piped());
    let mut child = c.spawn().unwrap();
    child.stdin.take().unwrap().write_all(&a).unwrap();
    assert!(child.wait().unwrap().success());
    let restore = |name: &Path, out: &Path, extra: &[&str]| {
        let mut c = std::process::Command::new("sh");
        c.arg("-c").arg("umask 027 && exec \"$0\" \"$@\"").arg(bin()).args(args!["dedup", "restore", name, "-s", &st, "-o", out]).args(extra);
        run(&mut c).ok();
        assert_file_eq(out, &a, &out.display().to_string());
        std::fs::metadata(out).unwrap().permissions().mode() & 0o7777
    };
    assert_eq!(restore(&src, &d.join("new"), &[]), 0o750, "the mode kept, whatever the umask");
    assert_eq!(restore(Path::new("piped"), &d.join("new-piped"), &[]), 0o640, "none kept: 0666 less the umask");
    for mode in [0o751, 0o600] {
        let old = d.join(format!("old-{mode:o}"));
        std::fs::write(&old, b"what was there").unwrap();
        std::fs::set_permissions(&old, std::fs::Permissions::from_mode(mode)).unwrap();
        assert_eq!(restore(Path::new("piped"), &old, &["-f"]), mode, "none kept: a file replaced keeps its mode");
        assert_eq!(restore(&src, &old, &["-f"]), 0o750, "the mode kept, over a file replaced too");
    }
}

/// A chunk of zeros is restored as a hole (as `cp --sparse=auto` and `tar -S` do): a sparse
/// source comes back sparse (it came back fully allocated), its size exact where it ends in a
/// hole; standard output still gets every zero.
#[test]
fn a_restore_leaves_holes_where_chunks_are_zeros() {
    use std::os::unix::fs::{FileExt, MetadataExt};
    let dir = scratch();
    let d = dir.path();
    let (mid, tail, st) = (d.join("mid"), d.join("tail"), d.join("st"));
    // Data, a 20 MiB hole, data; and data then a 8 MiB hole at the end.
    let f = std::fs::File::create(&mid).unwrap();
    f.write_all_at(&mixed_data(1 << 20, 42), 0).unwrap();
    f.write_all_at(&mixed_data(1 << 20, 43), 21 << 20).unwrap();
    let f = std::fs::File::create(&tail).unwrap();
    f.write_all_at(&mixed_data(1 << 20, 44), 0).unwrap();
    f.set_len(9 << 20).unwrap();
    drop(f);
    let allocated = |p: &Path| std::fs::metadata(p).unwrap().blocks() * 512;
    if allocated(&mid) > 4 << 20 {
        eprintln!("SKIPPED a_restore_leaves_holes_where_chunks_are_zeros: the scratch directory's file system makes no holes");
        return;
    }
    run(&mut pp(args!["dedup", "store", "-q", &mid, &tail, "-s", &st])).ok();
    for src in [&mid, &tail] {
        let want = std::fs::read(src).unwrap();
        let back = d.join(format!("{}.back", src.file_name().unwrap().to_str().unwrap()));
        run(&mut pp(args!["dedup", "restore", src, "-s", &st, "-o", &back])).ok();
        assert_file_eq(&back, &want, "restored");
        // The data and the chunks that straddle it (at most 256 KiB each) are written, no more.
        assert!(allocated(&back) <= 4 << 20, "{}: {} bytes allocated of {}", back.display(), allocated(&back), want.len());
        let out = run(&mut pp(args!["dedup", "restore", src, "-s", &st, "-o", "-"])).ok();
        assert_bytes_eq(&out.stdout, &want, "to standard output");
    }
}

/// A store with more packs than a restore may keep open (`ulimit -n`): every pack that cannot
/// be opened for want of descriptors is said as that (exit 3, naming the pack and "Too many
/// open files"), never as damage (exit 6, which sends users to delete a sound store); and a
/// reader keeps a bounded number of packs open, so a store of more packs than descriptors
/// restores and verifies (all were kept open: each pack a descriptor).
#[test]
fn packs_that_cannot_be_opened_for_want_of_descriptors_are_no_damage() {
    let test = "packs_that_cannot_be_opened_for_want_of_descriptors_are_no_damage";
    // One core, one reader: the descriptors a restore needs do not depend on the machine.
    let Some(tools) = tools_or_skip(test, &["taskset"]) else { return };
    let dir = scratch();
    let d = dir.path();
    let a = mixed_data(4 << 20, 45);
    std::fs::write(d.join("a"), &a).unwrap();
    let st = d.join("st");
    run(&mut dedup_in(&st, d, "30000", &["store", "-q", "a"])).ok();
    let packs = names_in(&st.join("packs")).len();
    assert!(packs > 40, "{packs} packs");
    let limited = |n: usize, job: &[&str]| {
        let mut c = std::process::Command::new(&tools[0]);
        c.args(["-c", "0", "sh", "-c", &format!("ulimit -n {n} && exec \"$0\" \"$@\"")]).arg(bin()).arg("dedup").args(job).arg("-s").arg(&st).current_dir(d);
        run(&mut c)
    };
    let (mut ok, mut said) = (Vec::new(), 0);
    for n in (8..=40).step_by(2) {
        for job in [&["restore", "a", "-f", "-o", "back"][..], &["verify", "-q"]] {
            let out = limited(n, job);
            assert_ne!(out.code(), Some(6), "ulimit -n {n} {job:?}: not damage:\n{}", out.describe());
            if out.status.success() {
                ok.push((n, job[0]));
            } else if out.stderr.contains("packs/pack-") {
                said += 1;
                out.fails(3, &["cannot read source", "Too many open files"]);
            }
        }
    }
    assert!(said > 0, "some limit tried was too few for the packs");
    for job in ["restore", "verify"] {
        assert!(ok.iter().any(|&(n, j)| j == job && n < packs), "{job} with fewer descriptors than the store's {packs} packs: {ok:?}");
    }
    assert_file_eq(&d.join("back"), &a, "restored with few descriptors");
}

/// SIGINT while a store appends: the chunks it wrote but never committed are no file's and no
/// chunk's (stats count them as pack bytes no chunk refers to, apart from the stored bytes), the
/// store verifies, and they are taken back by the next store (which cuts the pack back to where
/// its chunks end) or by gc. (It was so already; this shows it.)
#[test]
fn a_store_stopped_by_sigint_leaves_a_tail_the_next_store_or_gc_takes_back() {
    let dir = scratch();
    let d = dir.path();
    std::fs::write(d.join("small"), mixed_data(1 << 20, 46)).unwrap();
    let st = d.join("st");
    let dd = |args: &[&str]| dedup_in(&st, d, "1000000000", args);
    run(&mut dd(&["store", "-q", "small"])).ok();
    let stored = run(&mut dd(&["stats", "--json"])).ok().json()["stored_bytes"].as_u64().unwrap();
    for (round, take_back) in [&["store", "-q", "small", "--name", "again"][..], &["gc", "-q", "--min-unused", "0"]].into_iter().enumerate() {
        // A pipe held open: the store has appended chunks and waits for more when it is stopped.
        let mut store = signals_at_default(&mut dd(&["store", "-q", "-", "--name", "big", "-T", "1"])).stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::null()).spawn().unwrap();
        let mut pipe = store.stdin.take().unwrap();
        pipe.write_all(&mixed_data(24 << 20, 47 + round as u64)).unwrap();
        let deadline = std::time::Instant::now() + HANG_DEADLINE;
        while pack_bytes_on_disk(&st) <= stored + (1 << 20) {
            assert!(std::time::Instant::now() < deadline, "the store appended nothing");
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        // SAFETY: kill(2) with our own child's pid.
        unsafe { libc::kill(store.id() as i32, libc::SIGINT) };
        assert!(!wait_deadline(&mut store, HANG_DEADLINE, "a store stopped by SIGINT").success());
        drop(pipe);
        let j = run(&mut dd(&["stats", "--json"])).ok().json();
        let tail = pack_bytes_on_disk(&st) - stored;
        assert!(tail > 1 << 20, "round {round}: the appends are there: {j}");
        assert_eq!((j["files"].as_u64(), j["stored_bytes"].as_u64(), j["unreferenced_pack_bytes"].as_u64()), (Some(round as u64 + 1), Some(stored), Some(tail)), "round {round}: not counted as stored: {j}");
        run(&mut dd(&["verify", "-q"])).ok();
        run(&mut dd(take_back)).ok();
        let j = run(&mut dd(&["stats", "--json"])).ok().json();
        assert_eq!(j["unreferenced_pack_bytes"].as_u64(), Some(0), "round {round}: {take_back:?} took the tail back: {j}");
        assert_eq!(pack_bytes_on_disk(&st), j["stored_bytes"].as_u64().unwrap(), "round {round}: {j}");
    }
    run(&mut dd(&["restore", "again", "-o", "again.back"])).ok();
    assert_file_eq(&d.join("again.back"), &mixed_data(1 << 20, 46), "stored after the tail was cut");
}

/// Many small files are stored without a sync, a commit and threads started for each (3000 of
/// 1-10 KiB took 23 s on two cores, most of it waiting): the pack is synced and the index
/// committed once a batch, a file of one segment or less is cut on the calling thread. Counted
/// with strace (its system calls, not its time); every file restores.
#[test]
fn a_store_of_many_small_files_syncs_and_starts_threads_once_a_batch() {
    let test = "a_store_of_many_small_files_syncs_and_starts_threads_once_a_batch";
    let Some(tools) = tools_or_skip(test, &["strace"]) else { return };
    let dir = scratch();
    let d = dir.path();
    let names: Vec<String> = (0..300).map(|i| format!("f{i:03}")).collect();
    for (i, n) in names.iter().enumerate() {
        std::fs::write(d.join(n), mixed_data(1000 + 37 * i, 100 + i as u64)).unwrap();
    }
    let summary = d.join("strace.txt");
    let mut c = std::process::Command::new(&tools[0]);
    c.args(["-f", "-c", "-e", "trace=fsync,fdatasync,clone,clone3", "-o"]).arg(&summary).arg(bin()).args(["dedup", "store", "-q", "-s", "st"]).args(&names).current_dir(d);
    let out = run(&mut c);
    if !out.status.success() && out.stderr.contains("strace:") {
        eprintln!("SKIPPED {test}: strace cannot trace here: {}", out.stderr.trim());
        return;
    }
    out.ok();
    let text = std::fs::read_to_string(&summary).unwrap();
    // strace -c: "% time  seconds  usecs/call  calls  errors syscall", a line a call.
    let calls = |names: &[&str]| -> u64 { text.lines().filter_map(|l| l.split_whitespace().collect::<Vec<_>>().split_last().filter(|(n, _)| names.contains(n)).map(|(_, f)| f[3].parse::<u64>().unwrap_or(0))).sum() };
    let (syncs, threads) = (calls(&["fsync", "fdatasync"]), calls(&["clone", "clone3"]));
    assert!(syncs < 30, "{syncs} syncs for {} files:\n{text}", names.len());
    assert!(threads < 30, "{threads} threads started for {} files:\n{text}", names.len());
    let j = run(&mut pp(args!["dedup", "stats", "-s", d.join("st"), "--json"])).ok().json();
    assert_eq!(j["files"].as_u64(), Some(names.len() as u64), "{j}");
    for n in [&names[0], &names[150], &names[299]] {
        run(pp(args!["dedup", "restore", n, "-s", "st", "-o", format!("{n}.back")]).current_dir(d)).ok();
        assert_file_eq(&d.join(format!("{n}.back")), &std::fs::read(d.join(n)).unwrap(), n);
    }
}

/// kill -9 at many points of a store of many files (committed in batches): the store always
/// reopens and verifies (no chunk referenced without its data), every file it lists restores
/// exactly, and a later store of them all completes.
#[test]
fn a_store_of_many_files_killed_at_any_instant_stays_consistent() {
    let dir = scratch();
    let d = dir.path();
    let names: Vec<String> = (0..400).map(|i| format!("f{i:03}")).collect();
    for (i, n) in names.iter().enumerate() {
        std::fs::write(d.join(n), mixed_data(2000 + 997 * (i % 50), 500 + i as u64)).unwrap();
    }
    let st = d.join("st");
    for delay in [0u64, 30, 100, 250, 600, 1200] {
        let mut child = pp(args!["dedup", "store", "-q", "-f", "-s", &st]).args(&names).current_dir(d).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null()).spawn().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(delay));
        // SAFETY: kill(2) with our own child's pid.
        unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
        wait_deadline(&mut child, HANG_DEADLINE, "a killed store");
        if st.join("index.sqlite").exists() {
            let v = run(&mut pp(args!["dedup", "verify", "-s", &st]));
            assert_eq!(v.code(), Some(0), "killed after {delay} ms: {}", v.stderr);
            let listed = run(&mut pp(args!["dedup", "list", "--json", "-s", &st])).ok().json();
            for f in listed["files"].as_array().unwrap().iter().step_by(37) {
                let n = f["name"].as_str().unwrap();
                run(pp(args!["dedup", "restore", n, "-s", &st, "-f", "-o", "back"]).current_dir(d)).ok();
                assert_file_eq(&d.join("back"), &std::fs::read(d.join(n)).unwrap(), n);
            }
        }
    }
    run(pp(args!["dedup", "store", "-q", "-f", "-s", &st]).args(&names).current_dir(d)).ok();
    let j = run(&mut pp(args!["dedup", "stats", "--json", "-s", &st])).ok().json();
    assert_eq!(j["files"].as_u64(), Some(names.len() as u64), "{j}");
    run(&mut pp(args!["dedup", "verify", "-s", &st])).ok();
}

/// gc compacts the index (SQLite's VACUUM) once enough of it is free pages (the rows of the
/// chunks it dropped, of removed files and their hints): the file shrinks and the report says
/// its size before and after (the index kept its size: SQLite only reuses free pages). A gc
/// with nothing freed compacts nothing; a dry run never does. A file the index lacks a chunk
/// of still stops gc.
#[test]
fn gc_compacts_the_index_once_enough_of_it_is_free() {
    let dir = scratch();
    let d = dir.path();
    let names: Vec<String> = (0..1500).map(|i| format!("f{i:04}")).collect();
    for (i, n) in names.iter().enumerate() {
        std::fs::write(d.join(n), mixed_data(1500 + 13 * i, 2000 + i as u64)).unwrap();
    }
    let st = d.join("st");
    let dd = |args: &[&str]| dedup_in(&st, d, "1000000000", args);
    run(dd(&["store", "-q"]).args(&names)).ok();
    run(dd(&["remove", "-q"]).args(&names[..1400])).ok();
    let index = || std::fs::metadata(st.join("index.sqlite")).unwrap().len();
    let before = index();
    let n = run(&mut dd(&["gc", "-n", "--json"])).ok().json();
    assert_eq!((n["index_compacted"].as_bool(), n["index_bytes_after"].as_u64()), (Some(false), n["index_bytes_before"].as_u64()), "{n}");
    assert_eq!(index(), before, "a dry run compacts nothing");
    let g = run(&mut dd(&["gc", "--json"])).ok().json();
    assert_eq!(g["index_compacted"].as_bool(), Some(true), "{g}");
    let (was, is) = (g["index_bytes_before"].as_u64().unwrap(), g["index_bytes_after"].as_u64().unwrap());
    assert!(is < was / 2 && index() < before / 2, "the index shrank: {was} -> {is} bytes (its file {before} -> {}): {g}", index());
    let again = run(&mut dd(&["gc"])).ok().stdout_str();
    assert!(!again.contains("index compacted"), "nothing freed since: {again}");
    run(&mut dd(&["verify", "-q"])).ok();
    for n in &names[1400..] {
        run(&mut dd(&["restore", n, "-f", "-o", "back"])).ok();
        assert_file_eq(&d.join("back"), &std::fs::read(d.join(n)).unwrap(), n);
    }
    // A chunk a file refers to gone from the index: damage, gc changes nothing.
    let db = rusqlite::Connection::open(st.join("index.sqlite")).unwrap();
    db.execute("DELETE FROM chunks WHERE digest = (SELECT substr(chunks, 1, 32) FROM files LIMIT 1)", []).unwrap();
    drop(db);
    run(&mut dd(&["gc"])).fails(6, &["files refer to 1 chunk the index does not hold", "gc changed nothing"]);
}
