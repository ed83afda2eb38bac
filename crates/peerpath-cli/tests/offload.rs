//! The offload path: `compress --engine emulated`. Every output is
//! compared byte for byte with the CPU path's (the oracle); the ledger must
//! show no payload byte in host memory; faults (a killed device, error
//! statuses, a hung device, corrupted output, memory too small) end in a
//! complete, correct output or a clean failure that keeps nothing.

mod common;

use common::*;
use serde_json::Value;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Device memory for tests: small, so parallel tests stay light.
const MEMORY: &str = "64M";

/// Compresses `sources` into `out` (a directory) with `extra` options.
fn compress(sources: &[PathBuf], out: &Path, extra: &[&str]) -> Out {
    let mut a = args!["compress"];
    a.extend(sources.iter().map(|p| p.as_os_str().to_owned()));
    a.extend(args!["-o", format!("{}/", out.display())]);
    a.extend(extra.iter().map(OsString::from));
    run(&mut pp(a))
}

fn emulated<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec!["--engine", "emulated", "--device-memory", MEMORY, "--device-workers", "2", "--json"];
    v.extend_from_slice(extra);
    v
}

fn write_inputs(dir: &Path, inputs: &[(&str, Vec<u8>)]) -> Vec<PathBuf> {
    inputs
        .iter()
        .map(|(name, data)| {
            let p = dir.join(name);
            std::fs::write(&p, data).unwrap();
            p
        })
        .collect()
}

/// The same job on the CPU: the oracle's bytes.
fn cpu_outputs(dir: &Path, sources: &[PathBuf], extra: &[&str]) -> PathBuf {
    let out = dir.join(format!("cpu{}", extra.join("").replace('-', "")));
    let mut a: Vec<&str> = vec!["-q", "--engine", "cpu"];
    a.extend_from_slice(extra);
    compress(sources, &out, &a).ok();
    out
}

fn assert_same_outputs(cpu: &Path, dev: &Path, names: &[&str], what: &str) {
    for n in names {
        let want = std::fs::read(cpu.join(format!("{n}.gz"))).unwrap();
        assert_file_eq(&dev.join(format!("{n}.gz")), &want, &format!("{what}: {n}.gz against the CPU path"));
    }
}

fn check_offloaded(r: &Value, devices: usize, what: &str) {
    check_offloaded_in(r, devices, what, "emulated");
}

/// `domain`: the kind of memory the devices compute in ("emulated", "p2p").
fn check_offloaded_in(r: &Value, devices: usize, what: &str, domain: &str) {
    assert_eq!(r["provenance"], "measured_emulated", "{what}");
    let l = &r["ledger"];
    assert_eq!(l["host_memory_payload_bytes"], 0, "{what}: payload crossed host memory: {l}");
    assert_eq!(r["devices"].as_array().map(Vec::len), Some(devices), "{what}: devices");
    let counted = if devices == 1 { "1 emulated CSP device, ".to_string() } else { format!("{devices} emulated CSP devices, ") };
    assert!(r["engine"].as_str().unwrap().starts_with(&counted), "{what}: {}", r["engine"]);
    let total: u64 = r["files"].as_array().unwrap().iter().map(|f| f["members"].as_u64().unwrap()).sum();
    let on_devices: u64 = r["devices"].as_array().unwrap().iter().map(|d| d["members"].as_u64().unwrap()).sum();
    assert_eq!(on_devices, total, "{what}: every member was made by a device");
    for d in r["devices"].as_array().unwrap() {
        assert!(d["failure"].is_null(), "{what}: {d}");
        assert!(d["memory_traffic_bytes"].as_u64().unwrap() > 0, "{what}: {d}");
        assert!(d["commands"]["GzipCompressMember"].as_u64().unwrap() > 0, "{what}: {d}");
    }
    // Every payload movement is storage <-> device memory, or inside it.
    for e in l["entries"].as_array().unwrap() {
        if e["purpose"] == "metadata" {
            continue;
        }
        for side in ["source", "target"] {
            let loc = &e[side];
            assert!(loc["kind"] == "storage" || loc["domain"]["kind"] == domain, "{what}: payload in {loc}: {e}");
        }
    }
    assert!(r["fallbacks"].as_array().unwrap().is_empty(), "{what}: {}", r["fallbacks"]);
}

/// More devices than sources: one per source starts, which the report notes; no work left a
/// device, so it is no FALLBACK on stderr (what `-q` keeps for work the host CPU took) and no
/// failure with --no-fallback.
#[test]
fn more_devices_than_sources_is_a_note_not_a_fallback() {
    let dir = scratch();
    let sources = write_inputs(dir.path(), &[("one", mixed_data(300_000, 9))]);
    let out = dir.path().join("out");
    let o = compress(&sources, &out, &emulated(&["--devices", "3", "--no-fallback", "-q"])).ok();
    assert!(!o.stderr.contains("FALLBACK"), "{}", o.stderr);
    let r = compress(&sources, &out, &emulated(&["--devices", "3", "--no-fallback", "-f"])).ok().json();
    assert_eq!(r["devices"].as_array().map(Vec::len), Some(1), "{r}");
    assert_eq!(r["files"][0]["members_on_device"], r["files"][0]["members"], "every member made by the device");
    assert_eq!(r["ledger"]["host_memory_payload_bytes"], 0);
    assert!(r["fallbacks"].as_array().unwrap().iter().any(|f| f.as_str().unwrap().contains("3 asked for, 1 started")), "{}", r["fallbacks"]);
}

