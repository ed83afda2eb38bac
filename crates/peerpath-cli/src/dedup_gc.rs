//! `peerpath dedup remove` and `peerpath dedup gc`: files leave the store,
//! and the space of the chunks no file refers to any more comes back.
//!
//! `gc` holds the writer lock (no store runs meanwhile). A pack whose bytes
//! no live chunk uses (dead chunks, and the tail a killed store left) are at
//! least `--min-unused` percent of it is rewritten: each live chunk read,
//! checked against its fingerprint and copied as it is stored (compressed or
//! not) into new packs, numbered after every pack there is; a pack with no
//! live chunk is removed. Crash rule, a store's: the new packs are written and
//! synced before the one transaction that points the index at them (and
//! forgets the dead chunks and their successor hints) commits; the old packs
//! go only after it, and only once no reader can be using them: readers
//! (restore, verify, stats, list) hold a shared `flock` on the packs
//! directory while they use the store ([`hold_off_gc`]), and gc takes it
//! exclusively to unlink. Killed before the commit, gc leaves new packs no
//! chunk refers to; after it, old packs no chunk refers to: either way every
//! file restores, and the next gc removes them. A damaged live chunk stops it
//! before anything changes. A dead chunk is never read: one whose bytes are
//! not there (past the end of a pack cut short, or in a pack that is gone) is
//! dropped from the index like any other, whatever becomes of its pack, and
//! counted apart (`damaged_chunks_dropped`), so that a damaged pack whose
//! files were all removed can still be collected.
//!
//! Memory: bounded. The digests files refer to are marked in an SQLite
//! temporary table (`temp.live`, its page cache at most `TEMP_CACHE_KIB`; the
//! rest spills to the temporary directory, about 50 bytes a chunk), and only
//! counts per pack are held (measured, `gc -n` of a synthetic store of 2
//! million chunks: 300 MB peak RSS when a hash set held them, 84 MB now, a
//! debug build). Where at least `--min-unused` percent of the index is then free
//! pages, it is compacted (VACUUM).

use super::{db_error, exact_path, hint, pack_bytes, pack_path, stored_from_row, target_io, Store, Stored};
use peerpath_func::dedup_store::recipe_digests;
use peerpath_runtime::JobError;
use rusqlite::params;
use rustix::fs::{flock, FlockOperation};
use serde::Serialize;
use peerpath_runtime::report::{count, name_bytes, quoted_bytes, quoted_exact, Quoted};
use std::collections::{BTreeMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Marks the digests the store's files refer to: the connection's temporary table `live`
/// (SQLite's, in its temporary file past [`TEMP_CACHE_KIB`] of cache: memory does not grow
/// with the store), made anew; how many there are. A recipe that is not whole digests is the
/// damage `damaged` makes of its words.
pub(super) fn mark_live(s: &Store, damaged: impl Fn(String) -> JobError) -> Result<u64, JobError> {
    let dir = &s.dir;
    s.db.execute_batch(&format!("PRAGMA temp.cache_size = -{TEMP_CACHE_KIB}; CREATE TEMP TABLE IF NOT EXISTS live (digest BLOB PRIMARY KEY) WITHOUT ROWID; DELETE FROM temp.live;")).map_err(db_error(dir))?;
    // One transaction for the marks (within the caller's, where one is open): not one a digest.
    s.db.execute_batch("SAVEPOINT mark").map_err(db_error(dir))?;
    let marked = mark_each(s, &damaged);
    s.db.execute_batch(if marked.is_ok() { "RELEASE mark" } else { "ROLLBACK TO mark; RELEASE mark" }).map_err(db_error(dir))?;
    marked?;
    s.db.query_row("SELECT count(*) FROM temp.live", [], |r| r.get::<_, i64>(0)).map(|n| n as u64).map_err(db_error(dir))
}

/// [`mark_live`]'s marks, one a digest.
fn mark_each(s: &Store, damaged: &impl Fn(String) -> JobError) -> Result<(), JobError> {
    let dir = &s.dir;
    let mut put = s.db.prepare_cached("INSERT OR IGNORE INTO temp.live VALUES (?1)").map_err(db_error(dir))?;
    let mut q = s.db.prepare("SELECT name, chunks FROM files").map_err(db_error(dir))?;
    let mut rows = q.query([]).map_err(db_error(dir))?;
    while let Some(r) = rows.next().map_err(db_error(dir))? {
        let list: Vec<u8> = r.get(1).map_err(db_error(dir))?;
        match recipe_digests(&list) {
            Ok(digests) => digests.iter().try_for_each(|d| put.execute([&d[..]]).map(drop)).map_err(db_error(dir))?,
            Err(e) => {
                let name: Vec<u8> = r.get(0).map_err(db_error(dir))?;
                return Err(damaged(format!("{}: {e}", quoted_bytes(&name))));
            }
        }
    }
    Ok(())
}

/// The page cache of a connection's temporary tables (SQLite's default is 2 MiB): what gc's
/// marks ([`mark_live`]) and the places of the chunks it moves take in memory at most, past
/// which SQLite keeps them in its temporary file.
const TEMP_CACHE_KIB: u32 = 64 << 10;

/// A shared `flock` on the store's packs directory for as long as a reader
/// uses the store, so that gc removes no pack under it ([`gc`] takes it
/// exclusively to unlink, and holds it only while it unlinks). The directory
/// is always there (a store without one has no pack to protect), needs no
/// writer to make it and no write permission to lock (read-only mounts,
/// another user's store, a store copied without its lock file).
pub(super) fn hold_off_gc(dir: &Path) -> Result<Option<File>, JobError> {
    let packs = dir.join("packs");
    let f = match File::open(&packs) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(JobError::SourceUnreadable { path: packs, source }),
    };
    // Held as long as `f` is open.
    flock(&f, FlockOperation::LockShared).map_err(|e| JobError::SourceUnreadable { path: packs, source: e.into() })?;
    Ok(Some(f))
}

