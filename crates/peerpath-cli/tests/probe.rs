//! `peerpath probe`: the P2P pre-flight, on the real /sys and on fixture trees.

mod common;

use common::*;
use std::path::Path;

fn machine_has_providers() -> bool {
    std::fs::read_dir("/sys/bus/pci/devices")
        .map(|rd| rd.filter_map(|e| e.ok()).any(|e| e.path().join("p2pmem").is_dir()))
        .unwrap_or(false)
}

#[test]
fn real_sys_without_providers_says_so_and_exits_14() {
    if machine_has_providers() {
        eprintln!("skipped: this machine has P2P providers (the no-provider message is tested on machines without)");
        return;
    }
    let out = run(&mut pp(["probe"]));
    assert_eq!(out.code(), Some(14), "{}\n{}", out.stdout_str(), out.stderr);
    let text = out.stdout_str();
    assert!(text.contains("no P2P provider"), "{text}");
    assert!(text.contains("That is expected here"), "{text}");
    // Why: the kernel's configuration (where readable) and the absence of CMBs.
    assert!(text.contains("CONFIG_PCI_P2PDMA"), "{text}");
    assert!(text.contains("Controller Memory Buffer"), "{text}");
    assert!(!out.stderr.contains("panicked"));

    let out = run(&mut pp(["probe", "--json"]));
    assert_eq!(out.code(), Some(14));
    let v = out.json();
    assert_eq!(v["providers_found"], 0);
    assert_eq!(v["passed"], false);
    assert_eq!(v["exit_code"], 14);
    assert!(v["summary"].as_str().unwrap().contains("no P2P provider"));
}

/// The committed fixture, read in place: the provider is found and its
/// (empty, plain-file) allocate is mapped without writing anything.
#[test]
fn committed_fixture_provider_is_found_and_mapped() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../peerpath-topo/fixtures/intel-switch-acs/sys");
    let out = run(&mut pp(args!["probe", "--sysfs", &root, "--json"]));
    assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
    let v = out.json();
    assert_eq!(v["providers_found"], 1);
    let p = &v["providers"][0];
    assert_eq!(p["device"], "0000:03:00.0");
    assert_eq!(p["size_bytes"], 268435456u64);
    assert_eq!(p["published"], true);
    // Mapping a plain file may work or not (permissions); either way there is a reason.
    assert!(!p["map"]["detail"].as_str().unwrap().is_empty());
    assert_eq!(p["allocate_on_sysfs"], false);
    // A fixture never passes: a plain file proves nothing about P2P.
    assert_eq!(v["passed"], false);
    assert_eq!(out.code(), Some(14));
    if p["map"]["ok"] == true {
        assert!(v["summary"].as_str().unwrap().contains("fixture"), "{v}");
    }
}

/// A fixture written fresh into a scratch directory, probed with a target:
/// the read into the host memory standing in for the provider's is said,
/// with words either way; the fixture's files are never written; nothing panics.
#[test]
fn fixture_probe_with_a_target_reports_the_read_with_a_reason() {
    let dir = scratch();
    peerpath_topo::fixture::intel_switch_acs().write(&dir.path().join("sys")).unwrap();
    let target = dir.path().join("target.dat");
    std::fs::write(&target, random_bytes(64 << 10, 4)).unwrap();
    let out = run(&mut pp(args!["probe", "--sysfs", dir.path().join("sys"), "--target", &target]));
    assert_eq!(out.code(), Some(14), "{}\n{}", out.stdout_str(), out.stderr);
    assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
    let text = out.stdout_str();
    assert!(text.contains("csp0 (0000:03:00.0)"), "{text}");
    assert!(text.contains("not on sysfs but a plain file"), "{text}");
    let read_line = text.lines().find(|l| l.trim_start().starts_with("read")).expect("a read line");
    // Whatever the kernel answered, it comes with words.
    assert!(read_line.contains("FAIL") || read_line.contains("ok"), "{read_line}");
    assert!(read_line.len() > 40, "{read_line}");
    // The target is untouched (a read), and so is the fixture's allocate (host memory stood in for it).
    assert_eq!(std::fs::read(&target).unwrap(), random_bytes(64 << 10, 4));
    assert_eq!(std::fs::read(dir.path().join("sys/bus/pci/devices/0000:03:00.0/p2pmem/allocate")).unwrap(), b"");

    let out = run(&mut pp(args!["probe", "--sysfs", dir.path().join("sys"), "--target", &target, "--json"]));
    let v = out.json();
    let read = &v["providers"][0]["read"];
    assert!(read.is_object(), "{v}");
    if read["ok"] == false {
        assert!(!read["detail"].as_str().unwrap().is_empty());
    }
}

