//! A builder of fake sysfs trees, and the canned machines of the seeds.
//!
//! The trees look like the kernel's: every PCI function is a directory nested below its
//! upstream bridge (`devices/pci0000:00/0000:00:01.1/0000:01:00.0`), `bus/pci/devices/<BDF>` and
//! `class/{nvme,block,...}/<name>` are relative symlinks into `devices/`, `driver` is a symlink,
//! `config` holds binary config space (with a PCIe capability and, where asked, an ACS
//! capability), NVMe controllers have `cmbsz`/`cmbloc`, multipath heads live under
//! `devices/virtual/nvme-subsystem/`, md/dm under `devices/virtual/block/` with `slaves/`.
//!
//! ```no_run
//! let spec = peerpath_topo::fixture::intel_switch_acs();
//! spec.write(std::path::Path::new("/tmp/fake-sys")).unwrap();
//! let topo = peerpath_topo::Topology::from_sysfs("/tmp/fake-sys").unwrap();
//! ```

use std::collections::BTreeMap;
use std::fs;
use std::path::{Component, Path, PathBuf};

use crate::bdf::Bdf;
use crate::cmb::{Cmb, CMBSZ_CQS, CMBSZ_RDS, CMBSZ_SQS, CMBSZ_WDS};
use crate::error::{Result, TopoError};
use crate::model::{Bar, P2pProvider};
use crate::pcicfg::{synth_config, ACS_CR, ACS_RR, ACS_SV, ACS_UF};
use crate::sysfs::{IORESOURCE_MEM, IORESOURCE_MEM_64};

/// PCIe capability port types for [`FakeFunction::pcie_type`].
pub const PCIE_ENDPOINT: u8 = 0;
pub const PCIE_ROOT_PORT: u8 = 4;
pub const PCIE_SWITCH_UP: u8 = 5;
pub const PCIE_SWITCH_DOWN: u8 = 6;

/// ACS control as an active IOMMU leaves it on a bridge (`pci_std_enable_acs`: SV RR CR UF).
pub const ACS_CTRL_IOMMU: u16 = ACS_SV | ACS_RR | ACS_CR | ACS_UF;

/// One fake PCI function.
#[derive(Clone, Debug)]
pub struct FakeFunction {
    pub bdf: Bdf,
    /// Upstream bridge; `None` = on the root bus named by the address.
    pub parent: Option<Bdf>,
    pub vendor: u16,
    pub device: u16,
    pub class: u32,
    /// PCIe capability port type; `None` = a conventional PCI function (256-byte config).
    pub pcie_type: Option<u8>,
    /// An ACS capability with this control register value.
    pub acs_ctrl: Option<u16>,
    /// Truncate `config` to this many bytes (64 = what an unprivileged reader gets).
    pub config_len: Option<usize>,
    pub label: Option<String>,
    pub driver: Option<String>,
    pub numa_node: i32,
    pub local_cpulist: Option<String>,
    /// (current speed, max speed, current width, max width) as sysfs prints them.
    pub link: Option<(String, String, u8, u8)>,
    pub p2pmem: Option<P2pProvider>,
    pub bars: Vec<Bar>,
    /// An SR-IOV virtual function of this physical function: `physfn` here, `virtfn<N>` and
    /// `sriov_numvfs` there (N counts the PF's VFs in address order).
    pub physfn: Option<Bdf>,
}

impl FakeFunction {
    pub fn new(bdf: &str, parent: Option<&str>, vendor: u16, device: u16, class: u32) -> FakeFunction {
        FakeFunction {
            bdf: bdf.parse().unwrap_or_else(|e| panic!("fixture address: {e}")),
            parent: parent.map(|p| p.parse().unwrap_or_else(|e| panic!("fixture address: {e}"))),
            vendor,
            device,
            class,
            pcie_type: None,
            acs_ctrl: None,
            config_len: None,
            label: None,
            driver: None,
            numa_node: -1,
            local_cpulist: None,
            link: None,
            p2pmem: None,
            bars: Vec::new(),
            physfn: None,
        }
    }

    pub fn pcie(mut self, t: u8) -> Self {
        self.pcie_type = Some(t);
        self
    }
    pub fn acs(mut self, ctrl: u16) -> Self {
        self.acs_ctrl = Some(ctrl);
        self
    }
    pub fn label(mut self, l: &str) -> Self {
        self.label = Some(l.to_string());
        self
    }
    pub fn driver(mut self, d: &str) -> Self {
        self.driver = Some(d.to_string());
        self
    }
    pub fn node(mut self, n: i32, cpus: &str) -> Self {
        self.numa_node = n;
        self.local_cpulist = Some(cpus.to_string());
        self
    }
    /// Link trained at its maximum: `gts` GT/s, `width` lanes.
    pub fn link(mut self, gts: &str, width: u8) -> Self {
        let s = format!("{gts} GT/s PCIe");
        self.link = Some((s.clone(), s, width, width));
        self
    }
    pub fn p2pmem(mut self, size: u64, available: u64, published: bool) -> Self {
        self.p2pmem = Some(P2pProvider {
            size_bytes: size,
            available_bytes: available,
            published,
            allocate: true,
        });
        self
    }
    pub fn bar(mut self, index: u8, start: u64, size: u64) -> Self {
        self.bars.push(Bar { index, start, size, mem32: false });
        self
    }
    /// A virtual function of the physical function `pf`.
    pub fn vf_of(mut self, pf: &str) -> Self {
        self.physfn = Some(pf.parse().unwrap_or_else(|e| panic!("fixture address: {e}")));
        self
    }
}

