//! Interoperability both ways with the system's gzip, pigz, zcat and
//! bgzip (htslib), including real gzip files found on this machine and
//! hand-made members with every optional header field.
//!
//! A test whose tool is missing is skipped with a printed reason
//! (scripts/install-deps.sh installs them all).

mod common;

use common::*;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

fn o(s: &str) -> &OsStr {
    OsStr::new(s)
}

#[test]
fn gzip_pigz_and_zcat_restore_peerpath_output() {
    let Some(t) = tools_or_skip("gzip_pigz_and_zcat_restore_peerpath_output", &["gzip", "pigz", "zcat"]) else { return };
    let (gzip, pigz, zcat) = (&t[0], &t[1], &t[2]);
    let dir = scratch();
    for (i, (size, extra)) in [
        (0usize, vec![]),
        (1, vec![]),
        (1_000_003, vec!["--block-size", "64K"]),
        (3_000_000, vec!["-l", "9", "--block-size", "256K"]),
        (2_000_000, vec!["-l", "0"]),
    ]
    .into_iter()
    .enumerate()
    {
        let what = format!("{size} bytes, {extra:?}");
        let data = mixed_data(size, i as u64);
        let gz = compress_bytes(dir.path(), &format!("f{i}"), &data, &extra);
        let gzp = dir.path().join(format!("f{i}.gz"));
        sys(gzip, &[o("-t"), gzp.as_os_str()], None);
        assert_bytes_eq(&sys(gzip, &[o("-dc"), gzp.as_os_str()], None), &data, &format!("gzip -d, {what}"));
        assert_bytes_eq(&sys(pigz, &[o("-dc"), gzp.as_os_str()], None), &data, &format!("pigz -d, {what}"));
        assert_bytes_eq(&sys(zcat, &[gzp.as_os_str()], None), &data, &format!("zcat, {what}"));
        // And through a pipe, as `... | gzip -d` sees it.
        assert_bytes_eq(&sys(gzip, &[o("-d")], Some(gz)), &data, &format!("gzip -d from a pipe, {what}"));
    }
}

#[test]
fn bgzip_restores_and_indexes_bgzf_output() {
    let Some(t) = tools_or_skip("bgzip_restores_and_indexes_bgzf_output", &["bgzip"]) else { return };
    let bgzip = &t[0];
    let dir = scratch();
    let data = mixed_data(1_500_000, 4);
    let packed = compress_bytes(dir.path(), "reads.fa", &data, &["--format", "bgzf"]);
    let gz = dir.path().join("reads.fa.gz");
    assert_eq!(&packed[packed.len() - 28..], &[0x1f, 0x8b, 8, 4, 0, 0, 0, 0, 0, 0xff, 6, 0, b'B', b'C', 2, 0, 0x1b, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0][..], "BGZF EOF marker");
    let out = run(std::process::Command::new(bgzip).arg("-dc").arg(&gz)).ok();
    assert_bytes_eq(&out.stdout, &data, "bgzip -d");
    assert!(!out.stderr.contains("EOF"), "bgzip warns: {}", out.stderr);
    // bgzip -r indexes it; random access through the index returns the right bytes.
    sys(bgzip, &[o("-r"), gz.as_os_str()], None);
    let gzi = dir.path().join("reads.fa.gz.gzi");
    assert!(std::fs::metadata(&gzi).map(|m| m.len() > 8).unwrap_or(false), "bgzip -r wrote no index");
    for (off, len) in [(0usize, 100usize), (65_279, 3), (700_001, 200_000), (1_499_990, 10)] {
        let got = sys(bgzip, &[o("-c"), o("-b"), o(&off.to_string()), o("-s"), o(&len.to_string()), gz.as_os_str()], None);
        assert_bytes_eq(&got, &data[off..off + len], &format!("bgzip -b {off} -s {len}"));
    }
    // Both ways: what bgzip writes, peerpath decodes on all cores.
    let theirs = dir.path().join("theirs.gz");
    std::fs::write(&theirs, sys(bgzip, &[o("-c")], Some(data.clone()))).unwrap();
    let back = dir.path().join("theirs");
    let out = run(&mut pp(args!["decompress", &theirs, "-o", &back, "--verbose", "-q"])).ok();
    assert!(out.stderr.contains("parallel"), "bgzip output has sizes, so it decodes in parallel: {}", out.stderr);
    assert_file_eq(&back, &data, "peerpath on bgzip output");
}

