//! `peerpath probe`: the P2P pre-flight. Before a job puts data in device
//! memory, check that it can: find the P2P memory providers (PCI functions
//! with a `p2pmem/` directory), map 4 KiB of each through
//! `p2pmem/allocate`, and, given a target, do one 4 KiB O_DIRECT read from
//! it into that memory. Refusals come back as reasons in words:
//!
//! - no provider: why that is expected (kernel without CONFIG_PCI_P2PDMA,
//!   no NVMe controller with a CMB);
//! - EREMOTEIO: the block layer refused P2P pages (the target's queue does
//!   not advertise P2P: md, dm, an NVMe multipath head, anything but
//!   nvme-pci), or the DMA mapping refused them (no P2P route between the
//!   provider and the target's controller: ACS, host bridge not allow-listed);
//! - EINVAL: alignment, or a file system that will not do O_DIRECT.
//!
//! Buffered I/O into P2P memory is refused outright: the page cache would
//! copy to and from the BAR with CPU loads and stores (slow on x86, may
//! corrupt or crash elsewhere). P2P memory is never registered with
//! io_uring (that pins FOLL_LONGTERM, which P2P pages refuse).
//!
//! Exit codes: 0 every provider probed passed; 14 no provider, or a probe
//! failed (the report says why); 13 topology error; 2 usage.

use clap::Args;
use peerpath_io::{IoEngine, IoOp, SyncEngine, UringEngine, Waker};
use peerpath_mem::{MappedRegion, RegionAllocator, RegionBuf, RegionError};
use peerpath_runtime::report::{count, quoted_name, Quoted};
use peerpath_topo::{Bdf, PciDevice, TopoError, Topology};
use serde_json::{json, Value};
use std::fs::OpenOptions;
use std::io::{self, Read, Seek};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

/// Exit code: no P2P provider, or P2P memory could not be mapped or read into.
pub const EXIT_NO_P2P: u8 = 14;
/// Exit code: a topology error (a `--sysfs` root that is not one, no such PCI function).
pub const EXIT_TOPOLOGY: u8 = 13;

/// Bytes mapped and read by the probe.
const PROBE_BYTES: usize = 4096;

