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

/// An RS(2, 1) set `d/pset` of 40,000 random bytes (`seed`) from `d/src`, one shard in each of
/// `d/ssd0..2`: the source's bytes, the drives and the set.
fn placed_set(d: &Path, seed: u64) -> (Vec<u8>, Vec<PathBuf>, PathBuf) {
    let src = d.join("src");
    let data = random_bytes(40_000, seed);
    std::fs::write(&src, &data).unwrap();
    let drives: Vec<PathBuf> = (0..3).map(|i| d.join(format!("ssd{i}"))).collect();
    drives.iter().for_each(|p| std::fs::create_dir(p).unwrap());
    let set = d.join("pset");
    let mut c = pp(args!["ec", "encode", &src, "-k", "2", "-m", "1", "--unit", "4K", "-o", &set, "-q"]);
    for p in &drives {
        c.arg("--shard-dir").arg(p);
    }
    run(&mut c).ok();
    (data, drives, set)
}

/// A FIFO in the place of a copy of the manifest beside a placed shard: `verify` names the copy
/// as missing or different (exit 6, repairable), `decode` restores the source around it (the
/// copy has no vote), and `repair` writes the copy back in its place.
#[test]
fn a_fifo_for_a_copy_of_the_manifest_is_passed_over_not_waited_on() {
    let dir = scratch();
    let d = dir.path();
    let (data, drives, set) = placed_set(d, 8);
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

/// `cmd` under an address-space limit of 2 GiB (`ulimit -v`): a command that read a manifest
/// of gigabytes whole failed for memory there, not after filling the machine's.
fn in_2_gib(cmd: std::process::Command) -> std::process::Command {
    let mut c = std::process::Command::new("sh");
    c.arg("-c").arg("ulimit -v 2097152 && exec \"$0\" \"$@\"").arg(cmd.get_program()).args(cmd.get_args());
    c
}

/// A manifest past 4 GiB (a set's manifest, then a chain's, each a valid one made sparse past
/// that): every command that reads it calls it damaged (exit 6), naming it and its size, and
/// reads none of it (it was read whole into memory, exit 3 for memory under a limit).
#[test]
fn a_manifest_bigger_than_any_set_s_is_damaged_and_never_read() {
    let dir = scratch();
    let d = dir.path();
    let src = d.join("src");
    std::fs::write(&src, random_bytes(40_000, 12)).unwrap();
    let (set, chain) = (d.join("set"), d.join("chain"));
    run(&mut pp(args!["ec", "encode", &src, "-k", "2", "-m", "1", "--unit", "4K", "-o", &set, "-q"])).ok();
    run(&mut pp(args!["compress", "-q", &src, "--ec", "2+1", "--ec-unit", "4K", "-o", &chain])).ok();
    let size = (4u64 << 30) + 1;
    for s in [&set, &chain] {
        std::fs::OpenOptions::new().write(true).open(s.join("manifest.json")).unwrap().set_len(size).unwrap();
    }
    let back = d.join("back");
    for (a, manifest) in [
        (args!["ec", "verify", &set], &set),
        (args!["ec", "verify", &set, "--json"], &set),
        (args!["ec", "repair", &set], &set),
        (args!["ec", "decode", &set, "-o", &back], &set),
        (args!["decompress", "--ec", &chain, "-o", &back], &chain),
    ] {
        let named = manifest.join("manifest.json").display().to_string();
        run_full(&mut in_2_gib(pp(a)), None, HANG_DEADLINE).fails(6, &[&named, &format!("{size} bytes, more than a manifest holds")]);
    }
    assert_dir_holds(d, &["chain", "set", "src"]);
    assert_dir_holds(&set, &["manifest.json", "shard-000", "shard-001", "shard-002"]);
}

/// A copy of a placed set's manifest past 4 GiB is a damaged copy, not read: `verify` names it
/// (exit 6, repairable), `decode` restores the source from the set's own manifest, and
/// `repair` writes the copy back.
#[test]
fn a_copy_of_the_manifest_bigger_than_any_set_s_is_a_damaged_copy() {
    let dir = scratch();
    let d = dir.path();
    let (data, drives, set) = placed_set(d, 13);
    let good = std::fs::read(set.join("manifest.json")).unwrap();
    let copy = drives[1].join("pset.manifest.json");
    std::fs::OpenOptions::new().write(true).open(&copy).unwrap().set_len((4 << 30) + 1).unwrap();
    run_full(&mut in_2_gib(pp(args!["ec", "verify", &set])), None, HANG_DEADLINE).fails(6, &["copies of the manifest missing or different", &copy.display().to_string(), "repairable"]);
    let back = d.join("back");
    run_full(&mut in_2_gib(pp(args!["ec", "decode", &set, "-o", &back])), None, HANG_DEADLINE).ok();
    assert_file_eq(&back, &data, "decoded with a copy of the manifest past 4 GiB");
    run_full(&mut in_2_gib(pp(args!["ec", "repair", &set, "-q"])), None, HANG_DEADLINE).ok();
    assert_eq!(std::fs::read(&copy).unwrap(), good, "the copy written back");
    run_full(&mut pp(args!["ec", "verify", &set]), None, HANG_DEADLINE).ok();
}

/// A source whose set would have more stripes than a manifest of 4 GiB holds a checksum for
/// (254 + 1 shards of 1-byte units: 828,991 stripes at most) is refused before any is coded
/// (exit 2, nothing made), so that no set is made that the commands would refuse to read.
#[test]
fn encode_refuses_a_set_whose_manifest_would_be_too_big_to_read() {
    let dir = scratch();
    let d = dir.path();
    let src = d.join("sparse");
    std::fs::File::create(&src).unwrap().set_len(828_992 * 254).unwrap();
    let set = d.join("set");
    run_full(&mut pp(args!["ec", "encode", &src, "-k", "254", "-m", "1", "--unit", "1", "-o", &set]), None, HANG_DEADLINE).fails(2, &["828992 stripes of 255 shards are more than a manifest holds", "give a larger unit"]);
    assert_dir_holds(d, &["sparse"]);
}

/// A directory in the place of a lost shard: a rebuilt shard cannot be renamed over it, so
/// `verify` calls the set not repairable in place (it called it repairable; exit 6 either way)
/// and `repair` refuses it up front, naming it (exit 11), rebuilding no other shard; `decode`
/// restores the source around it, and once the directory is moved away `repair` mends the set.
#[test]
fn a_directory_in_a_shard_s_place_is_not_repairable_in_place() {
    let dir = scratch();
    let d = dir.path();
    let src = d.join("src");
    let data = random_bytes(40_000, 14);
    std::fs::write(&src, &data).unwrap();
    let set = d.join("set");
    run(&mut pp(args!["ec", "encode", &src, "-k", "2", "-m", "2", "--unit", "4K", "-o", &set, "-q"])).ok();
    std::fs::remove_file(set.join("shard-000")).unwrap();
    let blocker = set.join("shard-001");
    std::fs::remove_file(&blocker).unwrap();
    std::fs::create_dir(&blocker).unwrap();
    let said = run(&mut pp(args!["ec", "verify", &set])).fails(6, &["NOT repairable in place while a directory lies where shard-001 should be"]).stderr;
    let v = run(&mut pp(args!["ec", "verify", &set, "--json"])).fails(6, &[]).json();
    assert_eq!(v["repairable"], false, "{v}");
    run(&mut pp(args!["ec", "repair", &set])).fails(11, &[&blocker.display().to_string(), "a directory lies in its place"]);
    assert_dir_holds(&set, &["manifest.json", "shard-001", "shard-002", "shard-003"]);
    let back = d.join("back");
    run(&mut pp(args!["ec", "decode", &set, "-o", &back])).ok();
    assert_file_eq(&back, &data, "decoded around a directory for a shard");
    std::fs::remove_dir(&blocker).unwrap();
    // What verify said to run then, run as it said it.
    run_hint(&said, "`peerpath ec repair ").ok();
    run(&mut pp(args!["ec", "verify", &set])).ok();
}

/// The command in `message` that begins `start` (a backtick, then the command's words), run by
/// bash as printed, with this build's peerpath first on PATH.
fn run_hint(message: &str, start: &str) -> Out {
    let rest = message.split(start).nth(1).and_then(|t| t.split('`').next()).unwrap_or_else(|| panic!("no {start:?}...` in {message:?}"));
    let command = format!("{}{rest}", &start[1..]);
    let bin_dir = Path::new(bin()).parent().unwrap().to_path_buf();
    let path = std::env::join_paths(std::iter::once(bin_dir).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()))).unwrap();
    run(std::process::Command::new("bash").arg("-c").arg(&command).env("PATH", path))
}

