//! `peerpath ec`: encode, verify, repair and decode, from whatever shards survive.

mod common;

use common::*;
use std::path::Path;

fn shards(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("shard-"))
        .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(&p).unwrap()))
        .collect();
    v.sort();
    v
}

#[test]
fn any_m_lost_shards_are_repaired_and_the_source_restored() {
    let dir = scratch();
    let d = dir.path();
    for (size, k, m, unit) in [(0usize, 2, 1, "4K"), (1, 3, 2, "4K"), (3 * 4096, 3, 1, "4K"), (1_000_003, 4, 2, "64K"), (700_000, 10, 4, "16K")] {
        let src = d.join(format!("s{size}"));
        std::fs::write(&src, random_bytes(size, size as u64 + 1)).unwrap();
        let out = d.join(format!("e{size}"));
        let o = run(&mut pp(args!["ec", "encode", &src, "--data", k.to_string(), "--parity", m.to_string(), "-o", &out, "--unit", unit]));
        assert_eq!(o.code(), Some(0), "{}", o.stderr);
        let original = shards(&out);
        assert_eq!(original.len(), k + m);
        assert_eq!(run(&mut pp(args!["ec", "verify", &out])).code(), Some(0));
        // Lose m shards: delete the first, corrupt the others (data and parity).
        std::fs::remove_file(out.join(&original[0].0)).unwrap();
        for (name, bytes) in original.iter().skip(k + m - (m - 1)).take(m - 1) {
            let mut b = bytes.clone();
            b[bytes.len() / 2] ^= 0x5a;
            std::fs::write(out.join(name), b).unwrap();
        }
        let v = run(&mut pp(args!["ec", "verify", &out]));
        assert_eq!(v.code(), Some(6), "damaged: {}", v.stderr);
        assert!(v.stderr.contains("repairable"), "{}", v.stderr);
        let back = d.join(format!("b{size}"));
        assert_eq!(run(&mut pp(args!["ec", "decode", &out, "-o", &back])).code(), Some(0));
        assert_eq!(std::fs::read(&back).unwrap(), std::fs::read(&src).unwrap(), "size {size}: decoded from the survivors");
        let r = run(&mut pp(args!["ec", "repair", &out]));
        assert_eq!(r.code(), Some(0), "{}", r.stderr);
        assert_eq!(shards(&out), original, "size {size}: repaired shards are the originals, byte for byte");
        assert_eq!(run(&mut pp(args!["ec", "verify", &out])).code(), Some(0));
    }
}

#[test]
fn more_than_m_losses_are_an_error_that_names_the_stripes_and_writes_nothing() {
    let dir = scratch();
    let d = dir.path();
    let src = d.join("s");
    std::fs::write(&src, random_bytes(200_000, 9)).unwrap();
    let out = d.join("e");
    assert_eq!(run(&mut pp(args!["ec", "encode", &src, "-k", "4", "-m", "2", "-o", &out, "--unit", "16K"])).code(), Some(0));
    let original = shards(&out);
    for (name, _) in original.iter().take(3) {
        std::fs::remove_file(out.join(name)).unwrap();
    }
    let left = shards(&out);
    for cmd in [args!["ec", "repair", &out], args!["ec", "decode", &out, "-o", d.join("back")]] {
        let o = run(&mut pp(cmd));
        assert_eq!(o.code(), Some(6), "{}", o.stderr);
        assert!(o.stderr.contains("stripes [0, 1, 2, 3]") && o.stderr.contains("cannot be rebuilt"), "{}", o.stderr);
    }
    assert_eq!(shards(&out), left, "nothing written");
    assert!(!d.join("back").exists());
    // Existing outputs are not replaced; a broken manifest is a clear error.
    assert_eq!(run(&mut pp(args!["ec", "encode", &src, "-k", "2", "-m", "1", "-o", &out])).code(), Some(4));
    std::fs::write(out.join("manifest.json"), b"{\"schema\": 1}").unwrap();
    let o = run(&mut pp(args!["ec", "verify", &out]));
    assert_eq!(o.code(), Some(6));
    assert!(o.stderr.contains("not an ec manifest"), "{}", o.stderr);
    assert_eq!(run(&mut pp(args!["ec", "encode", &src, "-k", "0", "-m", "1", "-o", d.join("z")])).code(), Some(2));
}
