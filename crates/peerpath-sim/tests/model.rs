//! Properties of the model: conservation, saturation at the modelled link rate, linear scaling
//! until a shared link fills, determinism, and a source for every catalog number.

use peerpath_sim::engine::{allocate, simulate, SimOptions};
use peerpath_sim::job::{Job, JobKind, Memory};
use peerpath_sim::machine::{Dir, Machine, ResKey};
use peerpath_sim::reproduce::{EPYC_CASE_STUDY, FPGA_CASCADE, SEED004_SR635};
use peerpath_sim::{Catalog, Figure};
use peerpath_topo::Topology;

fn cascade() -> Machine {
    Machine::new(Topology::from_toml_str(FPGA_CASCADE).unwrap(), &Catalog::default_catalog(), Some("zynq-us-plus-xdma")).unwrap()
}

fn epyc() -> Machine {
    Machine::new(Topology::from_toml_str(EPYC_CASE_STUDY).unwrap(), &Catalog::default_catalog(), Some("amd-epyc-7501-2s")).unwrap()
}

fn exact() -> SimOptions {
    SimOptions { seed: 7, size_jitter: 0.0 }
}

#[test]
fn every_catalog_number_has_a_source() {
    let c = Catalog::default_catalog();
    let figs = c.figures();
    assert!(figs.len() > 40);
    for (path, f) in figs {
        assert!(!f.source.trim().is_empty(), "{path}");
        if f.value.is_none() {
            assert!(f.note.as_deref().is_some_and(|n| !n.is_empty()), "{path}: unknown without a reason");
        }
    }
    // A figure without a source is refused.
    let bad = peerpath_sim::catalog::DEFAULT_CATALOG.replacen("source = \"seed 003: 'two AMD", "source = \"\" , x = \"", 1);
    assert!(Catalog::from_toml_str(&bad).is_err());
}

#[test]
fn a_single_link_saturates_at_its_modelled_rate() {
    // Make the SSD's flash far faster than its x4 Gen3 link: the link must be the limit, at
    // exactly its encoded rate times the posted-write efficiency (MPS 128, 3-dword headers).
    let mut m = cascade();
    for n in &mut m.nodes {
        if let peerpath_sim::machine::NodeKind::Ssd(s) = &mut n.kind {
            s.seq_read_bytes_per_s = Figure::assumed(100e9, "test: unlimited flash");
        }
    }
    let mut job = Job::new(JobKind::Read { into: Memory::Host });
    job.ssds = Some(1);
    let r = simulate(&m, &job, &exact()).unwrap();
    let link = 8e9 * 128.0 / 130.0 / 8.0 * 4.0;
    let eff = 128.0 / (128.0 + 8.0 + 12.0);
    assert!((r.throughput_bytes_per_s - link * eff).abs() < 1.0, "{} vs {}", r.throughput_bytes_per_s, link * eff);
    assert!(r.bottleneck.starts_with("PCIe link ssd0 -> "), "{}", r.bottleneck);
    assert!(r.bottleneck.ends_with("at 100%"));
    assert_eq!(r.label, "simulated");
}

#[test]
fn scaling_is_linear_until_the_shared_up_link_fills() {
    let m = cascade();
    let mut rates = Vec::new();
    let mut bottlenecks = Vec::new();
    for n in 1..=8 {
        let mut job = Job::new(JobKind::Read { into: Memory::Host });
        job.ssds = Some(n);
        let r = simulate(&m, &job, &exact()).unwrap();
        rates.push(r.throughput_bytes_per_s);
        bottlenecks.push(r.bottleneck);
    }
    let one = rates[0];
    let uplink = m.resource(ResKey::Link(m.find("card0").unwrap(), Dir::Up)).unwrap().capacity * m.tlp.posted_write_efficiency();
    for (i, r) in rates.iter().enumerate() {
        let n = (i + 1) as f64;
        let expect = (n * one).min(uplink);
        assert!((r - expect).abs() / expect < 1e-9, "{n} SSDs: {r} vs {expect}");
    }
    assert!(bottlenecks[0].contains("ssd0"));
    assert!(bottlenecks[7].contains("card0 -> fpga-root-port"), "{}", bottlenecks[7]);

    // P2P groups on the EPYC share nothing: linear in the number of CSPs.
    let e = epyc();
    let t: Vec<f64> = (1..=6)
        .map(|k| {
            let mut j = Job::new(JobKind::CompressP2p);
            j.csps = Some(k);
            simulate(&e, &j, &exact()).unwrap().throughput_bytes_per_s
        })
        .collect();
    for (i, x) in t.iter().enumerate() {
        assert!((x - t[0] * (i + 1) as f64).abs() / x < 1e-9);
    }
}

