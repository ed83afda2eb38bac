//! `peerpath gpu probe`: can this machine's GPU compress for peerpath, and
//! how fast? Opens the GPU (CUDA's driver, loaded at run time), loads
//! nvCOMP, compresses a sample with nvCOMP's batched gzip compressor, and
//! checks every member on the CPU oracle.

use clap::{Args, Subcommand};
use peerpath_runtime::report::Quoted;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args)]
pub struct GpuArgs {
    #[command(subcommand)]
    command: GpuCommand,
    /// The probe's options: global, so they are taken on either side of `probe`
    /// (`gpu --json probe` was refused).
    #[command(flatten)]
    probe: ProbeArgs,
}

#[derive(Subcommand)]
enum GpuCommand {
    /// Open the GPU, load nvCOMP, compress a sample in GPU memory and check every member on the CPU.
    Probe,
}

#[derive(Args, Debug, PartialEq)]
struct ProbeArgs {
    /// The data to compress (its first --bytes); default: a generated protein-like text.
    #[arg(long, global = true)]
    input: Option<PathBuf>,
    /// Bytes to compress (K, M, G suffixes).
    #[arg(long, global = true, default_value = "64M", value_parser = crate::parse_size)]
    bytes: usize,
    /// Bytes per member (chunk).
    #[arg(long, global = true, default_value = "1M", value_parser = crate::parse_size)]
    chunk: usize,
    /// nvCOMP gzip algorithms to run (0 fastest .. 5 best ratio), comma-separated.
    #[arg(long, global = true, default_value = "0,1,2", value_delimiter = ',', value_parser = clap::value_parser!(i32).range(0..=5))]
    algorithm: Vec<i32>,
    /// Timed runs of each algorithm (the best is reported).
    #[arg(long, global = true, default_value_t = 3)]
    repeat: usize,
    /// nvCOMP's library (default: $PEERPATH_NVCOMP, the loader's path, then Python's nvidia-libnvcomp wheel).
    #[arg(long, global = true)]
    nvcomp: Option<PathBuf>,
    /// cuFile's library, to ask whether storage reaches GPU memory directly (default: $PEERPATH_CUFILE, the loader's path, /usr/local/cuda*/lib64).
    #[arg(long, global = true)]
    cufile: Option<PathBuf>,
    /// Also measure copies between GPU memory and files in DIR (on tmpfs: /dev/shm) mapped and
    /// registered with CUDA, the source read-only: whether a job in memory could skip the host's copies.
    #[arg(value_hint = clap::ValueHint::DirPath, long, global = true, value_name = "DIR")]
    mapped_at: Option<PathBuf>,
    /// Which GPU.
    #[arg(long, global = true, default_value_t = 0)]
    device: usize,
    /// Print the report as JSON.
    #[arg(long, global = true)]
    json: bool,
}

/// Exit status when no GPU (or no nvCOMP) can be used: the device class's (as --no-fallback).
const UNAVAILABLE: u8 = 15;

pub fn main(a: GpuArgs) -> ExitCode {
    let GpuCommand::Probe = a.command;
    let p = a.probe;
    if p.chunk == 0 || p.bytes == 0 {
        eprintln!("peerpath: error: --bytes and --chunk must be at least 1");
        return ExitCode::from(2);
    }
    // The sample, its output and the GPU's copies are held at once: half of this machine's memory at most.
    if let Some(total) = crate::machine_memory_bytes().filter(|&t| p.bytes > t / 2) {
        eprintln!("peerpath: error: --bytes {}: more than half of this machine's memory ({})", p.bytes, peerpath_metrics::human_bytes(total as u64));
        return ExitCode::from(2);
    }
    // --mapped-at and the input are checked first: said whatever the GPU.
    if let Some(dir) = p.mapped_at.as_deref().filter(|d| !d.is_dir()) {
        eprintln!("peerpath: error: --mapped-at {}: not a directory: name one to map files in (on tmpfs: /dev/shm)", Quoted(dir));
        return ExitCode::from(2);
    }
    if let Some(path) = &p.input {
        if let Err(e) = read_prefix(path, 1) {
            return cannot_read(path, &e);
        }
    }
    // nvCOMP is asked even where the GPU cannot open (loading it needs none): a machine
    // without either says both, and a --nvcomp or $PEERPATH_NVCOMP naming no library is said.
    let (gpu, nv) = match (peerpath_gpu::Gpu::open(p.device), peerpath_gpu::Nvcomp::load(p.nvcomp.as_deref())) {
        (Ok(g), Ok(n)) => (g, n),
        (Err(why), Ok(_)) => return unavailable(&p, "gpu", &with_cufile(&p, why)),
        (Ok(_), Err(why)) => return unavailable(&p, "nvcomp", &with_cufile(&p, why)),
        (Err(g), Err(n)) => return unavailable(&p, "gpu", &with_cufile(&p, format!("{g}; and {n}"))),
    };
    // Made once the GPU and nvCOMP are known to be there: a sample of --bytes takes a while.
    let data = match &p.input {
        Some(path) => match read_prefix(path, p.bytes) {
            Ok(d) => d,
            Err(e) => return cannot_read(path, &e),
        },
        None => peerpath_func::sample::protein_like(p.bytes, 1),
    };
    match peerpath_gpu::probe(&gpu, &nv, &data, p.chunk, &p.algorithm, p.repeat, p.cufile.as_deref(), p.mapped_at.as_deref()) {
        Ok(r) if p.json => {
            println!("{}", crate::jsonout::stamped("gpu-probe", &r));
            ExitCode::SUCCESS
        }
        Ok(r) => {
            println!("peerpath gpu probe — {}", r.provenance);
            let g = &r.gpu;
            println!(
                "  GPU           {} (GPU {}), {:.1} GiB, compute {}.{}, CUDA driver {}",
                g.name,
                g.ordinal,
                g.memory_bytes as f64 / (1u64 << 30) as f64,
                g.compute_capability.0,
                g.compute_capability.1,
                g.driver_version
            );
            println!("  nvCOMP        {} (version {}, CUDA runtime {})", r.nvcomp_path, r.nvcomp_version, r.nvcomp_cudart_version);
            println!("  cuFile        {}: {}", r.cufile.state, r.cufile.detail);
            println!("  copy in       {:.2} GB/s host -> GPU (pageable memory)", r.h2d_gb_per_s);
            for run in &r.runs {
                println!(
                    "  algorithm {}   {} chunks of {} B: {:.2} GB/s (kernel {:.4} s), ratio {:.3}, {} members checked on the CPU",
                    run.algorithm, run.chunks, r.chunk_bytes, run.kernel_gb_per_s, run.kernel_s, run.ratio, run.members_verified
                );
            }
            if let Some(m) = &r.mapped {
                let gb = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.2} GB/s"));
                let s = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.3} s"));
                let same = |x: Option<bool>| x.map_or("-", |b| if b { "bytes match" } else { "BYTES DIFFER" });
                println!("  mapped files  in {} ({}), {} B: pinned anonymous memory -> GPU {}", m.dir, if m.memory_file_system { "a memory file system" } else { "not a memory file system" }, m.bytes, gb(m.pinned_h2d_gb_per_s));
                println!("                source mapped read-only, registered in {}: -> GPU {} ({})", s(m.source_register_s), gb(m.source_h2d_gb_per_s), same(m.source_bytes_match));
                println!("                target mapped shared, registered in {}: GPU -> {} ({})", s(m.target_register_s), gb(m.target_d2h_gb_per_s), same(m.target_bytes_match));
                if let Some(e) = &m.error {
                    println!("                stopped: {e}");
                }
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("peerpath: error: GPU probe failed: {e}");
            ExitCode::from(UNAVAILABLE)
        }
    }
}

