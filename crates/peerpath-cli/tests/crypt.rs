//! `peerpath encrypt`, `decrypt`, `keygen`: round trips, an independent
//! reader of the format, and every kind of bad input (wrong key, tampered,
//! truncated, reordered or transplanted blocks): a clear error naming the
//! block, and nothing written.

mod common;

use common::*;
use std::path::Path;

const HEADER: usize = 72;
const TAG: usize = 16;

/// The independent reader of the format (`scripts/ppenc-reference.py`), where
/// python3 has `cryptography`: `decrypt(key, file)` gives the plaintext.
struct Reference {
    python: std::path::PathBuf,
    script: std::path::PathBuf,
}

impl Reference {
    fn find() -> Option<Reference> {
        let python = tool("python3").filter(|p| std::process::Command::new(p).args(["-c", "import cryptography"]).status().is_ok_and(|s| s.success()))?;
        Some(Reference { python, script: Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/ppenc-reference.py") })
    }

    fn decrypt(&self, key: &Path, file: &Path) -> Vec<u8> {
        sys(&self.python, &[self.script.as_os_str(), key.as_os_str(), file.as_os_str()], None)
    }

    /// The XTS image reader (`scripts/xts-reference.py`) on `image` of `sector`-byte sectors.
    fn decrypt_xts(&self, key: &Path, image: &Path, sector: &str) -> Vec<u8> {
        let script = self.script.with_file_name("xts-reference.py");
        sys(&self.python, &[script.as_os_str(), key.as_os_str(), image.as_os_str(), std::ffi::OsStr::new(sector)], None)
    }
}

fn keygen(dir: &Path, name: &str) -> std::path::PathBuf {
    let k = dir.join(name);
    run(&mut pp(args!["keygen", "-o", &k])).ok();
    k
}

#[test]
fn files_round_trip_and_an_independent_reader_agrees() {
    let dir = scratch();
    let d = dir.path();
    let key = keygen(d, "k");
    let key_text = std::fs::read_to_string(&key).unwrap();
    assert_eq!(key_text.trim().len(), 64);
    let reference = Reference::find();
    if reference.is_none() {
        eprintln!("SKIPPED the independent reader: python3 with `cryptography` is not installed (scripts/install-deps.sh installs it)");
    }
    for (size, block) in [(0usize, "1M"), (1, "4K"), (4096, "4K"), (4097, "4K"), (300_001, "64K"), (3 << 20, "1M")] {
        let src = d.join(format!("s{size}"));
        let data = mixed_data(size, size as u64);
        std::fs::write(&src, &data).unwrap();
        let o = run(&mut pp(args!["encrypt", &src, "--key-file", &key, "--block-size", block, "-T", "3", "--json"])).ok();
        let enc = d.join(format!("s{size}.ppenc"));
        let sealed = std::fs::read(&enc).unwrap();
        let v = o.json();
        assert_eq!(v["file_bytes"].as_u64(), Some(sealed.len() as u64));
        // The workers that ran: one a block at most (it said 3 for a file of one block).
        assert_eq!(v["threads"].as_u64(), Some(v["blocks"].as_u64().unwrap().min(3)), "{v}");
        assert!(!o.stdout_str().contains(key_text.trim()) && !o.stderr.contains(key_text.trim()), "the key never appears");
        if size >= 64 {
            assert!(sealed.windows(32).all(|w| !data.starts_with(w)), "no plaintext in the ciphertext");
        }
        let back = d.join(format!("b{size}"));
        run(&mut pp(args!["decrypt", &enc, "-o", &back, "--key-file", &key, "-q"])).ok();
        assert_file_eq(&back, &data, &format!("{size} bytes"));
        if let Some(reference) = &reference {
            assert_bytes_eq(&reference.decrypt(&key, &enc), &data, &format!("{size} bytes, scripts/ppenc-reference.py"));
        }
    }
    // The key from the environment, and the default target name on decrypt.
    let src = d.join("s300001");
    std::fs::remove_file(&src).unwrap();
    let o = run(pp(args!["decrypt", d.join("s300001.ppenc")]).env("PEERPATH_KEY", key_text.trim())).ok();
    assert!(o.stdout_str().contains("decrypted and authenticated"), "{}", o.stdout_str());
    assert_file_eq(&src, &mixed_data(300_001, 300_001), "decrypted to the name less .ppenc");
}

#[test]
fn bad_keys_and_damaged_files_are_named_and_nothing_is_written() {
    let dir = scratch();
    let d = dir.path();
    let key = keygen(d, "k");
    let other = keygen(d, "other");
    let src = d.join("s");
    let data = mixed_data(10 * 4096 + 100, 7);
    std::fs::write(&src, &data).unwrap();
    run(&mut pp(args!["encrypt", &src, "--key-file", &key, "--block-size", "4K", "-q"])).ok();
    let enc = d.join("s.ppenc");
    let sealed = std::fs::read(&enc).unwrap();
    let at = |i: usize| HEADER + i * (4096 + TAG);
    let out = d.join("out");
    let try_file = |bytes: &[u8], key: &Path, code: i32, needles: &[&str]| {
        let f = d.join("bad.ppenc");
        std::fs::write(&f, bytes).unwrap();
        run(&mut pp(args!["decrypt", &f, "-o", &out, "--key-file", key])).fails(code, needles);
        assert!(!out.exists(), "nothing written for {needles:?}");
        assert_eq!(std::fs::read(&f).unwrap(), bytes, "the source is never modified");
    };
    try_file(&sealed, &other, 17, &["wrong key"]);
    let mut t = sealed.clone();
    t[at(4) + 100] ^= 0x01;
    try_file(&t, &key, 6, &["block 4 (plaintext bytes 16384..20480)", "fails authentication", "nothing was written"]);
    let mut t = sealed.clone();
    t[sealed.len() - 1] ^= 0x80;
    try_file(&t, &key, 6, &["block 10 ", "fails authentication"]);
    let mut t = sealed.clone();
    let (a, b) = (at(2), at(3));
    let block2 = sealed[a..b].to_vec();
    t.copy_within(b..b + (b - a), a);
    t[b..b + (b - a)].copy_from_slice(&block2);
    try_file(&t, &key, 6, &["block 2 ", "moved from another position"]);
    try_file(&sealed[..sealed.len() - 5], &key, 7, &["truncated", "block 10"]);
    // A block taken out of the middle: the first block out of place is named (it said the
    // file was truncated at its last block).
    let t = [&sealed[..at(3)], &sealed[at(4)..]].concat();
    try_file(&t, &key, 6, &["block 3 ", "moved from another position", "4112 bytes short", "a block removed?"]);
    try_file(&sealed[..at(6)], &key, 7, &["truncated", "block 6 "]);
    try_file(&sealed[..40], &key, 7, &["truncated", "72-byte header"]);
    let mut t = sealed.clone();
    t.push(0);
    try_file(&t, &key, 6, &["after the last block"]);
    let mut t = sealed.clone();
    t[20] ^= 1;
    try_file(&t, &key, 6, &["header fails authentication"]);
    // A block from another file made with the same key, at the same position.
    run(&mut pp(args!["encrypt", &src, "-o", d.join("again.ppenc"), "--key-file", &key, "--block-size", "4K", "-q"])).ok();
    let again = std::fs::read(d.join("again.ppenc")).unwrap();
    let mut t = sealed.clone();
    t[at(3)..at(4)].copy_from_slice(&again[at(3)..at(4)]);
    try_file(&t, &key, 6, &["block 3 ", "from another file"]);
    try_file(b"hello, world", &key, 6, &["not a peerpath-enc file"]);
}

#[test]
fn keys_and_targets_are_handled_with_care() {
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch();
    let d = dir.path();
    let key = keygen(d, "k");
    assert_eq!(std::fs::metadata(&key).unwrap().permissions().mode() & 0o777, 0o600, "a key file is private");
    let before = std::fs::read(&key).unwrap();
    run(&mut pp(args!["keygen", "-o", &key])).fails(4, &["never replaces a key file"]);
    run(&mut pp(args!["keygen", "-o", "/dev/null"])).fails(4, &["never replaces a key file"]);
    // A directory is not a key file to keep: say what to give instead.
    run(&mut pp(args!["keygen", "-o", d])).fails(4, &["is a directory", "keygen -o DIR/NAME"]);
    let mut c = pp(args!["keygen", "-o", "-"]);
    c.current_dir(d);
    run(&mut c).fails(2, &["never to standard output"]);
    assert!(!d.join("-").exists(), "no key file named -");
    assert_eq!(std::fs::read(&key).unwrap(), before);
    let src = d.join("s");
    std::fs::write(&src, b"secret").unwrap();
    std::fs::set_permissions(&src, std::fs::Permissions::from_mode(0o640)).unwrap();
    run(pp(args!["encrypt", &src]).env_remove("PEERPATH_KEY")).fails(2, &["no key", "keygen"]);
    std::fs::write(d.join("short"), b"0123").unwrap();
    let o = run(&mut pp(args!["encrypt", &src, "--key-file", d.join("short")])).fails(2, &["32 raw bytes or 64 hexadecimal digits"]);
    assert!(!o.stderr.contains("0123"), "a bad key is not quoted");
    let o = run(pp(args!["encrypt", &src, "--key-env", "PP_TEST_KEY"]).env("PP_TEST_KEY", "zz")).fails(2, &["PP_TEST_KEY", "64 hexadecimal digits"]);
    assert!(!o.stderr.contains("raw bytes"), "a variable takes hexadecimal digits only: {}", o.stderr);
    let o = run(&mut pp(args!["encrypt", &src, "--key-file", &key, "-q"])).ok();
    assert!(!o.stderr.contains("warning"), "{}", o.stderr);
    // A key others may read is said (as ssh says of a private key), not refused.
    let open_key = d.join("open-key");
    std::fs::copy(&key, &open_key).unwrap();
    std::fs::set_permissions(&open_key, std::fs::Permissions::from_mode(0o644)).unwrap();
    let o = run(&mut pp(args!["encrypt", &src, "--key-file", &open_key, "-o", d.join("s2.ppenc"), "-q"])).ok();
    assert!(o.stderr.contains("is readable or writable by others (mode 0644): chmod 600 it"), "{}", o.stderr);
    std::fs::remove_file(d.join("s2.ppenc")).unwrap();
    std::fs::remove_file(&open_key).unwrap();
    let enc = d.join("s.ppenc");
    assert_eq!(std::fs::metadata(&enc).unwrap().permissions().mode() & 0o777, 0o640, "the output takes the source's mode");
    let sealed = std::fs::read(&enc).unwrap();
    run(&mut pp(args!["encrypt", &src, "--key-file", &key])).fails(4, &["exists"]);
    assert_eq!(std::fs::read(&enc).unwrap(), sealed, "an existing target is not replaced without --force");
    run(&mut pp(args!["encrypt", &src, "--key-file", &key, "-o", &src, "-f"])).fails(5, &["same file"]);
    // The key file is never a target (with -f it was replaced by the ciphertext, and the key lost).
    let key_link = d.join("key-link");
    std::fs::hard_link(&key, &key_link).unwrap();
    for target in [&key, &key_link] {
        run(&mut pp(args!["encrypt", &src, "--key-file", &key, "-o", target, "-f"])).fails(5, &["is the key file"]);
        run(&mut pp(args!["encrypt", &src, "--key-file", &key, "--mode", "xts", "-o", target, "-f"])).fails(5, &["is the key file"]);
        run(&mut pp(args!["decrypt", &enc, "--key-file", &key, "-o", target, "-f"])).fails(5, &["is the key file"]);
        run(&mut pp(args!["compress", &src, "--encrypt", "--key-file", &key, "-o", target, "-f"])).fails(5, &["is the key file"]);
        run(&mut pp(args!["decompress", &enc, "--key-file", &key, "-o", target, "-f"])).fails(5, &["is the key file"]);
    }
    std::fs::remove_file(&key_link).unwrap();
    assert_eq!(std::fs::read(&key).unwrap(), before, "the key file is as it was");
    // A variable of 32 characters is not taken as raw key bytes (a passphrase, most likely).
    run(pp(args!["encrypt", &src, "--key-env", "PP_TEST_KEY", "-o", d.join("x")]).env("PP_TEST_KEY", "abcdefghijklmnopqrstuvwxyz012345")).fails(2, &["holds 32 characters", "64 hexadecimal digits"]);
    run(&mut pp(args!["decrypt", &src, "--key-file", &key])).fails(2, &["is not NAME.ppenc"]);
    run(&mut pp(args!["encrypt", &src, "--key-file", &key, "-o", "-"])).fails(2, &["work on files"]);
    run(&mut pp(args!["encrypt", &src, "--key-file", &key, "--block-size", "0", "-o", d.join("x")])).fails(2, &["--block-size"]);
    // An option the mode or the file's header decides is refused, not ignored.
    run(&mut pp(args!["encrypt", &src, "--key-file", &key, "--sector-size", "512", "-o", d.join("x")])).fails(2, &["--sector-size goes with --mode xts"]);
    run(&mut pp(args!["encrypt", &src, "--key-file", &key, "--mode", "xts", "--block-size", "4K", "-o", d.join("x")])).fails(2, &["--block-size goes with --mode gcm"]);
    run(&mut pp(args!["decrypt", &enc, "--key-file", &key, "--block-size", "4K", "-o", d.join("x")])).fails(2, &["decrypt reads it from the file's header"]);
    run(pp(args!["decrypt", &enc, "--key-env", "PP_TEST_UNSET", "-o", d.join("x")]).env_remove("PP_TEST_UNSET")).fails(2, &["--key-env PP_TEST_UNSET: no such environment variable is set"]);
    // A key without --encrypt would have written a plain .gz: refused.
    for extra in [&["--key-file", key.to_str().unwrap()][..], &["--key-env", "PP_TEST_KEY"], &["--encrypt-block-size", "4K"]] {
        let mut c = pp(args!["compress", &src, "-o", d.join("x.gz")]);
        c.args(extra);
        run(&mut c).fails(2, &["go with --encrypt"]);
    }
    run(&mut pp(args!["compress", &src, "--ec-unit", "64K", "-o", d.join("x.gz")])).fails(2, &["--ec-unit goes with --ec"]);
    // A key file that never ends is refused after a few KiB (it was read whole: memory without bound).
    run(&mut pp(args!["encrypt", &src, "--key-file", "/dev/zero", "-o", d.join("x")])).fails(2, &["key file /dev/zero: more than 4096 bytes"]);
    run(&mut pp(args!["decompress", &enc, "--key-file", "/dev/zero", "-o", d.join("x")])).fails(2, &["more than 4096 bytes"]);
    run(&mut pp(args!["encrypt", &src, "--key-file", d.join("nowhere"), "-o", d.join("x")])).fails(2, &["cannot read key file", "nowhere"]);
    // A FIFO is refused before it is opened (opening it waits for a writer that never comes).
    let fifo = d.join("fifo");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    run(&mut pp(args!["encrypt", &fifo, "--key-file", &key, "-o", d.join("x")])).fails(2, &["fifo is not a regular file"]);
    run(&mut pp(args!["decrypt", &fifo, "--key-file", &key, "-o", d.join("x")])).fails(2, &["fifo is not a regular file"]);
    run(&mut pp(args!["ec", "encode", &fifo, "-k", "2", "-m", "1", "-o", d.join("x")])).fails(2, &["fifo is not a regular file"]);
    std::fs::remove_file(&fifo).unwrap();
    assert_eq!(std::fs::read(&src).unwrap(), b"secret");
    assert!(!d.join("x").exists() && !d.join("x.gz").exists(), "a refused command writes nothing");
    assert_dir_holds(d, &["k", "s", "s.ppenc", "short"]);
}

/// `compress --encrypt`: the compressed stream sealed as it is written
/// (SOURCE.gz.ppenc, never a plaintext .gz on disk); `decrypt` gives back a
/// gzip that `peerpath decompress` and gzip read; the independent reader
/// agrees; the key never appears; usage errors for what it cannot do.
#[test]
fn compress_encrypt_seals_the_compressed_stream_and_decrypt_gives_the_gzip_back() {
    let dir = scratch();
    let d = dir.path();
    let key = keygen(d, "k");
    let key_text = std::fs::read_to_string(&key).unwrap();
    let reference = Reference::find();
    let gzip = tool("gzip");
    for (size, block) in [(0usize, "1M"), (1, "4K"), (300_001, "4K"), (3 << 20, "64K")] {
        let what = format!("{size} bytes, {block} blocks");
        let src = d.join(format!("c{size}"));
        let data = mixed_data(size, size as u64 + 1);
        std::fs::write(&src, &data).unwrap();
        let o = run(&mut pp(args!["compress", &src, "--encrypt", "--key-file", &key, "--encrypt-block-size", block, "--block-size", "64K", "-T", "2", "--json"])).ok();
        let r = o.json();
        let enc = d.join(format!("c{size}.gz.ppenc"));
        assert!(!d.join(format!("c{size}.gz")).exists(), "{what}: no plaintext .gz was left");
        let sealed = std::fs::read(&enc).unwrap();
        assert_eq!(&sealed[..8], b"PPENCv1\0", "{what}");
        assert_eq!(r["bytes_out"].as_u64(), Some(sealed.len() as u64), "{what}: bytes_out is the sealed file");
        assert!(r["format"].as_str().unwrap().contains("peerpath-enc/1"), "{what}: {}", r["format"]);
        assert!(!o.stdout_str().contains(key_text.trim()) && !o.stderr.contains(key_text.trim()), "the key never appears");
        let entries = r["ledger"]["entries"].as_array().unwrap();
        assert!(entries.iter().any(|e| e["purpose"] == "encrypt"), "{what}: the sealing is in the ledger");
        // On standard input it cannot be opened (its blocks are read by position): said so.
        if size == 1 {
            run_full(&mut pp(args!["decompress", "-", "-o", "-", "--key-file", &key]), Some(sealed.clone()), DEADLINE).fails(8, &["an encrypted file, peerpath-enc/1", "give it by name"]);
        }
        // Back: decrypt to the .gz, then decompress; gzip reads it too.
        run(&mut pp(args!["decrypt", &enc, "--key-file", &key, "-q"])).ok();
        let gz = d.join(format!("c{size}.gz"));
        let back = d.join(format!("c{size}.back"));
        run(&mut pp(args!["decompress", &gz, "-o", &back, "-q"])).ok();
        assert_file_eq(&back, &data, &what);
        if let Some(g) = &gzip {
            assert_bytes_eq(&sys(g, &[std::ffi::OsStr::new("-dc"), gz.as_os_str()], None), &data, &format!("{what}: gzip -d"));
        }
        if let Some(reference) = &reference {
            assert_bytes_eq(&reference.decrypt(&key, &enc), &std::fs::read(&gz).unwrap(), &format!("{what}: scripts/ppenc-reference.py"));
        }
        std::fs::remove_file(&gz).unwrap();
        // In one pass: decompress (and verify) the sealed file with its key.
        let back = d.join(format!("c{size}.one-pass"));
        let r = run(&mut pp(args!["decompress", &enc, "-o", &back, "--key-file", &key, "-T", "2", "--json"])).ok().json();
        assert_file_eq(&back, &data, &format!("{what}: decompress of the sealed file"));
        let entries = r["ledger"]["entries"].as_array().unwrap();
        assert!(entries.iter().any(|e| e["purpose"] == "decrypt"), "{what}: the opening is in the ledger");
        run(&mut pp(args!["verify", &enc, "--key-file", &key, "-q"])).ok();
    }
    // Default names: x.gz.ppenc restores to x.
    let d2 = d.join("names");
    std::fs::create_dir(&d2).unwrap();
    std::fs::copy(d.join("c300001.gz.ppenc"), d2.join("x.gz.ppenc")).unwrap();
    run(&mut pp(args!["decompress", d2.join("x.gz.ppenc"), "--key-file", &key, "-q"])).ok();
    assert_file_eq(&d2.join("x"), &mixed_data(300_001, 300_002), "x.gz.ppenc -> x");
    // A gzip without size fields, sealed: decoded by one thread through the block reader.
    if let Some(g) = &gzip {
        let data = mixed_data(200_000, 3);
        let plain_gz = d.join("pigzlike.gz");
        std::fs::write(&plain_gz, sys(g, &[std::ffi::OsStr::new("-c")], Some(data.clone()))).unwrap();
        run(&mut pp(args!["encrypt", &plain_gz, "--key-file", &key, "--block-size", "4K", "-q"])).ok();
        let back = d.join("pigzlike.back");
        let r = run(&mut pp(args!["decompress", d.join("pigzlike.gz.ppenc"), "-o", &back, "--key-file", &key, "--json"])).ok().json();
        assert_file_eq(&back, &data, "a sealed gzip without size fields");
        assert!(r["files"][0]["decode_mode"].to_string().contains("streaming"), "{}", r["files"][0]["decode_mode"]);
    }
    // Damage to the sealed file: named, and nothing written.
    let enc = d.join("c3145728.gz.ppenc");
    let sealed = std::fs::read(&enc).unwrap();
    let bad = d.join("bad.gz.ppenc");
    let mut b = sealed.clone();
    b[HEADER + 70_000] ^= 1;
    std::fs::write(&bad, &b).unwrap();
    let out_path = d.join("bad.out");
    run(&mut pp(args!["decompress", &bad, "-o", &out_path, "--key-file", &key])).fails(6, &["block 1", "fails authentication"]);
    assert!(!out_path.exists());
    std::fs::write(&bad, &sealed[..sealed.len() - 100]).unwrap();
    run(&mut pp(args!["decompress", &bad, "-o", &out_path, "--key-file", &key])).fails(7, &["truncated"]);
    run(&mut pp(args!["decompress", &enc, "-o", &out_path, "--key-file", &keygen(d, "k3")])).fails(17, &["wrong key"]);
    run(pp(args!["decompress", &enc, "-o", &out_path]).env_remove("PEERPATH_KEY")).fails(2, &["encrypted", "key"]);
    assert!(!out_path.exists());
    // A wrong key is exit 17 and writes nothing.
    let other = keygen(d, "other");
    let enc = d.join("c300001.gz.ppenc");
    run(&mut pp(args!["decrypt", &enc, "--key-file", &other])).fails(17, &["wrong key"]);
    assert!(!d.join("c300001.gz").exists());
    // What --encrypt cannot do is said, before anything is written.
    let src = d.join("c1");
    run(&mut pp(args!["compress", &src, "--encrypt", "--key-file", &key, "-o", "-"])).fails(2, &["standard output"]);
    run(&mut pp(args!["compress", &src, "--encrypt", "--key-file", &key, "--verify", "-f"])).fails(2, &["--verify"]);
    run(pp(args!["compress", &src, "--encrypt", "-f"]).env_remove("PEERPATH_KEY")).fails(2, &["no key"]);
}

/// Damage anywhere in a sealed, compressed file (a flipped bit, a cut, a
/// swapped pair of blocks) never gives wrong bytes: decompress fails with
/// the damage's exit code and writes nothing. Seeded, so a failure
/// reproduces.
#[test]
fn damage_to_a_sealed_file_never_gives_wrong_output() {
    let dir = scratch();
    let d = dir.path();
    let key = keygen(d, "k");
    let data = mixed_data(200_000, 44);
    let src = d.join("s");
    std::fs::write(&src, &data).unwrap();
    run(&mut pp(args!["compress", &src, "--encrypt", "--key-file", &key, "--encrypt-block-size", "4K", "--block-size", "16K", "-q"])).ok();
    let sealed = std::fs::read(d.join("s.gz.ppenc")).unwrap();
    let bad = d.join("bad.gz.ppenc");
    let out = d.join("out");
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n as u64) as usize
    };
    for case in 0..24 {
        let mut b = sealed.clone();
        match case % 3 {
            0 => {
                let at = next(b.len());
                b[at] ^= 1 << next(8);
            }
            1 => b.truncate(next(b.len())),
            _ => {
                // Swap two whole sealed blocks.
                let blocks = (b.len() - HEADER) / (4096 + TAG);
                let (i, j) = (next(blocks), next(blocks));
                if i == j {
                    continue;
                }
                let (lo, hi) = (i.min(j), i.max(j));
                let (a0, b0) = (HEADER + lo * (4096 + TAG), HEADER + hi * (4096 + TAG));
                let block_a = b[a0..a0 + 4096 + TAG].to_vec();
                let block_b = b[b0..b0 + 4096 + TAG].to_vec();
                b[a0..a0 + 4096 + TAG].copy_from_slice(&block_b);
                b[b0..b0 + 4096 + TAG].copy_from_slice(&block_a);
            }
        }
        std::fs::write(&bad, &b).unwrap();
        let o = run(&mut pp(args!["decompress", &bad, "-o", &out, "--key-file", &key, "-f"]));
        assert!(!o.status.success(), "case {case}: damaged input decompressed");
        // 6 damaged, 7 short, 17 a flipped key check (it reads as another key); a cut or flip
        // in the magic makes it not an encrypted file, then not a gzip one (8) or an empty one (10).
        assert!(matches!(o.code(), Some(6) | Some(7) | Some(8) | Some(10) | Some(17)), "case {case}: exit {:?}: {}", o.code(), o.stderr);
        assert!(!out.exists(), "case {case}: an output was left");
    }
}

