//! The topology file: written by hand, exported from a read, read back to the same model.

mod common;

use peerpath_topo::{fixture, DeviceKind, P2pPath, PortRole, Reason, TopoError, Topology};

const HAND_WRITTEN: &str = r#"
description = "two NVMe drives behind a QEMU switch, one with a CMB"

[cpu]
arch = "x86"
vendor = "intel"
family = 6

[iommu]
status = "off"

[[device]]
bdf = "0000:00:00.0"
vendor = 0x8086
device = 0x29c0
class = 0x060000

[[device]]
bdf = "0000:00:02.0"
vendor = "0x1b36"
device = "0x000c"
class = "0x060400"
acs = { state = "absent" }

[[device]]
bdf = "0000:01:00.0"
upstream = "0000:00:02.0"
vendor = 0x104c
device = 0x8232
class = 0x060400
acs = { state = "absent" }

[[device]]
bdf = "0000:02:00.0"
upstream = "0000:01:00.0"
vendor = 0x104c
device = 0x8233
class = 0x060400
acs = { state = "control", ctrl = "0x0" }

[[device]]
bdf = "0000:02:01.0"
upstream = "0000:01:00.0"
vendor = 0x104c
device = 0x8233
class = 0x060400
acs = { state = "control", ctrl = 0 }

[[device]]
bdf = "0000:03:00.0"
upstream = "0000:02:00.0"
label = "cmb0"
vendor = 0x1b36
device = 0x0010
class = 0x010802
link = { current_speed = "8.0 GT/s", max_speed = "8.0 GT/s", current_width = 4, max_width = 4 }
p2pmem = { size_bytes = 67108864, available_bytes = 67108864, published = true }

[[device]]
bdf = "0000:04:00.0"
upstream = "0000:02:01.0"
label = "nvm1"
vendor = 0x1b36
device = 0x0010
class = 0x010802

[[nvme]]
name = "nvme0"
pci = "0000:03:00.0"
cmb = { cmbsz = "0x4021f", cmbloc = "0x2" }
namespaces = ["nvme0n1"]

[[block]]
name = "nvme0n1"
kind = "nvme_namespace"
pci = ["0000:03:00.0"]
"#;

#[test]
fn hand_written_file_loads_with_derived_fields() {
    let t = Topology::from_toml_str(HAND_WRITTEN).unwrap();
    let d = |s: &str| t.device(s.parse().unwrap()).unwrap();
    assert_eq!(d("0000:00:02.0").role, PortRole::RootPort);
    assert_eq!(d("0000:01:00.0").role, PortRole::SwitchUpstream);
    assert_eq!(d("0000:02:01.0").role, PortRole::SwitchDownstream);
    assert_eq!(d("0000:03:00.0").kind, DeviceKind::NvmeSsd);
    assert!(d("0000:03:00.0").emulated);
    assert_eq!(t.host_bridges.len(), 1);
    assert_eq!(t.nvme_controllers[0].cmb.unwrap().size_bytes(), Some(64 << 20));
    // The QEMU layout of docs/pcie.txt: switch siblings are bus-address peers at distance 4.
    assert_eq!(t.verdict("cmb0", "nvm1").unwrap().path, P2pPath::BusAddress { distance: 4 });
    let back = Topology::from_toml_str(&t.to_toml_string().unwrap()).unwrap();
    assert_eq!(back, t);
}

#[test]
fn export_then_read_gives_the_same_model() {
    for spec in fixture::all() {
        let (_dir, t) = common::load(&spec);
        let text = t.to_toml_string().unwrap();
        assert!(text.starts_with("# peerpath topology file"));
        let back = Topology::from_toml_str(&text).unwrap();
        assert_eq!(back, t, "{}", spec.name);
        // And through a file.
        let f = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(f.path(), &text).unwrap();
        assert_eq!(Topology::from_toml_file(f.path()).unwrap(), t);
        // JSON carries the same model.
        let json: Topology = serde_json::from_str(&t.to_json_string().unwrap()).unwrap();
        let mut json = json;
        json.normalize().unwrap();
        assert_eq!(json, t);
    }
}