#[test]
fn fixture_probe_errors_are_reasons() {
    let dir = scratch();
    let sys = dir.path().join("sys");
    peerpath_topo::fixture::intel_switch_acs().write(&sys).unwrap();
    // A device that is not a provider.
    let out = run(&mut pp(args!["probe", "--sysfs", &sys, "--device", "0000:04:00.0"]));
    assert_eq!(out.code(), Some(14));
    assert!(out.stdout_str().contains("is not a P2P memory provider"), "{}", out.stdout_str());
    // A device that does not exist is a topology error.
    let out = run(&mut pp(args!["probe", "--sysfs", &sys, "--device", "0000:44:00.0"]));
    assert_eq!(out.code(), Some(13));
    assert!(out.stderr.contains("no such PCI function"), "{}", out.stderr);
    // A target that does not exist: a source missing (3), said first, whatever the providers
    // (it was a failed read, exit 14, and on a machine without providers not said at all).
    let out = run(&mut pp(args!["probe", "--sysfs", &sys, "--target", dir.path().join("nope")]));
    assert_eq!(out.code(), Some(3));
    assert!(out.stderr.contains("--target ") && out.stderr.contains("nope: cannot read it"), "{}", out.stderr);
    let out = run(&mut pp(args!["probe", "--target", dir.path().join("nope")]));
    assert_eq!(out.code(), Some(3), "the machine's own /sys too: {}", out.stderr);
    // A directory is no target (it was a failed read, exit 14 "NO P2P").
    let out = run(&mut pp(args!["probe", "--sysfs", &sys, "--target", dir.path()]));
    assert_eq!(out.code(), Some(2), "{}", out.stderr);
    assert!(out.stderr.contains("neither a regular file nor a block device"), "{}", out.stderr);
    // A target shorter than the probe's read.
    let short = dir.path().join("short");
    std::fs::write(&short, b"tiny").unwrap();
    let out = run(&mut pp(args!["probe", "--sysfs", &sys, "--target", &short]));
    assert_eq!(out.code(), Some(14));
    let text = out.stdout_str();
    assert!(text.contains("needs at least that") || text.contains("O_DIRECT"), "{text}");
    // More than available: the fixture's provider with nothing free.
    std::fs::write(sys.join("bus/pci/devices/0000:03:00.0/p2pmem/available"), "0\n").unwrap();
    let out = run(&mut pp(args!["probe", "--sysfs", &sys, "--json"]));
    let v = out.json();
    let map = &v["providers"][0]["map"];
    assert_eq!(map["ok"], false, "{v}");
    assert!(map["detail"].as_str().unwrap().contains("available"), "{v}");
    // A malformed size is a topology error naming the path (the topology reader sees it first).
    std::fs::write(sys.join("bus/pci/devices/0000:03:00.0/p2pmem/size"), "big\n").unwrap();
    let out = run(&mut pp(args!["probe", "--sysfs", &sys]));
    assert!(matches!(out.code(), Some(13) | Some(14)), "{}", out.stderr);
    assert!(out.stderr.contains("p2pmem/size") || out.stdout_str().contains("p2pmem/size"), "{}\n{}", out.stderr, out.stdout_str());
    assert!(!out.stderr.contains("panicked"));
}

#[test]
fn malformed_device_argument_is_a_usage_error() {
    let out = run(&mut pp(["probe", "--device", "0000:zz:00.0"]));
    assert_eq!(out.code(), Some(2), "{}", out.stderr);
    assert!(out.stderr.contains("not a PCI address"), "{}", out.stderr);
    let out = run(&mut pp(["probe", "--device", ""]));
    assert_eq!(out.code(), Some(2), "{}", out.stderr);
    let out = run(&mut pp(["probe", "--device", "0000:00:00.0", "--all"]));
    assert_eq!(out.code(), Some(2), "{}", out.stderr);
}

