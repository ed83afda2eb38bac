//! `peerpath dedup`: a content-addressed store of files (issue 19,
//! deduplication, first part: the CPU path).
//!
//! A store is a directory: `index.sqlite` and `packs/pack-NNNNNN`. Sources
//! are cut by FastCDC and each chunk named by its BLAKE3 (or SHA-256)
//! digest (`peerpath_func::dedup`); a chunk the store does not have yet is
//! appended to the current pack, and a file is its list of digests.
//!
//! The index is SQLite (WAL, synchronous=FULL): a well-known embedded
//! database whose commits survive a crash at any instant, readable with
//! the `sqlite3` shell by anyone who must look inside. Crash rule: pack
//! bytes are written and synced before the transaction that references
//! them commits, so a killed store leaves at worst unreferenced pack bytes
//! (counted by `stats`), never a chunk referenced without its data. A run's
//! files share one transaction, committed (the pack synced first) about once
//! a second and at the end ([`store_files`]). One writer at a time (flock on
//! `DIR/lock`).
//!
//! `--compress LEVEL` keeps each new chunk as one peerpath gzip member
//! (its sizes and CRC-32 inside, decoded in parallel-friendly pieces) when
//! that is smaller than the chunk, else as it is; the index says which
//! (`codec`) and the chunk's own size, so dedup and compression ratios are
//! reported apart. Fingerprints are always of the uncompressed chunk.
//! Format 2 added those two columns, format 3 each file's permission bits
//! (`files.mode`, restored with it; none for what came through a pipe); an
//! older store is read as it is and brought to format 3 (one transaction) the
//! first time it is written (older builds then refuse it as a format they do
//! not know).
//!
//! The `successors` table (added the first time a store is written; older
//! builds ignore it) keeps, for each chunk a file stored on the host CPU had,
//! the chunk that followed it and the byte after that one: a later file much
//! like an earlier one (a new version, an edited copy) then has most of its
//! chunks found by hashing what the hint says comes next, not cut
//! (RapidCDC's checked next-chunk prediction; `peerpath_func::dedup::Successor`
//! says why the chunks are still exactly FastCDC's). Hints are only hints: a
//! wrong one costs a digest, and the recipe names the chunks as found.

use clap::{Args, Subcommand};
use peerpath_io::Stamp;
use peerpath_func::dedup::{chunks_parallel, cutting_threads, CannotStartThread, ChunkParams, Fingerprint, Successor, Successors};
use peerpath_func::dedup_store::{decode_chunk, file_mode, recipe_digests, Kept, Stored};
pub(crate) use peerpath_func::dedup_store::{GZIP_MEMBER, RAW};
use peerpath_func::{Format, Level, MemberEncoder};
use peerpath_runtime::report::{count, name_bytes, quoted_bytes, quoted_exact, Quoted, ShellWord};
use peerpath_runtime::JobError;
use rusqlite::{params, Connection, OptionalExtension};
use rustix::fs::{flock, FlockOperation};
use serde::Serialize;
use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::{FileExt, FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[path = "dedup_gc.rs"]
mod gc;

const FORMAT: &str = "peerpath-dedup/3";
/// Stores made before chunks could be compressed: no `codec` or `size` column.
const FORMAT_1: &str = "peerpath-dedup/1";
/// Stores made before files' modes were kept: no `mode` column in `files`.
const FORMAT_2: &str = "peerpath-dedup/2";
/// A pack is closed and a new one begun past this size.
const PACK_BYTES: u64 = 1 << 30;

/// [`PACK_BYTES`], or (testing aid) `PEERPATH_TEST_PACK_BYTES`: packs
/// small enough for a test to fill several.
fn pack_bytes() -> u64 {
    std::env::var("PEERPATH_TEST_PACK_BYTES").ok().and_then(|v| v.parse().ok()).unwrap_or(PACK_BYTES)
}

#[derive(Args)]
pub struct DedupArgs {
    #[command(subcommand)]
    command: DedupCommand,
}

#[derive(Args)]
struct StoreDir {
    /// The store (a directory; `store` creates it).
    #[arg(value_hint = clap::ValueHint::DirPath, long = "store", short = 's')]
    store: PathBuf,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum DedupEngine {
    Cpu,
    Emulated,
    Gpu,
}

#[derive(Subcommand)]
enum DedupCommand {
    /// Add files to the store: only chunks it does not hold yet are written.
    Store {
        /// Files to add (each stored under the name given here, or --name); `-`: standard input
        /// (with --name).
        #[arg(required = true)]
        sources: Vec<PathBuf>,
        /// Store the one SOURCE under this name instead (what `restore`, `list` and `remove` then
        /// call it): needed for `-`; wise for a pipe, whose path says nothing of it (`<(tar c DIR)`
        /// is /dev/fd/63).
        #[arg(long, value_name = "NAME")]
        name: Option<PathBuf>,
        #[command(flatten)]
        dir: StoreDir,
        /// Smallest chunk (a new store only; K, M suffixes).
        #[arg(long, value_parser = crate::parse_size)]
        min: Option<usize>,
        /// Average chunk (a new store only).
        #[arg(long, value_parser = crate::parse_size)]
        avg: Option<usize>,
        /// Largest chunk (a new store only).
        #[arg(long, value_parser = crate::parse_size)]
        max: Option<usize>,
        /// Chunk fingerprint: blake3 or sha256 (a new store only) [default: blake3].
        #[arg(long)]
        hash: Option<String>,
        /// Replace a file of the same name already in the store.
        #[arg(short, long)]
        force: bool,
        /// Where chunking and fingerprinting run: cpu; emulated (an emulated CSP: the file is
        /// read into its memory, only boundaries and digests come back, new chunks are written
        /// to the pack from its memory); or gpu (the same on a GPU with peerpath's FastCDC and
        /// BLAKE3 kernels, through its pinned host window; BLAKE3 only, no --compress).
        #[arg(long, value_enum, default_value = "cpu")]
        engine: DedupEngine,
        /// With --engine emulated or gpu: fail (exit 15) instead of chunking on the CPU when the device cannot start or fails.
        #[arg(long)]
        no_fallback: bool,
        /// With --engine gpu: which GPU [default: 0].
        #[arg(long)]
        gpu: Option<usize>,
        /// With --engine emulated or gpu: a device with commands in flight and none completing for
        /// this long (seconds) is declared hung and the host CPU chunks (or exit 15 with
        /// --no-fallback) [default: 10 for an emulated CSP, 30 for a GPU].
        #[arg(long, value_parser = crate::parse_device_timeout)]
        device_timeout: Option<std::time::Duration>,
        /// Keep each new chunk compressed (a gzip member at this level, 0-12) where that is smaller;
        /// with --engine emulated the device compresses it in its memory.
        #[arg(long, value_name = "LEVEL", value_parser = clap::value_parser!(u32).range(0..=Level::MAX as i64))]
        compress: Option<u32>,
        /// Threads chunking and fingerprinting on the CPU, each a segment of the file (the chunks are
        /// exactly those of one thread); a thread more reads ahead [default: all cores but one].
        #[arg(short = 'T', long, value_parser = clap::value_parser!(u16).range(1..=1024))]
        threads: Option<u16>,
        /// Print the report as JSON (a `dedup-store`, once the files are stored) instead of a line per file.
        #[arg(long)]
        json: bool,
        /// Print nothing but errors (fallbacks still go to standard error).
        #[arg(short, long, conflicts_with = "json")]
        quiet: bool,
    },
    /// Write a stored file out, every chunk checked against its fingerprint.
    Restore {
        /// The name it was stored under (as given to `store`).
        name: PathBuf,
        #[command(flatten)]
        dir: StoreDir,
        /// Where the file is restored ("-": standard output; a new file unless --force).
        #[arg(short = 'o', long = "output")]
        output: PathBuf,
        /// Replace an existing output.
        #[arg(short, long)]
        force: bool,
        /// Print a report as JSON (a `dedup-restore`; not with `-o -`, where the file goes).
        #[arg(long)]
        json: bool,
        /// Print nothing but errors (as without --json).
        #[arg(short, long, conflicts_with = "json")]
        quiet: bool,
    },
    /// The files in the store.
    List {
        #[command(flatten)]
        dir: StoreDir,
        /// Print them as JSON (a `dedup-list`).
        #[arg(long)]
        json: bool,
    },
    /// Logical and stored bytes, unique chunks, the deduplication ratio.
    Stats {
        #[command(flatten)]
        dir: StoreDir,
        /// Print them as JSON (a `dedup-stats`).
        #[arg(long)]
        json: bool,
    },
    /// Remove files from the store (all named, or none); `dedup gc` then takes back the space of
    /// the chunks no file refers to any more.
    Remove {
        /// The names they were stored under (as `dedup list` prints them).
        #[arg(required = true)]
        names: Vec<PathBuf>,
        #[command(flatten)]
        dir: StoreDir,
        /// Print what was removed as JSON (a `dedup-remove`).
        #[arg(long)]
        json: bool,
        /// Print nothing but errors.
        #[arg(short, long, conflicts_with = "json")]
        quiet: bool,
    },
    /// Take back the space of chunks no file refers to: packs mostly unused are rewritten (their
    /// live chunks checked and copied), packs with nothing live removed; crash-safe, and readers
    /// (restore, verify) are waited for before old packs go.
    Gc {
        #[command(flatten)]
        dir: StoreDir,
        /// Rewrite a pack when at least this share of its bytes is unused (0: every pack with any
        /// unused byte) [percent].
        #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u8).range(0..=100))]
        min_unused: u8,
        /// Say what would be done, change nothing.
        #[arg(short = 'n', long)]
        dry_run: bool,
        /// Print the report as JSON (a `dedup-gc`).
        #[arg(long)]
        json: bool,
        /// Print nothing but errors.
        #[arg(short, long, conflicts_with = "json")]
        quiet: bool,
    },
    /// Check every chunk against its fingerprint and every file's chunk list.
    Verify {
        #[command(flatten)]
        dir: StoreDir,
        /// Print nothing but errors (damage is one: exit 6).
        #[arg(short, long)]
        quiet: bool,
    },
}

pub fn main(a: DedupArgs) -> ExitCode {
    let r = match a.command {
        DedupCommand::Store { sources, name, dir, min, avg, max, hash, force, engine, no_fallback, gpu, device_timeout, compress, threads, json, quiet } => {
            let compress = compress.map(|l| Level::new(l).expect("clap checked the range"));
            let threads = threads.map_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get().saturating_sub(1).max(1)), usize::from);
            if gpu.is_some() && engine != DedupEngine::Gpu {
                Err(JobError::Usage("--gpu needs --engine gpu".into()))
            } else {
                let say = if json { Say::Json } else if quiet { Say::Nothing } else { Say::Lines };
                store(&sources, name.as_deref(), &dir.store, (min, avg, max), hash.as_deref(), force, (engine, no_fallback, gpu.unwrap_or(0), device_timeout), compress, threads, say)
            }
        }
        DedupCommand::Restore { name, dir, output, force, json, quiet: _ } => {
            if json && peerpath_runtime::job::is_std_stream(&output) {
                Err(JobError::Usage("--json prints the report on standard output, where `-o -` writes the file: restore it to a file, or drop --json".into()))
            } else {
                restore(&dir.store, &name, &output, force).map(|r| {
                    if json {
                        println!("{}", crate::jsonout::stamped("dedup-restore", &r));
                    }
                })
            }
        }
        DedupCommand::List { dir, json } => list(&dir.store, json),
        DedupCommand::Stats { dir, json } => stats(&dir.store, json),
        DedupCommand::Verify { dir, quiet } => verify(&dir.store, quiet),
        DedupCommand::Remove { names, dir, json, quiet } => gc::remove(&dir.store, &names).map(|r| match (json, quiet) {
            (true, _) => println!("{}", crate::jsonout::stamped("dedup-remove", &r)),
            (false, false) => println!("{}", r.render()),
            (false, true) => {}
        }),
        DedupCommand::Gc { dir, min_unused, dry_run, json, quiet } => gc::gc(&dir.store, min_unused, dry_run).map(|r| match (json, quiet) {
            (true, _) => println!("{}", crate::jsonout::stamped("dedup-gc", &r)),
            (false, false) => print!("{}", r.render()),
            (false, true) => {}
        }),
    };
    crate::exit_code(r)
}

/// A store's chunk sizes.
#[derive(Serialize, Default, Clone, Copy)]
struct Chunking {
    min_bytes: usize,
    avg_bytes: usize,
    max_bytes: usize,
}

impl From<ChunkParams> for Chunking {
    fn from(p: ChunkParams) -> Chunking {
        Chunking { min_bytes: p.min, avg_bytes: p.avg, max_bytes: p.max }
    }
}

/// What `dedup store` did: a line per file in text (printed as each is
/// stored), one report with `--json` (printed at the end; after a failure
/// too, where files were stored before it: they stay in the store).
#[derive(Serialize, Default)]
struct StoreReport {
    store: String,
    /// `store`'s exact bytes, where the name is not UTF-8 (as each `*_bytes` here).
    #[serde(skip_serializing_if = "Option::is_none")]
    store_bytes: Option<Vec<u8>>,
    /// The store's fingerprint and chunk sizes.
    hash: &'static str,
    chunking: Chunking,
    /// --compress: new chunks kept as gzip members at this level where that is smaller.
    compress_level: Option<u32>,
    /// The engine asked for (--engine).
    engine: &'static str,
    /// The files stored, in order.
    files: Vec<StoredFile>,
    /// Whether every source was stored; if not, `error` says what stopped the run (its exit code is the error's).
    complete: bool,
    error: Option<String>,
    /// Why files were chunked on the host CPU instead of the device asked for.
    fallbacks: Vec<String>,
}

/// One file stored.
#[derive(Serialize)]
struct StoredFile {
    /// What was read (`-`: standard input), and the name it is stored under (the source's, or --name).
    source: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    source_bytes: Option<Vec<u8>>,
    name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    name_bytes: Option<Vec<u8>>,
    bytes: u64,
    chunks: u64,
    /// Of `chunks`: found from what followed the chunk before them, in files stored before or earlier in this one (hashed, not cut).
    found_chunks: u64,
    /// Chunks the store did not hold yet (each once), their own bytes, and the bytes they take in the packs.
    new_chunks: u64,
    new_chunk_bytes: u64,
    pack_bytes: u64,
    seconds: f64,
    gb_per_s: f64,
    /// Where its chunks were cut and fingerprinted: "cpu", "emulated" or "gpu".
    engine: &'static str,
    /// On the host CPU: threads cutting and fingerprinting, and (--compress) compressing new chunks.
    threads: Option<usize>,
    compress_threads: Option<usize>,
    /// On a device: how the pass ran.
    device_pass: Option<crate::dedup_device::DevicePass>,
    provenance: &'static str,
}

impl StoredFile {
    /// The file's line of `dedup store`'s text report.
    fn render(&self, hash: &str, compress: Option<u32>) -> String {
        let how = match (&self.device_pass, self.threads) {
            (Some(d), _) => d.text(hash, compress),
            (None, threads) => {
                let compressed = compress.map_or(String::new(), |l| format!(", new chunks compressed (level {l}) on {}", count(self.compress_threads.unwrap_or(0), "thread")));
                format!("chunking + {hash} on {}{compressed}, on the host CPU", count(threads.unwrap_or(0), "thread"))
            }
        };
        let (name, source) = (quoted_exact(&self.name, self.name_bytes.as_deref()), quoted_exact(&self.source, self.source_bytes.as_deref()));
        let stored = if (&self.name, &self.name_bytes) == (&self.source, &self.source_bytes) { name.into_owned() } else { format!("{name} (from {})", if self.source == "-" { "standard input".into() } else { source }) };
        format!(
            "{stored}: {} in {}, {}{} new ({}{}); {how}: {:.2} GB/s ({})",
            peerpath_metrics::human_bytes(self.bytes),
            count(self.chunks, "chunk"),
            if self.found_chunks > 0 { format!("{} found from what followed them before (hashed, not cut), ", self.found_chunks) } else { String::new() },
            peerpath_metrics::human_bytes(self.new_chunk_bytes),
            count(self.new_chunks, "chunk"),
            if self.pack_bytes != self.new_chunk_bytes { format!(", {} in the pack", peerpath_metrics::human_bytes(self.pack_bytes)) } else { String::new() },
            self.gb_per_s,
            self.provenance
        )
    }
}