/// What `dedup remove` did.
#[derive(Serialize)]
pub(super) struct RemoveReport {
    store: String,
    /// `store`'s exact bytes, where the name is not UTF-8.
    #[serde(skip_serializing_if = "Option::is_none")]
    store_bytes: Option<Vec<u8>>,
    files: u64,
    logical_bytes: u64,
    /// Chunks no file refers to now (these and any before), and their own bytes: `dedup gc` takes their space back.
    unreferenced_chunks: u64,
    unreferenced_chunk_bytes: u64,
}

impl RemoveReport {
    pub(super) fn render(&self) -> String {
        format!(
            "removed {} ({} bytes) from {store}; chunks no file refers to now: {} ({} bytes): {gc} takes back their space",
            count(self.files, "file"),
            self.logical_bytes,
            self.unreferenced_chunks,
            self.unreferenced_chunk_bytes,
            store = quoted_exact(&self.store, self.store_bytes.as_deref()),
            gc = hint("gc", exact_path(&self.store, self.store_bytes.as_deref()))
        )
    }
}

/// Removes the files `names` from the store, all or none (one transaction): a
/// name the store does not hold is exit 3 and nothing is removed. Their chunks
/// stay in the packs until [`gc`].
pub(super) fn remove(dir: &Path, names: &[PathBuf]) -> Result<RemoveReport, JobError> {
    let mut seen = HashSet::new();
    if let Some(twice) = names.iter().find(|n| !seen.insert(n.as_os_str())) {
        return Err(JobError::Usage(format!("{} is named twice", Quoted(twice))));
    }
    let s = Store::open(dir, true, None)?;
    let tx = s.db.unchecked_transaction().map_err(db_error(dir))?;
    let (mut bytes, mut missing) = (0u64, Vec::new());
    for name in names {
        let record = || format!("the file {}", Quoted(name));
        let mut q = tx.prepare_cached("SELECT size FROM files WHERE name = ?1").map_err(db_error(dir))?;
        let size = match q.query([name.as_os_str().as_bytes()]).map_err(db_error(dir))?.next().map_err(db_error(dir))? {
            Some(r) => super::file_size(r, 0, dir, &record)?,
            None => {
                missing.push(name);
                continue;
            }
        };
        tx.execute("DELETE FROM files WHERE name = ?1", [name.as_os_str().as_bytes()]).map_err(db_error(dir))?;
        bytes = super::add(bytes, size, dir, &record, "size")?;
    }
    if let Some(first) = missing.first() {
        let others = if missing.len() > 1 { format!(" (nor {})", missing[1..].iter().map(|n| Quoted(n).to_string()).collect::<Vec<_>>().join(", ")) } else { String::new() };
        return Err(JobError::SourceUnreadable {
            path: first.to_path_buf(),
            source: std::io::Error::new(std::io::ErrorKind::NotFound, format!("not in the store {}{others} ({}); nothing was removed", Quoted(dir), hint("list", dir))),
        });
    }
    tx.commit().map_err(db_error(dir))?;
    let chunks = super::chunk_totals(&s)?;
    Ok(RemoveReport { store: dir.display().to_string(), store_bytes: name_bytes(dir), files: names.len() as u64, logical_bytes: bytes, unreferenced_chunks: chunks.unreferenced, unreferenced_chunk_bytes: chunks.unreferenced_bytes })
}

