//! `peerpath plan`: which compute device serves which sources and targets, and how each leg
//! moves its bytes (peer-to-peer, a host bounce buffer, a GPU's pinned host memory, or the CPU
//! path), from the topology of this machine or of a topology file. The planner is
//! `peerpath_topo::plan`; this module turns flags into a `PlanRequest` and prints the plan.
//! Topology errors (malformed sysfs or topology file, unknown device name) exit with code 13, as
//! `peerpath topo` does.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use peerpath_topo::{DeviceSelection, PlanRequest, TopoError, Topology};

#[derive(Args, Debug)]
pub struct PlanArgs {
    /// Read this sysfs root (a real /sys or a fixture tree).
    #[arg(value_hint = clap::ValueHint::DirPath, long, default_value = "/sys", conflicts_with = "file")]
    sysfs: PathBuf,
    /// Read a topology file (TOML) instead of sysfs.
    #[arg(long)]
    file: Option<PathBuf>,
    /// Storage read from: PCI address, label, controller (nvme3) or block device (nvme3n1, md0).
    #[arg(long = "source", value_name = "DEV", required = true, num_args = 1.., value_delimiter = ',')]
    sources: Vec<String>,
    /// Devices written to (same names as --source); sources are paired with the nearest target.
    #[arg(long = "target", value_name = "DEV", required = true, num_args = 1.., value_delimiter = ',')]
    targets: Vec<String>,
    /// Compute devices: `auto` (every CSP with published P2P memory; GPUs are listed with their
    /// BAR1, link and memory-path verdict, and placed only where storage reaches their memory
    /// peer-to-peer), a list (`csp0,csp1`; a GPU as `gpu0` or by PCI address: named, it takes
    /// streams, staged through pinned host memory unless P2P works), or `cpu` (the host only).
    /// The host CPU is always available. Each device once: one named twice is refused.
    #[arg(long, default_value = "auto", value_name = "csp0,gpu0|auto", value_parser = DeviceSelection::parse)]
    devices: DeviceSelection,
    /// Print the plan as JSON (every decision and its reasons included).
    #[arg(long)]
    json: bool,
    /// After the tables, every decision with its reasons: why this device, why not the others.
    #[arg(long)]
    explain: bool,
}

/// The topology `a` names, or the error and its exit code: 3 where the `--file` cannot be read,
/// else 13 (a `--sysfs` root's named as the option).
fn topology(a: &PlanArgs) -> Result<Topology, (u8, String)> {
    match &a.file {
        Some(f) => Topology::from_toml_file(f).map_err(|e| (if matches!(e, TopoError::FileUnreadable { .. }) { 3 } else { 13 }, e.to_string())),
        None => Topology::from_sysfs(&a.sysfs).map_err(|e| (13, crate::sysfs_error(&a.sysfs, e))),
    }
}

/// What `peerpath plan` prints for `a` on `topo`.
fn render(a: &PlanArgs, topo: &Topology) -> Result<String, TopoError> {
    let request = PlanRequest::new(a.sources.iter().cloned(), a.targets.iter().cloned())
        .with_devices(a.devices.clone());
    let plan = peerpath_topo::plan(topo, &request)?;
    if a.json {
        let mut s = crate::jsonout::stamped_text("plan", &plan.to_json_string()?);
        s.push('\n');
        return Ok(s);
    }
    let mut out = plan.render_table();
    if a.explain {
        out.push('\n');
        out.push_str(&plan.explain());
    }
    Ok(out)
}

/// Runs `peerpath plan`: the plan on stdout, or the error on stderr and exit code 13
/// (3 where the `--file` it names cannot be read).
pub fn main(a: PlanArgs) -> ExitCode {
    match topology(&a).and_then(|topo| render(&a, &topo).map_err(|e| (13, e.to_string()))) {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err((code, msg)) => {
            eprintln!("peerpath: error: {msg}");
            ExitCode::from(code)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct T {
        #[command(flatten)]
        a: PlanArgs,
    }

    fn args(fixture: &str, rest: &[&str]) -> PlanArgs {
        let root = peerpath_topo::fixture::committed_fixtures_dir().join(fixture).join("sys");
        let mut v = vec!["plan".to_string(), "--sysfs".into(), root.display().to_string()];
        v.extend(rest.iter().map(|s| s.to_string()));
        T::try_parse_from(v).expect("arguments parse").a
    }

    #[test]
    fn case_study_table_groups_each_csp_with_three_ssds() {
        let a = args(
            "epyc-case-study",
            &["--source", "ssd0", "ssd1", "ssd2", "ssd3", "ssd4", "ssd5", "--target", "ssd6,ssd7,ssd8"],
        );
        let out = render(&a, &topology(&a).unwrap()).unwrap();
        assert!(out.contains("6 streams: 6 on 3 devices"), "{out}");
        let row = out.lines().find(|l| l.starts_with("csp0 ")).unwrap();
        assert!(row.contains("ssd0, ssd3") && row.contains("ssd6"), "{row}");
        assert!(!out.contains("Placement plan"), "no explanation without --explain");
    }

    #[test]
    fn explain_and_json() {
        let a = args("intel-switch-acs", &["--source", "ssd2", "--target", "ssd1", "--explain"]);
        let out = render(&a, &topology(&a).unwrap()).unwrap();
        assert!(out.contains("bounce node 0 (acs)"), "{out}");
        assert!(out.contains("pci=disable_acs_redir=0000:02:03.0"), "{out}");
        let a = args("intel-switch-acs", &["--source", "ssd2", "--target", "ssd1", "--json"]);
        let v: serde_json::Value = serde_json::from_str(&render(&a, &topology(&a).unwrap()).unwrap()).unwrap();
        assert_eq!(v["streams"][0]["read"]["path"], "bounce");
        assert_eq!(v["streams"][0]["read"]["why"]["code"], "acs");
    }

    #[test]
    fn devices_flag_and_file() {
        let toml = peerpath_topo::fixture::committed_fixtures_dir().join("iommu-multipath/topology.toml");
        let v = ["plan", "--file", toml.to_str().unwrap(), "--source", "md0", "--target", "ssd1", "--devices", "cpu"];
        let a = T::try_parse_from(v).unwrap().a;
        let out = render(&a, &topology(&a).unwrap()).unwrap();
        assert!(out.contains("cpu (node 0)"), "{out}");
    }

    #[test]
    fn unknown_names_are_topology_errors() {
        let a = args("fpga-cascade", &["--source", "ssd99", "--target", "ssd1"]);
        assert!(matches!(render(&a, &topology(&a).unwrap()), Err(TopoError::UnknownDevice { .. })));
        let a = args("fpga-cascade", &["--source", "ssd0", "--target", "ssd1", "--devices", "nope"]);
        assert!(matches!(render(&a, &topology(&a).unwrap()), Err(TopoError::UnknownDevice { .. })));
        assert!(T::try_parse_from(["plan", "--source", "ssd0"]).is_err(), "--target is required");
    }
}