#[derive(Args)]
pub struct ProbeArgs {
    /// Probe only this provider: a PCI address (0000:03:00.0), an NVMe controller (nvme0,
    /// /dev/nvme0) or a block device on one (nvme0n1, /dev/nvme0n1), or a symbolic link to
    /// one (/dev/disk/by-id/nvme-...), followed.
    #[arg(long, value_name = "DEVICE", conflicts_with = "all")]
    device: Option<String>,
    /// Probe every provider (the default when --device is not given).
    #[arg(long)]
    all: bool,
    /// Read 4 KiB with O_DIRECT from this file or block device into each provider's memory.
    #[arg(long, value_name = "FILE_OR_BLOCKDEV")]
    target: Option<PathBuf>,
    /// Read this sysfs root (a real /sys or a fixture tree).
    #[arg(value_hint = clap::ValueHint::DirPath, long, default_value = "/sys")]
    sysfs: PathBuf,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// One step's outcome: passed or not, and why, in words.
struct Step {
    ok: bool,
    errno: Option<i32>,
    detail: String,
}

impl Step {
    fn pass(detail: impl Into<String>) -> Step {
        Step { ok: true, errno: None, detail: detail.into() }
    }
    fn fail(errno: Option<i32>, detail: impl Into<String>) -> Step {
        Step { ok: false, errno, detail: detail.into() }
    }
    fn to_json(&self) -> Value {
        json!({ "ok": self.ok, "errno": self.errno, "detail": self.detail })
    }
}

struct ProviderProbe {
    device: Bdf,
    name: String,
    size_bytes: u64,
    available_bytes: u64,
    published: bool,
    allocate: bool,
    /// `allocate` is the kernel's sysfs attribute (false in a fixture tree).
    allocate_on_sysfs: bool,
    map: Step,
    read: Option<Step>,
    notes: Vec<String>,
}

impl ProviderProbe {
    fn passed(&self) -> bool {
        self.allocate_on_sysfs && self.map.ok && !matches!(&self.read, Some(r) if !r.ok)
    }
}

/// `peerpath probe`. An error that stops it before any provider is probed (usage 2, a target
/// missing 3, topology 13) is said on standard error, and with `--json` also as a `probe`
/// document on standard output (`error`, `passed` false, `providers_found` null), so that a
/// script reading it gets why.
pub fn main(a: ProbeArgs) -> ExitCode {
    match run(&a) {
        Ok(code) => ExitCode::from(code),
        Err((code, msg)) => {
            eprintln!("peerpath: error: {msg}");
            if a.json {
                println!("{}", crate::jsonout::stamped("probe", &document(&a, None, false, code, &msg, Some(&msg), Vec::new())));
            }
            ExitCode::from(code)
        }
    }
}

fn run(a: &ProbeArgs) -> Result<u8, (u8, String)> {
    // A target that is not there is the user's to fix whatever the machine has (it was said
    // only after a provider was found, or not at all): exit 3, as a source missing elsewhere.
    if let Some(t) = &a.target {
        let m = std::fs::metadata(t).map_err(|e| (3, format!("--target {}: cannot read it: {e}", Quoted(t))))?;
        // Nor is one that nothing can be read from into P2P memory (a directory, a FIFO).
        if !(m.is_file() || m.file_type().is_block_device()) {
            return Err((2, format!("--target {} is neither a regular file nor a block device: give one to read into P2P memory", Quoted(t))));
        }
    }
    let device = a.device.as_deref().map(DeviceArg::new).transpose()?;
    let topo = Topology::from_sysfs(&a.sysfs).map_err(|e| (EXIT_TOPOLOGY, crate::sysfs_error(&a.sysfs, e)))?;
    let providers: Vec<&PciDevice> = topo.devices.iter().filter(|d| d.p2pmem.is_some()).collect();

    let chosen: Vec<&PciDevice> = match &device {
        Some(arg) => {
            let dev = match named_function(&topo, &a.sysfs, arg)? {
                Ok(dev) => dev,
                Err(no_pci) => return finish(a, &topo, &[], Some(no_pci)),
            };
            if dev.p2pmem.is_none() {
                let msg = format!(
                    "{}{} is not a P2P memory provider: {} has no p2pmem/ directory (no driver registered P2P memory for it; nvme does so only for a CMB, on a kernel with CONFIG_PCI_P2PDMA). Providers here: {}",
                    arg.resolved.as_ref().map(|_| format!("--device {}: ", arg.shown())).unwrap_or_default(),
                    dev.display_name(),
                    device_dir(&a.sysfs, dev.bdf).display(),
                    if providers.is_empty() { "none".to_string() } else { providers.iter().map(|p| p.bdf.to_string()).collect::<Vec<_>>().join(", ") }
                );
                return finish(a, &topo, &[], Some(msg));
            }
            vec![dev]
        }
        None => providers.clone(),
    };
    if chosen.is_empty() {
        return finish(a, &topo, &[], Some(no_provider_message(&a.sysfs, &topo)));
    }
    let mut probes: Vec<ProviderProbe> = chosen.iter().map(|d| probe_provider(a, &topo, d)).collect();
    if let (Some(arg @ DeviceArg { resolved: Some(r), .. }), [probe]) = (&device, probes.as_mut_slice()) {
        probe.notes.insert(0, format!("--device {} is {r}, a symbolic link followed", quoted_name(&arg.given)));
    }
    finish(a, &topo, &probes, None)
}

/// `--device` as given, and where it is a symbolic link (udev's `/dev/disk/by-id/nvme-...`,
/// `/dev/disk/by-path/pci-...-nvme-1`) the path it resolves to (`/dev/nvme0n1`), which is
/// the name looked up.
struct DeviceArg {
    given: String,
    resolved: Option<String>,
}

impl DeviceArg {
    /// Follows `given` where it is a symbolic link; one that leads nowhere is the user's to fix
    /// (exit 3, as a missing source), named with what it points to.
    fn new(given: &str) -> Result<DeviceArg, (u8, String)> {
        let path = Path::new(given);
        if !std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
            return Ok(DeviceArg { given: given.to_string(), resolved: None });
        }
        let target = std::fs::canonicalize(path).map_err(|e| {
            let to = std::fs::read_link(path).map(|t| Quoted(&t).to_string()).unwrap_or_else(|_| "?".to_string());
            (3, format!("--device {}: a symbolic link to {to}, which cannot be followed: {e}", Quoted(path)))
        })?;
        Ok(DeviceArg { given: given.to_string(), resolved: Some(target.to_string_lossy().into_owned()) })
    }

