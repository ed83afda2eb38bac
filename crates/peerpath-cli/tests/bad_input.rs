//! Bad input, one class per test: the exit code the README documents, an
//! error message naming the file (and the member index and byte offset
//! where there is one), nothing left behind, and the source unchanged.

mod common;

use common::*;
use std::path::Path;
use std::time::Duration;

const BLOCK: usize = 64 << 10;

/// A peerpath archive of `data` (64 KiB members) and its member layout.
struct Archive {
    packed: Vec<u8>,
    members: Vec<Member>,
}

fn archive(dir: &Path, data: &[u8], extra: &[&str]) -> Archive {
    // BGZF's blocks are its own (65280 B): --block-size with it is a usage error.
    let mut a = if extra.contains(&"bgzf") { vec![] } else { vec!["--block-size", "64K"] };
    a.extend_from_slice(extra);
    let sub = tempfile::Builder::new().prefix("archive").tempdir_in(dir).unwrap().keep();
    let packed = compress_bytes(&sub, "original", data, &a);
    let members = members(&packed);
    Archive { packed, members }
}

/// 300,000 bytes of protein text: five members (four full, one partial), and the end member.
fn protein_archive(dir: &Path) -> Archive {
    let a = archive(dir, &sample()[..300_000], &[]);
    assert_eq!(a.members.len(), 6);
    a
}

/// Incompressible data: stored deflate blocks, so a flipped data bit
/// decodes fine and only the CRC-32 catches it.
fn random_archive(dir: &Path) -> (Vec<u8>, Archive) {
    let data = random_bytes(5 * BLOCK, 77);
    let a = archive(dir, &data, &[]);
    assert_eq!(a.members.len(), 6, "five, and the end member");
    (data, a)
}

fn put_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

/// Runs `verify` and `decompress` (default target name) on `bytes` saved as
/// `name` in a directory of its own; both must fail with `code` and a
/// message holding `needles` and the file name, within `deadline`; the
/// directory must hold only the unchanged source afterwards.
#[track_caller]
fn expect_bad(dir: &Path, name: &str, bytes: &[u8], code: i32, needles: &[&str], deadline: Duration) {
    let case = dir.join(format!("case-{name}"));
    std::fs::create_dir(&case).unwrap();
    let src = case.join(name);
    std::fs::write(&src, bytes).unwrap();
    let mut n = needles.to_vec();
    n.push(name);
    run_full(&mut pp(args!["verify", &src]), None, deadline).fails(code, &n);
    run_full(&mut pp(args!["decompress", &src]), None, deadline).fails(code, &n);
    // Also with --io sync and an explicit target, the other decoder set-up.
    let target = case.join("explicit-target");
    run_full(&mut pp(args!["decompress", &src, "-o", &target, "--io", "sync"]), None, deadline).fails(code, &n);
    assert_dir_holds(&case, &[name]);
    assert_eq!(std::fs::read(&src).unwrap(), bytes, "{name}: the source was modified");
}

fn bad(dir: &Path, name: &str, bytes: &[u8], code: i32, needles: &[&str]) {
    expect_bad(dir, name, bytes, code, needles, DEADLINE);
}

#[test]
fn archive_truncated_inside_a_member_is_exit_7() {
    let dir = scratch();
    let a = protein_archive(dir.path());
    let m2 = a.members[2];
    let at = format!("member 2 at byte {}", m2.offset);
    bad(dir.path(), "cut-mid-member.gz", &a.packed[..m2.offset + m2.len / 2], 7, &["truncated", &at]);
    let m3 = a.members[3];
    let at3 = format!("member 3 at byte {}", m3.offset);
    bad(dir.path(), "cut-in-header.gz", &a.packed[..m3.offset + 7], 7, &["truncated", &at3]);
    bad(dir.path(), "cut-in-extra-field.gz", &a.packed[..m3.offset + 18], 7, &["truncated", &at3]);
}

#[test]
fn archive_truncated_inside_the_trailer_is_exit_7() {
    let dir = scratch();
    let a = protein_archive(dir.path());
    let last = a.members[4];
    let at = format!("member 4 at byte {}", last.offset);
    for cut in [1, 3, 4, 7] {
        bad(dir.path(), &format!("cut-trailer-{cut}.gz"), &a.packed[..last.offset + last.len - cut], 7, &["truncated", &at]);
    }
}

