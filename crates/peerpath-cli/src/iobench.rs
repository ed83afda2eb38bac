//! `peerpath bench-io`: the I/O sweeps of the seeds (transfer size x queue
//! depth, sequential O_DIRECT reads and writes, 4 KiB random latency) into
//! host or device memory. Flags become [`IoBenchOptions`]; the sweep itself
//! is `peerpath_runtime::iobench`.
//!
//! Exit codes: 2 usage; 3 the file cannot be opened; 11 a write failed;
//! 12 a read failed; 14 P2P memory asked for but not available; 1 otherwise.

use clap::{Args, ValueEnum};
use peerpath_runtime::iobench::{run_io_bench, BenchMemory, IoBenchError, IoBenchOptions, Pattern};
use peerpath_runtime::report::Quoted;
use peerpath_runtime::JobError;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Clone, Copy, ValueEnum, PartialEq)]
pub enum RwArg {
    Read,
    Write,
    Both,
}

#[derive(Clone, Copy, ValueEnum, PartialEq)]
pub enum RandomArg {
    /// Sweep, then 4 KiB random latency at queue depth 1.
    Include,
    /// The sweep only.
    Skip,
    /// 4 KiB random latency only.
    Only,
}

/// Block sizes of the sweep: `4K..16M` (powers of two), `4K,64K,1M`, or one size.
#[derive(Clone, Debug, PartialEq)]
pub struct BlockSizes(pub Vec<usize>);

/// Queue depths: `1,4,16`, `1..16` (powers of two), or one depth.
#[derive(Clone, Debug, PartialEq)]
pub struct Depths(pub Vec<u32>);

/// Where buffers live: `host`, `shm`, `p2p:BDF`.
#[derive(Clone, Debug, PartialEq)]
pub enum MemoryArg {
    Host,
    Shm,
    P2p(String),
}

fn doubling(lo: usize, hi: usize) -> Result<Vec<usize>, String> {
    if lo == 0 || lo > hi {
        return Err(format!("the range {lo}..{hi} is empty"));
    }
    let mut v = Vec::new();
    let mut x = lo;
    while x <= hi {
        v.push(x);
        x = x.checked_mul(2).ok_or("range too large")?;
    }
    Ok(v)
}

pub fn parse_block_sizes(s: &str) -> Result<BlockSizes, String> {
    let v = if let Some((a, b)) = s.split_once("..") {
        doubling(crate::parse_size(a)?, crate::parse_size(b)?)?
    } else {
        s.split(',').map(crate::parse_size).collect::<Result<Vec<_>, _>>()?
    };
    if let Some(bad) = v.iter().find(|&&b| b == 0 || b % 4096 != 0) {
        return Err(format!("block size {bad} is not a multiple of 4K (O_DIRECT needs whole pages)"));
    }
    Ok(BlockSizes(v))
}

pub fn parse_depths(s: &str) -> Result<Depths, String> {
    let num = |t: &str| t.trim().parse::<usize>().map_err(|_| format!("'{t}' is not a queue depth"));
    let v = if let Some((a, b)) = s.split_once("..") {
        doubling(num(a)?, num(b)?)?
    } else {
        s.split(',').map(num).collect::<Result<Vec<_>, _>>()?
    };
    let max = peerpath_runtime::iobench::MAX_QUEUE_DEPTH as usize;
    if let Some(bad) = v.iter().find(|&&d| d == 0 || d > max) {
        return Err(format!("queue depth {bad} is outside 1..={max}"));
    }
    Ok(Depths(v.into_iter().map(|d| d as u32).collect()))
}

pub fn parse_memory(s: &str) -> Result<MemoryArg, String> {
    match s {
        "host" => Ok(MemoryArg::Host),
        "shm" => Ok(MemoryArg::Shm),
        _ => match s.strip_prefix("p2p:") {
            Some(bdf) if !bdf.is_empty() => Ok(MemoryArg::P2p(bdf.to_string())),
            _ => Err(format!("'{s}' is not a memory: use host, shm or p2p:BDF (e.g. p2p:0000:03:00.0)")),
        },
    }
}