    /// The name looked up.
    fn name(&self) -> &str {
        self.resolved.as_deref().unwrap_or(&self.given)
    }

    /// The name as messages say it: a link with the device it resolved to.
    fn shown(&self) -> String {
        match &self.resolved {
            Some(r) => format!("{} ({r})", quoted_name(&self.given)),
            None => self.given.clone(),
        }
    }
}

/// The PCI function `--device` names: a PCI address, or a drive as a user names it, an NVMe
/// controller (`nvme0`, `/dev/nvme0`) or a block device (`nvme0n1`, `/dev/nvme0n1`, a
/// partition), found through the sysfs tree read (`class/nvme/<name>/device`, `class/block/
/// <name>`), or a firmware label. `Ok(Err(why))`: the name is there but on no PCI function
/// (a fabrics controller), so it has no P2P memory to probe.
fn named_function<'t>(topo: &'t Topology, sysfs: &Path, arg: &DeviceArg) -> Result<Result<&'t PciDevice, String>, (u8, String)> {
    let (name, shown) = (arg.name(), arg.shown());
    // Only an address has a colon: a malformed one is the user's to fix.
    if name.contains(':') {
        let bdf: Bdf = name.parse().map_err(|e| (2, format!("--device {shown}: {e}")))?;
        return topo.device(bdf).map(Ok).ok_or_else(|| (EXIT_TOPOLOGY, format!("--device {bdf}: no such PCI function under {}", sysfs.display())));
    }
    if name.trim().is_empty() {
        return Err((2, "--device names nothing: give a PCI address (0000:03:00.0), an NVMe controller (nvme0) or a block device (nvme0n1)".to_string()));
    }
    let endpoint = topo.resolve(name).map_err(|e| match e {
        TopoError::UnknownDevice { .. } => (
            EXIT_TOPOLOGY,
            format!(
                "--device {shown}: no NVMe controller ({}), block device ({}) or PCI function labelled {:?} there; give a PCI address (0000:03:00.0), an NVMe controller (nvme0) or a block device (nvme0n1)",
                sysfs.join("class/nvme").display(),
                sysfs.join("class/block").display(),
                name.strip_prefix("/dev/").unwrap_or(name)
            ),
        ),
        e => (EXIT_TOPOLOGY, format!("--device {shown}: {e}")),
    })?;
    let functions: Vec<&PciDevice> = endpoint.pci.iter().filter_map(|b| topo.device(*b)).collect();
    match functions.as_slice() {
        [one] => Ok(Ok(one)),
        [] => Ok(Err(format!("--device {shown} is on no PCI function (not a PCIe drive), so there is no P2P memory of its to probe"))),
        many => Err((
            2,
            format!(
                "--device {shown} is on {} PCI functions ({}): name the one to probe",
                many.len(),
                many.iter().map(|d| d.bdf.to_string()).collect::<Vec<_>>().join(", ")
            ),
        )),
    }
}

fn device_dir(sysfs: &Path, bdf: Bdf) -> PathBuf {
    sysfs.join("bus/pci/devices").join(bdf.to_string())
}

