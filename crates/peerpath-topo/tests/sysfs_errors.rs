//! Malformed and missing sysfs files: an error naming the path, or an explicit unknown field;
//! never a panic.

mod common;

use std::fs;
use std::path::{Path, PathBuf};

use peerpath_topo::fixture::{self, symlink};
use peerpath_topo::{LinkSpeed, TopoError, Topology};

fn tree() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    fixture::intel_switch_acs().write(dir.path()).unwrap();
    let root = fs::canonicalize(dir.path()).unwrap();
    (dir, root)
}

fn dev(root: &Path, bdf: &str) -> PathBuf {
    fs::canonicalize(root.join("bus/pci/devices").join(bdf)).unwrap()
}

fn err_names(e: &TopoError, file: &str) {
    let text = e.to_string();
    assert!(text.contains(file), "error {text:?} should name {file}");
}

#[test]
fn missing_required_file_names_it() {
    let (_d, root) = tree();
    let f = dev(&root, "0000:04:00.0").join("vendor");
    fs::remove_file(&f).unwrap();
    let e = Topology::from_sysfs(&root).unwrap_err();
    assert!(matches!(e, TopoError::Io { .. }));
    err_names(&e, &f.display().to_string());
}

#[test]
fn non_numeric_class_names_it() {
    let (_d, root) = tree();
    let f = dev(&root, "0000:04:00.0").join("class");
    fs::write(&f, "nvme\n").unwrap();
    let e = Topology::from_sysfs(&root).unwrap_err();
    assert!(matches!(e, TopoError::Parse { .. }), "{e}");
    err_names(&e, &f.display().to_string());
}

#[test]
fn non_numeric_p2pmem_size_names_it() {
    let (_d, root) = tree();
    let f = dev(&root, "0000:03:00.0").join("p2pmem/size");
    fs::write(&f, "lots\n").unwrap();
    let e = Topology::from_sysfs(&root).unwrap_err();
    err_names(&e, &f.display().to_string());
    let f = dev(&root, "0000:03:00.0").join("p2pmem/size");
    fs::write(&f, "268435456\n").unwrap();
    let p = dev(&root, "0000:03:00.0").join("p2pmem/published");
    fs::write(&p, "yes\n").unwrap();
    err_names(&Topology::from_sysfs(&root).unwrap_err(), &p.display().to_string());
    fs::write(&p, "1\n").unwrap();
    fs::remove_file(dev(&root, "0000:03:00.0").join("p2pmem/available")).unwrap();
    err_names(&Topology::from_sysfs(&root).unwrap_err(), "p2pmem/available");
}

#[test]
fn missing_link_files_are_unknown_not_errors() {
    let (_d, root) = tree();
    let d = dev(&root, "0000:05:00.0");
    for f in ["current_link_speed", "max_link_speed", "current_link_width", "max_link_width", "numa_node", "local_cpulist", "config", "resource", "label"] {
        fs::remove_file(d.join(f)).unwrap();
    }
    let t = Topology::from_sysfs(&root).unwrap();
    let x = t.device("0000:05:00.0".parse().unwrap()).unwrap();
    assert!(x.link.is_none() && x.numa_node.is_none() && x.label.is_none());
    assert!(matches!(x.acs, peerpath_topo::AcsState::Unknown { .. }));
    // "Unknown" as the kernel prints it for a link that is down.
    let d = dev(&root, "0000:04:00.0");
    fs::write(d.join("current_link_speed"), "Unknown\n").unwrap();
    let t = Topology::from_sysfs(&root).unwrap();
    let l = t.device("0000:04:00.0".parse().unwrap()).unwrap().link.unwrap();
    assert_eq!(l.current_speed, LinkSpeed::UNKNOWN);
    // Garbage is an error naming the file.
    fs::write(d.join("current_link_speed"), "fast\n").unwrap();
    err_names(&Topology::from_sysfs(&root).unwrap_err(), "current_link_speed");
    fs::write(d.join("current_link_speed"), "8.0 GT/s PCIe\n").unwrap();
    fs::write(d.join("max_link_width"), "x4\n").unwrap();
    err_names(&Topology::from_sysfs(&root).unwrap_err(), "max_link_width");
}

