//! The JSON reports of encrypt and decrypt (`crypt-report`), of the chains (`chain-report`,
//! `reverse-chain-report`) and of scan (`scan-report`) keep the exact bytes of a name that is not
//! UTF-8, as the job report does (its string has U+FFFD in their place): `source_bytes` and
//! `target_bytes`; in the chains' reports, where `source_bytes` and `output_bytes` are sizes,
//! `*_name_bytes`; scan's `path_bytes` and `output_bytes`. Absent where the name is UTF-8.

mod common;

use common::*;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

/// JSON's byte list of a name, as the `*_bytes` fields hold it.
fn byte_list(name: &[u8]) -> serde_json::Value {
    name.iter().map(|&b| serde_json::Value::from(b)).collect()
}

/// The report's keys that end in `_bytes` and hold a list (a name's bytes, not a size).
fn name_byte_keys(v: &serde_json::Value) -> Vec<&str> {
    v.as_object().unwrap().iter().filter(|(k, x)| k.ends_with("_bytes") && x.is_array()).map(|(k, _)| k.as_str()).collect()
}

#[test]
fn encrypt_and_decrypt_keep_the_exact_bytes_of_names_in_json() {
    let dir = scratch();
    let d = dir.path();
    run(pp(["keygen", "-o", "key"]).current_dir(d)).ok();
    std::fs::write(d.join(OsStr::from_bytes(b"a\xffb")), &sample()[..100_000]).unwrap();
    let key = [OsStr::new("--key-file"), OsStr::new("key"), OsStr::new("--json")];
    let v = run(pp([OsStr::new("encrypt"), OsStr::from_bytes(b"a\xffb")].into_iter().chain(key)).current_dir(d)).ok().json();
    assert_eq!((&v["source"], &v["target"]), (&"a\u{fffd}b".into(), &"a\u{fffd}b.ppenc".into()), "the strings as before: {v}");
    assert_eq!((&v["source_bytes"], &v["target_bytes"]), (&byte_list(b"a\xffb"), &byte_list(b"a\xffb.ppenc")), "{v}");
    let v = run(pp([OsStr::new("decrypt"), OsStr::from_bytes(b"a\xffb.ppenc"), OsStr::new("-o"), OsStr::from_bytes(b"back\xfe")].into_iter().chain(key)).current_dir(d)).ok().json();
    assert_eq!((&v["source_bytes"], &v["target_bytes"]), (&byte_list(b"a\xffb.ppenc"), &byte_list(b"back\xfe")), "{v}");
    assert_file_eq(&d.join(OsStr::from_bytes(b"back\xfe")), &sample()[..100_000], "the file the report names");
    // --mode xts reports alike.
    let v = run(pp([OsStr::new("encrypt"), OsStr::from_bytes(b"a\xffb"), OsStr::new("--mode"), OsStr::new("xts")].into_iter().chain(key)).current_dir(d)).ok().json();
    assert_eq!((&v["source_bytes"], &v["target_bytes"]), (&byte_list(b"a\xffb"), &byte_list(b"a\xffb.xts")), "{v}");
    // UTF-8 names: their strings only.
    std::fs::write(d.join("good"), b"good").unwrap();
    let v = run(pp([OsStr::new("encrypt"), OsStr::new("good")].into_iter().chain(key)).current_dir(d)).ok().json();
    assert_eq!(name_byte_keys(&v), Vec::<&str>::new(), "{v}");
}

#[test]
fn the_chains_keep_the_exact_bytes_of_names_in_json() {
    let dir = scratch();
    let d = dir.path();
    run(pp(["keygen", "-o", "key"]).current_dir(d)).ok();
    std::fs::write(d.join(OsStr::from_bytes(b"a\xffb")), &sample()[..100_000]).unwrap();
    let key = [OsStr::new("--key-file"), OsStr::new("key"), OsStr::new("--json")];
    for engine in ["cpu", "emulated"] {
        let (set, out) = ([b"set\xfe".as_slice(), engine.as_bytes()].concat(), [b"out\xff".as_slice(), engine.as_bytes()].concat());
        let args = [OsStr::new("compress"), OsStr::from_bytes(b"a\xffb"), OsStr::new("--ec"), OsStr::new("2+1"), OsStr::new("--encrypt"), OsStr::new("-o"), OsStr::from_bytes(&set), OsStr::new("--engine"), OsStr::new(engine)];
        let v = run(pp(args.into_iter().chain(key)).current_dir(d)).ok().json();
        assert_eq!(v["source_bytes"], 100_000, "still the source's size: {v}");
        assert_eq!((&v["source_name_bytes"], &v["target_name_bytes"]), (&byte_list(b"a\xffb"), &byte_list(&set)), "{engine}: {v}");
        // The file the set holds keeps the source's name byte for byte, in the report and the manifest.
        assert_eq!(v["stream_name_bytes"], byte_list(b"a\xffb.gz.ppenc"), "{engine}: {v}");
        let manifest: serde_json::Value = serde_json::from_slice(&std::fs::read(d.join(OsStr::from_bytes(&set)).join("manifest.json")).unwrap()).unwrap();
        assert_eq!(manifest["source_name_bytes"], byte_list(b"a\xffb.gz.ppenc"), "{engine}: {manifest}");
        let shards = v["shards_name_bytes"].as_array().unwrap_or_else(|| panic!("{engine}: {v}"));
        assert_eq!(shards.len(), 3, "{v}");
        for (s, text) in shards.iter().zip(v["shards"].as_array().unwrap()) {
            let bytes: Vec<u8> = s.as_array().unwrap().iter().map(|b| b.as_u64().unwrap() as u8).collect();
            assert!(bytes.starts_with(&[set.as_slice(), b"/"].concat()), "{engine}: {v}");
            assert!(d.join(OsStr::from_bytes(&bytes)).is_file(), "{engine}: the shard the report names: {v}");
            assert_eq!(String::from_utf8_lossy(&bytes), text.as_str().unwrap(), "{engine}: {v}");
        }
        let args = [OsStr::new("decompress"), OsStr::new("--ec"), OsStr::from_bytes(&set), OsStr::new("-o"), OsStr::from_bytes(&out), OsStr::new("--engine"), OsStr::new(engine)];
        let v = run(pp(args.into_iter().chain(key)).current_dir(d)).ok().json();
        assert_eq!(v["output_bytes"], 100_000, "still the output's size: {v}");
        assert_eq!((&v["set_name_bytes"], &v["output_name_bytes"]), (&byte_list(&set), &byte_list(&out)), "{engine}: {v}");
        assert_file_eq(&d.join(OsStr::from_bytes(&out)), &sample()[..100_000], "the file the report names");
    }
    // UTF-8 names: their strings only.
    std::fs::write(d.join("good"), b"good").unwrap();
    let v = run(pp(["compress", "good", "--ec", "2+1", "-o", "gset", "--json"]).current_dir(d)).ok().json();
    assert_eq!(name_byte_keys(&v), Vec::<&str>::new(), "{v}");
    let v = run(pp(["decompress", "--ec", "gset", "-o", "gout", "--json"]).current_dir(d)).ok().json();
    assert_eq!(name_byte_keys(&v), Vec::<&str>::new(), "{v}");
}