/// What `dedup gc` did (or, `dry_run`, would do).
#[derive(Serialize, Default)]
pub(super) struct GcReport {
    store: String,
    /// `store`'s exact bytes, where the name is not UTF-8.
    #[serde(skip_serializing_if = "Option::is_none")]
    store_bytes: Option<Vec<u8>>,
    dry_run: bool,
    /// A pack is rewritten where at least this share of it is unused.
    min_unused_percent: u8,
    packs_before: u64,
    pack_bytes_before: u64,
    /// Packs whose live chunks were copied into new packs, and the bytes copied (as stored).
    packs_rewritten: u64,
    live_bytes_copied: u64,
    /// Packs removed whole: no chunk a file refers to was in them.
    packs_removed: u64,
    /// Chunks no file referred to that left the index, and their own bytes.
    chunks_dropped: u64,
    chunk_bytes_dropped: u64,
    /// Of those: chunks whose bytes were not there to read (past the end of a pack cut short, or
    /// in a pack that is gone). No file referred to them: no file lost anything.
    damaged_chunks_dropped: u64,
    /// Packs kept although part of them is unused (under min_unused_percent), and those bytes.
    packs_kept_with_unused: u64,
    unused_bytes_kept: u64,
    packs_after: u64,
    pack_bytes_after: u64,
    bytes_reclaimed: u64,
    /// How long gc waited for readers (restore, verify) before it removed the old packs.
    waited_for_readers_s: f64,
    /// The index's bytes before and after; compacted (VACUUM) where at least min_unused_percent
    /// of it was free pages (rows of dropped chunks, removed files and their hints). A dry run
    /// compacts nothing.
    index_bytes_before: u64,
    index_bytes_after: u64,
    index_compacted: bool,
    seconds: f64,
}

impl GcReport {
    pub(super) fn render(&self) -> String {
        let store = quoted_exact(&self.store, self.store_bytes.as_deref());
        let mut t = if self.dry_run {
            format!(
                "gc --dry-run on {}: would rewrite {} (copying {} bytes of live chunks) and remove {}; would drop {} no file refers to ({} bytes); packs would go from {} to {} bytes; nothing was changed\n",
                store,
                count(self.packs_rewritten, "pack"),
                self.live_bytes_copied,
                self.packs_removed,
                count(self.chunks_dropped, "chunk"), self.chunk_bytes_dropped, self.pack_bytes_before, self.pack_bytes_after
            )
        } else {
            format!(
                "gc on {}: {} rewritten ({} bytes of live chunks copied, each checked against its fingerprint), {} removed; {} no file referred to dropped ({} bytes); packs {} -> {} bytes, {} reclaimed, in {:.2} s\n",
                store,
                count(self.packs_rewritten, "pack"),
                self.live_bytes_copied,
                self.packs_removed,
                count(self.chunks_dropped, "chunk"), self.chunk_bytes_dropped, self.pack_bytes_before, self.pack_bytes_after, self.bytes_reclaimed, self.seconds
            )
        };
        if self.damaged_chunks_dropped > 0 {
            let dropped = if self.dry_run { "would be dropped" } else { "were dropped" };
            t += &format!(
                "{} of the chunks no file refers to had no data left to read (past the end of a pack cut short, or in a pack that is gone): they {dropped} without reading them; no file referred to them, so no file lost anything\n",
                self.damaged_chunks_dropped
            );
        }
        if self.packs_kept_with_unused > 0 {
            let kept = if self.dry_run { "would keep" } else { "kept" };
            t += &format!("{kept} {} with {} unused bytes: under --min-unused {} % of each (--min-unused 0 rewrites them too)\n", count(self.packs_kept_with_unused, "pack"), self.unused_bytes_kept, self.min_unused_percent);
        }
        if self.dry_run {
            t += &format!("(a dry run reads no chunk: a damaged one, which stops gc before it changes anything, is not found; {} finds it)\n", hint("verify", exact_path(&self.store, self.store_bytes.as_deref())));
        }
        if self.index_compacted {
            t += &format!("index compacted (VACUUM): {} -> {} bytes\n", self.index_bytes_before, self.index_bytes_after);
        }
        if self.waited_for_readers_s >= 1.0 {
            t += &format!("waited {:.1} s for readers of the store to finish before removing the old packs\n", self.waited_for_readers_s);
        }
        t
    }
}

