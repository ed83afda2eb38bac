//! `peerpath ec`: encode, verify, repair and decode, from whatever shards survive.

mod common;

use common::*;
use std::path::{Path, PathBuf};

/// A manifest's text without its `source_crc32` line: as made before the field, so that the
/// checks behind it (unit checksums, padding, copies' votes) are reached by a damaged field.
fn without_source_crc(text: &str) -> String {
    assert!(text.contains("\"source_crc32\": "), "{text}");
    text.lines().filter(|l| !l.contains("\"source_crc32\": ")).collect::<Vec<_>>().join("\n")
}

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
    // The last case codes 1 MiB units in slices (a unit is not a whole number of them).
    for (size, k, m, unit) in [(0usize, 2, 1, "4K"), (1, 3, 2, "4K"), (3 * 4096, 3, 1, "4K"), (1_000_003, 4, 2, "64K"), (700_000, 10, 4, "16K"), (2_500_001, 2, 1, "1M")] {
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
        assert!(o.stderr.contains("stripes 0-3 (4 stripes) lost more than 2 of their 6 shards") && o.stderr.contains("cannot be rebuilt"), "{}", o.stderr);
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

/// A manifest one of whose unit checksums was changed: the unit looks bad, and rebuilt from
/// the others it does not match either, so repair refuses the set (nothing written); verify,
/// which tries that rebuild dry, says so too (it called the set repairable). With the unit
/// really damaged as well as another, both check and rebuild: repairable, and repaired.
#[test]
fn a_set_repair_would_refuse_is_not_called_repairable() {
    let dir = scratch();
    let d = dir.path();
    let src = d.join("s");
    std::fs::write(&src, random_bytes(600_000, 23)).unwrap();
    let set = d.join("e");
    run(&mut pp(args!["ec", "encode", &src, "-k", "4", "-m", "2", "-o", &set, "--unit", "64K"])).ok();
    let manifest = std::fs::read_to_string(set.join("manifest.json")).unwrap();
    let mut m: serde_json::Value = serde_json::from_str(&manifest).unwrap();
    let crc = &mut m["shards"][1]["crc32"][1];
    *crc = serde_json::json!(crc.as_u64().unwrap() ^ 1);
    // The data unit's checksum and the source's CRC-32 disagree: the manifest is found damaged as it is read.
    std::fs::write(set.join("manifest.json"), serde_json::to_string_pretty(&m).unwrap()).unwrap();
    let r = run(&mut pp(args!["ec", "verify", &set, "--json"])).fails(6, &["inconsistent manifest: source_crc32"]).json();
    assert_eq!((r["code"].as_str(), r["repairable"].as_bool()), (Some("unknown"), Some(false)), "{r}");
    // Without the source's CRC-32 (a manifest made before it), the unit's rebuild tells.
    m.as_object_mut().unwrap().remove("source_crc32").unwrap();
    std::fs::write(set.join("manifest.json"), serde_json::to_string_pretty(&m).unwrap()).unwrap();
    let why = "shard-001's unit of stripe 1, rebuilt from units that check out, does not match the manifest's CRC-32 either";
    run(&mut pp(args!["ec", "verify", &set])).fails(6, &[why, "NOT repairable by ec repair"]);
    let r = run(&mut pp(args!["ec", "verify", &set, "--json"])).fails(6, &[why]).json();
    assert_eq!((r["intact"].as_bool(), r["repairable"].as_bool()), (Some(false), Some(false)), "{r}");
    assert!(r["manifest_damage"].as_str().is_some_and(|m| m.contains(why)), "{r}");
    let before = snapshot(&set);
    run(&mut pp(args!["ec", "repair", &set])).fails(6, &["does not match the manifest's CRC-32", "nothing was written"]);
    assert!(snapshot(&set) == before, "repair wrote into the set");
    // The manifest as it was, two shards damaged: repairable, and repair makes it whole.
    std::fs::write(set.join("manifest.json"), &manifest).unwrap();
    std::fs::remove_file(set.join("shard-001")).unwrap();
    let mut b = std::fs::read(set.join("shard-004")).unwrap();
    b[70_000] ^= 0x40;
    std::fs::write(set.join("shard-004"), b).unwrap();
    run(&mut pp(args!["ec", "verify", &set])).fails(6, &["repairable (`peerpath ec repair "]);
    run(&mut pp(args!["ec", "repair", &set, "-q"])).ok();
    run(&mut pp(args!["ec", "verify", &set, "-q"])).ok();
}

/// A manifest whose source size was made smaller is found by the source's CRC-32, and in one
/// made before that field by the last stripe's padding, which must be the encoder's zeros:
/// verify, decode and `decompress --ec` refuse it (they passed, and decoded a file cut short).
/// One whose size grew into the padding is found by the source's CRC-32 on both engines (it
/// decoded zeros past the source's end, exit 0; the emulated CSP's decode a file cut short).
#[test]
fn a_manifest_that_changed_the_source_s_size_is_found_damaged() {
    let dir = scratch();
    let d = dir.path();
    let src = d.join("s");
    std::fs::write(&src, random_bytes(1_000_001, 19)).unwrap();
    let set = d.join("e");
    run(&mut pp(args!["ec", "encode", &src, "-k", "4", "-m", "2", "-o", &set, "--unit", "64K"])).ok();
    let manifest = std::fs::read_to_string(set.join("manifest.json")).unwrap();
    assert!(manifest.contains("\"source_bytes\": 1000001"), "{manifest}");
    for other in ["1000002", "1048576", "1000000", "786433"] {
        std::fs::write(set.join("manifest.json"), manifest.replace("\"source_bytes\": 1000001", &format!("\"source_bytes\": {other}"))).unwrap();
        for engine in ["cpu", "emulated"] {
            run(&mut pp(args!["ec", "decode", &set, "-o", d.join("back"), "--engine", engine])).fails(6, &["inconsistent manifest: source_crc32", &format!("of {other} source bytes")]);
            assert!(!d.join("back").exists());
        }
        run(&mut pp(args!["ec", "verify", &set])).fails(6, &["inconsistent manifest: source_crc32"]);
    }
    let manifest = without_source_crc(&manifest);
    for shorter in ["1000000", "999999", "786433"] {
        std::fs::write(set.join("manifest.json"), manifest.replace("\"source_bytes\": 1000001", &format!("\"source_bytes\": {shorter}"))).unwrap();
        run(&mut pp(args!["ec", "verify", &set])).fails(6, &["the last stripe holds data at byte", "the manifest is damaged"]);
        run(&mut pp(args!["ec", "decode", &set, "-o", d.join("back")])).fails(6, &["the manifest is damaged", "nothing was written"]);
        assert!(!d.join("back").exists());
        // Monitoring sees it (a report before the exit 6), and repair refuses it, writing nothing.
        let r = run(&mut pp(args!["ec", "verify", &set, "--json"])).fails(6, &["the manifest is damaged"]).json();
        assert_eq!((r["intact"].as_bool(), r["repairable"].as_bool()), (Some(false), Some(false)), "{r}");
        assert!(r["manifest_damage"].as_str().is_some_and(|d| d.contains("the last stripe holds data")), "{r}");
        let before = snapshot(&set);
        run(&mut pp(args!["ec", "repair", &set])).fails(6, &["the manifest is damaged", "nothing was repaired"]);
        assert!(snapshot(&set) == before, "repair wrote into a set whose manifest is damaged");
    }
    // A shard of the last stripe lost too: its unit is rebuilt, and the padding still checked.
    std::fs::remove_file(set.join("shard-003")).unwrap();
    run(&mut pp(args!["ec", "decode", &set, "-o", d.join("back")])).fails(6, &["the manifest is damaged"]);
    std::fs::write(set.join("manifest.json"), &manifest).unwrap();
    run(&mut pp(args!["ec", "decode", &set, "-o", d.join("back")])).ok();
    assert_file_eq(&d.join("back"), &std::fs::read(&src).unwrap(), "the set as it was decodes exactly");
}

/// Damage in one stripe only: `ec decode` reads each stripe's data units
/// and goes to parity only where one is bad, so a stripe further on that
/// lost more than M units is found mid-way. The error names that stripe
/// alone and the target is not kept; with M bad units there the source
/// comes back exactly, and `repair` rewrites only the damaged shards.
#[test]
fn a_stripe_lost_mid_way_is_named_and_nothing_is_kept() {
    let dir = scratch();
    let d = dir.path();
    let (k, m, unit) = (3usize, 2usize, 4096usize);
    // The set of `compress --ec` (random bytes: members about as long as the source, so six
    // stripes), which both `ec decode` and `decompress --ec` read.
    let src = d.join("s");
    std::fs::write(&src, random_bytes(5 * k * unit + 77, 21)).unwrap();
    let gz = d.join("s.gz");
    run(&mut pp(args!["compress", &src, "-o", &gz, "--block-size", "16K"])).ok();
    let data = std::fs::read(&gz).unwrap();
    let out = d.join("e");
    run(&mut pp(args!["compress", &src, "--ec", format!("{k}+{m}"), "--ec-unit", "4K", "-o", &out, "--block-size", "16K"])).ok();
    let original = shards(&out);
    let back = d.join("back");
    run(&mut pp(args!["ec", "decode", &out, "-o", &back])).ok();
    assert_file_eq(&back, &data, "the set holds compress's .gz");
    assert!(data.len() > 4 * k * unit, "stripe 3 exists");
    // Stripe 3: a data unit and a parity unit flipped, then a second data unit too.
    let flip = |i: usize| {
        let path = out.join(&original[i].0);
        let mut b = std::fs::read(&path).unwrap();
        b[3 * unit + 100] ^= 0xff;
        std::fs::write(&path, b).unwrap();
    };
    flip(1);
    flip(k);
    run(&mut pp(args!["ec", "decode", &out, "-o", &back, "-f"])).ok();
    assert_file_eq(&back, &data, "two units of stripe 3 rebuilt from the rest");
    flip(0);
    for cmd in [args!["ec", "decode", &out, "-o", d.join("back2")], args!["decompress", "--ec", &out, "-o", d.join("back2")]] {
        let o = run(&mut pp(cmd));
        assert_eq!(o.code(), Some(6), "{}", o.describe());
        assert!(o.stderr.contains("stripe 3 lost more than 2 of its 5 shards") && o.stderr.contains("cannot be rebuilt"), "{}", o.stderr);
        assert!(!d.join("back2").exists(), "nothing kept");
    }
    // Two of the three bad units put back: repair rewrites shard 1 alone, exactly.
    for i in [0, k] {
        std::fs::write(out.join(&original[i].0), &original[i].1).unwrap();
    }
    let o = run(&mut pp(args!["ec", "repair", &out, "--json"])).ok();
    assert_eq!(o.json()["shards_written"], serde_json::json!([original[1].0]), "{}", o.describe());
    assert_eq!(shards(&out), original, "repaired byte for byte");
    // A whole set: --json still prints a report (it printed words), which rebuilt nothing.
    let v = run(&mut pp(args!["ec", "repair", &out, "--json"])).ok().json();
    assert_eq!(v["shards_written"], serde_json::json!([]));
    assert!(v["engine"].as_str().unwrap().starts_with("nothing to repair"), "{v}");
    assert!(v["coding_per"].as_str().unwrap().ends_with("ISA-L's count"), "{v}");
}

/// `ec encode -T N`: workers take whole stripes, each written at its own
/// offsets; the set (shards and manifest) is byte for byte the one thread's,
/// for stripe counts below, at and above the thread count, and the report
/// says how many threads coded. `ec repair -T N` rebuilds it exactly.
#[test]
fn encoding_on_several_threads_makes_the_one_threads_set() {
    let dir = scratch();
    let d = dir.path();
    for (size, threads) in [(0usize, 3), (5 * 4096 * 2 + 1, 3), (40 * 4096 * 2 + 7, 3), (3 * 4096 * 2, 8)] {
        let src = d.join(format!("s{size}"));
        std::fs::write(&src, random_bytes(size, size as u64 + 5)).unwrap();
        let one = d.join(format!("one{size}"));
        let many = d.join(format!("many{size}"));
        run(&mut pp(args!["ec", "encode", &src, "-k", "2", "-m", "2", "--unit", "4K", "-o", &one, "-T", "1"])).ok();
        let r = run(&mut pp(args!["ec", "encode", &src, "-k", "2", "-m", "2", "--unit", "4K", "-o", &many, "-T", threads.to_string(), "--json"])).ok().json();
        let stripes = r["stripes"].as_u64().unwrap();
        assert_eq!(r["threads"].as_u64().unwrap(), stripes.min(threads), "{r}");
        // "thread(s)" was printed for any number.
        let said = match stripes.min(threads) {
            1 => "1 thread".to_string(),
            n => format!("{n} threads"),
        };
        assert!(r["engine"].as_str().unwrap().contains(&format!("(this process, {said})")), "{r}");
        assert_eq!(shards(&many), shards(&one), "{size} bytes on {threads} threads");
        assert_eq!(std::fs::read(many.join("manifest.json")).unwrap(), std::fs::read(one.join("manifest.json")).unwrap(), "manifest");
        // Repaired on as many threads, verified on two: the original set again.
        let original = shards(&one);
        std::fs::remove_file(many.join("shard-000")).unwrap();
        let mut b = original[3].1.clone();
        if let Some(x) = b.last_mut() {
            *x ^= 1;
        }
        std::fs::write(many.join(&original[3].0), b).unwrap();
        run(&mut pp(args!["ec", "verify", &many, "-T", "2"])).fails(6, &["repairable"]);
        let r = run(&mut pp(args!["ec", "repair", &many, "-T", threads.to_string(), "--json"])).ok().json();
        assert_eq!(r["threads"].as_u64().unwrap(), stripes.min(threads), "{r}");
        assert_eq!(shards(&many), original, "{size} bytes repaired on {threads} threads");
        run(&mut pp(args!["ec", "verify", &many, "-T", "2"])).ok();
    }
}

/// A private source gives a private set: shards, manifest, repaired shards
/// and the decoded file take the source's permission bits (gzip's rule for
/// outputs); the set is made beside its name and leaves nothing else there.
#[test]
fn a_private_source_stays_private_through_encode_repair_and_decode() {
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch();
    let d = dir.path();
    let src = d.join("s");
    std::fs::write(&src, random_bytes(300_000, 4)).unwrap();
    std::fs::set_permissions(&src, std::fs::Permissions::from_mode(0o600)).unwrap();
    let out = d.join("e");
    run(&mut pp(args!["ec", "encode", &src, "-k", "3", "-m", "2", "-o", &out, "--unit", "32K"])).ok();
    assert_dir_holds(d, &["e", "s"]);
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    for e in std::fs::read_dir(&out).unwrap() {
        assert_eq!(mode(&e.unwrap().path()), 0o600);
    }
    std::fs::remove_file(out.join("shard-001")).unwrap();
    run(&mut pp(args!["ec", "repair", &out])).ok();
    assert_eq!(mode(&out.join("shard-001")), 0o600, "a rebuilt shard is as private as the set");
    run(&mut pp(args!["ec", "decode", &out, "-o", d.join("back")])).ok();
    assert_eq!(mode(&d.join("back")), 0o600);
    assert_file_eq(&d.join("back"), &std::fs::read(&src).unwrap(), "decoded");
    run(&mut pp(args!["ec", "encode", &src, "-k", "3", "-m", "2", "-o", &out])).fails(4, &["target directory", "exists", "never replaces"]);
    let mut c = pp(args!["ec", "decode", &out, "-o", "-"]);
    c.current_dir(d);
    run(&mut c).fails(2, &["not standard output"]);
    assert!(!d.join("-").exists(), "no file named -");
}

/// `--engine emulated`: the stripes go from the source into an emulated
/// CSP's memory and from there to the shards; the device computes parity
/// and checksums. The set is byte for byte the CPU's (the oracle), for a
/// source whose last stripe is short, and repairs and decodes as usual.
#[test]
fn an_emulated_csp_makes_the_same_set_as_the_cpu() {
    let dir = scratch();
    let d = dir.path();
    let names = |p: &Path| {
        let mut n = names_in(p);
        n.sort();
        n
    };
    // Stripe counts around the device's three slots: one (empty, short), four (the first slot
    // again, a short last stripe), seven whole ones.
    let mut data = Vec::new();
    let mut emu = PathBuf::new();
    for (case, size) in [0usize, 5000, 3 * 4 * 65536 + 12345, 7 * 4 * 65536].into_iter().enumerate() {
        let src = d.join(format!("s{case}"));
        data = mixed_data(size, 11 + case as u64);
        std::fs::write(&src, &data).unwrap();
        let cpu = d.join(format!("cpu{case}"));
        emu = d.join(format!("emu{case}"));
        run(&mut pp(args!["ec", "encode", &src, "-k", "4", "-m", "2", "--unit", "64K", "-o", &cpu])).ok();
        let o = run(&mut pp(args!["ec", "encode", &src, "-k", "4", "-m", "2", "--unit", "64K", "-o", &emu, "--engine", "emulated", "--no-fallback", "--json"])).ok();
        let v = o.json();
        assert_eq!(v["provenance"], "measured on emulated devices", "{v}");
        assert_metadata_only(v["engine"].as_str().unwrap());
        assert!(v["fallback"].is_null());
        assert_eq!(names(&cpu), names(&emu));
        for n in names(&cpu) {
            assert_eq!(std::fs::read(cpu.join(&n)).unwrap(), std::fs::read(emu.join(&n)).unwrap(), "{size} bytes: {n} differs from the CPU's");
        }
    }
    let src = d.join("s0");
    std::fs::remove_file(emu.join("shard-002")).unwrap();
    run(&mut pp(args!["ec", "repair", &emu])).ok();
    run(&mut pp(args!["ec", "decode", &emu, "-o", d.join("back")])).ok();
    assert_file_eq(&d.join("back"), &data, "decoded from the emulated CSP's set");
    run(&mut pp(args!["ec", "encode", &src, "-k", "4", "-m", "2", "--unit", "1000", "-o", d.join("x"), "--engine", "emulated"])).fails(2, &["multiple of 4K"]);
}

/// `ec encode|verify|repair|decode --engine gpu`: on a GPU, the CPU's set, verdicts,
/// shards and bytes (its kernels are tested against ISA-L in peerpath-gpu, the staged pass
/// on a staged CPU device in ec_device.rs); where there is none (CI), a FALLBACK that says
/// why and the CPU's results, or exit 15 with nothing kept under --no-fallback. The
/// devices' unit rule applies to encode.
#[test]
fn ec_on_a_gpu_gives_the_cpus_results_or_falls_back_saying_why() {
    let dir = scratch();
    let d = dir.path();
    let src = d.join("s");
    let data = mixed_data(3 * 4 * 65536 + 12345, 5);
    std::fs::write(&src, &data).unwrap();
    let (cpu, gpu) = (d.join("cpu"), d.join("gpu"));
    run(&mut pp(args!["ec", "encode", &src, "-k", "4", "-m", "2", "--unit", "64K", "-o", &cpu])).ok();
    let o = run(&mut pp(args!["ec", "encode", &src, "-k", "4", "-m", "2", "--unit", "64K", "-o", &gpu, "--engine", "gpu", "--json"])).ok();
    let v = o.json();
    if v["fallback"].is_null() {
        eprintln!("a GPU coded the set: {}", v["engine"]);
        assert_eq!(v["provenance"], "measured on a real accelerator (GPU)", "{v}");
        assert_metadata_only(v["engine"].as_str().unwrap());
    } else {
        eprintln!("SKIPPED the GPU's own run (no GPU here): {}", v["fallback"]);
        assert!(o.stderr.contains("FALLBACK: GPU 0 unavailable: ") && o.stderr.contains("erasure coding on the host CPU instead"), "{}", o.stderr);
        assert_eq!(v["provenance"], "measured on this host's CPU", "{v}");
        run(&mut pp(args!["ec", "encode", &src, "-k", "4", "-m", "2", "-o", d.join("none"), "--engine", "gpu", "--no-fallback"])).fails(15, &["GPU 0 unavailable", "--no-fallback: nothing was kept"]);
        assert!(!d.join("none").exists());
    }
    assert_eq!(shards(&cpu), shards(&gpu), "the GPU engine's set is the CPU's");
    let on_gpu = v["fallback"].is_null();
    let o = run(&mut pp(args!["ec", "verify", &gpu, "--engine", "gpu"])).ok();
    assert!(o.stdout_str().contains("all 6 shards intact"), "{}", o.stdout_str());
    assert_eq!(o.stderr.contains("FALLBACK: GPU 0 unavailable"), !on_gpu, "{}", o.stderr);
    // Shard 2 lost, shard 5 cut short: repaired and restored the CPU's way.
    std::fs::remove_file(gpu.join("shard-002")).unwrap();
    let f = std::fs::OpenOptions::new().write(true).open(gpu.join("shard-005")).unwrap();
    f.set_len(65536 + 7).unwrap();
    drop(f);
    run(&mut pp(args!["ec", "verify", &gpu, "--engine", "gpu"])).fails(6, &[]);
    let back = d.join("back");
    run(&mut pp(args!["ec", "decode", &gpu, "-o", &back, "--engine", "gpu"])).ok();
    assert_file_eq(&back, &data, "decoded with --engine gpu");
    let o = run(&mut pp(args!["ec", "repair", &gpu, "--engine", "gpu", "--json"])).ok();
    assert_eq!(o.json()["provenance"], if on_gpu { "measured on a real accelerator (GPU)" } else { "measured on this host's CPU" });
    assert_eq!(shards(&cpu), shards(&gpu), "repaired with --engine gpu: the CPU's set");
    if !on_gpu {
        run(&mut pp(args!["ec", "decode", &gpu, "-o", d.join("none"), "--engine", "gpu", "--no-fallback"])).fails(15, &["GPU 0 unavailable", "--no-fallback"]);
        assert!(!d.join("none").exists());
    }
    run(&mut pp(args!["ec", "encode", &src, "-k", "4", "-m", "2", "--unit", "1000", "-o", d.join("x"), "--engine", "gpu"])).fails(2, &["multiple of 4K"]);
    run(&mut pp(args!["ec", "encode", &src, "-k", "4", "-m", "2", "-o", d.join("x"), "--gpu", "1"])).fails(2, &["--gpu needs --engine gpu"]);
}

/// `ec verify`, `repair` and `decode --engine emulated`: every unit read
/// into an emulated CSP's memory and checked there, lost units rebuilt
/// there and checked again, results written from it. The same verdicts,
/// shards and output as the CPU (the oracle), with units a multiple of 4 KiB
/// (O_DIRECT) and not; too many lost named as on the CPU with nothing kept.
#[test]
fn an_emulated_csp_checks_repairs_and_restores_a_set_as_the_cpu_does() {
    let dir = scratch();
    let d = dir.path();
    for (case, (size, unit)) in [(7 * 4 * 16384 + 999, "16K"), (50_000, "5000")].into_iter().enumerate() {
        let src = d.join(format!("s{case}"));
        std::fs::write(&src, random_bytes(size, 40 + case as u64)).unwrap();
        let set = d.join(format!("set{case}"));
        run(&mut pp(args!["ec", "encode", &src, "-k", "4", "-m", "2", "--unit", unit, "-o", &set])).ok();
        let original = shards(&set);
        // Two shards lost in every stripe: one deleted, one cut short half-way through.
        std::fs::remove_file(set.join("shard-001")).unwrap();
        let cut = &original[4].1;
        std::fs::write(set.join("shard-004"), &cut[..cut.len() / 2]).unwrap();
        let damaged = shards(&set);
        let cpu_verdict = run(&mut pp(args!["ec", "verify", &set])).fails(6, &["shard-001, shard-004", "repairable"]).stderr;
        let o = run(&mut pp(args!["ec", "verify", &set, "--engine", "emulated", "--no-fallback"])).fails(6, &[]);
        assert_eq!(o.stderr, cpu_verdict, "case {case}: the device's verdict is the CPU's");
        assert!(o.stdout_str().contains("checked on 1 emulated CSP"), "{}", o.stdout_str());
        assert_metadata_only(&o.stdout_str());
        let back = d.join(format!("back{case}"));
        let o = run(&mut pp(args!["ec", "decode", &set, "-o", &back, "--engine", "emulated", "--no-fallback"])).ok();
        assert!(o.stdout_str().contains("measured on emulated devices"), "{}", o.stdout_str());
        assert_metadata_only(&o.stdout_str());
        assert_eq!(std::fs::read(&back).unwrap(), std::fs::read(&src).unwrap(), "case {case}: decoded on the device");
        assert_eq!(shards(&set), damaged, "decoding leaves the set as it was");
        let v = run(&mut pp(args!["ec", "repair", &set, "--engine", "emulated", "--no-fallback", "--json"])).ok().json();
        assert_eq!(v["provenance"], "measured on emulated devices", "{v}");
        assert!(v["fallback"].is_null(), "{v}");
        assert_metadata_only(v["engine"].as_str().unwrap());
        assert_eq!(v["shards_written"], serde_json::json!(["shard-001", "shard-004"]), "{v}");
        assert_eq!(shards(&set), original, "case {case}: repaired on the device, byte for byte the originals");
        // Nothing to repair: checked on the device, and said so (it said "measured on this host's CPU").
        let v = run(&mut pp(args!["ec", "repair", &set, "--engine", "emulated", "--no-fallback", "--json"])).ok().json();
        assert_eq!(v["provenance"], "measured on emulated devices", "{v}");
        assert!(v["engine"].as_str().unwrap().starts_with("nothing to repair (checked on 1 emulated CSP"), "{v}");
        // Bytes appended to a shard whose units all check out: named, and cut off by either engine.
        for engine in ["emulated", "cpu"] {
            let mut longer = original[2].1.clone();
            longer.extend_from_slice(b"appended");
            std::fs::write(set.join("shard-002"), longer).unwrap();
            let e = run(&mut pp(args!["ec", "verify", &set, "--engine", engine])).fails(6, &["bytes past the set's last stripe in shard-002", "repairable"]);
            assert!(!e.stderr.contains("corrupt units"), "{}", e.stderr);
            let v = run(&mut pp(args!["ec", "repair", &set, "--engine", engine, "--no-fallback", "--json"])).ok().json();
            assert_eq!(v["shards_written"], serde_json::json!(["shard-002"]), "{v}");
            assert_eq!(shards(&set), original, "case {case}, {engine}: the shard is its units again");
        }
        // Three lost in stripe 0: the same error as the CPU's, nothing written.
        for name in ["shard-000", "shard-002", "shard-005"] {
            let mut b = original.iter().find(|(n, _)| n == name).unwrap().1.clone();
            b[10] ^= 1;
            std::fs::write(set.join(name), b).unwrap();
        }
        let before = shards(&set);
        let cpu_error = run(&mut pp(args!["ec", "repair", &set])).fails(6, &["stripe 0 lost", "cannot be rebuilt"]).stderr;
        assert_eq!(run(&mut pp(args!["ec", "repair", &set, "--engine", "emulated", "--no-fallback"])).fails(6, &[]).stderr, cpu_error);
        let never = d.join(format!("never{case}"));
        run(&mut pp(args!["ec", "decode", &set, "-o", &never, "--engine", "emulated", "--no-fallback"])).fails(6, &["stripe 0 lost", "cannot be rebuilt"]);
        assert!(!never.exists());
        assert_eq!(shards(&set), before, "nothing was written to the set");
        assert_eq!(names_in(d).iter().filter(|n| n.starts_with('.')).count(), 0, "no temporary left: {:?}", names_in(d));
    }
}

/// A device that stops answering (frozen after some commands) while encoding
/// or decoding a set is declared hung after `--device-timeout`, and the CPU
/// does the job from the start; the option is a device's, a usage error on the CPU.
#[test]
fn a_device_that_hangs_mid_set_is_timed_out_and_the_cpu_does_the_job() {
    let dir = scratch();
    let d = dir.path();
    let src = d.join("s");
    std::fs::write(&src, random_bytes(9 * 4 * 8192, 78)).unwrap();
    let set = d.join("set");
    run(&mut pp(args!["ec", "encode", &src, "-k", "4", "-m", "2", "--unit", "8K", "-o", &set])).ok();
    let started = std::time::Instant::now();
    let hang = args!["--engine", "emulated", "--inject-faults", "seed=1,hang-after=20", "--device-timeout", "0.5"];
    let again = d.join("again");
    let v = run(pp(args!["ec", "encode", &src, "-k", "4", "-m", "2", "--unit", "8K", "-o", &again, "--json"]).args(&hang)).ok().json();
    assert!(v["fallback"].as_str().is_some_and(|f| f.contains("timed out")), "{v}");
    assert_eq!(shards(&again), shards(&set), "the CPU's set");
    std::fs::remove_file(set.join("shard-001")).unwrap();
    let back = d.join("back");
    let o = run(pp(args!["ec", "decode", &set, "-o", &back]).args(&hang)).ok();
    assert!(o.stderr.contains("FALLBACK") && o.stderr.contains("timed out"), "{}", o.stderr);
    assert_file_eq(&back, &std::fs::read(&src).unwrap(), "decoded on the CPU");
    assert!(started.elapsed() < std::time::Duration::from_secs(18), "two hangs of 0.5 s, not 10 s each: {:?}", started.elapsed());
    run(&mut pp(args!["ec", "verify", &set, "--device-timeout", "1"])).fails(2, &["--device-timeout", "--engine emulated or gpu"]);
}

/// A device that dies or gets a rebuilt unit wrong (a flipped byte in its
/// memory, caught by the manifest's CRC-32) while repairing or restoring a
/// set, or dies while encoding one: the CPU does the job from the start,
/// and the report says so; with --no-fallback exit 15 and nothing written.
#[test]
fn a_device_that_fails_mid_job_hands_ec_work_to_the_cpu_or_fails_with_nothing_written() {
    let dir = scratch();
    let d = dir.path();
    let src = d.join("s");
    std::fs::write(&src, random_bytes(9 * 4 * 8192, 77)).unwrap();
    let set = d.join("set");
    run(&mut pp(args!["ec", "encode", &src, "-k", "4", "-m", "2", "--unit", "8K", "-o", &set])).ok();
    let original = shards(&set);
    for faults in ["seed=1,crash-after=30", "seed=3,corrupt=0.3"] {
        std::fs::remove_file(set.join("shard-000")).unwrap();
        let damaged = shards(&set);
        run(&mut pp(args!["ec", "repair", &set, "--engine", "emulated", "--no-fallback", "--inject-faults", faults])).fails(15, &["no-fallback", "nothing was kept"]);
        assert_eq!(shards(&set), damaged, "{faults}: nothing written to the set");
        let never = d.join("never");
        run(&mut pp(args!["ec", "decode", &set, "-o", &never, "--engine", "emulated", "--no-fallback", "--inject-faults", faults])).fails(15, &["no-fallback"]);
        assert!(!never.exists());
        let back = d.join("back");
        let o = run(&mut pp(args!["ec", "decode", &set, "-o", &back, "--force", "--engine", "emulated", "--inject-faults", faults])).ok();
        assert!(o.stderr.contains("FALLBACK") && o.stderr.contains("host CPU"), "{faults}: {}", o.stderr);
        assert_eq!(std::fs::read(&back).unwrap(), std::fs::read(&src).unwrap(), "{faults}: decoded");
        let v = run(&mut pp(args!["ec", "repair", &set, "--engine", "emulated", "--json", "--inject-faults", faults])).ok().json();
        assert!(v["fallback"].is_string() && v["engine"].as_str().unwrap().starts_with("host CPU"), "{faults}: {v}");
        assert_eq!(v["provenance"], "measured on this host's CPU");
        assert_eq!(shards(&set), original, "{faults}: repaired by the CPU");
    }
    run(&mut pp(args!["ec", "verify", &set, "--inject-faults", "seed=1"])).fails(2, &["--engine emulated"]);
    run(&mut pp(args!["ec", "encode", &src, "-k", "4", "-m", "2", "-o", d.join("never-set"), "--engine", "emulated", "--inject-faults", "seed=1,corrupt=0.5"])).fails(2, &["corrupt="]);
    // Encoding: a device that dies mid-set hands it to the CPU, whose set is the one made before.
    let again = d.join("again");
    run(&mut pp(args!["ec", "encode", &src, "-k", "4", "-m", "2", "--unit", "8K", "-o", &again, "--engine", "emulated", "--no-fallback", "--inject-faults", "seed=1,crash-after=20"])).fails(15, &["no-fallback"]);
    assert!(!again.exists());
    let v = run(&mut pp(args!["ec", "encode", &src, "-k", "4", "-m", "2", "--unit", "8K", "-o", &again, "--engine", "emulated", "--json", "--inject-faults", "seed=1,crash-after=20"])).ok().json();
    assert!(v["fallback"].is_string() && v["engine"].as_str().unwrap().starts_with("host CPU"), "{v}");
    assert_eq!(shards(&again), original);
    assert_eq!(names_in(d).iter().filter(|n| n.starts_with('.')).count(), 0, "no scratch left: {:?}", names_in(d));
    // A full target is the job's own failure (exit 11), not the device's: no fallback, nothing kept.
    let Some(fs) = TmpfsMount::new("a_device_that_fails_mid_job_hands_ec_work_to_the_cpu_or_fails_with_nothing_written", "1m") else { return };
    let big = d.join("big");
    std::fs::write(&big, random_bytes(3_000_000, 5)).unwrap();
    let o = run(&mut pp(args!["ec", "encode", &big, "-k", "4", "-m", "2", "--unit", "64K", "-o", fs.dir.join("set"), "--engine", "emulated"])).fails(11, &["No space left"]);
    assert!(!o.stderr.contains("FALLBACK"), "{}", o.stderr);
    assert_dir_holds(&fs.dir, &[]);
    let bigset = d.join("bigset");
    run(&mut pp(args!["ec", "encode", &big, "-k", "4", "-m", "2", "--unit", "64K", "-o", &bigset])).ok();
    let o = run(&mut pp(args!["ec", "decode", &bigset, "-o", fs.dir.join("big"), "--engine", "emulated"])).fails(11, &["No space left"]);
    assert!(!o.stderr.contains("FALLBACK"), "{}", o.stderr);
    assert_dir_holds(&fs.dir, &[]);
}

/// `--shard-dir`, one per drive (RAID-style): shard i in the i-th
/// directory as SET.shard-NNN, the manifest in the set's directory; the
/// shards are the plain set's byte for byte; a lost drive's shard is
/// decoded around and rebuilt in its directory, on the CPU and on an
/// emulated CSP; bad placements are refused with nothing written.
#[test]
fn shards_placed_one_per_directory_decode_and_repair_in_place() {
    let dir = scratch();
    let d = dir.path();
    let src = d.join("src");
    std::fs::write(&src, random_bytes(600_000, 21)).unwrap();
    let plain = d.join("plain");
    run(&mut pp(args!["ec", "encode", &src, "-k", "4", "-m", "2", "--unit", "16K", "-o", &plain])).ok();
    let drives: Vec<PathBuf> = (0..6).map(|i| d.join(format!("ssd{i}"))).collect();
    drives.iter().for_each(|p| std::fs::create_dir(p).unwrap());
    let placed = |c: &mut std::process::Command, dirs: &[PathBuf]| {
        for p in dirs {
            c.arg("--shard-dir").arg(p);
        }
    };
    let set = d.join("photos");
    let mut c = pp(args!["ec", "encode", &src, "-k", "4", "-m", "2", "--unit", "16K", "-o", &set, "--json"]);
    placed(&mut c, &drives);
    let v = run(&mut c).ok().json();
    assert_eq!(v["shards_written"][5], drives[5].join("photos.shard-005").canonicalize().unwrap().to_str().unwrap(), "{v}");
    assert_dir_holds(&set, &["manifest.json"]);
    for (i, p) in drives.iter().enumerate() {
        assert_dir_holds(p, &["photos.manifest.json", &format!("photos.shard-{i:03}")]);
        assert_eq!(std::fs::read(p.join("photos.manifest.json")).unwrap(), std::fs::read(set.join("manifest.json")).unwrap(), "a copy of the manifest beside each shard");
        assert_eq!(std::fs::read(p.join(format!("photos.shard-{i:03}"))).unwrap(), std::fs::read(plain.join(format!("shard-{i:03}"))).unwrap(), "shard {i}");
    }
    let original = std::fs::read(drives[2].join("photos.shard-002")).unwrap();
    for engine in ["cpu", "emulated"] {
        // A drive fails: its shard is gone; another shard is corrupt.
        std::fs::remove_file(drives[2].join("photos.shard-002")).unwrap();
        let mut b = std::fs::read(drives[4].join("photos.shard-004")).unwrap();
        b[100] ^= 1;
        std::fs::write(drives[4].join("photos.shard-004"), b).unwrap();
        run(&mut pp(args!["ec", "verify", &set, "--engine", engine])).fails(6, &["ssd2/photos.shard-002", "ssd4/photos.shard-004", "repairable"]);
        let back = d.join(format!("back-{engine}"));
        run(&mut pp(args!["ec", "decode", &set, "-o", &back, "--engine", engine, "--no-fallback"])).ok();
        assert_eq!(std::fs::read(&back).unwrap(), std::fs::read(&src).unwrap(), "{engine}: decoded");
        let v = run(&mut pp(args!["ec", "repair", &set, "--engine", engine, "--no-fallback", "--json"])).ok().json();
        assert_eq!(v["shards_written"].as_array().unwrap().len(), 2, "{v}");
        assert_eq!(std::fs::read(drives[2].join("photos.shard-002")).unwrap(), original, "{engine}: rebuilt on its drive");
        for (i, p) in drives.iter().enumerate() {
            assert_dir_holds(p, &["photos.manifest.json", &format!("photos.shard-{i:03}")]);
        }
        run(&mut pp(args!["ec", "verify", &set])).ok();
    }
    // A drive that went read-only: repair names its shard (it named the set's manifest).
    if running_as_root(d) && tool("mount").is_some() {
        struct Unmount(PathBuf);
        impl Drop for Unmount {
            fn drop(&mut self) {
                let _ = std::process::Command::new("umount").arg(&self.0).status();
            }
        }
        std::fs::remove_file(drives[2].join("photos.shard-002")).unwrap();
        assert!(std::process::Command::new("mount").arg("--bind").arg(&drives[2]).arg(&drives[2]).status().unwrap().success());
        let mounted = Unmount(drives[2].clone());
        assert!(std::process::Command::new("mount").args(["-o", "remount,bind,ro"]).arg(&drives[2]).status().unwrap().success());
        run(&mut pp(args!["ec", "repair", drives[3].join("photos.manifest.json")])).fails(11, &["ssd2/photos.shard-002: Read-only file system"]);
        drop(mounted);
        run(&mut pp(args!["ec", "repair", &set, "-q"])).ok();
        assert_eq!(std::fs::read(drives[2].join("photos.shard-002")).unwrap(), original);
    } else {
        eprintln!("SKIPPED (a read-only drive): a bind mount needs root and `mount`");
    }
    // The set's directory is lost with its drive, and so is a shard's drive; a copy of the
    // manifest is tampered with: any other copy serves, verify names the bad copies, repair
    // writes them back.
    let manifest = std::fs::read(set.join("manifest.json")).unwrap();
    std::fs::rename(&set, d.join("photos-away")).unwrap();
    std::fs::remove_file(drives[1].join("photos.shard-001")).unwrap();
    std::fs::remove_file(drives[1].join("photos.manifest.json")).unwrap();
    std::fs::write(drives[3].join("photos.manifest.json"), String::from_utf8(manifest.clone()).unwrap().replace("\"source\": \"src\"", "\"source\": \"srx\"")).unwrap();
    let copy = drives[0].join("photos.manifest.json");
    run(&mut pp(args!["ec", "verify", &copy])).fails(6, &["ssd1/photos.shard-001", "copies of the manifest missing or different in", "ssd1/photos.manifest.json", "ssd3/photos.manifest.json"]);
    let back = d.join("back-from-copy");
    run(&mut pp(args!["ec", "decode", &copy, "-o", &back])).ok();
    assert_eq!(std::fs::read(&back).unwrap(), std::fs::read(&src).unwrap(), "decoded through a copy of the manifest");
    let v = run(&mut pp(args!["ec", "repair", &copy, "--json"])).ok().json();
    assert_eq!(v["manifests_written"].as_array().unwrap().len(), 2, "{v}");
    for (i, p) in drives.iter().enumerate() {
        assert_dir_holds(p, &["photos.manifest.json", &format!("photos.shard-{i:03}")]);
        assert_eq!(std::fs::read(p.join("photos.manifest.json")).unwrap(), manifest, "copy {i}");
    }
    assert_eq!(std::fs::read(drives[1].join("photos.shard-001")).unwrap(), std::fs::read(plain.join("shard-001")).unwrap());
    run(&mut pp(args!["ec", "verify", &drives[5].join("photos.manifest.json")])).ok();
    std::fs::rename(d.join("photos-away"), &set).unwrap();
    // `compress --ec --shard-dir`, on the CPU and on an emulated CSP: the same placed set, read back by `decompress --ec`.
    let mut sets = Vec::new();
    for engine in ["cpu", "emulated"] {
        let chained = d.join(format!("chained-{engine}"));
        let chain_drives: Vec<PathBuf> = (0..3).map(|i| d.join(format!("{engine}{i}"))).collect();
        chain_drives.iter().for_each(|p| std::fs::create_dir(p).unwrap());
        let mut c = pp(args!["compress", &src, "--ec", "2+1", "--ec-unit", "16K", "-o", &chained, "--engine", engine, "--no-fallback"]);
        placed(&mut c, &chain_drives);
        run(&mut c).ok();
        assert_dir_holds(&chained, &["manifest.json"]);
        assert_dir_holds(&chain_drives[2], &[&format!("chained-{engine}.manifest.json"), &format!("chained-{engine}.shard-002")]);
        sets.push((0..3).map(|i| std::fs::read(chain_drives[i].join(format!("chained-{engine}.shard-{i:03}"))).unwrap()).collect::<Vec<_>>());
        std::fs::remove_file(chain_drives[0].join(format!("chained-{engine}.shard-000"))).unwrap();
        run(&mut pp(args!["decompress", "--ec", &chained, "-o", d.join(format!("unchained-{engine}")), "--engine", engine, "--no-fallback"])).ok();
        assert_file_eq(&d.join(format!("unchained-{engine}")), &std::fs::read(&src).unwrap(), "decompress --ec of a placed set");
    }
    assert!(sets[0] == sets[1], "the emulated CSP's placed set is the CPU's");
    let chained = d.join("chained-cpu");
    let chain_drives: Vec<PathBuf> = (0..3).map(|i| d.join(format!("cpu{i}"))).collect();
    run(&mut pp(args!["compress", &src, "-o", d.join("x.gz"), "--shard-dir", &chain_drives[0]])).fails(2, &["give --ec"]);
    // A drive whose directory is gone: repair names it.
    std::fs::remove_dir_all(&chain_drives[0]).unwrap();
    run(&mut pp(args!["ec", "repair", &chained])).fails(11, &["cpu0/chained-cpu.shard-000"]);
    // Refused, nothing written: too few directories, one twice, one missing, a shard already there.
    let never = d.join("never");
    let mut c = pp(args!["ec", "encode", &src, "-k", "4", "-m", "2", "-o", &never]);
    placed(&mut c, &drives[..5]);
    run(&mut c).fails(2, &["one directory per shard, 6"]);
    let mut c = pp(args!["ec", "encode", &src, "-k", "4", "-m", "2", "-o", &never]);
    placed(&mut c, &[&drives[..5], &drives[..1]].concat());
    run(&mut c).fails(2, &["given twice"]);
    let mut c = pp(args!["ec", "encode", &src, "-k", "4", "-m", "2", "-o", &never]);
    placed(&mut c, &[&drives[..5], &[d.join("nowhere")]].concat());
    run(&mut c).fails(11, &["nowhere"]);
    let mut c = pp(args!["ec", "encode", &src, "-k", "4", "-m", "2", "-o", &set.with_file_name("photos2")]);
    std::fs::write(drives[3].join("photos2.shard-003"), b"mine").unwrap();
    placed(&mut c, &drives);
    run(&mut c).fails(4, &["photos2.shard-003", "never replace a file, even with --force"]);
    assert!(!never.exists() && !set.with_file_name("photos2").exists());
    // A set name legal on its own whose manifest copy's name is too long for the
    // drives' file system: refused before any work, naming that copy.
    let long = "g".repeat(242);
    let mut c = pp(args!["ec", "encode", &src, "-k", "4", "-m", "2", "-o", d.join(&long)]);
    placed(&mut c, &drives);
    run(&mut c).fails(11, &[&format!("{long}.manifest.json"), "File name too long"]);
    assert!(!d.join(&long).exists());
    assert_eq!(std::fs::read(drives[3].join("photos2.shard-003")).unwrap(), b"mine");
    for (i, p) in drives.iter().enumerate() {
        let mut want = vec!["photos.manifest.json".to_string(), format!("photos.shard-{i:03}")];
        if i == 3 {
            want.push("photos2.shard-003".into());
        }
        assert_dir_holds(p, &want.iter().map(String::as_str).collect::<Vec<_>>());
    }
}

/// An independent reader of the format (`scripts/ec-reference.py`: plain
/// Python, GF(2^8) and ISA-L's Cauchy matrix from their description)
/// recomputes peerpath's parity and restores its sets, plain and placed,
/// from survivors that include parity; it also catches a parity unit that
/// is wrong while its checksum is right (so its check is not vacuous).
#[test]
fn an_independent_reader_checks_the_parity_and_restores_the_sets() {
    let Some(found) = tools_or_skip("an_independent_reader_checks_the_parity_and_restores_the_sets", &["python3"]) else { return };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/ec-reference.py");
    let reference = |what: &str, set: &Path| run(std::process::Command::new(&found[0]).arg(&script).arg(what).arg(set));
    let dir = scratch();
    let d = dir.path();
    for (case, (size, k, m, unit)) in [(100_001usize, 3, 2, "4K"), (300_000, 4, 2, "16K"), (50_000, 10, 4, "4K")].into_iter().enumerate() {
        let src = d.join(format!("s{case}"));
        std::fs::write(&src, random_bytes(size, 60 + case as u64)).unwrap();
        let set = d.join(format!("set{case}"));
        let mut c = pp(args!["ec", "encode", &src, "-k", k.to_string(), "-m", m.to_string(), "--unit", unit, "-o", &set]);
        let drives: Vec<PathBuf> = (0..k + m).map(|i| d.join(format!("drive{case}-{i}"))).collect();
        if case == 1 {
            for p in &drives {
                std::fs::create_dir(p).unwrap();
                c.arg("--shard-dir").arg(p);
            }
        }
        run(&mut c).ok();
        let shard = |i: usize| if case == 1 { drives[i].join(format!("set1.shard-{i:03}")) } else { set.join(format!("shard-{i:03}")) };
        assert!(reference("check", &set).ok().stdout_str().contains("parity checked"));
        // m data units lost: one shard deleted, the others corrupt.
        std::fs::remove_file(shard(0)).unwrap();
        for i in 1..m {
            let mut b = std::fs::read(shard(i)).unwrap();
            b[7] ^= 0x80;
            std::fs::write(shard(i), b).unwrap();
        }
        let restored = reference("decode", &set).ok().stdout;
        assert!(restored == std::fs::read(&src).unwrap(), "case {case}: the reference restored the source from peerpath's survivors");
        if case == 1 {
            let copy = drives[5].join("set1.manifest.json");
            assert!(reference("decode", &copy).ok().stdout == std::fs::read(&src).unwrap(), "through a manifest copy");
        }
    }
    // A parity unit changed with its checksum updated: the reference says so.
    let set = d.join("fresh");
    run(&mut pp(args!["ec", "encode", d.join("s0"), "-k", "3", "-m", "2", "--unit", "4K", "-o", &set])).ok();
    let manifest = set.join("manifest.json");
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&manifest).unwrap()).unwrap();
    let mut parity = std::fs::read(set.join("shard-004")).unwrap();
    parity[5] ^= 1;
    v["shards"][4]["crc32"][0] = serde_json::json!(crc32fast::hash(&parity[..4096]));
    std::fs::write(set.join("shard-004"), parity).unwrap();
    std::fs::write(&manifest, v.to_string()).unwrap();
    let o = reference("check", &set);
    assert_eq!(o.code(), Some(1), "{}", o.stderr);
    assert!(o.stderr.contains("stripe 0: parity unit 4"), "{}", o.stderr);
}