/// One fake NVMe controller with its namespaces.
#[derive(Clone, Debug)]
pub struct FakeNvme {
    /// Controller instance: `nvme<instance>`.
    pub instance: u32,
    pub pci: Bdf,
    pub model: String,
    pub serial: String,
    /// Subsystem instance. Two controllers in one subsystem get a multipath head per namespace.
    pub subsystem: u32,
    pub cmb: Option<Cmb>,
    pub nsids: Vec<u32>,
}

/// A stacked block device (md or dm).
#[derive(Clone, Debug)]
pub struct FakeStack {
    pub name: String,
    pub md: bool,
    pub members: Vec<String>,
    /// md level (`raid0`) or dm name (`vg0-lv0`).
    pub detail: String,
}

/// A whole fake machine.
#[derive(Clone, Debug, Default)]
pub struct FakeSysfs {
    pub name: String,
    pub description: String,
    /// `devices/system/cpu/modalias`; `None` = file absent.
    pub cpu_modalias: Option<String>,
    /// (cpu id, package id)
    pub cpus: Vec<(u32, u32)>,
    /// (node id, cpulist)
    pub numa: Vec<(u32, String)>,
    /// `class/iommu` entries; `None` = no `class/iommu` directory.
    pub iommu_units: Option<Vec<String>>,
    pub iommu_domain: Option<String>,
    pub functions: Vec<FakeFunction>,
    pub nvme: Vec<FakeNvme>,
    pub stacks: Vec<FakeStack>,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> TopoError + '_ {
    move |e| TopoError::Io {
        path: path.to_path_buf(),
        source: e,
    }
}

fn write(path: &Path, content: impl AsRef<[u8]>) -> Result<()> {
    if let Some(p) = path.parent() {
        fs::create_dir_all(p).map_err(io(p))?;
    }
    fs::write(path, content).map_err(io(path))
}

fn mkdir(path: &Path) -> Result<()> {
    fs::create_dir_all(path).map_err(io(path))
}

/// The relative path from directory `from` to `to` (both under one root, no `..` inside).
fn relative(from: &Path, to: &Path) -> PathBuf {
    let f: Vec<Component> = from.components().collect();
    let t: Vec<Component> = to.components().collect();
    let common = f.iter().zip(t.iter()).take_while(|(a, b)| a == b).count();
    let mut out = PathBuf::new();
    for _ in common..f.len() {
        out.push("..");
    }
    for c in &t[common..] {
        out.push(c.as_os_str());
    }
    out
}

/// Creates `link` as a relative symlink to `target`.
pub fn symlink(link: &Path, target: &Path) -> Result<()> {
    let parent = link.parent().unwrap_or(Path::new("/"));
    mkdir(parent)?;
    let rel = relative(parent, target);
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(&rel, link).map_err(io(link))
    }
    #[cfg(not(unix))]
    {
        let _ = rel;
        Err(TopoError::Invalid("fake sysfs trees need a unix filesystem (symlinks)".into()))
    }
}

/// `resource` flags as the kernel writes them for a 32-bit memory BAR (IORESOURCE_MEM and
/// IORESOURCE_SIZEALIGN 0x40000) and for a 64-bit prefetchable one (IORESOURCE_MEM_64 and
/// IORESOURCE_PREFETCH 0x2000 besides, the BAR register's type bits 0xc below).
const MEM32_FLAGS: u64 = IORESOURCE_MEM | 0x4_0000;
const MEM64_PREFETCH_FLAGS: u64 = MEM32_FLAGS | IORESOURCE_MEM_64 | 0x2000 | 0xc;

impl FakeSysfs {
    /// The real directory of each function, nested below its parents.
    pub fn device_paths(&self, root: &Path) -> Result<BTreeMap<Bdf, PathBuf>> {
        let by_bdf: BTreeMap<Bdf, &FakeFunction> = self.functions.iter().map(|f| (f.bdf, f)).collect();
        let mut out = BTreeMap::new();
        for f in &self.functions {
            let mut chain = vec![f.bdf];
            let mut cur = f;
            while let Some(p) = cur.parent {
                if chain.len() > self.functions.len() {
                    return Err(TopoError::Invalid(format!("fixture: loop above {}", f.bdf)));
                }
                chain.push(p);
                cur = by_bdf
                    .get(&p)
                    .ok_or_else(|| TopoError::Invalid(format!("fixture: parent {p} of {} missing", f.bdf)))?;
            }
            let top = *chain.last().unwrap_or(&f.bdf);
            let mut path = root.join("devices").join(top.root_bus_name());
            for b in chain.iter().rev() {
                path.push(b.to_string());
            }
            out.insert(f.bdf, path);
        }
        Ok(out)
    }

