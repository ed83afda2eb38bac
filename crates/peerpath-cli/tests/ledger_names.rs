//! The byte ledger names the files it read and wrote exactly: two names that differ only in a
//! byte that is not UTF-8 are two ledger entries, each with its bytes in JSON (`name_bytes`) and
//! quoted in the text report, as GNU `ls` quotes them.

mod common;

use common::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

/// A storage location's exact name: `name_bytes` where JSON has them, else `name`.
fn exact(location: &Value) -> Vec<u8> {
    match location.get("name_bytes") {
        Some(bytes) => {
            let bytes: Vec<u8> = bytes.as_array().unwrap().iter().map(|b| u8::try_from(b.as_u64().unwrap()).unwrap()).collect();
            assert_eq!(location["name"], String::from_utf8_lossy(&bytes).as_ref(), "the string as before: {location}");
            assert!(std::str::from_utf8(&bytes).is_err(), "name_bytes only for names that are not UTF-8: {location}");
            bytes
        }
        None => location["name"].as_str().unwrap().as_bytes().to_vec(),
    }
}

/// The bytes the report's ledger read from each storage location (`read_source`, storage on the
/// source side), and the storage locations it wrote to (`write_target`), by exact name.
fn storage(report: &Value) -> (BTreeMap<Vec<u8>, u64>, Vec<Vec<u8>>) {
    let (mut read, mut written) = (BTreeMap::new(), Vec::new());
    for e in report["ledger"]["entries"].as_array().unwrap() {
        if e["source"]["kind"] == "storage" {
            assert_eq!(e["purpose"], "read_source", "{e}");
            *read.entry(exact(&e["source"])).or_default() += e["bytes_read"].as_u64().unwrap();
        }
        if e["target"]["kind"] == "storage" {
            assert_eq!(e["purpose"], "write_target", "{e}");
            written.push(exact(&e["target"]));
        }
    }
    written.sort();
    written.dedup();
    (read, written)
}

#[test]
fn the_ledger_keeps_names_that_differ_only_in_a_byte_that_is_not_utf8_apart() {
    let dir = scratch();
    let d = dir.path();
    let (ff, fe) = (b"a\xffb".as_slice(), b"a\xfeb".as_slice());
    // Sizes apart, so a merged entry shows in the bytes too.
    let (ff_data, fe_data) = (&sample()[..300_000], &sample()[..500_000]);
    std::fs::write(d.join(OsStr::from_bytes(ff)), ff_data).unwrap();
    std::fs::write(d.join(OsStr::from_bytes(fe)), fe_data).unwrap();

    // On the host's CPU, and on an emulated device (the offload path's reads and writes).
    for (engine, out) in [(&[][..], ""), (&["--engine", "emulated", "--device-memory", "64M", "--device-workers", "2", "--no-fallback", "-o", "dev/"][..], "dev/")] {
        let v = run(pp([OsStr::new("compress"), OsStr::from_bytes(ff), OsStr::from_bytes(fe), OsStr::new("--json")].into_iter().chain(engine.iter().map(OsStr::new))).current_dir(d)).ok().json();
        let (read, written) = storage(&v);
        assert_eq!(read, BTreeMap::from([(fe.to_vec(), fe_data.len() as u64), (ff.to_vec(), ff_data.len() as u64)]), "{engine:?}: each file read once, by its own name: {}", v["ledger"]);
        assert_eq!(written, [[out.as_bytes(), b"a\xfeb.gz"].concat(), [out.as_bytes(), b"a\xffb.gz"].concat()], "{engine:?}: {}", v["ledger"]);
    }

    let (ff_gz, fe_gz) = (b"a\xffb.gz".as_slice(), b"a\xfeb.gz".as_slice());
    let gz_len = |n: &[u8]| std::fs::metadata(d.join(OsStr::from_bytes(n))).unwrap().len();
    let v = run(pp([OsStr::new("decompress"), OsStr::from_bytes(ff_gz), OsStr::from_bytes(fe_gz), OsStr::new("-o"), OsStr::new("out/"), OsStr::new("--json")]).current_dir(d)).ok().json();
    let (read, written) = storage(&v);
    assert_eq!(read, BTreeMap::from([(fe_gz.to_vec(), gz_len(fe_gz)), (ff_gz.to_vec(), gz_len(ff_gz))]), "{}", v["ledger"]);
    assert_eq!(written, [b"out/a\xfeb".to_vec(), b"out/a\xffb".to_vec()], "{}", v["ledger"]);
    assert_file_eq(&d.join(OsStr::from_bytes(b"out/a\xffb")), ff_data, "the file the ledger names");
    assert_file_eq(&d.join(OsStr::from_bytes(b"out/a\xfeb")), fe_data, "the file the ledger names");

    // The text report's ledger lines name them exactly too, quoted as `ls` quotes them.
    let o = run(pp([OsStr::new("decompress"), OsStr::from_bytes(ff_gz), OsStr::from_bytes(fe_gz), OsStr::new("-o"), OsStr::new("again/")]).current_dir(d)).ok();
    let text = o.stdout_str();
    for quoted in [r"storage 'a'$'\377''b.gz' -> ", r"storage 'a'$'\376''b.gz' -> ", r"-> storage 'again/a'$'\377''b', ", r"-> storage 'again/a'$'\376''b', "] {
        assert!(text.contains(quoted), "a ledger line has {quoted}:\n{text}");
    }
}