/// Decompresses `gz` with peerpath (verbose) and checks the bytes.
fn peerpath_restores(dir: &Path, gz: &Path, expected: &[u8], what: &str) -> String {
    let back = dir.join(format!("{}.back", gz.file_name().unwrap().to_string_lossy()));
    let out = run(&mut pp(args!["decompress", gz, "-o", &back, "--verbose", "-q"])).ok();
    assert_file_eq(&back, expected, what);
    run(&mut pp(args!["verify", gz, "-q"])).ok();
    out.stderr
}

#[test]
fn peerpath_decompresses_gzip_and_pigz_output() {
    let Some(t) = tools_or_skip("peerpath_decompresses_gzip_and_pigz_output", &["gzip", "pigz"]) else { return };
    let (gzip, pigz) = (&t[0], &t[1]);
    let dir = scratch();
    let data = mixed_data(2_345_678, 8);
    let small = mixed_data(300_000, 9); // zopfli (pigz -11) is slow
    let mut all = Vec::new();
    let mut expected = Vec::new();
    for (name, prog, flags, input) in [
        ("gzip-1", gzip, vec!["-1", "-c"], &data),
        ("gzip-9", gzip, vec!["-9", "-c"], &data),
        ("gzip-n", gzip, vec!["-n", "-c"], &data),
        ("pigz", pigz, vec!["-c", "-p", "2", "-b", "128"], &data),
        ("pigz-11", pigz, vec!["-11", "-c", "-p", "2"], &small),
        ("pigz-i", pigz, vec!["-i", "-c", "-p", "2", "-b", "64"], &data),
    ] {
        let gz = dir.path().join(format!("{name}.gz"));
        let args: Vec<&OsStr> = flags.iter().map(|s| OsStr::new(*s)).collect();
        let bytes = sys(prog, &args, Some(input.clone()));
        std::fs::write(&gz, &bytes).unwrap();
        let log = peerpath_restores(dir.path(), &gz, input, name);
        assert!(log.contains("streaming"), "{name}: members without sizes stream, and --verbose says so: {log}");
        all.extend_from_slice(&bytes);
        expected.extend_from_slice(input);
    }
    // Concatenated members from different tools are one valid gzip stream.
    let cat = dir.path().join("concatenated.gz");
    std::fs::write(&cat, &all).unwrap();
    peerpath_restores(dir.path(), &cat, &expected, "concatenated gzip and pigz members");
}

/// peerpath members followed by a foreign member (and the other way
/// round): parallel while sizes are declared, then streaming.
#[test]
fn mixed_peerpath_and_foreign_members_decode() {
    let Some(t) = tools_or_skip("mixed_peerpath_and_foreign_members_decode", &["gzip"]) else { return };
    let gzip = &t[0];
    let dir = scratch();
    let a = mixed_data(700_000, 1);
    let b = mixed_data(300_001, 2);
    let ours = compress_bytes(dir.path(), "a", &a, &["--block-size", "64K"]);
    let theirs = sys(gzip, &[o("-c")], Some(b.clone()));
    let ab: Vec<u8> = a.iter().chain(&b).copied().collect();
    let ba: Vec<u8> = b.iter().chain(&a).copied().collect();
    let f1 = dir.path().join("ours-then-theirs.gz");
    std::fs::write(&f1, [&ours[..], &theirs[..]].concat()).unwrap();
    let log = peerpath_restores(dir.path(), &f1, &ab, "peerpath then gzip members");
    assert!(log.contains("parallel for 12 members, then streaming"), "{log}");
    let f2 = dir.path().join("theirs-then-ours.gz");
    std::fs::write(&f2, [&theirs[..], &ours[..]].concat()).unwrap();
    peerpath_restores(dir.path(), &f2, &ba, "gzip then peerpath members");
    assert_bytes_eq(&sys(gzip, &[o("-dc"), f1.as_os_str()], None), &ab, "gzip -d on the mixed file");
}

