//! `peerpath bench-offload`: the seed's Table 1 columns on this machine.
//!
//! Rows: the software path on all cores, then 1..N emulated devices, each
//! serving its own group of sources and targets. Every row compresses the
//! same sources with the same block size and level, `--runs` times in
//! rounds (each round runs every row once); the table shows medians. Each row's outputs are compared byte for byte with
//! the CPU row's. Emulated devices run on host cores: their CPU time is a
//! column of its own and is never counted as saved.

use clap::Args;
use peerpath_func::{Format, Level};
use peerpath_runtime::report::{count, Fallback};
use peerpath_runtime::{CommonOptions, CompressOptions, Compute, EmulatedSpec, JobReport};
use serde::Serialize;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args)]
pub struct BenchOffloadArgs {
    /// Source files (each gets its own target; devices split them between them).
    #[arg(required = true)]
    sources: Vec<PathBuf>,
    /// Rows with 1..N emulated devices, N from 1 to 64 and at most one device per source (each
    /// device serves its own sources) [default: 2, or 1 with one source].
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=64))]
    max_devices: Option<u16>,
    /// Runs per row (the table shows medians), 1 to 1000.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u16).range(1..=1000))]
    runs: u16,
    /// Compression level.
    #[arg(long, default_value_t = 1)]
    level: u32,
    /// Where the outputs go (must take O_DIRECT) [default: a new directory next to the first source].
    #[arg(value_hint = clap::ValueHint::DirPath, long)]
    workdir: Option<PathBuf>,
    /// Directory for the emulated devices' memory files [default: /dev/shm]
    /// (a tmpfs mounted with huge=within_size gives them 2 MiB pages).
    #[arg(value_hint = clap::ValueHint::DirPath, long)]
    device_memory_dir: Option<PathBuf>,
    /// Print JSON instead of the table.
    #[arg(long)]
    json: bool,
    /// Skip the platform floor (fio moving the same bytes with io_uring,
    /// O_DIRECT and fixed buffers, measured after the rows).
    #[arg(long)]
    no_fio: bool,
    /// A device row whose work the host CPU took over (a device that did not start, failed or
    /// hung) is an error (exit 15, as `compress --no-fallback`), not a row marked FALLBACK.
    #[arg(long)]
    no_fallback: bool,
}

/// What fio's own CPU costs to read the sources and write as many bytes as
/// the outputs, with io_uring, O_DIRECT and registered buffers: the floor
/// the orchestration columns compare with, measured on the same files.
#[derive(Serialize)]
struct FioFloor {
    command: String,
    /// fio's CPU (user + system, all its jobs) per GB of input, median.
    cores_per_gb_per_s: f64,
    runs: usize,
}