#[test]
fn bytes_are_conserved_per_component() {
    // Reading into a CMB: what leaves the flash is what the CMB memory takes in, and every link
    // on the way carries it (times its wire overhead).
    let m = Machine::new(Topology::from_toml_str(SEED004_SR635).unwrap(), &Catalog::default_catalog(), Some("amd-epyc-7302p-1s")).unwrap();
    let job = Job::parse("read-cmb:noload").unwrap();
    let plan = job.plan(&m).unwrap();
    let alloc = allocate(&plan, &vec![true; plan.flows.len()]).unwrap();
    let w = m.tlp.posted_write();
    let mut cmb_in = 0.0;
    let mut flash_out = 0.0;
    for (f, x) in plan.flows.iter().zip(&alloc.rates) {
        for (k, a) in &f.loads {
            match k {
                ResKey::FlashRead(_) => flash_out += a * x,
                ResKey::CmbMemory(_) => cmb_in += a * x,
                ResKey::Link(_, _) => {
                    let payload = a / w.data_direction;
                    let ack = a / w.reverse_direction;
                    assert!((payload - 1.0).abs() < 1e-12 || (ack - 1.0).abs() < 1e-12, "{k:?}: {a}");
                }
                _ => {}
            }
        }
    }
    assert!((cmb_in - flash_out).abs() < 1e-3);

    // Compression on CSPs: per input byte the CMB sees in + engine read + engine write + out,
    // and the target SSD writes exactly input / ratio.
    let e = epyc();
    let mut job = Job::new(JobKind::CompressP2p);
    job.ratio = Some(2.0);
    let r = simulate(&e, &job, &exact()).unwrap();
    let writes: f64 = r.utilisation.iter().filter(|u| u.resource.starts_with("flash writes")).map(|u| u.used).sum();
    let reads: f64 = r.utilisation.iter().filter(|u| u.resource.starts_with("flash reads")).map(|u| u.used).sum();
    assert!((reads - r.throughput_bytes_per_s).abs() < 1.0);
    assert!((writes - r.throughput_bytes_per_s / 2.0).abs() < 1.0);

    // Compression on the CPU: host memory = (1 + 1 + 1/r + 1/r) x input, by purpose.
    let mut job = Job::new(JobKind::CompressCpu);
    job.ratio = Some(2.0);
    let r = simulate(&e, &job, &exact()).unwrap();
    assert!((r.host_memory_bytes_per_s - 3.0 * r.throughput_bytes_per_s).abs() / r.host_memory_bytes_per_s < 1e-9);
    // The whole job moves exactly the bytes its flows hold.
    let avg = r.job_average_bytes_per_s * r.job_seconds;
    let total: f64 = 12.0 * job.bytes_per_source;
    assert!((avg - total).abs() / total < 1e-9, "{avg} vs {total}");
}

#[test]
fn same_seed_same_result() {
    let e = epyc();
    let job = Job::new(JobKind::CompressP2p);
    let a = simulate(&e, &job, &SimOptions { seed: 42, size_jitter: 0.1 }).unwrap().to_json();
    let b = simulate(&e, &job, &SimOptions { seed: 42, size_jitter: 0.1 }).unwrap().to_json();
    assert_eq!(a, b);
    let c = simulate(&e, &job, &SimOptions { seed: 43, size_jitter: 0.1 }).unwrap();
    let a: serde_json::Value = serde_json::from_str(&a).unwrap();
    // The seed moves the job's length (flow sizes), not the steady state.
    assert_eq!(a["throughput_bytes_per_s"].as_f64().unwrap(), c.throughput_bytes_per_s);
    assert_ne!(a["job_seconds"].as_f64().unwrap(), c.job_seconds);
}