#[derive(Args)]
pub struct BenchIoArgs {
    /// File or block device (a block device is only read). A new or empty
    /// file is laid out to --size first; an existing shorter one is refused,
    /// never extended. A file that holds data is only read unless --rw write
    /// or both is given: write sweeps overwrite its first --size bytes.
    #[arg(long)]
    file: PathBuf,
    /// Bytes of the file to use; a sequential point stops after one pass over them.
    #[arg(long, default_value = "1G", value_parser = crate::parse_size)]
    size: usize,
    /// Transfer sizes: 4K..16M (powers of two), or a list 4K,64K,1M.
    #[arg(long, default_value = "4K..16M", value_parser = parse_block_sizes)]
    sweep_bs: BlockSizes,
    /// Queue depths: 1,4,16 or 1..16 (powers of two).
    #[arg(long, default_value = "1,4,16", value_parser = parse_depths)]
    sweep_qd: Depths,
    /// Directions to sweep [default: both for a new or empty file, read for one that holds
    /// data (its bytes are never overwritten unless asked)].
    #[arg(long, value_enum)]
    rw: Option<RwArg>,
    /// The 4 KiB random latency points (queue depth 1).
    #[arg(long, value_enum, default_value_t = RandomArg::Include)]
    random: RandomArg,
    /// Buffers in host memory, a shm region (emulated device memory) or P2P memory of a PCI function.
    #[arg(long, default_value = "host", value_parser = parse_memory)]
    memory: MemoryArg,
    /// Time limit of each point, seconds.
    #[arg(long, default_value_t = 1.0)]
    runtime_s: f64,
    /// Where --memory shm makes its region (unlinked once mapped).
    #[arg(long, default_value = "/dev/shm")]
    shm_dir: PathBuf,
    /// sysfs root for --memory p2p:BDF.
    #[arg(long, default_value = "/sys")]
    sysfs: PathBuf,
    /// I/O engine.
    #[arg(long, value_enum, default_value_t = crate::IoArg::Auto)]
    io: crate::IoArg,
    /// Seed of the random offsets [default: a new one each run, like fio's
    /// randrepeat=0; the report prints it].
    #[arg(long)]
    seed: Option<u64>,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// Write the sweep as a picture (SVG).
    #[arg(long, value_name = "OUT.svg")]
    svg: Option<PathBuf>,
}

/// Turns the flags into sweep options.
pub fn options(a: &BenchIoArgs) -> Result<IoBenchOptions, String> {
    if !(a.runtime_s > 0.0 && a.runtime_s <= 3600.0) {
        return Err(format!("--runtime-s {} must be in (0, 3600]", a.runtime_s));
    }
    let mut o = IoBenchOptions::new(a.file.clone(), a.size as u64);
    o.block_sizes_bytes = a.sweep_bs.0.clone();
    o.queue_depths = a.sweep_qd.0.clone();
    let (read, write) = match a.rw.unwrap_or_else(|| default_rw(&a.file)) {
        RwArg::Read => (true, false),
        RwArg::Write => (false, true),
        RwArg::Both => (true, true),
    };
    let pick = |r: Pattern, w: Pattern| [(read, r), (write, w)].into_iter().filter(|(on, _)| *on).map(|(_, p)| p).collect::<Vec<_>>();
    o.sequential = if a.random == RandomArg::Only { Vec::new() } else { pick(Pattern::SequentialRead, Pattern::SequentialWrite) };
    o.random = if a.random == RandomArg::Skip { Vec::new() } else { pick(Pattern::RandomRead, Pattern::RandomWrite) };
    o.memory = match &a.memory {
        MemoryArg::Host => BenchMemory::Host,
        MemoryArg::Shm => BenchMemory::Shm { dir: a.shm_dir.clone() },
        MemoryArg::P2p(bdf) => BenchMemory::P2p { device_dir: a.sysfs.join("bus/pci/devices").join(bdf) },
    };
    o.runtime_per_point = Duration::from_secs_f64(a.runtime_s);
    o.sync_io = a.io == crate::IoArg::Sync;
    if let Some(seed) = a.seed {
        o.seed = seed;
    }
    Ok(o)
}

/// The directions swept where `--rw` is not given: a file that holds data, or a block device,
/// is only read (its bytes are someone's; fio's default is to read too), a new or empty file is
/// written as well.
fn default_rw(file: &std::path::Path) -> RwArg {
    match std::fs::metadata(file) {
        Ok(m) if (m.is_file() && m.len() > 0) || std::os::unix::fs::FileTypeExt::is_block_device(&m.file_type()) => RwArg::Read,
        _ => RwArg::Both,
    }
}

fn exit_code(e: &IoBenchError, memory: &MemoryArg) -> u8 {
    match e {
        IoBenchError::Usage(_) => 2,
        // Room the file system does not have: a write's failure.
        IoBenchError::File { source, .. } if matches!(source.raw_os_error(), Some(libc::ENOSPC | libc::EDQUOT)) => 11,
        IoBenchError::File { .. } => 3,
        IoBenchError::Io { source, .. } if source.pattern.op() == peerpath_io::IoOp::Write => 11,
        IoBenchError::Io { .. } => 12,
        IoBenchError::Memory(_) if matches!(memory, MemoryArg::P2p(_)) => crate::probe::EXIT_NO_P2P,
        // The shm region's directory could not take it (full, read-only, missing).
        IoBenchError::Memory(_) => 11,
    }
}