/// `--mode xts`: images keep their size and round-trip; Python's `cryptography`
/// (OpenSSL's XTS and HKDF, `scripts/xts-reference.py`, written from the format's
/// description) decrypts them sector by sector; a wrong key gives garbage (XTS
/// authenticates nothing, as documented); bad sector sizes and a last sector
/// shorter than 16 bytes are usage errors that keep nothing.
#[test]
fn xts_images_keep_their_size_round_trip_and_an_independent_reader_agrees() {
    let dir = scratch();
    let d = dir.path();
    let key = keygen(d, "k");
    let other = keygen(d, "k2");
    let reference = Reference::find();
    if reference.is_none() {
        eprintln!("SKIPPED the independent reader: python3 with `cryptography` is not installed (scripts/install-deps.sh installs it)");
    }
    for (size, sector) in [(0usize, 4096usize), (3 * 4096, 4096), (512 * 7 + 100, 512), ((3 << 20) + 4096 + 40, 4096)] {
        let src = d.join(format!("img{size}"));
        let data = mixed_data(size, size as u64 + 1);
        std::fs::write(&src, &data).unwrap();
        let s = sector.to_string();
        let v = run(&mut pp(args!["encrypt", &src, "--mode", "xts", "--sector-size", &s, "--key-file", &key, "-T", "3", "--json"])).ok().json();
        // The workers that ran: a task (1 MiB) each at most, one for an empty image (it said 3).
        assert_eq!(v["threads"].as_u64(), Some((size as u64).div_ceil(1 << 20).clamp(1, 3)), "{v}");
        let img = d.join(format!("img{size}.xts"));
        let sealed = std::fs::read(&img).unwrap();
        assert_eq!(sealed.len(), size, "an image keeps its size");
        if size >= 64 {
            assert!(sealed.windows(32).all(|w| !data.starts_with(w)), "no plaintext in the image");
        }
        if let Some(r) = &reference {
            let plain = r.decrypt_xts(&key, &img, &s);
            assert!(plain == data, "the independent reader decrypts the {size}-byte image");
        }
        let back = d.join(format!("back{size}"));
        run(&mut pp(args!["decrypt", &img, "--mode", "xts", "--sector-size", &s, "--key-file", &key, "-o", &back])).ok();
        assert!(std::fs::read(&back).unwrap() == data, "round trip of {size} bytes");
        if size >= 4096 {
            let wrong = d.join(format!("wrong{size}"));
            run(&mut pp(args!["decrypt", &img, "--mode", "xts", "--sector-size", &s, "--key-file", &other, "-o", &wrong])).ok();
            assert!(std::fs::read(&wrong).unwrap() != data, "another key gives garbage, not the data");
        }
    }
    // A peerpath-enc/1 file is not an image: XTS would give noise with exit 0; refused, nothing written.
    let sealed = d.join("sealed");
    run(&mut pp(args!["encrypt", d.join("img12288"), "--key-file", &key, "-o", &sealed])).ok();
    run(&mut pp(args!["decrypt", &sealed, "--mode", "xts", "--key-file", &key, "-o", d.join("noise")])).fails(2, &["is a peerpath-enc/1 file", "without --mode xts"]);
    assert!(!d.join("noise").exists());
    let short = d.join("short");
    std::fs::write(&short, vec![7u8; 4096 + 10]).unwrap();
    let o = run(&mut pp(args!["encrypt", &short, "--mode", "xts", "--key-file", &key]));
    assert_eq!(o.code(), Some(2), "{}", o.stderr);
    assert!(o.stderr.contains("its last sector would be 10 bytes") && !d.join("short.xts").exists(), "{}", o.stderr);
    let o = run(&mut pp(args!["encrypt", &short, "--mode", "xts", "--sector-size", "1000", "--key-file", &key]));
    assert_eq!(o.code(), Some(2), "{}", o.stderr);
    assert!(!d.join("short.xts").exists());
}