#[test]
fn p2p_planner_follows_the_verdicts() {
    // On the EPYC, each CSP gets SSDs of its own socket (cross-socket P2P is refused).
    let e = epyc();
    let plan = Job::new(JobKind::CompressP2p).plan(&e).unwrap();
    assert_eq!(plan.groups.len(), 6);
    for f in &plan.flows {
        let names: Vec<&str> = f.name.split(" -> ").collect();
        let socket: Vec<u32> = names.iter().map(|n| e.nodes[e.find(n).unwrap()].socket).collect();
        assert!(socket.iter().all(|s| *s == socket[0]), "{}", f.name);
    }
    // The cascade has no CSP: compress-p2p is refused with a reason.
    let err = Job::new(JobKind::CompressP2p).plan(&cascade()).unwrap_err().to_string();
    assert!(err.contains("CSP"), "{err}");
}

#[test]
fn what_if_csp_sweep_clones_devices_and_marks_the_bottleneck_move() {
    use peerpath_sim::sweep::{sweep, Vary};
    let topo = Topology::from_toml_str(EPYC_CASE_STUDY).unwrap();
    let cat = Catalog::default_catalog();
    let vary = Vary::parse("csp=1..20").unwrap();
    let sw = sweep(&topo, &cat, Some("amd-epyc-7501-2s"), &Job::new(JobKind::CompressP2p), &vary, &exact()).unwrap();
    assert_eq!(sw.points.len(), 20);
    // Linear while each CSP's link is the limit: up to 18 CSPs, SSDs shared as sources, each
    // written by one CSP...
    let one = sw.points[0].throughput_gbit_per_s;
    for p in &sw.points[..18] {
        assert!((p.throughput_gbit_per_s - one * p.value as f64).abs() < 1e-6 * p.throughput_gbit_per_s, "{}", sw.render());
    }
    // ... then a target SSD takes two CSPs' output and its flash writes fill first.
    assert!(sw.points[18].bottleneck_moved && sw.points[18].bottleneck.starts_with("flash writes"), "{}", sw.render());
    assert!(sw.points.windows(2).all(|w| w[1].throughput_gbit_per_s >= w[0].throughput_gbit_per_s), "{}", sw.render());
    let svg = peerpath_sim::svg::render(&sw);
    assert!(svg.starts_with("<svg") && svg.contains("simulated") && svg.contains("stroke-dasharray=\"5,4\""));
    let _: serde_json::Value = serde_json::from_str(&sw.to_json()).unwrap();
}

#[test]
fn what_if_parameters_parse_and_change_the_machine() {
    use peerpath_sim::sweep::{apply, Param, Vary};
    assert_eq!(Vary::parse("gen=3..5").unwrap().values, vec![3, 4, 5]);
    assert_eq!(Vary::parse("mps=128,256").unwrap().param, Param::Mps);
    assert!(Vary::parse("csp=0..3").is_err());
    assert!(Vary::parse("volts=1..2").is_err());
    let topo = Topology::from_toml_str(FPGA_CASCADE).unwrap();
    let cat = Catalog::default_catalog();
    let mut job = Job::new(JobKind::Read { into: Memory::Host });
    job.ssds = Some(1);
    let t = |param, v| {
        let (m, j) = apply(&topo, &cat, Some("zynq-us-plus-xdma"), &job, param, v).unwrap();
        simulate(&m, &j, &exact()).unwrap().throughput_bytes_per_s
    };
    // A Gen4 link lifts the link limit: the SSD's own 3.5 GB/s is next.
    assert!((t(Param::Gen, 4) - 3.5e9).abs() < 1.0);
    assert!(t(Param::Mps, 256) > t(Param::Mps, 128));
    // Cloned SSDs get new addresses and the planner uses them.
    let (m, _) = apply(&topo, &cat, None, &job, Param::Ssd, 40).unwrap();
    assert_eq!(m.ssds().len(), 40);
}

#[test]
fn plan_proposes_a_csp_count_for_a_target() {
    use peerpath_sim::sweep::{plan, Param};
    let topo = Topology::from_toml_str(EPYC_CASE_STUDY).unwrap();
    let p = plan(&topo, &Catalog::default_catalog(), Some("amd-epyc-7501-2s"), &Job::new(JobKind::CompressP2p), Param::Csp, 100.0, 24, &exact()).unwrap();
    assert_eq!(p.count, Some(4), "{}", p.render());
    assert_eq!(p.groups.len(), 4);
    // SSDs for the default job: it needs two (a source and a target), so the plan starts there
    // (it failed at one, "needs at least two SSDs").
    let p = plan(&topo, &Catalog::default_catalog(), Some("amd-epyc-7501-2s"), &Job::new(JobKind::CompressP2p), Param::Ssd, 10.0, 24, &exact()).unwrap();
    assert!(p.count.is_some_and(|n| n >= 2), "{}", p.render());
}

