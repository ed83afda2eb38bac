//! `peerpath ec`: erasure coding of plain files (issue 19, first part).
//! `encode` splits a source into stripes of `k` units, adds `m` parity
//! units per stripe (Reed-Solomon over GF(2^8), ISA-L: `peerpath_func::ec`)
//! and writes one shard file per unit column plus a manifest (JSON: the
//! code, sizes and a CRC-32 of every unit); `verify` checks every unit;
//! `repair` rebuilds up to `m` missing or corrupt shards per stripe in
//! place, atomically; `decode` restores the source byte for byte from
//! whatever `k` units of each stripe survive. More than `m` losses in a
//! stripe is an error that names the stripes, and nothing is written.
//!
//! Files are read and written with plain calls, a stripe at a time (memory:
//! (k + m) units); every output appears atomically or not at all.

use clap::{Args, Subcommand};
use peerpath_func::ec::RsCode;
use peerpath_io::{ScratchDir, Temporary};
use peerpath_runtime::JobError;
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Args)]
pub struct EcArgs {
    #[command(subcommand)]
    command: EcCommand,
}

#[derive(Subcommand)]
enum EcCommand {
    /// Split SOURCE into K data and M parity shards in DIR (a new directory), with a manifest.
    Encode {
        source: PathBuf,
        /// Data shards (K).
        #[arg(long = "data", short = 'k')]
        data: usize,
        /// Parity shards (M): any M shards may be lost.
        #[arg(long = "parity", short = 'm')]
        parity: usize,
        /// The directory to create.
        #[arg(short = 'o', long = "output")]
        output: PathBuf,
        /// Bytes per unit (a shard's part of one stripe; K, M suffixes).
        #[arg(long, default_value = "1M", value_parser = crate::parse_size)]
        unit: usize,
    },
    /// Check every unit of every shard against the manifest's CRC-32s.
    Verify { dir: PathBuf },
    /// Rebuild missing or corrupt shards in place (at most M per stripe).
    Repair { dir: PathBuf },
    /// Restore the source from the shards that survive.
    Decode {
        dir: PathBuf,
        #[arg(short = 'o', long = "output")]
        output: PathBuf,
        /// Replace an existing output.
        #[arg(short, long)]
        force: bool,
    },
}

const MANIFEST: &str = "manifest.json";

#[derive(Serialize, Deserialize, Debug)]
struct Manifest {
    schema: String,
    code: String,
    source: String,
    source_bytes: u64,
    data_shards: usize,
    parity_shards: usize,
    unit_bytes: usize,
    stripes: u64,
    /// Per shard: its file (in the directory) and the CRC-32 of each of its units.
    shards: Vec<ShardEntry>,
}

#[derive(Serialize, Deserialize, Debug)]
struct ShardEntry {
    file: String,
    crc32: Vec<u32>,
}

pub fn main(a: EcArgs) -> ExitCode {
    let r = match a.command {
        EcCommand::Encode { source, data, parity, output, unit } => encode(&source, data, parity, &output, unit),
        EcCommand::Verify { dir } => verify(&dir),
        EcCommand::Repair { dir } => repair(&dir),
        EcCommand::Decode { dir, output, force } => decode(&dir, &output, force),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("peerpath: error: {e}");
            ExitCode::from(e.exit_code() as u8)
        }
    }
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> JobError + '_ {
    move |source| JobError::TargetIo { path: path.to_path_buf(), source }
}

fn corrupt(path: &Path, detail: String) -> JobError {
    JobError::Damaged { path: path.to_path_buf(), detail }
}

