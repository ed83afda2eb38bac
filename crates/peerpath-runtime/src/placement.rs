//! Where the streams of a job whose device memory is P2P memory can go peer
//! to peer: each source and target file is resolved to the block device that
//! holds it, and the topology planner (`peerpath_topo::plan`, the kernel's
//! rules re-implemented on the model read from sysfs) says how each leg
//! between it and the provider would move its bytes. A leg the kernel would
//! refuse (EREMOTEIO) is known before any transfer: that stream runs on the
//! host CPU, and the report says why.

use crate::report::Quoted;
use peerpath_topo::plan::Leg;
use peerpath_topo::{DeviceSelection, PlanRequest, Topology};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

/// What the planner said of one stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Route {
    /// Both legs peer to peer: `what` says how (for the report).
    P2p { what: String },
    /// At least one leg would not be peer to peer: why, in words.
    Refused { why: String },
    /// Could not be checked (a device the topology does not know, no
    /// sysfs): the kernel decides at the first transfer.
    Unchecked { why: String },
}

/// The block device holding `path` as sysfs names it (`nvme1n1`; a
/// partition gives its disk): the device itself for a block device, the
/// device of its file system for a file.
fn block_device_of(path: &Path, sysfs: &Path) -> Result<String, String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("{}: {e}", Quoted(path)))?;
    let dev = if meta.file_type().is_block_device() { meta.rdev() } else { meta.dev() };
    // glibc's gnu_dev_major/minor, written out (dev_t is 64 bits on Linux).
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    let link = sysfs.join(format!("dev/block/{major}:{minor}"));
    let real = std::fs::canonicalize(&link)
        .map_err(|e| format!("{} is on device {major}:{minor}, which {} does not list ({e})", Quoted(path), Quoted(&link)))?;
    let disk = if real.join("partition").exists() { real.parent().map(Path::to_path_buf).unwrap_or(real) } else { real };
    disk.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or_else(|| format!("{}: no device name", Quoted(&disk)))
}

fn leg_words(what: &str, dev: &str, leg: &Leg) -> String {
    match leg {
        Leg::Bounce { why, .. } => {
            let remedy = why.remedy.as_deref().map(|r| format!(" (to get P2P: {r})")).unwrap_or_default();
            format!("{what} {dev}: not peer to peer: {}{remedy}", why.text)
        }
        other => format!("{what} {dev}: {}", other.short()),
    }
}

/// The route of each (source, target) pair to and from the P2P memory of
/// `provider` (a PCI address), read from the topology under `sysfs`.
/// Also returns the planner's explanation of every decision, when it ran.
pub(crate) fn routes(sysfs: &Path, provider: &str, pairs: &[(PathBuf, PathBuf)]) -> (Vec<Route>, Option<String>) {
    let mut explain = None;
    let mut out: Vec<Option<Route>> = vec![None; pairs.len()];
    let mut names = Vec::new();
    for (i, (s, t)) in pairs.iter().enumerate() {
        match (block_device_of(s, sysfs), block_device_of(t, sysfs)) {
            (Ok(a), Ok(b)) => names.push((i, a, b)),
            (Err(e), _) | (_, Err(e)) => out[i] = Some(Route::Unchecked { why: e }),
        }
    }
    if !names.is_empty() {
        let planned = Topology::from_sysfs(sysfs).map_err(|e| e.to_string()).and_then(|topo| {
            let request = PlanRequest::new(names.iter().map(|n| n.1.clone()), names.iter().map(|n| n.2.clone()))
                .with_devices(DeviceSelection::Named(vec![provider.to_string()]))
                .with_pairs((0..names.len()).map(|k| (k, k)).collect());
            peerpath_topo::plan(&topo, &request).map_err(|e| e.to_string())
        });
        match planned {
            Ok(plan) => {
                explain = Some(plan.explain());
                for (k, (i, src, dst)) in names.iter().enumerate() {
                    let Some(s) = plan.streams.iter().find(|s| s.source_index == k) else {
                        out[*i] = Some(Route::Unchecked { why: format!("the planner placed no stream for {src}") });
                        continue;
                    };
                    out[*i] = Some(if !s.executor.is_cpu() && s.read.is_p2p() && s.write.is_p2p() {
                        Route::P2p {
                            what: format!("{}, {} (with the memory of {provider})", leg_words("read", src, &s.read), leg_words("write", dst, &s.write)),
                        }
                    } else {
                        let mut why = Vec::new();
                        for (what, dev, leg) in [("read", src, &s.read), ("write", dst, &s.write)] {
                            if !leg.is_p2p() {
                                why.push(leg_words(what, dev, leg));
                            }
                        }
                        Route::Refused { why: format!("no peer-to-peer path with the memory of {provider}: {}", why.join("; ")) }
                    });
                }
            }
            Err(e) => {
                for (i, ..) in &names {
                    out[*i] = Some(Route::Unchecked { why: format!("topology of {}: {e}", Quoted(sysfs)) });
                }
            }
        }
    }
    (out.into_iter().map(|r| r.expect("every pair decided")).collect(), explain)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_on_a_device_sysfs_does_not_list_is_unchecked_with_the_reason() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("f");
        std::fs::write(&f, b"x").unwrap();
        let (r, explain) = routes(&dir.path().join("no-sysfs"), "0000:03:00.0", &[(f.clone(), f)]);
        assert!(explain.is_none());
        match &r[0] {
            Route::Unchecked { why } => assert!(why.contains("does not list"), "{why}"),
            other => panic!("{other:?}"),
        }
    }
}