/// A device's sources name the files it served exactly: in JSON, `sources_bytes` gives each name
/// that is not UTF-8 its bytes (its `sources` string has U+FFFD for them, so two names read the
/// same), and the text report's "serves" line quotes them as `ls` does.
#[test]
fn a_devices_sources_are_named_exactly() {
    let dir = scratch();
    let d = dir.path();
    let (ff, fe) = (b"a\xffb".as_slice(), b"a\xfeb".as_slice());
    std::fs::write(d.join(OsStr::from_bytes(ff)), &sample()[..300_000]).unwrap();
    std::fs::write(d.join(OsStr::from_bytes(fe)), &sample()[..500_000]).unwrap();
    let compress = |out: &str, json: bool| {
        let args = ["--engine", "emulated", "--devices", "1", "--device-memory", "64M", "--device-workers", "2", "--no-fallback", "-o", out];
        let json = json.then_some("--json");
        run(pp([OsStr::new("compress"), OsStr::from_bytes(ff), OsStr::from_bytes(fe)].into_iter().chain(args.iter().chain(&json).map(OsStr::new))).current_dir(d)).ok()
    };

    let v = compress("json/", true).json();
    let devices = v["devices"].as_array().unwrap();
    assert_eq!(devices.len(), 1, "{v}");
    let sources = devices[0]["sources"].as_array().unwrap();
    let exact = devices[0]["sources_bytes"].as_array().unwrap_or_else(|| panic!("sources_bytes: {}", devices[0]));
    assert_eq!(sources.len(), exact.len(), "one entry per source: {}", devices[0]);
    let mut names: Vec<Vec<u8>> = exact.iter().map(|b| b.as_array().unwrap().iter().map(|b| u8::try_from(b.as_u64().unwrap()).unwrap()).collect()).collect();
    for (name, bytes) in sources.iter().zip(&names) {
        assert_eq!(name, String::from_utf8_lossy(bytes).as_ref(), "the string as before: {}", devices[0]);
    }
    names.sort();
    assert_eq!(names, [fe.to_vec(), ff.to_vec()], "{}", devices[0]);

    let text = compress("text/", false).stdout_str();
    let serves = text.lines().find(|l| l.trim_start().starts_with("serves ")).unwrap_or_else(|| panic!("a serves line:\n{text}"));
    for quoted in [r"'a'$'\377''b'", r"'a'$'\376''b'"] {
        assert!(serves.contains(quoted), "the serves line has {quoted}: {serves}");
    }
}
