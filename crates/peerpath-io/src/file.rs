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
    let kind = if ft.is_file() {
        SourceKind::Regular { size_bytes: meta.len() }
    } else if ft.is_block_device() {
        SourceKind::BlockDevice { size_bytes: file.seek(SeekFrom::End(0))? }
    } else if ft.is_dir() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "is a directory"));
    } else {
        SourceKind::Stream
    };
    let (direct, direct_refused) = match kind {
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

    #[test]
    fn directory_source_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        assert!(open_source(dir.path(), true).is_err());
    }
}