/// `ec verify`'s hints run as printed: they said "`peerpath ec repair`", without the set's
/// directory (a usage error as written). Here one whose name a shell must have quoted (a line
/// break in it): the repairable set's hint mends it, and so does the one that says to make a
/// shard's directory again first.
#[test]
fn the_hints_of_ec_verify_run_as_printed() {
    let dir = scratch();
    let d = dir.path();
    let src = d.join("src");
    std::fs::write(&src, random_bytes(40_000, 15)).unwrap();
    let set = d.join("the\nset");
    run(&mut pp(args!["ec", "encode", &src, "-k", "2", "-m", "1", "--unit", "4K", "-o", &set, "-q"])).ok();
    std::fs::remove_file(set.join("shard-002")).unwrap();
    let said = run(&mut pp(args!["ec", "verify", &set])).fails(6, &["repairable (`peerpath ec repair '", "/the'$'\\n''set'`)"]).stderr;
    run_hint(&said, "`peerpath ec repair ").ok();
    run(&mut pp(args!["ec", "verify", &set, "-q"])).ok();
    // A shard directory gone (a drive not mounted): made again, the hint mends the set.
    let drives: Vec<PathBuf> = (0..3).map(|i| d.join(format!("drive {i}"))).collect();
    drives.iter().for_each(|p| std::fs::create_dir(p).unwrap());
    let spread = d.join("spread\tset");
    let mut encode = pp(args!["ec", "encode", &src, "-k", "2", "-m", "1", "--unit", "4K", "-o", &spread, "-q"]);
    drives.iter().for_each(|p| {
        encode.arg("--shard-dir").arg(p);
    });
    run(&mut encode).ok();
    std::fs::remove_dir_all(&drives[1]).unwrap();
    let said = run(&mut pp(args!["ec", "verify", &spread])).fails(6, &["NOT repairable in place until", "then `peerpath ec repair '", "/spread'$'\\t''set'`"]).stderr;
    std::fs::create_dir(&drives[1]).unwrap();
    run_hint(&said, "`peerpath ec repair ").ok();
    run(&mut pp(args!["ec", "verify", &spread, "-q"])).ok();
    // A name a shell reads apart or expands (a space, `$`, `*`): quoted, the hint mends it
    // (printed as the message prints names, `ec repair` got `my`, `$HOME`'s value, `*` expanded).
    let odd = d.join("my $HOME *");
    run(&mut pp(args!["ec", "encode", &src, "-k", "2", "-m", "1", "--unit", "4K", "-o", &odd, "-q"])).ok();
    std::fs::remove_file(odd.join("shard-000")).unwrap();
    let said = run(&mut pp(args!["ec", "verify", &odd])).fails(6, &["/my $HOME *: ", "/my $HOME *'`)"]).stderr;
    run_hint(&said, "`peerpath ec repair ").ok();
    run(&mut pp(args!["ec", "verify", &odd, "-q"])).ok();
}

