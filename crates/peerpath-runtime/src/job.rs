//! What every job shares: options, source/target checks, naming.

use crate::error::{JobError, Result};
use crate::report::Quoted;
use crate::buf::JobBuf;
use crate::writer::TargetWriter;
use peerpath_io::{create_temporary, open_source, Inherited, IoEngine, IoPath, OpenedFile, OutputDir, SourceKind};
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Called with (uncompressed bytes done, total if known).
pub type Progress = Arc<dyn Fn(u64, Option<u64>) + Send + Sync>;

#[derive(Clone)]
pub struct CommonOptions {
    /// Compute worker threads.
    pub threads: usize,
    pub queue_depth: u32,
    /// Use O_DIRECT where the file system takes it.
    pub direct: bool,
    /// Use pread/pwrite instead of io_uring.
    pub sync_io: bool,
    /// Make each output durable: its data synced before the rename, its
    /// directory synced after. Off (`--no-sync`), outputs are left as gzip,
    /// pigz and igzip leave theirs (in the page cache or the drive's
    /// volatile cache), still renamed into place only when complete.
    pub durable: bool,
    /// Overwrite existing targets.
    pub force: bool,
    pub progress: Option<Progress>,
}

impl Default for CommonOptions {
    fn default() -> Self {
        CommonOptions {
            threads: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
            queue_depth: 8,
            direct: true,
            sync_io: false,
            durable: true,
            force: false,
            progress: None,
        }
    }
}

/// Makes room in this process's open-file limit for a job over `sources`
/// files (each target is held open for the whole job: an unnamed temporary
/// is only a descriptor until every output is put in place at once; so is
/// each source of `compress`), raising the soft limit towards the hard one
/// as `serve` does; a job that cannot fit is a usage error saying how many
/// files it needs, before anything is opened (not "Too many open files" at
/// the 508th). A job without targets (`verify`) reads its sources one after
/// another and holds none: it needs room for one whatever their number (it
/// refused 2000 files under `ulimit -n 64`, which `gzip -t` checks).
pub fn make_room_for_files(sources: usize, with_targets: bool) -> Result<()> {
    make_room(sources, with_targets, false)
}

/// [`make_room_for_files`], with room for a device beside each source where `on_devices`.
pub(crate) fn make_room(sources: usize, with_targets: bool, on_devices: bool) -> Result<()> {
    let sources = if with_targets { sources } else { sources.min(1) };
    // A source and its target, and a device's socket, memory, queues and lock (at most one
    // device per source); 32 for the rest (io_uring's rings, the standard streams, a GPU's
    // driver, a target's directory or second descriptor opened for a moment). Measured: 12 for
    // one source on the CPU, 16 on a device; 41 for 16 sources on the CPU, 105 on 16 devices;
    // 4013 for 2001 sources on the CPU (`compress`), 2013 (`decompress`, which holds its
    // targets only). (A flat 256 refused one file under `ulimit -n 256`; 7 a source, whatever
    // the engine, refused 600 files under a hard `ulimit -n 4096`, in which they fit.)
    let per_source = 2 + if on_devices { 4 } else { 0 };
    let need = (sources as u64).saturating_mul(per_source).saturating_add(32);
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes the struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 || limit.rlim_cur >= need {
        return Ok(());
    }
    if limit.rlim_max >= need {
        let raised = libc::rlimit { rlim_cur: need, rlim_max: limit.rlim_max };
        // SAFETY: setrlimit reads the struct it is given.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            return Ok(());
        }
    }
    // How many would fit under the hard limit: a batch size the user can act on.
    let (files, fewer) = match limit.rlim_max.saturating_sub(32) / per_source {
        _ if !with_targets => ("reading a file needs".to_string(), String::new()),
        0 => (format!("{sources} files at once need"), String::new()),
        fit => (format!("{sources} files at once need"), format!(", or give at most {fit} files at a time (every output is put in place at once, so all are held open)")),
    };
    Err(JobError::Usage(format!(
        "{files} about {need} open files; this process may open {} (hard limit {}): raise `ulimit -n`{fewer}",
        limit.rlim_cur, limit.rlim_max
    )))
}

/// "-" names standard input or output.
pub fn is_std_stream(p: &Path) -> bool {
    p.as_os_str() == "-"
}

