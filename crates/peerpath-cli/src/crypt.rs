//! `peerpath encrypt`, `decrypt` and `keygen`: files in the authenticated
//! block format `peerpath-enc/1` (AES-256-GCM, `peerpath_func::crypt`), or
//! with `--mode xts` block-device images in AES-256-XTS (`peerpath_func::xts`:
//! the same size, sector by sector, not authenticated).
//!
//! Blocks are independent, so every worker thread takes the next block
//! index, reads it at its own offset (`pread`), seals or opens it, and
//! writes it at its own offset (`pwrite`) into the target's unnamed
//! temporary file; nothing is published unless every block succeeded.
//! The key comes from a file or an environment variable and appears in no
//! message, log or report.

use clap::Args;
use peerpath_func::crypt::{CryptError, FileCipher, Key, Layout, HEADER_BYTES, MAX_BLOCK_BYTES, TAG_BYTES};
use peerpath_runtime::report::{count, name_bytes, Quoted};
use peerpath_runtime::JobError;
use serde::Serialize;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

/// The environment variable read for the key when no option names one.
pub const KEY_ENV: &str = "PEERPATH_KEY";
/// Suffix of encrypted files.
pub(crate) const SUFFIX: &str = "ppenc";
/// Bytes sealed per block unless asked otherwise (`encrypt --block-size`, `compress --encrypt-block-size`).
pub(crate) const DEFAULT_BLOCK_BYTES: usize = 1 << 20;

#[derive(Args)]
pub struct KeyArgs {
    /// A file holding the key: 32 raw bytes or 64 hexadecimal digits (`peerpath keygen` makes one).
    #[arg(long, value_name = "FILE", conflicts_with = "key_env")]
    key_file: Option<PathBuf>,
    /// An environment variable holding the key as 64 hexadecimal digits [default: PEERPATH_KEY].
    #[arg(long, value_name = "VAR")]
    key_env: Option<String>,
}

impl KeyArgs {
    /// Whether the command line names a key (PEERPATH_KEY alone does not count: it may be set
    /// for other commands).
    pub(crate) fn given(&self) -> bool {
        self.key_file.is_some() || self.key_env.is_some()
    }

    /// Refuses a target that is the key file (by any name: a link, `./`): with --force it
    /// would be replaced by what the key encrypted or decrypted, and the key lost with it.
    pub(crate) fn refuse_as_target<'a>(&self, targets: impl IntoIterator<Item = &'a Path>) -> Result<(), JobError> {
        use std::os::unix::fs::MetadataExt;
        let Some(key) = self.key_file.as_deref().and_then(|k| std::fs::metadata(k).ok()) else { return Ok(()) };
        for t in targets {
            if std::fs::metadata(t).is_ok_and(|m| (m.dev(), m.ino()) == (key.dev(), key.ino())) {
                return Err(JobError::PartOfSource { path: t.to_path_buf(), what: "the key file".into() });
            }
        }
        Ok(())
    }
}

