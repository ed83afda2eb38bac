//! The GPU machine's own sysfs (fixtures/h100-gpu-host, a real capture): the GPU, its BAR1,
//! its link, and how storage reaches its memory.

use peerpath_topo::gpu::GpuReason;
use peerpath_topo::plan::{Executor, GpuDataPath, Leg};
use peerpath_topo::{CpuVendor, DeviceKind, DeviceSelection, P2pProvider, Plan, PlanRequest, Severity, TopoError, Topology};
use std::path::Path;

/// The capture, unpacked: it is kept as the tarball it came in, since git would drop its
/// empty directories (and with them the targets of its block devices' links).
struct Fixture {
    dir: tempfile::TempDir,
}

impl Fixture {
    fn sys(&self) -> std::path::PathBuf {
        self.dir.path().join("sys")
    }
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let tgz = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/h100-gpu-host/sysfs.tgz");
    let ok = std::process::Command::new("tar").arg("xzf").arg(&tgz).arg("-C").arg(dir.path()).status().unwrap().success();
    assert!(ok, "tar xzf {}", tgz.display());
    Fixture { dir }
}

#[test]
fn the_h100_is_a_gpu_with_a_128_gib_bar1_on_an_x16_gen5_link() {
    let f = fixture();
    let t = Topology::from_sysfs(f.sys()).unwrap();
    let gpu = t.devices.iter().find(|d| d.kind == DeviceKind::Gpu).expect("a GPU");
    assert_eq!((gpu.vendor, gpu.device, gpu.bdf.to_string().as_str()), (0x10de, 0x2330, "0000:00:06.0"));
    assert_eq!(peerpath_topo::gpu::aperture(gpu).map(|(i, b)| (i, b.index, b.size)), Some((1, 2, 128 << 30)));
    let link = gpu.link.as_ref().expect("link read");
    assert_eq!(link.current_width, Some(16));
    let tree = t.render_tree();
    assert!(tree.contains("GPU  NVIDIA 10de:2330  [nvidia]  x16 Gen5 32.0 GT/s  BAR1 128 GiB"), "{tree}");
}

#[test]
fn without_module_directory_the_gpu_is_staged_and_nvidia_fs_is_unknown() {
    let f = fixture();
    let t = Topology::from_sysfs(f.sys()).unwrap();
    assert_eq!(t.gpu_modules, None);
    let paths = t.gpu_memory_paths();
    assert_eq!(paths.len(), 1);
    assert!(!paths[0].direct);
    assert!(paths[0].reasons.iter().any(|r| r.reason == GpuReason::ModulesUnknown));
    let json: serde_json::Value = serde_json::from_str(&t.to_json_string().unwrap()).unwrap();
    assert_eq!(json["gpu_memory"][0]["direct"], false);
    assert_eq!(json["gpu_memory"][0]["aperture_bytes"], 128u64 << 30);
}

#[test]
fn with_nvidia_loaded_and_no_nvidia_fs_as_on_that_machine_the_reason_blocks_with_a_remedy() {
    let f = fixture();
    let copy = f.sys();
    std::fs::create_dir_all(copy.join("module/nvidia")).unwrap();
    let t = Topology::from_sysfs(&copy).unwrap();
    let m = t.gpu_modules.expect("module/ read");
    assert!(m.nvidia && !m.nvidia_fs);
    let p = &t.gpu_memory_paths()[0];
    assert!(!p.direct);
    let r = p.reasons.iter().find(|r| r.reason == GpuReason::NoNvidiaFs).expect("nvidia-fs named");
    assert_eq!(r.severity, Severity::Blocks);
    assert!(r.remedy.as_deref().unwrap().contains("nvidia-fs"));
    // and with nvidia-fs loaded, the path is direct
    std::fs::create_dir_all(copy.join("module/nvidia_fs")).unwrap();
    let t = Topology::from_sysfs(&copy).unwrap();
    assert!(t.gpu_memory_paths()[0].direct);
}