/// A file cut at a member's end: every member that is left checks, so only the end member
/// peerpath writes after the last tells that more was there. Each reader refuses it (exit 7),
/// keeping nothing: the decoder of files on disk, of memory files whose workers read their own
/// members, of pipes, the gzip front end, scan and a shard set's reverse chain;
/// `--allow-no-end-member` reads what is there, as for files written before end members.
#[test]
fn a_file_cut_at_a_member_end_is_exit_7_unless_allowed() {
    let dir = scratch();
    let a = protein_archive(dir.path());
    let end = a.members[5];
    assert_eq!((end.len, &a.packed[end.offset..]), (34, &peerpath_func::PEERPATH_END_MEMBER[..]), "the file ends with the end member");
    let m3 = a.members[3];
    let cut = &a.packed[..m3.offset];
    let why = format!("ends at byte {}, after a member of peerpath's, without the end member", m3.offset);
    bad(dir.path(), "cut-at-member-end.gz", cut, 7, &[&why, "cut at a member's end", "--allow-no-end-member"]);
    // Cut inside the end member itself: a member cut short.
    bad(dir.path(), "cut-in-end-member.gz", &a.packed[..a.packed.len() - 10], 7, &["truncated", &format!("member 5 at byte {}", end.offset)]);
    // Whole files joined end one another's streams; a cut one after a whole one still fails.
    let joined = dir.path().join("joined.gz");
    std::fs::write(&joined, [&a.packed[..], cut].concat()).unwrap();
    run(&mut pp(args!["verify", &joined])).fails(7, &["cut at a member's end"]);
    std::fs::write(&joined, [&a.packed[..], &a.packed[..]].concat()).unwrap();
    let o = run(&mut pp(args!["decompress", &joined, "-o", "-", "-q"])).ok();
    assert_bytes_eq(&o.stdout, &[&sample()[..300_000], &sample()[..300_000]].concat(), "two whole files joined");
    let src = dir.path().join("cut.gz");
    std::fs::write(&src, cut).unwrap();
    // A pipe: what was decoded went out, and the exit says the rest is lost.
    let o = run_full(&mut pp(args!["decompress", "-", "-o", "-"]), Some(cut.to_vec()), DEADLINE).fails(7, &["cut at a member's end"]);
    assert_bytes_eq(&o.stdout, &sample()[..3 * BLOCK], "a pipe's members before the cut");
    // A memory file whose workers read their own members.
    if let Ok(shm) = tempfile::tempdir_in("/dev/shm") {
        let in_memory = shm.path().join("cut.gz");
        std::fs::write(&in_memory, cut).unwrap();
        let mut cmd = pp(args!["decompress", &in_memory, "-T", "2", "-o", shm.path().join("out")]);
        cmd.env("PEERPATH_WORKER_READS", "1");
        run(&mut cmd).fails(7, &["cut at a member's end"]);
        assert_dir_holds(shm.path(), &["cut.gz"]);
    }
    let o = run(&mut pp(args!["gzip", "-t", &src]));
    assert_eq!(o.code(), Some(1), "{}", o.describe());
    assert!(o.stderr.contains("cut at a member's end"), "{}", o.describe());
    run(&mut pp(args!["scan", &src, "--count", "--min-length", "1"])).fails(7, &["cut at a member's end"]);
    // A shard set of the cut file: its stream is whole, the file in it is not.
    let set = dir.path().join("set");
    run(&mut pp(args!["ec", "encode", &src, "--data", "2", "--parity", "1", "-o", &set, "-q"])).ok();
    let restored = dir.path().join("restored");
    run(&mut pp(args!["decompress", "--ec", &set, "-o", &restored])).fails(7, &["cut at a member's end"]);
    assert!(!restored.exists(), "nothing kept");
    run(&mut pp(args!["decompress", "--ec", &set, "-o", &restored, "--engine", "emulated", "--no-fallback"])).fails(7, &["cut at a member's end"]);
    assert!(!restored.exists(), "nothing kept");
    let o = run(&mut pp(args!["decompress", "--ec", &set, "-o", &restored, "--allow-no-end-member", "-q"])).ok();
    assert!(o.stderr.contains(&format!("no end member after the member that ends at byte {} of its stream", m3.offset)), "{}", o.stderr);
    assert_file_eq(&restored, &sample()[..3 * BLOCK], "--ec, allowed");
    // Allowed: the members there are.
    for extra in [&[][..], &["--io", "sync"][..]] {
        let out = dir.path().join("allowed");
        let mut args = args!["decompress", &src, "-o", &out, "--allow-no-end-member", "-q", "--force"];
        args.extend(extra.iter().map(os));
        run(&mut pp(args)).ok();
        assert_file_eq(&out, &sample()[..3 * BLOCK], "allowed");
    }
    let o = run(&mut pp(args!["verify", &src, "--allow-no-end-member", "-q"])).ok();
    assert!(o.stderr.contains("warning") && o.stderr.contains(&format!("no end member after the member that ends at byte {}", m3.offset)), "{}", o.stderr);
    run(&mut pp(args!["gzip", "-t", "--allow-no-end-member", &src])).ok();
    run(&mut pp(args!["scan", &src, "--count", "--min-length", "1", "--allow-no-end-member"])).ok();
    // Padding after the cut (zeros, as tar's records or a block device leave), or the end member
    // zeroed in place, does not hide it; another kind of member after it (plain gzip's, BGZF's,
    // or one of peerpath's whose 'PP' field was hit) shows the file damaged there (exit 6: it
    // does not end there).
    let zeroed = [&a.packed[..end.offset], &[0u8; 34][..]].concat();
    let plain = sys(&tool("gzip").expect("gzip"), &[&os("-c")], Some(b"plain\n".to_vec()));
    let mut no_extra = a.packed.clone();
    no_extra[m3.offset + 3] &= !4; // FEXTRA off: the 'PP' field is read as the deflate stream
    let bgzf = compress_bytes(dir.path(), "after-cut", b"bgzf data\n", &["--format", "bgzf"]);
    for (name, bytes) in [("cut-padded.gz", [cut, &[0u8; 4096][..]].concat()), ("end-zeroed.gz", zeroed), ("cut-then-plain.gz", [cut, &plain[..]].concat()), ("cut-then-bgzf.gz", [cut, &bgzf[..]].concat()), ("no-extra.gz", no_extra)] {
        let at = if name == "end-zeroed.gz" { end.offset } else { m3.offset };
        let (code, why) = match name {
            "cut-padded.gz" | "end-zeroed.gz" => (7, format!("ends at byte {at}, after a member of peerpath's, without the end member")),
            _ => (6, format!("member 3 at byte {at}: not a member of peerpath's (no 'PP' size field in its header), yet it follows one of peerpath's")),
        };
        bad(dir.path(), name, &bytes, code, &[&why]);
        // The same on a pipe (the streaming decoder).
        run_full(&mut pp(args!["decompress", "-", "-o", "-"]), Some(bytes.clone()), DEADLINE).fails(code, &[if code == 7 { "cut at a member's end" } else { "not a member of peerpath's" }]);
        if let Ok(shm) = tempfile::tempdir_in("/dev/shm") {
            let in_memory = shm.path().join(name);
            std::fs::write(&in_memory, &bytes).unwrap();
            let mut cmd = pp(args!["verify", &in_memory, "-T", "2"]);
            cmd.env("PEERPATH_WORKER_READS", "1");
            run(&mut cmd).fails(code, &[if code == 7 { "cut at a member's end" } else { "this member's header is damaged" }]);
        }
    }
    // A set of the cut file with padding after it: the same on the device as on the CPU; a
    // whole file's padding the device leaves to the CPU (said), which takes it.
    for (name, file) in [("set-cut-padded", [cut, &[0u8; 4096][..]].concat()), ("set-padded", [&a.packed[..], &[0u8; 4096][..]].concat())] {
        let padded = dir.path().join(format!("{name}.gz"));
        std::fs::write(&padded, &file).unwrap();
        let set = dir.path().join(name);
        run(&mut pp(args!["ec", "encode", &padded, "--data", "2", "--parity", "1", "-o", &set, "-q"])).ok();
        let out = dir.path().join(format!("{name}.out"));
        let o = run(&mut pp(args!["decompress", "--ec", &set, "-o", &out, "--engine", "emulated", "--no-fallback"]));
        if name == "set-cut-padded" {
            o.fails(7, &["cut at a member's end"]);
        } else {
            o.fails(15, &["zero bytes where a member would start"]);
            let o = run(&mut pp(args!["decompress", "--ec", &set, "-o", &out, "--engine", "emulated"])).ok();
            assert!(o.stderr.contains("FALLBACK: zero bytes where a member would start"), "{}", o.stderr);
            assert_file_eq(&out, &sample()[..300_000], "a padded set, decoded on the CPU");
        }
    }
    // In a shard set too, on the CPU and in an emulated CSP's memory: the cut, then a BGZF member
    // (damaged there, exit 6).
    let bgzf_one = compress_bytes(dir.path(), "one", b"x", &["--format", "bgzf"]);
    let cut_then_bgzf = dir.path().join("cut-then-bgzf.gz");
    std::fs::write(&cut_then_bgzf, [cut, &bgzf_one[..]].concat()).unwrap();
    let set2 = dir.path().join("set2");
    run(&mut pp(args!["ec", "encode", &cut_then_bgzf, "--data", "2", "--parity", "1", "-o", &set2, "-q"])).ok();
    for engine in ["cpu", "emulated"] {
        let out = dir.path().join(format!("restored-{engine}"));
        run(&mut pp(args!["decompress", "--ec", &set2, "-o", &out, "--engine", engine, "--no-fallback"])).fails(6, &["not a member of peerpath's", "this member's header is damaged"]);
        assert!(!out.exists(), "{engine}: nothing kept");
    }
    // A whole file then another kind of member is whole; BGZF then peerpath's, no BGZF warning.
    let joined = dir.path().join("joined-plain.gz");
    std::fs::write(&joined, [&a.packed[..], &plain[..]].concat()).unwrap();
    run(&mut pp(args!["verify", &joined, "-q"])).ok();
    let bgzf = compress_bytes(dir.path(), "b", &sample()[..100_000], &["--format", "bgzf"]);
    std::fs::write(&joined, [&bgzf[..], &a.packed[..]].concat()).unwrap();
    let o = run(&mut pp(args!["verify", &joined, "-q"])).ok();
    assert!(!o.stderr.contains("warning"), "{}", o.stderr);
    std::fs::write(&joined, &bgzf[..bgzf.len() - 28]).unwrap();
    for stdin in [false, true] {
        let o = if stdin { run_full(&mut pp(args!["verify", "-", "-q"]), Some(bgzf[..bgzf.len() - 28].to_vec()), DEADLINE) } else { run(&mut pp(args!["verify", &joined, "-q"])) };
        assert!(o.ok().stderr.contains("a BGZF file without its end-of-file marker"), "stdin {stdin}");
    }
}

/// A file that kept its length while its end was lost (zeros where data was never written, as
/// after a crash) ends in zeros at a member's start: more than padding leaves is exit 9, not a
/// short output with exit 0. Zeros as padding leaves them are ignored, as gzip does.
#[test]
fn an_end_lost_to_zeros_is_exit_9_and_padding_is_not() {
    let dir = scratch();
    let (data, a) = random_archive(dir.path());
    let m2 = a.members[2];
    let mut lost = a.packed.clone();
    lost[m2.offset..].fill(0);
    let zeros = format!("{} zero bytes after the last member, from byte {}", lost.len() - m2.offset, m2.offset);
    bad(dir.path(), "zero-tail.gz", &lost, 9, &[&zeros, "may be lost"]);
    let padded = dir.path().join("padded.gz");
    std::fs::write(&padded, [&a.packed[..], &[0u8; 10_240][..]].concat()).unwrap();
    let o = run(&mut pp(args!["decompress", &padded, "-o", "-", "-q"])).ok();
    assert_bytes_eq(&o.stdout, &data, "a tar-padded file");
}