#[test]
fn a_link_generation_sweep_moves_the_bottleneck_once() {
    use peerpath_sim::sweep::{sweep, Vary};
    let topo = Topology::from_toml_str(FPGA_CASCADE).unwrap();
    let mut job = Job::new(JobKind::Read { into: Memory::Host });
    job.ssds = Some(4);
    let sw = sweep(&topo, &Catalog::default_catalog(), Some("zynq-us-plus-xdma"), &job, &Vary::parse("gen=1..5").unwrap(), &exact()).unwrap();
    let moves: Vec<u32> = sw.points.iter().filter(|p| p.bottleneck_moved).map(|p| p.value).collect();
    assert_eq!(moves, vec![5], "{}", sw.render());
    assert!(sw.points[4].bottleneck.starts_with("flash reads"));
}

/// The seed 003 server with a ConnectX-5 (2 x 25 GbE in the catalog) on its own x8 Gen3 root port.
fn epyc_with_nic() -> Machine {
    let extra = r#"
[[device]]
bdf = "0000:00:08.1"
role = "root_port"
kind = "bridge"
vendor = "0x1022"
device = "0x1484"
class = "0x060400"
numa_node = 0
local_cpus = "0-31"

[device.link]
current_speed = "8.0 GT/s"
max_speed = "8.0 GT/s"
current_width = 8
max_width = 8

[[device]]
bdf = "0000:0b:00.0"
upstream = "0000:00:08.1"
role = "endpoint"
kind = "nic"
vendor = "0x15b3"
device = "0x1017"
class = "0x020000"
label = "nic0"
numa_node = 0
local_cpus = "0-31"

[device.link]
current_speed = "8.0 GT/s"
max_speed = "8.0 GT/s"
current_width = 8
max_width = 8
"#;
    let text = format!("{EPYC_CASE_STUDY}\n{extra}");
    Machine::new(Topology::from_toml_str(&text).unwrap(), &Catalog::default_catalog(), Some("amd-epyc-7501-2s")).unwrap()
}

#[test]
fn a_nic_saturates_at_its_line_rate_times_payload_efficiency() {
    let m = epyc_with_nic();
    let nic = m.nics()[0];
    let mut job = Job::parse("send").unwrap();
    job.ssds = Some(3); // several GB/s of flash each: more than two 25 GbE ports carry
    let plan = job.plan(&m).unwrap();
    let alloc = allocate(&plan, &vec![true; plan.flows.len()]).unwrap();
    let total: f64 = alloc.rates.iter().sum();
    let line = 50e9 / 8.0 * 0.9415;
    assert!((total - line).abs() / line < 1e-9, "{total} vs {line}");
    assert!(alloc.saturated.contains(&ResKey::NicSend(nic)), "{:?}", alloc.saturated);
    // Every byte sent crossed host memory twice (DMA in from the SSD, DMA out to the NIC).
    let memory: f64 = plan.flows.iter().zip(&alloc.rates).map(|(f, x)| f.memory.iter().map(|(_, a)| a * x).sum::<f64>()).sum();
    assert!((memory - 2.0 * total).abs() / total < 1e-9, "{memory} vs 2 x {total}");
    // A slower NIC link than its ports (x1 Gen3, ~0.9 GB/s): the link is the limit, not the ports.
    let mut slow = epyc_with_nic();
    slow.nodes[nic].link.as_mut().unwrap().current_width = Some(1);
    let plan = job.plan(&slow).unwrap();
    let alloc = allocate(&plan, &vec![true; plan.flows.len()]).unwrap();
    let total: f64 = alloc.rates.iter().sum();
    assert!(total < 1e9 && !alloc.saturated.contains(&ResKey::NicSend(nic)), "{total}: {:?}", alloc.saturated);
    // No NIC: said.
    assert!(Job::parse("send").unwrap().plan(&epyc()).unwrap_err().to_string().contains("needs a NIC"));
}

