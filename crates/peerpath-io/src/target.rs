//! Outputs that appear whole or not at all, and never replace a file they
//! were not told to.
//!
//! A target is written to a temporary file in its own directory. Where the
//! file system takes `O_TMPFILE` that file has no name at all: a process
//! killed by any signal, SIGKILL included, leaves nothing behind. It is
//! linked to its final name at the end with `linkat`, which fails if the
//! name exists (no replacing what appeared meanwhile). Elsewhere the
//! temporary file has a name, registered here so a signal handler can
//! remove it ([`remove_named_temporaries`]), and is renamed with
//! `renameat2(RENAME_NOREPLACE)` (or `link` + `unlink` where that is not
//! supported). With `replace` (`--force`) the final step is a plain
//! `rename`, which replaces an existing file atomically.

use crate::file::{open_with, OpenedFile, SourceKind};
use std::ffi::{CString, OsStr, OsString};
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Marks a named temporary file (tests and users look for it).
pub const TEMPORARY_MARK: &str = ".peerpath-tmp.";

/// The longest file name most Linux file systems take (NAME_MAX).
pub const NAME_MAX_BYTES: usize = 255;

/// Named temporary files and directories that exist now, for removal on a
/// signal. Every step that creates, renames or removes one of them holds
/// this lock across both the file system call and the list's update, so
/// the signal thread never sees a name that is about to appear or vanish
/// (it once removed a name just before a rename created it, leaving it).
static NAMED: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

fn registry() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    NAMED.lock().unwrap_or_else(|e| e.into_inner())
}

/// Files this process made and keeps (a job server's socket, a benchmark's
/// file), given to [`remove_on_signal`], the directories it made for
/// outputs ([`OutputDir::make`]), the outputs it makes for a while
/// ([`remove_on_signal_once_in_place`]) and the files it lays out from empty
/// ([`empty_on_signal`]), with the identity (device, inode) each had
/// then: a signal removes (or empties) one only while its name still holds it.
static MADE: Mutex<Vec<Made>> = Mutex::new(Vec::new());

struct Made {
    path: PathBuf,
    /// `None` until a job of this process puts it in place ([`remove_on_signal_once_in_place`]).
    id: Option<(u64, u64)>,
    /// An output directory's own lock ([`OutputDir`]), which its removal makes exclusive.
    held: Option<Arc<File>>,
    /// Emptied (truncated to nothing) rather than removed ([`empty_on_signal`]).
    empty: bool,
}

fn made() -> std::sync::MutexGuard<'static, Vec<Made>> {
    MADE.lock().unwrap_or_else(|e| e.into_inner())
}

/// The file `path` names itself (not one a symbolic link there points to), as
/// (device, inode); `None` where it names nothing. Two names with one identity
/// hold the same file; a name whose identity changed holds another file now.
pub fn identity(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

fn remove_all(paths: &mut Vec<PathBuf>, empty_later: bool) -> usize {
    let named = std::mem::take(paths).iter().filter(|p| if p.is_dir() { std::fs::remove_dir_all(p).is_ok() } else { std::fs::remove_file(p).is_ok() }).count();
    // Another process's file now under the name (a new daemon's socket, bound after
    // this one's was removed by hand) stays. Files to empty stay listed where a dying process
    // empties them last ([`empty_laid_out_files_before_exit`]).
    let made = {
        let mut list = made();
        let (later, now): (Vec<Made>, Vec<Made>) = std::mem::take(&mut *list).into_iter().partition(|m| m.empty && empty_later);
        *list = later;
        now
    };
    let (dirs, files): (Vec<&Made>, Vec<&Made>) = made.iter().filter(|m| m.id.is_some() && identity(&m.path) == m.id).partition(|m| m.path.is_dir());
    // A directory made for outputs goes only where empty and no other job writes there: after
    // the files made in it.
    let remove = |m: &&&Made| match (m.empty, m.path.is_dir()) {
        (true, _) => empty_file(&m.path, m.id),
        (false, true) => remove_made_dir(&m.path, m.held.as_deref()),
        (false, false) => std::fs::remove_file(&m.path).is_ok(),
    };
    named + files.iter().chain(&dirs).filter(remove).count()
}

/// Truncates `path` to nothing where it still holds the file `id` (a regular file: opening
/// anything else for writing may wait, or do more than open).
fn empty_file(path: &Path, id: Option<(u64, u64)>) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(f) = OpenOptions::new().write(true).custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW).open(path) else { return false };
    f.metadata().is_ok_and(|m| m.is_file() && Some((m.dev(), m.ino())) == id) && f.set_len(0).is_ok()
}

/// Removes every named temporary file and [`ScratchDir`] this process
/// still has; unnamed files need nothing. Returns how many were removed.
pub fn remove_named_temporaries() -> usize {
    remove_all(&mut registry(), false)
}

/// Adds `path`, a file this process has just made (a job server's socket),
/// or a directory it made (removed only where empty), to what a
/// signal removes before the process dies, as long as the name still holds
/// that file then; given deepest first, directories go deepest first. Give
/// an absolute path where the process may change its directory (a relative
/// one is resolved when the signal comes).
pub fn remove_on_signal(path: PathBuf) {
    if let Some(id) = identity(&path) {
        made().push(Made { path, id: Some(id), held: None, empty: false });
    }
}

/// Has a signal remove the file a job of this process puts in place as `path` from then on
/// ([`publish`], or a job's [`committed`] outputs), as [`remove_on_signal`] does (only while the
/// name still holds it): an output made for a while (a demo's), which is not among the outputs
/// that stay at a signal. Nothing before it is in place (a file there now is not this
/// process's).
pub fn remove_on_signal_once_in_place(path: PathBuf) {
    made().push(Made { path, id: None, held: None, empty: false });
}

/// Has a signal empty `path` (truncate it to nothing) before the process dies, as long as the
/// name still holds the file it holds now: a file given empty that this process lays out (a
/// benchmark's), which would otherwise stay full size. From then on no write of the dying
/// process makes a file longer (`RLIMIT_FSIZE` 0; SIGXFSZ is ignored): its writes still in
/// flight cannot lay the file out again.
pub fn empty_on_signal(path: PathBuf) {
    if let Some(id) = identity(&path) {
        made().push(Made { path, id: Some(id), held: None, empty: true });
    }
}

/// Takes `path` back from what a signal removes or empties ([`remove_on_signal`],
/// [`remove_on_signal_once_in_place`], [`empty_on_signal`]): the work that made it is done,
/// and it stays.
pub fn keep_on_signal(path: &Path) {
    made().retain(|m| m.path != path);
}

/// Whether `path`, just put in place (under the temporaries' registry lock, which a signal's
/// removal takes first), is an output made for a while ([`remove_on_signal_once_in_place`]):
/// then it is on what a signal removes, with the file it holds now.
fn made_for_a_while(path: &Path) -> bool {
    let mut made = made();
    match made.iter_mut().find(|m| m.path == path && !m.empty && !m.path.is_dir()) {
        Some(m) => {
            if m.id.is_none() {
                m.id = identity(path);
            }
            true
        }
        None => false,
    }
}