#[test]
fn flipped_bit_in_member_data_is_a_crc_mismatch_exit_6() {
    let dir = scratch();
    let (_, a) = random_archive(dir.path());
    let m2 = a.members[2];
    let mut b = a.packed.clone();
    b[m2.offset + m2.len / 2] ^= 0x20;
    let at = format!("member 2 at byte {}", m2.offset);
    bad(dir.path(), "flipped.gz", &b, 6, &[&at, "CRC-32 mismatch"]);
    // A flipped bit in Huffman-coded data: corrupt, whatever the decoder notices first.
    let p = protein_archive(dir.path());
    let m1 = p.members[1];
    let mut b = p.packed.clone();
    b[m1.offset + m1.len / 3] ^= 0x01;
    bad(dir.path(), "flipped-huffman.gz", &b, 6, &[&format!("member 1 at byte {}", m1.offset)]);
    // A flipped bit in the stored CRC itself.
    let mut b = a.packed.clone();
    b[m2.offset + m2.len - 6] ^= 0x80;
    bad(dir.path(), "flipped-crc.gz", &b, 6, &[&at, "CRC-32 mismatch"]);
}

#[test]
fn a_bad_archive_among_several_keeps_no_decompressed_target() {
    let dir = scratch();
    let (_, a) = random_archive(dir.path());
    let p = protein_archive(dir.path());
    let mut flipped = a.packed.clone();
    let m2 = a.members[2];
    flipped[m2.offset + m2.len / 2] ^= 0x20;
    let case = dir.path().join("several");
    std::fs::create_dir(&case).unwrap();
    std::fs::write(case.join("first.gz"), &p.packed).unwrap();
    std::fs::write(case.join("second.gz"), &flipped).unwrap();
    std::fs::write(case.join("third.gz"), &p.packed).unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    // The first archive decodes completely before the second fails: it is
    // not put in place either (like compress, a job keeps all or nothing).
    run(&mut pp(args!["decompress", case.join("first.gz"), case.join("second.gz"), case.join("third.gz"), "-o", &out]))
        .fails(6, &["second.gz", &format!("member 2 at byte {}", m2.offset), "CRC-32 mismatch"]);
    assert!(names_in(&out).is_empty(), "targets left in {}: {:?}", out.display(), names_in(&out));
    assert_dir_holds(&case, &["first.gz", "second.gz", "third.gz"]);
    assert_eq!(std::fs::read(case.join("second.gz")).unwrap(), flipped, "a source was modified");
    // Without the bad one, both are restored.
    run(&mut pp(args!["decompress", case.join("first.gz"), case.join("third.gz"), "-o", &out, "-q"])).ok();
    assert_dir_holds(&out, &["first", "third"]);
}

/// A source that fails part way is in none of the report's figures: they
/// say so, not "bytes in 0 B" and "fallbacks none" as if nothing was read
/// (its error says where it failed).
#[test]
fn verify_of_a_file_failing_part_way_does_not_claim_it_read_nothing() {
    let dir = scratch();
    let (_, a) = random_archive(dir.path());
    let m2 = a.members[2];
    let mut b = a.packed.clone();
    b[m2.offset + m2.len / 2] ^= 0x20;
    let p = dir.path().join("bad-at-member-2.gz");
    std::fs::write(&p, &b).unwrap();
    let out = run(&mut pp(args!["verify", &p])).fails(6, &[&format!("member 2 at byte {}", m2.offset)]);
    let report = out.stdout_str();
    let line = |label: &str| report.lines().find(|l| l.trim_start().starts_with(label)).unwrap_or_else(|| panic!("no {label} line: {report}")).to_string();
    for label in ["bytes in", "bytes out"] {
        assert!(line(label).ends_with("0 B (counting the 0 files that passed, not the 1 file that failed)"), "{report}");
    }
    assert_eq!(line("fallbacks").trim(), "fallbacks     none (in the files that passed)", "{report}");
}

#[test]
fn verify_reports_the_first_bad_member_with_index_and_offset() {
    let dir = scratch();
    let (_, a) = random_archive(dir.path());
    let mut b = a.packed.clone();
    for i in [1, 3, 4] {
        let m = a.members[i];
        b[m.offset + 100 + i] ^= 0x04;
    }
    let p = dir.path().join("three-bad-members.gz");
    std::fs::write(&p, &b).unwrap();
    let first = format!("three-bad-members.gz: member 1 at byte {}: CRC-32 mismatch", a.members[1].offset);
    // The decode is parallel; the report must not depend on which worker finishes first.
    for threads in ["1", "2", "4"] {
        let out = run(&mut pp(args!["verify", &p, "-T", threads])).fails(6, &[&first]);
        assert!(!out.stderr.contains("member 3") && !out.stderr.contains("member 4"), "only the first bad member: {}", out.stderr);
        assert!(out.stdout.is_empty() || !out.stdout_str().contains("OK"), "verify must not say OK: {}", out.stdout_str());
    }
    // The good archive verifies.
    let good = dir.path().join("good.gz");
    std::fs::write(&good, &a.packed).unwrap();
    run(&mut pp(args!["verify", &good])).ok();
}

#[test]
fn corrupt_header_is_exit_6() {
    let dir = scratch();
    let a = protein_archive(dir.path());
    let mut b = a.packed.clone();
    b[2] = 7;
    bad(dir.path(), "cm7.gz", &b, 6, &["member 0 at byte 0", "compression method 7"]);
    let m3 = a.members[3];
    let mut b = a.packed.clone();
    b[m3.offset + 2] = 9;
    bad(dir.path(), "cm9-member3.gz", &b, 6, &[&format!("member 3 at byte {}", m3.offset), "compression method 9"]);
    let mut b = a.packed.clone();
    b[m3.offset + 3] |= 0x80;
    bad(dir.path(), "reserved-flag.gz", &b, 6, &[&format!("member 3 at byte {}", m3.offset), "reserved flag"]);
    // An extra field whose subfield runs past XLEN declares no sizes: gzip reads such a member
    // (it skips the field whole), and so does peerpath, streaming it, said as a fallback; its
    // data is still checked by CRC-32 and length.
    let mut b = a.packed.clone();
    b[14] = 200;
    let odd = dir.path().join("subfield-overrun.gz");
    std::fs::write(&odd, &b).unwrap();
    let o = run(&mut pp(args!["verify", &odd])).ok();
    assert!(o.stdout_str().contains("FALLBACK") && o.stdout_str().contains("stream"), "{}", o.stdout_str());
}