/// That machine's kernel (gpu-machine.md: 6.18, CONFIG_PCI_P2PDMA not set), as its config file
/// beside the capture's `sys/` says it: the topology names the kernel, the GPU's verdict gives it
/// as a second blocking reason, and the plan's staged legs still say `nvfs` (the first).
#[test]
fn a_kernel_without_p2pdma_beside_the_capture_is_named_in_the_topology_and_the_gpu_verdict() {
    let f = fixture();
    std::fs::create_dir_all(f.sys().join("module/nvidia")).unwrap();
    std::fs::create_dir_all(f.dir.path().join("proc/sys/kernel")).unwrap();
    std::fs::create_dir_all(f.dir.path().join("boot")).unwrap();
    std::fs::write(f.dir.path().join("proc/sys/kernel/osrelease"), "6.18.0-h100\n").unwrap();
    std::fs::write(f.dir.path().join("boot/config-6.18.0-h100"), "CONFIG_PCI=y\n# CONFIG_PCI_P2PDMA is not set\n").unwrap();
    let t = Topology::from_sysfs(f.sys()).unwrap();
    let k = t.kernel.as_ref().expect("the kernel read beside sys/");
    assert_eq!((k.release.as_deref(), k.p2pdma), (Some("6.18.0-h100"), Some(false)));
    assert!(t.render_tree().contains("Kernel: 6.18.0-h100: CONFIG_PCI_P2PDMA not set (/boot/config-6.18.0-h100 (under "), "{}", t.render_tree());
    let p = &t.gpu_memory_paths()[0];
    let codes: Vec<&str> = p.reasons.iter().map(|r| r.reason.code()).collect();
    assert_eq!(codes, ["not_a_p2p_provider", "no_nvidia_fs", "kernel_without_p2pdma"]);
    assert!(p.reasons.iter().filter(|r| r.severity == Severity::Blocks).count() == 2, "{p:?}");
    let json: serde_json::Value = serde_json::from_str(&t.to_json_string().unwrap()).unwrap();
    assert_eq!(json["kernel"]["p2pdma"], false);
    assert_eq!(json["gpu_memory"][0]["reasons"][2]["reason"], "kernel_without_p2pdma");
    let plan = plan_on(&t, "gpu0");
    let table = plan.render_table();
    assert!(table.contains("(nvfs)"), "{table}");
    assert!(table.contains("built without P2PDMA"), "{table}");
}

#[test]
fn the_committed_topology_file_is_the_tree_read_back() {
    let f = fixture();
    let mut from_sys = Topology::from_sysfs(f.sys()).unwrap();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/h100-gpu-host");
    let mut from_file = Topology::from_toml_file(dir.join("topology.toml")).unwrap();
    from_sys.source = None;
    from_file.source = None;
    from_file.description = None;
    assert_eq!(from_sys, from_file);
}

/// `peerpath plan`'s request on that machine: its two virtio disks, on the devices named.
fn plan_on(t: &Topology, devices: &str) -> Plan {
    t.plan(&PlanRequest::new(["vda"], ["vdb"]).with_devices(DeviceSelection::parse(devices).unwrap())).unwrap()
}

#[test]
fn gpu0_names_the_first_gpu_in_pci_order_as_the_runtime_does() {
    let f = fixture();
    let t = Topology::from_sysfs(f.sys()).unwrap();
    assert_eq!(t.resolve("gpu0").unwrap().pci, vec!["0000:00:06.0".parse().unwrap()]);
    let e = t.resolve("gpu1").unwrap_err();
    assert!(matches!(e, TopoError::UnknownDevice { .. }) && e.to_string().contains("a GPU like gpu0"), "{e}");
    assert!(t.render_tree().contains("GPU gpu0 (00:06.0): storage -> GPU memory: staged"), "{}", t.render_tree());
    assert_eq!(t.gpu_memory_paths()[0].name, "gpu0");
}

