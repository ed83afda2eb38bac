//! `peerpath dedup`: a file's mode kept and restored, names said as the reports say them, damaged
//! sizes named rather than added up, and a restore holding its output's directory.

mod common;

use common::*;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

fn mode_of(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
}

/// `peerpath ARGS` under umask 022.
fn with_umask_022(args: &[std::ffi::OsString]) -> std::process::Command {
    let mut c = std::process::Command::new("sh");
    c.arg("-c").arg("umask 022 && exec \"$0\" \"$@\"").arg(bin()).args(args);
    c
}

/// A file's permission bits are kept when it is stored and given back by restore, whatever the
/// umask (a 0600 secret came back 0644, an executable lost its x bits); a store made before
/// modes were kept (format 2) restores as it did, and is brought to format 3 when written.
#[test]
fn a_restore_gives_back_the_mode_the_file_was_stored_with() {
    let dir = scratch();
    let d = dir.path();
    let st = d.join("st");
    let (secret, tool) = (d.join("secret"), d.join("tool"));
    std::fs::write(&secret, mixed_data(200_000, 1)).unwrap();
    std::fs::write(&tool, mixed_data(200_000, 2)).unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    run(&mut pp(args!["dedup", "store", "-q", &secret, &tool, "-s", &st])).ok();
    for (src, mode) in [(&secret, 0o600), (&tool, 0o755)] {
        let out = d.join(format!("{mode:o}.back"));
        run(&mut with_umask_022(&args!["dedup", "restore", src, "-s", &st, "-o", &out])).ok();
        assert_file_eq(&out, &std::fs::read(src).unwrap(), "restored");
        assert_eq!(mode_of(&out), mode, "{}", src.display());
    }
    // A format-2 store: no mode kept, a new file's mode as before.
    let db = rusqlite::Connection::open(st.join("index.sqlite")).unwrap();
    db.execute_batch("ALTER TABLE files DROP COLUMN mode; UPDATE meta SET value = 'peerpath-dedup/2' WHERE key = 'format';").unwrap();
    let out = d.join("old-format.back");
    run(&mut with_umask_022(&args!["dedup", "restore", &secret, "-s", &st, "-o", &out])).ok();
    assert_eq!(mode_of(&out), 0o644, "a store without modes: 0666 less the umask");
    let other = d.join("other");
    std::fs::write(&other, mixed_data(100_000, 3)).unwrap();
    std::fs::set_permissions(&other, std::fs::Permissions::from_mode(0o700)).unwrap();
    run(&mut pp(args!["dedup", "store", "-q", &other, "-s", &st])).ok();
    let format: String = db.query_row("SELECT value FROM meta WHERE key = 'format'", [], |r| r.get(0)).unwrap();
    assert_eq!(format, "peerpath-dedup/3");
    for (src, mode) in [(&secret, 0o644), (&other, 0o700)] {
        let out = d.join(format!("upgraded-{mode:o}.back"));
        run(&mut with_umask_022(&args!["dedup", "restore", src, "-s", &st, "-o", &out])).ok();
        assert_eq!(mode_of(&out), mode, "after the upgrade: {}", src.display());
    }
    // A mode no store writes is the index's damage, and nothing is written.
    db.execute("UPDATE files SET mode = 4096 WHERE name = ?1", [other.as_os_str().as_bytes()]).unwrap();
    let out = d.join("damaged.back");
    run(&mut pp(args!["dedup", "restore", &other, "-s", &st, "-o", &out])).fails(6, &["its mode is 4096", "the index is damaged", "nothing was written"]);
    assert!(!out.exists());
}