/// Lying size fields: each run under a 60 s deadline (a hang fails), and
/// the decoder must refuse them without reading past the data.
#[test]
fn lying_member_sizes_are_refused_without_hanging() {
    let dir = scratch();
    let a = protein_archive(dir.path());
    let m0 = a.members[0];
    let lie = |f: &dyn Fn(&mut Vec<u8>)| {
        let mut b = a.packed.clone();
        f(&mut b);
        b
    };
    let hang = HANG_DEADLINE;
    let at0 = "member 0 at byte 0";
    // Declared member size too big (still inside the file).
    let b = lie(&|b| put_u32(b, 16, (m0.len + 5000) as u32));
    expect_bad(dir.path(), "member-too-big.gz", &b, 6, &[at0, "size field"], hang);
    // Too small: the declared end falls inside the deflate data.
    let b = lie(&|b| put_u32(b, 16, (m0.len - 5000) as u32));
    expect_bad(dir.path(), "member-too-small.gz", &b, 6, &[at0, "size field"], hang);
    // Smaller than its own header and trailer.
    let b = lie(&|b| put_u32(b, 16, 10));
    expect_bad(dir.path(), "member-tiny.gz", &b, 6, &[at0, "less than its own header"], hang);
    // Too big by far: past the end of the file. The file is whole (gzip reads
    // it): inflating the member shows that it ends sooner, so the field lies
    // (exit 6, as from a pipe; it was "truncated", exit 7, from a file).
    let b = lie(&|b| put_u32(b, 16, u32::MAX));
    let huge = format!("declares 4294967295 member bytes, the member has {}", m0.len);
    expect_bad(dir.path(), "member-huge.gz", &b, 6, &[at0, &huge], hang);
    run_full(&mut pp(args!["verify", "-"]), Some(b.clone()), hang).fails(6, &[at0, &huge]);
    // A memory file whose workers read their own members.
    if let Ok(shm) = tempfile::tempdir_in("/dev/shm") {
        let in_memory = shm.path().join("member-huge.gz");
        std::fs::write(&in_memory, &b).unwrap();
        let mut cmd = pp(args!["decompress", &in_memory, "-T", "2", "-o", shm.path().join("out")]);
        cmd.env("PEERPATH_WORKER_READS", "1");
        run_full(&mut cmd, None, hang).fails(6, &[at0, &huge]);
        assert_dir_holds(shm.path(), &["member-huge.gz"]);
    }
    // A byte too big or too small: the trailer read at the declared end is
    // not the member's, so its ISIZE is not the declared uncompressed size.
    // The member size lies (it said "declares 262144 uncompressed bytes,
    // trailer says 520094720" from a file, the real lie only from a pipe).
    for index in [0, 2] {
        let m = a.members[index];
        for declared in [m.len + 1, m.len - 1] {
            let b = lie(&|b| put_u32(b, m.offset + 16, declared as u32));
            let at = format!("member {index} at byte {}", m.offset);
            let why = format!("declares {declared} member bytes, the member has {}", m.len);
            let name = format!("member-{index}-declares-{declared}.gz");
            expect_bad(dir.path(), &name, &b, 6, &[&at, &why], hang);
            run_full(&mut pp(args!["verify", "-"]), Some(b.clone()), hang).fails(6, &[&at, &why]);
            if let Ok(shm) = tempfile::tempdir_in("/dev/shm") {
                let in_memory = shm.path().join(&name);
                std::fs::write(&in_memory, &b).unwrap();
                let mut cmd = pp(args!["verify", &in_memory, "-T", "2"]);
                cmd.env("PEERPATH_WORKER_READS", "1");
                run_full(&mut cmd, None, hang).fails(6, &[&at, &why]);
            }
        }
    }
    // The same field in a file cut inside that member: truncated.
    let b = lie(&|b| put_u32(b, 16, u32::MAX));
    expect_bad(dir.path(), "member-huge-cut.gz", &b[..m0.len / 2], 7, &[at0, "truncated"], hang);
    // The same lie in a later member.
    let m2 = a.members[2];
    let b = lie(&|b| put_u32(b, m2.offset + 16, (m2.len + 777) as u32));
    expect_bad(dir.path(), "member2-too-big.gz", &b, 6, &[&format!("member 2 at byte {}", m2.offset)], hang);
}

#[test]
fn lying_uncompressed_sizes_are_refused_without_over_allocating() {
    let dir = scratch();
    let a = protein_archive(dir.path());
    let m0 = a.members[0];
    let hang = HANG_DEADLINE;
    let at0 = "member 0 at byte 0";
    // Declared uncompressed size huge, trailer changed to match: refused
    // before anything is allocated.
    let both = |isize: u32| {
        let mut b = a.packed.clone();
        put_u32(&mut b, 20, isize);
        put_u32(&mut b, m0.len - 4, isize);
        b
    };
    expect_bad(dir.path(), "isize-ffffffff.gz", &both(u32::MAX), 6, &[at0, "4294967295"], hang);
    // Smaller than the data: must stop at the declared size, not overflow it.
    expect_bad(dir.path(), "isize-small.gz", &both(1000), 6, &[at0, "more than the declared 1000 bytes"], hang);
    // Larger than the data (but plausible).
    expect_bad(dir.path(), "isize-large.gz", &both(BLOCK as u32 + 1000), 6, &[at0, "length mismatch"], hang);
    // Size subfield and trailer disagree.
    let mut b = a.packed.clone();
    put_u32(&mut b, 20, 12345);
    expect_bad(dir.path(), "isize-disagree.gz", &b, 6, &[at0, &format!("declares 12345 uncompressed bytes, the data gives {BLOCK}")], hang);

    // A decompression bomb by declaration: 64 members of 34 bytes, each
    // claiming 256 MiB. Run under a 1 GiB address-space limit (a normal
    // run with 2 workers needs under 0.5 GiB): allocating what they
    // declare (8 members in flight, 2 GiB) would abort the process.
    let u: u32 = 256 << 20;
    let mut member = vec![0x1f, 0x8b, 8, 4, 0, 0, 0, 0, 4, 3, 12, 0, b'P', b'P', 8, 0];
    member.extend_from_slice(&34u32.to_le_bytes());
    member.extend_from_slice(&u.to_le_bytes());
    member.extend_from_slice(&[0x03, 0x00]); // an empty final fixed-Huffman block
    member.extend_from_slice(&0u32.to_le_bytes());
    member.extend_from_slice(&u.to_le_bytes());
    assert_eq!(member.len(), 34);
    let bomb = dir.path().join("bomb.gz");
    std::fs::write(&bomb, member.repeat(64)).unwrap();
    for verb in ["verify", "decompress"] {
        let mut c = std::process::Command::new("sh");
        c.arg("-c").arg("ulimit -v 1048576 && exec \"$0\" \"$@\"").arg(bin()).arg(verb).arg(&bomb).args(["-T", "2"]);
        run_full(&mut c, None, hang).fails(6, &["bomb.gz", at0, "declares 268435456 uncompressed bytes"]);
    }
    let left: Vec<String> = names_in(dir.path()).into_iter().filter(|n| !n.starts_with("case-") && !n.starts_with("archive")).collect();
    assert_eq!(left, ["bomb.gz"], "the bomb left output behind");
}

#[test]
fn lying_bgzf_block_sizes_are_refused_without_hanging() {
    let dir = scratch();
    let a = archive(dir.path(), &sample()[..300_000], &["--format", "bgzf"]);
    let m0 = a.members[0];
    for (name, bsize) in [("bsize-small.gz", m0.len - 1000), ("bsize-big.gz", m0.len + 1000), ("bsize-tiny.gz", 5)] {
        let mut b = a.packed.clone();
        b[16..18].copy_from_slice(&((bsize - 1) as u16).to_le_bytes());
        expect_bad(dir.path(), name, &b, 6, &["member 0 at byte 0"], HANG_DEADLINE);
    }
}

/// A damaged start of a member in the middle is corruption of that member
/// (exit 6, naming it and where the next one begins), not "trailing
/// garbage after the last member" (exit 9): a member that declares its
/// sizes follows it.
#[test]
fn a_damaged_member_start_in_the_middle_is_corruption_not_trailing_garbage() {
    let dir = scratch();
    for (label, a) in [("gzip", protein_archive(dir.path())), ("bgzf", archive(dir.path(), &sample()[..300_000], &["--format", "bgzf"]))] {
        let (m1, m2) = (a.members[1].offset, a.members[2].offset);
        for byte in [0, 1] {
            let mut b = a.packed.clone();
            b[m1 + byte] ^= 0x40;
            let at = format!("member 1 at byte {m1}");
            let next = format!("begins {} bytes later, at byte {m2}: the file is damaged here", m2 - m1);
            bad(dir.path(), &format!("{label}-magic{byte}.gz"), &b, 6, &[&at, &next]);
        }
    }
}

#[test]
fn trailing_garbage_after_the_last_member_is_exit_9() {
    let dir = scratch();
    let a = protein_archive(dir.path());
    let at = format!("trailing garbage after the last member, at byte {}", a.packed.len());
    bad(dir.path(), "garbage.gz", &[&a.packed[..], b"garbage!"].concat(), 9, &[&at]);
    bad(dir.path(), "one-byte-garbage.gz", &[&a.packed[..], b"x"].concat(), 9, &[&at]);
    // BGZF too.
    let b = archive(dir.path(), &sample()[..100_000], &["--format", "bgzf"]);
    let at = format!("at byte {}", b.packed.len());
    bad(dir.path(), "bgzf-garbage.gz", &[&b.packed[..], &[0xde, 0xad, 0xbe, 0xef][..]].concat(), 9, &[&at]);
    // Random bytes after the last member are garbage too, however many.
    let tail = random_bytes(200_000, 5);
    let at = format!("trailing garbage after the last member, at byte {}", a.packed.len());
    bad(dir.path(), "random-tail.gz", &[&a.packed[..], &tail[..]].concat(), 9, &[&at]);
    // Trailing zeros (tar padding) are not garbage: gzip ignores them too.
    let padded = dir.path().join("padded.gz");
    std::fs::write(&padded, [&a.packed[..], &[0u8; 4096][..]].concat()).unwrap();
    run(&mut pp(args!["decompress", &padded, "-q"])).ok();
    assert_file_eq(&dir.path().join("padded"), &sample()[..300_000], "zero-padded archive");
}