/// What a command can write its output to, so that a refusal offers only what the command
/// takes: a file, or standard output too (`-o -`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Writes {
    FileOrStdout,
    /// Outputs that appear whole or not at all (encrypt, decrypt, ec decode): never a stream.
    FileOnly,
}

impl Writes {
    /// What `--output` may name.
    fn choices(self) -> &'static str {
        match self {
            Writes::FileOrStdout => "a file, or - for standard output",
            Writes::FileOnly => "a file",
        }
    }

    /// What to do instead of writing where a target cannot be made.
    fn instead(self) -> &'static str {
        match self {
            Writes::FileOrStdout => "write to standard output with -o - and redirect it",
            Writes::FileOnly => "the output is a file put in place whole: write it to a file elsewhere, then copy that there",
        }
    }
}

/// Checks a target before anything is written: refuses an existing target
/// without `force`, and refuses a target that is the source itself.
pub fn check_target(source: &Path, target: &Path, force: bool, writes: Writes) -> Result<()> {
    // A source that cannot be there is said first: "target exists" sent users to --force for a typo.
    if !is_std_stream(source) {
        std::fs::metadata(source).map_err(|e| JobError::SourceUnreadable { path: source.to_path_buf(), source: e })?;
    }
    // Standard streams are what descriptors 0 and 1 are: `decompress a.gz -o - >> a.gz` appends
    // to the file it reads (it ran, exit 0, and left a.gz with trailing garbage), as `cat a >> a`
    // would, which cat refuses. Only regular files are compared: a terminal is both, harmlessly.
    let identity = |p: &Path, fd: u8| -> Option<(u64, u64)> {
        let m = if is_std_stream(p) { std::fs::metadata(format!("/proc/self/fd/{fd}")) } else { std::fs::metadata(p) };
        m.ok().filter(|m| m.is_file()).map(|m| (m.dev(), m.ino()))
    };
    if let (Some(s), Some(t)) = (identity(source, 0), identity(target, 1)) {
        if s == t {
            let path = if is_std_stream(target) { PathBuf::from("standard output") } else { target.to_path_buf() };
            return Err(JobError::SameFile { path });
        }
    }
    if is_std_stream(target) {
        return Ok(());
    }
    check_new_target(target, force, writes)
}

/// The checks of a target that will be created, before any work: a
/// directory (exit 2: `--force` cannot help) or anything else that is not a
/// regular file is refused, and an existing name (a dangling symbolic link
/// included) is exit 4 unless `force`. Standard output (`-`) passes.
pub fn check_new_target(target: &Path, force: bool, writes: Writes) -> Result<()> {
    if is_std_stream(target) {
        return Ok(());
    }
    match std::fs::metadata(target) {
        Ok(m) if m.is_dir() => return Err(JobError::Usage(format!("target {} is a directory", Quoted(target)))),
        // Targets are replaced by renaming a finished temporary file over them;
        // doing that to /dev/null or a FIFO would replace the device node.
        Ok(m) if !m.is_file() => {
            return Err(JobError::Usage(format!("target {} is not a regular file; {}", Quoted(target), writes.instead())));
        }
        _ => {}
    }
    // `/dev/stdout` is a link to `/proc/self/fd/1`, a regular file where standard output is one:
    // renaming the output over it (with --force) would replace the system's link, and the
    // output would not reach the file. Nothing is made in `/dev` itself, `/proc` or `/sys`.
    if let Some(dir) = system_dir(target) {
        return Err(JobError::Usage(format!("target {} is in {}, whose names are the system's: {}", Quoted(target), Quoted(&dir), writes.instead())));
    }
    if !force && std::fs::symlink_metadata(target).is_ok() {
        return Err(JobError::TargetExists { path: target.to_path_buf() });
    }
    Ok(())
}

/// Where a name lies, however it is spelled (`x.gz`, `./x.gz`, `d/../x.gz`,
/// a directory reached through a link): its directory's identity and its
/// last component; the path itself where the directory is not there (yet).
pub fn place_of(path: &Path) -> (Option<(u64, u64)>, PathBuf) {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(peerpath_io::parent_dir(path)), path.file_name()) {
        (Ok(m), Some(name)) => (Some((m.dev(), m.ino())), PathBuf::from(name)),
        _ => (None, path.to_path_buf()),
    }
}