/// `compress --ec K+M [--encrypt]`: one pass; `ec decode` gives back the
/// very members `compress` makes (sealed with `--encrypt`: `decrypt` gives
/// the same .gz, `decompress --key-file` the source), also with M shards lost.
#[test]
fn compress_with_ec_and_encrypt_chains_in_one_pass() {
    let dir = scratch();
    let d = dir.path();
    let key = d.join("key");
    run(&mut pp(args!["keygen", "-o", &key])).ok();
    for (size, ec, unit) in [(0usize, "2+1", "4K"), (100_000, "3+2", "4K"), (3_000_001, "4+2", "64K")] {
        let src = d.join(format!("s{size}"));
        std::fs::write(&src, mixed_data(size, size as u64 + 3)).unwrap();
        let reference = d.join(format!("s{size}.ref.gz"));
        run(&mut pp(args!["compress", &src, "-o", &reference, "--block-size", "256K"])).ok();
        let want_gz = std::fs::read(&reference).unwrap();
        // Without --encrypt: the shards hold the .gz itself.
        let plain = d.join(format!("plain{size}"));
        let o = run(&mut pp(args!["compress", &src, "--ec", ec, "--ec-unit", unit, "-o", &plain, "--block-size", "256K"])).ok();
        assert!(o.stdout_str().contains("measured on this host's CPU") && (o.stdout_str().contains(" host threads)") || o.stdout_str().contains(" 1 host thread)")), "{}", o.stdout_str());
        run(&mut pp(args!["ec", "verify", &plain])).ok();
        let gz = d.join(format!("plain{size}.gz"));
        run(&mut pp(args!["ec", "decode", &plain, "-o", &gz])).ok();
        assert_file_eq(&gz, &want_gz, "the chain's .gz against compress's");
        // With --encrypt, and two shards lost.
        let sealed = d.join(format!("sealed{size}"));
        let o = run(&mut pp(args!["compress", &src, "--ec", ec, "--ec-unit", unit, "--encrypt", "--key-file", &key, "--encrypt-block-size", "64K", "-o", &sealed, "--block-size", "256K"])).ok();
        assert!(o.stdout_str().contains("encrypted, peerpath-enc/1"), "{}", o.stdout_str());
        let names = shards(&sealed);
        let parity: usize = ec.split('+').nth(1).unwrap().parse().unwrap();
        for (name, _) in names.iter().take(parity) {
            std::fs::remove_file(sealed.join(name)).unwrap();
        }
        let enc = d.join(format!("s{size}.gz.ppenc"));
        run(&mut pp(args!["ec", "decode", &sealed, "-o", &enc])).ok();
        let back = d.join(format!("s{size}.back"));
        run(&mut pp(args!["decompress", &enc, "--key-file", &key, "-o", &back])).ok();
        assert_file_eq(&back, &std::fs::read(&src).unwrap(), "source through compress, encrypt, ec, decode, decrypt, decompress");
        let dec = d.join(format!("s{size}.dec.gz"));
        run(&mut pp(args!["decrypt", &enc, "--key-file", &key, "-o", &dec])).ok();
        assert_file_eq(&dec, &want_gz, "the sealed members are compress's");
        // The reverse in one pass, from the shards that are left; and from the plain set.
        let back = d.join(format!("s{size}.back.ec"));
        run(&mut pp(args!["decompress", "--ec", &sealed, "--key-file", &key, "-o", &back])).ok();
        assert_file_eq(&back, &std::fs::read(&src).unwrap(), "decompress --ec of the sealed set");
        run(&mut pp(args!["decompress", "--ec", &plain, "-o", &back, "-f"])).ok();
        assert_file_eq(&back, &std::fs::read(&src).unwrap(), "decompress --ec of the plain set");
    }
    // The reverse refuses without the key or with another one, and keeps nothing.
    let other = d.join("other-key");
    run(&mut pp(args!["keygen", "-o", &other])).ok();
    let sealed = d.join("sealed3000001");
    let never = d.join("never");
    run(&mut pp(args!["decompress", "--ec", &sealed, "-o", &never])).fails(2, &["give its key"]);
    let o = run(&mut pp(args!["decompress", "--ec", &sealed, "--key-file", &other, "-o", &never]));
    assert!(o.code() != Some(0) && o.stderr.contains("key"), "{}", o.stderr);
    // One more shard lost than the code allows: named, nothing written.
    let left = shards(&sealed);
    std::fs::remove_file(sealed.join(&left[0].0)).unwrap();
    run(&mut pp(args!["decompress", "--ec", &sealed, "--key-file", &key, "-o", &never])).fails(6, &["stripe"]);
    assert!(!never.exists());
    // One source and a new directory, on the CPU; an existing directory is kept as it is.
    let src = d.join("s0");
    run(&mut pp(args!["compress", &src, &src, "--ec", "2+1", "-o", d.join("x")])).fails(2, &["one source"]);
    run(&mut pp(args!["compress", &src, "--ec", "2+1"])).fails(2, &["--output DIR"]);
    let o = run(&mut pp(args!["compress", &src, "--ec", "2", "-o", d.join("x")]));
    assert!(o.code() == Some(2) && o.stderr.contains("data+parity"), "{}", o.stderr);
    run(&mut pp(args!["compress", &src, "--ec", "2+1", "-o", d.join("plain0")])).fails(4, &["plain0"]);
    // --force replaces no set (it was accepted and ignored), and the source is not "a directory".
    run(&mut pp(args!["compress", &src, "--ec", "2+1", "-o", d.join("plain0"), "-f"])).fails(2, &["never replaces one, even with --force"]);
    // Where there is nothing to replace, -f is no error (it said "never replaces one").
    run(&mut pp(args!["compress", &src, "--ec", "2+1", "-o", d.join("fresh-f"), "-f", "-q"])).ok();
    run(&mut pp(args!["ec", "verify", d.join("fresh-f")])).ok();
    run(&mut pp(args!["compress", &src, "--ec", "2+1", "-o", &src])).fails(5, &["same file"]);
    run(&mut pp(args!["compress", &src, "--ec", "2+1", "-o", &src, "-f"])).fails(5, &["same file"]);
    // The 72-byte header of an encrypted chain lies in its first stripe (a panic, exit 101).
    run(&mut pp(args!["compress", &src, "--ec", "4+2", "--ec-unit", "17", "--encrypt", "--key-file", &key, "-o", d.join("x")])).fails(2, &["at least 18 bytes"]);
    run(&mut pp(args!["ec", "encode", &src, "-k", "2", "-m", "1", "-o", &src])).fails(5, &["same file"]);
    assert!(!d.join("x").exists());
    run(&mut pp(args!["ec", "verify", d.join("plain0")])).ok();
}