/// Prints the report and returns the exit code.
fn finish(a: &ProbeArgs, topo: &Topology, probes: &[ProviderProbe], refusal: Option<String>) -> Result<u8, (u8, String)> {
    let all_passed = refusal.is_none() && !probes.is_empty() && probes.iter().all(|p| p.passed());
    let code = if all_passed { 0 } else { EXIT_NO_P2P };
    let providers_total = topo.devices.iter().filter(|d| d.p2pmem.is_some()).count();
    let summary = match &refusal {
        Some(m) => m.clone(),
        None if all_passed => match &a.target {
            Some(t) => format!("P2P works: 4 KiB read with O_DIRECT from {} into the memory of every provider probed", t.display()),
            None => "P2P memory maps on every provider probed (give --target FILE_OR_BLOCKDEV to test a read into it)".to_string(),
        },
        None if probes.iter().all(|p| p.map.ok && !p.allocate_on_sysfs) => {
            "the providers' allocate files are plain files, not the kernel's (a fixture tree): what the probe did is reported above, but it proves nothing about P2P".to_string()
        }
        None => "P2P does not work for at least one provider probed; the reasons are above".to_string(),
    };
    if a.json {
        let providers = probes.iter().map(|p| json!({
                "device": p.device.to_string(),
                "name": p.name,
                "size_bytes": p.size_bytes,
                "available_bytes": p.available_bytes,
                "published": p.published,
                "allocate": p.allocate,
                "allocate_on_sysfs": p.allocate_on_sysfs,
                "map": p.map.to_json(),
                "read": p.read.as_ref().map(Step::to_json),
                "notes": p.notes,
                "passed": p.passed(),
            })).collect();
        let v = document(a, Some(providers_total), all_passed, code, &summary, None, providers);
        println!("{}", crate::jsonout::stamped("probe", &v));
    } else {
        println!("peerpath probe — P2P pre-flight ({} under {})", count(providers_total, "provider"), a.sysfs.display());
        for p in probes {
            println!();
            println!("  provider  {} — {} of {} bytes available, {}", p.name, p.available_bytes, p.size_bytes, if p.published { "published" } else { "NOT published" });
            println!("    map     {} {}", mark(p.map.ok), p.map.detail);
            match &p.read {
                Some(r) => println!("    read    {} {}", mark(r.ok), r.detail),
                None => println!("    read    - not tried{}", if p.map.ok { " (no --target given)" } else { " (nothing mapped)" }),
            }
            for n in &p.notes {
                println!("    note    {n}");
            }
        }
        println!();
        println!("{}{summary}", if all_passed { "OK: " } else { "NO P2P: " });
    }
    Ok(code)
}

/// The `probe` JSON document: `providers_found` and `error` as [`finish`] or [`main`] (an
/// error before the probe) know them.
fn document(a: &ProbeArgs, providers_found: Option<usize>, passed: bool, code: u8, summary: &str, error: Option<&str>, providers: Vec<Value>) -> Value {
    json!({
        "sysfs": a.sysfs.display().to_string(),
        "providers_found": providers_found,
        "target": a.target.as_ref().map(|t| t.display().to_string()),
        "passed": passed,
        "exit_code": code,
        "summary": summary,
        "error": error,
        "kernel_pci_p2pdma": if a.sysfs == Path::new("/sys") { kernel_p2pdma_config().map(|(v, src)| json!({"value": v, "from": src})) } else { None },
        "providers": providers,
    })
}

fn mark(ok: bool) -> &'static str {
    if ok {
        "ok  "
    } else {
        "FAIL"
    }
}