#[derive(Args)]
pub struct CryptArgs {
    /// The file to read (never modified).
    source: PathBuf,
    /// The file to write [default: SOURCE.ppenc to encrypt (SOURCE.xts with --mode xts); SOURCE
    /// less .ppenc (or .xts) to decrypt].
    #[arg(short = 'o', long = "output")]
    output: Option<PathBuf>,
    #[command(flatten)]
    key: KeyArgs,
    /// Plaintext bytes per block (encrypt with --mode gcm; K, M suffixes; at most 1G) [default: 1M].
    #[arg(long, value_parser = crate::parse_size)]
    block_size: Option<usize>,
    /// `gcm`: peerpath-enc/1 (AES-256-GCM: authenticated blocks, a header; the default); `xts`:
    /// AES-256-XTS for block-device images (the same size, sector by sector, each sector's index
    /// its tweak, as dm-crypt's plain64; not authenticated: a changed sector decrypts to garbage,
    /// not to an error). Target SOURCE.xts; decrypt needs --mode xts too (the file says nothing).
    #[arg(long, value_enum, default_value_t = Mode::Gcm)]
    mode: Mode,
    /// With --mode xts: bytes per sector (data unit), a power of two from 512 to 1M [default: 4K].
    #[arg(long, value_parser = crate::parse_size)]
    sector_size: Option<usize>,
    /// Worker threads [default: all cores].
    #[arg(short = 'T', long, value_parser = clap::value_parser!(u16).range(1..=1024))]
    threads: Option<u16>,
    /// Where blocks are sealed or opened (gcm): cpu; emulated (an emulated CSP: each block goes
    /// from the source into its memory by DMA, is sealed there with the file's block key, and is
    /// written to the target from there; --block-size a multiple of 4K to encrypt); or gpu (the
    /// same on a GPU with peerpath's AES-256-GCM kernels, through its pinned host window).
    #[arg(long, value_enum, default_value_t = CryptEngine::Cpu)]
    engine: CryptEngine,
    /// With --engine emulated or gpu: fail (exit 15) instead of working on the CPU when the device cannot start or fails.
    #[arg(long)]
    no_fallback: bool,
    /// With --engine gpu: which GPU [default: 0].
    #[arg(long)]
    gpu: Option<usize>,
    /// Testing aid, with --engine emulated: inject seeded device faults, e.g. "seed=7,crash-after=3,error=0.1" (no corrupt=: a device's output is not checked here).
    #[arg(long, value_parser = crate::parse_faults)]
    inject_faults: Option<peerpath_device::FaultConfig>,
    /// With --engine emulated or gpu: a device with commands in flight and none completing for
    /// this long (seconds) is declared hung and the host CPU does the work (or exit 15 with
    /// --no-fallback) [default: 10 for an emulated CSP, 30 for a GPU].
    #[arg(long, value_parser = crate::parse_device_timeout)]
    device_timeout: Option<std::time::Duration>,
    /// Replace an existing output.
    #[arg(short, long)]
    force: bool,
    /// No summary line.
    #[arg(short, long)]
    quiet: bool,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum CryptEngine {
    Cpu,
    Emulated,
    Gpu,
}

#[derive(Args)]
pub struct KeygenArgs {
    /// The key file to create (mode 0600; never replaces a file).
    #[arg(short = 'o', long = "output")]
    output: PathBuf,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Mode {
    Gcm,
    Xts,
}

/// Suffix of XTS images.
const XTS_SUFFIX: &str = "xts";

#[derive(Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
enum Direction {
    Encrypt,
    Decrypt,
}

/// What one run did. Figures are measured on this host's CPU.
#[derive(Serialize)]
struct CryptReport {
    operation: Direction,
    #[serde(serialize_with = "crate::serialize_name")]
    source: PathBuf,
    /// `source`'s exact bytes, where the name is not UTF-8 ([`name_bytes`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    source_bytes: Option<Vec<u8>>,
    #[serde(serialize_with = "crate::serialize_name")]
    target: PathBuf,
    /// `target`'s exact bytes, where the name is not UTF-8.
    #[serde(skip_serializing_if = "Option::is_none")]
    target_bytes: Option<Vec<u8>>,
    algorithm: &'static str,
    library: &'static str,
    block_bytes: u32,
    blocks: u64,
    plaintext_bytes: u64,
    file_bytes: u64,
    threads: usize,
    seconds: f64,
    plaintext_gb_per_s: f64,
    /// Seconds summed over the worker threads in each stage.
    stages: Stages,
    /// Plaintext bytes over the seconds inside AES-GCM, per core: the
    /// figure to compare with the library's own speed. With a device: over
    /// its busy time in the seal or open commands (a GPU's is its batches'
    /// wall time, shared by their commands), not a per-core rate.
    cipher_gb_per_s_per_core: f64,
    /// Where the blocks were sealed or opened, and how the payload moved.
    engine: String,
    /// Why the device asked for did not do the work (the CPU did), if so.
    fallback: Option<String>,
    provenance: &'static str,
}

#[derive(Serialize, Default)]
struct Stages {
    read_s: f64,
    cipher_s: f64,
    write_s: f64,
}

/// Nanoseconds per stage, added to by every worker.
#[derive(Default)]
struct StageClock {
    read: AtomicU64,
    cipher: AtomicU64,
    write: AtomicU64,
}

impl StageClock {
    fn time<T>(counter: &AtomicU64, f: impl FnOnce() -> T) -> T {
        let t = Instant::now();
        let r = f();
        counter.fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
        r
    }
    fn stages(&self) -> Stages {
        let s = |c: &AtomicU64| c.load(Ordering::Relaxed) as f64 / 1e9;
        Stages { read_s: s(&self.read), cipher_s: s(&self.cipher), write_s: s(&self.write) }
    }
}

pub fn encrypt(a: CryptArgs) -> ExitCode {
    crate::exit_code(run(a, Direction::Encrypt))
}

pub fn decrypt(a: CryptArgs) -> ExitCode {
    crate::exit_code(run(a, Direction::Decrypt))
}

pub fn keygen(a: KeygenArgs) -> ExitCode {
    crate::exit_code(make_key(&a.output))
}

fn target_io(path: &Path) -> impl Fn(std::io::Error) -> JobError + '_ {
    move |source| JobError::TargetIo { path: path.to_path_buf(), source }
}

fn make_key(path: &Path) -> Result<(), JobError> {
    if peerpath_runtime::job::is_std_stream(path) {
        // Other commands read "-" as standard output: a key file named "-" would surprise.
        return Err(JobError::Usage("keygen writes a key to a private file (mode 0600), never to standard output: give -o FILE".into()));
    }
    if let Ok(m) = std::fs::symlink_metadata(path) {
        let why = if m.is_dir() { "it is a directory: name the key file to make in it (keygen -o DIR/NAME)" } else { "keygen never replaces a key file (losing a key loses what it encrypted)" };
        return Err(JobError::TargetKept { path: path.to_path_buf(), why: why.into() });
    }
    let hex = Key::generate_hex().map_err(JobError::Internal)?;
    let (t, temp) = peerpath_io::create_temporary(path, false).map_err(target_io(path))?;
    let written = (|| {
        // The temporary is 0600 already; publish keeps it.
        t.file.write_all_at(hex.as_bytes(), 0)?;
        t.file.sync_all()?;
        peerpath_io::publish(&t.file, &temp, path, false)
    })();
    if let Err(e) = written {
        peerpath_io::discard(&temp);
        return Err(match e.kind() {
            std::io::ErrorKind::AlreadyExists => JobError::TargetKept { path: path.to_path_buf(), why: "keygen never replaces a key file (losing a key loses what it encrypted)".into() },
            _ => target_io(path)(e),
        });
    }
    eprintln!("peerpath: wrote a new 256-bit key to {} (mode 0600); keep a copy: without it nothing encrypted with it can be read", Quoted(path));
    Ok(())
}

/// The key where one is given (an option, or PEERPATH_KEY set), for commands
/// whose sources may or may not be encrypted.
pub(crate) fn optional_key(k: &KeyArgs) -> Result<Option<std::sync::Arc<Key>>, JobError> {
    if k.key_file.is_none() && k.key_env.is_none() && key_variable(KEY_ENV).is_none() {
        return Ok(None);
    }
    load_key(k, KeyUse::Reads).map(|key| Some(std::sync::Arc::new(key)))
}

/// Environment variable `name`'s value, zeroized when dropped: a job server forks devices
/// later, and freed memory keeps what it held.
fn key_variable(name: &str) -> Option<zeroize::Zeroizing<Vec<u8>>> {
    std::env::var_os(name).map(|v| zeroize::Zeroizing::new(std::os::unix::ffi::OsStringExt::into_vec(v)))
}

/// What a key is loaded for: data made with it now, or data made with it before.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum KeyUse {
    Writes,
    Reads,
}

