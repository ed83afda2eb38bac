//! A device forked on memory its host mapped ([`EmulatedCsp::fork_with_memory`], P2P memory):
//! it keeps nothing of a key in its host's environment.

mod common;

use peerpath_device::{Device, EmulatedCsp};
use peerpath_mem::MappedRegion;
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::process::Command;
use std::sync::Arc;

/// Set in the process that forks the device (the test run again with a key in its environment).
const HOST: &str = "PEERPATH_TEST_FORKED_DEVICE_HOST";
/// A variable `--key-env` could name: not peerpath's, no KEY in its name.
const OTHER_KEY: &str = "MY_VAULT_SECRET";
const TEST: &str = "a_forked_device_keeps_nothing_of_a_key_in_its_hosts_environment";

/// 64 random hexadecimal digits: a key as PEERPATH_KEY holds one.
fn random_hex() -> String {
    (0..4).map(|_| format!("{:016x}", RandomState::new().build_hasher().finish())).collect()
}

/// A variable's name, as /proc/PID/environ lists it.
fn names(environ: &[u8]) -> Vec<String> {
    environ.split(|b| *b == 0).filter(|v| !v.is_empty()).map(|v| String::from_utf8_lossy(v.split(|b| *b == b'=').next().unwrap_or_default()).into_owned()).collect()
}

/// The readable mappings of process `pid` that hold `needle`.
fn mappings_holding(pid: u32, needle: &str) -> Vec<String> {
    use std::io::{Read, Seek, SeekFrom};
    let found = regex::bytes::Regex::new(&regex::escape(needle)).unwrap();
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap();
    let mut mem = std::fs::File::open(format!("/proc/{pid}/mem")).unwrap();
    let mut holding = Vec::new();
    for line in maps.lines() {
        let mut f = line.split_ascii_whitespace();
        let (Some(range), Some(perms)) = (f.next(), f.next()) else { continue };
        let Some((a, b)) = range.split_once('-') else { continue };
        let (a, b) = (u64::from_str_radix(a, 16).unwrap(), u64::from_str_radix(b, 16).unwrap());
        let mut bytes = Vec::new();
        // [vvar] and the like cannot be read: nothing of the process's own is there.
        if perms.starts_with('r') && mem.seek(SeekFrom::Start(a)).is_ok() && mem.by_ref().take(b - a).read_to_end(&mut bytes).is_ok() && found.is_match(&bytes) {
            holding.push(line.to_string());
        }
    }
    holding
}

/// The forked device inherits its host's whole image: the environment exec left on the stack,
/// /proc/PID/environ for all to read, held PEERPATH_KEY and the variable `--key-env` names (a
/// device is given per-file block keys, never the key). It keeps what an exec'd device is given.
#[test]
fn a_forked_device_keeps_nothing_of_a_key_in_its_hosts_environment() {
    if std::env::var_os(HOST).is_none() {
        // The key must be in the environment exec gives the host, as a user's would be.
        let out = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", TEST, "--nocapture", "--test-threads=1"])
            .env(HOST, random_hex())
            .env("PEERPATH_KEY", random_hex())
            .env(OTHER_KEY, random_hex())
            .output()
            .unwrap();
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success() && text.contains("1 passed"), "{text}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // A fixture's P2P provider: host memory, shared with the fork, stands in for it.
    let provider = dir.path().join("0000:03:00.0");
    let p2pmem = provider.join("p2pmem");
    std::fs::create_dir_all(&p2pmem).unwrap();
    for (name, value) in [("size", "8388608"), ("available", "8388608"), ("published", "1")] {
        std::fs::write(p2pmem.join(name), format!("{value}\n")).unwrap();
    }
    std::fs::File::create(p2pmem.join("allocate")).unwrap().set_len(8 << 20).unwrap();
    let memory = Arc::new(MappedRegion::map_p2pmem(&provider, 4 << 20).unwrap());
    let mut options = common::spawn_options("fork-env", 8);
    options.serve.dir = dir.path().to_path_buf();
    options.serve.workers = 1;
    let device = EmulatedCsp::fork_with_memory(&options, memory).expect("the forked device starts");
    let pid = device.process_id().unwrap();
    // Read only now: a copy read before the fork would be in the device's memory too.
    let keys = [std::env::var("PEERPATH_KEY").unwrap(), std::env::var(OTHER_KEY).unwrap()];
    let listed = names(&std::fs::read(format!("/proc/{pid}/environ")).unwrap());
    for name in ["PEERPATH_KEY", OTHER_KEY] {
        assert!(!listed.iter().any(|n| n == name), "the device's /proc/{pid}/environ lists {name}: {listed:?}");
    }
    // What an exec'd device is given stays: peerpath's own settings, PATH.
    assert!(listed.iter().any(|n| n == HOST), "{listed:?}");
    assert!(std::env::var_os("PATH").is_none() || listed.iter().any(|n| n == "PATH"), "{listed:?}");
    // The search sees the environment block, where the kept variables are.
    let kept = mappings_holding(pid, &std::env::var(HOST).unwrap());
    assert!(kept.iter().any(|m| m.ends_with("[stack]")), "{HOST}'s value is not found on the device's stack: {kept:?}");
    for (name, key) in ["PEERPATH_KEY", OTHER_KEY].into_iter().zip(&keys) {
        let holding = mappings_holding(pid, key);
        assert!(holding.is_empty(), "the device's memory holds {name}'s value in {holding:?}");
    }
    drop(device);
}