#[test]
fn non_gzip_file_is_exit_8() {
    let dir = scratch();
    bad(dir.path(), "text.gz", b">sp|P12345| a FASTA header, not gzip\nMKV\n", 8, &["not a gzip file", "3e 73"]);
    bad(dir.path(), "zip.gz", b"PK\x03\x04 a zip file, not gzip", 8, &["not a gzip file"]);
    bad(dir.path(), "one-byte.gz", b"x", 8, &["not a gzip file"]);
    // The same through standard input.
    run_full(&mut pp(args!["decompress", "-", "-o", "-"]), Some(b"plain text".to_vec()), DEADLINE).fails(8, &["not a gzip file"]);
}

#[test]
fn empty_file_is_exit_10() {
    let dir = scratch();
    bad(dir.path(), "empty.gz", b"", 10, &["empty file"]);
    run_full(&mut pp(args!["decompress", "-", "-o", "-"]), Some(Vec::new()), DEADLINE).fails(10, &["empty"]);
}

/// An empty input is not an error to compress: it gives a valid .gz (one
/// empty member) that gzip restores to zero bytes.
#[test]
fn empty_input_compresses_to_a_valid_gzip_file() {
    let dir = scratch();
    let src = dir.path().join("nothing");
    std::fs::write(&src, b"").unwrap();
    for format in ["gzip", "bgzf"] {
        let gz = dir.path().join(format!("nothing.{format}.gz"));
        run(&mut pp(args!["compress", &src, "-o", &gz, "--format", format, "-q"])).ok();
        let packed = std::fs::read(&gz).unwrap();
        assert!(packed.len() >= 20, "{format}: an empty input still gives a gzip member");
        if let Some(gzip) = tool("gzip") {
            assert!(sys(&gzip, &[std::ffi::OsStr::new("-dc"), gz.as_os_str()], None).is_empty(), "{format}: gzip -d gives 0 bytes");
        } else {
            eprintln!("note: gzip not installed; checked the empty .gz with peerpath only");
        }
        run(&mut pp(args!["verify", &gz, "-q"])).ok();
        let back = dir.path().join(format!("back.{format}"));
        run(&mut pp(args!["decompress", &gz, "-o", &back, "-q"])).ok();
        assert_file_eq(&back, b"", "empty round trip");
    }
    // An empty standard input too.
    let out = run_full(&mut pp(args!["compress", "-", "-o", "-", "-q"]), Some(Vec::new()), DEADLINE).ok();
    assert!(!out.stdout.is_empty(), "empty stdin still gives a gzip member");
    if let Some(gzip) = tool("gzip") {
        assert!(sys(&gzip, &[std::ffi::OsStr::new("-d")], Some(out.stdout)).is_empty());
    }
}

#[test]
fn missing_source_is_exit_3_and_leaves_nothing() {
    let dir = scratch();
    let missing = dir.path().join("no-such-file");
    run(&mut pp(args!["compress", &missing])).fails(3, &["no-such-file", "No such file"]);
    run(&mut pp(args!["decompress", dir.path().join("no-such-file.gz")])).fails(3, &["no-such-file.gz"]);
    run(&mut pp(args!["verify", dir.path().join("no-such-file.gz")])).fails(3, &["no-such-file.gz"]);
    // Several sources, one missing: no target of any of them is kept.
    let out = dir.path().join("out");
    std::fs::write(dir.path().join("a"), &sample()[..100_000]).unwrap();
    std::fs::write(dir.path().join("c"), &sample()[..200_000]).unwrap();
    run(&mut pp(args!["compress", dir.path().join("a"), &missing, dir.path().join("c"), "-o", &out])).fails(3, &["no-such-file"]);
    assert!(!out.exists() || names_in(&out).is_empty(), "targets left in {}: {:?}", out.display(), names_in(&out));
    assert_dir_holds(dir.path(), &if out.exists() { vec!["a", "c", "out"] } else { vec!["a", "c"] });
}

#[test]
fn unreadable_source_is_exit_3() {
    let dir = scratch();
    // A directory is never a readable source, root or not.
    let d = dir.path().join("a-directory");
    std::fs::create_dir(&d).unwrap();
    run(&mut pp(args!["compress", &d, "-o", dir.path().join("d.gz")])).fails(3, &["a-directory", "is a directory"]);
    run(&mut pp(args!["decompress", &d, "-o", dir.path().join("d")])).fails(3, &["a-directory"]);
    // Every file command says it in the same words and exit code, and makes nothing (no empty store).
    let key = dir.path().join("key");
    run(&mut pp(args!["keygen", "-o", &key])).ok();
    for cmd in [&["encrypt", "--key-file"][..], &["decrypt", "--key-file"]] {
        run(&mut pp(args![cmd[0], &d, "-o", dir.path().join("x"), cmd[1], &key])).fails(3, &["a-directory", "is a directory"]);
    }
    run(&mut pp(args!["scan", &d, "--count", "--min-length", "3"])).fails(3, &["a-directory", "is a directory"]);
    run(&mut pp(args!["ec", "encode", &d, "--data", "2", "--parity", "1", "-o", dir.path().join("set")])).fails(3, &["a-directory", "is a directory"]);
    run(&mut pp(args!["dedup", "store", &d, "-s", dir.path().join("st")])).fails(3, &["a-directory", "is a directory"]);
    run(&mut pp(args!["dedup", "store", &key, dir.path().join("missing"), "-s", dir.path().join("st")])).fails(3, &["missing"]);
    assert_dir_holds(dir.path(), &["a-directory", "key"]);
    // chmod 000 stops reads, except for root.
    let f = dir.path().join("locked");
    std::fs::write(&f, b"secret").unwrap();
    if running_as_root(dir.path()) {
        eprintln!("SKIPPED the chmod 000 case of unreadable_source_is_exit_3: running as root, which reads any file");
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o000)).unwrap();
    run(&mut pp(args!["compress", &f])).fails(3, &["locked", "Permission denied"]);
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
    assert_dir_holds(dir.path(), &["a-directory", "locked"]);
}

#[test]
fn source_equal_to_target_is_exit_5_and_leaves_the_source_intact() {
    let dir = scratch();
    let data = &sample()[..250_000];
    let src = dir.path().join("data.fa");
    std::fs::write(&src, data).unwrap();
    std::fs::hard_link(&src, dir.path().join("hardlink")).unwrap();
    std::os::unix::fs::symlink(&src, dir.path().join("symlink")).unwrap();
    for target in [src.clone(), dir.path().join("hardlink"), dir.path().join("symlink"), dir.path().join(".").join("data.fa")] {
        for force in [false, true] {
            let mut a = args!["compress", &src, "-o", &target];
            if force {
                a.push("--force".into());
            }
            run(&mut pp(a)).fails(5, &["same file"]);
            assert_file_eq(&src, data, &format!("source after -o {} (force {force})", target.display()));
        }
    }
    // decompress too.
    let gz = dir.path().join("data.fa.gz");
    run(&mut pp(args!["compress", &src, "-q"])).ok();
    let packed = std::fs::read(&gz).unwrap();
    for force in [false, true] {
        let mut a = args!["decompress", &gz, "-o", &gz];
        if force {
            a.push("-f".into());
        }
        run(&mut pp(a)).fails(5, &["same file", "data.fa.gz"]);
        assert_file_eq(&gz, &packed, "compressed source after decompress -o itself");
    }
    assert_dir_holds(dir.path(), &["data.fa", "data.fa.gz", "hardlink", "symlink"]);
}