/// A block device (a disk image on a loop device): encrypted and decrypted from it, on the CPU
/// and on an emulated CSP, once its target is named (beside it would be in /dev); a device is
/// never a target (the output is put in place whole), and the refusals offer only a file
/// (encrypt and decrypt never write standard output).
/// A kernel file whose size says 0 bytes but that gives data (/proc/cpuinfo): refused, nothing
/// written (it was encrypted as 0 bytes, exit 0: decrypt gave back an empty file). An empty file
/// still encrypts.
#[test]
fn a_file_whose_size_says_0_but_gives_data_is_refused() {
    let dir = scratch();
    let d = dir.path();
    let key = keygen(d, "k");
    assert!(std::fs::metadata("/proc/cpuinfo").unwrap().len() == 0 && !std::fs::read("/proc/cpuinfo").unwrap().is_empty());
    for mode in ["gcm", "xts"] {
        let out = d.join(format!("cpuinfo.{mode}"));
        run(&mut pp(args!["encrypt", "/proc/cpuinfo", "--mode", mode, "--key-file", &key, "-o", &out])).fails(2, &["/proc/cpuinfo", "size says 0 bytes", "cat /proc/cpuinfo > FILE"]);
        assert!(!out.exists());
    }
    let empty = d.join("empty");
    std::fs::write(&empty, b"").unwrap();
    run(&mut pp(args!["encrypt", &empty, "--key-file", &key, "-o", d.join("empty.ppenc"), "-q"])).ok();
    run(&mut pp(args!["decrypt", d.join("empty.ppenc"), "--key-file", &key, "-o", d.join("back"), "-q"])).ok();
    assert_eq!(std::fs::read(d.join("back")).unwrap(), b"");
}