/// Link figures are what the kernel writes (drivers/pci/pci-sysfs.c): a PCIe width, 0 for a
/// link that is down (and 255, `PCIE_LNK_WIDTH_UNKNOWN`, in max_link_width), a PCIe rate or
/// "Unknown" ("Unknown speed" and "8 GT/s" before 5.7). Anything else was taken as read and
/// multiplied into bandwidth figures (x64 at 8 GT/s: 63 GB/s); now it names the file and value.
#[test]
fn implausible_link_figures_name_the_file_and_the_kernels_unknowns_are_unknown() {
    let (_d, root) = tree();
    let d = dev(&root, "0000:04:00.0");
    let bdf = "0000:04:00.0".parse().unwrap();
    let link = |root: &Path| Topology::from_sysfs(root).unwrap().device(bdf).unwrap().link.unwrap();
    for (file, bad) in [
        ("current_link_width", "0x4"),
        ("current_link_width", "3"),
        ("current_link_width", "64"),
        ("current_link_width", "255"),
        ("current_link_width", "-4"),
        ("max_link_width", "24"),
        ("max_link_width", "x16"),
        ("current_link_speed", "10 GT/s"),
        ("current_link_speed", "0 GT/s PCIe"),
        ("max_link_speed", "8.5 GT/s PCIe"),
        ("max_link_speed", "Unknown AGP"),
    ] {
        let saved = fs::read(d.join(file)).unwrap();
        fs::write(d.join(file), format!("{bad}\n")).unwrap();
        let e = Topology::from_sysfs(&root).err().unwrap_or_else(|| panic!("{file} {bad:?} was taken as read"));
        assert!(matches!(e, TopoError::Parse { .. }), "{file} {bad}: {e}");
        err_names(&e, &d.join(file).display().to_string());
        err_names(&e, &format!("found \"{bad}"));
        fs::write(d.join(file), saved).unwrap();
    }
    // A link that is down, as the kernel says it: unknown, counted as no figure at all (a
    // width of 0 read as "trained at x0, capable of x4" made the link look degraded).
    fs::write(d.join("current_link_width"), "0\n").unwrap();
    fs::write(d.join("current_link_speed"), "Unknown speed\n").unwrap();
    fs::write(d.join("max_link_width"), "255\n").unwrap();
    let l = link(&root);
    assert_eq!((l.current_width, l.max_width, l.current_speed), (None, None, LinkSpeed::UNKNOWN));
    assert!(l.bytes_per_s().is_none() && !l.degraded(), "{l:?}");
    // Every width PCIe trains at, and both spellings of each rate.
    for w in [1, 2, 4, 8, 12, 16, 32] {
        fs::write(d.join("current_link_width"), format!("{w}\n")).unwrap();
        assert_eq!(link(&root).current_width, Some(w));
    }
    for (text, gen) in [("2.5 GT/s PCIe", 1), ("5 GT/s", 2), ("5.0 GT/s PCIe", 2), ("8 GT/s", 3), ("16.0 GT/s PCIe", 4), ("32 GT/s", 5), ("64.0 GT/s PCIe", 6)] {
        fs::write(d.join("current_link_speed"), format!("{text}\n")).unwrap();
        assert_eq!(link(&root).current_speed.generation(), Some(gen), "{text}");
    }
}

#[test]
fn numa_minus_one_is_none() {
    let (_d, root) = tree();
    fs::write(dev(&root, "0000:04:00.0").join("numa_node"), "-1\n").unwrap();
    let t = Topology::from_sysfs(&root).unwrap();
    assert_eq!(t.device("0000:04:00.0".parse().unwrap()).unwrap().numa_node, None);
    fs::write(dev(&root, "0000:04:00.0").join("numa_node"), "zero\n").unwrap();
    err_names(&Topology::from_sysfs(&root).unwrap_err(), "numa_node");
}

#[test]
fn dangling_symlink_names_it() {
    let (_d, root) = tree();
    let link = root.join("bus/pci/devices/0000:0a:00.0");
    std::os::unix::fs::symlink("../../../devices/pci0000:00/0000:00:03.0/0000:0a:00.0", &link).unwrap();
    let e = Topology::from_sysfs(&root).unwrap_err();
    assert!(matches!(e, TopoError::DanglingSymlink { .. }), "{e}");
    err_names(&e, "0000:0a:00.0");
}

#[test]
fn symlink_loop_names_it() {
    let (_d, root) = tree();
    let a = root.join("bus/pci/devices/0000:0b:00.0");
    let b = root.join("devices/pci0000:00/0000:0b:00.0");
    std::os::unix::fs::symlink(&b, &a).unwrap();
    std::os::unix::fs::symlink(&a, &b).unwrap();
    let e = Topology::from_sysfs(&root).unwrap_err();
    assert!(matches!(e, TopoError::BadLink { .. }), "{e}");
    err_names(&e, "0000:0b:00.0");
}