#[test]
fn plan_lists_the_h100_with_bar1_link_and_verdict_and_leaves_it_unplaced_in_auto() {
    let f = fixture();
    let t = Topology::from_sysfs(f.sys()).unwrap();
    let p = plan_on(&t, "auto");
    assert_eq!(p.devices.len(), 1, "{:?}", p.devices);
    let d = &p.devices[0];
    assert_eq!((d.name.as_str(), d.bdf.to_string().as_str(), d.kind), ("gpu0", "0000:00:06.0", DeviceKind::Gpu));
    let g = d.gpu.as_ref().expect("the GPU's report");
    assert_eq!((g.aperture_bar, g.aperture_bytes), (Some(1), Some(128 << 30)));
    assert_eq!((g.link_width, g.link_generation, g.link_speed.as_deref()), (Some(16), Some(5), Some("32.0 GT/s")));
    assert_eq!(g.model, "NVIDIA 10de:2330");
    assert!(!g.direct);
    assert_eq!(g.data_path, GpuDataPath::Staged);
    let codes: Vec<&str> = g.reasons.iter().map(|r| r.reason.as_str()).collect();
    assert_eq!(codes, ["not_a_p2p_provider", "modules_unknown", "kernel_p2pdma_unknown"]);
    // Auto mode does not place a staged GPU: the CPU path touches host memory no more.
    assert!(!d.usable && d.why.contains("--devices gpu0"), "{}", d.why);
    assert_eq!(d.streams, 0);
    assert!(p.streams[0].executor.is_cpu());
    let table = p.render_table();
    assert!(table.contains("GPU gpu0 (0000:00:06.0): NVIDIA 10de:2330 [nvidia], BAR1 128 GiB, x16 Gen5 32.0 GT/s"), "{table}");
    assert!(table.contains("whether nvidia-fs is loaded is unknown"), "{table}");
    assert!(table.contains("data path: staged through pinned host memory"), "{table}");
    assert!(table.contains("not used: gpu0 (0000:00:06.0)"), "{table}");
}

#[test]
fn naming_gpu0_or_its_address_stages_both_legs_through_host_memory_and_says_so() {
    let f = fixture();
    let t = Topology::from_sysfs(f.sys()).unwrap();
    let p = plan_on(&t, "gpu0");
    let by_address = plan_on(&t, "0000:00:06.0");
    assert_eq!((&p.devices, &p.streams, &p.decisions), (&by_address.devices, &by_address.streams, &by_address.decisions));
    assert!(p.devices[0].usable, "{:?}", p.devices[0]);
    let s = &p.streams[0];
    assert!(matches!(&s.executor, Executor::Device { name, .. } if name == "gpu0"), "{:?}", s.executor);
    for leg in [&s.read, &s.write] {
        match leg {
            Leg::Staged { why, .. } => {
                assert_eq!(why.code, "nvfs?");
                assert!(why.text.contains("storage cannot DMA into its memory"), "{}", why.text);
            }
            other => panic!("a GPU without a direct path is staged, not {other:?}"),
        }
        assert!(!leg.is_p2p());
    }
    assert_eq!(s.host_legs(), 2);
    assert_eq!((p.groups[0].p2p_legs, p.groups[0].host_legs), (0, 2));
    assert_eq!(p.summary, "1 stream: 1 on 1 device (0 legs through a host bounce buffer, 2 staged through pinned host memory), 0 on the host CPU");
    let table = p.render_table();
    let row = table.lines().find(|l| l.starts_with("0 ")).unwrap();
    assert!(row.contains("gpu0") && row.matches("staged node 0 (nvfs?)").count() == 2, "{row}");
    assert!(table.contains("[1 stream, 2 legs through pinned host memory]"), "{table}");
    let explain = p.explain();
    assert!(explain.contains("read vda (0000:00:01.0, virtio block, NUMA node 0): staged through pinned host memory on NUMA node 0 (host memory is touched)"), "{explain}");
    assert!(explain.contains("memory-path verdict: storage -> GPU memory: staged through pinned host memory"), "{explain}");
    let back: Plan = serde_json::from_str(&p.to_json_string().unwrap()).unwrap();
    assert_eq!(back, p);
}