fn encode(source: &Path, k: usize, m: usize, dir: &Path, unit: usize) -> Result<(), JobError> {
    let code = RsCode::new(k, m).map_err(JobError::Usage)?;
    if unit == 0 || unit > 256 << 20 {
        return Err(JobError::Usage("--unit must be 1 byte to 256 MiB".into()));
    }
    if std::fs::symlink_metadata(dir).is_ok() {
        return Err(JobError::TargetDirExists { path: dir.to_path_buf() });
    }
    let mut src = File::open(source).map_err(|e| JobError::SourceUnreadable { path: source.to_path_buf(), source: e })?;
    let size = src.metadata().map_err(|e| JobError::SourceUnreadable { path: source.to_path_buf(), source: e })?.len();
    // Shards are written as unnamed files (nothing survives a killed
    // process), linked into a scratch directory beside DIR at the end, and
    // the directory is renamed into place (never over an existing name).
    let n = k + m;
    let names: Vec<PathBuf> = (0..n).map(|i| dir.with_file_name(shard_name(i))).collect();
    let mut files = create_temporaries(&names).map_err(io(dir))?;
    // Shards and manifest are as private as the source (gzip's rule for outputs).
    let mode = peerpath_io::Inherited::mode_of(src.metadata().ok().as_ref());
    let discard_all = |files: &[(File, Temporary)]| files.iter().for_each(|(_, t)| peerpath_io::discard(t));
    let mut crcs: Vec<Vec<u32>> = vec![Vec::new(); n];
    let stripes = size.div_ceil((k * unit) as u64).max(1);
    let mut units = vec![vec![0u8; unit]; n];
    let written = (|| -> Result<(), JobError> {
        for _ in 0..stripes {
            for d in units.iter_mut().take(k) {
                d.fill(0);
                read_up_to(&mut src, d).map_err(|e| JobError::SourceIo { path: source.to_path_buf(), detail: e.to_string() })?;
            }
            let (data, parity) = units.split_at_mut(k);
            let d: Vec<&[u8]> = data.iter().map(Vec::as_slice).collect();
            let mut p: Vec<&mut [u8]> = parity.iter_mut().map(Vec::as_mut_slice).collect();
            code.encode(&d, &mut p);
            for (i, u) in units.iter().enumerate() {
                crcs[i].push(crc32fast::hash(u));
                files[i].0.write_all(u).map_err(io(dir))?;
            }
        }
        Ok(())
    })();
    if let Err(e) = written {
        discard_all(&files);
        return Err(e);
    }
    let manifest = Manifest {
        schema: "peerpath/ec-manifest/1".into(),
        code: "Reed-Solomon over GF(2^8), ISA-L's Cauchy matrix".into(),
        source: source.file_name().map_or_else(|| source.display().to_string(), |n| n.to_string_lossy().into_owned()),
        source_bytes: size,
        data_shards: k,
        parity_shards: m,
        unit_bytes: unit,
        stripes,
        shards: crcs.into_iter().enumerate().map(|(i, crc32)| ShardEntry { file: shard_name(i), crc32 }).collect(),
    };
    let text = serde_json::to_string_pretty(&manifest).expect("manifest serialises");
    let published = (|| -> std::io::Result<()> {
        let mut manifest_file = create_temporaries(&[dir.with_file_name(MANIFEST)])?.remove(0);
        manifest_file.0.write_all(text.as_bytes())?;
        files.push(manifest_file);
        let names: Vec<String> = (0..n).map(shard_name).chain([MANIFEST.to_string()]).collect();
        for (f, _) in &files {
            mode.apply(f)?;
            f.sync_all()?;
        }
        // Everything is durable before the directory exists: the window in
        // which SIGKILL could leave it is a few links and a rename long
        // (and the next run beside it removes what a dead process left).
        let scratch = ScratchDir::beside(dir)?;
        for ((f, temp), name) in files.iter().zip(&names) {
            peerpath_io::publish(f, temp, &scratch.path().join(name), false)?;
        }
        scratch.publish(dir)
    })();
    if let Err(e) = published {
        discard_all(&files);
        return Err(if e.kind() == std::io::ErrorKind::AlreadyExists { JobError::TargetDirExists { path: dir.to_path_buf() } } else { io(dir)(e) });
    }
    println!("{}: {size} bytes in {stripes} stripe(s) of {k} x {unit} bytes, {m} parity shard(s): {}", source.display(), dir.display());
    Ok(())
}

/// One temporary file per target (unnamed where the file system allows);
/// on an error, those already made are discarded.
fn create_temporaries(targets: &[PathBuf]) -> std::io::Result<Vec<(File, Temporary)>> {
    let mut made = Vec::with_capacity(targets.len());
    for t in targets {
        match peerpath_io::create_temporary(t, false) {
            Ok((opened, temp)) => made.push((opened.file, temp)),
            Err(e) => {
                made.iter().for_each(|(_, t)| peerpath_io::discard(t));
                return Err(e);
            }
        }
    }
    Ok(made)
}

fn shard_name(i: usize) -> String {
    format!("shard-{i:03}")
}

/// Reads until `buf` is full or the file ends; the rest stays as it was.
fn read_up_to(f: &mut File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..])? {
            0 => break,
            r => n += r,
        }
    }
    Ok(n)
}