#[test]
fn symlink_outside_the_root_is_refused() {
    let (_d, root) = tree();
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("0000:0c:00.0");
    fs::create_dir(&target).unwrap();
    std::os::unix::fs::symlink(&target, root.join("bus/pci/devices/0000:0c:00.0")).unwrap();
    let e = Topology::from_sysfs(&root).unwrap_err();
    assert!(e.to_string().contains("outside the sysfs root"), "{e}");
}

#[test]
fn parent_not_listed_is_an_error() {
    let (_d, root) = tree();
    // A function nested under a bridge directory that /sys/bus/pci/devices does not list.
    let ghost = root.join("devices/pci0000:00/0000:00:1f.0/0000:0d:00.0");
    fs::create_dir_all(&ghost).unwrap();
    for (f, v) in [("vendor", "0x8086"), ("device", "0x1234"), ("class", "0x010802")] {
        fs::write(ghost.join(f), format!("{v}\n")).unwrap();
    }
    symlink(&root.join("bus/pci/devices/0000:0d:00.0"), &ghost).unwrap();
    let e = Topology::from_sysfs(&root).unwrap_err();
    assert!(e.to_string().contains("0000:00:1f.0"), "{e}");
}

#[test]
fn not_a_sysfs_root() {
    let d = tempfile::tempdir().unwrap();
    let e = Topology::from_sysfs(d.path()).unwrap_err();
    assert!(matches!(e, TopoError::NotSysfs { .. }));
    let e = Topology::from_sysfs(d.path().join("nope")).unwrap_err();
    assert!(matches!(e, TopoError::Io { .. }));
}

#[test]
fn garbage_cmbsz_names_it() {
    let (_d, root) = tree();
    let f = fs::canonicalize(root.join("class/nvme/nvme0")).unwrap().join("cmbsz");
    fs::write(&f, "0x20000018\n").unwrap();
    err_names(&Topology::from_sysfs(&root).unwrap_err(), "cmbsz");
}

#[test]
fn garbage_cpu_modalias_names_it() {
    let (_d, root) = tree();
    let f = root.join("devices/system/cpu/modalias");
    fs::write(&f, "cpu:type:x86,venZZZZ\n").unwrap();
    err_names(&Topology::from_sysfs(&root).unwrap_err(), "modalias");
    fs::remove_file(&f).unwrap();
    let t = Topology::from_sysfs(&root).unwrap();
    assert_eq!(t.cpu.vendor, peerpath_topo::CpuVendor::Unknown);
}

#[test]
fn iommu_class_dir_decides_the_iommu_state() {
    let (_d, root) = tree();
    // No class/iommu: a kernel without IOMMU support, so no IOMMU driver is active.
    assert!(!root.join("class/iommu").exists());
    let t = Topology::from_sysfs(&root).unwrap();
    assert_eq!(t.iommu.status, peerpath_topo::IommuStatus::Off);
    fs::create_dir_all(root.join("class/iommu")).unwrap();
    assert_eq!(Topology::from_sysfs(&root).unwrap().iommu.status, peerpath_topo::IommuStatus::Off);
    let unit = root.join("devices/virtual/iommu/ivhd0");
    fs::create_dir_all(&unit).unwrap();
    symlink(&root.join("class/iommu/ivhd0"), &unit).unwrap();
    let t = Topology::from_sysfs(&root).unwrap();
    assert_eq!(t.iommu.status, peerpath_topo::IommuStatus::On);
    assert_eq!(t.iommu.units, vec!["ivhd0".to_string()]);
}

/// A FIFO planted where an attribute or a topology file is read is refused
/// by name, never waited on (no writer ever comes here); /dev/zero as a
/// topology file is refused, not read without end.
#[test]
fn a_fifo_or_a_device_where_a_file_is_read_is_refused_not_waited_on() {
    let (_d, root) = tree();
    let f = dev(&root, "0000:04:00.0").join("vendor");
    fs::remove_file(&f).unwrap();
    assert!(std::process::Command::new("mkfifo").arg(&f).status().unwrap().success());
    let e = Topology::from_sysfs(&root).unwrap_err();
    assert!(e.to_string().contains("not a regular file"), "{e}");
    err_names(&e, &f.display().to_string());
    let e = Topology::from_toml_file(&f).unwrap_err();
    assert!(e.to_string().contains("not a regular file"), "{e}");
    let e = Topology::from_toml_file("/dev/zero").unwrap_err();
    assert!(e.to_string().contains("/dev/zero") && e.to_string().contains("not a regular file"), "{e}");
}

