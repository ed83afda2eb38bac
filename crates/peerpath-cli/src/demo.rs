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
/// is written, or as soon as another demo in the same directory put one
/// there first); a demo that fails removes the files it made there (those
/// its names still hold: not another demo's), and the directory if it made
/// it and no other job writes there. So does a demo stopped by a signal (its
/// files are not outputs that stay: [`peerpath_io::remove_on_signal_once_in_place`]).
pub fn run(workdir: Option<PathBuf>, force: bool, json: bool, threads: Option<usize>) -> Result<(), JobError> {
    let Some(dir) = workdir else {
        // Removed at the end, and by the signal thread if the demo is stopped.
        let base = std::env::temp_dir();
        let tmp = peerpath_io::ScratchDir::beside(&base.join("peerpath-demo")).map_err(|e| io_err(&base, std::io::Error::new(e.kind(), format!("{e}; without --workdir the demo works in the temporary directory (TMPDIR, else /tmp): give --workdir DIR"))))?;
        let mine: Vec<PathBuf> = FILES.iter().map(|f| tmp.path().join(f)).collect();
        mine.iter().for_each(|p| peerpath_io::remove_on_signal_once_in_place(p.clone()));
        let ran = run_in(tmp.path(), true, json, threads, &mut Vec::new());
        mine.iter().for_each(|p| peerpath_io::keep_on_signal(p));
        return ran;
    };
    if std::fs::metadata(&dir).is_ok_and(|m| !m.is_dir()) {
        return Err(io_err(&dir, std::io::Error::new(std::io::ErrorKind::NotADirectory, "--workdir names a file, not a directory")));
    }
    let existing: Vec<&str> = FILES.iter().copied().filter(|f| std::fs::symlink_metadata(dir.join(f)).is_ok()).collect();
    if let (Some(f), false) = (existing.first(), force) {
        return Err(JobError::TargetExists { path: dir.join(f) });
    }
    // Held (a shared lock) while the demo writes there: a failing demo
    // that made the directory removes it only where no other job writes in it.
    let held = peerpath_io::OutputDir::make(&dir).map_err(|e| io_err(&dir, e))?;
    // Those it puts in place where nothing was: a signal removes them, as a failure does.
    let mine: Vec<PathBuf> = FILES.iter().filter(|f| !existing.contains(f)).map(|f| dir.join(f)).collect();
    mine.iter().for_each(|p| peerpath_io::remove_on_signal_once_in_place(p.clone()));
    let mut made = Vec::new();
    let ran = run_in(&dir, force, json, threads, &mut made);
    if ran.is_err() {
        for (path, id) in &made {
            if mine.contains(path) && peerpath_io::identity(path) == Some(*id) {
                let _ = std::fs::remove_file(path);
            }
        }
    }
    mine.iter().for_each(|p| peerpath_io::keep_on_signal(p));
    if ran.is_ok() {
        held.keep();
    }
    ran
}

/// Runs the demo's four jobs in `dir`, replacing its files there only with
/// `replace`; adds each file it put in place to `made`, with the file its
/// name held then.
fn run_in(dir: &Path, replace: bool, json: bool, threads: Option<usize>, made: &mut Vec<(PathBuf, (u64, u64))>) -> Result<(), JobError> {
    let mut put = |path: &Path| made.extend(peerpath_io::identity(path).map(|id| (path.to_path_buf(), id)));
    let source = dir.join(FILES[0]);
    let packed = dir.join(FILES[1]);
    let restored = dir.join(FILES[3]);
    // The sample appears whole or not at all, as every output does.
    let (mut t, temporary) = peerpath_io::create_temporary(&source, false).map_err(|e| io_err(&source, e))?;
    let written = t.file.write_all(SAMPLE).and_then(|()| peerpath_io::publish(&t.file, &temporary, &source, replace));
    if let Err(e) = written {
        peerpath_io::discard(&temporary);
        // Another demo in the same directory put it there since it was looked for.
        return Err(if e.kind() == std::io::ErrorKind::AlreadyExists { JobError::TargetExists { path: source } } else { io_err(&source, e) });
    }
    put(&source);
    let mut common = CommonOptions { force: replace, ..CommonOptions::default() };
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
    put(&packed);
    say("compress (host CPU, the reference)", &r);
    // The offload path on the embedded default: an emulated CSP process
    // owns device memory; the sample goes SSD -> device memory -> device
    // -> SSD by O_DIRECT, and must come out as the very same bytes.
    let offloaded = dir.join(FILES[2]);
    let eopts = CompressOptions { compute: peerpath_runtime::Compute::Emulated(Box::new(peerpath_runtime::EmulatedSpec::new())), ..copts.clone() };
    let r = peerpath_runtime::compress(&[(source.clone(), offloaded.clone())], &eopts)?;
    put(&offloaded);
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
    put(&restored);
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