/// The directory a job writes its outputs in, held while it does: a shared `flock` on it.
/// A job removes a directory it made for its outputs (`--output DIR/` where DIR was not
/// there) only where it is empty and it can make that lock exclusive: no other job writes
/// there. An output not yet put in place has no name (`O_TMPFILE`), so a directory another
/// job writes in can look empty; it was removed under that job, which then failed.
///
/// Dropped, it removes the directories made for it (deepest first) on those terms; a signal
/// that ends the job does too; [`OutputDir::keep`] keeps them.
#[must_use = "dropped, it removes the directories it made"]
#[derive(Debug, Default)]
pub struct OutputDir {
    /// The directory, open, with this job's shared lock on it.
    held: Option<Arc<File>>,
    /// Directories made for it, deepest first, absolute (a job server changes its
    /// directory between jobs, and a signal may come then).
    made: Vec<PathBuf>,
}

impl OutputDir {
    /// Holds `dir`, a directory that is there (the parent of a target named with `--output
    /// FILE`); nothing where it cannot be opened (the target's own creation then says why).
    pub fn hold(dir: &Path) -> OutputDir {
        OutputDir { held: hold(dir).ok().flatten(), made: Vec::new() }
    }

    /// Holds the directory `target` is put in ([`parent_dir`]), as [`OutputDir::hold`].
    pub fn hold_parent_of(target: &Path) -> OutputDir {
        OutputDir::hold(&parent_dir(target))
    }

    /// Holds `dir`, made first where it is not there, with the directories above it that are
    /// not. One that the job that made it removes before it is held is made again.
    pub fn make(dir: &Path) -> io::Result<OutputDir> {
        for _ in 0..100 {
            let mut missing = Vec::new();
            let mut p = Some(dir);
            while let Some(d) = p.filter(|d| !d.as_os_str().is_empty() && std::fs::symlink_metadata(d).is_err()) {
                missing.push(std::path::absolute(d).unwrap_or_else(|_| d.to_path_buf()));
                p = d.parent();
            }
            let mut out = OutputDir::default();
            // Held before a failure: where making them fails part way, those made go again.
            match create_dirs_removed_on_signal(&missing, &mut out.made) {
                // A directory above it was removed meanwhile (by the job that made it): again.
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                r => r?,
            }
            let held = match hold(dir) {
                Ok(Some(held)) => held,
                // Removed again before it was held.
                Ok(None) => continue,
                Err(e) if e.kind() == io::ErrorKind::NotFound && std::fs::symlink_metadata(dir).is_err() => continue,
                // One it may write in but not read (mode 0733), or a link to nothing (the
                // target's creation says so): held without a lock.
                Err(_) => return Ok(out),
            };
            if let Some(m) = made().iter_mut().find(|m| out.made.first() == Some(&m.path) && same_file(&held, &m.path)) {
                m.held = Some(held.clone());
            }
            out.held = Some(held);
            return Ok(out);
        }
        Err(io::Error::other("it was removed each time it was made (100 times)"))
    }

    /// The job succeeded: the directories it made stay.
    pub fn keep(mut self) {
        let mut made = made();
        made.retain(|m| !self.made.contains(&m.path));
        self.made.clear();
    }
}

impl Drop for OutputDir {
    fn drop(&mut self) {
        // Under the lock the signal's removal takes: it finds them here or gone.
        let mut made = made();
        made.retain(|m| !self.made.contains(&m.path));
        for d in self.made.drain(..) {
            remove_made_dir(&d, self.held.as_deref());
        }
    }
}

/// Opens the directory `dir` and takes a shared lock on it, waiting (a second at most) while
/// the job that made it holds it to remove it; `None` where `dir` no longer names the
/// directory locked (it was removed meanwhile). Where the lock cannot be had (a file system
/// that takes none; `flock DIR command` around the job, which holds it all along) the
/// directory is held without one: another job that made it may then remove it under this one.
fn hold(dir: &Path) -> io::Result<Option<Arc<File>>> {
    let f = open_dir(dir)?;
    for _ in 0..1000 {
        // SAFETY: flock on a descriptor we own; it does not wait (LOCK_NB).
        if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_SH | libc::LOCK_NB) } == 0 || io::Error::last_os_error().raw_os_error() != Some(libc::EWOULDBLOCK) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    Ok(same_file(&f, dir).then(|| Arc::new(f)))
}

/// Whether `path` names the file open as `f`.
fn same_file(f: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (f.metadata(), std::fs::metadata(path)) {
        (Ok(a), Ok(b)) => (a.dev(), a.ino()) == (b.dev(), b.ino()),
        _ => false,
    }
}

/// Removes `dir`, a directory this process made, where it is empty and no job writes there:
/// only while an exclusive lock on it can be had at once, through `held` where that is this
/// job's own lock on it (made exclusive), else through a new descriptor. Whether it went.
fn remove_made_dir(dir: &Path, held: Option<&File>) -> bool {
    let fresh;
    let f = match held.filter(|f| same_file(f, dir)) {
        Some(f) => f,
        None => match open_dir(dir) {
            Ok(f) => {
                fresh = f;
                &fresh
            }
            Err(_) => return false,
        },
    };
    // SAFETY: flock on a descriptor we hold; it does not wait (LOCK_NB).
    let alone = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0;
    alone && std::fs::remove_dir(dir).is_ok()
}

/// Makes the directories `dirs` (given deepest first: each the one below the next) and adds
/// each made to `made` and to what a signal removes (only where empty and no job writes
/// there), under the lock the signal's removal takes: a signal between a directory's making
/// and its adding cannot leave it. One already there (made by another since) is not added.
fn create_dirs_removed_on_signal(dirs: &[PathBuf], made_here: &mut Vec<PathBuf>) -> io::Result<()> {
    let mut made = made();
    let mut new = Vec::new();
    let result = dirs.iter().rev().try_for_each(|d| match std::fs::create_dir(d) {
        Ok(()) => {
            new.extend(identity(d).map(|id| Made { path: d.clone(), id: Some(id), held: None, empty: false }));
            Ok(())
        }
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists && d.is_dir() => Ok(()),
        Err(e) => Err(e),
    });
    // Those made (also before a failure), deepest first, as the removal must go.
    made_here.extend(new.iter().rev().map(|m| m.path.clone()));
    made.extend(new.into_iter().rev());
    result
}

/// Whether `signal` is ignored in this process (`SIG_IGN`): what `nohup`,
/// `trap '' INT` and a shell's background jobs leave to the program they
/// start. A program catches only the terminating signals that are not
/// (gzip's rule), so that `nohup` still protects it.
pub fn signal_ignored(signal: i32) -> bool {
    let mut old = std::mem::MaybeUninit::<libc::sigaction>::zeroed();
    // SAFETY: with a null new action, sigaction only writes the current one into `old`, which is a whole `struct sigaction`.
    let r = unsafe { libc::sigaction(signal, std::ptr::null(), old.as_mut_ptr()) };
    // SAFETY: it succeeded, so `old` was written (and it started zeroed).
    r == 0 && unsafe { old.assume_init() }.sa_sigaction == libc::SIG_IGN
}