/// A firmware label on two functions (every port of a card "Onboard LAN") names neither: the
/// machine is read, each keeps its address as its name (the whole tree was refused).
#[test]
fn a_label_firmware_gives_twice_names_neither_device() {
    let (_d, root) = tree();
    let with_label: Vec<PathBuf> = fs::read_dir(root.join("bus/pci/devices")).unwrap().flatten().map(|e| e.path()).filter(|p| p.join("label").exists()).collect();
    assert!(with_label.len() >= 2, "{with_label:?}");
    for p in &with_label[..2] {
        fs::write(p.join("label"), "Onboard LAN\n").unwrap();
    }
    let t = Topology::from_sysfs(&root).unwrap();
    assert!(t.devices.iter().all(|d| d.label.as_deref() != Some("Onboard LAN")));
    // Said to be ambiguous, on both functions, not "no device".
    let e = t.resolve("Onboard LAN").unwrap_err();
    assert!(matches!(e, TopoError::AmbiguousName { .. }), "{e}");
    for p in &with_label[..2] {
        assert!(e.to_string().contains(p.file_name().unwrap().to_str().unwrap()), "{e}");
    }
    assert!(t.render_tree().contains("Label \"Onboard LAN\" of "), "{}", t.render_tree());
    let other = t.devices.iter().filter(|d| d.label.is_some()).count();
    assert_eq!(other, with_label.len() - 2, "the other labels stay");
}

/// Values that parse but are not what the kernel writes were taken as another device or
/// another socket: a class or vendor id without its zero padding (`0x01` for `0x010802`: the
/// device shown as "other", a GPU gone), a NUMA node the machine does not have (a cross-socket
/// pair passed as one socket's), below -1, and a `p2pmem` that is a file (a provider dropped).
/// Each is a malformed file, named.
#[test]
fn values_the_kernel_never_writes_are_malformed_not_another_device() {
    for (file, text) in [("class", "0x01\n"), ("vendor", "0x1\n"), ("device", "0x12345\n"), ("numa_node", "7\n"), ("numa_node", "-2\n")] {
        let (_d, root) = tree();
        let f = dev(&root, "0000:04:00.0").join(file);
        fs::write(&f, text).unwrap();
        let e = Topology::from_sysfs(&root).unwrap_err();
        assert!(matches!(e, TopoError::Parse { .. }), "{file} {text:?}: {e}");
        err_names(&e, &f.display().to_string());
    }
    let (_d, root) = tree();
    let p2p = dev(&root, "0000:03:00.0").join("p2pmem");
    fs::remove_dir_all(&p2p).unwrap();
    fs::write(&p2p, "x\n").unwrap();
    let e = Topology::from_sysfs(&root).unwrap_err();
    err_names(&e, &p2p.display().to_string());
}

/// A firmware label equal to a kernel name of another device (the CSP labelled `nvme3n1`, while
/// nvme3n1 is the drive at 0000:06:00.0) passed the CSP as that drive: the kernel's names come
/// first, the label is dropped, and `topo` says so.
#[test]
fn a_firmware_label_never_shadows_a_kernel_name() {
    let csp: peerpath_topo::Bdf = "0000:03:00.0".parse().unwrap();
    for name in ["nvme3n1", "nvme1", "0000:06:00.0"] {
        let (_d, root) = tree();
        fs::write(dev(&root, "0000:03:00.0").join("label"), format!("{name}\n")).unwrap();
        let t = Topology::from_sysfs(&root).unwrap();
        let e = t.resolve(name).unwrap();
        assert!(!e.pci.contains(&csp), "{name} resolved to the CSP: {e:?}");
        assert_eq!(t.device(csp).unwrap().label, None, "{name}");
        let tree = t.render_tree();
        assert!(tree.contains(&format!("Label \"{name}\" of 03:00.0 dropped: it is the ")), "{tree}");
        assert_ne!(t.verdict("0000:03:00.0", name).unwrap().path.distance(), Some(0), "{name}");
    }
}