fn lent() -> Machine {
    let t = Topology::from_toml_str(peerpath_sim::reproduce::LENT_GPU_HOST).unwrap();
    Machine::new(t, &Catalog::default_catalog(), None).unwrap()
}

#[test]
fn the_lent_machine_matches_its_platform_and_knows_its_gpu() {
    let m = lent();
    assert_eq!(m.platform.name, "lent-gpu-host-16c", "matched from the CPU (Intel family 6 model 0xcf)");
    let g = m.gpus();
    assert_eq!(g.len(), 1);
    assert!(matches!(&m.nodes[g[0]].kind, peerpath_sim::machine::NodeKind::Gpu(s) if s.name == "nvidia-h100-sxm5-80gb"));
}

#[test]
fn a_cpu_memory_job_scales_with_threads_times_the_measured_contention() {
    let m = lent();
    let rate = m.platform.functions["compress-peerpath-1"].value.unwrap();
    let curve = &m.platform.core_contention["compress-peerpath-1"];
    for t in [1usize, 2, 3, 8, 16, 64] {
        let mut job = Job::parse("compress-memory").unwrap();
        job.threads = Some(t);
        let r = simulate(&m, &job, &exact()).unwrap();
        let busy = t.min(16) as f64;
        let want = busy * rate * curve.at(busy);
        assert!((r.throughput_bytes_per_s - want).abs() < want * 1e-9, "T={t}: {} vs {want}", r.throughput_bytes_per_s);
        assert!(r.bottleneck.starts_with("CPU cores of socket 0"), "{}", r.bottleneck);
        // No storage in a memory job.
        assert!(r.utilisation.iter().all(|u| !matches!(u.key, ResKey::FlashRead(_) | ResKey::FlashWrite(_))));
    }
    // Interpolation between measured points, and the ends held beyond them.
    assert!((curve.at(3.0) - (0.7552 + 0.6412) / 2.0).abs() < 1e-12);
    assert_eq!(curve.at(64.0), curve.at(16.0));
}

#[test]
fn a_gpu_memory_job_is_limited_by_the_kernel_and_crosses_the_gpus_link_both_ways() {
    let m = lent();
    let mut job = Job::parse("compress-memory-gpu").unwrap();
    job.ratio = Some(2.0);
    let r = simulate(&m, &job, &exact()).unwrap();
    let kernel = m.catalog.gpu("nvidia-h100-sxm5-80gb").unwrap().functions["compress-nvcomp-gzip-2"].value.unwrap();
    assert!((r.throughput_bytes_per_s - kernel).abs() < kernel * 1e-9);
    assert!(r.bottleneck.contains("compress-nvcomp-gzip-2 engines"), "{}", r.bottleneck);
    let link = |dir| r.utilisation.iter().find(|u| u.key == ResKey::Link(m.gpus()[0], dir)).map(|u| u.used).unwrap();
    // Input goes down (DMA read completions), half as much comes back up (posted writes).
    assert!(link(Dir::Down) > kernel && link(Dir::Up) > kernel / 2.0 && link(Dir::Up) < link(Dir::Down));
    // A function the catalog names without a figure is said, not guessed: the engine is
    // unlimited and the link limits.
    let text = peerpath_sim::catalog::DEFAULT_CATALOG.replacen("functions.compress-nvcomp-gzip-2 = { value = 6.8e9, ", "functions.compress-nvcomp-gzip-2 = { ", 1);
    assert_ne!(text, peerpath_sim::catalog::DEFAULT_CATALOG);
    let unknown = Machine::new(Topology::from_toml_str(peerpath_sim::reproduce::LENT_GPU_HOST).unwrap(), &Catalog::from_toml_str(&text).unwrap(), None).unwrap();
    let r = simulate(&unknown, &Job::parse("compress-memory-gpu").unwrap(), &exact()).unwrap();
    assert!(r.notes.iter().any(|n| n.contains("kernel throughput unknown")), "{:?}", r.notes);
    // A function no GPU of the catalog names is a typo, refused with the known ones (it became
    // an unlimited kernel).
    let mut job = Job::parse("compress-memory-gpu").unwrap();
    job.function = "compress-nvcomp-zstd".into();
    let e = simulate(&m, &job, &exact()).unwrap_err().to_string();
    assert!(e.contains("unknown function 'compress-nvcomp-zstd'") && e.contains("compress-nvcomp-gzip-2"), "{e}");
}