/// [`remove_named_temporaries`] for a process about to die of a signal:
/// the registry stays locked afterwards, so no other thread can create or
/// name a temporary between the removal and the process's end. Returns the
/// outputs that stay: those its jobs had put in place complete ([`committed`]).
///
/// Files given empty and laid out ([`empty_on_signal`]) are left for
/// [`empty_laid_out_files_before_exit`], the process's last step, so that what it says before
/// (on a standard error that may be a file) is written.
pub fn remove_named_temporaries_before_exit() -> Committed {
    let mut guard = registry();
    remove_all(&mut guard, true);
    let kept = committed_list().clone();
    std::mem::forget(guard);
    kept
}

/// For a process about to die, after [`remove_named_temporaries_before_exit`] and whatever it
/// says: empties the files given empty that it laid out ([`empty_on_signal`]). From then on no
/// write of this process makes a file longer or writes a regular file at all (`RLIMIT_FSIZE`'s
/// soft limit 0; SIGXFSZ is ignored), so that its writes still in flight cannot lay one out
/// again.
pub fn empty_laid_out_files_before_exit() {
    let mut list = made();
    if !list.iter().any(|m| m.empty) {
        return;
    }
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes one whole rlimit into `limit`, which lives across the call.
    if unsafe { libc::getrlimit(libc::RLIMIT_FSIZE, &mut limit) } == 0 {
        limit.rlim_cur = 0;
        // SAFETY: setrlimit reads one whole rlimit that lives across the call.
        unsafe { libc::setrlimit(libc::RLIMIT_FSIZE, &limit) };
    }
    for m in std::mem::take(&mut *list).iter().filter(|m| m.empty) {
        empty_file(&m.path, m.id);
    }
}

/// The outputs this process's jobs put in place complete ([`committed`]): how many, and the
/// first few of them by name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Committed {
    pub outputs: usize,
    pub first: Vec<PathBuf>,
}

impl Committed {
    /// Names kept, at most.
    const NAMED: usize = 3;
}

static COMMITTED: Mutex<Committed> = Mutex::new(Committed { outputs: 0, first: Vec::new() });

fn committed_list() -> std::sync::MutexGuard<'static, Committed> {
    COMMITTED.lock().unwrap_or_else(|e| e.into_inner())
}

/// A directory of work in progress, removed when dropped and by the
/// signal thread ([`remove_named_temporaries`]); [`ScratchDir::publish`]
/// renames it into place instead (never replacing an existing name). A
/// directory cannot be unnamed, so SIGKILL leaves one: keep the window
/// short by building the contents as unnamed files and linking them in at
/// the end (as `peerpath ec encode` does).
#[derive(Debug)]
pub struct ScratchDir {
    path: Option<PathBuf>,
    /// The directory, open from its making until it is published: syncing
    /// and emptying it take no new descriptor, so a job that fails at its
    /// open-file limit (`ulimit -n`) still leaves nothing behind.
    dir: Option<File>,
}

impl ScratchDir {
    /// A new hidden directory beside `final_path`. Scratch directories
    /// for the same name left by processes that no longer exist (SIGKILL)
    /// are removed first.
    pub fn beside(final_path: &Path) -> io::Result<ScratchDir> {
        remove_abandoned(final_path);
        for attempt in 0..100u32 {
            let tmp = temporary_name(final_path, attempt);
            let mut named = registry();
            match std::fs::create_dir(&tmp) {
                Ok(()) => match open_dir(&tmp) {
                    Ok(dir) => {
                        named.push(tmp.clone());
                        return Ok(ScratchDir { path: Some(tmp), dir: Some(dir) });
                    }
                    // Removing an empty directory takes no descriptor.
                    Err(e) => {
                        let _ = std::fs::remove_dir(&tmp);
                        return Err(e);
                    }
                },
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
        Err(io::Error::new(io::ErrorKind::AlreadyExists, "could not find a free temporary name"))
    }

    pub fn path(&self) -> &Path {
        self.path.as_deref().expect("a scratch directory has a path until published")
    }

    /// Syncs the directory and renames it to `final_path`, which must not
    /// exist (`AlreadyExists` otherwise; the directory is then removed on drop).
    pub fn publish(mut self, final_path: &Path) -> io::Result<()> {
        if let Some(dir) = &self.dir {
            dir.sync_all()?;
        }
        // The parent is opened before the rename (once the directory has its name, nothing
        // fails); at the open-file limit, in the place of the directory's own descriptor.
        let parent = File::open(parent_dir(final_path)).or_else(|e| match e.raw_os_error() {
            Some(libc::EMFILE) if self.dir.is_some() => {
                self.dir = None;
                File::open(parent_dir(final_path))
            }
            _ => Err(e),
        })?;
        {
            let mut named = registry();
            rename_noreplace(self.path(), final_path)?;
            let tmp = self.path.take().expect("not yet published");
            named.retain(|p| *p != tmp);
        }
        parent.sync_all()
    }
}

/// A directory opened for syncing and for removing what it holds.
fn open_dir(path: &Path) -> io::Result<File> {
    OpenOptions::new().read(true).custom_flags(libc::O_DIRECTORY).open(path)
}

/// Removes what the directory open as `dir` (at `path`) holds through that
/// descriptor (`getdents64`, `unlinkat`), so it needs no new one; a
/// directory inside is removed where empty, else with `remove_dir_all`.
fn empty_dir(dir: &File, path: &Path) {
    let fd = dir.as_raw_fd();
    let mut buf = vec![0u8; 16 << 10];
    // Entries removed while the directory is read may move others past the
    // read's position: it is read again from its start until nothing is left
    // (or nothing more could be removed).
    for _ in 0..16 {
        // SAFETY: repositions a directory descriptor we own.
        if unsafe { libc::lseek(fd, 0, libc::SEEK_SET) } < 0 {
            return;
        }
        let (mut seen, mut removed) = (0usize, 0usize);
        loop {
            // SAFETY: the kernel writes at most buf.len() bytes of entries into buf.
            let n = unsafe { libc::syscall(libc::SYS_getdents64, fd, buf.as_mut_ptr(), buf.len()) };
            if n <= 0 {
                break;
            }
            let mut at = 0usize;
            // struct linux_dirent64: d_ino (8), d_off (8), d_reclen (2), d_type (1), d_name (NUL-terminated).
            while at + 19 < n as usize {
                let reclen = u16::from_ne_bytes([buf[at + 16], buf[at + 17]]) as usize;
                if reclen == 0 {
                    break;
                }
                let name = &buf[at + 19..at + reclen];
                let name = &name[..name.iter().position(|&b| b == 0).unwrap_or(name.len())];
                at += reclen;
                if name == b"." || name == b".." {
                    continue;
                }
                seen += 1;
                let Ok(c) = CString::new(name) else { continue };
                // SAFETY: a NUL-terminated name relative to a directory descriptor we hold.
                let gone = unsafe { libc::unlinkat(fd, c.as_ptr(), 0) } == 0
                    || (io::Error::last_os_error().raw_os_error() == Some(libc::EISDIR)
                        // SAFETY: as above.
                        && (unsafe { libc::unlinkat(fd, c.as_ptr(), libc::AT_REMOVEDIR) } == 0
                            || std::fs::remove_dir_all(path.join(OsStr::from_bytes(name))).is_ok()));
                removed += usize::from(gone);
            }
        }
        if seen == 0 || removed == 0 {
            return;
        }
    }
}

/// Removes `.NAME.peerpath-tmp.PID.*` directories and files beside
/// `final_path` whose PID is not a running process (a job killed by SIGKILL,
/// which no handler outlives). A live PID (ours, another job's, or a reused
/// one) keeps its own: this never takes a live job's work.
fn remove_abandoned(final_path: &Path) {
    let Some(name) = temporary_name(final_path, 0).file_name().map(|n| n.as_bytes().to_vec()) else { return };
    let Some(cut) = name.windows(TEMPORARY_MARK.len()).position(|w| w == TEMPORARY_MARK.as_bytes()) else { return };
    let prefix = &name[..cut + TEMPORARY_MARK.len()];
    let Ok(entries) = std::fs::read_dir(parent_dir(final_path)) else { return };
    for e in entries.flatten() {
        let n = e.file_name();
        let Some(rest) = n.as_bytes().strip_prefix(prefix) else { continue };
        let pid = std::str::from_utf8(rest).ok().and_then(|r| r.split('.').next()).and_then(|p| p.parse::<libc::pid_t>().ok());
        // SAFETY: kill(2) with signal 0 only checks whether the process exists.
        let gone = pid.is_some_and(|p| p > 0 && unsafe { libc::kill(p, 0) } == -1 && io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH));
        match e.file_type() {
            Ok(t) if gone && t.is_dir() => drop(std::fs::remove_dir_all(e.path())),
            Ok(t) if gone && t.is_file() => drop(std::fs::remove_file(e.path())),
            _ => {}
        }
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        if let Some(p) = self.path.take() {
            let mut named = registry();
            // Emptied through the descriptor it holds (a job out of descriptors), then removed by name.
            match self.dir.take().or_else(|| open_dir(&p).ok()) {
                Some(dir) => {
                    empty_dir(&dir, &p);
                    drop(dir);
                    let _ = std::fs::remove_dir(&p);
                }
                None => drop(std::fs::remove_dir_all(&p)),
            }
            named.retain(|q| *q != p);
        }
    }
}

/// How a temporary target exists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Temporary {
    /// `O_TMPFILE`: no name until it is linked into place.
    Unnamed,
    /// A hidden name next to the final one.
    Named(PathBuf),
}