/// Why there is no provider, with what this machine says about it.
fn no_provider_message(sysfs: &Path, topo: &Topology) -> String {
    let mut why = Vec::new();
    if sysfs == Path::new("/sys") {
        match kernel_p2pdma_config() {
            Some((value, from)) if value != "y" => why.push(format!("this kernel was built without CONFIG_PCI_P2PDMA ({from} says {value}), so no driver can register P2P memory")),
            Some((_, from)) => why.push(format!("the kernel has CONFIG_PCI_P2PDMA=y ({from}), so it is the hardware that offers none")),
            None => why.push("the kernel's configuration is not readable here (no /boot/config-<release> or /proc/config.gz), so whether it has CONFIG_PCI_P2PDMA is unknown".to_string()),
        }
    }
    let nvme = topo.nvme_controllers.len();
    let with_cmb = topo.nvme_controllers.iter().filter(|c| c.cmb.is_some()).count();
    why.push(format!(
        "no device offers P2P memory: {} with a Controller Memory Buffer (of {}), and P2P providers are NVMe CMBs or accelerators with a P2P BAR",
        if with_cmb == 0 { "no NVMe controller".to_string() } else { count(with_cmb, "NVMe controller") },
        count(nvme, "NVMe controller")
    ));
    let endpoints: Vec<String> = topo
        .devices
        .iter()
        .filter(|d| !d.is_bridge_class())
        .map(|d| match peerpath_topo::model::device_name(d.vendor, d.device) {
            Some(name) => format!("{} {name}", d.bdf),
            None => format!("{} {} {:04x}:{:04x}", d.bdf, d.kind.short(), d.vendor, d.device),
        })
        .collect();
    if !endpoints.is_empty() {
        why.push(format!("the PCI functions here are {}", endpoints.join(", ")));
    }
    format!(
        "no P2P provider: no PCI function under {} has a p2pmem/ directory. That is expected here: {}. Device memory is available only emulated (bench-io --memory shm) on this machine",
        sysfs.join("bus/pci/devices").display(),
        why.join("; ")
    )
}

/// `CONFIG_PCI_P2PDMA` of the running kernel, and where it was read:
/// `("y", "/proc/config.gz")`, `("not set", ...)`.
fn kernel_p2pdma_config() -> Option<(String, String)> {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").ok().map(|s| s.trim().to_string());
    let find = |text: &str| -> String {
        for line in text.lines() {
            if let Some(v) = line.strip_prefix("CONFIG_PCI_P2PDMA=") {
                return v.trim().to_string();
            }
            if line.starts_with("# CONFIG_PCI_P2PDMA is not set") {
                return "not set".to_string();
            }
        }
        "absent".to_string()
    };
    if let Some(r) = release {
        let boot = format!("/boot/config-{r}");
        if let Ok(text) = std::fs::read_to_string(&boot) {
            return Some((find(&text), boot));
        }
    }
    let mut compressed = Vec::new();
    std::fs::File::open("/proc/config.gz").ok()?.read_to_end(&mut compressed).ok()?;
    let mut text = Vec::new();
    let mut decoder = peerpath_func::StreamDecoder::new(&compressed[..], 0, 0);
    decoder
        .run(true, |chunk| {
            text.extend_from_slice(chunk);
            Ok(())
        })
        .ok()?;
    Some((find(&String::from_utf8_lossy(&text)), "/proc/config.gz".to_string()))
}

fn probe_provider(a: &ProbeArgs, topo: &Topology, dev: &PciDevice) -> ProviderProbe {
    let p = dev.p2pmem.expect("only providers are probed");
    let mut probe = ProviderProbe {
        device: dev.bdf,
        name: dev.display_name(),
        size_bytes: p.size_bytes,
        available_bytes: p.available_bytes,
        published: p.published,
        allocate: p.allocate,
        allocate_on_sysfs: false,
        map: Step::fail(None, "not tried"),
        read: None,
        notes: Vec::new(),
    };
    if !p.published {
        probe.notes.push(
            "the memory is not published: in-kernel users (nvmet) will not find it, and an NVMe controller whose CMBSZ lacks RDS/WDS may reject data pointers into its own CMB; a user-space mapping still works"
                .to_string(),
        );
    }
    let region = match MappedRegion::map_p2pmem(&device_dir(&a.sysfs, dev.bdf), PROBE_BYTES) {
        Ok(r) => r,
        Err(e) => {
            probe.map = Step::fail(region_errno(&e), e.to_string());
            return probe;
        }
    };
    let info = region.p2p_info().cloned().expect("a P2P region carries its p2pmem info");
    probe.allocate_on_sysfs = info.allocate_on_sysfs;
    probe.map = Step::pass(format!("mapped {} bytes of {} (MAP_SHARED, offset 0)", region.len(), region.path().display()));
    if !info.allocate_on_sysfs {
        probe.notes.push(format!(
            "{} is not on sysfs but a plain file (a fixture tree): host memory stands in for it (the file is never written), which says nothing about P2P, and the kernel's allocate behaves differently (each mmap is a new allocation from the device's pool)",
            region.path().display()
        ));
    }
    if let Some(target) = &a.target {
        let allocator = RegionAllocator::new(Arc::new(region));
        let buf = allocator.alloc(PROBE_BYTES);
        probe.read = Some(read_into(target, buf, topo, dev.bdf, &a.sysfs, info.allocate_on_sysfs));
    }
    probe
}