/// The key from `--key-file`, `--key-env` or PEERPATH_KEY.
pub(crate) fn load_key(k: &KeyArgs, for_: KeyUse) -> Result<Key, JobError> {
    if let Some(f) = &k.key_file {
        // A key is at most a line of 64 digits: read a little more than that, never a
        // whole device or a stream that does not end (--key-file /dev/zero).
        const MOST: u64 = 4096;
        // Room for all it may read at once: a reallocation would leave key bytes behind, unzeroed.
        let mut bytes = zeroize::Zeroizing::new(Vec::with_capacity(MOST as usize + 1));
        let file = std::fs::File::open(f).map_err(|e| JobError::Usage(format!("cannot read key file {}: {e}", Quoted(f))))?;
        // As ssh says of a private key others may read (keygen makes 0600): said, not refused.
        if let Some(m) = file.metadata().ok().filter(|m| m.is_file() && std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o077 != 0) {
            let mode = std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o777;
            let _ = std::io::Write::write_fmt(&mut std::io::stderr(), format_args!("peerpath: warning: key file {} is readable or writable by others (mode {mode:04o}): chmod 600 it\n", Quoted(f)));
        }
        std::io::Read::read_to_end(&mut std::io::Read::take(file, MOST + 1), &mut bytes).map_err(|e| JobError::Usage(format!("cannot read key file {}: {e}", Quoted(f))))?;
        if bytes.len() as u64 > MOST {
            return Err(JobError::Usage(format!("key file {}: more than {MOST} bytes: a key is 32 raw bytes or 64 hexadecimal digits", Quoted(f))));
        }
        // 32 bytes that are all text (a 128-bit key in hex, 31 digits and a newline, a
        // passphrase) would be taken as raw key bytes; random bytes are that one time in 10^13.
        // Refused for new data; data made with such a key before (peerpath took it as raw
        // bytes until 2026-12-05) is still read with it, said.
        if bytes.len() == peerpath_func::crypt::KEY_BYTES && bytes.iter().all(|b| b.is_ascii_graphic() || b.is_ascii_whitespace()) {
            if for_ == KeyUse::Writes {
                return Err(JobError::Usage(format!("key file {}: 32 bytes of text, not a key: a key is 32 random bytes or 64 hexadecimal digits (peerpath keygen makes one)", Quoted(f))));
            }
            let _ = std::io::Write::write_fmt(&mut std::io::stderr(), format_args!("peerpath: warning: key file {} is 32 bytes of text: taken as 32 raw key bytes, as peerpath took it before 2026-12-05, to read what was made with it (a new encryption refuses it: make a key with peerpath keygen)\n", Quoted(f)));
        }
        return Key::from_bytes(&bytes).map_err(|e| JobError::Usage(format!("key file {}: {e}", Quoted(f))));
    }
    let var = k.key_env.as_deref().unwrap_or(KEY_ENV);
    match key_variable(var) {
        // 64 digits only: 32 characters would be taken as raw key bytes, and a variable of 32
        // characters is a passphrase far more often than a key.
        Some(v) if v.len() == peerpath_func::crypt::KEY_BYTES => Err(JobError::Usage(format!("environment variable {var}: holds {} characters: a key there is 64 hexadecimal digits (peerpath keygen makes one)", v.len()))),
        // (Its own words: the file's rule, which also takes 32 raw bytes, is not this one.)
        Some(v) => Key::from_bytes(&v).map_err(|_| JobError::Usage(format!("environment variable {var}: not a key: a key there is 64 hexadecimal digits (peerpath keygen makes one)"))),
        None if k.key_env.is_some() => Err(JobError::Usage(format!("--key-env {var}: no such environment variable is set"))),
        None => Err(JobError::Usage(format!("no key: give --key-file FILE, --key-env VAR, or set {KEY_ENV} (peerpath keygen -o FILE makes a key)"))),
    }
}