/// A shard that cannot be written as it is rebuilt (here past `ulimit -f`, as on a full drive):
/// `repair` fails naming that shard's file and the reason (it named the set's directory), exit
/// 11, and leaves the set as it was (no temporary, the lost shard still lost); with room again
/// it mends the set.
#[test]
fn a_shard_that_cannot_be_written_is_named_by_repair() {
    let dir = scratch();
    let d = dir.path();
    let src = d.join("src");
    std::fs::write(&src, random_bytes(3_000_000, 15)).unwrap();
    let set = d.join("set");
    run(&mut pp(args!["ec", "encode", &src, "-k", "4", "-m", "2", "--unit", "64K", "-o", &set, "-q"])).ok();
    let lost = set.join("shard-000");
    std::fs::remove_file(&lost).unwrap();
    // 1024 blocks of 512 bytes: half a shard (768 KiB).
    let mut c = std::process::Command::new("sh");
    c.arg("-c").arg("ulimit -f 1024; exec \"$0\" \"$@\"").arg(bin()).args(args!["ec", "repair", &set]);
    run(&mut c).fails(11, &[&format!("cannot write {}: File too large", lost.display())]);
    assert_dir_holds(&set, &["manifest.json", "shard-001", "shard-002", "shard-003", "shard-004", "shard-005"]);
    run(&mut pp(args!["ec", "verify", &set])).fails(6, &["repairable"]);
    run(&mut pp(args!["ec", "repair", &set, "-q"])).ok();
    run(&mut pp(args!["ec", "verify", &set])).ok();
}