fn region_errno(e: &RegionError) -> Option<i32> {
    match e {
        RegionError::P2pNoMemory { .. } => Some(libc::ENOMEM),
        RegionError::P2pProviderGone { .. } => Some(libc::ENODEV),
        RegionError::Io { source, .. } | RegionError::Map { source, .. } => source.raw_os_error(),
        _ => None,
    }
}

/// One 4 KiB O_DIRECT read from `target` at offset 0 into `buf` (P2P memory).
fn read_into(target: &Path, buf: RegionBuf, topo: &Topology, provider: Bdf, sysfs: &Path, on_sysfs: bool) -> Step {
    let shown = target.display();
    let meta = match std::fs::metadata(target) {
        Ok(m) => m,
        Err(e) => return Step::fail(e.raw_os_error(), format!("cannot stat target {shown}: {e}")),
    };
    if !(meta.is_file() || meta.file_type().is_block_device()) {
        return Step::fail(None, format!("target {shown} is neither a regular file nor a block device"));
    }
    let mut opts = OpenOptions::new();
    opts.read(true).custom_flags(libc::O_DIRECT);
    let mut file = match opts.open(target) {
        Ok(f) => f,
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
            return Step::fail(
                Some(libc::EINVAL),
                format!(
                    "{shown}: the file system refuses O_DIRECT (EINVAL at open), and buffered I/O into P2P memory is refused: the page cache would copy to and from the device's BAR with CPU loads and stores (slow on x86, may corrupt or crash elsewhere). Use a file on a file system that takes O_DIRECT (ext4, xfs) or the block device itself"
                ),
            )
        }
        Err(e) => return Step::fail(e.raw_os_error(), format!("cannot open target {shown} with O_DIRECT: {e}")),
    };
    let size = if meta.file_type().is_block_device() { file.seek(io::SeekFrom::End(0)).unwrap_or(0) } else { meta.len() };
    if size < PROBE_BYTES as u64 {
        return Step::fail(None, format!("target {shown} holds {size} bytes; the probe reads {PROBE_BYTES}, so it needs at least that"));
    }
    let waker = match Waker::new() {
        Ok(w) => w,
        Err(e) => return Step::fail(e.raw_os_error(), format!("cannot create an eventfd: {e}")),
    };
    let (mut engine, engine_name): (Box<dyn IoEngine<RegionBuf>>, String) = match UringEngine::new(1) {
        Ok(e) => (Box::new(e), "io_uring".into()),
        Err(e) => (Box::new(SyncEngine::new()), format!("pread (io_uring unavailable: {e})")),
    };
    let result = match engine.submit(IoOp::Read, file.as_raw_fd(), Some(0), PROBE_BYTES, buf, 0) {
        Err((_buf, e)) => Err(e),
        Ok(()) => {
            let mut out = Vec::new();
            loop {
                if let Err(e) = engine.wait(&mut out, &waker) {
                    break Err(e);
                }
                if let Some(c) = out.pop() {
                    break c.result;
                }
            }
        }
    };
    drop(engine);
    let device = target_block_device(target, &meta, sysfs);
    match result {
        Ok(n) if n == PROBE_BYTES => {
            let mut s = format!("read {n} bytes from {shown} at offset 0 into P2P memory of {provider} with O_DIRECT ({engine_name})");
            if !on_sysfs {
                s += "; but the memory is a fixture's plain file, so this proves nothing about P2P";
            }
            Step::pass(s)
        }
        Ok(n) => Step::fail(None, format!("short read: {n} of {PROBE_BYTES} bytes from {shown}")),
        Err(e) => {
            let errno = e.raw_os_error();
            Step::fail(errno, explain_read_error(&e, &shown.to_string(), device.as_deref(), topo, provider, on_sysfs))
        }
    }
}