/// A file shorter than its header says may be cut at its end or have lost a block in the
/// middle (the blocks after it moved up): the first block before the cut that does not
/// authenticate where it should be is the damage to name, not the last block.
fn first_bad_block_before(c: &FileCipher, src: &std::fs::File, short: &CryptError) -> Option<String> {
    let &CryptError::Truncated { expected, actual, block: cut, .. } = short else { return None };
    let l = c.layout();
    let mut buf = Vec::new();
    let also = format!("the file is also {} bytes short of the {expected} its header says: a block removed?", expected - actual);
    (0..cut).find_map(|i| {
        buf.resize(l.plain_len(i) + peerpath_func::crypt::TAG_BYTES, 0);
        match src.read_exact_at(&mut buf, l.sealed_offset(i)) {
            Err(e) => Some(format!("block {i} cannot be read: {e} ({also})")),
            Ok(()) => c.open_block(i, &mut buf).err().map(|e| format!("{e} ({also})")),
        }
    })
}

fn default_target(source: &Path, dir: Direction, suffix: &str) -> Result<PathBuf, JobError> {
    let name = source.file_name().ok_or_else(|| JobError::Usage(format!("{} names no file", Quoted(source))))?;
    match dir {
        Direction::Encrypt => {
            let mut n = name.to_os_string();
            n.push(".");
            n.push(suffix);
            peerpath_runtime::job::refuse_target_beside_a_system_file(source, source.with_file_name(n), peerpath_runtime::job::Writes::FileOnly)
        }
        Direction::Decrypt => match source.extension() {
            Some(e) if e == suffix && source.file_stem().is_some_and(|s| !s.is_empty()) => peerpath_runtime::job::refuse_target_beside_a_system_file(source, source.with_extension(""), peerpath_runtime::job::Writes::FileOnly),
            _ => Err(named_xts(source, suffix).unwrap_or_else(|| JobError::Usage(format!("{} is not NAME.{suffix}, so the output has no name to take: name it with -o", Quoted(source))))),
        },
    }
}

/// An image named NAME.xts given to decryption without `--mode xts`: not a damaged
/// peerpath-enc/1 file, nor one with no name for its output, but the wrong mode.
fn named_xts(source: &Path, suffix: &str) -> Option<JobError> {
    (suffix == SUFFIX && source.extension().is_some_and(|e| e == XTS_SUFFIX))
        .then(|| JobError::Usage(format!("{} is named as an AES-256-XTS image and has no peerpath-enc/1 header: decrypt it with --mode xts", Quoted(source))))
}