/// The directory a target goes in.
pub fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// A hidden name beside `final_path` that fits NAME_MAX: `.NAME.peerpath-tmp.PID.N`,
/// with NAME cut short where the whole would be too long.
fn temporary_name(final_path: &Path, attempt: u32) -> PathBuf {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
    let suffix = format!("{TEMPORARY_MARK}{}.{:08x}{attempt}", std::process::id(), nanos);
    let name = final_path.file_name().map(OsStr::as_bytes).unwrap_or(b"out");
    let keep = name.len().min(NAME_MAX_BYTES - 1 - suffix.len());
    let mut bytes = Vec::with_capacity(NAME_MAX_BYTES);
    bytes.push(b'.');
    bytes.extend_from_slice(&name[..keep]);
    bytes.extend_from_slice(suffix.as_bytes());
    parent_dir(final_path).join(OsString::from_vec(bytes))
}

/// The path through which an unnamed file can be reopened or linked.
fn proc_fd_path(file: &File) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()))
}

fn o_tmpfile(dir: &Path, direct: bool) -> io::Result<File> {
    let mut o = OpenOptions::new();
    o.write(true).mode(0o600).custom_flags(libc::O_TMPFILE | if direct { libc::O_DIRECT } else { 0 });
    o.open(dir)
}

/// Whether an `O_TMPFILE` open failed because the file system (or kernel)
/// does not do unnamed files, rather than for a reason a named file would
/// meet too.
fn tmpfile_unsupported(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EOPNOTSUPP) | Some(libc::EISDIR) | Some(libc::EINVAL) | Some(libc::ENOENT))
}

/// Creates the temporary file for `final_path` (mode 0600 until
/// [`publish`]), unnamed where the file system allows, with O_DIRECT where
/// possible and `want_direct`. `OpenedFile::path` is a path the file can be
/// reopened through (`/proc/self/fd/N` for an unnamed one).
///
/// Testing aid: with `PEERPATH_NAMED_TEMPORARIES` set in the environment
/// (to anything but empty or `0`), every temporary file is named (as on a
/// file system without `O_TMPFILE`), so the tests can check that signals
/// remove them.
pub fn create_temporary(final_path: &Path, want_direct: bool) -> io::Result<(OpenedFile, Temporary)> {
    if std::env::var_os("PEERPATH_NAMED_TEMPORARIES").is_some_and(|v| !v.is_empty() && v != "0") {
        let opened = create_named(final_path, want_direct)?;
        let temp = Temporary::Named(opened.path.clone());
        return Ok((opened, temp));
    }
    let dir = parent_dir(final_path);
    let refused_direct = |e: &io::Error| Some(format!("file system refused O_DIRECT ({e})"));
    let disabled = || Some("O_DIRECT disabled (--no-direct)".to_string());
    let in_memory = want_direct && dir_in_memory(&dir);
    let unnamed = if want_direct {
        match o_tmpfile(&dir, true) {
            // Taken (tmpfs, Linux 6.6+), but there it only adds a copy.
            Ok(_) if in_memory => o_tmpfile(&dir, false).map(|f| (f, false, Some(IN_MEMORY.to_string()))),
            Ok(f) => Ok((f, true, None)),
            // EINVAL: O_DIRECT refused, or no O_TMPFILE; try without O_DIRECT to tell.
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => o_tmpfile(&dir, false).map(|f| (f, false, refused_direct(&e))),
            Err(e) => Err(e),
        }
    } else {
        o_tmpfile(&dir, false).map(|f| (f, false, disabled()))
    };
    match unnamed {
        Ok((file, direct, direct_refused)) => {
            let path = proc_fd_path(&file);
            let opened = OpenedFile { file, path, kind: SourceKind::Regular { size_bytes: 0 }, direct, direct_refused };
            return Ok((opened, Temporary::Unnamed));
        }
        Err(e) if tmpfile_unsupported(&e) => {}
        Err(e) => return Err(e),
    }
    let opened = create_named(final_path, want_direct)?;
    let temp = Temporary::Named(opened.path.clone());
    Ok((opened, temp))
}

/// Why a target on a memory file system is written without O_DIRECT.
const IN_MEMORY: &str = "a memory file system: its writes are CPU copies either way, and O_DIRECT would add one (packing into aligned buffers)";

fn dir_in_memory(dir: &Path) -> bool {
    File::open(dir).is_ok_and(|d| peerpath_mem::on_memory_file_system(d.as_raw_fd()))
}