#[test]
fn inconsistent_files_are_refused_with_the_reason() {
    let looped = r#"
[[device]]
bdf = "0000:01:00.0"
upstream = "0000:02:00.0"
vendor = 1
device = 1
class = 0x060400
[[device]]
bdf = "0000:02:00.0"
upstream = "0000:01:00.0"
vendor = 1
device = 1
class = 0x060400
"#;
    let e = Topology::from_toml_str(looped).unwrap_err();
    assert!(matches!(e, TopoError::Invalid(ref m) if m.contains("loop")), "{e}");
    let dangling = "[[device]]\nbdf = \"0000:01:00.0\"\nupstream = \"0000:00:01.0\"\nvendor = 1\ndevice = 1\nclass = 1\n";
    assert!(Topology::from_toml_str(dangling).unwrap_err().to_string().contains("0000:00:01.0"));
    let dup = "[[device]]\nbdf = \"0000:01:00.0\"\nvendor = 1\ndevice = 1\nclass = 1\n[[device]]\nbdf = \"0000:01:00.0\"\nvendor = 1\ndevice = 1\nclass = 1\n";
    assert!(Topology::from_toml_str(dup).unwrap_err().to_string().contains("twice"));
    let bad_bdf = "[[device]]\nbdf = \"1:2:3\"\nvendor = 1\ndevice = 1\nclass = 1\n";
    assert!(matches!(Topology::from_toml_str(bad_bdf).unwrap_err(), TopoError::TomlParse { .. }));
    let too_big = "[[device]]\nbdf = \"0000:01:00.0\"\nvendor = 0x10000\ndevice = 1\nclass = 1\n";
    assert!(Topology::from_toml_str(too_big).is_err());
    // A misspelt key is an error naming it, not a key dropped (and a root bus invented).
    for (typo, key) in [("upstrem = \"0000:00:02.0\"\n", "upstrem"), ("numa_nod = 1\n", "numa_nod"), ("[device.p2pmem]\nsize_bytes = 8\navailable_bytes = 8\npublished = true\nallocat = true\n", "allocat")] {
        let text = format!("[[device]]\nbdf = \"0000:01:00.0\"\nvendor = 1\ndevice = 1\nclass = 1\n{typo}");
        let e = Topology::from_toml_str(&text).unwrap_err().to_string();
        assert!(e.contains(&format!("unknown field `{key}`")), "{e}");
    }
    let cpu_typo = "[cpu]\narch = \"x86\"\nvendor = \"amd\"\nsocket = 2\n";
    assert!(Topology::from_toml_str(cpu_typo).unwrap_err().to_string().contains("socket"));
    // More P2P memory free than registered is no machine's.
    let over = "[[device]]\nbdf = \"0000:01:00.0\"\nvendor = 1\ndevice = 1\nclass = 1\n[device.p2pmem]\nsize_bytes = 100\navailable_bytes = 1000\npublished = true\n";
    let e = Topology::from_toml_str(over).unwrap_err().to_string();
    assert!(e.contains("1000 bytes of P2P memory available of 100"), "{e}");
    // A label names one device (a second ssd0 was taken, and one of the two picked).
    let dev = |bdf: &str, extra: &str| format!("[[device]]\nbdf = \"{bdf}\"\nvendor = 1\ndevice = 1\nclass = 0x010802\n{extra}");
    let labels = dev("0000:01:00.0", "label = \"ssd0\"\n") + &dev("0000:02:00.0", "label = \"ssd0\"\n");
    assert!(Topology::from_toml_str(&labels).unwrap_err().to_string().contains("the label \"ssd0\" is given twice"));
    // A label that is also a kernel name of another device would never name its own.
    let nvme = "[[nvme]]\nname = \"nvme1\"\npci = \"0000:02:00.0\"\n";
    let block = "[[block]]\nname = \"nvme1n1\"\nkind = \"nvme_namespace\"\npci = [\"0000:02:00.0\"]\n";
    for (label, what) in [("nvme1", "NVMe controller nvme1 on 0000:02:00.0"), ("nvme1n1", "block device nvme1n1 on 0000:02:00.0"), ("0000:02:00.0", "PCI function 0000:02:00.0"), ("0000:07:00.0", "the PCI address 0000:07:00.0")] {
        let text = dev("0000:01:00.0", &format!("label = {label:?}\n")) + &dev("0000:02:00.0", "") + nvme + block;
        let e = Topology::from_toml_str(&text).unwrap_err().to_string();
        assert!(e.contains(&format!("device 0000:01:00.0 has the label {label:?}, which is ")) && e.contains(what), "{e}");
    }
    let own = dev("0000:02:00.0", "label = \"nvme1\"\n") + nvme + block;
    assert!(Topology::from_toml_str(&own).is_ok(), "a label naming its own controller shadows nothing");
    // An endpoint is no one's upstream bridge; a function of unknown class may be one.
    let below = |class: &str| dev("0000:01:00.0", "").replace("class = 0x010802", &format!("class = {class}")) + &dev("0000:02:00.0", "upstream = \"0000:01:00.0\"\n");
    let e = Topology::from_toml_str(&below("0x010802")).unwrap_err().to_string();
    assert!(e.contains("device 0000:02:00.0 names upstream bridge 0000:01:00.0, which is an endpoint (class 0x010802)"), "{e}");
    for class in ["0x060400", "0x000000", "0xff0000"] {
        assert!(Topology::from_toml_str(&below(class)).is_ok(), "{class}");
    }
    // Loops: an md device among its own members, however far down; a VF that is its own PF,
    // or whose PF is its VF.
    let md = |name: &str, members: &str| format!("[[block]]\nname = \"{name}\"\nkind = \"md\"\nmembers = [{members}]\n");
    let e = Topology::from_toml_str(&md("md0", "\"md0\"")).unwrap_err().to_string();
    assert!(e.contains("loop in stacked block devices' members: md0 -> md0"), "{e}");
    let e = Topology::from_toml_str(&(md("md0", "\"md1\"") + &md("md1", "\"md0\""))).unwrap_err().to_string();
    assert!(e.contains("md0 -> md1 -> md0"), "{e}");
    let e = Topology::from_toml_str(&dev("0000:01:00.0", "physfn = \"0000:01:00.0\"\n")).unwrap_err().to_string();
    assert!(e.contains("virtual function 0000:01:00.0 names itself as its physical function"), "{e}");
    let pair = dev("0000:01:00.0", "physfn = \"0000:02:00.0\"\n") + &dev("0000:02:00.0", "physfn = \"0000:01:00.0\"\n");
    let e = Topology::from_toml_str(&pair).unwrap_err().to_string();
    assert!(e.contains("which is itself a virtual function (of 0000:01:00.0): a loop"), "{e}");
    // A NUMA node the file does not list, where it lists them.
    let nodes = "[[numa_node]]\nid = 0\n".to_string() + &dev("0000:01:00.0", "numa_node = 42\n");
    let e = Topology::from_toml_str(&nodes).unwrap_err().to_string();
    assert!(e.contains("NUMA node 42, which is not in the topology (its nodes: 0)"), "{e}");
    assert!(Topology::from_toml_str(&dev("0000:01:00.0", "numa_node = 42\n")).is_ok(), "no node list: nothing to check against");
    let future = "schema_version = 99\n";
    assert!(Topology::from_toml_str(future).unwrap_err().to_string().contains("newer"));
}