#[test]
fn emulated_devices_make_the_same_bytes_as_the_cpu_with_no_payload_in_host_memory() {
    let dir = scratch();
    let mib = 1 << 20;
    let inputs: Vec<(&str, Vec<u8>)> = vec![
        ("sample.fa", sample().to_vec()),
        ("mixed", mixed_data(3 * mib + 12_345, 5)),
        ("exact", mixed_data(2 * mib, 6)),
        ("empty", Vec::new()),
        ("one", b"x".to_vec()),
    ];
    let names: Vec<&str> = inputs.iter().map(|(n, _)| *n).collect();
    let sources = write_inputs(dir.path(), &inputs);
    for extra in [&["--block-size", "1M"][..], &["--block-size", "256K", "--level", "3"][..], &["--format", "bgzf"][..], &["--level", "6"][..]] {
        let what = format!("{extra:?}");
        let cpu = cpu_outputs(dir.path(), &sources, extra);
        let dev = dir.path().join(format!("dev{}", what.len()));
        let mut opts = emulated(&["--devices", "2"]);
        opts.extend_from_slice(extra);
        let r = compress(&sources, &dev, &opts).ok().json();
        check_offloaded(&r, 2, &what);
        assert_same_outputs(&cpu, &dev, &names, &what);
        let bgzf = extra.contains(&"bgzf");
        // The end marker (BGZF's end-of-file block, peerpath's end member) is the only thing the
        // host puts in device memory, once a device.
        let metadata = 2 * if bgzf { 28 } else { 34 };
        assert_eq!(r["ledger"]["host_memory_metadata_bytes"], metadata, "{what}");
        assert_eq!(r["ledger"]["host_memory_traffic_bytes"], metadata, "{what}");
        for f in r["files"].as_array().unwrap() {
            assert_eq!(f["members_on_device"], f["members"], "{what}: {f}");
            assert!(f["device"].is_string(), "{what}: {f}");
        }
        // A device with its memory on /dev/shm made what the job registers
        // ahead resident when it started (its CPU, reported apart): the
        // host's registration then only pins pages.
        let mut populated = 0;
        for d in r["devices"].as_array().unwrap() {
            assert!(d["start_cpu_s"].as_f64().is_some(), "{what}: {d}");
            if d["kind"].as_str().unwrap_or_default().contains("memory in /dev/shm") {
                let n = d["populated_bytes"].as_u64().unwrap();
                assert!(n >= 2 << 20 && n % (2 << 20) == 0, "{what}: whole 2 MiB pieces: {d}");
                populated += n;
            }
        }
        let fixed = &r["memory"]["fixed_buffers"];
        if fixed["refused"].is_null() {
            assert!(fixed["registered_bytes"].as_u64().unwrap() >= populated, "{what}: registered what was populated: {fixed}");
        }
    }
    if let Some(gzip) = tool("gzip") {
        let dev = dir.path().join(format!("dev{}", format!("{:?}", &["--block-size", "1M"]).len()));
        for (name, data) in &inputs {
            let gz = dev.join(format!("{name}.gz"));
            assert_bytes_eq(&sys(&gzip, &[std::ffi::OsStr::new("-dc"), gz.as_os_str()], None), data, &format!("gzip -d {name}.gz"));
        }
    }
    for (p, (_, data)) in sources.iter().zip(&inputs) {
        assert_file_eq(p, data, "a source after compressing");
    }
}

#[test]
fn device_memory_goes_in_the_directory_asked_and_the_report_says_how_it_is_paged() {
    let dir = scratch();
    let inputs: Vec<(&str, Vec<u8>)> = vec![("sample.fa", sample().to_vec())];
    let names: Vec<&str> = inputs.iter().map(|(n, _)| *n).collect();
    let sources = write_inputs(dir.path(), &inputs);
    let cpu = cpu_outputs(dir.path(), &sources, &[]);
    let mem_dir = dir.path().join("devmem");
    std::fs::create_dir_all(&mem_dir).unwrap();
    let from = format!("shm:{}", mem_dir.display());
    let dev = dir.path().join("dev-dir");
    let r = compress(&sources, &dev, &emulated(&["--device-memory-from", &from])).ok().json();
    check_offloaded_in(&r, 1, "shm:DIR", "emulated");
    assert_same_outputs(&cpu, &dev, &names, "shm:DIR");
    let d = &r["devices"][0];
    let kind = d["kind"].as_str().unwrap_or_default();
    assert!(kind.contains(&format!("memory in {}", mem_dir.display())), "{kind}");
    let (rss, huge) = (d["memory_resident_bytes"].as_u64().unwrap(), d["memory_huge_page_bytes"].as_u64().unwrap());
    assert!(rss > 0 && huge <= rss, "resident {rss}, huge {huge}");
    assert!(d["start_cpu_s"].as_f64().is_some(), "{d}");
    assert_eq!(d["populated_bytes"].as_u64(), Some(0), "a file on a disk is not populated");
    assert!(names_in(&mem_dir).is_empty(), "the device removes its memory file when it stops");
    let o = run(&mut pp(args!["compress", &sources[0], "--device-memory-from", "shm:/no/such/dir"]));
    assert!(o.code() == Some(2) && o.stderr.contains("/no/such/dir is not a directory"), "clap usage error: {}", o.stderr);
}