/// A named temporary file next to `final_path` (the fallback where there is no `O_TMPFILE`).
pub fn create_named(final_path: &Path, want_direct: bool) -> io::Result<OpenedFile> {
    // A job killed by SIGKILL left its temporary of this name (as large as what it had
    // written): it goes now, as a scratch directory's does.
    remove_abandoned(final_path);
    let in_memory = want_direct && dir_in_memory(&parent_dir(final_path));
    let mut opts = OpenOptions::new();
    opts.write(true).create_new(true).mode(0o600);
    let mut named = registry();
    for attempt in 0..100u32 {
        let tmp = temporary_name(final_path, attempt);
        let opened = if want_direct {
            match open_with(&tmp, &opts, true) {
                // Taken (tmpfs, Linux 6.6+), but there it only adds a copy: reopen without.
                Ok(_) if in_memory => open_with(&tmp, OpenOptions::new().write(true), false)
                    .inspect_err(|_| {
                        let _ = std::fs::remove_file(&tmp);
                    })
                    .map(|f| (f, false, Some(IN_MEMORY.to_string()))),
                Ok(f) => Ok((f, true, None)),
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                    // Some file systems refuse O_DIRECT at open, after creating the file.
                    let _ = std::fs::remove_file(&tmp);
                    open_with(&tmp, &opts, false).map(|f| (f, false, Some(format!("file system refused O_DIRECT ({e})"))))
                }
                Err(e) => Err(e),
            }
        } else {
            open_with(&tmp, &opts, false).map(|f| (f, false, Some("O_DIRECT disabled (--no-direct)".to_string())))
        };
        match opened {
            Ok((file, direct, direct_refused)) => {
                named.push(tmp.clone());
                return Ok(OpenedFile { file, path: tmp, kind: SourceKind::Regular { size_bytes: 0 }, direct, direct_refused });
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::new(io::ErrorKind::AlreadyExists, "could not find a free temporary name"))
}

fn cstring(p: &Path) -> io::Result<CString> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"))
}

fn check(rc: libc::c_int) -> io::Result<()> {
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// `renameat2(from, to, RENAME_NOREPLACE)`: fails with `AlreadyExists` if `to` exists.
fn rename_noreplace(from: &Path, to: &Path) -> io::Result<()> {
    let (f, t) = (cstring(from)?, cstring(to)?);
    // SAFETY: both arguments are NUL-terminated strings that live across the call.
    let rc = unsafe { libc::renameat2(libc::AT_FDCWD, f.as_ptr(), libc::AT_FDCWD, t.as_ptr(), libc::RENAME_NOREPLACE) };
    match check(rc) {
        // No RENAME_NOREPLACE on this file system: link() refuses an existing name too.
        Err(e) if matches!(e.raw_os_error(), Some(libc::EINVAL) | Some(libc::ENOSYS)) => {
            std::fs::hard_link(from, to)?;
            std::fs::remove_file(from)
        }
        r => r,
    }
}

/// Gives an unnamed file the name `to` (fails with `AlreadyExists` if it exists).
fn link_unnamed(file: &File, to: &Path) -> io::Result<()> {
    let t = cstring(to)?;
    let proc_path = cstring(&proc_fd_path(file))?;
    // SAFETY: NUL-terminated strings that live across the call; the
    // descriptor behind /proc/self/fd/N is open (we hold `file`).
    let rc = unsafe { libc::linkat(libc::AT_FDCWD, proc_path.as_ptr(), libc::AT_FDCWD, t.as_ptr(), libc::AT_SYMLINK_FOLLOW) };
    match check(rc) {
        // No /proc: AT_EMPTY_PATH does the same where the process may use it.
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) && !Path::new("/proc/self/fd").exists() => {
            // SAFETY: an empty NUL-terminated string and an open descriptor.
            check(unsafe { libc::linkat(file.as_raw_fd(), c"".as_ptr(), libc::AT_FDCWD, t.as_ptr(), libc::AT_EMPTY_PATH) })
        }
        r => r,
    }
}

/// Puts a finished temporary file in place as `final_path`. Without
/// `replace`, an existing `final_path` (even one that appeared since the
/// job started) is left alone and the result is an `AlreadyExists` error.
/// On any error the temporary file is left for [`discard`].
///
/// Under the registry's lock: a signal meanwhile waits, then finds nothing to remove, or the
/// output in place where it is one made for a while ([`remove_on_signal_once_in_place`]).
pub fn publish(file: &File, temp: &Temporary, final_path: &Path, replace: bool) -> io::Result<()> {
    let mut named = registry();
    match temp {
        Temporary::Unnamed if !replace => link_unnamed(file, final_path)?,
        Temporary::Unnamed => link_over(file, final_path)?,
        Temporary::Named(tmp) => {
            if replace { std::fs::rename(tmp, final_path) } else { rename_noreplace(tmp, final_path) }?;
            named.retain(|p| p != tmp);
        }
    }
    made_for_a_while(final_path);
    Ok(())
}