/// The chain (`compress --encrypt --ec`) on such a file: on an emulated CSP it sealed 0 bytes
/// into the set with exit 0 (a set that gives back an empty file), on the CPU it said the file
/// "changed while it was compressed" (exit 12). Both refuse it as encrypt does, nothing made.
#[test]
fn the_chain_refuses_a_file_whose_size_says_0_but_gives_data() {
    let dir = scratch();
    let d = dir.path();
    let key = keygen(d, "k");
    assert!(std::fs::metadata("/proc/cpuinfo").unwrap().len() == 0 && !std::fs::read("/proc/cpuinfo").unwrap().is_empty());
    for engine in ["cpu", "emulated"] {
        let set = d.join(format!("set-{engine}"));
        let o = run(&mut pp(args!["compress", "/proc/cpuinfo", "--encrypt", "--key-file", &key, "--ec", "2+1", "-o", &set, "--engine", engine]));
        o.fails(2, &["/proc/cpuinfo", "size says 0 bytes", "cat /proc/cpuinfo > FILE"]);
        assert!(!set.exists(), "{engine}: no set");
    }
    assert_dir_holds(d, &["k"]);
}

#[test]
fn a_block_device_is_encrypted_from_and_never_written() {
    let dir = scratch();
    let d = dir.path();
    let key = keygen(d, "k");
    let image = d.join("img");
    let data = mixed_data(3 << 20, 11);
    std::fs::write(&image, &data).unwrap();
    let Some(dev) = Loop::attach("a_block_device_is_encrypted_from_and_never_written", &image) else { return };
    for (mode, suffix) in [("gcm", "ppenc"), ("xts", "xts")] {
        let o = run(&mut pp(args!["encrypt", &dev.0, "--mode", mode, "--key-file", &key])).fails(2, &["is a block device", "name the target with --output (a file)"]);
        assert!(!o.stderr.contains("standard output"), "{}", o.stderr);
        assert!(!Path::new(&format!("{}.{suffix}", dev.0)).exists(), "nothing made in /dev");
        for engine in ["cpu", "emulated"] {
            if mode == "xts" && engine == "emulated" {
                continue;
            }
            let sealed = d.join(format!("{engine}.{suffix}"));
            run(&mut pp(args!["encrypt", &dev.0, "--mode", mode, "--engine", engine, "--no-fallback", "--key-file", &key, "-o", &sealed, "-q"])).ok();
            let back = d.join(format!("{engine}-{mode}.back"));
            run(&mut pp(args!["decrypt", &sealed, "--mode", mode, "--key-file", &key, "-o", &back, "-q"])).ok();
            assert_file_eq(&back, &data, &format!("{mode} on {engine}"));
        }
        // A device as the target: refused before any work, offering a file, not standard output.
        let o = run(&mut pp(args!["decrypt", d.join(format!("cpu.{suffix}")), "--mode", mode, "--key-file", &key, "-o", &dev.0, "-f"])).fails(2, &["is not a regular file", "write it to a file"]);
        assert!(!o.stderr.contains("-o -"), "{}", o.stderr);
    }
    // An XTS image written onto a device decrypts from it (the device is the image, whole).
    use std::io::Write;
    std::fs::OpenOptions::new().write(true).open(&dev.0).unwrap().write_all(&std::fs::read(d.join("cpu.xts")).unwrap()).unwrap();
    let back = d.join("from-device");
    run(&mut pp(args!["decrypt", &dev.0, "--mode", "xts", "--key-file", &key, "-o", &back, "-q"])).ok();
    assert_file_eq(&back, &data, "an XTS image read from a block device");
}