/// What `dedup restore` did (printed with `--json`; the text run says nothing).
#[derive(Serialize)]
struct RestoreReport {
    store: String,
    /// `store`'s, `name`'s and `output`'s exact bytes, where the name is not UTF-8.
    #[serde(skip_serializing_if = "Option::is_none")]
    store_bytes: Option<Vec<u8>>,
    name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    name_bytes: Option<Vec<u8>>,
    output: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_bytes: Option<Vec<u8>>,
    bytes: u64,
    chunks: u64,
    /// Chunks kept as gzip members (decoded), and the bytes read from the packs.
    compressed_chunks: u64,
    pack_bytes: u64,
    /// Every chunk was checked against its fingerprint, made with this hash.
    hash: &'static str,
    /// Threads reading, decoding and checking chunks.
    threads: usize,
    seconds: f64,
    gb_per_s: f64,
    provenance: &'static str,
}

/// What `dedup stats` says of a store.
#[derive(Serialize)]
struct StatsReport {
    store: String,
    /// `store`'s exact bytes, where the name is not UTF-8.
    #[serde(skip_serializing_if = "Option::is_none")]
    store_bytes: Option<Vec<u8>>,
    hash: &'static str,
    chunking: Chunking,
    files: u64,
    /// The stored files' bytes, and their chunks counted once per use.
    logical_bytes: u64,
    chunk_references: u64,
    /// Distinct chunks, their own bytes, and the bytes they take in the packs.
    unique_chunks: u64,
    unique_chunk_bytes: u64,
    stored_bytes: u64,
    /// Of the unique chunks, those no stored file refers to (a file replaced with `--force`
    /// leaves the chunks only it had, as `dedup remove` does: `dedup gc` takes them back), and their own bytes.
    unreferenced_chunks: u64,
    unreferenced_chunk_bytes: u64,
    /// logical / the bytes of the chunks the files refer to.
    dedup_ratio: f64,
    /// unique chunk bytes / stored (1 when no chunk is compressed), and logical / stored.
    compression_ratio: f64,
    overall_ratio: f64,
    /// Bytes in the packs no chunk refers to (left by a store or gc that was killed, or being
    /// appended by one that runs: `store_running`).
    unreferenced_pack_bytes: u64,
    /// A store held the writer lock when these figures were taken: they are its last commit's.
    store_running: bool,
}

impl StatsReport {
    fn render(&self) -> String {
        let mut t = format!("store {} ({}, chunks {}/{}/{} bytes min/avg/max)\n", quoted_exact(&self.store, self.store_bytes.as_deref()), self.hash, self.chunking.min_bytes, self.chunking.avg_bytes, self.chunking.max_bytes);
        t += &format!(
            "files: {}; logical bytes: {}; chunk references: {}; unique chunks: {} ({} bytes); stored bytes: {}\n",
            self.files, self.logical_bytes, self.chunk_references, self.unique_chunks, self.unique_chunk_bytes, self.stored_bytes
        );
        if self.unreferenced_chunks > 0 {
            t += &format!(
                "chunks no file refers to: {} ({} bytes; left by files removed or replaced with --force: {} takes back their space)\n",
                self.unreferenced_chunks,
                self.unreferenced_chunk_bytes,
                hint("gc", exact_path(&self.store, self.store_bytes.as_deref()))
            );
        }
        t += &format!("deduplication ratio: {:.3} (logical / bytes of the chunks files refer to)\n", self.dedup_ratio);
        if self.stored_bytes != self.unique_chunk_bytes {
            t += &format!("compression ratio: {:.3} (unique chunk bytes / stored); overall: {:.3} (logical / stored)\n", self.compression_ratio, self.overall_ratio);
        }
        if self.store_running {
            t += "a writer is running (store, remove or gc): these are the figures of its last commit\n";
        }
        if self.unreferenced_pack_bytes > 0 && self.store_running {
            t += &format!("pack bytes no chunk refers to yet: {} (the running writer's: a store's are indexed when it commits, a gc's old packs removed after)\n", self.unreferenced_pack_bytes);
        } else if self.unreferenced_pack_bytes > 0 {
            t += &format!("pack bytes no chunk refers to: {} (left by a store that was killed, which the next store cuts off where it appends, or by a gc that was killed: {} removes them)\n", self.unreferenced_pack_bytes, hint("gc", exact_path(&self.store, self.store_bytes.as_deref())));
        }
        t
    }
}

/// What an error of the store's index is: only what SQLite found wrong in the database itself is
/// damage (exit 6); a store that cannot be read or written (a full disk, a file size limit, a
/// read-only file, no descriptor or inode left) is said as such, and its index is not called
/// damaged (which sends users to delete a sound store).
fn db_error(dir: &Path) -> impl Fn(rusqlite::Error) -> JobError + '_ {
    use rusqlite::ErrorCode as C;
    move |e| {
        let path = dir.join("index.sqlite");
        let read = matches!(&e, rusqlite::Error::SqliteFailure(f, _) if [rusqlite::ffi::SQLITE_IOERR_READ, rusqlite::ffi::SQLITE_IOERR_SHORT_READ].contains(&f.extended_code));
        match e.sqlite_error_code() {
            // The index could not grow: a full disk (exit 11), not a damaged store (6).
            Some(C::DiskFull) => JobError::TargetIo { path, source: std::io::Error::new(std::io::ErrorKind::StorageFull, format!("No space left on device (SQLite: {e})")) },
            Some(C::SystemIoFailure) if !read => JobError::TargetIo { path, source: std::io::Error::other(format!("the store's index could not be written: {e} (a file size limit, or a failing disk?)")) },
            Some(C::ReadOnly) => JobError::TargetIo { path, source: std::io::Error::other(format!("the store's index cannot be written: {e} (its file or directory is read-only to this user?)")) },
            Some(C::SystemIoFailure | C::CannotOpen | C::PermissionDenied | C::FileLockingProtocolFailed | C::OutOfMemory) => {
                JobError::SourceUnreadable { path, source: std::io::Error::other(format!("the store's index cannot be opened or read: {e} (permissions, no file descriptor or inode left?)")) }
            }
            _ => JobError::Damaged { path, detail: format!("the store's index: {e}") },
        }
    }
}

fn target_io(path: &Path) -> impl Fn(std::io::Error) -> JobError + '_ {
    move |source| JobError::TargetIo { path: path.to_path_buf(), source }
}

/// An open store: its index, its chunking, and (for writers) its lock.
pub(crate) struct Store {
    dir: PathBuf,
    db: Connection,
    params: ChunkParams,
    fp: Fingerprint,
    /// The index's columns for a chunk's codec and size ("0", "len" in a format-1 store).
    codec_size: &'static str,
    /// The index's column for a file's permission bits ("NULL" before format 3: none kept).
    mode_column: &'static str,
    _lock: Option<File>,
    /// A reader's shared hold on the packs directory ([`gc::hold_off_gc`]).
    _readers: Option<File>,
}

impl Store {
    fn open(dir: &Path, write: bool, create: Option<(ChunkParams, Fingerprint)>) -> Result<Store, JobError> {
        let index = dir.join("index.sqlite");
        if !index.exists() && create.is_none() {
            return Err(JobError::SourceUnreadable { path: dir.to_path_buf(), source: std::io::Error::new(std::io::ErrorKind::NotFound, "not a dedup store (no index.sqlite there)") });
        }
        // An index that is not a store's (an empty file, another program's) is refused
        // before anything is made or written beside it or in it.
        if write && index.exists() {
            let format = Connection::open_with_flags(&index, rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE)
                .and_then(|db| db.query_row("SELECT value FROM meta WHERE key = 'format'", [], |r| r.get::<_, String>(0)));
            // (Where it cannot be opened to write, the writer's own open below says why.)
            let not_a_store = |e: &rusqlite::Error| matches!(e.sqlite_error_code(), Some(rusqlite::ErrorCode::NotADatabase | rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::Unknown));
            if let Err(e) = &format {
                if not_a_store(e) {
                    return Err(JobError::Damaged { path: index, detail: format!("not a dedup store's index ({e}); nothing was written") });
                }
            }
        }
        let lock = match (write, create.is_some()) {
            (true, true) => Some(lock_new(dir)?),
            (true, false) => Some(lock(dir)?),
            (false, _) => None,
        };
        if let (Some(c), false) = (create, index.exists()) {
            refuse_orphaned_packs(dir)?;
            create_index(dir, c)?;
        }
        let (db, lock, readers) = if write {
            let db = Connection::open(&index).map_err(db_error(dir))?;
            db.execute_batch(
                "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;
                 CREATE TABLE IF NOT EXISTS successors (digest BLOB PRIMARY KEY, next BLOB NOT NULL, len INTEGER NOT NULL, after INTEGER NOT NULL) WITHOUT ROWID;",
            )
            .map_err(db_error(dir))?;
            (db, lock, None)
        } else {
            let (db, shared) = open_for_reading(dir, &index)?;
            // Before the index is read: gc removes no pack this reader may be about to read.
            // (An immutable open holds the writer lock shared, which keeps gc from starting.)
            let readers = if shared.is_none() { gc::hold_off_gc(dir)? } else { None };
            (db, shared, readers)
        };
        let meta = |db: &Connection, key: &str| db.query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get::<_, String>(0)).optional();
        let bad = |what: &str| JobError::Damaged { path: index.clone(), detail: format!("the store's {what} is missing or not understood") };
        let get = |k: &str| meta(&db, k).map_err(db_error(dir))?.ok_or_else(|| bad(k));
        let (mut codec_size, mut mode_column) = ("codec, size", "mode");
        match get("format")?.as_str() {
            FORMAT => {}
            old @ (FORMAT_1 | FORMAT_2) if write => {
                // Brought to this format in one transaction: the columns each format added.
                let tx = db.unchecked_transaction().map_err(db_error(dir))?;
                if old == FORMAT_1 {
                    tx.execute_batch(&format!(
                        "ALTER TABLE chunks ADD COLUMN codec INTEGER NOT NULL DEFAULT {RAW};
                         ALTER TABLE chunks ADD COLUMN size INTEGER;
                         UPDATE chunks SET size = len;"
                    ))
                    .map_err(db_error(dir))?;
                }
                tx.execute_batch(&format!("ALTER TABLE files ADD COLUMN mode INTEGER; UPDATE meta SET value = '{FORMAT}' WHERE key = 'format';")).map_err(db_error(dir))?;
                tx.commit().map_err(db_error(dir))?;
            }
            FORMAT_1 => (codec_size, mode_column) = ("0, len", "NULL"),
            FORMAT_2 => mode_column = "NULL",
            _ => return Err(bad("format")),
        }
        let fp = Fingerprint::parse(&get("hash")?).ok_or_else(|| bad("hash"))?;
        let size = |k: &str| get(k)?.parse::<usize>().map_err(|_| bad(k));
        let params = ChunkParams::new(size("min")?, size("avg")?, size("max")?).map_err(|_| bad("chunk sizes"))?;
        Ok(Store { dir: dir.to_path_buf(), db, params, fp, codec_size, mode_column, _lock: lock, _readers: readers })
    }

    fn pack_path(&self, n: i64) -> PathBuf {
        pack_path(&self.dir, n)
    }

    /// The pack to append to and where its chunks end. Bytes past the last
    /// chunk the index knows were left by a store that was killed (one that
    /// fails undoes its appends: [`PackWriter`]); no chunk can refer to
    /// them, and this writer holds the store's lock, so they are cut off.
    fn current_pack(&self) -> Result<(i64, File, u64), JobError> {
        let last: i64 = self.db.query_row("SELECT coalesce(max(pack), 0) FROM chunks", [], |r| r.get(0)).map_err(db_error(&self.dir))?;
        let mut n = last;
        loop {
            let end: i64 = self.db.query_row("SELECT coalesce(max(offset + len), 0) FROM chunks WHERE pack = ?1", [n], |r| r.get(0)).map_err(db_error(&self.dir))?;
            let path = self.pack_path(n);
            // A pack the index has chunks in is never made here: missing, the store is damaged.
            if end == 0 {
                let packs = self.dir.join("packs");
                std::os::unix::fs::DirBuilderExt::mode(&mut std::fs::DirBuilder::new(), 0o700).recursive(true).create(&packs).map_err(target_io(&packs))?;
            }
            let f = match OpenOptions::new().create(end == 0).append(true).read(true).open(&path) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && end > 0 => {
                    return Err(JobError::Damaged { path, detail: format!("the pack is missing, but the index has chunks in it up to byte {end}: the store is damaged ({}); nothing was written", hint("verify", &self.dir)) });
                }
                r => r.map_err(target_io(&path))?,
            };
            // Appends go to the file's end (O_APPEND), which must be where the index says its chunks end.
            let len = f.metadata().map_err(target_io(&path))?.len();
            if len < end as u64 {
                return Err(JobError::Damaged { path, detail: format!("the pack is {len} bytes, but the index has chunks in it up to byte {end}: the store is damaged ({}); nothing was written", hint("verify", &self.dir)) });
            }
            if len > end as u64 {
                f.set_len(end as u64).map_err(target_io(&path))?;
            }
            if (end as u64) < pack_bytes() {
                return Ok((n, f, end as u64));
            }
            n += 1;
        }
    }

    fn chunk(&self, digest: &[u8]) -> Result<Option<Stored>, JobError> {
        // Asked once a chunk: the statement is prepared once a connection.
        let sql = format!("SELECT pack, offset, len, {} FROM chunks WHERE digest = ?1", self.codec_size);
        let mut q = self.db.prepare_cached(&sql).map_err(db_error(&self.dir))?;
        q.query_row([digest], stored_from_row).optional().map_err(db_error(&self.dir))
    }

    /// A reader of this store's chunks (one a thread: the index's connection stays here).
    fn packs(&self) -> Packs {
        Packs { dir: self.dir.clone(), max: self.params.max, fp: self.fp, open: HashMap::new(), member: Vec::new() }
    }
}

/// A store's successor hints, read by the cutting threads through a
/// connection of their own (the store's stays with its thread). Closed by
/// [`StoredSuccessors::close`] once the run's files are cut, whatever the threads
/// still hold: the store's own connection must be the last to close, so
/// that it folds the write-ahead log into the index (a read-only connection
/// closing last leaves the log, which a reader that may not write the store
/// then cannot apply). That connection does not see the store's open
/// transaction: the hints of the files stored since its last commit are kept
/// here too ([`StoredSuccessors::uncommitted`]), so a file finds those of the
/// files before it in the same run.
struct StoredSuccessors {
    db: std::sync::Mutex<Option<Connection>>,
    /// The successors the store's transaction holds, until it commits ([`Batch::commit`]).
    uncommitted: std::sync::Mutex<HashMap<[u8; 32], Successor>>,
}

impl StoredSuccessors {
    fn open(s: &Store) -> Result<StoredSuccessors, JobError> {
        use rusqlite::OpenFlags;
        let db = Connection::open_with_flags(s.dir.join("index.sqlite"), OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX).map_err(db_error(&s.dir))?;
        Ok(StoredSuccessors { db: std::sync::Mutex::new(Some(db)), uncommitted: std::sync::Mutex::default() })
    }

    /// Closes the connection now (later hints: none).
    fn close(&self) {
        drop(self.db.lock().unwrap_or_else(|e| e.into_inner()).take());
        self.committed();
    }

    /// The hints a file put into the store's transaction.
    fn put(&self, hints: impl IntoIterator<Item = ([u8; 32], Successor)>) {
        self.uncommitted.lock().unwrap_or_else(|e| e.into_inner()).extend(hints);
    }

    /// The store's transaction committed: its hints are read from the index now.
    fn committed(&self) {
        self.uncommitted.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }
}

/// Closes a store's hints when the cutting ends, however it ends ([`StoredSuccessors::close`]).
struct ClosedAtEnd(std::sync::Arc<StoredSuccessors>);

impl Drop for ClosedAtEnd {
    fn drop(&mut self) {
        self.0.close();
    }
}

impl Successors for StoredSuccessors {
    /// A row that is not one (a damaged index) is no hint; nor is any after the close.
    fn successor(&self, digest: &[u8; 32]) -> Option<Successor> {
        let guard = self.db.lock().ok()?;
        let db = guard.as_ref()?;
        if let Some(&s) = self.uncommitted.lock().ok()?.get(digest) {
            return Some(s);
        }
        let mut q = db.prepare_cached("SELECT next, len, after FROM successors WHERE digest = ?1").ok()?;
        let (next, len, after) = q.query_row([&digest[..]], |r| Ok((r.get::<_, Vec<u8>>(0)?, r.get::<_, i64>(1)?, r.get::<_, i64>(2)?))).ok()?;
        Some(Successor { digest: next.try_into().ok()?, len: usize::try_from(len).ok()?, after: u8::try_from(after).ok()? })
    }
}