#[test]
fn existing_target_is_exit_4_without_force_and_replaced_with_force() {
    let dir = scratch();
    let data = &sample()[..123_457];
    let src = dir.path().join("x");
    let gz = dir.path().join("x.gz");
    std::fs::write(&src, data).unwrap();
    std::fs::write(&gz, b"precious").unwrap();
    run(&mut pp(args!["compress", &src])).fails(4, &["x.gz", "--force"]);
    assert_file_eq(&gz, b"precious", "the existing target without --force");
    assert_dir_holds(dir.path(), &["x", "x.gz"]);
    run(&mut pp(args!["compress", &src, "--force", "-q"])).ok();
    assert_ne!(std::fs::read(&gz).unwrap(), b"precious");
    run(&mut pp(args!["verify", &gz, "-q"])).ok();
    // decompress: the target is the source without .gz, which exists.
    std::fs::write(&src, b"also precious").unwrap();
    run(&mut pp(args!["decompress", &gz])).fails(4, &["x", "--force"]);
    assert_file_eq(&src, b"also precious", "the existing target of decompress");
    run(&mut pp(args!["decompress", &gz, "-f", "-q"])).ok();
    assert_file_eq(&src, data, "decompress --force");
    assert_dir_holds(dir.path(), &["x", "x.gz"]);
}

/// `-o /dev/stdout` with standard output a file: `/dev/stdout` is a link to `/proc/self/fd/1`,
/// which names that regular file; with --force the output was renamed over the system's link
/// (exit 0, the file left empty). Nothing is made in /dev itself or /proc, with or without
/// --force, on every command that takes `-o`.
#[test]
fn a_target_in_dev_or_proc_is_refused_even_with_force() {
    let dir = scratch();
    let d = dir.path();
    let src = d.join("x");
    std::fs::write(&src, &sample()[..50_000]).unwrap();
    let gz = d.join("x.gz");
    run(&mut pp(args!["compress", &src, "-q"])).ok();
    let fa = d.join("x.fa");
    std::fs::write(&fa, b">a\nACGT\n").unwrap();
    let key = d.join("k");
    run(&mut pp(args!["keygen", "-o", &key])).ok();
    let link_before = std::fs::read_link("/dev/stdout").ok();
    let commands = [
        vec![os("compress"), os(&src)],
        vec![os("decompress"), os(&gz)],
        vec![os("scan"), os(&fa), os("--motif"), os("A")],
        vec![os("encrypt"), os(&src), os("--key-file"), os(&key)],
    ];
    for target in ["/dev/stdout", "/proc/self/fd/1"] {
        for args in &commands {
            for force in [false, true] {
                let captured = d.join("captured");
                let mut c = pp(args);
                c.args(["-o", target]);
                if force {
                    c.arg("-f");
                }
                // Standard output a regular file (`run` would make it a pipe, refused as one).
                let o = c.stdout(std::fs::File::create(&captured).unwrap()).output().unwrap();
                let stderr = String::from_utf8_lossy(&o.stderr);
                assert_eq!(o.status.code(), Some(2), "{args:?} -o {target} (force {force}): {stderr}");
                assert!(stderr.contains(&format!("target {target} is in /")) && stderr.contains("whose names are the system's"), "{stderr}");
                assert_eq!(std::fs::metadata(&captured).unwrap().len(), 0, "nothing written");
                assert_eq!(std::fs::read_link("/dev/stdout").ok(), link_before, "{args:?} -o {target}: /dev/stdout is still the system's link");
            }
        }
    }
    assert!(std::fs::symlink_metadata("/dev/stdout").is_ok_and(|m| m.file_type().is_symlink()), "/dev/stdout is a link");
}

#[test]
fn full_target_file_system_is_exit_11_and_keeps_nothing() {
    let test = "full_target_file_system_is_exit_11_and_keeps_nothing";
    let Some(fs) = TmpfsMount::new(test, "1m") else { return };
    let dir = scratch();
    let big = dir.path().join("big");
    let data = random_bytes(3_000_000, 5); // incompressible: 3 MB of output for 1 MB of space
    std::fs::write(&big, &data).unwrap();
    let small = dir.path().join("small");
    std::fs::write(&small, &sample()[..10_000]).unwrap();
    let target = fs.dir.join("big.gz");
    for io in [vec![], vec!["--io", "sync"], vec!["--no-direct"]] {
        let mut a = args!["compress", &big, "-o", &target];
        a.extend(io.iter().map(std::ffi::OsString::from));
        run(&mut pp(a)).fails(11, &["big.gz", "No space left", "nothing was kept"]);
        assert_dir_holds(&fs.dir, &[]);
    }
    // Several targets, the small one would fit: none is kept.
    // Which of the two writes meets ENOSPC first depends on timing; the
    // message names that one.
    let out = run(&mut pp(args!["compress", &small, &big, "-o", &fs.dir])).fails(11, &["No space left", "nothing was kept"]);
    assert!(out.stderr.contains("big.gz") || out.stderr.contains("small.gz"), "the message names no target: {}", out.stderr);
    assert_dir_holds(&fs.dir, &[]);
    // decompress into the full file system.
    let gz = dir.path().join("big.gz");
    run(&mut pp(args!["compress", &big, "-o", &gz, "-q"])).ok();
    // Written (the default with fewer than 8 workers), and mapped: its pages allocated by
    // each worker, and by one thread ahead of them.
    run(&mut pp(args!["decompress", &gz, "-o", fs.dir.join("big")])).fails(11, &["No space left"]);
    assert_dir_holds(&fs.dir, &[]);
    for allocation in ["each", "ahead"] {
        run(pp(args!["decompress", &gz, "-o", fs.dir.join("big")]).env("PEERPATH_MAPPED_OUTPUT", "1").env("PEERPATH_MAPPED_ALLOCATION", allocation)).fails(11, &["No space left"]);
        assert_dir_holds(&fs.dir, &[]);
    }
    assert_file_eq(&big, &data, "the source after ENOSPC");
    // Standard output redirected to a file there: what reached it stays, and the error says how much
    // (it said 0: the bytes of the write that failed part way were not counted).
    for io in ["auto", "sync"] {
        let out = fs.dir.join("stdout.gz");
        let o = pp(args!["compress", &big, "-o", "-", "--io", io]).stdout(std::fs::File::create(&out).unwrap()).stderr(std::process::Stdio::piped()).output().unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(11), "{stderr}");
        let len = std::fs::metadata(&out).unwrap().len();
        assert!(len > 0 && stderr.contains(&format!("after {len} bytes had been written")), "{len} bytes there: {stderr}");
        std::fs::remove_file(&out).unwrap();
    }
    // A target that fits still works there (the mount is usable).
    run(&mut pp(args!["compress", &small, "-o", fs.dir.join("small.gz"), "-q"])).ok();
    assert_dir_holds(&fs.dir, &["small.gz"]);
    drop(fs);
}

#[test]
fn usage_errors_are_exit_2() {
    let dir = scratch();
    let a = dir.path().join("a");
    let b = dir.path().join("sub").join("a");
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::fs::write(&a, b"1").unwrap();
    std::fs::write(&b, b"2").unwrap();
    let out = dir.path().join("out");
    run(&mut pp(args!["compress", &a, &b, "-o", &out])).fails(2, &["both write"]);
    // The same file under two spellings: refused before any work (it said "target exists",
    // exit 4, and with --force compressed it twice).
    for force in [false, true] {
        let mut c = pp(args!["compress", "a", "./a", "sub/../a"]);
        c.current_dir(dir.path());
        if force {
            c.arg("-f");
        }
        run(&mut c).fails(2, &["both write ./a.gz"]);
        assert!(!dir.path().join("a.gz").exists());
    }
    run(&mut pp(args!["compress", "-"])).fails(2, &["--output"]);
    run(&mut pp(args!["decompress", &a])).fails(2, &["unknown suffix"]);
    let o = run(&mut pp(args!["compress", "--level", "x", &a]));
    assert_eq!(o.code(), Some(2), "clap usage error: {}", o.stderr);
}