/// `compress --ec K+M --encrypt --engine gpu`: the chain in GPU memory
/// (nvCOMP, then peerpath's AES-GCM and Reed-Solomon kernels) gives a set
/// that decodes to the source; without a GPU the fallback says why and the
/// CPU's chain runs; --no-fallback exits 15 and keeps nothing; BGZF is not
/// the GPU's.
#[test]
fn the_chain_runs_on_a_gpu_or_falls_back_saying_why() {
    let dir = scratch();
    let d = dir.path();
    let key = d.join("key");
    run(&mut pp(args!["keygen", "-o", &key])).ok();
    let src = d.join("s");
    let data = mixed_data(2_500_001, 3);
    std::fs::write(&src, &data).unwrap();
    let common = args!["--ec", "4+2", "--ec-unit", "64K", "--block-size", "64K", "--encrypt", "--key-file", &key, "--encrypt-block-size", "16K"];
    let gpu = d.join("gpu");
    let o = run(pp(args!["compress", &src, "-o", &gpu, "--engine", "gpu"]).args(&common)).ok();
    let on_gpu = !o.stderr.contains("FALLBACK");
    if on_gpu {
        eprintln!("a GPU ran the chain: {}", o.stdout_str());
        assert!(o.stdout_str().contains("measured on a real accelerator (GPU)") && o.stdout_str().contains("every stage on 1 GPU"), "{}", o.stdout_str());
        assert_metadata_only(&o.stdout_str());
    } else {
        eprintln!("SKIPPED the GPU's own run (no GPU here): {}", o.stderr);
        assert!(o.stderr.contains("FALLBACK: GPU 0 unavailable: ") && o.stderr.contains("the chain runs on the host CPU"), "{}", o.stderr);
        run(pp(args!["compress", &src, "-o", d.join("none"), "--engine", "gpu", "--no-fallback"]).args(&common)).fails(15, &["GPU 0 unavailable", "--no-fallback: nothing was kept"]);
        assert!(!d.join("none").exists());
    }
    let back = d.join("back");
    run(&mut pp(args!["decompress", "--ec", &gpu, "--key-file", &key, "-o", &back])).ok();
    assert_file_eq(&back, &data, "compress --ec --encrypt --engine gpu, restored on the CPU");
    run(&mut pp(args!["ec", "verify", &gpu])).ok();
    // BGZF's blocks are its own: no --block-size.
    let bgzf = args!["--ec", "4+2", "--ec-unit", "64K", "--encrypt", "--key-file", &key, "--encrypt-block-size", "16K"];
    run(pp(args!["compress", &src, "-o", d.join("bgzf"), "--engine", "gpu", "--format", "bgzf", "--no-fallback"]).args(&bgzf)).fails(15, &["--no-fallback: nothing was kept"]);
    assert!(!d.join("bgzf").exists());
}