/// Reads chunks back from a store's packs, keeping up to [`OPEN_PACKS`] of them open.
struct Packs {
    dir: PathBuf,
    max: usize,
    fp: Fingerprint,
    open: HashMap<i64, File>,
    /// A compressed chunk as read, before it is decoded.
    member: Vec<u8>,
}

/// Packs a reader keeps open at most (a restore has a reader a core): a store of many packs does
/// not take a descriptor each, a reader's file's chunks mostly lie in a few.
const OPEN_PACKS: usize = 16;

/// Why a chunk could not be read: the store is damaged (what is wrong with it), or its pack could
/// not be opened or read for a reason that is not the store's (no descriptor left, its
/// permissions, a failing disk), which is not called damage (that sends users to delete a sound store).
pub(crate) enum ChunkError {
    Damaged(String),
    Unreadable { path: PathBuf, source: std::io::Error },
}

impl ChunkError {
    /// As the job's error, `then` said after it (what was done, or not): a damaged store's as
    /// `damaged` makes it (exit 6), an unreadable pack's as a source that cannot be read (exit 3).
    fn into_job(self, damaged: impl FnOnce(String) -> JobError, then: &str) -> JobError {
        match self {
            ChunkError::Damaged(detail) => damaged(format!("{detail}; {then}")),
            ChunkError::Unreadable { path, source } => JobError::SourceUnreadable { path, source: std::io::Error::new(source.kind(), format!("{source}; {then}")) },
        }
    }
}

impl Packs {
    /// Appends a chunk from its pack to `out`, decoded and checked against
    /// its fingerprint (on an error `out` is as it was).
    fn read_into(&mut self, digest: &[u8], at: Stored, out: &mut Vec<u8>) -> Result<(), ChunkError> {
        let start = out.len();
        let read = self.read_at_end(at, out).and_then(|()| {
            if self.fp.digest(&out[start..]) != digest {
                return Err(ChunkError::Damaged(format!("pack {} at byte {} does not match its {} fingerprint: the store is damaged", at.pack, at.offset, self.fp.name())));
            }
            Ok(())
        });
        if read.is_err() {
            out.truncate(start);
        }
        read
    }

    /// A chunk as it lies in its pack (compressed or not), checked against its
    /// fingerprint first (decoded into `scratch` where compressed).
    fn read_checked_stored<'a>(&'a mut self, digest: &[u8], at: Stored, scratch: &'a mut Vec<u8>) -> Result<&'a [u8], ChunkError> {
        self.read_into(digest, at, scratch)?;
        Ok(if at.codec == RAW { &scratch[..] } else { &self.member[..at.len] })
    }

    /// Appends the chunk's own bytes to `out`, unchecked.
    fn read_at_end(&mut self, at: Stored, out: &mut Vec<u8>) -> Result<(), ChunkError> {
        let damaged = ChunkError::Damaged;
        at.check_sizes(self.max).map_err(damaged)?;
        let path = pack_path(&self.dir, at.pack);
        if !self.open.contains_key(&at.pack) && self.open.len() >= OPEN_PACKS {
            self.open.clear();
        }
        let pack = match self.open.entry(at.pack) {
            std::collections::hash_map::Entry::Occupied(o) => o.into_mut(),
            std::collections::hash_map::Entry::Vacant(v) => v.insert(File::open(&path).map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound => damaged(format!("pack {} cannot be opened: {e}", at.pack)),
                _ => ChunkError::Unreadable { path: path.clone(), source: e },
            })?),
        };
        let pack = &*pack;
        let start = out.len();
        let read = |buf: &mut [u8]| {
            pack.read_exact_at(buf, at.offset).map_err(|e| match e.kind() {
                std::io::ErrorKind::UnexpectedEof => damaged(format!("pack {} at byte {}: the pack ends before this chunk's {} bytes (truncated)", at.pack, at.offset, buf.len())),
                _ => ChunkError::Unreadable { path: path.clone(), source: std::io::Error::new(e.kind(), format!("at byte {}: {e}", at.offset)) },
            })
        };
        match at.kept().map_err(damaged)? {
            Kept::Raw => {
                out.resize(start + at.len, 0);
                read(&mut out[start..])
            }
            Kept::Member => {
                self.member.resize(at.len, 0);
                read(&mut self.member)?;
                out.resize(start + at.size, 0);
                decode_chunk(&self.member, &mut out[start..]).map_err(|e| damaged(format!("pack {} at byte {}: the compressed chunk does not decode: {e}", at.pack, at.offset)))
            }
        }
    }
}

/// Whether `bytes` are all zeros (compared a page at a time: the slice comparison is the C
/// library's vectorised `bcmp`).
fn all_zeros(bytes: &[u8]) -> bool {
    const ZEROS: [u8; 4096] = [0; 4096];
    bytes.chunks(ZEROS.len()).all(|piece| piece == &ZEROS[..piece.len()])
}

fn pack_path(dir: &Path, n: i64) -> PathBuf {
    dir.join("packs").join(format!("pack-{n:06}"))
}

/// A chunk's record from its row (pack, offset, len, codec, size): an integer out of range is
/// the index's error, as SQLite's own conversions say one.
fn stored_from_row(r: &rusqlite::Row) -> rusqlite::Result<Stored> {
    Stored::from_columns(r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?).map_err(|e| rusqlite::Error::IntegralValueOutOfRange(e.column, e.value))
}

/// Makes the index whole before it has its name: built under a temporary
/// name (tables and settings in one transaction), synced, then renamed to
/// `index.sqlite`, so a store killed while it is made leaves no index that
/// lacks its settings (the next writer removes the temporary). Called with
/// the writer lock held.
fn create_index(dir: &Path, params: (ChunkParams, Fingerprint)) -> Result<(), JobError> {
    let tmp = dir.join(".index.sqlite.peerpath-tmp");
    let journal = dir.join(".index.sqlite.peerpath-tmp-journal");
    let _ = std::fs::remove_file(&tmp);
    let _ = std::fs::remove_file(&journal);
    let made = make_index(dir, &tmp, params);
    if made.is_err() {
        // Nothing half made is left (a new store's directory then goes too: `undo_new_store`).
        let _ = std::fs::remove_file(&tmp);
        let _ = std::fs::remove_file(&journal);
    }
    made
}

/// [`create_index`]'s work, at `tmp`.
fn make_index(dir: &Path, tmp: &Path, (p, fp): (ChunkParams, Fingerprint)) -> Result<(), JobError> {
    {
        let db = Connection::open(tmp).map_err(db_error(dir))?;
        db.execute_batch("PRAGMA synchronous=FULL;").map_err(db_error(dir))?;
        let tx = db.unchecked_transaction().map_err(db_error(dir))?;
        tx.execute_batch(
            "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
             CREATE TABLE chunks (digest BLOB PRIMARY KEY, pack INTEGER NOT NULL, offset INTEGER NOT NULL, len INTEGER NOT NULL, codec INTEGER NOT NULL, size INTEGER NOT NULL) WITHOUT ROWID;
             CREATE TABLE files (name BLOB PRIMARY KEY, size INTEGER NOT NULL, chunks BLOB NOT NULL, stored_at INTEGER NOT NULL, mode INTEGER);",
        )
        .map_err(db_error(dir))?;
        for (k, v) in [("format", FORMAT.to_string()), ("hash", fp.name().into()), ("min", p.min.to_string()), ("avg", p.avg.to_string()), ("max", p.max.to_string())] {
            tx.execute("INSERT INTO meta VALUES (?1, ?2)", params![k, v]).map_err(db_error(dir))?;
        }
        tx.commit().map_err(db_error(dir))?;
    }
    File::open(tmp).and_then(|f| f.sync_all()).map_err(target_io(dir))?;
    std::fs::rename(tmp, dir.join("index.sqlite")).map_err(target_io(dir))?;
    File::open(dir).and_then(|d| d.sync_all()).map_err(target_io(dir))
}

/// Refuses to make a new index beside packs that hold chunks: the index
/// was lost (deleted, or never copied with the packs), and a new one would
/// leave every chunk stored so far unreachable, and be cut off by the next
/// store ([`Store::current_pack`]).
fn refuse_orphaned_packs(dir: &Path) -> Result<(), JobError> {
    let packs = dir.join("packs");
    let Ok(entries) = std::fs::read_dir(&packs) else { return Ok(()) };
    let bytes: u64 = entries.flatten().filter_map(|e| e.metadata().ok()).filter(|m| m.is_file()).map(|m| m.len()).sum();
    if bytes > 0 {
        return Err(JobError::Damaged {
            path: dir.join("index.sqlite"),
            detail: format!("the store's index is missing, but {} holds {bytes} bytes of chunks that only it can name: put index.sqlite back (from a backup), or store into another directory; nothing was written", Quoted(&packs)),
        });
    }
    Ok(())
}

/// Opens the index to read it (it is in WAL mode already: the first store
/// set it), read-write where this process may write it (SQLite then tidies
/// the log away when it closes), else read-only. Where SQLite cannot read
/// it either (the log's shared-memory file can be neither opened nor made:
/// a read-only mount, or another user's store), the index is opened as an
/// immutable file while a shared lock on the store keeps writers out
/// (they take it exclusively: [`lock`]), and that lock is returned.
fn open_for_reading(dir: &Path, index: &Path) -> Result<(Connection, Option<File>), JobError> {
    use rusqlite::OpenFlags;
    let flags = OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI;
    let usable = |db: Connection| db.query_row("SELECT count(*) FROM meta", [], |_| Ok(())).map(|()| db);
    // Without SQLITE_OPEN_CREATE: READ_WRITE falls back to read-only where the file may not be written.
    let direct = Connection::open_with_flags(index, flags | OpenFlags::SQLITE_OPEN_READ_WRITE).and_then(usable);
    let Err(e) = direct else { return Ok((direct.expect("checked"), None)) };
    let cannot_open = matches!(e.sqlite_error_code(), Some(rusqlite::ErrorCode::CannotOpen | rusqlite::ErrorCode::ReadOnly));
    if !cannot_open {
        return Err(db_error(dir)(e));
    }
    let shared = match File::open(dir.join("lock")) {
        Ok(f) => {
            // Held as long as `f` is open.
            flock(&f, FlockOperation::LockShared).map_err(|e| JobError::SourceUnreadable { path: dir.join("lock"), source: e.into() })?;
            Some(f)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None, // never written to: no writer to keep out
        Err(e) => return Err(JobError::SourceUnreadable { path: dir.join("lock"), source: e }),
    };
    // An immutable open reads the database file alone: commits still in the log would be unseen
    // (a gc's among them, whose old packs are gone). Looked at once no writer can run.
    if std::fs::metadata(dir.join("index.sqlite-wal")).is_ok_and(|m| m.len() > 0) {
        return Err(JobError::SourceUnreadable {
            path: index.to_path_buf(),
            source: std::io::Error::other(format!("{e}; and its write-ahead log holds commits that only a process that may write the store can apply: open it once where it can be written (as its owner, or read-write)")),
        });
    }
    let absolute = std::fs::canonicalize(index).map_err(|source| JobError::SourceUnreadable { path: index.to_path_buf(), source })?;
    let db = Connection::open_with_flags(format!("file:{}?immutable=1", uri_path(&absolute)), flags | OpenFlags::SQLITE_OPEN_READ_ONLY).and_then(usable).map_err(db_error(dir))?;
    Ok((db, shared))
}

/// `p` as the path of a `file:` URI (RFC 3986: bytes other than unreserved
/// characters and `/` percent-encoded).
fn uri_path(p: &Path) -> String {
    p.as_os_str().as_bytes().iter().map(|&b| if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) { (b as char).to_string() } else { format!("%{b:02X}") }).collect()
}

/// The store's directory and (a new store's: no index yet) its `packs`, each made 0700 where
/// it is not there; the directories above it with the usual mode. An existing store's missing
/// `packs` is not made here: where its index has chunks, it is damage to report, not to hide.
fn make_private_dirs(dir: &Path) -> std::io::Result<()> {
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    let new = !dir.join("index.sqlite").exists();
    for d in [Some(dir.to_path_buf()), new.then(|| dir.join("packs"))].into_iter().flatten() {
        match std::os::unix::fs::DirBuilderExt::mode(&mut std::fs::DirBuilder::new(), 0o700).create(&d) {
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && d.is_dir() => {}
            r => r?,
        }
    }
    Ok(())
}

/// Takes the store's writer lock (waits for another writer to finish).
fn lock(dir: &Path) -> Result<File, JobError> {
    let path = dir.join("lock");
    lock_once(&path)?.ok_or_else(|| JobError::TargetIo { path: path.clone(), source: std::io::Error::new(std::io::ErrorKind::NotFound, "the store was removed while this run waited for it") })
}