#[test]
fn device_memory_that_does_not_fit_its_file_system_is_found_when_the_device_starts() {
    let test = "device_memory_that_does_not_fit_its_file_system_is_found_when_the_device_starts";
    let Some(fs) = TmpfsMount::new(test, "8m") else { return };
    let dir = scratch();
    let data = mixed_data(3 << 20, 9);
    let sources = write_inputs(dir.path(), &[("data", data.clone())]);
    let from = format!("shm:{}", fs.dir.display());
    let opts = ["--engine", "emulated", "--device-memory", "32M", "--device-memory-from", &from];
    // Populating the memory the job needs meets the full tmpfs before the
    // job starts (a first touch mid-job would have been a SIGBUS): the
    // device says why, the host CPU does the work and says so.
    let out = dir.path().join("fell-back");
    let o = compress(&sources, &out, &[&opts[..], &["--json"]].concat()).ok();
    assert!(o.stderr.contains("no room for") && o.stderr.contains("device memory in its file system"), "{}", o.stderr);
    // The device's words are the device's, not an error of the job that went on and succeeded.
    assert!(o.stderr.contains("peerpath: emulated device (started by process") && !o.stderr.contains("peerpath: error:"), "{}", o.stderr);
    let r = o.json();
    let fallbacks = r["fallbacks"].to_string();
    assert!(fallbacks.contains("did not start") && fallbacks.contains("no room for"), "the report says why: {fallbacks}");
    assert_file_eq(&out.join("data.gz"), &std::fs::read(cpu_outputs(dir.path(), &sources, &[]).join("data.gz")).unwrap(), "CPU fallback");
    let strict = dir.path().join("strict");
    compress(&sources, &strict, &[&opts[..], &["--no-fallback"]].concat()).fails(15, &["did not start", "no room for", "--no-fallback"]);
    assert!(!strict.exists(), "the output directory made for the job is removed with it");
    assert!(names_in(&fs.dir).is_empty(), "the device removes its files: {:?}", names_in(&fs.dir));
    // Memory as large as the file system: no room is left for the queues, whose pages are
    // touched at once (the device died of SIGBUS, and its files were left, filling the tmpfs).
    let whole = dir.path().join("whole");
    let o = compress(&sources, &whole, &["--engine", "emulated", "--device-memory", "8M", "--device-memory-from", &from]).ok();
    assert!(o.stdout_str().contains("did not start") && o.stdout_str().contains("queues: No space left"), "{}", o.stdout_str());
    assert!(names_in(&fs.dir).is_empty(), "a device that did not start leaves no files: {:?}", names_in(&fs.dir));
}