/// The reverse chain on a GPU (`decompress --ec --engine gpu`): where there
/// is one, every stage in GPU memory (a lost unit rebuilt there), staged
/// through its pinned window, with the CPU's output; where there is none, a
/// FALLBACK saying why, the CPU's output still, and --no-fallback exits 15
/// with nothing written. --inject-faults stays the emulated CSP's.
#[test]
fn the_reverse_chain_runs_on_a_gpu_or_falls_back_saying_why() {
    let dir = scratch();
    let d = dir.path();
    let key = d.join("key");
    run(&mut pp(args!["keygen", "-o", &key])).ok();
    let src = d.join("s");
    let data = mixed_data(2_500_001, 5);
    std::fs::write(&src, &data).unwrap();
    let common = args!["--ec", "4+2", "--ec-unit", "64K", "--block-size", "64K"];
    for (name, encrypt) in [("plain", vec![]), ("sealed", args!["--encrypt", "--key-file", &key, "--encrypt-block-size", "16K"])] {
        let set = d.join(name);
        run(pp(args!["compress", &src, "-o", &set]).args(&common).args(&encrypt)).ok();
        let keyed = if encrypt.is_empty() { vec![] } else { args!["--key-file", &key] };
        // A data shard lost: each stripe rebuilds a unit.
        std::fs::remove_file(set.join(&shards(&set)[1].0)).unwrap();
        let cpu = d.join(format!("{name}-cpu"));
        run(pp(args!["decompress", "--ec", &set, "-o", &cpu]).args(&keyed)).ok();
        assert_file_eq(&cpu, &data, "decoded on the CPU");
        let gpu = d.join(format!("{name}-gpu"));
        let o = run(pp(args!["decompress", "--ec", &set, "-o", &gpu, "--engine", "gpu"]).args(&keyed)).ok();
        assert_file_eq(&gpu, &data, "decompress --ec --engine gpu: the CPU's output");
        if !o.stderr.contains("FALLBACK") {
            eprintln!("a GPU ran the reverse chain: {}", o.stdout_str());
            let out = o.stdout_str();
            assert!(out.contains("measured on a real accelerator (GPU)") && out.contains("every stage on 1 GPU") && out.contains("rebuilt on the device"), "{out}");
            assert_metadata_only(&out);
            assert!(out.contains("stages on the device (measured on a real accelerator (GPU))") && out.contains("gzip decompress member"), "{out}");
        } else {
            eprintln!("SKIPPED the GPU's own run (no GPU here): {}", o.stderr);
            assert!(o.stderr.contains("FALLBACK: GPU 0 unavailable: ") && o.stderr.contains("the set is decoded on the host CPU"), "{}", o.stderr);
            let never = d.join("never");
            run(pp(args!["decompress", "--ec", &set, "-o", &never, "--engine", "gpu", "--no-fallback"]).args(&keyed)).fails(15, &["GPU 0 unavailable", "--no-fallback: nothing was kept"]);
            assert!(!never.exists());
        }
    }
    run(&mut pp(args!["decompress", "--ec", d.join("plain"), "-o", d.join("never"), "--engine", "gpu", "--inject-faults", "seed=1"])).fails(2, &["--inject-faults needs --ec --engine emulated"]);
    assert!(!d.join("never").exists());
}

/// The chain in an emulated CSP's memory: without encryption the very
/// shards and manifest the CPU chain writes; with it a set that decodes and
/// decrypts to the CPU's members; what the device cannot do is said.
#[test]
fn the_chain_runs_in_an_emulated_csps_memory_with_the_cpus_output() {
    let dir = scratch();
    let d = dir.path();
    let key = d.join("key");
    run(&mut pp(args!["keygen", "-o", &key])).ok();
    for (size, ec, unit) in [(0usize, "2+1", "4K"), (200_000, "3+2", "4K"), (2_500_001, "4+2", "64K")] {
        let src = d.join(format!("s{size}"));
        std::fs::write(&src, mixed_data(size, size as u64 + 11)).unwrap();
        let (cpu, dev) = (d.join(format!("cpu{size}")), d.join(format!("dev{size}")));
        let common = args!["--ec", ec, "--ec-unit", unit, "--block-size", "64K"];
        run(pp(args!["compress", &src, "-o", &cpu]).args(&common)).ok();
        let o = run(pp(args!["compress", &src, "-o", &dev, "--engine", "emulated", "--no-fallback"]).args(&common)).ok();
        assert!(o.stdout_str().contains("measured on emulated devices"), "{}", o.stdout_str());
        assert_metadata_only(&o.stdout_str());
        assert!(o.stdout_str().contains("stages on the device") && o.stdout_str().contains("gzip compress member"), "each stage's figures: {}", o.stdout_str());
        let o = run(pp(args!["compress", &src, "-o", d.join(format!("cpu-again{size}"))]).args(&common)).ok();
        assert!(o.stdout_str().contains("stages on this host's CPU") && o.stdout_str().contains("erasure code"), "each stage's figures: {}", o.stdout_str());
        let names = |p: &Path| shards(p).into_iter().chain([("manifest.json".to_string(), std::fs::read(p.join("manifest.json")).unwrap())]).collect::<Vec<_>>();
        assert!(names(&cpu) == names(&dev), "{size} bytes: the device's set is the CPU's, byte for byte");
        // Sealed on the device: a fresh file id, so compare what it decodes to.
        let sealed = d.join(format!("sealed{size}"));
        run(pp(args!["compress", &src, "-o", &sealed, "--engine", "emulated", "--no-fallback", "--encrypt", "--key-file", &key, "--encrypt-block-size", "16K"]).args(&common)).ok();
        let back = d.join(format!("back{size}"));
        run(&mut pp(args!["decompress", "--ec", &sealed, "--key-file", &key, "-o", &back])).ok();
        assert_file_eq(&back, &std::fs::read(&src).unwrap(), "sealed and coded on the device, restored on the CPU");
        let (enc, gz, want) = (d.join(format!("e{size}.ppenc")), d.join(format!("e{size}.gz")), d.join(format!("w{size}.gz")));
        run(&mut pp(args!["ec", "decode", &sealed, "-o", &enc])).ok();
        run(&mut pp(args!["decrypt", &enc, "--key-file", &key, "-o", &gz])).ok();
        run(&mut pp(args!["ec", "decode", &cpu, "-o", &want])).ok();
        assert_file_eq(&gz, &std::fs::read(&want).unwrap(), "the device's sealed members are the CPU's");
    }
    let src = d.join("s200000");
    let o = run(&mut pp(args!["compress", &src, "--ec", "2+1", "-o", d.join("odd"), "--engine", "emulated", "--block-size", "1000"])).ok();
    assert!(o.stderr.contains("FALLBACK") && o.stderr.contains("multiple of 4K"), "{}", o.stderr);
    run(&mut pp(args!["compress", &src, "--ec", "2+1", "-o", d.join("odd2"), "--engine", "emulated", "--block-size", "1000", "--no-fallback"])).fails(15, &["multiple of 4K"]);
    assert!(!d.join("odd2").exists());
}

/// The reverse chain in an emulated CSP's memory (`decompress --ec
/// --engine emulated`): units read into it and checked against the
/// manifest there, lost or corrupt ones rebuilt there, blocks opened and
/// members decoded there; the source back, byte for byte, from whatever
/// the code allows to survive. Tampered blocks, corrupt members, a wrong
/// key and too many losses are the CPU's errors, with nothing written.
#[test]
fn the_reverse_chain_runs_in_an_emulated_csps_memory() {
    let dir = scratch();
    let d = dir.path();
    let key = d.join("key");
    run(&mut pp(args!["keygen", "-o", &key])).ok();
    let decode = |set: &Path, out: &Path, extra: &[&str]| {
        let mut c = pp(args!["decompress", "--ec", set, "-o", out, "--engine", "emulated", "--no-fallback"]);
        c.args(extra);
        run(&mut c)
    };
    for (size, ec, unit) in [(0usize, "2+1", "4K"), (200_000, "3+2", "4K"), (2_500_001, "4+2", "64K"), (300_000, "3+2", "1000")] {
        let src = d.join(format!("s{size}"));
        std::fs::write(&src, mixed_data(size, size as u64 + 21)).unwrap();
        let want = std::fs::read(&src).unwrap();
        let (plain, sealed) = (d.join(format!("plain{size}")), d.join(format!("sealed{size}")));
        let common = args!["--ec", ec, "--ec-unit", unit, "--block-size", "64K"];
        run(pp(args!["compress", &src, "-o", &plain]).args(&common)).ok();
        run(pp(args!["compress", &src, "-o", &sealed, "--encrypt", "--key-file", &key, "--encrypt-block-size", "16K"]).args(&common)).ok();
        for (set, extra) in [(&plain, vec![]), (&sealed, vec!["--key-file", key.to_str().unwrap()])] {
            let back = d.join("back");
            let o = decode(set, &back, &[&extra[..], &["-f"]].concat()).ok();
            assert!(o.stdout_str().contains("measured on emulated devices"), "{}", o.stdout_str());
            assert_metadata_only(&o.stdout_str());
            assert!(o.stdout_str().contains("stages on the device") && o.stdout_str().contains("gzip decompress member"), "each stage's figures: {}", o.stdout_str());
            let o = run(pp(args!["decompress", "--ec", set, "-o", &back, "-f"]).args(&extra)).ok();
            assert!(o.stdout_str().contains("stages on this host's CPU") && o.stdout_str().contains("inflate"), "each stage's figures: {}", o.stdout_str());
            assert_file_eq(&back, &want, "decoded on the device, nothing lost");
            // As many units lost as the code allows: a shard gone, others corrupt in places.
            let names = shards(set);
            let parity: usize = ec.split('+').nth(1).unwrap().parse().unwrap();
            std::fs::remove_file(set.join(&names[1].0)).unwrap();
            if parity > 1 {
                let mut bytes = names[0].1.clone();
                let at = bytes.len() / 2;
                bytes[at] ^= 0x40;
                std::fs::write(set.join(&names[0].0), bytes).unwrap();
            }
            let o = decode(set, &back, &[&extra[..], &["-f"]].concat()).ok();
            assert_file_eq(&back, &want, "rebuilt on the device");
            assert!(size == 0 || o.stdout_str().contains("rebuilt on the device"), "{}", o.stdout_str());
            // One more lost than the code allows: the CPU's error, nothing written.
            let never = d.join("never");
            let lost = |s: &Path| {
                for (name, _) in shards(s).iter().take(parity) {
                    let _ = std::fs::remove_file(s.join(name));
                }
            };
            lost(set);
            let o = decode(set, &never, &extra).fails(6, &["cannot be rebuilt"]);
            let cpu = run(pp(args!["decompress", "--ec", set, "-o", &never]).args(&extra));
            assert_eq!(cpu.stderr, o.stderr, "the CPU's words");
            assert!(!never.exists());
        }
    }
    // A tampered block and a corrupt member that the erasure code cannot
    // see (coded after the damage): refused as the CPU refuses them.
    let src = d.join("s200000");
    let enc = d.join("t.ppenc");
    run(&mut pp(args!["compress", &src, "--encrypt", "--key-file", &key, "--encrypt-block-size", "16K", "--block-size", "64K", "-o", &enc])).ok();
    let gz = d.join("t.gz");
    run(&mut pp(args!["compress", &src, "--block-size", "64K", "-o", &gz])).ok();
    for (file, at, extra, words) in [(&enc, 20_000usize, vec!["--key-file", key.to_str().unwrap()], "block 1"), (&gz, 30_000, vec![], "corrupt")] {
        let mut bytes = std::fs::read(file).unwrap();
        bytes[at] ^= 0x01;
        let bad = d.join("bad");
        std::fs::write(&bad, &bytes).unwrap();
        let set = d.join(format!("bad-{}", file.file_name().unwrap().to_str().unwrap()));
        run(&mut pp(args!["ec", "encode", &bad, "-k", "3", "-m", "1", "--unit", "4K", "-o", &set])).ok();
        let never = d.join("never");
        let cpu = run(pp(args!["decompress", "--ec", &set, "-o", &never]).args(&extra));
        let dev = decode(&set, &never, &extra);
        assert!(dev.code() == cpu.code() && dev.code() != Some(0) && dev.stderr.contains(words), "device: {} / CPU: {}", dev.stderr, cpu.stderr);
        assert!(!never.exists());
    }
    // A stream cut short (inside a member, inside an encrypted block): truncated, exit 7, on
    // the device as on the CPU (the device said 6, damaged).
    for (file, extra) in [(&enc, vec!["--key-file", key.to_str().unwrap()]), (&gz, vec![])] {
        let bytes = std::fs::read(file).unwrap();
        let cut = d.join("cut");
        std::fs::write(&cut, &bytes[..bytes.len() * 2 / 3]).unwrap();
        let set = d.join(format!("cut-{}", file.file_name().unwrap().to_str().unwrap()));
        run(&mut pp(args!["ec", "encode", &cut, "-k", "3", "-m", "1", "--unit", "4K", "-o", &set])).ok();
        let never = d.join("never");
        run(pp(args!["decompress", "--ec", &set, "-o", &never]).args(&extra)).fails(7, &["truncated"]);
        decode(&set, &never, &extra).fails(7, &["truncated"]);
        assert!(!never.exists());
    }
    // Two corrupt members, with members inflating side by side (4 device
    // workers): the first in the stream is the one named, as on the CPU.
    let mut bytes = std::fs::read(&gz).unwrap();
    let n = bytes.len();
    bytes[n / 3] ^= 0x01;
    bytes[2 * n / 3] ^= 0x01;
    std::fs::write(d.join("bad2"), &bytes).unwrap();
    let set = d.join("bad2-set");
    run(&mut pp(args!["ec", "encode", d.join("bad2"), "-k", "3", "-m", "1", "--unit", "4K", "-o", &set])).ok();
    let never = d.join("never");
    let cpu = run(&mut pp(args!["decompress", "--ec", &set, "-o", &never])).fails(6, &["CRC-32"]);
    let member: u64 = cpu.stderr.split("member ").nth(1).and_then(|r| r.split(' ').next()).and_then(|m| m.parse().ok()).unwrap_or_else(|| panic!("{}", cpu.stderr));
    decode(&set, &never, &["-T", "4"]).fails(6, &[&format!("the member at output byte {} is corrupt", member * 65536)]);
    assert!(!never.exists());
    // The wrong key: refused before anything is written.
    let other = d.join("other");
    run(&mut pp(args!["keygen", "-o", &other])).ok();
    let set = d.join("k");
    run(&mut pp(args!["ec", "encode", &enc, "-k", "2", "-m", "1", "--unit", "4K", "-o", &set])).ok();
    let o = decode(&set, &d.join("never"), &["--key-file", other.to_str().unwrap()]);
    assert!(o.code() != Some(0) && o.stderr.contains("key"), "{}", o.stderr);
    assert!(!d.join("never").exists());
    // A set of a gzip file whose member declares no sizes (one stored block):
    // the CPU decodes it, the device path says it cannot, and writes nothing.
    let mut plain = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 1, 5, 0, 0xfa, 0xff];
    plain.extend_from_slice(b"hello");
    plain.extend_from_slice(&crc32fast::hash(b"hello").to_le_bytes());
    plain.extend_from_slice(&5u32.to_le_bytes());
    std::fs::write(d.join("plain.gz"), &plain).unwrap();
    let set = d.join("unsized");
    run(&mut pp(args!["ec", "encode", d.join("plain.gz"), "-k", "2", "-m", "1", "--unit", "4K", "-o", &set])).ok();
    run(&mut pp(args!["decompress", "--ec", &set, "-o", d.join("hello")])).ok();
    assert_eq!(std::fs::read(d.join("hello")).unwrap(), b"hello");
    decode(&set, &d.join("never"), &[]).fails(15, &["declare no sizes", "--engine cpu"]);
    assert!(!d.join("never").exists());
    // Other files: the emulated decoder takes shard sets only so far.
    run(&mut pp(args!["decompress", &gz, "-o", d.join("x"), "--engine", "emulated"])).fails(2, &["shard sets only"]);
}