/// Refuses two pairs writing the same target, however its name is spelled
/// ([`place_of`]), naming both sources (`targets[i]` is `sources[i]`'s): among 2000 sources
/// from many directories, the target's name alone did not say which two.
pub fn check_distinct_targets(sources: &[PathBuf], targets: &[PathBuf]) -> Result<()> {
    let mut seen = std::collections::HashMap::new();
    for (s, t) in sources.iter().zip(targets) {
        if is_std_stream(t) {
            continue;
        }
        if let Some(first) = seen.insert(place_of(t), s) {
            return Err(JobError::Usage(format!("{} and {}: two sources would both write {}", Quoted(first), Quoted(s), Quoted(t))));
        }
    }
    Ok(())
}

/// Target names for `sources` given `--output` (a file for one source, a
/// directory for several: made if need be, and removed again unless the job
/// keeps it) and a function naming one target from a source; with the
/// directory `--output` names or puts the target in, held while the job
/// writes there ([`OutputDir`]: another job that made it and fails leaves it).
pub fn plan_targets(sources: &[PathBuf], output: Option<&Path>, name: impl Fn(&Path) -> Result<PathBuf>) -> Result<(Vec<PathBuf>, OutputDir)> {
    let mut output_dir = OutputDir::default();
    let targets = match output {
        None => sources
            .iter()
            .map(|s| {
                if is_std_stream(s) {
                    Err(JobError::Usage("reading standard input needs --output (a file, or - for standard output)".into()))
                } else if let Some(kind) = std::fs::metadata(s).ok().and_then(|m| not_a_file(&m)) {
                    // Its target would be made beside it: /dev/sdb.gz, a file in /dev.
                    Err(JobError::Usage(format!("{} is {kind}: name the target with --output ({})", Quoted(s), Writes::FileOrStdout.choices())))
                } else {
                    name(s).and_then(|t| refuse_target_beside_a_system_file(s, t, Writes::FileOrStdout))
                }
            })
            .collect::<Result<Vec<_>>>()?,
        // "DIR/" names a directory (created if need be) even for one source.
        Some(o) if sources.len() == 1 && !o.is_dir() && !o.as_os_str().as_encoded_bytes().ends_with(b"/") => {
            if !is_std_stream(o) {
                output_dir = OutputDir::hold_parent_of(o);
            }
            vec![o.to_path_buf()]
        }
        Some(o) if is_std_stream(o) => return Err(JobError::Usage("several sources cannot all go to standard output".into())),
        Some(o) => {
            // "FILE/" is looked up as FILE: its metadata through the slash is ENOTDIR, not "a file".
            let bytes = o.as_os_str().as_encoded_bytes();
            let named = match bytes.iter().rposition(|&b| b != b'/') {
                Some(last) => Path::new(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(&bytes[..=last])),
                None => o,
            };
            if std::fs::metadata(named).is_ok_and(|m| !m.is_dir()) {
                let why = if sources.len() == 1 { "a name ending in / is a directory" } else { "several sources need --output DIR" };
                return Err(JobError::Usage(format!("{} is not a directory: {why}", Quoted(named))));
            }
            // A link to nothing is no directory to make: mkdir through it said "File exists".
            if let (Ok(to), Err(e)) = (std::fs::read_link(named), std::fs::metadata(named)) {
                let why = format!("a symbolic link to {} that leads to no directory ({e}): make the directory it names, or name another", Quoted(&to));
                return Err(JobError::TargetIo { path: o.to_path_buf(), source: std::io::Error::new(e.kind(), why) });
            }
            output_dir = OutputDir::make(o).map_err(|e| JobError::TargetIo { path: o.to_path_buf(), source: e })?;
            sources
                .iter()
                .map(|s| {
                    if is_std_stream(s) {
                        return Err(JobError::Usage("standard input cannot go to a directory; name the target file".into()));
                    }
                    let n = name(s)?;
                    Ok(o.join(n.file_name().expect("named targets have a file name")))
                })
                .collect::<Result<Vec<_>>>()?
        }
    };
    targets.iter().try_for_each(|t| check_target_name(t))?;
    check_distinct_targets(sources, &targets)?;
    Ok((targets, output_dir))
}

/// A target whose name is longer than a directory entry may be (255 bytes on Linux's file
/// systems) fails when it is put in place: said before any work is done (exit 11, as then).
pub fn check_target_name(target: &Path) -> Result<()> {
    use peerpath_io::NAME_MAX_BYTES;
    match target.file_name() {
        Some(n) if !is_std_stream(target) && n.len() > NAME_MAX_BYTES => Err(JobError::TargetIo {
            path: target.to_path_buf(),
            source: std::io::Error::new(std::io::ErrorKind::InvalidFilename, format!("File name too long: its name is {} bytes, more than the {NAME_MAX_BYTES} a file system takes (name it with --output)", n.len())),
        }),
        _ => Ok(()),
    }
}

