//! The GPU machine's own sysfs (fixtures/h100-gpu-host, a real capture): the GPU, its BAR1,
//! its link, and how storage reaches its memory.

use peerpath_topo::gpu::GpuReason;
use peerpath_topo::{DeviceKind, Severity, Topology};
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
    assert_eq!(gpu.largest_bar().map(|(i, b)| (i, b.size)), Some((1, 128 << 30)));
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