/// Makes the store's directories where they are not, and takes its writer
/// lock. A store begun by a run that then failed is removed with its lock
/// file ([`undo_new_store`]) by that run while it holds the lock; a run that
/// waited on that file makes the store anew.
fn lock_new(dir: &Path) -> Result<File, JobError> {
    let path = dir.join("lock");
    for _ in 0..100 {
        // A new store is its owner's alone (0700, as restic makes a repository): it holds the
        // bytes of every file stored, private ones too. An existing directory keeps its mode,
        // and so do the directories above it (made as any would be).
        make_private_dirs(dir).map_err(target_io(dir))?;
        match lock_once(&path) {
            Ok(Some(f)) => return Ok(f),
            Ok(None) => continue,
            Err(JobError::TargetIo { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        }
    }
    Err(JobError::TargetIo { path, source: std::io::Error::other("the store was removed and made again 100 times while this run waited for it") })
}

/// The writer lock on the file at `path`, or `None` where that file was
/// removed (or replaced) while this waited for it: the lock is then of no
/// use, as the next writer locks the new file. Where another writer holds
/// it, says that this run waits (as gc says it waits for readers).
fn lock_once(path: &Path) -> Result<Option<File>, JobError> {
    let f = OpenOptions::new().create(true).truncate(false).write(true).open(path).map_err(target_io(path))?;
    if flock(&f, FlockOperation::NonBlockingLockExclusive).is_err() {
        let store = path.parent().unwrap_or(path);
        eprintln!("peerpath: dedup: waiting for another writer of the store {} (a store, remove or gc: it holds {}) to finish", Quoted(store), Quoted(path));
        flock(&f, FlockOperation::LockExclusive).map_err(|e| target_io(path)(e.into()))?;
    }
    let held = f.metadata().map_err(target_io(path))?;
    Ok(std::fs::metadata(path).is_ok_and(|now| (now.dev(), now.ino()) == (held.dev(), held.ino())).then_some(f))
}

/// Removes a store that a failed run began (there was no index when it
/// began) and that holds nothing, holding its writer lock: what the run made
/// goes (`before`: which of [`NEW_STORE`] were there when it began), and
/// only where no other run has stored a file in it since (runs that began
/// at once make one store, and the one that failed must not take it from
/// the one that did not).
fn undo_new_store(dir: &Path, before: &[bool]) {
    let Ok(Some(_lock)) = lock_once(&dir.join("lock")) else { return };
    let index = dir.join("index.sqlite");
    if index.exists() {
        let files = Connection::open_with_flags(&index, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).and_then(|db| db.query_row("SELECT count(*) FROM files", [], |r| r.get::<_, i64>(0)));
        if files != Ok(0) {
            return;
        }
    }
    let chunks_in_packs = std::fs::read_dir(dir.join("packs")).map(|d| d.flatten().any(|e| e.metadata().is_ok_and(|m| m.len() > 0))).unwrap_or(false);
    if chunks_in_packs {
        return;
    }
    // The index first (a store without one is no store), the lock file last but the directory.
    let order = [1, 5, 6, 4, 3, 2, 0];
    for i in order {
        let path = dir.join(NEW_STORE[i]);
        let _ = match NEW_STORE[i] {
            _ if before[i] => Ok(()),
            "" | "packs" => std::fs::remove_dir(&path),
            _ => std::fs::remove_file(&path),
        };
    }
}

type Sizes = (Option<usize>, Option<usize>, Option<usize>);

/// Where a store chunks: the engine, `--no-fallback`, the GPU and `--device-timeout`.
type EngineChoice = (DedupEngine, bool, usize, Option<std::time::Duration>);

/// What `dedup store` prints: a line per file, one JSON report at the end, or nothing.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Say {
    Lines,
    Json,
    Nothing,
}

#[allow(clippy::too_many_arguments)]
fn store(sources: &[PathBuf], name: Option<&Path>, dir: &Path, sizes: Sizes, hash: Option<&str>, force: bool, engine: EngineChoice, compress: Option<Level>, threads: usize, say: Say) -> Result<(), JobError> {
    if engine.3.is_some() && engine.0 == DedupEngine::Cpu {
        return Err(crate::device_timeout_without_a_device());
    }
    let stdin = |s: &PathBuf| peerpath_runtime::job::is_std_stream(s);
    match name {
        Some(_) if sources.len() != 1 => return Err(JobError::Usage(format!("--name names one source, and {} are given: store them one at a time", sources.len()))),
        Some(n) if n.as_os_str().is_empty() => return Err(JobError::Usage("--name: a name is not empty".into())),
        None if sources.iter().any(stdin) => {
            return Err(JobError::Usage(format!("`-` (standard input) needs --name NAME: the name it is stored under, and restored by (`peerpath dedup store - --name NAME -s {}`)", ShellWord(dir))));
        }
        _ => {}
    }
    let d = ChunkParams::default();
    let asked = ChunkParams::new(sizes.0.unwrap_or(d.min), sizes.1.unwrap_or(d.avg), sizes.2.unwrap_or(d.max)).map_err(JobError::Usage)?;
    let fp = match hash {
        Some(h) => Fingerprint::parse(h).ok_or_else(|| JobError::Usage(format!("--hash {h}: blake3 or sha256")))?,
        None => Fingerprint::Blake3,
    };
    // A name given twice would be stored, then refused as one the store holds (exit 4, the
    // first kept): refused before any work.
    let mut names = std::collections::HashSet::new();
    if let Some(twice) = sources.iter().find(|s| !names.insert(s.as_os_str())) {
        return Err(JobError::Usage(format!("{} is named twice: a name is stored once", Quoted(twice))));
    }
    // A file of the store itself (a pack it appends to, its index) is the store's target too:
    // storing it read its own appends.
    if let Ok(store) = std::fs::canonicalize(dir) {
        if let Some(own) = sources.iter().filter(|s| !stdin(s)).find(|s| std::fs::canonicalize(s).is_ok_and(|s| s.starts_with(&store))) {
            return Err(JobError::SameFile { path: own.clone() });
        }
    }
    // Sources that cannot be opened are refused before the store is touched. A pipe is opened
    // only once, when it is stored; standard input is there already. A character device named
    // (/dev/zero, /dev/urandom, a terminal) may never end: it is read only as standard input,
    // where whoever gives it says where it ends (`head -c N /dev/urandom | ... store -`).
    for src in sources.iter().filter(|s| !stdin(s)) {
        match std::fs::metadata(src) {
            Ok(m) if m.file_type().is_fifo() => {}
            Ok(m) if m.file_type().is_char_device() => {
                return Err(JobError::Usage(format!(
                    "{} is a character device: it may never end (/dev/zero and /dev/urandom never do), so it is not read as a file: give what to store of it as standard input (`head -c SIZE {} | peerpath dedup store - --name NAME -s {}`)",
                    Quoted(src),
                    ShellWord(src),
                    ShellWord(dir)
                )));
            }
            _ => drop(crate::open_file_source(src)?),
        }
    }
    let was = |name: &str| std::fs::symlink_metadata(dir.join(name)).is_ok();
    let before: Vec<bool> = NEW_STORE.iter().map(|n| was(n)).collect();
    let mut stored = 0;
    let mut report = StoreReport {
        store: dir.display().to_string(),
        store_bytes: name_bytes(dir),
        compress_level: compress.map(|l| l.get()),
        engine: match engine.0 {
            DedupEngine::Cpu => "cpu",
            DedupEngine::Emulated => "emulated",
            DedupEngine::Gpu => "gpu",
        },
        ..StoreReport::default()
    };
    let result = store_into(sources, name, dir, (asked, fp, sizes, hash), force, engine, compress, threads, &mut stored, (&mut report, say));
    // The report, where files were stored (also before a failure, as the text's lines are).
    if say == Say::Json && (result.is_ok() || !report.files.is_empty()) {
        report.complete = result.is_ok();
        report.error = result.as_ref().err().map(|e| e.to_string());
        println!("{}", crate::jsonout::stamped("dedup-store", &report));
    }
    // A store this run began (there was no index), which failed before it kept a file, leaves
    // nothing behind (a failed store undoes its appends).
    if result.is_err() && stored == 0 && !before[1] {
        undo_new_store(dir, &before);
    }
    result
}

/// What a store's first run makes, in order ("": the directory itself).
const NEW_STORE: [&str; 7] = ["", "index.sqlite", "lock", "packs", "packs/pack-000000", "index.sqlite-wal", "index.sqlite-shm"];

#[allow(clippy::too_many_arguments)]
fn store_into(sources: &[PathBuf], name: Option<&Path>, dir: &Path, (asked, fp, sizes, hash): (ChunkParams, Fingerprint, Sizes, Option<&str>), force: bool, (engine, no_fallback, gpu, timeout): EngineChoice, compress: Option<Level>, threads: usize, stored: &mut usize, (report, say): (&mut StoreReport, Say)) -> Result<(), JobError> {
    let s = Store::open(dir, true, Some((asked, fp)))?;
    (report.hash, report.chunking) = (s.fp.name(), s.params.into());
    let fallbacks = &mut report.fallbacks;
    let custom = sizes.0.is_some() || sizes.1.is_some() || sizes.2.is_some();
    if (custom && asked != s.params) || hash.is_some_and(|_| fp != s.fp) {
        let p = s.params;
        return Err(JobError::Usage(format!("the store chunks with --min {} --avg {} --max {} and --hash {}; its sizes and hash are set when it is made", p.min, p.avg, p.max, s.fp.name())));
    }
    let mut device: Option<Box<dyn peerpath_device::Device>> = None;
    if engine != DedupEngine::Cpu {
        let kib = |b: usize| (b.is_multiple_of(1024) && b / 1024 <= u16::MAX as usize).then_some(b / 1024);
        let start = || match engine {
            DedupEngine::Gpu => crate::dedup_device::start_gpu(gpu, s.params, s.fp, compress.is_some(), timeout),
            _ => crate::dedup_device::start(s.params, compress.is_some(), timeout).map(|d| Box::new(d) as Box<dyn peerpath_device::Device>),
        };
        match (kib(s.params.min), kib(s.params.avg), kib(s.params.max)) {
            (Some(_), Some(_), Some(_)) => match start() {
                Ok(d) => device = Some(d),
                Err(why) if no_fallback => return Err(JobError::Device { detail: format!("{why} (--no-fallback)") }),
                Err(why) => fallback(fallbacks, format!("{why}: chunking on the host CPU")),
            },
            _ if no_fallback => return Err(JobError::Device { detail: "the device takes chunk sizes in whole KiB (--no-fallback)".into() }),
            _ => fallback(fallbacks, "the device takes chunk sizes in whole KiB: chunking on the host CPU".into()),
        }
    }
    let said = |file: StoredFile| {
        if say == Say::Lines {
            println!("{}", file.render(s.fp.name(), report.compress_level));
        }
        report.files.push(file);
        *stored += 1;
    };
    store_files(&s, sources, name, force, Chunker { device: device.as_deref_mut(), no_fallback, threads }, compress, &mut report.fallbacks, said)
}

/// Stores `sources` (each under its own name, or `name`) into `s`, handing each file to `said`
/// once it is committed. One pack writer, hints reader and open transaction serve them all:
/// each file's chunks and recipe go into the transaction, which is committed (its chunks'
/// bytes synced first) once it is [`COMMIT_EVERY`] old, and at the end: a store of many small
/// files pays a sync and a commit a batch, not a file. A file that fails adds nothing (what it
/// appended is cut off) and ends the run; the files before it stay.
#[allow(clippy::too_many_arguments)]
fn store_files(s: &Store, sources: &[PathBuf], name: Option<&Path>, force: bool, mut chunker: Chunker, compress: Option<Level>, fallbacks: &mut Vec<String>, mut said: impl FnMut(StoredFile)) -> Result<(), JobError> {
    let hints = ClosedAtEnd(std::sync::Arc::new(StoredSuccessors::open(s)?));
    let mut pack = PackWriter::new(s)?;
    let mut batch = Batch { tx: None, began: std::time::Instant::now(), files: Vec::new() };
    for src in sources {
        // A device that failed on an earlier file is not asked again.
        if chunker.device.as_ref().is_some_and(|d| d.failure().is_some()) {
            chunker.device = None;
        }
        if batch.tx.is_none() {
            batch = Batch { tx: Some(s.db.unchecked_transaction().map_err(db_error(&s.dir))?), began: std::time::Instant::now(), files: Vec::new() };
        }
        let mark = pack.mark();
        let one = Chunker { device: chunker.device.as_deref_mut(), ..chunker };
        match store_one(s, &mut pack, &hints, src, name, force, one, compress, fallbacks) {
            Ok(file) => batch.files.push(file),
            Err(e) => {
                // Nothing is added for it (what it appended is cut off); the files before it
                // stay, unless SQLite rolled the whole transaction back (a full disk in the
                // middle of a statement): then the batch's appends go as the writer is dropped.
                pack.cut_back(mark)?;
                if !s.db.is_autocommit() {
                    batch.commit(s, &mut pack, &hints, &mut said)?;
                }
                return Err(e);
            }
        }
        if batch.began.elapsed() >= COMMIT_EVERY {
            batch.commit(s, &mut pack, &hints, &mut said)?;
        }
    }
    batch.commit(s, &mut pack, &hints, &mut said)
}

/// A store's files are committed in batches at least this often (see [`store_into`]).
const COMMIT_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// The files stored since the last commit: their chunks and recipes are in `tx`.
struct Batch<'a> {
    tx: Option<rusqlite::Transaction<'a>>,
    began: std::time::Instant,
    files: Vec<StoredFile>,
}

impl Batch<'_> {
    /// Commits the batch, the pack's new bytes synced first (the data is durable before
    /// anything refers to it), and hands each file on to `said` (`hints` are read from the
    /// index from now on).
    fn commit(&mut self, s: &Store, pack: &mut PackWriter, hints: &ClosedAtEnd, said: &mut impl FnMut(StoredFile)) -> Result<(), JobError> {
        let Some(tx) = self.tx.take() else { return Ok(()) };
        pack.file.sync_data().map_err(target_io(&s.pack_path(pack.no)))?;
        // Kept before the commit: a commit that reports a failure may still be in SQLite's log and
        // replayed later, so its chunks stay (the next store cuts them off if it was not).
        let began = pack.kept();
        if let Err(e) = tx.commit() {
            // A full disk: SQLite wrote no commit record, and the transaction is rolled back
            // (no transaction open now), so nothing refers to the appends: they go, and the
            // space with them.
            if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DiskFull) && s.db.is_autocommit() {
                pack.not_kept(began);
            }
            return Err(db_error(&s.dir)(e));
        }
        pack.not_kept(Some(pack.mark()));
        hints.0.committed();
        self.files.drain(..).for_each(said);
        Ok(())
    }
}

/// Says a fallback on standard error and keeps it for the report.
fn fallback(fallbacks: &mut Vec<String>, why: String) {
    eprintln!("peerpath: FALLBACK: {why}");
    fallbacks.push(why);
}

/// Where a store's chunks are made: on an emulated CSP where there is one
/// (a pipe, which it cannot read by offset, falls back unless
/// `no_fallback`), else in this process on `threads` threads.
struct Chunker<'a> {
    device: Option<&'a mut (dyn peerpath_device::Device + 'static)>,
    no_fallback: bool,
    threads: usize,
}

/// Appends a run's new chunks to the store's packs. Dropped, it undoes the
/// appends the index does not refer to yet (since it began, or since the last
/// [`PackWriter::kept`]): the pack it began with is cut back to its length
/// then, and packs it began are removed, so a store that fails (a full disk)
/// leaves the store as it was.
pub(crate) struct PackWriter<'a> {
    store: &'a Store,
    no: i64,
    file: File,
    len: u64,
    /// The pack and length the appends not yet referred to began at; `None` while a commit
    /// that refers to them is under way.
    began: Option<(i64, u64)>,
    /// The current file's new chunks ([`PackWriter::begin_file`]); the store's transaction holds
    /// the earlier files'.
    pub new: HashMap<[u8; 32], Stored>,
    /// Bytes the current file appended, and its new chunks' own bytes.
    pub new_bytes: u64,
    pub new_size: u64,
}

impl<'a> PackWriter<'a> {
    /// Appends to the store's current pack.
    fn new(store: &'a Store) -> Result<PackWriter<'a>, JobError> {
        let (no, file, len) = store.current_pack()?;
        Ok(PackWriter { store, no, file, len, began: Some((no, len)), new: HashMap::new(), new_bytes: 0, new_size: 0 })
    }

    /// Where the next chunk goes: a pack and its length.
    fn mark(&self) -> (i64, u64) {
        (self.no, self.len)
    }

    /// A new file's chunks are appended from here (those before are in the store's transaction).
    fn begin_file(&mut self) {
        self.new.clear();
        (self.new_bytes, self.new_size) = (0, 0);
    }

    /// Undoes the current file's appends: back to `mark` (taken before it), packs begun since removed.
    fn cut_back(&mut self, (no, len): (i64, u64)) -> Result<(), JobError> {
        let path = self.store.pack_path(no);
        if no != self.no {
            for n in no + 1..=self.no {
                let _ = std::fs::remove_file(self.store.pack_path(n));
            }
            self.file = OpenOptions::new().append(true).open(&path).map_err(target_io(&path))?;
            self.no = no;
        }
        self.file.set_len(len).map_err(target_io(&path))?;
        self.len = len;
        self.begin_file();
        Ok(())
    }

    /// The index is about to refer to the appends so far: they stay. Gives back where they
    /// began, for [`PackWriter::not_kept`].
    fn kept(&mut self) -> Option<(i64, u64)> {
        self.began.take()
    }

    /// The appends from `began` are not referred to (the commit was rolled back whole, or
    /// they are the next batch's): undone when this is dropped.
    fn not_kept(&mut self, began: Option<(i64, u64)>) {
        self.began = began;
    }

    /// Whether the store (or this run) holds `digest` already.
    pub fn has(&self, digest: &[u8; 32]) -> Result<bool, JobError> {
        Ok(self.new.contains_key(digest) || self.store.chunk(digest)?.is_some())
    }

    /// Appends a new chunk of `size` bytes kept as `len` bytes by `codec`,
    /// handed over by `write` (at the pack's offset), rolling to a new pack
    /// past [`pack_bytes`].
    pub fn append(&mut self, digest: [u8; 32], (len, codec, size): (usize, u8, usize), write: impl FnOnce(&File, u64) -> std::io::Result<()>) -> Result<(), JobError> {
        if self.len >= pack_bytes() {
            self.file.sync_data().map_err(target_io(&self.store.pack_path(self.no)))?;
            self.no += 1;
            let path = self.store.pack_path(self.no);
            self.file = OpenOptions::new().create(true).append(true).open(&path).map_err(target_io(&path))?;
            // A pack past the index's last one holds no chunk it refers to (bytes a killed store left).
            self.file.set_len(0).map_err(target_io(&path))?;
            self.len = 0;
        }
        write(&self.file, self.len).map_err(target_io(&self.store.pack_path(self.no)))?;
        self.new.insert(digest, Stored { pack: self.no, offset: self.len, len, codec, size });
        self.len += len as u64;
        self.new_bytes += len as u64;
        self.new_size += size as u64;
        Ok(())
    }
}

impl Drop for PackWriter<'_> {
    fn drop(&mut self) {
        let Some((no, len)) = self.began else { return };
        // Best effort: what cannot be undone here is cut off by the next store.
        let _ = OpenOptions::new().write(true).open(self.store.pack_path(no)).and_then(|f| f.set_len(len));
        for n in no + 1..=self.no {
            let _ = std::fs::remove_file(self.store.pack_path(n));
        }
    }
}

/// A source's size where it has one (a regular file, a block device).
fn known_size(opened: &peerpath_io::OpenedFile) -> Option<u64> {
    match opened.kind {
        peerpath_io::SourceKind::Regular { size_bytes } | peerpath_io::SourceKind::BlockDevice { size_bytes } => Some(size_bytes),
        peerpath_io::SourceKind::Stream => None,
    }
}

