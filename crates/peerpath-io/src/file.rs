use std::fs::{File, OpenOptions};
use std::io::{self, Seek, SeekFrom};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// What kind of thing a source is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SourceKind {
    /// A regular file of known size.
    Regular { size_bytes: u64 },
    /// A block device of known size.
    BlockDevice { size_bytes: u64 },
    /// A pipe, terminal or socket: read sequentially to its end.
    Stream,
}

impl SourceKind {
    pub fn size_bytes(&self) -> Option<u64> {
        match self {
            SourceKind::Regular { size_bytes } | SourceKind::BlockDevice { size_bytes } => Some(*size_bytes),
            SourceKind::Stream => None,
        }
    }
}

/// An opened file and how it was opened.
#[derive(Debug)]
pub struct OpenedFile {
    pub file: File,
    pub path: PathBuf,
    pub kind: SourceKind,
    pub direct: bool,
    /// Why O_DIRECT is off, if it is.
    pub direct_refused: Option<String>,
}

impl OpenedFile {
    /// Whether it is a file of a memory file system (tmpfs, ramfs), whose
    /// reads and writes are CPU copies however it is opened.
    pub fn in_memory(&self) -> bool {
        use std::os::fd::AsRawFd;
        peerpath_mem::on_memory_file_system(self.file.as_raw_fd())
    }

    /// Whether its bytes come from or go to storage (a regular file or a
    /// block device, also behind standard input or output), rather than a
    /// pipe, socket or character device.
    pub fn reaches_storage(&self) -> bool {
        match self.kind {
            SourceKind::Regular { .. } | SourceKind::BlockDevice { .. } => true,
            SourceKind::Stream => self.file.metadata().is_ok_and(|m| m.file_type().is_file() || m.file_type().is_block_device()),
        }
    }
}

/// What says a regular file changed while it was read (as tar's "file changed as we read it"):
/// its size, and its modification and status-change times (a write moves both; a write that
/// keeps the size and puts the modification time back still moves the status-change time).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Stamp {
    pub size: u64,
    pub mtime: (i64, i64),
    pub ctime: (i64, i64),
}

impl Stamp {
    pub fn of(m: &std::fs::Metadata) -> Stamp {
        use std::os::unix::fs::MetadataExt;
        Stamp { size: m.len(), mtime: (m.mtime(), m.mtime_nsec()), ctime: (m.ctime(), m.ctime_nsec()) }
    }

    /// Of a regular file whose size is what it holds (not a /proc file, not a pipe or a
    /// device, whose times say nothing of what they give), read from its descriptor.
    pub fn of_file(file: &File) -> Option<Stamp> {
        file.metadata().ok().filter(|m| m.is_file() && !sizeless(file)).map(|m| Stamp::of(&m))
    }

    /// What changed from `self` to `after`, in words (`None`: nothing).
    pub fn changes(&self, after: &Stamp) -> Option<String> {
        let time = |(s, ns): (i64, i64)| format!("{s}.{ns:09}");
        let mut what = Vec::new();
        if self.size != after.size {
            what.push(format!("size {} -> {} bytes", self.size, after.size));
        }
        if self.mtime != after.mtime {
            what.push(format!("modification time {} -> {}", time(self.mtime), time(after.mtime)));
        }
        if self.ctime != after.ctime {
            what.push(format!("status-change time {} -> {}", time(self.ctime), time(after.ctime)));
        }
        (!what.is_empty()).then(|| what.join(", "))
    }
}

/// File systems whose files' sizes are not what they hold (procfs says 0
/// bytes, sysfs 4096): proc, sysfs, debugfs, tracefs, securityfs, configfs,
/// efivarfs, cgroup and cgroup2 (`statfs(2)`'s magic numbers).
const SIZELESS_FILE_SYSTEMS: [i64; 9] = [0x9fa0, 0x6265_6572, 0x6462_6720, 0x7472_6163, 0x7363_6673, 0x6265_6570, 0xde5e_81e4, 0x0027_e0eb, 0x6367_7270];

/// Whether `file` is a file of such a file system: read to its end, as a
/// pipe is (by its size, `compress /proc/cpuinfo` made an empty .gz).
pub fn sizeless(file: &File) -> bool {
    use std::os::fd::AsRawFd;
    peerpath_mem::file_system_type(file.as_raw_fd()).is_some_and(|t| SIZELESS_FILE_SYSTEMS.contains(&t))
}

pub(crate) fn open_with(path: &Path, opts: &OpenOptions, direct: bool) -> io::Result<File> {
    let mut o = opts.clone();
    if direct {
        o.custom_flags(libc::O_DIRECT);
    }
    o.open(path)
}

/// Opens a source read-only (never for writing: sources are never
/// modified), with O_DIRECT where the file system takes it and `want_direct`.
pub fn open_source(path: &Path, want_direct: bool) -> io::Result<OpenedFile> {
    let mut opts = OpenOptions::new();
    opts.read(true);
    // Open without O_DIRECT first to learn what the path is; a FIFO must not
    // be opened twice (the writer would see two readers).
    let mut file = open_with(path, &opts, false)?;
    let meta = file.metadata()?;
    let ft = meta.file_type();
    let kind = if ft.is_file() && !sizeless(&file) {
        SourceKind::Regular { size_bytes: meta.len() }
    } else if ft.is_block_device() {
        SourceKind::BlockDevice { size_bytes: file.seek(SeekFrom::End(0))? }
    } else if ft.is_dir() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "is a directory"));
    } else {
        SourceKind::Stream
    };
    let (direct, direct_refused) = match kind {
        SourceKind::Stream if ft.is_file() => (false, Some("a file of /proc, /sys or the like: its size is not what it holds, so it is read to its end, as a pipe".to_string())),
        SourceKind::Stream => (false, Some("not a regular file or block device".to_string())),
        _ if !want_direct => (false, Some("O_DIRECT disabled (--no-direct)".to_string())),
        _ => match open_with(path, &opts, true) {
            Ok(f) => {
                file = f;
                (true, None)
            }
            Err(e) => (false, Some(format!("file system refused O_DIRECT ({e})"))),
        },
    };
    Ok(OpenedFile { file, path: path.to_path_buf(), kind, direct, direct_refused })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_is_read_only_and_sized() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a");
        std::fs::write(&p, vec![1u8; 10_000]).unwrap();
        let f = open_source(&p, true).unwrap();
        assert_eq!(f.kind, SourceKind::Regular { size_bytes: 10_000 });
        use std::io::Write;
        assert!((&f.file).write(b"x").is_err(), "sources must be opened read-only");
    }

    /// A file of /proc says it holds 0 bytes: it is read to its end, as a pipe is.
    #[test]
    fn files_whose_size_is_not_their_content_are_streams() {
        match open_source(Path::new("/proc/self/status"), true) {
            Ok(f) => assert_eq!((f.kind, f.direct), (SourceKind::Stream, false)),
            Err(e) => eprintln!("SKIPPED: no /proc here ({e})"),
        }
    }

    #[test]
    fn directory_source_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        assert!(open_source(dir.path(), true).is_err());
    }
}