/// A typo in the function of a CSP job was an engine of unknown, so unlimited, throughput; the
/// catalog's NoLoad function (known, without a figure) still runs and says so.
#[test]
fn a_csp_function_the_catalog_does_not_name_is_refused() {
    let mut job = Job::new(JobKind::CompressP2p);
    job.function = "nope".into();
    let e = job.plan(&epyc()).unwrap_err().to_string();
    assert!(e.contains("unknown function 'nope'") && e.contains("known: compress-zlib-1"), "{e}");
    let r = simulate(&epyc(), &Job::new(JobKind::CompressP2p), &exact()).unwrap();
    assert!(r.notes.iter().any(|n| n.contains("compress-zlib-1 engine throughput unknown")), "{:?}", r.notes);
}

/// Numbers that describe no job are refused before anything is simulated: a NaN, 0, tiny,
/// negative or infinite ratio gave a throughput of 0 and a job of a year, a queue depth past
/// NVMe's 65536 ran for minutes, 0 devices read as "the machine has none".
#[test]
fn a_job_with_numbers_out_of_range_is_refused() {
    use peerpath_sim::job::{QUEUE_DEPTH, RATIO, THREADS};
    let m = epyc();
    let refused = |f: &dyn Fn(&mut Job)| {
        let mut job = Job::new(JobKind::CompressP2p);
        f(&mut job);
        assert!(job.check().is_err() && job.plan(&m).is_err(), "{job:?}");
    };
    for r in [f64::NAN, 0.0, 1e-300, -1.0, f64::INFINITY, 0.49, 1033.0] {
        refused(&|j| j.ratio = Some(r));
    }
    refused(&|j| j.queue_depth = 0);
    refused(&|j| j.queue_depth = QUEUE_DEPTH.end() + 1);
    refused(&|j| j.threads = Some(0));
    refused(&|j| j.threads = Some(THREADS.end() + 1));
    refused(&|j| j.csps = Some(0));
    refused(&|j| j.ssds = Some(0));
    for r in [*RATIO.start(), 2.0, *RATIO.end()] {
        let mut job = Job::new(JobKind::CompressP2p);
        job.ratio = Some(r);
        job.queue_depth = *QUEUE_DEPTH.end();
        simulate(&m, &job, &exact()).unwrap();
    }
}

/// `plan` read a NaN or infinite target as "not reachable" and a limit of 0 as 1.
#[test]
fn a_plan_without_a_target_or_a_limit_is_refused() {
    use peerpath_sim::sweep::{plan, Param, PLAN_LIMIT};
    let topo = Topology::from_toml_str(EPYC_CASE_STUDY).unwrap();
    let cat = Catalog::default_catalog();
    let job = Job::new(JobKind::CompressP2p);
    let run = |target: f64, limit: u32| plan(&topo, &cat, Some("amd-epyc-7501-2s"), &job, Param::Csp, target, limit, &exact());
    for t in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 0.0, -5.0] {
        assert!(run(t, 8).unwrap_err().to_string().contains("above 0"), "{t}");
    }
    for l in [0, PLAN_LIMIT.end() + 1] {
        assert!(run(100.0, l).unwrap_err().to_string().contains("limit"), "{l}");
    }
    assert_eq!(run(100.0, 4).unwrap().count, Some(4));
}

#[test]
fn a_contention_curve_out_of_order_is_refused() {
    let bad = peerpath_sim::catalog::DEFAULT_CATALOG.replacen("[[1, 1.0], [2, 0.7552]", "[[2, 1.0], [1, 0.7552]", 1);
    assert_ne!(bad, peerpath_sim::catalog::DEFAULT_CATALOG);
    let e = Catalog::from_toml_str(&bad).unwrap_err().to_string();
    assert!(e.contains("core_contention"), "{e}");
}