#[test]
fn scan_keeps_the_exact_bytes_of_names_in_json() {
    let dir = scratch();
    let d = dir.path();
    std::fs::write(d.join(OsStr::from_bytes(b"r\xff.fa")), b">r1\nACGT\n>r2\nTTTT\n").unwrap();
    std::fs::write(d.join("good.fa"), b">r3\nACGA\n").unwrap();
    let v = run(pp([OsStr::new("scan"), OsStr::new("--motif"), OsStr::new("ACG"), OsStr::new("--json"), OsStr::new("-o"), OsStr::from_bytes(b"out\xfe"), OsStr::from_bytes(b"r\xff.fa"), OsStr::new("good.fa")]).current_dir(d)).ok().json();
    assert_eq!((&v["files"][0]["path"], &v["output"]), (&"r\u{fffd}.fa".into(), &"out\u{fffd}".into()), "the strings as before: {v}");
    assert_eq!((&v["files"][0]["path_bytes"], &v["output_bytes"]), (&byte_list(b"r\xff.fa"), &byte_list(b"out\xfe")), "{v}");
    assert_eq!(name_byte_keys(&v["files"][1]), Vec::<&str>::new(), "a UTF-8 name: its string only: {v}");
    assert_file_eq(&d.join(OsStr::from_bytes(b"out\xfe")), b">r1\nACGT\n>r3\nACGA\n", "the records the report names");
    let v = run(pp([OsStr::new("scan"), OsStr::new("--motif"), OsStr::new("ACG"), OsStr::new("--json"), OsStr::new("--count"), OsStr::new("good.fa")]).current_dir(d)).ok().json();
    assert_eq!((name_byte_keys(&v), name_byte_keys(&v["files"][0])), (vec![], vec![]), "{v}");
}

/// Two sources of one base name among many, from different directories, into one `-o DIR/`:
/// refused before anything is made, naming both sources, not only the target (which
/// of the many was it?); so for `decompress`, and for one source given twice.
#[test]
fn two_sources_of_one_target_are_both_named() {
    let dir = scratch();
    let d = dir.path();
    for sub in ["a", "b", "d"] {
        std::fs::create_dir(d.join(sub)).unwrap();
        for n in ["x", "y"] {
            std::fs::write(d.join(sub).join(n), format!("{sub}/{n}\n")).unwrap();
        }
    }
    let out = run(pp(["compress", "-q", "-o", "out/", "a/x", "a/y", "b/y", "d/x"]).current_dir(d)).fails(2, &[]);
    assert!(out.stderr.contains("a/y and b/y: two sources would both write out/y.gz\n"), "{}", out.stderr);
    assert!(!d.join("out").exists(), "nothing made:\n{}", out.describe());
    run(pp(["compress", "-q", "a/x", "d/x"]).current_dir(d)).ok();
    let out = run(pp(["decompress", "-q", "a/x.gz", "d/x.gz", "-o", "back/"]).current_dir(d)).fails(2, &["a/x.gz and d/x.gz: two sources would both write back/x"]);
    assert!(!d.join("back").exists(), "nothing made:\n{}", out.describe());
    run(pp(["verify", "-q", "a/x.gz", "./a/x.gz"]).current_dir(d)).ok();
    run(pp(["decompress", "-q", "a/x.gz", "./a/x.gz", "-o", "back/"]).current_dir(d)).fails(2, &["a/x.gz and ./a/x.gz: two sources would both write back/x"]);
}
