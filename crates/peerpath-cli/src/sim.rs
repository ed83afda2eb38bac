//! `peerpath sim`: the fabric simulator (crates/peerpath-sim). Every figure it prints is
//! simulated and says so.
//!
//!     peerpath sim reproduce [--json]
//!     peerpath sim [--file F | --sysfs ROOT] [--job J] [--vary csp=1..12] [--json] [--svg F]
//!     peerpath sim plan [--file F | --sysfs ROOT] --target 100 [--add csp|ssd] [--job J]

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use peerpath_runtime::JobError;
use peerpath_sim::sweep::{self, Param, Vary};
use peerpath_sim::{reproduce, svg, Catalog, Job, Machine, SimError, SimOptions};
use peerpath_topo::Topology;

#[derive(Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct SimArgs {
    #[command(subcommand)]
    action: Option<SimAction>,
    #[command(flatten)]
    run: RunArgs,
}

#[derive(Subcommand)]
#[allow(clippy::large_enum_variant)] // parsed once
enum SimAction {
    /// Predict the published figures of the seeds (001-004) and the lent machine's own, side by side.
    Reproduce {
        /// Print JSON.
        #[arg(long)]
        json: bool,
        /// Use this device catalog instead of the shipped sim/catalog.toml.
        #[arg(long)]
        catalog: Option<PathBuf>,
    },
    /// Propose how many devices a job needs for a target throughput, and how to group them.
    Plan {
        /// Target throughput in Gb/s (above 0).
        #[arg(long)]
        target: f64,
        /// What to add: csp or ssd.
        #[arg(long, default_value = "csp")]
        add: String,
        /// Give up after this many devices, 1 to 256.
        #[arg(long, default_value_t = 64)]
        limit: u32,
        #[command(flatten)]
        run: RunArgs,
    },
}

#[derive(Args)]
struct RunArgs {
    /// Read a topology file (TOML; `peerpath topo --export` writes one).
    #[arg(long)]
    file: Option<PathBuf>,
    /// Read this sysfs root instead (a real /sys or a fixture tree).
    #[arg(value_hint = clap::ValueHint::DirPath, long, conflicts_with = "file")]
    sysfs: Option<PathBuf>,
    /// The job: compress-p2p, compress-cpu, compress-memory (a file in memory on the CPU),
    /// compress-memory-gpu[:GPU], read, write, read-cmb[:CSP], write-cmb[:CSP], send,
    /// send-nicmem (payloads in NIC memory, seed 002).
    #[arg(long, default_value = "compress-p2p")]
    job: String,
    /// The function, as the catalog names it (compress-zlib-1, compress-peerpath-1,
    /// compress-nvcomp-gzip-2, ...) [default: the job's].
    #[arg(long)]
    function: Option<String>,
    /// Compute threads, 1 to 8192, of a CPU job (compress-cpu, compress-memory): at most this many
    /// cores compute, all sockets together (compress-memory computes on socket 0: at most its
    /// cores) [default: every core].
    #[arg(long)]
    threads: Option<usize>,
    /// Vary one parameter: csp=1..12, ssd=3..18, gen=3..5, mps=128,256,512.
    #[arg(long)]
    vary: Option<String>,
    /// Catalog platform (CPU, memory, PCIe settings) [default: matched from the CPU].
    #[arg(long)]
    platform: Option<String>,
    /// Compression ratio (input / output), 0.5 to 1032 (deflate's most) [default: the catalog's].
    #[arg(long)]
    ratio: Option<f64>,
    /// Use at most this many CSPs, compress-p2p only (1 or more; fewer on this machine: a note
    /// says so, and --vary csp=N clones more).
    #[arg(long)]
    csps: Option<usize>,
    /// Use at most this many SSDs, not for compress-memory (1 or more; fewer on this machine: a
    /// note says so, and --vary ssd=N clones more).
    #[arg(long)]
    ssds: Option<usize>,
    /// Chunks each flow keeps in flight, 1 to 65536 (an NVMe queue's most entries), for the chunk
    /// latency: mean by Little's law, percentiles under an exponential-service assumption, both
    /// labelled.
    #[arg(long, default_value_t = 8)]
    queue_depth: u32,
    /// Seed for the flow-size jitter (the steady state does not depend on it).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Use this device catalog instead of the shipped sim/catalog.toml.
    #[arg(long)]
    catalog: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
    /// Write the sweep's plot here (SVG; with --vary).
    #[arg(long)]
    svg: Option<PathBuf>,
}

fn catalog(path: &Option<PathBuf>) -> Result<Catalog, SimError> {
    match path {
        Some(p) => Catalog::from_file(p),
        None => Ok(Catalog::default_catalog()),
    }
}