/// Faults in the chain on an emulated CSP, handled as compression's are:
/// a device that dies mid-chain (SIGKILL after some commands) is a said
/// fallback, and the host CPU does the whole job (the device held the
/// first stripe and the blocks being filled), with the CPU's output;
/// `--no-fallback` makes it exit 15 with nothing kept. A full shard or
/// output target is exit 11 with nothing kept, as for every target.
#[test]
fn a_device_that_dies_mid_chain_hands_the_job_to_the_cpu_and_a_full_target_keeps_nothing() {
    let dir = scratch();
    let d = dir.path();
    let src = d.join("src");
    let want = mixed_data(2_500_001, 5);
    std::fs::write(&src, &want).unwrap();
    let common = args!["--ec", "4+2", "--ec-unit", "64K", "--block-size", "64K"];
    let cpu = d.join("cpu");
    run(pp(args!["compress", &src, "-o", &cpu]).args(&common)).ok();
    // Forward: crash after 30 commands (of ~100: mid-chain).
    let dev = d.join("dev");
    let faults = args!["--engine", "emulated", "--inject-faults", "seed=1,crash-after=30"];
    let o = run(pp(args!["compress", &src, "-o", &dev]).args(&common).args(&faults)).ok();
    assert!(o.stderr.contains("FALLBACK") && o.stderr.contains("restarts on the host CPU"), "{}", o.stderr);
    let set = |p: &Path| shards(p).into_iter().chain([("manifest.json".to_string(), std::fs::read(p.join("manifest.json")).unwrap())]).collect::<Vec<_>>();
    assert!(set(&cpu) == set(&dev), "the CPU's set after the device died");
    let never = d.join("never");
    run(pp(args!["compress", &src, "-o", &never, "--no-fallback"]).args(&common).args(&faults)).fails(15, &["no-fallback", "nothing was kept"]);
    assert_dir_holds(d, &["cpu", "dev", "src"]);
    run(pp(args!["compress", &src, "-o", &never, "--inject-faults", "seed=1,corrupt=0.5", "--engine", "emulated"]).args(&common)).fails(2, &["corrupt="]);
    run(pp(args!["compress", &src, "-o", &never, "--inject-faults", "seed=1,crash-after=3"]).args(&common)).fails(2, &["--engine emulated"]);
    // Reverse: the same, from the CPU's set.
    let back = d.join("back");
    let o = run(&mut pp(args!["decompress", "--ec", &cpu, "-o", &back, "--engine", "emulated", "--inject-faults", "seed=1,crash-after=20"])).ok();
    assert!(o.stderr.contains("FALLBACK") && o.stderr.contains("decoded on the host CPU from the start"), "{}", o.stderr);
    assert_file_eq(&back, &want, "decoded on the CPU after the device died");
    run(&mut pp(args!["decompress", "--ec", &cpu, "-o", &never, "--engine", "emulated", "--no-fallback", "--inject-faults", "seed=1,crash-after=20"])).fails(15, &["no-fallback", "nothing was kept"]);
    run(&mut pp(args!["decompress", "--ec", &cpu, "-o", &never, "--inject-faults", "seed=1,crash-after=20"])).fails(2, &["--ec --engine emulated"]);
    assert_dir_holds(d, &["back", "cpu", "dev", "src"]);
    // Full targets: the device's shards, and the device's output.
    let Some(fs) = TmpfsMount::new("a_device_that_dies_mid_chain_hands_the_job_to_the_cpu_and_a_full_target_keeps_nothing", "1m") else { return };
    let incompressible = d.join("random");
    std::fs::write(&incompressible, random_bytes(3_000_000, 9)).unwrap();
    run(pp(args!["compress", &incompressible, "-o", fs.dir.join("set"), "--engine", "emulated", "--no-fallback"]).args(&common)).fails(11, &["No space left", "nothing was kept"]);
    assert_dir_holds(&fs.dir, &[]);
    let big = d.join("bigset");
    run(pp(args!["compress", &incompressible, "-o", &big]).args(&common)).ok();
    run(&mut pp(args!["decompress", "--ec", &big, "-o", fs.dir.join("random"), "--engine", "emulated", "--no-fallback"])).fails(11, &["No space left", "nothing was kept"]);
    assert_dir_holds(&fs.dir, &[]);
}

/// A device that stops answering mid-chain (frozen after some commands) is
/// declared hung after `--device-timeout`, both ways, and the host CPU does
/// the job; the option is the devices', so it is a usage error without one.
#[test]
fn a_device_that_hangs_mid_chain_is_timed_out_and_the_cpu_does_the_job() {
    let dir = scratch();
    let d = dir.path();
    let src = d.join("src");
    let want = mixed_data(2_500_001, 6);
    std::fs::write(&src, &want).unwrap();
    let common = args!["--ec", "4+2", "--ec-unit", "64K", "--block-size", "64K"];
    let cpu = d.join("cpu");
    run(pp(args!["compress", &src, "-o", &cpu]).args(&common)).ok();
    let started = std::time::Instant::now();
    let dev = d.join("dev");
    let o = run(pp(args!["compress", &src, "-o", &dev, "--engine", "emulated", "--inject-faults", "seed=1,hang-after=30", "--device-timeout", "0.5"]).args(&common)).ok();
    assert!(o.stderr.contains("FALLBACK") && o.stderr.contains("timed out"), "{}", o.stderr);
    assert_file_eq(&dev.join("manifest.json"), &std::fs::read(cpu.join("manifest.json")).unwrap(), "the CPU's set after the device hung");
    let back = d.join("back");
    let o = run(&mut pp(args!["decompress", "--ec", &cpu, "-o", &back, "--engine", "emulated", "--inject-faults", "seed=1,hang-after=20", "--device-timeout", "0.5"])).ok();
    assert!(o.stderr.contains("FALLBACK") && o.stderr.contains("timed out"), "{}", o.stderr);
    assert_file_eq(&back, &want, "decoded on the CPU after the device hung");
    // Two hangs of 0.5 s, not the default 10 s each (generous for a slow machine).
    assert!(started.elapsed() < std::time::Duration::from_secs(18), "{:?}", started.elapsed());
    let never = d.join("never");
    run(pp(args!["compress", &src, "-o", &never, "--device-timeout", "1"]).args(&common)).fails(2, &["--device-timeout", "--engine emulated or gpu"]);
    run(&mut pp(args!["decompress", "--ec", &cpu, "-o", &never, "--device-timeout", "1"])).fails(2, &["--device-timeout", "--engine gpu or emulated"]);
    assert_dir_holds(d, &["back", "cpu", "dev", "src"]);
}

#[test]
fn a_restored_file_never_replaces_a_file_of_its_set_even_with_force() {
    let dir = scratch();
    let d = dir.path();
    let src = d.join("s");
    std::fs::write(&src, random_bytes(300_000, 41)).unwrap();
    let set = d.join("set");
    assert_eq!(run(&mut pp(args!["ec", "encode", &src, "-k", "4", "-m", "2", "-o", &set, "--unit", "16K"])).code(), Some(0));
    let drives: Vec<PathBuf> = (0..6).map(|i| d.join(format!("drive{i}"))).collect();
    let placed = d.join("placed");
    let mut encode = pp(args!["ec", "encode", &src, "-k", "4", "-m", "2", "-o", &placed, "--unit", "16K"]);
    for p in &drives {
        std::fs::create_dir(p).unwrap();
        encode.arg("--shard-dir").arg(p);
    }
    assert_eq!(run(&mut encode).code(), Some(0));
    let chain = d.join("chain");
    // -q: no report, on the CPU and on an emulated CSP, both ways.
    let o = run(&mut pp(args!["compress", "-q", &src, "--ec", "4+2", "--ec-unit", "16K", "-o", &chain])).ok();
    assert!(o.stdout.is_empty(), "{}", o.stdout_str());
    let quiet = d.join("quiet");
    assert!(run(&mut pp(args!["compress", "-q", &src, "--ec", "4+2", "--ec-unit", "16K", "--engine", "emulated", "-o", &quiet])).ok().stdout.is_empty());
    for engine in ["cpu", "emulated"] {
        let back = d.join(format!("back-{engine}"));
        assert!(run(&mut pp(args!["decompress", "-q", "--ec", &chain, "--engine", engine, "-o", &back])).ok().stdout.is_empty());
        assert_eq!(std::fs::read(&back).unwrap(), std::fs::read(&src).unwrap());
        std::fs::remove_file(&back).unwrap();
    }
    std::fs::remove_dir_all(&quiet).unwrap();
    let before = snapshot(d);
    // Through another name of the set's directory too: a symbolic link.
    std::os::unix::fs::symlink(&set, d.join("alias")).unwrap();
    let cases: Vec<(Vec<std::ffi::OsString>, PathBuf)> = vec![
        (args!["ec", "decode", "-f", &set], set.join("manifest.json")),
        (args!["ec", "decode", "-f", &set], set.join("shard-003")),
        (args!["ec", "decode", "-f", &set], d.join("alias").join("shard-000")),
        (args!["ec", "decode", "-f", &placed], drives[2].join("placed.shard-002")),
        (args!["ec", "decode", "-f", drives[3].join("placed.manifest.json")], drives[1].join("placed.manifest.json")),
        (args!["ec", "decode", "-f", &placed], placed.join("manifest.json")),
        (args!["decompress", "--ec", "-f", &chain], chain.join("shard-000")),
        (args!["decompress", "--ec", "-f", "--engine", "emulated", &chain], chain.join("shard-001")),
    ];
    for (mut a, target) in cases {
        a.extend(args!["-o", &target]);
        let o = run(&mut pp(a.clone()));
        assert_eq!(o.code(), Some(5), "{a:?}: {}", o.stderr);
        assert!(o.stderr.contains("is a file of the set") && o.stderr.contains("never a target"), "{}", o.stderr);
    }
    std::fs::remove_file(d.join("alias")).unwrap();
    assert_eq!(snapshot(d), before, "every file of every set as it was");
    // A new file in the set's directory is no file of the set.
    let beside = set.join("restored");
    assert_eq!(run(&mut pp(args!["ec", "decode", &set, "-o", &beside])).code(), Some(0));
    assert_eq!(std::fs::read(&beside).unwrap(), std::fs::read(&src).unwrap());
}

/// A unit rebuilt from survivors that all check out but whose CRC-32 is
/// still not the manifest's (here: the manifest's checksum was changed) is
/// an error, not a repair: before, `repair` said it rebuilt the shard,
/// wrote the same bytes back, and `verify` found it damaged again, forever.
#[test]
fn a_rebuilt_unit_that_does_not_match_the_manifest_is_an_error_and_nothing_is_written() {
    let dir = scratch();
    let d = dir.path();
    let src = d.join("s");
    std::fs::write(&src, random_bytes(100_000, 43)).unwrap();
    let set = d.join("set");
    assert_eq!(run(&mut pp(args!["ec", "encode", &src, "-k", "4", "-m", "2", "-o", &set, "--unit", "16K"])).code(), Some(0));
    let path = set.join("manifest.json");
    let mut m: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let crc = m["shards"][0]["crc32"][1].as_u64().unwrap();
    m["shards"][0]["crc32"][1] = serde_json::json!(crc ^ 1);
    // Made before the source's CRC-32 (which would find the change as the manifest is read).
    m.as_object_mut().unwrap().remove("source_crc32").unwrap();
    std::fs::write(&path, serde_json::to_vec(&m).unwrap()).unwrap();
    let before = snapshot(&set);
    let out = d.join("out");
    // And a set the chain made (compress --ec), read back by decompress --ec.
    let chain = d.join("chain");
    assert_eq!(run(&mut pp(args!["compress", "-q", &src, "--ec", "4+2", "--ec-unit", "16K", "-o", &chain])).code(), Some(0));
    let chain_manifest = chain.join("manifest.json");
    let mut c: serde_json::Value = serde_json::from_slice(&std::fs::read(&chain_manifest).unwrap()).unwrap();
    let crc = c["shards"][0]["crc32"][1].as_u64().unwrap();
    c["shards"][0]["crc32"][1] = serde_json::json!(crc ^ 1);
    c.as_object_mut().unwrap().remove("source_crc32").unwrap();
    std::fs::write(&chain_manifest, serde_json::to_vec(&c).unwrap()).unwrap();
    for (a, engine) in [(args!["ec", "repair", &set], "cpu"), (args!["ec", "decode", &set, "-o", &out], "cpu"), (args!["decompress", "--ec", &chain, "-o", &out], "cpu"), (args!["ec", "repair", &set, "--engine", "emulated"], "emulated"), (args!["ec", "decode", &set, "-o", &out, "--engine", "emulated"], "emulated")] {
        let o = run(&mut pp(a.clone()));
        assert_eq!(o.code(), Some(6), "{a:?} ({engine}): {}", o.stderr);
        assert!(o.stderr.contains("shard-000's unit of stripe 1, rebuilt from units that check out, does not match the manifest's CRC-32"), "{}", o.stderr);
        assert!(!out.exists());
    }
    let after = snapshot(&set);
    assert_eq!(after, before, "the set as it was");
    let v = run(&mut pp(args!["ec", "verify", &set]));
    assert_eq!(v.code(), Some(6), "{}", v.stderr);
}