/// A target named after its source, beside it, where that is a directory of the system's
/// (`/dev` itself, `/proc`, `/sys`): `/dev/stdin` (a link to `/proc/self/fd/0`, which may be a
/// regular file) would give `/dev/stdin.gz`, a stray file on devtmpfs. `/dev/shm` and others
/// below `/dev` hold files as any directory does.
pub fn refuse_target_beside_a_system_file(source: &Path, target: PathBuf, writes: Writes) -> Result<PathBuf> {
    if let Some(resolved) = system_dir(&target) {
        return Err(JobError::Usage(format!(
            "{}: its target beside it would be {}, in {}: name the target with --output ({})",
            Quoted(source),
            Quoted(&target),
            Quoted(&resolved),
            writes.choices()
        )));
    }
    Ok(target)
}

/// The directory `path` would be made in, resolved, where that is one of the system's: `/dev`
/// itself (not its subdirectories: `/dev/shm` holds files), `/proc` or `/sys` and below them.
fn system_dir(path: &Path) -> Option<PathBuf> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let resolved = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    (resolved == Path::new("/dev") || resolved.starts_with("/proc") || resolved.starts_with("/sys")).then_some(resolved)
}

/// What `m` is where it is neither a regular file nor a directory: a device, a FIFO or a socket.
fn not_a_file(m: &std::fs::Metadata) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    let t = m.file_type();
    match () {
        _ if t.is_block_device() => Some("a block device"),
        _ if t.is_char_device() => Some("a character device"),
        _ if t.is_fifo() => Some("a FIFO"),
        _ if t.is_socket() => Some("a socket"),
        _ => None,
    }
}

/// A duplicate of standard input or output, owned by the job (closing it
/// leaves the process's own descriptor open).
fn std_stream(fd: std::os::fd::BorrowedFd<'_>, what: &str) -> std::io::Result<OpenedFile> {
    let file = std::fs::File::from(fd.try_clone_to_owned()?);
    Ok(OpenedFile { file, path: PathBuf::from("-"), kind: SourceKind::Stream, direct: false, direct_refused: Some(what.into()) })
}

/// Opens a target: a temporary file in its final name's directory (with
/// no name at all where the file system allows), or stdout. The output
/// takes `source`'s mode and times when it is put in place.
pub(crate) fn open_target(final_path: &Path, common: &CommonOptions, source: &OpenedFile) -> Result<(TargetWriter, IoPath)> {
    if is_std_stream(final_path) {
        let t = std_stream(std::io::stdout().as_fd(), "standard output")
            .map_err(|e| JobError::TargetIo { path: final_path.to_path_buf(), source: e })?;
        let path = IoPath { engine: peerpath_io::EngineKind::Syscalls, direct: false, fallback_reason: t.direct_refused.clone() };
        let mut w = TargetWriter::to_stream(t, final_path.to_path_buf());
        if !common.durable {
            w.skip_syncs();
        }
        return Ok((w, path));
    }
    let (t, temporary) = create_temporary(final_path, common.direct).map_err(|e| JobError::TargetIo { path: final_path.to_path_buf(), source: e })?;
    let path = IoPath { engine: peerpath_io::EngineKind::IoUring, direct: t.direct, fallback_reason: t.direct_refused.clone() };
    let inherit = if source.path.as_os_str() == "-" { Inherited::default() } else { Inherited::of(source.file.metadata().ok().as_ref()) };
    let mut w = TargetWriter::to_file(t, temporary, final_path.to_path_buf(), common.force, inherit);
    if !common.durable {
        w.skip_syncs();
    }
    Ok((w, path))
}