/// Runs fio `runs` times over the sources (reads, 1 MiB, depth 8) and
/// writes of `write_bytes` into `dir` (4 MiB, depth 4), the block sizes the
/// offload path uses. `Err` says why there is no floor.
fn fio_floor(sources: &[PathBuf], write_bytes: u64, dir: &std::path::Path, runs: usize) -> Result<FioFloor, String> {
    let input: u64 = sources.iter().filter_map(|s| std::fs::metadata(s).ok()).map(|m| m.len()).sum();
    let mut args: Vec<String> = vec!["--output-format=json".into()];
    let common = "--direct=1 --ioengine=io_uring --fixedbufs=1";
    for (i, s) in sources.iter().enumerate() {
        // fio reads whole blocks: the aligned part of each source.
        let size = std::fs::metadata(s).map(|m| m.len() / (1 << 20) * (1 << 20)).unwrap_or(0);
        if size == 0 {
            continue;
        }
        args.push(format!("--name=read{i}"));
        args.push(format!("--filename={}", s.display()));
        args.extend(format!("--rw=read --bs=1M --iodepth=8 --size={size} {common}").split(' ').map(String::from));
    }
    let per_target = (write_bytes / sources.len().max(1) as u64).div_ceil(4 << 20) * (4 << 20);
    for i in 0..sources.len() {
        args.push(format!("--name=write{i}"));
        args.push(format!("--filename={}", dir.join(format!("fio-{i}")).display()));
        args.extend(format!("--rw=write --bs=4M --iodepth=4 --size={per_target} {common}").split(' ').map(String::from));
    }
    let mut per_gb = Vec::new();
    for _ in 0..runs {
        let out = std::process::Command::new("fio").args(&args).output().map_err(|e| format!("fio did not run ({e}); install it (apt install fio) or pass --no-fio"))?;
        for i in 0..sources.len() {
            let _ = std::fs::remove_file(dir.join(format!("fio-{i}")));
        }
        if !out.status.success() {
            return Err(format!("fio failed: {}", String::from_utf8_lossy(&out.stderr).trim()));
        }
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).map_err(|e| format!("fio's JSON: {e}"))?;
        let jobs = v["jobs"].as_array().ok_or("fio's JSON has no jobs")?;
        let cpu_s: f64 = jobs
            .iter()
            .map(|j| (j["usr_cpu"].as_f64().unwrap_or(0.0) + j["sys_cpu"].as_f64().unwrap_or(0.0)) / 100.0 * j["job_runtime"].as_f64().unwrap_or(0.0) / 1000.0)
            .sum();
        per_gb.push(cpu_s / (input as f64 / 1e9));
    }
    Ok(FioFloor { command: format!("fio {}", args.join(" ")), cores_per_gb_per_s: median(per_gb), runs })
}