/// A pack on disk and what gc does with it: counts only (the chunks themselves stay in the
/// index, read again where they are copied), so that gc's memory does not grow with the store.
#[derive(Default)]
struct Pack {
    len: u64,
    /// Live chunks (a file refers to them), and their pack bytes.
    live: u64,
    live_bytes: u64,
    /// Chunks no file refers to, and their own bytes (never read: gc drops them unseen).
    dead: u64,
    dead_size: u64,
    /// Of those, the chunks whose bytes are not there (past the end of the pack cut short),
    /// and their own bytes: dropped from the index whatever becomes of the pack.
    unreadable: u64,
    unreadable_size: u64,
}

/// New packs being written by gc: removed when dropped before [`NewPacks::kept`]
/// (and by a signal until then).
struct NewPacks {
    dir: PathBuf,
    next: i64,
    open: Option<(i64, std::io::BufWriter<File>, u64)>,
    made: Vec<PathBuf>,
    kept: bool,
}

impl NewPacks {
    /// Appends a chunk's stored bytes; where it now lies.
    fn append(&mut self, bytes: &[u8]) -> Result<(i64, u64), JobError> {
        if self.open.as_ref().is_some_and(|(_, _, len)| *len >= pack_bytes()) {
            self.close()?;
        }
        if self.open.is_none() {
            let path = pack_path(&self.dir, self.next);
            let f = OpenOptions::new().write(true).create_new(true).open(&path).map_err(target_io(&path))?;
            peerpath_io::remove_on_signal(path.clone());
            self.made.push(path);
            self.open = Some((self.next, std::io::BufWriter::with_capacity(1 << 20, f), 0));
            self.next += 1;
        }
        let (no, w, len) = self.open.as_mut().expect("opened above");
        let at = (*no, *len);
        w.write_all(bytes).map_err(target_io(&pack_path(&self.dir, *no)))?;
        *len += bytes.len() as u64;
        Ok(at)
    }

    /// Writes out and syncs the pack being written.
    fn close(&mut self) -> Result<(), JobError> {
        if let Some((no, w, _)) = self.open.take() {
            let path = pack_path(&self.dir, no);
            w.into_inner().map_err(|e| target_io(&path)(e.into_error()))?.sync_all().map_err(target_io(&path))?;
        }
        Ok(())
    }

    /// Every new pack synced, and their names (the packs directory synced).
    fn finish(&mut self) -> Result<(), JobError> {
        self.close()?;
        let packs = self.dir.join("packs");
        File::open(&packs).and_then(|d| d.sync_all()).map_err(target_io(&packs))
    }

    /// The index is about to refer to them: they stay, a signal no longer removes them. An
    /// error where a signal took one already (it removes what it holds, then the process dies:
    /// a commit made meanwhile would name packs that are gone).
    fn kept(&mut self) -> Result<(), JobError> {
        self.kept = true;
        self.made.iter().for_each(|p| peerpath_io::keep_on_signal(p));
        match self.made.iter().find(|p| !p.exists()) {
            Some(gone) => Err(target_io(gone)(std::io::Error::new(std::io::ErrorKind::Interrupted, "removed by a signal before the index named it"))),
            None => Ok(()),
        }
    }
}