/// Puts finished outputs in place, then (if `durable`) syncs their directories once each. Those
/// under new names go first, in order, and those that replace an existing file (`--force`)
/// last: a failure among the first replaces nothing. If one cannot be put in place (a file
/// appeared under its name, say), the outputs put in place before it under new names are taken
/// back and the rest removed: a failed job keeps none. So does a signal before the last is in
/// place (those under new names are on the signal list until then): a job of many outputs
/// killed while it puts them in place left those before the signal. An existing target
/// replaced (`--force`) cannot be given back: it keeps its new output, and the job's error
/// names it ([`JobError::AfterReplacing`]), as the process dying of a signal does
/// ([`left_at_signal`]). Once the last is in place they are committed
/// ([`peerpath_io::committed`]): a signal from then on leaves them all, and the process says so
/// as it dies of it.
pub(crate) fn put_all_in_place(writers: Vec<TargetWriter>, durable: bool) -> Result<()> {
    let names: Vec<PathBuf> = writers.iter().filter(|w| !w.is_sequential()).map(|w| w.final_path.clone()).collect();
    // Which targets exist is foreseen here only to order them (a file may appear or go
    // meanwhile): what each placement did is what is said.
    let (replacing, new): (Vec<TargetWriter>, Vec<TargetWriter>) =
        writers.into_iter().partition(|w| !w.is_sequential() && std::fs::symlink_metadata(&w.final_path).is_ok());
    let mut placed: Vec<PathBuf> = Vec::new();
    let mut replaced_here: Vec<PathBuf> = Vec::new();
    let mut rest = new.into_iter().chain(replacing);
    while let Some(w) = rest.next() {
        let (name, sequential) = (w.final_path.clone(), w.is_sequential());
        // Under the lock a signal takes first ([`left_at_signal`]): a target replaced is named.
        let mut replaced = replaced_list();
        match w.put_in_place() {
            Ok(true) => placed.push(name),
            Ok(false) if sequential => {}
            Ok(false) => {
                if let Some(r) = replaced.as_mut() {
                    r.push(name.clone());
                }
                replaced_here.push(name);
            }
            Err(e) => {
                drop(replaced);
                rest.for_each(TargetWriter::abandon);
                peerpath_io::take_back(&placed);
                return Err(if replaced_here.is_empty() { e } else { JobError::AfterReplacing { error: Box::new(e), replaced: replaced_here } });
            }
        }
    }
    peerpath_io::committed(&names);
    if durable {
        crate::writer::sync_directories(names.iter().map(PathBuf::as_path));
    }
    Ok(())
}

/// The existing targets `--force` replaced (not none), named as messages name files
/// ([`Quoted`]): "the existing file x.gz", or "2 existing files: a.gz, b.gz".
pub fn replaced_files(replaced: &[PathBuf]) -> String {
    match replaced {
        [one] => format!("the existing file {}", Quoted(one)),
        many => format!("{} existing files: {}", many.len(), many.iter().map(|p| Quoted(p).to_string()).collect::<Vec<_>>().join(", ")),
    }
}

/// What stays of a job's outputs where it ended (failed, or its process died of a signal)
/// before the last was in place, once `--force` had replaced `replaced` (not empty): the old
/// files are gone, and nothing else would say so.
pub fn kept_after_replacing(replaced: &[PathBuf]) -> String {
    let stays = if replaced.len() == 1 { "it keeps its new output" } else { "they keep their new outputs" };
    format!("the outputs under new names were removed, but --force had already replaced {}, and {stays}", replaced_files(replaced))
}

/// The existing targets this process's jobs replaced (`--force`), in order, where it names them
/// ([`name_replaced_targets`]): what a signal that ends the process says ([`left_at_signal`]).
static REPLACED: std::sync::Mutex<Option<Vec<PathBuf>>> = std::sync::Mutex::new(None);

fn replaced_list() -> std::sync::MutexGuard<'static, Option<Vec<PathBuf>>> {
    REPLACED.lock().unwrap_or_else(|e| e.into_inner())
}

/// Has this process keep the names of the existing targets its jobs replace (`--force`) for
/// [`left_at_signal`]; not a job server, whose jobs' outputs are its clients' to speak of (and
/// which would keep a name for each of them as long as it runs).
pub fn name_replaced_targets() {
    replaced_list().get_or_insert_with(Vec::new);
}

/// For a process about to die of a signal: removes the named temporaries
/// ([`peerpath_io::remove_named_temporaries_before_exit`]) and returns the outputs its jobs
/// committed, with the existing targets they replaced (`--force`; where
/// [`name_replaced_targets`]). Those stay replaced also where the signal came before their
/// job's last output was in place (the outputs under new names are removed then, but an
/// overwritten file cannot be given back). No target is replaced from then on.
pub fn left_at_signal() -> (peerpath_io::Committed, Vec<PathBuf>) {
    let replaced = replaced_list();
    let kept = peerpath_io::remove_named_temporaries_before_exit();
    let names = replaced.clone().unwrap_or_default();
    // Locked to the end, as the temporaries' registry is: a target being put in place waits.
    std::mem::forget(replaced);
    (kept, names)
}