/// Errors that named the wrong fault: a missing source said "target exists" (exit 4) where the
/// target was there, a target file written as "FILE/" said "File exists" (exit 11), a name with
/// no gzip suffix into a directory said "use --output" where --output was given, and BGZF
/// dropped --block-size without a word.
#[test]
fn errors_name_the_fault_the_user_must_fix() {
    let dir = scratch();
    let a = dir.path().join("a");
    std::fs::write(&a, b"hello").unwrap();
    let old = dir.path().join("old.gz");
    std::fs::write(&old, b"not touched").unwrap();
    for cmd in ["compress", "decompress"] {
        run(&mut pp(args![cmd, dir.path().join("missing.gz"), "-o", &old])).fails(3, &["cannot read source", "missing.gz"]);
    }
    let slash = format!("{}/", old.display());
    run(&mut pp(args!["compress", &a, "-o", &slash])).fails(2, &["old.gz is not a directory", "ending in /"]);
    run(&mut pp(args!["compress", &a, &a, "-o", &slash])).fails(2, &["old.gz is not a directory"]);
    let noext = dir.path().join("noext");
    let gz = compress_bytes(dir.path(), "n", b"x", &[]);
    std::fs::write(&noext, gz).unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    run(&mut pp(args!["decompress", &noext, "-o", &out])).fails(2, &["unknown suffix", "decompress it alone with --output FILE, or rename it"]);
    // A suffix in another case is one, as gzip -d takes it: up.GZ -> up, t.TGZ -> t.tar.
    for (name, restored) in [("up.GZ", "up"), ("t.TGZ", "t.tar")] {
        std::fs::write(out.join(name), std::fs::read(dir.path().join("n.gz")).unwrap()).unwrap();
        run(&mut pp(args!["decompress", out.join(name)])).ok();
        assert_eq!(std::fs::read(out.join(restored)).unwrap(), b"x");
    }
    run(&mut pp(args!["compress", &a, "-o", dir.path().join("b.gz"), "--format", "bgzf", "--block-size", "4M"])).fails(2, &["65280", "drop --block-size"]);
    assert_eq!(std::fs::read(&old).unwrap(), b"not touched");
    assert_dir_holds(dir.path(), &["a", "old.gz", "noext", "out", "n", "n.gz"]);
}

/// Standard output that is the source file itself (`decompress a.gz -o - >> a.gz`,
/// `gzip -c a >> a`, `compress - -o - < a >> a`): refused before anything is written (exit 5;
/// the gzip front end's 1), the source unchanged. It appended to the file being read, exit 0.
#[test]
fn standard_output_that_is_the_source_is_refused() {
    let dir = scratch();
    let data = &sample()[..300_000];
    let gz = dir.path().join("a.gz");
    std::fs::write(&gz, compress_bytes(dir.path(), "a", data, &[])).unwrap();
    let packed = std::fs::read(&gz).unwrap();
    let src = dir.path().join("a");
    let append = |p: &Path| std::fs::OpenOptions::new().append(true).open(p).unwrap();
    let o = pp(args!["decompress", &gz, "-o", "-", "-q"]).stdout(append(&gz)).output().unwrap();
    assert_eq!(o.status.code(), Some(5), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stderr).contains("the same file: standard output"));
    assert_eq!(std::fs::read(&gz).unwrap(), packed, "the source is unchanged");
    let o = pp(args!["gzip", "-c", &src]).stdout(append(&src)).output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", String::from_utf8_lossy(&o.stderr));
    let o = pp(args!["compress", "-", "-o", "-", "-q"]).stdin(std::fs::File::open(&src).unwrap()).stdout(append(&src)).output().unwrap();
    assert_eq!(o.status.code(), Some(5), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(std::fs::read(&src).unwrap(), data, "the source is unchanged");
    // Another file as standard output still works.
    let other = dir.path().join("other.gz");
    let o = pp(args!["compress", &src, "-o", "-", "-q"]).stdout(std::fs::File::create(&other).unwrap()).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// The same member without its extra field: a valid gzip member that
/// declares no sizes ("foreign"), so the decoder streams from there on.
fn without_sizes(member: &[u8]) -> Vec<u8> {
    let xlen = u16::from_le_bytes([member[10], member[11]]) as usize;
    let mut m = member[..10].to_vec();
    m[3] &= !0x04;
    m.extend_from_slice(&member[12 + xlen..]);
    m
}

/// Size fields are checked in the streaming path too (a file that starts
/// with a foreign member, or has a member larger than the read window,
/// is decoded by the streaming decoder): a lie must not pass there.
#[test]
fn lying_sizes_are_refused_by_the_streaming_decoder_too() {
    let dir = scratch();
    let a = protein_archive(dir.path());
    let foreign = without_sizes(&a.packed[..a.members[0].len]);
    // Sanity: foreign + the rest is a valid file, decoded by streaming.
    let good: Vec<u8> = [&foreign[..], &a.packed[a.members[1].offset..]].concat();
    let p = dir.path().join("foreign-first.gz");
    std::fs::write(&p, &good).unwrap();
    let out = run(&mut pp(args!["decompress", &p, "--verbose", "-q"])).ok();
    assert!(out.stderr.contains("streaming"), "{}", out.stderr);
    assert_file_eq(&dir.path().join("foreign-first"), &sample()[..300_000], "foreign first member");

    let m2 = a.members[2];
    let shift = foreign.len() as isize - a.members[0].len as isize;
    let at2 = format!("member 2 at byte {}", m2.offset as isize + shift);
    let lie = |f: &dyn Fn(&mut [u8])| {
        let mut b = good.clone();
        let start = (m2.offset as isize + shift) as usize;
        f(&mut b[start..]);
        b
    };
    let hang = HANG_DEADLINE;
    expect_bad(dir.path(), "stream-member-too-big.gz", &lie(&|b| put_u32(b, 16, (m2.len + 777) as u32)), 6, &[&at2, "size field"], hang);
    expect_bad(dir.path(), "stream-member-too-small.gz", &lie(&|b| put_u32(b, 16, (m2.len - 777) as u32)), 6, &[&at2, "size field"], hang);
    expect_bad(dir.path(), "stream-isize-disagree.gz", &lie(&|b| put_u32(b, 20, 12345)), 6, &[&at2, "size field"], hang);
}

/// As `gzip -t`: `verify` with several files names every bad one, not only the first.
#[test]
fn verify_names_every_bad_file() {
    let dir = scratch();
    let d = dir.path();
    let src = d.join("a");
    std::fs::write(&src, random_bytes(100_000, 77)).unwrap();
    let good = d.join("a.gz");
    run(&mut pp(args!["compress", "-q", &src, "-o", &good])).ok();
    let gz = std::fs::read(&good).unwrap();
    let mut flipped = gz.clone();
    flipped[5000] ^= 0x40;
    std::fs::write(d.join("b.gz"), &flipped).unwrap();
    std::fs::write(d.join("c.gz"), &gz[..3000]).unwrap();
    let o = run(&mut pp(args!["verify", &good, d.join("b.gz"), &good, d.join("c.gz")])).fails(7, &["b.gz: member 0", "c.gz: truncated"]);
    assert_eq!(o.stderr.matches("peerpath: error:").count(), 2, "{}", o.stderr);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("FAILED        ") && text.contains("(exit 6)"), "the report names them too: {text}");
    // A script reading --json gets every file's verdict, the good ones included.
    let o = run(&mut pp(args!["verify", &good, d.join("b.gz"), &good, d.join("c.gz"), "--json"])).fails(7, &["b.gz: member 0"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stdout)));
    assert_eq!(v["files"].as_array().map(Vec::len), Some(2), "{v}");
    let failed: Vec<(String, i64)> = v["failed"].as_array().expect("failed").iter().map(|f| (f["source"].as_str().unwrap().to_string(), f["exit_code"].as_i64().unwrap())).collect();
    assert!(matches!(&failed[..], [(b, 6), (c, 7)] if b.ends_with("b.gz") && c.ends_with("c.gz")), "{failed:?}");
    run(&mut pp(args!["verify", &good, &good, "-q"])).ok();
}