#[test]
fn the_example_in_docs_topology_md_loads() {
    let doc = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/topology.md");
    let Ok(text) = std::fs::read_to_string(&doc) else {
        eprintln!("skipped: {} not found", doc.display());
        return;
    };
    let start = text.find("```toml\n").expect("a toml block in docs/topology.md") + "```toml\n".len();
    let end = start + text[start..].find("```").unwrap();
    let t = Topology::from_toml_str(&text[start..end]).unwrap();
    assert_eq!(t.verdict("cmb0", "nvm1").unwrap().path, P2pPath::BusAddress { distance: 4 });
}

/// A file with neither `[iommu]` nor `acs` keys: the verdict says it assumed no redirect and no
/// IOMMU, and the remedy is the file (its `acs` and `[iommu]`), not running as root.
#[test]
fn a_file_without_acs_or_iommu_says_what_it_assumed_and_how_to_say_it() {
    let text: String = HAND_WRITTEN
        .replace("[iommu]\nstatus = \"off\"\n", "")
        .lines()
        .filter(|l| !l.starts_with("acs = "))
        .map(|l| format!("{l}\n"))
        .collect();
    let t = Topology::from_toml_str(&text).unwrap();
    let v = t.verdict("cmb0", "nvm1").unwrap();
    assert_eq!(v.path, P2pPath::BusAddress { distance: 4 });
    let r = v.reasons.iter().find(|r| matches!(r, Reason::AcsUnknown { .. })).expect("ACS unknown said");
    assert!(matches!(r, Reason::AcsUnknown { not_in_file: true, iommu_unknown: true, .. }), "{r:?}");
    assert!(r.describe().contains("no active IOMMU"), "{}", r.describe());
    let remedy = r.remedy().unwrap();
    assert!(remedy.contains("acs = {") && remedy.contains("[iommu]") && !remedy.contains("run as root"), "{remedy}");
    // With the IOMMU given, only the ACS is asked for.
    let t = Topology::from_toml_str(&format!("{text}\n[iommu]\nstatus = \"off\"\n")).unwrap();
    let v = t.verdict("cmb0", "nvm1").unwrap();
    let r = v.reasons.iter().find(|r| matches!(r, Reason::AcsUnknown { .. })).unwrap();
    assert!(!r.describe().contains("IOMMU") && !r.remedy().unwrap().contains("[iommu]"), "{r:?}");
}