/// `encrypt --engine emulated`: each block read into an emulated CSP's
/// memory and sealed there; the file decrypts like the CPU's (and, where
/// Python's `cryptography` is, with the independent reader), and what the
/// device cannot do is a said fallback or, with --no-fallback, exit 15.
#[test]
fn an_emulated_csp_seals_files_that_open_as_the_cpus_do() {
    let dir = scratch();
    let d = dir.path();
    let key = keygen(d, "k");
    let reference = Reference::find();
    for (size, block) in [(0usize, "4K"), (5000, "4K"), (3_000_001, "64K")] {
        let src = d.join(format!("s{size}"));
        let data = mixed_data(size, size as u64 + 5);
        std::fs::write(&src, &data).unwrap();
        let enc = d.join(format!("s{size}.dev.ppenc"));
        let o = run(&mut pp(args!["encrypt", &src, "-o", &enc, "--key-file", &key, "--block-size", block, "--engine", "emulated", "--no-fallback", "--json"])).ok();
        let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(report["provenance"], "measured on emulated devices");
        assert_eq!(host_copies(report["engine"].as_str().unwrap()).0, 2 * peerpath_func::crypt::DEVICE_KEY_BYTES as u64, "the block key in and zeroed: {}", report["engine"]);
        assert!(report["fallback"].is_null());
        let cpu = d.join(format!("s{size}.cpu.ppenc"));
        run(&mut pp(args!["encrypt", &src, "-o", &cpu, "--key-file", &key, "--block-size", block])).ok();
        assert_eq!(std::fs::metadata(&enc).unwrap().len(), std::fs::metadata(&cpu).unwrap().len(), "the same layout");
        let back = d.join(format!("s{size}.back"));
        run(&mut pp(args!["decrypt", &enc, "-o", &back, "--key-file", &key])).ok();
        assert_file_eq(&back, &data, "sealed on the device, opened on the CPU");
        // Opened on the device: the CPU's file and the device's own.
        for (from, name) in [(&cpu, "cpu"), (&enc, "dev")] {
            let out = d.join(format!("s{size}.{name}.devback"));
            let o = run(&mut pp(args!["decrypt", from, "-o", &out, "--key-file", &key, "--engine", "emulated", "--no-fallback"])).ok();
            assert!(o.stdout_str().contains("opened on 1 emulated CSP") && host_copies(&o.stdout_str()).0 == 2 * peerpath_func::crypt::DEVICE_KEY_BYTES as u64, "{}", o.stdout_str());
            assert_file_eq(&out, &data, "opened on the device");
        }
        if let Some(r) = &reference {
            assert_eq!(r.decrypt(&key, &enc), data, "the independent reader opens the device's file");
        }
        // A flipped byte in a middle block: the device names the block the CPU names (blocks are
        // opened a group at a time there, in order).
        if size > 1_000_000 {
            let mut bad = std::fs::read(&enc).unwrap();
            let n = bad.len();
            bad[n / 2] ^= 1;
            let mid = d.join("mid.ppenc");
            std::fs::write(&mid, &bad).unwrap();
            let block_of = |o: Out| {
                let e = o.stderr.clone();
                o.fails(6, &["block"]);
                let at = e.find("block ").unwrap_or_else(|| panic!("{e}")) + 6;
                e[at..].split(|c: char| !c.is_ascii_digit()).next().unwrap().to_string()
            };
            let cpu_says = block_of(run(&mut pp(args!["decrypt", &mid, "-o", d.join("never"), "--key-file", &key])));
            let dev_says = block_of(run(&mut pp(args!["decrypt", &mid, "-o", d.join("never"), "--key-file", &key, "--engine", "emulated", "--no-fallback"])));
            assert_eq!(cpu_says, dev_says);
            assert_ne!(cpu_says, "0");
        }
        // A flipped byte in the last block is found.
        let mut bad = std::fs::read(&enc).unwrap();
        let n = bad.len();
        bad[n - 1] ^= 1;
        std::fs::write(&enc, &bad).unwrap();
        let cpu_says = run(&mut pp(args!["decrypt", &enc, "-o", d.join("never"), "--key-file", &key])).fails(6, &["block", "plaintext bytes"]).stderr;
        let dev_says = run(&mut pp(args!["decrypt", &enc, "-o", d.join("never"), "--key-file", &key, "--engine", "emulated", "--no-fallback"])).fails(6, &["fails authentication", "nothing was written"]).stderr;
        // The same words for the same block (its plaintext bytes), the device's verdict said to be checked.
        assert_eq!(dev_says.replace(" (found by the device, confirmed on the host)", ""), cpu_says, "{dev_says}");
        assert!(!d.join("never").exists());
    }
    let src = d.join("s5000");
    let o = run(&mut pp(args!["encrypt", &src, "-o", d.join("odd.ppenc"), "--key-file", &key, "--block-size", "1000", "--engine", "emulated"])).ok();
    assert!(o.stderr.contains("FALLBACK") && o.stderr.contains("multiple of 4K"), "{}", o.stderr);
    run(&mut pp(args!["encrypt", &src, "-o", d.join("odd2.ppenc"), "--key-file", &key, "--block-size", "1000", "--engine", "emulated", "--no-fallback"])).fails(15, &["multiple of 4K"]);
    assert!(!d.join("odd2.ppenc").exists());
    // Opening takes any block size (sealed blocks are read through the page cache anyway).
    let o = run(&mut pp(args!["decrypt", d.join("odd.ppenc"), "-o", d.join("odd.back"), "--key-file", &key, "--engine", "emulated", "--no-fallback"])).ok();
    assert!(o.stdout_str().contains("opened on 1 emulated CSP"), "{}", o.stdout_str());
    assert_file_eq(&d.join("odd.back"), &std::fs::read(&src).unwrap(), "1000-byte blocks opened on the device");
    run(&mut pp(args!["encrypt", &src, "-o", d.join("x.xts"), "--key-file", &key, "--mode", "xts", "--engine", "emulated", "--no-fallback"])).fails(15, &["no XTS"]);
}