/// One row of the table (medians over the runs).
#[derive(Serialize)]
struct Row {
    engine: String,
    devices: usize,
    sources: usize,
    targets: usize,
    /// Worker threads doing the compression (host threads, or device workers in all).
    workers: usize,
    wall_s: f64,
    throughput_gb_per_s: f64,
    /// Median over rounds of this row's throughput over the CPU row's in
    /// the same round.
    vs_cpu_paired: f64,
    /// CPU of the peerpath process (everything but the emulated devices).
    host_process_cpu_pct_of_all_cores: f64,
    host_process_cores_per_gb_per_s: f64,
    /// CPU of the orchestration thread alone (user + system).
    orchestration_cores_per_gb_per_s: f64,
    /// Of which user space (the rest is the kernel setting up O_DIRECT
    /// transfers inside io_uring_enter).
    orchestration_user_cores_per_gb_per_s: f64,
    /// Offload rows: the orchestration thread's CPU while transfers and
    /// commands were in flight (without starting devices and registering
    /// their memory, which a job does once).
    orchestration_steady_cores_per_gb_per_s: Option<f64>,
    /// CPU of the emulated device processes (host cores doing the device's work).
    emulated_device_cpu_s: f64,
    host_memory_traffic_per_input_byte: f64,
    host_memory_payload_bytes: u64,
    /// Outputs byte-identical to the CPU row's.
    identical_to_cpu: bool,
    fallbacks: usize,
    /// Work meant for the devices that the host CPU did (a device that did
    /// not start or failed, a source placed on the CPU), in any run: the
    /// row's figures are then not the devices' alone.
    work_on_cpu_instead: Vec<String>,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

pub fn main(a: BenchOffloadArgs) -> ExitCode {
    crate::exit_code(run(a))
}

fn run(a: BenchOffloadArgs) -> Result<(), peerpath_runtime::JobError> {
    use peerpath_runtime::JobError;
    let level = Level::new(a.level).map_err(JobError::Usage)?;
    let runs = usize::from(a.runs);
    let mut input = 0;
    for s in &a.sources {
        // A missing source is said as such (it counted as no bytes: "nothing to measure").
        input += std::fs::metadata(s).map_err(|e| JobError::SourceUnreadable { path: s.clone(), source: e })?.len();
    }
    if input == 0 {
        return Err(JobError::Usage("the sources hold no bytes: nothing to measure".into()));
    }
    let max_devices = match a.max_devices.map(usize::from) {
        // A row asked for that cannot run is said, not left out of the table.
        Some(n) if n > a.sources.len() => {
            let most = a.sources.len();
            return Err(JobError::Usage(format!("--max-devices {n}: each device serves its own sources, so {} give at most {most} (a device with none would measure nothing): give --max-devices {most}, or more sources", count(most, "source"))));
        }
        Some(n) => n,
        None => a.sources.len().min(2),
    };
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let base = match &a.workdir {
        Some(d) => d.clone(),
        None => a.sources[0].parent().map(|p| if p.as_os_str().is_empty() { PathBuf::from(".") } else { p.to_path_buf() }).unwrap_or_else(|| PathBuf::from(".")),
    };
    // A --workdir that is not there is made (as demo's), and removed at the end only where
    // this run made it and no other job writes in it; dropped after the scratch directory.
    let _workdir = a.workdir.as_ref().map(|d| peerpath_io::OutputDir::make(d).map_err(|e| JobError::TargetIo { path: d.clone(), source: e })).transpose()?;
    // Removed at the end, and by the signal thread if the benchmark is stopped.
    let dir = peerpath_io::ScratchDir::beside(&base.join("peerpath-bench-offload")).map_err(|e| {
        let why = if a.workdir.is_some() { e } else { std::io::Error::new(e.kind(), format!("{e}; without --workdir the outputs go next to the first source: give --workdir DIR")) };
        JobError::TargetIo { path: base.clone(), source: why }
    })?;
    let mut configs: Vec<(String, Compute, usize)> = vec![("host CPU".into(), Compute::Cpu, cores)];
    for d in 1..=max_devices {
        let mut spec = EmulatedSpec::new();
        spec.devices = d;
        // The same number of workers in all as the CPU row has threads.
        spec.workers = (cores / d).max(1) as u32;
        spec.memory_dir = a.device_memory_dir.clone();
        configs.push((format!("{d} emulated CSP"), Compute::Emulated(Box::new(spec)), (cores / d).max(1) * d));
    }
    // Rounds: each runs every row once, in order, so a slow stretch of a
    // shared machine falls on all rows alike; a row's "vs CPU" is the median
    // over rounds of its throughput over the CPU row's in the same round.
    let mut cpu_output_bytes = 0u64;
    let mut reference: Option<Vec<Vec<u8>>> = None;
    let mut results: Vec<(Vec<JobReport>, bool)> = configs.iter().map(|_| (Vec::new(), true)).collect();
    for r in 0..runs {
        for (ci, (_, compute, _)) in configs.iter().enumerate() {
            let out = dir.path().join(format!("row{ci}-run{r}"));
            std::fs::create_dir_all(&out).map_err(|e| JobError::TargetIo { path: out.clone(), source: e })?;
            let pairs: Vec<(PathBuf, PathBuf)> = a
                .sources
                .iter()
                .enumerate()
                .map(|(i, s)| (s.clone(), out.join(format!("{i}.gz"))))
                .collect();
            let opts = CompressOptions {
                common: CommonOptions { threads: cores, force: true, ..CommonOptions::default() },
                level,
                format: Format::Gzip,
                block_size: peerpath_runtime::DEFAULT_BLOCK_BYTES,
                compute: compute.clone(),
                no_fallback: a.no_fallback,
                verify: false,
                encrypt: None,
            };
            results[ci].0.push(peerpath_runtime::compress(&pairs, &opts)?);
            let bytes: Vec<Vec<u8>> = pairs.iter().map(|(_, t)| std::fs::read(t).unwrap_or_default()).collect();
            if ci == 0 {
                cpu_output_bytes = bytes.iter().map(|b| b.len() as u64).sum();
            }
            match &reference {
                None => reference = Some(bytes),
                Some(want) => results[ci].1 &= *want == bytes,
            }
            let _ = std::fs::remove_dir_all(&out);
        }
    }
    let cpu_gbps: Vec<f64> = results[0].0.iter().map(|r| r.throughput_gb_per_s).collect();
    let mut rows = Vec::new();
    for ((name, compute, workers), (reports, identical)) in configs.into_iter().zip(results) {
        let devices = match &compute {
            Compute::Cpu => 0,
            Compute::Emulated(s) => s.devices,
            Compute::Gpu(_) => 1,
        };
        let wall: Vec<f64> = reports.iter().map(|r| r.wall_s).collect();
        let gbps: Vec<f64> = reports.iter().map(|r| r.throughput_gb_per_s).collect();
        let host_cpu: Vec<f64> = reports.iter().map(|r| r.cpu.total_user_s + r.cpu.total_system_s).collect();
        let orchestration = |r: &JobReport, with_system: bool| -> f64 {
            let roles = r.cpu.roles.iter().filter(|x| x.role.to_string().contains("orchestration"));
            roles.map(|x| x.user_s + if with_system { x.system_s } else { 0.0 }).sum()
        };
        let orch: Vec<f64> = reports.iter().map(|r| orchestration(r, true)).collect();
        let orch_user: Vec<f64> = reports.iter().map(|r| orchestration(r, false)).collect();
        let steady: Option<Vec<f64>> = reports.iter().map(|r| r.offload_transfers_cpu_s).collect();
        // (A fold from +0.0: f64's sum of no devices is -0.0, printed "-0.00".)
        let dev_cpu: Vec<f64> = reports.iter().map(|r| r.devices.iter().map(|d| d.process_cpu_s.unwrap_or(0.0) + d.start_cpu_s.unwrap_or(0.0)).fold(0.0, |a, b| a + b)).collect();
        let per = |cpu: &[f64]| median(cpu.iter().zip(&wall).zip(&gbps).map(|((c, w), g)| c / w.max(1e-9) / g.max(1e-12)).collect());
        let last = reports.last().expect("at least one run");
        let mut work_on_cpu_instead: Vec<String> = Vec::new();
        for f in reports.iter().flat_map(|r| &r.fallbacks) {
            let moved = matches!(f, Fallback::HostCpuNotDevice { .. } | Fallback::FewerDevices { .. } | Fallback::DeviceNotStarted { .. } | Fallback::DeviceFailed { .. });
            if moved && devices > 0 && !work_on_cpu_instead.contains(&f.to_string()) {
                work_on_cpu_instead.push(f.to_string());
            }
        }
        let name = if work_on_cpu_instead.is_empty() { name } else { format!("{name} FALLBACK") };
        rows.push(Row {
            engine: name,
            devices,
            sources: a.sources.len(),
            targets: a.sources.len(),
            workers,
            wall_s: median(wall.clone()),
            throughput_gb_per_s: median(gbps.clone()),
            vs_cpu_paired: median(gbps.iter().zip(&cpu_gbps).map(|(g, c)| g / c.max(1e-12)).collect()),
            host_process_cpu_pct_of_all_cores: median(host_cpu.iter().zip(&wall).map(|(c, w)| 100.0 * c / (w.max(1e-9) * cores as f64)).collect()),
            host_process_cores_per_gb_per_s: per(&host_cpu),
            orchestration_cores_per_gb_per_s: per(&orch),
            orchestration_user_cores_per_gb_per_s: per(&orch_user),
            orchestration_steady_cores_per_gb_per_s: steady.map(|s| per(&s)),
            emulated_device_cpu_s: median(dev_cpu),
            host_memory_traffic_per_input_byte: median(reports.iter().map(|r| r.host_memory_traffic_per_input_byte).collect()),
            host_memory_payload_bytes: last.ledger.host_memory_payload_bytes,
            identical_to_cpu: identical,
            fallbacks: last.fallbacks.len(),
            work_on_cpu_instead,
        });
    }
    let floor = if a.no_fio { Err("not measured (--no-fio)".to_string()) } else { fio_floor(&a.sources, cpu_output_bytes, dir.path(), runs) };
    if a.json {
        #[derive(Serialize)]
        struct Out<'a> {
            rows: &'a [Row],
            fio_floor: Option<&'a FioFloor>,
            fio_floor_missing: Option<&'a str>,
        }
        let out = Out { rows: &rows, fio_floor: floor.as_ref().ok(), fio_floor_missing: floor.as_ref().err().map(String::as_str) };
        println!("{}", crate::jsonout::stamped("bench-offload", &out));
        return Ok(());
    }
    println!(
        "peerpath bench-offload: seed Table 1 columns, measured on this machine ({cores} cores); emulated devices run on host cores \
         (not hardware speed). {}, {input} bytes, level {}, 1 MiB blocks, median of {} in rounds (each round runs every row once).",
        count(a.sources.len(), "source"),
        level.get(),
        count(runs, "run")
    );
    println!(
        "{:<16} {:>3} {:>4} {:>4} {:>7} {:>8} {:>7} {:>9} {:>11} {:>11} {:>11} {:>11} {:>10} {:>9} {:>12} {:>5}",
        "engine", "dev", "src", "tgt", "workers", "GB/s", "vs CPU", "host CPU", "host c/GB/s", "orch c/GB/s", "orch user", "orch steady", "dev CPU s", "host mem", "payload@host", "same"
    );
    for r in &rows {
        println!(
            "{:<16} {:>3} {:>4} {:>4} {:>7} {:>8.3} {:>7.3} {:>8.1}% {:>11.3} {:>11.4} {:>11.4} {:>11} {:>10} {:>8.2}x {:>12} {:>5}",
            r.engine,
            r.devices,
            r.sources,
            r.targets,
            r.workers,
            r.throughput_gb_per_s,
            r.vs_cpu_paired,
            r.host_process_cpu_pct_of_all_cores,
            r.host_process_cores_per_gb_per_s,
            r.orchestration_cores_per_gb_per_s,
            r.orchestration_user_cores_per_gb_per_s,
            r.orchestration_steady_cores_per_gb_per_s.map_or("-".to_string(), |s| format!("{s:.4}")),
            if r.devices == 0 { "-".to_string() } else { format!("{:.2}", r.emulated_device_cpu_s) },
            r.host_memory_traffic_per_input_byte,
            r.host_memory_payload_bytes,
            if r.identical_to_cpu { "yes" } else { "NO" }
        );
    }
    println!(
        "vs CPU: median over rounds of the row's GB/s over the CPU row's in the same round; \
         host CPU: the peerpath process (orchestration, and on the CPU row the compression); orch: its orchestration thread (orch user: \
         its user-space part; the rest is the kernel setting up O_DIRECT transfers; orch steady: while transfers and commands were in flight, \
         without starting the devices and registering their memory, done once per job); dev CPU: the emulated device processes' own CPU, their start included (making the memory the job uses resident, as a real device's memory exists from power-on; then the work a real CSP would do; not a saving here); host mem: host \
         memory traffic per input byte (ledger); payload@host: payload bytes that crossed host memory."
    );
    match &floor {
        Ok(f) => println!(
            "platform floor: fio's own CPU to read the sources and write as many bytes as the outputs (io_uring, O_DIRECT, fixed buffers, \
             1 MiB reads at depth 8, 4 MiB writes at depth 4): {:.4} cores per GB/s of input, median of {}; compare with orch steady. \
             Command: {}",
            f.cores_per_gb_per_s, count(f.runs, "run"), f.command
        ),
        Err(why) => println!("platform floor (fio): {why}"),
    }
    for r in rows.iter().filter(|r| !r.work_on_cpu_instead.is_empty()) {
        println!("{}: NOT the devices' figures: the host CPU did work meant for them: {}", r.engine, r.work_on_cpu_instead.join("; "));
    }
    if rows.iter().any(|r| r.fallbacks > 0 && r.work_on_cpu_instead.is_empty()) {
        println!("some rows took other fallbacks (reads or writes without O_DIRECT, say): run one row by hand with `peerpath compress --engine emulated` to see them");
    }
    Ok(())
}