/// A full target is the target's error (exit 11), not a read error on the set.
#[test]
fn decompress_ec_onto_a_full_file_system_is_exit_11_and_keeps_nothing() {
    let test = "decompress_ec_onto_a_full_file_system_is_exit_11_and_keeps_nothing";
    let Some(fs) = TmpfsMount::new(test, "1m") else { return };
    let dir = scratch();
    let d = dir.path();
    let src = d.join("s");
    std::fs::write(&src, random_bytes(3_000_000, 44)).unwrap();
    let chain = d.join("chain");
    run(&mut pp(args!["compress", "-q", &src, "--ec", "4+2", "-o", &chain])).ok();
    for engine in ["cpu", "emulated"] {
        run(&mut pp(args!["decompress", "-q", "--ec", &chain, "--engine", engine, "-o", fs.dir.join("out")])).fails(11, &["cannot write", "No space left", "nothing was kept"]);
        assert_dir_holds(&fs.dir, &[]);
    }
}

/// One drive of a placed set fills up: the error names the shard on that
/// drive (its path once in place, not the set's name), exit 11, and no
/// drive keeps anything, on the CPU and on an emulated CSP, for `ec encode`
/// and for the compress chain.
#[test]
fn a_full_drive_among_the_shard_directories_is_named_and_nothing_is_kept() {
    let Some(fs) = TmpfsMount::new("a_full_drive_among_the_shard_directories_is_named_and_nothing_is_kept", "1m") else { return };
    let dir = scratch();
    let d = dir.path();
    let src = d.join("src");
    std::fs::write(&src, random_bytes(6_000_000, 5)).unwrap();
    let drives = [d.join("ssd0"), d.join("ssd1"), fs.dir.clone()];
    drives[..2].iter().for_each(|p| std::fs::create_dir(p).unwrap());
    let full = fs.dir.canonicalize().unwrap();
    for engine in ["cpu", "emulated"] {
        for (what, set) in [("ec", "eset"), ("chain", "cset")] {
            let mut c = match what {
                "ec" => pp(args!["ec", "encode", &src, "-k", "2", "-m", "1", "-o", d.join(set), "--engine", engine]),
                _ => pp(args!["compress", &src, "--ec", "2+1", "-o", d.join(set), "--engine", engine]),
            };
            drives.iter().for_each(|p| {
                c.arg("--shard-dir").arg(p);
            });
            let shard = full.join(format!("{set}.shard-002"));
            run(&mut c).fails(11, &[&format!("cannot write {}", shard.display()), "No space left", "nothing was kept"]);
            for p in &drives {
                assert_dir_holds(p, &[]);
            }
            assert_dir_holds(d, &["src", "ssd0", "ssd1"]);
        }
    }
    // Many blocks still to read when the drive fills (64 KiB blocks): the chain's reader
    // waited for ever on a full work queue once the workers had stopped (it hung, 0 % CPU).
    let long = d.join("long");
    std::fs::write(&long, random_bytes(20_000_000, 6)).unwrap();
    for encrypt in [false, true] {
        let mut c = pp(args!["compress", &long, "--ec", "2+1", "--block-size", "64K", "-o", d.join("many")]);
        if encrypt {
            c.args(["--encrypt", "--key-env", "PP_TEST_KEY"]).env("PP_TEST_KEY", "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff");
        }
        drives.iter().for_each(|p| {
            c.arg("--shard-dir").arg(p);
        });
        run_full(&mut c, None, HANG_DEADLINE).fails(11, &["No space left", "nothing was kept"]);
        for p in &drives {
            assert_dir_holds(p, &[]);
        }
    }
}

/// The number just after `label` in a report.
fn number_after(text: &str, label: &str) -> u64 {
    let rest = text.split(label).nth(1).unwrap_or_else(|| panic!("no {label:?} in: {text}"));
    rest.split(|c: char| !c.is_ascii_digit()).next().unwrap().parse().unwrap_or_else(|_| panic!("{label:?} in: {text}"))
}

/// The number just before `label` in a report.
fn number_before(text: &str, label: &str) -> u64 {
    let head = text.split(label).next().unwrap();
    head.rsplit(|c: char| !c.is_ascii_digit()).next().unwrap().parse().unwrap_or_else(|_| panic!("{label:?} in: {text}"))
}

/// `--json` on the chain both ways (a `chain-report`, a `reverse-chain-report`):
/// what the text says, as numbers (members, stripes, the stream's length, the
/// ledger), encryption said on or off and nothing of the key; on an emulated
/// CSP the device, its measured host copies and each function's figures; a
/// device that cannot run it in the fallbacks; errors keep their exit codes
/// and print no report.
#[test]
fn the_chain_reports_json_as_its_text_says() {
    let dir = scratch();
    let d = dir.path();
    let key = d.join("key");
    run(&mut pp(args!["keygen", "-o", &key])).ok();
    let src = d.join("src");
    let data = mixed_data(2_500_001, 17);
    std::fs::write(&src, &data).unwrap();
    let common = args!["--ec", "4+2", "--ec-unit", "64K", "--block-size", "64K"];
    let chain = |out: &Path, extra: &[&str]| {
        let mut c = pp(args!["compress", &src, "-o", out]);
        c.args(&common).args(extra);
        run(&mut c).ok()
    };
    // On the CPU: the text's figures (the same members either way).
    let text = chain(&d.join("t"), &[]).stdout_str();
    let j = d.join("j");
    let v = chain(&j, &["--json"]).json();
    let members = number_before(&text, " members,");
    let stripes = number_before(&text, " stripes of");
    // The compress stage's seconds are summed over its threads (its rate is a thread's), as the
    // reverse's inflate says (it read "compress 0.144 s on 2 threads", as if that were the time).
    assert!(text.split("; compress ").nth(1).is_some_and(|t| t.split(';').next().unwrap().contains(" s summed over ")), "{text}");
    let stream = number_after(&text, "gives back the ");
    assert_eq!((v["members"].as_u64(), v["stripes"].as_u64(), v["stream_bytes"].as_u64(), v["stream_name"].as_str()), (Some(members), Some(stripes), Some(stream), Some("src.gz")), "{text}\n{v}");
    assert_eq!((v["encrypted"].as_bool(), v["encryption"].is_null(), v["engine"].as_str(), v["device"].is_null(), v["provenance"].as_str()), (Some(false), true, Some("cpu"), true, Some("measured on this host's CPU")), "{v}");
    assert_eq!((v["code"].as_str(), v["unit_bytes"].as_u64(), v["source_bytes"].as_u64(), v["compressed_bytes"].as_u64()), (Some("RS(4, 2)"), Some(65536), Some(data.len() as u64), Some(stream)), "{v}");
    assert_eq!(members, (data.len() as u64).div_ceil(64 << 10));
    let verdict = run(&mut pp(args!["ec", "verify", &j, "--json"])).ok().json();
    assert_eq!(verdict["stripes"], v["stripes"]);
    let shard_bytes: u64 = v["shards"].as_array().unwrap().iter().map(|p| std::fs::metadata(p.as_str().unwrap()).unwrap().len()).sum();
    assert_eq!(shard_bytes, stripes * 6 * 65536);
    let ledger = |v: &serde_json::Value| -> Vec<(String, String, u64)> { v["ledger"].as_array().unwrap().iter().map(|m| (m["memory"].as_str().unwrap().to_string(), m["what"].as_str().unwrap().to_string(), m["bytes"].as_u64().unwrap())).collect() };
    let e = |m: &str, w: &str, b: u64| (m.to_string(), w.to_string(), b);
    assert_eq!(ledger(&v), vec![e("host", "source read", data.len() as u64), e("host", "members", stream), e("host", "shards written", shard_bytes)]);
    let stages: Vec<&str> = v["host_stages"].as_array().unwrap().iter().map(|s| s["stage"].as_str().unwrap()).collect();
    assert_eq!(stages, ["read", "compress", "erasure code"], "no seal stage without --encrypt");
    assert_eq!(v["host_stages"][1]["threads"], v["threads"]);
    let r = run(&mut pp(args!["decompress", "--ec", &j, "-o", d.join("back"), "--json"])).ok().json();
    assert_file_eq(&d.join("back"), &data, "decompress --ec --json");
    assert_eq!((r["output_bytes"].as_u64(), r["stream_bytes"].as_u64(), r["encrypted"].as_bool(), r["members"].is_null(), r["engine"].as_str()), (Some(data.len() as u64), Some(stream), Some(false), true, Some("cpu")), "{r}");
    // Sealed: said, with its blocks, and nothing of the key.
    let sealed = d.join("s");
    let out = chain(&sealed, &["--encrypt", "--key-file", key.to_str().unwrap(), "--encrypt-block-size", "16K", "--json"]);
    let v = out.json();
    let blocks = stream.div_ceil(16 << 10);
    assert_eq!((v["encrypted"].as_bool(), v["encryption"]["block_bytes"].as_u64(), v["encryption"]["blocks"].as_u64(), v["stream_name"].as_str()), (Some(true), Some(16384), Some(blocks), Some("src.gz.ppenc")), "{v}");
    assert_eq!(v["stream_bytes"].as_u64(), Some(72 + stream + 16 * blocks), "the header, the members and a tag a block");
    let hex = std::fs::read_to_string(&key).unwrap().trim().to_string();
    assert_eq!(hex.len(), 64);
    assert!(!out.stdout_str().to_lowercase().contains(&hex.to_lowercase()), "the key is in the report");
    let r = run(&mut pp(args!["decompress", "--ec", &sealed, "--key-file", &key, "-o", d.join("back2"), "--json"])).ok().json();
    assert_file_eq(&d.join("back2"), &data, "decompress --ec --json, sealed");
    assert_eq!(r["encrypted"].as_bool(), Some(true));
    assert_eq!(r["host_stages"].as_array().unwrap().iter().map(|s| s["stage"].as_str().unwrap()).collect::<Vec<_>>(), ["read", "open", "inflate", "write"]);
    // A rate is a number of GB/s a stage could have run at, or none (one stage of no measurable
    // time gave 2,070,805 GB/s).
    for s in r["host_stages"].as_array().unwrap() {
        let fast = s["seconds"].as_f64().unwrap() < 1e-6;
        assert!(if fast { s["gb_per_s"].is_null() } else { s["gb_per_s"].as_f64().is_some_and(|g| g < 1000.0) }, "{s}");
    }
    // On an emulated CSP: the same set (byte for byte), the device's figures as its text gives them.
    let text = chain(&d.join("et"), &["--engine", "emulated", "--no-fallback", "--device-workers", "2"]).stdout_str();
    let ej = d.join("ej");
    let v = chain(&ej, &["--engine", "emulated", "--no-fallback", "--device-workers", "2", "--json"]).json();
    let dev = &v["device"];
    assert_eq!((v["members"].as_u64(), v["stripes"].as_u64(), v["stream_bytes"].as_u64(), v["engine"].as_str()), (Some(members), Some(stripes), Some(stream), Some("emulated")), "{v}");
    assert_eq!((dev["gpu"].as_bool(), dev["workers"].as_u64(), dev["commands"].as_u64()), (Some(false), Some(number_before(&text, " workers,")), Some(number_before(&text, " commands;"))), "{text}\n{v}");
    let (copied, payload) = host_copies(&text);
    assert_eq!((dev["host_copies"]["bytes"].as_u64(), dev["host_copies"]["payload_bytes"].as_u64()), (Some(copied), Some(payload)), "{text}\n{v}");
    assert_eq!(payload, data.len() as u64);
    assert!(copied <= 4096, "metadata only: {v}");
    assert_eq!(ledger(&v), vec![e("device", "source read into device memory", data.len() as u64), e("device", "shards written from it", shard_bytes), e("host", "header from this process", 0)]);
    let compress = v["device_stages"].as_array().unwrap().iter().find(|s| s["function"] == "gzip compress member").unwrap_or_else(|| panic!("{v}"));
    // Its members: the stream but for the end member after them (34 bytes the host puts there).
    assert_eq!((compress["commands"].as_u64(), compress["input_bytes"].as_u64(), compress["output_bytes"].as_u64()), (Some(members), Some(data.len() as u64), Some(stream - 34)), "{v}");
    assert!(v["host_stages"].is_null());
    // The reverse on it, a data shard lost: a unit rebuilt a stripe.
    std::fs::remove_file(ej.join("shard-001")).unwrap();
    let r = run(&mut pp(args!["decompress", "--ec", &ej, "-o", d.join("back3"), "--engine", "emulated", "--no-fallback", "--json"])).ok().json();
    assert_file_eq(&d.join("back3"), &data, "decompress --ec --engine emulated --json");
    // The members decoded: the chain's, and the end member after them.
    assert_eq!((r["members"].as_u64(), r["units_rebuilt"].as_u64(), r["output_bytes"].as_u64(), r["engine"].as_str()), (Some(members + 1), Some(stripes), Some(data.len() as u64), Some("emulated")), "{r}");
    assert!(r["device"]["host_copies"]["bytes"].as_u64().unwrap() <= 4096 + r["device"]["host_copies"]["payload_bytes"].as_u64().unwrap() / 100, "{r}");
    // A GPU: where there is none, the CPU ran the chain, said in the fallbacks.
    let o = chain(&d.join("g"), &["--engine", "gpu", "--json"]);
    let v = o.json();
    if o.stderr.contains("FALLBACK") {
        let why = v["fallbacks"][0].as_str().unwrap_or_else(|| panic!("{v}"));
        assert!(why.starts_with("GPU 0 unavailable") && why.ends_with("the chain runs on the host CPU"), "{v}");
        assert_eq!((v["engine"].as_str(), v["device"].is_null()), (Some("cpu"), true), "{v}");
    } else {
        assert_eq!((v["engine"].as_str(), v["device"]["gpu"].as_bool(), v["fallbacks"].as_array().map(Vec::len)), (Some("gpu"), Some(true), Some(0)), "{v}");
    }
    // Errors keep their exit codes, with no report: an existing set, an existing output.
    let mut c = pp(args!["compress", &src, "-o", &j, "--json"]);
    assert!(run(c.args(&common)).fails(4, &["j"]).stdout.is_empty());
    assert!(run(&mut pp(args!["decompress", "--ec", &j, "-o", d.join("back"), "--json"])).fails(4, &["back"]).stdout.is_empty());
    run(pp(args!["compress", &src, "-o", d.join("v"), "--verify", "--json"]).args(&common)).fails(2, &["--verify"]);
    assert!(!d.join("v").exists());
}

/// `-q` on every `ec` command and on `dedup store`, `restore` and `verify`, as on compress and
/// decompress: nothing on standard output when all is well, the same exit codes and files, and
/// errors (damage among them) still said on standard error; with --json, a usage error.
#[test]
fn quiet_commands_print_nothing_but_errors() {
    let dir = scratch();
    let d = dir.path();
    let src = d.join("s");
    std::fs::write(&src, random_bytes(300_000, 5)).unwrap();
    let set = d.join("set");
    let quiet = |cmd: Vec<std::ffi::OsString>| {
        let o = run(&mut pp(cmd)).ok();
        assert!(o.stdout.is_empty() && o.stderr.is_empty(), "{}", o.describe());
    };
    quiet(args!["ec", "encode", &src, "-k", "3", "-m", "2", "--unit", "16K", "-o", &set, "-q"]);
    quiet(args!["ec", "verify", &set, "-q"]);
    quiet(args!["ec", "repair", &set, "-q"]);
    let first = shards(&set)[0].0.clone();
    std::fs::remove_file(set.join(&first)).unwrap();
    run(&mut pp(args!["ec", "verify", &set, "-q"])).fails(6, &["repairable"]);
    quiet(args!["ec", "decode", &set, "-o", d.join("back"), "-q"]);
    assert_file_eq(&d.join("back"), &std::fs::read(&src).unwrap(), "decoded quietly");
    quiet(args!["ec", "repair", &set, "-q"]);
    assert!(set.join(&first).exists(), "repaired quietly");
    let store = d.join("st");
    quiet(args!["dedup", "store", &src, "--store", &store, "-q"]);
    quiet(args!["dedup", "verify", "--store", &store, "-q"]);
    quiet(args!["dedup", "restore", &src, "--store", &store, "-o", d.join("r"), "-q"]);
    assert_file_eq(&d.join("r"), &std::fs::read(&src).unwrap(), "restored quietly");
    for cmd in [args!["ec", "encode", &src, "-k", "3", "-m", "2", "-o", d.join("set2"), "-q", "--json"], args!["ec", "verify", &set, "-q", "--json"], args!["dedup", "store", &src, "--store", d.join("st2"), "-q", "--json"]] {
        let o = run(&mut pp(cmd));
        assert!(o.code() == Some(2) && o.stderr.contains("'--quiet' cannot be used with '--json'"), "{}", o.describe());
    }
}