/// Maps `items` on as many threads as `states` (this one among them), each
/// thread a contiguous part of them and a state of its own: the results,
/// part by part (a part's results beside its state), in order.
fn map_in_parts<T: Sync, S: Send, R: Send>(items: &[T], states: &mut [S], f: impl Fn(&T, &mut S) -> R + Sync) -> Vec<Vec<R>> {
    let per = items.len().div_ceil(states.len().max(1)).max(1);
    let f = &f;
    std::thread::scope(|sc| {
        let mut parts = items.chunks(per).zip(states.iter_mut());
        let first = parts.next();
        let others: Vec<_> = parts.map(|(part, st)| sc.spawn(move || part.iter().map(|x| f(x, st)).collect::<Vec<R>>())).collect();
        let first = first.map(|(part, st)| part.iter().map(|x| f(x, st)).collect());
        first.into_iter().chain(others.into_iter().map(|h| h.join().expect("a worker does not panic"))).collect()
    })
}

/// Chunks handed to [`keep_new`] at a time.
const BATCH: usize = 64;

/// Appends the chunks of `batch` the store does not hold yet (each once, in
/// order); with `encoders`, each as a gzip member where that is smaller, the
/// members made at once on as many threads (this one among them), each into
/// a buffer of its own kept from batch to batch.
fn keep_new(pack: &mut PackWriter, batch: &[peerpath_func::dedup::Chunk], encoders: &mut [(MemberEncoder, Vec<u8>)]) -> Result<(), JobError> {
    let mut seen = std::collections::HashSet::new();
    let mut fresh = Vec::new();
    for c in batch {
        if !pack.has(&c.digest)? && seen.insert(c.digest) {
            fresh.push(c);
        }
    }
    if encoders.is_empty() {
        for c in fresh {
            pack.append(c.digest, (c.data().len(), RAW, c.data().len()), |f, _| (&*f).write_all(c.data()))?;
        }
        return Ok(());
    }
    // Each chunk's member, as a range of its thread's buffer, where it is smaller.
    encoders.iter_mut().for_each(|(_, buf)| buf.clear());
    let members = map_in_parts(&fresh, encoders, |c, (enc, buf)| {
        let at = buf.len();
        buf.resize(at + peerpath_func::member_bound_bytes(c.data().len()), 0);
        let n = peerpath_func::encode_member(enc, Format::Gzip, c.data(), &mut buf[at..]);
        let smaller = n < c.data().len();
        buf.truncate(if smaller { at + n } else { at });
        smaller.then_some(at..at + n)
    });
    let mut fresh = fresh.into_iter();
    for (ranges, (_, buf)) in members.into_iter().zip(encoders.iter()) {
        for (range, c) in ranges.into_iter().zip(fresh.by_ref()) {
            let size = c.data().len();
            match range {
                Some(r) => pack.append(c.digest, (r.len(), GZIP_MEMBER, size), |f, _| (&*f).write_all(&buf[r]))?,
                None => pack.append(c.digest, (size, RAW, size), |f, _| (&*f).write_all(c.data()))?,
            }
        }
    }
    Ok(())
}

/// Chunks `file` on the host CPU into `pack`: the bytes read, the digests in order, and the
/// cutting threads used.
/// What a file's chunking on the host CPU gave besides its recipe: its bytes,
/// each chunk's length and first byte (for the successor hints), how many
/// chunks were found from hints, and the cutting threads.
struct CpuChunks {
    total: u64,
    shapes: Vec<(usize, u8)>,
    found: u64,
    threads: usize,
}

fn chunk_on_cpu(file: File, s: &Store, hints: &ClosedAtEnd, threads: usize, compress: Option<Level>, pack: &mut PackWriter, src: &Path) -> Result<(CpuChunks, Vec<u8>), JobError> {
    let (mut digests, mut shapes, mut total, mut found) = (Vec::new(), Vec::new(), 0u64, 0u64);
    let threads = cutting_threads(s.params, threads);
    // New chunks are compressed on the cutting threads' count and this thread.
    let mut encoders: Vec<(MemberEncoder, Vec<u8>)> = compress.map_or_else(Vec::new, |level| (0..=threads).map(|_| (MemberEncoder::new(level), Vec::new())).collect());
    let mut batch = Vec::with_capacity(BATCH);
    for c in chunks_parallel(file, s.params, s.fp, threads, Some(hints.0.clone())) {
        let c = c.map_err(|e| match e.get_ref().is_some_and(|e| e.is::<CannotStartThread>()) {
            // Not the source's fault (exit 12 said "error reading" it): as any job's thread that cannot start.
            true => JobError::Internal(format!("{e}: give fewer threads (-T)")),
            false => JobError::SourceIo { path: src.to_path_buf(), detail: e.to_string() },
        })?;
        total += c.data().len() as u64;
        found += u64::from(c.predicted);
        digests.extend_from_slice(&c.digest);
        shapes.push((c.data().len(), c.data().first().copied().unwrap_or(0)));
        batch.push(c);
        if batch.len() == BATCH {
            keep_new(pack, &batch, &mut encoders)?;
            batch.clear();
        }
    }
    keep_new(pack, &batch, &mut encoders)?;
    Ok((CpuChunks { total, shapes, found, threads }, digests))
}

/// Each chunk's successor as a file's recipe shows it (the chunk after it, and
/// the first byte of the one after that), but for the last two chunks: the
/// last was cut by the file's end, not by FastCDC.
fn successors_of<'a>(digests: &'a [u8], shapes: &'a [(usize, u8)]) -> impl Iterator<Item = ([u8; 32], Successor)> + 'a {
    let digest = |i: usize| -> [u8; 32] { digests[32 * i..32 * i + 32].try_into().expect("32 bytes") };
    (0..shapes.len().saturating_sub(2)).map(move |i| (digest(i), Successor { digest: digest(i + 1), len: shapes[i + 1].0, after: shapes[i + 2].1 }))
}

/// A regular file being stored, and its [`Stamp`] before it was read (taken on the open
/// descriptor: the file read, whatever its path names meanwhile).
struct Watched {
    file: File,
    before: Stamp,
    /// When the read began (taken after the stamp, before the first byte is read).
    read_from: std::time::SystemTime,
    /// Its permission bits, which the store keeps for restore.
    mode: u32,
}

/// Nanoseconds since the Unix epoch (a stamp's `(seconds, nanoseconds)`).
fn epoch_ns((s, ns): (i64, i64)) -> i128 {
    i128::from(s) * 1_000_000_000 + i128::from(ns)
}

fn system_time_ns(t: std::time::SystemTime) -> i128 {
    match t.duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => d.as_nanos() as i128,
        Err(e) => -(e.duration().as_nanos() as i128),
    }
}

/// How much older than a read's start a file's stamp must be for any write during the read to
/// move it. The kernel stamps a write from its coarse clock, up to a tick behind the time of the
/// write, so two ticks (`clock_getres(CLOCK_REALTIME_COARSE)`: 4 ms at HZ=250, 10 ms where it
/// cannot say); a stamp with no fraction of a second may be a file system's that keeps whole
/// seconds (FAT: two), so 2 s more.
fn stamp_margin(stamp: &Stamp) -> std::time::Duration {
    let mut res = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_getres writes one timespec, which `res` is.
    let tick = match unsafe { libc::clock_getres(libc::CLOCK_REALTIME_COARSE, &mut res) } {
        0 => std::time::Duration::new(res.tv_sec.unsigned_abs(), res.tv_nsec.clamp(0, 999_999_999) as u32),
        _ => std::time::Duration::from_millis(10),
    };
    let whole_seconds = stamp.mtime.1 == 0 && stamp.ctime.1 == 0;
    2 * tick + if whole_seconds { std::time::Duration::from_secs(2) } else { std::time::Duration::ZERO }
}

/// Whether a write during a read begun at `read_from` could leave `stamp` as it was ("racily
/// clean", as git says of such index entries): its newer time is not `margin` older than the
/// read's start, so a write within the same tick gets the same time.
fn racy(stamp: &Stamp, read_from: std::time::SystemTime, margin: std::time::Duration) -> bool {
    epoch_ns(stamp.mtime.max(stamp.ctime)) + margin.as_nanos() as i128 >= system_time_ns(read_from)
}

impl Watched {
    /// Watches `file` where it is a regular file (a pipe's or a device's times say nothing of what it gives).
    fn new(file: &File, src: &Path) -> Result<Option<Watched>, JobError> {
        let m = file.metadata().map_err(|e| JobError::SourceIo { path: src.to_path_buf(), detail: e.to_string() })?;
        // A kernel file (/proc, /sys: size 0) is made as it is read, and its times are its
        // inode's: they say nothing of its bytes (a fresh /proc/PID file read twice differs).
        if !m.is_file() || peerpath_io::sizeless(file) {
            return Ok(None);
        }
        let file = file.try_clone().map_err(|e| JobError::SourceIo { path: src.to_path_buf(), detail: e.to_string() })?;
        Ok(Some(Watched { file, before: Stamp::of(&m), read_from: std::time::SystemTime::now(), mode: m.mode() & 0o777 }))
    }

    /// An error where the file's stamp now is not what it was before it was read.
    fn unchanged(&self, src: &Path) -> Result<(), JobError> {
        let now = self.file.metadata().map_err(|e| JobError::SourceIo { path: src.to_path_buf(), detail: e.to_string() })?;
        changed_while_read(src, self.before, Stamp::of(&now))
    }

    /// Where the file's stamp is too fresh to tell a write during its read ([`racy`]), it is read
    /// again once any write would move its stamp (a wait of at most the margin) and chunked as
    /// `digests` were: other chunks, or a stamp that moved, and it changed while it was read. A
    /// file older than the margin is not read again.
    fn same_when_racy(&self, src: &Path, s: &Store, threads: usize, digests: &[u8]) -> Result<(), JobError> {
        let margin = stamp_margin(&self.before);
        if !racy(&self.before, self.read_from, margin) {
            return Ok(());
        }
        // (A stamp further ahead than the margin is the future's: stamps tell nothing then.)
        let wait = epoch_ns(self.before.mtime.max(self.before.ctime)) + margin.as_nanos() as i128 - system_time_ns(std::time::SystemTime::now());
        if wait > 0 && wait <= margin.as_nanos() as i128 {
            std::thread::sleep(std::time::Duration::from_nanos(wait as u64));
        }
        let io = |e: std::io::Error| JobError::SourceIo { path: src.to_path_buf(), detail: e.to_string() };
        let again = self.file.try_clone().map_err(io)?;
        // Read through the page cache (the device's descriptor may be O_DIRECT).
        let flags = rustix::fs::fcntl_getfl(&again).map_err(|e| io(e.into()))?;
        rustix::fs::fcntl_setfl(&again, flags - rustix::fs::OFlags::DIRECT).map_err(|e| io(e.into()))?;
        let mut read = Vec::with_capacity(digests.len());
        for c in chunks_parallel(again, s.params, s.fp, threads, None) {
            read.extend_from_slice(&c.map_err(io)?.digest);
        }
        if read != digests {
            return Err(changed(src, "its bytes differ when read again, its stamp too recent to tell"));
        }
        self.unchanged(src)
    }
}

/// The error a source whose stamp moved while it was read gets (exit 12): what was read may be
/// part old, part new, so it is not stored (nothing refers to what was appended for it).
fn changed_while_read(src: &Path, before: Stamp, after: Stamp) -> Result<(), JobError> {
    before.changes(&after).map_or(Ok(()), |what| Err(changed(src, &what)))
}

fn changed(src: &Path, what: &str) -> JobError {
    JobError::SourceIo {
        path: src.to_path_buf(),
        detail: format!("the file changed while it was being read ({what}): it was not stored, what was read may mix old and new bytes; nothing was added for it (store it again once nothing writes it)"),
    }
}

/// Standard input as a source: a regular file (`< FILE`) is read whole, by offset, as a file
/// named is; anything else in order, as a pipe.
fn open_stdin() -> Result<peerpath_io::OpenedFile, JobError> {
    let path = PathBuf::from("-");
    let unreadable = |e| JobError::SourceUnreadable { path: PathBuf::from("-"), source: e };
    let file = File::from(std::os::fd::AsFd::as_fd(&std::io::stdin()).try_clone_to_owned().map_err(unreadable)?);
    let m = file.metadata().map_err(unreadable)?;
    if m.is_dir() {
        return Err(unreadable(std::io::Error::new(std::io::ErrorKind::InvalidInput, "is a directory")));
    }
    let kind = if m.is_file() { peerpath_io::SourceKind::Regular { size_bytes: m.len() } } else { peerpath_io::SourceKind::Stream };
    Ok(peerpath_io::OpenedFile { file, path, kind, direct: false, direct_refused: Some("standard input".into()) })
}

/// Stores `src` into the store's open transaction (its recipe, its new chunks, appended to
/// `pack`, and their successors): kept once that commits ([`Batch::commit`]). On an error,
/// what it appended is the caller's to cut off ([`PackWriter::cut_back`]).
#[allow(clippy::too_many_arguments)]
fn store_one(s: &Store, pack: &mut PackWriter, hints: &ClosedAtEnd, src: &Path, name: Option<&Path>, force: bool, chunker: Chunker, compress: Option<Level>, fallbacks: &mut Vec<String>) -> Result<StoredFile, JobError> {
    let stdin = peerpath_runtime::job::is_std_stream(src);
    let named = name.unwrap_or(src);
    let exists = s.db.query_row("SELECT 1 FROM files WHERE name = ?1", [named.as_os_str().as_bytes()], |_| Ok(())).optional().map_err(db_error(&s.dir))?.is_some();
    if exists && !force {
        return Err(JobError::TargetExists { path: PathBuf::from(std::ffi::OsString::from_vec([named.as_os_str().as_bytes(), b" in the store ", s.dir.as_os_str().as_bytes()].concat())) });
    }
    let unreadable = |e| JobError::SourceUnreadable { path: src.to_path_buf(), source: e };
    pack.begin_file();
    let mark = pack.mark();
    let started = std::time::Instant::now();
    // Told from its metadata, not by opening it: a pipe refused is left to its writer.
    // (Standard input is taken for one: the device reads its sources by offset.)
    let pipe = || stdin || std::fs::metadata(src).is_ok_and(|m| !m.is_file() && !m.file_type().is_block_device() && !m.is_dir());
    if name.is_none() && pipe() {
        eprintln!("peerpath: warning: {} is a pipe: stored under the name {0}, which says nothing of what came through it (another pipe may get that path): `--name NAME` stores it under a name of its own", Quoted(src));
    }
    let device = match chunker.device {
        Some(_) if pipe() && chunker.no_fallback => {
            return Err(JobError::Device { detail: format!("{}: a pipe, and the device reads its sources by offset (--no-fallback)", Quoted(src)) });
        }
        Some(_) if pipe() => {
            fallback(fallbacks, format!("{}: a pipe, and the device reads its sources by offset: chunking on the host CPU", Quoted(src)));
            None
        }
        d => d,
    };
    let on_device = device.is_some();
    // Opened once (a FIFO must not be opened twice), with O_DIRECT for the device.
    let opened = if stdin { open_stdin()? } else { peerpath_io::open_source(src, on_device).map_err(unreadable)? };
    let size = known_size(&opened);
    let mut watched = Watched::new(&opened.file, src)?;
    let (total, digests, cpu, device_pass) = match device {
        None => {
            let (c, digests) = chunk_on_cpu(opened.file, s, hints, chunker.threads, compress, pack, src)?;
            (c.total, digests, Some(c), None)
        }
        Some(dev) => match crate::dedup_device::chunk(dev, &opened.file, (s.params, s.fp, compress), pack) {
            Ok(d) => (d.bytes, d.digests, None, Some(d.pass)),
            Err(why) if chunker.no_fallback => return Err(JobError::Device { detail: format!("{}: {why} (--no-fallback); nothing was added", Quoted(src)) }),
            Err(why) => {
                // The CPU chunks the whole file again into a fresh run: what the device
                // appended is cut off first (the pack as it began), so none of it is kept.
                fallback(fallbacks, format!("{}: the device failed ({why}): chunking the whole file on the host CPU (nothing the device appended is kept)", Quoted(src)));
                pack.cut_back(mark)?;
                let reopened = peerpath_io::open_source(src, false).map_err(unreadable)?;
                watched = Watched::new(&reopened.file, src)?;
                let (c, digests) = chunk_on_cpu(reopened.file, s, hints, chunker.threads, compress, pack, src)?;
                (c.total, digests, Some(c), None)
            }
        },
    };
    let count = digests.len() / 32;
    let size = match size {
        Some(size) if size != total => {
            return Err(JobError::SourceIo { path: src.to_path_buf(), detail: format!("read {total} bytes of a {size}-byte file: it changed while it was stored; nothing was added") });
        }
        _ => total, // a pipe is as long as what came through it
    };
    // Written to while it was read (the same size, other bytes): not stored, as tar says of it.
    // One written within a tick of the read's start may keep its stamp through a write during
    // the read: read again (that alone pays for it; an older file does not).
    if let Some(w) = &watched {
        w.unchanged(src)?;
        w.same_when_racy(src, s, chunker.threads, &digests)?;
    }
    // Into the store's open transaction, committed once the pack's bytes are synced
    // ([`Batch::commit`]); a savepoint of its own, so that a file whose rows fail half-way
    // leaves none (the files before it in the batch stay).
    s.db.execute_batch("SAVEPOINT file").map_err(db_error(&s.dir))?;
    let rows = (|| {
        let mut put = s.db.prepare_cached("INSERT OR IGNORE INTO chunks VALUES (?1, ?2, ?3, ?4, ?5, ?6)")?;
        for (digest, c) in &pack.new {
            put.execute(params![&digest[..], c.pack, c.offset as i64, c.len as i64, c.codec, c.size as i64])?;
        }
        // Chunked on the host, the chunks' first bytes are known: what followed each
        // is kept as a hint for later files (the latest file's, where chunks recur).
        if let Some(c) = &cpu {
            let mut put = s.db.prepare_cached("INSERT OR REPLACE INTO successors VALUES (?1, ?2, ?3, ?4)")?;
            for (d, n) in successors_of(&digests, &c.shapes) {
                put.execute(params![&d[..], &n.digest[..], n.len as i64, n.after])?;
            }
        }
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64);
        // A regular file's permission bits (a pipe's say nothing of what came through it).
        let mode = watched.as_ref().map(|w| w.mode);
        s.db.execute("INSERT OR REPLACE INTO files (name, size, chunks, stored_at, mode) VALUES (?1, ?2, ?3, ?4, ?5)", params![named.as_os_str().as_bytes(), size as i64, digests, now, mode])?;
        s.db.execute_batch("RELEASE file")
    })();
    if let Err(e) = rows {
        // (Where SQLite rolled the whole transaction back, a full disk, there is nothing to undo here.)
        if !s.db.is_autocommit() {
            let _ = s.db.execute_batch("ROLLBACK TO file; RELEASE file");
        }
        return Err(db_error(&s.dir)(e));
    }
    if let Some(c) = &cpu {
        hints.0.put(successors_of(&digests, &c.shapes));
    }
    let secs = started.elapsed().as_secs_f64();
    // Where the chunks were made (the CPU, where a device failed and it took over).
    let (engine, provenance) = match (device_pass.as_ref().is_some_and(|p| p.gpu), device_pass.is_some()) {
        (true, _) => ("gpu", "measured on a real accelerator (GPU)"),
        (false, true) => ("emulated", "measured on emulated devices"),
        (false, false) => ("cpu", "measured on this host's CPU"),
    };
    Ok(StoredFile {
        source: src.display().to_string(),
        source_bytes: name_bytes(src),
        name: named.display().to_string(),
        name_bytes: name_bytes(named),
        bytes: size,
        chunks: count as u64,
        found_chunks: cpu.as_ref().map_or(0, |c| c.found),
        new_chunks: pack.new.len() as u64,
        new_chunk_bytes: pack.new_size,
        pack_bytes: pack.new_bytes,
        seconds: secs,
        gb_per_s: size as f64 / secs.max(1e-9) / 1e9,
        engine,
        threads: cpu.as_ref().map(|c| c.threads),
        compress_threads: cpu.as_ref().filter(|_| compress.is_some()).map(|c| c.threads + 1),
        device_pass,
        provenance,
    })
}