    /// Writes the tree under `root` (which should be empty or absent).
    pub fn write(&self, root: &Path) -> Result<()> {
        mkdir(root)?;
        let root = fs::canonicalize(root).map_err(io(root))?;
        mkdir(&root.join("bus/pci/devices"))?;
        mkdir(&root.join("class/block"))?;
        mkdir(&root.join("class/nvme"))?;
        let paths = self.device_paths(&root)?;
        for f in &self.functions {
            let dir = &paths[&f.bdf];
            mkdir(dir)?;
            write(&dir.join("vendor"), format!("{:#06x}\n", f.vendor))?;
            write(&dir.join("device"), format!("{:#06x}\n", f.device))?;
            write(&dir.join("class"), format!("{:#08x}\n", f.class))?;
            write(&dir.join("numa_node"), format!("{}\n", f.numa_node))?;
            if let Some(c) = &f.local_cpulist {
                write(&dir.join("local_cpulist"), format!("{c}\n"))?;
            }
            if let Some((cs, ms, cw, mw)) = &f.link {
                write(&dir.join("current_link_speed"), format!("{cs}\n"))?;
                write(&dir.join("max_link_speed"), format!("{ms}\n"))?;
                write(&dir.join("current_link_width"), format!("{cw}\n"))?;
                write(&dir.join("max_link_width"), format!("{mw}\n"))?;
            }
            if let Some(l) = &f.label {
                write(&dir.join("label"), format!("{l}\n"))?;
            }
            let bridge = f.class >> 8 == 0x0604;
            let mut cfg = synth_config(f.vendor, f.device, f.class, bridge, f.pcie_type, f.acs_ctrl);
            if let Some(n) = f.config_len {
                cfg.truncate(n);
            }
            write(&dir.join("config"), &cfg)?;
            let mut resource = String::new();
            for i in 0..13u8 {
                match f.bars.iter().find(|b| b.index == i) {
                    Some(b) => resource.push_str(&format!(
                        "{:#018x} {:#018x} {:#018x}\n",
                        b.start,
                        b.start + b.size - 1,
                        if b.mem32 { MEM32_FLAGS } else { MEM64_PREFETCH_FLAGS }
                    )),
                    None => resource.push_str("0x0000000000000000 0x0000000000000000 0x0000000000000000\n"),
                }
            }
            write(&dir.join("resource"), resource)?;
            if let Some(p) = &f.p2pmem {
                write(&dir.join("p2pmem/size"), format!("{}\n", p.size_bytes))?;
                write(&dir.join("p2pmem/available"), format!("{}\n", p.available_bytes))?;
                write(&dir.join("p2pmem/published"), format!("{}\n", p.published as u8))?;
                if p.allocate {
                    write(&dir.join("p2pmem/allocate"), "")?;
                }
            }
            if let Some(d) = &f.driver {
                let drv = root.join("bus/pci/drivers").join(d);
                for file in ["bind", "unbind", "uevent"] {
                    write(&drv.join(file), "")?;
                }
                symlink(&dir.join("driver"), &drv)?;
            }
            symlink(&root.join("bus/pci/devices").join(f.bdf.to_string()), dir)?;
        }
        self.write_sriov(&paths)?;
        self.write_nvme(&root, &paths)?;
        for s in &self.stacks {
            let dir = root.join("devices/virtual/block").join(&s.name);
            if s.md {
                write(&dir.join("md/level"), format!("{}\n", s.detail))?;
            } else {
                write(&dir.join("dm/name"), format!("{}\n", s.detail))?;
            }
            mkdir(&dir.join("slaves"))?;
            for m in &s.members {
                let target = fs::canonicalize(root.join("class/block").join(m)).map_err(io(&root.join("class/block").join(m)))?;
                symlink(&dir.join("slaves").join(m), &target)?;
            }
            write(&dir.join("size"), "0\n")?;
            symlink(&root.join("class/block").join(&s.name), &dir)?;
        }
        if let Some(m) = &self.cpu_modalias {
            write(&root.join("devices/system/cpu/modalias"), format!("{m}\n"))?;
        }
        for (cpu, pkg) in &self.cpus {
            write(
                &root.join(format!("devices/system/cpu/cpu{cpu}/topology/physical_package_id")),
                format!("{pkg}\n"),
            )?;
        }
        for (node, list) in &self.numa {
            write(&root.join(format!("devices/system/node/node{node}/cpulist")), format!("{list}\n"))?;
        }
        // An empty `class/iommu` is left out: git cannot keep an empty directory, and the reader
        // takes a missing one as "off" (the kernel has no IOMMU support) just as an empty one.
        if let Some(units) = self.iommu_units.as_ref().filter(|u| !u.is_empty()) {
            mkdir(&root.join("class/iommu"))?;
            for u in units {
                let dir = root.join("devices/virtual/iommu").join(u);
                write(&dir.join("uevent"), format!("DEVNAME={u}\n"))?;
                symlink(&root.join("class/iommu").join(u), &dir)?;
            }
            if let Some(t) = &self.iommu_domain {
                write(&root.join("kernel/iommu_groups/0/type"), format!("{t}\n"))?;
            }
        }
        Ok(())
    }

    /// SR-IOV: `physfn` in each virtual function, `virtfn<N>`, `sriov_numvfs` and
    /// `sriov_totalvfs` in its physical function, as the kernel's `pci_iov_sysfs_link()` makes them.
    fn write_sriov(&self, paths: &BTreeMap<Bdf, PathBuf>) -> Result<()> {
        let mut vfs: BTreeMap<Bdf, Vec<Bdf>> = BTreeMap::new();
        for f in &self.functions {
            if let Some(pf) = f.physfn {
                vfs.entry(pf).or_default().push(f.bdf);
            }
        }
        for (pf, list) in &mut vfs {
            let pf_dir = paths.get(pf).ok_or_else(|| TopoError::Invalid(format!("fixture: physical function {pf} missing")))?;
            list.sort();
            for (n, vf) in list.iter().enumerate() {
                symlink(&pf_dir.join(format!("virtfn{n}")), &paths[vf])?;
                symlink(&paths[vf].join("physfn"), pf_dir)?;
            }
            write(&pf_dir.join("sriov_numvfs"), format!("{}\n", list.len()))?;
            write(&pf_dir.join("sriov_totalvfs"), format!("{}\n", list.len()))?;
        }
        Ok(())
    }