/// `--device` takes a drive as a user names it, not only its PCI address: the controller or
/// a block device on it, with or without /dev/, found through the sysfs tree (it was "is not
/// a PCI address", exit 2). A name that is not there says where it was looked for (13); one on
/// several functions (md0, a multipath head) asks for one of them (2).
#[test]
fn device_may_be_a_controller_or_block_device_found_through_sysfs() {
    let dir = scratch();
    let sys = dir.path().join("sys");
    peerpath_topo::fixture::intel_switch_acs().write(&sys).unwrap();
    // nvme0 is the CSP at 0000:03:00.0, the provider.
    for name in ["nvme0", "/dev/nvme0", "nvme0n1", "/dev/nvme0n1", "csp0", "03:00.0"] {
        let out = run(&mut pp(args!["probe", "--sysfs", &sys, "--device", name, "--json"]));
        assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
        let v = out.json();
        assert_eq!(v["providers"][0]["device"], "0000:03:00.0", "--device {name}: {v}");
        assert_eq!(v["providers"].as_array().map(Vec::len), Some(1), "{v}");
    }
    // nvme1n1 is on ssd0 (0000:04:00.0), which has no P2P memory.
    let out = run(&mut pp(args!["probe", "--sysfs", &sys, "--device", "/dev/nvme1n1"]));
    assert_eq!(out.code(), Some(14), "{}", out.stderr);
    assert!(out.stdout_str().contains("ssd0 (0000:04:00.0) is not a P2P memory provider"), "{}", out.stdout_str());
    // Not there: exit 13, saying where it was looked for.
    let out = run(&mut pp(args!["probe", "--sysfs", &sys, "--device", "/dev/nvme9n1"]));
    assert_eq!(out.code(), Some(13), "{}", out.stderr);
    assert!(out.stderr.contains("--device /dev/nvme9n1") && out.stderr.contains(&format!("{}", sys.join("class/block").display())), "{}", out.stderr);
    // On two functions: which one?
    let dir = scratch();
    let sys = dir.path().join("sys");
    peerpath_topo::fixture::iommu_multipath().write(&sys).unwrap();
    for name in ["md0", "nvme3n1"] {
        let out = run(&mut pp(args!["probe", "--sysfs", &sys, "--device", name]));
        assert_eq!(out.code(), Some(2), "{}", out.stderr);
        assert!(out.stderr.contains(&format!("--device {name} is on 2 PCI functions")), "{}", out.stderr);
    }
}

/// `--device` may be a symbolic link to the drive, as udev names drives (`/dev/disk/by-id/
/// nvme-...`, `/dev/disk/by-path/pci-0000:03:00.0-nvme-1`): it is followed, and what it led to
/// is said. The link's own path was looked up ("no NVMe controller ... labelled" it, exit 13; a
/// by-path name with colons "is not a PCI address", exit 2). A link that leads nowhere is
/// named with where it points (exit 3, as a missing source).
#[test]
fn device_given_as_a_symbolic_link_is_followed_and_said() {
    let dir = scratch();
    let sys = dir.path().join("sys");
    peerpath_topo::fixture::intel_switch_acs().write(&sys).unwrap();
    // A by-path name, to a node every machine has and no fixture names.
    let link = dir.path().join("pci-0000:03:00.0-nvme-1");
    std::os::unix::fs::symlink("/dev/null", &link).unwrap();
    let out = run(&mut pp(args!["probe", "--sysfs", &sys, "--device", &link]));
    assert_eq!(out.code(), Some(13), "{}", out.stderr);
    assert!(out.stderr.contains(&format!("--device {} (/dev/null): no NVMe controller", link.display())), "{}", out.stderr);
    assert!(out.stderr.contains("labelled \"null\""), "{}", out.stderr);

    let gone = dir.path().join("nvme-gone");
    std::os::unix::fs::symlink(dir.path().join("nvme9n1"), &gone).unwrap();
    let out = run(&mut pp(args!["probe", "--sysfs", &sys, "--device", &gone]));
    assert_eq!(out.code(), Some(3), "{}", out.stderr);
    let said = format!("--device {}: a symbolic link to {}, which cannot be followed", gone.display(), dir.path().join("nvme9n1").display());
    assert!(out.stderr.contains(&said), "{}", out.stderr);
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
}