#[test]
fn device_memory_from_a_p2p_provider_is_shared_with_a_forked_device() {
    let dir = scratch();
    // A fake provider: the sysfs files peerpath reads, `allocate` a plain
    // file (a real one is in the VM tests, vm/). 48 MiB available of 64.
    let sys = dir.path().join("sys");
    let p2pmem = sys.join("bus/pci/devices/0000:03:00.0/p2pmem");
    std::fs::create_dir_all(&p2pmem).unwrap();
    for (name, value) in [("size", "67108864"), ("available", "50331648"), ("published", "1")] {
        std::fs::write(p2pmem.join(name), format!("{value}\n")).unwrap();
    }
    std::fs::File::create(p2pmem.join("allocate")).unwrap().set_len(64 << 20).unwrap();
    let inputs: Vec<(&str, Vec<u8>)> =
        vec![("sample.fa", sample().to_vec()), ("mixed", mixed_data(3 * (1 << 20) + 777, 9)), ("empty", Vec::new())];
    let names: Vec<&str> = inputs.iter().map(|(n, _)| *n).collect();
    let sources = write_inputs(dir.path(), &inputs);
    let extra = ["--block-size", "256K"];
    let cpu = cpu_outputs(dir.path(), &sources, &extra);
    let dev = dir.path().join("dev-p2p");
    let sysfs = sys.display().to_string();
    let mut opts = emulated(&["--device-memory-from", "p2p:0000:03:00.0", "--sysfs", &sysfs]);
    opts.extend_from_slice(&extra);
    let r = compress(&sources, &dev, &opts).ok().json();
    check_offloaded_in(&r, 1, "p2p", "p2p");
    assert_same_outputs(&cpu, &dev, &names, "p2p");
    let kind = r["devices"][0]["kind"].as_str().unwrap_or_default().to_string();
    for needle in ["48 MiB of p2p memory of 0000:03:00.0 (a fixture's stand-in: host memory)", "capped at the 50331648 bytes available", "NOT on sysfs", "shared with the device by fork"] {
        assert!(kind.contains(needle), "device kind lacks {needle:?}: {kind}");
    }
    // The text report's ledger and payload lines say so too: they said "p2p memory" and
    // "0 B of payload through host memory" with no word of the fixture.
    let text = compress(&sources, &dev, &["--engine", "emulated", "--device-memory", MEMORY, "--device-memory-from", "p2p:0000:03:00.0", "--sysfs", &sysfs, "-f", "--block-size", "256K"]).ok().stdout_str();
    assert!(text.contains("-> p2p memory of 0000:03:00.0 (a fixture's stand-in: host memory), DMA"), "{text}");
    assert!(text.contains("of metadata (the p2p memory above is a fixture's stand-in, itself host memory"), "{text}");
    // The files are on this machine's disk, which the fake sysfs does not
    // list: the placement says it could not check the path (the VM tests
    // check a real one), one line per source.
    let placement = r["placement"].as_array().unwrap();
    assert_eq!(placement.len(), names.len(), "{placement:?}");
    assert!(placement.iter().all(|p| p.as_str().unwrap().contains("P2P path not checked")), "{placement:?}");
    // No such provider: said by the options that name it (it read ".../0000:09:00.0/p2pmem/available:
    // No such file or directory"), a fallback to the host CPU, and with --no-fallback an error
    // that keeps nothing.
    let no_function = format!("--device-memory-from p2p:0000:09:00.0: no such PCI function under --sysfs {sysfs}");
    let mut missing = emulated(&["--device-memory-from", "p2p:0000:09:00.0", "--sysfs", &sysfs]);
    missing.extend_from_slice(&extra);
    let out = dir.path().join("dev-missing");
    let r = compress(&sources, &out, &missing).ok().json();
    assert!(r["fallbacks"].as_array().unwrap().iter().any(|f| f.as_str().unwrap().contains(&no_function)), "{}", r["fallbacks"]);
    assert_same_outputs(&cpu, &out, &names, "no such provider: the host CPU");
    std::fs::remove_dir_all(&out).unwrap();
    missing.push("--no-fallback");
    compress(&sources, &out, &missing).fails(15, &[&no_function]);
    assert!(!out.exists() || names_in(&out).is_empty(), "targets left in {}", out.display());
    let o = run(&mut pp(args!["compress", &sources[0], "--device-memory-from", "p2p:"]));
    assert!(o.code() == Some(2) && o.stderr.contains("expected shm, shm:DIR or p2p:BDF"), "clap usage error: {}", o.stderr);
    run(&mut pp(args!["compress", &sources[0], "--device-memory-from", "p2p:0000:03:00.0", "-o", dir.path().join("x.gz")]))
        .fails(2, &["use it with --engine emulated"]);
    // So is every option of devices given where the host CPU compresses: an error, not ignored.
    for opt in [&["--devices", "2"][..], &["--device-memory", "64M"], &["--device-workers", "1"], &["--gpu-algorithm", "1"], &["--nvcomp", "/x.so"], &["--gpu-streams", "2"]] {
        let mut a = args!["compress", &sources[0], "-o", dir.path().join("y.gz"), "--engine", "cpu"];
        a.extend(opt.iter().map(os));
        run(&mut pp(a)).fails(2, &[opt[0], "--engine cpu compresses on the host CPU"]);
    }
    assert!(!dir.path().join("y.gz").exists());
}

#[test]
fn small_device_memory_applies_back_pressure_and_too_small_is_refused() {
    let dir = scratch();
    let inputs: Vec<(&str, Vec<u8>)> = vec![("a", mixed_data(9 << 20, 1)), ("b", mixed_data(7 << 20, 2))];
    let names = ["a", "b"];
    let sources = write_inputs(dir.path(), &inputs);
    let cpu = cpu_outputs(dir.path(), &sources, &[]);
    // Two streams on one device: staging for both, room for one block or two.
    let dev = dir.path().join("dev");
    let r = compress(&sources, &dev, &["--engine", "emulated", "--device-memory", "36M", "--queue-depth", "16", "--json"]).ok().json();
    check_offloaded(&r, 1, "36 MiB for two streams");
    assert_same_outputs(&cpu, &dev, &names, "36 MiB for two streams");
    // Too small for even that: refused before anything is written.
    let none = dir.path().join("none");
    compress(&sources, &none, &["--engine", "emulated", "--device-memory", "8M"]).fails(2, &["has 8 MiB of memory", "need at least"]);
    assert!(names_in(&none).is_empty(), "{:?}", names_in(&none));
}