/// `compress --ec` takes `--device-workers` as its emulated device's workers (they were taken
/// from -T, the option ignored), and refuses the device options its one device cannot take
/// (exit 2, naming the option; they were ignored): nothing is made.
#[test]
fn compress_ec_honours_device_workers_and_refuses_device_options_it_cannot_take() {
    let dir = scratch();
    let d = dir.path();
    let src = d.join("src");
    std::fs::write(&src, random_bytes(100_000, 11)).unwrap();
    let set = d.join("set");
    let chain = |extra: &[&str]| {
        let mut c = pp(args!["compress", &src, "--ec", "2+1", "--ec-unit", "4K", "-o", &set, "-T", "2"]);
        c.args(extra);
        c
    };
    let o = run(&mut chain(&["--engine", "emulated", "--device-workers", "1", "--json"])).ok();
    assert_eq!(o.json()["device"]["workers"], 1, "{}", o.describe());
    assert_eq!(o.json()["device"]["in_flight"], 2, "{}", o.describe());
    std::fs::remove_dir_all(&set).unwrap();
    let shm = format!("shm:{}", d.display());
    for (extra, option) in [
        (vec!["--engine", "emulated", "--devices", "2"], "--devices with --ec"),
        (vec!["--engine", "emulated", "--device-memory", "64M"], "--device-memory with --ec"),
        (vec!["--engine", "gpu", "--device-memory", "64M"], "--device-memory with --ec"),
        (vec!["--engine", "emulated", "--device-memory-from", &shm], "--device-memory-from with --ec"),
        (vec!["--engine", "gpu", "--device-workers", "2"], "--device-workers with --ec --engine gpu"),
    ] {
        run(&mut chain(&extra)).fails(2, &[option]);
        assert_dir_holds(d, &["src"]);
    }
}

/// A bad `compress --ec-unit` is named as that option (it was named `--unit`, `ec encode`'s), on
/// either engine; `ec encode --unit` keeps its own name.
#[test]
fn a_bad_ec_unit_names_the_option_given() {
    let dir = scratch();
    let d = dir.path();
    let src = d.join("src");
    std::fs::write(&src, random_bytes(10_000, 12)).unwrap();
    let set = d.join("set");
    for engine in ["cpu", "emulated"] {
        run(&mut pp(args!["compress", &src, "--ec", "2+1", "--ec-unit", "0", "-o", &set, "--engine", engine])).fails(2, &["--ec-unit must be 1 byte to 256 MiB"]);
    }
    run(&mut pp(args!["ec", "encode", &src, "-k", "2", "-m", "1", "--unit", "0", "-o", &set])).fails(2, &["--unit must be 1 byte to 256 MiB"]);
    assert_dir_holds(d, &["src"]);
}