#[test]
fn without_nvidia_fs_the_plan_names_it_with_its_remedy_and_with_it_stays_staged_honestly() {
    let f = fixture();
    let copy = f.sys();
    std::fs::create_dir_all(copy.join("module/nvidia")).unwrap();
    let t = Topology::from_sysfs(&copy).unwrap();
    let p = plan_on(&t, "gpu0");
    let Leg::Staged { why, .. } = &p.streams[0].read else { panic!("{:?}", p.streams[0].read) };
    assert_eq!(why.code, "nvfs");
    assert!(why.remedy.as_deref().is_some_and(|r| r.contains("modprobe nvidia-fs")), "{why:?}");
    let g = p.devices[0].gpu.as_ref().unwrap();
    assert!(g.reasons.iter().any(|r| r.reason == "no_nvidia_fs" && r.severity == Severity::Blocks));
    // nvidia-fs loaded: the verdict says direct, but only cuFile confirms it when the GPU opens.
    std::fs::create_dir_all(copy.join("module/nvidia_fs")).unwrap();
    let t = Topology::from_sysfs(&copy).unwrap();
    let p = plan_on(&t, "gpu0");
    let g = p.devices[0].gpu.as_ref().unwrap();
    assert!(g.direct);
    assert_eq!(g.data_path, GpuDataPath::Staged);
    assert!(g.data_path_why.contains("where cuFile confirms it") && g.data_path_why.contains("planned staged"), "{}", g.data_path_why);
    let Leg::Staged { why, .. } = &p.streams[0].write else { panic!("{:?}", p.streams[0].write) };
    assert_eq!(why.code, "cufile");
}

#[test]
fn a_gpu_whose_memory_is_a_p2pdma_provider_is_still_staged_by_peerpath_s_gpu_device() {
    let f = fixture();
    let mut t = Topology::from_sysfs(f.sys()).unwrap();
    // An AMD Zen host (P2P through the root complex allowed) whose GPU published p2pmem/:
    // peerpath's GPU device still stages through its pinned window, and the plan says so.
    t.cpu.vendor = CpuVendor::Amd;
    t.cpu.family = Some(0x19);
    let gpu = t.devices.iter_mut().find(|d| d.kind == DeviceKind::Gpu).unwrap();
    gpu.p2pmem = Some(P2pProvider { size_bytes: 1 << 30, available_bytes: 1 << 30, published: true, allocate: true });
    let p = plan_on(&t, "auto");
    let d = &p.devices[0];
    assert!(!d.usable, "auto mode does not place a staged GPU: {}", d.why);
    assert_eq!(d.gpu.as_ref().unwrap().data_path, GpuDataPath::Staged);
    assert!(matches!(&p.streams[0].executor, Executor::Cpu { .. }), "{:?}", p.streams[0].executor);
    let p = plan_on(&t, "gpu0");
    let s = &p.streams[0];
    assert!(matches!(&s.executor, Executor::Device { name, .. } if name == "gpu0"), "{:?}", s.executor);
    assert!(!s.read.is_p2p() && !s.write.is_p2p(), "{:?} {:?}", s.read, s.write);
    assert!(p.summary.contains("2 staged through pinned host memory"), "{}", p.summary);
    assert!(serde_json::to_string(&p).unwrap().contains("does not read or write P2PDMA memory yet"));
}