/// Has the engine run the copies of `source` and `writer`'s target on the
/// kernel's workers where they are files of a memory file system
/// ([`peerpath_io::IoEngine::copy_on_kernel_workers`]).
pub(crate) fn copy_memory_files_on_kernel_workers(engine: &mut dyn IoEngine<JobBuf>, source: &OpenedFile, writer: Option<&TargetWriter>) {
    let target = writer.filter(|w| !w.is_sequential()).map(|w| &w.target);
    for f in std::iter::once(source).chain(target).filter(|f| f.in_memory()) {
        engine.copy_on_kernel_workers(f.file.as_raw_fd());
    }
}

/// Says how a source changed size while being read: a read at `offset`
/// returned `n` bytes where the size at open (`size`) gave `expected`. A short
/// read of a file at `path` that still has its size is no shrinking: a read
/// error (EIO part way through) cuts a read short as well.
fn changed_size(path: &Path, n: usize, expected: usize, offset: u64, size: u64) -> String {
    let read = format!("read {n} bytes at offset {offset}, expected {expected}");
    // A block device does not shrink: a read of one cut short is a read error.
    let now = std::fs::metadata(path).ok().and_then(|m| match () {
        _ if m.is_file() => Some(m.len()),
        _ if std::os::unix::fs::FileTypeExt::is_block_device(&m.file_type()) => Some(size),
        _ => None,
    });
    match now {
        _ if n > expected => format!("{read}: the source grew while being read (it had {size} bytes when opened)"),
        Some(now) if now >= size => format!("{read}: the read was cut short, though the source still has {now} bytes (a read error at offset {})", offset + n as u64),
        _ => format!("{read}: the source shrank while being read (it had {size} bytes when opened)"),
    }
}

/// A read of at most `len` bytes at `offset` of `path` that failed with `e`:
/// the job's failure, saying where.
pub(crate) fn read_error(path: &Path, e: &std::io::Error, offset: u64, len: usize) -> JobError {
    JobError::SourceIo { path: path.to_path_buf(), detail: format!("{e}, in a read of up to {len} bytes at offset {offset}") }
}

/// Checks a read of at most `len` bytes at `offset` of `path`: an error, or
/// (where the size at open is known) a length other than what that size
/// leaves, is the job's failure (an error says where it was read). Returns the bytes read.
pub(crate) fn check_read(path: &Path, result: std::io::Result<usize>, offset: u64, len: usize, size: Option<u64>) -> Result<usize> {
    let n = result.map_err(|e| read_error(path, &e, offset, len))?;
    if let Some(size) = size {
        let expected = size.saturating_sub(offset).min(len as u64) as usize;
        if n != expected {
            return Err(JobError::SourceIo { path: path.to_path_buf(), detail: changed_size(path, n, expected, offset, size) });
        }
    }
    Ok(n)
}

/// Refuses a job where a source would also be written as a target (with
/// `--force`, `compress x/a out/a.gz -o out` would replace its own second
/// source): a source is never a target.
pub fn check_sources_are_not_targets(pairs: &[(PathBuf, PathBuf)]) -> Result<()> {
    let ids: Vec<(u64, u64)> = pairs
        .iter()
        .filter(|(s, _)| !is_std_stream(s))
        .filter_map(|(s, _)| std::fs::metadata(s).ok().map(|m| (m.dev(), m.ino())))
        .collect();
    for (_, t) in pairs.iter().filter(|(_, t)| !is_std_stream(t)) {
        if let Ok(m) = std::fs::metadata(t) {
            if ids.contains(&(m.dev(), m.ino())) {
                return Err(JobError::SameFile { path: t.to_path_buf() });
            }
        }
    }
    Ok(())
}

/// Opens a source read-only, or stdin.
pub(crate) fn open_source_checked(path: &Path, direct: bool) -> Result<OpenedFile> {
    if is_std_stream(path) {
        return std_stream(std::io::stdin().as_fd(), "standard input")
            .map_err(|e| JobError::SourceUnreadable { path: path.to_path_buf(), source: e });
    }
    open_source(path, direct).map_err(|e| JobError::SourceUnreadable { path: path.to_path_buf(), source: e })
}