impl Drop for NewPacks {
    fn drop(&mut self) {
        if !self.kept {
            self.open = None;
            for p in &self.made {
                let _ = std::fs::remove_file(p);
                peerpath_io::keep_on_signal(p);
            }
        }
    }
}

/// The packs on disk: number and length (other files in `packs/` are not gc's).
fn packs_on_disk(dir: &Path) -> Result<BTreeMap<i64, u64>, JobError> {
    let packs = dir.join("packs");
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir(&packs).map_err(|source| JobError::SourceUnreadable { path: packs.clone(), source })? {
        let e = e.map_err(|source| JobError::SourceUnreadable { path: packs.clone(), source })?;
        let name = e.file_name();
        let Some(n) = name.to_str().and_then(|n| n.strip_prefix("pack-")).filter(|n| n.len() >= 6 && n.bytes().all(|b| b.is_ascii_digit())).and_then(|n| n.parse::<i64>().ok()) else { continue };
        let m = e.metadata().map_err(|source| JobError::SourceUnreadable { path: e.path(), source })?;
        if m.is_file() && pack_path(dir, n) == e.path() {
            out.insert(n, m.len());
        }
    }
    Ok(out)
}

/// Takes back the space of chunks no file refers to (see the module's text).
pub(super) fn gc(dir: &Path, min_unused: u8, dry_run: bool) -> Result<GcReport, JobError> {
    let started = std::time::Instant::now();
    // A dry run only reads (no lock taken, no format upgraded, nothing made), as restore does.
    let s = Store::open(dir, !dry_run, None)?;
    let (before, _) = index_size(&s)?;
    let mut report = collect(&s, min_unused, dry_run)?;
    (report.index_bytes_before, report.index_bytes_after) = (before, before);
    if !dry_run {
        compact_index(&s, min_unused, &mut report)?;
    }
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

/// The index's bytes, and those of its free pages (left by rows deleted: SQLite reuses them, but
/// the file keeps its size until it is compacted).
fn index_size(s: &Store) -> Result<(u64, u64), JobError> {
    let pragma = |p: &str| s.db.query_row(&format!("PRAGMA {p}"), [], |r| r.get::<_, i64>(0)).map(|n| n.max(0) as u64).map_err(db_error(&s.dir));
    let page = pragma("page_size")?;
    Ok((page * pragma("page_count")?, page * pragma("freelist_count")?))
}

/// Compacts the index (SQLite's VACUUM: rebuilt without its free pages) where at least
/// `min_unused` percent of it is free, as a pack is rewritten, and folds the log back into it so
/// that the file shrinks now (where no reader holds an older snapshot; else when the last one
/// ends). One that cannot be compacted (no room for the copy VACUUM makes) is said on standard
/// error and left as it is: the packs' work is done, and the next gc tries again.
fn compact_index(s: &Store, min_unused: u8, report: &mut GcReport) -> Result<(), JobError> {
    let (bytes, free) = index_size(s)?;
    if free == 0 || u128::from(free) * 100 < u128::from(min_unused) * u128::from(bytes) {
        report.index_bytes_after = bytes;
        return Ok(());
    }
    if let Err(e) = s.db.execute_batch("VACUUM; PRAGMA wal_checkpoint(TRUNCATE);") {
        eprintln!("peerpath: warning: dedup gc: the store's index was not compacted ({}); the packs' space was taken back", db_error(&s.dir)(e));
        report.index_bytes_after = bytes;
        return Ok(());
    }
    report.index_compacted = true;
    report.index_bytes_after = index_size(s)?.0;
    Ok(())
}

/// [`gc`]'s work on the packs, in `s` (opened to write, or to read for a dry run). What it
/// holds in memory is a count per pack; the digests files refer to, the chunks that no file
/// refers to and are not there to read, and the new places of the chunks it moves are kept in
/// the connection's temporary tables ([`mark_live`]).
fn collect(s: &Store, min_unused: u8, dry_run: bool) -> Result<GcReport, JobError> {
    let dir = s.dir.as_path();
    let damaged = |detail: String| JobError::Damaged { path: dir.to_path_buf(), detail: format!("{detail}; gc changed nothing ({} names the damage)", hint("verify", dir)) };
    let referenced = mark_live(s, damaged)?;
    let on_disk = packs_on_disk(dir)?;
    let mut packs: BTreeMap<i64, Pack> = on_disk.iter().map(|(&n, &len)| (n, Pack { len, ..Pack::default() })).collect();
    // Of the digests files refer to, those the index holds (each once: digests are its key).
    let mut held = 0u64;
    // Dead chunks in packs that are gone, and their own bytes.
    let (mut gone, mut gone_size) = (0u64, 0u64);
    s.db.execute_batch("CREATE TEMP TABLE IF NOT EXISTS unreadable (digest BLOB PRIMARY KEY) WITHOUT ROWID; DELETE FROM temp.unreadable;").map_err(db_error(dir))?;
    {
        let mut unreadable = s.db.prepare("INSERT OR IGNORE INTO temp.unreadable VALUES (?1)").map_err(db_error(dir))?;
        let sql = format!("SELECT pack, offset, len, {}, c.digest, c.digest IN (SELECT digest FROM temp.live) FROM chunks c", s.codec_size);
        let mut q = s.db.prepare(&sql).map_err(db_error(dir))?;
        let mut rows = q.query([]).map_err(db_error(dir))?;
        while let Some(r) = rows.next().map_err(db_error(dir))? {
            let at = stored_from_row(r).map_err(db_error(dir))?;
            let digest: Vec<u8> = r.get(5).map_err(db_error(dir))?;
            if digest.len() != 32 {
                return Err(damaged("the index holds a digest that is not 32 bytes".into()));
            }
            let live: bool = r.get(6).map_err(db_error(dir))?;
            held += u64::from(live);
            // A dead chunk is dropped unread: where its bytes are not there, that is said, not refused.
            let Some(pack) = packs.get_mut(&at.pack) else {
                if live {
                    return Err(damaged(format!("the index has chunks files refer to in {}, which is not there", Quoted(&pack_path(dir, at.pack)))));
                }
                unreadable.execute([&digest]).map_err(db_error(dir))?;
                (gone, gone_size) = (gone + 1, gone_size.saturating_add(at.size as u64));
                continue;
            };
            if at.offset.checked_add(at.len as u64).is_none_or(|end| end > pack.len) {
                if live {
                    return Err(damaged(format!("{} is {} bytes, but the index places a chunk files refer to at bytes {}..{}", Quoted(&pack_path(dir, at.pack)), pack.len, at.offset, at.offset.saturating_add(at.len as u64))));
                }
                unreadable.execute([&digest]).map_err(db_error(dir))?;
                (pack.unreadable, pack.unreadable_size) = (pack.unreadable + 1, pack.unreadable_size.saturating_add(at.size as u64));
            }
            // (Sizes a damaged index says may be anything: the sums stop at 2^64.)
            if live {
                (pack.live, pack.live_bytes) = (pack.live + 1, pack.live_bytes.saturating_add(at.len as u64));
            } else {
                (pack.dead, pack.dead_size) = (pack.dead + 1, pack.dead_size.saturating_add(at.size as u64));
            }
        }
    }
    let lost = referenced - held;
    if lost > 0 {
        return Err(damaged(format!("files refer to {} the index does not hold", count(lost, "chunk"))));
    }
    let mut report = GcReport { store: dir.display().to_string(), store_bytes: name_bytes(dir), dry_run, min_unused_percent: min_unused, packs_before: packs.len() as u64, ..GcReport::default() };
    report.pack_bytes_before = packs.values().map(|p| p.len).sum();
    // What goes: packs with nothing live (removed), and those unused enough (rewritten).
    let (mut rewrite, mut remove) = (Vec::new(), Vec::new());
    for (&n, p) in &packs {
        let unused = p.len.saturating_sub(p.live_bytes); // (chunks that overlap are a damaged index's)
        if p.live == 0 {
            remove.push(n);
        } else if unused > 0 && u128::from(unused) * 100 >= u128::from(min_unused) * u128::from(p.len) {
            rewrite.push(n);
        } else if unused > 0 {
            report.packs_kept_with_unused += 1;
            report.unused_bytes_kept += unused;
        }
    }
    let going = || rewrite.iter().chain(&remove).map(|n| &packs[n]);
    report.packs_rewritten = rewrite.len() as u64;
    report.packs_removed = remove.len() as u64;
    report.live_bytes_copied = rewrite.iter().map(|n| packs[n].live_bytes).sum();
    // Unreadable chunks whose pack stays (or is gone already) leave the index too.
    let staying = || packs.iter().filter(|(n, _)| !rewrite.contains(n) && !remove.contains(n)).map(|(_, p)| p);
    let (apart, apart_size) = (gone + staying().map(|p| p.unreadable).sum::<u64>(), gone_size + staying().map(|p| p.unreadable_size).sum::<u64>());
    report.chunks_dropped = going().map(|p| p.dead).sum::<u64>() + apart;
    report.chunk_bytes_dropped = going().map(|p| p.dead_size).sum::<u64>() + apart_size;
    report.damaged_chunks_dropped = gone + packs.values().map(|p| p.unreadable).sum::<u64>();
    let gone_bytes: u64 = going().map(|p| p.len).sum();
    // The packs that go, and whether each is rewritten (its live chunks copied first).
    s.db.execute_batch("CREATE TEMP TABLE IF NOT EXISTS going (pack INTEGER PRIMARY KEY, rewrite INTEGER NOT NULL); DELETE FROM temp.going;").map_err(db_error(dir))?;
    {
        let mut put = s.db.prepare("INSERT INTO temp.going VALUES (?1, ?2)").map_err(db_error(dir))?;
        for (n, rewritten) in rewrite.iter().map(|n| (n, true)).chain(remove.iter().map(|n| (n, false))) {
            put.execute(params![n, rewritten]).map_err(db_error(dir))?;
        }
    }
    if dry_run || (rewrite.is_empty() && remove.is_empty() && report.damaged_chunks_dropped == 0) {
        report.pack_bytes_after = report.pack_bytes_before - gone_bytes + report.live_bytes_copied;
        report.bytes_reclaimed = gone_bytes - report.live_bytes_copied;
        // New packs as [`NewPacks::append`] rolls them over: a new one once the last is full.
        let mut fill: Option<u64> = None;
        let mut new_packs = 0;
        each_live_chunk_moved(s, |_, at| {
            if fill.is_none_or(|f| f >= pack_bytes()) {
                (fill, new_packs) = (Some(0), new_packs + 1);
            }
            fill = fill.map(|f| f + at.len as u64);
            Ok(())
        })?;
        report.packs_after = report.packs_before - report.packs_rewritten - report.packs_removed + new_packs;
        return Ok(report);
    }
    // Copy the live chunks of the packs rewritten, each checked, into new packs; their new
    // places wait in a temporary table for the transaction.
    let first_new = packs.keys().next_back().map_or(0, |n| n + 1);
    let mut new = NewPacks { dir: dir.to_path_buf(), next: first_new, open: None, made: Vec::new(), kept: false };
    s.db.execute_batch("CREATE TEMP TABLE IF NOT EXISTS moved (digest BLOB PRIMARY KEY, pack INTEGER NOT NULL, offset INTEGER NOT NULL) WITHOUT ROWID; DELETE FROM temp.moved;").map_err(db_error(dir))?;
    {
        let mut put = s.db.prepare("INSERT INTO temp.moved VALUES (?1, ?2, ?3)").map_err(db_error(dir))?;
        let (mut reader, mut scratch) = (s.packs(), Vec::new());
        each_live_chunk_moved(s, |digest, at| {
            scratch.clear();
            let bytes = reader.read_checked_stored(digest, at, &mut scratch).map_err(|e| e.into_job(|d| JobError::Damaged { path: dir.to_path_buf(), detail: format!("{d} ({} names the damage)", hint("verify", dir)) }, "gc changed nothing"))?;
            let (pack, offset) = new.append(bytes)?;
            put.execute(params![digest, pack, offset as i64]).map_err(db_error(dir)).map(drop)
        })?;
    }
    new.finish()?;
    stop_here_for_a_test("before-commit");
    // One transaction: chunks moved, dead ones (in packs that go, and those not there to read)
    // forgotten, hints to or from them too.
    let tx = s.db.unchecked_transaction().map_err(db_error(dir))?;
    tx.execute_batch(
        "UPDATE chunks SET pack = m.pack, offset = m.offset FROM temp.moved m WHERE chunks.digest = m.digest;
         DELETE FROM chunks WHERE pack IN (SELECT pack FROM temp.going);
         DELETE FROM chunks WHERE digest IN (SELECT digest FROM temp.unreadable);
         DELETE FROM successors WHERE digest NOT IN (SELECT digest FROM chunks) OR next NOT IN (SELECT digest FROM chunks);",
    )
    .map_err(db_error(dir))?;
    // Kept from here: a signal during the commit must not take packs the index may now name.
    new.kept()?;
    if let Err(e) = tx.commit() {
        // Rolled back for want of room (as a store's commit is): the packs go, so that the next
        // gc finds the room again. Otherwise whether it reached the disk is not known: they stay
        // (packs no chunk is in are removed by the next gc).
        if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DiskFull) && s.db.is_autocommit() {
            new.kept = false;
        }
        return Err(db_error(dir)(e));
    }
    stop_here_for_a_test("after-commit");
    // The old packs go once no reader that may still use them is left.
    let waiting = std::time::Instant::now();
    let readers = wait_for_readers(dir)?;
    report.waited_for_readers_s = waiting.elapsed().as_secs_f64();
    for (i, n) in rewrite.iter().chain(&remove).enumerate() {
        if i == 1 {
            stop_here_for_a_test("mid-unlink");
        }
        let path = pack_path(dir, *n);
        std::fs::remove_file(&path).or_else(|e| if e.kind() == std::io::ErrorKind::NotFound { Ok(()) } else { Err(e) }).map_err(target_io(&path))?;
    }
    let packs_dir = dir.join("packs");
    File::open(&packs_dir).and_then(|d| d.sync_all()).map_err(target_io(&packs_dir))?;
    drop(readers);
    let after = packs_on_disk(dir)?;
    report.packs_after = after.len() as u64;
    report.pack_bytes_after = after.values().sum();
    report.bytes_reclaimed = report.pack_bytes_before.saturating_sub(report.pack_bytes_after);
    Ok(report)
}