/// Two GPUs named for one stream: the one left idle is told another named GPU took it (both
/// would stage), not that a peer-to-peer device did.
#[test]
fn an_idle_named_gpu_beside_another_says_the_other_took_the_stream() {
    let f = fixture();
    let mut t = Topology::from_sysfs(f.sys()).unwrap();
    let mut second = t.devices.iter().find(|d| d.kind == DeviceKind::Gpu).unwrap().clone();
    second.bdf = "0000:00:07.0".parse().unwrap();
    t.devices.push(second);
    t.devices.sort_by_key(|d| d.bdf);
    let p = plan_on(&t, "gpu0,gpu1");
    assert_eq!(p.streams.len(), 1);
    let idle = p.decisions.iter().find(|d| d.choice == "idle" && d.subject.starts_with("gpu")).expect("an idle GPU");
    assert!(idle.why[0].starts_with("other named devices took every stream"), "{:?}", idle.why);
}

/// The capture's functions have no NUMA node of their own (`numa_node` -1) on a machine of one
/// node (node0, CPUs 0-15): they are on that node; with a second node they are unknown again.
#[test]
fn on_a_machine_of_one_numa_node_a_function_without_one_is_on_it() {
    let f = fixture();
    let t = Topology::from_sysfs(f.sys()).unwrap();
    let gpu = t.devices.iter().find(|d| d.kind == DeviceKind::Gpu).expect("a GPU");
    assert_eq!(gpu.numa_node, None);
    assert_eq!(t.numa_node_of(gpu.bdf), Some(0));
    let node1 = f.sys().join("devices/system/node/node1");
    std::fs::create_dir_all(&node1).unwrap();
    std::fs::write(node1.join("cpulist"), "16-31\n").unwrap();
    let t = Topology::from_sysfs(f.sys()).unwrap();
    assert_eq!(t.numa_node_of(gpu.bdf), None);
}

/// Sources and targets are storage the job reads and writes: the GPU (it computes, named in
/// `--devices`) and the NIC are refused as either, naming the device and its class, as a bridge
/// is (both were planned as disks on the CPU path).
#[test]
fn the_gpu_and_the_nic_are_no_storage() {
    let f = fixture();
    let t = Topology::from_sysfs(f.sys()).unwrap();
    for (dev, what) in [("0000:00:06.0", "is a GPU (0000:00:06.0, class 0x030200), not storage"), ("gpu0", "is a GPU (0000:00:06.0, class 0x030200)"), ("0000:00:03.0", "is a NIC (0000:00:03.0, class 0x020000), not storage")] {
        for req in [PlanRequest::new([dev], ["vdb"]), PlanRequest::new(["vda"], [dev])] {
            let e = t.plan(&req).unwrap_err();
            assert!(matches!(&e, TopoError::WrongRole(m) if m.starts_with(dev) && m.contains(what) && !m.contains('\n')), "{dev}: {e}");
            assert_eq!(e.to_string().contains("name it in --devices (gpu0)"), what.contains("GPU"), "{e}");
        }
    }
}