fn restore(dir: &Path, name: &Path, output: &Path, force: bool) -> Result<RestoreReport, JobError> {
    let started = std::time::Instant::now();
    // The output's directory is held (a shared lock) while the file is written, as compress
    // holds it: another job that made it and fails does not remove it under this one.
    let _output_dir = (!peerpath_runtime::job::is_std_stream(output)).then(|| peerpath_io::OutputDir::hold_parent_of(output));
    let s = Store::open(dir, false, None)?;
    // One snapshot for the whole restore: a file removed and collected (`dedup gc`) meanwhile is
    // still read as it was (gc removes no pack while this holds the store: [`gc::hold_off_gc`]).
    s.db.execute_batch("BEGIN").map_err(db_error(dir))?;
    let sql = format!("SELECT size, chunks, {} FROM files WHERE name = ?1", s.mode_column);
    let row: Option<(i64, Vec<u8>, Option<i64>)> = s.db.query_row(&sql, [name.as_os_str().as_bytes()], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).optional().map_err(db_error(dir))?;
    let (size, list, stored_mode) = row.ok_or_else(|| JobError::SourceUnreadable { path: name.to_path_buf(), source: std::io::Error::new(std::io::ErrorKind::NotFound, format!("not in the store {} ({})", Quoted(dir), hint("list", dir))) })?;
    let digests = recipe_digests(&list).map_err(|e| JobError::Damaged { path: dir.to_path_buf(), detail: format!("{}: {e}; nothing was written", Quoted(name)) })?;
    let stored_mode = file_mode(stored_mode).map_err(|e| JobError::Damaged { path: dir.to_path_buf(), detail: format!("{}: {e}; nothing was written", Quoted(name)) })?;
    crate::refuse_part_of_source(output, &[], &[dir], &format!("in the store {}", Quoted(dir)))?;
    // `-o -`: standard output, in order (what reached it before a failure stays there, and the
    // error says how much); else a temporary file put in place whole.
    let to_stdout = peerpath_runtime::job::is_std_stream(output);
    peerpath_runtime::job::check_new_target(output, force, peerpath_runtime::job::Writes::FileOrStdout)?;
    // The file gets the permission bits it had when it was stored, set before it has its name.
    // Where the store kept none (a pipe's, or a store made before modes were kept), a new file
    // gets a new file's (0666 less the umask) and one replaced (--force) keeps its own mode, as
    // `cp` and the shell's `>` leave it; one replaced keeps its owner either way.
    let replaced = if force { std::fs::symlink_metadata(output).ok() } else { None };
    let kept = peerpath_io::Inherited::of(replaced.as_ref());
    let mode = peerpath_io::Inherited { times: None, mode: stored_mode.or(kept.mode), ..kept };
    let target = if to_stdout { None } else { Some(peerpath_io::create_temporary(output, false).map_err(target_io(output))?) };
    // Unbuffered, each byte that went out counted: a failed write says exactly how many did.
    let mut stdout = crate::Counted::stdout().map_err(target_io(output))?;
    // Chunks are read, decoded and checked on every core, BATCH at a time, each thread into a
    // buffer kept from batch to batch, and written in order.
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let (mut compressed_chunks, mut pack_bytes) = (0u64, 0u64);
    let written = (|| -> Result<(), JobError> {
        let mut readers: Vec<(Packs, Vec<u8>)> = (0..threads).map(|_| (s.packs(), Vec::new())).collect();
        let mut at = 0u64;
        for (b, batch) in digests.chunks(BATCH).enumerate() {
            let stored: Vec<Option<Stored>> = batch.iter().map(|d| s.chunk(d)).collect::<Result<_, _>>()?;
            for c in stored.iter().flatten() {
                compressed_chunks += u64::from(c.codec == GZIP_MEMBER);
                pack_bytes = pack_bytes.saturating_add(c.len as u64); // a damaged index may say anything
            }
            let jobs: Vec<(&[u8], Option<Stored>)> = batch.iter().map(|d| d.as_slice()).zip(stored).collect();
            // Each chunk's bytes, as a range of its thread's buffer.
            readers.iter_mut().for_each(|(_, buf)| buf.clear());
            let read = map_in_parts(&jobs, &mut readers, |&(d, stored), (packs, buf)| {
                let start = buf.len();
                packs.read_into(d, stored.ok_or_else(|| ChunkError::Damaged("missing from the index".into()))?, buf)?;
                Ok::<_, ChunkError>(start..buf.len())
            });
            let parts = read.into_iter().zip(readers.iter()).flat_map(|(ranges, (_, buf))| ranges.into_iter().map(move |r| (r, buf)));
            for (k, (range, buf)) in parts.enumerate() {
                let i = b * BATCH + k;
                let written = if to_stdout { format!("{at} bytes had reached standard output before it (they stay there)") } else { "nothing was written".into() };
                let range = range.map_err(|e| e.into_job(|detail| JobError::Damaged { path: dir.to_path_buf(), detail: format!("chunk {i} of {} (bytes {at}..): {detail}", Quoted(name)) }, &written))?;
                let bytes = &buf[range.clone()];
                match &target {
                    // A chunk of zeros is a hole of the new file (as `cp --sparse=auto` and
                    // `tar -S` leave one): its length is set at the end.
                    Some(_) if all_zeros(bytes) => {}
                    Some((t, _)) => t.file.write_all_at(bytes, at).map_err(target_io(output))?,
                    None => stdout.write_all(bytes).map_err(|e| JobError::TargetIo { path: output.to_path_buf(), source: stdout.after(e) })?,
                }
                at += range.len() as u64;
            }
        }
        if at != size as u64 {
            return Err(JobError::Damaged { path: dir.to_path_buf(), detail: format!("{}: its chunks hold {at} bytes, the index says {size}", Quoted(name)) });
        }
        match &target {
            Some((t, temp)) => t.file.set_len(at).and_then(|()| mode.apply(&t.file)).map_err(target_io(output)).and_then(|()| crate::put_in_place(&t.file, temp, output, force)),
            None => Ok(()),
        }
    })();
    if let Err(e) = written {
        if let Some((_, temp)) = &target {
            peerpath_io::discard(temp);
        }
        return Err(e);
    }
    let seconds = started.elapsed().as_secs_f64();
    Ok(RestoreReport {
        store: dir.display().to_string(),
        store_bytes: name_bytes(dir),
        name: name.display().to_string(),
        name_bytes: name_bytes(name),
        output: output.display().to_string(),
        output_bytes: name_bytes(output),
        bytes: size as u64,
        chunks: digests.len() as u64,
        compressed_chunks,
        pack_bytes,
        hash: s.fp.name(),
        threads,
        seconds,
        gb_per_s: size as f64 / seconds.max(1e-9) / 1e9,
        provenance: "measured on this host's CPU",
    })
}

/// A stored file, as `dedup list --json` gives it.
#[derive(Serialize)]
struct Listed {
    /// The name it was stored under (not UTF-8: its bytes' lossy text, and `name_hex` and
    /// `name_bytes`, as the other reports give them).
    name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    name_hex: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    name_bytes: Option<Vec<u8>>,
    bytes: u64,
    chunks: u64,
    /// When the store took it, in seconds since the Unix epoch.
    stored_at_unix_s: i64,
    /// The name's bytes, for the text listing.
    #[serde(skip)]
    raw: Vec<u8>,
}

#[derive(Serialize)]
struct ListReport {
    store: String,
    /// `store`'s exact bytes, where the name is not UTF-8.
    #[serde(skip_serializing_if = "Option::is_none")]
    store_bytes: Option<Vec<u8>>,
    files: Vec<Listed>,
}

fn list(dir: &Path, json: bool) -> Result<(), JobError> {
    let s = Store::open(dir, false, None)?;
    let mut q = s.db.prepare("SELECT name, size, length(chunks) / 32, stored_at FROM files ORDER BY name").map_err(db_error(dir))?;
    let mut rows = q.query([]).map_err(db_error(dir))?;
    let mut files = Vec::new();
    while let Some(r) = rows.next().map_err(db_error(dir))? {
        let name: Vec<u8> = r.get(0).map_err(db_error(dir))?;
        let bytes = file_size(r, 1, dir, &|| format!("the file {}", quoted_bytes(&name)))?;
        let (n, at): (u64, i64) = (r.get(2).map_err(db_error(dir))?, r.get(3).map_err(db_error(dir))?);
        let name_hex = std::str::from_utf8(&name).is_err().then(|| hex(&name));
        let name_bytes = name_bytes(Path::new(std::ffi::OsStr::from_bytes(&name)));
        files.push(Listed { name: String::from_utf8_lossy(&name).into_owned(), name_hex, name_bytes, bytes, chunks: n, stored_at_unix_s: at, raw: name });
    }
    if json {
        println!("{}", crate::jsonout::stamped("dedup-list", &ListReport { store: dir.display().to_string(), store_bytes: name_bytes(dir), files }));
    } else {
        for f in &files {
            println!("{}\t{}\t{} chunks", shell_quoted(&f.raw), f.bytes, f.chunks);
        }
    }
    Ok(())
}

/// A name as `dedup list` prints it: as it is where that is plain text on one line; else in
/// bash's `$'...'` quoting (a line break, a tab, bytes that are not UTF-8 as `\xHH`), which a
/// shell turns back into the very bytes (`dedup restore $'a\nb' ...`).
fn shell_quoted(name: &[u8]) -> String {
    let plain = std::str::from_utf8(name).ok().filter(|t| !t.chars().any(char::is_control));
    if let Some(t) = plain {
        return t.to_string();
    }
    let mut out = String::from("$'");
    for chunk in name.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '\'' => out.push_str("\\'"),
                '\n' => out.push_str("\\n"),
                '\t' => out.push_str("\\t"),
                c if c.is_control() => c.to_string().bytes().for_each(|b| out.push_str(&format!("\\x{b:02x}"))),
                c => out.push(c),
            }
        }
        chunk.invalid().iter().for_each(|b| out.push_str(&format!("\\x{b:02x}")));
    }
    out.push('\'');
    out
}

/// A shared hold on the store's writer lock, taken without waiting: `Ok(Some(f))` held (no store
/// can start while `f` is open), `Ok(None)` no lock file (never written), `Err(())` a store runs.
fn hold_off_writers(dir: &Path) -> Result<Option<File>, ()> {
    let Ok(f) = File::open(dir.join("lock")) else { return Ok(None) };
    match flock(&f, FlockOperation::NonBlockingLockShared) {
        Ok(()) => Ok(Some(f)),
        Err(rustix::io::Errno::WOULDBLOCK) => Err(()),
        Err(_) => Ok(None),
    }
}

/// An integer of a record of the index (`column` of `record`, which the error names): where it
/// is no integer, the record's damage.
fn integer(r: &rusqlite::Row, i: usize, dir: &Path, record: &dyn Fn() -> String, column: &str) -> Result<i64, JobError> {
    use rusqlite::types::ValueRef;
    match r.get_ref(i).map_err(db_error(dir))? {
        ValueRef::Integer(n) => Ok(n),
        other => Err(damaged_record(dir, record(), &format!("its {column} is {} {}", other.data_type(), match other {
            ValueRef::Real(x) => x.to_string(),
            ValueRef::Text(t) | ValueRef::Blob(t) => format!("of {} bytes", t.len()),
            _ => String::new(),
        }.trim_end()))),
    }
}

/// The command `peerpath dedup CMD -s DIR`, in backquotes, as a hint that runs as printed.
fn hint(cmd: &str, dir: &Path) -> String {
    format!("`peerpath dedup {cmd} -s {}`", ShellWord(dir))
}

/// A report's name as the path it was: `bytes` (its exact bytes) where the name is not UTF-8.
fn exact_path<'a>(name: &'a str, bytes: Option<&'a [u8]>) -> &'a Path {
    Path::new(std::ffi::OsStr::from_bytes(bytes.unwrap_or(name.as_bytes())))
}

/// A file's size (column `i` of its record, which `record` names): an integer no less than 0,
/// else the record's damage (a negative one was said as 2^64 less it).
fn file_size(r: &rusqlite::Row, i: usize, dir: &Path, record: &dyn Fn() -> String) -> Result<u64, JobError> {
    let size = integer(r, i, dir, record, "size")?;
    u64::try_from(size).map_err(|_| damaged_record(dir, record(), &format!("its size is {size}")))
}

/// A record of the index (a file, a chunk) that holds what no store writes: exit 6, naming the
/// store and the record.
fn damaged_record(dir: &Path, record: String, what: &str) -> JobError {
    JobError::Damaged { path: dir.to_path_buf(), detail: format!("{record}: {what}: the index is damaged") }
}