/// A link to a block device of this machine found in a real capture of sysfs
/// (fixtures/h100-gpu-host: vda, vdb on virtio PCI functions) reaches that device's PCI
/// function, here made a provider, and the report says what the link led to. Skipped where no
/// block device of the capture is a block device in this machine's /dev.
#[test]
fn device_link_to_a_block_device_reaches_its_pci_function() {
    let dir = scratch();
    let tgz = Path::new(env!("CARGO_MANIFEST_DIR")).join("../peerpath-topo/fixtures/h100-gpu-host/sysfs.tgz");
    let ok = std::process::Command::new("tar").arg("xzf").arg(&tgz).arg("-C").arg(dir.path()).status().unwrap().success();
    assert!(ok, "tar xzf {}", tgz.display());
    let sys = dir.path().join("sys");
    // A drive of the capture on a PCI function, present here: (its name, its function).
    let drive = names_in(&sys.join("class/block")).into_iter().find_map(|name| {
        use std::os::unix::fs::FileTypeExt;
        let node = std::fs::metadata(Path::new("/dev").join(&name)).ok()?;
        let real = std::fs::canonicalize(sys.join("class/block").join(&name)).ok()?;
        let bdf = real.iter().filter_map(|c| c.to_str()?.parse::<peerpath_topo::Bdf>().ok()).next_back()?;
        node.file_type().is_block_device().then_some((name, bdf))
    });
    let Some((name, bdf)) = drive else {
        eprintln!("skipped: no block device of the h100 capture is in this machine's /dev");
        return;
    };
    let p2pmem = sys.join("bus/pci/devices").join(bdf.to_string()).join("p2pmem");
    std::fs::create_dir(&p2pmem).unwrap();
    for (file, text) in [("size", "4194304\n"), ("available", "4194304\n"), ("published", "1\n"), ("allocate", "")] {
        std::fs::write(p2pmem.join(file), text).unwrap();
    }
    let link = dir.path().join("virtio-drive");
    std::os::unix::fs::symlink(Path::new("/dev").join(&name), &link).unwrap();
    let note = format!("--device {} is /dev/{name}, a symbolic link followed", link.display());
    let out = run(&mut pp(args!["probe", "--sysfs", &sys, "--device", &link, "--json"]));
    assert_eq!(out.code(), Some(14), "a fixture never passes: {}\n{}", out.stdout_str(), out.stderr);
    let v = out.json();
    assert_eq!(v["providers"][0]["device"], bdf.to_string(), "{v}");
    assert_eq!(v["providers"][0]["notes"][0], note.as_str(), "{v}");
    let out = run(&mut pp(args!["probe", "--sysfs", &sys, "--device", &link]));
    assert!(out.stdout_str().contains(&format!("note    {note}")), "{}", out.stdout_str());
}