/// `--ec K+M` out of range counts its shards in words that agree with the numbers.
#[test]
fn ec_shard_counts_out_of_range_are_worded_for_their_numbers() {
    for (spec, said) in [("255+1", "255 data shards and 1 parity shard:"), ("1+255", "1 data shard and 255 parity shards:"), ("0+2", "0 data shards and 2 parity shards:")] {
        let o = run(&mut pp(args!["compress", "x", "--ec", spec, "-o", "y"]));
        assert_eq!(o.code(), Some(2), "{}", o.describe());
        assert!(o.stderr.contains(said), "{said:?} not said:\n{}", o.describe());
    }
}

/// `decompress --ec` on the host CPU says how many units it rebuilt, as the emulated CSP does
/// (same JSON field, same words): it said nothing (null).
#[test]
fn decompress_ec_on_the_cpu_says_the_units_it_rebuilt() {
    let dir = scratch();
    let d = dir.path();
    let src = d.join("src");
    let data = random_bytes(100_000, 13);
    std::fs::write(&src, &data).unwrap();
    let set = d.join("set");
    run(&mut pp(args!["compress", "-q", &src, "--ec", "2+1", "--ec-unit", "4K", "-o", &set])).ok();
    let whole = d.join("whole");
    let o = run(&mut pp(args!["decompress", "--ec", &set, "-o", &whole, "--json"])).ok();
    assert_eq!(o.json()["units_rebuilt"], 0, "{}", o.describe());
    std::fs::remove_file(set.join("shard-001")).unwrap();
    let rebuilt = |engine: &str| {
        let back = d.join(format!("back-{engine}"));
        let o = run(&mut pp(args!["decompress", "--ec", &set, "-o", &back, "--engine", engine, "--json"])).ok();
        assert_file_eq(&back, &data, "the restored source");
        let n = o.json()["units_rebuilt"].as_u64().unwrap_or_else(|| panic!("no units_rebuilt: {}", o.describe()));
        let text = d.join(format!("text-{engine}"));
        let o = run(&mut pp(args!["decompress", "--ec", &set, "-o", &text, "--engine", engine])).ok();
        assert!(o.stdout_str().contains(&format!(", {n} units rebuilt on the")), "{n} units rebuilt not said:\n{}", o.describe());
        n
    };
    let on_cpu = rebuilt("cpu");
    assert!(on_cpu > 0);
    assert_eq!(on_cpu, rebuilt("emulated"));
}

/// Errors about a `--shard-dir` name it as given: a relative one stays relative (it was made
/// absolute), for `compress --ec` and `ec encode` alike.
#[test]
fn shard_dir_errors_name_the_directory_as_given() {
    let dir = scratch();
    let d = dir.path();
    std::fs::write(d.join("src"), random_bytes(10_000, 14)).unwrap();
    for s in ["s0", "s1", "s2"] {
        std::fs::create_dir(d.join(s)).unwrap();
    }
    std::fs::write(d.join("s2/set.shard-002"), b"kept").unwrap();
    for a in [args!["compress", "src", "--ec", "2+1", "-o", "set"], args!["ec", "encode", "src", "-k", "2", "-m", "1", "-o", "set"]] {
        let mut c = pp(a);
        c.current_dir(d).args(["--shard-dir", "s0", "--shard-dir", "s1", "--shard-dir", "s2"]);
        let o = run(&mut c).fails(4, &["target s2/set.shard-002 exists"]);
        assert!(!o.stderr.contains(&d.display().to_string()), "an absolute path named:\n{}", o.describe());
    }
    assert_eq!(std::fs::read(d.join("s2/set.shard-002")).unwrap(), b"kept");
    assert_dir_holds(d, &["s0", "s1", "s2", "src"]);
}