/// A name with a line break or bytes that are not UTF-8 is quoted in the text (one line, its
/// bytes kept), and the JSON reports give its exact bytes (`*_bytes`).
#[test]
fn names_are_quoted_in_text_and_given_as_bytes_in_json() {
    let dir = scratch();
    let d = dir.path();
    let st = d.join("st");
    std::fs::write(d.join("a\nb"), mixed_data(100_000, 4)).unwrap();
    let o = run(pp(args!["dedup", "store", "a\nb", "-s", &st]).current_dir(d)).ok();
    let text = o.stdout_str();
    assert_eq!(text.lines().count(), 1, "one line: {text:?}");
    assert!(text.starts_with("'a'$'\\n''b': "), "{text:?}");
    // Not in the store, named in a store whose own name has a line break: one line.
    let odd = d.join("s\nt");
    run(pp(args!["dedup", "store", "-q", "a\nb", "-s", &odd]).current_dir(d)).ok();
    let o = run(&mut pp(args!["dedup", "restore", "nope", "-s", &odd, "-o", d.join("x")])).fails(3, &["not in the store", "'$'\\n''t'"]);
    assert_eq!(o.stderr.trim_end().lines().count(), 1, "{}", o.stderr);
    // Not UTF-8: the JSON's `*_bytes`.
    let raw = OsStr::from_bytes(b"n\xffm");
    std::fs::write(d.join(raw), mixed_data(100_000, 5)).unwrap();
    let j = run(pp(args!["dedup", "store", raw, "-s", &st, "--json"]).current_dir(d)).ok().json();
    let bytes = |v: &serde_json::Value| v.as_array().map(|a| a.iter().map(|b| b.as_u64().unwrap() as u8).collect::<Vec<u8>>());
    assert_eq!(bytes(&j["files"][0]["name_bytes"]).as_deref(), Some(&b"n\xffm"[..]), "{j}");
    assert_eq!(bytes(&j["files"][0]["source_bytes"]).as_deref(), Some(&b"n\xffm"[..]), "{j}");
    let out = d.join(OsStr::from_bytes(b"o\xfe"));
    let j = run(&mut pp(args!["dedup", "restore", raw, "-s", &st, "-o", &out, "--json"])).ok().json();
    assert_eq!(bytes(&j["name_bytes"]).as_deref(), Some(&b"n\xffm"[..]), "{j}");
    assert_eq!(bytes(&j["output_bytes"]).as_deref(), Some(out.as_os_str().as_bytes()), "{j}");
    assert!(j.get("store_bytes").is_none(), "a UTF-8 name has none: {j}");
}

/// A size no store writes (negative, or so large the figures pass 2^64) is the damage of the
/// record that holds it, named with the store, not a figure (it was printed as 2^64 - 5).
#[test]
fn stats_name_a_record_whose_size_is_damaged() {
    let dir = scratch();
    let d = dir.path();
    std::fs::write(d.join("f"), mixed_data(300_000, 6)).unwrap();
    let damages = [
        ("UPDATE files SET size = -5", vec!["the file f: its size is -5", "the index is damaged"]),
        ("UPDATE chunks SET size = -1 WHERE offset = 0", vec!["the chunk ", ": its size is -1", "the index is damaged"]),
        ("UPDATE chunks SET len = 'x' WHERE offset = 0", vec!["the chunk ", ": its length is Text of 1 bytes", "the index is damaged"]),
        ("UPDATE files SET size = 9223372036854775807; INSERT INTO files SELECT X'67', size, chunks, stored_at, mode FROM files; INSERT INTO files SELECT X'68', size, chunks, stored_at, mode FROM files WHERE name = X'67'", vec![": with its size of 9223372036854775807, the store's sizes add up past 2^64"]),
    ];
    for (i, (damage, said)) in damages.iter().enumerate() {
        let st = d.join(format!("st{i}"));
        run(pp(args!["dedup", "store", "-q", "f", "-s", &st]).current_dir(d)).ok();
        rusqlite::Connection::open(st.join("index.sqlite")).unwrap().execute_batch(damage).unwrap();
        let o = run(&mut pp(args!["dedup", "stats", "-s", &st, "--json"])).fails(6, &said.iter().map(|s| &s[..]).chain([&st.display().to_string()[..]]).collect::<Vec<_>>());
        assert!(o.stdout.is_empty(), "{damage}: no figures: {}", o.stdout_str());
    }
}