#[test]
fn a_nicmem_mover_keeps_payloads_off_host_memory_and_the_links_toward_it() {
    let m = Machine::new(Topology::from_toml_str(peerpath_sim::reproduce::DATAMOVER_SR635).unwrap(), &Catalog::default_catalog(), Some("amd-epyc-7302p-1s")).unwrap();
    let nic = m.nics()[0];
    for ssds in 1..=4 {
        let (mut host, mut nicmem) = (Job::parse("send").unwrap(), Job::parse("send-nicmem").unwrap());
        host.ssds = Some(ssds);
        nicmem.ssds = Some(ssds);
        let (h, n) = (simulate(&m, &host, &exact()).unwrap(), simulate(&m, &nicmem, &exact()).unwrap());
        // Same throughput (flash, then the NIC's ports, limit both)...
        assert!((h.throughput_bytes_per_s - n.throughput_bytes_per_s).abs() / h.throughput_bytes_per_s < 1e-3, "{ssds}: {} vs {}", h.throughput_bytes_per_s, n.throughput_bytes_per_s);
        // ...but host memory carries every byte twice on the host path, only headers with nicmem.
        assert!((h.host_memory_bytes_per_s - 2.0 * h.throughput_bytes_per_s).abs() / h.host_memory_bytes_per_s < 1e-9);
        let header_share = 2.0 * 256.0 / 1048576.0;
        assert!(n.host_memory_bytes_per_s <= n.throughput_bytes_per_s * header_share * 1.01, "{ssds}: {}", n.host_memory_bytes_per_s);
        // The NIC's link carries payload up from the root complex only on the host path: with
        // nicmem the payload comes down it from the SSDs (P2P through the root complex).
        let down = |r: &peerpath_sim::SimReport| r.utilisation.iter().find(|u| u.key == ResKey::Link(nic, Dir::Down)).map_or(0.0, |u| u.used);
        assert!(down(&n) >= n.throughput_bytes_per_s && down(&h) >= h.throughput_bytes_per_s);
    }
    assert!(simulate(&m, &Job::parse("send-nicmem").unwrap(), &exact()).unwrap().notes.iter().any(|n| n.contains("assumed to be a P2P target")));
}

/// Reads into (and writes from) a CSP's memory take the verdicts real runs get: SSDs of the
/// other socket are left out, said why; a device without P2P memory is no place to read into.
#[test]
fn memory_jobs_follow_the_verdicts_and_name_a_csp() {
    let m = epyc();
    for job in ["read-cmb:csp0", "write-cmb:csp0"] {
        let plan = Job::parse(job).unwrap().plan(&m).unwrap();
        let socket = |name: &str| m.nodes[m.find(name).unwrap()].socket;
        assert_eq!(plan.flows.len(), 9, "{job}: the nine SSDs of csp0's socket");
        assert!(plan.flows.iter().all(|f| f.name.split(" -> ").all(|n| socket(n) == socket("csp0"))), "{job}: {:?}", plan.flows.iter().map(|f| &f.name).collect::<Vec<_>>());
        assert!(plan.notes.iter().any(|n| n.contains("ssd9") && n.contains("left out") && n.contains("different sockets")), "{job}: {:?}", plan.notes);
    }
    for not_a_csp in ["read-cmb:ssd0", "write-cmb:0000:00:00.0"] {
        let e = Job::parse(not_a_csp).unwrap().plan(&m).unwrap_err().to_string();
        assert!(e.contains("is not a CSP") && e.contains("csp0"), "{not_a_csp}: {e}");
    }
}

/// A CPU the catalog has no platform for is simulated with the development VM's figures, and
/// the report says so (with the names to give --platform); a matched one says nothing of it.
#[test]
fn an_unmatched_cpu_is_said() {
    let mut t = Topology::from_toml_str(EPYC_CASE_STUDY).unwrap();
    let said = |m: &Machine| m.unknowns.iter().any(|u| u.contains("matches no platform") && u.contains("--platform") && u.contains("measured-here"));
    assert!(!said(&Machine::new(t.clone(), &Catalog::default_catalog(), None).unwrap()));
    t.cpu.family = Some(0x6);
    t.cpu.vendor = peerpath_topo::CpuVendor::Intel;
    let m = Machine::new(t, &Catalog::default_catalog(), None).unwrap();
    assert!(said(&m), "{:?}", m.unknowns);
    assert_eq!(m.platform.name, "measured-here");
}