/// No GPU (`stage` "gpu": no driver, no such device) or no nvCOMP ("nvcomp") here: said on
/// standard error, and with `--json` also as a `gpu-unavailable` document on standard output
/// (a script asking a fleet of machines gets an answer from each); exit 15.
fn unavailable(p: &ProbeArgs, stage: &str, why: &str) -> ExitCode {
    eprintln!("peerpath: error: GPU unavailable: {why}");
    if p.json {
        let doc = serde_json::json!({ "available": false, "stage": stage, "device": p.device, "reason": why });
        println!("{}", crate::jsonout::stamped("gpu-unavailable", &doc));
    }
    ExitCode::from(UNAVAILABLE)
}

/// `--input` cannot be read: exit 3.
fn cannot_read(path: &std::path::Path, e: &std::io::Error) -> ExitCode {
    eprintln!("peerpath: error: --input {}: cannot read it: {e}", Quoted(path));
    ExitCode::from(3)
}

/// `why` the probe cannot run, and where --cufile or $PEERPATH_CUFILE names a library that does
/// not load, why not (with a GPU the probe's cufile line says it; without, it was never asked).
fn with_cufile(p: &ProbeArgs, why: String) -> String {
    match peerpath_gpu::cufile::named_not_loading(p.cufile.as_deref()) {
        Some(e) => format!("{why}; and {e}"),
        None => why,
    }
}

fn read_prefix(path: &std::path::Path, bytes: usize) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut v = Vec::new();
    std::fs::File::open(path)?.take(bytes as u64).read_to_end(&mut v)?;
    if v.is_empty() {
        return Err(std::io::Error::other("it is empty"));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct T {
        #[command(flatten)]
        a: GpuArgs,
    }

    fn probe(args: &[&str]) -> Result<ProbeArgs, clap::Error> {
        T::try_parse_from(std::iter::once("gpu").chain(args.iter().copied())).map(|t| t.a.probe)
    }

    /// The options are taken on either side of `probe`, as every command takes its options
    /// anywhere among its arguments (`gpu --json probe` was "unexpected argument '--json'").
    #[test]
    fn options_are_taken_before_and_after_probe() {
        let after = probe(&["probe", "--json", "--bytes", "4M", "--algorithm", "1,2", "--device", "1", "--input", "x.fa"]).unwrap();
        assert!(after.json && after.bytes == 4 << 20 && after.algorithm == [1, 2] && after.device == 1, "{after:?}");
        for order in [
            &["--json", "--bytes", "4M", "--algorithm", "1,2", "--device", "1", "--input", "x.fa", "probe"][..],
            &["--json", "--bytes", "4M", "probe", "--algorithm", "1,2", "--device", "1", "--input", "x.fa"],
            &["--device", "1", "probe", "--input", "x.fa", "--algorithm", "1,2", "--bytes", "4M", "--json"],
        ] {
            assert_eq!(probe(order).unwrap(), after, "{order:?}");
        }
        // Defaults where nothing is given, on either side.
        let plain = probe(&["probe"]).unwrap();
        assert_eq!((plain.bytes, plain.chunk, plain.algorithm.as_slice(), plain.repeat, plain.json), (64 << 20, 1 << 20, &[0, 1, 2][..], 3, false));
        assert_eq!(probe(&["--repeat", "1", "probe"]).unwrap(), ProbeArgs { repeat: 1, ..plain });
        // Still one subcommand, and nothing but its options.
        assert!(probe(&["--json"]).is_err(), "gpu needs `probe`");
        assert!(probe(&["probe", "extra"]).is_err());
    }
}