/// Fixes up the engine field of reported paths once the engine is chosen.
pub(crate) fn set_engine(p: &mut IoPath, kind: peerpath_io::EngineKind, note: &Option<String>) {
    p.engine = kind;
    if kind == peerpath_io::EngineKind::Syscalls && p.fallback_reason.is_none() {
        p.fallback_reason = note.clone();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_source_that_changed_size_is_said_to_have_grown_or_shrunk() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("f");
        std::fs::write(&f, [0; 100]).unwrap();
        let grew = changed_size(&f, 8192, 4096, 0, 4096);
        assert!(grew.contains("grew") && grew.contains("4096 bytes when opened"), "{grew}");
        assert!(changed_size(&f, 100, 4096, 0, 4096).contains("shrank"));
        // Still its size at open: not shrunk, a read that failed part way.
        let cut = changed_size(&f, 50, 100, 0, 100);
        assert!(cut.contains("cut short") && cut.contains("still has 100 bytes") && cut.contains("at offset 50"), "{cut}");
    }

    /// A writer of `data` to `target` that replaces an existing file there (`--force`).
    fn forced_writer(target: &Path, data: &[u8]) -> TargetWriter {
        let (t, temporary) = create_temporary(target, false).unwrap();
        std::io::Write::write_all(&mut &t.file, data).unwrap();
        TargetWriter::to_file(t, temporary, target.to_path_buf(), true, Inherited::default())
    }

    /// An output that cannot be put in place after `--force` replaced existing targets: those
    /// keep their new outputs (an overwritten file cannot be given back), and the error names
    /// every one, quoted (it said only why the last failed: the user believed nothing changed).
    #[test]
    fn a_failure_after_a_replacement_names_every_target_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let (a, new, b, c) = (dir.path().join("a.gz"), dir.path().join("n.gz"), dir.path().join("b\nc.gz"), dir.path().join("c.gz"));
        std::fs::write(&a, b"old a").unwrap();
        std::fs::write(&b, b"old b").unwrap();
        // A directory that is not empty: a file is never renamed over it (EISDIR).
        std::fs::create_dir(&c).unwrap();
        std::fs::write(c.join("x"), b"").unwrap();
        let writers = vec![forced_writer(&a, b"new a"), forced_writer(&new, b"new n"), forced_writer(&b, b"new b"), forced_writer(&c, b"new c")];
        let e = put_all_in_place(writers, false).unwrap_err();
        let said = e.to_string();
        assert_eq!(e.exit_code(), 11, "{said}");
        assert!(said.starts_with(&format!("cannot write {}: ", Quoted(&c))), "{said}");
        let tail = format!(
            "; the outputs under new names were removed, but --force had already replaced 2 existing files: {}, {}, and they keep their new outputs",
            Quoted(&a),
            Quoted(&b)
        );
        assert!(said.ends_with(&tail), "{said}");
        assert!(!said.contains('\n'), "one line: {said:?}");
        assert_eq!(std::fs::read(&a).unwrap(), b"new a");
        assert_eq!(std::fs::read(&b).unwrap(), b"new b");
        assert!(!new.exists(), "the output under a new name is taken back");
        let mut left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        left.sort();
        assert_eq!(left, ["a.gz", "b\nc.gz", "c.gz"], "no temporary is left");
    }

    /// The outputs under new names go in place before any replaces a file (`--force`): one of
    /// them that fails (its directory removed meanwhile) leaves the existing target as it was
    /// (it was replaced first, and kept its new output).
    #[test]
    fn outputs_under_new_names_go_in_place_before_any_replacement() {
        let dir = tempfile::tempdir().unwrap();
        let (old, sub) = (dir.path().join("x.gz"), dir.path().join("sub"));
        std::fs::write(&old, b"old").unwrap();
        std::fs::create_dir(&sub).unwrap();
        let writers = vec![forced_writer(&old, b"new x"), forced_writer(&sub.join("n.gz"), b"new n")];
        std::fs::remove_dir_all(&sub).unwrap();
        let e = put_all_in_place(writers, false).unwrap_err();
        assert!(matches!(e, JobError::TargetIo { .. }), "{e}");
        assert_eq!(std::fs::read(&old).unwrap(), b"old", "{e}");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "no temporary is left");
    }
}