/// A job with faults: exits 0, its outputs equal the CPU path's, the
/// report names the failure, and the output verifies.
fn survives(faults: &str, extra: &[&str], failure_needle: &str) -> Value {
    let dir = scratch();
    let inputs: Vec<(&str, Vec<u8>)> = vec![("big", mixed_data(12 << 20, 3)), ("fa", sample().to_vec())];
    let names = ["big", "fa"];
    let sources = write_inputs(dir.path(), &inputs);
    let cpu = cpu_outputs(dir.path(), &sources, &["--block-size", "256K"]);
    let dev = dir.path().join("dev");
    let mut opts = emulated(&["--block-size", "256K", "--inject-faults", faults]);
    opts.extend_from_slice(extra);
    let r = compress(&sources, &dev, &opts).ok().json();
    assert_same_outputs(&cpu, &dev, &names, &format!("{faults}: report {}", r["fallbacks"]));
    let d = &r["devices"][0];
    if failure_needle.is_empty() {
        assert!(d["failure"].is_null(), "{faults}: {d}");
        assert!(r["fallbacks"].as_array().unwrap().is_empty(), "{faults}: {}", r["fallbacks"]);
    } else {
        let failure = d["failure"].as_str().unwrap_or_else(|| panic!("{faults}: no failure reported: {d}"));
        assert!(failure.contains(failure_needle), "{faults}: {failure}");
        let fallbacks = r["fallbacks"].to_string();
        assert!(fallbacks.contains("the host CPU compressed"), "{faults}: {fallbacks}");
        let members: u64 = r["files"].as_array().unwrap().iter().map(|f| f["members"].as_u64().unwrap()).sum();
        let on_device: u64 = r["files"].as_array().unwrap().iter().map(|f| f["members_on_device"].as_u64().unwrap()).sum();
        assert!(on_device < members, "{faults}: the CPU redid some members ({on_device} of {members} on the device)");
    }
    let mut v = args!["verify", "-q"];
    v.extend(names.iter().map(|n| dev.join(format!("{n}.gz")).into_os_string()));
    run(&mut pp(v)).ok();
    r
}

#[test]
fn a_device_killed_mid_job_is_replaced_by_the_cpu_and_the_output_is_exact() {
    survives("seed=1,crash-after=12", &[], "lost");
}

/// `-q` prints no report, but a fallback is never silent: it is said on stderr.
#[test]
fn quiet_still_says_each_fallback() {
    let dir = scratch();
    let sources = write_inputs(dir.path(), &[("big", mixed_data(12 << 20, 3))]);
    let out = dir.path().join("out");
    let o = compress(&sources, &out, &["--engine", "emulated", "--device-memory", MEMORY, "--device-workers", "2", "--block-size", "256K", "--inject-faults", "seed=1,crash-after=12", "-q"]).ok();
    assert!(o.stdout.is_empty(), "{}", String::from_utf8_lossy(&o.stdout));
    assert!(o.stderr.contains("peerpath: FALLBACK: ") && o.stderr.contains("the host CPU compressed"), "{}", o.stderr);
}

#[test]
fn a_device_answering_errors_is_retired_and_the_cpu_finishes() {
    survives("seed=9,error=0.1", &[], "injected fault");
}

#[test]
fn a_device_posting_a_duplicate_completion_is_caught_and_the_cpu_finishes() {
    survives("seed=4,duplicate-after=6", &[], "not in flight");
}

#[test]
fn a_device_that_stops_answering_times_out_and_the_cpu_finishes() {
    survives("seed=2,hang-after=10", &["--device-timeout", "0.5"], "timed out");
}

#[test]
fn slow_completions_without_a_wake_descriptor_change_nothing() {
    survives("seed=3,latency=0-2ms", &[], "");
}

#[test]
fn with_no_fallback_a_failed_device_fails_the_job_and_keeps_nothing() {
    let dir = scratch();
    let sources = write_inputs(dir.path(), &[("big", mixed_data(12 << 20, 3)), ("small", mixed_data(100_000, 4))]);
    let out = dir.path().join("out");
    compress(&sources, &out, &["--engine", "emulated", "--device-memory", MEMORY, "--block-size", "256K", "--inject-faults", "seed=1,crash-after=12", "--no-fallback"])
        .fails(15, &["lost", "--no-fallback"]);
    assert!(names_in(&out).is_empty(), "left behind: {:?}", names_in(&out));
}

#[test]
fn corrupted_device_output_is_caught_by_verify_before_anything_is_kept() {
    let dir = scratch();
    let sources = write_inputs(dir.path(), &[("big", mixed_data(6 << 20, 3))]);
    let out = dir.path().join("out");
    let faults = ["--engine", "emulated", "--device-memory", MEMORY, "--block-size", "256K", "--inject-faults", "seed=5,corrupt=0.5"];
    let mut with_verify = faults.to_vec();
    with_verify.push("--verify");
    compress(&sources, &out, &with_verify).fails(16, &["failed its check and was not kept", "member"]);
    assert!(names_in(&out).is_empty(), "left behind: {:?}", names_in(&out));
    // Without --verify the host, which never reads payload, cannot see a
    // byte flipped after a successful completion; `peerpath verify` can.
    compress(&sources, &out, &faults).ok();
    let r = run(&mut pp(args!["verify", out.join("big.gz")]));
    assert!(matches!(r.code(), Some(6) | Some(7)), "verify of a corrupted output: {:?} {}", r.code(), r.stderr);
}