/// A catalog's figures are usable or refused, naming the figure: zero (a flow through it gets
/// nothing), a socket or core count that is no whole number of one or more, another schema.
#[test]
fn unusable_catalog_figures_are_refused_by_name() {
    let text = peerpath_sim::catalog::DEFAULT_CATALOG;
    assert!(Catalog::from_toml_str(text).is_ok());
    let cases = [
        ("schema = 1", "schema = 2", "schema 2"),
        ("sockets = { value = 2,", "sockets = { value = 0,", "sockets: 0 is not a usable value"),
        ("cores_per_socket = { value = 32,", "cores_per_socket = { value = 0.5,", "cores_per_socket: 0.5"),
        ("cores_per_socket = { value = 32,", "cores_per_socket = { value = 0,", "0 is not a usable value"),
    ];
    for (from, to, said) in cases {
        assert!(text.contains(from), "{from}");
        let e = Catalog::from_toml_str(&text.replacen(from, to, 1)).unwrap_err().to_string();
        assert!(e.contains(said), "{to}: {e}");
    }
}

/// A link a job crosses whose rate cannot be told (speed "Unknown") is no limit, and the report
/// says so by name; a machine whose links are all known says nothing of links.
#[test]
fn a_link_of_unknown_rate_is_said() {
    let said = |m: &Machine| m.unknowns.iter().filter(|u| u.starts_with("PCIe link of")).cloned().collect::<Vec<_>>();
    assert_eq!(said(&epyc()), Vec::<String>::new());
    let at = EPYC_CASE_STUDY.find("label = \"csp0\"").unwrap();
    let speed = at + EPYC_CASE_STUDY[at..].find("current_speed = \"8.0 GT/s\"").unwrap();
    let text = format!("{}current_speed = \"Unknown\"{}", &EPYC_CASE_STUDY[..speed], &EPYC_CASE_STUDY[speed + "current_speed = \"8.0 GT/s\"".len()..]);
    let m = Machine::new(Topology::from_toml_str(&text).unwrap(), &Catalog::default_catalog(), None).unwrap();
    let links = said(&m);
    assert!(links.len() == 1 && links[0].contains("csp0") && links[0].contains("unlimited"), "{links:?}");
}

/// Gen6 links run in flit mode: a TLP has no framing token, LCRC or DLLPs of its own (the
/// flit's CRC, and its DLP bytes, carry them), and the link's 242/256 already leaves the CRC
/// and FEC out. The model charged a Gen6 TLP the 8 framing bytes and 2 DLLPs of a Gen3 one on
/// top. A read (SSDs writing into memory) on the EPYC at Gen6: each payload byte costs its
/// share of a 256 B write with a 4-dword header, 272 B, plus the DLP beside it (242/236).
/// Gen7 (128 GT/s, flits as Gen6's), which the links know, could not be swept ("gen: 1 to 6").
#[test]
fn gen6_and_gen7_links_charge_the_flit_not_gen3_framing_on_top() {
    let topo = Topology::from_toml_str(EPYC_CASE_STUDY).unwrap();
    for (gen, gts) in [(6u8, 64e9), (7, 128e9)] {
        let vary = peerpath_sim::sweep::Vary::parse(&format!("gen={gen}")).unwrap();
        let (m, job) = peerpath_sim::sweep::apply(&topo, &Catalog::default_catalog(), Some("amd-epyc-7501-2s"), &Job::new(JobKind::Read { into: Memory::Host }), vary.param, vary.values[0]).unwrap();
        assert_eq!((m.tlp.max_payload_bytes, m.tlp.addr64), (256.0, true));
        let plan = job.plan(&m).unwrap();
        let want = 272.0 / 256.0 * 242.0 / 236.0;
        let mut links = 0;
        for f in &plan.flows {
            for (k, a) in &f.loads {
                // Root ports carry no link of their own (their child's is counted once).
                if let (ResKey::Link(n, dir), Some(r)) = (k, m.resource(*k)) {
                    assert_eq!(m.nodes[*n].link.unwrap().current_speed.generation(), Some(gen));
                    // Toward the root complex only: no DLLP load the other way.
                    assert_eq!(*dir, Dir::Up, "{}: {a}", r.name);
                    assert!((a - want).abs() < 1e-12, "{}: {a}, want {want}", r.name);
                    // A Gen6 x4 SSD link moves 32 GB/s x 236/256 x 256/272 of payload.
                    let lanes = f64::from(m.nodes[*n].link.unwrap().current_width.unwrap());
                    assert!((r.capacity / a - lanes * gts / 8.0 * 236.0 / 256.0 * 256.0 / 272.0).abs() < 1.0, "{}", r.name);
                    links += 1;
                }
            }
        }
        assert!(links > 0);
    }
}