fn run(a: CryptArgs, dir: Direction) -> Result<(), JobError> {
    if peerpath_runtime::job::is_std_stream(&a.source) || a.output.as_deref().is_some_and(peerpath_runtime::job::is_std_stream) {
        return Err(JobError::Usage("encrypt and decrypt work on files (nothing may reach an output before every block is checked)".into()));
    }
    if a.inject_faults.is_some() && a.engine != CryptEngine::Emulated {
        return Err(JobError::Usage("--inject-faults needs --engine emulated".into()));
    }
    if a.gpu.is_some() && a.engine != CryptEngine::Gpu {
        return Err(JobError::Usage("--gpu needs --engine gpu".into()));
    }
    if a.device_timeout.is_some() && a.engine == CryptEngine::Cpu {
        return Err(crate::device_timeout_without_a_device());
    }
    if a.inject_faults.as_ref().is_some_and(|f| f.corrupt_probability > 0.0) {
        return Err(JobError::Usage("encrypt and decrypt do not check the device's output: --inject-faults takes no corrupt= with them".into()));
    }
    // An option of the other mode, or one the file's header decides, would be ignored.
    match (a.mode, dir) {
        (Mode::Gcm, _) if a.sector_size.is_some() => return Err(JobError::Usage("--sector-size goes with --mode xts (gcm seals blocks: --block-size)".into())),
        (Mode::Xts, _) if a.block_size.is_some() => return Err(JobError::Usage("--block-size goes with --mode gcm (xts works sector by sector: --sector-size)".into())),
        (Mode::Gcm, Direction::Decrypt) if a.block_size.is_some() => return Err(JobError::Usage("--block-size is for encrypt: decrypt reads it from the file's header".into())),
        (Mode::Xts, _) => return run_xts(a, dir),
        (Mode::Gcm, _) => {}
    }
    let block_size = a.block_size.unwrap_or(DEFAULT_BLOCK_BYTES);
    if block_size == 0 || block_size > MAX_BLOCK_BYTES as usize {
        return Err(JobError::Usage(format!("--block-size must be 1 byte to {} MiB", MAX_BLOCK_BYTES >> 20)));
    }
    let key = load_key(&a.key, if dir == Direction::Encrypt { KeyUse::Writes } else { KeyUse::Reads })?;
    let Opened { target, src, meta, size, threads, held: _held } = open(&a, dir, SUFFIX)?;
    let damaged = |e: CryptError| JobError::from_crypt(&a.source, e);
    let (cipher, header) = match dir {
        Direction::Encrypt => {
            let (c, h) = FileCipher::create(&key, block_size as u32, size).map_err(JobError::Internal)?;
            (c, Some(h))
        }
        Direction::Decrypt => {
            let mut h = [0u8; HEADER_BYTES];
            let n = src.read_at(&mut h, 0).map_err(|e| JobError::SourceIo { path: a.source.clone(), detail: e.to_string() })?;
            let c = FileCipher::open(&key, &h[..n]).map_err(|e| match e {
                CryptError::NotEncrypted => named_xts(&a.source, SUFFIX).unwrap_or_else(|| damaged(e)),
                e => damaged(e),
            })?;
            if let Err(e) = c.check_length(size) {
                return Err(first_bad_block_before(&c, &src, &e).map_or_else(|| damaged(e), |detail| JobError::Damaged { path: a.source.clone(), detail }));
            }
            (c, None)
        }
    };
    // --engine emulated or gpu: the device, or why not (said, or an error with --no-fallback).
    let (mut device, mut fallback) = (None, None);
    if a.engine != CryptEngine::Cpu {
        let sealing = dir == Direction::Encrypt;
        let why = match a.engine {
            CryptEngine::Gpu => crate::crypt_device::start_gpu(a.gpu.unwrap_or(0), cipher.layout(), sealing, a.device_timeout),
            _ => crate::crypt_device::start(cipher.layout(), sealing, a.inject_faults.clone(), a.device_timeout),
        };
        match why {
            Ok(d) => device = Some(d),
            Err(why) if a.no_fallback => return Err(JobError::Device { detail: format!("{why} (--no-fallback)") }),
            Err(why) => {
                eprintln!("peerpath: FALLBACK: {why}: on the host CPU");
                fallback = Some(why);
            }
        }
    }
    // Sealing reads whole aligned blocks by DMA; opening reads sealed blocks at unaligned offsets.
    let direct_src = match device {
        Some(_) if dir == Direction::Encrypt => Some(peerpath_io::open_source(&a.source, true).map_err(|e| JobError::SourceUnreadable { path: a.source.clone(), source: e })?.file),
        _ => None,
    };
    let (t, temp) = peerpath_io::create_temporary(&target, false).map_err(target_io(&target))?;
    let started = Instant::now();
    let clock = StageClock::default();
    let mut engine = "the host CPU (this process): aws-lc".to_string();
    let mut device_seconds = None;
    let result = (|| -> Result<(), JobError> {
        if let Some(h) = header {
            t.file.write_all_at(&h, 0).map_err(target_io(&target))?;
        }
        let on_device = match (device.as_mut(), &direct_src) {
            (Some(dev), Some(from)) => Some(crate::crypt_device::seal(dev.as_mut(), from, &key, &cipher, &t.file)),
            (Some(dev), None) => Some(crate::crypt_device::open(dev.as_mut(), &src, &key, &cipher, &t.file)),
            _ => None,
        };
        use crate::crypt_device::PassFailure;
        match on_device {
            Some(Ok((how, secs))) => (engine, device_seconds) = (how, Some(secs)),
            Some(Err(PassFailure::NotAuthentic(why))) => return Err(JobError::Damaged { path: a.source.clone(), detail: format!("{why}; nothing was written") }),
            Some(Err(PassFailure::Source(why))) => return Err(JobError::SourceIo { path: a.source.clone(), detail: format!("{why}; nothing was kept") }),
            Some(Err(PassFailure::Target(e))) => return Err(target_io(&target)(e)),
            Some(Err(PassFailure::Device(why))) if a.no_fallback => return Err(JobError::Device { detail: format!("{why} (--no-fallback); nothing was kept") }),
            Some(Err(PassFailure::Device(why))) => {
                // The CPU does the whole file again, over whatever the device wrote
                // (every block is rewritten at its place; the header stays).
                eprintln!("peerpath: FALLBACK: {why}: the whole file on the host CPU instead (nothing the device wrote is kept)");
                fallback = Some(why);
                transform(&cipher, &src, &t.file, dir, threads, &clock, &a.source, &target)?;
            }
            None => transform(&cipher, &src, &t.file, dir, threads, &clock, &a.source, &target)?,
        }
        // The source must still be the size the header was made for (or checked against).
        publish(&a, &src, size, &meta, &t.file, &temp, &target)
    })();
    if let Err(e) = result {
        peerpath_io::discard(&temp);
        return Err(e);
    }
    let seconds = started.elapsed().as_secs_f64();
    let l = cipher.layout();
    let report = CryptReport {
        operation: dir,
        source: a.source.clone(),
        source_bytes: name_bytes(&a.source),
        target: target.clone(),
        target_bytes: name_bytes(&target),
        algorithm: "AES-256-GCM, peerpath-enc/1",
        library: if device_seconds.is_some() && a.engine == CryptEngine::Gpu { "peerpath's AES-256-GCM kernels (kernels/crypt.cu)" } else { "aws-lc (aws-lc-rs)" },
        block_bytes: l.block_bytes,
        blocks: l.blocks(),
        plaintext_bytes: l.plaintext_bytes,
        file_bytes: l.file_bytes(),
        // The workers that ran: no more than the blocks (transform starts no idle ones).
        threads: if device_seconds.is_some() { 1 } else { threads.min(l.blocks() as usize) },
        seconds,
        plaintext_gb_per_s: l.plaintext_bytes as f64 / seconds.max(1e-9) / 1e9,
        // On the device: the seconds its worker spent in the seal commands.
        cipher_gb_per_s_per_core: l.plaintext_bytes as f64 / device_seconds.unwrap_or(clock.stages().cipher_s).max(1e-9) / 1e9,
        stages: clock.stages(),
        provenance: match (device_seconds, a.engine) {
            (None, _) => "measured on this host's CPU",
            (Some(_), CryptEngine::Gpu) => "measured on a real accelerator (GPU)",
            (Some(_), _) => "measured on emulated devices",
        },
        engine,
        fallback,
    };
    emit(&a, &report, || {
        let verb = if dir == Direction::Encrypt { "encrypted" } else { "decrypted and authenticated" };
        format!(
            "{verb} {} in {} of {}",
            peerpath_metrics::human_bytes(l.plaintext_bytes),
            count(l.blocks(), "block"),
            peerpath_metrics::human_bytes(l.block_bytes as u64)
        )
    });
    Ok(())
}