#[test]
fn sources_that_cannot_reach_device_memory_run_on_the_cpu_and_say_why() {
    let dir = scratch();
    let data = mixed_data(300_000, 8);
    let target = dir.path().join("from-stdin.gz");
    let mut cmd = pp(args!["compress", "-", "-o", &target, "--engine", "emulated", "--device-memory", MEMORY, "--json"]);
    let r = run_full(&mut cmd, Some(data.clone()), std::time::Duration::from_secs(120)).ok().json();
    let fallbacks = r["fallbacks"].to_string();
    assert!(fallbacks.contains("compressed on the host CPU, not on a device") && fallbacks.contains("pipes"), "{fallbacks}");
    assert_eq!(r["provenance"], "measured_host");
    assert_eq!(r["devices"].as_array().map(Vec::len), Some(0));
    let mut d = pp(args!["decompress", &target, "-o", "-"]);
    assert_bytes_eq(&run(&mut d).ok().stdout, &data, "stdin through the CPU path");
    let refused = dir.path().join("refused.gz");
    let mut cmd = pp(args!["compress", "-", "-o", &refused, "--engine", "emulated", "--no-fallback"]);
    run_full(&mut cmd, Some(data), std::time::Duration::from_secs(120)).fails(15, &["cannot offload", "pipes"]);
    assert!(!refused.exists());
}

#[test]
fn a_device_killed_after_writing_part_of_the_output_is_resumed_mid_stream() {
    // Enough blocks that the kill (after 150 submissions) comes after the
    // device's first extents went to the target and well before the end:
    // the CPU goes on from inside a block, and the bytes still match.
    let dir = scratch();
    let mut data = Vec::with_capacity(48 << 20);
    while data.len() < 48 << 20 {
        data.extend_from_slice(sample());
    }
    let sources = write_inputs(dir.path(), &[("big", data)]);
    let cpu = cpu_outputs(dir.path(), &sources, &["--block-size", "256K"]);
    let dev = dir.path().join("dev");
    let r = compress(&sources, &dev, &emulated(&["--block-size", "256K", "--inject-faults", "seed=1,crash-after=150"])).ok().json();
    assert_same_outputs(&cpu, &dev, &["big"], "killed mid-stream");
    let f = &r["files"][0];
    let (members, on_device) = (f["members"].as_u64().unwrap(), f["members_on_device"].as_u64().unwrap());
    assert!(on_device > 0 && on_device < members, "{on_device} of {members} members on the device");
    let fallbacks = r["fallbacks"].to_string();
    assert!(fallbacks.contains("output bytes from the device were kept"), "{fallbacks}");
}

/// A job started with SIGHUP and SIGINT ignored (`nohup`, a script's
/// background job) keeps them ignored in its emulated devices too: sent to
/// the device process mid-job, they neither stop it nor make the job fall
/// back (`--no-fallback` would fail it, exit 15); the output is the CPU's.
#[test]
fn a_device_of_a_job_with_hup_and_int_ignored_ignores_them_too() {
    let dir = scratch();
    // About 1.5 s of work for one device worker at level 9 here: the signals come mid-job.
    let mut data = Vec::with_capacity(64 << 20);
    while data.len() < 64 << 20 {
        data.extend_from_slice(sample());
    }
    let sources = write_inputs(dir.path(), &[("big", data)]);
    let cpu = cpu_outputs(dir.path(), &sources, &["--block-size", "256K", "-l", "9"]);
    let dev = dir.path().join("dev");
    let script = format!(
        "trap '' HUP INT; exec \"$0\" compress {} -o {}/ -l 9 --engine emulated --device-memory {MEMORY} --device-workers 1 --block-size 256K --no-fallback --json",
        sources[0].display(),
        dev.display()
    );
    let (stdout, stderr) = (dir.path().join("stdout"), dir.path().join("stderr"));
    let mut job = std::process::Command::new("sh")
        .args(["-c", &script])
        .arg(bin())
        .stdin(std::process::Stdio::null())
        .stdout(std::fs::File::create(&stdout).unwrap())
        .stderr(std::fs::File::create(&stderr).unwrap())
        .spawn()
        .unwrap();
    let device = device_of(&mut job, &stderr);
    let bit = signal_bit;
    assert_eq!(signal_mask(device, "SigIgn:") & (bit(libc::SIGHUP) | bit(libc::SIGINT)), bit(libc::SIGHUP) | bit(libc::SIGINT), "the device inherits them ignored");
    // Once the job drives it: its workers have computed 20 ms (a block or so at level 9), however
    // long the job took to get there (a fixed 200 ms could come before the first command).
    let start = std::time::Instant::now();
    loop {
        assert!(job.try_wait().unwrap().is_none(), "the job ended before the signals: make it longer");
        if worker_ticks(device) >= 2 {
            break;
        }
        assert!(start.elapsed() < HANG_DEADLINE, "the device computed nothing in {HANG_DEADLINE:?}");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    for sig in [libc::SIGHUP, libc::SIGINT] {
        // SAFETY: kill(2) takes plain integers: our job's device's pid and a signal number.
        assert_eq!(unsafe { libc::kill(device as i32, sig) }, 0, "the device runs when signalled");
    }
    let done = wait_deadline(&mut job, HANG_DEADLINE, "a job on a device with HUP and INT ignored");
    let err = std::fs::read_to_string(&stderr).unwrap();
    assert!(done.success(), "{done:?}: {err}");
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&stdout).unwrap()).unwrap();
    assert!(r["fallbacks"].as_array().unwrap().is_empty(), "{}", r["fallbacks"]);
    check_offloaded(&r, 1, "HUP and INT ignored");
    assert_same_outputs(&cpu, &dev, &["big"], "HUP and INT ignored");
}