/// With `--json`, an error that stops the probe before any provider is probed (usage 2, a
/// target missing 3, topology 13) is a `probe` document on standard output too, saying why as
/// standard error does (standard output was empty: a script got nothing to read). Its keys are
/// the schema's; a probe that ran has `error` null.
#[test]
fn json_errors_before_the_probe_are_documents_saying_why() {
    let dir = scratch();
    let sys = dir.path().join("sys");
    peerpath_topo::fixture::intel_switch_acs().write(&sys).unwrap();
    let schema: serde_json::Value = serde_json::from_slice(&std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/schemas/probe.schema.json")).unwrap()).unwrap();
    let cases: [(Vec<std::ffi::OsString>, i32); 4] = [
        (args!["probe", "--sysfs", &sys, "--device", "0000:zz:00.0", "--json"], 2),
        (args!["probe", "--sysfs", &sys, "--target", dir.path().join("nope"), "--json"], 3),
        (args!["probe", "--sysfs", &sys, "--device", "0000:44:00.0", "--json"], 13),
        (args!["probe", "--sysfs", dir.path().join("no-sys"), "--json"], 13),
    ];
    for (argv, code) in cases {
        let out = run(&mut pp(&argv));
        assert_eq!(out.code(), Some(code), "{argv:?}: {}", out.stderr);
        let said = out.stderr.strip_prefix("peerpath: error: ").unwrap_or_else(|| panic!("{argv:?}: {}", out.stderr)).trim_end();
        let v = out.json();
        assert_eq!(v["schema"], "peerpath/probe/1", "{v}");
        assert_eq!(v["error"], said, "{v}");
        assert_eq!(v["summary"], said, "{v}");
        assert_eq!((v["exit_code"].as_i64(), &v["passed"], &v["providers_found"]), (Some(code.into()), &false.into(), &serde_json::Value::Null), "{v}");
        for key in schema["required"].as_array().unwrap() {
            assert!(v.get(key.as_str().unwrap()).is_some(), "{argv:?}: no {key} in {v}");
        }
        for key in v.as_object().unwrap().keys() {
            assert!(schema["properties"].get(key).is_some(), "{argv:?}: {key} is not in the schema");
        }
    }
    let v = run(&mut pp(args!["probe", "--sysfs", &sys, "--json"])).json();
    assert_eq!((&v["error"], &v["providers_found"]), (&serde_json::Value::Null, &1.into()), "{v}");
}

/// A `--sysfs` that is no sysfs root is named as the option, with what was expected there (it
/// was "cannot read /nonexist: ..."), its name quoted where it holds a newline (one line).
#[test]
fn a_sysfs_that_is_no_sysfs_root_is_named_as_the_option() {
    let dir = scratch();
    let file = dir.path().join("file");
    std::fs::write(&file, b"x").unwrap();
    let odd = dir.path().join("a\nb");
    for (root, shown) in [(dir.path().join("nonexist"), format!("{}", dir.path().join("nonexist").display())), (dir.path().to_path_buf(), format!("{}", dir.path().display())), (file.clone(), format!("{}", file.display())), (odd.clone(), format!("'{}/a'$'\\n''b'", dir.path().display()))] {
        let out = run(&mut pp(args!["probe", "--sysfs", &root]));
        assert_eq!(out.code(), Some(13), "{}", out.stderr);
        assert!(out.stderr.starts_with(&format!("peerpath: error: --sysfs {shown}")), "{}", out.stderr);
        assert!(out.stderr.contains("give a sysfs root, a directory holding bus/pci/devices"), "{}", out.stderr);
        assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    }
}

/// Odd `--target`s are named as the option (they were "cannot read target X", "target X is
/// neither ..."): one not there, a dangling link, `-` (no standard input here), a name with a
/// newline (quoted, one line), a directory, a character device.
#[test]
fn odd_targets_are_named_as_the_option() {
    let dir = scratch();
    let sys = dir.path().join("sys");
    peerpath_topo::fixture::intel_switch_acs().write(&sys).unwrap();
    let dangling = dir.path().join("dangling");
    std::os::unix::fs::symlink(dir.path().join("gone"), &dangling).unwrap();
    let odd = dir.path().join("a\nb");
    let cases = [
        (dir.path().join("nope"), format!("{}: cannot read it", dir.path().join("nope").display()), 3),
        (dangling.clone(), format!("{}: cannot read it", dangling.display()), 3),
        ("-".into(), "-: cannot read it".to_string(), 3),
        (odd, format!("'{}/a'$'\\n''b': cannot read it", dir.path().display()), 3),
        (dir.path().to_path_buf(), format!("{} is neither a regular file nor a block device", dir.path().display()), 2),
        ("/dev/null".into(), "/dev/null is neither a regular file nor a block device".to_string(), 2),
    ];
    for (target, said, code) in cases {
        let out = run(&mut pp(args!["probe", "--sysfs", &sys, "--target", &target]));
        assert_eq!(out.code(), Some(code), "{}", out.stderr);
        assert!(out.stderr.starts_with(&format!("peerpath: error: --target {said}")), "{}", out.stderr);
        assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    }
}