/// A restore into a directory holds it (a shared lock, as compress does) from before it opens the
/// store to the end: another job that made the directory and fails does not remove it under the
/// restore. Seen here while the restore waits to read the store (a gc removing packs holds its
/// packs directory).
#[test]
fn a_restore_holds_its_output_directory() {
    use std::os::fd::AsRawFd;
    let dir = scratch();
    let d = dir.path();
    let st = d.join("st");
    let data = mixed_data(200_000, 7);
    std::fs::write(d.join("f"), &data).unwrap();
    run(pp(args!["dedup", "store", "-q", "f", "-s", &st]).current_dir(d)).ok();
    let out_dir = d.join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let packs = std::fs::File::open(st.join("packs")).unwrap();
    // SAFETY: flock on a descriptor this test owns.
    assert_eq!(unsafe { libc::flock(packs.as_raw_fd(), libc::LOCK_EX) }, 0);
    let mut child = pp(args!["dedup", "restore", "f", "-s", &st, "-o", out_dir.join("f")]).current_dir(d).spawn().unwrap();
    // Until the restore waits on the packs lock (its request listed as blocked in /proc/locks).
    let pid = child.id().to_string();
    let waiting = |locks: &str| locks.lines().any(|l| l.contains("->") && l.split_whitespace().any(|w| w == pid));
    let started = std::time::Instant::now();
    while !waiting(&std::fs::read_to_string("/proc/locks").unwrap()) {
        assert!(child.try_wait().unwrap().is_none(), "the restore ended before it waited");
        assert!(started.elapsed() < HANG_DEADLINE, "the restore never waited for the packs");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let held = std::fs::File::open(&out_dir).unwrap();
    // SAFETY: flock on a descriptor this test owns; it does not wait.
    let r = unsafe { libc::flock(held.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    let taken = r == 0;
    drop(packs);
    let status = wait_deadline(&mut child, HANG_DEADLINE, "the restore");
    assert!(!taken, "the output directory was not held while the restore ran");
    assert!(status.success());
    assert_file_eq(&out_dir.join("f"), &data, "restored");
}

/// A file written just before `store` (its stamp within a tick of the read, so read again and
/// compared) is stored, not refused: files written in a burst, one stamped in the future (which
/// every read is racy for), each restored exactly.
#[test]
fn a_file_written_just_before_it_is_stored_is_stored() {
    let dir = scratch();
    let d = dir.path();
    let st = d.join("st");
    let names: Vec<String> = (0..8).map(|i| format!("fresh{i}")).collect();
    for (i, n) in names.iter().enumerate() {
        std::fs::write(d.join(n), mixed_data(50_000 + 30_000 * i, 20 + i as u64)).unwrap();
    }
    let future = std::time::SystemTime::now() + std::time::Duration::from_secs(3600);
    std::fs::File::options().write(true).open(d.join("fresh0")).unwrap().set_modified(future).unwrap();
    run(pp(args!["dedup", "store", "-q", "-s", &st].into_iter().chain(names.iter().map(os))).current_dir(d)).ok();
    // Through standard input (`< FILE`: read by offset, so read again from its start).
    std::fs::write(d.join("piped"), mixed_data(120_000, 30)).unwrap();
    let mut c = std::process::Command::new("sh");
    c.arg("-c").arg("exec \"$0\" \"$@\" < piped").arg(bin()).args(args!["dedup", "store", "-q", "-", "--name", "piped", "-s", &st]);
    run(c.current_dir(d)).ok();
    for n in names.iter().chain([&"piped".to_string()]) {
        let out = d.join(format!("{n}.back"));
        run(pp(args!["dedup", "restore", n, "-s", &st, "-o", &out]).current_dir(d)).ok();
        assert_file_eq(&out, &std::fs::read(d.join(n)).unwrap(), n);
    }
}

/// `list` and `remove` check a record's size as `stats` does: a negative one (listed as
/// 2^64 - 5, and added so by remove) or sizes adding up past 2^64 are the record's damage, exit 6
/// naming the store and the file, with no listing and nothing removed.
#[test]
fn list_and_remove_name_a_record_whose_size_is_damaged() {
    let dir = scratch();
    let d = dir.path();
    std::fs::write(d.join("f"), mixed_data(200_000, 8)).unwrap();
    std::fs::write(d.join("g"), mixed_data(200_000, 9)).unwrap();
    for (i, (damage, said)) in [
        ("UPDATE files SET size = -5 WHERE name = X'66'", "the file f: its size is -5"),
        ("UPDATE files SET size = 'x' WHERE name = X'66'", "the file f: its size is Text of 1 bytes"),
    ]
    .into_iter()
    .enumerate()
    {
        let st = d.join(format!("st{i}"));
        run(pp(args!["dedup", "store", "-q", "f", "g", "-s", &st]).current_dir(d)).ok();
        rusqlite::Connection::open(st.join("index.sqlite")).unwrap().execute_batch(damage).unwrap();
        let needles = [said, "the index is damaged", &st.display().to_string()];
        for json in [false, true] {
            let o = run(&mut pp(args!["dedup", "list", "-s", &st].into_iter().chain(json.then(|| os("--json"))))).fails(6, &needles);
            assert!(o.stdout.is_empty(), "{damage}: no listing: {}", o.stdout_str());
        }
        run(&mut pp(args!["dedup", "remove", "g", "f", "-s", &st])).fails(6, &needles);
        let left: i64 = rusqlite::Connection::open(st.join("index.sqlite")).unwrap().query_row("SELECT count(*) FROM files", [], |r| r.get(0)).unwrap();
        assert_eq!(left, 2, "{damage}: nothing removed");
    }
    // Two sizes that add up past 2^64.
    let st = d.join("huge");
    run(pp(args!["dedup", "store", "-q", "f", "g", "-s", &st]).current_dir(d)).ok();
    rusqlite::Connection::open(st.join("index.sqlite")).unwrap().execute_batch("UPDATE files SET size = 9223372036854775807; INSERT INTO files SELECT X'68', size, chunks, stored_at, mode FROM files WHERE name = X'66'").unwrap();
    run(&mut pp(args!["dedup", "remove", "f", "g", "h", "-s", &st])).fails(6, &["the file h: with its size of 9223372036854775807, the store's sizes add up past 2^64", &st.display().to_string()]);
}

/// `list --json` gives a name that is not UTF-8 as `name_bytes` too, as the other reports do
/// (`name_hex` kept); a UTF-8 name has neither.
#[test]
fn list_gives_a_names_bytes_as_the_other_reports_do() {
    let dir = scratch();
    let d = dir.path();
    let st = d.join("st");
    let raw = OsStr::from_bytes(b"n\xffm");
    std::fs::write(d.join(raw), mixed_data(100_000, 10)).unwrap();
    std::fs::write(d.join("plain"), mixed_data(100_000, 11)).unwrap();
    run(pp(args!["dedup", "store", "-q", raw, "plain", "-s", &st]).current_dir(d)).ok();
    let j = run(&mut pp(args!["dedup", "list", "-s", &st, "--json"])).ok().json();
    let files = j["files"].as_array().unwrap();
    let odd = files.iter().find(|f| f.get("name_hex").is_some()).expect("the name that is not UTF-8");
    let bytes: Vec<u8> = odd["name_bytes"].as_array().unwrap_or_else(|| panic!("{j}")).iter().map(|b| b.as_u64().unwrap() as u8).collect();
    assert_eq!(bytes, b"n\xffm", "{j}");
    assert_eq!(odd["name_hex"], "6eff6d");
    let plain = files.iter().find(|f| f["name"] == "plain").unwrap();
    assert!(plain.get("name_bytes").is_none() && plain.get("name_hex").is_none(), "{j}");
}

/// A kernel file is made as it is read and its times are its inode's: `/proc/self/stat` of the
/// storing process itself is as fresh as can be, and differs at each read. It was taken for a file
/// written during its read (read again for its fresh stamp, other bytes: exit 12); it is stored
/// as read, as a pipe is.
#[test]
fn a_fresh_kernel_file_is_stored_as_read() {
    let dir = scratch();
    let st = dir.path().join("st");
    run(&mut pp(args!["dedup", "store", "-q", "/proc/self/stat", "--name", "stat", "-s", &st])).ok();
    let out = dir.path().join("back");
    run(&mut pp(args!["dedup", "restore", "stat", "-s", &st, "-o", &out])).ok();
    let back = std::fs::read_to_string(&out).unwrap();
    assert!(back.contains("(peerpath)"), "a process's stat line: {back}");
}

/// gc checks each chunk it copies as it reads it. A damaged one met late (the 128th, after
/// many went into a new pack) still stops gc before anything changes: no new pack left, the
/// index as it was, the damaged chunk named. (A guard: gc did so before this test.)
#[test]
fn a_damaged_chunk_late_in_what_gc_copies_stops_it_with_nothing_changed() {
    let dir = scratch();
    let d = dir.path();
    std::fs::write(d.join("a"), random_bytes(4 << 20, 51)).unwrap();
    std::fs::write(d.join("x"), random_bytes(300_000, 52)).unwrap();
    let st = d.join("st");
    let dd = |args: &[&str]| {
        let mut c = pp(["dedup"].iter().chain(args));
        c.arg("-s").arg(&st).current_dir(d);
        c
    };
    run(&mut dd(&["store", "-q", "a", "x", "--min", "4K", "--avg", "16K", "--max", "64K"])).ok();
    run(&mut dd(&["remove", "x"])).ok();
    // a's chunks come first in pack 0, in its order; x's (no file refers to them now) after them.
    let db = rusqlite::Connection::open_with_flags(st.join("index.sqlite"), rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    let places: Vec<(i64, i64)> = db.prepare("SELECT pack, offset FROM chunks ORDER BY pack, offset").unwrap().query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap().map(Result::unwrap).collect();
    drop(db);
    assert!(places.len() > 128 && places.iter().all(|&(p, _)| p == 0), "{} chunks, all in pack 0", places.len());
    let offset = places[127].1;
    let pack = st.join("packs/pack-000000");
    let mut bytes = std::fs::read(&pack).unwrap();
    bytes[offset as usize] ^= 0x40;
    std::fs::write(&pack, &bytes).unwrap();
    let (packs, listed) = (snapshot(&st.join("packs")), run(&mut dd(&["list"])).ok().stdout_str());
    let stats_before = run(&mut dd(&["stats", "--json"])).ok().json();
    let named = format!("pack 0 at byte {offset} does not match");
    run(&mut dd(&["gc", "--min-unused", "0"])).fails(6, &[named.as_str(), "gc changed nothing"]);
    assert!(snapshot(&st.join("packs")) == packs, "no pack made, changed or removed");
    assert_eq!(run(&mut dd(&["list"])).ok().stdout_str(), listed);
    let mut stats_after = run(&mut dd(&["stats", "--json"])).ok().json();
    stats_after["store_running"] = stats_before["store_running"].clone();
    assert_eq!(stats_after, stats_before, "the index as it was");
}

/// `dedup remove`'s hint is a command that runs as printed in a shell, whatever the store's name
/// (`$HOME` and a space in it were printed bare).
#[test]
fn removes_gc_hint_runs_as_printed() {
    let dir = scratch();
    let d = dir.path();
    let store = d.join("my $HOME store");
    std::fs::write(d.join("a"), random_bytes(200_000, 61)).unwrap();
    run(pp(args!["dedup", "store", "-q", "a", "-s", &store]).current_dir(d)).ok();
    let o = run(&mut pp(args!["dedup", "remove", "a", "-s", &store])).ok();
    let text = o.stdout_str();
    let ran = run_hint(&text, "peerpath dedup gc -s ");
    assert!(ran.status.success() && String::from_utf8_lossy(&ran.stdout).contains("gc"), "{}", String::from_utf8_lossy(&ran.stdout));
}

/// Runs in bash (peerpath on its PATH) the command in backquotes in `text`, which holds
/// `starts`; SIZE and NAME, a hint's words for what the reader chooses, read 10 and n.
fn run_hint(text: &str, starts: &str) -> std::process::Output {
    let hint = text.split('`').skip(1).step_by(2).find(|h| h.contains("peerpath ")).unwrap_or_else(|| panic!("no hint: {text}"));
    assert!(hint.contains(starts), "{text}");
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_peerpath")).parent().unwrap().to_path_buf();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let ran = std::process::Command::new("bash").arg("-c").arg(hint.replace("SIZE", "10").replace("NAME", "n")).env("PATH", path).output().unwrap();
    assert_ne!(ran.status.code(), Some(2), "{hint} is not a usage error: {}", String::from_utf8_lossy(&ran.stderr));
    ran
}

/// Every hint `dedup` prints names the store (`-s STORE`): `peerpath dedup list`, `verify` and
/// `gc` were printed bare, a usage error (exit 2) as printed. A name not in the store, a character
/// device, standard input without --name, chunks no file refers to, a pack cut short: each hint
/// runs as printed.
#[test]
fn every_dedup_hint_names_the_store_and_runs_as_printed() {
    let dir = scratch();
    let d = dir.path();
    let store = d.join("my $HOME store");
    let dd = |a: &[&str]| pp(args!["dedup"].into_iter().chain(a.iter().map(std::ffi::OsString::from)).chain(args!["-s", &store]).collect::<Vec<_>>());
    std::fs::write(d.join("a"), random_bytes(300_000, 62)).unwrap();
    std::fs::write(d.join("b"), random_bytes(300_000, 63)).unwrap();
    run(dd(&["store", "-q", "a", "b"]).current_dir(d)).ok();
    let e = run(dd(&["restore", "nosuch", "-o", "x"]).current_dir(d)).fails(3, &["not in the store"]).stderr;
    assert!(run_hint(&e, "peerpath dedup list -s ").status.success(), "{e}");
    let e = run(dd(&["remove", "nosuch"]).current_dir(d)).fails(3, &["nothing was removed"]).stderr;
    assert!(run_hint(&e, "peerpath dedup list -s ").status.success(), "{e}");
    let e = run(dd(&["store", "/dev/null"]).current_dir(d)).fails(2, &["character device"]).stderr;
    assert!(run_hint(&e, "| peerpath dedup store - --name NAME -s ").status.success(), "{e}");
    run(&mut dd(&["remove", "-q", "n"])).ok();
    let e = run(dd(&["store", "-"]).current_dir(d)).fails(2, &["needs --name"]).stderr;
    assert!(run_hint(&e, "peerpath dedup store - --name NAME -s ").status.success(), "{e}");
    run(dd(&["remove", "-q", "b"]).current_dir(d)).ok();
    let t = run(dd(&["stats"]).current_dir(d)).ok().stdout_str();
    assert!(run_hint(&t, "peerpath dedup gc -s ").status.success(), "{t}");
    // The pack gc left, cut short.
    let pack = std::fs::read_dir(store.join("packs")).unwrap().next().unwrap().unwrap().path();
    let f = std::fs::OpenOptions::new().write(true).open(pack).unwrap();
    f.set_len(1000).unwrap();
    for args in [&["stats"][..], &["store", "b"], &["gc"]] {
        let e = run(dd(args).current_dir(d)).fails(6, &["peerpath dedup verify"]).stderr;
        assert_eq!(run_hint(&e, "peerpath dedup verify -s ").status.code(), Some(6), "verify finds the damage: {e}");
    }
}

/// `dedup`'s reports count as the job report does (`report::count`): "1 chunk", "2 chunks", never
/// "chunk(s)", "file(s)", "pack(s)", "thread(s)" or "problem(s)".
#[test]
fn dedup_reports_count_one_in_the_singular() {
    let dir = scratch();
    let d = dir.path();
    let st = d.join("st");
    let dd = |a: &[&str]| pp(args!["dedup"].into_iter().chain(a.iter().map(std::ffi::OsString::from)).chain(args!["-s", &st]).collect::<Vec<_>>());
    std::fs::write(d.join("one"), random_bytes(1000, 64)).unwrap();
    std::fs::write(d.join("two"), random_bytes(1000, 65)).unwrap();
    let mut texts = vec![run(dd(&["store", "one", "-T", "1"]).current_dir(d)).ok().stdout_str()];
    assert!(texts[0].contains(" in 1 chunk, ") && texts[0].contains("new (1 chunk)") && texts[0].contains(" on 1 thread,"), "{}", texts[0]);
    texts.push(run(dd(&["store", "two", "-T", "2"]).current_dir(d)).ok().stdout_str());
    texts.push(run(&mut dd(&["verify"])).ok().stdout_str());
    assert!(texts[2].contains("2 chunks match"), "{}", texts[2]);
    texts.push(run(&mut dd(&["remove", "one"])).ok().stdout_str());
    assert!(texts[3].starts_with("removed 1 file "), "{}", texts[3]);
    texts.push(run(&mut dd(&["gc", "-n"])).ok().stdout_str());
    texts.push(run(&mut dd(&["gc"])).ok().stdout_str());
    assert!(texts[5].contains(": 1 pack rewritten") && texts[5].contains("; 1 chunk no file referred to"), "{}", texts[5]);
    let pack = std::fs::read_dir(st.join("packs")).unwrap().next().unwrap().unwrap().path();
    std::fs::OpenOptions::new().write(true).open(pack).unwrap().set_len(10).unwrap();
    texts.push(run(&mut dd(&["verify"])).fails(6, &[": 1 problem: "]).stderr);
    for t in texts {
        assert!(!t.contains("(s)"), "{t}");
    }
}

/// `dedup verify` checks the index's own pages (SQLite's quick_check): with a byte of its header
/// damaged (the reserved bytes of each page), verify said every chunk matched (exit 0) while the
/// next store or remove failed on the malformed index.
#[test]
fn verify_finds_a_damaged_index_page() {
    let dir = scratch();
    let d = dir.path();
    let st = d.join("st");
    std::fs::write(d.join("a"), random_bytes(300_000, 66)).unwrap();
    run(pp(args!["dedup", "store", "-q", "a", "-s", &st]).current_dir(d)).ok();
    run(&mut pp(args!["dedup", "verify", "-q", "-s", &st])).ok();
    let index = st.join("index.sqlite");
    let mut bytes = std::fs::read(&index).unwrap();
    bytes[20] = 0xff;
    std::fs::write(&index, bytes).unwrap();
    run(&mut pp(args!["dedup", "verify", "-s", &st])).fails(6, &["index.sqlite is damaged (SQLite's quick_check: "]);
    run(&mut pp(args!["dedup", "remove", "a", "-s", &st])).fails(6, &["index.sqlite"]);
}