/// A function directory nested under an NVMe endpoint was read as below that endpoint (a
/// "common upstream bridge" of the SSD itself, bus address, distance 1). sysfs nests functions
/// only under bridges (a device's other functions are siblings): the tree is refused, by path.
#[test]
fn a_function_below_an_endpoint_is_refused() {
    let (_d, root) = tree();
    let nested = dev(&root, "0000:06:00.0").join("0000:0e:00.0");
    fs::create_dir_all(&nested).unwrap();
    for (f, v) in [("vendor", "0x8086"), ("device", "0x1234"), ("class", "0x010802")] {
        fs::write(nested.join(f), format!("{v}\n")).unwrap();
    }
    symlink(&root.join("bus/pci/devices/0000:0e:00.0"), &nested).unwrap();
    let e = Topology::from_sysfs(&root).unwrap_err();
    assert!(matches!(e, TopoError::BadLink { .. }), "{e}");
    err_names(&e, &nested.display().to_string());
    assert!(e.to_string().contains("0000:06:00.0 is an endpoint (class 0x010802)"), "{e}");
}

/// Loops no kernel makes: an md device among its own members (directly or through another),
/// a VF whose physfn is itself, a PF and VF naming each other. Each is refused by its link.
#[test]
fn loops_of_slaves_and_physfn_are_refused_by_path() {
    let md_tree = || {
        let dir = tempfile::tempdir().unwrap();
        fixture::iommu_multipath().write(dir.path()).unwrap();
        let root = fs::canonicalize(dir.path()).unwrap();
        (dir, root)
    };
    // md0 over itself.
    let (_d, root) = md_tree();
    let md0 = root.join("devices/virtual/block/md0");
    symlink(&md0.join("slaves/md0"), &md0).unwrap();
    let e = Topology::from_sysfs(&root).unwrap_err();
    assert!(e.to_string().contains("md0 -> md0"), "{e}");
    err_names(&e, &md0.join("slaves").display().to_string());
    // md0 over md1 over md0.
    let (_d, root) = md_tree();
    let md0 = root.join("devices/virtual/block/md0");
    let md1 = root.join("devices/virtual/block/md1");
    fs::create_dir_all(md1.join("md")).unwrap();
    fs::write(md1.join("md/level"), "raid0\n").unwrap();
    symlink(&root.join("class/block/md1"), &md1).unwrap();
    symlink(&md0.join("slaves/md1"), &md1).unwrap();
    symlink(&md1.join("slaves/md0"), &md0).unwrap();
    let e = Topology::from_sysfs(&root).unwrap_err();
    assert!(e.to_string().contains("md0 -> md1 -> md0"), "{e}");
    // A VF whose physfn is itself; a PF and a VF naming each other.
    let (_d, root) = tree();
    let vf = dev(&root, "0000:05:00.0");
    std::os::unix::fs::symlink("../0000:05:00.0", vf.join("physfn")).unwrap();
    let e = Topology::from_sysfs(&root).unwrap_err();
    err_names(&e, &vf.join("physfn").display().to_string());
    let (_d, root) = tree();
    let (a, b) = (dev(&root, "0000:05:00.0"), dev(&root, "0000:06:00.0"));
    symlink(&a.join("physfn"), &b).unwrap();
    symlink(&b.join("physfn"), &a).unwrap();
    let e = Topology::from_sysfs(&root).unwrap_err();
    assert!(e.to_string().contains("itself a virtual function") && e.to_string().contains("a loop"), "{e}");
    err_names(&e, "physfn");
}

/// A file larger than any sysfs attribute is damaged, whatever its first 64 KiB say: here 1024
/// resource lines of 64 bytes each, whose first 64 KiB alone read as a device with no BARs,
/// and one line more.
#[test]
fn a_file_larger_than_any_sysfs_attribute_is_named_not_read_in_part() {
    let (_d, root) = tree();
    let f = dev(&root, "0000:04:00.0").join("resource");
    let line = format!("{:<63}\n", "0x0000000000000000 0x0000000000000000 0x0000000000000000");
    assert_eq!(line.len(), 64);
    fs::write(&f, line.repeat(1025)).unwrap();
    let e = Topology::from_sysfs(&root).unwrap_err();
    assert!(matches!(e, TopoError::Parse { .. }), "{e}");
    err_names(&e, &f.display().to_string());
    assert!(e.to_string().contains("at most 64 KiB"), "{e}");
    // exactly 64 KiB is still read
    fs::write(&f, line.repeat(1024)).unwrap();
    Topology::from_sysfs(&root).unwrap();
}