fn changelogs() -> Vec<PathBuf> {
    let mut v = Vec::new();
    let Ok(rd) = std::fs::read_dir("/usr/share/doc") else { return v };
    for pkg in rd.flatten() {
        let Ok(files) = std::fs::read_dir(pkg.path()) else { continue };
        for f in files.flatten() {
            let n = f.file_name().to_string_lossy().into_owned();
            if n.starts_with("changelog") && n.ends_with(".gz") && f.path().is_file() {
                v.push(f.path());
            }
        }
    }
    v.sort();
    v
}

#[test]
fn peerpath_decompresses_real_gzip_files_found_on_this_machine() {
    let test = "peerpath_decompresses_real_gzip_files_found_on_this_machine";
    let Some(t) = tools_or_skip(test, &["zcat"]) else { return };
    let zcat = &t[0];
    let all = changelogs();
    if all.is_empty() {
        eprintln!("SKIPPED {test}: no /usr/share/doc/*/changelog*.gz on this machine");
        return;
    }
    // An even spread of at most 150 of them, always including the largest.
    let step = all.len().div_ceil(150);
    let mut picked: Vec<PathBuf> = all.iter().step_by(step).cloned().collect();
    let largest = all.iter().max_by_key(|p| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0)).unwrap().clone();
    if !picked.contains(&largest) {
        picked.push(largest);
    }
    let dir = scratch();
    let links = dir.path().join("in");
    let outs = dir.path().join("out");
    std::fs::create_dir(&links).unwrap();
    let mut sources = Vec::new();
    for (i, p) in picked.iter().enumerate() {
        let pkg = p.parent().unwrap().file_name().unwrap().to_string_lossy().into_owned();
        let link = links.join(format!("{i:04}-{pkg}.gz"));
        std::os::unix::fs::symlink(p, &link).unwrap();
        sources.push(link);
    }
    // One job for all of them: decompress into a directory, and verify.
    let mut a = args!["decompress"];
    a.extend(sources.iter().map(|s| s.as_os_str().to_owned()));
    a.extend(args!["-o", &outs, "-q"]);
    run(&mut pp(a)).ok();
    let mut v = args!["verify", "-q"];
    v.extend(sources.iter().map(|s| s.as_os_str().to_owned()));
    run(&mut pp(v)).ok();
    for (src, link) in picked.iter().zip(&sources) {
        let expected = sys(zcat, &[src.as_os_str()], None);
        let name = link.file_name().unwrap().to_string_lossy().trim_end_matches(".gz").to_string();
        assert_file_eq(&outs.join(name), &expected, &format!("{} (compared with zcat)", src.display()));
    }
    eprintln!("{test}: {} of {} changelogs checked", picked.len(), all.len());
}