/// The device's memory is sized by the file's largest block, not by --block-size alone: 1 GiB
/// blocks of a small file asked an emulated CSP for 12 GiB, which it populated before it was
/// ready (on the 2-core VM it was not ready within the 10 s a device is given: a fallback, exit
/// 15 with --no-fallback). Sealed and opened on the device, the file is the CPU's.
#[test]
fn large_blocks_of_a_small_file_ask_the_device_for_the_file_not_the_block() {
    let dir = scratch();
    let d = dir.path();
    let key = keygen(d, "k");
    let data = mixed_data(300_000, 11);
    let src = d.join("s");
    std::fs::write(&src, &data).unwrap();
    let enc = d.join("s.ppenc");
    let o = run(&mut pp(args!["encrypt", &src, "-o", &enc, "--key-file", &key, "--block-size", "1G", "--engine", "emulated", "--no-fallback"])).ok();
    assert!(o.stdout_str().contains("sealed on 1 emulated CSP") && o.stdout_str().contains("1 block of 1 GiB"), "{}", o.describe());
    let back = d.join("back");
    let o = run(&mut pp(args!["decrypt", &enc, "-o", &back, "--key-file", &key, "--engine", "emulated", "--no-fallback"])).ok();
    assert!(o.stdout_str().contains("opened on 1 emulated CSP"), "{}", o.describe());
    assert_file_eq(&back, &data, "1 GiB blocks, sealed and opened on the device");
}

/// The chain with `--format bgzf` on an emulated CSP falls back to the CPU (BGZF's 65280-byte
/// blocks are not whole pages): it said "--block-size 65280 is not a multiple of 4K", an option
/// never given (and refused with BGZF). It names BGZF's blocks; the set decodes.
#[test]
fn a_bgzf_chain_s_fallback_names_bgzf_s_blocks_not_an_option_never_given() {
    let dir = scratch();
    let d = dir.path();
    let key = keygen(d, "k");
    let data = mixed_data(200_000, 3);
    let src = d.join("s");
    std::fs::write(&src, &data).unwrap();
    let set = d.join("set");
    let o = run(&mut pp(args!["compress", &src, "--encrypt", "--key-file", &key, "--ec", "2+1", "--format", "bgzf", "-o", &set, "--engine", "emulated", "-q"])).ok();
    assert!(o.stderr.contains("FALLBACK") && o.stderr.contains("BGZF's blocks (65280 bytes of input each)") && !o.stderr.contains("--block-size"), "{}", o.stderr);
    run(&mut pp(args!["compress", &src, "--encrypt", "--key-file", &key, "--ec", "2+1", "--format", "bgzf", "-o", d.join("never"), "--engine", "emulated", "--no-fallback"])).fails(15, &["BGZF's blocks"]);
    let back = d.join("back");
    run(&mut pp(args!["decompress", "--ec", &set, "--key-file", &key, "-o", &back, "-q"])).ok();
    assert_file_eq(&back, &data, "the BGZF chain's set");
}

/// `--engine gpu`: on a GPU (peerpath's AES-256-GCM kernels) the file opens
/// as the CPU's does and a tampered block is named; without one, the
/// fallback says why and the CPU's file comes out; --no-fallback exits 15.
#[test]
fn encrypt_and_decrypt_on_a_gpu_give_the_cpus_results_or_fall_back_saying_why() {
    let dir = scratch();
    let d = dir.path();
    let key = keygen(d, "k");
    let src = d.join("s");
    let data = mixed_data(40 * 65536 + 4321, 11);
    std::fs::write(&src, &data).unwrap();
    let enc = d.join("s.gpu.ppenc");
    let o = run(&mut pp(args!["encrypt", &src, "-o", &enc, "--key-file", &key, "--block-size", "64K", "--engine", "gpu", "--json"])).ok();
    let v = o.json();
    let on_gpu = v["fallback"].is_null();
    if on_gpu {
        eprintln!("a GPU sealed the file: {}", v["engine"]);
        assert_eq!(v["provenance"], "measured on a real accelerator (GPU)", "{v}");
        assert!(v["engine"].as_str().unwrap().contains("copied to GPU memory by the device") && host_copies(v["engine"].as_str().unwrap()).0 == 2 * peerpath_func::crypt::DEVICE_KEY_BYTES as u64, "{v}");
    } else {
        eprintln!("SKIPPED the GPU's own run (no GPU here): {}", v["fallback"]);
        assert!(o.stderr.contains("FALLBACK: GPU 0 unavailable: ") && o.stderr.contains("on the host CPU"), "{}", o.stderr);
        assert_eq!(v["provenance"], "measured on this host's CPU", "{v}");
        run(&mut pp(args!["encrypt", &src, "-o", d.join("none"), "--key-file", &key, "--engine", "gpu", "--no-fallback"])).fails(15, &["GPU 0 unavailable", "--no-fallback"]);
        assert!(!d.join("none").exists());
    }
    let back = d.join("s.back");
    run(&mut pp(args!["decrypt", &enc, "-o", &back, "--key-file", &key])).ok();
    assert_file_eq(&back, &data, "sealed with --engine gpu, opened on the CPU");
    let gback = d.join("s.gback");
    let o = run(&mut pp(args!["decrypt", &enc, "-o", &gback, "--key-file", &key, "--engine", "gpu"])).ok();
    assert_eq!(o.stdout_str().contains("opened on 1 GPU"), on_gpu, "{}", o.stdout_str());
    assert_file_eq(&gback, &data, "opened with --engine gpu");
    // A flipped byte in block 7: named, nothing written.
    let mut bad = std::fs::read(&enc).unwrap();
    bad[HEADER + 7 * (65536 + TAG) + 100] ^= 4;
    std::fs::write(&enc, &bad).unwrap();
    run(&mut pp(args!["decrypt", &enc, "-o", d.join("never"), "--key-file", &key, "--engine", "gpu"])).fails(6, &["block 7 "]);
    assert!(!d.join("never").exists());
    run(&mut pp(args!["encrypt", &src, "-o", d.join("x"), "--key-file", &key, "--gpu", "1"])).fails(2, &["--gpu needs --engine gpu"]);
    run(&mut pp(args!["encrypt", &src, "-o", d.join("x.xts"), "--key-file", &key, "--mode", "xts", "--engine", "gpu", "--no-fallback"])).fails(15, &["no XTS"]);
}

/// A device that stops answering mid-file is declared hung after
/// `--device-timeout`, and the CPU seals the whole file; the option is a
/// device's, a usage error on the CPU.
#[test]
fn a_device_that_hangs_mid_file_is_timed_out_and_the_cpu_seals_the_file() {
    let dir = scratch();
    let d = dir.path();
    let key = keygen(d, "k");
    let data = mixed_data(3_000_001, 10);
    let src = d.join("s");
    std::fs::write(&src, &data).unwrap();
    let started = std::time::Instant::now();
    let enc = d.join("s.ppenc");
    let o = run(&mut pp(args!["encrypt", &src, "-o", &enc, "--key-file", &key, "--block-size", "64K", "--engine", "emulated", "--inject-faults", "seed=4,hang-after=5", "--device-timeout", "0.5"])).ok();
    assert!(o.stderr.contains("FALLBACK") && o.stderr.contains("timed out"), "{}", o.stderr);
    assert!(started.elapsed() < std::time::Duration::from_secs(9), "a hang of 0.5 s, not 10 s: {:?}", started.elapsed());
    let back = d.join("s.back");
    run(&mut pp(args!["decrypt", &enc, "-o", &back, "--key-file", &key])).ok();
    assert_file_eq(&back, &data, "sealed on the CPU after the device hung");
    run(&mut pp(args!["decrypt", &enc, "-o", d.join("x"), "--key-file", &key, "--device-timeout", "1"])).fails(2, &["--device-timeout", "--engine emulated or gpu"]);
    assert_dir_holds(d, &["k", "s", "s.ppenc", "s.back"]);
}

