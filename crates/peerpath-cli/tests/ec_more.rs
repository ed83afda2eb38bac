//! `peerpath ec` on a set whose manifest, or a copy of it beside a placed shard, is no regular
//! file: a FIFO there is refused or passed over, never waited on (each command runs under a
//! deadline, killed and failed past it: they waited for a writer for ever).

mod common;

use common::*;
use std::path::{Path, PathBuf};

fn mkfifo(path: &Path) {
    std::fs::remove_file(path).unwrap();
    assert!(std::process::Command::new("mkfifo").arg(path).status().unwrap().success());
}

/// A FIFO in the place of the set's manifest: `ec verify` (also `--json`), `repair`, `decode`
/// and `decompress --ec` say it is not a regular file (exit 3, as a missing manifest), and
/// nothing is written.
#[test]
fn a_fifo_for_the_manifest_is_refused_not_waited_on() {
    let dir = scratch();
    let d = dir.path();
    let src = d.join("src");
    std::fs::write(&src, random_bytes(40_000, 7)).unwrap();
    let (set, chain) = (d.join("set"), d.join("chain"));
    run(&mut pp(args!["ec", "encode", &src, "-k", "2", "-m", "1", "--unit", "4K", "-o", &set, "-q"])).ok();
    run(&mut pp(args!["compress", "-q", &src, "--ec", "2+1", "--ec-unit", "4K", "-o", &chain])).ok();
    mkfifo(&set.join("manifest.json"));
    mkfifo(&chain.join("manifest.json"));
    let back = d.join("back");
    for (a, manifest) in [
        (args!["ec", "verify", &set], &set),
        (args!["ec", "verify", &set, "--json"], &set),
        (args!["ec", "repair", &set], &set),
        (args!["ec", "decode", &set, "-o", &back], &set),
        (args!["decompress", "--ec", &chain, "-o", &back], &chain),
        (args!["decompress", "--ec", &chain, "-o", &back, "--engine", "emulated"], &chain),
    ] {
        let named = manifest.join("manifest.json").display().to_string();
        let o = run_full(&mut pp(a), None, HANG_DEADLINE).fails(3, &[&named, "not a regular file"]);
        assert!(o.stdout.is_empty(), "{}", o.describe());
    }
    assert_dir_holds(d, &["chain", "set", "src"]);
    assert_dir_holds(&set, &["manifest.json", "shard-000", "shard-001", "shard-002"]);
}

/// A FIFO in the place of a copy of the manifest beside a placed shard: `verify` names the copy
/// as missing or different (exit 6, repairable), `decode` restores the source around it (the
/// copy has no vote), and `repair` writes the copy back in its place.
#[test]
fn a_fifo_for_a_copy_of_the_manifest_is_passed_over_not_waited_on() {
    let dir = scratch();
    let d = dir.path();
    let src = d.join("src");
    let data = random_bytes(40_000, 8);
    std::fs::write(&src, &data).unwrap();
    let drives: Vec<PathBuf> = (0..3).map(|i| d.join(format!("ssd{i}"))).collect();
    drives.iter().for_each(|p| std::fs::create_dir(p).unwrap());
    let set = d.join("pset");
    let mut c = pp(args!["ec", "encode", &src, "-k", "2", "-m", "1", "--unit", "4K", "-o", &set, "-q"]);
    for p in &drives {
        c.arg("--shard-dir").arg(p);
    }
    run(&mut c).ok();
    let good = std::fs::read(set.join("manifest.json")).unwrap();
    let copy = drives[1].join("pset.manifest.json");
    mkfifo(&copy);
    let named = copy.display().to_string();
    run_full(&mut pp(args!["ec", "verify", &set]), None, HANG_DEADLINE).fails(6, &["copies of the manifest missing or different", &named, "repairable"]);
    let back = d.join("back");
    run_full(&mut pp(args!["ec", "decode", &set, "-o", &back]), None, HANG_DEADLINE).ok();
    assert_file_eq(&back, &data, "decoded with a FIFO for a copy");
    run_full(&mut pp(args!["ec", "repair", &set, "-q"]), None, HANG_DEADLINE).ok();
    assert!(std::fs::symlink_metadata(&copy).unwrap().is_file(), "the copy was written back as a file");
    assert_eq!(std::fs::read(&copy).unwrap(), good, "the copy written back");
    run_full(&mut pp(args!["ec", "verify", &set]), None, HANG_DEADLINE).ok();
}