/// Sectors per task of an XTS worker (at 4 KiB, 1 MiB a task).
const XTS_TASK_BYTES: usize = 1 << 20;

/// `--mode xts`: the source's sectors encrypted (or decrypted) into a target
/// of the same size, on every core, published only when all are done.
fn run_xts(a: CryptArgs, dir: Direction) -> Result<(), JobError> {
    use peerpath_func::xts::{Xts, XtsKey, MIN_UNIT_BYTES};
    let sector = a.sector_size.unwrap_or(4096);
    if !sector.is_power_of_two() || !(512..=1 << 20).contains(&sector) {
        return Err(JobError::Usage(format!("--sector-size {sector}: a power of two from 512 to 1M")));
    }
    let key = XtsKey::derive(&load_key(&a.key, if dir == Direction::Encrypt { KeyUse::Writes } else { KeyUse::Reads })?).map_err(|e| JobError::Internal(e.to_string()))?;
    let fallback = (a.engine != CryptEngine::Cpu).then(|| "the devices have no XTS function".to_string());
    if let Some(why) = &fallback {
        if a.no_fallback {
            return Err(JobError::Device { detail: format!("{why} (--no-fallback)") });
        }
        eprintln!("peerpath: FALLBACK: {why}: on the host CPU");
    }
    let Opened { target, src, meta, size, threads, held: _held } = open(&a, dir, XTS_SUFFIX)?;
    let tail = (size % sector as u64) as usize;
    if tail != 0 && tail < MIN_UNIT_BYTES {
        return Err(JobError::Usage(format!(
            "{} is {size} bytes: its last sector would be {tail} bytes, and XTS needs at least {MIN_UNIT_BYTES} (images are whole sectors; try another --sector-size)",
            Quoted(&a.source)
        )));
    }
    // A peerpath-enc/1 file given to XTS decryption would come out as noise with exit 0 (XTS
    // checks nothing): the wrong mode, refused.
    if dir == Direction::Decrypt {
        let mut head = [0u8; 8];
        if src.read_exact_at(&mut head, 0).is_ok() && &head == peerpath_func::crypt::MAGIC {
            return Err(JobError::Usage(format!("{} is a peerpath-enc/1 file (AES-256-GCM, it begins with its header): decrypt it without --mode xts", Quoted(&a.source))));
        }
    }
    let task = XTS_TASK_BYTES.max(sector);
    let tasks = size.div_ceil(task as u64);
    let (t, temp) = peerpath_io::create_temporary(&target, false).map_err(target_io(&target))?;
    let started = Instant::now();
    let clock = StageClock::default();
    let next = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let worker = || -> Result<(), (u64, JobError)> {
        let fail = |i: u64, e: JobError| {
            stop.store(true, Ordering::Relaxed);
            (i, e)
        };
        let mut xts = Xts::new(&key, dir == Direction::Encrypt).map_err(|e| fail(0, JobError::Internal(e.to_string())))?;
        let (mut input, mut output) = (vec![0u8; task], vec![0u8; task]);
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i >= tasks || stop.load(Ordering::Relaxed) {
                return Ok(());
            }
            let at = i * task as u64;
            let len = (size - at).min(task as u64) as usize;
            StageClock::time(&clock.read, || src.read_exact_at(&mut input[..len], at)).map_err(|e| {
                let detail = if e.kind() == std::io::ErrorKind::UnexpectedEof { "the source shrank while it was read".to_string() } else { e.to_string() };
                fail(i, JobError::SourceIo { path: a.source.clone(), detail })
            })?;
            StageClock::time(&clock.cipher, || xts.apply(at / sector as u64, sector, &input[..len], &mut output[..len])).map_err(|e| fail(i, JobError::Internal(e.to_string())))?;
            StageClock::time(&clock.write, || t.file.write_all_at(&output[..len], at)).map_err(|e| fail(i, target_io(&target)(e)))?;
        }
    };
    let result = (|| -> Result<(), JobError> {
        run_workers(threads.min(tasks as usize), worker)?;
        publish(&a, &src, size, &meta, &t.file, &temp, &target)
    })();
    if let Err(e) = result {
        peerpath_io::discard(&temp);
        return Err(e);
    }
    let seconds = started.elapsed().as_secs_f64();
    let report = CryptReport {
        operation: dir,
        source: a.source.clone(),
        source_bytes: name_bytes(&a.source),
        target: target.clone(),
        target_bytes: name_bytes(&target),
        algorithm: "AES-256-XTS (IEEE 1619), tweak = sector index (plain64), not authenticated",
        library: "aws-lc (aws-lc-sys)",
        block_bytes: sector as u32,
        blocks: size.div_ceil(sector as u64),
        plaintext_bytes: size,
        file_bytes: size,
        // The workers that ran: no more than the tasks, and one for an empty image.
        threads: threads.min(tasks as usize).max(1),
        seconds,
        plaintext_gb_per_s: size as f64 / seconds.max(1e-9) / 1e9,
        cipher_gb_per_s_per_core: size as f64 / clock.stages().cipher_s.max(1e-9) / 1e9,
        stages: clock.stages(),
        provenance: "measured on this host's CPU",
        engine: "the host CPU (this process): aws-lc".into(),
        fallback,
    };
    emit(&a, &report, || {
        let verb = if dir == Direction::Encrypt { "encrypted" } else { "decrypted" };
        format!(
            "{verb} {} as {} of {} with AES-256-XTS (not authenticated)",
            peerpath_metrics::human_bytes(size),
            count(report.blocks, "sector"),
            peerpath_metrics::human_bytes(sector as u64)
        )
    });
    Ok(())
}

