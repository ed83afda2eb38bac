//! `peerpath demo`: the main job on the embedded default. The bundled
//! protein sample is compressed on every core, verified, decompressed and
//! compared byte for byte with the original.

use peerpath_func::{Format, Level};
use peerpath_runtime::{CommonOptions, CompressOptions, DecompressOptions, JobError, DEFAULT_BLOCK_BYTES};
use std::path::PathBuf;

/// 4 MB of real UniProt protein FASTA (Debian metastudent-data, GPL-2+);
/// see data/sample/README.md for its origin and license.
const SAMPLE: &[u8] = include_bytes!("../../../data/sample/protein.fasta");

fn io_err(path: &std::path::Path, e: std::io::Error) -> JobError {
    JobError::TargetIo { path: path.to_path_buf(), source: e }
}

pub fn run(workdir: Option<PathBuf>, json: bool, threads: Option<usize>) -> Result<(), JobError> {
    let tmp;
    let dir = match workdir {
        Some(d) => {
            std::fs::create_dir_all(&d).map_err(|e| io_err(&d, e))?;
            d
        }
        None => {
            // Removed at the end, and by the signal thread if the demo is stopped.
            tmp = peerpath_io::ScratchDir::beside(&std::env::temp_dir().join("peerpath-demo")).map_err(|e| io_err(&std::env::temp_dir(), e))?;
            tmp.path().to_path_buf()
        }
    };
    let source = dir.join("protein.fasta");
    let packed = dir.join("protein.fasta.gz");
    let restored = dir.join("protein.restored.fasta");
    std::fs::write(&source, SAMPLE).map_err(|e| io_err(&source, e))?;
    let mut common = CommonOptions { force: true, ..CommonOptions::default() };
    if let Some(t) = threads {
        common.threads = t.max(1);
    }
    let say = |title: &str, r: &peerpath_runtime::JobReport| {
        if json {
            println!("{}", crate::jsonout::stamped("job-report", r));
        } else {
            println!("== {title} ==\n{}", r.render());
        }
    };
    if !json {
        println!(
            "peerpath demo: the embedded default on this machine: bundled protein sample ({} bytes), host CPU engine and an emulated CSP device, \
             real files in {}\n",
            SAMPLE.len(),
            dir.display()
        );
    }
    let copts = CompressOptions { common: common.clone(), level: Level::new(1).expect("valid"), format: Format::Gzip, block_size: DEFAULT_BLOCK_BYTES, compute: peerpath_runtime::Compute::Cpu, no_fallback: false, verify: false, encrypt: None };
    let r = peerpath_runtime::compress(&[(source.clone(), packed.clone())], &copts)?;
    say("compress (host CPU, the reference)", &r);
    // The offload path on the embedded default: an emulated CSP process
    // owns device memory; the sample goes SSD -> device memory -> device
    // -> SSD by O_DIRECT, and must come out as the very same bytes.
    let offloaded = dir.join("protein.fasta.offload.gz");
    let eopts = CompressOptions { compute: peerpath_runtime::Compute::Emulated(Box::new(peerpath_runtime::EmulatedSpec::new())), ..copts.clone() };
    let r = peerpath_runtime::compress(&[(source.clone(), offloaded.clone())], &eopts)?;
    say("compress (emulated CSP device, the offload path)", &r);
    let (a, b) = (std::fs::read(&packed).map_err(|e| io_err(&packed, e))?, std::fs::read(&offloaded).map_err(|e| io_err(&offloaded, e))?);
    if a != b {
        let at = a.iter().zip(&b).position(|(x, y)| x != y).unwrap_or(a.len().min(b.len()));
        return Err(JobError::Internal(format!("the emulated device's output ({} bytes) differs from the CPU's ({} bytes) from byte {at}", b.len(), a.len())));
    }
    if !json {
        println!("offload OK: the device's output is byte-identical to the CPU's ({} bytes); payload through host memory: {} bytes\n", b.len(), r.ledger.host_memory_payload_bytes);
    }
    let dopts = DecompressOptions { common, ..Default::default() };
    let r = peerpath_runtime::verify(std::slice::from_ref(&packed), &dopts)?;
    say("verify", &r);
    let r = peerpath_runtime::decompress(&[(packed.clone(), restored.clone())], &dopts)?;
    say("decompress", &r);
    let back = std::fs::read(&restored).map_err(|e| io_err(&restored, e))?;
    if back != SAMPLE {
        return Err(JobError::Internal("the restored sample differs from the original".into()));
    }
    if !json {
        println!("round trip OK: {} bytes restored byte for byte", back.len());
    }
    Ok(())
}