fn load(dir: &Path) -> Result<(Manifest, RsCode), JobError> {
    let path = dir.join(MANIFEST);
    let text = std::fs::read_to_string(&path).map_err(|e| JobError::SourceUnreadable { path: path.clone(), source: e })?;
    let m: Manifest = serde_json::from_str(&text).map_err(|e| corrupt(&path, format!("not an ec manifest: {e}")))?;
    let code = RsCode::new(m.data_shards, m.parity_shards).map_err(|e| corrupt(&path, e))?;
    let n = m.data_shards + m.parity_shards;
    let stripes_ok = m.unit_bytes > 0 && m.stripes == m.source_bytes.div_ceil((m.data_shards * m.unit_bytes) as u64).max(1);
    if m.schema != "peerpath/ec-manifest/1" || m.shards.len() != n || !stripes_ok || m.shards.iter().any(|s| s.crc32.len() as u64 != m.stripes || s.file.contains('/')) {
        return Err(corrupt(&path, "inconsistent manifest (schema, shard count, stripes or checksums)".into()));
    }
    Ok((m, code))
}

/// Every unit of stripe `s`: its bytes if the shard has them and their CRC-32 matches.
fn read_stripe(m: &Manifest, files: &mut [Option<File>], s: u64) -> Vec<Option<Vec<u8>>> {
    files
        .iter_mut()
        .enumerate()
        .map(|(i, f)| {
            let f = f.as_mut()?;
            let mut u = vec![0u8; m.unit_bytes];
            f.seek(SeekFrom::Start(s * m.unit_bytes as u64)).ok()?;
            f.read_exact(&mut u).ok()?;
            (crc32fast::hash(&u) == m.shards[i].crc32[s as usize]).then_some(u)
        })
        .collect()
}

fn open_shards(dir: &Path, m: &Manifest) -> Vec<Option<File>> {
    m.shards.iter().map(|s| File::open(dir.join(&s.file)).ok()).collect()
}

/// Per stripe, which shards are bad; and the stripes with more bad than the code can rebuild.
fn survey(dir: &Path, m: &Manifest) -> (Vec<Vec<usize>>, Vec<u64>) {
    let mut files = open_shards(dir, m);
    let mut bad = Vec::new();
    let mut lost = Vec::new();
    for s in 0..m.stripes {
        let units = read_stripe(m, &mut files, s);
        let b: Vec<usize> = units.iter().enumerate().filter(|(_, u)| u.is_none()).map(|(i, _)| i).collect();
        if b.len() > m.parity_shards {
            lost.push(s);
        }
        bad.push(b);
    }
    (bad, lost)
}

fn verify(dir: &Path) -> Result<(), JobError> {
    let (m, _) = load(dir)?;
    let (bad, lost) = survey(dir, &m);
    let damaged: Vec<usize> = (0..m.shards.len()).filter(|i| bad.iter().any(|b| b.contains(i))).collect();
    if damaged.is_empty() {
        println!("{}: all {} shard(s) intact ({} stripe(s))", dir.display(), m.shards.len(), m.stripes);
        return Ok(());
    }
    let names: Vec<&str> = damaged.iter().map(|&i| m.shards[i].file.as_str()).collect();
    let verdict = if lost.is_empty() { "repairable (peerpath ec repair)".to_string() } else { format!("NOT repairable: stripes {lost:?} lost more than {} shard(s)", m.parity_shards) };
    Err(corrupt(dir, format!("missing or corrupt units in {}: {verdict}", names.join(", "))))
}

fn unrecoverable(dir: &Path, m: &Manifest, lost: &[u64]) -> JobError {
    corrupt(dir, format!("stripes {lost:?} lost more than {} of their {} shards: they cannot be rebuilt (nothing was written)", m.parity_shards, m.shards.len()))
}