/// An IOMMU group's `type` is one of the words the kernel writes there; any other is a damaged
/// file, not a default domain to print and judge by.
#[test]
fn an_iommu_group_type_the_kernel_never_writes_is_named() {
    let dir = tempfile::tempdir().unwrap();
    fixture::iommu_multipath().write(dir.path()).unwrap();
    let root = fs::canonicalize(dir.path()).unwrap();
    let f = root.join("kernel/iommu_groups/0/type");
    assert_eq!(Topology::from_sysfs(&root).unwrap().iommu.default_domain.as_deref(), Some(fs::read_to_string(&f).unwrap().trim()));
    for bad in ["garbage\n", "\n", "DMA DMA-FQ\n"] {
        fs::write(&f, bad).unwrap();
        let e = Topology::from_sysfs(&root).unwrap_err();
        assert!(matches!(e, TopoError::Parse { .. }), "{e}");
        err_names(&e, &f.display().to_string());
    }
    for good in ["identity\n", "DMA-FQ\n", "unknown\n"] {
        fs::write(&f, good).unwrap();
        assert_eq!(Topology::from_sysfs(&root).unwrap().iommu.default_domain.as_deref(), Some(good.trim()));
    }
}

/// A `driver` link is the kernel's `.../drivers/NAME`; one that loops to itself (`driver ->
/// driver`) or points anywhere else is a damaged tree, named, not a driver called `driver`.
#[test]
fn a_driver_link_not_into_drivers_is_named() {
    let (_d, root) = tree();
    let f = dev(&root, "0000:04:00.0").join("driver");
    assert_eq!(Topology::from_sysfs(&root).unwrap().device("0000:04:00.0".parse().unwrap()).unwrap().driver.as_deref(), Some("nvme"));
    for bad in ["driver", "../../nvme", "/", "drivers/.."] {
        fs::remove_file(&f).unwrap();
        std::os::unix::fs::symlink(bad, &f).unwrap();
        let e = Topology::from_sysfs(&root).unwrap_err();
        assert!(matches!(e, TopoError::BadLink { .. }) && e.to_string().contains("not to a driver"), "{bad}: {e}");
        err_names(&e, &f.display().to_string());
    }
    // Where it points need not exist (a capture may lack bus/pci/drivers): its form says it.
    fs::remove_file(&f).unwrap();
    std::os::unix::fs::symlink("../../../bus/pci/drivers/vfio-pci", &f).unwrap();
    assert_eq!(Topology::from_sysfs(&root).unwrap().device("0000:04:00.0".parse().unwrap()).unwrap().driver.as_deref(), Some("vfio-pci"));
}

/// A BAR whose end is below its start, whose size overflows 64 bits (`0x0 0xffffffffffffffff`
/// was a BAR of 2^64 - 1 bytes), or whose flags say neither I/O nor memory is named.
#[test]
fn a_bar_that_cannot_be_is_named() {
    let (_d, root) = tree();
    let f = dev(&root, "0000:04:00.0").join("resource");
    let zero = "0x0000000000000000 0x0000000000000000 0x0000000000000000\n";
    for (bad, why) in [
        ("0x0000000000000000 0xffffffffffffffff 0x0000000000040200", "smaller than 2^64 bytes"),
        ("0x0000000000002000 0x0000000000001fff 0x0000000000040200", "end >= start"),
        ("0x00000000fd000000 0x00000000fdffffff 0x0000000000000000", "I/O (0x100) or memory (0x200)"),
    ] {
        fs::write(&f, format!("{bad}\n{}", zero.repeat(12))).unwrap();
        let e = Topology::from_sysfs(&root).unwrap_err();
        assert!(matches!(e, TopoError::Parse { .. }) && e.to_string().contains(why), "{bad}: {e}");
        err_names(&e, &f.display().to_string());
    }
    // the largest BAR there can be, and an I/O BAR, which the model leaves out
    fs::write(&f, format!("0x0000000000000000 0xfffffffffffffffe 0x0000000000140204\n{zero}0x0000000000001000 0x000000000000107f 0x0000000000040101\n{}", zero.repeat(10))).unwrap();
    let t = Topology::from_sysfs(&root).unwrap();
    let bars = &t.device("0000:04:00.0".parse().unwrap()).unwrap().bars;
    assert_eq!(bars.iter().map(|b| (b.index, b.size, b.mem32)).collect::<Vec<_>>(), [(0, u64::MAX, false)]);
}