/// Hands `f` each live chunk of the packs gc rewrites (marked in `temp.going` and
/// `temp.live`), pack by pack, in the order they lie in it, read from the index as they come.
fn each_live_chunk_moved(s: &Store, mut f: impl FnMut(&[u8], Stored) -> Result<(), JobError>) -> Result<(), JobError> {
    let dir = &s.dir;
    let sql = format!(
        "SELECT pack, offset, len, {}, digest FROM chunks WHERE pack IN (SELECT pack FROM temp.going WHERE rewrite) AND digest IN (SELECT digest FROM temp.live) ORDER BY pack, offset",
        s.codec_size
    );
    let mut q = s.db.prepare(&sql).map_err(db_error(dir))?;
    let mut rows = q.query([]).map_err(db_error(dir))?;
    while let Some(r) = rows.next().map_err(db_error(dir))? {
        let at = stored_from_row(r).map_err(db_error(dir))?;
        f(&r.get::<_, Vec<u8>>(5).map_err(db_error(dir))?, at)?;
    }
    Ok(())
}

/// Testing aid: dies at once (no destructor, no signal handler runs: as SIGKILL leaves things)
/// where `PEERPATH_TEST_GC_ABORT` names this step, so that a test meets each crash window of gc
/// exactly rather than by timing.
fn stop_here_for_a_test(step: &str) {
    if std::env::var_os("PEERPATH_TEST_GC_ABORT").is_some_and(|v| v == step) {
        std::process::abort();
    }
}

/// Holds the packs directory's lock exclusively: no reader ([`hold_off_gc`])
/// uses the store while it is held. Says so where it waits.
fn wait_for_readers(dir: &Path) -> Result<File, JobError> {
    let path = dir.join("packs");
    let f = File::open(&path).map_err(target_io(&path))?;
    // Held as long as `f` is open.
    if flock(&f, FlockOperation::NonBlockingLockExclusive).is_err() {
        eprintln!("peerpath: dedup gc: waiting for readers of the store (restore, verify, stats) to finish before removing the old packs");
        flock(&f, FlockOperation::LockExclusive).map_err(|e| target_io(&path)(e.into()))?;
    }
    Ok(f)
}