fn repair(dir: &Path) -> Result<(), JobError> {
    let (m, code) = load(dir)?;
    let (bad, lost) = survey(dir, &m);
    if !lost.is_empty() {
        return Err(unrecoverable(dir, &m, &lost));
    }
    let damaged: Vec<usize> = (0..m.shards.len()).filter(|i| bad.iter().any(|b| b.contains(i))).collect();
    if damaged.is_empty() {
        println!("{}: nothing to repair", dir.display());
        return Ok(());
    }
    // Each damaged shard is rewritten whole into a temporary file (unnamed
    // where the file system allows), then renamed over the old one.
    let mut files = open_shards(dir, &m);
    let targets: Vec<PathBuf> = damaged.iter().map(|&i| dir.join(&m.shards[i].file)).collect();
    let mut outs: Vec<(usize, File, Temporary)> = damaged.iter().zip(create_temporaries(&targets).map_err(io(dir))?).map(|(&i, (f, t))| (i, f, t)).collect();
    let rebuilt = (|| -> Result<(), JobError> {
        for s in 0..m.stripes {
            let units = read_stripe(&m, &mut files, s);
            let survivors: Vec<(usize, &[u8])> = units.iter().enumerate().filter_map(|(i, u)| u.as_deref().map(|u| (i, u))).collect();
            let missing = &bad[s as usize];
            let mut rebuilt = vec![vec![0u8; m.unit_bytes]; missing.len()];
            if !missing.is_empty() {
                let mut o: Vec<&mut [u8]> = rebuilt.iter_mut().map(Vec::as_mut_slice).collect();
                code.reconstruct(&survivors, missing, &mut o).map_err(|e| corrupt(dir, e))?;
            }
            for (i, out, _) in outs.iter_mut() {
                let unit = match missing.iter().position(|j| j == i) {
                    Some(p) => &rebuilt[p],
                    None => units[*i].as_ref().expect("a shard not missing in this stripe is good"),
                };
                out.write_all(unit).map_err(io(dir))?;
            }
        }
        for (i, out, temp) in &outs {
            // As private as the set (the manifest's mode), whatever became of the old shard.
            let set = std::fs::metadata(dir.join(MANIFEST)).ok();
            peerpath_io::Inherited::mode_of(set.as_ref()).apply(out).map_err(io(dir))?;
            out.sync_all().map_err(io(dir))?;
            peerpath_io::publish(out, temp, &dir.join(&m.shards[*i].file), true).map_err(io(dir))?;
        }
        Ok(())
    })();
    if let Err(e) = rebuilt {
        outs.iter().for_each(|(_, _, t)| peerpath_io::discard(t));
        return Err(e);
    }
    File::open(dir).and_then(|d| d.sync_all()).map_err(io(dir))?;
    let names: Vec<&str> = damaged.iter().map(|&i| m.shards[i].file.as_str()).collect();
    println!("{}: rebuilt {}", dir.display(), names.join(", "));
    Ok(())
}

fn decode(dir: &Path, output: &Path, force: bool) -> Result<(), JobError> {
    let (m, code) = load(dir)?;
    let (bad, lost) = survey(dir, &m);
    if !lost.is_empty() {
        return Err(unrecoverable(dir, &m, &lost));
    }
    if !force && std::fs::symlink_metadata(output).is_ok() {
        return Err(JobError::TargetExists { path: output.to_path_buf() });
    }
    let (mut t, temporary) = peerpath_io::create_temporary(output, false).map_err(io(output))?;
    let k = m.data_shards;
    let mut files = open_shards(dir, &m);
    let mut left = m.source_bytes;
    let written = (|| -> Result<(), JobError> {
        for s in 0..m.stripes {
            let mut units = read_stripe(&m, &mut files, s);
            let missing: Vec<usize> = bad[s as usize].iter().copied().filter(|&i| i < k).collect();
            if !missing.is_empty() {
                let survivors: Vec<(usize, &[u8])> = units.iter().enumerate().filter_map(|(i, u)| u.as_deref().map(|u| (i, u))).collect();
                let mut rebuilt = vec![vec![0u8; m.unit_bytes]; missing.len()];
                let mut o: Vec<&mut [u8]> = rebuilt.iter_mut().map(Vec::as_mut_slice).collect();
                code.reconstruct(&survivors, &missing, &mut o).map_err(|e| corrupt(dir, e))?;
                for (j, u) in missing.iter().zip(rebuilt) {
                    units[*j] = Some(u);
                }
            }
            for u in units.iter().take(k) {
                let u = u.as_ref().expect("every data unit is there or rebuilt");
                let n = (left as usize).min(u.len());
                t.file.write_all(&u[..n]).map_err(io(output))?;
                left -= n as u64;
            }
        }
        // As private as the set (the manifest keeps the source's mode).
        let set = std::fs::metadata(dir.join(MANIFEST)).ok();
        peerpath_io::Inherited::mode_of(set.as_ref()).apply(&t.file).map_err(io(output))?;
        t.file.sync_all().map_err(io(output))?;
        peerpath_io::publish(&t.file, &temporary, output, force).map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => JobError::TargetExists { path: output.to_path_buf() },
            _ => io(output)(e),
        })
    })();
    if let Err(e) = written {
        peerpath_io::discard(&temporary);
        return Err(e);
    }
    Ok(())
}