/// Seals or opens every block on `threads` workers, each block read and
/// written at its own offsets. The first failure (lowest block index among
/// those tried) stops the others.
#[allow(clippy::too_many_arguments)]
fn transform(cipher: &FileCipher, src: &File, dst: &File, dir: Direction, threads: usize, clock: &StageClock, source: &Path, target: &Path) -> Result<(), JobError> {
    let l: Layout = *cipher.layout();
    let next = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let worker = || -> Result<(), (u64, JobError)> {
        let mut buf = vec![0u8; l.block_bytes as usize + TAG_BYTES];
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i >= l.blocks() || stop.load(Ordering::Relaxed) {
                return Ok(());
            }
            let plain = l.plain_len(i);
            let b = &mut buf[..plain + TAG_BYTES];
            let fail = |e: JobError| {
                stop.store(true, Ordering::Relaxed);
                (i, e)
            };
            let (read_from, read_len, write_at) = match dir {
                Direction::Encrypt => (l.plain_start(i), plain, l.sealed_offset(i)),
                Direction::Decrypt => (l.sealed_offset(i), plain + TAG_BYTES, l.plain_start(i)),
            };
            StageClock::time(&clock.read, || src.read_exact_at(&mut b[..read_len], read_from)).map_err(|e| {
                let detail = if e.kind() == std::io::ErrorKind::UnexpectedEof { "the source shrank while it was read".to_string() } else { e.to_string() };
                fail(JobError::SourceIo { path: source.to_path_buf(), detail })
            })?;
            let out: &[u8] = match dir {
                Direction::Encrypt => {
                    StageClock::time(&clock.cipher, || cipher.seal(i, b));
                    b
                }
                Direction::Decrypt => {
                    StageClock::time(&clock.cipher, || cipher.open_block(i, b)).map_err(|e| fail(JobError::Damaged { path: source.to_path_buf(), detail: format!("{e}; nothing was written") }))?;
                    &b[..plain]
                }
            };
            StageClock::time(&clock.write, || dst.write_all_at(out, write_at)).map_err(|e| fail(target_io(target)(e)))?;
        }
    };
    run_workers(threads.min(l.blocks() as usize), worker)
}

