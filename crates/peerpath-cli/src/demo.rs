//! `peerpath demo`: the main job on the embedded default. The bundled
//! protein sample is compressed on every core, verified, decompressed and
//! compared byte for byte with the original.

use peerpath_func::{Format, Level};
use peerpath_runtime::{CommonOptions, CompressOptions, DecompressOptions, JobError, DEFAULT_BLOCK_BYTES};
use std::io::Write;
use std::path::{Path, PathBuf};

/// 4 MB of real UniProt protein FASTA (Debian metastudent-data, GPL-2+);
/// see data/sample/README.md for its origin and license.
const SAMPLE: &[u8] = include_bytes!("../../../data/sample/protein.fasta");

fn io_err(path: &std::path::Path, e: std::io::Error) -> JobError {
    JobError::TargetIo { path: path.to_path_buf(), source: e }
}

/// The files the demo writes in its directory.
const FILES: [&str; 4] = ["protein.fasta", "protein.fasta.gz", "protein.fasta.offload.gz", "protein.restored.fasta"];

/// Runs the demo in `workdir` (or a temporary directory). A work directory's
/// files are replaced only with `force` (exit 4 otherwise, before anything
/// is written); a demo that fails removes the files it made there, and the
/// directory if it made it.
pub fn run(workdir: Option<PathBuf>, force: bool, json: bool, threads: Option<usize>) -> Result<(), JobError> {
    let Some(dir) = workdir else {
        // Removed at the end, and by the signal thread if the demo is stopped.
        let tmp = peerpath_io::ScratchDir::beside(&std::env::temp_dir().join("peerpath-demo")).map_err(|e| io_err(&std::env::temp_dir(), e))?;
        return run_in(tmp.path(), json, threads);
    };
    if std::fs::metadata(&dir).is_ok_and(|m| !m.is_dir()) {
        return Err(io_err(&dir, std::io::Error::new(std::io::ErrorKind::NotADirectory, "--workdir names a file, not a directory")));
    }
    let existing: Vec<&str> = FILES.iter().copied().filter(|f| std::fs::symlink_metadata(dir.join(f)).is_ok()).collect();
    if let (Some(f), false) = (existing.first(), force) {
        return Err(JobError::TargetExists { path: dir.join(f) });
    }
    let made_dir = std::fs::symlink_metadata(&dir).is_err();
    std::fs::create_dir_all(&dir).map_err(|e| io_err(&dir, e))?;
    let ran = run_in(&dir, json, threads);
    if ran.is_err() {
        FILES.iter().filter(|f| !existing.contains(f)).for_each(|f| drop(std::fs::remove_file(dir.join(f))));
        if made_dir {
            let _ = std::fs::remove_dir(&dir);
        }
    }
    ran
}

fn run_in(dir: &Path, json: bool, threads: Option<usize>) -> Result<(), JobError> {
    let source = dir.join(FILES[0]);
    let packed = dir.join(FILES[1]);
    let restored = dir.join(FILES[3]);
    // The sample appears whole or not at all, as every output does.
    let (mut t, temporary) = peerpath_io::create_temporary(&source, false).map_err(|e| io_err(&source, e))?;
    let written = t.file.write_all(SAMPLE).and_then(|()| peerpath_io::publish(&t.file, &temporary, &source, true));
    if let Err(e) = written {
        peerpath_io::discard(&temporary);
        return Err(io_err(&source, e));
    }
    let mut common = CommonOptions { force: true, ..CommonOptions::default() };
    if let Some(t) = threads {
        common.threads = t.max(1);
    }
    let say = |title: &str, r: &peerpath_runtime::JobReport| {
        if json {
            println!("{}", crate::jsonout::stamped_line("job-report", r));
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
    let offloaded = dir.join(FILES[2]);
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