/// The topology, catalog and job the options describe; the job's numbers are checked first, so a
/// usage error is said before any file is read.
fn setup(a: &RunArgs) -> Result<(Topology, Catalog, Job), Stop> {
    let mut job = Job::parse(&a.job)?;
    job.ratio = a.ratio;
    if let Some(f) = &a.function {
        if !job.compresses() {
            return Err(SimError::Job(format!("--function '{f}' for a job that runs none ({})", job.describe())).into());
        }
        job.function = f.clone();
    }
    job.threads = a.threads;
    job.csps = a.csps;
    job.ssds = a.ssds;
    job.queue_depth = a.queue_depth;
    job.check()?;
    let topo = match (&a.file, &a.sysfs) {
        (Some(f), _) => Topology::from_toml_file(f).map_err(SimError::from)?,
        // Said as topo's: it named no option ("/nonexist is not a sysfs root: ...").
        (None, root) => {
            let root = root.as_deref().unwrap_or(std::path::Path::new("/sys"));
            Topology::from_sysfs(root).map_err(|e| Stop::Job(JobError::Topology(crate::sysfs_error(root, e))))?
        }
    };
    let cat = catalog(&a.catalog)?;
    Ok((topo, cat, job))
}

fn opts(a: &RunArgs) -> SimOptions {
    SimOptions { seed: a.seed, ..SimOptions::default() }
}

/// Why `peerpath sim` stops: the simulator refused, or as a job does: the plot could not be
/// written (exit 11 with nothing left behind, as `topo --svg`; it was a what-if error, exit 2),
/// or the sysfs root is none (exit 13, said as topo says it).
enum Stop {
    Sim(SimError),
    Job(JobError),
}

impl From<SimError> for Stop {
    fn from(e: SimError) -> Stop {
        Stop::Sim(e)
    }
}

fn run_inner(a: SimArgs) -> Result<(), Stop> {
    match a.action {
        Some(SimAction::Reproduce { json, catalog: c }) => {
            let r = reproduce::reproduce(&catalog(&c)?)?;
            if json {
                println!("{}", crate::jsonout::stamped_text("sim-reproduce", &r.to_json()));
            } else {
                print!("{}", r.render());
            }
        }
        Some(SimAction::Plan { target, add, limit, run }) => {
            if run.vary.is_some() || run.svg.is_some() {
                // The plan is its own sweep (--add); they were taken and ignored.
                return Err(SimError::Vary("sim plan sweeps what --add names itself: it takes no --vary or --svg".into()).into());
            }
            let (topo, cat, job) = setup(&run)?;
            let param = match add.as_str() {
                "csp" | "csps" => Param::Csp,
                "ssd" | "ssds" => Param::Ssd,
                other => return Err(SimError::Vary(format!("--add {other}: csp or ssd")).into()),
            };
            let p = sweep::plan(&topo, &cat, run.platform.as_deref(), &job, param, target, limit, &opts(&run))?;
            if run.json {
                println!("{}", crate::jsonout::stamped("sim-plan", &p));
            } else {
                print!("{}", p.render());
            }
        }
        None => {
            let r = &a.run;
            let (topo, cat, job) = setup(r)?;
            match &r.vary {
                Some(v) => {
                    let vary = Vary::parse(v)?;
                    let sw = sweep::sweep(&topo, &cat, r.platform.as_deref(), &job, &vary, &opts(r))?;
                    if let Some(p) = &r.svg {
                        // Replaced when asked for again, but never left half-written.
                        crate::write_output(p, svg::render(&sw).as_bytes(), true).map_err(Stop::Job)?;
                    }
                    if r.json {
                        println!("{}", crate::jsonout::stamped_text("sim-sweep", &sw.to_json()));
                    } else {
                        print!("{}", sw.render());
                    }
                }
                None => {
                    if r.svg.is_some() {
                        return Err(SimError::Vary("--svg plots a sweep: add --vary".into()).into());
                    }
                    let m = Machine::new(topo, &cat, r.platform.as_deref())?;
                    let rep = peerpath_sim::simulate(&m, &job, &opts(r))?;
                    if r.json {
                        println!("{}", crate::jsonout::stamped_text("sim-report", &rep.to_json()));
                    } else {
                        print!("{}", rep.render());
                    }
                }
            }
        }
    }
    Ok(())
}

/// Runs `peerpath sim`. Exit codes: 3 a `--file` or `--catalog` that cannot be read, 13
/// topology errors (as `peerpath topo`), 2 a bad job,
/// parameter or catalog (a `--catalog` file, a `--platform` it lacks: the user's input, as a
/// job is; 1 is an internal error), 11 a plot that cannot be written.
pub fn run(a: SimArgs) -> ExitCode {
    match run_inner(a) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Stop::Job(e)) => crate::exit_code(Err(e)),
        Err(Stop::Sim(e)) => {
            eprintln!("peerpath: error: {e}");
            ExitCode::from(match e {
                SimError::Topology(peerpath_topo::TopoError::FileUnreadable { .. }) | SimError::Unreadable(_) => 3,
                SimError::Topology(_) => 13,
                SimError::Job(_) | SimError::Vary(_) | SimError::Catalog(_) => 2,
            })
        }
    }
}