/// Decoded to standard output, a file found bad at its end has already sent its first
/// members' bytes, which cannot be taken back: how many is said, beside the error (the reader
/// got a stream cut short and nothing said so). One thread: batches are decoded in order.
#[test]
fn a_stream_cut_short_by_a_bad_member_says_how_much_went_out() {
    let dir = scratch();
    let d = dir.path();
    let data = mixed_data(12 << 20, 41);
    let mut gz = compress_bytes(d, "m", &data, &[]);
    let n = gz.len();
    gz[n - 100] ^= 0xff;
    std::fs::write(d.join("bad.gz"), &gz).unwrap();
    let o = run(&mut pp(args!["decompress", d.join("bad.gz"), "-o", "-", "-T", "1"])).fails(6, &["member"]);
    assert!(!o.stdout.is_empty() && data.starts_with(&o.stdout), "the first members' bytes, exactly");
    assert!(o.stderr.contains(&format!("peerpath: {} bytes had reached standard output before the job failed", o.stdout.len())), "{}", o.stderr);
}

/// A source written in place while it is read (same size: a database file, a file being copied
/// over) is refused, exit 12, nothing kept, by every command that reads a file by offset:
/// compress on the CPU and on an emulated CSP, encrypt, ec encode and the compress --ec chain.
/// They compared only the size, and kept an output of a state the file never had, which
/// verified (exit 0). A writer rewrites a block of the file over and over, moving its
/// modification time to a new value each time (so that a coarse clock cannot hide a write),
/// from before the job starts until it ends; a job it did not reach (a scheduler may starve
/// it) must succeed, and a few runs are made until one is refused.
#[test]
fn a_source_written_in_place_while_read_is_refused() {
    let dir = scratch();
    let d = dir.path();
    let old = random_bytes(16 << 20, 31);
    let block = random_bytes(1 << 20, 32);
    let mid = (8 << 20) as u64;
    let mut new = old.clone();
    new[mid as usize..][..block.len()].copy_from_slice(&block);
    let src = d.join("busy");
    let key = d.join("key");
    run(&mut pp(args!["keygen", "-o", &key])).ok();
    let jobs: [(&str, Vec<std::ffi::OsString>); 5] = [
        ("compress", args!["compress", &src, "-o", d.join("out"), "-q"]),
        ("compress --engine emulated", args!["compress", &src, "-o", d.join("out"), "-q", "--engine", "emulated", "--device-memory", "64M", "--no-fallback"]),
        ("encrypt", args!["encrypt", &src, "-o", d.join("out"), "-q", "--key-file", &key]),
        ("ec encode", args!["ec", "encode", &src, "-k", "2", "-m", "1", "-o", d.join("out"), "-q"]),
        ("compress --ec", args!["compress", &src, "--ec", "2+1", "-o", d.join("out"), "-q"]),
    ];
    for (what, job) in &jobs {
        let mut refused = false;
        for attempt in 0..10u64 {
            std::fs::write(&src, &old).unwrap();
            let (o, _) = while_rewritten(&src, (&old[mid as usize..][..block.len()], &block, mid), attempt, || run(&mut pp(job.clone())));
            let out = d.join("out");
            if o.code() == Some(12) {
                assert!(o.stderr.contains("changed while"), "{what}: {}", o.stderr);
                assert!(!out.exists(), "{what}: nothing kept");
                refused = true;
                break;
            }
            // Not reached by the writer: one version whole, or it would be a mix.
            assert_eq!(o.code(), Some(0), "{what}: {}", o.stderr);
            let _ = std::fs::remove_file(&out).or_else(|_| std::fs::remove_dir_all(&out));
        }
        assert!(refused, "{what}: never refused in 10 runs with a writer at work");
    }
}

/// A file found bad part way says how far it was checked: every member before the bad one
/// (decoded and checked by the time the job ends, whichever worker finished first), their
/// compressed bytes (up to the bad member's offset) and their decoded bytes, in the text
/// report and in --json.
#[test]
fn a_file_failing_part_way_says_how_far_it_was_checked() {
    let dir = scratch();
    let (data, a) = random_archive(dir.path());
    let m3 = a.members[3];
    let mut b = a.packed.clone();
    b[m3.offset + m3.len / 2] ^= 0x20;
    let p = dir.path().join("bad-at-member-3.gz");
    std::fs::write(&p, &b).unwrap();
    let out_bytes = data[..3 * BLOCK].len();
    for threads in ["1", "2", "4"] {
        let out = run(&mut pp(args!["verify", &p, "-T", threads])).fails(6, &[&format!("member 3 at byte {}", m3.offset)]);
        let report = out.stdout_str();
        let failed = report.lines().find(|l| l.trim_start().starts_with("FAILED")).unwrap_or_else(|| panic!("no FAILED line: {report}"));
        let want = ["; the 3 members before it (".to_string(), format!("({} B) in, ", m3.offset), format!("({out_bytes} B) out) checked")];
        assert!(want.iter().all(|w| failed.contains(w.as_str())), "{failed}");
        let o = run(&mut pp(args!["verify", &p, "-T", threads, "--json"])).fails(6, &[]);
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stdout)));
        let checked = &v["failed"][0]["checked"];
        assert_eq!((checked["members"].as_u64(), checked["bytes_in"].as_u64(), checked["bytes_out"].as_u64()), (Some(3), Some(m3.offset as u64), Some(out_bytes as u64)), "{v}");
    }
}

/// A file that failed after the streaming decoder took over (a size field that lies is
/// streamed, to tell a lie from a cut) says so: the whole file streamed is listed in the
/// fallbacks, a switch part way on its FAILED line, with the members checked before the
/// error (by the parallel part and the streaming decoder, not the bad member's own output);
/// so too from standard input.
#[test]
fn a_failed_file_that_streamed_says_how_and_how_far() {
    let dir = scratch();
    let a = protein_archive(dir.path());
    let failed_line = |report: &str| report.lines().find(|l| l.trim_start().starts_with("FAILED")).unwrap_or_else(|| panic!("no FAILED line: {report}")).to_string();
    // Member 0 declares more bytes than the file holds: streamed from the start.
    let mut b = a.packed.clone();
    put_u32(&mut b, 16, u32::MAX);
    let p = dir.path().join("member-0-huge.gz");
    std::fs::write(&p, &b).unwrap();
    let out = run(&mut pp(args!["verify", &p])).fails(6, &["member 0 at byte 0"]);
    let report = out.stdout_str();
    let fallback = report.lines().find(|l| l.trim_start().starts_with("FALLBACK")).unwrap_or_else(|| panic!("no FALLBACK line: {report}"));
    assert!(fallback.contains("member-0-huge.gz") && fallback.contains("streaming on one thread"), "{report}");
    // Nothing was checked before it: the line says no "0 members" (the JSON's `checked` has them).
    assert!(!failed_line(&report).contains("before it"), "{report}");
    // Member 2 declares a byte more than it has: parallel for two members, then streamed.
    let m2 = a.members[2];
    let mut b = a.packed.clone();
    put_u32(&mut b, m2.offset + 16, (m2.len + 1) as u32);
    let p = dir.path().join("member-2-lies.gz");
    std::fs::write(&p, &b).unwrap();
    let checked = ["; the 2 members before it (".to_string(), format!("({} B) in, ", m2.offset), format!("({} B) out) checked", 2 * BLOCK)];
    let line = failed_line(&run(&mut pp(args!["verify", &p])).fails(6, &[&format!("member 2 at byte {}", m2.offset)]).stdout_str());
    assert!(checked.iter().all(|c| line.contains(c.as_str())) && line.contains("; decoding: parallel for 2 members, then streaming"), "{line}");
    let o = run_full(&mut pp(args!["verify", "-", "--json"]), Some(b.clone()), DEADLINE).fails(6, &[]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stdout)));
    let c = &v["failed"][0]["checked"];
    assert_eq!((c["members"].as_u64(), c["bytes_in"].as_u64(), c["bytes_out"].as_u64()), (Some(2), Some(m2.offset as u64), Some(2 * BLOCK as u64)), "{v}");
    assert!(v["fallbacks"].as_array().is_some_and(|f| f.iter().any(|f| f == "-: streaming: the source is a pipe")), "{v}");
}