/// A device that dies while it seals or opens: the whole file is done again
/// on the host CPU, said (and the report names the CPU and the reason); with
/// --no-fallback exit 15 and nothing kept. Injected faults need the
/// emulated engine, and corrupt= is refused (nothing checks the device's output).
#[test]
fn a_device_that_dies_mid_file_hands_the_whole_file_to_the_cpu() {
    let dir = scratch();
    let d = dir.path();
    let key = keygen(d, "k");
    let data = mixed_data(3_000_001, 9);
    let src = d.join("s");
    std::fs::write(&src, &data).unwrap();
    let cpu_enc = d.join("s.cpu.ppenc");
    run(&mut pp(args!["encrypt", &src, "-o", &cpu_enc, "--key-file", &key, "--block-size", "64K"])).ok();
    // 46 blocks of 64K, 2 at a time: the device dies on the 5th command.
    let faults = ["--engine", "emulated", "--inject-faults", "seed=4,crash-after=5"];
    for (op, from, to) in [("encrypt", src.clone(), d.join("s.dev.ppenc")), ("decrypt", cpu_enc.clone(), d.join("s.back"))] {
        let mut args = args![op, &from, "-o", &to, "--key-file", &key, "--json"];
        if op == "encrypt" {
            args.extend(args!["--block-size", "64K"]);
        }
        args.extend(args!(faults[0], faults[1], faults[2], faults[3]));
        let o = run(&mut pp(args.clone())).ok();
        assert!(o.stderr.contains("FALLBACK: the emulated CSP failed") && o.stderr.contains("the whole file on the host CPU instead"), "{op}: {}", o.stderr);
        let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(report["provenance"], "measured on this host's CPU", "{op}: {report}");
        assert!(report["fallback"].as_str().is_some_and(|f| f.contains("lost")), "{op}: {report}");
        let never = d.join(format!("never-{op}"));
        args[3] = never.clone().into_os_string();
        args.push("--no-fallback".into());
        run(&mut pp(args)).fails(15, &["the emulated CSP failed", "--no-fallback", "nothing was kept"]);
        assert!(!never.exists());
    }
    assert_file_eq(&d.join("s.back"), &data, "opened on the CPU after the device died");
    let back = d.join("s.dev.back");
    run(&mut pp(args!["decrypt", d.join("s.dev.ppenc"), "-o", &back, "--key-file", &key])).ok();
    assert_file_eq(&back, &data, "sealed on the CPU after the device died");
    run(&mut pp(args!["encrypt", &src, "-o", d.join("x"), "--key-file", &key, "--inject-faults", "seed=1,crash-after=2"])).fails(2, &["--engine emulated"]);
    run(&mut pp(args!["encrypt", &src, "-o", d.join("x"), "--key-file", &key, "--engine", "emulated", "--inject-faults", "seed=1,corrupt=0.5"])).fails(2, &["corrupt="]);
    assert_dir_holds(d, &["k", "s", "s.cpu.ppenc", "s.dev.ppenc", "s.back", "s.dev.back"]);
}

/// An emulated CSP's memory goes where compress's devices put theirs: with /dev/shm too
/// small, in a file in the temporary directory (said), and the file is sealed and opened
/// there; with no room there either, the device does not start and says its memory has no
/// room (the CPU seals the file, said; --no-fallback exits 15). Never a SIGBUS, nor a read
/// error that blames the source (it was made resident first).
#[test]
fn an_emulated_csp_s_memory_goes_where_it_has_room_or_the_device_says_it_has_none() {
    let test = "an_emulated_csp_s_memory_goes_where_it_has_room_or_the_device_says_it_has_none";
    let dir = scratch();
    let d = dir.path();
    let key = keygen(d, "k");
    let data = mixed_data(3_000_001, 12);
    let src = d.join("s");
    std::fs::write(&src, &data).unwrap();
    let tmp = d.join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let (enc, back) = (d.join("s.ppenc"), d.join("s.back"));
    let Some(mut c) = with_small_shm(test, &tmp, None, args!["encrypt", &src, "-o", &enc, "--key-file", &key, "--engine", "emulated", "--no-fallback"]) else { return };
    let o = run(&mut c).ok();
    let moved = format!("memory in a file in {} (/dev/shm had less than", tmp.display());
    assert!(o.stderr.contains(&moved) && !o.stderr.contains("FALLBACK"), "{}", o.describe());
    assert!(o.stdout_str().contains("sealed on 1 emulated CSP"), "{}", o.describe());
    let o = run(&mut with_small_shm(test, &tmp, None, args!["decrypt", &enc, "-o", &back, "--key-file", &key, "--engine", "emulated", "--no-fallback"]).unwrap()).ok();
    assert!(o.stderr.contains(&moved) && o.stdout_str().contains("opened on 1 emulated CSP"), "{}", o.describe());
    assert_file_eq(&back, &data, "sealed and opened with the device's memory in the temporary directory");
    assert!(names_in(&tmp).is_empty(), "the device removes its files: {:?}", names_in(&tmp));
    // No room in the temporary directory either (a 2 MiB tmpfs).
    let cpu = d.join("s.cpu.ppenc");
    let o = run(&mut with_small_shm(test, &tmp, Some("2m"), args!["encrypt", &src, "-o", &cpu, "--key-file", &key, "--engine", "emulated"]).unwrap()).ok();
    assert!(o.stderr.contains("FALLBACK: the emulated CSP did not start") && o.stderr.contains("device memory") && o.stderr.contains("no room for"), "{}", o.describe());
    assert!(!o.stderr.contains("SIGBUS") && o.stdout_str().contains("measured on this host's CPU"), "{}", o.describe());
    run(&mut pp(args!["decrypt", &cpu, "-o", d.join("s.cpu.back"), "--key-file", &key])).ok();
    assert_file_eq(&d.join("s.cpu.back"), &data, "sealed on the CPU");
    let never = d.join("never");
    let o = run(&mut with_small_shm(test, &tmp, Some("2m"), args!["encrypt", &src, "-o", &never, "--key-file", &key, "--engine", "emulated", "--no-fallback", "-q"]).unwrap());
    let o = o.fails(15, &["the emulated CSP did not start", "device memory", "no room for", "--no-fallback"]);
    assert!(!o.stderr.contains("error reading") && !o.stderr.contains("SIGBUS"), "{}", o.describe());
    assert!(!never.exists());
}

/// A device job killed with its whole process group (SIGKILL reaches its emulated CSP too, as
/// `timeout -s KILL` sends it) leaves its device's files (memory, queues, socket, lock); the next
/// device job sweeps them, as compress's devices sweep theirs, and so it does where device memory
/// went to the temporary directory for want of room in /dev/shm. Files of a device started by
/// hand (`csp serve --name`) are left alone.
#[test]
fn a_device_job_killed_with_its_process_group_leaves_files_the_next_one_sweeps() {
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    let test = "a_device_job_killed_with_its_process_group_leaves_files_the_next_one_sweeps";
    let dir = scratch();
    let d = dir.path();
    let key = keygen(d, "k");
    let tmp = d.join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let shm = if Path::new("/dev/shm").is_dir() { Path::new("/dev/shm") } else { tmp.as_path() };
    // The device files of host `pid` in `dir`, whatever the form of their name.
    let files_of = |dir: &Path, pid: u32| -> Vec<String> {
        let pid = pid.to_string();
        names_in(dir).into_iter().filter(|n| n.strip_prefix("peerpath-csp-").is_some_and(|r| r.split(|c: char| !c.is_ascii_digit()).any(|run| run == pid))).collect()
    };
    // The processes of process group `pgid`.
    let group = |pgid: u32| -> Vec<i32> {
        let pgid = pgid.to_string();
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
            .filter(|p| std::fs::read_to_string(format!("/proc/{p}/stat")).is_ok_and(|s| s.rsplit_once(')').is_some_and(|(_, r)| r.split_whitespace().nth(2) == Some(pgid.as_str()))))
            .collect()
    };
    // A job long enough to be killed mid-file (1 GiB, sparse: read as fast as the device takes it).
    let big = d.join("big");
    std::fs::File::create(&big).unwrap().set_len(1 << 30).unwrap();
    let mut child = pp(args!["encrypt", &big, "-o", d.join("big.ppenc"), "--key-file", &key, "--engine", "emulated", "--no-fallback", "-q"])
        .env("TMPDIR", &tmp)
        .env_remove("PEERPATH_DAEMON")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap();
    let pid = child.id();
    let start = std::time::Instant::now();
    // Its device is up once its socket is there.
    let seen = loop {
        let f: Vec<String> = [shm, tmp.as_path()].iter().flat_map(|dir| files_of(dir, pid)).collect();
        if f.iter().any(|n| n.ends_with(".sock")) {
            break f;
        }
        assert!(child.try_wait().unwrap().is_none(), "the job ended before its device was seen: {f:?}");
        assert!(start.elapsed() < std::time::Duration::from_secs(60), "no device for the job in 60 s: {f:?}");
        std::thread::sleep(std::time::Duration::from_millis(1));
    };
    let members = group(pid);
    assert!(members.len() >= 2, "the job and its device share a process group: {members:?}");
    // SAFETY: SIGKILL to the process group this test started (the job and its device).
    assert_eq!(unsafe { libc::kill(-(pid as i32), libc::SIGKILL) }, 0);
    // Not reaped yet: a job killed with its parent (`timeout -s KILL` kills itself with the
    // group) stays a zombie until init reaps it, which may be later.
    for p in members {
        wait_until_ended(p, "the killed job and its device");
    }
    assert!(seen.iter().any(|n| n.ends_with(".mem")), "the killed job's device had its memory file: {seen:?}");
    // The next device job (any: here a small encrypt) sweeps what the killed one left.
    let small = d.join("small");
    std::fs::write(&small, mixed_data(300_001, 5)).unwrap();
    let o = run(pp(args!["encrypt", &small, "-o", d.join("small.ppenc"), "--key-file", &key, "--engine", "emulated", "--no-fallback"]).env("TMPDIR", &tmp).env_remove("PEERPATH_DAEMON")).ok();
    assert!(o.stdout_str().contains("sealed on 1 emulated CSP"), "{}", o.describe());
    let left: Vec<String> = [shm, tmp.as_path()].iter().flat_map(|dir| files_of(dir, pid)).collect();
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(libc::SIGKILL), "killed mid-job, not ended: {status:?}");
    assert!(left.is_empty(), "the killed job's device files (seen: {seen:?}) are still there after the next device job: {left:?}");
    // Where /dev/shm is too small and device memory goes to the temporary directory, that is
    // swept too (the files of a job killed with its device's memory there).
    let dead = 1u32 << 23; // past pid_max (at most 2^22): no process
    let swept = ["enc0.mem", "enc0.queues", "enc0.sock", "enc0.lock", "ec3.mem", "csp0.mem"].map(|f| format!("peerpath-csp-pp{dead}-{f}"));
    // (Not `enc<pid>`: an older peerpath's device jobs named their devices so, and they are swept.)
    let by_hand = [format!("peerpath-csp-lab{dead}.mem"), "peerpath-csp-mine.mem".to_string()];
    for n in swept.iter().chain(&by_hand) {
        std::fs::write(tmp.join(n), b"x").unwrap();
    }
    let Some(mut c) = with_small_shm(test, &tmp, None, args!["encrypt", &small, "-o", d.join("small2.ppenc"), "--key-file", &key, "--engine", "emulated", "--no-fallback"]) else { return };
    let o = run(&mut c).ok();
    assert!(o.stderr.contains(&format!("memory in a file in {}", tmp.display())), "{}", o.describe());
    let mut want = by_hand.to_vec();
    want.sort();
    assert_eq!(names_in(&tmp), want, "dead jobs' device files in the temporary directory are swept, those started by hand kept");
}