/// `peerpath bench-io`.
pub fn main(a: BenchIoArgs) -> ExitCode {
    let o = match options(&a) {
        Ok(o) => o,
        Err(m) => {
            eprintln!("peerpath: error: {m}");
            return ExitCode::from(2);
        }
    };
    if let MemoryArg::P2p(bdf) = &a.memory {
        // A root that is not sysfs, or a function not under it, is a name to fix (exit 13, as
        // probe's --device): it was said as "p2pmem does not exist: this PCI function is not a
        // P2P memory provider", naming neither option.
        let named = crate::p2p_devices_dir(&a.sysfs).and_then(|devices| match devices.join(bdf).exists() {
            true => Ok(()),
            false => Err(format!("--memory p2p:{bdf}: no such PCI function under --sysfs {}", Quoted(&a.sysfs))),
        });
        if let Err(m) = named {
            eprintln!("peerpath: error: {m}");
            return ExitCode::from(crate::probe::EXIT_TOPOLOGY);
        }
    }
    if let Some(svg) = &a.svg {
        // Checked before the sweep (minutes of it were lost to a picture that could not be
        // written): never the file measured (it was replaced by the picture, with --rw read
        // too), and a place where a file can be made.
        if peerpath_runtime::job::place_of(svg) == peerpath_runtime::job::place_of(&a.file) || matches!(peerpath_runtime::job::check_target(&a.file, svg, true, peerpath_runtime::job::Writes::FileOnly), Err(JobError::SameFile { .. })) {
            eprintln!("peerpath: error: --svg {} is the file measured (--file)", svg.display());
            return ExitCode::from(5);
        }
        if let Err(e) = crate::check_output(svg, true).and_then(|()| peerpath_io::create_temporary(svg, false).map(|(_, t)| peerpath_io::discard(&t)).map_err(|e| JobError::TargetIo { path: svg.clone(), source: e })) {
            eprintln!("peerpath: error: {e}");
            return ExitCode::from(e.exit_code() as u8);
        }
    }
    let chatty = !a.json && std::io::stderr().is_terminal();
    let mut on_point = |p: &peerpath_runtime::iobench::PointResult| {
        if chatty {
            eprintln!(
                "peerpath: {} bs={} qd={}: {:.3} GB/s, p50 {:.1} us",
                p.pattern.describe(),
                peerpath_runtime::iobench::human_size(p.block_size_bytes as u64),
                p.queue_depth,
                p.throughput_gb_per_s,
                p.latency.p50_us
            );
        }
    };
    let report = match run_io_bench(&o, &mut on_point) {
        Ok(r) => r,
        Err(e) => {
            let mut msg = e.to_string();
            if let (IoBenchError::Memory(_), MemoryArg::P2p(_)) = (&e, &a.memory) {
                msg += " (`peerpath probe` says which providers this machine has; --memory shm stands in for device memory where there are none)";
            }
            eprintln!("peerpath: error: {msg}");
            return ExitCode::from(exit_code(&e, &a.memory));
        }
    };
    // The figures first: a picture that cannot be written after all loses nothing measured.
    if a.json {
        println!("{}", crate::jsonout::stamped_text("bench-io", &report.to_json()));
    } else {
        print!("{}", report.render());
    }
    if let Some(path) = &a.svg {
        // A results picture is replaced when asked for again, but never left half-written.
        if let Err(e) = crate::write_output(path, report.render_svg().as_bytes(), true) {
            eprintln!("peerpath: error: {e}");
            return ExitCode::from(e.exit_code() as u8);
        }
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_size_sweeps_parse() {
        assert_eq!(parse_block_sizes("4K..16M").unwrap().0.len(), 13);
        assert_eq!(parse_block_sizes("4K..16K").unwrap().0, vec![4096, 8192, 16384]);
        assert_eq!(parse_block_sizes("4K,1M").unwrap().0, vec![4096, 1 << 20]);
        assert_eq!(parse_block_sizes("1M").unwrap().0, vec![1 << 20]);
        assert!(parse_block_sizes("512").unwrap_err().contains("multiple of 4K"));
        assert!(parse_block_sizes("16M..4K").is_err());
        assert!(parse_block_sizes("4X").is_err());
    }

    #[test]
    fn depth_sweeps_parse() {
        assert_eq!(parse_depths("1,4,16").unwrap().0, vec![1, 4, 16]);
        assert_eq!(parse_depths("1..16").unwrap().0, vec![1, 2, 4, 8, 16]);
        assert!(parse_depths("0").is_err());
        assert!(parse_depths("5000").is_err());
        assert!(parse_depths("x").is_err());
    }

    #[test]
    fn memories_parse() {
        assert_eq!(parse_memory("host").unwrap(), MemoryArg::Host);
        assert_eq!(parse_memory("shm").unwrap(), MemoryArg::Shm);
        assert_eq!(parse_memory("p2p:0000:03:00.0").unwrap(), MemoryArg::P2p("0000:03:00.0".into()));
        assert!(parse_memory("p2p:").is_err());
        assert!(parse_memory("gpu").is_err());
    }
}