/// A sum of sizes the index keeps, past 2^64 (a damaged record's), said as the damage it is.
fn add(sum: u64, n: u64, dir: &Path, record: &dyn Fn() -> String, what: &str) -> Result<u64, JobError> {
    sum.checked_add(n).ok_or_else(|| damaged_record(dir, record(), &format!("with its {what} of {n}, the store's {what}s add up past 2^64")))
}

/// `bytes` in hexadecimal (a digest, a name that is not UTF-8).
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// What the index's chunks add up to (each row's integers checked: a negative or non-integer
/// length or size is its damage, named, not a wrong figure).
#[derive(Default)]
struct ChunkTotals {
    unique: u64,
    /// Their bytes in the packs, and their own.
    stored: u64,
    unique_bytes: u64,
    /// Those no stored file refers to, and their own bytes.
    unreferenced: u64,
    unreferenced_bytes: u64,
    /// Where each pack's chunks end, by the index.
    ends: std::collections::BTreeMap<i64, u64>,
}

/// The index's chunks, added up ([`ChunkTotals`]); the digests files refer to are marked first
/// ([`gc::mark_live`]).
fn chunk_totals(s: &Store) -> Result<ChunkTotals, JobError> {
    let dir = &s.dir;
    gc::mark_live(s, |detail| JobError::Damaged { path: dir.to_path_buf(), detail })?;
    let sql = format!("SELECT c.digest, pack, offset, len, {}, c.digest IN (SELECT digest FROM temp.live) FROM chunks c", s.codec_size);
    let mut q = s.db.prepare(&sql).map_err(db_error(dir))?;
    let mut rows = q.query([]).map_err(db_error(dir))?;
    let mut t = ChunkTotals::default();
    while let Some(r) = rows.next().map_err(db_error(dir))? {
        let digest: Vec<u8> = r.get(0).map_err(db_error(dir))?;
        let record = || format!("the chunk {}", hex(&digest));
        const COLUMNS: [&str; 5] = ["pack", "offset", "length", "codec", "size"];
        let column = |i: usize| integer(r, i + 1, dir, &record, COLUMNS[i]);
        let at = Stored::from_columns(column(0)?, column(1)?, column(2)?, column(3)?, column(4)?)
            .map_err(|e| damaged_record(dir, record(), &format!("its {} is {}", COLUMNS[e.column], e.value)))?;
        let live: bool = r.get(6).map_err(db_error(dir))?;
        t.unique += 1;
        t.stored = add(t.stored, at.len as u64, dir, &record, "length")?;
        t.unique_bytes = add(t.unique_bytes, at.size as u64, dir, &record, "size")?;
        if !live {
            t.unreferenced += 1;
            t.unreferenced_bytes += at.size as u64; // (a part of unique_bytes, which did not pass 2^64)
        }
        let end = at.offset.saturating_add(at.len as u64);
        t.ends.entry(at.pack).and_modify(|e| *e = end.max(*e)).or_insert(end);
    }
    Ok(t)
}