/// A placed set whose given manifest (one copy) is damaged, the others sound: repair refuses
/// it and writes nothing (it copied the damage over every good copy, exit 0); a file that holds
/// the set's manifest is never a decode's target, even read through a copy (exit 5); a FIFO in
/// a shard's place is a missing shard, not a wait for ever; bytes that are not text in the
/// manifest are damage (6), not an unreadable file (3).
#[test]
fn a_damaged_manifest_copy_is_never_spread_and_the_set_s_files_are_never_targets() {
    let dir = scratch();
    let d = dir.path();
    let src = d.join("src");
    std::fs::write(&src, random_bytes(300_001, 23)).unwrap();
    let drives: Vec<PathBuf> = (0..6).map(|i| d.join(format!("d{i}"))).collect();
    drives.iter().for_each(|p| std::fs::create_dir(p).unwrap());
    let set = d.join("pset");
    let mut c = pp(args!["ec", "encode", &src, "-k", "4", "-m", "2", "--unit", "16K", "-o", &set, "-q"]);
    drives.iter().for_each(|p| {
        c.arg("--shard-dir").arg(p);
    });
    run(&mut c).ok();
    let copy0 = drives[0].join("pset.manifest.json");
    let good = std::fs::read_to_string(&copy0).unwrap();
    // A copy whose length was changed, without the source's CRC-32 that would give it away as it is read.
    std::fs::write(&copy0, without_source_crc(&good).replace("\"source_bytes\": 300001", "\"source_bytes\": 299001")).unwrap();
    let before: Vec<_> = drives.iter().map(|p| snapshot(p)).collect();
    run(&mut pp(args!["ec", "repair", &copy0])).fails(6, &["the manifest is damaged", "nothing was repaired"]);
    assert!(drives.iter().map(|p| snapshot(p)).collect::<Vec<_>>() == before, "repair wrote with a damaged manifest");
    // From a sound copy, the damaged one is written back.
    run(&mut pp(args!["ec", "repair", drives[1].join("pset.manifest.json"), "-q"])).ok();
    assert_eq!(std::fs::read_to_string(&copy0).unwrap(), good);

    // The set's own manifest as a target, named through a copy: refused even with --force.
    let main = set.join("manifest.json");
    run(&mut pp(args!["ec", "decode", &copy0, "-o", &main, "--force"])).fails(5, &["holds the set's manifest"]);
    assert_eq!(std::fs::read_to_string(&main).unwrap(), good);

    // A FIFO where a shard was: missing, repairable; verify ends.
    let shard = drives[2].join("pset.shard-002");
    std::fs::remove_file(&shard).unwrap();
    assert!(std::process::Command::new("mkfifo").arg(&shard).status().unwrap().success());
    run_full(&mut pp(args!["ec", "verify", &set]), None, DEADLINE).fails(6, &["pset.shard-002", "repairable"]);
    run_full(&mut pp(args!["ec", "decode", &set, "-o", d.join("back")]), None, DEADLINE).ok();
    assert_file_eq(&d.join("back"), &std::fs::read(&src).unwrap(), "decoded around the FIFO");

    // Bit rot that makes the manifest no text.
    let mut bytes = std::fs::read(&main).unwrap();
    bytes.push(0xff);
    std::fs::write(&main, bytes).unwrap();
    run(&mut pp(args!["ec", "verify", &set])).fails(6, &["not UTF-8"]);
}

/// A set that cannot be made where it is asked for names the shard as it would lie in the
/// set (`x/set/shard-000`), not a name beside the set (`x/shard-000`) no one asked for; a
/// `--shard-dir` that does not exist says that each must exist.
#[test]
fn a_set_that_cannot_be_made_names_its_own_shard_and_shard_dirs_must_exist() {
    let dir = scratch();
    let d = dir.path();
    let src = d.join("src");
    std::fs::write(&src, random_bytes(100_000, 3)).unwrap();
    let file = d.join("a-file");
    std::fs::write(&file, b"not a directory").unwrap();
    let want = file.join("set").join("shard-000");
    for engine in ["cpu", "emulated"] {
        run(&mut pp(args!["ec", "encode", &src, "-k", "2", "-m", "1", "-o", file.join("set"), "--engine", engine])).fails(11, &[&format!("cannot write {}", want.display())]);
        run(&mut pp(args!["compress", &src, "--ec", "2+1", "-o", file.join("set"), "--engine", engine])).fails(11, &[&format!("cannot write {}", want.display())]);
    }
    std::fs::create_dir(d.join("s1")).unwrap();
    std::fs::create_dir(d.join("s2")).unwrap();
    let mut c = pp(args!["ec", "encode", &src, "-k", "2", "-m", "1", "-o", d.join("placed")]);
    for s in [d.join("nowhere"), d.join("s1"), d.join("s2")] {
        c.arg("--shard-dir").arg(s);
    }
    run(&mut c).fails(11, &["nowhere", "each --shard-dir must exist"]);
    assert_dir_holds(d, &["a-file", "s1", "s2", "src"]);
}

/// A FIFO or `/dev/stdout` of a pipe as the restored file is refused by its metadata (exit 2),
/// never opened: the check that the target is no file of the set opened it to read it, and
/// `ec decode` and `decompress --ec` (both engines) hung for ever.
#[test]
fn a_target_that_is_no_regular_file_is_refused_without_being_opened() {
    let dir = scratch();
    let d = dir.path();
    let src = d.join("src");
    std::fs::write(&src, random_bytes(50_000, 61)).unwrap();
    let set = d.join("set");
    run(&mut pp(args!["ec", "encode", &src, "-k", "2", "-m", "1", "--unit", "16K", "-o", &set, "-q"])).ok();
    let chain = d.join("chain");
    run(&mut pp(args!["compress", "-q", &src, "--ec", "2+1", "--ec-unit", "16K", "-o", &chain])).ok();
    let fifo = d.join("fifo");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    for target in [fifo.clone(), PathBuf::from("/dev/stdout")] {
        for (cmd, force) in [(args!["ec", "decode", &set], false), (args!["ec", "decode", &set], true), (args!["decompress", "--ec", &chain], false), (args!["decompress", "--ec", &chain, "--engine", "emulated"], true)] {
            let mut a = cmd.clone();
            a.extend(args!["-o", &target]);
            if force {
                a.push("-f".into());
            }
            run_full(&mut pp(a), None, HANG_DEADLINE).fails(2, &["not a regular file"]);
        }
    }
    assert_dir_holds(d, &["chain", "fifo", "set", "src"]);
}

/// `compress --ec` of a FIFO is refused before it is opened (the open waited for a writer for
/// ever, on both engines).
#[test]
fn a_fifo_source_of_compress_ec_is_refused_without_being_opened() {
    let dir = scratch();
    let d = dir.path();
    let fifo = d.join("fifo");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    for engine in ["cpu", "emulated"] {
        run_full(&mut pp(args!["compress", "-q", &fifo, "--ec", "2+1", "--engine", engine, "-o", d.join("set")]), None, HANG_DEADLINE).fails(2, &["not a regular file", "--ec takes a regular file"]);
    }
    assert_dir_holds(d, &["fifo"]);
}

/// `decode` and `decompress --ec` weigh the manifest's copies as `verify` and `repair` do: a
/// manifest the copies outvote is damaged (exit 6, nothing written); before, decode restored
/// from it (here a byte too many, a zero, appended).
#[test]
fn a_manifest_its_copies_outvote_is_not_restored_from() {
    let dir = scratch();
    let d = dir.path();
    let src = d.join("src");
    std::fs::write(&src, random_bytes(60_000, 62)).unwrap();
    let drives: Vec<PathBuf> = (0..3).map(|i| d.join(format!("d{i}"))).collect();
    drives.iter().for_each(|p| std::fs::create_dir(p).unwrap());
    let with_drives = |mut c: std::process::Command| {
        drives.iter().for_each(|p| {
            c.arg("--shard-dir").arg(p);
        });
        c
    };
    let set = d.join("ps");
    run(&mut with_drives(pp(args!["ec", "encode", &src, "-k", "2", "-m", "1", "--unit", "16K", "-o", &set, "-q"]))).ok();
    let chain = d.join("pc");
    run(&mut with_drives(pp(args!["compress", "-q", &src, "--ec", "2+1", "--ec-unit", "16K", "-o", &chain]))).ok();
    let text = std::fs::read_to_string(set.join("manifest.json")).unwrap();
    // Valid manifests (without the source's CRC-32, which would find the change as they are
    // read) that the copies outvote.
    std::fs::write(set.join("manifest.json"), without_source_crc(&text).replace("\"source_bytes\": 60000", "\"source_bytes\": 60001")).unwrap();
    let text = without_source_crc(&std::fs::read_to_string(chain.join("manifest.json")).unwrap());
    let bytes = number_after(&text, "\"source_bytes\": ");
    std::fs::write(chain.join("manifest.json"), text.replace(&format!("\"source_bytes\": {bytes}"), &format!("\"source_bytes\": {}", bytes + 1))).unwrap();
    // What to do is said: the copy that checks goes in the outvoted manifest's place.
    run(&mut pp(args!["ec", "verify", &set])).fails(6, &["the manifest is damaged", "`cp COPY", "ps/manifest.json`, then `peerpath ec repair ", "/ps` rewrites the others"]);
    let back = d.join("back");
    run(&mut pp(args!["ec", "decode", &set, "-o", &back])).fails(6, &["the manifest is damaged", "ps/manifest.json", "nothing was written"]);
    for engine in ["cpu", "emulated"] {
        run(&mut pp(args!["decompress", "--ec", &chain, "-o", &back, "--engine", engine])).fails(6, &["the manifest is damaged"]);
    }
    assert!(!back.exists(), "a refused decode kept its target");
    // Through a copy the copies agree with, the set restores.
    run(&mut pp(args!["ec", "decode", drives[0].join("ps.manifest.json"), "-o", &back])).ok();
    assert_file_eq(&back, &std::fs::read(&src).unwrap(), "restored through a sound copy");
    // And as the error said: that copy in the manifest's place, the set checks again.
    std::fs::copy(drives[0].join("ps.manifest.json"), set.join("manifest.json")).unwrap();
    run(&mut pp(args!["ec", "verify", &set])).ok();
}

/// `decompress --ec --engine emulated` classifies a set holding no gzip file as the CPU does:
/// an empty file (10; it wrote an empty output), not gzip (8; was 6) and trailing garbage
/// (9; was 6).
#[test]
fn the_emulated_reverse_chain_gives_the_cpus_errors_for_files_that_are_not_gzip() {
    let dir = scratch();
    let d = dir.path();
    let plain = d.join("plain");
    std::fs::write(&plain, random_bytes(30_000, 63)).unwrap();
    let gz = d.join("plain.gz");
    run(&mut pp(args!["compress", "-q", &plain, "-o", &gz])).ok();
    let mut garbage = std::fs::read(&gz).unwrap();
    garbage.extend_from_slice(b"garbage\n");
    let empty = d.join("empty");
    std::fs::write(&empty, b"").unwrap();
    let trailing = d.join("trailing");
    std::fs::write(&trailing, garbage).unwrap();
    for (file, code, words) in [(&empty, 10, "empty file"), (&plain, 8, "not a gzip file"), (&trailing, 9, "trailing garbage")] {
        let set = d.join(format!("{}.set", file.file_name().unwrap().to_string_lossy()));
        run(&mut pp(args!["ec", "encode", file, "-k", "2", "-m", "1", "--unit", "16K", "-o", &set, "-q"])).ok();
        for engine in ["cpu", "emulated"] {
            let back = d.join("back");
            run(&mut pp(args!["decompress", "--ec", &set, "-o", &back, "--engine", engine])).fails(code, &[words]);
            assert!(!back.exists(), "{engine}: a failed decode kept its target");
        }
    }
}

/// `ec verify --json` prints its report before exit 6 for a manifest that is no manifest
/// too (it printed nothing), its damage said; and a manifest found inconsistent names the
/// check it failed.
#[test]
fn verify_json_reports_a_manifest_that_cannot_be_read_and_names_the_check_that_failed() {
    let dir = scratch();
    let d = dir.path();
    let src = d.join("src");
    std::fs::write(&src, random_bytes(40_000, 64)).unwrap();
    let set = d.join("set");
    run(&mut pp(args!["ec", "encode", &src, "-k", "2", "-m", "1", "--unit", "16K", "-o", &set, "-q"])).ok();
    let good = std::fs::read_to_string(set.join("manifest.json")).unwrap();
    for (text, why) in [
        ("{".to_string(), "not an ec manifest"),
        (good.replace("\"stripes\": 2", "\"stripes\": 3"), "inconsistent manifest: stripes 3 is not what 40000 source bytes"),
        (good.replace("shard-001", "shard-002"), "inconsistent manifest: shard 1 is named \"shard-002\""),
        (good.replace("\"unit_bytes\": 16384", "\"unit_bytes\": 0"), "inconsistent manifest: unit_bytes 0"),
    ] {
        std::fs::write(set.join("manifest.json"), &text).unwrap();
        run(&mut pp(args!["ec", "verify", &set])).fails(6, &[why]);
        let o = run(&mut pp(args!["ec", "verify", &set, "--json"])).fails(6, &[why]);
        let r = o.json();
        assert_eq!(r["schema"], "peerpath/ec-verify/1", "{r}");
        assert!(r["manifest_damage"].as_str().is_some_and(|m| m.contains(why)), "{r}");
        assert_eq!((r["intact"].as_bool(), r["repairable"].as_bool(), r["code"].as_str()), (Some(false), Some(false), Some("unknown")), "{r}");
    }
}

/// A placed shard whose directory is gone (its drive lost) is not called repairable: repair
/// cannot rebuild it in place until the directory exists again, and says which it is.
#[test]
fn a_shard_directory_that_is_gone_is_named_not_called_repairable() {
    let dir = scratch();
    let d = dir.path();
    let src = d.join("src");
    std::fs::write(&src, random_bytes(40_000, 65)).unwrap();
    let drives: Vec<PathBuf> = (0..3).map(|i| d.join(format!("d{i}"))).collect();
    let set = d.join("pd");
    let mut c = pp(args!["ec", "encode", &src, "-k", "2", "-m", "1", "--unit", "16K", "-o", &set, "-q"]);
    for p in &drives {
        std::fs::create_dir(p).unwrap();
        c.arg("--shard-dir").arg(p);
    }
    run(&mut c).ok();
    std::fs::remove_dir_all(&drives[1]).unwrap();
    let gone = drives[1].canonicalize().unwrap_or_else(|_| d.canonicalize().unwrap().join("d1"));
    let gone = gone.display().to_string();
    run(&mut pp(args!["ec", "verify", &set])).fails(6, &["shard directories gone", &gone, "NOT repairable in place", "exists again"]);
    let r = run(&mut pp(args!["ec", "verify", &set, "--json"])).fails(6, &[]).json();
    assert_eq!(r["repairable"].as_bool(), Some(false), "{r}");
    assert_eq!(r["missing_shard_dirs"][0].as_str(), Some(gone.as_str()), "{r}");
    run(&mut pp(args!["ec", "repair", &set])).fails(11, &[&format!("cannot write {gone}/pd.shard-001: its directory {gone} is gone"), "nothing was repaired"]);
    // Made again (the replacement drive mounted there), the shard is rebuilt in it.
    std::fs::create_dir(&drives[1]).unwrap();
    run(&mut pp(args!["ec", "verify", &set])).fails(6, &["repairable (`peerpath ec repair "]);
    run(&mut pp(args!["ec", "repair", &set, "-q"])).ok();
    run(&mut pp(args!["ec", "verify", &set, "-q"])).ok();
}

/// Errors name what is at fault: a --shard-dir given twice (not "not a directory, not UTF-8,
/// or given twice"), a file where the set's directory would go (not "target directory ...
/// exists"), a missing parent directory (not a shard inside the set).
#[test]
fn encode_errors_name_what_is_at_fault() {
    let dir = scratch();
    let d = dir.path();
    let src = d.join("src");
    std::fs::write(&src, random_bytes(10_000, 66)).unwrap();
    let a = d.join("a");
    std::fs::create_dir(&a).unwrap();
    let mut c = pp(args!["ec", "encode", &src, "-k", "2", "-m", "1", "-o", d.join("set")]);
    for p in [&a, &d.join("a/../a"), &src] {
        c.arg("--shard-dir").arg(p);
    }
    run(&mut c).fails(2, &["given twice: it is also shard 0's directory"]);
    let mut c = pp(args!["ec", "encode", &src, "-k", "2", "-m", "1", "-o", d.join("set")]);
    for p in [&a, &src, &d.join("a/../a")] {
        c.arg("--shard-dir").arg(p);
    }
    run(&mut c).fails(2, &["src: not a directory"]);
    run(&mut pp(args!["ec", "encode", &src, "-k", "2", "-m", "1", "-o", &src])).fails(5, &["same file"]);
    let afile = d.join("afile");
    std::fs::write(&afile, b"x").unwrap();
    run(&mut pp(args!["ec", "encode", &src, "-k", "2", "-m", "1", "-o", &afile])).fails(4, &["it is a file, not a directory"]);
    let missing = d.join("nonexist").join("sub");
    for engine in ["cpu", "emulated"] {
        run(&mut pp(args!["ec", "encode", &src, "-k", "2", "-m", "1", "-o", missing.join("set"), "--engine", engine])).fails(11, &[&format!("cannot write {}: no such directory", missing.display())]);
        run(&mut pp(args!["compress", &src, "--ec", "2+1", "-o", missing.join("set"), "--engine", engine])).fails(11, &[&format!("cannot write {}: no such directory", missing.display())]);
    }
    assert_eq!(std::fs::read(&afile).unwrap(), b"x");
    assert_dir_holds(d, &["a", "afile", "src"]);
}

/// A command under `ulimit` as `sh` sets it.
fn limited(limit: &str, a: Vec<std::ffi::OsString>) -> std::process::Command {
    let mut c = std::process::Command::new("sh");
    c.arg("-c").arg(format!("ulimit {limit}; exec \"$0\" \"$@\"")).arg(bin()).args(a);
    c
}