/// A member with FTEXT, FEXTRA (a foreign subfield), FNAME, FCOMMENT and
/// FHCRC around `deflate_and_trailer` (raw deflate data + CRC-32 + ISIZE).
fn hand_made_member(deflate_and_trailer: &[u8], pp_sizes: Option<u32>) -> Vec<u8> {
    let mut h = vec![0x1f, 0x8b, 8, 0x01 | 0x02 | 0x04 | 0x08 | 0x10, 0x78, 0x56, 0x34, 0x12, 0, 3];
    let mut extra = Vec::new();
    extra.extend_from_slice(b"Ap\x05\x00hello");
    if let Some(isize) = pp_sizes {
        extra.extend_from_slice(b"PP\x08\x00");
        extra.extend_from_slice(&[0; 4]); // patched below
        extra.extend_from_slice(&isize.to_le_bytes());
    }
    extra.extend_from_slice(b"ZZ\x00\x00");
    h.extend_from_slice(&(extra.len() as u16).to_le_bytes());
    let pp_at = h.len() + 9 + 4;
    h.extend_from_slice(&extra);
    h.extend_from_slice(b"proteins.fasta\0");
    h.extend_from_slice("made by hand, with a comment: \u{e9}t\u{e9}\0".as_bytes());
    let total = h.len() + 2 + deflate_and_trailer.len();
    if pp_sizes.is_some() {
        h[pp_at..pp_at + 4].copy_from_slice(&(total as u32).to_le_bytes());
    }
    let hcrc = (crc32(&h) & 0xffff) as u16;
    h.extend_from_slice(&hcrc.to_le_bytes());
    h.extend_from_slice(deflate_and_trailer);
    assert_eq!(h.len(), total);
    h
}

#[test]
fn hand_made_members_with_every_header_field_decode() {
    let Some(t) = tools_or_skip("hand_made_members_with_every_header_field_decode", &["gzip"]) else { return };
    let gzip = &t[0];
    let dir = scratch();
    let data = mixed_data(500_000, 6);
    let plain = sys(gzip, &[o("-n"), o("-c"), o("-6")], Some(data.clone()));
    assert_eq!(plain[3], 0, "gzip -n writes no optional header fields");
    let body = &plain[10..];

    // Foreign fields only: the streaming path.
    let m = hand_made_member(body, None);
    let f = dir.path().join("hand.gz");
    std::fs::write(&f, &m).unwrap();
    sys(gzip, &[o("-t"), f.as_os_str()], None); // the test data itself is valid gzip
    let log = peerpath_restores(dir.path(), &f, &data, "FTEXT+FEXTRA+FNAME+FCOMMENT+FHCRC member");
    assert!(log.contains("streaming"), "{log}");

    // The same fields plus a 'PP' size subfield: the parallel path must
    // parse past FNAME, FCOMMENT and FHCRC too. Three of them in a row, and the end member.
    let m2 = hand_made_member(body, Some(data.len() as u32));
    let f2 = dir.path().join("hand-sized.gz");
    std::fs::write(&f2, [&m2[..], &m2[..], &m2[..], &peerpath_func::PEERPATH_END_MEMBER[..]].concat()).unwrap();
    sys(gzip, &[o("-t"), f2.as_os_str()], None);
    let triple: Vec<u8> = [&data[..], &data[..], &data[..]].concat();
    let log = peerpath_restores(dir.path(), &f2, &triple, "sized hand-made members");
    assert!(log.contains("parallel: 4 members"), "{log}");

    // A wrong header CRC is corrupt data (exit 6), in both paths.
    for (name, mut bad) in [("bad-hcrc.gz", m.clone()), ("bad-hcrc-sized.gz", m2.clone())] {
        let hcrc_at = m.len() - body.len() - 2 + (bad.len() - m.len());
        bad[hcrc_at] ^= 0xff;
        let p = dir.path().join(name);
        std::fs::write(&p, &bad).unwrap();
        run(&mut pp(args!["verify", &p])).fails(6, &[name, "member 0 at byte 0", "header CRC"]);
    }

    // An extra field that is not a list of whole subfields (one runs past XLEN): gzip skips the
    // field whole and reads the member; so does peerpath now, streaming it (it was exit 6).
    let mut odd = vec![0x1f, 0x8b, 8, 0x04, 0, 0, 0, 0, 0, 3, 8, 0, b'A', b'B', 20, 0, 1, 2, 3, 4];
    odd.extend_from_slice(body);
    let f4 = dir.path().join("odd-extra.gz");
    std::fs::write(&f4, &odd).unwrap();
    sys(gzip, &[o("-t"), f4.as_os_str()], None);
    let log = peerpath_restores(dir.path(), &f4, &data, "a subfield past XLEN");
    assert!(log.contains("streaming"), "{log}");

    // gzip -N stores the file name (FNAME) and time.
    let named = dir.path().join("named.txt");
    std::fs::write(&named, &data).unwrap();
    let n = sys(gzip, &[o("-N"), o("-c"), named.as_os_str()], None);
    assert_ne!(n[3] & 0x08, 0, "gzip -N sets FNAME");
    let f3 = dir.path().join("gzip-N.gz");
    std::fs::write(&f3, &n).unwrap();
    peerpath_restores(dir.path(), &f3, &data, "gzip -N member");
}