/// Prints the report: JSON, nothing (`--quiet`), or one line saying what was
/// done (`what`), how long it took and how fast.
fn emit(a: &CryptArgs, report: &CryptReport, what: impl FnOnce() -> String) {
    if a.json {
        println!("{}", crate::jsonout::stamped("crypt-report", report));
    } else if !a.quiet {
        let on = if report.provenance == "measured on this host's CPU" { format!("on {}", count(report.threads, "thread")) } else { report.engine.clone() };
        println!("{} -> {}: {}, {:.3} s, {:.2} GB/s {on} ({})", Quoted(&report.source), Quoted(&report.target), what(), report.seconds, report.plaintext_gb_per_s, report.provenance);
    }
}

/// Runs `worker` on `threads` threads (at least one); the failure with the
/// lowest index (block or task) among those tried is the error.
pub(crate) fn run_workers<W>(threads: usize, worker: W) -> Result<(), JobError>
where
    W: Fn() -> Result<(), (u64, JobError)> + Sync,
{
    let results: Vec<Result<(), (u64, JobError)>> = std::thread::scope(|s| {
        // Workers take tasks in turn, so fewer threads than asked (the process's or user's
        // thread limit, a cgroup's pids.max) still do the whole job, and none, this thread (a
        // panic, exit 101, left the shards' temporaries behind).
        let handles: Vec<_> = (0..threads.max(1)).map_while(|_| std::thread::Builder::new().name("peerpath-worker".into()).spawn_scoped(s, &worker).ok()).collect();
        if handles.is_empty() {
            return vec![worker()];
        }
        handles.into_iter().map(|h| h.join().expect("a worker does not panic")).collect()
    });
    match results.into_iter().filter_map(Result::err).min_by_key(|(i, _)| *i) {
        Some((_, e)) => Err(e),
        None => Ok(()),
    }
}

/// A job's source, opened and checked, its target and its threads.
struct Opened {
    target: PathBuf,
    src: File,
    meta: std::fs::Metadata,
    size: u64,
    threads: usize,
    /// The directory `-o` puts the target in, held while the job writes there.
    held: peerpath_io::OutputDir,
}

/// Resolves the target (`suffix` for the default name), checks it, and
/// opens the source, which must be a regular file or a block device (whose
/// size is its end's offset; its target must be named: it would be beside it).
fn open(a: &CryptArgs, dir: Direction, suffix: &str) -> Result<Opened, JobError> {
    let block_device = std::fs::metadata(&a.source).is_ok_and(|m| std::os::unix::fs::FileTypeExt::is_block_device(&m.file_type()));
    let target = match &a.output {
        Some(o) => o.clone(),
        None if block_device => return Err(JobError::Usage(format!("{} is a block device: name the target with --output (a file)", Quoted(&a.source)))),
        None => default_target(&a.source, dir, suffix)?,
    };
    peerpath_runtime::job::check_target(&a.source, &target, a.force, peerpath_runtime::job::Writes::FileOnly)?;
    peerpath_runtime::job::check_target_name(&target)?;
    a.key.refuse_as_target([target.as_path()])?;
    // As `plan_targets` holds it: the target has no name until it is in place, so another job
    // that made the directory and fails would find it empty and remove it under this one.
    let held = match &a.output {
        Some(_) => peerpath_io::OutputDir::hold_parent_of(&target),
        None => peerpath_io::OutputDir::default(),
    };
    crate::refuse_stream_source(&a.source, "encrypt and decrypt read files by offset")?;
    let mut src = crate::open_file_source(&a.source)?;
    let meta = src.metadata().map_err(|e| JobError::SourceUnreadable { path: a.source.clone(), source: e })?;
    crate::refuse_a_sizeless_file(&src, &meta, &a.source, if dir == Direction::Encrypt { "encrypt" } else { "decrypt" })?;
    let size = match () {
        _ if meta.is_file() => meta.len(),
        _ if std::os::unix::fs::FileTypeExt::is_block_device(&meta.file_type()) => {
            std::io::Seek::seek(&mut src, std::io::SeekFrom::End(0)).map_err(|e| JobError::SourceIo { path: a.source.clone(), detail: format!("its size: {e}") })?
        }
        _ => return Err(JobError::Usage(format!("{} is not a regular file or block device", Quoted(&a.source)))),
    };
    let threads = a.threads.map_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()), |t| t as usize);
    Ok(Opened { target, src, meta, size, threads, held })
}

/// Puts the finished temporary in place, once the source is checked to be
/// still the size it was read at: its owner and mode, the rename, the directory synced.
fn publish(a: &CryptArgs, src: &File, size: u64, meta: &std::fs::Metadata, file: &File, temp: &peerpath_io::Temporary, target: &Path) -> Result<(), JobError> {
    // `meta` is the source's at open: a change since (written in place) is refused too.
    crate::source_size_unchanged(src, &a.source, size, meta.is_file().then(|| peerpath_io::Stamp::of(meta)))?;
    peerpath_io::Inherited::of(Some(meta)).apply(file).map_err(target_io(target))?;
    crate::put_in_place(file, temp, target, a.force)?;
    File::open(peerpath_io::parent_dir(target)).and_then(|d| d.sync_all()).map_err(target_io(target))
}