/// A set whose stripe this machine could not decode is not made (it was, and decode aborted
/// on the allocation, SIGABRT); decode holds a stripe per thread only as far as memory
/// allows, and with room for one it restores the set on fewer threads (it aborted).
#[test]
fn stripes_are_held_only_as_far_as_memory_allows() {
    let dir = scratch();
    let d = dir.path();
    let src = d.join("src");
    // Six stripes of 8 units of 2 MiB.
    let data = random_bytes(6 * 8 * (2 << 20) - 1000, 67);
    std::fs::write(&src, &data).unwrap();
    let total_kib: u64 = std::fs::read_to_string("/proc/meminfo").unwrap().lines().find_map(|l| l.strip_prefix("MemTotal:")).unwrap().trim().trim_end_matches("kB").trim().parse().unwrap();
    // The largest code and unit: 310 units of 256 MiB held to decode a stripe. (A file size
    // limit stops an encode that goes ahead before it fills the disk.)
    if (200 + 2 * 55) * (256 << 10) > total_kib / 2 {
        let o = run(&mut limited("-f 1024", args!["ec", "encode", &src, "-k", "200", "-m", "55", "--unit", "256M", "-o", d.join("huge")]));
        o.fails(2, &["cannot be decoded on this machine", "give a smaller --unit or fewer data shards"]);
        assert!(!d.join("huge").exists());
    }
    let set = d.join("set");
    run(&mut pp(args!["ec", "encode", &src, "-k", "8", "-m", "1", "--unit", "2M", "-o", &set, "-q"])).ok();
    std::fs::remove_file(set.join("shard-003")).unwrap();
    // One thread's stripe (16 MiB), its parity and rebuilt units, and the process besides fit
    // in `least`; 40 MiB more do not hold six threads' stripes, but two or three.
    let least = least_address_space_kib(&set, d);
    let back = d.join("back");
    run(&mut limited(&format!("-v {}", least + (40 << 10)), args!["ec", "decode", &set, "-o", &back, "-T", "6"])).ok();
    assert_file_eq(&back, &data, "decoded on the threads memory allowed");
}

/// The least address space (KiB, in 8 MiB steps) in which `ec decode -T 1` restores `set`.
fn least_address_space_kib(set: &Path, d: &Path) -> u64 {
    let back = d.join("probe");
    let mut kib = 32 << 10;
    loop {
        let o = run(&mut limited(&format!("-v {kib}"), args!["ec", "decode", set, "-o", &back, "-T", "1"]));
        let _ = std::fs::remove_file(&back);
        if o.code() == Some(0) {
            return kib;
        }
        assert!(kib < 4 << 20, "ec decode -T 1 does not pass in 4 GiB of address space: {}", o.stderr);
        kib += 8 << 10;
    }
}

/// `ec encode` and `ec decode` on an emulated CSP put its memory where compress's devices put
/// theirs: with /dev/shm too small, in a file in the temporary directory (said); with no room
/// there either, the device does not start and says its memory has no room (the CPU does
/// the job, said; --no-fallback exits 15). Never a dead device, nor a read error that blames
/// the source (its memory was made resident first).
#[test]
fn ec_on_an_emulated_csp_puts_its_memory_where_it_has_room_or_says_it_has_none() {
    let test = "ec_on_an_emulated_csp_puts_its_memory_where_it_has_room_or_says_it_has_none";
    let dir = scratch();
    let d = dir.path();
    let data = mixed_data(3_000_001, 13);
    let src = d.join("s");
    std::fs::write(&src, &data).unwrap();
    let tmp = d.join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let (set, back) = (d.join("set"), d.join("back"));
    let Some(mut c) = with_small_shm(test, &tmp, None, args!["ec", "encode", &src, "-k", "4", "-m", "2", "-o", &set, "--engine", "emulated", "--no-fallback"]) else { return };
    let o = run(&mut c).ok();
    let moved = format!("memory in a file in {} (/dev/shm had less than", tmp.display());
    assert!(o.stderr.contains(&moved) && !o.stderr.contains("FALLBACK"), "{}", o.describe());
    assert!(o.stdout_str().contains("1 emulated CSP"), "{}", o.describe());
    run(&mut pp(args!["ec", "verify", &set])).ok();
    let o = run(&mut with_small_shm(test, &tmp, None, args!["ec", "decode", &set, "-o", &back, "--engine", "emulated", "--no-fallback"]).unwrap()).ok();
    assert!(o.stderr.contains(&moved) && o.stdout_str().contains("measured on emulated devices"), "{}", o.describe());
    assert_file_eq(&back, &data, "encoded and decoded with the device's memory in the temporary directory");
    assert!(names_in(&tmp).is_empty(), "the device removes its files: {:?}", names_in(&tmp));
    // No room in the temporary directory either (a 2 MiB tmpfs).
    let cpu = d.join("set.cpu");
    let o = run(&mut with_small_shm(test, &tmp, Some("2m"), args!["ec", "encode", &src, "-k", "4", "-m", "2", "-o", &cpu, "--engine", "emulated"]).unwrap()).ok();
    assert!(o.stderr.contains("FALLBACK: the emulated CSP did not start") && o.stderr.contains("device memory") && o.stderr.contains("no room for"), "{}", o.describe());
    assert_eq!(shards(&cpu), shards(&set), "the CPU's set is the device's");
    let o = run(&mut with_small_shm(test, &tmp, Some("2m"), args!["ec", "decode", &set, "-o", d.join("back.cpu"), "--engine", "emulated"]).unwrap()).ok();
    assert!(o.stderr.contains("FALLBACK: the emulated CSP did not start") && o.stderr.contains("no room for"), "{}", o.describe());
    assert_file_eq(&d.join("back.cpu"), &data, "decoded on the CPU");
    for (op, never) in [("encode", d.join("never-set")), ("decode", d.join("never"))] {
        let mut a = if op == "encode" { args!["ec", "encode", &src, "-k", "4", "-m", "2", "-o", &never] } else { args!["ec", "decode", &set, "-o", &never] };
        a.extend(args!["--engine", "emulated", "--no-fallback", "-q"]);
        let o = run(&mut with_small_shm(test, &tmp, Some("2m"), a).unwrap()).fails(15, &["the emulated CSP did not start", "device memory", "no room for", "--no-fallback"]);
        assert!(!o.stderr.contains("error reading") && !o.stderr.contains("lost"), "{op}: {}", o.describe());
        assert!(!never.exists(), "{op}");
    }
}

/// `ec verify` and `repair` hold slices of a stripe's units a thread, as repair's rebuild
/// does, whatever the unit: they held the whole last stripe to check its padding, and a lost
/// unit's parity and rebuild besides (RS(8, 4) of 64 MiB units peaked at 665 MB), so a set
/// whose stripe did not fit could not be checked ("out of memory: the set's last stripe").
/// `decode`, which holds a stripe a thread, says which memory ran out and what to do, exit 1.
#[test]
fn verify_and_repair_hold_slices_of_a_stripe_and_decode_says_which_memory_ran_out() {
    let dir = scratch();
    let d = dir.path();
    // The process itself: what `ec decode -T 1` of a set of 4 KiB units needs.
    let small = d.join("small");
    std::fs::write(d.join("small.src"), random_bytes(100_000, 71)).unwrap();
    run(&mut pp(args!["ec", "encode", d.join("small.src"), "-k", "8", "-m", "2", "--unit", "4K", "-o", &small, "-q"])).ok();
    let least = least_address_space_kib(&small, d);
    // One stripe of 8 units of 8 MiB (64 MiB, 3 MiB of it the source's), in 24 MiB more.
    let data = random_bytes((3 << 20) + 777, 72);
    let src = d.join("src");
    std::fs::write(&src, &data).unwrap();
    let set = d.join("set");
    run(&mut pp(args!["ec", "encode", &src, "-k", "8", "-m", "2", "--unit", "8M", "-o", &set, "-q"])).ok();
    let original = shards(&set);
    let within = |a: Vec<std::ffi::OsString>| run(&mut limited(&format!("-v {}", least + (24 << 10)), a));
    within(args!["ec", "verify", &set, "-T", "2", "-q"]).ok();
    // A data unit lost and a parity unit corrupt: found, rebuilt slice by slice, repaired.
    std::fs::remove_file(set.join("shard-000")).unwrap();
    let mut parity = original[9].1.clone();
    parity[5 << 20] ^= 1;
    std::fs::write(set.join("shard-009"), parity).unwrap();
    within(args!["ec", "verify", &set, "-T", "2"]).fails(6, &["shard-000, shard-009", "repairable (`peerpath ec repair "]);
    within(args!["ec", "repair", &set, "-T", "2", "-q"]).ok();
    assert!(shards(&set) == original, "repaired byte for byte");
    // The padding is still checked, slice by slice, also in a rebuilt unit: a length cut in
    // a manifest made before its source_crc32 names the first byte of data past it.
    let manifest = std::fs::read_to_string(set.join("manifest.json")).unwrap();
    let cut = data.len() - 600_000;
    let first = cut + data[cut..].iter().position(|&b| b != 0).unwrap();
    let length = |n: usize| format!("\"source_bytes\": {n}");
    std::fs::write(set.join("manifest.json"), without_source_crc(&manifest).replace(&length(data.len()), &length(cut))).unwrap();
    let said = format!("the last stripe holds data at byte {first} (not the encoder's zero padding): the manifest is damaged");
    within(args!["ec", "verify", &set, "-T", "2"]).fails(6, &[&said]);
    std::fs::remove_file(set.join("shard-000")).unwrap();
    within(args!["ec", "verify", &set, "-T", "2"]).fails(6, &[&said]);
    std::fs::write(set.join("manifest.json"), &manifest).unwrap();
    std::fs::write(set.join("shard-000"), &original[0].1).unwrap();
    // Decode holds the stripe (64 MiB): an error that says which memory and what to do.
    let back = d.join("back");
    within(args!["ec", "decode", &set, "-o", &back, "-T", "1"]).fails(1, &["out of memory", "needs 64 MiB", "the address-space limit: ulimit -v", "a smaller unit"]);
    assert!(!back.exists(), "nothing kept");
}

/// A set that lost more than M units in thousands of stripes: every message names how many
/// stripes and the first runs of them (it listed every stripe, a line as long as the set is
/// large); `verify --json` gives the runs beside its lists.
#[test]
fn many_lost_stripes_are_named_by_count_and_runs() {
    let dir = scratch();
    let d = dir.path();
    let src = d.join("s");
    std::fs::write(&src, random_bytes(10_000, 73)).unwrap();
    let set = d.join("set");
    // 5000 stripes of 2 units of 1 byte.
    run(&mut pp(args!["ec", "encode", &src, "-k", "2", "-m", "1", "--unit", "1", "-o", &set, "-q"])).ok();
    let original = shards(&set);
    // Every other stripe loses both data units: 2500 runs of one stripe.
    for (name, bytes) in original.iter().take(2) {
        let flipped: Vec<u8> = bytes.iter().enumerate().map(|(i, &b)| if i % 2 == 0 { !b } else { b }).collect();
        std::fs::write(set.join(name), flipped).unwrap();
    }
    let said = "stripes 0, 2, 4, 6, 8, 10, 12, 14, ... (2500 stripes in 2500 runs)";
    let o = run(&mut pp(args!["ec", "verify", &set])).fails(6, &[&format!("NOT repairable: {said} lost more than 1 shard\n")]);
    assert!(o.stderr.len() < 400, "a bounded line: {}", o.stderr);
    let v = run(&mut pp(args!["ec", "verify", &set, "--json"])).fails(6, &[]).json();
    assert_eq!(v["lost_stripes"].as_array().map(Vec::len), Some(2500), "{}", v["lost_stripes"]);
    let runs: Vec<[u64; 2]> = serde_json::from_value(v["lost_stripe_ranges"].clone()).unwrap();
    assert_eq!(runs, (0..5000).step_by(2).map(|s| [s, s]).collect::<Vec<_>>());
    assert_eq!(v["damaged_shards"][1]["bad_stripe_ranges"], v["lost_stripe_ranges"], "{}", v["damaged_shards"][1]);
    // Both data shards gone: one run of every stripe.
    for (name, _) in original.iter().take(2) {
        std::fs::remove_file(set.join(name)).unwrap();
    }
    let said = "stripes 0-4999 (5000 stripes) lost more than 1 of their 3 shards: they cannot be rebuilt";
    for a in [args!["ec", "repair", &set], args!["ec", "decode", &set, "-o", d.join("back")]] {
        let o = run(&mut pp(a)).fails(6, &[said]);
        assert!(o.stderr.len() < 400, "a bounded line: {}", o.stderr);
    }
    assert!(!d.join("back").exists());
    let v = run(&mut pp(args!["ec", "verify", &set, "--json"])).fails(6, &["stripes 0-4999 (5000 stripes) lost more than 1 shard\n"]).json();
    assert_eq!(v["lost_stripe_ranges"], serde_json::json!([[0, 4999]]), "{}", v["lost_stripe_ranges"]);
    assert_eq!(v["damaged_shards"][0]["bad_stripe_ranges"], serde_json::json!([[0, 4999]]), "{}", v["damaged_shards"][0]);
}

/// A device takes sets of units of 4 KiB and more: a set of 1-byte units is refused at once,
/// saying so (it took one device command per byte: a 4 MiB file in RS(8, 4) ran for minutes on
/// an emulated CSP, where the CPU checks it in seconds); the CPU still takes it.
#[test]
fn a_device_refuses_a_set_of_units_below_4k() {
    let dir = scratch();
    let d = dir.path();
    let src = d.join("s");
    std::fs::write(&src, random_bytes(4000, 74)).unwrap();
    let set = d.join("set");
    run(&mut pp(args!["ec", "encode", &src, "-k", "4", "-m", "2", "--unit", "1", "-o", &set, "-q"])).ok();
    let back = d.join("back");
    for engine in ["emulated", "gpu"] {
        for a in [args!["ec", "verify", &set], args!["ec", "repair", &set], args!["ec", "decode", &set, "-o", &back]] {
            let mut c = pp(a);
            c.args(["--engine", engine]);
            run(&mut c).fails(2, &["the set's units are 1 B", "--engine emulated or gpu takes sets of units of at least 4 KiB", "give --engine cpu"]);
        }
    }
    assert!(!back.exists());
    run(&mut pp(args!["ec", "verify", &set, "-q"])).ok();
    run(&mut pp(args!["ec", "decode", &set, "-o", &back, "-q"])).ok();
    assert_file_eq(&back, &std::fs::read(&src).unwrap(), "decoded on the CPU");
}

/// Counts are worded as many as they count: "1 stripe", "3 shards", "1 thread" (each read
/// "stripe(s)", "shard(s)", "thread(s)" whatever the number).
#[test]
fn ec_messages_count_one_and_many_in_words() {
    let dir = scratch();
    let d = dir.path();
    let (src, set) = (d.join("src"), d.join("set"));
    std::fs::write(&src, b"tiny").unwrap();
    let o = run(&mut pp(args!["ec", "encode", &src, "-k", "2", "-m", "1", "--unit", "4K", "-o", &set, "-T", "1"])).ok();
    let text = o.stdout_str();
    assert!(text.contains(": 1 stripe of RS(2, 1) x 4096 bytes into 3 shards in ") && text.contains("(this process, 1 thread): ISA-L"), "{text}");
    let o = run(&mut pp(args!["ec", "verify", &set])).ok();
    assert!(o.stdout_str().ends_with(": all 3 shards intact (1 stripe)\n"), "{}", o.stdout_str());
}

/// The chain both ways counts as many as it counts: one stripe, member, block, thread, worker
/// and rebuilt unit in the singular (each read "stripe(s)", "thread(s)", ... whatever the number).
#[test]
fn the_chain_counts_one_in_words() {
    let dir = scratch();
    let d = dir.path();
    let key = d.join("key");
    run(&mut pp(args!["keygen", "-o", &key])).ok();
    let src = d.join("src");
    std::fs::write(&src, b"tiny").unwrap();
    let (set, back) = (d.join("set"), d.join("back"));
    let o = run(&mut pp(args!["compress", &src, "--encrypt", "--key-file", &key, "--ec", "2+1", "--ec-unit", "4K", "-T", "1", "-o", &set])).ok();
    let text = o.stdout_str();
    for said in ["4 B -> 1 member, ", "(AES-256-GCM, 1 block of 1 MiB)", ": 1 stripe of 2 x 4096 bytes", "ran on 1 host thread)", " s summed over 1 thread ("] {
        assert!(text.contains(said) && !text.contains("(s)"), "{said:?} in: {text}");
    }
    std::fs::remove_file(set.join("shard-000")).unwrap();
    let o = run(&mut pp(args!["decompress", "--ec", &set, "--key-file", &key, "-T", "1", "-o", &back])).ok();
    let text = o.stdout_str();
    assert!(text.contains("inflated to 4 B on 1 host thread (") && text.contains("summed over 1 thread (") && !text.contains("(s)"), "{text}");
    // On an emulated CSP of one worker (-T 1): its workers, members in flight and rebuilt units.
    let (eset, eback) = (d.join("eset"), d.join("eback"));
    let o = run(&mut pp(args!["compress", &src, "--ec", "2+1", "--ec-unit", "4K", "-T", "1", "-o", &eset, "--engine", "emulated", "--no-fallback"])).ok();
    let text = o.stdout_str();
    assert!(text.contains("4 B -> 1 member, ") && text.contains(": 1 stripe in 3 shards") && text.contains("1 emulated CSP, 1 worker, up to 2 blocks in flight") && !text.contains("(s)"), "{text}");
    std::fs::remove_file(eset.join("shard-001")).unwrap();
    let o = run(&mut pp(args!["decompress", "--ec", &eset, "-T", "1", "-o", &eback, "--engine", "emulated", "--no-fallback"])).ok();
    let text = o.stdout_str();
    assert!(text.contains(", 1 unit rebuilt on the device") && text.contains("1 worker, up to 2 members in flight") && !text.contains("(s)"), "{text}");
    assert_file_eq(&eback, b"tiny", "decoded on the device");
}