fn status_field(pid: u32, name: &str) -> Option<String> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status.lines().find_map(|l| l.strip_prefix(name)).map(|v| v.trim().to_string())
}

/// CPU time, in clock ticks (10 ms), of `pid`'s threads but its main one: a device's queue
/// dispatchers and workers, which run on the commands a job submits.
fn worker_ticks(pid: u32) -> u64 {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).into_iter().flatten().flatten();
    tasks
        .filter(|t| t.file_name().to_str() != Some(pid.to_string().as_str()))
        .map(|t| {
            let stat = std::fs::read_to_string(t.path().join("stat")).unwrap_or_default();
            // utime and stime: fields 14 and 15, the 12th and 13th after the name's ')'.
            stat.rsplit_once(')').map_or(0, |(_, rest)| rest.split_whitespace().skip(11).take(2).map(|v| v.parse::<u64>().unwrap_or(0)).sum())
        })
        .sum()
}

fn signal_mask(pid: u32, name: &str) -> u64 {
    status_field(pid, name).map_or(0, |v| u64::from_str_radix(&v, 16).unwrap())
}

fn signal_bit(sig: i32) -> u64 {
    1u64 << (sig - 1)
}

/// The device of a running `job`: its child running `csp serve` (not the
/// fork before its exec), once its signalfd takes SIGTERM and its workers run.
fn device_of(job: &mut std::process::Child, stderr: &Path) -> u32 {
    let is_device = |pid: u32| {
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let serving = cmdline.split(|&b| b == 0).any(|a| a == b"csp") && cmdline.split(|&b| b == 0).any(|a| a == b"serve");
        serving && signal_mask(pid, "SigBlk:") & signal_bit(libc::SIGTERM) != 0 && status_field(pid, "Threads:").is_some_and(|t| t != "1")
    };
    let start = std::time::Instant::now();
    loop {
        assert!(job.try_wait().unwrap().is_none(), "the job ended before its device started: {}", std::fs::read_to_string(stderr).unwrap());
        assert!(start.elapsed() < HANG_DEADLINE, "no device process");
        let children: Vec<u32> = std::fs::read_dir(format!("/proc/{}/task", job.id()))
            .into_iter()
            .flatten()
            .flatten()
            .flat_map(|t| std::fs::read_to_string(t.path().join("children")).unwrap_or_default().split_whitespace().map(|p| p.parse().unwrap()).collect::<Vec<u32>>())
            .collect();
        if let Some(&d) = children.iter().find(|&&d| is_device(d)) {
            return d;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// A hung device killed from outside (as a user ends a stuck device): the
/// job's report names the signal that killed it, not a guess ("died or
/// stopped"), and the host CPU's count is printed. Its connection hangs up
/// a moment before its process can be waited for: the host waits that
/// moment out. The device hangs (SIGSTOP, `hang-after=1`) at its first
/// command, so the kill always comes mid-job.
#[test]
fn a_hung_device_killed_from_outside_is_reported_killed_by_its_signal() {
    let dir = scratch();
    let mut data = Vec::with_capacity(16 << 20);
    while data.len() < 16 << 20 {
        data.extend_from_slice(sample());
    }
    let sources = write_inputs(dir.path(), &[("big", data)]);
    let cpu = run(&mut pp(args!["scan", &sources[0], "--motif", "MKV", "-c"])).ok().stdout_str();
    // A few times: the host may find the hang-up late, once the process can be waited for anyway.
    for round in 0..5 {
        let (stdout, stderr) = (dir.path().join("stdout"), dir.path().join("stderr"));
        let mut job = std::process::Command::new(bin())
            .args(["scan", "--engine", "emulated", "--motif", "MKV", "-c", "--device-timeout", "60", "--inject-faults", "seed=1,hang-after=1"])
            .arg(&sources[0])
            .stdin(std::process::Stdio::null())
            .stdout(std::fs::File::create(&stdout).unwrap())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .unwrap();
        let device = device_of(&mut job, &stderr);
        let start = std::time::Instant::now();
        while !status_field(device, "State:").is_some_and(|s| s.starts_with('T')) {
            assert!(start.elapsed() < HANG_DEADLINE, "round {round}: the device did not hang");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        // SAFETY: kill(2) takes plain integers: our job's device's pid and a signal number.
        assert_eq!(unsafe { libc::kill(device as i32, libc::SIGKILL) }, 0, "round {round}: the device is there to kill");
        let done = wait_deadline(&mut job, HANG_DEADLINE, "a scan whose device was killed");
        let err = std::fs::read_to_string(&stderr).unwrap();
        assert!(done.success(), "round {round}: {done:?}: {err}");
        assert_eq!(std::fs::read_to_string(&stdout).unwrap(), cpu, "round {round}: the host CPU's count");
        assert!(err.contains("FALLBACK") && err.contains("SIGKILL"), "round {round}: the report names the signal: {err}");
    }
}

/// `bench-offload`: a device row whose devices did not start is marked
/// FALLBACK with the reason (its figures are the host CPU's), and values
/// that would measure nothing are refused.
#[test]
fn bench_offload_marks_a_device_row_the_cpu_ran_and_refuses_empty_measurements() {
    let dir = scratch();
    let src = dir.path().join("s.fa");
    std::fs::write(&src, &sample()[..1 << 20]).unwrap();
    let o = run(&mut pp(args!["bench-offload", &src, "--runs", "1", "--no-fio", "--device-memory-dir", dir.path().join("missing"), "--json"])).ok().json();
    let row = &o["rows"][1];
    assert!(row["engine"].as_str().unwrap().ends_with("FALLBACK"), "{row}");
    assert!(row["work_on_cpu_instead"][0].as_str().unwrap().contains("did not start"), "{row}");
    assert_eq!(o["rows"][0]["work_on_cpu_instead"], serde_json::json!([]), "the CPU row is the CPU's");
    // Rows without a device process say 0 device seconds, not -0 (f64's sum of none).
    for r in o["rows"].as_array().unwrap() {
        assert!(r["emulated_device_cpu_s"].as_f64().is_some_and(|v| v.is_sign_positive()), "{r}");
    }
    // Asked, a fallback is the error it is with `compress --no-fallback`.
    run(&mut pp(args!["bench-offload", &src, "--runs", "1", "--no-fio", "--device-memory-dir", dir.path().join("missing"), "--no-fallback"])).fails(15, &["did not start"]);
    for bad in [&["--runs", "0"][..], &["--max-devices", "0"]] {
        let o = run(&mut pp(args!["bench-offload", &src, "--no-fio"].into_iter().chain(bad.iter().map(Into::into))));
        assert!(o.code() == Some(2) && o.stderr.contains(bad[0]) && o.stderr.contains("not in 1.."), "{bad:?}: {}", o.stderr);
    }
    let empty = dir.path().join("empty");
    std::fs::write(&empty, b"").unwrap();
    run(&mut pp(args!["bench-offload", &empty, "--no-fio"])).fails(2, &["no bytes"]);
    run(&mut pp(args!["bench-offload", dir.path().join("nowhere"), "--no-fio"])).fails(3, &["nowhere"]);
    assert_dir_holds(dir.path(), &["empty", "s.fa"]);
}

/// The CPU cost of a device job's transfers per GB/s of input is printed only where there is
/// input enough for a rate (an empty file gave 2,136,000,000 cores per GB/s).
#[test]
fn no_rate_per_byte_is_printed_for_a_few_bytes() {
    let dir = scratch();
    let srcs = write_inputs(dir.path(), &[("empty", Vec::new()), ("one", vec![b'x'])]);
    let out = dir.path().join("out");
    let o = compress(&srcs, &out, &["--engine", "emulated", "--device-memory", MEMORY, "--device-workers", "2"]);
    assert_eq!(o.code(), Some(0), "{}", o.stderr);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("while transfers and commands were in flight (too little input for a rate)"), "{text}");
    assert!(!text.contains("cores per GB/s"), "{text}");
}

/// At the least device memory the binary accepts (it names it when refusing less), memory
/// holds one block in flight at a time: each block's read must start as soon as the last
/// one's completions free its memory, not at the watcher's next tick (200 ms a block, 13 s
/// for these 65 blocks, where the job takes ~0.2 s); the report says what memory allowed.
#[test]
fn the_least_device_memory_runs_a_block_at_a_time_without_waiting_for_a_tick() {
    let dir = scratch();
    let sources = write_inputs(dir.path(), &[("z", vec![0u8; (64 << 20) + 1])]);
    let cpu = cpu_outputs(dir.path(), &sources, &[]);
    let refused = compress(&sources, &dir.path().join("none"), &["--engine", "emulated", "--device-memory", "4M"]).fails(2, &["need at least"]);
    let least: u64 = refused.stderr.split("need at least ").nth(1).and_then(|t| t.split(" MiB").next()).and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("no least memory in: {}", refused.stderr));
    let memory = format!("{least}M");
    let dev = dir.path().join("dev");
    let started = std::time::Instant::now();
    let r = compress(&sources, &dev, &["--engine", "emulated", "--device-memory", &memory, "--device-workers", "2", "--json"]).ok().json();
    let took = started.elapsed();
    check_offloaded(&r, 1, &memory);
    assert_same_outputs(&cpu, &dev, &["z"], &memory);
    assert!(took < std::time::Duration::from_secs(5), "{memory}: took {took:?} for 65 blocks (a tick's wait a block is 13 s)");
    let note = r["devices"][0]["blocks_in_flight"].as_str().unwrap_or_else(|| panic!("{memory}: no word on blocks in flight: {}", r["devices"][0]));
    assert!(note.contains("holds 1 block of 1024 KiB in flight at a time"), "{memory}: {note}");
    // With room for the usual inputs in flight, nothing to say.
    let roomy = dir.path().join("roomy");
    let r = compress(&sources, &roomy, &emulated(&[])).ok().json();
    assert_same_outputs(&cpu, &roomy, &["z"], MEMORY);
    assert!(r["devices"][0]["blocks_in_flight"].is_null(), "{MEMORY}: {}", r["devices"][0]);
}
