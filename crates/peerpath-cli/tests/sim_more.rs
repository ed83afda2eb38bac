//! `peerpath sim` as a demanding user drives it: what `--threads` counts on a two-socket
//! machine, knobs a job has no use for, sweeps past what fits, and the plot's x axis.

use std::path::PathBuf;
use std::process::{Command, Output};

fn epyc() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../peerpath-topo/fixtures/epyc-case-study/topology.toml").display().to_string()
}

fn sim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_peerpath")).arg("sim").args(args).output().unwrap()
}

fn json(args: &[&str]) -> serde_json::Value {
    let out = sim(args);
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn num(v: &serde_json::Value, k: &str) -> f64 {
    v[k].as_f64().unwrap_or_else(|| panic!("{k}: {v}"))
}

/// `--threads T` is "at most T cores compute"; on the EPYC's two sockets each socket had T of
/// its own, so `--threads 3` computed on 6 cores and the throughput was twice 3 cores' worth.
#[test]
fn threads_count_the_cores_of_every_socket_together() {
    let f = epyc();
    let all = json(&["--file", &f, "--job", "compress-cpu", "--json"]);
    // Every core busy: the per-core rate is the throughput over the cores.
    let per_core = num(&all, "throughput_bytes_per_s") / num(&all, "host_cpu_cores_used");
    for t in [1usize, 3, 32, 40] {
        let v = json(&["--file", &f, "--job", "compress-cpu", "--threads", &t.to_string(), "--json"]);
        let used = num(&v, "host_cpu_cores_used");
        assert!((used - t as f64).abs() < 1e-6, "--threads {t}: {used} cores computed");
        let want = per_core * t as f64;
        assert!((num(&v, "throughput_bytes_per_s") - want).abs() / want < 1e-9, "--threads {t}: {v}");
        assert!(v["bottleneck"].as_str().unwrap().contains(&format!("--threads {t}")), "{}", v["bottleneck"]);
        // One thread is not "1 compute thread(s)".
        let threads = if t == 1 { "1 compute thread".to_string() } else { format!("{t} compute threads") };
        assert!(v["job"].as_str().unwrap().contains(&format!("on the host CPU with {threads} (")), "{}", v["job"]);
    }
}

/// A knob the job does not use was taken and ignored (`read --ratio 3` printed the plain
/// read), or capped what it does not name (`compress-p2p --threads 1` throttled the P2P
/// orchestration to two cores, 164 -> 105 Gb/s): usage errors, as plan's --vary is.
#[test]
fn a_knob_the_job_has_no_use_for_is_refused() {
    let f = epyc();
    for (args, needle) in [
        (&["--job", "read", "--ratio", "3"][..], "compresses nothing"),
        (&["--job", "write-cmb", "--ratio", "2"][..], "compresses nothing"),
        (&["--job", "read", "--function", "compress-zlib-1"][..], "runs none"),
        (&["--job", "compress-p2p", "--threads", "1"][..], "--threads is for compress-cpu"),
        (&["--job", "read", "--threads", "4"][..], "--threads is for compress-cpu"),
    ] {
        let mut a = vec!["--file", f.as_str()];
        a.extend_from_slice(args);
        let out = sim(&a);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
        // The plan takes the same job.
        let mut p = vec!["plan", "--target", "10", "--add", "ssd", "--file", f.as_str()];
        p.extend_from_slice(args);
        assert_eq!(sim(&p).status.code(), Some(2), "plan {args:?}");
    }
    // The knobs of the jobs that use them still run.
    json(&["--file", &f, "--job", "compress-cpu", "--threads", "8", "--ratio", "2", "--function", "compress-zlib-1", "--json"]);
    json(&["--file", &f, "--job", "compress-p2p", "--ratio", "2", "--json"]);
}

/// A count of CSPs whose clones no longer fit the PCI domain's bus numbers failed the whole
/// sweep (exit 2, no table). The values that fit run, the others are listed as skipped. The
/// clones took only the buses past the highest in use, so on the EPYC (buses up to e3) 35 CSPs
/// did not fit with 224 buses free; now every free bus is taken, and the limit is said.
#[test]
fn a_sweep_past_what_fits_keeps_the_values_that_do() {
    let f = epyc();
    let v = json(&["--file", &f, "--vary", "csp=34..36", "--json"]);
    assert!(v.get("skipped").is_none(), "{v}");
    let points = v["points"].as_array().unwrap();
    assert!(points.windows(2).all(|w| num(&w[1], "throughput_gbit_per_s") > num(&w[0], "throughput_gbit_per_s")), "{v}");
    // The EPYC uses 32 of domain 0000's 256 buses: 224 clones fit beside its 6 CSPs.
    let v = json(&["--file", &f, "--vary", "csp=230..231", "--json"]);
    assert_eq!(v["points"][0]["value"], 230, "{v}");
    let why = v["skipped"][0]["why"].as_str().unwrap();
    assert!(why.starts_with("231 csps do not fit: ") && why.contains("no free bus number") && why.contains("at most 230 csps fit"), "{why}");
    // The plan tries every count up to the same edge (the planner ran once per count, each
    // time weighing every CSP for every stream in words: 18 s in a debug build), and its best
    // is what a single run of that count gives.
    let p = json(&["plan", "--file", &f, "--target", "100000", "--limit", "256", "--json"]);
    assert!(p["count"].is_null(), "{p}");
    let why = p["why"].as_str().unwrap();
    assert!(why.starts_with("up to 230 csps (--limit 256; 231 do not fit: ") && why.contains("at most 230 csps fit"), "{why}");
    let first = why.split_once(", first at ").unwrap().1.split(',').next().unwrap();
    let one = json(&["--file", &f, "--vary", &format!("csp={first}"), "--json"]);
    assert_eq!(one["points"][0]["throughput_gbit_per_s"], p["throughput_gbit_per_s"], "{why}");
    // Dozens of CSPs on the 18 SSDs: the SSDs are shared, and the plan says so.
    assert!(p["groups"].as_array().unwrap().last().unwrap().as_str().unwrap().contains("SSDs shared by several CSPs"), "{p}");
    // Nothing fits: the error, with the limit.
    let out = sim(&["--file", &f, "--vary", "csp=250,251"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no free bus number") && err.contains("at most 230 csps fit"), "{err}");
}

/// `csp=1,2,6` drew its three points evenly spaced (6 where 3 belongs), and `csp=6,1,3` drew
/// the line back and forth with the axis labelled 6, 1, 3. The values are taken once each, in
/// increasing order, and placed at their value; a list has the range's bound on its length.
#[test]
fn a_sweep_runs_its_values_in_order_and_plots_them_at_their_value() {
    let f = epyc();
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("s.svg");
    let out = sim(&["--file", &f, "--vary", "csp=6,1,3,1", "--json", "--svg", svg.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let values: Vec<u64> = v["points"].as_array().unwrap().iter().map(|p| p["value"].as_u64().unwrap()).collect();
    assert_eq!(values, [1, 3, 6]);
    let plot = std::fs::read_to_string(&svg).unwrap();
    // The throughput points' x coordinates (the circles), in order.
    let xs: Vec<f64> = plot.lines().filter(|l| l.starts_with("<circle")).map(|l| l.split("cx=\"").nth(1).unwrap().split('"').next().unwrap().parse().unwrap()).collect();
    assert_eq!(xs.len(), 3, "{plot}");
    // 3 lies 2/5 of the way from 1 to 6.
    let share = (xs[1] - xs[0]) / (xs[2] - xs[0]);
    assert!((share - 0.4).abs() < 0.01, "{xs:?}");
    let long = (1..=300).map(|i| i.to_string()).collect::<Vec<_>>().join(",");
    let out = sim(&["--file", &f, "--vary", &format!("mps={long}")]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("at most 257 values"), "{}", String::from_utf8_lossy(&out.stderr));
}

/// A misspelt catalog field was dropped without a word: `cmb_efficency = 0.32` left the CMB at
/// the default efficiency 1.0, and `vaule = 3.2e9` left a figure unknown (unlimited). Unknown
/// fields are refused naming the file and the field, as the topology file's are.
#[test]
fn a_misspelt_catalog_field_is_refused_by_name() {
    let machine = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../peerpath-sim/machines/seed004-sr635.toml");
    let shipped = std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../sim/catalog.toml")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    for (from, to, field) in [
        ("\ncmb_efficiency = { value = 1.0,", "\ncmb_efficency = { value = 0.32,", "cmb_efficency"),
        ("seq_read_bytes_per_s = { value = 6.5e9,", "seq_read_bytes_per_s = { vaule = 6.5e9, note = \"typo\",", "vaule"),
    ] {
        assert!(shipped.contains(from), "{from}");
        let cat = dir.path().join(format!("{field}.toml"));
        std::fs::write(&cat, shipped.replacen(from, to, 1)).unwrap();
        let out = sim(&["--file", machine.to_str().unwrap(), "--job", "read-cmb", "--catalog", cat.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{field}: {err}");
        assert!(err.contains(&format!("unknown field `{field}`")) && err.contains(cat.to_str().unwrap()), "{err}");
    }
}

/// A count the job does not use gave the same row at every value: `read-cmb` reads into one
/// CSP's memory whatever the count (plan tried 34 CSPs and called 100 Gb/s unreachable), and a
/// sweep of CSPs for `read` printed a flat table. `--csps 1` with `--vary csp` or
/// `plan --add csp` was overridden without a word. Both refused, in the sweep as in the plan.
#[test]
fn a_count_the_job_does_not_use_or_that_is_given_twice_is_refused() {
    let f = epyc();
    for args in [
        &["--job", "read-cmb", "--vary", "csp=1..3"][..],
        &["--job", "read", "--vary", "csp=1..3"][..],
        &["--csps", "1", "--vary", "csp=1..3"][..],
        &["--ssds", "4", "--vary", "ssd=5..6"][..],
        &["plan", "--target", "100", "--job", "read-cmb"][..],
        &["plan", "--target", "100", "--csps", "1"][..],
        &["plan", "--target", "100", "--add", "ssd", "--ssds", "3"][..],
    ] {
        let mut a = args.to_vec();
        a.extend_from_slice(&["--file", f.as_str()]);
        let out = sim(&a);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}{}", String::from_utf8_lossy(&out.stdout));
        assert!(err.contains("cannot change it") || err.contains("give one"), "{args:?}: {err}");
    }
    // What the counts do change still runs.
    json(&["--file", &f, "--job", "read-cmb", "--vary", "ssd=1..3", "--json"]);
    json(&["--file", &f, "--csps", "2", "--vary", "ssd=3..6", "--json"]);
}

/// `--csps 10` on the EPYC's 6 CSPs ran the 6 ("at most") while `--vary csp=10` cloned 4 more:
/// the single run and the sweep of the same point disagreed, and the run did not say it used
/// fewer than asked. It says so now, in the text and the JSON report, and the sweep's point is
/// what the note points to.
#[test]
fn a_count_above_what_the_machine_has_is_said() {
    let f = epyc();
    let ten = json(&["--file", &f, "--csps", "10", "--ssds", "20", "--json"]);
    let notes: Vec<&str> = ten["notes"].as_array().unwrap().iter().map(|n| n.as_str().unwrap()).collect();
    for want in ["6 of the 10 CSPs asked for exist on this machine; --vary csp=10 clones more", "18 of the 20 SSDs asked for exist on this machine; --vary ssd=20 clones more"] {
        assert!(notes.contains(&want), "{notes:?}");
    }
    let out = sim(&["--file", &f, "--csps", "10"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("note: 6 of the 10 CSPs asked for exist on this machine"), "{}", String::from_utf8_lossy(&out.stdout));
    // The single run is the machine's 6; the sweep's 10 clones more and differs.
    let six = json(&["--file", &f, "--csps", "6", "--json"]);
    assert_eq!(num(&ten, "throughput_bytes_per_s"), num(&six, "throughput_bytes_per_s"));
    assert!(!six["notes"].to_string().contains("asked for"), "{}", six["notes"]);
    let sw = json(&["--file", &f, "--vary", "csp=10", "--json"]);
    assert_ne!(num(&sw["points"][0], "throughput_gbit_per_s"), num(&ten, "throughput_gbit_per_s"), "{sw}");
}

/// `compress-memory` computes on socket 0 only: `--threads 48` on the EPYC's 2 x 32 cores
/// printed "with 48 compute thread(s)" and computed on 32. Refused, naming the most it takes;
/// one socket's worth still runs, on that many cores.
#[test]
fn compress_memory_threads_beyond_one_socket_are_refused() {
    let f = epyc();
    let out = sim(&["--file", &f, "--job", "compress-memory", "--function", "compress-zlib-1", "--threads", "48"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}{}", String::from_utf8_lossy(&out.stdout));
    assert!(err.contains("--threads 48") && err.contains("at most 32"), "{err}");
    let v = json(&["--file", &f, "--job", "compress-memory", "--function", "compress-zlib-1", "--threads", "32", "--json"]);
    assert!((num(&v, "host_cpu_cores_used") - 32.0).abs() < 1e-6, "{v}");
}

/// `read --csps 4` ran the same read as without it, and `compress-memory --ssds 2` the same
/// compression: counts the job has no use for, taken and ignored. Refused, naming the option;
/// the jobs that count them still take them.
#[test]
fn a_count_the_job_has_no_use_for_is_refused() {
    let f = epyc();
    for (args, option) in [
        (&["--job", "read", "--csps", "4"][..], "--csps 4"),
        (&["--job", "write", "--csps", "1"][..], "--csps 1"),
        (&["--job", "read-cmb", "--csps", "2"][..], "--csps 2"),
        (&["--job", "compress-cpu", "--csps", "2"][..], "--csps 2"),
        (&["--job", "send", "--csps", "2"][..], "--csps 2"),
        (&["--job", "compress-memory", "--function", "compress-zlib-1", "--csps", "2"][..], "--csps 2"),
        (&["--job", "compress-memory", "--function", "compress-zlib-1", "--ssds", "2"][..], "--ssds 2"),
    ] {
        let mut a = vec!["--file", f.as_str()];
        a.extend_from_slice(args);
        let out = sim(&a);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(option) && err.lines().count() == 1, "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    for args in [
        &["--job", "read", "--ssds", "2"][..],
        &["--job", "compress-cpu", "--ssds", "2"][..],
        &["--job", "write", "--ssds", "2"][..],
        &["--job", "read-cmb", "--ssds", "2"][..],
        &["--job", "compress-p2p", "--csps", "2", "--ssds", "6"][..],
    ] {
        let mut a = vec!["--file", f.as_str(), "--json"];
        a.extend_from_slice(args);
        json(&a);
    }
}

/// A `--sysfs` that is no sysfs root is said as topo, plan and probe say it, naming the option
/// and what was expected (it read "/nonexist is not a sysfs root: ..."), exit 13; `sim plan` too.
#[test]
fn a_sysfs_root_that_is_none_names_the_option() {
    let empty = tempfile::tempdir().unwrap();
    let e = empty.path().display().to_string();
    let none = format!("--sysfs {e} is not a sysfs root: ");
    for (args, words) in [
        (&["--sysfs", "/nonexist"][..], &["--sysfs /nonexist", "give a sysfs root"][..]),
        (&["plan", "--target", "10", "--sysfs", "/nonexist"], &["--sysfs /nonexist", "give a sysfs root"]),
        (&["--sysfs", &e], &[&none, "give a sysfs root"]),
    ] {
        let out = sim(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(13), "{args:?}: {err}");
        assert!(words.iter().all(|w| err.contains(w)) && err.lines().count() == 1, "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

/// With more CSPs than the SSDs make groups of three, the plan puts several CSPs' streams on
/// one SSD (on the EPYC at 250 Gb/s, csp6 reads ssd2, csp0's target), and said nothing: each
/// group read as if its SSDs were its own. Every SSD that two or more CSPs use now gets a line
/// naming them by role, and a line says the simulated rate includes the sharing.
#[test]
fn a_plan_says_which_ssds_several_csps_share() {
    let f = epyc();
    let v = json(&["plan", "--file", &f, "--target", "250", "--json"]);
    let groups: Vec<&str> = v["groups"].as_array().unwrap().iter().map(|g| g.as_str().unwrap()).collect();
    // Who reads and who writes each SSD, from the CSP groups themselves.
    let mut users = std::collections::BTreeMap::<String, (Vec<String>, Vec<String>)>::new();
    for g in groups.iter().filter(|g| g.starts_with("csp")) {
        let (csp, rest) = g.split_once(": sources ").unwrap();
        let (srcs, rest) = rest.split_once(" -> target ").unwrap();
        let tgt = rest.split_once(" (").unwrap().0;
        for s in srcs.split(", ") {
            users.entry(s.to_string()).or_default().0.push(csp.to_string());
        }
        users.entry(tgt.to_string()).or_default().1.push(csp.to_string());
    }
    let shared: Vec<_> = users.iter().filter(|(_, (r, w))| r.len() + w.len() > 1).collect();
    assert!(!shared.is_empty(), "10 CSPs on 18 SSDs share some: {groups:#?}");
    for (ssd, (r, w)) in &shared {
        let mut want = Vec::new();
        if !r.is_empty() {
            want.push(format!("source of {}", r.join(", ")));
        }
        if !w.is_empty() {
            want.push(format!("target of {}", w.join(", ")));
        }
        let line = format!("{ssd} shared: {}", want.join("; "));
        assert!(groups.contains(&line.as_str()), "no {line:?} in {groups:#?}");
    }
    let said = groups.iter().filter(|g| g.contains(" shared: ")).count();
    assert_eq!(said, shared.len(), "only shared SSDs get a line: {groups:#?}");
    let last = groups.last().unwrap();
    let ssds = if shared.len() == 1 { "1 SSD".to_string() } else { format!("{} SSDs", shared.len()) };
    assert!(last.starts_with(&format!("{ssds} shared by several CSPs")) && last.contains("simulated rate includes that sharing"), "{last}");
    // Few enough CSPs that each has SSDs of its own: nothing to say.
    let v = json(&["plan", "--file", &f, "--target", "100", "--json"]);
    assert!(!v["groups"].to_string().contains("shared"), "{}", v["groups"]);
}