/// Gives an unnamed file the name `to`, replacing what is there atomically: linked to a fresh
/// hidden name, then renamed over (with the registry's lock held).
fn link_over(file: &File, to: &Path) -> io::Result<()> {
    for attempt in 0..100u32 {
        let tmp = temporary_name(to, attempt);
        match link_unnamed(file, &tmp) {
            Ok(()) => {
                let r = std::fs::rename(&tmp, to);
                if r.is_err() {
                    let _ = std::fs::remove_file(&tmp);
                }
                return r;
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::new(io::ErrorKind::AlreadyExists, "could not find a free temporary name"))
}

/// [`publish`], never replacing, for one of several outputs put in place
/// one after another (a set's shards in directories of their own): its
/// final name goes on the signal list in the same step, so a signal before
/// the last one is in place removes it too, until [`settled`] takes it off.
pub fn publish_provisional(file: &File, temp: &Temporary, final_path: &Path) -> io::Result<()> {
    // The lock is held across the link and the list's update: a signal meanwhile waits, then removes it.
    let mut named = registry();
    match temp {
        Temporary::Unnamed => link_unnamed(file, final_path)?,
        Temporary::Named(tmp) => {
            rename_noreplace(tmp, final_path)?;
            named.retain(|p| p != tmp);
        }
    }
    named.push(final_path.to_path_buf());
    Ok(())
}

/// Takes names that [`publish_provisional`] put on the signal list off it:
/// their set is complete (or they are gone).
pub fn settled(paths: &[PathBuf]) {
    settle(&mut registry(), paths);
}

fn settle(named: &mut Vec<PathBuf>, paths: &[PathBuf]) {
    // A set: a job may put tens of thousands of outputs in place.
    let done: std::collections::HashSet<&PathBuf> = paths.iter().collect();
    named.retain(|p| !done.contains(p));
}

/// [`settled`] for a job's `outputs` once every one of them is complete and in place (those
/// that replaced a file too): a signal from now on leaves them, and the process that dies of
/// it says so ([`remove_named_temporaries_before_exit`]). In one step with the removal a signal
/// does: it finds them on its list (and removes them) or committed.
///
/// Those made for a while ([`remove_on_signal_once_in_place`]) are not among them: a signal
/// removes them.
pub fn committed(outputs: &[PathBuf]) {
    let mut named = registry();
    settle(&mut named, outputs);
    let stay: Vec<&PathBuf> = outputs.iter().filter(|p| !made_for_a_while(p)).collect();
    let mut c = committed_list();
    c.outputs += stay.len();
    let room = Committed::NAMED.saturating_sub(c.first.len());
    c.first.extend(stay.into_iter().take(room).cloned());
}

/// Removes outputs [`publish_provisional`] put in place, and takes them off the signal list, in
/// one step under its lock (their set failed).
pub fn take_back(paths: &[PathBuf]) {
    let mut named = registry();
    paths.iter().for_each(|p| {
        let _ = std::fs::remove_file(p);
    });
    let gone: std::collections::HashSet<&PathBuf> = paths.iter().collect();
    named.retain(|p| !gone.contains(p));
}

/// Removes a temporary file that will not be published (an unnamed one
/// disappears with its descriptor).
pub fn discard(temp: &Temporary) {
    if let Temporary::Named(p) = temp {
        let mut named = registry();
        let _ = std::fs::remove_file(p);
        named.retain(|q| q != p);
    }
}

/// What an output takes from its source, as gzip and pigz do: the
/// permission bits and the access and modification times. `None` fields
/// (standard input) leave the output's defaults: 0666 less the umask.
#[derive(Clone, Copy, Debug, Default)]
pub struct Inherited {
    pub mode: Option<u32>,
    pub times: Option<(libc::timespec, libc::timespec)>,
    /// The source's owner and group, given where this process may (root; a group it is in),
    /// as gzip gives them: root's `gzip` of another user's file leaves that user's file.
    pub owner: Option<(u32, u32)>,
}

impl Inherited {
    /// Of a source file (nothing for standard input or a pipe); of a block device, its
    /// permission bits only (its contents are as private as its node; its times are not theirs).
    pub fn of(meta: Option<&std::fs::Metadata>) -> Inherited {
        use std::os::unix::fs::{FileTypeExt, MetadataExt};
        if let Some(m) = meta.filter(|m| m.file_type().is_block_device()) {
            return Inherited { mode: Some(m.mode() & 0o777), times: None, owner: None };
        }
        let Some(m) = meta.filter(|m| m.is_file()) else { return Inherited::default() };
        let ts = |s: i64, ns: i64| libc::timespec { tv_sec: s as libc::time_t, tv_nsec: ns as _ };
        Inherited { mode: Some(m.mode() & 0o777), times: Some((ts(m.atime(), m.atime_nsec()), ts(m.mtime(), m.mtime_nsec()))), owner: Some((m.uid(), m.gid())) }
    }

    /// Only the permission bits (for outputs that are not one source's copy,
    /// such as erasure-coded shards: as private as what they came from).
    pub fn mode_of(meta: Option<&std::fs::Metadata>) -> Inherited {
        Inherited { times: None, owner: None, ..Inherited::of(meta) }
    }

    /// Sets the output's mode and times (before it is published, so the
    /// name never shows other permissions).
    pub fn apply(&self, file: &File) -> io::Result<()> {
        if let Some((uid, gid)) = self.owner {
            // Before the mode (a change of owner may clear mode bits). Where this process may
            // not give the file away (not root), the owner stays its own, as gzip leaves it;
            // the group, where it is one of this process's, still follows.
            // SAFETY: fchown on a descriptor we own.
            if unsafe { libc::fchown(file.as_raw_fd(), uid, gid) } != 0 {
                // SAFETY: as above; -1 leaves the owner as it is.
                let _ = unsafe { libc::fchown(file.as_raw_fd(), u32::MAX, gid) };
            }
        }
        let mode = self.mode.unwrap_or(0o666 & !process_umask());
        // SAFETY: fchmod on a descriptor we own.
        check(unsafe { libc::fchmod(file.as_raw_fd(), mode as libc::mode_t) })?;
        if let Some((atime, mtime)) = self.times {
            let times = [atime, mtime];
            // SAFETY: futimens reads two timespecs from a valid array.
            check(unsafe { libc::futimens(file.as_raw_fd(), times.as_ptr()) })?;
        }
        Ok(())
    }
}

/// The process's umask, read without changing it (`/proc/self/status`,
/// Linux 4.7+); 022 where that cannot be read.
fn process_umask() -> u32 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find_map(|l| l.strip_prefix("Umask:").and_then(|v| u32::from_str_radix(v.trim(), 8).ok())))
        .unwrap_or(0o022)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;

    /// Tests that look at the registry of named temporaries run one at a time.
    static SERIAL: Mutex<()> = Mutex::new(());

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        v.sort();
        v
    }

    #[test]
    fn an_unnamed_temporary_is_invisible_until_published_and_refuses_an_existing_name() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out.gz");
        let (mut t, temp) = create_temporary(&target, false).unwrap();
        assert_eq!(temp, Temporary::Unnamed, "ext4 and tmpfs take O_TMPFILE");
        t.file.write_all(b"new").unwrap();
        assert!(names(dir.path()).is_empty(), "nothing visible before publishing");
        std::fs::write(&target, b"precious").unwrap();
        let e = publish(&t.file, &temp, &target, false).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read(&target).unwrap(), b"precious");
        publish(&t.file, &temp, &target, true).unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
        assert_eq!(names(dir.path()), ["out.gz"], "no temporary name left behind");
    }

    #[test]
    fn a_named_temporary_is_registered_renamed_without_replacing_and_discarded() {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("x".repeat(240));
        let mut t = create_named(&target, false).unwrap();
        let temp = Temporary::Named(t.path.clone());
        assert!(t.path.file_name().unwrap().len() <= NAME_MAX_BYTES, "a long target name still gets a legal temporary name");
        assert!(registry().contains(&t.path));
        t.file.write_all(b"data").unwrap();
        std::fs::write(&target, b"precious").unwrap();
        assert_eq!(publish(&t.file, &temp, &target, false).unwrap_err().kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read(&target).unwrap(), b"precious");
        discard(&temp);
        assert!(!registry().contains(&t.path));
        assert_eq!(names(dir.path()).len(), 1, "the temporary file is gone");

        let other = dir.path().join("y");
        let t = create_named(&other, false).unwrap();
        let temp = Temporary::Named(t.path.clone());
        publish(&t.file, &temp, &other, false).unwrap();
        assert!(!registry().contains(&t.path));
        assert_eq!(names(dir.path()).len(), 2);
    }

    #[test]
    fn a_signal_handler_can_remove_named_temporaries() {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let dir = tempfile::tempdir().unwrap();
        let t = create_named(&dir.path().join("z"), false).unwrap();
        assert!(t.path.exists());
        assert!(remove_named_temporaries() >= 1);
        assert!(!t.path.exists());
    }

    /// Outputs put in place one after another (a set's placed shards): each
    /// is on the signal list from the moment it has its name (a signal
    /// before the set is whole removes it), off it once settled; never
    /// over an existing file. Both kinds of temporary.
    #[test]
    fn provisional_outputs_are_removed_by_a_signal_until_settled() {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let dir = tempfile::tempdir().unwrap();
        let unnamed = create_temporary(&dir.path().join("a"), false).unwrap();
        let t = create_named(&dir.path().join("b"), false).unwrap();
        let named = (t.file, Temporary::Named(t.path.clone()));
        let (a, b) = (dir.path().join("shard-a"), dir.path().join("shard-b"));
        publish_provisional(&unnamed.0.file, &unnamed.1, &a).unwrap();
        publish_provisional(&named.0, &named.1, &b).unwrap();
        assert!(registry().contains(&a) && registry().contains(&b) && !registry().contains(&t.path));
        assert!(remove_named_temporaries() >= 2);
        assert!(!a.exists() && !b.exists(), "a signal before the set is whole removes its placed files");
        // Settled: a later signal leaves them.
        let again = create_temporary(&dir.path().join("c"), false).unwrap();
        publish_provisional(&again.0.file, &again.1, &a).unwrap();
        settled(std::slice::from_ref(&a));
        assert_eq!(remove_named_temporaries(), 0);
        assert!(a.exists());
        // Never over an existing file.
        let more = create_temporary(&dir.path().join("d"), false).unwrap();
        assert_eq!(publish_provisional(&more.0.file, &more.1, &a).unwrap_err().kind(), io::ErrorKind::AlreadyExists);
        assert!(!registry().contains(&a));
    }

    /// A directory made for a job's outputs goes again when the job fails (dropped) or a signal
    /// ends it, where empty; not while another job writes there (it holds it, as
    /// `OutputDir::hold` and `make` do), though its unnamed outputs leave it looking empty; and
    /// not once kept.
    #[test]
    fn a_directory_made_for_outputs_is_removed_only_where_no_other_job_writes_there() {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("made").join("out");
        // Alone: it goes when dropped, and so does the directory made above it.
        drop(OutputDir::make(&out).unwrap());
        assert!(names(dir.path()).is_empty(), "{:?}", names(dir.path()));
        // Another job writes there (an unnamed output): it stays, dropped or at a signal.
        let maker = OutputDir::make(&out).unwrap();
        let other = OutputDir::make(&out).unwrap();
        let (unnamed, _) = create_temporary(&out.join("x"), false).unwrap();
        assert!(names(&out).is_empty(), "an unnamed output leaves it looking empty");
        assert!(made().iter().any(|m| m.path == std::path::absolute(&out).unwrap()), "on the signal list");
        remove_named_temporaries();
        assert!(out.is_dir(), "a signal leaves a directory another job writes in");
        drop(maker);
        assert!(out.is_dir(), "a failed job leaves a directory another job writes in");
        drop(unnamed);
        drop(other);
        assert!(out.is_dir(), "the other job did not make it: it leaves it");
        std::fs::remove_dir_all(dir.path().join("made")).unwrap();
        // Held through `hold` (`--output DIR/FILE`), the same.
        let maker = OutputDir::make(&out).unwrap();
        let other = OutputDir::hold(&out);
        drop(maker);
        assert!(out.is_dir());
        drop(other);
        std::fs::remove_dir_all(dir.path().join("made")).unwrap();
        // Alone at a signal: it goes.
        let maker = OutputDir::make(&out).unwrap();
        remove_named_temporaries();
        assert!(names(dir.path()).is_empty(), "{:?}", names(dir.path()));
        drop(maker);
        // Kept: it stays.
        OutputDir::make(&out).unwrap().keep();
        assert!(out.is_dir());
        assert_eq!(remove_named_temporaries(), 0);
        assert!(out.is_dir(), "kept: off the signal list");
        // `flock DIR command` around a job holds the directory exclusively all along: the job
        // goes on (it is held without the lock) rather than wait for it.
        let outside = open_dir(&out).unwrap();
        // SAFETY: flock on a descriptor this test owns, released when it closes.
        assert_eq!(unsafe { libc::flock(outside.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) }, 0);
        let held = OutputDir::make(&out).unwrap();
        assert!(held.held.is_some() && held.made.is_empty(), "{held:?}");
        drop(held);
        assert!(OutputDir::hold(&out).held.is_some());
        assert!(out.is_dir());
    }

    /// Outputs committed are off the signal list, and kept for what a process dying of a signal
    /// says it leaves: their number and the first names.
    #[test]
    fn committed_outputs_stay_at_a_signal_and_are_named() {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let dir = tempfile::tempdir().unwrap();
        let before = committed_list().clone();
        let outputs: Vec<PathBuf> = (0..5).map(|i| dir.path().join(format!("o{i}"))).collect();
        for o in &outputs {
            let (t, temp) = create_temporary(o, false).unwrap();
            publish_provisional(&t.file, &temp, o).unwrap();
        }
        committed(&outputs);
        assert_eq!(remove_named_temporaries(), 0);
        assert!(outputs.iter().all(|o| o.exists()));
        let now = committed_list().clone();
        assert_eq!(now.outputs, before.outputs + 5);
        assert_eq!(now.first.len(), Committed::NAMED);
    }

    /// A daemon's socket removed by hand and bound again by a new daemon: the
    /// old daemon's signal removed the new one's (and a relative name was
    /// resolved in a client's directory).
    #[test]
    fn a_file_made_is_removed_by_a_signal_only_while_its_name_holds_it() {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let dir = tempfile::tempdir().unwrap();
        let (mine, taken, kept) = (dir.path().join("mine.sock"), dir.path().join("taken.sock"), dir.path().join("kept"));
        for p in [&mine, &taken, &kept] {
            std::fs::write(p, b"made here").unwrap();
            remove_on_signal(p.clone());
        }
        keep_on_signal(&kept);
        // Another file put in its place (a new inode: both exist at once).
        std::fs::write(dir.path().join("new"), b"another process's").unwrap();
        std::fs::rename(dir.path().join("new"), &taken).unwrap();
        assert_eq!(remove_named_temporaries(), 1);
        assert!(!mine.exists(), "the file it made goes");
        assert_eq!(std::fs::read(&taken).unwrap(), b"another process's", "another's stays");
        assert!(kept.exists());
    }

    /// Outputs made for a while (a demo's): a signal removes them once in place (published, or a
    /// job's committed), and they are not among the outputs that stay; nothing before. A file
    /// given empty and laid out is emptied, not removed.
    #[test]
    fn outputs_made_for_a_while_are_removed_and_files_given_empty_emptied_by_a_signal() {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let dir = tempfile::tempdir().unwrap();
        let (sample, packed, later) = (dir.path().join("s"), dir.path().join("s.gz"), dir.path().join("r"));
        for p in [&sample, &packed, &later] {
            remove_on_signal_once_in_place(p.clone());
        }
        std::fs::write(&later, b"not yet in place: another's").unwrap();
        let (t, temp) = create_temporary(&sample, false).unwrap();
        publish(&t.file, &temp, &sample, false).unwrap();
        let (t, temp) = create_temporary(&packed, false).unwrap();
        publish_provisional(&t.file, &temp, &packed).unwrap();
        let before = committed_list().clone();
        committed(std::slice::from_ref(&packed));
        assert_eq!(*committed_list(), before, "not an output that stays");
        let given = dir.path().join("given");
        std::fs::write(&given, vec![7u8; 1 << 16]).unwrap();
        empty_on_signal(given.clone());
        assert_eq!(remove_named_temporaries(), 3);
        assert_eq!(names(dir.path()), ["given", "r"]);
        assert_eq!(std::fs::metadata(&given).unwrap().len(), 0);
        keep_on_signal(&later);
    }

    #[test]
    fn a_scratch_directory_is_removed_unless_published_and_never_replaces() {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("shards");
        let s = ScratchDir::beside(&target).unwrap();
        std::fs::write(s.path().join("a"), b"x").unwrap();
        assert!(registry().contains(&s.path().to_path_buf()));
        drop(s);
        assert!(names(dir.path()).is_empty(), "dropped: gone");

        let s = ScratchDir::beside(&target).unwrap();
        assert!(remove_named_temporaries() >= 1, "the signal thread removes it with what it holds");
        assert!(names(dir.path()).is_empty());
        drop(s);

        // One a dead process left (no process has PID i32::MAX) is removed by the next.
        let abandoned = dir.path().join(format!(".shards{TEMPORARY_MARK}{}.0", i32::MAX));
        std::fs::create_dir(&abandoned).unwrap();
        let live = dir.path().join(format!(".shards{TEMPORARY_MARK}{}.0", std::process::id()));
        std::fs::create_dir(&live).unwrap();
        drop(ScratchDir::beside(&target).unwrap());
        assert_eq!(names(dir.path()), [live.file_name().unwrap().to_str().unwrap()], "the dead one's is gone, a live one's stays");
        std::fs::remove_dir(&live).unwrap();

        std::fs::create_dir(&target).unwrap();
        let s = ScratchDir::beside(&target).unwrap();
        std::fs::write(s.path().join("a"), b"x").unwrap();
        assert_eq!(s.publish(&target).unwrap_err().kind(), io::ErrorKind::AlreadyExists, "an existing (even empty) directory is not replaced");
        assert_eq!(names(dir.path()), ["shards"]);
        std::fs::remove_dir(&target).unwrap();
        let s = ScratchDir::beside(&target).unwrap();
        std::fs::write(s.path().join("a"), b"x").unwrap();
        s.publish(&target).unwrap();
        assert_eq!(names(dir.path()), ["shards"]);
        assert_eq!(std::fs::read(target.join("a")).unwrap(), b"x");
    }

    /// Opens /dev/null until the open-file limit refuses another: what a job
    /// that has run out of descriptors leaves.
    fn every_descriptor_taken() -> Vec<File> {
        let mut held = Vec::new();
        loop {
            match File::open("/dev/null") {
                Ok(f) => held.push(f),
                Err(e) => {
                    assert_eq!(e.raw_os_error(), Some(libc::EMFILE), "{e}");
                    return held;
                }
            }
        }
    }

    #[test]
    fn a_scratch_directory_at_the_open_file_limit_is_removed_or_published_whole() {
        const CHILD: &str = "PEERPATH_TEST_SCRATCH_AT_FD_LIMIT";
        let name = "target::tests::a_scratch_directory_at_the_open_file_limit_is_removed_or_published_whole";
        if std::env::var_os(CHILD).is_none() {
            // The limit is lowered and reached in a process of its own (this test, alone).
            let out = std::process::Command::new(std::env::current_exe().unwrap())
                .args(["--exact", name, "--nocapture", "--test-threads=1"])
                .env(CHILD, "1")
                .output()
                .unwrap();
            let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
            assert!(out.status.success() && said.contains("1 passed"), "{said}");
            return;
        }
        let limit = libc::rlimit { rlim_cur: 64, rlim_max: 64 };
        // SAFETY: setrlimit reads the struct it is given.
        assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) }, 0);
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("set");
        let fill = |s: &ScratchDir| {
            for i in 0..40 {
                std::fs::write(s.path().join(format!("shard-{i:03}")), b"x").unwrap();
            }
            std::fs::create_dir(s.path().join("empty")).unwrap();
        };

        // A job that fails for want of descriptors drops its directory: removed all the same.
        let s = ScratchDir::beside(&target).unwrap();
        fill(&s);
        let held = every_descriptor_taken();
        drop(s);
        drop(held);
        assert!(names(dir.path()).is_empty(), "nothing left: {:?}", names(dir.path()));

        // Published at the limit: whole, under its name.
        let s = ScratchDir::beside(&target).unwrap();
        fill(&s);
        let held = every_descriptor_taken();
        let published = s.publish(&target);
        drop(held);
        published.unwrap();
        assert_eq!(names(dir.path()), ["set"]);
        assert_eq!(names(&target).len(), 41);

        // No descriptor for a new one: an error, and no directory made.
        let held = every_descriptor_taken();
        let e = ScratchDir::beside(&dir.path().join("other")).unwrap_err();
        drop(held);
        assert_eq!(e.raw_os_error(), Some(libc::EMFILE), "{e}");
        assert_eq!(names(dir.path()), ["set"]);
    }

    #[test]
    fn outputs_take_the_source_mode_and_times() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("s");
        std::fs::write(&src, b"x").unwrap();
        std::fs::set_permissions(&src, std::fs::Permissions::from_mode(0o600)).unwrap();
        let old = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000_000);
        std::fs::File::options().write(true).open(&src).unwrap().set_modified(old).unwrap();
        let meta = std::fs::metadata(&src).unwrap();
        let target = dir.path().join("s.gz");
        let (t, temp) = create_temporary(&target, false).unwrap();
        Inherited::of(Some(&meta)).apply(&t.file).unwrap();
        publish(&t.file, &temp, &target, false).unwrap();
        let out = std::fs::metadata(&target).unwrap();
        assert_eq!(out.permissions().mode() & 0o777, 0o600);
        assert_eq!(out.modified().unwrap(), old);
    }

    /// A named temporary a process killed by SIGKILL left (no handler outlives it) is removed
    /// by the next job that writes the same name: it stayed, as large as what was written. A
    /// live process's, and another name's, stay.
    #[test]
    fn a_dead_jobs_named_temporary_of_the_same_name_is_removed() {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("x.gz");
        let dead = dir.path().join(format!(".x.gz{TEMPORARY_MARK}{}.0abc", i32::MAX));
        let live = dir.path().join(format!(".x.gz{TEMPORARY_MARK}{}.0abc", std::process::id()));
        let other = dir.path().join(format!(".y.gz{TEMPORARY_MARK}{}.0abc", i32::MAX));
        for p in [&dead, &live, &other] {
            std::fs::write(p, b"partial").unwrap();
        }
        let made = create_named(&target, false).unwrap();
        let mut want = vec![live.file_name().unwrap().to_str().unwrap().to_string(), other.file_name().unwrap().to_str().unwrap().to_string(), made.path.file_name().unwrap().to_str().unwrap().to_string()];
        want.sort();
        assert_eq!(names(dir.path()), want, "the dead job's is gone");
        discard(&Temporary::Named(made.path.clone()));
    }
}