/// A key file of 32 bytes of text (a 128-bit key in hex, a hex key cut to 63 digits and a
/// newline, a passphrase) is refused, not taken as raw key bytes; an XTS image decrypted
/// without `--mode xts` is said to be one (not damage, exit 6); a file cut inside its magic
/// is truncated (exit 7), not another kind of file.
#[test]
fn text_keys_xts_images_and_a_cut_magic_are_told_apart() {
    let dir = scratch();
    let d = dir.path();
    let key = keygen(d, "k");
    let src = d.join("s");
    std::fs::write(&src, mixed_data(10_000, 3)).unwrap();
    let hex64 = std::fs::read_to_string(&key).unwrap();
    for (name, text) in [("hex128", "0123456789abcdef0123456789abcdef".to_string()), ("cut", format!("{}\n", &hex64[..31])), ("phrase", "correct horse battery staple 42\n".to_string())] {
        assert_eq!(text.len(), 32);
        let k = d.join(name);
        std::fs::write(&k, &text).unwrap();
        let o = run(&mut pp(args!["encrypt", &src, "--key-file", &k, "-o", d.join("x")])).fails(2, &["32 bytes of text, not a key", "64 hexadecimal digits"]);
        assert!(!o.stderr.contains(text.trim()), "the key file's text is not quoted: {}", o.stderr);
        assert!(!d.join("x").exists());
    }
    // What was made with such a key before (taken as its 32 raw bytes, as the same bytes in hex
    // are) is still read with it, said: decrypt and decompress take it with a warning.
    let phrase = d.join("phrase");
    let as_hex = d.join("phrase.hex");
    std::fs::write(&as_hex, std::fs::read(&phrase).unwrap().iter().map(|b| format!("{b:02x}")).collect::<String>()).unwrap();
    run(&mut pp(args!["encrypt", &src, "--key-file", &as_hex, "-o", d.join("old.ppenc"), "-q"])).ok();
    let o = run(&mut pp(args!["decrypt", d.join("old.ppenc"), "--key-file", &phrase, "-o", d.join("old")])).ok();
    assert!(o.stderr.contains("is 32 bytes of text: taken as 32 raw key bytes"), "{}", o.stderr);
    assert_eq!(std::fs::read(d.join("old")).unwrap(), std::fs::read(&src).unwrap());
    run(&mut pp(args!["compress", &src, "--encrypt", "--key-file", &as_hex, "-o", d.join("old.gz.ppenc"), "-q"])).ok();
    run(&mut pp(args!["decompress", d.join("old.gz.ppenc"), "--key-file", &phrase, "-o", d.join("old2")])).ok();
    assert_eq!(std::fs::read(d.join("old2")).unwrap(), std::fs::read(&src).unwrap());
    run(&mut pp(args!["compress", &src, "--encrypt", "--key-file", &phrase, "-o", d.join("new.gz.ppenc")])).fails(2, &["32 bytes of text, not a key"]);
    // Raw random bytes are still a key.
    let raw = d.join("raw");
    let mut bytes = [0u8; 32];
    for (i, b) in bytes.iter_mut().enumerate() {
        *b = (i as u8).wrapping_mul(37) ^ 0x80;
    }
    std::fs::write(&raw, bytes).unwrap();
    run(&mut pp(args!["encrypt", &src, "--key-file", &raw, "-o", d.join("raw.ppenc"), "-q"])).ok();
    // An XTS image given to decryption without --mode xts, with -o and without.
    run(&mut pp(args!["encrypt", &src, "--key-file", &key, "--mode", "xts", "-q"])).ok();
    let image = d.join("s.xts");
    run(&mut pp(args!["decrypt", &image, "--key-file", &key, "-o", d.join("back")])).fails(2, &["s.xts", "--mode xts"]);
    run(&mut pp(args!["decrypt", &image, "--key-file", &key])).fails(2, &["s.xts", "--mode xts"]);
    assert!(!d.join("back").exists());
    // Cut inside the magic: truncated, as a cut anywhere else in the header is.
    let sealed = std::fs::read(d.join("raw.ppenc")).unwrap();
    for cut in [1, 4, 7] {
        let f = d.join(format!("cut{cut}.ppenc"));
        std::fs::write(&f, &sealed[..cut]).unwrap();
        run(&mut pp(args!["decrypt", &f, "--key-file", &raw, "-o", d.join("out")])).fails(7, &["truncated", "72-byte header"]);
    }
    assert!(!d.join("out").exists());
}

/// `encrypt` counts as many as it counts: one block, one sector, one thread in the singular
/// (each read "block(s)", "sector(s)", "thread(s)" whatever the number).
#[test]
fn crypt_counts_one_in_words() {
    let dir = scratch();
    let d = dir.path();
    let key = keygen(d, "k");
    let src = d.join("s");
    std::fs::write(&src, mixed_data(4096, 3)).unwrap();
    let o = run(&mut pp(args!["encrypt", &src, "-o", d.join("g"), "--key-file", &key, "-T", "1"])).ok();
    assert!(o.stdout_str().contains(": encrypted 4 KiB in 1 block of 1 MiB, ") && o.stdout_str().contains(" on 1 thread (") && !o.stdout_str().contains("(s)"), "{}", o.describe());
    let o = run(&mut pp(args!["encrypt", &src, "-o", d.join("x"), "--key-file", &key, "--mode", "xts", "-T", "1"])).ok();
    assert!(o.stdout_str().contains(": encrypted 4 KiB as 1 sector of 4 KiB with AES-256-XTS") && o.stdout_str().contains(" on 1 thread (") && !o.stdout_str().contains("(s)"), "{}", o.describe());
}