/// A FIFO in the place of a shard, on the CPU and on an emulated CSP: `verify` names the shard
/// damaged (exit 6, repairable), `decode` restores the source around it, and `repair` writes the
/// shard back as a file; none waits for a writer. (One swapped in after the shard's type was
/// looked at is opened without waiting too: the unit test
/// `a_shard_swapped_for_a_fifo_is_opened_without_waiting_and_refused`.)
#[test]
fn a_fifo_for_a_shard_is_a_damaged_shard_on_either_engine() {
    let dir = scratch();
    let d = dir.path();
    let src = d.join("src");
    let data = random_bytes(40_000, 9);
    std::fs::write(&src, &data).unwrap();
    for engine in ["cpu", "emulated"] {
        let set = d.join(format!("set-{engine}"));
        run(&mut pp(args!["ec", "encode", &src, "-k", "2", "-m", "1", "--unit", "4K", "-o", &set, "-q"])).ok();
        let shard = set.join("shard-001");
        mkfifo(&shard);
        run_full(&mut pp(args!["ec", "verify", &set, "--engine", engine]), None, HANG_DEADLINE).fails(6, &["shard-001", "repairable"]);
        let v = run_full(&mut pp(args!["ec", "verify", &set, "--json", "--engine", engine]), None, HANG_DEADLINE).fails(6, &[]).json();
        assert_eq!((v["damaged_shards"][0]["shard"].as_str(), v["damaged_shards"].as_array().map(Vec::len), v["lost_stripes"].as_array().map(Vec::len)), (Some("shard-001"), Some(1), Some(0)), "{engine}: {v}");
        let back = d.join(format!("back-{engine}"));
        run_full(&mut pp(args!["ec", "decode", &set, "-o", &back, "--engine", engine]), None, HANG_DEADLINE).ok();
        assert_file_eq(&back, &data, &format!("decoded on {engine} with a FIFO for a shard"));
        run_full(&mut pp(args!["ec", "repair", &set, "-q", "--engine", engine]), None, HANG_DEADLINE).ok();
        assert!(std::fs::symlink_metadata(&shard).unwrap().is_file(), "{engine}: the shard was written back as a file");
        run_full(&mut pp(args!["ec", "verify", &set, "--engine", engine]), None, HANG_DEADLINE).ok();
    }
}

/// A chain's set (`compress --ec`) with a FIFO for a shard: the device's reverse chain opened it
/// with a blocking open and waited for a writer for ever; it is a missing shard, rebuilt from
/// the others, on either engine.
#[test]
fn a_fifo_for_a_shard_of_a_chain_is_a_missing_shard_on_either_engine() {
    let dir = scratch();
    let d = dir.path();
    let src = d.join("src");
    let data = random_bytes(300_000, 11);
    std::fs::write(&src, &data).unwrap();
    let set = d.join("chain");
    run(&mut pp(args!["compress", &src, "--ec", "2+1", "-o", &set, "-q"])).ok();
    mkfifo(&set.join("shard-001"));
    for engine in ["cpu", "emulated"] {
        let out = d.join(format!("out-{engine}"));
        run_full(&mut pp(args!["decompress", "--ec", &set, "-o", &out, "--engine", engine, "-q"]), None, HANG_DEADLINE).ok();
        assert_file_eq(&out, &data, &format!("the chain restored on {engine} with a FIFO for a shard"));
    }
}