/// A partition in a file names its disk as its one member; it resolves to the disk.
#[test]
fn a_partition_in_a_file_names_one_disk() {
    let with = |members: &str| format!("{HAND_WRITTEN}\n[[block]]\nname = \"nvme0n1p1\"\nkind = \"partition\"\nmembers = {members}\n");
    let t = Topology::from_toml_str(&with("[\"nvme0n1\"]")).unwrap();
    let ep = t.resolve("nvme0n1p1").unwrap();
    assert_eq!((ep.pci, ep.partition_of.as_deref()), (vec!["0000:03:00.0".parse().unwrap()], Some("nvme0n1")));
    for bad in ["[]", "[\"nvme0n1\", \"nvme0n1\"]", "[\"nvme0n1p1\"]"] {
        let e = Topology::from_toml_str(&with(bad)).unwrap_err().to_string();
        assert!(e.contains("partition nvme0n1p1 must name its disk") || e.contains("loop"), "{bad}: {e}");
    }
}

/// A speed that is not a whole number of tenths of GT/s exports as itself (found by the fuzz
/// target `topo_file`: fuzz/regressions/topo_file/link-speed-0.16-gts, "2.52 GT/s" exported as
/// "2.5 GT/s" and read back as another model).
#[test]
fn link_speeds_export_with_every_digit_they_have() {
    let file = r#"
[[device]]
bdf = "17:02.0"
vendor = "8"
device = "3"
class = "0"
[device.link]
current_speed = "2.52 GT/s"
max_speed = ".16 GT/s"
"#;
    let t = Topology::from_toml_str(file).unwrap();
    let exported = t.to_toml_string().unwrap();
    assert!(exported.contains("\"2.52 GT/s\"") && exported.contains("\"0.16 GT/s\""), "{exported}");
    assert_eq!(Topology::from_toml_str(&exported).unwrap(), t);
    for (mt, text) in [(2500, "2.5 GT/s"), (8000, "8.0 GT/s"), (64000, "64.0 GT/s"), (2520, "2.52 GT/s"), (16, "0.016 GT/s")] {
        assert_eq!(peerpath_topo::LinkSpeed { mt_per_s: Some(mt) }.to_string(), text);
    }
}

/// A topology file's BARs, written into a fixture tree and read back, are the same BARs: a 32-bit
/// one (`mem32 = true`) keeps its width (the fixture wrote 64-bit flags for every BAR).
#[test]
fn bars_from_a_file_written_into_a_fixture_tree_read_back_with_their_width() {
    let file = r#"
[[device]]
bdf = "0000:00:06.0"
vendor = 0x10de
device = 0x20b0
class = 0x030200
bars = [
    { index = 0, start = "0xfd000000", size = "0x1000000", mem32 = true },
    { index = 1, start = "0x100000000000", size = "0x2000000000" },
    { index = 3, start = "0x102000000000", size = "0x2000000" },
    { index = 5, start = "0xfe000000", size = "0x1000", mem32 = true },
]
"#;
    let t = Topology::from_toml_str(file).unwrap();
    let gpu = &t.devices[0];
    let mut f = fixture::FakeFunction::new("0000:00:06.0", None, gpu.vendor, gpu.device, gpu.class);
    f.bars = gpu.bars.clone();
    let (_dir, back) = common::load(&fixture::FakeSysfs { functions: vec![f], ..Default::default() });
    assert_eq!(back.devices[0].bars, gpu.bars);
    assert_eq!(back.devices[0].bars.iter().filter(|b| b.mem32).count(), 2);
}