/// BAR1 is found as NVIDIA's driver finds it, from the `resource` file's flags: register 1
/// after a 32-bit BAR0, register 2 after a 64-bit one; an I/O BAR is no memory BAR and is not
/// counted (it made the 128 GiB window "BAR2" below).
#[test]
fn bar1_is_found_from_the_resource_flags_as_the_driver_finds_it() {
    let f = fixture();
    let resource = f.sys().join("devices/pci0000:00/0000:00:06.0/resource");
    let original = std::fs::read_to_string(&resource).unwrap();
    let zero = "0x0000000000000000 0x0000000000000000 0x0000000000000000\n";
    let bar1 = |lines: &[&str]| {
        let mut text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        text.push_str(&original.lines().skip(lines.len()).map(|l| format!("{l}\n")).collect::<String>());
        std::fs::write(&resource, text).unwrap();
        let t = Topology::from_sysfs(f.sys()).unwrap();
        let gpu = t.devices.iter().find(|d| d.kind == DeviceKind::Gpu).unwrap();
        let line = t.render_tree().lines().find(|l| l.contains("GPU  NVIDIA")).unwrap().to_string();
        (peerpath_topo::gpu::aperture(gpu).map(|(i, b)| (i, b.index, b.size)), line)
    };
    let io = "0x0000000000001000 0x000000000000107f 0x0000000000040101";
    let mem32_16m = "0x00000000fd000000 0x00000000fdffffff 0x0000000000040200";
    let mem64_128g = "0x0000100000000000 0x0000101fffffffff 0x000000000014220c";
    // An I/O BAR ahead, a 32-bit BAR0 register after it: BAR1 is register 1, BAR0 being no
    // 64-bit memory BAR.
    let (a, line) = bar1(&[io, mem32_16m, mem64_128g, zero.trim_end()]);
    assert_eq!(a, Some((1, 1, 16 << 20)), "{line}");
    assert!(line.contains("BAR1 16 MiB") && !line.contains("BAR2"), "{line}");
    // An older GPU's layout: a 32-bit BAR0, BAR1 64-bit in registers 1-2, an I/O BAR last.
    let (a, line) = bar1(&[mem32_16m, mem64_128g, zero.trim_end(), zero.trim_end(), zero.trim_end(), io]);
    assert_eq!(a, Some((1, 1, 128 << 30)), "{line}");
    // The H100's 64-bit BAR0 said to be 32-bit: register 1 is empty, so there is no BAR1 (the
    // 128 GiB BAR in register 2 is not it).
    let h100_bar0_as_32_bit = original.lines().next().unwrap().replace("0x000000000014220c", "0x0000000000040200");
    let (a, line) = bar1(&[&h100_bar0_as_32_bit]);
    assert_eq!(a, None, "{line}");
    assert!(!line.contains("BAR"), "{line}");
}

/// A topology file exported before BARs carried `mem32` says nothing of any BAR's width, so every
/// BAR reads as 64-bit. An A100's layout there (a 32-bit BAR0, BAR1 in registers 1-2, BAR3 in
/// 3-4) still has its BAR1: a memory BAR in register 1 proves BAR0 32-bit (a 64-bit BAR0 takes
/// registers 0 and 1). It was lost from the tree and from plan's text and JSON.
#[test]
fn an_a100_layout_in_a_file_without_mem32_keeps_its_bar1_in_topo_and_plan() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/h100-gpu-host");
    let mut t = Topology::from_toml_file(dir.join("topology.toml")).unwrap();
    let gpu = t.devices.iter_mut().find(|d| d.kind == DeviceKind::Gpu).unwrap();
    assert_eq!(gpu.bars.iter().map(|b| (b.index, b.mem32)).collect::<Vec<_>>(), [(0, false), (2, false), (4, false)]);
    for b in &mut gpu.bars {
        b.index = [0, 1, 1, 3, 3][b.index as usize];
    }
    let file = t.to_toml_string().unwrap();
    assert!(!file.contains("mem32"), "{file}");
    let t = Topology::from_toml_str(&file).unwrap();
    let gpu = t.devices.iter().find(|d| d.kind == DeviceKind::Gpu).unwrap();
    assert_eq!(peerpath_topo::gpu::aperture(gpu).map(|(i, b)| (i, b.index, b.size)), Some((1, 1, 128 << 30)));
    let tree = t.render_tree();
    assert!(tree.contains("GPU  NVIDIA 10de:2330  [nvidia]  x16 Gen5 32.0 GT/s  BAR1 128 GiB"), "{tree}");
    let p = plan_on(&t, "gpu0");
    let g = p.devices[0].gpu.as_ref().expect("the GPU's report");
    assert_eq!((g.aperture_bar, g.aperture_bytes), (Some(1), Some(128 << 30)));
    let table = p.render_table();
    assert!(table.contains("GPU gpu0 (0000:00:06.0): NVIDIA 10de:2330 [nvidia], BAR1 128 GiB, x16"), "{table}");
    let json: serde_json::Value = serde_json::from_str(&p.to_json_string().unwrap()).unwrap();
    assert_eq!((&json["devices"][0]["gpu"]["aperture_bar"], &json["devices"][0]["gpu"]["aperture_bytes"]), (&1.into(), &(128u64 << 30).into()), "{json}");
}