/// The block device under `target` (`nvme0n1`, `md0`), from `<sysfs>/dev/block/MAJ:MIN`.
fn target_block_device(target: &Path, meta: &std::fs::Metadata, sysfs: &Path) -> Option<String> {
    let _ = target;
    let dev = if meta.file_type().is_block_device() { meta.rdev() } else { meta.dev() };
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    let link = sysfs.join("dev/block").join(format!("{major}:{minor}"));
    let real = std::fs::canonicalize(&link).ok()?;
    // A partition's directory sits inside its disk's.
    let dir = if real.join("partition").exists() { real.parent()?.to_path_buf() } else { real };
    dir.file_name().map(|n| n.to_string_lossy().into_owned())
}

fn explain_read_error(e: &io::Error, target: &str, device: Option<&str>, topo: &Topology, provider: Bdf, on_sysfs: bool) -> String {
    let on = match device {
        Some(d) => format!("{target} (on {d})"),
        None => target.to_string(),
    };
    match e.raw_os_error() {
        Some(libc::EREMOTEIO) => {
            let mut s = format!(
                "EREMOTEIO reading {on} into P2P memory of {provider}: the kernel refused P2P for this pair. Either (a) the block layer refused the P2P pages because the target's queue does not advertise P2P support (only nvme-pci namespaces do; md, dm/LVM/dm-crypt, NVMe multipath heads, virtio and the rest do not), or (b) the queue supports P2P but the DMA mapping found no P2P route between {provider} and the target's controller (ACS redirect on a bridge, or a host bridge not on the kernel's allow-list; dmesg then says \"do not share an upstream bridge or whitelisted host bridge\")."
            );
            match device.map(|d| topo.verdict(&provider.to_string(), d)) {
                Some(Ok(v)) => {
                    s += &format!(" The topology says: {}.", v.path);
                    for r in v.blocking() {
                        s += &format!(" {}", r.describe());
                        if let Some(m) = r.remedy() {
                            s += &format!(" Remedy: {m}.");
                        }
                    }
                }
                Some(Err(err)) => s += &format!(" The topology cannot tell which: {err}."),
                None => s += " The target's block device could not be identified, so which of the two is unknown.",
            }
            s
        }
        Some(libc::EINVAL) => format!(
            "EINVAL reading {on}: the request is not aligned as O_DIRECT needs (offset, length and buffer address must be multiples of the logical block size and the queue's dma_alignment; the probe uses offset 0, 4096 bytes and a page-aligned buffer, so the device's logical block is larger than 4 KiB), or the file is not open with O_DIRECT"
        ),
        Some(libc::EFAULT) if !on_sysfs => format!(
            "EFAULT reading {on}: the pages could not be pinned (with a fixture, host memory stands in for the provider's: a fixture proves nothing about P2P)"
        ),
        Some(libc::EFAULT) => format!("EFAULT reading {on}: the kernel could not pin the P2P pages (get_user_pages refused them); on kernels before 6.2 O_DIRECT cannot take P2P pages at all"),
        Some(libc::EOPNOTSUPP) => format!("EOPNOTSUPP reading {on}: a long-term pin of P2P pages was asked for (FOLL_LONGTERM, as registered buffers do) and refused; a bug, the probe registers nothing"),
        _ => format!("reading {on} into P2P memory of {provider} failed: {e}"),
    }
}