/// Bad input in files peerpath did not write takes the streaming decoder;
/// its errors are classified like the parallel decoder's.
#[test]
fn bad_foreign_gzip_files_are_classified() {
    let Some(t) = tools_or_skip("bad_foreign_gzip_files_are_classified", &["gzip"]) else { return };
    let gzip = &t[0];
    let dir = scratch();
    let data = random_bytes(300_000, 12); // stored blocks: a flipped bit is a pure CRC error
    let good = sys(gzip, &[o("-n"), o("-c")], Some(data.clone()));
    let cases: Vec<(&str, Vec<u8>, i32, Vec<String>)> = vec![
        ("cut.gz", good[..good.len() / 2].to_vec(), 7, vec!["truncated".into(), "member 0 at byte 0".into()]),
        ("cut-trailer.gz", good[..good.len() - 3].to_vec(), 7, vec!["truncated".into()]),
        ("flip.gz", { let mut b = good.clone(); b[150_000] ^= 0x08; b }, 6, vec!["member 0 at byte 0".into(), "CRC".into()]),
        ("garbage.gz", [&good[..], b"not gzip"].concat(), 9, vec![format!("at byte {}", good.len())]),
        ("second-bad.gz", [&good[..], &good[..20]].concat(), 7, vec![format!("member 1 at byte {}", good.len())]),
    ];
    for (name, bytes, code, needles) in cases {
        let p = dir.path().join(name);
        std::fs::write(&p, &bytes).unwrap();
        let mut n: Vec<&str> = needles.iter().map(|s| s.as_str()).collect();
        n.push(name);
        run(&mut pp(args!["verify", &p])).fails(code, &n);
        let target = dir.path().join(format!("{name}.out"));
        run(&mut pp(args!["decompress", &p, "-o", &target])).fails(code, &n);
        assert!(!target.exists(), "{name}: a partial target was left");
        assert_eq!(std::fs::read(&p).unwrap(), bytes, "{name}: the source changed");
    }
    // gzip ignores trailing zeros (tar padding), and so does peerpath.
    let p = dir.path().join("zero-padded.gz");
    std::fs::write(&p, [&good[..], &[0u8; 1000][..]].concat()).unwrap();
    peerpath_restores(dir.path(), &p, &data, "trailing zeros");
    // More zeros than padding leaves: the look of a file whose end was lost (exit 9, nothing kept).
    let p = dir.path().join("zero-tail.gz");
    std::fs::write(&p, [&good[..], &[0u8; 100_000][..]].concat()).unwrap();
    run(&mut pp(args!["verify", &p])).fails(9, &["100000 zero bytes after the last member", "may be lost"]);
    run(&mut pp(args!["decompress", &p, "-o", dir.path().join("zero-tail.out")])).fails(9, &["zero-tail.gz"]);
    assert!(!dir.path().join("zero-tail.out").exists());
    let names = names_in(dir.path());
    assert!(!names.iter().any(|n| n.contains(".peerpath-tmp.")), "temporary files left: {names:?}");
}