fn stats(dir: &Path, json: bool) -> Result<(), JobError> {
    // Held while the index is read and the packs are measured: a store cannot start and commit
    // or append meanwhile (its bytes would look like a killed store's); one that runs already is
    // said to, and its figures are its last commit's, read in one transaction (one snapshot).
    let held = hold_off_writers(dir);
    let store_running = held.is_err();
    let s = Store::open(dir, false, None)?;
    s.db.execute_batch("BEGIN").map_err(db_error(dir))?;
    // The files' figures, each record's size checked.
    let (mut files, mut logical, mut refs) = (0u64, 0u64, 0u64);
    {
        let mut q = s.db.prepare("SELECT name, size, length(chunks) FROM files").map_err(db_error(dir))?;
        let mut rows = q.query([]).map_err(db_error(dir))?;
        while let Some(r) = rows.next().map_err(db_error(dir))? {
            let name: Vec<u8> = r.get(0).map_err(db_error(dir))?;
            let record = || format!("the file {}", quoted_bytes(&name));
            let size = file_size(r, 1, dir, &record)?;
            files += 1;
            logical = add(logical, size, dir, &record, "size")?;
            refs += r.get::<_, Option<i64>>(2).map_err(db_error(dir))?.map_or(0, |n| n as u64 / 32);
        }
    }
    // (No packs directory: no pack bytes; the check below names what the index misses.)
    let on_disk: u64 = match std::fs::read_dir(dir.join("packs")) {
        Ok(d) => d.flatten().filter_map(|e| e.metadata().ok()).map(|m| m.len()).sum(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
        Err(source) => return Err(JobError::SourceUnreadable { path: dir.join("packs"), source }),
    };
    let chunks = chunk_totals(&s)?;
    s.db.execute_batch("COMMIT").map_err(db_error(dir))?;
    drop(held);
    let ratio = |a: u64, b: u64| a as f64 / b.max(1) as f64;
    let report = StatsReport {
        store: dir.display().to_string(),
        store_bytes: name_bytes(dir),
        hash: s.fp.name(),
        chunking: s.params.into(),
        files,
        logical_bytes: logical,
        chunk_references: refs,
        unique_chunks: chunks.unique,
        unique_chunk_bytes: chunks.unique_bytes,
        stored_bytes: chunks.stored,
        unreferenced_chunks: chunks.unreferenced,
        unreferenced_chunk_bytes: chunks.unreferenced_bytes,
        dedup_ratio: ratio(logical, chunks.unique_bytes - chunks.unreferenced_bytes),
        compression_ratio: ratio(chunks.unique_bytes, chunks.stored),
        overall_ratio: ratio(logical, chunks.stored),
        unreferenced_pack_bytes: on_disk.saturating_sub(chunks.stored),
        store_running,
    };
    if json {
        println!("{}", crate::jsonout::stamped("dedup-stats", &report));
    } else {
        print!("{}", report.render());
    }
    // The index's figures are what it says the packs hold: a pack shorter than that has lost
    // chunks (the figures above would pass it as whole).
    let short: Vec<String> = chunks
        .ends
        .iter()
        .filter_map(|(&pack, &end)| {
            let path = pack_path(dir, pack);
            let len = std::fs::metadata(&path).map_or(0, |m| m.len());
            (len < end).then(|| format!("{} holds {len} bytes, the index places chunks up to byte {end}", Quoted(&path)))
        })
        .collect();
    match short.is_empty() {
        true => Ok(()),
        false => Err(JobError::Damaged { path: dir.to_path_buf(), detail: format!("packs shorter than the index says: {} ({} names the chunks lost)", short.join("; "), hint("verify", dir)) }),
    }
}

fn verify(dir: &Path, quiet: bool) -> Result<(), JobError> {
    let s = Store::open(dir, false, None)?;
    // The index's own pages (SQLite's quick check): a damaged page that the queries below do not
    // happen to read (a later store's or remove's write does) was no damage to verify.
    let mut q = s.db.prepare("PRAGMA quick_check").map_err(db_error(dir))?;
    let checked: Vec<String> = q.query_map([], |r| r.get(0)).map_err(db_error(dir))?.collect::<Result<_, _>>().map_err(db_error(dir))?;
    let found: Vec<&str> = checked.iter().flat_map(|r| r.lines()).filter(|l| *l != "ok" && !l.starts_with("*** ")).collect();
    let mut bad = Vec::new();
    if let Some(first) = found.first() {
        bad.push(format!("the index {} is damaged (SQLite's quick_check: {first}; {} in all)", Quoted(&dir.join("index.sqlite")), count(found.len(), "finding")));
    }
    let (mut packs, mut chunk) = (s.packs(), Vec::new());
    let mut q = s.db.prepare(&format!("SELECT pack, offset, len, {}, digest FROM chunks", s.codec_size)).map_err(db_error(dir))?;
    let rows = q.query_map([], |r| Ok((stored_from_row(r)?, r.get::<_, Vec<u8>>(5)?))).map_err(db_error(dir))?;
    let mut n = 0u64;
    for r in rows {
        let (at, digest) = r.map_err(db_error(dir))?;
        n += 1;
        chunk.clear();
        match packs.read_into(&digest, at, &mut chunk) {
            Err(ChunkError::Damaged(why)) => bad.push(why),
            // Not the store's fault: said at once, as that (not each chunk of the pack as damaged).
            Err(ChunkError::Unreadable { path, source }) => return Err(JobError::SourceUnreadable { path, source }),
            Ok(()) => {}
        }
    }
    let mut q = s.db.prepare("SELECT name, size, chunks FROM files").map_err(db_error(dir))?;
    let rows = q.query_map([], |r| Ok((r.get::<_, Vec<u8>>(0)?, r.get::<_, i64>(1)?, r.get::<_, Vec<u8>>(2)?))).map_err(db_error(dir))?;
    for r in rows {
        let (name, size, list) = r.map_err(db_error(dir))?;
        let name = quoted_bytes(&name);
        let digests = match recipe_digests(&list) {
            Ok(digests) => digests,
            Err(e) => {
                bad.push(format!("{name}: {e}"));
                continue;
            }
        };
        let held: Option<Vec<Stored>> = digests.iter().map(|d| s.chunk(d).ok().flatten()).collect();
        match held {
            None => bad.push(format!("{name} refers to a chunk the store does not hold")),
            Some(chunks) => {
                // Sizes from a damaged index may be anything: a sum past u64 is damage too.
                let total = chunks.iter().try_fold(0u64, |sum, c| sum.checked_add(c.size as u64));
                if total.and_then(|t| i64::try_from(t).ok()) != Some(size) {
                    let held = total.map_or_else(|| "more than 2^64".to_string(), |t| t.to_string());
                    bad.push(format!("{name}: its chunks hold {held} bytes, the index says {size}"));
                }
            }
        }
    }
    if bad.is_empty() {
        if !quiet {
            println!("{}: {} {}; every file's chunks are there", Quoted(dir), count(n, "chunk"), if n == 1 { "matches its fingerprint" } else { "match their fingerprints" });
        }
        Ok(())
    } else {
        Err(JobError::Damaged { path: dir.to_path_buf(), detail: summary(&bad) })
    }
}

/// `bad` in one line: the same problem once, with how often it was met
/// (a missing pack is met by each of its chunks), the first ten kinds in full.
fn summary(bad: &[String]) -> String {
    let mut kinds: Vec<(&str, usize)> = Vec::new();
    for b in bad {
        match kinds.iter_mut().find(|(k, _)| k == b) {
            Some((_, n)) => *n += 1,
            None => kinds.push((b, 1)),
        }
    }
    let mut parts: Vec<String> = kinds.iter().take(10).map(|(k, n)| if *n > 1 { format!("{k} (x{n})") } else { k.to_string() }).collect();
    if kinds.len() > 10 {
        parts.push(format!("and {} more", kinds.len() - 10));
    }
    format!("{}: {}", count(bad.len(), "problem"), parts.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// `dedup list` prints a name that is not one plain line so that bash gives back its bytes.
    #[test]
    fn names_are_listed_as_bash_reads_them_back() {
        for name in [&b"plain name.fa"[..], b"a\nb", b"tab\there", b"n\xffx", b"it's \\ here\n", "ünï\u{7}".as_bytes()] {
            let q = shell_quoted(name);
            assert!(!q.contains('\n') && !q.contains('\t'), "{q}");
            let back = std::process::Command::new("bash").arg("-c").arg(format!("printf %s {q}")).output().expect("bash");
            let want = if name == b"plain name.fa" { b"plainname.fa".to_vec() } else { name.to_vec() };
            // A plain name with a space is printed as it is (one line, tab-separated): not for pasting.
            assert_eq!(back.stdout, want, "{q}");
        }
    }

    /// The device pass on a CPU device whose memory is staged (as a GPU's:
    /// blocks read into a window, copied to its own memory by the device,
    /// results and new chunks copied back) or mapped whole (as an emulated
    /// CSP's): the CPU oracle's digests, and every new chunk's bytes in the pack.
    #[test]
    fn the_device_pass_gives_the_oracles_chunks_staged_or_mapped() {
        let p = ChunkParams::new(4096, 16384, 65536).unwrap();
        // 9 MiB: three 4 MiB blocks' worth with carries, a repeated stretch (duplicates).
        let mut data = crate::device_job::testing::xorshift(5 << 20, 4);
        data.extend_from_within(1 << 20..3 << 20);
        data.extend(crate::device_job::testing::xorshift((2 << 20) + 12345, 5));
        let want: Vec<u8> = peerpath_func::dedup::chunk_digests(&data, p, Fingerprint::Blake3, true).iter().flat_map(|c| c.2).collect();
        for staged in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let src = dir.path().join("src");
            std::fs::write(&src, &data).unwrap();
            let s = Store::open(&dir.path().join("store"), true, Some((p, Fingerprint::Blake3))).unwrap();
            let mut pack = PackWriter::new(&s).unwrap();
            let mut dev = crate::device_job::testing::cpu_device(staged, crate::dedup_device::memory_bytes(p));
            let file = std::fs::File::open(&src).unwrap();
            let got = crate::dedup_device::chunk(&mut dev, &file, (p, Fingerprint::Blake3, None), &mut pack).unwrap();
            assert_eq!(got.bytes, data.len() as u64);
            assert!(got.digests == want, "staged {staged}: the device's digests are the oracle's");
            // Each new chunk in the pack is the bytes its digest names (the repeat stored once).
            let packed = std::fs::read(s.pack_path(pack.no)).unwrap();
            assert!(pack.new.len() < want.len() / 32, "staged {staged}: duplicates are kept once");
            for (digest, c) in &pack.new {
                assert_eq!(&Fingerprint::Blake3.digest(&packed[c.offset as usize..][..c.len]), digest, "staged {staged}");
            }
        }
    }

    /// A device that fails in the middle of a file (after some of its chunks were appended):
    /// the CPU chunks the whole file again, said in the fallbacks, the file's engine is the
    /// CPU's, and the store is the one the CPU alone makes (nothing the device appended kept);
    /// with --no-fallback the store fails with nothing added.
    #[test]
    fn a_device_that_fails_mid_file_hands_the_file_to_the_cpu_and_nothing_it_appended_is_kept() {
        let p = ChunkParams::new(4096, 16384, 65536).unwrap();
        let data = crate::device_job::testing::xorshift((9 << 20) + 77, 8);
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("src");
        std::fs::write(&src, &data).unwrap();
        let cpu = Store::open(&dir.path().join("cpu"), true, Some((p, Fingerprint::Blake3))).unwrap();
        store_files(&cpu, std::slice::from_ref(&src), None, false, Chunker { device: None, no_fallback: false, threads: 2 }, None, &mut Vec::new(), drop).unwrap();
        for no_fallback in [false, true] {
            let s = Store::open(&dir.path().join(format!("dev-{no_fallback}")), true, Some((p, Fingerprint::Blake3))).unwrap();
            let mut faults = peerpath_device::FaultConfig::seeded(3);
            // The second block's command: the first block's new chunks are in the pack by then.
            faults.crash_after_submissions = Some(2);
            let mut dev = peerpath_device::FaultyDevice::new(crate::device_job::testing::cpu_device(false, crate::dedup_device::memory_bytes(p)), faults);
            let mut fallbacks = Vec::new();
            let mut files = Vec::new();
            let stored = store_files(&s, std::slice::from_ref(&src), None, false, Chunker { device: Some(&mut dev), no_fallback, threads: 2 }, None, &mut fallbacks, |f| files.push(f));
            if no_fallback {
                let e = stored.expect_err("--no-fallback: the store fails").to_string();
                assert!(e.contains("--no-fallback") && e.contains("nothing was added"), "{e}");
                assert_eq!(std::fs::metadata(s.pack_path(0)).map_or(0, |m| m.len()), 0, "nothing the device appended is left");
                continue;
            }
            stored.unwrap();
            let f = &files[0];
            assert!(fallbacks.iter().any(|w| w.contains("the device failed") && w.contains("chunking the whole file on the host CPU")), "{fallbacks:?}");
            assert_eq!((f.engine, f.device_pass.is_none(), f.bytes), ("cpu", true, data.len() as u64));
            assert!(std::fs::read(s.pack_path(0)).unwrap() == std::fs::read(cpu.pack_path(0)).unwrap(), "the CPU's store, byte for byte");
        }
    }

    /// A finished store has folded its write-ahead log into the index whatever its cutting
    /// threads still hold (they read hints through a connection of their own, which must not
    /// be the last to close): its index alone holds every file, and a reader that may not
    /// write it restores (a read-only copy of the index and packs; the CLI's store ends its
    /// process right after, with the threads' connection open, which is what this runs into).
    #[test]
    fn a_finished_store_leaves_no_write_ahead_log() {
        let part: Vec<u8> = (0..300_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8).collect();
        let data = [&part[..], &part[..], &part[..50_000]].concat();
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("src");
        std::fs::write(&src, &data).unwrap();
        for round in 0..12 {
            let st = dir.path().join(format!("st{round}"));
            store(std::slice::from_ref(&src), None, &st, (Some(1024), Some(4096), Some(16384)), None, false, (DedupEngine::Cpu, false, 0, None), None, 2, Say::Lines).unwrap();
            let wal = std::fs::metadata(st.join("index.sqlite-wal")).map_or(0, |m| m.len());
            assert_eq!(wal, 0, "round {round}: the log left with {wal} bytes");
            // The index file alone, as a copy without the log is read.
            let db = Connection::open_with_flags(st.join("index.sqlite"), rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
            let files: i64 = db.query_row("SELECT count(*) FROM files", [], |r| r.get(0)).unwrap();
            assert_eq!(files, 1, "round {round}: the file is in the index itself");
        }
    }

    /// A chunk's row that is no place (a negative offset) and a recipe cut inside a digest are
    /// damage on every path that reads them (exit 6), said alike: a negative offset was read
    /// at byte 2^64 - 5 (EINVAL: "cannot read source", exit 3), and gc went on past a recipe
    /// that restore refused as a chunk missing from the index.
    #[test]
    fn rows_and_recipes_no_store_writes_are_damage_on_every_path() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("src");
        std::fs::write(&src, (0..100_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect::<Vec<u8>>()).unwrap();
        let damages = [
            ("UPDATE chunks SET offset = -5 WHERE offset = 0", "the store's index: Integer -5 out of range at index 1"),
            ("UPDATE files SET chunks = substr(chunks, 1, length(chunks) - 3)", "not a whole number of 32-byte digests: the index is damaged"),
        ];
        for (i, (damage, said)) in damages.into_iter().enumerate() {
            let st = dir.path().join(format!("st{i}"));
            store(std::slice::from_ref(&src), None, &st, (Some(1024), Some(4096), Some(16384)), None, false, (DedupEngine::Cpu, false, 0, None), None, 2, Say::Lines).unwrap();
            Connection::open(st.join("index.sqlite")).unwrap().execute(damage, []).unwrap();
            let out = dir.path().join("out");
            for (what, e) in [("restore", restore(&st, &src, &out, false).err()), ("verify", verify(&st, true).err()), ("gc", gc::gc(&st, 0, false).err())] {
                let e = e.unwrap_or_else(|| panic!("{damage}: {what} took it"));
                assert!(e.exit_code() == 6 && e.to_string().contains(said), "{damage}: {what}: {e}");
            }
            assert!(!out.exists());
        }
    }

    /// The same, deterministically: a cutting thread that still holds the hints when the file
    /// is cut (as one may, for a moment, after sending its last chunk) no longer keeps their
    /// connection open, so the store's own closes last and folds the log into the index.
    #[test]
    fn hints_a_thread_still_holds_are_closed_when_the_cutting_ends() {
        let p = ChunkParams::new(1024, 4096, 16384).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("src");
        std::fs::write(&src, crate::device_job::testing::xorshift(200_000, 3)).unwrap();
        let st = dir.path().join("st");
        let s = Store::open(&st, true, Some((p, Fingerprint::Blake3))).unwrap();
        let hints = ClosedAtEnd(std::sync::Arc::new(StoredSuccessors::open(&s).unwrap()));
        assert!(hints.0.successor(&[0; 32]).is_none(), "a read through its own connection");
        let lingering = hints.0.clone();
        let mut pack = PackWriter::new(&s).unwrap();
        let mut batch = Batch { tx: Some(s.db.unchecked_transaction().unwrap()), began: std::time::Instant::now(), files: Vec::new() };
        batch.files.push(store_one(&s, &mut pack, &hints, &src, None, false, Chunker { device: None, no_fallback: false, threads: 2 }, None, &mut Vec::new()).unwrap());
        batch.commit(&s, &mut pack, &hints, &mut drop).unwrap();
        drop((batch, pack, hints));
        assert!(lingering.successor(&[0; 32]).is_none(), "no hint after the close");
        drop(s);
        let wal = std::fs::metadata(st.join("index.sqlite-wal")).map_or(0, |m| m.len());
        assert_eq!(wal, 0, "the log folded into the index while a thread still held the hints");
        drop(lingering);
    }

    /// A regular file whose size, modification or status-change time moved between the stamp
    /// taken before it was read and the one after is said to have changed while it was read
    /// (exit 12, naming it and what moved); one untouched is not; a pipe is not watched.
    #[test]
    fn a_file_whose_stamp_moved_while_it_was_read_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("src");
        std::fs::write(&src, b"some bytes").unwrap();
        let f = File::open(&src).unwrap();
        let w = Watched::new(&f, &src).unwrap().expect("a regular file is watched");
        w.unchanged(&src).expect("untouched");
        // Written to with the same size: the modification time moves (set here, as `touch -d` does).
        let t = std::time::UNIX_EPOCH + std::time::Duration::new(1_000_000_000, 123_456_789);
        OpenOptions::new().write(true).open(&src).unwrap().set_modified(t).unwrap();
        let e = w.unchanged(&src).expect_err("changed");
        let text = e.to_string();
        assert_eq!(e.exit_code(), 12, "{text}");
        assert!(text.contains(&src.display().to_string()) && text.contains("changed while it was being read") && text.contains("modification time") && text.contains("-> 1000000000.123456789"), "{text}");
        assert!(text.contains("not stored") && !text.contains("size "), "{text}");
        // Each part of the stamp alone counts.
        let before = Stamp { size: 10, mtime: (5, 1), ctime: (5, 1) };
        for (after, says) in [(Stamp { size: 11, ..before }, "size 10 -> 11 bytes"), (Stamp { ctime: (5, 2), ..before }, "status-change time 5.000000001 -> 5.000000002"), (Stamp { mtime: (6, 1), ..before }, "modification time")] {
            let e = changed_while_read(&src, before, after).expect_err(says).to_string();
            assert!(e.contains(says), "{e}");
        }
        changed_while_read(&src, before, before).unwrap();
        // A pipe's times say nothing of what it gives: not watched.
        let (r, _w) = std::io::pipe().unwrap();
        let r = File::from(std::os::fd::OwnedFd::from(r));
        assert!(Watched::new(&r, Path::new("/dev/fd/63")).unwrap().is_none());
    }

    /// A stamp is racy where its newer time (modification or status change) is not `margin`
    /// older than the read's start: a write within that tick may keep it. Older is not; a stamp
    /// from the future is; a whole-second stamp needs seconds more.
    #[test]
    fn a_stamp_within_a_tick_of_the_read_is_racy() {
        let at = |s: u64, ns: u32| std::time::UNIX_EPOCH + std::time::Duration::new(s, ns);
        let ms = std::time::Duration::from_millis;
        let stamp = |m: (i64, i64), c: (i64, i64)| Stamp { size: 1, mtime: m, ctime: c };
        let read = at(1_000, 500_000_000);
        for (what, st, margin, is) in [
            ("old", stamp((999, 0), (999, 1)), ms(8), false),
            ("just older than the margin", stamp((1_000, 491_999_999), (1_000, 491_999_999)), ms(8), false),
            ("at the margin", stamp((1_000, 492_000_000), (1_000, 1)), ms(8), true),
            ("same tick", stamp((1_000, 500_000_000), (1_000, 500_000_000)), ms(8), true),
            ("its status change recent", stamp((900, 0), (1_000, 499_000_000)), ms(8), true),
            ("from the future", stamp((2_000, 0), (2_000, 0)), ms(8), true),
            ("before the epoch", stamp((-5, 0), (-5, 0)), ms(8), false),
        ] {
            assert_eq!(racy(&st, read, margin), is, "{what}");
        }
        assert!(racy(&stamp((1_000, 400_000_000), (1_000, 400_000_000)), read, ms(200)), "a wider margin");
        // The margin: two ticks of the coarse clock, at least 2 s more for whole seconds.
        let fine = stamp_margin(&stamp((5, 1), (5, 0)));
        assert!(fine > std::time::Duration::ZERO && fine < std::time::Duration::from_secs(1), "{fine:?}");
        assert_eq!(stamp_margin(&stamp((5, 0), (5, 0))), fine + std::time::Duration::from_secs(2));
    }

    /// A file whose stamp is racy is read again and its chunks compared: other bytes under the
    /// same stamp (a write in the read's tick) are refused as changed while read (exit 12); the
    /// same bytes pass; an old stamp is not read again (the common case pays nothing).
    #[test]
    fn a_racy_file_is_read_again_and_refused_where_its_bytes_differ() {
        let p = ChunkParams::new(1024, 4096, 16384).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("src");
        let old = crate::device_job::testing::xorshift(100_000, 3);
        let mut new = old.clone();
        new[70_000] ^= 1;
        let s = Store::open(&dir.path().join("st"), true, Some((p, Fingerprint::Blake3))).unwrap();
        let digests = |data: &[u8]| {
            std::fs::write(&src, data).unwrap();
            chunks_parallel(File::open(&src).unwrap(), p, Fingerprint::Blake3, 2, None).flat_map(|c| c.unwrap().digest).collect::<Vec<u8>>()
        };
        let (read, now) = (digests(&old), digests(&new));
        assert_ne!(read, now);
        let f = File::open(&src).unwrap();
        let stamp = Stamp::of(&f.metadata().unwrap());
        // What the first read gave (`read`), the file now holding other bytes with the stamp it had.
        let when = |from: std::time::SystemTime| Watched { file: f.try_clone().unwrap(), before: stamp, read_from: from, mode: 0o644 };
        let stamped = std::time::UNIX_EPOCH + std::time::Duration::new(stamp.mtime.0 as u64, stamp.mtime.1 as u32);
        let e = when(stamped).same_when_racy(&src, &s, 2, &read).expect_err("racy, other bytes");
        let text = e.to_string();
        assert_eq!(e.exit_code(), 12, "{text}");
        assert!(text.contains(&src.display().to_string()) && text.contains("changed while it was being read") && text.contains("differ when read again"), "{text}");
        when(stamped).same_when_racy(&src, &s, 2, &now).expect("racy, the same bytes");
        when(stamped + std::time::Duration::from_secs(60)).same_when_racy(&src, &s, 2, &read).expect("an old stamp: not read again");
    }

    /// A store's files (its index and packs), by path within it.
    type StoreFiles = Vec<(PathBuf, Vec<u8>)>;

    /// Two stores of one source, plain and compressed, with the source's
    /// name and bytes: made once and kept in memory (a static is never
    /// dropped: a directory kept in one was left behind by every run),
    /// written out per case.
    fn made() -> &'static (StoreFiles, StoreFiles, PathBuf, Vec<u8>) {
        static MADE: std::sync::OnceLock<(StoreFiles, StoreFiles, PathBuf, Vec<u8>)> = std::sync::OnceLock::new();
        MADE.get_or_init(|| {
            let dir = tempfile::tempdir().unwrap();
            let src = dir.path().join("src");
            // Varied bytes with repeats: several chunks, some shared.
            let part: Vec<u8> = (0..70_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
            let data = [&part[..], &part[..], &part[..20_000]].concat();
            std::fs::write(&src, &data).unwrap();
            let [plain, compressed] = [None, Some(Level::new(1).unwrap())].map(|compress| {
                let st = dir.path().join(if compress.is_some() { "compressed" } else { "plain" });
                store(std::slice::from_ref(&src), None, &st, (Some(1024), Some(4096), Some(16384)), None, false, (DedupEngine::Cpu, false, 0, None), compress, 2, Say::Lines).unwrap();
                let packs = std::fs::read_dir(st.join("packs")).unwrap().map(|e| Path::new("packs").join(e.unwrap().file_name()));
                std::iter::once(PathBuf::from("index.sqlite")).chain(packs).map(|f| (f.clone(), std::fs::read(st.join(f)).unwrap())).collect()
            });
            // The name restore asks for (the file need not exist).
            (plain, compressed, src, data)
        })
    }

    fn copy_store(files: &StoreFiles, to: &Path) {
        std::fs::create_dir_all(to.join("packs")).unwrap();
        for (f, bytes) in files {
            std::fs::write(to.join(f), bytes).unwrap();
        }
    }

    /// A value of any type SQLite holds.
    fn any_value() -> impl Strategy<Value = rusqlite::types::Value> {
        use rusqlite::types::Value;
        prop_oneof![
            any::<i64>().prop_map(Value::Integer),
            (-70_000i64..70_000).prop_map(Value::Integer),
            prop_oneof![Just(0i64), Just(1), Just(2), Just(-1), Just(i64::MAX), Just(i64::MIN), Just(1 << 40)].prop_map(Value::Integer),
            proptest::collection::vec(any::<u8>(), 0..80).prop_map(Value::Blob),
            "[a-z0-9]{0,12}".prop_map(Value::Text),
            Just(Value::Null),
            any::<f64>().prop_map(Value::Real),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]
        /// Fuzzing the store: any cell of its index set to any value (a
        /// chunk's pack, offset, length, codec, size or digest, a file's size
        /// or chunk list, the store's own settings), or any byte of a pack
        /// flipped: `restore` gives the source byte for byte or a clear
        /// error with nothing written, `verify` passes only on a store that
        /// still restores exactly, and nothing panics, hangs or sizes a
        /// buffer by a damaged length.
        #[test]
        fn a_damaged_index_or_pack_is_named_never_followed(
            compressed in any::<bool>(),
            table in 0usize..4,
            column in 0usize..6,
            row in any::<prop::sample::Index>(),
            value in any_value(),
            flip in any::<prop::sample::Index>(),
        ) {
            let (plain, packed, src, data) = made();
            let case = tempfile::tempdir().unwrap();
            let st = case.path().join("st");
            copy_store(if compressed { packed } else { plain }, &st);
            {
                let db = rusqlite::Connection::open(st.join("index.sqlite")).unwrap();
                let (name, columns, key): (&str, &[&str], &str) = match table {
                    0 | 1 => ("chunks", &["pack", "offset", "len", "codec", "size", "digest"], "digest"),
                    2 => ("files", &["size", "chunks", "name"], "name"),
                    _ => ("meta", &["value"], "key"),
                };
                if name == "chunks" && column == 5 && table == 1 {
                    // A pack byte instead of an index cell.
                    let pack = st.join("packs/pack-000000");
                    let mut bytes = std::fs::read(&pack).unwrap();
                    let at = flip.index(bytes.len());
                    bytes[at] ^= 0x5a;
                    std::fs::write(&pack, bytes).unwrap();
                } else {
                    let keys: Vec<rusqlite::types::Value> = db.prepare(&format!("SELECT {key} FROM {name}")).unwrap().query_map([], |r| r.get(0)).unwrap().collect::<Result<_, _>>().unwrap();
                    let col = columns[column % columns.len()];
                    // Constraint failures (a NULL where NOT NULL, a duplicate key) leave the store as it was.
                    let _ = db.execute(&format!("UPDATE {name} SET {col} = ?1 WHERE {key} = ?2"), rusqlite::params![value, keys[row.index(keys.len())]]);
                }
            }
            let out = case.path().join("out");
            match restore(&st, src, &out, false) {
                Ok(_) => prop_assert_eq!(&std::fs::read(&out).unwrap(), data, "restored: exactly the source"),
                Err(e) => {
                    prop_assert!(!out.exists(), "nothing written after {}", e);
                    prop_assert!(e.exit_code() != 1, "an internal error: {}", e);
                    let left: Vec<_> = std::fs::read_dir(case.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
                    prop_assert_eq!(left.len(), 1, "no temporary left: {:?}", left);
                }
            }
            if verify(&st, true).is_ok() {
                // Every file it lists restores, exactly (a renamed file too: it is still the source).
                let db = rusqlite::Connection::open(st.join("index.sqlite")).unwrap();
                let names: Vec<Vec<u8>> = db.prepare("SELECT name FROM files").unwrap().query_map([], |r| r.get(0)).unwrap().collect::<Result<_, _>>().unwrap();
                for (i, name) in names.iter().enumerate() {
                    let again = case.path().join(format!("again{i}"));
                    let restored = restore(&st, Path::new(std::ffi::OsStr::from_bytes(name)), &again, false);
                    prop_assert!(restored.is_ok(), "a store that verifies restores: {:?}", restored.err().map(|e| e.to_string()));
                    prop_assert_eq!(&std::fs::read(&again).unwrap(), data);
                }
            }
        }
    }
}