    fn write_nvme(&self, root: &Path, paths: &BTreeMap<Bdf, PathBuf>) -> Result<()> {
        let mut subsystems: BTreeMap<u32, Vec<&FakeNvme>> = BTreeMap::new();
        for n in &self.nvme {
            subsystems.entry(n.subsystem).or_default().push(n);
        }
        for (sub, ctrls) in &subsystems {
            let sdir = root.join("devices/virtual/nvme-subsystem").join(format!("nvme-subsys{sub}"));
            mkdir(&sdir)?;
            write(&sdir.join("subsysnqn"), format!("nqn.2014-08.org.nvmexpress:fixture-subsys{sub}\n"))?;
            symlink(&root.join("class/nvme-subsystem").join(format!("nvme-subsys{sub}")), &sdir)?;
            let multipath = ctrls.len() > 1;
            for n in ctrls {
                let pci_dir = paths.get(&n.pci).ok_or_else(|| {
                    TopoError::Invalid(format!("fixture: nvme{} on missing function {}", n.instance, n.pci))
                })?;
                let cdir = pci_dir.join("nvme").join(format!("nvme{}", n.instance));
                mkdir(&cdir)?;
                write(&cdir.join("transport"), "pcie\n")?;
                write(&cdir.join("model"), format!("{}\n", n.model))?;
                write(&cdir.join("serial"), format!("{}\n", n.serial))?;
                write(&cdir.join("address"), format!("{}\n", n.pci))?;
                if let Some(c) = n.cmb {
                    write(&cdir.join("cmbsz"), format!("{}\n", c.cmbsz))?;
                    write(&cdir.join("cmbloc"), format!("{}\n", c.cmbloc))?;
                    write(
                        &cdir.join("cmb"),
                        format!("cmbloc : x{:08x}\ncmbsz  : x{:08x}\n", c.cmbloc, c.cmbsz),
                    )?;
                }
                symlink(&cdir.join("device"), pci_dir)?;
                symlink(&root.join("class/nvme").join(format!("nvme{}", n.instance)), &cdir)?;
                symlink(&sdir.join(format!("nvme{}", n.instance)), &cdir)?;
                for ns in &n.nsids {
                    let name = if multipath {
                        format!("nvme{sub}c{}n{ns}", n.instance)
                    } else {
                        format!("nvme{sub}n{ns}")
                    };
                    let nsdir = cdir.join(&name);
                    write(&nsdir.join("size"), "7501476528\n")?;
                    write(&nsdir.join("queue/logical_block_size"), "4096\n")?;
                    symlink(&root.join("class/block").join(&name), &nsdir)?;
                }
            }
            if multipath {
                let mut nsids: Vec<u32> = ctrls.iter().flat_map(|c| c.nsids.iter().copied()).collect();
                nsids.sort();
                nsids.dedup();
                for ns in nsids {
                    let name = format!("nvme{sub}n{ns}");
                    let hdir = sdir.join(&name);
                    write(&hdir.join("size"), "7501476528\n")?;
                    write(&hdir.join("queue/logical_block_size"), "4096\n")?;
                    symlink(&root.join("class/block").join(&name), &hdir)?;
                }
            }
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// The canned machines.

const MIB: u64 = 1024 * 1024;

fn nvme(instance: u32, pci: Bdf, model: &str, cmb: Option<Cmb>) -> FakeNvme {
    FakeNvme {
        instance,
        pci,
        model: model.to_string(),
        serial: format!("PPFIX{instance:04}"),
        subsystem: instance,
        cmb,
        nsids: vec![1],
    }
}

/// The seed case-study server (seed 003): two-socket AMD EPYC 7002 (Rome, family 0x17), eight
/// root complexes, 24 U.2 bays each on its own root port (no switch) holding 18 SSDs and 6
/// Eideticom NoLoad CSPs with 512 MiB CMBs; three CSPs and nine SSDs per socket (NPS1: one NUMA
/// node per socket). IOMMU off.
pub fn epyc_case_study() -> FakeSysfs {
    let mut f = FakeSysfs {
        name: "epyc-case-study".into(),
        description: "two-socket AMD EPYC 7002, 24 U.2 bays: 18 NVMe SSDs + 6 CSPs with CMBs, no switch".into(),
        cpu_modalias: Some("cpu:type:x86,ven0002fam0017mod0031:feature:,0000,0001,0002,0003".into()),
        cpus: (0..64).map(|c| (c, c / 32)).collect(),
        numa: vec![(0, "0-31".into()), (1, "32-63".into())],
        iommu_units: Some(vec![]),
        ..Default::default()
    };
    // Per host bridge, which of its three bays hold a CSP.
    let layout: [[bool; 3]; 4] = [[true, false, false], [false, true, false], [false, false, true], [false, false, false]];
    let (mut csp, mut ssd, mut ctrl) = (0u32, 0u32, 0u32);
    for socket in 0..2u32 {
        let cpus = if socket == 0 { "0-31" } else { "32-63" };
        for (h, bays) in layout.iter().enumerate() {
            let base = (socket as usize * 4 + h) * 0x20;
            let hb = format!("0000:{base:02x}:00.0");
            f.functions.push(FakeFunction::new(&hb, None, 0x1022, 0x1480, 0x060000).node(socket as i32, cpus));
            for (port, is_csp) in bays.iter().enumerate() {
                let rp = format!("0000:{base:02x}:01.{}", port + 1);
                let bus = base + port + 1;
                let ep = format!("0000:{bus:02x}:00.0");
                let gen = if *is_csp { "8.0" } else { "16.0" };
                f.functions.push(
                    FakeFunction::new(&rp, None, 0x1022, 0x1483, 0x060400)
                        .pcie(PCIE_ROOT_PORT)
                        .acs(0)
                        .driver("pcieport")
                        .node(socket as i32, cpus)
                        .link(gen, 4),
                );
                let bar_base = 0x100_0000_0000u64 + (ctrl as u64) * 0x1_0000_0000;
                let mut dev = if *is_csp {
                    FakeFunction::new(&ep, Some(&rp), 0x1de5, 0x3000, 0x010802)
                        .label(&format!("csp{csp}"))
                        .bar(0, bar_base + 0x8000_0000, 16 * 1024)
                        .bar(2, bar_base, 512 * MIB)
                        .p2pmem(512 * MIB, 512 * MIB, true)
                } else {
                    FakeFunction::new(&ep, Some(&rp), 0x144d, 0xa824, 0x010802)
                        .label(&format!("ssd{ssd}"))
                        .bar(0, bar_base, 32 * 1024)
                };
                dev = dev.pcie(PCIE_ENDPOINT).driver("nvme").node(socket as i32, cpus).link(gen, 4);
                f.functions.push(dev);
                let bdf: Bdf = ep.parse().expect("fixture address");
                let n = if *is_csp {
                    csp += 1;
                    nvme(ctrl, bdf, "Eideticom NoLoad CSP", Some(Cmb::encode(512 * MIB, 2, CMBSZ_RDS | CMBSZ_WDS)))
                } else {
                    ssd += 1;
                    nvme(ctrl, bdf, "SAMSUNG MZWLJ3T8HBLS-00007", None)
                };
                f.nvme.push(n);
                ctrl += 1;
            }
        }
    }
    f
}

/// An Intel Xeon E5 v4 (Broadwell-EP) server, host bridge 8086:6f00 (not on the allow-list),
/// with a Broadcom PEX 8796 switch on root port 00:02.0 holding a CSP and four SSDs; ACS
/// redirect (firmware) on the downstream port above ssd2; one more SSD and a NIC on their own
/// root ports. IOMMU off.
pub fn intel_switch_acs() -> FakeSysfs {
    let mut f = FakeSysfs {
        name: "intel-switch-acs".into(),
        description: "Intel Xeon E5 v4 server, PCIe switch with a CSP and 4 SSDs, ACS redirect on one downstream port".into(),
        cpu_modalias: Some("cpu:type:x86,ven0000fam0006mod004F:feature:,0000,0001,0002".into()),
        cpus: (0..16).map(|c| (c, 0)).collect(),
        numa: vec![(0, "0-15".into())],
        iommu_units: Some(vec![]),
        ..Default::default()
    };
    let c = "0-15";
    f.functions.push(FakeFunction::new("0000:00:00.0", None, 0x8086, 0x6f00, 0x060000).node(0, c));
    for (rp, dev, w) in [("0000:00:01.0", 0x6f02u16, 8u8), ("0000:00:02.0", 0x6f04, 16), ("0000:00:03.0", 0x6f08, 4)] {
        f.functions.push(
            FakeFunction::new(rp, None, 0x8086, dev, 0x060400)
                .pcie(PCIE_ROOT_PORT)
                .acs(0)
                .driver("pcieport")
                .node(0, c)
                .link("8.0", w),
        );
    }
    f.functions.push(
        FakeFunction::new("0000:01:00.0", Some("0000:00:02.0"), 0x10b5, 0x8796, 0x060400)
            .pcie(PCIE_SWITCH_UP)
            .driver("pcieport")
            .node(0, c)
            .link("8.0", 16),
    );
    let endpoints = [
        ("0000:03:00.0", "csp0", true),
        ("0000:04:00.0", "ssd0", false),
        ("0000:05:00.0", "ssd1", false),
        ("0000:06:00.0", "ssd2", false),
        ("0000:07:00.0", "ssd3", false),
    ];
    for (i, (ep, label, is_csp)) in endpoints.iter().enumerate() {
        let dsp = format!("0000:02:{i:02x}.0");
        let acs = if *label == "ssd2" { ACS_SV | ACS_RR | ACS_CR | ACS_UF } else { 0 };
        f.functions.push(
            FakeFunction::new(&dsp, Some("0000:01:00.0"), 0x10b5, 0x8796, 0x060400)
                .pcie(PCIE_SWITCH_DOWN)
                .acs(acs)
                .driver("pcieport")
                .node(0, c)
                .link("8.0", 4),
        );
        let bar_base = 0x3800_0000_0000u64 + (i as u64) * 0x4000_0000;
        let dev = if *is_csp {
            FakeFunction::new(ep, Some(&dsp), 0x1de5, 0x3000, 0x010802)
                .bar(2, bar_base, 256 * MIB)
                .p2pmem(256 * MIB, 256 * MIB, true)
        } else {
            FakeFunction::new(ep, Some(&dsp), 0x8086, 0x0a54, 0x010802).bar(0, bar_base, 16 * 1024)
        };
        f.functions.push(dev.label(label).pcie(PCIE_ENDPOINT).driver("nvme").node(0, c).link("8.0", 4));
        let cmb = is_csp.then(|| Cmb::encode(256 * MIB, 2, CMBSZ_RDS | CMBSZ_WDS));
        let model = if *is_csp { "Eideticom NoLoad CSP" } else { "INTEL SSDPE2KX040T8" };
        f.nvme.push(nvme(i as u32, ep.parse().expect("fixture address"), model, cmb));
    }
    f.functions.push(
        FakeFunction::new("0000:08:00.0", Some("0000:00:03.0"), 0x8086, 0x0a54, 0x010802)
            .label("ssd4")
            .pcie(PCIE_ENDPOINT)
            .driver("nvme")
            .node(0, c)
            .link("8.0", 4)
            .bar(0, 0x3900_0000_0000, 16 * 1024),
    );
    f.nvme.push(nvme(5, "0000:08:00.0".parse().expect("fixture address"), "INTEL SSDPE2KX040T8", None));
    f.functions.push(
        FakeFunction::new("0000:09:00.0", Some("0000:00:01.0"), 0x15b3, 0x1017, 0x020000)
            .label("nic0")
            .pcie(PCIE_ENDPOINT)
            .driver("mlx5_core")
            .node(0, c)
            .link("8.0", 8),
    );
    f
}

/// The seed's FPGA host (seed 001): the FPGA's PCIe root complex (Xilinx root port, not on the
/// allow-list, aarch64 CPU) with an x8 Gen3 up-link to a cascade of 8 switch cards
/// (Microchip PM8532), each with 4 M.2 SSDs: 32 SSDs, no CMBs.
pub fn fpga_cascade() -> FakeSysfs {
    let mut f = FakeSysfs {
        name: "fpga-cascade".into(),
        description: "FPGA NVMe host: Xilinx root complex, x8 Gen3 up-link, 8 cascaded PM8532 switch cards x 4 M.2 SSDs".into(),
        cpu_modalias: Some("cpu:type:aarch64:feature:,0000,0001,0002".into()),
        cpus: (0..4).map(|c| (c, 0)).collect(),
        numa: vec![(0, "0-3".into())],
        iommu_units: Some(vec![]),
        ..Default::default()
    };
    let c = "0-3";
    f.functions.push(
        FakeFunction::new("0000:00:00.0", None, 0x10ee, 0xd021, 0x060400)
            .label("fpga-root-port")
            .pcie(PCIE_ROOT_PORT)
            .driver("pcieport")
            .node(0, c)
            .link("8.0", 8),
    );
    let mut upstream_port = "0000:00:00.0".to_string();
    let mut ssd = 0u32;
    for card in 0..8u32 {
        let b = 1 + 6 * card as usize;
        let usp = format!("0000:{b:02x}:00.0");
        f.functions.push(
            FakeFunction::new(&usp, Some(&upstream_port), 0x11f8, 0x8532, 0x060400)
                .label(&format!("card{card}"))
                .pcie(PCIE_SWITCH_UP)
                .driver("pcieport")
                .node(0, c)
                .link("8.0", 8),
        );
        for port in 0..5usize {
            if port == 4 && card == 7 {
                break;
            }
            let dsp = format!("0000:{:02x}:{port:02x}.0", b + 1);
            let width = if port == 4 { 8 } else { 4 };
            f.functions.push(
                FakeFunction::new(&dsp, Some(&usp), 0x11f8, 0x8532, 0x060400)
                    .pcie(PCIE_SWITCH_DOWN)
                    .acs(0)
                    .driver("pcieport")
                    .node(0, c)
                    .link("8.0", width),
            );
            if port < 4 {
                let ep = format!("0000:{:02x}:00.0", b + 2 + port);
                f.functions.push(
                    FakeFunction::new(&ep, Some(&dsp), 0x144d, 0xa808, 0x010802)
                        .label(&format!("ssd{ssd}"))
                        .pcie(PCIE_ENDPOINT)
                        .driver("nvme")
                        .node(0, c)
                        .link("8.0", 4)
                        .bar(0, 0x6000_0000 + (ssd as u64) * 0x10_0000, 16 * 1024),
                );
                f.nvme.push(nvme(ssd, ep.parse().expect("fixture address"), "Samsung SSD 970 EVO Plus 1TB", None));
                ssd += 1;
            } else {
                upstream_port = dsp;
            }
        }
    }
    f
}

/// An Intel Xeon (Ice Lake, host bridges 8086:09a2, allow-listed) server with the IOMMU on:
/// ACS redirect enabled on every bridge; a switch with a CSP and two SSDs (md0 = RAID0 over
/// them); a dual-port NVMe (two controllers, one subsystem) behind a multipath head; an SSD whose
/// CMB lacks RDS/WDS (registered, not published); an SSD with a 1 MiB CMB (not registered).
pub fn iommu_multipath() -> FakeSysfs {
    let mut f = FakeSysfs {
        name: "iommu-multipath".into(),
        description: "Intel Xeon Ice Lake server, IOMMU on, multipath head over a dual-port NVMe, md RAID, CMBs without RDS/WDS".into(),
        cpu_modalias: Some("cpu:type:x86,ven0000fam0006mod006A:feature:,0000,0001,0002".into()),
        cpus: (0..32).map(|c| (c, 0)).collect(),
        numa: vec![(0, "0-31".into())],
        iommu_units: Some(vec!["dmar0".into(), "dmar1".into(), "dmar2".into()]),
        iommu_domain: Some("DMA-FQ".into()),
        ..Default::default()
    };
    let c = "0-31";
    let a = ACS_CTRL_IOMMU;
    for hb in ["0000:00:00.0", "0000:17:00.0", "0000:3a:00.0"] {
        f.functions.push(FakeFunction::new(hb, None, 0x8086, 0x09a2, 0x060000).node(0, c));
    }
    let rp = |bdf: &str, w: u8| {
        FakeFunction::new(bdf, None, 0x8086, 0x347a, 0x060400)
            .pcie(PCIE_ROOT_PORT)
            .acs(a)
            .driver("pcieport")
            .node(0, c)
            .link("16.0", w)
    };
    f.functions.push(rp("0000:17:02.0", 16));
    f.functions.push(rp("0000:17:04.0", 4));
    f.functions.push(rp("0000:3a:02.0", 2));
    f.functions.push(rp("0000:3a:04.0", 2));
    f.functions.push(rp("0000:3a:06.0", 4));
    f.functions.push(
        FakeFunction::new("0000:18:00.0", Some("0000:17:02.0"), 0x11f8, 0x4052, 0x060400)
            .pcie(PCIE_SWITCH_UP)
            .driver("pcieport")
            .node(0, c)
            .link("16.0", 16),
    );
    let sw = [("0000:1a:00.0", "csp0"), ("0000:1b:00.0", "ssd0"), ("0000:1c:00.0", "ssd1")];
    for (i, (ep, label)) in sw.iter().enumerate() {
        let dsp = format!("0000:19:{i:02x}.0");
        f.functions.push(
            FakeFunction::new(&dsp, Some("0000:18:00.0"), 0x11f8, 0x4052, 0x060400)
                .pcie(PCIE_SWITCH_DOWN)
                .acs(a)
                .driver("pcieport")
                .node(0, c)
                .link("16.0", 4),
        );
        let bar_base = 0x2000_0000_0000u64 + (i as u64) * 0x4000_0000;
        let dev = if i == 0 {
            FakeFunction::new(ep, Some(&dsp), 0x1de5, 0x3000, 0x010802)
                .bar(2, bar_base, 512 * MIB)
                .p2pmem(512 * MIB, 512 * MIB, true)
        } else {
            FakeFunction::new(ep, Some(&dsp), 0x144d, 0xa824, 0x010802).bar(0, bar_base, 32 * 1024)
        };
        f.functions.push(dev.label(label).pcie(PCIE_ENDPOINT).driver("nvme").node(0, c).link("16.0", 4));
        let (model, cmb) = if i == 0 {
            ("Eideticom NoLoad CSP", Some(Cmb::encode(512 * MIB, 2, CMBSZ_RDS | CMBSZ_WDS)))
        } else {
            ("SAMSUNG MZWLJ3T8HBLS-00007", None)
        };
        f.nvme.push(nvme(i as u32, ep.parse().expect("fixture address"), model, cmb));
    }
    // Dual-port drive: two functions on two root ports, one subsystem (3), controllers 3 and 4.
    for (ep, rp_bdf, label, inst) in [
        ("0000:3b:00.0", "0000:3a:02.0", "dual-a", 3u32),
        ("0000:3c:00.0", "0000:3a:04.0", "dual-b", 4u32),
    ] {
        f.functions.push(
            FakeFunction::new(ep, Some(rp_bdf), 0x1e0f, 0x0011, 0x010802)
                .label(label)
                .pcie(PCIE_ENDPOINT)
                .driver("nvme")
                .node(0, c)
                .link("16.0", 2)
                .bar(0, 0x2100_0000_0000 + inst as u64 * 0x10_0000, 32 * 1024),
        );
        let mut n = nvme(inst, ep.parse().expect("fixture address"), "KIOXIA KCM6DRUL3T84", None);
        n.subsystem = 3;
        f.nvme.push(n);
    }
    // CMB with SQS/CQS but without RDS/WDS: registered (p2pmem exists), not published; the
    // driver's submission queues took 256 KiB of it.
    f.functions.push(
        FakeFunction::new("0000:1d:00.0", Some("0000:17:04.0"), 0x144d, 0xa824, 0x010802)
            .label("ssd-cmb-nords")
            .pcie(PCIE_ENDPOINT)
            .driver("nvme")
            .node(0, c)
            .link("16.0", 4)
            .bar(0, 0x2200_0000_0000, 32 * 1024)
            .bar(2, 0x2200_0400_0000, 64 * MIB)
            .p2pmem(64 * MIB, 64 * MIB - 256 * 1024, false),
    );
    f.nvme.push(nvme(
        5,
        "0000:1d:00.0".parse().expect("fixture address"),
        "SAMSUNG MZWLJ3T8HBLS-00007",
        Some(Cmb::encode(64 * MIB, 2, CMBSZ_SQS | CMBSZ_CQS)),
    ));
    // A 1 MiB CMB: below the 2 MiB alignment, so the driver never registers it.
    f.functions.push(
        FakeFunction::new("0000:3d:00.0", Some("0000:3a:06.0"), 0x1b36, 0x0010, 0x010802)
            .label("ssd-cmb-small")
            .pcie(PCIE_ENDPOINT)
            .driver("nvme")
            .node(0, c)
            .link("16.0", 4)
            .bar(0, 0x2300_0000_0000, 16 * 1024)
            .bar(2, 0x2300_0010_0000, MIB),
    );
    f.nvme.push(nvme(
        6,
        "0000:3d:00.0".parse().expect("fixture address"),
        "QEMU NVMe Ctrl",
        Some(Cmb::encode(MIB, 2, CMBSZ_RDS | CMBSZ_WDS)),
    ));
    f.stacks.push(FakeStack {
        name: "md0".into(),
        md: true,
        members: vec!["nvme1n1".into(), "nvme2n1".into()],
        detail: "raid0".into(),
    });
    f
}

/// An AMD EPYC 7003 (Milan, family 0x19) server with SR-IOV enabled and the IOMMU on (so the
/// kernel set ACS redirect on the root ports): a dual-port Mellanox ConnectX-6 Dx (`nic0`, `nic1`:
/// two physical functions, 48 virtual functions each) on root port 00:01.1, and a Samsung PM1735
/// NVMe SSD (`ssd0`) with 32 virtual functions on root port 00:03.1. No P2P memory.
pub fn sriov_host() -> FakeSysfs {
    let mut f = FakeSysfs {
        name: "sriov-host".into(),
        description: "AMD EPYC 7003 server, IOMMU on, SR-IOV: a dual-port NIC with 2 x 48 VFs and an NVMe SSD with 32 VFs".into(),
        cpu_modalias: Some("cpu:type:x86,ven0002fam0019mod0001:feature:,0000,0001,0002,0003".into()),
        cpus: (0..64).map(|c| (c, 0)).collect(),
        numa: vec![(0, "0-63".into())],
        iommu_units: Some(vec!["ivhd0".into()]),
        iommu_domain: Some("DMA-FQ".into()),
        ..Default::default()
    };
    let c = "0-63";
    f.functions.push(FakeFunction::new("0000:00:00.0", None, 0x1022, 0x1480, 0x060000).node(0, c));
    for (rp, width) in [("0000:00:01.1", 16), ("0000:00:03.1", 4)] {
        f.functions.push(
            FakeFunction::new(rp, None, 0x1022, 0x1483, 0x060400)
                .pcie(PCIE_ROOT_PORT)
                .acs(ACS_CTRL_IOMMU)
                .driver("pcieport")
                .node(0, c)
                .link("16.0", width),
        );
    }
    // A virtual function at `devfn` on `bus` (ARI: the device and function numbers are one
    // 8-bit number), below the physical function's bridge.
    let vf = |bus: u8, devfn: u32, parent: &str, pf: &str, vendor: u16, device: u16, class: u32| {
        FakeFunction::new(&format!("0000:{bus:02x}:{:02x}.{}", devfn >> 3, devfn & 7), Some(parent), vendor, device, class)
            .vf_of(pf)
            .pcie(PCIE_ENDPOINT)
            .node(0, c)
    };
    // ConnectX-6 Dx: first VF offset 2, stride 1: PF0's VFs at devfn 2..=49, PF1's at 50..=97.
    for (port, pf) in ["0000:01:00.0", "0000:01:00.1"].into_iter().enumerate() {
        f.functions.push(
            FakeFunction::new(pf, Some("0000:00:01.1"), 0x15b3, 0x101d, 0x020000)
                .label(&format!("nic{port}"))
                .pcie(PCIE_ENDPOINT)
                .driver("mlx5_core")
                .node(0, c)
                .link("16.0", 16)
                .bar(0, 0x3800_0000_0000 + port as u64 * 0x200_0000, 32 * MIB),
        );
        for i in 0..48 {
            f.functions.push(vf(1, 2 + port as u32 * 48 + i, "0000:00:01.1", pf, 0x15b3, 0x101e, 0x020000).driver("mlx5_core"));
        }
    }
    // PM1735: VFs at devfn 1..=32, bound to no driver in the host (they are for guests).
    let ssd = "0000:02:00.0";
    f.functions.push(
        FakeFunction::new(ssd, Some("0000:00:03.1"), 0x144d, 0xa824, 0x010802)
            .label("ssd0")
            .pcie(PCIE_ENDPOINT)
            .driver("nvme")
            .node(0, c)
            .link("16.0", 4)
            .bar(0, 0x3900_0000_0000, 32 * 1024),
    );
    f.nvme.push(nvme(0, ssd.parse().expect("fixture address"), "SAMSUNG MZWLJ3T8HBLS-00007", None));
    for devfn in 1..=32 {
        f.functions.push(vf(2, devfn, "0000:00:03.1", ssd, 0x144d, 0xa824, 0x010802));
    }
    f
}

/// All canned machines, in a fixed order.
pub fn all() -> Vec<FakeSysfs> {
    vec![epyc_case_study(), intel_switch_acs(), fpga_cascade(), iommu_multipath(), sriov_host()]
}

/// The directory holding the committed fixture trees of this crate.
pub fn committed_fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}
